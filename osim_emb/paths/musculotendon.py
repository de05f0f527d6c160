"""Musculotendon paths: path points, path wraps, the attachment sequence (seed Definition 2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from osim_emb.core.functions.base import JointFunction, readonly

__all__ = ["PathPoint", "PathWrap", "Musculotendon", "CONDITIONAL_TOLERANCE"]

#: OpenSim's ConditionalPathPoint is active when range_min - 1e-5 <= q <= range_max + 1e-5.
CONDITIONAL_TOLERANCE = 1e-5


@dataclass(frozen=True, eq=False)
class PathPoint:
    """A point of a path, fixed on ``body`` at ``location`` (body frame).

    A MovingPathPoint is imported as a zero-inertia body moved by three prismatic
    joints (seed Table 5: MScapula, MThorax, MHumerus); the point sits at that
    body's origin and ``kind`` is "moving".  A ConditionalPathPoint is active
    while its coordinate (``condition``, a function of q) lies in ``active_range``.
    """

    name: str
    body: str
    location: np.ndarray
    kind: str = "fixed"  # fixed | moving | conditional
    condition: JointFunction | None = None
    active_range: tuple[float, float] | None = None
    coordinate: str | None = None
    source_body: str = ""  # for moving points: the body whose frame the point moves in

    def __post_init__(self):
        object.__setattr__(self, "location", readonly(np.asarray(self.location, dtype=float).reshape(3)))

    def is_active(self, q: np.ndarray) -> np.ndarray:
        """Activity (N,) of a conditional point (always True for the others)."""
        q = np.atleast_2d(q)
        if self.kind != "conditional":
            return np.ones(q.shape[0], dtype=bool)
        v = self.condition.evaluate(q, order=0).value
        lo, hi = self.active_range
        return (v >= lo - CONDITIONAL_TOLERANCE) & (v <= hi + CONDITIONAL_TOLERANCE)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PathPoint):
            return NotImplemented
        return (self.name == other.name and self.body == other.body and np.array_equal(self.location, other.location)
                and self.kind == other.kind and self.condition == other.condition
                and self.active_range == other.active_range and self.coordinate == other.coordinate
                and self.source_body == other.source_body)

    __hash__ = object.__hash__


@dataclass(frozen=True)
class PathWrap:
    """One <PathWrap>: the wrap object's name, the ellipsoid method, the 1-based point range."""

    wrap_object: str
    method: str = "hybrid"
    range: tuple[int, int] = (-1, -1)


@dataclass(frozen=True, eq=False)
class Musculotendon:
    """A musculotendon unit (any OpenSim path actuator): its path and its force model's parameters."""

    name: str
    type_name: str
    points: tuple[PathPoint, ...]
    wraps: tuple[PathWrap, ...] = ()
    parameters: Any = None

    def __post_init__(self):
        object.__setattr__(self, "points", tuple(self.points))
        object.__setattr__(self, "wraps", tuple(self.wraps))

    @property
    def attachment_sequence(self) -> tuple[str, ...]:
        """Gamma_k (Definition 2): the bodies the unit acts on, from origin to insertion.

        Bodies of consecutive points on the same body appear once; conditional
        points are included (they act when active); wrap objects add their
        bodies where the path wraps (see :attr:`wrap_bodies`).
        """
        seq: list[str] = []
        for p in self.points:
            if not seq or seq[-1] != p.body:
                seq.append(p.body)
        return tuple(seq)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Musculotendon):
            return NotImplemented
        return (self.name == other.name and self.type_name == other.type_name and self.points == other.points
                and self.wraps == other.wraps and _params_eq(self.parameters, other.parameters))

    __hash__ = object.__hash__


def _params_eq(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return bool(a == b)
    except ValueError:
        return a.to_dict() == b.to_dict()


def with_own_paths(model, q: np.ndarray, units: Any, need_moment_arms: bool, others: Any) -> Any:
    """L (and R) of a list of units some of which evaluate their own paths, or None when none does.

    A unit with an ``own_path_lengths_and_moment_arms(model, q, need_moment_arms, kin=...)`` method (a
    Scholz2015GeometryPath, :mod:`osim_emb.paths.scholz`) gives its L (N,) and R (N, n_q) itself;
    ``others(names)`` computes the rest (L, or (L, R)); the columns keep the units' order.
    """
    own = [k for k, u in enumerate(units) if hasattr(u, "own_path_lengths_and_moment_arms")]
    if not own:
        return None
    rest = [k for k in range(len(units)) if k not in set(own)]
    n = q.shape[0]
    lengths = np.zeros((n, len(units)))
    arms = np.zeros((n, model.n_q, len(units)))
    if rest:
        out = others([units[k].name for k in rest])
        if need_moment_arms:
            lengths[:, rest], arms[:, :, rest] = out
        else:
            lengths[:, rest] = out
    from osim_emb.core.kinematics import forward_kinematics
    kin = forward_kinematics(model, q, order=1 if need_moment_arms else 0)  # once for every such unit
    for k in own:
        lengths[:, k], r = units[k].own_path_lengths_and_moment_arms(model, q, need_moment_arms, kin=kin)
        if need_moment_arms:
            arms[:, :, k] = r
    return (lengths, arms) if need_moment_arms else lengths
