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

from osim_emb.core._accel import njit
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
    iterations: np.ndarray  # (T,) Jacobian evaluations of the solve
    undetermined: dict = field(default_factory=dict)  # coordinate -> frames where nothing determines it

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


@njit(nogil=True)
def _marker_rows(transforms, jacobian, frames, local, observed, scale, residual, rows, positions):
    """Ground positions of the markers (m, 3), their weighted residuals (3m) and Jacobian rows (3m, n_q) at one
    pose from its frame transforms (n_frames, 4, 4) and frame Jacobians (n_frames, n_q, 6); a marker with scale 0
    (missing) gives zero rows."""
    nq = jacobian.shape[1]
    for i in range(frames.size):
        f = frames[i]
        s = scale[i]
        for a in range(3):
            positions[i, a] = (transforms[f, a, 0] * local[i, 0] + transforms[f, a, 1] * local[i, 1]
                               + transforms[f, a, 2] * local[i, 2] + transforms[f, a, 3])
        p0, p1, p2 = positions[i, 0], positions[i, 1], positions[i, 2]
        for a in range(3):
            residual[3 * i + a] = s * (positions[i, a] - observed[i, a]) if s > 0.0 else 0.0
        for k in range(nq):
            w0, w1, w2 = jacobian[f, k, 0], jacobian[f, k, 1], jacobian[f, k, 2]
            rows[3 * i, k] = s * (w1 * p2 - w2 * p1 + jacobian[f, k, 3])
            rows[3 * i + 1, k] = s * (w2 * p0 - w0 * p2 + jacobian[f, k, 4])
            rows[3 * i + 2, k] = s * (w0 * p1 - w1 * p0 + jacobian[f, k, 5])


class _FrameProblem:
    """Residuals r(q) and Jacobian of one frame (markers, then coordinate tasks)."""

    def __init__(self, model: Model, markers: ModelMarkers, marker_weights: np.ndarray,
                 coordinate_rows: list[tuple[int | None, Any, float]]):
        self.model, self.markers = model, markers
        self.marker_weights = marker_weights
        self.coordinate_rows = coordinate_rows  # (index of q or None, dependent function or None, √w)
        m, nc = len(markers.names), len(coordinate_rows)
        self.residual = np.zeros(3 * m + nc)
        self.jacobian = np.zeros((3 * m + nc, model.n_q))
        self.p = np.zeros((m, 3))
        self._sw = np.array([s for _, _, s in coordinate_rows])
        for r, (k, _, s) in enumerate(coordinate_rows):
            if k is not None:
                self.jacobian[3 * m + r, k] = s

    def set_frame(self, observed: np.ndarray, reference: np.ndarray) -> None:
        present = np.all(np.isfinite(observed), axis=1)
        self.present = present
        self.observed = np.where(present[:, None], observed, 0.0)
        total = self.marker_weights[present].sum()
        self.scale = np.where(present, np.sqrt(self.marker_weights / total) if total > 0 else 0.0, 0.0)
        self.reference = np.asarray(reference, dtype=float)

    def evaluate(self, q: np.ndarray) -> None:
        kin = forward_kinematics(self.model, q[None, :], order=1)
        m = len(self.markers.names)
        _marker_rows(kin.transforms[0], kin.jacobian[0], self.markers.frames, self.markers.local, self.observed,
                     self.scale, self.residual, self.jacobian, self.p)
        for r, (k, function, s) in enumerate(self.coordinate_rows):
            if k is not None:
                value = q[k]
            else:
                jet = function.evaluate(q[None, :], order=1)
                value = float(np.asarray(jet.value).ravel()[0])
                self.jacobian[3 * m + r] = s * np.asarray(jet.gradient, dtype=float).reshape(-1)
            self.residual[3 * m + r] = s * (value - self.reference[r])

    def evaluate_positions(self, q: np.ndarray) -> None:
        """The marker positions at q (the residuals and Jacobian are left as they are)."""
        kin = forward_kinematics(self.model, q[None, :], order=0)
        a = kin.transforms[0, self.markers.frames]
        self.p[:] = np.einsum("mij,mj->mi", a[:, :3, :3], self.markers.local) + a[:, :3, 3]

    def cost(self) -> float:
        return float(self.residual @ self.residual)


def _solve_frame(problem: _FrameProblem, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, tolerance: float,
                 max_evaluations: int = 200) -> tuple[np.ndarray, int]:
    """Levenberg-Marquardt in the box lo <= q <= hi: Marquardt-scaled damped Gauss-Newton steps on the
    coordinates not held at a bound by the gradient, projected onto the box, accepted when |r|² decreases. Ends
    when a step moves q by less than ``tolerance`` (rad, m) relative to 1 + |q|, or when |r|² no longer changes
    beyond round-off. Returns the solution (the problem's residuals and Jacobian evaluated there) and the number
    of evaluations."""
    problem.evaluate(q)
    cost, evaluations, damping = problem.cost(), 1, 1e-6
    res, jac = problem.residual.copy(), problem.jacobian.copy()
    while evaluations < max_evaluations and damping <= 1e12:
        grad = jac.T @ res
        free = ~(((q <= lo) & (grad > 0)) | ((q >= hi) & (grad < 0)))
        a = jac[:, free].T @ jac[:, free]
        d = np.maximum(np.diag(a), 1e-12 * max(np.diag(a).max(initial=0.0), 1.0))
        step = np.zeros_like(q)
        step[free] = np.linalg.solve(a + damping * np.diag(d), -grad[free])
        trial = np.clip(q + step, lo, hi)
        if np.abs(trial - q).max() <= tolerance * (1.0 + np.abs(q).max()):
            break
        problem.evaluate(trial)
        evaluations += 1
        new_cost = problem.cost()
        if new_cost < cost:
            q, cost = trial, new_cost
            res, jac = problem.residual.copy(), problem.jacobian.copy()
            damping = max(damping * 0.1, 1e-12)
        elif new_cost - cost <= 8 * np.finfo(float).eps * cost:  # no decrease beyond round-off: converged
            break
        else:
            damping *= 10.0
    problem.residual[:], problem.jacobian[:] = res, jac
    problem.evaluate_positions(q)
    return q, evaluations


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
    frames = np.arange(len(data.times)) if frames is None else np.asarray(frames, dtype=int)
    names, weights = _marker_weights(model, data, marker_weights)
    markers = model_markers(model, names)
    columns = [data.index(n) for n in names]
    rows, references = _coordinate_rows(model, coordinate_references, len(frames))
    problem = _FrameProblem(model, markers, weights, rows)
    lo = np.array([c.range[0] if c.clamped else -np.inf for c in model.coordinates])
    hi = np.array([c.range[1] if c.clamped else np.inf for c in model.coordinates])
    q = np.clip(model.default_q if q0 is None else np.asarray(q0, dtype=float), lo, hi)
    n = len(frames)
    out_q = np.empty((n, model.n_q))
    locations = np.empty((n, len(names), 3))
    squared = np.empty((n, len(names)))
    objective, iterations = np.empty(n), np.empty(n, dtype=int)
    undetermined: dict[str, list[float]] = {}
    with Progress("inverse kinematics", n, enabled=progress and n > 200, unit="frame") as bar:
        for i, f in enumerate(frames):
            observed = data.positions[f][columns]
            problem.set_frame(observed, references[i])
            if not problem.present.any() and not rows:
                raise InverseKinematicsError(f"{data.path}: every tracked marker is missing at t = "
                                             f"{data.times[f]:g} s and no coordinate task holds the pose")
            guess = q if i < 2 else np.clip(2.0 * out_q[i - 1] - out_q[i - 2], lo, hi)
            q, evaluations = _solve_frame(problem, guess, lo, hi, tolerance, max_evaluations)
            column_norm = np.linalg.norm(problem.jacobian, axis=0)
            for k in np.flatnonzero(column_norm <= 1e-12 * max(column_norm.max(), 1.0)):
                undetermined.setdefault(model.coordinates[k].name, []).append(float(data.times[f]))
            out_q[i] = q
            locations[i] = problem.p
            e = np.where(problem.present[:, None], problem.p - np.nan_to_num(observed), 0.0)
            squared[i] = np.einsum("mi,mi->m", e, e)
            objective[i] = 0.5 * problem.cost()
            iterations[i] = evaluations
            bar.advance()
    for name, times in undetermined.items():
        log.warning("coordinate %r is determined by no tracked marker or task at %d frame(s) (first t = %g s): "
                    "it keeps the previous frame's value", name, len(times), times[0])
    return InverseKinematicsResult(model, np.asarray(data.times)[frames], out_q, tuple(names), weights, locations,
                                   squared, objective, iterations, undetermined)
