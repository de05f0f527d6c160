"""OpenSim 4.6's JointReaction analysis (AnalyzeTool): the reference for ``osim-emb joint-reactions``."""

from __future__ import annotations

import os
import tempfile
import time as _time
from pathlib import Path
from typing import Sequence

from osim_emb.opensim.bridge import require_opensim
from osim_emb.opensim.static_optimization import read_storage

__all__ = ["opensim_joint_reactions", "opensim_joint_reactions_setup"]


def opensim_joint_reactions(model_path: str | Path, motion_path: str | Path, *, forces_file: str | Path | None = None,
                            joints: Sequence[str] = ("ALL",), on: Sequence[str] = ("child",),
                            expressed_in: Sequence[str] = ("ground",), external_loads: str | Path | None = None,
                            actuator_files: Sequence[str | Path] = (), lowpass_hz: float | None = None,
                            out_dir: str | Path | None = None) -> dict:
    """OpenSim's JointReaction over the whole motion (a coordinates file, or a states file), the actuators'
    forces from ``forces_file`` (e.g. StaticOptimization's force file); ``actuator_files`` are ForceSets appended
    to the model (``force_set_files``), ``external_loads`` an ExternalLoads XML. Returns ``loads`` (OpenSim's
    _JointReaction_ReactionLoads table) and ``seconds`` (the tool's wall time)."""
    osim = require_opensim()
    with tempfile.TemporaryDirectory() as scratch:
        work = (Path(out_dir) if out_dir is not None else Path(scratch)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        motion_path = Path(motion_path).resolve()
        table = osim.TimeSeriesTable(str(motion_path))
        times = table.getIndependentColumn()
        tool = osim.AnalyzeTool()
        tool.setName("jr")
        tool.setModelFilename(str(Path(model_path).resolve()))
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
        jr = osim.JointReaction()
        jr.setName("JointReaction")
        jr.setStartTime(float(times[0]))
        jr.setEndTime(float(times[-1]))
        if forces_file is not None:
            jr.setForcesFileName(str(Path(forces_file).resolve()))
        for setter, values in ((jr.setJointNames, joints), (jr.setOnBody, on), (jr.setInFrame, expressed_in)):
            arr = osim.ArrayStr()
            for v in values:
                arr.append(str(v))
            setter(arr)
        tool.getAnalysisSet().cloneAndAppend(jr)
        setup = work / "joint_reaction_setup.xml"
        tool.printToXML(str(setup))
        t0 = _time.perf_counter()
        osim.AnalyzeTool(str(setup)).run()
        seconds = _time.perf_counter() - t0
        return {"loads": read_storage(work / "results" / "jr_JointReaction_ReactionLoads.sto"), "seconds": seconds}


def opensim_joint_reactions_setup(setup: str | Path, results_dir: str | Path) -> dict:
    """OpenSim's AnalyzeTool run on an AnalyzeTool setup file with a JointReaction analysis as it is (paths
    resolved from its folder), its results in ``results_dir``: ``loads`` and ``seconds``."""
    osim = require_opensim()
    setup = Path(setup).resolve()
    results_dir = Path(results_dir).resolve()
    here = os.getcwd()
    os.chdir(setup.parent)
    try:
        tool = osim.AnalyzeTool(str(setup))
        tool.setResultsDir(str(results_dir))
        name = tool.getName()
        analyses = tool.getAnalysisSet()
        label = next(analyses.get(i).getName() for i in range(analyses.getSize())
                     if analyses.get(i).getConcreteClassName() == "JointReaction")
        t0 = _time.perf_counter()
        tool.run()
        seconds = _time.perf_counter() - t0
    finally:
        os.chdir(here)
    return {"loads": read_storage(results_dir / f"{name}_{label}_ReactionLoads.sto"), "seconds": seconds}
