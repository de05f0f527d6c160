"""Speed of the muscle-driven simulation (issue 15, item 3) against OpenSim's Manager at equal accuracy.

arm26 (6 Thelen2003 muscles with compliant tendons, wrapped paths), 1 s of co-contraction: BIClong a smooth
step 0.05 -> 0.5 over 0.1-0.3 s, TRIlong 0.2 + 0.1 sin(10 t), the other four 0.2 or 0.3; the elbow flexes to
47 degrees.  (A stronger biceps step, as in tests/test_muscle_driven.py, flexes the elbow through a pose where
TRIlong's wrapped path jumps by 8.5 mm -- in OpenSim too -- and the state at 1 s then depends on how each
integrator crosses that jump: no fair accuracy measure.)
A tight reference is the package's ODE with DOP853 at rtol 1e-12 (OpenSim at accuracy 1e-9 agrees with it,
tests/test_muscle_driven.py).  For each OpenSim accuracy (1e-5, its default, and 1e-7) the error of the
coordinates at 11 instants against the reference is measured; the package then uses the cheapest of
RK45-jit (the whole integration compiled, osim_emb.simulation.muscle_driven_jit), SciPy's RK45, DOP853, LSODA and BDF
over a range of rtol whose error is no larger, and the wall-time ratio is printed.  OpenSim integrates
to 1 s in one call (its time excludes model loading and equilibration; the package's includes its
equilibration).

    python benchmarks/bench_muscle_driven.py      # about 1 min
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from osim_emb.io import load_osim
from osim_emb.simulation.muscle_driven import ExcitationSpec, simulate_muscles
from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation

HERE = Path(__file__).resolve().parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))
EXCITATIONS = {name: ExcitationSpec.parse(spec) for name, spec in {
    "BIClong": "step:0.1:0.3:0.05:0.5", "BICshort": "0.2", "BRA": "0.3", "TRIlong": "sine:0.1:10:0:0.2",
    "TRIlat": "0.2", "TRImed": "0.2"}.items()}
T_END = 1.0


def main() -> None:
    path = MODELS / "arm26.osim"
    model = load_osim(str(path))
    times = np.linspace(0.0, T_END, 11)
    simulate_muscles(model, 0.01, EXCITATIONS)  # compile / warm caches
    simulate_muscles(model, 0.01, EXCITATIONS, method="RK45-jit")
    ref = simulate_muscles(model, T_END, EXCITATIONS, t_eval=times, method="DOP853", rtol=1e-12, atol=1e-13)
    qref = ref[model.coordinate_names].to_numpy()
    ours = []
    for method in ("RK45-jit", "RK45", "DOP853", "LSODA", "BDF"):
        for rtol in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
            t0 = time.perf_counter()
            tab = simulate_muscles(model, T_END, EXCITATIONS, t_eval=times, method=method, rtol=rtol,
                                   atol=rtol * 1e-2)
            dt = time.perf_counter() - t0
            err = np.abs(tab[model.coordinate_names].to_numpy() - qref).max()
            ours.append((dt, err, method, rtol, tab.attrs["nfev"]))
            print(f"package {method:8s} rtol {rtol:.0e}: {dt:6.3f} s, {tab.attrs['nfev']:6d} right-hand sides, "
                  f"max |q - q_ref| = {err:.1e} rad")
    for acc in (1e-5, 1e-7):
        steps = opensim_muscle_simulation(path, times, EXCITATIONS, accuracy=acc)
        err = np.abs(steps["q"] - qref).max()
        one = opensim_muscle_simulation(path, times, EXCITATIONS, accuracy=acc, one_shot=True)
        ok = [o for o in ours if o[1] <= err]
        if not ok:
            print(f"OpenSim accuracy {acc:.0e}: {one['seconds']:.3f} s, error {err:.1e} rad; no package setting as "
                  "accurate")
            continue
        best = min(ok)
        print(f"OpenSim accuracy {acc:.0e}: {one['seconds']:.3f} s, max |q - q_ref| = {err:.1e} rad | package "
              f"{best[2]} rtol {best[3]:.0e}: {best[0]:.3f} s, error {best[1]:.1e} rad | ratio OpenSim/package "
              f"{one['seconds'] / best[0]:.2f}x")


if __name__ == "__main__":
    main()
