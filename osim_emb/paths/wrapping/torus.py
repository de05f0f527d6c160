"""WrapTorus: OpenSim 4.6's torus wrapping, vectorized over a batch of segments.

Geometry (wrap frame; torus around the z axis, centre circle of radius
``outer_radius`` in the z = 0 plane, tube radius ``inner_radius``):

1. A point of the centre circle "closest" to the line P1P2 is searched with
   OpenSim's modified MINPACK lmdif (one unknown: the distance u along the line from
   its start point, started at u = 0), once from P1 towards P2 and once from P2
   towards P1; each run gives a point on the line, and the one nearer the circle is
   kept (with a quadrant: the one on the active side; NO_WRAP if neither is).
2. A temporary cylinder of radius ``inner_radius`` and length 10000 is placed at the
   circle point, its axis tangent to the circle, constrained to the side facing the
   torus axis, and OpenSim's cylinder wrap (see :mod:`.cylinder`) is applied.

Notes on what OpenSim actually computes (reproduced here):

* The residual OpenSim minimises is 2(p.n + u) - 4 R (c4 u + c3) / rho(u): the
  derivative of the squared distance to the circle with the circle term counted
  twice, i.e. the stationarity condition of the squared distance to a circle of
  radius 2R (R = outer_radius), not R.  The end point is found by lmdif with
  ftol = xtol = 1e-4, a fixed forward-difference step of 1e-5 for the derivative,
  an initial step bound of 0.2 and at most 500 evaluations; it stops at whatever
  iterate satisfies those loose tests.  The result is therefore *not* the exact
  closest point; this module replays the same iteration (the one-unknown case of
  lmdif, lmpar and qrsolv, with the same constants and tests) element by element,
  so it stops at the same iterate; agreement is at round-off level except where a
  round-off difference flips one of lmdif's tests (not seen in tests).
* WrapTorus always returns WRAPPED once the circle point is found, also when the
  inner cylinder does not wrap (no tangent points then: the path ignores it).  The
  result's ``status`` says whether it wrapped; ``raw_status`` is the returned code.
* With several PathWraps in the path the inner cylinder runs its tangent-adjustment
  loop (``single_wrap=False``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.paths.wrapping import _vec as V
from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, WrapStatus
from osim_emb.paths.wrapping.cylinder import _CylinderStage

__all__ = ["WrapTorus", "torus_wrap", "lmdif_circle"]

CYL_LENGTH = 10000.0

# constants of OpenSim's findClosestPoint / lmdif_C
_FTOL = 1e-4
_XTOL = 1e-4
_MAXFEV = 500
_FACTOR = 0.2
_FD_STEP = 1e-5  # OpenSim's lmdif uses a fixed finite-difference step
_MACHEP = 1.2e-16
_DWARF = 1.0e-38


class _Circle:
    """Residual of OpenSim's calcCircleResids for lines from a towards b, circle radius r."""

    def __init__(self, a, b, r):
        d = b - a
        mag = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])
        with np.errstate(divide="ignore", invalid="ignore"):
            nx, ny, nz = d[:, 0] / mag, d[:, 1] / mag, d[:, 2] / mag
        ax, ay, az = a[:, 0], a[:, 1], a[:, 2]
        self.c2 = 2.0 * (ax * nx + ay * ny + az * nz)
        self.c3 = ax * nx + ay * ny
        self.c4 = nx * nx + ny * ny
        self.c5 = ax * ax + ay * ay
        self.r = r
        self.n = np.stack([nx, ny, nz], axis=1)

    def __call__(self, u, i):
        c2, c3, c4, c5 = self.c2[i], self.c3[i], self.c4[i], self.c5[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            return c2 + 2.0 * u - 2.0 * self.r * (2.0 * c4 * u + 2.0 * c3) / np.sqrt(u * u * c4 + 2.0 * c3 * u + c5)


def _lmpar(r, diag, qtb, delta, par0):
    """MINPACK lmpar for one unknown: the step x and the Levenberg-Marquardt parameter."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = qtb / r
        dxnorm = np.abs(diag * x)
        fp = dxnorm - delta
        gn_ok = fp <= 0.1 * delta
        par = np.where(gn_ok, 0.0, par0)
        act = ~gn_ok
        if not act.any():
            return x, par
        # bounds of the parameter
        w = diag * ((diag * x) / dxnorm)
        w = w / r
        temp = np.abs(w)
        parl = ((fp / delta) / temp) / temp
        gnorm = np.abs((r * qtb) / diag)
        paru = gnorm / delta
        paru = np.where(paru == 0.0, _DWARF / np.minimum(delta, 0.1), paru)
        p = np.where(par0 >= parl, par0, parl)
        p = np.where(p <= paru, p, paru)
        p = np.where(p == 0.0, gnorm / dxnorm, p)
        par = np.where(act, p, par)
        it = 0
        while act.any():
            it += 1
            par = np.where(act & (par == 0.0), np.maximum(_DWARF, 0.001 * paru), par)
            s = np.sqrt(par) * diag
            # qrsolv with one unknown: a Givens rotation of (r, s)
            small = np.abs(r) < np.abs(s)
            cot = r / s
            sin_a = 0.5 / np.sqrt(0.25 + 0.25 * cot * cot)
            cos_a = sin_a * cot
            tan = s / r
            cos_b = 0.5 / np.sqrt(0.25 + 0.25 * tan * tan)
            sin_b = cos_b * tan
            cs = np.where(small, cos_a, cos_b)
            sn = np.where(small, sin_a, sin_b)
            rot = s != 0.0
            sdiag = np.where(rot, cs * r + sn * s, r)
            wa = np.where(rot, cs * qtb, qtb)
            wa = np.where(sdiag == 0.0, 0.0, wa)
            xn = wa / sdiag
            x = np.where(act, xn, x)
            wa2 = diag * x
            dxn = np.abs(wa2)
            fp_old = fp
            fpn = dxn - delta
            fp = np.where(act, fpn, fp)
            stop = (np.abs(fp) <= 0.1 * delta) | ((parl == 0.0) & (fp <= fp_old) & (fp_old < 0.0)) | (it == 10)
            act = act & ~stop
            if not act.any():
                break
            w = diag * (wa2 / dxn)
            w = w / sdiag
            temp = np.abs(w)
            parc = ((fp / delta) / temp) / temp
            parl = np.where(act & (fp > 0.0), np.where(parl >= par, parl, par), parl)
            paru = np.where(act & (fp < 0.0), np.where(paru <= par, paru, par), paru)
            pn = par + parc
            par = np.where(act, np.where(parl >= pn, parl, pn), par)
    return x, par


def lmdif_circle(fcn, n):
    """OpenSim's lmdif_C on one unknown started at 0, for n problems at once.

    ``fcn(u, idx)`` returns the residuals of problems ``idx`` at ``u``.  Returns u (n,).
    """
    x = np.zeros(n)
    all_i = np.arange(n)
    f = fcn(x, all_i)
    fnorm = np.abs(f)
    par = np.zeros(n)
    it = np.ones(n, dtype=int)
    nfev = np.ones(n, dtype=int)
    diag = np.zeros(n)
    delta = np.zeros(n)
    xnorm = np.zeros(n)
    rr = np.zeros(n)  # the 1x1 "R" of the QR factorization (= -J)
    qtf = np.zeros(n)
    gnorm = np.zeros(n)
    need_jac = np.ones(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        while active.any():
            j = np.flatnonzero(active & need_jac)
            if j.size:
                fj = fcn(x[j] + _FD_STEP, j)
                J = (fj - f[j]) / _FD_STEP
                aJ = np.abs(J)
                first = it[j] == 1
                d0 = np.where(aJ == 0.0, 1.0, aJ)
                diag[j] = np.where(first, d0, diag[j])
                xn = np.abs(diag[j] * x[j])
                xnorm[j] = np.where(first, xn, xnorm[j])
                dl = _FACTOR * xn
                dl = np.where(np.abs(dl) <= 1e-4, _FACTOR, dl)
                delta[j] = np.where(first, dl, delta[j])
                nz = J != 0.0
                rr[j] = np.where(nz, -J, -0.0)
                qtf[j] = np.where(nz, -f[j], f[j])
                g = np.where((fnorm[j] != 0.0) & (aJ != 0.0), np.abs((rr[j] * (qtf[j] / fnorm[j])) / aJ), 0.0)
                gnorm[j] = g
                # info 4: gradient test with gtol = 0
                stop = g <= 0.0
                active[j[stop]] = False
                diag[j] = np.where(diag[j] >= aJ, diag[j], aJ)
                need_jac[j] = False
            i = np.flatnonzero(active)
            if i.size == 0:
                break
            step, par_i = _lmpar(rr[i], diag[i], qtf[i], delta[i], par[i])
            wa1 = -step
            trial = x[i] + wa1
            pnorm = np.abs(diag[i] * wa1)
            d_i = delta[i]
            d_i = np.where(it[i] == 1, np.minimum(d_i, pnorm), d_i)
            f1 = fcn(trial, i)
            nfev[i] += 1
            fnorm1 = np.abs(f1)
            fn = fnorm[i]
            actred = np.where(0.1 * fnorm1 < fn, 1.0 - (fnorm1 / fn) ** 2, -1.0)
            temp1 = np.abs(rr[i] * wa1) / fn
            temp2 = (np.sqrt(par_i) * pnorm) / fn
            prered = temp1 * temp1 + (temp2 * temp2) / 0.5
            dirder = -(temp1 * temp1 + temp2 * temp2)
            ratio = np.where(prered != 0.0, actred / prered, 0.0)
            low = ratio <= 0.25
            temp = np.where(actred >= 0.0, 0.5, 0.5 * dirder / (dirder + 0.5 * actred))
            temp = np.where((0.1 * fnorm1 >= fn) | (temp < 0.1), 0.1, temp)
            d_low = temp * np.minimum(d_i, pnorm / 0.1)
            p_low = par_i / temp
            grow = ~low & ((par_i == 0.0) | (ratio >= 0.75))
            d_i = np.where(low, d_low, np.where(grow, pnorm / 0.5, d_i))
            par_i = np.where(low, p_low, np.where(grow, 0.5 * par_i, par_i))
            delta[i] = d_i
            par[i] = par_i
            succ = ratio >= 1e-4
            s = i[succ]
            x[s] = trial[succ]
            xnorm[s] = np.abs(diag[s] * x[s])
            fnorm[s] = fnorm1[succ]
            f[s] = f1[succ]
            it[s] += 1
            xn_i = xnorm[i]
            conv = ((np.abs(actred) <= _FTOL) & (prered <= _FTOL) & (0.5 * ratio <= 1.0)) | (d_i <= _XTOL * xn_i)
            conv |= nfev[i] >= _MAXFEV
            conv |= (np.abs(actred) <= _MACHEP) & (prered <= _MACHEP) & (0.5 * ratio <= 1.0)
            conv |= d_i <= _MACHEP * xn_i
            conv |= gnorm[i] <= _MACHEP
            active[i[conv]] = False
            need_jac[i] = succ
    return x


def find_circle_point(radius, p1, p2, wrap_axis=0, wrap_sign=0):
    """OpenSim's WrapTorus::findClosestPoint, vectorized.

    Returns (found (N,) bool, circle point (N, 3)).
    """
    n = p1.shape[0]
    c12 = _Circle(p1, p2, radius)
    u1 = lmdif_circle(c12, n)
    c21 = _Circle(p2, p1, radius)
    u2 = lmdif_circle(c21, n)
    a1 = p1 + u1[:, None] * c12.n
    a2 = p2 + u2[:, None] * c21.n

    def dist(a):
        x, y, z = a[:, 0], a[:, 1], a[:, 2]
        with np.errstate(invalid="ignore"):
            return np.sqrt(x * x + y * y + z * z + radius * radius - 2.0 * radius * np.sqrt(x * x + y * y))

    d1, d2 = dist(a1), dist(a2)
    better1 = d1 < d2
    found = np.ones(n, dtype=bool)
    if wrap_sign != 0:
        ok1 = V.dsign(a1[:, wrap_axis]) == wrap_sign
        ok2 = V.dsign(a2[:, wrap_axis]) == wrap_sign
        better1 = np.where(ok1 & ok2, better1, ok1)
        found = ok1 | ok2
    a = V.where3(better1, a1, a2)
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.sqrt(a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1])
        c = np.stack([a[:, 0] * radius / mag, a[:, 1] * radius / mag, np.zeros(n)], axis=1)
    return found, c


class _TorusStage:
    """A torus wrap of a batch in two phases (see ``cylinder._CylinderStage``).

    Construction finds the circle points (lmdif) and runs phase one of the inner
    cylinder; ``finish(sel)`` completes the cylinder wrap of ``sel`` and returns the
    tangent points in the torus frame.
    """

    def __init__(self, p1, p2, inner_radius, outer_radius, wrap_axis, wrap_sign, single_wrap):
        p1 = np.asarray(p1, dtype=float).reshape(-1, 3)
        p2 = np.asarray(p2, dtype=float).reshape(-1, 3)
        n = p1.shape[0]
        self.n = n
        self.status = np.full(n, WrapStatus.NO_WRAP, dtype=int)
        self.code = self.status.copy()
        self.needs_loop = np.zeros(n, dtype=bool)
        self.sub = np.full(n, -1)
        self.cyl = None
        if n == 0:
            return
        found, c = find_circle_point(float(outer_radius), p1, p2, wrap_axis, wrap_sign)
        idx = np.flatnonzero(found)
        self.code[idx] = WrapStatus.WRAPPED  # WrapTorus returns WRAPPED whenever the circle point is found
        if idx.size == 0:
            return
        c = -c[idx]
        cx, _ = V.normalize_or_zero(c)
        cy = np.broadcast_to(np.array([0.0, 0.0, -1.0]), cx.shape)
        cz = V.cross(cx, cy)
        M = np.stack([cx, cy, cz], axis=1)  # rows: the cylinder's axes in the torus frame
        off = np.einsum("nij,nj->ni", M, c)  # torus frame -> cylinder frame: M p + off
        q1 = np.einsum("nij,nj->ni", M, p1[idx]) + off
        q2 = np.einsum("nij,nj->ni", M, p2[idx]) + off
        # the temporary cylinder: quadrant +x (towards the torus axis), length 10000
        cyl = _CylinderStage(q1, q2, float(inner_radius), CYL_LENGTH, 0, 1, single_wrap)
        self.cyl, self.M, self.off, self.idx = cyl, M, off, idx
        self.sub[idx] = np.arange(idx.size)
        wr = (cyl.status == WrapStatus.WRAPPED) | (cyl.status == WrapStatus.MANDATORY_WRAP)
        self.status[idx] = np.where(wr, WrapStatus.WRAPPED, cyl.status)
        self.needs_loop[idx] = cyl.needs_loop

    def _back(self, q, r):
        return np.einsum("nji,nj->ni", self.M[q], r - self.off[q])

    def finish(self, sel):
        q = self.sub[np.asarray(sel, dtype=int)]
        r1, r2, ln = self.cyl.finish(q)
        return self._back(q, r1), self._back(q, r2), ln

    def bound(self, sel):
        q = self.sub[np.asarray(sel, dtype=int)]
        r1, r2, _, lmin = self.cyl.bound(q)
        return self._back(q, r1), self._back(q, r2), self.M[q, 2].copy(), lmin

    def result(self) -> WrapSegmentResult:
        n = self.n
        r1 = np.full((n, 3), np.nan)
        r2 = np.full((n, 3), np.nan)
        wlen = np.zeros(n)
        sel = np.flatnonzero((self.status == WrapStatus.WRAPPED))
        if sel.size:
            r1[sel], r2[sel], wlen[sel] = self.finish(sel)
        return WrapSegmentResult(self.status.copy(), r1, r2, wlen, self.code.copy())


def torus_wrap(p1, p2, inner_radius, outer_radius, wrap_axis=0, wrap_sign=0, single_wrap=True):
    """Vectorized WrapTorus wrap of segments p1-p2 (N, 3) in the torus frame."""
    if use_jit():  # compiled per-segment kernel (osim_emb.paths.wrapping._kernels)
        from osim_emb.paths.wrapping._kernels import torus_batch
        p1 = np.require(np.asarray(p1, dtype=float).reshape(-1, 3), requirements=["C", "W"])
        p2 = np.require(np.asarray(p2, dtype=float).reshape(-1, 3), requirements=["C", "W"])
        st, code, a, b, ln = torus_batch(p1, p2, float(inner_radius), float(outer_radius), int(wrap_axis),
                                         int(wrap_sign), bool(single_wrap))
        return WrapSegmentResult(st, a, b, ln, code)
    return _TorusStage(p1, p2, inner_radius, outer_radius, wrap_axis, wrap_sign, single_wrap).result()


@dataclass(frozen=True)
class WrapTorus(WrapObject):
    """A torus around the wrap frame's z axis: centre circle of ``outer_radius``, tube ``inner_radius``."""

    type_name = "WrapTorus"

    inner_radius: float = 0.01
    outer_radius: float = 0.1

    def __post_init__(self):
        object.__setattr__(self, "inner_radius", float(self.inner_radius))
        object.__setattr__(self, "outer_radius", float(self.outer_radius))
        if not self.inner_radius >= 0.0 or not self.outer_radius >= 0.0:
            raise ValueError("WrapTorus radii cannot be negative")
        self.wrap_axis_sign  # validate the quadrant

    def wrap_segment(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3), wrap frame) over the torus.

        ``single_wrap=False``: the inner cylinder runs OpenSim's tangent-adjustment
        loop (as when the path has several PathWraps).  ``method`` is ignored.
        """
        ax, sg = self.wrap_axis_sign
        return torus_wrap(p1, p2, self.inner_radius, self.outer_radius, ax, sg, single_wrap)

    def wrap_segment_in_path(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        return self.wrap_segment(p1, p2, method, single_wrap)

    def _stage(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> _TorusStage:
        """Two-phase evaluation used by the path algorithm (see ``_TorusStage``)."""
        ax, sg = self.wrap_axis_sign
        return _TorusStage(p1, p2, self.inner_radius, self.outer_radius, ax, sg, single_wrap)
