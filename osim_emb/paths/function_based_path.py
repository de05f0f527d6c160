"""Function-based musculotendon paths (OpenSim 4.6 ``FunctionBasedPath``): L = l(c), R = -dl/dc.

A function-based path gives the length as a function l(c) of a list of the
model's coordinates c = (c_1, ..., c_d) (``coordinate_paths`` in OpenSim).
OpenSim evaluates (FunctionBasedPath.cpp):

    L = l(c),    r_i = -dl/dc_i  (or r_i = m_i(c) when moment-arm functions are given),
    dL/dt = sum_i -r_i dc_i/dt   (or s(c, dc/dt) when a lengthening-speed function is given).

In the package every coordinate is a function of the generalized coordinates q
(itself, a coupler's function, a locked value), so the unit's generalized force
per newton of tension on q is the chain rule

    R[:, k] = sum_i r_i dc_i/dq_k,

which is OpenSim's ``computeMomentArm`` for every coordinate the path names when
these are generalized coordinates (the usual case, and what ``fit-paths``
writes).  For a named coordinate that is coupled, OpenSim reports -dl/dc_i on
that coordinate and 0 on the independent one, while R here carries the
moment arm to the independent coordinate (docs/paths.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from osim_emb.core.functions.base import JointFunction
from osim_emb.paths.musculotendon import Musculotendon

__all__ = ["FunctionBasedPath", "FunctionBasedMusculotendon", "coordinate_values",
           "function_path_lengths_and_moment_arms", "function_path_speeds", "split_units",
           "with_function_based_paths"]


@dataclass(frozen=True, eq=False)
class FunctionBasedPath:
    """``coordinates`` (OpenSim coordinate names, the functions' argument order), l(c) and the optional functions."""

    coordinates: tuple[str, ...]
    length_function: JointFunction
    moment_arm_functions: tuple[JointFunction, ...] = ()
    speed_function: JointFunction | None = None

    def __post_init__(self):
        object.__setattr__(self, "coordinates", tuple(self.coordinates))
        object.__setattr__(self, "moment_arm_functions", tuple(self.moment_arm_functions))
        d = len(self.coordinates)
        if d == 0:
            raise ValueError("a function-based path needs at least one coordinate")
        if len(set(self.coordinates)) != d:
            raise ValueError(f"a function-based path names a coordinate twice: {list(self.coordinates)}")
        if self.length_function.n_inputs != d:
            raise ValueError(f"the length function takes {self.length_function.n_inputs} inputs, "
                             f"the path names {d} coordinates")
        if self.moment_arm_functions and len(self.moment_arm_functions) != d:
            raise ValueError(f"{len(self.moment_arm_functions)} moment-arm functions for {d} coordinates")
        for i, f in enumerate(self.moment_arm_functions):
            if f.n_inputs != d:
                raise ValueError(f"moment-arm function {i} takes {f.n_inputs} inputs, expected {d}")
        if self.speed_function is not None and self.speed_function.n_inputs != 2 * d:
            raise ValueError(f"the lengthening-speed function takes {self.speed_function.n_inputs} inputs, "
                             f"expected {2 * d} (coordinate values, then speeds)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FunctionBasedPath):
            return NotImplemented
        return (self.coordinates == other.coordinates and self.length_function == other.length_function
                and self.moment_arm_functions == other.moment_arm_functions
                and self.speed_function == other.speed_function)

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class FunctionBasedMusculotendon(Musculotendon):
    """A musculotendon unit whose path is a :class:`FunctionBasedPath` (no path points)."""

    function_path: FunctionBasedPath | None = None

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.function_path, FunctionBasedPath):
            raise ValueError(f"unit {self.name!r}: function_path must be a FunctionBasedPath")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FunctionBasedMusculotendon):
            return NotImplemented
        return Musculotendon.__eq__(self, other) and self.function_path == other.function_path

    __hash__ = object.__hash__


def coordinate_values(model, q: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Values c (N, d) of the named coordinates and their Jacobian dc/dq (N, d, n_q) at a batch of q."""
    q = np.asarray(q, dtype=float)
    n, nq = q.shape
    values = np.empty((n, len(names)))
    jac = np.zeros((n, len(names), nq))
    generalized = {c: k for k, c in enumerate(model.coordinate_names)}
    for i, name in enumerate(names):
        if name in generalized:
            k = generalized[name]
            values[:, i] = q[:, k]
            jac[:, i, k] = 1.0
            continue
        try:
            dep = model.dependent_coordinate(name)
        except KeyError:
            raise KeyError(f"model {model.name!r} has no coordinate named {name!r}") from None
        jet = dep.function.evaluate(q, order=1)
        values[:, i] = jet.value
        jac[:, i] = jet.gradient
    return values, jac


def _coordinate_moment_arms(path: FunctionBasedPath, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L (N,) and OpenSim's r_i (N, d) in the path's coordinates."""
    jet = path.length_function.evaluate(c, order=0 if path.moment_arm_functions else 1)
    if path.moment_arm_functions:
        r = np.stack([f.evaluate(c, order=0).value for f in path.moment_arm_functions], axis=1)
    else:
        r = -jet.gradient
    return jet.value, r


def function_path_lengths_and_moment_arms(model, unit: FunctionBasedMusculotendon,
                                          q: Any) -> tuple[np.ndarray, np.ndarray]:
    """L (N,) and R (N, n_q) of one function-based unit: l(c(q)) and the chain rule sum_i r_i dc_i/dq."""
    q = model.check_configuration(q, tolerance=np.inf)
    c, dc = coordinate_values(model, q, unit.function_path.coordinates)
    length, r = _coordinate_moment_arms(unit.function_path, c)
    return length, np.einsum("ni,nik->nk", r, dc)


def function_path_speeds(model, unit: FunctionBasedMusculotendon, q: np.ndarray, qdot: np.ndarray) -> np.ndarray | None:
    """dL/dt (N,) of a function-based unit from its lengthening-speed function s(c, dc/dt), or None when it has
    none (then dL/dt = -R^T qdot)."""
    path = getattr(unit, "function_path", None)
    if path is None or path.speed_function is None:
        return None
    c, dc = coordinate_values(model, q, path.coordinates)
    cdot = np.einsum("nik,nk->ni", dc, qdot)
    return path.speed_function.evaluate(np.hstack([c, cdot]), order=0).value


def split_units(units: Sequence[Musculotendon]) -> tuple[list[int], list[int]]:
    """Indices of the function-based units and of the others."""
    fb = [k for k, u in enumerate(units) if isinstance(u, FunctionBasedMusculotendon)]
    fbs = set(fb)
    return fb, [k for k in range(len(units)) if k not in fbs]


def with_function_based_paths(model, q: np.ndarray, units: Sequence[Musculotendon], need_moment_arms: bool,
                              geometric: Callable[[list[str]], Any]) -> Any:
    """L (and R) of a list of units some of which are function-based, or None when none is.

    ``geometric(names)`` computes the other units (L, or (L, R)) by their path geometry; the
    columns are put back in the units' order.
    """
    fb, other = split_units(units)
    if not fb:
        return None
    n = q.shape[0]
    lengths = np.zeros((n, len(units)))
    arms = np.zeros((n, model.n_q, len(units)))
    if other:
        out = geometric([units[k].name for k in other])
        if need_moment_arms:
            lengths[:, other], arms[:, :, other] = out
        else:
            lengths[:, other] = out
    for k in fb:
        lengths[:, k], arms[:, :, k] = function_path_lengths_and_moment_arms(model, units[k], q)
    return (lengths, arms) if need_moment_arms else lengths
