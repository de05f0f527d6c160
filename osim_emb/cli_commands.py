"""Subcommands beyond inspect/convert: each registers itself on the parser here."""

from __future__ import annotations

import argparse
from pathlib import Path


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def cmd_rhythm(args: argparse.Namespace) -> int:
    from .io import load_osim
    from .io.osim_writer import moving_points_as_bodies, write_osim
    from .rhythm import apply, load_rhythm
    rhythm = load_rhythm(args.rhythm)
    model = load_osim(args.model, strict=not args.lenient)
    new = apply(model, rhythm)
    out = Path(args.output)
    write_osim(new, out, protect=[args.model])
    print(f"wrote {out}: couplers of {', '.join(t.dependent for t in rhythm.terms)} follow rhythm "
          f"{rhythm.name!r} in {', '.join(rhythm.inputs)}")
    if not args.no_variant:
        mvp = out.with_name(out.stem + "_mvp" + out.suffix)
        write_osim(moving_points_as_bodies(new.extras["document"]), mvp, protect=[args.model])
        print(f"wrote {mvp}: the same model with its moving via points as zero-inertia bodies")
    return 0


def _formats(text: str) -> list[str]:
    """Figure formats, checked before any work is done."""
    from matplotlib.backend_bases import FigureCanvasBase
    known = FigureCanvasBase.get_supported_filetypes()
    out = [f.lower().lstrip(".") for f in _csv(text)]
    bad = [f for f in out if f not in known]
    if bad or not out:
        raise ValueError(f"--formats: unknown figure format(s) {', '.join(bad) or repr(text)}; "
                         f"choose from {', '.join(sorted(known))}")
    return out


def _fixed(pairs: list[str] | None) -> dict[str, float]:
    import numpy as np
    out = {}
    for item in pairs or []:
        for part in _csv(item):
            name, _, val = part.partition("=")
            if not val:
                raise ValueError(f"--fixed expects NAME=DEGREES, got {part!r}")
            out[name.strip()] = float(np.radians(float(val)))
    return out


def cmd_moment_arms(args: argparse.Namespace) -> int:
    from .validation.moment_arms import REFERENCES, print_report, run_moment_arm_study
    refs = [] if args.references == "none" else _csv(args.references)
    for r in refs:
        if r not in REFERENCES:
            raise ValueError(f"unknown reference {r!r}; choose from {', '.join(REFERENCES)} or 'none'")
    if not args.sweep and not args.motion:
        raise ValueError("give --sweep COORDINATES or --motion FILE")
    if args.step <= 0:
        raise ValueError(f"--step must be positive (got {args.step})")
    out = args.out or str(Path("out") / (Path(args.model).stem + "_moment_arms"))
    compat = not args.fresh_geometry
    muscles = _csv(args.muscles) if args.muscles else None
    coords = _csv(args.coordinates) if args.coordinates else None
    if args.motion:
        from .validation.motion_moment_arms import print_motion_report, run_motion_study
        result = run_motion_study(args.model, args.motion, muscles=muscles, ma_coordinates=coords,
                                  reference=args.references != "none", opensim_compat=compat, out_dir=out,
                                  formats=_formats(args.formats), plot=not args.no_plot)
        print_motion_report(result)
    else:
        result = run_moment_arm_study(
            args.model, _csv(args.sweep), step_deg=args.step, muscles=muscles, ma_coordinates=coords,
            references=refs, fixed=_fixed(args.fixed), opensim_compat=compat, out_dir=out,
            formats=_formats(args.formats), progress=not args.quiet, workers=args.workers,
            cache_dir=False if args.no_cache else args.cache_dir, plot=not args.no_plot)
        print_report(result)
    print(f"  tables and figures in {out}/")
    return 0


def _values(model, pairs: list[str] | None, default) -> "object":
    import numpy as np
    v = np.array(default, dtype=float)
    for name, val in _fixed(pairs).items():
        v[model.coordinate_index(name)] = val if model.coordinates[model.coordinate_index(name)].motion_type \
            == "rotational" else np.degrees(val)
    return v


def _plot_table(table, columns, ylabel, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for c in columns:
        ax.plot(table["time"], table[c], label=c)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=200)
    plt.close(fig)


def cmd_simulate(args: argparse.Namespace) -> int:
    import numpy as np
    from .cli import _load_any
    from .io.motion import write_motion
    from .simulation import simulate
    model = _load_any(args.model)
    q0 = _values(model, args.q0, model.default_q)
    qd0 = _values(model, args.qdot0, np.zeros(model.n_q))
    model.check_configuration(q0)
    tab = simulate(model, args.t_end, q0, qd0, method=args.method, rtol=args.rtol, atol=args.atol,
                   n_output=args.samples)
    out = Path(args.output)
    write_motion(out, tab, name=f"{model.name} passive simulation", protect=[args.model])
    print(f"wrote {out}: {len(tab)} samples over {args.t_end} s ({tab.attrs['nfev']} right-hand sides, {args.method})")
    if args.plot:
        p = out.with_suffix(".png")
        _plot_table(tab, model.coordinate_names, "generalized coordinates (rad, m)", p,
                    f"{model.name}: forward simulation under gravity")
        print(f"wrote {p}")
    return 0


def cmd_inverse_dynamics(args: argparse.Namespace) -> int:
    from .cli import _load_any
    from .io.motion import coordinates_from_motion, read_motion, write_motion
    from .simulation import inverse_dynamics_of_motion
    model = _load_any(args.model)
    table, header = read_motion(args.motion)
    time, q, qd = coordinates_from_motion(model, table, header)
    tau = inverse_dynamics_of_motion(model, time, q, qd, smoothing=args.smoothing)
    out = Path(args.output)
    write_motion(out, tau, name=f"{model.name} inverse dynamics", protect=[args.model, args.motion])
    print(f"wrote {out}: generalized forces at {len(tau)} frames")
    if args.plot:
        p = out.with_suffix(".png")
        _plot_table(tau, [c for c in tau.columns if c != "time"], "generalized force (N m, N)", p,
                    f"{model.name}: inverse dynamics of {Path(args.motion).name}")
        print(f"wrote {p}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .study import run_main_job
    kw = {"sweep": _csv(args.sweep)} if getattr(args, "sweep", None) else {}
    if args.step <= 0:
        raise ValueError(f"--step must be positive (got {args.step})")
    run_main_job(args.model, args.out, step_deg=args.step, formats=_formats(args.formats), progress=not args.quiet,
                 workers=getattr(args, "workers", None),
                 cache_dir=False if getattr(args, "no_cache", False) else getattr(args, "cache_dir", None),
                 command="osim-emb run " + " ".join(
                     [args.model or "(built-in shoulder3d)", "--out", str(args.out), "--step", f"{args.step:g}"]
                     + (["--sweep", args.sweep] if getattr(args, "sweep", None) else [])), **kw)
    return 0


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default in --help (unless the help already says it, or there is none)."""

    def _get_help_string(self, action):
        h = action.help or ""
        if "default" in h or action.default in (None, False, argparse.SUPPRESS):
            return h
        return super()._get_help_string(action)


def add_comparison_options(s: argparse.ArgumentParser) -> None:
    """Options shared by ``moment-arms`` and ``plot``."""
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
    s.add_argument("--out", help="output folder (default out/MODEL_moment_arms)")
    s.add_argument("--formats", default="pdf,png,svg", help="figure formats")
    s.add_argument("--no-plot", action="store_true", help="tables only")
    s.add_argument("--quiet", action="store_true", help="no progress lines")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the analysis commands (moment arms, rhythm, simulation, the default study)."""
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
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("simulate", help="forward simulation of the minimal-coordinate ODE under gravity")
    s.add_argument("model", help=".osim or .emb.json model")
    s.add_argument("-o", "--output", required=True, help="output .sto file (q and q-dot)")
    s.add_argument("--t-end", type=float, default=1.0, help="duration in seconds (default 1)")
    s.add_argument("--q0", action="append", help="initial coordinates NAME=DEGREES (or metres)[,...]; default: defaults")
    s.add_argument("--qdot0", action="append", help="initial speeds NAME=DEG_PER_S[,...]; default 0")
    s.add_argument("--method", default="DOP853", help="solve_ivp method (default DOP853)")
    s.add_argument("--rtol", type=float, default=1e-10)
    s.add_argument("--atol", type=float, default=1e-10)
    s.add_argument("--samples", type=int, default=201, help="output samples")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_simulate)

    s = sub.add_parser("inverse-dynamics", help="generalized forces of a motion (.mot/.sto) by M q'' + N q' - G")
    s.add_argument("model", help=".osim or .emb.json model")
    s.add_argument("motion", help=".mot/.sto with the generalized coordinates (degrees if inDegrees=yes)")
    s.add_argument("-o", "--output", required=True, help="output .sto file")
    s.add_argument("--smoothing", type=float, help="smoothing-spline penalty (default: interpolating spline)")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_inverse_dynamics)
    s = sub.add_parser("moment-arms", help="sweep coordinates (or follow a motion) and compare the closed-form "
                                           "moment arms with OpenSim", formatter_class=_Help)
    s.add_argument("model", help=".osim file")
    s.add_argument("--sweep", help="coordinates to sweep over their whole ranges, e.g. elv_angle,shoulder_elv")
    s.add_argument("--motion", help="a motion (.mot/.sto, e.g. an inverse-kinematics result): L and R at its "
                                    "frames beside OpenSim's MuscleAnalysis on the same file")
    add_comparison_options(s)
    s.set_defaults(func=cmd_moment_arms)

    s = sub.add_parser("rhythm", help="replace a model's shoulder-rhythm couplers and export it as .osim")
    s.add_argument("model", help=".osim file (e.g. the Holzbaur/MoBL model)")
    s.add_argument("--rhythm", default="degroot2001",
                   help="built-in rhythm (degroot2001, degroot2001-regression, holzbaur2005) or a .csv/.json file")
    s.add_argument("-o", "--output", required=True, help="the new .osim file (OpenSim 4 format)")
    s.add_argument("--no-variant", action="store_true",
                   help="do not also write NEW_mvp.osim (moving via points as zero-inertia bodies)")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.set_defaults(func=cmd_rhythm)

    from . import cli_plot
    cli_plot.register(sub)
