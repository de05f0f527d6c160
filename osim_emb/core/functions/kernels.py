"""The compiled kernels of the joint functions: one-input functions and multivariate polynomials.

:func:`_univariate` is the one implementation of the spline (SimmSpline, PiecewiseLinear, PiecewiseConstant,
GCVSpline / NaturalCubicSpline), polynomial and Fourier formulas, with OpenSim 4.6's evaluation semantics (its
bisection for the knot interval, its end-knot tolerance).  Two callers: the joint-variable program's OP_UNI nodes
(:mod:`osim_emb.core.compiled_kernels`, for the kinematics, paths and dynamics) and the functions' own
``evaluate`` (:class:`osim_emb.core.functions.base.CompiledUnivariateFunction`, through :func:`univariate_batch`).
A function's parameters are packed by its ``node_parameters()``: ``ints[ip]`` is its kind (``UNI_*``), then its
int parameters; its float parameters start at ``flts[fp]``.  :func:`multivariate_polynomial` is the
MultivariatePolynomial's (the program's OP_MPOLY nodes and the object's ``evaluate``).
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit

__all__ = ["univariate_batch", "monomials", "polynomial_jet", "multivariate_polynomial",
           "multivariate_polynomial_batch", "END_KNOT_TOLERANCE", "UNI_SIMM", "UNI_PWLINEAR", "UNI_PWCONSTANT",
           "UNI_POLYNOMIAL", "UNI_FOURIER", "UNI_NATURAL", "UNI_CLIP"]

UNI_SIMM = 0
UNI_PWLINEAR = 1
UNI_PWCONSTANT = 2
UNI_POLYNOMIAL = 3
UNI_FOURIER = 4
UNI_NATURAL = 5   # GCVSpline and NaturalCubicSpline (natural spline of degree 2m-1)
UNI_CLIP = 6      # clip(u, lower, upper), derivative 1 inside and 0 outside (Clamped)

#: OpenSim's ROUNDOFF_ERROR (SimmMacros.h): an argument this close to an end knot gets the end values.
END_KNOT_TOLERANCE = 2e-13

_KW = dict(cache=True, error_model="numpy")


@njit(**_KW)
def _interval(flts, x0, n, t):
    """The knot interval k (x[k] <= t <= x[k+1]) found by OpenSim's bisection: halve [i, j) from i = 0, j = n with
    k = (i + j) // 2, moving j to k when t < x[k], i to k when t > x[k+1], stopping otherwise.  At an interior knot
    the interval it stops in (left or right) depends on the search's path, which matters for functions whose
    derivative or value jumps there (piecewise linear / constant).  ``t`` must lie strictly inside the knots."""
    lo = 0
    hi = n
    k = 0
    for _ in range(n + 1):
        k = (lo + hi) // 2
        if t < flts[x0 + k]:
            hi = k
        elif t > flts[x0 + min(k + 1, n - 1)]:
            lo = k
        else:
            break
    return min(k, n - 2)


@njit(**_KW)
def _region(flts, x0, n, t):
    """-2 below, -1 above, 0 at the first knot, 1 at the last, 2 inside (OpenSim's precedence)."""
    xa = flts[x0]
    xb = flts[x0 + n - 1]
    if t < xa:
        return -2
    if t > xb:
        return -1
    if abs(t - xa) <= END_KNOT_TOLERANCE:
        return 0
    if abs(t - xb) <= END_KNOT_TOLERANCE:
        return 1
    return 2


@njit(**_KW)
def _univariate(ints, flts, ip, fp, t):
    """f(t), f'(t), f''(t) of a one-input function node."""
    kind = ints[ip]
    if kind == UNI_SIMM or kind == UNI_PWLINEAR or kind == UNI_PWCONSTANT:
        n = ints[ip + 1]
        xs = fp
        ys = fp + n
        bs = fp + 2 * n
        reg = _region(flts, xs, n, t)
        if kind == UNI_PWCONSTANT:
            if reg == -2 or reg == 0:
                return flts[ys], 0.0, 0.0
            if reg == -1 or reg == 1:
                return flts[ys + n - 1], 0.0, 0.0
            k = _interval(flts, xs, n, t)
            return flts[ys + k], 0.0, 0.0
        if reg == -2:
            return flts[ys] + (t - flts[xs]) * flts[bs], flts[bs], 0.0
        if reg == -1:
            return flts[ys + n - 1] + (t - flts[xs + n - 1]) * flts[bs + n - 1], flts[bs + n - 1], 0.0
        if kind == UNI_PWLINEAR:
            if reg == 0:
                return flts[ys], flts[bs], 0.0
            if reg == 1:
                return flts[ys + n - 1], flts[bs + n - 1], 0.0
            k = _interval(flts, xs, n, t)
            return flts[ys + k] + (t - flts[xs + k]) * flts[bs + k], flts[bs + k], 0.0
        cs = fp + 3 * n
        ds = fp + 4 * n
        if reg == 0:
            return flts[ys], flts[bs], 2.0 * flts[cs]
        if reg == 1:
            return flts[ys + n - 1], flts[bs + n - 1], 2.0 * flts[cs + n - 1]
        k = _interval(flts, xs, n, t)
        dt = t - flts[xs + k]
        bk = flts[bs + k]
        ck = flts[cs + k]
        dk = flts[ds + k]
        f = flts[ys + k] + dt * (bk + dt * (ck + dt * dk))
        return f, bk + dt * (2.0 * ck + 3.0 * dt * dk), 2.0 * ck + 6.0 * dt * dk
    if kind == UNI_POLYNOMIAL:
        out0 = 0.0
        out1 = 0.0
        out2 = 0.0
        n0 = ints[ip + 1]
        n1 = ints[ip + 2]
        n2 = ints[ip + 3]
        for j in range(n0):
            out0 = out0 * t + flts[fp + j]
        for j in range(n1):
            out1 = out1 * t + flts[fp + n0 + j]
        for j in range(n2):
            out2 = out2 * t + flts[fp + n0 + n1 + j]
        return out0, out1, out2
    if kind == UNI_FOURIER:
        nh = ints[ip + 1]
        a0 = flts[fp]
        sec = flts[fp + 1]
        ks = fp + 2
        cs = ks + nh
        ss = cs + nh
        c0 = 0.0
        s0 = 0.0
        c1 = 0.0
        s1 = 0.0
        c2 = 0.0
        s2 = 0.0
        for j in range(nh):
            w = flts[ks + j]
            arg = t * w
            c = math.cos(arg)
            s = math.sin(arg)
            c0 += c * flts[cs + j]
            s0 += s * flts[ss + j]
            c1 += (-s * w) * flts[cs + j]
            s1 += (c * w) * flts[ss + j]
            w2 = w * w
            c2 += (-c * w2) * flts[cs + j]
            s2 += (-s * w2) * flts[ss + j]
        return a0 + sec * t + c0 + s0, sec + c1 + s1, c2 + s2
    if kind == UNI_NATURAL:
        m = ints[ip + 1]
        n = ints[ip + 2]
        q = 2 * m
        xs = fp
        hs = fp + n
        cf = hs + n - 1
        es = cf + (n - 1) * q
        x0 = flts[xs]
        xn = flts[xs + n - 1]
        res0 = 0.0
        res1 = 0.0
        res2 = 0.0
        if t < x0 or t >= xn:  # Taylor polynomial of degree m-1 at the end knot
            side = 1 if t >= xn else 0
            dt = t - xn if t >= xn else t - x0
            for nu in range(3):
                tay = 0.0
                for j in range(m - 1, nu - 1, -1):
                    fct = 1.0
                    for r in range(2, j - nu + 1):
                        fct *= r
                    tay = tay * dt + flts[es + 2 * j + side] / fct
                if nu == 0:
                    res0 = tay
                elif nu == 1:
                    res1 = tay
                else:
                    res2 = tay
            return res0, res1, res2
        # interval: searchsorted(x, t, 'right') - 1, clipped to [0, n - 2]
        lo = 0
        hi = n
        while lo < hi:
            mid = (lo + hi) // 2
            if flts[xs + mid] <= t:
                lo = mid + 1
            else:
                hi = mid
        i = min(max(lo - 1, 0), n - 2)
        h = flts[hs + i]
        tau = (t - flts[xs + i]) / h
        base = cf + i * q
        for nu in range(3):
            out = 0.0
            if nu < q:
                for p in range(q - 1, nu - 1, -1):
                    if nu == 0:
                        mult = 1.0
                    elif nu == 1:
                        mult = float(p)
                    else:
                        mult = float(p * (p - 1))
                    out = out * tau + flts[base + p] * mult
            if nu == 0:
                res0 = out
            elif nu == 1:
                res1 = out / h
            else:
                res2 = out / (h * h)
        return res0, res1, res2
    # UNI_CLIP
    lower = flts[fp]
    upper = flts[fp + 1]
    if t >= lower and t <= upper:
        return t, 1.0, 0.0
    if t < lower:
        return lower, 0.0, 0.0
    if t > upper:
        return upper, 0.0, 0.0
    return t, 0.0, 0.0  # nan


@njit(**_KW)
def univariate_batch(ints, flts, t, order):
    """f, f' (order >= 1) and f'' (order 2) at the points t (N,), as the rows of a (3, N) array (rows above
    ``order`` are 0), of the one-input function whose node parameters start at ints[0] and flts[0]
    (``node_parameters()``): the numeric core of the
    spline, polynomial and Fourier functions' ``evaluate``, the same :func:`_univariate` as the program's."""
    out = np.zeros((3, t.shape[0]))
    for i in range(t.shape[0]):
        f0, f1, f2 = _univariate(ints, flts, 0, 0, t[i])
        out[0, i] = f0
        if order >= 1:
            out[1, i] = f1
        if order >= 2:
            out[2, i] = f2
    return out


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _rows_dot(table, x, nrows, out):
    """out[c] = sum_t table[c, t] x_t for the first ``nrows`` rows, each summed in whatever order the vector unit
    prefers (partial sums side by side: the rounding of a sum of that many terms, not that of a plain loop)."""
    for c in range(nrows):
        s = 0.0
        for t in range(x.shape[0]):
            s += table[c, t] * x[t]
        out[c] = s


@njit(inline="always", **_KW)
def monomials(ints, ex, nt, u, mono):
    """mono (nt) = the monomials at u of the recurrence at ints[ex:] (m_0 = 1, m_t = m_parent(t) u_var(t): parents
    (nt), then variables (nt))."""
    parent = ints[ex:ex + nt]
    var = ints[ex + nt:ex + 2 * nt]
    mono[0] = 1.0
    for t in range(1, nt):
        mono[t] = mono[parent[t]] * u[var[t]]


@njit(inline="always", **_KW)
def polynomial_jet(flts, fp, nt, d, mono, out, second):
    """out = (value, gradient (d), Hessian (d, d) row-major) from the monomials ``mono`` (nt) and the coefficient
    table at flts[fp:] (1 + d + d^2 rows of nt: the value's, the gradient's and the Hessian's coefficients over the
    same monomials); without ``second`` only the value and the gradient (out[:1 + d]).  Each output is a dot product
    of the monomials with a coefficient row (:func:`_rows_dot`)."""
    nuse = 1 + d + d * d if second else 1 + d
    ncol = 1 + d + d * d
    _rows_dot(flts[fp:fp + ncol * nt].reshape((ncol, nt)), mono, nuse, out)


@njit(inline="always", **_KW)
def multivariate_polynomial(ints, flts, ex, fp, nt, u, out, second, mono):
    """out = (value, gradient (d), Hessian (d, d) row-major) at u (d,) of the polynomial sum_t c_t m_t(u) from its
    monomial recurrence at ints[ex:] (:func:`monomials`) and its coefficient table at flts[fp:]
    (:func:`polynomial_jet`).  ``mono`` (nt): work space for the monomials."""
    monomials(ints, ex, nt, u, mono)
    polynomial_jet(flts, fp, nt, u.shape[0], mono, out, second)


@njit(**_KW)
def multivariate_polynomial_batch(ints, flts, x):
    """:func:`multivariate_polynomial` at the points x (N, d) for the parameters ``node_parameters()`` packs
    (ints: number of terms, the monomial recurrence; flts: the coefficient table): (N, 1 + d + d^2)."""
    n, d = x.shape
    out = np.empty((n, 1 + d + d * d))
    u = np.empty(d)
    mono = np.empty(ints[0])
    for i in range(n):
        for v in range(d):
            u[v] = x[i, v]
        multivariate_polynomial(ints, flts, 1, 0, ints[0], u, out[i], True, mono)
    return out
