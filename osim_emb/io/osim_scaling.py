"""Scale an OpenSim 4 model file as OpenSim's ``Model::scale`` does, by editing its XML (everything the scaling does
not touch -- geometry files, forces, controllers, comments -- stays as it was).

Per body b with scale factors s_b = (s_x, s_y, s_z) (the ScaleTool's ScaleSet; a body without an entry is not
scaled), OpenSim 4.6's components scale themselves (``extendScale`` of each):

* offset frames: translation ∘ s of the frame's base body; attached geometry's ``scale_factors`` ∘ s;
* bodies: ``mass_center`` ∘ s; mass × s_x s_y s_z unless the mass distribution is preserved; inertia × s² (uniform
  factors, times the mass factor when masses scale), else recomputed as a cylinder along the smallest principal
  moment (``Body::scaleInertialProperties``); then, with a subject mass, every mass and inertia × m_subject / Σ m;
* CustomJoint translations that are not the identity (LinearFunction 1, 0): the function × |axis| · s of the
  joint's parent base body, as a MultiplierFunction (``SpatialTransform::scale``);
* path points, conditional path points, markers, stations: location ∘ s; moving path points: each coordinate
  function × s_x, s_y, s_z (``MovingPathPoint::extendScale``);
* wrap objects: translation ∘ s; a sphere's radius × mean(s); a cylinder's radius × the mean length of its x and y
  axes scaled, its length × that of its z axis; an ellipsoid's dimensions × its axes'; a torus's radii as the
  cylinder's;
* couplers of a translational coordinate: scale_factor × s_x (uniform factors only, as OpenSim);
* muscles (fibre-length muscles, Millard2012, DeGrooteFregly2016): optimal fibre and tendon slack lengths × L'/L,
  the path's length at the default pose after / before scaling; Ligaments' and PathSprings' resting lengths alike.

The geometry edits are here (:func:`scale_osim_geometry`); the path lengths come from the package's paths
(:func:`scale_path_lengths` takes the ratios).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from lxml import etree

from osim_emb.io.function_xml import is_function_element

__all__ = ["ScalingError", "ScaledDocument", "scale_osim_geometry", "set_path_length_ratios", "PATH_LENGTH_PROPERTIES",
           "read_marker_set", "update_marker_set", "scale_set_xml", "marker_set_xml", "osim_version", "parse_osim",
           "serialize_osim",
           "body_rotation"]


class ScalingError(ValueError):
    """A model the scaling cannot handle; the message names the file and element."""


#: force types whose lengths OpenSim's postScale multiplies by the path-length ratio
PATH_LENGTH_PROPERTIES = {
    **{t: ("optimal_fiber_length", "tendon_slack_length") for t in (
        "Thelen2003Muscle", "Millard2012EquilibriumMuscle", "Millard2012AccelerationMuscle", "DeGrooteFregly2016Muscle",
        "Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated", "Thelen2003Muscle_Deprecated",
        "ActivationFiberLengthMuscle")},
    "Ligament": ("resting_length",), "PathSpring": ("resting_length",), "Blankevoort1991Ligament": ("slack_length",),
}
_UNSUPPORTED_JOINTS = ("ConstantCurvatureJoint",)
_WRAPS = ("WrapSphere", "WrapCylinder", "WrapEllipsoid", "WrapTorus")


@dataclass
class ScaledDocument:
    """The scaled XML tree, the body factors used and what was done (one line each)."""

    root: object
    factors: dict[str, np.ndarray]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        return serialize_osim(self.root)


def parse_osim(text: str):
    """An .osim text's XML tree; OpenSim's tag names with '::' (``HuntCrossleyForce::ContactParametersSet``), which
    XML does not allow, are read under the reader's placeholder (``osim_reader.escape_double_colons``), which
    :func:`serialize_osim` puts back."""
    from osim_emb.io.osim_reader import escape_double_colons
    return etree.fromstring(escape_double_colons(text).encode(),
                            etree.XMLParser(remove_blank_text=False, huge_tree=True))


def serialize_osim(root) -> str:
    """The text of a tree read by :func:`parse_osim`."""
    from osim_emb.io.osim_reader import restore_double_colons
    return restore_double_colons(etree.tostring(root, xml_declaration=True, encoding="UTF-8").decode())


def _vec(e, tag: str, n: int = 3) -> tuple[object, np.ndarray] | tuple[None, None]:
    c = e.find(tag)
    if c is None or not (c.text or "").split():
        return None, None
    values = np.array([float(v) for v in c.text.split()])
    if values.size != n:
        raise ScalingError(f"line {c.sourceline}: <{tag}> of {e.tag} {e.get('name')!r} needs {n} numbers")
    return c, values


def _set(c, values) -> None:
    c.text = " ".join(repr(float(v)) for v in np.atleast_1d(values))


def body_rotation(xyz) -> np.ndarray:
    """The rotation of OpenSim's body-fixed X-Y-Z angles (``setRotationToBodyFixedXYZ``): the package's one
    :func:`osim_emb.paths.wrapping.base.euler_xyz_body_fixed`."""
    from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
    return euler_xyz_body_fixed(xyz)


class _Frames:
    """Resolve a socket path to the base body of the frame it names."""

    def __init__(self, model, where: str):
        self.where = where
        ground = model.find("Ground")
        self.ground = ground.get("name", "ground") if ground is not None else "ground"
        bs = model.find("BodySet/objects")
        self.bodies = {b.get("name"): b for b in (bs if bs is not None else []) if isinstance(b.tag, str)}
        self.offsets: dict[str, list] = {}
        for f in model.iter("PhysicalOffsetFrame"):
            self.offsets.setdefault(f.get("name"), []).append(f)

    @staticmethod
    def _owner(e):
        """The component that owns element ``e`` (its nearest named ancestor outside the list elements)."""
        p = e.getparent()
        while p is not None and (p.get("name") is None or p.tag in ("objects", "components", "frames")):
            p = p.getparent()
        return p

    def base(self, path: str, context) -> str:
        parts = [x for x in path.strip().split("/") if x not in ("", ".")]
        if parts and parts[0] == ".." and not path.strip().startswith("/"):  # relative to the context's owner
            owner = self._owner(context)
            for part in parts[1:]:
                if part == "..":
                    owner = self._owner(owner) if owner is not None else None
                    continue
                child = next((c for c in owner.iter() if c is not owner and c.get("name") == part), None) \
                    if owner is not None else None
                owner = child
            if owner is not None:
                if owner.tag == "Body" or owner.tag == "Ground":
                    return owner.get("name")
                if owner.tag == "PhysicalOffsetFrame":
                    parent = owner.find("socket_parent")
                    if parent is not None and (parent.text or "").strip():
                        return self.base(parent.text, owner)
        name = path.strip().rstrip("/").split("/")[-1]
        if name in self.bodies or name == self.ground:
            return name
        candidates = self.offsets.get(name, [])
        if len(candidates) > 1:  # prefer the frame among the context's ancestors' children
            anc = context
            while anc is not None and len(candidates) > 1:
                local = [f for f in candidates if anc in f.iterancestors()]
                if local:
                    candidates = local
                anc = anc.getparent()
        if not candidates:
            raise ScalingError(f"{self.where}:{context.sourceline}: {context.tag} {context.get('name')!r} names a frame "
                               f"{path.strip()!r} that is neither a body nor an offset frame")
        frame = candidates[0]
        parent = frame.find("socket_parent")
        if parent is None or not (parent.text or "").strip():
            raise ScalingError(f"{self.where}:{frame.sourceline}: PhysicalOffsetFrame {name!r} has no socket_parent")
        return self.base(parent.text, frame)


def _scale_function(holder, prop: str, factor: float, where: str) -> bool:
    """Multiply the function of property ``prop`` of ``holder`` by ``factor`` as OpenSim does (a MultiplierFunction
    around it, or its scale multiplied); False when the holder has no such function."""
    fe, wrapper = None, None
    for c in holder:
        if not isinstance(c.tag, str):
            continue
        if c.tag == prop:  # <prop><SimmSpline .../></prop>
            inner = [x for x in c if isinstance(x.tag, str) and is_function_element(x)]
            if inner:
                fe, wrapper = inner[0], c
                break
        elif is_function_element(c) and c.get("name") == prop:  # <SimmSpline name="prop">
            fe = c
            break
    if fe is None and prop == "function":  # OpenSim 4 also writes a TransformAxis's function unnamed
        found = [c for c in holder if isinstance(c.tag, str) and is_function_element(c)]
        fe = found[0] if found else None
    if fe is None:
        return False
    if fe.tag == "LinearFunction":
        coefficients = fe.find("coefficients")
        values = [float(v) for v in (coefficients.text or "").split()] if coefficients is not None else []
        if prop == "function" and values == [1.0, 0.0]:
            return True  # a degree of freedom: OpenSim leaves it
    if fe.tag == "MultiplierFunction":
        c, scale = fe.find("scale"), None
        scale = float(c.text) if c is not None and (c.text or "").strip() else 1.0
        if c is None:
            c = etree.SubElement(fe, "scale")
        _set(c, scale * factor)
        return True
    mf = etree.Element("MultiplierFunction", name=fe.get("name") or prop)
    mf.tail = fe.tail
    (wrapper if wrapper is not None else holder).replace(fe, mf)
    inner = copy.deepcopy(fe)
    inner.attrib.pop("name", None)
    inner.tail = None
    etree.SubElement(mf, "function").append(inner)  # as OpenSim 4.6 writes it
    _set(etree.SubElement(mf, "scale"), factor)
    return True


def _inertia(mass: float, inertia6: np.ndarray, s: np.ndarray, scale_mass: bool) -> tuple[float, np.ndarray]:
    """``Body::scaleInertialProperties``: (new mass, new inertia xx yy zz xy xz yz)."""
    unscaled = mass
    mass_factor = abs(s[0] * s[1] * s[2])
    if scale_mass:
        mass = mass * mass_factor
    xx, yy, zz, xy, xz, yz = inertia6
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)
    eps = np.finfo(float).eps
    if mass <= eps:
        inertia = inertia * 0.0
    elif _numerically_equal(s[0], s[1]) and _numerically_equal(s[1], s[2]):
        if scale_mass:
            inertia = inertia * mass_factor
        inertia = inertia * (s[0] * s[0])
    else:
        d = np.diag(inertia)
        if d[0] <= d[1]:
            axis = 0 if d[0] <= d[2] else 2
        elif d[1] <= d[2]:
            axis = 1
        else:
            axis = 2
        term = 2.0 * inertia[axis, axis] / unscaled
        radius = 0.0 if term < 0.0 else np.sqrt(term)
        oa = 1 if axis == 0 else 0
        term = 12.0 * (inertia[oa, oa] - 0.25 * unscaled * radius * radius) / unscaled
        length = 0.0 if term < 0.0 else np.sqrt(term)
        length *= s[axis]
        others = [k for k in range(3) if k != axis]
        rad_sqr = radius * s[others[0]] * radius * s[others[1]]
        for k in range(3):
            inertia[k, k] = (0.5 * mass * rad_sqr if k == axis
                             else mass * ((length * length / 12.0) + 0.25 * rad_sqr))
        for i, j in ((0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)):
            inertia[i, j] *= s[i] * s[j]
            if scale_mass:
                inertia[i, j] *= mass_factor
    return mass, np.array([inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]])


def _numerically_equal(a: float, b: float) -> bool:
    """SimTK::isNumericallyEqual at its default tolerance (SignificantReal, relative to the larger magnitude)."""
    tol = np.finfo(float).eps ** 0.875  # SimTK::SignificantReal
    scale = max(abs(a), abs(b))
    return abs(a - b) <= (tol * scale if scale > 1.0 else tol)


def scale_osim_geometry(text: str, factors: Mapping[str, Sequence[float]], *, preserve_mass_distribution: bool = False,
                        mass: float | None = None, translational=None, where: str = "model") -> ScaledDocument:
    """Scale an OpenSim 4 model's geometry and mass properties (everything but the path-length properties, which
    need the scaled paths: :func:`set_path_length_ratios`). ``factors``: body name -> (s_x, s_y, s_z); bodies
    without an entry (and the ground) keep their size. ``translational``: the names of the translational coordinates
    (the motion types OpenSim infers; read from the text when None). Refuses older file layouts and components whose scaling the
    package does not reproduce, naming them."""
    try:
        root = parse_osim(text)
    except etree.XMLSyntaxError as err:
        raise ScalingError(f"{where}: not readable XML ({err})") from None
    model = root.find("Model") if root.tag == "OpenSimDocument" else None
    version = int(root.get("Version", "0")) if model is not None else 0
    if model is None or version < 30517:
        raise ScalingError(f"{where}: scaling edits OpenSim 4 files (Version 30517 or later; this one is "
                           f"{version or 'not an OpenSimDocument'}); open and save it in OpenSim 4 first")
    frames = _Frames(model, where)
    unknown = [b for b in factors if b not in frames.bodies and b != frames.ground]
    if unknown:
        raise ScalingError(f"{where}: no body {', '.join(map(repr, unknown))} to scale")
    s = {b: np.asarray(v, dtype=float).reshape(3) for b, v in factors.items() if b != frames.ground}
    for b, v in s.items():
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise ScalingError(f"{where}: the scale factors of body {b!r} must be finite and positive, got {v.tolist()}")
    notes: list[str] = []

    def factor_of(path: str, context) -> np.ndarray | None:
        return s.get(frames.base(path, context))

    for tag in _UNSUPPORTED_JOINTS:
        for j in model.iter(tag):
            raise ScalingError(f"{where}:{j.sourceline}: {tag} {j.get('name')!r}: its scaling (radii) is not reproduced")
    # frames: offset frames and bodies (translations, geometry)
    for f in model.iter("PhysicalOffsetFrame"):
        parent = f.find("socket_parent")
        fs = factor_of(parent.text, f) if parent is not None and parent.text else None
        if fs is None:
            continue
        c, t = _vec(f, "translation")
        if c is not None:
            _set(c, t * fs)
        _scale_geometry(f, fs)
    for name, b in frames.bodies.items():
        if name in s:
            _scale_geometry(b, s[name])
            c, com = _vec(b, "mass_center")
            if c is not None:
                _set(c, com * s[name])
    # bodies' mass properties
    for name, b in frames.bodies.items():
        if name not in s:
            continue
        mc = b.find("mass")
        m = float(mc.text) if mc is not None and (mc.text or "").strip() else 0.0
        ic, inertia = _vec(b, "inertia", 6)
        if ic is None:
            inertia = np.zeros(6)
        new_mass, new_inertia = _inertia(m, inertia, s[name], not preserve_mass_distribution)
        if mc is not None:
            _set(mc, new_mass)
        if ic is not None:
            _set(ic, new_inertia)
    if mass is not None and mass > 0:
        masses = {n: b.find("mass") for n, b in frames.bodies.items()}
        total = sum(float(c.text) for c in masses.values() if c is not None and (c.text or "").strip())
        if total > 0:
            k = mass / total
            for n, b in frames.bodies.items():
                mc = masses[n]
                if mc is not None and (mc.text or "").strip():
                    _set(mc, float(mc.text) * k)
                ic, inertia = _vec(b, "inertia", 6)
                if ic is not None:
                    _set(ic, inertia * k)
            notes.append(f"masses scaled by {k:.9g} to the subject's {mass:g} kg (the bodies' masses summed to {total:.9g} kg "
                         f"{'after scaling with the volume' if not preserve_mass_distribution else 'before'})")
    # CustomJoint translations
    for j in model.iter("CustomJoint"):
        parent = j.find("socket_parent_frame")
        if parent is None or not (parent.text or "").strip():
            continue
        fs = factor_of(parent.text, j)
        if fs is None:
            continue
        st = j.find("SpatialTransform")
        for ta in (st if st is not None else []):
            if not isinstance(ta.tag, str) or ta.tag != "TransformAxis" or not ta.get("name", "").startswith("transl"):
                continue
            _, axis = _vec(ta, "axis")
            if axis is None:
                continue
            _scale_function(ta, "function", float(np.abs(axis) @ fs), where)
    # ellipsoid joints: EllipsoidJoint::extendScale (radii × the parent's factors), ScapulothoracicJoint::extendScale
    # (the thoracic radii × the parent's; then, only where the parent has factors, the winging axis origin × the
    # child's x, y)
    for tag, radii in (("EllipsoidJoint", "radii_x_y_z"), ("ScapulothoracicJoint", "thoracic_ellipsoid_radii_x_y_z")):
        for j in model.iter(tag):
            parent = j.find("socket_parent_frame")
            fp = factor_of(parent.text, j) if parent is not None and (parent.text or "").strip() else None
            if fp is None:
                continue
            c, r = _vec(j, radii)
            if c is not None:
                _set(c, r * fp)
            child = j.find("socket_child_frame")
            fc = factor_of(child.text, j) if child is not None and (child.text or "").strip() else None
            if tag == "ScapulothoracicJoint" and fc is not None:
                c, origin = _vec(j, "scapula_winging_axis_origin", 2)
                if c is not None:
                    _set(c, origin * fc[:2])
    # stations: markers, path points
    for tag in ("Marker", "PathPoint", "ConditionalPathPoint", "Station"):
        for p in model.iter(tag):
            parent = p.find("socket_parent_frame")
            if parent is None or not (parent.text or "").strip():
                continue
            fs = factor_of(parent.text, p)
            c, loc = _vec(p, "location")
            if fs is not None and c is not None:
                _set(c, loc * fs)
    for p in model.iter("MovingPathPoint"):
        parent = p.find("socket_parent_frame")
        fs = factor_of(parent.text, p) if parent is not None and parent.text else None
        if fs is None:
            continue
        for k, ax in enumerate("xyz"):
            socket = p.find(f"socket_{ax}_coordinate")
            if socket is not None and (socket.text or "").strip():
                _scale_function(p, f"{ax}_location", float(fs[k]), where)
    # wrap objects
    for holder_name, holder in [(frames.ground, model.find("Ground"))] + list(frames.bodies.items()):
        objs = holder.find("WrapObjectSet/objects") if holder is not None else None
        for w in (objs if objs is not None else []):
            if not isinstance(w.tag, str):
                continue
            if w.tag not in _WRAPS:
                raise ScalingError(f"{where}:{w.sourceline}: {w.tag} {w.get('name')!r}: its scaling is not reproduced")
            fs = s.get(holder_name)
            if fs is None:
                continue
            _scale_wrap(w, fs)
    # couplers of translational coordinates (the motion types OpenSim infers, as the package's reader does)
    if translational is None:
        from osim_emb.io.osim_reader import read_osim_string
        translational = {c.name for c in read_osim_string(text, strict=False, name=where).coordinates
                         if c.motion_type == "translational"}
    joint_of = {}
    for j in model.iter():
        if isinstance(j.tag, str) and j.find("coordinates") is not None and j.find("socket_parent_frame") is not None:
            for c in j.find("coordinates"):
                if isinstance(c.tag, str):
                    joint_of[c.get("name")] = j
    for cc in model.iter("CoordinateCouplerConstraint"):
        dep = (cc.findtext("dependent_coordinate_name") or "").strip()
        if dep not in translational:
            continue
        j = joint_of.get(dep)
        fs = factor_of(j.find("socket_parent_frame").text, j) if j is not None else None
        if fs is None:
            continue
        if not (fs[0] == fs[1] == fs[2]):
            raise ScalingError(f"{where}:{cc.sourceline}: CoordinateCouplerConstraint {cc.get('name')!r}: non-uniform "
                               "scaling of a translational coupler is not defined (OpenSim refuses it too)")
        c = cc.find("scale_factor")
        value = float(c.text) if c is not None and (c.text or "").strip() else 1.0
        if c is None:
            c = etree.SubElement(cc, "scale_factor")
        _set(c, value * fs[0])
    return ScaledDocument(root, {b: v.copy() for b, v in s.items()}, notes)


def _scale_geometry(frame, fs: np.ndarray) -> None:
    ag = frame.find("attached_geometry")
    for g in (ag if ag is not None else []):
        if not isinstance(g.tag, str):
            continue
        c, v = _vec(g, "scale_factors")
        if c is not None:
            _set(c, v * fs)


def _scale_wrap(w, fs: np.ndarray) -> None:
    c, t = _vec(w, "translation")
    if c is not None:
        _set(c, t * fs)
    _, xyz = _vec(w, "xyz_body_rotation")
    rot = body_rotation(np.zeros(3) if xyz is None else xyz)
    local = [np.linalg.norm(rot[:, k] * fs) for k in range(3)]  # the wrap axes, scaled, in the body
    if w.tag == "WrapSphere":
        _mul(w, "radius", fs.sum() / 3.0)
    elif w.tag == "WrapCylinder":
        _mul(w, "radius", (local[0] + local[1]) * 0.5)
        _mul(w, "length", local[2])
    elif w.tag == "WrapEllipsoid":
        c, d = _vec(w, "dimensions")
        if c is not None:
            _set(c, d * np.array(local))
    elif w.tag == "WrapTorus":
        _mul(w, "inner_radius", (local[0] + local[1]) * 0.5)
        _mul(w, "outer_radius", (local[0] + local[1]) * 0.5)


def _mul(e, tag: str, k: float) -> None:
    c = e.find(tag)
    if c is not None and (c.text or "").strip():
        _set(c, float(c.text) * k)


def set_path_length_ratios(scaled: ScaledDocument, ratios: Mapping[str, float]) -> list[str]:
    """Multiply the path-length properties of the forces named in ``ratios`` (name -> L'/L at the default pose) as
    OpenSim's postScale does (:data:`PATH_LENGTH_PROPERTIES`); returns the forces with a path whose lengths the
    package does not scale (their type keeps them, as OpenSim's)."""
    model = scaled.root.find("Model")
    fs = model.find("ForceSet/objects")
    unchanged = []
    for f in (fs if fs is not None else []):
        if not isinstance(f.tag, str) or f.get("name") not in ratios:
            continue
        props = PATH_LENGTH_PROPERTIES.get(f.tag)
        if props is None:
            unchanged.append(f"{f.get('name')} ({f.tag})")
            continue
        for p in props:
            _mul(f, p, ratios[f.get("name")])
    return unchanged


def osim_version(text: str) -> int:
    """The Version attribute of an .osim text's OpenSimDocument (0 without one)."""
    import re
    match = re.search(r'<OpenSimDocument[^>]*Version\s*=\s*"(\d+)"', text[:4000])
    return int(match.group(1)) if match else 0


def read_marker_set(path) -> list[tuple[str, str, np.ndarray, bool]]:
    """The markers of a MarkerSet file (OpenSim 3.x ``<body>`` or 4.x ``<socket_parent_frame>``): (name, body,
    location, fixed)."""
    from osim_emb.io.tool_setup import opensim_element
    ms = opensim_element(path, "MarkerSet", ScalingError)
    out = []
    for mk in ms.iter("Marker"):
        name = (mk.get("name") or "").strip()
        body = (mk.findtext("socket_parent_frame") or mk.findtext("body") or "").strip().rstrip("/").split("/")[-1]
        c, location = _vec(mk, "location")
        if not name or not body or c is None:
            raise ScalingError(f"{path}:{mk.sourceline}: a Marker needs a name, a body and a location")
        out.append((name, body, location, (mk.findtext("fixed") or "false").strip().lower() == "true"))
    return out


def update_marker_set(text: str, markers, where: str = "model") -> tuple[str, list[str]]:
    """OpenSim's ``Model::updateMarkerSet``: each marker replaces the model's marker of its name or is added (as an
    OpenSim 4 Marker on its body); returns the text and the names replaced."""
    root = parse_osim(text)
    model = root.find("Model")
    frames = _Frames(model, where)
    ms = model.find("MarkerSet")
    if ms is None:
        ms = etree.SubElement(model, "MarkerSet", name="markerset")
    objs = ms.find("objects")
    if objs is None:
        objs = etree.SubElement(ms, "objects")
    existing = {mk.get("name"): mk for mk in objs if isinstance(mk.tag, str) and mk.tag == "Marker"}
    replaced = []
    for name, body, location, fixed in markers:
        if body != frames.ground and body not in frames.bodies:
            raise ScalingError(f"{where}: marker {name!r} is on {body!r}, which is not a body of the model")
        if name in existing:
            objs.remove(existing[name])
            replaced.append(name)
        e = etree.SubElement(objs, "Marker", name=name)
        etree.SubElement(e, "socket_parent_frame").text = f"/{frames.ground}" if body == frames.ground \
            else f"/bodyset/{body}"
        _set(etree.SubElement(e, "location"), location)
        etree.SubElement(e, "fixed").text = "true" if fixed else "false"
    return serialize_osim(root), replaced


def scale_set_xml(factors, name: str = "scale_set") -> str:
    """A ScaleSet file of body scale factors, as OpenSim's ScaleTool writes ``output_scale_file``."""
    root = etree.Element("OpenSimDocument", Version="40000")
    objs = etree.SubElement(etree.SubElement(root, "ScaleSet", name=name), "objects")
    for body, f in factors.items():
        sc = etree.SubElement(objs, "Scale", name="")
        _set(etree.SubElement(sc, "scales"), f)
        etree.SubElement(sc, "segment").text = body
        etree.SubElement(sc, "apply").text = "true"
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True).decode()


def marker_set_xml(text: str) -> str:
    """The MarkerSet of a model's text as its own file (OpenSim's ``writeMarkerFile``)."""
    root = parse_osim(text)
    ms = root.find("Model/MarkerSet")
    out = etree.Element("OpenSimDocument", Version=root.get("Version", "40000"))
    out.append(copy.deepcopy(ms) if ms is not None else etree.Element("MarkerSet", name="markerset"))
    return etree.tostring(out, xml_declaration=True, encoding="UTF-8").decode()
