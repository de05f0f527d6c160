"""Knot-based functions of one input, with OpenSim 4.6's evaluation semantics.

=====================  =====================================================
type                   what it is
=====================  =====================================================
:class:`SimmSpline`    OpenSim ``SimmSpline``: the Forsythe-Malcolm-Moler
                       cubic (also what an XML ``<NaturalCubicSpline>`` is
                       loaded as).
:class:`NaturalCubicSpline`  a true natural cubic spline (s'' = 0 at the ends).
:class:`GCVSpline`     OpenSim ``GCVSpline`` with ``error_variance`` 0: the
                       interpolating natural spline of degree 2m-1.
:class:`PiecewiseLinear`     OpenSim ``PiecewiseLinearFunction``.
:class:`PiecewiseConstant`   OpenSim ``PiecewiseConstantFunction``.
=====================  =====================================================

All of them evaluate value, first and second derivative for a whole batch of
arguments with the compiled kernel the joint-variable program uses
(:func:`osim_emb.core.functions.kernels._univariate`); this module builds their
parameters (knot checks, spline coefficients).  Every constructor checks
its knots and raises :class:`~osim_emb.core.functions.base.FunctionError` with a
message that says what is wrong.
"""

from __future__ import annotations

from math import comb, factorial
from typing import Any, Sequence

import numpy as np
from scipy.linalg import solve_banded
from scipy.sparse import csc_matrix
from scipy.sparse.linalg import splu

from osim_emb.core.functions import kernels as K
from osim_emb.core.functions.base import CompiledUnivariateFunction, FunctionError, readonly

__all__ = [
    "SimmSpline",
    "NaturalCubicSpline",
    "GCVSpline",
    "PiecewiseLinear",
    "PiecewiseConstant",
    "validate_knots",
    "KNOT_SPACING_FLOOR",
    "END_KNOT_TOLERANCE",
]

#: OpenSim (SimmMacros.h ``TINY_NUMBER``): knot spacings below this are replaced by it.
KNOT_SPACING_FLOOR = 1e-7
#: OpenSim (SimmMacros.h ``ROUNDOFF_ERROR``): an argument this close to an end knot gets the end values.
END_KNOT_TOLERANCE = K.END_KNOT_TOLERANCE


def validate_knots(x: Any, y: Any, min_count: int, what: str = "function",
                   allow_repeated: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Check knots (x, y) and return them as read-only float arrays.

    x and y must be one-dimensional, of the same length (at least
    ``min_count``), finite, and x strictly increasing -- or, with
    ``allow_repeated``, non-decreasing (a knot may be repeated, never
    decrease).  The error message names the offending entry, e.g. ``knots are
    not strictly increasing at x[3]=0.5 <= x[2]=0.7``; callers (the model
    importer) prefix the file and element.
    """
    try:
        xa = np.asarray(x, dtype=float)
        ya = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as exc:
        raise FunctionError(f"{what}: knots must be numbers ({exc})") from None
    if xa.ndim != 1 or ya.ndim != 1:
        raise FunctionError(f"{what}: x and y must be one-dimensional lists of numbers, "
                            f"got shapes {xa.shape} and {ya.shape}")
    if xa.size != ya.size:
        raise FunctionError(f"{what}: x has {xa.size} values but y has {ya.size}")
    if xa.size < min_count:
        raise FunctionError(f"{what}: needs at least {min_count} knots, got {xa.size}")
    for name, a in (("x", xa), ("y", ya)):
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            i = int(bad[0])
            raise FunctionError(f"{what}: {name}[{i}]={float(a[i])} is not finite")
    step = np.diff(xa)
    bad = np.flatnonzero(~(step >= 0) if allow_repeated else ~(step > 0))
    if bad.size:
        i = int(bad[0]) + 1
        if allow_repeated:
            raise FunctionError(f"{what}: knots are decreasing at "
                                f"x[{i}]={float(xa[i])!r} < x[{i - 1}]={float(xa[i - 1])!r}")
        raise FunctionError(f"{what}: knots are not strictly increasing at "
                            f"x[{i}]={float(xa[i])!r} <= x[{i - 1}]={float(xa[i - 1])!r}")
    return readonly(xa), readonly(ya)


class _KnotFunction(CompiledUnivariateFunction):
    """Shared parts of the knot-based functions: x, y, parameters, description."""

    min_knots = 2
    #: OpenSim's SimmSpline, PiecewiseLinearFunction and PiecewiseConstantFunction work with a
    #: repeated knot (spacing floored at 1e-7); real models have them (MoBL's Schutte1993 passive
    #: force-length curves repeat x = 1.15), so those types accept one.
    allow_repeated_knots = False
    x: np.ndarray
    y: np.ndarray

    def _set_knots(self, x, y, min_count: int | None = None):
        self.x, self.y = validate_knots(x, y, self.min_knots if min_count is None else min_count,
                                        self.type_name, self.allow_repeated_knots)

    def parameters(self) -> dict[str, Any]:
        return {"x": self.x.tolist(), "y": self.y.tolist()}

    def describe(self) -> str:
        return f"{self.type_name}, {self.x.size} knots on [{self.x[0]:g}, {self.x[-1]:g}]"

class SimmSpline(_KnotFunction):
    """OpenSim's ``SimmSpline``: the Forsythe-Malcolm-Moler interpolating cubic.

    * 2 knots: the straight line through them.
    * 3 knots: the interpolating parabola (third derivative zero at both ends).
    * 4 or more: a C2 cubic spline whose end conditions make the third
      derivative on the first (last) interval equal that of the cubic through
      the first (last) four knots.  With exactly 4 knots the spline *is* that
      cubic.
    * Knot spacings (and the spans used in the end conditions) are floored at
      1e-7 as OpenSim does.
    * Outside the knots: the straight line with the end slope (second
      derivative 0 there); within 2e-13 of an end knot (on the inside) the end
      value, slope and second derivative are returned.
    * The interval containing an argument is found with OpenSim's bisection.

    Evaluation on interval k with dt = t - x_k:
    s = y_k + dt (b_k + dt (c_k + dt d_k)).

    An OpenSim XML ``<NaturalCubicSpline>`` is loaded by OpenSim 4.6 as this
    type (``Object::renameType("NaturalCubicSpline", "SimmSpline")``): it is
    not a natural spline.
    """

    type_name = "SimmSpline"
    min_knots = 2
    allow_repeated_knots = True

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        self._set_knots(x, y)
        self.b, self.c, self.d = (readonly(a) for a in self._coefficients(self.x, self.y))

    @staticmethod
    def _coefficients(x: np.ndarray, y: np.ndarray):
        """Cubic coefficients b, c, d per knot from the knot moments M_i = s''(x_i)."""
        n = x.size
        floor = KNOT_SPACING_FLOOR
        h = np.maximum(floor, np.diff(x))
        slope = np.diff(y) / h
        if n == 2:
            return np.full(2, slope[0]), np.zeros(2), np.zeros(2)

        # Interior rows (i = 1..n-2) of the moment equations
        #   h_{i-1} M_{i-1} + 2 (h_{i-1} + h_i) M_i + h_i M_{i+1} = 6 (slope_i - slope_{i-1}).
        # End rows: M_1 - M_0 = h_0 * e_0 and M_{n-1} - M_{n-2} = h_{n-2} * e_1, where e is the
        # third derivative imposed at that end (6 x the third divided difference of the four end
        # knots, or 0 with three knots).  Substituting the end rows into the first and last
        # interior rows leaves a diagonally dominant tridiagonal system in M_1..M_{n-2}.
        e0 = e1 = 0.0
        if n > 3:
            def dd2(i):  # second divided difference on x_i, x_{i+1}, x_{i+2} (OpenSim's floors)
                return (slope[i + 1] - slope[i]) / max(floor, x[i + 2] - x[i])

            e0 = 6.0 * (dd2(1) - dd2(0)) / max(floor, x[3] - x[0])
            e1 = 6.0 * (dd2(n - 3) - dd2(n - 4)) / max(floor, x[n - 1] - x[n - 4])
        m = n - 2
        diag = 2.0 * (h[:-1] + h[1:])
        rhs = 6.0 * np.diff(slope)
        diag[0] += h[0]
        rhs[0] += h[0] * h[0] * e0
        diag[-1] += h[-1]
        rhs[-1] -= h[-1] * h[-1] * e1
        band = np.zeros((3, m))
        band[0, 1:] = h[1:-1]
        band[1] = diag
        band[2, :-1] = h[1:-1]
        inner = solve_banded((1, 1), band, rhs)
        mom = np.empty(n)
        mom[1:-1] = inner
        mom[0] = inner[0] - h[0] * e0
        mom[-1] = inner[-1] + h[-1] * e1

        b = np.empty(n)
        c = mom / 2.0
        d = np.empty(n)
        b[:-1] = slope - h * (2.0 * mom[:-1] + mom[1:]) / 6.0
        d[:-1] = (mom[1:] - mom[:-1]) / (6.0 * h)
        b[-1] = slope[-1] + h[-1] * (mom[-2] + 2.0 * mom[-1]) / 6.0
        d[-1] = d[-2]
        return b, c, d

    def node_parameters(self):
        return (K.UNI_SIMM, self.x.size), (*self.x, *self.y, *self.b, *self.c, *self.d)


class _NaturalSpline(_KnotFunction):
    """Interpolating natural spline of degree 2m-1 with polynomial continuation outside.

    Inside [x_0, x_{n-1}) it is the spline of degree 2m-1 through the knots
    whose derivatives of orders m..2m-2 vanish at both end knots; for
    t < x_0 and t >= x_{n-1} it is the Taylor polynomial of degree m-1 at the
    end knot (the natural spline's own continuation).  For m >= 2 value, first
    and second derivative are continuous everywhere; for m = 1 (piecewise
    linear, constant outside) the derivative at a knot is the slope on its
    right, and 0 from the last knot on, as in GCVSPL's SPLDER.

    Representation: on interval i, with h_i = x_{i+1} - x_i and
    tau = (t - x_i) / h_i in [0, 1],

        s(t) = sum_{p=0}^{2m-1} a[i, p] tau^p,   a[i, p] = s^(p)(x_i) h_i^p / p!.

    The coefficients solve one sparse linear system: a[i, 0] = y_i and
    sum_p a[i, p] = y_{i+1} (interpolation), continuity of s^(j),
    j = 1..2m-2, at the interior knots,

        sum_{p>=j} C(p, j) a[i, p] = (h_i / h_{i+1})^j a[i+1, j],

    and the natural end conditions a[0, j] = 0 and sum_{p>=j} C(p, j) a[n-2, p]
    = 0 for j = m..2m-2; then one step of iterative refinement.  This local,
    scaled form stays accurate for high degrees (against exact rational
    arithmetic: ~1e-15 in s'' for degree 5, ~5e-14 for degree 9 on
    well-spaced knots, where a B-spline collocation solve loses 1e-8).
    """

    half_order = 2

    def _build(self):
        m = self.half_order
        q = 2 * m
        x, y = self.x, self.y
        n_int = x.size - 1
        h = np.diff(x)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        rhs: list[float] = []

        def equation(entries, value):
            r = len(rhs)
            for col, v in entries:
                rows.append(r)
                cols.append(col)
                vals.append(v)
            rhs.append(value)

        for j in range(m, 2 * m - 1):  # natural conditions at the first knot
            equation([(j, 1.0)], 0.0)
        for i in range(n_int):
            base = q * i
            equation([(base, 1.0)], y[i])
            equation([(base + p, 1.0) for p in range(q)], y[i + 1])
            if i < n_int - 1:
                ratio = h[i] / h[i + 1]
                for j in range(1, 2 * m - 1):
                    equation([(base + p, float(comb(p, j))) for p in range(j, q)]
                             + [(base + q + j, -ratio ** j)], 0.0)
            else:
                for j in range(m, 2 * m - 1):  # natural conditions at the last knot
                    equation([(base + p, float(comb(p, j))) for p in range(j, q)], 0.0)
        size = q * n_int
        matrix = csc_matrix((vals, (rows, cols)), shape=(size, size))
        b = np.array(rhs)
        lu = splu(matrix)
        a = lu.solve(b)
        a = a + lu.solve(b - matrix @ a)  # one step of iterative refinement
        self._coef = a.reshape(n_int, q)
        self._h = h

        # Derivatives 0..m-1 at the end knots, for the Taylor continuation outside.
        ends = np.empty((m, 2))
        last = self._coef[-1]  # the last piece at tau = 1: s^(j)(x_{n-1}) = sum_p a_p p!/(p-j)! / h^j
        for j in range(m):
            ends[j, 0] = self._coef[0, j] * factorial(j) / h[0] ** j
            ends[j, 1] = sum(last[p] * (factorial(p) // factorial(p - j)) for p in range(q - 1, j - 1, -1)) / h[-1] ** j
        ends[0] = [y[0], y[-1]]  # exact end values
        self._ends = ends

    def node_parameters(self):
        coef, ends = np.ascontiguousarray(self._coef).ravel(), np.ascontiguousarray(self._ends).ravel()
        return (K.UNI_NATURAL, self.half_order, self.x.size), (*self.x, *self._h, *coef, *ends)


class NaturalCubicSpline(_NaturalSpline):
    """A true natural cubic spline: interpolating, second derivative 0 at both end knots.

    Outside the knots it continues as the straight line with the end slope
    (second derivative 0), the natural spline's own extension.  Two knots give
    the straight line.

    Note: an OpenSim XML ``<NaturalCubicSpline>`` element is *not* this
    function.  OpenSim 4.6 renames the type on load
    (``Object::renameType("NaturalCubicSpline", "SimmSpline")`` in
    RegisterTypes_osimCommon.cpp; checked with the opensim package:
    ``makeObjectFromFile`` returns a ``SimmSpline``), so the model importer
    maps that element to :class:`SimmSpline`.  Use this class for your own
    empirically-fitted joint functions (the seed's pre-modeling approach).
    """

    type_name = "NaturalCubicSpline"
    min_knots = 2
    half_order = 2

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        self._set_knots(x, y)
        self._build()


class GCVSpline(_NaturalSpline):
    """OpenSim's ``GCVSpline`` as OpenSim 4.6 evaluates it, for ``error_variance`` 0.

    OpenSim refits the spline from x and y when the function is first used
    (SimTK ``SplineFitter::fitFromErrorVariance``, i.e. Woltring's GCVSPL);
    stored ``coefficients`` and ``weights`` are ignored.  With the default
    error variance 0 the result is the interpolating natural spline of degree
    2m-1 (m = ``half_order``): derivatives of orders m..2m-2 vanish at both
    end knots; outside the knots it continues as the degree-(m-1) Taylor
    polynomial at the end knot (for m = 2: linear extrapolation; for m = 1:
    constant, with derivative 0 from the last knot on).

    GCVSPL "interpolates" with a smoothing parameter of 1e-15 relative to its
    matrix norms rather than 0; that and its banded solve without pivoting
    make OpenSim's values differ from the exact natural spline by ~1e-15
    (well-spaced knots) up to ~1e-10 (nearly coincident knots, degree >= 5).

    A nonzero ``error_variance`` (smoothing, or GCV when negative) is **not
    supported**: OpenSim then chooses the smoothing parameter by a search
    whose result is only defined by that implementation, and this class
    raises :class:`FunctionError` rather than return something different.

    Any half order m >= 1 is accepted (OpenSim: m = 1, 2, 3, 4 are linear,
    cubic, quintic, heptic); at least 2m knots are required, as in OpenSim.
    """

    type_name = "GCVSpline"

    def __init__(self, x: Sequence[float], y: Sequence[float], half_order: int = 2,
                 error_variance: float = 0.0):
        try:
            m = int(half_order)
        except (TypeError, ValueError):
            raise FunctionError(f"GCVSpline: half_order must be an integer, got {half_order!r}") from None
        if m != half_order or m < 1:
            raise FunctionError(f"GCVSpline: half_order must be a positive integer "
                                f"(degree 2*half_order-1), got {half_order!r}")
        ev = float(error_variance)
        if ev != 0.0:
            raise FunctionError(
                f"GCVSpline: error_variance={ev:g} is not supported (only 0, the interpolating "
                "natural spline, is); OpenSim would fit a smoothing spline "
                + ("by generalized cross-validation" if ev < 0 else "for that error variance"))
        self.half_order = m
        self.error_variance = 0.0
        self._set_knots(x, y, min_count=2 * m)
        self._build()

    @property
    def degree(self) -> int:
        return 2 * self.half_order - 1

    def parameters(self):
        return {"x": self.x.tolist(), "y": self.y.tolist(), "half_order": self.half_order,
                "error_variance": self.error_variance}

    def describe(self):
        return (f"GCVSpline of degree {self.degree}, {self.x.size} knots on "
                f"[{self.x[0]:g}, {self.x[-1]:g}]")


class PiecewiseLinear(_KnotFunction):
    """OpenSim's ``PiecewiseLinearFunction``.

    Straight segments between the knots; outside, the end segments continued
    (slopes floored spacing as OpenSim: (y_{i+1}-y_i)/max(1e-7, x_{i+1}-x_i)).
    The first derivative at an interior knot is the slope of the interval that
    OpenSim's bisection lands in (left or right, depending on the knot); the
    second derivative is 0 everywhere (OpenSim returns 0 for any order >= 2).
    """

    type_name = "PiecewiseLinear"
    min_knots = 2
    allow_repeated_knots = True

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        self._set_knots(x, y)
        slope = np.diff(self.y) / np.maximum(KNOT_SPACING_FLOOR, np.diff(self.x))
        self.slopes = readonly(np.append(slope, slope[-1]))

    def node_parameters(self):
        return (K.UNI_PWLINEAR, self.x.size), (*self.x, *self.y, *self.slopes)


class PiecewiseConstant(_KnotFunction):
    """OpenSim's ``PiecewiseConstantFunction``.

    y_k on the interval [x_k, x_{k+1}] found by OpenSim's bisection (the left
    knot's value; at an interior knot the bisection decides), y_0 up to the
    first knot (within 2e-13), y_{n-1} from the last knot on.  All
    derivatives are 0 (OpenSim's calcDerivative returns 0).
    """

    type_name = "PiecewiseConstant"
    min_knots = 2
    allow_repeated_knots = True

    def __init__(self, x: Sequence[float], y: Sequence[float]):
        self._set_knots(x, y)

    def node_parameters(self):
        return (K.UNI_PWCONSTANT, self.x.size), (*self.x, *self.y)
