"""OpenSim's generalized speeds u beside the package's coordinate rates q̇.

The package's state is (q, q̇): every speed is the time derivative of its coordinate.  OpenSim's state is
(q, u), and u = q̇ except for the three rotations of the joints on Simbody's Ball, Free and Ellipsoid mobilizers
(``BallJoint``, ``FreeJoint``, ``EllipsoidJoint`` and the first three coordinates of ``ScapulothoracicJoint``).
There OpenSim keeps body-fixed X-Y-Z angles (a, b, c) as coordinates, but its speeds are the angular velocity of
the child's joint frame M in the parent's joint frame F, expressed in F (``RigidBodyNodeSpec_Ball.h``,
``_Free.h``, ``_Ellipsoid.h``)::

    u = ω_FM = E(a, b) q̇,   E = [x, Rx(a) y, Rx(a) Ry(b) z]
      = [[1, 0, sin b], [0, cos a, -sin a cos b], [0, sin a, cos a cos b]],   det E = cos b.

So a states file OpenSim writes (or reads) holds u for those rotations, its generalized forces on them (moment
arms, CoordinateActuators, inverse dynamics) are about the speeds: f_u = E⁻ᵀ f_q.  The free joint's
translations are the origin's position in F, whose speeds are their rates.  At b = ±π/2 (gimbal lock) the angles
have no rates: :func:`rates_from_speeds` refuses such a configuration by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ANGULAR_VELOCITY_JOINTS", "AngularVelocityJoint", "SpeedMapError", "angular_velocity_joints",
           "euler_rate_matrix", "coordinate_speeds", "speeds_from_rates", "rates_from_speeds", "forces_about_speeds",
           "forces_about_coordinates", "speed_accelerations", "speed_jacobian"]

#: OpenSim joints whose first three coordinates' speeds are the angular velocity ω_FM in F
ANGULAR_VELOCITY_JOINTS = ("BallJoint", "FreeJoint", "EllipsoidJoint", "ScapulothoracicJoint")
#: |cos b| below which E(a, b) is taken as singular (b within ~1e-10 rad of ±π/2)
GIMBAL_LOCK = 1e-10


class SpeedMapError(ValueError):
    """OpenSim's speeds cannot be turned into coordinate rates (or back): the message names the joint and why."""


@dataclass(frozen=True)
class AngularVelocityJoint:
    """A joint whose rotations' OpenSim speeds are ω_FM: its name, type, the three angles' names and their
    positions among the model's generalized coordinates (None where an angle is not a generalized coordinate:
    coupled, locked or constant)."""

    name: str
    type: str
    coordinates: tuple[str, str, str]
    index: tuple[int, int, int] | None


def angular_velocity_joints(model: Any) -> tuple[AngularVelocityJoint, ...]:
    """The model's joints of :data:`ANGULAR_VELOCITY_JOINTS` (from the OpenSim document it was read from; a model
    built otherwise has none).  Cached on the (immutable) model."""
    cached = model.__dict__.get("_angular_velocity_joints")
    if cached is not None:
        return cached
    doc = model.extras.get("document") if isinstance(getattr(model, "extras", None), dict) else None
    position = {c: k for k, c in enumerate(model.coordinate_names)}
    found = []
    for j in (doc.joints if doc is not None else ()):
        if j.type not in ANGULAR_VELOCITY_JOINTS or len(j.coordinates) < 3:
            continue
        names = tuple(c.name for c in j.coordinates[:3])
        index = tuple(position.get(n) for n in names)
        found.append(AngularVelocityJoint(j.name, j.type, names, None if None in index else index))
    out = tuple(found)
    object.__setattr__(model, "_angular_velocity_joints", out)
    return out


def euler_rate_matrix(a: Any, b: Any) -> np.ndarray:
    """E(a, b) (N, 3, 3) of body-fixed X-Y-Z angles: ω_FM (in F) = E q̇ (see the module docstring)."""
    a = np.atleast_1d(np.asarray(a, dtype=float))
    b = np.atleast_1d(np.asarray(b, dtype=float))
    ca, sa, cb, sb = np.cos(a), np.sin(a), np.cos(b), np.sin(b)
    e = np.zeros((a.shape[0], 3, 3))
    e[:, 0, 0] = 1.0
    e[:, 1, 1], e[:, 2, 1] = ca, sa
    e[:, 0, 2], e[:, 1, 2], e[:, 2, 2] = sb, -sa * cb, ca * cb
    return e


def _as_rows(x: Any, n_q: int, what: str) -> np.ndarray:
    x = np.array(x, dtype=float)
    if x.ndim == 1:
        x = x.reshape(1, -1)
    if x.ndim != 2 or x.shape[1] != n_q:
        raise ValueError(f"{what} must have shape (N, {n_q}), got {x.shape}")
    return x


def coordinate_speeds(model: Any, q: Any, qdot: Any, jet: Any = None) -> dict[str, np.ndarray]:
    """OpenSim's speed u (N,) of every coordinate, the generalized ones then the dependent ones (coupled, locked,
    constant: their rates from their functions' gradients), from the generalized coordinates' rates q̇ at
    configurations q: u = E q̇ on the rotations of Ball, Free and Ellipsoid joints, u = q̇ elsewhere.  ``jet(f, q,
    order)`` evaluates a dependent coordinate's function (default its own ``evaluate``;
    ``functions.program.dependent_jet``: a closed chain's variable by its compiled program)."""
    q = _as_rows(q, model.n_q, "q")
    qd = _as_rows(qdot, model.n_q, "qdot")
    values = {c: q[:, k] for k, c in enumerate(model.coordinate_names)}
    speeds = {c: qd[:, k] for k, c in enumerate(model.coordinate_names)}
    for d in model.dependent_coordinates:
        j = d.function.evaluate(q, order=1) if jet is None else jet(d.function, q, 1)
        values[d.name] = np.broadcast_to(np.asarray(j.value, dtype=float), (len(q),))
        speeds[d.name] = np.einsum("nk,nk->n", np.asarray(j.gradient, dtype=float).reshape(len(q), -1), qd)
    for j in angular_velocity_joints(model):
        if not all(c in values for c in j.coordinates):
            continue
        e = euler_rate_matrix(values[j.coordinates[0]], values[j.coordinates[1]])
        u = np.einsum("nij,nj->ni", e, np.column_stack([speeds[c] for c in j.coordinates]))
        for k, c in enumerate(j.coordinates):
            speeds[c] = u[:, k]
    return speeds


def speeds_from_rates(model: Any, q: Any, qdot: Any, jet: Any = None) -> np.ndarray:
    """OpenSim's speeds u (N, n_q) of the generalized coordinates from their rates q̇ at configurations q: u = E q̇
    on the rotations of Ball, Free and Ellipsoid joints, u = q̇ elsewhere (an angle that is a dependent coordinate
    enters through its function, :func:`coordinate_speeds`).

    Parameters
    ----------
    model : Model
        The model (read from an .osim file: its joint types decide).
    q, qdot : array_like
        (N, n_q) or (n_q,) configurations (rad, m) and rates (rad/s, m/s).
    jet : callable, optional
        ``jet(f, q, order)``: how a dependent coordinate's function is evaluated (:func:`coordinate_speeds`).

    Returns
    -------
    numpy.ndarray
        (N, n_q) speeds, as OpenSim's state and states files hold them.

    Examples
    --------
    >>> import numpy as np, osim_emb as oe
    >>> from osim_emb.core.speeds import speeds_from_rates
    >>> arm = oe.load_builtin("arm26")
    >>> speeds_from_rates(arm, arm.default_q, [0.5, 1.0]).tolist()  # pin joints: u = q̇
    [[0.5, 1.0]]
    """
    if not angular_velocity_joints(model):
        _as_rows(q, model.n_q, "q")
        return _as_rows(qdot, model.n_q, "qdot")  # (a copy) u = q̇
    speeds = coordinate_speeds(model, q, qdot, jet)
    return np.stack([speeds[c] for c in model.coordinate_names], axis=1)


def rates_from_speeds(model: Any, q: Any, u: Any, *, source: str = "", others: Any = None) -> np.ndarray:
    """The coordinate rates q̇ (N, n_q) from OpenSim's speeds u at configurations q: q̇ = E⁻¹ u on the rotations of
    Ball, Free and Ellipsoid joints (closed form), q̇ = u elsewhere.  A configuration in gimbal lock
    (|cos b| < 1e-10 on such a joint) is refused with the joint, the frame and ``source`` (e.g. the file).

    Parameters
    ----------
    model : Model
        The model (read from an .osim file: its joint types decide).
    q, u : array_like
        (N, n_q) or (n_q,) configurations (rad, m) and OpenSim's speeds (rad/s, m/s).
    source : str, optional
        Where the speeds come from, for the error message.
    others : mapping, optional
        Name -> (values (N,), speeds (N,)) of coordinates that are not generalized (a states file's columns): a
        joint whose angles are not all generalized coordinates (one solved from a loop, say) needs its other angles'
        values and OpenSim speeds; without them it is refused by name.

    Returns
    -------
    numpy.ndarray
        (N, n_q) rates of the generalized coordinates.

    Examples
    --------
    >>> import numpy as np, osim_emb as oe
    >>> from osim_emb.core.speeds import rates_from_speeds
    >>> arm = oe.load_builtin("arm26")
    >>> rates_from_speeds(arm, arm.default_q, [0.5, 1.0]).tolist()
    [[0.5, 1.0]]
    """
    q = _as_rows(q, model.n_q, "q")
    qd = _as_rows(u, model.n_q, "u")
    speeds = qd.copy()
    others = others or {}
    for j in angular_velocity_joints(model):
        position = [model.coordinate_index(n) if n in model.coordinate_names else None for n in j.coordinates]
        fixed = [n for n, k in zip(j.coordinates, position) if k is None and n not in others]
        if fixed:
            raise SpeedMapError(f"{source + ': ' if source else ''}{j.type} {j.name!r} of model {model.name!r}: "
                                "OpenSim's speeds of its rotations are angular velocities, and with "
                                f"{', '.join(map(repr, fixed))} not a generalized coordinate (coupled, locked or "
                                "constant) and no value and speed of it given, the package cannot turn them into the "
                                "angles' rates")
        angle = [q[:, k] if k is not None else np.broadcast_to(np.asarray(others[n][0], dtype=float), q.shape[:1])
                 for n, k in zip(j.coordinates, position)]
        w = [speeds[:, k] if k is not None else np.broadcast_to(np.asarray(others[n][1], dtype=float), q.shape[:1])
             for n, k in zip(j.coordinates, position)]
        a, b = angle[0], angle[1]
        ca, sa, cb, sb = np.cos(a), np.sin(a), np.cos(b), np.sin(b)
        locked = np.flatnonzero(np.abs(cb) < GIMBAL_LOCK)
        if locked.size:
            n = int(locked[0])
            raise SpeedMapError(f"{source + ': ' if source else ''}{j.type} {j.name!r} is in gimbal lock at frame "
                                f"{n} ({j.coordinates[1]!r} = {b[n]:.12g} rad, cos = {cb[n]:.3g}): OpenSim's angular "
                                "velocity there has no rates of the X-Y-Z angles")
        c_rate = (ca * w[2] - sa * w[1]) / cb
        rates = (w[0] - sb * c_rate, ca * w[1] + sa * w[2], c_rate)
        for k, r in zip(position, rates):
            if k is not None:
                qd[:, k] = r
    return qd


def _map_angle_blocks(model: Any, q: Any, f: Any, block_map) -> np.ndarray:
    """f (N, n_q, ...) or (n_q,) with each Ball/Free/Ellipsoid joint's three angle rows replaced by
    ``block_map(E, rows)`` (E (N, 3, 3), rows (N, 3, k)); joints whose angles are not all generalized coordinates are
    left as they are."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    out = np.array(f, dtype=float, copy=True)
    single = out.ndim == 1  # one configuration's (n_q,)
    if single:
        out = out[None]
    for j in angular_velocity_joints(model):
        if j.index is None:
            continue
        k = list(j.index)
        e = euler_rate_matrix(q[:, k[0]], q[:, k[1]])
        out[:, k] = block_map(e, out[:, k].reshape(len(q), 3, -1)).reshape(out[:, k].shape)
    return out[0] if single else out


def forces_about_speeds(model: Any, q: Any, f: Any) -> np.ndarray:
    """Generalized forces (or moment arms) about the coordinates, f (N, n_q, ...), turned into OpenSim's basis, about
    its speeds: E⁻ᵀ f on the rotations of Ball, Free and Ellipsoid joints (power f_q·q̇ = f_u·u), unchanged
    elsewhere.  A joint whose angles are not all generalized coordinates is left as it is."""
    return _map_angle_blocks(model, q, f, lambda e, rows: np.linalg.solve(np.transpose(e, (0, 2, 1)), rows))


def forces_about_coordinates(model: Any, q: Any, f: Any) -> np.ndarray:
    """OpenSim's mobility forces about its speeds, f (N, n_q, ...), as generalized forces about the coordinates: Eᵀ f on
    the rotations of Ball, Free and Ellipsoid joints (a CoordinateActuator there is a torque about an axis of F),
    unchanged elsewhere; the inverse of :func:`forces_about_speeds`."""
    return _map_angle_blocks(model, q, f, lambda e, rows: np.einsum("nji,njc->nic", e, rows))


def speed_jacobian(model: Any, q: Any) -> np.ndarray:
    """J (N, n_q, n_q) with OpenSim's speeds u = J q̇ of the generalized coordinates: E on the blocks of the rotations
    of Ball, Free and Ellipsoid joints, the identity elsewhere (OpenSim's mass matrix about its speeds M_u gives the
    package's M = Jᵀ M_u J)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    jac = np.broadcast_to(np.eye(model.n_q), (len(q), model.n_q, model.n_q)).copy()
    for j in angular_velocity_joints(model):
        if j.index is not None:
            k = list(j.index)
            jac[np.ix_(range(len(q)), k, k)] = euler_rate_matrix(q[:, k[0]], q[:, k[1]])
    return jac


def speed_accelerations(model: Any, q: Any, qdot: Any, qddot: Any) -> np.ndarray:
    """OpenSim's u̇ (N, n_q) from q, q̇, q̈: d(E q̇)/dt = E q̈ + Ė q̇ on the rotations of Ball, Free and Ellipsoid joints
    (Ė's columns 0, ȧ (0, −sin a, cos a), (ḃ cos b, −ȧ cos a cos b + ḃ sin a sin b, −ȧ sin a cos b − ḃ cos a sin b)),
    q̈ elsewhere."""
    q = _as_rows(q, model.n_q, "q")
    qd = _as_rows(qdot, model.n_q, "qdot")
    out = _as_rows(qddot, model.n_q, "qddot")
    for j in angular_velocity_joints(model):
        if j.index is None:
            continue
        k = list(j.index)
        a, b = q[:, k[0]], q[:, k[1]]
        ad, bd, cd = qd[:, k[0]], qd[:, k[1]], qd[:, k[2]]
        ca, sa, cb, sb = np.cos(a), np.sin(a), np.cos(b), np.sin(b)
        bias = np.stack([bd * cb * cd,
                         -ad * sa * bd + (-ad * ca * cb + bd * sa * sb) * cd,
                         ad * ca * bd + (-ad * sa * cb - bd * ca * sb) * cd], axis=1)
        out[:, k] = np.einsum("nij,nj->ni", euler_rate_matrix(a, b), out[:, k]) + bias
    return out
