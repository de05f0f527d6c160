"""Smooth joint-variable functions f(x) with value, gradient and Hessian, batched.

Every function maps a batch of inputs ``x`` of shape (N, n_inputs) to a
:class:`Jet`: value (N,), gradient (N, n_inputs), Hessian (N, n_inputs, n_inputs).
These are the f_i, grad f_i and H_i that the seed's kinematics (Eqs 75, 99)
and dynamics consume.

Functions are immutable: parameters are stored as read-only arrays, and two
functions are equal when their type and parameters are equal.  Each type
registers itself by name so that :func:`function_from_dict` can rebuild it
from :meth:`JointFunction.to_dict` (used by the model's JSON format).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, NamedTuple

import numpy as np

from osim_emb.core.functions import kernels as K

__all__ = [
    "Jet",
    "JointFunction",
    "UnivariateFunction",
    "CompiledUnivariateFunction",
    "FunctionError",
    "function_from_dict",
    "as_batch",
    "readonly",
]


class FunctionError(ValueError):
    """A function's parameters are invalid (non-monotonic knots, wrong sizes, ...)."""


class Jet(NamedTuple):
    """Value, gradient and Hessian of a scalar function at a batch of points."""

    value: np.ndarray  # (N,)
    gradient: np.ndarray | None  # (N, n)
    hessian: np.ndarray | None  # (N, n, n)


_REGISTRY: dict[str, type["JointFunction"]] = {}


def readonly(a: Any, dtype=float) -> np.ndarray:
    """A read-only float copy of ``a`` (parameters of immutable functions)."""
    arr = np.array(a, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


def as_batch(x: Any, n_inputs: int) -> np.ndarray:
    """Coerce ``x`` to shape (N, n_inputs).

    Accepts a scalar or (N,) array for one-input functions, an (n_inputs,)
    vector for a single point, or an (N, n_inputs) batch.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        x = x.reshape(1, 1)
    elif x.ndim == 1:
        x = x.reshape(-1, 1) if n_inputs == 1 else x.reshape(1, -1)
    if x.ndim != 2 or x.shape[1] != n_inputs:
        raise ValueError(f"expected inputs of shape (N, {n_inputs}), got {x.shape}")
    return x


class JointFunction(ABC):
    """A smooth scalar function of ``n_inputs`` variables."""

    type_name: ClassVar[str] = ""
    n_inputs: int

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("type_name"):  # subclasses that do not name a new type do not replace it
            _REGISTRY[cls.type_name] = cls

    # -- evaluation -------------------------------------------------------
    def evaluate(self, x: Any, order: int = 2, cache: dict | None = None) -> Jet:
        """Value (order 0), gradient (order >= 1) and Hessian (order 2) at ``x``.

        ``cache`` is an optional dict shared by one evaluation of many
        functions at the *same* ``x``; composite functions use it so that a
        shared inner function is evaluated once.
        """
        xb = as_batch(x, self.n_inputs)
        if cache is not None:
            key = (id(self), order)
            hit = cache.get(key)
            if hit is not None:
                return hit
            jet = self._evaluate(xb, order, cache)
            cache[key] = jet
            return jet
        return self._evaluate(xb, order, None)

    def __call__(self, x: Any) -> np.ndarray:
        return self.evaluate(x, order=0).value

    @abstractmethod
    def _evaluate(self, x: np.ndarray, order: int, cache: dict | None) -> Jet:
        """Evaluate at a batch ``x`` of shape (N, n_inputs)."""

    # -- description and serialisation -------------------------------------
    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """Parameters as JSON-compatible values (lists, floats, nested dicts)."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, **self.parameters()}

    @classmethod
    def from_parameters(cls, params: dict[str, Any]) -> "JointFunction":
        return cls(**params)

    def describe(self) -> str:
        """A short human-readable description (used by ``osim-emb inspect``)."""
        return self.type_name

    @property
    def is_constant(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JointFunction):
            return NotImplemented
        return type(self) is type(other) and _params_equal(self.to_dict(), other.to_dict())

    def __hash__(self) -> int:
        return hash((self.type_name, repr(self.to_dict())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


def _params_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_params_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_params_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        try:
            return float(a) == float(b)
        except (TypeError, ValueError):
            return False
    return a == b


def function_from_dict(d: dict[str, Any]) -> JointFunction:
    """Rebuild a function from :meth:`JointFunction.to_dict`."""
    d = dict(d)
    name = d.pop("type", None)
    cls = _REGISTRY.get(name)
    if cls is None:
        raise FunctionError(f"unknown function type {name!r}; known: {sorted(_REGISTRY)}")
    return cls.from_parameters(d)


class UnivariateFunction(JointFunction):
    """A function of one input; subclasses implement :meth:`_derivatives`."""

    n_inputs = 1

    @abstractmethod
    def _derivatives(self, t: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """f(t), f'(t), f''(t) for t of shape (N,); derivatives above ``order`` may be None."""

    def _evaluate(self, x: np.ndarray, order: int, cache: dict | None) -> Jet:
        f, d1, d2 = self._derivatives(x[:, 0], order)
        grad = d1[:, None] if order >= 1 else None
        hess = d2[:, None, None] if order >= 2 else None
        return Jet(f, grad, hess)

    def derivative(self, t: Any, k: int = 1) -> np.ndarray:
        """The k-th derivative (k = 0, 1, 2) at t, the same shape as ``t``."""
        t = np.asarray(t, dtype=float)
        out = self._derivatives(t.reshape(-1), k)[k]
        return out.reshape(t.shape)


class CompiledUnivariateFunction(UnivariateFunction):
    """A one-input function evaluated by the compiled kernel of the joint-variable program
    (:func:`osim_emb.core.functions.kernels._univariate`, through ``univariate_batch``): its formulas exist once,
    for this ``evaluate`` and for the program's OP_UNI nodes.  Subclasses give :meth:`node_parameters`."""

    @abstractmethod
    def node_parameters(self) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """(int parameters, float parameters) of the program node (``ints[ip:]``, ``flts[fp:]`` of ``_univariate``)."""

    def _derivatives(self, t, order):
        packed = self.__dict__.get("_packed")
        if packed is None:
            ints, flts = self.node_parameters()
            packed = (np.array(ints, dtype=np.int64), np.array(flts, dtype=np.float64))
            self._packed = packed
        t = np.ascontiguousarray(t, dtype=float)
        out = K.univariate_batch(packed[0], packed[1], t.reshape(-1), order).reshape((3,) + t.shape)
        return out[0], (out[1] if order >= 1 else None), (out[2] if order >= 2 else None)
