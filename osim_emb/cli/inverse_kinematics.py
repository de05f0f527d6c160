"""``osim-emb inverse-kinematics``: coordinates of a marker trial (.trc or .c3d) by OpenSim's weighted least squares
(:func:`osim_emb.simulation.inverse_kinematics.inverse_kinematics`)."""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

import numpy as np

from osim_emb.cli.common import table_output, _load_any, _plot_path, _plot_table, coordinate_panels, add_lenient_option, add_time_range_option, \
    fill_from_setup

log = logging.getLogger("osim_emb")


def _weight_pairs(pairs: list[str] | None) -> dict[str, float]:
    out = {}
    for text in pairs or []:
        name, sep, value = text.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not sep or not name or not math.isfinite(weight) or weight < 0:
            raise ValueError(f"--weight {text!r}: give MARKER=WEIGHT with a weight >= 0")
        out[name] = weight
    return out


def _setup(args: argparse.Namespace):
    """Fill what the command line leaves unset from ``--setup`` (an OpenSim InverseKinematicsTool file)."""
    if not args.setup:
        if not (args.model and args.markers and args.output):
            raise ValueError("give MODEL, MARKERS (.trc or .c3d) and -o OUTPUT, or an OpenSim setup file with --setup")
        return None
    from osim_emb.io.tool_setup import read_inverse_kinematics_setup
    setup = read_inverse_kinematics_setup(args.setup)
    fill_from_setup(args, {"model": setup.model, "markers": setup.markers, "output": setup.output},
                    {"model": "model_file", "markers": "marker_file", "output": "output_motion_file"}, setup.time_range)
    return setup


def _coordinate_references(model, setup, times: np.ndarray):
    """The setup's coordinate tasks as references at the solved frames (rad, m)."""
    from osim_emb.simulation.inverse_kinematics import CoordinateReference
    if setup is None or not setup.coordinate_tasks:
        return []
    by_name = {c.name: c for c in model.coordinates} | {d.name: d for d in model.dependent_coordinates}
    spline = None
    out = []
    for task in setup.coordinate_tasks:
        coordinate = by_name.get(task.name)
        if coordinate is None:
            raise ValueError(f"{setup.path}: IKCoordinateTask {task.name!r}: model {model.name!r} has no such "
                             "coordinate")
        if task.value_type == "default_value":
            values = coordinate.default
        elif task.value_type == "manual_value":
            values = task.value
        else:
            if spline is None:
                spline = _coordinate_file_spline(setup)
            values = spline(task.name, coordinate, times)
        out.append(CoordinateReference(task.name, task.weight, values))
    return out


def _coordinate_file_spline(setup):
    """Values of the setup's coordinate file at given times, as OpenSim's tool takes them: rotational coordinates
    converted from degrees, a natural quintic spline (GCVSplineSet(5)) of each column."""
    from osim_emb.io.motion import _column_for, in_degrees_flag, read_motion
    from osim_emb.simulation.motions import _natural_quintic
    if setup.coordinates is None:
        raise ValueError(f"{setup.path}: a coordinate task takes its values from_file but <coordinate_file> is unset")
    table, header = read_motion(setup.coordinates)
    in_degrees = in_degrees_flag(header, setup.coordinates) == "yes"
    time = table["time"].to_numpy(dtype=float)

    def values(name, coordinate, times):
        column = _column_for(table.columns, name)
        if column is None:
            raise ValueError(f"{setup.coordinates}: no column for coordinate {name!r} (IKCoordinateTask from_file "
                             f"in {setup.path})")
        v = table[column].to_numpy(dtype=float)
        rotational = coordinate.motion_type == "rotational"
        if in_degrees and rotational:
            v = np.radians(v)
        elif rotational and np.abs(v).max() > 2 * np.pi:
            raise ValueError(f"{setup.coordinates}: column {column!r} reaches {np.abs(v).max():.4g} rad: the values look "
                             "like degrees but the header says inDegrees=no (IKCoordinateTask from_file in "
                             f"{setup.path})")
        return _natural_quintic(time, v[:, None])(times)[:, 0]
    return values


def _frames(times: np.ndarray, time_range, path) -> np.ndarray:
    """The frames OpenSim's tool solves: the rows nearest the range's ends, the range clipped to the data."""
    if time_range is None:
        return np.arange(len(times))
    t0, t1 = max(time_range[0], times[0]), min(time_range[1], times[-1])
    if t1 < t0:
        raise ValueError(f"--time-range {time_range[0]:g} {time_range[1]:g}: outside {path} "
                         f"(t = {times[0]:g} to {times[-1]:g} s)")
    first, last = (int(np.argmin(np.abs(times - t))) for t in (t0, t1))
    return np.arange(first, last + 1)


def cmd_inverse_kinematics(args: argparse.Namespace) -> int:
    from osim_emb.io.markers import read_markers
    from osim_emb.io.motion import write_motion
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.inverse_kinematics import inverse_kinematics
    output_given = bool(args.output)
    setup = _setup(args)
    out = table_output(args.output)
    stem = out.stem[:-3] if out.stem.endswith("_ik") else out.stem  # trial_ik.mot -> trial_ik_marker_errors.sto
    name = setup.name if setup is not None and setup.name and not output_given else stem
    folder = setup.results_directory if setup is not None and not output_given else out.parent
    report_errors = setup.report_errors if setup is not None and not args.no_errors else not args.no_errors
    report_locations = args.marker_locations or (setup is not None and setup.report_marker_locations)
    outs = [out]
    if report_errors:
        outs.append(folder / f"{name}_ik_marker_errors.sto")
    if report_locations:
        outs.append(folder / f"{name}_ik_model_marker_locations.sto")
    if args.marker_distances:
        outs.append(folder / f"{name}_ik_marker_distances.sto")
    if args.plot:
        outs.append(_plot_path(out))
    inputs = [p for p in (args.model, args.markers, args.setup) if p]
    if setup is not None and setup.coordinates is not None:
        inputs.append(setup.coordinates)
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        model = _load_any(args.model, strict=not args.lenient)
        data = read_markers(args.markers)
        frames = _frames(data.times, args.time_range, args.markers)
        weights = dict(setup.marker_weights or {}) if setup is not None and setup.marker_weights else None
        if args.weight:
            weights = (weights if weights is not None else {n: 1.0 for n in data.names}) | _weight_pairs(args.weight)
        if setup is not None and math.isfinite(setup.constraint_weight) and model.dependent_coordinates:
            log.warning("%s: constraint_weight %g makes OpenSim treat constraints as weighted goals; the package "
                        "holds couplers and loops exactly (OpenSim's Infinity)", args.setup, setup.constraint_weight)
        references = _coordinate_references(model, setup, data.times[frames])
        result = inverse_kinematics(model, data, marker_weights=weights, coordinate_references=references,
                                    frames=frames, progress=not getattr(args, "quiet", False))
        coordinates = result.coordinates(in_degrees=True)
        write_motion(tmps[0], coordinates, name=f"{model.name} inverse kinematics", in_degrees=True, protect=inputs)
        k = 1
        if report_errors:
            write_motion(tmps[k], result.marker_errors(), name="Model Marker Errors from IK", protect=inputs)
            k += 1
        if report_locations:
            write_motion(tmps[k], result.marker_locations(), name="Model Marker Locations from IK", protect=inputs)
            k += 1
        if args.marker_distances:
            write_motion(tmps[k], result.marker_distances(), name="Marker distances from IK (m)", protect=inputs)
            k += 1
        plotted = args.plot
        if args.plot:
            columns = {c: c for c in coordinates.columns if c != "time"}
            panels = coordinate_panels(model, columns, ("angle (deg)", "translation (m)"))
            plotted = _plot_table(coordinates, panels, tmps[k],
                                  f"{model.name}: inverse kinematics of {Path(args.markers).name}", output=outs[k])
    errors = result.marker_errors()
    worst = int(np.argmax(result.squared_errors.max(axis=0)))
    print(f"wrote {out}: {len(result.times)} frames, {len(result.markers)} markers; marker error RMS "
          f"{errors.marker_error_RMS.mean() * 1e3:.2f} mm mean, largest {errors.marker_error_max.max() * 1e3:.2f} mm "
          f"({result.markers[worst]})")
    for p in outs[1:] if plotted == args.plot else outs[1:-1]:
        print(f"wrote {p}")
    return 0 if plotted == args.plot else 1


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("inverse-kinematics",
                       help="coordinates of a marker trial (.trc or .c3d) by OpenSim's weighted least squares")
    s.add_argument("model", nargs="?", help=".osim or .emb.json model with markers (or from --setup)")
    add_lenient_option(s)
    s.add_argument("markers", nargs="?", help=".trc or .c3d marker file (or from --setup)")
    s.add_argument("-o", "--output", help="output .mot (coordinates, degrees; or from --setup)")
    s.add_argument("--setup", metavar="SETUP.xml",
                   help="an OpenSim InverseKinematicsTool setup file: its model, markers, marker and coordinate "
                        "tasks, time range and outputs, paths relative to it (the command line overrides each)")
    s.add_argument("--weight", action="append", metavar="MARKER=W",
                   help="a marker's weight (repeatable); added to the setup's tasks, or to weight 1 for every "
                        "marker")
    add_time_range_option(s, "solve the frames nearest T0 to T1 s (as OpenSim's tool)")
    s.add_argument("--no-errors", action="store_true",
                   help="do not write NAME_ik_marker_errors.sto (total squared error, RMS and largest error)")
    s.add_argument("--marker-locations", action="store_true",
                   help="also write NAME_ik_model_marker_locations.sto (the model's markers at the solution)")
    s.add_argument("--marker-distances", action="store_true",
                   help="also write NAME_ik_marker_distances.sto: each marker's distance from its observation (m; "
                        "NaN where it is missing), the per-marker detail OpenSim's error file sums up")
    s.add_argument("--plot", action="store_true", help="also write a PNG plot of the coordinates")
    s.set_defaults(func=cmd_inverse_kinematics)
