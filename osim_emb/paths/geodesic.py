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


def _rows(x):
    return np.ascontiguousarray(np.atleast_2d(x), dtype=float)


def _project(surface, x):
    """The surface point on the gradient line through x (N, 3): Newton's method on f along the gradient, or the
    surface's closed form (a torus: radially from its core circle; Newton's steps overshoot from near the core)
    (compiled, :mod:`osim_emb.paths._geodesic_kernels`)."""
    from osim_emb.paths._geodesic_kernels import project_batch
    return project_batch(surface.kind_code, surface.constants, _rows(x))


def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def _shoot(surface, x, v, length):
    """End point and unit direction of the geodesic from (x, v) over ``length`` (N,) (compiled RK4,
    :mod:`osim_emb.paths._geodesic_kernels`; :func:`_shoot_numpy` is the same in numpy)."""
    from osim_emb.paths._geodesic_kernels import shoot_batch
    x, v = shoot_batch(surface.kind_code, surface.constants, _rows(x), _rows(v),
                       np.ascontiguousarray(length, dtype=float), STEPS)
    return _end_state(surface, x, v)


def _end_state(surface, x, v):
    """Project the end point on the surface, the end direction on its tangent plane."""
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
    """(n, a1, a2) (N, 3): the unit normal at x, the reference direction in the tangent plane, n x a1 (compiled)."""
    from osim_emb.paths._geodesic_kernels import tangent_basis_batch
    return tangent_basis_batch(surface.kind_code, surface.constants, _rows(x), _rows(reference))


def _residual(surface, p1, p2, p0, e1, e2, ref, u, full: bool = False):
    """The four tangency conditions (Scholz et al. 2015, Eq 14) for unknowns u (N, 4) = (s1, s2, angle, length) about
    the start p0 (compiled): r, P, Q, length (and t, tq with ``full``)."""
    from osim_emb.paths._geodesic_kernels import residual_batch
    r, p, q, length, t, tq = residual_batch(surface.kind_code, surface.constants, _rows(p1), _rows(p2), _rows(p0),
                                            _rows(e1), _rows(e2), _rows(ref), _rows(u), STEPS)
    return (r, p, q, length, t, tq) if full else (r, p, q, length)


def _jacobi_jacobian(surface, p1, p2, p, t, q, tq, length):
    """d(residual)/du at u = (0, 0, 0, length) with the tangent ``t`` as the reference direction, from the
    natural geodesic variations (Scholz et al. 2015): u0 slides the geodesic along itself, u3 lengthens it, u1
    (a shift of the start along m = n x t) and u2 (a turn of the start direction about n) are the Jacobi fields
    a m with a'' + K a = 0 (K the Gaussian curvature; a(0), a'(0) = (1, 0) and (0, 1)) integrated beside the
    geodesic (compiled, :mod:`osim_emb.paths._geodesic_kernels`)."""
    from osim_emb.paths._geodesic_kernels import jacobian_batch
    return jacobian_batch(surface.kind_code, surface.constants, _rows(p1), _rows(p2), _rows(p), _rows(t), _rows(q),
                          _rows(tq), np.ascontiguousarray(length, dtype=float), STEPS)


def _touchdown(surface, p1, p2):
    """The point of each segment p1 p2 deepest inside the surface (least f), and whether f < 0 there (compiled:
    a 201-sample scan, then golden-section steps)."""
    from osim_emb.paths._geodesic_kernels import touchdown_batch
    return touchdown_batch(surface.kind_code, surface.constants, _rows(p1), _rows(p2))


def surface_path(surface, hint: Any, p1: Any, p2: Any, tolerance: float = 1e-11, max_iterations: int = 60):
    """The path p1 -> surface -> p2 (surface frame, (N, 3)): (length, t1, t2, wrapped) as
    :func:`osim_emb.paths.scholz.obstacle_path`; NaN hint: start lifted off (touch down on the chord).

    Row by row in a compiled kernel (:func:`osim_emb.paths._geodesic_kernels.surface_path_batch`): where the straight
    segment passes on the hint's side (always, without a hint), the short side, Newton's method started from the
    touch-down point (lifted off: straight); elsewhere the long way round from the hint (lifted off: again from
    the touch-down point, where the segment meets the surface)."""
    from osim_emb.paths._geodesic_kernels import INSIDE, LIFTED_THROUGH, NOT_CONVERGED, surface_path_batch
    hint = np.asarray(hint, dtype=float).reshape(3)
    length, t1, t2, wrapped, status, mismatch = surface_path_batch(
        surface.kind_code, surface.constants, float(surface.size), np.ascontiguousarray(hint), _rows(p1), _rows(p2),
        float(tolerance), int(max_iterations), STEPS)
    if (status == INSIDE).any():
        raise ValueError("a path point is inside the obstacle: no path round it")
    for code in (NOT_CONVERGED, LIFTED_THROUGH):
        if (status == code).any():
            raise RuntimeError(failure_message(code, mismatch[status == code].max()))
    return length, t1, t2, wrapped


def failure_message(status: int, mismatch: float) -> str:
    """Why the geodesic path failed (a status of :func:`osim_emb.paths._geodesic_kernels.surface_path_row`)."""
    from osim_emb.paths._geodesic_kernels import NOT_CONVERGED
    if status == NOT_CONVERGED:
        return f"geodesic wrapping did not converge (largest tangent mismatch {mismatch:.1e})"
    return ("geodesic wrapping lifted off although the straight segment passes inside the obstacle (no stationary "
            "path found from the touch-down point)")
