"""Smooth wrapping: exact shortest paths over sphere and cylinder obstacles in closed form, ellipsoids and tori
integrated (issue 13, item 2).

Unlike OpenSim's legacy wrap algorithms (``wrapping.sphere``, ``wrapping.cylinder``), which follow
quadrant rules and a stale-cache convention, these are the true shortest paths from P1 to P2
that do not enter the obstacle (docs/paths.md):

* **sphere** of radius r at the origin: when the segment P1 P2 meets the ball, the path lies in
  the plane through O, P1, P2 and is tangent segment + great-circle arc + tangent segment,

      L = sqrt(|p1|^2 - r^2) + sqrt(|p2|^2 - r^2) + r theta,
      theta = angle(p1, p2) - acos(r/|p1|) - acos(r/|p2|)  (> 0 exactly when the segment meets the ball);

* **cylinder** of radius r about z (infinite): the cylinder and its tangent planes develop onto a
  plane, where the path is straight; its projection on the xy plane is the circle problem above
  (length L_xy), its height grows linearly with the projected arc length, so

      L = sqrt(L_xy^2 + (z2 - z1)^2),  z(T_i) = z1 + (z2 - z1) s_i / L_xy   (a helix on the cylinder).

Both are C1 in P1, P2 wherever the contact does not change and C1 across lift-off (the straight
segment is tangent there); the derivative of L with respect to an end point is the unit vector
along the straight segment at that end (envelope theorem), so the moment arms of the package's
segment formula (tangent points fixed on the obstacle's body, the arc on one body) are exactly
R = -dL/dq.  The side of a cylinder is the shorter way round; it switches where the projected
segment passes through the axis (a point where no smooth shortest path exists).

Several obstacles meeting one straight segment are wrapped together: their joint stationary
path (each on its short side) from :func:`osim_emb.paths.scholz.span_paths`, the evaluator of
OpenSim's Scholz2015GeometryPath.  Ellipsoids: the shortest path with its geodesic integrated
numerically (:mod:`osim_emb.paths.geodesic`); tori likewise, alone on their segment (a legacy WrapTorus,
a ring the path is held inside, becomes a solid torus: it acts where the straight segment meets its tube).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["sphere_shortest_path", "cylinder_shortest_path", "smooth_path_lengths_and_moment_arms"]


def _shortest_path(kind: str, p1: Any, p2: Any, radius: float):
    """The short side round the obstacle: :func:`osim_emb.paths.scholz.obstacle_path` without a hint (compiled)."""
    from osim_emb.paths.scholz import obstacle_path
    try:
        return obstacle_path(kind, radius, np.full(3, np.nan), p1, p2)
    except ValueError:
        raise ValueError(f"a path point is inside the wrap {kind}: no shortest path around it") from None


def sphere_shortest_path(p1: Any, p2: Any, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shortest paths p1[k] -> p2[k] ((N, 3), sphere frame) outside the ball: (length, t1, t2, wrapped).

    Where the straight segment misses the ball, length = |p2 - p1| and t1 = t2 = NaN.
    Raises where an end point is inside the sphere (no such path).
    """
    return _shortest_path("sphere", p1, p2, radius)


def cylinder_shortest_path(p1: Any, p2: Any, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shortest paths p1[k] -> p2[k] ((N, 3), cylinder frame, axis z, infinite) outside the cylinder.

    (length, t1, t2, wrapped) as :func:`sphere_shortest_path`; the wrapped part is a helix.
    """
    return _shortest_path("cylinder", p1, p2, radius)


_KIND = {"WrapSphere": "sphere", "WrapCylinder": "cylinder", "WrapEllipsoid": "ellipsoid", "WrapTorus": "torus"}


def obstacle_radii(obj) -> tuple | None:
    """The radii of an integrated obstacle's surface: an ellipsoid's semi-axes, a torus's (torus radius R = the
    legacy outer_radius, tube radius r = inner_radius); None for spheres and cylinders."""
    if obj.type_name == "WrapEllipsoid":
        return tuple(float(x) for x in obj.dimensions)
    if obj.type_name == "WrapTorus":
        return float(obj.outer_radius), float(obj.inner_radius)
    return None


def _meets(obj, p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """(N,) whether the segments p1 p2 (obstacle frame) pass inside the wrap object."""
    from osim_emb.paths.scholz import _closest_on_segment
    kind = _KIND[obj.type_name]
    if kind == "ellipsoid":  # the unit sphere after scaling by the radii
        scale = np.asarray(obj.dimensions, dtype=float)
        return np.linalg.norm(_closest_on_segment(p1 / scale, p2 / scale), axis=-1) < 1.0
    if kind == "torus":
        from osim_emb.paths.geodesic import segment_meets, surface_of
        return segment_meets(surface_of(kind, obstacle_radii(obj)), p1, p2)
    flat = np.array([1.0, 1.0, 0.0]) if kind == "cylinder" else np.ones(3)
    return np.linalg.norm(_closest_on_segment(p1 * flat, p2 * flat), axis=-1) < obj.radius


def smooth_path_lengths_and_moment_arms(model, q: Any, muscles: Sequence[str] | None = None
                                        ) -> tuple[np.ndarray, np.ndarray]:
    """L (N, M) and R (N, n_q, M) with every PathWrap taken as a smooth obstacle.

    Each PathWrap acts on the first segment between two (active) path points of its point range
    whose straight line meets the obstacle; the obstacles on one segment are ordered along it and
    the path over them is their joint stationary path, each obstacle on its short side
    (:func:`osim_emb.paths.scholz.span_paths`).  R comes from the package's segment formula with the
    contact points fixed on the obstacles' bodies, so R = -dL/dq.  Ellipsoids and tori: geodesics integrated
    numerically (:mod:`osim_emb.paths.geodesic`), a torus alone on its segment.
    """
    from osim_emb.core.kinematics import forward_kinematics
    from osim_emb.paths.geometry import _body_table, _muscle_list, path_states
    from osim_emb.paths.scholz import (ScholzMusculotendon, ScholzObstacle, ScholzPath, ScholzPoint,
                                       scholz_path_lengths_and_moment_arms)

    q = model.check_configuration(q, tolerance=np.inf)
    kin = forward_kinematics(model, q, order=1)
    body_index, body_frames, body_offsets = _body_table(model)
    bt = kin.transforms[:, body_frames] @ body_offsets
    objects = {w.name: w for w in model.wrap_objects}
    units = _muscle_list(model, muscles)
    n = q.shape[0]
    lengths = np.zeros((n, len(units)))
    arms = np.zeros((n, model.n_q, len(units)))
    nan_hint = np.full(3, np.nan)
    for m, unit in enumerate(units):
        (base,) = path_states(model, q, [unit.name], wrapping=False, kin=kin)
        n_points = len(unit.points)
        wraps = []
        for pw in unit.wraps:
            obj = objects.get(pw.wrap_object)
            if obj is None or not obj.active:
                continue
            if obj.type_name not in _KIND:
                raise ValueError(f"unit {unit.name!r}: smooth wrapping handles spheres, cylinders (closed-form "
                                 f"geodesics), ellipsoids and tori (integrated), not {obj.type_name} {obj.name!r}")
            wraps.append((pw, obj, bt[:, body_index[obj.body]] @ obj.transform_in_body))
        # per configuration: the active points, and for each wrap its segment (index into them) and place on it
        seq = base.sequence  # (N, S) point indices in path order, -1 padded
        segment = np.full((n, len(wraps)), -1)
        place = np.zeros((n, len(wraps)))
        rows = np.arange(n)
        for w, (pw, obj, t) in enumerate(wraps):
            rot, org = t[:, :3, :3], t[:, :3, 3]
            lo, hi = pw.range
            first = 0 if lo < 1 else lo - 1
            last = n_points - 1 if hi < 1 else hi - 1
            for a in range(seq.shape[1] - 1):
                i, j = seq[:, a], seq[:, a + 1]
                todo = (segment[:, w] < 0) & (i >= first) & (i <= last) & (j >= first) & (j <= last) & (j >= 0)
                if not todo.any():
                    continue
                k = rows[todo]
                p1 = np.einsum("nji,nj->ni", rot[k], base.positions[k, i[k]] - org[k])
                p2 = np.einsum("nji,nj->ni", rot[k], base.positions[k, j[k]] - org[k])
                hit = _meets(obj, p1, p2)
                segment[k[hit], w] = a
                d = p2[hit] - p1[hit]
                place[k[hit], w] = -np.einsum("ni,ni->n", p1[hit], d) / np.einsum("ni,ni->n", d, d)
        # one Scholz path per pattern (active points, wraps per segment), evaluated on its configurations
        patterns: dict = {}
        for r in range(n):
            key = (tuple(seq[r]), tuple(segment[r]),
                   tuple(np.argsort(np.where(segment[r] >= 0, segment[r] + 0.5 * np.clip(place[r], 0, 1), np.inf))))
            patterns.setdefault(key, []).append(r)
        for (points, segs, by_place), idx in patterns.items():
            elements = []
            active = [p for p in points if p >= 0]
            for a, pi in enumerate(active):
                pt = unit.points[pi]
                elements.append(ScholzPoint(pt.name, pt.body, pt.location))
                for w in by_place:
                    if segs[w] == a:
                        pw, obj, _ = wraps[w]
                        kind = _KIND[obj.type_name]
                        radii = obstacle_radii(obj)
                        elements.append(ScholzObstacle(
                            obj.name, kind, obj.body, obj.transform_in_body,
                            obj.radius if radii is None else min(radii), nan_hint, radii))
            path_unit = ScholzMusculotendon(unit.name, unit.type_name, (), (), None,
                                            scholz_path=ScholzPath(tuple(elements)))
            idx = np.array(idx)
            sub = _SubKinematics(kin, idx)
            lengths[idx, m], arms[idx, :, m] = scholz_path_lengths_and_moment_arms(model, path_unit, q[idx], sub)
    return lengths, arms


class _SubKinematics:
    """The rows ``idx`` of a FrameKinematics (the attributes the path code reads)."""

    def __init__(self, kin, idx):
        self.transforms = kin.transforms[idx]
        self.jacobian = kin.jacobian[idx]
