"""Read OpenSim .osim files -- 1.x (10901-19999), 2.x and 3.3 (20000-30499, the 3.3 layout), the OpenSim 4.0
development formats 30500-30504 and 30517-39999, and 4.x -- into an OsimDocument.  Older layouts are first updated as
OpenSim 4.6 updates them (``_Reader._update_legacy_xml``, the updateFromXMLNode rules of OpenSim's classes).

What cannot be represented is reported by element and line: a
:class:`UnsupportedFeatureError` by default, or, with ``strict=False``, an
entry in ``document.skipped``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from osim_emb.core.kinematics import body_fixed_xyz_angles
from osim_emb.io.errors import OsimImportError, UnsupportedFeatureError
from osim_emb.io.function_xml import find_function, parse_function
from osim_emb.io.osim_document import (
    BodySpec,
    CoordinateSpec,
    CouplerSpec,
    PointConstraintSpec,
    ForceSpec,
    JointSpec,
    MarkerSpec,
    OffsetSpec,
    OsimDocument,
    PathPointSpec,
    PathWrapSpec,
    Skipped,
    TransformAxisSpec,
    WrapObjectSpec,
)

__all__ = ["read_osim", "read_osim_string", "SUPPORTED_JOINTS", "JOINT_AXES"]

X, Y, Z = np.eye(3)
#: Joint types other than CustomJoint, as OpenSim/Simbody define them, in CustomJoint form:
#: (axis name, axis, index of the joint's coordinate); translations act in the parent joint frame.
JOINT_AXES: dict[str, list[tuple[str, np.ndarray, int]]] = {
    "WeldJoint": [],
    "PinJoint": [("rotation1", Z, 0)],
    "SliderJoint": [("translation1", X, 0)],
    "UniversalJoint": [("rotation1", X, 0), ("rotation2", Y, 1)],
    "GimbalJoint": [("rotation1", X, 0), ("rotation2", Y, 1), ("rotation3", Z, 2)],
    "BallJoint": [("rotation1", X, 0), ("rotation2", Y, 1), ("rotation3", Z, 2)],
    "PlanarJoint": [("rotation1", Z, 0), ("translation1", X, 1), ("translation2", Y, 2)],
    "FreeJoint": [("rotation1", X, 0), ("rotation2", Y, 1), ("rotation3", Z, 2),
                  ("translation1", X, 3), ("translation2", Y, 4), ("translation3", Z, 5)],
}
#: Joints on Simbody's Ellipsoid mobilizer: body-fixed X-Y-Z rotations (q0, q1, q2) and the origin on the ellipsoid
#: (a sin q1, -b sin q0 cos q1, c cos q0 cos q1) = (a, b, c) * (the rotated z axis) (RigidBodyNodeSpec_Ellipsoid.h)
ELLIPSOID_JOINTS = ("EllipsoidJoint", "ScapulothoracicJoint")
SUPPORTED_JOINTS = ("CustomJoint",) + tuple(JOINT_AXES) + ELLIPSOID_JOINTS
PATH_POINT_TAGS = ("PathPoint", "MovingPathPoint", "ConditionalPathPoint")
WRAP_TAGS = ("WrapSphere", "WrapCylinder", "WrapEllipsoid", "WrapTorus")
#: OpenSim 4.6's forces without a path that only act through a control (0 without a controller).
PATHLESS_ACTUATORS = ("CoordinateActuator", "ActivationCoordinateActuator", "PointActuator", "TorqueActuator",
                      "BodyActuator", "PointToPointActuator")
#: OpenSim 4.6's passive forces without a path: contact, bushings, springs, prescribed and expression forces.
#: The simulations apply CoordinateLimitForce and the types of :data:`osim_emb.io.force_elements.APPLIED_FORCE_TYPES`
#: (contact between spheres and half spaces, bushings, springs, prescribed forces); every command that leaves one
#: out says so (:data:`UNAPPLIED_PASSIVE_FORCES`: the types some command leaves out).
PATHLESS_PASSIVE_FORCES = ("CoordinateLimitForce", "CoordinateLinearStopForce", "ExponentialCoordinateLimitForce",
                           "HuntCrossleyForce", "ElasticFoundationForce", "SmoothSphereHalfSpaceForce",
                           "ExponentialContactForce", "MeyerFregly2016Force", "BushingForce",
                           "FunctionBasedBushingForce", "ExpressionBasedBushingForce", "PointToPointSpring",
                           "ExpressionBasedPointToPointForce", "SpringGeneralizedForce",
                           "ExpressionBasedCoordinateForce", "PrescribedForce", "ExternalForce")
UNAPPLIED_PASSIVE_FORCES = tuple(t for t in PATHLESS_PASSIVE_FORCES if t != "CoordinateLimitForce")
#: Forces kept as data without a path (any other type without a path is refused by name).
KNOWN_PATHLESS_FORCES = PATHLESS_ACTUATORS + PATHLESS_PASSIVE_FORCES
#: constraints that close loops, solved as closed chains (:mod:`osim_emb.core.point_constraints`)
LOOP_CONSTRAINTS = ("PointConstraint", "ConstantDistanceConstraint", "PointOnLineConstraint", "WeldConstraint")
#: Types OpenSim 4.6 reads under their new names in any file (``Object::renameType``), as members of a set.
LEGACY_TYPE_NAMES = {"MusclePoint": "PathPoint", "MuscleViaPoint": "ConditionalPathPoint",
                     "MovingMusclePoint": "MovingPathPoint", "MuscleWrap": "PathWrap",
                     "GeneralizedForce": "CoordinateActuator", "Force": "PointActuator", "Torque": "TorqueActuator"}
IGNORED_SETS = ("ContactGeometrySet", "ControllerSet", "ProbeSet", "ComponentSet")

log = logging.getLogger(__name__)


def ellipsoid_surface_functions(radii) -> tuple:
    """The Ellipsoid mobilizer's origin (a sin q1, -b sin q0 cos q1, c cos q0 cos q1) as three functions of (q0, q1)
    with exact derivatives: products of Fourier sines and cosines through a MultivariatePolynomial."""
    from osim_emb.core.functions import Composite, Fourier, Linear, MultivariatePolynomial, polynomial_exponents
    a, b, c = (float(r) for r in radii)
    sin0, cos0 = (Composite(Fourier(2 * np.pi, 0.0, [cc], [ss]), [Linear([1.0, 0.0], 0.0)])
                  for cc, ss in ((0.0, 1.0), (1.0, 0.0)))
    cos1 = Composite(Fourier(2 * np.pi, 0.0, [1.0], [0.0]), [Linear([0.0, 1.0], 0.0)])
    exponents = polynomial_exponents(2, 2).tolist()

    def product(scale):  # scale u_1 u_2
        coefficients = np.zeros(len(exponents))
        coefficients[exponents.index([1, 1])] = scale
        return MultivariatePolynomial(2, 2, coefficients)
    x = Composite(Fourier(2 * np.pi, 0.0, [0.0], [a]), [Linear([0.0, 1.0], 0.0)])
    return x, Composite(product(-b), [sin0, cos1]), Composite(product(c), [cos0, cos1])


def _contact_geometry_names(forces) -> set[str]:
    """The contact geometries of the contact forces the package applies (io.force_elements records)."""
    names: set[str] = set()
    for f in forces:
        law = f.law
        for surface in (getattr(law, "surfaces", ()) or ()) + tuple(
                x for x in (getattr(law, "sphere", None), getattr(law, "half_space", None)) if x is not None):
            names.add(surface.name)
    return names


class _Reader:
    def __init__(self, path: str, root: Any, strict: bool):
        self.path = path
        self.root = root
        self.strict = strict
        self.skipped: list[Skipped] = []
        self.notes: list[str] = []

    # -- errors ---------------------------------------------------------------
    def fail(self, element: Any, reason: str) -> OsimImportError:
        return OsimImportError(self.path, element, reason)

    def unsupported(self, element: Any, kind: str, reason: str) -> None:
        name = element.get("name", "") if element is not None else ""
        if self.strict:
            raise UnsupportedFeatureError(self.path, element, reason + " (load with strict=False to import the rest)")
        self.skipped.append(Skipped(kind, name, getattr(element, "sourceline", None), reason))

    def legacy_name(self, e: Any, name: str | None) -> str | None:
        """OpenSim's reading of names in files older than 3.5 (Component::updateFromXMLNode): whitespace is removed
        and a missing name becomes the lowercased element type; later versions keep the name as written."""
        if getattr(self, "version", 40000) >= 30500:
            return name
        if not name:
            new = str(e.tag).lower()
            self.notes.append(f"line {e.sourceline}: unnamed <{e.tag}> named {new!r}, as OpenSim reads "
                              f"version-{self.version} files")
            return new
        new = "".join(name.split())
        if new != name:
            self.notes.append(f"line {e.sourceline}: name {name!r} read as {new!r} (whitespace removed, as OpenSim "
                              f"reads version-{self.version} files)")
        return new

    def optional_name(self, e: Any, kind: str) -> str:
        """A name OpenSim fills in when it is empty (path points, markers, path wraps): refused only if illegal."""
        name = e.get("name") or ""
        if name:
            name = self.legacy_name(e, name)
            reason = check_component_name(name)
            if reason is not None:
                raise self.fail(e, f"{kind} {reason}")
        return name

    def name_of(self, e: Any, kind: str) -> str:
        """The element's name, refused (with the element named) when OpenSim would refuse it."""
        name = self.legacy_name(e, e.get("name"))
        reason = check_component_name(name)
        if reason is not None:
            raise self.fail(e, f"{kind} {reason}")
        return name

    # -- values -------------------------------------------------------------
    def default_of(self, e: Any) -> Any:
        return self.defaults.get(e.tag)

    def child(self, e: Any, tag: str, use_default: bool = True) -> Any:
        c = e.find(tag)
        if c is None and use_default:
            d = self.default_of(e)
            if d is not None:
                c = d.find(tag)
        return c

    def text(self, e: Any, tag: str, default: str | None = None, required: bool = False) -> str | None:
        c = self.child(e, tag)
        if c is None or c.text is None or not c.text.strip():
            if required:
                raise self.fail(e, f"missing <{tag}>")
            return default
        return c.text.strip()

    def floats(self, e: Any, tag: str, n: int | None = None, default: Any = None, required: bool = False) -> Any:
        t = self.text(e, tag, None, required)
        if t is None:
            return None if default is None else np.array(default, dtype=float)
        try:
            v = np.array([float(s) for s in t.split()])
        except ValueError:
            raise self.fail(self.child(e, tag), f"<{tag}> is not a list of numbers: {t!r}") from None
        if n is not None and v.size != n:
            raise self.fail(self.child(e, tag), f"<{tag}> needs {n} numbers, has {v.size}")
        if not np.all(np.isfinite(v)):
            raise self.fail(self.child(e, tag), f"<{tag}> has a non-finite value")
        return v

    def flt(self, e: Any, tag: str, default: float | None = None, required: bool = False) -> float | None:
        v = self.floats(e, tag, 1, None if default is None else [default], required)
        return None if v is None else float(v[0])

    def boolean(self, e: Any, tag: str, default: bool = False) -> bool:
        t = self.text(e, tag)
        if t is None:
            return default
        if t.lower() in ("true", "1"):
            return True
        if t.lower() in ("false", "0"):
            return False
        raise self.fail(self.child(e, tag), f"<{tag}> must be true or false, not {t!r}")

    def components(self, model: Any, tags: tuple[str, ...]) -> list[Any]:
        """The model's own <components> with these tags (4.x files written after ``Model::addComponent``)."""
        comps = model.find("components")
        return [c for c in (comps if comps is not None else []) if isinstance(c.tag, str) and c.tag in tags]

    def _set_and_components(self, model: Any, set_tag: str, suffix: str) -> list[Any]:
        """The members of a set, then the elements among the model's <components> whose tag ends with ``suffix``."""
        comps = model.find("components")
        extra = [c for c in (comps if comps is not None else []) if isinstance(c.tag, str) and c.tag.endswith(suffix)]
        return self.objects(model, set_tag) + extra

    def joint_elements(self, model: Any) -> list[Any]:
        """The JointSet's joints, then the joints among the model's <components>."""
        return self._set_and_components(model, "JointSet", "Joint")

    def constraint_elements(self, model: Any) -> list[Any]:
        """The ConstraintSet's constraints, then the constraints among the model's <components>."""
        return self._set_and_components(model, "ConstraintSet", "Constraint")

    @staticmethod
    def owner_path(owner: Any) -> str:
        """The component path of a joint or constraint: /jointset/NAME, /constraintset/NAME, or /NAME among the
        model's <components>."""
        parent = owner.getparent()
        if parent is not None and parent.tag == "components":
            return f"/{owner.get('name')}"
        return f"/{'constraintset' if owner.tag.endswith('Constraint') else 'jointset'}/{owner.get('name')}"

    def objects(self, e: Any, set_tag: str) -> list[Any]:
        s = e.find(set_tag)
        if s is None:
            return []
        o = s.find("objects")
        return [c for c in (o if o is not None else []) if isinstance(c.tag, str)]

    def function(self, container: Any, what: str, n_inputs: int = 1):
        fe = find_function(container)
        if fe is None:
            return None
        return parse_function(fe, self.fail, n_inputs)

    def lenient(self, element: Any, kind: str, read: Any) -> Any:
        """``read()``, or None with ``element`` listed as skipped when it raises UnsupportedFeatureError and the
        reader is not strict (e.g. a joint whose TransformAxis has an unsupported function)."""
        try:
            return read()
        except UnsupportedFeatureError as err:
            if self.strict:
                raise
            self.skipped.append(Skipped(kind, element.get("name", ""), element.sourceline,
                                        f"{err.element}: {err.reason}"))
            return None

    # -- document -------------------------------------------------------------
    def read(self) -> OsimDocument:
        root = self.root
        if root.tag != "OpenSimDocument":
            raise self.fail(root, "not an OpenSim document (the root element must be <OpenSimDocument>)")
        try:
            version = int(root.get("Version", "0"))
        except ValueError:
            raise self.fail(root, f"bad Version attribute {root.get('Version')!r}") from None
        if version < 10500:
            raise UnsupportedFeatureError(self.path, root, f"file version {version}: OpenSim 4.6 itself refuses files "
                                          "older than 10500 (XMLDocument::updateDocumentVersion)")
        if version < 10901:
            raise UnsupportedFeatureError(self.path, root, f"file version {version}: OpenSim 1.x files older than 10901 "
                                          "(CustomJoint's TransformAxisSet, 1.6's DynamicsEngine) are not read; 10901 "
                                          "and later are (OpenSim 4 converts older files: open and save it there)")
        if 30505 <= version < 30517:
            raise UnsupportedFeatureError(self.path, root, f"file version {version}: a development format of OpenSim "
                                          "4.0 between 30505 and 30516 (connectors, frame sets) is not read; 30500-30504"
                                          " and 30517+ are (open and save it in OpenSim 4)")
        model = root.find("Model")
        if model is None:
            raise self.fail(root, "no <Model> element")
        self.version = version
        self.v4 = version >= 30517  # 30517 is the 4.0 layout (XMLDocument.cpp: 40000 only marks the release)
        self.v30501 = 30501 <= version < 30505  # joints in a JointSet, frames named by connectors
        self._update_legacy_xml(model)
        if version < 20000:
            self.notes.append(f"file version {version} (OpenSim 1.x) read as OpenSim 4.6 updates it, then as 3.3")
        elif 30500 <= version < 30517:
            self.notes.append(f"file version {version} (a development format of OpenSim 4.0) read as OpenSim 4.6 "
                              "updates it")
        if 20000 <= version < 30000:  # OpenSim 2.x: the 3.3 layout (what differs is refused by element below)
            self.notes.append(f"file version {version} (OpenSim 2.x) read as OpenSim 3.3")
        self.defaults = {}
        d = model.find("defaults")
        if d is not None:
            for c in d:
                if isinstance(c.tag, str):
                    self.defaults[c.tag] = c
        gravity = self.floats(model, "gravity", 3, default=[0.0, -9.80665, 0.0])
        model_name = self.legacy_name(model, model.get("name")) or Path(self.path).stem
        reason = check_component_name(model_name)
        if reason is not None:
            raise self.fail(model, f"model {reason}")
        doc = OsimDocument(self.path, version, model_name, gravity,
                           credits=self.text(model, "credits", "") or "",
                           publications=self.text(model, "publications", "") or "",
                           assembly_accuracy=self.flt(model, "assembly_accuracy"),
                           defaults=self.defaults)
        if self.v4:
            self._read_v4(model, doc)
        elif self.v30501:
            self._read_v30501(model, doc)
        else:
            self._read_v3(model, doc)
        self._check_unique_bodies(doc)
        self._check_references(doc)
        doc.couplers = self._read_constraints(model)
        doc.point_constraints = self.point_constraints
        for c in doc.coordinates:
            if c.name in self.locked_by_skipped_coupler and not c.locked:
                c.locked = True
                self.skipped.append(Skipped("coordinate", c.name, c.line, f"held at its default {c.default:g}: its "
                                            f"coupler {self.locked_by_skipped_coupler[c.name]!r} was skipped"))
        doc.forces = self._read_forces(model, doc)
        hinted = getattr(self, "scholz_hinted", [])
        if hinted:
            message = (f"{self.path}: {len(hinted)} Scholz2015GeometryPath unit(s) with contact hints "
                       f"({', '.join(hinted[:5])}{', ...' if len(hinted) > 5 else ''}): the package goes round each "
                       "obstacle on its hint's side; OpenSim's solver, started from a hint, can end on another path "
                       "(docs/paths.md, 'Which side from a hint'); compare the lengths with OpenSim's before relying "
                       "on them")
            log.warning(message)
            self.notes.append(message)
        self._check_unique_names(doc)
        doc.markers = self._read_markers(model)
        in_contact = _contact_geometry_names(doc.forces)
        for tag in IGNORED_SETS:
            for o in self.objects(model, tag):
                if o in getattr(self, "scholz_geometries", ()):  # obstacles of Scholz2015GeometryPaths
                    continue
                if tag == "ContactGeometrySet" and o.get("name") in in_contact:  # a contact force's surface
                    continue
                if tag == "ControllerSet":
                    if self._enabled_controller(o):
                        doc.controllers.append((o.get("name") or o.tag, o.tag))
                    self.notes.append(f"ignored {o.tag} {o.get('name')!r} (line {o.sourceline}): the package's "
                                      "simulations take excitations and controls as arguments")
                    continue
                self.notes.append(f"ignored {o.tag} {o.get('name')!r} (line {o.sourceline}): not used by the dynamics")
        doc.skipped = self.skipped
        doc.notes = self.notes
        return doc

    # -- legacy documents ---------------------------------------------------------
    def _update_legacy_xml(self, model: Any) -> None:
        """Rewrite the parsed tree (never the file) as OpenSim 4.6 rewrites old documents before reading them.

        * ``Object::renameType`` (RegisterTypes_osimSimulation.cpp, osimCommon, osimActuators), any version: set
          members ``MusclePoint`` -> ``PathPoint``, ``MuscleViaPoint`` -> ``ConditionalPathPoint``,
          ``MovingMusclePoint`` -> ``MovingPathPoint``, ``MuscleWrap`` -> ``PathWrap``, ``GeneralizedForce`` ->
          ``CoordinateActuator``, ``Force`` -> ``PointActuator``, ``Torque`` -> ``TorqueActuator``; the function
          ``natCubicSpline`` -> ``SimmSpline``;
        * ``Muscle::updateFromXMLNode`` (version <= 20301): a muscle's ``MusclePointSet`` / ``MuscleWrapSet`` become
          ``PathPointSet`` / ``PathWrapSet`` inside a ``GeometryPath`` (created if the muscle has none), and its
          ``pennation_angle`` is ``pennation_angle_at_optimal``;
        * ``ConditionalPathPoint`` (<= 20001): ``<coordinates>`` -> ``<coordinate>``;
        * ``MovingPathPoint`` (< 30000): ``XAttachment`` / ``YAttachment`` / ``ZAttachment`` -> ``x_location`` ...;
        * ``TransformAxis`` (< 20000): ``<is_rotation>`` dropped (CustomJoint erases it; an axis is a rotation by its
          name ``rotation1..3``)."""
        version = self.version
        changed: dict[str, int] = {}

        def count(what: str) -> None:
            changed[what] = changed.get(what, 0) + 1

        for e in model.iter():
            if not isinstance(e.tag, str):
                continue
            parent = e.getparent()
            if e.tag == "natCubicSpline":
                e.tag = "SimmSpline"
                count("natCubicSpline -> SimmSpline")
            elif parent is not None and parent.tag == "objects" and e.tag in LEGACY_TYPE_NAMES:
                count(f"{e.tag} -> {LEGACY_TYPE_NAMES[e.tag]}")
                e.tag = LEGACY_TYPE_NAMES[e.tag]
        if version <= 20301:
            for f in self.objects(model, "ForceSet"):
                gp = f.find("GeometryPath")
                old = [c for c in f if isinstance(c.tag, str) and c.tag in ("MusclePointSet", "MuscleWrapSet")]
                if gp is not None:
                    for c in gp:
                        if isinstance(c.tag, str) and c.tag in ("MusclePointSet", "MuscleWrapSet"):
                            c.tag = c.tag.replace("Muscle", "Path")
                            count(f"muscle {c.tag.replace('Path', 'Muscle')} -> GeometryPath/{c.tag}")
                elif old:
                    gp = etree.SubElement(f, "GeometryPath")
                    for c in old:
                        c.tag = c.tag.replace("Muscle", "Path")
                        gp.append(c)  # moves it
                    count("muscle MusclePointSet/MuscleWrapSet -> GeometryPath")
                if (gp is not None and f.find("pennation_angle") is not None
                        and f.find("pennation_angle_at_optimal") is None):
                    f.find("pennation_angle").tag = "pennation_angle_at_optimal"
                    count("muscle <pennation_angle> -> <pennation_angle_at_optimal>")
        for e in model.iter("ConditionalPathPoint", "MovingPathPoint", "TransformAxis"):
            if e.tag == "ConditionalPathPoint" and version <= 20001:
                c = e.find("coordinates")
                if c is not None and e.find("coordinate") is None:
                    c.tag = "coordinate"
                    count("ConditionalPathPoint <coordinates> -> <coordinate>")
            elif e.tag == "MovingPathPoint" and version < 30000:
                for ax in "XYZ":
                    c = e.find(f"{ax}Attachment")
                    if c is not None and e.find(f"{ax.lower()}_location") is None:
                        c.tag = f"{ax.lower()}_location"
                        count("MovingPathPoint <XAttachment> -> <x_location>")
            elif e.tag == "TransformAxis" and version < 20000:
                for c in e.findall("is_rotation"):
                    e.remove(c)
                    count("TransformAxis <is_rotation> dropped")
        for what, n in changed.items():
            self.notes.append(f"{what} ({n}x), as OpenSim 4.6 updates version-{version} files")

    def _read_v30501(self, model: Any, doc: OsimDocument) -> None:
        """Versions 30501-30504 (OpenSim 4.0 development): bodies in the BodySet with an implicit ground, joints in
        a JointSet naming their bodies by ``Connector_PhysicalFrame_`` (``parent_body`` / ``child_body``) with the
        3.3 offsets ``location_in_parent`` ... ``orientation_in_child``.  OpenSim's Joint::updateFromXMLNode
        (< 30505) turns these into offset frames of the bodies named by the connectees' last path element, the
        numbers through a 6-significant-digit stream (XMLDocument::addPhysicalOffsetFrame30505_30517)."""
        self._read_ground_and_bodies(model, doc, "ground")
        for fr in self.objects(model, "FrameSet"):
            self.unsupported(fr, "frame", f"a {fr.tag} in a version-{self.version} <FrameSet> (frames other than "
                                          "bodies are not read in this development format)")
        names = {b.name for b in doc.bodies}
        for j in self.objects(model, "JointSet"):
            frames = {}
            cs = j.find("connectors")
            for c in (cs if cs is not None else []):
                if not isinstance(c.tag, str) or c.tag not in ("Connector_PhysicalFrame_", "Connector_Body_"):
                    continue
                role = {"parent_body": "parent", "parent_frame": "parent", "child_body": "child",
                        "child_frame": "child"}.get(c.get("name", ""))
                if role is None or role in frames:
                    continue
                target = (self.text(c, "connectee_name", "") or "").split("/")[-1]
                if target not in names:
                    raise self.fail(c, f"connectee {self.text(c, 'connectee_name', '')!r} names no body")
                frames[role] = target
            for role in ("parent", "child"):
                if role not in frames:
                    raise self.fail(j, f"no <Connector_PhysicalFrame_ name='{role}_body'> naming the {role} body")
            pj = OffsetSpec(frames["parent"], self._joint_frame_value(j, "location_in_parent"),
                            self._joint_frame_value(j, "orientation_in_parent"))
            cj = OffsetSpec(frames["child"], self._joint_frame_value(j, "location_in_child"),
                            self._joint_frame_value(j, "orientation_in_child"))
            coords = [self._coordinate(c, j.get("name")) for c in self.objects(j, "CoordinateSet")]
            spec_j = self.lenient(j, "joint", lambda: self._joint(j, pj, cj, coords))
            if spec_j is not None:
                self._infer_motion_types(spec_j)
                doc.joints.append(spec_j)

    # -- bodies and joints, 3.3 -------------------------------------------------
    def _read_v3(self, model: Any, doc: OsimDocument) -> None:
        bodies = self.objects(model, "BodySet")
        if not bodies:
            raise self.fail(model, "no bodies (<BodySet> is empty or missing)")
        for b in bodies:
            if b.tag != "Body":
                self.unsupported(b, "body", f"unsupported body type {b.tag}")
                continue
            spec = self._body_common(b)
            name = spec.name
            if name == "ground":
                doc.ground = name
            else:
                # OpenSim converts inertia_xx.. of files older than 30500 through a C++ stream with the
                # default 6 significant digits, and takes 1 for a missing moment: do the same.
                inertia = np.array([self.flt(b, t, d) for t, d in
                                    (("inertia_xx", 1.0), ("inertia_yy", 1.0), ("inertia_zz", 1.0),
                                     ("inertia_xy", 0.0), ("inertia_xz", 0.0), ("inertia_yz", 0.0))])
                if self.version < 30500:
                    rounded = np.array([float(f"{v:.6g}") for v in inertia])
                    if np.any(rounded != inertia):
                        self.notes.append(f"body {name!r}: inertia read with 6 significant digits, as OpenSim "
                                          f"reads version-{self.version} files ({inertia.tolist()} -> {rounded.tolist()})")
                    inertia = rounded
                spec.inertia = inertia
                self._check_inertia(b, spec)
            doc.bodies.append(spec)
            jw = b.find("Joint")
            joints = [c for c in (jw if jw is not None else []) if isinstance(c.tag, str)]
            if name == "ground" or not joints:
                if name != "ground":
                    raise self.fail(b, "body has no joint (every body but the ground needs one)")
                continue
            j = joints[0]
            parent = self.text(j, "parent_body", required=True)
            frame_values = [self._joint_frame_value(j, t) for t in
                            ("location_in_parent", "orientation_in_parent", "location", "orientation")]
            pj = OffsetSpec(parent, frame_values[0], frame_values[1])
            cj = OffsetSpec(name, frame_values[2], frame_values[3])
            coords = [self._coordinate(c, j.get("name")) for c in self.objects(j, "CoordinateSet")]
            spec_j = self.lenient(j, "joint", lambda: self._joint(j, pj, cj, coords))
            if spec_j is not None:
                self._infer_motion_types(spec_j)
                doc.joints.append(spec_j)

    def _joint_frame_value(self, j: Any, tag: str) -> np.ndarray:
        """A 3.3 joint's location/orientation (in parent and in child).  OpenSim turns files older than
        30505 into offset frames through a C++ stream with the default 6 significant digits
        (XMLDocument::addPhysicalOffsetFrame30505_30517): do the same, and say so."""
        v = self.floats(j, tag, 3, [0, 0, 0])
        if self.version < 30505:
            rounded = np.array([float(f"{x:.6g}") for x in v])
            if np.any(rounded != v):
                self.notes.append(f"joint {j.get('name')!r}: <{tag}> read with 6 significant digits, as OpenSim "
                                  f"reads version-{self.version} files ({v.tolist()} -> {rounded.tolist()})")
            v = rounded
        return v

    def _body_common(self, b: Any) -> BodySpec:
        name = self.name_of(b, "body")
        spec = BodySpec(name, line=b.sourceline)
        if name != "ground" and self.text(b, "mass") is None:
            raise self.fail(b, "missing <mass> (OpenSim refuses a body with an unspecified mass)")
        spec.mass = self.flt(b, "mass", 0.0)
        if spec.mass < 0:
            raise self.fail(b, f"negative mass {spec.mass}")
        spec.com = self.floats(b, "mass_center", 3, [0, 0, 0])
        ine = self.floats(b, "inertia", None, None)
        if ine is not None:
            if ine.size == 9:
                m = ine.reshape(3, 3)
                ine = np.array([m[0, 0], m[1, 1], m[2, 2], m[0, 1], m[0, 2], m[1, 2]])
            elif ine.size != 6:
                raise self.fail(b.find("inertia"), "<inertia> needs 6 numbers (xx yy zz xy xz yz)")
            spec.inertia = ine
        self._check_inertia(b, spec)
        for w in self.objects(b, "WrapObjectSet"):
            ws = self._wrap_object(w, name)
            if ws is not None:
                spec.wrap_objects.append(ws)
        return spec

    def _check_inertia(self, b: Any, spec: BodySpec) -> None:
        """Moments >= 0 and positive semi-definite, or refused (an indefinite one kept with a warning when not
        strict, as OpenSim uses it); the triangle inequality and |2 product| <= moment
        (Simbody's isValidInertiaMatrix) are only noted: OpenSim release builds use such inertias unchanged (e.g. the
        rod-like [0, 0, Izz] of leg6dof9musc), and so does the package."""
        i = np.asarray(spec.inertia, dtype=float)
        d, p = i[:3], i[3:]  # xx yy zz, xy xz yz
        where = b.find("inertia") if b.find("inertia") is not None else b
        if np.any(d < 0):
            raise self.fail(where, f"inertia of body {spec.name!r} has a negative moment {d.tolist()} "
                                   "(moments must be >= 0)")
        slop = max(d.sum(), 1.0) * 1e-14
        m = np.array([[d[0], p[0], p[1]], [p[0], d[1], p[2]], [p[1], p[2], d[2]]])
        if np.linalg.eigvalsh(m).min() < -slop:
            if self.strict:
                raise self.fail(where, f"inertia of body {spec.name!r} {i.tolist()} is not positive semi-definite "
                                       "(the mass matrix would be indefinite; load with strict=False to keep it, as "
                                       "OpenSim does)")
            message = (f"body {spec.name!r}: inertia {i.tolist()} is not positive semi-definite (smallest eigenvalue "
                       f"{np.linalg.eigvalsh(m).min():.3g} kg m^2); kept unchanged, as OpenSim uses it: kinematics and "
                       "paths are unaffected, the mass matrix may be indefinite")
            self.notes.append(message)
            log.warning("%s: %s", self.path, message)
        if d[0] + d[1] + slop < d[2] or d[0] + d[2] + slop < d[1] or d[1] + d[2] + slop < d[0]:
            self.notes.append(f"body {spec.name!r}: inertia moments {d.tolist()} violate the triangle inequality; "
                              "used unchanged, as OpenSim does")
        elif d[0] + slop < abs(2 * p[2]) or d[1] + slop < abs(2 * p[1]) or d[2] + slop < abs(2 * p[0]):
            self.notes.append(f"body {spec.name!r}: inertia products {p.tolist()} exceed half the moments; "
                              "used unchanged, as OpenSim does")

    def _coordinate(self, c: Any, joint: str) -> CoordinateSpec:
        name = self.name_of(c, "coordinate")
        rng = self.floats(c, "range", 2, [-np.inf, np.inf])
        spec = CoordinateSpec(name, joint, line=c.sourceline)
        spec.motion_type = None  # derived from the joint, as OpenSim 4 does (it ignores a 3.3 <motion_type>)
        spec.default = self.flt(c, "default_value", 0.0)
        spec.default_speed = self.flt(c, "default_speed_value", 0.0)
        if rng[0] > rng[1]:
            raise self.fail(c, f"range [{rng[0]}, {rng[1]}] is empty")
        spec.range = (float(rng[0]), float(rng[1]))
        spec.clamped = self.boolean(c, "clamped", False)
        spec.locked = self.boolean(c, "locked", False)
        spec.free_to_satisfy_constraints = self.boolean(c, "is_free_to_satisfy_constraints", False)
        pf = c.find("prescribed_function")
        has_pf = pf is not None and find_function(pf) is not None
        spec.prescribed = self.boolean(c, "prescribed", has_pf) and has_pf
        if spec.prescribed:
            self.unsupported(c, "coordinate", "a coordinate prescribed as a function of time")
            spec.locked = True
        return spec

    def _joint(self, j: Any, parent: OffsetSpec, child: OffsetSpec, coords: list[CoordinateSpec]) -> JointSpec | None:
        jt = j.tag
        if not j.get("name") and not self.v4:  # OpenSim 4 names an unnamed 3.3 joint after its type
            name = jt.lower()
            self.notes.append(f"unnamed {jt} (line {j.sourceline}) named {name!r}, as OpenSim names it")
        else:
            name = self.name_of(j, "joint")
        if self.boolean(j, "reverse", False):
            if self.version < 30514:  # OpenSim's 30514 update: the parent and child frames swapped
                parent, child = child, parent
                self.notes.append(f"joint {name!r} (line {j.sourceline}): <reverse>true</reverse>, its parent and "
                                  "child frames swapped as OpenSim 4 reads it")
            else:  # no such property since 30514: OpenSim ignores the element
                self.notes.append(f"joint {name!r} (line {j.sourceline}): <reverse> ignored, as OpenSim ignores it in "
                                  f"version-{self.version} files")
        spec = JointSpec(name, jt, parent, child, coords, [], line=j.sourceline)
        if jt == "CustomJoint":
            st = j.find("SpatialTransform")
            if st is None:
                raise self.fail(j, "CustomJoint without a <SpatialTransform>")
            known = {c.name for c in coords}
            for ta in st:
                if not isinstance(ta.tag, str) or ta.tag != "TransformAxis":
                    continue
                an = ta.get("name")
                cn = (self.text(ta, "coordinates", "") or "").split()
                for c in cn:
                    if c not in known:
                        raise self.fail(ta, f"TransformAxis uses coordinate {c!r}, which joint {name!r} does not define")
                axis = self.floats(ta, "axis", 3, required=True)
                if np.linalg.norm(axis) < 1e-12:
                    raise self.fail(ta, "axis has zero length")
                fe = find_function(ta)
                if (self.v4 and fe is not None and fe.getparent() is ta
                        and fe.get("name") not in (None, "", "function")):
                    # OpenSim 4 takes a property from the element whose name attribute is the property's name
                    self.notes.append(f"joint {name!r} {an}: <{fe.tag} name={fe.get('name')!r}> is not the "
                                      "'function' property and is ignored, as OpenSim ignores it")
                    f = None
                else:
                    f = self.function(ta, "function", max(1, len(cn)))
                other = [c.tag for c in ta if isinstance(c.tag, str)
                         and c.tag not in ("coordinates", "axis", "function") and c is not fe]
                if other:
                    raise self.fail(ta, f"unknown element(s) {other} in a TransformAxis (expected <coordinates>, "
                                        "<axis> and a function)")
                if f is None and fe is None and ta.find("function") is not None and cn:
                    # an empty <function/> clears the property (ObjectProperty::readFromXMLElement); then
                    # SpatialTransform::connectToJoint gives an axis with one coordinate LinearFunction(1, 0) and
                    # refuses one with several (checked with OpenSim 4.6, versions 10902 and 30000)
                    if len(cn) > 1:
                        raise self.fail(ta, f"empty <function> for several coordinates {cn} (OpenSim refuses it: "
                                            "a multi-coordinate axis needs a function)")
                    from osim_emb.core.functions import Linear
                    f = Linear([1.0], 0.0)
                    self.notes.append(f"joint {name!r} {an}: empty <function> for coordinate {cn[0]!r} read as "
                                      "LinearFunction(1, 0), as OpenSim's SpatialTransform::connectToJoint does")
                if f is None and cn:
                    # no function element at all: OpenSim's TransformAxis function property keeps its default
                    # Constant(0) (found by the fuzz tests)
                    from osim_emb.core.functions import Constant
                    f = Constant(0.0, len(cn))
                    self.notes.append(f"joint {name!r} {an}: no function for coordinate(s) {cn}; the axis stays at 0, "
                                      "as OpenSim's default Constant(0) does")
                if f is not None and f.n_inputs != max(1, len(cn)) and not f.is_constant:
                    raise self.fail(ta, f"its function takes {f.n_inputs} inputs but {len(cn)} coordinates are listed")
                spec.axes.append(TransformAxisSpec(an, cn, axis / np.linalg.norm(axis), f))
            order = {f"rotation{k}": k for k in (1, 2, 3)} | {f"translation{k}": 3 + k for k in (1, 2, 3)}
            bad = [a.name for a in spec.axes if a.name not in order]
            if bad:
                raise self.fail(st, f"unknown TransformAxis names {bad}")
            names = [a.name for a in spec.axes]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise self.fail(st, f"TransformAxis {dup} given more than once")
            missing = [n for n in order if n not in names]
            if missing:
                raise self.fail(st, f"a CustomJoint's SpatialTransform needs all six TransformAxis elements; missing "
                                    f"{missing} (OpenSim would fill them with default axes)")
            spec.axes.sort(key=lambda a: order[a.name])
        elif jt in JOINT_AXES:
            need = max([k for _, _, k in JOINT_AXES[jt]], default=-1) + 1
            if len(coords) != need:
                raise self.fail(j, f"{jt} needs {need} coordinates, has {len(coords)}")
            for an, axis, k in JOINT_AXES[jt]:
                spec.axes.append(TransformAxisSpec(an, [coords[k].name], axis.copy(), None))
        elif jt in ELLIPSOID_JOINTS:
            self._ellipsoid_joint(j, spec)
        else:
            self.unsupported(j, "joint", f"unsupported joint type {jt}; supported: {', '.join(SUPPORTED_JOINTS)}")
            return None
        return spec

    def _ellipsoid_joint(self, j: Any, spec: JointSpec) -> None:
        """EllipsoidJoint (3 coordinates) and ScapulothoracicJoint (4) in the package's axes, as OpenSim 4.6 builds
        them (EllipsoidJoint.cpp, ScapulothoracicJoint.cpp): an Ellipsoid mobilizer; for the scapulothoracic joint
        between frames turned pi/2 about z (the thoracic radii swapped x <-> y), followed by the winging pin about
        an axis in the ellipsoid's tangent plane."""
        jt, coords = j.tag, spec.coordinates
        need = 3 if jt == "EllipsoidJoint" else 4
        if len(coords) != need:
            raise self.fail(j, f"{jt} needs {need} coordinates, has {len(coords)}")
        prop = "radii_x_y_z" if jt == "EllipsoidJoint" else "thoracic_ellipsoid_radii_x_y_z"
        radii = self.floats(j, prop, 3, required=True)
        if not np.all(np.isfinite(radii)) or np.any(radii <= 0):
            raise self.fail(j, f"<{prop}> must be three positive lengths (m), got {radii.tolist()}")
        spec.properties[prop] = radii.copy()
        if jt == "ScapulothoracicJoint":
            origin = self.floats(j, "scapula_winging_axis_origin", 2, [0.0, 0.0])
            direction = self.flt(j, "scapula_winging_axis_direction", 0.0)
            spec.properties.update(scapula_winging_axis_origin=origin.copy(), scapula_winging_axis_direction=direction)
            radii = radii[[1, 0, 2]]
            turn = np.eye(4)
            turn[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]  # Rz(pi/2)
            spec.pre = turn
            to_axis = turn.T.copy()  # back through the intermediate frame's Rz(pi/2), then to the winging axis
            to_axis[:3, 3] = turn.T[:3, :3] @ [origin[0], origin[1], 0.0]
            axis = np.array([-np.sin(direction), np.cos(direction), 0.0])
            spec.tail = [(to_axis, TransformAxisSpec("rotation_winging", [coords[3].name], axis, None))]
            spec.post = np.eye(4)
            spec.post[:3, 3] = [-origin[0], -origin[1], 0.0]
        names = [c.name for c in coords[:3]]
        for k, axis in enumerate((X, Y, Z)):
            spec.axes.append(TransformAxisSpec(f"rotation{k + 1}", [names[k]], axis.copy(), None))
        for k, (f, axis) in enumerate(zip(ellipsoid_surface_functions(radii), (X, Y, Z))):
            spec.axes.append(TransformAxisSpec(f"translation{k + 1}", names[:2], axis.copy(), f))

    @staticmethod
    def _infer_motion_types(spec: JointSpec) -> None:
        """OpenSim 4 derives a coordinate's motion type from its joint (CustomJoint::constructCoordinates): an axis the coordinate
        drives through a linear function of slope +-1 makes it rotational (rotation axes) or translational
        (translation axes), the last such axis winning; otherwise coupled."""
        from osim_emb.core.functions import Linear
        for c in spec.coordinates:
            if c.motion_type:
                continue
            mt = None
            for a in spec.axes:
                if c.name not in a.coordinates:
                    continue
                f = a.function
                pure = f is None or (isinstance(f, Linear) and f.n_inputs == 1 and abs(f.coefficients[0]) == 1.0)
                if pure:
                    mt = "rotational" if a.is_rotation else "translational"
                elif mt is None:
                    mt = "coupled"
            c.motion_type = mt or "rotational"

    def _read_ground_and_bodies(self, model: Any, doc: OsimDocument, ground_name: str) -> None:
        """The <Ground> (with its wrap objects) and the BodySet's bodies (4.x and 4.0-development layouts)."""
        g = model.find("Ground")
        doc.ground = ground_name
        ground = BodySpec(doc.ground, line=getattr(g, "sourceline", None))
        if g is not None:
            for w in self.objects(g, "WrapObjectSet"):
                ws = self._wrap_object(w, doc.ground)
                if ws is not None:
                    ground.wrap_objects.append(ws)
        doc.bodies.append(ground)
        for b in self.objects(model, "BodySet"):
            if b.tag != "Body":
                self.unsupported(b, "body", f"unsupported body type {b.tag}")
                continue
            doc.bodies.append(self._body_common(b))
        self.component_bodies = set()
        for b in self.components(model, ("Body",)):  # Moco's addComponent(body): path /NAME
            doc.bodies.append(self._body_common(b))
            self.component_bodies.add(b.get("name"))

    # -- bodies and joints, 4.x -------------------------------------------------
    def _read_v4(self, model: Any, doc: OsimDocument) -> None:
        g = model.find("Ground")
        self._read_ground_and_bodies(model, doc, g.get("name", "ground") if g is not None else "ground")
        self._check_unique_bodies(doc)
        # frames: bodies, ground, model-level offset frames
        self.frames: dict[str, OffsetSpec] = {f"/{doc.ground}": OffsetSpec(doc.ground, name=doc.ground)}
        self.stations: dict[str, Any] = {}  # component path -> <Station> (points of StationDefinedFrames)
        for b in doc.bodies[1:]:
            where = f"/{b.name}" if b.name in self.component_bodies else f"/bodyset/{b.name}"
            self.frames[where] = OffsetSpec(b.name, name=b.name)
        pending = [(f"/{c.get('name')}", c, None) for c in self.components(model, ("PhysicalOffsetFrame",
                                                                                   "StationDefinedFrame"))]
        for b in self.objects(model, "BodySet") + self.components(model, ("Body",)):
            where = f"/{b.get('name')}" if b.get("name") in self.component_bodies else f"/bodyset/{b.get('name')}"
            for c in self.components(b, ("PhysicalOffsetFrame", "StationDefinedFrame")):
                pending.append((f"{where}/{c.get('name')}", c, None))
            for c in self.components(b, ("Station",)):
                self.stations[f"{where}/{c.get('name')}"] = c
        for c in self.components(model, ("Station",)):
            self.stations[f"/{c.get('name')}"] = c
        for owner in self.joint_elements(model) + self.constraint_elements(model):
            fr = owner.find("frames")
            for c in (fr if fr is not None else []):
                if isinstance(c.tag, str) and c.tag == "PhysicalOffsetFrame":
                    pending.append((f"{self.owner_path(owner)}/{c.get('name')}", c, owner))
        self._resolve_offset_frames(pending)
        for j in self.joint_elements(model):
            coords = [self._coordinate(c, j.get("name")) for c in
                      [c for c in (j.find("coordinates") if j.find("coordinates") is not None else [])
                       if isinstance(c.tag, str)]]
            pf = self.resolve_frame(self.text(j, "socket_parent_frame", required=True), j)
            cf = self.resolve_frame(self.text(j, "socket_child_frame", required=True), j)
            spec = self.lenient(j, "joint", lambda: self._joint(j, pf, cf, coords))
            if spec is not None:
                self._infer_motion_types(spec)
                doc.joints.append(spec)

    def _resolve_offset_frames(self, pending: list) -> None:
        from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
        progress = True
        while pending and progress:
            progress = False
            rest = []
            for path, e, owner in pending:
                if e.tag == "StationDefinedFrame":
                    try:
                        self.frames[path] = self._station_defined_frame(path, e)
                        progress = True
                    except _NotYet:
                        rest.append((path, e, owner))
                    continue
                sp = self.text(e, "socket_parent", required=True)
                try:
                    parent = self.resolve_frame(sp, owner, e, path)
                except OsimImportError:
                    rest.append((path, e, owner))
                    continue
                trans = self.floats(e, "translation", 3, [0, 0, 0])
                orient = self.floats(e, "orientation", 3, [0, 0, 0])
                if not np.any(parent.translation) and not np.any(parent.orientation):
                    # directly on a body: keep the file's numbers exactly
                    spec = OffsetSpec(parent.body, trans, orient, name=e.get("name"))
                else:  # an offset of an offset: compose, store as translation + X-Y-Z angles
                    local = np.eye(4)
                    local[:3, :3] = euler_xyz_body_fixed(orient)
                    local[:3, 3] = trans
                    t = parent.transform() @ local
                    spec = OffsetSpec(parent.body, t[:3, 3], body_fixed_xyz_angles(t[:3, :3]), name=e.get("name"))
                self.frames[path] = spec
                progress = True
            pending = rest
        if pending:
            path, e, _ = pending[0]
            if e.tag == "StationDefinedFrame":
                self._station_defined_frame(path, e, final=True)
            raise self.fail(e, f"socket_parent {self.text(e, 'socket_parent')!r} names no frame")

    def _station_defined_frame(self, path: str, e: Any, final: bool = False) -> OffsetSpec:
        """OpenSim 4.5's StationDefinedFrame as the constant offset frame it is on its stations' body: origin at
        ``origin_point``, ``ab_axis`` along b - a, ``ab_x_ac_axis`` along (b - a) x (c - a), the third axis along
        (b - a) x ((b - a) x (c - a)) with the sign of the first two axes' cross product
        (``StationDefinedFrame::calcTransformInBaseFrame``).  Raises _NotYet while a station's frame is unknown."""
        points, body = {}, None
        for socket in ("point_a", "point_b", "point_c", "origin_point"):
            ref = self.text(e, f"socket_{socket}", required=True).strip()
            station = self._station(path, ref)
            if station is None:
                raise self.fail(e, f"socket_{socket} {ref!r} names no Station")
            try:
                frame = self.resolve_frame(self.text(station, "socket_parent_frame", required=True), None, station)
            except OsimImportError:
                if final:
                    raise
                raise _NotYet() from None
            if body is not None and frame.body != body:
                raise self.fail(e, f"its stations are on different bodies ({body!r}, {frame.body!r}); OpenSim "
                                   "requires one base frame")
            body = frame.body
            points[socket] = (frame.transform() @ np.append(self.floats(station, "location", 3, [0, 0, 0]), 1.0))[:3]
        a, b, c = points["point_a"], points["point_b"], points["point_c"]
        ab, ac = b - a, c - a
        normal = np.cross(ab, ac)
        if not (np.linalg.norm(ab) > 0 and np.linalg.norm(ac) > 0 and np.linalg.norm(normal) > 0):
            raise self.fail(e, "its points a, b and c do not form a triangle")
        first = _axis_direction(self.text(e, "ab_axis", "+x"), self, e, "ab_axis")
        second = _axis_direction(self.text(e, "ab_x_ac_axis", "+y"), self, e, "ab_x_ac_axis")
        if second[0] == first[0]:
            raise self.fail(e, "<ab_axis> and <ab_x_ac_axis> name the same axis")
        third_axis = 3 - first[0] - second[0]
        cyclic = (second[0] - first[0]) % 3 == 1
        third = (third_axis, first[1] * second[1] * (1 if cyclic else -1))
        u = ab / np.linalg.norm(ab)
        n = normal / np.linalg.norm(normal)
        w = np.cross(u, n)
        w /= np.linalg.norm(w)
        rotation = np.zeros((3, 3))
        for (axis, sign), vector in ((first, u), (second, n), (third, w)):
            rotation[:, axis] = sign * vector
        return OffsetSpec(body, points["origin_point"], body_fixed_xyz_angles(rotation), name=e.get("name"))

    def _station(self, frame_path: str, ref: str) -> Any:
        """The <Station> a StationDefinedFrame's socket names (absolute, or relative to the frame)."""
        if ref.startswith("/"):
            return self.stations.get(ref)
        return self.stations.get(_normalized_path(f"{frame_path}/{ref}"))

    def resolve_frame(self, ref: str, owner: Any = None, element: Any = None, here: str | None = None) -> OffsetSpec:
        """A frame path (absolute, or relative to ``here``, the path of the component holding the socket, or to the
        owning joint) -> its body and offset."""
        ref = ref.strip()
        candidates = []
        if ref.startswith("/"):
            candidates.append(ref)
        else:
            if here is not None:
                candidates.append(_normalized_path(f"{here}/{ref}"))
            parts = [p for p in ref.split("/") if p and p != "."]
            if owner is not None and owner.get("name"):
                base = self.owner_path(owner)
                # '..' from a frame inside a joint goes to the joint
                rel = [p for p in parts if p != ".."]
                candidates.append(f"{base}/{'/'.join(rel)}")
            candidates.append("/" + "/".join(p for p in parts if p != ".."))
            candidates.append("/bodyset/" + parts[-1] if parts else ref)
        for c in candidates:
            if c in self.frames:
                return self.frames[c]
        raise self.fail(element if element is not None else owner, f"frame {ref!r} does not exist")

    # -- wrap objects -----------------------------------------------------------
    def _wrap_object(self, w: Any, body: str) -> WrapObjectSpec | None:
        if w.tag not in WRAP_TAGS:
            self.unsupported(w, "wrap object", f"unsupported wrap object type {w.tag}; supported: {', '.join(WRAP_TAGS)}")
            return None
        spec = WrapObjectSpec(w.tag, self.name_of(w, "wrap object"), body,
                              self.floats(w, "xyz_body_rotation", 3, [0, 0, 0]),
                              self.floats(w, "translation", 3, [0, 0, 0]),
                              (self.text(w, "quadrant", "all") or "all").strip(),
                              self.boolean(w, "active", True), line=w.sourceline)
        if w.tag == "WrapSphere":
            spec.parameters = {"radius": self.flt(w, "radius", 0.05)}
        elif w.tag == "WrapCylinder":
            spec.parameters = {"radius": self.flt(w, "radius", 0.05), "length": self.flt(w, "length", 0.1)}
        elif w.tag == "WrapEllipsoid":
            spec.parameters = {"dimensions": tuple(self.floats(w, "dimensions", 3, [0.05, 0.05, 0.05]))}
        elif w.tag == "WrapTorus":
            spec.parameters = {"inner_radius": self.flt(w, "inner_radius", 0.01),
                               "outer_radius": self.flt(w, "outer_radius", 0.05)}
        for k, v in spec.parameters.items():
            if np.any(np.asarray(v) <= 0):
                raise self.fail(w, f"{k} must be positive, got {v}")
        return spec

    # -- constraints ------------------------------------------------------------
    def _read_constraints(self, model: Any) -> list[CouplerSpec]:
        out = []
        self.locked_by_skipped_coupler: dict[str, str] = {}
        self.point_constraints: list[PointConstraintSpec] = []
        for c in self.constraint_elements(model):
            if c.tag != "CoordinateCouplerConstraint":
                if not self._enabled(c):
                    self.notes.append(f"ignored disabled {c.tag} {c.get('name')!r} (line {c.sourceline})")
                    continue
                if c.tag in LOOP_CONSTRAINTS:
                    self.point_constraints.append(self._point_constraint(c))
                    continue
                self.unsupported(c, "constraint", f"unsupported constraint type {c.tag}; supported: "
                                                  f"CoordinateCouplerConstraint, {', '.join(LOOP_CONSTRAINTS)}")
                continue
            if not self._enabled(c):
                self.notes.append(f"ignored disabled coupler {c.get('name')!r} (line {c.sourceline})")
                continue
            dep = self.text(c, "dependent_coordinate_name", required=True)
            ind = (self.text(c, "independent_coordinate_names", required=True) or "").split()
            holder = c.find("coupled_coordinates_function")
            if holder is None:
                raise self.fail(c, "missing <coupled_coordinates_function>")
            f = self.lenient(c, "constraint", lambda: self.function(holder, "coupled_coordinates_function", len(ind)))
            if f is None and not self.strict and find_function(holder) is not None:
                self.locked_by_skipped_coupler[dep] = c.get("name")
                continue
            if f is None:
                raise self.fail(holder, "no function inside <coupled_coordinates_function>")
            if f.n_inputs != len(ind) and not f.is_constant:
                raise self.fail(holder, f"the function takes {f.n_inputs} inputs, {len(ind)} independent coordinates named")
            scale = self.flt(c, "scale_factor", 1.0)
            out.append(CouplerSpec(self.name_of(c, "constraint"), dep, ind, f, scale, True, c.sourceline))
        return out

    def _point_constraint(self, c: Any) -> PointConstraintSpec:
        """A loop-closing constraint's two bodies, points, and the line direction or weld axes (4.x: frames in
        sockets; older: body names and, for a weld, X-Y-Z body-fixed angles), as :class:`PointConstraintSpec`."""
        from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
        name = self.name_of(c, "constraint")
        tag = c.tag
        if tag == "PointOnLineConstraint":
            ends = (("line_body", "point_on_line"), ("follower_body", "point_on_follower"))
        elif tag == "WeldConstraint":
            ends = (("frame1", "location_body_1"), ("frame2", "location_body_2")) if self.v4 else \
                (("body_1", "location_body_1"), ("body_2", "location_body_2"))
        else:
            ends = (("body_1", "location_body_1"), ("body_2", "location_body_2"))
        bodies, points, rotations = [], [], []
        for k, (socket, point) in enumerate(ends, start=1):
            location = np.zeros(3) if self.v4 and tag == "WeldConstraint" else self.floats(c, point, 3, [0.0, 0.0, 0.0])
            if tag == "WeldConstraint" and not self.v4:
                local = euler_xyz_body_fixed(self.floats(c, f"orientation_body_{k}", 3, [0.0, 0.0, 0.0]))
            else:
                local = np.eye(3)
            if self.v4:
                frame = self.resolve_frame(self.text(c, f"socket_{socket}", required=True), c, c)
                x = frame.transform()
                bodies.append(frame.body)
                points.append((x @ np.append(location, 1.0))[:3])
                rotations.append(x[:3, :3] @ local)
            else:
                bodies.append(self.text(c, socket if tag == "PointOnLineConstraint" else f"body_{k}", required=True))
                points.append(location)
                rotations.append(local)
        spec = PointConstraintSpec(name, bodies[0], points[0], bodies[1], points[1], c.sourceline, None, tag)
        if tag == "ConstantDistanceConstraint":
            spec.distance = self.flt(c, "constant_distance", required=True)
            if not spec.distance > 0:
                raise self.fail(c, f"<constant_distance> must be positive (m), got {spec.distance}")
        elif tag == "PointOnLineConstraint":
            d = self.floats(c, "line_direction_vec", 3, [1.0, 0.0, 0.0])
            if not np.linalg.norm(d) > 1e-12 or not np.all(np.isfinite(d)):
                raise self.fail(c, f"<line_direction_vec> must be a non-zero direction, got {d.tolist()}")
            spec.direction = rotations[0] @ (d / np.linalg.norm(d))
        elif tag == "WeldConstraint":
            spec.rotation1, spec.rotation2 = rotations
        return spec

    def _enabled_controller(self, c: Any) -> bool:
        """Controller::enabled (4.x; default true), isDisabled (older files)."""
        if c.find("enabled") is not None:
            return self.boolean(c, "enabled", True)
        return not self.boolean(c, "isDisabled", False)

    def _enabled(self, c: Any) -> bool:
        if c.find("isEnforced") is not None:
            return self.boolean(c, "isEnforced", True)
        return not self.boolean(c, "isDisabled", False)

    # -- forces -----------------------------------------------------------------

    def _model_components(self, model: Any) -> list[Any]:
        """The forces among the model's own <components> (4.x files may list muscles and contact forces
        there); bodies, joints and frames other than offset frames there are refused, the rest noted."""
        comps = model.find("components")
        out = []
        for c in (comps if comps is not None else []):
            if not isinstance(c.tag, str) or c.tag == "PhysicalOffsetFrame":
                continue
            if (c.find("GeometryPath") is not None or c.tag in KNOWN_PATHLESS_FORCES
                    or c.tag.endswith(("Force", "Muscle", "Actuator", "Ligament", "Spring", "Damper"))):
                out.append(c)
            elif _structural(c.tag):
                continue  # read with the model's structure (_read_v4)
            else:
                self.notes.append(f"ignored {c.tag} {c.get('name')!r} (line {c.sourceline}) in <components>:"
                                  " not used by the dynamics")
        return out

    def _read_forces(self, model: Any, doc: OsimDocument) -> list[ForceSpec]:
        out = []
        for f in self.objects(model, "ForceSet") + (self._model_components(model) if self.v4 else []):
            self.name_of(f, "force")
            gp = f.find("GeometryPath")
            fbp = f.find("FunctionBasedPath")
            if fbp is not None:
                from osim_emb.io.function_based_path_xml import read_function_based_path
                function_path = self.lenient(f, "force", lambda: read_function_based_path(fbp, self.fail))
                if function_path is None:
                    continue
                out.append(ForceSpec(f.get("name"), f.tag, f, None, None, f.sourceline,
                                     function_path=function_path))
            elif f.find("Scholz2015GeometryPath") is not None:  # smooth obstacle wrapping (io.scholz_xml)
                from osim_emb.io.scholz_xml import read_scholz_path
                sgp = f.find("Scholz2015GeometryPath")
                scholz = self.lenient(f, "force", lambda: read_scholz_path(sgp, f, model, self))
                if scholz is not None:
                    out.append(ForceSpec(f.get("name"), f.tag, f, None, None, f.sourceline, scholz_path=scholz))
            elif gp is not None:
                path = self.lenient(f, "force", lambda: self._path(gp, f, doc))
                if path is None:
                    continue
                points, wraps = path
                out.append(ForceSpec(f.get("name"), f.tag, f, points, wraps, f.sourceline))
            elif f.tag in KNOWN_PATHLESS_FORCES:
                out.append(ForceSpec(f.get("name"), f.tag, f, None, None, f.sourceline,
                                     law=self._force_law(f, model, doc)))
            else:
                self.unsupported(f, "force", f"unsupported force type {f.tag}")
        return out

    def _force_law(self, f: Any, model: Any, doc: OsimDocument) -> Any:
        """The force's record (:func:`osim_emb.io.force_elements.read_force_law`); a malformed one is kept as
        unapplied with the reason (the kinematics do not need it; the dynamics say they leave it out)."""
        from osim_emb.io.force_elements import UnappliedForce, read_force_law
        try:
            return read_force_law(self, f, model, doc.ground)
        except OsimImportError as exc:
            return UnappliedForce(f.get("name") or f.tag, f.tag, str(exc))

    def _body_of(self, e: Any, doc: OsimDocument) -> tuple[str, np.ndarray]:
        """Body name and the 4x4 frame->body transform of a path point or marker."""
        if self.v4:
            ref = self.text(e, "socket_parent_frame", required=True)
            fr = self.resolve_frame(ref, None, e)
            return fr.body, fr.transform()
        socket = self.text(e, "socket_parent_frame")
        if self.text(e, "body") is None and socket is not None:
            # a 4.x element in an older file: OpenSim's updateFromXMLNode converts <body> only where there is one,
            # so the socket is read as written, in the converted model (bodies under /bodyset, ground at /ground)
            ref = socket.strip()
            if ref == "/ground":
                return doc.ground, np.eye(4)
            parts = ref.split("/")
            if len(parts) == 3 and parts[0] == "" and parts[1] == "bodyset" and parts[2] and parts[2] != doc.ground:
                return parts[2], np.eye(4)
            raise UnsupportedFeatureError(self.path, e, f"a 4.x <socket_parent_frame> {ref!r} in a version-"
                                          f"{self.version} file: only '/ground' and '/bodyset/NAME' are read there")
        body = self.text(e, "body", required=True)
        return body, np.eye(4)

    def _coordinate_ref(self, e: Any, tag3: str, tag4: str) -> str:
        if self.v4:
            ref = self.text(e, tag4, required=True)
            return ref.strip().split("/")[-1]
        return self.text(e, tag3, required=True)

    def _path(self, gp: Any, owner: Any, doc: OsimDocument) -> tuple[list[PathPointSpec], list[PathWrapSpec]]:
        points = []
        for p in self.objects(gp, "PathPointSet"):
            if p.tag not in PATH_POINT_TAGS:
                self.unsupported(p, "path point", f"unsupported path point type {p.tag} in {owner.get('name')!r}")
                continue
            body, frame = self._body_of(p, doc)
            loc = self.floats(p, "location", 3, [0, 0, 0])
            loc = (frame @ np.append(loc, 1.0))[:3]
            spec = PathPointSpec(self.optional_name(p, "path point"), "fixed", body, loc, line=p.sourceline)
            if p.tag == "MovingPathPoint":
                fns, crd = [], []
                for ax in "xyz":
                    holder = p.find(f"{ax}_location")
                    if holder is None:
                        raise self.fail(p, f"MovingPathPoint without <{ax}_location>")
                    f = self.function(holder, f"{ax}_location")
                    if f is None:
                        raise self.fail(holder, "no function inside")
                    fns.append(f)
                    crd.append(self._coordinate_ref(p, f"{ax}_coordinate", f"socket_{ax}_coordinate"))
                spec.kind = "moving"
                spec.offset = frame
                spec.functions = tuple(fns)
                spec.function_coordinates = tuple(crd)
                spec.location = np.zeros(3)
            elif p.tag == "ConditionalPathPoint":
                spec.kind = "conditional"
                spec.coordinate = self._coordinate_ref(p, "coordinate", "socket_coordinate")
                r = self.floats(p, "range", 2, required=True)
                if r[0] > r[1]:
                    raise self.fail(p, f"range [{r[0]}, {r[1]}] is empty: the point would never be active")
                spec.range = (float(r[0]), float(r[1]))
            points.append(spec)
        if len(points) < 2:
            raise self.fail(gp, f"path of {owner.get('name')!r} needs at least two points, has {len(points)}")
        wraps = []
        for w in self.objects(gp, "PathWrapSet"):
            if w.tag != "PathWrap":
                self.unsupported(w, "path wrap", f"unsupported {w.tag}")
                continue
            r = self.floats(w, "range", 2, [-1, -1])
            wraps.append(PathWrapSpec(self.text(w, "wrap_object", required=True),
                                      (self.text(w, "method", "hybrid") or "hybrid").strip(),
                                      (int(r[0]), int(r[1])), self.optional_name(w, "path wrap")))
        return points, wraps

    def _read_markers(self, model: Any) -> list[MarkerSpec]:
        out = []
        for m in self.objects(model, "MarkerSet"):
            self.optional_name(m, "marker")
            try:
                if self.v4:
                    fr = self.resolve_frame(self.text(m, "socket_parent_frame", required=True), None, m)
                    body, t = fr.body, fr.transform()
                else:
                    body, t = self.text(m, "body", required=True), np.eye(4)
            except OsimImportError as err:
                if self.strict:  # OpenSim refuses the file ("Failed to connect Socket 'parent_frame'")
                    raise OsimImportError(err.path, err.element, err.reason + " (load with strict=False / --lenient "
                                          "to leave the marker out)", err.line) from None
                self.notes.append(f"ignored marker {m.get('name')!r}: {err.reason}")
                continue
            loc = (t @ np.append(self.floats(m, "location", 3, [0, 0, 0]), 1.0))[:3]
            out.append(MarkerSpec(m.get("name"), body, loc, self.boolean(m, "fixed", False)))
        return out

    # -- consistency ------------------------------------------------------------
    def _check_unique_bodies(self, doc: OsimDocument) -> None:
        seen: dict[str, int | None] = {}
        for b in doc.bodies:
            if b.name in seen:
                raise OsimImportError(self.path, f"<Body name='{b.name}'>",
                                      f"duplicate Body name {b.name!r} (also line {seen[b.name]})", b.line)
            seen[b.name] = b.line

    def _check_unique_names(self, doc: OsimDocument) -> None:
        """Names OpenSim looks up by name must be unique: bodies, joints, forces, constraints, wrap objects.

        OpenSim resolves a PathWrap's wrap object by the first frame that has one of that name, so two wrap objects
        of the same name on different bodies make the path depend on the order of the frames: refused here."""
        def unique(kind: str, items) -> None:
            seen: dict[str, Any] = {}
            for name, where, line in items:
                if name in seen:
                    raise OsimImportError(self.path, f"<{kind} name='{name}'>",
                                          f"duplicate {kind} name {name!r} (also {seen[name]})", line)
                seen[name] = where
        unique("Body", [(b.name, f"line {b.line}", b.line) for b in doc.bodies])
        unique("Joint", [(j.name, f"line {j.line}", j.line) for j in doc.joints])
        unique("Force", [(f.name, f"line {f.line}", f.line) for f in doc.forces])
        unique("Constraint", [(c.name, f"line {c.line}", c.line) for c in doc.couplers])
        unique("WrapObject", [(w.name, f"on body {w.body!r}, line {w.line}", w.line) for w in doc.wrap_objects])

    def _check_references(self, doc: OsimDocument) -> None:
        names = {b.name for b in doc.bodies}
        coord_names: dict[str, CoordinateSpec] = {}
        joint_of: dict[str, str] = {}
        for j in doc.joints:  # (a joint that closes a loop of joints is refused when the tree is built)
            for side in (j.parent, j.child):
                if side.body not in names:
                    raise OsimImportError(self.path, f"<{j.type} name='{j.name}'>", f"body {side.body!r} does not exist", j.line)
            for c in j.coordinates:
                if c.name in coord_names:
                    raise OsimImportError(
                        self.path, f"<Coordinate name='{c.name}'>",
                        f"duplicate coordinate name (also in joint {joint_of[c.name]!r}; OpenSim 4 tells them apart by "
                        f"path, the package names coordinates model-wide: rename one)", c.line)
                coord_names[c.name] = c
                joint_of[c.name] = j.name
        self.coordinate_names = set(coord_names)


class _NotYet(Exception):
    """A frame that depends on frames not resolved yet."""


def _normalized_path(path: str) -> str:
    """A component path with '.' and '..' resolved (``/a/b/../c`` -> ``/a/c``)."""
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return "/" + "/".join(out)


def _axis_direction(text: str, reader: Any, e: Any, what: str) -> tuple[int, int]:
    """'+x', '-y', 'z', ... -> (axis index, sign)."""
    t = (text or "").strip().lower()
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    if t not in ("x", "y", "z"):
        raise reader.fail(e, f"<{what}> must be one of +x, -x, +y, -y, +z, -z, got {text!r}")
    return "xyz".index(t), sign


def _structural(tag: str) -> bool:
    """Model structure among <components> (read with the bodies, joints, constraints and frames, not as forces)."""
    return tag in ("Body", "Station", "StationDefinedFrame") or tag.endswith(("Joint", "Constraint"))


#: Characters OpenSim refuses in a component name (ComponentPath::isLegalPathElement, OpenSim 4.x).
INVALID_NAME_CHARACTERS = "\\*+ \t\n/"


def check_component_name(name: str | None) -> str | None:
    """The reason OpenSim would refuse ``name`` as a component name, or None if it is legal."""
    if name is None or name == "":
        return "has no name"
    bad = sorted({c for c in name if c in INVALID_NAME_CHARACTERS or ord(c) < 32})
    if bad:
        return (f"name {name!r} contains {', '.join(repr(c) for c in bad)}: OpenSim refuses names containing any of "
                "'\\', '*', '+', '/', spaces, tabs, newlines or other control characters")
    return None


def _xml_parser() -> Any:
    """An lxml parser that never resolves entities, loads a DTD or touches the network, with libxml2's size limits."""
    return etree.XMLParser(remove_blank_text=False, remove_comments=True, resolve_entities=False, no_network=True,
                           load_dtd=False, dtd_validation=False, huge_tree=False)


_DOCTYPE_FIRST = re.compile(rb"\s*(?:<\?.*?\?>\s*|<!--.*?-->\s*)*<!DOCTYPE", re.S)


def _refuse_doctype(path: str) -> OsimImportError:
    return OsimImportError(path, "<!DOCTYPE>", "a DOCTYPE declaration is not allowed in an OpenSim file "
                           "(entity declarations and external DTDs are refused for safety)", 1)


def safe_parse_xml(path: str, source: Any, from_string: bool = False) -> Any:
    """The root element of an XML file (or string); a DOCTYPE (entities, external DTDs) is refused before parsing
    (and again after, for encodings the byte check does not see)."""
    parser = _xml_parser()
    try:
        if from_string:
            head = (source.encode() if isinstance(source, str) else bytes(source))[:65536]
        else:
            with open(str(source), "rb") as fh:
                head = fh.read(65536)
    except OSError as err:
        raise OsimImportError(path, "<document>", f"cannot read the file: {err.strerror or err}") from None
    if _DOCTYPE_FIRST.match(head.lstrip(b"\xef\xbb\xbf")):
        raise _refuse_doctype(path)
    try:
        if from_string:
            tree = etree.fromstring(source.encode() if isinstance(source, str) else source, parser).getroottree()
        else:
            tree = etree.parse(str(source), parser)
    except etree.XMLSyntaxError as err:
        lenient = _parse_as_opensim_does(path, source, from_string, err)
        if lenient is not None:
            return lenient
        line = err.lineno if hasattr(err, "lineno") else None
        raise OsimImportError(path, "<document>", f"malformed XML: {err.msg}", line) from None
    except OSError as err:
        lenient = _parse_as_opensim_does(path, source, from_string, err) if "encoding" in str(err) else None
        if lenient is not None:
            return lenient
        raise OsimImportError(path, "<document>", f"cannot read the file: {err.strerror or err}") from None
    info = tree.docinfo
    if info.doctype or info.internalDTD is not None or info.externalDTD is not None or info.system_url:
        raise _refuse_doctype(path)
    root = tree.getroot()
    for e in root.iter(etree.Entity):
        raise OsimImportError(path, "<document>", f"entity reference &{e.name}; is not allowed", e.sourceline)
    return root


#: Stands for '::' in element names while a tree is parsed: OpenSim writes and reads them
#: (HuntCrossleyForce::ContactParametersSet), XML does not; :func:`restore_double_colons` puts them back.
DOUBLE_COLON_MARK = "__osim_emb_colons__"
_DOUBLE_COLON_TAG = re.compile(r"<(/?)([A-Za-z_][\w.-]*)::")


def escape_double_colons(text: str) -> str:
    """``text`` with the '::' of element names replaced by :data:`DOUBLE_COLON_MARK` (parseable XML)."""
    return _DOUBLE_COLON_TAG.sub(r"<\1\2" + DOUBLE_COLON_MARK, text)


def restore_double_colons(text: str) -> str:
    """The inverse of :func:`escape_double_colons` on serialized XML."""
    return text.replace(DOUBLE_COLON_MARK, "::")


def _parse(path: str, source: Any, from_string: bool) -> Any:
    return safe_parse_xml(path, source, from_string)


def _parse_as_opensim_does(path: str, source: Any, from_string: bool, err: Any) -> Any:
    """Two departures from XML that OpenSim's parser accepts: a file declared UTF-8 holding Latin-1
    bytes (read as Latin-1), and element names with '::' (HuntCrossleyForce::ContactParametersSet,
    read as :data:`DOUBLE_COLON_MARK`).  None where neither applies."""
    import logging
    import re
    msg = str(getattr(err, "msg", err))
    if from_string:
        data = source.encode() if isinstance(source, str) else source
    else:
        try:
            data = Path(source).read_bytes()
        except OSError:
            return None
    if not ("encoding" in msg.lower() or "bytes" in msg.lower() or "QName" in msg):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        logging.warning("%s: not valid UTF-8; read as Latin-1, as OpenSim does", path)
    text = escape_double_colons(text)
    text = re.sub(r"^<\?xml[^>]*\?>", "", text.lstrip("\ufeff"))
    try:
        return etree.fromstring(text, _xml_parser())
    except etree.XMLSyntaxError:
        return None


def read_osim(path: str | Path, strict: bool = True) -> OsimDocument:
    """Read an .osim file into an :class:`OsimDocument`."""
    path = str(path)
    if not Path(path).is_file():
        raise OsimImportError(path, "<document>", "no such file")
    doc = _Reader(path, _parse(path, path, False), strict).read()
    doc.source_text = _source_text(path)
    return doc


def _source_text(path: str) -> str:
    """The file's text, for the lossless writer ('' where it is not text in a known encoding)."""
    data = Path(path).read_bytes()
    for enc in ("utf-8", "latin-1"):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    return ""


def read_osim_string(text: str, strict: bool = True, name: str = "<string>") -> OsimDocument:
    """Read .osim XML held in a string."""
    doc = _Reader(name, _parse(name, text, True), strict).read()
    doc.source_text = text if isinstance(text, str) else text.decode("utf-8", "replace")
    return doc
