"""Synthetic models for tests and benchmarks: random trees with nonlinear multi-coordinate joints."""

from __future__ import annotations

import numpy as np

from osim_emb.core.functions import Composite, Fourier, Linear, Polynomial
from osim_emb.model import (
    PRISMATIC,
    REVOLUTE,
    Body,
    GeneralizedCoordinate,
    Joint,
    Model,
    homogeneous,
    rotation_about_axis,
)

__all__ = ["random_tree_model", "serial_chain_model", "random_rotation"]


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    axis = rng.normal(size=3)
    return rotation_about_axis(axis / np.linalg.norm(axis), rng.uniform(-np.pi, np.pi))


def _random_variable(rng: np.random.Generator, nq: int, nonlinear: bool):
    """A smooth joint variable of several coordinates (cross terms through a polynomial of a linear form)."""
    k = rng.integers(1, nq + 1)
    idx = rng.choice(nq, size=k, replace=False)
    a = np.zeros(nq)
    a[idx] = rng.uniform(-1.0, 1.0, size=k)
    lin = Linear(a, rng.uniform(-0.3, 0.3))
    if not nonlinear:
        return lin
    kind = rng.integers(0, 3)
    if kind == 0:
        outer = Polynomial(rng.uniform(-0.5, 0.5, size=4))
    elif kind == 1:
        outer = Fourier(2 * np.pi, 0.1, rng.uniform(-0.3, 0.3, 2), rng.uniform(-0.3, 0.3, 2), secular=1.0)
    else:
        return Composite(Linear([1.0, 0.5]), [Composite(Polynomial([0.3, 1.0, 0.0]), [lin]),
                                               Composite(Fourier(3.0, 0.0, [0.2], [0.1], 0.7), [lin])])
    return Composite(outer, [lin])


def random_tree_model(n_joints: int = 8, n_q: int = 3, seed: int = 0, nonlinear: bool = True,
                      prismatic_fraction: float = 0.3) -> Model:
    """A random tree of revolute and prismatic joints with random offsets, bodies and joint functions."""
    rng = np.random.default_rng(seed)
    joints = []
    bodies = []
    for i in range(1, n_joints + 1):
        parent = int(rng.integers(0, i))
        kind = PRISMATIC if rng.random() < prismatic_fraction else REVOLUTE
        axis = rng.normal(size=3)
        offset = homogeneous(random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
        joints.append(Joint(f"j{i}", parent, kind, axis, _random_variable(rng, n_q, nonlinear), offset))
        if rng.random() < 0.8:
            m = rng.uniform(0.5, 3.0)
            l = rng.uniform(0.01, 0.1, 3)
            inertia = np.diag([l[1] + l[2], l[0] + l[2], l[0] + l[1]]) * m
            r = random_rotation(rng)
            bodies.append(Body(f"b{i}", i, m, rng.uniform(-0.2, 0.2, 3), r @ inertia @ r.T,
                               homogeneous(random_rotation(rng), rng.uniform(-0.1, 0.1, 3))))
    coords = [GeneralizedCoordinate(f"q{k}", (-np.pi, np.pi), 0.0) for k in range(n_q)]
    return Model(f"random_tree_{n_joints}_{seed}", coords, joints, bodies, gravity=[0.0, -9.81, 0.0])


def serial_chain_model(n_links: int = 20, link_length: float = 0.3, mass: float = 1.0) -> Model:
    """A planar-in-3D serial chain of revolute joints about z, one coordinate per joint, slender links."""
    joints, bodies, coords = [], [], []
    for i in range(1, n_links + 1):
        offset = homogeneous(None, [link_length if i > 1 else 0.0, 0.0, 0.0])
        a = np.zeros(n_links)
        a[i - 1] = 1.0
        joints.append(Joint(f"joint{i}", i - 1, REVOLUTE, [0.0, 0.0, 1.0], Linear(a, 0.0), offset))
        inertia = np.diag([1e-4, mass * link_length ** 2 / 12, mass * link_length ** 2 / 12])
        bodies.append(Body(f"link{i}", i, mass, [link_length / 2, 0.0, 0.0], inertia))
        coords.append(GeneralizedCoordinate(f"theta{i}", (-np.pi, np.pi), 0.0))
    return Model(f"serial_chain_{n_links}", coords, joints, bodies, gravity=[0.0, -9.81, 0.0])
