"""WrapSphere: OpenSim 4.6's sphere wrapping for a batch of segments.

The algorithm is the compiled kernel :func:`osim_emb.paths.wrapping._kernels.sphere_one` (numba);
this module holds the parameters and packs a batch for it.

Geometry (wrap frame, sphere of radius R at the origin):

* INSIDE_RADIUS if P1 or P2 lies inside the sphere; NO_WRAP unless the straight
  segment P1P2 crosses the sphere (both intersections of the line strictly between
  P1 and P2) -- this holds for every quadrant.
* The path lies in the plane through P1, P2 and the centre.  Each end point has
  two tangent points in that plane; without a quadrant the pair whose unit radial
  vectors are closest (largest dot product) is taken, i.e. the short way round,
  and the length is the exact great-circle arc R * angle(r1, r2).
* With a quadrant (axis k, sign s): if an end point is on the active side
  (DSIGN(P[k]) == s, with DSIGN(0) = +1) the wrap is MANDATORY_WRAP (the segment
  crosses the sphere).  If an end point is not on the active side, each tangent
  point is chosen facing the sphere centre, the pair is swapped for the other pair
  when the path would leave towards -s, and a "far side" wrap is detected
  ((r1 + r2) . ((r1 - P1) + (r2 - P2)) < 0).  OpenSim then sets the angle to
  -(2 pi - angle): the reported length is *negative* (R times minus the long arc).
  This is reproduced as is.
* Degenerate case: when P1P2 is within 1e-5 (sine) of the direction of P2 from the
  centre, OpenSim reuses the previous call's tangent points, which are always NaN
  (OpenSim multiplies them by a scale factor that its WrapResult copy resets to NaN);
  with NaN tangent points the path's length change is NaN and the path never takes
  it (OpenSim's length there is R pi/2, from normalizing NaN to zero).  Here:
  status NO_WRAP, raw status WRAPPED, NaN tangent points.

Everything is exact (closed form); agreement with OpenSim is at round-off level.
"""

from __future__ import annotations

from dataclasses import dataclass

from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, _segments

__all__ = ["WrapSphere", "sphere_wrap"]


def sphere_wrap(p1, p2, radius, wrap_axis=0, wrap_sign=0) -> WrapSegmentResult:
    """WrapSphere wrap of segments p1-p2 (N, 3), sphere of ``radius`` at the origin (compiled kernel)."""
    from osim_emb.paths.wrapping._kernels import sphere_batch
    a, b = _segments(p1, p2)
    st, raw, r1, r2, ln = sphere_batch(a, b, float(radius), int(wrap_axis), int(wrap_sign))
    return WrapSegmentResult(st, r1, r2, ln, raw)


@dataclass(frozen=True)
class WrapSphere(WrapObject):
    """A sphere of ``radius`` at the wrap frame's origin."""

    type_name = "WrapSphere"

    radius: float = 1.0

    def __post_init__(self):
        if not float(self.radius) >= 0.0:
            raise ValueError("WrapSphere radius cannot be negative")
        object.__setattr__(self, "radius", float(self.radius))
        self.wrap_axis_sign  # validate the quadrant

    def wrap_segment(self, p1, p2, method: str = "hybrid") -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3), wrap frame) over the sphere.

        ``method`` is ignored (it only matters for ellipsoids).
        """
        ax, sg = self.wrap_axis_sign
        return sphere_wrap(p1, p2, self.radius, ax, sg)
