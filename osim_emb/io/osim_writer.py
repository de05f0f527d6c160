"""Write an :class:`OsimDocument` as an .osim file, losslessly where it can.

A document read from a file is written by *editing its source text* (:func:`document_to_xml`):
couplers, coordinates' properties, bodies and joints the package adds, and changed path points
are edited in place, in the file's own format; geometry, markers, actuators, controllers, probes
and comments stay as they were, and an unchanged document is written as its source text.

Otherwise (a document built in code, or a change an edit cannot express) an OpenSim 4 (version
40000) file is generated.  Bodies, joints (with their offset frames), coordinates, couplers (any number
of independent coordinates), the loop-closing constraints (PointConstraint, ConstantDistanceConstraint,
PointOnLineConstraint, WeldConstraint), wrap objects, musculotendon paths and markers
are written from the document's records; a pre-4.0 file's contact geometry (on its body's frame) and its
BushingForce, PrescribedForce and PointToPointSpring bodies are brought to their 4.x form; the other properties
of each force element are copied from the source file, with OpenSim 3.3 spellings brought
to 4.x (``isDisabled`` -> ``appliesForce``, path points' ``body`` ->
``socket_parent_frame``, a muscle's min_control as OpenSim 4.6 reads it, ...) and the values of the 3.3
``<defaults>`` section filled in, so that OpenSim 4.6 loads the result without a conversion.  One warning names
what the generated file leaves out.
Numbers are written with ``repr``: reading the file back gives the same model.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from lxml import etree

from osim_emb.io.function_xml import function_to_xml
from osim_emb.io.osim_reader import DOUBLE_COLON_MARK, KNOWN_PATHLESS_FORCES
from osim_emb.io.outputs import write_atomically
from osim_emb.io.visual_geometry import absolute_component_path, upgraded_appearance
from osim_emb.io.osim_document import (
    BodySpec,
    CoordinateSpec,
    CouplerSpec,
    ForceSpec,
    JointSpec,
    OffsetSpec,
    OsimDocument,
    PathPointSpec,
    PointConstraintSpec,
    TransformAxisSpec,
)

__all__ = ["document_to_xml", "document_to_string", "write_osim", "moving_points_as_bodies"]

DISPLAY_TAGS = {"VisibleObject", "display", "display_preference", "DisplayGeometry", "geometry_files",
                "default_color", "Appearance", "show_axes", "scale_factors", "color", "opacity"}


def _num(x: float) -> str:
    x = float(x)
    if np.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return repr(x)


def _sub(parent: Any, tag: str, value: Any = None, **attrib: str) -> Any:
    e = etree.SubElement(parent, tag, **attrib)
    if value is None:
        return e
    if isinstance(value, bool):
        e.text = "true" if value else "false"
    elif isinstance(value, (list, tuple, np.ndarray)):
        e.text = " ".join(_num(v) for v in np.ravel(value))
    elif isinstance(value, (float, np.floating)):
        e.text = _num(value)
    else:
        e.text = str(value)
    return e


def _frame_path(doc: OsimDocument, body: str) -> str:
    return f"/{doc.ground}" if body == doc.ground else f"/bodyset/{body}"


def _wrap_objects(parent: Any, body: BodySpec, appearance=None) -> None:
    """The body's WrapObjectSet; ``appearance(body, wrap object)``: its <Appearance> element or None."""
    ws = _sub(parent, "WrapObjectSet", name="wrapobjectset")
    objs = _sub(ws, "objects")
    for w in body.wrap_objects:
        e = _sub(objs, w.type, name=w.name)
        _sub(e, "active", bool(w.active))
        _sub(e, "xyz_body_rotation", w.xyz_body_rotation)
        _sub(e, "translation", w.translation)
        _sub(e, "quadrant", w.quadrant)
        for k, v in w.parameters.items():
            _sub(e, k, list(v) if isinstance(v, (tuple, list)) else float(v))
        look = appearance(body.name, w.name) if appearance is not None else None
        if look is not None:
            e.append(look)
    _sub(ws, "groups")


def _coordinate(parent: Any, c: CoordinateSpec) -> None:
    e = _sub(parent, "Coordinate", name=c.name)
    _sub(e, "default_value", float(c.default))
    _sub(e, "default_speed_value", float(c.default_speed))
    _sub(e, "range", list(c.range))
    _sub(e, "clamped", bool(c.clamped))
    _sub(e, "locked", bool(c.locked))
    _sub(e, "prescribed_function")
    if c.free_to_satisfy_constraints:
        _sub(e, "is_free_to_satisfy_constraints", True)


def _offset_frame(parent: Any, name: str, doc: OsimDocument, off: OffsetSpec) -> None:
    e = _sub(parent, "PhysicalOffsetFrame", name=name)
    _sub(e, "socket_parent", _frame_path(doc, off.body))
    _sub(e, "translation", off.translation)
    _sub(e, "orientation", off.orientation)


def _joint(parent: Any, doc: OsimDocument, j: JointSpec) -> None:
    e = _sub(parent, j.type, name=j.name)
    pname, cname = f"{j.parent.body}_offset", f"{j.child.body}_offset"
    if pname == cname:
        cname += "_child"
    _sub(e, "socket_parent_frame", pname)
    _sub(e, "socket_child_frame", cname)
    cs = _sub(e, "coordinates")
    for c in j.coordinates:
        _coordinate(cs, c)
    fr = _sub(e, "frames")
    _offset_frame(fr, pname, doc, j.parent)
    _offset_frame(fr, cname, doc, j.child)
    for prop, value in j.properties.items():  # a joint type's own properties (EllipsoidJoint's radii, ...)
        _sub(e, prop, value)
    if j.type == "CustomJoint":
        st = _sub(e, "SpatialTransform")
        present = {a.name: a for a in j.axes}
        defaults = {"rotation1": (1, 0, 0), "rotation2": (0, 1, 0), "rotation3": (0, 0, 1),
                    "translation1": (1, 0, 0), "translation2": (0, 1, 0), "translation3": (0, 0, 1)}
        for name, axis in defaults.items():
            a = present.get(name) or TransformAxisSpec(name, [], np.array(axis, dtype=float), None)
            ta = _sub(st, "TransformAxis", name=name)
            _sub(ta, "coordinates", " ".join(a.coordinates))
            _sub(ta, "axis", a.axis)
            if a.function is not None:
                ta.append(function_to_xml(a.function, "function"))


def _coupler(parent: Any, c: CouplerSpec) -> None:
    e = _sub(parent, "CoordinateCouplerConstraint", name=c.name)
    _sub(e, "isEnforced", bool(c.enabled))
    holder = _sub(e, "coupled_coordinates_function")
    holder.append(function_to_xml(c.function, None))
    _sub(e, "independent_coordinate_names", " ".join(c.independents))
    _sub(e, "dependent_coordinate_name", c.dependent)
    _sub(e, "scale_factor", float(c.scale))


def _point_constraint(parent: Any, doc: OsimDocument, c: PointConstraintSpec) -> None:
    """A loop-closing constraint as OpenSim 4.6 writes it (its sockets name the bodies; the points, line and weld
    frames are in body coordinates, as the document keeps them).  The document keeps only enforced constraints."""
    e = _sub(parent, c.type, name=c.name)
    _sub(e, "isEnforced", True)
    if c.type == "WeldConstraint":
        from osim_emb.core.kinematics import body_fixed_xyz_angles
        names = [f"{c.body1}_offset", f"{c.body2}_offset"]
        if names[0] == names[1]:
            names[1] += "_2"
        _sub(e, "socket_frame1", names[0])
        _sub(e, "socket_frame2", names[1])
        frames = _sub(e, "frames")
        for name, body, location, rotation in zip(names, (c.body1, c.body2), (c.location1, c.location2),
                                                  (c.rotation1, c.rotation2)):
            r = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
            _offset_frame(frames, name, doc, OffsetSpec(body, np.asarray(location, dtype=float),
                                                        body_fixed_xyz_angles(r)))
        return
    if c.type == "PointOnLineConstraint":
        _sub(e, "socket_line_body", _frame_path(doc, c.body1))
        _sub(e, "socket_follower_body", _frame_path(doc, c.body2))
        _sub(e, "line_direction_vec", c.direction)
        _sub(e, "point_on_line", c.location1)
        _sub(e, "point_on_follower", c.location2)
        return
    _sub(e, "socket_body_1", _frame_path(doc, c.body1))
    _sub(e, "socket_body_2", _frame_path(doc, c.body2))
    _sub(e, "location_body_1", c.location1)
    _sub(e, "location_body_2", c.location2)
    if c.type == "ConstantDistanceConstraint":
        _sub(e, "constant_distance", float(c.distance))
    elif c.type != "PointConstraint":
        raise ValueError(f"cannot write constraint {c.name!r} of type {c.type}")


def _path_point(parent: Any, doc: OsimDocument, p: PathPointSpec) -> None:
    tag = {"fixed": "PathPoint", "moving": "MovingPathPoint", "conditional": "ConditionalPathPoint"}[p.kind]
    e = _sub(parent, tag, name=p.name)
    if p.kind == "moving" and p.offset is not None and not np.allclose(p.offset, np.eye(4)):
        raise ValueError(f"cannot write MovingPathPoint {p.name!r}: it moves in an offset frame")
    _sub(e, "socket_parent_frame", _frame_path(doc, p.body))
    if p.kind == "moving":
        for ax, f, c in zip("xyz", p.functions, p.function_coordinates):
            _sub(e, f"socket_{ax}_coordinate", doc.coordinate_path(c))
        for ax, f in zip("xyz", p.functions):
            holder = _sub(e, f"{ax}_location")
            holder.append(function_to_xml(f, None))
        return
    _sub(e, "location", p.location)
    if p.kind == "conditional":
        _sub(e, "socket_coordinate", doc.coordinate_path(p.coordinate))
        _sub(e, "range", list(p.range))


#: Muscles whose OpenSim 4.6 refuses a min_control below minimum_activation (Thelen2003Muscle; Millard2012
#: EquilibriumMuscle with a compliant, undamped tendon); both construct min_control = 0.01, the default minimum_activation.
MIN_ACTIVATION_MUSCLES = ("Millard2012EquilibriumMuscle", "Thelen2003Muscle")


def _float_text(e: Any) -> float | None:
    try:
        return float((e.text or "").strip())
    except (AttributeError, ValueError):
        return None


def _upgrade_controls(src: Any, default: Any, doc: OsimDocument, raised: list[str] | None) -> None:
    """A pre-4.0 muscle's min_control / max_control as OpenSim 4.6 reads them, written for a version-40000 file.

    ``Muscle::updateFromXMLNode`` (files older than 30513) removes min_control = 0 and max_control = 1, leaving the
    muscle type's default (Thelen2003Muscle and Millard2012EquilibriumMuscle: min_control 0.01, the default
    minimum_activation; other muscles 0 and 1); :func:`osim_emb.io.muscle_xml` reads the same values (a value of the
    3.3 ``<defaults>`` object taking the place of a removed one).  Then, for :data:`MIN_ACTIVATION_MUSCLES`, a
    min_control below the muscle's minimum_activation is raised to it (OpenSim 4.6 refuses it: "Property
    'min_control' has an invalid property value"); each raise is described in ``raised``."""
    if "Muscle" not in src.tag:
        return
    if doc.version < 30513:
        for tag, dropped in (("min_control", 0.0), ("max_control", 1.0)):
            e = src.find(tag)
            v = _float_text(e) if e is not None else None
            if v is None or abs(v - dropped) > 1e-15:
                continue
            d = default.find(tag) if default is not None else None
            dv = _float_text(d) if d is not None else None
            if dv is not None and abs(dv - dropped) > 1e-15:
                e.text = _num(dv)
            else:
                src.remove(e)
    if src.tag not in MIN_ACTIVATION_MUSCLES:
        return
    e, a = src.find("min_control"), src.find("minimum_activation")
    lo = _float_text(e) if e is not None else 0.01
    act = _float_text(a) if a is not None else 0.01
    if lo is None or act is None or lo >= act:
        return
    if e is None:
        e = _sub(src, "min_control")
    e.text = _num(act)
    if raised is not None:
        raised.append(f"{src.get('name')} ({src.tag}: min_control {lo:g} raised to its minimum_activation {act:g})")


#: Pre-4.0 forces whose bodies the generated file names by frame (:func:`_upgrade_frames`), and the contact forces
#: whose geometry it carries (:func:`_contact_geometry`): OpenSim 4.6's updateFromXMLNode of each, for a
#: version-40000 file
FRAME_FORCES = ("BushingForce", "PrescribedForce", "PointToPointSpring")
CONTACT_FORCES = ("HuntCrossleyForce", "ElasticFoundationForce")


def _body_of(doc: OsimDocument, e: Any, tag: str, what: str, socket: str | None = None) -> str:
    """The body named by ``e``'s <tag> (3.x), or by its <socket> or connector (files of OpenSim 4.0's development
    versions, 30500-30517: a path whose last name is taken), which the generated file writes (a ValueError naming
    ``what`` otherwise); the elements that name it are removed from ``e``."""
    found = [c for c in e if isinstance(c.tag, str) and c.tag in (tag, socket)]
    connectors = e.find("connectors") if socket is not None else None
    if connectors is not None:
        found += [c for c in connectors if isinstance(c.tag, str) and c.get("name") == socket[len("socket_"):]]
    texts = [(c.findtext("connectee_name") if c.tag.startswith("Connector") else c.text) or "" for c in found]
    for c in found:
        c.getparent().remove(c)
    if connectors is not None and not any(isinstance(c.tag, str) for c in connectors):
        e.remove(connectors)
    ref = next((t.strip() for t in reversed(texts) if t.strip()), "")
    name = ref.rstrip("/").split("/")[-1]
    if not name:
        raise ValueError(f"{what} names no body (<{socket or tag}>)")
    if name != doc.ground and name not in {b.name for b in doc.bodies}:
        raise ValueError(f"{what} names {ref!r}, which is not a body of the model")
    return name


def _vec3(e: Any, tag: str) -> list[float]:
    text = e.findtext(tag)
    if text is None or not text.split():
        return [0.0, 0.0, 0.0]
    v = [float(x) for x in text.split()]
    if len(v) != 3:
        raise ValueError(f"<{tag}> needs three numbers, got {text.strip()!r}")
    return v


def _upgrade_frames(src: Any, doc: OsimDocument) -> None:
    """A pre-4.0 BushingForce's, PrescribedForce's or PointToPointSpring's bodies as OpenSim 4.6 reads them
    (TwoFrameLinker, PrescribedForce and PointToPointSpring ``updateFromXMLNode``): the bushing's body_k with
    location_body_k / orientation_body_k become socket_frame1/2 naming the body, or a PhysicalOffsetFrame
    ``<body>_offset`` in its <frames> where the offset is not zero; the prescribed force's <body> becomes
    socket_frame, the spring's body1 / body2 socket_body1 / socket_body2.  A ValueError says why it cannot be
    written."""
    what = f"{src.tag} {src.get('name')!r}"
    indent = src.text if src.text is not None and not src.text.strip() else None

    def put(at: int, e: Any) -> None:
        src.insert(at, e)
        e.tail = indent

    if src.tag in ("PrescribedForce", "PointToPointSpring"):
        pairs = [("body", "socket_frame")] if src.tag == "PrescribedForce" else [("body1", "socket_body1"),
                                                                                 ("body2", "socket_body2")]
        for at, (old, socket) in enumerate(pairs):
            body = _body_of(doc, src, old, what, socket)
            put(at, _sub(etree.Element("holder"), socket, _frame_path(doc, body)))
        return
    if src.find("frames") is not None or src.find("socket_frame1") is not None or src.find("connectors") is not None:
        raise ValueError("its frames are in the 4.0 development form, which the generated file does not carry")
    sockets, frames = [], []
    for k in (1, 2):
        body = _body_of(doc, src, f"body_{k}", what)
        location, orientation = _vec3(src, f"location_body_{k}"), _vec3(src, f"orientation_body_{k}")
        for tag in (f"location_body_{k}", f"orientation_body_{k}"):
            for c in src.findall(tag):
                src.remove(c)
        if np.linalg.norm(location) > 0 or np.linalg.norm(orientation) > 0:
            name = f"{body}_offset"
            if k == 2 and frames and frames[0][0] == name:
                name += "_2"
            frames.append((name, OffsetSpec(body, np.asarray(location), np.asarray(orientation))))
            sockets.append(name)
        else:
            sockets.append(_frame_path(doc, body))
    for at, socket in enumerate(sockets):
        put(at, _sub(etree.Element("holder"), f"socket_frame{at + 1}", socket))
    if frames:
        holder = _sub(etree.Element("holder"), "frames")
        for name, off in frames:
            _offset_frame(holder, name, doc, off)
        put(2, holder)


def _force(parent: Any, doc: OsimDocument, f: ForceSpec, raised: list[str] | None = None) -> None:
    src = copy.deepcopy(f.element)
    default = doc.defaults.get(src.tag) if doc.version < 40000 else None
    if default is not None:  # 3.3 <defaults>: fill in what the object leaves unset
        have = {c.tag for c in src if isinstance(c.tag, str)}
        for c in default:
            if isinstance(c.tag, str) and c.tag not in have:
                src.append(copy.deepcopy(c))
    if doc.version < 40000:
        _upgrade_controls(src, default, doc, raised)
    for c in list(src):
        if not isinstance(c.tag, str) or c.tag in DISPLAY_TAGS:
            src.remove(c)
    if doc.version < 40000 and src.tag in FRAME_FORCES:
        _upgrade_frames(src, doc)
    if not src.get("name"):  # an unnamed 3.x force, named as OpenSim 4.6 names it (its type, in lower case)
        src.set("name", f.name or src.tag.split(DOUBLE_COLON_MARK)[-1].lower())
    dis = src.find("isDisabled")
    if dis is not None:
        src.remove(dis)
        if src.find("appliesForce") is None:
            _sub(src, "appliesForce", not (dis.text or "").strip().lower() in ("true", "1"))
    if f.has_path:
        gp = src.find("GeometryPath")
        look = upgraded_appearance(gp, "path", doc.version)  # its colour and visibility as OpenSim reads them
        for c in list(gp):
            if not isinstance(c.tag, str) or c.tag in DISPLAY_TAGS or c.tag == "PathPointSet":
                gp.remove(c)
        if look is not None:
            gp.append(look)
        pps = etree.Element("PathPointSet")
        objs = _sub(pps, "objects")
        for p in f.points:
            _path_point(objs, doc, p)
        _sub(pps, "groups")
        gp.insert(0, pps)
        ws = gp.find("PathWrapSet")
        if ws is not None:
            for pw in ws.iter("PathWrap"):
                for c in list(pw):
                    if isinstance(c.tag, str) and c.tag in DISPLAY_TAGS:
                        pw.remove(c)
    parent.append(src)


# -- lossless writing: edit the source document --------------------------------------------------------------
class _NotEditable(Exception):
    """A change the in-place editor does not make (the writer then regenerates the file)."""


def _same(a: Any, b: Any) -> bool:
    """Records equal field by field (numbers exactly; source lines and lxml elements ignored)."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        if type(a) is not type(b):
            return False
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                   if f.name not in ("line", "element"))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable objects are different
        return False


def _parse_source(text: str) -> Any:
    """The source's XML tree; element names with '::' (which OpenSim reads) held as DOUBLE_COLON_MARK, which
    :func:`_serialize` turns back."""
    import re
    from osim_emb.io.osim_reader import escape_double_colons
    body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text.lstrip("\ufeff"))
    parser = etree.XMLParser(remove_blank_text=False, remove_comments=False, huge_tree=True)
    try:
        return etree.fromstring(body, parser)
    except etree.XMLSyntaxError:
        return etree.fromstring(escape_double_colons(body), parser)


def _serialize(root: Any) -> str:
    """The .osim text of a tree (declaration, UTF-8; element names with '::' as OpenSim writes them)."""
    from osim_emb.io.osim_reader import restore_double_colons
    return restore_double_colons(etree.tostring(root, pretty_print=True, xml_declaration=True,
                                                encoding="UTF-8").decode("utf-8"))


def _objects(model: Any, set_tag: str, create: bool = False) -> Any:
    s = model.find(set_tag)
    if s is None:
        if not create:
            return None
        s = etree.SubElement(model, set_tag, name=set_tag.lower())
    o = s.find("objects")
    if o is None:
        o = etree.SubElement(s, "objects")
    return o


def _by_name(container: Any, tag: str | None, name: str) -> Any:
    for e in (container if container is not None else []):
        if isinstance(e.tag, str) and e.get("name") == name and (tag is None or e.tag == tag):
            return e
    return None


def _coupler_v3(parent: Any, c: CouplerSpec) -> Any:
    e = _sub(parent, "CoordinateCouplerConstraint", name=c.name)
    _sub(e, "isDisabled", not c.enabled)
    holder = _sub(e, "coupled_coordinates_function")
    holder.append(function_to_xml(c.function, None))
    _sub(e, "independent_coordinate_names", " ".join(c.independents))
    _sub(e, "dependent_coordinate_name", c.dependent)
    _sub(e, "scale_factor", float(c.scale))
    return e


def _body_v3(parent: Any, b: BodySpec, j: JointSpec) -> None:
    """A 3.3 <Body> with its <Joint> (a CustomJoint; the bodies the package adds are of this kind)."""
    e = _sub(parent, "Body", name=b.name)
    _sub(e, "mass", float(b.mass))
    _sub(e, "mass_center", b.com)
    for k, v in zip(("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz"), b.inertia):
        _sub(e, k, float(v))
    je = _sub(_sub(e, "Joint"), j.type, name=j.name)
    _sub(je, "parent_body", j.parent.body)
    _sub(je, "location_in_parent", j.parent.translation)
    _sub(je, "orientation_in_parent", j.parent.orientation)
    _sub(je, "location", j.child.translation)
    _sub(je, "orientation", j.child.orientation)
    cs = _sub(_sub(je, "CoordinateSet"), "objects")
    for c in j.coordinates:
        ce = _sub(cs, "Coordinate", name=c.name)
        _sub(ce, "motion_type", c.motion_type or "rotational")
        _sub(ce, "default_value", float(c.default))
        _sub(ce, "default_speed_value", float(c.default_speed))
        _sub(ce, "range", list(c.range))
        _sub(ce, "clamped", bool(c.clamped))
        _sub(ce, "locked", bool(c.locked))
    if j.type != "CustomJoint":
        raise _NotEditable(f"a new {j.type} in a 3.3 file")
    st = _sub(je, "SpatialTransform")
    present = {a.name: a for a in j.axes}
    for name, axis in (("rotation1", (1, 0, 0)), ("rotation2", (0, 1, 0)), ("rotation3", (0, 0, 1)),
                       ("translation1", (1, 0, 0)), ("translation2", (0, 1, 0)), ("translation3", (0, 0, 1))):
        a = present.get(name) or TransformAxisSpec(name, [], np.array(axis, dtype=float), None)
        ta = _sub(st, "TransformAxis", name=name)
        if a.function is not None:
            ta.append(function_to_xml(a.function, "function"))
        _sub(ta, "coordinates", " ".join(a.coordinates))
        _sub(ta, "axis", a.axis)


def _path_point_v3(parent: Any, p: PathPointSpec) -> None:
    if p.kind == "moving":
        raise _NotEditable("a changed moving path point in a 3.3 file")
    e = _sub(parent, "PathPoint" if p.kind == "fixed" else "ConditionalPathPoint", name=p.name)
    _sub(e, "location", p.location)
    _sub(e, "body", p.body)
    if p.kind == "conditional":
        _sub(e, "coordinate", p.coordinate)
        _sub(e, "range", list(p.range))


def _edit_source(doc: OsimDocument) -> tuple[Any, bool]:
    """The source document's XML with the document's changes made in place -- couplers, bodies and joints
    the package adds, path points, the name and gravity -- and whether anything changed.  Raises
    _NotEditable for any other change."""
    from osim_emb.io.osim_reader import read_osim_string
    try:
        root = _parse_source(doc.source_text)
    except etree.XMLSyntaxError as err:  # a source OpenSim reads but XML does not ('::' in names)
        raise _NotEditable(f"its source is not well-formed XML ({err})") from None
    old = read_osim_string(doc.source_text, strict=False, name=doc.path)
    v4 = old.version >= 30517  # 30517 has the 4.0 layout (osim_reader)
    model = root.find("Model")
    changed = False
    if doc.name != old.name:
        model.set("name", doc.name)
        changed = True
    if not _same(doc.gravity, old.gravity):
        changed = True
        g = model.find("gravity")
        if g is None:
            g = _sub(model, "gravity")
        g.text = " ".join(_num(v) for v in doc.gravity)
    # couplers: replace the changed ones in place, add the new ones, remove the dropped ones
    old_c = {c.name: c for c in old.couplers}
    cons = _objects(model, "ConstraintSet", create=bool(doc.couplers))
    new_names = {c.name for c in doc.couplers}
    for name in old_c:
        if name not in new_names:
            changed = True
            cons.remove(_by_name(cons, "CoordinateCouplerConstraint", name))
    for c in doc.couplers:
        if c.name in old_c and _same(c, old_c[c.name]):
            continue
        changed = True
        holder = etree.Element("holder")
        (_coupler if v4 else _coupler_v3)(holder, c)
        fresh = holder[0]
        prev = _by_name(cons, "CoordinateCouplerConstraint", c.name) if c.name in old_c else None
        if prev is not None:  # edit it child by child: its comments and other properties stay
            for child in fresh:
                old_child = prev.find(child.tag)
                if old_child is None:
                    prev.append(child)
                elif child.tag == "coupled_coordinates_function":
                    for f in [x for x in old_child if isinstance(x.tag, str)]:
                        old_child.remove(f)
                    for f in list(child):
                        old_child.append(f)
                elif (old_child.text or "").split() != (child.text or "").split():
                    old_child.text = child.text
        else:
            cons.append(fresh)
    # bodies and joints: only additions (the package adds zero-inertia bodies for moving via points)
    old_b = {b.name: b for b in old.bodies}
    old_j = {j.name: j for j in old.joints}
    for b in doc.bodies:
        if b.name in old_b and not _same(b, old_b[b.name]):
            raise _NotEditable(f"body {b.name!r} changed")
    if len(old_b) != len([b for b in doc.bodies if b.name in old_b]):
        raise _NotEditable("bodies removed")
    for j in doc.joints:
        if j.name in old_j and not _same(j, old_j[j.name]):
            oj = old_j[j.name]
            if not _same(dataclasses.replace(j, coordinates=[]), dataclasses.replace(oj, coordinates=[])) \
                    or [c.name for c in j.coordinates] != [c.name for c in oj.coordinates]:
                raise _NotEditable(f"joint {j.name!r} changed")
            for c, oc in zip(j.coordinates, oj.coordinates):  # a coordinate's properties: edit them in place
                if not _same(c, oc):
                    _edit_coordinate(model, c, oc)
                    changed = True
    added_b = [b for b in doc.bodies if b.name not in old_b]
    added_j = {j.child.body: j for j in doc.joints if j.name not in old_j}
    if set(added_j) != {b.name for b in added_b}:
        raise _NotEditable("joints added or removed without their bodies")
    if added_b and 30500 < old.version < 30517:
        raise _NotEditable(f"bodies added to a version-{old.version} file (an OpenSim 4.0 development layout)")
    for b in added_b:
        changed = True
        if v4:
            holder = etree.Element("holder")
            e = _sub(holder, "Body", name=b.name)
            _wrap_objects(e, b)
            _sub(e, "mass", float(b.mass))
            _sub(e, "mass_center", b.com)
            _sub(e, "inertia", b.inertia)
            _objects(model, "BodySet", create=True).append(e)
            _joint(_objects(model, "JointSet", create=True), doc, added_j[b.name])
        else:
            _body_v3(_objects(model, "BodySet", create=True), b, added_j[b.name])
    # forces: only their path points may change
    old_f = {f.name: f for f in old.forces}
    if [f.name for f in doc.forces] != [f.name for f in old.forces]:
        raise _NotEditable("forces added, removed or reordered")
    for f in doc.forces:
        of = old_f[f.name]
        if (f.points is None) != (of.points is None) or getattr(f, "function_path", None) is not None:
            # the path itself was replaced (e.g. a fitted FunctionBasedPath): the force element as given
            if etree.tostring(f.element) == etree.tostring(of.element):
                continue
            src = _find_force(model, f.name, f.type)
            if src is None:
                raise _NotEditable(f"the force {f.name!r}")
            import copy
            fresh = copy.deepcopy(f.element)
            fresh.tail = src.tail
            src.getparent().replace(src, fresh)
            changed = True
            continue
        if _same(f.points, of.points):
            continue
        src = _find_force(model, f.name, f.type)
        gp = src.find("GeometryPath") if src is not None else None
        pps = gp.find("PathPointSet") if gp is not None else None
        objs = pps.find("objects") if pps is not None else None
        if objs is None:
            raise _NotEditable(f"the path of {f.name!r}")
        elements = [c for c in objs if isinstance(c.tag, str)]
        if len(elements) != len(of.points) or len(f.points) != len(of.points):
            raise _NotEditable(f"points added to or removed from the path of {f.name!r}")
        for e, p, op in zip(elements, f.points, of.points):
            if _same(p, op):
                continue  # the source element stays as it is
            holder = etree.Element("holder")
            try:
                _path_point(holder, doc, p) if v4 else _path_point_v3(holder, p)
            except ValueError as err:
                raise _NotEditable(str(err)) from None
            holder[0].tail = e.tail
            objs.replace(e, holder[0])
        changed = True
    if not _same(doc.markers, old.markers):
        raise _NotEditable("markers changed")
    return root, changed


def _edit_coordinate(model: Any, c: CoordinateSpec, old: CoordinateSpec) -> None:
    e = next((x for x in model.iter("Coordinate") if x.get("name") == c.name), None)
    if e is None or c.motion_type != old.motion_type or c.prescribed != old.prescribed:
        raise _NotEditable(f"coordinate {c.name!r} changed")
    for tag, value in (("default_value", float(c.default)), ("default_speed_value", float(c.default_speed)),
                       ("range", list(c.range)), ("clamped", bool(c.clamped)), ("locked", bool(c.locked))):
        holder = etree.Element("holder")
        fresh = _sub(holder, tag, value)
        prev = e.find(tag)
        if prev is None:
            e.append(fresh)
        elif (prev.text or "").split() != (fresh.text or "").split():
            prev.text = fresh.text


def _find_force(model: Any, name: str, tag: str) -> Any:
    e = _by_name(_objects(model, "ForceSet"), tag, name)
    if e is None:
        comps = model.find("components")
        e = _by_name(comps, tag, name)
    return e


def document_to_xml(doc: OsimDocument) -> Any:
    """The XML tree of a document: its source file edited where the package changed it (lossless:
    geometry, markers, actuators, controllers, probes and comments stay), else an OpenSim 4 file
    generated from the records (what an edit cannot express, and what the generated file leaves out, is then
    said in one logging.warning)."""
    if doc.source_text:
        try:
            return _edit_source(doc)[0]
        except _NotEditable as why:
            return _regenerated(doc, f"{why}; writing the model regenerated as an OpenSim 4 file")
    return _generated_xml(doc)


#: Pathless forces of pre-4.0 files whose elements a generated OpenSim 4 file does not carry (their bodies' 3.x
#: spellings are not brought to 4.x)
_NOT_REGENERATED = (frozenset(KNOWN_PATHLESS_FORCES) - {"CoordinateActuator", "CoordinateLimitForce"}
                    - set(FRAME_FORCES) - set(CONTACT_FORCES))
#: OpenSim's contact geometry (ContactGeometrySet members, or a frame's components in 4.x files)
CONTACT_GEOMETRY_TAGS = ("ContactSphere", "ContactHalfSpace", "ContactMesh", "ContactEllipsoid", "ContactCylinder",
                         "ContactBrick", "ContactTorus")


def _contact_geometry(doc: OsimDocument) -> tuple[list, list[tuple[str, str, str]]]:
    """The source's ContactGeometrySet members: a 4.x file's as written (a regenerated file; they were left out, and
    the contact forces naming them made the file one OpenSim could not load); a pre-4.0 file's as OpenSim 4.6 reads
    them (ContactGeometry::updateFromXMLNode):
    <body_name> becomes socket_frame naming the body's frame; location, orientation and the shape's properties
    (radius, a mesh's filename, ...) as written, with the 3.3 ``<defaults>`` values filled in; display
    properties as the Appearance OpenSim makes of them.  Returns the elements, and (tag, name, why) of each member left out."""
    if not doc.source_text:
        return [], []
    try:
        root = _parse_source(doc.source_text)
    except etree.XMLSyntaxError:
        return [], []
    objs = root.find("Model/ContactGeometrySet/objects")
    out, skipped = [], []
    if doc.version >= 40000:  # already OpenSim 4's form: as written, where the frame it names is written
        frames = {_frame_path(doc, b.name) for b in doc.bodies} | {f"/{doc.ground}"}
        for g in (objs if objs is not None else []):
            if not isinstance(g.tag, str):
                continue
            frame = (g.findtext("socket_frame") or "").strip()
            if frame and absolute_component_path(frame, f"/contactgeometryset/{g.get('name')}") not in frames:
                skipped.append((g.tag, g.get("name"), f"{_named(g)}: its frame {frame} is not written"))
                continue
            out.append(copy.deepcopy(g))
        return out, skipped
    for g in (objs if objs is not None else []):
        if not isinstance(g.tag, str):
            continue
        src = copy.deepcopy(g)
        default = doc.defaults.get(src.tag)
        if default is not None:
            have = {c.tag for c in src if isinstance(c.tag, str)}
            src.extend(copy.deepcopy(c) for c in default if isinstance(c.tag, str) and c.tag not in have)
        try:
            body = _body_of(doc, src, "body_name", f"{src.tag} {src.get('name')!r}", "socket_frame")
        except ValueError as err:
            skipped.append((g.tag, g.get("name"), f"{_named(g)}: {err}"))
            continue
        e = etree.Element(src.tag, name=src.get("name") or "")
        _sub(e, "socket_frame", _frame_path(doc, body))
        for c in src:
            if isinstance(c.tag, str) and c.tag not in DISPLAY_TAGS and c.tag != "isDisabled":
                e.append(copy.deepcopy(c))
        look = upgraded_appearance(g, "contact", doc.version)  # its colour and visibility as OpenSim reads them
        if look is not None:
            e.append(look)
        for c in e.iter():
            if isinstance(c.tag, str):
                c.tail = None
                if len(c):
                    c.text = None
        out.append(e)
    return out, skipped


def _contact_geometry_names(force: Any) -> list[str]:
    """The geometry names of a contact force's ContactParameters."""
    return [n for p in force.iter() if isinstance(p.tag, str) and p.tag.endswith("ContactParameters")
            for n in (p.findtext("geometry") or "").split()]


def _named(e: Any) -> str:
    return f"{e.get('name') or '(unnamed)'} ({e.tag})"


def _switched_off(e: Any, on_tag: str) -> bool:
    """``on_tag`` (isEnforced, enabled) false, or (older files) isDisabled true."""
    on, off = e.find(on_tag), e.find("isDisabled")
    if on is not None:
        return (on.text or "").strip().lower() in ("false", "0")
    return off is not None and (off.text or "").strip().lower() in ("true", "1")


def _source_left_out(doc: OsimDocument, written_constraints: set, described_geometry: set = frozenset(),
                     written_frames: set = frozenset()) -> list[str]:
    """What the source file has that the generated file does not carry, element by element: constraints not
    written (disabled, or left out by the importer), contact geometry (but ``described_geometry``: (tag, name) of
    those written or already described), controllers, probes and other components."""
    if not doc.source_text:
        return []
    try:
        root = _parse_source(doc.source_text)
    except etree.XMLSyntaxError:
        return ["it leaves out the source's other components (its XML could not be listed)"]
    from osim_emb.io.osim_reader import restore_double_colons
    model = root.find("Model")
    if model is None:
        return []
    out = []

    def members(set_tag: str) -> list:
        objs = model.find(f"{set_tag}/objects")
        return [e for e in (objs if objs is not None else []) if isinstance(e.tag, str)]

    comps = model.find("components")
    comps = [e for e in (comps if comps is not None else []) if isinstance(e.tag, str)]
    named = {(tag, name) for tag, name, _ in written_constraints}
    lines = {(tag, line) for tag, _, line in written_constraints}
    constraints = []
    for c in members("ConstraintSet") + [e for e in comps if e.tag.endswith("Constraint")]:
        if (c.tag, c.get("name")) in named or (not c.get("name") and (c.tag, c.sourceline) in lines):
            continue  # written (an unnamed one, named by the reader, known by its line)
        why = "disabled" if _switched_off(c, "isEnforced") else "not read"
        constraints.append(f"{c.get('name') or '(unnamed)'} ({c.tag}, {why})")
    if constraints:
        out.append(f"it leaves out {len(constraints)} constraint(s): {', '.join(constraints)}")
    defaults = model.find("defaults")
    skip = set(defaults.iter()) if defaults is not None else set()
    contact = [_named(e) for e in model.iter(*CONTACT_GEOMETRY_TAGS) if e not in skip
               and (e.tag, e.get("name")) not in described_geometry]
    if contact:
        out.append(f"it leaves out {len(contact)} contact geometry object(s): {', '.join(contact)}")
    for set_tag, what in (("ControllerSet", "controller(s)"), ("ProbeSet", "probe(s)"),
                          ("ComponentSet", "component(s) of the ComponentSet")):
        items = [_named(e) + (", disabled" if set_tag == "ControllerSet" and _switched_off(e, "enabled") else "")
                 for e in members(set_tag)]
        if items:
            out.append(f"it leaves out {len(items)} {what}: {', '.join(items)}")
    forces = {f.name for f in doc.forces}
    other = [_named(e) for e in comps if not e.tag.endswith("Constraint") and e.tag not in CONTACT_GEOMETRY_TAGS
             and e.tag != "PhysicalOffsetFrame" and e.get("name") not in forces]
    if other:
        out.append(f"it leaves out {len(other)} of the model's <components>: {', '.join(other)}")
    frames = [e.get("name") or "(unnamed)" for e in comps if e.tag == "PhysicalOffsetFrame"
              and e.get("name") not in written_frames]
    if frames:
        out.append(f"it leaves out {len(frames)} PhysicalOffsetFrame(s) of the model's <components> "
                   f"({', '.join(frames)}; what is fixed to them is written on their bodies)")
    return [restore_double_colons(x) for x in out]


def _regenerated(doc: OsimDocument, why: str) -> Any:
    """The generated OpenSim 4 tree, with one warning: ``why``, then everything the file leaves out, by name."""
    report: list[str] = []
    root = _generated_xml(doc, report)
    import logging
    logging.getLogger(__name__).warning("%s: %s: %s", doc.path, why, "; ".join(report) or "it leaves nothing out")
    return root


class _VisualGeometry:
    """The source's visual geometry, frame by frame (:mod:`osim_emb.io.visual_geometry`): a pre-30502 body's
    VisibleObject as OpenSim 4.6 upgrades it, a later file's attached_geometry as written."""

    def __init__(self, doc: OsimDocument):
        self.doc, self.left_out = doc, []
        self.frames: dict[str, Any] = {}
        self.model_frames: dict[str, Any] = {}  # the model's own PhysicalOffsetFrames (<components>) it carries
        self.wraps: dict[tuple[str, str], Any] = {}  # (body, name) -> the source's wrap object element
        if not doc.source_text:
            return
        try:
            model = _parse_source(doc.source_text).find("Model")
        except etree.XMLSyntaxError:
            return
        if model is None:
            return
        for e in model.iterfind("BodySet/objects/Body"):
            self.frames.setdefault(e.get("name"), e)
        ground = model.find("Ground")
        if ground is not None:
            self.frames[doc.ground] = ground
        for name, frame in self.frames.items():
            for w in frame.iterfind("WrapObjectSet/objects/*"):
                if isinstance(w.tag, str):
                    self.wraps.setdefault((name, w.get("name")), w)
        offsets = {e.get("name"): e for e in model.iterfind("components/PhysicalOffsetFrame") if e.get("name")}
        carried = {f"/{doc.ground}"} | {f"/bodyset/{b.name}" for b in doc.bodies if b.name != doc.ground}
        grown = True
        while grown:  # those fixed to the ground, a body or another such frame (chains in any order)
            grown = False
            for name, e in offsets.items():
                parent = (e.findtext("socket_parent") or "").strip()
                if (name not in self.model_frames and parent
                        and absolute_component_path(parent, f"/{name}") in carried):
                    self.model_frames[name] = e
                    carried.add(f"/{name}")
                    grown = True

    def wrap_appearance(self, body: str, name: str) -> Any:
        """The <Appearance> of the source's wrap object ``name`` on ``body`` as OpenSim 4.6 reads it, or None."""
        src = self.wraps.get((body, name))
        return upgraded_appearance(src, "wrap", self.doc.version) if src is not None else None

    def attach(self, e: Any, name: str) -> None:
        """Give the generated body (or ground) element ``e`` the source's geometry of the frame ``name``."""
        from osim_emb.io.visual_geometry import frame_geometry
        src = self.frames.get(name)
        if src is None:
            return
        what = f"{self.doc.path}: {src.tag} {name!r} (line {src.sourceline})"
        path = f"/{name}" if name == self.doc.ground else f"/bodyset/{name}"
        geometry, frames, left_out = frame_geometry(src, name, self.doc.version, what, path, self.model_frames)
        self.left_out += [x.split(": ", 1)[-1] for x in left_out]
        if geometry:
            _sub(e, "attached_geometry").extend(geometry)
        if frames:
            _sub(e, "components").extend(frames)


def _generated_xml(doc: OsimDocument, report: list[str] | None = None) -> Any:
    """The OpenSim 4 XML tree generated from the document's records.  What it leaves out (and the min_control values
    it raises) is described, one phrase per kind, in ``report`` (or, when ``report`` is None, said in a warning if
    anything is left out)."""
    notes: list[str] = []
    visual = _VisualGeometry(doc)
    root = etree.Element("OpenSimDocument", Version="40000")
    m = _sub(root, "Model", name=doc.name)
    ground = next((b for b in doc.bodies if b.name == doc.ground), BodySpec(doc.ground))
    g = _sub(m, "Ground", name=doc.ground)
    _wrap_objects(g, ground, visual.wrap_appearance)
    visual.attach(g, doc.ground)
    _sub(m, "gravity", doc.gravity)
    if doc.credits:
        _sub(m, "credits", doc.credits)
    if doc.publications:
        _sub(m, "publications", doc.publications)
    if doc.assembly_accuracy is not None:  # OpenSim's assembler tolerance: the file's, or its assemblies differ
        _sub(m, "assembly_accuracy", float(doc.assembly_accuracy))
    _sub(m, "length_units", "meters")
    _sub(m, "force_units", "N")
    bs = _sub(_sub(m, "BodySet", name="bodyset"), "objects")
    for b in doc.bodies:
        if b.name == doc.ground:
            continue
        e = _sub(bs, "Body", name=b.name)
        _wrap_objects(e, b, visual.wrap_appearance)
        _sub(e, "mass", float(b.mass))
        _sub(e, "mass_center", b.com)
        _sub(e, "inertia", b.inertia)
        visual.attach(e, b.name)
    js = _sub(_sub(m, "JointSet", name="jointset"), "objects")
    for j in doc.joints:
        _joint(js, doc, j)
    cs = _sub(_sub(m, "ConstraintSet", name="constraintset"), "objects")
    written: set = set()
    unwritten: list[str] = []
    constraints = sorted(list(doc.couplers) + list(doc.point_constraints),  # in the source's order
                         key=lambda c: c.line if c.line is not None else float("inf"))
    for c in constraints:
        if isinstance(c, CouplerSpec):
            _coupler(cs, c)
        else:
            holder = etree.Element("holder")
            try:
                _point_constraint(holder, doc, c)
            except ValueError as err:
                unwritten.append(f"{c.name} ({c.type}: {err})")
                continue
            cs.append(holder[0])
        written.add((getattr(c, "type", "CoordinateCouplerConstraint"), c.name, c.line))
    fs = _sub(_sub(m, "ForceSet", name="forceset"), "objects")
    geometry, geometry_skipped = _contact_geometry(doc)
    carried = {g.get("name") for g in geometry}
    left_out = [f for f in doc.forces if doc.version < 40000 and f.type in _NOT_REGENERATED]
    if left_out:
        notes.append(f"it leaves out {len(left_out)} force(s) whose version-{doc.version} elements name bodies or "
                     "frames it does not carry: " + ", ".join(f"{f.name} ({f.type})" for f in left_out))
    raised: list[str] = []
    unwritten_forces: list[str] = []
    for f in doc.forces:
        if f in left_out:
            continue
        if f.type in CONTACT_FORCES:
            missing = [n for n in _contact_geometry_names(f.element) if n not in carried]
            if missing:
                unwritten_forces.append(f"{f.name} ({f.type}: its contact geometry {', '.join(missing)} "
                                        "is not carried)")
                continue
        try:
            _force(fs, doc, f, raised)
        except ValueError as err:
            unwritten_forces.append(f"{f.name} ({f.type}: {err})")
    if unwritten_forces:
        notes.append(f"it leaves out {len(unwritten_forces)} force(s) it cannot write: {', '.join(unwritten_forces)}")
    ms = _sub(_sub(m, "MarkerSet", name="markerset"), "objects")
    for mk in doc.markers:
        e = _sub(ms, "Marker", name=mk.name)
        _sub(e, "socket_parent_frame", _frame_path(doc, mk.body))
        _sub(e, "location", mk.location)
        _sub(e, "fixed", bool(mk.fixed))
    if geometry:
        gs = _sub(_sub(m, "ContactGeometrySet", name="contactgeometryset"), "objects")
        gs.extend(geometry)
    if visual.model_frames:  # as written: visual geometry may hang on them
        comps = m.find("components")
        (comps if comps is not None else _sub(m, "components")).extend(
            copy.deepcopy(e) for e in visual.model_frames.values())
    if geometry_skipped:
        notes.append(f"it leaves out {len(geometry_skipped)} contact geometry object(s) it cannot write: "
                     + ", ".join(why for _, _, why in geometry_skipped))
    if unwritten:
        notes.append(f"it leaves out {len(unwritten)} constraint(s) it cannot write: {', '.join(unwritten)}")
    notes += _source_left_out(doc, written, {(g.tag, g.get("name")) for g in geometry}
                              | {(tag, name) for tag, name, _ in geometry_skipped}, set(visual.model_frames))
    if visual.left_out:
        notes.append(f"it leaves out {len(visual.left_out)} piece(s) of visual geometry: {', '.join(visual.left_out)}")
    if doc.skipped:
        notes.append(f"it leaves out {len(doc.skipped)} element(s) the importer left out: "
                     + ", ".join(f"{s.name} ({s.kind}: {s.reason})" for s in doc.skipped))
    if raised:
        notes.append(f"{len(raised)} muscle(s) get the min_control OpenSim 4.6 requires: {', '.join(raised)}")
    if report is not None:
        report.extend(notes)
    elif notes:
        import logging
        logging.getLogger(__name__).warning("%s: the generated OpenSim 4 file: %s", doc.path, "; ".join(notes))
    return root


def document_to_string(doc: OsimDocument) -> str:
    """The .osim text of a document: the source text itself where nothing changed, else the edited source
    (or the regenerated file, see :func:`document_to_xml`)."""
    if doc.source_text:
        try:
            root, changed = _edit_source(doc)
        except _NotEditable:
            root, changed = document_to_xml(doc), True
        if not changed:
            return doc.source_text
    else:
        root = document_to_xml(doc)
    return _serialize(root)


def _relocate_meshes(root: Any, doc: OsimDocument, path: Path) -> None:
    """Mesh files named relative to the model file, for a file written into another folder than its source.

    A ContactMesh's <filename> names its file relative to the model file's folder (OpenSim 4.6 opens it from there);
    a visual Mesh's <mesh_file> is looked for beside the model file, then in the ``Geometry`` folder beside it, then
    in the user's geometry search path (the GUI's own Geometry folder).  Where the written file is in another folder,
    a file found from the source's folder (and, for a Mesh, not by the same name from the written file's folder) is
    named relative to the written file (absolute where no relative path exists); a file found from neither (left to
    the search path) keeps its name."""
    import os
    source_dir, out_dir = Path(doc.path).resolve().parent, path.resolve().parent
    if source_dir == out_dir:
        return

    def relocate(e: Any, found: Path) -> None:
        try:
            e.text = os.path.relpath(found, out_dir)
        except ValueError:  # another drive
            e.text = str(found)

    for e in root.iter("ContactMesh"):
        f = e.find("filename")
        name = (f.text or "").strip() if f is not None else ""
        if name and not Path(name).is_absolute() and (source_dir / name).is_file():
            relocate(f, source_dir / name)
    for e in root.iter("Mesh"):
        f = e.find("mesh_file")
        name = (f.text or "").strip() if f is not None else ""
        if not name or Path(name).is_absolute():
            continue
        found = [d / name for d in (source_dir, source_dir / "Geometry") if (d / name).is_file()]
        if found and not any((d / name).is_file() for d in (out_dir, out_dir / "Geometry")):
            relocate(f, found[0])


def write_osim(doc_or_model: Any, path: str | Path, *, protect: Sequence[str | Path] = (),
               opensim4: bool = False) -> None:
    """Write a model (imported from .osim, or loaded from JSON that keeps its document) as .osim, atomically.

    The source file is edited where the package changed it (:func:`document_to_xml`); everything else
    is written as read, so OpenSim reads the same model back.

    Parameters
    ----------
    doc_or_model : Model or OsimDocument
        The model (or the document in ``model.extras['document']``).
    path : str or pathlib.Path
        The .osim file to write.
    protect : sequence of paths, optional
        Files that must not be overwritten (a command's inputs); the model's source file is always
        protected.
    opensim4 : bool, optional
        Write an OpenSim 4 (version 40000) file even when the source is an OpenSim 3.3 or 2.x file: the file
        generated from the model's records (bodies, joints, coordinates, couplers and loop-closing constraints,
        wrap objects, muscles and their paths, markers, contact geometry and the forces using it, bushings,
        prescribed forces and springs; one warning names what it leaves out: constraints it does not write,
        controllers, probes, other components and forces, and what of the display it cannot carry, by name); the
        bodies' visual geometry as OpenSim 4.6 upgrades it (:mod:`osim_emb.io.visual_geometry`).  A ContactMesh's
        file, or a Mesh found from the source's folder, is named relative to ``path``'s folder.

    Raises
    ------
    ValueError
        The model was not imported from an .osim file and keeps no OpenSim document.

    Examples
    --------
    >>> import os, tempfile
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> path = os.path.join(tempfile.mkdtemp(), "copy.osim")
    >>> oe.write_osim(model, path)
    >>> oe.load_osim(path).coordinate_names == model.coordinate_names
    True
    """
    doc = doc_or_model
    if not isinstance(doc, OsimDocument):
        doc = doc_or_model.extras.get("document")
        if doc is None:
            raise ValueError("this model was not imported from an .osim file and has no OpenSim document to write")
    if opensim4 and doc.version < 40000:
        root = _regenerated(doc, f"a version-{doc.version} file written as OpenSim 4 (version 40000) "
                                 "from the model's records")
        _relocate_meshes(root, doc, Path(path))
        text = _serialize(root)
    else:
        text = document_to_string(doc)
    write_atomically(path, text, protect=list(protect) + [doc.path] if Path(doc.path).exists() else list(protect))


def moving_points_as_bodies(doc: OsimDocument, *, suffix: str = "_mvp") -> OsimDocument:
    """The seed's set-up for comparing moment arms (section 4-4 A): every MovingPathPoint becomes a
    zero-inertia body on its frame, moved by a CustomJoint with three translations along x, y, z whose
    coordinates are coupled to the point's driving coordinate by CoordinateCouplerConstraints with the
    point's functions; a PathPoint at the new body's origin takes the moving point's place."""
    out = copy.deepcopy(doc)
    out.name = doc.name + suffix
    names = {b.name for b in out.bodies}
    for f in out.forces:
        if not f.has_path:
            continue
        for k, p in enumerate(f.points):
            if p.kind != "moving":
                continue
            base = f"{f.name}_{p.name or 'point'}_{k + 1}"
            bname = base if base not in names else base + "_b"
            names.add(bname)
            out.bodies.append(BodySpec(bname, 0.0, np.zeros(3), np.zeros(6)))
            coords, axes = [], []
            for ax, func, drv in zip("xyz", p.functions, p.function_coordinates):
                cname = f"{bname}_{ax}"
                coords.append(CoordinateSpec(cname, bname, "translational", 0.0, 0.0, (-np.inf, np.inf)))
                from osim_emb.core.functions import Linear
                axes.append(TransformAxisSpec(f"translation{'xyz'.index(ax) + 1}", [cname],
                                              np.eye(3)["xyz".index(ax)], Linear([1.0], 0.0)))
                out.couplers.append(CouplerSpec(f"{cname}_coupler", cname, [drv], func, 1.0, True))
            off = p.offset if p.offset is not None else np.eye(4)
            if not np.allclose(off, np.eye(4)):
                raise ValueError(f"MovingPathPoint {p.name!r} of {f.name!r} moves in an offset frame")
            parent = OffsetSpec(p.body, np.zeros(3), np.zeros(3))
            child = OffsetSpec(bname, np.zeros(3), np.zeros(3))
            out.joints.append(JointSpec(f"{bname}_joint", "CustomJoint", parent, child, coords, axes))
            f.points[k] = PathPointSpec(p.name, "fixed", bname, np.zeros(3), line=p.line)
    return out
