"""``osim-emb body-kinematics MODEL MOTION -o PREFIX``: the bodies' centres of mass, orientations, velocities and
accelerations along a motion, as OpenSim's BodyKinematics analysis writes them
(:func:`osim_emb.simulation.body_kinematics.body_kinematics_of_motion`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import output_prefix, _csv, _load_any, add_lenient_option, add_time_range_option, analysis_frames, add_times_option, \
    fill_from_analyze_tool, read_motion_option


def output_paths(prefix: str, local: bool, analysis: str = "BodyKinematics") -> dict[str, Path]:
    """OpenSim's names: PREFIX_BodyKinematics_pos_global.sto, ..._vel_global (or _bodyLocal), ..._acc_global."""
    frame = "bodyLocal" if local else "global"
    return {"pos": Path(f"{prefix}_{analysis}_pos_global.sto"), "vel": Path(f"{prefix}_{analysis}_vel_{frame}.sto"),
            "acc": Path(f"{prefix}_{analysis}_acc_{frame}.sto")}


def _from_setup(args: argparse.Namespace) -> str:
    """Fill what the command line leaves unset from ``--setup`` (an AnalyzeTool file with a BodyKinematics
    analysis); returns the analysis name (OpenSim's infix of the output files)."""
    if not args.setup:
        if not (args.model and args.motion and args.output):
            raise ValueError("give MODEL, MOTION and -o PREFIX, or an OpenSim AnalyzeTool setup file with --setup")
        return "BodyKinematics"
    from osim_emb.io.tool_setup import read_body_kinematics_setup
    setup = read_body_kinematics_setup(args.setup)
    fill_from_analyze_tool(args, setup)
    if args.bodies is None:
        args.bodies = ",".join(setup.bodies)
    args.local = args.local or setup.local
    args.radians = args.radians or not setup.in_degrees
    return setup.analysis_name


def cmd_body_kinematics(args: argparse.Namespace) -> int:
    from osim_emb.io.motion import write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.body_kinematics import body_kinematics_of_motion
    analysis = _from_setup(args)
    if args.lowpass is not None and args.lowpass <= 0:
        raise ValueError("--lowpass must be > 0 Hz")
    outs = output_paths(output_prefix(args.output, f"PREFIX_{analysis}_pos_global.sto"), args.local, analysis)
    inputs = [p for p in (args.model, args.motion, args.setup) if p]
    with atomic_files(list(outs.values()), overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        time, q, qd = read_motion_option(args, model)
        time, q, qd, qdd = analysis_frames(args, time, q, qd)
        tables = body_kinematics_of_motion(model, time, q, qd, qdd,
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
    s.add_argument("model", nargs="?", help=".osim or .emb.json model (or from --setup)")
    add_lenient_option(s)
    s.add_argument("motion", nargs="?", help=".mot/.sto coordinates (degrees if inDegrees=yes) or an OpenSim states "
                                             "file (or from --setup)")
    s.add_argument("-o", "--output", metavar="PREFIX",
                   help="writes PREFIX_BodyKinematics_pos_global.sto, _vel_global.sto and _acc_global.sto (or from "
                        "--setup: its results_directory/NAME)")
    s.add_argument("--setup", metavar="SETUP.xml",
                   help="an OpenSim AnalyzeTool setup file with a BodyKinematics analysis: its model, coordinates or "
                        "states, low-pass cutoff, time range, bodies, frame and units, paths relative to it (the "
                        "command line overrides each)")
    s.add_argument("--bodies", metavar="NAMES", help="comma-separated bodies, 'center_of_mass' for the whole model's "
                                                     "(default: all bodies and the centre of mass)")
    s.add_argument("--local", action="store_true",
                   help="velocities and accelerations in each body's frame (files _vel_bodyLocal, _acc_bodyLocal)")
    s.add_argument("--radians", action="store_true", help="angles and their rates in radians (default degrees)")
    s.add_argument("--lowpass", type=float, metavar="HZ",
                   help="OpenSim's low-pass filter of the coordinates first (its lowpass_cutoff_frequency_for_coordinates)")
    add_time_range_option(s, "report the frames within [T0, T1] s (the whole motion is splined first, as OpenSim does)")
    add_times_option(s)
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.set_defaults(func=cmd_body_kinematics)
