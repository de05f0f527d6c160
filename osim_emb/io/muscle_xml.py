"""Muscle descriptions from .osim XML: :func:`hill_muscle_from_xml` (Thelen2003Muscle,
Schutte1993Muscle_Deprecated, Millard2012EquilibriumMuscle, DeGrooteFregly2016Muscle, RigidTendonMuscle, PathActuator)
and the parameters of
``CoordinateLimitForce`` / ``CoordinateActuator`` elements (:func:`coordinate_force_records`).

The muscle models themselves are in :mod:`osim_emb.muscles.hill` (a lower layer, which reads no XML)."""

from __future__ import annotations

import math
from dataclasses import MISSING, fields
from typing import Any, Callable, NamedTuple

from osim_emb.io.errors import OsimImportError
from osim_emb.muscles import curves as C
from osim_emb.muscles.hill import (
    DeGrooteFregly2016Muscle,
    HillMuscle,
    Millard2012EquilibriumMuscle,
    MuscleModelError,
    RigidPathActuator,
    RigidTendonMuscle,
    Schutte1993Muscle,
    Thelen2003Muscle,
)

__all__ = ["SUPPORTED_XML_TYPES", "hill_muscle_from_xml", "coordinate_force_records", "CoordinateForceRecord",
           "thelen_as_millard"]

SUPPORTED_XML_TYPES = (
    "Thelen2003Muscle",
    "Schutte1993Muscle_Deprecated",
    "Millard2012EquilibriumMuscle",
    "DeGrooteFregly2016Muscle",
    "RigidTendonMuscle",
)

#: a muscle's default_fiber_length where the file gives none: OpenSim constructs the property from
#: getOptimalFiberLength() before the file is read, i.e. from Muscle's own default optimal_fiber_length, 0.1 m (not the
#: file's optimal fibre length)
OPENSIM_DEFAULT_FIBER_LENGTH = 0.1

_COMMON_FLOATS = (
    "max_isometric_force",
    "optimal_fiber_length",
    "tendon_slack_length",
    "pennation_angle_at_optimal",
    "max_contraction_velocity",
)


def _local(tag) -> str:
    return tag.split("}", 1)[-1] if isinstance(tag, str) else ""


def _child(el, name):
    if el is None:
        return None
    for c in el:
        if _local(c.tag) == name:
            return c
    return None


def _text(el) -> str | None:
    if el is None:
        return None
    return (el.text or "").strip()


def _float(text: str, muscle: str, prop: str) -> float:
    t = text.strip().lower()
    if t in ("inf", "infinity", "+inf"):
        return math.inf
    if t in ("-inf", "-infinity"):
        return -math.inf
    if t == "nan":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise MuscleModelError(f"muscle {muscle!r}: property {prop!r} is not a number: {text!r}") from None


def _bool(text: str, muscle: str, prop: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1"):
        return True
    if t in ("false", "0"):
        return False
    raise MuscleModelError(f"muscle {muscle!r}: property {prop!r} is not a boolean: {text!r}")


def _document_version(el) -> int | None:
    try:
        root = el.getroottree().getroot()
    except AttributeError:
        return None
    v = root.get("Version")
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


class _Props:
    """Property lookup: the muscle element, then the <defaults> object, then OpenSim's built-in default."""

    def __init__(self, el, defaults_el, name, type_name, version):
        self.el = el
        self.defaults_el = defaults_el
        self.name = name
        self.type_name = type_name
        self.version = version

    def raw(self, prop, *aliases):
        for src in (self.el, self.defaults_el):
            for p in (prop, *aliases):
                c = _child(src, p)
                if c is not None:
                    return _text(c)
        return None

    def float(self, prop, default, *aliases):
        t = self.raw(prop, *aliases)
        if t is None or t == "":
            return default
        return _float(t, self.name, prop)

    def bool(self, prop, default):
        t = self.raw(prop)
        if t is None or t == "":
            return default
        return _bool(t, self.name, prop)


def _applies_force(props: _Props) -> bool:
    return _applies_force_from(props.raw, props.name)


def _applies_force_from(raw, name: str) -> bool:
    """Force::appliesForce: ``appliesForce`` (4.x), else not ``isDisabled`` (older files); ``raw(prop)``."""
    for prop, applies_when in (("appliesForce", True), ("isDisabled", False)):
        t = raw(prop)
        if t not in (None, ""):
            return _bool(t, name, prop) == applies_when
    return True


def _controls(props: _Props, el, defaults_el, default_min, default_max, muscle: bool = True):
    """min/max control; OpenSim's Muscle::updateFromXMLNode drops a muscle's min_control = 0 and max_control = 1
    from files older than 30513 (not another actuator's: ``muscle`` False keeps them)."""
    old = muscle and props.version is not None and props.version < 30513

    def one(prop, default, dropped_value):
        for src in (el, defaults_el):
            c = _child(src, prop)
            if c is None or _text(c) == "":
                continue
            v = _float(_text(c), props.name, prop)
            if old and math.isclose(v, dropped_value, rel_tol=0, abs_tol=1e-15):
                continue  # removed by Muscle::updateFromXMLNode; fall back to the defaults object
            return v
        return default

    return one("min_control", default_min, 0.0), one("max_control", default_max, 1.0)


def _common(props: _Props, el, defaults_el, cls) -> dict[str, Any]:
    out: dict[str, Any] = {"name": props.name}
    base = {f.name: f.default for f in fields(cls)}
    for p in _COMMON_FLOATS:
        aliases = ("pennation_angle",) if p == "pennation_angle_at_optimal" else ()
        out[p] = props.float(p, base[p], *aliases)
    out["min_control"], out["max_control"] = _controls(props, el, defaults_el, base["min_control"], base["max_control"])
    out["applies_force"] = _applies_force(props)
    out["ignore_tendon_compliance"] = props.bool("ignore_tendon_compliance", False)
    out["ignore_activation_dynamics"] = props.bool("ignore_activation_dynamics", False)
    return out


def _find_function_element(el, prop):
    """The function XML element of a Function-valued property, in 4.x
    (<prop><SimmSpline .../></prop>) or 3.3 (<SimmSpline name="prop">) spelling."""
    if el is None:
        return None
    c = _child(el, prop)
    if c is not None:
        kids = [k for k in c if isinstance(k.tag, str)]
        if not kids:
            return None
        return kids[0]
    for k in el:
        if isinstance(k.tag, str) and k.get("name") == prop:
            return k
    return None


def _parse_curve_object(el, cls, muscle, type_name):
    """A Millard curve object (unnamed property whose tag is its type)."""
    kw: dict[str, Any] = {}
    if el is None:
        return cls()
    for f in fields(cls):
        c = _child(el, f.name)
        if c is None:
            continue
        t = _text(c)
        if t == "":
            kw[f.name] = None  # optional property left empty
            continue
        kw[f.name] = _float(t, muscle, f"{type_name}/{f.name}")
    try:
        obj = cls(**kw)
        obj.curve  # validate now, with the muscle's name in the message
    except ValueError as exc:
        raise MuscleModelError(f"muscle {muscle!r}: {exc}") from None
    return obj


#: Types OpenSim 4.6 reads under a new name (``Object::renameType`` in RegisterTypes_osimActuators.cpp).
RENAMED_TYPES = {"Schutte1993Muscle": "Schutte1993Muscle_Deprecated"}


def hill_muscle_from_xml(element, parse_function: Callable | None = None, defaults=None) -> HillMuscle:
    """A muscle description from the lxml element of a muscle in an .osim file.

    ``element``: e.g. ``<Thelen2003Muscle name="TRIlong">`` (OpenSim 3.3 or 4.x spelling).
    ``parse_function``: turns a function XML element (``<SimmSpline>`` ...) into
    an object with the ``JointFunction`` interface; needed for
    Schutte1993Muscle_Deprecated curves.
    ``defaults``: the element of the same type in the file's ``<defaults>``
    section (or an already-parsed description of that type), if any.  As in
    OpenSim, a property missing from the muscle takes the value of that default
    object, then OpenSim's built-in default.

    Types: Thelen2003Muscle, Schutte1993Muscle_Deprecated,
    Millard2012EquilibriumMuscle, DeGrooteFregly2016Muscle, RigidTendonMuscle; PathActuator (tension = control x
    optimal_force).  Other muscle types raise :class:`MuscleModelError`.
    """
    type_name = RENAMED_TYPES.get(_local(element.tag), _local(element.tag))
    name = element.get("name") or "<unnamed>"
    version = _document_version(element)
    defaults_el = None
    defaults_obj = None
    if defaults is not None:
        if isinstance(defaults, HillMuscle):
            if defaults.type_name != type_name:
                raise MuscleModelError(
                    f"muscle {name!r}: defaults object is a {defaults.type_name}, not a {type_name}"
                )
            defaults_obj = defaults
        else:
            if RENAMED_TYPES.get(_local(defaults.tag), _local(defaults.tag)) != type_name:
                raise MuscleModelError(
                    f"muscle {name!r}: defaults element is a {_local(defaults.tag)}, not a {type_name}"
                )
            defaults_el = defaults
    props = _Props(element, defaults_el, name, type_name, version)

    if type_name == "Thelen2003Muscle":
        cls = Thelen2003Muscle
    elif type_name == "Schutte1993Muscle_Deprecated":
        cls = Schutte1993Muscle
    elif type_name == "Millard2012EquilibriumMuscle":
        cls = Millard2012EquilibriumMuscle
    elif type_name == "RigidTendonMuscle":
        cls = RigidTendonMuscle
    elif type_name == "DeGrooteFregly2016Muscle":
        cls = DeGrooteFregly2016Muscle
    elif type_name == "PathActuator":
        cls = RigidPathActuator
    else:
        raise MuscleModelError(
            f"muscle {name!r}: type {type_name} is not supported (supported: "
            f"{', '.join(SUPPORTED_XML_TYPES)}, PathActuator)"
        )

    if defaults_obj is not None:
        # fill from an already-parsed default object: its values replace the built-in defaults
        base_kwargs = {f.name: getattr(defaults_obj, f.name) for f in fields(cls) if f.name != "name"}
    else:
        base_kwargs = {}

    def dflt(prop):
        if prop in base_kwargs:
            return base_kwargs[prop]
        for f in fields(cls):
            if f.name == prop:
                return f.default_factory() if f.default is MISSING else f.default
        raise KeyError(prop)

    kw = _common(props, element, defaults_el, cls)
    if defaults_obj is not None:
        for p in list(_COMMON_FLOATS) + ["min_control", "max_control"]:
            if props.raw(p) in (None, ""):
                kw[p] = base_kwargs[p]

    try:
        if cls is Thelen2003Muscle:
            for p in ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af", "Flen",
                      "fv_linear_extrap_threshold", "maximum_pennation_angle", "activation_time_constant",
                      "deactivation_time_constant", "minimum_activation", "default_activation"):
                kw[p] = props.float(p, dflt(p))
            kw["default_fiber_length"] = props.float("default_fiber_length", OPENSIM_DEFAULT_FIBER_LENGTH)
            return Thelen2003Muscle(**kw)

        if cls is Millard2012EquilibriumMuscle:
            for p in ("fiber_damping", "default_activation", "activation_time_constant",
                      "deactivation_time_constant", "minimum_activation", "maximum_pennation_angle"):
                kw[p] = props.float(p, dflt(p))
            kw["default_fiber_length"] = props.float("default_fiber_length", OPENSIM_DEFAULT_FIBER_LENGTH)
            tags = {
                "active_force_length_curve": ("ActiveForceLengthCurve", C.ActiveForceLengthCurve),
                "force_velocity_curve": ("ForceVelocityCurve", C.ForceVelocityCurve),
                "fiber_force_length_curve": ("FiberForceLengthCurve", C.FiberForceLengthCurve),
                "tendon_force_length_curve": ("TendonForceLengthCurve", C.TendonForceLengthCurve),
            }
            for prop, (tag, ccls) in tags.items():
                cel = _child(element, tag)
                if cel is None:
                    cel = _child(defaults_el, tag)
                if cel is None and prop in base_kwargs:
                    kw[prop] = base_kwargs[prop]
                else:
                    kw[prop] = _parse_curve_object(cel, ccls, name, tag)
            return Millard2012EquilibriumMuscle(**kw)

        if cls is DeGrooteFregly2016Muscle:
            for p in ("activation_time_constant", "deactivation_time_constant", "default_activation",
                      "default_normalized_tendon_force", "active_force_width_scale", "fiber_damping",
                      "passive_fiber_strain_at_one_norm_force", "tendon_strain_at_one_norm_force",
                      "activation_dynamics_smoothing"):
                kw[p] = props.float(p, dflt(p))
            kw["ignore_passive_fiber_force"] = props.bool("ignore_passive_fiber_force", dflt("ignore_passive_fiber_force"))
            mode = props.raw("tendon_compliance_dynamics_mode")
            kw["tendon_compliance_dynamics_mode"] = (mode.strip() if mode else dflt("tendon_compliance_dynamics_mode"))
            return DeGrooteFregly2016Muscle(**kw)

        if cls is Schutte1993Muscle or cls is RigidTendonMuscle:
            schutte = cls is Schutte1993Muscle
            if schutte:
                for p in ("time_scale", "activation1", "activation2", "damping", "default_activation"):
                    kw[p] = props.float(p, dflt(p))
                kw["default_fiber_length"] = props.float("default_fiber_length", OPENSIM_DEFAULT_FIBER_LENGTH)
            for prop in (("tendon_force_length_curve", "active_force_length_curve", "passive_force_length_curve")
                         if schutte else RigidTendonMuscle.CURVES):
                fel = _find_function_element(element, prop)
                if fel is None and prop == "passive_force_length_curve" and schutte:
                    # OpenSim flags the property as default and uses exp(8(l-1))/exp(4), whatever <defaults> says
                    kw[prop] = None
                    continue
                if fel is None:
                    fel = _find_function_element(defaults_el, prop)
                if fel is None:
                    kw[prop] = base_kwargs.get(prop)
                    continue
                if parse_function is None:
                    raise MuscleModelError(
                        f"muscle {name!r}: property {prop!r} is a function ({_local(fel.tag)}) and no "
                        "parse_function was given"
                    )
                try:
                    kw[prop] = parse_function(fel)
                except Exception as exc:  # report the muscle and property
                    raise MuscleModelError(
                        f"muscle {name!r}: cannot read property {prop!r} ({_local(fel.tag)}): {exc}"
                    ) from exc
            return cls(**kw)

        # PathActuator
        kw["optimal_force"] = props.float("optimal_force", dflt("optimal_force"))
        kw["min_control"], kw["max_control"] = _controls(props, element, defaults_el, -math.inf, math.inf,
                                                         muscle=False)
        for p in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                  "pennation_angle_at_optimal", "max_contraction_velocity"):
            kw.pop(p, None)
        kw["source_type"] = type_name
        return RigidPathActuator(**kw)
    except MuscleModelError:
        raise
    except (TypeError, ValueError) as exc:
        raise MuscleModelError(f"{type_name} {name!r}: {exc}") from exc


# =============================================================================
# CoordinateLimitForce and CoordinateActuator
# =============================================================================
_COORDINATE_FORCE_DEFAULTS = {  # OpenSim 4.6's property defaults
    "CoordinateLimitForce": {"upper_stiffness": 1.0, "upper_limit": 0.0, "lower_stiffness": 1.0, "lower_limit": 0.0,
                             "damping": 0.001, "transition": 0.1},
    "CoordinateActuator": {"optimal_force": 1.0},
}


class CoordinateForceRecord(NamedTuple):
    """One ``CoordinateLimitForce`` or ``CoordinateActuator`` as written in the file (units of the XML:
    limits and transition in degrees for rotational coordinates, stiffness and damping per degree)."""

    type: str
    name: str
    coordinate: str
    parameters: dict[str, float]


def _force_records(doc: Any, defaults_by_type: dict):
    """(force spec, element, numeric properties) of the document's forces of the given types that apply force
    (``appliesForce`` false ones are left out), each property read or given its default."""
    for f in doc.forces:
        defaults = defaults_by_type.get(f.type)
        if defaults is None:
            continue
        el = f.element
        try:
            if not element_applies_force(el, f.name):
                continue
            params = {}
            for prop, default in defaults.items():
                t = _text(_child(el, prop))
                params[prop] = default if not t else _float(t, f.name, prop)
        except MuscleModelError as exc:
            raise OsimImportError(getattr(doc, "path", None), el, str(exc)) from None
        yield f, el, params


def element_applies_force(el: Any, name: str) -> bool:
    """Force::appliesForce of a force element (:func:`_applies_force_from`)."""
    return _applies_force_from(lambda prop: _text(_child(el, prop)), name)


def coordinate_force_records(doc: Any) -> list[CoordinateForceRecord]:
    """The document's CoordinateLimitForces and CoordinateActuators that apply force (``appliesForce``
    false ones are left out), with their numeric properties (OpenSim's defaults where missing)."""
    return [CoordinateForceRecord(f.type, f.name, _text(_child(el, "coordinate")) or "", params)
            for f, el, params in _force_records(doc, _COORDINATE_FORCE_DEFAULTS)]


class PassivePathForceRecord(NamedTuple):
    """A PathSpring, Ligament or Blankevoort1991Ligament of the document: its name, type and the numbers of its
    tension law."""

    type: str
    name: str
    parameters: dict


#: OpenSim 4.6's default force-length curve of a Ligament (Ligament::constructProperties; x = L / resting length)
LIGAMENT_DEFAULT_CURVE = ((-5.0, 0.998, 0.999, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.601, 1.602, 5.0),
                          (0.0, 0.0, 0.0, 0.0, 0.035, 0.12, 0.26, 0.55, 1.17, 2.0, 2.0, 2.0, 2.0))


#: passive path forces whose tension laws the muscle-driven simulation reads (:func:`passive_path_force_records`)
PASSIVE_PATH_FORCE_TYPES = ("PathSpring", "Ligament", "Blankevoort1991Ligament")


def force_models_not_imported(model: Any) -> dict[str, str]:
    """The units of a supported muscle type whose force model was not imported because a value is invalid (OpenSim
    refuses most such values; the import keeps the path, for geometry): name -> the import's reason."""
    reasons = [e for e in model.extras.get("conversion", ()) if isinstance(e, str)]
    out = {}
    for unit in model.muscles:
        if unit.parameters is None and unit.type_name in SUPPORTED_XML_TYPES \
                and unit.type_name not in PASSIVE_PATH_FORCE_TYPES:
            why = next((e for e in reasons if e.startswith(f"muscle {unit.name!r}: force model not imported")), None)
            if why is not None:
                out[unit.name] = why
    return out
_PASSIVE_PATH_FORCE_DEFAULTS = {  # OpenSim 4.6's property defaults
    "PathSpring": {"resting_length": 0.0, "stiffness": 0.0, "dissipation": 0.0},
    "Ligament": {"resting_length": 0.0, "pcsa_force": 0.0},
    "Blankevoort1991Ligament": {"slack_length": 0.0, "linear_stiffness": 1.0, "transition_strain": 0.06,
                                "damping_coefficient": 0.003},
}


def passive_path_force_records(doc: Any) -> list[PassivePathForceRecord]:
    """The document's PathSprings (resting_length, stiffness, dissipation), Ligaments (resting_length, pcsa_force,
    force_length_curve: a function of L / resting length, OpenSim's default spline where missing) and
    Blankevoort1991Ligaments (slack_length, linear_stiffness, transition_strain, damping_coefficient) that apply
    force."""
    from osim_emb.core.functions import SimmSpline
    from osim_emb.io.function_xml import parse_function
    out = []
    for f, el, params in _force_records(doc, _PASSIVE_PATH_FORCE_DEFAULTS):
        if f.type == "Ligament":
            fel = _find_function_element(el, "force_length_curve")
            params["force_length_curve"] = (SimmSpline(*LIGAMENT_DEFAULT_CURVE) if fel is None else
                                            parse_function(fel, lambda e, r: OsimImportError(doc.path, e, r)))
            if not params["resting_length"] > 0:
                raise OsimImportError(getattr(doc, "path", None), el, f"Ligament {f.name!r}: resting_length must be "
                                      "> 0 (the curve's argument is L / resting_length)")
        if f.type == "Blankevoort1991Ligament" and not (params["slack_length"] > 0 and params["transition_strain"] > 0):
            raise OsimImportError(getattr(doc, "path", None), el, f"Blankevoort1991Ligament {f.name!r}: slack_length "
                                  "and transition_strain must be > 0 (the strain is L / slack_length - 1)")
        out.append(PassivePathForceRecord(f.type, f.name, params))
    return out


#: Thelen2003Muscle properties Millard2012EquilibriumMuscle does not have (its own curves take their place)
_THELEN_ONLY = ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af", "Flen",
                "fv_linear_extrap_threshold")


def thelen_as_millard(source, destination, names=None) -> None:
    """Write ``destination``: the .osim ``source`` with its Thelen2003Muscles (or those named in ``names``) turned
    into Millard2012EquilibriumMuscles -- the same path and common parameters, Millard's default curves, damping
    and compliant tendon.  ``destination`` must be another file (the input is never overwritten)."""
    from pathlib import Path

    from lxml import etree
    if Path(destination).resolve() == Path(source).resolve():
        raise ValueError(f"{destination}: the Millard copy must not overwrite its source")
    tree = etree.parse(str(source))
    for el in list(tree.iter("Thelen2003Muscle")):
        if names is not None and el.get("name") not in names:
            continue
        el.tag = "Millard2012EquilibriumMuscle"
        for c in list(el):
            if c.tag in _THELEN_ONLY:
                el.remove(c)
    tree.write(str(destination))
