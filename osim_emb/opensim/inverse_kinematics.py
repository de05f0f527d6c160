"""OpenSim 4.6's InverseKinematicsTool: the reference for ``osim-emb inverse-kinematics``."""

from __future__ import annotations

import os
import tempfile
import time as _time
from pathlib import Path
from typing import Mapping, Sequence

from osim_emb.opensim.bridge import require_opensim
from osim_emb.opensim.static_optimization import read_storage

__all__ = ["opensim_inverse_kinematics"]


def opensim_inverse_kinematics(model_path: str | Path | None = None, marker_path: str | Path | None = None, *,
                               setup: str | Path | None = None, marker_weights: Mapping[str, float] | None = None,
                               coordinate_tasks: Sequence[tuple] = (), time_range: tuple[float, float] | None = None,
                               accuracy: float | None = None, coordinate_file: str | Path | None = None,
                               out_dir: str | Path | None = None) -> dict:
    """Run OpenSim's InverseKinematicsTool, from a ``setup`` file (its paths resolved from its folder, as
    OpenSim's command-line tool) or on ``model_path`` and ``marker_path`` with ``marker_weights`` (name -> weight)
    and ``coordinate_tasks`` ((name, weight, value_type, value) with OpenSim's value types); ``accuracy`` and
    ``time_range`` override the setup's. Returns ``coordinates`` (the .mot table as written: rotational
    coordinates in degrees), ``errors`` (``_ik_marker_errors.sto``), ``locations``
    (``_ik_model_marker_locations.sto``) and ``seconds`` (the tool's ``run``)."""
    osim = require_opensim()
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(out_dir if out_dir is not None else scratch).resolve()
        work.mkdir(parents=True, exist_ok=True)
        if setup is not None:
            setup = Path(setup).resolve()
            os.chdir(setup.parent)  # OpenSim resolves the setup's relative paths from the working folder
        try:
            if setup is not None:
                tool = osim.InverseKinematicsTool(str(setup))
            else:
                tool = osim.InverseKinematicsTool()
                tool.set_model_file(str(Path(model_path).resolve()))
                tool.set_marker_file(str(Path(marker_path).resolve()))
                tasks = osim.IKTaskSet()
                for name, weight in (marker_weights or {}).items():
                    task = osim.IKMarkerTask()
                    task.setName(name)
                    task.setWeight(float(weight))
                    tasks.cloneAndAppend(task)
                for name, weight, value_type, value in coordinate_tasks:
                    task = osim.IKCoordinateTask()
                    task.setName(name)
                    task.setWeight(float(weight))
                    task.setValueType({"default_value": osim.IKCoordinateTask.DefaultValue,
                                       "manual_value": osim.IKCoordinateTask.ManualValue,
                                       "from_file": osim.IKCoordinateTask.FromFile}[value_type])
                    task.setValue(float(value))
                    tasks.cloneAndAppend(task)
                tool.set_IKTaskSet(tasks)
                if coordinate_file is not None:
                    tool.set_coordinate_file(str(Path(coordinate_file).resolve()))
            if time_range is not None:
                tool.set_time_range(0, float(time_range[0]))
                tool.set_time_range(1, float(time_range[1]))
            if accuracy is not None:
                tool.set_accuracy(float(accuracy))
            tool.setName("opensim")
            tool.set_report_errors(True)
            tool.set_report_marker_locations(True)
            tool.setResultsDir(str(work))
            tool.set_output_motion_file(str(work / "opensim_ik.mot"))
            start = _time.perf_counter()
            if not tool.run():
                raise RuntimeError(f"OpenSim's InverseKinematicsTool failed on {setup or model_path}")
            seconds = _time.perf_counter() - start
        finally:
            os.chdir(here)
        return {"coordinates": read_storage(work / "opensim_ik.mot"),
                "errors": read_storage(work / "opensim_ik_marker_errors.sto"),
                "locations": read_storage(work / "opensim_ik_model_marker_locations.sto"), "seconds": seconds}
