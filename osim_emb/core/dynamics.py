"""Equations of motion in minimal coordinates (seed section 4): M(q) qddot + N(q, qdot) qdot = G(q) + tau.

The seed derives, by virtual work, for every body i (Eqs 124-148, 186-190)

    M_i = C_1^T (J_i (x) U_{nq,4}^T) (D_i D_i^T (x) I_4) (I_4 (x) U_{nq,4}) C_1            (Eq 145)
    delta q^T N_i qdot = trace[(D'_i)^T (J_i (x) qdot^[2] delta q^T) D_i]                 (Eq 126, 2nd part)
    G_i = m_i ({r_cm^T | 1} (x) I_nq) D_i {g; 0}                                      (Eq 187)

with J_i the pseudo-inertia of Eq 131.  Written with traces these are

    M[k, l]  = sum_i tr( dA_i/dq_k  J_i  (dA_i/dq_l)^T )
    N[k, l]  = sum_i tr( dA_i/dq_k  J_i  (d/dt dA_i/dq_l)^T )      (so that N qdot = sum_i ... d2A_i/dq^2 [qdot, qdot])
    G[k]     = sum_i m_i g . d(^0 r_cm,i)/dq_k

and with dA_i/dq_k = Xi_i[k]^ A_i (see :mod:`osim_emb.core.kinematics`) they are
evaluated for a batch of states with array operations, one 4x4 trace per
frame and pair (k, l): no product whose size grows as n_q^4.  The printed
Eq 147 repeats Eq 145 (an extraction error); N is derived here from the second
part of Eq 126 and tested against it (:mod:`osim_emb.core.dynamics_kronecker`).

State is passed as arrays: q, qdot, qddot of shape (N, n_q) or (n_q,).

Two implementations compute these numbers.  :func:`dynamics_terms` (and :func:`velocity_matrix`)
is the batched numpy reference described above.  When numba is available (``osim-emb[speed]``)
and not disabled (``OSIM_EMB_NO_JIT=1``), :func:`ode_rhs`, :func:`forward_dynamics`,
:func:`inverse_dynamics`, :func:`mass_matrix`, :func:`velocity_terms` and :func:`gravity_forces`
use the model compiled once into flat arrays (:mod:`osim_emb.core.compiled`): the same sums written
with spatial inertias, a few microseconds per state instead of a millisecond, equal to the
reference to rounding (tests/test_dynamics_fast.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.core.kinematics import FrameKinematics, forward_kinematics, joint_variables, motion_cross, twist_matrix
from osim_emb.model import Model

__all__ = [
    "DynamicsTerms",
    "dynamics_terms",
    "mass_matrix",
    "velocity_matrix",
    "velocity_terms",
    "gravity_forces",
    "inverse_dynamics",
    "forward_dynamics",
    "point_force_generalized",
    "ode_rhs",
]


@dataclass
class DynamicsTerms:
    """M (N, nq, nq), N (N, nq, nq), N qdot (N, nq) and G (N, nq) at a batch of states."""

    mass: np.ndarray
    velocity: np.ndarray | None
    velocity_forces: np.ndarray | None
    gravity: np.ndarray
    kinematics: FrameKinematics


def _states(model: Model, *arrays: Any) -> list[np.ndarray]:
    out = []
    for a in arrays:
        a = np.asarray(a, dtype=float)
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if a.ndim != 2 or a.shape[1] != model.n_q:
            raise ValueError(f"state arrays must have shape (N, {model.n_q}), got {a.shape}")
        out.append(a)
    n = max(a.shape[0] for a in out)
    return [np.broadcast_to(a, (n, model.n_q)) for a in out]


def _massive_frames(model: Model) -> np.ndarray:
    pj = model.frame_pseudo_inertia
    return np.flatnonzero(np.abs(pj).reshape(len(pj), -1).max(axis=1) > 0)


def _jacobian_rates(model: Model, kin: FrameKinematics, qdot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spatial velocity V_i (N, nf, 6) and the time derivative of the Jacobian columns dXi_i[l]/dt (N, nf, nq, 6).

    Recursion: dXi_i[l]/dt = dXi_pr[l]/dt + (V_pr x S_i) (grad f_i)_l + S_i (H_i qdot)_l.
    """
    n, nf, nq = kin.q.shape[0], model.n_frames, model.n_q
    vel = np.einsum("nfkc,nk->nfc", kin.jacobian, qdot)
    djac = np.zeros((n, nf, nq, 6))
    grad, hess = kin.variables.gradient, kin.variables.hessian
    for i, joint in enumerate(model.joints, start=1):
        p = joint.parent
        s = kin.joint_twists[:, i]
        ds = motion_cross(vel[:, p], s)  # dS_i/dt
        hq = np.einsum("nkl,nl->nk", hess[:, i], qdot)
        djac[:, i] = djac[:, p] + grad[:, i][:, :, None] * ds[:, None, :] + hq[:, :, None] * s[:, None, :]
    return vel, djac


def dynamics_terms(model: Model, q: Any, qdot: Any | None = None) -> DynamicsTerms:
    """M, N, N qdot and G at a batch of states (qdot omitted: M and G only)."""
    if qdot is None:
        (q,) = _states(model, q)
    else:
        q, qdot = _states(model, q, qdot)
    model = model.dynamics_model  # massless leaf frames (moving via points) do not enter M, N, G
    q = np.ascontiguousarray(q)
    order = 2 if qdot is not None else 1
    kin = forward_kinematics(model, q, order=1, variables=joint_variables(model, q, order))
    frames = _massive_frames(model)
    a = kin.transforms[:, frames]
    j0 = a @ model.frame_pseudo_inertia[frames] @ np.swapaxes(a, -1, -2)  # pseudo-inertia in ground
    x = twist_matrix(kin.jacobian[:, frames])  # (N, F, nq, 4, 4) = dA/dq_k A^-1
    xj = np.einsum("nfkab,nfbc->nfkac", x, j0)
    mass = np.einsum("nfkac,nflac->nkl", xj, x)
    h = j0[..., :3, 3]  # m * com in ground
    m = j0[..., 3, 3]
    w, v = kin.jacobian[:, frames, :, :3], kin.jacobian[:, frames, :, 3:]
    gvec = model.gravity
    gravity = (np.einsum("nfkc,nfc->nk", np.cross(w, h[:, :, None, :]), np.broadcast_to(gvec, h.shape))
               + np.einsum("nfkc,c,nf->nk", v, gvec, m))
    nmat = nq_forces = None
    if qdot is not None:
        qdot = np.ascontiguousarray(qdot)
        vel, djac = _jacobian_rates(model, kin, qdot)
        y = twist_matrix(djac[:, frames]) + x @ twist_matrix(vel[:, frames])[:, :, None]
        nmat = np.einsum("nfkac,nflac->nkl", xj, y)
        nq_forces = np.einsum("nkl,nl->nk", nmat, qdot)
    return DynamicsTerms(mass, nmat, nq_forces, gravity, kin)


def _compiled(model: Model):
    """The compiled model when the fast path is on (numba present and not disabled), else None."""
    if not use_jit():
        return None
    from osim_emb.core.compiled import compiled_model
    return compiled_model(model)


def mass_matrix(model: Model, q: Any) -> np.ndarray:
    """The mass matrix M(q) (Eqs 145, 189).

    Parameters
    ----------
    model : Model
    q : array_like
        (N, n_q) or (n_q,) configurations: radians (rotational), metres (translational).

    Returns
    -------
    numpy.ndarray
        (N, n_q, n_q), symmetric positive definite: kg m^2 between rotational coordinates, kg between
        translational ones, kg m between the two.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])
    >>> M = oe.mass_matrix(model, q)
    >>> M.shape, bool(np.allclose(M, M.transpose(0, 2, 1))), bool((np.linalg.eigvalsh(M) > 0).all())
    ((2, 3, 3), True, True)
    """
    fast = _compiled(model)
    if fast is not None:
        (q,) = _states(model, q)
        return fast.terms(q)[0]
    return dynamics_terms(model, q).mass


def gravity_forces(model: Model, q: Any) -> np.ndarray:
    """Generalized gravity forces G(q) (Eqs 187, 197), the sign of an applied force (M q̈ + N q̇ = G + τ).

    Parameters
    ----------
    model : Model
    q : array_like
        (N, n_q) or (n_q,) configurations: radians, metres.

    Returns
    -------
    numpy.ndarray
        (N, n_q): N m about rotational coordinates, N along translational ones.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])

    At rest, the forward dynamics accelerate the model by M^-1 G:

    >>> G = oe.gravity_forces(model, q)
    >>> qddot = np.linalg.solve(oe.mass_matrix(model, q), G[..., None])[..., 0]
    >>> bool(np.allclose(oe.forward_dynamics(model, q, np.zeros_like(q)), qddot))
    True
    """
    fast = _compiled(model)
    if fast is not None:
        (q,) = _states(model, q)
        return fast.terms(q)[2]
    return dynamics_terms(model, q).gravity


def velocity_matrix(model: Model, q: Any, qdot: Any) -> np.ndarray:
    """N(q, qdot) (Eqs 146, 190), (N, nq, nq)."""
    return dynamics_terms(model, q, qdot).velocity


def velocity_terms(model: Model, q: Any, qdot: Any) -> np.ndarray:
    """N(q, q̇) q̇: Coriolis and centrifugal generalized forces (Eq 126, second part).

    Parameters
    ----------
    model : Model
    q : array_like
        (N, n_q) configurations: radians, metres.
    qdot : array_like
        (N, n_q) generalized speeds: rad/s, m/s.

    Returns
    -------
    numpy.ndarray
        (N, n_q): N m about rotational coordinates, N along translational ones.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])

    The forces are quadratic in the speeds:

    >>> qdot = np.array([[0.3, -0.2, 0.5], [1.0, 0.5, -0.7]])
    >>> bool(np.allclose(oe.velocity_terms(model, q, 2 * qdot), 4 * oe.velocity_terms(model, q, qdot)))
    True
    """
    fast = _compiled(model)
    if fast is not None:
        q, qdot = _states(model, q, qdot)
        return fast.terms(q, qdot)[1]
    return dynamics_terms(model, q, qdot).velocity_forces


def inverse_dynamics(model: Model, q: Any, qdot: Any, qddot: Any) -> np.ndarray:
    """τ = M q̈ + N q̇ - G: the generalized forces that produce q̈ (Eq 198 with R F = τ).

    Parameters
    ----------
    model : Model
    q, qdot, qddot : array_like
        (N, n_q) configurations (rad, m), speeds (rad/s, m/s) and accelerations (rad/s^2, m/s^2).

    Returns
    -------
    numpy.ndarray
        (N, n_q) generalized forces: N m about rotational coordinates, N along translational ones.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])
    >>> qdot, qddot = np.full((2, 3), 0.5), np.full((2, 3), -1.0)
    >>> tau = oe.inverse_dynamics(model, q, qdot, qddot)
    >>> bool(np.allclose(oe.forward_dynamics(model, q, qdot, tau), qddot))
    True
    """
    q, qdot, qddot = _states(model, q, qdot, qddot)
    fast = _compiled(model)
    if fast is not None:
        return fast.inverse(q, qdot, qddot)
    t = dynamics_terms(model, q, qdot)
    return np.einsum("nkl,nl->nk", t.mass, qddot) + t.velocity_forces - t.gravity


def forward_dynamics(model: Model, q: Any, qdot: Any, tau: Any = 0.0) -> np.ndarray:
    """q̈ = M^-1 (G + τ - N q̇) (Eq 198 with R F = τ).

    Parameters
    ----------
    model : Model
    q, qdot : array_like
        (N, n_q) configurations (rad, m) and speeds (rad/s, m/s).
    tau : array_like or float, default 0
        Applied generalized forces (N m, N), broadcast to (N, n_q).

    Returns
    -------
    numpy.ndarray
        (N, n_q) accelerations: rad/s^2, m/s^2.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])

    The accelerations solve M q̈ = G + τ - N q̇:

    >>> qdot, tau = np.full((2, 3), 0.5), np.full((2, 3), 2.0)
    >>> qddot = oe.forward_dynamics(model, q, qdot, tau)
    >>> M, G = oe.mass_matrix(model, q), oe.gravity_forces(model, q)
    >>> rhs = G + tau - oe.velocity_terms(model, q, qdot)
    >>> bool(np.allclose(np.einsum("nkl,nl->nk", M, qddot), rhs))
    True
    """
    q, qdot = _states(model, q, qdot)
    fast = _compiled(model)
    if fast is not None:
        return fast.forward(q, qdot, np.broadcast_to(np.asarray(tau, dtype=float), q.shape))
    return _forward_reference(model, q, qdot, tau)


def _forward_reference(model: Model, q: np.ndarray, qdot: np.ndarray, tau: Any) -> np.ndarray:
    t = dynamics_terms(model, q, qdot)
    rhs = t.gravity - t.velocity_forces + np.broadcast_to(np.asarray(tau, dtype=float), t.gravity.shape)
    return np.linalg.solve(t.mass, rhs[..., None])[..., 0]


def point_force_generalized(kin: FrameKinematics, frame: int, r: Any, force: Any) -> np.ndarray:
    """Generalized forces (N, nq) of a ground-frame force applied at point r of ``frame`` (Eq 46: delta W = F . delta r)."""
    from osim_emb.core.kinematics import point_jacobians
    jp = point_jacobians(kin, frame, r)
    return np.einsum("nik,ni->nk", jp, np.broadcast_to(np.asarray(force, dtype=float), jp.shape[:2]))


def ode_rhs(model: Model, generalized_forces: Callable[[float, np.ndarray, np.ndarray], Any] | None = None):
    """The first-order ODE y = (q, qdot) -> (qdot, qddot) with SciPy's ``fun(t, y)`` contract.

    ``generalized_forces(t, q, qdot)`` returns tau (n_q,) added to G (e.g. R(q) F_mt
    or actuator torques); omitted: a passive system under gravity.

    With numba (and ``OSIM_EMB_NO_JIT`` unset when this is called) the function evaluates the
    compiled model (:meth:`osim_emb.core.compiled.CompiledModel.ode_rhs`): M, N q̇ and G of Eqs 145,
    126 and 187 and the solve for q̈ in one kernel call, a few microseconds; otherwise
    forward dynamics on the numpy reference (:func:`dynamics_terms`).
    """
    fast = _compiled(model)
    if fast is not None:
        return fast.ode_rhs(generalized_forces)
    nq = model.n_q

    def fun(t: float, y: np.ndarray) -> np.ndarray:
        q, qd = y[:nq], y[nq:]
        tau = 0.0 if generalized_forces is None else generalized_forces(t, q, qd)
        q2, qd2 = _states(model, q, qd)
        qdd = _forward_reference(model, q2, qd2, tau)[0]
        return np.concatenate([qd, qdd])

    return fun
