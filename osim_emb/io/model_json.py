"""The package's own model file: a versioned JSON description of an empirically-based model.

Format ``osim-emb-model``, version 1 (see ``docs/model_format.md``): every
number is written with ``repr`` so that a saved model loads back identical;
infinite bounds are written as ``null``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..functions.base import function_from_dict
from ..model import Body, DependentCoordinate, GeneralizedCoordinate, Joint, Model
from ..muscles.path import Musculotendon, PathPoint, PathWrap

__all__ = ["FORMAT", "FORMAT_VERSION", "model_to_dict", "model_from_dict", "save_model", "load_model",
           "write_atomically"]

FORMAT = "osim-emb-model"
FORMAT_VERSION = 1


def _bound(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def _unbound(x: float | None, sign: float) -> float:
    return sign * np.inf if x is None else float(x)


def _range(r) -> list:
    return [_bound(r[0]), _bound(r[1])]


def _unrange(r) -> tuple[float, float]:
    return (_unbound(r[0], -1.0), _unbound(r[1], 1.0))


def _wrap_to_dict(w: Any) -> dict:
    d = {f.name: getattr(w, f.name) for f in dataclasses.fields(w) if f.name != "extra"}
    d = {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}
    return {"type": type(w).__name__, **d}


def _wrap_from_dict(d: dict) -> Any:
    from .model_parts import WRAP_CLASSES
    d = dict(d)
    cls = WRAP_CLASSES()[d.pop("type")]
    return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})


def _params_to_dict(p: Any) -> Any:
    return None if p is None else p.to_dict()


def _params_from_dict(d: Any) -> Any:
    if d is None:
        return None
    from ..muscles.hill import muscle_from_dict
    return muscle_from_dict(d)


def model_to_dict(model: Model) -> dict:
    """A JSON-compatible dict of the model (the versioned file format)."""
    ex = model.extras
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": model.name,
        "gravity": model.gravity.tolist(),
        "coordinates": [{"name": c.name, "range": _range(c.range), "default": c.default,
                         "motion_type": c.motion_type, "clamped": c.clamped, "default_speed": c.default_speed}
                        for c in model.coordinates],
        "joints": [{"name": j.name, "parent": j.parent, "kind": j.kind, "axis": j.axis.tolist(),
                    "offset": j.offset.tolist(), "variable": j.variable.to_dict(), "source": j.source}
                   for j in model.joints],
        "bodies": [{"name": b.name, "frame": b.frame, "mass": b.mass, "com": b.com.tolist(),
                    "inertia": b.inertia.tolist(), "frame_to_body": b.frame_to_body.tolist()} for b in model.bodies],
        "dependent_coordinates": [{"name": d.name, "function": d.function.to_dict(), "kind": d.kind,
                                   "source": d.source, "range": _range(d.range), "default": d.default,
                                   "motion_type": d.motion_type} for d in model.dependent_coordinates],
        "wrap_objects": [_wrap_to_dict(w) for w in model.wrap_objects],
        "muscles": [{"name": m.name, "type": m.type_name,
                     "points": [{"name": p.name, "body": p.body, "location": p.location.tolist(), "kind": p.kind,
                                 "condition": None if p.condition is None else p.condition.to_dict(),
                                 "active_range": None if p.active_range is None else list(p.active_range),
                                 "coordinate": p.coordinate, "source_body": p.source_body} for p in m.points],
                     "wraps": [{"wrap_object": w.wrap_object, "method": w.method, "range": list(w.range)}
                               for w in m.wraps],
                     "parameters": _params_to_dict(m.parameters)} for m in model.muscles],
        "extras": {
            "source": str(ex.get("source", "")),
            "markers": [[n, b, np.asarray(l).tolist()] for n, b, l in ex.get("markers", [])],
            "forces": [list(f) for f in ex.get("forces", [])],
            "conversion": list(ex.get("conversion", [])),
            "skipped": [dataclasses.asdict(s) if dataclasses.is_dataclass(s) else s for s in ex.get("skipped", [])],
        },
        # the OpenSim document (as .osim text, lossless): what export, rhythms and OpenSim references need
        "osim_document": _document_text(ex.get("document")),
    }


def _document_text(doc: Any) -> str | None:
    if doc is None:
        return None
    from .osim_writer import document_to_string
    return document_to_string(doc)


def model_from_dict(d: dict) -> Model:
    """Rebuild a model from :func:`model_to_dict`; raises ValueError on a wrong format or version."""
    if d.get("format") != FORMAT:
        raise ValueError(f"not an {FORMAT} file (format field is {d.get('format')!r})")
    if d.get("version") != FORMAT_VERSION:
        raise ValueError(f"{FORMAT} version {d.get('version')} is not supported (this package reads {FORMAT_VERSION})")
    coords = [GeneralizedCoordinate(c["name"], _unrange(c["range"]), c["default"], c["motion_type"], c["clamped"],
                                    c["default_speed"]) for c in d["coordinates"]]
    joints = [Joint(j["name"], j["parent"], j["kind"], np.array(j["axis"]), function_from_dict(j["variable"]),
                    np.array(j["offset"]), j["source"]) for j in d["joints"]]
    bodies = [Body(b["name"], b["frame"], b["mass"], np.array(b["com"]), np.array(b["inertia"]),
                   np.array(b["frame_to_body"])) for b in d["bodies"]]
    deps = [DependentCoordinate(x["name"], function_from_dict(x["function"]), x["kind"], x["source"],
                                _unrange(x["range"]), x["default"], x["motion_type"]) for x in d["dependent_coordinates"]]
    wraps = [_wrap_from_dict(w) for w in d["wrap_objects"]]
    muscles = []
    for m in d["muscles"]:
        pts = [PathPoint(p["name"], p["body"], np.array(p["location"]), p["kind"],
                         None if p["condition"] is None else function_from_dict(p["condition"]),
                         None if p["active_range"] is None else tuple(p["active_range"]), p["coordinate"],
                         p["source_body"]) for p in m["points"]]
        pw = [PathWrap(w["wrap_object"], w["method"], tuple(w["range"])) for w in m["wraps"]]
        muscles.append(Musculotendon(m["name"], m["type"], pts, pw, _params_from_dict(m["parameters"])))
    ex = d.get("extras", {})
    extras = {"source": ex.get("source", ""), "markers": [(n, b, np.array(l)) for n, b, l in ex.get("markers", [])],
              "forces": [tuple(f) for f in ex.get("forces", [])], "conversion": ex.get("conversion", []),
              "skipped": ex.get("skipped", [])}
    if d.get("osim_document"):
        from .osim_reader import read_osim_string
        extras["document"] = read_osim_string(d["osim_document"], strict=False,
                                              name=str(ex.get("source", "")) or d["name"])
    return Model(d["name"], coords, joints, bodies, np.array(d["gravity"]), deps, muscles, wraps, extras)


def write_atomically(path: str | Path, text: str, *, protect: Sequence[str | Path] = ()) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder (never half-written).

    Refuses to write over any path in ``protect`` (the inputs of the command).
    """
    path = Path(path)
    for p in protect:
        if Path(p).exists() and path.exists() and os.path.samefile(p, path):
            raise ValueError(f"refusing to overwrite the input file {p}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_model(model: Model, path: str | Path, *, protect: Sequence[str | Path] = ()) -> None:
    """Save a model as ``osim-emb-model`` JSON, atomically."""
    write_atomically(path, json.dumps(model_to_dict(model), indent=1), protect=protect)


def load_model(path: str | Path) -> Model:
    """Load a model saved by :func:`save_model`."""
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    return model_from_dict(d)
