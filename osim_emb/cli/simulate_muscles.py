"""``osim-emb simulate-muscles``: muscle-driven forward simulation (osim_emb.simulation.muscle_driven)."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import table_output, add_lenient_option


def _named_specs(items: list[str] | None, what: str) -> dict:
    from osim_emb.simulation.muscle_driven import ExcitationSpec
    out = {}
    for item in items or []:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--{what} expects NAME=SPEC (SPEC: a number, step:T0:T1:U0:U1 or "
                             f"sine:AMPLITUDE:OMEGA:PHASE:OFFSET), got {item!r}")
        out[name.strip()] = ExcitationSpec.parse(spec)
    return out


def cmd_simulate_muscles(args: argparse.Namespace) -> int:
    import numpy as np
    from osim_emb.cli.common import _into_range, _load_any, _named_values, _values, read_external_loads_option
    from osim_emb.cli.simulate import warn_range_exits
    from osim_emb.io.motion import as_opensim_states, write_motion
    from osim_emb.io.outputs import atomic_files, check_output_file
    from osim_emb.simulation.muscle_driven import simulate_muscles
    if not (np.isfinite(args.t_end) and args.t_end > 0):
        raise ValueError(f"--t-end must be a positive number of seconds, got {args.t_end}")
    if args.samples < 2:
        raise ValueError(f"--samples must be at least 2, got {args.samples}")
    if not (args.rtol > 0 and args.atol > 0):
        raise ValueError(f"--rtol and --atol must be positive, got {args.rtol} and {args.atol}")
    table_output(args.output)
    inputs = [p for p in (args.model, args.external_loads) if p]
    check_output_file(args.output, overwrite=args.overwrite, inputs=inputs)
    model = _load_any(args.model, strict=not args.lenient)
    q0 = _values(model, args.q0, model.default_q, "--q0")
    _into_range(model, q0, "--q0", given=_named_values(model, args.q0, "--q0"))  # a check: q0 is used as given
    qdot0 = _values(model, args.qdot0, model.default_qdot, "--qdot0")
    exc = _named_specs(args.excitation, "excitation")
    ctrl = _named_specs(args.control, "control")
    loads = read_external_loads_option(args)
    tab = simulate_muscles(model, args.t_end, exc, controls=ctrl, q0=q0, qdot0=qdot0,
                           default_excitation=args.default_excitation, method=args.method, rtol=args.rtol,
                           atol=args.atol, n_output=args.samples, progress=not args.quiet, external_loads=loads)
    warn_range_exits(model, tab)
    out = Path(args.output)
    with atomic_files([out], overwrite=args.overwrite, inputs=inputs) as (tmp,):
        write_motion(tmp, as_opensim_states(model, tab), name=f"{model.name} muscle-driven simulation",
                     protect=inputs)  # OpenSim's state labels: a states file
    held = "activations, fibre lengths and tendon forces" if any(c.endswith("_activation") for c in tab.columns) \
        else "no muscle states (the model has no muscle to simulate)"
    print(f"wrote {out}: {len(tab)} samples over {args.t_end} s of q, q-dot, {held} ({tab.attrs['nfev']} right-hand "
          f"sides, {tab.attrs['method']})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("simulate-muscles", help="muscle-driven forward simulation (Thelen2003, Millard2012 and "
                                                "Schutte1993 with activation and compliant tendons, RigidTendonMuscle, "
                                                "path actuators and springs, as OpenSim's Manager)")
    s.add_argument("model", help=".osim model")
    add_lenient_option(s)
    s.add_argument("-o", "--output", required=True, help="output .sto states file (OpenSim's state labels)")
    s.add_argument("--excitation", action="append", metavar="MUSCLE=SPEC",
                   help="excitation of a muscle: a number, step:T0:T1:U0:U1 (smooth step) or "
                        "sine:AMPLITUDE:OMEGA:PHASE:OFFSET; repeatable")
    s.add_argument("--default-excitation", type=float, default=0.0,
                   help="excitation of the muscles not named (default 0, as OpenSim without a controller)")
    s.add_argument("--control", action="append", metavar="ACTUATOR=SPEC",
                   help="control of a CoordinateActuator or PathActuator (same SPEC forms; default 0: no force)")
    s.add_argument("--t-end", type=float, default=1.0, help="duration in seconds (default 1)")
    s.add_argument("--q0", action="append", help="initial coordinates NAME=DEGREES (metres for translations)[,...]; "
                                                 "default: the model's defaults")
    s.add_argument("--qdot0", action="append", help="initial coordinate rates NAME=DEG_PER_S (m/s for translations)[,...]; "
                                                    "default: the model's default speeds (0 unless the "
                                                    "file sets default_speed_value; on Ball, Free and "
                                                    "Ellipsoid joints angular velocities, turned into rates)")
    s.add_argument("--method", default="auto",
                   help="auto (default): the Dormand-Prince pair compiled with the right-hand side (RK45-jit) where "
                        "the model allows it, else SciPy's RK45; or RK45-jit; or BDF-jit (compiled variable-order "
                        "BDF with the structured Jacobian: stiff models, many muscles, e.g. MoBL, 5-10 times fewer "
                        "right-hand sides); or any solve_ivp method (RK45, DOP853, BDF, ...)")
    s.add_argument("--external-loads", metavar="LOADS.xml",
                   help="OpenSim ExternalLoads file (its <datafile> beside it) applied along the simulation (from t = "
                        "0; the data must cover --t-end); runs SciPy's RK45 (the compiled integrators do not take "
                        "them)")
    s.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance of the integrator")
    s.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance of the integrator")
    s.add_argument("--samples", type=int, default=101, help="output samples")
    s.set_defaults(func=cmd_simulate_muscles)
