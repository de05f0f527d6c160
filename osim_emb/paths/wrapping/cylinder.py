"""WrapCylinder: OpenSim 4.6's cylinder wrapping for a batch of segments.

The algorithm is the compiled kernel of :mod:`osim_emb.paths.wrapping._kernels` (``cyl_stage``,
``cyl_loop``; numba); this module holds the parameters and packs a batch for it.

Geometry (wrap frame; cylinder of radius R around the z axis, of length L centred
on z = 0):

1. INSIDE_RADIUS if P1 or P2 is closer than R to the axis.
2. The closest points of the line P1P2 and of the axis are found.  Without a
   quadrant the wrap is MANDATORY_WRAP when they are closer than R and the point on
   P1P2 lies strictly between P1 and P2, else NO_WRAP.  With a quadrant (axis k,
   sign s): when an end point is on the active side the same test gives
   MANDATORY_WRAP; otherwise the wrap is WRAPPED if P1 and P2 are on opposite
   sides of the k = 0 plane and the closest point is on the inactive side, else
   NO_WRAP.  When *neither* end point is on the active side the cylinder always
   wraps (WRAPPED), round the active side -- even if P1P2 is far from it.
3. Preliminary tangent points: in the plane normal to the axis through each end
   point, the two 2-D tangent points.  Without a quadrant the pair with the most
   similar radial directions is taken (short way round); with a quadrant the pair
   is chosen by which candidates lie on the active side, and a "long wrap" (more
   than half the cylinder) is flagged when (r1 - p11 + r2 - p22) . (r1 - P1 + r2 - P2) < 0
   (p11, p22: projections of P1, P2 on the axis).
4. The tangent points are slid along the axis to the plane through P1, P2 and an
   "apex" point on the cylinder (on the axis point closest to the point of P1P2
   that divides it in the ratio of the end points' distances to the axis, offset
   by R within the plane through P1, P2 and that axis point).  This is a heuristic,
   not an exact tangency.  NO_WRAP if both r1 and r2 then lie beyond the
   cylinder's ends (|z| > L/2).
5. The path is a helix from r1 to r2: length sqrt((R theta)^2 + dz^2), theta the
   angle from r1 to r2 about +z (2 pi - theta for a long wrap).
6. When the path has more than one PathWrap (``single_wrap=False``), OpenSim adds
   a tangent-adjustment loop: with the helix cut in n = floor(length / 2 mm) pieces
   (only if n >= 2), r1 is moved along the axis when the angle of P1->r1 to the
   axis differs by more than 0.1 degree from that of r1->(helix point at 1/n); the
   same for r2 with the helix point at 1 - 1/n (computed with the *updated* r1);
   the helix is rebuilt; at most 100 times.  It is reproduced step by step.

So the cylinder wrap is a deterministic approximation of the geodesic; this module
reproduces OpenSim's approximation (to round-off), not the exact geodesic.

Not reproduced: where OpenSim reads uninitialised memory (P1P2 parallel to the
axis, or parallel lines in the tangent adjustment) NaN is returned instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, _segments

__all__ = ["WrapCylinder", "cylinder_wrap"]


def cylinder_wrap(p1, p2, radius, length, wrap_axis=0, wrap_sign=0, single_wrap=True) -> WrapSegmentResult:
    """WrapCylinder wrap of segments p1-p2 (N, 3) in the cylinder frame (compiled kernel)."""
    from osim_emb.paths.wrapping._kernels import cylinder_batch
    a, b = _segments(p1, p2)
    st, r1, r2, ln = cylinder_batch(a, b, float(radius), float(length), int(wrap_axis), int(wrap_sign),
                                    bool(single_wrap))
    return WrapSegmentResult(st, r1, r2, ln)


@dataclass(frozen=True)
class WrapCylinder(WrapObject):
    """A cylinder of ``radius`` around the wrap frame's z axis, ``length`` long, centred on z = 0."""

    type_name = "WrapCylinder"

    radius: float = 1.0
    length: float = 1.0

    def __post_init__(self):
        if not float(self.radius) >= 0.0:
            raise ValueError("WrapCylinder radius cannot be negative")
        if not float(self.length) >= 0.0:
            raise ValueError("WrapCylinder length cannot be negative")
        object.__setattr__(self, "radius", float(self.radius))
        object.__setattr__(self, "length", float(self.length))
        self.wrap_axis_sign  # validate the quadrant

    def wrap_segment(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3), wrap frame) over the cylinder.

        ``single_wrap=False`` adds OpenSim's tangent-adjustment loop, which OpenSim
        runs when the path has more than one PathWrap.  ``method`` is ignored.
        """
        ax, sg = self.wrap_axis_sign
        return cylinder_wrap(p1, p2, self.radius, self.length, ax, sg, single_wrap)

    def wrap_segment_in_path(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        return self.wrap_segment(p1, p2, method, single_wrap)
