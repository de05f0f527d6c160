"""The immutable model description of an empirically-based multibody system (seed section 3-1).

A model is a tree of one-degree-of-freedom joints.  Joint ``i`` (numbered
1..n_j in Featherstone order, the ground is frame 0) places the local frame
``i`` relative to its parent frame ``pr(i)`` by

    ^{pr(i)}_i A_4 = C_i exp(^A_i f_i(q))                              (Eqs 38-39, 69-71)

where ``C_i`` is a constant homogeneous transform, ``^A_i`` the constant joint
matrix of a revolute (rotation about the unit axis V) or prismatic
(translation along the unit axis V) joint, and ``f_i(q)`` the joint variable,
a smooth function of the generalized coordinates q.  The seed's form, in
which the parent frame is translated by d_i along V_d and then rotated by
theta_i about V_theta, is the special case built by :meth:`Joint.seed_revolute`
and :meth:`Joint.seed_prismatic`: every formula of the seed depends on the
joint only through ``d(A)/df = A ^A`` and holds unchanged for the general form.

Bodies carry the inertia and sit on a joint frame at a constant transform, so
that a multi-axis OpenSim joint becomes a chain of one-DOF joints through
massless frames.  State (q, qdot, qddot) is never stored on the model: it is
passed as arrays to the free functions of :mod:`osim_emb.core.kinematics` and
:mod:`osim_emb.core.dynamics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from osim_emb.core.calculus import skew
from osim_emb.core.functions.base import JointFunction, readonly

__all__ = [
    "REVOLUTE",
    "PRISMATIC",
    "ModelError",
    "GeneralizedCoordinate",
    "DependentCoordinate",
    "Joint",
    "Body",
    "Model",
    "rotation_about_axis",
    "homogeneous",
]

REVOLUTE = "revolute"
PRISMATIC = "prismatic"


class ModelError(ValueError):
    """An inconsistent model description (unknown parent, wrong function inputs, ...)."""


def rotation_about_axis(axis: Sequence[float], angle: Any) -> np.ndarray:
    """Eq 39: A = I + ~V sin(theta) + 2 ~V^2 sin^2(theta/2), batched over ``angle``."""
    v = np.asarray(axis, dtype=float)
    angle = np.asarray(angle, dtype=float)
    vt = skew(v)
    s = np.sin(angle)[..., None, None]
    h = (2.0 * np.sin(angle / 2.0) ** 2)[..., None, None]
    return np.eye(3) + vt * s + (vt @ vt) * h


def homogeneous(rotation: Any = None, translation: Any = None) -> np.ndarray:
    """4x4 homogeneous transform [[R, p], [0, 1]]."""
    t = np.eye(4)
    if rotation is not None:
        t[:3, :3] = rotation
    if translation is not None:
        t[:3, 3] = translation
    return t


def _unit(v: Sequence[float], what: str) -> np.ndarray:
    v = np.asarray(v, dtype=float).reshape(3)
    n = np.linalg.norm(v)
    if not np.isfinite(n) or n < 1e-12:
        raise ModelError(f"{what}: axis {v.tolist()} has zero length")
    return v / n


def _check_transform(t: Any, what: str) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    if t.shape != (4, 4) or not np.all(np.isfinite(t)):
        raise ModelError(f"{what}: expected a finite 4x4 transform")
    r = t[:3, :3]
    if np.max(np.abs(r.T @ r - np.eye(3))) > 1e-9 or np.linalg.det(r) < 0:
        raise ModelError(f"{what}: the rotation part is not a proper rotation matrix")
    if np.max(np.abs(t[3] - [0, 0, 0, 1])) > 0:
        raise ModelError(f"{what}: the last row must be [0, 0, 0, 1]")
    return t


@dataclass(frozen=True)
class GeneralizedCoordinate:
    """One independent generalized coordinate q_k (an unlocked, undriven OpenSim coordinate)."""

    name: str
    range: tuple[float, float] = (-np.inf, np.inf)
    default: float = 0.0
    motion_type: str = "rotational"  # rotational | translational
    clamped: bool = False
    default_speed: float = 0.0

    def __post_init__(self):
        lo, hi = (float(self.range[0]), float(self.range[1]))
        if not lo <= hi:
            raise ModelError(f"coordinate {self.name!r}: range [{lo}, {hi}] is empty")
        object.__setattr__(self, "range", (lo, hi))
        object.__setattr__(self, "default", float(self.default))
        object.__setattr__(self, "default_speed", float(self.default_speed))


@dataclass(frozen=True)
class DependentCoordinate:
    """An OpenSim coordinate that is not generalized: locked (constant) or driven by couplers.

    ``function`` gives its value as a function of the generalized coordinates.
    """

    name: str
    function: JointFunction
    kind: str  # "locked" | "coupled" | "constant"
    source: str = ""
    range: tuple[float, float] = (-np.inf, np.inf)
    default: float = 0.0
    motion_type: str = "rotational"


@dataclass(frozen=True, eq=False)
class Joint:
    """A one-degree-of-freedom joint: ^{pr(i)}_i A_4 = offset . exp(^A f(q)).

    ``axis`` is V_theta (revolute) or V_d (prismatic), a unit vector in the
    frame reached after ``offset`` (which the joint motion leaves invariant).
    """

    name: str
    parent: int
    kind: str
    axis: np.ndarray
    variable: JointFunction
    offset: np.ndarray = field(default_factory=lambda: np.eye(4))
    source: str = ""

    def __post_init__(self):
        if self.kind not in (REVOLUTE, PRISMATIC):
            raise ModelError(f"joint {self.name!r}: kind must be 'revolute' or 'prismatic', not {self.kind!r}")
        object.__setattr__(self, "axis", readonly(_unit(self.axis, f"joint {self.name!r}")))
        object.__setattr__(self, "offset", readonly(_check_transform(self.offset, f"joint {self.name!r} offset")))
        if not isinstance(self.variable, JointFunction):
            raise ModelError(f"joint {self.name!r}: variable must be a JointFunction")

    # -- the seed's parameterisation (Fig 1, Eqs 38-39) ----------------------
    @classmethod
    def seed_revolute(cls, name: str, parent: int, v_d: Sequence[float], d: float,
                      v_theta: Sequence[float], variable: JointFunction, source: str = "") -> "Joint":
        """Revolute joint of the seed: translate d along V_d, then rotate f(q) about V_theta."""
        v_d = _unit(v_d, f"joint {name!r} V_d") if d != 0 else np.zeros(3)
        return cls(name, parent, REVOLUTE, v_theta, variable, homogeneous(None, d * v_d), source)

    @classmethod
    def seed_prismatic(cls, name: str, parent: int, v_d: Sequence[float], variable: JointFunction,
                       v_theta: Sequence[float], theta: float, source: str = "") -> "Joint":
        """Prismatic joint of the seed: translate f(q) along V_d, then rotate theta about V_theta.

        T(f V_d) R(V_theta, theta) = R(V_theta, theta) T(f R^T V_d): the offset is the
        rotation and the sliding axis, seen after it, is R^T V_d (Eq 71).
        """
        v_d = _unit(v_d, f"joint {name!r} V_d")
        r = rotation_about_axis(_unit(v_theta, f"joint {name!r} V_theta"), theta)
        return cls(name, parent, PRISMATIC, r.T @ v_d, variable, homogeneous(r, None), source)

    @property
    def is_revolute(self) -> bool:
        return self.kind == REVOLUTE

    @property
    def joint_matrix(self) -> np.ndarray:
        """The constant joint matrix ^A_i with d(^{pr(i)}_i A_4)/df = ^{pr(i)}_i A_4 ^A_i (Eqs 70-71)."""
        a = np.zeros((4, 4))
        if self.is_revolute:
            a[:3, :3] = skew(self.axis)
        else:
            a[:3, 3] = self.axis
        return a

    def local_transform(self, value: Any) -> np.ndarray:
        """^{pr(i)}_i A_4 for joint-variable values of any shape (..., 4, 4)."""
        value = np.asarray(value, dtype=float)
        m = np.broadcast_to(np.eye(4), value.shape + (4, 4)).copy()
        if self.is_revolute:
            m[..., :3, :3] = rotation_about_axis(self.axis, value)
        else:
            m[..., :3, 3] = value[..., None] * self.axis
        return self.offset @ m

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Joint):
            return NotImplemented
        return (self.name == other.name and self.parent == other.parent and self.kind == other.kind
                and np.array_equal(self.axis, other.axis) and np.array_equal(self.offset, other.offset)
                and self.variable == other.variable and self.source == other.source)

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body attached to joint frame ``frame`` (0 = ground) at the constant pose ``frame_to_body``.

    ``com`` and ``inertia`` (about the centre of mass) are in the body's own frame;
    ``frame_to_body`` maps body coordinates to frame coordinates.
    """

    name: str
    frame: int
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    frame_to_body: np.ndarray = field(default_factory=lambda: np.eye(4))

    def __post_init__(self):
        if not np.isfinite(self.mass) or self.mass < 0:
            raise ModelError(f"body {self.name!r}: mass must be finite and >= 0, got {self.mass}")
        object.__setattr__(self, "mass", float(self.mass))
        com = np.asarray(self.com, dtype=float).reshape(3)
        inertia = np.asarray(self.inertia, dtype=float)
        if inertia.shape == (6,):  # xx yy zz xy xz yz
            xx, yy, zz, xy, xz, yz = inertia
            inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T):
            raise ModelError(f"body {self.name!r}: inertia must be a symmetric 3x3 matrix")
        object.__setattr__(self, "com", readonly(com))
        object.__setattr__(self, "inertia", readonly(inertia))
        object.__setattr__(self, "frame_to_body",
                           readonly(_check_transform(self.frame_to_body, f"body {self.name!r} pose")))

    @property
    def pseudo_inertia(self) -> np.ndarray:
        """J of Eq 131 about the body frame's origin: [[int r r^T dm, m c], [m c^T, m]].

        The upper-left block is the second-moment (Euler) tensor
        E = tr(I_O)/2 I_3 - I_O, with I_O the inertia tensor about the origin.
        """
        m, c = self.mass, self.com
        i_o = self.inertia + m * (c @ c * np.eye(3) - np.outer(c, c))
        j = np.zeros((4, 4))
        j[:3, :3] = 0.5 * np.trace(i_o) * np.eye(3) - i_o
        j[:3, 3] = m * c
        j[3, :3] = m * c
        j[3, 3] = m
        return j

    def pseudo_inertia_in_frame(self) -> np.ndarray:
        """The pseudo-inertia expressed in the joint frame the body sits on: X J X^T."""
        x = self.frame_to_body
        return x @ self.pseudo_inertia @ x.T

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Body):
            return NotImplemented
        return (self.name == other.name and self.frame == other.frame and self.mass == other.mass
                and np.array_equal(self.com, other.com) and np.array_equal(self.inertia, other.inertia)
                and np.array_equal(self.frame_to_body, other.frame_to_body))

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Model:
    """An immutable empirically-based multibody model.

    ``joints[i - 1]`` is joint/frame ``i`` (frame 0 is the ground).  Parents
    precede children (Featherstone numbering), and every joint variable is a
    function of all ``n_q`` generalized coordinates.

    ``paths`` (musculotendon paths, :mod:`osim_emb.muscles`) and ``extras``
    (anything an importer wants to keep, e.g. conversion notes) are optional.
    """

    name: str
    coordinates: tuple[GeneralizedCoordinate, ...]
    joints: tuple[Joint, ...]
    bodies: tuple[Body, ...] = ()
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.80665, 0.0]))
    dependent_coordinates: tuple[DependentCoordinate, ...] = ()
    muscles: tuple[Any, ...] = ()
    wrap_objects: tuple[Any, ...] = ()
    extras: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "coordinates", tuple(self.coordinates))
        object.__setattr__(self, "joints", tuple(self.joints))
        object.__setattr__(self, "bodies", tuple(self.bodies))
        object.__setattr__(self, "dependent_coordinates", tuple(self.dependent_coordinates))
        object.__setattr__(self, "muscles", tuple(self.muscles))
        object.__setattr__(self, "wrap_objects", tuple(self.wrap_objects))
        object.__setattr__(self, "gravity", readonly(np.asarray(self.gravity, dtype=float).reshape(3)))
        nq = len(self.coordinates)
        _unique([c.name for c in self.coordinates] + [d.name for d in self.dependent_coordinates],
                "coordinate")
        _unique([j.name for j in self.joints], "joint")
        _unique([b.name for b in self.bodies], "body")
        parents = np.empty(len(self.joints) + 1, dtype=int)
        parents[0] = -1
        for i, j in enumerate(self.joints, start=1):
            if not 0 <= j.parent < i:
                raise ModelError(
                    f"joint {j.name!r} (frame {i}): parent frame {j.parent} must precede it (Featherstone numbering)")
            if j.variable.n_inputs != nq:
                raise ModelError(
                    f"joint {j.name!r}: its variable takes {j.variable.n_inputs} inputs, the model has {nq} coordinates")
            parents[i] = j.parent
        for b in self.bodies:
            if not 0 <= b.frame <= len(self.joints):
                raise ModelError(f"body {b.name!r}: frame {b.frame} does not exist")
        for d in self.dependent_coordinates:
            if d.function.n_inputs != nq:
                raise ModelError(f"dependent coordinate {d.name!r}: its function must take {nq} inputs")
        parents.setflags(write=False)
        object.__setattr__(self, "_parents", parents)
        pj = np.zeros((len(self.joints) + 1, 4, 4))
        for b in self.bodies:
            pj[b.frame] += b.pseudo_inertia_in_frame()
        pj.setflags(write=False)
        object.__setattr__(self, "_frame_pseudo_inertia", pj)

    # -- sizes and names ---------------------------------------------------
    @property
    def n_q(self) -> int:
        return len(self.coordinates)

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    @property
    def n_frames(self) -> int:
        """Frames including the ground (n_joints + 1)."""
        return len(self.joints) + 1

    @property
    def coordinate_names(self) -> list[str]:
        return [c.name for c in self.coordinates]

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @property
    def body_names(self) -> list[str]:
        return [b.name for b in self.bodies]

    @property
    def default_q(self) -> np.ndarray:
        return np.array([c.default for c in self.coordinates])

    @property
    def default_speeds(self) -> np.ndarray:
        """The generalized coordinates' default speeds as the file sets them (``default_speed_value``: rad/s, m/s):
        OpenSim's speeds u, on the rotations of Ball, Free and Ellipsoid joints the angular velocity."""
        return np.array([c.default_speed for c in self.coordinates])

    @property
    def default_qdot(self) -> np.ndarray:
        """The rates q̇ of OpenSim's default state at the default configuration: the default speeds, turned into the
        angles' rates on Ball, Free and Ellipsoid joints (:func:`osim_emb.core.speeds.rates_from_speeds`)."""
        speeds = self.default_speeds
        if not speeds.any():
            return speeds
        from osim_emb.core.speeds import rates_from_speeds
        return rates_from_speeds(self, self.default_q, speeds, source=f"model {self.name!r} default speeds")[0]

    @property
    def coordinate_ranges(self) -> np.ndarray:
        """(n_q, 2) lower and upper bounds."""
        return np.array([c.range for c in self.coordinates], dtype=float).reshape(-1, 2)

    # -- tree (pr, Anc) ------------------------------------------------------
    @property
    def parents(self) -> np.ndarray:
        """pr(i) for every frame i (pr(0) = -1)."""
        return self._parents

    def parent(self, i: int) -> int:
        return int(self._parents[i])

    def ancestors(self, i: int) -> list[int]:
        """Anc(i): the moving ancestors of frame i, nearest first (the ground excluded)."""
        out = []
        p = int(self._parents[i])
        while p > 0:
            out.append(p)
            p = int(self._parents[p])
        return out

    def chain(self, i: int) -> list[int]:
        """Anc(i) U {i} from the root down."""
        return list(reversed([i] + self.ancestors(i))) if i > 0 else []

    @property
    def frame_pseudo_inertia(self) -> np.ndarray:
        """(n_frames, 4, 4): J_i of Eq 131 of every frame, the sum of the bodies on it."""
        return self._frame_pseudo_inertia

    @property
    def dynamics_model(self) -> "Model":
        """The same multibody system without the frames that carry no mass and support none that does
        (moving-via-point frames, for instance): M, N and G are unchanged, and cheaper to evaluate."""
        cached = self.__dict__.get("_dynamics_model")
        if cached is not None:
            return cached
        pj = self._frame_pseudo_inertia
        needed = np.zeros(self.n_frames, dtype=bool)
        for i in range(self.n_frames - 1, 0, -1):
            if needed[i] or np.any(pj[i]):
                needed[i] = True
                needed[self._parents[i]] = True
        keep = [i for i in range(1, self.n_frames) if needed[i]]
        if len(keep) == self.n_joints:
            sub = self
        else:
            new_index = {0: 0, **{old: k + 1 for k, old in enumerate(keep)}}
            joints = []
            for old in keep:
                j = self.joints[old - 1]
                joints.append(Joint(j.name, new_index[j.parent], j.kind, j.axis, j.variable, j.offset, j.source))
            bodies = [Body(b.name, new_index[b.frame], b.mass, b.com, b.inertia, b.frame_to_body)
                      for b in self.bodies if b.frame in new_index and (b.mass > 0 or np.any(b.inertia))]
            sub = Model(self.name, self.coordinates, joints, bodies, self.gravity, extras={"dynamics_of": self.name})
        object.__setattr__(self, "_dynamics_model", sub)
        return sub

    # -- lookup ------------------------------------------------------------
    def coordinate_index(self, name: str) -> int:
        for k, c in enumerate(self.coordinates):
            if c.name == name:
                return k
        raise KeyError(f"no generalized coordinate named {name!r}; have {', '.join(self.coordinate_names)}")

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(f"no body named {name!r}")

    def body_pose(self, name: str, where: str) -> tuple[int, np.ndarray]:
        """(frame index, the body's frame in that frame, 4x4) of body ``name``; the ground is frame 0.  A ValueError
        naming ``where`` (the element that names the body) when the model has no such body."""
        if name == "ground":
            return 0, np.eye(4)
        try:
            b = self.body(name)
        except KeyError:
            raise ValueError(f"{where}: no body {name!r} in model {self.name!r}") from None
        return b.frame, np.asarray(b.frame_to_body, dtype=float)

    def body_index(self, name: str) -> int:
        for k, b in enumerate(self.bodies):
            if b.name == name:
                return k
        raise KeyError(f"no body named {name!r}")

    def frame_index(self, joint_name: str) -> int:
        for i, j in enumerate(self.joints, start=1):
            if j.name == joint_name:
                return i
        raise KeyError(f"no joint named {joint_name!r}")

    def dependent_coordinate(self, name: str) -> DependentCoordinate:
        for d in self.dependent_coordinates:
            if d.name == name:
                return d
        raise KeyError(f"no dependent coordinate named {name!r}")

    def check_configuration(self, q: Any, *, tolerance: float = 1e-9) -> np.ndarray:
        """Return q as an (N, n_q) array, raising a clear error if any coordinate is out of its range."""
        q = np.asarray(q, dtype=float)
        if q.ndim == 1:
            q = q.reshape(1, -1)
        if q.ndim != 2 or q.shape[1] != self.n_q:
            raise ValueError(f"q must have shape (N, {self.n_q}) for model {self.name!r}, got {q.shape}")
        lo, hi = self.coordinate_ranges.T
        bad = (q < lo - tolerance) | (q > hi + tolerance)
        if np.any(bad):
            n, k = np.argwhere(bad)[0]
            c = self.coordinates[k]
            raise ValueError(
                f"coordinate {c.name!r} = {q[n, k]:.6g} is outside its range [{c.range[0]:.6g}, {c.range[1]:.6g}]"
                f" (configuration {n})")
        return q

    def replace(self, **changes: Any) -> "Model":
        """A copy with some fields replaced (the model itself never changes)."""
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__}
        fields.update(changes)
        return Model(**fields)

    def __repr__(self) -> str:
        wraps = f", {len(self.wrap_objects)} wrap objects" if self.wrap_objects else ""
        deps = f" (+{len(self.dependent_coordinates)} dependent)" if self.dependent_coordinates else ""
        return (f"<Model {self.name!r}: {self.n_q} coordinates{deps}, {len(self.bodies)} bodies, "
                f"{self.n_joints} one-DOF joints, {len(self.muscles)} muscles{wraps}>")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Model):
            return NotImplemented
        return (self.name == other.name and self.coordinates == other.coordinates
                and self.joints == other.joints and self.bodies == other.bodies
                and np.array_equal(self.gravity, other.gravity)
                and self.dependent_coordinates == other.dependent_coordinates
                and self.muscles == other.muscles and self.wrap_objects == other.wrap_objects)

    __hash__ = object.__hash__


def _unique(names: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ModelError(f"duplicate {what} name {n!r}")
        seen.add(n)
