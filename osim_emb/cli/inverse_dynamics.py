"""``osim-emb inverse-dynamics``: generalized forces of a motion by M q'' + N q' - G
(:func:`osim_emb.simulation.motions.inverse_dynamics_of_motion`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import _load_any, _plot_path, _plot_table, outside_range_hint, \
    add_external_loads_option, add_lenient_option, add_motion_differentiation_options, motion_differentiation, \
    note_coupled_generalized_forces, read_external_loads_option, warn_unapplied_forces


def cmd_inverse_dynamics(args: argparse.Namespace) -> int:
    from osim_emb.io.motion import coordinates_from_motion, read_motion, write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.motions import inverse_dynamics_of_motion
    differentiation = motion_differentiation(args)
    out = Path(args.output)
    outs = [out] + ([_plot_path(out)] if args.plot else [])
    with atomic_files(outs, overwrite=args.overwrite, inputs=[args.model, args.motion]) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        table, header = read_motion(args.motion)
        with outside_range_hint():
            time, q, qd = coordinates_from_motion(model, table, header, outside=args.outside_range)
        warn_unapplied_forces(model, "inverse-dynamics")
        note_coupled_generalized_forces(model, "inverse-dynamics")
        tau = inverse_dynamics_of_motion(model, time, q, qd, **differentiation,
                                         external_loads=read_external_loads_option(args))
        write_motion(tmps[0], tau, name=f"{model.name} inverse dynamics", protect=[args.model, args.motion])
        if args.plot:
            _plot_table(tau, [c for c in tau.columns if c != "time"], "generalized force (N m, N)", tmps[1],
                        f"{model.name}: inverse dynamics of {Path(args.motion).name}")
    print(f"wrote {out}: generalized forces at {len(tau)} frames")
    if args.plot:
        print(f"wrote {outs[1]}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("inverse-dynamics", help="generalized forces of a motion (.mot/.sto) by M q'' + N q' - G")
    s.add_argument("model", help=".osim or .emb.json model")
    add_lenient_option(s)
    s.add_argument("motion", help=".mot/.sto with the generalized coordinates (degrees if inDegrees=yes)")
    s.add_argument("-o", "--output", required=True, help="output .sto file")
    add_external_loads_option(s)
    add_motion_differentiation_options(s)
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_inverse_dynamics)
