"""OpenSim 4.6's JointReaction analysis (AnalyzeTool): the reference for ``osim-emb joint-reactions``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from osim_emb.opensim.bridge import require_opensim
from osim_emb.opensim.static_optimization import analyze_tool, read_storage, run_analysis, run_setup

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
        tool, times = analyze_tool(osim, "jr", model_path, Path(motion_path).resolve(), work, lowpass_hz=lowpass_hz,
                                   external_loads=external_loads, actuator_files=actuator_files)
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
        seconds = run_analysis(osim, tool, jr, work / "joint_reaction_setup.xml")
        return {"loads": read_storage(work / "results" / "jr_JointReaction_ReactionLoads.sto"), "seconds": seconds}


def opensim_joint_reactions_setup(setup: str | Path, results_dir: str | Path) -> dict:
    """OpenSim's AnalyzeTool run on an AnalyzeTool setup file with a JointReaction analysis as it is (paths
    resolved from its folder), its results in ``results_dir``: ``loads`` and ``seconds``."""
    name, analyses, seconds = run_setup(setup, results_dir)
    label = next(n for kind, n in analyses if kind == "JointReaction")
    return {"loads": read_storage(Path(results_dir).resolve() / f"{name}_{label}_ReactionLoads.sto"), "seconds": seconds}
