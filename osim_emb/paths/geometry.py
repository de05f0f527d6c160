"""Musculotendon lengths L(q) and the closed-form moment-arm matrix R(q) (seed section 4, Eqs 149-195).

For the k-th unit, the path at a configuration is a sequence of *effective
points*, each fixed on a body of the attachment sequence Gamma_k (Definition 2):
the active path points (a MovingPathPoint is the origin of its zero-inertia
body) and, where the path wraps, the two tangent points of each wrap object,
taken as points fixed on the wrap object's body.  Between consecutive
effective points P_a (body a) and P_b (body b) the unit tension acts along
e_ab = (P_b - P_a)/|P_b - P_a|: +e_ab on body a at P_a and -e_ab on body b at
P_b.  Summed per body these are the generalized musculotendon line of action
E_ki (Definition 3) and its moment E^_ki (Definition 4); the virtual work
(Eqs 161-192) gives

    R_.k = sum_{i in Gamma_k} gamma_i E_ki + J^T theta sum_{i in Gamma_k} beta_i E^_ki          (Eq 195)

which this module evaluates in the ground frame for a batch of configurations:

    R_.k = sum_segments  [ J_a^T e_ab - J_b^T e_ab ],   J_p[:, k] = omega_k x p + v_k,

with (omega_k, v_k) the spatial Jacobian columns of the body's frame.  Points
on the same body cancel exactly, as in the seed.  Where the path geometry is
exact (no wrapping, or wraps whose arc lies on one body), R = -dL/dq.  The
literal body-frame form of Eq 195 (gamma_i of Eq 176, beta_i of Eq 179) is in
:func:`moment_arms_eq195` and is used as a reference in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from osim_emb.core._accel import use_jit
from osim_emb.core.configuration import as_configuration
from osim_emb.core.kinematics import FrameKinematics, forward_kinematics, joint_variables
from osim_emb.model import Model
from osim_emb.paths.musculotendon import Musculotendon

__all__ = [
    "PathState",
    "path_states",
    "muscle_lengths",
    "moment_arms",
    "lengths_and_moment_arms",
    "moment_arm_table",
    "oriented_attachment_sequence",
    "moment_arms_eq195",
]


@dataclass
class PathState:
    """One unit's path over a batch: effective points in order, their frames and ground positions."""

    muscle: Musculotendon
    sequence: np.ndarray  # (N, S) slot indices in path order, -1 padded
    slot_frames: np.ndarray  # (n_slots,) frame index of each slot's body
    slot_bodies: list[str]  # (n_slots,) body names
    positions: np.ndarray  # (N, n_slots, 3) ground positions (NaN where a slot is unused)
    length: np.ndarray  # (N,)
    wrap_length: np.ndarray | None = None  # (N, W)
    wrapped: np.ndarray | None = None  # (N, W)
    tangent_points: np.ndarray | None = None  # (N, W, 2, 3) in the wrap frames
    #: (N, n_slots, 3) positions that set the directions of the lines of action, where they differ from
    #: ``positions`` (opensim_compat: OpenSim's stale ground positions of tangent points)
    direction_positions: np.ndarray | None = None


def _muscle_list(model: Model, muscles: Sequence[str] | None) -> list[Musculotendon]:
    if muscles is None:
        return list(model.muscles)
    by_name = {m.name: m for m in model.muscles}
    out = []
    for n in muscles:
        if n not in by_name:
            raise KeyError(f"no musculotendon unit named {n!r} in model {model.name!r}")
        out.append(by_name[n])
    return out


def _body_table(model: Model) -> tuple[dict, np.ndarray, np.ndarray]:
    """Body name -> row, and each row's frame and frame-to-body transform: the model's bodies, then
    the ground (frame 0, identity), on which path points, offset frames and wrap objects may sit."""
    index = {b.name: k for k, b in enumerate(model.bodies)}
    frames = [b.frame for b in model.bodies]
    offsets = [np.asarray(b.frame_to_body, dtype=float) for b in model.bodies]
    for g in _ground_names(model):
        if g not in index:
            index[g] = len(frames)
            frames.append(0)
            offsets.append(np.eye(4))
    return index, np.array(frames, dtype=np.int64), np.stack(offsets) if offsets else np.zeros((0, 4, 4))


def _ground_names(model: Model) -> tuple[str, ...]:
    """Names under which a path may refer to the ground: 'ground' and the source document's ground body."""
    names = ["ground"]
    doc = model.extras.get("document") if isinstance(model.extras, dict) else None
    for g in (model.extras.get("ground") if isinstance(model.extras, dict) else None, getattr(doc, "ground", None)):
        if g and g not in names:
            names.append(g)
    return tuple(names)


def path_states(model: Model, q: Any, muscles: Sequence[str] | None = None, *, wrapping: bool = True,
                opensim_compat: bool = False, kin: FrameKinematics | None = None,
                allow_out_of_range: bool = False) -> list[PathState]:
    """Effective path points and lengths of the units at a batch of configurations.

    ``q``: see :func:`osim_emb.core.configuration.as_configuration` (array, DataFrame, Series or dict;
    checked against the coordinate ranges unless ``allow_out_of_range``)."""
    q = as_configuration(model, q, allow_out_of_range=allow_out_of_range)
    if kin is None:
        kin = forward_kinematics(model, q, order=1)
    body_index, body_frames, body_offsets = _body_table(model)
    bt = kin.transforms[:, body_frames] @ body_offsets  # (N, nb + ground, 4, 4), as body_transforms
    wraps_by_name = {w.name: w for w in model.wrap_objects}
    n = q.shape[0]
    out = []
    cache: dict = {}
    for mu in _muscle_list(model, muscles):
        if not mu.points:
            raise ValueError(f"unit {mu.name!r} has no path points (a FunctionBasedPath): use lengths_and_moment_arms")
        p = len(mu.points)
        bi = np.array([body_index[pt.body] for pt in mu.points])
        t = bt[:, bi]  # (N, P, 4, 4)
        loc = np.stack([pt.location for pt in mu.points])
        pos = np.einsum("npij,pj->npi", t[..., :3, :3], loc) + t[..., :3, 3]
        active = np.ones((n, p), dtype=bool)
        for k, pt in enumerate(mu.points):
            if pt.kind == "conditional":
                v = pt.condition.evaluate(q, 0, cache).value
                lo, hi = pt.active_range
                active[:, k] = (v >= lo - 1e-5) & (v <= hi + 1e-5)
        frames = [int(body_frames[b]) for b in bi]
        bodies = [pt.body for pt in mu.points]
        wraps = [w for w in mu.wraps if w.wrap_object in wraps_by_name and wraps_by_name[w.wrap_object].active]
        if wrapping and wraps:
            from osim_emb.paths.wrapping.path import PathWrapSpec, wrap_path
            objs = [wraps_by_name[w.wrap_object] for w in wraps]
            wt = np.stack([bt[:, body_index[o.body]] @ o.transform_in_body for o in objs], axis=1)  # (N, W, 4, 4)
            specs = [PathWrapSpec(o, w.method, tuple(w.range)) for o, w in zip(objs, wraps)]
            wp = wrap_path(pos, active, wt, specs, opensim_compat=opensim_compat)
            tp = wp.tangent_points  # (N, W, 2, 3) wrap frame
            tpg = np.einsum("nwij,nwsj->nwsi", wt[..., :3, :3], tp) + wt[..., None, :3, 3]
            positions = np.concatenate([pos, tpg.reshape(n, -1, 3)], axis=1)
            for o in objs:
                frames += [int(body_frames[body_index[o.body]])] * 2
                bodies += [o.body, o.body]
            dirpos = None
            if wp.queried_ground is not None:
                dirpos = np.concatenate([pos, np.where(np.isnan(wp.queried_ground), tpg, wp.queried_ground)
                                         .reshape(n, -1, 3)], axis=1)
            out.append(PathState(mu, wp.sequence, np.array(frames), bodies, positions, wp.length,
                                 wp.wrap_length, wp.wrapped, tp, dirpos))
            continue
        # no wrapping: the active points in order
        order = np.argsort(~active, axis=1, kind="stable")
        seq = np.where(np.take_along_axis(active, order, axis=1), order, -1)
        out.append(PathState(mu, seq, np.array(frames), bodies, pos, _polyline_length(pos, seq)))
    return out


def _gather(positions: np.ndarray, seq: np.ndarray) -> np.ndarray:
    idx = np.where(seq < 0, 0, seq)
    return np.take_along_axis(positions, idx[..., None], axis=1)


def _polyline_length(positions: np.ndarray, seq: np.ndarray) -> np.ndarray:
    pts = _gather(positions, seq)
    valid = (seq[:, :-1] >= 0) & (seq[:, 1:] >= 0)
    seg = np.linalg.norm(pts[:, 1:] - pts[:, :-1], axis=-1)
    return np.sum(np.where(valid, seg, 0.0), axis=1)


def _moment_arm_of_path(model: Model, kin: FrameKinematics, ps: PathState) -> np.ndarray:
    """R column (N, n_q) of one unit: sum over segments of J_a^T e - J_b^T e (Eq 195 in ground form)."""
    seq = ps.sequence
    pts = _gather(ps.positions, seq)  # (N, S, 3) where the unit forces act
    dpts = pts if ps.direction_positions is None else _gather(ps.direction_positions, seq)
    a, b = seq[:, :-1], seq[:, 1:]
    valid = (a >= 0) & (b >= 0)
    frame_of = ps.slot_frames[np.where(seq < 0, 0, seq)]  # (N, S)
    fa, fb = frame_of[:, :-1], frame_of[:, 1:]
    valid &= fa != fb  # a segment between two points of one body (a wrap arc, say) exerts no net load
    d = dpts[:, 1:] - dpts[:, :-1]
    ln = np.linalg.norm(d, axis=-1)
    e = np.where(valid[..., None], d / np.where(ln > 0, ln, 1.0)[..., None], 0.0)
    # unit force on each effective point: towards the next point, and towards the previous one
    force = np.zeros_like(pts)
    force[:, :-1] += e
    force[:, 1:] -= e
    # wrench (moment about the ground origin, force) summed per frame, then J^T wrench
    wrench = np.concatenate([np.cross(pts, force), force], axis=-1)  # (N, S, 6)
    r = np.zeros((seq.shape[0], kin.jacobian.shape[2]))
    for f in np.unique(ps.slot_frames):
        if f == 0:
            continue  # the ground does no virtual work
        w = np.einsum("ns,nsc->nc", (frame_of == f) & (seq >= 0), wrench)
        r += np.einsum("nkc,nc->nk", kin.jacobian[:, f], w)
    return r


def lengths_and_moment_arms(model: Model, q: Any, muscles: Sequence[str] | None = None, *, wrapping: bool = True,
                            opensim_compat: bool = False,
                            allow_out_of_range: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """L (N, M) and R (N, n_q, M) of the units (all of the model's by default) at a batch of configurations.

    R[n, k, m] is the moment arm of unit m about generalized coordinate k: the
    generalized force per newton of tension (Eqs 192-195); R = -dL/dq where the
    path geometry is exact.

    With numba (``pip install 'osim-emb[speed]'``) the whole computation -- kinematics,
    wrapping, moment arms -- runs in one compiled kernel, on numba's number of threads
    (``osim_emb.paths.wrapping._kernels_muscles``); ``OSIM_EMB_NO_JIT=1`` runs the numpy code
    below.  The two agree to round-off (docs/wrapping.md, "Speed").

    ``q`` is an (N, n_q) or (n_q,) array in the model's coordinate order, or a pandas DataFrame,
    Series or dict matched by coordinate name; radians and metres, within the coordinate ranges
    (round-off allowed) unless ``allow_out_of_range=True``: :func:`osim_emb.core.configuration.as_configuration`.
    :func:`moment_arm_table` gives the same numbers as a labelled table.

    Parameters
    ----------
    model : Model
    q : array_like, pandas.DataFrame, pandas.Series or dict
        Configurations: radians (rotational coordinates) and metres (translational), (N, n_q) or (n_q,).
    muscles : sequence of str, optional
        Names of the units, in the order wanted (default: all of the model's).
    wrapping : bool, default True
        False ignores the wrap surfaces (straight segments between path points).
    opensim_compat : bool, default False
        True reproduces OpenSim's wrap-point cache (docs/wrapping.md) instead of the exact geometry.
    allow_out_of_range : bool, default False
        Evaluate outside the coordinate ranges.

    Returns
    -------
    L : numpy.ndarray
        (N, M) musculotendon lengths in metres.
    R : numpy.ndarray
        (N, n_q, M) moment arms: metres about rotational coordinates (newton-metres per newton of
        tension), dimensionless about translational ones.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])
    >>> L, R = oe.lengths_and_moment_arms(model, q)
    >>> L.shape, R.shape
    ((2, 14), (2, 3, 14))

    R is minus the derivative of L (central difference about shoulder_elv, for the via-point path DELT2):

    >>> h = np.array([0.0, 1e-6, 0.0])
    >>> dL = (oe.muscle_lengths(model, q + h, ["DELT2"]) - oe.muscle_lengths(model, q - h, ["DELT2"])) / 2e-6
    >>> bool(np.allclose(R[:, 1, [1]], -dL, atol=1e-8))
    True
    """
    q = as_configuration(model, q, allow_out_of_range=allow_out_of_range)
    from osim_emb.paths.musculotendon import with_own_paths  # Scholz2015GeometryPath units (paths.scholz)
    out = with_own_paths(model, q, _muscle_list(model, muscles), True, lambda names: lengths_and_moment_arms(
        model, q, names, wrapping=wrapping, opensim_compat=opensim_compat, allow_out_of_range=True))
    if out is not None:
        return out
    from osim_emb.paths.function_based_path import with_function_based_paths  # FunctionBasedPath units: L = l(c(q))
    out = with_function_based_paths(model, q, _muscle_list(model, muscles), True, lambda names: lengths_and_moment_arms(
        model, q, names, wrapping=wrapping, opensim_compat=opensim_compat, allow_out_of_range=True))
    if out is not None:
        return out
    if use_jit():
        out = _lengths_and_moment_arms_jit(model, q, muscles, wrapping, opensim_compat, True)
        if out is not None:
            return out
    kin = forward_kinematics(model, q, order=1)
    states = path_states(model, q, muscles, wrapping=wrapping, opensim_compat=opensim_compat, kin=kin,
                         allow_out_of_range=True)
    lengths = np.stack([s.length for s in states], axis=1) if states else np.zeros((q.shape[0], 0))
    r = (np.stack([_moment_arm_of_path(model, kin, s) for s in states], axis=2) if states
         else np.zeros((q.shape[0], model.n_q, 0)))
    return lengths, r


def muscle_lengths(model: Model, q: Any, muscles: Sequence[str] | None = None, *, wrapping: bool = True,
                   opensim_compat: bool = False, allow_out_of_range: bool = False) -> np.ndarray:
    """L (N, M): musculotendon lengths along the (wrapped) paths, in metres.

    Parameters
    ----------
    model : Model
    q : array_like, pandas.DataFrame, pandas.Series or dict
        Configurations in radians and metres, as in :func:`lengths_and_moment_arms`.
    muscles : sequence of str, optional
        Names of the units (default: all).
    wrapping, opensim_compat, allow_out_of_range : bool
        As in :func:`lengths_and_moment_arms`.

    Returns
    -------
    numpy.ndarray
        (N, M) lengths in metres (cheaper than :func:`lengths_and_moment_arms`: no moment arms).

    Examples
    --------
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> L = oe.muscle_lengths(model, model.default_q, ["DELT1", "SUPSP"])
    >>> L.shape, bool((L > 0.05).all() and (L < 0.5).all())
    ((1, 2), True)
    """
    q = as_configuration(model, q, allow_out_of_range=allow_out_of_range)
    from osim_emb.paths.musculotendon import with_own_paths  # Scholz2015GeometryPath units (paths.scholz)
    out = with_own_paths(model, q, _muscle_list(model, muscles), False, lambda names: muscle_lengths(
        model, q, names, wrapping=wrapping, opensim_compat=opensim_compat, allow_out_of_range=True))
    if out is not None:
        return out
    from osim_emb.paths.function_based_path import with_function_based_paths  # FunctionBasedPath units: L = l(c(q))
    out = with_function_based_paths(model, q, _muscle_list(model, muscles), False, lambda names: muscle_lengths(
        model, q, names, wrapping=wrapping, opensim_compat=opensim_compat, allow_out_of_range=True))
    if out is not None:
        return out
    if use_jit():
        out = _lengths_and_moment_arms_jit(model, q, muscles, wrapping, opensim_compat, False)
        if out is not None:
            return out[0]
    kin = forward_kinematics(model, q, order=0)
    states = path_states(model, q, muscles, wrapping=wrapping, opensim_compat=opensim_compat, kin=kin,
                         allow_out_of_range=True)
    return np.stack([s.length for s in states], axis=1) if states else np.zeros((q.shape[0], 0))


def moment_arms(model: Model, q: Any, muscles: Sequence[str] | None = None, **kw) -> np.ndarray:
    """R (N, n_q, M) (Eq 195)."""
    return lengths_and_moment_arms(model, q, muscles, **kw)[1]


def moment_arm_table(model: Model, q: Any, muscles: Sequence[str] | None = None, *, wrapping: bool = True,
                     opensim_compat: bool = False, allow_out_of_range: bool = False):
    """L and R as a tidy pandas DataFrame: one row per (pose, muscle, coordinate).

    Parameters
    ----------
    model : Model
    q : array_like, pandas.DataFrame, pandas.Series or dict
        Configurations in radians and metres, as in :func:`lengths_and_moment_arms`; a DataFrame's index
        labels the poses.
    muscles : sequence of str, optional
        Names of the units (default: all).
    wrapping, opensim_compat, allow_out_of_range : bool
        As in :func:`lengths_and_moment_arms`.

    Returns
    -------
    pandas.DataFrame
        Columns ``pose`` (the DataFrame's index when q is a DataFrame, else 0..N-1), ``muscle``,
        ``coordinate``, ``motion_type``, ``q`` (the coordinate's value: rad or m), ``length_m`` (the
        musculotendon length, m) and ``moment_arm_m`` (R: metres about a rotational coordinate; newtons
        per newton, dimensionless, about a translational one).

    Examples
    --------
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> table = oe.moment_arm_table(model, oe.degrees_to_q(model, [0, 30, 0]), ["DELT1", "SUPSP"])
    >>> table.shape
    (6, 7)
    >>> list(table.columns)
    ['pose', 'muscle', 'coordinate', 'motion_type', 'q', 'length_m', 'moment_arm_m']
    >>> L, R = oe.lengths_and_moment_arms(model, oe.degrees_to_q(model, [0, 30, 0]), ["DELT1", "SUPSP"])
    >>> bool(table["moment_arm_m"].to_numpy().tolist() == R[0].T.ravel().tolist())
    True
    """
    import pandas as pd
    labels = q.index if isinstance(q, pd.DataFrame) else None
    qa = as_configuration(model, q, allow_out_of_range=allow_out_of_range)
    length, r = lengths_and_moment_arms(model, qa, muscles, wrapping=wrapping, opensim_compat=opensim_compat,
                                        allow_out_of_range=True)
    names = [m.name for m in _muscle_list(model, muscles)]
    n, nq, nm = r.shape
    pose = np.arange(n) if labels is None else np.asarray(labels)
    return pd.DataFrame({
        "pose": np.repeat(pose, nm * nq),
        "muscle": np.tile(np.repeat(names, nq), n),
        "coordinate": np.tile(model.coordinate_names, n * nm),
        "motion_type": np.tile([c.motion_type for c in model.coordinates], n * nm),
        "q": np.repeat(qa, nm, axis=0).reshape(-1),
        "length_m": np.repeat(length.reshape(-1), nq),
        "moment_arm_m": np.transpose(r, (0, 2, 1)).reshape(-1),
    })


def oriented_attachment_sequence(model: Model, muscle: Musculotendon) -> tuple[str, ...]:
    """Gamma_k with the seed's convention: the origin (first) body is the one nearer the ground (Definition 2)."""
    seq = muscle.attachment_sequence
    index, frames, _ = _body_table(model)
    frame = {name: int(frames[k]) for name, k in index.items()}
    return seq if frame[seq[0]] <= frame[seq[-1]] else tuple(reversed(seq))


def moment_arms_eq195(model: Model, q: np.ndarray, muscle: str) -> np.ndarray:
    """R_.k by the literal body-frame form of Eq 195 for one configuration (no wrapping).

    Builds, per body i of the attachment sequence, E_ki (Definition 3, the sum of
    the unit vectors leaving the body's first and last effective points, in the
    body's frame i) and E^_ki (Definition 4, their moments about the frame's
    origin), gamma_i of Eq 176 and beta_i of Eq 179, and sums
    gamma_i E_ki + J^T theta beta_i E^_ki.  One configuration, for tests.
    """
    from osim_emb.core.kinematics_kronecker import SeedKinematics, beta_matrix
    q = np.asarray(q, dtype=float).reshape(-1)
    sk = SeedKinematics(model, q)
    kin = forward_kinematics(model, q, order=1)
    (ps,) = path_states(model, q[None], [muscle], wrapping=False, kin=kin)
    seq = ps.sequence[0]
    seq = seq[seq >= 0]
    pts = ps.positions[0, seq]
    frames = ps.slot_frames[seq]
    nq = model.n_q
    jac = np.vstack([g.T for g in sk.grad[1:]])  # J: (n_b, n_q)
    theta = np.diag([1.0 if j.is_revolute else 0.0 for j in model.joints])
    r = np.zeros(nq)
    # group consecutive points by frame (the bodies of Gamma_k)
    groups = []
    for p, f in zip(pts, frames):
        if groups and groups[-1][0] == f:
            groups[-1][1].append(p)
        else:
            groups.append((f, [p]))
    for j, (f, members) in enumerate(groups):
        if f == 0:
            continue  # the ground does no virtual work
        a = sk.global_[f]
        rot, org = a[:3, :3], a[:3, 3]
        e_sum = np.zeros(3)
        m_sum = np.zeros(3)
        if j + 1 < len(groups):  # line of action towards the next body, from this body's last point
            last = members[-1]
            e = groups[j + 1][1][0] - last
            e = rot.T @ (e / np.linalg.norm(e))
            e_sum += e
            m_sum += np.cross(rot.T @ (last - org), e)
        if j > 0:  # reciprocal line of action towards the previous body, from this body's first point
            first = members[0]
            e = groups[j - 1][1][-1] - first
            e = rot.T @ (e / np.linalg.norm(e))
            e_sum += e
            m_sum += np.cross(rot.T @ (first - org), e)
        # gamma_i (Eq 176): d(origin of i)/dq expressed in frame i, as n_q x 3
        gamma = np.zeros((nq, 3))
        for jj in model.chain(f):
            joint = model.joints[jj - 1]
            aj = sk.global_[jj]
            if joint.is_revolute:
                w = aj[:3, :3] @ joint.axis
                col = np.cross(w, org - aj[:3, 3])
            else:
                col = aj[:3, :3] @ joint.axis
            gamma += np.outer(sk.grad[jj][:, 0], rot.T @ col)
        beta = beta_matrix(sk, f)  # (n_b, 3), Eq 179
        r += gamma @ e_sum + jac.T @ theta @ beta @ m_sum
    return r


# ---------------------------------------------------------------------------
# Compiled path (numba): kinematics, wrapping and moment arms of all units in one kernel
# ---------------------------------------------------------------------------
@dataclass
class _JitPlan:
    """The model and the units packed into the arrays of ``wrapping._kernels_muscles``."""

    muscles: list
    kin: tuple
    bodies: tuple
    points: tuple
    wraps: tuple
    frames: tuple
    path: tuple
    conditional: list  # (global point index, condition function, (lo, hi))


def _jit_plan(model: Model, muscles: Sequence[str] | None, wrapping: bool) -> _JitPlan:
    """Built once per (model, units, wrapping) and cached on the (immutable) model."""
    key = (None if muscles is None else tuple(muscles), bool(wrapping))
    plans = model.__dict__.get("_jit_muscle_plans")
    if plans is None:
        plans = {}
        object.__setattr__(model, "_jit_muscle_plans", plans)
    if key in plans:
        return plans[key]
    from osim_emb.core.calculus import skew
    from osim_emb.paths.wrapping.path import PathWrapSpec, _pack_for_kernel

    units = _muscle_list(model, muscles)
    nf = model.n_frames
    parent = np.zeros(nf, dtype=np.int64)
    revolute = np.zeros(nf, dtype=np.bool_)
    offs = np.zeros((nf, 4, 4))
    axes = np.zeros((nf, 3))
    vt = np.zeros((nf, 3, 3))
    vt2 = np.zeros((nf, 3, 3))
    for i, j in enumerate(model.joints, start=1):
        parent[i] = j.parent
        revolute[i] = j.is_revolute
        offs[i] = j.offset
        axes[i] = j.axis
        vt[i] = skew(j.axis)
        vt2[i] = vt[i] @ vt[i]
    body_index, body_frame, body_off = _body_table(model)
    wraps_by_name = {w.name: w for w in model.wrap_objects}
    pt_body, pt_loc, wr_body, wr_off, wr_first, slot_frame, uframe = [], [], [], [], [], [], []
    first_of: dict = {}
    mp, mw, ms, mc, muf = [0], [0], [0], [0], [0]
    packs = []
    conditional = []
    for mu in units:
        p0 = len(pt_body)
        for k, pt in enumerate(mu.points):
            pt_body.append(body_index[pt.body])
            pt_loc.append(np.asarray(pt.location, dtype=float))
            if pt.kind == "conditional":
                conditional.append((p0 + k, pt.condition, tuple(pt.active_range)))
        frames = [int(body_frame[body_index[pt.body]]) for pt in mu.points]
        wraps = [w for w in mu.wraps if w.wrap_object in wraps_by_name and wraps_by_name[w.wrap_object].active]
        if not (wrapping and wraps):
            wraps = []
        objs = [wraps_by_name[w.wrap_object] for w in wraps]
        specs = [PathWrapSpec(o, w.method, tuple(w.range)) for o, w in zip(objs, wraps)]
        packed = _pack_for_kernel(specs, len(mu.points)) if specs else _pack_for_kernel([], len(mu.points))
        if packed is None:
            raise _NotCompilable(mu.name)
        packs.append(packed)
        for o in objs:
            wr_first.append(first_of.setdefault(o.name, len(wr_body)))
            wr_body.append(body_index[o.body])
            wr_off.append(o.transform_in_body)
            frames += [int(body_frame[body_index[o.body]])] * 2
        slot_frame += frames
        uframe += [f for f in np.unique(frames) if f != 0]
        mp.append(len(pt_body))
        mw.append(len(wr_body))
        ms.append(len(slot_frame))
        mc.append(mc[-1] + packed[-1].shape[0])
        muf.append(len(uframe))
    cat = [np.concatenate([pk[i] for pk in packs]) if packs else np.zeros(0) for i in range(9)]
    i64 = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    plan = _JitPlan(
        units,
        (parent, revolute, offs, axes, vt, vt2),
        (body_frame, body_off, np.isin(np.arange(len(body_frame)), pt_body + wr_body)),
        (i64(pt_body), np.array(pt_loc, dtype=float).reshape(-1, 3)),
        (i64(wr_body), np.array(wr_off, dtype=float).reshape(-1, 4, 4), i64(wr_first)),
        (i64(slot_frame), i64(uframe), i64(muf)),
        (i64(mp), i64(mw), i64(ms), i64(mc), cat[0].astype(np.int64), cat[1].reshape(-1, 3),
         cat[2].astype(np.int64), cat[3].astype(np.int64), cat[4].astype(np.int64), cat[5].astype(np.bool_),
         cat[6].astype(np.int64), cat[7].astype(np.int64), cat[8].astype(np.int64)),
        conditional,
    )
    plans[key] = plan
    return plan


class _NotCompilable(Exception):
    """A unit the compiled kernel cannot take (a wrap object of another class, a bad range)."""


def _lengths_and_moment_arms_jit(model: Model, q: np.ndarray, muscles, wrapping: bool, opensim_compat: bool,
                                 want_r: bool):
    """lengths_and_moment_arms through ``wrapping._kernels_muscles`` (same results to round-off);
    None where the kernel cannot take a unit (the caller then runs the numpy code)."""
    try:
        plan = _jit_plan(model, muscles, wrapping)
    except _NotCompilable:
        return None
    from osim_emb.paths.wrapping._kernels_muscles import lengths_moment_arms_kernel
    from osim_emb.paths.wrapping._kernels_path import run_threads
    n = q.shape[0]
    jv = joint_variables(model, q, order=1)
    val = np.ascontiguousarray(jv.value)
    grad = np.ascontiguousarray(jv.gradient)
    pt_body, pt_loc = plan.points
    pa = np.ones((n, pt_body.shape[0]), dtype=np.bool_)
    cache: dict = {}
    for k, cond, (lo, hi) in plan.conditional:
        v = cond.evaluate(q, 0, cache).value
        pa[:, k] = (v >= lo - 1e-5) & (v <= hi + 1e-5)
    mp, mw = plan.path[0], plan.path[1]
    out = (np.empty((n, mp[-1], 3)), np.empty((n, mw[-1], 4, 4)), np.zeros((n, mp.shape[0] - 1)),
           np.zeros((n, model.n_q, mp.shape[0] - 1)))
    args = (val, grad, *plan.kin, *plan.bodies, pt_body, pt_loc, pa, *plan.wraps, *plan.frames, *plan.path,
            bool(opensim_compat), bool(want_r))
    run_threads(lengths_moment_arms_kernel, args, out, n)
    length, r = out[2], out[3]
    return length, (r if want_r else None)

