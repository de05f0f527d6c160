"""Speed of ``osim-emb static-optimization`` against OpenSim's StaticOptimization (AnalyzeTool) in one run.

The walking trial of opensim-models' Gait10dof18musc pipeline (151 frames at 60 Hz, 18 Millard2012 muscles, ground
reactions of both feet, reserves 1000 on the pelvis and 100 elsewhere; ``validation/gait_pipeline``), from the git
mirror or ``--pipeline DIR``; without either, arm26 on a 101-frame motion.  Both sides do the whole job from the
files: OpenSim's tool (model copy with reserves, AnalyzeTool setup, run: load, spline, IPOPT at convergence 1e-8,
write) against the command in this process (load, spline, inverse dynamics, moment arms, force sharing, write),
each the median of ``--repeat`` runs after one warm-up (numba's compiled kernels loaded, not timed).  Prints both
times, their ratio and the largest activation difference (for the Millard muscles, OpenSim's f_opt differs from the
muscle's own: docs/muscles.md).

    python benchmarks/bench_static_optimization.py [--pipeline DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "validation" / "gait_pipeline"))


def arm26_case(folder: Path) -> dict:
    import os
    models = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))
    t = np.linspace(0.0, 1.0, 101)
    q = np.column_stack([0.3 + 0.4 * np.sin(2 * t), 1.0 + 0.6 * np.sin(3 * t)])
    rows = "\n".join(f"{a:.8f}\t{b:.10f}\t{c:.10f}" for a, b, c in zip(t, q[:, 0], q[:, 1]))
    motion = folder / "motion.mot"
    motion.write_text(f"motion\nversion=1\nnRows=101\nnColumns=3\ninDegrees=no\nendheader\n"
                      f"time\tr_shoulder_elev\tr_elbow_flex\n{rows}\n")
    return {"model": models / "arm26.osim", "motion": motion, "loads": None,
            "reserves": {"r_shoulder_elev": 10.0, "r_elbow_flex": 10.0}}


def gait_case(folder: Path, pipeline: Path | None) -> dict:
    from run import fetch_files  # validation/gait_pipeline/run.py
    fetch_files(pipeline, folder)
    from osim_emb import load_osim
    model = load_osim(str(folder / "subject01.osim"))
    return {"model": folder / "subject01.osim", "motion": folder / "subject01_walk_IK.mot",
            "loads": folder / "subject01_walk_grf.xml",
            "reserves": {n: (1000.0 if n.startswith("pelvis") else 100.0) for n in model.coordinate_names}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pipeline", type=Path, help="opensim-models' Pipelines/Gait10dof18musc")
    ap.add_argument("--arm26", action="store_true", help="arm26 instead of the walking trial")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from osim_emb.cli.main import main as cli
    from osim_emb.opensim.static_optimization import opensim_static_optimization, read_storage
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        try:
            case = arm26_case(folder) if args.arm26 else gait_case(folder, args.pipeline)
        except Exception as err:  # noqa: BLE001 - no mirror and no --pipeline: the built-in case
            print(f"(the walking trial is not available: {err}; arm26 instead)")
            case = arm26_case(folder)
        command = ["static-optimization", str(case["model"]), str(case["motion"]), "-o", str(folder / "ours"),
                   "--no-passive", "--overwrite", "--quiet",
                   *[f"--reserve={n}={f:g}" for n, f in case["reserves"].items()]]
        if case["loads"]:
            command += ["--external-loads", str(case["loads"])]

        def ours():
            assert cli(command) == 0

        def theirs():
            return opensim_static_optimization(case["model"], case["motion"], reserves=case["reserves"],
                                               muscles_only=True, external_loads=case["loads"],
                                               out_dir=folder / "opensim")
        ours()
        ref = theirs()
        times = {"package": [], "opensim": []}
        for _ in range(args.repeat):
            for name, f in (("package", ours), ("opensim", theirs)):
                t0 = time.perf_counter()
                f()
                times[name].append(time.perf_counter() - t0)
        a = read_storage(folder / "ours_StaticOptimization_activation.sto")
        muscles = [c for c in a.columns if c != "time" and not c.startswith("reserve_")]
        diff = np.abs(a[muscles].to_numpy() - ref["activation"][muscles].to_numpy()).max()
    p, o = statistics.median(times["package"]), statistics.median(times["opensim"])
    print(f"{Path(case['model']).name} on {Path(case['motion']).name}: {len(a)} frames, {len(muscles)} muscles")
    print(f"OpenSim StaticOptimization (AnalyzeTool, whole run): {o:.3f} s (median of {args.repeat})")
    print(f"osim-emb static-optimization (whole command):       {p:.3f} s (median of {args.repeat})")
    print(f"ratio: {o / p:.1f}x; largest activation difference {diff:.2e}")


if __name__ == "__main__":
    main()
