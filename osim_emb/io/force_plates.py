"""Force platforms (and analog channels) of a C3D trial, as OpenSim's C3DFileAdapter reads them, and ground
reactions for its tools.

OpenSim's adapter takes each platform from ezc3d's force-platform module (calibration, the plate's corners and
origin, the lab frame): the force F and the moment M about the centre of the plate's working surface (the mean of
its corners, c), in the lab frame, on the analog samples at t = k / analog rate from 0.  With
``ForceLocation::OriginOfForcePlate`` (its default) the table holds (F, c, M); with ``CenterOfPressure`` the force
at the centre of pressure p on the surface and the free moment T about the surface normal n:

    p = c + (n x M) / (n . F),        T = n [n . (M - (p - c) x F)]

(the one point of the surface plane where the moment has no component in it; the wrench is unchanged).
:func:`read_force_plates` gives the first form in SI units (N, m, N m); :func:`at_center_of_pressure` the second by
the formula above, also after filtering, where ezc3d's own centre of pressure (the raw signals only) cannot be used.
``validation/model_corpus/c3d_markers.py`` compares both with the tables OpenSim wrote from opensim-core's walking
trials.

:func:`write_ground_reactions` writes them for OpenSim's tools: a .mot of plate{i}_ground_force_v{x,y,z},
plate{i}_ground_force_p{x,y,z} and plate{i}_ground_torque_{x,y,z}, and an ExternalLoads XML applying the named
plates to bodies (force and point in ground), which OpenSim's InverseDynamicsTool and the package's
``inverse-dynamics --external-loads`` read.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from osim_emb.io.markers import UNITS_IN_METRES, MarkerFileError, MarkerTrajectories, c3d_labels, open_c3d

__all__ = ["ForcePlate", "ForcePlates", "read_force_plates", "AnalogChannels", "read_c3d_analogs", "at_center_of_pressure", "lowpass_plates",
           "contact_intervals", "rotation_from_text", "rotated_markers", "rotated_plates", "write_ground_reactions", "ground_reaction_columns"]


@dataclass(frozen=True)
class ForcePlate:
    """One platform over the trial (lab frame, SI): ``force`` (T, 3) N acting at ``point`` (T, 3) m with the moment
    ``torque`` (T, 3) N m about that point; ``centre`` and ``normal`` (3,) of the working surface (m, unit)."""

    number: int  # 1-based, as OpenSim's labels f1, p1, m1
    force: np.ndarray
    point: np.ndarray
    torque: np.ndarray
    centre: np.ndarray
    normal: np.ndarray
    corners: np.ndarray  # (4, 3) m


@dataclass(frozen=True)
class ForcePlates:
    """The platforms of a trial on the analog samples ``time`` (s, from 0 as OpenSim).  ``location``: "origin"
    (the moment about each surface's centre, OpenSim's OriginOfForcePlate) or "center_of_pressure"."""

    path: str
    time: np.ndarray
    rate_hz: float
    plates: tuple[ForcePlate, ...]
    location: str = "origin"


def _unit_scale(path, what: str, unit: str, table: Mapping[str, float]) -> float:
    key = unit.strip().replace(" ", "").replace(".", "").replace("*", "").replace("·", "")
    if key not in table:
        raise MarkerFileError(path, f"force platform {what} unit {unit!r} is not one of {', '.join(table)}")
    return table[key]


def read_force_plates(path: str | Path) -> ForcePlates:
    """The force platforms of a C3D file as OpenSim's C3DFileAdapter reads them (through ezc3d's force-platform
    module), converted to N, m and N m: the force and the moment about the centre of each working surface, in the
    lab frame, at t = k / analog rate from 0."""
    path = Path(path)
    c3d = open_c3d(path, force_platforms=True)
    found = c3d["data"].get("platform") or []
    if not found:
        raise MarkerFileError(path, "no force platform (FORCE_PLATFORM:USED is 0 or missing)")
    rate = float(c3d["header"]["analogs"]["frame_rate"])
    if not rate > 0.0:
        raise MarkerFileError(path, f"the analog rate is {rate:g}: no force samples")
    plates = []
    for k, p in enumerate(found, start=1):
        length = _unit_scale(path, f"{k} position", str(p["unit_position"]), UNITS_IN_METRES)
        force_scale = _unit_scale(path, f"{k} force", str(p["unit_force"]), {"N": 1.0, "kN": 1e3})
        moment_units = {f"N{u}": force_scale * s for u, s in UNITS_IN_METRES.items()}
        moment_units.update({f"kN{u}": 1e3 * s for u, s in UNITS_IN_METRES.items()})
        moment_scale = _unit_scale(path, f"{k} moment", str(p["unit_moment"]), moment_units)
        corners = np.asarray(p["corners"], dtype=float).T * length  # (4, 3)
        normal = np.cross(corners[0] - corners[1], corners[0] - corners[3])
        size = np.linalg.norm(normal)
        if not size > 0.0:
            raise MarkerFileError(path, f"force platform {k}: its FORCE_PLATFORM:CORNERS span no surface")
        force = np.asarray(p["force"], dtype=float).T * force_scale
        centre = corners.mean(axis=0)
        plates.append(ForcePlate(k, force, np.tile(centre, (len(force), 1)),
                                 np.asarray(p["moment"], dtype=float).T * moment_scale, centre, normal / size,
                                 corners))
    n = plates[0].force.shape[0]
    return ForcePlates(str(path), np.arange(n) / rate, rate, tuple(plates))


@dataclass(frozen=True)
class AnalogChannels:
    """A C3D file's analog channels as OpenSim's C3DFileAdapter reads them (``getAnalogDataTable``): every
    ANALOG:LABELS channel (LABELS2, ... past 255), scaled and offset as the file says (ezc3d), in the file's
    ANALOG:UNITS, at t = k / analog rate from 0 (EMG, force-plate channels, triggers ...)."""

    path: str
    time: np.ndarray
    rate_hz: float
    labels: tuple[str, ...]
    units: tuple[str, ...]
    values: np.ndarray  # (T, channels)


def read_c3d_analogs(path: str | Path) -> AnalogChannels:
    """The analog channels of a C3D file (:class:`AnalogChannels`); a file without any is refused by name."""
    path = Path(path)
    c3d = open_c3d(path)
    data = np.asarray(c3d["data"]["analogs"], dtype=float)  # (1, channels, samples)
    group = c3d["parameters"].get("ANALOG", {})
    labels = c3d_labels(group, data.shape[1])
    if data.ndim != 3 or data.shape[1] == 0 or data.shape[2] == 0:
        raise MarkerFileError(path, "no analog channels")
    units = [str(x).strip() for x in group.get("UNITS", {}).get("value", [])][:len(labels)]
    units += [""] * (len(labels) - len(units))
    rate = float(c3d["header"]["analogs"]["frame_rate"])
    if not rate > 0.0:
        raise MarkerFileError(path, f"the analog rate is {rate:g}: no analog samples")
    return AnalogChannels(str(path), np.arange(data.shape[2]) / rate, rate, tuple(labels), tuple(units),
                          data[0].T.copy())


def at_center_of_pressure(plates: ForcePlates, threshold_n: float | None = None) -> ForcePlates:
    """Each wrench moved from the surface's centre to the centre of pressure on the surface (the module's formula),
    with the free moment about the normal.  ``threshold_n``: where the normal force is below it (N), force and
    moment are set to 0 and the point to the surface's centre (no contact; the centre of pressure of noise is
    meaningless); None keeps every sample, as OpenSim's adapter."""
    if plates.location != "origin":
        raise ValueError(f"{plates.path}: the wrenches are already at the {plates.location.replace('_', ' ')}")
    out = []
    for p in plates.plates:
        moment = p.torque + np.cross(p.point - p.centre, p.force)  # about the centre
        n = p.normal
        fn = p.force @ n
        with np.errstate(divide="ignore", invalid="ignore"):  # no normal force: no centre of pressure (NaN)
            offset = np.cross(n, moment) / fn[:, None]
            point = p.centre + offset
            torque = ((moment - np.cross(offset, p.force)) @ n)[:, None] * n
        force = p.force.copy()
        if threshold_n is not None:
            off = ~(np.abs(fn) >= threshold_n)
            force[off], torque[off], point[off] = 0.0, 0.0, p.centre
        out.append(replace(p, force=force, point=point, torque=torque))
    return replace(plates, plates=tuple(out), location="center_of_pressure")


def lowpass_plates(plates: ForcePlates, cutoff_hz: float) -> ForcePlates:
    """The forces and moments about each surface's centre low-pass filtered: a second-order Butterworth filter run
    forwards and backwards (zero lag, fourth order overall; Winter, Biomechanics and Motor Control of Human
    Movement, 4th ed., 2009, sec. 3.4.4), the signal reflected at both ends.  Before :func:`at_center_of_pressure`,
    which then takes the centre of pressure of the filtered wrench (filtering the centre of pressure itself mixes
    in its values at near-zero force)."""
    from scipy.signal import butter, filtfilt
    if plates.location != "origin":
        raise ValueError(f"{plates.path}: filter the wrenches at the surfaces' centres, before moving them to the "
                         "centre of pressure")
    if not 0.0 < cutoff_hz < 0.5 * plates.rate_hz:
        raise ValueError(f"low-pass cutoff {cutoff_hz:g} Hz: it must lie between 0 and half the analog rate "
                         f"({0.5 * plates.rate_hz:g} Hz)")
    b, a = butter(2, cutoff_hz / (0.5 * plates.rate_hz))
    if len(plates.time) <= 3 * max(len(a), len(b)):
        raise ValueError(f"{plates.path}: {len(plates.time)} force samples are too few to filter")
    return replace(plates, plates=tuple(
        replace(p, force=filtfilt(b, a, p.force, axis=0), torque=filtfilt(b, a, p.torque, axis=0))
        for p in plates.plates))


def contact_intervals(plates: ForcePlates, plate: ForcePlate, threshold_n: float) -> list[tuple[float, float]]:
    """(first, last) times of each run of samples whose normal force is at least ``threshold_n`` (N): the
    platform's contacts (stance phases), in order."""
    on = np.abs(plate.force @ plate.normal) >= threshold_n
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(np.int8), [0]])))
    return [(float(plates.time[a]), float(plates.time[b - 1])) for a, b in zip(edges[::2], edges[1::2])]


_AXES = {"x": 0, "y": 1, "z": 2}


def rotation_from_text(text: str) -> np.ndarray:
    """A rotation of the lab frame from ``AXIS:DEGREES[,AXIS:DEGREES...]`` (applied left to right, about the lab's
    fixed axes), e.g. ``x:-90`` turns a Z-up lab into OpenSim's Y-up ground."""
    r = np.eye(3)
    for part in filter(None, (s.strip() for s in text.split(","))):
        axis, _, degrees = part.partition(":")
        if axis.strip().lower() not in _AXES or not degrees:
            raise ValueError(f"rotation {part!r}: write AXIS:DEGREES with AXIS x, y or z (e.g. x:-90)")
        try:
            a = np.radians(float(degrees))
        except ValueError:
            raise ValueError(f"rotation {part!r}: {degrees!r} is not a number of degrees") from None
        i = _AXES[axis.strip().lower()]
        j, k = (i + 1) % 3, (i + 2) % 3
        step = np.eye(3)
        step[j, j] = step[k, k] = np.cos(a)
        step[k, j], step[j, k] = np.sin(a), -np.sin(a)
        r = step @ r
    return r


def rotated_markers(markers: MarkerTrajectories, rotation: np.ndarray) -> MarkerTrajectories:
    """The markers in the frame turned by ``rotation`` (3x3)."""
    return replace(markers, positions=markers.positions @ np.asarray(rotation).T)


def rotated_plates(plates: ForcePlates, rotation: np.ndarray) -> ForcePlates:
    """The platforms in the frame turned by ``rotation`` (3x3): every vector and point."""
    r = np.asarray(rotation, dtype=float).T
    return replace(plates, plates=tuple(
        replace(p, force=p.force @ r, point=p.point @ r, torque=p.torque @ r, centre=p.centre @ r,
                normal=p.normal @ r, corners=p.corners @ r) for p in plates.plates))


def ground_reaction_columns(number: int) -> tuple[list[str], list[str], list[str]]:
    """The .mot labels of platform ``number``: force, point and torque (x, y, z each)."""
    return ([f"plate{number}_ground_force_v{a}" for a in "xyz"], [f"plate{number}_ground_force_p{a}" for a in "xyz"],
            [f"plate{number}_ground_torque_{a}" for a in "xyz"])


def write_ground_reactions(mot: str | Path, plates: ForcePlates, *, xml: str | Path | None = None,
                           bodies: Mapping[int, str] | None = None, datafile: str | None = None,
                           protect: Sequence[str | Path] = ()) -> None:
    """The platforms as an OpenSim data file (``mot``, N, m, N m) and, with ``xml``, an ExternalLoads file applying
    platform i to ``bodies[i]`` (force and point expressed in ground; its datafile ``datafile``, default ``mot`` by
    name when both are in one folder, else by its absolute path).  Both written atomically."""
    import pandas as pd

    from osim_emb.io.motion import write_motion
    from osim_emb.io.outputs import write_atomically
    columns = {"time": plates.time}
    for p in plates.plates:
        for labels, values in zip(ground_reaction_columns(p.number), (p.force, p.point, p.torque)):
            for k, label in enumerate(labels):
                columns[label] = values[:, k]
    write_motion(mot, pd.DataFrame(columns), name=f"ground reactions of {Path(plates.path).name} "
                                                  f"(at the {plates.location.replace('_', ' ')})", protect=protect)
    if xml is None:
        return
    numbers = {p.number for p in plates.plates}
    unknown = sorted(set(bodies or {}) - numbers)
    if unknown:
        raise ValueError(f"{plates.path} has force platforms {sorted(numbers)}; there is no platform {unknown[0]}")
    if not bodies:
        raise ValueError("an ExternalLoads file needs the body each platform pushes (e.g. 1=calcn_r)")
    mot, xml = Path(mot), Path(xml)
    if datafile is None:
        datafile = mot.name if mot.resolve().parent == xml.resolve().parent else str(mot.resolve())
    items = []
    for number, body in sorted(bodies.items()):
        force, point, torque = (labels[0][:-1] for labels in ground_reaction_columns(number))
        items.append(f"""      <ExternalForce name="plate{number}">
        <applied_to_body>{html.escape(body)}</applied_to_body>
        <force_expressed_in_body>ground</force_expressed_in_body>
        <point_expressed_in_body>ground</point_expressed_in_body>
        <force_identifier>{force}</force_identifier>
        <point_identifier>{point}</point_identifier>
        <torque_identifier>{torque}</torque_identifier>
        <data_source_name>Unassigned</data_source_name>
      </ExternalForce>""")
    text = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <ExternalLoads name="{html.escape(Path(plates.path).stem)}_ground_reactions">
    <objects>
{chr(10).join(items)}
    </objects>
    <groups />
    <datafile>{html.escape(datafile)}</datafile>
  </ExternalLoads>
</OpenSimDocument>
"""
    write_atomically(xml, text, protect=protect)
