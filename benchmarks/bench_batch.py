"""Throughput of `osim-emb batch` (issue 15, item 4): moment-arm sweeps of perturbed MoBL variants on an
embedded Dask LocalCluster with 1 and with 2 worker processes, and the same tasks run one after another
in this process (no Dask) for comparison.

Each task loads MoBL (cached per worker), perturbs its attachment points by up to 2 mm, sweeps elv_angle,
shoulder_elv, shoulder_rot and elbow_flexion in 3-degree steps (216 poses) and returns the moment arms of
all 50 muscles about the four coordinates (43 200 rows).  Wall times include starting the cluster's
workers' first model load and writing the Parquet parts; they exclude starting the cluster.

    python benchmarks/bench_batch.py [--variants 16]      # about 1 min
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from osim_emb.opensim.batch import model_tasks, run_batch, sweep_task

HERE = Path(__file__).resolve().parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))
SWEEP = ["elv_angle", "shoulder_elv", "shoulder_rot", "elbow_flexion"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", type=int, default=16)
    args = ap.parse_args()
    tasks = model_tasks(MODELS / "mobl_arms_holzbaur.osim", variants=args.variants, tolerance_m=0.002)
    sweep_task(tasks[0], SWEEP, 3.0)  # load and compile in this process
    t0 = time.perf_counter()
    rows = sum(len(sweep_task(t, SWEEP, 3.0)) for t in tasks)
    seq = time.perf_counter() - t0
    print(f"in-process loop : {len(tasks)} models, {rows} rows in {seq:6.2f} s = {len(tasks) / seq:.2f} models/s")
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            res = run_batch(tasks, SWEEP, 3.0, Path(tmp) / f"w{workers}.parquet", n_workers=workers, progress=False)
            print(f"Dask, {workers} worker{'s' if workers > 1 else ' '}: {res['models']} models, {res['rows']} rows in "
                  f"{res['seconds']:6.2f} s = {res['models_per_second']:.2f} models/s")


if __name__ == "__main__":
    main()
