"""WrapTorus: OpenSim 4.6's torus wrapping for a batch of segments.

The algorithm is the compiled kernel of :mod:`osim_emb.paths.wrapping._kernels` (``torus_circle_point``,
``lmdif_circle_one``, the cylinder's ``cyl_stage``/``cyl_loop``; numba); this module holds the
parameters and packs a batch for it.

Geometry (wrap frame; torus around the z axis, centre circle of radius
``outer_radius`` in the z = 0 plane, tube radius ``inner_radius``):

1. A point of the centre circle "closest" to the line P1P2 is searched with
   OpenSim's modified MINPACK lmdif (one unknown: the distance u along the line from
   its start point, started at u = 0), once from P1 towards P2 and once from P2
   towards P1; each run gives a point on the line, and the one nearer the circle is
   kept (with a quadrant: the one on the active side; NO_WRAP if neither is).
2. A temporary cylinder of radius ``inner_radius`` and length 10000 is placed at the
   circle point, its axis tangent to the circle, constrained to the side facing the
   torus axis, and OpenSim's cylinder wrap (see :mod:`.cylinder`) is applied.

Notes on what OpenSim actually computes (reproduced here):

* The residual OpenSim minimises is 2(p.n + u) - 4 R (c4 u + c3) / rho(u): the
  derivative of the squared distance to the circle with the circle term counted
  twice, i.e. the stationarity condition of the squared distance to a circle of
  radius 2R (R = outer_radius), not R.  The end point is found by lmdif with
  ftol = xtol = 1e-4, a fixed forward-difference step of 1e-5 for the derivative,
  an initial step bound of 0.2 and at most 500 evaluations; it stops at whatever
  iterate satisfies those loose tests.  The result is therefore *not* the exact
  closest point; the kernel replays the same iteration (the one-unknown case of
  lmdif, lmpar and qrsolv, with the same constants and tests) element by element,
  so it stops at the same iterate; agreement is at round-off level except where a
  round-off difference flips one of lmdif's tests (not seen in tests).
* WrapTorus always returns WRAPPED once the circle point is found, also when the
  inner cylinder does not wrap (no tangent points then: the path ignores it).  The
  result's ``status`` says whether it wrapped; ``raw_status`` is the returned code.
* With several PathWraps in the path the inner cylinder runs its tangent-adjustment
  loop (``single_wrap=False``).
"""

from __future__ import annotations

from dataclasses import dataclass

from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, _segments

__all__ = ["WrapTorus", "torus_wrap", "find_circle_point"]


def find_circle_point(radius, p1, p2, wrap_axis=0, wrap_sign=0):
    """OpenSim's WrapTorus::findClosestPoint for segments p1-p2 (N, 3) (compiled kernel).

    Returns (found (N,) bool, circle point (N, 3)).
    """
    from osim_emb.paths.wrapping._kernels import torus_circle_points
    a, b = _segments(p1, p2)
    return torus_circle_points(float(radius), a, b, int(wrap_axis), int(wrap_sign))


def torus_wrap(p1, p2, inner_radius, outer_radius, wrap_axis=0, wrap_sign=0, single_wrap=True) -> WrapSegmentResult:
    """WrapTorus wrap of segments p1-p2 (N, 3) in the torus frame (compiled kernel)."""
    from osim_emb.paths.wrapping._kernels import torus_batch
    a, b = _segments(p1, p2)
    st, code, r1, r2, ln = torus_batch(a, b, float(inner_radius), float(outer_radius), int(wrap_axis),
                                       int(wrap_sign), bool(single_wrap))
    return WrapSegmentResult(st, r1, r2, ln, code)


@dataclass(frozen=True)
class WrapTorus(WrapObject):
    """A torus around the wrap frame's z axis: centre circle of ``outer_radius``, tube ``inner_radius``."""

    type_name = "WrapTorus"

    inner_radius: float = 0.01
    outer_radius: float = 0.1

    def __post_init__(self):
        object.__setattr__(self, "inner_radius", float(self.inner_radius))
        object.__setattr__(self, "outer_radius", float(self.outer_radius))
        if not self.inner_radius >= 0.0 or not self.outer_radius >= 0.0:
            raise ValueError("WrapTorus radii cannot be negative")
        self.wrap_axis_sign  # validate the quadrant

    def wrap_segment(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3), wrap frame) over the torus.

        ``single_wrap=False``: the inner cylinder runs OpenSim's tangent-adjustment
        loop (as when the path has several PathWraps).  ``method`` is ignored.
        """
        ax, sg = self.wrap_axis_sign
        return torus_wrap(p1, p2, self.inner_radius, self.outer_radius, ax, sg, single_wrap)

    def wrap_segment_in_path(self, p1, p2, method: str = "hybrid", single_wrap: bool = True) -> WrapSegmentResult:
        return self.wrap_segment(p1, p2, method, single_wrap)
