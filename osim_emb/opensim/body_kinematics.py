"""OpenSim 4.6's BodyKinematics analysis (AnalyzeTool): the reference for ``osim-emb body-kinematics``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from osim_emb.opensim.bridge import require_opensim
from osim_emb.opensim.static_optimization import analyze_tool, read_storage, run_analysis

__all__ = ["opensim_body_kinematics"]


def opensim_body_kinematics(model_path: str | Path, motion_path: str | Path, *, bodies: Sequence[str] = ("all",),
                            local: bool = False, in_degrees: bool = True, lowpass_hz: float | None = None) -> dict:
    """OpenSim's BodyKinematics over the whole motion (a coordinates file, or a states file): its "pos", "vel" and
    "acc" tables and ``seconds`` (the tool's wall time)."""
    osim = require_opensim()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch).resolve()
        tool, times = analyze_tool(osim, "bk", model_path, Path(motion_path).resolve(), work, lowpass_hz=lowpass_hz)
        bk = osim.BodyKinematics()
        bk.setName("BodyKinematics")
        bk.setStartTime(float(times[0]))
        bk.setEndTime(float(times[-1]))
        bk.setExpressResultsInLocalFrame(bool(local))
        bk.setInDegrees(bool(in_degrees))
        names = osim.ArrayStr()
        for b in bodies:
            names.append(str(b))
        bk.setBodiesToRecord(names)
        seconds = run_analysis(osim, tool, bk, work / "body_kinematics_setup.xml")
        suffix = "_bodyLocal" if local else "_global"
        results = work / "results"
        return {"pos": read_storage(results / "bk_BodyKinematics_pos_global.sto"),
                "vel": read_storage(results / f"bk_BodyKinematics_vel{suffix}.sto"),
                "acc": read_storage(results / f"bk_BodyKinematics_acc{suffix}.sto"), "seconds": seconds}
