"""Building blocks for planar closed-chain mechanisms.

* :func:`trigonometric_constraints` - loop-closure constraints that are sums of
  a cos(w.z) and a sin(w.z) terms plus a linear part in z = (f, q), with exact
  first and second partial derivatives, as
  :class:`~osim_emb.core.closed_chains.HolonomicConstraints` (Eqs 121, 123, 199 and
  the reference formulation of Andrews' squeezer are all of this form);
* :func:`planar_revolute` - a revolute joint about z whose frame sits at the end
  of the parent link (the seed's V_d = x, V_theta = z);
* :class:`HermiteTrajectory` - piecewise cubic Hermite trajectories of the
  generalized coordinates with velocities and accelerations (seed Figs 4, 8);
* :class:`PlanarBodySystem` - the *traditional* kinematic analysis in absolute
  body coordinates (x, y, phi) of every body (Shabana 2005, ch. 3): revolute-joint
  and driving constraints, Newton for positions, and the velocity and
  acceleration equations C_x xdot = nu, C_x xddot = gamma.  It shares nothing
  with the joint-variable formulation and serves as its independent reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.interpolate import CubicHermiteSpline

from osim_emb.core import closed_chain_kernels as CK
from osim_emb.core.closed_chains import AssemblyError, HolonomicConstraints, SingularConstraintError
from osim_emb.core.functions.base import JointFunction
from osim_emb.model import Joint

__all__ = [
    "TrigTerm",
    "trigonometric_constraints",
    "planar_revolute",
    "HermiteTrajectory",
    "Revolute2D",
    "PointDriver",
    "AngleDriver",
    "PlanarBodySystem",
    "rot2",
]


@dataclass(frozen=True)
class TrigTerm:
    """One term coef * cos(w . z) (``kind='cos'``) or coef * sin(w . z) of constraint ``row``; z = (f, q)."""

    row: int
    coef: float
    kind: str
    weights: tuple[float, ...]


def trigonometric_constraints(name: str, n_f: int, n_q: int, terms: Sequence[TrigTerm],
                              linear: Any = None, constant: Any = None, **kwargs) -> HolonomicConstraints:
    """Constraints g_i(z) = sum_t coef_t trig_t(w_t . z) + L_i . z + c_i with exact derivatives.

    ``linear`` (m, n_f + n_q) and ``constant`` (m,) default to zero; ``kwargs`` go
    to :class:`~osim_emb.core.closed_chains.HolonomicConstraints` (names, ranges, length scale).
    """
    m, nz = n_f, n_f + n_q
    terms = tuple(terms)
    rows = np.array([t.row for t in terms], dtype=int)
    coef = np.array([t.coef for t in terms], dtype=float)
    is_sin = np.array([t.kind == "sin" for t in terms])
    if not all(t.kind in ("cos", "sin") for t in terms):
        raise ValueError(f"{name}: trigonometric terms must be 'cos' or 'sin'")
    w = np.array([t.weights for t in terms], dtype=float).reshape(len(terms), nz)
    r = np.zeros((m, len(terms)))
    r[rows, np.arange(len(terms))] = 1.0
    lin = np.zeros((m, nz)) if linear is None else np.asarray(linear, dtype=float).reshape(m, nz)
    c = np.zeros(m) if constant is None else np.asarray(constant, dtype=float).reshape(m)

    # the compiled constraints of the closed-chain kernels (closed_chain_kernels.trig_constraints), the same ones the
    # compiled program's OP_CHAIN node evaluates
    ints = np.array([m, n_q, len(terms), 0, 0, *rows.tolist(), *is_sin.astype(int).tolist()], dtype=np.int64)
    flts = np.array([0.0] * CK.CHAIN_FLOATS + [*coef.tolist(), *w.ravel().tolist(), *lin.ravel().tolist(),
                                               *c.tolist()], dtype=float)

    def combined(f, q, order):
        g, gz, gzz = CK.trig_constraints_batch(ints, flts, np.ascontiguousarray(f, dtype=float),
                                               np.ascontiguousarray(q, dtype=float), int(order))
        if order < 1:
            return g, None, None, None, None, None
        if order < 2:
            return g, gz[:, :, :n_f], gz[:, :, n_f:], None, None, None
        return (g, gz[:, :, :n_f], gz[:, :, n_f:], gzz[:, :, :n_f, :n_f], gzz[:, :, :n_f, n_f:],
                gzz[:, :, n_f:, n_f:])

    def residual(f, q):
        return combined(f, q, 0)[0]

    def first(f, q):
        return combined(f, q, 1)[1:3]

    def second(f, q):
        return combined(f, q, 2)[3:]

    trig = (rows, coef, is_sin, w, lin, c)  # g_i = sum_{t: rows_t = i} coef_t trig_t(w_t . z) + lin_i . z + c_i
    return HolonomicConstraints(name, n_f, n_q, residual, first, second, combined=combined, trigonometric=trig,
                                **kwargs)


def planar_revolute(name: str, parent: int, parent_length: float, variable: JointFunction) -> Joint:
    """Revolute joint about z at distance ``parent_length`` along the parent frame's x axis (Eqs 38-39)."""
    return Joint.seed_revolute(name, parent, (1.0, 0.0, 0.0), parent_length, (0.0, 0.0, 1.0), variable)


def rot2(phi: Any) -> np.ndarray:
    """2-D rotation matrices (..., 2, 2)."""
    phi = np.asarray(phi, dtype=float)
    c, s = np.cos(phi), np.sin(phi)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


class HermiteTrajectory:
    """Piecewise cubic Hermite q(t) through knots with given values and slopes, one column per coordinate.

    ``__call__(t)`` returns q, qdot, qddot, each (len(t), n_q).  The acceleration
    is piecewise linear (it may jump at the knots).
    """

    def __init__(self, t_knots: Sequence[float], values: Any, slopes: Any):
        t = np.asarray(t_knots, dtype=float)
        v = np.asarray(values, dtype=float).reshape(t.size, -1)
        s = np.asarray(slopes, dtype=float).reshape(t.size, -1)
        self.t_knots, self.values, self.slopes = t, v, s
        self._spline = CubicHermiteSpline(t, v, s, axis=0)
        self.n_q = v.shape[1]

    @property
    def span(self) -> tuple[float, float]:
        return float(self.t_knots[0]), float(self.t_knots[-1])

    def __call__(self, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self._spline(t), self._spline(t, 1), self._spline(t, 2)


# --------------------------------------------------------------------------------------------
# the traditional method: absolute body coordinates (Shabana 2005)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Revolute2D:
    """Pin between point s_i of body i and point s_j of body j (body -1 is the ground; its s is a ground point)."""

    body_i: int
    s_i: tuple[float, float]
    body_j: int
    s_j: tuple[float, float]


@dataclass(frozen=True)
class PointDriver:
    """Driving constraint: coordinate ``axis`` (0 = x, 1 = y) of point s of ``body`` equals q_k(t)."""

    body: int
    s: tuple[float, float]
    axis: int
    coordinate: int


@dataclass(frozen=True)
class AngleDriver:
    """Driving constraint: phi_j - phi_i (body_i = -1: the ground, phi = 0) equals q_k(t)."""

    body_i: int
    body_j: int
    coordinate: int


@dataclass(frozen=True)
class PlanarBodySystem:
    """Planar bodies in absolute coordinates x = (x_1, y_1, phi_1, ..., x_nb, y_nb, phi_nb) with pins and drivers.

    The kinematic analysis of Shabana (2005), ch. 3: C(x, t) = 0 (2 rows per
    pin, 1 per driver), C_x xdot = -C_t, C_x xddot = Q_d, with

        Q_d(pin)          = A_i s_i phidot_i^2 - A_j s_j phidot_j^2
        Q_d(point driver) = (A s)_axis phidot^2 + qddot_k
        Q_d(angle driver) = qddot_k.
    """

    n_bodies: int
    pins: tuple[Revolute2D, ...]
    drivers: tuple[Any, ...] = field(default=())

    def __post_init__(self):
        rows = 2 * len(self.pins) + len(self.drivers)
        if rows != 3 * self.n_bodies:
            raise ValueError(f"PlanarBodySystem: {rows} constraints for {3 * self.n_bodies} body coordinates")

    def _pose(self, x, b):
        if b < 0:
            return np.zeros(2), 0.0
        return x[3 * b:3 * b + 2], x[3 * b + 2]

    def constraints(self, x: np.ndarray, q: np.ndarray) -> np.ndarray:
        out = []
        for p in self.pins:
            ri, pi = self._pose(x, p.body_i)
            rj, pj = self._pose(x, p.body_j)
            out.extend(ri + rot2(pi) @ np.asarray(p.s_i) - rj - rot2(pj) @ np.asarray(p.s_j))
        for d in self.drivers:
            if isinstance(d, PointDriver):
                r, ph = self._pose(x, d.body)
                out.append((r + rot2(ph) @ np.asarray(d.s))[d.axis] - q[d.coordinate])
            else:
                _, pi = self._pose(x, d.body_i)
                _, pj = self._pose(x, d.body_j)
                out.append(pj - pi - q[d.coordinate])
        return np.array(out)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        n = 3 * self.n_bodies
        jac = np.zeros((n, n))
        row = 0
        dr = np.array([[0.0, -1.0], [1.0, 0.0]])  # d rot2 / dphi = rot2 @ dr
        for p in self.pins:
            for b, s, sign in ((p.body_i, p.s_i, 1.0), (p.body_j, p.s_j, -1.0)):
                if b < 0:
                    continue
                _, ph = self._pose(x, b)
                jac[row:row + 2, 3 * b:3 * b + 2] += sign * np.eye(2)
                jac[row:row + 2, 3 * b + 2] += sign * rot2(ph) @ dr @ np.asarray(s)
            row += 2
        for d in self.drivers:
            if isinstance(d, PointDriver):
                _, ph = self._pose(x, d.body)
                jac[row, 3 * d.body + d.axis] = 1.0
                jac[row, 3 * d.body + 2] = (rot2(ph) @ dr @ np.asarray(d.s))[d.axis]
            else:
                if d.body_i >= 0:
                    jac[row, 3 * d.body_i + 2] = -1.0
                jac[row, 3 * d.body_j + 2] = 1.0
            row += 1
        return jac

    def velocity_rhs(self, qdot: np.ndarray) -> np.ndarray:
        nu = np.zeros(3 * self.n_bodies)
        nu[2 * len(self.pins):] = [qdot[d.coordinate] for d in self.drivers]
        return nu

    def acceleration_rhs(self, x: np.ndarray, xdot: np.ndarray, qddot: np.ndarray) -> np.ndarray:
        out = []
        for p in self.pins:
            v = np.zeros(2)
            for b, s, sign in ((p.body_i, p.s_i, 1.0), (p.body_j, p.s_j, -1.0)):
                if b < 0:
                    continue
                _, ph = self._pose(x, b)
                v += sign * rot2(ph) @ np.asarray(s) * xdot[3 * b + 2] ** 2
            out.extend(v)
        for d in self.drivers:
            if isinstance(d, PointDriver):
                _, ph = self._pose(x, d.body)
                out.append((rot2(ph) @ np.asarray(d.s))[d.axis] * xdot[3 * d.body + 2] ** 2 + qddot[d.coordinate])
            else:
                out.append(qddot[d.coordinate])
        return np.array(out)

    def assemble(self, q: np.ndarray, guess: np.ndarray, tol: float = 1e-14, max_iter: int = 50) -> np.ndarray:
        """Newton solve of C(x, q) = 0 from ``guess``."""
        x = np.array(guess, dtype=float)
        for it in range(max_iter):
            jac = self.jacobian(x)
            cond = np.linalg.cond(jac)
            if not cond < 1e12:
                raise SingularConstraintError(
                    f"body-coordinate constraints singular at q = {q}, condition number {cond:.3e}", q, x, cond)
            step = np.linalg.solve(jac, self.constraints(x, q))
            x -= step
            if np.max(np.abs(step)) <= tol * (1 + np.max(np.abs(x))):
                return x
        res = float(np.max(np.abs(self.constraints(x, q))))
        raise AssemblyError(f"body-coordinate constraints: no convergence at q = {q} after {max_iter} "
                            f"iterations, residual {res:.3e}", q, res, max_iter)

    def analyse(self, q: np.ndarray, qdot: np.ndarray, qddot: np.ndarray, x_guess: np.ndarray):
        """Positions, velocities and accelerations (T, 3 nb) along a trajectory (continuation in time)."""
        q, qdot, qddot = (np.atleast_2d(a) for a in (q, qdot, qddot))
        t_n = q.shape[0]
        xs, vs, as_ = (np.empty((t_n, 3 * self.n_bodies)) for _ in range(3))
        x = np.array(x_guess, dtype=float)
        for k in range(t_n):
            x = self.assemble(q[k], x)
            jac = self.jacobian(x)
            v = np.linalg.solve(jac, self.velocity_rhs(qdot[k]))
            a = np.linalg.solve(jac, self.acceleration_rhs(x, v, qddot[k]))
            xs[k], vs[k], as_[k] = x, v, a
        return xs, vs, as_

    @staticmethod
    def point_kinematics(x: np.ndarray, xdot: np.ndarray, xddot: np.ndarray, body: int, s: Sequence[float]):
        """Position, velocity, acceleration (T, 2) of point s of ``body``: r + A s, rdot + B s phidot,
        rddot + B s phiddot - A s phidot^2."""
        s = np.asarray(s, dtype=float)
        b = 3 * body
        a = rot2(x[:, b + 2])
        as_ = a @ s
        bs = np.stack([-as_[:, 1], as_[:, 0]], axis=1)
        pos = x[:, b:b + 2] + as_
        vel = xdot[:, b:b + 2] + bs * xdot[:, b + 2, None]
        acc = xddot[:, b:b + 2] + bs * xddot[:, b + 2, None] - as_ * xdot[:, b + 2, None] ** 2
        return pos, vel, acc
