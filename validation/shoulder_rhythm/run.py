"""What the two-coordinate shoulder rhythm changes (issue 5): moment arms of the shoulder muscles of the
Holzbaur/MoBL model with its one-coordinate (SIMM) rhythm and with de Groot & Brand's (2001) two-coordinate
rhythm, over the elv_angle x shoulder_elv grid, and the agreement of the two-coordinate model with OpenSim.

    python validation/shoulder_rhythm/run.py [--step 1] [--models-dir ../shared/models]

Writes results/: largest_changes.csv, changes_by_muscle.csv, heat maps and line plots of the Table 5
leaders, opensim_agreement.csv and the computeMomentArm-departure figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from osim_emb.report import figure_style as fs  # noqa: E402
from osim_emb.io import load_osim  # noqa: E402
from osim_emb.io.osim_writer import write_osim  # noqa: E402
from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths  # noqa: E402
from osim_emb.progress import Progress  # noqa: E402
from osim_emb.rhythm.rhythms import apply  # noqa: E402
from osim_emb.opensim.moment_arms import TABLE5_LEADERS  # noqa: E402

OUT = HERE / "results"


def shoulder_muscles(model):
    """Units with a point on the thorax, clavicle or scapula and one on the humerus or beyond."""
    girdle = {"thorax", "clavicle", "scapula"}
    out = []
    for m in model.muscles:
        bodies = {p.source_body or p.body for p in m.points}
        if bodies & girdle and bodies - girdle:
            out.append(m.name)
    return out


def grid(model, step):
    ie, iz = model.coordinate_index("elv_angle"), model.coordinate_index("shoulder_elv")
    ea = np.arange(np.ceil(np.degrees(model.coordinates[ie].range[0])), np.degrees(model.coordinates[ie].range[1]) + 1e-4, step)
    ez = np.arange(np.ceil(np.degrees(model.coordinates[iz].range[0])), np.degrees(model.coordinates[iz].range[1]) + 1e-4, step)
    E, Z = np.meshgrid(ea, ez, indexing="ij")
    q = np.repeat(model.default_q[None], E.size, axis=0)
    q[:, model.coordinate_index("shoulder_rot")] = 0.0
    q[:, ie] = np.clip(np.radians(E.ravel()), *model.coordinates[ie].range)
    q[:, iz] = np.clip(np.radians(Z.ravel()), *model.coordinates[iz].range)
    return ea, ez, q


def moment_arms_in_chunks(model, q, muscles, chunk=1500, label=""):
    rs = []
    with Progress(f"moment arms {label}", len(q)) as bar:
        for s in range(0, len(q), chunk):
            rs.append(lengths_and_moment_arms(model, q[s:s + chunk], muscles)[1])
            bar.advance(len(q[s:s + chunk]))
    return np.concatenate(rs)


def opensim_agreement(nowrap_path, wrap_path, n=25, seed=3):
    """Two-coordinate models exported to .osim: the package's R against -dL/dq of OpenSim's getLength
    (nowrap: exact geometry), lengths against getLength (wrap, opensim_compat), and computeMomentArm."""
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.opensim.moment_arms import _length_derivative
    rows = []
    for label, path, compat in (("nowrap", nowrap_path, False), ("wrap", wrap_path, True)):
        m2 = apply(load_osim(path), "degroot2001")
        exported = HERE.parents[1] / "out" / "shoulder_rhythm" / f"{Path(path).stem}_degroot2001.osim"
        exported.parent.mkdir(parents=True, exist_ok=True)  # derived from the reference models: not committed
        write_osim(m2, exported)
        ref = OpenSimReference(str(exported), m2)
        rng = np.random.default_rng(seed)
        lo, hi = m2.coordinate_ranges.T
        q = m2.default_q[None].repeat(n, axis=0)
        for c in ("elv_angle", "shoulder_elv", "shoulder_rot"):
            k = m2.coordinate_index(c)
            q[:, k] = rng.uniform(lo[k] + 0.05, hi[k] - 0.05, n)
        names = shoulder_muscles(m2)
        length, r = lengths_and_moment_arms(m2, q, names, opensim_compat=compat)
        for i in range(n):
            ref.set_configuration(q[i])
            lo_ = np.array([ref.muscle_length(mu) for mu in names])
            for c in ("elv_angle", "shoulder_elv"):
                k = m2.coordinate_index(c)
                fd = -_length_derivative(ref, m2, q[i], k, names, 1e-6)
                ref.set_configuration(q[i])
                for j, mu in enumerate(names):
                    rows.append({"model": label, "configuration": i, "muscle": mu, "coordinate": c,
                                 "length_difference": length[i, j] - lo_[j], "ours": r[i, k, j],
                                 "opensim_minus_dL_dq": fd[j], "opensim_computeMomentArm": ref.moment_arm(mu, c)})
    return pd.DataFrame(rows)


def main():
    global OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: results/)")
    ap.add_argument("--step", type=float, default=1.0)
    ap.add_argument("--wrapped", action="store_true",
                    help="use the wrapped model for the grid (OpenSim's cylinder adjustment loops can run away and "
                         "produce metre-long paths in some poses; such poses, |R| > 0.15 m, are left out)")
    ap.add_argument("--models-dir", default=os.environ.get("OSIM_EMB_MODELS", str(HERE.parents[2] / "shared" / "models")))
    args = ap.parse_args()
    OUT = args.out
    OUT.mkdir(parents=True, exist_ok=True)
    path = Path(args.models_dir) / "mobl_arms_holzbaur.osim"
    grid_path = Path(args.models_dir) / ("mobl_arms_holzbaur.osim" if args.wrapped else
                                         "mobl_arms_holzbaur_nowrap_variant.osim")
    one = load_osim(grid_path)
    two = apply(one, "degroot2001")
    muscles = shoulder_muscles(one)
    ea, ez, q = grid(one, args.step)
    t0 = time.perf_counter()
    r1 = moment_arms_in_chunks(one, q, muscles, label="one-coordinate rhythm")
    r2 = moment_arms_in_chunks(two, q, muscles, label="two-coordinate rhythm")
    elapsed = time.perf_counter() - t0
    coords = ["elv_angle", "shoulder_elv", "shoulder_rot"]
    kk = [one.coordinate_index(c) for c in coords]
    d = r2[:, kk, :] - r1[:, kk, :]  # (G, 3, M)
    bad = (np.abs(r1[:, kk, :]) > 0.15) | (np.abs(r2[:, kk, :]) > 0.15)  # runaway wrap paths (wrapped model)
    if bad.any():
        print(f"left out {int(bad.sum())} of {bad.size} moment arms with |R| > 0.15 m (runaway wrapping)")
    d = np.where(bad, 0.0, d)
    rows = []
    for j, mu in enumerate(muscles):
        for ci, c in enumerate(coords):
            g = np.abs(d[:, ci, j])
            i = int(np.argmax(g))
            rows.append({"muscle": mu, "moment_arm_coordinate": c, "max_abs_change_m": g[i],
                         "p95_abs_change_m": float(np.percentile(g, 95)),
                         "rms_change_m": float(np.sqrt(np.mean(d[:, ci, j] ** 2))),
                         "at_elv_angle_deg": float(np.degrees(q[i, one.coordinate_index("elv_angle")])),
                         "at_shoulder_elv_deg": float(np.degrees(q[i, one.coordinate_index("shoulder_elv")])),
                         "one_coordinate_m": r1[i, kk[ci], j], "two_coordinate_m": r2[i, kk[ci], j]})
    table = pd.DataFrame(rows).sort_values("max_abs_change_m", ascending=False)
    table.to_csv(OUT / "changes_by_muscle.csv", index=False, float_format="%.6e")
    table.head(20).to_csv(OUT / "largest_changes.csv", index=False, float_format="%.6e")
    print(table.head(10).to_string(index=False))
    print(f"{grid_path.name}: {len(q)} configurations x {len(muscles)} muscles x 2 rhythms in {elapsed:.1f} s")
    (OUT / "grid_model.txt").write_text(f"{grid_path.name}, {len(q)} configurations, {elapsed:.1f} s\n")
    # heat maps of the change for the leaders
    leaders = [m for m in TABLE5_LEADERS if m in muscles]
    for ci, c in enumerate(coords[:2]):
        fig, axes = fs.figure("double", height=5.0, nrows=2, ncols=3, sharex=True, sharey=True)
        lim = np.abs(d[:, ci, [muscles.index(m) for m in leaders]]).max() * 100
        for ax, mu in zip(axes.ravel(), leaders):
            z = 100 * d[:, ci, muscles.index(mu)].reshape(len(ea), len(ez))
            im = ax.pcolormesh(ez, ea, z, cmap="RdBu_r", vmin=-lim, vmax=lim, shading="auto", rasterized=True)
            ax.set_title(mu)
            ax.grid(False)
        for ax in axes[-1]:
            ax.set_xlabel("shoulder elv (deg)")
        for ax in axes[:, 0]:
            ax.set_ylabel("elv angle (deg)")
        fig.colorbar(im, ax=axes, label=f"change of the moment arm\nabout {c} (cm)")
        fig.suptitle(f"Two-coordinate minus one-coordinate rhythm: moment arms about {c}")
        fs.save(fig, OUT / f"heatmap_change_{c}", ("pdf", "png"))
    # line plots: leaders' moment arms about shoulder_elv vs shoulder_elv at a few planes of elevation
    fig, axes = fs.figure("double", height=5.2, nrows=2, ncols=3, sharex=True)
    for ax, mu in zip(axes.ravel(), leaders):
        j = muscles.index(mu)
        for ci, e in enumerate((-60, 0, 60, 120)):
            if e < ea[0] or e > ea[-1]:
                continue
            i = int(np.argmin(np.abs(ea - e)))
            sl = slice(i * len(ez), (i + 1) * len(ez))
            ax.plot(ez, 100 * r1[sl, kk[1], j], "--", color=fs.color(ci), lw=0.9)
            ax.plot(ez, 100 * r2[sl, kk[1], j], "-", color=fs.color(ci), lw=1.3, label=f"elv_angle {e:g}°")
        ax.set_title(mu)
    from matplotlib.lines import Line2D
    h, lab = axes[0, 0].get_legend_handles_labels()
    h += [Line2D([], [], color="#808080", ls="-"), Line2D([], [], color="#808080", ls="--")]
    lab += ["two-coordinate rhythm", "one-coordinate rhythm"]
    fs.legend_below(fig, h, lab)
    for ax in axes[-1]:
        ax.set_xlabel("shoulder elv (deg)")
    for ax in axes[:, 0]:
        ax.set_ylabel("moment arm about\nshoulder elv (cm)")
    fs.save(fig, OUT / "leaders_lines", ("pdf", "png"))
    # agreement with OpenSim on the exported two-coordinate models
    try:
        import opensim  # noqa: F401
    except ImportError:
        print("opensim not installed: skipping the OpenSim agreement")
        return
    ag = opensim_agreement(Path(args.models_dir) / "mobl_arms_holzbaur_nowrap_variant.osim", path)
    ag["minus_dL_dq_difference"] = ag.ours - ag.opensim_minus_dL_dq
    ag["computeMomentArm_difference"] = ag.ours - ag.opensim_computeMomentArm
    ag.to_csv(OUT / "opensim_agreement.csv", index=False, float_format="%.6e")
    summ = ag.groupby(["model", "coordinate"]).agg(
        max_length_difference=("length_difference", lambda x: x.abs().max()),
        max_diff_vs_minus_dL_dq=("minus_dL_dq_difference", lambda x: x.abs().max()),
        max_diff_vs_computeMomentArm=("computeMomentArm_difference", lambda x: x.abs().max()))
    summ.to_csv(OUT / "opensim_agreement_summary.csv", float_format="%.3e")
    print(summ.to_string())
    fig, axes = fs.figure("single", height=3.2)
    ax = axes[0, 0]
    sub = ag[(ag.model == "nowrap") & (ag.coordinate == "shoulder_elv")]
    ax.semilogy(np.abs(sub.minus_dL_dq_difference) + 1e-17, "o", color=fs.color(0), ms=2.5, ls="none",
                label="package − OpenSim (−dL/dq)")
    ax.semilogy(np.abs(sub.computeMomentArm_difference) + 1e-17, "x", color=fs.color(1), ms=3, ls="none",
                label="package − OpenSim computeMomentArm")
    ax.set_xlabel("muscle × configuration")
    ax.set_ylabel("|difference| of the moment arm\nabout shoulder elv (m)")
    ax.set_title("two-coordinate couplers: computeMomentArm\nis not the partial derivative")
    fs.legend_below(fig)
    fs.save(fig, OUT / "computeMomentArm_departure", ("pdf", "png"))


if __name__ == "__main__":
    main()
