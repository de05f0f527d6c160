"""Planar n-link musculoskeletal chain: parameters and kinematics.

Seed: *closed-form dynamic equations of a planar musculoskeletal chain*
(``shared/seeds/planar_musculoskeletal_chain_closed_form.txt``), section 2.1.

Conventions (those of the seed, Fig. 1 and Nomenclature)
--------------------------------------------------------
* Links ``i = 0 .. n``; link 0 is the fixed base, link ``i`` (``i >= 1``) turns
  about joint ``J_i`` (between link ``i-1`` and link ``i``) and carries the
  next joint ``J_{i+1}``.  ``J_0`` is a point of the base and ``J_{n+1}`` a
  point of link ``n``, both arbitrary.
* ``l_i = |J_i J_{i+1}|``, ``u_i`` the unit vector of ``J_i J_{i+1}``,
  ``theta_i`` its angle from the horizontal X axis (counter-clockwise
  positive), ``w_i = k x u_i``.  ``theta_0`` is a constant of the chain.
* Centre of mass ``C_i`` at distance ``l_Ci`` from ``J_i``, at angle
  ``eps_Ci`` from ``u_i``; mass ``m_i``; moment of inertia ``I_Ci`` about
  ``C_i`` and ``I_Ji = I_Ci + m_i l_Ci^2`` about ``J_i``.
* Contact resistance ``R_i`` (a magnitude) applied at ``P_Ri`` (distance
  ``l_Ri`` from ``J_i`` at angle ``eps_Ri`` from ``u_i``), its direction at
  angle ``gamma_Ri`` from ``u_i``.  ``R_i`` and ``gamma_Ri`` are per-state
  arrays; ``l_Ri`` and ``eps_Ri`` are link parameters.
* Gravity ``g = -g Y`` (Y vertical, up).
* The origin of the global frame is the centre of joint 1, ``J_1``.
* Muscles are linear force actuators between a point of link ``a`` and a point
  of link ``b`` (``a != b``): with tension ``T >= 0`` the force on link ``b``
  is ``F_ba = T (P_a - P_b)/|P_a - P_b|`` and ``F_ab = -F_ba`` (seed:
  ``F_ij = -F_ji``).  Points are given in the frame of their link: origin
  ``J_i``, x along ``u_i``, y along ``w_i``.

State arrays are batched: ``theta``, ``dtheta``, ``ddtheta`` have shape
``(N, n)`` (links 1..n; ``theta_0`` is taken from the chain); a single state of
shape ``(n,)`` is accepted and the results then lose their leading axis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

__all__ = [
    "Link",
    "Muscle",
    "PlanarChain",
    "ChainState",
    "as_state",
    "unit",
    "perp",
    "joint_positions",
    "point_positions",
    "com_positions",
    "com_accelerations",
    "muscle_geometry",
    "muscle_forces",
    "muscle_joint_moments",
    "muscle_torques",
    "spanning_muscle_force",
    "contact_vectors",
    "contact_from_vectors",
    "base_contact_for_equilibrium",
    "with_base_equilibrium",
]


def unit(phi: np.ndarray) -> np.ndarray:
    """``u(phi) = (cos phi, sin phi)`` along a new last axis."""
    phi = np.asarray(phi, dtype=float)
    return np.stack([np.cos(phi), np.sin(phi)], axis=-1)


def perp(phi: np.ndarray) -> np.ndarray:
    """``w(phi) = k x u(phi) = (-sin phi, cos phi)`` along a new last axis."""
    phi = np.asarray(phi, dtype=float)
    return np.stack([-np.sin(phi), np.cos(phi)], axis=-1)


def _finite(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


@dataclass(frozen=True)
class Link:
    """Parameters of one link (seed section 2.1, Fig. 1).

    Parameters
    ----------
    length : ``l_i = |J_i J_{i+1}|`` (m).
    mass : ``m_i`` (kg).
    com_distance : ``l_Ci = |J_i C_i|`` (m).
    com_angle : ``eps_Ci``, angle from ``u_i`` to ``J_i C_i`` (rad).
    inertia : ``I_Ci``, moment of inertia about ``C_i`` and the normal ``k`` (kg m^2).
    contact_distance, contact_angle : ``l_Ri`` and ``eps_Ri`` locating ``P_Ri``.
    name : a label used in tables and figures (default ``"link i"``).
    """

    length: float
    mass: float = 0.0
    com_distance: float = 0.0
    com_angle: float = 0.0
    inertia: float = 0.0
    contact_distance: float = 0.0
    contact_angle: float = 0.0
    name: str = ""

    def __post_init__(self) -> None:
        for f in ("length", "mass", "com_distance", "com_angle", "inertia", "contact_distance", "contact_angle"):
            object.__setattr__(self, f, _finite(f, getattr(self, f)))
        for f in ("length", "mass", "com_distance", "inertia", "contact_distance"):
            if getattr(self, f) < 0.0:
                raise ValueError(f"Link.{f} must be >= 0, got {getattr(self, f)}")

    @property
    def inertia_joint(self) -> float:
        """``I_Ji = I_Ci + m_i l_Ci^2`` (Huygens-Steiner, seed after Eq 13)."""
        return self.inertia + self.mass * self.com_distance**2

    @property
    def com_local(self) -> np.ndarray:
        """``J_i C_i`` in the link frame (x along ``u_i``, y along ``w_i``)."""
        return self.com_distance * np.array([np.cos(self.com_angle), np.sin(self.com_angle)])

    @property
    def contact_local(self) -> np.ndarray:
        """``J_i P_Ri`` in the link frame."""
        return self.contact_distance * np.array([np.cos(self.contact_angle), np.sin(self.contact_angle)])

    @classmethod
    def slender_rod(cls, length: float, mass: float, name: str = "") -> "Link":
        """Uniform slender rod: ``l_C = l/2``, ``eps_C = 0``, ``I_C = m l^2/12`` (Appendix A)."""
        return cls(length=length, mass=mass, com_distance=length / 2.0, inertia=mass * length**2 / 12.0, name=name)


def _point(name: str, p: Sequence[float]) -> tuple[float, float]:
    arr = np.asarray(p, dtype=float)
    if arr.shape != (2,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be two finite numbers (x along u_i, y along w_i), got {p!r}")
    return (float(arr[0]), float(arr[1]))


@dataclass(frozen=True)
class Muscle:
    """A linear force actuator joining link ``link_a`` to link ``link_b``.

    ``point_a`` (on link a) and ``point_b`` (on link b) are ``(x, y)`` in the
    frame of their link (origin ``J_i``, x along ``u_i``, y along ``w_i``).
    The muscle spans joints ``min(a, b) + 1 .. max(a, b)``.
    """

    name: str
    link_a: int
    link_b: int
    point_a: tuple[float, float]
    point_b: tuple[float, float]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a muscle needs a non-empty name")
        for f in ("link_a", "link_b"):
            v = getattr(self, f)
            if isinstance(v, bool) or int(v) != v:
                raise ValueError(f"Muscle {self.name!r}: {f} must be an integer link index, got {v!r}")
            object.__setattr__(self, f, int(v))
        if self.link_a == self.link_b:
            raise ValueError(
                f"Muscle {self.name!r} joins link {self.link_a} to itself: a muscle must join two different links"
            )
        object.__setattr__(self, "point_a", _point(f"Muscle {self.name!r}: point_a", self.point_a))
        object.__setattr__(self, "point_b", _point(f"Muscle {self.name!r}: point_b", self.point_b))

    @property
    def proximal(self) -> int:
        return min(self.link_a, self.link_b)

    @property
    def distal(self) -> int:
        return max(self.link_a, self.link_b)

    @property
    def span(self) -> int:
        """Number of joints spanned, ``|b - a|`` (``n_s`` is the largest span of the chain)."""
        return self.distal - self.proximal

    def spans(self, joint: int) -> bool:
        """True when the muscle crosses joint ``J_joint`` (between links joint-1 and joint)."""
        return self.proximal < joint <= self.distal

    @classmethod
    def from_polar(cls, name: str, link_a: int, dist_a: float, angle_a: float, link_b: int, dist_b: float,
                   angle_b: float) -> "Muscle":
        """Attachment points given like ``P_Ri``: a distance from ``J_i`` and an angle from ``u_i``."""
        return cls(name, link_a, link_b, (dist_a * np.cos(angle_a), dist_a * np.sin(angle_a)),
                   (dist_b * np.cos(angle_b), dist_b * np.sin(angle_b)))


@dataclass(frozen=True)
class PlanarChain:
    """A base link 0 and links 1..n joined by ideal revolute joints, with muscles.

    Parameters
    ----------
    links : ``(link_0, link_1, ..., link_n)``; ``links[0]`` is the fixed base.
    muscles : linear force actuators (names must be unique).
    base_angle : ``theta_0`` (rad), constant.
    gravity : ``g`` (m/s^2), acting along ``-Y``.
    """

    links: tuple[Link, ...]
    muscles: tuple[Muscle, ...] = ()
    base_angle: float = 0.0
    gravity: float = 9.80665
    _arrays: dict = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        links = tuple(self.links)
        if len(links) < 2:
            raise ValueError("a chain needs a base link 0 and at least one moving link (len(links) >= 2)")
        for i, link in enumerate(links):
            if not isinstance(link, Link):
                raise ValueError(f"links[{i}] is not a Link: {link!r}")
        n = len(links) - 1
        named = []
        for i, link in enumerate(links):
            named.append(link if link.name else Link(**{**link.__dict__, "name": f"link {i}"}))
        object.__setattr__(self, "links", tuple(named))
        muscles = tuple(self.muscles)
        names = set()
        for m in muscles:
            if not isinstance(m, Muscle):
                raise ValueError(f"muscles must be Muscle objects, got {m!r}")
            for f in ("link_a", "link_b"):
                idx = getattr(m, f)
                if not 0 <= idx <= n:
                    raise ValueError(f"Muscle {m.name!r}: {f} = {idx} is out of range 0..{n} for a chain of {n} links")
            if m.name in names:
                raise ValueError(f"duplicate muscle name {m.name!r}")
            names.add(m.name)
        object.__setattr__(self, "muscles", muscles)
        object.__setattr__(self, "base_angle", _finite("base_angle", self.base_angle))
        object.__setattr__(self, "gravity", _finite("gravity", self.gravity))
        object.__setattr__(self, "_arrays", self._build_arrays())

    def _build_arrays(self) -> dict:
        L = self.links
        arr = {
            "l": np.array([k.length for k in L]),
            "m": np.array([k.mass for k in L]),
            "lC": np.array([k.com_distance for k in L]),
            "eC": np.array([k.com_angle for k in L]),
            "IC": np.array([k.inertia for k in L]),
            "lR": np.array([k.contact_distance for k in L]),
            "eR": np.array([k.contact_angle for k in L]),
        }
        M = len(self.muscles)
        arr["mus_a"] = np.array([m.link_a for m in self.muscles], dtype=int).reshape(M)
        arr["mus_b"] = np.array([m.link_b for m in self.muscles], dtype=int).reshape(M)
        arr["mus_pa"] = np.array([m.point_a for m in self.muscles], dtype=float).reshape(M, 2)
        arr["mus_pb"] = np.array([m.point_b for m in self.muscles], dtype=float).reshape(M, 2)
        # muscle m spans joint k (1..n): min < k <= max  -> (M, n)
        k = np.arange(1, self.n + 1)
        lo = np.minimum(arr["mus_a"], arr["mus_b"])[:, None]
        hi = np.maximum(arr["mus_a"], arr["mus_b"])[:, None]
        arr["spans"] = (lo < k[None, :]) & (k[None, :] <= hi)
        for v in arr.values():
            v.setflags(write=False)
        return arr

    # ------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of moving links (and of joints)."""
        return len(self.links) - 1

    @property
    def n_muscles(self) -> int:
        return len(self.muscles)

    @property
    def max_span(self) -> int:
        """``n_s``: the largest number of joints spanned by one muscle (0 without muscles)."""
        return max((m.span for m in self.muscles), default=0)

    @property
    def muscle_names(self) -> list[str]:
        return [m.name for m in self.muscles]

    @property
    def link_names(self) -> list[str]:
        return [k.name for k in self.links]

    def array(self, key: str) -> np.ndarray:
        """Read-only parameter arrays: ``l, m, lC, eC, IC, lR, eR`` (length n+1) and muscle arrays."""
        return self._arrays[key]

    def spans(self) -> np.ndarray:
        """Boolean (n_muscles, n): muscle m crosses joint k+1."""
        return self._arrays["spans"]


@dataclass(frozen=True)
class ChainState:
    """Validated, batched state arrays (internal helper; see :func:`as_state`)."""

    theta: np.ndarray  # (N, n+1) including theta_0
    dtheta: np.ndarray  # (N, n+1), column 0 is zero
    ddtheta: np.ndarray  # (N, n+1), column 0 is zero
    single: bool

    @property
    def N(self) -> int:
        return self.theta.shape[0]


def _batch2(name: str, a, n_cols: int, N: int | None) -> tuple[np.ndarray, bool]:
    arr = np.asarray(a, dtype=float)
    single = arr.ndim == 1
    if single:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != n_cols:
        raise ValueError(f"{name} must have shape (N, {n_cols}) or ({n_cols},), got {np.shape(a)}")
    if N is not None and arr.shape[0] != N:
        raise ValueError(f"{name} has {arr.shape[0]} states where {N} were expected (mismatched batch sizes)")
    return arr, single


def as_state(chain: PlanarChain, theta, dtheta=None, ddtheta=None) -> ChainState:
    """Validate state arrays of shape (N, n) (or (n,)) and prepend the base link's column."""
    n = chain.n
    th, single = _batch2("theta", theta, n, None)
    N = th.shape[0]
    dth = np.zeros_like(th) if dtheta is None else _batch2("dtheta", dtheta, n, N)[0]
    ddth = np.zeros_like(th) if ddtheta is None else _batch2("ddtheta", ddtheta, n, N)[0]
    col0 = np.full((N, 1), chain.base_angle)
    z = np.zeros((N, 1))
    return ChainState(np.hstack([col0, th]), np.hstack([z, dth]), np.hstack([z, ddth]), single)


def _out(x: np.ndarray, single: bool) -> np.ndarray:
    return x[0] if single else x


def as_loads(chain: PlanarChain, N: int, tension=None, R=None, gamma_R=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate tension (N, n_muscles), R and gamma_R (N, n+1); None means zeros. 1-D rows broadcast."""
    n1 = chain.n + 1

    def get(name, a, cols):
        if a is None:
            return np.zeros((N, cols))
        arr = np.asarray(a, dtype=float)
        if arr.ndim == 1:
            if arr.shape[0] != cols:
                raise ValueError(f"{name} must have shape (N, {cols}) or ({cols},), got {arr.shape}")
            return np.broadcast_to(arr, (N, cols))
        if arr.shape != (N, cols):
            raise ValueError(f"{name} must have shape ({N}, {cols}), got {arr.shape}")
        return arr

    return get("tension", tension, chain.n_muscles), get("R", R, n1), get("gamma_R", gamma_R, n1)


# ---------------------------------------------------------------------- kinematics
def joint_positions(chain: PlanarChain, theta) -> np.ndarray:
    """Positions of ``J_0 .. J_{n+1}``, shape (N, n+2, 2), with ``J_1`` at the origin."""
    st = as_state(chain, theta)
    l = chain.array("l")
    u = unit(st.theta)  # (N, n+1, 2)
    seg = l[None, :, None] * u  # J_i J_{i+1}
    J = np.zeros((st.N, chain.n + 2, 2))
    J[:, 0] = -seg[:, 0]
    J[:, 2:] = np.cumsum(seg[:, 1:], axis=1)
    return _out(J, st.single)


def point_positions(chain: PlanarChain, theta, links, points) -> np.ndarray:
    """Global positions of points given in link frames.

    ``links`` (P,) link indices, ``points`` (P, 2) local coordinates; returns (N, P, 2).
    """
    st = as_state(chain, theta)
    links = np.asarray(links, dtype=int).reshape(-1)
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    if links.shape[0] != points.shape[0]:
        raise ValueError("links and points must have the same length")
    if np.any((links < 0) | (links > chain.n)):
        raise ValueError(f"link index out of range 0..{chain.n}: {links}")
    J = joint_positions(chain, st.theta[:, 1:])
    th = st.theta[:, links]  # (N, P)
    P = J[:, links] + points[None, :, 0, None] * unit(th) + points[None, :, 1, None] * perp(th)
    return _out(P, st.single)


def com_positions(chain: PlanarChain, theta) -> np.ndarray:
    """Positions of ``C_0 .. C_n``, (N, n+1, 2)."""
    idx = np.arange(chain.n + 1)
    pts = np.array([k.com_local for k in chain.links])
    return point_positions(chain, theta, idx, pts)


def com_accelerations(chain: PlanarChain, theta, dtheta, ddtheta) -> np.ndarray:
    """Accelerations ``a_Ci`` of the centres of mass by Eq 5, (N, n+1, 2); ``a_C0 = 0``.

    ``a_Ci = sum_{j<i} (thdd_j l_j w_j - thd_j^2 l_j u_j) + thdd_i l_Ci w_Ci - thd_i^2 l_Ci u_Ci``.
    """
    st = as_state(chain, theta, dtheta, ddtheta)
    l, lC, eC = chain.array("l"), chain.array("lC"), chain.array("eC")
    th, thd, thdd = st.theta, st.dtheta, st.ddtheta
    seg = l[None, :, None] * (thdd[..., None] * perp(th) - (thd**2)[..., None] * unit(th))  # a_{J_{j+1}} - a_{J_j}
    seg[:, 0] = 0.0  # base fixed
    aJ = np.zeros_like(seg)
    aJ[:, 1:] = np.cumsum(seg[:, :-1], axis=1)[:, : chain.n]  # a_{J_i} = sum_{j<i} seg_j
    phiC = th + eC[None, :]
    aC = aJ + lC[None, :, None] * (thdd[..., None] * perp(phiC) - (thd**2)[..., None] * unit(phiC))
    aC[:, 0] = 0.0
    return _out(aC, st.single)


# ---------------------------------------------------------------------- muscles
def muscle_geometry(chain: PlanarChain, theta) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global points of each muscle and the unit force direction on its link b.

    Returns ``P_a`` (N, M, 2), ``P_b`` (N, M, 2) and ``e_b`` (N, M, 2) with
    ``F_ba = T e_b``, ``e_b = (P_a - P_b)/|P_a - P_b|``.
    """
    st = as_state(chain, theta)
    M = chain.n_muscles
    a, b = chain.array("mus_a"), chain.array("mus_b")
    pa = point_positions(chain, st.theta[:, 1:], a, chain.array("mus_pa")).reshape(st.N, M, 2)
    pb = point_positions(chain, st.theta[:, 1:], b, chain.array("mus_pb")).reshape(st.N, M, 2)
    d = pa - pb
    L = np.linalg.norm(d, axis=-1, keepdims=True)
    if np.any(L <= 0.0):
        raise ValueError("a muscle has coincident attachment points (zero length): its line of action is undefined")
    return _out(pa, st.single), _out(pb, st.single), _out(d / L, st.single)


def muscle_forces(chain: PlanarChain, theta, tension) -> tuple[np.ndarray, np.ndarray]:
    """Forces of each muscle on its links a and b: ``(F_ab, F_ba)``, each (N, M, 2)."""
    st = as_state(chain, theta)
    T = as_loads(chain, st.N, tension)[0]
    _, _, e = muscle_geometry(chain, st.theta[:, 1:])
    Fba = T[..., None] * e
    return _out(-Fba, st.single), _out(Fba, st.single)


def _distal_force(chain: PlanarChain, st: ChainState, T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Force of each muscle on its *distal* link, its distal point, (N, M, 2) each; and the distal index."""
    a, b = chain.array("mus_a"), chain.array("mus_b")
    pa, pb, e = muscle_geometry(chain, st.theta[:, 1:])
    Fba = T[..., None] * e
    b_is_distal = (b > a)[None, :, None]
    F_dist = np.where(b_is_distal, Fba, -Fba)
    P_dist = np.where(b_is_distal, pb, pa)
    return F_dist, P_dist, np.maximum(a, b)


def spanning_muscle_force(chain: PlanarChain, theta, tension, per_muscle: bool = False) -> np.ndarray:
    """Eq 12: ``F^M_{k,k+1} = sum over muscles spanning joint k+1 of F_{j2 j1}`` (force on the distal link).

    Returns (N, n, 2) indexed by joint ``k+1 = 1..n``; with ``per_muscle`` the
    individual terms (N, n, M, 2) (zero for a muscle not spanning the joint).
    """
    st = as_state(chain, theta)
    T = as_loads(chain, st.N, tension)[0]
    if chain.n_muscles == 0:
        shape = (st.N, chain.n, 0, 2) if per_muscle else (st.N, chain.n, 2)
        return _out(np.zeros(shape), st.single)
    F_dist, _, _ = _distal_force(chain, st, T)
    terms = chain.spans().T[None, :, :, None] * F_dist[:, None, :, :]  # (N, n, M, 2)
    return _out(terms if per_muscle else terms.sum(axis=2), st.single)


def muscle_joint_moments(chain: PlanarChain, theta, tension) -> np.ndarray:
    """Eq 22, term by term: moment about ``J_k`` of muscle m's force on its distal link, if m spans joint k.

    Returns (N, n, M): joint k = 1..n, muscle m (zero when m does not span joint k).
    """
    st = as_state(chain, theta)
    T = as_loads(chain, st.N, tension)[0]
    if chain.n_muscles == 0:
        return _out(np.zeros((st.N, chain.n, 0)), st.single)
    F_dist, P_dist, _ = _distal_force(chain, st, T)
    J = joint_positions(chain, st.theta[:, 1:])
    r = P_dist[:, None, :, :] - J[:, 1 : chain.n + 1, None, :]  # (N, n, M, 2)  J_k -> P
    mom = r[..., 0] * F_dist[:, None, :, 1] - r[..., 1] * F_dist[:, None, :, 0]
    return _out(mom * chain.spans().T[None], st.single)


def muscle_torques(chain: PlanarChain, theta, tension) -> np.ndarray:
    """Eq 22: ``tau_k = sum_(muscles spanning joint k) (J_k P_{j2 j1} x F_{j2 j1}) . k``, (N, n)."""
    return muscle_joint_moments(chain, theta, tension).sum(axis=-1)


# ---------------------------------------------------------------------- contact loads
def contact_vectors(chain: PlanarChain, theta, R, gamma_R) -> np.ndarray:
    """Contact forces as global vectors ``R_i u(theta_i + gamma_Ri)``, (N, n+1, 2)."""
    st = as_state(chain, theta)
    _, R, g = as_loads(chain, st.N, None, R, gamma_R)
    return _out(R[..., None] * unit(st.theta + g), st.single)


def contact_from_vectors(chain: PlanarChain, theta, F) -> tuple[np.ndarray, np.ndarray]:
    """Magnitudes ``R_i`` and angles ``gamma_Ri`` (from ``u_i``) of global contact vectors ``F`` (N, n+1, 2)."""
    st = as_state(chain, theta)
    F = np.asarray(F, dtype=float)
    if F.ndim == 2:
        F = F[None]
    if F.shape != (st.N, chain.n + 1, 2):
        raise ValueError(f"F must have shape ({st.N}, {chain.n + 1}, 2), got {np.shape(F)}")
    R = np.linalg.norm(F, axis=-1)
    gamma = np.arctan2(F[..., 1], F[..., 0]) - st.theta
    return _out(R, st.single), _out(gamma, st.single)


def base_contact_for_equilibrium(chain: PlanarChain, theta, dtheta, ddtheta, R=None, gamma_R=None):
    """The base contact ``R_0`` (magnitude, angle from ``u_0``) that satisfies Eq 4.

    Eq 4: ``sum_{i=0}^n (m_i g + R_i) = sum_{i=0}^n m_i a_Ci`` with ``a_C0 = 0``; the
    given ``R_0`` is ignored.  Returns ``(R0, gamma0)`` of shape (N,).
    """
    st = as_state(chain, theta, dtheta, ddtheta)
    _, Rm, gm = as_loads(chain, st.N, None, R, gamma_R)
    aC = com_accelerations(chain, st.theta[:, 1:], st.dtheta[:, 1:], st.ddtheta[:, 1:])
    m = chain.array("m")
    Fi = Rm[:, 1:, None] * unit(st.theta[:, 1:] + gm[:, 1:])
    total_weight = np.array([0.0, -chain.gravity]) * m.sum()
    R0 = (m[None, :, None] * aC).sum(axis=1) - total_weight[None, :] - Fi.sum(axis=1)
    mag = np.linalg.norm(R0, axis=-1)
    gam = np.arctan2(R0[:, 1], R0[:, 0]) - st.theta[:, 0]
    return _out(mag, st.single), _out(gam, st.single)


def with_base_equilibrium(chain: PlanarChain, theta, dtheta, ddtheta, R=None, gamma_R=None):
    """Copies of ``R`` and ``gamma_R`` (N, n+1) whose column 0 satisfies Eq 4."""
    st = as_state(chain, theta, dtheta, ddtheta)
    _, Rm, gm = as_loads(chain, st.N, None, R, gamma_R)
    R0, g0 = base_contact_for_equilibrium(chain, st.theta[:, 1:], st.dtheta[:, 1:], st.ddtheta[:, 1:], Rm, gm)
    Rm, gm = np.array(Rm, dtype=float), np.array(gm, dtype=float)
    Rm[:, 0], gm[:, 0] = R0, g0
    return _out(Rm, st.single), _out(gm, st.single)
