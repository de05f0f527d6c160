"""WrapEllipsoid: OpenSim 4.6's ellipsoid wrapping, vectorized over a batch of segments.

OpenSim does not compute a geodesic on the ellipsoid.  It cuts the ellipsoid
with a plane through P1, P2 and a surface point ``c1`` chosen by the PathWrap
``method``; finds in that plane the two points r1, r2 whose tangent lines pass
through P1 and P2 (a damped Gauss-Newton iteration stopped at a loose
tolerance); and measures the arc r1 -> r2 as a polyline of about 1 mm pieces.
Every step here follows the same arithmetic and the same stopping rules,
element by element, so that the tangent points and the wrap length agree with
OpenSim to round-off.  See ``docs/wrapping_ellipsoid.md`` for the algorithm.

All computations run on the whole batch: iterative parts carry a mask of the
elements still iterating, and each element leaves its loop exactly when
OpenSim's loop would stop for it.

State from a previous call: OpenSim copies the PathWrap's previous result
(r1, r2, c1, sv, factor) into the new one.  r1, r2, sv and factor are always
overwritten before use; ``c1`` survives only where the 3-D closest-point
Newton iteration producing the final ``c1`` does not converge in 64 steps
(OpenSim then leaves its output untouched).  That iteration only fails for
query points far outside the ellipsoid, which the wrap never queries, so in
practice the result is a function of the segment alone.  ``previous_c1``
reproduces the dependence anyway; the default (NaN) is a freshly constructed
PathWrap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, WrapStatus, parse_quadrant

__all__ = ["WrapEllipsoid", "EllipsoidWrapDetails"]

# ---------------------------------------------------------------------------
# Constants of OpenSim 4.6's WrapEllipsoid (same values, same meaning).
# ---------------------------------------------------------------------------
_SURFACE_TOL = 1e-4  # |p e| below this: a point is taken to lie on the surface
_TINY = 1e-8  # stopping threshold of the tangent-point sum of squares
_MU_BLEND_MIN = 0.7073  # axis alignment below which the "fan" estimate is used alone
_MU_BLEND_MAX = 0.9  # axis alignment above which the axial estimate is used alone
_N_FAN = 300  # the fan samples the r1-r2 chord at i/300, i = 1..298
_SV_BOUNDARY_BLEND = 0.3
_ROUNDOFF = 2e-13  # OpenSim's EQUAL_WITHIN_ERROR tolerance
_EPS = np.finfo(float).eps  # SimTK::Eps (normalize-or-zero threshold)
_SEG_LEN = 0.001  # desired polyline piece length, metres
_MAX_SEGS = 499
_MAX_IT = 50  # outer tangent iterations
_MAX_IT2 = 1000  # inner damping / extrapolation iterations
_NEWTON_IT = 64  # closest-point Newton iterations
_NEWTON_TOL = 1e-9
_FAST_FORWARD = True  # skip inner iterations that provably change nothing (same result, much faster)

def _method_name(method: str) -> str:
    """PathWrap method spelled as OpenSim accepts it (e.g. hybrid, Hybrid, HYBRID; Unassigned = hybrid)."""
    m = str(method)
    for name in ("hybrid", "midpoint", "axial"):
        if m in (name, name.capitalize(), name.upper()):
            return name
    if m == "Unassigned":
        return "hybrid"
    raise ValueError(f"unknown wrap method {method!r} (hybrid, midpoint or axial)")


# ---------------------------------------------------------------------------
# Small vector helpers with a fixed order of operations (x, then y, then z),
# the order in which SimTK's Vec3 dot product and norm accumulate.
# ---------------------------------------------------------------------------
def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _norm(a):
    return np.sqrt(_dot(a, a))


def _cross(a, b):
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def _unit_or_zero(a):
    """a / |a| computed as a * (1/|a|); zero where |a| < machine epsilon (or NaN)."""
    mag = _norm(a)
    ok = mag >= _EPS
    inv = np.where(ok, 1.0 / np.where(ok, mag, 1.0), 0.0)
    return np.where(ok[..., None], a * inv[..., None], 0.0)


def _pow100(x):
    """x**100 by the C library's pow, as OpenSim calls it (numpy's SIMD pow may differ in the last bit)."""
    x = np.asarray(x, dtype=float)
    return np.fromiter((math.pow(v, 100.0) for v in x.ravel()), dtype=float, count=x.size).reshape(x.shape)


# ---------------------------------------------------------------------------
# Closest point on an ellipse / ellipsoid (Eberly's Newton iteration on the
# Lagrange parameter, with OpenSim's special cases near coordinate planes).
# ---------------------------------------------------------------------------
def _closest_on_ellipse(a: float, b: float, u: np.ndarray, v: np.ndarray):
    """Closest point (x, y) on (x/a)^2 + (y/b)^2 = 1 to (u, v); always returns a point."""
    n = u.shape[0]
    x = np.full(n, np.nan)
    y = np.full(n, np.nan)
    a2, b2 = a * a, b * b
    near_x = np.abs(0.0 - u) <= _ROUNDOFF
    near_y = np.abs(0.0 - v) <= _ROUNDOFF

    both = near_x & near_y
    if both.any():
        if a < b:
            x[both] = np.where(u[both] < 0.0, -a, a)
            y[both] = v[both]
        else:
            x[both] = u[both]
            y[both] = np.where(v[both] < 0.0, -b, b)

    ox = near_x & ~near_y
    if ox.any():
        vv = v[ox]
        to_pole = (a >= b) | (np.abs(vv) >= b - a2 / b)
        yy = np.where(to_pole, np.where(vv >= 0, b, -b), b2 * vv / (b2 - a2))
        ydb = yy / b
        xx = np.where(to_pole, u[ox], a * np.sqrt(np.abs(1 - ydb * ydb)))
        x[ox], y[ox] = xx, yy

    oy = near_y & ~near_x
    if oy.any():
        uu = u[oy]
        to_pole = (b >= a) | (np.abs(uu) >= a - b2 / a)
        xx = np.where(to_pole, np.where(uu >= 0, a, -a), a2 * uu / (a2 - b2))
        xda = xx / a
        yy = np.where(to_pole, v[oy], b * np.sqrt(np.abs(1 - xda * xda)))
        x[oy], y[oy] = xx, yy

    gen = np.nonzero(~near_x & ~near_y)[0]
    if gen.size:
        uu, vv = u[gen], v[gen]
        a2u2, b2v2 = a2 * (uu * uu), b2 * (vv * vv)
        amax = b if b > a else a
        t = np.where((uu / a) * (uu / a) + (vv / b) * (vv / b) < 1.0, 0.0, amax * np.sqrt(uu * uu + vv * vv))
        P = np.empty(gen.size)
        Q = np.empty(gen.size)
        act = np.arange(gen.size)
        for _ in range(_NEWTON_IT):
            if act.size == 0:
                break
            tt = t[act]
            p = tt + a2
            q = tt + b2
            P[act], Q[act] = p, q
            p2, q2 = p * p, q * q
            au, bv = a2u2[act], b2v2[act]
            f = p2 * q2 - au * q2 - bv * p2
            go = ~(np.abs(f) < _NEWTON_TOL)
            act, p, q, f, au, bv = act[go], p[go], q[go], f[go], au[go], bv[go]
            fp = 2.0 * (p * q * (p + q) - au * q - bv * p)
            t[act] = t[act] - f / fp
        x[gen] = a2 * uu / P
        y[gen] = b2 * vv / Q
    return x, y


def _closest_on_ellipsoid(abc, dims, pts, axis=None, prev=None):
    """OpenSim's closest point on the ellipsoid with semi-axes ``abc`` to each of ``pts`` (n, 3).

    ``axis`` = 0, 1 or 2 forces the planar (2-D) special case in the plane
    normal to that axis; None lets it be chosen per point (points within
    2e-13 of a coordinate plane; the ellipse with the smallest radii sum, from
    the *unscaled* ``dims``, wins).  Where the general 3-D Newton iteration
    fails to converge in 64 steps OpenSim leaves its output untouched: those
    rows return ``prev`` (NaN if not given) and ``ok`` False.
    """
    pts = np.asarray(pts, dtype=float)
    n = pts.shape[0]
    out = np.full((n, 3), np.nan) if prev is None else np.array(prev, dtype=float, copy=True)
    ok = np.ones(n, dtype=bool)
    if n == 0:
        return out, ok
    a, b, c = float(abc[0]), float(abc[1]), float(abc[2])
    u, v, w = pts[:, 0], pts[:, 1], pts[:, 2]
    if axis is None:
        ax = np.full(n, -1)
        best = np.full(n, np.inf)
        for i in range(3):
            s = 0.0
            for j in range(3):
                if j != i:
                    s += float(dims[j])
            sel = (np.abs(0.0 - pts[:, i]) <= _ROUNDOFF) & (best > s)
            ax[sel] = i
            best[sel] = s
    else:
        ax = np.full(n, int(axis))

    m0 = ax == 0
    if m0.any():
        yy, zz = _closest_on_ellipse(b, c, v[m0], w[m0])
        out[m0] = np.stack([u[m0], yy, zz], axis=1)
    m1 = ax == 1
    if m1.any():
        zz, xx = _closest_on_ellipse(c, a, w[m1], u[m1])
        out[m1] = np.stack([xx, v[m1], zz], axis=1)
    m2 = ax == 2
    if m2.any():
        xx, yy = _closest_on_ellipse(a, b, u[m2], v[m2])
        out[m2] = np.stack([xx, yy, w[m2]], axis=1)

    gen = np.nonzero(ax < 0)[0]
    if gen.size:
        a2, b2, c2 = a * a, b * b, c * c
        uu, vv, ww = u[gen], v[gen], w[gen]
        a2u2, b2v2, c2w2 = a2 * (uu * uu), b2 * (vv * vv), c2 * (ww * ww)
        amax = a
        if b > amax:
            amax = b
        if c > amax:
            amax = c
        inside = (uu / a) * (uu / a) + (vv / b) * (vv / b) + (ww / c) * (ww / c) < 1.0
        t = np.where(inside, 0.0, amax * np.sqrt(uu * uu + vv * vv + ww * ww))
        act = np.arange(gen.size)  # working set, compacted as points converge
        au, bv, cw = a2u2, b2v2, c2w2
        conv = np.zeros(gen.size, dtype=bool)
        res = np.empty((gen.size, 3))
        for _ in range(_NEWTON_IT):
            if act.size == 0:
                break
            P, Q, R = t + a2, t + b2, t + c2
            P2, Q2, R2 = P * P, Q * Q, R * R
            f = P2 * Q2 * R2 - au * Q2 * R2 - bv * P2 * R2 - cw * P2 * Q2
            done = np.abs(f) < _NEWTON_TOL
            if done.any():
                idx = act[done]
                res[idx, 0] = a2 * uu[idx] / P[done]
                res[idx, 1] = b2 * vv[idx] / Q[done]
                res[idx, 2] = c2 * ww[idx] / R[done]
                conv[idx] = True
                go = ~done
                act, t, f = act[go], t[go], f[go]
                P, Q, R, au, bv, cw = P[go], Q[go], R[go], au[go], bv[go], cw[go]
            PQ, PR, QR = P * Q, P * R, Q * R
            PQR = P * Q * R
            fp = 2.0 * (PQR * (QR + PR + PQ) - au * QR * (Q + R) - bv * PR * (P + R) - cw * PQ * (P + Q))
            t = t - f / fp
        gi = gen[conv]
        out[gi] = res[conv]
        ok[gen[~conv]] = False
    return out, ok


# ---------------------------------------------------------------------------
# Tangent points: damped Gauss-Newton on 4 residuals (plane, surface,
# tangency), unknowns (r, d).
# ---------------------------------------------------------------------------
def _residuals(r, d, p, vs, vs4, a, asq):
    nr = 2.0 * r / asq
    q = r / a
    e0 = _dot(vs, r) + vs4
    e1 = -1.0 + q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1] + q[:, 2] * q[:, 2]
    e2 = _dot(nr, r) + d
    e3 = _dot(nr, p) + d
    ssq = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3
    return np.stack([e0, e1, e2, e3], axis=1), ssq


def _inv4(m):
    """Inverse of a stack of 4x4 matrices by Gauss-Jordan elimination with partial pivoting.

    Singular matrices give inf/NaN rows instead of raising (no exception may
    interrupt the batch).
    """
    n = m.shape[0]
    aug = np.concatenate([m, np.broadcast_to(np.eye(4), (n, 4, 4))], axis=2).copy()
    rows = np.arange(n)
    with np.errstate(all="ignore"):
        for k in range(4):
            piv = k + np.argmax(np.abs(aug[:, k:, k]), axis=1)
            tmp = aug[rows, piv].copy()
            aug[rows, piv] = aug[:, k]
            aug[:, k] = tmp
            aug[:, k] = aug[:, k] / aug[:, k, k][:, None]
            for i in range(4):
                if i != k:
                    aug[:, i] = aug[:, i] - aug[:, i, k][:, None] * aug[:, k]
    return aug[:, :, 4:]


def _tangent_points(pe, r0, p, vs, vs4, a):
    """Move each start point r0 (n, 3), in its plane (vs, vs4), to the point of tangency seen from p.

    Returns the points and whether the iteration met its tolerance (True for
    end points on the surface, which are their own tangent points).
    """
    r = np.array(r0, dtype=float, copy=True)
    converged = np.ones(r.shape[0], dtype=bool)
    on_surface = np.abs(pe) < _SURFACE_TOL
    r[on_surface] = p[on_surface]
    idx = np.nonzero(~on_surface)[0]
    if idx.size == 0:
        return r, converged
    asq = a * a
    rr, pp, v_s, v_s4 = r[idx], p[idx], vs[idx], vs4[idx]
    k = idx.size
    d = -_dot(2.0 * rr / asq, rr)
    ee, ssq = _residuals(rr, d, pp, v_s, v_s4, a, asq)
    ssqo = ssq.copy()
    alpha = np.full(k, 0.01)
    nit = np.zeros(k, dtype=int)
    p_unit = _unit_or_zero(pp)  # (p - m), m = 0

    while True:
        act = np.nonzero((ssq > _TINY) & (nit < _MAX_IT))[0]
        if act.size == 0:
            break
        nit[act] += 1
        ra, pa, vsa = rr[act], pp[act], v_s[act]
        # Jacobian of the residuals: rows = unknowns (x, y, z, d), columns = residuals.
        D = np.zeros((act.size, 4, 4))
        D[:, :3, 0] = vsa
        D[:, :3, 1] = 2.0 * ra / asq
        D[:, :3, 2] = 2.0 * (2.0 * ra) / asq
        D[:, :3, 3] = 2.0 * pa / asq
        D[:, 3, 2] = 1.0
        D[:, 3, 3] = 1.0
        pcos = _dot(_unit_or_zero(pa - ra), p_unit[act])
        dd = np.ones(act.size)
        big = pcos > 0.1
        dd[big] = 1.0 - _pow100(pcos[big])
        e = ee[act]
        vneg = np.zeros((act.size, 4))
        for j in range(4):
            vneg = vneg - D[:, :, j] * e[:, j, None]
        JJ = np.zeros((act.size, 4, 4))
        for j in range(4):
            JJ = JJ + D[:, :, None, j] * D[:, None, :, j]
        diag = JJ[:, [0, 1, 2, 3], [0, 1, 2, 3]].copy()
        vt = np.zeros((act.size, 4))

        def damped_step(loc, alph):
            M = JJ[loc].copy()
            for i in range(4):
                M[:, i, i] = diag[loc, i] * (1.0 + alph)
            inv = _inv4(M)
            step = np.zeros((loc.size, 4))
            for j in range(4):
                step = step + dd[loc, None] * inv[:, :, j] * vneg[loc, j, None] / 16.0
            return step

        def advance(g, step):
            """Add a step to (r, d) of rows g; return whether it left them unchanged."""
            r_old, d_old = rr[g], d[g]
            rr[g] = r_old + step[:, :3]
            d[g] = d_old + step[:, 3]
            e_new, s_new = _residuals(rr[g], d[g], pp[g], v_s[g], v_s4[g], a, asq)
            ee[g] = e_new
            ssqo[g] = ssq[g]
            ssq[g] = s_new
            return (rr[g] == r_old).all(axis=1) & (d[g] == d_old)

        # (1) damped steps, from wherever the previous one left the point, while
        #     the sum of squares does not decrease (damping x4 each time).
        nit2 = np.zeros(act.size, dtype=int)
        loc = np.arange(act.size)
        while loc.size:
            g = act[loc]
            sel = (ssq[g] >= ssqo[g]) & (nit2[loc] < _MAX_IT2)
            loc, g = loc[sel], g[sel]
            if loc.size == 0:
                break
            step = damped_step(loc, alpha[g])
            vt[loc] = step
            same = advance(g, step)
            alpha[g] = alpha[g] * 4.0
            nit2[loc] += 1
            stall = same & (nit2[loc] < _MAX_IT2)
            if _FAST_FORWARD and stall.any():
                # A step too small to move (r, d): the next ones, damped 4x more each,
                # are smaller still, so only alpha changes until the last one.  Jump
                # to the last iteration (x4 is exact: ldexp gives the same alpha).
                ls, gs = loc[stall], g[stall]
                left = _MAX_IT2 - nit2[ls]
                alpha_last = np.ldexp(alpha[gs], 2 * (left - 1))
                step = damped_step(ls, alpha_last)
                vt[ls] = step
                advance(gs, step)
                alpha[gs] = alpha_last * 4.0
                nit2[ls] = _MAX_IT2
        alpha[act] = alpha[act] / 8.0

        # (2) extrapolate along the last step, doubling it, while that does not
        #     increase the sum of squares.
        fakt = np.full(act.size, 0.5)
        nit2 = np.zeros(act.size, dtype=int)
        loc = np.arange(act.size)
        while loc.size:
            g = act[loc]
            sel = (ssq[g] <= ssqo[g]) & (nit2[loc] < _MAX_IT2)
            loc, g = loc[sel], g[sel]
            if loc.size == 0:
                break
            fakt[loc] = fakt[loc] * 2.0
            same = advance(g, vt[loc] * fakt[loc, None])
            nit2[loc] += 1
            stall = same & (nit2[loc] < _MAX_IT2)
            if _FAST_FORWARD and stall.any():
                # (r, d) did not move: skip the doublings that would not move them either.
                ls, gs = loc[stall], g[stall]
                left = _MAX_IT2 - nit2[ls]
                j = np.arange(1, int(left.max()) + 1)
                f = fakt[ls, None] * np.ldexp(1.0, j)[None, :]  # (s, j) next factors
                moved = ((rr[gs, None, :] + vt[ls, None, :3] * f[..., None] != rr[gs, None, :]).any(axis=2)
                         | (d[gs, None] + vt[ls, None, 3] * f != d[gs, None]))
                moved &= j[None, :] <= left[:, None]
                first = np.where(moved.any(axis=1), moved.argmax(axis=1) + 1, left + 1)
                skip = first - 1  # iterations without effect
                fakt[ls] = np.ldexp(fakt[ls], skip)
                nit2[ls] += skip
                ssqo[gs] = ssq[gs]
        # ... and take back the last (worse) extrapolation.
        rr[act] = rr[act] - vt[:, :3] * fakt[:, None]
        d[act] = d[act] - vt[:, 3] * fakt
        e_new, s_new = _residuals(rr[act], d[act], pp[act], v_s[act], v_s4[act], a, asq)
        ee[act] = e_new
        ssq[act] = s_new
        ssqo[act] = s_new
    r[idx] = rr
    converged[idx] = ssq <= _TINY
    return r, converged


# ---------------------------------------------------------------------------
# The polyline r1 -> r2 in the cutting plane.
# ---------------------------------------------------------------------------
def _polyline(r1, r2, a, vs, vs4, factor, far_side, width=None):
    """Surface polyline r1 -> r2 (normalized coordinates).

    Returns ``pts`` (n, width, 3), each row padded with r2 after its last
    point; ``npts`` (n,), 0 where OpenSim produces no points (a NaN chord);
    and the length (normalized units; NaN where npts is 0).
    """
    n = r1.shape[0]
    len_m = _norm(r1 - r2) / factor
    short = len_m < _SEG_LEN
    with np.errstate(invalid="ignore"):
        nseg = np.minimum(np.where(short | ~np.isfinite(len_m), 0.0, np.floor(len_m / _SEG_LEN)), _MAX_SEGS)
    nseg = nseg.astype(int)
    valid = short | (nseg > 0)
    npts = np.where(short, 2, np.where(nseg > 0, nseg + 1, 0))
    if width is None:
        width = max(2, int(npts.max()) if n else 2)

    # a0: where the cutting plane crosses the coordinate axis most normal to it
    # (first of equal components); the samples are rays from a0 at equal angles.
    avs = np.abs(vs)
    imax = np.zeros(n, dtype=int)
    for i in (1, 2):
        imax = np.where(avs[:, i] > avs[np.arange(n), imax], i, imax)
    u = np.zeros((n, 3))
    u[np.arange(n), imax] = 1.0
    mu = (-_dot(vs, np.zeros((n, 3))) - vs4) / _dot(vs, u)
    a0 = 0.0 + mu[:, None] * u
    ar1 = _unit_or_zero(r1 - a0)
    ar2 = _unit_or_zero(r2 - a0)
    phi0 = np.array([math.acos(c) if -1.0 <= c <= 1.0 else math.nan for c in _dot(ar1, ar2)])
    ns = np.maximum(nseg, 1).astype(float)
    dphi = np.where(far_side, -(2 * math.pi - phi0) / ns, phi0 / ns)
    vsz = _unit_or_zero(_cross(ar1, ar2))
    vsy = _cross(vsz, ar1)

    pts = np.repeat(r2[:, None, :], width, axis=1)
    pts[:, 0] = r1
    rows = np.nonzero(valid & ~short & (nseg >= 2))[0]
    if rows.size:
        kmax = int(nseg[rows].max()) - 1  # most interior points
        steps = np.arange(1, kmax + 1, dtype=float)
        phi = steps[None, :] * dphi[rows, None]
        rv = ar1[rows, None, :] * np.cos(phi)[..., None] + vsy[rows, None, :] * np.sin(phi)[..., None]
        f1 = rv / a
        f2 = a0[rows] / a
        aa = _dot(f1, f1)
        bb = 2.0 * _dot(f1, f2[:, None, :])
        cc = _dot(f2, f2)[:, None] - 1.0
        with np.errstate(invalid="ignore"):
            mu3 = (-bb + np.sqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
        interior = steps[None, :] <= (nseg[rows, None] - 1)
        blk = pts[rows]
        blk[:, 1 : kmax + 1] = np.where(interior[..., None], a0[rows, None, :] + mu3[..., None] * rv,
                                        r2[rows, None, :])
        pts[rows] = blk
    # sum of the piece lengths in order (the padding adds exact zeros)
    length = np.cumsum(_norm(np.diff(pts, axis=1)), axis=1)[:, -1]
    length = np.where(short, len_m * factor, length)  # short chords: the chord, through metres
    length = np.where(valid, length, np.nan)
    return pts, npts, length


def _fan_direction(a, dims, r1, r1r2, start):
    """Unit sum of the directions from 298 chord samples to their closest surface points."""
    k = r1.shape[0]
    tt = np.arange(1, _N_FAN - 1, dtype=float) / _N_FAN
    samples = r1[:, None, :] + tt[None, :, None] * r1r2[:, None, :]  # (k, 298, 3)
    cp, ok = _closest_on_ellipsoid(a, dims, samples.reshape(-1, 3))
    cp = cp.reshape(k, _N_FAN - 2, 3)
    ok = ok.reshape(k, _N_FAN - 2)
    if not ok.all():
        # A failed sample keeps the previous sample's point (the first: the start value).
        ext = np.concatenate([start[:, None, :], cp], axis=1)
        okx = np.concatenate([np.ones((k, 1), dtype=bool), ok], axis=1)
        last = np.maximum.accumulate(np.where(okx, np.arange(_N_FAN - 1)[None, :], 0), axis=1)
        cp = ext[np.arange(k)[:, None], last][:, 1:]
    v = _unit_or_zero(cp - samples)
    return _unit_or_zero(np.cumsum(v, axis=1)[:, -1])


@dataclass
class EllipsoidWrapDetails:
    """Everything a wrap computes, in the wrap frame (metres unless noted)."""

    result: "WrapSegmentResult"
    c1: np.ndarray  # (N, 3) surface point fixing the cutting plane, in OpenSim's normalized units
    sv: np.ndarray  # (N, 3) point on the chord used to find c1 (normalized units)
    plane: np.ndarray  # (N, 4) cutting plane (unit normal vs, offset vs4), normalized units
    far_side: np.ndarray  # (N,) bool, path taken the long way around
    points: np.ndarray | None  # (N, K, 3) polyline r1 -> r2 (metres), NaN after n_points; None if not kept
    n_points: np.ndarray  # (N,) number of polyline points (0 where not wrapped)
    closest_point_failed: np.ndarray  # (N,) the final c1 came from a non-converged Newton iteration
    tangent_converged: np.ndarray  # (N, 2) the r1 / r2 iteration met OpenSim's tolerance (else: 50 steps)


@dataclass(frozen=True)
class WrapEllipsoid(WrapObject):
    """An ellipsoid with semi-axes ``dimensions`` along the wrap frame's x, y, z axes."""

    type_name = "WrapEllipsoid"

    dimensions: tuple[float, float, float] = (0.05, 0.05, 0.05)

    def __post_init__(self):
        dims = tuple(float(x) for x in self.dimensions)
        if len(dims) != 3 or min(dims) <= 0.0:
            raise ValueError("WrapEllipsoid dimensions must be three positive semi-axes")
        object.__setattr__(self, "dimensions", dims)
        parse_quadrant(self.quadrant)  # validate

    # -- public API -------------------------------------------------------
    def wrap_segment(self, p1, p2, method: str = "hybrid", *, previous_c1=None) -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3) or (3,), wrap frame, metres) over the ellipsoid.

        Status per segment: INSIDE_RADIUS (an end point inside the ellipsoid),
        NO_WRAP (the straight segment does not pass through it) or
        MANDATORY_WRAP (it does; OpenSim's ellipsoid never returns plain
        WRAPPED).  ``r1``, ``r2`` are the tangent points (NaN where not
        wrapped), ``length`` the polyline length between them (0 where not
        wrapped; NaN where OpenSim's own length is NaN).  ``method`` is the
        PathWrap's: "hybrid" (default), "midpoint" or "axial".  The object's
        ``active`` flag is not consulted here (the path skips inactive objects).

        ``previous_c1`` (N, 3) or (3,), in OpenSim's normalized units (see
        :class:`EllipsoidWrapDetails`), is the ``c1`` of the PathWrap's
        previous wrap; it can only matter where a closest-point iteration does
        not converge, which the measurements in docs/wrapping_ellipsoid.md never
        found.  Default: NaN, a freshly constructed PathWrap.
        """
        return self.wrap_segment_details(p1, p2, method, previous_c1=previous_c1, keep_points=False).result

    def surface_path(self, p1, p2, method: str = "hybrid", *, previous_c1=None) -> list[np.ndarray]:
        """The polyline OpenSim builds from r1 to r2 for each segment (list of (k, 3), wrap frame).

        Its length is the wrap length; empty (0, 3) where the segment does not wrap.
        """
        det = self.wrap_segment_details(p1, p2, method, previous_c1=previous_c1, keep_points=True)
        return [det.points[i, : det.n_points[i]].copy() for i in range(det.n_points.shape[0])]

    def wrap_segment_details(self, p1, p2, method: str = "hybrid", *, previous_c1=None,
                             keep_points: bool = True, chunk: int = 1024) -> EllipsoidWrapDetails:
        """As :meth:`wrap_segment`, with the intermediate quantities (and the polyline if ``keep_points``).

        The batch is processed ``chunk`` segments at a time (memory only; the
        results do not depend on it).
        """
        p1 = np.atleast_2d(np.asarray(p1, dtype=float))
        p2 = np.atleast_2d(np.asarray(p2, dtype=float))
        p1, p2 = np.broadcast_arrays(p1, p2)
        if p1.ndim != 2 or p1.shape[1] != 3:
            raise ValueError("p1 and p2 must have shape (N, 3) or (3,)")
        n = p1.shape[0]
        if previous_c1 is None:
            prev = np.full((n, 3), np.nan)
        else:
            prev = np.broadcast_to(np.asarray(previous_c1, dtype=float), (n, 3))
        meth = _method_name(method)
        if use_jit():  # compiled per-segment kernel (osim_emb.paths.wrapping._kernels_ellipsoid), bitwise the same
            return self._wrap_jit(p1, p2, meth, prev, keep_points)
        starts = range(0, n, chunk) if n else [0]
        parts = [self._wrap(p1[s : s + chunk], p2[s : s + chunk], meth, prev[s : s + chunk], keep_points)
                 for s in starts]
        if len(parts) == 1:
            return parts[0]
        cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
        raws = [p.result.code for p in parts]
        status = np.concatenate([p.result.status for p in parts])
        raw = np.concatenate(raws)
        res = WrapSegmentResult(
            status=status,
            r1=np.concatenate([p.result.r1 for p in parts]),
            r2=np.concatenate([p.result.r2 for p in parts]),
            length=np.concatenate([p.result.length for p in parts]),
            raw_status=None if np.array_equal(raw, status) else raw,
        )
        points = None
        if keep_points:
            width = max(p.points.shape[1] for p in parts)
            points = np.full((n, width, 3), np.nan)
            i0 = 0
            for p in parts:
                m = p.points.shape[0]
                points[i0 : i0 + m, : p.points.shape[1]] = p.points
                i0 += m
        return EllipsoidWrapDetails(res, cat("c1"), cat("sv"), cat("plane"), cat("far_side"),
                                    points, cat("n_points"), cat("closest_point_failed"),
                                    cat("tangent_converged"))

    def _wrap_jit(self, p1, p2, meth, prev, keep_points) -> EllipsoidWrapDetails:
        from osim_emb.paths.wrapping._kernels_ellipsoid import ellipsoid_batch
        ax, sg = parse_quadrant(self.quadrant)
        dims = tuple(float(x) for x in self.dimensions)
        code = {"hybrid": 0, "midpoint": 1, "axial": 2}[meth]
        cw = ["C", "W"]
        status, raw, r1, r2, length, det, pts = ellipsoid_batch(
            np.require(p1, dtype=float, requirements=cw), np.require(p2, dtype=float, requirements=cw), dims, ax, sg,
            code, np.require(prev, dtype=float, requirements=cw), bool(keep_points))
        npts = det[:, 11].astype(int)
        points = None
        if keep_points:
            width = max(2, int(npts.max()) if npts.size else 2)
            factor = 3.0 / (dims[0] + dims[1] + dims[2])
            points = pts[:, :width] * (1.0 / factor)
        res = WrapSegmentResult(status=status, r1=r1, r2=r2, length=length,
                                raw_status=None if np.array_equal(raw, status) else raw)
        return EllipsoidWrapDetails(res, det[:, 0:3].copy(), det[:, 3:6].copy(), det[:, 6:10].copy(),
                                    det[:, 10] != 0.0, points, npts, det[:, 12] != 0.0, det[:, 13:15] != 0.0)

    # -- the algorithm ------------------------------------------------------
    def _wrap(self, P1, P2, meth, prev_c1, keep_points) -> EllipsoidWrapDetails:
        n = P1.shape[0]
        dims = self.dimensions
        factor = 3.0 / (dims[0] + dims[1] + dims[2])
        a = np.array([dims[0] * factor, dims[1] * factor, dims[2] * factor])
        wrap_axis, wrap_sign = parse_quadrant(self.quadrant)

        status = np.full(n, WrapStatus.NO_WRAP, dtype=int)
        raw = status.copy()
        R1 = np.full((n, 3), np.nan)
        R2 = np.full((n, 3), np.nan)
        L = np.zeros(n)
        C1 = np.array(prev_c1, dtype=float, copy=True)
        SV = np.full((n, 3), np.nan)
        plane = np.full((n, 4), np.nan)
        far = np.zeros(n, dtype=bool)
        pts_out = np.full((n, 2, 3), np.nan) if keep_points else None
        npts_out = np.zeros(n, dtype=int)
        failed = np.zeros(n, dtype=bool)
        tconv = np.ones((n, 2), dtype=bool)

        with np.errstate(all="ignore"):
            p1 = P1 * factor
            p2 = P2 * factor
            q1, q2 = p1 / a, p2 / a
            p1e = -1.0 + q1[:, 0] * q1[:, 0] + q1[:, 1] * q1[:, 1] + q1[:, 2] * q1[:, 2]
            p2e = -1.0 + q2[:, 0] * q2[:, 0] + q2[:, 1] * q2[:, 1] + q2[:, 2] * q2[:, 2]
            inside = (p1e < -_SURFACE_TOL) | (p2e < -_SURFACE_TOL)
            status[inside] = WrapStatus.INSIDE_RADIUS
            raw[inside] = WrapStatus.INSIDE_RADIUS

            p1p2 = p1 - p2
            ppm = _dot(_unit_or_zero(p1), _unit_or_zero(p2)) - 1.0
            cand = ~inside & ~(np.abs(ppm) < 0.0001)

            f1 = p1p2 / a
            f2 = p2 / a
            aa = _dot(f1, f1)
            bb = 2.0 * _dot(f1, f2)
            cc = _dot(f2, f2) - 1.0
            disc = bb * bb - 4.0 * aa * cc
            cand &= ~(disc < 0.0)
            sq = np.sqrt(disc)
            l1 = (-bb + sq) / (2.0 * aa)
            l2 = (-bb - sq) / (2.0 * aa)
            cand &= (0.0 < l1) & (l1 < 1.0) & (0.0 < l2) & (l2 < 1.0)

            w = np.nonzero(cand)[0]
            if w.size == 0:
                return self._details(status, raw, R1, R2, L, C1, SV, plane, far, pts_out, npts_out, failed, tconv)

            p1, p2, p1p2 = p1[w], p2[w], p1p2[w]
            p1e, p2e = p1e[w], p2e[w]
            k = w.size
            r1 = p2 + l1[w, None] * p1p2
            r2 = p2 + l2[w, None] * p1p2
            c1 = C1[w].copy()
            sv = np.full((k, 3), np.nan)
            rows = np.arange(k)

            # ---- cutting plane: choose the surface point c1 ----
            r1r2 = r2 - r1
            mu = np.abs(_unit_or_zero(p1p2))
            t = (0.0 - r1) / r1r2
            t_sv = r1[:, None, :] + t[:, :, None] * r1r2[:, None, :]  # (k, axis, 3)
            t_c1 = np.empty((k, 3, 3))
            for i in range(3):
                t_c1[:, i], _ = _closest_on_ellipsoid(a, dims, t_sv[:, i], axis=i)
            best = np.argmax(mu, axis=1)
            mub = mu[rows, best]
            tb = t[rows, best]
            fan_weight = np.full(k, -np.inf)

            if meth in ("hybrid", "axial"):
                if meth == "hybrid":
                    s = np.ones(k)
                    lo = tb < _SV_BOUNDARY_BLEND
                    hi = tb > 1.0 - _SV_BOUNDARY_BLEND
                    s = np.where(hi, (1.0 - tb) / _SV_BOUNDARY_BLEND, s)
                    s = np.where(lo, tb / _SV_BOUNDARY_BLEND, s)
                    s = np.where((tb < 0.0) | (tb > 1.0), 0.0, s)
                    adj = (mub > _MU_BLEND_MIN) & (s < 1.0)
                    mub = np.where(adj, _MU_BLEND_MIN + s * (mub - _MU_BLEND_MIN), mub)
                frans = np.ones(k, dtype=bool) if meth == "axial" else mub > _MU_BLEND_MIN
                c1[frans] = t_c1[rows, best][frans]
                sv[frans] = t_sv[rows, best][frans]

                if meth == "hybrid":
                    fan = np.nonzero(mub < _MU_BLEND_MAX)[0]
                    if fan.size:
                        mid = r1[fan] + 0.5 * r1r2[fan]
                        vsum = _fan_direction(a, dims, r1[fan], r1r2[fan], t_c1[fan, 0])
                        tc0 = mid + vsum
                        only = mub[fan] <= _MU_BLEND_MIN
                        g = fan[only]
                        if g.size:
                            c1[g], okg = _closest_on_ellipsoid(a, dims, tc0[only], prev=c1[g])
                            failed[w[g]] |= ~okg
                            sv[g] = mid[only]
                            fan_weight[g] = 1.0
                        g = fan[~only]
                        if g.size:
                            tt = (mub[g] - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN)
                            omt = 1.0 - tt
                            tc1_1, _ = _closest_on_ellipsoid(a, dims, tc0[~only], prev=t_c1[g, 1])
                            tc2 = tt[:, None] * c1[g] + omt[:, None] * tc1_1
                            sv[g] = tt[:, None] * sv[g] + omt[:, None] * mid[~only]
                            c1[g], okg = _closest_on_ellipsoid(a, dims, tc2, prev=c1[g])
                            failed[w[g]] |= ~okg
                            fan_weight[g] = omt
            else:  # midpoint
                sv = r1 + 0.5 * (r2 - r1)
                c1, okg = _closest_on_ellipsoid(a, dims, sv, prev=c1)
                failed[w] |= ~okg

            # Start the tangent iterations at c1 (axial: only if its sv lies on the chord).
            use_c1 = np.ones(k, dtype=bool) if meth != "axial" else (tb > 0.0) & (tb < 1.0)
            start1 = np.where(use_c1[:, None], c1, r1)
            start2 = np.where(use_c1[:, None], c1, r2)

            # ---- quadrant: bring c1 to the active side ----
            if wrap_sign != 0:
                dist = c1[:, wrap_axis] - 0.0
                flip = np.nonzero(np.where(dist >= 0.0, 1, -1) != wrap_sign)[0]
                if flip.size:
                    orig = c1[flip, wrap_axis].copy()
                    c1[flip, wrap_axis] = -c1[flip, wrap_axis]
                    start1[flip] = c1[flip]
                    start2[flip] = c1[flip]
                    # OpenSim's "fan weight unset" test compares -inf with -inf through
                    # a difference (NaN), so it never fires: unset weights stay -inf.
                    fw = np.minimum(fan_weight[flip], 1.0)
                    pos = fw > 0.0
                    if pos.any():
                        g = flip[pos]
                        cf = c1[g, wrap_axis]
                        bis = (orig[pos] + cf) / 2.0
                        c1[g, wrap_axis] = cf + fw[pos] * (bis - cf)
                        c1[g], _ = _closest_on_ellipsoid(a, dims, c1[g], prev=c1[g])

            # ---- the plane through p1, p2, c1; tangent points ----
            vs = _unit_or_zero(_cross(p1p2, p1 - c1))
            vs4 = -_dot(vs, c1)
            rt, conv = _tangent_points(np.concatenate([p1e, p2e]), np.concatenate([start1, start2]),
                                 np.concatenate([p1, p2]), np.concatenate([vs, vs]),
                                 np.concatenate([vs4, vs4]), a)
            r1, r2 = rt[:k], rt[k:]
            tconv[w] = np.stack([conv[:k], conv[k:]], axis=1)

            # ---- polyline, with the wrong-way check for a constrained quadrant ----
            fside = np.zeros(k, dtype=bool)
            pts, npts, length = _polyline(r1, r2, a, vs, vs4, factor, fside)
            if wrap_sign != 0:
                chk = np.nonzero(npts > 2)[0]
                if chk.size:
                    w1 = pts[chk, 1]
                    w2 = pts[chk, npts[chk] - 2]
                    d1 = _dot(_unit_or_zero(p1[chk] - r1[chk]), _unit_or_zero(w1 - r1[chk]))
                    d2 = _dot(_unit_or_zero(p2[chk] - r2[chk]), _unit_or_zero(w2 - r2[chk]))
                    redo = chk[(d1 > 0.0) | (d2 > 0.0)]
                    if redo.size:
                        fside[redo] = True
                        pts_f, npts_f, len_f = _polyline(r1[redo], r2[redo], a, vs[redo], vs4[redo],
                                                         factor, fside[redo], width=pts.shape[1])
                        pts[redo], npts[redo], length[redo] = pts_f, npts_f, len_f

            # OpenSim returns mandatoryWrap here; without polyline points (NaN
            # chord) the path nevertheless stays straight.
            has_pts = npts > 0
            status[w] = np.where(has_pts, WrapStatus.MANDATORY_WRAP, WrapStatus.NO_WRAP)
            raw[w] = WrapStatus.MANDATORY_WRAP
            g = w[has_pts]
            L[g] = length[has_pts] / factor
            R1[g] = r1[has_pts] / factor
            R2[g] = r2[has_pts] / factor
            npts_out[g] = npts[has_pts]
            if keep_points:
                pts_out = np.full((n, pts.shape[1], 3), np.nan)
                keep = np.arange(pts.shape[1])[None, :] < npts[has_pts, None]
                pts_out[g] = np.where(keep[..., None], pts[has_pts] * (1.0 / factor), np.nan)
            C1[w] = c1
            SV[w] = sv
            plane[w, :3] = vs
            plane[w, 3] = vs4
            far[w] = fside
        return self._details(status, raw, R1, R2, L, C1, SV, plane, far, pts_out, npts_out, failed, tconv)

    @staticmethod
    def _details(status, raw, R1, R2, L, C1, SV, plane, far, pts, npts, failed, tconv):
        res = WrapSegmentResult(status=status, r1=R1, r2=R2, length=L,
                                raw_status=None if np.array_equal(raw, status) else raw)
        return EllipsoidWrapDetails(res, C1, SV, plane, far, pts, npts, failed, tconv)
