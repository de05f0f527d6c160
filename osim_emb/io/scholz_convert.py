"""Legacy wrap objects -> Scholz2015GeometryPath obstacles (``osim-emb smooth-paths``, issue 13).

For each path actuator whose wrap objects are all spheres and cylinders and whose path points
are all fixed, the GeometryPath is replaced by a ``Scholz2015GeometryPath``: its path points (in
their bodies' frames), and after the point where it acts, each wrap object as a ContactSphere /
ContactCylinder (same frame, location, orientation and radius) with a contact hint.

* **Where each obstacle goes.**  A legacy PathWrap acts on the segments of its point range; an
  obstacle of a Scholz path sits between two given path points.  Over a sample of
  configurations (the default pose and a Latin hypercube over the coordinate ranges), the
  obstacle goes on the segment of its range whose straight line meets it most often (the one
  passing nearest when none meets it, with a warning); several obstacles on one segment are
  ordered along it.
* **Contact hint.**  The legacy quadrant where one is set (``+x``, ``-y``, ...: the side the
  legacy wrap keeps to), else none (``NaN NaN NaN``, OpenSim's default): the cable then starts
  lifted off and touches down where the straight line meets the obstacle, so each obstacle is
  wrapped on its short side -- the shortest path, and what OpenSim 4.6 reproduces most reliably
  (docs/paths.md).  With ``hints=True`` (``--hints``): among the middles of the shortest paths'
  contacts over the sample (and for a cylinder 24 directions round the axis, at its origin's
  height), the hint under which the Scholz path takes the shortest way round in the most sampled
  configurations.
* **Ellipsoids** (WrapEllipsoid -> ContactEllipsoid with the same radii; geodesics integrated numerically),
  also sharing a segment with other obstacles; a quadrant becomes a hint at the end of that semi-axis.
* **Checked** (``solvable_smooth_paths_tree(check=...)``; the CLI passes OpenSim's ``getLength``): a unit
  whose lengths differ from the check's is written without its hints, or kept legacy, with a warning.
* **Tori** (WrapTorus -> ContactTorus, torus radius = outer_radius, tube radius = inner_radius) likewise,
  alone between two path points (sharing a segment, the unit stays legacy).
  The legacy WrapTorus is a ring the path is held inside (it wraps on the tube's side facing the axis
  whenever the line passes the ring); the obstacle is a solid torus, acting only where the straight
  segment meets its tube: said once per model.
* **What is not converted** (kept as a legacy GeometryPath, with a warning): units with
  moving or conditional path points, or a path point inside an
  obstacle in any sampled configuration (no path exists there; OpenSim 4.6 then fails for the whole model, and at
  the default pose cannot start the path).  A WrapCylinder's finite
  length has no counterpart (Simbody's cylinder is infinite): said once.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from osim_emb.io.osim_reader import escape_double_colons, restore_double_colons
from osim_emb.io.scholz_xml import contact_geometry_element, scholz_path_element
from osim_emb.paths.wrapping.smooth import obstacle_radii

__all__ = ["ConvertedUnit", "smooth_paths_tree", "solvable_smooth_paths_tree"]

log = logging.getLogger(__name__)

_KIND = {"WrapSphere": "sphere", "WrapCylinder": "cylinder", "WrapEllipsoid": "ellipsoid", "WrapTorus": "torus"}
_AXES = {"x": 0, "y": 1, "z": 2}


@dataclass
class ConvertedUnit:
    """One unit's conversion: its elements (("point", body, location) | ("obstacle", wrap object name, hint))."""

    name: str
    elements: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def _sample(model, n: int, seed: int) -> np.ndarray:
    from scipy.stats import qmc
    lo, hi = model.coordinate_ranges.T.copy()
    default = model.default_q.reshape(-1)
    half = np.array([np.pi / 2 if c.motion_type == "rotational" else 0.1 for c in model.coordinates])
    lo = np.where(np.isfinite(lo), lo, default - half)
    hi = np.where(np.isfinite(hi), hi, default + half)
    q = np.vstack([default, lo + qmc.LatinHypercube(d=model.n_q, seed=seed).random(n) * (hi - lo)])
    return _assembling(model, q)


def _assembling(model, q: np.ndarray) -> np.ndarray:
    """The rows of q at which the model's closed loops (point, weld constraints) assemble; all rows of an open
    tree.  A loop that cannot close at a sampled configuration (OpenSim cannot assemble it either) drops it."""
    from osim_emb.core.closed_chains import AssemblyError
    from osim_emb.core.kinematics import forward_kinematics
    if not model.dependent_coordinates:
        return q
    try:
        forward_kinematics(model, q, order=0)
        return q
    except AssemblyError:
        pass
    keep = []
    for k in range(len(q)):
        try:
            forward_kinematics(model, q[k:k + 1], order=0)
            keep.append(k)
        except AssemblyError:
            continue
    if not keep or keep[0] != 0:  # the first row is the default pose, which the callers compare first
        raise AssemblyError(f"{model.name}: its closed loops do not assemble at the default pose")
    log.info("%s: %d of %d sampled configurations left out: the closed loops do not assemble there", model.name,
             len(q) - len(keep), len(q))
    return q[keep]


def pose_text(model, q: np.ndarray, unit: str | None = None) -> str:
    """The configuration q as "name value, ..." (degrees for rotations, metres for translations): with ``unit``, the
    coordinates its (legacy or smooth) length depends on there, by central differences of the package's lengths
    (all coordinates away from their defaults if it cannot evaluate them)."""
    from osim_emb.paths.geometry import muscle_lengths
    q = np.asarray(q, dtype=float).reshape(-1)
    n = len(q)
    moved = np.abs(q - model.default_q.reshape(-1)) > 1e-12
    if unit is not None:
        step = np.repeat(q[None], 2 * n, axis=0)
        step[np.arange(0, 2 * n, 2), np.arange(n)] += 1e-4
        step[np.arange(1, 2 * n, 2), np.arange(n)] -= 1e-4
        try:
            lengths = muscle_lengths(model, step, [unit], allow_out_of_range=True)[:, 0]
            spanned = np.abs(lengths[0::2] - lengths[1::2]) > 1e-10
            if spanned.any():
                moved = spanned
        except (ValueError, RuntimeError):
            pass
    parts = []
    for c, v, m in zip(model.coordinates, q, moved):
        if m:
            parts.append(f"{c.name} {np.degrees(v):.1f} deg" if c.motion_type != "translational" else
                         f"{c.name} {v:.4g} m")
    return ", ".join(parts) if parts else "the default pose"


@contextmanager
def internal_reload():
    """Reading a file this package wrote itself (a trial or a partial output under a temporary name the user never
    sees): the reader's warnings about it are dropped (the command says what matters, naming the user's files)."""
    reader = logging.getLogger("osim_emb.io.osim_reader")

    def drop(record):
        return record.levelno < logging.WARNING

    reader.addFilter(drop)
    try:
        yield
    finally:
        reader.removeFilter(drop)


def _closest(p1: np.ndarray, p2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = p2 - p1
    dd = np.einsum("ni,ni->n", d, d)
    s = np.clip(-np.einsum("ni,ni->n", p1, d) / np.where(dd > 0, dd, 1.0), 0.0, 1.0)
    return p1 + s[:, None] * d, s


def _hint_from_quadrant(quadrant: str, kind: str, radius: float) -> np.ndarray | None:
    q = (quadrant or "all").strip().lower()
    if q in ("all", ""):
        return None
    sign = -1.0 if q.startswith("-") else 1.0
    axis = _AXES.get(q.lstrip("+-"))
    if axis is None or (kind == "cylinder" and axis == 2):
        return None
    h = np.zeros(3)
    h[axis] = sign * radius
    return h


def convert_units(model, n_samples: int = 1000, seed: int = 0, hints: bool = False,
                  keep_legacy: dict | None = None,
                  without_hints: set | frozenset = frozenset()) -> tuple[list[ConvertedUnit], list[str]]:
    """Plan the conversion of every unit with wrap objects: (converted units, warnings).  ``keep_legacy``: unit
    name -> reason, units left as they are (with a warning); ``without_hints``: units written with no contact hint
    on any obstacle (the short side), whatever their legacy quadrants."""
    keep_legacy = keep_legacy or {}
    from osim_emb.core.kinematics import forward_kinematics
    from osim_emb.paths.geometry import _body_table

    q = _sample(model, n_samples, seed)
    kin = forward_kinematics(model, q, order=0)
    body_index, body_frames, body_offsets = _body_table(model)
    bt = kin.transforms[:, body_frames] @ body_offsets
    objects = {w.name: w for w in model.wrap_objects}
    converted, warnings = [], []
    finite_cylinders, rings = set(), set()
    for unit in model.muscles:
        if not getattr(unit, "wraps", ()) or not unit.points:
            continue
        if unit.name in keep_legacy:
            warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: {keep_legacy[unit.name]}")
            continue
        used = [objects[w.wrap_object] for w in unit.wraps if objects[w.wrap_object].active]
        bad = [w for w in used if w.type_name not in _KIND]
        if bad:
            warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: {bad[0].type_name} "
                            f"{bad[0].name!r} (smooth wrapping supports spheres, cylinders, ellipsoids and tori)")
            continue
        if any(p.kind != "fixed" for p in unit.points):
            warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: it has moving or conditional path "
                            "points (a Scholz2015GeometryPath takes fixed points only)")
            continue
        pos = np.stack([np.einsum("nij,j->ni", bt[:, body_index[p.body], :3, :3], p.location)
                        + bt[:, body_index[p.body], :3, 3] for p in unit.points], axis=1)  # (N, P, 3)
        n_points = len(unit.points)
        cylinders, tori = set(), set()  # said once, for the units written only
        placed: dict[int, list[tuple[float, str, np.ndarray]]] = {}
        notes = []
        ok = True
        for pw in unit.wraps:
            obj = objects[pw.wrap_object]
            if not obj.active:
                continue
            kind = _KIND[obj.type_name]
            if kind == "cylinder":
                cylinders.add(obj.name)
            if kind == "torus":
                tori.add(obj.name)
            t = bt[:, body_index[obj.body]] @ obj.transform_in_body
            rot, org = t[:, :3, :3], t[:, :3, 3]
            local = np.einsum("nji,npj->npi", rot, pos - org[:, None])  # points in the obstacle frame
            flat = np.array([1.0, 1.0, 0.0]) if kind == "cylinder" else np.ones(3)
            radius = obj.radius if kind not in ("ellipsoid", "torus") else 1.0
            if kind == "torus":
                if _hint_from_quadrant(obj.quadrant, "sphere", 1.0) is not None:
                    warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: {kind} {obj.name!r} has "
                                    f"the quadrant {obj.quadrant!r} (an {kind} obstacle is supported without a "
                                    "contact hint only)")
                    ok = False
                    break
            if kind == "ellipsoid":
                local = local / np.asarray(obj.dimensions)  # the unit sphere: same segments meet it, same places
            lo, hi = pw.range
            first = 0 if lo < 1 else lo - 1
            last = n_points - 1 if hi < 1 else hi - 1
            best = None
            for i in range(first, min(last, n_points - 1)):
                if kind == "torus":  # the deepest point of the segment in the tube, its depth in tube radii
                    c, s, dist = _torus_depth(obj, local[:, i], local[:, i + 1])
                else:
                    c, s = _closest(local[:, i] * flat, local[:, i + 1] * flat)
                    dist = np.linalg.norm(c, axis=-1)
                meets = dist < radius
                score = (int(meets.sum()), -float(dist.min() / radius))
                if best is None or score > best[0]:
                    best = (score, i, c, s, meets)
            if best is None:
                warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: the range {pw.range} of wrap "
                                f"{obj.name!r} holds no segment")
                ok = False
                break
            (count, _), i, c, s, meets = best
            if kind == "torus":
                big, tube = obstacle_radii(obj)
                ends = local[:, [i, i + 1]]
                inside = (np.hypot(np.hypot(ends[..., 0], ends[..., 1]) - big, ends[..., 2]) <= tube).any(axis=1)
            else:
                inside = (np.linalg.norm(local[:, [i, i + 1]] * flat, axis=-1) <= radius).any(axis=1)
            if inside[0]:
                warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: a path point next to "
                                f"{obj.name!r} lies inside it at the default pose (OpenSim cannot start the path)")
                ok = False
                break
            if inside.any():  # no path there: OpenSim then fails for the whole model (assemble, moment arms)
                k = int(np.argmax(inside))
                warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: a path point next to "
                                f"{obj.name!r} lies inside it in {int(inside.sum())} of {len(inside)} sampled "
                                f"configurations (e.g. {pose_text(model, q[k], unit.name)}): a smooth path has no "
                                "solution there, and OpenSim 4.6 then fails for the whole model (\"Preceding point "
                                "lies inside the surface\" in assemble, getLength, computeMomentArm)")
                ok = False
                break
            if count == 0:
                notes.append(f"{obj.name!r} never meets the straight segment in the sample (placed on the "
                             f"nearest segment, {i + 1}-{i + 2})")
            hint = (np.full(3, np.nan) if kind == "torus" else
                    _ellipsoid_hint(obj.quadrant, obj.dimensions) if kind == "ellipsoid" else
                    _hint_from_quadrant(obj.quadrant, kind, obj.radius))
            if hint is None and kind == "ellipsoid":  # no quadrant: no hint (the short side); --hints: none either
                hint = np.full(3, np.nan)
            if hint is None and not hints or unit.name in without_hints:  # no hint: lifted off, then the short side
                hint = np.full(3, np.nan)
            if hint is None and meets.any():
                hint = _best_hint(kind, obj.radius, local[:, i], local[:, i + 1], meets)
            if hint is None:  # never met in the sample: the side the segment passes nearest
                direction = np.mean(c / np.maximum(np.linalg.norm(c, axis=-1), 1e-12)[:, None], axis=0)
                if np.linalg.norm(direction) < 1e-9:
                    direction = np.array([1.0, 0, 0])
                hint = obj.radius * direction / np.linalg.norm(direction)
            placed.setdefault(i, []).append((float(np.mean(s[meets] if meets.any() else s)), obj.name, hint))
        for i, group in placed.items() if ok else ():  # a torus obstacle alone between two points
            shared = [name for _, name, _ in group if _KIND[objects[name].type_name] == "torus"]
            if shared and len(group) > 1:
                warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: torus {shared[0]!r} shares a "
                                "segment with other wrap objects (supported alone)")
                ok = False
        if ok:  # OpenSim starts each obstacle's path from the hints of its neighbours on the span
            for i, group in placed.items():
                clash = _hint_inside_neighbour(group, objects, bt, body_index)
                if clash:
                    warnings.append(f"unit {unit.name!r} kept as a legacy GeometryPath: the contact hint of "
                                    f"{clash[0]!r} lies inside {clash[1]!r} at the default pose (OpenSim cannot "
                                    "start the path)")
                    ok = False
                    break
        if not ok:
            continue
        finite_cylinders |= cylinders
        rings |= tori
        out = ConvertedUnit(unit.name, notes=notes)
        for i, p in enumerate(unit.points):
            out.elements.append(("point", p.body, np.asarray(p.location)))
            for _, name, hint in sorted(placed.get(i, []), key=lambda x: x[0]):
                out.elements.append(("obstacle", name, hint))
        converted.append(out)
        for note in notes:
            warnings.append(f"unit {unit.name!r}: {note}")
    if rings:
        warnings.append(f"tori {sorted(rings)}: a legacy WrapTorus holds the path inside its ring; a ContactTorus "
                        "is a solid obstacle that acts only where the straight segment meets its tube")
    if finite_cylinders:
        warnings.append(f"cylinders {sorted(finite_cylinders)}: a ContactCylinder is infinite; the legacy "
                        "WrapCylinder's length is not carried over")
    return converted, warnings


def _ellipsoid_hint(quadrant: str, dimensions) -> np.ndarray | None:
    """The legacy quadrant's contact hint on an ellipsoid: the end of the semi-axis on that side (None: no quadrant)."""
    unit = _hint_from_quadrant(quadrant, "sphere", 1.0)
    return None if unit is None else unit * np.asarray(dimensions, dtype=float)


def _torus_depth(obj, p1: np.ndarray, p2: np.ndarray):
    """The point of each segment p1 p2 (torus frame) nearest the tube's core circle, its place on the segment and
    its distance from the core in tube radii (< 1: the segment meets the tube)."""
    from osim_emb.paths.geodesic import _touchdown, surface_of
    from osim_emb.paths.wrapping.smooth import obstacle_radii
    big, tube = obstacle_radii(obj)
    c, _ = _touchdown(surface_of("torus", (big, tube)), p1, p2)
    d = p2 - p1
    dd = np.einsum("ni,ni->n", d, d)
    s = np.einsum("ni,ni->n", c - p1, d) / np.where(dd > 0, dd, 1.0)
    return c, s, np.hypot(np.hypot(c[:, 0], c[:, 1]) - big, c[:, 2]) / tube


def _best_hint(kind: str, radius: float, p1: np.ndarray, p2: np.ndarray, meets: np.ndarray) -> np.ndarray:
    """The contact hint under which the path takes the shortest way round in the most sampled configurations.

    Candidates: the directions of the middles of the shortest paths' contacts (a subsample) and, for a
    cylinder, 24 directions round the axis (at the height of its origin).  Ties go to the candidate
    nearest the mean contact."""
    from osim_emb.paths.scholz import obstacle_path
    nan = np.full(3, np.nan)
    shortest = obstacle_path(kind, radius, nan, p1, p2)[0]
    _, t1, t2, _ = obstacle_path(kind, radius, nan, p1[meets], p2[meets])
    mid = 0.5 * (t1 + t2)
    flat = np.array([1.0, 1.0, 0.0]) if kind == "cylinder" else np.ones(3)
    on_surface = mid * flat / np.maximum(np.linalg.norm(mid * flat, axis=-1), 1e-12)[:, None]
    mean = on_surface.mean(axis=0)
    candidates = on_surface[np.linspace(0, len(on_surface) - 1, min(len(on_surface), 48)).astype(int)]
    if kind == "cylinder":
        a = np.linspace(0, 2 * np.pi, 24, endpoint=False)
        candidates = np.vstack([candidates, np.column_stack([np.cos(a), np.sin(a), np.zeros_like(a)])])
    candidates = radius * candidates  # (on a cylinder at the height of its origin)
    best, best_score = None, None
    for h in candidates:
        agree = int(np.sum(np.abs(obstacle_path(kind, radius, h, p1, p2)[0] - shortest) < 1e-12))
        score = (agree, float(h @ mean))
        if best_score is None or score > best_score:
            best, best_score = h, score
    return best


def _hint_inside_neighbour(group, objects, bt, body_index) -> tuple[str, str] | None:
    """(obstacle, other) where an obstacle's hint point (on its surface) lies inside another obstacle of
    the same segment at the default pose (row 0), else None."""
    for _, name, hint in group:
        if np.isnan(hint).any():  # no hint: the cable starts lifted off
            continue
        obj = objects[name]
        t = bt[0, body_index[obj.body]] @ obj.transform_in_body
        flat = np.array([1.0, 1.0, 0.0]) if obj.type_name == "WrapCylinder" else np.ones(3)
        on_surface = hint.copy()  # an ellipsoid's hint is on its surface already
        if obj.type_name != "WrapEllipsoid":
            on_surface[flat > 0] *= obj.radius / max(np.linalg.norm(hint * flat), 1e-12)
        point = t[:3, :3] @ on_surface + t[:3, 3]
        for _, other_name, _ in group:
            if other_name == name:
                continue
            other = objects[other_name]
            u = bt[0, body_index[other.body]] @ other.transform_in_body
            local = u[:3, :3].T @ (point - u[:3, 3])
            if other.type_name == "WrapEllipsoid":
                inside = np.linalg.norm(local / np.asarray(other.dimensions, dtype=float)) <= 1.0
            else:
                other_flat = np.array([1.0, 1.0, 0.0]) if other.type_name == "WrapCylinder" else np.ones(3)
                inside = np.linalg.norm(local * other_flat) <= other.radius
            if inside:
                return name, other_name
    return None


def _frame_path(body: str, ground: str) -> str:
    return "/ground" if body == ground else f"/bodyset/{body}"


def smooth_paths_tree(model, n_samples: int = 1000, seed: int = 0, hints: bool = False,
                      keep_legacy: dict | None = None,
                      without_hints: set | frozenset = frozenset()) -> tuple[Any, list[ConvertedUnit], list[str]]:
    """The source file's XML tree with the convertible units' paths as Scholz2015GeometryPaths.

    Returns (tree, converted units, warnings).  The model must come from an OpenSim 4 .osim file.
    ``keep_legacy``: unit name -> reason, units left as legacy GeometryPaths (with a warning); ``without_hints``:
    units written without contact hints.
    """
    doc = model.extras.get("document") if isinstance(model.extras, dict) else None
    if doc is None or not getattr(doc, "source_text", None):
        raise ValueError("smooth-paths needs a model read from an .osim file")
    if doc.version < 40000:
        raise ValueError(f"{doc.path}: a version-{doc.version} (OpenSim 3.3) file; Scholz2015GeometryPath is an "
                         "OpenSim 4.6 element: save the model in OpenSim 4 format first "
                         "(`osim-emb convert MODEL.osim -o MODEL_4.osim`, or in OpenSim)")
    converted, warnings = convert_units(model, n_samples, seed, hints, keep_legacy, without_hints)
    source = doc.source_text.encode("utf-8") if isinstance(doc.source_text, str) else doc.source_text
    try:
        root = etree.fromstring(source, etree.XMLParser(remove_comments=False, huge_tree=True))
    except etree.XMLSyntaxError:  # element names with '::', which OpenSim writes and reads (write_tree restores them)
        source = escape_double_colons(source.decode("utf-8")).encode("utf-8")
        root = etree.fromstring(source, etree.XMLParser(remove_comments=False, huge_tree=True))
    m = root.find("Model")
    objects = {w.name: w for w in model.wrap_objects}
    geometry_set = m.find("ContactGeometrySet")
    if geometry_set is None:
        geometry_set = etree.SubElement(m, "ContactGeometrySet", name="contactgeometryset")
    holder = geometry_set.find("objects")
    if holder is None:
        holder = etree.SubElement(geometry_set, "objects")
    taken = {c.get("name") for c in holder if isinstance(c.tag, str)}
    geometry_path: dict[str, str] = {}

    def geometry_for(name: str) -> str:
        if name in geometry_path:
            return geometry_path[name]
        obj = objects[name]
        gname = name if name not in taken else f"{name}_obstacle"
        k = 1
        while gname in taken:
            gname, k = f"{name}_obstacle{k}", k + 1
        taken.add(gname)
        size = obstacle_radii(obj) or obj.radius
        holder.append(contact_geometry_element(_KIND[obj.type_name], gname, _frame_path(obj.body, doc.ground),
                                               obj.translation, obj.xyz_body_rotation, size))
        geometry_path[name] = f"/contactgeometryset/{gname}"
        return geometry_path[name]

    forces = {}
    for f in m.iter():
        if isinstance(f.tag, str) and f.find("GeometryPath") is not None and f.get("name"):
            forces.setdefault(f.get("name"), f)
    for unit in converted:
        force = forces.get(unit.name)
        if force is None:
            warnings.append(f"unit {unit.name!r}: its force element was not found; kept as it is")
            continue
        items = [("point", _frame_path(body, doc.ground), loc) if kind == "point" else
                 ("obstacle", geometry_for(body), loc) for kind, body, loc in unit.elements]
        old = force.find("GeometryPath")
        new = scholz_path_element(items, name="path")  # the path actuator's property (OpenSim 4.6)
        new.tail = old.tail
        force.replace(old, new)
    return etree.ElementTree(root), converted, warnings


def write_tree(tree: Any, path) -> None:
    """Write an XML tree as an .osim file (UTF-8, declaration, pretty-printed new elements; element names with
    '::' as they were)."""
    etree.indent(tree, space="\t")
    text = etree.tostring(tree, xml_declaration=True, encoding="UTF-8").decode("utf-8")
    Path(path).write_bytes(restore_double_colons(text).encode("utf-8"))




def solvable_smooth_paths_tree(model, n_samples: int = 1000, seed: int = 0, hints: bool = False,
                               strict: bool = True, check=None) -> tuple[Any, list[ConvertedUnit], list[str]]:
    """:func:`smooth_paths_tree`, with the units whose smooth path the package cannot solve at the default pose
    (a path point inside an infinite cylinder that the legacy finite one left outside, a geodesic that does
    not converge) kept as legacy GeometryPaths, each with the reason.

    ``check(path, smooth_model, names) -> {name: message}``, if given, compares the written file's paths with an
    independent evaluation (the CLI's: OpenSim's ``getLength``) and names the units that disagree: a unit with
    contact hints is then written without them (the short side) and checked again; a unit that still disagrees
    (or has no hint) is kept legacy, with the message.  Nothing that disagrees is written silently."""
    import tempfile

    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    keep_legacy: dict = {}
    without_hints: dict = {}  # unit -> the disagreement that made us drop its hints
    with tempfile.TemporaryDirectory() as scratch:
        trial = Path(scratch) / "trial.osim"
        for _ in range(2 * len(model.muscles) + 2):  # each round drops a unit's hints or keeps a unit legacy
            tree, converted, warnings = smooth_paths_tree(model, n_samples, seed, hints, keep_legacy,
                                                          frozenset(without_hints))
            if not converted:
                break
            write_tree(tree, trial)
            with internal_reload():
                smooth = load_osim(trial, strict=strict)
            unsolved = {}
            for u in converted:
                try:
                    muscle_lengths(smooth, smooth.default_q, [u.name])
                except (ValueError, RuntimeError) as err:
                    unsolved[u.name] = f"its smooth path has no solution at the default pose ({err})"
            if unsolved:
                by_name = {u.name: u for u in converted}
                for name, message in unsolved.items():  # with contact hints: first try without them
                    if name not in without_hints and any(kind == "obstacle" and np.isfinite(hint).all()
                                                         for kind, _, hint in by_name[name].elements):
                        without_hints[name] = message
                    else:
                        earlier = without_hints.get(name)
                        keep_legacy[name] = message + (f"; with its contact hints: {earlier}" if earlier else "")
                continue
            if check is None:
                break
            disagree = check(trial, smooth, [u.name for u in converted])
            if not disagree:
                break
            by_name = {u.name: u for u in converted}
            for name, message in disagree.items():
                hinted = any(kind == "obstacle" and np.isfinite(hint).all()
                             for kind, _, hint in by_name[name].elements)
                if hinted and name not in without_hints:
                    without_hints[name] = message
                else:
                    earlier = (f"; with its contact hints: {without_hints[name]}" if name in without_hints else "")
                    keep_legacy[name] = f"OpenSim's evaluation of its smooth path differs: {message}{earlier}"
        else:
            raise RuntimeError("smooth-paths: the conversion did not settle (internal error)")
    written = {u.name for u in converted}
    for name, message in without_hints.items():
        if name in written:
            why = message if message.startswith("its smooth path") else f"OpenSim's evaluation differs: {message}"
            warnings.append(f"unit {name!r} written without contact hints (the short side round each obstacle): "
                            f"with its hints (from legacy quadrants) {why}")
    return tree, converted, warnings
