"""Path-level wrapping: OpenSim 4.6's GeometryPath algorithm for a batch of configurations.

The algorithm is the compiled kernel :func:`osim_emb.paths.wrapping._kernels_path._config_path`
(numba, one configuration at a time, configurations shared among threads); this module packs
the PathWraps into its arrays (:func:`pack_path_wraps`) and returns its outputs as a
:class:`WrappedPath`.

``wrap_path`` takes, for N configurations, the ground positions of all points of a
path's PathPointSet, which conditional points are active, and the ground
transform of each wrap object's frame, and builds the wrapped path exactly as
OpenSim's GeometryPath::computePath / applyWrapObjects does:

* The path starts as the active points, in order.
* Passes over the PathWraps (one pass with one PathWrap, else up to 8; a pass
  stops the loop when the path length changed by less than 5e-4 m from the
  previous pass).  For each PathWrap, in the current order:
    - its two tangent points are taken out of the path;
    - its ``range`` (1-based indices into the full PathPointSet, < 1 = first/last)
      is narrowed to the first and last *active* points in it; if there is none,
      OpenSim abandons the whole wrapping step (the path is left as it is);
    - every segment of the current path between those two points (which may
      include other wrap objects' tangent points) is wrapped, except a segment
      joining two tangent points of the same wrap object; the first segment that
      returns MANDATORY_WRAP is taken; otherwise among the WRAPPED segments the one
      that lengthens the path least (|P1 r1| + arc + |r2 P2| - |P1 P2|), first
      one on ties;
    - the chosen tangent points are inserted between that segment's ends.
* After the first pass, if the first PathWrap's last tried segment returned
  NO_WRAP and the second's INSIDE_RADIUS, the first two PathWraps swap places
  (and the first one's tangent points leave the path).
* The length sums the straight segments, except r1 -> r2 of one wrap object,
  which counts the wrap length.

Wrap points and the stale cache (``opensim_compat``)
-----------------------------------------------------
A tangent point is an OpenSim ``Point``; ``Point::getLocationInGround`` caches its
ground position the first time it is asked for in a pose (a Position-stage cache
variable), and applyWrapObjects never invalidates it when a later pass moves the
point (``PathWrapPoint::setLocation`` only updates the local location).  The
wrapping itself uses fresh positions (``WrapObject::wrapPathSegment`` reads
``getLocation``), but two places read the cached ground position:

* ``GeometryPath::calcLengthAfterPathComputation`` -- the pass-end lengths
  (hence the 5e-4 m convergence test) and the final length;
* ``GeometryPath::calcPathLengthChange`` (through ``Point::calcDistanceBetween``)
  -- the choice between several WRAPPED segments.

A tangent point is first asked for at the end of the first pass in which it is in
the path (or just before, by another wrap's calcPathLengthChange, with the same
value), so with two or more wrap objects whose tangent points move between passes
OpenSim sums straight segments to *old* tangent points with the *new* wrap
lengths.  ``opensim_compat=True`` reproduces this (each tangent point keeps the
ground position it had when first queried); the default uses the current
positions everywhere, i.e. the length of the path OpenSim actually reports in
``getCurrentPath``.

Objects' previous-call state: OpenSim's PathWrap keeps the previous wrap result;
for spheres, cylinders and tori it never reaches the output (see
``docs/wrapping.md``); ellipsoids are called here as a freshly constructed
PathWrap would call them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from osim_emb.paths.wrapping.base import WrapObject

__all__ = ["PathWrapSpec", "WrappedPath", "wrap_path", "pack_path_wraps", "MAX_PASSES", "CONVERGENCE_TOL"]

MAX_PASSES = 8
CONVERGENCE_TOL = 0.0005


@dataclass(frozen=True)
class PathWrapSpec:
    """One <PathWrap> of a GeometryPath."""

    wrap_object: WrapObject
    method: str = "hybrid"  # hybrid | midpoint | axial (used by ellipsoids)
    range: tuple[int, int] = (-1, -1)  # 1-based PathPointSet indices; < 1: first / last point


@dataclass
class WrappedPath:
    """Wrapped paths of N configurations (P path points, W PathWraps, S = P + 2W)."""

    sequence: np.ndarray  # (N, S) int: path point p in [0, P) or P + 2w (+0: r1, +1: r2); -1 pads
    tangent_points: np.ndarray  # (N, W, 2, 3) r1, r2 in the wrap object's frame (NaN if not in the path)
    wrap_length: np.ndarray  # (N, W) surface length r1 -> r2 (0 where not wrapped)
    wrapped: np.ndarray  # (N, W) bool
    length: np.ndarray  # (N,) total path length
    passes: np.ndarray = field(default=None)  # (N,) number of passes made over the PathWraps
    #: (N, W, 2, 3) ground positions of the tangent points as OpenSim's getLocationInGround returns them
    #: (compat mode: the stale first-queried values; default mode: None, i.e. the current positions)
    queried_ground: np.ndarray | None = None

    def tangent_points_in_ground(self, wrap_to_ground: np.ndarray) -> np.ndarray:
        """(N, W, 2, 3) tangent points in ground (NaN where not in the path)."""
        R = wrap_to_ground[..., :3, :3]
        t = wrap_to_ground[..., :3, 3]
        return np.einsum("nwij,nwkj->nwki", R, self.tangent_points) + t[:, :, None, :]

    def points_in_ground(self, points_ground: np.ndarray, wrap_to_ground: np.ndarray) -> np.ndarray:
        """(N, S, 3) ground positions along ``sequence`` (NaN in the padding)."""
        n = self.sequence.shape[0]
        tg = self.tangent_points_in_ground(wrap_to_ground).reshape(n, -1, 3)
        allp = np.concatenate([points_ground, tg], axis=1)
        seq = self.sequence
        out = np.take_along_axis(allp, np.clip(seq, 0, None)[..., None], axis=1)
        out[seq < 0] = np.nan
        return out


def wrap_path(points_ground, point_active, wrap_to_ground, specs, opensim_compat: bool = False) -> WrappedPath:
    """Wrap a path for N configurations, as OpenSim 4.6's GeometryPath does.

    Parameters
    ----------
    points_ground : (N, P, 3) ground positions of all PathPointSet points.
    point_active : (N, P) bool, whether each point is active (conditional points).
    wrap_to_ground : (N, W, 4, 4) ground transform of each PathWrap's wrap-object frame
        (body transform times the wrap object's ``transform_in_body``).
    specs : sequence of W :class:`PathWrapSpec`, in PathWrapSet order.
    opensim_compat : reproduce OpenSim's stale ground positions of tangent points
        (see the module docstring); default False: current positions.

    Raises ValueError for a PathWrap the kernel cannot take (see :func:`pack_path_wraps`).
    """
    pg = np.asarray(points_ground, dtype=float)
    if pg.ndim == 2:
        pg = pg[None]
    n, p = pg.shape[:2]
    pa = np.broadcast_to(np.asarray(point_active, dtype=bool), (n, p))
    specs = list(specs)
    W = len(specs)
    T = np.asarray(wrap_to_ground, dtype=float).reshape(n, W, 4, 4) if W else np.zeros((n, 0, 4, 4))
    return _wrap_path_kernel(pg, pa, T, pack_path_wraps(specs, p), bool(opensim_compat))


def pack_path_wraps(specs, P):
    """The PathWraps of a path of P points as the arrays the compiled kernel takes.

    Raises ValueError (naming the wrap object and the reason) for a wrap object of another class
    (or a subclass that redefines ``wrap_segment``), an unknown ellipsoid method, or an active
    PathWrap whose range is outside the path.
    """
    from osim_emb.paths.wrapping.cylinder import WrapCylinder
    from osim_emb.paths.wrapping.ellipsoid import WrapEllipsoid, _method_name
    from osim_emb.paths.wrapping.sphere import WrapSphere
    from osim_emb.paths.wrapping.torus import WrapTorus
    W = len(specs)
    otype = np.zeros(W, dtype=np.int64)
    oprm = np.zeros((W, 3))
    oax = np.zeros(W, dtype=np.int64)
    osg = np.zeros(W, dtype=np.int64)
    ometh = np.zeros(W, dtype=np.int64)
    oact = np.zeros(W, dtype=np.bool_)
    ows = np.zeros(W, dtype=np.int64)
    owe = np.zeros(W, dtype=np.int64)
    kinds = (WrapSphere, WrapCylinder, WrapTorus, WrapEllipsoid)
    for k, spec in enumerate(specs):
        o = spec.wrap_object
        kind = next((c for c in kinds if isinstance(o, c)), None)
        if kind is None or type(o).wrap_segment is not kind.wrap_segment:
            raise ValueError(f"wrap object {getattr(o, 'name', o)!r} of class {type(o).__name__}: the compiled "
                             "path takes WrapSphere, WrapCylinder, WrapTorus and WrapEllipsoid objects only")
        if kind is WrapSphere:
            otype[k], oprm[k, 0] = 0, o.radius
        elif kind is WrapCylinder:
            otype[k], oprm[k, :2] = 1, (o.radius, o.length)
        elif kind is WrapTorus:
            otype[k], oprm[k, :2] = 2, (o.inner_radius, o.outer_radius)
        else:
            otype[k], oprm[k] = 3, o.dimensions
            try:
                ometh[k] = {"hybrid": 0, "midpoint": 1, "axial": 2}[_method_name(spec.method)]
            except ValueError as err:
                raise ValueError(f"PathWrap over {o.name!r}: {err}") from None
        oax[k], osg[k] = o.wrap_axis_sign
        oact[k] = bool(o.active)
        lo, hi = spec.range
        ws = lo - 1 if lo >= 1 else 0
        we = hi - 1 if hi >= 1 else P - 1
        if oact[k] and (ws > P - 1 or we > P - 1):
            raise ValueError(f"PathWrap over {o.name!r}: range {tuple(spec.range)} is outside the path's {P} points")
        ows[k], owe[k] = ws, we
    # object identity: two PathWraps on the same wrap object share tangent-point rules
    ids = []
    for s in specs:
        for k, prev in enumerate(specs[: len(ids)]):
            if prev.wrap_object == s.wrap_object:
                ids.append(ids[k])
                break
        else:
            ids.append(len(ids))
    code_obj = np.full(P + 2 * W + 1, -1, dtype=np.int64)
    for k in range(W):
        code_obj[1 + P + 2 * k: 1 + P + 2 * k + 2] = ids[k]
    return otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj


def _wrap_path_kernel(pg, pa, T, packed, compat) -> WrappedPath:
    from osim_emb.paths.wrapping._kernels_path import path_outputs, run_threads, wrap_paths_kernel
    # C-contiguous and writable, so that the kernel is compiled (and cached) for one signature
    pg = np.require(pg, dtype=float, requirements=["C", "W"])
    pa = np.require(pa, dtype=np.bool_, requirements=["C", "W"])
    T = np.require(T, dtype=float, requirements=["C", "W"])
    otype, oprm, oax, osg, ometh, oact, ows, owe, code_obj = packed
    n, P, W = pg.shape[0], pg.shape[1], otype.shape[0]
    offsets = [np.array([0, k], dtype=np.int64) for k in (P, W, P + 2 * W, code_obj.shape[0])]
    out = path_outputs(n, 1, P + 2 * W, W)
    run_threads(wrap_paths_kernel, (pg, pa, T, *offsets, *packed, compat), out, n)
    seq, r, wlen, in_path, length, passes, cache, cached = out
    return _wrapped_path(T, seq, r, wlen, in_path, length[:, 0], passes[:, 0], cache, cached, compat)


def _wrapped_path(T, seq, r, wlen, in_path, length, passes, cache, cached, compat) -> WrappedPath:
    """The WrappedPath of the kernel's outputs (masks as in :func:`wrap_path`)."""
    tp = np.where(in_path[..., None, None], r, np.nan)
    wl = np.where(in_path, wlen, 0.0)
    queried = None
    if compat and T.shape[1]:
        fresh = np.einsum("nwij,nwkj->nwki", T[..., :3, :3], r) + T[:, :, None, :3, 3]
        queried = np.where(cached[..., None], cache, fresh)
        queried = np.where(in_path[..., None, None], queried, np.nan)
    return WrappedPath(seq, tp, wl, in_path, length, passes, queried)
