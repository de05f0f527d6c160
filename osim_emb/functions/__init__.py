"""Joint-variable functions f(q) with exact gradients and Hessians, batched over configurations."""

from .base import FunctionError, Jet, JointFunction, UnivariateFunction, function_from_dict
from .basic import Composite, Constant, Fourier, Linear, Multiplier, Polynomial, coordinate

__all__ = [
    "FunctionError", "Jet", "JointFunction", "UnivariateFunction", "function_from_dict",
    "Composite", "Constant", "Fourier", "Linear", "Multiplier", "Polynomial", "coordinate",
]
