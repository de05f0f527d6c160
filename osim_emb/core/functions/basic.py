"""Elementary joint-variable functions: constant, linear, polynomial, Fourier, composition."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from osim_emb.core.functions import kernels as K
from osim_emb.core.functions.base import (
    CompiledUnivariateFunction,
    FunctionError,
    JointFunction,
    readonly,
)
from osim_emb.core.functions.program import function_program

__all__ = [
    "Constant",
    "Linear",
    "Polynomial",
    "Fourier",
    "Composite",
    "Multiplier",
    "coordinate",
]


class Constant(JointFunction):
    """f(x) = c for any number of inputs (OpenSim ``Constant``)."""

    type_name = "Constant"

    def __init__(self, value: float, n_inputs: int = 1):
        self.value = float(value)
        self.n_inputs = int(n_inputs)

    def _evaluate(self, x, order, cache):
        return function_program(self).evaluate(x, order, cache)  # the compiled program (functions.program)

    @property
    def is_constant(self) -> bool:
        return True

    def parameters(self):
        return {"value": self.value, "n_inputs": self.n_inputs}

    def describe(self):
        return f"{self.value:g}"


class Linear(JointFunction):
    """f(x) = sum_i a_i x_i + b (SimTK ``Function::Linear``, OpenSim ``LinearFunction``).

    Accepts any number of inputs: OpenSim's coefficient list a_1..a_N, b.
    """

    type_name = "Linear"

    def __init__(self, coefficients: Sequence[float], intercept: float = 0.0):
        self.coefficients = readonly(np.atleast_1d(coefficients))
        if self.coefficients.ndim != 1 or self.coefficients.size == 0:
            raise FunctionError("Linear needs at least one slope coefficient")
        self.intercept = float(intercept)
        self.n_inputs = self.coefficients.size

    def _evaluate(self, x, order, cache):
        return function_program(self).evaluate(x, order, cache)  # the compiled program (functions.program)

    def parameters(self):
        return {"coefficients": self.coefficients.tolist(), "intercept": self.intercept}

    def describe(self):
        """The affine form with its non-zero terms (x1..xN the inputs): 'x10', '2*x1 + 0.1', '0'."""
        terms = [f"x{i + 1}" if a == 1 else f"-x{i + 1}" if a == -1 else f"{a:g}*x{i + 1}"
                 for i, a in enumerate(self.coefficients) if a != 0]
        if self.intercept != 0 or not terms:
            terms.append(f"{self.intercept:g}")
        return " + ".join(terms).replace("+ -", "- ")


def coordinate(index: int, n_inputs: int) -> Linear:
    """f(q) = q[index]: the identity on one generalized coordinate."""
    a = np.zeros(n_inputs)
    a[index] = 1.0
    return Linear(a, 0.0)


class Polynomial(CompiledUnivariateFunction):
    """f(t) = c_0 t^n + ... + c_n, coefficients from the highest power down (OpenSim ``PolynomialFunction``)."""

    type_name = "Polynomial"

    def __init__(self, coefficients: Sequence[float]):
        self.coefficients = readonly(np.atleast_1d(coefficients))
        if self.coefficients.size == 0:
            raise FunctionError("Polynomial needs at least one coefficient")
        self._d1 = np.polyder(self.coefficients, 1) if self.coefficients.size > 1 else np.zeros(1)
        self._d2 = np.polyder(self.coefficients, 2) if self.coefficients.size > 2 else np.zeros(1)

    def node_parameters(self):
        c, d1, d2 = self.coefficients, self._d1, self._d2  # Horner on each, from the highest power down
        return (K.UNI_POLYNOMIAL, c.size, d1.size, d2.size), (*c, *d1, *d2)

    def parameters(self):
        return {"coefficients": self.coefficients.tolist()}

    def describe(self):
        return f"polynomial of degree {self.coefficients.size - 1}"


class Fourier(CompiledUnivariateFunction):
    """Fourier series with an optional secular (linear) term, for periodic or revolving joints:

        f(t) = a_0 + s t + sum_{k=1}^{K} [a_k cos(k w t) + b_k sin(k w t)],   w = 2 pi / period.

    The secular term ``s`` lets an angle that turns one full revolution per
    period of ``t`` (f(t + T) = f(t) + s T) be fitted exactly.
    """

    type_name = "Fourier"

    def __init__(self, period: float, a0: float, cos: Sequence[float], sin: Sequence[float], secular: float = 0.0):
        self.period = float(period)
        if not self.period > 0:
            raise FunctionError("Fourier period must be positive")
        self.a0 = float(a0)
        self.cos = readonly(cos)
        self.sin = readonly(sin)
        if self.cos.shape != self.sin.shape:
            raise FunctionError("Fourier needs as many sine as cosine coefficients")
        self.secular = float(secular)
        self._k = np.arange(1, self.cos.size + 1) * (2 * np.pi / self.period)

    @classmethod
    def fit(cls, t: np.ndarray, y: np.ndarray, n_harmonics: int, period: float | None = None,
            secular: bool = True) -> "Fourier":
        """Least-squares fit to samples (t, y); ``period`` defaults to the sample span."""
        t = np.asarray(t, dtype=float)
        y = np.asarray(y, dtype=float)
        if period is None:
            period = float(t.max() - t.min())
        w = 2 * np.pi / period * np.arange(1, n_harmonics + 1)
        cols = [np.ones_like(t)]
        if secular:
            cols.append(t)
        cols += [np.cos(np.outer(t, w))[:, i] for i in range(n_harmonics)]
        cols += [np.sin(np.outer(t, w))[:, i] for i in range(n_harmonics)]
        a = np.column_stack(cols)
        coef, *_ = np.linalg.lstsq(a, y, rcond=None)
        i = 1
        s = 0.0
        if secular:
            s = coef[1]
            i = 2
        return cls(period, coef[0], coef[i:i + n_harmonics], coef[i + n_harmonics:], s)

    def node_parameters(self):
        return (K.UNI_FOURIER, self.cos.size), (self.a0, self.secular, *self._k, *self.cos, *self.sin)

    def parameters(self):
        return {"period": self.period, "a0": self.a0, "cos": self.cos.tolist(),
                "sin": self.sin.tolist(), "secular": self.secular}

    def describe(self):
        return f"Fourier series, {self.cos.size} harmonics, period {self.period:g}"


class Multiplier(JointFunction):
    """scale * g(x) (OpenSim ``MultiplierFunction``; also a coupler's scale_factor)."""

    type_name = "Multiplier"

    def __init__(self, scale: float, function: JointFunction):
        self.scale = float(scale)
        self.function = function
        self.n_inputs = function.n_inputs

    def _evaluate(self, x, order, cache):
        return function_program(self).evaluate(x, order, cache)  # the compiled program (functions.program)

    @property
    def is_constant(self) -> bool:
        return self.function.is_constant

    def parameters(self):
        return {"scale": self.scale, "function": self.function.to_dict()}

    @classmethod
    def from_parameters(cls, params):
        from osim_emb.core.functions.base import function_from_dict
        return cls(params["scale"], function_from_dict(params["function"]))

    def describe(self):
        return f"{self.scale:g} * [{self.function.describe()}]"


class Composite(JointFunction):
    """f(x) = outer(g_1(x), ..., g_k(x)) with the chain rule for gradient and Hessian:

        grad f = sum_a (d outer/d g_a) grad g_a
        H f    = sum_ab (d2 outer/d g_a d g_b) grad g_a grad g_b^T + sum_a (d outer/d g_a) H g_a
    """

    type_name = "Composite"

    def __init__(self, outer: JointFunction, inners: Sequence[JointFunction]):
        inners = tuple(inners)
        if len(inners) != outer.n_inputs:
            raise FunctionError(
                f"Composite: outer function takes {outer.n_inputs} inputs, {len(inners)} inner functions given")
        if not inners:
            raise FunctionError("Composite needs at least one inner function")
        n = {g.n_inputs for g in inners}
        if len(n) != 1:
            raise FunctionError("Composite: inner functions must all take the same inputs")
        self.outer = outer
        self.inners = inners
        self.n_inputs = n.pop()

    def _evaluate(self, x, order, cache):
        return function_program(self).evaluate(x, order, cache)  # the compiled program (functions.program)

    @property
    def is_constant(self) -> bool:
        return self.outer.is_constant or all(g.is_constant for g in self.inners)

    def parameters(self):
        return {"outer": self.outer.to_dict(), "inners": [g.to_dict() for g in self.inners]}

    @classmethod
    def from_parameters(cls, params: dict[str, Any]):
        from osim_emb.core.functions.base import function_from_dict
        return cls(function_from_dict(params["outer"]), [function_from_dict(g) for g in params["inners"]])

    def describe(self):
        return f"{self.outer.describe()} o ({', '.join(g.describe() for g in self.inners)})"
