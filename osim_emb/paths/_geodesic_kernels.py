"""Compiled (numba) geodesics for :mod:`osim_emb.paths.geodesic`: the RK4 steps of a batch of geodesics on an
ellipsoid or a torus (the same formulas as the surfaces' ``grad`` and ``vhv``, row by row), their Jacobi fields, and
the whole path p1 -> surface -> p2 row by row: touch-down scan, Newton's method on the four tangency conditions with
the Jacobi-field Jacobian, lift-off (the algorithm is described in :mod:`osim_emb.paths.geodesic`).  Vectors are
3-tuples inside the kernels (no allocation in the inner loops)."""

from __future__ import annotations

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.paths.wrapping._kernels import add, cross, dot, scale, sub

__all__ = ["ELLIPSOID", "TORUS", "shoot_batch", "jacobi_batch", "project_batch", "tangent_basis_batch", "residual_batch",
           "jacobian_batch", "touchdown_batch", "surface_path_batch", "INSIDE", "NOT_CONVERGED", "LIFTED_THROUGH"]

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



# -- the surfaces (f > 0 outside), scalar formulas --------------------------------------------------------

@njit(**_KW)
def _f(kind, c, x):
    if kind == ELLIPSOID:
        return x[0] * x[0] * c[0] + x[1] * x[1] * c[1] + x[2] * x[2] * c[2] - 1.0
    rho = np.hypot(x[0], x[1])
    return ((rho - c[0]) ** 2 + x[2] ** 2 - c[1] ** 2) / (2 * c[1])


@njit(**_KW)
def _grad(kind, c, x):
    if kind == ELLIPSOID:
        return (2.0 * x[0] * c[0], 2.0 * x[1] * c[1], 2.0 * x[2] * c[2])
    big, tube = c[0], c[1]
    rho = max(np.hypot(x[0], x[1]), 1e-300)
    k = (rho - big) / rho
    return (k * x[0] / tube, k * x[1] / tube, x[2] / tube)


@njit(**_KW)
def _hess(kind, c, x):
    """The Hessian's entries (h00, h01, h02, h11, h12, h22)."""
    if kind == ELLIPSOID:
        return (2.0 * c[0], 0.0, 0.0, 2.0 * c[1], 0.0, 2.0 * c[2])
    big, tube = c[0], c[1]
    rho = max(np.hypot(x[0], x[1]), 1e-300)
    s = big / (rho * rho * rho)
    return (((1 - big / rho) + s * x[0] * x[0]) / tube, s * x[0] * x[1] / tube, 0.0,
            ((1 - big / rho) + s * x[1] * x[1]) / tube, 0.0, 1.0 / tube)


@njit(**_KW)
def _hv(h, v):
    return (h[0] * v[0] + h[1] * v[1] + h[2] * v[2], h[1] * v[0] + h[3] * v[1] + h[4] * v[2],
            h[2] * v[0] + h[4] * v[1] + h[5] * v[2])


@njit(**_KW)
def _gaussian_curvature(kind, c, x0, x1, x2):
    """K = grad f^T adj(H) grad f / |grad f|^4 (Goldman 2005)."""
    g = _grad(kind, c, (x0, x1, x2))
    h00, h01, h02, h11, h12, h22 = _hess(kind, c, (x0, x1, x2))
    gg = g[0] * g[0] + g[1] * g[1] + g[2] * g[2]
    if kind == ELLIPSOID:  # H diagonal: the general formula's off-diagonal terms are exact zeros
        num = g[0] * (h11 * h22 * g[0]) + g[1] * (h00 * h22 * g[1]) + g[2] * (h00 * h11 * g[2])
        return num / (gg * gg)
    a00 = h11 * h22 - h12 * h12
    a01 = h02 * h12 - h01 * h22
    a02 = h01 * h12 - h02 * h11
    a11 = h00 * h22 - h02 * h02
    a12 = h02 * h01 - h00 * h12
    a22 = h00 * h11 - h01 * h01
    num = (g[0] * (a00 * g[0] + a01 * g[1] + a02 * g[2]) + g[1] * (a01 * g[0] + a11 * g[1] + a12 * g[2])
           + g[2] * (a02 * g[0] + a12 * g[1] + a22 * g[2]))
    return num / (gg * gg)


# -- 3-vectors as tuples --------------------------------------------------------------------------------------

# dot, cross, add, sub: the wrap kernels' (one definition); _scale takes (vector, factor)
_dot, _cross, _add, _sub = dot, cross, add, sub


@njit(**_KW)
def _scale(a, s):
    return scale(s, a)


@njit(**_KW)
def _norm(a):
    return np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(**_KW)
def _unit(a):
    n = _norm(a)
    if n > 0:
        return (a[0] / n, a[1] / n, a[2] / n)
    return a


@njit(**_KW)
def _row(x, i):
    return (x[i, 0], x[i, 1], x[i, 2])


@njit(**_KW)
def _put(x, i, v):
    x[i, 0], x[i, 1], x[i, 2] = v[0], v[1], v[2]


# -- the pieces of the tangency problem, one row --------------------------------------------------------------

@njit(**_KW)
def _project(kind, c, x):
    """The surface point on the gradient line through x (Newton's method on f along the gradient, 6 steps); a
    torus: radially from the nearest point of its core circle."""
    if kind == ELLIPSOID:
        for _ in range(6):
            g = _grad(kind, c, x)
            x = _sub(x, _scale(g, _f(kind, c, x) / _dot(g, g)))
        return x
    rho = max(np.hypot(x[0], x[1]), 1e-300)
    core = (c[0] * x[0] / rho, c[0] * x[1] / rho, 0.0)
    return _add(core, _scale(_unit(_sub(x, core)), c[1]))


@njit(**_KW)
def _tangent_basis(kind, c, x, reference):
    """(n, a1, a2): the unit normal at x, the reference direction in the tangent plane (another axis where it is
    normal), n x a1."""
    n = _unit(_grad(kind, c, x))
    a1 = _sub(reference, _scale(n, _dot(reference, n)))
    if _norm(a1) < 1e-9:
        alt = (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 1.0, 0.0)
        a1 = _sub(alt, _scale(n, _dot(alt, n)))
    a1 = _unit(a1)
    return n, a1, _cross(n, a1)


@njit(**_KW)
def _end_state(kind, c, x, v):
    """The end point projected on the surface, the end direction on its tangent plane."""
    xe = _project(kind, c, x)
    n = _unit(_grad(kind, c, xe))
    return xe, _unit(_sub(v, _scale(n, _dot(v, n))))


@njit(**_KW)
def _jacobi(kind, c, x, v, length, steps):
    """The scalar Jacobi fields a'' + K a = 0 along the geodesic (RK4 beside the geodesic's own, same steps):
    ((a(L), a'(L)) for a(0), a'(0) = (1, 0), then for (0, 1), the geodesic's end point, its end direction), the
    end state unprojected (the same numbers as :func:`shoot_batch`'s integration)."""
    h = length / steps
    x0, x1, x2, v0, v1, v2 = x[0], x[1], x[2], v[0], v[1], v[2]
    pa, qa, pb, qb = 1.0, 0.0, 0.0, 1.0
    for _ in range(steps):
        nx0, nx1, nx2, nv0, nv1, nv2, ka, kb, kc, kd = _rk4_step(kind, c, h, x0, x1, x2, v0, v1, v2, True)
        for col in range(2):  # (a, a') for the two initial conditions
            p, q = (pa, qa) if col == 0 else (pb, qb)
            kp1, kq1 = q, -ka * p
            kp2, kq2 = q + 0.5 * h * kq1, -kb * (p + 0.5 * h * kp1)
            kp3, kq3 = q + 0.5 * h * kq2, -kc * (p + 0.5 * h * kp2)
            kp4, kq4 = q + h * kq3, -kd * (p + h * kp3)
            p, q = p + h / 6 * (kp1 + 2 * kp2 + 2 * kp3 + kp4), q + h / 6 * (kq1 + 2 * kq2 + 2 * kq3 + kq4)
            if col == 0:
                pa, qa = p, q
            else:
                pb, qb = p, q
        x0, x1, x2, v0, v1, v2 = nx0, nx1, nx2, nv0, nv1, nv2
    return (pa, qa, pb, qb), (x0, x1, x2), (v0, v1, v2)


@njit(**_KW)
def jacobi_batch(kind, c, x, v, length, steps):
    """The Jacobi fields along each geodesic (x (N, 3), v (N, 3), length (N,)): (N, 2, 2), [k] = (a(L), a'(L))
    for a(0), a'(0) = (1, 0) and (0, 1)."""
    n = x.shape[0]
    out = np.empty((n, 2, 2))
    for i in range(n):
        out[i, 0, 0], out[i, 0, 1], out[i, 1, 0], out[i, 1, 1] = _jacobi(kind, c, _row(x, i), _row(v, i),
                                                                         length[i], steps)[0]
    return out


@njit(**_KW)
def _residual(kind, c, p1, p2, p0, e1, e2, ref, u, steps):
    """The four tangency conditions for unknowns u = (s1, s2, angle, length) about the start p0 (tangent basis e1,
    e2, reference direction ref): (r, P, Q, length, t, tq, the Jacobi fields along the geodesic (:func:`_jacobi`),
    integrated with it for :func:`_jacobian`)."""
    p = _project(kind, c, _add(p0, _add(_scale(e1, u[0]), _scale(e2, u[1]))))
    _, a1, a2 = _tangent_basis(kind, c, p, ref)
    t = _add(_scale(a1, np.cos(u[2])), _scale(a2, np.sin(u[2])))
    length = max(u[3], 0.0)
    fields, x_end, v_end = _jacobi(kind, c, p, t, length, steps)
    q, tq = _end_state(kind, c, x_end, v_end)
    n_p = _unit(_grad(kind, c, p))
    n_q = _unit(_grad(kind, c, q))
    d1, d2 = _unit(_sub(p, p1)), _unit(_sub(p2, q))
    r = (_dot(d1, n_p), _dot(d1, _cross(t, n_p)), _dot(d2, n_q), _dot(d2, _cross(tq, n_q)))
    return r, p, q, length, t, tq, fields


@njit(**_KW)
def _normal_change(h, n, gn, d):
    """d(unit normal) for a move d of the point."""
    hd = _scale(_hv(h, d), 1.0 / gn)
    return _sub(hd, _scale(n, _dot(hd, n)))


@njit(**_KW)
def _jacobian(kind, c, p1, p2, p, t, q, tq, fields):
    """d(residual)/du at u = (0, 0, 0, length) with t as the reference direction, from the natural geodesic
    variations (:func:`osim_emb.paths.geodesic._jacobi_jacobian`; ``fields`` the Jacobi fields along the geodesic
    from P to Q, :func:`_jacobi`): (4, 4)."""
    f00, f01, f10, f11 = fields
    g_p, g_q = _grad(kind, c, p), _grad(kind, c, q)
    gn_p, gn_q = _norm(g_p), _norm(g_q)
    n_p, n_q = _scale(g_p, 1.0 / gn_p), _scale(g_q, 1.0 / gn_q)
    h_p, h_q = _hess(kind, c, p), _hess(kind, c, q)
    m_p, m_q = _cross(n_p, t), _cross(n_q, tq)
    zero = (0.0, 0.0, 0.0)
    slide_q = _scale(n_q, -_dot(tq, _hv(h_q, tq)) / gn_q)
    d1_vec, d2_vec = _sub(p, p1), _sub(p2, q)
    l1, l2 = _norm(d1_vec), _norm(d2_vec)
    d1, d2 = _scale(d1_vec, 1.0 / l1), _scale(d2_vec, 1.0 / l2)
    b_p, b_q = _cross(t, n_p), _cross(tq, n_q)
    jac = np.empty((4, 4))
    for col in range(4):
        if col == 0:
            dp, dt, dq, dtq = t, _scale(n_p, -_dot(t, _hv(h_p, t)) / gn_p), tq, slide_q
        elif col == 1:
            dp, dt, dq, dtq = m_p, _scale(n_p, -_dot(t, _hv(h_p, m_p)) / gn_p), _scale(m_q, f00), _scale(m_q, f01)
        elif col == 2:
            dp, dt, dq, dtq = zero, m_p, _scale(m_q, f10), _scale(m_q, f11)
        else:
            dp, dt, dq, dtq = zero, zero, tq, slide_q
        if col == 1 or col == 2:  # keep the end direction tangent to the surface at the moved end point
            dtq = _sub(dtq, _scale(n_q, _dot(tq, _hv(h_q, dq)) / gn_q))
        dd1 = _scale(_sub(dp, _scale(d1, _dot(d1, dp))), 1.0 / l1)
        dn_p = _normal_change(h_p, n_p, gn_p, dp)
        dd2 = _scale(_sub(dq, _scale(d2, _dot(d2, dq))), -1.0 / l2)
        dn_q = _normal_change(h_q, n_q, gn_q, dq)
        jac[0, col] = _dot(dd1, n_p) + _dot(d1, dn_p)
        jac[1, col] = _dot(dd1, b_p) + _dot(d1, _add(_cross(dt, n_p), _cross(t, dn_p)))
        jac[2, col] = _dot(dd2, n_q) + _dot(d2, dn_q)
        jac[3, col] = _dot(dd2, b_q) + _dot(d2, _add(_cross(dtq, n_q), _cross(tq, dn_q)))
    return jac


@njit(**_KW)
def _touchdown(kind, c, p1, p2):
    """The point of the segment p1 p2 deepest inside the surface (least f: a 201-sample scan, then 40
    golden-section steps), and whether f < 0 there."""
    d = _sub(p2, p1)
    best, k = np.inf, 0
    for j in range(201):
        fj = _f(kind, c, _add(p1, _scale(d, j * (1.0 / 200))))
        if fj < best:
            best, k = fj, j
    lo, hi = max(k - 1, 0) * (1.0 / 200), min(k + 1, 200) * (1.0 / 200)
    for _ in range(40):
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        if _f(kind, c, _add(p1, _scale(d, m1))) < _f(kind, c, _add(p1, _scale(d, m2))):
            hi = m2
        else:
            lo = m1
    x = _add(p1, _scale(d, 0.5 * (lo + hi)))
    return x, _f(kind, c, x) < 0


@njit(**_KW)
def _solve_least_squares(a, b):
    """The minimum-norm least-squares solution of a x = b (numpy's lstsq: singular values below 4 eps of the
    largest dropped)."""
    u, s, vt = np.linalg.svd(a)
    cut = 4 * 2.220446049250313e-16 * s[0]
    x = np.zeros(4)
    for k in range(4):
        if s[k] > cut:
            w = (u[0, k] * b[0] + u[1, k] * b[1] + u[2, k] * b[2] + u[3, k] * b[3]) / s[k]
            for i in range(4):
                x[i] += w * vt[k, i]
    return x


@njit(**_KW)
def _max_abs(r):
    return max(max(abs(r[0]), abs(r[1])), max(abs(r[2]), abs(r[3])))


@njit(**_KW)
def _norm4(r):
    return np.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3])


@njit(**_KW)
def _newton(kind, c, size, a, b, start, tolerance, max_iterations, steps):
    """Newton's method on the four tangency conditions from a zero-length geodesic at ``start`` (projected on the
    surface) heading along b - a: (converged, lifted off, residual, P, Q, geodesic length)."""
    p0 = _project(kind, c, start)
    _, ref, _ = _tangent_basis(kind, c, p0, _unit(_sub(b, a)))  # b - a in the tangent plane
    _, e1, e2 = _tangent_basis(kind, c, p0, ref)
    u = np.zeros(4)
    lifted = False
    r, p, q, ln, t, tq, fields = _residual(kind, c, a, b, p0, e1, e2, ref, u, steps)
    u_new = np.empty(4)
    for _ in range(max_iterations):
        if _max_abs(r) < tolerance or lifted:
            break
        jac = _jacobian(kind, c, a, b, p, t, q, tq, fields)
        delta = -_solve_least_squares(jac, r)
        # damped: at most a quarter of the surface's size in position and length, 0.5 rad in angle
        big = max(max(max(abs(delta[0]), abs(delta[1])), abs(delta[3])) / (0.25 * size), abs(delta[2]) / 0.5)
        delta /= max(big, 1.0)
        size_r = _norm4(r)
        scale = 1.0
        r_new, p_new, q_new, ln_new, t_new, tq_new, fields_new = r, p, q, ln, t, tq, fields
        for _ in range(12):  # backtracking on the tangent mismatch (a length clamped at zero may lift off)
            for k in range(4):
                u_new[k] = u[k] + scale * delta[k]
            u_new[3] = max(u_new[3], 0.0)
            r_new, p_new, q_new, ln_new, t_new, tq_new, fields_new = _residual(kind, c, a, b, p0, e1, e2, ref,
                                                                               u_new, steps)
            if not (_norm4(r_new) > size_r and u[3] + scale * delta[3] > 0):
                break
            scale = 0.5 * scale
        # lift-off: the length shrinks to zero with both points above the tangent plane
        if u[3] + scale * delta[3] <= 0:
            nn = _unit(_grad(kind, c, p_new))
            if _dot(_sub(a, p_new), nn) > 0 and _dot(_sub(b, p_new), nn) > 0:
                lifted = True
        r, p, q, ln, t, tq, fields = r_new, p_new, q_new, ln_new, t_new, tq_new, fields_new
        # re-centre the unknowns on the current geodesic (natural corrections, as Scholz et al.)
        p0, ref = p, t
        _, e1, e2 = _tangent_basis(kind, c, p0, ref)
        u[0], u[1], u[2], u[3] = 0.0, 0.0, 0.0, u_new[3]
    return (not lifted) and _max_abs(r) < tolerance and ln > 0, lifted, r, p, q, ln


#: surface_path_batch's row status: an end point inside the surface, Newton's method not converged, lifted off
#: although the straight segment passes inside
INSIDE, NOT_CONVERGED, LIFTED_THROUGH = 1, 2, 3


@njit(**_KW)
def surface_path_row(kind, c, size, hint, has_hint, a, b, tolerance, max_iterations, steps):
    """The path a -> surface -> b (3-tuples, surface frame; hint a 3-tuple used when ``has_hint``): (length, P, Q,
    wrapped, status, mismatch): status 0 or INSIDE, NOT_CONVERGED (largest tangent mismatch in ``mismatch``),
    LIFTED_THROUGH.  Where the straight segment passes on the hint's side (always, without a hint): the short side,
    started from the touch-down point (lifted off there: straight); elsewhere from the hint, the long way round
    (lifted off: from the touch-down point)."""
    nan3 = (np.nan, np.nan, np.nan)
    if _f(kind, c, a) <= 0 or _f(kind, c, b) <= 0:
        return np.nan, nan3, nan3, False, INSIDE, 0.0
    straight = _norm(_sub(b, a))
    touch, meets = _touchdown(kind, c, a, b)
    short = True if not has_hint else _dot(touch, hint) >= 0
    if short and not meets:
        return straight, nan3, nan3, False, 0, 0.0
    start = touch if short else hint
    for stage in range(2):
        ok, lifted, r, p, q, ln = _newton(kind, c, size, a, b, start, tolerance, max_iterations, steps)
        if ok:
            return _norm(_sub(p, a)) + ln + _norm(_sub(b, q)), p, q, True, 0, 0.0
        if not lifted:
            return np.nan, nan3, nan3, False, NOT_CONVERGED, _max_abs(r)
        if not meets:  # lifted off, straight
            break
        if stage == 1:  # never straight through the obstacle
            return np.nan, nan3, nan3, False, LIFTED_THROUGH, 0.0
        start = touch
    return straight, nan3, nan3, False, 0, 0.0


@njit(**_KW)
def surface_path_batch(kind, c, size, hint, p1, p2, tolerance, max_iterations, steps):
    """:func:`surface_path_row` over the rows of p1, p2 (N, 3) (hint (3,), NaN: none): (length, t1, t2, wrapped,
    status, mismatch), t1 and t2 NaN where the path is straight."""
    n = p1.shape[0]
    length = np.empty(n)
    t1 = np.full((n, 3), np.nan)
    t2 = np.full((n, 3), np.nan)
    wrapped = np.zeros(n, dtype=np.bool_)
    status = np.zeros(n, dtype=np.int64)
    mismatch = np.zeros(n)
    has_hint = not (np.isnan(hint[0]) or np.isnan(hint[1]) or np.isnan(hint[2]))
    h = (hint[0], hint[1], hint[2])
    for i in range(n):
        length[i], p, q, wrapped[i], status[i], mismatch[i] = surface_path_row(
            kind, c, size, h, has_hint, _row(p1, i), _row(p2, i), tolerance, max_iterations, steps)
        if wrapped[i]:
            _put(t1, i, p)
            _put(t2, i, q)
    return length, t1, t2, wrapped, status, mismatch


# -- batch entries for the numpy-facing helpers (tests, the torus import) -------------------------------------

@njit(**_KW)
def project_batch(kind, c, x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        _put(out, i, _project(kind, c, _row(x, i)))
    return out


@njit(**_KW)
def tangent_basis_batch(kind, c, x, reference):
    n, a1, a2 = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    for i in range(x.shape[0]):
        ni, a1i, a2i = _tangent_basis(kind, c, _row(x, i), _row(reference, i))
        _put(n, i, ni)
        _put(a1, i, a1i)
        _put(a2, i, a2i)
    return n, a1, a2


@njit(**_KW)
def residual_batch(kind, c, p1, p2, p0, e1, e2, ref, u, steps):
    n = p1.shape[0]
    r, p, q, t, tq = np.empty((n, 4)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
    length = np.empty(n)
    for i in range(n):
        ri, pi, qi, length[i], ti, tqi, _ = _residual(kind, c, _row(p1, i), _row(p2, i), _row(p0, i), _row(e1, i),
                                                    _row(e2, i), _row(ref, i), u[i], steps)
        r[i, 0], r[i, 1], r[i, 2], r[i, 3] = ri
        _put(p, i, pi)
        _put(q, i, qi)
        _put(t, i, ti)
        _put(tq, i, tqi)
    return r, p, q, length, t, tq


@njit(**_KW)
def jacobian_batch(kind, c, p1, p2, p, t, q, tq, length, steps):
    n = p1.shape[0]
    out = np.empty((n, 4, 4))
    for i in range(n):
        fields = _jacobi(kind, c, _row(p, i), _row(t, i), length[i], steps)[0]
        out[i] = _jacobian(kind, c, _row(p1, i), _row(p2, i), _row(p, i), _row(t, i), _row(q, i), _row(tq, i), fields)
    return out


@njit(**_KW)
def touchdown_batch(kind, c, p1, p2):
    n = p1.shape[0]
    x = np.empty((n, 3))
    meets = np.empty(n, dtype=np.bool_)
    for i in range(n):
        xi, meets[i] = _touchdown(kind, c, _row(p1, i), _row(p2, i))
        _put(x, i, xi)
    return x, meets
