"""Compiled (numba) musculotendon geometry of a whole model: lengths L and moment arms R.

One kernel does, for every configuration (in parallel over configurations):

1. the frame transforms and spatial Jacobians (the recursion of
   :func:`osim_emb.core.kinematics.forward_kinematics`, from the joint variables and their
   gradients, which are evaluated beforehand with :func:`osim_emb.core.kinematics.joint_variables`);
2. the ground positions of the path points and the ground transforms of the wrap frames;
3. every muscle's path (:func:`._kernels_path._config_path`, OpenSim's GeometryPath);
4. its column of R: the unit tension along each segment between points on different
   bodies, summed into a wrench per frame, times the frame's Jacobian (Eq 195 in ground
   form, as :func:`osim_emb.paths.geometry._moment_arm_of_path`).

It is what :func:`osim_emb.paths.geometry.lengths_and_moment_arms` runs (the one
implementation; ``points_kernel`` and ``path_moment_arms_kernel`` are its first and last
steps alone, for :func:`osim_emb.paths.geometry.path_states` and paths built elsewhere).  Every
sum is accumulated in the order numpy uses (its matrix products go through BLAS, which
accumulates with fused multiply-adds; ``einsum`` has its own orders), so that the
kinematic inputs of the wrapping are bitwise those of :func:`osim_emb.core.kinematics.forward_kinematics`: the wrapping
algorithms (loose iteration tolerances, the cylinder's over-relaxed adjustment) would
amplify a difference of 1e-16 m in a path point to ~1e-12 m in a length.  The BLAS
orders were measured with the OpenBLAS bundled with numpy on x86-64 (FMA); with another
BLAS the results agree to that ~1e-12 m instead.
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.core.kinematics_kernels import _fma, frame_kinematics
from osim_emb.paths.wrapping._kernels_path import _config_path, _max_sizes, _work

_KW = dict(cache=True, error_model="numpy")
_KW0 = dict(_KW, _nrt=False)  # functions that take arrays but allocate nothing (see _kernels_path)
NAN = math.nan


@njit(**_KW0)
def _mm4(a0, a1, a2, a3, b0, b1, b2, b3):
    """Matrix-matrix entry of numpy's 4x4 products (BLAS: fused multiply-adds, chain k = 0..3)."""
    return _fma(a3, b3, _fma(a2, b2, _fma(a1, b1, a0 * b0)))


@njit(**_KW0)
def _body_transform(rot, pos, f, off, out):
    """out = A_f @ off (4x4), A_f = [R_f, o_f; 0 0 0 1], as numpy's transforms @ offsets."""
    for a in range(4):
        if a < 3:
            r0, r1, r2, r3 = rot[f, a, 0], rot[f, a, 1], rot[f, a, 2], pos[f, a]
        else:
            r0, r1, r2, r3 = 0.0, 0.0, 0.0, 1.0
        for b in range(4):
            out[a, b] = _mm4(r0, r1, r2, r3, off[0, b], off[1, b], off[2, b], off[3, b])


@njit(**_KW0)
def _config_points(n, val, grad, parent, revolute, offs, axes, vt, vt2, body_frame, body_off, body_used, pt_body,
                   pt_loc, wr_body, wr_off, wr_first, pg, T, rot, pos, twist, jac, bt):
    """Configuration n: frame kinematics (rot, pos, twist, jac), the ground positions of the path points
    pg[n] and the ground transforms of the wrap frames T[n]."""
    Ptot = pt_body.shape[0]
    Wtot = wr_body.shape[0]
    frame_kinematics(val[n], grad[n], parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac)
    for b in range(body_frame.shape[0]):
        if body_used[b]:
            _body_transform(rot, pos, body_frame[b], body_off[b], bt[b])
    for p in range(Ptot):  # einsum('npij,pj->npi') + translation, in numpy's order
        b = pt_body[p]
        for a in range(3):
            pg[n, p, a] = ((bt[b, a, 0] * pt_loc[p, 0] + bt[b, a, 2] * pt_loc[p, 2])
                           + bt[b, a, 1] * pt_loc[p, 1]) + bt[b, a, 3]
    for w in range(Wtot):  # body transform @ wrap frame in the body (once per wrap object)
        w1 = wr_first[w]
        if w1 != w:
            for a in range(3):
                for c in range(4):
                    T[n, w, a, c] = T[n, w1, a, c]
        else:
            b = wr_body[w]
            for a in range(3):
                for c in range(4):
                    T[n, w, a, c] = _mm4(bt[b, a, 0], bt[b, a, 1], bt[b, a, 2], bt[b, a, 3],
                                         wr_off[w, 0, c], wr_off[w, 1, c], wr_off[w, 2, c], wr_off[w, 3, c])
        T[n, w, 3, 0], T[n, w, 3, 1], T[n, w, 3, 2], T[n, w, 3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(nogil=True, **_KW)
def points_kernel(val, grad, parent, revolute, offs, axes, vt, vt2, body_frame, body_off, body_used, pt_body, pt_loc,
                  wr_body, wr_off, wr_first, start, step, pg, T):
    """Only the path points pg (N, Ptot, 3) and wrap frames T (N, Wtot, 4, 4) of
    :func:`lengths_moment_arms_kernel` (the input of :func:`._kernels_path.wrap_paths_kernel`)."""
    N = val.shape[0]
    nf = val.shape[1]
    nq = grad.shape[2]
    rot = np.empty((nf, 3, 3))
    pos = np.empty((nf, 3))
    twist = np.empty((nf, 6))
    jac = np.empty((nf, nq, 6))
    bt = np.empty((body_frame.shape[0], 4, 4))
    for n in range(start, N, step):
        _config_points(n, val, grad, parent, revolute, offs, axes, vt, vt2, body_frame, body_off, body_used, pt_body,
                       pt_loc, wr_body, wr_off, wr_first, pg, T, rot, pos, twist, jac, bt)


@njit(**_KW0)
def _config_muscles(n, val, grad, parent, revolute, offs, axes, vt, vt2, body_frame, body_off, body_used, pt_body,
                    pt_loc, pa, wr_body, wr_off, wr_first, slot_frame, uframe, muf, mp, mw, ms, mc, otype, oprm, oax,
                    osg, ometh, oact, ows, owe, code_obj, compat, want_r, pg, T, length, R, ws):
    """Configuration n of :func:`lengths_moment_arms_kernel` with the work arrays ``ws`` of
    :func:`pose_workspace` (allocation-free, so compiled without reference counting: the many array
    views it makes cost nothing)."""
    (rot, pos, twist, jac, bt, wrk, seq_all, r_all, wlen_all, inp_all, cache_all, cached_all, pts, dps, ee, wrench,
     wsum) = ws
    M = mp.shape[0] - 1
    _config_points(n, val, grad, parent, revolute, offs, axes, vt, vt2, body_frame, body_off, body_used, pt_body,
                   pt_loc, wr_body, wr_off, wr_first, pg, T, rot, pos, twist, jac, bt)
    seq_all[:] = -1
    r_all[:] = NAN
    wlen_all[:] = 0.0
    inp_all[:] = False
    cache_all[:] = NAN
    cached_all[:] = False
    for m in range(M):
        p0, p1, w0, w1, s0, s1 = mp[m], mp[m + 1], mw[m], mw[m + 1], ms[m], ms[m + 1]
        seq = seq_all[0, s0:s1]
        r = r_all[0, w0:w1]
        inp = inp_all[0, w0:w1]
        cache = cache_all[0, w0:w1]
        cached = cached_all[0, w0:w1]
        ln, _ = _config_path(
            n, pg[:, p0:p1], pa[:, p0:p1], T[:, w0:w1], otype[w0:w1], oprm[w0:w1], oax[w0:w1],
            osg[w0:w1], ometh[w0:w1], oact[w0:w1], ows[w0:w1], owe[w0:w1], code_obj[mc[m]:mc[m + 1]],
            compat, seq, r, wlen_all[0, w0:w1], inp, cache, cached, wrk)
        length[n, m] = ln
        if not want_r:
            continue
        for k in range(R.shape[1]):
            R[n, k, m] = 0.0
        # ---- the moment arms: effective points, lines of action, wrenches per frame ----
        Sm = s1 - s0
        Pm = p1 - p0
        for s in range(Sm):
            c = seq[s]
            cc = c if c >= 0 else 0
            if cc < Pm:
                for a in range(3):
                    pts[s, a] = pg[n, p0 + cc, a]
                    dps[s, a] = pts[s, a]
            else:
                w = (cc - Pm) // 2
                k = (cc - Pm) % 2
                for a in range(3):  # einsum order (x, z, y), as numpy's tangent points in ground
                    tgs = ((T[n, w0 + w, a, 0] * r[w, k, 0] + T[n, w0 + w, a, 2] * r[w, k, 2])
                           + T[n, w0 + w, a, 1] * r[w, k, 1]) + T[n, w0 + w, a, 3]
                    if not inp[w]:
                        tgs = NAN
                    pts[s, a] = tgs
                    dv = tgs
                    if compat and inp[w] and cached[w, k]:
                        dv = cache[w, k, a]
                        if dv != dv:
                            dv = tgs
                    dps[s, a] = dv
        _moment_arm_column(seq, pts, dps, slot_frame[s0:s1], uframe[muf[m]:muf[m + 1]], jac, R[n, :, m], ee,
                           wrench, wsum)


@njit(**_KW0)
def _moment_arm_column(seq, pts, dps, slot_frame, uframe, jac, r, ee, wrench, wsum):
    """Add one path's column of R to r (nq,): the unit tension along each segment between effective
    points on different frames, summed into a wrench per moving frame, times the frame's Jacobian
    (Eq 195 in ground form).  seq (S,): slots in path order (-1 padded); pts (S, 3): ground
    positions along seq (where the forces act); dps (S, 3): the positions that set the directions;
    slot_frame: frame of each slot; uframe: the path's distinct moving frames; jac (nf, nq, 6)."""
    Sm = seq.shape[0]
    nq = r.shape[0]
    for s in range(Sm - 1):
        a_, b_ = seq[s], seq[s + 1]
        fa = slot_frame[a_ if a_ >= 0 else 0]
        fb = slot_frame[b_ if b_ >= 0 else 0]
        d0 = dps[s + 1, 0] - dps[s, 0]
        d1 = dps[s + 1, 1] - dps[s, 1]
        d2 = dps[s + 1, 2] - dps[s, 2]
        if a_ >= 0 and b_ >= 0 and fa != fb:
            nrm = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            den = nrm if nrm > 0 else 1.0
            ee[s, 0], ee[s, 1], ee[s, 2] = d0 / den, d1 / den, d2 / den
        else:
            ee[s, 0], ee[s, 1], ee[s, 2] = 0.0, 0.0, 0.0
    for s in range(Sm):
        f0 = 0.0
        f1 = 0.0
        f2 = 0.0
        if s < Sm - 1:
            f0, f1, f2 = f0 + ee[s, 0], f1 + ee[s, 1], f2 + ee[s, 2]
        if s >= 1:
            f0, f1, f2 = f0 - ee[s - 1, 0], f1 - ee[s - 1, 1], f2 - ee[s - 1, 2]
        x0, x1, x2 = pts[s, 0], pts[s, 1], pts[s, 2]
        wrench[s, 0] = x1 * f2 - x2 * f1
        wrench[s, 1] = x2 * f0 - x0 * f2
        wrench[s, 2] = x0 * f1 - x1 * f0
        wrench[s, 3], wrench[s, 4], wrench[s, 5] = f0, f1, f2
    # wrench per moving frame: einsum('ns,nsc->nc') sums over all slots in order, the other frames'
    # slots counting as 0 * wrench; where every wrench is finite those terms add nothing (the sum
    # starts at +0 and can never become -0), so each slot goes straight to its frame's sum
    nu = uframe.shape[0]
    finite = True
    for s in range(Sm):
        for a in range(6):
            if not abs(wrench[s, a]) < np.inf:
                finite = False
    for u in range(nu):
        for a in range(6):
            wsum[u, a] = 0.0
    if finite:
        for s in range(Sm):
            c = seq[s]
            if c >= 0:
                fr = slot_frame[c]
                for u in range(nu):
                    if uframe[u] == fr:
                        for a in range(6):
                            wsum[u, a] = wsum[u, a] + wrench[s, a]
    else:
        for u in range(nu):
            fr = uframe[u]
            for s in range(Sm):
                c = seq[s]
                on = 1.0 if (c >= 0 and slot_frame[c] == fr) else 0.0
                for a in range(6):
                    wsum[u, a] = wsum[u, a] + on * wrench[s, a]
    for u in range(nu):
        fr = uframe[u]
        for k in range(nq):  # einsum order over the 6 components: lanes (0, 2, 4) and (1, 3, 5)
            lane0 = (jac[fr, k, 0] * wsum[u, 0] + jac[fr, k, 2] * wsum[u, 2]) + jac[fr, k, 4] * wsum[u, 4]
            lane1 = (jac[fr, k, 1] * wsum[u, 1] + jac[fr, k, 3] * wsum[u, 3]) + jac[fr, k, 5] * wsum[u, 5]
            r[k] = r[k] + (lane0 + lane1)


@njit(nogil=True, **_KW)
def path_moment_arms_kernel(seq, pts, dps, slot_frame, uframe, jac, start, step, R):
    """R (N, nq) of one path given its effective points: seq (N, S), pts and dps (N, S, 3) gathered
    along seq, slot_frame (n_slots,), uframe (distinct moving frames), jac (N, nf, nq, 6)."""
    N = seq.shape[0]
    S = max(seq.shape[1], 1)
    ee = np.empty((S, 3))
    wrench = np.empty((S, 6))
    wsum = np.empty((S, 6))
    for n in range(start, N, step):
        _moment_arm_column(seq[n], pts[n], dps[n], slot_frame, uframe, jac[n], R[n], ee, wrench, wsum)


@njit(**_KW)
def pose_workspace(nf, nq, body_frame, mp, mw, ms):
    """The work arrays of one configuration of :func:`lengths_moment_arms_kernel` (nf frames, nq
    coordinates, the model's bodies, the paths' offsets mp, mw, ms): allocate once, reuse for any
    number of configurations (:func:`pose_lengths_moment_arms`)."""
    M = mp.shape[0] - 1
    Wtot = mw[M]
    S, W = _max_sizes(mp, mw)
    return (np.empty((nf, 3, 3)), np.empty((nf, 3)), np.empty((nf, 6)), np.empty((nf, nq, 6)),
            np.empty((body_frame.shape[0], 4, 4)), _work(S, W),
            # this configuration's path outputs, shaped as wrap_paths_kernel's (one compiled _config_path)
            np.empty((1, ms[M]), dtype=np.int64), np.empty((1, Wtot, 2, 3)), np.empty((1, Wtot)),
            np.empty((1, Wtot), dtype=np.bool_), np.empty((1, Wtot, 2, 3)), np.empty((1, Wtot, 2), dtype=np.bool_),
            np.empty((S, 3)), np.empty((S, 3)), np.empty((max(S - 1, 1), 3)), np.empty((S, 6)),
            np.empty((max(S, 1), 6)))  # wsum: at most one moving frame per slot


@njit(**_KW0)
def pose_lengths_moment_arms(val, grad, pa, model_arrays, path_arrays, out, ws):
    """L and R of one configuration without allocating, callable from other compiled code (the
    muscle-driven right-hand side): the arguments of :func:`lengths_moment_arms_kernel` for N = 1,
    grouped -- ``model_arrays`` = (parent, ..., pt_loc), ``path_arrays`` = (wr_body, ..., want_r),
    ``out`` = (pg, T, length, R) (R need not be zeroed) -- and the work arrays ``ws`` of
    :func:`pose_workspace`.  Compiled without reference counting, and the tuples are unpacked here:
    a caller with reference counting that unpacked them would incref and decref every array (two
    atomic operations each, ~3 us a call for the ~90 arrays)."""
    _config_muscles(0, val, grad, *model_arrays, pa, *path_arrays, *out, ws)


@njit(nogil=True, **_KW)
def lengths_moment_arms_kernel(val, grad, parent, revolute, offs, axes, vt, vt2,
                               body_frame, body_off, body_used, pt_body, pt_loc, pa, wr_body, wr_off, wr_first,
                               slot_frame, uframe, muf, mp, mw, ms, mc,
                               otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj, compat, want_r,
                               start, step, pg, T, length, R):
    """L (N, M) and R (N, nq, M) of M paths; see the module docstring.

    val (N, nf), grad (N, nf, nq): joint variables.  Joint/frame i: parent, revolute, offset (4, 4),
    axis, skew(axis) and its square.  Bodies: frame, frame-to-body transform, whether a path uses it.
    Path points: body, location, activity (N, Ptot).  PathWraps: body, wrap frame in the body (4, 4),
    first PathWrap of the same wrap object.  Sequence slot
    frames (Stot,) and, per path, the distinct moving frames uframe[muf[m]:muf[m+1]].  The path
    arrays as for :func:`._kernels_path.wrap_paths_kernel`; configurations start, start + step, ...
    (threads: :func:`._kernels_path.run_threads`).  Outputs: pg (N, Ptot, 3), T (N, Wtot, 4, 4),
    length (N, M), R (N, nq, M).
    """
    N = val.shape[0]
    ws = pose_workspace(val.shape[1], grad.shape[2], body_frame, mp, mw, ms)
    for n in range(start, N, step):
        _config_muscles(n, val, grad, parent, revolute, offs, axes, vt, vt2, body_frame, body_off, body_used, pt_body,
                        pt_loc, pa, wr_body, wr_off, wr_first, slot_frame, uframe, muf, mp, mw, ms, mc, otype, oprm,
                        oax, osg, ometh, oact, ows, owe, code_obj, compat, want_r, pg, T, length, R, ws)
