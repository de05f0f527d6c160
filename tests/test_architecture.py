"""Import layers (docs/architecture.md): computed from every module's imports with ``ast``, including
imports inside functions, so a lazy import counts like a top-level one.

Rules
  (a) the math core and the path/muscle layer never import opensim, matplotlib or lxml;
  (b) a lower layer never imports a higher one;
  (c) opensim is imported only from the validation layer (the OpenSim bridge) up, matplotlib only from the
      report layer up, lxml only from the io layer up;
  (d) below the io layer no function reads XML (a function whose name contains ``xml``).
Today's exceptions are listed in KNOWN_VIOLATIONS with a reason.  The test fails on a new violation and
also when a listed one disappears, so the list only shrinks (issue 16: the restructure empties it).
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
    # opensim: the bridge to OpenSim's API, the comparison harness, the main job and batches built on it
    "osim_emb.opensim": "opensim",
    # report: figure style, figures, model descriptions
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
    ("b", "osim_emb.opensim.moment_arms", "osim_emb.report.comparison_figures"):
        "the comparison harness draws its own figures (should return tables; report draws them)",
    ("b", "osim_emb.opensim.motion_moment_arms", "osim_emb.report.comparison_figures"):
        "the motion comparison draws its own figures",
    ("b", "osim_emb.rhythm.fit", "osim_emb.report"): "plot_fit sits beside the fit; it moves to report/",
    ("b", "osim_emb.rhythm.fit", "osim_emb.report.figure_style"): "same as above",
    ("b", "osim_emb.seeds.planar.contributions", "osim_emb.report"):
        "the seed's contribution plots are drawn beside the planar chain; they move to report/",
    ("b", "osim_emb.seeds.planar.contributions", "osim_emb.report.figure_style"): "same as above",
    ("c", "osim_emb.seeds.newton_euler", "opensim"):
        "opensim_foot_shank_reference, the seed's OpenSim cross-check, sits beside the seed's equations",
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
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
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
            if node.module or len(submodules) < len(node.names):  # "from . import sub" imports only sub
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
    """Independent check of the scanner on a module known to import matplotlib only inside a function."""
    imported, functions = imports_of("osim_emb.rhythm.fit")
    assert "osim_emb.report.figure_style" in imported and "plot_fit" in functions
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
