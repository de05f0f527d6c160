"""Which compiled integrator ``simulate_muscles(method="auto")`` should run: RK45-jit against BDF-jit, without OpenSim.

For the cases of ``bench_muscle_driven.py`` (same excitations and durations), each compiled integrator at rtol
1e-6 and 1e-8 (atol rtol/100) against SciPy's DOP853 at rtol 1e-11 on the same model: wall time (best of
``--repeat``, after a warm-up), right-hand sides and the largest coordinate error (rad, m), and what ``auto``
picks (BDF-jit when no driven path wraps over a wrap object, RK45-jit otherwise: docs/simulation.md).

    python benchmarks/bench_auto_method.py                       # fitted MoBL, 0.1 s (the fit: ~1 min)
    python benchmarks/bench_auto_method.py --case arm26          # arm26 with its wrapped paths, 1 s
    python benchmarks/bench_auto_method.py --case arm26-fitted
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_muscle_driven import CASES, FITTED_SOURCES, MODELS, fitted_paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="mobl-fitted", choices=["arm26", "arm26-fitted", "mobl-fitted", "mobl"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from osim_emb.io import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    t_end, exc = CASES[args.case]
    with tempfile.TemporaryDirectory() as tmp:
        if args.case in FITTED_SOURCES:
            print(f"fitting the paths of {FITTED_SOURCES[args.case]} ...", flush=True)
            path = fitted_paths(FITTED_SOURCES[args.case], Path(tmp) / f"{args.case}.osim")
        else:
            path = MODELS / ("arm26.osim" if args.case == "arm26" else "mobl_arms_holzbaur.osim")
        model = load_osim(str(path))
        system = MuscleDrivenSystem(model, exc)
        print(f"{args.case}, {t_end:g} s: {len(system.wrapped_units)} of {len(system.muscle_names)} driven paths "
              f"wrap; auto runs {'RK45-jit' if system.wrapped_units else 'BDF-jit'}", flush=True)
        times = [0.0, t_end]
        print("reference: SciPy's DOP853 at rtol 1e-11 ...", flush=True)
        ref = simulate_muscles(model, t_end, exc, t_eval=times, method="DOP853", rtol=1e-11, atol=1e-13)
        cols = model.coordinate_names
        for method in ("RK45-jit", "BDF-jit"):
            for rtol in (1e-6, 1e-8):
                run = lambda: simulate_muscles(model, t_end, exc, t_eval=times, method=method,  # noqa: E731
                                               rtol=rtol, atol=rtol * 1e-2)
                out = run()
                best = np.inf
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    run()
                    best = min(best, time.perf_counter() - t0)
                err = np.abs(out[cols].to_numpy() - ref[cols].to_numpy()).max()
                print(f"  {method:8s} rtol {rtol:.0e}: {best:7.3f} s, {out.attrs['nfev']:6d} right-hand sides, "
                      f"max |q - q_DOP853| {err:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
