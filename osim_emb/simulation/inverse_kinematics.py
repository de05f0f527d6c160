"""Inverse kinematics from marker trajectories: the weighted least-squares problem of OpenSim's
InverseKinematicsTool, solved in the package's minimal coordinates.

At each frame the coordinates q minimize (Simbody's Assembler goals, summed with their weights)

    J(q) = Σ_i w_i |p_i(q) − o_i|² / (2 Σ_i w_i)  +  Σ_j w_j (c_j(q) − r_j)² / 2,

p_i the model marker in ground (Eq 41), o_i its observed position (markers missing in the frame leave both sums),
c_j a coordinate with a task (an independent q_k, or a dependent coordinate c = f(q) with gradient ∇f), r_j its
reference; clamped coordinates stay within their ranges (bounds), constraints hold exactly (couplers and loops are
functions of q). J = |r(q)|²/2 with the residuals r = (√(w_i/W) (p_i − o_i), √w_j (c_j − r_j)) and the Jacobian
√(w_i/W) ∂p_i/∂q = √(w_i/W) (ω_k × p_i + v_k) (Eq 43), so SciPy's trust-region least squares solves each frame
from the previous frame's solution (the first from the model's default pose, as OpenSim's ``assemble``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from osim_emb.core.kinematics import forward_kinematics
from osim_emb.io.markers import MarkerTrajectories
from osim_emb.model import Model

__all__ = ["CoordinateReference", "InverseKinematicsError", "InverseKinematicsResult", "ModelMarkers",
           "model_markers", "marker_positions", "inverse_kinematics"]

log = logging.getLogger("osim_emb")


class InverseKinematicsError(ValueError):
    """A problem that cannot be posed: no marker both in the model and the data, a task on an unknown coordinate."""


@dataclass(frozen=True)
class ModelMarkers:
    """Markers of a model as the kinematics evaluates them: each one's frame and position in that frame."""

    names: tuple[str, ...]
    frames: np.ndarray  # (m,) frame indices (0: ground)
    local: np.ndarray  # (m, 3) position in the frame


@dataclass(frozen=True)
class CoordinateReference:
    """A coordinate task: keep ``name`` near ``values`` (one per frame of the solve, or one for all; rad or m)
    with ``weight`` (OpenSim's IKCoordinateTask)."""

    name: str
    weight: float
    values: Any


@dataclass
class InverseKinematicsResult:
    """The solution at every solved frame, and OpenSim's error report (marker_errors)."""

    model: Model
    times: np.ndarray  # (T,)
    q: np.ndarray  # (T, n_q)
    markers: tuple[str, ...]  # markers in use, in the data's order
    weights: np.ndarray  # (m,)
    locations: np.ndarray  # (T, m, 3) model markers in ground
    squared_errors: np.ndarray  # (T, m), 0 where the marker is missing (as OpenSim reports it)
    objective: np.ndarray  # (T,) J at the solution
    evaluations: np.ndarray  # (T,) evaluations of r and ∂r/∂q in the solve
    undetermined: dict = field(default_factory=dict)  # coordinate -> frame indices where nothing determines it
    present: np.ndarray | None = None  # (T, m) the marker was observed

    def coordinates(self, in_degrees: bool = True) -> pd.DataFrame:
        """Every coordinate (independent, then dependent) by frame; rotational ones in degrees with
        ``in_degrees`` (as OpenSim's IK writes its .mot; coupled ones stay as they are, as OpenSim reads them)."""
        cols = {"time": self.times}
        for k, c in enumerate(self.model.coordinates):
            v = self.q[:, k]
            cols[c.name] = np.degrees(v) if in_degrees and c.motion_type == "rotational" else v
        for d in self.model.dependent_coordinates:
            v = np.asarray(d.function.evaluate(self.q, order=0).value, dtype=float)
            cols[d.name] = np.degrees(v) if in_degrees and d.motion_type == "rotational" else v
        return pd.DataFrame(cols)

    def marker_errors(self) -> pd.DataFrame:
        """OpenSim's ``_ik_marker_errors.sto``: total squared error (m²), RMS and largest marker error (m); the
        RMS divides by every marker in use, missing ones counting 0 (as OpenSim)."""
        total = self.squared_errors.sum(axis=1)
        return pd.DataFrame({"time": self.times, "total_squared_error": total,
                             "marker_error_RMS": np.sqrt(total / max(len(self.markers), 1)),
                             "marker_error_max": np.sqrt(self.squared_errors.max(axis=1, initial=0.0))})

    def marker_distances(self) -> pd.DataFrame:
        """Each marker's distance from its observation (m) by frame, NaN where the marker is missing: which marker
        the totals of :meth:`marker_errors` come from."""
        d = np.sqrt(self.squared_errors)
        d[~self.present] = np.nan
        return pd.DataFrame({"time": self.times, **{n: d[:, i] for i, n in enumerate(self.markers)}})

    def marker_locations(self) -> pd.DataFrame:
        """OpenSim's ``_ik_model_marker_locations.sto``: NAME_tx, NAME_ty, NAME_tz of every marker in use (m)."""
        cols = {"time": self.times}
        for i, name in enumerate(self.markers):
            for a, axis in enumerate("xyz"):
                cols[f"{name}_t{axis}"] = self.locations[:, i, a]
        return pd.DataFrame(cols)


def _ground_names(model: Model) -> set[str]:
    doc = model.extras.get("document")
    return {"ground", getattr(doc, "ground", "ground")}


def model_markers(model: Model, names: Sequence[str] | None = None) -> ModelMarkers:
    """The model's markers (all, or ``names`` in that order) as frame indices and positions in those frames."""
    table = {n: (b, np.asarray(loc, dtype=float)) for n, b, loc in model.extras.get("markers", [])}
    names = list(table) if names is None else list(names)
    frames, local = [], []
    for n in names:
        if n not in table:
            raise InverseKinematicsError(f"model {model.name!r} has no marker {n!r}")
        body, loc = table[n]
        if body in model.body_names:
            b = model.body(body)
            frames.append(b.frame)
            local.append((np.asarray(b.frame_to_body) @ np.append(loc, 1.0))[:3])
        elif body in _ground_names(model):
            frames.append(0)
            local.append(loc)
        else:
            raise InverseKinematicsError(f"marker {n!r} of model {model.name!r} is on {body!r}, not a body of the "
                                         "model")
    return ModelMarkers(tuple(names), np.asarray(frames, dtype=int), np.asarray(local, dtype=float).reshape(-1, 3))


def marker_positions(model: Model, q: Any, markers: ModelMarkers, jacobian: bool = False):
    """Ground positions (N, m, 3) of ``markers`` at configurations q (N, n_q), with their Jacobians
    ∂p/∂q (N, m, 3, n_q) when ``jacobian``."""
    kin = forward_kinematics(model, np.atleast_2d(q), order=1 if jacobian else 0)
    a = kin.transforms[:, markers.frames]  # (N, m, 4, 4)
    p = np.einsum("nmij,mj->nmi", a[..., :3, :3], markers.local) + a[..., :3, 3]
    if not jacobian:
        return p
    xi = kin.jacobian[:, markers.frames]  # (N, m, n_q, 6): (ω_k, v_k) of each marker's frame
    jac = np.cross(xi[..., :3], p[:, :, None, :]) + xi[..., 3:]
    return p, np.swapaxes(jac, 2, 3)


def _compiled_problem(model: Model, dependent_functions: Sequence[Any]):
    """(program, tree, work, task nodes) of :func:`inverse_kinematics_kernels.solve_frames`: the joint variables and the
    dependent coordinates with tasks as one joint-variable program (the package's compiled functions); None when a
    function cannot be compiled (an external one), for SciPy's route."""
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core.compiled import _Q
    from osim_emb.core.functions.program import ProgramBuilder, node_program_arrays, readonly
    from osim_emb.core.kinematics_kernels import frame_tree
    nq = model.n_q
    b = ProgramBuilder(nq)
    joint_nodes = [b.compile(j.variable, _Q) for j in model.joints]
    task_nodes = np.array([b.compile(f, _Q) for f in dependent_functions], dtype=np.int64)
    if b.externals:
        return None
    ints, flts = node_program_arrays(b, nq)
    nodes = np.array([-1] + joint_nodes, dtype=np.int64)
    nn, nf = len(b.nodes), nodes.size
    program = (readonly(ints), readonly(flts), np.zeros((0, 1 + nq + nq * nq)), K.has_chains(ints), nodes)
    work = (np.zeros((nq, 0)), np.zeros((nn, nq, 0)), np.empty(nn), np.empty((nn, nq)), np.empty(nf),
            np.empty((nf, nq)), np.empty((nf, 3, 3)), np.empty((nf, 3)), np.empty((nf, 6)), np.empty((nf, nq, 6)))
    return program, frame_tree(model).arrays(), work, task_nodes


def _residuals(model: Model, markers: ModelMarkers, q: np.ndarray, observed: np.ndarray, scale: np.ndarray,
               rows: list, reference: np.ndarray):
    """r(q) and ∂r/∂q of one frame with numpy (SciPy's route, for models with functions the kernels cannot
    evaluate): the residuals of ``inverse_kinematics_kernels._evaluate``."""
    p, jac = marker_positions(model, q, markers, jacobian=True)
    r = [(scale[:, None] * (p[0] - observed)).ravel()]
    j = [(scale[:, None, None] * jac[0]).reshape(-1, q.size)]
    for (k, function, sw), ref in zip(rows, reference):
        if k is not None:
            value, grad = q[k], np.eye(q.size)[k]
        else:
            jet = function.evaluate(q[None, :], order=1)
            value, grad = float(np.asarray(jet.value).ravel()[0]), np.asarray(jet.gradient, dtype=float).ravel()
        r.append(np.array([sw * (value - ref)]))
        j.append(sw * grad[None, :])
    return np.concatenate(r), np.vstack(j), p[0]


def _marker_weights(model: Model, data: MarkerTrajectories, weights: Mapping[str, float] | None):
    """Markers in use (data order) and their weights, as OpenSim's IK chooses them; what it leaves out is
    logged."""
    in_model = {n for n, _, _ in model.extras.get("markers", [])}
    if weights is None:
        used = [n for n in data.names if n in in_model]
        chosen = {n: 1.0 for n in used}
    else:
        for n, w in weights.items():
            if not np.isfinite(w) or w < 0:
                raise InverseKinematicsError(f"marker task {n!r}: weight {w!r} must be a finite number >= 0")
        absent = [n for n in weights if n not in data.names]
        if absent:
            log.warning("marker tasks without data in %s (left out): %s", data.path, ", ".join(absent))
        used = [n for n in data.names if n in weights and n in in_model]
        chosen = {n: float(weights[n]) for n in used}
    not_in_model = [n for n in (data.names if weights is None else weights) if n not in in_model]
    if not_in_model:
        log.warning("markers not in model %r (left out): %s", model.name, ", ".join(not_in_model))
    if not used:
        raise InverseKinematicsError(f"no marker of {data.path} is both in model {model.name!r} and tracked"
                                     + ("" if weights is None else " by a task"))
    return used, np.array([chosen[n] for n in used])


def _coordinate_rows(model: Model, references: Sequence[CoordinateReference], n_frames: int):
    rows, values = [], []
    independent = {c.name: k for k, c in enumerate(model.coordinates)}
    dependent = {d.name: d for d in model.dependent_coordinates}
    for ref in references:
        if not np.isfinite(ref.weight) or ref.weight < 0:
            raise InverseKinematicsError(f"coordinate task {ref.name!r}: weight {ref.weight!r} must be a finite "
                                         "number >= 0 (a coordinate held exactly is locked in the model)")
        v = np.broadcast_to(np.asarray(ref.values, dtype=float), (n_frames,))
        if ref.name in independent:
            rows.append((independent[ref.name], None, np.sqrt(ref.weight)))
        elif ref.name in dependent:
            d = dependent[ref.name]
            if d.kind != "coupled":  # OpenSim locks a locked coordinate and drops its task
                log.info("coordinate task %r left out: the coordinate is %s", ref.name, d.kind)
                continue
            rows.append((None, d.function, np.sqrt(ref.weight)))
        else:
            raise InverseKinematicsError(f"coordinate task {ref.name!r}: model {model.name!r} has no such "
                                         "coordinate")
        values.append(v)
    return rows, (np.column_stack(values) if values else np.zeros((n_frames, 0)))


def inverse_kinematics(model: Model, data: MarkerTrajectories, *, marker_weights: Mapping[str, float] | None = None,
                       coordinate_references: Sequence[CoordinateReference] = (),
                       frames: Sequence[int] | None = None, q0: Any = None, tolerance: float = 1e-10,
                       max_evaluations: int = 200, progress: bool = True) -> InverseKinematicsResult:
    """Solve OpenSim's IK problem at ``frames`` (indices into ``data``; default all), each from the previous
    solution (the first from ``q0``, default the model's default pose).

    ``marker_weights``: the tracked markers and their weights (OpenSim's applied IKMarkerTasks); None tracks every
    marker of the data that the model has, with weight 1. ``coordinate_references``: coordinate tasks, their
    ``values`` one per solved frame (or one). Markers missing in a frame (NaN) leave it. Each frame ends when a
    step moves q by less than ``tolerance`` relative to 1 + |q| (or after ``max_evaluations`` of r and ∂r/∂q;
    1 scores ``q0`` without moving it).
    """
    from osim_emb.progress import Progress
    from osim_emb.simulation.inverse_kinematics_kernels import solve_frames
    frames = np.arange(len(data.times)) if frames is None else np.asarray(frames, dtype=int)
    names, weights = _marker_weights(model, data, marker_weights)
    markers = model_markers(model, names)
    observed = np.ascontiguousarray(data.positions[frames][:, [data.index(n) for n in names]])
    rows, references = _coordinate_rows(model, coordinate_references, len(frames))
    lo = np.array([c.range[0] if c.clamped else -np.inf for c in model.coordinates])
    hi = np.array([c.range[1] if c.clamped else np.inf for c in model.coordinates])
    hi = np.where(hi > lo, hi, lo + 1e-12)  # a clamped coordinate of zero range: held (SciPy needs lo < hi)
    q0 = np.clip(model.default_q if q0 is None else np.asarray(q0, dtype=float), lo, hi)
    empty = ~np.isfinite(observed).all(axis=2).any(axis=1)
    if empty.any() and not rows:
        raise InverseKinematicsError(f"{data.path}: every tracked marker is missing at t = "
                                     f"{data.times[frames][np.flatnonzero(empty)[0]]:g} s and no coordinate task "
                                     "holds the pose")
    n, m = len(frames), len(names)
    q_out, locations, squared = np.empty((n, model.n_q)), np.empty((n, m, 3)), np.empty((n, m))
    objective, evaluations, norms = np.empty(n), np.empty(n, dtype=np.int64), np.empty((n, model.n_q))
    compiled = _compiled_problem(model, [f for k, f, _ in rows if k is None])
    with Progress("inverse kinematics", n, enabled=progress and n > 2000, unit="frame") as bar:
        if compiled is not None:
            program, tree, work, task_nodes = compiled
            task_q = np.array([-1 if k is None else k for k, _, _ in rows], dtype=np.int64)
            task_node = np.full(len(rows), -1, dtype=np.int64)
            task_node[task_q < 0] = task_nodes
            task_w = np.array([w for _, _, w in rows], dtype=float)
            for start in range(0, n, 1000):
                stop = min(start + 1000, n)
                try:
                    solve_frames(program, tree, work, markers.frames, markers.local, observed, weights, task_q,
                                 task_node, task_w, np.ascontiguousarray(references), lo, hi, q0, tolerance,
                                 max_evaluations, start, stop, q_out, locations, squared, objective, evaluations,
                                 norms)
                except (ValueError, np.linalg.LinAlgError) as exc:
                    raise InverseKinematicsError(f"{data.path}: inverse kinematics of model {model.name!r} failed "
                                                 f"between t = {data.times[frames[start]]:g} and "
                                                 f"{data.times[frames[stop - 1]]:g} s: {exc}") from None
                bar.advance(stop - start)
        else:
            _solve_with_scipy(model, markers, observed, weights, rows, references, lo, hi, q0, tolerance,
                              max_evaluations, q_out, locations, squared, objective, evaluations, norms, bar)
    undetermined = {}
    for k, c in enumerate(model.coordinates):
        idle = norms[:, k] <= 1e-12 * np.maximum(norms.max(axis=1), 1.0)
        if idle.any():
            undetermined[c.name] = frames[idle]
            log.warning("coordinate %r is determined by no tracked marker or task at %d frame(s) (first t = %g s): "
                        "it keeps the previous frame's value", c.name, int(idle.sum()), data.times[frames][idle][0])
    return InverseKinematicsResult(model, np.asarray(data.times)[frames], q_out, tuple(names), weights, locations,
                                   squared, objective, evaluations, undetermined, np.isfinite(observed).all(axis=2))


def _solve_with_scipy(model, markers, observed, weights, rows, references, lo, hi, q0, tolerance, max_evaluations,
                      q_out, locations, squared, objective, evaluations, norms, bar):
    """The frames by SciPy's trust-region reflective least squares with numpy kinematics: the route for models
    whose joint functions the kernels cannot evaluate (external functions); the same problem and start points."""
    from scipy.optimize import least_squares
    q = q0
    for t in range(len(observed)):
        present = np.isfinite(observed[t]).all(axis=1)
        obs = np.where(present[:, None], observed[t], 0.0)
        total = weights[present].sum()
        scale = np.where(present, np.sqrt(weights / total) if total > 0 else 0.0, 0.0)
        if t >= 2:
            q = np.clip(2.0 * q_out[t - 1] - q_out[t - 2], lo, hi)
        if max_evaluations > 1:
            q = least_squares(lambda x: _residuals(model, markers, x, obs, scale, rows, references[t])[0], q,
                              jac=lambda x: _residuals(model, markers, x, obs, scale, rows, references[t])[1],
                              bounds=(lo, hi), method="trf", xtol=tolerance, ftol=1e-15, gtol=1e-15,
                              max_nfev=max_evaluations).x
        r, j, p = _residuals(model, markers, q, obs, scale, rows, references[t])
        q_out[t], locations[t], objective[t], evaluations[t] = q, p, 0.5 * r @ r, max_evaluations
        squared[t] = np.where(present, ((p - obs) ** 2).sum(axis=1), 0.0)
        norms[t] = np.linalg.norm(j, axis=0)
        bar.advance()
