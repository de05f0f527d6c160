"""Joint reactions along a walking trial, timed with OpenSim and with the package in one run.

opensim-models' Gait10dof18musc trial (151 frames, 10 coordinates, 18 muscles, the pipeline's reserve actuator file,
both feet's ground reactions, the 6 Hz filter): the muscle and actuator forces from the package's
``static-optimization`` (not timed), then the hip, knee and ankle reactions on the child in its frame:

* OpenSim: ``AnalyzeTool`` with a ``JointReaction`` on a setup file (model loading, filtering and files included);
* the package: ``osim-emb joint-reactions --setup`` on the same file, in this process (model loading, filtering and
  files included, as OpenSim's), and the computation alone (``joint_reactions_of_motion`` on the loaded model and
  arrays), each after one warm-up call so that numba's compilation or cache loading is not timed.

    python benchmarks/bench_joint_reactions.py [--repeat 3]

Prints each time, the ratios, and the largest difference of the two results at the frames OpenSim reports.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_moment_arms import time_calls  # noqa: E402  (the benchmarks' one timing loop)


def pipeline_study():
    spec = importlib.util.spec_from_file_location("gait_study", HERE.parent / "validation" / "gait_pipeline" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, repeat: int) -> list[float]:
    """Wall times of ``repeat`` calls of ``fn`` after one warm-up call (numba's compilation or cache load)."""
    fn()
    return time_calls(fn, repeat)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipeline", type=Path, help="opensim-models' Pipelines/Gait10dof18musc (default: the mirror)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from osim_emb import load_osim
    from osim_emb.cli.common import limit_forces_applied
    from osim_emb.cli.main import main as cli
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.io.force_set import read_actuators
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions_setup
    from osim_emb.opensim.static_optimization import read_storage
    from osim_emb.simulation.joint_reactions import joint_reactions_of_motion, reaction_requests
    from osim_emb.simulation.motions import analysis_states
    study = pipeline_study()
    with tempfile.TemporaryDirectory() as scratch:
        folder = study.fetch_files(args.pipeline, Path(scratch))
        model_path = folder / "subject01.osim"
        model = load_osim(str(model_path))
        t, q, _ = coordinates_from_motion(model, *read_motion(folder / "subject01_walk_IK.mot"))
        (folder / "so_setup.xml").write_text(study.SETUP.format(t0=t[0], t1=t[-1]))
        assert cli(["static-optimization", "--setup", str(folder / "so_setup.xml"), "--quiet"]) == 0
        setup = folder / "jr_setup.xml"
        setup.write_text(study.JR_SETUP.format(t0=t[0], t1=t[-1]))
        opensim_times = [opensim_joint_reactions_setup(setup, folder / f"opensim_{i}")["seconds"]
                         for i in range(args.repeat)]
        ref = read_storage(folder / "opensim_0" / "walk_JointReaction_ReactionLoads.sto")

        def whole_run():
            assert cli(["joint-reactions", "--setup", str(setup), "--overwrite", "--quiet"]) == 0
        whole = timed(whole_run, args.repeat)
        ours = read_storage(folder / "jr_setup_results" / "walk_JointReaction_ReactionLoads.sto")
        qs, qd, _ = analysis_states(t, q, None, lowpass_hz=6.0)
        table = read_storage(folder / "so_setup_results" / "walk_StaticOptimization_force.sto")
        forces = {c: table[c].to_numpy() for c in table.columns if c != "time"}
        actuators, _ = read_actuators(folder / "gait10dof_Reserve_Actuators.xml")
        loads = read_external_loads(folder / "subject01_walk_grf.xml")
        requests = reaction_requests(model, ["hip_r", "knee_r", "ankle_r"], "child", "child")
        limits = limit_forces_applied(model, "bench")

        def solve():
            return joint_reactions_of_motion(model, t, qs, qd, forces, requests=requests, actuators=actuators,
                                             external_loads=loads, limit_forces=limits)
        alone = timed(solve, args.repeat)
    labels = [c for c in ref.columns if c != "time"]
    near = np.abs(ours["time"].to_numpy()[:, None] - ref["time"].to_numpy()[None, :]).argmin(axis=0)
    diff = np.abs(ours[labels].to_numpy()[near] - ref[labels].to_numpy()).max()
    o, w, a = statistics.median(opensim_times), statistics.median(whole), statistics.median(alone)
    print(f"Gait10dof18musc walking trial: {len(t)} frames, 3 joints, {len(model.muscles)} muscles, "
          f"{len(actuators)} actuators, ground reactions, 6 Hz filter (medians of {args.repeat})")
    print(f"  OpenSim AnalyzeTool + JointReaction (whole run)       {o * 1e3:9.1f} ms")
    print(f"  osim-emb joint-reactions --setup (whole run)          {w * 1e3:9.1f} ms   ratio {o / w:6.1f}x")
    print(f"  osim-emb joint_reactions_of_motion (the computation)  {a * 1e3:9.1f} ms   ratio {o / a:6.1f}x")
    print(f"  largest |package - OpenSim| at the nearest frames: {diff:.3g} (N, N m, m; OpenSim's times are "
          "within 2e-6 s of the frames)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
