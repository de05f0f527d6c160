"""The seed's kinematics written literally with the Kronecker calculus (Eqs 38-99, 177-182).

One configuration at a time, dense matrices in the layout of Definition 1.
This is the reference implementation the fast module :mod:`osim_emb.core.kinematics`
is tested against; it is meant for small models (sizes grow as n_q^2).  Its joint variables come from
each joint function's own ``evaluate``, not from the compiled joint-variable program.

Two printed equations are corrected here (both checked against finite
differences in the tests):

* Eq 88/89: the derivative of (^{pr(i)}_iA_4^T (x) I) is
  (^A_i^T ^{pr(i)}_iA_4^T) (x) I (x) grad f_i (from Eqs 69 and 86-87); the print
  has W_ii^T = ^A_i^T B_i in place of ^A_i^T ^{pr(i)}_iA_4^T.
* Eq 99 (garbled): with Wbar_jsi = d^2(^0_iA_4)/(df_j df_s), the product of the
  local transforms along the chain with ^A inserted after joints j and s,

      D'_i = sum_j sum_s Wbar_jsi^T (x) (grad f_j (x) grad f_s) + sum_j W_ji^T (x) vec(H_j).
"""

from __future__ import annotations

import numpy as np

from osim_emb.core.calculus import commutation_matrix
from osim_emb.model import Model

__all__ = [
    "SeedKinematics",
    "local_transforms",
    "global_transforms",
    "w_matrix",
    "d_closed_form",
    "d_recursive",
    "dprime_closed_form",
    "dprime_recursive",
    "point_velocity",
    "point_acceleration",
    "beta_matrix",
    "angular_velocity",
]


class SeedKinematics:
    """Joint variables and transforms of one configuration, in the seed's notation."""

    def __init__(self, model: Model, q: np.ndarray):
        self.model = model
        self.q = np.asarray(q, dtype=float).reshape(-1)
        # each joint function's own evaluate (its numpy chain rule and closed-chain solver), not the compiled
        # joint-variable program that core.kinematics.joint_variables runs: the reference stays independent
        cache: dict = {}
        jets = [j.variable.evaluate(self.q[None, :], 2, cache) for j in model.joints]
        nq = model.n_q
        self.f = np.array([0.0] + [float(jet.value[0]) for jet in jets])
        self.grad = [np.zeros((nq, 1))] + [jet.gradient[0].reshape(-1, 1) for jet in jets]  # column vectors
        self.hess = [np.zeros((nq, nq))] + [jet.hessian[0] for jet in jets]
        self.nq = model.n_q
        self.local = local_transforms(model, self.f)  # ^{pr(i)}_iA_4
        self.global_ = global_transforms(model, self.local)  # ^0_iA_4
        self.hat = [np.zeros((4, 4))] + [j.joint_matrix for j in model.joints]

    def relative(self, j: int, i: int) -> np.ndarray:
        """^j_iA_4 for j an ancestor of i (or j == i)."""
        return np.linalg.inv(self.global_[j]) @ self.global_[i]


def local_transforms(model: Model, f: np.ndarray) -> list[np.ndarray]:
    """Eqs 38-39 for every joint; index 0 is the ground (identity)."""
    return [np.eye(4)] + [j.local_transform(f[i]) for i, j in enumerate(model.joints, start=1)]


def global_transforms(model: Model, local: list[np.ndarray]) -> list[np.ndarray]:
    """Eq 40: ^0_iA_4 = ^0_{pr(i)}A_4 ^{pr(i)}_iA_4."""
    out = [np.eye(4)]
    for i, j in enumerate(model.joints, start=1):
        out.append(out[j.parent] @ local[i])
    return out


def w_matrix(sk: SeedKinematics, j: int, i: int) -> np.ndarray:
    """Eq 76: W_ji = ^0_jA_4 ^A_j ^j_iA_4."""
    return sk.global_[j] @ sk.hat[j] @ sk.relative(j, i)


def d_closed_form(sk: SeedKinematics, i: int) -> np.ndarray:
    """Eq 75: D_i = dB_i/dq = sum_{j in Anc(i) U {i}} W_ji^T (x) grad f_j, shape (4 n_q, 4)."""
    d = np.zeros((4 * sk.nq, 4))
    for j in sk.model.chain(i):
        d += np.kron(w_matrix(sk, j, i).T, sk.grad[j])
    return d


def d_recursive(sk: SeedKinematics) -> list[np.ndarray]:
    """Eq 74/77: D_i = W_ii^T (x) grad f_i + (^{pr(i)}_iA_4^T (x) I_nq) D_pr(i), for every frame."""
    nq = sk.nq
    out = [np.zeros((4 * nq, 4))]
    for i, j in enumerate(sk.model.joints, start=1):
        w_ii = sk.global_[i] @ sk.hat[i]
        out.append(np.kron(w_ii.T, sk.grad[i]) + np.kron(sk.local[i].T, np.eye(nq)) @ out[j.parent])
    return out


def _second_partial(sk: SeedKinematics, j: int, s: int, i: int) -> np.ndarray:
    """Wbar_jsi = d^2(^0_iA_4)/(df_j df_s) for j, s in Anc(i) U {i}."""
    a, b = min(j, s), max(j, s)  # both on one chain: the smaller index is the ancestor
    if a == b:
        return sk.global_[a] @ sk.hat[a] @ sk.hat[a] @ sk.relative(a, i)
    return sk.global_[a] @ sk.hat[a] @ sk.relative(a, b) @ sk.hat[b] @ sk.relative(b, i)


def dprime_closed_form(sk: SeedKinematics, i: int) -> np.ndarray:
    """Eq 99 (re-derived): D'_i = d^2 B_i / dq^2, shape (4 n_q^2, 4)."""
    nq = sk.nq
    out = np.zeros((4 * nq * nq, 4))
    chain = sk.model.chain(i)
    for j in chain:
        for s in chain:
            out += np.kron(_second_partial(sk, j, s, i).T, np.kron(sk.grad[j], sk.grad[s]))
        out += np.kron(w_matrix(sk, j, i).T, sk.hess[j].reshape(-1, 1, order="F"))
    return out


def dprime_recursive(sk: SeedKinematics) -> list[np.ndarray]:
    """Eq 89 (corrected third term) for every frame:

    D'_i = (^A_i^T (x) U_{nq,nq})(D_i (x) grad f_i) + W_ii^T (x) vec(H_i)
           + [(^A_i^T ^{pr(i)}_iA_4^T) (x) I_nq (x) grad f_i] D_pr(i)
           + (^{pr(i)}_iA_4^T (x) I_{nq^2}) D'_pr(i)
    """
    nq = sk.nq
    d = d_recursive(sk)
    u = commutation_matrix(nq, nq)
    out = [np.zeros((4 * nq * nq, 4))]
    for i, j in enumerate(sk.model.joints, start=1):
        p = j.parent
        h = sk.hat[i]
        w_ii = sk.global_[i] @ h
        term1 = np.kron(h.T, u) @ np.kron(d[i], sk.grad[i])
        term2 = np.kron(w_ii.T, sk.hess[i].reshape(-1, 1, order="F"))
        term3 = np.kron(np.kron(h.T @ sk.local[i].T, np.eye(nq)), sk.grad[i]) @ d[p]
        term4 = np.kron(sk.local[i].T, np.eye(nq * nq)) @ out[p]
        out.append(term1 + term2 + term3 + term4)
    return out


def _homog(r: np.ndarray) -> np.ndarray:
    return np.append(np.asarray(r, dtype=float).reshape(3), 1.0).reshape(4, 1)


def point_velocity(sk: SeedKinematics, i: int, r: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """Eq 44: {v; 0} = D_i^T ({r; 1} (x) qdot)."""
    v = d_closed_form(sk, i).T @ np.kron(_homog(r), np.asarray(qdot, dtype=float).reshape(-1, 1))
    return v[:3, 0]


def point_acceleration(sk: SeedKinematics, i: int, r: np.ndarray, qdot: np.ndarray,
                       qddot: np.ndarray) -> np.ndarray:
    """Eq 57: {a; 0} = D'_i^T ({r; 1} (x) qdot^[2]) + D_i^T ({r; 1} (x) qddot)."""
    qd = np.asarray(qdot, dtype=float).reshape(-1, 1)
    qdd = np.asarray(qddot, dtype=float).reshape(-1, 1)
    rr = _homog(r)
    a = (dprime_closed_form(sk, i).T @ np.kron(rr, np.kron(qd, qd))
         + d_closed_form(sk, i).T @ np.kron(rr, qdd))
    return a[:3, 0]


def beta_matrix(sk: SeedKinematics, i: int) -> np.ndarray:
    """Eqs 179, 182: beta_i (n_b x 3), row j = (^i_jA V_theta_j)^T for j in Anc(i) U {i}, else 0.

    The joint axis is expressed in frame j (the joint's own rotation leaves it
    invariant, so this equals the seed's ^i_{pr(j)}A V_theta_j for seed-form joints).
    """
    beta = np.zeros((sk.model.n_joints, 3))
    for j in sk.model.chain(i):
        joint = sk.model.joints[j - 1]
        axis = joint.axis if joint.is_revolute else np.zeros(3)
        beta[j - 1] = sk.relative(j, i)[:3, :3].T @ axis
    return beta


def angular_velocity(sk: SeedKinematics, i: int, qdot: np.ndarray) -> np.ndarray:
    """Eq 180: ^0omega^i in frame i = beta_i^T theta J qdot (theta: 1 for revolute joints, Eq 178)."""
    jac = np.vstack([g.T for g in sk.grad[1:]])  # (n_b, n_q): rows grad f_j^T
    theta = np.diag([1.0 if j.is_revolute else 0.0 for j in sk.model.joints])
    return beta_matrix(sk, i).T @ theta @ jac @ np.asarray(qdot, dtype=float).reshape(-1)
