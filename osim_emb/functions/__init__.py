"""Joint-variable functions f(q) with exact gradients and Hessians, batched over configurations."""

from .base import FunctionError, Jet, JointFunction, UnivariateFunction, function_from_dict
from .basic import Composite, Constant, Fourier, Linear, Multiplier, Polynomial, coordinate
from .multivariate import Clamped, MultivariatePolynomial, SplineSurface, polynomial_exponents
from .splines import (GCVSpline, NaturalCubicSpline, PiecewiseConstant, PiecewiseLinear, SimmSpline,
                      validate_knots)

__all__ = [
    "FunctionError", "Jet", "JointFunction", "UnivariateFunction", "function_from_dict",
    "Composite", "Constant", "Fourier", "Linear", "Multiplier", "Polynomial", "coordinate",
    "SimmSpline", "NaturalCubicSpline", "GCVSpline", "PiecewiseLinear", "PiecewiseConstant",
    "validate_knots",
    "MultivariatePolynomial", "Clamped", "SplineSurface", "polynomial_exponents",
]
