"""Time per batch of the integrated geodesic paths (ellipsoid, torus), compiled RK4 against the numpy one.

    PYTHONPATH=. python validation/smooth_paths/geodesic_timing.py

Prints, for 1 and 20 paths per batch, the seconds of ``geodesic.surface_path`` with the compiled shooting
(``paths._geodesic_kernels``) and with ``geodesic._shoot_numpy``, and the largest length difference.
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
    print(f"{'surface':<26} {'paths':>5} {'numpy (s)':>10} {'compiled (s)':>13} {'max |dL| (m)':>13}")
    for name, surface, p1, p2 in cases:
        geodesic.surface_path(surface, nan, p1[:1], p2[:1])  # compile (or load numba's cache)
        for rows in (1, n):
            t = time.perf_counter()
            compiled = geodesic.surface_path(surface, nan, p1[:rows], p2[:rows])[0]
            t_compiled = time.perf_counter() - t
            fast, geodesic._shoot = geodesic._shoot, geodesic._shoot_numpy
            try:
                t = time.perf_counter()
                reference = geodesic.surface_path(surface, nan, p1[:rows], p2[:rows])[0]
                t_numpy = time.perf_counter() - t
            finally:
                geodesic._shoot = fast
            print(f"{name:<26} {rows:>5} {t_numpy:>10.3f} {t_compiled:>13.3f} "
                  f"{np.abs(compiled - reference).max():>13.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
