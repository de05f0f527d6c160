"""Joint-variable functions f(q) with exact gradients and Hessians, batched over configurations.

Where the numbers come from (issue 16: each formula once):

* A model's joint variables f_i(q), ∇f_i, H_i -- for the kinematics, the paths and the dynamics -- come from the
  compiled joint-variable program (:mod:`osim_emb.core.compiled`, ``compiled_kernels.eval_program``;
  :func:`osim_emb.core.kinematics.joint_variables`), into which every type below except SplineSurface and
  user-defined types is flattened by :class:`~osim_emb.core.functions.program.ProgramBuilder`; those two are
  evaluated by their ``evaluate`` (external nodes).
* ``Constant``, ``Linear``, ``Multiplier``, ``Composite`` and ``Clamped`` evaluate through that program too: a
  small :class:`~osim_emb.core.functions.program.FunctionProgram` of the function, built once and cached on the
  object, so scaling, the chain rule and clipping exist once (the OP_SCALE, OP_LINCOMB, OP_UNI/UNI_CLIP nodes and
  the kernel's chain rule).  A function they compose that the program cannot flatten (SplineSurface, a user type)
  enters as an external node of its input nodes: its own ``evaluate`` gives its jet in its inputs, the kernel
  applies the chain rule.
* The one-input types -- SimmSpline, PiecewiseLinear, PiecewiseConstant, GCVSpline, NaturalCubicSpline,
  Polynomial, Fourier (:class:`~osim_emb.core.functions.base.CompiledUnivariateFunction`) -- and
  MultivariatePolynomial evaluate through the program's own kernels (:mod:`osim_emb.core.functions.kernels`:
  ``_univariate``, ``multivariate_polynomial``); only their construction (knot checks, spline coefficients,
  derivative coefficient tables, fits) is Python.
* What stays numpy: ``SplineSurface`` (scipy ``NdBSpline``) and user-defined types, whose ``evaluate`` is their
  only implementation (the program calls it as an external node).
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
