"""Passive swing of the MoBL shoulder and elbow (issue 6): the package's ODE against OpenSim's Manager and the DAE.

Run from the repository root (about half a minute):

    /work/venv/bin/python validation/passive_swing/run_swing.py [--t-end 1.0]

Set-up: ``mobl_arms_holzbaur.osim`` with the forearm and wrist locked (``pro_sup``, ``deviation``,
``flexion`` set ``locked`` in the OsimDocument and written with ``write_osim``), every force
off, released at rest from shoulder_elv = 0.8 rad and elbow_flexion = 0.5 rad (the other
coordinates at their defaults).  Four generalized coordinates remain: elv_angle, shoulder_elv,
shoulder_rot, elbow_flexion; OpenSim carries all 21 coordinates and enforces 13 couplers and
4 locks as constraints.

Solutions:

* package ODE -- ``solve_ivp(ode_rhs(model), method="DOP853", rtol=atol=1e-11)``; a reference
  at 1e-13 measures its own error;
* OpenSim -- ``Manager`` (RungeKuttaMerson, with constraint projection) at accuracy 1e-8 (the
  issue's), 1e-10 and 1e-12, stepped with ``integrate`` to every 0.01 s to read the state and
  ``state.getQErr()`` (its position-constraint error); a one-shot ``integrate(t_end)`` is timed;
* DAE -- :class:`osim_emb.simulation.dae.FullCoordinateDAE` in the 17 unlocked coordinates with the 13
  couplers as constraints, index 1, Baumgarte alpha = beta = 0 and 10, DOP853 at 1e-11.

Writes into validation/passive_swing/results/:

* fig_swing_trajectories.{pdf,png}  the four coordinates: package ODE (lines), OpenSim 1e-8 (markers)
* fig_swing_differences.{pdf,png}   max_k |q_k - q_k,ODE| against time: OpenSim at each accuracy, the DAE
* fig_constraint_errors.{pdf,png}   OpenSim's max|QErr| against time (each accuracy), the DAE's max|g|, and the
                                    package's rhythm error (OpenSim's coupler functions at its coordinates)
* trajectories.csv                  time, the four coordinates of every solution
* constraint_errors.csv             time, OpenSim max|QErr| (each accuracy), DAE max|g|, package rhythm error
* agreement.csv                     max |difference| per coordinate and solution against the package ODE
* summary.csv                       every number quoted in README.md (and the run's timings)
* fig_dae_drift_nonlinear_coupler.{pdf,png}, dae_drift_nonlinear_coupler.csv
                                    the drift the swing cannot show (its couplers are affine): double_pendulum.osim
                                    with q2 a nonlinear 9-knot SimmSpline of q1, the DAE without and with
                                    Baumgarte's stabilization, RK45 at 1e-6 and DOP853 at 1e-8, 5 s
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from osim_emb.report import figure_style as fs  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from osim_emb.core import dynamics as dyn  # noqa: E402
from osim_emb.simulation.dae import FullCoordinateDAE  # noqa: E402
from osim_emb.io import read_osim  # noqa: E402
from osim_emb.io.convert import document_to_model  # noqa: E402
from osim_emb.io.osim_writer import write_osim  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
LOCKED = ("pro_sup", "deviation", "flexion")
START = {"shoulder_elv": 0.8, "elbow_flexion": 0.5}
ODE_TOL = 1e-11
REF_TOL = 1e-13
OPENSIM_ACCURACIES = (1e-8, 1e-10, 1e-12)

plt.rcParams.update({**fs.RC, "savefig.bbox": "tight"})  # the project style (docs/figures.md)


def default_mobl() -> Path:
    import os
    env = os.environ.get("OSIM_EMB_MODELS")
    base = Path(env) if env else HERE.parents[2] / "shared" / "models"
    return base / "mobl_arms_holzbaur.osim"


def locked_document(mobl: Path):
    """MoBL with the forearm and wrist coordinates locked."""
    doc = read_osim(mobl)
    for c in doc.coordinates:
        if c.name in LOCKED:
            c.locked = True
    return doc


def initial_state(model) -> np.ndarray:
    q0 = model.default_q.copy()
    for name, value in START.items():
        q0[model.coordinate_index(name)] = value
    return np.concatenate([q0, np.zeros(model.n_q)])


def package_swing(model, times: np.ndarray, tol: float = ODE_TOL):
    """The package's ODE, (q (T, n), q̇ (T, n), seconds, evaluations)."""
    fun = dyn.ode_rhs(model)
    y0 = initial_state(model)
    fun(0.0, y0)  # compile / warm up
    t0 = time.perf_counter()
    sol = solve_ivp(fun, (0.0, times[-1]), y0, method="DOP853", rtol=tol, atol=tol, t_eval=times)
    elapsed = time.perf_counter() - t0
    if not sol.success:
        raise RuntimeError(sol.message)
    n = model.n_q
    return sol.y[:n].T, sol.y[n:].T, elapsed, sol.nfev


def opensim_swing(path: Path, model, times: np.ndarray, accuracy: float, *, time_one_shot: bool = True) -> dict:
    """OpenSim's Manager from the same initial state, stepped to every sample time.

    Returns the generalized coordinates and speeds (T, n), the values of all OpenSim coordinates
    (T, n_all), max|QErr| and max|UErr| at each sample, and the wall time of a one-shot integrate."""
    from osim_emb.opensim.bridge import OpenSimReference
    y0 = initial_state(model)
    n = model.n_q

    def start():
        ref = OpenSimReference(str(path), model, disable_forces=True)
        ref.set_configuration(y0[:n], y0[n:])
        ref.state.setTime(float(times[0]))
        mgr = ref.osim.Manager(ref.model_os)
        mgr.setIntegratorAccuracy(accuracy)
        mgr.initialize(ref.state)
        return ref, mgr

    ref, mgr = start()
    names = model.coordinate_names
    q, u, allq, qerr, uerr = [], [], [], [], []

    def record(s):
        q.append([ref.coords.get(c).getValue(s) for c in names])
        u.append([ref.coords.get(c).getSpeedValue(s) for c in names])
        allq.append([ref.coords.get(c).getValue(s) for c in ref.names])
        qerr.append(np.abs(s.getQErr().to_numpy()).max(initial=0.0))
        uerr.append(np.abs(s.getUErr().to_numpy()).max(initial=0.0))

    ref.model_os.realizeVelocity(ref.state)
    record(ref.state)
    for t in times[1:]:
        s = mgr.integrate(float(t))
        ref.model_os.realizeVelocity(s)
        record(s)
    out = {"q": np.array(q), "u": np.array(u), "all": np.array(allq), "names": list(ref.names),
           "qerr": np.array(qerr), "uerr": np.array(uerr), "ref": ref, "seconds": np.nan, "steps": np.nan}
    if time_one_shot:
        ref2, mgr2 = start()
        t0 = time.perf_counter()
        mgr2.integrate(float(times[-1]))
        out["seconds"] = time.perf_counter() - t0
        out["steps"] = mgr2.getStatesTable().getNumRows() - 1
    return out


def rhythm_error(ref, model, q: np.ndarray) -> np.ndarray:
    """max over couplers of |q_dep(package) - s f_OpenSim(q_ind(package))| at each sample: OpenSim's own coupler
    functions (``calcValue``) evaluated at the package's coordinates, against the package's dependent
    coordinates (its joint functions of q)."""
    osim = ref.osim
    values = {c.name: c.function(q) for c in model.dependent_coordinates}
    for k, c in enumerate(model.coordinate_names):
        values[c] = q[:, k]
    err = np.zeros(q.shape[0])
    for dep, ind, f, scale in ref._couplers:
        for i in range(q.shape[0]):
            x = osim.Vector(len(ind), 0.0)
            for k, name in enumerate(ind):
                x.set(k, float(values[name][i]))
            err[i] = max(err[i], abs(values[dep][i] - scale * f.calcValue(x)))
    return err


def nonlinear_coupler_document(models: Path):
    """double_pendulum.osim with q2 = f(q1), f a 9-knot SimmSpline through 0.6 sin(2x) + 0.2 x² - 0.3."""
    import dataclasses

    from osim_emb.core.functions import SimmSpline
    from osim_emb.io.osim_document import CouplerSpec
    x = np.linspace(-1.6, 1.6, 9)
    doc = read_osim(models / "double_pendulum.osim")
    return dataclasses.replace(doc, couplers=[CouplerSpec("q2_con", "q2", ["q1"],
                                                          SimmSpline(x, 0.6 * np.sin(2 * x) + 0.2 * x ** 2 - 0.3))])


def drift_study(models: Path, summary: list) -> None:
    doc = nonlinear_coupler_document(models)
    te = np.linspace(0.0, 5.0, 501)
    runs = {}
    for method, tol in (("RK45", 1e-6), ("DOP853", 1e-8)):
        for ab in (0.0, 10.0):
            dae = FullCoordinateDAE.from_document(doc, alpha=ab, beta=ab)
            tab = dae.simulate(5.0, dae.consistent_state([0.3], [0.0]), method=method, rtol=tol, atol=tol, t_eval=te)
            runs[(method, tol, ab)] = tab
            summary.append((f"nonlinear coupler: {method} {tol:g}, alpha=beta={ab:g}: max|g| on [0,1] s",
                            tab.constraint_error[te <= 1].max(), "rad"))
            summary.append((f"nonlinear coupler: {method} {tol:g}, alpha=beta={ab:g}: max|g| on [4,5] s",
                            tab.constraint_error[te >= 4].max(), f"rad; {tab.attrs['nfev']} evaluations"))
    pd.DataFrame({"time": te, **{f"{m}_{t:g}_alpha{ab:g}_max_abs_g": r.constraint_error.to_numpy()
                                 for (m, t, ab), r in runs.items()}}
                 ).to_csv(OUT / "dae_drift_nonlinear_coupler.csv", index=False, float_format="%.6g")
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.0), sharey=True)
    for ax, (method, tol) in zip(axes, (("RK45", 1e-6), ("DOP853", 1e-8))):
        for ab, col in ((0.0, "tab:red"), (10.0, "tab:blue")):
            r = runs[(method, tol, ab)]
            ax.semilogy(te, floor(r.constraint_error), "-", color=col, lw=1,
                        label=("no stabilization" if ab == 0 else f"Baumgarte α = β = {ab:g}")
                        + f" ({r.attrs['nfev']} ev)")
        ax.set_title(f"{method}, rtol = atol = {tol:g}")
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("|g| = |q2 − f(q1)| (rad)")
    axes[0].set_ylim(1e-14, 1e-4)
    fig.suptitle("Index-1 DAE with a nonlinear coupler (double pendulum, q2 a 9-knot spline of q1)")
    fig.tight_layout()
    save(fig, "fig_dae_drift_nonlinear_coupler")
    for (m, t, ab), r in runs.items():
        print(f"nonlinear coupler, {m} {t:g}, alpha = beta = {ab:g}: max|g| {r.constraint_error[te <= 1].max():.1e} "
              f"on [0, 1] s, {r.constraint_error[te >= 4].max():.1e} on [4, 5] s ({r.attrs['nfev']} evaluations)")


def save(fig, name):
    fs.save(fig, OUT / name, ("pdf", "png"), check=False)  # TrueType fonts, atomic files


def floor(a, lo=1e-18):
    return np.maximum(np.asarray(a, dtype=float), lo)


def main(argv=None):
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--mobl", type=Path, default=default_mobl())
    args = ap.parse_args(argv)
    OUT = args.out
    times = np.round(np.linspace(0.0, args.t_end, int(round(args.t_end / 0.01)) + 1), 12)

    doc = locked_document(args.mobl)
    tmp = Path(tempfile.mkdtemp(prefix="passive_swing_"))
    path = tmp / "mobl_arms_locked_forearm_wrist.osim"
    write_osim(doc, path)
    model = document_to_model(doc)
    names = model.coordinate_names
    print(f"model: {path.name}, generalized coordinates {names}")
    summary: list[tuple[str, float, str]] = []

    # -- package ODE ----------------------------------------------------------------------------
    q_ode, u_ode, sec_ode, nfev_ode = package_swing(model, times)
    q_ref, u_ref, _, _ = package_swing(model, times, REF_TOL)
    err_ode = np.abs(q_ode - q_ref).max()
    print(f"package ODE DOP853 {ODE_TOL:g}: {nfev_ode} evaluations, {sec_ode * 1e3:.1f} ms; "
          f"error against {REF_TOL:g}: {err_ode:.2e} rad")
    summary += [("ode_evaluations", nfev_ode, "DOP853 rtol=atol=1e-11"), ("ode_seconds", sec_ode, "wall time"),
                ("ode_error_vs_1e-13", err_ode, "rad, max over coordinates and samples")]

    # -- OpenSim ------------------------------------------------------------------------------------
    os_runs = {}
    for acc in OPENSIM_ACCURACIES:
        r = opensim_swing(path, model, times, acc)
        os_runs[acc] = r
        d = np.abs(r["q"] - q_ode)
        k, c = np.unravel_index(np.argmax(d), d.shape)
        print(f"OpenSim accuracy {acc:g}: max |q - q_ODE| = {d.max():.3e} rad ({names[c]} at t = {times[k]:.2f} s), "
              f"max |u - u_ODE| = {np.abs(r['u'] - u_ode).max():.3e} rad/s; max|QErr| in "
              f"[{r['qerr'].min():.1e}, {r['qerr'].max():.1e}]; one-shot {r['seconds']:.2f} s, {r['steps']} steps")
        summary += [(f"opensim_{acc:g}_max_diff_rad", d.max(), f"{names[c]} at t={times[k]:.2f} s"),
                    (f"opensim_{acc:g}_max_speed_diff", np.abs(r["u"] - u_ode).max(), "rad/s"),
                    (f"opensim_{acc:g}_diff_vs_1e-13_ode", np.abs(r["q"] - q_ref).max(), "rad"),
                    (f"opensim_{acc:g}_qerr_min", r["qerr"].min(), "max|QErr| over the 101 samples: smallest"),
                    (f"opensim_{acc:g}_qerr_max", r["qerr"].max(), "max|QErr| over the samples: largest"),
                    (f"opensim_{acc:g}_uerr_max", r["uerr"].max(), "max|UErr| over the samples: largest"),
                    (f"opensim_{acc:g}_seconds", r["seconds"], "one-shot Manager.integrate"),
                    (f"opensim_{acc:g}_steps", r["steps"], "rows of the Manager's states table")]

    # -- the rhythm --------------------------------------------------------------------------------
    ref = os_runs[OPENSIM_ACCURACIES[0]]["ref"]
    rhythm_pkg = rhythm_error(ref, model, q_ode)
    print(f"package rhythm error (OpenSim's coupler functions at the package's coordinates): max "
          f"{rhythm_pkg.max():.2e} rad over {len(ref._couplers)} couplers and {len(times)} samples")
    summary.append(("package_rhythm_error_max", rhythm_pkg.max(), "|q_dep - s f_OpenSim(q_ind)| rad"))

    # -- DAE ------------------------------------------------------------------------------------------
    dae_runs = {}
    for ab in (0.0, 10.0):
        dae = FullCoordinateDAE.from_document(doc, alpha=ab, beta=ab)
        y0 = dae.consistent_state(initial_state(model)[:model.n_q], np.zeros(model.n_q))
        t0 = time.perf_counter()
        tab = dae.simulate(times[-1], y0, rtol=ODE_TOL, atol=ODE_TOL, t_eval=times)
        sec = time.perf_counter() - t0
        dae_runs[ab] = tab
        d = np.abs(tab[names].to_numpy() - q_ode).max()
        print(f"DAE ({dae.n} coordinates, {dae.m} constraints, alpha = beta = {ab:g}): max |q - q_ODE| = {d:.2e} rad, "
              f"max|g| = {tab.constraint_error.max():.1e}, max|g_q q̇| = {tab.velocity_constraint_error.max():.1e}; "
              f"{tab.attrs['nfev']} evaluations")
        summary += [(f"dae_{ab:g}_max_diff_rad", d, "against the package ODE"),
                    (f"dae_{ab:g}_constraint_error_max", tab.constraint_error.max(), "max|g| rad"),
                    (f"dae_{ab:g}_velocity_constraint_error_max", tab.velocity_constraint_error.max(), "rad/s"),
                    (f"dae_{ab:g}_evaluations", tab.attrs["nfev"], "DOP853 1e-11"), (f"dae_{ab:g}_seconds", sec, "")]

    OUT.mkdir(parents=True, exist_ok=True)
    drift_study(args.mobl.parent, summary)

    # -- tables ---------------------------------------------------------------------------------------
    traj = {"time": times}
    for k, c in enumerate(names):
        traj[f"{c}_ode"] = q_ode[:, k]
    for acc, r in os_runs.items():
        for k, c in enumerate(names):
            traj[f"{c}_opensim_{acc:g}"] = r["q"][:, k]
    for k, c in enumerate(names):
        traj[f"{c}_dae"] = dae_runs[10.0][c].to_numpy()
    pd.DataFrame(traj).to_csv(OUT / "trajectories.csv", index=False, float_format="%.15g")
    cons = {"time": times, **{f"opensim_{acc:g}_max_abs_qerr": r["qerr"] for acc, r in os_runs.items()},
            **{f"opensim_{acc:g}_max_abs_uerr": r["uerr"] for acc, r in os_runs.items()},
            "dae_alpha0_max_abs_g": dae_runs[0.0].constraint_error.to_numpy(),
            "dae_alpha10_max_abs_g": dae_runs[10.0].constraint_error.to_numpy(),
            "package_rhythm_error": rhythm_pkg}
    pd.DataFrame(cons).to_csv(OUT / "constraint_errors.csv", index=False, float_format="%.6g")
    rows = []
    for label, qs in [*((f"OpenSim accuracy {acc:g}", r["q"]) for acc, r in os_runs.items()),
                      ("DAE alpha=beta=0", dae_runs[0.0][names].to_numpy()),
                      ("DAE alpha=beta=10", dae_runs[10.0][names].to_numpy()),
                      ("package ODE at 1e-13", q_ref)]:
        rows.append({"solution": label, **{c: np.abs(qs[:, k] - q_ode[:, k]).max() for k, c in enumerate(names)}})
    pd.DataFrame(rows).to_csv(OUT / "agreement.csv", index=False, float_format="%.3e")
    pd.DataFrame(summary, columns=["quantity", "value", "note"]).to_csv(OUT / "summary.csv", index=False,
                                                                       float_format="%.6g")

    # -- figures ----------------------------------------------------------------------------------------
    fig, axes = plt.subplots(2, 2, figsize=(7.0, 5.0), sharex=True)
    r8 = os_runs[OPENSIM_ACCURACIES[0]]
    for k, (ax, c) in enumerate(zip(axes.flat, names)):
        ax.plot(times, q_ode[:, k], "k-", lw=1.2, label="package ODE (DOP853 1e-11)")
        ax.plot(times[::4], r8["q"][::4, k], "o", ms=3.5, mfc="none", color="tab:red",
                label=f"OpenSim Manager (accuracy {OPENSIM_ACCURACIES[0]:g})")
        ax.set_ylabel(f"{c} (rad)")
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("time (s)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle("Passive swing of the MoBL shoulder and elbow (forearm and wrist locked, forces off)")
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    save(fig, "fig_swing_trajectories")

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    colors = {1e-8: "tab:red", 1e-10: "tab:orange", 1e-12: "tab:olive"}
    for acc, r in os_runs.items():
        ax.semilogy(times, floor(np.abs(r["q"] - q_ode).max(axis=1)), "-", color=colors.get(acc),
                    label=f"OpenSim, accuracy {acc:g}")
    ax.semilogy(times, floor(np.abs(dae_runs[10.0][names].to_numpy() - q_ode).max(axis=1)), "-", color="tab:blue",
                label="DAE (17 coordinates, Baumgarte 10/10)")
    ax.semilogy(times, floor(np.abs(q_ref - q_ode).max(axis=1)), ":", color="k", label="package ODE at 1e-13")
    ax.axhline(1e-6, color="0.5", lw=0.8, ls="--")
    ax.text(times[1], 1.3e-6, "1e-6 rad", color="0.4", fontsize=7)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(r"$\max_k |q_k - q_{k,\mathrm{ODE}}|$ (rad)")
    ax.set_ylim(1e-16, 1e-4)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower right", fontsize=7)
    ax.set_title("Difference from the package's ODE (DOP853, rtol = atol = 1e-11)")
    save(fig, "fig_swing_differences")

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for acc, r in os_runs.items():
        ax.semilogy(times, floor(r["qerr"]), "-", color=colors.get(acc), label=f"OpenSim max|QErr|, accuracy {acc:g}")
    ax.semilogy(times, floor(dae_runs[0.0].constraint_error), "--", color="tab:cyan", label="DAE max|g|, no stabilization")
    ax.semilogy(times, floor(dae_runs[10.0].constraint_error), "-", color="tab:blue", label="DAE max|g|, Baumgarte 10/10")
    ax.semilogy(times, floor(rhythm_pkg, 1e-18), "k-", lw=2.0,
                label="package ODE: max|q_dep − s f(q_ind)|, OpenSim's coupler functions")
    if rhythm_pkg.max() == 0.0:
        ax.text(0.5, 2e-18, "package ODE: exactly 0 at every sample (drawn at 1e-18)", fontsize=7, ha="center")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("constraint error (rad)")
    ax.set_ylim(3e-19, 1e-8)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", fontsize=7, ncol=1)
    ax.set_title("Rhythm (coupler) constraint error along each solution")
    save(fig, "fig_constraint_errors")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
