"""Read and write OpenSim 4.6 ``<Scholz2015GeometryPath>`` elements and their contact geometries.

    <Scholz2015GeometryPath name="path">
      <path_elements>
        <Scholz2015GeometryPathPoint name="path_point_0">
          <PathPoint name="pathpoint"><socket_parent_frame>/bodyset/b0</socket_parent_frame>
                                      <location>x y z</location></PathPoint>
        </Scholz2015GeometryPathPoint>
        <Scholz2015GeometryPathObstacle name="obstacle_0">
          <socket_contact_geometry>/contactgeometryset/sph</socket_contact_geometry>
          <contact_hint>x y z</contact_hint>
        </Scholz2015GeometryPathObstacle>
        ...
      </path_elements>
    </Scholz2015GeometryPath>

The obstacles are ``ContactSphere`` / ``ContactCylinder`` elements of the model's
``<ContactGeometrySet>`` (or ``<components>``): ``socket_frame``, ``location``, ``orientation``
(body-fixed X-Y-Z), ``radius``.  OpenSim 4.6 hands Simbody the point's location and the geometry's
transform *in its frame* as if they were in the frame's body, so a frame with an offset is refused
here rather than read either way (docs/paths.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lxml import etree

from osim_emb.io.errors import UnsupportedFeatureError
from osim_emb.paths.scholz import OBSTACLE_KINDS, ScholzObstacle, ScholzPath, ScholzPoint

__all__ = ["contact_geometry_elements", "read_scholz_path", "scholz_path_element", "contact_geometry_element"]

#: Contact geometries OpenSim's Scholz2015GeometryPath accepts but the package does not evaluate.
UNSUPPORTED_SURFACES = {"ContactMesh": "a mesh", "ContactHalfSpace": "a half space"}


def contact_geometry_elements(model: Any) -> dict[str, Any]:
    """Absolute component path -> element, for the model's ContactGeometrySet and <components>."""
    out = {}
    s = model.find("ContactGeometrySet")
    objects = s.find("objects") if s is not None else None
    for c in (objects if objects is not None else []):
        if isinstance(c.tag, str) and c.get("name"):
            out[f"/contactgeometryset/{c.get('name')}"] = c
    comps = model.find("components")
    for c in (comps if comps is not None else []):
        if isinstance(c.tag, str) and c.tag.startswith("Contact") and c.get("name"):
            out[f"/{c.get('name')}"] = c
    return out


def _find_geometry(ref: str, geometries: dict[str, Any]) -> Any:
    ref = ref.strip()
    if ref in geometries:
        return geometries[ref]
    name = ref.rstrip("/").split("/")[-1]
    hits = [e for p, e in geometries.items() if p.split("/")[-1] == name]
    return hits[0] if len(hits) == 1 else None


def _body_frame(reader: Any, element: Any, tag: str, muscle: str, what: str) -> str:
    ref = reader.text(element, tag, required=True)
    frame = reader.resolve_frame(ref, None, element)
    if not np.allclose(frame.transform(), np.eye(4), atol=0.0):
        raise UnsupportedFeatureError(
            reader.path, element, f"muscle {muscle!r}: {what} is on the offset frame {ref!r}; OpenSim 4.6's "
            "Scholz2015GeometryPath ignores the offset (it uses the location in the frame as a location in the "
            "body), so attach it to the body itself")
    return frame.body


def _hint(reader: Any, c: Any, muscle: str) -> np.ndarray:
    """The contact hint: three numbers, or NaN (OpenSim's default: no hint, the cable starts lifted off)."""
    text = reader.text(c, "contact_hint")
    if text is None:
        return np.full(3, np.nan)
    try:
        hint = np.array([float(v) for v in text.split()])
    except ValueError:
        raise reader.fail(c.find("contact_hint"), f"muscle {muscle!r}: <contact_hint> is not three numbers: "
                                                  f"{text!r}") from None
    if hint.size != 3 or (np.isnan(hint).any() and not np.isnan(hint).all()) or np.isinf(hint).any():
        raise reader.fail(c.find("contact_hint"), f"muscle {muscle!r}: <contact_hint> needs three numbers (or "
                                                  f"NaN NaN NaN: no hint), got {text!r}")
    return hint


def read_scholz_path(e: Any, owner: Any, model: Any, reader: Any) -> ScholzPath:
    """Parse a ``<Scholz2015GeometryPath>`` of the force ``owner`` (``reader``: the .osim reader, for frames,
    numbers and errors naming file, element and line)."""
    muscle = owner.get("name")
    holder = e.find("path_elements")
    items = [c for c in (holder if holder is not None else []) if isinstance(c.tag, str)]
    geometries = contact_geometry_elements(model)
    elements = []
    for c in items:
        if c.tag == "Scholz2015GeometryPathPoint":
            p = c.find("PathPoint")
            if p is None:
                raise reader.fail(c, f"muscle {muscle!r}: a Scholz2015GeometryPathPoint without its <PathPoint>")
            body = _body_frame(reader, p, "socket_parent_frame", muscle, f"path point {c.get('name')!r}")
            elements.append(ScholzPoint(c.get("name") or "", body, reader.floats(p, "location", 3, [0, 0, 0])))
        elif c.tag == "Scholz2015GeometryPathObstacle":
            ref = reader.text(c, "socket_contact_geometry", required=True)
            g = _find_geometry(ref, geometries)
            if g is None:
                raise reader.fail(c, f"muscle {muscle!r}: contact geometry {ref!r} does not exist")
            if g.tag not in OBSTACLE_KINDS:
                what = UNSUPPORTED_SURFACES.get(g.tag, g.tag)
                raise UnsupportedFeatureError(
                    reader.path, c, f"muscle {muscle!r}, obstacle {c.get('name')!r}: {g.tag} {g.get('name')!r} is "
                    f"{what}; supported: ContactSphere, ContactCylinder (closed-form geodesics), ContactEllipsoid and "
                    "ContactTorus (integrated geodesics, without a contact hint)")
            body = _body_frame(reader, g, "socket_frame", muscle, f"contact geometry {g.get('name')!r}")
            if not hasattr(reader, "scholz_geometries"):
                reader.scholz_geometries = set()
            reader.scholz_geometries.add(g)  # used: not listed among the ignored components
            from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
            t = np.eye(4)
            t[:3, :3] = euler_xyz_body_fixed(reader.floats(g, "orientation", 3, [0, 0, 0]))
            t[:3, 3] = reader.floats(g, "location", 3, [0, 0, 0])
            hint = _hint(reader, c, muscle)
            radii = None
            if g.tag in ("ContactEllipsoid", "ContactTorus"):
                kind = OBSTACLE_KINDS[g.tag]
                if g.tag == "ContactEllipsoid":
                    radii = reader.floats(g, "radii", 3, required=True)
                else:
                    radii = np.array([reader.flt(g, "torus_radius", 0.0), reader.flt(g, "tube_radius", 0.0)])
                if (radii <= 0).any():
                    raise reader.fail(g, f"muscle {muscle!r}: the {kind}'s radii must be positive, got {radii}")
                if kind == "torus" and np.isfinite(hint).any():
                    raise UnsupportedFeatureError(
                        reader.path, c, f"muscle {muscle!r}, obstacle {c.get('name')!r}: a torus with a "
                        "contact hint (which way OpenSim's solver goes from it is not "
                        "reproduced; without a hint, the shortest way round, it is)")
                radius = float(radii.min()) if kind == "ellipsoid" else float(radii[1])
            else:
                radius = reader.flt(g, "radius", 0.0)
            if not radius > 0:
                raise reader.fail(g, f"muscle {muscle!r}: the obstacle's radius must be positive, got {radius}")
            elements.append(ScholzObstacle(g.get("name") or c.get("name"), OBSTACLE_KINDS[g.tag], body, t, radius,
                                           hint, None if radii is None else tuple(radii)))
            if np.isfinite(hint).all():
                if not hasattr(reader, "scholz_hinted"):
                    reader.scholz_hinted = []
                if muscle not in reader.scholz_hinted:
                    reader.scholz_hinted.append(muscle)
        else:
            raise UnsupportedFeatureError(reader.path, c, f"muscle {muscle!r}: unsupported path element {c.tag}")
    span: list = []
    for el in elements + [None]:  # a torus must be alone between two path points
        if el is None or isinstance(el, ScholzPoint):
            alone = [o for o in span if o.kind == "torus"]
            if len(span) > 1 and alone:
                raise UnsupportedFeatureError(reader.path, e, f"muscle {muscle!r}: the {alone[0].kind} obstacle "
                                              f"{alone[0].name!r} shares a segment with other obstacles (supported "
                                              "alone)")
            span = []
        else:
            span.append(el)
    try:
        return ScholzPath(tuple(elements))
    except ValueError as err:
        raise reader.fail(e, f"muscle {muscle!r}: {err}") from None


# -- writing ---------------------------------------------------------------------------------------------

def _vec(v: Any) -> str:
    return " ".join("NaN" if np.isnan(x) else repr(float(x) + 0.0) for x in np.asarray(v, dtype=float).reshape(-1))


def contact_geometry_element(kind: str, name: str, frame_path: str, location: Any, orientation: Any,
                             radius: Any) -> Any:
    """A ``<ContactSphere>``, ``<ContactCylinder>`` (``radius``), ``<ContactEllipsoid>`` (``radius``: the radii) or
    ``<ContactTorus>`` (``radius``: torus radius, tube radius)."""
    tag = {v: k for k, v in OBSTACLE_KINDS.items()}[kind]
    e = etree.Element(tag, name=name)
    etree.SubElement(e, "socket_frame").text = frame_path
    etree.SubElement(e, "location").text = _vec(location)
    etree.SubElement(e, "orientation").text = _vec(orientation)
    if kind == "ellipsoid":
        etree.SubElement(e, "radii").text = _vec(radius)
    elif kind == "torus":
        etree.SubElement(e, "torus_radius").text = repr(float(radius[0]))
        etree.SubElement(e, "tube_radius").text = repr(float(radius[1]))
    else:
        etree.SubElement(e, "radius").text = repr(float(radius))
    return e


def scholz_path_element(items: list[tuple], name: str = "path") -> Any:
    """A ``<Scholz2015GeometryPath>``: ``items`` in path order, ``("point", frame_path, location)`` or
    ``("obstacle", geometry_path, hint)``."""
    e = etree.Element("Scholz2015GeometryPath", name=name)
    holder = etree.SubElement(e, "path_elements")
    n_points = n_obstacles = 0
    for item in items:
        if item[0] == "point":
            p = etree.SubElement(holder, "Scholz2015GeometryPathPoint", name=f"path_point_{n_points}")
            pp = etree.SubElement(p, "PathPoint", name="pathpoint")
            etree.SubElement(pp, "socket_parent_frame").text = item[1]
            etree.SubElement(pp, "location").text = _vec(item[2])
            n_points += 1
        else:
            o = etree.SubElement(holder, "Scholz2015GeometryPathObstacle", name=f"obstacle_{n_obstacles}")
            etree.SubElement(o, "socket_contact_geometry").text = item[1]
            etree.SubElement(o, "contact_hint").text = _vec(item[2])
            n_obstacles += 1
    return e


def scholz_unit(force: Any, converter: Any, known_bodies: set[str]):
    """The model's unit for a force record with a ``scholz_path`` (used by :mod:`osim_emb.io.convert`)."""
    from osim_emb.io.model_parts import muscle_parameters
    from osim_emb.paths.scholz import ScholzMusculotendon
    path: ScholzPath = force.scholz_path
    for el in path.elements:
        if el.body not in known_bodies and el.body != getattr(converter.doc, "ground", None):
            raise converter.fail(f"<{force.type} name='{force.name}'>",
                                 f"{el.name!r} of its Scholz2015GeometryPath is on body {el.body!r}, which does not "
                                 "exist", force.line)
    params = None
    try:
        params = muscle_parameters(force.element, converter.doc)
    except Exception as err:  # parameters are optional for geometry; say why they are missing
        converter.log.append(f"muscle {force.name!r}: force model not imported ({err})")
    converter.log.append(f"muscle {force.name!r}: Scholz2015GeometryPath with {len(path.obstacles)} obstacle(s)")
    return ScholzMusculotendon(force.name, force.type, (), (), params, scholz_path=path)
