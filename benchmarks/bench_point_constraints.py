"""Simulations of models with point, point-on-line, distance and weld constraint loops, timed in one run against
OpenSim's Manager: the loops solved in the compiled right-hand side (an OP_FRAMECHAIN program node) against the
same loops solved in Python (``frame_chains_in_python``: the route every such model took before; its
``ClosedChain`` on the numpy constraint jets of core.point_constraints, an external function of the program).

* opensim-models' BouncingBlock (a free block on two PointOnLineConstraints, a leg on two pins, Hunt-Crossley
  contact, a bushing, a coordinate limit), opensim-core's knee_patella_ligament (a PointConstraint closing the
  patella, ligaments) and Neck3dof_point_constraint (24 of 27 coordinates solved from three), from their default
  states, when the model corpus of validation/model_corpus/run.py is extracted (``--corpus``);
* per model and tolerance 1e-6, 1e-9 and 1e-10 (rtol = atol, ``simulate``'s default 1e-10; the Manager's accuracy): OpenSim's Manager (the time of its
  ``integrate`` calls alone, model loading and ``initSystem`` left out), ``simulate`` (SciPy's DOP853, the whole
  call) with the loops compiled and in Python, and ``simulate --method RK45-jit`` (the whole call; refused before),
  each the best of ``repeat`` after a warm-up call (numba's compilation left out), with the largest coordinate
  difference to OpenSim's run at that accuracy and between the two routes.

    python benchmarks/bench_point_constraints.py [--repeat 3] [--corpus /tmp/osim_emb_model_corpus] [--t-end 0.1]

Prints times and ratios; nothing is asserted (tests/test_point_constraints.py checks the numbers).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "validation" / "model_corpus"))
from _timing import best  # noqa: E402  (this folder's timing helper)

MODELS = ("opensim-models/Models/BouncingBlock/bouncing_block.osim",
          "opensim-core/OpenSim/Simulation/Test/knee_patella_ligament.osim",
          "opensim-core/OpenSim/Tools/Test/Neck3dof_point_constraint.osim")


def run(path: Path, t_end: float, tolerances, repeat: int) -> None:
    from osim_emb.core.functions.program import frame_chains_in_python
    from osim_emb.io import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.motions import simulate
    model = load_osim(path)
    with frame_chains_in_python():  # its programs are built (and cached on it) inside the block: the loops in Python
        python_model = load_osim(path)
        simulate(python_model, 1e-3, n_output=2)
    names = model.coordinate_names
    print(f"{path.name}: {model.n_q} coordinates, {len(model.dependent_coordinates)} dependent, {t_end} s")
    for tol in tolerances:
        r = min((opensim_muscle_simulation(str(path), [0.0, t_end], {}, accuracy=tol, own_controllers=False)
                 for _ in range(repeat)), key=lambda r: r["seconds"])
        t_os = r["seconds"]
        q_os = r["q"][-1][[r["names"].index(c) for c in names]]

        def sim(m, method="DOP853"):
            return simulate(m, t_end, n_output=2, rtol=tol, atol=tol, method=method)
        t_c, tab_c = best(lambda: sim(model), repeat)
        with frame_chains_in_python():  # the motion table's dependent coordinates in Python too
            t_p, tab_p = best(lambda: sim(python_model), max(1, repeat // 3))
        t_j, tab_j = best(lambda: sim(model, "RK45-jit"), repeat)
        q_c, q_p, q_j = (t[names].to_numpy()[-1] for t in (tab_c, tab_p, tab_j))
        print(f"  tolerance {tol:g}: OpenSim's Manager {t_os:.4f} s; simulate (DOP853) loops compiled {t_c:.4f} s "
              f"({tab_c.attrs['nfev']} right-hand sides, |q - q_OpenSim| {np.abs(q_c - q_os).max():.1e}): "
              f"{t_os / t_c:.1f}x OpenSim; loops in Python {t_p:.3f} s (|q - q_compiled| "
              f"{np.abs(q_p - q_c).max():.1e}): compiled {t_p / t_c:.0f}x faster; RK45-jit {t_j:.4f} s "
              f"({tab_j.attrs['nfev']} right-hand sides, |q - q_OpenSim| {np.abs(q_j - q_os).max():.1e}): "
              f"{t_os / t_j:.1f}x OpenSim")


def main(argv=None) -> int:
    from run import DEFAULT_CORPUS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--t-end", type=float, default=0.1)
    args = ap.parse_args(argv)
    for rel in MODELS:
        path = args.corpus / rel
        if not path.exists():
            print(f"{rel}: not in {args.corpus} (extract the corpus: validation/model_corpus/run.py)")
            continue
        run(path, args.t_end, (1e-6, 1e-9, 1e-10), args.repeat)  # 1e-10: simulate's default tolerances
    return 0


if __name__ == "__main__":
    sys.exit(main())
