"""Speed of the equations of motion (issue 6), all ratios measured in one run.

(a) Cost of one right-hand side -- M, N q̇, G and the solve for q̈ at one state -- through the package's
    ``ode_rhs`` (the compiled model), against OpenSim's ``realizeAcceleration`` on the same model with all
    forces disabled; and the cost a state of ``forward_dynamics`` over a batch of 1000 states, on one of numba's
    threads and on all of them.
(b) A 1 s passive swing of the MoBL shoulder and elbow (wrist and forearm locked, forces off): OpenSim's
    ``Manager`` (RungeKuttaMerson) at accuracy 1e-8 and 1e-10 against the package's ODE with
    ``solve_ivp``.  Each run's final state is compared with a tight reference (the package's ODE, DOP853,
    rtol = atol = 1e-13); for each OpenSim accuracy the package uses the cheapest DOP853 tolerance whose
    final-state errors in q and q̇ are both no larger than OpenSim's, and the time ratio is printed.
(c) The DAE of the same model in full coordinates with Baumgarte stabilization (``osim_emb.simulation.dae``), run
    at the same tolerances and compared the same way.

    python benchmarks/bench_dynamics.py            # about 15 s
    python benchmarks/bench_dynamics.py --no-opensim

Needs the reference models ($OSIM_EMB_MODELS, default ../shared/models beside the repository) and opensim
for the comparison.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from osim_emb.core import dynamics as dyn
from osim_emb.core._accel import thread_count
from osim_emb.io import load_osim, read_osim
from osim_emb.io.osim_writer import write_osim

HERE = Path(__file__).resolve().parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))
LOCKED = ("deviation", "flexion", "pro_sup")
TOLERANCES = [10.0 ** (-k / 2) for k in range(10, 25)]  # 1e-5 ... 1e-12, half decades


def write_locked_mobl(folder: Path) -> Path:
    """MoBL with the wrist and forearm locked (deviation, flexion, pro_sup): shoulder and elbow remain."""
    doc = read_osim(MODELS / "mobl_arms_holzbaur.osim")
    for c in doc.coordinates:
        if c.name in LOCKED:
            c.locked = True
    path = folder / "mobl_locked.osim"
    write_osim(doc, path)
    return path


def per_call(fn, min_time=0.3, max_calls=200_000) -> float:
    """Seconds per call: the best of 3 loops, each running for about ``min_time``."""
    fn()
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if dt > min_time / 3 or n >= max_calls:
            break
        n *= 4
    best = dt / n
    for _ in range(2):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def opensim_reference(path: Path, model):
    from osim_emb.opensim.bridge import OpenSimReference
    return OpenSimReference(str(path), model, disable_forces=True)


def rhs_costs(path: Path, with_opensim: bool) -> dict:
    model = load_osim(path)
    rng = np.random.default_rng(0)
    lo, hi = model.coordinate_ranges.T
    q = rng.uniform(lo, hi)
    qd = rng.normal(size=model.n_q) * 0.5
    y = np.concatenate([q, qd])
    out = {"model": model}
    fun = dyn.ode_rhs(model)
    out["numba"] = per_call(lambda: fun(0.0, y))
    qb = rng.uniform(lo, hi, (1000, model.n_q))
    qdb = rng.normal(size=qb.shape) * 0.5
    threads = thread_count()
    import numba
    try:
        numba.set_num_threads(1)
        out["batch1"] = per_call(lambda: dyn.forward_dynamics(model, qb, qdb)) / len(qb)
    finally:
        numba.set_num_threads(threads)
    out["batch"] = per_call(lambda: dyn.forward_dynamics(model, qb, qdb)) / len(qb)
    out["threads"] = threads
    if with_opensim:
        import opensim as osim
        ref = opensim_reference(path, model)
        ref.set_configuration(q, qd)
        state, m_os = ref.state, ref.model_os
        stage = osim.Stage(osim.Stage.Position)
        m_os.realizeAcceleration(state)

        def realize():
            state.invalidateAllCacheAtOrAbove(stage)
            m_os.realizeAcceleration(state)

        out["opensim"] = per_call(realize, min_time=0.5)
        qv, uv = state.getQ(), state.getU()

        def from_python():
            state.setQ(qv)
            state.setU(uv)
            m_os.realizeAcceleration(state)
            state.getUDot()

        out["opensim_py"] = per_call(from_python, min_time=0.5)
    return out


def package_swing(fun, y0, t_end, method, tol, repeat=3):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        sol = solve_ivp(fun, (0.0, t_end), y0, method=method, rtol=tol, atol=tol)
        best = min(best, time.perf_counter() - t)
    if not sol.success:
        raise RuntimeError(sol.message)
    return sol.y[:, -1], best, sol.nfev


def opensim_swing(path: Path, model, q0, qd0, t_end, accuracy, repeat=1):
    import opensim as osim
    ref = opensim_reference(path, model)
    best = np.inf
    for _ in range(repeat):
        ref.set_configuration(q0, qd0)
        state = osim.State(ref.state)
        state.setTime(0.0)
        manager = osim.Manager(ref.model_os)
        manager.setIntegratorAccuracy(accuracy)
        manager.initialize(state)
        t = time.perf_counter()
        final = manager.integrate(t_end)
        best = min(best, time.perf_counter() - t)
        steps = manager.getStatesTable().getNumRows() - 1
    q = np.array([ref.coords.get(n).getValue(final) for n in model.coordinate_names])
    u = np.array([ref.coords.get(n).getSpeedValue(final) for n in model.coordinate_names])
    return q, u, best, steps


def dae_simulator():
    """The DAE in full coordinates with constraint stabilization (``osim_emb.simulation.dae``)."""
    try:
        from osim_emb.simulation.dae import simulate_final_state
    except ImportError:
        return None
    return simulate_final_state


def errors(q, u, ref, nq):
    return np.abs(q - ref[:nq]).max(), np.abs(u - ref[nq:]).max()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-opensim", action="store_true", help="package only")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--accuracies", type=float, nargs="+", default=[1e-8, 1e-10])
    args = ap.parse_args(argv)
    with_opensim = not args.no_opensim
    if with_opensim:
        try:
            import opensim  # noqa: F401
        except ImportError:
            print("opensim is not installed: package only (pip install 'osim-emb[opensim]')")
            with_opensim = False
    tmp = tempfile.TemporaryDirectory()
    locked = write_locked_mobl(Path(tmp.name))
    model = load_osim(locked)
    from osim_emb.core.compiled import compiled_model
    t = time.perf_counter()
    fast = compiled_model(model)
    t_compile_model = time.perf_counter() - t
    t = time.perf_counter()
    fast.rhs(np.concatenate([model.default_q, np.zeros(model.n_q)]))
    t_first = time.perf_counter() - t
    print(f"{fast}\n  model compiled in {t_compile_model * 1e3:.1f} ms; first kernel call (numba compile, or "
          f"load from its disk cache) {t_first:.2f} s")

    # (a) one right-hand side -------------------------------------------------------------------
    print("\n(a) one right-hand side (M, N q̇, G, solve for q̈) at a random state; OpenSim with forces disabled")
    print(f"  {'model':<38} {'n_q':>3} {'package':>10} {'OpenSim':>10} {'(+Python)':>10} {'OpenSim/package':>16} "
          f"{'batch, 1 thread':>16} {'batch, all':>12}")
    for label, path in (("MoBL, wrist and forearm locked", locked), ("MoBL (mobl_arms_holzbaur)", MODELS /
                        "mobl_arms_holzbaur.osim"), ("leg6dof9musc", MODELS / "leg6dof9musc.osim")):
        c = rhs_costs(path, with_opensim)
        us = lambda key: f"{c[key] * 1e6:8.2f}us" if key in c else f"{'-':>10}"  # noqa: E731
        ratio_os = f"{c['opensim'] / c['numba']:16.1f}" if "opensim" in c else f"{'-':>16}"
        print(f"  {label:<38} {c['model'].n_q:>3} {us('numba')} {us('opensim')} {us('opensim_py')} {ratio_os} "
              f"{us('batch1'):>16} {us('batch'):>12}")
    print(f"  batch: forward_dynamics over 1000 random states, time a state, on 1 and on {c['threads']} of numba's "
          "threads.")
    print("  OpenSim: realizeAcceleration after invalidating the state from Stage::Position (C++ only); "
          "(+Python): setQ, setU, realizeAcceleration, getUDot from Python.")

    # (b) passive swing ---------------------------------------------------------------------------
    t_end = args.t_end
    q0 = model.default_q
    qd0 = np.zeros(model.n_q)
    y0 = np.concatenate([q0, qd0])
    nq = model.n_q
    fun = dyn.ode_rhs(model)
    print(f"\n(b) passive swing of the MoBL shoulder and elbow, {t_end:g} s from the default pose at rest "
          f"({', '.join(model.coordinate_names)}), forces off")
    y_ref, t_ref, n_ref = package_swing(fun, y0, t_end, "DOP853", 1e-13, repeat=1)
    print(f"  tight reference: package ODE, DOP853 rtol = atol = 1e-13: {n_ref} evaluations, {t_ref:.3f} s")
    candidates = []
    for tol in TOLERANCES:
        y, sec, nfev = package_swing(fun, y0, t_end, "DOP853", tol, repeat=3)
        candidates.append((tol, *errors(y[:nq], y[nq:], y_ref, nq), sec, nfev))
    print("  package ODE (DOP853):  tol      error q (rad)  error q̇ (rad/s)  time (s)  evaluations")
    for tol, eq, eu, sec, nfev in candidates:
        print(f"  {'':22}{tol:8.1e}  {eq:12.2e}  {eu:14.2e}  {sec:9.4f}  {nfev:8d}")
    if not with_opensim:
        return
    dae = dae_simulator()
    print("  OpenSim Manager (RungeKuttaMerson) against the package's ODE at equal or better final-state accuracy:")
    for acc in args.accuracies:
        q, u, sec, steps = opensim_swing(locked, model, q0, qd0, t_end, acc)
        eq, eu = errors(q, u, y_ref, nq)
        ok = [c for c in candidates if c[1] <= eq and c[2] <= eu]
        print(f"   accuracy {acc:.0e}: OpenSim {sec:.3f} s ({steps} steps), error q {eq:.2e} rad, q̇ {eu:.2e} rad/s")
        if not ok:
            print("     no package tolerance in the scan reaches that accuracy")
            continue
        tol, pq, pu, psec, nfev = min(ok, key=lambda c: c[3])
        print(f"     package DOP853 tol {tol:.1e}: {psec:.4f} s ({nfev} evaluations), error q {pq:.2e} rad, "
              f"q̇ {pu:.2e} rad/s  ->  OpenSim / package = {sec / psec:.0f}x")
        if dae is not None:
            dq, du, dsec, dn = dae(str(locked), q0, qd0, t_end, acc)
            deq, deu = errors(np.asarray(dq), np.asarray(du), y_ref, nq)
            okd = [c for c in candidates if c[1] <= deq and c[2] <= deu]
            line = f"     DAE (full coordinates) tol {acc:.0e}: {dsec:.4f} s ({dn} evaluations), error q {deq:.2e}"
            if okd:
                best = min(okd, key=lambda c: c[3])
                line += f"  ->  DAE / package = {dsec / best[3]:.1f}x"
            print(line)
    if dae is None:
        print("  DAE in full coordinates: osim_emb.simulation.dae could not be imported")


if __name__ == "__main__":
    main()
