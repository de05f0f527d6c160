"""Where OpenSim 4.6's Scholz2015GeometryPath, started from a contact hint, agrees with the package's hint-side rule.

    PYTHONPATH=. python validation/smooth_paths/hint_sides.py

The test's elbow model (a WrapCylinder of radius 2 cm about the elbow axis, a triceps-like unit behind it) with the
legacy quadrant +x, -x, +y or -y is converted by ``osim-emb smooth-paths --check-configurations -1`` (the hint
kept, unchecked); the elbow is swept over -180..180 degrees in 1-degree steps and OpenSim's ``getLength`` on a State
initialized at each angle (the solver starts from the hint) is compared with the package's.  Each angle is
classified by the straight segment between the obstacle's neighbours (cylinder frame, projected on the xy plane):
it meets the obstacle, or misses it with its point nearest the axis inside the segment, or at an end point.
Writes ``results/hint_sides.csv`` (counts of angles agreeing to 1e-8 m, per quadrant and class).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "results", help="results folder (default results/)")
    args = ap.parse_args(argv)
    import opensim as osim
    from test_smooth_paths import _legacy_elbow_model_with_quadrant

    from osim_emb.cli.smooth_paths import TOLERANCE, OpenSimLengthCheck
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    theta = np.radians(np.arange(-180, 181, 1.0))
    q = np.column_stack([np.zeros_like(theta), theta])
    # the segment humerus point -> forearm point in the cylinder's frame (the model of the test)
    p1 = np.array([-0.025, 0.15])
    v = np.array([-0.02, -0.03])
    p2 = np.column_stack([np.cos(theta) * v[0] - np.sin(theta) * v[1], np.sin(theta) * v[0] + np.cos(theta) * v[1]])
    d = p2 - p1
    s = np.clip(-(d @ p1) / np.einsum("ni,ni->n", d, d), 0.0, 1.0)
    nearest = np.linalg.norm(p1 + s[:, None] * d, axis=1)
    kind = np.where(nearest < 0.02, "meets the obstacle",
                    np.where((s > 0) & (s < 1), "misses it, nearest inside the segment",
                             "misses it, nearest at an end point"))
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for quadrant in ("+x", "-x", "+y", "-y"):
            src, out = Path(scratch) / f"legacy{quadrant}.osim", Path(scratch) / f"smooth{quadrant}.osim"
            _legacy_elbow_model_with_quadrant(osim, src, quadrant)
            subprocess.run([sys.executable, "-m", "osim_emb.cli", "smooth-paths", str(src), "-o", str(out),
                            "--check-configurations", "-1"], check=True, capture_output=True)
            model = load_osim(out)
            theirs, _, _ = OpenSimLengthCheck().lengths(out, model, ["triceps"], q)  # cold: from the hint
            ours = muscle_lengths(model, q, ["triceps"], allow_out_of_range=True)
            agree = np.abs(theirs - ours)[:, 0] < TOLERANCE
            for k in np.unique(kind):
                sel = kind == k
                rows.append({"quadrant": quadrant, "segment": k, "angles": int(sel.sum()),
                             "agree_1e-8": int(agree[sel].sum()),
                             "opensim_over_1m": int((theirs[sel, 0] > 1.0).sum())})
    table = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "hint_sides.csv", index=False)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
