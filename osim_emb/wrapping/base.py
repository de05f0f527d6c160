"""Common interface of the wrap objects (WrapSphere, WrapCylinder, WrapEllipsoid, WrapTorus).

A wrap object is immutable.  It lives on a body at a constant transform
(``xyz_body_rotation`` as body-fixed X-Y-Z Euler angles, ``translation``), and
wraps one straight path segment P1-P2 at a time, *in its own frame*, for a
batch of N segments at once:

    result = obj.wrap_segment(p1, p2, method="hybrid")

with ``p1``, ``p2`` of shape (N, 3).  The result gives, per segment, whether
the path wraps, the two tangent points r1 (near P1) and r2 (near P2) in the
wrap frame, and the length of the path on the surface between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

__all__ = ["WrapStatus", "WrapSegmentResult", "WrapObject", "euler_xyz_body_fixed"]


class WrapStatus:
    """OpenSim's WrapAction codes."""

    NO_WRAP = 0
    INSIDE_RADIUS = 1
    WRAPPED = 2
    MANDATORY_WRAP = 3


@dataclass
class WrapSegmentResult:
    """Wrapping of N segments P1-P2 (all arrays in the wrap object's frame)."""

    status: np.ndarray  # (N,) int, WrapStatus codes
    r1: np.ndarray  # (N, 3) first tangent point (NaN where not wrapped)
    r2: np.ndarray  # (N, 3) second tangent point
    length: np.ndarray  # (N,) path length on the surface from r1 to r2 (0 where not wrapped)

    @property
    def wrapped(self) -> np.ndarray:
        """True where the segment wraps (WRAPPED or MANDATORY_WRAP)."""
        return (self.status == WrapStatus.WRAPPED) | (self.status == WrapStatus.MANDATORY_WRAP)


def euler_xyz_body_fixed(angles) -> np.ndarray:
    """R = Rx(a) Ry(b) Rz(c): OpenSim's body-fixed X-Y-Z orientation (3x3)."""
    a, b, c = np.asarray(angles, dtype=float)
    ca, sa, cb, sb, cc, sc = np.cos(a), np.sin(a), np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    rx = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
    ry = np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    rz = np.array([[cc, -sc, 0], [sc, cc, 0], [0, 0, 1]])
    return rx @ ry @ rz


@dataclass(frozen=True)
class WrapObject:
    """Base of the wrap objects: placement on a body and the active quadrant."""

    type_name: ClassVar[str] = ""

    name: str
    body: str
    xyz_body_rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quadrant: str = "all"
    active: bool = True
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def transform_in_body(self) -> np.ndarray:
        """4x4 homogeneous transform from the wrap frame to its body's frame."""
        t = np.eye(4)
        t[:3, :3] = euler_xyz_body_fixed(self.xyz_body_rotation)
        t[:3, 3] = self.translation
        return t

    def wrap_segment(self, p1: np.ndarray, p2: np.ndarray, method: str = "hybrid") -> WrapSegmentResult:
        raise NotImplementedError
