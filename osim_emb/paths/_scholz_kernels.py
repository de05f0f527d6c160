"""Compiled (numba) Scholz2015GeometryPath evaluation for :mod:`osim_emb.paths.scholz`: the closed-form path over a
sphere or a cylinder (one row), and a whole unit whose spans hold at most one obstacle each (point positions,
each span's path -- closed form, or the integrated geodesic of :mod:`osim_emb.paths._geodesic_kernels` --, the
length and the effective-point sequence the moment-arm kernel reads), row by row."""

from __future__ import annotations

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.paths._geodesic_kernels import _add, _cross, _dot, _norm, _row, _put, _scale, _sub, _unit
from osim_emb.paths._geodesic_kernels import surface_path_row

__all__ = ["SPHERE", "CYLINDER", "ELLIPSOID", "TORUS", "obstacle_path_batch", "wrap_sense_batch", "unit_batch",
           "span_batch"]

#: obstacle codes (ellipsoids and tori: the geodesic kernels' surface codes + 2)
SPHERE, CYLINDER, ELLIPSOID, TORUS = 0, 1, 2, 3
_KW = dict(cache=True, error_model="numpy")


@njit(**_KW)
def _flat(cylinder, x):
    return (x[0], x[1], 0.0) if cylinder else x


@njit(**_KW)
def _plane_normal(cylinder, q1, q2):
    """Unit normal of the plane of the circle problem, turning q1 towards q2 the short way (obstacle frame)."""
    if cylinder:
        return (0.0, 0.0, 1.0 if _cross(q1, q2)[2] >= 0 else -1.0)
    n = _cross(q1, q2)
    size = _norm(q1)
    if not _norm(n) > 1e-14 * size ** 2:  # q1, O, q2 in line: any plane through them
        n = _cross(q1, (1.0, 0.0, 0.0) if abs(q1[0]) < 0.9 * size else (0.0, 1.0, 0.0))
    return _unit(n)


@njit(**_KW)
def _short_side(cylinder, hint, has_hint, p1, p2):
    """Whether the hint lies on the side of the centre (axis) that the segment p1 p2 passes (always without a
    hint): the point of the (projected) segment nearest the centre, against the (projected) hint."""
    if not has_hint:
        return True
    q1, q2 = _flat(cylinder, p1), _flat(cylinder, p2)
    d = _sub(q2, q1)
    dd = _dot(d, d)
    s = min(max(-_dot(q1, d) / (dd if dd > 0 else 1.0), 0.0), 1.0)
    return _dot(_add(q1, _scale(d, s)), _flat(cylinder, hint)) >= 0.0


@njit(**_KW)
def _wrap_sense(cylinder, hint, has_hint, p1, p2):
    n = _plane_normal(cylinder, _flat(cylinder, p1), _flat(cylinder, p2))
    return n if _short_side(cylinder, hint, has_hint, p1, p2) else _scale(n, -1.0)


@njit(**_KW)
def closed_form_row(cylinder, radius, hint, has_hint, p1, p2, sense, has_sense):
    """The path p1 -> sphere or cylinder -> p2 (obstacle frame, 3-tuples): (length, t1, t2, wrapped, inside).

    The turning axis from the hint (:func:`_wrap_sense`) or, with ``has_sense``, the plane's normal on the side of
    ``sense``; tangent points and arc of the circle problem (in the xy projection for a cylinder, the height then
    linear in the projected arc length: a helix)."""
    nan3 = (np.nan, np.nan, np.nan)
    q1, q2 = _flat(cylinder, p1), _flat(cylinder, p2)
    d1, d2 = _norm(q1), _norm(q2)
    if d1 < radius or d2 < radius:
        return np.nan, nan3, nan3, False, True
    if has_sense:
        n = _plane_normal(cylinder, q1, q2)
        normal = n if _dot(n, sense) >= 0 else _scale(n, -1.0)
    else:
        normal = _wrap_sense(cylinder, hint, has_hint, p1, p2)
    u1, u2 = _scale(q1, 1.0 / d1), _scale(q2, 1.0 / d2)
    a1 = np.arccos(min(max(radius / d1, -1.0), 1.0))
    a2 = np.arccos(min(max(radius / d2, -1.0), 1.0))
    angle = np.mod(np.arctan2(_dot(_cross(u1, u2), normal), _dot(u1, u2)), 2 * np.pi)
    theta = angle - a1 - a2
    t1 = _scale(_add(_scale(u1, np.cos(a1)), _scale(_cross(normal, u1), np.sin(a1))), radius)
    t2 = _scale(_sub(_scale(u2, np.cos(a2)), _scale(_cross(normal, u2), np.sin(a2))), radius)
    if not theta > 0:
        return _norm(_sub(p2, p1)), nan3, nan3, False, False
    s1 = _norm(_sub(t1, q1))
    s2 = _norm(_sub(q2, t2))
    arc = radius * theta
    if cylinder:
        planar = s1 + arc + s2
        dz = p2[2] - p1[2]
        safe = planar if planar > 0 else 1.0
        t1 = (t1[0], t1[1], p1[2] + dz * s1 / safe)
        t2 = (t2[0], t2[1], p1[2] + dz * (s1 + arc) / safe)
        return np.hypot(planar, dz), t1, t2, True, False
    return s1 + arc + s2, t1, t2, True, False


@njit(**_KW)
def obstacle_path_batch(cylinder, radius, hint, p1, p2, sense, has_sense):
    """:func:`closed_form_row` over the rows of p1, p2 (N, 3) (hint (3,), NaN: none; sense (N, 3), read with
    ``has_sense``): (length, t1, t2, wrapped, inside)."""
    n = p1.shape[0]
    length = np.empty(n)
    t1, t2 = np.empty((n, 3)), np.empty((n, 3))
    wrapped, inside = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    has_hint = not (np.isnan(hint[0]) or np.isnan(hint[1]) or np.isnan(hint[2]))
    h = (hint[0], hint[1], hint[2])
    for i in range(n):
        length[i], a, b, wrapped[i], inside[i] = closed_form_row(cylinder, radius, h, has_hint, _row(p1, i),
                                                                 _row(p2, i), _row(sense, i), has_sense)
        _put(t1, i, a)
        _put(t2, i, b)
    return length, t1, t2, wrapped, inside


@njit(**_KW)
def wrap_sense_batch(cylinder, hint, p1, p2):
    """(N, 3) the axis about which each path p1 -> obstacle -> p2 turns, and (N,) whether that is the short side."""
    n = p1.shape[0]
    out = np.empty((n, 3))
    short = np.empty(n, dtype=np.bool_)
    has_hint = not (np.isnan(hint[0]) or np.isnan(hint[1]) or np.isnan(hint[2]))
    h = (hint[0], hint[1], hint[2])
    for i in range(n):
        _put(out, i, _wrap_sense(cylinder, h, has_hint, _row(p1, i), _row(p2, i)))
        short[i] = _short_side(cylinder, h, has_hint, _row(p1, i), _row(p2, i))
    return out, short


@njit(**_KW)
def _apply(t, b, loc):
    """t (4, 4) of body b applied to a point: R loc + o."""
    return (t[b, 0, 0] * loc[0] + t[b, 0, 1] * loc[1] + t[b, 0, 2] * loc[2] + t[b, 0, 3],
            t[b, 1, 0] * loc[0] + t[b, 1, 1] * loc[1] + t[b, 1, 2] * loc[2] + t[b, 1, 3],
            t[b, 2, 0] * loc[0] + t[b, 2, 1] * loc[1] + t[b, 2, 2] * loc[2] + t[b, 2, 3])


# -- several obstacles on one span: Newton's method over the points between them ----------------------------

@njit(**_KW)
def _to_frame(rot, org, x):
    d = _sub(x, org)
    return (rot[0, 0] * d[0] + rot[1, 0] * d[1] + rot[2, 0] * d[2],
            rot[0, 1] * d[0] + rot[1, 1] * d[1] + rot[2, 1] * d[2],
            rot[0, 2] * d[0] + rot[1, 2] * d[1] + rot[2, 2] * d[2])


@njit(**_KW)
def _from_frame(rot, org, x):
    return (rot[0, 0] * x[0] + rot[0, 1] * x[1] + rot[0, 2] * x[2] + org[0],
            rot[1, 0] * x[0] + rot[1, 1] * x[1] + rot[1, 2] * x[2] + org[1],
            rot[2, 0] * x[0] + rot[2, 1] * x[1] + rot[2, 2] * x[2] + org[2])


@njit(**_KW)
def _obstacle_in_ground(kind, radius, c, hint, has_hint, rot, org, a, b, sense, has_sense, steps):
    """One obstacle's part between ground points a, b: (length, t1, t2 (ground; NaN where straight), wrapped,
    status, mismatch); ``sense`` (obstacle frame) read with ``has_sense`` by spheres and cylinders."""
    p1, p2 = _to_frame(rot, org, a), _to_frame(rot, org, b)
    if kind == SPHERE or kind == CYLINDER:
        length, t1, t2, wrapped, inside = closed_form_row(kind == CYLINDER, radius, hint, has_hint, p1, p2, sense,
                                                          has_sense)
        code, worst = (1 if inside else 0), 0.0
    else:
        length, t1, t2, wrapped, code, worst = surface_path_row(kind - ELLIPSOID, c, radius, hint, has_hint, p1, p2,
                                                                1e-11, 60, steps)
    return length, _from_frame(rot, org, t1), _from_frame(rot, org, t2), wrapped, code, worst


@njit(**_KW)
def _span_evaluate(x, a, b, rot, org, kinds, radii, consts, hints, has_hints, senses, has_sense, centres, bases,
                   ends, lengths, t1, t2, wrapped, grad, steps):
    """The span at the free points x (k - 1 points, 2 coordinates each in their planes): fills ends, each
    obstacle's part and dL/dx; returns (total length, status, mismatch, failing obstacle)."""
    k = kinds.shape[0]
    _put(ends, 0, a)
    _put(ends, k, b)
    for j in range(k - 1):
        e0 = centres[j, 0] + bases[j, 0, 0] * x[2 * j] + bases[j, 0, 1] * x[2 * j + 1]
        e1 = centres[j, 1] + bases[j, 1, 0] * x[2 * j] + bases[j, 1, 1] * x[2 * j + 1]
        e2 = centres[j, 2] + bases[j, 2, 0] * x[2 * j] + bases[j, 2, 1] * x[2 * j + 1]
        ends[j + 1, 0], ends[j + 1, 1], ends[j + 1, 2] = e0, e1, e2
    total = 0.0
    for i in range(k):
        h = (hints[i, 0], hints[i, 1], hints[i, 2])
        s = (senses[i, 0], senses[i, 1], senses[i, 2])
        length, c1, c2, w, code, worst = _obstacle_in_ground(kinds[i], radii[i], consts[i], h, has_hints[i], rot[i],
                                                             (org[i, 0], org[i, 1], org[i, 2]), _row(ends, i),
                                                             _row(ends, i + 1), s, has_sense, steps)
        if code != 0:
            return total, code, worst, i
        lengths[i], wrapped[i] = length, w
        _put(t1, i, c1)
        _put(t2, i, c2)
        total += length
    for j in range(1, k):
        last = _row(t2, j - 1) if wrapped[j - 1] else _row(ends, j - 1)
        first = _row(t1, j) if wrapped[j] else _row(ends, j + 1)
        mid = _row(ends, j)
        g = _sub(_unit(_sub(mid, last)), _unit(_sub(first, mid)))
        for m in range(2):
            grad[2 * (j - 1) + m] = bases[j - 1, 0, m] * g[0] + bases[j - 1, 1, m] * g[1] + bases[j - 1, 2, m] * g[2]
    return total, 0, 0.0, -1


@njit(**_KW)
def _span_row(a, b, rot, org, kinds, radii, consts, hints, mode, tolerance, max_iterations, steps):
    """Newton's method for one configuration of :func:`osim_emb.paths.scholz.span_paths` (mode 0 'shortest', 1
    'fixed', 2 'per_step'): (total length, lengths (k,), t1, t2 (k, 3), wrapped (k,), ends (k + 1, 3), converged,
    status, mismatch, failing obstacle)."""
    k = kinds.shape[0]
    d = 2 * (k - 1)
    has_hints = np.empty(k, dtype=np.bool_)
    for i in range(k):
        has_hints[i] = not (np.isnan(hints[i, 0]) or np.isnan(hints[i, 1]) or np.isnan(hints[i, 2]))
    centres = np.empty((k - 1, 3))
    bases = np.empty((k - 1, 3, 2))
    for j in range(k - 1):
        oa, ob = _row(org, j), _row(org, j + 1)
        dv = _sub(ob, oa)
        dist = _norm(dv)
        e = _scale(dv, 1.0 / dist)
        ra, rb = radii[j], radii[j + 1]
        cj = _add(oa, _scale(e, ra + 0.5 * (dist - ra - rb)))
        helper = (1.0, 0.0, 0.0) if abs(e[0]) < 0.9 else (0.0, 1.0, 0.0)
        u = _unit(_cross(e, helper))
        v = _cross(e, u)
        _put(centres, j, cj)
        for r in range(3):
            bases[j, r, 0], bases[j, r, 1] = u[r], v[r]
    senses = np.zeros((k, 3))
    if mode == 1:  # each obstacle's side, once: the hint against the segment between its neighbours' hints
        around = np.empty((k + 2, 3))
        _put(around, 0, a)
        _put(around, k + 1, b)
        for i in range(k):
            hz = (0.0 if np.isnan(hints[i, 0]) else hints[i, 0], 0.0 if np.isnan(hints[i, 1]) else hints[i, 1],
                  0.0 if np.isnan(hints[i, 2]) else hints[i, 2])
            _put(around, i + 1, _from_frame(rot[i], _row(org, i), hz))
        for i in range(k):
            h = (hints[i, 0], hints[i, 1], hints[i, 2])
            _put(senses, i, _wrap_sense(kinds[i] == CYLINDER, h, has_hints[i],
                                        _to_frame(rot[i], _row(org, i), _row(around, i)),
                                        _to_frame(rot[i], _row(org, i), _row(around, i + 2))))
    has_sense = mode == 1
    shortest = mode == 0
    x = np.zeros(d)
    ends, lengths = np.empty((k + 1, 3)), np.empty(k)
    t1, t2, wrapped = np.empty((k, 3)), np.empty((k, 3)), np.empty(k, dtype=np.bool_)
    grad = np.empty(d)
    total, code, worst, bad = _span_evaluate(x, a, b, rot, org, kinds, radii, consts, hints, has_hints, senses,
                                             has_sense, centres, bases, ends, lengths, t1, t2, wrapped, grad, steps)
    if code != 0:
        return total, lengths, t1, t2, wrapped, ends, False, code, worst, bad
    # work arrays of the trial points and the finite differences
    ends_t, lengths_t = np.empty_like(ends), np.empty_like(lengths)
    t1_t, t2_t, wrapped_t = np.empty_like(t1), np.empty_like(t2), np.empty_like(wrapped)
    grad_t, gp, gm = np.empty(d), np.empty(d), np.empty(d)
    scratch = (np.empty_like(ends), np.empty_like(lengths), np.empty_like(t1), np.empty_like(t2),
               np.empty_like(wrapped))
    h = 1e-7
    hess = np.empty((d, d))
    for _ in range(max_iterations):
        if np.abs(grad).max() < tolerance:
            break
        for col in range(d):
            for sign in range(2):
                xs = x.copy()
                xs[col] += h if sign == 0 else -h
                _, code, worst, bad = _span_evaluate(xs, a, b, rot, org, kinds, radii, consts, hints, has_hints,
                                                     senses, has_sense, centres, bases, scratch[0], scratch[1],
                                                     scratch[2], scratch[3], scratch[4], gp if sign == 0 else gm,
                                                     steps)
                if code != 0:
                    return total, lengths, t1, t2, wrapped, ends, False, code, worst, bad
            for r in range(d):
                hess[r, col] = (gp[r] - gm[r]) / (2 * h)
        hess = 0.5 * (hess + hess.T)
        lam, vec = np.linalg.eigh(hess)
        for r in range(d):
            if shortest:
                lam[r] = max(abs(lam[r]), 1e-6)
            elif not abs(lam[r]) > 1e-9:
                lam[r] = 1e-9
        w = np.zeros(d)
        for r in range(d):
            for q in range(d):
                w[r] += vec[q, r] * grad[q]
            w[r] /= lam[r]
        step = np.zeros(d)
        for r in range(d):
            for q in range(d):
                step[r] -= vec[r, q] * w[q]
        size = np.sqrt(np.sum(grad * grad))
        descent = -np.sum(grad * step)
        scale = 1.0
        total_t = total
        xt = x.copy()
        for _ in range(30):  # backtracking
            xt = x + scale * step
            total_t, code, worst, bad = _span_evaluate(xt, a, b, rot, org, kinds, radii, consts, hints, has_hints,
                                                       senses, has_sense, centres, bases, ends_t, lengths_t, t1_t,
                                                       t2_t, wrapped_t, grad_t, steps)
            if code != 0:
                return total, lengths, t1, t2, wrapped, ends, False, code, worst, bad
            worse = np.sqrt(np.sum(grad_t * grad_t)) > size * (1 - 1e-4 * scale)
            if shortest:  # a decrease of L, or of the mismatch once L is flat to round-off
                worse = worse and total_t > total - 1e-4 * scale * descent
            worse = worse and size > tolerance
            if not worse:
                break
            scale = 0.5 * scale
        x = xt
        total = total_t
        ends[:] = ends_t
        lengths[:] = lengths_t
        t1[:] = t1_t
        t2[:] = t2_t
        wrapped[:] = wrapped_t
        grad[:] = grad_t
    return total, lengths, t1, t2, wrapped, ends, np.abs(grad).max() < tolerance, 0, 0.0, -1


@njit(**_KW)
def span_batch(a, b, rot, org, kinds, radii, consts, hints, shortest, tolerance, max_iterations, steps):
    """:func:`_span_row` over the rows of a, b (N, 3) (rot (k, N, 3, 3), org (k, N, 3)): mode 'shortest', or
    'fixed' and, where that does not converge, 'per_step' from the start again.  (length (N,), lengths (N, k), t1,
    t2 (N, k, 3), wrapped (N, k), ends (N, k + 1, 3), converged (N,), status (N,), mismatch (N,), obstacle (N,))."""
    n, k = a.shape[0], kinds.shape[0]
    length, lengths = np.empty(n), np.empty((n, k))
    t1, t2, wrapped = np.empty((n, k, 3)), np.empty((n, k, 3)), np.zeros((n, k), dtype=np.bool_)
    ends = np.empty((n, k + 1, 3))
    done = np.zeros(n, dtype=np.bool_)
    status, mismatch, failed = np.zeros(n, dtype=np.int64), np.zeros(n), np.full(n, -1, dtype=np.int64)
    rot_i = np.empty((k, 3, 3))
    org_i = np.empty((k, 3))
    for i in range(n):
        for o in range(k):
            rot_i[o] = rot[o, i]
            org_i[o] = org[o, i]
        a_i, b_i = _row(a, i), _row(b, i)
        for mode in (0, 1, 2):
            if (mode == 0) != shortest:
                continue
            out = _span_row(a_i, b_i, rot_i, org_i, kinds, radii, consts, hints, mode, tolerance, max_iterations, steps)
            length[i], lengths[i], t1[i], t2[i], wrapped[i], ends[i] = out[0], out[1], out[2], out[3], out[4], out[5]
            done[i], status[i], mismatch[i], failed[i] = out[6], out[7], out[8], out[9]
            if done[i] or status[i] != 0 or mode == 0:
                break
    return length, lengths, t1, t2, wrapped, ends, done, status, mismatch, failed


@njit(**_KW)
def unit_batch(bt, element_is_point, element_body, point_location, obstacle_transform, obstacle_kind,
               obstacle_radius, obstacle_constants, obstacle_hint, span_tolerance, span_iterations, steps):
    """One unit's path at each configuration (``bt`` (N, B, 4, 4): the bodies' frames in ground): (length (N,),
    positions (N, S, 3) of its slots (a point: one; an obstacle: its two contact points, NaN where it is not
    touched), seq (N, S) the active slots in path order (-1 padded), the positions gathered along seq (N, S, 3),
    status (N,), mismatch (N,), failing element (N,)).  A span with one obstacle: its path
    (:func:`_obstacle_in_ground`); with several: :func:`_span_row` (``span_tolerance``, ``span_iterations``).
    ``status``: 1 an end point inside an obstacle, 2 and 3 the geodesic's failures
    (:mod:`osim_emb.paths._geodesic_kernels`), 4 Newton's method over the points between obstacles did not
    converge, 5 a point between two obstacles off the path between them; the caller raises."""
    n = bt.shape[0]
    n_el = element_is_point.shape[0]
    n_slots = 0
    for e in range(n_el):
        n_slots += 1 if element_is_point[e] else 2
    length = np.zeros(n)
    positions = np.full((n, n_slots, 3), np.nan)
    seq = np.full((n, n_slots), -1, dtype=np.int64)
    status = np.zeros(n, dtype=np.int64)
    mismatch = np.zeros(n)
    failed = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        t = bt[i]
        slot, count = 0, 0
        have_start, first_ob, n_ob, first_slot = False, -1, 0, 0
        a = (0.0, 0.0, 0.0)
        for e in range(n_el):
            if not element_is_point[e]:
                if n_ob == 0:
                    first_ob, first_slot = e, slot
                n_ob += 1
                slot += 2
                continue
            pos = _apply(t, element_body[e], (point_location[e, 0], point_location[e, 1], point_location[e, 2]))
            if have_start and n_ob == 0:
                length[i] += _norm(_sub(pos, a))
            elif have_start:
                rot = np.empty((n_ob, 3, 3))
                org = np.empty((n_ob, 3))
                for o in range(n_ob):
                    tf, bo = obstacle_transform[first_ob + o], element_body[first_ob + o]
                    for r in range(3):
                        for k in range(3):
                            rot[o, r, k] = t[bo, r, 0] * tf[0, k] + t[bo, r, 1] * tf[1, k] + t[bo, r, 2] * tf[2, k]
                    _put(org, o, _apply(t, bo, (tf[0, 3], tf[1, 3], tf[2, 3])))
                t1, t2, wrapped = np.empty((n_ob, 3)), np.empty((n_ob, 3)), np.zeros(n_ob, dtype=np.bool_)
                code, worst, bad = 0, 0.0, first_ob
                if n_ob == 1:
                    hint = (obstacle_hint[first_ob, 0], obstacle_hint[first_ob, 1], obstacle_hint[first_ob, 2])
                    has_hint = not (np.isnan(hint[0]) or np.isnan(hint[1]) or np.isnan(hint[2]))
                    span, c1, c2, touched, code, worst = _obstacle_in_ground(
                        obstacle_kind[first_ob], obstacle_radius[first_ob], obstacle_constants[first_ob], hint,
                        has_hint, rot[0], _row(org, 0), a, pos, a, False, steps)
                    _put(t1, 0, c1)
                    _put(t2, 0, c2)
                    wrapped[0] = touched
                else:
                    last = first_ob + n_ob
                    shortest = True
                    for o in range(first_ob, last):
                        for r in range(3):
                            if not np.isnan(obstacle_hint[o, r]):
                                shortest = False
                    span, ends, done = 0.0, np.empty((n_ob + 1, 3)), False
                    for mode in (0, 1, 2):
                        if (mode == 0) != shortest:
                            continue
                        out = _span_row(a, pos, rot, org, obstacle_kind[first_ob:last], obstacle_radius[first_ob:last],
                                        obstacle_constants[first_ob:last], obstacle_hint[first_ob:last], mode,
                                        span_tolerance, span_iterations, steps)
                        span, t1, t2, wrapped, ends, done = out[0], out[2], out[3], out[4], out[5], out[6]
                        code, worst, bad = out[7], out[8], first_ob + out[9]
                        if done or code != 0 or mode == 0:
                            break
                    if code == 0 and not done:
                        code = 4
                    for j in range(1, n_ob):  # the free points lie on the straight segments between obstacles
                        if code != 0:
                            break
                        before = _row(t2, j - 1) if wrapped[j - 1] else _row(ends, j - 1)
                        after = _row(t1, j) if wrapped[j] else _row(ends, j + 1)
                        if _dot(_sub(_row(ends, j), before), _sub(after, _row(ends, j))) < -1e-12:
                            code = 5
                if code != 0:
                    status[i], mismatch[i], failed[i] = code, worst, bad
                    break
                length[i] += span
                for o in range(n_ob):
                    if wrapped[o]:
                        for side in range(2):
                            s_ = first_slot + 2 * o + side
                            positions[i, s_, 0], positions[i, s_, 1], positions[i, s_, 2] = (
                                _row(t1, o) if side == 0 else _row(t2, o))
                            seq[i, count] = s_
                            count += 1
            positions[i, slot, 0], positions[i, slot, 1], positions[i, slot, 2] = pos
            seq[i, count] = slot
            count += 1
            slot += 1
            a, have_start, n_ob = pos, True, 0
    gathered = np.empty_like(positions)  # the positions along seq (slot 0 where seq is -1), as geometry._gather
    for i in range(n):
        for k in range(n_slots):
            j = max(seq[i, k], 0)
            gathered[i, k, 0], gathered[i, k, 1], gathered[i, k, 2] = (positions[i, j, 0], positions[i, j, 1],
                                                                       positions[i, j, 2])
    return length, positions, seq, gathered, status, mismatch, failed
