"""Timing of the batched closed forms of the planar chain (osim_emb.seeds.planar).

Run:  python benchmarks/bench_planar_chain.py
Prints the time per state of joint_torques + joint_reactions (Eqs 9, 23) and of the contribution table for
random chains of n = 2..8 links with 2n muscles, N = 10 000 states (term tables built beforehand).
"""

from __future__ import annotations

import time

import numpy as np

from osim_emb.seeds.planar import Link, Muscle, PlanarChain, joint_reactions, joint_torques
from osim_emb.seeds.planar import contributions


def chain_of(n: int, rng) -> PlanarChain:
    links = tuple(Link(length=0.3, mass=1.0, com_distance=0.15, com_angle=0.1, inertia=0.01, contact_distance=0.2)
                  for _ in range(n + 1))
    muscles = []
    for k in range(2 * n):
        a = int(rng.integers(0, n))
        b = int(rng.integers(a + 1, n + 1))
        muscles.append(Muscle(f"m{k}", a, b, (0.1, 0.02), (0.05, 0.02)))
    return PlanarChain(links, tuple(muscles))


def main(N: int = 10_000) -> None:
    rng = np.random.default_rng(0)
    print(f"{'n':>3} {'terms':>6} {'closed forms (us/state)':>24} {'contributions (us/state)':>25}")
    for n in range(2, 9):
        ch = chain_of(n, rng)
        th, dth, ddth = (rng.normal(size=(N, n)) for _ in range(3))
        T = rng.uniform(0, 100, (N, ch.n_muscles))
        R, g = rng.uniform(0, 10, (N, n + 1)), rng.normal(size=(N, n + 1))
        joint_torques(ch, th[:1], dth[:1], ddth[:1], R[:1], g[:1])
        joint_reactions(ch, th[:1], dth[:1], ddth[:1], T[:1], R[:1], g[:1])
        t0 = time.perf_counter()
        joint_torques(ch, th, dth, ddth, R, g)
        joint_reactions(ch, th, dth, ddth, T, R, g)
        t1 = time.perf_counter()
        contributions(ch, th[:1000], dth[:1000], ddth[:1000], T[:1000], R[:1000], g[:1000])
        t2 = time.perf_counter()
        from osim_emb.seeds.planar import compiled_terms

        terms = len(compiled_terms(ch, "torque", "distal").terms) + len(compiled_terms(ch, "reaction", "distal").terms)
        print(f"{n:>3} {terms:>6} {1e6 * (t1 - t0) / N:>24.2f} {1e6 * (t2 - t1) / 1000:>25.2f}")


if __name__ == "__main__":
    main()
