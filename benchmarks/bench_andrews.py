"""Andrews' squeezer: computing time of the ODE in beta (seed's method) and of the index-1 DAE at equal accuracy.

    /work/venv/bin/python benchmarks/bench_andrews.py [--repeat 3]

Every method is integrated on [0, 0.03] with SciPy's DOP853 at rtol = atol = 1e-4 ... 1e-12; its error is
max(|beta - beta_ref| / |beta_ref|, |beta' - beta'_ref| / |beta'_ref|) at t = 0.03 against a DAE solution at
rtol = atol = 1e-13.  For each target accuracy the cheapest run of each method that reaches it is taken, and the
time ratio DAE / ODE is printed (the seed reports about 4 with its MATLAB implementation and TR-BDF2), together
with the ratio of right-hand-side evaluations, which does not depend on the cost of one evaluation.

Methods: ODE (b) exact chain (Newton + projection at every evaluation; with numba the compiled model, chain,
dynamics and spring in one kernel call, else the numpy dynamics_terms); ODE (a) Fourier pre-model of the joint
variables (20 harmonics) through the same path; ODE (a') the reduced
equation m(beta) beta'' + c(beta) beta'^2 = tau(beta) pre-modeled (its coefficients sampled from dynamics_terms
and fitted, 40 harmonics; the counterpart of the seed's symbolic ODE); DAE index-1 in seven coordinates with
the reference's hand-written M(q), f(q, qdot), g(q), without and with Baumgarte stabilization.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp

from osim_emb.seeds.mechanisms import andrews as A

T = 0.03
RTOLS = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12]
TARGETS = [1e-4, 1e-6, 1e-8]


def run(fun, y0, rtol, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        sol = solve_ivp(fun, (0, T), y0, method="DOP853", rtol=rtol, atol=rtol)
        best = min(best, time.perf_counter() - t0)
    return sol, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="repetitions per run (the best time is kept)")
    args = ap.parse_args()
    par = A.AndrewsParameters()
    ref = solve_ivp(A.dae_rhs(par), (0, T), A.dae_initial_state(), method="DOP853", rtol=1e-13, atol=1e-13)
    b_ref, bd_ref = ref.y[0, -1], ref.y[7, -1]
    chain = A.andrews_chain(par)
    methods = {
        "ODE (b) exact chain": (A.reduced_rhs(A.andrews_model(par, chain.variables), par), np.array([A.Q0[0], 0.0]), 1),
        "ODE (a) Fourier, 20 harmonics": (A.reduced_rhs(A.andrews_model(par, A.andrews_premodel(par, 20)), par),
                                          np.array([A.Q0[0], 0.0]), 1),
        "ODE (a') reduced equation, 40 harmonics": (
            A.reduced_equation_premodel(A.andrews_model(par, chain.variables), par).rhs(),
            np.array([A.Q0[0], 0.0]), 1),
        "DAE index-1": (A.dae_rhs(par), A.dae_initial_state(), 7),
        "DAE index-1 + Baumgarte 2000/s": (A.dae_rhs(par, 2e3, 2e3), A.dae_initial_state(), 7),
    }
    rows = []
    for name, (fun, y0, iv) in methods.items():
        fun(0.0, y0)  # warm up
        for rtol in RTOLS:
            sol, sec = run(fun, y0, rtol, args.repeat)
            err = max(abs(sol.y[0, -1] - b_ref) / abs(b_ref), abs(sol.y[iv, -1] - bd_ref) / abs(bd_ref))
            rows.append({"method": name, "rtol": rtol, "error": err, "nfev": sol.nfev, "steps": sol.t.size - 1,
                         "seconds": sec, "ms_per_eval": 1e3 * sec / sol.nfev})
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3g}".format):
        print(df.to_string(index=False))
    print()
    out = []
    for target in TARGETS:
        best = {}
        for name in methods:
            ok = df[(df.method == name) & (df.error <= target)]
            if len(ok):
                best[name] = ok.loc[ok.seconds.idxmin()]
        for dae in ("DAE index-1", "DAE index-1 + Baumgarte 2000/s"):
            for ode in ("ODE (b) exact chain", "ODE (a) Fourier, 20 harmonics",
                        "ODE (a') reduced equation, 40 harmonics"):
                if dae in best and ode in best:
                    out.append({"target accuracy": target, "DAE": dae, "ODE": ode,
                                "time DAE (s)": best[dae].seconds, "time ODE (s)": best[ode].seconds,
                                "time ratio DAE/ODE": best[dae].seconds / best[ode].seconds,
                                "evaluations DAE/ODE": best[dae].nfev / best[ode].nfev})
    with pd.option_context("display.width", 200, "display.float_format", "{:.3g}".format):
        print(pd.DataFrame(out).to_string(index=False))
    print(f"\nODE (b) exact chain through the general dynamics (compiled) against the "
          "DAE index-1, time ratio DAE/ODE (goal >= 4):")
    for row in out:
        if row["DAE"] == "DAE index-1" and row["ODE"] == "ODE (b) exact chain":
            print(f"  target {row['target accuracy']:.0e}: {row['time ratio DAE/ODE']:.1f}  "
                  f"({row['time DAE (s)']:.3g} s / {row['time ODE (s)']:.3g} s)")


if __name__ == "__main__":
    main()
