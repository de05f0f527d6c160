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

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from osim_emb.io.osim_scaling import ScaledDocument, scale_osim_geometry, set_path_length_ratios

__all__ = ["Measurement", "measurement_scale_factors", "scale_model", "ScaledModel", "model_from_text",
           "marker_positions_at_default", "trial_frame_range", "place_markers", "PlacedMarkers"]


@dataclass(frozen=True)
class Measurement:
    """A ScaleTool measurement: marker pairs, and the bodies (with their axes) its factor scales."""

    name: str
    pairs: tuple[tuple[str, str], ...]
    bodies: tuple[tuple[str, str], ...]  # (body, axes such as "XYZ")
    apply: bool = True


@dataclass
class ScaledModel:
    """The scaled model's .osim text, the body factors, the path-length ratios and what was done."""

    text: str
    factors: dict[str, np.ndarray]
    length_ratios: dict[str, float]
    notes: list[str] = field(default_factory=list)


def model_from_text(text: str, name: str = "model"):
    """The package's model of an .osim text."""
    from osim_emb.io.convert import document_to_model
    from osim_emb.io.osim_reader import read_osim_string
    return document_to_model(read_osim_string(text, name=name))


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
    last frame at or before the start (the first frame if none) to the first frame at or after the end (the last if
    none)."""
    n = len(time)
    if time_range is None:
        return np.arange(n)
    t0, t1 = float(time_range[0]), float(time_range[1])
    if t1 < t0:
        t0, t1 = t1, t0
    start = int(np.searchsorted(time, t0, side="right")) - 1
    start = min(max(start, 0), n - 1)
    if time[start] < t0 and start + 1 < n and np.isclose(time[start + 1], t0):
        start += 1
    end = int(np.searchsorted(time, t1, side="left"))
    end = min(max(end, start), n - 1)
    return np.arange(start, end + 1)


def measurement_scale_factors(model, trial, measurements: Sequence[Measurement], order: Sequence[str] = ("measurements",),
                              manual: Mapping[str, Sequence[float]] | None = None, time_range=None
                              ) -> tuple[dict[str, np.ndarray], list[dict]]:
    """Body scale factors as OpenSim's ModelScaler computes them: ``order`` of "measurements" and "manualScale";
    ``trial`` a :class:`osim_emb.io.markers.MarkerTrajectories` (metres); ``manual`` body -> (3,). Returns the factors of
    every body (1 where nothing applies) and one row per measurement (its pairs' distances and factor)."""
    factors = {b.name: np.ones(3) for b in model.bodies if b.name in {s.name for s in model.extras["document"].bodies}}
    rows = []
    frames = trial_frame_range(np.asarray(trial.times, dtype=float), time_range)
    names = list(trial.names)
    model_markers = marker_positions_at_default(model)
    for step in order:
        if step == "manualScale":
            for body, v in (manual or {}).items():
                if body in factors:
                    factors[body] = np.asarray(v, dtype=float).copy()
            continue
        if step != "measurements":
            raise ValueError(f"scaling_order: {step!r} is neither 'measurements' nor 'manualScale'")
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


def scale_model(text: str, factors: Mapping[str, Sequence[float]], *, preserve_mass_distribution: bool = True,
                mass: float | None = None, where: str = "model") -> ScaledModel:
    """OpenSim's ``Model::scale`` on an OpenSim 4 model's text: the geometry and masses
    (:func:`osim_emb.io.osim_scaling.scale_osim_geometry`), then the path-length properties × L'/L at the default
    pose (every path unit of the package's model: GeometryPaths with OpenSim's wrapping)."""
    from osim_emb.paths.geometry import muscle_lengths
    generic = model_from_text(text, where)
    scaled: ScaledDocument = scale_osim_geometry(text, factors, preserve_mass_distribution=preserve_mass_distribution,
                                                 mass=mass, where=where)
    after = model_from_text(scaled.text(), where)
    units = [m.name for m in generic.muscles if m.points]
    ratios = {}
    if units:
        before = muscle_lengths(generic, generic.default_q[None, :], units, opensim_compat=True,
                                allow_out_of_range=True)[0]
        now = muscle_lengths(after, after.default_q[None, :], units, opensim_compat=True, allow_out_of_range=True)[0]
        ratios = {u: float(b / a) for u, a, b in zip(units, before, now) if a > 0}
    unchanged = set_path_length_ratios(scaled, ratios)
    notes = list(scaled.notes)
    skipped = [m.name for m in generic.muscles if not m.points]
    if skipped:
        notes.append(f"{len(skipped)} path unit(s) without path points keep their lengths: {', '.join(skipped[:8])}")
    if unchanged:
        notes.append(f"{len(unchanged)} path force(s) whose type has no length to scale: {', '.join(unchanged[:8])}")
    return ScaledModel(scaled.text(), scaled.factors, ratios, notes)


@dataclass
class PlacedMarkers:
    """Marker placement: the static pose q (n_q,), the markers moved (name -> new location in its body), their
    movement (m), and the model's text with them."""

    q: np.ndarray
    moved: dict[str, np.ndarray]
    movement: dict[str, float]
    text: str


def place_markers(text: str, trial, *, weights: Mapping[str, float] | None = None,
                  coordinate_references: Sequence = (), time_range=None, where: str = "model") -> PlacedMarkers:
    """OpenSim's MarkerPlacer on a scaled model's text: the trial's frames in the time range averaged (per marker,
    over the frames where it is present), the static pose by the package's inverse kinematics on that frame, then
    every model marker that is in the trial and not ``fixed`` moved onto its observation (in its body's frame)."""
    from lxml import etree
    from osim_emb.core.kinematics import forward_kinematics
    import warnings
    from osim_emb.io.markers import MarkerTrajectories
    from osim_emb.simulation.inverse_kinematics import inverse_kinematics
    model = model_from_text(text, where)
    frames = trial_frame_range(np.asarray(trial.times, dtype=float), time_range)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a marker missing in every frame stays NaN
        mean = np.nanmean(trial.positions[frames], axis=0)  # (M, 3)
    static = MarkerTrajectories(trial.path, np.array([float(np.mean(trial.times[frames]))]), tuple(trial.names),
                                mean[None], trial.units)
    result = inverse_kinematics(model, static, marker_weights=weights, coordinate_references=coordinate_references,
                                progress=False)
    q = np.asarray(result.q[0], dtype=float)
    kin = forward_kinematics(model, q[None, :], order=0)
    ground = model.extras["document"].ground
    fixed = {mk.name for mk in model.extras["document"].markers if mk.fixed}
    names = list(trial.names)
    moved, movement = {}, {}
    for name, body, location in model.extras.get("markers", []):
        if name in fixed or name not in names or not np.all(np.isfinite(mean[names.index(name)])):
            continue
        if body == ground:
            pose = np.eye(4)
        else:
            b = model.body(body)
            pose = kin.transforms[0, b.frame] @ b.frame_to_body
        new = pose[:3, :3].T @ (mean[names.index(name)] - pose[:3, 3])
        moved[name] = new
        movement[name] = float(np.linalg.norm(new - np.asarray(location, dtype=float)))
    root = etree.fromstring(text.encode())
    for mk in root.iter("Marker"):
        if mk.get("name") in moved:
            c = mk.find("location")
            c.text = " ".join(repr(float(v)) for v in moved[mk.get("name")])
    out = etree.tostring(root, xml_declaration=True, encoding="UTF-8").decode()
    return PlacedMarkers(q, moved, movement, out)
