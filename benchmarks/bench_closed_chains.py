"""Closed chains: cost of solving g(f, q) = 0 and of the derivatives of f(q) by each method, per configuration.

    /work/venv/bin/python benchmarks/bench_closed_chains.py

For the five-bar (m = 2, n_q = 2), the four-bar (m = 3, n_q = 1) and Andrews' squeezer (m = 6, n_q = 1),
batches of N = 1 and N = 1000 configurations: Newton solve from the chain's guess, gradients and Hessians by
the projection method (Eqs 116-120), by the implicit-function theorem (LU), and by the computational molecule
(orders 2 and 4: one batched Newton solve at every abscissa), and the whole ChainVariable evaluation
(solve + projection) that a Model performs; and the five-bar model's kinematics B_i, D_i, D'_i (Eqs 75, 99)
with and without the chain solve.  Times are the best of a few repetitions, in microseconds per configuration.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from osim_emb.core import closed_chains as cc
from osim_emb.seeds.mechanisms import andrews as A
from osim_emb.seeds.mechanisms import linkages as lk
from _timing import best  # this folder's timing helper


def best_time(fn, repeat):
    return best(fn, repeat)[0]


def main():
    rng = np.random.default_rng(0)
    cases = {
        "five-bar (m=2, nq=2)": (lk.five_bar_chain(), lambda n: rng.uniform(-2, 2, (n, 2))),
        "four-bar (m=3, nq=1)": (lk.four_bar_chain(), lambda n: rng.uniform(-1.9, 1.9, (n, 1))),
        "Andrews (m=6, nq=1)": (A.andrews_chain(), lambda n: rng.uniform(-3, 9, (n, 1))),
    }
    rows = []
    for name, (chain, sample) in cases.items():
        cons = chain.constraints
        for n in (1, 1000):
            q = sample(n)
            chain.evaluate(q)  # warm up (and continuation guesses)
            f = chain.solve(q)
            cj = cons.evaluate(f, q, 2)
            rep = 20 if n == 1 else 3
            timings = {
                "guess + Newton solve": lambda: chain.solve(q),
                "constraint derivatives (order 2)": lambda: cons.evaluate(f, q, 2),
                "projection: gradients + Hessians": lambda: cc.projection_hessians(cj, cc.projection_gradients(cj)),
                "implicit (LU): gradients + Hessians": lambda: cc.implicit_derivatives(cj, 2),
                "molecule order 2 (h=1e-4)": lambda: cc.molecule_derivatives(cons, q, f, 1e-4, 2),
                "molecule order 4 (h=1e-3)": lambda: cc.molecule_derivatives(cons, q, f, 1e-3, 4),
                "ChainVariable evaluation (solve + projection)": lambda: chain.evaluate(q),
            }
            for what, fn in timings.items():
                rows.append({"mechanism": name, "N": n, "computation": what,
                             "us_per_configuration": 1e6 * best_time(fn, rep) / n})
    df = pd.DataFrame(rows)
    table = df.pivot_table(index=["mechanism", "computation"], columns="N", values="us_per_configuration",
                           sort=False)
    table.columns = [f"N={c} (us/config)" for c in table.columns]
    with pd.option_context("display.width", 200, "display.float_format", "{:.1f}".format):
        print(table.to_string())
    # five-bar kinematics: B_i (order 0), D_i (order 1), D'_i (order 2) per configuration (issue 2, Performance)
    from osim_emb.core.kinematics import forward_kinematics, joint_variables
    model = lk.five_bar_model()
    rows = []
    for n in (1, 1000):
        q = rng.uniform(-2, 2, (n, 2))
        jv = joint_variables(model, q, order=2)
        rep = 20 if n == 1 else 3
        for order, what in ((0, "B_i"), (1, "B_i, D_i"), (2, "B_i, D_i, D'_i")):
            rows.append({"N": n, "computation": f"{what} from given joint variables",
                         "us": 1e6 * best_time(lambda: forward_kinematics(model, q, order, variables=jv), rep) / n})
        rows.append({"N": n, "computation": "B_i, D_i, D'_i including the chain solve (Newton + projection)",
                     "us": 1e6 * best_time(lambda: forward_kinematics(model, q, 2), rep) / n})
    kt = pd.DataFrame(rows).pivot_table(index="computation", columns="N", values="us", sort=False)
    kt.columns = [f"N={c} (us/config)" for c in kt.columns]
    print("\nfive-bar model kinematics (4 frames, 2 coordinates)")
    with pd.option_context("display.width", 200, "display.float_format", "{:.1f}".format):
        print(kt.to_string())
    # pre-modeling cost (one sweep and fit)
    par = lk.FourBarParameters()
    cons = lk.four_bar_constraints(par)
    f0 = lk.four_bar_chain(par).solve([[-2.0]])[0]
    t = best_time(lambda: cc.premodel(cons, np.linspace(-2, 2, 401), f0, "spline"), 2)
    print(f"\npre-modeling, four-bar, 401 samples + natural cubic splines: {t:.3f} s")
    t = best_time(lambda: A.andrews_premodel(n_harmonics=20), 2)
    print(f"pre-modeling, Andrews, 629 samples + Fourier (20 harmonics):  {t:.3f} s")


if __name__ == "__main__":
    main()
