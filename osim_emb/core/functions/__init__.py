"""Joint-variable functions f(q) with exact gradients and Hessians, batched over configurations."""

from osim_emb.core.functions.base import FunctionError, Jet, JointFunction, UnivariateFunction, function_from_dict
from osim_emb.core.functions.basic import Composite, Constant, Fourier, Linear, Multiplier, Polynomial, coordinate
from osim_emb.core.functions.multivariate import Clamped, MultivariatePolynomial, SplineSurface, polynomial_exponents
from osim_emb.core.functions.splines import (
    GCVSpline,
    NaturalCubicSpline,
    PiecewiseConstant,
    PiecewiseLinear,
    SimmSpline,
    validate_knots,
)

__all__ = [
    "FunctionError", "Jet", "JointFunction", "UnivariateFunction", "function_from_dict",
    "Composite", "Constant", "Fourier", "Linear", "Multiplier", "Polynomial", "coordinate",
    "SimmSpline", "NaturalCubicSpline", "GCVSpline", "PiecewiseLinear", "PiecewiseConstant",
    "validate_knots",
    "MultivariatePolynomial", "Clamped", "SplineSurface", "polynomial_exponents",
]
