"""OpenSim 4.6 ``Scholz2015GeometryPath``: locally shortest paths over sphere and cylinder obstacles (issue 13).

A path is an ordered list of elements: path points (fixed on bodies; the first and the last are
the origin and the insertion, the others via points) and obstacles (a contact geometry on a body
and a *contact hint*, a point in the obstacle's frame).  OpenSim (Simbody's ``CableSpan``, the
algorithm of Scholz et al. 2015) splits the path at the via points into spans solved
independently; over each span it finds a path that is straight between obstacles, a geodesic on
each obstacle it touches, and smooth (tangent-continuous) where they meet: a stationary length,
reached by Newton steps started from the hints (docs/paths.md, "Scholz2015GeometryPath").

Here each obstacle's geodesic is in closed form (docs/paths.md):

* **sphere** (radius r): a great-circle arc in the plane through the centre and the two points
  the obstacle's segment joins, tangent segments either side;
* **cylinder** (radius r about z, infinite, as Simbody's): a helix, the circle problem in the
  xy projection with z linear in the projected arc length.

Of the two stationary ways round (the short side, where the straight segment passes, and the
long side), the contact hint picks the side: the path goes round the side where the hint lies
(the long way round when the straight segment passes on the other side of the centre or axis),
as OpenSim's solver does from a zero-length geodesic at the hint.  On the short side the path
lifts off (a straight segment) when the segment misses the obstacle, as OpenSim's lift-off and
touch-down rules do; without a hint (NaN, OpenSim's default) it always takes the short side.
Several obstacles on one span are joined by straight segments; their common stationary path is
found by Newton's method over one free point per joining segment (in a plane between the two
obstacles), each obstacle's part in closed form.

The length is stationary with respect to every contact point, so the derivative of L with
respect to q is that of the straight segments with their end points fixed on their bodies: the
package's segment formula (``osim_emb.paths.geometry``) gives R = -dL/dq, which is what OpenSim's
``computeMomentArm`` (a ``MomentArmSolver`` over the forces the path applies) returns.
Ellipsoids and tori (without a hint; a torus alone on its span): geodesics integrated numerically
(:mod:`osim_emb.paths.geodesic`, compiled).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from osim_emb.core.functions.base import readonly
from osim_emb.paths.musculotendon import Musculotendon

__all__ = ["ScholzPoint", "ScholzObstacle", "ScholzPath", "ScholzMusculotendon", "OBSTACLE_KINDS", "INTEGRATED_KINDS",
           "wraps_short_side", "wrap_sense", "obstacle_path", "span_paths", "scholz_path_lengths_and_moment_arms"]

#: The obstacle surfaces supported (OpenSim contact-geometry tag -> kind).  Ellipsoids and tori: without a contact
#: hint, a torus alone on its span (geodesics integrated numerically, :mod:`osim_emb.paths.geodesic`).
OBSTACLE_KINDS = {"ContactSphere": "sphere", "ContactCylinder": "cylinder", "ContactEllipsoid": "ellipsoid",
                  "ContactTorus": "torus"}

#: Obstacles whose geodesics are integrated numerically (:mod:`osim_emb.paths.geodesic`)
INTEGRATED_KINDS = ("ellipsoid", "torus")


@dataclass(frozen=True, eq=False)
class ScholzPoint:
    """A path point fixed on ``body`` at ``location`` (body frame)."""

    name: str
    body: str
    location: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "location", readonly(np.asarray(self.location, dtype=float).reshape(3)))


@dataclass(frozen=True, eq=False)
class ScholzObstacle:
    """An obstacle: ``kind`` ('sphere' | 'cylinder') of ``radius`` in the frame ``transform`` (4x4, obstacle
    frame -> body) on ``body``, and the contact hint (obstacle frame; NaN: always the short side, the
    smooth wrapping mode of :mod:`osim_emb.paths.wrapping.smooth`)."""

    name: str
    kind: str
    body: str
    transform: np.ndarray
    radius: float
    hint: np.ndarray
    radii: tuple | None = None  # an ellipsoid's semi-axes (radius is then the smallest); a torus's (R, r)

    def __post_init__(self):
        if self.kind not in ("sphere", "cylinder", "ellipsoid", "torus"):
            raise ValueError(f"obstacle {self.name!r}: unsupported kind {self.kind!r} (sphere, cylinder, ellipsoid, "
                             "torus)")
        if self.kind in INTEGRATED_KINDS:
            size = 3 if self.kind == "ellipsoid" else 2
            if self.radii is None or len(self.radii) != size or min(self.radii) <= 0:
                what = "three positive radii" if size == 3 else "a positive torus radius and tube radius"
                raise ValueError(f"obstacle {self.name!r}: {'an' if size == 3 else 'a'} {self.kind} needs {what}, "
                                 f"got {self.radii}")
            if self.kind == "torus" and np.isfinite(np.asarray(self.hint, dtype=float)).any():
                raise ValueError(f"obstacle {self.name!r}: {self.kind} obstacles are supported without a contact hint "
                                 "only (the shortest way round)")
            object.__setattr__(self, "radii", tuple(float(r) for r in self.radii))
            object.__setattr__(self, "radius", min(self.radii) if size == 3 else self.radii[1])
        if not self.radius > 0:
            raise ValueError(f"obstacle {self.name!r}: radius must be positive, got {self.radius}")
        object.__setattr__(self, "transform", readonly(np.asarray(self.transform, dtype=float).reshape(4, 4)))
        object.__setattr__(self, "hint", readonly(np.asarray(self.hint, dtype=float).reshape(3)))


@dataclass(frozen=True, eq=False)
class ScholzPath:
    """The ordered elements of a Scholz2015GeometryPath (points first and last)."""

    elements: tuple

    def __post_init__(self):
        object.__setattr__(self, "elements", tuple(self.elements))
        el = self.elements
        if sum(isinstance(e, ScholzPoint) for e in el) < 2:
            raise ValueError("a Scholz2015GeometryPath needs at least two path points")
        if not isinstance(el[0], ScholzPoint) or not isinstance(el[-1], ScholzPoint):
            raise ValueError("a Scholz2015GeometryPath must begin and end with a path point")

    @property
    def points(self) -> tuple[ScholzPoint, ...]:
        return tuple(e for e in self.elements if isinstance(e, ScholzPoint))

    @property
    def obstacles(self) -> tuple[ScholzObstacle, ...]:
        return tuple(e for e in self.elements if isinstance(e, ScholzObstacle))


@dataclass(frozen=True, eq=False)
class ScholzMusculotendon(Musculotendon):
    """A musculotendon unit whose path is a :class:`ScholzPath` (``points`` is empty)."""

    scholz_path: ScholzPath | None = None

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.scholz_path, ScholzPath):
            raise ValueError(f"unit {self.name!r}: scholz_path must be a ScholzPath")

    def own_path_lengths_and_moment_arms(self, model, q, need_moment_arms: bool = True, kin=None):
        """L (N,) and R (N, n_q) (None without moment arms): see :func:`scholz_path_lengths_and_moment_arms`
        (called by ``lengths_and_moment_arms`` through ``musculotendon.with_own_paths``, with the frames'
        kinematics ``kin`` of q computed once for all such units)."""
        return scholz_path_lengths_and_moment_arms(model, self, q, kin, need_moment_arms)


# -- one obstacle between two points (obstacle frame) -----------------------------------------------------

def _closest_on_segment(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """The point of each segment p1 p2 nearest the origin."""
    d = p2 - p1
    dd = np.einsum("ni,ni->n", d, d)
    s = np.clip(-np.einsum("ni,ni->n", p1, d) / np.where(dd > 0, dd, 1.0), 0.0, 1.0)
    return p1 + s[:, None] * d


def _rows(x) -> np.ndarray:
    return np.ascontiguousarray(np.atleast_2d(np.asarray(x, dtype=float)))


def _sense_and_side(kind: str, hint: Any, p1: Any, p2: Any):
    from osim_emb.paths._scholz_kernels import wrap_sense_batch
    return wrap_sense_batch(kind == "cylinder", np.asarray(hint, dtype=float).reshape(3), _rows(p1), _rows(p2))


def wraps_short_side(kind: str, hint: Any, p1: Any, p2: Any) -> np.ndarray:
    """(N,) True where the hint lies on the side of the centre (axis) that the segment p1 p2 passes (obstacle
    frame): the path takes the short side there, the long way round elsewhere (compiled,
    :mod:`osim_emb.paths._scholz_kernels`)."""
    return _sense_and_side(kind, hint, p1, p2)[1]


def wrap_sense(kind: str, radius: float, hint: Any, p1: Any, p2: Any) -> np.ndarray:
    """(N, 3) the axis about which the path p1 -> obstacle -> p2 turns (obstacle frame).

    The path goes round the side of the obstacle where the hint lies: the short side (lifted off,
    straight, where the segment misses the obstacle) when the straight segment passes on the
    hint's side of the centre (axis), the long way round otherwise -- what OpenSim's solver
    reaches from a zero-length geodesic at the hint.  Without a hint (NaN), the short side: the
    cable starts lifted off and touches down where the segment meets the obstacle.
    """
    return _sense_and_side(kind, hint, p1, p2)[0]


def obstacle_path(kind: str, radius: float, hint: Any, p1: Any, p2: Any, sense: Any = None):
    """The path p1 -> obstacle -> p2 (obstacle frame, (N, 3)) on the side the hint picks (:func:`wrap_sense`).

    ``sense`` (N, 3), when given, fixes the turning sense instead: the path turns about the plane's
    normal on the side of ``sense`` (a continuous choice while the plane turns, used by the
    multi-obstacle solver).  Returns (length, t1, t2, wrapped): t1, t2 (N, 3) the contact points
    (NaN where the path is straight).  Raises where an end point is inside the obstacle.  Compiled, row by row
    (:func:`osim_emb.paths._scholz_kernels.closed_form_row`).
    """
    from osim_emb.paths._scholz_kernels import obstacle_path_batch
    p1, p2 = _rows(p1), _rows(p2)
    has_sense = sense is not None
    sense = np.ascontiguousarray(np.broadcast_to(sense, p1.shape), dtype=float) if has_sense else p1
    length, t1, t2, wrapped, inside = obstacle_path_batch(kind == "cylinder", float(radius),
                                                          np.asarray(hint, dtype=float).reshape(3), p1, p2, sense,
                                                          has_sense)
    if inside.any():
        raise ValueError(f"a path point is inside the {kind} obstacle (radius {radius:g}): no path round it")
    return length, t1, t2, wrapped


# -- a span: end points and obstacles (ground frame) ------------------------------------------------------

def _obstacle_in_ground(ob: ScholzObstacle, rot: np.ndarray, org: np.ndarray, a: np.ndarray, b: np.ndarray,
                        sense: Any = None):
    """obstacle_path for ground points a, b (N, 3) with the obstacle's frame (rot, org): length, t1, t2 (ground),
    wrapped."""
    p1 = np.einsum("nji,nj->ni", rot, a - org)
    p2 = np.einsum("nji,nj->ni", rot, b - org)
    if ob.kind in INTEGRATED_KINDS:
        from osim_emb.paths.geodesic import surface_of, surface_path
        length, t1, t2, wrapped = surface_path(surface_of(ob.kind, ob.radii), ob.hint, p1, p2)
    else:
        length, t1, t2, wrapped = obstacle_path(ob.kind, ob.radius, ob.hint, p1, p2, sense)
    return (length, np.einsum("nij,nj->ni", rot, t1) + org, np.einsum("nij,nj->ni", rot, t2) + org, wrapped)


def _obstacle_arrays(obstacles):
    """Kind codes, radii (an ellipsoid's smallest, a torus's tube), surface constants and hints of obstacles, as the
    kernels of :mod:`osim_emb.paths._scholz_kernels` read them."""
    from osim_emb.paths._scholz_kernels import CYLINDER, ELLIPSOID, SPHERE, TORUS
    codes = {"sphere": SPHERE, "cylinder": CYLINDER, "ellipsoid": ELLIPSOID, "torus": TORUS}
    m = len(obstacles)
    kinds, radii = np.zeros(m, dtype=np.int64), np.ones(m)
    consts, hints = np.zeros((m, 3)), np.full((m, 3), np.nan)
    for k, ob in enumerate(obstacles):
        if ob is None:
            continue
        kinds[k], radii[k], hints[k] = codes[ob.kind], ob.radius, ob.hint
        if ob.kind in INTEGRATED_KINDS:
            from osim_emb.paths.geodesic import surface_of
            c = surface_of(ob.kind, ob.radii).constants
            consts[k, :len(c)] = c
    return kinds, radii, consts, hints


def span_paths(a: np.ndarray, b: np.ndarray, obstacles: Sequence[ScholzObstacle], frames: Sequence[tuple],
               tolerance: float = 1e-10, max_iterations: int = 100):
    """The stationary path a -> obstacles -> b (ground, (N, 3)): (length (N,), [(t1, t2, wrapped)] per obstacle).

    ``frames[i] = (rot (N, 3, 3), org (N, 3))``: obstacle frame -> ground.  With several obstacles,
    Newton's method over one point X_j on each joining straight segment, X_j in the plane between
    obstacles j and j + 1 (normal along their origins' line, half way across the gap).  Each
    obstacle's turning sense is fixed from its neighbours' hints (as OpenSim's solver starts);
    where that does not converge, the sense follows the hint at every step.
    """
    k = len(obstacles)
    if k == 0:
        return np.linalg.norm(b - a, axis=-1), []
    if k == 1:
        length, t1, t2, w = _obstacle_in_ground(obstacles[0], *frames[0], a, b)
        return length, [(t1, t2, w)]
    if any(ob.kind == "torus" for ob in obstacles):
        raise ValueError(f"obstacles {[ob.name for ob in obstacles]}: a torus obstacle must be alone between two "
                         "path points")
    shortest = all(np.isnan(ob.hint).any() for ob in obstacles)
    from osim_emb.paths._scholz_kernels import span_batch
    from osim_emb.paths.geodesic import STEPS
    kinds, radii, consts, hints = _obstacle_arrays(obstacles)
    rot = np.ascontiguousarray(np.stack([np.broadcast_to(r, (a.shape[0], 3, 3)) for r, _ in frames]), dtype=float)
    org = np.ascontiguousarray(np.stack([np.broadcast_to(o, a.shape) for _, o in frames]), dtype=float)
    length, lengths, t1, t2, wrapped, ends, done, status, mismatch, failed = span_batch(
        np.ascontiguousarray(a, dtype=float), np.ascontiguousarray(b, dtype=float), rot, org, kinds, radii, consts,
        hints, shortest, tolerance, max_iterations, STEPS)
    if status.any():
        row = int(np.flatnonzero(status)[0])
        ob = obstacles[failed[row]]
        if status[row] == 1:  # an end point inside an obstacle, or a Newton iterate between two obstacles in one
            where = "" if ob.kind in INTEGRATED_KINDS else f" {ob.kind} obstacle (radius {ob.radius:g})"
            raise ValueError(f"a path point is inside the{where or ' obstacle'}: no path round it, or the solver's "
                             "point between two obstacles fell inside one (obstacles that nearly meet along the "
                             "path; a cylinder is infinite here)")
        from osim_emb.paths.geodesic import failure_message
        raise RuntimeError(failure_message(int(status[row]), mismatch[status == status[row]].max()))
    if not done.all():
        raise RuntimeError(f"the multi-obstacle path did not converge in {max_iterations} Newton steps "
                           f"in {int((~done).sum())} of {len(done)} configurations")
    nan = np.full(3, np.nan)
    terms = [(lengths[:, i], np.where(wrapped[:, i, None], t1[:, i], nan), np.where(wrapped[:, i, None], t2[:, i], nan),
              wrapped[:, i]) for i in range(k)]
    ends = [ends[:, j] for j in range(k + 1)]
    for j in range(1, k):  # the free points must lie on the straight segments between the obstacles
        _, _, t2, w0 = terms[j - 1]
        _, t1, _, w1 = terms[j]
        before = np.where(w0[:, None], t2, ends[j - 1])
        after = np.where(w1[:, None], t1, ends[j + 1])
        if (np.einsum("ni,ni->n", ends[j] - before, after - ends[j]) < -1e-12).any():
            raise ValueError(f"obstacles {obstacles[j - 1].name!r} and {obstacles[j].name!r}: the path between them "
                             "does not cross the plane half way across their gap (overlapping obstacles?)")
    return length, [(t[1], t[2], t[3]) for t in terms]


# -- a unit over a batch of configurations ----------------------------------------------------------------

_PROGRAMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_BODY_TABLES: dict = {}  # id(Model) -> (weak reference, geometry._body_table): models are immutable


def _body_table_of(model):
    """geometry._body_table of the model, kept while the model lives (models are immutable)."""
    from osim_emb.paths.geometry import _body_table
    cached = _BODY_TABLES.get(id(model))
    if cached is None or cached[0]() is not model:
        cached = _BODY_TABLES[id(model)] = (weakref.ref(model, lambda _, k=id(model): _BODY_TABLES.pop(k, None)),
                                            _body_table(model))
    return cached[1]


def _compiled_program(path: ScholzPath, body_index: dict, body_frames: np.ndarray):
    """The arrays :func:`osim_emb.paths._scholz_kernels.unit_batch` reads for ``path``, each slot's frame and the
    moving frames, or None where a torus shares a span (refused by :func:`span_paths`).  Cached per path and body
    table (paths are immutable)."""
    key = (tuple(body_index.items()), body_frames.tobytes())
    cached = _PROGRAMS.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    elements = path.elements
    run, program = [], None
    for e in elements:  # a torus shares no span (span_paths refuses it, naming the obstacles)
        run = [] if isinstance(e, ScholzPoint) else run + [e.kind]
        if len(run) > 1 and "torus" in run:
            break
    else:
        m = len(elements)
        is_point = np.array([isinstance(e, ScholzPoint) for e in elements])
        body = np.array([body_index[e.body] for e in elements], dtype=np.int64)
        location = np.zeros((m, 3))
        transform = np.tile(np.eye(4), (m, 1, 1))
        kind, radius, constants, hint = _obstacle_arrays([None if isinstance(e, ScholzPoint) else e
                                                          for e in elements])
        slot_frames = []
        for k, e in enumerate(elements):
            if isinstance(e, ScholzPoint):
                location[k] = e.location
                slot_frames.append(body_frames[body[k]])
                continue
            transform[k] = e.transform
            slot_frames += [body_frames[body[k]]] * 2
        slot_frames = np.asarray(slot_frames, dtype=np.int64)
        program = ((is_point, body, location, transform, kind, radius, constants, hint), slot_frames,
                   np.array([f for f in np.unique(slot_frames) if f != 0], dtype=np.int64))
    _PROGRAMS[path] = (key, program)
    return program


def scholz_path_lengths_and_moment_arms(model, unit: ScholzMusculotendon, q: Any, kin=None,
                                        need_moment_arms: bool = True):
    """L (N,) and R (N, n_q) of one unit with a Scholz2015GeometryPath (R = -dL/dq)."""
    from osim_emb.core.kinematics import forward_kinematics
    from osim_emb.paths.geometry import PathState, _moment_arm_of_path

    if kin is None:
        q = model.check_configuration(q, tolerance=np.inf)
        kin = forward_kinematics(model, q, order=1 if need_moment_arms else 0)
    body_index, body_frames, body_offsets = _body_table_of(model)
    bt = kin.transforms[:, body_frames] @ body_offsets
    n = kin.transforms.shape[0]
    path = unit.scholz_path
    slots, slot_frames, positions = [], [], []  # per element: its slot(s)
    for e in path.elements:
        if e.body not in body_index:
            raise KeyError(f"unit {unit.name!r}: body {e.body!r} of {e.name!r} does not exist")
    program = _compiled_program(path, body_index, body_frames)
    if program is not None:  # the whole path: one compiled kernel over the rows
        from osim_emb.paths._scholz_kernels import unit_batch
        from osim_emb.paths.geodesic import STEPS
        from osim_emb.paths.wrapping._kernels_muscles import path_moment_arms_kernel
        from osim_emb.paths.wrapping._kernels_path import run_threads
        arrays, frames_of_slots, moving = program
        length, _, seq, pts, status, _, _ = unit_batch(np.ascontiguousarray(bt), *arrays, 1e-10, 100, STEPS)
        if not status.any():  # else the route below, which names the unit, the obstacles and the reason
            if not need_moment_arms:
                return length, None
            # R by the segment formula's kernel, as geometry._moment_arm_of_path
            r = np.zeros((n, kin.jacobian.shape[2]))
            args = (seq, pts, pts, frames_of_slots, moving, np.ascontiguousarray(kin.jacobian))
            if n < 16:
                path_moment_arms_kernel(*args, 0, 1, r)
            else:
                run_threads(path_moment_arms_kernel, args, (r,), n)
            return length, r
    span_a, span_obstacles = None, []
    length = np.zeros(n)
    seq_rows = []  # (slot, active (N,)) in path order
    for e in path.elements:
        t = bt[:, body_index[e.body]]
        if isinstance(e, ScholzPoint):
            pos = np.einsum("nij,j->ni", t[:, :3, :3], e.location) + t[:, :3, 3]
            if span_a is not None:
                frames = [(t_[:, :3, :3] @ ob.transform[:3, :3], np.einsum("nij,j->ni", t_[:, :3, :3],
                           ob.transform[:3, 3]) + t_[:, :3, 3]) for ob, t_, _ in span_obstacles]
                try:
                    span_length, contacts = span_paths(span_a, pos, [ob for ob, _, _ in span_obstacles], frames)
                except (ValueError, RuntimeError) as err:
                    raise type(err)(f"unit {unit.name!r}, obstacles {[ob.name for ob, _, _ in span_obstacles]}: "
                                    f"{err}") from None
                length += span_length
                for (_, _, first_slot), (t1, t2, w) in zip(span_obstacles, contacts):
                    positions[first_slot] = np.where(w[:, None], t1, np.nan)
                    positions[first_slot + 1] = np.where(w[:, None], t2, np.nan)
                    seq_rows[first_slot] = (first_slot, w)
                    seq_rows[first_slot + 1] = (first_slot + 1, w)
            slot = len(positions)
            positions.append(pos)
            slot_frames.append(body_frames[body_index[e.body]])
            seq_rows.append((slot, np.ones(n, dtype=bool)))
            span_a, span_obstacles = pos, []
        else:
            slot = len(positions)
            span_obstacles.append((e, t, slot))
            for _ in range(2):
                positions.append(np.full((n, 3), np.nan))
                slot_frames.append(body_frames[body_index[e.body]])
                seq_rows.append((len(seq_rows), np.zeros(n, dtype=bool)))
    if not need_moment_arms:
        return length, None
    active = np.stack([a for _, a in seq_rows], axis=1)  # (N, S)
    order = np.argsort(~active, axis=1, kind="stable")  # active slots first, in path order
    seq = np.where(np.take_along_axis(active, order, axis=1), order, -1)
    state = PathState(unit, seq, np.asarray(slot_frames), [], np.stack(positions, axis=1), length)
    return length, _moment_arm_of_path(model, kin, state)
