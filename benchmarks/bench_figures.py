"""Writing a comparison's figures on one process and on every CPU (``figure_style.save_all``), alternately.

The built-in shoulder's comparison A of the main job (``elv_angle``, ``shoulder_elv``, ``shoulder_rot`` in 1-degree
sweeps against OpenSim's references, read from the cache after a first run): its 9 figures as PDF, PNG and SVG (27
files), written with ``workers`` 1 and 2, twice each; the load average is printed beside each time (the machine may be
shared: parallel writing gains only where the other CPUs are free).

    python benchmarks/bench_figures.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import osim_emb as oe
from osim_emb.io.builtin_models import builtin_model_path
from osim_emb.report.comparison_figures import moment_arm_figures


def main() -> None:
    result = oe.compare_with_opensim(builtin_model_path(), ["elv_angle", "shoulder_elv", "shoulder_rot"],
                                     out_dir=None, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            for workers in (1, 2):
                t0 = time.perf_counter()
                files = moment_arm_figures(result, Path(tmp) / f"w{workers}", ("pdf", "png", "svg"), workers=workers)
                print(f"workers {workers}: {time.perf_counter() - t0:.2f} s, {len(files)} files, "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":  # the OpenSim reference workers import this file
    main()
