"""Read wrap objects and path inputs from a live OpenSim model (needs the ``opensim`` package).

Used by the tests to compare :func:`osim_emb.paths.wrapping.path.wrap_path` with OpenSim
on the same kinematics: the ground positions of the path points and the ground
transforms of the wrap frames are taken from OpenSim, so that only the wrapping
is compared.

    specs = path_specs_from_opensim(muscle.getGeometryPath())
    pg, active, T = path_inputs_from_opensim(state, muscle.getGeometryPath())
    wp = wrap_path(pg, active, T, specs, opensim_compat=True)   # wp.length[0] == muscle.getLength(state)
"""

from __future__ import annotations

import numpy as np

from osim_emb.paths.wrapping.base import WrapObject
from osim_emb.paths.wrapping.cylinder import WrapCylinder
from osim_emb.paths.wrapping.sphere import WrapSphere
from osim_emb.paths.wrapping.torus import WrapTorus
from osim_emb.paths.wrapping.path import PathWrapSpec

__all__ = ["wrap_object_from_opensim", "path_specs_from_opensim", "path_inputs_from_opensim",
           "transform_to_numpy"]


def _vec3(v) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def transform_to_numpy(X) -> np.ndarray:
    """A SimTK Transform as a 4x4 numpy array."""
    R = X.R()
    p = X.p()
    T = np.eye(4)
    for i in range(3):
        for j in range(3):
            T[i, j] = R.get(i, j)
        T[i, 3] = p[i]
    return T


def wrap_object_from_opensim(wo) -> WrapObject:
    """Our WrapObject (sphere, cylinder, torus, or ellipsoid when available) for an OpenSim one."""
    import opensim as osim

    kind = wo.getConcreteClassName()
    common = dict(name=wo.getName(), body=wo.getFrame().getName(),
                  xyz_body_rotation=_vec3(wo.get_xyz_body_rotation()),
                  translation=_vec3(wo.get_translation()),
                  quadrant=str(wo.get_quadrant()), active=bool(wo.get_active()))
    if common["quadrant"] == "Unassigned":
        common["quadrant"] = "all"
    if kind == "WrapSphere":
        return WrapSphere(**common, radius=osim.WrapSphere.safeDownCast(wo).get_radius())
    if kind == "WrapCylinder":
        c = osim.WrapCylinder.safeDownCast(wo)
        return WrapCylinder(**common, radius=c.get_radius(), length=c.get_length())
    if kind == "WrapTorus":
        t = osim.WrapTorus.safeDownCast(wo)
        return WrapTorus(**common, inner_radius=t.get_inner_radius(), outer_radius=t.get_outer_radius())
    if kind == "WrapEllipsoid":
        from osim_emb.paths.wrapping.ellipsoid import WrapEllipsoid  # written separately; ImportError if absent

        e = osim.WrapEllipsoid.safeDownCast(wo)
        return WrapEllipsoid(**common, dimensions=_vec3(e.get_dimensions()))
    raise NotImplementedError(f"wrap object type {kind}")


def path_specs_from_opensim(geometry_path, cache: dict | None = None) -> list[PathWrapSpec]:
    """The PathWrapSpecs of an OpenSim GeometryPath, in PathWrapSet order.

    ``cache`` (optional dict) shares WrapObject instances between paths, keyed by
    the wrap object's absolute path.
    """
    cache = {} if cache is None else cache
    specs = []
    ws = geometry_path.getWrapSet()
    for i in range(ws.getSize()):
        pw = ws.get(i)
        wo = pw.getWrapObject()
        key = wo.getAbsolutePathString()
        if key not in cache:
            cache[key] = wrap_object_from_opensim(wo)
        specs.append(PathWrapSpec(cache[key], str(pw.get_method()),
                                  (int(pw.getStartPoint()), int(pw.getEndPoint()))))
    return specs


def path_inputs_from_opensim(state, geometry_path):
    """(points_ground (1, P, 3), point_active (1, P), wrap_to_ground (1, W, 4, 4)) at ``state``.

    The state must be realized to Position.  Reads the PathPointSet points'
    ``getLocationInGround`` and each PathWrap's wrap frame: the ground transform of
    the wrap object's frame times its (xyz_body_rotation, translation) pose.
    """
    pps = geometry_path.getPathPointSet()
    P = pps.getSize()
    pg = np.zeros((1, P, 3))
    act = np.zeros((1, P), dtype=bool)
    for i in range(P):
        pt = pps.get(i)
        pg[0, i] = _vec3(pt.getLocationInGround(state))
        act[0, i] = bool(pt.isActive(state))
    ws = geometry_path.getWrapSet()
    W = ws.getSize()
    T = np.zeros((1, W, 4, 4))
    for w in range(W):
        wo = ws.get(w).getWrapObject()
        body = transform_to_numpy(wo.getFrame().getTransformInGround(state))
        obj = _wrap_pose(wo)
        T[0, w] = body @ obj
    return pg, act, T


def _wrap_pose(wo) -> np.ndarray:
    """4x4 transform of an OpenSim wrap object's frame in its body (its xyz_body_rotation, translation)."""
    from osim_emb.paths.wrapping.base import euler_xyz_body_fixed

    t = np.eye(4)
    t[:3, :3] = euler_xyz_body_fixed(_vec3(wo.get_xyz_body_rotation()))
    t[:3, 3] = _vec3(wo.get_translation())
    return t
