"""Time per batch of the integrated geodesic paths (ellipsoid, torus): the compiled solver
(``paths._geodesic_kernels.surface_path_row``, the whole Newton solve row by row).

    PYTHONPATH=. python validation/smooth_paths/geodesic_timing.py

Prints, for 1 and 20 paths per batch, the seconds of ``geodesic.surface_path`` (the fastest of 5) and how many of
the paths wrap.  (Before the Newton solve was compiled this script compared numpy and compiled shooting inside the
numpy solver; docs/paths.md keeps those figures.)
"""

from __future__ import annotations

import time

import numpy as np


def main() -> int:
    import osim_emb.paths.geodesic as geodesic
    rng = np.random.default_rng(0)
    n = 20
    cases = (("ellipsoid (30, 45, 25 mm)", geodesic.Ellipsoid([0.03, 0.045, 0.025]),
              np.array([-0.1, 0.02, 0.0]) + rng.normal(0, 0.01, (n, 3)),
              np.array([0.1, 0.01, 0.01]) + rng.normal(0, 0.01, (n, 3))),
             ("torus (R 40 mm, r 15 mm)", geodesic.Torus(0.04, 0.015),
              np.column_stack([rng.uniform(0.02, 0.04, n), rng.uniform(-0.01, 0.01, n), rng.uniform(0.05, 0.1, n)]),
              np.column_stack([rng.uniform(0.02, 0.04, n), rng.uniform(-0.01, 0.01, n), -rng.uniform(0.05, 0.1, n)])))
    nan = (np.nan,) * 3
    print(f"{'surface':<26} {'paths':>5} {'compiled (s)':>13} {'wrapped':>8}")
    for name, surface, p1, p2 in cases:
        geodesic.surface_path(surface, nan, p1[:1], p2[:1])  # compile (or load numba's cache)
        for rows in (1, n):
            best = np.inf
            for _ in range(5):
                t = time.perf_counter()
                wrapped = geodesic.surface_path(surface, nan, p1[:rows], p2[:rows])[3]
                best = min(best, time.perf_counter() - t)
            print(f"{name:<26} {rows:>5} {best:>13.5f} {int(wrapped.sum()):>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
