"""Smooth wrapping: exact shortest paths over sphere and cylinder obstacles, in closed form (issue 13, item 2).

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
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["sphere_shortest_path", "cylinder_shortest_path", "smooth_path_lengths_and_moment_arms"]


def _circle_tangents(p1: np.ndarray, p2: np.ndarray, radius: float, normal: np.ndarray):
    """Tangent points on the circle of ``radius`` (centre 0) in the plane of p1, p2 (normal ``normal``),
    going from p1 round towards p2: (t1, t2, theta, wrapped) with theta the arc angle."""
    d1 = np.linalg.norm(p1, axis=-1)
    d2 = np.linalg.norm(p2, axis=-1)
    u1 = p1 / d1[:, None]
    u2 = p2 / d2[:, None]
    a1 = np.arccos(np.clip(radius / d1, -1.0, 1.0))
    a2 = np.arccos(np.clip(radius / d2, -1.0, 1.0))
    angle = np.arctan2(np.einsum("ni,ni->n", np.cross(u1, u2), normal), np.einsum("ni,ni->n", u1, u2))
    theta = angle - a1 - a2
    t1 = radius * (np.cos(a1)[:, None] * u1 + np.sin(a1)[:, None] * np.cross(normal, u1))
    t2 = radius * (np.cos(a2)[:, None] * u2 - np.sin(a2)[:, None] * np.cross(normal, u2))
    return t1, t2, theta, theta > 0


def _plane_normal(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    n = np.cross(p1, p2)
    norm = np.linalg.norm(n, axis=-1)
    fallback = np.cross(p1, np.where(np.abs(p1[:, :1]) < 0.9, [[1.0, 0, 0]], [[0, 1.0, 0]]))
    n = np.where(norm[:, None] > 1e-14, n, fallback)  # P1, O, P2 in line: any plane through them
    return n / np.linalg.norm(n, axis=-1)[:, None]


def sphere_shortest_path(p1: Any, p2: Any, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shortest paths p1[k] -> p2[k] ((N, 3), sphere frame) outside the ball: (length, t1, t2, wrapped).

    Where the straight segment misses the ball, length = |p2 - p1| and t1 = t2 = NaN.
    Raises where an end point is inside the sphere (no such path).
    """
    p1 = np.atleast_2d(np.asarray(p1, dtype=float))
    p2 = np.atleast_2d(np.asarray(p2, dtype=float))
    if np.any(np.linalg.norm(p1, axis=-1) < radius) or np.any(np.linalg.norm(p2, axis=-1) < radius):
        raise ValueError("a path point is inside the wrap sphere: no shortest path around it")
    t1, t2, theta, wrapped = _circle_tangents(p1, p2, radius, _plane_normal(p1, p2))
    wrapped_length = (np.linalg.norm(t1 - p1, axis=-1) + np.linalg.norm(p2 - t2, axis=-1) + radius * theta)
    length = np.where(wrapped, wrapped_length, np.linalg.norm(p2 - p1, axis=-1))
    nan = np.full_like(t1, np.nan)
    return length, np.where(wrapped[:, None], t1, nan), np.where(wrapped[:, None], t2, nan), wrapped


def cylinder_shortest_path(p1: Any, p2: Any, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shortest paths p1[k] -> p2[k] ((N, 3), cylinder frame, axis z, infinite) outside the cylinder.

    (length, t1, t2, wrapped) as :func:`sphere_shortest_path`; the wrapped part is a helix.
    """
    p1 = np.atleast_2d(np.asarray(p1, dtype=float))
    p2 = np.atleast_2d(np.asarray(p2, dtype=float))
    q1 = p1 * [1.0, 1.0, 0.0]
    q2 = p2 * [1.0, 1.0, 0.0]
    if np.any(np.linalg.norm(q1, axis=-1) < radius) or np.any(np.linalg.norm(q2, axis=-1) < radius):
        raise ValueError("a path point is inside the wrap cylinder: no shortest path around it")
    side = np.sign(np.cross(q1, q2)[:, 2])
    normal = np.zeros_like(p1)
    normal[:, 2] = np.where(side == 0, 1.0, side)  # the shorter way round
    t1, t2, theta, wrapped = _circle_tangents(q1, q2, radius, normal)
    s1 = np.linalg.norm(t1 - q1, axis=-1)
    arc = radius * theta
    planar = s1 + arc + np.linalg.norm(q2 - t2, axis=-1)
    dz = p2[:, 2] - p1[:, 2]
    safe = np.where(planar > 0, planar, 1.0)
    t1[:, 2] = p1[:, 2] + dz * s1 / safe
    t2[:, 2] = p1[:, 2] + dz * (s1 + arc) / safe
    length = np.where(wrapped, np.hypot(planar, dz), np.linalg.norm(p2 - p1, axis=-1))
    nan = np.full_like(t1, np.nan)
    return length, np.where(wrapped[:, None], t1, nan), np.where(wrapped[:, None], t2, nan), wrapped


_SHORTEST = {"WrapSphere": sphere_shortest_path, "WrapCylinder": cylinder_shortest_path}


def smooth_path_lengths_and_moment_arms(model, q: Any, muscles: Sequence[str] | None = None
                                        ) -> tuple[np.ndarray, np.ndarray]:
    """L (N, M) and R (N, n_q, M) with every sphere and cylinder PathWrap taken as a smooth obstacle.

    Each PathWrap in turn wraps the first segment between two path points of its point range
    (active points only) that meets the obstacle, with the exact shortest path; R comes from the
    package's segment formula (:mod:`osim_emb.paths.geometry`) with the tangent points fixed on
    the obstacle's body, so R = -dL/dq.  Other wrap types raise.  One obstacle per segment: where
    two obstacles would share a segment the path is not the joint shortest path.
    """
    from osim_emb.core.kinematics import body_transforms, forward_kinematics
    from osim_emb.paths.geometry import PathState, _moment_arm_of_path, _muscle_list, path_states

    q = model.check_configuration(q, tolerance=np.inf)
    kin = forward_kinematics(model, q, order=1)
    bt = body_transforms(model, kin)
    body_index = {b.name: k for k, b in enumerate(model.bodies)}
    objects = {w.name: w for w in model.wrap_objects}
    units = _muscle_list(model, muscles)
    n = q.shape[0]
    lengths = np.zeros((n, len(units)))
    arms = np.zeros((n, model.n_q, len(units)))
    for m, unit in enumerate(units):
        (base,) = path_states(model, q, [unit.name], wrapping=False, kin=kin)
        n_points = len(unit.points)
        positions = [base.positions]
        frames = list(base.slot_frames)
        seq = base.sequence.copy()  # (N, S) slot indices in path order, -1 padded
        arc = np.zeros(n)  # wrapped arc/helix lengths, summed
        first_tangents = []
        rows = np.arange(n)
        for pw in unit.wraps:
            obj = objects.get(pw.wrap_object)
            if obj is None or not obj.active:
                continue
            if obj.type_name not in _SHORTEST:
                raise ValueError(f"unit {unit.name!r}: smooth wrapping handles spheres and cylinders, not "
                                 f"{obj.type_name} {obj.name!r}")
            t = bt[:, body_index[obj.body]] @ obj.transform_in_body  # (N, 4, 4) wrap frame -> ground
            rot, org = t[:, :3, :3], t[:, :3, 3]
            lo, hi = pw.range
            first = 0 if lo < 1 else lo - 1
            last = n_points - 1 if hi < 1 else hi - 1
            slot = sum(p.shape[1] for p in positions)
            tang = np.full((n, 2, 3), np.nan)
            insert_after = np.full(n, -1)
            for a in range(seq.shape[1] - 1):  # the first segment of the range that meets the obstacle
                i, j = seq[:, a], seq[:, a + 1]
                todo = ((insert_after < 0) & (i >= first) & (i <= last) & (j >= first) & (j <= last)
                        & (i < n_points) & (j < n_points))
                if not todo.any():
                    continue
                k = rows[todo]
                p1 = np.einsum("nji,nj->ni", rot[k], base.positions[k, i[k]] - org[k])
                p2 = np.einsum("nji,nj->ni", rot[k], base.positions[k, j[k]] - org[k])
                length, t1, t2, wrapped = _SHORTEST[obj.type_name](p1, p2, obj.radius)
                k, t1, t2 = k[wrapped], t1[wrapped], t2[wrapped]
                tang[k, 0] = np.einsum("nij,nj->ni", rot[k], t1) + org[k]
                tang[k, 1] = np.einsum("nij,nj->ni", rot[k], t2) + org[k]
                arc[k] += (length[wrapped] - np.linalg.norm(t1 - p1[wrapped], axis=-1)
                           - np.linalg.norm(p2[wrapped] - t2, axis=-1))
                insert_after[k] = a
            # insert the tangent slots after the wrapped segment's first point
            col = np.arange(seq.shape[1] + 2)[None, :]
            at = insert_after[:, None]
            shifted = np.concatenate([seq, np.full((n, 2), -1)], axis=1)
            back = np.concatenate([np.full((n, 2), -1), seq], axis=1)
            new = np.where((at < 0) | (col <= at), shifted, np.where(col == at + 1, slot,
                                                                      np.where(col == at + 2, slot + 1, back)))
            seq = new
            first_tangents.append(slot)
            positions.append(tang)
            frames += [model.bodies[body_index[obj.body]].frame] * 2
        allpos = np.concatenate(positions, axis=1)
        pts = np.take_along_axis(allpos, np.where(seq < 0, 0, seq)[..., None], axis=1)
        seg = np.linalg.norm(pts[:, 1:] - pts[:, :-1], axis=-1)
        straight = (seq[:, :-1] >= 0) & (seq[:, 1:] >= 0) & ~np.isin(seq[:, :-1], first_tangents)
        lengths[:, m] = np.sum(np.where(straight, seg, 0.0), axis=1) + arc
        state = PathState(unit, seq, np.array(frames), [], allpos, lengths[:, m])
        arms[:, :, m] = _moment_arm_of_path(model, kin, state)
    return lengths, arms
