"""OpenSim tool setup files (``<InverseDynamicsTool>``, ``<InverseKinematicsTool>`` XML): the inputs a user's pipeline already names, paths
resolved against the setup file's folder as OpenSim resolves them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lxml import etree

__all__ = ["InverseDynamicsSetup", "InverseKinematicsSetup", "StaticOptimizationSetup", "CoordinateTask",
           "ToolSetupError", "read_inverse_dynamics_setup", "read_inverse_kinematics_setup",
           "read_static_optimization_setup", "JointReactionSetup", "read_joint_reaction_setup"]


class ToolSetupError(ValueError):
    """A setup file that cannot be used; the message names the file and element."""


@dataclass(frozen=True)
class InverseDynamicsSetup:
    """What an ``InverseDynamicsTool`` setup names (None where it leaves a value unset)."""

    path: str
    model: Path | None
    coordinates: Path | None
    external_loads: Path | None
    lowpass_hz: float | None  # None: no filter (OpenSim: a negative cutoff)
    time_range: tuple[float, float] | None
    output: Path | None  # results_directory / output_gen_force_file
    excluded_forces: tuple[str, ...]


def element_text(parent, tag: str, default: str = "") -> str:
    """The stripped text of ``parent``'s child ``tag`` (``default`` when absent, empty or OpenSim's "Unassigned")."""
    e = parent.find(tag)
    text = e.text.strip() if e is not None and e.text else ""
    return text if text and text != "Unassigned" else default


def opensim_element(path: Path, tag: str, error: type[ValueError]):
    """The ``tag`` element of an OpenSim XML file (its root or a child of <OpenSimDocument>); ``error`` names the
    file when it is not readable XML or has no such element."""
    try:
        root = etree.parse(str(path)).getroot()
    except (OSError, etree.XMLSyntaxError) as err:
        raise error(f"{path}: not a readable XML file: {err}") from None
    found = root if root.tag == tag else root.find(tag)
    if found is None:
        raise error(f"{path}: no <{tag}> element"
                    + (" (a setup file of another tool?)" if tag.endswith("Tool") else ""))
    return found


def _file(tool, here: Path, tag: str) -> Path | None:
    """The file a setup's ``tag`` names, resolved against the setup's folder (None when unset)."""
    text = element_text(tool, tag)
    return (here / text).resolve() if text else None


def read_inverse_dynamics_setup(path: str | Path) -> InverseDynamicsSetup:
    """Read an InverseDynamicsTool setup file (OpenSim 3.x or 4.x)."""
    path = Path(path)
    tool = opensim_element(path, "InverseDynamicsTool", ToolSetupError)
    here = path.resolve().parent
    cutoff = _number(path, tool, "lowpass_cutoff_frequency_for_coordinates")
    time_range = _time_range(path, tool)
    output = None
    if element_text(tool, "output_gen_force_file"):
        folder = element_text(tool, "results_directory") or "."
        output = (here / folder / element_text(tool, "output_gen_force_file")).resolve()
    return InverseDynamicsSetup(str(path), _file(tool, here, "model_file"), _file(tool, here, "coordinates_file"),
                                _file(tool, here, "external_loads_file"),
                                cutoff if cutoff is not None and cutoff >= 0 else None, time_range, output,
                                tuple(element_text(tool, "forces_to_exclude").split()))


@dataclass(frozen=True)
class CoordinateTask:
    """An applied IKCoordinateTask: ``value_type`` default_value, manual_value (``value``, rad or m, as OpenSim
    uses it) or from_file (the setup's coordinate file)."""

    name: str
    weight: float
    value_type: str
    value: float


@dataclass(frozen=True)
class InverseKinematicsSetup:
    """What an ``InverseKinematicsTool`` setup names (None where it leaves a value unset)."""

    path: str
    name: str  # the tool's name: OpenSim's prefix of the error and marker-location files
    model: Path | None
    markers: Path | None
    coordinates: Path | None
    time_range: tuple[float, float] | None
    marker_weights: dict | None  # applied IKMarkerTasks; None: no marker task (OpenSim then tracks every marker)
    coordinate_tasks: tuple[CoordinateTask, ...]
    accuracy: float | None
    constraint_weight: float  # inf: constraints held exactly
    output: Path | None
    results_directory: Path
    report_errors: bool
    report_marker_locations: bool


def _number(path, parent, tag: str, default=None) -> float | None:
    text = element_text(parent, tag)
    if not text:
        return default
    low = text.lower()
    if low in ("inf", "infinity", "+inf"):
        return float("inf")
    try:
        return float(text)
    except ValueError:
        raise ToolSetupError(f"{path}: <{tag}> must be a number, not {text!r}") from None


def _boolean(path, parent, tag: str, default: bool) -> bool:
    text = element_text(parent, tag).lower()
    if not text:
        return default
    if text not in ("true", "false"):
        raise ToolSetupError(f"{path}: <{tag}> must be true or false, not {text!r}")
    return text == "true"


def _time_range(path, tool) -> tuple[float, float] | None:
    span = element_text(tool, "time_range").split()
    try:
        return (float(span[0]), float(span[1])) if len(span) == 2 else None
    except ValueError:
        raise ToolSetupError(f"{path}: <time_range> must be two numbers, not {' '.join(span)!r}") from None


def _ik_tasks(path: Path, tool):
    """The IKTaskSet inline or in the file its ``file`` attribute names (relative to the setup)."""
    tasks = tool.find("IKTaskSet")
    if tasks is None:
        return path, None
    ref = tasks.get("file")
    if ref:
        other = (path.resolve().parent / ref.strip()).resolve()
        return other, opensim_element(other, "IKTaskSet", ToolSetupError)
    return path, tasks


def read_inverse_kinematics_setup(path: str | Path) -> InverseKinematicsSetup:
    """Read an InverseKinematicsTool setup file (OpenSim 3.x or 4.x): paths relative to its folder, the applied
    marker and coordinate tasks."""
    path = Path(path)
    tool = opensim_element(path, "InverseKinematicsTool", ToolSetupError)
    here = path.resolve().parent

    def file(tag: str) -> Path | None:
        return _file(tool, here, tag)
    where, tasks = _ik_tasks(path, tool)
    weights: dict[str, float] = {}
    coordinate_tasks = []
    for task in ([] if tasks is None else tasks.iter("IKMarkerTask", "IKCoordinateTask")):
        name = (task.get("name") or "").strip()
        if not name:
            raise ToolSetupError(f"{where}, line {task.sourceline}: <{task.tag}> without a name")
        if not _boolean(where, task, "apply", True):
            continue
        weight = _number(where, task, "weight", 1.0)
        if task.tag == "IKMarkerTask":
            weights[name] = weight
            continue
        kind = element_text(task, "value_type", "default_value")
        if kind not in ("default_value", "manual_value", "from_file"):
            raise ToolSetupError(f"{where}, line {task.sourceline}: IKCoordinateTask {name!r}: value_type "
                                 f"{kind!r} (default_value, manual_value or from_file)")
        coordinate_tasks.append(CoordinateTask(name, weight, kind, _number(where, task, "value", 0.0)))
    results = (here / (element_text(tool, "results_directory") or ".")).resolve()
    output = element_text(tool, "output_motion_file")
    return InverseKinematicsSetup(
        str(path), (tool.get("name") or "").strip(), file("model_file"), file("marker_file"),
        file("coordinate_file"), _time_range(path, tool), weights or None, tuple(coordinate_tasks),
        _number(path, tool, "accuracy"), _number(path, tool, "constraint_weight", float("inf")),
        (here / output).resolve() if output else None, results,
        _boolean(path, tool, "report_errors", True), _boolean(path, tool, "report_marker_locations", False))


@dataclass(frozen=True)
class StaticOptimizationSetup:
    """What an ``AnalyzeTool`` setup with a StaticOptimization analysis names (None where it leaves a value unset);
    ``unsupported``: settings the package cannot reproduce, each with its reason (the command refuses them)."""

    path: str
    name: str  # the tool's name: OpenSim's prefix of the output files
    model: Path | None
    states: Path | None
    coordinates: Path | None
    speeds: Path | None
    external_loads: Path | None
    lowpass_hz: float | None
    time_range: tuple[float, float] | None
    actuator_files: tuple[Path, ...]
    results_directory: Path
    use_model_force_set: bool
    unsupported: tuple[str, ...]


def _analyze_tool(path: Path, analysis: str):
    """(tool element, the first ``analysis`` element that is on, the common fields) of an AnalyzeTool setup."""
    tool = opensim_element(path, "AnalyzeTool", ToolSetupError)
    here = path.resolve().parent
    found = [a for a in tool.iter(analysis) if _boolean(path, a, "on", True)]
    if not found:
        raise ToolSetupError(f"{path}: the AnalyzeTool has no {analysis} analysis that is on")
    unsupported = []
    if _boolean(path, tool, "replace_force_set", False) and element_text(tool, "force_set_files"):
        unsupported.append("replace_force_set true (the model's muscles would be replaced by the files' forces)")
    # the tool's initial and final times; the analysis's own start_time and end_time do not narrow OpenSim's output
    # (tests/test_static_optimization_cli.py -k setup_file)
    span = [_number(path, tool, "initial_time"), _number(path, tool, "final_time")]
    cutoff = _number(path, tool, "lowpass_cutoff_frequency_for_coordinates")
    common = dict(
        path=str(path), name=(tool.get("name") or "").strip(), model=_file(tool, here, "model_file"),
        states=_file(tool, here, "states_file"), coordinates=_file(tool, here, "coordinates_file"),
        speeds=_file(tool, here, "speeds_file"), external_loads=_file(tool, here, "external_loads_file"),
        lowpass_hz=cutoff if cutoff is not None and cutoff > 0 else None,
        time_range=(span[0], span[1]) if None not in span else None,
        actuator_files=tuple((here / f).resolve() for f in element_text(tool, "force_set_files").split()),
        results_directory=(here / (element_text(tool, "results_directory") or ".")).resolve())
    return tool, found[0], common, unsupported


def read_static_optimization_setup(path: str | Path) -> StaticOptimizationSetup:
    """Read an AnalyzeTool setup file whose AnalysisSet holds a StaticOptimization (OpenSim 3.x or 4.x): the
    tool's files relative to its folder, its initial and final times."""
    path = Path(path)
    tool, so, common, unsupported = _analyze_tool(path, "StaticOptimization")
    exponent = _number(path, so, "activation_exponent", 2.0)
    if exponent != 2.0:
        unsupported.append(f"activation_exponent {exponent:g} (the package minimizes the sum of squared controls)")
    if not _boolean(path, so, "use_muscle_physiology", True):
        unsupported.append("use_muscle_physiology false (the package uses the muscles' force-length-velocity)")
    return StaticOptimizationSetup(**common, use_model_force_set=_boolean(path, so, "use_model_force_set", True),
                                   unsupported=tuple(unsupported))


@dataclass(frozen=True)
class JointReactionSetup:
    """What an ``AnalyzeTool`` setup with a JointReaction analysis names: the tool's files (as
    :class:`StaticOptimizationSetup`), the analysis's name (OpenSim's infix of the output file), its forces file
    (resolved against the setup's folder) and its joint_names, apply_on_bodies and express_in_frame lists."""

    path: str
    name: str
    model: Path | None
    states: Path | None
    coordinates: Path | None
    speeds: Path | None
    external_loads: Path | None
    lowpass_hz: float | None
    time_range: tuple[float, float] | None
    actuator_files: tuple[Path, ...]
    results_directory: Path
    analysis_name: str
    forces_file: Path | None
    joints: tuple[str, ...]
    on: tuple[str, ...]
    expressed_in: tuple[str, ...]
    unsupported: tuple[str, ...]


def read_joint_reaction_setup(path: str | Path) -> JointReactionSetup:
    """Read an AnalyzeTool setup file whose AnalysisSet holds a JointReaction (OpenSim 3.x or 4.x)."""
    path = Path(path)
    tool, jr, common, unsupported = _analyze_tool(path, "JointReaction")
    return JointReactionSetup(
        **common, analysis_name=(jr.get("name") or "JointReaction").strip(),
        forces_file=_file(jr, path.resolve().parent, "forces_file"),
        joints=tuple(element_text(jr, "joint_names").split()), on=tuple(element_text(jr, "apply_on_bodies").split()),
        expressed_in=tuple(element_text(jr, "express_in_frame").split()), unsupported=tuple(unsupported))
