"""Joint reaction loads: the force and moment a joint transmits, as OpenSim's JointReaction analysis reports them.

Cut the joint between a body B and its parent, and take the subtree S of bodies outboard of the cut. Newton's
and Euler's laws for S (the seed's virtual-work equations, Eqs 124-148, read per body rather than projected on
the coordinates) give the load the parent applies to B across the joint:

    W_reaction = sum_{k in S} ( W_inertial,k - W_applied,k ),
    W_inertial,k = ( I_k alpha_k + omega_k x I_k omega_k + c_k x m_k a_k ;  m_k a_k )   about the ground origin,

with W_applied,k every body force on k (gravity, the muscles' tension at their path points, external loads,
point and torque actuators, the force elements' wrenches: contacts, bushings, point springs, prescribed forces).
Mobility forces (coordinate actuators, coordinate limits and springs, the couplers' and the moving points'
generalized forces) act across joints: inside S they cancel, at the cut they are part of the
reaction, outside S they do not act on S, so only the accelerations feel them. This is the "free-body" form of
Simbody's mobilizer reaction (``SimbodyMatterSubsystem::calcMobilizerReactionForces``: "the force required to
make the system move in the same manner" once the mobilizer is cut; mobility forces included), which OpenSim's
JointReaction reports on the child at the joint's child frame (or, negated and shifted, on the parent at the
parent frame), expressed in a chosen frame.

The accelerations are those of forward dynamics under the given forces (OpenSim's analysis realizes the
model's accelerations with the actuators overridden by a forces file), in the package's minimal coordinates:
q̈ = M⁻¹(G + τ − N q̇); a frame's spatial acceleration is Ξ q̈ + (dΞ/dq q̇) q̇ (Eqs 57, 89).

Arrays: wrenches (N, n_bodies, 6) = (moment about the ground origin, force) in ground, indexed as
``model.bodies``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from osim_emb.core.kinematics import FrameKinematics, cross3, forward_kinematics
from osim_emb.model import Model
from osim_emb.paths.loads import path_loads

__all__ = [
    "ReactionRequest",
    "JointTopology",
    "joint_topology",
    "reaction_requests",
    "inertial_wrenches",
    "gravity_wrenches",
    "path_loads",
    "add_body_wrenches",
    "joint_reaction_loads",
    "reaction_labels",
    "ReactionResult",
    "joint_reactions_of_motion",
    "constraint_loads",
]

#: configurations per block of second-order kinematics (its Jacobian derivative is N x frames x nq² x 6)
_BLOCK = 64


@dataclass(frozen=True)
class JointTopology:
    """An OpenSim joint as the multibody tree sees it: parent and child bodies, the frames F (on the parent) and M
    (on the child) as 4x4 poses in their bodies, and the bodies outboard of the joint (``subtree``, indices into
    ``model.bodies``)."""

    name: str
    parent: str
    child: str
    parent_frame: np.ndarray
    child_frame: np.ndarray
    parent_frame_name: str
    child_frame_name: str
    subtree: tuple[int, ...]
    reversed: bool = False


@dataclass(frozen=True)
class ReactionRequest:
    """One reported load: joint, the body it acts on ("child" or "parent") and the frame it is expressed in (a body
    or ground, or "child"/"parent", or a joint's offset frame)."""

    joint: str
    on: str = "child"
    expressed_in: str = "ground"


def _document(model: Model):
    doc = model.extras.get("document") if isinstance(model.extras, dict) else None
    if doc is None:
        raise ValueError(f"{model.name}: joint reactions need the model's OpenSim joints (load it from a .osim file)")
    return doc


def joint_topology(model: Model) -> dict[str, JointTopology]:
    """Every OpenSim joint of the model, with the bodies outboard of it in the multibody tree (a joint Simbody
    reverses, because its child leads to the ground, keeps its frames but is marked ``reversed``: its ``subtree`` then
    holds its parent)."""
    doc = _document(model)
    body_index = {b.name: i for i, b in enumerate(model.bodies)}
    ground = doc.ground
    children: dict[str, list[str]] = {}
    frames = {b.name: b.frame for b in model.bodies}
    out = {}
    reversed_joints = set()
    for j in doc.joints:
        p, c = j.parent.body, j.child.body
        # the converter reverses a joint whose child is nearer the ground; detect it from the frame tree
        rev = c != ground and p != ground and p in frames and c in frames and _is_ancestor(model, frames[c], frames[p])
        if rev or c == ground:
            reversed_joints.add(j.name)
            p, c = c, p
        children.setdefault(p, []).append(c)
    for j in doc.joints:
        start = j.parent.body if j.name in reversed_joints else j.child.body
        stack, seen = [start], []
        while stack:
            b = stack.pop()
            if b in seen:
                continue
            seen.append(b)
            stack.extend(children.get(b, []))
        sub = tuple(sorted(body_index[b] for b in seen if b in body_index))
        out[j.name] = JointTopology(j.name, j.parent.body, j.child.body, j.parent.transform(), j.child.transform(),
                                    j.parent.name or f"{j.parent.body}_offset", j.child.name or f"{j.child.body}_offset",
                                    sub, j.name in reversed_joints)
    return out


def _is_ancestor(model: Model, a: int, b: int) -> bool:
    """Is frame a a strict ancestor of frame b in the package's frame tree?"""
    while b != 0:
        b = model.joints[b - 1].parent
        if b == a:
            return True
    return False


def reaction_requests(model: Model, joints: Sequence[str] | None = None, on: Sequence[str] | str = "child",
                      expressed_in: Sequence[str] | str = "ground") -> list[ReactionRequest]:
    """OpenSim's JointReaction lists (joint_names, apply_on_bodies, express_in_frame) as requests: joints None or
    ["ALL"] for every joint; ``on`` and ``expressed_in`` of length 1 (for all) or one per joint. Unknown joints,
    bodies and frames are refused by name."""
    topo = joint_topology(model)
    if not joints or (len(joints) == 1 and str(joints[0]).upper() == "ALL"):
        joints = list(topo)
    on = [on] if isinstance(on, str) else list(on)
    expressed_in = [expressed_in] if isinstance(expressed_in, str) else list(expressed_in)
    for name, lst in (("apply_on_bodies", on), ("express_in_frame", expressed_in)):
        if len(lst) not in (1, len(joints)):
            raise ValueError(f"{name}: {len(lst)} entries for {len(joints)} joints (give one for all, or one per joint)")
    unknown = [j for j in joints if j not in topo]
    if unknown:
        raise ValueError(f"{model.name}: no joint {', '.join(map(repr, unknown))} (joints: {', '.join(topo)})")
    out = []
    for i, j in enumerate(joints):
        side = (on[i] if len(on) > 1 else on[0]).lower()
        if side not in ("child", "parent"):
            raise ValueError(f"joint {j!r}: apply_on_bodies must be 'child' or 'parent', not {side!r}")
        frame = expressed_in[i] if len(expressed_in) > 1 else expressed_in[0]
        _frame_pose_spec(model, topo[j], frame)  # checked now
        out.append(ReactionRequest(j, side, frame))
    return out


def _frame_pose_spec(model: Model, t: JointTopology, frame: str) -> tuple[str, str, np.ndarray]:
    """(label name, body, pose of the frame in that body) of a frame named in express_in_frame."""
    doc = _document(model)
    if frame == doc.ground or frame.lower() == "ground":
        return doc.ground, doc.ground, np.eye(4)
    if frame in {b.name for b in doc.bodies}:
        return frame, frame, np.eye(4)
    offsets = {}
    for j in doc.joints:
        for side in (j.parent, j.child):
            if side.name:
                offsets.setdefault(side.name, (side.body, side.transform()))
    if frame in offsets:
        body, pose = offsets[frame]
        return frame, body, pose
    if frame.lower() == "child":
        return t.child, t.child, np.eye(4)
    if frame.lower() == "parent":
        return t.parent, t.parent, np.eye(4)
    raise ValueError(f"{model.name}: express_in_frame {frame!r} is neither 'ground', 'child', 'parent', a body nor a "
                     "joint's offset frame")


def _body_ground_poses(model: Model, kin: FrameKinematics, ground: str) -> dict[str, np.ndarray]:
    poses = {ground: np.broadcast_to(np.eye(4), (kin.n, 4, 4))}
    for b in model.bodies:
        poses[b.name] = kin.transforms[:, b.frame] @ b.frame_to_body
    return poses


def inertial_wrenches(model: Model, q: Any, qdot: Any, qddot: Any, progress: bool = True) -> np.ndarray:
    """(N, n_bodies, 6): each body's rate of change of momentum as a wrench about the ground origin in ground,
    (I α + ω × I ω + c × m a_c ; m a_c), with the spatial accelerations of second-order kinematics (a progress bar
    past 2000 configurations)."""
    from osim_emb.progress import Progress
    q, qd, qdd = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qdot, qddot))
    n, nb = q.shape[0], len(model.bodies)
    out = np.zeros((n, nb, 6))
    with Progress("joint reactions", n, enabled=progress and n > 2000, unit="frame") as bar:
        for s in range(0, n, _BLOCK):
            _inertial_block(model, q, qd, qdd, slice(s, min(n, s + _BLOCK)), out)
            bar.advance(min(n, s + _BLOCK) - s)
    return out


def _inertial_block(model: Model, q, qd, qdd, sl: slice, out: np.ndarray) -> None:
    """The inertial wrenches of configurations ``sl`` into ``out`` (one block of second-order kinematics)."""
    kin = forward_kinematics(model, q[sl], order=2)
    xi, dxi = kin.jacobian, kin.jacobian_derivative
    twist = np.einsum("nfkc,nk->nfc", xi, qd[sl])
    accel = np.einsum("nfkc,nk->nfc", xi, qdd[sl]) + np.einsum("nfklc,nk,nl->nfc", dxi, qd[sl], qd[sl],
                                                               optimize=True)
    for i, b in enumerate(model.bodies):
        if b.mass == 0.0 and not np.any(b.inertia):
            continue
        a = kin.transforms[:, b.frame] @ b.frame_to_body
        rot = a[:, :3, :3]
        c = np.einsum("nij,j->ni", rot, b.com) + a[:, :3, 3]
        w, v = twist[:, b.frame, :3], twist[:, b.frame, 3:]
        alpha, dv = accel[:, b.frame, :3], accel[:, b.frame, 3:]
        a_c = cross3(alpha, c) + dv + cross3(w, cross3(w, c) + v)
        inertia = rot @ b.inertia @ np.swapaxes(rot, 1, 2)
        iw = np.einsum("nij,nj->ni", inertia, w)
        f = b.mass * a_c
        out[sl, i, :3] = np.einsum("nij,nj->ni", inertia, alpha) + cross3(w, iw) + cross3(c, f)
        out[sl, i, 3:] = f


def gravity_wrenches(model: Model, kin: FrameKinematics) -> np.ndarray:
    """(N, n_bodies, 6): each body's weight m g at its centre of mass, about the ground origin."""
    g = np.asarray(model.gravity, dtype=float)
    out = np.zeros((kin.n, len(model.bodies), 6))
    for i, b in enumerate(model.bodies):
        if b.mass == 0.0:
            continue
        a = kin.transforms[:, b.frame] @ b.frame_to_body
        c = np.einsum("nij,j->ni", a[:, :3, :3], b.com) + a[:, :3, 3]
        f = b.mass * g
        out[:, i, :3] = cross3(c, f)
        out[:, i, 3:] = f
    return out


def add_body_wrenches(model: Model, out: np.ndarray, wrenches, scale: Any = 1.0) -> None:
    """Add :class:`osim_emb.core.dynamics.BodyWrench` es (times ``scale``, scalar or (N,)) to ``out`` (N, nb, 6);
    wrenches on the ground are dropped."""
    index = {b.name: i for i, b in enumerate(model.bodies)}
    scale = np.broadcast_to(np.asarray(scale, dtype=float), (out.shape[0],))
    for w in wrenches:
        if w.body in index:
            out[:, index[w.body]] += w.about_origin() * scale[:, None]


def joint_reaction_loads(model: Model, q: Any, applied: np.ndarray, inertial: np.ndarray,
                         requests: Sequence[ReactionRequest]) -> np.ndarray:
    """(N, len(requests), 9): force (3), moment (3) and point of application (3) of each requested reaction,
    expressed in its frame, as OpenSim's JointReaction columns _fx.._fz, _mx.._mz, _px.._pz. ``applied`` and
    ``inertial`` (N, n_bodies, 6) are wrenches about the ground origin (:func:`inertial_wrenches`,
    :func:`gravity_wrenches`, :func:`osim_emb.paths.loads.path_loads`, :func:`add_body_wrenches`)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    topo = joint_topology(model)
    ground = _document(model).ground
    kin = forward_kinematics(model, q, order=0)
    poses = _body_ground_poses(model, kin, ground)
    net = inertial - applied
    out = np.zeros((q.shape[0], len(requests), 9))
    for r, req in enumerate(requests):
        t = topo[req.joint]
        # on the child, about the ground origin: the free-body sum of the bodies outboard of the cut, which hold the
        # child, or (a joint Simbody reverses) the parent, whose load is then the child's negated
        total = (-1.0 if t.reversed else 1.0) * net[:, list(t.subtree)].sum(axis=1)
        if req.on == "child":
            point = (poses[t.child] @ t.child_frame)[:, :3, 3]
            force, moment = total[:, 3:], total[:, :3] - cross3(point, total[:, 3:])
        else:
            point = (poses[t.parent] @ t.parent_frame)[:, :3, 3]
            force, moment = -total[:, 3:], -(total[:, :3] - cross3(point, total[:, 3:]))
        _, body, pose = _frame_pose_spec(model, t, req.expressed_in)
        frame = poses[body] @ pose
        rt = np.swapaxes(frame[:, :3, :3], 1, 2)
        out[:, r, 0:3] = np.einsum("nij,nj->ni", rt, force)
        out[:, r, 3:6] = np.einsum("nij,nj->ni", rt, moment)
        out[:, r, 6:9] = np.einsum("nij,nj->ni", rt, point - frame[:, :3, 3])
    return out


def _applied_loads(model: Model, time, q, qd, forces, muscles, actuators, reserves, external_loads, limit_forces,
                   path_forces, force_elements=None) -> tuple[np.ndarray, np.ndarray, FrameKinematics]:
    """Every load but gravity along the motion: the body wrenches (N, n_bodies, 6) and the generalized forces
    (N, n_q) they and the mobility forces do work through; the first-order kinematics."""
    from osim_emb.core.dynamics import actuator_generalized_forces, actuator_wrenches, external_load_forces, \
        external_load_wrenches
    from osim_emb.core.speeds import forces_about_coordinates
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.simulation.motions import limit_generalized_forces
    n = q.shape[0]
    tau = np.zeros((n, model.n_q))
    applied = np.zeros((n, len(model.bodies), 6))
    kin = forward_kinematics(model, q, order=1)
    pathed = [m for m in muscles if m.points]
    function_based = [m for m in muscles if not m.points]  # OpenSim applies their generalized forces only
    if function_based:
        _, r = lengths_and_moment_arms(model, q, [m.name for m in function_based], allow_out_of_range=True)
        tau += np.einsum("nkm,nm->nk", r, np.stack([forces[m.name] for m in function_based], axis=1))
    if pathed:
        wrenches, generalized = path_loads(model, q, np.stack([forces[m.name] for m in pathed], axis=1),
                                           [m.name for m in pathed])
        applied += wrenches
        tau += generalized
    if actuators:
        b = actuator_generalized_forces(model, q, actuators)
        for j, act in enumerate(actuators):
            control = forces[act.name] / act.optimal_force
            tau += b[:, :, j] * control[:, None]
            add_body_wrenches(model, applied, actuator_wrenches(model, kin, act), control)
    if reserves:  # OpenSim's CoordinateActuators: mobility forces, about its speeds on Ball, Free and Ellipsoid joints
        reserve = np.zeros((n, model.n_q))
        for column, coordinate in reserves.items():
            reserve[:, model.coordinate_index(coordinate)] += forces[column]
        tau += forces_about_coordinates(model, q, reserve)
    if external_loads is not None:
        loads = external_loads.at(time)
        tau += external_load_forces(model, q, loads)
        add_body_wrenches(model, applied, external_load_wrenches(model, kin, loads))
    if len(limit_forces):
        tau += limit_generalized_forces(limit_forces, q, qd)
    if len(path_forces):
        from osim_emb.simulation.muscle_driven import passive_path_loads
        _, wrenches, generalized = passive_path_loads(model, path_forces, q, qd)
        applied += wrenches
        tau += generalized
    if force_elements:  # on the bodies as the external loads; the coordinate springs as mobility forces
        from osim_emb.simulation.force_elements import force_element_forces, force_element_wrenches
        add_body_wrenches(model, applied, force_element_wrenches(model, kin, qd, time, force_elements))
        tau += force_element_forces(model, force_elements, time, q, qd)
    return applied, tau, kin


def reaction_labels(model: Model, requests: Sequence[ReactionRequest]) -> list[str]:
    """OpenSim's column labels: JOINT_on_BODY_in_FRAME_fx, ..._mz, ..._pz."""
    topo = joint_topology(model)
    labels = []
    for req in requests:
        t = topo[req.joint]
        body = t.child if req.on == "child" else t.parent
        frame, _, _ = _frame_pose_spec(model, t, req.expressed_in)
        root = f"{req.joint}_on_{body}_in_{frame}"
        labels += [f"{root}_{k}" for k in ("fx", "fy", "fz", "mx", "my", "mz", "px", "py", "pz")]
    return labels


@dataclass
class ReactionResult:
    """Joint reaction loads along a motion: ``loads`` (N, n_requests, 9) as :func:`joint_reaction_loads`, the
    ``labels`` of OpenSim's columns, and the forward-dynamics accelerations ``qddot`` (N, n_q) they balance."""

    time: np.ndarray
    loads: np.ndarray
    labels: list[str]
    qddot: np.ndarray

    def table(self):
        import pandas as pd
        return pd.DataFrame({"time": self.time, **dict(zip(self.labels, self.loads.reshape(len(self.time), -1).T))})


def _point_constraint_loop(model: Model):
    """The model's PointConstraintLoop (None without point constraints); a model whose loops were closed without
    one (read from JSON) or left out (lenient import) is refused: its reactions would miss the constraint forces."""
    extras = model.extras if isinstance(model.extras, dict) else {}
    loop = extras.get("point_constraint_loop")
    if loop is not None:
        return loop
    doc = extras.get("document")
    closed = [d.name for d in model.dependent_coordinates if d.source.startswith("point constraint")]
    if closed or (doc is not None and doc.point_constraints):
        kind = doc.point_constraints[0].type if doc is not None and doc.point_constraints else "point constraint"
        raise ValueError(f"{model.name}: joint reactions need the {kind}s' body forces, hence the constraints "
                         "themselves: " + (f"this model has coordinates {closed[:4]} solved from the others but not the "
                                           "constraints (a model read back from JSON)" if closed else
                                           "they were left out at import") + "; load the .osim file, strict")
    return None


def constraint_loads(model: Model, loop, time, q, qd, net_inertial, forces, muscles, actuators, reserves,
                     external_loads, limit_forces, path_forces, force_elements=None) -> np.ndarray:
    """The body wrenches (N, n_bodies, 6) of a model's point constraints along a motion.  The loop's spanning tree
    has every coordinate the loops and the couplers tie free (w: the generalized coordinates and the dependent ones
    f(q)); there Lagrange's equations with the multipliers λ of the point constraints' equations g and μ of the
    couplers' h read (∂g/∂w)ᵀ λ + (∂h/∂w)ᵀ μ = Σ_k Ξ_kᵀ (W_inertial,k − W_gravity,k) − τ_w, with τ_w every other
    applied load's generalized force about w (Eqs 100-120 before the elimination).  The minimal equations of motion
    put that residual in the range of the constraint Jacobian's transpose; (λ, μ) is its minimum-norm solution (unique
    unless equations are redundant, then the least-squares split that Simbody's multipliers take; exact to round-off,
    checked), and λ gives the wrenches (:func:`osim_emb.core.point_constraints.constraint_wrenches`).
    ``net_inertial``: inertial minus gravity wrenches of the model's bodies."""
    from osim_emb.core.point_constraints import constraint_wrenches, point_constraint_jet
    from osim_emb.simulation.dae import coupler_jacobian, coupler_constraints
    from osim_emb.simulation.muscle_driven import coordinate_forces_from_model, passive_path_forces_from_model
    tree = loop.tree
    n_all = sum(p.n_equations for p in loop.pairs)
    if len(loop.equations) < n_all:
        logging.getLogger(__name__).info(
            "%s: %d of the point constraints' %d equations are redundant; the load they share is split by least "
            "squares, as OpenSim's multipliers split it", model.name, n_all - len(loop.equations), n_all)
    w, wd = np.zeros((q.shape[0], tree.n_q)), np.zeros((q.shape[0], tree.n_q))
    deps = {d.name: d for d in model.dependent_coordinates}
    for k, name in enumerate(tree.coordinate_names):
        if name in model.coordinate_names:
            i = model.coordinate_index(name)
            w[:, k], wd[:, k] = q[:, i], qd[:, i]
        else:
            jet = deps[name].function.evaluate(q, order=1)
            w[:, k], wd[:, k] = jet.value, np.einsum("nk,nk->n", jet.gradient, qd)
    index = {b.name: i for i, b in enumerate(model.bodies)}
    missing = [b.name for b in tree.bodies if b.name not in index]
    if missing:
        raise ValueError(f"{model.name}: bodies {missing[:4]} of the point constraints' spanning tree are not in the "
                         "model")
    by_name = {m.name: m for m in tree.muscles}
    limits = {f.name for f in limit_forces}
    springs = {f.name for f in path_forces}
    _, tau_w, kin_w = _applied_loads(
        tree, time, w, wd, forces, [by_name[m.name] for m in muscles], actuators, reserves, external_loads,
        [f for f in coordinate_forces_from_model(tree)[0] if f.name in limits],
        [f for f in passive_path_forces_from_model(tree) if f.name in springs], force_elements)
    order = [index[b.name] for b in tree.bodies]
    xi = kin_w.jacobian[:, [b.frame for b in tree.bodies]]  # (N, bodies, nw, 6)
    residual = np.einsum("nbks,nbs->nk", xi, net_inertial[:, order]) - tau_w
    couplers = coupler_constraints(model.extras["document"], tree.coordinate_names)
    jac = np.concatenate([point_constraint_jet(tree, loop.pairs, w, order=1)[1],
                          coupler_jacobian(couplers, w, tree.n_q)], axis=1)  # (N, m, nw)
    multipliers = np.einsum("nmk,nk->nm", np.linalg.pinv(np.swapaxes(jac, 1, 2)), residual)
    left = np.einsum("nmk,nm->nk", jac, multipliers) - residual
    scale = np.abs(residual).max() + np.abs(tau_w).max() + 1.0
    if not np.abs(left).max() <= 1e-6 * scale:
        worst = int(np.abs(left).max(axis=1).argmax())
        raise RuntimeError(f"{model.name}: the point constraints' forces do not balance the tree's equations of motion "
                           f"at frame {worst} (residual {np.abs(left[worst]).max():.3g} of {scale:.3g}): the motion's "
                           "configurations may not satisfy the constraints")
    out = np.zeros((q.shape[0], len(model.bodies), 6))
    body_of_frame = {b.frame: index[b.name] for b in tree.bodies}
    for frame, wrench in constraint_wrenches(tree, loop.pairs, range(n_all), w, multipliers[:, :n_all]):
        if frame in body_of_frame:  # (none on the ground)
            out[:, body_of_frame[frame]] += wrench
    return out

def joint_reactions_of_motion(model: Model, time: Any, q: Any, qdot: Any, forces: dict, *,
                              requests: Sequence[ReactionRequest] | None = None, actuators: Sequence[Any] = (),
                              external_loads: Any = None, limit_forces: Sequence[Any] = (),
                              path_forces: Sequence[Any] = (), force_elements: Any = None,
                              progress: bool = True) -> ReactionResult:
    """OpenSim's JointReaction analysis along a motion with the actuator forces given (its ``forces_file``).

    Parameters
    ----------
    model : Model
        Loaded from a .osim file (the joints' frames come from it).
    time, q, qdot : array_like
        (N,) seconds; (N, n_q) configurations and speeds (rad, m; rad/s, m/s).
    forces : dict
        Name -> (N,) force of every muscle with a force model (newtons: its tension), every actuator of
        ``actuators`` (its force, optimal force × control, as OpenSim's StaticOptimization writes it) and any
        ``reserve_COORDINATE`` (the package's reserves: N m or N on that coordinate).
    requests : sequence of ReactionRequest, optional
        What to report (default: every joint, on the child, in ground; :func:`reaction_requests`).
    actuators : sequence, optional
        The actuators the forces name (:func:`osim_emb.io.force_set.read_actuators`, ``model_actuators``).
    external_loads : ExternalLoads, optional
        Applied at the motion's times (:func:`osim_emb.io.external_loads.read_external_loads`).
    limit_forces : sequence, optional
        The model's CoordinateLimitForces (they move the accelerations; they act across joints).
    path_forces : sequence, optional
        The model's PathSprings and Ligaments (:func:`osim_emb.simulation.muscle_driven.passive_path_forces_from_model`):
        their tensions at their path points, as the muscles'.
    force_elements : ForceElements, optional
        The model's contacts, bushings, springs and prescribed forces
        (:func:`osim_emb.simulation.force_elements.model_force_elements`) at each frame's state: their wrenches on the
        bodies, as the external loads; SpringGeneralizedForces act across their joints, as the coordinate limits.
    progress : bool
        A progress bar past 2000 frames.

    Returns
    -------
    ReactionResult

    Examples
    --------
    The shoulder model at its default pose, at rest, its muscles slack: the load the shoulder's last joint carries
    on the humerus and on its parent are equal and opposite (Newton's third law, as OpenSim reports them):

    >>> import numpy as np
    >>> import osim_emb as oe
    >>> from osim_emb.simulation.joint_reactions import reaction_requests
    >>> model = oe.load_builtin()
    >>> q = model.default_q[None, :]
    >>> slack = {m.name: 0.0 for m in model.muscles if m.parameters is not None}
    >>> on = {side: oe.joint_reactions_of_motion(model, [0.0], q, 0 * q, slack,
    ...                                          requests=reaction_requests(model, ["shoulder2"], side)).loads[0, 0]
    ...       for side in ("child", "parent")}
    >>> bool(np.allclose(on["child"][:3], -on["parent"][:3]))
    True
    """
    from osim_emb.core.dynamics import forward_dynamics
    time = np.asarray(time, dtype=float)
    q, qd = np.atleast_2d(np.asarray(q, dtype=float)), np.atleast_2d(np.asarray(qdot, dtype=float))
    n = q.shape[0]
    if requests is None:
        requests = reaction_requests(model)
    forces = {k: np.broadcast_to(np.asarray(v, dtype=float), (n,)) for k, v in forces.items()}
    from osim_emb.muscles.hill import units_applying_force
    muscles = units_applying_force(model.muscles)
    applying = {m.name for m in muscles}
    off = [m.name for m in model.muscles if m.parameters is not None and m.name not in applying]
    if off:  # OpenSim applies no force of theirs, given or not
        logging.getLogger(__name__).warning(
            "joint reactions of %s leave out %d unit(s) whose appliesForce is false%s: %s", model.name, len(off),
            " (their forces given are not applied)" if any(n in forces for n in off) else "",
            ", ".join(off[:8]) + (", ..." if len(off) > 8 else ""))
        forces = {k: v for k, v in forces.items() if k not in off}
    missing = [m.name for m in muscles if m.name not in forces]
    missing += [a.name for a in actuators if a.name not in forces]
    if missing:
        raise ValueError(f"no force given for {len(missing)} actuator(s) of {model.name}: "
                         f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}")
    known = {m.name for m in muscles} | {a.name for a in actuators}  # (before the held ones are set aside)
    reserves = {k: k[len("reserve_"):] for k in forces if k not in known and k.startswith("reserve_")
                and k[len("reserve_"):] in model.coordinate_names}
    unknown = [k for k in forces if k not in known and k not in reserves]
    records = {f"{f.body}_{f.name}_{x}" for f in (external_loads.forces if external_loads is not None else ())
               for x in ("Fx", "Fy", "Fz", "px", "py", "pz", "Tx", "Ty", "Tz")}
    echoed = [k for k in unknown if k in records]  # OpenSim's StaticOptimization writes the external loads' records
    if echoed:
        logging.getLogger(__name__).info(
            "joint reactions of %s: %d column(s) of the forces are the external loads' records (OpenSim's "
            "StaticOptimization writes them), not read: the loads are applied from %s", model.name, len(echoed),
            external_loads.path)
        unknown = [k for k in unknown if k not in records]
    if unknown:
        raise ValueError(f"forces of {', '.join(map(repr, unknown[:8]))}{' ...' if len(unknown) > 8 else ''}: not a "
                         f"muscle of {model.name}, a given actuator, reserve_COORDINATE or a record of the external loads "
                         "given (give the actuator files or the external loads the forces came from)")
    loop = _point_constraint_loop(model)
    dependent = {d.name: d.kind for d in model.dependent_coordinates}
    held = [a for a in actuators if a.kind == "CoordinateActuator" and dependent.get(a.coordinate) in ("locked",
                                                                                                      "constant")]
    if held:  # no work; their force is part of that joint's reaction, which the free-body sums give as a whole
        logging.getLogger(__name__).info(
            "%d actuator(s) on locked coordinates move nothing; their force is part of those joints' reactions: %s",
            len(held), ", ".join(a.name for a in held[:8]))
        actuators = [a for a in actuators if a not in held]
    loads = (forces, muscles, actuators, reserves, external_loads, limit_forces, path_forces, force_elements)
    applied, tau, kin = _applied_loads(model, time, q, qd, *loads)
    qdd = forward_dynamics(model, q, qd, tau)
    gravity = gravity_wrenches(model, kin)
    inertial = inertial_wrenches(model, q, qd, qdd, progress)
    applied += gravity
    if loop is not None:
        applied += constraint_loads(model, loop, time, q, qd, inertial - gravity, *loads)
    loads = joint_reaction_loads(model, q, applied, inertial, requests)
    return ReactionResult(time, loads, reaction_labels(model, requests), qdd)
