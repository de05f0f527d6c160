"""Equations of motion in minimal coordinates (seed section 4): M(q) qddot + N(q, qdot) qdot = G(q) + tau.

The seed derives, by virtual work, for every body i (Eqs 124-148, 186-190)

    M_i = C_1^T (J_i (x) U_{nq,4}^T) (D_i D_i^T (x) I_4) (I_4 (x) U_{nq,4}) C_1            (Eq 145)
    delta q^T N_i qdot = trace[(D'_i)^T (J_i (x) qdot^[2] delta q^T) D_i]                 (Eq 126, 2nd part)
    G_i = m_i ({r_cm^T | 1} (x) I_nq) D_i {g; 0}                                      (Eq 187)

with J_i the pseudo-inertia of Eq 131.  Written with traces these are

    M[k, l]  = sum_i tr( dA_i/dq_k  J_i  (dA_i/dq_l)^T )
    N[k, l]  = sum_i tr( dA_i/dq_k  J_i  (d/dt dA_i/dq_l)^T )      (so that N qdot = sum_i ... d2A_i/dq^2 [qdot, qdot])
    G[k]     = sum_i m_i g . d(^0 r_cm,i)/dq_k

and with dA_i/dq_k = Xi_i[k]^ A_i (see :mod:`osim_emb.core.kinematics`) every trace pairs spatial vectors:
tr(a^ J_i b^T) = a . I_i b for twists a, b and the spatial inertia I_i of J_i.  The printed Eq 147 repeats
Eq 145 (an extraction error); N is derived here from the second part of Eq 126 and tested against it
(:mod:`osim_emb.core.dynamics_kronecker`).

One implementation computes these numbers: the model compiled once into flat arrays
(:mod:`osim_emb.core.compiled`) and evaluated by the kernels of :mod:`osim_emb.core.compiled_kernels`, a few
microseconds per state, over any batch of states (in parallel over numba's threads for large batches).  Joint
functions the compiled program cannot flatten are evaluated in Python first (its "external" nodes), so every
model runs through it.  The independent references the tests use are the literal Kronecker forms
(:mod:`osim_emb.core.dynamics_kronecker`), finite differences of the kinetic and potential energies
(Lagrange's equations) and OpenSim.

State is passed as arrays: q, qdot, qddot of shape (N, n_q) or (n_q,).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np

from osim_emb.core.compiled import compiled_model
from osim_emb.core.kinematics import FrameKinematics, forward_kinematics
from osim_emb.core.speeds import angular_velocity_joints, forces_about_coordinates
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
    "BodyWrench",
    "external_load_wrenches",
    "external_load_forces",
    "actuator_wrenches",
    "actuator_generalized_forces",
    "ode_rhs",
]


@dataclass
class DynamicsTerms:
    """M (N, nq, nq), N (N, nq, nq), N qdot (N, nq) and G (N, nq) at a batch of states (N and N qdot are None
    without speeds); ``kinematics``: the frame kinematics (order 1) of ``model.dynamics_model`` at q, computed on
    first access."""

    mass: np.ndarray
    velocity: np.ndarray | None
    velocity_forces: np.ndarray | None
    gravity: np.ndarray
    model: Model = field(repr=False)
    q: np.ndarray = field(repr=False)

    @cached_property
    def kinematics(self) -> FrameKinematics:
        return forward_kinematics(self.model.dynamics_model, self.q, order=1)


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


def dynamics_terms(model: Model, q: Any, qdot: Any | None = None) -> DynamicsTerms:
    """M, N, N qdot and G at a batch of states (qdot omitted: M and G only), one kernel call."""
    c = compiled_model(model)
    if qdot is None:
        (q,) = _states(model, q)
        mass, _, gravity = c.terms(q)
        return DynamicsTerms(mass, None, None, gravity, model, q)
    q, qdot = _states(model, q, qdot)
    mass, nmat, nqd, gravity = c.terms_with_velocity_matrix(q, qdot)
    return DynamicsTerms(mass, nmat, nqd, gravity, model, q)


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
    (q,) = _states(model, q)
    return compiled_model(model).terms(q)[0]


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
    (q,) = _states(model, q)
    return compiled_model(model).terms(q)[2]


def velocity_matrix(model: Model, q: Any, qdot: Any) -> np.ndarray:
    """N(q, qdot) (Eqs 126, 146, 190), (N, nq, nq): N(q, qdot) qdot = :func:`velocity_terms`."""
    q, qdot = _states(model, q, qdot)
    return compiled_model(model).terms_with_velocity_matrix(q, qdot)[1]


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
    q, qdot = _states(model, q, qdot)
    return compiled_model(model).terms(q, qdot)[1]


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
    return compiled_model(model).inverse(q, qdot, qddot)


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
    return compiled_model(model).forward(q, qdot, np.broadcast_to(np.asarray(tau, dtype=float), q.shape))


def point_force_generalized(kin: FrameKinematics, frame: int, r: Any, force: Any) -> np.ndarray:
    """Generalized forces (N, nq) of a ground-frame force applied at point r of ``frame`` (Eq 46: delta W = F . delta r)."""
    from osim_emb.core.kinematics import point_jacobians
    jp = point_jacobians(kin, frame, r)
    return np.einsum("nik,ni->nk", jp, np.broadcast_to(np.asarray(force, dtype=float), jp.shape[:2]))


def _wrench_forces(kin, frame: int, point, force, torque) -> np.ndarray:
    """Generalized forces (N, nq) of a force (N, 3) at the ground point p (N, 3) of frame ``frame``'s body and a
    torque (N, 3) on it (either None), both in ground: τ_k = F·(ω_k × p + v_k) + M·ω_k (Eq 46)."""
    xi = kin.jacobian[:, frame]  # (N, nq, 6): the frame's (ω_k, v_k) in ground
    tau = np.zeros(xi.shape[:2])
    if force is not None:
        tau += np.einsum("nki,ni->nk", np.cross(xi[..., :3], point[:, None, :]) + xi[..., 3:], force)
    if torque is not None:
        tau += np.einsum("nki,ni->nk", xi[..., :3], torque)
    return tau


@dataclass(frozen=True)
class BodyWrench:
    """A force (N, 3) at ground points (N, 3) and a torque (N, 3) on one body, all in ground; ``force`` or
    ``torque`` may be None. ``frame`` is the package's frame the body rides on (0: the ground)."""

    body: str
    frame: int
    point: np.ndarray | None
    force: np.ndarray | None
    torque: np.ndarray | None

    def generalized(self, kin: FrameKinematics) -> np.ndarray:
        """Its generalized forces (N, nq): τ_k = F·(ω_k × p + v_k) + M·ω_k (Eq 46)."""
        return _wrench_forces(kin, self.frame, self.point, self.force, self.torque)

    def about_origin(self) -> np.ndarray:
        """(N, 6): the moment about the ground origin and the force, in ground."""
        n = next(a.shape[0] for a in (self.force, self.torque) if a is not None)
        out = np.zeros((n, 6))
        if self.force is not None:
            out[:, 3:] = self.force
            out[:, :3] = np.cross(self.point, self.force)
        if self.torque is not None:
            out[:, :3] += self.torque
        return out


def external_load_wrenches(model: Model, kin: FrameKinematics, loads) -> list[BodyWrench]:
    """The body wrenches of external loads at the configurations of ``kin``: ``loads`` is
    :meth:`osim_emb.io.external_loads.ExternalLoads.at` at the same N instants. A force F (in the frame of its
    ``force_frame`` body) acts at point p (in its ``point_frame`` body; the applied body's origin without one) on
    the applied body's material point there, a torque M on that body."""
    out = []
    for element, force, point, torque in loads:
        frame, _ = model.body_pose(element.body, f"ExternalForce {element.name!r}")
        ground_of = {}
        for name in (element.force_frame, element.point_frame, element.body):
            f, off = model.body_pose(name, f"ExternalForce {element.name!r}")
            ground_of[name] = kin.transforms[:, f] @ off  # (N, 4, 4): the body's frame in ground
        applied = ground_of[element.body]
        if point is None:
            p = applied[:, :3, 3]
        else:
            a = ground_of[element.point_frame]
            p = np.einsum("nij,nj->ni", a[:, :3, :3], point) + a[:, :3, 3]
        rot = ground_of[element.force_frame][:, :3, :3]
        out.append(BodyWrench(element.body, frame, p, None if force is None else np.einsum("nij,nj->ni", rot, force),
                              None if torque is None else np.einsum("nij,nj->ni", rot, torque)))
    return out


def external_load_forces(model: Model, q: Any, loads) -> np.ndarray:
    """Generalized forces (N, nq) of external loads at configurations q (N, nq): ``loads`` is
    :meth:`osim_emb.io.external_loads.ExternalLoads.at` at the same N instants.  A force F (in the frame of its
    ``force_frame`` body) at point p (in its ``point_frame`` body; the applied body's origin without one) does the
    virtual work F·δp of the applied body's material point at p (Eq 46), a torque M the work M·δθ of that body's
    rotation: τ_k = F·(ω_k × p + v_k) + M·ω_k in ground, with (ω_k, v_k) the body's Jacobian column."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    kin = forward_kinematics(model, q, order=1)
    tau = np.zeros(q.shape)
    for w in external_load_wrenches(model, kin, loads):
        tau += w.generalized(kin)
    return tau


def actuator_wrenches(model: Model, kin: FrameKinematics, act) -> list[BodyWrench]:
    """The body wrenches per unit control of a PointActuator (its force F d at its point; d and the point in the
    body's frame or in ground, as its flags say; a global point is the body's material point there) or a
    TorqueActuator (F a on bodyA, −F a on bodyB; none on the ground); a CoordinateActuator has none (it acts
    across its joint)."""
    if act.kind == "CoordinateActuator":
        return []
    where = act.source or f"{act.kind} {act.name!r}"
    frame, off = model.body_pose(act.body, where)
    pose = kin.transforms[:, frame] @ off  # (N, 4, 4): the body's frame in ground
    n = pose.shape[0]
    unit = np.asarray(act.direction, dtype=float) / np.linalg.norm(act.direction)
    vector = np.broadcast_to(unit, (n, 3)) if act.force_is_global else pose[:, :3, :3] @ unit
    vector = act.optimal_force * vector
    if act.kind == "PointActuator":
        point = np.asarray(act.point, dtype=float)
        p = np.broadcast_to(point, (n, 3)) if act.point_is_global else pose[:, :3, :3] @ point + pose[:, :3, 3]
        return [BodyWrench(act.body, frame, p, vector, None)]
    out = [BodyWrench(act.body, frame, None, None, vector)]
    if act.body_b and act.body_b != "ground":
        frame_b, _ = model.body_pose(act.body_b, where)
        out.append(BodyWrench(act.body_b, frame_b, None, None, -vector))
    return out


def actuator_generalized_forces(model: Model, q: Any, actuators) -> np.ndarray:
    """Generalized forces per unit control (N, nq, n_a) of OpenSim actuators
    (:func:`osim_emb.io.force_set.read_actuators`) at configurations q (N, nq): a CoordinateActuator F e_k on an
    independent coordinate, F ∇f on a coupled one (OpenSim's mobility forces: on a Ball, Free or Ellipsoid joint's
    rotation a torque about an axis of the parent frame, Eᵀ F e_k, :mod:`osim_emb.core.speeds`); a PointActuator's
    and a TorqueActuator's body wrenches
    (:func:`actuator_wrenches`) through Eq 46."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    kin = forward_kinematics(model, q, order=1)
    out = np.zeros((q.shape[0], model.n_q, len(actuators)))
    dependent = {d.name: d for d in model.dependent_coordinates}
    for j, act in enumerate(actuators):
        where = act.source or f"{act.kind} {act.name!r}"
        if act.kind == "CoordinateActuator":
            if act.coordinate in model.coordinate_names:
                out[:, model.coordinate_index(act.coordinate), j] = act.optimal_force
            elif act.coordinate in dependent and dependent[act.coordinate].kind == "coupled":
                jet = dependent[act.coordinate].function.evaluate(q, order=1)
                out[:, :, j] = act.optimal_force * np.asarray(jet.gradient, dtype=float)
            elif act.coordinate in dependent:
                raise ValueError(f"{where}: coordinate {act.coordinate!r} of model {model.name!r} is "
                                 f"{dependent[act.coordinate].kind}: an actuator on it does no work")
            else:
                raise ValueError(f"{where}: no coordinate {act.coordinate!r} in model {model.name!r}")
            continue
        for w in actuator_wrenches(model, kin, act):
            out[:, :, j] += w.generalized(kin)
    angles = {c for j in angular_velocity_joints(model) if j.index is not None for c in j.coordinates}
    about_speeds = [j for j, act in enumerate(actuators)
                    if act.kind == "CoordinateActuator" and act.coordinate in angles]
    if about_speeds:  # OpenSim's mobility forces, about its speeds
        out[:, :, about_speeds] = forces_about_coordinates(model, q, out[:, :, about_speeds])
    return out


def ode_rhs(model: Model, generalized_forces: Callable[[float, np.ndarray, np.ndarray], Any] | None = None,
            external_loads=None, elements: np.ndarray | None = None):
    """The first-order ODE y = (q, qdot) -> (qdot, qddot) with SciPy's ``fun(t, y)`` contract.

    ``generalized_forces(t, q, qdot)`` returns tau (n_q,) added to G (e.g. R(q) F_mt
    or actuator torques); omitted: a passive system under gravity.  ``external_loads`` (an
    :class:`osim_emb.io.external_loads.ExternalLoads`) are applied in the kernel as :func:`external_load_forces`
    applies them.  ``elements``: a compiled force-element table
    (:func:`osim_emb.simulation.force_elements.compiled_rows`) evaluated in the kernel.

    The function evaluates the compiled model (:meth:`osim_emb.core.compiled.CompiledModel.ode_rhs`): M, N q̇
    and G of Eqs 145, 126 and 187 and the solve for q̈ in one kernel call, a few microseconds.
    """
    cm = compiled_model(model)
    if external_loads is None:
        return cm.ode_rhs(generalized_forces, elements)
    try:
        return cm.ode_rhs(generalized_forces, elements, loads=cm.external_loads(model, external_loads))
    except ValueError:  # a load on a body the compiled dynamics leaves out: applied from Python instead
        def forces(t, q, qdot):
            tau = external_load_forces(model, q[None, :], external_loads.at([t]))[0]
            if generalized_forces is None:
                return tau
            extra = generalized_forces(t, q, qdot) if callable(generalized_forces) else generalized_forces
            return tau + np.asarray(extra, dtype=float)
        return cm.ode_rhs(forces, elements)
