"""``osim-emb body-kinematics MODEL MOTION -o PREFIX``: the bodies' centres of mass, orientations, velocities and
accelerations along a motion, as OpenSim's BodyKinematics analysis writes them
(:func:`osim_emb.simulation.body_kinematics.body_kinematics_of_motion`)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from osim_emb.cli.common import _csv, _load_any, add_lenient_option, outside_range_hint, time_range_frames

log = logging.getLogger("osim_emb")


def output_paths(prefix: str, local: bool) -> dict[str, Path]:
    """OpenSim's names: PREFIX_BodyKinematics_pos_global.sto, ..._vel_global (or _bodyLocal), ..._acc_global."""
    frame = "bodyLocal" if local else "global"
    return {"pos": Path(f"{prefix}_BodyKinematics_pos_global.sto"),
            "vel": Path(f"{prefix}_BodyKinematics_vel_{frame}.sto"),
            "acc": Path(f"{prefix}_BodyKinematics_acc_{frame}.sto")}


def cmd_body_kinematics(args: argparse.Namespace) -> int:
    from osim_emb.io.motion import coordinates_from_motion, read_motion, write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.body_kinematics import body_kinematics_of_motion
    from osim_emb.simulation.motions import analysis_states
    if args.lowpass is not None and args.lowpass <= 0:
        raise ValueError("--lowpass must be > 0 Hz")
    outs = output_paths(args.output, args.local)
    inputs = [args.model, args.motion]
    with atomic_files(list(outs.values()), overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        table, header = read_motion(args.motion)
        with outside_range_hint():
            time, q, qd = coordinates_from_motion(model, table, header, outside=args.outside_range)
        if qd is not None and args.lowpass is not None:
            log.warning("%s has speeds: they are used as they are and --lowpass is not applied (OpenSim's AnalyzeTool "
                        "filters coordinates files only)", args.motion)
        q, qd, qdd = analysis_states(time, q, qd, lowpass_hz=args.lowpass)
        keep = time_range_frames(args, time)
        tables = body_kinematics_of_motion(model, time[keep], q[keep], qd[keep], qdd[keep],
                                           bodies=_csv(args.bodies) or ["all"], local=args.local,
                                           in_degrees=not args.radians)
        for (key, table_), tmp in zip(tables.items(), tmps):
            write_motion(tmp, table_, name=f"{model.name} body kinematics ({key})", in_degrees=not args.radians,
                         protect=inputs)
    n = (len(tables["pos"].columns) - 1) // 6
    print(f"wrote {', '.join(str(p) for p in outs.values())}: {n} bodies"
          f"{' and the centre of mass' if any(c.startswith('center_of_mass') for c in tables['pos']) else ''} at "
          f"{len(tables['pos'])} frames (accelerations of the motion: q'' from its spline, not OpenSim's forward "
          "dynamics, docs/kinematics.md)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("body-kinematics", help="centres of mass, orientations, velocities and accelerations of the "
                                               "bodies along a motion (OpenSim's BodyKinematics)")
    s.add_argument("model", help=".osim or .emb.json model")
    add_lenient_option(s)
    s.add_argument("motion", help=".mot/.sto coordinates (degrees if inDegrees=yes) or an OpenSim states file")
    s.add_argument("-o", "--output", required=True, metavar="PREFIX",
                   help="writes PREFIX_BodyKinematics_pos_global.sto, _vel_global.sto and _acc_global.sto")
    s.add_argument("--bodies", metavar="NAMES", help="comma-separated bodies, 'center_of_mass' for the whole model's "
                                                     "(default: all bodies and the centre of mass)")
    s.add_argument("--local", action="store_true",
                   help="velocities and accelerations in each body's frame (files _vel_bodyLocal, _acc_bodyLocal)")
    s.add_argument("--radians", action="store_true", help="angles and their rates in radians (default degrees)")
    s.add_argument("--lowpass", type=float, metavar="HZ",
                   help="OpenSim's low-pass filter of the coordinates first (its lowpass_cutoff_frequency_for_coordinates)")
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"),
                   help="report the frames within [T0, T1] s (the whole motion is splined first, as OpenSim does)")
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.set_defaults(func=cmd_body_kinematics)
