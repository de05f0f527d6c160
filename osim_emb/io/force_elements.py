"""OpenSim 4.6's passive forces without a path that the package applies in its dynamics, read from the .osim as
immutable records (bodies, frames as 4x4 transforms in the body's frame, parameters in SI units):

* contact: ``HuntCrossleyForce`` on ``ContactSphere`` and ``ContactHalfSpace`` surfaces, ``SmoothSphereHalfSpaceForce``;
* ``PointToPointSpring``, ``BushingForce``, ``SpringGeneralizedForce``;
* ``PrescribedForce`` (force, point and torque as functions of time).

:func:`read_force_law` is called by the .osim reader for each of these elements; the laws are evaluated by
:mod:`osim_emb.simulation.force_elements`.  A geometry the package has no contact law for (``ContactMesh``,
``ContactEllipsoid``, ...) leaves its force unapplied, with the reason (:class:`UnappliedForce`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["APPLIED_FORCE_TYPES", "ContactSurface", "HuntCrossleyContact", "SmoothSphereHalfSpaceContact",
           "PointToPointSpring", "Bushing", "CoordinateSpring", "PrescribedBodyForce", "UnappliedForce",
           "read_force_law"]

#: the pathless passive forces whose laws the package evaluates
APPLIED_FORCE_TYPES = ("HuntCrossleyForce", "SmoothSphereHalfSpaceForce", "PointToPointSpring", "BushingForce",
                       "SpringGeneralizedForce", "PrescribedForce")


@dataclass(frozen=True)
class ContactSurface:
    """A ContactSphere (``radius``) or ContactHalfSpace (the half space x > 0 of its frame) fixed on ``body``;
    ``transform``: the surface's frame in the body's frame (4x4)."""

    name: str
    kind: str  # "sphere" | "half_space"
    body: str
    transform: np.ndarray
    radius: float = float("inf")


@dataclass(frozen=True)
class HuntCrossleyContact:
    """Simbody's HuntCrossleyForce on the surfaces of one contact set; per surface: stiffness (Pa), dissipation
    (s/m), static, dynamic and viscous (s/m) friction coefficients."""

    name: str
    surfaces: tuple[ContactSurface, ...]
    stiffness: tuple[float, ...]
    dissipation: tuple[float, ...]
    static_friction: tuple[float, ...]
    dynamic_friction: tuple[float, ...]
    viscous_friction: tuple[float, ...]
    transition_velocity: float


@dataclass(frozen=True)
class SmoothSphereHalfSpaceContact:
    """Simbody's SmoothSphereHalfSpaceForce between one sphere and one half space."""

    name: str
    sphere: ContactSurface
    half_space: ContactSurface
    stiffness: float
    dissipation: float
    static_friction: float
    dynamic_friction: float
    viscous_friction: float
    transition_velocity: float
    constant_contact_force: float
    hertz_smoothing: float
    hunt_crossley_smoothing: float


@dataclass(frozen=True)
class PointToPointSpring:
    """A linear spring between a point of ``body1`` and a point of ``body2`` (points in the bodies' frames)."""

    name: str
    body1: str
    point1: np.ndarray
    body2: str
    point2: np.ndarray
    stiffness: float
    rest_length: float


@dataclass(frozen=True)
class Bushing:
    """Simbody's LinearBushing between frame F on ``body1`` and frame M on ``body2`` (4x4, in the bodies' frames):
    stiffness and damping (6,) on the body-fixed X-Y-Z angles of M in F, then M's origin in F."""

    name: str
    body1: str
    frame1: np.ndarray
    body2: str
    frame2: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray


@dataclass(frozen=True)
class CoordinateSpring:
    """SpringGeneralizedForce: -stiffness (q - rest_length) - viscosity u on ``coordinate``."""

    name: str
    coordinate: str
    stiffness: float
    rest_length: float
    viscosity: float


@dataclass(frozen=True)
class PrescribedBodyForce:
    """PrescribedForce on a frame fixed on ``body`` (``frame``: 4x4 in the body's frame): ``force``, ``point`` and
    ``torque`` are each three functions of time or None; ``force_is_global`` (force and torque in ground, else in
    the frame), ``point_is_global`` (the point in ground, else in the frame; without one, the frame's origin)."""

    name: str
    body: str
    frame: np.ndarray
    force: tuple | None
    point: tuple | None
    torque: tuple | None
    force_is_global: bool
    point_is_global: bool


@dataclass(frozen=True)
class UnappliedForce:
    """A force of an applied type whose law the package cannot evaluate here (e.g. contact with a mesh)."""

    name: str
    type: str
    reason: str


def _offset(translation: Any, orientation: Any) -> np.ndarray:
    from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
    t = np.eye(4)
    t[:3, :3] = euler_xyz_body_fixed(np.asarray(orientation, dtype=float))
    t[:3, 3] = np.asarray(translation, dtype=float)
    return t


class _ForceReader:
    """Frames and numbers of one force element through the .osim reader (``reader``: its ``_Reader``)."""

    def __init__(self, reader: Any, force: Any, model: Any, ground: str):
        self.r = reader
        self.f = force
        self.model = model
        self.ground = ground
        self.name = force.get("name") or force.tag
        self.local: dict[str, tuple[str, np.ndarray]] = {}
        frames = force.find("frames")
        for c in (frames if frames is not None else []):
            if isinstance(c.tag, str) and c.tag == "PhysicalOffsetFrame":
                body, base = self.frame(c, "socket_parent", None)
                own = _offset(reader.floats(c, "translation", 3, [0, 0, 0]), reader.floats(c, "orientation", 3, [0, 0, 0]))
                self.local[c.get("name")] = (body, base @ own)

    def fail(self, element: Any, reason: str) -> Exception:
        return self.r.fail(element if element is not None else self.f, f"{self.f.tag} {self.name!r}: {reason}")

    def frame(self, e: Any, socket: str, legacy: str | None) -> tuple[str, np.ndarray]:
        """(body, 4x4 frame in the body) of a socket (4.x) or a legacy body-name tag (3.x)."""
        ref = self.r.text(e, socket)
        if ref is None and legacy is not None:
            body = self.r.text(e, legacy)
            if body is None:
                raise self.fail(e, f"neither <{socket}> nor <{legacy}> names its frame")
            return body.strip(), np.eye(4)
        if ref is None:
            raise self.fail(e, f"<{socket}> is missing")
        ref = ref.strip()
        if ref in self.local:
            return self.local[ref]
        if not getattr(self.r, "v4", False) or not hasattr(self.r, "frames"):
            name = ref.rstrip("/").split("/")[-1]
            return (self.ground if name == self.ground else name), np.eye(4)
        spec = self.r.resolve_frame(ref, None, e)
        return spec.body, spec.transform()

    def number(self, e: Any, tag: str, default: float, minimum: float | None = None) -> float:
        v = self.r.flt(e, tag, default)
        if not np.isfinite(v) or (minimum is not None and v < minimum):
            raise self.fail(e.find(tag) if e.find(tag) is not None else e,
                            f"<{tag}> must be a finite number{'' if minimum is None else f' >= {minimum:g}'}, got {v}")
        return v

    def vector(self, e: Any, tag: str, default: Any) -> np.ndarray:
        v = self.r.floats(e, tag, 3, default)
        if not np.all(np.isfinite(v)):
            raise self.fail(e.find(tag), f"<{tag}> must be three finite numbers, got {v}")
        return v

    def surface(self, ref: str) -> ContactSurface:
        from osim_emb.io.scholz_xml import _find_geometry, contact_geometry_elements
        g = _find_geometry(ref, contact_geometry_elements(self.model))
        if g is None:
            raise self.fail(None, f"contact geometry {ref!r} does not exist")
        if g.tag not in ("ContactSphere", "ContactHalfSpace"):
            raise _Unapplied(f"its contact geometry {g.get('name')!r} is a {g.tag}; the package evaluates contact "
                             "between ContactSpheres and ContactHalfSpaces only")
        body, base = self.frame(g, "socket_frame", "body_name")
        transform = base @ _offset(self.vector(g, "location", [0, 0, 0]), self.vector(g, "orientation", [0, 0, 0]))
        if g.tag == "ContactHalfSpace":
            return ContactSurface(g.get("name"), "half_space", body, transform)
        radius = self.r.flt(g, "radius", 0.0)
        if not radius > 0:
            raise self.fail(g, f"ContactSphere {g.get('name')!r}: <radius> must be positive, got {radius}")
        return ContactSurface(g.get("name"), "sphere", body, transform, radius)

    def functions(self, tag: str) -> tuple | None:
        """Three functions of time of a FunctionSet named ``tag`` (4.x: <tag>; 3.x: <FunctionSet name=tag>)."""
        from osim_emb.io.function_xml import is_function_element, parse_function
        holder = self.f.find(tag)
        if holder is None:
            holder = next((c for c in self.f.findall("FunctionSet") if c.get("name") == tag), None)
        if holder is None:
            return None
        objects = holder.find("objects")
        items = [c for c in (objects if objects is not None else []) if isinstance(c.tag, str)
                 and is_function_element(c)]
        if not items:
            return None
        if len(items) != 3:
            raise self.fail(holder, f"<{tag}> needs three functions (x, y, z) or none, got {len(items)}")
        return tuple(parse_function(c, self.r.fail) for c in items)


class _Unapplied(Exception):
    pass


def _hunt_crossley(fr: _ForceReader) -> HuntCrossleyContact:
    sets = [c for c in fr.f if isinstance(c.tag, str) and c.tag.endswith("ContactParametersSet")]
    params = []
    for s in sets:
        objects = s.find("objects")
        params += [c for c in (objects if objects is not None else []) if isinstance(c.tag, str)
                   and c.tag.endswith("ContactParameters")]
    surfaces, columns = [], {k: [] for k in ("stiffness", "dissipation", "static_friction", "dynamic_friction",
                                             "viscous_friction")}
    for p in params:
        names = (fr.r.text(p, "geometry") or "").split()
        values = {k: fr.number(p, k, 0.0, minimum=0.0) for k in columns}
        if not values["stiffness"] > 0:
            raise fr.fail(p, f"<stiffness> must be positive, got {values['stiffness']}")
        for name in names:
            surfaces.append(fr.surface(name))
            for k in columns:
                columns[k].append(values[k])
    velocity = fr.number(fr.f, "transition_velocity", 0.01)
    if not velocity > 0:
        raise fr.fail(fr.f, f"<transition_velocity> must be positive, got {velocity}")
    return HuntCrossleyContact(fr.name, tuple(surfaces), *(tuple(v) for v in columns.values()), velocity)


def _smooth_contact(fr: _ForceReader) -> SmoothSphereHalfSpaceContact:
    sphere = fr.surface(fr.r.text(fr.f, "socket_sphere", required=True))
    half = fr.surface(fr.r.text(fr.f, "socket_half_space", required=True))
    if sphere.kind != "sphere" or half.kind != "half_space":
        raise fr.fail(None, f"socket_sphere must name a ContactSphere and socket_half_space a ContactHalfSpace, got "
                            f"{sphere.name!r} and {half.name!r}")
    # OpenSim 4.6 reads an older file's <derivative_smoothing> as constant_contact_force (same default)
    cf_tag = "constant_contact_force" if fr.f.find("constant_contact_force") is not None else "derivative_smoothing"
    values = dict(stiffness=fr.number(fr.f, "stiffness", 1.0, 0.0), dissipation=fr.number(fr.f, "dissipation", 0.0, 0.0),
                  static_friction=fr.number(fr.f, "static_friction", 0.0, 0.0),
                  dynamic_friction=fr.number(fr.f, "dynamic_friction", 0.0, 0.0),
                  viscous_friction=fr.number(fr.f, "viscous_friction", 0.0, 0.0),
                  transition_velocity=fr.number(fr.f, "transition_velocity", 0.01, 0.0),
                  constant_contact_force=fr.number(fr.f, cf_tag, 1e-5, 0.0),
                  hertz_smoothing=fr.number(fr.f, "hertz_smoothing", 300.0, 0.0),
                  hunt_crossley_smoothing=fr.number(fr.f, "hunt_crossley_smoothing", 50.0, 0.0))
    for k in ("dissipation", "transition_velocity"):
        if not values[k] > 0:  # the law divides by both
            raise fr.fail(fr.f, f"<{k}> must be positive, got {values[k]}")
    return SmoothSphereHalfSpaceContact(fr.name, sphere, half, **values)


def _point_spring(fr: _ForceReader) -> PointToPointSpring:
    b1, t1 = fr.frame(fr.f, "socket_body1", "body1")
    b2, t2 = fr.frame(fr.f, "socket_body2", "body2")
    p1 = (t1 @ np.append(fr.vector(fr.f, "point1", [0, 0, 0]), 1.0))[:3]
    p2 = (t2 @ np.append(fr.vector(fr.f, "point2", [0, 0, 0]), 1.0))[:3]
    return PointToPointSpring(fr.name, b1, p1, b2, p2, fr.number(fr.f, "stiffness", 1.0),
                              fr.number(fr.f, "rest_length", 0.0))


def _bushing(fr: _ForceReader) -> Bushing:
    frames = []
    for k in (1, 2):
        if fr.f.find(f"socket_frame{k}") is not None:
            frames.append(fr.frame(fr.f, f"socket_frame{k}", None))
        else:  # 3.x: a body and an offset on it
            body, _ = fr.frame(fr.f, f"socket_frame{k}", f"body_{k}")
            frames.append((body, _offset(fr.vector(fr.f, f"location_body_{k}", [0, 0, 0]),
                                         fr.vector(fr.f, f"orientation_body_{k}", [0, 0, 0]))))
    stiffness = np.concatenate([fr.vector(fr.f, "rotational_stiffness", [0, 0, 0]),
                                fr.vector(fr.f, "translational_stiffness", [0, 0, 0])])
    damping = np.concatenate([fr.vector(fr.f, "rotational_damping", [0, 0, 0]),
                              fr.vector(fr.f, "translational_damping", [0, 0, 0])])
    return Bushing(fr.name, frames[0][0], frames[0][1], frames[1][0], frames[1][1], stiffness, damping)


def _coordinate_spring(fr: _ForceReader) -> CoordinateSpring:
    coordinate = fr.r.text(fr.f, "coordinate")
    if coordinate is None:
        raise fr.fail(None, "<coordinate> is missing")
    return CoordinateSpring(fr.name, coordinate.strip(), fr.number(fr.f, "stiffness", 0.0),
                            fr.number(fr.f, "rest_length", 0.0), fr.number(fr.f, "viscosity", 0.0))


def _prescribed(fr: _ForceReader) -> PrescribedBodyForce:
    body, frame = fr.frame(fr.f, "socket_frame", "body")
    return PrescribedBodyForce(fr.name, body, frame, fr.functions("forceFunctions"), fr.functions("pointFunctions"),
                               fr.functions("torqueFunctions"), fr.r.boolean(fr.f, "forceIsGlobal", True),
                               fr.r.boolean(fr.f, "pointIsGlobal", False))


_LAWS = {"HuntCrossleyForce": _hunt_crossley, "SmoothSphereHalfSpaceForce": _smooth_contact,
         "PointToPointSpring": _point_spring, "BushingForce": _bushing, "SpringGeneralizedForce": _coordinate_spring,
         "PrescribedForce": _prescribed}


def read_force_law(reader: Any, force: Any, model: Any, ground: str = "ground") -> Any:
    """The record of a force element of :data:`APPLIED_FORCE_TYPES` (``reader``: the .osim reader, for frames,
    numbers and errors naming file, element and line; ``model``: the <Model> element); an
    :class:`UnappliedForce` with the reason where its law cannot be evaluated; None for other types."""
    law = _LAWS.get(force.tag)
    if law is None:
        return None
    try:
        return law(_ForceReader(reader, force, model, ground))
    except _Unapplied as exc:
        return UnappliedForce(force.get("name") or force.tag, force.tag, str(exc))
