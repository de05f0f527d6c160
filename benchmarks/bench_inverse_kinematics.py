"""Inverse kinematics of a marker trial, the solve alone, timed with OpenSim and with the package in one run.

An opensim-models pipeline trial (default Hamner's running trial: 29 coordinates, 8 coupled ones, 37 markers, 600
frames; ``--trial Gait2392_walk`` etc.), its setup file's markers, weights, coordinate tasks and time range:

* OpenSim: ``InverseKinematicsSolver`` (MarkersReference with the setup's weights, CoordinateReferences of its
  tasks) ``assemble`` at the first frame then ``track`` at every frame, at the setup's accuracy and at 1e-9 —
  what the InverseKinematicsTool does, without its model loading and files;
* the package: ``inverse_kinematics`` on the loaded model and markers (the compiled kernel, after one warm-up
  call so that numba's compilation or cache loading is not timed), the solution converged (steps < 1e-10).

    python benchmarks/bench_inverse_kinematics.py [--trial Hamner_run] [--repeat 3]

Prints each time, the ratios, and the largest coordinate difference from OpenSim at 1e-9.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def study():
    spec = importlib.util.spec_from_file_location("ik_study", HERE.parent / "validation" / "inverse_kinematics"
                                                  / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def opensim_solve(osim, setup, model_path, trc, frames_times, accuracy, defaults):
    """OpenSim's solver over the frames: (seconds, q (T, n) of the model's coordinates in its order)."""
    model = osim.Model(str(model_path))
    state = model.initSystem()
    weights = osim.SetMarkerWeights()
    for name, w in (setup.marker_weights or {}).items():
        weights.cloneAndAppend(osim.MarkerWeight(name, w))
    markers = osim.MarkersReference(str(trc), weights)
    coordinates = osim.SimTKArrayCoordinateReference()
    for task in setup.coordinate_tasks:
        value = defaults[task.name] if task.value_type == "default_value" else task.value
        ref = osim.CoordinateReference(task.name, osim.Constant(value))
        ref.setWeight(task.weight)
        coordinates.push_back(ref)
    solver = osim.InverseKinematicsSolver(model, markers, coordinates,
                                          setup.constraint_weight if math.isfinite(setup.constraint_weight)
                                          else math.inf)
    solver.setAccuracy(accuracy)
    names = [model.getCoordinateSet().get(i).getName() for i in range(model.getNumCoordinates())]
    out = np.empty((len(frames_times), len(names)))
    start = time.perf_counter()
    state.setTime(frames_times[0])
    solver.assemble(state)
    for i, t in enumerate(frames_times):
        state.setTime(t)
        solver.track(state)
        out[i] = [model.getCoordinateSet().get(k).getValue(state) for k in range(len(names))]
    return time.perf_counter() - start, names, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trial", default="Hamner_run")
    ap.add_argument("--repeat", type=int, default=3, help="timed calls of the package (default 3)")
    args = ap.parse_args(argv)
    import opensim as osim
    osim.Logger.setLevelString("error")
    from osim_emb import load_osim
    from osim_emb.cli.inverse_kinematics import _coordinate_references, _frames
    from osim_emb.io.markers import read_trc
    from osim_emb.io.tool_setup import read_inverse_kinematics_setup
    from osim_emb.simulation.inverse_kinematics import inverse_kinematics
    with tempfile.TemporaryDirectory() as scratch:
        setup_path = study().fetch_trial(None, args.trial, Path(scratch))
        setup = read_inverse_kinematics_setup(setup_path)
        model = load_osim(str(setup.model))
        data = read_trc(setup.markers)
        frames = _frames(data.times, setup.time_range, setup.markers)
        refs = _coordinate_references(model, setup, data.times[frames])
        defaults = {c.name: c.default for c in model.coordinates} | {d.name: d.default
                                                                      for d in model.dependent_coordinates}

        def ours():
            return inverse_kinematics(model, data, marker_weights=setup.marker_weights, coordinate_references=refs,
                                      frames=frames, progress=False)
        ours()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = ours()
            times.append(time.perf_counter() - start)
        package = statistics.median(times)
        rows = []
        for accuracy in (setup.accuracy or 1e-5, 1e-9):
            seconds, names, q = opensim_solve(osim, setup, setup.model, setup.markers, data.times[frames], accuracy,
                                              defaults)
            rows.append((accuracy, seconds, names, q))
    print(f"{args.trial}: {model.n_q} coordinates ({len(model.dependent_coordinates)} dependent), "
          f"{len(result.markers)} markers, {len(frames)} frames")
    print(f"  package inverse_kinematics (converged, median of {args.repeat}): {package * 1e3:.1f} ms "
          f"({package / len(frames) * 1e6:.0f} µs a frame, {result.evaluations.mean():.1f} evaluations a frame)")
    independent = [model.coordinate_index(n) if n in model.coordinate_names else None for n in rows[0][2]]
    for accuracy, seconds, names, q in rows:
        cols = [k for k, j in enumerate(independent) if j is not None]
        dq = np.abs(q[:, cols] - result.q[:, [independent[k] for k in cols]]).max()
        print(f"  OpenSim InverseKinematicsSolver, accuracy {accuracy:g}: {seconds:.2f} s -> "
              f"{seconds / package:.0f}x the package; max |q_OpenSim - q_package| {dq:.2e} (rad, m)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
