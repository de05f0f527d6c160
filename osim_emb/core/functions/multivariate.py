"""Functions of several inputs, and clamping of a one-input function.

* :class:`MultivariatePolynomial` -- OpenSim ``MultivariatePolynomialFunction``
  (same term order and coefficients), with a *correct* Hessian.
* :class:`Clamped` -- f(clip(t, lower, upper)), as MovingPathPoint uses its
  coordinate.
* :class:`SplineSurface` -- a smooth (tensor-product spline) function of two
  inputs interpolating values on a grid, e.g. a two-coordinate shoulder rhythm.
"""

from __future__ import annotations

from itertools import product
from math import comb
from typing import Any, Sequence

import numpy as np
from scipy.interpolate import NdBSpline, make_interp_spline

from osim_emb.core.functions import kernels as K
from osim_emb.core.functions.base import FunctionError, Jet, JointFunction, function_from_dict, readonly
from osim_emb.core.functions.program import function_program

__all__ = ["MultivariatePolynomial", "Clamped", "SplineSurface", "polynomial_exponents"]


def polynomial_exponents(dimension: int, order: int) -> np.ndarray:
    """Exponent tuples of the terms of a ``MultivariatePolynomialFunction``, in OpenSim's order.

    All tuples (e_1, ..., e_d) with e_1 + ... + e_d <= order, in lexicographic
    order with the first variable varying slowest.  For dimension 2, order 2:
    (0,0), (0,1), (0,2), (1,0), (1,1), (2,0).  Shape (n_terms, dimension).
    """
    terms = [e for e in product(range(order + 1), repeat=dimension) if sum(e) <= order]
    return np.array(terms, dtype=np.intp).reshape(len(terms), dimension)


class MultivariatePolynomial(JointFunction):
    """OpenSim's ``MultivariatePolynomialFunction``: f(x) = sum_t c_t prod_v x_v^(e_tv).

    ``coefficients`` follow OpenSim's term order (:func:`polynomial_exponents`);
    there must be C(dimension + order, order) of them.

    Value and first derivatives equal OpenSim's.  The Hessian here is the true
    one.  OpenSim 4.6's second derivatives are wrong: its ``calcDerivative``
    returns the first partial derivative with respect to the first index of
    the request for any derivative order (``getMaxDerivativeOrder()`` is 1,
    but the request is not rejected).  A CoordinateCouplerConstraint built on
    this function is therefore right at position and velocity level and wrong
    at acceleration level in OpenSim.
    """

    type_name = "MultivariatePolynomial"

    def __init__(self, dimension: int, order: int, coefficients: Sequence[float]):
        if int(dimension) != dimension or dimension < 1:
            raise FunctionError(f"MultivariatePolynomial: dimension must be a positive integer, got {dimension!r}")
        if int(order) != order or order < 0:
            raise FunctionError(f"MultivariatePolynomial: order must be a non-negative integer, got {order!r}")
        self.dimension = int(dimension)
        self.order = int(order)
        self.n_inputs = self.dimension
        c = np.atleast_1d(np.asarray(coefficients, dtype=float))
        n_terms = comb(self.dimension + self.order, self.order)
        if c.ndim != 1 or c.size != n_terms:
            raise FunctionError(
                f"MultivariatePolynomial: dimension {self.dimension}, order {self.order} needs "
                f"{n_terms} coefficients, got {c.size}")
        if not np.all(np.isfinite(c)):
            raise FunctionError(f"MultivariatePolynomial: coefficient {int(np.flatnonzero(~np.isfinite(c))[0])} is not finite")
        self.coefficients = readonly(c)
        self.exponents = polynomial_exponents(self.dimension, self.order)
        self.exponents.setflags(write=False)

        # Derivatives of a polynomial are polynomials of lower degree, so they are
        # written in the same term basis: grad_coef[a] and hess_coef[a, b] are
        # coefficient vectors over the same monomials.
        index = {tuple(e): i for i, e in enumerate(self.exponents.tolist())}
        d = self.dimension
        nt = n_terms

        def differentiate(coef: np.ndarray, var: int) -> np.ndarray:
            out = np.zeros(nt)
            for i, e in enumerate(self.exponents):
                if e[var] > 0 and coef[i] != 0.0:
                    lower = list(e)
                    lower[var] -= 1
                    out[index[tuple(lower)]] += coef[i] * e[var]
            return out

        self._grad_coef = np.array([differentiate(c, a) for a in range(d)])  # (d, nt)
        self._hess_coef = np.array([[differentiate(self._grad_coef[a], b) for b in range(d)]
                                    for a in range(d)])  # (d, d, nt)
        self._all_coef = np.ascontiguousarray(np.vstack(
            [c[None, :], self._grad_coef, self._hess_coef.reshape(d * d, nt)]))  # (1 + d + d^2, nt)

    def _monomials(self, x: np.ndarray) -> np.ndarray:
        """Values of all monomials at the points, shape (N, n_terms): the least-squares basis of fits
        (``rhythm.as_polynomial``); evaluation runs the compiled kernel."""
        powers = np.empty((x.shape[0], self.dimension, self.order + 1))  # x_v^e by products
        powers[:, :, 0] = 1.0
        for e in range(1, self.order + 1):
            powers[:, :, e] = powers[:, :, e - 1] * x
        mono = powers[:, 0, self.exponents[:, 0]]
        for v in range(1, self.dimension):
            mono = mono * powers[:, v, self.exponents[:, v]]
        return mono

    def node_parameters(self) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """(number of terms, the monomial recurrence) and the coefficient table (1 + d + d^2, n_terms: the value's,
        the gradient's and the Hessian's coefficients, a row each), as the program's OP_MPOLY node and
        :func:`osim_emb.core.functions.kernels.multivariate_polynomial` read them.  The recurrence: term t's monomial
        is term parent(t)'s times u_var(t), var(t) the last variable of non-zero exponent (term 0 is the constant)."""
        cached = self.__dict__.get("_node_parameters")
        if cached is not None:
            return cached
        index = {tuple(e): t for t, e in enumerate(self.exponents.tolist())}
        nt = self.coefficients.size
        parent, var = [0] * nt, [0] * nt
        for t in range(1, nt):
            e = list(self.exponents[t])
            v = max(i for i, x in enumerate(e) if x > 0)
            e[v] -= 1
            parent[t], var[t] = index[tuple(e)], v
        self._node_parameters = ((nt, *parent, *var), tuple(np.ascontiguousarray(self._all_coef).ravel().tolist()))
        return self._node_parameters

    def _evaluate(self, x, order, cache):
        d = self.dimension
        packed = self.__dict__.get("_packed")
        if packed is None:
            ints, flts = self.node_parameters()
            packed = (np.array(ints, dtype=np.int64), np.array(flts, dtype=np.float64))
            self._packed = packed
        out = K.multivariate_polynomial_batch(packed[0], packed[1], np.ascontiguousarray(x, dtype=float))
        value = out[:, 0]
        grad = out[:, 1:1 + d] if order >= 1 else None
        hess = out[:, 1 + d:].reshape(-1, d, d) if order >= 2 else None
        return Jet(value, grad, hess)

    @property
    def is_constant(self) -> bool:
        return not np.any(self._grad_coef)

    def parameters(self):
        return {"dimension": self.dimension, "order": self.order,
                "coefficients": self.coefficients.tolist()}

    def describe(self):
        return f"multivariate polynomial of {self.dimension} inputs, order {self.order}"


class Clamped(JointFunction):
    """g(t) = f(clip(t, lower, upper)) for a function f of one input.

    This is how OpenSim evaluates a MovingPathPoint's location: the driving
    coordinate is clamped to its range first.  Gradient and Hessian are those
    of the composition: f'(t), f''(t) for lower <= t <= upper (the inside
    one-sided values at the bounds), 0 outside the range.

    (OpenSim's MovingPathPoint *derivative* used in its moment arms is taken at
    the unclamped coordinate; that is the caller's concern, not this class's.)
    """

    type_name = "Clamped"
    n_inputs = 1

    def __init__(self, function: JointFunction, lower: float, upper: float):
        if not isinstance(function, JointFunction):
            raise FunctionError(f"Clamped: expected a JointFunction, got {type(function).__name__}")
        if function.n_inputs != 1:
            raise FunctionError(f"Clamped: the function must take one input, it takes {function.n_inputs}")
        lower, upper = float(lower), float(upper)
        if np.isnan(lower) or np.isnan(upper) or not lower <= upper:
            raise FunctionError(f"Clamped: need lower <= upper, got lower={lower!r}, upper={upper!r}")
        self.function = function
        self.lower = lower
        self.upper = upper

    def _evaluate(self, x, order, cache):
        return function_program(self).evaluate(x, order, cache)  # the compiled program (functions.program)

    @property
    def is_constant(self) -> bool:
        return self.function.is_constant or self.lower == self.upper

    def parameters(self):
        return {"function": self.function.to_dict(), "lower": self.lower, "upper": self.upper}

    @classmethod
    def from_parameters(cls, params: dict[str, Any]):
        return cls(function_from_dict(params["function"]), params["lower"], params["upper"])

    def describe(self):
        return f"[{self.function.describe()}] on t clamped to [{self.lower:g}, {self.upper:g}]"


class SplineSurface(JointFunction):
    """A smooth function of two inputs interpolating z[i, j] = f(x[i], y[j]) on a grid.

    A tensor-product interpolating spline of degree ``degree`` in each input
    (not-a-knot ends, evaluated with scipy ``NdBSpline``), degree 3 by default: C2, so
    value, gradient and Hessian are continuous.  Outside the grid the edge
    polynomial pieces are continued; keep inputs inside the grid.  Useful for
    user-supplied shoulder rhythms depending on two coordinates.
    """

    type_name = "SplineSurface"
    n_inputs = 2

    def __init__(self, x: Sequence[float], y: Sequence[float], z: Sequence[Sequence[float]], degree: int = 3):
        from osim_emb.core.functions.splines import validate_knots

        degree = int(degree)
        if degree not in (1, 3, 5):
            raise FunctionError(f"SplineSurface: degree must be 1, 3 or 5, got {degree}")
        z = np.asarray(z, dtype=float)
        if z.ndim != 2:
            raise FunctionError(f"SplineSurface: z must be a 2-D grid of values, got shape {z.shape}")
        xa = np.asarray(x, dtype=float)
        ya = np.asarray(y, dtype=float)
        if xa.ndim != 1 or ya.ndim != 1 or z.shape != (xa.size, ya.size):
            raise FunctionError(f"SplineSurface: z has shape {z.shape}, expected (len(x), len(y)) = "
                                f"({xa.size}, {ya.size})")
        self.x, _ = validate_knots(xa, z[:, 0], degree + 1, "SplineSurface (x grid)")
        self.y, _ = validate_knots(ya, z[0], degree + 1, "SplineSurface (y grid)")
        if not np.all(np.isfinite(z)):
            raise FunctionError("SplineSurface: z contains values that are not finite")
        self.z = readonly(z)
        self.degree = degree
        # Interpolate along x (each column), then the coefficients along y: the tensor-product
        # interpolant with not-a-knot ends in both directions.
        along_x = make_interp_spline(self.x, self.z, k=degree, axis=0)
        along_y = make_interp_spline(self.y, along_x.c.T, k=degree, axis=0)
        tx, ty, coef = along_x.t, along_y.t, np.ascontiguousarray(along_y.c.T)
        self._spline = NdBSpline((tx, ty), coef, degree, extrapolate=True)

    def _evaluate(self, x, order, cache):
        s = self._spline
        value = s(x)
        grad = hess = None
        if order >= 1:
            grad = np.stack([s(x, nu=(1, 0)), s(x, nu=(0, 1))], axis=1)
        if order >= 2:
            hxy = s(x, nu=(1, 1))
            hess = np.empty((x.shape[0], 2, 2))
            hess[:, 0, 0] = s(x, nu=(2, 0))
            hess[:, 1, 1] = s(x, nu=(0, 2))
            hess[:, 0, 1] = hess[:, 1, 0] = hxy
        return Jet(value, grad, hess)

    def parameters(self):
        return {"x": self.x.tolist(), "y": self.y.tolist(), "z": self.z.tolist(), "degree": self.degree}

    def describe(self):
        return (f"spline surface of degree {self.degree} on a {self.x.size} x {self.y.size} grid "
                f"[{self.x[0]:g}, {self.x[-1]:g}] x [{self.y[0]:g}, {self.y[-1]:g}]")
