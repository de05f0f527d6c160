"""Body kinematics along a motion, timed with OpenSim and with the package in one run.

leg6dof9musc (the reference models' leg: 6 coordinates, a coupled patella, 7 bodies) along a 2 s motion of all its
coordinates at 100 Hz (201 frames; the coupled coordinate's column included, as in an IK result):

* OpenSim: ``AnalyzeTool`` with a ``BodyKinematics`` analysis on the coordinates file (model loading, splining and
  files included);
* the package: ``osim-emb body-kinematics`` on the same file, in this process (model loading, splining and files
  included, as OpenSim's), and the computation alone (``body_kinematics_of_motion`` on the loaded model and the
  splined states), each after one warm-up call.

    python benchmarks/bench_body_kinematics.py [--repeat 3] [--model PATH]

Prints each time, the ratios, and the largest difference of the positions and velocities (OpenSim's tool assembles
each state against the coupler and splines the coupled coordinate's column itself: ~1e-7 and ~1e-4, docs/kinematics.md;
its accelerations are its forward dynamics', not compared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_moment_arms import time_calls  # noqa: E402  (the benchmarks' one timing loop)

MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))


def main(argv=None) -> int:
    import contextlib
    import io

    from osim_emb.cli.main import main as cli
    from osim_emb.core.kinematics import dependent_coordinate_columns
    from osim_emb.io import load_osim
    from osim_emb.simulation.body_kinematics import opensim_bodies
    from osim_emb.io.motion import coordinates_from_motion, read_motion, write_motion
    from osim_emb.opensim.body_kinematics import opensim_body_kinematics
    from osim_emb.opensim.static_optimization import read_storage
    from osim_emb.simulation.body_kinematics import body_kinematics_of_motion
    from osim_emb.simulation.motions import analysis_states
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=MODELS / "leg6dof9musc.osim")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    model = load_osim(str(args.model))
    t = np.linspace(0.0, 2.0, 201)
    lo, hi = model.coordinate_ranges.T
    mid, amp = (lo + hi) / 2, np.minimum((hi - lo) / 4, 0.5)
    columns = {"time": t}
    for k, name in enumerate(model.coordinate_names):
        columns[name] = mid[k] + amp[k] * np.sin(2 * np.pi * (0.5 + 0.2 * k) * t)
    # the coupled coordinates too, as an IK result holds them (without them OpenSim's tool takes their speeds as 0)
    q = np.column_stack([columns[n] for n in model.coordinate_names])
    dependent = dependent_coordinate_columns(model, q, np.zeros_like(q))
    columns.update({n: v for n, v in dependent.items() if not n.endswith("_u")})
    with tempfile.TemporaryDirectory() as tmp:
        motion = Path(tmp) / "motion.mot"
        write_motion(motion, pd.DataFrame(columns))
        theirs = [opensim_body_kinematics(args.model, motion) for _ in range(args.repeat)]
        opensim_s = [r["seconds"] for r in theirs]

        counter = iter(range(10 ** 6))

        def command():
            prefix = Path(tmp) / f"run{next(counter)}"
            with contextlib.redirect_stdout(io.StringIO()):
                cli(["-q", "body-kinematics", str(args.model), str(motion), "-o", str(prefix)])

        command()
        command_s = time_calls(command, args.repeat)
        time, q, qd = coordinates_from_motion(model, *read_motion(motion))
        states = analysis_states(time, q, qd)

        def compute():
            return body_kinematics_of_motion(model, time, *states)

        compute()
        compute_s = time_calls(compute, args.repeat)
        ours = compute()
        ref = theirs[0]
        d_pos = float((ours["pos"] - ref["pos"][list(ours["pos"].columns)]).abs().to_numpy().max())
        d_vel = float((ours["vel"] - ref["vel"][list(ours["vel"].columns)]).abs().to_numpy().max())
        written = read_storage(Path(tmp) / "run0_BodyKinematics_pos_global.sto")
        d_file = float((written[list(ours["pos"].columns)] - ours["pos"]).abs().to_numpy().max())
    o, c, k = statistics.median(opensim_s), statistics.median(command_s), statistics.median(compute_s)
    print(f"{args.model.name}: {len(t)} frames, {len(opensim_bodies(model))} bodies")
    print(f"OpenSim AnalyzeTool + BodyKinematics   {o:8.3f} s")
    print(f"osim-emb body-kinematics (command)     {c:8.3f} s   {o / c:6.1f}x")
    print(f"body_kinematics_of_motion (computation) {k:8.4f} s   {o / k:6.1f}x")
    print(f"largest differences: positions {d_pos:.2e} (m, deg), velocities {d_vel:.2e} (m/s, deg/s); "
          f"the command's file against the computation {d_file:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
