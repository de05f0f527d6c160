"""Configurations q given by users: matched by coordinate name, checked against ranges, never degrees silently.

:func:`as_configuration` turns what a user passes -- an (N, n_q) or (n_q,) array in the model's
coordinate order, a pandas DataFrame (one column per coordinate), a Series or a dict (by name) --
into the (N, n_q) array of radians and metres the free functions take, and refuses, with a message
naming the coordinates:

* missing or unknown coordinate names (DataFrame, Series, dict);
* NaN or infinite values;
* values outside a coordinate's range by more than round-off (``RANGE_TOLERANCE``), unless
  ``allow_out_of_range=True``; where the values would be in range read as degrees, the message says so;
* rotational values beyond one turn (|q| > 2 pi) on coordinates without a finite range -- evidently
  degrees -- unless ``allow_out_of_range=True``.

:func:`degrees_to_q` converts a configuration given in degrees (rotational coordinates; translational
ones stay in metres).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from osim_emb.model import Model

__all__ = ["RANGE_TOLERANCE", "ConfigurationError", "as_configuration", "as_coordinate_values", "degrees_to_q",
           "initial_configuration", "initial_rates", "outside_range_text", "rotational_coordinates"]

#: Round-off allowed outside a coordinate's range (radians or metres): ranges are often written with
#: 6 significant digits (pi/2 as 1.5708, 3.7e-6 above it; 180 deg as 3.14159, 2.7e-6 below it), and
#: defaults a little outside them (MoBL's elbow_flexion: -2e-8).  OpenSim's ConditionalPathPoint
#: uses the same tolerance.
RANGE_TOLERANCE = 1e-5

#: How far (rad) outside its range an angle must be before the message suggests it is in degrees: a radian value
#: just past a range end (0.3496 against MoBL's 0.3491) is not.
DEGREES_HINT_EXCESS = 0.2


class ConfigurationError(ValueError):
    """A configuration that does not fit the model (names, shape, NaN, range, degrees)."""


def outside_range_text(name: str, value: float, lo: float, hi: float, rotational: bool) -> str:
    """'NAME = 500° (8.727 rad) is outside its range [0°, 130°]' for an angle in radians, in metres otherwise."""
    if rotational:
        return (f"{name} = {np.degrees(value):.6g}° ({value:.4g} rad) is outside its range "
                f"[{np.degrees(lo):.5g}°, {np.degrees(hi):.5g}°]")
    return f"{name} = {value:.6g} m is outside its range [{lo:.6g} m, {hi:.6g} m]"


def _is_rotational(model: Model) -> np.ndarray:
    return np.array([c.motion_type != "translational" for c in model.coordinates], dtype=bool)


def _accepted_bounds(model: Model, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of the values :func:`as_configuration` accepts: the ranges widened by ``tolerance``, within one turn
    for an angle whose range is not finite, any finite value for a translation's infinite bound; cached on the
    (immutable) model."""
    cache = model.__dict__.setdefault("_accepted_bounds", {})
    if tolerance not in cache:
        lo, hi = model.coordinate_ranges.T
        unbounded_angle = _is_rotational(model) & ~(np.isfinite(lo) & np.isfinite(hi))
        big = np.finfo(float).max
        lo = np.where(np.isfinite(lo), lo - tolerance, -big)
        hi = np.where(np.isfinite(hi), hi + tolerance, big)
        cache[tolerance] = (np.where(unbounded_angle, np.maximum(lo, -2 * np.pi), lo),
                            np.where(unbounded_angle, np.minimum(hi, 2 * np.pi), hi))
    return cache[tolerance]


def _by_name(model: Model, names: list[str], what: str) -> list[int]:
    known = model.coordinate_names
    missing = [n for n in known if n not in names]
    unknown = [n for n in names if n not in known]
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing coordinates {missing}")
        if unknown:
            dep = {d.name for d in model.dependent_coordinates}
            extra = [f"{n} (dependent: {'locked' if model.dependent_coordinate(n).kind == 'locked' else 'coupled'})"
                     if n in dep else n for n in unknown]
            parts.append(f"unknown coordinates {extra}")
        raise ConfigurationError(f"{what} {'does' if what.endswith('index') else 'do'} not match model "
                                 f"{model.name!r}: " + "; ".join(parts)
                                 + f" (the model's generalized coordinates: {known})")
    return [names.index(n) for n in known]


def _to_array(model: Model, q: Any, what: str = "q") -> np.ndarray:
    if isinstance(q, np.ndarray):  # the common case first: no pandas look-up
        return _as_rows(model, q, what)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a core dependency
        pd = None
    if pd is not None and isinstance(q, pd.DataFrame):
        cols = [str(c) for c in q.columns]
        order = _by_name(model, cols, "the DataFrame's columns")
        return q.iloc[:, order].to_numpy(dtype=float)
    if pd is not None and isinstance(q, pd.Series):
        names = [str(c) for c in q.index]
        order = _by_name(model, names, "the Series' index")
        return q.to_numpy(dtype=float)[order].reshape(1, -1)
    if isinstance(q, dict):
        names = [str(k) for k in q]
        _by_name(model, names, "the dict's keys")
        cols = [np.atleast_1d(np.asarray(q[n], dtype=float)) for n in model.coordinate_names]
        try:
            return np.stack(np.broadcast_arrays(*cols), axis=1) if cols else np.zeros((1, 0))
        except ValueError:
            raise ConfigurationError("the dict's values have different lengths") from None
    return _as_rows(model, q, what)


def _as_rows(model: Model, q: Any, what: str) -> np.ndarray:
    arr = np.asarray(q, dtype=float)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != model.n_q:
        raise ConfigurationError(f"{what} must have shape (N, {model.n_q}) or ({model.n_q},) for model {model.name!r} "
                                 f"(coordinates {model.coordinate_names}), got {np.shape(q)}")
    return arr


def as_configuration(model: Model, q: Any, *, allow_out_of_range: bool = False,
                     tolerance: float = RANGE_TOLERANCE) -> np.ndarray:
    """q as an (N, n_q) float array in the model's coordinate order, checked.

    Parameters
    ----------
    model : Model
    q : array_like, pandas.DataFrame, pandas.Series or dict
        Coordinate values in radians (rotational) and metres (translational): an (N, n_q) or (n_q,)
        array in the model's order, or a table / mapping matched by coordinate name.
    allow_out_of_range : bool, default False
        Accept values outside the coordinate ranges (otherwise an error, which says when the values
        look like degrees).
    tolerance : float
        Round-off allowed at the range ends (radians or metres).

    Returns
    -------
    numpy.ndarray
        (N, n_q) float array.

    Raises
    ------
    ConfigurationError
        A value is not finite, a name is unknown or missing, or a value is outside its range.

    Examples
    --------
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> oe.as_configuration(model, {"elv_angle": 0.1, "shoulder_elv": 0.5, "shoulder_rot": 0.0})
    array([[0.1, 0.5, 0. ]])
    >>> oe.as_configuration(model, [0, 30, 0])  # degrees by mistake
    Traceback (most recent call last):
    ...
    osim_emb.core.configuration.ConfigurationError: coordinate 'shoulder_elv' = 30 is outside its range [0, 3.14159] ...
    """
    arr = _to_array(model, q)
    if arr.size == 0:
        return arr
    if allow_out_of_range:
        if np.isfinite(arr).all():
            return arr
    else:
        lo, hi = _accepted_bounds(model, tolerance)
        if ((arr >= lo) & (arr <= hi)).all():  # the common case in one pass; the checks below say what is wrong
            return arr
    bad = ~np.isfinite(arr)
    if np.any(bad):
        n, k = np.argwhere(bad)[0]
        raise ConfigurationError(f"coordinate {model.coordinates[k].name!r} is {arr[n, k]} (configuration {n}): "
                                 "configurations must be finite")
    if allow_out_of_range or arr.size == 0:
        return arr
    rot = _is_rotational(model)
    lo, hi = model.coordinate_ranges.T
    out = (arr < lo - tolerance) | (arr > hi + tolerance)
    turns = rot & ~(np.isfinite(lo) & np.isfinite(hi)) & (np.abs(arr) > 2 * np.pi)
    if np.any(out):
        n, k = np.argwhere(out)[0]
        c = model.coordinates[k]
        msg = (f"coordinate {c.name!r} = {arr[n, k]:.6g} is outside its range [{c.range[0]:.6g}, {c.range[1]:.6g}] "
               f"(configuration {n})")
        rad = np.where(rot, np.deg2rad(arr), arr)
        excess = np.maximum(lo - arr, arr - hi)  # how far outside: a radian value just past an end is not degrees
        if (np.any(out[:, rot] & (excess[:, rot] > DEGREES_HINT_EXCESS))
                and not np.any((rad < lo - tolerance) | (rad > hi + tolerance))):
            msg += ("; the values are in range read as degrees: convert them with osim_emb.degrees_to_q(model, q)"
                    " (rotational coordinates are in radians)")
        raise ConfigurationError(msg + "; pass allow_out_of_range=True to evaluate outside the ranges")
    if np.any(turns):
        n, k = np.argwhere(turns)[0]
        raise ConfigurationError(
            f"coordinate {model.coordinates[k].name!r} = {arr[n, k]:.6g} rad is more than one turn (configuration {n}):"
            " evidently degrees; convert with osim_emb.degrees_to_q(model, q), or pass allow_out_of_range=True")
    return arr


def as_coordinate_values(model: Model, values: Any, what: str) -> np.ndarray:
    """Values per coordinate other than q (speeds, accelerations, forces) as an (N, n_q) array, taken as
    :func:`as_configuration` takes q (an array, or matched by name); non-finite values refused, naming ``what``."""
    arr = _to_array(model, values, what)
    if not np.isfinite(arr).all():
        bad = ~np.isfinite(arr)
        n, k = np.argwhere(bad)[0]
        raise ConfigurationError(f"{what}: coordinate {model.coordinates[k].name!r} is {arr[n, k]} (state {n}): "
                                 f"{what} must be finite")
    return arr


def _with_defaults(model: Model, values: Any, default: np.ndarray) -> Any:
    """A mapping by coordinate name completed with ``default`` for the coordinates it leaves out (a start state
    given in part, as the commands' --q0 takes it); its unknown names kept, to be refused; anything else as it is."""
    from collections.abc import Mapping
    if not isinstance(values, Mapping):
        return values
    return {**{n: default[k] for k, n in enumerate(model.coordinate_names)}, **values}


def initial_configuration(model: Model, q0: Any = None, *, allow_out_of_range: bool = False) -> np.ndarray:
    """A simulation's start, (n_q,): ``q0`` checked as :func:`as_configuration` checks q (errors name q0), or, when
    it is None, the model's default values, refused in the same way when one lies outside its range.  A dict q0
    may name some coordinates only: the others start at their default values."""
    q0 = _with_defaults(model, q0, model.default_q)
    if q0 is not None:
        try:
            arr = as_configuration(model, q0, allow_out_of_range=allow_out_of_range)
        except ConfigurationError as err:
            text = str(err).replace("q must have shape", "q0 must have shape", 1)
            raise ConfigurationError(text if text.startswith("q0") else f"q0: {text}") from None
        if arr.shape[0] != 1:
            raise ConfigurationError(f"q0 must be one state of {model.n_q} values, got {np.shape(q0)}")
        return arr[0]
    default = model.default_q
    lo, hi = _accepted_bounds(model, RANGE_TOLERANCE)
    outside = [outside_range_text(c.name, default[k], *c.range, c.motion_type != "translational")
               for k, c in enumerate(model.coordinates) if not lo[k] <= default[k] <= hi[k]]
    if outside and not allow_out_of_range:
        raise ConfigurationError(f"q0 not given, and the default values of model {model.name!r} lie outside "
                                 f"their coordinates' ranges: {'; '.join(outside)}; give q0, or pass "
                                 "allow_out_of_range=True to start there")
    return default


def initial_rates(model: Model, qdot0: Any = None) -> np.ndarray:
    """A simulation's start rates q̇0, (n_q,): ``qdot0`` checked as :func:`as_coordinate_values` checks values, or the
    model's default ones (OpenSim's default state); a dict may name some coordinates only (the others: defaults)."""
    qdot0 = _with_defaults(model, qdot0, model.default_qdot)
    if qdot0 is None:
        return model.default_qdot
    arr = as_coordinate_values(model, qdot0, "qdot0")
    if arr.shape[0] != 1:
        raise ConfigurationError(f"qdot0 must be one state of {model.n_q} values, got {np.shape(qdot0)}")
    return arr[0]


def degrees_to_q(model: Model, q_degrees: Any) -> np.ndarray:
    """A configuration with rotational coordinates in degrees (translational in metres) -> q in radians.

    Parameters
    ----------
    model : Model
    q_degrees : array_like, pandas.DataFrame, pandas.Series or dict
        What :func:`as_configuration` takes, with rotational coordinates in degrees and translational
        ones in metres.

    Returns
    -------
    numpy.ndarray
        (N, n_q) q in radians and metres, not checked against the ranges (the functions that take it
        check it).

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [0.0, 30.0, 0.0])
    >>> np.allclose(q, [[0.0, np.pi / 6, 0.0]])
    True
    """
    arr = as_configuration(model, q_degrees, allow_out_of_range=True)
    rot = _is_rotational(model)
    return np.where(rot, np.deg2rad(arr), arr)


def rotational_coordinates(model) -> list[bool]:
    """Whether each generalized coordinate is an angle: rotational, or coupled and turning a joint's rotation axis
    (moving via points, which are translations of massless bodies, do not count)."""
    import numpy as np
    from osim_emb.model import REVOLUTE
    from osim_emb.core.kinematics import joint_variables
    q = np.asarray(model.default_q, dtype=float)[None]
    grad = None
    out = []
    for k, c in enumerate(model.coordinates):
        if c.motion_type != "coupled":
            out.append(c.motion_type == "rotational")
            continue
        if grad is None:
            grad = joint_variables(model, q, 1).gradient[0, 1:]  # (n_joints, n_q)
        kinds = set()
        for i, j in enumerate(model.joints):
            if str(j.source).startswith("MovingPathPoint"):
                continue
            if abs(grad[i, k]) > 0:
                kinds.add(j.kind)
        out.append(REVOLUTE in kinds or not kinds)
    return out
