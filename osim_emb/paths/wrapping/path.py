"""Path-level wrapping: OpenSim 4.6's GeometryPath algorithm, vectorized over configurations.

``wrap_path`` takes, for N configurations, the ground positions of all points of a
path's PathPointSet, which conditional points are active, and the ground
transform of each wrap object's frame, and builds the wrapped path exactly as
OpenSim's GeometryPath::computePath / applyWrapObjects does:

* The path starts as the active points, in order.
* Passes over the PathWraps (one pass with one PathWrap, else up to 8; a pass
  stops the loop when the path length changed by less than 5e-4 m from the
  previous pass).  For each PathWrap, in the current order:
    - its two tangent points are taken out of the path;
    - its ``range`` (1-based indices into the full PathPointSet, < 1 = first/last)
      is narrowed to the first and last *active* points in it; if there is none,
      OpenSim abandons the whole wrapping step (the path is left as it is);
    - every segment of the current path between those two points (which may
      include other wrap objects' tangent points) is wrapped, except a segment
      joining two tangent points of the same wrap object; the first segment that
      returns MANDATORY_WRAP is taken; otherwise among the WRAPPED segments the one
      that lengthens the path least (|P1 r1| + arc + |r2 P2| - |P1 P2|), first
      one on ties;
    - the chosen tangent points are inserted between that segment's ends.
* After the first pass, if the first PathWrap's last tried segment returned
  NO_WRAP and the second's INSIDE_RADIUS, the first two PathWraps swap places
  (and the first one's tangent points leave the path).
* The length sums the straight segments, except r1 -> r2 of one wrap object,
  which counts the wrap length.

Wrap points and the stale cache (``opensim_compat``)
-----------------------------------------------------
A tangent point is an OpenSim ``Point``; ``Point::getLocationInGround`` caches its
ground position the first time it is asked for in a pose (a Position-stage cache
variable), and applyWrapObjects never invalidates it when a later pass moves the
point (``PathWrapPoint::setLocation`` only updates the local location).  The
wrapping itself uses fresh positions (``WrapObject::wrapPathSegment`` reads
``getLocation``), but two places read the cached ground position:

* ``GeometryPath::calcLengthAfterPathComputation`` -- the pass-end lengths
  (hence the 5e-4 m convergence test) and the final length;
* ``GeometryPath::calcPathLengthChange`` (through ``Point::calcDistanceBetween``)
  -- the choice between several WRAPPED segments.

A tangent point is first asked for at the end of the first pass in which it is in
the path (or just before, by another wrap's calcPathLengthChange, with the same
value), so with two or more wrap objects whose tangent points move between passes
OpenSim sums straight segments to *old* tangent points with the *new* wrap
lengths.  ``opensim_compat=True`` reproduces this (each tangent point keeps the
ground position it had when first queried); the default uses the current
positions everywhere, i.e. the length of the path OpenSim actually reports in
``getCurrentPath``.

Objects' previous-call state: OpenSim's PathWrap keeps the previous wrap result;
for spheres, cylinders and tori it never reaches the output (see
``docs/wrapping.md``); ellipsoids are called here as a freshly constructed
PathWrap would call them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.paths.wrapping.base import WrapObject, WrapStatus

__all__ = ["PathWrapSpec", "WrappedPath", "wrap_path", "MAX_PASSES", "CONVERGENCE_TOL"]

MAX_PASSES = 8
CONVERGENCE_TOL = 0.0005


@dataclass(frozen=True)
class PathWrapSpec:
    """One <PathWrap> of a GeometryPath."""

    wrap_object: WrapObject
    method: str = "hybrid"  # hybrid | midpoint | axial (used by ellipsoids)
    range: tuple[int, int] = (-1, -1)  # 1-based PathPointSet indices; < 1: first / last point


@dataclass
class WrappedPath:
    """Wrapped paths of N configurations (P path points, W PathWraps, S = P + 2W)."""

    sequence: np.ndarray  # (N, S) int: path point p in [0, P) or P + 2w (+0: r1, +1: r2); -1 pads
    tangent_points: np.ndarray  # (N, W, 2, 3) r1, r2 in the wrap object's frame (NaN if not in the path)
    wrap_length: np.ndarray  # (N, W) surface length r1 -> r2 (0 where not wrapped)
    wrapped: np.ndarray  # (N, W) bool
    length: np.ndarray  # (N,) total path length
    passes: np.ndarray = field(default=None)  # (N,) number of passes made over the PathWraps
    #: (N, W, 2, 3) ground positions of the tangent points as OpenSim's getLocationInGround returns them
    #: (compat mode: the stale first-queried values; default mode: None, i.e. the current positions)
    queried_ground: np.ndarray | None = None

    def tangent_points_in_ground(self, wrap_to_ground: np.ndarray) -> np.ndarray:
        """(N, W, 2, 3) tangent points in ground (NaN where not in the path)."""
        R = wrap_to_ground[..., :3, :3]
        t = wrap_to_ground[..., :3, 3]
        return np.einsum("nwij,nwkj->nwki", R, self.tangent_points) + t[:, :, None, :]

    def points_in_ground(self, points_ground: np.ndarray, wrap_to_ground: np.ndarray) -> np.ndarray:
        """(N, S, 3) ground positions along ``sequence`` (NaN in the padding)."""
        n = self.sequence.shape[0]
        tg = self.tangent_points_in_ground(wrap_to_ground).reshape(n, -1, 3)
        allp = np.concatenate([points_ground, tg], axis=1)
        seq = self.sequence
        out = np.take_along_axis(allp, np.clip(seq, 0, None)[..., None], axis=1)
        out[seq < 0] = np.nan
        return out


def _to_frame(T, g):
    """Ground points g (..., 3) into frames with ground transforms T (..., 4, 4)."""
    R = T[..., :3, :3]
    return np.einsum("...ji,...j->...i", R, g - T[..., :3, 3])


def _from_frame(T, r):
    return np.einsum("...ij,...j->...i", T[..., :3, :3], r) + T[..., :3, 3]


class _Memo:
    def __init__(self, n, s):
        self.ok = np.zeros((n, s, s), dtype=bool)
        self.p1 = np.zeros((n, s, s, 3))
        self.p2 = np.zeros((n, s, s, 3))
        self.r1 = np.zeros((n, s, s, 3))
        self.r2 = np.zeros((n, s, s, 3))
        self.ln = np.zeros((n, s, s))


class _State:
    """The path of each configuration while it is being built."""

    def __init__(self, points_ground, point_active, wrap_to_ground, specs, compat):
        self.pg = points_ground
        self.T = wrap_to_ground
        self.specs = specs
        self.compat = compat
        self.point_active = point_active
        n, p = points_ground.shape[:2]
        w = len(specs)
        self.n, self.P, self.W, self.S = n, p, w, p + 2 * w
        # object identity: two PathWraps on the same wrap object share tangent-point rules
        ids = []
        for s in specs:
            for k, prev in enumerate(specs[: len(ids)]):
                if prev.wrap_object == s.wrap_object:
                    ids.append(ids[k])
                    break
            else:
                ids.append(len(ids))
        # object id of each sequence code (-1 for path points and padding), indexed by code + 1
        self.code_obj = np.full(self.S + 1, -1)
        for k in range(w):
            self.code_obj[1 + p + 2 * k: 1 + p + 2 * k + 2] = ids[k]
        self.seq = np.full((n, self.S), -1)
        act = np.asarray(point_active, dtype=bool)
        order = np.argsort(~act, axis=1, kind="stable")
        cnt = act.sum(axis=1)
        cols = np.arange(self.S)
        self.seq[:, :p] = np.where(cols[None, :p] < cnt[:, None], order, -1)
        self.r = np.full((n, w, 2, 3), np.nan)  # current tangent points, wrap frame
        self.wlen = np.zeros((n, w))
        self.in_path = np.zeros((n, w), dtype=bool)
        self.cache = np.full((n, w, 2, 3), np.nan)  # ground positions as first queried
        self.cached = np.zeros((n, w, 2), dtype=bool)
        self._memo = {}

    def memo(self, w):
        """Finished adjustment-loop wraps of PathWrap w, per configuration and segment (codes a, b)."""
        if w not in self._memo:
            self._memo[w] = _Memo(self.n, self.S)
        return self._memo[w]

    # -- positions -----------------------------------------------------------
    def fresh(self, rows, codes):
        """Current ground positions of sequence codes (R, K) of rows (R,)."""
        P = self.P
        isw = codes >= P
        pc = np.clip(codes, 0, P - 1)
        out = np.take_along_axis(self.pg[rows], pc[..., None], axis=1)
        if isw.any():
            wi = np.where(isw, (codes - P) // 2, 0)
            ki = np.where(isw, (codes - P) % 2, 0)
            rr = np.broadcast_to(rows[:, None], codes.shape)
            g = _from_frame(self.T[rr, wi], self.r[rr, wi, ki])
            out = np.where(isw[..., None], g, out)
        return out

    def query(self, rows, codes, mark):
        """Ground positions as OpenSim's getLocationInGround returns them.

        Fresh positions, or in compat mode the first-queried position of each tangent
        point; tangent points where ``mark`` is True become cached.
        """
        out = self.fresh(rows, codes)
        if not self.compat:
            return out
        P = self.P
        isw = codes >= P
        if not isw.any():
            return out
        wi = np.where(isw, (codes - P) // 2, 0)
        ki = np.where(isw, (codes - P) % 2, 0)
        rr = np.broadcast_to(rows[:, None], codes.shape)
        ok = isw & self.cached[rr, wi, ki]
        out = np.where(ok[..., None], self.cache[rr, wi, ki], out)
        new = isw & mark & ~ok
        if new.any():
            self.cache[rr[new], wi[new], ki[new]] = out[new]
            self.cached[rr[new], wi[new], ki[new]] = True
        return out

    # -- path edits ------------------------------------------------------------
    def remove_wrap(self, rows, w):
        c = self.P + 2 * w
        seq = self.seq[rows]
        drop = (seq == c) | (seq == c + 1)
        if not drop.any():
            return
        order = np.argsort(drop, axis=1, kind="stable")
        seq = np.take_along_axis(seq, order, axis=1)
        seq[np.take_along_axis(drop, order, axis=1)] = -1
        self.seq[rows] = seq

    def insert_wrap(self, rows, w, pos):
        """Insert r1, r2 of wrap w before sequence position pos (R,)."""
        seq = self.seq[rows]
        cols = np.arange(self.S)[None, :]
        pos = pos[:, None]
        src = np.where(cols < pos, cols, cols - 2)
        new = np.take_along_axis(seq, np.clip(src, 0, self.S - 1), axis=1)
        c = self.P + 2 * w
        new = np.where(cols == pos, c, np.where(cols == pos + 1, c + 1, new))
        self.seq[rows] = new

    def same_object_pair(self, a, b):
        oa, ob = self.code_obj[a + 1], self.code_obj[b + 1]
        return (oa >= 0) & (oa == ob)

    # -- length ------------------------------------------------------------------
    def length(self, rows):
        """calcLengthAfterPathComputation for rows (queries every point in the path)."""
        seq = self.seq[rows]
        valid = seq >= 0
        pos = self.query(rows, seq, valid)
        a, b = seq[:, :-1], seq[:, 1:]
        pair = valid[:, :-1] & valid[:, 1:]
        d = np.linalg.norm(pos[:, 1:] - pos[:, :-1], axis=-1)
        arc = self.same_object_pair(a, b)
        P = self.P
        bw = np.where(b >= P, (b - P) // 2, 0)
        bk = np.where(b >= P, (b - P) % 2, 0)
        wl = np.where(bk == 1, self.wlen[rows[:, None], bw], 0.0) if self.W else np.zeros(b.shape)
        seg = np.where(arc, wl, d)
        return np.where(pair, seg, 0.0).sum(axis=1)


class _FullStage:
    """Stage interface around a complete WrapSegmentResult (objects without ``_stage``)."""

    def __init__(self, res):
        self.res = res
        self.code = res.code
        self.status = res.status
        self.needs_loop = np.zeros(res.status.shape, dtype=bool)

    def finish(self, sel):
        return self.res.r1[sel], self.res.r2[sel], self.res.length[sel]


def _stage(obj, p1, p2, method, single_wrap):
    if hasattr(obj, "_stage"):
        return obj._stage(p1, p2, method, single_wrap)
    return _FullStage(obj.wrap_segment_in_path(p1, p2, method, single_wrap=single_wrap))


_PRUNE_MARGIN = 1e-9  # metres; a lower bound above the best change by more than this cannot win


def _apply_one_wrap(st, rows, w, slot, result, alive):
    """One PathWrap's step of applyWrapObjects for configurations ``rows``."""
    spec = st.specs[w]
    obj = spec.wrap_object
    st.remove_wrap(rows, w)
    st.in_path[rows, w] = False
    result[rows, slot] = WrapStatus.NO_WRAP
    if not obj.active:
        return
    P = st.P
    lo, hi = spec.range
    ws = lo - 1 if lo >= 1 else 0
    we = hi - 1 if hi >= 1 else P - 1
    if ws > P - 1 or we > P - 1:
        raise ValueError(f"PathWrap range {spec.range} is outside the path's {P} points")
    if we < ws:
        alive[rows] = False  # OpenSim finds no active point and abandons the wrapping
        return
    act = st.point_active[rows, ws: we + 1]
    has = act.any(axis=1)
    if not has.all():
        alive[rows[~has]] = False
        rows = rows[has]
        act = act[has]
        if rows.size == 0:
            return
    smp = ws + act.argmax(axis=1)
    emp = we - act[:, ::-1].argmax(axis=1)
    seq = st.seq[rows]
    start = (seq == smp[:, None]).argmax(axis=1)
    end = (seq == emp[:, None]).argmax(axis=1)
    nseg = st.S - 1
    j = np.arange(nseg)[None, :]
    a, b = seq[:, :-1], seq[:, 1:]
    valid = (j >= start[:, None]) & (j < end[:, None]) & (b >= 0) & ~st.same_object_pair(a, b)
    ri, ji = np.nonzero(valid)
    if ri.size == 0:
        return
    R = rows.size
    rr = rows[ri]
    g1 = st.fresh(rr, a[ri, ji][:, None])[:, 0]
    g2 = st.fresh(rr, b[ri, ji][:, None])[:, 0]
    Tw = st.T[rr, w]
    stg = _stage(obj, _to_frame(Tw, g1), _to_frame(Tw, g2), spec.method, st.W == 1)
    eid = np.full((R, nseg), -1)
    eid[ri, ji] = np.arange(ri.size)
    code = np.zeros((R, nseg), dtype=int)
    code[ri, ji] = stg.code
    st_eff = stg.status
    eff = np.zeros((R, nseg), dtype=bool)
    eff[ri, ji] = (st_eff == WrapStatus.WRAPPED) | (st_eff == WrapStatus.MANDATORY_WRAP)
    loop = np.zeros((R, nseg), dtype=bool)
    loop[ri, ji] = stg.needs_loop
    r1 = np.full((R, nseg, 3), np.nan)
    r2 = np.full((R, nseg, 3), np.nan)
    ln = np.full((R, nseg), np.nan)
    p1w = np.zeros((R, nseg, 3))
    p2w = np.zeros((R, nseg, 3))
    p1w[ri, ji], p2w[ri, ji] = _to_frame(Tw, g1), _to_frame(Tw, g2)
    memo = st.memo(w)

    def finish(mask):
        fi, fj = np.nonzero(mask)
        if fi.size == 0:
            return
        e = eid[fi, fj]
        lp = stg.needs_loop[e]
        # adjustment-loop results are reused when the same segment comes back unchanged
        hit = np.zeros(fi.size, dtype=bool)
        if lp.any():
            ra, ca, cb = rows[fi], a[fi, fj], b[fi, fj]
            hit = lp & memo.ok[ra, ca, cb]
            hit &= np.all(memo.p1[ra, ca, cb] == p1w[fi, fj], axis=-1) & np.all(memo.p2[ra, ca, cb] == p2w[fi, fj], axis=-1)
            h = np.flatnonzero(hit)
            r1[fi[h], fj[h]] = memo.r1[ra[h], ca[h], cb[h]]
            r2[fi[h], fj[h]] = memo.r2[ra[h], ca[h], cb[h]]
            ln[fi[h], fj[h]] = memo.ln[ra[h], ca[h], cb[h]]
        c = np.flatnonzero(~hit)
        if c.size:
            x1, x2, lx = stg.finish(e[c])
            r1[fi[c], fj[c]], r2[fi[c], fj[c]], ln[fi[c], fj[c]] = x1, x2, lx
            sv = c[lp[c]]
            if sv.size:
                ra, ca, cb = rows[fi[sv]], a[fi[sv], fj[sv]], b[fi[sv], fj[sv]]
                memo.ok[ra, ca, cb] = True
                memo.p1[ra, ca, cb], memo.p2[ra, ca, cb] = p1w[fi[sv], fj[sv]], p2w[fi[sv], fj[sv]]
                memo.r1[ra, ca, cb] = r1[fi[sv], fj[sv]]
                memo.r2[ra, ca, cb] = r2[fi[sv], fj[sv]]
                memo.ln[ra, ca, cb] = ln[fi[sv], fj[sv]]

    mand = valid & (code == WrapStatus.MANDATORY_WRAP)
    has_m = mand.any(axis=1)
    m = np.where(has_m, mand.argmax(axis=1), nseg)
    first_m = np.zeros((R, nseg), dtype=bool)
    first_m[np.flatnonzero(has_m), m[has_m]] = True
    first_m &= eff
    cand = valid & (code == WrapStatus.WRAPPED) & (j < m[:, None])
    need = cand & eff  # candidates with tangent points (the others give NaN changes)
    # the closed-form results first; the adjustment loop (if any) later, in as few calls as possible
    finish((need | first_m) & ~loop)
    later = first_m & loop
    change = np.full((R, nseg), np.inf)
    if cand.any():
        ci, cj = np.nonzero(cand)
        crow = rows[ci]
        ones = np.ones((ci.size, 1), bool)
        q1 = st.query(crow, a[ci, cj][:, None], ones)[:, 0]
        q2 = st.query(crow, b[ci, cj][:, None], ones)[:, 0]
        Tc = st.T[crow, w]
        straight = np.linalg.norm(q1 - q2, axis=-1)
        pos_in_c = np.full((R, nseg), -1)
        pos_in_c[ci, cj] = np.arange(ci.size)

        def exact(sel):
            d = (np.linalg.norm(q1[sel] - _from_frame(Tc[sel], r1[ci[sel], cj[sel]]), axis=-1) + ln[ci[sel], cj[sel]]
                 + np.linalg.norm(q2[sel] - _from_frame(Tc[sel], r2[ci[sel], cj[sel]]), axis=-1) - straight[sel])
            change[ci[sel], cj[sel]] = np.where(np.isnan(d), np.inf, d)

        lp = loop[ci, cj] & eff[ci, cj]
        exact(np.flatnonzero(~lp))
        if lp.any():
            # Segments whose tangent points come out of the adjustment loop: r1, r2 only
            # move along the (fixed) axis and the arc is at least R |theta|, which bounds
            # the change from below; the loop runs only where that bound can still win.
            li = np.flatnonzero(lp)
            b1, b2, axd, lmin = stg.bound(eid[ci[li], cj[li]])
            Tl = Tc[li]
            axg = np.einsum("nij,nj->ni", Tl[:, :3, :3], axd)

            def line_dist(q, r):
                e = q - _from_frame(Tl, r)
                return np.linalg.norm(e - np.sum(e * axg, axis=-1)[:, None] * axg, axis=-1)

            lb = line_dist(q1[li], b1) + lmin + line_dist(q2[li], b2) - straight[li]
            lbg = np.full((R, nseg), np.inf)
            lbg[ci[li], cj[li]] = np.where(np.isnan(lb), -np.inf, lb)
            pending = np.zeros((R, nseg), dtype=bool)
            pending[ci[li], cj[li]] = True
            for round_ in range(2):
                best = change.min(axis=1)
                keep = pending & (lbg <= best[:, None] + _PRUNE_MARGIN)
                if round_ == 0:
                    # first the most promising segment of each configuration
                    kk = np.where(keep, lbg, np.inf).argmin(axis=1)
                    rk = np.flatnonzero(keep.any(axis=1))
                    keep = np.zeros_like(keep)
                    keep[rk, kk[rk]] = True
                    finish(keep | later)
                    later[:] = False
                elif keep.any():
                    finish(keep)
                exact(pos_in_c[keep])
                pending &= ~keep
    if later.any():
        finish(later)
    best = change.argmin(axis=1)
    has_b = np.take_along_axis(change, best[:, None], axis=1)[:, 0] < np.inf
    chosen = np.where(has_m, m, np.where(has_b, best, -1))
    # code of the last segment tried (the mandatory one when the loop broke there)
    last = nseg - 1 - valid[:, ::-1].argmax(axis=1)
    last_code = np.where(valid.any(axis=1), np.take_along_axis(code, last[:, None], axis=1)[:, 0], 0)
    result[rows, slot] = np.where(has_m, WrapStatus.MANDATORY_WRAP, last_code)

    ok = chosen >= 0
    ok[ok] = eff[np.flatnonzero(ok), chosen[ok]]
    if not ok.any():
        return
    k = np.flatnonzero(ok)
    jj = chosen[k]
    sel = rows[k]
    st.r[sel, w, 0] = r1[k, jj]
    st.r[sel, w, 1] = r2[k, jj]
    st.wlen[sel, w] = ln[k, jj]
    st.in_path[sel, w] = True
    st.insert_wrap(sel, w, jj + 1)


def wrap_path(points_ground, point_active, wrap_to_ground, specs, opensim_compat: bool = False) -> WrappedPath:
    """Wrap a path for N configurations, as OpenSim 4.6's GeometryPath does.

    Parameters
    ----------
    points_ground : (N, P, 3) ground positions of all PathPointSet points.
    point_active : (N, P) bool, whether each point is active (conditional points).
    wrap_to_ground : (N, W, 4, 4) ground transform of each PathWrap's wrap-object frame
        (body transform times the wrap object's ``transform_in_body``).
    specs : sequence of W :class:`PathWrapSpec`, in PathWrapSet order.
    opensim_compat : reproduce OpenSim's stale ground positions of tangent points
        (see the module docstring); default False: current positions.
    """
    pg = np.asarray(points_ground, dtype=float)
    if pg.ndim == 2:
        pg = pg[None]
    n, p = pg.shape[:2]
    pa = np.broadcast_to(np.asarray(point_active, dtype=bool), (n, p))
    specs = list(specs)
    W = len(specs)
    T = np.asarray(wrap_to_ground, dtype=float).reshape(n, W, 4, 4) if W else np.zeros((n, 0, 4, 4))
    if use_jit():
        packed = _pack_for_kernel(specs, p)
        if packed is not None:
            return _wrap_path_jit(pg, pa, T, packed, bool(opensim_compat))
    st = _State(pg, pa, T, specs, bool(opensim_compat))
    passes = np.zeros(n, dtype=int)
    if W:
        order = np.tile(np.arange(W), (n, 1))
        running = np.ones(n, dtype=bool)  # still iterating passes
        alive = np.ones(n, dtype=bool)  # False once OpenSim abandoned the wrapping step
        last = np.full(n, np.inf)
        max_passes = 1 if W < 2 else MAX_PASSES
        for kk in range(max_passes):
            rows_run = np.flatnonzero(running)
            if rows_run.size == 0:
                break
            passes[rows_run] += 1
            result = np.zeros((n, W), dtype=int)
            for slot in range(W):
                for w in range(W):
                    rows = np.flatnonzero(running & alive & (order[:, slot] == w))
                    if rows.size:
                        _apply_one_wrap(st, rows, w, slot, result, alive)
            running &= alive
            rows = np.flatnonzero(running)
            if rows.size == 0:
                break
            L = st.length(rows)
            conv = np.abs(L - last[rows]) < CONVERGENCE_TOL
            last[rows] = L
            running[rows[conv]] = False
            if kk == 0 and W > 1:
                sw = running & (result[:, 0] == WrapStatus.NO_WRAP) & (result[:, 1] == WrapStatus.INSIDE_RADIUS)
                if sw.any():
                    rs = np.flatnonzero(sw)
                    order[rs, 0], order[rs, 1] = 1, 0
                    st.remove_wrap(rs, 0)
                    st.in_path[rs, 0] = False
    length = st.length(np.arange(n))
    tp = np.where(st.in_path[..., None, None], st.r, np.nan)
    wl = np.where(st.in_path, st.wlen, 0.0)
    queried = None
    if st.compat and W:
        fresh = np.einsum("nwij,nwkj->nwki", T[..., :3, :3], st.r) + T[:, :, None, :3, 3]
        queried = np.where(st.cached[..., None], st.cache, fresh)
        queried = np.where(st.in_path[..., None, None], queried, np.nan)
    return WrappedPath(st.seq.copy(), tp, wl, st.in_path.copy(), length, passes, queried)


# ---------------------------------------------------------------------------
# Compiled path construction (numba; see _kernels_path.py)
# ---------------------------------------------------------------------------
def _pack_for_kernel(specs, P):
    """The PathWraps as the arrays the compiled kernel takes, or None when it cannot take them.

    None for a wrap object of another class, an unknown ellipsoid method or an active PathWrap
    whose range is outside the path: the numpy code handles, or reports, those when it meets them.
    """
    from osim_emb.paths.wrapping.cylinder import WrapCylinder
    from osim_emb.paths.wrapping.ellipsoid import WrapEllipsoid, _method_name
    from osim_emb.paths.wrapping.sphere import WrapSphere
    from osim_emb.paths.wrapping.torus import WrapTorus
    W = len(specs)
    otype = np.zeros(W, dtype=np.int64)
    oprm = np.zeros((W, 3))
    oax = np.zeros(W, dtype=np.int64)
    osg = np.zeros(W, dtype=np.int64)
    ometh = np.zeros(W, dtype=np.int64)
    oact = np.zeros(W, dtype=np.bool_)
    ows = np.zeros(W, dtype=np.int64)
    owe = np.zeros(W, dtype=np.int64)
    for k, spec in enumerate(specs):
        o = spec.wrap_object
        t = type(o)
        if t is WrapSphere:
            otype[k], oprm[k, 0] = 0, o.radius
        elif t is WrapCylinder:
            otype[k], oprm[k, :2] = 1, (o.radius, o.length)
        elif t is WrapTorus:
            otype[k], oprm[k, :2] = 2, (o.inner_radius, o.outer_radius)
        elif t is WrapEllipsoid:
            otype[k], oprm[k] = 3, o.dimensions
            try:
                ometh[k] = {"hybrid": 0, "midpoint": 1, "axial": 2}[_method_name(spec.method)]
            except ValueError:
                return None
        else:
            return None
        oax[k], osg[k] = o.wrap_axis_sign
        oact[k] = bool(o.active)
        lo, hi = spec.range
        ws = lo - 1 if lo >= 1 else 0
        we = hi - 1 if hi >= 1 else P - 1
        if oact[k] and (ws > P - 1 or we > P - 1):
            return None
        ows[k], owe[k] = ws, we
    # object identity (two PathWraps on one wrap object), as _State computes it
    ids = []
    for s in specs:
        for k, prev in enumerate(specs[: len(ids)]):
            if prev.wrap_object == s.wrap_object:
                ids.append(ids[k])
                break
        else:
            ids.append(len(ids))
    code_obj = np.full(P + 2 * W + 1, -1, dtype=np.int64)
    for k in range(W):
        code_obj[1 + P + 2 * k: 1 + P + 2 * k + 2] = ids[k]
    return otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj


def _wrap_path_jit(pg, pa, T, packed, compat) -> WrappedPath:
    from osim_emb.paths.wrapping._kernels_path import path_outputs, run_threads, wrap_paths_kernel
    # C-contiguous and writable, so that the kernel is compiled (and cached) for one signature
    pg = np.require(pg, dtype=float, requirements=["C", "W"])
    pa = np.require(pa, dtype=np.bool_, requirements=["C", "W"])
    T = np.require(T, dtype=float, requirements=["C", "W"])
    otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj = packed
    n, P, W = pg.shape[0], pg.shape[1], otype.shape[0]
    offsets = [np.array([0, k], dtype=np.int64) for k in (P, W, P + 2 * W, code_obj.shape[0])]
    out = path_outputs(n, 1, P + 2 * W, W)
    run_threads(wrap_paths_kernel, (pg, pa, T, *offsets, *packed, compat), out, n)
    seq, r, wlen, in_path, length, passes, cache, cached = out
    return _wrapped_path(T, seq, r, wlen, in_path, length[:, 0], passes[:, 0], cache, cached, compat)


def _wrapped_path(T, seq, r, wlen, in_path, length, passes, cache, cached, compat) -> WrappedPath:
    """The WrappedPath of the kernel's outputs (masks as in :func:`wrap_path`)."""
    tp = np.where(in_path[..., None, None], r, np.nan)
    wl = np.where(in_path, wlen, 0.0)
    queried = None
    if compat and T.shape[1]:
        fresh = np.einsum("nwij,nwkj->nwki", T[..., :3, :3], r) + T[:, :, None, :3, 3]
        queried = np.where(cached[..., None], cache, fresh)
        queried = np.where(in_path[..., None, None], queried, np.nan)
    return WrappedPath(seq, tp, wl, in_path, length, passes, queried)
