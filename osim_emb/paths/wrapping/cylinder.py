"""WrapCylinder: OpenSim 4.6's cylinder wrapping, vectorized over a batch of segments.

Geometry (wrap frame; cylinder of radius R around the z axis, of length L centred
on z = 0):

1. INSIDE_RADIUS if P1 or P2 is closer than R to the axis.
2. The closest points of the line P1P2 and of the axis are found.  Without a
   quadrant the wrap is MANDATORY_WRAP when they are closer than R and the point on
   P1P2 lies strictly between P1 and P2, else NO_WRAP.  With a quadrant (axis k,
   sign s): when an end point is on the active side the same test gives
   MANDATORY_WRAP; otherwise the wrap is WRAPPED if P1 and P2 are on opposite
   sides of the k = 0 plane and the closest point is on the inactive side, else
   NO_WRAP.  When *neither* end point is on the active side the cylinder always
   wraps (WRAPPED), round the active side -- even if P1P2 is far from it.
3. Preliminary tangent points: in the plane normal to the axis through each end
   point, the two 2-D tangent points.  Without a quadrant the pair with the most
   similar radial directions is taken (short way round); with a quadrant the pair
   is chosen by which candidates lie on the active side, and a "long wrap" (more
   than half the cylinder) is flagged when (r1 - p11 + r2 - p22) . (r1 - P1 + r2 - P2) < 0
   (p11, p22: projections of P1, P2 on the axis).
4. The tangent points are slid along the axis to the plane through P1, P2 and an
   "apex" point on the cylinder (on the axis point closest to the point of P1P2
   that divides it in the ratio of the end points' distances to the axis, offset
   by R within the plane through P1, P2 and that axis point).  This is a heuristic,
   not an exact tangency.  NO_WRAP if both r1 and r2 then lie beyond the
   cylinder's ends (|z| > L/2).
5. The path is a helix from r1 to r2: length sqrt((R theta)^2 + dz^2), theta the
   angle from r1 to r2 about +z (2 pi - theta for a long wrap).
6. When the path has more than one PathWrap (``single_wrap=False``), OpenSim adds
   a tangent-adjustment loop: with the helix cut in n = floor(length / 2 mm) pieces
   (only if n >= 2), r1 is moved along the axis when the angle of P1->r1 to the
   axis differs by more than 0.1 degree from that of r1->(helix point at 1/n); the
   same for r2 with the helix point at 1 - 1/n (computed with the *updated* r1);
   the helix is rebuilt; at most 100 times.  It is reproduced step by step.

So the cylinder wrap is a deterministic approximation of the geodesic; this module
reproduces OpenSim's approximation (to round-off), not the exact geodesic.

Not reproduced: where OpenSim reads uninitialised memory (P1P2 parallel to the
axis, or parallel lines in the tangent adjustment) NaN is returned instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.paths.wrapping import _vec as V
from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, WrapStatus

__all__ = ["WrapCylinder", "cylinder_wrap"]

MAX_ITERATIONS = 100
TANGENCY_THRESHOLD = 0.1 * (np.pi / 180.0)
SEGMENT_LENGTH = 0.002  # OpenSim samples the helix every 2 mm

_P0 = np.array([0.0, 0.0, -1.0])  # a point on the axis, as OpenSim uses it
_DN = np.array([0.0, 0.0, 1.0])


def _tangent_candidates(p, paxis, radius):
    """The two 2-D tangent points from p in the plane normal to the axis through p."""
    vv, pdist = V.normalize_or_zero(p - paxis)
    with np.errstate(divide="ignore", invalid="ignore"):
        sin_theta = radius / pdist
    d = radius * sin_theta
    pp = paxis + d[:, None] * vv
    with np.errstate(invalid="ignore"):
        d2 = np.sqrt(radius * radius - d * d)
    uu = V.cross(np.broadcast_to(_DN, vv.shape), vv)
    return pp + d2[:, None] * uu, pp - d2[:, None] * uu, pdist


def _spiral(r1, r2, radius, far):
    """Helix r1 -> r2 about +z: (theta, axial distance, length)."""
    dn = np.broadcast_to(_DN, r1.shape)
    r1a, _ = V.closest_point_on_line(r1, np.broadcast_to(_P0, r1.shape), dn)
    r2a, _ = V.closest_point_on_line(r2, np.broadcast_to(_P0, r1.shape), dn)
    axial = V.dot(r2a - r1a, dn)
    uu = r1 - r1a
    vv = r2 - r2a
    theta = np.arctan2(V.dot(V.cross(uu, vv), dn), V.dot(uu, vv))
    theta = np.where(far, 2.0 * np.pi - theta, theta)
    x = radius * theta
    return theta, axial, np.sqrt(x * x + axial * axial)


def _adjust_z(P, X, Y, Z, wx, wy, wz):
    """OpenSim's _adjust_tangent_point for r = (X, Y, Z) and helix point w: (new Z, adjusted).

    r moves along the axis when the angles of P->r and r->w to the axis differ by
    more than 0.1 degree: to 1.5 times the way towards the point of the
    axis-parallel line through r that is closest to the line P-w.  (x, y of r never
    change.)
    """
    px, py, pz = P[:, 0], P[:, 1], P[:, 2]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        dx, dy, dz = X - px, Y - py, Z - pz
        m = np.sqrt(dx * dx + dy * dy + dz * dz)
        okm = m >= V.EPS
        pr_z = np.where(okm, dz * (1.0 / m), 0.0)
        ex, ey, ez = wx - X, wy - Y, wz - Z
        mw = np.sqrt(ex * ex + ey * ey + ez * ez)
        okw = mw >= V.EPS
        rw_z = np.where(okw, ez * (1.0 / mw), 0.0)
        adj = np.abs(np.arccos(pr_z) - np.arccos(rw_z)) > TANGENCY_THRESHOLD
        if not adj.any():
            return Z, adj
        # points of the line (r, axis) closest to P and to w
        az = Z + np.where(okm, (-dz) * (1.0 / m), 0.0) * m
        bz = Z + rw_z * mw
        # closest point, on that line (az -> bz), to the line P -> w
        fx, fy, fz = wx - px, wy - py, wz - pz
        mf = np.sqrt(fx * fx + fy * fy + fz * fz)
        inv = np.where(mf >= V.EPS, 1.0 / mf, 0.0)
        a, b, c = fx * inv, fy * inv, fz * inv
        dd = bz - az
        md = np.abs(dd)
        v = np.where(md >= V.EPS, dd * (1.0 / md), 0.0)
        cpx, cpy = b * v, -(a * v)  # (a, b, c) x (0, 0, v)
        denom = cpx * cpx + cpy * cpy
        r0x, r0y, r0z = X - px, Y - py, az - pz
        det = (r0x * (c * (a * v)) - r0y * (-(c * (b * v)))) + r0z * (a * cpy - b * cpx)
        tt = np.where(np.abs(denom) <= V.ROUNDOFF_ERROR, np.nan, det / denom)
        newZ = Z + 1.5 * ((az + tt * v) - Z)
    return np.where(adj, newZ, Z), adj


def _spiral_z(x1, y1, z1, x2, y2, z2, radius, far):
    """``_spiral`` for r1, r2 given by components (same arithmetic): (theta, axial, length)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        w1 = z1 + 1.0
        m1 = np.sqrt(x1 * x1 + y1 * y1 + w1 * w1)
        a1 = -1.0 + np.where(m1 >= V.EPS, w1 * (1.0 / m1), 0.0) * m1
        w2 = z2 + 1.0
        m2 = np.sqrt(x2 * x2 + y2 * y2 + w2 * w2)
        a2 = -1.0 + np.where(m2 >= V.EPS, w2 * (1.0 / m2), 0.0) * m2
    axial = a2 - a1
    theta = np.arctan2(x1 * y2 - y1 * x2, x1 * x2 + y1 * y2 + (z1 - a1) * (z2 - a2))
    theta = np.where(far, 2.0 * np.pi - theta, theta)
    x = radius * theta
    return theta, axial, np.sqrt(x * x + axial * axial)


def _spiral_s(x1, y1, z1, x2, y2, z2, radius, far):
    """Scalar ``_spiral_z``."""
    w1 = z1 + 1.0
    m1 = math.sqrt(x1 * x1 + y1 * y1 + w1 * w1)
    a1 = -1.0 + (w1 * (1.0 / m1) if m1 >= V.EPS else 0.0) * m1
    w2 = z2 + 1.0
    m2 = math.sqrt(x2 * x2 + y2 * y2 + w2 * w2)
    a2 = -1.0 + (w2 * (1.0 / m2) if m2 >= V.EPS else 0.0) * m2
    axial = a2 - a1
    theta = math.atan2(x1 * y2 - y1 * x2, x1 * x2 + y1 * y2 + (z1 - a1) * (z2 - a2))
    if far:
        theta = 2.0 * math.pi - theta
    x = radius * theta
    return theta, axial, math.sqrt(x * x + axial * axial)


def _acos(x):
    return math.acos(x) if -1.0 <= x <= 1.0 else math.nan


def _adjust_s(px, py, pz, X, Y, Z, wx, wy, wz):
    """Scalar ``_adjust_z``."""
    dx, dy, dz = X - px, Y - py, Z - pz
    m = math.sqrt(dx * dx + dy * dy + dz * dz)
    im = 1.0 / m if m >= V.EPS else 0.0
    ex, ey, ez = wx - X, wy - Y, wz - Z
    mw = math.sqrt(ex * ex + ey * ey + ez * ez)
    rw_z = ez * (1.0 / mw) if mw >= V.EPS else 0.0
    if not abs(_acos(dz * im) - _acos(rw_z)) > TANGENCY_THRESHOLD:
        return Z, False
    az = Z + ((-dz) * im) * m
    bz = Z + rw_z * mw
    fx, fy, fz = wx - px, wy - py, wz - pz
    mf = math.sqrt(fx * fx + fy * fy + fz * fz)
    inv = 1.0 / mf if mf >= V.EPS else 0.0
    a, b, c = fx * inv, fy * inv, fz * inv
    dd = bz - az
    md = abs(dd)
    v = dd * (1.0 / md) if md >= V.EPS else 0.0
    cpx, cpy = b * v, -(a * v)
    denom = cpx * cpx + cpy * cpy
    if abs(denom) <= V.ROUNDOFF_ERROR:
        return math.nan, True
    det = (dx * (c * (a * v)) - dy * (-(c * (b * v)))) + (az - pz) * (a * cpy - b * cpx)
    return Z + 1.5 * ((az + (det / denom) * v) - Z), True


def _finish_scalar(P1, P2, x1, y1, z1, x2, y2, z2, radius, far, it, hz1, hz2):
    """Continue the adjustment loop of one element from move ``it`` (history hz1, hz2)."""
    sense = -1.0 if far else 1.0
    p1x, p1y, p1z = (float(v) for v in P1)
    p2x, p2y, p2z = (float(v) for v in P2)
    seen = {(float(hz1[i]), float(hz2[i])): i for i in range(it + 1)}
    hist = [(float(hz1[i]), float(hz2[i])) for i in range(it + 1)]
    theta, axial, length = _spiral_s(x1, y1, z1, x2, y2, z2, radius, far)
    while it < MAX_ITERATIONS:
        nseg = math.floor(length / SEGMENT_LENGTH) if length == length else math.nan
        if not nseg >= 2:
            break
        t = 1.0 / nseg
        ang = sense * t * theta
        c, s = math.cos(ang), math.sin(ang)
        nz1, d1 = _adjust_s(p1x, p1y, p1z, x1, y1, z1, c * x1 - s * y1, s * x1 + c * y1, z1 + t * axial)
        u = 1.0 - t
        ang = sense * u * theta
        c, s = math.cos(ang), math.sin(ang)
        nz2, d2 = _adjust_s(p2x, p2y, p2z, x2, y2, z2, c * x1 - s * y1, s * x1 + c * y1, nz1 + u * axial)
        if not (d1 or d2):
            break
        it += 1
        z1, z2 = nz1, nz2
        theta, axial, length = _spiral_s(x1, y1, z1, x2, y2, z2, radius, far)
        key = (z1, z2)
        if key in seen and length == length:
            s0 = seen[key]
            per = it - s0
            z1, z2 = hist[s0 + (MAX_ITERATIONS - s0) % per]
            theta, axial, length = _spiral_s(x1, y1, z1, x2, y2, z2, radius, far)
            break
        seen[key] = it
        hist.append(key)
    return z1, z2, length


_SCALAR_TAIL = 12  # below this many active elements the loop continues element by element


_MAX_PERIOD = 2  # cycles of the vectorized adjustment loop detected up to this length (scalar tail: any)


def _adjust_loop(P1, P2, r1, r2, radius, far):
    """The tangent-adjustment loop of OpenSim's _make_spiral_path, on the whole batch.

    The helix r1 -> r2 is cut in n = floor(length / 2 mm) pieces; while n >= 2, r1 is
    checked against the helix point at 1/n and r2 against the one at 1 - 1/n
    (computed from the already updated r1), and the helix is rebuilt after any
    move; at most MAX_ITERATIONS moves.  Only the heights z1, z2 change, and the
    next step is a function of (z1, z2) alone: when an element comes back exactly
    to an earlier (z1, z2) it cycles, and its state after MAX_ITERATIONS moves is
    read from the cycle (exact; OpenSim simply keeps looping).
    Returns (r1, r2, length).
    """
    x1, y1, z1 = r1[:, 0].copy(), r1[:, 1].copy(), r1[:, 2].copy()
    x2, y2, z2 = r2[:, 0].copy(), r2[:, 1].copy(), r2[:, 2].copy()
    theta, axial, length = _spiral_z(x1, y1, z1, x2, y2, z2, radius, far)
    sense = np.where(far, -1.0, 1.0)
    with np.errstate(invalid="ignore"):
        nseg = np.floor(length / SEGMENT_LENGTH)
    act = np.flatnonzero(nseg >= 2)
    if act.size == 0:
        return r1, r2, length
    k = x1.size
    hz1 = np.full((MAX_ITERATIONS + 1, k), np.nan)
    hz2 = np.full((MAX_ITERATIONS + 1, k), np.nan)
    hz1[0], hz2[0] = z1, z2
    it = 0
    while act.size and it < MAX_ITERATIONS:
        a = act
        X1, Y1, Z1 = x1[a], y1[a], z1[a]
        th, axl, sn = theta[a], axial[a], sense[a]
        t = 1.0 / nseg[a]
        ang = sn * t * th
        c, s = np.cos(ang), np.sin(ang)
        nZ1, d1 = _adjust_z(P1[a], X1, Y1, Z1, c * X1 - s * Y1, s * X1 + c * Y1, Z1 + t * axl)
        u = 1.0 - t
        ang = sn * u * th
        c, s = np.cos(ang), np.sin(ang)
        nZ2, d2 = _adjust_z(P2[a], x2[a], y2[a], z2[a], c * X1 - s * Y1, s * X1 + c * Y1, nZ1 + u * axl)
        moved = d1 | d2
        j = a[moved]
        if j.size == 0:
            break
        it += 1
        z1[j] = nZ1[moved]
        z2[j] = nZ2[moved]
        hz1[it, j], hz2[it, j] = z1[j], z2[j]
        th, axl, ln = _spiral_z(x1[j], y1[j], z1[j], x2[j], y2[j], z2[j], radius, far[j])
        theta[j], axial[j], length[j] = th, axl, ln
        with np.errstate(invalid="ignore"):
            nseg[j] = np.floor(ln / SEGMENT_LENGTH)
        cont = nseg[j] >= 2
        # exact cycles: jump to the state after MAX_ITERATIONS moves
        if it < MAX_ITERATIONS:
            cyc = np.zeros(j.size, dtype=bool)
            for per in range(1, min(_MAX_PERIOD, it) + 1):
                hit = cont & ~cyc & (hz1[it - per, j] == z1[j]) & (hz2[it - per, j] == z2[j])
                if hit.any():
                    jj = j[hit]
                    s0 = it - per
                    f = s0 + (MAX_ITERATIONS - s0) % per
                    z1[jj], z2[jj] = hz1[f, jj], hz2[f, jj]
                    th, axl, ln = _spiral_z(x1[jj], y1[jj], z1[jj], x2[jj], y2[jj], z2[jj], radius, far[jj])
                    theta[jj], axial[jj], length[jj] = th, axl, ln
                    cyc |= hit
            cont &= ~cyc
        act = j[cont]
        if 0 < act.size <= _SCALAR_TAIL and it < MAX_ITERATIONS:
            for e in act:
                z1[e], z2[e], length[e] = _finish_scalar(
                    P1[e], P2[e], float(x1[e]), float(y1[e]), float(z1[e]), float(x2[e]), float(y2[e]),
                    float(z2[e]), radius, bool(far[e]), it, hz1[:, e], hz2[:, e])
            break
    return np.stack([x1, y1, z1], axis=1), np.stack([x2, y2, z2], axis=1), length


class _CylinderStage:
    """A cylinder wrap of a batch in two phases.

    Construction computes the status and the preliminary tangent points of every
    element (cheap, closed form).  ``finish(sel)`` builds the helix -- and, when the
    path has several PathWraps, runs the tangent-adjustment loop -- for the elements
    ``sel`` only.  ``needs_loop`` marks the elements whose finish runs that loop;
    for them ``bound(sel)`` gives what is known in advance: r1 and r2 only move
    along the cylinder axis, and the wrap length is at least R |theta|.  The path
    algorithm uses this to skip the loop for segments that cannot be chosen.
    """

    def __init__(self, p1, p2, radius, length, wrap_axis, wrap_sign, single_wrap):
        p1 = np.asarray(p1, dtype=float).reshape(-1, 3)
        p2 = np.asarray(p2, dtype=float).reshape(-1, 3)
        n = p1.shape[0]
        self.n = n
        self.radius = R = float(radius)
        self.single_wrap = bool(single_wrap)
        rsq = R * R
        status = np.full(n, WrapStatus.NO_WRAP, dtype=int)
        self.status = status
        self.pos = np.full(n, -1)
        self.needs_loop = np.zeros(n, dtype=bool)
        self.idx = np.zeros(0, dtype=int)
        if n == 0:
            return
        p0 = np.broadcast_to(_P0, p1.shape)
        dn = np.broadcast_to(_DN, p1.shape)
        inside = (V.distance_sq_point_to_line(p1, p0, dn) < rsq) | (V.distance_sq_point_to_line(p2, p0, dn) < rsq)
        status[inside] = WrapStatus.INSIDE_RADIUS

        half = 0.5 * float(length)
        cs = np.broadcast_to(np.array([0.0, 0.0, -half]), p1.shape)
        ce = np.broadcast_to(np.array([0.0, 0.0, half]), p1.shape)
        near12, t12, near00, _ = V.intersect_lines(p1, p2, cs, ce)
        d12 = near12 - near00
        hit = (V.dot(d12, d12) < rsq) & (t12 > 0.0) & (t12 < 1.0)

        code = np.full(n, WrapStatus.WRAPPED, dtype=int)
        go = ~inside
        constrained = wrap_sign != 0
        if not constrained:
            code[hit] = WrapStatus.MANDATORY_WRAP
            go &= hit
        else:
            ax, sg = int(wrap_axis), int(wrap_sign)
            s1, s2 = V.dsign(p1[:, ax]), V.dsign(p2[:, ax])
            either_on = (s1 == sg) | (s2 == sg)
            mand = either_on & hit
            opt = either_on & ~hit & (s1 != s2) & (V.dsign(near12[:, ax]) != sg)
            code[mand] = WrapStatus.MANDATORY_WRAP
            go &= ~(either_on & ~mand & ~opt)

        idx = np.flatnonzero(go)
        if idx.size == 0:
            return
        P1, P2 = p1[idx], p2[idx]
        k = idx.size
        p0 = np.broadcast_to(_P0, P1.shape)
        dn = np.broadcast_to(_DN, P1.shape)
        p11, _ = V.closest_point_on_line(P1, p0, dn)
        p22, _ = V.closest_point_on_line(P2, p0, dn)
        r1a, r1b, d1 = _tangent_candidates(P1, p11, R)
        r2a, r2b, d2 = _tangent_candidates(P2, p22, R)

        far_side = np.zeros(k, dtype=bool)
        long_wrap = np.zeros(k, dtype=bool)
        if constrained:
            m1a, m1b, m2a, m2b = r1a - p11, r1b - p11, r2a - p22, r2b - p22
            with np.errstate(invalid="ignore", divide="ignore"):
                alpha = np.arccos(V.dot(m1a, m2b) / (V.norm(m1a) * V.norm(m2b)))
                beta = np.arccos(V.dot(m1b, m2a) / (V.norm(m1b) * V.norm(m2a)))
            A1 = V.dsign(r1a[:, ax]) == sg
            B1 = V.dsign(r1b[:, ax]) == sg
            A2 = V.dsign(r2a[:, ax]) == sg
            B2 = V.dsign(r2b[:, ax]) == sg
            gt = alpha > beta
            none = ~A1 & ~B1 & ~A2 & ~B2
            # (r1a, r2b) or else (r1b, r2a), by which candidates are on the active side
            use_ab = (A1 & B1 & ~A2) | (A1 & ~B1) | (~A1 & ~B1 & ~A2 & B2) | (none & gt)
            far_side = np.where(none, True, np.where(use_ab, gt, ~gt))
            R1 = V.where3(use_ab, r1a, r1b)
            R2 = V.where3(use_ab, r2b, r2a)
            sum_musc = (R1 - P1) + (R2 - P2)
            sum_r = (R1 - p11) + (R2 - p22)
            long_wrap = V.dot(sum_r, sum_musc) < 0.0
        else:
            e1a, _ = V.normalize_or_zero(r1a - p11)
            e1b, _ = V.normalize_or_zero(r1b - p11)
            e2a, _ = V.normalize_or_zero(r2a - p22)
            e2b, _ = V.normalize_or_zero(r2b - p22)
            j1, j2, j3, j4 = V.dot(e1a, e2a), V.dot(e1a, e2b), V.dot(e1b, e2a), V.dot(e1b, e2b)
            c1 = (j1 > j2) & (j1 > j3) & (j1 > j4)
            c2 = ~c1 & (j2 > j3) & (j2 > j4)
            c3 = ~c1 & ~c2 & (j3 > j4)
            R1 = V.where3(c1 | c2, r1a, r1b)
            R2 = V.where3(c1 | c3, r2a, r2b)

        # apex of the wrap on the cylinder, then slide r1, r2 along the axis to the
        # plane through P1, P2 and the apex
        with np.errstate(invalid="ignore", divide="ignore"):
            t = d1 / (d1 + d2)
        mpt = P1 + t[:, None] * (P2 - P1)
        axispt, _ = V.closest_point_on_line(mpt, p0, dn)
        l1, _ = V.normalize_or_zero(P1 - axispt)
        l2, _ = V.normalize_or_zero(P2 - axispt)
        pn, _ = V.normalize_or_zero(V.unit(V.cross(l1, l2)))
        vert1, _ = V.normalize_or_zero(V.cross(dn, pn))
        vert2, _ = V.normalize_or_zero(V.cross(pn, dn))
        apex1 = axispt + R * vert1
        apex2 = axispt + R * vert2
        e1, e2 = mpt - apex1, mpt - apex2
        first = V.dot(e1, e1) < V.dot(e2, e2)
        apex = V.where3(first != far_side, apex1, apex2)
        uu, _ = V.normalize_or_zero(P1 - apex)
        vv, _ = V.normalize_or_zero(P2 - apex)
        pn = V.unit(V.cross(uu, vv))
        d = -P1[:, 0] * pn[:, 0] - P1[:, 1] * pn[:, 1] - P1[:, 2] * pn[:, 2]
        h1, r1p = V.intersect_segment_plane(R1 - 10.0 * dn, R1 + 10.0 * dn, pn, d)
        h2, r2p = V.intersect_segment_plane(R2 - 10.0 * dn, R2 + 10.0 * dn, pn, d)
        # OpenSim passes p22 (a point) as the line direction here; reproduced as is
        q1, _ = V.closest_point_on_line(r1p, p11, p22)
        q2, _ = V.closest_point_on_line(r2p, p11, p22)
        e = p11 - p22
        ref = V.dot(e, e)
        e1 = q1 - p22
        e2 = q2 - p11
        R1 = V.where3(h1 & (V.dot(e1, e1) < ref), r1p, R1)
        R2 = V.where3(h2 & (V.dot(e2, e2) < ref), r2p, R2)

        # no wrap when both tangent points lie beyond the cylinder's ends
        ok = ~(((R1[:, 2] < -half) | (R1[:, 2] > half)) & ((R2[:, 2] < -half) | (R2[:, 2] > half)))
        idx = idx[ok]
        self.idx = idx
        status[idx] = code[idx]
        self.pos[idx] = np.arange(idx.size)
        self.P1, self.P2 = P1[ok], P2[ok]
        self.R1, self.R2 = R1[ok], R2[ok]
        self.long_wrap = long_wrap[ok]
        self.theta, _, self.length0 = _spiral(self.R1, self.R2, R, self.long_wrap)
        if not self.single_wrap:
            with np.errstate(invalid="ignore"):
                self.needs_loop[idx] = np.floor(self.length0 / SEGMENT_LENGTH) >= 2

    @property
    def code(self):
        """The returned codes (WrapCylinder returns exactly its status)."""
        return self.status

    def finish(self, sel):
        """(r1, r2, length) of the wrapped elements ``sel`` (indices into the batch)."""
        sel = np.asarray(sel, dtype=int)
        q = self.pos[sel]
        if np.any(q < 0):
            raise ValueError("finish() of an element that does not wrap")
        r1, r2, ln = self.R1[q].copy(), self.R2[q].copy(), self.length0[q].copy()
        loop = self.needs_loop[sel]
        if loop.any():
            i = np.flatnonzero(loop)
            qi = q[i]
            a, b, c = _adjust_loop(self.P1[qi], self.P2[qi], r1[i], r2[i], self.radius, self.long_wrap[qi])
            r1[i], r2[i], ln[i] = a, b, c
        return r1, r2, ln

    def bound(self, sel):
        """(r1, r2 before the loop, direction they can move along, minimum length) for ``sel``."""
        q = self.pos[np.asarray(sel, dtype=int)]
        return self.R1[q], self.R2[q], np.tile(_DN, (q.size, 1)), self.radius * np.abs(self.theta[q])

    def result(self) -> WrapSegmentResult:
        n = self.n
        r1 = np.full((n, 3), np.nan)
        r2 = np.full((n, 3), np.nan)
        wlen = np.zeros(n)
        if self.idx.size:
            a, b, c = self.finish(self.idx)
            r1[self.idx], r2[self.idx], wlen[self.idx] = a, b, c
        return WrapSegmentResult(self.status, r1, r2, wlen)


def cylinder_wrap(p1, p2, radius, length, wrap_axis=0, wrap_sign=0, single_wrap=True):
    """Vectorized WrapCylinder wrap of segments p1-p2 (N, 3) in the cylinder frame."""
    if use_jit():  # compiled per-segment kernel (osim_emb.paths.wrapping._kernels)
        from osim_emb.paths.wrapping._kernels import cylinder_batch
        p1 = np.require(np.asarray(p1, dtype=float).reshape(-1, 3), requirements=["C", "W"])
        p2 = np.require(np.asarray(p2, dtype=float).reshape(-1, 3), requirements=["C", "W"])
        st, a, b, ln = cylinder_batch(p1, p2, float(radius), float(length), int(wrap_axis), int(wrap_sign),
                                      bool(single_wrap))
        return WrapSegmentResult(st, a, b, ln)
    return _CylinderStage(p1, p2, radius, length, wrap_axis, wrap_sign, single_wrap).result()


@dataclass(frozen=True)
class WrapCylinder(WrapObject):
    """A cylinder of ``radius`` around the wrap frame's z axis, ``length`` long, centred on z = 0."""

    type_name = "WrapCylinder"

    radius: float = 1.0
    length: float = 1.0

    def __post_init__(self):
        if not float(self.radius) >= 0.0:
            raise ValueError("WrapCylinder radius cannot be negative")
        if not float(self.length) >= 0.0:
            raise ValueError("WrapCylinder length cannot be negative")
        object.__setattr__(self, "radius", float(self.radius))
        object.__setattr__(self, "length", float(self.length))
        self.wrap_axis_sign  # validate the quadrant

    def wrap_segment(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3), wrap frame) over the cylinder.

        ``single_wrap=False`` adds OpenSim's tangent-adjustment loop, which OpenSim
        runs when the path has more than one PathWrap.  ``method`` is ignored.
        """
        ax, sg = self.wrap_axis_sign
        return cylinder_wrap(p1, p2, self.radius, self.length, ax, sg, single_wrap)

    def wrap_segment_in_path(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        return self.wrap_segment(p1, p2, method, single_wrap)

    def _stage(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> "_CylinderStage":
        """Two-phase evaluation used by the path algorithm (see ``_CylinderStage``)."""
        ax, sg = self.wrap_axis_sign
        return _CylinderStage(p1, p2, self.radius, self.length, ax, sg, single_wrap)
