"""``osim-emb inverse-dynamics``: generalized forces of a motion by M q'' + N q' - G
(:func:`osim_emb.simulation.motions.inverse_dynamics_of_motion`)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


from osim_emb.cli.common import table_output, _load_any, _plot_path, _plot_table, coordinate_panels, add_exclude_forces_option, \
    add_external_loads_option, add_lenient_option, add_motion_differentiation_options, add_time_range_option, \
    excluded_forces, fill_from_setup, force_elements_applied, limit_forces_applied, motion_differentiation, \
    note_coupled_generalized_forces, outside_range_hint, path_forces_applied, read_external_loads_option, \
    add_times_option, time_range_frames, warn_unapplied_forces

log = logging.getLogger("osim_emb")


def _from_setup(args: argparse.Namespace) -> None:
    """Fill what the command line leaves unset from ``--setup`` (an OpenSim InverseDynamicsTool file)."""
    if not args.setup:
        if not (args.model and args.motion and args.output):
            raise ValueError("give MODEL, MOTION and -o OUTPUT, or an OpenSim setup file with --setup")
        return
    from osim_emb.io.tool_setup import read_inverse_dynamics_setup
    setup = read_inverse_dynamics_setup(args.setup)
    fill_from_setup(args, {"model": setup.model, "motion": setup.coordinates, "output": setup.output,
                           "external_loads": setup.external_loads},
                    {"model": "model_file", "motion": "coordinates_file", "output": "output_gen_force_file"},
                    setup.time_range)
    if args.lowpass is None and args.smoothing is None:
        args.lowpass = setup.lowpass_hz
    if args.exclude_forces is None:
        args.exclude_forces = [f for f in setup.excluded_forces if f.upper() != "MUSCLES"]
        args.from_command_line_exclusion = False
    args.setup_excludes = tuple(f for f in setup.excluded_forces if f.upper() in ("MUSCLES", "ACTUATORS", "ALL"))
    if not any(f.upper() in ("MUSCLES", "ACTUATORS", "ALL") for f in setup.excluded_forces):
        log.warning("%s: forces_to_exclude does not list Muscles, so OpenSim's tool would apply the muscles' forces; "
                    "inverse-dynamics applies no muscle force", args.setup)


def cmd_inverse_dynamics(args: argparse.Namespace) -> int:
    from osim_emb.core.speeds import angular_velocity_joints, forces_about_speeds
    from osim_emb.io.muscle_xml import PASSIVE_PATH_FORCE_TYPES
    from osim_emb.io.motion import coordinates_from_motion, read_motion, write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.motions import inverse_dynamics_of_motion, motion_derivatives
    _from_setup(args)
    differentiation = motion_differentiation(args)
    out = table_output(args.output)
    outs = [out] + ([_plot_path(out)] if args.plot else [])
    inputs = [p for p in (args.model, args.motion, args.setup, args.external_loads) if p]
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        table, header = read_motion(args.motion)
        with outside_range_hint():
            time, q, qd = coordinates_from_motion(model, table, header, outside=args.outside_range)
        excluded = excluded_forces(model, args.exclude_forces, "inverse-dynamics",
                                   "--exclude-forces" if args.from_command_line_exclusion else
                                   f"{args.setup}: forces_to_exclude")
        elements = force_elements_applied(model, "inverse-dynamics", excluded)
        not_wanted = excluded | excluded_forces(model, getattr(args, "setup_excludes", ()), "inverse-dynamics")
        warn_unapplied_forces(model, "inverse-dynamics", applied=("CoordinateLimitForce", *PASSIVE_PATH_FORCE_TYPES),
                              applied_names={law.name for law in elements.laws} | {u.name for u in elements.unapplied},
                              excluded=not_wanted)  # muscles excluded by the setup or the user are not said
        note_coupled_generalized_forces(model, "inverse-dynamics")
        at_opensim_rows = qd is None and args.times == "opensim"
        if at_opensim_rows:  # the rows OpenSim's InverseDynamicsTool reports (a coordinates file)
            from osim_emb.simulation.motions import analyze_tool_rows
            if args.smoothing is not None:
                raise ValueError("--times opensim: OpenSim's tool has no smoothing spline; use --lowpass or neither")
            t0, t1 = args.time_range if args.time_range is not None else (time[0], time[-1])
            rows = analyze_tool_rows(time, q, args.lowpass, t0, t1)
            q, qd, qdd = motion_derivatives(time, q, lowpass_hz=args.lowpass, at=rows)
            time = rows
        elif qd is None:  # the whole motion splined (as OpenSim), then the frames in --time-range kept
            q, qd, qdd = motion_derivatives(time, q, **differentiation)
        else:  # speeds in the file (a states file): used, and differentiated once
            if args.lowpass is not None:
                log.warning("%s has speeds: --lowpass filters them before they are differentiated (OpenSim's "
                            "InverseDynamicsTool would filter and differentiate the coordinates instead)", args.motion)
            _, qdd, _ = motion_derivatives(time, qd, **differentiation)
        keep = slice(None) if at_opensim_rows else time_range_frames(args, time)
        tau = inverse_dynamics_of_motion(model, time[keep], q[keep], qd[keep], qdd[keep],
                                         external_loads=read_external_loads_option(args),
                                         limit_forces=limit_forces_applied(model, "inverse-dynamics", excluded),
                                         path_forces=path_forces_applied(model, "inverse-dynamics", excluded),
                                         force_elements=elements)
        spherical = angular_velocity_joints(model)
        if spherical:  # the file is OpenSim's: its generalized forces there are about its speeds
            labels = [c for c in tau.columns if c != "time"]
            tau[labels] = forces_about_speeds(model, q[keep], tau[labels].to_numpy())
            log.info("inverse-dynamics: the moments of %s's rotations are about OpenSim's speeds (the angular "
                     "velocity): torques about the parent frame's axes, as OpenSim's CoordinateActuators apply them",
                     ", ".join(f"{j.type} {j.name!r}" for j in spherical))
        write_motion(tmps[0], tau, name=f"{model.name} inverse dynamics", protect=inputs)
        plotted = args.plot
        if args.plot:
            columns = {c.name: f"{c.name}_{'force' if c.motion_type == 'translational' else 'moment'}"
                       for c in model.coordinates}  # OpenSim's labels: NAME_moment, NAME_force
            plotted = _plot_table(tau, coordinate_panels(model, {k: v for k, v in columns.items() if v in tau.columns},
                                               ("moment (N m)", "force (N)")), tmps[1],
                        f"{model.name}: inverse dynamics of {Path(args.motion).name}",
                        labels={v: k for k, v in columns.items()},  # the coordinate: the axis says moment or force
                        output=outs[1])
    print(f"wrote {out}: generalized forces at {len(tau)} frames")
    if plotted:
        print(f"wrote {outs[1]}")
    return 0 if plotted == args.plot else 1


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("inverse-dynamics", help="generalized forces of a motion (.mot/.sto) by M q'' + N q' - G")
    s.add_argument("model", nargs="?", help=".osim or .emb.json model (or from --setup)")
    add_lenient_option(s)
    s.add_argument("motion", nargs="?",
                   help=".mot/.sto with the generalized coordinates (degrees if inDegrees=yes; or from --setup)")
    s.add_argument("-o", "--output", help="output .sto file (or from --setup)")
    s.add_argument("--setup", metavar="SETUP.xml",
                   help="an OpenSim InverseDynamicsTool setup file: its model, coordinates, external loads, low-pass "
                        "cutoff, time range and output, paths relative to it (the command line overrides each)")
    add_exclude_forces_option(s, "the coordinate limits, path springs, ligaments, contacts, bushings, springs and "
                                 "prescribed forces it applies (it applies no muscle force)")
    s.set_defaults(from_command_line_exclusion=True)
    add_time_range_option(s, "report the frames within [T0, T1] s (the whole motion is splined, as OpenSim does)")
    add_times_option(s)
    add_external_loads_option(s)
    add_motion_differentiation_options(s)
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot")
    s.set_defaults(func=cmd_inverse_dynamics)
