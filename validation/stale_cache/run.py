"""OpenSim's stale wrap-point cache (issue 4): how much it changes MoBL's lengths and moment arms.

    python validation/stale_cache/run.py [--models-dir ../shared/models]

OpenSim caches each wrap point's ground position at its first query in a pose and does not refresh it
when a later pass of the path construction moves the point; on paths with two or more wrap objects
getLength then sums straight segments to old tangent points (docs/moment_arms.md).  The package computes
with the current positions by default and reproduces the cache with opensim_compat=True.  This study
compares the two over 500 random poses and over a 1-degree sweep of shoulder_elv, with OpenSim's own
getLength overlaid, and writes results/: per_muscle.csv, sweep.csv, stale_cache.pdf/png.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from osim_emb.io import load_osim  # noqa: E402
from osim_emb.paths.geometry import lengths_and_moment_arms  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models-dir", default=os.environ.get("OSIM_EMB_MODELS", str(HERE.parents[2] / "shared" / "models")))
    ap.add_argument("--poses", type=int, default=500)
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output folder (default: results/)")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    path = Path(args.models_dir) / "mobl_arms_holzbaur.osim"
    m = load_osim(path)
    rng = np.random.default_rng(2026)
    lo, hi = m.coordinate_ranges.T
    q = rng.uniform(lo, hi, (args.poses, m.n_q))
    l0, r0 = lengths_and_moment_arms(m, q, opensim_compat=False)
    l1, r1 = lengths_and_moment_arms(m, q, opensim_compat=True)
    names = [mu.name for mu in m.muscles]
    multi = [mu.name for mu in m.muscles if len(mu.wraps) >= 2]
    dl = np.abs(l0 - l1)
    rows = [{"muscle": n, "wrap_objects": len(m.muscles[j].wraps), "poses_affected": int((dl[:, j] > 1e-9).sum()),
             "median_length_difference_m": float(np.median(dl[dl[:, j] > 1e-9, j])) if (dl[:, j] > 1e-9).any() else 0.0,
             "max_length_difference_m": float(dl[:, j].max()),
             "max_moment_arm_difference_m": float(np.abs(r0[:, :, j] - r1[:, :, j]).max())}
            for j, n in enumerate(names)]
    per = pd.DataFrame(rows).sort_values("max_length_difference_m", ascending=False)
    per.to_csv(out / "per_muscle.csv", index=False, float_format="%.4e")
    print(per.head(12).to_string(index=False))
    # a sweep of shoulder_elv for the most affected muscle, with OpenSim's getLength
    # the most often affected unit; sweep shoulder_elv through one of its affected poses
    worst = per.sort_values("poses_affected", ascending=False).iloc[0].muscle
    jj = names.index(worst)
    affected = np.flatnonzero(dl[:, jj] > 1e-9)
    base = q[affected[np.argsort(dl[affected, jj])[len(affected) // 2]]]
    qs = np.tile(base, (181, 1))
    qs[:, m.coordinate_index("shoulder_elv")] = np.radians(np.arange(181.0)).clip(*m.coordinates[1].range)
    j = names.index(worst)
    a0 = lengths_and_moment_arms(m, qs, [worst], opensim_compat=False)[0][:, 0]
    a1 = lengths_and_moment_arms(m, qs, [worst], opensim_compat=True)[0][:, 0]
    osl = np.full(len(qs), np.nan)
    try:
        from osim_emb.opensim.bridge import OpenSimReference
        ref = OpenSimReference(str(path), m)
        for i in range(len(qs)):
            ref.set_configuration(qs[i])
            osl[i] = ref.muscle_length(worst)
    except ImportError:
        pass
    pd.DataFrame({"shoulder_elv_deg": np.arange(181.0), "length_default_m": a0, "length_compat_m": a1,
                  "length_opensim_m": osl}).to_csv(out / "sweep.csv", index=False, float_format="%.10e")
    from osim_emb.report import figure_style as fs
    fig, axes = fs.figure("double", height=3.6, ncols=2)
    ax = axes[0]
    pm = per[per.muscle.isin(multi)].head(15)
    ax[0].bar(range(len(pm)), 1000 * pm.max_length_difference_m, color=fs.color(0), label="max")
    ax[0].bar(range(len(pm)), 1000 * pm.median_length_difference_m, color=fs.color(1), hatch="//",
              label="median (affected poses)")
    ax[0].set_xticks(range(len(pm)), [f"{n} ({k}/{args.poses})" for n, k in zip(pm.muscle, pm.poses_affected)],
                     rotation=90)
    ax[0].set_yscale("log")
    ax[0].set_ylabel("|default − OpenSim-compatible|\nlength (mm)")
    ax[0].set_title(f"{args.poses} random poses, units with 2+ wraps")
    ax[1].plot(np.arange(181), 1000 * a0, label="package, current tangent points (default)", **fs.cue(0))
    ax[1].plot(np.arange(181), 1000 * a1, color=fs.color(1), linestyle="--", label="package, opensim_compat")
    if np.isfinite(osl).any():
        ax[1].plot(np.arange(181), 1000 * osl, color="#000000", linestyle=":", label="OpenSim getLength")
    typical = 1000 * np.concatenate([a0, a1])
    lo_, hi_ = np.percentile(typical, 2), np.percentile(typical, 90)
    ax[1].set_ylim(lo_ - 0.3 * (hi_ - lo_), hi_ + 0.6 * (hi_ - lo_))
    spikes = np.flatnonzero(1000 * np.maximum(a0, a1) > hi_ + 0.6 * (hi_ - lo_))
    if spikes.size:
        ax[1].annotate(f"off scale: up to {1000 * max(a0.max(), a1.max()):.0f} mm\n(OpenSim's cylinder\n"
                       "adjustment loop runs away)", xy=(spikes[0] - 3, hi_ + 0.25 * (hi_ - lo_)), fontsize=7,
                       ha="right")
    ax[1].set_xlabel("shoulder elv (deg)")
    ax[1].set_ylabel(f"{worst} length (mm)")
    ax[1].set_title("shoulder_elv sweep through an affected pose")
    fs.legend_below(fig)
    fs.save(fig, out / "stale_cache", ("pdf", "png", "svg"))
    print(f"sweep of {worst}: max |compat - OpenSim| = {np.nanmax(np.abs(a1 - osl)):.2e} m, "
          f"max |default - compat| = {np.abs(a0 - a1).max():.2e} m")


if __name__ == "__main__":
    main()
