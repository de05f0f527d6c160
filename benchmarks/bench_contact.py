"""Simulations with contact, springs and bushings (the model's own passive forces, docs/forces.md), timed in one run
against OpenSim's Manager.

* the contact block of tests/test_force_elements.py (a free block with two Hunt-Crossley spheres, an arm with a
  smooth-contact sphere, a bushing, a spring; ``compiled_only``) dropped for 0.5 s: OpenSim's Manager,
  ``simulate`` (SciPy's DOP853; contact, springs and bushings in the compiled right-hand side), the same with every
  force element applied from Python (the laws of ``force_element_forces``, the route without the compiled table)
  and ``simulate --method RK45-jit`` (the whole integration compiled; the whole call timed), at tolerance 1e-6
  and 1e-9;
* opensim-core's bouncing balls (Hunt-Crossley, smooth contact) and opensim-models' WalkerModel (six Hunt-Crossley
  contacts, four CoordinateLimitForces), 1 s from the default state: OpenSim's Manager against ``simulate`` (SciPy's
  DOP853 on the compiled right-hand side) and ``simulate --method RK45-jit`` (the whole call);
* opensim-models' DynamicJumperModel (54 muscles, two Hunt-Crossley feet on a platform), zero excitations, 0.2 s,
  and SoccerKickingModel (9 muscles, five Hunt-Crossley contacts, the ball), 0.2 s: OpenSim's Manager against
  ``simulate_muscles`` (RK45-jit), at accuracy 1e-5 (OpenSim's default) and 1e-7 -- when the model corpus of
  validation/model_corpus/run.py is extracted (``--corpus``).

    python benchmarks/bench_contact.py [--repeat 3] [--corpus /tmp/osim_emb_model_corpus]

Prints each time (the best of ``repeat``), the ratios and each run's largest coordinate difference to a reference
run of the package at 1e-11 (block) or to OpenSim's run at the same accuracy (corpus models).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "validation" / "model_corpus"))
from _timing import best  # noqa: E402  (this folder's timing helper)


def block(repeat: int) -> None:
    import opensim as osim
    from test_force_elements import build_contact_model
    from osim_emb.io import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation import force_elements as fe
    from osim_emb.simulation.motions import simulate
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "contact_block.osim"
        build_contact_model(osim, path, compiled_only=True)
        model = load_osim(path)
        names = model.coordinate_names
        t_end = 0.5
        reference = simulate(model, t_end, n_output=2, rtol=1e-11, atol=1e-11)[names].to_numpy()[-1]
        elements = fe.model_force_elements(model)

        def python_route(tol):  # every element from Python: no compiled table
            return simulate(model, t_end, n_output=2, rtol=tol, atol=tol, model_forces=False,
                            generalized_forces=lambda t, q, qd: fe.force_element_forces(
                                model, elements, [t], q[None], qd[None])[0])
        print(f"contact block, {t_end} s drop ({elements.describe()})")
        for tol in (1e-6, 1e-9):
            t_os, r = best(lambda: opensim_muscle_simulation(str(path), [0.0, t_end], {}, accuracy=tol,
                                                             one_shot=False), repeat)
            q_os = r["q"][-1][[r["names"].index(c) for c in names]]
            t_pkg, tab = best(lambda: simulate(model, t_end, n_output=2, rtol=tol, atol=tol), repeat)
            t_py, tab_py = best(lambda: python_route(tol), max(1, repeat // 3))
            t_jit, jit = best(lambda: simulate(model, t_end, n_output=2, method="RK45-jit", rtol=tol, atol=tol),
                              repeat)
            err = {k: np.abs(v - reference).max() for k, v in (
                ("OpenSim", q_os), ("package", tab[names].to_numpy()[-1]), ("python", tab_py[names].to_numpy()[-1]),
                ("jit", jit[names].to_numpy()[-1]))}
            print(f"  tolerance {tol:g}: OpenSim's Manager {t_os:.3f} s (|q − ref| {err['OpenSim']:.1e}); simulate "
                  f"{t_pkg:.3f} s ({err['package']:.1e}, {tab.attrs['nfev']} right-hand sides): {t_os / t_pkg:.1f}x; "
                  f"the laws from Python {t_py:.3f} s ({err['python']:.1e}): compiled table {t_py / t_pkg:.1f}x; "
                  f"simulate --method RK45-jit {t_jit:.4f} s ({err['jit']:.1e}): {t_os / t_jit:.1f}x")


def corpus_runs(corpus: Path, repeat: int, cases, tolerances, passive: bool) -> None:
    """Each (model, duration) of ``cases`` from its default state: OpenSim's Manager and the compiled RK45 --
    ``simulate_muscles``'s integrator, or (``passive``: a model without muscles) ``simulate`` with DOP853 and with
    RK45-jit (whole calls) -- at each tolerance."""
    from osim_emb.io import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.motions import simulate
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, integrate_system
    for rel, t_end in cases:
        path = corpus / rel
        if not path.exists():
            print(f"{rel}: not in {corpus} (extract the corpus: validation/model_corpus/run.py)")
            continue
        model = load_osim(path)
        names = model.coordinate_names
        system = MuscleDrivenSystem(model, {})
        y0 = system.initial_state()
        what = "passive" if passive else f"zero excitations ({system.n_m} muscles)"
        print(f"{path.name}, {what}, {t_end} s ({system.force_elements.describe()})")
        for tol in tolerances:
            t_os, r = best(lambda: opensim_muscle_simulation(str(path), [0.0, t_end], {}, accuracy=tol,
                                                             one_shot=False, own_controllers=False), repeat)
            q_os = r["q"][-1][[r["names"].index(c) for c in names]]
            parts = [f"OpenSim's Manager {t_os:.3f} s"]
            if passive:
                t_pkg, tab = best(lambda: simulate(model, t_end, n_output=2, rtol=tol, atol=tol), repeat)
                parts.append(f"simulate (SciPy's DOP853) {t_pkg:.3f} s ({tab.attrs['nfev']} right-hand sides): "
                             f"{t_os / t_pkg:.1f}x, max |q − q_OpenSim| "
                             f"{np.abs(tab[names].to_numpy()[-1] - q_os).max():.1e}")
                t_jit, jit = best(lambda: simulate(model, t_end, n_output=2, method="RK45-jit", rtol=tol, atol=tol),
                                  repeat)
                parts.append(f"simulate --method RK45-jit {t_jit:.4f} s ({jit.attrs['nfev']} right-hand sides): "
                             f"{t_os / t_jit:.1f}x, max |q − q_OpenSim| "
                             f"{np.abs(jit[names].to_numpy()[-1] - q_os).max():.1e}")
            else:
                t_jit, sol = best(lambda: integrate_system(system, y0, np.array([0.0, t_end]), method="RK45-jit",
                                                           rtol=tol, atol=tol), repeat)
                parts.append(f"the compiled RK45 (simulate_muscles) {t_jit:.4f} s ({sol.nfev} right-hand sides): "
                             f"{t_os / t_jit:.1f}x, max |q − q_OpenSim| "
                             f"{np.abs(sol.y[:model.n_q, -1] - q_os).max():.1e}")
            print(f"  tolerance {tol:g}: " + "; ".join(parts))


def main(argv=None) -> int:
    from run import DEFAULT_CORPUS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = ap.parse_args(argv)
    block(args.repeat)
    corpus_runs(args.corpus, args.repeat, [("opensim-core/OpenSim/Simulation/Test/BouncingBall_HuntCrossley.osim", 1.0),
                                           ("opensim-core/OpenSim/Simulation/Test/BouncingBall_SmoothSphereHalfSpace.osim",
                                            1.0),
                                           ("opensim-models/Models/WalkerModel/WalkerModel.osim", 1.0)],
                (1e-6, 1e-9), passive=True)
    corpus_runs(args.corpus, args.repeat, [("opensim-models/Models/Jumper/DynamicJumperModel.osim", 0.2),
                                           ("opensim-models/Models/SoccerKick/SoccerKickingModel.osim", 0.2)],
                (1e-5, 1e-7), passive=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
