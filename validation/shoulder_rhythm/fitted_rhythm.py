"""A two-coordinate shoulder rhythm fitted to the Spartacus data (issue 14), side by side with Holzbaur's
single-coordinate couplings and the linear de Groot & Brand (2001) rhythm.

    python validation/shoulder_rhythm/fitted_rhythm.py [--models-dir ../shared/models]

1. fits pole-safe polynomial surfaces to data/spartacus_derived.csv (orders compared by leave-one-study-out
   cross-validation) and writes the chosen rhythm to results/fitted/spartacus2024.json and to the package
   (osim_emb/data/rhythm/spartacus2024.json, the built-in ``spartacus2024``);
2. compares the three rhythms' clavicle and scapula angles with the data in each plane;
3. moment arms of the shoulder muscles over the 1-degree elv_angle x shoulder_elv grid under each rhythm;
4. OpenSim 4.6 on the exported models: assembly to the fitted values, and its accelerations against the
   package's exact ODE (OpenSim's second derivatives of MultivariatePolynomialFunction are wrong).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from osim_emb.io import load_osim  # noqa: E402
from osim_emb.io.osim_writer import write_osim  # noqa: E402
from osim_emb.rhythm.rhythms import RhythmDomainWarning, apply  # noqa: E402
from osim_emb.report import figure_style as fs  # noqa: E402
from osim_emb.report.rhythm_figures import plot_fit  # noqa: E402
from osim_emb.rhythm.fit import MOBL_DEPENDENTS, fit  # noqa: E402
from osim_emb.rhythm.spartacus import CITATION  # noqa: E402
from osim_emb.opensim.moment_arms import TABLE5_LEADERS  # noqa: E402

sys.path.insert(0, str(HERE))
from run import grid, moment_arms_in_chunks, shoulder_muscles  # noqa: E402

OUT = HERE / "results" / "fitted"
DATA = HERE / "data" / "spartacus_derived.csv"
ORDERS = ((2, 1), (3, 1), (3, 2), (4, 2))
PLANES = {"frontal": 0.0, "scapular": 30.0, "sagittal": 90.0}
log = logging.getLogger("fitted_rhythm")


def choose_order(data):
    rows = []
    for degree, plane_degree in ORDERS:
        res = fit(data, degree=degree, plane_degree=plane_degree)
        for dep in res.coefficients:
            rows.append({"degree": degree, "plane_degree": plane_degree, "dependent": dep,
                         "rms_fit_deg": res.rms_fit_deg[dep], "rms_cv_deg": res.rms_cv_deg[dep]})
    table = pd.DataFrame(rows)
    mean_cv = table.groupby(["degree", "plane_degree"]).rms_cv_deg.mean()
    best = mean_cv.idxmin()
    return table, best


def rhythm_values(model, data):
    """Each dependent coordinate (deg) of ``model``'s couplers at the data's (plane, elevation)."""
    q = np.repeat(model.default_q[None], len(data), 0)
    q[:, model.coordinate_index("elv_angle")] = np.radians(data.plane_of_elevation_deg)
    q[:, model.coordinate_index("shoulder_elv")] = np.radians(data.elevation_deg)
    return {d: np.degrees(model.dependent_coordinate(d).function.evaluate(q).value) for d in MOBL_DEPENDENTS}


def against_data(models, data):
    """RMS (deg) of each rhythm against the data per dependent and task, each shoulder's offset fitted."""
    rows, aligned = [], {}
    for label, m in models.items():
        pred = rhythm_values(m, data)
        for dep in MOBL_DEPENDENTS:
            ok = data[dep].notna().to_numpy()
            r = data[dep].to_numpy(float) - pred[dep]
            r = np.where(ok, r, np.nan)
            off = pd.Series(r).groupby(data.shoulder.to_numpy()).transform("mean").to_numpy()
            res = r - off
            aligned[(label, dep)] = off
            for task in sorted(data.task.unique()):
                sel = ok & (data.task == task).to_numpy()
                if sel.any():
                    rows.append({"rhythm": label, "dependent": dep, "task": task, "n": int(sel.sum()),
                                 "rms_deg": float(np.sqrt(np.mean(res[sel] ** 2)))})
            w = 1.0 / data.groupby("study").study.transform("size").to_numpy(float)
            rows.append({"rhythm": label, "dependent": dep, "task": "all (study-weighted)", "n": int(ok.sum()),
                         "rms_deg": float(np.sqrt(np.sum(w[ok] * res[ok] ** 2) / np.sum(w[ok])))})
    return pd.DataFrame(rows), aligned


def figure_against_data(models, data, aligned, path):
    labels = list(models)
    fig, axes = fs.figure("double", nrows=len(MOBL_DEPENDENTS), ncols=4, height=8.6, sharex="col")
    e_line = np.arange(0.0, 181.0, 1.0)
    p_line = np.arange(-90.0, 131.0, 1.0)
    ref = labels[-1]  # data shown with the fitted rhythm's offsets removed
    for r, dep in enumerate(MOBL_DEPENDENTS):
        ok = data[dep].notna()
        y = data[dep] - aligned[(ref, dep)]
        for c, (pname, plane) in enumerate(PLANES.items()):
            ax = axes[r, c]
            sel = ok & (data.plane_of_elevation_deg == plane) & (data.task != "horizontal flexion")
            ax.plot(data.elevation_deg[sel], y[sel], ".", ms=1.5, color="#B0B0B0", label="data")
            sweep = pd.DataFrame({"plane_of_elevation_deg": plane, "elevation_deg": e_line})
            for i, lab in enumerate(labels):
                ax.plot(e_line, rhythm_values(models[lab], sweep)[dep], label=lab, **fs.cue(i))
            if r == 0:
                ax.set_title(f"{pname} plane ({plane:g}°)")
            if r == len(MOBL_DEPENDENTS) - 1:
                ax.set_xlabel("shoulder_elv (deg)")
        ax = axes[r, 3]
        sel = ok & (data.elevation_deg == 90.0)
        ax.plot(data.plane_of_elevation_deg[sel], y[sel], ".", ms=1.5, color="#B0B0B0", label="data")
        sweep = pd.DataFrame({"plane_of_elevation_deg": p_line, "elevation_deg": 90.0})
        for i, lab in enumerate(labels):
            ax.plot(p_line, rhythm_values(models[lab], sweep)[dep], label=lab, **fs.cue(i))
        if r == 0:
            ax.set_title("90° elevation, all planes")
        if r == len(MOBL_DEPENDENTS) - 1:
            ax.set_xlabel("elv_angle (deg)")
        axes[r, 0].set_ylabel(f"{dep}\n(deg)")
    fs.legend_below(fig)
    fs.save(fig, path.with_suffix(""), ("pdf", "png", "svg"))


def moment_arm_comparison(models, path_prefix):
    labels = list(models)
    base = models[labels[0]]
    muscles = shoulder_muscles(base)
    ea, ez, q = grid(base, 1.0)
    t0 = time.perf_counter()
    r = {lab: moment_arms_in_chunks(m, q, muscles, label=lab) for lab, m in models.items()}
    elapsed = time.perf_counter() - t0
    rows = []
    for lab in labels[1:]:
        for coord in ("elv_angle", "shoulder_elv"):
            k = base.coordinate_index(coord)
            d = r[lab][:, k, :] - r[labels[0]][:, k, :]
            for j, mu in enumerate(muscles):
                i = int(np.argmax(np.abs(d[:, j])))
                rows.append({"rhythm": lab, "versus": labels[0], "muscle": mu, "moment_arm_coordinate": coord,
                             "max_abs_change_m": float(abs(d[i, j])),
                             "rms_change_m": float(np.sqrt(np.mean(d[:, j] ** 2))),
                             "at_elv_angle_deg": float(np.degrees(q[i, base.coordinate_index("elv_angle")])),
                             "at_shoulder_elv_deg": float(np.degrees(q[i, base.coordinate_index("shoulder_elv")]))})
    table = pd.DataFrame(rows).sort_values("max_abs_change_m", ascending=False)
    # the girdle at shoulder_elv = 0 while elv_angle sweeps its range: a pole-safe rhythm keeps it still
    iz = int(np.argmin(np.abs(ez)))
    pole_q = q.reshape(len(ea), len(ez), -1)[:, iz]
    pole = []
    for lab, m in models.items():
        for dep in MOBL_DEPENDENTS:
            v = m.dependent_coordinate(dep).function.evaluate(pole_q).value
            pole.append({"rhythm": lab, "dependent": dep, "range_over_elv_angle_at_shoulder_elv_0_deg": float(np.degrees(np.ptp(v)))})
    leaders = [m for m in TABLE5_LEADERS if m in muscles]
    fig, axes = fs.figure("double", nrows=2, ncols=3, height=4.8, sharex=True)
    k = base.coordinate_index("shoulder_elv")
    planes = (0.0, 30.0, 90.0)
    for ax, mu in zip(axes.ravel(), leaders):
        j = muscles.index(mu)
        for n, lab in enumerate(labels):
            for m, plane in enumerate(planes):
                i = int(np.argmin(np.abs(ea - plane)))
                sl = slice(i * len(ez), (i + 1) * len(ez))
                ax.plot(ez, 100 * r[lab][sl, k, j], color=fs.color(n), linestyle=fs.LINE_STYLES[m], lw=1.0)
        ax.set_title(mu)
    for ax in axes[-1]:
        ax.set_xlabel("shoulder_elv (deg, 1° steps)")
    for ax in axes[:, 0]:
        ax.set_ylabel("moment arm about\nshoulder_elv (cm)")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=fs.color(n), label=lab) for n, lab in enumerate(labels)]
    handles += [Line2D([], [], color="#404040", ls=fs.LINE_STYLES[m], label=f"elv_angle {plane:g}°")
                for m, plane in enumerate(planes)]
    fs.legend_below(fig, handles, [h.get_label() for h in handles], ncol=3)
    fs.save(fig, path_prefix.with_suffix(""), ("pdf", "png", "svg"))
    return table, pd.DataFrame(pole), len(q), len(muscles), elapsed


def opensim_checks(models_dir, rhythm_path, n=20, seed=5):
    """Assembly error of OpenSim on the exported fitted model, and OpenSim's forward-dynamics accelerations
    against the package's (exact) ones for the linear (LinearFunction) and fitted (MultivariatePolynomialFunction)
    rhythms."""
    from osim_emb.core.dynamics import forward_dynamics
    from osim_emb.rhythm.rhythms import load_rhythm
    from osim_emb.opensim.bridge import OpenSimReference
    base = load_osim(Path(models_dir) / "mobl_arms_holzbaur_nowrap_variant.osim")
    export_dir = ROOT / "out" / "shoulder_rhythm"  # derived from the reference model: not committed
    export_dir.mkdir(parents=True, exist_ok=True)
    rows, asm = [], []
    rng = np.random.default_rng(seed)
    ie, iz = base.coordinate_index("elv_angle"), base.coordinate_index("shoulder_elv")
    q = np.repeat(base.default_q[None], n, 0)
    q[:, ie] = rng.uniform(0.0, 1.8, n)
    q[:, iz] = rng.uniform(0.15, 2.6, n)
    qd = rng.normal(0.0, 1.0, (n, base.n_q))
    for label, source in (("degroot2001 (LinearFunction)", "degroot2001"),
                          ("spartacus2024 (MultivariatePolynomialFunction)", rhythm_path)):
        rhythm = load_rhythm(source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RhythmDomainWarning)
            m2 = apply(base, rhythm)
        path = export_dir / f"mobl_nowrap_{rhythm.name}.osim"
        write_osim(m2, path)
        ref = OpenSimReference(str(path), m2, disable_forces=True)
        s = ref.state
        deps = [t.dependent for t in rhythm.terms]
        for i in range(n):
            ref.set_configuration(q[i])
            for d in deps:
                ref.coords.get(d).setValue(s, 0.0, False)
            for c in ("elv_angle", "shoulder_elv"):
                ref.coords.get(c).set_is_free_to_satisfy_constraints(False)
            ref.model_os.assemble(s)
            want = {d: m2.dependent_coordinate(d).function.evaluate(q[i][None]).value[0] for d in deps}
            asm.append({"rhythm": label, "configuration": i,
                        "max_abs_dependent_error_rad": max(abs(ref.coords.get(d).getValue(s) - want[d]) for d in deps)})
            for speeds in ("random", "zero"):
                v = qd[i] if speeds == "random" else np.zeros(base.n_q)
                red = ref.reduced_dynamics(q[i], v)
                ours = forward_dynamics(m2, q[i], v)
                rows.append({"rhythm": label, "speeds": speeds, "configuration": i,
                             "max_abs_qddot_difference": float(np.abs(red["qddot"] - ours).max()),
                             "max_abs_qddot": float(np.abs(ours).max())})
    acc = pd.DataFrame(rows)
    summary = acc.groupby(["rhythm", "speeds"]).agg(
        max_abs_qddot_difference=("max_abs_qddot_difference", "max"),
        median_abs_qddot_difference=("max_abs_qddot_difference", "median"),
        max_abs_qddot=("max_abs_qddot", "max"))
    return pd.DataFrame(asm), acc, summary


def main():
    global OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=OUT,
                    help="output folder (default: results/fitted/, and then the rhythm is also copied to the package)")
    ap.add_argument("--models-dir", default=os.environ.get("OSIM_EMB_MODELS", str(ROOT.parent / "shared" / "models")))
    args = ap.parse_args()
    to_package = args.out.resolve() == OUT.resolve()
    OUT = args.out
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    data = pd.read_csv(DATA)
    orders, (degree, plane_degree) = choose_order(data)
    orders.to_csv(OUT / "order_selection.csv", index=False, float_format="%.3f")
    print(orders.pivot_table(index=["degree", "plane_degree"], columns="dependent", values="rms_cv_deg").round(2))
    res = fit(data, degree=degree, plane_degree=plane_degree, name="spartacus2024", reference=CITATION)
    rpath = OUT / "spartacus2024.json"
    rpath.write_text(json.dumps(res.rhythm.to_dict(), indent=1) + "\n")
    if to_package:
        shutil.copyfile(rpath, ROOT / "osim_emb" / "data" / "rhythm" / "spartacus2024.json")
    res.summary().to_csv(OUT / "fit_summary.csv", float_format="%.3f")
    res.cv_by_study.to_csv(OUT / "cv_by_study.csv", index=False, float_format="%.3f")
    plot_fit(res, data, OUT / "surfaces", formats=("pdf", "png", "svg"))
    print(f"order {degree} (plane degree {plane_degree}):\n{res.summary().round(2)}")

    base = load_osim(Path(args.models_dir) / "mobl_arms_holzbaur_nowrap_variant.osim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RhythmDomainWarning)
        models = {"Holzbaur 2005 (one coordinate)": base, "de Groot & Brand 2001 (linear)": apply(base, "degroot2001"),
                  "fitted (spartacus2024)": apply(base, res.rhythm)}
    vs, aligned = against_data(models, data)
    vs.to_csv(OUT / "rhythms_against_data.csv", index=False, float_format="%.3f")
    print(vs[vs.task == "all (study-weighted)"].pivot(index="dependent", columns="rhythm", values="rms_deg").round(2))
    figure_against_data(models, data, aligned, OUT / "rhythms_against_data")

    table, pole, nconf, nmus, elapsed = moment_arm_comparison(models, OUT / "moment_arms_by_rhythm")
    table.to_csv(OUT / "moment_arm_changes.csv", index=False, float_format="%.5e")
    pole.to_csv(OUT / "girdle_motion_at_pole.csv", index=False, float_format="%.5e")
    print(table.head(10).to_string(index=False))
    print(pole.pivot(index="dependent", columns="rhythm", values="range_over_elv_angle_at_shoulder_elv_0_deg").round(2))
    (OUT / "grid.txt").write_text(f"mobl_arms_holzbaur_nowrap_variant.osim, {nconf} configurations x {nmus} muscles "
                                  f"x {len(models)} rhythms, {elapsed:.1f} s\n")
    try:
        import opensim  # noqa: F401
    except ImportError:
        print("opensim not installed: skipping the OpenSim checks")
        return
    asm, acc, summary = opensim_checks(args.models_dir, rpath)
    asm.groupby("rhythm").max_abs_dependent_error_rad.max().to_csv(OUT / "opensim_assembly.csv", float_format="%.3e")
    acc.to_csv(OUT / "opensim_accelerations.csv", index=False, float_format="%.6e")
    summary.to_csv(OUT / "opensim_accelerations_summary.csv", float_format="%.3e")
    print(asm.groupby("rhythm").max_abs_dependent_error_rad.max())
    print(summary)


if __name__ == "__main__":
    main()
