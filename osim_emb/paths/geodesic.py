"""Geodesics on smooth implicit surfaces by numerical integration: wrapping over ellipsoids and tori.

A surface f(x) = 0 (f > 0 outside).  A unit-speed geodesic x(s) obeys

    x'' = -(x'^T H x' / |grad f|^2) grad f        (the acceleration is normal to the surface),

integrated here with fixed-step RK4 (``STEPS`` steps over the geodesic's length, then projected
back onto the surface).  The path p1 -> obstacle -> p2 over one obstacle is the geodesic from P
(start point, direction angle, length: four unknowns) whose end directions continue the straight
segments p1 -> P and Q -> p2: four tangency conditions (the components of the segments' directions
along the surface normal and the geodesic's binormal at P and Q, Scholz et al. 2015, Eq 14),
solved by Newton's method with a finite-difference Jacobian.  The geodesic starts, as OpenSim's
solver does, at the hint's projection on the surface with zero length and the direction of
p2 - p1; it lifts off when its length shrinks to zero with both points above the tangent plane
there, and (without a hint, or after lifting off) touches down at the point of the straight
segment p1 p2 deepest inside the surface.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Ellipsoid", "Torus", "surface_of", "segment_meets", "surface_path", "STEPS"]

#: RK4 steps per geodesic (against the closed-form sphere and OpenSim's ellipsoids: lengths to ~1e-12 m)
STEPS = 200


class Ellipsoid:
    """x^2/a^2 + y^2/b^2 + z^2/c^2 = 1."""

    def __init__(self, radii):
        self.radii = np.asarray(radii, dtype=float).reshape(3)
        self.w = 1.0 / self.radii ** 2
        self.size = float(self.radii.min())  # the scale of a Newton step
        self.kind_code, self.constants = 0, self.w  # for the compiled kernel

    def f(self, x):
        return np.einsum("...i,i->...", x * x, self.w) - 1.0

    def grad(self, x):
        return 2.0 * x * self.w

    def vhv(self, x, v):
        return 2.0 * np.einsum("...i,i->...", v * v, self.w)


class Torus:
    """(sqrt(x^2 + y^2) - R)^2 + z^2 = r^2 about z (Simbody's ContactGeometry::Torus)."""

    def __init__(self, torus_radius: float, tube_radius: float):
        self.R, self.r = float(torus_radius), float(tube_radius)
        self.size = self.r
        self.kind_code, self.constants = 1, np.array([self.R, self.r])

    def f(self, x):
        rho = np.hypot(x[..., 0], x[..., 1])
        return ((rho - self.R) ** 2 + x[..., 2] ** 2 - self.r ** 2) / (2 * self.r)

    def grad(self, x):
        rho = np.maximum(np.hypot(x[..., 0], x[..., 1]), 1e-300)
        k = (rho - self.R) / rho
        return np.stack([k * x[..., 0], k * x[..., 1], x[..., 2]], axis=-1) / self.r

    def project(self, x):
        """The nearest surface point: from the nearest point of the core circle, out along x's direction from it."""
        rho = np.maximum(np.hypot(x[..., 0], x[..., 1]), 1e-300)
        core = np.stack([self.R * x[..., 0] / rho, self.R * x[..., 1] / rho, np.zeros_like(rho)], axis=-1)
        return core + self.r * _unit(x - core)

    def vhv(self, x, v):
        rho = np.maximum(np.hypot(x[..., 0], x[..., 1]), 1e-300)
        vr = (v[..., 0] * x[..., 0] + v[..., 1] * x[..., 1]) / rho
        vxy2 = v[..., 0] ** 2 + v[..., 1] ** 2
        # d2/dx2 of (rho - R)^2 / 2: (1 - R/rho) (I_xy) + (R/rho) (x x^T)/rho^2 on the xy block
        return ((1 - self.R / rho) * vxy2 + self.R / rho * vr ** 2 + v[..., 2] ** 2) / self.r


def surface_of(kind: str, radii):
    """The surface of an obstacle: 'ellipsoid' (three semi-axes) or 'torus' (torus radius R, tube radius r)."""
    if kind == "ellipsoid":
        return Ellipsoid(radii)
    if kind == "torus":
        return Torus(*radii)
    raise ValueError(f"no integrated geodesics for {kind!r} obstacles")


def segment_meets(surface, p1, p2) -> np.ndarray:
    """(N,) whether the straight segments p1 p2 (surface frame, (N, 3)) pass inside the surface."""
    return _touchdown(surface, np.atleast_2d(np.asarray(p1, dtype=float)),
                      np.atleast_2d(np.asarray(p2, dtype=float)))[1]


def _project(surface, x, iterations: int = 6):
    """The surface point on the gradient line through x: Newton's method on f along the gradient, or the surface's
    closed form (a torus: radially from its core circle; Newton's steps overshoot from near the core)."""
    if hasattr(surface, "project"):
        return surface.project(x)
    for _ in range(iterations):
        g = surface.grad(x)
        x = x - (surface.f(x) / np.einsum("...i,...i->...", g, g))[..., None] * g
    return x


def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def _shoot(surface, x, v, length):
    """End point and unit direction of the geodesic from (x, v) over ``length`` (N,) (compiled RK4,
    :mod:`osim_emb.paths._geodesic_kernels`; :func:`_shoot_numpy` is the same in numpy)."""
    from osim_emb.paths._geodesic_kernels import shoot_batch
    x, v = shoot_batch(surface.kind_code, surface.constants, np.ascontiguousarray(x, dtype=float),
                       np.ascontiguousarray(v, dtype=float), np.ascontiguousarray(length, dtype=float), STEPS)
    return _end_state(surface, x, v)


def _end_state(surface, x, v):
    x = _project(surface, x)
    n = _unit(surface.grad(x))
    v = _unit(v - np.einsum("ni,ni->n", v, n)[:, None] * n)
    return x, v


def _shoot_numpy(surface, x, v, length):
    """:func:`_shoot` in numpy (the reference of the compiled kernel's tests)."""
    h = (length / STEPS)[:, None]

    def acc(x, v):
        g = surface.grad(x)
        return -(surface.vhv(x, v) / np.einsum("ni,ni->n", g, g))[:, None] * g

    for _ in range(STEPS):
        k1x, k1v = v, acc(x, v)
        k2x, k2v = v + 0.5 * h * k1v, acc(x + 0.5 * h * k1x, v + 0.5 * h * k1v)
        k3x, k3v = v + 0.5 * h * k2v, acc(x + 0.5 * h * k2x, v + 0.5 * h * k2v)
        k4x, k4v = v + h * k3v, acc(x + h * k3x, v + h * k3v)
        x = x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return _end_state(surface, x, v)


def _tangent_basis(surface, x, reference):
    n = _unit(surface.grad(x))
    a1 = reference - np.einsum("ni,ni->n", reference, n)[:, None] * n
    bad = np.linalg.norm(a1, axis=-1) < 1e-9
    alt = np.where(np.abs(n[:, :1]) < 0.9, [[1.0, 0, 0]], [[0, 1.0, 0]])
    a1 = np.where(bad[:, None], alt - np.einsum("ni,ni->n", alt, n)[:, None] * n, a1)
    a1 = _unit(a1)
    return n, a1, np.cross(n, a1)


def _state(surface, p0, e1, e2, ref, u):
    """Start point, direction, length for unknowns u = (s1, s2, angle, length)."""
    p = _project(surface, p0 + u[:, :1] * e1 + u[:, 1:2] * e2)
    n, a1, a2 = _tangent_basis(surface, p, ref)
    t = np.cos(u[:, 2:3]) * a1 + np.sin(u[:, 2:3]) * a2
    return p, t, np.maximum(u[:, 3], 0.0)


def _residual(surface, p1, p2, p0, e1, e2, ref, u):
    p, t, length = _state(surface, p0, e1, e2, ref, u)
    q, tq = _shoot(surface, p, t, length)
    n_p = _unit(surface.grad(p))
    n_q = _unit(surface.grad(q))
    b_p, b_q = np.cross(t, n_p), np.cross(tq, n_q)
    d1, d2 = _unit(p - p1), _unit(p2 - q)
    r = np.stack([np.einsum("ni,ni->n", d1, n_p), np.einsum("ni,ni->n", d1, b_p),
                  np.einsum("ni,ni->n", d2, n_q), np.einsum("ni,ni->n", d2, b_q)], axis=1)
    return r, p, q, length


def _touchdown(surface, p1, p2):
    """The point of each segment p1 p2 deepest inside the surface (least f), and whether f < 0 there."""
    s = np.linspace(0.0, 1.0, 201)
    pts = p1[:, None] + s[None, :, None] * (p2 - p1)[:, None]
    fs = surface.f(pts)
    k = np.argmin(fs, axis=1)
    lo, hi = s[np.maximum(k - 1, 0)], s[np.minimum(k + 1, len(s) - 1)]
    for _ in range(40):  # golden-section refinement of the minimum of f along the segment
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        f1 = surface.f(p1 + m1[:, None] * (p2 - p1))
        f2 = surface.f(p1 + m2[:, None] * (p2 - p1))
        lo, hi = np.where(f1 < f2, lo, m1), np.where(f1 < f2, m2, hi)
    x = p1 + (0.5 * (lo + hi))[:, None] * (p2 - p1)
    return x, surface.f(x) < 0


def _newton(surface, a, b, start, tolerance: float, max_iterations: int):
    """Newton's method on the four tangency conditions from a zero-length geodesic at ``start`` (projected on the
    surface) heading along b - a: (converged, lifted off, residual, P, Q, geodesic length) per row."""
    n = a.shape[0]
    p0 = _project(surface, start)
    ref = _unit(b - a)
    nrm, e1, e2 = _tangent_basis(surface, p0, ref)
    u = np.zeros((n, 4))
    lifted = np.zeros(n, dtype=bool)
    r, p, q, ln = _residual(surface, a, b, p0, e1, e2, ref, u)
    for _ in range(max_iterations):
        done = (np.abs(r).max(axis=1) < tolerance) | lifted
        if done.all():
            break
        jac = np.empty((n, 4, 4))
        for c, step in enumerate((1e-7, 1e-7, 1e-7, 1e-7)):
            du = np.zeros_like(u)
            du[:, c] = step
            jac[:, :, c] = (_residual(surface, a, b, p0, e1, e2, ref, u + du)[0]
                            - _residual(surface, a, b, p0, e1, e2, ref, u - du)[0]) / (2 * step)
        delta = -np.linalg.lstsq(jac[0], r[0], rcond=None)[0][None] if n == 1 else \
            -np.einsum("nij,nj->ni", np.linalg.pinv(jac), r)
        # damped: at most a quarter of the surface's size in position and length, 0.5 rad in angle
        big = np.maximum(np.abs(delta[:, [0, 1, 3]]).max(axis=1) / (0.25 * surface.size),
                         np.abs(delta[:, 2]) / 0.5)
        delta = np.where(done[:, None], 0.0, delta / np.maximum(big, 1.0)[:, None])
        size = np.linalg.norm(r, axis=1)
        scale = np.ones(n)
        for _ in range(12):  # backtracking on the tangent mismatch (a length clamped at zero may lift off)
            u_new = u + scale[:, None] * delta
            u_new[:, 3] = np.maximum(u_new[:, 3], 0.0)
            r_new, p_new, q_new, ln_new = _residual(surface, a, b, p0, e1, e2, ref, u_new)
            worse = (np.linalg.norm(r_new, axis=1) > size) & ~done & ((u + scale[:, None] * delta)[:, 3] > 0)
            if not worse.any():
                break
            scale = np.where(worse, 0.5 * scale, scale)
        # lift-off: the length shrinks to zero with both points above the tangent plane
        shrunk = ((u + scale[:, None] * delta)[:, 3] <= 0) & ~done
        if shrunk.any():
            nn = _unit(surface.grad(p_new))
            above = (np.einsum("ni,ni->n", a - p_new, nn) > 0) & (np.einsum("ni,ni->n", b - p_new, nn) > 0)
            lifted |= shrunk & above
        u, r, p, q, ln = u_new, r_new, p_new, q_new, ln_new
        # re-centre the unknowns on the current geodesic (natural corrections, as Scholz et al.)
        _, t_now, _ = _state(surface, p0, e1, e2, ref, u)
        p0, ref = p, t_now
        _, e1, e2 = _tangent_basis(surface, p0, ref)
        u = np.column_stack([np.zeros((n, 3)), u[:, 3]])
    return ~lifted & (np.abs(r).max(axis=1) < tolerance) & (ln > 0), lifted, r, p, q, ln


def surface_path(surface, hint: Any, p1: Any, p2: Any, tolerance: float = 1e-11, max_iterations: int = 60):
    """The path p1 -> surface -> p2 (surface frame, (N, 3)): (length, t1, t2, wrapped) as
    :func:`osim_emb.paths.scholz.obstacle_path`; NaN hint: start lifted off (touch down on the chord)."""
    p1 = np.atleast_2d(np.asarray(p1, dtype=float))
    p2 = np.atleast_2d(np.asarray(p2, dtype=float))
    n = p1.shape[0]
    if (surface.f(p1) <= 0).any() or (surface.f(p2) <= 0).any():
        raise ValueError("a path point is inside the obstacle: no path round it")
    hint = np.asarray(hint, dtype=float).reshape(3)
    straight = np.linalg.norm(p2 - p1, axis=-1)
    length = straight.copy()
    t1 = np.full((n, 3), np.nan)
    t2 = np.full((n, 3), np.nan)
    wrapped = np.zeros(n, dtype=bool)
    touch, meets = _touchdown(surface, p1, p2)
    # the hint's side: where the straight segment passes on the hint's side, the short side (started, like
    # a missing hint, from the touch-down point: more robust than from the hint); the long way round from the hint
    short = np.ones(n, dtype=bool) if np.isnan(hint).any() else touch @ hint >= 0
    start = np.where(short[:, None], touch, np.nan_to_num(hint))
    active = np.where(short, meets, True)
    # stage 0: from the hint, or the touch-down point on the short side; stage 1: where the geodesic lifted off,
    # from the touch-down point (where the segment meets the surface)
    pending = np.flatnonzero(active)
    begin = start[pending]
    for stage in range(2):
        if pending.size == 0:
            break
        a, b = p1[pending], p2[pending]
        ok, lifted, r, p, q, ln = _newton(surface, a, b, begin, tolerance, max_iterations)
        good = pending[ok]
        length[good] = np.linalg.norm(p[ok] - a[ok], axis=-1) + ln[ok] + np.linalg.norm(b[ok] - q[ok], axis=-1)
        t1[good], t2[good], wrapped[good] = p[ok], q[ok], True
        failed = ~ok & ~lifted
        if failed.any():
            raise RuntimeError(f"geodesic wrapping did not converge (largest tangent mismatch "
                               f"{np.abs(r[failed]).max():.1e})")
        if stage == 1 and (lifted & meets[pending]).any():  # never straight through the obstacle
            raise RuntimeError("geodesic wrapping lifted off although the straight segment passes inside the "
                               "obstacle (no stationary path found from the touch-down point)")
        pending = pending[lifted & meets[pending]] if stage == 0 else np.empty(0, dtype=int)
        begin = touch[pending]
    return length, t1, t2, wrapped
