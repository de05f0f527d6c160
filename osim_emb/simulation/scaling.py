"""OpenSim's ScaleTool: a generic model scaled to a subject (measured marker distances or given factors, the
subject's mass), then its markers placed on a static trial (docs/scaling.md).

* :func:`measurement_scale_factors` -- ``ModelScaler::computeMeasurementScaleFactor``: per measurement, the mean
  over its marker pairs of (the pair's distance in the trial, averaged over the frames of the time range) / (its
  distance in the model at the default pose); the factor goes to the listed axes of the listed bodies, in the
  setup's order with the manual scales.
* :func:`scale_model` -- ``Model::scale``: the geometry and mass edits of :mod:`osim_emb.io.osim_scaling`, then
  each path's length-dependent properties × L'/L, the path lengths at the default pose of the scaled and the
  generic model (the package's paths, with OpenSim's wrapping).
* :func:`place_markers` -- ``MarkerPlacer``: the trial's markers averaged over the time range, inverse kinematics
  of the scaled model on that frame (the package's IK, OpenSim's problem), every model marker that is in the trial
  and not ``fixed`` moved onto its observation, in its body's frame.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from osim_emb.io.osim_scaling import ScaledDocument, scale_osim_geometry, set_path_length_ratios
from osim_emb.io.tool_setup import Measurement

log = logging.getLogger(__name__)

__all__ = ["Measurement", "measurement_scale_factors", "scale_model", "ScaledModel", "model_from_text",
           "marker_positions_at_default", "trial_frame_range", "place_markers", "PlacedMarkers", "scale_tool",
           "ScaleToolResult", "static_pose_starts", "static_pose_states"]


@dataclass
class ScaledModel:
    """The scaled model's .osim text, the body factors, the path-length ratios and what was done."""

    text: str
    factors: dict[str, np.ndarray]
    length_ratios: dict[str, float]
    notes: list[str] = field(default_factory=list)
    #: the package's model of the scaled geometry, for kinematics (its muscles' fibre and tendon lengths unscaled)
    kinematics_model: object = None


def model_from_text(text: str, name: str = "model"):
    """The package's model of an .osim text."""
    from osim_emb.io.convert import document_to_model
    from osim_emb.io.osim_reader import read_osim_string
    return document_to_model(read_osim_string(text, name=name))


def static_pose_states(placed: "PlacedMarkers"):
    """The static pose as OpenSim's MarkerPlacer writes its ``output_motion_file``: one row of the model's state
    variables (its StatesReporter at the solved state), with OpenSim 4's labels (``io.motion.as_opensim_states``) and
    in radians: every coordinate's value at the pose and its default speed (the state ``initSystem`` made, whose
    positions only the placement's IK moved), each muscle's activation and fibre length (or normalized tendon force)
    at their default values; time the pose's (the placer's start time)."""
    import pandas as pd
    from osim_emb.io.motion import _muscle_states, as_opensim_states
    ik = placed.inverse_kinematics
    model = ik.model
    values = ik.coordinates(in_degrees=False).iloc[:1]
    doc = model.extras.get("document")
    speeds = {c.name: float(c.default_speed) for c in (doc.coordinates if doc is not None else ())}
    columns: dict[str, float] = {"time": float(values["time"].iloc[0])}
    for name in values.columns[1:]:
        columns[name] = float(values[name].iloc[0])
        columns[f"{name}_u"] = speeds.get(name, 0.0)
    for m in model.muscles:
        states = _muscle_states(m.parameters)
        if "activation" in states:
            columns[f"{m.name}_activation"] = float(m.parameters.default_activation)
        if "fiber_length" in states:
            columns[f"{m.name}_fiber_length"] = float(m.parameters.default_fiber_length)
        if "normalized_tendon_force" in states:
            columns[f"{m.name}_normalized_tendon_force"] = float(m.parameters.default_normalized_tendon_force)
    return as_opensim_states(model, pd.DataFrame([columns]))


def marker_positions_at_default(model, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Ground positions of the model's markers at its default pose (name -> (3,))."""
    from osim_emb.core.kinematics import forward_kinematics
    kin = forward_kinematics(model, model.default_q[None, :], order=0)
    out = {}
    for name, body, location in model.extras.get("markers", []):
        if names is not None and name not in names:
            continue
        if body == model.extras["document"].ground:
            out[name] = np.asarray(location, dtype=float)
            continue
        b = model.body(body)
        a = kin.transforms[0, b.frame] @ b.frame_to_body
        out[name] = a[:3, :3] @ np.asarray(location, dtype=float) + a[:3, 3]
    return out


def trial_frame_range(time: np.ndarray, time_range: Sequence[float] | None) -> np.ndarray:
    """The frames of a marker trial that OpenSim's ``MarkerData::findFrameRange`` takes for a time range: from the
    last frame at or before the start (the first frame if none) to the first frame from there at or after the end
    (the last frame if none)."""
    n = len(time)
    if time_range is None:
        return np.arange(n)
    t0, t1 = float(time_range[0]), float(time_range[1])
    if t0 > t1:
        raise ValueError(f"time_range {t0:g} {t1:g}: the start is after the end")
    start = min(max(int(np.searchsorted(time, t0, side="right")) - 1, 0), n - 1)
    end = min(max(int(np.searchsorted(time, t1, side="left")), start), n - 1)
    return np.arange(start, end + 1)


def measurement_scale_factors(model, trial, measurements: Sequence[Measurement], order: Sequence[str] = ("measurements",),
                              manual: Mapping[str, Sequence[float]] | None = None, time_range=None,
                              unknown_bodies: str = "error") -> tuple[dict[str, np.ndarray], list[dict]]:
    """Body scale factors as OpenSim's ModelScaler computes them: ``order`` of "measurements" and "manualScale";
    ``trial`` a :class:`osim_emb.io.markers.MarkerTrajectories` (metres); ``manual`` body -> (3,). Returns the factors of
    every body (1 where nothing applies) and one row per measurement (its pairs' distances and factor). Bodies the
    model lacks: refused (``unknown_bodies="error"``) or named in a row and skipped ("warn", as OpenSim skips
    them)."""
    factors = {b.name: np.ones(3) for b in model.bodies if b.name in {s.name for s in model.extras["document"].bodies}}
    rows = []
    unknown = sorted({b for b in (manual or {}) if b not in factors}
                     | {b for m in measurements if m.apply for b, _ in m.bodies if b not in factors})
    if unknown and unknown_bodies == "error":
        raise ValueError(f"{model.name}: no body {', '.join(map(repr, unknown))} to scale (bodies: "
                         f"{', '.join(factors)})")
    if unknown:  # a setup written for a sibling model: OpenSim skips them
        where = sorted({m.name for m in measurements if m.apply for b, _ in m.bodies if b in unknown})
        if any(b in unknown for b in (manual or {})):
            where.append("manual scales")
        rows.append({"measurement": ", ".join(where), "pair": "", "note": f"bodies {', '.join(unknown)} are not in the "
                                                                           "model: their scale factors are not used"})
    model_markers = marker_positions_at_default(model)
    for step in order:
        if step == "manualScale":
            for body, v in (manual or {}).items():
                if body in factors:
                    factors[body] = np.asarray(v, dtype=float).copy()
            continue
        if step != "measurements":
            raise ValueError(f"scaling_order: {step!r} is neither 'measurements' nor 'manualScale'")
        if not any(m.apply for m in measurements):
            continue
        if trial is None:
            raise ValueError("measurements need the static trial (the ModelScaler's marker_file, --static)")
        frames = trial_frame_range(np.asarray(trial.times, dtype=float), time_range)
        names = list(trial.names)
        for m in measurements:
            if not m.apply:
                continue
            ratio, pairs = 0.0, []
            usable = bool(m.pairs)
            for a, b in m.pairs:
                if a not in model_markers or b not in model_markers or a not in names or b not in names:
                    usable = False
                    missing = [x for x in (a, b) if x not in model_markers or x not in names]
                    rows.append({"measurement": m.name, "pair": f"{a} {b}", "note": f"marker(s) {missing} missing"})
                    break
                model_length = float(np.linalg.norm(model_markers[a] - model_markers[b]))
                pa, pb = trial.positions[frames, names.index(a)], trial.positions[frames, names.index(b)]
                trial_length = float(np.mean(np.linalg.norm(pb - pa, axis=1)))
                ratio += trial_length / model_length
                pairs.append({"measurement": m.name, "pair": f"{a} {b}", "model_m": model_length,
                              "trial_m": trial_length})
            if not usable:
                continue
            ratio /= len(m.pairs)
            if not np.isfinite(ratio):  # a marker missing in a frame: OpenSim leaves the measurement out
                for row in pairs:
                    row["note"] = "a marker is missing in the time range: measurement not used"
                rows += pairs
                continue
            for row in pairs:
                row["factor"] = ratio
            rows += pairs
            for body, axes in m.bodies:
                if body not in factors:
                    continue
                for ax in axes.upper():
                    if ax in "XYZ":
                        factors[body]["XYZ".index(ax)] = ratio
    return factors, rows


def scale_model(text: str, factors: Mapping[str, Sequence[float]], *, preserve_mass_distribution: bool = False,
                mass: float | None = None, generic=None, where: str = "model") -> ScaledModel:
    """OpenSim's ``Model::scale`` on an OpenSim 4 model's text: the geometry and masses
    (:func:`osim_emb.io.osim_scaling.scale_osim_geometry`), then the path-length properties × L'/L at the default
    pose (every path unit of the package's model: GeometryPaths with OpenSim's wrapping). ``generic``: the package's
    model of ``text`` when already loaded.

    Parameters
    ----------
    text : str
        An OpenSim 4 model file's text.
    factors : mapping
        Body name -> (s_x, s_y, s_z); the other bodies keep their size.
    preserve_mass_distribution, mass
        OpenSim's options: masses not scaled with the volume (default False, as OpenSim's ScaleTool and
        ``osim-emb scale``); the subject's mass (kg) they are scaled to.

    Returns
    -------
    ScaledModel
        The scaled text, the factors, each path's length ratio L'/L at the default pose, notes.

    Examples
    --------
    The shoulder model's humerus 10 % larger: the deltoids, which end on it, lengthen at the default pose, and their
    fibre and tendon lengths with them:

    >>> import osim_emb as oe
    >>> from osim_emb.io.builtin_models import builtin_model_path
    >>> scaled = oe.scale_model(builtin_model_path().read_text(), {"humerus": [1.1, 1.1, 1.1]})
    >>> 1.0 < scaled.length_ratios["DELT2"] < 1.1
    True
    >>> from osim_emb.simulation.scaling import model_from_text
    >>> def fibre(model):
    ...     return {m.name: m.parameters.optimal_fiber_length for m in model.muscles}
    >>> before, after = fibre(oe.load_builtin()), fibre(model_from_text(scaled.text))
    >>> bool(abs(after["DELT2"] / before["DELT2"] - scaled.length_ratios["DELT2"]) < 1e-12)
    True
    """
    from osim_emb.paths.geometry import muscle_lengths
    generic = model_from_text(text, where) if generic is None else generic
    translational = {c.name for c in generic.extras["document"].coordinates if c.motion_type == "translational"}
    scaled: ScaledDocument = scale_osim_geometry(text, factors, preserve_mass_distribution=preserve_mass_distribution,
                                                 mass=mass, translational=translational, where=where)
    try:
        after = model_from_text(scaled.text(), where)
    except ValueError as err:  # the input imports; its scaled geometry does not (a loop the factors leave open)
        raise ValueError(f"the scaled model cannot be imported, though the model itself can: {err}") from None
    # the paths whose pre-scale length OpenSim stores: GeometryPaths and Scholz2015GeometryPaths (a FunctionBasedPath
    # keeps its function, and its muscle its lengths)
    scholz = {f.name for f in generic.extras["document"].forces if getattr(f, "scholz_path", None) is not None}
    units = [m.name for m in generic.muscles if m.points or m.name in scholz]
    ratios = {}
    if units:
        before = muscle_lengths(generic, generic.default_q[None, :], units, opensim_compat=True,
                                allow_out_of_range=True)[0]
        now = muscle_lengths(after, after.default_q[None, :], units, opensim_compat=True, allow_out_of_range=True)[0]
        ratios = {u: float(b / a) for u, a, b in zip(units, before, now) if a > 0}
    unchanged = set_path_length_ratios(scaled, ratios)
    notes = list(scaled.notes)
    skipped = [m.name for m in generic.muscles if m.name not in units]
    if skipped:
        notes.append(f"{len(skipped)} FunctionBasedPath unit(s) keep their lengths, as OpenSim keeps them: "
                     f"{', '.join(skipped[:8])}")
    if unchanged:
        notes.append(f"{len(unchanged)} path force(s) whose type has no length to scale: {', '.join(unchanged[:8])}")
    return ScaledModel(scaled.text(), scaled.factors, ratios, notes, after)


def static_pose_starts(model, n_random: int = 32, seed: int = 0) -> list[np.ndarray]:
    """Starting poses for a static trial's inverse kinematics, whose single frame has no previous solution to start
    from (one local solve from the default pose can stop in another minimum: a subject facing another way than the
    model, an arm pressed on a coordinate's bound): the default pose; when the model's root body turns about the
    vertical through a coordinate of its ground joint, the default pose turned by 90°, 180° and 270°; and
    ``n_random`` poses with every rotational coordinate of finite range drawn uniformly in it (``seed`` fixed, so
    the result is reproducible). :func:`place_markers` keeps the lowest objective."""
    from osim_emb.core.kinematics import forward_kinematics
    q0 = np.array(model.default_q, dtype=float)
    starts = [q0]
    g = np.asarray(model.gravity, dtype=float)
    if np.linalg.norm(g):
        g = g / np.linalg.norm(g)
        body_frames = {b.frame for b in model.bodies}
        kin = forward_kinematics(model, q0[None, :], order=0)
        for j in model.joints:
            chain = j.parent
            while chain != 0 and chain not in body_frames:
                chain = model.joints[chain - 1].parent
            if chain != 0 or not j.is_revolute:
                continue  # not between the ground and the first body
            axis = kin.transforms[0, j.parent, :3, :3] @ j.offset[:3, :3] @ j.axis
            grad = np.asarray(j.variable.evaluate(q0[None, :], order=1).gradient, dtype=float)[0]
            k = np.flatnonzero(grad)
            if abs(axis @ g) < 0.99 or len(k) != 1 or abs(abs(grad[k[0]]) - 1.0) > 1e-12:
                continue
            for turn in (0.5, 1.0, 1.5):
                start = q0.copy()
                start[k[0]] += turn * np.pi
                starts.append(start)
            break
    rng = np.random.default_rng(seed)
    finite = [k for k, c in enumerate(model.coordinates)
              if c.motion_type == "rotational" and np.all(np.isfinite(c.range)) and c.range[1] > c.range[0]]
    for _ in range(n_random if finite else 0):
        start = q0.copy()
        for k in finite:
            start[k] = rng.uniform(*model.coordinates[k].range)
        starts.append(start)
    return starts


@dataclass
class PlacedMarkers:
    """Marker placement: the static pose q (n_q,), the markers moved (name -> new location in its body), their
    movement (m), the model's text with them, the markers deleted (not in the trial) and the pose's IK result."""

    q: np.ndarray
    moved: dict[str, np.ndarray]
    movement: dict[str, float]
    text: str
    deleted: list[str]
    inverse_kinematics: object  # the static pose's InverseKinematicsResult (marker errors)


def marker_movements(trial, frames) -> np.ndarray:
    """(M,) the largest extent along x, y or z of each marker over the trial's ``frames`` (rows or a mask), in the
    trial's own units (NaN where absent throughout), as ``MarkerData::averageFrames`` measures a marker's movement."""
    from osim_emb.io.markers import UNITS_IN_METRES
    pts = trial.positions[frames] / UNITS_IN_METRES[trial.units.lower()]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (all-NaN markers)
        return (np.nanmax(pts, axis=0) - np.nanmin(pts, axis=0)).max(axis=1)


def place_markers(text: str, trial, *, weights: Mapping[str, float] | None = None,
                  coordinate_references: Sequence = (), time_range=None, q=None, model=None,
                  max_marker_movement: float | None = None, where: str = "model") -> PlacedMarkers:
    """OpenSim's MarkerPlacer on a scaled model's text. The static pose: the package's inverse kinematics (OpenSim's
    problem, solved to convergence) on the trial's rows within the time range averaged (``averageRow``: a marker
    missing in any of them is left out); then every model marker that is in the trial and not ``fixed`` moved onto
    its observation averaged over ``MarkerData::findFrameRange``'s frames where present, in its body's frame; the
    model's markers that the trial lacks are deleted (OpenSim's ``deleteUnusedMarkers``). ``q`` (n_q,): a static pose
    to use as it is (the IK then only scores it); without it the IK starts from :func:`static_pose_starts` and keeps the
    lowest objective."""
    from osim_emb.core.kinematics import forward_kinematics
    from osim_emb.io.markers import MarkerTrajectories
    from osim_emb.io.osim_scaling import parse_osim, serialize_osim
    from osim_emb.simulation.inverse_kinematics import inverse_kinematics
    times = np.asarray(trial.times, dtype=float)
    span = (times[0], times[-1]) if time_range is None else (max(float(time_range[0]), times[0]),
                                                             min(float(time_range[1]), times[-1]))
    rows = (times >= span[0]) & (times <= span[1])
    if not rows.any():
        raise ValueError(f"{trial.path}: no frame within the time range {span[0]:g} to {span[1]:g} s")
    pose_markers = trial.positions[rows].mean(axis=0)  # NaN where missing in any row, as averageRow
    frames = trial_frame_range(times, span)
    if max_marker_movement is not None and max_marker_movement > 0:  # OpenSim warns (MarkerData::averageFrames)
        moved = marker_movements(trial, frames)
        for name, m in zip(trial.names, moved):
            if m > max_marker_movement:
                log.warning("%s: marker %s moves %.6g %s in the averaged frames (max_marker_movement %g)", trial.path,
                            name, m, trial.units, max_marker_movement)
    present = np.isfinite(trial.positions[frames]).all(axis=2)  # (F, M)
    counts = present.sum(axis=0)
    sums = np.where(present[..., None], trial.positions[frames], 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        placed = np.where(counts[:, None] > 0, sums / counts[:, None], np.nan)
    text_names = set(trial.names)
    root = parse_osim(text)
    deleted = []
    for mk in list(root.iter("Marker")):
        if mk.get("name") not in text_names:
            deleted.append(mk.get("name"))
            mk.getparent().remove(mk)
    if deleted or model is None:  # ``model``: the package's model of ``text``'s kinematics, when already loaded
        model = model_from_text(serialize_osim(root), where)
    static = MarkerTrajectories(trial.path, np.array([span[0]]), tuple(trial.names), pose_markers[None], trial.units)
    if q is not None:
        result = inverse_kinematics(model, static, marker_weights=weights,
                                    coordinate_references=coordinate_references, progress=False, q0=q,
                                    max_evaluations=1)
    else:  # a static pose has no previous frame: several starts, the lowest objective kept
        result = min((inverse_kinematics(model, static, marker_weights=weights,
                                         coordinate_references=coordinate_references, progress=False, q0=start)
                      for start in static_pose_starts(model)), key=lambda r: float(r.objective[0]))
    q = np.asarray(result.q[0], dtype=float)
    kin = forward_kinematics(model, q[None, :], order=0)
    ground = model.extras["document"].ground
    fixed = {mk.name for mk in model.extras["document"].markers if mk.fixed}
    names = list(trial.names)
    moved, movement = {}, {}
    for name, body, location in model.extras.get("markers", []):
        if name in fixed or name not in names or not np.all(np.isfinite(placed[names.index(name)])):
            continue
        if body == ground:
            pose = np.eye(4)
        else:
            b = model.body(body)
            pose = kin.transforms[0, b.frame] @ b.frame_to_body
        new = pose[:3, :3].T @ (placed[names.index(name)] - pose[:3, 3])
        moved[name] = new
        movement[name] = float(np.linalg.norm(new - np.asarray(location, dtype=float)))
    for mk in root.iter("Marker"):
        if mk.get("name") in moved:
            mk.find("location").text = " ".join(repr(float(v)) for v in moved[mk.get("name")])
    out = serialize_osim(root)
    return PlacedMarkers(q, moved, movement, out, deleted, result)


@dataclass
class ScaleToolResult:
    """What OpenSim's ScaleTool produces: the scaled model (before marker placement), the body factors and the
    measurements' table, and the marker placement (None when not applied)."""

    scaled: ScaledModel
    measurements: list[dict]
    placed: PlacedMarkers | None

    @property
    def text(self) -> str:
        """The final model: with its markers placed, else the scaled one."""
        return self.placed.text if self.placed is not None else self.scaled.text


def scale_tool(text: str, *, marker_set=None, mass: float | None = None, scaling_order: Sequence[str] = (),
               measurements: Sequence[Measurement] = (), manual: Mapping[str, Sequence[float]] | None = None,
               trial=None, time_range=None, preserve_mass_distribution: bool = False, scale: bool = True,
               placer_trial=None, placer_time_range=None, marker_weights: Mapping[str, float] | None = None,
               coordinate_references=None, unknown_bodies: str = "error", max_marker_movement: float | None = None,
               where: str = "model") -> ScaleToolResult:
    """OpenSim's ScaleTool on an OpenSim 4 model's text: the marker set merged (``marker_set``: (name, body,
    location, fixed) tuples), the ModelScaler (``scaling_order`` of measurements on ``trial`` and manual factors;
    ``scale`` False skips it), then, with a ``placer_trial``, the MarkerPlacer. ``coordinate_references`` is a
    function of the scaled model returning the placer's coordinate references."""
    from osim_emb.io.osim_scaling import update_marker_set
    notes = []
    if marker_set:
        text, replaced = update_marker_set(text, marker_set, where)
        notes.append(f"{len(marker_set)} marker(s) of the marker set merged ({len(replaced)} replacing the model's)")
    generic = model_from_text(text, where)
    rows: list[dict] = []
    if scale:
        if "measurements" in scaling_order and any(m.apply for m in measurements) and trial is None:
            raise ValueError(f"{where}: measurements need the static trial (the ModelScaler's marker_file)")
        factors, rows = measurement_scale_factors(generic, trial, measurements, scaling_order, manual, time_range,
                                                  unknown_bodies) if scaling_order else ({}, [])
        scaled = scale_model(text, factors, preserve_mass_distribution=preserve_mass_distribution, mass=mass,
                             generic=generic, where=where)
    else:
        scaled = ScaledModel(text, {}, {}, ["the ModelScaler is not applied"], generic)
    scaled.notes[:0] = notes
    placed = None
    if placer_trial is not None:
        refs = coordinate_references(scaled.kinematics_model) if coordinate_references else ()
        placed = place_markers(scaled.text, placer_trial, weights=marker_weights, coordinate_references=refs,
                               time_range=placer_time_range, model=scaled.kinematics_model,
                               max_marker_movement=max_marker_movement, where=where)
    return ScaleToolResult(scaled, rows, placed)
