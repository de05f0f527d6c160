"""Muscle-path wrapping as in OpenSim 4.6, for batches of configurations.

Each algorithm is written once, as a compiled (numba) kernel (``_kernels*.py``); the classes
and functions here hold the parameters, pack arrays and call the kernels.

Wrap objects (one straight segment at a time, in the object's frame):
:class:`WrapSphere`, :class:`WrapCylinder`, :class:`WrapTorus`, and
``osim_emb.paths.wrapping.ellipsoid.WrapEllipsoid``.  The path algorithm of OpenSim's
GeometryPath: :func:`wrap_path`.  See ``docs/wrapping.md``.
"""

from osim_emb.paths.wrapping.base import WrapObject, WrapSegmentResult, WrapStatus, euler_xyz_body_fixed, parse_quadrant
from osim_emb.paths.wrapping.cylinder import WrapCylinder
from osim_emb.paths.wrapping.path import PathWrapSpec, WrappedPath, wrap_path
from osim_emb.paths.wrapping.sphere import WrapSphere
from osim_emb.paths.wrapping.torus import WrapTorus

__all__ = ["WrapObject", "WrapSegmentResult", "WrapStatus", "euler_xyz_body_fixed", "parse_quadrant",
           "WrapSphere", "WrapCylinder", "WrapTorus", "PathWrapSpec", "WrappedPath", "wrap_path"]
