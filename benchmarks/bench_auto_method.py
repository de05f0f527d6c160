"""RK45-jit against BDF-jit on one model, without OpenSim: which compiled integrator suits it.

Each compiled integrator at rtol 1e-6 and 1e-8 (atol rtol/100) against SciPy's DOP853 at rtol 1e-11 on the same
model: wall time (best of ``--repeat``, after a warm-up), right-hand sides and the largest coordinate error (rad,
m), and how many driven paths wrap (BDF-jit can step over a wrapped path's transient: docs/simulation.md).
``--case``: the cases of ``bench_muscle_driven.py`` (same excitations and durations); ``--model PATH``: any model,
with the excitations of the model-corpus study (the first four muscles at 0.3, the fifth a 20 rad/s sine) over
``--t-end``.

    python benchmarks/bench_auto_method.py                           # fitted MoBL, 0.1 s (the fit: ~1 min)
    python benchmarks/bench_auto_method.py --case arm26              # arm26 with its wrapped paths, 1 s
    python benchmarks/bench_auto_method.py --model M.osim --t-end 0.02
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
    ap.add_argument("--model", help="an .osim file instead of a case (the corpus study's excitations)")
    ap.add_argument("--t-end", type=float, default=0.02, help="seconds simulated with --model (default 0.02)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from osim_emb.io import load_osim
    from osim_emb.simulation.excitations import ExcitationSpec
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    with tempfile.TemporaryDirectory() as tmp:
        if args.model:
            path, label = Path(args.model), Path(args.model).name
            model = load_osim(str(path))
            driven = set(MuscleDrivenSystem(model).muscle_names)
            names = [mu.name for mu in model.muscles if mu.name in driven]
            exc = {n: ExcitationSpec.parse("0.3") for n in names[:4]}
            if len(names) > 4:
                exc[names[4]] = ExcitationSpec.parse("sine:0.2:20:0:0.3")
            t_end = args.t_end
        else:
            t_end, exc = CASES[args.case]
            label = args.case
            if args.case in FITTED_SOURCES:
                print(f"fitting the paths of {FITTED_SOURCES[args.case]} ...", flush=True)
                path = fitted_paths(FITTED_SOURCES[args.case], Path(tmp) / f"{args.case}.osim")
            else:
                path = MODELS / ("arm26.osim" if args.case == "arm26" else "mobl_arms_holzbaur.osim")
            model = load_osim(str(path))
        system = MuscleDrivenSystem(model, exc)
        wrapped = sum(1 for mu in model.muscles if mu.name in set(system.muscle_names) and mu.wraps)
        print(f"{label}, {t_end:g} s: {wrapped} of {len(system.muscle_names)} driven paths wrap", flush=True)
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
