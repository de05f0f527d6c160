"""OpenSim ``ExternalLoads`` files (e.g. ground reaction forces): the ExternalForce elements and their data.

An ``ExternalLoads`` XML lists ``ExternalForce`` elements — the body the force acts on, the bodies its force (and
torque) and its point are expressed in, and the identifiers of their columns in the data file (``datafile``:
IDENTIFIER + x, y, z) — as OpenSim's InverseDynamicsTool and AnalyzeTool read them.  OpenSim interpolates each
column with a natural cubic interpolating spline (``GCVSpline`` of degree 3, no smoothing), and so does
:meth:`ExternalLoads.at`.  Errors name the file, the element and the reason; times outside the data are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline

from osim_emb.io.tool_setup import element_text, opensim_element

__all__ = ["ExternalForce", "ExternalLoads", "ExternalLoadsError", "read_external_loads"]


class ExternalLoadsError(ValueError):
    """An ExternalLoads file (or its data file) that cannot be used; the message names the file and element."""


@dataclass(frozen=True)
class ExternalForce:
    """One ``ExternalForce``: data (T, 3) in N, m and N m (None where the element has no such identifier; without a
    point the force acts at the applied body's origin, as in OpenSim)."""

    name: str
    body: str  # applied_to_body
    force_frame: str  # force_expressed_in_body (also the torque's)
    point_frame: str  # point_expressed_in_body
    force: np.ndarray | None
    point: np.ndarray | None
    torque: np.ndarray | None


@dataclass(frozen=True)
class ExternalLoads:
    """The forces of an ExternalLoads file on the times of its data file."""

    path: str
    time: np.ndarray
    forces: tuple[ExternalForce, ...]

    def at(self, times) -> list[tuple[ExternalForce, np.ndarray | None, np.ndarray | None, np.ndarray | None]]:
        """(element, force, point, torque), each (N, 3) or None, at ``times`` (natural cubic interpolating splines of
        the data, as OpenSim's ExternalForce); times outside the data are refused."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        lo, hi = self.time[0], self.time[-1]
        if t.min() < lo - 1e-12 or t.max() > hi + 1e-12:
            raise ExternalLoadsError(f"{self.path}: the data cover t = {lo:g} to {hi:g} s; the motion needs "
                                     f"{t.min():g} to {t.max():g} s")
        values = self.spline()(t).reshape(len(t), len(self.forces), 3, 3)
        return [(f, *(None if data is None else values[:, k, j] for j, data in enumerate((f.force, f.point, f.torque))))
                for k, f in enumerate(self.forces)]

    def spline(self) -> CubicSpline:
        """The natural cubic interpolating spline of every element's force, point and torque (9 columns an element,
        in that order; zeros for what it lacks), built once: a simulation asks at every right-hand side, and the
        compiled integrators evaluate its piecewise coefficients (``spline().c``)."""
        spline = self.__dict__.get("_spline")
        if spline is None:
            n = len(self.time)
            columns = [np.zeros((n, 3)) if data is None else data
                       for f in self.forces for data in (f.force, f.point, f.torque)]
            spline = CubicSpline(self.time, np.hstack(columns), axis=0, bc_type="natural")
            object.__setattr__(self, "_spline", spline)
        return spline


def _columns(path, table, labels, identifier: str, element: str) -> np.ndarray | None:
    """The three columns IDENTIFIER x, y, z (OpenSim's rule: the columns whose labels start with the identifier)."""
    if not identifier:
        return None
    found = [c for c in labels if c.startswith(identifier)]
    if len(found) != 3:
        raise ExternalLoadsError(f"{path}: ExternalForce {element!r}: identifier {identifier!r} names "
                                 f"{len(found)} column(s) of the data file ({', '.join(found) or 'none'}); it needs 3")
    return table[found].to_numpy(dtype=float)


def read_external_loads(path: str | Path, data: str | Path | None = None) -> ExternalLoads:
    """Read an ExternalLoads XML and its data file (``data``, default: its ``datafile``, relative to the XML)."""
    from osim_emb.io.motion import read_motion
    path = Path(path)
    loads = opensim_element(path, "ExternalLoads", ExternalLoadsError)
    objects = loads.find("objects")
    other = sorted({e.tag for e in (objects if objects is not None else []) if isinstance(e.tag, str)
                    and e.tag != "ExternalForce"})
    if other and not any(e.tag == "ExternalForce" for e in objects):
        raise ExternalLoadsError(f"{path}: the ExternalLoads hold {', '.join(other)} objects (OpenSim 2.x's format, "
                                 "which OpenSim 4.6 refuses too); only ExternalForce objects with a data file are read: "
                                 "convert the loads to an ExternalForce file of a .mot of forces, points and torques")
    if data is None:
        name = element_text(loads, "datafile")
        if not name:
            raise ExternalLoadsError(f"{path}: <datafile> is not set; give the data file")
        data = path.parent / name
    table, _ = read_motion(data)  # inDegrees does not apply: forces, points and torques are read as they are
    labels = [c for c in table.columns if c != "time"]
    forces = []
    for e in loads.iter("ExternalForce"):
        name = e.get("name", "")
        if (element_text(e, "isDisabled").lower() == "true"
                or element_text(e, "appliesForce", "true").lower() == "false"):
            continue
        body = element_text(e, "applied_to_body")
        if not body:
            raise ExternalLoadsError(f"{path}: ExternalForce {name!r} has no applied_to_body")
        force = _columns(data, table, labels, element_text(e, "force_identifier"), name)
        point = _columns(data, table, labels, element_text(e, "point_identifier"), name)
        torque = _columns(data, table, labels, element_text(e, "torque_identifier"), name)
        if force is None and torque is None:
            raise ExternalLoadsError(f"{path}: ExternalForce {name!r} has neither a force nor a torque identifier")
        forces.append(ExternalForce(name, body, element_text(e, "force_expressed_in_body", "ground"),
                                    element_text(e, "point_expressed_in_body", "ground"), force, point, torque))
    if not forces:
        raise ExternalLoadsError(f"{path}: no ExternalForce that applies force")
    return ExternalLoads(str(path), table["time"].to_numpy(dtype=float), tuple(forces))
