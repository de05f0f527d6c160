"""Where the time of the compiled muscle-driven right-hand side goes (issue 15 item 3), without OpenSim.

For a model whose paths are fitted FunctionBasedPaths (``osim-emb fit-paths``), with the excitations of one of
``bench_muscle_driven.py``'s cases, the thread CPU time of one call (best of alternated rounds of compiled loops,
so that other jobs on a shared machine inflate the figures less):

* ``function_path_lengths`` (the fitted paths' L and R by their joint-variable program) and the number of
  polynomial nodes and of monomials built per call (those of one basis are built once, docs/functions.md);
* the whole right-hand side ``_rhs``, its path part ``_paths`` and the rest ``_rest`` (muscles, dynamics,
  coordinate forces).

    python benchmarks/profile_muscle_rhs.py                          # fits MoBL's paths first (about 1 min)
    python benchmarks/profile_muscle_rhs.py --model fitted.osim --case arm26-fitted
    python benchmarks/profile_muscle_rhs.py --model ../shared/models/arm26.osim --case arm26-fitted   # wrapped paths

A model with geometric (wrapped) paths, e.g. arm26 itself with the arm26 case's excitations, is timed the same way
without the fitted-path line (round 22 on arm26, load 1: the right-hand side 46.8 us, its six wrapped paths 35.8 us,
the rest 6.9 us).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))


def _best(loops: dict, rounds: int, calls: int) -> dict:
    """Thread CPU time of one call of each loop (each loop(n) makes n calls), best of ``rounds`` alternated rounds."""
    best = {k: np.inf for k in loops}
    for f in loops.values():
        f(5)
    for _ in range(rounds):
        for k, f in loops.items():
            t = time.thread_time()
            f(calls)
            best[k] = min(best[k], (time.thread_time() - t) / calls)
    return best


def main() -> None:
    sys.path.insert(0, str(HERE))
    import bench_muscle_driven as bench
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core._accel import njit
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import _muscle_list
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, _FunctionPaths
    from osim_emb.simulation.muscle_driven_jit import _paths, _rest, _rhs, compiled_plan, function_path_lengths

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a model with fitted paths (default: MoBL's paths fitted by fit-paths)")
    ap.add_argument("--case", default="mobl-fitted", choices=sorted(bench.FITTED_SOURCES),
                    help="the excitations of this bench_muscle_driven.py case")
    ap.add_argument("--rounds", type=int, default=25)
    args = ap.parse_args()
    if not args.model:
        print(f"fitting the paths of {bench.FITTED_SOURCES[args.case]} (osim-emb fit-paths, about a minute) ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.model) if args.model else bench.fitted_paths(bench.FITTED_SOURCES[args.case],
                                                                        Path(tmp) / "fitted.osim")
        model = load_osim(str(path))
    units = _muscle_list(model, None)
    fitted = all(getattr(u, "function_path", None) is not None for u in units)
    if fitted:
        program = _FunctionPaths(model, units)
        ints = program.args[0]
        on, nn = int(ints[K.H_OFF_NODES]), int(ints[K.H_NNODES])
        rows = np.asarray(ints[on:on + K.NODE_STRIDE * nn]).reshape(nn, K.NODE_STRIDE)
        rows = rows[rows[:, 0] == K.OP_MPOLY]
        built = sum(int(ints[r[3]]) for i, r in enumerate(rows)
                    if i == 0 or (r[1], r[3]) != (rows[i - 1][1], rows[i - 1][3]))
        print(f"{model.name}: {len(units)} units, {len(rows)} polynomial nodes, "
              f"{sum(int(ints[r[3]]) for r in rows)} terms, {built} monomials built a call")
    else:
        print(f"{model.name}: {len(units)} units on geometric paths (no fitted-path line)")

    @njit
    def lengths_loop(q, fb, cols, length, r, n):
        for _ in range(n):
            q[0] += 1e-12
            function_path_lengths(q, fb, cols, length, r)
        q[0] -= n * 1e-12

    system = MuscleDrivenSystem(model, bench.CASES[args.case][1])
    plan, why = compiled_plan(system)
    if plan is None:
        raise SystemExit(f"the compiled integrators cannot run this model: {why}")
    prog, geo, mus, clf, act = plan
    y = system.initial_state().copy()

    @njit
    def rhs_loop(y, n, prog, geo, mus, clf, act):
        s = 0.0
        for _ in range(n):
            y[0] += 1e-12
            s += _rhs(0.01, y, prog, geo, mus, clf, act)[0]
        y[0] -= n * 1e-12
        return s

    @njit
    def paths_loop(y, n, prog, geo):
        s = 0.0
        for _ in range(n):
            y[0] += 1e-12
            s += _paths(y, prog, geo)[0][0]
        y[0] -= n * 1e-12
        return s

    @njit
    def rest_loop(y, n, prog, geo, mus, clf, act):
        length, r = _paths(y, prog, geo)
        s = 0.0
        for _ in range(n):
            s += _rest(0.01, y, length, r, prog, mus, clf, act)[0]
        return s

    print("compiling the timing loops and timing them (about a minute) ...", flush=True)
    q = model.default_q.copy()
    cols = np.arange(len(units), dtype=np.int64)
    length, r = np.empty(len(units)), np.empty((model.n_q, len(units)))
    timed = {"function_path_lengths": lambda n: lengths_loop(q, program.args, cols, length, r, n)} if fitted else {}
    best = _best({**timed,
                  "right-hand side": lambda n: rhs_loop(y, n, prog, geo, mus, clf, act),
                  "  its paths": lambda n: paths_loop(y, n, prog, geo),
                  "  the rest": lambda n: rest_loop(y, n, prog, geo, mus, clf, act)}, args.rounds, 300)
    for k, v in best.items():
        print(f"{k:24s} {v * 1e6:7.2f} us")


if __name__ == "__main__":
    main()
