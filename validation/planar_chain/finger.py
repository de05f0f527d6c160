"""Four-link index finger with a deep flexor spanning three joints (seed: planar chain, Discussion).

Chain (sagittal plane of the finger, X distal, Y dorsal; flexion is clockwise, i.e. negative):
  link 0  forearm (base, fixed)      joint 1 wrist
  link 1  hand / 2nd metacarpal       joint 2 MCP
  link 2  proximal phalanx            joint 3 PIP
  link 3  middle phalanx              joint 4 DIP
  link 4  distal phalanx
Muscles as straight-line actuators (effective attachment points; pulleys are not modelled):
  FDP  (1 -> 4, spans MCP, PIP, DIP: the deep flexor of the seed's discussion)
  FDS  (1 -> 3, MCP and PIP)      EDC (1 -> 2, dorsal: MCP extensor through the sagittal bands)
  CS   central slip (2 -> 3, PIP extensor)
  LB   lateral bands / terminal extensor (2 -> 4, PIP and DIP extensor)
  INT  interossei/lumbrical as an MCP flexor (1 -> 2)
  FCR, ECRB wrist flexor and extensor (0 -> 1)

Parameters (see README.md for the sources):
  hand length HL = 0.19 m; segment lengths 0.374, 0.245, 0.143, 0.097 x HL (index: metacarpal, proximal,
  middle, distal; Buchholz, Armstrong & Goldstein 1992 coefficients as commonly tabulated);
  hand mass 0.006 x 75 kg with centre of mass at 0.506 of its length and radius of gyration 0.297
  (Dempster via Winter 2009, Table 4.1), minus the index phalanges;
  phalanges as cylinders of tissue density 1100 kg/m^3 with diameters 20, 18, 16 mm (an estimate);
  FDP/FDS effective attachment points chosen to give moment arms close to Ketchum et al. (1978) in the
  extended finger (FDP: MCP 10.1, PIP 9.8, DIP 6.5 mm; FDS: MCP 12.1, PIP 8.3 mm).

Task: a key tap.  0-0.15 s: flexion from a relaxed posture (minimum jerk); 0.15-0.25 s: the fingertip
force R_4 (normal to the key, 6 N peak) rises; 0.25-0.40 s: hold.  Muscle tensions by static optimisation
(min sum (T/F_max)^2, Eq 22 = tau).  Joint forces and torques by the distal data set (Eqs 9, 23) and checked
against the proximal one (Eqs 10, 24, with R_0 from Eq 4).

Run:  python validation/planar_chain/finger.py      (writes validation/planar_chain/results/finger_*)
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import OUT, draw_chain, minimum_jerk, moment_arm_table, project_reactions, savefig  # noqa: E402
from _common import static_optimization  # noqa: E402

from osim_emb.seeds.planar import (
    Link,
    Muscle,
    PlanarChain,
    joint_positions,
    joint_reactions,
    joint_torques,
    muscle_torques,
    with_base_equilibrium,
)
from osim_emb.report.contribution_figures import plot_stacked_contributions
from osim_emb.seeds.planar import contributions

JOINTS = ["wrist", "MCP", "PIP", "DIP"]
RHO = 1100.0


def cylinder(length, diameter, name):
    r = diameter / 2
    m = RHO * np.pi * r**2 * length
    tip = name == "distal phalanx"  # key contact at the pulp of the fingertip: (0.95 l, -3 mm) in the link frame
    return Link(length=length, mass=m, com_distance=length / 2, inertia=m * (length**2 / 12 + r**2 / 4),
                contact_distance=float(np.hypot(0.95 * length, 0.003)) if tip else 0.0,
                contact_angle=float(-np.arctan2(0.003, 0.95 * length)) if tip else 0.0, name=name)


def build_finger() -> PlanarChain:
    HL = 0.19
    lmc, lpp, lmp, ldp = 0.374 * HL, 0.245 * HL, 0.143 * HL, 0.097 * HL
    pp, mp, dp = cylinder(lpp, 0.020, "proximal phalanx"), cylinder(lmp, 0.018, "middle phalanx"), cylinder(
        ldp, 0.016, "distal phalanx")
    m_hand = 0.006 * 75.0 - (pp.mass + mp.mass + dp.mass)
    hand = Link(length=lmc, mass=m_hand, com_distance=0.506 * lmc, inertia=m_hand * (0.297 * lmc) ** 2, name="hand")
    forearm = Link(length=0.25, mass=1.2, com_distance=0.14, inertia=0.006, name="forearm")
    muscles = (
        Muscle("FDP", 1, 4, (lmc - 0.012, -0.0095), (0.005, -0.0045)),
        Muscle("FDS", 1, 3, (lmc - 0.014, -0.0105), (0.007, -0.0055)),
        Muscle("EDC", 1, 2, (lmc - 0.012, 0.0100), (0.006, 0.0070)),
        Muscle("CS", 2, 3, (lpp - 0.010, 0.0070), (0.004, 0.0055)),
        Muscle("LB", 2, 4, (lpp - 0.008, 0.0070), (0.002, 0.0060)),
        Muscle("INT", 1, 2, (lmc - 0.025, -0.0070), (0.012, -0.0040)),
        Muscle("FCR", 0, 1, (0.15, -0.0150), (0.020, -0.0120)),
        Muscle("ECRB", 0, 1, (0.15, 0.0130), (0.020, 0.0120)),
    )
    return PlanarChain((forearm, hand, pp, mp, dp), muscles, base_angle=0.0)


# approximate maximal forces (N): PCSA x 35 N/cm^2 (orders of magnitude of Lieber et al. 1992; intrinsics lumped)
F_MAX = {"FDP": 145.0, "FDS": 145.0, "EDC": 60.0, "CS": 40.0, "LB": 40.0, "INT": 130.0, "FCR": 70.0, "ECRB": 95.0}


def task(N=161):
    t = np.linspace(0.0, 0.40, N)
    rel0 = np.deg2rad([0.0, -5.0, -10.0, 0.0])  # wrist, MCP, PIP, DIP (relative; flexion < 0)
    rel1 = np.deg2rad([0.0, -25.0, -35.0, -5.0])
    rel, drel, ddrel = minimum_jerk(t, 0.0, 0.15, rel0, rel1)
    theta, dtheta, ddtheta = np.cumsum(rel, 1), np.cumsum(drel, 1), np.cumsum(ddrel, 1)
    # fingertip force: normal to the key (+Y), rising 0.15-0.25 s to 6 N
    F = minimum_jerk(t, 0.15, 0.25, 0.0, 6.0)[0]
    return t, theta, dtheta, ddtheta, F


def main():
    global OUT
    OUT = _common.parse_out(__doc__.split("\n")[0])
    OUT.mkdir(parents=True, exist_ok=True)
    chain = build_finger()
    t, th, dth, ddth, Ftip = task()
    N, n = th.shape
    R = np.zeros((N, n + 1))
    gam = np.zeros((N, n + 1))
    R[:, 4] = Ftip
    gam[:, 4] = np.pi / 2 - th[:, 3]  # direction +Y in the global frame
    R, gam = with_base_equilibrium(chain, th, dth, ddth, R, gam)

    tau = joint_torques(chain, th, dth, ddth, R, gam, data_set="distal")
    tau24 = joint_torques(chain, th, dth, ddth, R, gam, data_set="proximal")
    T, resid = static_optimization(chain, th, tau, [F_MAX[m] for m in chain.muscle_names])
    phi = joint_reactions(chain, th, dth, ddth, T, R, gam, data_set="distal")
    phi10 = joint_reactions(chain, th, dth, ddth, T, R, gam, data_set="proximal")
    tauM = muscle_torques(chain, th, T)

    ma = moment_arm_table(chain, th[0], JOINTS) * 1000.0
    ma.index.name = "muscle"
    (ma.round(3) + 0.0).to_csv(OUT / "finger_moment_arms_mm_initial_posture.csv")

    summary = pd.DataFrame({"time": t})
    for k, name in enumerate(JOINTS):
        summary[f"tau_{name}"] = tau[:, k]
        summary[f"phi_x_{name}"] = phi[:, k, 0]
        summary[f"phi_y_{name}"] = phi[:, k, 1]
    for m, name in enumerate(chain.muscle_names):
        summary[f"T_{name}"] = T[:, m]
    summary["fingertip_force"] = Ftip
    summary.to_csv(OUT / "finger_summary.csv", index=False, float_format="%.9g")
    checks = pd.DataFrame({
        "check": ["max |Eq 9 - Eq 10| (N)", "max |Eq 23 - Eq 24| (N m)", "max |tau - Eq 22(T)| after static optimisation (N m)",
                  "max |phi| (N)", "max |tau| (N m)"],
        "value": [np.abs(phi - phi10).max(), np.abs(tau - tau24).max(), np.abs(tau - tauM).max(), np.abs(phi).max(),
                  np.abs(tau).max()],
    })
    checks.to_csv(OUT / "finger_checks.csv", index=False, float_format="%.3e")

    df = contributions(chain, th, dth, ddth, T, R, gam, data_set="distal", time=t)
    step = 4  # every 4th state in the committed table (41 states)
    keep = df[df["state"] % step == 0]
    keep.to_csv(OUT / "finger_contributions.csv", index=False, float_format="%.6g")
    proj = project_reactions(df, chain, th)

    # ---------------------------------------------------------------- figures
    colors = {m: c for m, c in zip(chain.muscle_names, plt.get_cmap("Dark2").colors)}
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    for s, a in ((0, 0.35), (N // 4, 0.55), (N - 1, 1.0)):
        draw_chain(ax, chain, th[s], alpha=a, muscle_colors=colors, label_muscles=(s == N - 1))
    J = joint_positions(chain, th[-1])
    ax.annotate("", xy=J[5] + [0, 0.000], xytext=J[5] + [0, -0.02],
                arrowprops=dict(arrowstyle="->", color="tab:blue"))
    ax.text(J[5, 0] + 0.003, J[5, 1] - 0.02, "R$_4$", color="tab:blue", fontsize=8)
    ax.set_xlim(-0.035, 0.165)
    ax.set_ylim(-0.075, 0.025)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("Four-link finger: postures at 0, 0.1 and 0.4 s and muscle lines of action", fontsize=9)
    savefig(fig, "finger_model")
    plt.close(fig)

    fig = plot_stacked_contributions(df, "torque", joint_names=[f"{j} torque τ (N m)" for j in JOINTS], max_sources=9)
    fig.suptitle("Finger: contributions to the joint torques (Eq 23)", y=1.01, fontsize=10)
    savefig(fig, "finger_torque_contributions")
    plt.close(fig)

    fig = plot_stacked_contributions(proj, "compression",
                                     joint_names=[f"{j} compression (N)" for j in JOINTS], max_sources=9)
    fig.suptitle("Finger: contributions to the joint compression (Eqs 9, 12)", y=1.01, fontsize=10)
    savefig(fig, "finger_compression_contributions")
    plt.close(fig)

    fig, axs = plt.subplots(1, 2, figsize=(8, 2.8))
    for m, name in enumerate(chain.muscle_names):
        axs[0].plot(t, T[:, m], label=name, color=colors[name])
    axs[0].set_xlabel("time (s)")
    axs[0].set_ylabel("tension (N)")
    axs[0].legend(fontsize=7, ncol=2, frameon=False)
    for k, name in enumerate(JOINTS):
        axs[1].plot(t, np.linalg.norm(phi[:, k], axis=1), label=name)
    axs[1].set_xlabel("time (s)")
    axs[1].set_ylabel("|joint force| (N)")
    axs[1].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    savefig(fig, "finger_muscles_and_joint_forces")
    plt.close(fig)
    print(checks.to_string(index=False))
    print(ma.round(2).to_string())


if __name__ == "__main__":
    main()
