"""Read and write OpenSim 4.6 ``<FunctionBasedPath>`` elements (the path of a muscle or path actuator).

    <FunctionBasedPath name="path">
        <coordinate_paths>/jointset/r_shoulder/r_shoulder_elev /jointset/r_elbow/r_elbow_flex</coordinate_paths>
        <length_function> <MultivariatePolynomialFunction> ... </length_function>
        <moment_arm_functions> <Fn/> ... </moment_arm_functions>          (optional, one per coordinate)
        <lengthening_speed_function> <Fn/> </lengthening_speed_function>  (optional, 2 d inputs)
    </FunctionBasedPath>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from lxml import etree

from osim_emb.core.functions.base import JointFunction
from osim_emb.io.function_xml import find_function, function_to_xml, is_function_element, parse_function

#: The path elements of a path actuator (OpenSim 4.6).
PATH_TAGS = ("GeometryPath", "FunctionBasedPath", "Scholz2015GeometryPath")

__all__ = ["FunctionBasedPathSpec", "read_function_based_path", "function_based_path_element",
           "with_function_based_path"]


@dataclass
class FunctionBasedPathSpec:
    """The document record of a ``<FunctionBasedPath>``: coordinate names (last part of each path) and functions."""

    coordinate_paths: list[str]
    length_function: JointFunction
    moment_arm_functions: list[JointFunction]
    speed_function: JointFunction | None = None
    line: int | None = None

    @property
    def coordinates(self) -> list[str]:
        return [p.strip().rstrip("/").split("/")[-1] for p in self.coordinate_paths]


def read_function_based_path(e: Any, fail: Callable[[Any, str], Exception]) -> FunctionBasedPathSpec:
    """Parse a ``<FunctionBasedPath>`` element; ``fail(element, reason)`` makes the error (OpenSim's checks)."""
    cp = e.find("coordinate_paths")
    paths = (cp.text or "").split() if cp is not None else []
    if not paths:
        raise fail(e, "a FunctionBasedPath needs at least one coordinate in <coordinate_paths>")
    names = [p.rstrip("/").split("/")[-1] for p in paths]
    if len(set(names)) != len(names):
        raise fail(cp, f"a coordinate is named more than once in <coordinate_paths>: {paths}")
    d = len(paths)
    holder = e.find("length_function")
    fe = find_function(holder) if holder is not None else None
    if fe is None:
        raise fail(e, "a FunctionBasedPath needs a <length_function>")
    length = parse_function(fe, fail, d)
    if length.n_inputs != d:
        raise fail(fe, f"the length function takes {length.n_inputs} inputs, <coordinate_paths> names {d} coordinates")
    arms = []
    holder = e.find("moment_arm_functions")
    if holder is not None:
        for c in holder:
            if isinstance(c.tag, str) and is_function_element(c):
                f = parse_function(c, fail, d)
                if f.n_inputs != d:
                    raise fail(c, f"a moment-arm function takes {f.n_inputs} inputs, expected {d}")
                arms.append(f)
        if arms and len(arms) != d:
            raise fail(holder, f"{len(arms)} moment-arm functions for {d} coordinates")
    speed = None
    holder = e.find("lengthening_speed_function")
    fe = find_function(holder) if holder is not None else None
    if fe is not None:
        speed = parse_function(fe, fail, 2 * d)
        if speed.n_inputs != 2 * d:
            raise fail(fe, f"the lengthening-speed function takes {speed.n_inputs} inputs, expected {2 * d}")
    return FunctionBasedPathSpec(paths, length, arms, speed, e.sourceline)


def function_based_path_element(coordinate_paths: Sequence[str], length_function: JointFunction,
                                name: str = "path") -> Any:
    """A ``<FunctionBasedPath>`` element with a length function only (OpenSim derives moment arms and speed)."""
    e = etree.Element("FunctionBasedPath", name=name)
    etree.SubElement(e, "coordinate_paths").text = " ".join(coordinate_paths)
    etree.SubElement(e, "length_function").append(function_to_xml(length_function, None))
    return e


def with_function_based_path(force: Any, path_element: Any) -> Any:
    """A copy of a force element whose path (``GeometryPath`` or other) is replaced by ``path_element``."""
    import copy
    out = copy.deepcopy(force)
    old = [c for c in out if isinstance(c.tag, str) and c.tag in PATH_TAGS]
    if len(old) != 1:
        raise ValueError(f"<{force.tag} name='{force.get('name')}'> has {len(old)} path elements, expected 1")
    out.replace(old[0], path_element)
    return out


def function_based_unit(force: Any, converter: Any):
    """The model's unit for a force record with a ``function_path`` (used by :mod:`osim_emb.io.convert`)."""
    from osim_emb.paths.function_based_path import FunctionBasedMusculotendon, FunctionBasedPath
    from osim_emb.io.model_parts import muscle_parameters
    spec: FunctionBasedPathSpec = force.function_path
    for path, name in zip(spec.coordinate_paths, spec.coordinates):
        if name not in converter.coord_spec:
            raise converter.fail(f"<{force.type} name='{force.name}'>",
                                 f"its FunctionBasedPath names coordinate {path!r}, which does not exist", spec.line)
    params = None
    try:
        params = muscle_parameters(force.element, converter.doc)
    except Exception as err:  # parameters are optional for geometry; say why they are missing
        converter.log.append(f"muscle {force.name!r}: force model not imported ({err})")
    path = FunctionBasedPath(tuple(spec.coordinates), spec.length_function, tuple(spec.moment_arm_functions),
                             spec.speed_function)
    converter.log.append(f"muscle {force.name!r}: FunctionBasedPath over {', '.join(spec.coordinates)}")
    return FunctionBasedMusculotendon(force.name, force.type, (), (), params, function_path=path)


def document_with_function_based_paths(doc: Any, paths: dict[str, tuple[Sequence[str], JointFunction]],
                                       notes: dict[str, str] | None = None) -> Any:
    """A copy of an :class:`OsimDocument` in which each force named in ``paths`` has a FunctionBasedPath.

    ``paths[name] = (coordinate names, length function)``; the other forces are unchanged; ``notes[name]``: an XML
    comment written first in that unit's FunctionBasedPath (e.g. the domain it was fitted over).
    """
    import copy
    out = copy.copy(doc)
    out.forces = []
    known = {f.name for f in doc.forces}
    missing = sorted(set(paths) - known)
    if missing:
        raise KeyError(f"no force named {missing[0]!r} in {doc.path}")
    for f in doc.forces:
        if f.name not in paths:
            out.forces.append(f)
            continue
        names, length = paths[f.name]
        cps = [doc.coordinate_path(c) for c in names]
        path_element = function_based_path_element(cps, length)
        if notes and f.name in notes:
            path_element.insert(0, etree.Comment(" " + notes[f.name].replace("--", "- -") + " "))
        element = with_function_based_path(f.element, path_element)
        spec = FunctionBasedPathSpec(cps, length, [], None)
        out.forces.append(type(f)(f.name, f.type, element, None, None, f.line, function_path=spec))
    return out


def document_with_fitted_paths(model, samples, muscles=None, settings=None, **options):
    """(the model's document with the fitted units' paths replaced by FunctionBasedPaths, the fits): what
    ``osim-emb fit-paths`` writes; ``options`` go to :func:`osim_emb.paths.path_fitting.fit_paths`."""
    from osim_emb.paths.path_fitting import FitSettings, fit_paths, sample_domain, domain_text
    fits = fit_paths(model, samples, muscles, FitSettings() if settings is None else settings, **options)
    notes = {f.muscle: f"fitted by osim-emb fit-paths on {len(samples)} samples over "
                       f"{domain_text(sample_domain(model, samples, f.coordinates))}: valid near those poses only"
             for f in fits}
    doc = document_with_function_based_paths(model.extras["document"],
                                              {f.muscle: (f.coordinates, f.polynomial) for f in fits}, notes)
    return doc, fits
