"""The compiled inverse-kinematics solve: every frame of a trial in one kernel call (joint-variable program, frame
recursion, marker residuals and the box-constrained Levenberg-Marquardt iteration; docs/inverse_kinematics.md)."""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.core.compiled_kernels import eval_program
from osim_emb.core.kinematics_kernels import frame_kinematics

_KW = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_KW)
def _evaluate(program, tree, q, work, frames, local, observed, scale, task_q, task_node, task_w, reference,
              residual, rows, positions):
    """r(q) and ∂r/∂q of one frame: markers (3 rows each, scaled by √(w_i/W), zero when missing), then the
    coordinate tasks (√w_j (c_j − r_j)); the markers' ground positions into ``positions``."""
    ints, flts, ext, chains, nodes = program
    parent, revolute, offs, axes, vt, vt2 = tree
    dirs, hq, val, grad, fval, fgrad, rot, pos, twist, jac = work
    nq = q.size
    eval_program(ints, flts, ext, q, dirs, False, val, grad, hq, chains)
    for i in range(nodes.size):
        node = nodes[i]
        fval[i] = val[node] if node >= 0 else 0.0
        for k in range(nq):
            fgrad[i, k] = grad[node, k] if node >= 0 else 0.0
    frame_kinematics(fval, fgrad, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac)
    m = frames.size
    for i in range(m):
        f = frames[i]
        s = scale[i]
        for a in range(3):
            positions[i, a] = rot[f, a, 0] * local[i, 0] + rot[f, a, 1] * local[i, 1] + rot[f, a, 2] * local[i, 2] \
                + pos[f, a]
        p0, p1, p2 = positions[i, 0], positions[i, 1], positions[i, 2]
        for a in range(3):
            residual[3 * i + a] = s * (positions[i, a] - observed[i, a]) if s > 0.0 else 0.0
        for k in range(nq):
            w0, w1, w2 = jac[f, k, 0], jac[f, k, 1], jac[f, k, 2]
            rows[3 * i, k] = s * (w1 * p2 - w2 * p1 + jac[f, k, 3])
            rows[3 * i + 1, k] = s * (w2 * p0 - w0 * p2 + jac[f, k, 4])
            rows[3 * i + 2, k] = s * (w0 * p1 - w1 * p0 + jac[f, k, 5])
    for r in range(task_w.size):
        row = 3 * m + r
        k = task_q[r]
        if k >= 0:
            value = q[k]
            for c in range(nq):
                rows[row, c] = task_w[r] if c == k else 0.0
        else:
            node = task_node[r]
            value = val[node]
            for c in range(nq):
                rows[row, c] = task_w[r] * grad[node, c]
        residual[row] = task_w[r] * (value - reference[r])


@njit(**_KW)
def _cholesky_solve(a, b):
    """x with a x = b for a symmetric a by Cholesky; (x, False) when a is not positive definite."""
    n = b.size
    low = np.zeros((n, n))
    for j in range(n):
        d = a[j, j]
        for k in range(j):
            d -= low[j, k] * low[j, k]
        if not d > 0.0:
            return b, False
        low[j, j] = math.sqrt(d)
        for i in range(j + 1, n):
            v = a[i, j]
            for k in range(j):
                v -= low[i, k] * low[j, k]
            low[i, j] = v / low[j, j]
    y = np.empty(n)
    for i in range(n):
        v = b[i]
        for k in range(i):
            v -= low[i, k] * y[k]
        y[i] = v / low[i, i]
    x = np.empty(n)
    for i in range(n - 1, -1, -1):
        v = y[i]
        for k in range(i + 1, n):
            v -= low[k, i] * x[k]
        x[i] = v / low[i, i]
    return x, True


@njit(**_KW)
def _step(q, residual, rows, second, lo, hi, damping, trial):
    """The damped step of the model JᵀJ + S (S: the secant estimate of Σ r_i ∇²r_i; Marquardt scaling by
    diag(JᵀJ)) on the coordinates the box does not hold, projected onto lo <= q <= hi; returns the largest change
    of a coordinate, or -1 when the damped model is not positive definite (more damping needed)."""
    nq = q.size
    grad = rows.T @ residual
    free = np.empty(nq, dtype=np.int64)
    nf = 0
    for k in range(nq):
        if not ((q[k] <= lo[k] and grad[k] > 0.0) or (q[k] >= hi[k] and grad[k] < 0.0)):
            free[nf] = k
            nf += 1
    a = np.empty((nf, nf))
    b = np.empty(nf)
    largest = 0.0
    for i in range(nf):
        for j in range(i, nf):
            s = 0.0
            for r in range(rows.shape[0]):
                s += rows[r, free[i]] * rows[r, free[j]]
            a[i, j] = s
            a[j, i] = s
        largest = max(largest, a[i, i])
        b[i] = -grad[free[i]]
    floor = 1e-12 * max(largest, 1.0)
    for i in range(nf):
        a[i, i] += damping * max(a[i, i], floor)
    for i in range(nf):
        for j in range(nf):
            a[i, j] += second[free[i], free[j]]
    x, ok = _cholesky_solve(a, b)
    if not ok:
        return -1.0
    moved = 0.0
    for k in range(nq):
        trial[k] = q[k]
    for i in range(nf):
        k = free[i]
        trial[k] = min(max(q[k] + x[i], lo[k]), hi[k])
        moved = max(moved, abs(trial[k] - q[k]))
    return moved


@njit(**_KW)
def _secant_update(second, step, rows_old, rows_new, res_new, res_old):
    """Dennis, Gay and Welsch's update of S (NL2SOL): S s = y# with y# = (J₊ − J)ᵀ r₊, after sizing S by
    min(1, |sᵀy#| / |sᵀSs|); skipped unless yᵀs > 0 (y = J₊ᵀr₊ − Jᵀr)."""
    y_sharp = (rows_new - rows_old).T @ res_new
    y = rows_new.T @ res_new - rows_old.T @ res_old
    ys = y @ step
    if not ys > 0.0:
        return
    ss = step @ (second @ step)
    if ss != 0.0:
        size = min(1.0, abs(step @ y_sharp) / abs(ss))
        second *= size
    w = y_sharp - second @ step
    ws = w @ step
    n = step.size
    for i in range(n):
        for j in range(n):
            second[i, j] += (w[i] * y[j] + y[i] * w[j]) / ys - ws * y[i] * y[j] / (ys * ys)


@njit(**_KW)
def solve_frames(program, tree, work, frames, local, observed, weights, task_q, task_node, task_w, references, lo,
                 hi, q0, tolerance, max_evaluations, start, stop, q_out, positions_out, squared_out, objective_out,
                 evaluations_out, column_norms_out):
    """Frames start..stop-1 of ``observed`` (T, m, 3; NaN: missing), each from the previous solution (the first
    frame from q0, later ones from the linear extrapolation of the last two solutions, clipped to the box):
    Levenberg-Marquardt until a step moves q by less than ``tolerance`` (1 + |q|), |r|² stops decreasing beyond
    round-off, or ``max_evaluations``.  Frames before ``start`` must be solved already (in q_out)."""
    m = frames.size
    nq = q0.size
    nr = 3 * m + task_w.size
    residual = np.empty(nr)
    rows = np.empty((nr, nq))
    res_q = np.empty(nr)
    rows_q = np.empty((nr, nq))
    positions = np.empty((m, 3))
    positions_q = np.empty((m, 3))
    obs = np.zeros((m, 3))
    scale = np.zeros(m)
    present = np.zeros(m, dtype=np.bool_)
    q = q0.copy() if start == 0 else q_out[start - 1].copy()
    trial = np.empty(nq)
    second = np.zeros((nq, nq))
    eps8 = 8.0 * np.finfo(np.float64).eps
    for t in range(start, stop):
        total = 0.0
        for i in range(m):
            present[i] = True
            for a in range(3):
                if not math.isfinite(observed[t, i, a]):
                    present[i] = False
            scale[i] = weights[i] if present[i] else 0.0
            total += scale[i]
            for a in range(3):
                obs[i, a] = observed[t, i, a] if present[i] else 0.0
        for i in range(m):
            scale[i] = math.sqrt(scale[i] / total) if total > 0.0 and scale[i] > 0.0 else 0.0
        if t >= 2:
            for k in range(nq):
                q[k] = min(max(2.0 * q_out[t - 1, k] - q_out[t - 2, k], lo[k]), hi[k])
        _evaluate(program, tree, q, work, frames, local, obs, scale, task_q, task_node, task_w, references[t],
                  res_q, rows_q, positions_q)
        cost = res_q @ res_q
        evaluations = 1
        damping = 1e-6
        while evaluations < max_evaluations and damping <= 1e12:
            moved = _step(q, res_q, rows_q, second, lo, hi, damping, trial)
            if moved < 0.0:
                damping *= 10.0
                continue
            size = 0.0
            for k in range(nq):
                size = max(size, abs(q[k]))
            if moved <= tolerance * (1.0 + size):
                break
            _evaluate(program, tree, trial, work, frames, local, obs, scale, task_q, task_node, task_w,
                      references[t], residual, rows, positions)
            evaluations += 1
            new_cost = residual @ residual
            if new_cost < cost:
                cost = new_cost
                _secant_update(second, trial - q, rows_q, rows, residual, res_q)
                q[:] = trial
                res_q[:] = residual
                rows_q[:, :] = rows
                positions_q[:, :] = positions
                damping = max(damping * 0.1, 1e-12)
            elif new_cost - cost <= eps8 * cost:
                break
            else:
                damping *= 10.0
        q_out[t] = q
        objective_out[t] = 0.5 * cost
        evaluations_out[t] = evaluations
        for i in range(m):
            positions_out[t, i] = positions_q[i]
            d = 0.0
            if present[i]:
                for a in range(3):
                    d += (positions_q[i, a] - obs[i, a]) ** 2
            squared_out[t, i] = d
        for k in range(nq):
            s = 0.0
            for r in range(nr):
                s += rows_q[r, k] ** 2
            column_norms_out[t, k] = math.sqrt(s)
