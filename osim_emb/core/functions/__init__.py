"""Joint-variable functions f(q) with exact gradients and Hessians, batched over configurations.

Where the numbers come from (issue 16: each formula once):

* A model's joint variables f_i(q), ∇f_i, H_i -- for the kinematics, the paths and the dynamics -- come from the
  compiled joint-variable program (:mod:`osim_emb.core.compiled`, ``compiled_kernels.eval_program``;
  :func:`osim_emb.core.kinematics.joint_variables`), into which every type below except SplineSurface and
  user-defined types is flattened; those are evaluated by their ``evaluate`` (external nodes).
* The one-input types -- SimmSpline, PiecewiseLinear, PiecewiseConstant, GCVSpline, NaturalCubicSpline,
  Polynomial, Fourier (:class:`~osim_emb.core.functions.base.CompiledUnivariateFunction`) -- and
  MultivariatePolynomial evaluate through the program's own kernels (:mod:`osim_emb.core.functions.kernels`:
  ``_univariate``, ``multivariate_polynomial``); only their construction (knot checks, spline coefficients,
  derivative coefficient tables, fits) is Python.
* ``evaluate`` stays numpy for these, the public API of function objects (rhythm fitting, function-based paths,
  XML and JSON round trips, users' own composition):

  - ``Constant``, ``Linear``: c and a·x + b on arrays;
  - ``Multiplier``, ``Composite``, ``Clamped``: scaling, the chain rule and clipping on arrays.  They compose any
    function, including ones the program cannot flatten (SplineSurface, user types), so they cannot be
    program-only; in the program the same rules are the OP_SCALE, OP_LINCOMB, OP_UNI (UNI_CLIP) nodes;
  - ``SplineSurface`` (scipy ``NdBSpline``) and user-defined types: their ``evaluate`` is their only
    implementation; the program calls it (an external node).
"""

from osim_emb.core.functions.base import (
    CompiledUnivariateFunction,
    FunctionError,
    Jet,
    JointFunction,
    UnivariateFunction,
    function_from_dict,
)
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
    "FunctionError", "Jet", "JointFunction", "UnivariateFunction", "CompiledUnivariateFunction", "function_from_dict",
    "Composite", "Constant", "Fourier", "Linear", "Multiplier", "Polynomial", "coordinate",
    "SimmSpline", "NaturalCubicSpline", "GCVSpline", "PiecewiseLinear", "PiecewiseConstant",
    "validate_knots",
    "MultivariatePolynomial", "Clamped", "SplineSurface", "polynomial_exponents",
]
