"""Compiled (numba) scalar kernel of WrapEllipsoid: the one implementation of :mod:`.ellipsoid`.

Every step follows OpenSim 4.6's WrapEllipsoid operation by operation (the algorithm:
``docs/wrapping_ellipsoid.md``), with the C library's ``pow``/``acos``/``sin``/``cos``.
Vectors are tuples of three floats, in OpenSim's normalized units inside the
wrap (metres times ``factor``).
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.paths.wrapping._kernels import MANDATORY_WRAP, NO_WRAP, INSIDE_RADIUS, add, cross, nan3, scale, sub
from osim_emb.paths.wrapping._kernels import dot as _dot
from osim_emb.paths.wrapping._kernels import norm as _norm

_KW = dict(cache=True, error_model="numpy")
_KW0 = dict(_KW, _nrt=False)  # functions that take arrays but allocate nothing (see _kernels_path)

NAN = math.nan
_SURFACE_TOL = 1e-4
_TINY = 1e-8
_MU_BLEND_MIN = 0.7073
_MU_BLEND_MAX = 0.9
_N_FAN = 300
_SV_BOUNDARY_BLEND = 0.3
_SV_HI = 1.0 - _SV_BOUNDARY_BLEND
_ROUNDOFF = 2e-13
_SURELY_INSIDE = 1.0 - 1e-12  # (x/a)^2 + ... < 1 certain whatever the rounding of either form
_EPS = float(np.finfo(float).eps)
_SEG_LEN = 0.001
_MAX_SEGS = 499
_MAX_IT = 50
_MAX_IT2 = 1000
_NEWTON_IT = 64
_NEWTON_TOL = 1e-9
TWO_PI = 2 * math.pi

METHOD_HYBRID, METHOD_MIDPOINT, METHOD_AXIAL = 0, 1, 2


@njit(**_KW)
def _uz(a):
    """_unit_or_zero."""
    mag = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if mag >= _EPS:
        inv = 1.0 / mag
        return (a[0] * inv, a[1] * inv, a[2] * inv)
    return (0.0, 0.0, 0.0)


@njit(**_KW)
def _with(v, i, x):
    """v with component i replaced by x."""
    return (x if i == 0 else v[0], x if i == 1 else v[1], x if i == 2 else v[2])


@njit(**_KW)
def _div(a, b):
    return (a[0] / b[0], a[1] / b[1], a[2] / b[2])


# ---------------------------------------------------------------------------
# closest points
# ---------------------------------------------------------------------------
@njit(**_KW)
def closest_on_ellipse(a, b, u, v):
    a2, b2 = a * a, b * b
    near_x = abs(0.0 - u) <= _ROUNDOFF
    near_y = abs(0.0 - v) <= _ROUNDOFF
    if near_x and near_y:
        if a < b:
            return (-a if u < 0.0 else a), v
        return u, (-b if v < 0.0 else b)
    if near_x:
        to_pole = (a >= b) or (abs(v) >= b - a2 / b)
        if to_pole:
            return u, (b if v >= 0 else -b)
        yy = b2 * v / (b2 - a2)
        ydb = yy / b
        return a * math.sqrt(abs(1 - ydb * ydb)), yy
    if near_y:
        to_pole = (b >= a) or (abs(u) >= a - b2 / a)
        if to_pole:
            return (a if u >= 0 else -a), v
        xx = a2 * u / (a2 - b2)
        xda = xx / a
        return xx, b * math.sqrt(abs(1 - xda * xda))
    a2u2, b2v2 = a2 * (u * u), b2 * (v * v)
    amax = b if b > a else a
    if (u / a) * (u / a) + (v / b) * (v / b) < 1.0:
        t = 0.0
    else:
        t = amax * math.sqrt(u * u + v * v)
    P = NAN
    Q = NAN
    for _ in range(_NEWTON_IT):
        p = t + a2
        q = t + b2
        P, Q = p, q
        p2, q2 = p * p, q * q
        f = p2 * q2 - a2u2 * q2 - b2v2 * p2
        if abs(f) < _NEWTON_TOL:
            break
        fp = 2.0 * (p * q * (p + q) - a2u2 * q - b2v2 * p)
        t = t - f / fp
    return a2 * u / P, b2 * v / Q


@njit(**_KW)
def closest_on_ellipsoid(abc, dims, pt, axis, prev):
    """Closest point on the ellipsoid (OpenSim's closestPointToEllipse in 3-D) for one point: (point, converged).

    ``axis`` -1: chosen as in OpenSim; 0, 1, 2: forced.
    """
    a, b, c = abc
    u, v, w = pt
    ax = axis
    if axis < 0:
        best = np.inf
        for i in range(3):
            s = 0.0
            for j in range(3):
                if j != i:
                    s += dims[j]
            if abs(0.0 - pt[i]) <= _ROUNDOFF and best > s:
                ax = i
                best = s
    if ax == 0:
        yy, zz = closest_on_ellipse(b, c, v, w)
        return (u, yy, zz), True
    if ax == 1:
        zz, xx = closest_on_ellipse(c, a, w, u)
        return (xx, v, zz), True
    if ax == 2:
        xx, yy = closest_on_ellipse(a, b, u, v)
        return (xx, yy, w), True
    a2, b2, c2 = a * a, b * b, c * c
    au, bv, cw = a2 * (u * u), b2 * (v * v), c2 * (w * w)
    amax = a
    if b > amax:
        amax = b
    if c > amax:
        amax = c
    if (u / a) * (u / a) + (v / b) * (v / b) + (w / c) * (w / c) < 1.0:
        t = 0.0
    else:
        t = amax * math.sqrt(u * u + v * v + w * w)
    for _ in range(_NEWTON_IT):
        P, Q, R = t + a2, t + b2, t + c2
        P2, Q2, R2 = P * P, Q * Q, R * R
        f = P2 * Q2 * R2 - au * Q2 * R2 - bv * P2 * R2 - cw * P2 * Q2
        if abs(f) < _NEWTON_TOL:
            return (a2 * u / P, b2 * v / Q, c2 * w / R), True
        PQ, PR, QR = P * Q, P * R, Q * R
        PQR = P * Q * R
        fp = 2.0 * (PQR * (QR + PR + PQ) - au * QR * (Q + R) - bv * PR * (P + R) - cw * PQ * (P + Q))
        t = t - f / fp
    return prev, False


# ---------------------------------------------------------------------------
# tangent points (damped Gauss-Newton)
# ---------------------------------------------------------------------------
@njit(**_KW0)
def _residuals(r, d, p, vs, vs4, a, asq, e):
    """Fill e (4,) with the residuals; return their sum of squares."""
    q0, q1, q2 = r[0] / a[0], r[1] / a[1], r[2] / a[2]
    n0, n1, n2 = 2.0 * r[0] / asq[0], 2.0 * r[1] / asq[1], 2.0 * r[2] / asq[2]
    e0 = (vs[0] * r[0] + vs[1] * r[1] + vs[2] * r[2]) + vs4
    e1 = -1.0 + q0 * q0 + q1 * q1 + q2 * q2
    e2 = (n0 * r[0] + n1 * r[1] + n2 * r[2]) + d
    e3 = (n0 * p[0] + n1 * p[1] + n2 * p[2]) + d
    e[0] = e0
    e[1] = e1
    e[2] = e2
    e[3] = e3
    return e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3


@njit(**_KW0)
def _inv4(m, aug):
    """Gauss-Jordan inverse with partial pivoting (as OpenSim), in aug (4, 8); returns aug."""
    for i in range(4):
        for j in range(4):
            aug[i, j] = m[i, j]
            aug[i, 4 + j] = 1.0 if i == j else 0.0
    for k in range(4):
        # np.argmax: first maximum, or the first NaN
        piv = k
        best = abs(aug[k, k])
        if best == best:
            for i in range(k + 1, 4):
                v = abs(aug[i, k])
                if v != v:
                    piv = i
                    break
                if v > best:
                    best = v
                    piv = i
        if piv != k:
            for j in range(8):
                tmp = aug[piv, j]
                aug[piv, j] = aug[k, j]
                aug[k, j] = tmp
        pv = aug[k, k]
        for j in range(8):
            aug[k, j] = aug[k, j] / pv
        for i in range(4):
            if i != k:
                f = aug[i, k]
                for j in range(8):
                    aug[i, j] = aug[i, j] - f * aug[k, j]
    return aug


@njit(**_KW0)
def _damped_step(JJ, diag, dd, vneg, alph, M, aug, step):
    for i in range(4):
        for j in range(4):
            M[i, j] = JJ[i, j]
        M[i, i] = diag[i] * (1.0 + alph)
    _inv4(M, aug)
    for i in range(4):
        s = 0.0
        for j in range(4):
            s = s + dd * aug[i, 4 + j] * vneg[j] / 16.0
        step[i] = s


@njit(**_KW0)
def tangent_point(pe, r0, p, vs, vs4, a, wk):
    """The tangent point from one end point (damped Gauss-Newton, OpenSim's stopping rules): (tangent point, converged).

    ``wk``: workspace, a tuple of C-contiguous arrays (vectors (7, 4), D, JJ, M (3, 4, 4), aug (4, 8)).
    """
    if abs(pe) < _SURFACE_TOL:
        return p, True
    asq = (a[0] * a[0], a[1] * a[1], a[2] * a[2])
    vec, mats, aug = wk
    rr = vec[0]
    r_old = vec[1]
    ee = vec[2]
    vneg = vec[3]
    diag = vec[4]
    vt = vec[5]
    step = vec[6]
    D = mats[0]
    JJ = mats[1]
    M = mats[2]
    rr[0], rr[1], rr[2] = r0[0], r0[1], r0[2]
    d = -((2.0 * rr[0] / asq[0]) * rr[0] + (2.0 * rr[1] / asq[1]) * rr[1] + (2.0 * rr[2] / asq[2]) * rr[2])
    ssq = _residuals(rr, d, p, vs, vs4, a, asq, ee)
    ssqo = ssq
    alpha = 0.01
    nit = 0
    p_unit = _uz(p)
    for i in range(4):
        vt[i] = 0.0
    for i in range(3):  # the columns of the Jacobian that do not depend on (r, d)
        D[i, 0] = vs[i]
        D[i, 3] = 2.0 * p[i] / asq[i]
    D[3, 0] = 0.0
    D[3, 1] = 0.0
    D[3, 2] = 1.0
    D[3, 3] = 1.0
    while ssq > _TINY and nit < _MAX_IT:
        nit += 1
        for i in range(3):
            D[i, 1] = 2.0 * rr[i] / asq[i]
            D[i, 2] = 2.0 * (2.0 * rr[i]) / asq[i]
        pcos = _dot(_uz((p[0] - rr[0], p[1] - rr[1], p[2] - rr[2])), p_unit)
        dd = 1.0
        if pcos > 0.1:
            dd = 1.0 - math.pow(pcos, 100.0)
        for i in range(4):
            s = 0.0
            for j in range(4):
                s = s - D[i, j] * ee[j]
            vneg[i] = s
        for i in range(4):
            for k in range(4):
                s = 0.0
                for j in range(4):
                    s = s + D[i, j] * D[k, j]
                JJ[i, k] = s
        for i in range(4):
            diag[i] = JJ[i, i]
        for i in range(4):
            vt[i] = 0.0
        # (1) damped steps while the sum of squares does not decrease
        nit2 = 0
        while ssq >= ssqo and nit2 < _MAX_IT2:
            _damped_step(JJ, diag, dd, vneg, alpha, M, aug, step)
            for i in range(4):
                vt[i] = step[i]
            # advance
            r_old[0], r_old[1], r_old[2] = rr[0], rr[1], rr[2]
            d_old = d
            for i in range(3):
                rr[i] = r_old[i] + step[i]
            d = d_old + step[3]
            s_new = _residuals(rr, d, p, vs, vs4, a, asq, ee)
            ssqo = ssq
            ssq = s_new
            same = rr[0] == r_old[0] and rr[1] == r_old[1] and rr[2] == r_old[2] and d == d_old
            alpha = alpha * 4.0
            nit2 += 1
            if same and nit2 < _MAX_IT2:
                left = _MAX_IT2 - nit2
                alpha_last = math.ldexp(alpha, 2 * (left - 1))
                _damped_step(JJ, diag, dd, vneg, alpha_last, M, aug, step)
                for i in range(4):
                    vt[i] = step[i]
                r_old[0], r_old[1], r_old[2] = rr[0], rr[1], rr[2]
                d_old = d
                for i in range(3):
                    rr[i] = r_old[i] + step[i]
                d = d_old + step[3]
                s_new = _residuals(rr, d, p, vs, vs4, a, asq, ee)
                ssqo = ssq
                ssq = s_new
                alpha = alpha_last * 4.0
                nit2 = _MAX_IT2
        alpha = alpha / 8.0
        # (2) extrapolate along the last step while that does not increase the sum of squares
        fakt = 0.5
        nit2 = 0
        while ssq <= ssqo and nit2 < _MAX_IT2:
            fakt = fakt * 2.0
            r_old[0], r_old[1], r_old[2] = rr[0], rr[1], rr[2]
            d_old = d
            for i in range(3):
                rr[i] = r_old[i] + vt[i] * fakt
            d = d_old + vt[3] * fakt
            s_new = _residuals(rr, d, p, vs, vs4, a, asq, ee)
            ssqo = ssq
            ssq = s_new
            same = rr[0] == r_old[0] and rr[1] == r_old[1] and rr[2] == r_old[2] and d == d_old
            nit2 += 1
            if same and nit2 < _MAX_IT2:
                left = _MAX_IT2 - nit2
                first = left + 1
                for j in range(1, left + 1):
                    f = fakt * math.ldexp(1.0, j)
                    if (rr[0] + vt[0] * f != rr[0] or rr[1] + vt[1] * f != rr[1] or rr[2] + vt[2] * f != rr[2]
                            or d + vt[3] * f != d):
                        first = j
                        break
                skip = first - 1
                fakt = math.ldexp(fakt, skip)
                nit2 += skip
                ssqo = ssq
        # ... and take back the last (worse) extrapolation
        for i in range(3):
            rr[i] = rr[i] - vt[i] * fakt
        d = d - vt[3] * fakt
        ssq = _residuals(rr, d, p, vs, vs4, a, asq, ee)
        ssqo = ssq
    return (rr[0], rr[1], rr[2]), ssq <= _TINY


# ---------------------------------------------------------------------------
# polyline
# ---------------------------------------------------------------------------
@njit(**_KW0)
def polyline(r1, r2, a, vs, vs4, factor, far_side, pts):
    """The polyline r1 -> r2 of about 1 mm pieces for one segment: (npts, length, point 1, point npts-2).

    ``pts`` (>= 500, 3) receives the points when it has rows (else only the two points
    the quadrant check needs are kept).
    """
    keep = pts.shape[0] > 0
    len_m = _norm(sub(r1, r2)) / factor
    short = len_m < _SEG_LEN
    if short or not np.isfinite(len_m):
        nsegf = 0.0
    else:
        nsegf = np.floor(len_m / _SEG_LEN)
    if nsegf > _MAX_SEGS:
        nsegf = float(_MAX_SEGS)
    nseg = int(nsegf)
    valid = short or nseg > 0
    npts = 2 if short else (nseg + 1 if nseg > 0 else 0)
    avs0, avs1, avs2 = abs(vs[0]), abs(vs[1]), abs(vs[2])
    imax = 0
    if avs1 > avs0:
        imax = 1
    if avs2 > (avs1 if imax == 1 else avs0):
        imax = 2
    u = (1.0 if imax == 0 else 0.0, 1.0 if imax == 1 else 0.0, 1.0 if imax == 2 else 0.0)
    mu = (-(vs[0] * 0.0 + vs[1] * 0.0 + vs[2] * 0.0) - vs4) / _dot(vs, u)
    a0 = (0.0 + mu * u[0], 0.0 + mu * u[1], 0.0 + mu * u[2])
    ar1 = _uz(sub(r1, a0))
    ar2 = _uz(sub(r2, a0))
    cc = _dot(ar1, ar2)
    phi0 = math.acos(cc) if (-1.0 <= cc and cc <= 1.0) else NAN
    ns = float(nseg if nseg > 1 else 1)
    dphi = -(TWO_PI - phi0) / ns if far_side else phi0 / ns
    vsz = _uz(cross(ar1, ar2))
    vsy = cross(vsz, ar1)
    if keep:
        pts[0, 0], pts[0, 1], pts[0, 2] = r1
    w1 = r2
    w2 = r1
    length = 0.0
    prev = r1
    if valid and (not short) and nseg >= 2:
        f2 = _div(a0, a)
        cc2 = _dot(f2, f2) - 1.0
        for k in range(1, nseg):
            phi = float(k) * dphi
            cph, sph = math.cos(phi), math.sin(phi)
            rv = (ar1[0] * cph + vsy[0] * sph, ar1[1] * cph + vsy[1] * sph, ar1[2] * cph + vsy[2] * sph)
            f1 = _div(rv, a)
            aa = _dot(f1, f1)
            bb = 2.0 * _dot(f1, f2)
            mu3 = (-bb + math.sqrt(bb * bb - 4.0 * aa * cc2)) / (2.0 * aa)
            pt = add(a0, scale(mu3, rv))
            if keep:
                pts[k, 0], pts[k, 1], pts[k, 2] = pt
            if k == 1:
                w1 = pt
            w2 = pt
            length = length + _norm(sub(pt, prev))
            prev = pt
        length = length + _norm(sub(r2, prev))
        if keep:
            pts[nseg, 0], pts[nseg, 1], pts[nseg, 2] = r2
    else:
        length = _norm(sub(r2, r1))
        if keep:
            pts[1, 0], pts[1, 1], pts[1, 2] = r2
    if short:
        length = len_m * factor
    if not valid:
        length = NAN
    return npts, length, w1, w2


@njit(**_KW0)
def fan_direction(a, dims, r1, r1r2, start_pt, fw, act):
    """Unit sum of the directions from 298 chord samples to their closest surface points.

    The 298 closest-point Newton iterations run in lockstep over the samples (each
    sample's iterates and stopping test are exactly those of
    :func:`closest_on_ellipsoid`; a converged sample is frozen), so that the
    compiler can vectorize them.  Samples within 2e-13 of a coordinate plane (the
    planar special case) are done one by one.  A sample whose iteration does not converge keeps the
    previous sample's point; the first, the closest point to ``start_pt`` in the x = 0 plane (computed
    only then).  ``fw``, ``act``: workspace (11, 298) and (298,) uint8.
    """
    n = _N_FAN - 2
    aa, bb, cc = a
    a2, b2, c2 = aa * aa, bb * bb, cc * cc
    amax = aa
    if bb > amax:
        amax = bb
    if cc > amax:
        amax = cc
    su = fw[0]
    sv = fw[1]
    sw = fw[2]
    t = fw[3]
    au = fw[5]
    bv = fw[6]
    cw = fw[7]
    cx = fw[8]
    cy = fw[9]
    cz = fw[10]
    ia2, ib2, ic2 = 1.0 / a2, 1.0 / b2, 1.0 / c2
    nspecial = 0
    nslow = 0
    for i in range(n):  # (branch-free, so that it vectorizes)
        tt = float(i + 1) / _N_FAN
        u = r1[0] + tt * r1r2[0]
        v = r1[1] + tt * r1r2[1]
        w = r1[2] + tt * r1r2[2]
        su[i] = u
        sv[i] = v
        sw[i] = w
        au[i] = a2 * (u * u)
        bv[i] = b2 * (v * v)
        cw[i] = c2 * (w * w)
        sp = (abs(0.0 - u) <= _ROUNDOFF) | (abs(0.0 - v) <= _ROUNDOFF) | (abs(0.0 - w) <= _ROUNDOFF)
        nspecial += sp
        act[i] = not sp
        # the start of the iteration: 0 inside the ellipsoid (every sample of a chord, in practice);
        # decided without divisions where the test cannot be near its threshold, else below as written
        sure_in = (u * u) * ia2 + (v * v) * ib2 + (w * w) * ic2 < _SURELY_INSIDE
        nslow += not (sp or sure_in)
        t[i] = 0.0
    if nslow > 0:
        for i in range(n):
            u, v, w = su[i], sv[i], sw[i]
            sp = (abs(0.0 - u) <= _ROUNDOFF) | (abs(0.0 - v) <= _ROUNDOFF) | (abs(0.0 - w) <= _ROUNDOFF)
            inside = (u / aa) * (u / aa) + (v / bb) * (v / bb) + (w / cc) * (w / cc) < 1.0
            t[i] = 0.0 if (sp or inside) else amax * math.sqrt(u * u + v * v + w * w)
    special = nspecial > 0
    nact = 0
    for _ in range(_NEWTON_IT):
        nact = 0
        for i in range(n):
            aui, bvi, cwi = au[i], bv[i], cw[i]
            ti = t[i]
            P, Q, R = ti + a2, ti + b2, ti + c2
            P2, Q2, R2 = P * P, Q * Q, R * R
            f = P2 * Q2 * R2 - aui * Q2 * R2 - bvi * P2 * R2 - cwi * P2 * Q2
            PQ, PR, QR = P * Q, P * R, Q * R
            PQR = P * Q * R
            fp = 2.0 * (PQR * (QR + PR + PQ) - aui * QR * (Q + R) - bvi * PR * (P + R) - cwi * PQ * (P + Q))
            ok = abs(f) < _NEWTON_TOL
            ai = act[i]
            go = ai & (not ok)
            t[i] = ti - f / fp if go else ti
            act[i] = go
            nact += go
        if nact == 0:
            break
    for i in range(n):
        ti = t[i]
        cx[i] = a2 * su[i] / (ti + a2)
        cy[i] = b2 * sv[i] / (ti + b2)
        cz[i] = c2 * sw[i] / (ti + c2)
    if nact == 0 and not special:
        # every sample converged: directions (vectorized), then their sum in order
        for i in range(n):
            dx = cx[i] - su[i]
            dy = cy[i] - sv[i]
            dz = cz[i] - sw[i]
            mag = math.sqrt(dx * dx + dy * dy + dz * dz)
            inv = 1.0 / mag if mag >= _EPS else 0.0
            ok = mag >= _EPS
            cx[i] = dx * inv if ok else 0.0
            cy[i] = dy * inv if ok else 0.0
            cz[i] = dz * inv if ok else 0.0
        s0, s1, s2 = cx[0], cy[0], cz[0]
        for i in range(1, n):
            s0 = s0 + cx[i]
            s1 = s1 + cy[i]
            s2 = s2 + cz[i]
        return _uz((s0, s1, s2))
    # a sample whose iteration did not converge (still active) keeps the previous sample's point;
    # samples near a coordinate plane: the planar special case
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    have_last = False
    last = (0.0, 0.0, 0.0)
    for i in range(n):
        smp = (su[i], sv[i], sw[i])
        if special and (abs(0.0 - su[i]) <= _ROUNDOFF or abs(0.0 - sv[i]) <= _ROUNDOFF
                        or abs(0.0 - sw[i]) <= _ROUNDOFF):
            cp, ok = closest_on_ellipsoid(a, dims, smp, -1, nan3())
        else:
            cp = (cx[i], cy[i], cz[i])
            ok = act[i] == 0
        if ok:
            last = cp
            have_last = True
        else:
            if not have_last:
                last, _ = closest_on_ellipsoid(a, dims, start_pt, 0, nan3())
                have_last = True
            cp = last
        v = _uz(sub(cp, smp))
        if i == 0:
            s0, s1, s2 = v
        else:
            s0 = s0 + v[0]
            s1 = s1 + v[1]
            s2 = s2 + v[2]
    return _uz((s0, s1, s2))


# ---------------------------------------------------------------------------
# one segment
# ---------------------------------------------------------------------------
@njit(**_KW)
def workspace():
    """Scratch memory of :func:`ellipsoid_one` (allocate once, reuse for many segments): one block for
    the tangent points and one, C-contiguous per row so that the fan vectorizes, for the fan."""
    return ((np.zeros((7, 4)), np.zeros((3, 4, 4)), np.zeros((4, 8))), np.zeros((11, _N_FAN - 2)),
            np.zeros(_N_FAN - 2, dtype=np.uint8))


@njit(**_KW)
def ellipsoid_code(P1, P2, dims):
    """The code the ellipsoid returns for a segment, without wrapping it (INSIDE, NO_WRAP or MANDATORY)."""
    factor = 3.0 / (dims[0] + dims[1] + dims[2])
    a = (dims[0] * factor, dims[1] * factor, dims[2] * factor)
    p1 = scale(factor, P1)
    p2 = scale(factor, P2)
    q1 = _div(p1, a)
    q2 = _div(p2, a)
    p1e = -1.0 + q1[0] * q1[0] + q1[1] * q1[1] + q1[2] * q1[2]
    p2e = -1.0 + q2[0] * q2[0] + q2[1] * q2[1] + q2[2] * q2[2]
    if (p1e < -_SURFACE_TOL) or (p2e < -_SURFACE_TOL):
        return INSIDE_RADIUS
    p1p2 = sub(p1, p2)
    ppm = _dot(_uz(p1), _uz(p2)) - 1.0
    if abs(ppm) < 0.0001:
        return NO_WRAP
    f1 = _div(p1p2, a)
    f2 = _div(p2, a)
    aa = _dot(f1, f1)
    bb = 2.0 * _dot(f1, f2)
    cc = _dot(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    if disc < 0.0:
        return NO_WRAP
    sq = math.sqrt(disc)
    l1 = (-bb + sq) / (2.0 * aa)
    l2 = (-bb - sq) / (2.0 * aa)
    if (0.0 < l1) and (l1 < 1.0) and (0.0 < l2) and (l2 < 1.0):
        return MANDATORY_WRAP
    return NO_WRAP


@njit(**_KW0)
def ellipsoid_one(P1, P2, dims, ax, sg, meth, prev_c1, out, pts, wk):
    """Wrap one segment (``WrapEllipsoid._wrap`` for one element).

    Returns (status, raw status, r1, r2, length) in metres; ``out`` (16,) receives
    the details: c1 (3), sv (3), plane (4), far side, n_points, closest-point
    failure, tangent convergence (2).  ``pts`` as in :func:`polyline`; ``wk``: the
    :func:`workspace`.
    """
    for i in range(3):
        out[i] = prev_c1[i]
        out[3 + i] = NAN
    for i in range(4):
        out[6 + i] = NAN
    out[10] = 0.0
    out[11] = 0.0
    out[12] = 0.0
    out[13] = 1.0
    out[14] = 1.0
    factor = 3.0 / (dims[0] + dims[1] + dims[2])
    a = (dims[0] * factor, dims[1] * factor, dims[2] * factor)
    p1 = scale(factor, P1)
    p2 = scale(factor, P2)
    q1 = _div(p1, a)
    q2 = _div(p2, a)
    p1e = -1.0 + q1[0] * q1[0] + q1[1] * q1[1] + q1[2] * q1[2]
    p2e = -1.0 + q2[0] * q2[0] + q2[1] * q2[1] + q2[2] * q2[2]
    if (p1e < -_SURFACE_TOL) or (p2e < -_SURFACE_TOL):
        return INSIDE_RADIUS, INSIDE_RADIUS, nan3(), nan3(), 0.0
    p1p2 = sub(p1, p2)
    ppm = _dot(_uz(p1), _uz(p2)) - 1.0
    if abs(ppm) < 0.0001:
        return NO_WRAP, NO_WRAP, nan3(), nan3(), 0.0
    f1 = _div(p1p2, a)
    f2 = _div(p2, a)
    aa = _dot(f1, f1)
    bb = 2.0 * _dot(f1, f2)
    cc = _dot(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    if disc < 0.0:
        return NO_WRAP, NO_WRAP, nan3(), nan3(), 0.0
    sq = math.sqrt(disc)
    l1 = (-bb + sq) / (2.0 * aa)
    l2 = (-bb - sq) / (2.0 * aa)
    if not ((0.0 < l1) and (l1 < 1.0) and (0.0 < l2) and (l2 < 1.0)):
        return NO_WRAP, NO_WRAP, nan3(), nan3(), 0.0
    r1 = add(p2, scale(l1, p1p2))
    r2 = add(p2, scale(l2, p1p2))
    c1 = prev_c1
    sv = nan3()
    failed = False

    # ---- cutting plane: the surface point c1 ----
    r1r2 = sub(r2, r1)
    uu = _uz(p1p2)
    mu = (abs(uu[0]), abs(uu[1]), abs(uu[2]))
    t = ((0.0 - r1[0]) / r1r2[0], (0.0 - r1[1]) / r1r2[1], (0.0 - r1[2]) / r1r2[2])
    tsv0 = add(r1, scale(t[0], r1r2))
    tsv1 = add(r1, scale(t[1], r1r2))
    tsv2 = add(r1, scale(t[2], r1r2))
    # np.argmax: first maximum (or the first NaN)
    best = 0
    bv = mu[0]
    if bv == bv:
        if mu[1] != mu[1]:
            best = 1
        else:
            if mu[1] > bv:
                best = 1
                bv = mu[1]
            if mu[2] != mu[2] or mu[2] > bv:
                best = 2
    mub = mu[best]
    tb = t[best]
    tsvb = tsv0 if best == 0 else (tsv1 if best == 1 else tsv2)
    # the closest point in the plane normal to the best axis (those in the other planes are only
    # needed where an iteration fails, below)
    tcb, _ = closest_on_ellipsoid(a, dims, tsvb, best, nan3())
    fan_weight = -np.inf
    if meth == METHOD_HYBRID or meth == METHOD_AXIAL:
        if meth == METHOD_HYBRID:
            s = 1.0
            if tb > _SV_HI:
                s = (1.0 - tb) / _SV_BOUNDARY_BLEND
            if tb < _SV_BOUNDARY_BLEND:
                s = tb / _SV_BOUNDARY_BLEND
            if (tb < 0.0) or (tb > 1.0):
                s = 0.0
            if (mub > _MU_BLEND_MIN) and (s < 1.0):
                mub = _MU_BLEND_MIN + s * (mub - _MU_BLEND_MIN)
        frans = True if meth == METHOD_AXIAL else mub > _MU_BLEND_MIN
        if frans:
            c1 = tcb
            sv = tsvb
        if meth == METHOD_HYBRID and mub < _MU_BLEND_MAX:
            mid = add(r1, scale(0.5, r1r2))
            vsum = fan_direction(a, dims, r1, r1r2, tsv0, wk[1], wk[2])
            tcf = add(mid, vsum)
            if mub <= _MU_BLEND_MIN:
                c1, okg = closest_on_ellipsoid(a, dims, tcf, -1, c1)
                failed = failed or not okg
                sv = mid
                fan_weight = 1.0
            else:
                tt = (mub - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN)
                omt = 1.0 - tt
                tc1_1, ok1 = closest_on_ellipsoid(a, dims, tcf, -1, nan3())
                if not ok1:  # OpenSim leaves the point untouched: the closest point in the y = 0 plane
                    tc1_1, _ = closest_on_ellipsoid(a, dims, tsv1, 1, nan3())
                tcx = add(scale(tt, c1), scale(omt, tc1_1))
                sv = add(scale(tt, sv), scale(omt, mid))
                c1, okg = closest_on_ellipsoid(a, dims, tcx, -1, c1)
                failed = failed or not okg
                fan_weight = omt
    else:  # midpoint
        sv = add(r1, scale(0.5, sub(r2, r1)))
        c1, okg = closest_on_ellipsoid(a, dims, sv, -1, c1)
        failed = failed or not okg

    use_c1 = True if meth != METHOD_AXIAL else ((tb > 0.0) and (tb < 1.0))
    start1 = c1 if use_c1 else r1
    start2 = c1 if use_c1 else r2

    # ---- quadrant: bring c1 to the active side ----
    if sg != 0:
        dist = c1[ax] - 0.0
        if (1 if dist >= 0.0 else -1) != sg:
            orig = c1[ax]
            c1 = _with(c1, ax, -orig)
            start1 = c1
            start2 = c1
            fw = fan_weight if (fan_weight != fan_weight or fan_weight <= 1.0) else 1.0  # np.minimum
            if fw > 0.0:
                cf = c1[ax]
                bis = (orig + cf) / 2.0
                c1 = _with(c1, ax, cf + fw * (bis - cf))
                c1, _ = closest_on_ellipsoid(a, dims, c1, -1, c1)

    # ---- the plane through p1, p2, c1; tangent points ----
    vs = _uz(cross(p1p2, sub(p1, c1)))
    vs4 = -_dot(vs, c1)
    r1, conv1 = tangent_point(p1e, start1, p1, vs, vs4, a, wk[0])
    r2, conv2 = tangent_point(p2e, start2, p2, vs, vs4, a, wk[0])

    # ---- polyline, with the wrong-way check for a constrained quadrant ----
    fside = False
    npts, length, w1, w2 = polyline(r1, r2, a, vs, vs4, factor, False, pts)
    if sg != 0 and npts > 2:
        d1 = _dot(_uz(sub(p1, r1)), _uz(sub(w1, r1)))
        d2 = _dot(_uz(sub(p2, r2)), _uz(sub(w2, r2)))
        if (d1 > 0.0) or (d2 > 0.0):
            fside = True
            npts, length, w1, w2 = polyline(r1, r2, a, vs, vs4, factor, True, pts)

    for i in range(3):
        out[i] = c1[i]
        out[3 + i] = sv[i]
        out[6 + i] = vs[i]
    out[9] = vs4
    out[10] = 1.0 if fside else 0.0
    out[11] = float(npts)
    out[12] = 1.0 if failed else 0.0
    out[13] = 1.0 if conv1 else 0.0
    out[14] = 1.0 if conv2 else 0.0
    if npts > 0:
        return (MANDATORY_WRAP, MANDATORY_WRAP, (r1[0] / factor, r1[1] / factor, r1[2] / factor),
                (r2[0] / factor, r2[1] / factor, r2[2] / factor), length / factor)
    out[11] = 0.0
    if pts.shape[0] > 0:
        for k in range(2):
            for i in range(3):
                pts[k, i] = NAN
    return NO_WRAP, MANDATORY_WRAP, nan3(), nan3(), 0.0


@njit(**_KW)
def ellipsoid_batch(p1, p2, dims, ax, sg, meth, prev_c1, keep_points):
    n = p1.shape[0]
    status = np.zeros(n, dtype=np.int64)
    raw = np.zeros(n, dtype=np.int64)
    r1 = np.full((n, 3), NAN)
    r2 = np.full((n, 3), NAN)
    length = np.zeros(n)
    det = np.empty((n, 16))
    pts = np.full((n if keep_points else 0, _MAX_SEGS + 1, 3), NAN)
    scratch = np.empty((0, 3))
    wk = workspace()
    for i in range(n):
        buf = pts[i] if keep_points else scratch
        st, rw, a, b, ln = ellipsoid_one((p1[i, 0], p1[i, 1], p1[i, 2]), (p2[i, 0], p2[i, 1], p2[i, 2]), dims,
                                         ax, sg, meth, (prev_c1[i, 0], prev_c1[i, 1], prev_c1[i, 2]), det[i], buf, wk)
        status[i] = st
        raw[i] = rw
        length[i] = ln
        for k in range(3):
            r1[i, k] = a[k]
            r2[i, k] = b[k]
    return status, raw, r1, r2, length, det, pts
