"""Matrix formalism of the Newton-Euler equations (Watanabe's notebook).

Seed: ``shared/seeds/watanabe_matrix_formalism_newton_euler.txt``.

Forward dynamics (seed: "Forward Dynamics")
    ``M(q) qdd = C(q, qd) + G(q) + Q + E`` for the double pendulum, here for
    ``n`` planar links with absolute angles ``q_i`` measured from the downward
    vertical (counter-clockwise positive), as in the notebook:
    ``x = l sin q``, ``y = -l cos q``.  Link ``i`` has joint-to-joint length
    ``l_i``, centre of mass at distance ``lc_i`` from its proximal joint, at
    angle ``beta_i`` from the link axis, mass ``m_i`` and moment of inertia
    ``I_i`` about its centre of mass.  With ``a_kj = l_j`` (j < k),
    ``a_kk = lc_k``, ``phi_kj = q_j`` (j < k), ``phi_kk = q_k + beta_k``::

        M_ij = I_i delta_ij + sum_k m_k a_ki a_kj cos(phi_ki - phi_kj)
        C_i  = - sum_j sum_k m_k a_ki a_kj sin(phi_ki - phi_kj) qd_j^2
        G_i  = - g sum_k m_k a_ki sin(phi_ki)
        Q_i  = M_i - M_{i+1}            (joint torques; M_i acts on link i and -M_i on link i-1)
        E_i  = sum of F . dP/dq_i       (external forces F at points P)

    For two slender rods this is the notebook's equation, whose ``G_1`` is
    ``-(m1 l1/2 + m2 l1) g sin q1``.  The notebook's *code* uses
    ``m2 g l2 sin q1`` instead (:func:`notebook_gravity_vector`); the
    difference is shown in ``validation/newton_euler``.

Inverse dynamics (seed: "Inverse dynamics")
    Newton-Euler per segment, moments in the segment basis (``v^S = R_S v^G``),
    cross products as skew matrices ``S(v) w = v x w``, the unknown joint
    forces and moments collected in one vector and found by one linear solve:
    :func:`foot_shank_inverse_dynamics` (the notebook's 12 x 12 system,
    literally) and :func:`chain_inverse_dynamics` (the general recipe for a
    chain of rigid segments).

The OpenSim cross-checks (a pendulum chain read from an OpenSim model, the foot-shank loads from OpenSim's
inverse dynamics) are in :mod:`osim_emb.opensim.newton_euler`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = [
    "PendulumChain",
    "mass_matrix",
    "velocity_vector",
    "gravity_vector",
    "notebook_gravity_vector",
    "joint_torque_vector",
    "point_force_vector",
    "forward_dynamics",
    "make_rhs",
    "simulate",
    "energy",
    "positions",
    "skew",
    "RigidSegment",
    "chain_inverse_dynamics",
    "foot_shank_inverse_dynamics",
]


# =============================================================================== forward dynamics
def _tuple(name: str, v, n: int | None = None) -> tuple[float, ...]:
    arr = np.atleast_1d(np.asarray(v, dtype=float))
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        raise ValueError(f"{name} must be a sequence of {n if n is not None else 'n'} numbers, got {v!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return tuple(float(x) for x in arr)


@dataclass(frozen=True)
class PendulumChain:
    """n planar links hanging from a fixed pivot, absolute angles from the downward vertical.

    ``masses``, ``lengths`` (joint to joint), ``com_distances`` (proximal joint
    to centre of mass), ``inertias`` (about the centre of mass), optional
    ``com_angles`` (angle of the centre of mass from the link axis, rad) and
    ``g`` (magnitude, along -y).
    """

    masses: tuple[float, ...]
    lengths: tuple[float, ...]
    com_distances: tuple[float, ...]
    inertias: tuple[float, ...]
    com_angles: tuple[float, ...] | None = None
    g: float = 9.81

    def __post_init__(self) -> None:
        m = _tuple("masses", self.masses)
        n = len(m)
        if n < 1:
            raise ValueError("a pendulum chain needs at least one link")
        object.__setattr__(self, "masses", m)
        object.__setattr__(self, "lengths", _tuple("lengths", self.lengths, n))
        object.__setattr__(self, "com_distances", _tuple("com_distances", self.com_distances, n))
        object.__setattr__(self, "inertias", _tuple("inertias", self.inertias, n))
        ca = (0.0,) * n if self.com_angles is None else _tuple("com_angles", self.com_angles, n)
        object.__setattr__(self, "com_angles", ca)
        if min(m) < 0 or min(self.inertias) < 0 or min(self.lengths) < 0 or min(self.com_distances) < 0:
            raise ValueError("masses, lengths, com_distances and inertias must be >= 0")
        object.__setattr__(self, "g", float(self.g))

    @property
    def n(self) -> int:
        return len(self.masses)

    @classmethod
    def slender_rods(cls, masses: Sequence[float], lengths: Sequence[float], g: float = 9.81) -> "PendulumChain":
        """Uniform rods: ``lc = l/2``, ``I = m l^2/12`` (the notebook's double pendulum)."""
        m = np.asarray(masses, dtype=float)
        l = np.asarray(lengths, dtype=float)
        return cls(tuple(m), tuple(l), tuple(l / 2), tuple(m * l**2 / 12), None, g)

    def _a_phi(self):
        """Coefficient matrix a (n, n) [k, j] and angle offsets beta (n, n) [k, j]."""
        n = self.n
        l = np.array(self.lengths)
        a = np.tril(np.broadcast_to(l, (n, n)), k=-1) + np.diag(self.com_distances)
        beta = np.diag(self.com_angles)
        return a, beta


def _q2(name, q, n):
    arr = np.asarray(q, dtype=float)
    single = arr.ndim == 1
    if single:
        arr = arr[None]
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(f"{name} must have shape (N, {n}) or ({n},), got {np.shape(q)}")
    return arr, single


def _phi(chain: PendulumChain, q):
    """Angles phi[N, k, j] of the direction of da_k/dq_j (q_j + beta_kj)."""
    a, beta = chain._a_phi()
    return a, q[:, None, :] + beta[None]


def mass_matrix(chain: PendulumChain, q) -> np.ndarray:
    """``M(q)``, shape (N, n, n) (or (n, n) for one state)."""
    q, single = _q2("q", q, chain.n)
    a, phi = _phi(chain, q)
    m = np.array(chain.masses)
    # M_ij = sum_k m_k a_ki a_kj cos(phi_ki - phi_kj)
    c = np.cos(phi[:, :, :, None] - phi[:, :, None, :])  # (N, k, i, j)
    M = np.einsum("k,ki,kj,nkij->nij", m, a, a, c) + np.diag(chain.inertias)[None]
    return M[0] if single else M


def velocity_vector(chain: PendulumChain, q, qd) -> np.ndarray:
    """``C(q, qd)`` (centripetal terms; absolute angles have no Coriolis products), (N, n)."""
    q, single = _q2("q", q, chain.n)
    qd, _ = _q2("qd", qd, chain.n)
    if qd.shape[0] != q.shape[0]:
        raise ValueError("q and qd must have the same number of states")
    a, phi = _phi(chain, q)
    m = np.array(chain.masses)
    s = np.sin(phi[:, :, :, None] - phi[:, :, None, :])
    C = -np.einsum("k,ki,kj,nkij,nj->ni", m, a, a, s, qd**2)
    return C[0] if single else C


def gravity_vector(chain: PendulumChain, q) -> np.ndarray:
    """``G(q) = -g sum_k m_k a_ki sin(phi_ki)`` (the notebook's *equation*), (N, n)."""
    q, single = _q2("q", q, chain.n)
    a, phi = _phi(chain, q)
    m = np.array(chain.masses)
    G = -chain.g * np.einsum("k,ki,nki->ni", m, a, np.sin(phi))
    return G[0] if single else G


def notebook_gravity_vector(chain: PendulumChain, q) -> np.ndarray:
    """The notebook's *code* for G (n = 2): ``-m1 g lc1 sin q1 - m2 g l2 sin q1`` and ``-m2 g lc2 sin q2``.

    The equation has ``l1`` where the code has ``l2`` (seed, cell In [139]).
    """
    if chain.n != 2:
        raise ValueError("the notebook's code is for the double pendulum (n = 2)")
    q, single = _q2("q", q, 2)
    m1, m2 = chain.masses
    l1, l2 = chain.lengths
    lc1, lc2 = chain.com_distances
    g = chain.g
    G = np.stack([-m1 * g * lc1 * np.sin(q[:, 0]) - m2 * g * l2 * np.sin(q[:, 0]),
                  -m2 * g * lc2 * np.sin(q[:, 1])], axis=1)
    return G[0] if single else G


def joint_torque_vector(chain: PendulumChain, torques) -> np.ndarray:
    """``Q`` from joint torques ``M_i`` (N, n): ``Q_i = M_i - M_{i+1}`` (notebook: ``[M1 - M12, M12]``)."""
    tq, single = _q2("torques", torques, chain.n)
    Q = tq.copy()
    Q[:, :-1] -= tq[:, 1:]
    return Q[0] if single else Q


def positions(chain: PendulumChain, q) -> tuple[np.ndarray, np.ndarray]:
    """Joint positions (N, n+1, 2) (pivot at the origin) and centre-of-mass positions (N, n, 2)."""
    q, single = _q2("q", q, chain.n)
    l = np.array(chain.lengths)
    e = np.stack([np.sin(q), -np.cos(q)], axis=-1)
    J = np.concatenate([np.zeros((q.shape[0], 1, 2)), np.cumsum(l[None, :, None] * e, axis=1)], axis=1)
    qc = q + np.array(chain.com_angles)[None]
    C = J[:, :-1] + np.array(chain.com_distances)[None, :, None] * np.stack([np.sin(qc), -np.cos(qc)], axis=-1)
    return (J[0], C[0]) if single else (J, C)


def point_force_vector(chain: PendulumChain, q, link: int, distance: float, angle: float, force) -> np.ndarray:
    """``E`` of an external force ``force`` (N, 2) at a point of ``link`` (0-based).

    The point is at ``distance`` from the link's proximal joint, at ``angle``
    from its axis.  ``E_j = F . dP/dq_j``.
    """
    q, single = _q2("q", q, chain.n)
    if not 0 <= link < chain.n:
        raise ValueError(f"link index {link} out of range 0..{chain.n - 1}")
    F = np.broadcast_to(np.asarray(force, dtype=float), (q.shape[0], 2))
    l = np.array(chain.lengths)
    E = np.zeros_like(q)
    for j in range(link):  # small fixed loop over links, vectorized over states
        E[:, j] = l[j] * (F[:, 0] * np.cos(q[:, j]) + F[:, 1] * np.sin(q[:, j]))
    ph = q[:, link] + angle
    E[:, link] = distance * (F[:, 0] * np.cos(ph) + F[:, 1] * np.sin(ph))
    return E[0] if single else E


def forward_dynamics(chain: PendulumChain, q, qd, Q=None, E=None, gravity: str = "equation") -> np.ndarray:
    """``qdd = M(q)^{-1} (C + G + Q + E)``, batched; ``gravity="notebook"`` uses the notebook's code for G."""
    q2, single = _q2("q", q, chain.n)
    qd2, _ = _q2("qd", qd, chain.n)
    rhs = velocity_vector(chain, q2, qd2)
    if gravity == "equation":
        rhs = rhs + gravity_vector(chain, q2)
    elif gravity == "notebook":
        rhs = rhs + notebook_gravity_vector(chain, q2)
    else:
        raise ValueError("gravity must be 'equation' or 'notebook'")
    if Q is not None:
        rhs = rhs + _q2("Q", Q, chain.n)[0]
    if E is not None:
        rhs = rhs + _q2("E", E, chain.n)[0]
    qdd = np.linalg.solve(mass_matrix(chain, q2), rhs[..., None])[..., 0]
    return qdd[0] if single else qdd


def make_rhs(chain: PendulumChain, torques: Callable | None = None, external: Callable | None = None,
             gravity: str = "equation") -> Callable:
    """Right-hand side ``fun(t, y)`` for :func:`scipy.integrate.solve_ivp`, ``y = [q, qd]``.

    ``torques(t, q, qd)`` -> joint torques (n,) or (N, n) (then ``Q = M_i - M_{i+1}``);
    ``external(t, q, qd)`` -> ``E``.  Works with ``vectorized=True`` (y of shape (2n, k)).
    """
    n = chain.n

    def fun(t, y):
        y = np.asarray(y, dtype=float)
        cols = y.ndim == 2
        Y = y.T if cols else y[None]
        q, qd = Y[:, :n], Y[:, n:]
        Q = None if torques is None else joint_torque_vector(chain, np.broadcast_to(torques(t, q, qd), q.shape))
        E = None if external is None else np.broadcast_to(external(t, q, qd), q.shape)
        qdd = forward_dynamics(chain, q, qd, Q, E, gravity)
        out = np.concatenate([qd, qdd], axis=1)
        return out.T if cols else out[0]

    return fun


def simulate(chain: PendulumChain, q0, qd0, t_span, t_eval=None, gravity: str = "equation", torques=None,
             external=None, method: str = "DOP853", rtol: float = 1e-12, atol: float = 1e-12, **kw):
    """Integrate with :func:`scipy.integrate.solve_ivp`; returns its result (``dense_output=True``)."""
    from scipy.integrate import solve_ivp

    y0 = np.concatenate([np.asarray(q0, dtype=float).reshape(chain.n), np.asarray(qd0, dtype=float).reshape(chain.n)])
    fun = make_rhs(chain, torques, external, gravity)
    return solve_ivp(fun, t_span, y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol, dense_output=True, **kw)


def energy(chain: PendulumChain, q, qd) -> tuple[np.ndarray, np.ndarray]:
    """Kinetic ``T = qd^T M qd / 2`` and potential ``V = sum m_k g y_Ck`` energies, each (N,)."""
    q2, single = _q2("q", q, chain.n)
    qd2, _ = _q2("qd", qd, chain.n)
    T = 0.5 * np.einsum("ni,nij,nj->n", qd2, mass_matrix(chain, q2), qd2)
    _, C = positions(chain, q2)
    V = chain.g * (np.array(chain.masses)[None] * C[..., 1]).sum(axis=1)
    return (T[0], V[0]) if single else (T, V)


# =============================================================================== inverse dynamics
def skew(v) -> np.ndarray:
    """Skew-symmetric matrix ``S(v)`` with ``S(v) w = v x w`` (seed, "skew-symmetric matrix"), (..., 3, 3)."""
    v = np.asarray(v, dtype=float)
    if v.shape[-1] != 3:
        raise ValueError(f"skew needs vectors of length 3, got shape {v.shape}")
    z = np.zeros(v.shape[:-1])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2)


@dataclass(frozen=True)
class RigidSegment:
    """A rigid segment: mass and inertia tensor about its centre of mass in the segment basis."""

    name: str
    mass: float
    inertia: tuple[tuple[float, float, float], ...]

    def __post_init__(self) -> None:
        I = np.asarray(self.inertia, dtype=float)
        if I.shape != (3, 3) or not np.allclose(I, I.T):
            raise ValueError(f"segment {self.name!r}: inertia must be a symmetric 3x3 matrix")
        if self.mass < 0:
            raise ValueError(f"segment {self.name!r}: mass must be >= 0")
        object.__setattr__(self, "inertia", tuple(tuple(float(x) for x in row) for row in I))
        object.__setattr__(self, "mass", float(self.mass))

    @property
    def I(self) -> np.ndarray:
        return np.array(self.inertia)


def _b3(name, a, N, S=None):
    arr = np.asarray(a, dtype=float)
    want = (N, 3) if S is None else (N, S, 3)
    if arr.shape != want:
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    return arr


def chain_inverse_dynamics(segments: Sequence[RigidSegment], R, p_cm, a_cm, omega, domega, p_joint, F_ext=None,
                           p_ext=None, M_ext=None, gravity=(0.0, -9.81, 0.0), return_system: bool = False):
    """Joint forces and moments of a serial chain of rigid segments in one matrix solve.

    The seed's recipe: Newton-Euler per segment (forces in the global basis,
    moments in the segment basis), cross products as ``S(r) F``, the unknowns
    ``x = [F_0, M_0, F_1, M_1, ...]`` isolated as ``A x = M acc - C - G - E``.

    Segment 0 is the most distal (e.g. the foot); segment ``s`` is joined to
    segment ``s+1`` at its proximal joint ``s`` (e.g. ankle, knee).  Unknowns:
    ``F_s`` (global basis) and ``M_s`` (basis of segment s), the force and the
    moment exerted on segment s by segment s+1 (by the environment for the last
    one) at joint s.  Segment ``s`` also receives ``-F_{s-1}`` and
    ``-M_{s-1}`` at joint ``s-1``.

    Inputs for N states and S segments:
    ``R`` (N, S, 3, 3) rotation global -> segment (``v^s = R_s v^G``);
    ``p_cm``, ``a_cm`` (N, S, 3) global position and acceleration of the centres of mass;
    ``omega``, ``domega`` (N, S, 3) angular velocity and acceleration in the segment basis;
    ``p_joint`` (N, S, 3) global position of joint s (proximal joint of segment s);
    ``F_ext`` (N, S, 3) resultant external force on each segment at ``p_ext``
    (N, S, 3) (e.g. the ground reaction force at the centre of pressure);
    ``M_ext`` (N, S, 3) external free moment (global basis).

    Returns ``F`` (N, S, 3) global and ``M`` (N, S, 3) in the segment basis
    (and, with ``return_system``, the matrices ``A`` and right-hand side ``b``).
    """
    segs = list(segments)
    S = len(segs)
    R = np.asarray(R, dtype=float)
    if R.ndim != 4 or R.shape[1:] != (S, 3, 3):
        raise ValueError(f"R must have shape (N, {S}, 3, 3), got {R.shape}")
    N = R.shape[0]
    p_cm = _b3("p_cm", p_cm, N, S)
    a_cm = _b3("a_cm", a_cm, N, S)
    omega = _b3("omega", omega, N, S)
    domega = _b3("domega", domega, N, S)
    p_joint = _b3("p_joint", p_joint, N, S)
    F_ext = np.zeros((N, S, 3)) if F_ext is None else _b3("F_ext", F_ext, N, S)
    p_ext = p_cm if p_ext is None else _b3("p_ext", p_ext, N, S)
    M_ext = np.zeros((N, S, 3)) if M_ext is None else _b3("M_ext", M_ext, N, S)
    g = np.asarray(gravity, dtype=float).reshape(3)
    I3 = np.eye(3)
    A = np.zeros((N, 6 * S, 6 * S))
    b = np.zeros((N, 6 * S))
    for s, seg in enumerate(segs):  # loop over segments (blocks); states are vectorized
        r0 = 6 * s
        Rs = R[:, s]
        # Newton: F_s - F_{s-1} + m g + F_ext = m a
        A[:, r0:r0 + 3, r0:r0 + 3] = I3
        # Euler (segment basis): M_s + R_s S(r_{J_s/cm}) F_s - R_s R_{s-1}^T M_{s-1}
        #                        - R_s S(r_{J_{s-1}/cm}) F_{s-1} + R_s S(r_ext/cm) F_ext + R_s M_ext
        #                        = I w' + w x I w
        A[:, r0 + 3:r0 + 6, r0:r0 + 3] = Rs @ skew(p_joint[:, s] - p_cm[:, s])
        A[:, r0 + 3:r0 + 6, r0 + 3:r0 + 6] = I3
        if s > 0:
            c0 = 6 * (s - 1)
            A[:, r0:r0 + 3, c0:c0 + 3] = -I3
            A[:, r0 + 3:r0 + 6, c0:c0 + 3] = -Rs @ skew(p_joint[:, s - 1] - p_cm[:, s])
            A[:, r0 + 3:r0 + 6, c0 + 3:c0 + 6] = -Rs @ np.swapaxes(R[:, s - 1], -1, -2)
        Iw = omega[:, s] @ seg.I.T
        lhs_lin = seg.mass * a_cm[:, s]  # M acc (linear)
        lhs_ang = domega[:, s] @ seg.I.T  # M acc (angular)
        C_ang = -np.cross(omega[:, s], Iw)  # C
        G_lin = seg.mass * g  # G
        E_lin = F_ext[:, s]  # E
        E_ang = np.einsum("nij,nj->ni", Rs, np.cross(p_ext[:, s] - p_cm[:, s], F_ext[:, s]) + M_ext[:, s])
        b[:, r0:r0 + 3] = lhs_lin - G_lin - E_lin
        b[:, r0 + 3:r0 + 6] = lhs_ang - C_ang - E_ang
    x = np.linalg.solve(A, b[..., None])[..., 0].reshape(N, S, 2, 3)
    F, M = x[:, :, 0], x[:, :, 1]
    if return_system:
        return F, M, A, b
    return F, M


def foot_shank_inverse_dynamics(m_F, I_F, m_S, I_S, R_F, R_S, a_cmF, a_cmS, w_F, w_S, dw_F, dw_S, r_A_cmF, r_cop_cmF,
                                r_A_cmS, r_K_cmS, GRF, g=(0.0, -9.81, 0.0)):
    """Ankle and knee forces and moments of the notebook, by its 12 x 12 matrix equation (literally).

    Unknowns ``[F_A^G, M_A^F, F_K^G, M_K^S]``: ``F_A`` force on the foot at the
    ankle (global), ``M_A^F`` moment on the foot (foot basis), ``F_K`` force on
    the shank at the knee (global), ``M_K^S`` moment on the shank (shank basis).
    ``R_F``, ``R_S`` (N, 3, 3): global -> segment basis; ``w``, ``dw`` in the
    segment basis; ``r_X_cmY`` (N, 3): global vector from the centre of mass of
    Y to point X; ``GRF`` (N, 3) global.  Returns a dict of (N, 3) arrays.

    ``[F; M] = Mq^{-1} ... `` exactly as the seed:
    ``x = A^{-1} (M acc - C - E - G)`` with
    ``A = [[I3, 0, 0, 0], [R_F S(r_A/cmF), I3, 0, 0], [-I3, 0, I3, 0],
    [-R_S S(r_A/cmS), -R_S R_F^{-1}, R_S S(r_K/cmS), I3]]``.
    """
    R_F = np.asarray(R_F, dtype=float)
    N = R_F.shape[0]
    I_F = np.asarray(I_F, dtype=float)
    I_S = np.asarray(I_S, dtype=float)
    Z = np.zeros((N, 3, 3))
    I3 = np.broadcast_to(np.eye(3), (N, 3, 3))
    Rs = np.asarray(R_S, dtype=float)
    blk = lambda rows: np.concatenate([np.concatenate(r, axis=2) for r in rows], axis=1)  # noqa: E731
    Mq = blk([[m_F * I3, Z, Z, Z], [Z, np.broadcast_to(I_F, (N, 3, 3)), Z, Z], [Z, Z, m_S * I3, Z],
              [Z, Z, Z, np.broadcast_to(I_S, (N, 3, 3))]])
    acc = np.concatenate([a_cmF, dw_F, a_cmS, dw_S], axis=1)
    C = np.concatenate([np.zeros((N, 3)), -np.cross(w_F, w_F @ I_F.T), np.zeros((N, 3)), -np.cross(w_S, w_S @ I_S.T)],
                       axis=1)
    gv = np.broadcast_to(np.asarray(g, dtype=float), (N, 3))
    G = np.concatenate([m_F * gv, np.zeros((N, 3)), m_S * gv, np.zeros((N, 3))], axis=1)
    E = np.concatenate([GRF, np.einsum("nij,nj->ni", R_F, np.cross(r_cop_cmF, GRF)), np.zeros((N, 3)),
                        np.zeros((N, 3))], axis=1)
    A = blk([[I3, Z, Z, Z], [R_F @ skew(r_A_cmF), I3, Z, Z], [-I3, Z, I3, Z],
             [-Rs @ skew(r_A_cmS), -Rs @ np.linalg.inv(R_F), Rs @ skew(r_K_cmS), I3]])
    rhs = np.einsum("nij,nj->ni", Mq, acc) - C - E - G
    x = np.linalg.solve(A, rhs[..., None])[..., 0]
    return {"F_A": x[:, 0:3], "M_A": x[:, 3:6], "F_K": x[:, 6:9], "M_K": x[:, 9:12]}

