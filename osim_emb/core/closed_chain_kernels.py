"""Closed chains, the one implementation (numba): Newton on g(f, q) = 0 and the projection method (Eqs 100-120).

Everything works on plain arrays of one configuration -- the constraint value g (m,), its Jacobian
g_z = [g_f g_q] (m, m + n_q) and its second derivatives g_zz (m, m + n_q, m + n_q), z = (f, q) -- and reports
failures as status codes (no exceptions), so that

* the compiled joint-variable program's OP_CHAIN node (``compiled_kernels._closed_chain``: trigonometric
  constraints evaluated here by :func:`trig_constraints`) and
* :class:`osim_emb.core.closed_chains.ClosedChain` / :func:`~osim_emb.core.closed_chains.solve_constraints`
  (constraints given as Python callables, evaluated in Python, batched; :func:`newton_steps`,
  :func:`chain_derivatives_batch`)

run the same Newton step (:func:`newton_step`), the same projection matrices gamma_i (Eqs 110, 114-117,
:func:`projection_factor`), the same recursive solve (Eqs 118-119, :func:`projection_solve`), the same right-hand
side Gamma of Eq 120 (:func:`hessian_rhs`) and the same condition test (:func:`condition_exceeds`).  The Python
wrappers turn the status codes, with the configuration index, residual and condition number, into
``SingularConstraintError``, ``AssemblyError`` and ``CoordinateRangeError`` with their detailed messages.

Array conventions as in :mod:`osim_emb.core.closed_chains`: gf[i, j] = dg_i/df_j, gq[i, k] = dg_i/dq_k, gradients
(m, n_q), Hessians (m, n_q, n_q).
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit

__all__ = [
    "STATUS_OK", "STATUS_SINGULAR", "STATUS_ILL_CONDITIONED", "STATUS_DIVERGED", "NEWTON_CONTINUE",
    "NEWTON_CONVERGED", "CHAIN_INTS", "CHAIN_FLOATS", "solve_linear", "newton_step", "newton_steps",
    "projection_factor", "projection_solve", "hessian_rhs", "condition_number", "condition_exceeds",
    "chain_derivatives", "chain_derivatives_batch", "condition_numbers", "projection_factor_batch",
    "projection_solve_batch", "projection_hessians_batch", "trig_constraints", "trig_constraints_batch",
    "FRAME_INTS", "FRAME_FLOATS", "PAIR_FLOATS", "PAIR_KINDS", "frame_work", "frame_equations",
]

_KW = dict(cache=True, error_model="numpy")

# -- status codes ---------------------------------------------------------------------------------------------
STATUS_OK = 0
STATUS_SINGULAR = 1          # dg/df exactly singular (Newton's elimination or the projection method)
STATUS_ILL_CONDITIONED = 2   # ||[g_f g_q]||_F / sigma_min(g_f) above the limit
STATUS_DIVERGED = 3          # a non-finite Newton iterate
NEWTON_CONTINUE = 4          # a Newton step was taken, not converged yet
NEWTON_CONVERGED = 5         # the step (or the residual) is below its tolerance

#: the trigonometric constraints' parameters in the program arrays (``ints[ip:]``, ``flts[fp:]``)
CHAIN_INTS = 5      # m, n_q, number of trigonometric terms T, max Newton iterations, check the range; then rows (T),
                    # is_sin (T)
CHAIN_FLOATS = 4    # Newton tolerance, length scale, residual tolerance, max condition; then coef (T),
                    # weights (T, m + n_q), linear part (m, m + n_q), constant (m), range lower (n_q), upper (n_q)
#: frame constraints (a model's point, distance, point-on-line and weld constraints from the tree's kinematics,
#: ``compiled_kernels._frame_constraints``; packed by ``point_constraints.FrameConstraintData.layout``)
FRAME_INTS = 10     # m, n_q, max Newton iterations, the continuation's max iterations, tree coordinates nz, tree
                    # frames nf (ground included), pairs P, equations E (all pairs'), offsets (from ip, fp) of the
                    # tree's joint-variable program in ints and flts; then perm (nz: the tree coordinate of z_a,
                    # z = (f, q)), the program node of each frame's variable (nf), parent (nf), revolute (nf), per
                    # pair (kind, frame 1, frame 2) (3 P), the equations solved (m), the program
FRAME_FLOATS = 6    # Newton tolerance, length scale, residual tolerance, max condition, the continuation's max
                    # step and tolerance; then q_ref (n_q), f_ref (m), offsets C_i (nf, 4, 4), axes (nf, 3), ã (nf, 3,
                    # 3), ã² (nf, 3, 3), per pair PAIR_FLOATS, the program's floats
PAIR_FLOATS = 25    # r1 (3), r2 (3), distance, three directions on frame 1 (rows, 3 x 3), three on frame 2 (3 x 3)
#: pair kinds: p1 - p2 = 0 (3 equations); (|p1 - p2|^2 - d^2) / 2 = 0 (1); u_i . (p2 - p1) = 0, i = 0, 1 (2);
#: p1 - p2 = 0 and u_i . v_i = 0, i = 0..2 (6)
PAIR_KINDS = {"point": (0, 3), "distance": (1, 1), "line": (2, 2), "weld": (3, 6)}
_TINY = 2.2250738585072014e-308


@njit(**_KW)
def solve_linear(a, b, x):
    """x = a^-1 b by Gaussian elimination with partial pivoting (a and b are overwritten); False when a is exactly
    singular (a zero pivot)."""
    n = b.size
    for k in range(n):
        p = k
        amax = abs(a[k, k])
        for r in range(k + 1, n):
            if abs(a[r, k]) > amax:
                amax = abs(a[r, k])
                p = r
        if p != k:
            for c in range(n):
                t = a[k, c]
                a[k, c] = a[p, c]
                a[p, c] = t
            t = b[k]
            b[k] = b[p]
            b[p] = t
        piv = a[k, k]
        if piv == 0.0:
            return False
        for r in range(k + 1, n):
            lr = a[r, k] / piv
            if lr != 0.0:
                for c in range(k + 1, n):
                    a[r, c] -= lr * a[k, c]
                b[r] -= lr * b[k]
    for k in range(n - 1, -1, -1):
        s = b[k]
        for c in range(k + 1, n):
            s -= a[k, c] * x[c]
        x[k] = s / a[k, k]
    return True


@njit(**_KW)
def newton_step(gf, g, f, tol, residual_floor, a, b, step):
    """One Newton step f <- f - g_f^-1 g (a, b, step: work arrays (m, m), (m,), (m,)).  Converged when the step is
    below ``tol`` (1 + max |f|) or max |g| <= ``residual_floor`` (round-off level).  Returns NEWTON_CONTINUE,
    NEWTON_CONVERGED, STATUS_SINGULAR (f untouched) or STATUS_DIVERGED (a non-finite iterate)."""
    m = g.shape[0]
    gmax = 0.0
    for i in range(m):
        b[i] = g[i]
        gmax = max(gmax, abs(g[i]))
        for j in range(m):
            a[i, j] = gf[i, j]
    if not solve_linear(a, b, step):
        return STATUS_SINGULAR
    smax = 0.0
    fmax = 0.0
    finite = True
    for j in range(m):
        f[j] -= step[j]
        smax = max(smax, abs(step[j]))
        fmax = max(fmax, abs(f[j]))
        finite = finite and math.isfinite(f[j])
    if not finite:
        return STATUS_DIVERGED
    if smax <= tol * (1.0 + fmax) or gmax <= residual_floor:
        return NEWTON_CONVERGED
    return NEWTON_CONTINUE


@njit(**_KW)
def _gbar_times_gamma(gf, gam, i, out):
    """out = g-bar_i^T gamma_{i+1} (the row both the factorisation and the solve of Eqs 114-119 need)."""
    m = gf.shape[0]
    for b in range(m):
        s = 0.0
        for a in range(m):
            s += gf[a, i - 1] * gam[i + 1, a, b]
        out[b] = s


@njit(**_KW)
def projection_factor(gf, gam, nrm, singular_tol):
    """The projection matrices gamma_i (gam[i], i = 2..m+1; gamma_{m+1} = I) and ||gamma_{i+1} g-bar_i||^2 (nrm[i],
    i = 1..m) of Eqs 110, 114-117: sigma_i = I - g-bar_i g-bar_i^T gamma_{i+1} / ||gamma_{i+1} g-bar_i||^2,
    gamma_i = gamma_{i+1} sigma_i.  False when a norm vanishes relative to ||g-bar_i||^2 (below ``singular_tol``):
    g-bar_i lies in the span of g-bar_{i+1..m}, dg/df is singular."""
    m = gf.shape[0]
    for a in range(m):
        for b in range(m):
            gam[m + 1, a, b] = 1.0 if a == b else 0.0
    wv = np.empty(m)
    for i in range(m, 0, -1):
        n2 = 0.0
        ref = 0.0
        for a in range(m):
            s = 0.0
            for b in range(m):
                s += gam[i + 1, a, b] * gf[b, i - 1]
            n2 += s * s
            ref += gf[a, i - 1] * gf[a, i - 1]
        if not n2 > singular_tol * max(ref, _TINY):
            return False
        nrm[i] = n2
        if i >= 2:
            _gbar_times_gamma(gf, gam, i, wv)
            # gamma_i = gamma_{i+1} (I - g_i w^T / n2)
            for a in range(m):
                s = 0.0
                for c in range(m):
                    s += gam[i + 1, a, c] * gf[c, i - 1]
                for b in range(m):
                    gam[i, a, b] = gam[i + 1, a, b] - s * wv[b] / n2
    return True


@njit(**_KW)
def projection_solve(gf, gam, nrm, rhs, x):
    """sum_j g-bar_j (x) x_j = rhs by the recursive elimination of Eqs 118-119 (rhs, x: (m, p)):
    x_i = g-bar_i^T gamma_{i+1} (rhs - eta^(i-1)) / ||gamma_{i+1} g-bar_i||^2, eta^(i) = eta^(i-1) + g-bar_i x_i^T."""
    m, p = rhs.shape
    eta = np.zeros((m, p))
    wv = np.empty(m)
    for i in range(1, m + 1):
        _gbar_times_gamma(gf, gam, i, wv)
        for c in range(p):
            s = 0.0
            for a in range(m):
                s += wv[a] * (rhs[a, c] - eta[a, c])
            x[i - 1, c] = s / nrm[i]
        for a in range(m):
            for c in range(p):
                eta[a, c] += gf[a, i - 1] * x[i - 1, c]


@njit(**_KW)
def hessian_rhs(gzz, gr, m, out):
    """Gamma of Eq 120 (out: (m, n_q^2), row-major (p, r)): Gamma_i = -Z^T (d2 g_i / dz2) Z, Z = [grad f; I], i.e.
    -(sum_jk g_i,fjfk grad f_j grad f_k^T + sum_j (grad f_j g_i,fjq^T + g_i,qfj grad f_j^T) + g_i,qq)."""
    nq = gr.shape[1]
    for i in range(m):
        for p in range(nq):
            for r in range(nq):
                s = gzz[i, m + p, m + r]
                for j in range(m):
                    s += gr[j, p] * gzz[i, j, m + r] + gzz[i, m + p, j] * gr[j, r]
                    t = 0.0
                    for k in range(m):
                        t += gzz[i, j, k] * gr[k, r]
                    s += gr[j, p] * t
                out[i, p * nq + r] = -s


@njit(**_KW)
def condition_number(gz, m):
    """||[g_f g_q]||_F / sigma_min(g_f) (inf when g_f is singular or the value is not finite)."""
    full = 0.0
    for i in range(m):
        for j in range(gz.shape[1]):
            full += gz[i, j] * gz[i, j]
    smin = np.linalg.svd(np.ascontiguousarray(gz[:, :m]))[1][m - 1]
    c = math.sqrt(full) / smin if smin > 0.0 else math.inf
    return c if math.isfinite(c) else math.inf


@njit(**_KW)
def condition_exceeds(gz, m, gam, nrm, max_cond):
    """The condition number if it exceeds ``max_cond``, else 0.  Since 1 / sigma_min(g_f) <= ||g_f^-1||_F (g_f^-1
    by the projection solve), the SVD runs only when that bound exceeds the limit."""
    gf = np.ascontiguousarray(gz[:, :m])
    full = 0.0
    for i in range(m):
        for j in range(gz.shape[1]):
            full += gz[i, j] * gz[i, j]
    full = math.sqrt(full)
    eye = np.zeros((m, m))
    for i in range(m):
        eye[i, i] = 1.0
    inv = np.empty((m, m))
    projection_solve(gf, gam, nrm, eye, inv)
    nrm_inv = 0.0
    for i in range(m):
        for j in range(m):
            nrm_inv += inv[i, j] * inv[i, j]
    if full * math.sqrt(nrm_inv) <= max_cond:
        return 0.0
    smin = np.linalg.svd(gf)[1][m - 1]
    if full <= max_cond * smin:
        return 0.0
    c = full / smin if smin > 0.0 else math.inf
    return c if math.isfinite(c) else math.inf


@njit(**_KW)
def chain_derivatives(gz, gzz, m, max_cond, order, grad, hess):
    """At a solution of g(f, q) = 0: the condition test (when ``max_cond`` is finite), then grad f_i (Eq 102 by
    Eqs 116-119; order >= 1, into grad (m, n_q)) and H_i (Eq 120; order 2, into hess (m, n_q, n_q), symmetrised).
    Returns (status, condition number): STATUS_OK, STATUS_SINGULAR or STATUS_ILL_CONDITIONED."""
    nq = gz.shape[1] - m
    gf = np.ascontiguousarray(gz[:, :m])
    gam = np.empty((m + 2, m, m))
    nrm = np.empty(m + 1)
    if not projection_factor(gf, gam, nrm, 1e-13):
        return STATUS_SINGULAR, condition_number(gz, m)
    if math.isfinite(max_cond):
        c = condition_exceeds(gz, m, gam, nrm, max_cond)
        if c > 0.0:
            return STATUS_ILL_CONDITIONED, c
    if order < 1:
        return STATUS_OK, 0.0
    rhs = np.empty((m, nq))
    for i in range(m):
        for k in range(nq):
            rhs[i, k] = -gz[i, m + k]
    projection_solve(gf, gam, nrm, rhs, grad)
    if order < 2:
        return STATUS_OK, 0.0
    gm = np.empty((m, nq * nq))
    hessian_rhs(gzz, grad, m, gm)
    hs = np.empty((m, nq * nq))
    projection_solve(gf, gam, nrm, gm, hs)
    for i in range(m):
        for k in range(nq):
            for l in range(nq):
                hess[i, k, l] = 0.5 * (hs[i, k * nq + l] + hs[i, l * nq + k])
    return STATUS_OK, 0.0


# -- batches for the Python side (closed_chains): constraints evaluated in Python -----------------------------
@njit(**_KW)
def _stack_z(gf, gq, n, gz):
    m = gf.shape[1]
    for i in range(m):
        for j in range(m):
            gz[i, j] = gf[n, i, j]
        for k in range(gq.shape[2]):
            gz[i, m + k] = gq[n, i, k]


@njit(**_KW)
def _stack_zz(gff, gfq, gqq, n, gzz):
    m = gff.shape[1]
    nq = gqq.shape[2]
    for i in range(m):
        for a in range(m):
            for b in range(m):
                gzz[i, a, b] = gff[n, i, a, b]
            for k in range(nq):
                gzz[i, a, m + k] = gfq[n, i, a, k]
                gzz[i, m + k, a] = gfq[n, i, a, k]
        for k in range(nq):
            for l in range(nq):
                gzz[i, m + k, m + l] = gqq[n, i, k, l]


@njit(**_KW)
def newton_steps(gf, g, f, tol, residual_floor):
    """:func:`newton_step` at N configurations (gf (N, m, m), g (N, m), f (N, m) updated in place): status (N,)."""
    n, m = g.shape
    status = np.empty(n, dtype=np.int64)
    a = np.empty((m, m))
    b = np.empty(m)
    step = np.empty(m)
    for s in range(n):
        status[s] = newton_step(gf[s], g[s], f[s], tol, residual_floor, a, b, step)
    return status


@njit(**_KW)
def chain_derivatives_batch(gf, gq, gff, gfq, gqq, max_cond, order):
    """:func:`chain_derivatives` at N configurations: (grad (N, m, n_q), hess (N, m, n_q, n_q), status (N,),
    condition (N,)); gff, gfq, gqq (N, m, m, m), (N, m, m, n_q), (N, m, n_q, n_q) are read for order 2 only."""
    n, m, nq = gq.shape
    grad = np.zeros((n, m, nq))
    hess = np.zeros((n if order >= 2 else 0, m, nq, nq))
    status = np.zeros(n, dtype=np.int64)
    cond = np.zeros(n)
    gz = np.empty((m, m + nq))
    gzz = np.empty((m, m + nq, m + nq))
    hs = np.empty((m, nq, nq))
    for s in range(n):
        _stack_z(gf, gq, s, gz)
        if order >= 2:
            _stack_zz(gff, gfq, gqq, s, gzz)
        st, c = chain_derivatives(gz, gzz, m, max_cond, order, grad[s], hs)
        status[s] = st
        cond[s] = c
        if order >= 2:
            hess[s] = hs
    return grad, hess, status, cond


@njit(**_KW)
def condition_numbers(gf, gq):
    """:func:`condition_number` at N configurations (N,)."""
    n, m, nq = gq.shape
    out = np.empty(n)
    gz = np.empty((m, m + nq))
    for s in range(n):
        _stack_z(gf, gq, s, gz)
        out[s] = condition_number(gz, m)
    return out


@njit(**_KW)
def projection_factor_batch(gf, singular_tol):
    """:func:`projection_factor` at N configurations: gammas (N, m + 2, m, m), norms2 (N, m + 1), ok (N,)."""
    n, m, _ = gf.shape
    gam = np.zeros((n, m + 2, m, m))
    nrm = np.zeros((n, m + 1))
    ok = np.zeros(n, dtype=np.bool_)
    for s in range(n):
        ok[s] = projection_factor(np.ascontiguousarray(gf[s]), gam[s], nrm[s], singular_tol)
    return gam, nrm, ok


@njit(**_KW)
def projection_solve_batch(gf, gam, nrm, rhs):
    """:func:`projection_solve` at N configurations (rhs (N, m, p)): x (N, m, p)."""
    x = np.empty(rhs.shape)
    for s in range(rhs.shape[0]):
        projection_solve(np.ascontiguousarray(gf[s]), gam[s], nrm[s], np.ascontiguousarray(rhs[s]), x[s])
    return x


@njit(**_KW)
def projection_hessians_batch(gf, gq, gff, gfq, gqq, grad, gam, nrm):
    """H_i (N, m, n_q, n_q) from the gradients by Eq 120 (:func:`hessian_rhs`, :func:`projection_solve`)."""
    n, m, nq = grad.shape
    out = np.empty((n, m, nq, nq))
    gzz = np.empty((m, m + nq, m + nq))
    gm = np.empty((m, nq * nq))
    hs = np.empty((m, nq * nq))
    for s in range(n):
        _stack_zz(gff, gfq, gqq, s, gzz)
        hessian_rhs(gzz, np.ascontiguousarray(grad[s]), m, gm)
        projection_solve(np.ascontiguousarray(gf[s]), gam[s], nrm[s], gm, hs)
        for i in range(m):
            for k in range(nq):
                for l in range(nq):
                    out[s, i, k, l] = 0.5 * (hs[i, k * nq + l] + hs[i, l * nq + k])
    return out


# -- trigonometric constraints (the seeds' linkages: planar.trigonometric_constraints) ------------------------
@njit(**_KW)
def trig_constraints(ints, flts, ip, fp, z, order, g, gz, gzz):
    """g(z), dg/dz (order >= 1) and d2g/dz2 (order 2) of trigonometric constraints:
    g_i = sum_{t: row_t = i} coef_t trig_t(w_t . z) + lin_i . z + c_i (parameters at ints[ip:], flts[fp:])."""
    m = ints[ip]
    nz = m + ints[ip + 1]
    nt = ints[ip + 2]
    rows = ip + CHAIN_INTS
    sins = rows + nt
    co = fp + CHAIN_FLOATS
    wo = co + nt
    lo = wo + nt * nz
    cc = lo + m * nz
    for i in range(m):
        s = flts[cc + i]
        for a in range(nz):
            s += flts[lo + i * nz + a] * z[a]
        g[i] = s
        if order >= 1:
            for a in range(nz):
                gz[i, a] = flts[lo + i * nz + a]
        if order >= 2:
            for a in range(nz):
                for b in range(nz):
                    gzz[i, a, b] = 0.0
    for t in range(nt):
        i = ints[rows + t]
        arg = 0.0
        for a in range(nz):
            arg += flts[wo + t * nz + a] * z[a]
        c = math.cos(arg)
        sn = math.sin(arg)
        coef = flts[co + t]
        if ints[sins + t] == 1:
            v0 = coef * sn
            v1 = coef * c
        else:
            v0 = coef * c
            v1 = -coef * sn
        g[i] += v0
        if order >= 1:
            for a in range(nz):
                gz[i, a] += v1 * flts[wo + t * nz + a]
        if order >= 2:
            for a in range(nz):
                wa = -v0 * flts[wo + t * nz + a]
                for b in range(nz):
                    gzz[i, a, b] += wa * flts[wo + t * nz + b]


@njit(**_KW)
def trig_constraints_batch(ints, flts, f, q, order):
    """:func:`trig_constraints` at N configurations (parameters at ints[0:], flts[0:]): g (N, m), g_z (N, m, m + n_q)
    and g_zz (N, m, m + n_q, m + n_q) (the derivatives ``order`` does not ask for have length 0)."""
    n, m = f.shape
    nq = q.shape[1]
    nz = m + nq
    g = np.empty((n, m))
    gz = np.empty((n if order >= 1 else 0, m, nz))
    gzz = np.empty((n if order >= 2 else 0, m, nz, nz))
    z = np.empty(nz)
    wz = np.empty((m, nz))
    wzz = np.empty((m, nz, nz))
    for s in range(n):
        for j in range(m):
            z[j] = f[s, j]
        for k in range(nq):
            z[m + k] = q[s, k]
        trig_constraints(ints, flts, 0, 0, z, order, g[s], wz, wzz)
        if order >= 1:
            gz[s] = wz
        if order >= 2:
            gzz[s] = wzz
    return g, gz, gzz


# -- frame constraints (a model's PointConstraint, ConstantDistanceConstraint, PointOnLineConstraint and
#    WeldConstraint: core.point_constraints) from the tree's kinematics ------------------------------------------
@njit(**_KW)
def frame_work(nz):
    """Work arrays of :func:`frame_equations` for nz tree coordinates."""
    return (np.empty(3), np.empty((nz, 3)), np.empty((nz, nz, 3)), np.empty(3), np.empty((nz, 3)),
            np.empty((nz, nz, 3)), np.empty(3), np.empty((nz, 3)), np.empty((nz, nz, 3)))


@njit(**_KW)
def _symmetrize(h):
    nz = h.shape[0]
    for k in range(nz):
        for l in range(k + 1, nz):
            for c in range(3):
                s = 0.5 * (h[k, l, c] + h[l, k, c])
                h[k, l, c] = s
                h[l, k, c] = s


@njit(**_KW)
def _vector_jet(rot, pos, jac, djac, fr, flts, o, point, order, p, dp, hp):
    """The point (``point``) or the direction r = flts[o:o+3] fixed in frame ``fr``, in ground: p (3,), dp/dz_k =
    w_k x p (+ v_k) (nz, 3) and d2p/dz_k dz_l = dw_kl x p (+ dv_kl) + w_k x dp/dz_l (nz, nz, 3), symmetrized; (w_k,
    v_k) the frame's Jacobian columns, (dw_kl, dv_kl) their derivatives in z_l."""
    nz = jac.shape[1]
    r0, r1, r2 = flts[o], flts[o + 1], flts[o + 2]
    for a in range(3):
        p[a] = rot[fr, a, 0] * r0 + rot[fr, a, 1] * r1 + rot[fr, a, 2] * r2 + (pos[fr, a] if point else 0.0)
    if order < 1:
        return
    lin = 1.0 if point else 0.0
    for k in range(nz):
        w0, w1, w2 = jac[fr, k, 0], jac[fr, k, 1], jac[fr, k, 2]
        dp[k, 0] = w1 * p[2] - w2 * p[1] + lin * jac[fr, k, 3]
        dp[k, 1] = w2 * p[0] - w0 * p[2] + lin * jac[fr, k, 4]
        dp[k, 2] = w0 * p[1] - w1 * p[0] + lin * jac[fr, k, 5]
    if order < 2:
        return
    for k in range(nz):
        w0, w1, w2 = jac[fr, k, 0], jac[fr, k, 1], jac[fr, k, 2]
        for l in range(nz):
            d0, d1, d2 = djac[fr, k, l, 0], djac[fr, k, l, 1], djac[fr, k, l, 2]
            hp[k, l, 0] = (d1 * p[2] - d2 * p[1]) + lin * djac[fr, k, l, 3] + (w1 * dp[l, 2] - w2 * dp[l, 1])
            hp[k, l, 1] = (d2 * p[0] - d0 * p[2]) + lin * djac[fr, k, l, 4] + (w2 * dp[l, 0] - w0 * dp[l, 2])
            hp[k, l, 2] = (d0 * p[1] - d1 * p[0]) + lin * djac[fr, k, l, 5] + (w0 * dp[l, 1] - w1 * dp[l, 0])
    _symmetrize(hp)


@njit(**_KW)
def _difference(a, da, ha, b, db, hb, order):
    """a <- a - b with the derivatives (the first jet overwritten)."""
    nz = da.shape[0]
    for c in range(3):
        a[c] -= b[c]
    if order >= 1:
        for k in range(nz):
            for c in range(3):
                da[k, c] -= db[k, c]
    if order >= 2:
        for k in range(nz):
            for l in range(nz):
                for c in range(3):
                    ha[k, l, c] -= hb[k, l, c]


@njit(**_KW)
def _vector_rows(a, da, ha, order, e, g, gz, gzz):
    """The three components of a vector jet as equations e..e+2."""
    nz = da.shape[0]
    for c in range(3):
        g[e + c] = a[c]
        if order >= 1:
            for k in range(nz):
                gz[e + c, k] = da[k, c]
        if order >= 2:
            for k in range(nz):
                for l in range(nz):
                    gzz[e + c, k, l] = ha[k, l, c]


@njit(**_KW)
def _dot_row(a, da, ha, b, db, hb, order, scale, e, g, gz, gzz):
    """Equation e = scale a . b: its gradient a_k . b + a . b_k and Hessian a_kl . b + a . b_kl + a_k . b_l + a_l .
    b_k."""
    nz = da.shape[0]
    g[e] = scale * (a[0] * b[0] + a[1] * b[1] + a[2] * b[2])
    if order >= 1:
        for k in range(nz):
            gz[e, k] = scale * ((da[k, 0] * b[0] + da[k, 1] * b[1] + da[k, 2] * b[2])
                                + (a[0] * db[k, 0] + a[1] * db[k, 1] + a[2] * db[k, 2]))
    if order >= 2:
        for k in range(nz):
            for l in range(nz):
                s = (ha[k, l, 0] * b[0] + ha[k, l, 1] * b[1] + ha[k, l, 2] * b[2]) \
                    + (a[0] * hb[k, l, 0] + a[1] * hb[k, l, 1] + a[2] * hb[k, l, 2])
                s += (da[k, 0] * db[l, 0] + da[k, 1] * db[l, 1] + da[k, 2] * db[l, 2]) \
                    + (da[l, 0] * db[k, 0] + da[l, 1] * db[k, 1] + da[l, 2] * db[k, 2])
                gzz[e, k, l] = scale * s


@njit(**_KW)
def frame_equations(ints, flts, pi, pf, n_pairs, order, rot, pos, jac, djac, g, gz, gzz, work):
    """g (E,), dg/dz (E, nz) (order >= 1) and d2g/dz2 (E, nz, nz) (order 2) of every pair's equations (in order; pair
    p's kind and frames at ints[pi + 3 p:], its points, distance and directions at flts[pf + PAIR_FLOATS p:]) from the
    tree's frames: rotations ``rot``, origins ``pos``, Jacobians ``jac`` (nf, nz, 6) and their derivatives ``djac``
    (nf, nz, nz, 6) (kinematics_kernels.frame_kinematics, frame_jacobian_derivatives); the equations of
    core.point_constraints (its numpy form is the reference)."""
    a, da, ha, b, db, hb, c, dc, hc = work
    e = 0
    for p in range(n_pairs):
        kind = ints[pi + 3 * p]
        f1 = ints[pi + 3 * p + 1]
        f2 = ints[pi + 3 * p + 2]
        o = pf + PAIR_FLOATS * p
        _vector_jet(rot, pos, jac, djac, f1, flts, o, True, order, a, da, ha)
        _vector_jet(rot, pos, jac, djac, f2, flts, o + 3, True, order, b, db, hb)
        if kind == 0 or kind == 3:  # p1 - p2
            _difference(a, da, ha, b, db, hb, order)
            _vector_rows(a, da, ha, order, e, g, gz, gzz)
            e += 3
            if kind == 3:  # x1 . y2, y1 . z2, z1 . x2
                for i in range(3):
                    _vector_jet(rot, pos, jac, djac, f1, flts, o + 7 + 3 * i, False, order, a, da, ha)
                    _vector_jet(rot, pos, jac, djac, f2, flts, o + 16 + 3 * i, False, order, b, db, hb)
                    _dot_row(a, da, ha, b, db, hb, order, 1.0, e, g, gz, gzz)
                    e += 1
        elif kind == 1:  # (d . d - D^2) / 2, d = p1 - p2
            _difference(a, da, ha, b, db, hb, order)
            _dot_row(a, da, ha, a, da, ha, order, 0.5, e, g, gz, gzz)
            dist = flts[o + 6]
            g[e] -= 0.5 * dist * dist
            e += 1
        else:  # n_i . (p2 - p1), n_i on frame 1
            _difference(b, db, hb, a, da, ha, order)
            for i in range(2):
                _vector_jet(rot, pos, jac, djac, f1, flts, o + 7 + 3 * i, False, order, c, dc, hc)
                _dot_row(c, dc, hc, b, db, hb, order, 1.0, e, g, gz, gzz)
                e += 1
