"""A format-neutral description of an OpenSim model, as read from a 3.3 or 4.x .osim file.

The reader fills these records from the XML; :mod:`osim_emb.io.convert` turns
them into the empirically-based :class:`~osim_emb.model.Model`, and
:mod:`osim_emb.io.osim_writer` writes them back as an OpenSim 4 file.  Each
record keeps the line of the element it came from, so that later errors
can name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from osim_emb.core.functions.base import JointFunction

__all__ = [
    "OffsetSpec", "CoordinateSpec", "TransformAxisSpec", "JointSpec", "BodySpec", "WrapObjectSpec",
    "CouplerSpec", "PathPointSpec", "PathWrapSpec", "ForceSpec", "MarkerSpec", "Skipped", "OsimDocument",
]


@dataclass
class OffsetSpec:
    """A frame fixed on ``body`` at ``translation`` and body-fixed X-Y-Z ``orientation``."""

    body: str
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    orientation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    name: str = ""

    def transform(self) -> np.ndarray:
        from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
        t = np.eye(4)
        t[:3, :3] = euler_xyz_body_fixed(self.orientation)
        t[:3, 3] = self.translation
        return t


@dataclass
class CoordinateSpec:
    name: str
    joint: str
    motion_type: str | None = "rotational"
    default: float = 0.0
    default_speed: float = 0.0
    range: tuple[float, float] = (-np.inf, np.inf)
    clamped: bool = False
    locked: bool = False
    prescribed: bool = False
    line: int | None = None
    #: OpenSim's is_free_to_satisfy_constraints: the assembler may move it away from its value to satisfy the
    #: constraints (kept for writing the model back; the package chooses its dependent coordinates itself)
    free_to_satisfy_constraints: bool = False


@dataclass
class TransformAxisSpec:
    """One of a CustomJoint's six axes (or an axis synthesized for another joint type)."""

    name: str  # rotation1..3, translation1..3
    coordinates: list[str]
    axis: np.ndarray
    function: JointFunction | None  # None: OpenSim's default for the number of coordinates

    @property
    def is_rotation(self) -> bool:
        return self.name.startswith("rotation")


@dataclass
class JointSpec:
    name: str
    type: str
    parent: OffsetSpec  # the joint frame F on the parent body
    child: OffsetSpec  # the joint frame M on the child body
    coordinates: list[CoordinateSpec]
    axes: list[TransformAxisSpec]
    reverse: bool = False
    line: int | None = None
    #: Simbody's fixed frames of a compound joint (ScapulothoracicJoint): ``pre`` after the parent frame,
    #: ``tail`` (constant transform, then one more axis) after the six axes, ``post`` before the child frame
    pre: np.ndarray | None = None
    tail: list[tuple[np.ndarray, TransformAxisSpec]] = field(default_factory=list)
    post: np.ndarray | None = None
    #: the joint type's own properties as read (EllipsoidJoint's radii, ...), for writing the joint back
    properties: dict = field(default_factory=dict)


@dataclass
class WrapObjectSpec:
    type: str
    name: str
    body: str
    xyz_body_rotation: np.ndarray
    translation: np.ndarray
    quadrant: str = "all"
    active: bool = True
    parameters: dict = field(default_factory=dict)  # radius, length, dimensions, inner_radius, outer_radius
    line: int | None = None


@dataclass
class BodySpec:
    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros(6))  # xx yy zz xy xz yz
    wrap_objects: list[WrapObjectSpec] = field(default_factory=list)
    line: int | None = None


@dataclass
class CouplerSpec:
    name: str
    dependent: str
    independents: list[str]
    function: JointFunction
    scale: float = 1.0
    enabled: bool = True
    line: int | None = None


@dataclass
class PointConstraintSpec:
    """A constraint that closes a loop between two bodies (points in body coordinates, an offset frame's transform
    already applied):

    * ``PointConstraint``: ``location1`` fixed in ``body1`` coincides with ``location2`` fixed in ``body2``;
    * ``ConstantDistanceConstraint``: the two points stay ``distance`` apart;
    * ``PointOnLineConstraint``: ``body1`` is the line body, ``location1`` a point of the line and ``direction`` its
      direction (body1 coordinates); ``location2`` (fixed in the follower ``body2``) stays on the line;
    * ``WeldConstraint``: the frames at ``location1`` / ``location2`` with axes ``rotation1`` / ``rotation2``
      (columns, in body coordinates) coincide.
    """

    name: str
    body1: str
    location1: np.ndarray
    body2: str
    location2: np.ndarray
    line: int | None = None
    distance: float | None = None
    type: str = "PointConstraint"
    direction: np.ndarray | None = None
    rotation1: np.ndarray | None = None
    rotation2: np.ndarray | None = None

    @property
    def n_equations(self) -> int:
        return {"PointConstraint": 3, "ConstantDistanceConstraint": 1, "PointOnLineConstraint": 2,
                "WeldConstraint": 6}[self.type]


@dataclass
class PathPointSpec:
    name: str
    kind: str  # fixed | moving | conditional
    body: str
    location: np.ndarray
    functions: tuple[JointFunction, JointFunction, JointFunction] | None = None  # moving
    function_coordinates: tuple[str, str, str] | None = None  # moving
    coordinate: str | None = None  # conditional
    range: tuple[float, float] | None = None  # conditional
    line: int | None = None
    offset: np.ndarray | None = None  # moving: the frame its functions are in, relative to the body


@dataclass
class PathWrapSpec:
    wrap_object: str
    method: str = "hybrid"
    range: tuple[int, int] = (-1, -1)
    name: str = ""


@dataclass
class ForceSpec:
    """A force element; path actuators carry their path points and wraps."""

    name: str
    type: str
    element: Any  # the lxml element (muscle parameters, export)
    points: list[PathPointSpec] | None = None
    wraps: list[PathWrapSpec] | None = None
    line: int | None = None
    function_path: Any = None  # a FunctionBasedPathSpec (io.function_based_path_xml) for a <FunctionBasedPath>
    scholz_path: Any = None  # a paths.scholz.ScholzPath for a <Scholz2015GeometryPath> (io.scholz_xml)
    law: Any = None  # the record of a force the package applies without a path (io.force_elements)

    @property
    def has_path(self) -> bool:
        return self.points is not None


@dataclass
class MarkerSpec:
    name: str
    body: str
    location: np.ndarray
    fixed: bool = False


@dataclass
class Skipped:
    """Something the importer left out (non-strict mode) or ignored on purpose."""

    kind: str
    name: str
    line: int | None
    reason: str


@dataclass
class OsimDocument:
    path: str
    version: int
    name: str
    gravity: np.ndarray
    ground: str = "ground"
    credits: str = ""
    publications: str = ""
    #: the model's assembly_accuracy (OpenSim's assembler tolerance), None where the file leaves OpenSim's default
    assembly_accuracy: float | None = None
    bodies: list[BodySpec] = field(default_factory=list)
    joints: list[JointSpec] = field(default_factory=list)
    couplers: list[CouplerSpec] = field(default_factory=list)
    point_constraints: list[PointConstraintSpec] = field(default_factory=list)
    forces: list[ForceSpec] = field(default_factory=list)
    markers: list[MarkerSpec] = field(default_factory=list)
    #: (name, type) of the enabled controllers of the ControllerSet (not applied by the package; said so)
    controllers: list[tuple[str, str]] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the XML text the document was read from: the writer edits it (everything the package does not
    #: change -- geometry, markers, actuators, controllers, probes, comments -- is kept)
    source_text: str = field(default="", repr=False)

    @property
    def coordinates(self) -> list[CoordinateSpec]:
        return [c for j in self.joints for c in j.coordinates]

    def body(self, name: str) -> BodySpec:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def wrap_objects(self) -> list[WrapObjectSpec]:
        return [w for b in self.bodies for w in b.wrap_objects]

    def coordinate_path(self, name: str) -> str:
        """The component path of coordinate ``name`` in OpenSim 4 (``/jointset/JOINT/NAME``)."""
        for j in self.joints:
            for c in j.coordinates:
                if c.name == name:
                    return f"/jointset/{j.name}/{name}"
        raise KeyError(f"coordinate {name!r} is on no joint")
