"""The moment-arm sweep of issue 4, timed with OpenSim and with the package in one run.

The full 9-condition sweep of MoBL (mobl_arms_holzbaur.osim): elv_angle, shoulder_elv and
shoulder_rot each over its range in 1-degree steps with the other two at 0 (513
configurations), all 50 muscles, moment arms about the three swept coordinates.

* OpenSim: ``computeMomentArm`` for every configuration, muscle and coordinate
  (``OpenSimReference.set_configuration`` then ``moment_arm``), 513 x 50 x 3 calls.
* The package: one call of ``lengths_and_moment_arms(model, q, opensim_compat=True)``
  (kinematics, wrapping and the whole moment-arm matrix, all coordinates), the compiled
  (numba) kernel -- the package's one implementation -- after one warm-up call, so that JIT
  compilation / loading numba's cache is not timed, with all of numba's threads and with one.
  Units that do not cross the swept joints (here the 32 elbow, forearm, wrist and hand muscles)
  have the same relative configuration at every pose and are evaluated once (docs/wrapping.md,
  "Profile of the sweep"); the count is printed.

    python benchmarks/bench_moment_arms.py [--model PATH] [--repeat 7]

Prints each time, the ratios, and the largest difference between OpenSim's and the
package's moment arms (the agreement itself is the subject of the validation study).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

SWEEP = ["elv_angle", "shoulder_elv", "shoulder_rot"]
# computeMomentArm skips a path segment between two points of one body: with a MovingPathPoint next to a
# point on its own body these differ from the package's generalized force (validation/holzbaur_moment_arms)
SAME_BODY = {"PECM1", "PECM2", "PECM3", "LAT1", "LAT2", "LAT3"}


def default_model() -> Path:
    env = os.environ.get("OSIM_EMB_MODELS")
    base = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "models"
    return base / "mobl_arms_holzbaur.osim"


def time_calls(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(default_model()))
    ap.add_argument("--repeat", type=int, default=7, help="timed calls of the compiled package (default 7)")
    args = ap.parse_args(argv)

    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.opensim.moment_arms import make_sweeps
    from osim_emb.opensim.bridge import OpenSimReference

    model = load_osim(args.model)
    sweeps = make_sweeps(model, SWEEP, 1.0, {c: 0.0 for c in SWEEP})
    q = np.vstack([s.q for s in sweeps])
    muscles = [m.name for m in model.muscles]
    names = model.coordinate_names
    kidx = [model.coordinate_index(c) for c in SWEEP]
    n_calls = q.shape[0] * len(muscles) * len(SWEEP)
    print(f"model {Path(args.model).name}: {q.shape[0]} configurations x {len(muscles)} muscles x "
          f"{len(SWEEP)} coordinates = {n_calls} moment arms")
    from osim_emb.paths import geometry as G
    plan = G._jit_plan(model, None, True)
    val, grad = G._joint_variable_arrays(model, q)
    n_fixed = int(G._units_fixed_in_batch(plan, val, grad, G._point_activity(plan, q)).sum())
    print(f"  {n_fixed} of {len(plan.muscles)} path units keep their relative configuration at every pose "
          "(evaluated once by the package)")

    # ---- OpenSim: computeMomentArm loop -------------------------------------------------
    ref = OpenSimReference(args.model, model)
    ma_os = np.empty((q.shape[0], len(muscles), len(SWEEP)))
    t0 = time.perf_counter()
    for n, qn in enumerate(q):
        ref.set_configuration(qn, names=names, check=None)
        for mi, m in enumerate(muscles):
            for kk, c in enumerate(SWEEP):
                ma_os[n, mi, kk] = ref.moment_arm(m, c)
    t_os = time.perf_counter() - t0
    print(f"OpenSim computeMomentArm loop:        {t_os:8.3f} s")

    def package():
        return lengths_and_moment_arms(model, q, opensim_compat=True)

    # ---- the package, compiled ------------------------------------------------------------
    import numba

    # the compiled kernel is the package's one implementation (numba is a dependency)
    t_jit1 = None
    threads = numba.get_num_threads()
    t0 = time.perf_counter()
    L, R = package()  # warm-up: JIT compilation or loading numba's on-disk cache (not timed)
    t_warm = time.perf_counter() - t0
    ts = time_calls(package, args.repeat)
    t_jit = statistics.median(ts)
    print(f"package, numba, {threads} thread(s):      {t_jit * 1e3:8.1f} ms (median of {args.repeat}; "
          f"min {min(ts) * 1e3:.1f} ms; warm-up call {t_warm:.1f} s, not timed)")
    if threads > 1:
        numba.set_num_threads(1)
        ts1 = time_calls(package, args.repeat)
        numba.set_num_threads(threads)
        t_jit1 = statistics.median(ts1)
        print(f"package, numba, 1 thread:             {t_jit1 * 1e3:8.1f} ms (median of {args.repeat}; "
              f"min {min(ts1) * 1e3:.1f} ms)")
    d = np.abs(R[:, kidx, :].transpose(0, 2, 1) - ma_os).max(axis=(0, 2))
    same_body = [k for k, m in enumerate(muscles) if m in SAME_BODY]
    rest = [k for k in range(len(muscles)) if k not in same_body]
    print(f"  max |package - OpenSim| moment arm: {d[rest].max():.1e} m ({len(rest)} muscles); "
          f"{d[same_body].max():.1e} m for {', '.join(muscles[k] for k in same_body)} (OpenSim's "
          "same-body rule for moving via points, see validation/holzbaur_moment_arms)")

    print("ratios (OpenSim time / package time):")
    print(f"  numba, all threads: {t_os / t_jit:7.0f}x")
    if t_jit1 is not None:
        print(f"  numba, 1 thread:    {t_os / t_jit1:7.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
