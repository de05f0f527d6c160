"""Cost of B_i, D_i = dB_i/dq and D'_i = d2B_i/dq2 per configuration, batched, for a 20-body chain
and the five-bar linkage; the literal Kronecker formulas (Eqs 75, 99) for comparison.

    python benchmarks/bench_kinematics.py
"""

import time

import numpy as np

from osim_emb.core import kinematics as kin
from osim_emb.core import kinematics_kronecker as kk
from osim_emb.core.synthetic import serial_chain_model


def per_config(model, n, order, repeat=3):
    q = np.random.default_rng(0).uniform(-1, 1, (n, model.n_q))
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        kin.forward_kinematics(model, q, order=order)
        best = min(best, time.perf_counter() - t)
    return best / n


def kronecker_per_config(model, repeat=2):
    q = np.random.default_rng(0).uniform(-1, 1, model.n_q)
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        sk = kk.SeedKinematics(model, q)
        kk.d_recursive(sk)
        kk.dprime_recursive(sk)
        best = min(best, time.perf_counter() - t)
    return best


def report(name, model):
    print(f"{name}: {model.n_joints} joints, {model.n_q} coordinates")
    for n in (1, 100, 1000):
        b = per_config(model, n, 0)
        d = per_config(model, n, 1)
        dd = per_config(model, n, 2)
        print(f"  N={n:5d}  B_i {b * 1e6:9.2f} us/config   + D_i {d * 1e6:9.2f}   + D'_i {dd * 1e6:9.2f}")
    k = kronecker_per_config(model)
    print(f"  literal Kronecker recursion (Eqs 74, 89), one config: {k * 1e3:.2f} ms "
          f"({k / per_config(model, 1000, 2):.0f}x the batched arrays at N=1000)")


def main():
    report("20-body serial chain", serial_chain_model(20))
    try:
        from osim_emb.seeds.mechanisms.five_bar import five_bar_model
        report("five-bar linkage", five_bar_model())
    except ImportError:
        pass


if __name__ == "__main__":
    main()
