"""Helpers shared by the commands: loading a model, parsing option values, the --help format, the options
of the moment-arm comparison, plots of a table against time, warnings of what a command does not apply."""

from __future__ import annotations

import argparse
import logging
import math
import textwrap
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

#: Relative round-off accepted on a range bound (a default of -2e-08 rad for a range starting at 0 is accepted).
RANGE_ROUNDOFF = 1e-6


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default in --help (unless the help already says it, or there is none)."""

    def _get_help_string(self, action):
        h = action.help or ""
        if "default" in h or action.default in (None, False, "", argparse.SUPPRESS):
            return h
        return super()._get_help_string(action)


def _load_any(path: str, strict: bool = True):
    """An .osim file or a saved .json model."""
    if not Path(path).exists():
        raise FileNotFoundError(2, "no such file", str(path))
    if Path(path).is_dir():
        raise IsADirectoryError(21, "is a folder, not a model file", str(path))
    if str(path).endswith(".json"):
        from osim_emb.io.model_json import load_model
        return load_model(path)
    from osim_emb.io import load_osim
    model = load_osim(path, strict=strict)
    for s in model.extras.get("skipped", []):
        log.warning("%s:%s: left out %s %r: %s", path, s.line or "", s.kind, s.name, s.reason)
    return model


def _csv(s: str | None) -> list[str]:
    """Comma-separated names (None or empty: none)."""
    return [x.strip() for x in (s or "").split(",") if x.strip()]


TABLE_SUFFIXES = (".sto", ".mot", ".csv")


def table_output(text: str, option: str = "-o") -> Path:
    """A table's output path: .sto or .mot (OpenSim's format) or .csv, any case; another name is refused (it would
    get OpenSim's format under a name that promises another)."""
    path = Path(text)
    if path.suffix.lower() not in TABLE_SUFFIXES and not path.is_dir():  # a folder: said by the output checks
        raise ValueError(f"{option} {text}: a table is written as OpenSim's .sto or .mot, or as .csv; name the file "
                         f"with one of these ({path.with_suffix('.sto').name})")
    return path


def output_prefix(text: str, first_file: str, option: str = "-o") -> str:
    """An output prefix (OpenSim's tool name: the command adds the analysis and .sto), refused when it already ends
    in a table suffix; ``first_file``: the name of the first file written for PREFIX, for the message."""
    path = Path(text)
    if path.suffix.lower() in (*TABLE_SUFFIXES, ".txt"):
        bare = str(path.with_suffix(""))
        raise ValueError(f"{option} {text}: this is a prefix, not a file name (the command writes "
                         f"{first_file.replace('PREFIX', bare)}, ...); give {option} {bare}")
    return text


def _positive(name: str, value: float, allow_zero: bool = False) -> float:
    if value is None or not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be a positive number, got {value}")
    return value


def _figure_formats(text: str) -> list[str]:
    from matplotlib.backend_bases import FigureCanvasBase
    known = FigureCanvasBase.get_supported_filetypes()
    formats = [f.lower().lstrip(".") for f in _csv(text)]  # (SVG, .pdf: as the file suffixes are written)
    bad = [f for f in formats if f not in known]
    if bad or not formats:
        raise ValueError(f"--formats: unknown figure format(s) {bad or text!r}; known: {', '.join(sorted(known))}")
    return formats


def _formats(text: str) -> list[str]:
    """Figure formats, checked before any work is done."""
    return [f.lower().lstrip(".") for f in _figure_formats(text)]


def _fixed(pairs: list[str] | None, option: str = "--fixed") -> dict[str, float]:
    """NAME=VALUE pairs (degrees for rotations, metres for translations), values as given (not converted)."""
    out = {}
    for item in pairs or []:
        for part in _csv(item):
            name, _, val = part.partition("=")
            try:
                v = float(val)
            except ValueError:
                v = None
            if not name.strip() or v is None or not math.isfinite(v):
                raise ValueError(f"{option} expects NAME=VALUE with a finite number, got {part!r}")
            out[name.strip()] = v
    return out


@contextmanager
def outside_range_hint():
    """A motion refused for a coordinate outside its range: the error also names --outside-range warn."""
    try:
        yield
    except ValueError as err:
        if "outside its range" in str(err) and "look like degrees" not in str(err):
            raise ValueError(f"{err} (--outside-range warn uses such values as they are, e.g. a simulation "
                             f"that left a range)") from None
        raise


def _named_values(model, pairs: list[str] | None, option: str) -> dict[str, float]:
    """NAME=VALUE pairs of ``option`` by coordinate name, in radians and metres (degrees converted for angles);
    a name that is not a generalized coordinate refused."""
    import numpy as np
    from osim_emb.core.configuration import rotational_coordinates
    given = _fixed(pairs, option)
    unknown = [name for name in given if name not in model.coordinate_names]
    if unknown:
        raise ValueError(f"{option}: {unknown[0]!r} is not a generalized coordinate of {model.name!r} "
                         f"(they are {', '.join(model.coordinate_names)})")
    angles = rotational_coordinates(model) if given else []
    return {name: float(np.radians(val)) if angles[model.coordinate_index(name)] else val
            for name, val in given.items()}


def _values(model, pairs: list[str] | None, default, option: str) -> "object":
    """The model's default vector with NAME=VALUE pairs applied, degrees converted for angles."""
    import numpy as np
    v = np.array(default, dtype=float)
    for name, val in _named_values(model, pairs, option).items():
        v[model.coordinate_index(name)] = val
    return v


def _in_range(model, k: int, value: float) -> float | None:
    """``value`` of coordinate ``k`` clamped into its range if within round-off of it, None if farther."""
    lo, hi = model.coordinates[k].range
    tol = RANGE_ROUNDOFF * max(1.0, abs(lo) if math.isfinite(lo) else 1.0, abs(hi) if math.isfinite(hi) else 1.0)
    return min(max(value, lo), hi) if lo - tol <= value <= hi + tol else None


def _outside_range(model, k: int, value: float) -> str:
    """'NAME = 500° (8.727 rad) is outside its range [0°, 130°]' (metres for a translation)."""
    from osim_emb.core.configuration import outside_range_text, rotational_coordinates
    c = model.coordinates[k]
    return outside_range_text(c.name, value, *c.range, rotational_coordinates(model)[k])


def _into_range(model, q, option: str, given=()):
    """q with values within round-off of their range clamped into it; farther values refused, in degrees for angles
    (``given``: the coordinates set with ``option``, the others being the model's defaults)."""
    import numpy as np
    q = np.array(q, dtype=float)
    for k, c in enumerate(model.coordinates):
        inside = _in_range(model, k, q[k])
        if inside is None and c.name in given:
            raise ValueError(f"{option}: {_outside_range(model, k, q[k])}")
        if inside is None:
            raise ValueError(f"{option}: the model's default {_outside_range(model, k, q[k])}; give {option} "
                             f"{c.name}=VALUE")
        q[k] = inside
    return q


def check_sweep_or_motion(args) -> None:
    """``--sweep`` or ``--motion``, not both; ``--fixed`` only with a sweep (a motion gives every coordinate)."""
    if not args.sweep and not args.motion:
        raise ValueError("give --sweep COORDINATES or --motion FILE")
    if args.motion and (args.sweep or args.fixed):
        given = " and ".join(o for o, v in (("--sweep", args.sweep), ("--fixed", args.fixed)) if v)
        raise ValueError(f"--motion {args.motion}: {given} do{'es' if ' and ' not in given else ''} not apply with a "
                         "motion, which gives every coordinate at every frame; leave "
                         f"{'it' if ' and ' not in given else 'them'} out")


def _fixed_values(model, pairs: list[str] | None, swept=()) -> dict[str, float]:
    """``--fixed`` NAME=VALUE pairs (degrees for angles, metres for translations) in radians and metres, each within
    its coordinate's range (round-off clamped); a ``swept`` coordinate's value holds it while the others are swept,
    so it is refused when no other is."""
    fixed = _named_values(model, pairs, "--fixed")
    unused = [name for name in fixed if set(swept) == {name}]
    if unused:
        raise ValueError(f"--fixed: {unused[0]} is swept; it cannot also be fixed")
    for name, value in fixed.items():
        k = model.coordinate_index(name)
        inside = _in_range(model, k, value)
        if inside is None:
            raise ValueError(f"--fixed: {_outside_range(model, k, value)}")
        fixed[name] = inside
    return fixed


def warn_unapplied_forces(model, command: str, applied: tuple[str, ...] = (), applied_names=(),
                          excluded=frozenset()) -> None:
    """One warning per kind of force the minimal-coordinate equations of ``command`` leave out (all but the force
    types in ``applied``, the forces named in ``applied_names`` and those the user ``excluded``)."""
    by_type: dict[str, list[str]] = {}
    for m in model.muscles:
        if m.type_name not in applied and m.name not in applied_names and m.name not in excluded:
            by_type.setdefault(m.type_name, []).append(m.name)
    for name, kind in model.extras.get("forces", []):
        if kind not in applied and name not in applied_names and name not in excluded:
            by_type.setdefault(kind, []).append(name)
    for kind, names in by_type.items():
        log.warning("%s does not apply the model's %d %s force(s): %s", command, len(names), kind,
                    ", ".join(names[:12]) + (f", ... ({len(names) - 12} more)" if len(names) > 12 else ""))


#: lines a panel of a table's plot (colours stay distinct, each curve findable)
LINES_A_PANEL = 4


def coordinate_panels(model, columns: dict, ylabels: tuple[str, str], per_panel: int = LINES_A_PANEL) -> list:
    """Panels of a table's plot for coordinate-wise columns (``columns``: coordinate name -> table column, in the
    table's order): one unit a panel (``ylabels``: rotational, translational), one joint's coordinates together,
    joints with few coordinates sharing a panel up to ``per_panel`` lines; [(joints, columns, ylabel)]."""
    doc = getattr(model, "extras", {}).get("document")
    joint_of = {c.name: j.name for j in doc.joints for c in j.coordinates} if doc is not None else {}
    translational = {c.name for c in list(model.coordinates) + list(model.dependent_coordinates)
                     if c.motion_type == "translational"}
    blocks: list = []  # consecutive coordinates of one joint and one unit
    for name, col in columns.items():
        key = (joint_of.get(name, ""), name in translational)
        if blocks and blocks[-1][0] == key:
            blocks[-1][1].append(col)
        else:
            blocks.append((key, [col]))
    panels: list = []
    for (joint, moves), cols in blocks:
        for i in range(0, len(cols), per_panel):
            part = cols[i:i + per_panel]
            last = panels[-1] if panels else None
            fits = last is not None and len(last[1]) + len(part) <= per_panel and len(cols) < per_panel
            if fits and last[3] == moves:
                last[0].append(joint)
                last[1].extend(part)
            else:
                panels.append(([joint], list(part), ylabels[moves], moves))
    return [(", ".join(dict.fromkeys(j for j in joints if j)), cols, ylabel) for joints, cols, ylabel, _ in panels]


def written_figure(draw, path) -> bool:
    """``draw()`` (the figure of a command's --plot, written to ``path``): an error is said and False returned,
    the command's other outputs kept -- a figure never costs the results of a run."""
    try:
        draw()
        return True
    except Exception as err:  # noqa: BLE001 -- any layout check or matplotlib error
        log.error("the plot %s was not written (%s: %s); the other outputs are", path, type(err).__name__, err)
        return False


def _plot_table(table, panels, path, title, labels=None, *, output=None) -> bool:
    """:func:`_draw_table` through :func:`written_figure` (``output``: the file the user asked for, where ``path``
    is its temporary sibling): True when the figure is written."""
    return written_figure(lambda: _draw_table(table, panels, path, title, labels), output or path)


def _draw_table(table, panels, path, title, labels=None):
    """Columns of a table against time, in the project's figure style; the format is the path's suffix.  ``panels``:
    [(panel title, columns, ylabel), ...] -- one panel with its legend below, or a grid of panels, each with its
    legend (titled by the panel) above it; ``labels``: the legend's name of a column (default the column)."""
    from osim_emb.report import figure_style as fs
    panels = [p for p in panels if p[1]]
    n = len(panels)
    longest = max(len(str((labels or {}).get(c, c))) for p in panels for c in p[1])
    ncols = min(1 if n <= 2 else 2 if n <= 4 else 3 if n <= 9 else 4,  # and a legend entry fits a panel's width
                max(1, int(fs.DOUBLE_COLUMN // (0.8 + 0.055 * longest))))
    nrows = math.ceil(n / ncols)
    width = fs.DOUBLE_COLUMN / ncols

    def legend_columns(names):  # two where two entries fit the panel's width (inches at 7 pt)
        return 2 if len(names) > 1 and 2 * (0.35 + 0.055 * max(len(x) for x in names)) + 0.1 < width - 0.45 else 1

    shown = [[(labels or {}).get(c, c) for c in p[1]] for p in panels]
    legend_rows = max(math.ceil(len(s) / legend_columns(s)) + bool(p[0]) for s, p in zip(shown, panels))
    row_height = min(1.25 + 0.135 * legend_rows, 8.9 / nrows) if n > 1 else 3.4
    fig, axes = fs.figure("double", height=0.6 + row_height * nrows, nrows=nrows, ncols=ncols)
    t0, t1 = float(table["time"].iloc[0]), float(table["time"].iloc[-1])
    for k, ax in enumerate(axes.flat):
        if k >= n:
            fig.delaxes(ax)
            continue
        name, cols, label = panels[k]
        names = shown[k]
        for i, (c, entry) in enumerate(zip(cols, names)):
            ax.plot(table["time"], table[c], label=entry, **fs.cue(i if n > 1 else k + i))
        if k % ncols == 0 or panels[k - 1][2] != label:  # a row's panels share their left neighbour's label
            ax.set_ylabel(label)
        ax.set_xlim(t0, t1) if t1 > t0 else None
        if k + ncols >= n:  # the lowest panel of its column
            ax.set_xlabel("time (s)")
        if n > 1:
            ax.legend(title=name or None, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=legend_columns(names),
                      borderaxespad=0.2, handlelength=1.8, columnspacing=1.0, alignment="left")
    fig.suptitle(textwrap.fill(title, 95), x=0.01, ha="left")  # a long model or file name must not be cut off
    if n == 1:
        fs.legend_below(fig)
    path = Path(path)
    fs.save(fig, path.with_suffix(""), formats=[path.suffix.lstrip(".") or "png"])  # one layout, atomic, closed


def _plot_path(out: Path) -> Path:
    p = out.with_suffix(".png")
    if p == out:
        raise ValueError(f"-o {out}: the motion and its --plot would both be {p}; give the motion a .sto or .mot name")
    return p


def add_lenient_option(s: argparse.ArgumentParser) -> None:
    """``--lenient``, the same for every command that reads a model (``load_osim(strict=False)``)."""
    s.add_argument("--lenient", action="store_true",
                   help="import what can be represented and list the rest (e.g. keep an indefinite inertia, as "
                        "OpenSim does); what is left out is named")


def add_comparison_options(s: argparse.ArgumentParser, figures_only: bool = False) -> None:
    """Options shared by ``moment-arms`` and ``plot`` (``figures_only``: no --no-plot, another default folder)."""
    add_lenient_option(s)
    s.add_argument("--step", type=float, default=1.0, help="sweep step of a rotational coordinate, degrees (default 1)")
    s.add_argument("--step-mm", type=float, default=5.0,
                   help="sweep step of a translational coordinate, millimetres (default 5)")
    s.add_argument("--coordinates", help="moment-arm coordinates (default: the swept ones, or those the motion moves)")
    s.add_argument("--muscles", help="comma-separated muscle names (default: all)")
    s.add_argument("--fixed", action="append", help="values of the other coordinates, NAME=DEGREES (metres for "
                                                    "translations)[,...]; default: their default values, clamped "
                                                    "into range")
    s.add_argument("--references", default="computeMomentArm,computeMomentArm_mvp,minus_dL_dq",
                   help="OpenSim references to compare with, or 'none'")
    s.add_argument("--fresh-geometry", action="store_true",
                   help="compare the package's fresh-geometry mode with OpenSim (default: opensim_compat, which "
                        "reproduces OpenSim's stale wrap-point cache; the other mode is always reported beside)")
    s.add_argument("--opensim-compat", action="store_true", help=argparse.SUPPRESS)  # now the default
    s.add_argument("--workers", type=int, help="processes for OpenSim's side (default: CPUs, at most 4)")
    s.add_argument("--cache-dir", help="cache of OpenSim's values (default: $OSIM_EMB_CACHE or "
                                       "~/.cache/osim-emb/opensim_references)")
    s.add_argument("--no-cache", action="store_true", help="neither read nor write the OpenSim cache")
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="with --motion, coordinates outside their ranges: refuse the motion, or warn and use them "
                        "as they are")
    s.add_argument("--out", help=f"output folder (default out/MODEL_{'plots' if figures_only else 'moment_arms'})")
    s.add_argument("--formats", default="pdf,png,svg", help="figure formats")
    if not figures_only:
        s.add_argument("--no-plot", action="store_true", help="tables only")


def add_external_loads_option(parser) -> None:
    """``--external-loads``: an OpenSim ExternalLoads XML (ground reactions) applied in the inverse dynamics."""
    parser.add_argument("--external-loads", metavar="LOADS.xml",
                        help="OpenSim ExternalLoads file (its <datafile> beside it): forces from outside the model, "
                             "e.g. ground reactions, applied in the inverse dynamics as OpenSim's tools apply them")


def read_external_loads_option(args):
    """The ExternalLoads of ``--external-loads`` (None without it)."""
    if not getattr(args, "external_loads", None):
        return None
    from osim_emb.io.external_loads import read_external_loads
    return read_external_loads(args.external_loads)


def add_motion_differentiation_options(parser) -> None:
    """How a motion is differentiated: OpenSim's natural quintic spline (default), after its low-pass filter
    (``--lowpass``), or a smoothing spline (``--smoothing``)."""
    parser.add_argument("--lowpass", type=float, metavar="HZ",
                        help="OpenSim's low-pass filter of the coordinates first (its tools' "
                             "lowpass_cutoff_frequency_for_coordinates; e.g. 6)")
    parser.add_argument("--smoothing", type=float,
                        help="a cubic smoothing spline of this penalty instead (default: OpenSim's interpolating "
                             "natural quintic spline)")


def motion_differentiation(args) -> dict:
    """The keyword arguments of ``motion_derivatives`` from --lowpass / --smoothing (checked)."""
    if args.smoothing is not None and args.lowpass is not None:
        raise ValueError("--smoothing and --lowpass are alternatives: give one")
    if args.smoothing is not None:
        _positive("--smoothing", args.smoothing, allow_zero=True)
    if args.lowpass is not None:
        _positive("--lowpass", args.lowpass)
    return {"smoothing": args.smoothing, "lowpass_hz": args.lowpass}


def note_coupled_generalized_forces(model, command: str) -> None:
    """Say how the generalized forces of a model with coupled coordinates relate to OpenSim's InverseDynamicsTool's
    (which reports every mobility's force with the constraints ignored)."""
    coupled = [d.name for d in model.dependent_coordinates if d.kind == "coupled"]
    if coupled:
        one = len(coupled) == 1
        log.warning("%s: %s %s coupled to the generalized coordinates, and %s generalized force%s included in "
                    "theirs (τ_q = τ_q,OpenSim + Σ ∇c τ_c,OpenSim); OpenSim's InverseDynamicsTool reports %s "
                    "separately, with the constraints ignored", command, ", ".join(coupled[:6])
                    + (f" ({len(coupled)} in all)" if len(coupled) > 6 else ""), "is" if one else "are",
                    "its" if one else "their", " is" if one else "s are", "it" if one else "them")


#: OpenSim's keywords in forces_to_exclude (DynamicsTool::disableModelForces; any case)
FORCE_KEYWORDS = ("All", "Actuators", "Muscles")


def add_exclude_forces_option(parser, what: str) -> None:
    """``--exclude-forces NAMES``: OpenSim's forces_to_exclude (``what``: which of the model's forces the command
    applies, for the help)."""
    parser.add_argument("--exclude-forces", type=lambda text: [n for n in text.split(",") if n], metavar="NAMES",
                        help=f"forces of the model not to apply: {what} (comma-separated force names, or OpenSim's "
                             "keywords All, Actuators, Muscles; OpenSim's forces_to_exclude)")


def excluded_forces(model, names, command: str, source: str = "--exclude-forces") -> frozenset[str]:
    """The names of the model's forces that ``names`` exclude, read as OpenSim's forces_to_exclude: force names, or
    the keywords All, Actuators and Muscles in any case.  A name that is neither is refused, naming the model's
    forces (OpenSim only warns, and the force it was meant to remove would act)."""
    if not names:
        return frozenset()
    units = {m.name: m.type_name for m in model.muscles}
    others = dict(model.extras.get("forces", []))
    every = {**others, **units}
    muscles = {n for n, kind in units.items() if "Muscle" in kind}
    actuators = {n for n, kind in every.items() if "Muscle" in kind or kind.endswith("Actuator")}
    out, unknown = set(), []
    for name in names:
        key = name.strip().upper()
        if key == "ALL":
            out |= set(every)
        elif key == "ACTUATORS":
            out |= actuators
        elif key == "MUSCLES":
            out |= muscles
        elif name in every:
            out.add(name)
        else:
            unknown.append(name)
    if unknown:
        import difflib
        hints = [f"{n!r} (did you mean {', '.join(repr(c) for c in close)}?)" if close else repr(n)
                 for n in unknown for close in [difflib.get_close_matches(n, list(every), n=3)]]
        listed = ", ".join(sorted(every)[:20]) + (", ..." if len(every) > 20 else "")
        raise ValueError(f"{source}: {', '.join(hints)} {'is' if len(unknown) == 1 else 'are'} neither a force of model "
                         f"{model.name!r} nor one of OpenSim's keywords {', '.join(FORCE_KEYWORDS)}; the model's forces: {listed or 'none'}")
    if out:
        log.info("%s leaves out %d of the model's forces (%s): %s", command, len(out), source,
                 ", ".join(sorted(out)[:12]) + (", ..." if len(out) > 12 else ""))
    return frozenset(out)


def muscles_applied(model, command: str, excluded=frozenset()):
    """The model with only the path units that apply force: those whose ``appliesForce`` is false (OpenSim's tools
    remove them) and the ``excluded`` ones left out, each said."""
    from dataclasses import replace
    from osim_emb.io.muscle_xml import force_models_not_imported
    invalid = {n: why for n, why in force_models_not_imported(model).items() if n not in excluded}
    if invalid:
        why = next(iter(invalid.values()))
        more = f" (and {len(invalid) - 1} more: {', '.join(list(invalid)[1:6])})" if len(invalid) > 1 else ""
        raise ValueError(f"{why}{more}; the forces cannot be shared without it: fix the value in the "
                         f"file, or leave the muscle out with --exclude-forces {','.join(invalid)}")
    off = [m.name for m in model.muscles if m.parameters is not None and not getattr(m.parameters, "applies_force",
                                                                                        True)]
    if off:
        log.warning("%s: %d muscle(s) of %s do not apply force (appliesForce false) and are left out, as OpenSim's "
                    "tools leave them out: %s", command, len(off), model.name,
                    ", ".join(off[:12]) + (", ..." if len(off) > 12 else ""))
    dropped = set(off) | {m.name for m in model.muscles if m.name in excluded}
    if not dropped:
        return model
    return replace(model, muscles=tuple(m for m in model.muscles if m.name not in dropped))


def limit_forces_applied(model, command: str, excluded: tuple[str, ...] = ()) -> list:
    """The model's CoordinateLimitForces that ``command`` applies in its inverse dynamics, as OpenSim's tools apply
    every force they do not exclude (``excluded``: force names, as a setup's forces_to_exclude lists them); said."""
    from osim_emb.simulation.muscle_driven import coordinate_forces_from_model
    limits = [f for f in coordinate_forces_from_model(model)[0] if f.name not in excluded]
    if limits:
        log.info("%s applies the model's %d CoordinateLimitForce(s) in the inverse dynamics: %s", command,
                 len(limits), ", ".join(f.name for f in limits[:8]) + (", ..." if len(limits) > 8 else ""))
    return limits



def force_elements_applied(model, command: str, excluded: tuple[str, ...] = ()):
    """The model's contact, bushings, springs and prescribed forces (:mod:`osim_emb.simulation.force_elements`) that
    ``command`` applies, as OpenSim's tools apply every force they do not exclude (``excluded``: force names); said,
    and those it cannot evaluate warned with the reason."""
    from osim_emb.simulation.force_elements import ForceElements, model_force_elements, warn_unapplied
    found = model_force_elements(model)
    elements = ForceElements(tuple(law for law in found.laws if law.name not in excluded),
                             tuple(u for u in found.unapplied if u.name not in excluded))
    warn_unapplied(elements, command)
    if elements:
        log.info("%s applies the model's %s", command, elements.describe())
    return elements


def path_forces_applied(model, command: str, excluded: tuple[str, ...] = ()) -> list:
    """The model's PathSprings, Ligaments and Blankevoort1991Ligaments that ``command`` applies (their tensions along
    their paths), as OpenSim's tools apply every force they do not exclude (``excluded``: force names); said."""
    from osim_emb.simulation.muscle_driven import passive_path_forces_from_model
    forces = [f for f in passive_path_forces_from_model(model) if f.name not in excluded]
    if forces:
        log.info("%s applies the model's %d PathSpring(s) and Ligament(s): %s", command, len(forces),
                 ", ".join(f.name for f in forces[:8]) + (", ..." if len(forces) > 8 else ""))
    return forces


def fill_from_analyze_tool(args, setup, **values) -> None:
    """What the command line leaves unset, from an AnalyzeTool setup (:class:`osim_emb.io.tool_setup.AnalyzeToolSetup`):
    its model, states or coordinates file, ``results_directory/NAME`` as the output prefix, time range and (for a
    coordinates file) low-pass cutoff, and the analysis's own ``values``; its settings the package cannot reproduce and
    a speeds file (not read) refused by name."""
    unsupported = getattr(setup, "unsupported", ())
    if unsupported:
        raise ValueError(f"{args.setup}: the package cannot reproduce {'; '.join(unsupported)}")
    if setup.speeds is not None and setup.states is None:
        raise ValueError(f"{args.setup}: a speeds_file is not read (give a states file, or leave the speeds to the "
                         "coordinates' spline)")
    fill_from_setup(args, {"model": setup.model, "motion": setup.states or setup.coordinates,
                           "output": setup.results_directory / setup.name, **values},
                    {"model": "model_file", "motion": "states_file or coordinates_file"}, setup.time_range)
    if args.lowpass is None and setup.states is None:
        args.lowpass = setup.lowpass_hz
    use_step_interval(args, setup)


def use_step_interval(args, setup) -> None:
    """An AnalyzeTool setup's step_interval, for :func:`time_range_frames`: every N-th frame reported, said."""
    args.step_interval = setup.step_interval
    if setup.step_interval > 1:
        log.info("%s: step_interval %d: the first and last frames and every %d-th row are reported, as OpenSim's "
                 "AnalyzeTool reports them", args.setup, setup.step_interval, setup.step_interval)


def read_motion_option(args, model):
    """(time, q, q̇ or None) of ``args.motion`` for ``model`` (a coordinates or states file; ``--outside-range``)."""
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    table, header = read_motion(args.motion)
    with outside_range_hint():
        return coordinates_from_motion(model, table, header, outside=args.outside_range)


def analyze_tool_states(args, time, q, qd):
    """q, q̇, q̈ as OpenSim's AnalyzeTool hands them to its analyses (``simulation.motions.analysis_states``, with
    ``--lowpass``); a states file's speeds are used as they are, and ``--lowpass`` then not applied, which is said."""
    from osim_emb.simulation.motions import analysis_states
    if qd is not None and args.lowpass is not None:
        log.warning("%s has speeds: they are used as they are and --lowpass is not applied (OpenSim's AnalyzeTool "
                    "filters coordinates files only)", args.motion)
    return analysis_states(time, q, qd, lowpass_hz=args.lowpass)


def analysis_frames(args, time, q, qd):
    """(t, q, q̇, q̈) at the frames an analysis command reports, as OpenSim's AnalyzeTool hands them to its analyses:
    the motion's frames within the time range (:func:`time_range_frames`), or with ``--times opensim`` (coordinates
    files) the rows OpenSim's AnalyzeTool reports, on its resampled grid when filtered
    (:func:`osim_emb.simulation.motions.analyze_tool_rows`), so that the files can be compared row by row."""
    if getattr(args, "times", "motion") == "opensim" and qd is None:
        from osim_emb.simulation.motions import analysis_states, analyze_tool_rows
        t0, t1 = args.time_range if args.time_range is not None else (time[0], time[-1])
        rows = analyze_tool_rows(time, q, args.lowpass, t0, t1, getattr(args, "step_interval", 1) or 1)
        q, qd, qdd = analysis_states(time, q, None, lowpass_hz=args.lowpass, at=rows)
        return rows, q, qd, qdd
    q, qd, qdd = analyze_tool_states(args, time, q, qd)
    keep = time_range_frames(args, time)
    return time[keep], q[keep], qd[keep], qdd[keep]


def add_times_option(parser) -> None:
    """``--times {motion,opensim}``: the frames :func:`analysis_frames` reports."""
    parser.add_argument("--times", choices=("motion", "opensim"), default="motion",
                        help="report at the motion's frames (default) or, for a coordinates file, at the rows "
                             "OpenSim's AnalyzeTool reports (its resampled grid when filtered; a time range starting "
                             "at the row before T0), to compare files row by row")


def add_time_range_option(parser, help: str, one_frame: bool = False) -> None:
    """``--time-range T0 T1``, checked by :func:`check_time_range` before the command runs (``one_frame``: T0 = T1
    allowed, the frame at that time)."""
    parser.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"), help=help)
    parser.set_defaults(time_range_one_frame=one_frame)


def check_time_range(time_range, source: str = "--time-range", one_frame: bool = False) -> None:
    """A time range (T0, T1) refused unless T0 < T1 (T0 <= T1 with ``one_frame``); ``source``: the option or the
    setup element that gave it."""
    if time_range is None:
        return
    t0, t1 = (float(t) for t in time_range)
    if math.isnan(t0) or math.isnan(t1):
        raise ValueError(f"{source} {t0:g} {t1:g}: T0 and T1 must be numbers")
    if t0 > t1 or (t0 == t1 and not one_frame):
        raise ValueError(f"{source} {t0:g} {t1:g}: T0 must be less than T1"
                         + (" (or equal to it, for one frame)" if one_frame else ""))


def time_range_frames(args, time):
    """The frames of a motion within ``--time-range`` (a boolean mask over ``time``; all without the option); with an
    AnalyzeTool setup's ``step_interval`` N, the first and last of them and those whose row index is a multiple of N,
    as OpenSim's AnalyzeTool reports them: the whole motion is splined first, as OpenSim does, then these frames are
    reported. No frame in the range is refused."""
    import numpy as np
    time = np.asarray(time)
    keep = np.ones(time.shape, dtype=bool)
    if args.time_range is not None:
        t0, t1 = args.time_range
        keep = (time >= t0 - 1e-12) & (time <= t1 + 1e-12)
        if not keep.any():
            raise ValueError(f"--time-range {t0:g} {t1:g}: no frame of {args.motion} (t = {time[0]:g} to "
                             f"{time[-1]:g} s)")
        if t0 < time[0] - 1e-9 or t1 > time[-1] + 1e-9:  # OpenSim reports its extrapolated splines there
            log.warning("time range %g to %g s reaches beyond the motion (%g to %g s): its frames %g to %g s are "
                        "reported (OpenSim's tools report their padded, extrapolated data there)", t0, t1, time[0],
                        time[-1], time[keep][0], time[keep][-1])
    n = getattr(args, "step_interval", 1) or 1
    if n > 1:  # OpenSim's AnalyzeTool: the first and last frames (begin, end) and the frames whose index is a
        index = np.flatnonzero(keep)  # multiple of step_interval (Analysis::proceed on the storage's row index)
        keep = np.zeros_like(keep)
        keep[index[(index % n == 0) | (index == index[0]) | (index == index[-1])]] = True
    return keep


def fill_from_setup(args, values: dict, required: dict, time_range=None) -> None:
    """What a command line leaves unset, taken from an OpenSim tool setup (``--setup``): ``values`` maps argument
    names to the setup's values (paths as strings), ``time_range`` fills ``--time-range``; ``required`` maps the
    argument names that must then be set to the setup element that would set them (named in the refusal)."""
    for name, value in values.items():
        if not getattr(args, name) and value is not None:
            setattr(args, name, str(value))
    if args.time_range is None and time_range is not None:
        check_time_range(time_range, f"{args.setup}: <time_range>", getattr(args, "time_range_one_frame", False))
        args.time_range = list(time_range)
    missing = [tag for name, tag in required.items() if not getattr(args, name)]
    if missing:
        raise ValueError(f"{args.setup}: sets no {', '.join(missing)}; give it on the command line")


def passive_forces_report(model, command: str, apply: bool = True) -> None:
    """What ``command`` applies of the model's passive forces (contact, springs, bushings, prescribed forces:
    :func:`force_elements_applied`; CoordinateLimitForces; PathSprings and Ligaments: :func:`path_forces_applied`)
    and, one warning per kind, what it leaves out (with the reason where an element of an applied type cannot be
    evaluated)."""
    applied_names: set = set()
    if apply:
        elements = force_elements_applied(model, command)
        applied_names = {law.name for law in elements.laws} | {u.name for u in elements.unapplied}
        applied_names |= {f.name for f in path_forces_applied(model, command)}
        from osim_emb.simulation.muscle_driven import coordinate_forces_from_model
        limits = coordinate_forces_from_model(model)[0]
        if limits:
            log.info("%s applies the model's %d CoordinateLimitForce(s)", command, len(limits))
    warn_unapplied_forces(model, command, ("CoordinateLimitForce",) if apply else (), applied_names)