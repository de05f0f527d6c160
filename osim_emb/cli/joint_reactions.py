"""``osim-emb joint-reactions``: the loads the joints transmit along a motion with the muscle forces given (OpenSim's
JointReaction analysis with a forces file; :mod:`osim_emb.simulation.joint_reactions`)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

from osim_emb.cli.common import output_prefix, written_figure, _load_any, add_exclude_forces_option, add_external_loads_option, add_lenient_option, \
    add_time_range_option, analysis_frames, add_times_option, excluded_forces, fill_from_analyze_tool, force_elements_applied, \
    limit_forces_applied, muscles_applied, path_forces_applied, read_external_loads_option, read_motion_option

log = logging.getLogger("osim_emb")


def output_path(prefix: str, analysis: str = "JointReaction") -> Path:
    """OpenSim's file name: PREFIX_JointReaction_ReactionLoads.sto."""
    p = Path(prefix)
    return p.with_name(f"{p.name}_{analysis}_ReactionLoads.sto")


def _from_setup(args: argparse.Namespace) -> str:
    """Fill what the command line leaves unset from ``--setup`` (an AnalyzeTool file with a JointReaction analysis);
    returns the analysis name (OpenSim's infix of the output file)."""
    if not args.setup:
        if not (args.model and args.motion and args.output):
            raise ValueError("give MODEL, MOTION and -o PREFIX, or an OpenSim AnalyzeTool setup file with --setup")
        return "JointReaction"
    from osim_emb.io.tool_setup import read_joint_reaction_setup
    setup = read_joint_reaction_setup(args.setup)
    fill_from_analyze_tool(args, setup, external_loads=setup.external_loads, forces=setup.forces_file)
    if not args.actuators:
        args.actuators = [str(f) for f in setup.actuator_files]
    for name, values in (("joints", setup.joints), ("on", setup.on), ("expressed_in", setup.expressed_in)):
        if getattr(args, name) is None and values:
            setattr(args, name, list(values))
    return setup.analysis_name


def _forces_at(path: str, time: np.ndarray) -> dict:
    """The forces file's columns at the motion's times, linearly interpolated (OpenSim's Storage::getDataAtTime)."""
    from osim_emb.io.motion import read_motion
    table, _ = read_motion(path)
    if "time" not in table.columns:
        raise ValueError(f"{path}: no time column")
    t = table["time"].to_numpy(dtype=float)
    span = 1e-9 * max(1.0, abs(t[-1]))
    step = float(np.median(np.diff(t))) if len(t) > 1 else 0.0  # OpenSim's forces lie on its resampled grid
    if time[0] < t[0] - span - step or time[-1] > t[-1] + span + step:
        raise ValueError(f"{path}: the forces cover t = {t[0]:g} to {t[-1]:g} s, the motion's frames "
                         f"{time[0]:g} to {time[-1]:g} s (more than one of the file's {step:g} s steps beyond it); "
                         "narrow --time-range")
    outside = (time < t[0] - span) | (time > t[-1] + span)
    if outside.any():
        log.warning("%s: %d frame(s) at most one step (%g s) beyond the forces' times %g to %g s: the forces there are "
                    "extrapolated linearly from the end rows, as OpenSim's Storage::getDataAtTime does", path,
                    int(outside.sum()), step, t[0], t[-1])

    def at(values):
        inside = np.interp(time, t, values)
        if len(t) > 1:
            inside = np.where(time < t[0], values[0] + (time - t[0]) * (values[1] - values[0]) / (t[1] - t[0]), inside)
            inside = np.where(time > t[-1], values[-1] + (time - t[-1]) * (values[-1] - values[-2]) / (t[-1] - t[-2]),
                              inside)
        return inside
    return {c: at(table[c].to_numpy(dtype=float)) for c in table.columns if c != "time"}


def cmd_joint_reactions(args: argparse.Namespace) -> int:
    from osim_emb.cli.static_optimization import _actuators
    from osim_emb.io.motion import write_motion
    from osim_emb.io.muscle_xml import PASSIVE_PATH_FORCE_TYPES
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.joint_reactions import joint_reactions_of_motion, reaction_requests
    analysis = _from_setup(args)
    if args.lowpass is not None and args.lowpass <= 0:
        raise ValueError("--lowpass must be > 0 Hz")
    out = output_path(output_prefix(args.output, f"PREFIX_{analysis}_ReactionLoads.sto"), analysis)
    outs = [out] + ([out.with_suffix(".png")] if args.plot else [])
    inputs = [p for p in (args.model, args.motion, args.setup, args.external_loads, args.forces,
                          *(args.actuators or [])) if p]
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        excluded = excluded_forces(model, args.exclude_forces, "joint-reactions")
        dropped = {m.name for m in model.muscles}
        model = muscles_applied(model, "joint-reactions", excluded)
        dropped -= {m.name for m in model.muscles}
        requests = reaction_requests(model, args.joints, args.on or ["child"], args.expressed_in or ["ground"])
        actuators = [a for a in _actuators(model, args.actuators or [], None, args.model_actuators)
                     if a.name not in excluded]
        time, q, qd = read_motion_option(args, model)
        time, q, qd, _ = analysis_frames(args, time, q, qd)
        with_force = [m.name for m in model.muscles if m.parameters is not None]
        if args.forces is None:
            if with_force or actuators:
                raise ValueError(f"{args.model} has {len(with_force)} muscle(s) and {len(actuators)} actuator(s): give "
                                 "their forces with --forces FORCES.sto (e.g. static-optimization's "
                                 "PREFIX_StaticOptimization_force.sto)")
            forces = {}
        else:
            forces = _forces_at(args.forces, time)
            unused = sorted(set(forces) & (dropped | excluded))
            if unused:
                log.info("joint-reactions: the forces of %s in %s are not applied (left out above)",
                         ", ".join(unused[:8]) + (", ..." if len(unused) > 8 else ""), args.forces)
                forces = {k: v for k, v in forces.items() if k not in unused}
        elements = force_elements_applied(model, "joint-reactions", excluded)
        # the actuators, the force elements and (warned with their reasons) the elements that cannot be evaluated
        applied = ({a.name for a in actuators} | {law.name for law in elements.laws}
                   | {u.name for u in elements.unapplied} | excluded)
        others = [(n, k) for n, k in model.extras.get("forces", []) if k != "CoordinateLimitForce" and n not in applied]
        others += [(m.name, m.type_name) for m in model.muscles
                   if m.parameters is None and m.type_name not in PASSIVE_PATH_FORCE_TYPES]
        if others:
            log.warning("joint-reactions leaves out the model's %d force(s) other than muscles, the given actuators, "
                        "coordinate limits, path springs, ligaments, contacts, bushings, springs and prescribed "
                        "forces (OpenSim's JointReaction would apply them): %s", len(others),
                        ", ".join(n for n, _ in others[:12]) + (" ..." if len(others) > 12 else ""))
        function_based = [m.name for m in model.muscles if m.parameters is not None and not m.points]
        if function_based:
            log.info("joint-reactions: %d FunctionBasedPath muscle(s) act through generalized forces only, as OpenSim "
                     "applies them: %s", len(function_based), ", ".join(function_based[:8]))
        limits = limit_forces_applied(model, "joint-reactions", excluded)
        springs = path_forces_applied(model, "joint-reactions", excluded)
        result = joint_reactions_of_motion(model, time, q, qd, forces, requests=requests, actuators=actuators,
                                           external_loads=read_external_loads_option(args), limit_forces=limits,
                                           path_forces=springs, force_elements=elements,
                                           progress=not getattr(args, "quiet", False))
        loads = result.table()
        write_motion(tmps[0], loads, name=f"{model.name} joint reaction loads (N, N m, m)", protect=inputs)
        plotted = args.plot
        if args.plot:
            plotted = written_figure(lambda: _plot_reactions(loads, requests, result, tmps[1],
                                                             f"{model.name}: joint reaction forces along "
                                                             f"{Path(args.motion).name}"), outs[1])
    magnitudes = np.linalg.norm(result.loads[:, :, 0:3], axis=2).max(axis=0)
    k = int(np.argmax(magnitudes)) if len(magnitudes) else 0
    plot = f" (and the plot {outs[1]})" if plotted else ""
    print(f"wrote {out}{plot}: {len(time)} frames, {len(requests)} joint reaction(s)"
          + (f"; largest force {magnitudes[k]:.4g} N ({requests[k].joint} on its {requests[k].on})"
             if len(magnitudes) else ""))
    return 0 if plotted == args.plot else 1


def _plot_reactions(loads, requests, result, path, title):
    """The magnitude of each reported reaction force against time, in the project's figure style."""
    from osim_emb.report import figure_style as fs
    fig, axes = fs.figure("double", height=3.4)
    ax = axes[0, 0]
    for i, req in enumerate(requests):
        ax.plot(loads["time"], np.linalg.norm(result.loads[:, i, 0:3], axis=1), label=f"{req.joint} (on {req.on})",
                **fs.cue(i))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("reaction force magnitude (N)")
    ax.set_title(title, loc="left")
    fs.legend_below(fig)
    path = Path(path)
    fs.save(fig, path.with_suffix(""), formats=[path.suffix.lstrip(".") or "png"])


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("joint-reactions",
                       help="joint reaction loads along a motion with the muscle forces given (OpenSim's JointReaction)",
                       description="The force and moment each joint transmits, as OpenSim's JointReaction analysis "
                                   "with a forces file reports them: the accelerations of forward dynamics under the "
                                   "given muscle and actuator forces, gravity, external loads and the model's "
                                   "passive forces; the load on the child at the joint's child frame (or on the "
                                   "parent at its parent frame), expressed in a chosen frame.")
    s.add_argument("model", nargs="?", help=".osim model (or from --setup)")
    add_lenient_option(s)
    s.add_argument("motion", nargs="?",
                   help=".mot/.sto with the generalized coordinates (degrees if inDegrees=yes), or a states file "
                        "(or from --setup)")
    s.add_argument("-o", "--output",
                   help="output prefix: writes PREFIX_JointReaction_ReactionLoads.sto (or the setup's "
                        "results_directory/NAME_ANALYSIS_ReactionLoads.sto)")
    s.add_argument("--forces", metavar="FORCES.sto",
                   help="every muscle's and actuator's force along the motion (newtons, or N m), e.g. "
                        "static-optimization's PREFIX_StaticOptimization_force.sto: OpenSim's forces_file")
    s.add_argument("--setup", metavar="SETUP.xml",
                   help="an OpenSim AnalyzeTool setup file with a JointReaction analysis: its model, states or "
                        "coordinates file, force_set_files, external loads, low-pass cutoff, time range, forces_file, "
                        "joint_names, apply_on_bodies, express_in_frame and output names (the command line overrides "
                        "each)")
    s.add_argument("--joints", nargs="+", metavar="JOINT",
                   help="the joints to report (default: all, OpenSim's ALL)")
    s.add_argument("--on", nargs="+", metavar="SIDE",
                   help="'child' (default) or 'parent': the body the reported load acts on; one for all joints or one "
                        "per joint")
    s.add_argument("--in", dest="expressed_in", nargs="+", metavar="FRAME",
                   help="the frame the loads are expressed in: 'ground' (default), 'child', 'parent', a body or a "
                        "joint's offset frame; one for all joints or one per joint")
    s.add_argument("--actuators", action="append", metavar="ACTUATORS.xml",
                   help="the OpenSim actuator files whose actuators the forces file names (repeatable)")
    s.add_argument("--model-actuators", action="store_true",
                   help="the forces file also names the model's own CoordinateActuators, PointActuators and "
                        "TorqueActuators")
    add_exclude_forces_option(s, "muscles and actuators whose forces are not applied (given or not), and the "
                                 "coordinate limits, path springs, ligaments, contacts, bushings, springs and "
                                 "prescribed forces applied with the motion")
    add_external_loads_option(s)
    s.add_argument("--lowpass", type=float, metavar="HZ",
                   help="OpenSim's low-pass filter of the coordinates first (its AnalyzeTool's "
                        "lowpass_cutoff_frequency_for_coordinates)")
    add_time_range_option(s, "report the frames within [T0, T1] s (the whole motion is splined, as OpenSim does)")
    add_times_option(s)
    s.add_argument("--plot", action="store_true", help="also write a figure of the reaction forces, ....png")
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.set_defaults(func=cmd_joint_reactions)
