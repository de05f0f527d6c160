"""OpenSim tool setup files (``<InverseDynamicsTool>``, ``<InverseKinematicsTool>`` XML): the inputs a user's pipeline already names, paths
resolved against the setup file's folder as OpenSim resolves them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lxml import etree

__all__ = ["AnalyzeToolSetup", "InverseDynamicsSetup", "InverseKinematicsSetup", "StaticOptimizationSetup", "CoordinateTask",
           "ToolSetupError", "read_inverse_dynamics_setup", "read_inverse_kinematics_setup",
           "read_static_optimization_setup", "JointReactionSetup", "read_joint_reaction_setup", "ScaleSetup",
           "MarkerPlacerSetup", "Measurement", "read_scale_setup", "read_measurement_set"]


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


def _read_ik_tasks(path: Path, tool) -> tuple[dict[str, float], list]:
    """The applied IKMarkerTasks' weights and IKCoordinateTasks of a tool's IKTaskSet (inline or by file)."""
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
    return weights, coordinate_tasks


def read_inverse_kinematics_setup(path: str | Path) -> InverseKinematicsSetup:
    """Read an InverseKinematicsTool setup file (OpenSim 3.x or 4.x): paths relative to its folder, the applied
    marker and coordinate tasks."""
    path = Path(path)
    tool = opensim_element(path, "InverseKinematicsTool", ToolSetupError)
    here = path.resolve().parent

    def file(tag: str) -> Path | None:
        return _file(tool, here, tag)
    weights, coordinate_tasks = _read_ik_tasks(path, tool)
    results = (here / (element_text(tool, "results_directory") or ".")).resolve()
    output = element_text(tool, "output_motion_file")
    return InverseKinematicsSetup(
        str(path), (tool.get("name") or "").strip(), file("model_file"), file("marker_file"),
        file("coordinate_file"), _time_range(path, tool), weights or None, tuple(coordinate_tasks),
        _number(path, tool, "accuracy"), _number(path, tool, "constraint_weight", float("inf")),
        (here / output).resolve() if output else None, results,
        _boolean(path, tool, "report_errors", True), _boolean(path, tool, "report_marker_locations", False))


@dataclass(frozen=True)
class AnalyzeToolSetup:
    """What an ``AnalyzeTool`` setup names for any of its analyses (None where it leaves a value unset): the tool's
    name (OpenSim's prefix of the output files) and files resolved against its folder, the low-pass cutoff, the
    tool's initial and final times, the ForceSet files and the results folder."""

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
    #: the analysis's step_interval: OpenSim's AnalyzeTool reports every step_interval-th frame (1: every frame)
    step_interval: int


@dataclass(frozen=True)
class StaticOptimizationSetup(AnalyzeToolSetup):
    """An AnalyzeTool setup with a StaticOptimization analysis; ``unsupported``: settings the package cannot
    reproduce, each with its reason (the command refuses them)."""

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
    step = _number(path, found[0], "step_interval", 1.0)
    if step != int(step) or step < 1:
        raise ToolSetupError(f"{path}: <{analysis}> step_interval must be a whole number >= 1, got {step:g}")
    common = dict(step_interval=int(step),
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
class JointReactionSetup(AnalyzeToolSetup):
    """An AnalyzeTool setup with a JointReaction analysis: the analysis's name (OpenSim's infix of the output file),
    its forces file (resolved against the setup's folder), its joint_names, apply_on_bodies and express_in_frame
    lists, and the settings the package cannot reproduce."""

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


@dataclass(frozen=True)
class BodyKinematicsSetup(AnalyzeToolSetup):
    """An AnalyzeTool setup with a BodyKinematics analysis: the analysis's name (OpenSim's infix of the output files),
    its bodies, whether velocities and accelerations are in the bodies' frames, and whether angles are in degrees."""

    analysis_name: str
    bodies: tuple[str, ...]
    local: bool
    in_degrees: bool


def read_body_kinematics_setup(path: str | Path) -> BodyKinematicsSetup:
    """Read an AnalyzeTool setup file whose AnalysisSet holds a BodyKinematics (OpenSim 3.x or 4.x)."""
    path = Path(path)
    _, bk, common, _ = _analyze_tool(path, "BodyKinematics")
    return BodyKinematicsSetup(
        **common, analysis_name=(bk.get("name") or "BodyKinematics").strip(),
        bodies=tuple(element_text(bk, "bodies").split()) or ("all",),
        local=_boolean(path, bk, "express_results_in_body_local_frame", False),
        in_degrees=_boolean(path, bk, "in_degrees", True))


@dataclass(frozen=True)
class Measurement:
    """A ScaleTool measurement: marker pairs, and the bodies (with their axes) its factor scales."""

    name: str
    pairs: tuple[tuple[str, str], ...]
    bodies: tuple[tuple[str, str], ...]  # (body, axes such as "XYZ")
    apply: bool = True


@dataclass(frozen=True)
class MarkerPlacerSetup:
    """A ScaleTool's MarkerPlacer: the static trial, its time range, the IK tasks and the output files."""

    path: str
    apply: bool
    markers: Path | None
    coordinates: Path | None  # coordinate_file, for from_file tasks
    time_range: tuple[float, float] | None
    marker_weights: dict | None
    coordinate_tasks: tuple[CoordinateTask, ...]
    output_model: Path | None
    output_motion: Path | None
    output_marker_set: Path | None
    max_marker_movement: float | None


@dataclass(frozen=True)
class ScaleSetup:
    """What a ``ScaleTool`` setup names: the subject's mass, the generic model and marker set, the ModelScaler
    (its order of measurements and manual scales, the measurements as ``osim_emb.simulation.scaling.Measurement``,
    the manual factors of the applied Scales, the static trial and time range, the mass distribution, the output
    model and scale set) and the MarkerPlacer. Paths resolved against the setup's folder, as OpenSim does."""

    path: str
    name: str
    mass: float | None
    model: Path | None
    marker_set: Path | None
    scale: bool
    scaling_order: tuple[str, ...]
    measurements: tuple
    manual_scales: dict
    markers: Path | None
    time_range: tuple[float, float] | None
    preserve_mass_distribution: bool
    output_model: Path | None
    output_scale_set: Path | None
    placer: MarkerPlacerSetup | None


def _set_elements(path: Path, parent, tag: str):
    """(file, element) of a set given inline or by its ``file`` attribute (relative to the setup)."""
    e = parent.find(tag) if parent is not None else None
    if e is None:
        return path, None
    ref = e.get("file")
    if ref:
        other = (path.resolve().parent / ref.strip()).resolve()
        return other, opensim_element(other, tag, ToolSetupError)
    return path, e


def _measurements(where, ms) -> list:
    """The Measurements of a MeasurementSet element (None: none)."""
    out = []
    for m in ([] if ms is None else ms.iter("Measurement")):
        pairs = []
        for mp in m.iter("MarkerPair"):
            names = element_text(mp, "markers").split()
            if len(names) != 2:
                raise ToolSetupError(f"{where}, line {mp.sourceline}: a MarkerPair of measurement "
                                     f"{m.get('name')!r} needs two marker names")
            pairs.append((names[0], names[1]))
        bodies = tuple(((bs.get("name") or "").strip(), "".join(element_text(bs, "axes", "X Y Z").split()))
                       for bs in m.iter("BodyScale"))
        out.append(Measurement((m.get("name") or "").strip(), tuple(pairs), bodies, _boolean(where, m, "apply", True)))
    return out


def read_measurement_set(path: str | Path) -> list:
    """The Measurements of a MeasurementSet file, or of a ScaleTool setup's ModelScaler."""
    path = Path(path)
    try:
        return list(read_scale_setup(path).measurements)
    except ToolSetupError:
        return _measurements(path, opensim_element(path, "MeasurementSet", ToolSetupError))


def read_scale_setup(path: str | Path) -> ScaleSetup:
    """Read a ScaleTool setup file (OpenSim 3.x or 4.x)."""
    path = Path(path)
    tool = opensim_element(path, "ScaleTool", ToolSetupError)
    here = path.resolve().parent
    maker = tool.find("GenericModelMaker")
    scaler = tool.find("ModelScaler")
    placer_e = tool.find("MarkerPlacer")
    measurements = []
    manual = {}
    order: tuple[str, ...] = ()
    if scaler is not None:
        order = tuple(element_text(scaler, "scaling_order", "measurements").split())
        unknown = [o for o in order if o not in ("measurements", "manualScale")]
        if unknown:
            raise ToolSetupError(f"{path}: <scaling_order> {' '.join(order)!r}: expected 'measurements' and/or "
                                 "'manualScale'")
        where, ms = _set_elements(path, scaler, "MeasurementSet")
        measurements = _measurements(where, ms)
        where, ss = _set_elements(path, scaler, "ScaleSet")
        for sc in ([] if ss is None else ss.iter("Scale")):
            if not _boolean(where, sc, "apply", True):
                continue
            values = element_text(sc, "scales").split()
            try:
                factors = [float(v) for v in values]
            except ValueError:
                factors = []
            if len(factors) != 3:
                raise ToolSetupError(f"{where}, line {sc.sourceline}: <scales> needs three numbers")
            manual[element_text(sc, "segment")] = tuple(factors)
    placer = None
    if placer_e is not None:
        weights, coordinate_tasks = _read_ik_tasks(path, placer_e)
        placer = MarkerPlacerSetup(
            str(path), _boolean(path, placer_e, "apply", True), _file(placer_e, here, "marker_file"),
            _file(placer_e, here, "coordinate_file"), _time_range(path, placer_e), weights or None,
            tuple(coordinate_tasks), _file(placer_e, here, "output_model_file"),
            _file(placer_e, here, "output_motion_file"), _file(placer_e, here, "output_marker_file"),
            _number(path, placer_e, "max_marker_movement"))
    mass = _number(path, tool, "mass")
    return ScaleSetup(
        str(path), (tool.get("name") or "").strip(), mass if mass is not None and mass > 0 else None,
        _file(maker, here, "model_file") if maker is not None else None,
        _file(maker, here, "marker_set_file") if maker is not None else None,
        scaler is not None and _boolean(path, scaler, "apply", True), order, tuple(measurements), manual,
        _file(scaler, here, "marker_file") if scaler is not None else None,
        _time_range(path, scaler) if scaler is not None else None,
        _boolean(path, scaler, "preserve_mass_distribution", False) if scaler is not None else False,
        _file(scaler, here, "output_model_file") if scaler is not None else None,
        _file(scaler, here, "output_scale_file") if scaler is not None else None, placer)
