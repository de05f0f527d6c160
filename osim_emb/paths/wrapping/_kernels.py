"""Compiled (numba) scalar kernels of WrapSphere, WrapCylinder and WrapTorus.

The one implementation of these algorithms (described in :mod:`.sphere`,
:mod:`.cylinder` and :mod:`.torus`, which hold the parameters and call these
kernels for a batch).  The elementary functions (acos, asin, atan2) are the C
library's, as OpenSim's.

Vectors are tuples of three floats.  The batch entry points (``*_batch``) loop
over segments and are what :func:`WrapSphere.wrap_segment` & co. call.
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit

_KW = dict(cache=True, error_model="numpy")

EPS = float(np.finfo(float).eps)
ROUNDOFF = 2e-13
LINE_EPS = 1e-5
NAN = math.nan
TWO_PI = 2.0 * np.pi

NO_WRAP, INSIDE_RADIUS, WRAPPED, MANDATORY_WRAP = 0, 1, 2, 3

# cylinder
CYL_MAX_IT = 100
CYL_THRESHOLD = 0.1 * (np.pi / 180.0)
CYL_SEG = 0.002

# torus (lmdif)
TOR_CYL_LENGTH = 10000.0
_FTOL = 1e-4
_XTOL = 1e-4
_MAXFEV = 500
_FACTOR = 0.2
_FD_STEP = 1e-5
_MACHEP = 1.2e-16
_DWARF = 1.0e-38


# ---------------------------------------------------------------------------
# 3-vector helpers (x, then y, then z: the order of SimTK's Vec3 products)
# ---------------------------------------------------------------------------
@njit(**_KW)
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(**_KW)
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(**_KW)
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(**_KW)
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(**_KW)
def scale(s, a):
    return (s * a[0], s * a[1], s * a[2])


@njit(**_KW)
def norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(**_KW)
def nz(a):
    """normalize_or_zero: (a * (1/|a|), |a|); the zero vector where |a| < eps (or NaN)."""
    m = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if m >= EPS:
        inv = 1.0 / m
        return (a[0] * inv, a[1] * inv, a[2] * inv), m
    return (0.0, 0.0, 0.0), m


@njit(**_KW)
def unit(a):
    m = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    return (a[0] / m, a[1] / m, a[2] / m)


@njit(**_KW)
def dsign(x):
    return 1 if x >= 0.0 else -1


@njit(**_KW)
def sel3(c, a, b):
    return a if c else b


@njit(**_KW)
def nan3():
    return (NAN, NAN, NAN)


@njit(**_KW)
def closest_point_on_line(pt, line_pt, line):
    v1, mag = nz(sub(pt, line_pt))
    v2, mag2 = nz(line)
    t = dot(v1, v2) * mag
    return add(line_pt, scale(t, v2)), t / mag2


@njit(**_KW)
def distance_sq_point_to_line(point, line_pt, line):
    d = sub(line_pt, point)
    n = unit(line)
    dd = dot(d, n)
    e = (d[0] - dd * n[0], d[1] - dd * n[1], d[2] - dd * n[2])
    return dot(e, e)


@njit(**_KW)
def det_rows(a, b, c):
    return (a[0] * (b[1] * c[2] - b[2] * c[1])
            - a[1] * (b[0] * c[2] - b[2] * c[0])
            + a[2] * (b[0] * c[1] - b[1] * c[0]))


@njit(**_KW)
def intersect_lines(p1, p2, p3, p4):
    vec1, mag1 = nz(sub(p2, p1))
    vec2, mag2 = nz(sub(p4, p3))
    cp = cross(vec1, vec2)
    denom = dot(cp, cp)
    d = NAN if abs(denom) <= ROUNDOFF else denom
    row0 = sub(p3, p1)
    t = det_rows(row0, vec1, cp) / d
    q2 = add(p3, scale(t, vec2))
    s = det_rows(row0, vec2, cp) / d
    q1 = add(p1, scale(s, vec1))
    return q1, s / mag1, q2, t / mag2


@njit(**_KW)
def intersect_segment_plane(pt1, pt2, normal, d):
    vec = sub(pt2, pt1)
    dp = dot(vec, normal)
    ok = not (abs(dp) < LINE_EPS)
    t = (-d - normal[0] * pt1[0] - normal[1] * pt1[1] - normal[2] * pt1[2]) / dp
    if t < -LINE_EPS or t > 1.0 + LINE_EPS:
        ok = False
    return ok, add(pt1, scale(t, vec))


@njit(**_KW)
def mat_vec_einsum(m, v):
    """einsum('ij,j->i') as numpy computes it for contiguous operands: (m0 v0 + m2 v2) + m1 v1."""
    return ((m[0][0] * v[0] + m[0][2] * v[2]) + m[0][1] * v[1],
            (m[1][0] * v[0] + m[1][2] * v[2]) + m[1][1] * v[1],
            (m[2][0] * v[0] + m[2][2] * v[2]) + m[2][1] * v[1])


@njit(**_KW)
def mat_t_vec(m, v):
    """einsum('ji,j->i'): (m0i v0 + m1i v1) + m2i v2."""
    return ((m[0][0] * v[0] + m[1][0] * v[1]) + m[2][0] * v[2],
            (m[0][1] * v[0] + m[1][1] * v[1]) + m[2][1] * v[2],
            (m[0][2] * v[0] + m[1][2] * v[1]) + m[2][2] * v[2])


# ---------------------------------------------------------------------------
# WrapSphere
# ---------------------------------------------------------------------------
@njit(**_KW)
def _sphere_tangent_pair(p, n, radius):
    y, _ = nz((-p[0], -p[1], -p[2]))
    z = cross(n, y)
    pm = norm(p)
    ang = math.asin(radius / pm)
    dist = pm * math.cos(ang)
    c = math.cos(ang)
    s = math.sin(ang)
    ra = (p[0] + dist * (c * y[0] - s * z[0]), p[1] + dist * (c * y[1] - s * z[1]),
          p[2] + dist * (c * y[2] - s * z[2]))
    rb = (p[0] + dist * (c * y[0] + s * z[0]), p[1] + dist * (c * y[1] + s * z[1]),
          p[2] + dist * (c * y[2] + s * z[2]))
    return ra, rb


@njit(**_KW)
def sphere_one(p1, p2, R, ax, sg):
    """One segment: (status, raw status, r1, r2, length)."""
    if norm(p1) < R or norm(p2) < R:
        return INSIDE_RADIUS, INSIDE_RADIUS, nan3(), nan3(), 0.0
    ri = sub(p1, p2)
    a = dot(ri, ri)
    b = 2.0 * dot(p2, ri)
    c = dot(p2, p2) - R * R
    disc = b * b - 4.0 * a * c
    sq = math.sqrt(disc)
    l1 = (-b + sq) / (2.0 * a)
    l2 = (-b - sq) / (2.0 * a)
    if disc < 0.0 or not ((0.0 < l1) and (l1 < 1.0) and (0.0 < l2) and (l2 < 1.0)) or l1 < l2:
        return NO_WRAP, NO_WRAP, nan3(), nan3(), 0.0
    code = WRAPPED
    keep = True
    far = False
    u12, _ = nz(sub(p1, p2))
    np2, _ = nz(p2)
    hp2 = cross(u12, np2)
    degenerate = norm(hp2) < 1e-5
    nrm, _ = nz(hp2)
    r1a, r1b = _sphere_tangent_pair(p1, nrm, R)
    r2a, r2b = _sphere_tangent_pair(p2, nrm, R)
    e1a, _ = nz(r1a)
    e1b, _ = nz(r1b)
    e2a, _ = nz(r2a)
    e2b, _ = nz(r2b)
    j1, j2, j3, j4 = dot(e1a, e2a), dot(e1a, e2b), dot(e1b, e2a), dot(e1b, e2b)
    c1 = (j1 > j2) and (j1 > j3) and (j1 > j4)
    c2 = (not c1) and (j2 > j3) and (j2 > j4)
    c3 = (not c1) and (not c2) and (j3 > j4)
    R1 = sel3(c1 or c2, r1a, r1b)
    R2 = sel3(c1 or c3, r2a, r2b)
    if sg != 0:
        s1, s2 = dsign(p1[ax]), dsign(p2[ax])
        either_on = (s1 == sg) or (s2 == sg)
        mm, t = closest_point_on_line((0.0, 0.0, 0.0), p1, u12)
        tt = -t
        mand = either_on and (dot(mm, mm) < R * R) and (tt > 0.0) and (tt < 1.0)
        opt = either_on and (not mand) and (s1 != s2) and (dsign(mm[ax]) != sg)
        if mand:
            code = MANDATORY_WRAP
        if either_on and (not mand) and (not opt):
            keep = False
        cons = (s1 != sg) or (s2 != sg)
        sm, _ = nz((-p1[0] - p2[0], -p1[1] - p2[1], -p1[2] - p2[2]))
        pick1a = dot(e1a, sm) > dot(e1b, sm)
        pick2a = dot(e2a, sm) > dot(e2b, sm)
        q1 = sel3(pick1a, r1a, r1b)
        q2 = sel3(pick2a, r2a, r2b)
        o1 = sel3(pick1a, r1b, r1a)
        o2 = sel3(pick2a, r2b, r2a)
        sm2, _ = nz(add(sub(q1, p1), sub(q2, p2)))
        if sm2[ax] * sg < 0.0:
            q1, q2 = o1, o2
        smf = add(sub(q1, p1), sub(q2, p2))
        fs = dot(add(q1, q2), smf) < 0.0
        if cons:
            R1 = q1
            R2 = q2
            far = fs
    if degenerate:
        code = WRAPPED
        keep = True
        far = False
        R1 = nan3()
        R2 = nan3()
    n1, _ = nz(R1)
    n2, _ = nz(R2)
    ang = math.acos(dot(n1, n2))
    if far:
        ang = -(TWO_PI - ang)
    L = R * ang
    if not keep:
        return NO_WRAP, NO_WRAP, nan3(), nan3(), 0.0
    if degenerate:
        return NO_WRAP, code, nan3(), nan3(), 0.0
    return code, code, R1, R2, L


@njit(**_KW)
def sphere_batch(p1, p2, R, ax, sg):
    n = p1.shape[0]
    status = np.zeros(n, dtype=np.int64)
    raw = np.zeros(n, dtype=np.int64)
    r1 = np.full((n, 3), NAN)
    r2 = np.full((n, 3), NAN)
    length = np.zeros(n)
    for i in range(n):
        st, rw, a, b, ln = sphere_one((p1[i, 0], p1[i, 1], p1[i, 2]), (p2[i, 0], p2[i, 1], p2[i, 2]), R, ax, sg)
        status[i] = st
        raw[i] = rw
        length[i] = ln
        for k in range(3):
            r1[i, k] = a[k]
            r2[i, k] = b[k]
    return status, raw, r1, r2, length


# ---------------------------------------------------------------------------
# WrapCylinder
# ---------------------------------------------------------------------------
_P0 = (0.0, 0.0, -1.0)
_DN = (0.0, 0.0, 1.0)


@njit(**_KW)
def _cyl_tangent_candidates(p, paxis, radius):
    vv, pdist = nz(sub(p, paxis))
    sin_theta = radius / pdist
    d = radius * sin_theta
    pp = add(paxis, scale(d, vv))
    d2 = math.sqrt(radius * radius - d * d)
    uu = cross(_DN, vv)
    return add(pp, scale(d2, uu)), sub(pp, scale(d2, uu)), pdist


@njit(**_KW)
def _cyl_spiral(r1, r2, radius, far):
    """The helix r1 -> r2 around the axis (long way if ``far``): (theta, axial, length)."""
    r1a, _ = closest_point_on_line(r1, _P0, _DN)
    r2a, _ = closest_point_on_line(r2, _P0, _DN)
    axial = dot(sub(r2a, r1a), _DN)
    uu = sub(r1, r1a)
    vv = sub(r2, r2a)
    theta = math.atan2(dot(cross(uu, vv), _DN), dot(uu, vv))
    if far:
        theta = TWO_PI - theta
    x = radius * theta
    return theta, axial, math.sqrt(x * x + axial * axial)


@njit(**_KW)
def _cyl_spiral_z(x1, y1, z1, x2, y2, z2, radius, far):
    """The helix from the tangent points given by coordinates: (theta, axial, length)."""
    w1 = z1 + 1.0
    m1 = math.sqrt(x1 * x1 + y1 * y1 + w1 * w1)
    a1 = -1.0 + ((w1 * (1.0 / m1)) if m1 >= EPS else 0.0) * m1
    w2 = z2 + 1.0
    m2 = math.sqrt(x2 * x2 + y2 * y2 + w2 * w2)
    a2 = -1.0 + ((w2 * (1.0 / m2)) if m2 >= EPS else 0.0) * m2
    axial = a2 - a1
    theta = math.atan2(x1 * y2 - y1 * x2, x1 * x2 + y1 * y2 + (z1 - a1) * (z2 - a2))
    if far:
        theta = TWO_PI - theta
    x = radius * theta
    return theta, axial, math.sqrt(x * x + axial * axial)


@njit(**_KW)
def _cyl_adjust(px, py, pz, X, Y, Z, wx, wy, wz):
    """One tangent-point move of the adjustment loop along the axis: (new Z, adjusted)."""
    dx, dy, dz = X - px, Y - py, Z - pz
    m = math.sqrt(dx * dx + dy * dy + dz * dz)
    okm = m >= EPS
    pr_z = dz * (1.0 / m) if okm else 0.0
    ex, ey, ez = wx - X, wy - Y, wz - Z
    mw = math.sqrt(ex * ex + ey * ey + ez * ez)
    rw_z = ez * (1.0 / mw) if mw >= EPS else 0.0
    # |acos x - acos y| >= |x - y| (|acos'| >= 1): a clear difference needs no acos (1e-12 covers the
    # rounding of acos); otherwise the test as OpenSim makes it
    clear = abs(pr_z) <= 1.0 and abs(rw_z) <= 1.0 and abs(pr_z - rw_z) > CYL_THRESHOLD + 1e-12
    if not (clear or abs(math.acos(pr_z) - math.acos(rw_z)) > CYL_THRESHOLD):
        return Z, False
    az = Z + ((-dz) * (1.0 / m) if okm else 0.0) * m
    bz = Z + rw_z * mw
    fx, fy, fz = wx - px, wy - py, wz - pz
    mf = math.sqrt(fx * fx + fy * fy + fz * fz)
    inv = 1.0 / mf if mf >= EPS else 0.0
    a, b, c = fx * inv, fy * inv, fz * inv
    dd = bz - az
    md = abs(dd)
    v = dd * (1.0 / md) if md >= EPS else 0.0
    cpx, cpy = b * v, -(a * v)
    denom = cpx * cpx + cpy * cpy
    r0x, r0y, r0z = X - px, Y - py, az - pz
    det = (r0x * (c * (a * v)) - r0y * (-(c * (b * v)))) + r0z * (a * cpy - b * cpx)
    tt = NAN if abs(denom) <= ROUNDOFF else det / denom
    return Z + 1.5 * ((az + tt * v) - Z), True


@njit(**_KW)
def cyl_loop(p1, p2, r1, r2, radius, far):
    """OpenSim's tangent-adjustment loop (at most 100 moves): (r1, r2, length).

    Exact cycles of period 1 or 2 jump to the state after the last move (the next
    state is a function of (z1, z2) alone).
    """
    x1, y1, z1 = r1
    x2, y2, z2 = r2
    theta, axial, length = _cyl_spiral_z(x1, y1, z1, x2, y2, z2, radius, far)
    sense = -1.0 if far else 1.0
    it = 0
    a1 = NAN  # state before the last move
    a2 = NAN
    b1 = NAN  # state before the move before
    b2 = NAN
    while it < CYL_MAX_IT:
        nseg = np.floor(length / CYL_SEG)
        if not nseg >= 2.0:
            break
        t = 1.0 / nseg
        ang = sense * t * theta
        c, s = math.cos(ang), math.sin(ang)
        nz1, d1 = _cyl_adjust(p1[0], p1[1], p1[2], x1, y1, z1, c * x1 - s * y1, s * x1 + c * y1, z1 + t * axial)
        u = 1.0 - t
        ang = sense * u * theta
        c, s = math.cos(ang), math.sin(ang)
        nz2, d2 = _cyl_adjust(p2[0], p2[1], p2[2], x2, y2, z2, c * x1 - s * y1, s * x1 + c * y1, nz1 + u * axial)
        if not (d1 or d2):
            break
        it += 1
        b1, b2 = a1, a2
        a1, a2 = z1, z2
        z1, z2 = nz1, nz2
        theta, axial, length = _cyl_spiral_z(x1, y1, z1, x2, y2, z2, radius, far)
        if it < CYL_MAX_IT and np.floor(length / CYL_SEG) >= 2.0:
            if z1 == a1 and z2 == a2:
                break
            if it >= 2 and z1 == b1 and z2 == b2:
                if (CYL_MAX_IT - it) % 2 == 1:
                    z1, z2 = a1, a2
                    theta, axial, length = _cyl_spiral_z(x1, y1, z1, x2, y2, z2, radius, far)
                break
    return (x1, y1, z1), (x2, y2, z2), length


@njit(**_KW)
def cyl_stage(p1, p2, radius, length, ax, sg):
    """Phase one of the cylinder wrap: (status, R1, R2, long_wrap, theta, length0).

    R1, R2 are the tangent points before the adjustment loop, length0 the helix
    length between them; NaN / 0 where the status is not a wrap.
    """
    R = radius
    rsq = R * R
    inside = (distance_sq_point_to_line(p1, _P0, _DN) < rsq) or (distance_sq_point_to_line(p2, _P0, _DN) < rsq)
    status = INSIDE_RADIUS if inside else NO_WRAP
    half = 0.5 * length
    near12, t12, near00, _ = intersect_lines(p1, p2, (0.0, 0.0, -half), (0.0, 0.0, half))
    d12 = sub(near12, near00)
    hit = (dot(d12, d12) < rsq) and (t12 > 0.0) and (t12 < 1.0)
    code = WRAPPED
    go = not inside
    constrained = sg != 0
    if not constrained:
        if hit:
            code = MANDATORY_WRAP
        go = go and hit
    else:
        s1, s2 = dsign(p1[ax]), dsign(p2[ax])
        either_on = (s1 == sg) or (s2 == sg)
        mand = either_on and hit
        opt = either_on and (not hit) and (s1 != s2) and (dsign(near12[ax]) != sg)
        if mand:
            code = MANDATORY_WRAP
        if either_on and (not mand) and (not opt):
            go = False
    if not go:
        return status, nan3(), nan3(), False, NAN, 0.0
    p11, _ = closest_point_on_line(p1, _P0, _DN)
    p22, _ = closest_point_on_line(p2, _P0, _DN)
    r1a, r1b, d1 = _cyl_tangent_candidates(p1, p11, R)
    r2a, r2b, d2 = _cyl_tangent_candidates(p2, p22, R)
    far_side = False
    long_wrap = False
    if constrained:
        m1a, m1b, m2a, m2b = sub(r1a, p11), sub(r1b, p11), sub(r2a, p22), sub(r2b, p22)
        alpha = math.acos(dot(m1a, m2b) / (norm(m1a) * norm(m2b)))
        beta = math.acos(dot(m1b, m2a) / (norm(m1b) * norm(m2a)))
        A1 = dsign(r1a[ax]) == sg
        B1 = dsign(r1b[ax]) == sg
        A2 = dsign(r2a[ax]) == sg
        B2 = dsign(r2b[ax]) == sg
        gt = alpha > beta
        none = (not A1) and (not B1) and (not A2) and (not B2)
        use_ab = ((A1 and B1 and not A2) or (A1 and not B1) or ((not A1) and (not B1) and (not A2) and B2)
                  or (none and gt))
        if none:
            far_side = True
        elif use_ab:
            far_side = gt
        else:
            far_side = not gt
        R1 = sel3(use_ab, r1a, r1b)
        R2 = sel3(use_ab, r2b, r2a)
        sum_musc = add(sub(R1, p1), sub(R2, p2))
        sum_r = add(sub(R1, p11), sub(R2, p22))
        long_wrap = dot(sum_r, sum_musc) < 0.0
    else:
        e1a, _ = nz(sub(r1a, p11))
        e1b, _ = nz(sub(r1b, p11))
        e2a, _ = nz(sub(r2a, p22))
        e2b, _ = nz(sub(r2b, p22))
        j1, j2, j3, j4 = dot(e1a, e2a), dot(e1a, e2b), dot(e1b, e2a), dot(e1b, e2b)
        c1 = (j1 > j2) and (j1 > j3) and (j1 > j4)
        c2 = (not c1) and (j2 > j3) and (j2 > j4)
        c3 = (not c1) and (not c2) and (j3 > j4)
        R1 = sel3(c1 or c2, r1a, r1b)
        R2 = sel3(c1 or c3, r2a, r2b)
    # apex, and the slide of r1, r2 along the axis to the plane through P1, P2 and the apex
    t = d1 / (d1 + d2)
    mpt = add(p1, scale(t, sub(p2, p1)))
    axispt, _ = closest_point_on_line(mpt, _P0, _DN)
    l1, _ = nz(sub(p1, axispt))
    l2, _ = nz(sub(p2, axispt))
    pn, _ = nz(unit(cross(l1, l2)))
    vert1, _ = nz(cross(_DN, pn))
    vert2, _ = nz(cross(pn, _DN))
    apex1 = add(axispt, scale(R, vert1))
    apex2 = add(axispt, scale(R, vert2))
    e1 = sub(mpt, apex1)
    e2 = sub(mpt, apex2)
    first = dot(e1, e1) < dot(e2, e2)
    apex = sel3(first != far_side, apex1, apex2)
    uu, _ = nz(sub(p1, apex))
    vv, _ = nz(sub(p2, apex))
    pn = unit(cross(uu, vv))
    d = -p1[0] * pn[0] - p1[1] * pn[1] - p1[2] * pn[2]
    h1, r1p = intersect_segment_plane(sub(R1, scale(10.0, _DN)), add(R1, scale(10.0, _DN)), pn, d)
    h2, r2p = intersect_segment_plane(sub(R2, scale(10.0, _DN)), add(R2, scale(10.0, _DN)), pn, d)
    q1, _ = closest_point_on_line(r1p, p11, p22)
    q2, _ = closest_point_on_line(r2p, p11, p22)
    e = sub(p11, p22)
    ref = dot(e, e)
    e1 = sub(q1, p22)
    e2 = sub(q2, p11)
    if h1 and dot(e1, e1) < ref:
        R1 = r1p
    if h2 and dot(e2, e2) < ref:
        R2 = r2p
    if ((R1[2] < -half) or (R1[2] > half)) and ((R2[2] < -half) or (R2[2] > half)):
        return NO_WRAP, nan3(), nan3(), False, NAN, 0.0
    theta, _, length0 = _cyl_spiral(R1, R2, R, long_wrap)
    return code, R1, R2, long_wrap, theta, length0


@njit(**_KW)
def cyl_needs_loop(length0, single_wrap):
    return (not single_wrap) and np.floor(length0 / CYL_SEG) >= 2.0


@njit(**_KW)
def cylinder_batch(p1, p2, radius, length, ax, sg, single_wrap):
    n = p1.shape[0]
    status = np.zeros(n, dtype=np.int64)
    r1 = np.full((n, 3), NAN)
    r2 = np.full((n, 3), NAN)
    wl = np.zeros(n)
    for i in range(n):
        a = (p1[i, 0], p1[i, 1], p1[i, 2])
        b = (p2[i, 0], p2[i, 1], p2[i, 2])
        st, R1, R2, lw, th, l0 = cyl_stage(a, b, radius, length, ax, sg)
        status[i] = st
        if st == WRAPPED or st == MANDATORY_WRAP:
            if cyl_needs_loop(l0, single_wrap):
                R1, R2, l0 = cyl_loop(a, b, R1, R2, radius, lw)
            wl[i] = l0
            for k in range(3):
                r1[i, k] = R1[k]
                r2[i, k] = R2[k]
    return status, r1, r2, wl


# ---------------------------------------------------------------------------
# WrapTorus: lmdif on the centre circle, then a cylinder
# ---------------------------------------------------------------------------
@njit(**_KW)
def _np_min(a, b):
    """np.minimum (NaN propagates)."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@njit(**_KW)
def _np_max(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@njit(**_KW)
def _circle_coeffs(a, b):
    dx, dy, dz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    mag = math.sqrt(dx * dx + dy * dy + dz * dz)
    nx, ny, nzz = dx / mag, dy / mag, dz / mag
    c2 = 2.0 * (a[0] * nx + a[1] * ny + a[2] * nzz)
    c3 = a[0] * nx + a[1] * ny
    c4 = nx * nx + ny * ny
    c5 = a[0] * a[0] + a[1] * a[1]
    return c2, c3, c4, c5, (nx, ny, nzz)


@njit(**_KW)
def _circle_resid(u, c2, c3, c4, c5, r):
    return c2 + 2.0 * u - 2.0 * r * (2.0 * c4 * u + 2.0 * c3) / math.sqrt(u * u * c4 + 2.0 * c3 * u + c5)


@njit(**_KW)
def _lmpar(r, diag, qtb, delta, par0):
    """MINPACK lmpar for one unknown: (step, parameter)."""
    x = qtb / r
    dxnorm = abs(diag * x)
    fp = dxnorm - delta
    if fp <= 0.1 * delta:
        return x, 0.0
    w = diag * ((diag * x) / dxnorm)
    w = w / r
    temp = abs(w)
    parl = ((fp / delta) / temp) / temp
    gnorm = abs((r * qtb) / diag)
    paru = gnorm / delta
    if paru == 0.0:
        paru = _DWARF / _np_min(delta, 0.1)
    p = par0 if par0 >= parl else parl
    p = p if p <= paru else paru
    if p == 0.0:
        p = gnorm / dxnorm
    par = p
    it = 0
    while True:
        it += 1
        if par == 0.0:
            par = _np_max(_DWARF, 0.001 * paru)
        s = math.sqrt(par) * diag
        small = abs(r) < abs(s)
        cot = r / s
        sin_a = 0.5 / math.sqrt(0.25 + 0.25 * cot * cot)
        cos_a = sin_a * cot
        tan = s / r
        cos_b = 0.5 / math.sqrt(0.25 + 0.25 * tan * tan)
        sin_b = cos_b * tan
        cs = cos_a if small else cos_b
        sn = sin_a if small else sin_b
        rot = s != 0.0
        sdiag = cs * r + sn * s if rot else r
        wa = cs * qtb if rot else qtb
        if sdiag == 0.0:
            wa = 0.0
        x = wa / sdiag
        wa2 = diag * x
        dxn = abs(wa2)
        fp_old = fp
        fp = dxn - delta
        if (abs(fp) <= 0.1 * delta) or ((parl == 0.0) and (fp <= fp_old) and (fp_old < 0.0)) or it == 10:
            break
        w = diag * (wa2 / dxn)
        w = w / sdiag
        temp = abs(w)
        parc = ((fp / delta) / temp) / temp
        if fp > 0.0:
            parl = parl if parl >= par else par
        if fp < 0.0:
            paru = paru if paru <= par else par
        pn = par + parc
        par = parl if parl >= pn else pn
    return x, par


@njit(**_KW)
def lmdif_circle_one(c2, c3, c4, c5, r):
    """OpenSim's lmdif_C (modified MINPACK lmdif) on one unknown started at 0: lmdif, lmpar and qrsolv
    with OpenSim's constants and tests (see :mod:`.torus`)."""
    x = 0.0
    f = _circle_resid(x, c2, c3, c4, c5, r)
    fnorm = abs(f)
    par = 0.0
    it = 1
    nfev = 1
    diag = 0.0
    delta = 0.0
    xnorm = 0.0
    rr = 0.0
    qtf = 0.0
    gnorm = 0.0
    need_jac = True
    while True:
        if need_jac:
            fj = _circle_resid(x + _FD_STEP, c2, c3, c4, c5, r)
            J = (fj - f) / _FD_STEP
            aJ = abs(J)
            if it == 1:
                diag = 1.0 if aJ == 0.0 else aJ
                xn = abs(diag * x)
                xnorm = xn
                dl = _FACTOR * xn
                if abs(dl) <= 1e-4:
                    dl = _FACTOR
                delta = dl
            if J != 0.0:
                rr = -J
                qtf = -f
            else:
                rr = -0.0
                qtf = f
            g = abs((rr * (qtf / fnorm)) / aJ) if (fnorm != 0.0 and aJ != 0.0) else 0.0
            gnorm = g
            diag = diag if diag >= aJ else aJ
            need_jac = False
            if g <= 0.0:
                break
        step, par_i = _lmpar(rr, diag, qtf, delta, par)
        wa1 = -step
        trial = x + wa1
        pnorm = abs(diag * wa1)
        d_i = delta
        if it == 1:
            d_i = _np_min(d_i, pnorm)
        f1 = _circle_resid(trial, c2, c3, c4, c5, r)
        nfev += 1
        fnorm1 = abs(f1)
        fn = fnorm
        if 0.1 * fnorm1 < fn:
            q = fnorm1 / fn
            actred = 1.0 - q * q
        else:
            actred = -1.0
        temp1 = abs(rr * wa1) / fn
        temp2 = (math.sqrt(par_i) * pnorm) / fn
        prered = temp1 * temp1 + (temp2 * temp2) / 0.5
        dirder = -(temp1 * temp1 + temp2 * temp2)
        ratio = actred / prered if prered != 0.0 else 0.0
        low = ratio <= 0.25
        temp = 0.5 if actred >= 0.0 else 0.5 * dirder / (dirder + 0.5 * actred)
        if (0.1 * fnorm1 >= fn) or (temp < 0.1):
            temp = 0.1
        if low:
            d_i = temp * _np_min(d_i, pnorm / 0.1)
            par_i = par_i / temp
        elif (par_i == 0.0) or (ratio >= 0.75):
            d_i = pnorm / 0.5
            par_i = 0.5 * par_i
        delta = d_i
        par = par_i
        succ = ratio >= 1e-4
        if succ:
            x = trial
            xnorm = abs(diag * x)
            fnorm = fnorm1
            f = f1
            it += 1
        xn_i = xnorm
        conv = ((abs(actred) <= _FTOL) and (prered <= _FTOL) and (0.5 * ratio <= 1.0)) or (d_i <= _XTOL * xn_i)
        conv = conv or nfev >= _MAXFEV
        conv = conv or ((abs(actred) <= _MACHEP) and (prered <= _MACHEP) and (0.5 * ratio <= 1.0))
        conv = conv or (d_i <= _MACHEP * xn_i)
        conv = conv or (gnorm <= _MACHEP)
        if conv:
            break
        need_jac = succ
    return x


@njit(**_KW)
def torus_circle_point(radius, p1, p2, ax, sg):
    """``torus.find_circle_point`` for one segment: (found, circle point)."""
    a2_, b2_, c2_, d2_, n12 = _circle_coeffs(p1, p2)
    u1 = lmdif_circle_one(a2_, b2_, c2_, d2_, radius)
    a2_, b2_, c2_, d2_, n21 = _circle_coeffs(p2, p1)
    u2 = lmdif_circle_one(a2_, b2_, c2_, d2_, radius)
    a1 = add(p1, scale(u1, n12))
    a2 = add(p2, scale(u2, n21))
    x, y, z = a1
    d1 = math.sqrt(x * x + y * y + z * z + radius * radius - 2.0 * radius * math.sqrt(x * x + y * y))
    x, y, z = a2
    d2 = math.sqrt(x * x + y * y + z * z + radius * radius - 2.0 * radius * math.sqrt(x * x + y * y))
    better1 = d1 < d2
    found = True
    if sg != 0:
        ok1 = dsign(a1[ax]) == sg
        ok2 = dsign(a2[ax]) == sg
        if not (ok1 and ok2):
            better1 = ok1
        found = ok1 or ok2
    a = sel3(better1, a1, a2)
    mag = math.sqrt(a[0] * a[0] + a[1] * a[1])
    return found, (a[0] * radius / mag, a[1] * radius / mag, 0.0)


@njit(**_KW)
def torus_circle_points(radius, p1, p2, ax, sg):
    """:func:`torus_circle_point` for a batch of segments (N, 3): (found (N,), circle points (N, 3))."""
    n = p1.shape[0]
    found = np.zeros(n, dtype=np.bool_)
    pts = np.full((n, 3), NAN)
    for i in range(n):
        f, c = torus_circle_point(radius, (p1[i, 0], p1[i, 1], p1[i, 2]), (p2[i, 0], p2[i, 1], p2[i, 2]), ax, sg)
        found[i] = f
        pts[i, 0], pts[i, 1], pts[i, 2] = c
    return found, pts


@njit(**_KW)
def circle_line_search(a, b, radius):
    """lmdif's end point on each line from a towards b (N, 3): (u (N,), unit direction (N, 3), residual (N,)).

    The first half of :func:`torus_circle_point` (for tests: the residual is calcCircleResids at u)."""
    n = a.shape[0]
    u = np.empty(n)
    d = np.empty((n, 3))
    res = np.empty(n)
    for i in range(n):
        c2, c3, c4, c5, nn = _circle_coeffs((a[i, 0], a[i, 1], a[i, 2]), (b[i, 0], b[i, 1], b[i, 2]))
        u[i] = lmdif_circle_one(c2, c3, c4, c5, radius)
        d[i, 0], d[i, 1], d[i, 2] = nn
        res[i] = _circle_resid(u[i], c2, c3, c4, c5, radius)
    return u, d, res


@njit(**_KW)
def torus_frame(c):
    """Rows of the inner cylinder's frame in the torus frame, and its offset (c: circle point)."""
    c = (-c[0], -c[1], -c[2])
    cx, _ = nz(c)
    cy = (0.0, 0.0, -1.0)
    cz = cross(cx, cy)
    M = (cx, cy, cz)
    off = mat_vec_einsum(M, c)
    return M, off


@njit(**_KW)
def torus_batch(p1, p2, inner, outer, ax, sg, single_wrap):
    n = p1.shape[0]
    status = np.zeros(n, dtype=np.int64)
    code = np.zeros(n, dtype=np.int64)
    r1 = np.full((n, 3), NAN)
    r2 = np.full((n, 3), NAN)
    wl = np.zeros(n)
    for i in range(n):
        a = (p1[i, 0], p1[i, 1], p1[i, 2])
        b = (p2[i, 0], p2[i, 1], p2[i, 2])
        found, c = torus_circle_point(outer, a, b, ax, sg)
        if not found:
            continue
        code[i] = WRAPPED
        M, off = torus_frame(c)
        q1 = add(mat_vec_einsum(M, a), off)
        q2 = add(mat_vec_einsum(M, b), off)
        st, R1, R2, lw, th, l0 = cyl_stage(q1, q2, inner, TOR_CYL_LENGTH, 0, 1)
        if st == WRAPPED or st == MANDATORY_WRAP:
            status[i] = WRAPPED
            if cyl_needs_loop(l0, single_wrap):
                R1, R2, l0 = cyl_loop(q1, q2, R1, R2, inner, lw)
            x1 = mat_t_vec(M, sub(R1, off))
            x2 = mat_t_vec(M, sub(R2, off))
            wl[i] = l0
            for k in range(3):
                r1[i, k] = x1[k]
                r2[i, k] = x2[k]
        else:
            status[i] = st
    return status, code, r1, r2, wl
