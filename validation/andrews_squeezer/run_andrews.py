"""Andrews' squeezing mechanism (seed section 4-4 B, Figs 17-18): ODE in beta alone vs the DAE in seven coordinates.

Run from the repository root (about a minute):

    /work/venv/bin/python validation/andrews_squeezer/run_andrews.py

Writes into validation/andrews_squeezer/results/:

* fig17_joint_variables.{pdf,png}   the six dependent angles against beta (solved and Fourier pre-model)
* fig18_beta_betadot.{pdf,png}      beta(t) and beta'(t), ODE (method b) and DAE, t in [0, 0.05]
* fig_residuals.{pdf,png}           constraint residual |g| along each solution (drift of the DAE)
* fig_premodel_convergence.{pdf,png} fit error and ODE error against the number of harmonics
* premodel_fits.csv                 fit errors of the pre-model (method a) for several numbers of harmonics
* reduced_equation_check.csv        J^T M J and J^T (f - M b) from the package vs the reference's M(q), f(q, qdot)
* results_t003.csv                  beta(0.03), beta'(0.03) of every method, differences, evaluations, times
* rms_vs_dae.csv                    RMS difference ODE - DAE over 1000 points in [0, 0.05], max residuals
* trajectories.csv                  beta, beta' of every method at the 1000 points
* residuals.csv                     constraint residual max_i |g_i| (m) of every solution at the 1000 points

Methods: ODE (b) = exact chain (Newton at every evaluation, projection derivatives
Eqs 102-120); ODE (a, K) = Fourier pre-model with K harmonics plus the secular term;
ODE (a') = the reduced equation m(beta) beta'' + c(beta) beta'^2 = tau(beta) with m, c, tau
sampled from the package's dynamics of the exact model and fitted with 40 harmonics;
DAE = index-1 formulation in all seven coordinates (acceleration-level constraint),
without or with Baumgarte stabilization.  All integrated with SciPy's DOP853
(explicit Runge-Kutta 8(5,3); the problem is not stiff) at the tolerances listed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from osim_emb.report import figure_style as fs  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from osim_emb.core.dynamics import dynamics_terms  # noqa: E402
from osim_emb.seeds.mechanisms import andrews as A  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
T_END = 0.05
T_REF = 0.03
N_PTS = 1000
TIGHT = 1e-13  # tolerance of the reference DAE solution

plt.rcParams.update({**fs.RC, "savefig.bbox": "tight"})  # the project style (docs/figures.md)


def save(fig, name):
    fs.save(fig, OUT / name, ("pdf", "png"), check=False)  # TrueType fonts, atomic files


def digits(diff, ref):
    return float(-np.log10(max(abs(diff) / abs(ref), 1e-17)))


def integrate(fun, y0, t_end, rtol, t_eval=None):
    t0 = time.perf_counter()
    sol = solve_ivp(fun, (0.0, t_end), y0, method="DOP853", rtol=rtol, atol=rtol, t_eval=t_eval)
    elapsed = time.perf_counter() - t0
    if not sol.success:
        raise RuntimeError(sol.message)
    return sol, elapsed


def premodel_study(par, chain):
    """Fit errors of the Fourier pre-model against the exact chain, for several numbers of harmonics."""
    beta = np.linspace(A.Q0[0], A.Q0[0] + 2 * np.pi, 4001)[:, None] + 1e-3
    exact = chain.evaluate(beta)
    rows, models = [], {}
    for k in (5, 8, 10, 12, 15, 20, 30):
        t0 = time.perf_counter()
        fns = A.andrews_premodel(par, n_harmonics=k)
        t_fit = time.perf_counter() - t0
        e = [np.max(np.abs(np.stack([getattr(f.evaluate(beta), a)[:, 0] if a == "gradient"
                                    else (f.evaluate(beta).value if a == "value" else f.evaluate(beta).hessian[:, 0, 0])
                                    for f in fns], 1) - ref))
             for a, ref in (("value", exact.value), ("gradient", exact.gradient[:, :, 0]),
                            ("hessian", exact.hessian[:, :, 0, 0]))]
        rows.append({"harmonics": k, "max_error_value_rad": e[0], "max_error_gradient": e[1],
                     "max_error_hessian": e[2], "sweep_and_fit_seconds": t_fit})
        models[k] = fns
    return pd.DataFrame(rows), models


def reduced_check(model, par, rng):
    """J^T M J and J^T (f - M b) from the package's dynamics vs the reference's M(q), f(q, qdot)."""
    beta = rng.uniform(-np.pi, np.pi, (50, 1))
    betadot = rng.uniform(-1500, 1500, (50, 1))
    terms = dynamics_terms(model, beta, betadot)
    from osim_emb.core.kinematics import joint_variables
    jv = joint_variables(model, beta, order=2)
    idx = [model.joint_names.index(n) + 1 for n in A.COORDINATE_NAMES]
    q = jv.value[:, idx]
    jac = jv.gradient[:, idx, 0]  # J = dq/dbeta (N, 7)
    b = jv.hessian[:, idx, 0, 0] * betadot ** 2  # J' beta'^2
    qd = jac * betadot
    m7 = A.reference_mass_matrix(q, par)
    f_all, f_app, f_vel = A.reference_forces(q, qd, par, parts=True)
    m_ref = np.einsum("ni,nij,nj->n", jac, m7, jac)
    rhs_ref = np.einsum("ni,ni->n", jac, f_all - np.einsum("nij,nj->ni", m7, b))
    tau = A.generalized_forces(model, terms.kinematics, par)[:, 0]
    rhs_pkg = tau + terms.gravity[:, 0] - terms.velocity_forces[:, 0]
    m_pkg = terms.mass[:, 0, 0]
    return pd.DataFrame([
        {"quantity": "J^T M J (reduced mass)",
         "max_relative_difference": np.max(np.abs(m_pkg - m_ref) / np.abs(m_ref))},
        {"quantity": "J^T (f - M b) (reduced force, 50 random states)",
         "max_relative_difference": np.max(np.abs(rhs_pkg - rhs_ref)) / np.max(np.abs(rhs_ref))},
        {"quantity": "velocity constraint |G J| (exact chain; absolute, m/rad)",
         "max_relative_difference": np.max(np.abs(np.einsum("nij,nj->ni", A.reference_constraint_jacobian(q), jac)))},
    ])


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    OUT = ap.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    par = A.AndrewsParameters()
    chain = A.andrews_chain(par)
    model_b = A.andrews_model(par, chain.variables)
    y0 = np.array([A.Q0[0], 0.0])
    z0 = A.dae_initial_state()
    t_pts = np.linspace(0.0, T_END, N_PTS)

    # ---- pre-model (method a) ------------------------------------------------------------
    fits, pm = premodel_study(par, chain)
    fits.to_csv(OUT / "premodel_fits.csv", index=False, float_format="%.4e")
    check = reduced_check(model_b, par, np.random.default_rng(0))
    check.to_csv(OUT / "reduced_equation_check.csv", index=False, float_format="%.3e")

    # ---- Fig 17 ----------------------------------------------------------------------------
    grid = A.Q0[0] + 2 * np.pi * np.arange(629) / 629
    solved = chain.solve(grid[:, None])
    fine = np.linspace(A.Q0[0], A.Q0[0] + 2 * np.pi, 1000)
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for i, name in enumerate(A.DEPENDENT_NAMES):
        ax.plot(grid[::12], solved[::12, i], "o", ms=2.2, color=f"C{i}")
        ax.plot(fine, pm[20][i](fine[:, None]), "-", lw=1, color=f"C{i}", label=rf"$\{name}$")
    ax.set_xlabel(r"$\beta$ (rad), one revolution from $\beta_0$")
    ax.set_ylabel("joint variable (rad)")
    ax.set_title("Andrews' squeezer: joint variables vs the generalized coordinate (Fig 17)\n"
                 "dots: solved constraints (every 12th of 629); lines: Fourier pre-model, 20 harmonics")
    ax.legend(ncol=3, loc="lower left")
    save(fig, "fig17_joint_variables")

    # ---- simulations -----------------------------------------------------------------------
    runs = {}  # name -> dict
    cases = [
        ("DAE index-1, tight (reference)", "dae", dict(rtol=TIGHT)),
        ("ODE (b) exact chain + projection", "ode", dict(model=model_b, rtol=1e-12)),
        ("ODE (b) exact chain + projection", "ode", dict(model=model_b, rtol=1e-10)),
        ("ODE (a) Fourier pre-model, 20 harmonics", "ode", dict(model=A.andrews_model(par, pm[20]), rtol=1e-12)),
        ("ODE (a) Fourier pre-model, 10 harmonics", "ode", dict(model=A.andrews_model(par, pm[10]), rtol=1e-12)),
        ("ODE (a) Fourier pre-model, 5 harmonics", "ode", dict(model=A.andrews_model(par, pm[5]), rtol=1e-12)),
        ("ODE (a') pre-modeled reduced equation, 40 harmonics", "red", dict(model=model_b, rtol=1e-12)),
        ("ODE (a') pre-modeled reduced equation, 40 harmonics", "red", dict(model=model_b, rtol=1e-10)),
        ("DAE index-1, no stabilization", "dae", dict(rtol=1e-10)),
        ("DAE index-1, no stabilization", "dae", dict(rtol=1e-6)),
        ("DAE index-1, Baumgarte alpha = beta = 2000/s", "dae", dict(rtol=1e-6, alpha=2e3, beta_b=2e3)),
    ]
    for name, kind, kw in cases:
        label = f"{name}, rtol {kw['rtol']:.0e}"
        if kind == "ode":
            fun = A.reduced_rhs(kw["model"], par)
            start = y0
        elif kind == "red":
            fun = A.reduced_equation_premodel(kw["model"], par).rhs()
            start = y0
        else:
            fun = A.dae_rhs(par, kw.get("alpha", 0.0), kw.get("beta_b", 0.0))
            start = z0
        s03, t03 = integrate(fun, start, T_REF, kw["rtol"])
        s05, t05 = integrate(fun, start, T_END, kw["rtol"], t_eval=t_pts)
        if kind in ("ode", "red"):
            b03, bd03 = s03.y[0, -1], s03.y[1, -1]
            beta, betadot = s05.y[0], s05.y[1]
            q, qd = A.full_state(kw["model"], beta, betadot)
        else:
            b03, bd03 = s03.y[0, -1], s03.y[7, -1]
            beta, betadot = s05.y[0], s05.y[7]
            q, qd = s05.y[:7].T, s05.y[7:].T
        res = np.max(np.abs(A.reference_constraints(q)), axis=1)
        vres = np.max(np.abs(np.einsum("nij,nj->ni", A.reference_constraint_jacobian(q), qd)), axis=1)
        runs[label] = dict(name=name, kind=kind, rtol=kw["rtol"], b03=b03, bd03=bd03, nfev03=s03.nfev, time03=t03,
                           nfev05=s05.nfev, time05=t05, beta=beta, betadot=betadot, res=res, vres=vres)
        print(f"{label:75s} beta(0.03) = {b03:.15f}  beta'(0.03) = {bd03:.12f}  nfev {s03.nfev:5d}  {t03:.2f} s")

    ref_label = next(k for k in runs if k.startswith("DAE index-1, tight"))
    ref = runs[ref_label]
    pub_b, pub_bd = A.PUBLISHED_T003["q"][0], A.PUBLISHED_T003["qdot"][0]
    rows = []
    for label, r in runs.items():
        rows.append({
            "method": r["name"], "rtol=atol": r["rtol"],
            "beta(0.03)": r["b03"], "beta_dot(0.03)": r["bd03"],
            "beta - DAE_ref": r["b03"] - ref["b03"], "digits_beta_vs_DAE": digits(r["b03"] - ref["b03"], ref["b03"]),
            "beta_dot - DAE_ref": r["bd03"] - ref["bd03"],
            "digits_beta_dot_vs_DAE": digits(r["bd03"] - ref["bd03"], ref["bd03"]),
            "beta - published": r["b03"] - pub_b, "beta_dot - published": r["bd03"] - pub_bd,
            "digits_beta_vs_published": digits(r["b03"] - pub_b, pub_b),
            "digits_beta_dot_vs_published": digits(r["bd03"] - pub_bd, pub_bd),
            "rhs_evaluations_[0,0.03]": r["nfev03"], "seconds_[0,0.03]": r["time03"],
            "rhs_evaluations_[0,0.05]": r["nfev05"], "seconds_[0,0.05]": r["time05"],
        })
    rows.append({"method": "published reference (IVP test set, PSIDE rtol=atol=1e-14)", "beta(0.03)": pub_b,
                 "beta_dot(0.03)": pub_bd, "beta - DAE_ref": pub_b - ref["b03"],
                 "beta_dot - DAE_ref": pub_bd - ref["bd03"],
                 "digits_beta_vs_DAE": digits(pub_b - ref["b03"], ref["b03"]),
                 "digits_beta_dot_vs_DAE": digits(pub_bd - ref["bd03"], ref["bd03"])})
    pd.DataFrame(rows).to_csv(OUT / "results_t003.csv", index=False, float_format="%.16g")

    rms_rows = []
    traj = {"t": t_pts}
    for label, r in runs.items():
        traj[f"beta [{label}]"] = r["beta"]
        traj[f"beta_dot [{label}]"] = r["betadot"]
        rms_rows.append({
            "method": r["name"], "rtol=atol": r["rtol"],
            "rms_beta_vs_DAE_ref_rad": float(np.sqrt(np.mean((r["beta"] - ref["beta"]) ** 2))),
            "rms_beta_dot_vs_DAE_ref_rad_per_s": float(np.sqrt(np.mean((r["betadot"] - ref["betadot"]) ** 2))),
            "max_position_residual_m": float(r["res"].max()),
            "position_residual_at_0.05_m": float(r["res"][-1]),
            "max_velocity_residual_m_per_s": float(r["vres"].max()),
            "rhs_evaluations_[0,0.05]": r["nfev05"], "seconds_[0,0.05]": r["time05"],
        })
    pd.DataFrame(rms_rows).to_csv(OUT / "rms_vs_dae.csv", index=False, float_format="%.4e")
    pd.DataFrame(traj).to_csv(OUT / "trajectories.csv", index=False, float_format="%.16e")
    pd.DataFrame({"t": t_pts, **{f"max|g| [{label}]": r["res"] for label, r in runs.items()}}).to_csv(
        OUT / "residuals.csv", index=False, float_format="%.4e")

    # ---- Fig 18 ----------------------------------------------------------------------------
    b = runs[next(k for k in runs if k.startswith("ODE (b)") and "1e-12" in k)]
    fig, ax = plt.subplots(2, 1, figsize=(4.8, 4.4), sharex=True)
    ax[0].plot(t_pts, b["beta"], "-", lw=2.2, color="0.6", label="ODE in beta (this work, method b)")
    ax[0].plot(t_pts, ref["beta"], "k:", lw=1.2, label="DAE, index 1 (7 coordinates)")
    ax[1].plot(t_pts, b["betadot"], "-", lw=2.2, color="0.6")
    ax[1].plot(t_pts, ref["betadot"], "k:", lw=1.2)
    ax[0].set_ylabel(r"$\beta$ (rad)")
    ax[1].set_ylabel(r"$\dot\beta$ (rad/s)")
    ax[1].set_xlabel("time (s)")
    ax[0].legend()
    ax[0].set_title("Andrews' squeezer: generalized coordinate and speed (Fig 18)")
    save(fig, "fig18_beta_betadot")

    # ---- residuals ---------------------------------------------------------------------------
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 4.6), sharey=True)
    for ax, kinds, title in ((axes[0], ("ode", "red"), "ODE in beta (dependent angles from the constraints)"),
                             (axes[1], ("dae",), "DAE in seven coordinates (index 1)")):
        for label, r in (item for item in runs.items() if item[1]["kind"] in kinds):
            ax.semilogy(t_pts, np.maximum(r["res"], 1e-19), "-", lw=0.9, label=label)
        ax.set_xlabel("time (s)")
        ax.set_title(title)
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    axes[0].set_ylabel(r"constraint residual $\max_i |g_i|$ (m)")
    axes[0].set_ylim(1e-19, 1e-3)
    fig.suptitle("Constraint residual along each solution (values below 1e-19 m shown at 1e-19)", fontsize=9)
    save(fig, "fig_residuals")

    # ---- pre-model convergence ---------------------------------------------------------------
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    ax.semilogy(fits["harmonics"], fits["max_error_value_rad"], "o-", label="fit error, value (rad)")
    ax.semilogy(fits["harmonics"], fits["max_error_hessian"], "s-", label="fit error, second derivative")
    ks, eb = [], []
    for label, r in runs.items():
        if r["name"].startswith("ODE (a)"):
            ks.append(int(r["name"].split(",")[1].split()[0]))
            eb.append(abs(r["b03"] - ref["b03"]))
    ax.semilogy(ks, eb, "^", color="C3", label=r"$|\beta(0.03) - \beta_{DAE}(0.03)|$ (rad)")
    ax.set_xlabel("number of harmonics of the pre-model")
    ax.legend()
    ax.set_title("Pre-modeling (method a): spectral convergence of the Fourier fit")
    save(fig, "fig_premodel_convergence")

    with pd.option_context("display.width", 250, "display.max_colwidth", 60, "display.float_format", "{:.6g}".format):
        print(fits.to_string(index=False))
        print(check.to_string(index=False))
        print(pd.DataFrame(rows)[["method", "rtol=atol", "beta(0.03)", "beta_dot(0.03)", "digits_beta_vs_DAE",
                                  "digits_beta_dot_vs_DAE", "digits_beta_vs_published", "rhs_evaluations_[0,0.03]",
                                  "seconds_[0,0.03]"]].to_string(index=False))
        print(pd.DataFrame(rms_rows).to_string(index=False))


if __name__ == "__main__":
    main()
