"""``osim-emb simulate``: forward simulation of the minimal-coordinate ODE under gravity
(:func:`osim_emb.simulation.motions.simulate`)."""

from __future__ import annotations

import argparse
import logging

from osim_emb.cli.common import table_output, _into_range, _load_any, _named_values, _plot_path, _plot_table, coordinate_panels, _positive, _values, \
    add_lenient_option, passive_forces_report, read_external_loads_option

log = logging.getLogger(__name__)


def moving_point_units(model) -> dict[str, list[str]]:
    """{coordinate: units with a MovingPathPoint it drives} from the model's .osim document (empty without one)."""
    doc = getattr(model, "extras", {}).get("document")
    out: dict[str, list[str]] = {}
    for f in (doc.forces if doc is not None else ()):
        for p in getattr(f, "points", None) or ():
            if p.kind == "moving":
                for c in dict.fromkeys(p.function_coordinates or ()):
                    if f.name not in out.setdefault(c, []):
                        out[c].append(f.name)
    return out


def warn_range_exits(model, table, applied=None) -> None:
    """Warn, once a coordinate, where a simulated motion leaves the coordinate's range (degrees for rotations),
    naming the units (of ``applied``, None: all) whose MovingPathPoints it drives: past the range OpenSim keeps
    such a point at the range end but applies its force through the location's slope at the unclamped value
    (MovingPathPoint::getdPointdQ), the package through -dL/dq (slope 0), so the two simulations part there."""
    import numpy as np
    from osim_emb.core.configuration import RANGE_TOLERANCE
    moving = moving_point_units(model)
    for c in model.coordinates:
        lo, hi = c.range
        v = table[c.name].to_numpy()
        out = (v < lo - RANGE_TOLERANCE) | (v > hi + RANGE_TOLERANCE)  # not round-off at a range end
        if out.any():
            k = int(out.argmax())
            shown = ((f"{np.degrees(v[k]):.4g}° ({v[k]:.6g} rad)", f"[{np.degrees(lo):.4g}°, {np.degrees(hi):.4g}°]")
                     if c.motion_type != "translational" else (f"{v[k]:.6g} m", f"[{lo:.6g}, {hi:.6g}] m"))
            log.warning("coordinate %r leaves its range %s at t = %.6g s (%s): a range is not enforced in a forward "
                        "simulation (only forces such as CoordinateLimitForce or contact hold a coordinate)",
                        c.name, shown[1], table["time"].iloc[k], shown[0])
            units = [u for u in moving.get(c.name, ()) if applied is None or u in applied]
            if units:
                log.warning("past the range of %r the MovingPathPoints of %s stay where they are at the range end "
                            "(as OpenSim places them); the package's forces follow the lengths (-dL/dq), while "
                            "OpenSim's Manager applies those points' forces through the location functions' slopes "
                            "at the unclamped value: from t = %.6g s the trajectory differs from OpenSim's",
                            c.name, ", ".join(units[:6]) + (f", ... ({len(units)} in all)" if len(units) > 6 else ""),
                            table["time"].iloc[k])


def cmd_simulate(args: argparse.Namespace) -> int:
    from scipy.integrate._ivp.ivp import METHODS
    from osim_emb.io.motion import as_opensim_states, write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.motions import COMPILED_METHODS, simulate
    from osim_emb.simulation.muscle_driven import passive_path_forces_from_model
    _positive("--t-end", args.t_end)
    _positive("--rtol", args.rtol)
    _positive("--atol", args.atol)
    if args.samples < 2:
        raise ValueError(f"--samples must be at least 2, got {args.samples}")
    if args.max_steps < 1:
        raise ValueError(f"--max-steps must be at least 1, got {args.max_steps}")
    _positive("--max-seconds", args.max_seconds)
    if args.method not in METHODS and args.method not in COMPILED_METHODS:
        raise ValueError(f"--method {args.method!r} is neither a solve_ivp method nor a compiled one; choose from "
                         f"{', '.join([*METHODS, *COMPILED_METHODS])}")
    out = table_output(args.output)
    outs = [out] + ([_plot_path(out)] if args.plot else [])
    inputs = [p for p in (args.model, args.external_loads) if p]
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        q0 = _into_range(model, _values(model, args.q0, model.default_q, "--q0"), "--q0",
                         given=_named_values(model, args.q0, "--q0"))
        qd0 = _values(model, args.qdot0, model.default_qdot, "--qdot0")
        passive_forces_report(model, "simulate", apply=not args.no_model_forces)
        tab = simulate(model, args.t_end, q0, qd0, method=args.method, rtol=args.rtol, atol=args.atol,
                       n_output=args.samples, max_steps=args.max_steps, max_seconds=args.max_seconds,
                       external_loads=read_external_loads_option(args), model_forces=not args.no_model_forces,
                       progress=not getattr(args, "quiet", False))
        warn_range_exits(model, tab, applied=() if args.no_model_forces else
                         {f.name for f in passive_path_forces_from_model(model)})
        write_motion(tmps[0], as_opensim_states(model, tab), name=f"{model.name} passive simulation",
                     protect=[args.model])  # OpenSim's state labels: a states file
        plotted = args.plot
        if args.plot:  # angles in degrees, as OpenSim users read them (the file keeps radians)
            import numpy as np
            shown = tab.copy()
            angles = [c.name for c in model.coordinates if c.motion_type != "translational"]
            shown[angles] = np.degrees(shown[angles])
            plotted = _plot_table(shown, coordinate_panels(model, {c: c for c in model.coordinate_names},
                                                 ("angle (deg)", "translation (m)")), tmps[1],
                        f"{model.name}: forward simulation under gravity", output=outs[1])
    print(f"wrote {out}: {len(tab)} samples over {args.t_end} s ({tab.attrs['nfev']} right-hand sides, {args.method})")
    if plotted:
        print(f"wrote {outs[1]}")
    return 0 if plotted == args.plot else 1


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("simulate", help="forward simulation of the minimal-coordinate ODE under gravity and the model's passive forces")
    s.add_argument("model", help=".osim or .emb.json model")
    add_lenient_option(s)
    s.add_argument("-o", "--output", required=True, help="output .sto states file (q and OpenSim's speeds, under OpenSim's state labels)")
    s.add_argument("--t-end", type=float, default=1.0, help="duration in seconds (default 1)")
    s.add_argument("--q0", action="append", help="initial coordinates NAME=DEGREES (metres for translations)[,...]; "
                                                 "default: the model's defaults")
    s.add_argument("--qdot0", action="append", help="initial coordinate rates NAME=DEG_PER_S (m/s for translations)[,...]; "
                                                    "default: the model's default speeds (0 unless the "
                                                    "file sets default_speed_value; on Ball, Free and "
                                                    "Ellipsoid joints angular velocities, turned into rates)")
    s.add_argument("--method", default="DOP853",
                   help="solve_ivp method (default DOP853), or RK45-jit / BDF-jit: the whole integration compiled "
                        "(contact, springs, bushings, limits, PathSprings, Ligaments and external loads in the kernel; "
                        "several times faster "
                        "on contact models; not for springs or limits on coupled or Ball angles or a PrescribedForce "
                        "whose function the kernels do not evaluate)")
    s.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance of the integrator")
    s.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance of the integrator")
    s.add_argument("--samples", type=int, default=201, help="output samples (>= 2)")
    s.add_argument("--max-steps", type=int, default=1_000_000,
                   help="stop after this many right-hand-side evaluations (default 1,000,000)")
    s.add_argument("--max-seconds", type=float, default=600.0, help="stop after this wall time (default 600 s)")
    s.add_argument("--external-loads", metavar="LOADS.xml",
                   help="OpenSim ExternalLoads file (its <datafile> beside it): forces from outside the model applied "
                        "along the simulation (from t = 0; the data must cover --t-end)")
    s.add_argument("--no-model-forces", action="store_true",
                   help="leave out the model's passive forces (contact, springs, bushings, prescribed forces, "
                        "CoordinateLimitForces, PathSprings, Ligaments, Blankevoort1991Ligaments), which are applied "
                        "by default as OpenSim applies them")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_simulate)
