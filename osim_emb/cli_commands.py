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
    if str(args.model).lower().endswith(".json"):  # a saved model keeps its OpenSim document
        from .io.model_json import load_model
        model = load_model(args.model)
    else:
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
    out = args.out or str(Path("out") / (Path(args.model).stem + "_moment_arms"))
    result = run_moment_arm_study(
        args.model, _csv(args.sweep), step_deg=args.step, muscles=_csv(args.muscles) if args.muscles else None,
        ma_coordinates=_csv(args.coordinates) if args.coordinates else None, references=refs,
        fixed=_fixed(args.fixed), opensim_compat=args.opensim_compat, out_dir=out, formats=_csv(args.formats),
        progress=not args.quiet)
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
    run_main_job(args.model, args.out, step_deg=args.step, formats=_csv(args.formats), progress=not args.quiet)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the analysis commands (moment arms, rhythm, simulation, the default study)."""
    s = sub.add_parser("run", help="the main job: export a model (default: the built-in 3D shoulder), validate its "
                                   "moment arms against OpenSim over 1-degree sweeps, write a report")
    s.add_argument("model", nargs="?", help=".osim file (default: the built-in models/shoulder3d)")
    s.add_argument("--out", default="out", help="output folder (default: out)")
    s.add_argument("--step", type=float, default=1.0, help="sweep step in degrees (default 1)")
    s.add_argument("--formats", default="pdf,png,svg", help="figure formats")
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
    s = sub.add_parser("moment-arms", help="sweep coordinates and compare the closed-form moment arms with OpenSim")
    s.add_argument("model", help=".osim file")
    s.add_argument("--sweep", required=True, help="coordinates to sweep over their ranges, e.g. elv_angle,shoulder_elv")
    s.add_argument("--step", type=float, default=1.0, help="sweep step in degrees (default 1)")
    s.add_argument("--coordinates", help="moment-arm coordinates (default: the swept ones)")
    s.add_argument("--muscles", help="comma-separated muscle names (default: all)")
    s.add_argument("--fixed", action="append", help="values of the other coordinates, NAME=DEGREES[,...] "
                                                    "(default: their default values)")
    s.add_argument("--references", default="computeMomentArm,computeMomentArm_mvp,minus_dL_dq",
                   help="OpenSim references to compare with, or 'none'")
    s.add_argument("--opensim-compat", action="store_true",
                   help="reproduce OpenSim's stale wrap-point cache (paths with several wrap objects)")
    s.add_argument("--out", help="output folder (default out/MODEL_moment_arms)")
    s.add_argument("--formats", default="pdf,png,svg", help="figure formats")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
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
