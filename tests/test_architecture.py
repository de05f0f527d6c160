"""Import layers (docs/architecture.md): computed from every module's imports with ``ast``, including
imports inside functions, so a lazy import counts like a top-level one.

Rules
  (a) the math core and the path/muscle layer never import opensim, matplotlib or lxml;
  (b) a lower layer never imports a higher one;
  (c) opensim is imported only from the opensim layer (the OpenSim bridge) up, matplotlib only from the
      report layer up, lxml only from the io layer up;
  (d) below the io layer no function reads XML (a function whose name contains ``xml``).
Today's exceptions are listed in KNOWN_VIOLATIONS with a reason.  The test fails on a new violation and
also when a listed one disappears, so the list only shrinks (issue 16: the restructure empties it).

No import cycle: the module import graph (imports inside functions count) has no strongly connected
component of two or more modules, except the ones in KNOWN_CYCLES (shrink only, like KNOWN_VIOLATIONS).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "osim_emb"

LAYERS = ("core", "paths", "io", "workflows", "opensim", "report", "cli", "api")
RANK = {name: k for k, name in enumerate(LAYERS)}

# Folder (or module) -> layer.  A new module is placed by the folder it goes in
# (docs/architecture.md, "Where a new feature goes"); a new top-level module must be added here.
LAYER_OF = {
    # core: the model, joint functions, configurations, kinematics, dynamics, closed chains, compiled kernels
    "osim_emb.model": "core", "osim_emb.core": "core", "osim_emb._version": "core", "osim_emb.progress": "core",
    # paths and muscles: wrapping surfaces, path construction, L and R, muscle models
    "osim_emb.paths": "paths", "osim_emb.muscles": "paths",
    # io: files (.osim, JSON models, motions, tables) and the project's own model files
    "osim_emb.io": "io",
    # workflows: simulation, shoulder rhythms, and the seeds' own systems
    "osim_emb.simulation": "workflows", "osim_emb.rhythm": "workflows", "osim_emb.seeds": "workflows",
    # opensim: the bridge to OpenSim's API, the comparison harness (tables), OpenSim's side of the seeds, batches
    "osim_emb.opensim": "opensim",
    # report: figure style, figures drawn from results, comparisons with figures, the main job's report
    "osim_emb.report": "report",
    # cli: the command line
    "osim_emb.cli": "cli",
    # api: the package's public face (re-exports from every layer)
    "osim_emb": "api",
}

FORBIDDEN_IN_CORE = ("opensim", "matplotlib", "lxml")
LOWEST_LAYER_FOR = {"opensim": "opensim", "matplotlib": "report", "lxml": "io"}

# (rule, importing module, what it imports or defines) -> reason.  Shrink only.
KNOWN_VIOLATIONS = {
}


# Import cycles of today (modules of one strongly connected component) -> reason.  Shrink only: a cycle found
# must lie inside one listed here, and each listed one must still be (part of) a cycle.
KNOWN_CYCLES = {
    frozenset({"osim_emb.core.compiled_kernels", "osim_emb.core.functions", "osim_emb.core.functions.basic",
               "osim_emb.core.functions.multivariate", "osim_emb.core.functions.program"}):
        "found in round 23 when parent packages' __init__ began to count: compiled_kernels imports the leaf "
        "functions.kernels, whose package __init__ imports the function programs, which import compiled_kernels; "
        "harmless at run time (compiled_kernels uses only the leaf), broken by moving functions/kernels.py out of "
        "the package (a file with compiled kernels: left for a round that recompiles them anyway)",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULE_FILES = {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def imports_of(name: str) -> tuple[set[str], set[str]]:
    """(modules imported anywhere in the module, names of the functions it defines)."""
    path = MODULE_FILES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imported, functions = set(), set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # never run: annotations only
            continue
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            submodules = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULE_FILES}
            imported |= submodules
            if len(submodules) < len(node.names):  # "from package import sub" counts as importing sub only
                imported.add(target)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(node.name)
    return imported, functions


def layer_of(name: str) -> str:
    while name not in LAYER_OF:
        if "." not in name:
            raise KeyError(name)
        name = name.rpartition(".")[0]
    return LAYER_OF[name]


def violations() -> set[tuple[str, str, str]]:
    found = set()
    for name in MODULE_FILES:
        layer = RANK[layer_of(name)]
        imported, functions = imports_of(name)
        for target in imported:
            top = target.split(".")[0]
            if top in FORBIDDEN_IN_CORE:
                if layer <= RANK["paths"]:
                    found.add(("a", name, top))
                if layer < RANK[LOWEST_LAYER_FOR[top]]:
                    found.add(("c", name, top))
            elif top == "osim_emb" and target in MODULE_FILES and RANK[layer_of(target)] > layer:
                found.add(("b", name, target))
        if layer < RANK["io"]:
            found |= {("d", name, f) for f in functions if "xml" in f.lower()}
    return found


def test_every_module_has_a_layer():
    missing = []
    for name in MODULE_FILES:
        try:
            layer_of(name)
        except KeyError:
            missing.append(name)
    assert not missing, f"modules without a layer (add them to LAYER_OF, docs/architecture.md): {missing}"


def test_no_new_layer_violations():
    new = violations() - set(KNOWN_VIOLATIONS)
    assert not new, "new import-layer violations (docs/architecture.md):\n" + "\n".join(
        f"  rule {r}: {m} -> {t}" for r, m, t in sorted(new))


def test_known_violations_still_exist():
    gone = set(KNOWN_VIOLATIONS) - violations()
    assert not gone, "these listed violations are gone: remove them from KNOWN_VIOLATIONS:\n" + "\n".join(
        f"  rule {r}: {m} -> {t}" for r, m, t in sorted(gone))


def test_scanner_sees_imports_inside_functions():
    """Independent check of the scanner on a module known to import the figures only inside a function."""
    imported, functions = imports_of("osim_emb.cli.fit_rhythm")
    assert "osim_emb.report.rhythm_figures" in imported and "cmd_fit_rhythm" in functions
    assert "osim_emb.core.functions.multivariate" in imports_of("osim_emb.rhythm.fit")[0]


def test_import_osim_emb_imports_neither_opensim_nor_matplotlib():
    """The package's public face stays light: the heavy parts are imported on first use."""
    import subprocess
    import sys
    code = ("import sys, osim_emb; heavy = [m for m in ('opensim', 'matplotlib') if m in sys.modules]; "
            "assert not heavy, heavy; osim_emb.run_moment_arm_study; osim_emb.simulate; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=PACKAGE_DIR.parent)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_every_public_name_and_command_module_imports_first_in_a_fresh_interpreter():
    """``import osim_emb`` imports nothing but its version (every name on first use: --help and --version in well
    under a second); each public name's module, and each command's, imports as the first module of a fresh
    interpreter (an import cycle that an eager package __init__ hid broke `osim-emb inspect` in round 23)."""
    import subprocess
    import sys
    import osim_emb
    modules = sorted({module for module, _ in osim_emb._LAZY.values()} | {
        f"osim_emb.cli.{p.stem}" for p in (PACKAGE_DIR / "cli").glob("*.py") if not p.stem.startswith("_")}
        | {"osim_emb.report.model_description"})
    code = ("import sys, importlib; before = set(sys.modules); import osim_emb; "
            "assert not [m for m in sys.modules if m.startswith(('numpy', 'scipy', 'pandas', 'numba'))]; "
            "[importlib.import_module(m) for m in sys.argv[1:2]]; print('ok')")
    for module in modules:
        out = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True, timeout=300,
                             cwd=PACKAGE_DIR.parent)
        assert out.returncode == 0 and out.stdout.strip() == "ok", (module, out.stderr[-2000:])


def with_parent_packages(targets: set[str]) -> set[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first: their imports are the importer's too."""
    out = set(targets)
    for t in targets:
        parts = t.split(".")
        out |= {".".join(parts[:k]) for k in range(1, len(parts))}
    return out


def import_cycles() -> list[set[str]]:
    """The package's import cycles: strongly connected components of its module import graph (an import of a
    submodule also imports its parent packages, whose __init__ Python runs first: a cycle through an __init__
    fails at import time just as a direct one)."""
    return strongly_connected({m: sorted(t for t in with_parent_packages(imports_of(m)[0])
                                         if t in MODULE_FILES and t != m and not m.startswith(t + "."))
                               for m in MODULE_FILES})


def strongly_connected(graph: dict[str, list[str]]) -> list[set[str]]:
    """Components of two or more nodes in which each node reaches every other (Tarjan, without recursion)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def test_cycle_finder_on_small_graphs():
    """Independent check of the finder on graphs whose cycles are known by construction."""
    assert strongly_connected({"a": ["b"], "b": ["a"], "c": ["a"]}) == [{"a", "b"}]
    assert strongly_connected({"a": ["b"], "b": ["c"], "c": []}) == []
    found = strongly_connected({"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["e"], "e": ["d"], "f": ["f"]})
    assert sorted(map(sorted, found)) == [["a", "b", "c"], ["d", "e"]]


def test_no_new_import_cycles():
    new = [c for c in import_cycles() if not any(c <= known for known in KNOWN_CYCLES)]
    assert not new, "import cycles inside osim_emb (imports inside functions count; move the shared code down " \
                    "a level or into a module both import):\n" + "\n".join(f"  {sorted(c)}" for c in new)


def test_known_cycles_still_exist():
    cycles = import_cycles()
    gone = [k for k in KNOWN_CYCLES if not any(c <= k for c in cycles)]
    assert not gone, "these listed cycles are gone: remove them from KNOWN_CYCLES:\n" + "\n".join(
        f"  {sorted(k)}" for k in gone)


def test_no_cli_module_imports_the_cli_entry_point():
    """cli/main.py assembles the parser from the command modules; they never import it back."""
    offenders = [m for m in MODULE_FILES if m.startswith("osim_emb.cli.") and m != "osim_emb.cli.main"
                 and "osim_emb.cli.main" in imports_of(m)[0] and m != "osim_emb.cli.__main__"]
    assert not offenders, offenders
