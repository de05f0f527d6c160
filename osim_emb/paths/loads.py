"""The loads a path's tension applies, as OpenSim's ``GeometryPath::produceForces`` applies them: body wrenches and the
generalized forces they do work through (the muscles' forces in joint reactions; PathSprings' and Ligaments' forces in
inverse dynamics, static optimization and joint reactions)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from osim_emb.core.kinematics import cross3, forward_kinematics
from osim_emb.model import Model

__all__ = ["path_loads"]


def path_loads(model: Model, q: Any, tensions: Any, muscles: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The loads of path units under tensions (N, m) newtons, as OpenSim applies a path's tension
    (``GeometryPath::produceForces``): between consecutive effective points on different bodies, T e at the first
    point and −T e at the second (e along the segment; a moving point acts on the body it moves on, a tangent point
    on its wrap object's body); a segment between two points of one body applies nothing. Returns the body wrenches
    (N, n_bodies, 6) and the generalized forces (N, n_q) they and the moving points' motion do work through
    (τ = Σ Ξ_fᵀ [p × f; f] over the segment ends, Ξ_f the Jacobian of the point's frame: R T of Eq 195 less the
    same-body segments, which OpenSim leaves out)."""
    from osim_emb.paths.geometry import path_states, point_pairs
    q = np.atleast_2d(np.asarray(q, dtype=float))
    tensions = np.atleast_2d(np.asarray(tensions, dtype=float))
    index = {b.name: i for i, b in enumerate(model.bodies)}
    n = q.shape[0]
    out = np.zeros((n, len(model.bodies), 6))
    tau = np.zeros((n, model.n_q))
    states = path_states(model, q, list(muscles), opensim_compat=True, allow_out_of_range=True)
    jacobian = forward_kinematics(model, q, order=1).jacobian  # (N, frames, nq, 6)
    rows = np.arange(n)
    for m, ps in enumerate(states):
        owner = [p.source_body if p.kind == "moving" else p.body for p in ps.muscle.points]
        owner += ps.slot_bodies[len(owner):]
        owner_id = {name: i for i, name in enumerate(dict.fromkeys(owner))}
        owner_of_slot = np.array([owner_id[b] for b in owner])
        body_of_slot = np.array([index.get(b, -1) for b in owner])
        frame_of_slot = np.asarray(ps.slot_frames, dtype=int)
        pos, dpos = ps.positions, ps.positions if ps.direction_positions is None else ps.direction_positions
        for a, b, ok in point_pairs(ps):
            ok &= owner_of_slot[a] != owner_of_slot[b]
            if not ok.any():
                continue
            e = dpos[rows, b] - dpos[rows, a]
            e /= np.where(ok, np.linalg.norm(e, axis=1), 1.0)[:, None]
            f = np.where(ok[:, None], tensions[:, m:m + 1] * e, 0.0)
            for slot, sign in ((a, 1.0), (b, -1.0)):
                w = np.concatenate([cross3(pos[rows, slot], sign * f), sign * f], axis=1)
                tau += np.einsum("nkc,nc->nk", jacobian[rows, frame_of_slot[slot]], w)
                body = body_of_slot[slot]
                keep = ok & (body >= 0)
                np.add.at(out, (rows[keep], body[keep]), w[keep])
    return out, tau

