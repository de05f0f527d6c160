"""The dynamics functions of the public API (``osim_emb.mass_matrix`` ...): those of :mod:`osim_emb.core.dynamics`
with the states checked first, once per call on the whole batch, as the path functions check them.

q is taken as :func:`osim_emb.as_configuration` takes it (an array, or a DataFrame, Series or dict by coordinate
name) and refused when it is not finite or lies outside the coordinate ranges (the message says when the values
would be in range read as degrees); the speeds, accelerations and forces are taken the same way and refused when
not finite.  The package's own callers (integrators' trial states, finite differences) call
:mod:`osim_emb.core.dynamics` directly, unchecked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from osim_emb.core import dynamics as _core
from osim_emb.core.configuration import ConfigurationError, as_configuration, as_coordinate_values
from osim_emb.model import Model

__all__ = ["mass_matrix", "gravity_forces", "velocity_terms", "inverse_dynamics", "forward_dynamics"]

_CHECKS = """\
    allow_out_of_range : bool, default False
        Accept configurations outside the coordinate ranges (otherwise an error). q may also be a DataFrame,
        Series or dict by coordinate name (:func:`osim_emb.as_configuration`), as may the other state arrays.
"""

_RAISES = """\
    Raises
    ------
    ConfigurationError
        A value is not finite, a coordinate name is unknown or missing, or q is outside a coordinate's range
        (the message says when the values would be in range read as degrees).

"""


def _documented(core_function):
    """The docstring of ``core_function`` with the checks of the public function added."""
    def decorate(function):
        doc = core_function.__doc__
        doc = doc.replace("\n\n    Returns\n    -------\n", "\n" + _CHECKS + "\n    Returns\n    -------\n", 1)
        function.__doc__ = doc.replace("    Examples\n    --------\n", _RAISES + "    Examples\n    --------\n", 1)
        return function
    return decorate


def _q(model: Model, q: Any, allow_out_of_range: bool) -> np.ndarray:
    return as_configuration(model, q, allow_out_of_range=allow_out_of_range)


def _like(model: Model, q: np.ndarray, values: Any, what: str) -> np.ndarray:
    """Speeds, accelerations or forces taken as :func:`as_coordinate_values` takes them, one row per configuration
    of q (or one row for all)."""
    arr = as_coordinate_values(model, values, what)
    if arr.shape[0] not in (1, q.shape[0]):
        raise ConfigurationError(f"{what} has {arr.shape[0]} rows for {q.shape[0]} configurations of q: give one row "
                                 "per configuration, or one for all")
    return arr


@_documented(_core.mass_matrix)
def mass_matrix(model: Model, q: Any, *, allow_out_of_range: bool = False) -> np.ndarray:
    return _core.mass_matrix(model, _q(model, q, allow_out_of_range))


@_documented(_core.gravity_forces)
def gravity_forces(model: Model, q: Any, *, allow_out_of_range: bool = False) -> np.ndarray:
    return _core.gravity_forces(model, _q(model, q, allow_out_of_range))


@_documented(_core.velocity_terms)
def velocity_terms(model: Model, q: Any, qdot: Any, *, allow_out_of_range: bool = False) -> np.ndarray:
    q = _q(model, q, allow_out_of_range)
    return _core.velocity_terms(model, q, _like(model, q, qdot, "qdot"))


@_documented(_core.inverse_dynamics)
def inverse_dynamics(model: Model, q: Any, qdot: Any, qddot: Any, *, allow_out_of_range: bool = False) -> np.ndarray:
    q = _q(model, q, allow_out_of_range)
    return _core.inverse_dynamics(model, q, _like(model, q, qdot, "qdot"), _like(model, q, qddot, "qddot"))


@_documented(_core.forward_dynamics)
def forward_dynamics(model: Model, q: Any, qdot: Any, tau: Any = 0.0, *,
                     allow_out_of_range: bool = False) -> np.ndarray:
    q = _q(model, q, allow_out_of_range)
    if np.ndim(tau) == 0 and not isinstance(tau, dict):
        if not np.isfinite(tau):
            raise ConfigurationError(f"tau is {tau}: tau must be finite")
        tau_values = tau
    else:
        tau_values = _like(model, q, tau, "tau")
    return _core.forward_dynamics(model, q, _like(model, q, qdot, "qdot"), tau_values)
