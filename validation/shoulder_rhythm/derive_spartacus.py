"""Derive the committed rhythm data from a fetched copy of the Spartacus dataset (issue 14).

    python validation/shoulder_rhythm/derive_spartacus.py /path/to/shoulder-kinematics [--step 10]

Writes data/spartacus_derived.csv (one row per sample: study, shoulder, task, plane of elevation,
elevation, ISB angles, MoBL coordinates; degrees) and data/spartacus_studies.csv (citation of each study).
The conversion is osim_emb.rhythm.spartacus.read_spartacus, documented in docs/rhythm.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from osim_emb.rhythm.spartacus import ISB_NAMES, ISB_TO_MOBL, SUSPECT, read_spartacus  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", help="the Spartacus repository (with spartacus/dataset and spartacus/data)")
    ap.add_argument("--step", type=float, default=10.0, help="resampling step of each curve's abscissa (deg)")
    args = ap.parse_args()
    d = read_spartacus(args.root, step_deg=args.step)
    out = HERE / "data"
    out.mkdir(exist_ok=True)
    isb = [n for v in ISB_NAMES.values() for n in v]
    cols = ["study", "shoulder", "task", "plane_of_elevation_deg", "elevation_deg", *isb, *ISB_TO_MOBL]
    d[cols].to_csv(out / "spartacus_derived.csv", index=False, float_format="%.2f")
    studies = d.groupby("study").agg(authors=("authors", "first"), year=("year", "first"), doi=("doi", "first"),
                                     euler_sequences=("euler_sequence", lambda s: " ".join(sorted(set(s)))),
                                     shoulders=("shoulder", "nunique"), samples=("shoulder", "size"))
    studies.to_csv(out / "spartacus_studies.csv")
    # trends of every curve, the excluded ones included: the evidence for osim_emb.rhythm.spartacus.SUSPECT
    everything = read_spartacus(args.root, step_deg=args.step, exclude={})
    rows = []
    for (study, task), g in everything[everything.task != "horizontal flexion"].groupby(["study", "task"]):
        row = {"study": study, "task": task, "excluded": any(study == s for s, _ in SUSPECT)}
        for c in ISB_TO_MOBL:
            ok = g[c].notna()
            row[f"{c}_deg_per_deg"] = np.polyfit(g.elevation_deg[ok], g[c][ok], 1)[0] if ok.sum() > 3 else np.nan
        rows.append(row)
    pd.DataFrame(rows).to_csv(out / "spartacus_trends.csv", index=False, float_format="%.3f")
    print(f"wrote {out / 'spartacus_derived.csv'} ({len(d)} samples), {out / 'spartacus_studies.csv'} and "
          f"{out / 'spartacus_trends.csv'} (slope of each coordinate against elevation, per study and task)")


if __name__ == "__main__":
    main()
