"""Compiled (numba) path construction: OpenSim's GeometryPath, one configuration at a time.

The one implementation of :func:`osim_emb.paths.wrapping.path.wrap_path` (whose docstring
describes OpenSim's algorithm): passes, PathWrap ranges, segment choice, order swap, stale
ground positions in compat mode.  Sums follow numpy's orders (``einsum`` over 3 terms,
pairwise ``sum`` of the segment lengths), as the former numpy implementation did, so that
results are unchanged to the last bit.  Two exact shortcuts: a lower bound skips the
cylinder's adjustment loop for segments that cannot be chosen, and a wrap is reused when a
segment comes back with bitwise the same end points (a wrap is a function of its end points).

Wrap objects are passed as arrays: ``otype`` (0 sphere, 1 cylinder, 2 torus,
3 ellipsoid), ``oprm`` (radius; radius, length; inner, outer radius; or the three
semi-axes), quadrant axis/sign, method, active flag, and the PathWrap ranges converted to
0-based point indices (:func:`osim_emb.paths.wrapping.path.pack_path_wraps`).  Many paths
(muscles) are packed one after the other, with offsets.

The kernels release the GIL and :func:`run_threads` shares the configurations among
numba's number of threads (``NUMBA_NUM_THREADS``, ``numba.set_num_threads``).
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit

try:  # numba is a dependency of the package; the fallback only serves a broken installation's error path
    from numba import get_num_threads
except ImportError:  # pragma: no cover
    def get_num_threads():
        return 1
from osim_emb.paths.wrapping._kernels import (
    INSIDE_RADIUS,
    MANDATORY_WRAP,
    NO_WRAP,
    TOR_CYL_LENGTH,
    WRAPPED,
    add,
    cyl_loop,
    cyl_needs_loop,
    cyl_stage,
    mat_t_vec,
    mat_vec_einsum,
    nan3,
    sphere_one,
    sub,
    torus_circle_point,
    torus_frame,
)
from osim_emb.paths.wrapping._kernels_ellipsoid import ellipsoid_code, ellipsoid_one, workspace

_KW = dict(cache=True, error_model="numpy")
# Helpers that take arrays but allocate nothing are compiled without numba's reference counting:
# with it, every call increfs and decrefs each array argument (atomic operations, ~20 ns per call),
# which dominated the cost of these small, very frequently called functions.
_KW0 = dict(_KW, _nrt=False)

NAN = math.nan
MAX_PASSES = 8
CONVERGENCE_TOL = 0.0005

T_SPHERE, T_CYLINDER, T_TORUS, T_ELLIPSOID = 0, 1, 2, 3
_NAUX = 40
_KEY = 30  # aux[30:36]: the segment's end points in the wrap frame (the memo key)


@njit(**_KW0)
def _pairwise_sum(a, n):
    """numpy's pairwise summation (``np.add.reduce`` of a contiguous row)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
        i = 8
        lim = n - (n % 8)
        while i < lim:
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(a[:n2], n2) + _pairwise_sum(a[n2:], n - n2)


@njit(**_KW0)
def _rot(T, n, w):
    return ((T[n, w, 0, 0], T[n, w, 0, 1], T[n, w, 0, 2]),
            (T[n, w, 1, 0], T[n, w, 1, 1], T[n, w, 1, 2]),
            (T[n, w, 2, 0], T[n, w, 2, 1], T[n, w, 2, 2]))


@njit(**_KW0)
def _trn(T, n, w):
    return (T[n, w, 0, 3], T[n, w, 1, 3], T[n, w, 2, 3])


@njit(**_KW0)
def _from_frame(T, n, w, r):
    return add(mat_vec_einsum(_rot(T, n, w), r), _trn(T, n, w))


@njit(**_KW)
def _dist(a, b):
    d0, d1, d2 = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)


@njit(**_KW0)
def _same_object_pair(code_obj, a, b):
    oa = code_obj[a + 1]
    return oa >= 0 and oa == code_obj[b + 1]


@njit(**_KW0)
def _fresh(pg, tg, n, P, c):
    """Current ground position of sequence code c (numpy clips padding to point 0).

    tg[w, k]: ground positions of the tangent points in the path (``_from_frame`` of them, kept
    when they are inserted).
    """
    if c < P:
        cc = c if c > 0 else 0
        return (pg[n, cc, 0], pg[n, cc, 1], pg[n, cc, 2])
    w = (c - P) // 2
    k = (c - P) % 2
    return (tg[w, k, 0], tg[w, k, 1], tg[w, k, 2])


@njit(**_KW0)
def _query(pg, tg, cache, cached, compat, n, P, c, mark):
    """Ground position as OpenSim's getLocationInGround returns it (stale first-queried in compat mode)."""
    g = _fresh(pg, tg, n, P, c)
    if not compat or c < P:
        return g
    w = (c - P) // 2
    k = (c - P) % 2
    if cached[w, k]:
        return (cache[w, k, 0], cache[w, k, 1], cache[w, k, 2])
    if mark:
        cache[w, k, 0], cache[w, k, 1], cache[w, k, 2] = g
        cached[w, k] = True
    return g


@njit(**_KW0)
def _length(pg, tg, wlen, seq, cache, cached, compat, n, P, code_obj, vals, pos):
    """calcLengthAfterPathComputation (queries, and in compat mode caches, every point of the path)."""
    S = seq.shape[0]
    for j in range(S):
        c = seq[j]
        g = _query(pg, tg, cache, cached, compat, n, P, c, c >= 0)
        pos[j, 0], pos[j, 1], pos[j, 2] = g
    for j in range(S - 1):
        a, b = seq[j], seq[j + 1]
        if a >= 0 and b >= 0:
            if _same_object_pair(code_obj, a, b):
                if b >= P and (b - P) % 2 == 1:
                    vals[j] = wlen[(b - P) // 2]
                else:
                    vals[j] = 0.0
            else:
                d0 = pos[j + 1, 0] - pos[j, 0]
                d1 = pos[j + 1, 1] - pos[j, 1]
                d2 = pos[j + 1, 2] - pos[j, 2]
                vals[j] = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        else:
            vals[j] = 0.0
    return _pairwise_sum(vals, S - 1)


@njit(**_KW0)
def _remove_wrap(seq, c):
    S = seq.shape[0]
    k = 0
    for j in range(S):
        v = seq[j]
        if v != c and v != c + 1:
            seq[k] = v
            k += 1
    for j in range(k, S):
        seq[j] = -1


@njit(**_KW0)
def _insert_wrap(seq, c, pos):
    S = seq.shape[0]
    for j in range(S - 1, pos + 1, -1):
        seq[j] = seq[j - 2]
    if pos < S:
        seq[pos] = c
    if pos + 1 < S:
        seq[pos + 1] = c + 1


@njit(**_KW0)
def _stage(ot, prm, ax, sg, single, p1, p2, aux):
    """Phase one of a wrap: (status, returned code, needs the adjustment loop); aux keeps what finish needs."""
    for i in range(3):
        aux[i] = p1[i]
        aux[3 + i] = p2[i]
        aux[_KEY + i] = p1[i]
        aux[_KEY + 3 + i] = p2[i]
    if ot == T_SPHERE:
        st, raw, r1, r2, ln = sphere_one(p1, p2, prm[0], ax, sg)
        for i in range(3):
            aux[6 + i] = r1[i]
            aux[9 + i] = r2[i]
        aux[13] = ln
        return st, raw, False
    if ot == T_CYLINDER:
        st, R1, R2, lw, th, l0 = cyl_stage(p1, p2, prm[0], prm[1], ax, sg)
        for i in range(3):
            aux[6 + i] = R1[i]
            aux[9 + i] = R2[i]
        aux[12] = 1.0 if lw else 0.0
        aux[13] = l0
        aux[14] = th
        wr = st == WRAPPED or st == MANDATORY_WRAP
        return st, st, wr and cyl_needs_loop(l0, single)
    if ot == T_TORUS:
        found, c = torus_circle_point(prm[1], p1, p2, ax, sg)
        if not found:
            return NO_WRAP, NO_WRAP, False
        M, off = torus_frame(c)
        q1 = add(mat_vec_einsum(M, p1), off)
        q2 = add(mat_vec_einsum(M, p2), off)
        st, R1, R2, lw, th, l0 = cyl_stage(q1, q2, prm[0], TOR_CYL_LENGTH, 0, 1)
        for i in range(3):
            aux[i] = q1[i]
            aux[3 + i] = q2[i]
            aux[6 + i] = R1[i]
            aux[9 + i] = R2[i]
            aux[15 + i] = M[0][i]
            aux[18 + i] = M[1][i]
            aux[21 + i] = M[2][i]
            aux[24 + i] = off[i]
        aux[12] = 1.0 if lw else 0.0
        aux[13] = l0
        aux[14] = th
        wr = st == WRAPPED or st == MANDATORY_WRAP
        return (WRAPPED if wr else st), WRAPPED, wr and cyl_needs_loop(l0, single)
    # ellipsoid: the code now; whether it really wraps (polyline points) only from the full wrap
    code = ellipsoid_code(p1, p2, (prm[0], prm[1], prm[2]))
    return code, code, False


@njit(**_KW0)
def _finish(ot, prm, ax, sg, meth, loop, aux, det, nopts, wk):
    """Phase two: (r1, r2, length, wrapped) in the wrap frame."""
    p1 = (aux[0], aux[1], aux[2])
    p2 = (aux[3], aux[4], aux[5])
    R1 = (aux[6], aux[7], aux[8])
    R2 = (aux[9], aux[10], aux[11])
    if ot == T_SPHERE:
        return R1, R2, aux[13], True
    if ot == T_CYLINDER:
        if loop:
            a, b, ln = cyl_loop(p1, p2, R1, R2, prm[0], aux[12] != 0.0)
            return a, b, ln, True
        return R1, R2, aux[13], True
    if ot == T_TORUS:
        ln = aux[13]
        if loop:
            R1, R2, ln = cyl_loop(p1, p2, R1, R2, prm[0], aux[12] != 0.0)
        M = ((aux[15], aux[16], aux[17]), (aux[18], aux[19], aux[20]), (aux[21], aux[22], aux[23]))
        off = (aux[24], aux[25], aux[26])
        return mat_t_vec(M, sub(R1, off)), mat_t_vec(M, sub(R2, off)), ln, True
    st, raw, a, b, ln = ellipsoid_one(p1, p2, (prm[0], prm[1], prm[2]), ax, sg, meth, nan3(), det, nopts, wk)
    return a, b, ln, st == MANDATORY_WRAP


_PRUNE_MARGIN = 1e-9  # metres, as in path.py


@njit(**_KW0)
def _lower_bound(ot, prm, T, n, w, aux, q1, q2, straight):
    """A lower bound of the length change of a segment whose tangent points come out of the cylinder's
    adjustment loop: the loop only moves r1, r2 along the cylinder axis, and the helix is at least
    R |theta| long (``path.py`` uses the same bound to skip the loop where it cannot win)."""
    R1 = (aux[6], aux[7], aux[8])
    R2 = (aux[9], aux[10], aux[11])
    lmin = prm[0] * abs(aux[14])
    if ot == T_TORUS:
        M = ((aux[15], aux[16], aux[17]), (aux[18], aux[19], aux[20]), (aux[21], aux[22], aux[23]))
        off = (aux[24], aux[25], aux[26])
        R1 = mat_t_vec(M, sub(R1, off))
        R2 = mat_t_vec(M, sub(R2, off))
        axd = M[2]
    else:
        axd = (0.0, 0.0, 1.0)
    axg = mat_vec_einsum(_rot(T, n, w), axd)
    e = sub(q1, _from_frame(T, n, w, R1))
    t = e[0] * axg[0] + e[1] * axg[1] + e[2] * axg[2]
    d1 = _dist(e, (t * axg[0], t * axg[1], t * axg[2]))
    e = sub(q2, _from_frame(T, n, w, R2))
    t = e[0] * axg[0] + e[1] * axg[1] + e[2] * axg[2]
    d2 = _dist(e, (t * axg[0], t * axg[1], t * axg[2]))
    lb = d1 + lmin + d2 - straight
    return -np.inf if lb != lb else lb


@njit(**_KW0)
def _finish_memo(ot, prm, ax, sg, meth, loop, aux, det, nopts, wk, mfin, mfin_ok, w, a, b, stamp):
    """_finish of the segment (codes a, b) whose stage is in ``aux``, reusing an earlier pass's result
    (the stage memo guarantees bitwise the same end points: exact)."""
    mm = mfin[w, a, b]
    if mfin_ok[w, a, b] == stamp:
        return (mm[0], mm[1], mm[2]), (mm[3], mm[4], mm[5]), mm[6], mm[7] != 0.0
    r1, r2, ln, ok = _finish(ot, prm, ax, sg, meth, loop, aux, det, nopts, wk)
    for i in range(3):
        mm[i] = r1[i]
        mm[3 + i] = r2[i]
    mm[6] = ln
    mm[7] = 1.0 if ok else 0.0
    mfin_ok[w, a, b] = stamp
    return r1, r2, ln, ok


@njit(**_KW0)
def _store_change(chg, cr, j, T, n, w, q1, q2, straight, r1, r2, ln):
    """calcPathLengthChange: |P1 r1| + wrap + |r2 P2| - |P1 P2| (inf where NaN); keep the wrap."""
    d = (_dist(q1, _from_frame(T, n, w, r1)) + ln + _dist(q2, _from_frame(T, n, w, r2))) - straight
    chg[j] = np.inf if d != d else d
    for i in range(3):
        cr[j, i] = r1[i]
        cr[j, 3 + i] = r2[i]
    cr[j, 6] = ln


@njit(**_KW)
def _work(S, W):
    """Work arrays of :func:`_config_path` for paths of at most S sequence slots and W PathWraps."""
    nseg = max(S - 1, 1)
    W1 = max(W, 1)
    return (np.zeros(nseg), np.zeros((max(S, 1), 3)), np.zeros(nseg, dtype=np.bool_),
            np.zeros(nseg, dtype=np.int64), np.zeros(nseg, dtype=np.bool_), np.zeros(nseg, dtype=np.bool_),
            np.zeros(nseg), np.zeros(nseg, dtype=np.bool_), np.zeros(nseg), np.zeros((nseg, 7)),
            np.zeros((nseg, 7)), np.zeros(W1, dtype=np.int64), np.zeros(W1, dtype=np.int64),
            np.empty((W1, S, S, _NAUX)), np.empty((W1, S, S, 3), dtype=np.int64),
            np.zeros((W1, S, S), dtype=np.int64), np.empty((W1, S, S, 8)), np.zeros((W1, S, S), dtype=np.int64),
            np.zeros(16), np.empty((0, 3)), workspace(), np.empty((W1, 2, 3)), np.zeros(1, dtype=np.int64))


@njit(**_KW0)
def _config_path(n, pg, pa, T, otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj, compat,
                 seq, r, wlen, in_path, cache, cached, wrk):
    """Build the path of configuration n (GeometryPath::computePath).

    seq, r, wlen, in_path, cache, cached: this configuration's outputs, initialised (-1, NaN, 0,
    False, NaN, False).  Returns (length, passes).
    """
    P = pg.shape[1]
    W = otype.shape[0]
    S = P + 2 * W
    nseg = S - 1
    single = W == 1
    (vals, pos, valid, code, eff, loop, chg, pend, lbv, qq, cr, order, result, maux, mst, mstage_ok, mfin,
     mfin_ok, det, nopts, wk, tg, counter) = wrk
    # memo entries are valid for this call only: marked with a stamp unique to it (no reset needed)
    stamp = counter[0] + 1
    counter[0] = stamp
    passes = 0
    have_L = False
    L = 0.0
    k = 0
    for p in range(P):
        if pa[n, p]:
            seq[k] = p
            k += 1
    if W:
        for w in range(W):
            order[w] = w
        alive = True
        last = np.inf
        max_passes = 1 if W < 2 else MAX_PASSES
        for kk in range(max_passes):
            passes += 1
            have_L = False
            for w in range(W):
                result[w] = NO_WRAP
            for slot in range(W):
                w = order[slot]
                # ---- one PathWrap's step of applyWrapObjects ----
                c0 = P + 2 * w
                _remove_wrap(seq, c0)
                in_path[w] = False
                if not oact[w]:
                    continue
                ws, we = ows[w], owe[w]
                if we < ws:
                    alive = False
                    break
                smp = -1
                emp = -1
                for p in range(ws, we + 1):
                    if pa[n, p]:
                        if smp < 0:
                            smp = p
                        emp = p
                if smp < 0:
                    alive = False
                    break
                start = 0
                for j in range(S):
                    if seq[j] == smp:
                        start = j
                        break
                end = 0
                for j in range(S):
                    if seq[j] == emp:
                        end = j
                        break
                ot = otype[w]
                prm = oprm[w]
                Rw = _rot(T, n, w)
                tw = _trn(T, n, w)
                ax, sg = oax[w], osg[w]
                any_valid = False
                m = nseg
                lastj = -1
                for j in range(nseg):
                    if m < nseg:  # segments after the first MANDATORY_WRAP are never used
                        valid[j] = False
                        continue
                    a, b = seq[j], seq[j + 1]
                    v = (start <= j) and (j < end) and (b >= 0) and not _same_object_pair(code_obj, a, b)
                    valid[j] = v
                    if not v:
                        continue
                    any_valid = True
                    lastj = j
                    g1 = _fresh(pg, tg, n, P, a)
                    g2 = _fresh(pg, tg, n, P, b)
                    p1w = mat_t_vec(Rw, sub(g1, tw))  # _to_frame
                    p2w = mat_t_vec(Rw, sub(g2, tw))
                    xa = maux[w, a, b]
                    same = mstage_ok[w, a, b] == stamp
                    if same:
                        for i in range(3):
                            if xa[_KEY + i] != p1w[i] or xa[_KEY + 3 + i] != p2w[i]:
                                same = False
                    if same:
                        st, cd, lp = mst[w, a, b, 0], mst[w, a, b, 1], mst[w, a, b, 2] != 0
                    else:
                        st, cd, lp = _stage(ot, prm, ax, sg, single, p1w, p2w, xa)
                        mst[w, a, b, 0], mst[w, a, b, 1], mst[w, a, b, 2] = st, cd, 1 if lp else 0
                        mstage_ok[w, a, b] = stamp
                        mfin_ok[w, a, b] = 0
                    code[j] = cd
                    eff[j] = st == WRAPPED or st == MANDATORY_WRAP
                    loop[j] = lp
                    if cd == MANDATORY_WRAP and m == nseg:
                        m = j
                if not any_valid:
                    continue
                has_m = m < nseg
                result[slot] = MANDATORY_WRAP if has_m else code[lastj]
                # WRAPPED candidates before the first MANDATORY_WRAP: the one that lengthens the path
                # least (first on ties; NaN never wins).  Closed-form ones first; those needing the
                # adjustment loop in order of their lower bound, while it can still win.
                npend = 0
                for j in range(min(m, nseg)):
                    chg[j] = np.inf
                    pend[j] = False
                    if not (valid[j] and code[j] == WRAPPED):
                        continue
                    a, b = seq[j], seq[j + 1]
                    q1 = _query(pg, tg, cache, cached, compat, n, P, a, True)
                    q2 = _query(pg, tg, cache, cached, compat, n, P, b, True)
                    if not eff[j]:
                        continue
                    straight = _dist(q1, q2)
                    for i in range(3):
                        qq[j, i] = q1[i]
                        qq[j, 3 + i] = q2[i]
                    qq[j, 6] = straight
                    if loop[j]:
                        lbv[j] = _lower_bound(ot, prm, T, n, w, maux[w, a, b], q1, q2, straight)
                        pend[j] = True
                        npend += 1
                        continue
                    r1, r2, ln, ok = _finish_memo(ot, prm, ax, sg, ometh[w], False, maux[w, a, b], det,
                                                  nopts, wk, mfin, mfin_ok, w, a, b, stamp)
                    _store_change(chg, cr, j, T, n, w, q1, q2, straight, r1, r2, ln)
                while npend > 0:
                    bestv = np.inf
                    for j in range(min(m, nseg)):
                        if chg[j] < bestv:
                            bestv = chg[j]
                    jj = -1
                    lo = np.inf
                    for j in range(min(m, nseg)):
                        if pend[j] and (jj < 0 or lbv[j] < lo):
                            jj = j
                            lo = lbv[j]
                    if not lo <= bestv + _PRUNE_MARGIN:
                        break
                    pend[jj] = False
                    npend -= 1
                    a, b = seq[jj], seq[jj + 1]
                    r1, r2, ln, ok = _finish_memo(ot, prm, ax, sg, ometh[w], True, maux[w, a, b], det,
                                                  nopts, wk, mfin, mfin_ok, w, a, b, stamp)
                    _store_change(chg, cr, jj, T, n, w, (qq[jj, 0], qq[jj, 1], qq[jj, 2]),
                                  (qq[jj, 3], qq[jj, 4], qq[jj, 5]), qq[jj, 6], r1, r2, ln)
                best = -1
                bestv = np.inf
                for j in range(min(m, nseg)):
                    if chg[j] < bestv:
                        bestv = chg[j]
                        best = j
                br1 = nan3()
                br2 = nan3()
                bln = NAN
                if best >= 0:
                    br1 = (cr[best, 0], cr[best, 1], cr[best, 2])
                    br2 = (cr[best, 3], cr[best, 4], cr[best, 5])
                    bln = cr[best, 6]
                chosen = -1
                ok = False
                if has_m:
                    chosen = m
                    if eff[m] or otype[w] == T_ELLIPSOID:
                        a, b = seq[m], seq[m + 1]
                        br1, br2, bln, ok = _finish_memo(ot, prm, ax, sg, ometh[w], loop[m], maux[w, a, b],
                                                         det, nopts, wk, mfin, mfin_ok, w, a, b, stamp)
                elif best >= 0:
                    chosen = best
                    ok = True
                if chosen >= 0 and ok:
                    for i in range(3):
                        r[w, 0, i] = br1[i]
                        r[w, 1, i] = br2[i]
                    wlen[w] = bln
                    in_path[w] = True
                    g = _from_frame(T, n, w, br1)
                    tg[w, 0, 0], tg[w, 0, 1], tg[w, 0, 2] = g
                    g = _from_frame(T, n, w, br2)
                    tg[w, 1, 0], tg[w, 1, 1], tg[w, 1, 2] = g
                    _insert_wrap(seq, c0, chosen + 1)
            if not alive:
                break
            L = _length(pg, tg, wlen, seq, cache, cached, compat, n, P, code_obj, vals, pos)
            have_L = True
            conv = abs(L - last) < CONVERGENCE_TOL
            last = L
            if conv:
                break
            if kk == 0 and W > 1 and result[0] == NO_WRAP and result[1] == INSIDE_RADIUS:
                order[0], order[1] = 1, 0
                have_L = False
                _remove_wrap(seq, P)
                in_path[0] = False
    if not have_L:
        L = _length(pg, tg, wlen, seq, cache, cached, compat, n, P, code_obj, vals, pos)
    # (otherwise the path has not changed since the last pass's length, which is then the final one)
    return L, passes


@njit(**_KW0)
def _max_sizes(mp, mw):
    S = 1
    W = 0
    for m in range(mp.shape[0] - 1):
        P = mp[m + 1] - mp[m]
        Wm = mw[m + 1] - mw[m]
        S = max(S, P + 2 * Wm)
        W = max(W, Wm)
    return S, W


@njit(nogil=True, **_KW)
def wrap_paths_kernel(pg, pa, T, mp, mw, ms, mc, otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj, compat,
                      start, step, seq_out, r_out, wlen_out, inp_out, len_out, passes_out, cache_out, cached_out):
    """Many paths (muscles) at the configurations start, start + step, ... of N (without the GIL, so
    that threads can share the configurations: see :func:`run_threads`).

    Path m has points pg[:, mp[m]:mp[m+1]], PathWraps mw[m]:mw[m+1] (wrap frames T, object
    arrays), sequence slots ms[m]:ms[m+1] and object codes code_obj[mc[m]:mc[m+1]].  Outputs (from
    :func:`path_outputs`): seq (N, S), r (N, W, 2, 3), wlen, in_path (N, W), length, passes (N, M),
    cache (N, W, 2, 3), cached (N, W, 2).
    """
    N = pg.shape[0]
    S, W = _max_sizes(mp, mw)
    wrk = _work(S, W)
    for n in range(start, N, step):
        _config_paths(n, pg, pa, T, mp, mw, ms, mc, otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj, compat,
                      seq_out, r_out, wlen_out, inp_out, len_out, passes_out, cache_out, cached_out, wrk)


@njit(**_KW0)
def _config_paths(n, pg, pa, T, mp, mw, ms, mc, otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj, compat,
                  seq_out, r_out, wlen_out, inp_out, len_out, passes_out, cache_out, cached_out, wrk):
    """All paths at configuration n (allocation-free: no reference counting of the views)."""
    M = mp.shape[0] - 1
    for m in range(M):
        p0, p1, w0, w1 = mp[m], mp[m + 1], mw[m], mw[m + 1]
        ln, npass = _config_path(
            n, pg[:, p0:p1], pa[:, p0:p1], T[:, w0:w1], otype[w0:w1], oprm[w0:w1], oax[w0:w1],
            osg[w0:w1], ometh[w0:w1], oact[w0:w1], ows[w0:w1], owe[w0:w1], code_obj[mc[m]:mc[m + 1]],
            compat, seq_out[n, ms[m]:ms[m + 1]], r_out[n, w0:w1], wlen_out[n, w0:w1], inp_out[n, w0:w1],
            cache_out[n, w0:w1], cached_out[n, w0:w1], wrk)
        len_out[n, m] = ln
        passes_out[n, m] = npass


def path_outputs(N, M, S, W):
    """Initialised output arrays of :func:`wrap_paths_kernel` (S, W: total slots and PathWraps)."""
    return (np.full((N, S), -1, dtype=np.int64), np.full((N, W, 2, 3), np.nan), np.zeros((N, W)),
            np.zeros((N, W), dtype=np.bool_), np.zeros((N, M)), np.zeros((N, M), dtype=np.int64),
            np.full((N, W, 2, 3), np.nan), np.zeros((N, W, 2), dtype=np.bool_))


def num_threads() -> int:
    """Threads used by the kernels: numba's setting (NUMBA_NUM_THREADS, numba.set_num_threads)."""
    return max(1, int(get_num_threads()))


_POOL = [None, 0]  # the thread pool and its size


def run_threads(kernel, args, outputs, n):
    """Run ``kernel(*args, start, step, *outputs)`` for the n configurations on num_threads() threads.

    The kernels release the GIL and write disjoint rows of the outputs; each thread takes the
    configurations start, start + step, ... (interleaved, so that costly stretches of a sweep are
    shared).  Small batches run in the calling thread.
    """
    k = min(num_threads(), n)
    if k <= 1 or n < 16:
        kernel(*args, 0, 1, *outputs)
        return
    if _POOL[1] < k - 1:
        from concurrent.futures import ThreadPoolExecutor
        _POOL[:] = [ThreadPoolExecutor(max_workers=k - 1, thread_name_prefix="osim_emb"), k - 1]
    futures = [_POOL[0].submit(kernel, *args, c, k, *outputs) for c in range(1, k)]
    kernel(*args, 0, k, *outputs)  # the calling thread takes the first share
    for f in futures:
        f.result()
