"""Where the time of the MoBL moment-arm sweep goes (issue 15 item 1), without OpenSim.

The sweep of ``bench_moment_arms.py`` (513 poses, opensim_compat=True) on one thread, timed as the CPU
time of the calling thread (``time.thread_time``, best of the repeats), so that other jobs on a shared
machine inflate the figures less than wall-clock time would:

* the whole call, the call without wrapping, the joint variables, the path points and wrap frames
  (``points_kernel``), the path construction (``wrap_paths_kernel`` on given points) -- all units
  at every pose, as without the fixed-unit shortcut -- and the path construction with the PathWraps
  of one type switched off (approximate shares: the paths change);
* every unit's path construction alone, with its passes over the PathWraps;
* the ellipsoid wraps of the final paths (each PathWrap's segment in the last pass): per wrap, the
  hybrid fan, the two tangent points and the polyline, the fan's Newton steps per sample and lockstep
  iterations, and the tangent points' iterations.

    python benchmarks/profile_sweep.py [--model PATH] [--repeat 9]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

SWEEP = ["elv_angle", "shoulder_elv", "shoulder_rot"]
TYPES = {0: "sphere", 1: "cylinder", 2: "torus", 3: "ellipsoid"}


def _best(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        ts.append(time.thread_time() - t)
    return min(ts)


def _ellipsoid_segments(plan, pg, T, out):
    """(p1, p2, semi-axes, quadrant axis, sign) of every ellipsoid PathWrap in the final paths, wrap frame."""
    from osim_emb.paths.wrapping._kernels_path import T_ELLIPSOID
    seq, r = out[0], out[1]
    mp, mw, ms = plan.path[0], plan.path[1], plan.path[2]
    otype, oprm, oax, osg = plan.path[4], plan.path[5], plan.path[6], plan.path[7]
    rows = []
    for n in range(seq.shape[0]):
        for m in range(len(mp) - 1):
            P = mp[m + 1] - mp[m]
            s = seq[n, ms[m]:ms[m + 1]]
            s = s[s >= 0]

            def ground(c):
                if c < P:
                    return pg[n, mp[m] + c]
                w, k = divmod(c - P, 2)
                Tw = T[n, mw[m] + w]
                return Tw[:3, :3] @ r[n, mw[m] + w, k] + Tw[:3, 3]
            for j in range(1, len(s) - 2):
                c = s[j]
                if c >= P and (c - P) % 2 == 0 and otype[mw[m] + (c - P) // 2] == T_ELLIPSOID:
                    w = mw[m] + (c - P) // 2
                    Tw = T[n, w]
                    p1 = Tw[:3, :3].T @ (ground(s[j - 1]) - Tw[:3, 3])
                    p2 = Tw[:3, :3].T @ (ground(s[j + 2]) - Tw[:3, 3])
                    rows.append(np.concatenate([p1, p2, oprm[w], [oax[w], osg[w]]]))
    return np.array(rows)


def _ellipsoid_drivers():
    from numba import njit

    from osim_emb.paths.wrapping import _kernels_ellipsoid as E

    @njit(cache=False)
    def wrap_all(seg, det, rr):
        wk = E.workspace()
        pts = np.empty((0, 3))
        for i in range(seg.shape[0]):
            d = (seg[i, 6], seg[i, 7], seg[i, 8])
            s, _, a, b, ln = E.ellipsoid_one((seg[i, 0], seg[i, 1], seg[i, 2]), (seg[i, 3], seg[i, 4], seg[i, 5]), d,
                                             int(seg[i, 9]), int(seg[i, 10]), 0, (math.nan, math.nan, math.nan),
                                             det[i], pts, wk)
            for k in range(3):
                rr[i, k] = a[k]
                rr[i, 3 + k] = b[k]
            rr[i, 6] = ln if s == 3 else math.nan

    @njit(cache=False)
    def fan_inputs(seg, fin):
        """The fan's chord (normalized units) where the hybrid method runs the fan (else NaN)."""
        for i in range(seg.shape[0]):
            fin[i, 0] = math.nan
            dims = (seg[i, 6], seg[i, 7], seg[i, 8])
            f = 3.0 / (dims[0] + dims[1] + dims[2])
            a = (dims[0] * f, dims[1] * f, dims[2] * f)
            p1 = (seg[i, 0] * f, seg[i, 1] * f, seg[i, 2] * f)
            p2 = (seg[i, 3] * f, seg[i, 4] * f, seg[i, 5] * f)
            d = (p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2])
            A = sum([(d[k] / a[k]) ** 2 for k in range(3)])
            B = 2.0 * sum([(d[k] / a[k]) * (p2[k] / a[k]) for k in range(3)])
            C = sum([(p2[k] / a[k]) ** 2 for k in range(3)]) - 1.0
            disc = B * B - 4 * A * C
            if disc < 0:
                continue
            l1 = (-B + math.sqrt(disc)) / (2 * A)
            l2 = (-B - math.sqrt(disc)) / (2 * A)
            r1 = (p2[0] + l1 * d[0], p2[1] + l1 * d[1], p2[2] + l1 * d[2])
            r12 = ((l2 - l1) * d[0], (l2 - l1) * d[1], (l2 - l1) * d[2])
            nd = math.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2)
            best = 0
            for k in range(3):
                if abs(d[k]) > abs(d[best]):
                    best = k
            mub = abs(d[best]) / nd
            tb = (0.0 - r1[best]) / r12[best]
            s = 1.0
            if tb > 0.7:
                s = (1.0 - tb) / 0.3
            if tb < 0.3:
                s = tb / 0.3
            if tb < 0.0 or tb > 1.0:
                s = 0.0
            if mub > 0.7073 and s < 1.0:
                mub = 0.7073 + s * (mub - 0.7073)
            if mub < 0.9:
                for k in range(3):
                    fin[i, k] = a[k]
                    fin[i, 3 + k] = r1[k]
                    fin[i, 6 + k] = r12[k]

    @njit(cache=False)
    def fans(fin):
        wk = E.workspace()
        s = 0.0
        for i in range(fin.shape[0]):
            a = (fin[i, 0], fin[i, 1], fin[i, 2])
            v = E.fan_direction(a, a, (fin[i, 3], fin[i, 4], fin[i, 5]), (fin[i, 6], fin[i, 7], fin[i, 8]),
                                (fin[i, 3], fin[i, 4], fin[i, 5]), wk[1], wk[2])
            s += v[0]
        return s

    @njit(cache=False)
    def tangents(seg, det):
        wk = E.workspace()
        s = 0.0
        for i in range(seg.shape[0]):
            dims = (seg[i, 6], seg[i, 7], seg[i, 8])
            f = 3.0 / (dims[0] + dims[1] + dims[2])
            a = (dims[0] * f, dims[1] * f, dims[2] * f)
            for e in range(2):
                p = (seg[i, 3 * e] * f, seg[i, 3 * e + 1] * f, seg[i, 3 * e + 2] * f)
                pe = -1.0 + (p[0] / a[0]) ** 2 + (p[1] / a[1]) ** 2 + (p[2] / a[2]) ** 2
                r, _ = E.tangent_point(pe, (det[i, 0], det[i, 1], det[i, 2]), p, (det[i, 6], det[i, 7], det[i, 8]),
                                       det[i, 9], a, wk[0])
                s += r[0]
        return s

    @njit(cache=False)
    def polylines(seg, det, rr):
        pts = np.empty((0, 3))
        s = 0.0
        for i in range(seg.shape[0]):
            dims = (seg[i, 6], seg[i, 7], seg[i, 8])
            f = 3.0 / (dims[0] + dims[1] + dims[2])
            a = (dims[0] * f, dims[1] * f, dims[2] * f)
            r1 = (rr[i, 0] * f, rr[i, 1] * f, rr[i, 2] * f)
            r2 = (rr[i, 3] * f, rr[i, 4] * f, rr[i, 5] * f)
            s += E.polyline(r1, r2, a, (det[i, 6], det[i, 7], det[i, 8]), det[i, 9], f, det[i, 10] != 0, pts)[1]
        return s

    return wrap_all, fan_inputs, fans, tangents, polylines


def _newton_counts(fin):
    """Per fan: mean Newton steps per sample, lockstep iterations, samples still iterating per iteration."""
    steps, lock, alive = [], [], np.zeros(12)
    tt = np.arange(1, 299) / 300.0
    for row in fin:
        a2 = row[:3] ** 2
        S = row[3:6] + tt[:, None] * row[6:9]
        au = a2 * S * S
        t = np.zeros(298)
        act = np.ones(298, bool)
        cnt = np.zeros(298, int)
        for it in range(64):
            if it < alive.size:
                alive[it] += act.sum()
            P, Q, R = t + a2[0], t + a2[1], t + a2[2]
            f = P * P * Q * Q * R * R - au[:, 0] * Q * Q * R * R - au[:, 1] * P * P * R * R - au[:, 2] * P * P * Q * Q
            fp = 2.0 * (P * Q * R * (Q * R + P * R + P * Q) - au[:, 0] * Q * R * (Q + R) - au[:, 1] * P * R * (P + R)
                        - au[:, 2] * P * Q * (P + Q))
            go = act & ~(np.abs(f) < 1e-9)
            cnt += go
            t = np.where(go, t - f / fp, t)
            act = go
            if not act.any():
                lock.append(it + 1)
                break
        steps.append(cnt.mean())
    return np.mean(steps), np.mean(lock), max(lock), alive / len(fin)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = Path(os.environ.get("OSIM_EMB_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--model", default=str(models / "mobl_arms_holzbaur.osim"))
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)

    import numba

    from osim_emb.io import load_osim
    from osim_emb.opensim.moment_arms import make_sweeps
    from osim_emb.paths import geometry as G
    from osim_emb.paths.wrapping._kernels_muscles import points_kernel
    from osim_emb.paths.wrapping._kernels_path import path_outputs, wrap_paths_kernel

    numba.set_num_threads(1)
    model = load_osim(args.model)
    q = np.vstack([s.q for s in make_sweeps(model, SWEEP, 1.0, {c: 0.0 for c in SWEEP})])
    N = q.shape[0]
    us = 1e6 / N
    rep = args.repeat
    full = _best(lambda: G.lengths_and_moment_arms(model, q, opensim_compat=True), rep)
    nowrap = _best(lambda: G.lengths_and_moment_arms(model, q, opensim_compat=True, wrapping=False), rep)
    jv = _best(lambda: G._joint_variable_arrays(model, q), rep)
    plan = G._jit_plan(model, None, True)
    val, grad = G._joint_variable_arrays(model, q)
    pt_body, pt_loc = plan.points
    mp, mw, ms = plan.path[:3]
    pg, T = np.empty((N, mp[-1], 3)), np.empty((N, mw[-1], 4, 4))
    pk = _best(lambda: points_kernel(val, grad, *plan.kin, *plan.bodies, pt_body, pt_loc, *plan.wraps, 0, 1, pg, T),
               rep)
    pa = G._point_activity(plan, q)

    def paths(path=plan.path, pg=pg, pa=pa, T=T, nu=len(plan.muscles), S=int(ms[-1]), W=int(mw[-1])):
        out = path_outputs(N, nu, S, W)
        wrap_paths_kernel(pg, pa, T, *path, True, 0, 1, *out)
        return out
    wp = _best(paths, rep)
    fixed = G._units_fixed_in_batch(plan, val, grad, pa)
    print(f"{Path(args.model).name}, {N} poses, {len(plan.muscles)} units, one thread, CPU time per pose:")
    print(f"  whole call {full * us:.1f} us ({int(fixed.sum())} units fixed in the batch, evaluated once); "
          f"without wrapping {nowrap * us:.1f} us; joint variables {jv * us:.1f} us; path points and wrap frames "
          f"{pk * us:.1f} us; path construction, every unit at every pose {wp * us:.1f} us")
    otype = plan.path[4]
    for k, name in TYPES.items():
        oact = plan.path[9].copy()
        oact[otype == k] = False
        path = list(plan.path)
        path[9] = oact
        t = _best(lambda path=tuple(path): paths(path), rep)
        print(f"  {int((otype == k).sum()):3d} {name} PathWraps: path construction without them {t * us:.1f} us "
              f"(~{(wp - t) * us:.1f} us theirs)")
    print("per unit, path construction at every pose (us per pose, passes):")
    rows = []
    for i, mu in enumerate(plan.muscles):
        sub = G._jit_plan(model, [mu.name], True)
        spg, spa, sT = (np.ascontiguousarray(x) for x in (pg[:, mp[i]:mp[i + 1]], pa[:, mp[i]:mp[i + 1]],
                                                           T[:, mw[i]:mw[i + 1]]))

        def one(sub=sub, spg=spg, spa=spa, sT=sT):
            return paths(sub.path, spg, spa, sT, 1, int(sub.path[2][-1]), int(sub.path[1][-1]))
        kinds = "+".join(TYPES[k][:3] for k in sub.path[4]) or "-"
        rows.append((_best(one, 3) * us, mu.name, kinds, one()[5].mean(), bool(fixed[i])))
    for t, name, kinds, passes, fx in sorted(rows, reverse=True):
        print(f"  {name:9s} {kinds:16s} {t:6.2f} us  passes {passes:.2f}{'  (fixed in the batch)' if fx else ''}")

    wrap_all, fan_inputs, fans, tangents, polylines = _ellipsoid_drivers()
    seg = _ellipsoid_segments(plan, pg, T, paths())
    n = seg.shape[0]
    det, rr, fin = np.zeros((n, 16)), np.zeros((n, 7)), np.zeros((n, 9))
    t_all = _best(lambda: wrap_all(seg, det, rr), rep)
    fan_inputs(seg, fin)
    fin = np.ascontiguousarray(fin[~np.isnan(fin[:, 0])])
    t_fan = _best(lambda: fans(fin), rep)
    t_tan = _best(lambda: tangents(seg, det), rep)
    t_pol = _best(lambda: polylines(seg, det, rr), rep)
    print(f"ellipsoid wraps of the final paths: {n} ({n / N:.1f} per pose), {fin.shape[0]} with the fan; "
          f"per wrap {t_all / n * 1e6:.2f} us: fan {t_fan / max(len(fin), 1) * 1e6:.2f} us (where it runs), "
          f"tangent points {t_tan / n * 1e6:.2f} us (both), polyline {t_pol / n * 1e6:.2f} us "
          f"({np.nanmean(det[:, 11]):.1f} points)")
    steps, lock, lockmax, alive = _newton_counts(fin[:2000])
    print(f"  fan: Newton steps per sample {steps:.2f}, lockstep iterations per fan {lock:.2f} (max {lockmax}); "
          f"samples still iterating by iteration: {' '.join(f'{x:.0f}' for x in alive)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
