"""3D shoulder tracking (seed section 4-4 C, Eqs 200-201, Figs 19-21) on the built-in shoulder3d model, with the
muscle forces compared with OpenSim's StaticOptimization.

Run from the repository root (two to three minutes):

    /work/venv/bin/python validation/shoulder_tracking/run_tracking.py

The problem (the seed gives its Fig 19 only as a plot; this motion is defined here):

* plane of elevation elv_angle = 90° (forward flexion) and axial rotation shoulder_rot = -30°, held;
* elevation shoulder_elv: a minimum-jerk rise from 15° to 105° and return in 2 s, through the peak as a
  via point at t = 1 s (``common.rise_and_return``: rest at both ends, C⁴ at the peak);
* computed-torque control, Eq 200 with Eq 201's critically damped error law, K = diag(100, 100, 1000),
  started on the desired trajectory (:func:`osim_emb.simulation.motions.computed_torque_tracking`);
* integrators: SciPy's RK45 -- the Dormand-Prince 4(5) pair (MATLAB's ode45); the seed used
  Fehlberg's 4(5) pair, which ``common.RKF45`` implements as a SciPy ``OdeSolver`` -- at 1e-10 and at
  MATLAB's default tolerances (rtol 1e-3, atol 1e-6);
* muscle forces: static optimization (sum of squared activations, R(q) F = τ, rigid-tendon Thelen2003
  with passive fibre force, activations in [0.01, 1]) from :func:`osim_emb.simulation.motions.muscle_force_sharing`;
* OpenSim: the same motion (all 14 coordinates, values and speeds) written with ``write_motion`` as a
  states file, and as a .mot of coordinates, through ``AnalyzeTool`` + ``StaticOptimization`` on
  ``models/shoulder3d/shoulder3d.osim``; the differences are attributed by replacing, one at a time,
  the package's ingredient by OpenSim's (see README.md);
* the same tracking in full coordinates (the DAE, :mod:`osim_emb.simulation.dae`) timed against the ODE.

Writes into validation/shoulder_tracking/results/ the figures (PDF and PNG) and tables listed in README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from osim_emb.report import figure_style as fs  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common as C  # noqa: E402

from osim_emb.core import dynamics as dyn  # noqa: E402
from osim_emb.io.builtin_models import builtin_model_path, load_builtin  # noqa: E402
from osim_emb.io import read_osim  # noqa: E402
from osim_emb.paths.geometry import lengths_and_moment_arms  # noqa: E402
from osim_emb.simulation.static_optimization import muscle_force_coefficients, static_optimization  # noqa: E402
from osim_emb.simulation.motions import computed_torque_tracking, muscle_force_sharing  # noqa: E402

OUT = HERE / "results"
N_OUT = 401  # samples of the 2 s motion (every 5 ms)
TIGHT = 1e-10
SEED_LIKE = (1e-3, 1e-6)  # MATLAB's ode45 defaults (rtol, atol)
LABELS = {"DELT1": "DEL1", "DELT2": "DEL2", "DELT3": "DEL3", "SUPSP": "SUPRA", "INFSP": "INFRA", "SUBSC": "SUBS",
          "TMAJ": "TMAJ", "TMIN": "TMIN", "PECM1": "PEC1", "PECM2": "PEC2", "PECM3": "PEC3", "LAT1": "LAT1",
          "LAT2": "LAT2", "LAT3": "LAT3"}  # the seed's Fig 21 abbreviations

plt.rcParams.update({**fs.RC, "savefig.bbox": "tight"})  # the project style (docs/figures.md)


def save(fig, name):
    fs.save(fig, OUT / name, ("pdf", "png"), check=False)  # TrueType fonts, atomic files


def track(model, method, rtol, atol, **kw):
    t0 = time.perf_counter()
    res = computed_torque_tracking(model, C.desired, C.DURATION, C.GAINS, method=method, rtol=rtol, atol=atol,
                                   n_output=N_OUT, **kw)
    return res, time.perf_counter() - t0


def errors(res, names):
    q = res.states[names].to_numpy() - res.desired[names].to_numpy()
    u = res.states[[c + "_u" for c in names]].to_numpy() - res.desired[[c + "_u" for c in names]].to_numpy()
    return np.abs(q), np.abs(u)


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    OUT = ap.parse_args().out
    import opensim as osim
    osim.Logger.setLevelString("error")
    model = load_builtin("shoulder3d")
    path = builtin_model_path("shoulder3d")
    names = model.coordinate_names
    assert tuple(names) == C.COORDINATES
    muscles = [m.name for m in model.muscles]
    OUT.mkdir(parents=True, exist_ok=True)
    summary: list[tuple[str, float, str]] = []

    # -- tracking -------------------------------------------------------------------------------------
    runs = {}
    for label, method, (rtol, atol) in [("RK45 (Dormand-Prince), 1e-10", "RK45", (TIGHT, TIGHT)),
                                        ("RKF45 (Fehlberg), 1e-10", C.RKF45, (TIGHT, TIGHT)),
                                        ("RK45 (Dormand-Prince), ode45 defaults", "RK45", SEED_LIKE),
                                        ("RKF45 (Fehlberg), ode45 defaults", C.RKF45, SEED_LIKE)]:
        res, sec = track(model, method, rtol, atol)
        runs[label] = res
        eq, eu = errors(res, names)
        print(f"{label:40s}: max |q - q_d| = {', '.join(f'{v:.2e}' for v in eq.max(axis=0))} rad; "
              f"max |q̇ - q̇_d| = {', '.join(f'{v:.2e}' for v in eu.max(axis=0))} rad/s; {res.nfev} evaluations, "
              f"{sec:.1f} s")
        for k, c in enumerate(names):
            summary.append((f"{label}: max |q - q_d| {c}", eq[:, k].max(), "rad"))
            summary.append((f"{label}: max |qdot - qdot_d| {c}", eu[:, k].max(), "rad/s"))
        summary.append((f"{label}: evaluations", res.nfev, f"rtol={rtol:g}, atol={atol:g}"))
        summary.append((f"{label}: seconds", sec, "computed_torque_tracking (numpy dynamics)"))
    main_run = runs["RK45 (Dormand-Prince), 1e-10"]
    times = main_run.states.time.to_numpy()
    q = main_run.states[names].to_numpy()
    qd = main_run.states[[c + "_u" for c in names]].to_numpy()
    tau = main_run.torques[[c + "_moment" for c in names]].to_numpy()
    qdes, qddes, qdddes = C.desired_batch(times)
    rows = []
    for label, res in runs.items():
        eq, eu = errors(res, names)
        rows.append({"integrator": label, **{f"max_abs_error_{c}_rad": eq[:, k].max() for k, c in enumerate(names)},
                     **{f"max_abs_speed_error_{c}_rad_s": eu[:, k].max() for k, c in enumerate(names)},
                     "evaluations": res.nfev})
    pd.DataFrame(rows).to_csv(OUT / "tracking_errors.csv", index=False, float_format="%.3e")
    pd.DataFrame({"time": times, **{c: q[:, k] for k, c in enumerate(names)},
                  **{f"{c}_u": qd[:, k] for k, c in enumerate(names)},
                  **{f"{c}_desired": qdes[:, k] for k, c in enumerate(names)},
                  **{f"{c}_u_desired": qddes[:, k] for k, c in enumerate(names)},
                  **{f"{c}_udot_desired": qdddes[:, k] for k, c in enumerate(names)}}
                 ).to_csv(OUT / "tracking_states.csv", index=False, float_format="%.12g")

    # the error law from an offset start: e = e0 (1 + K t) exp(-K t)
    e0 = np.radians([2.0, 3.0, 1.0])
    off, _ = track(model, "RK45", TIGHT, TIGHT, q0=C.desired(0.0)[0] + e0, qdot0=C.desired(0.0)[1])
    k_gain = np.asarray(C.GAINS)
    law = e0 * (1 + k_gain * times[:, None]) * np.exp(-k_gain * times[:, None])
    e_off = off.states[names].to_numpy() - off.desired[names].to_numpy()
    dev = np.abs(e_off - law).max()
    print(f"offset start e0 = {np.degrees(e0)} deg: max |e - e0 (1 + K t) exp(-K t)| = {dev:.2e} rad")
    summary.append(("offset start: max deviation from the critically damped law", dev, "rad"))

    # -- torques (Fig 20) and an OpenSim check of them ---------------------------------------------------
    k_gain = np.asarray(C.GAINS)
    qdd = qdddes - 2 * k_gain * (qd - qddes) - k_gain ** 2 * (q - qdes)  # the accelerations Eq 200 imposed
    from osim_emb.opensim.bridge import OpenSimReference
    ref = OpenSimReference(str(path), model, disable_forces=True)
    tau_os = np.zeros_like(tau)
    for i in range(len(times)):
        r = ref.reduced_dynamics(q[i], qd[i])
        tau_os[i] = r["mass"] @ qdd[i] + r["bias"]
    d_tau = np.abs(tau - tau_os).max()
    d_des = np.abs(tau - dyn.inverse_dynamics(model, qdes, qddes, qdddes)).max()
    print(f"torques: max |τ| = {', '.join(f'{v:.3f}' for v in np.abs(tau).max(axis=0))} N m; max |τ - τ_OpenSim| = "
          f"{d_tau:.2e} N m (OpenSim's J^T M J q̈ + J^T (c - g + M b) at the same states and accelerations); "
          f"max |τ - ID(q_d, q̇_d, q̈_d)| = {d_des:.2e} N m (the tracking error's share)")
    summary += [("max |tau - tau_OpenSim|", d_tau, "N m; OpenSim J^T M J qdd + J^T (c - g + M b), same qdd"),
                ("max |tau - ID(desired motion)|", d_des, "N m")]
    summary += [(f"max |tau| {c}", np.abs(tau[:, k]).max(), "N m") for k, c in enumerate(names)]
    pd.DataFrame({"time": times, **{f"{c}_moment": tau[:, k] for k, c in enumerate(names)},
                  **{f"{c}_moment_opensim": tau_os[:, k] for k, c in enumerate(names)}}
                 ).to_csv(OUT / "torques.csv", index=False, float_format="%.10g")

    # -- muscle forces (Fig 21) -----------------------------------------------------------------------------
    t0 = time.perf_counter()
    forces, acts, so_res = muscle_force_sharing(model, times, q, qd, tau)
    sec_so = time.perf_counter() - t0
    forces0, acts0, so0 = muscle_force_sharing(model, times, q, qd, tau, passive=False)
    L, R = lengths_and_moment_arms(model, q, opensim_compat=True)
    resid = np.abs(np.einsum("nkm,nm->nk", R, forces[muscles].to_numpy()) - tau).max()
    print(f"static optimization ({sec_so:.2f} s, {len(times)} frames): max |R F - τ| = {resid:.1e} N m; "
          f"max force {forces[muscles].to_numpy().max():.1f} N ({forces[muscles].max().idxmax()})")
    summary += [("package SO: max |R F - tau|", resid, "N m"), ("package SO: seconds", sec_so, f"{len(times)} frames")]
    forces.to_csv(OUT / "muscle_forces.csv", index=False, float_format="%.6g")
    acts.to_csv(OUT / "muscle_activations.csv", index=False, float_format="%.6g")

    # -- OpenSim's StaticOptimization --------------------------------------------------------------------
    tmp = Path(tempfile.mkdtemp(prefix="shoulder_so_"))
    mo = osim.Model(str(path))
    mo.initSystem()
    states_path = OUT / "shoulder_tracking_states.sto"
    mot_path = OUT / "shoulder_tracking_coordinates.mot"
    C.write_states(states_path, mo, model, times, q, qd)
    C.write_coordinates_motion(mot_path, model, times, q, qd)
    t0 = time.perf_counter()
    act_os, frc_os = C.run_opensim_static_optimization(osim, path, states_path, tmp / "states", 0.0, C.DURATION)
    sec_os = time.perf_counter() - t0
    _, frc_mot = C.run_opensim_static_optimization(osim, path, mot_path, tmp / "mot", 0.0, C.DURATION,
                                                   coordinates_file=True)
    assert np.allclose(frc_os.time.to_numpy(), times, atol=1e-9), "OpenSim reported other frames"
    f_os = frc_os[muscles].to_numpy()
    a_os = act_os[muscles].to_numpy()
    frc_os.to_csv(OUT / "opensim_so_forces.csv", index=False, float_format="%.6g")
    print(f"OpenSim StaticOptimization: {sec_os:.1f} s for {len(times)} frames")
    ing = C.opensim_so_ingredients(path, model, times, q, qd, states_path)

    # attribution: replace the package's ingredients by OpenSim's, one at a time
    v_pkg = -np.einsum("nkm,nk->nm", R, qd)
    a_pkg, p_pkg = muscle_force_coefficients([m.parameters for m in model.muscles], L, v_pkg)
    lo = np.array([m.parameters.min_control for m in model.muscles])
    hi = np.array([m.parameters.max_control for m in model.muscles])
    tau_spline = dyn.inverse_dynamics(model, q, qd, ing["qdd_spline"])
    layers = [
        ("package (passive fibre force on)", forces[muscles].to_numpy()),
        ("package, passive off", forces0[muscles].to_numpy()),
        ("+ OpenSim's R (same-body rule)", static_optimization(ing["R"], tau, a_pkg, None, lower=lo, upper=hi).forces),
        ("+ OpenSim's accelerations (GCV spline)",
         static_optimization(ing["R"], tau_spline, a_pkg, None, lower=lo, upper=hi).forces),
        ("+ OpenSim's f_opt (its lengthening speed)",
         static_optimization(ing["R"], tau_spline, ing["fopt"], None, lower=lo, upper=hi).forces),
    ]
    tab = []
    for j, mname in enumerate(muscles):
        row = {"muscle": mname, "seed_label": LABELS[mname], "opensim_max_N": f_os[:, j].max(),
               "package_max_N": layers[0][1][:, j].max()}
        for label, f in layers:
            row[f"max_abs_diff_N: {label}"] = np.abs(f[:, j] - f_os[:, j]).max()
            row[f"rms_diff_N: {label}"] = np.sqrt(np.mean((f[:, j] - f_os[:, j]) ** 2))
        row["max_abs_diff_N: OpenSim from the coordinates .mot"] = np.abs(frc_mot[mname].to_numpy() - f_os[:, j]).max()
        row["opensim_R_minus_package_R_max_m"] = np.abs(ing["R"][:, :, j] - R[:, :, j]).max()
        row["opensim_speed_minus_package_speed_max_m_s"] = np.abs(ing["speed"][:, j] - v_pkg[:, j]).max()
        row["opensim_fopt_rel_diff_max"] = np.abs(ing["fopt"][:, j] - a_pkg[:, j]).max() / a_pkg[:, j].max()
        tab.append(row)
    cmp = pd.DataFrame(tab)
    cmp.to_csv(OUT / "so_comparison.csv", index=False, float_format="%.4g")
    print(cmp[["muscle", "opensim_max_N", "package_max_N"] + [f"max_abs_diff_N: {lb}" for lb, _ in layers]]
          .to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    for label, f in layers:
        summary.append((f"SO vs OpenSim max |dF| over muscles: {label}", np.abs(f - f_os).max(), "N"))
    summary += [("OpenSim SO: seconds", sec_os, f"{len(times)} frames, convergence 1e-8"),
                ("OpenSim accelerations (GCV spline) minus exact, max", np.abs(ing["qdd_spline"] - qdddes).max(),
                 "rad/s^2"),
                ("OpenSim SO: max |R_os F_os - tau(spline accelerations)|",
                 np.abs(np.einsum("nkm,nm->nk", ing["R"], f_os) - tau_spline).max(), "N m"),
                ("SO vs OpenSim max |da| (all ingredients OpenSim's)",
                 np.abs(static_optimization(ing["R"], tau_spline, ing["fopt"], None, lower=lo, upper=hi).activations
                        - a_os).max(), "activation")]

    # -- ODE against DAE -------------------------------------------------------------------------------------
    timing = C.tracking_timings(read_osim(path), [1e-6, 1e-8, 1e-10], ["RK45", C.RKF45], repeat=3)
    timing.to_csv(OUT / "timing_ode_vs_dae.csv", index=False, float_format="%.4g")
    for (integ, tol), g in timing.groupby(["integrator", "tolerance"], sort=False):
        ode, dae = g.iloc[0], g.iloc[1]
        print(f"{integ} {tol:g}: ODE {ode.seconds * 1e3:.1f} ms ({ode.evaluations} ev, error {ode.max_tracking_error_rad:.1e}), "
              f"DAE {dae.seconds * 1e3:.1f} ms ({dae.evaluations} ev, error {dae.max_tracking_error_rad:.1e}): "
              f"DAE/ODE = {dae.seconds / ode.seconds:.1f}")
        summary.append((f"tracking DAE/ODE time, {integ} {tol:g}", dae.seconds / ode.seconds, "best of 3"))
    pd.DataFrame(summary, columns=["quantity", "value", "note"]).to_csv(OUT / "summary.csv", index=False,
                                                                       float_format="%.6g")

    # -- figures --------------------------------------------------------------------------------------------------
    fig, axes = plt.subplots(3, 1, figsize=(5.0, 5.2), sharex=True)
    axes[0].plot(times, np.degrees(qdes[:, 1]), "k-")
    axes[0].set_ylabel("elevation (deg)")
    axes[1].plot(times, np.degrees(qddes[:, 1]), "k-")
    axes[1].set_ylabel("speed (deg/s)")
    axes[2].plot(times, np.degrees(qdddes[:, 1]), "k-")
    axes[2].set_ylabel("acceleration (deg/s²)")
    axes[2].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].set_title("Desired shoulder elevation (minimum jerk through the 105° via point);\n"
                      "plane of elevation 90°, axial rotation −30° held")
    save(fig, "fig19_desired_elevation")

    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.2))
    styles = {"RK45 (Dormand-Prince), 1e-10": ("tab:blue", "-"), "RKF45 (Fehlberg), 1e-10": ("tab:green", "-"),
              "RK45 (Dormand-Prince), ode45 defaults": ("tab:blue", "--"),
              "RKF45 (Fehlberg), ode45 defaults": ("tab:green", "--")}
    for label, res in runs.items():
        eq, eu = errors(res, names)
        col, ls = styles[label]
        axes[0].semilogy(times, np.maximum(eq[:, 1], 1e-17), ls, color=col, label=label)
        axes[1].semilogy(times, np.maximum(eu[:, 1], 1e-17), ls, color=col, label=label)
    axes[0].set_ylabel("|shoulder_elv − desired| (rad)")
    axes[1].set_ylabel("|speed − desired| (rad/s)")
    for ax in axes:
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3, which="both")
        ax.set_ylim(1e-15, 1e-1)
    axes[0].legend(fontsize=6.5, loc="upper left")
    fig.suptitle("Tracking error of the elevation (elv_angle and shoulder_rot: exactly 0)")
    fig.tight_layout()
    save(fig, "fig_tracking_errors")

    fig, ax = plt.subplots(figsize=(5.0, 3.0))
    for k, c in enumerate(names):
        ax.semilogy(times, np.maximum(np.abs(e_off[:, k]), 1e-17), "-", label=f"{c} (K = {C.GAINS[k]:g})")
        ax.semilogy(times, np.maximum(np.abs(law[:, k]), 1e-17), "k:", lw=1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("|q − q_d| (rad)")
    ax.set_ylim(1e-14, 0.1)
    ax.set_xlim(0, 0.3)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    ax.set_title("Start 2°, 3°, 1° off the trajectory: e0 (1 + K t) e^(−K t) dotted")
    save(fig, "fig_error_law")

    fig, axes = plt.subplots(3, 1, figsize=(5.0, 5.2), sharex=True)
    for k, (ax, c) in enumerate(zip(axes, names)):
        ax.plot(times, tau[:, k], "k-", label="package (Eq 200)")
        ax.plot(times[::10], tau_os[::10, k], "o", ms=3, mfc="none", color="tab:red", label="OpenSim (reduced)")
        ax.set_ylabel(f"τ {c} (N m)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[2].set_xlabel("time (s)")
    axes[0].set_title("Required generalized forces (seed Fig 20)")
    save(fig, "fig20_torques")

    fig, axes = plt.subplots(4, 4, figsize=(9.0, 7.6), sharex=True)
    for j, (ax, mname) in enumerate(zip(axes.flat, muscles)):
        ax.plot(times, layers[0][1][:, j], "k-", lw=1.2, label="package (passive on)")
        ax.plot(times, layers[1][1][:, j], "-", color="tab:blue", lw=0.9, label="package, passive off")
        ax.plot(times[::8], f_os[::8, j], "o", ms=2.5, mfc="none", color="tab:red", label="OpenSim StaticOptimization")
        ax.set_title(f"{LABELS[mname]} ({mname})")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(muscles):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("force (N)")
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    axes[2, 2].set_xlabel("time (s)")
    axes[2, 3].set_xlabel("time (s)")
    h, lb = axes[0, 0].get_legend_handles_labels()
    axes.flat[-1].legend(h, lb, loc="center", fontsize=8)
    fig.suptitle("Musculotendon forces from static optimization (seed Fig 21)")
    fig.tight_layout()
    save(fig, "fig21_muscle_forces")

    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    width = 0.16
    x = np.arange(len(muscles))
    for i, (label, f) in enumerate(layers):
        ax.bar(x + (i - 2) * width, np.maximum(np.abs(f - f_os).max(axis=0), 1e-4), width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([LABELS[m] for m in muscles], rotation=45)
    ax.set_ylabel("max |F − F_OpenSim| (N)")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    ax.set_title("Package against OpenSim's StaticOptimization: each bar replaces one more ingredient by OpenSim's")
    save(fig, "fig_so_attribution")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
