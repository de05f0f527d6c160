"""OpenSim actuator files (``<ForceSet>`` XML, the reserve and residual actuators of a static-optimization or CMC
setup): CoordinateActuator, PointActuator and TorqueActuator with OpenSim's defaults, a 3.x file's ``<defaults>``
objects applied to the properties an actuator leaves out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from osim_emb.io.tool_setup import element_text, opensim_element

__all__ = ["Actuator", "ActuatorFileError", "read_actuators", "model_actuators", "ACTUATOR_TYPES"]

#: the actuator types read, with OpenSim 4.6's property defaults (constructProperties)
ACTUATOR_TYPES = {
    "CoordinateActuator": {"coordinate": "", "optimal_force": "1"},
    "PointActuator": {"body": "", "point": "0 0 0", "point_is_global": "false", "direction": "1 0 0",
                      "force_is_global": "false", "optimal_force": "1"},
    "TorqueActuator": {"bodyA": "", "bodyB": "", "torque_is_global": "true", "axis": "0 0 1", "optimal_force": "1"},
}
_COMMON = {"min_control": "-inf", "max_control": "inf", "isDisabled": "false", "appliesForce": "true"}


class ActuatorFileError(ValueError):
    """An actuator file that cannot be used; the message names the file, the line and the element."""


@dataclass(frozen=True)
class Actuator:
    """One actuator: ``kind`` CoordinateActuator (``coordinate``), PointActuator (``body``, ``point``,
    ``point_is_global``, ``direction``, ``force_is_global``) or TorqueActuator (``body`` = bodyA, ``body_b`` =
    bodyB or "" for ground, ``direction`` = axis, ``force_is_global`` = torque_is_global); force or torque =
    optimal_force × control, control in [min_control, max_control]."""

    name: str
    kind: str
    optimal_force: float
    min_control: float
    max_control: float
    coordinate: str = ""
    body: str = ""
    body_b: str = ""
    point: tuple = (0.0, 0.0, 0.0)
    point_is_global: bool = False
    direction: tuple = (1.0, 0.0, 0.0)
    force_is_global: bool = False
    source: str = ""


def _number(text: str, where: str) -> float:
    low = text.strip().lower()
    if low in ("inf", "infinity", "+inf", "+infinity"):
        return np.inf
    if low in ("-inf", "-infinity"):
        return -np.inf
    try:
        return float(text)
    except ValueError:
        raise ActuatorFileError(f"{where}: {text!r} is not a number") from None


def _flag(text: str, where: str) -> bool:
    low = text.strip().lower()
    if low not in ("true", "false"):
        raise ActuatorFileError(f"{where}: {text!r} must be true or false")
    return low == "true"


def _vector(text: str, where: str) -> tuple:
    parts = text.split()
    if len(parts) != 3:
        raise ActuatorFileError(f"{where}: {text!r} must be three numbers")
    return tuple(_number(p, where) for p in parts)


def _actuator(e, where: str, defaults: dict) -> Actuator | None:
    """The actuator an element describes (None when it is disabled); ``defaults``: a 3.x file's default objects."""
    name = (e.get("name") or "").strip()

    def value(tag: str) -> str:
        text = element_text(e, tag)
        if not text and e.tag in defaults:
            text = element_text(defaults[e.tag], tag)
        return text or {**_COMMON, **ACTUATOR_TYPES[e.tag]}[tag]
    if _flag(value("isDisabled"), where) or not _flag(value("appliesForce"), where):
        return None
    common = dict(name=name, kind=e.tag, optimal_force=_number(value("optimal_force"), where),
                  min_control=_number(value("min_control"), where),
                  max_control=_number(value("max_control"), where), source=where)
    if common["min_control"] > common["max_control"]:
        raise ActuatorFileError(f"{where}: min_control exceeds max_control")
    if not np.isfinite(common["optimal_force"]) or common["optimal_force"] <= 0:
        raise ActuatorFileError(f"{where}: optimal_force must be a positive number")
    if e.tag == "CoordinateActuator":
        coordinate = value("coordinate").strip().split("/")[-1]
        if not coordinate:
            raise ActuatorFileError(f"{where}: no <coordinate>")
        return Actuator(coordinate=coordinate, **common)
    if e.tag == "PointActuator":
        body = value("body").strip().split("/")[-1]
        if not body:
            raise ActuatorFileError(f"{where}: no <body>")
        out = Actuator(body=body, point=_vector(value("point"), where),
                       point_is_global=_flag(value("point_is_global"), where),
                       direction=_vector(value("direction"), where),
                       force_is_global=_flag(value("force_is_global"), where), **common)
    else:
        body = value("bodyA").strip().split("/")[-1]
        if not body:
            raise ActuatorFileError(f"{where}: no <bodyA>")
        out = Actuator(body=body, body_b=value("bodyB").strip().split("/")[-1],
                       direction=_vector(value("axis"), where),
                       force_is_global=_flag(value("torque_is_global"), where), **common)
    if np.linalg.norm(out.direction) == 0:
        raise ActuatorFileError(f"{where}: a zero direction or axis")
    return out


def read_actuators(path: str | Path) -> tuple[list[Actuator], list[str]]:
    """The enabled actuators of an OpenSim ForceSet file, and notes naming the disabled ones. Another force type
    in the file is refused by name and line (the package would otherwise leave a force of the user's setup out)."""
    path = Path(path)
    force_set = opensim_element(path, "ForceSet", ActuatorFileError)
    defaults = {}
    holder = force_set.find("defaults")
    if holder is not None:
        for e in holder:
            if isinstance(e.tag, str) and e.tag in ACTUATOR_TYPES:
                defaults[e.tag] = e
    objects = force_set.find("objects")
    actuators, notes = [], []
    seen = set()
    for e in ([] if objects is None else objects):
        if not isinstance(e.tag, str):
            continue
        where = f"{path}, line {e.sourceline}: {e.tag} {e.get('name')!r}"
        if e.tag not in ACTUATOR_TYPES:
            raise ActuatorFileError(f"{where}: actuator type not supported (CoordinateActuator, PointActuator, "
                                    "TorqueActuator)")
        name = (e.get("name") or "").strip()
        if not name:
            raise ActuatorFileError(f"{path}, line {e.sourceline}: {e.tag} without a name")
        if name in seen:
            raise ActuatorFileError(f"{where}: a second actuator of this name")
        seen.add(name)
        act = _actuator(e, where, defaults)
        if act is None:
            notes.append(f"{e.tag} {name!r} is disabled in {path.name}: left out")
        else:
            actuators.append(act)
    return actuators, notes


def model_actuators(model) -> list[Actuator]:
    """The enabled CoordinateActuators, PointActuators and TorqueActuators of an imported .osim model's force set
    (OpenSim's StaticOptimization uses them with ``use_model_force_set``)."""
    doc = model.extras.get("document")
    out = []
    for f in ([] if doc is None else doc.forces):
        if f.type in ACTUATOR_TYPES and f.element is not None:
            act = _actuator(f.element, f"{doc.path}, line {f.line}: {f.type} {f.name!r}", {})
            if act is not None:
                out.append(act)
    return out
