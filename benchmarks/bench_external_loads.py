"""Muscle-driven and passive simulations with external loads, timed in one run (issue 15 item 3's route with ground
reactions; round 17 moved the loads into the compiled right-hand sides).

* arm26, BIClong and TRIlong excited, a load pulling the hand (a force in ground at a point of the hand, the
  ExternalLoads file of tests/test_external_loads.py), 0.3 s at rtol 1e-9: OpenSim's Manager (accuracy 1e-9, one
  integrate call from the equilibrated state), the package's integration with the compiled integrators (RK45-jit,
  BDF-jit) and SciPy's RK45 on the system's right-hand side, the loads applied from Python (the route before);
* the double pendulum with a ground-frame force and a body-frame force and torque, 0.4 s, DOP853 at 1e-10:
  ``simulate(..., external_loads=...)`` (the loads in the kernel) against the same loads as a Python callback of
  ``external_load_forces`` (the route before).

    python benchmarks/bench_external_loads.py [--repeat 3]

Prints each time (the best of ``repeat``), the ratios, and the largest coordinate difference to OpenSim's (arm26) or
between the routes (pendulum).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from _timing import best  # noqa: E402  (this folder's timing helper)

MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))


def main(argv=None) -> int:
    from opensim_builders import T, pendulum_loads, write_loads
    from osim_emb.core.dynamics import external_load_forces
    from osim_emb.io import load_osim
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.motions import simulate
    from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem, integrate_system
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        xml = write_loads(Path(tmp), [("hand", "r_ulna_radius_hand", "ground", "r_ulna_radius_hand", "hand_v", "hand_p",
                                       "")],
                          {"hand_vx": 20 * T, "hand_vy": -15 + 5 * T, "hand_vz": 0 * T, "hand_px": 0 * T,
                           "hand_py": -0.24 + 0 * T, "hand_pz": 0.06 + 0 * T})
        loads = read_external_loads(xml)
        path = MODELS / "arm26.osim"
        model = load_osim(str(path))
        specs = {"BIClong": ExcitationSpec.parse("0.4"), "TRIlong": ExcitationSpec.parse("step:0.05:0.15:0.1:0.6")}
        t_eval = np.linspace(0.0, 0.3, 16)
        ref = opensim_muscle_simulation(str(path), t_eval, specs, accuracy=1e-9, external_loads=str(xml),
                                        one_shot=True)
        opensim_s = min([ref["seconds"]] + [opensim_muscle_simulation(str(path), t_eval, specs, accuracy=1e-9,
                                                                      external_loads=str(xml), one_shot=True)["seconds"]
                                            for _ in range(args.repeat - 1)])
        system = MuscleDrivenSystem(model, specs, external_loads=loads)
        y0 = system.initial_state()
        rows = []
        for label, run in (
                ("RK45-jit", lambda: integrate_system(system, y0, t_eval, method="RK45-jit", rtol=1e-9, atol=1e-11)),
                ("BDF-jit", lambda: integrate_system(system, y0, t_eval, method="BDF-jit", rtol=1e-9, atol=1e-11)),
                # the route before: the compiled integrators refused loads, so SciPy's RK45 on the system's right-hand
                # side (the loads applied from Python at each call)
                ("SciPy RK45 on the system's right-hand side (before)",
                 lambda: solve_ivp(system.rhs, (0.0, 0.3), y0, method="RK45", rtol=1e-9, atol=1e-11, t_eval=t_eval))):
            seconds, sol = best(run, args.repeat)
            error = float(np.abs(sol.y[:system.n_q, -1] - ref["q"][-1]).max())
            rows.append((label, seconds, error))
        print(f"arm26 with a hand load, 0.3 s: OpenSim's Manager (accuracy 1e-9) {opensim_s:.3f} s")
        for label, seconds, error in rows:
            print(f"  {label:52s} {seconds:7.3f} s  OpenSim/package {opensim_s / seconds:6.2f}x  "
                  f"|q - OpenSim's| at 0.3 s {error:.1e} rad")
        print(f"  compiled against the route before: {rows[2][1] / rows[0][1]:.1f}x (RK45-jit), "
              f"{rows[2][1] / rows[1][1]:.1f}x (BDF-jit)")

        pendulum = load_osim(str(MODELS / "double_pendulum.osim"))
        (Path(tmp) / "pendulum").mkdir()
        pl = read_external_loads(pendulum_loads(Path(tmp) / "pendulum"))

        def callback(t, q, qd):
            return external_load_forces(pendulum, q[None, :], pl.at([t]))[0]
        kernel_s, kernel = best(lambda: simulate(pendulum, 0.4, rtol=1e-10, atol=1e-10, external_loads=pl), args.repeat)
        python_s, python = best(lambda: simulate(pendulum, 0.4, rtol=1e-10, atol=1e-10, generalized_forces=callback),
                                args.repeat)
        d = np.abs(kernel.drop(columns="time").to_numpy() - python.drop(columns="time").to_numpy()).max()
        print(f"double pendulum with loads, 0.4 s: in the kernel {kernel_s:.3f} s, as a Python callback (before) "
              f"{python_s:.3f} s: {python_s / kernel_s:.1f}x; trajectories {d:.1e} apart")
    return 0


if __name__ == "__main__":
    sys.exit(main())
