"""Per-pose cost of the compiled path kernel (issue 15, items 1 and 3), without OpenSim.

* arm26, one pose (the default pose, where the muscle-driven benchmark starts): the compiled muscle-driven
  right-hand side (``muscle_driven_jit._rhs``) and its path evaluation alone (``_paths``: joint-variable
  program, then ``pose_lengths_moment_arms`` with the plan's workspace), in numba loops of 5000 calls, so
  that no Python dispatch is timed -- for arm26, for arm26 with its six paths fitted as FunctionBasedPaths
  (order 4) and with three of them fitted; then the path kernel per pose over 64 random poses, with and without
  wrapping;
* MoBL, the sweep of ``bench_moment_arms.py`` (513 poses, ``lengths_and_moment_arms(..., opensim_compat=True)``)
  on one thread.

    python benchmarks/bench_path_kernel.py [--repeat 7]

Prints the median and the minimum of the repeats (the minimum is the better estimate on a shared machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

MODELS = Path(os.environ.get("OSIM_EMB_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))


def fitted_copy(model, path: Path, names=None, order: int = 4):
    """The model with the paths of ``names`` (all by default) fitted as FunctionBasedPaths of ``order`` on 400
    random configurations (fit-paths' fit on a small sample: seconds), read back from ``path``."""
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.io.function_based_path_xml import document_with_fitted_paths
    from osim_emb.paths.path_fitting import FitSettings
    lo, hi = model.coordinate_ranges.T
    q = np.random.default_rng(0).uniform(lo, hi, (400, model.n_q))
    write_osim(document_with_fitted_paths(model, q, names, FitSettings(min_order=order, max_order=order))[0], path)
    return load_osim(str(path))


def _times(fn, repeat: int, per: int) -> tuple[float, float]:
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) / per)
    return statistics.median(ts), min(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    import numba
    from numba import njit

    from osim_emb.io import load_osim
    from osim_emb.opensim.moment_arms import make_sweeps
    from osim_emb.paths.geometry import _jit_plan, _joint_variable_arrays, lengths_and_moment_arms
    from osim_emb.simulation import muscle_driven_jit as J
    from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem

    @njit
    def loop_paths(y, prog, geo, n):
        s = 0.0
        for _ in range(n):
            s += J._paths(y, prog, geo)[0][0]
        return s

    @njit
    def loop_rhs(y, prog, geo, mus, clf, act, n):
        s = 0.0
        for _ in range(n):
            s += J._rhs(0.0, y, prog, geo, mus, clf, act)[0]
        return s

    try:
        from osim_emb.paths.wrapping._kernels_muscles import pose_lengths_moment_arms, pose_workspace
    except ImportError:  # a version before the single-pose entry: the right-hand side and the sweep only
        pose_lengths_moment_arms = None

    @njit
    def loop_poses(val, grad, pa, model_arrays, path_arrays, out, ws, n):
        s = 0.0
        for _ in range(n):
            for i in range(val.shape[0]):
                pose_lengths_moment_arms(val[i:i + 1], grad[i:i + 1], pa, model_arrays, path_arrays, out, ws)
                s += out[2][0, 0]
        return s

    model = load_osim(str(MODELS / "arm26.osim"))
    with tempfile.TemporaryDirectory() as tmp:
        variants = {"arm26": model, "arm26, 6 fitted paths": fitted_copy(model, Path(tmp) / "fitted.osim"),
                    "arm26, 3 fitted + 3 wrapped": fitted_copy(model, Path(tmp) / "mixed.osim",
                                                               ["TRIlong", "BIClong", "BRA"])}
    for label, variant in variants.items():
        system = MuscleDrivenSystem(variant, {m.name: ExcitationSpec.parse("0.2") for m in variant.muscles})
        (prog, geo, mus, clf, act), _ = J.compiled_plan(system)
        y = np.asarray(system.initial_state(), dtype=float)
        n = 5000
        for name, fn in (("right-hand side", lambda: loop_rhs(y, prog, geo, mus, clf, act, n)),
                         ("path evaluation", lambda: loop_paths(y, prog, geo, n))):
            med, lo = _times(fn, args.repeat, n)
            print(f"{label} compiled {name:16s} (default pose): median {med * 1e6:6.2f} us, min {lo * 1e6:6.2f} us")

    rng = np.random.default_rng(1)
    lo_q = np.array([c.range[0] for c in model.coordinates])
    hi_q = np.array([c.range[1] for c in model.coordinates])
    q = lo_q + (hi_q - lo_q) * rng.random((64, model.n_q))
    val, grad = _joint_variable_arrays(model, q)
    for wrapping in (True, False) if pose_lengths_moment_arms is not None else ():
        plan = _jit_plan(model, None, wrapping)
        mp, mw = plan.path[0], plan.path[1]
        out = (np.empty((1, mp[-1], 3)), np.empty((1, mw[-1], 4, 4)), np.empty((1, mp.shape[0] - 1)),
               np.empty((1, model.n_q, mp.shape[0] - 1)))
        pa = np.ones((1, plan.points[0].shape[0]), dtype=np.bool_)
        a = (val, grad, pa, (*plan.kin, *plan.bodies, *plan.points), (*plan.wraps, *plan.frames, *plan.path, True,
                                                                      True), out,
             pose_workspace(model.n_frames, model.n_q, plan.bodies[0], *plan.path[:3]))
        med, lo = _times(lambda: loop_poses(*a, 50), args.repeat, 50 * len(q))
        print(f"arm26 path kernel, 64 random poses, wrapping {'on ' if wrapping else 'off'}: median "
              f"{med * 1e6:6.2f} us, min {lo * 1e6:6.2f} us a pose")

    mobl = load_osim(str(MODELS / "mobl_arms_holzbaur.osim"))
    sweep = ["elv_angle", "shoulder_elv", "shoulder_rot"]
    qm = np.vstack([s.q for s in make_sweeps(mobl, sweep, 1.0, {c: 0.0 for c in sweep})])
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    med, lo = _times(lambda: lengths_and_moment_arms(mobl, qm, opensim_compat=True), args.repeat, 1)
    numba.set_num_threads(threads)
    print(f"MoBL sweep ({qm.shape[0]} poses, 50 muscles), 1 thread: median {med * 1e3:6.1f} ms, min {lo * 1e3:6.1f} ms "
          f"({lo / qm.shape[0] * 1e6:.0f} us a pose)")


if __name__ == "__main__":
    main()
