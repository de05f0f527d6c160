"""WrapSphere: OpenSim 4.6's sphere wrapping, vectorized over a batch of segments.

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

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.paths.wrapping import _vec as V
from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, WrapStatus

__all__ = ["WrapSphere", "sphere_wrap"]


def _tangent_pair(p, n, radius):
    """The two tangent points from p to the sphere in the plane with normal n."""
    y, _ = V.normalize_or_zero(-p)
    z = V.cross(n, y)
    pm = V.norm(p)
    with np.errstate(invalid="ignore"):
        ang = np.arcsin(radius / pm)
    dist = (pm * np.cos(ang))[..., None]
    c, s = np.cos(ang)[..., None], np.sin(ang)[..., None]
    ra = p + dist * (c * y - s * z)
    rb = p + dist * (c * y + s * z)
    return ra, rb


def sphere_wrap(p1, p2, radius, wrap_axis=0, wrap_sign=0):
    """Vectorized WrapSphere wrap of segments p1-p2 (N, 3), sphere at the origin."""
    p1 = np.asarray(p1, dtype=float).reshape(-1, 3)
    p2 = np.asarray(p2, dtype=float).reshape(-1, 3)
    n = p1.shape[0]
    R = float(radius)
    if use_jit():  # compiled per-segment kernel (osim_emb.paths.wrapping._kernels); this code is the reference
        from osim_emb.paths.wrapping._kernels import sphere_batch
        cw = ["C", "W"]
        st, rw, a, b, ln = sphere_batch(np.require(p1, requirements=cw), np.require(p2, requirements=cw), R,
                                        int(wrap_axis), int(wrap_sign))
        return WrapSegmentResult(st, a, b, ln, rw)
    status = np.full(n, WrapStatus.NO_WRAP, dtype=int)
    raw = status.copy()
    r1 = np.full((n, 3), np.nan)
    r2 = np.full((n, 3), np.nan)
    length = np.zeros(n)

    m1, m2 = V.norm(p1), V.norm(p2)
    inside = (m1 < R) | (m2 < R)
    raw[inside] = WrapStatus.INSIDE_RADIUS
    status[inside] = WrapStatus.INSIDE_RADIUS

    # Both crossings of the line with the sphere strictly between P1 (l = 1) and P2 (l = 0).
    ri = p1 - p2
    a = V.dot(ri, ri)
    b = 2.0 * V.dot(p2, ri)
    c = V.dot(p2, p2) - R * R
    disc = b * b - 4.0 * a * c
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = np.sqrt(disc)
        l1 = (-b + sq) / (2.0 * a)
        l2 = (-b - sq) / (2.0 * a)
    cand = ~inside & ~(disc < 0.0)
    cand &= (0.0 < l1) & (l1 < 1.0) & (0.0 < l2) & (l2 < 1.0) & ~(l1 < l2)
    idx = np.flatnonzero(cand)
    if idx.size == 0:
        return WrapSegmentResult(status, r1, r2, length, raw)

    P1, P2 = p1[idx], p2[idx]
    k = idx.size
    code = np.full(k, WrapStatus.WRAPPED, dtype=int)
    keep = np.ones(k, dtype=bool)
    far = np.zeros(k, dtype=bool)

    u12, _ = V.normalize_or_zero(P1 - P2)
    np2, _ = V.normalize_or_zero(P2)
    hp2 = V.cross(u12, np2)
    degenerate = V.norm(hp2) < 1e-5
    nrm, _ = V.normalize_or_zero(hp2)

    r1a, r1b = _tangent_pair(P1, nrm, R)
    r2a, r2b = _tangent_pair(P2, nrm, R)
    e1a, _ = V.normalize_or_zero(r1a)
    e1b, _ = V.normalize_or_zero(r1b)
    e2a, _ = V.normalize_or_zero(r2a)
    e2b, _ = V.normalize_or_zero(r2b)

    # Short way round: the candidate pair with the largest dot product (ties as OpenSim).
    j1, j2, j3, j4 = V.dot(e1a, e2a), V.dot(e1a, e2b), V.dot(e1b, e2a), V.dot(e1b, e2b)
    c1 = (j1 > j2) & (j1 > j3) & (j1 > j4)
    c2 = ~c1 & (j2 > j3) & (j2 > j4)
    c3 = ~c1 & ~c2 & (j3 > j4)
    R1 = V.where3(c1 | c2, r1a, r1b)
    R2 = V.where3(c1 | c3, r2a, r2b)

    if wrap_sign != 0:
        ax, sg = int(wrap_axis), int(wrap_sign)
        s1, s2 = V.dsign(P1[:, ax]), V.dsign(P2[:, ax])
        either_on = (s1 == sg) | (s2 == sg)
        # closest point mm of the line to the centre; tt: its distance from P1 towards P2
        # (OpenSim compares this distance, in metres, with 1)
        mm, t = V.closest_point_on_line(np.zeros_like(P1), P1, u12)
        tt = -t
        mand = either_on & (V.dot(mm, mm) < R * R) & (tt > 0.0) & (tt < 1.0)
        opt = either_on & ~mand & (s1 != s2) & (V.dsign(mm[:, ax]) != sg)
        code[mand] = WrapStatus.MANDATORY_WRAP
        keep &= ~(either_on & ~mand & ~opt)

        cons = (s1 != sg) | (s2 != sg)
        sm, _ = V.normalize_or_zero(-P1 - P2)
        pick1a = V.dot(e1a, sm) > V.dot(e1b, sm)
        pick2a = V.dot(e2a, sm) > V.dot(e2b, sm)
        q1 = V.where3(pick1a, r1a, r1b)
        q2 = V.where3(pick2a, r2a, r2b)
        o1 = V.where3(pick1a, r1b, r1a)
        o2 = V.where3(pick2a, r2b, r2a)
        sm2, _ = V.normalize_or_zero((q1 - P1) + (q2 - P2))
        flip = sm2[:, ax] * sg < 0.0
        q1, q2 = V.where3(flip, o1, q1), V.where3(flip, o2, q2)
        smf = (q1 - P1) + (q2 - P2)
        fs = V.dot(q1 + q2, smf) < 0.0
        R1 = V.where3(cons, q1, R1)
        R2 = V.where3(cons, q2, R2)
        far = cons & fs

    # the degenerate case skips the quadrant logic: returned code WRAPPED, NaN tangent points
    code[degenerate] = WrapStatus.WRAPPED
    keep |= degenerate
    far &= ~degenerate
    R1 = V.where3(degenerate, np.nan, R1)
    R2 = V.where3(degenerate, np.nan, R2)
    n1, _ = V.normalize_or_zero(R1)
    n2, _ = V.normalize_or_zero(R2)
    with np.errstate(invalid="ignore"):
        ang = np.arccos(V.dot(n1, n2))
    ang = np.where(far, -(2.0 * np.pi - ang), ang)
    L = R * ang

    sel = idx[keep]
    raw[sel] = code[keep]
    ok = keep & ~degenerate
    sel_ok = idx[ok]
    status[sel_ok] = code[ok]
    r1[sel_ok] = R1[ok]
    r2[sel_ok] = R2[ok]
    length[sel_ok] = L[ok]
    return WrapSegmentResult(status, r1, r2, length, raw)


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
