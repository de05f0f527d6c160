"""Four-bar and five-bar closed-chain linkages (seed section 4-3, Figs 4-11): figures and tables.

Run from the repository root:

    /work/venv/bin/python validation/linkages/run_linkages.py

Writes into validation/linkages/results/:

* fig04_four_bar_trajectory.{pdf,png}, fig05_four_bar_joint_variables.{pdf,png},
  fig06_four_bar_point_p.{pdf,png}, fig08_five_bar_trajectories.{pdf,png},
  fig09_five_bar_point_p.{pdf,png}, fig10_five_bar_gradients.{pdf,png},
  fig11_five_bar_theta4_manifold.{pdf,png};
* four_bar_point_p.csv, five_bar_point_p.csv, five_bar_gradients.csv (time histories),
  four_bar_premodel.csv (joint variables vs q), agreement.csv (the summary), timings.csv.

Agreement of a vector history a(t) with a reference b(t) (vector norms at each time):
"global" = max_t |a - b| / max_t |b|; "pointwise" = max over the times where |b| >= 1% of
max_t |b| of |a - b| / |b| (a quantity that passes through zero, such as grad theta_4 of the
five-bar at q = (0, 0), has no relative accuracy there).  Significant figures = -log10 of these.
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

from osim_emb.core import closed_chains as cc  # noqa: E402
from osim_emb.seeds.mechanisms import linkages as lk  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
N_T = 1001

plt.rcParams.update({**fs.RC, "savefig.bbox": "tight"})  # the project style (docs/figures.md)


def save(fig, name):
    fs.save(fig, OUT / name, ("pdf", "png"), check=False)  # TrueType fonts, atomic files


def agreement(a, b):
    """Differences of vector histories a, b (T, d) (b the reference).

    Returns (max |a - b|, global relative = max|a - b| / max|b|, pointwise relative =
    max over the points with |b| >= 1% of max|b| of |a - b| / |b|); norms are vector norms.
    """
    a = np.asarray(a).reshape(len(a), -1)
    b = np.asarray(b).reshape(len(b), -1)
    d = np.linalg.norm(a - b, axis=1)
    nb = np.linalg.norm(b, axis=1)
    keep = nb >= 1e-2 * nb.max()
    return float(d.max()), float(d.max() / nb.max()), float(np.max(d[keep] / nb[keep]))


def sig_figs(e):
    return float(-np.log10(max(e, 1e-17)))


def add(rows, mech, what, a, b):
    dmax, glob, point = agreement(a, b)
    rows.append((mech, what, dmax, glob, sig_figs(glob), point, sig_figs(point)))
    return max(glob, point)


def four_bar(rows, timings):
    par = lk.FourBarParameters()
    traj = lk.four_bar_trajectory()
    t = np.linspace(*traj.span, N_T)
    q, qd, qdd = traj(t)
    r_p = [par.p[0], par.p[1], 0.0]
    # empirically-based: Model with exact chain variables (Newton + projection)
    model = lk.four_bar_model(par)
    t0 = time.perf_counter()
    pos, vel, acc = lk.point_p_kinematics(model, 2, r_p, q, qd, qdd)
    t_emb = time.perf_counter() - t0
    # pre-modeling as in the seed: sweep [-2, 2] step 0.01, natural cubic splines
    cons = lk.four_bar_constraints(par)
    grid = np.linspace(-2.0, 2.0, 401)
    f_start = lk.four_bar_chain(par).solve([[-2.0]])[0]
    spl = cc.premodel(cons, grid, f_start, kind="spline")
    model_pm = lk.four_bar_model(par, spl)
    pos_pm, vel_pm, acc_pm = lk.point_p_kinematics(model_pm, 2, r_p, q, qd, qdd)
    # traditional: body coordinates (Shabana)
    sysb = lk.four_bar_body_system(par)
    f0 = lk.four_bar_chain(par).solve(q[:1])[0]
    t0 = time.perf_counter()
    x, v, a = sysb.analyse(q, qd, qdd, lk.body_guess_from_angles([par.l1, par.l2, par.l3], f0))
    t_trad = time.perf_counter() - t0
    p_t, v_t, a_t = sysb.point_kinematics(x, v, a, 1, par.p)
    e = {}
    for k, a_, b_ in (("position", pos[:, :2], p_t), ("velocity", vel[:, :2], v_t), ("acceleration", acc[:, :2], a_t)):
        e[k] = add(rows, "four-bar", f"point p {k}: closed form (exact chain, projection) vs traditional", a_, b_)
    for k, a_, b_ in (("velocity", vel_pm[:, :2], v_t), ("acceleration", acc_pm[:, :2], a_t)):
        add(rows, "four-bar", f"point p {k}: closed form (spline pre-model, step 0.01) vs traditional", a_, b_)
    timings.append(("four-bar", f"closed form, point p kinematics, {N_T} configurations (batched)", t_emb))
    timings.append(("four-bar", f"traditional (body coordinates), {N_T} configurations (loop)", t_trad))

    pd.DataFrame({"t": t, "q": q[:, 0], "qdot": qd[:, 0], "qddot": qdd[:, 0],
                  "vx_emb": vel[:, 0], "vy_emb": vel[:, 1], "vx_trad": v_t[:, 0], "vy_trad": v_t[:, 1],
                  "ax_emb": acc[:, 0], "ay_emb": acc[:, 1], "ax_trad": a_t[:, 0], "ay_trad": a_t[:, 1],
                  "speed_emb": np.linalg.norm(vel, axis=1), "speed_trad": np.linalg.norm(v_t, axis=1),
                  "acc_emb": np.linalg.norm(acc, axis=1), "acc_trad": np.linalg.norm(a_t, axis=1),
                  "speed_premodel": np.linalg.norm(vel_pm, axis=1), "acc_premodel": np.linalg.norm(acc_pm, axis=1),
                  }).to_csv(OUT / "four_bar_point_p.csv", index=False, float_format="%.16e")

    # Fig 4: trajectory
    fig, ax = plt.subplots(3, 1, figsize=(4.5, 4.8), sharex=True)
    for a_, y, lab in zip(ax, (q, qd, qdd), ("q", r"$\dot q$", r"$\ddot q$")):
        a_.plot(t, y[:, 0], "k-", lw=1)
        a_.set_ylabel(lab)
    ax[0].plot(traj.t_knots, traj.values[:, 0], "o", ms=3, color="C3", label="Hermite knots")
    ax[0].legend()
    ax[-1].set_xlabel("time (s)")
    ax[0].set_title("Four-bar: desired trajectory of the coupler's centre-of-mass height (Fig 4)")
    save(fig, "fig04_four_bar_trajectory")

    # Fig 5: joint variables vs q (pre-model)
    qq = np.linspace(-2, 2, 801)
    sol = lk.four_bar_chain(par).solve(qq[:, None])
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    rows5 = {"q": qq}
    for i, fn in enumerate(spl):
        ax.plot(grid[::20], cc.solve_path(cons, grid[::20, None], f_start)[:, i], "o", ms=2.5, color=f"C{i}")
        ax.plot(qq, fn(qq[:, None]), "-", color=f"C{i}", lw=1, label=rf"$\theta_{i + 1}$ (cubic spline)")
        rows5[f"theta{i + 1}_spline"] = fn(qq[:, None])
        rows5[f"theta{i + 1}_exact"] = sol[:, i]
    ax.set_xlabel("q (height of the coupler's centre of mass)")
    ax.set_ylabel("joint variable (rad)")
    ax.set_title("Four-bar: joint variables vs q, pre-modeling (Fig 5)\n(dots: solved constraints, every 20th)")
    ax.legend()
    save(fig, "fig05_four_bar_joint_variables")
    pd.DataFrame(rows5).to_csv(OUT / "four_bar_premodel.csv", index=False, float_format="%.16e")

    # Fig 6: |v|, |a| of p
    fig, ax = plt.subplots(2, 1, figsize=(4.5, 4.2), sharex=True)
    for a_, emb, trad, lab in ((ax[0], vel[:, :2], v_t, "|v_p|"), (ax[1], acc[:, :2], a_t, "|a_p|")):
        a_.plot(t, np.linalg.norm(emb, axis=1), "-", lw=2.2, color="0.6", label="closed form (this work)")
        a_.plot(t, np.linalg.norm(trad, axis=1), "k:", lw=1.2, label="traditional (Shabana)")
        a_.set_ylabel(lab)
    ax[0].legend()
    ax[1].set_xlabel("time (s)")
    ax[0].set_title(f"Four-bar: point p; largest relative difference {max(e['velocity'], e['acceleration']):.1e}"
                    " (Fig 6)")
    save(fig, "fig06_four_bar_point_p")


def five_bar(rows, timings):
    par = lk.FiveBarParameters()
    traj = lk.five_bar_trajectory()
    t = np.linspace(*traj.span, N_T)
    q, qd, qdd = traj(t)
    r_p = [par.lp, 0.0, 0.0]
    chain = lk.five_bar_chain(par)
    model = lk.five_bar_model(par, chain.variables)
    t0 = time.perf_counter()
    pos, vel, acc = lk.point_p_kinematics(model, 3, r_p, q, qd, qdd)
    t_emb = time.perf_counter() - t0
    sysb = lk.five_bar_body_system(par)
    f0 = chain.solve(q[:1])[0]
    t0 = time.perf_counter()
    x, v, a = sysb.analyse(q, qd, qdd, lk.body_guess_from_angles([par.l1, par.l2, par.l3, par.l4], np.r_[q[0], f0]))
    t_trad = time.perf_counter() - t0
    p_t, v_t, a_t = sysb.point_kinematics(x, v, a, 2, (par.lp, 0.0))
    e = {}
    for k, a_, b_ in (("position", pos[:, :2], p_t), ("velocity", vel[:, :2], v_t), ("acceleration", acc[:, :2], a_t)):
        e[k] = add(rows, "five-bar", f"point p {k}: closed form (projection) vs traditional", a_, b_)
    timings.append(("five-bar", f"closed form, point p kinematics, {N_T} configurations (batched)", t_emb))
    timings.append(("five-bar", f"traditional (body coordinates), {N_T} configurations (loop)", t_trad))
    # projection vs numerical differentiation (computational molecule): gradients and Hessians
    jet = chain.evaluate(q)
    molecules = {}
    for acc_, h in ((2, 1e-5), (2, 1e-4), (4, 1e-3)):
        t0 = time.perf_counter()
        molecules[(acc_, h)] = cc.molecule_derivatives(chain.constraints, q, jet.value, h, accuracy=acc_)
        timings.append(("five-bar", f"molecule derivatives (order {acc_}, h = {h:g}), {N_T} configurations",
                        time.perf_counter() - t0))
    for (acc_, h), (gn, hn) in molecules.items():
        name = f"order-{acc_} molecule, h = {h:g}"
        for i in range(2):
            add(rows, "five-bar", f"grad theta{i + 3}: projection vs {name}", gn[:, i], jet.gradient[:, i])
            add(rows, "five-bar", f"Hessian theta{i + 3}: projection vs {name}", hn[:, i], jet.hessian[:, i])
    g_num = molecules[(2, 1e-5)][0]
    pd.DataFrame({"t": t, "theta1": q[:, 0], "theta2": q[:, 1], "theta3": jet.value[:, 0], "theta4": jet.value[:, 1],
                  "vx_emb": vel[:, 0], "vy_emb": vel[:, 1], "vx_trad": v_t[:, 0], "vy_trad": v_t[:, 1],
                  "ax_emb": acc[:, 0], "ay_emb": acc[:, 1], "ax_trad": a_t[:, 0], "ay_trad": a_t[:, 1]}
                 ).to_csv(OUT / "five_bar_point_p.csv", index=False, float_format="%.16e")
    pd.DataFrame({"t": t,
                  "grad3_norm_projection": np.linalg.norm(jet.gradient[:, 0], axis=1),
                  "grad3_norm_molecule": np.linalg.norm(g_num[:, 0], axis=1),
                  "grad4_norm_projection": np.linalg.norm(jet.gradient[:, 1], axis=1),
                  "grad4_norm_molecule": np.linalg.norm(g_num[:, 1], axis=1)}
                 ).to_csv(OUT / "five_bar_gradients.csv", index=False, float_format="%.16e")

    # Fig 8: trajectories
    fig, ax = plt.subplots(figsize=(4.5, 3.0))
    for k in range(2):
        ax.plot(t, q[:, k], lw=1.2, label=rf"$q_{k + 1} = \theta_{k + 1}$")
        ax.plot(traj.t_knots, traj.values[:, k], "o", ms=3, color=f"C{k}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("rad")
    ax.legend()
    ax.set_title("Five-bar: desired trajectories of the generalized coordinates (Fig 8)")
    save(fig, "fig08_five_bar_trajectories")

    # Fig 9
    fig, ax = plt.subplots(2, 1, figsize=(4.5, 4.2), sharex=True)
    for a_, emb, trad, lab in ((ax[0], vel[:, :2], v_t, "|v_p|"), (ax[1], acc[:, :2], a_t, "|a_p|")):
        a_.plot(t, np.linalg.norm(emb, axis=1), "-", lw=2.2, color="0.6", label="closed form (projection)")
        a_.plot(t, np.linalg.norm(trad, axis=1), "k:", lw=1.2, label="traditional (Shabana)")
        a_.set_ylabel(lab)
    ax[0].legend()
    ax[1].set_xlabel("time (s)")
    ax[0].set_title(f"Five-bar: point p; largest relative difference {max(e['velocity'], e['acceleration']):.1e}"
                    " (Fig 9)")
    save(fig, "fig09_five_bar_point_p")

    # Fig 10
    fig, ax = plt.subplots(figsize=(4.5, 3.0))
    for i in range(2):
        ax.plot(t, np.linalg.norm(jet.gradient[:, i], axis=1), "-", lw=2.2, color=f"C{i}", alpha=0.5,
                label=rf"$|\nabla\theta_{i + 3}|$ projection")
        ax.plot(t, np.linalg.norm(g_num[:, i], axis=1), "--", lw=1, color=f"C{i}",
                label=rf"$|\nabla\theta_{i + 3}|$ numerical (molecule)")
    ax.set_xlabel("time (s)")
    ax.legend()
    ax.set_title("Five-bar: gradient magnitudes, projection vs numerical differentiation (Fig 10)")
    save(fig, "fig10_five_bar_gradients")

    # Fig 11: theta4 manifold over (theta1, theta2)
    g = np.linspace(-np.pi, np.pi, 61)
    t1, t2 = np.meshgrid(g, g, indexing="ij")
    qq = np.column_stack([t1.ravel(), t2.ravel()])
    th4 = chain.solve(qq)[:, 1].reshape(t1.shape)
    fig = plt.figure(figsize=(4.8, 3.8))
    ax = fig.add_subplot(projection="3d")
    ax.plot_surface(t1, t2, th4, cmap="viridis", linewidth=0, antialiased=True)
    ax.set_box_aspect(None, zoom=0.85)
    ax.set_xlabel(r"$q_1=\theta_1$")
    ax.set_ylabel(r"$q_2=\theta_2$")
    ax.set_zlabel(r"$\theta_4$")
    ax.set_title("Five-bar: manifold of the 4th joint (Fig 11)")
    save(fig, "fig11_five_bar_theta4_manifold")


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    OUT = ap.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    rows, timings = [], []
    four_bar(rows, timings)
    five_bar(rows, timings)
    df = pd.DataFrame(rows, columns=["mechanism", "quantity", "max_abs_difference", "relative_to_max",
                                     "significant_figures_global", "max_pointwise_relative",
                                     "significant_figures_pointwise"])
    df.to_csv(OUT / "agreement.csv", index=False, float_format="%.6g")
    tm = pd.DataFrame(timings, columns=["mechanism", "computation", "seconds"])
    tm.to_csv(OUT / "timings.csv", index=False, float_format="%.4g")
    with pd.option_context("display.width", 250, "display.max_colwidth", 80, "display.float_format", "{:.3g}".format):
        print(df.to_string(index=False))
        print(tm.to_string(index=False))


if __name__ == "__main__":
    main()
