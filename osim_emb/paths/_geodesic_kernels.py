"""Compiled (numba) geodesic integration for :mod:`osim_emb.paths.geodesic`: the RK4 steps of a batch of
geodesics on an ellipsoid or a torus (the same formulas as the surfaces' ``grad`` and ``vhv``, row by row)."""

from __future__ import annotations

import numpy as np

from osim_emb.core._accel import njit

__all__ = ["ELLIPSOID", "TORUS", "shoot_batch"]

ELLIPSOID, TORUS = 0, 1
_KW = dict(cache=True, error_model="numpy")


@njit(**_KW)
def _acceleration(kind, c, x0, x1, x2, v0, v1, v2):
    """x'' of a unit-speed geodesic at (x, v): -(v^T H v / |grad f|^2) grad f."""
    if kind == ELLIPSOID:
        g0, g1, g2 = 2.0 * x0 * c[0], 2.0 * x1 * c[1], 2.0 * x2 * c[2]
        vhv = 2.0 * (v0 * v0 * c[0] + v1 * v1 * c[1] + v2 * v2 * c[2])
    else:  # torus: c = (R, r)
        big, tube = c[0], c[1]
        rho = max(np.hypot(x0, x1), 1e-300)
        k = (rho - big) / rho
        g0, g1, g2 = k * x0 / tube, k * x1 / tube, x2 / tube
        vr = (v0 * x0 + v1 * x1) / rho
        vhv = ((1 - big / rho) * (v0 * v0 + v1 * v1) + big / rho * vr * vr + v2 * v2) / tube
    s = -vhv / (g0 * g0 + g1 * g1 + g2 * g2)
    return s * g0, s * g1, s * g2


@njit(**_KW)
def _rk4_step(kind, c, h, x0, x1, x2, v0, v1, v2, curvature):  # pragma: no cover - compiled
    """One RK4 step of length h of the geodesic x'' = a(x, x'): the new x, x' and, with ``curvature``, the
    Gaussian curvature at the step's four stage points (for the Jacobi fields beside it; else zeros)."""
    ka = kb = kc = kd = 0.0
    if curvature:
        ka = _gaussian_curvature(kind, c, x0, x1, x2)
    a0, a1, a2 = _acceleration(kind, c, x0, x1, x2, v0, v1, v2)
    k2x0, k2x1, k2x2 = v0 + 0.5 * h * a0, v1 + 0.5 * h * a1, v2 + 0.5 * h * a2
    m0, m1, m2 = x0 + 0.5 * h * v0, x1 + 0.5 * h * v1, x2 + 0.5 * h * v2
    if curvature:
        kb = _gaussian_curvature(kind, c, m0, m1, m2)
    b0, b1, b2 = _acceleration(kind, c, m0, m1, m2, k2x0, k2x1, k2x2)
    k3x0, k3x1, k3x2 = v0 + 0.5 * h * b0, v1 + 0.5 * h * b1, v2 + 0.5 * h * b2
    n0, n1, n2 = x0 + 0.5 * h * k2x0, x1 + 0.5 * h * k2x1, x2 + 0.5 * h * k2x2
    if curvature:
        kc = _gaussian_curvature(kind, c, n0, n1, n2)
    d0, d1, d2 = _acceleration(kind, c, n0, n1, n2, k3x0, k3x1, k3x2)
    k4x0, k4x1, k4x2 = v0 + h * d0, v1 + h * d1, v2 + h * d2
    o0, o1, o2 = x0 + h * k3x0, x1 + h * k3x1, x2 + h * k3x2
    if curvature:
        kd = _gaussian_curvature(kind, c, o0, o1, o2)
    e0, e1, e2 = _acceleration(kind, c, o0, o1, o2, k4x0, k4x1, k4x2)
    return (x0 + h / 6 * (v0 + 2 * k2x0 + 2 * k3x0 + k4x0),
            x1 + h / 6 * (v1 + 2 * k2x1 + 2 * k3x1 + k4x1),
            x2 + h / 6 * (v2 + 2 * k2x2 + 2 * k3x2 + k4x2),
            v0 + h / 6 * (a0 + 2 * b0 + 2 * d0 + e0),
            v1 + h / 6 * (a1 + 2 * b1 + 2 * d1 + e1),
            v2 + h / 6 * (a2 + 2 * b2 + 2 * d2 + e2),
            ka, kb, kc, kd)


@njit(**_KW)
def shoot_batch(kind, c, x, v, length, steps):
    """RK4 over ``steps`` equal steps of each geodesic (x (N, 3), v (N, 3), length (N,)): the end points and
    directions (not projected back on the surface)."""
    n = x.shape[0]
    xo = np.empty_like(x)
    vo = np.empty_like(v)
    for i in range(n):
        h = length[i] / steps
        x0, x1, x2 = x[i, 0], x[i, 1], x[i, 2]
        v0, v1, v2 = v[i, 0], v[i, 1], v[i, 2]
        for _ in range(steps):
            x0, x1, x2, v0, v1, v2, _, _, _, _ = _rk4_step(kind, c, h, x0, x1, x2, v0, v1, v2, False)
        xo[i, 0], xo[i, 1], xo[i, 2] = x0, x1, x2
        vo[i, 0], vo[i, 1], vo[i, 2] = v0, v1, v2
    return xo, vo


@njit(**_KW)
def _gradient_hessian(kind, c, x0, x1, x2):
    """grad f (3,) and Hessian (3, 3) of the surface function at x."""
    g = np.empty(3)
    h = np.zeros((3, 3))
    if kind == ELLIPSOID:
        g[0], g[1], g[2] = 2.0 * x0 * c[0], 2.0 * x1 * c[1], 2.0 * x2 * c[2]
        h[0, 0], h[1, 1], h[2, 2] = 2.0 * c[0], 2.0 * c[1], 2.0 * c[2]
    else:
        big, tube = c[0], c[1]
        rho = max(np.hypot(x0, x1), 1e-300)
        k = (rho - big) / rho
        g[0], g[1], g[2] = k * x0 / tube, k * x1 / tube, x2 / tube
        s = big / (rho * rho * rho)
        h[0, 0] = ((1 - big / rho) + s * x0 * x0) / tube
        h[1, 1] = ((1 - big / rho) + s * x1 * x1) / tube
        h[0, 1] = h[1, 0] = s * x0 * x1 / tube
        h[2, 2] = 1.0 / tube
    return g, h


@njit(**_KW)
def _gaussian_curvature(kind, c, x0, x1, x2):
    """K = grad f^T adj(H) grad f / |grad f|^4 (Goldman 2005)."""
    g, h = _gradient_hessian(kind, c, x0, x1, x2)
    adj = np.empty((3, 3))
    adj[0, 0] = h[1, 1] * h[2, 2] - h[1, 2] * h[2, 1]
    adj[0, 1] = h[0, 2] * h[2, 1] - h[0, 1] * h[2, 2]
    adj[0, 2] = h[0, 1] * h[1, 2] - h[0, 2] * h[1, 1]
    adj[1, 0] = h[1, 2] * h[2, 0] - h[1, 0] * h[2, 2]
    adj[1, 1] = h[0, 0] * h[2, 2] - h[0, 2] * h[2, 0]
    adj[1, 2] = h[0, 2] * h[1, 0] - h[0, 0] * h[1, 2]
    adj[2, 0] = h[1, 0] * h[2, 1] - h[1, 1] * h[2, 0]
    adj[2, 1] = h[0, 1] * h[2, 0] - h[0, 0] * h[2, 1]
    adj[2, 2] = h[0, 0] * h[1, 1] - h[0, 1] * h[1, 0]
    num = 0.0
    for i in range(3):
        for j in range(3):
            num += g[i] * adj[i, j] * g[j]
    gg = g[0] * g[0] + g[1] * g[1] + g[2] * g[2]
    return num / (gg * gg)


@njit(**_KW)
def jacobi_batch(kind, c, x, v, length, steps):
    """The scalar Jacobi fields a'' + K a = 0 along each geodesic (x (N, 3), v (N, 3), length (N,); RK4 beside the
    geodesic's own, same steps): (N, 2, 2), [k] = (a(L), a'(L)) for a(0), a'(0) = (1, 0) and (0, 1)."""
    n = x.shape[0]
    out = np.empty((n, 2, 2))
    for i in range(n):
        h = length[i] / steps
        x0, x1, x2 = x[i, 0], x[i, 1], x[i, 2]
        v0, v1, v2 = v[i, 0], v[i, 1], v[i, 2]
        a = np.array([1.0, 0.0])
        b = np.array([0.0, 1.0])
        for _ in range(steps):
            nx0, nx1, nx2, nv0, nv1, nv2, ka, kb, kc, kd = _rk4_step(kind, c, h, x0, x1, x2, v0, v1, v2, True)
            for col in range(2):  # (a, a') for the two initial conditions
                p, q = a[col], b[col]
                kp1, kq1 = q, -ka * p
                kp2, kq2 = q + 0.5 * h * kq1, -kb * (p + 0.5 * h * kp1)
                kp3, kq3 = q + 0.5 * h * kq2, -kc * (p + 0.5 * h * kp2)
                kp4, kq4 = q + h * kq3, -kd * (p + h * kp3)
                a[col] = p + h / 6 * (kp1 + 2 * kp2 + 2 * kp3 + kp4)
                b[col] = q + h / 6 * (kq1 + 2 * kq2 + 2 * kq3 + kq4)
            x0, x1, x2, v0, v1, v2 = nx0, nx1, nx2, nv0, nv1, nv2
        for col in range(2):
            out[i, col, 0], out[i, col, 1] = a[col], b[col]
    return out
