"""Geodesics on smooth implicit surfaces by numerical integration: wrapping over ellipsoids and tori.

A surface f(x) = 0 (f > 0 outside).  A unit-speed geodesic x(s) obeys

    x'' = -(x'^T H x' / |grad f|^2) grad f        (the acceleration is normal to the surface),

integrated here with fixed-step RK4 (``STEPS`` steps over the geodesic's length, then projected
back onto the surface).  The path p1 -> obstacle -> p2 over one obstacle is the geodesic from P
(start point, direction angle, length: four unknowns) whose end directions continue the straight
segments p1 -> P and Q -> p2: four tangency conditions (the components of the segments' directions
along the surface normal and the geodesic's binormal at P and Q, Scholz et al. 2015, Eq 14),
solved by Newton's method with the Jacobian of the natural geodesic variations (sliding along the
geodesic, lengthening it, and shifting or turning its start: Jacobi fields a'' + K a = 0 integrated
beside it; :func:`_jacobi_jacobian`, equal to central differences to their error).  The geodesic
starts, as OpenSim's solver does, at the hint's projection on the surface with zero length and the direction of
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

    def hess(self, x):
        return np.broadcast_to(2.0 * np.diag(self.w), x.shape[:-1] + (3, 3))


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

    def hess(self, x):
        rho = np.maximum(np.hypot(x[..., 0], x[..., 1]), 1e-300)
        h = np.zeros(x.shape[:-1] + (3, 3))
        s = self.R / rho ** 3
        h[..., 0, 0] = (1 - self.R / rho) + s * x[..., 0] ** 2
        h[..., 1, 1] = (1 - self.R / rho) + s * x[..., 1] ** 2
        h[..., 0, 1] = h[..., 1, 0] = s * x[..., 0] * x[..., 1]
        h[..., 2, 2] = 1.0
        return h / self.r

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


def _residual(surface, p1, p2, p0, e1, e2, ref, u, full: bool = False):
    p, t, length = _state(surface, p0, e1, e2, ref, u)
    q, tq = _shoot(surface, p, t, length)
    n_p = _unit(surface.grad(p))
    n_q = _unit(surface.grad(q))
    b_p, b_q = np.cross(t, n_p), np.cross(tq, n_q)
    d1, d2 = _unit(p - p1), _unit(p2 - q)
    r = np.stack([np.einsum("ni,ni->n", d1, n_p), np.einsum("ni,ni->n", d1, b_p),
                  np.einsum("ni,ni->n", d2, n_q), np.einsum("ni,ni->n", d2, b_q)], axis=1)
    return (r, p, q, length, t, tq) if full else (r, p, q, length)


def _dot(a, b):
    return np.einsum("ni,ni->n", a, b)


def _jacobi_jacobian(surface, p1, p2, p, t, q, tq, length):
    """d(residual)/du at u = (0, 0, 0, length) with the tangent ``t`` as the reference direction, from the
    natural geodesic variations (Scholz et al. 2015): u0 slides the geodesic along itself, u3 lengthens it, u1
    (a shift of the start along m = n x t) and u2 (a turn of the start direction about n) are the Jacobi fields
    a m with a'' + K a = 0 (K the Gaussian curvature; a(0), a'(0) = (1, 0) and (0, 1)) integrated beside the
    geodesic (:func:`osim_emb.paths._geodesic_kernels.jacobi_batch`)."""
    from osim_emb.paths._geodesic_kernels import jacobi_batch
    fields = jacobi_batch(surface.kind_code, surface.constants, np.ascontiguousarray(p),
                          np.ascontiguousarray(t), np.ascontiguousarray(length, dtype=float), STEPS)
    g_p, g_q = surface.grad(p), surface.grad(q)
    gn_p, gn_q = np.linalg.norm(g_p, axis=-1), np.linalg.norm(g_q, axis=-1)
    n_p, n_q = g_p / gn_p[:, None], g_q / gn_q[:, None]
    h_p, h_q = surface.hess(p), surface.hess(q)
    m_p, m_q = np.cross(n_p, t), np.cross(n_q, tq)

    def hvv(h, a, b):
        return np.einsum("ni,nij,nj->n", a, h, b)

    def normal_change(h, n, gn, d):  # d(unit normal) for a move d of the point
        hd = np.einsum("nij,nj->ni", h, d) / gn[:, None]
        return hd - _dot(hd, n)[:, None] * n

    zero = np.zeros_like(p)
    slide_q = -(hvv(h_q, tq, tq) / gn_q)[:, None] * n_q
    variations = [
        (t, -(hvv(h_p, t, t) / gn_p)[:, None] * n_p, tq, slide_q),
        (m_p, -(hvv(h_p, t, m_p) / gn_p)[:, None] * n_p, fields[:, 0, 0, None] * m_q, fields[:, 0, 1, None] * m_q),
        (zero, m_p, fields[:, 1, 0, None] * m_q, fields[:, 1, 1, None] * m_q),
        (zero, zero, tq, slide_q),
    ]
    d1_vec, d2_vec = p - p1, p2 - q
    l1, l2 = np.linalg.norm(d1_vec, axis=-1), np.linalg.norm(d2_vec, axis=-1)
    d1, d2 = d1_vec / l1[:, None], d2_vec / l2[:, None]
    b_p, b_q = np.cross(t, n_p), np.cross(tq, n_q)
    jac = np.empty((p.shape[0], 4, 4))
    for c, (dp, dt, dq, dtq) in enumerate(variations):
        if c in (1, 2):  # keep the end direction tangent to the surface at the moved end point
            dtq = dtq - (hvv(h_q, tq, dq) / gn_q)[:, None] * n_q
        dd1 = (dp - _dot(d1, dp)[:, None] * d1) / l1[:, None]
        dn_p = normal_change(h_p, n_p, gn_p, dp)
        dd2 = -(dq - _dot(d2, dq)[:, None] * d2) / l2[:, None]
        dn_q = normal_change(h_q, n_q, gn_q, dq)
        jac[:, 0, c] = _dot(dd1, n_p) + _dot(d1, dn_p)
        jac[:, 1, c] = _dot(dd1, b_p) + _dot(d1, np.cross(dt, n_p) + np.cross(t, dn_p))
        jac[:, 2, c] = _dot(dd2, n_q) + _dot(d2, dn_q)
        jac[:, 3, c] = _dot(dd2, b_q) + _dot(d2, np.cross(dtq, n_q) + np.cross(tq, dn_q))
    return jac


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
    _, ref, _ = _tangent_basis(surface, p0, _unit(b - a))  # b - a in the tangent plane
    nrm, e1, e2 = _tangent_basis(surface, p0, ref)
    u = np.zeros((n, 4))
    lifted = np.zeros(n, dtype=bool)
    r, p, q, ln, t, tq = _residual(surface, a, b, p0, e1, e2, ref, u, full=True)
    for _ in range(max_iterations):
        done = (np.abs(r).max(axis=1) < tolerance) | lifted
        if done.all():
            break
        jac = _jacobi_jacobian(surface, a, b, p, t, q, tq, ln)
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
            r_new, p_new, q_new, ln_new, t_new, tq_new = _residual(surface, a, b, p0, e1, e2, ref, u_new, full=True)
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
        u, r, p, q, ln, t, tq = u_new, r_new, p_new, q_new, ln_new, t_new, tq_new
        # re-centre the unknowns on the current geodesic (natural corrections, as Scholz et al.)
        p0, ref = p, t
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
