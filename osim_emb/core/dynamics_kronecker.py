"""The seed's dynamics written literally with Kronecker products (Eqs 126-147, 187), one state at a time.

Reference for :mod:`osim_emb.core.dynamics`; sizes grow as n_q^4, for small models only.
"""

from __future__ import annotations

import numpy as np

from osim_emb.core.calculus import commutation_matrix, vec
from osim_emb.core.kinematics_kronecker import SeedKinematics, d_closed_form, dprime_closed_form
from osim_emb.model import Model

__all__ = ["mass_matrix_eq145", "velocity_forces_eq126", "velocity_matrix_eq126", "gravity_eq187"]


def _frame_j(model: Model, i: int) -> np.ndarray:
    return model.frame_pseudo_inertia[i]


def mass_matrix_eq145(model: Model, q: np.ndarray) -> np.ndarray:
    """M = sum_i C_1^T (J_i (x) U_{nq,4}^T)(D_i D_i^T (x) I_4)(I_4 (x) U_{nq,4}) C_1 (Eqs 142, 145, 189)."""
    sk = SeedKinematics(model, q)
    nq = model.n_q
    c1 = np.kron(vec(np.eye(4)), np.eye(nq))
    u = commutation_matrix(nq, 4)
    m = np.zeros((nq, nq))
    for i in range(1, model.n_frames):
        j = _frame_j(model, i)
        if not np.any(j):
            continue
        d = d_closed_form(sk, i)
        m += c1.T @ np.kron(j, u.T) @ np.kron(d @ d.T, np.eye(4)) @ np.kron(np.eye(4), u) @ c1
    return m


def velocity_forces_eq126(model: Model, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """N qdot from the second part of Eq 126: component k = sum_i trace[(D'_i)^T (J_i (x) qdot^[2] e_k^T) D_i]."""
    sk = SeedKinematics(model, q)
    nq = model.n_q
    qd = np.asarray(qdot, dtype=float).reshape(-1, 1)
    q2 = np.kron(qd, qd)
    out = np.zeros(nq)
    for i in range(1, model.n_frames):
        j = _frame_j(model, i)
        if not np.any(j):
            continue
        d = d_closed_form(sk, i)
        dp = dprime_closed_form(sk, i)
        for k in range(nq):
            e = np.zeros((1, nq))
            e[0, k] = 1.0
            out[k] += np.trace(dp.T @ np.kron(j, q2 @ e) @ d)
    return out


def velocity_matrix_eq126(model: Model, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """N = sum_i Nbar_i (I_nq (x) qdot) with delta q^T Nbar_i qdot^[2] the second part of Eq 126.

    Nbar_i[k, (l, m)] = trace[(D'_i)^T (J_i (x) e_(l,m) e_k^T) D_i].
    """
    sk = SeedKinematics(model, q)
    nq = model.n_q
    qd = np.asarray(qdot, dtype=float).reshape(-1, 1)
    nbar = np.zeros((nq, nq * nq))
    for i in range(1, model.n_frames):
        j = _frame_j(model, i)
        if not np.any(j):
            continue
        d = d_closed_form(sk, i)
        dp = dprime_closed_form(sk, i)
        for k in range(nq):
            for lm in range(nq * nq):
                sel = np.zeros((nq * nq, nq))
                sel[lm, k] = 1.0
                nbar[k, lm] += np.trace(dp.T @ np.kron(j, sel) @ d)
    return nbar @ np.kron(np.eye(nq), qd)


def gravity_eq187(model: Model, q: np.ndarray) -> np.ndarray:
    """G = sum_i m_i ({r_cm^T | 1} (x) I_nq) D_i {g; 0} (Eqs 187, 197), with m_i {r_cm; 1} from J_i's last column."""
    sk = SeedKinematics(model, q)
    nq = model.n_q
    g4 = np.append(model.gravity, 0.0).reshape(4, 1)
    out = np.zeros((nq, 1))
    for i in range(1, model.n_frames):
        j = _frame_j(model, i)
        if j[3, 3] == 0:
            continue
        mr = j[:, 3].reshape(1, 4)  # m {r_cm^T | 1}
        out += np.kron(mr, np.eye(nq)) @ d_closed_form(sk, i) @ g4
    return out[:, 0]
