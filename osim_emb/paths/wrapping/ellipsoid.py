"""WrapEllipsoid: OpenSim 4.6's ellipsoid wrapping for a batch of segments.

The algorithm is the compiled kernel :mod:`osim_emb.paths.wrapping._kernels_ellipsoid` (numba);
this module holds the parameters and packs a batch for it.

OpenSim does not compute a geodesic on the ellipsoid.  It cuts the ellipsoid
with a plane through P1, P2 and a surface point ``c1`` chosen by the PathWrap
``method``; finds in that plane the two points r1, r2 whose tangent lines pass
through P1 and P2 (a damped Gauss-Newton iteration stopped at a loose
tolerance); and measures the arc r1 -> r2 as a polyline of about 1 mm pieces.
Every step here follows the same arithmetic and the same stopping rules,
element by element, so that the tangent points and the wrap length agree with
OpenSim to round-off.  See ``docs/wrapping_ellipsoid.md`` for the algorithm.

State from a previous call: OpenSim copies the PathWrap's previous result
(r1, r2, c1, sv, factor) into the new one.  r1, r2, sv and factor are always
overwritten before use; ``c1`` survives only where the 3-D closest-point
Newton iteration producing the final ``c1`` does not converge in 64 steps
(OpenSim then leaves its output untouched).  That iteration only fails for
query points far outside the ellipsoid, which the wrap never queries, so in
practice the result is a function of the segment alone.  ``previous_c1``
reproduces the dependence anyway; the default (NaN) is a freshly constructed
PathWrap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, parse_quadrant

__all__ = ["WrapEllipsoid", "EllipsoidWrapDetails"]


def _method_name(method: str) -> str:
    """PathWrap method spelled as OpenSim accepts it (e.g. hybrid, Hybrid, HYBRID; Unassigned = hybrid)."""
    m = str(method)
    for name in ("hybrid", "midpoint", "axial"):
        if m in (name, name.capitalize(), name.upper()):
            return name
    if m == "Unassigned":
        return "hybrid"
    raise ValueError(f"unknown wrap method {method!r} (hybrid, midpoint or axial)")


@dataclass
class EllipsoidWrapDetails:
    """Everything a wrap computes, in the wrap frame (metres unless noted)."""

    result: "WrapSegmentResult"
    c1: np.ndarray  # (N, 3) surface point fixing the cutting plane, in OpenSim's normalized units
    sv: np.ndarray  # (N, 3) point on the chord used to find c1 (normalized units)
    plane: np.ndarray  # (N, 4) cutting plane (unit normal vs, offset vs4), normalized units
    far_side: np.ndarray  # (N,) bool, path taken the long way around
    points: np.ndarray | None  # (N, K, 3) polyline r1 -> r2 (metres), NaN after n_points; None if not kept
    n_points: np.ndarray  # (N,) number of polyline points (0 where not wrapped)
    closest_point_failed: np.ndarray  # (N,) the final c1 came from a non-converged Newton iteration
    tangent_converged: np.ndarray  # (N, 2) the r1 / r2 iteration met OpenSim's tolerance (else: 50 steps)


@dataclass(frozen=True)
class WrapEllipsoid(WrapObject):
    """An ellipsoid with semi-axes ``dimensions`` along the wrap frame's x, y, z axes."""

    type_name = "WrapEllipsoid"

    dimensions: tuple[float, float, float] = (0.05, 0.05, 0.05)

    def __post_init__(self):
        dims = tuple(float(x) for x in self.dimensions)
        if len(dims) != 3 or min(dims) <= 0.0:
            raise ValueError("WrapEllipsoid dimensions must be three positive semi-axes")
        object.__setattr__(self, "dimensions", dims)
        parse_quadrant(self.quadrant)  # validate

    # -- public API -------------------------------------------------------
    def wrap_segment(self, p1, p2, method: str = "hybrid", *, previous_c1=None) -> WrapSegmentResult:
        """Wrap the segments p1[k]-p2[k] ((N, 3) or (3,), wrap frame, metres) over the ellipsoid.

        Status per segment: INSIDE_RADIUS (an end point inside the ellipsoid),
        NO_WRAP (the straight segment does not pass through it) or
        MANDATORY_WRAP (it does; OpenSim's ellipsoid never returns plain
        WRAPPED).  ``r1``, ``r2`` are the tangent points (NaN where not
        wrapped), ``length`` the polyline length between them (0 where not
        wrapped; NaN where OpenSim's own length is NaN).  ``method`` is the
        PathWrap's: "hybrid" (default), "midpoint" or "axial".  The object's
        ``active`` flag is not consulted here (the path skips inactive objects).

        ``previous_c1`` (N, 3) or (3,), in OpenSim's normalized units (see
        :class:`EllipsoidWrapDetails`), is the ``c1`` of the PathWrap's
        previous wrap; it can only matter where a closest-point iteration does
        not converge, which the measurements in docs/wrapping_ellipsoid.md never
        found.  Default: NaN, a freshly constructed PathWrap.
        """
        return self.wrap_segment_details(p1, p2, method, previous_c1=previous_c1, keep_points=False).result

    def surface_path(self, p1, p2, method: str = "hybrid", *, previous_c1=None) -> list[np.ndarray]:
        """The polyline OpenSim builds from r1 to r2 for each segment (list of (k, 3), wrap frame).

        Its length is the wrap length; empty (0, 3) where the segment does not wrap.
        """
        det = self.wrap_segment_details(p1, p2, method, previous_c1=previous_c1, keep_points=True)
        return [det.points[i, : det.n_points[i]].copy() for i in range(det.n_points.shape[0])]

    def wrap_segment_details(self, p1, p2, method: str = "hybrid", *, previous_c1=None,
                             keep_points: bool = True, chunk: int = 1024) -> EllipsoidWrapDetails:
        """As :meth:`wrap_segment`, with the intermediate quantities (and the polyline if ``keep_points``).

        ``chunk`` is accepted for compatibility and ignored (the compiled kernel takes the whole
        batch; the results never depended on it).
        """
        p1 = np.atleast_2d(np.asarray(p1, dtype=float))
        p2 = np.atleast_2d(np.asarray(p2, dtype=float))
        p1, p2 = np.broadcast_arrays(p1, p2)
        if p1.ndim != 2 or p1.shape[1] != 3:
            raise ValueError("p1 and p2 must have shape (N, 3) or (3,)")
        n = p1.shape[0]
        if previous_c1 is None:
            prev = np.full((n, 3), np.nan)
        else:
            prev = np.broadcast_to(np.asarray(previous_c1, dtype=float), (n, 3))
        meth = _method_name(method)
        return self._wrap(p1, p2, meth, prev, keep_points)

    def _wrap(self, p1, p2, meth, prev, keep_points) -> EllipsoidWrapDetails:
        from osim_emb.paths.wrapping._kernels_ellipsoid import ellipsoid_batch
        ax, sg = parse_quadrant(self.quadrant)
        dims = tuple(float(x) for x in self.dimensions)
        code = {"hybrid": 0, "midpoint": 1, "axial": 2}[meth]
        cw = ["C", "W"]
        status, raw, r1, r2, length, det, pts = ellipsoid_batch(
            np.require(p1, dtype=float, requirements=cw), np.require(p2, dtype=float, requirements=cw), dims, ax, sg,
            code, np.require(prev, dtype=float, requirements=cw), bool(keep_points))
        npts = det[:, 11].astype(int)
        points = None
        if keep_points:
            width = max(2, int(npts.max()) if npts.size else 2)
            factor = 3.0 / (dims[0] + dims[1] + dims[2])
            points = pts[:, :width] * (1.0 / factor)
        res = WrapSegmentResult(status=status, r1=r1, r2=r2, length=length,
                                raw_status=None if np.array_equal(raw, status) else raw)
        return EllipsoidWrapDetails(res, det[:, 0:3].copy(), det[:, 3:6].copy(), det[:, 6:10].copy(),
                                    det[:, 10] != 0.0, points, npts, det[:, 12] != 0.0, det[:, 13:15] != 0.0)
