"""The muscle-driven ODE integrated by a compiled implicit multistep method (``method="BDF-jit"``).

Muscle-driven models are stiff: a compliant tendon and its fibre make a fast mode, and an explicit method's step
is held to its stability limit whatever the tolerance (fitted MoBL: ~20,000 right-hand sides for 0.1 s at any
rtol).  This is the variable-order (1-5), quasi-constant-step numerical differentiation formulas of Shampine &
Reichelt (The MATLAB ODE Suite, SIAM J. Sci. Comput. 18, 1997; the method of MATLAB's ode15s and SciPy's BDF), in
the backward-difference form, with SciPy's BDF's error control and order selection, compiled as one loop.

What makes it cheap is the structure of the Jacobian (:func:`muscle_driven_jit.jacobian_parts`): the q and
q-dot columns (2 n_q right-hand sides), one 2x2 block per muscle, and the muscle columns of q-ddot of rank one
(M^-1 R[:, m] dF_m).  The Newton matrix I - cJ is never formed: eliminating the muscle blocks and q leaves an
n_q x n_q system (:func:`factor`, :func:`solve`), so a new step size costs O(n_m n_q^2) instead of an n^3
factorization.  The Jacobian is re-evaluated only when Newton's iteration fails to converge with an old one.
Outputs at ``t_eval`` come from the method's interpolating polynomial.
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.core.closed_chain_kernels import solve_linear
from osim_emb.simulation.muscle_driven_jit import (REACHED, UNDERFLOW, BUDGET, _rhs, _rms, initial_step,
                                                   jacobian_parts, jacobian_workspace)

__all__ = ["bdf_start", "bdf_run", "factor", "solve"]

MAX_ORDER = 5
NEWTON_ITERATIONS = 4
MIN_FACTOR, MAX_FACTOR = 0.2, 10.0


@njit(error_model="numpy")
def factor(c, parts, fac):  # pragma: no cover - compiled
    """Prepare x = (I - c J)^-1 b for :func:`solve`: each muscle's 2x2 block inverted, its coupling to q-dot
    (S_m) and the n_q x n_q Schur complement G (in ``fac`` = (block inverses (n_m, 2, 2), S (n_m, 2, n_q),
    G (n_q, n_q), work)).  False if a block or G is singular."""
    jcols, jmm, dforce, minv_r, _ = parts
    ainv, smat, g, _ = fac
    nq, nm = minv_r.shape
    for i in range(nq):
        for k in range(nq):
            g[i, k] = (1.0 if i == k else 0.0) - c * c * jcols[nq + i, k] - c * jcols[nq + i, nq + k]
    for m in range(nm):
        a00, a01 = 1.0 - c * jmm[m, 0, 0], -c * jmm[m, 0, 1]
        a10, a11 = -c * jmm[m, 1, 0], 1.0 - c * jmm[m, 1, 1]
        det = a00 * a11 - a01 * a10
        if det == 0.0 or not math.isfinite(det):
            return False
        ainv[m, 0, 0], ainv[m, 0, 1] = a11 / det, -a01 / det
        ainv[m, 1, 0], ainv[m, 1, 1] = -a10 / det, a00 / det
        ra, rl = 2 * nq + m, 2 * nq + nm + m
        for k in range(nq):  # x_m = p_m + S_m x_v, S_m = c A_m^-1 (c J_mq + J_mv)
            ta = c * (c * jcols[ra, k] + jcols[ra, nq + k])
            tl = c * (c * jcols[rl, k] + jcols[rl, nq + k])
            smat[m, 0, k] = ainv[m, 0, 0] * ta + ainv[m, 0, 1] * tl
            smat[m, 1, k] = ainv[m, 1, 0] * ta + ainv[m, 1, 1] * tl
        for k in range(nq):
            w = dforce[m, 0] * smat[m, 0, k] + dforce[m, 1] * smat[m, 1, k]
            for i in range(nq):
                g[i, k] -= c * minv_r[i, m] * w
    for i in range(nq):
        for k in range(nq):
            if not math.isfinite(g[i, k]):
                return False
    return True


@njit(error_model="numpy")
def solve(c, parts, fac, b, x):  # pragma: no cover - compiled
    """x = (I - c J)^-1 b with the arrays of :func:`factor`; False if G is singular.  With the state
    (q, q-dot, activations, fibre lengths): x_q = b_q + c x_v, x_m = p_m + S_m x_v, and G x_v = b_v + c J_vq b_q
    + c sum_m M^-1 R[:, m] (dF_m . p_m), p_m = A_m^-1 (b_m + c J_mq b_q)."""
    jcols, jmm, dforce, minv_r, _ = parts
    ainv, smat, g, work = fac
    nq, nm = minv_r.shape
    gw, rv, xv, p = work
    for i in range(nq):
        s = b[nq + i]
        for k in range(nq):
            s += c * jcols[nq + i, k] * b[k]
        rv[i] = s
    for m in range(nm):
        ra, rl = 2 * nq + m, 2 * nq + nm + m
        ba, bl = b[ra], b[rl]
        for k in range(nq):
            ba += c * jcols[ra, k] * b[k]
            bl += c * jcols[rl, k] * b[k]
        p0 = ainv[m, 0, 0] * ba + ainv[m, 0, 1] * bl
        p1 = ainv[m, 1, 0] * ba + ainv[m, 1, 1] * bl
        p[m, 0], p[m, 1] = p0, p1
        w = c * (dforce[m, 0] * p0 + dforce[m, 1] * p1)
        for i in range(nq):
            rv[i] += minv_r[i, m] * w
    gw[:, :] = g
    if not solve_linear(gw, rv, xv):
        return False
    for k in range(nq):
        x[nq + k] = xv[k]
        x[k] = b[k] + c * xv[k]
    for m in range(nm):
        s0, s1 = p[m, 0], p[m, 1]
        for k in range(nq):
            s0 += smat[m, 0, k] * xv[k]
            s1 += smat[m, 1, k] * xv[k]
        x[2 * nq + m] = s0
        x[2 * nq + nm + m] = s1
    return True


@njit(error_model="numpy")
def _rescale(d, order, ratio):  # pragma: no cover - compiled
    """The backward differences d[:order + 1] of the interpolating polynomial re-expressed for the step size
    multiplied by ``ratio`` (Shampine & Reichelt 1997, Sec. 2.3: D <- (R(ratio) U)^T D)."""
    if ratio == 1.0:
        return
    k = order + 1
    rr = np.ones((k, k))
    uu = np.ones((k, k))
    for j in range(k):  # rr[i, j] = prod_{l=1..i} (l - 1 - ratio j) / l; uu the same at ratio 1
        for i in range(1, k):
            rr[i, j] = rr[i - 1, j] * (i - 1 - ratio * j) / i
            uu[i, j] = uu[i - 1, j] * (i - 1 - j) / i
    ru = rr @ uu
    new = ru.T @ d[:k]
    d[:k] = new


def bdf_start(t0: float, y0: np.ndarray, prog, mus) -> tuple:
    """The state :func:`bdf_run` continues: (d, the backward differences (MAX_ORDER + 3, n); fs = [t, h,
    c of the factorization, error norm, safety]; ints = [order, steps of one size, Jacobian fresh, next output,
    right-hand sides, Jacobians, factorizations, steps, rejected steps]; the Jacobian's parts; the factorization).
    No right-hand side is evaluated yet (0 in ints[4]): the first :func:`bdf_run` call evaluates f, the first step
    and the Jacobian (not a kernel of its own: each compiled kernel holds a copy of the whole right-hand side)."""
    y0 = np.ascontiguousarray(y0, dtype=float)
    parts = jacobian_workspace(prog[5].shape[1], mus[1].shape[0])
    nq, nm = parts[3].shape
    fac = (np.empty((nm, 2, 2)), np.empty((nm, 2, nq)), np.empty((nq, nq)),
           (np.empty((nq, nq)), np.empty(nq), np.empty(nq), np.empty((nm, 2))))
    d = np.zeros((MAX_ORDER + 3, y0.shape[0]))
    d[0] = y0
    fs = np.array([float(t0), 0.0, math.nan, 0.0, 0.9])
    ints = np.zeros(9, dtype=np.int64)
    ints[0] = 1  # order
    ints[2] = 1  # the Jacobian is at the current step
    ints[3] = 1  # the next output
    return d, fs, ints, parts, fac


@njit(error_model="numpy")
def bdf_run(d, fs, ints, parts, fac, out, t_eval, stop, max_rhs, rtol, atol, prog, geo, mus, clf,
            act):  # pragma: no cover - compiled
    """From the state of :func:`bdf_start` (updated in place) until out[stop - 1] is written (REACHED), the step
    underflows (UNDERFLOW) or more than ``max_rhs`` right-hand sides have been used (BUDGET): runs to successive
    ``stop`` give the states of one run to the last (bitwise)."""
    n = d.shape[1]
    kappa = np.array([0.0, -0.1850, -1.0 / 9.0, -0.0823, -0.0415, 0.0])
    gamma = np.zeros(MAX_ORDER + 2)
    for k in range(1, MAX_ORDER + 2):
        gamma[k] = gamma[k - 1] + 1.0 / k
    alpha = (1.0 - kappa) * gamma[:MAX_ORDER + 1]
    error_const = np.empty(MAX_ORDER + 2)
    for k in range(MAX_ORDER + 1):
        error_const[k] = kappa[k] * gamma[k] + 1.0 / (k + 1)
    error_const[MAX_ORDER + 1] = 1.0 / (MAX_ORDER + 2)
    newton_tol = max(10.0 * np.finfo(np.float64).eps / rtol, min(0.03, rtol ** 0.5))
    if ints[4] == 0:  # the start (bdf_start): f, the first step and the Jacobian at (t0, y0)
        t0, y0 = fs[0], d[0].copy()
        f = _rhs(t0, y0, prog, geo, mus, clf, act)
        fs[1] = initial_step(t0, y0, f, 1, rtol, atol, prog, geo, mus, clf, act)
        d[1] = f * fs[1]
        jacobian_parts(t0, y0, f, prog, geo, mus, clf, act, parts)
        ints[4] = 2 + 2 * parts[3].shape[0]  # right-hand sides
        ints[5] = 1  # Jacobians
    stats = ints[4:]  # right-hand sides, Jacobians, factorizations, steps, rejected steps (a view: in place)
    nq = parts[3].shape[0]
    t, h, c_factored, error_norm, safety = fs[0], fs[1], fs[2], fs[3], fs[4]
    order, equal_steps, fresh, nxt = ints[0], ints[1], ints[2] == 1, ints[3]
    t_end = t_eval[-1]
    y_pred, psi, scale = np.empty(n), np.empty(n), np.empty(n)
    y_new, corr, dy, b = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    status = REACHED
    while nxt < stop:
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        accepted = False
        n_iter = 0
        while not accepted:
            if h < min_step:
                status = UNDERFLOW
                break
            if stats[0] > max_rhs:
                status = BUDGET
                break
            if t + 1.01 * h >= t_end:  # land on the end (stretching the step by at most 1%, not leaving a sliver)
                _rescale(d, order, (t_end - t) / h)
                h = t_end - t
                equal_steps = 0
            t_new = t + h
            for i in range(n):
                s = 0.0
                for j in range(order + 1):
                    s += d[j, i]
                y_pred[i] = s
                scale[i] = atol + rtol * abs(s)
                s = 0.0
                for j in range(1, order + 1):
                    s += gamma[j] * d[j, i]
                psi[i] = s / alpha[order]
            c = h / alpha[order]
            converged = False
            while True:  # simplified Newton on y = y_pred + corr, corr the correction
                if c != c_factored:
                    if not factor(c, parts, fac):
                        break
                    c_factored = c
                    stats[2] += 1
                y_new[:] = y_pred
                corr[:] = 0.0
                old_norm = -1.0
                for n_iter in range(1, NEWTON_ITERATIONS + 1):
                    fy = _rhs(t_new, y_new, prog, geo, mus, clf, act)
                    stats[0] += 1
                    finite = True
                    for i in range(n):
                        b[i] = c * fy[i] - psi[i] - corr[i]
                        finite = finite and math.isfinite(fy[i])
                    if not finite or not solve(c, parts, fac, b, dy):
                        break
                    dy_norm = _rms(dy / scale)
                    rate = dy_norm / old_norm if old_norm > 0.0 else -1.0
                    if rate >= 1.0 or (rate > 0.0 and
                                       rate ** (NEWTON_ITERATIONS - n_iter + 1) / (1.0 - rate) * dy_norm > newton_tol):
                        break
                    y_new += dy
                    corr += dy
                    if dy_norm == 0.0 or (rate > 0.0 and rate / (1.0 - rate) * dy_norm < newton_tol):
                        converged = True
                        break
                    old_norm = dy_norm
                if converged or fresh:
                    break
                jacobian_parts(t_new, y_pred, _rhs(t_new, y_pred, prog, geo, mus, clf, act),
                               prog, geo, mus, clf, act, parts)
                stats[0] += 2 * nq + 1
                stats[1] += 1
                fresh = True
                c_factored = math.nan
            if not converged:
                h *= 0.5
                _rescale(d, order, 0.5)
                equal_steps = 0
                stats[4] += 1
                continue
            safety = 0.9 * (2 * NEWTON_ITERATIONS + 1) / (2 * NEWTON_ITERATIONS + n_iter)
            for i in range(n):
                scale[i] = atol + rtol * abs(y_new[i])
            error_norm = error_const[order] * _rms(corr / scale)
            if error_norm > 1.0:
                ratio = max(MIN_FACTOR, safety * error_norm ** (-1.0 / (order + 1)))
                h *= ratio
                _rescale(d, order, ratio)
                equal_steps = 0
                stats[4] += 1
                continue
            accepted = True
        if status != REACHED:
            break
        stats[3] += 1
        equal_steps += 1
        t_old = t
        t = t_new
        fresh = False
        d[order + 2] = corr - d[order + 1]
        d[order + 1] = corr
        for i in range(order, -1, -1):
            d[i] += d[i + 1]
        while nxt < t_eval.shape[0] and t_eval[nxt] <= t:  # the interpolating polynomial of this step
            te = t_eval[nxt]
            if te == t:
                out[nxt] = d[0]
            else:
                for i in range(n):
                    out[nxt, i] = d[0, i]
                weight = 1.0
                for j in range(order):
                    weight *= (te - (t - j * h)) / ((j + 1) * h)
                    for i in range(n):
                        out[nxt, i] += weight * d[j + 1, i]
            nxt += 1
        if t_old >= t:
            status = UNDERFLOW
            break
        if equal_steps < order + 1:
            continue
        # order selection after order + 1 steps of one size (SciPy BDF's rule)
        err_m = error_const[order - 1] * _rms(d[order] / scale) if order > 1 else math.inf
        err_p = error_const[order + 1] * _rms(d[order + 2] / scale) if order < MAX_ORDER else math.inf
        best, change = -1.0, 0
        for delta, e in ((-1, err_m), (0, error_norm), (1, err_p)):
            fct = math.inf if e == 0.0 else e ** (-1.0 / (order + delta + 1))
            if fct > best:
                best, change = fct, delta
        order += change
        ratio = min(MAX_FACTOR, safety * best)
        h *= ratio
        _rescale(d, order, ratio)
        equal_steps = 0
    fs[0], fs[1], fs[2], fs[3], fs[4] = t, h, c_factored, error_norm, safety
    ints[0], ints[1], ints[2], ints[3] = order, equal_steps, 1 if fresh else 0, nxt
    return status
