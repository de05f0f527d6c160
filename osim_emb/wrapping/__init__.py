"""Muscle-path wrapping as in OpenSim 4.6, vectorized over batches of configurations.

Wrap objects (one straight segment at a time, in the object's frame):
:class:`WrapSphere`, :class:`WrapCylinder`, :class:`WrapTorus`, and
``osim_emb.wrapping.ellipsoid.WrapEllipsoid``.  The path algorithm of OpenSim's
GeometryPath: :func:`wrap_path`.  See ``docs/wrapping.md``.
"""

from .base import WrapObject, WrapSegmentResult, WrapStatus, euler_xyz_body_fixed, parse_quadrant
from .cylinder import WrapCylinder
from .path import PathWrapSpec, WrappedPath, wrap_path
from .sphere import WrapSphere
from .torus import WrapTorus

__all__ = ["WrapObject", "WrapSegmentResult", "WrapStatus", "euler_xyz_body_fixed", "parse_quadrant",
           "WrapSphere", "WrapCylinder", "WrapTorus", "PathWrapSpec", "WrappedPath", "wrap_path"]
