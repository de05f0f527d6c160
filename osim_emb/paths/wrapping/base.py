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

__all__ = ["WrapStatus", "WrapSegmentResult", "WrapObject", "euler_xyz_body_fixed", "parse_quadrant"]


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
    # Optional: the code OpenSim's wrapLine *returns*, where it differs from ``status``.
    # ``status`` says whether r1, r2, length describe a wrap; OpenSim sometimes returns
    # WRAPPED without one (WrapTorus whenever the centre-circle search succeeds, also
    # when its inner cylinder does not wrap; WrapSphere when P1P2 passes within 1e-5 of
    # the centre direction, with NaN tangent points).  The path algorithm needs the
    # returned code (it decides the order of the wrap objects).  None: same as status.
    raw_status: np.ndarray | None = None

    @property
    def wrapped(self) -> np.ndarray:
        """True where the segment wraps (WRAPPED or MANDATORY_WRAP)."""
        return (self.status == WrapStatus.WRAPPED) | (self.status == WrapStatus.MANDATORY_WRAP)

    @property
    def code(self) -> np.ndarray:
        """The code OpenSim's wrapLine returns (``raw_status`` if given, else ``status``)."""
        return self.status if self.raw_status is None else self.raw_status


def euler_xyz_body_fixed(angles) -> np.ndarray:
    """R = Rx(a) Ry(b) Rz(c): OpenSim's body-fixed X-Y-Z orientation (3x3)."""
    a, b, c = np.asarray(angles, dtype=float)
    ca, sa, cb, sb, cc, sc = np.cos(a), np.sin(a), np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    rx = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
    ry = np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    rz = np.array([[cc, -sc, 0], [sc, cc, 0], [0, 0, 1]])
    return rx @ ry @ rz


_QUADRANTS = {
    "-x": (0, -1), "-X": (0, -1),
    "x": (0, 1), "+x": (0, 1), "X": (0, 1), "+X": (0, 1),
    "-y": (1, -1), "-Y": (1, -1),
    "y": (1, 1), "+y": (1, 1), "Y": (1, 1), "+Y": (1, 1),
    "-z": (2, -1), "-Z": (2, -1),
    "z": (2, 1), "+z": (2, 1), "Z": (2, 1), "+Z": (2, 1),
    "all": (0, 0), "ALL": (0, 0), "All": (0, 0), "Unassigned": (0, 0),
}


def parse_quadrant(quadrant: str) -> tuple[int, int]:
    """(wrap axis 0/1/2, wrap sign -1/+1, or 0 for all quadrants), spelled as OpenSim accepts.

    OpenSim accepts x, +x, X, +X, -x, -X (same for y, z), all, ALL, All, and
    Unassigned (= all); anything else is an error.
    """
    q = str(quadrant).strip()
    if q not in _QUADRANTS:
        raise ValueError(f"invalid wrap quadrant {quadrant!r} (x, -x, y, -y, z, -z or all)")
    return _QUADRANTS[q]


def _segments(p1, p2) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) C-contiguous, writable float arrays of segment end points (what the compiled kernels take)."""
    cw = ["C", "W"]
    return (np.require(np.asarray(p1, dtype=float).reshape(-1, 3), requirements=cw),
            np.require(np.asarray(p2, dtype=float).reshape(-1, 3), requirements=cw))


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

    @property
    def wrap_axis_sign(self) -> tuple[int, int]:
        """(axis, sign) of ``quadrant``; sign 0 for all quadrants."""
        return parse_quadrant(self.quadrant)

    def wrap_segment(self, p1: np.ndarray, p2: np.ndarray, method: str = "hybrid") -> WrapSegmentResult:
        raise NotImplementedError

    def wrap_segment_in_path(self, p1: np.ndarray, p2: np.ndarray, method: str = "hybrid",
                             single_wrap: bool = True) -> WrapSegmentResult:
        """Wrap as OpenSim's GeometryPath calls it.

        ``single_wrap`` is True when the path has only this one PathWrap: OpenSim's
        WrapCylinder (and the cylinder inside WrapTorus) then skips its tangent-point
        adjustment loop.  Objects whose result does not depend on it just call
        :meth:`wrap_segment`.
        """
        return self.wrap_segment(p1, p2, method)
