"""Visual geometry of an .osim file, as the generated OpenSim 4 file carries it (:mod:`osim_emb.io.osim_writer`).

A pre-4.0 file (before version 30502) gives each body (and the ground) a ``<VisibleObject>``; OpenSim 4.6 reads it as
``<attached_geometry>`` Meshes (``PhysicalFrame::updateFromXMLNode``), and this module makes the same elements:

* version >= 20101: each ``<DisplayGeometry>`` of its ``<GeometrySet>`` (counted from 1) becomes the Mesh
  ``BODY_geom_K``: ``mesh_file`` the ``geometry_file``; ``scale_factors`` its own times the VisibleObject's;
  an ``Appearance`` holding its ``color`` and ``opacity`` as written, and ``visible`` false where its
  ``display_preference`` is 0 (OpenSim 4.6 reads no other display preference: the representation stays shaded).
  Where its ``transform`` or the VisibleObject's (three body-fixed X-Y-Z angles, then a translation) is not zero, the
  Mesh hangs on a PhysicalOffsetFrame ``BODY_geom_frame_K`` among the body's ``<components>``, placed at the
  VisibleObject's transform composed with its own.  A ``texture_file`` is dropped (as OpenSim 4.6 drops it).
* version < 20101: each file of ``<geometry_files>`` (counted from 0) becomes the Mesh ``BODY_geom_K`` with the
  VisibleObject's ``scale_factors`` (its transform is not applied: OpenSim 4.6 ignores it too).

OpenSim writes the numbers it computes (scale factors, the frames' translation and orientation) with six significant
digits; so does this module, so that both files give the same geometry.  A file of version 30502 or later already
has ``<attached_geometry>``: it is carried as written, with the geometry on the model's own offset frames.

Wrap objects, paths and contact geometry: :func:`upgraded_appearance` gives the ``<Appearance>`` OpenSim 4.6 makes of
a pre-4.0 element's display properties (colour, display preference, visibility).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from lxml import etree

from osim_emb.paths.wrapping.base import euler_xyz_body_fixed

#: The first version whose frames hold <attached_geometry> rather than a <VisibleObject>
ATTACHED_GEOMETRY_VERSION = 30502
#: Before this version a VisibleObject lists its meshes in <geometry_files>
GEOMETRY_SET_VERSION = 20101


def _g(x: float) -> str:
    """A number as OpenSim's upgrade writes it (a C++ stream's default: six significant digits)."""
    return "%g" % float(x)


def _numbers(e: Any, tag: str, n: int, default: float, what: str) -> np.ndarray:
    found = e.find(tag)
    if found is None or not (found.text or "").split():
        return np.full(n, float(default))
    try:
        v = np.array([float(x) for x in found.text.split()])
    except ValueError:
        v = np.zeros(0)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: <{tag}> (line {found.sourceline}) needs {n} finite numbers, got "
                         f"{found.text.strip()!r}")
    return v


def _text(parent: Any, tag: str, text: str) -> Any:
    """A child element holding ``text`` (the writer's ``_sub`` would be an import cycle: it imports this module)."""
    e = etree.SubElement(parent, tag)
    e.text = text
    return e


def _mesh(name: str, mesh_file: str, scale: np.ndarray, appearance: list[Any] | None) -> Any:
    m = etree.Element("Mesh", name=name)
    _text(m, "socket_frame", "..")  # the frame holding it in <attached_geometry>
    _text(m, "scale_factors", " ".join(_g(s) for s in scale))
    if appearance is not None:
        a = etree.SubElement(m, "Appearance")
        a.extend(appearance)
    _text(m, "mesh_file", mesh_file)
    return m


def upgrade_visible_object(frame: Any, name: str, version: int, what: str) -> tuple[list, list, list[str]]:
    """The <VisibleObject> of a pre-30502 body (or ground) element ``frame`` named ``name``, as OpenSim 4.6 reads
    it: (the Meshes for its <attached_geometry>, the PhysicalOffsetFrames for its <components> (each holding its
    Mesh), phrases naming what is not carried).  ``what`` names the element in errors (a ValueError for a malformed
    number list)."""
    vo = frame.find("VisibleObject")
    if vo is None:
        return [], [], []
    outer_scale = _numbers(vo, "scale_factors", 3, 1.0, f"{what}'s VisibleObject")
    outer = _numbers(vo, "transform", 6, 0.0, f"{what}'s VisibleObject")
    notes: list[str] = []
    if version < GEOMETRY_SET_VERSION:
        files = (vo.findtext("geometry_files") or "").split()
        if files and np.linalg.norm(outer) > 0:
            notes.append(f"{what}'s VisibleObject <transform> (OpenSim 4.6 does not apply it to a version-{version} "
                         "file's geometry_files either)")
        return [_mesh(f"{name}_geom_{k}", f, outer_scale, None) for k, f in enumerate(files)], [], notes
    meshes, frames = [], []
    eps = np.finfo(float).eps
    objs = vo.find("GeometrySet/objects")
    for k, dg in enumerate(objs.findall("DisplayGeometry") if objs is not None else [], start=1):
        where = f"{what}'s DisplayGeometry {k}"
        inner = _numbers(dg, "transform", 6, 0.0, where)
        scale = _numbers(dg, "scale_factors", 3, 1.0, where) * outer_scale
        appearance = [copy.deepcopy(c) for c in dg if isinstance(c.tag, str) and c.tag in ("color", "opacity")]
        for c in appearance:
            c.tail = None
        pref = (dg.findtext("display_preference") or "").strip()
        if pref == "0":
            appearance.append(etree.Element("visible"))
            appearance[-1].text = "false"
        texture = (dg.findtext("texture_file") or "").strip()
        if texture:
            notes.append(f"{where}'s texture_file {texture!r} (OpenSim 4.6 drops it too)")
        mesh = _mesh(f"{name}_geom_{k}", (dg.findtext("geometry_file") or "").strip(), scale, appearance)
        if np.linalg.norm(inner) < eps and np.linalg.norm(outer) < eps:
            meshes.append(mesh)
            continue
        r_out, r_in = euler_xyz_body_fixed(outer[:3]), euler_xyz_body_fixed(inner[:3])
        from osim_emb.core.kinematics import body_fixed_xyz_angles
        p = outer[3:] + r_out @ inner[3:]
        angles = body_fixed_xyz_angles(r_out @ r_in)
        f = etree.Element("PhysicalOffsetFrame", name=f"{name}_geom_frame_{k}")
        _text(f, "socket_parent", "..")
        _text(f, "translation", " ".join(_g(x) for x in p))
        _text(f, "orientation", " ".join(_g(x) for x in angles))
        etree.SubElement(f, "attached_geometry").append(mesh)
        frames.append(f)
    return meshes, frames, notes


def absolute_component_path(path: str, here: str) -> str:
    """A component path (socket) ``path`` seen from the component at ``here`` (absolute, "/a/b")."""
    parts = [] if path.startswith("/") else [p for p in here.split("/") if p]
    for p in path.split("/"):
        if p == "..":
            parts = parts[:-1]
        elif p not in ("", "."):
            parts.append(p)
    return "/" + "/".join(parts)


def frame_geometry(frame: Any, name: str, version: int, what: str, frame_path: str = "",
                   model_frames: dict | None = None) -> tuple[list, list, list[str]]:
    """A body's (or the ground's) visual geometry for the generated OpenSim 4 file: (elements for its
    <attached_geometry>, PhysicalOffsetFrames for its <components>, phrases naming what is not carried).  A file of
    version 30502 or later: its <attached_geometry> members, and the PhysicalOffsetFrames and geometry among its
    <components> that are fixed to it (socket_parent or socket_frame ``..``), and the geometry among them that hangs
    on one of the model's own PhysicalOffsetFrames the generated file carries (``model_frames``: their names; the
    component seen from ``frame_path``/NAME), as written (OpenSim's BuiltinGeometry.osim: bricks among the ground's
    components on anchors among the model's); other components named."""
    if version < ATTACHED_GEOMETRY_VERSION:
        return upgrade_visible_object(frame, name, version, what)
    ag = frame.find("attached_geometry")
    geometry = [copy.deepcopy(g) for g in (ag if ag is not None else []) if isinstance(g.tag, str)]
    frames, notes = [], []
    comps = frame.find("components")
    for c in (comps if comps is not None else []):
        if not isinstance(c.tag, str):
            continue
        parent = (c.findtext("socket_parent") or "").strip()
        on = (c.findtext("socket_frame") or "").strip()
        seen_from = f"{frame_path}/{c.get('name')}"
        on_model_frame = bool(on and frame_path) and (
            absolute_component_path(on, seen_from).lstrip("/") in (model_frames or ()))
        on_it = c.find("socket_parent") is None and (on in ("..", "../") or on_model_frame)
        if (c.tag == "PhysicalOffsetFrame" and parent in ("..", "../")) or on_it:
            frames.append(copy.deepcopy(c))  # a frame fixed to it, or geometry on it or on a carried model frame
        else:
            notes.append(f"{what}'s component {c.get('name') or '(unnamed)'} ({c.tag}"
                         + (f" on {on}" if on else f" on {parent}" if parent else "") + ")")
    return geometry, frames, notes


#: the first version whose wrap objects, paths and contact geometry hold an <Appearance> (OpenSim's
#: WrapObject/GeometryPath/ContactGeometry::updateFromXMLNode convert older display properties below these)
APPEARANCE_VERSIONS = {"wrap": 30515, "path": 30516, "contact": 30507}
#: the colour OpenSim 4.6 gives a pre-30516 path without a default_color
PATH_COLOR = "0.8 0.1 0.1"


def _preference(e: Any) -> int | None:
    text = (e.text or "").strip() if e is not None else ""
    try:
        return int(text)
    except ValueError:
        return None


def upgraded_appearance(src: Any, kind: str, version: int) -> Any:
    """The <Appearance> of a wrap object, GeometryPath or contact geometry element (``kind``: "wrap", "path",
    "contact") as OpenSim 4.6 reads it: a file of ``version`` before APPEARANCE_VERSIONS[kind] has its display
    properties (color, display_preference, a VisibleObject's display_preference, a path's default_color) turned into
    the Appearance OpenSim's updateFromXMLNode makes of them; a later file's own <Appearance> as written.  None where
    OpenSim keeps the class's default appearance."""
    if version >= APPEARANCE_VERSIONS[kind]:
        own = src.find("Appearance")
        return copy.deepcopy(own) if own is not None else None
    app = etree.Element("Appearance")
    vo = src.find("VisibleObject")
    if kind == "path":  # coloured by default_color (else red), hidden by its VisibleObject: OpenSim's upgrade as it
        # prints it (a 4.x file without the colour would draw the path grey, and an empty <Appearance/> white)
        _text(app, "color", src.findtext("default_color") if src.find("default_color") is not None
              else PATH_COLOR)
        if vo is not None and _preference(vo.find("display_preference")) == 0:
            _text(app, "visible", "false")
        return app
    if kind == "contact":
        color = src.find("color")
        _text(app, "color", color.text if color is not None else "0 1 1")
        pref = src.find("display_preference")
        if pref is not None:
            if (pref.text or "").strip() == "0":
                _text(app, "visible", "false")
            else:
                value = (pref.text or "").strip()
                _text(_text(app, "SurfaceProperties", None), "representation", "3" if value == "4" else value)
        return app if color is not None or pref is not None else None
    color = _text(app, "color", "0 1 1")  # a wrap object: cyan, half transparent, drawn as a surface
    _text(app, "opacity", "0.5")
    rep = _text(_text(app, "SurfaceProperties", None), "representation", "3")
    modified, hidden = False, False
    if src.find("color") is not None:
        color.text, modified = src.findtext("color"), True
    pref = _preference(src.find("display_preference"))
    if pref == 0:
        hidden = modified = True
    elif pref is not None and pref < 4:
        rep.text, modified = str(pref), True
    inner = _preference(vo.find("display_preference")) if vo is not None else None
    if inner == 0:
        hidden = modified = True
    elif inner is not None and rep.text == "3" and inner < 4:
        rep.text, modified = str(inner), True
    if hidden:
        _text(app, "visible", "false")
    return app if modified else None
