"""``osim-emb static-optimization``: muscle activations and forces along a motion, min Σ a² subject to
R(q) F(a) = τ with τ the inverse dynamics of the motion (OpenSim's StaticOptimization problem;
:func:`osim_emb.simulation.motions.muscle_force_sharing`)."""

from __future__ import annotations

import argparse
import math
import logging
from pathlib import Path

import numpy as np

from osim_emb.cli.common import output_prefix, use_step_interval, _load_any, _plot_table, _positive, add_exclude_forces_option, \
    add_external_loads_option, add_lenient_option, add_motion_differentiation_options, add_time_range_option, \
    analysis_frames, add_times_option, excluded_forces, fill_from_setup, force_elements_applied, limit_forces_applied, \
    motion_differentiation, muscles_applied, path_forces_applied, read_external_loads_option, read_motion_option, \
    time_range_frames

log = logging.getLogger("osim_emb")


def _worst_frame(err) -> int:
    """The infeasible frame with the largest unmet generalized force."""
    return int(err.frames[np.argmax(np.abs(err.min_residual).max(axis=1))])


def output_paths(prefix: str) -> tuple[Path, Path]:
    """OpenSim's file names for the activations and forces: PREFIX_StaticOptimization_activation.sto, ..._force.sto."""
    p = Path(prefix)
    return (p.with_name(p.name + "_StaticOptimization_activation.sto"),
            p.with_name(p.name + "_StaticOptimization_force.sto"))


def reserve_forces(model, per_coordinate: list[str], everywhere: float | None) -> np.ndarray | None:
    """Optimal forces of the reserve actuators, (n_q,) with 0 where a coordinate has none; None without any."""
    if everywhere is None and not per_coordinate:
        return None
    out = np.full(model.n_q, 0.0 if everywhere is None else float(everywhere))
    for item in per_coordinate:
        name, sep, value = item.partition("=")
        if not sep or name not in model.coordinate_names:
            raise ValueError(f"--reserve {item!r}: expected COORDINATE=OPTIMAL_FORCE with a generalized coordinate of "
                             f"{model.name!r} ({', '.join(model.coordinate_names)})")
        try:
            out[model.coordinate_index(name)] = float(value)
        except ValueError:
            raise ValueError(f"--reserve {item!r}: the optimal force must be a number (N m or N)") from None
    if np.any(~np.isfinite(out)) or np.any(out < 0):
        raise ValueError("reserve optimal forces must be finite and >= 0 (N m or N per unit control)")
    return out


def _from_setup(args: argparse.Namespace) -> None:
    """Fill what the command line leaves unset from ``--setup`` (an OpenSim AnalyzeTool file with a
    StaticOptimization analysis); refuse the settings the package cannot reproduce."""
    if not args.setup:
        if not (args.model and args.motion and args.output):
            raise ValueError("give MODEL, MOTION and -o PREFIX, or an OpenSim AnalyzeTool setup file with --setup")
        return
    from osim_emb.io.tool_setup import read_static_optimization_setup
    setup = read_static_optimization_setup(args.setup)
    if setup.unsupported:
        raise ValueError(f"{args.setup}: the package cannot reproduce {'; '.join(setup.unsupported)}")
    if setup.speeds is not None and setup.states is None:
        raise ValueError(f"{args.setup}: a speeds_file is not read (give a states file, or leave the speeds to the "
                         "coordinates' spline)")
    motion = setup.states or setup.coordinates
    if not args.output and setup.name:
        args.output = str(setup.results_directory / setup.name)
    fill_from_setup(args, {"model": setup.model, "motion": motion, "external_loads": setup.external_loads},
                    {"model": "model_file", "motion": "states_file or coordinates_file",
                     "output": "the tool's name (the output prefix)"}, setup.time_range)
    if not args.actuators and setup.actuator_files:
        args.actuators = [str(f) for f in setup.actuator_files]
    if setup.use_model_force_set:
        args.model_actuators = True
    use_step_interval(args, setup)
    if args.lowpass is None and args.smoothing is None and setup.states is None:
        args.lowpass = setup.lowpass_hz
    if not args.no_passive:
        log.info("%s: OpenSim's StaticOptimization leaves the passive fibre forces out; so does the command with "
                 "--setup", args.setup)
        args.no_passive = True


def cmd_static_optimization(args: argparse.Namespace) -> int:
    from osim_emb.io.motion import write_control_set, write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.motions import inverse_dynamics_of_motion, motion_derivatives, muscle_force_sharing
    from osim_emb.simulation.static_optimization import InfeasibleError
    _from_setup(args)
    motion_differentiation(args)  # the options checked
    if args.reserves is not None:
        _positive("--reserves", args.reserves)
    outs = list(output_paths(output_prefix(args.output, "PREFIX_StaticOptimization_activation.sto")))
    outs.append(outs[0].with_name(outs[0].name.replace("_activation.sto", "_controls.xml")))  # as OpenSim prints it
    if args.plot:
        outs.append(outs[0].with_suffix(".png"))
    inputs = [p for p in (args.model, args.motion, args.setup, args.external_loads, *(args.actuators or [])) if p]
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        excluded = excluded_forces(model, args.exclude_forces, "static-optimization")
        with_model = [m for m in model.muscles if m.parameters is not None]
        model = muscles_applied(model, "static-optimization", excluded)
        if not any(m.parameters is not None for m in model.muscles):
            off = sum(not m.parameters.applies_force for m in with_model)
            why = [f"{off} switched off in the file (appliesForce false)"] if off else []
            why += ["left out by --exclude-forces"] if any(m.name in excluded for m in with_model) else []
            raise ValueError(f"{args.model}: the model has no muscles to share the generalized forces"
                             + (f" ({len(with_model)} with a force model: {'; '.join(why)})" if why else ""))
        reserves = reserve_forces(model, args.reserve or [], args.reserves)
        actuators = [a for a in _actuators(model, args.actuators or [], reserves, args.model_actuators)
                     if a.name not in excluded]
        time, q, qd = read_motion_option(args, model)
        elements = force_elements_applied(model, "static-optimization", excluded)
        # the actuators, the force elements and (warned with their reasons) the elements that cannot be evaluated
        applied = ({a.name for a in actuators} | {law.name for law in elements.laws}
                   | {u.name for u in elements.unapplied} | excluded)
        others = [(n, k) for n, k in model.extras.get("forces", []) if k != "CoordinateLimitForce" and n not in applied]
        if others:  # OpenSim's tool would apply these too
            log.warning("static-optimization leaves out the model's %d force(s) other than muscles, coordinate "
                        "limits, contacts, bushings, springs and prescribed forces: %s", len(others),
                        ", ".join(n for n, _ in others[:12]) + (" ..." if len(others) > 12 else ""))
        limits = limit_forces_applied(model, "static-optimization", excluded)
        springs = path_forces_applied(model, "static-optimization", excluded)
        if args.smoothing is not None:  # q, q̇, q̈ of one smoothing spline
            if qd is None:
                q, qd, qdd = motion_derivatives(time, q, args.smoothing)
            else:
                _, qdd, _ = motion_derivatives(time, qd, args.smoothing)
            keep = time_range_frames(args, time)
            time, q, qd, qdd = time[keep], q[keep], qd[keep], qdd[keep]
        else:  # as OpenSim's AnalyzeTool hands them to its StaticOptimization
            time, q, qd, qdd = analysis_frames(args, time, q, qd)
        tau = inverse_dynamics_of_motion(model, time, q, qd, qdd, external_loads=read_external_loads_option(args),
                                         limit_forces=limits, path_forces=springs, force_elements=elements)
        options = {}
        if actuators:
            from osim_emb.core.dynamics import actuator_generalized_forces
            options["actuators"] = (actuator_generalized_forces(model, q, actuators),
                                    [a.min_control for a in actuators], [a.max_control for a in actuators])
        try:
            forces, activations, res = muscle_force_sharing(model, time, q, qd, tau.drop(columns="time").to_numpy(),
                                                            passive=not args.no_passive, reserves=reserves,
                                                            **options)
        except InfeasibleError as err:
            raise ValueError(f"{args.motion}: {err}".replace("reserves=...", "--reserve / --reserves")
                             + f" (frame {err.frames[0]} is at t = {time[err.frames[0]]:.6g} s, frame "
                               f"{_worst_frame(err)} at t = {time[_worst_frame(err)]:.6g} s)"
                             + ("" if args.no_passive else "; the passive fibre forces are included (OpenSim's "
                                "StaticOptimization leaves them out: --no-passive), and a stretched muscle's "
                                "passive force can make a frame infeasible")) from None
        if reserves is not None:
            for k in np.flatnonzero(reserves > 0):
                name = f"reserve_{model.coordinate_names[k]}"
                activations[name] = res.reserve_controls[:, k]
                forces[name] = res.reserve_forces[:, k]
        for j, act in enumerate(actuators):  # OpenSim's columns: the control, and optimal force x control
            activations[act.name] = res.actuator_controls[:, j]
            forces[act.name] = res.actuator_controls[:, j] * act.optimal_force
        protect = inputs
        write_motion(tmps[0], activations, name=f"{model.name} static optimization activations", protect=protect)
        write_motion(tmps[1], forces, name=f"{model.name} static optimization forces (N)", protect=protect)
        write_control_set(tmps[2], activations, protect=protect)  # the forward tools' controls
        plotted = args.plot
        if args.plot:
            model_muscles = {m.name for m in model.muscles}
            muscles = [c for c in activations.columns if c != "time" and c in model_muscles]
            others = [c for c in activations.columns if c != "time" and c not in model_muscles]  # actuators
            per = max(6, math.ceil((len(muscles) + len(others)) / 20))  # at most ~20 panels
            plotted = _plot_table(activations, [(title, cols[i:i + per], label) for cols, label, title in
                                      ((muscles, "activation", ""), (others, "control", "actuators"))
                                      for i in range(0, len(cols), per)],
                        tmps[3], f"{model.name}: static optimization of {Path(args.motion).name}",
                        labels={c: c.removeprefix("reserve_") for c in others}, output=outs[3])  # the panel's title says it
    muscle_names = [m.name for m in model.muscles if m.name in activations.columns]
    a = activations[muscle_names].to_numpy()
    plot = f" (and the plot {outs[3]})" if plotted else ""
    print(f"wrote {outs[0]}, {outs[1]} and {outs[2]}{plot}: {len(time)} frames, {len(muscle_names)} muscles; activations "
          f"{a.min():.3g} to {a.max():.3g}, largest |τ - R F| {np.abs(res.residual).max():.2g} (N m, N)")
    if not args.no_passive:
        print("passive fibre forces included in the muscle forces; OpenSim's StaticOptimization leaves them out "
              "(--no-passive for its problem)")
    if reserves is not None:
        used = np.abs(res.reserve_forces).max(axis=0)
        k = int(np.argmax(used))
        print(f"largest reserve force: {used[k]:.3g} on {model.coordinate_names[k]}")
    if actuators:
        used = np.abs(res.actuator_controls).max(axis=0)
        k = int(np.argmax(used))
        sources = (["the model"] if args.model_actuators else []) + list(args.actuators or [])
        print(f"{len(actuators)} actuators of {', '.join(sources)}: largest control {used[k]:.3g} "
              f"({actuators[k].name}, {used[k] * actuators[k].optimal_force:.3g} N or N m)")
    return 0 if plotted == args.plot else 1


def _actuators(model, files: list[str], reserves, from_model: bool = False) -> list:
    """The actuators of the model (``from_model``) and of ``--actuators`` files (OpenSim ForceSets), their names
    checked against the muscles, the reserves and each other; disabled ones named as left out."""
    from osim_emb.io.force_set import model_actuators, read_actuators
    out, taken = [], {m.name for m in model.muscles}
    if reserves is not None:
        taken |= {f"reserve_{model.coordinate_names[k]}" for k in np.flatnonzero(reserves > 0)}
    sources = [(None, (model_actuators(model), []))] if from_model else []
    sources += [(path, read_actuators(path)) for path in files]
    for _, (actuators, notes) in sources:
        for note in notes:
            log.warning("%s", note)
        for act in actuators:
            if act.name in taken:
                raise ValueError(f"{act.source}: the name is already a muscle's, a reserve's or another actuator's "
                                 "(the output columns would collide)")
            taken.add(act.name)
            out.append(act)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("static-optimization",
                       help="muscle activations and forces along a motion (.mot/.sto): min Σ a² with R F = τ",
                       description="OpenSim's StaticOptimization problem with the package's moment arms, inverse "
                                   "dynamics and rigid-tendon muscles: at every frame, the activations a in the "
                                   "muscles' [min_control, max_control] minimizing Σ a² with R(q)(a A + P) = τ.")
    s.add_argument("model", nargs="?", help=".osim or .emb.json model with muscles (or from --setup)")
    add_lenient_option(s)
    s.add_argument("motion", nargs="?",
                   help=".mot/.sto with the generalized coordinates (degrees if inDegrees=yes; or from --setup)")
    s.add_argument("-o", "--output",
                   help="output prefix: writes PREFIX_StaticOptimization_activation.sto and ..._force.sto (or "
                        "the setup's results_directory/NAME)")
    s.add_argument("--setup", metavar="SETUP.xml",
                   help="an OpenSim AnalyzeTool setup file with a StaticOptimization analysis: its model, states or "
                        "coordinates file, force_set_files (actuators), external loads, low-pass cutoff, time range "
                        "and output names, paths relative to it (the command line overrides each); passive fibre "
                        "forces left out, as OpenSim's analysis")
    add_time_range_option(s, "report the frames within [T0, T1] s (the whole motion is splined, as OpenSim does)")
    add_times_option(s)
    s.add_argument("--reserve", action="append", metavar="COORDINATE=OPTIMAL_FORCE",
                   help="a reserve actuator on a coordinate (N m or N per unit control; repeatable)")
    s.add_argument("--reserves", type=float, metavar="OPTIMAL_FORCE",
                   help="a reserve actuator of this optimal force on every coordinate (--reserve overrides one)")
    s.add_argument("--actuators", action="append", metavar="ACTUATORS.xml",
                   help="an OpenSim actuator file (a ForceSet of CoordinateActuators, PointActuators and "
                        "TorqueActuators: a pipeline's reserve and residual actuators; repeatable), shared with the "
                        "muscles at cost control², as OpenSim's StaticOptimization with force_set_files")
    s.add_argument("--model-actuators", action="store_true",
                   help="also share the forces with the model's own CoordinateActuators, PointActuators and "
                        "TorqueActuators (OpenSim's use_model_force_set; on with --setup when the setup says so)")
    add_exclude_forces_option(s, "muscles left out of the sharing, the model's own actuators, and the coordinate "
                                 "limits, path springs, ligaments, contacts, bushings, springs and prescribed forces "
                                 "applied with the motion (e.g. foot contact where the ground reactions are given "
                                 "as external loads)")
    s.add_argument("--no-passive", action="store_true",
                   help="leave the passive fibre forces out, as OpenSim's StaticOptimization does")
    add_external_loads_option(s)
    s.add_argument("--plot", action="store_true", help="also write the activations' figure, ..._activation.png")
    add_motion_differentiation_options(s)
    s.add_argument("--outside-range", choices=("error", "warn"), default="error",
                   help="coordinates outside their ranges: refuse the motion, or warn and use them as they are")
    s.set_defaults(func=cmd_static_optimization)
