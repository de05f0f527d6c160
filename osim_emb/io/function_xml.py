"""OpenSim function elements <-> :class:`~osim_emb.core.functions.JointFunction`.

OpenSim 3.3 wraps a function in a property element (``<function><SimmSpline>``);
4.x writes it directly with ``name="function"``.  An XML ``NaturalCubicSpline``
is evaluated by OpenSim as a SimmSpline, so it is read as one.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from lxml import etree

from osim_emb.core import functions as fn
from osim_emb.core.functions.base import FunctionError, JointFunction
from osim_emb.io.errors import OsimImportError, UnsupportedFeatureError

__all__ = ["FUNCTION_TAGS", "is_function_element", "parse_function", "find_function", "function_to_xml"]

FUNCTION_TAGS = (
    "Constant", "LinearFunction", "PolynomialFunction", "SimmSpline", "NaturalCubicSpline", "GCVSpline",
    "PiecewiseLinearFunction", "PiecewiseConstantFunction", "MultiplierFunction",
    "MultivariatePolynomialFunction", "StepFunction", "Sine", "ExpressionBasedFunction",
)
SUPPORTED_TAGS = FUNCTION_TAGS[:10]


def is_function_element(e: Any) -> bool:
    return isinstance(e.tag, str) and e.tag in FUNCTION_TAGS


def _floats(e: Any, tag: str, fail: Callable[[Any, str], Exception]) -> np.ndarray:
    c = e.find(tag)
    if c is None or c.text is None or not c.text.strip():
        raise fail(e, f"missing <{tag}>")
    try:
        v = np.array([float(t) for t in c.text.split()])
    except ValueError as err:
        raise fail(c, f"not a list of numbers: {err}") from None
    if not np.all(np.isfinite(v)):
        raise fail(c, f"<{tag}> has a non-finite value ({', '.join(str(x) for x in v[~np.isfinite(v)][:3])})")
    return v


def _number(e: Any, tag: str, default: float, fail: Callable[[Any, str], Exception], integer: bool = False) -> Any:
    c = e.find(tag)
    if c is None or c.text is None or not c.text.strip():
        return default
    try:
        v = int(c.text.strip()) if integer else float(c.text.strip())
    except ValueError:
        raise fail(c, f"<{tag}> is not {'an integer' if integer else 'a number'}: {c.text.strip()!r}") from None
    if not np.isfinite(v):
        raise fail(c, f"<{tag}> is not finite: {c.text.strip()!r}")
    return v


def find_function(container: Any) -> Any:
    """The function element inside a property: ``<prop><Fn>`` or ``<prop><function><Fn>`` or ``<Fn name='function'>``.

    An element of an unknown type in a function's place (inside ``<function>``, or named ``function``) is returned
    too, so that :func:`parse_function` refuses it by name instead of the property taking its default."""
    for c in container:
        if not isinstance(c.tag, str):
            continue
        if is_function_element(c):
            return c
        if c.tag == "function":
            for cc in c:
                if isinstance(cc.tag, str):
                    return cc
        elif c.get("name") == "function":
            return c
    return None


def parse_function(e: Any, fail: Callable[[Any, str], Exception], n_inputs: int = 1) -> JointFunction:
    """Build a JointFunction from an OpenSim function element; ``fail(element, reason)`` makes the error."""
    tag = e.tag
    try:
        if tag == "Constant":
            return fn.Constant(_number(e, "value", 0.0, fail), n_inputs)
        if tag == "LinearFunction":
            c = _floats(e, "coefficients", fail)
            if c.size < 2:
                raise fail(e, "LinearFunction needs slope(s) and an intercept")
            return fn.Linear(c[:-1], c[-1])
        if tag == "PolynomialFunction":
            return fn.Polynomial(_floats(e, "coefficients", fail))
        if tag in ("SimmSpline", "NaturalCubicSpline"):
            return fn.SimmSpline(_floats(e, "x", fail), _floats(e, "y", fail))
        if tag == "GCVSpline":
            return fn.GCVSpline(_floats(e, "x", fail), _floats(e, "y", fail),
                                half_order=_number(e, "half_order", 3, fail, integer=True),
                                error_variance=_number(e, "error_variance", 0.0, fail))
        if tag == "PiecewiseLinearFunction":
            return fn.PiecewiseLinear(_floats(e, "x", fail), _floats(e, "y", fail))
        if tag == "PiecewiseConstantFunction":
            return fn.PiecewiseConstant(_floats(e, "x", fail), _floats(e, "y", fail))
        if tag == "MultiplierFunction":
            inner = find_function(e)
            if inner is None:
                raise fail(e, "MultiplierFunction without an inner function")
            return fn.Multiplier(_number(e, "scale", 1.0, fail), parse_function(inner, fail, n_inputs))
        if tag == "MultivariatePolynomialFunction":
            d = e.find("dimension")
            o = e.find("order")
            if d is None or o is None:
                raise fail(e, "MultivariatePolynomialFunction needs <dimension> and <order>")
            return fn.MultivariatePolynomial(_number(e, "dimension", 0, fail, integer=True),
                                             _number(e, "order", 0, fail, integer=True),
                                             _floats(e, "coefficients", fail))
    except FunctionError as err:
        raise fail(e, str(err)) from None
    err = fail(e, f"unsupported function type {tag}; supported: {', '.join(SUPPORTED_TAGS)}")
    if type(err) is OsimImportError:  # the documented error type for something the package cannot represent
        err = UnsupportedFeatureError(err.path, e, err.reason, err.line)
    raise err


def _text(parent: Any, tag: str, value: Any) -> Any:
    c = etree.SubElement(parent, tag)
    if isinstance(value, (list, tuple, np.ndarray)):
        c.text = " ".join(repr(float(v)) for v in np.ravel(value))
    else:
        c.text = repr(float(value)) if isinstance(value, (float, np.floating)) else str(value)
    return c


def function_to_xml(f: JointFunction, name: str | None = "function") -> Any:
    """An OpenSim 4 XML element for ``f`` (the inverse of :func:`parse_function`)."""
    t = f.type_name
    if t == "Constant":
        e = etree.Element("Constant")
        _text(e, "value", f.value)
    elif t == "Linear":
        e = etree.Element("LinearFunction")
        _text(e, "coefficients", list(f.coefficients) + [f.intercept])
    elif t == "Polynomial":
        e = etree.Element("PolynomialFunction")
        _text(e, "coefficients", f.coefficients)
    elif t == "SimmSpline":
        e = etree.Element("SimmSpline")
        _text(e, "x", f.x)
        _text(e, "y", f.y)
    elif t == "GCVSpline":
        e = etree.Element("GCVSpline")
        _text(e, "half_order", int(f.half_order))
        _text(e, "error_variance", f.error_variance)
        _text(e, "x", f.x)
        _text(e, "y", f.y)
    elif t == "PiecewiseLinear":
        e = etree.Element("PiecewiseLinearFunction")
        _text(e, "x", f.x)
        _text(e, "y", f.y)
    elif t == "PiecewiseConstant":
        e = etree.Element("PiecewiseConstantFunction")
        _text(e, "x", f.x)
        _text(e, "y", f.y)
    elif t == "Multiplier":
        e = etree.Element("MultiplierFunction")
        inner = etree.SubElement(e, "function")
        inner.append(function_to_xml(f.function, None))
        _text(e, "scale", f.scale)
    elif t == "MultivariatePolynomial":
        e = etree.Element("MultivariatePolynomialFunction")
        _text(e, "dimension", int(f.dimension))
        _text(e, "order", int(f.order))
        _text(e, "coefficients", f.coefficients)
    else:
        raise ValueError(f"a {t} function has no OpenSim equivalent")
    if name:
        e.set("name", name)
    return e
