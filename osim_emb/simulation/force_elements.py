"""The laws of OpenSim's passive forces without a path (records of :mod:`osim_emb.io.force_elements`) as body
wrenches and generalized forces at states (q, q̇) and time t, for the minimal-coordinate ODE (docs/forces.md).

Each wrench acts on the material point of its body at a ground point; its generalized forces are Eq 46's
virtual work, τ_k = F·(ω_k × p + v_k) + M·ω_k (:class:`osim_emb.core.dynamics.BodyWrench`).  The laws are
Simbody's (the code OpenSim 4.6 runs):

* HuntCrossleyForce: Hertz force (4/3) k d √(R k d) with k = E^(2/3) weighted by the two surfaces' stiffness, the
  Hunt-Crossley damping (1 + 3/2 c v_n), friction with a Stribeck transition; contacts found as Simbody's
  GeneralContactSubsystem finds them, in its order, and Simbody's stop at the first contact whose force would pull
  (the later contacts of that force element get none in that state);
* SmoothSphereHalfSpaceForce: the same laws smoothed by tanh steps (Simbody's SmoothSphereHalfSpaceForce);
* PointToPointSpring: k (L - L0) along the line between the points;
* BushingForce: -K q_b - C q̇_b on the body-fixed X-Y-Z angles and offset of frame 2 in frame 1 (Simbody's
  LinearBushing: the moment on frame 2 is E⁻ᵀ f in frame 1's axes, E the Euler-rate matrix);
* SpringGeneralizedForce: -k (q - q0) - c q̇ on its coordinate;
* PrescribedForce: force, point and torque as functions of time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from osim_emb.core.dynamics import BodyWrench
from osim_emb.core.kinematics import forward_kinematics
from osim_emb.io.force_elements import (Bushing, CoordinateSpring, HuntCrossleyContact, PointToPointSpring,
                                        PrescribedBodyForce, SmoothSphereHalfSpaceContact, UnappliedForce)
from osim_emb.model import Model

__all__ = ["ForceElements", "model_force_elements", "force_element_wrenches", "force_element_forces",
           "NO_FORCE_ELEMENTS", "warn_unapplied", "compiled_rows", "COMPILED_LAWS"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ForceElements:
    """The force elements a simulation applies (``laws``) and those it leaves out (``unapplied``, with reasons)."""

    laws: tuple = ()
    unapplied: tuple[UnappliedForce, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.laws)

    def describe(self) -> str:
        kinds: dict[str, int] = {}
        for law in self.laws:
            kinds[type(law).__name__] = kinds.get(type(law).__name__, 0) + 1
        return ", ".join(f"{n} {k}" for k, n in kinds.items())


NO_FORCE_ELEMENTS = ForceElements()


def model_force_elements(model: Model) -> ForceElements:
    """The model's applied force elements from the document it was imported from (``appliesForce`` false ones and
    those on locked coordinates left out); those whose law cannot be evaluated (e.g. contact with a mesh, a
    malformed element, a body the model does not have) in ``unapplied`` with the reason."""
    doc = model.extras.get("document")
    if doc is None:
        return NO_FORCE_ELEMENTS
    from osim_emb.io.muscle_xml import element_applies_force
    bodies = {"ground"} | {b.name for b in model.bodies}
    coordinates = set(model.coordinate_names) | {d.name for d in model.dependent_coordinates if d.kind == "coupled"}
    laws, unapplied = [], []
    for f in doc.forces:
        law = f.law
        if law is None or not element_applies_force(f.element, f.name):
            continue
        if isinstance(law, UnappliedForce):
            unapplied.append(law)
            continue
        missing = sorted(b for b in _bodies_of(law) if b not in bodies)
        if missing:
            unapplied.append(UnappliedForce(f.name, f.type, f"body {missing[0]!r} is not in the imported model"))
        elif isinstance(law, CoordinateSpring) and law.coordinate not in coordinates:
            unapplied.append(UnappliedForce(f.name, f.type, f"coordinate {law.coordinate!r} is not a coordinate "
                                                            "or coupled coordinate of the imported model"))
        elif isinstance(law, CoordinateSpring) and _on_spherical_angle(model, law.coordinate):
            unapplied.append(UnappliedForce(f.name, f.type, f"coordinate {law.coordinate!r} is an angle of a "
                                                            "Ball, Free or Ellipsoid joint"))
        else:
            laws.append(law)
    return ForceElements(tuple(laws), tuple(unapplied))


def _on_spherical_angle(model: Model, name: str) -> bool:
    from osim_emb.core.speeds import angular_velocity_joints
    return any(name in j.coordinates for j in angular_velocity_joints(model))


def _bodies_of(law: Any) -> set[str]:
    if isinstance(law, HuntCrossleyContact):
        return {s.body for s in law.surfaces}
    if isinstance(law, SmoothSphereHalfSpaceContact):
        return {law.sphere.body, law.half_space.body}
    if isinstance(law, (PointToPointSpring, Bushing)):
        return {law.body1, law.body2}
    if isinstance(law, PrescribedBodyForce):
        return {law.body}
    return set()


class _State:
    """Body poses and point velocities of N states, for the laws."""

    def __init__(self, model: Model, kin: Any, qdot: np.ndarray):
        self.model, self.kin, self.qdot = model, kin, qdot
        self._frames: dict[str, tuple[int, np.ndarray]] = {}

    def frame(self, body: str, where: str) -> tuple[int, np.ndarray]:
        """(frame index, (N, 4, 4) pose of the body's frame in ground)."""
        if body not in self._frames:
            f, off = self.model.body_pose(body, where)
            self._frames[body] = (f, self.kin.transforms[:, f] @ off)
        return self._frames[body]

    def velocity(self, frame: int, p: np.ndarray) -> np.ndarray:
        """(N, 3) ground velocity of the frame's material point at ground points p (N, 3)."""
        xi = self.kin.jacobian[:, frame]  # (N, nq, 6)
        w = np.einsum("nkc,nk->nc", xi[..., :3], self.qdot)
        v = np.einsum("nkc,nk->nc", xi[..., 3:], self.qdot)
        return np.cross(w, p) + v

    def angular_velocity(self, frame: int) -> np.ndarray:
        return np.einsum("nkc,nk->nc", self.kin.jacobian[:, frame, :, :3], self.qdot)


def _apply(body1: tuple, body2: tuple, p: np.ndarray, f: np.ndarray, torque=None) -> list[BodyWrench]:
    """-f (and -torque) on body 1's material point at p, +f (+torque) on body 2's."""
    (name1, frame1), (name2, frame2) = body1, body2
    return [BodyWrench(name2, frame2, p, f, torque), BodyWrench(name1, frame1, p, -f, None if torque is None else -torque)]


def _spring(law: PointToPointSpring, st: _State) -> list[BodyWrench]:
    where = f"PointToPointSpring {law.name!r}"
    f1, a1 = st.frame(law.body1, where)
    f2, a2 = st.frame(law.body2, where)
    p1 = np.einsum("nij,j->ni", a1[:, :3, :3], law.point1) + a1[:, :3, 3]
    p2 = np.einsum("nij,j->ni", a2[:, :3, :3], law.point2) + a2[:, :3, 3]
    d = p2 - p1
    length = np.linalg.norm(d, axis=1)
    if np.any(length == 0.0):
        raise ValueError(f"{where}: its two points coincide: the spring's direction is undefined")
    tension = law.stiffness * (length - law.rest_length)  # pulls p1 towards p2 when stretched
    f_on_1 = (tension / length)[:, None] * d
    return [BodyWrench(law.body1, f1, p1, f_on_1, None), BodyWrench(law.body2, f2, p2, -f_on_1, None)]


def _bushing(law: Bushing, st: _State) -> list[BodyWrench]:
    from osim_emb.core.kinematics import body_fixed_xyz_angles
    from osim_emb.core.speeds import euler_rate_matrix
    where = f"BushingForce {law.name!r}"
    f1, a1 = st.frame(law.body1, where)
    f2, a2 = st.frame(law.body2, where)
    x_gf, x_gm = a1 @ law.frame1, a2 @ law.frame2
    r_gf = x_gf[:, :3, :3]
    r_fm = np.einsum("nji,njk->nik", r_gf, x_gm[:, :3, :3])
    o_f, o_m = x_gf[:, :3, 3], x_gm[:, :3, 3]
    angles = body_fixed_xyz_angles(r_fm)
    offset = np.einsum("nji,nj->ni", r_gf, o_m - o_f)
    e = euler_rate_matrix(angles[:, 0], angles[:, 1])  # ω_FM in F = E q̇
    if np.any(np.abs(np.cos(angles[:, 1])) < 1e-12):
        raise ValueError(f"{where}: frame 2's second X-Y-Z angle in frame 1 is ±90°: the bushing's angle rates are "
                         "singular there (gimbal lock)")
    w_fm = np.einsum("nji,nj->ni", r_gf, st.angular_velocity(f2) - st.angular_velocity(f1))
    rate_angles = np.linalg.solve(e, w_fm[..., None])[..., 0]
    rate_offset = np.einsum("nji,nj->ni", r_gf, st.velocity(f2, o_m) - st.velocity(f1, o_m))
    q_b = np.concatenate([angles, offset], axis=1)
    qd_b = np.concatenate([rate_angles, rate_offset], axis=1)
    f = -(law.stiffness * q_b + law.damping * qd_b)
    moment_f = np.linalg.solve(np.swapaxes(e, 1, 2), f[:, :3, None])[..., 0]  # E⁻ᵀ f: in F's axes
    moment = np.einsum("nij,nj->ni", r_gf, moment_f)
    force = np.einsum("nij,nj->ni", r_gf, f[:, 3:])
    return _apply((law.body1, f1), (law.body2, f2), o_m, force, moment)


def _friction_magnitude(f, slip, transition: float, static: float, dynamic: float, viscous: float):
    """Simbody's friction magnitude f (min(v/vt, 1)(ud + 2(us − ud)/(1 + (v/vt)²)) + uv v) at slip speed v."""
    rel = slip / transition
    return f * (np.minimum(rel, 1.0) * (dynamic + 2.0 * (static - dynamic) / (1.0 + rel * rel)) + viscous * slip)


def _smooth_contact(law: SmoothSphereHalfSpaceContact, st: _State) -> list[BodyWrench]:
    where = f"SmoothSphereHalfSpaceForce {law.name!r}"
    fs, a_s = st.frame(law.sphere.body, where)
    fh, a_h = st.frame(law.half_space.body, where)
    centre = np.einsum("nij,j->ni", a_s[:, :3, :3], law.sphere.transform[:3, 3]) + a_s[:, :3, 3]
    h = a_h @ law.half_space.transform
    normal = h[:, :3, 0]  # the half space's x axis: into it
    r = law.sphere.radius
    depth = np.einsum("ni,ni->n", centre - h[:, :3, 3], normal) + r
    point = centre + (r - 0.5 * depth)[:, None] * normal
    v = st.velocity(fs, point) - st.velocity(fh, point)
    vn = np.einsum("ni,ni->n", v, normal)
    vt = v - vn[:, None] * normal
    k = 0.5 * law.stiffness ** (2.0 / 3.0)
    cf = law.constant_contact_force
    hertz = (4.0 / 3.0) * k * np.sqrt(r * k) * np.sqrt(depth * depth + cf) ** 1.5
    hertz = hertz * (0.5 + 0.5 * np.tanh(law.hertz_smoothing * depth))
    c = law.dissipation
    hc = hertz * (1.0 + 1.5 * c * vn)
    hc = hc * (0.5 + 0.5 * np.tanh(law.hunt_crossley_smoothing * (vn + 2.0 / (3.0 * c))))
    slip = np.sqrt(np.einsum("ni,ni->n", vt, vt) + cf)
    ff = _friction_magnitude(hc, slip, law.transition_velocity, law.static_friction, law.dynamic_friction,
                             law.viscous_friction)
    force = hc[:, None] * normal + (ff / slip)[:, None] * vt
    # -force on the sphere, +force on the half space
    return _apply((law.sphere.body, fs), (law.half_space.body, fh), point, force)


def _hunt_crossley_contacts(law: HuntCrossleyContact, poses: list[np.ndarray]) -> list[tuple]:
    """The contacts of one state in Simbody's order (GeneralContactSubsystem: sweep and prune along the axis where
    the surfaces' centres vary most, then pair by pair): (i1, i2, location, normal (1 -> 2), radius, depth)."""
    centres = np.array([p[:3, 3] for p in poses])
    radii = np.array([s.radius for s in law.surfaces])
    spread = np.abs(centres - centres.mean(axis=0)).sum(axis=0)
    axis = 0 if spread[0] > spread[1] else 1
    if spread[2] > spread[axis]:
        axis = 2
    start, end = centres[:, axis] - radii, centres[:, axis] + radii
    order = sorted(range(len(poses)), key=lambda i: start[i])
    out = []
    for a, i in enumerate(order):
        for j in order[a + 1:]:
            if start[j] > end[i]:
                break
            reach = radii[i] + radii[j]
            if not float(np.sum((centres[i] - centres[j]) ** 2)) <= reach * reach:
                continue
            kinds = (law.surfaces[i].kind, law.surfaces[j].kind)
            if kinds == ("sphere", "half_space"):
                i1, i2 = j, i
            elif kinds in (("half_space", "sphere"), ("sphere", "sphere")):
                i1, i2 = i, j
            else:
                continue  # two half spaces: no contact
            if law.surfaces[i1].kind == "half_space":
                h, c, r = poses[i1], poses[i2][:3, 3], law.surfaces[i2].radius
                local = h[:3, :3].T @ (c - h[:3, 3])
                depth = r + local[0]
                if depth > 0:
                    out.append((i1, i2, h[:3, :3] @ np.array([depth / 2, local[1], local[2]]) + h[:3, 3],
                                -h[:3, 0], r, depth))
            else:
                c1, c2 = poses[i1][:3, 3], poses[i2][:3, 3]
                r1, r2 = law.surfaces[i1].radius, law.surfaces[i2].radius
                delta = c2 - c1
                dist = float(np.linalg.norm(delta))
                depth = r1 + r2 - dist
                if dist != 0.0 and depth > 0:
                    n = delta / dist
                    out.append((i1, i2, c1 + (r1 - depth / 2) * n, n, r1 * r2 / (r1 + r2), depth))
    return out


def _hunt_crossley(law: HuntCrossleyContact, st: _State) -> list[BodyWrench]:
    where = f"HuntCrossleyForce {law.name!r}"
    frames = [st.frame(s.body, where) for s in law.surfaces]
    stiffness = np.asarray(law.stiffness) ** (2.0 / 3.0)  # Simbody keeps E^(2/3)
    out = []
    for n in range(st.kin.n):
        poses = [a[n] @ s.transform for (_, a), s in zip(frames, law.surfaces)]
        for i1, i2, location, normal, radius, depth in _hunt_crossley_contacts(law, poses):
            k1, k2 = stiffness[i1], stiffness[i2]
            s1 = k2 / (k1 + k2)
            s2 = 1.0 - s1
            location = location + depth * (0.5 - s1) * normal
            k = k1 * s1
            c = law.dissipation[i1] * s1 + law.dissipation[i2] * s2
            hertz = (4.0 / 3.0) * k * depth * np.sqrt(radius * k * depth)
            p = location[None, :]
            sub = _Sub(st, n)
            v = sub.velocity(frames[i1][0], p) - sub.velocity(frames[i2][0], p)
            vn = float(v[0] @ normal)
            f = hertz * (1.0 + 1.5 * c * vn)
            if f <= 0.0:
                break  # Simbody returns here: this element's later contacts get no force in this state
            vt = v[0] - vn * normal
            slip = float(np.linalg.norm(vt))
            force = f * normal
            if slip != 0.0:
                mu = [_pair(getattr(law, name)[i1], getattr(law, name)[i2])
                      for name in ("static_friction", "dynamic_friction", "viscous_friction")]
                force = force + (_friction_magnitude(f, slip, law.transition_velocity, *mu) / slip) * vt
            out += _one_state(st, n, [BodyWrench(law.surfaces[i2].body, frames[i2][0], p, force[None], None),
                                      BodyWrench(law.surfaces[i1].body, frames[i1][0], p, -force[None], None)])
    return out


def _pair(u1: float, u2: float) -> float:
    """Simbody's combined friction coefficient 2 u1 u2 / (u1 + u2) (0 when both are 0)."""
    return 0.0 if u1 == 0.0 and u2 == 0.0 else 2.0 * u1 * u2 / (u1 + u2)


class _Sub:
    """State n of a _State, as a one-state view."""

    def __init__(self, st: _State, n: int):
        self.st, self.n = st, n

    def velocity(self, frame: int, p: np.ndarray) -> np.ndarray:
        xi = self.st.kin.jacobian[self.n, frame]
        qd = self.st.qdot[self.n]
        return np.cross(qd @ xi[:, :3], p) + qd @ xi[:, 3:]


def _one_state(st: _State, n: int, wrenches: list[BodyWrench]) -> list[BodyWrench]:
    """Wrenches of state n as (N, 3) arrays zero in the other states."""
    out = []
    for w in wrenches:
        def full(a):
            if a is None:
                return None
            z = np.zeros((st.kin.n, 3))
            z[n] = a[0]
            return z
        out.append(BodyWrench(w.body, w.frame, full(w.point), full(w.force), full(w.torque)))
    return out


def _prescribed(law: PrescribedBodyForce, st: _State, t: np.ndarray) -> list[BodyWrench]:
    where = f"PrescribedForce {law.name!r}"
    f, a = st.frame(law.body, where)
    pose = a @ law.frame
    x = t[:, None]

    def values(functions):
        return np.stack([np.asarray(fn.evaluate(x, 0).value, dtype=float).reshape(-1) for fn in functions], axis=1)
    out = []
    if law.force is not None:
        force = values(law.force)
        if not law.force_is_global:
            force = np.einsum("nij,nj->ni", pose[:, :3, :3], force)
        if law.point is None:
            p = pose[:, :3, 3]
        else:
            p = values(law.point)
            if not law.point_is_global:
                p = np.einsum("nij,nj->ni", pose[:, :3, :3], p) + pose[:, :3, 3]
        out.append(BodyWrench(law.body, f, p, force, None))
    if law.torque is not None:
        torque = values(law.torque)
        if not law.force_is_global:
            torque = np.einsum("nij,nj->ni", pose[:, :3, :3], torque)
        out.append(BodyWrench(law.body, f, None, None, torque))
    return out


def force_element_wrenches(model: Model, kin: Any, qdot: Any, t: Any, elements: ForceElements) -> list[BodyWrench]:
    """Body wrenches (ground points, forces and torques, N states) of the force elements at the configurations
    of ``kin`` (:func:`osim_emb.core.kinematics.forward_kinematics`, order 1), rates q̇ (N, n_q) and times t."""
    qdot = np.broadcast_to(np.asarray(qdot, dtype=float), kin.q.shape)
    t = np.broadcast_to(np.asarray(t, dtype=float), (kin.n,))
    st = _State(model, kin, qdot)
    out: list[BodyWrench] = []
    for law in elements.laws:
        if isinstance(law, HuntCrossleyContact):
            out += _hunt_crossley(law, st)
        elif isinstance(law, SmoothSphereHalfSpaceContact):
            out += _smooth_contact(law, st)
        elif isinstance(law, PointToPointSpring):
            out += _spring(law, st)
        elif isinstance(law, Bushing):
            out += _bushing(law, st)
        elif isinstance(law, PrescribedBodyForce):
            out += _prescribed(law, st, t)
    return out


def _coordinate_springs(model: Model, elements: ForceElements, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    tau = np.zeros(q.shape)
    coupled = {d.name: d for d in model.dependent_coordinates if d.kind == "coupled"}
    for law in elements.laws:
        if not isinstance(law, CoordinateSpring):
            continue
        if law.coordinate in model.coordinate_names:
            k = model.coordinate_index(law.coordinate)
            tau[:, k] += -law.stiffness * (q[:, k] - law.rest_length) - law.viscosity * qdot[:, k]
        else:
            jet = coupled[law.coordinate].function.evaluate(q, order=1)
            grad = np.asarray(jet.gradient, dtype=float)
            value = np.asarray(jet.value, dtype=float)
            rate = np.einsum("nk,nk->n", grad, qdot)
            tau += (-law.stiffness * (value - law.rest_length) - law.viscosity * rate)[:, None] * grad
    return tau


def force_element_forces(model: Model, elements: ForceElements, t: Any, q: Any, qdot: Any) -> np.ndarray:
    """Generalized forces (N, n_q) of the force elements at times t (N,), configurations q and rates q̇ (N, n_q)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    qdot = np.broadcast_to(np.asarray(qdot, dtype=float), q.shape)
    tau = _coordinate_springs(model, elements, q, qdot)
    if any(not isinstance(law, CoordinateSpring) for law in elements.laws):
        kin = forward_kinematics(model, q, order=1)
        for w in force_element_wrenches(model, kin, qdot, t, elements):
            tau += w.generalized(kin)
    return tau


def warn_unapplied(elements: ForceElements, command: str) -> None:
    """One warning per force element left out, with its reason."""
    for u in elements.unapplied:
        log.warning("%s does not apply %s %r: %s", command, u.type, u.name, u.reason)



#: the laws the compiled right-hand sides evaluate (:func:`compiled_rows`); the others are applied from Python
#: the laws :func:`compiled_rows` compiles (a CoordinateSpring on a generalized coordinate, a PrescribedForce whose
#: functions are constants, linear functions, polynomials, splines or Fourier series; the others stay in Python)
COMPILED_LAWS = (PointToPointSpring, SmoothSphereHalfSpaceContact, HuntCrossleyContact, Bushing, CoordinateSpring,
                 PrescribedBodyForce)


def compiled_rows(model: Model, elements: ForceElements) -> tuple[np.ndarray, ForceElements]:
    """The compiled kernels' force-element table (:data:`osim_emb.core.compiled_kernels.ELEMENT_FLOATS` rows) of
    the elements of :data:`COMPILED_LAWS`, and the elements left to Python (springs on coupled coordinates,
    prescribed forces with other functions).
    A ValueError (naming the element) when a body is not part of the compiled dynamics (a massless body)."""
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core.compiled import compiled_model, element_table
    cm = compiled_model(model)
    rows, rest = [], []

    def frame(body, where):
        return cm.body_frame(model, body, where)

    def pose12(t):
        return list(t[:3, :3].ravel()) + list(t[:3, 3])
    for law in elements.laws:
        where = f"{type(law).__name__} {law.name!r}"
        if isinstance(law, PointToPointSpring):
            row = [K.EL_SPRING]
            for body, point in ((law.body1, law.point1), (law.body2, law.point2)):
                cf, t = frame(body, where)
                row += [cf, *(t @ np.append(point, 1.0))[:3]]
            rows.append(row + [law.stiffness, law.rest_length])
        elif isinstance(law, SmoothSphereHalfSpaceContact):
            fs, ts = frame(law.sphere.body, where)
            fh, th = frame(law.half_space.body, where)
            h = th @ law.half_space.transform
            rows.append([K.EL_SMOOTH_CONTACT, fs, *(ts @ law.sphere.transform)[:3, 3], law.sphere.radius, fh,
                         *h[:3, 0], *h[:3, 3], law.stiffness, law.dissipation, law.static_friction,
                         law.dynamic_friction, law.viscous_friction, law.transition_velocity,
                         law.constant_contact_force, law.hertz_smoothing, law.hunt_crossley_smoothing])
        elif isinstance(law, HuntCrossleyContact):
            rows.append([K.EL_CONTACT_SET, len(law.surfaces), law.transition_velocity])
            for i, surface in enumerate(law.surfaces):
                cf, t = frame(surface.body, where)
                rows.append([K.EL_CONTACT_SURFACE, cf, float(surface.kind == "sphere"),
                             surface.radius if surface.kind == "sphere" else 0.0, *pose12(t @ surface.transform),
                             law.stiffness[i] ** (2.0 / 3.0), law.dissipation[i], law.static_friction[i],
                             law.dynamic_friction[i], law.viscous_friction[i]])
        elif isinstance(law, Bushing):
            f1, t1 = frame(law.body1, where)
            f2, t2 = frame(law.body2, where)
            rows.append([K.EL_BUSHING, f1, *pose12(t1 @ law.frame1), f2, *pose12(t2 @ law.frame2)])
            rows.append([K.EL_BUSHING_GAINS, *law.stiffness, *law.damping])
        elif isinstance(law, CoordinateSpring) and law.coordinate in model.coordinate_names:
            rows.append([K.EL_COORDINATE_SPRING, model.coordinate_index(law.coordinate), law.stiffness,
                         law.rest_length, law.viscosity])
        elif isinstance(law, PrescribedBodyForce) and (curves := _time_curve_rows(law)) is not None:
            f, t = frame(law.body, where)
            groups = (law.force, law.point, law.torque)
            rows.append([K.EL_PRESCRIBED, f, *pose12(t @ law.frame), float(law.force_is_global),
                         float(law.point_is_global), *(float(g is not None) for g in groups), 1 + len(curves)])
            rows += curves
        else:
            rest.append(law)
    return element_table(rows), ForceElements(tuple(rest), elements.unapplied)


def _time_curve_rows(law: PrescribedBodyForce) -> list | None:
    """The EL_CURVE rows of a prescribed force's functions of time (force, point, torque: those it has), or None
    when one is of a type the kernels do not evaluate (it then stays in Python)."""
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core.compiled import _univariate_parameters
    from osim_emb.core.functions.basic import Constant, Linear, Polynomial
    rows = []
    for group in (law.force, law.point, law.torque):
        for fn in group or ():
            if type(fn) is Constant:  # c and a t + b as the polynomials they are
                fn = Polynomial([fn.value])
            elif type(fn) is Linear and fn.coefficients.size == 1:
                fn = Polynomial([fn.coefficients[0], fn.intercept])
            encoded = _univariate_parameters(fn)
            if encoded is None:
                return None
            packed = [*map(float, encoded[0]), *map(float, encoded[1])]
            rows.append([K.EL_CURVE, len(encoded[0]), len(encoded[1])])
            rows += [packed[k:k + K.ELEMENT_FLOATS] for k in range(0, len(packed), K.ELEMENT_FLOATS)]
    return rows
