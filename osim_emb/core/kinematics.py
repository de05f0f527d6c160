"""Batched kinematics of an empirically-based multibody model (seed section 3-2).

The seed writes the derivatives of B_i = ^0_iA_4^T with the Kronecker calculus
(Eqs 74-99); :mod:`osim_emb.core.kinematics_kronecker` implements those formulas
literally (the independent test reference).  This module computes the same numbers for a batch of N
configurations with one compiled recursion (:mod:`osim_emb.core.kinematics_kernels`), through the
identity behind Eqs 75-76:

    d(^0_iA_4)/dq_k = sum_{j in Anc(i) U {i}} W_ji (grad f_j)_k
                    = ( sum_j S_j (grad f_j)_k ) ^0_iA_4,     S_j = ^0_jA_4 ^A_j (^0_jA_4)^-1,

since W_ji = ^0_jA_4 ^A_j ^j_iA_4.  S_j is the unit twist of joint j in the
ground frame, stored as a 6-vector (omega, v) so that the matrix is
[[~omega, v], [0, 0]].  The column k of the frame's spatial Jacobian,
Xi_i[k] = sum_j S_j (grad f_j)_k, gives every derivative: for a point p fixed
in frame i, dp/dq_k = omega_k x p + v_k.  Second derivatives (Eqs 89, 99)
follow from dS_j/dq_l = [Xi_pr(j)[l], S_j] (the spatial cross product).

Arrays: q (N, n_q); transforms (N, n_frames, 4, 4); jacobian (N, n_frames, n_q, 6);
jacobian_derivative (N, n_frames, n_q, n_q, 6) with [.., k, l, :] = d Xi[k] / dq_l.
Frame 0 is the ground.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from osim_emb.core.compiled import joint_program
from osim_emb.core.functions.program import dependent_jet
from osim_emb.core.kinematics_kernels import batch_frame_kinematics, frame_tree
from osim_emb.core.speeds import angular_velocity_joints, coordinate_speeds, speeds_from_rates
from osim_emb.model import Model

__all__ = [
    "JointVariables",
    "FrameKinematics",
    "joint_variables",
    "forward_kinematics",
    "frame_transforms",
    "motion_cross",
    "twist_matrix",
    "point_positions",
    "point_jacobians",
    "point_velocities",
    "point_accelerations",
    "angular_velocities",
    "body_transforms",
    "dependent_coordinate_columns",
]


@dataclass
class JointVariables:
    """f_i, grad f_i and H_i of every joint for a batch; index 0 (the ground) is zero."""

    value: np.ndarray  # (N, n_frames)
    gradient: np.ndarray | None  # (N, n_frames, n_q)
    hessian: np.ndarray | None  # (N, n_frames, n_q, n_q)


@dataclass
class FrameKinematics:
    """Frame transforms and their derivatives for a batch of configurations (like Pinocchio's ``data``)."""

    q: np.ndarray
    variables: JointVariables
    transforms: np.ndarray  # (N, n_frames, 4, 4): ^0_iA_4
    joint_twists: np.ndarray | None = None  # (N, n_frames, 6): S_i in ground (0 for the ground)
    jacobian: np.ndarray | None = None  # (N, n_frames, n_q, 6): Xi_i[k]
    jacobian_derivative: np.ndarray | None = None  # (N, n_frames, n_q, n_q, 6)

    @property
    def n(self) -> int:
        return self.q.shape[0]


def joint_variables(model: Model, q: Any, order: int = 2) -> JointVariables:
    """Every joint variable f_i(q) with its gradient (order >= 1) and full Hessian (order 2), for a batch.

    Evaluated by the compiled joint-variable program (:class:`osim_emb.core.compiled.JointProgram`), the one
    evaluation of the joint functions that the dynamics also runs; functions it cannot flatten
    (SplineSurface, user-defined types) are evaluated by their own ``evaluate``.
    """
    q = _as_q(model, q)
    return JointVariables(*joint_program(model).evaluate(q, order, with_ground=True))


def dependent_coordinate_columns(model: Model, q: Any, qdot: Any) -> dict[str, np.ndarray]:
    """The dependent coordinates (coupled, locked, closing a loop) along configurations q and rates q̇ (N, n_q),
    as columns NAME (c = f(q); rad, m) then NAME_u (OpenSim's speed: ċ = ∇f(q)·q̇, or on a Ball, Free or
    Ellipsoid joint's rotation the angular velocity, :mod:`osim_emb.core.speeds`): what a motion file needs so
    that OpenSim shows every coordinate."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    qd = np.atleast_2d(np.asarray(qdot, dtype=float))
    values, speeds = {}, {}
    for d in model.dependent_coordinates:
        jet = dependent_jet(d.function, q, 1)
        values[d.name] = np.asarray(jet.value, dtype=float)
        speeds[d.name] = np.einsum("nk,nk->n", jet.gradient, qd)
    if values and angular_velocity_joints(model):  # OpenSim's speeds where an angle of such a joint is dependent
        speeds = coordinate_speeds(model, q, qd, dependent_jet)
    return {**values, **{f"{name}_u": speeds[name] for name in values}}


def speed_columns(model: Model, q: Any, qdot: Any) -> dict[str, np.ndarray]:
    """NAME_u columns of the generalized coordinates along configurations q and rates q̇ (N, n_q): OpenSim's speeds
    (:func:`osim_emb.core.speeds.speeds_from_rates`), as a states file holds them."""
    u = speeds_from_rates(model, q, qdot, dependent_jet)
    return {f"{name}_u": u[:, k] for k, name in enumerate(model.coordinate_names)}


def _as_q(model: Model, q: Any) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim == 1:
        q = q.reshape(1, -1)
    if q.ndim != 2 or q.shape[1] != model.n_q:
        raise ValueError(f"q must have shape (N, {model.n_q}), got {q.shape}")
    return q


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis (no np.cross overhead; broadcasts)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def motion_cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spatial cross product of twists (omega, v): the matrix commutator [a^, b^]."""
    wa, va = a[..., :3], a[..., 3:]
    wb, vb = b[..., :3], b[..., 3:]
    return np.concatenate([cross3(wa, wb), cross3(wa, vb) + cross3(va, wb)], axis=-1)


def twist_matrix(xi: np.ndarray) -> np.ndarray:
    """4x4 matrix [[~omega, v], [0, 0]] of twists (..., 6)."""
    xi = np.asarray(xi)
    out = np.zeros(xi.shape[:-1] + (4, 4))
    w = xi[..., :3]
    out[..., 0, 1] = -w[..., 2]
    out[..., 0, 2] = w[..., 1]
    out[..., 1, 0] = w[..., 2]
    out[..., 1, 2] = -w[..., 0]
    out[..., 2, 0] = -w[..., 1]
    out[..., 2, 1] = w[..., 0]
    out[..., :3, 3] = xi[..., 3:]
    return out


def forward_kinematics(model: Model, q: Any, order: int = 1,
                       variables: JointVariables | None = None) -> FrameKinematics:
    """Transforms ^0_iA_4 of every frame (order 0), their first (order 1) and second (order 2) derivatives.

    The joint variables come from :func:`joint_variables` (or ``variables``); the recursion is the compiled
    :func:`osim_emb.core.kinematics_kernels.batch_frame_kinematics` (parallel over configurations for large
    batches).
    """
    q = _as_q(model, q)
    if variables is None:
        variables = joint_variables(model, q, order)
    n, nf = q.shape[0], model.n_frames
    rot, pos, twists, jac, djac = batch_frame_kinematics(
        frame_tree(model), order, variables.value, variables.gradient if order >= 1 else None,
        variables.hessian if order >= 2 else None)
    a = np.zeros((n, nf, 4, 4))
    a[:, :, :3, :3] = rot
    a[:, :, :3, 3] = pos
    a[:, :, 3, 3] = 1.0
    if order < 1:
        return FrameKinematics(q, variables, a)
    return FrameKinematics(q, variables, a, twists, jac, djac if order >= 2 else None)


def frame_transforms(model: Model, q: Any) -> np.ndarray:
    """^0_iA_4 for every frame, (N, n_frames, 4, 4)."""
    return forward_kinematics(model, q, order=0).transforms


def body_transforms(model: Model, kin: FrameKinematics) -> np.ndarray:
    """Ground transforms of the model's bodies (N, n_bodies, 4, 4)."""
    frames = np.array([b.frame for b in model.bodies], dtype=int)
    offsets = np.stack([b.frame_to_body for b in model.bodies]) if model.bodies else np.zeros((0, 4, 4))
    return kin.transforms[:, frames] @ offsets


def body_fixed_xyz_angles(rotation: Any) -> np.ndarray:
    """Body-fixed X-Y-Z Euler angles (..., 3) of rotation matrices (..., 3, 3), R = Rx(a) Ry(b) Rz(c): b from all
    four elements that carry cos(b) (|cos b| = sqrt((R00² + R01² + R12² + R22²) / 2)), a and c by atan2, and in
    gimbal lock (|cos b| <= 4 eps) a = a + c (or a - c) and c = 0: Simbody's rule (``Rotation::
    convertRotationToBodyFixedXYZ``), which OpenSim's BodyKinematics reports.  a, c in [-pi, pi], b in
    [-pi/2, pi/2]."""
    r = np.asarray(rotation, dtype=float)
    cos_b = np.sqrt((r[..., 0, 0] ** 2 + r[..., 0, 1] ** 2 + r[..., 1, 2] ** 2 + r[..., 2, 2] ** 2) / 2.0)
    b = np.arctan2(r[..., 0, 2], cos_b)
    a = np.arctan2(-r[..., 1, 2], r[..., 2, 2])
    c = np.arctan2(-r[..., 0, 1], r[..., 0, 0])
    lock = cos_b <= 4.0 * np.finfo(float).eps
    if np.any(lock):
        up = lock & (r[..., 0, 2] > 0.0)
        down = lock & ~(r[..., 0, 2] > 0.0)
        a = np.where(up, np.arctan2(r[..., 1, 0] + r[..., 2, 1], r[..., 1, 1] - r[..., 2, 0]), a)
        a = np.where(down, np.arctan2(r[..., 2, 1] - r[..., 1, 0], r[..., 1, 1] + r[..., 2, 0]), a)
        c = np.where(lock, 0.0, c)
    return np.stack([a, b, c], axis=-1)


def point_positions(kin: FrameKinematics, frame: int, r: Any) -> np.ndarray:
    """Eq 41: ground positions (N, 3) of a point with coordinates r (3,) or (N, 3) in ``frame``."""
    r = np.asarray(r, dtype=float)
    a = kin.transforms[:, frame]
    return np.einsum("nij,n...j->n...i", a[:, :3, :3], np.broadcast_to(r, (kin.n, 3))) + a[:, :3, 3]


def point_jacobians(kin: FrameKinematics, frame: int, r: Any) -> np.ndarray:
    """d(^0r_p)/dq: (N, 3, n_q) for a point fixed in ``frame`` (the columns of D_i^T ([r;1] (x) e_k))."""
    p = point_positions(kin, frame, r)
    xi = kin.jacobian[:, frame]  # (N, nq, 6)
    return np.swapaxes(cross3(xi[..., :3], p[:, None, :]) + xi[..., 3:], 1, 2)


def point_velocities(kin: FrameKinematics, frame: int, r: Any, qdot: Any) -> np.ndarray:
    """Eq 44: velocity (N, 3) of a point fixed in ``frame``."""
    qdot = np.broadcast_to(np.asarray(qdot, dtype=float), kin.q.shape)
    return np.einsum("nik,nk->ni", point_jacobians(kin, frame, r), qdot)


def point_accelerations(kin: FrameKinematics, frame: int, r: Any, qdot: Any, qddot: Any) -> np.ndarray:
    """Eq 57: acceleration (N, 3) = (D'_i)^T ([r;1] (x) qdot^[2]) + D_i^T ([r;1] (x) qddot).

    Needs ``forward_kinematics(..., order=2)``.
    """
    if kin.jacobian_derivative is None:
        raise ValueError("point accelerations need forward_kinematics(..., order=2)")
    qdot = np.broadcast_to(np.asarray(qdot, dtype=float), kin.q.shape)
    qddot = np.broadcast_to(np.asarray(qddot, dtype=float), kin.q.shape)
    p = point_positions(kin, frame, r)
    xi = kin.jacobian[:, frame]
    dxi = kin.jacobian_derivative[:, frame]
    xi_dot_q = np.einsum("nkc,nk->nc", xi, qdot)  # twist of the frame (spatial velocity)
    xi_dd = np.einsum("nklc,nk,nl->nc", dxi, qdot, qdot) + np.einsum("nkc,nk->nc", xi, qddot)
    w, v = xi_dot_q[:, :3], xi_dot_q[:, 3:]
    vel = cross3(w, p) + v
    return cross3(xi_dd[:, :3], p) + xi_dd[:, 3:] + cross3(w, vel)


def angular_velocities(model: Model, kin: FrameKinematics, frame: int, qdot: Any,
                       in_frame: bool = True) -> np.ndarray:
    """Eqs 177-180: angular velocity (N, 3) of ``frame``, in its own basis (default) or the ground's."""
    qdot = np.broadcast_to(np.asarray(qdot, dtype=float), kin.q.shape)
    w = np.einsum("nkc,nk->nc", kin.jacobian[:, frame, :, :3], qdot)
    if in_frame:
        w = np.einsum("nji,nj->ni", kin.transforms[:, frame, :3, :3], w)
    return w
