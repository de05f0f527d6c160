"""Closed loops of a model's point constraints as joint-variable functions f(q) (seed section 3-3, Eqs 100-120).

OpenSim's ``PointConstraint`` makes a point r_1 fixed in one body coincide with a point r_2 fixed in another:
g = p_1(z) - p_2(z) = 0, three equations in the coordinates z of the tree.  Here m of those coordinates (three per
constraint) become *dependent*: functions f(q) of the others, solved at every evaluation by
:class:`~osim_emb.core.closed_chains.ClosedChain` (Newton, then gradients and Hessians by the projection
method).  g and its exact first and second derivatives come from the tree's own kinematics
(:func:`osim_emb.core.kinematics.forward_kinematics` with order 2): for a point p fixed in a frame with spatial
Jacobian columns (w_k, v_k),

    dp/dz_k = w_k x p + v_k,
    d2p/dz_k dz_l = dw_kl x p + dv_kl + w_k x (w_l x p + v_l),

(dw_kl, dv_kl) = d(w_k, v_k)/dz_l the Jacobian derivative (Eq 57's D'_i, written as a Hessian).

:func:`choose_dependent_coordinates` picks the dependent coordinates where the user does not: the columns of
dg/dz at the reference configuration chosen by QR with column pivoting (the best-conditioned set first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from osim_emb.core import kinematics as kin
from osim_emb.core.closed_chains import ClosedChain, HolonomicConstraints, continuation_guess, solve_constraints
from osim_emb.model import Model

#: a QR pivot of dg/dz below this fraction of the largest marks the constraints as redundant (numerical rank)
REDUNDANT = 1e-5

__all__ = ["PointPair", "point_constraint_jet", "choose_dependent_coordinates", "point_constraint_chain"]


@dataclass(frozen=True)
class PointPair:
    """One constraint between r1 (3,) fixed in ``frame1`` and r2 fixed in ``frame2`` (frames of the tree model, points
    in frame coordinates): ``distance`` None, they coincide (three equations p1 - p2 = 0); else they stay that far
    apart (one equation (|p1 - p2|^2 - distance^2) / 2 = 0, OpenSim's ConstantDistanceConstraint)."""

    name: str
    frame1: int
    r1: np.ndarray
    frame2: int
    r2: np.ndarray
    distance: float | None = None

    @property
    def n_equations(self) -> int:
        return 3 if self.distance is None else 1


def _point_jet(k: kin.FrameKinematics, frame: int, r: np.ndarray, order: int):
    p = kin.point_positions(k, frame, r)  # (N, 3)
    if order < 1:
        return p, None, None
    xi = k.jacobian[:, frame]  # (N, nz, 6)
    w, v = xi[..., :3], xi[..., 3:]
    jac = np.cross(w, p[:, None, :]) + v  # (N, nz, 3): dp/dz_k
    if order < 2:
        return p, jac, None
    dxi = k.jacobian_derivative[:, frame]  # (N, nz, nz, 6): d xi_k / d z_l
    hess = (np.cross(dxi[..., :3], p[:, None, None, :]) + dxi[..., 3:]
            + np.cross(w[:, :, None, :], jac[:, None, :, :]))  # (N, k, l, 3)
    return p, jac, 0.5 * (hess + np.swapaxes(hess, 1, 2))


def point_constraint_jet(tree: Model, pairs: Sequence[PointPair], z: np.ndarray, order: int = 2):
    """g (N, m), dg/dz (N, m, nz) and d2g/dz2 (N, m, nz, nz) (None above ``order``) of the pairs (their equations in
    order)."""
    k = kin.forward_kinematics(tree, z, order=order)
    g, gz, gzz = [], [], []
    for pair in pairs:
        p1, j1, h1 = _point_jet(k, pair.frame1, pair.r1, order)
        p2, j2, h2 = _point_jet(k, pair.frame2, pair.r2, order)
        d = p1 - p2  # (N, 3); its derivatives (N, nz, 3) and (N, nz, nz, 3)
        dj = None if j1 is None else j1 - j2
        dh = None if h1 is None else h1 - h2
        if pair.distance is None:
            g.append(d)
            if order >= 1:
                gz.append(np.swapaxes(dj, 1, 2))
            if order >= 2:
                gzz.append(np.moveaxis(dh, 3, 1))
            continue
        g.append(0.5 * (np.einsum("ni,ni->n", d, d) - pair.distance ** 2)[:, None])
        if order >= 1:
            gz.append(np.einsum("ni,nki->nk", d, dj)[:, None, :])
        if order >= 2:
            gzz.append((np.einsum("nki,nli->nkl", dj, dj) + np.einsum("ni,nkli->nkl", d, dh))[:, None])
    return (np.concatenate(g, axis=1), np.concatenate(gz, axis=1) if order >= 1 else None,
            np.concatenate(gzz, axis=1) if order >= 2 else None)


def choose_dependent_coordinates(tree: Model, pairs: Sequence[PointPair], z_ref: np.ndarray,
                                 candidates: Sequence[int]) -> list[int]:
    """m of the ``candidates`` (tree coordinate indices): QR with column pivoting of dg/dz at z_ref."""
    from scipy.linalg import qr
    _, gz, _ = point_constraint_jet(tree, pairs, np.asarray(z_ref, dtype=float)[None], order=1)
    cand = list(candidates)
    m = gz.shape[1]
    if len(cand) < m:
        raise ValueError(f"{m} constraint equations but only {len(cand)} free coordinates to satisfy them")
    _, r, piv = qr(gz[0][:, cand], pivoting=True)
    rank = int(np.sum(np.abs(np.diag(r)) > REDUNDANT * max(np.abs(r[0, 0]), 1e-300)))
    if rank < m:
        raise ValueError(f"the {m} constraint equations are redundant: numerical rank {rank} in the free coordinates "
                         f"at the default configuration (QR pivots {np.abs(np.diag(r))[rank:].tolist()} against "
                         f"{abs(r[0, 0]):.3g}); OpenSim satisfies redundant constraints in the least-squares sense, "
                         "the minimal-coordinate form needs independent ones")
    return [cand[i] for i in sorted(piv[:m])]


def point_constraint_chain(tree: Model, pairs: Sequence[PointPair], dependent: Sequence[int], z_ref: np.ndarray,
                           coordinate_range=None, name: str = "point constraints") -> ClosedChain:
    """The :class:`ClosedChain` of the dependent tree coordinates ``dependent`` as functions of the others (in tree
    order): Newton from a continuation guess out of the reference configuration z_ref (its dependent values solved
    first, from z_ref as given), derivatives by the projection method."""
    z_ref = np.asarray(z_ref, dtype=float)
    nz = tree.n_q
    dep = np.asarray(dependent, dtype=int)
    ind = np.array([k for k in range(nz) if k not in set(dep.tolist())], dtype=int)

    def combined(f, q, order):
        z = np.empty((f.shape[0], nz))
        z[:, dep] = f
        z[:, ind] = q
        g, gz, gzz = point_constraint_jet(tree, pairs, z, order)
        if order < 1:
            return g, None, None, None, None, None
        gf, gq = gz[:, :, dep], gz[:, :, ind]
        if order < 2:
            return g, gf, gq, None, None, None
        return (g, gf, gq, gzz[:, :, dep][:, :, :, dep], gzz[:, :, dep][:, :, :, ind],
                gzz[:, :, ind][:, :, :, ind])

    _, gz, _ = point_constraint_jet(tree, pairs, z_ref[None], order=1)
    sv = np.linalg.svd(gz[0][:, dep], compute_uv=False)
    if not sv[-1] > REDUNDANT * sv[0]:
        raise ValueError(f"the dependent coordinates {[tree.coordinate_names[k] for k in dep]} cannot satisfy the "
                         f"constraints: dg/df is (nearly) singular at the reference configuration (singular values "
                         f"{sv.tolist()})")
    names = tree.coordinate_names
    constraints = HolonomicConstraints(
        name, len(dep), len(ind), residual=lambda f, q: combined(f, q, 0)[0],
        variable_names=tuple(names[k] for k in dep), coordinate_names=tuple(names[k] for k in ind),
        coordinate_range=coordinate_range, length_scale=1.0, combined=combined,
        key=("point constraints", tuple((p.name, p.frame1, tuple(np.round(p.r1, 15)), p.frame2,
                                          tuple(np.round(p.r2, 15)), p.distance) for p in pairs),
             tuple(names), tuple(dep.tolist()), tuple(np.round(z_ref, 15))))
    q_ref = z_ref[ind][None]
    f_ref = solve_constraints(constraints, q_ref, z_ref[dep][None], check_range=False)
    return ClosedChain(constraints, continuation_guess(constraints, q_ref, f_ref), check_range=False)
