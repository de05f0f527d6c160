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

from osim_emb.core.configuration import as_configuration
from osim_emb.core.kinematics import FrameKinematics, cross3, forward_kinematics, joint_variables
from osim_emb.model import Model
from osim_emb.paths.musculotendon import Musculotendon

__all__ = [
    "PathState",
    "UnsupportedPathError",
    "path_states",
    "muscle_lengths",
    "moment_arms",
    "lengthening_speeds",
    "path_lengthening_speeds",
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
    if isinstance(muscles, str):  # one name (iterating it would give its letters)
        muscles = [muscles]
    by_name = {m.name: m for m in model.muscles}
    out = []
    for n in muscles:
        if n not in by_name:
            import difflib
            close = difflib.get_close_matches(str(n), list(by_name), n=3, cutoff=0.6)
            raise KeyError(f"no musculotendon unit named {n!r} in model {model.name!r}"
                           + (f"; did you mean {', '.join(map(repr, close))}?" if close else
                              f"; its units: {', '.join(list(by_name)[:20])}{', ...' if len(by_name) > 20 else ''}"))
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
    """The effective paths of the units at a batch of configurations: points in order, wrap tangent points, lengths.

    What a figure of a path or an export of its geometry needs (lengths and moment arms alone:
    :func:`lengths_and_moment_arms`). Computed by the compiled kernels that give L and R.

    Parameters
    ----------
    model : Model
    q : array_like, DataFrame, Series or dict
        (N, n_q) or (n_q,) configurations: radians, metres (see :func:`osim_emb.as_configuration`).
    muscles : sequence of str, optional
        Muscle names (default: all, in the model's order); GeometryPath units only.
    wrapping, opensim_compat, allow_out_of_range
        As :func:`lengths_and_moment_arms`.
    kin
        Ignored (kept for callers of earlier versions: the kernel computes the kinematics).

    Returns
    -------
    list of PathState
        One per unit: ``positions`` (N, n_slots, 3) ground positions in metres of the path points and
        wrap tangent points (NaN where a slot is unused: an inactive conditional point, a wrap not
        touched), ``sequence`` (N, S) the slots in path order (-1 padded), ``slot_bodies`` the body of each
        slot, ``length`` (N,) metres, and for wrapped units ``wrap_length``, ``wrapped`` and
        ``tangent_points`` (in the wrap frames).

    Raises
    ------
    UnsupportedPathError
        For a unit the kernels cannot take; ``ValueError`` for a FunctionBasedPath unit (no points).

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> (state,) = oe.path_states(model, oe.degrees_to_q(model, [0, 30, 0]), ["DELT2"])
    >>> points = state.positions[0, state.sequence[0][state.sequence[0] >= 0]]
    >>> polyline = np.linalg.norm(np.diff(points, axis=0), axis=1).sum()
    >>> bool(abs(polyline - state.length[0]) < 1e-12)  # DELT2 does not touch its wrap here
    True
    """
    q = as_configuration(model, q, allow_out_of_range=allow_out_of_range)
    units = _muscle_list(model, muscles)
    for mu in units:
        if not mu.points:
            raise ValueError(f"unit {mu.name!r} has no path points (a FunctionBasedPath): use lengths_and_moment_arms")
    plan = _jit_plan(model, [m.name for m in units], wrapping)
    from osim_emb.paths.wrapping._kernels_muscles import points_kernel
    from osim_emb.paths.wrapping._kernels_path import path_outputs, run_threads, wrap_paths_kernel
    from osim_emb.paths.wrapping.path import _wrapped_path
    n = q.shape[0]
    val, grad = _joint_variable_arrays(model, q)
    pt_body, pt_loc = plan.points
    mp, mw, ms, mc = plan.path[:4]
    pg, T = np.empty((n, mp[-1], 3)), np.empty((n, mw[-1], 4, 4))
    run_threads(points_kernel, (val, grad, *plan.kin, *plan.bodies, pt_body, pt_loc, *plan.wraps), (pg, T), n)
    pa = _point_activity(plan, q)
    out = path_outputs(n, len(units), int(ms[-1]), int(mw[-1]))
    run_threads(wrap_paths_kernel, (pg, pa, T, *plan.path, bool(opensim_compat)), out, n)
    seq, r, wlen, in_path, length, _, cache, cached = out
    slot_frame = plan.frames[0]
    states = []
    for m, mu in enumerate(units):
        p0, p1, w0, w1, s0, s1 = mp[m], mp[m + 1], mw[m], mw[m + 1], ms[m], ms[m + 1]
        bodies = [pt.body for pt in mu.points] + [b for w in plan.wrap_bodies[m] for b in (w, w)]
        pos = pg[:, p0:p1]
        if w1 == w0:
            states.append(PathState(mu, seq[:, s0:s1], slot_frame[s0:s1].copy(), bodies, pos, length[:, m]))
            continue
        Tm = T[:, w0:w1]
        wp = _wrapped_path(Tm, seq[:, s0:s1], r[:, w0:w1], wlen[:, w0:w1], in_path[:, w0:w1], length[:, m], None,
                           cache[:, w0:w1], cached[:, w0:w1], bool(opensim_compat))
        tp = wp.tangent_points  # (N, W, 2, 3) wrap frame
        tpg = np.einsum("nwij,nwsj->nwsi", Tm[..., :3, :3], tp) + Tm[..., None, :3, 3]
        positions = np.concatenate([pos, tpg.reshape(n, -1, 3)], axis=1)
        dirpos = None
        if wp.queried_ground is not None:
            dirpos = np.concatenate([pos, np.where(np.isnan(wp.queried_ground), tpg, wp.queried_ground)
                                     .reshape(n, -1, 3)], axis=1)
        states.append(PathState(mu, wp.sequence, slot_frame[s0:s1].copy(), bodies, positions, wp.length,
                                wp.wrap_length, wp.wrapped, tp, dirpos))
    return states


def _gather(positions: np.ndarray, seq: np.ndarray) -> np.ndarray:
    idx = np.where(seq < 0, 0, seq)
    return np.take_along_axis(positions, idx[..., None], axis=1)


def _moment_arm_of_path(model: Model, kin: FrameKinematics, ps: PathState) -> np.ndarray:
    """R column (N, n_q) of one unit from its effective points: the sum over segments of J_a^T e - J_b^T e
    (Eq 195 in ground form), by the compiled kernel that :func:`lengths_and_moment_arms` runs
    (``wrapping._kernels_muscles._moment_arm_column``).  Used for paths built elsewhere (smooth wrapping)."""
    from osim_emb.paths.wrapping._kernels_muscles import path_moment_arms_kernel
    from osim_emb.paths.wrapping._kernels_path import run_threads
    seq = np.ascontiguousarray(ps.sequence, dtype=np.int64)
    pts = np.ascontiguousarray(_gather(ps.positions, seq))
    dpts = pts if ps.direction_positions is None else np.ascontiguousarray(_gather(ps.direction_positions, seq))
    frames = np.asarray(ps.slot_frames, dtype=np.int64)
    moving = np.array([f for f in np.unique(frames) if f != 0], dtype=np.int64)
    r = np.zeros((seq.shape[0], kin.jacobian.shape[2]))
    run_threads(path_moment_arms_kernel, (seq, pts, dpts, frames, moving, np.ascontiguousarray(kin.jacobian)), (r,),
                seq.shape[0])
    return r


def lengths_and_moment_arms(model: Model, q: Any, muscles: Sequence[str] | None = None, *, wrapping: bool = True,
                            opensim_compat: bool = False,
                            allow_out_of_range: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """L (N, M) and R (N, n_q, M) of the units (all of the model's by default) at a batch of configurations.

    R[n, k, m] is the moment arm of unit m about generalized coordinate k: the
    generalized force per newton of tension (Eqs 192-195); R = -dL/dq where the
    path geometry is exact.

    The whole computation -- kinematics, wrapping, moment arms -- runs in one compiled (numba)
    kernel, on numba's number of threads (``osim_emb.paths.wrapping._kernels_muscles``; the one
    implementation: ``OSIM_EMB_NO_JIT`` does not affect it).  A unit the kernel cannot take (a
    wrap object of an unknown class, a PathWrap range outside its path) raises
    :class:`UnsupportedPathError` naming the unit and the reason.  A unit whose relative
    configuration (the joints between its bodies) is the same in every configuration of the batch,
    e.g. one that does not cross the swept joint of a sweep, is evaluated once (docs/wrapping.md,
    "Profile of the sweep").

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
        True reproduces OpenSim's wrap-point cache (docs/wrapping.md) instead of the exact geometry: what
        OpenSim's ``getLength`` and ``computeMomentArm`` return.  The default, the exact geometry, can differ from
        them on paths over several wrap objects, by millimetres at ordinary poses and by far more where OpenSim's cached
        tangent points are stale (docs/wrapping.md; moment-arms reports both modes).
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
    return _paths_of_every_kind(model, q, muscles, wrapping, opensim_compat, True)


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
    return _paths_of_every_kind(model, q, muscles, wrapping, opensim_compat, False)


def _paths_of_every_kind(model: Model, q: np.ndarray, muscles, wrapping: bool, opensim_compat: bool, want_r: bool):
    """L (and R with ``want_r``) of units of any path type: Scholz2015GeometryPath units (paths.scholz) and
    FunctionBasedPath units (L = l(c(q))) are split off and evaluated by their modules, which call back here for
    the rest; GeometryPaths go to the compiled kernel."""
    from osim_emb.paths.function_based_path import with_function_based_paths
    from osim_emb.paths.musculotendon import with_own_paths
    units = _muscle_list(model, muscles)

    def rest(names):
        return _paths_of_every_kind(model, q, names, wrapping, opensim_compat, want_r)
    for split in (with_own_paths, with_function_based_paths):
        out = split(model, q, units, want_r, rest)
        if out is not None:
            return out
    out = _lengths_and_moment_arms_kernel(model, q, muscles, wrapping, opensim_compat, want_r)
    return out if want_r else out[0]


def moment_arms(model: Model, q: Any, muscles: Sequence[str] | None = None, **kw) -> np.ndarray:
    """Moment arms R(q) of the muscles about every generalized coordinate (Eq 195), in closed form.

    Parameters
    ----------
    model : Model
    q : array_like, DataFrame, Series or dict
        (N, n_q) or (n_q,) configurations: radians, metres (see :func:`osim_emb.as_configuration`).
    muscles : sequence of str, optional
        Muscle names (default: all, in the model's order).
    **kw
        ``wrapping`` (default True), ``opensim_compat`` (reproduce OpenSim's stale wrap-point cache, default
        False), ``allow_out_of_range``: as :func:`osim_emb.lengths_and_moment_arms`.

    Returns
    -------
    numpy.ndarray
        (N, n_q, M) metres (m per rad about a rotational coordinate; dimensionless, m/m, along a translational
        one), the sign of OpenSim's ``computeMomentArm``: R = -dL/dq for a smooth path.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = oe.degrees_to_q(model, [[0, 30, 0], [40, 60, -20]])
    >>> R = oe.moment_arms(model, q, ["DELT2"])
    >>> R.shape
    (2, 3, 1)

    The same numbers as the second output of :func:`osim_emb.lengths_and_moment_arms`:

    >>> bool(np.array_equal(R, oe.lengths_and_moment_arms(model, q, ["DELT2"])[1]))
    True
    """
    return lengths_and_moment_arms(model, q, muscles, **kw)[1]


def lengthening_speeds(model: Model, q: Any, qdot: Any, muscles: Sequence[str] | None = None, *,
                       wrapping: bool = True, opensim_compat: bool = False,
                       allow_out_of_range: bool = False) -> np.ndarray:
    """Lengthening speeds dL/dt of the musculotendon units at a batch of states.

    Parameters
    ----------
    model : Model
    q, qdot : array_like
        (N, n_q) or (n_q,) configurations (radians, metres) and generalized speeds (rad/s, m/s).
    muscles : sequence of str, optional
        Muscle names (default: all, in the model's order).
    wrapping, opensim_compat, allow_out_of_range
        As :func:`lengths_and_moment_arms`.

    Returns
    -------
    numpy.ndarray
        (N, M) m/s: dL/dt = -R(q)^T qdot; with ``opensim_compat`` OpenSim's sum over the path's point pairs
        (:func:`path_lengthening_speeds`: its stale tangent points and the pairs on one body,
        which -R^T qdot leaves out); a FunctionBasedPath with a lengthening-speed function s(c, dc/dt) uses it
        instead, as OpenSim does.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q, qdot = oe.degrees_to_q(model, [10, 40, 0]), np.array([0.0, 1.0, 0.0])
    >>> v = oe.lengthening_speeds(model, q, qdot, ["DELT2"])
    >>> R = oe.moment_arms(model, q, ["DELT2"])
    >>> bool(np.allclose(v, -R[:, 1, :]))
    True
    """
    from osim_emb.paths.function_based_path import function_path_speeds
    q = as_configuration(model, q, allow_out_of_range=allow_out_of_range)
    qdot = np.asarray(qdot, dtype=float).reshape(q.shape)
    units = _muscle_list(model, muscles)
    _, r = lengths_and_moment_arms(model, q, [u.name for u in units], wrapping=wrapping,
                                   opensim_compat=opensim_compat, allow_out_of_range=True)
    speed = -np.einsum("nkm,nk->nm", r, qdot)
    pathed = [m for m, unit in enumerate(units) if unit.points]
    if opensim_compat and wrapping and pathed:
        speed[:, pathed] = path_lengthening_speeds(model, q, qdot, [units[m].name for m in pathed])
    for m, unit in enumerate(units):
        own = function_path_speeds(model, unit, q, qdot)
        if own is not None:
            speed[:, m] = own
    return speed


def point_pairs(ps: PathState):
    """Each pair of consecutive points of a path over the batch: (slot a (N,), slot b (N,), both present (N,)), the
    absent slots given as 0 (masked by the third array)."""
    seq = ps.sequence
    for s in range(seq.shape[1] - 1):
        a, b = seq[:, s], seq[:, s + 1]
        ok = (a >= 0) & (b >= 0)
        yield np.where(ok, a, 0), np.where(ok, b, 0), ok


def path_lengthening_speeds(model: Model, q: Any, qdot: Any, units: Sequence[str]) -> np.ndarray:
    """Lengthening speeds (N, m) m/s of path units as OpenSim 4.6's ``GeometryPath::computeLengtheningSpeed`` sums them:
    over every pair of consecutive points of the current path, r̂·(v_i − v_{i+1}) (``Point::calcSpeedBetween``), r̂ from
    the points' ground positions as OpenSim caches them (a tangent point's may be stale: ``direction_positions``),
    v_i the velocity of the point where it is now on its frame (a moving point's own motion included: its frame).
    Where no tangent point is stale and no moving point sits next to a point of its own body this is −Rᵀq̇ (Eq 195);
    otherwise it differs by what OpenSim's rule adds (the pairs on one body, the stale directions)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    qdot = np.atleast_2d(np.asarray(qdot, dtype=float))
    n = q.shape[0]
    out = np.zeros((n, len(units)))
    states = path_states(model, q, list(units), opensim_compat=True, allow_out_of_range=True)
    twist = np.einsum("nfkc,nk->nfc", forward_kinematics(model, q, order=1).jacobian, qdot)  # (ω, v at the origin)
    rows = np.arange(n)
    for m, ps in enumerate(states):
        frame_of_slot = np.asarray(ps.slot_frames, dtype=int)
        pos, dpos = ps.positions, ps.positions if ps.direction_positions is None else ps.direction_positions
        for a, b, ok in point_pairs(ps):
            r = dpos[rows, a] - dpos[rows, b]
            d = np.linalg.norm(r, axis=1)
            v = [twist[rows, frame_of_slot[k], 3:] + cross3(twist[rows, frame_of_slot[k], :3], pos[rows, k])
                 for k in (a, b)]
            rel = v[0] - v[1]
            speed = np.where(d < np.finfo(float).eps, np.linalg.norm(rel, axis=1),
                             np.einsum("nc,nc->n", rel, r) / np.where(d > 0, d, 1.0))
            out[:, m] += np.where(ok, speed, 0.0)
    return out


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
# The compiled kernel (numba): kinematics, wrapping and moment arms of all units in one kernel
# ---------------------------------------------------------------------------
@dataclass
class _JitPlan:
    """The model and the units packed into the arrays of ``wrapping._kernels_muscles``."""

    muscles: list
    kin: tuple  # core.kinematics_kernels.frame_tree(model).arrays()
    bodies: tuple
    points: tuple
    wraps: tuple
    frames: tuple
    path: tuple
    conditional: list  # (global point index, condition function, (lo, hi))
    wrap_bodies: list  # per unit, the body of each PathWrap's wrap object
    relative_frames: np.ndarray  # (M, n_frames) bool: the frames each unit's path depends on


def _jit_plan(model: Model, muscles: Sequence[str] | None, wrapping: bool) -> _JitPlan:
    """Built once per (model, units, wrapping) and cached on the (immutable) model."""
    key = (None if muscles is None else tuple(muscles), bool(wrapping))
    plans = model.__dict__.get("_jit_muscle_plans")
    if plans is None:
        plans = {}
        object.__setattr__(model, "_jit_muscle_plans", plans)
    if key in plans:
        return plans[key]
    from osim_emb.core.kinematics_kernels import frame_tree
    from osim_emb.paths.wrapping.path import PathWrapSpec, pack_path_wraps

    units = _muscle_list(model, muscles)
    body_index, body_frame, body_off = _body_table(model)
    wraps_by_name = {w.name: w for w in model.wrap_objects}
    pt_body, pt_loc, wr_body, wr_off, wr_first, slot_frame, uframe = [], [], [], [], [], [], []
    first_of: dict = {}
    mp, mw, ms, mc, muf = [0], [0], [0], [0], [0]
    packs = []
    conditional = []
    wrap_bodies = []
    for mu in units:
        if not mu.points:
            raise UnsupportedPathError(f"unit {mu.name!r} of model {model.name!r} has no path points (a "
                                       "FunctionBasedPath): its L and R come from its functions")
        missing = sorted({pt.body for pt in mu.points} - set(body_index))
        if missing:
            raise UnsupportedPathError(f"unit {mu.name!r} of model {model.name!r}: path points on unknown "
                                       f"body/bodies {', '.join(missing)}")
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
        try:
            packed = pack_path_wraps(specs, len(mu.points))
        except ValueError as err:
            raise UnsupportedPathError(f"unit {mu.name!r} of model {model.name!r}: {err}") from None
        bad = sorted({o.name for o in objs if o.body not in body_index})
        if bad:
            raise UnsupportedPathError(f"unit {mu.name!r} of model {model.name!r}: wrap object(s) {', '.join(bad)} "
                                       "on unknown bodies")
        packs.append(packed)
        wrap_bodies.append([o.body for o in objs])
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
        frame_tree(model).arrays(),
        (body_frame, body_off, np.isin(np.arange(len(body_frame)), pt_body + wr_body)),
        (i64(pt_body), np.array(pt_loc, dtype=float).reshape(-1, 3)),
        (i64(wr_body), np.array(wr_off, dtype=float).reshape(-1, 4, 4), i64(wr_first)),
        (i64(slot_frame), i64(uframe), i64(muf)),
        (i64(mp), i64(mw), i64(ms), i64(mc), cat[0].astype(np.int64), cat[1].reshape(-1, 3),
         cat[2].astype(np.int64), cat[3].astype(np.int64), cat[4].astype(np.int64), cat[5].astype(np.bool_),
         cat[6].astype(np.int64), cat[7].astype(np.int64), cat[8].astype(np.int64)),
        conditional,
        wrap_bodies,
        _relative_frames(frame_tree(model).parent, body_frame, pt_body, wr_body, mp, mw),
    )
    plans[key] = plan
    return plan


class UnsupportedPathError(ValueError):
    """A unit the compiled path kernel cannot take; the message names the unit and the reason."""


_NotCompilable = UnsupportedPathError  # the former name (callers catch it)


def _joint_variable_arrays(model: Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Joint variables (N, nf) and their gradients (N, nf, nq), contiguous, as the kernels take them."""
    jv = joint_variables(model, q, order=1)
    return np.ascontiguousarray(jv.value), np.ascontiguousarray(jv.gradient)


def _point_activity(plan: _JitPlan, q: np.ndarray) -> np.ndarray:
    """(N, Ptot) whether each path point is active (ConditionalPathPoints: within their range, 1e-5 slack)."""
    pa = np.ones((q.shape[0], plan.points[0].shape[0]), dtype=np.bool_)
    cache: dict = {}
    for k, cond, (lo, hi) in plan.conditional:
        v = cond.evaluate(q, 0, cache).value
        pa[:, k] = (v >= lo - 1e-5) & (v <= hi + 1e-5)
    return pa


def _relative_frames(parent: np.ndarray, body_frame: np.ndarray, pt_body: list, wr_body: list, mp: list,
                     mw: list) -> np.ndarray:
    """(M, n_frames) bool: per unit, the frames between its bodies (path points' and wrap objects') and
    their deepest common ancestor.  The unit's path, hence L and R, is a function of these frames' joint
    variables and gradients alone (the frames above move the whole path rigidly)."""
    def chain(f):
        out = [f]
        while parent[f] != f and parent[f] >= 0:
            f = int(parent[f])
            out.append(f)
        return out
    frames = np.zeros((len(mp) - 1, len(parent)), dtype=bool)
    for m in range(len(mp) - 1):
        bodies = list(pt_body[mp[m]:mp[m + 1]]) + list(wr_body[mw[m]:mw[m + 1]])
        chains = [set(chain(int(body_frame[b]))) for b in bodies]
        if chains:
            frames[m, sorted(set().union(*chains) - set.intersection(*chains))] = True
    return frames


def _units_fixed_in_batch(plan: _JitPlan, val: np.ndarray, grad: np.ndarray, pa: np.ndarray) -> np.ndarray:
    """(M,) bool: units whose relative configuration -- the joint variables and gradients of their
    :func:`_relative_frames`, and their conditional points' activity -- is bitwise the same in every
    configuration of the batch (e.g. the units that do not cross the swept joints of a sweep)."""
    nu = len(plan.muscles)
    if val.shape[0] < 2:
        return np.zeros(nu, dtype=bool)
    v = val.view(np.uint64)
    g = grad.view(np.uint64)
    frame_moves = ~((v == v[:1]).all(axis=0) & (g == g[:1]).all(axis=(0, 2)))
    point_moves = ~(pa == pa[:1]).all(axis=0)
    mp = plan.path[0]
    unit_of_point = np.repeat(np.arange(nu), np.diff(mp))
    moves = (plan.relative_frames & frame_moves).any(axis=1)
    moves[unit_of_point[point_moves]] = True
    return ~moves


def _lengths_and_moment_arms_kernel(model: Model, q: np.ndarray, muscles, wrapping: bool, opensim_compat: bool,
                                    want_r: bool):
    """L (N, M) and R (N, n_q, M, or None unless ``want_r``) through ``wrapping._kernels_muscles``.

    A unit whose relative configuration is the same in the whole batch (:func:`_units_fixed_in_batch`)
    is evaluated at the first configuration only and its L and R are repeated: they are functions of
    that relative configuration (the kernel's values at the other configurations differ from them only
    by the round-off of working in ground coordinates, measured below 1e-14 m: docs/wrapping.md)."""
    plan = _jit_plan(model, muscles, wrapping)
    val, grad = _joint_variable_arrays(model, q)
    pa = _point_activity(plan, q)
    fixed = _units_fixed_in_batch(plan, val, grad, pa)
    if not fixed.any():
        return _run_lengths_kernel(model, plan, val, grad, pa, opensim_compat, want_r)
    n, nu = q.shape[0], len(plan.muscles)
    names = [mu.name for mu in plan.muscles]
    length = np.empty((n, nu))
    r = np.empty((n, model.n_q, nu)) if want_r else None
    for sel, rows in ((np.flatnonzero(fixed), slice(0, 1)), (np.flatnonzero(~fixed), slice(None))):
        if sel.size == 0:
            continue
        sub = plan if sel.size == nu else _jit_plan(model, [names[k] for k in sel], wrapping)
        ls, rs = _run_lengths_kernel(model, sub, val[rows], grad[rows], _point_activity(sub, q[rows]),
                                     opensim_compat, want_r)
        length[:, sel] = ls
        if want_r:
            r[:, :, sel] = rs
    return length, r


def _run_lengths_kernel(model: Model, plan: _JitPlan, val: np.ndarray, grad: np.ndarray, pa: np.ndarray,
                        opensim_compat: bool, want_r: bool):
    """The kernel on the plan's units at the configurations of val, grad (joint variables) and pa."""
    from osim_emb.paths.wrapping._kernels_muscles import lengths_moment_arms_kernel
    from osim_emb.paths.wrapping._kernels_path import run_threads
    n = val.shape[0]
    pt_body, pt_loc = plan.points
    mp, mw = plan.path[0], plan.path[1]
    out = (np.empty((n, mp[-1], 3)), np.empty((n, mw[-1], 4, 4)), np.zeros((n, mp.shape[0] - 1)),
           np.zeros((n, model.n_q, mp.shape[0] - 1)))
    args = (np.ascontiguousarray(val), np.ascontiguousarray(grad), *plan.kin, *plan.bodies, pt_body, pt_loc, pa,
            *plan.wraps, *plan.frames, *plan.path, bool(opensim_compat), bool(want_r))
    run_threads(lengths_moment_arms_kernel, args, out, n)
    length, r = out[2], out[3]
    return length, (r if want_r else None)
