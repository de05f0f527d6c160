"""Batched 3-vector helpers shared by the wrap objects (arrays of shape (..., 3)).

The small geometric primitives OpenSim's wrapping code is built from (normalize
or zero, closest point on a line, closest points of two lines, line/plane
intersection), written for whole batches.  Where OpenSim leaves a result
undefined (parallel lines) these return NaN.
"""

from __future__ import annotations

import numpy as np

EPS = np.finfo(float).eps  # SimTK::Eps: NormalizeOrZero zeroes vectors shorter than this
ROUNDOFF_ERROR = 2e-13  # OpenSim's EQUAL_WITHIN_ERROR tolerance
LINE_EPSILON = 1e-5  # tolerance of the segment/plane intersection


def dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def cross(a, b):
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def norm(a):
    return np.sqrt(dot(a, a))


def normalize_or_zero(a):
    """(unit vector, magnitude); the zero vector where the magnitude is below machine epsilon."""
    mag = norm(a)
    ok = mag >= EPS
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(ok[..., None], a * (1.0 / np.where(ok, mag, 1.0))[..., None], 0.0)
    return u, mag


def unit(a):
    """Plain normalization a/|a| (NaN for the zero vector), as SimTK's UnitVec3 / Vec3::normalize."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / norm(a)[..., None]


def dsign(x):
    """OpenSim's DSIGN: +1 where x >= 0, else -1 (also -1 for NaN)."""
    return np.where(x >= 0.0, 1, -1)


def closest_point_on_line(pt, line_pt, line):
    """Closest point to ``pt`` on the line through ``line_pt`` along ``line`` (not necessarily unit).

    Returns (point, t) with t the parameter in units of |line|.
    """
    v1, mag = normalize_or_zero(pt - line_pt)
    v2, mag2 = normalize_or_zero(line)
    t = dot(v1, v2) * mag
    closest = line_pt + t[..., None] * v2
    with np.errstate(divide="ignore", invalid="ignore"):
        return closest, t / mag2


def distance_sq_point_to_line(point, line_pt, line):
    """Squared distance of ``point`` to the line through ``line_pt`` along ``line``."""
    d = line_pt - point
    n = unit(line)
    e = d - dot(d, n)[..., None] * n
    return dot(e, e)


def det_rows(a, b, c):
    """Determinant of the 3x3 matrices with rows a, b, c."""
    return (a[..., 0] * (b[..., 1] * c[..., 2] - b[..., 2] * c[..., 1])
            - a[..., 1] * (b[..., 0] * c[..., 2] - b[..., 2] * c[..., 0])
            + a[..., 2] * (b[..., 0] * c[..., 1] - b[..., 1] * c[..., 0]))


def intersect_lines(p1, p2, p3, p4):
    """Closest points of the lines p1-p2 and p3-p4.

    Returns (q1, s, q2, t): q1 = p1 + s (p2 - p1) on the first line, q2 = p3 + t (p4 - p3)
    on the second.  All NaN where the lines are parallel (OpenSim leaves them unset).
    """
    vec1, mag1 = normalize_or_zero(p2 - p1)
    vec2, mag2 = normalize_or_zero(p4 - p3)
    cp = cross(vec1, vec2)
    denom = dot(cp, cp)
    parallel = np.abs(denom) <= ROUNDOFF_ERROR
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(parallel, np.nan, denom)
        row0 = p3 - p1
        t = det_rows(row0, vec1, cp) / d
        q2 = p3 + t[..., None] * vec2
        s = det_rows(row0, vec2, cp) / d
        q1 = p1 + s[..., None] * vec1
        return q1, s / mag1, q2, t / mag2


def intersect_segment_plane(pt1, pt2, normal, d):
    """Intersection of the segment pt1-pt2 with the plane normal.x + d = 0.

    Returns (hit, point); ``hit`` is False where the segment is nearly parallel to the
    plane or does not reach it (OpenSim's 1e-5 tolerances).
    """
    vec = pt2 - pt1
    dp = dot(vec, normal)
    ok = ~(np.abs(dp) < LINE_EPSILON)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (-d - normal[..., 0] * pt1[..., 0] - normal[..., 1] * pt1[..., 1]
             - normal[..., 2] * pt1[..., 2]) / dp
    ok &= ~((t < -LINE_EPSILON) | (t > 1.0 + LINE_EPSILON))
    return ok, pt1 + t[..., None] * vec


def rotate_about_z(v, angle):
    """Rotate the vectors v (..., 3) by ``angle`` (...) about +z (right hand)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1], v[..., 2]], axis=-1)


def where3(mask, a, b):
    """Row-wise select between two (..., 3) arrays."""
    return np.where(mask[..., None], a, b)
