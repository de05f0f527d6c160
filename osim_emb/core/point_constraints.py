"""Closed loops of a model's point, line and weld constraints as joint-variable functions f(q) (seed section 3-3,
Eqs 100-120).

OpenSim's ``PointConstraint`` makes a point r_1 fixed in one body coincide with a point r_2 fixed in another:
g = p_1(z) - p_2(z) = 0, three equations in the coordinates z of the tree; ``ConstantDistanceConstraint`` keeps
them a distance d apart (one equation (|p_1 - p_2|^2 - d^2) / 2 = 0); ``PointOnLineConstraint`` keeps the
follower point on a line fixed in the other body (two equations n_i . (p_2 - p_1) = 0 with n_1, n_2 the line's
body-fixed normals, Simbody's PointOnLine); ``WeldConstraint`` makes two body-fixed frames coincide (the origins,
three equations, and the axes: x_1 . y_2 = y_1 . z_2 = z_1 . x_2 = 0, Simbody's ConstantOrientation).  Here m
of those coordinates (as many as the equations) become *dependent*: functions f(q) of the others, solved at every
evaluation by :class:`~osim_emb.core.closed_chains.ClosedChain` (Newton, then gradients and Hessians by the
projection method).  g and its exact first and second derivatives come from the tree's own kinematics
(:func:`osim_emb.core.kinematics.forward_kinematics` with order 2): for a point p fixed in a frame with spatial
Jacobian columns (w_k, v_k), and a body-fixed direction u,

    dp/dz_k = w_k x p + v_k,                d2p/dz_k dz_l = dw_kl x p + dv_kl + w_k x (w_l x p + v_l),
    du/dz_k = w_k x u,                      d2u/dz_k dz_l = dw_kl x u + w_k x (w_l x u),

(dw_kl, dv_kl) = d(w_k, v_k)/dz_l the Jacobian derivative (Eq 57's D'_i, written as a Hessian); every equation is
a difference or a dot product of such vectors.

:func:`choose_dependent_coordinates` picks the dependent coordinates where the user does not: the coordinates
marked ``is_free_to_satisfy_constraints`` first (those OpenSim's assembler moves), then the columns of dg/dz at the
reference configuration chosen by QR with column pivoting (the best-conditioned set first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from osim_emb.core import closed_chain_kernels as CK
from osim_emb.core import kinematics as kin
from osim_emb.core.closed_chains import ClosedChain, HolonomicConstraints, continuation_guess, solve_constraints
from osim_emb.core.functions.program import COORDINATES, ProgramBuilder, node_program_arrays
from osim_emb.core.kinematics_kernels import frame_tree
from osim_emb.model import Model

#: a QR pivot of dg/dz below this fraction of the largest marks the constraints as redundant (numerical rank)
REDUNDANT = 1e-5
#: a constraint Jacobian whose largest pivot is below this (m or m² per rad or m) is zero: a singular configuration
SINGULAR_GRADIENT = 1e-12
#: redundant equations left out of the solve must hold to this (metres; 10 x OpenSim's default assembly accuracy)
CONSISTENT = 1e-8
#: default coordinates whose constraint errors are within this (m; OpenSim's default assembly accuracy) are kept
ASSEMBLY_ACCURACY = 1e-9
#: weight of a coordinate marked free in the assembly's least squares (OpenSim gives it none: a tiny one makes the
#: solution unique where the free coordinates could move in several ways)
FREE_WEIGHT = 1e-10

__all__ = ["PointPair", "PointConstraintLoop", "FrameConstraintData", "RedundantConstraintsError", "point_constraint_jet", "constraint_wrenches", "independent_equations", "choose_dependent_coordinates",
           "assembled_configuration", "point_constraint_chain"]


class RedundantConstraintsError(ValueError):
    """Constraint equations that are (nearly) dependent and cannot be left out exactly."""


@dataclass(frozen=True)
class PointPair:
    """One constraint between r1 (3,) fixed in ``frame1`` and r2 fixed in ``frame2`` (frames of the tree model, points
    in frame coordinates).  Its kind follows from the optional fields:

    * ``point``: they coincide (three equations p1 - p2 = 0);
    * ``distance`` given: they stay that far apart (one equation (|p1 - p2|^2 - distance^2) / 2 = 0);
    * ``line``: ``axes1`` (2, 3), two unit normals of a line through r1 (in frame1 coordinates): p2 stays on the
      line (two equations n_i . (p2 - p1) = 0);
    * ``weld``: ``axes1`` and ``axes2`` (3, 3), the constraint frames' axes (columns) in frame1 and frame2
      coordinates: the frames at r1 and r2 coincide (p1 - p2 = 0 and x1 . y2 = y1 . z2 = z1 . x2 = 0).
    """

    name: str
    frame1: int
    r1: np.ndarray
    frame2: int
    r2: np.ndarray
    distance: float | None = None
    axes1: np.ndarray | None = None
    axes2: np.ndarray | None = None

    @property
    def kind(self) -> str:
        if self.distance is not None:
            return "distance"
        if self.axes2 is not None:
            return "weld"
        return "point" if self.axes1 is None else "line"

    @property
    def n_equations(self) -> int:
        return {"point": 3, "distance": 1, "line": 2, "weld": 6}[self.kind]

    def key(self) -> tuple:
        """Hashable description (chain equality)."""
        def r(a):
            return None if a is None else tuple(np.round(np.asarray(a, dtype=float).ravel(), 15))
        return (self.name, self.kind, self.frame1, r(self.r1), self.frame2, r(self.r2), self.distance,
                r(self.axes1), r(self.axes2))


@dataclass(frozen=True, eq=False)
class PointConstraintLoop:
    """A model's point constraints as its loads need them: the spanning ``tree`` where every coordinate a loop or a
    coupler ties is free, the ``pairs`` on its frames, and the ``equations`` the minimal form solves (indices into
    the pairs' equations; the others are redundant)."""

    tree: Model
    pairs: tuple[PointPair, ...]
    equations: tuple[int, ...]


class FrameConstraintData:
    """The constraints of :func:`point_constraint_chain` packed for the compiled joint-variable program (its
    OP_FRAMECHAIN node, ``compiled_kernels._frame_constraints``; layout ``closed_chain_kernels.FRAME_INTS``,
    ``FRAME_FLOATS``): the spanning tree's joint-variable program (full Hessians) and frame arrays
    (``kinematics_kernels.frame_tree``), the pairs, the equations solved and the order of z = (f, q) in the tree's
    coordinates.  ``compilable`` is False when the tree has a function the program evaluates in Python (the loop is
    then solved in Python, as an external function)."""

    def __init__(self, tree: Model, pairs: Sequence[PointPair], rows: Sequence[int], dependent: Sequence[int],
                 independent: Sequence[int]):
        nz = tree.n_q
        b = ProgramBuilder(nz)
        nodes = [b.compile(joint.variable, COORDINATES) for joint in tree.joints]
        self.compilable = not b.externals and not b.chain_objects
        sub_ints, sub_flts = node_program_arrays(b, nz)
        ft = frame_tree(tree)
        nf = tree.n_frames
        pair_ints: list[int] = []
        pair_flts: list[float] = []
        for pair in pairs:
            kind = CK.PAIR_KINDS[pair.kind][0]
            pair_ints += [kind, pair.frame1, pair.frame2]
            u, v = np.zeros((3, 3)), np.zeros((3, 3))
            if pair.kind == "line":
                u[:2] = pair.axes1
            elif pair.kind == "weld":
                u = np.asarray(pair.axes1, dtype=float).T  # x1, y1, z1
                v = np.asarray(pair.axes2, dtype=float)[:, [1, 2, 0]].T  # y2, z2, x2
            pair_flts += [*np.asarray(pair.r1, dtype=float).tolist(), *np.asarray(pair.r2, dtype=float).tolist(),
                          0.0 if pair.distance is None else float(pair.distance), *u.ravel().tolist(),
                          *v.ravel().tolist()]
        self.n_tree = nz
        self.n_frames = nf
        self.n_pairs = len(pairs)
        self.n_equations = sum(p.n_equations for p in pairs)
        self.perm = [int(k) for k in dependent] + [int(k) for k in independent]
        self.frame_nodes = [0] + [int(n) for n in nodes]
        self.parent = ft.parent.tolist()
        self.revolute = ft.revolute.astype(int).tolist()
        self.tree_floats = np.concatenate([ft.offsets.ravel(), ft.axes.ravel(), ft.skew_axes.ravel(),
                                           ft.skew_axes2.ravel()]).tolist()
        self.pair_ints, self.pair_floats = pair_ints, pair_flts
        self.rows = [int(r) for r in rows]
        self.sub_ints, self.sub_floats = sub_ints.tolist(), sub_flts.tolist()

    def layout(self, head_ints: Sequence[int], head_floats: Sequence[float]) -> tuple[tuple, tuple]:
        """The node's int and float parameters: ``head_ints`` (m, n_q, max Newton iterations, the continuation's max
        iterations) and ``head_floats`` (FRAME_FLOATS of them, then q_ref and f_ref), followed by the packed
        constraints."""
        body = (self.perm + self.frame_nodes + self.parent + self.revolute + self.pair_ints + self.rows)
        ints = list(head_ints) + [self.n_tree, self.n_frames, self.n_pairs, self.n_equations, 0, 0] + body
        floats = list(head_floats) + self.tree_floats + self.pair_floats
        assert len(head_ints) + 6 == CK.FRAME_INTS
        ints[8], ints[9] = len(ints), len(floats)
        return tuple(ints + self.sub_ints), tuple(floats + self.sub_floats)


def _sym(h):
    return 0.5 * (h + np.swapaxes(h, 1, 2))


def _point_jet(k: kin.FrameKinematics, frame: int, r: np.ndarray, order: int):
    """p (N, 3), dp/dz (N, nz, 3), d2p/dz2 (N, nz, nz, 3) of the point r fixed in ``frame``."""
    p = kin.point_positions(k, frame, r)  # (N, 3)
    if order < 1:
        return p, None, None
    xi = k.jacobian[:, frame]  # (N, nz, 6)
    w, v = xi[..., :3], xi[..., 3:]
    jac = kin.cross3(w, p[:, None, :]) + v  # (N, nz, 3): dp/dz_k
    if order < 2:
        return p, jac, None
    dxi = k.jacobian_derivative[:, frame]  # (N, nz, nz, 6): d xi_k / d z_l
    hess = (kin.cross3(dxi[..., :3], p[:, None, None, :]) + dxi[..., 3:]
            + kin.cross3(w[:, :, None, :], jac[:, None, :, :]))  # (N, k, l, 3)
    return p, jac, _sym(hess)


def _direction_jet(k: kin.FrameKinematics, frame: int, u: np.ndarray, order: int):
    """The body-fixed direction u (frame coordinates) in ground, with its derivatives (shapes of _point_jet)."""
    d = np.einsum("nij,j->ni", k.transforms[:, frame, :3, :3], np.asarray(u, dtype=float))
    if order < 1:
        return d, None, None
    w = k.jacobian[:, frame][..., :3]
    jac = kin.cross3(w, d[:, None, :])
    if order < 2:
        return d, jac, None
    dw = k.jacobian_derivative[:, frame][..., :3]
    hess = kin.cross3(dw, d[:, None, None, :]) + kin.cross3(w[:, :, None, :], jac[:, None, :, :])
    return d, jac, _sym(hess)


def _difference(a, b):
    return tuple(None if x is None else x - y for x, y in zip(a, b))


def _dot_jet(a, b):
    """a . b with its derivatives, for two vector jets: (N,), (N, nz), (N, nz, nz) (None where the jets stop)."""
    val = np.einsum("ni,ni->n", a[0], b[0])
    if a[1] is None:
        return val, None, None
    jac = np.einsum("nki,ni->nk", a[1], b[0]) + np.einsum("ni,nki->nk", a[0], b[1])
    if a[2] is None:
        return val, jac, None
    cross_terms = np.einsum("nki,nli->nkl", a[1], b[1])
    hess = (np.einsum("nkli,ni->nkl", a[2], b[0]) + np.einsum("ni,nkli->nkl", a[0], b[2])
            + cross_terms + np.swapaxes(cross_terms, 1, 2))
    return val, jac, hess


def _vector_equations(jet):
    """The three components of a vector jet as equations: (N, 3), (N, 3, nz), (N, 3, nz, nz)."""
    p, j, h = jet
    return p, None if j is None else np.swapaxes(j, 1, 2), None if h is None else np.moveaxis(h, 3, 1)


def _scalar_equations(*jets):
    """Scalar jets stacked as equations."""
    return tuple(None if jets[0][i] is None else np.stack([s[i] for s in jets], axis=1) for i in range(3))


def _pair_equations(k: kin.FrameKinematics, pair: PointPair, order: int):
    p1 = _point_jet(k, pair.frame1, pair.r1, order)
    p2 = _point_jet(k, pair.frame2, pair.r2, order)
    kind = pair.kind
    if kind == "point":
        return _vector_equations(_difference(p1, p2))
    if kind == "distance":
        d = _difference(p1, p2)
        g, gz, gzz = _dot_jet(d, d)
        g = 0.5 * (g - pair.distance ** 2)
        return _scalar_equations((g, None if gz is None else 0.5 * gz, None if gzz is None else 0.5 * gzz))
    if kind == "line":
        d = _difference(p2, p1)
        return _scalar_equations(*(_dot_jet(_direction_jet(k, pair.frame1, n, order), d) for n in pair.axes1))
    axes1 = [_direction_jet(k, pair.frame1, pair.axes1[:, i], order) for i in range(3)]
    axes2 = [_direction_jet(k, pair.frame2, pair.axes2[:, i], order) for i in range(3)]
    position = _vector_equations(_difference(p1, p2))
    rotation = _scalar_equations(_dot_jet(axes1[0], axes2[1]), _dot_jet(axes1[1], axes2[2]),
                                 _dot_jet(axes1[2], axes2[0]))
    return tuple(None if a is None else np.concatenate([a, b], axis=1) for a, b in zip(position, rotation))


def point_constraint_jet(tree: Model, pairs: Sequence[PointPair], z: np.ndarray, order: int = 2):
    """g (N, m), dg/dz (N, m, nz) and d2g/dz2 (N, m, nz, nz) (None above ``order``) of the pairs (their equations in
    order)."""
    k = kin.forward_kinematics(tree, z, order=order)
    eqs = [_pair_equations(k, pair, order) for pair in pairs]
    return tuple(None if eqs[0][i] is None else np.concatenate([e[i] for e in eqs], axis=1) for i in range(3))


def constraint_wrenches(tree: Model, pairs: Sequence[PointPair], equations: Sequence[int], z: np.ndarray,
                        multipliers: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The body wrenches of the constraint forces: for multipliers λ (N, m) of the ``equations`` (generalized force
    (dg/dz)ᵀ λ, the sign of M z̈ = τ + (dg/dz)ᵀ λ), a list of (tree frame, wrench (N, 6) = moment about the ground
    origin, force; in ground), whose virtual work through each frame's Jacobian is (dg/dz)ᵀ λ.  Per equation kind:
    p1 - p2 = 0: λ at p1 on frame 1, -λ at p2 on frame 2; (|d|² - D²)/2 = 0: λ d at p1, -λ d at p2 (d = p1 - p2);
    n_i · (p2 - p1) = 0: f = Σ λ_i n_i at p2 on frame 2 and -f at p2 on frame 1; a · b = 0 with a on frame 1, b on
    frame 2: the moment λ a × b on frame 1, its opposite on frame 2."""
    z = np.atleast_2d(np.asarray(z, dtype=float))
    lam_all = np.zeros((z.shape[0], sum(p.n_equations for p in pairs)))
    lam_all[:, list(equations)] = multipliers
    k = kin.forward_kinematics(tree, z, order=0)
    out, start = [], 0
    for pair in pairs:
        lam = lam_all[:, start:start + pair.n_equations]
        start += pair.n_equations
        p1 = kin.point_positions(k, pair.frame1, pair.r1)
        p2 = kin.point_positions(k, pair.frame2, pair.r2)
        moment1 = np.zeros_like(p1)
        if pair.kind == "line":
            n = np.stack([_direction_jet(k, pair.frame1, u, 0)[0] for u in pair.axes1], axis=1)  # (N, 2, 3)
            f = np.einsum("ni,nij->nj", lam, n)
            out += [(pair.frame1, np.concatenate([kin.cross3(p2, -f), -f], axis=1)),
                    (pair.frame2, np.concatenate([kin.cross3(p2, f), f], axis=1))]
            continue
        f = lam[:, :1] * (p1 - p2) if pair.kind == "distance" else lam[:, :3]
        if pair.kind == "weld":
            for i, (a, b) in enumerate(((0, 1), (1, 2), (2, 0))):
                u = _direction_jet(k, pair.frame1, pair.axes1[:, a], 0)[0]
                v = _direction_jet(k, pair.frame2, pair.axes2[:, b], 0)[0]
                moment1 += lam[:, 3 + i, None] * kin.cross3(u, v)
        out += [(pair.frame1, np.concatenate([kin.cross3(p1, f) + moment1, f], axis=1)),
                (pair.frame2, np.concatenate([-kin.cross3(p2, f) - moment1, -f], axis=1))]
    return out


def independent_equations(tree: Model, pairs: Sequence[PointPair], z_ref: np.ndarray,
                          candidates: Sequence[int]) -> list[int]:
    """The equations (indices into the pairs' equations) kept where some are redundant: a largest set whose rows of
    dg/dz (columns ``candidates``, the free coordinates) at z_ref are independent, by QR with column pivoting of the
    transposed Jacobian (pivots below REDUNDANT of the largest count as dependent).  Every equation when they are
    independent.  The equations left out must hold wherever the kept ones do (OpenSim satisfies redundant
    constraints in the least-squares sense, so a model it assembles has them consistent); :func:`point_constraint_chain`
    checks that at the reference configuration."""
    from scipy.linalg import qr
    _, gz, _ = point_constraint_jet(tree, pairs, np.asarray(z_ref, dtype=float)[None], order=1)
    a = gz[0][:, list(candidates)]
    if a.size == 0:
        return []
    _, r, piv = qr(a.T, pivoting=True, mode="economic")
    d = np.abs(np.diag(r))
    if not d.size or d[0] < SINGULAR_GRADIENT:  # round-off only: no equation constrains the coordinates here
        return []
    rank = int(np.sum(d > REDUNDANT * d[0]))
    return sorted(piv[:rank].tolist())


def assembled_configuration(tree: Model, pairs: Sequence[PointPair], z_default: np.ndarray,
                            equations: Sequence[int] | None = None, free: Sequence[int] = (),
                            max_iterations: int = 100) -> np.ndarray:
    """The default configuration as OpenSim assembles it (``Model::initSystem``): the tree coordinates nearest their
    defaults, in the sum of squared differences over the coordinates not marked ``free`` (OpenSim's assembler gives
    each a CoordinateReference goal of weight 1 and none to a coordinate marked is_free_to_satisfy_constraints), at
    which the constraint equations (all, or the ``equations``) hold.  z_default itself where its constraint errors
    are within ASSEMBLY_ACCURACY (OpenSim leaves it too).

    Sequential quadratic programming from z_default: the steps solve [H G^T; G 0] [dz; lambda] = [-W (z -
    z_default); -g], H the Hessian of the Lagrangian (W + sum lambda_i d2g_i/dz2 with the last multipliers, W alone
    where that is not positive definite on the constraints' tangent space), each shortened (halved) until it
    decreases the l1 merit function 1/2 |W^1/2 (z - z_default)|^2 + rho |g|_1 (rho above the multipliers:
    Han-Powell), so that defaults far off the loop do not send the steps round it (a scaled neck model: 4.7 cm off).
    Where the defaults are far enough for the loop to close on several branches, this is the branch the merit
    descends to, the nearest in the usual case; OpenSim's assembler may end on another.  ValueError where it does
    not converge."""
    from scipy.linalg import null_space
    z0 = np.asarray(z_default, dtype=float)
    n_all = sum(p.n_equations for p in pairs)
    rows = np.arange(n_all) if equations is None else np.asarray(sorted(equations), dtype=int)
    g = point_constraint_jet(tree, pairs, z0[None], order=0)[0][0][rows]
    if rows.size == 0 or np.abs(g).max() <= ASSEMBLY_ACCURACY:
        return z0.copy()
    n, m = z0.size, rows.size
    w = np.ones(n)
    w[list(free)] = FREE_WEIGHT
    kkt = np.zeros((n + m, n + m))

    def errors(z):
        return point_constraint_jet(tree, pairs, z[None], order=0)[0][0][rows]

    def merit(z, g, rho):
        return 0.5 * np.sum(w * (z - z0) ** 2) + rho * np.abs(g).sum()

    z, rho, multipliers = z0.copy(), 0.0, np.zeros(m)
    for _ in range(max_iterations):
        g, gz, gzz = point_constraint_jet(tree, pairs, z[None], order=2)
        g, jac = g[0][rows], gz[0][rows]
        hessian = np.diag(w) + np.einsum("i,ijk->jk", multipliers, gzz[0][rows])
        tangent = null_space(jac, rcond=1e-10)  # the constraints' tangent space
        if tangent.size and np.linalg.eigvalsh(tangent.T @ hessian @ tangent).min() <= 0.0:
            hessian = np.diag(w)
        kkt[:n, :n], kkt[:n, n:], kkt[n:, :n] = hessian, jac.T, jac
        solution = np.linalg.lstsq(kkt, np.concatenate([-w * (z - z0), -g]), rcond=None)[0]
        step, multipliers = solution[:n], solution[n:]
        if np.abs(step).max() <= 1e-13 * max(1.0, np.abs(z).max()) and np.abs(g).max() <= 1e-12:
            return z + step
        rho = max(rho, 2.0 * np.abs(multipliers).max())
        here = merit(z, g, rho)
        slope = np.sum(w * (z - z0) * step) - rho * np.abs(g).sum()  # the merit's derivative along the step
        alpha = 1.0
        while alpha > 1e-3:  # Armijo's condition on the merit
            trial = z + alpha * step
            if merit(trial, errors(trial), rho) <= here + 1e-4 * alpha * slope:
                break
            alpha *= 0.5
        if alpha <= 1e-3 and np.abs(g).max() > ASSEMBLY_ACCURACY:  # a minimum of the merit off the constraints
            raise ValueError(f"the default configuration cannot be assembled: the constraint errors stop decreasing "
                             f"at {np.abs(g).max():.3g} (the constraints cannot all hold near the defaults; OpenSim's "
                             f"initSystem then relaxes them and leaves such errors)")
        z = z + (alpha if alpha > 1e-3 else 1.0) * step  # (no decrease at round-off level: the full step)
    raise ValueError(f"the default configuration cannot be assembled: the constraint errors are "
                     f"{np.abs(g).max():.3g} after {max_iterations} iterations of the least-squares assembly")


def choose_dependent_coordinates(tree: Model, pairs: Sequence[PointPair], z_ref: np.ndarray,
                                 candidates: Sequence[int], equations: Sequence[int] | None = None,
                                 preferred: Sequence[int] = ()) -> list[int]:
    """As many of the ``candidates`` (tree coordinate indices) as there are equations (all, or the ``equations``
    kept by :func:`independent_equations`): QR with column pivoting of dg/dz at z_ref.

    The ``preferred`` candidates (OpenSim's ``is_free_to_satisfy_constraints``) are taken first, as many as their
    columns of dg/dz are independent; the rest is chosen among the others in the complement of their span.
    OpenSim's assembler does the same: it moves the coordinates marked free (and those a coupler makes dependent)
    to satisfy the constraints and keeps every other coordinate at its value, so the model's default start is
    OpenSim's assembled one when the preferred coordinates suffice to close the loops."""
    from scipy.linalg import qr
    _, gz, _ = point_constraint_jet(tree, pairs, np.asarray(z_ref, dtype=float)[None], order=1)
    rows = gz[0] if equations is None else gz[0][list(equations)]
    cand = list(candidates)
    m = rows.shape[0]
    if m == 0:
        raise ValueError("no constraint equation has a non-zero gradient at the default configuration (a singular "
                         "configuration, e.g. a ConstantDistanceConstraint whose two points coincide): set default "
                         "coordinate values at which the constraint holds")
    if len(cand) < m:
        raise ValueError(f"{m} independent constraint equations but only {len(cand)} free coordinates to satisfy them")
    _, r, piv = qr(rows[:, cand], pivoting=True)
    scale = max(np.abs(r[0, 0]), 1e-300)
    rank = int(np.sum(np.abs(np.diag(r)) > REDUNDANT * scale))
    if rank < m:
        raise RedundantConstraintsError(f"the {m} constraint equations are redundant: numerical rank {rank} in the free coordinates "
                         f"at the default configuration (QR pivots {np.abs(np.diag(r))[rank:].tolist()} against "
                         f"{abs(r[0, 0]):.3g}); keep only independent equations (independent_equations)")
    first = [c for c in cand if c in set(preferred)]
    if not first:
        return [cand[i] for i in sorted(piv[:m])]
    chosen = _pivot_columns(rows, first, m, scale)
    if len(chosen) < m:
        basis = np.linalg.qr(rows[:, chosen])[0] if chosen else np.zeros((m, 0))
        others = [c for c in cand if c not in chosen]
        rest = rows[:, others] - basis @ (basis.T @ rows[:, others])
        chosen += _pivot_columns(rest, others, m - len(chosen), scale, columns_are_selected=True)
    return sorted(chosen)


def _pivot_columns(a: np.ndarray, columns: Sequence[int], most: int, scale: float,
                   columns_are_selected: bool = False) -> list[int]:
    """Up to ``most`` of ``columns`` whose columns of ``a`` are independent (QR with column pivoting; a pivot
    counts above REDUNDANT x ``scale``).  ``columns_are_selected``: ``a`` holds only those columns already."""
    from scipy.linalg import qr
    sub = a if columns_are_selected else a[:, list(columns)]
    _, r, piv = qr(sub, pivoting=True)
    d = np.abs(np.diag(r))
    k = min(most, int(np.sum(d > REDUNDANT * scale)))
    return [columns[i] for i in piv[:k]]


def point_constraint_chain(tree: Model, pairs: Sequence[PointPair], dependent: Sequence[int], z_ref: np.ndarray,
                           coordinate_range=None, name: str = "point constraints",
                           equations: Sequence[int] | None = None) -> ClosedChain:
    """The :class:`ClosedChain` of the dependent tree coordinates ``dependent`` as functions of the others (in tree
    order): Newton from a continuation guess out of the reference configuration z_ref (its dependent values solved
    first, from z_ref as given), derivatives by the projection method.  ``equations``: the independent equations
    solved (default all); the others must hold (|g| <= CONSISTENT) at the solved reference configuration and around
    it (:func:`_check_left_out_equations`), else ValueError."""
    z_ref = np.asarray(z_ref, dtype=float)
    n_all = sum(p.n_equations for p in pairs)
    rows = np.arange(n_all) if equations is None else np.asarray(sorted(equations), dtype=int)
    full = rows.size == n_all
    nz = tree.n_q
    dep = np.asarray(dependent, dtype=int)
    ind = np.array([k for k in range(nz) if k not in set(dep.tolist())], dtype=int)

    def combined(f, q, order):
        z = np.empty((f.shape[0], nz))
        z[:, dep] = f
        z[:, ind] = q
        g, gz, gzz = point_constraint_jet(tree, pairs, z, order)
        if not full:
            g, gz, gzz = g[:, rows], None if gz is None else gz[:, rows], None if gzz is None else gzz[:, rows]
        if order < 1:
            return g, None, None, None, None, None
        gf, gq = gz[:, :, dep], gz[:, :, ind]
        if order < 2:
            return g, gf, gq, None, None, None
        return (g, gf, gq, gzz[:, :, dep][:, :, :, dep], gzz[:, :, dep][:, :, :, ind],
                gzz[:, :, ind][:, :, :, ind])

    _, gz, _ = point_constraint_jet(tree, pairs, z_ref[None], order=1)
    sv = np.linalg.svd(gz[0][rows][:, dep], compute_uv=False)
    if not sv[-1] > REDUNDANT * sv[0]:
        raise ValueError(f"the dependent coordinates {[tree.coordinate_names[k] for k in dep]} cannot satisfy the "
                         f"constraints: dg/df is (nearly) singular at the reference configuration (singular values "
                         f"{sv.tolist()})")
    names = tree.coordinate_names
    constraints = HolonomicConstraints(
        name, len(dep), len(ind), residual=lambda f, q: combined(f, q, 0)[0],
        variable_names=tuple(names[k] for k in dep), coordinate_names=tuple(names[k] for k in ind),
        coordinate_range=coordinate_range, length_scale=1.0, combined=combined,
        frames=FrameConstraintData(tree, pairs, rows, dep, ind),
        key=("point constraints", tuple(p.key() for p in pairs), tuple(rows.tolist()),
             tuple(names), tuple(dep.tolist()), tuple(np.round(z_ref, 15))))
    q_ref = z_ref[ind][None]
    f_ref = solve_constraints(constraints, q_ref, z_ref[dep][None], check_range=False)
    chain = ClosedChain(constraints, continuation_guess(constraints, q_ref, f_ref), check_range=False)
    if not full:
        _check_left_out_equations(tree, pairs, chain, rows, dep, ind, z_ref, f_ref, coordinate_range)
    return chain


def _check_left_out_equations(tree, pairs, chain, rows, dep, ind, z_ref, f_ref, coordinate_range, samples=8):
    """The equations left out as redundant must hold wherever the kept ones do: checked at the solved reference
    configuration and at ``samples`` configurations spread over 5 % of the free coordinates' ranges around it
    (fixed seed; those the loop cannot reach are skipped).  Nearly redundant equations (a planar model with an
    out-of-plane offset) fail here: ValueError naming the largest residual."""
    n_all = sum(p.n_equations for p in pairs)
    dropped = np.setdiff1d(np.arange(n_all), rows)
    q_ref = z_ref[ind]
    if coordinate_range is not None:
        span = np.diff(np.asarray(coordinate_range, dtype=float), axis=1)[:, 0]
        lo, hi = np.asarray(coordinate_range, dtype=float).T
    else:
        span, lo, hi = np.full(q_ref.shape, 2.0), np.full(q_ref.shape, -np.inf), np.full(q_ref.shape, np.inf)
    rng = np.random.default_rng(0)
    qs = [q_ref] + [np.clip(q_ref + 0.05 * span * rng.uniform(-1, 1, q_ref.shape), lo, hi) for _ in range(samples)]
    worst, at = 0.0, None
    for q in qs:
        try:
            f = f_ref[0] if q is q_ref else chain.solve(q[None])[0]
        except ValueError:
            continue
        z = z_ref[None].copy()
        z[0, dep] = f
        z[0, ind] = q
        left = np.abs(point_constraint_jet(tree, pairs, z, order=0)[0][0, dropped])
        if left.max() > worst:
            worst, at = float(left.max()), q
    if worst > CONSISTENT:
        names = tree.coordinate_names
        raise RedundantConstraintsError(f"the constraint equations {dropped.tolist()} are nearly, not exactly, redundant: left out of "
                         f"the solve they reach {worst:.3g} (limit {CONSISTENT:g}) at "
                         f"{dict(zip([names[k] for k in ind], np.round(at, 4).tolist()))}; OpenSim satisfies such "
                         "constraints in the least-squares sense, the minimal-coordinate form needs independent ones")
