"""Subcommands beyond inspect/convert: each registers itself on the parser here."""

from __future__ import annotations

import argparse
import json
import logging
import math
import textwrap
from contextlib import contextmanager
from pathlib import Path


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


log = logging.getLogger(__name__)

#: Relative round-off accepted on a range bound (a default of -2e-08 rad for a range starting at 0 is accepted).
RANGE_ROUNDOFF = 1e-6


def _positive(name: str, value: float, allow_zero: bool = False) -> float:
    if value is None or not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be a positive number, got {value}")
    return value


def _figure_formats(text: str) -> list[str]:
    from matplotlib.backend_bases import FigureCanvasBase
    known = FigureCanvasBase.get_supported_filetypes()
    formats = _csv(text)
    bad = [f for f in formats if f not in known]
    if bad or not formats:
        raise ValueError(f"--formats: unknown figure format(s) {bad or text!r}; known: {', '.join(sorted(known))}")
    return formats


def _load_rhythm_file(source: str, load_rhythm):
    """load_rhythm with a message naming the file for an empty or malformed table."""
    p = Path(source)
    if p.is_file() and not p.read_text(encoding="utf-8", errors="replace").strip():
        raise ValueError(f"{source}: the rhythm file is empty")
    try:
        return load_rhythm(source)
    except json.JSONDecodeError as err:
        raise ValueError(f"{source}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno})") from None
    except (IndexError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{source}: not a valid rhythm file ({type(err).__name__}: {err})") from None


def cmd_rhythm(args: argparse.Namespace) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
    from osim_emb.io.outputs import atomic_files
    from osim_emb.rhythm.rhythms import apply, load_rhythm
    out = Path(args.output)
    mvp = out.with_name(out.stem + "_mvp" + out.suffix)
    outs = [out] if args.no_variant else [out, mvp]
    inputs = [args.model] + ([args.rhythm] if Path(args.rhythm).exists() else [])
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        rhythm = _load_rhythm_file(args.rhythm, load_rhythm)
        if str(args.model).lower().endswith(".json"):  # a saved model keeps its OpenSim document
            from osim_emb.io.model_json import load_model
            model = load_model(args.model)
        else:
            model = load_osim(args.model, strict=not args.lenient)
        new = apply(model, rhythm, outside=args.outside)
        write_osim(new, tmps[0], protect=[args.model])
        if not args.no_variant:
            write_osim(moving_points_as_bodies(new.extras["document"]), tmps[1], protect=[args.model])
    print(f"wrote {out}: couplers of {', '.join(t.dependent for t in rhythm.terms)} follow rhythm "
          f"{rhythm.name!r} in {', '.join(rhythm.inputs)}")
    if not args.no_variant:
        print(f"wrote {mvp}: the same model with its moving via points as zero-inertia bodies")
    return 0


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


def _fixed_radians(pairs: list[str] | None) -> dict[str, float]:
    import numpy as np
    return {k: float(np.radians(v)) for k, v in _fixed(pairs).items()}


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


def cmd_moment_arms(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_folder
    from osim_emb.opensim.moment_arms import REFERENCES, print_report, run_moment_arm_study
    _positive("--step", args.step)
    formats = _figure_formats(args.formats)
    refs = [] if args.references == "none" else _csv(args.references)
    for r in refs:
        if r not in REFERENCES:
            raise ValueError(f"unknown reference {r!r}; choose from {', '.join(REFERENCES)} or 'none'")
    if not args.sweep and not args.motion:
        raise ValueError("give --sweep COORDINATES or --motion FILE")
    if args.sweep and not _csv(args.sweep):
        raise ValueError("--sweep needs at least one coordinate")
    fixed = _fixed_radians(args.fixed)
    out = args.out or str(Path("out") / (Path(args.model).stem + "_moment_arms"))
    compat = not args.fresh_geometry
    muscles = _csv(args.muscles) if args.muscles else None
    coords = _csv(args.coordinates) if args.coordinates else None
    inputs = [args.model] + ([args.motion] if args.motion else [])
    with atomic_folder(out, overwrite=args.overwrite, inputs=inputs) as tmp:
        if args.motion:
            from osim_emb.opensim.motion_moment_arms import print_motion_report, run_motion_study
            with outside_range_hint():
                result = run_motion_study(args.model, args.motion, muscles=muscles, ma_coordinates=coords,
                                          reference=args.references != "none", opensim_compat=compat,
                                          out_dir=tmp, formats=formats, plot=not args.no_plot,
                                          outside_range=args.outside_range)
        else:
            result = run_moment_arm_study(
                args.model, _csv(args.sweep), step_deg=args.step, muscles=muscles, ma_coordinates=coords,
                references=refs, fixed=fixed, opensim_compat=compat, out_dir=tmp,
                formats=formats, progress=not args.quiet, workers=args.workers,
                cache_dir=False if args.no_cache else args.cache_dir, plot=not args.no_plot)
    if args.motion:
        print_motion_report(result)
    else:
        print_report(result)
    print(f"  tables and figures in {out}/")
    return 0


def _values(model, pairs: list[str] | None, default, option: str) -> "object":
    """The model's default vector with NAME=VALUE pairs applied, degrees converted for angles."""
    import numpy as np
    v = np.array(default, dtype=float)
    from osim_emb.core.configuration import rotational_coordinates
    angles = rotational_coordinates(model)
    for name, val in _fixed(pairs, option).items():
        if name not in model.coordinate_names:
            raise ValueError(f"{option}: {name!r} is not a generalized coordinate of {model.name!r} "
                             f"(they are {', '.join(model.coordinate_names)})")
        k = model.coordinate_index(name)
        v[k] = np.radians(val) if angles[k] else val
    return v


def _into_range(model, q, what: str):
    """q with values within round-off of their range clamped into it; farther values refused."""
    import numpy as np
    q = np.array(q, dtype=float)
    for k, c in enumerate(model.coordinates):
        lo, hi = c.range
        tol = RANGE_ROUNDOFF * max(1.0, abs(lo) if math.isfinite(lo) else 1.0, abs(hi) if math.isfinite(hi) else 1.0)
        if q[k] < lo - tol or q[k] > hi + tol:
            raise ValueError(f"{what}: coordinate {c.name!r} = {q[k]:.6g} is outside its range [{lo:.6g}, {hi:.6g}]")
        q[k] = min(max(q[k], lo), hi)
    return q


def warn_unapplied_forces(model, command: str) -> None:
    """One warning per kind of force the minimal-coordinate equations of ``command`` leave out."""
    by_type: dict[str, list[str]] = {}
    for m in model.muscles:
        by_type.setdefault(m.type_name, []).append(m.name)
    for name, kind in model.extras.get("forces", []):
        by_type.setdefault(kind, []).append(name)
    for kind, names in by_type.items():
        log.warning("%s does not apply the model's %d %s force(s): %s", command, len(names), kind,
                    ", ".join(names[:12]) + (f", ... ({len(names) - 12} more)" if len(names) > 12 else ""))


def _warn_range_exits(model, table) -> None:
    for c in model.coordinates:
        lo, hi = c.range
        v = table[c.name].to_numpy()
        out = (v < lo) | (v > hi)
        if out.any():
            k = int(out.argmax())
            log.warning("coordinate %r leaves its range [%.6g, %.6g] at t = %.6g s (%.6g); the package does not "
                        "apply OpenSim's coordinate limits or clamping", c.name, lo, hi, table["time"].iloc[k], v[k])


def _plot_table(table, columns, ylabel, path, title):
    """Columns of a table against time, in the project's figure style; the format is the path's suffix."""
    import matplotlib
    from osim_emb.report import figure_style as fs
    fig, axes = fs.figure("double", height=3.4)
    ax = axes[0, 0]
    for i, c in enumerate(columns):
        ax.plot(table["time"], table[c], label=c, **fs.cue(i))
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(textwrap.fill(title, 95), loc="left")  # a long model or file name must not be cut off
    fs.legend_below(fig)
    try:
        fs.check_figure(fig)
        with fs.style(), matplotlib.rc_context({"savefig.bbox": "standard"}):  # print size
            fig.savefig(path, format=Path(path).suffix.lstrip(".") or "png", dpi=fs.RC["savefig.dpi"])
    finally:
        import matplotlib.pyplot as plt
        plt.close(fig)


def _plot_path(out: Path) -> Path:
    p = out.with_suffix(".png")
    if p == out:
        raise ValueError(f"-o {out}: the motion and its --plot would both be {p}; give the motion a .sto or .mot name")
    return p


def cmd_simulate(args: argparse.Namespace) -> int:
    import numpy as np
    from scipy.integrate._ivp.ivp import METHODS
    from osim_emb.cli.main import _load_any
    from osim_emb.io.motion import write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.motions import simulate
    _positive("--t-end", args.t_end)
    _positive("--rtol", args.rtol)
    _positive("--atol", args.atol)
    if args.samples < 2:
        raise ValueError(f"--samples must be at least 2, got {args.samples}")
    if args.max_steps < 1:
        raise ValueError(f"--max-steps must be at least 1, got {args.max_steps}")
    _positive("--max-seconds", args.max_seconds)
    if args.method not in METHODS:
        raise ValueError(f"--method {args.method!r} is not a solve_ivp method; choose from {', '.join(METHODS)}")
    out = Path(args.output)
    outs = [out] + ([_plot_path(out)] if args.plot else [])
    with atomic_files(outs, overwrite=args.overwrite, inputs=[args.model]) as tmps:
        model = _load_any(args.model)
        q0 = _into_range(model, _values(model, args.q0, model.default_q, "--q0"), "initial configuration")
        qd0 = _values(model, args.qdot0, np.zeros(model.n_q), "--qdot0")
        warn_unapplied_forces(model, "simulate")
        tab = simulate(model, args.t_end, q0, qd0, method=args.method, rtol=args.rtol, atol=args.atol,
                       n_output=args.samples, max_steps=args.max_steps, max_seconds=args.max_seconds)
        _warn_range_exits(model, tab)
        write_motion(tmps[0], tab, name=f"{model.name} passive simulation", protect=[args.model])
        if args.plot:
            _plot_table(tab, model.coordinate_names, "generalized coordinates (rad, m)", tmps[1],
                        f"{model.name}: forward simulation under gravity")
    print(f"wrote {out}: {len(tab)} samples over {args.t_end} s ({tab.attrs['nfev']} right-hand sides, {args.method})")
    if args.plot:
        print(f"wrote {outs[1]}")
    return 0


def cmd_inverse_dynamics(args: argparse.Namespace) -> int:
    from osim_emb.cli.main import _load_any
    from osim_emb.io.motion import coordinates_from_motion, read_motion, write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.motions import inverse_dynamics_of_motion
    if args.smoothing is not None:
        _positive("--smoothing", args.smoothing, allow_zero=True)
    out = Path(args.output)
    outs = [out] + ([_plot_path(out)] if args.plot else [])
    with atomic_files(outs, overwrite=args.overwrite, inputs=[args.model, args.motion]) as tmps:
        model = _load_any(args.model)
        table, header = read_motion(args.motion)
        with outside_range_hint():
            time, q, qd = coordinates_from_motion(model, table, header, outside=args.outside_range)
        warn_unapplied_forces(model, "inverse-dynamics")
        tau = inverse_dynamics_of_motion(model, time, q, qd, smoothing=args.smoothing)
        write_motion(tmps[0], tau, name=f"{model.name} inverse dynamics", protect=[args.model, args.motion])
        if args.plot:
            _plot_table(tau, [c for c in tau.columns if c != "time"], "generalized force (N m, N)", tmps[1],
                        f"{model.name}: inverse dynamics of {Path(args.motion).name}")
    print(f"wrote {out}: generalized forces at {len(tau)} frames")
    if args.plot:
        print(f"wrote {outs[1]}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_folder
    from osim_emb.opensim.study import run_main_job
    _positive("--step", args.step)
    formats = _figure_formats(args.formats)
    kw = {"sweep": _csv(args.sweep)} if getattr(args, "sweep", None) else {}
    command = "osim-emb run " + " ".join(
        [args.model or "(built-in shoulder3d)", "--out", str(args.out), "--step", f"{args.step:g}"]
        + (["--sweep", args.sweep] if getattr(args, "sweep", None) else []))
    with atomic_folder(args.out, overwrite=args.overwrite, inputs=[args.model], replace_whole=False) as tmp:
        run_main_job(args.model, tmp, step_deg=args.step, formats=formats, progress=not args.quiet,
                     workers=getattr(args, "workers", None),
                     cache_dir=False if getattr(args, "no_cache", False) else getattr(args, "cache_dir", None),
                     command=command, shown_as=args.out, **kw)
    print(f"outputs in {args.out}/")
    return 0


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default in --help (unless the help already says it, or there is none)."""

    def _get_help_string(self, action):
        h = action.help or ""
        if "default" in h or action.default in (None, False, "", argparse.SUPPRESS):
            return h
        return super()._get_help_string(action)


def add_comparison_options(s: argparse.ArgumentParser, figures_only: bool = False) -> None:
    """Options shared by ``moment-arms`` and ``plot`` (``figures_only``: no --no-plot, another default folder)."""
    s.add_argument("--step", type=float, default=1.0, help="sweep step in degrees")
    s.add_argument("--coordinates", help="moment-arm coordinates (default: the swept ones, or those the motion moves)")
    s.add_argument("--muscles", help="comma-separated muscle names (default: all)")
    s.add_argument("--fixed", action="append", help="values of the other coordinates, NAME=DEGREES[,...] "
                                                    "(default: their default values, clamped into range)")
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


def register(sub: argparse._SubParsersAction) -> None:
    """Add the analysis commands in the README's order: the main job, moment arms and figures, rhythms,
    simulation, path fitting, batches."""
    from osim_emb.cli import batch as cli_batch
    from osim_emb.cli import fit_paths as cli_fit_paths
    from osim_emb.cli import fit_rhythm as cli_fit_rhythm
    from osim_emb.cli import simulate_muscles as cli_muscle_sim
    from osim_emb.cli import plot as cli_plot
    s = sub.add_parser("run", help="the main job: export a model (default: the built-in 3D shoulder), validate its "
                                   "moment arms against OpenSim over 1-degree sweeps, write a report",
                       formatter_class=_Help)
    s.add_argument("model", nargs="?", help=".osim file (default: the built-in models/shoulder3d)")
    s.add_argument("--out", default="out", help="output folder")
    s.add_argument("--step", type=float, default=1.0, help="sweep step in degrees")
    s.add_argument("--sweep", help="coordinates to sweep (default: the unlocked rotational coordinates the "
                                   "muscles span)")
    s.add_argument("--formats", default="pdf,png,svg", help="figure formats")
    s.add_argument("--workers", type=int, help="processes for OpenSim's side (default: CPUs, at most 4)")
    s.add_argument("--cache-dir", help="cache of OpenSim's values (default: $OSIM_EMB_CACHE or "
                                       "~/.cache/osim-emb/opensim_references)")
    s.add_argument("--no-cache", action="store_true", help="neither read nor write the OpenSim cache")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("moment-arms", help="sweep coordinates (or follow a motion) and compare the closed-form "
                                           "moment arms with OpenSim", formatter_class=_Help)
    s.add_argument("model", help=".osim file")
    s.add_argument("--sweep", help="coordinates to sweep over their whole ranges, e.g. elv_angle,shoulder_elv")
    s.add_argument("--motion", help="a motion (.mot/.sto, e.g. an inverse-kinematics result): L and R at its "
                                    "frames beside OpenSim's MuscleAnalysis on the same file")
    add_comparison_options(s)
    s.set_defaults(func=cmd_moment_arms)
    cli_plot.register(sub)

    s = sub.add_parser("rhythm", help="replace a model's shoulder-rhythm couplers and export it as .osim")
    s.add_argument("model", help=".osim file (e.g. the Holzbaur/MoBL model)")
    s.add_argument("--rhythm", default="degroot2001",
                   help="built-in rhythm (degroot2001, degroot2001-regression, holzbaur2005, spartacus2024) "
                        "or a .csv/.json file")
    s.add_argument("-o", "--output", required=True, help="the new .osim file (OpenSim 4 format)")
    s.add_argument("--no-variant", action="store_true",
                   help="do not also write NEW_mvp.osim (moving via points as zero-inertia bodies)")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.add_argument("--outside", choices=("warn", "error", "ignore"), default="warn",
                   help="when the model's coordinate ranges leave the domain of the rhythm's data (default warn)")
    s.set_defaults(func=cmd_rhythm)

    cli_fit_rhythm.register(sub)
    s = sub.add_parser("simulate", help="forward simulation of the minimal-coordinate ODE under gravity")
    s.add_argument("model", help=".osim or .emb.json model")
    s.add_argument("-o", "--output", required=True, help="output .sto file (q and q-dot)")
    s.add_argument("--t-end", type=float, default=1.0, help="duration in seconds (default 1)")
    s.add_argument("--q0", action="append", help="initial coordinates NAME=DEGREES (metres for translations)[,...]; "
                                                 "default: the model's defaults")
    s.add_argument("--qdot0", action="append", help="initial speeds NAME=DEG_PER_S (m/s for translations)[,...]; "
                                                    "default 0")
    s.add_argument("--method", default="DOP853", help="solve_ivp method (default DOP853)")
    s.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance of the integrator")
    s.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance of the integrator")
    s.add_argument("--samples", type=int, default=201, help="output samples (>= 2)")
    s.add_argument("--max-steps", type=int, default=1_000_000,
                   help="stop after this many right-hand-side evaluations (default 1,000,000)")
    s.add_argument("--max-seconds", type=float, default=600.0, help="stop after this wall time (default 600 s)")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_simulate)

    s = sub.add_parser("inverse-dynamics", help="generalized forces of a motion (.mot/.sto) by M q'' + N q' - G")
    s.add_argument("model", help=".osim or .emb.json model")
    s.add_argument("motion", help=".mot/.sto with the generalized coordinates (degrees if inDegrees=yes)")
    s.add_argument("-o", "--output", required=True, help="output .sto file")
    s.add_argument("--smoothing", type=float, help="smoothing-spline penalty (default: interpolating spline)")
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_inverse_dynamics)
    from osim_emb.cli import smooth_paths as cli_smooth_paths  # issue 13
    for more in (cli_muscle_sim, cli_fit_paths, cli_smooth_paths, cli_batch):
        more.register(sub)
