"""The package's own model file: a versioned JSON description of an empirically-based model.

Format ``osim-emb-model``, version 1 (see ``docs/model_format.md``): every
number is written with ``repr`` so that a saved model loads back identical;
infinite bounds are written as ``null``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from osim_emb.core.functions.base import function_from_dict
from osim_emb.model import Body, DependentCoordinate, GeneralizedCoordinate, Joint, Model
from osim_emb.io.outputs import write_atomically
from osim_emb.paths.musculotendon import Musculotendon, PathPoint, PathWrap

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
    from osim_emb.io.model_parts import WRAP_CLASSES
    d = dict(d)
    cls = WRAP_CLASSES()[d.pop("type")]
    return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})


def _params_to_dict(p: Any) -> Any:
    return None if p is None else p.to_dict()


def _params_from_dict(d: Any) -> Any:
    if d is None:
        return None
    from osim_emb.muscles.hill import muscle_from_dict
    return muscle_from_dict(d)


def model_to_dict(model: Model) -> dict:
    """A JSON-compatible dict of the model (the versioned file format)."""
    fbp = [m.name for m in model.muscles if getattr(m, "function_path", None) is not None]
    if fbp:
        raise ValueError(f"model {model.name!r}: unit {fbp[0]!r} has a FunctionBasedPath, which the JSON format "
                         "cannot hold yet (write .osim instead)")
    scholz = [m.name for m in model.muscles if getattr(m, "scholz_path", None) is not None]
    if scholz:
        raise ValueError(f"model {model.name!r}: unit {scholz[0]!r} has a Scholz2015GeometryPath, which the JSON "
                         "format cannot hold yet (write .osim instead)")
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
            "controllers": [list(c) for c in ex.get("controllers", [])],
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
    from osim_emb.io.osim_writer import document_to_string
    return document_to_string(doc)


class _Check:
    """Typed access to the JSON document; errors name the file and the key path."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, reason: str) -> ValueError:
        return ValueError(f"{self.source}: {where}: {reason}")

    def get(self, d: Any, key: str, where: str, kind: str = "any", optional: bool = False, default: Any = None):
        if not isinstance(d, dict):
            raise self.fail(where or "top level", "expected an object")
        path = f"{where}.{key}" if where else key
        if key not in d:
            if optional:
                return default
            raise self.fail(where or "top level", f"{key!r}: missing")
        return self.value(d[key], path, kind)

    def value(self, v: Any, path: str, kind: str):
        if kind == "list" and not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {type(v).__name__}")
        if kind == "dict" and not isinstance(v, dict):
            raise self.fail(path, f"expected an object, got {type(v).__name__}")
        if kind == "str" and not isinstance(v, str):
            raise self.fail(path, f"expected a string, got {type(v).__name__}")
        if kind == "bool" and not isinstance(v, bool):
            raise self.fail(path, f"expected true or false, got {v!r}")
        if kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.fail(path, f"expected an integer, got {v!r}")
        if kind in ("num", "nonneg"):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.fail(path, f"expected a number, got {v!r}")
            if not np.isfinite(v):
                raise self.fail(path, f"must be finite, got {v!r}")
            if kind == "nonneg" and v < 0:
                raise self.fail(path, f"must be >= 0, got {v!r}")
        return v

    def array(self, d: dict, key: str, where: str, shape: tuple) -> np.ndarray:
        v = self.get(d, key, where)
        path = f"{where}.{key}"
        try:
            a = np.array(v, dtype=float)
        except (TypeError, ValueError):
            a = None
        n = int(np.prod(shape))
        if a is None or a.shape != shape:
            what = f"{n} numbers" if len(shape) == 1 else f"a {'x'.join(map(str, shape))} array of numbers"
            raise self.fail(path, f"expected {what}, got {str(v)[:60]}")
        if not np.all(np.isfinite(a)):
            raise self.fail(path, "must be finite")
        return a

    def range(self, d: dict, where: str) -> tuple[float, float]:
        v = self.get(d, "range", where, "list")
        path = f"{where}.range"
        if len(v) != 2 or any(x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))
                                                 or not np.isfinite(x)) for x in v):
            raise self.fail(path, f"expected [lower, upper] with numbers or null, got {v!r}")
        r = _unrange(v)
        if not r[0] <= r[1]:
            raise self.fail(path, f"lower bound {r[0]} exceeds upper bound {r[1]}")
        return r

    def function(self, d: dict, key: str, where: str):
        v = self.get(d, key, where, "dict")
        try:
            return function_from_dict(v)
        except (KeyError, TypeError, ValueError) as err:
            raise self.fail(f"{where}.{key}", f"not a valid function record ({type(err).__name__}: {err})") from None

    def items(self, d: dict, key: str, where: str = "") -> list:
        v = self.get(d, key, where, "list")
        path = f"{where}.{key}" if where else key
        for k, x in enumerate(v):
            if not isinstance(x, dict):
                raise self.fail(f"{path}[{k}]", "expected an object")
        return [(f"{path}[{k}]", x) for k, x in enumerate(v)]


def model_from_dict(d: dict, source: str = "<dict>") -> Model:
    """Rebuild a model from :func:`model_to_dict`; a ValueError naming ``source`` and the key on any bad value.
    PointConstraint loops (closed-chain variables) are rebuilt from the record's OpenSim document."""
    deps = d.get("dependent_coordinates") if isinstance(d, dict) else None
    chained = [x.get("name") for x in (deps if isinstance(deps, list) else []) if isinstance(x, dict)
               and isinstance(x.get("function"), dict) and x["function"].get("type") == "ClosedChainVariable"]
    if chained and isinstance(d.get("osim_document"), str):
        from osim_emb.core.closed_chains import rebuilt_variables
        from osim_emb.io.convert import document_to_model
        from osim_emb.io.osim_reader import read_osim_string
        name = str((d.get("extras") or {}).get("source", "")) or source
        rebuilt = document_to_model(read_osim_string(d["osim_document"], strict=False, name=name), strict=False,
                                    dependent_coordinates=chained)
        chains = {id(x.function.chain): x.function.chain for x in rebuilt.dependent_coordinates
                  if x.name in chained}
        with rebuilt_variables(list(chains.values())):
            return _model_from_dict(d, source)
    return _model_from_dict(d, source)


def _model_from_dict(d: dict, source: str) -> Model:
    ck = _Check(source)
    if not isinstance(d, dict):
        raise ck.fail("top level", "expected a JSON object")
    if d.get("format") != FORMAT:
        raise ck.fail("format", f"not an {FORMAT} file (format field is {d.get('format')!r})")
    if d.get("version") != FORMAT_VERSION:
        raise ck.fail("version", f"{FORMAT} version {d.get('version')} is not supported (this package reads "
                                 f"{FORMAT_VERSION})")
    coords = [GeneralizedCoordinate(ck.get(c, "name", w, "str"), ck.range(c, w), ck.get(c, "default", w, "num"),
                                    ck.get(c, "motion_type", w, "str"), ck.get(c, "clamped", w, "bool"),
                                    ck.get(c, "default_speed", w, "num")) for w, c in ck.items(d, "coordinates")]
    joints = []
    for w, j in ck.items(d, "joints"):
        parent = ck.get(j, "parent", w, "int")
        if not 0 <= parent <= len(joints):
            raise ck.fail(f"{w}.parent", f"must name frame 0..{len(joints)} (ground or an earlier joint), "
                                         f"got {parent}")
        kind = ck.get(j, "kind", w, "str")
        joints.append(Joint(ck.get(j, "name", w, "str"), parent, kind, ck.array(j, "axis", w, (3,)),
                            ck.function(j, "variable", w), ck.array(j, "offset", w, (4, 4)),
                            ck.get(j, "source", w, "str", optional=True, default="")))
    bodies = []
    for w, b in ck.items(d, "bodies"):
        frame = ck.get(b, "frame", w, "int")
        if not 0 <= frame <= len(joints):
            raise ck.fail(f"{w}.frame", f"must be 0..{len(joints)}, got {frame}")
        inertia = ck.get(b, "inertia", w)
        shape = (3, 3) if isinstance(inertia, list) and inertia and isinstance(inertia[0], list) else (6,)
        i = ck.array(b, "inertia", w, shape)
        if np.linalg.eigvalsh(i if shape == (3, 3) else np.array(
                [[i[0], i[3], i[4]], [i[3], i[1], i[5]], [i[4], i[5], i[2]]])).min() < -1e-12:
            raise ck.fail(f"{w}.inertia", "not positive semi-definite")
        bodies.append(Body(ck.get(b, "name", w, "str"), frame, ck.get(b, "mass", w, "nonneg"),
                           ck.array(b, "com", w, (3,)), i, ck.array(b, "frame_to_body", w, (4, 4))))
    deps = [DependentCoordinate(ck.get(x, "name", w, "str"), ck.function(x, "function", w), ck.get(x, "kind", w, "str"),
                                ck.get(x, "source", w, "str", optional=True, default=""), ck.range(x, w),
                                ck.get(x, "default", w, "num"), ck.get(x, "motion_type", w, "str"))
            for w, x in ck.items(d, "dependent_coordinates")]
    wraps = []
    for w, x in ck.items(d, "wrap_objects"):
        try:
            wraps.append(_wrap_from_dict(x))
        except (KeyError, TypeError, ValueError) as err:
            raise ck.fail(w, f"not a valid wrap object ({type(err).__name__}: {err})") from None
    muscles = []
    for w, m in ck.items(d, "muscles"):
        pts = []
        for wp, p in ck.items(m, "points", w):
            cond = ck.get(p, "condition", wp, optional=True)
            ar = ck.get(p, "active_range", wp, optional=True)
            pts.append(PathPoint(ck.get(p, "name", wp, "str"), ck.get(p, "body", wp, "str"),
                                 ck.array(p, "location", wp, (3,)), ck.get(p, "kind", wp, "str"),
                                 None if cond is None else ck.function(p, "condition", wp),
                                 None if ar is None else tuple(ck.array(p, "active_range", wp, (2,))),
                                 ck.get(p, "coordinate", wp, optional=True), ck.get(p, "source_body", wp, optional=True)))
        pw = [PathWrap(ck.get(x, "wrap_object", wx, "str"), ck.get(x, "method", wx, "str"),
                       tuple(int(v) for v in ck.array(x, "range", wx, (2,))))
              for wx, x in ck.items(m, "wraps", w)]
        try:
            params = _params_from_dict(ck.get(m, "parameters", w, optional=True))
        except (KeyError, TypeError, ValueError) as err:
            raise ck.fail(f"{w}.parameters", f"not a valid force model ({type(err).__name__}: {err})") from None
        muscles.append(Musculotendon(ck.get(m, "name", w, "str"), ck.get(m, "type", w, "str"), pts, pw, params))
    names = [m.name for m in muscles]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ck.fail("muscles", f"duplicate names {dup}")
    ex = ck.get(d, "extras", "", "dict", optional=True, default={})
    extras = {"source": ex.get("source", ""), "markers": [(n, b, np.array(l)) for n, b, l in ex.get("markers", [])],
              "controllers": [tuple(c) for c in ex.get("controllers", [])],
              "forces": [tuple(f) for f in ex.get("forces", [])], "conversion": ex.get("conversion", []),
              "skipped": ex.get("skipped", [])}
    if d.get("osim_document"):
        from osim_emb.io.osim_reader import read_osim_string
        doc_text = ck.get(d, "osim_document", "", "str")
        extras["document"] = read_osim_string(doc_text, strict=False,
                                              name=str(ex.get("source", "")) or str(d.get("name", "")))
    try:
        return Model(ck.get(d, "name", "", "str"), coords, joints, bodies, ck.array(d, "gravity", "", (3,)), deps,
                     muscles, wraps, extras)
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise ck.fail("model", f"inconsistent model ({type(err).__name__}: {err})") from None


def save_model(model: Model, path: str | Path, *, protect: Sequence[str | Path] = ()) -> None:
    """Save a model as ``osim-emb-model`` JSON, atomically (nothing is written if it fails).

    Parameters
    ----------
    model : Model
        The model; a model imported from .osim keeps its OpenSim document, so it can be written back
        as .osim after loading (:func:`osim_emb.write_osim`).
    path : str or pathlib.Path
        The JSON file to write.
    protect : sequence of paths, optional
        Files that must not be overwritten (e.g. a command's inputs).

    Examples
    --------
    >>> import os, tempfile
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> path = os.path.join(tempfile.mkdtemp(), "shoulder3d.emb.json")
    >>> oe.save_model(model, path)
    >>> oe.load_model(path) == model
    True
    """
    write_atomically(path, json.dumps(model_to_dict(model), indent=1), protect=protect)


def load_model(path: str | Path) -> Model:
    """Load a model saved by :func:`save_model`.

    Parameters
    ----------
    path : str or pathlib.Path
        An ``osim-emb-model`` JSON file.

    Returns
    -------
    Model
        The model, equal (``==``) to the one saved.

    Raises
    ------
    ValueError
        The file is not valid JSON or not a model; the message names the file and the place.

    Examples
    --------
    >>> import os, tempfile
    >>> import osim_emb as oe
    >>> path = os.path.join(tempfile.mkdtemp(), "m.emb.json")
    >>> oe.save_model(oe.load_builtin(), path)
    >>> oe.load_model(path).n_q
    3
    """
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno})") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file ({err.reason})") from None
    return model_from_dict(d, str(path))
