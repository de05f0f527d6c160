"""The seed's moment-arm study (section 4-4 A, Table 5, Figs 14-15) on the Holzbaur/MoBL shoulder.

    python validation/holzbaur_moment_arms/run.py [--step 1] [--models-dir ../shared/models]

For both `mobl_arms_holzbaur_nowrap_variant.osim` (no wrapping) and `mobl_arms_holzbaur.osim`
(wrapping, compared in `opensim_compat` mode), all 50 muscles, 3 swept coordinates (elv_angle,
shoulder_elv, shoulder_rot, the others at the anatomical zero of the seed) x 3 moment-arm
coordinates, against the three OpenSim references.  Writes, per model, `results/<model>/`:
summary.csv (max |difference| per muscle, condition and reference, with the reason where
OpenSim's computeMomentArm on the original model is expected to differ), leaders.csv (the
Table 5 leaders' moment arms, package and OpenSim), timings.csv, and the figures.  The full
tidy table (all rows) is written to out/ (not committed: ~20 MB).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from osim_emb.opensim.moment_arms import TABLE5_LEADERS, print_report  # noqa: E402
from osim_emb.report.comparisons import compare_with_opensim  # noqa: E402

SWEEP = ["elv_angle", "shoulder_elv", "shoulder_rot"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--step", type=float, default=1.0)
    ap.add_argument("--models-dir", default=os.environ.get("OSIM_EMB_MODELS", str(HERE.parents[2] / "shared" / "models")))
    ap.add_argument("--out", default=str(HERE.parents[1] / "out" / "holzbaur_moment_arms"),
                    help="folder of the full outputs (not committed)")
    ap.add_argument("--results", type=Path, default=HERE / "results",
                    help="folder of the committed subset (default: results/)")
    args = ap.parse_args()
    for name, compat in (("mobl_arms_holzbaur_nowrap_variant", False), ("mobl_arms_holzbaur", True)):
        path = str(Path(args.models_dir) / f"{name}.osim")
        full = Path(args.out) / name
        result = compare_with_opensim(path, SWEEP, step_deg=args.step, fixed={c: 0.0 for c in SWEEP},
                                      opensim_compat=compat, out_dir=full, formats=("pdf", "png"))
        print_report(result)
        res = args.results / name
        res.mkdir(parents=True, exist_ok=True)
        for f in list(res.glob("*.pdf")) + list(res.glob("*.png")):
            f.unlink()  # figures of an earlier layout
        for f in ("summary.csv", "timings.csv", "lengths_summary.csv"):
            if (full / f).exists():
                shutil.copy(full / f, res / f)
        for f in full.glob("*.p*"):
            if f.suffix in (".pdf", ".png"):
                shutil.copy(f, res / f.name)
        t = result["table"]
        t[t.muscle.isin(TABLE5_LEADERS)].to_csv(res / "leaders.csv.gz", index=False, float_format="%.10e")
        (res / "worst.txt").write_text("\n".join(f"{k}: {v}" for k, v in result["worst"].items()) + "\n")


if __name__ == "__main__":
    main()
