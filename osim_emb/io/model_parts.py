"""Build the model's musculotendon parameters and wrap objects from the document records."""

from __future__ import annotations

from typing import Any

import numpy as np

from osim_emb.io.function_xml import parse_function
from osim_emb.io.osim_document import OsimDocument, WrapObjectSpec

__all__ = ["muscle_parameters", "wrap_object_from_spec", "WRAP_CLASSES"]


def muscle_parameters(element: Any, doc: OsimDocument):
    """The force model of a muscle element (Thelen2003, Schutte1993, Millard2012, plain path actuators)."""
    from osim_emb.io.muscle_xml import hill_muscle_from_xml
    from osim_emb.io.errors import OsimImportError

    def fail(e, reason):
        return OsimImportError(doc.path, e, reason)

    return hill_muscle_from_xml(element, lambda e: parse_function(e, fail), doc.defaults.get(element.tag))


def _classes() -> dict[str, type]:
    from osim_emb.paths.wrapping.cylinder import WrapCylinder
    from osim_emb.paths.wrapping.ellipsoid import WrapEllipsoid
    from osim_emb.paths.wrapping.sphere import WrapSphere
    from osim_emb.paths.wrapping.torus import WrapTorus
    return {"WrapSphere": WrapSphere, "WrapCylinder": WrapCylinder, "WrapEllipsoid": WrapEllipsoid,
            "WrapTorus": WrapTorus}


WRAP_CLASSES = _classes


def wrap_object_from_spec(w: WrapObjectSpec):
    """The wrap object of a document record."""
    cls = _classes()[w.type]
    params = {k: (tuple(float(x) for x in v) if isinstance(v, (tuple, list, np.ndarray)) else float(v))
              for k, v in w.parameters.items()}
    return cls(name=w.name, body=w.body, xyz_body_rotation=tuple(float(x) for x in w.xyz_body_rotation),
               translation=tuple(float(x) for x in w.translation), quadrant=w.quadrant, active=w.active, **params)
