"""Function-based paths in the compiled muscle-driven integrator: arm26 with its six paths replaced by fitted
FunctionBasedPaths (fit-paths' fit, order 4, on 400 random configurations), and with three of them (mixed).

* per right-hand side, in numba loops (no Python dispatch timed; the minimum of 7 repeats): the path part
  (``muscle_driven_jit._paths``: L and R of every unit) and the whole ``_rhs``;
* ``simulate_muscles`` over 1 s with the excitations of ``bench_muscle_driven.py`` CASES["arm26"], 11 output times,
  rtol 1e-5, atol 1e-7 (as that benchmark): wall time (the minimum of 5) and right-hand sides, for RK45-jit,
  SciPy's RK45 on the compiled paths and muscles, and SciPy's RK45 on the numpy route (``compiled=False``:
  how a function-based model ran before).

    PYTHONPATH=. python benchmarks/bench_function_based_paths.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MODELS = Path(os.environ.get("OSIM_EMB_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def fitted_copy(src: Path, dst: Path, names=None, order: int = 4, seed: int = 0):
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.paths.path_fitting import FitSettings, document_with_fitted_paths
    model = load_osim(str(src))
    lo, hi = model.coordinate_ranges.T
    q = np.random.default_rng(seed).uniform(lo, hi, (400, model.n_q))
    write_osim(document_with_fitted_paths(model, q, names, FitSettings(min_order=order, max_order=order))[0], dst)
    return load_osim(str(dst))


def main() -> None:
    from numba import njit
    from bench_muscle_driven import CASES
    from osim_emb import load_osim
    from osim_emb.simulation import muscle_driven_jit as J
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles

    @njit
    def loop_paths(n, y, prog, paths):
        s = 0.0
        for _ in range(n):
            y[0] += 1e-12
            s += J._paths(y, prog, paths)[0][0]
        return s

    @njit
    def loop_rhs(n, y, prog, paths, mus, clf, act):
        s = 0.0
        for _ in range(n):
            y[0] += 1e-12
            s += J._rhs(0.01, y, prog, paths, mus, clf, act)[0]
        return s

    def best(fn, repeat):
        fn()
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return min(ts)

    t_end, exc = CASES["arm26"]
    times = np.linspace(0.0, t_end, 11)
    with tempfile.TemporaryDirectory() as tmp:
        models = {"arm26 (6 geometric paths)": load_osim(str(MODELS / "arm26.osim")),
                  "arm26, 6 function-based paths": fitted_copy(MODELS / "arm26.osim", Path(tmp) / "fbp.osim"),
                  "arm26, 3 function-based + 3 geometric": fitted_copy(MODELS / "arm26.osim", Path(tmp) / "mix.osim",
                                                                       ["TRIlong", "BIClong", "BRA"])}
        for name, model in models.items():
            system = MuscleDrivenSystem(model, exc)
            plan, why = J.compiled_plan(system)
            if plan is None:
                raise SystemExit(f"{name}: not compiled: {why}")
            prog, paths, mus, clf, act = plan
            y = np.asarray(system.initial_state(), dtype=float)
            n = 20000
            tp = best(lambda: loop_paths(n, y.copy(), prog, paths), 7) / n
            tr = best(lambda: loop_rhs(n, y.copy(), prog, paths, mus, clf, act), 7) / n
            print(f"{name}: path part {tp * 1e6:.3f} us, _rhs {tr * 1e6:.3f} us a right-hand side")
            for method, kw, repeat in (("RK45-jit", {}, 5), ("RK45", {}, 2), ("RK45", {"compiled": False}, 1)):
                out = {}

                def run():
                    out["t"] = simulate_muscles(model, t_end, exc, t_eval=times, method=method, rtol=1e-5,
                                                atol=1e-7, **kw)
                wall = best(run, repeat)
                label = method + (" (numpy route)" if kw else "")
                print(f"    simulate_muscles 1 s, {label:20s}: {wall:.4f} s, {out['t'].attrs['nfev']} right-hand sides")


if __name__ == "__main__":
    main()
