"""Sensitivity of MoBL's moment arms to its muscle attachment points (issue 15, item 4).

N variants of mobl_arms_holzbaur.osim (default 200) with every fixed and conditional path point moved
uniformly within +-2 mm per axis (variant k: seed k; moving path points and wrap objects as in the model)
are swept with `osim-emb batch` on a local Dask cluster: elv_angle, shoulder_elv, shoulder_rot and
elbow_flexion over their ranges in 3-degree steps (the other coordinates at their defaults).  The moment
arm of each muscle about the swept coordinate is summarised over the variants at every pose (5th, 50th and
95th percentiles, extremes, the nominal model) and per muscle (the widest 5-95 % band over the poses).

    python validation/sensitivity/run.py [--variants 200] [--workers 2] [--keep DIR]
    python validation/sensitivity/run.py --figures-only     # redraw figures/ from results/ (seconds)

Writes results/summary_by_pose.csv.gz, results/spread_by_muscle.csv, results/run.json and figures/.
The full Parquet table (one row per variant, muscle, coordinate and pose) is written to a temporary
folder (or --keep DIR) and not committed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from osim_emb.opensim.batch import ModelTask, model_tasks, run_batch

HERE = Path(__file__).resolve().parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[2] / "shared" / "models"))
SWEEP = ["elv_angle", "shoulder_elv", "shoulder_rot", "elbow_flexion"]
STEP_DEG = 3.0
TOLERANCE_M = 0.002
NO_MOMENT_ARM_M = 1e-9  # |nominal moment arm| below this: the muscle does not span the coordinate


def summarise(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    own = table[table.swept_coordinate == table.moment_arm_coordinate]
    keys = ["muscle", "swept_coordinate", "swept_value_deg_or_mm"]
    nominal = own[own.variant < 0].set_index(keys).moment_arm_m.rename("nominal_m")
    var = own[own.variant >= 0].groupby(keys).moment_arm_m
    by_pose = pd.concat([nominal, var.quantile(0.05).rename("p05_m"), var.median().rename("p50_m"),
                         var.quantile(0.95).rename("p95_m"), var.min().rename("min_m"), var.max().rename("max_m"),
                         var.std().rename("std_m")], axis=1).reset_index()
    by_pose["band_5_95_m"] = by_pose.p95_m - by_pose.p05_m
    by_pose["max_abs_deviation_m"] = np.maximum(by_pose.max_m - by_pose.nominal_m, by_pose.nominal_m - by_pose.min_m)
    g = by_pose.groupby(["muscle", "swept_coordinate"])
    spread = pd.concat([g.band_5_95_m.max().rename("max_band_5_95_m"),
                        g.max_abs_deviation_m.max().rename("max_abs_deviation_m"),
                        g.nominal_m.apply(lambda s: s.abs().max()).rename("max_abs_nominal_m")], axis=1).reset_index()
    # relative band only where the muscle moves the coordinate (a nominal moment arm of zero -- a muscle that
    # does not span it -- gives no ratio; its band is rounding)
    spanned = spread.max_abs_nominal_m > NO_MOMENT_ARM_M
    spread["max_band_over_max_nominal"] = (spread.max_band_5_95_m / spread.max_abs_nominal_m).where(spanned)
    return by_pose, spread


def figures(by_pose: pd.DataFrame, spread: pd.DataFrame, out: Path) -> list[str]:
    """The two figures, in the project's style (osim_emb.report.figure_style)."""
    from osim_emb.report import figure_style as fs
    written = []
    fig, axes = fs.figure("double", nrows=len(SWEEP), height=9.0, sharex=True)
    muscles = sorted(spread.muscle.unique())
    x = np.arange(len(muscles))
    for ax, c in zip(axes[:, 0], SWEEP):
        s = spread[spread.swept_coordinate == c].set_index("muscle").reindex(muscles)
        ax.bar(x, 1000 * s.max_band_5_95_m, color=fs.color(0))
        ax.set_ylabel(f"{c}\nband (mm)")
        ax.grid(axis="x", visible=False)
    axes[-1, 0].set_xticks(x, muscles, rotation=90)
    axes[0, 0].set_title("MoBL, attachments ±2 mm: widest 5–95 % band of each moment arm over the sweep", loc="left")
    written += fs.save(fig, out / "band_by_muscle", ("png", "pdf", "svg"))
    top = spread.sort_values("max_band_5_95_m", ascending=False).head(6)
    fig, axes = fs.figure("double", nrows=2, ncols=3, height=4.8)
    for ax, (_, row) in zip(axes.flat, top.iterrows()):
        d = by_pose[(by_pose.muscle == row.muscle) & (by_pose.swept_coordinate == row.swept_coordinate)]
        a = d.swept_value_deg_or_mm
        ax.fill_between(a, 1000 * d.min_m, 1000 * d.max_m, color=fs.color(5), alpha=0.35, lw=0, label="min–max")
        ax.fill_between(a, 1000 * d.p05_m, 1000 * d.p95_m, color=fs.color(0), alpha=0.5, lw=0, label="5–95 %")
        ax.plot(a, 1000 * d.nominal_m, color=fs.color(6), lw=0.8, label="nominal model")
        ax.set_title(f"{row.muscle} about {row.swept_coordinate}")
        ax.set_xlabel(f"{row.swept_coordinate} (deg)")
        ax.set_ylabel("moment arm (mm)")
    fs.legend_below(fig)
    written += fs.save(fig, out / "widest_bands", ("png", "pdf", "svg"))
    return [str(p) for p in written]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", help="write the full Parquet dataset here (a new folder)")
    ap.add_argument("--figures-only", action="store_true", help="redraw the figures from the committed results")
    ap.add_argument("--out", type=Path, default=HERE / "results",
                    help="folder of the tables (default: results/); the figures go to its sibling figures/")
    args = ap.parse_args()
    figures_dir = args.out.parent / "figures"
    if args.figures_only:
        by_pose = pd.read_csv(HERE / "results" / "summary_by_pose.csv.gz")
        spread = pd.read_csv(HERE / "results" / "spread_by_muscle.csv")
        for p in figures(by_pose, spread, figures_dir):
            print("wrote", p)
        return
    model = MODELS / "mobl_arms_holzbaur.osim"
    tasks = [ModelTask(str(model))] + model_tasks(model, variants=args.variants, tolerance_m=TOLERANCE_M,
                                                  seed=args.seed)
    parquet = Path(args.keep) if args.keep else Path(tempfile.mkdtemp()) / "mobl_variants.parquet"
    res = run_batch(tasks, SWEEP, STEP_DEG, parquet, ma_coordinates=SWEEP, n_workers=args.workers)
    print(f"{res['rows']} rows from {res['models']} models in {res['seconds']:.0f} s "
          f"({res['models_per_second']:.2f} models/s, {res['workers']} workers)")
    table = pd.read_parquet(parquet, columns=["variant", "muscle", "swept_coordinate", "swept_value_deg_or_mm",
                                              "moment_arm_coordinate", "moment_arm_m"])
    by_pose, spread = summarise(table)
    results = args.out
    results.mkdir(parents=True, exist_ok=True)
    by_pose.to_csv(results / "summary_by_pose.csv.gz", index=False, float_format="%.6e")
    spread.sort_values("max_band_5_95_m", ascending=False).to_csv(results / "spread_by_muscle.csv", index=False,
                                                                    float_format="%.4e")
    meta = {"model": model.name, "variants": args.variants, "seed_of_variant_k": f"{args.seed} + k",
            "tolerance_m": TOLERANCE_M, "sweep": SWEEP, "step_deg": STEP_DEG, "rows": res["rows"],
            "seconds": round(res["seconds"], 1), "workers": res["workers"], "machine": platform.processor() or
            platform.machine()}
    (results / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    for p in figures(by_pose, spread, figures_dir):
        print("wrote", p)
    top = spread.sort_values("max_band_5_95_m", ascending=False).head(8)
    print(top.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
