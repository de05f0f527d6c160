"""Numerical proofs of the closed forms (seed: planar chain, Eqs 4, 8-13, 20-24, Appendix A).

Writes, in validation/planar_chain/results/:
  agreement.csv     largest relative differences of Eq 9, Eq 10 (reactions) and Eq 23, Eq 24 (torques) from
                    OpenSim (same chain built through the API) and from an independent recursive Newton-Euler
                    solution (tests/test_planar_chain_reference.py), for random chains n = 1..6 and for the
                    finger and leg examples along their tasks; also Eq 9 - Eq 10 and Eq 23 - Eq 24.
  term_counts.csv   inertial terms of tau_k counted from the symbolic term table (Appendix A: 3, 7 for n = 2;
                    5, 13, 22 for n = 3), n = 1..6, distal (Eq 23) and proximal (Eq 24) forms.
  appendix_a_terms_n2.csv, appendix_a_terms_n3.csv   the printed monomials of Eq 13/23 for slender links.
  timing.csv        evaluation time of joint_reactions + joint_torques for a batch of states.

Run:  python validation/planar_chain/verify_closed_forms.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests"))
import _common  # noqa: E402
from _common import OUT  # noqa: E402
from test_planar_chain_reference import random_chain, random_states, recursive_newton_euler  # noqa: E402

from osim_emb.seeds.planar import (  # noqa: E402
    Link,
    PlanarChain,
    count_inertial_terms,
    joint_reactions,
    joint_torques,
    muscle_torques,
    term_table,
    with_base_equilibrium,
)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def compare(label, chain, th, dth, ddth, T, R, g, with_opensim=True):
    rows = []
    p9 = joint_reactions(chain, th, dth, ddth, T, R, g, data_set="distal")
    p10 = joint_reactions(chain, th, dth, ddth, T, R, g, data_set="proximal")
    t23 = joint_torques(chain, th, dth, ddth, R, g, data_set="distal")
    t24 = joint_torques(chain, th, dth, ddth, R, g, data_set="proximal")
    tm = muscle_torques(chain, th, T)
    phi_ne, m_ne = recursive_newton_euler(chain, th, dth, ddth, T, R, g)
    refs = {"recursive Newton-Euler": {"phi": phi_ne, "tau": tm + m_ne, "tau_muscle": t23 - m_ne}}
    if with_opensim:
        from osim_emb.opensim.planar_chain import opensim_inverse_dynamics

        refs["OpenSim"] = opensim_inverse_dynamics(chain, th, dth, ddth, T, R, g)
    base = dict(case=label, n=chain.n, muscles=chain.n_muscles, max_span=chain.max_span, states=th.shape[0])
    for ref_name, ref in refs.items():
        rows.append({**base, "reference": ref_name, "quantity": "reaction, Eq 9", "max_rel_diff": rel(p9, ref["phi"])})
        rows.append({**base, "reference": ref_name, "quantity": "reaction, Eq 10", "max_rel_diff": rel(p10, ref["phi"])})
        rows.append({**base, "reference": ref_name, "quantity": "torque, Eq 23", "max_rel_diff": rel(t23, ref["tau"])})
        rows.append({**base, "reference": ref_name, "quantity": "torque, Eq 24", "max_rel_diff": rel(t24, ref["tau"])})
        rows.append({**base, "reference": ref_name, "quantity": "muscle torque, Eq 22",
                     "max_rel_diff": rel(tm, ref["tau_muscle"])})
    rows.append({**base, "reference": "Eq 10", "quantity": "reaction, Eq 9", "max_rel_diff": rel(p9, p10)})
    rows.append({**base, "reference": "Eq 24", "quantity": "torque, Eq 23", "max_rel_diff": rel(t23, t24)})
    return rows


def main():
    global OUT
    OUT = _common.parse_out(__doc__.split("\n")[0])
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(1, 7):
        rng = np.random.default_rng(500 + n)
        chain = random_chain(rng, n, n_muscles=2 * n + 1)
        th, dth, ddth, T, R, g = random_states(rng, chain, 50)
        R, g = with_base_equilibrium(chain, th, dth, ddth, R, g)
        rows += compare(f"random chain n={n}", chain, th, dth, ddth, T, R, g)
    # the examples, along their tasks
    import finger
    import leg

    fch = finger.build_finger()
    t, th, dth, ddth, F = finger.task()
    R = np.zeros((len(t), 5))
    g = np.zeros((len(t), 5))
    R[:, 4], g[:, 4] = F, np.pi / 2 - th[:, 3]
    R, g = with_base_equilibrium(fch, th, dth, ddth, R, g)
    T = np.random.default_rng(1).uniform(0, 50, (len(t), fch.n_muscles))
    rows += compare("finger task (random tensions)", fch, th, dth, ddth, T, R, g)
    lch, ref = leg.build_leg()
    t, th, dth, ddth = leg.task(lch, ref)
    R, g = with_base_equilibrium(lch, th, dth, ddth)
    T = np.random.default_rng(2).uniform(0, 1000, (len(t), lch.n_muscles))
    rows += compare("leg task (random tensions)", lch, th, dth, ddth, T, R, g)
    agreement = pd.DataFrame(rows)
    agreement.to_csv(OUT / "agreement.csv", index=False, float_format="%.3e")

    counts = []
    for n in range(1, 7):
        rods = PlanarChain(tuple(Link.slender_rod(0.4, 1.0) for _ in range(n + 1)))
        for data_set, eq in (("distal", "Eq 23"), ("proximal", "Eq 24")):
            for k, c in count_inertial_terms(rods, data_set).items():
                counts.append(dict(n=n, joint=k, form=eq, inertial_terms=c))
    counts = pd.DataFrame(counts)
    counts.to_csv(OUT / "term_counts.csv", index=False)
    for n in (2, 3):
        rods = PlanarChain(tuple(Link.slender_rod(0.4, 1.0) for _ in range(n + 1)))
        tab = term_table(rods, "torque", "distal")
        tab.to_csv(OUT / f"appendix_a_terms_n{n}.csv", index=False, float_format="%.6g")

    timing = []
    for n, N in ((3, 10_000), (6, 10_000)):
        rng = np.random.default_rng(n)
        chain = random_chain(rng, n, n_muscles=2 * n)
        th, dth, ddth, T, R, g = random_states(rng, chain, N)
        joint_torques(chain, th[:2], dth[:2], ddth[:2], R[:2], g[:2])  # build the term tables once
        joint_reactions(chain, th[:2], dth[:2], ddth[:2], T[:2], R[:2], g[:2])
        t0 = time.perf_counter()
        joint_torques(chain, th, dth, ddth, R, g)
        joint_reactions(chain, th, dth, ddth, T, R, g)
        dt = time.perf_counter() - t0
        timing.append(dict(n=n, muscles=chain.n_muscles, states=N, seconds=dt, microseconds_per_state=1e6 * dt / N))
    pd.DataFrame(timing).to_csv(OUT / "timing.csv", index=False, float_format="%.4g")

    pd.set_option("display.width", 200)
    summary = agreement.groupby(["reference", "quantity"])["max_rel_diff"].max()
    print(summary.to_string())
    print(counts[counts.n <= 3].pivot_table(index=["n", "joint"], columns="form", values="inertial_terms"))


if __name__ == "__main__":
    main()
