"""OpenSim 4.6's StaticOptimization analysis (AnalyzeTool) and InverseDynamicsTool on a states or coordinates file:
the references for ``osim-emb static-optimization`` and ``inverse-dynamics``."""

from __future__ import annotations

import io
import tempfile
import time as _time
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from osim_emb.opensim.bridge import require_opensim

__all__ = ["opensim_static_optimization", "opensim_static_optimization_setup", "opensim_inverse_dynamics",
           "read_storage"]


def read_storage(path: str | Path) -> pd.DataFrame:
    """The table of an OpenSim .sto/.mot file (the rows after ``endheader``)."""
    lines = Path(path).read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip() == "endheader")
    return pd.read_csv(io.StringIO("\n".join(lines[i + 1:])), sep=r"\s+")


def analyze_tool(osim, name: str, model_file, motion_path: Path, work: Path, *, lowpass_hz: float | None = None,
                 external_loads=None, actuator_files=()):
    """(an AnalyzeTool named ``name`` on the model file over the whole motion -- a states file, or a coordinates file
    with the low-pass cutoff --, its results in ``work``/results, external loads and ForceSet files appended, the
    motion's times)."""
    table = osim.TimeSeriesTable(str(motion_path))
    times = table.getIndependentColumn()
    tool = osim.AnalyzeTool()
    tool.setName(name)
    tool.setModelFilename(str(Path(model_file).resolve()))
    if any(label.endswith("/value") for label in table.getColumnLabels()):
        tool.setStatesFileName(str(motion_path))
    else:
        tool.setCoordinatesFileName(str(motion_path))
        tool.setLowpassCutoffFrequency(-1.0 if lowpass_hz is None else float(lowpass_hz))
    tool.setInitialTime(float(times[0]))
    tool.setFinalTime(float(times[-1]))
    tool.setResultsDir(str(work / "results"))
    tool.setOutputPrecision(20)
    tool.setSolveForEquilibrium(False)
    if external_loads is not None:
        tool.setExternalLoadsFileName(str(Path(external_loads).resolve()))
    if actuator_files:
        files = osim.ArrayStr()
        for f in actuator_files:
            files.append(str(Path(f).resolve()))
        tool.setForceSetFiles(files)
        tool.setReplaceForceSet(False)
    return tool, times


def run_analysis(osim, tool, analysis, setup: Path) -> float:
    """Append ``analysis`` to ``tool``, print it as the setup file ``setup`` and run OpenSim's AnalyzeTool on that
    file; its wall time in seconds."""
    tool.getAnalysisSet().cloneAndAppend(analysis)
    tool.printToXML(str(setup))
    t0 = _time.perf_counter()
    osim.AnalyzeTool(str(setup)).run()
    return _time.perf_counter() - t0


def run_setup(setup: str | Path, results_dir: str | Path) -> tuple[str, list[tuple[str, str]], float]:
    """OpenSim's AnalyzeTool on a setup file as it is (paths resolved from its folder, as OpenSim's command-line
    tool), its results in ``results_dir``: (the tool's name, its analyses as (type, name), the wall time)."""
    import os
    osim = require_opensim()
    setup = Path(setup).resolve()
    results_dir = Path(results_dir).resolve()
    here = os.getcwd()
    os.chdir(setup.parent)
    try:
        tool = osim.AnalyzeTool(str(setup))
        tool.setResultsDir(str(results_dir))
        analyses = tool.getAnalysisSet()
        kinds = [(analyses.get(i).getConcreteClassName(), analyses.get(i).getName()) for i in range(analyses.getSize())]
        t0 = _time.perf_counter()
        tool.run()
        return tool.getName(), kinds, _time.perf_counter() - t0
    finally:
        os.chdir(here)


def opensim_static_optimization(model_path: str | Path, motion_path: str | Path, *, convergence: float = 1e-8,
                                reserves: Mapping[str, float] | None = None, muscles_only: bool = False,
                                external_loads: str | Path | None = None, lowpass_hz: float | None = None,
                                actuator_files: Sequence[str | Path] = (), out_dir: str | Path | None = None) -> dict:
    """OpenSim's StaticOptimization over the whole motion (a states file: values and speeds by path, or a
    coordinates file), IPOPT at ``convergence``, from the file's first to last time.

    ``reserves``: coordinate name -> optimal force of a CoordinateActuator ``reserve_NAME`` on it (bounds ±inf,
    OpenSim's cost weight 1), added to a copy of the model (under another name where the file has a force of that
    name, its column renamed back); ``muscles_only``: every force that is neither a muscle, a PathActuator (nor a
    reserve), a CoordinateLimitForce, a PathSpring, a Ligament nor a force element the package applies (contact,
    bushing, springs, prescribed force: :data:`osim_emb.io.force_elements.APPLIED_FORCE_TYPES`) switched off
    (``appliesForce`` false: the file's other actuators, expression-based forces), so that the problem is the
    package's (:mod:`osim_emb.cli.static_optimization`);
    ``external_loads``: an ExternalLoads XML applied during the analysis; ``lowpass_hz``: the tool's low-pass filter
    of a coordinates file (none by default); ``actuator_files``: ForceSet files the AnalyzeTool appends to the
    model (its ``force_set_files``, ``replace_force_set`` false: OpenSim reads them itself).  Returns the
    ``activation`` and ``force`` tables (columns by actuator name) and ``seconds`` (the tool's wall time)."""
    osim = require_opensim()
    with tempfile.TemporaryDirectory() as scratch:
        work = (Path(out_dir) if out_dir is not None else Path(scratch)).resolve()  # the setup file's paths: absolute
        motion_path = Path(motion_path).resolve()
        work.mkdir(parents=True, exist_ok=True)
        model = osim.Model(str(model_path))
        if muscles_only:
            from osim_emb.io.force_elements import APPLIED_FORCE_TYPES
            forces = model.updForceSet()
            for i in range(forces.getSize()):
                kind = forces.get(i).getConcreteClassName()
                kept = ("CoordinateLimitForce", "PathActuator", "PathSpring", "Ligament", "Blankevoort1991Ligament",
                        *APPLIED_FORCE_TYPES)
                if kind not in kept and osim.Muscle.safeDownCast(forces.get(i)) is None:
                    forces.get(i).set_appliesForce(False)
        taken = {model.getForceSet().get(i).getName() for i in range(model.getForceSet().getSize())}
        renamed = {}  # a name the file's own forces already use (Moco's models have reserve_* actuators)
        for name, optimal_force in (reserves or {}).items():
            label = f"reserve_{name}" if f"reserve_{name}" not in taken else f"osim_emb_reserve_{name}"
            renamed[label] = f"reserve_{name}"
            act = osim.CoordinateActuator(name)
            act.setName(label)
            act.setOptimalForce(float(optimal_force))
            model.addForce(act)
        model.finalizeConnections()
        copy = work / "static_optimization_model.osim"
        model.printToXML(str(copy))
        tool, times = analyze_tool(osim, "so", copy, motion_path, work, lowpass_hz=lowpass_hz,
                                   external_loads=external_loads, actuator_files=actuator_files)
        so = osim.StaticOptimization()
        so.setStartTime(float(times[0]))
        so.setEndTime(float(times[-1]))
        so.setConvergenceCriterion(convergence)
        so.setMaxIterations(1000)
        seconds = run_analysis(osim, tool, so, work / "static_optimization_setup.xml")
        tables = {k: read_storage(work / "results" / f"so_StaticOptimization_{k}.sto").rename(columns=renamed)
                  for k in ("activation", "force")}
        return {**tables, "seconds": seconds}


def opensim_static_optimization_setup(setup: str | Path, results_dir: str | Path) -> dict:
    """OpenSim's AnalyzeTool run on an AnalyzeTool setup file as it is (paths resolved from its folder, as
    OpenSim's command-line tool), its results written to ``results_dir``: the StaticOptimization ``activation`` and
    ``force`` tables and ``seconds``."""
    name, _, seconds = run_setup(setup, results_dir)
    return {k: read_storage(Path(results_dir).resolve() / f"{name}_StaticOptimization_{k}.sto")
            for k in ("activation", "force")} | {"seconds": seconds}


def opensim_inverse_dynamics(model_path: str | Path, coordinates_path: str | Path, out_dir: str | Path, *,
                             external_loads: str | Path | None = None, lowpass_hz: float | None = None,
                             excluded: Sequence[str] = ("Muscles",)) -> pd.DataFrame:
    """OpenSim's InverseDynamicsTool over the whole coordinates file (``excluded``: its forces_to_exclude,
    ``lowpass_hz``: its filter, none by default): the generalized-force table it writes, at its output times."""
    osim = require_opensim()
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    times = osim.TimeSeriesTable(str(coordinates_path)).getIndependentColumn()
    tool = osim.InverseDynamicsTool()
    tool.setName("id")
    tool.setModelFileName(str(Path(model_path).resolve()))
    tool.setCoordinatesFileName(str(Path(coordinates_path).resolve()))
    if external_loads is not None:
        tool.setExternalLoadsFileName(str(Path(external_loads).resolve()))
    tool.setLowpassCutoffFrequency(-1.0 if lowpass_hz is None else float(lowpass_hz))
    tool.setStartTime(float(times[0]))
    tool.setEndTime(float(times[-1]))
    names = osim.ArrayStr()
    for name in excluded:
        names.append(name)
    tool.setExcludedForces(names)
    tool.setResultsDir(str(out))
    tool.setOutputGenForceFileName("id.sto")
    tool.printToXML(str(out / "setup.xml"))
    osim.InverseDynamicsTool(str(out / "setup.xml")).run()
    return read_storage(out / "id.sto")
