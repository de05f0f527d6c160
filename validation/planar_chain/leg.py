"""Sagittal leg: metatarsophalangeal, ankle, knee and hip joints with biarticular muscles, toes as the base.

Seed: planar chain, Discussion ("walking, running, and jumping ... as long as the toes (the basis of the
chain) remain in contact with the ground").  X anterior, Y up; the chain runs from the toes upward:
  link 0  toes (base, on the ground)      joint 1 MTP
  link 1  foot                            joint 2 ankle
  link 2  shank                           joint 3 knee
  link 3  thigh                           joint 4 hip
  link 4  half of head-arms-trunk (HAT), one leg of a symmetric push-off carries half of it
Muscles (straight lines between effective attachment points):
  single-joint: TF toe flexors, lumped (1 -> 0, MTP), SOL soleus and TA tibialis anterior (2 -> 1, ankle),
                VAS vasti (3 -> 2, knee), GMAX gluteus maximus and ILPS iliopsoas (4 -> 3, hip)
  biarticular:  EDL long toe extensors (2 -> 0: ankle and MTP), GAS gastrocnemius (3 -> 1: knee and ankle),
                RF rectus femoris and HAM hamstrings (4 -> 2: hip and knee)

Parameters (see README.md for the sources):
  body mass 75 kg, height 1.80 m; segment masses, centre-of-mass positions and radii of gyration of Dempster
  as tabulated by Winter (2009, Table 4.1): foot 0.0145 / 0.50 / 0.475, leg 0.0465 / 0.433 (from the knee) /
  0.302, thigh 0.100 / 0.433 (from the hip) / 0.323, HAT 0.678 / 0.626 (from the hip) / 0.496; segment lengths
  of Drillis & Contini as in Winter (2009, Fig. 4.1): leg 0.246 H, thigh 0.245 H, hip-to-shoulder 0.288 H;
  muscle attachment points in the sagittal plane adapted from the OpenSim leg6dof9musc model
  (Delp et al. 1990; ../shared/models/leg6dof9musc.osim) relative to the joint centres, with effective
  points where the real paths wrap (patella, extensor retinaculum, sesamoids); maximal forces from the same
  model where it has the muscle.

Task: a rapid rise from a half squat on the forefoot (knees flexed 30 deg, trunk inclined 25 deg) to full
extension with the heels raised 30 deg, 0.6 s, minimum-jerk link angles; the shank inclination at both ends
puts the centre of mass above the MTP.  (The straight-line muscles keep their anatomical actions over this range; deeper squats
make RF and GMAX cross their joints.)  The ground reaction
on the toes (the base) is R_0 of Eq 4.  Muscle tensions by static optimisation.

Run:  python validation/planar_chain/leg.py      (writes validation/planar_chain/results/leg_*)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import OUT, draw_chain, local_point, minimum_jerk, moment_arm_table, project_reactions  # noqa: E402
from _common import savefig, static_optimization  # noqa: E402

from osim_emb.seeds.planar import (
    Link,
    Muscle,
    PlanarChain,
    com_positions,
    contact_vectors,
    joint_positions,
    joint_reactions,
    joint_torques,
    muscle_torques,
    with_base_equilibrium,
)
from osim_emb.report.contribution_figures import plot_stacked_contributions
from osim_emb.seeds.planar import contributions

JOINTS = ["MTP", "ankle", "knee", "hip"]
M_BODY, H = 75.0, 1.80

# Reference (upright) posture: joint centres, metres, MTP at the origin
TOE_TIP = np.array([0.055, -0.012])
ANKLE = np.array([-0.145, 0.075])
KNEE = ANKLE + [0.0, 0.246 * H]
HIP = KNEE + [0.0, 0.245 * H]
SHOULDER = HIP + [0.0, 0.288 * H]

# Muscle attachment points: global positions in the reference (upright) posture, built from the joint centres.
# Sagittal (x anterior, y up) offsets adapted from leg6dof9musc (Delp et al. 1990), see README.md.
MUSCLES = {
    # name: (link_a, P_a, link_b, P_b) with the proximal link (toward the toes) first
    "TF": (0, np.array([0.030, -0.028]), 1, np.array([-0.190, -0.030])),  # toes -> calcaneus (toe flexors, lumped)
    "EDL": (0, np.array([0.030, 0.012]), 2, ANKLE + [0.040, 0.030]),  # dorsum of the toes -> extensor retinaculum
    "SOL": (1, ANKLE + [-0.062, -0.021], 2, ANKLE + [-0.003, 0.271]),  # calcaneus -> posterior tibia
    "TA": (1, ANKLE + [0.058, -0.035], 2, ANKLE + [0.020, 0.260]),  # medial cuneiform -> lateral tibia
    "GAS": (1, ANKLE + [-0.062, -0.021], 3, KNEE + [-0.025, 0.020]),  # calcaneus -> femoral condyles
    "VAS": (2, KNEE + [0.045, -0.070], 3, KNEE + [0.060, 0.030]),  # tibial tuberosity -> patella (femoral groove)
    "RF": (2, KNEE + [0.045, -0.070], 4, HIP + [0.043, 0.037]),  # tibial tuberosity -> anterior inferior iliac spine
    "HAM": (2, KNEE + [-0.034, -0.040], 4, HIP + [-0.058, -0.038]),  # posterior tibia -> ischial tuberosity
    "GMAX": (3, HIP + [-0.025, -0.100], 4, HIP + [-0.075, 0.020]),  # gluteal tuberosity -> posterior ilium/sacrum
    "ILPS": (3, HIP + [-0.022, -0.070], 4, HIP + [0.049, 0.010]),  # lesser trochanter -> pelvic brim
}
F_MAX = {"TF": 1500.0, "EDL": 600.0, "SOL": 5137.0, "TA": 1759.0, "GAS": 2241.0 * 1.5, "VAS": 4530.0 * 2.0,
         "RF": 1169.0, "HAM": 2594.0, "GMAX": 1944.0 * 2.0, "ILPS": 2342.0}


def build_leg() -> tuple[PlanarChain, np.ndarray]:
    J = np.array([TOE_TIP, np.zeros(2), ANKLE, KNEE, HIP, SHOULDER])
    seg = np.diff(J, axis=0)
    theta_ref = np.arctan2(seg[:, 1], seg[:, 0])  # theta_0 .. theta_4 in the reference posture
    lengths = np.linalg.norm(seg, axis=1)
    m = M_BODY
    # (mass fraction, com fraction from J_i along the link, radius of gyration fraction)
    bsp = {
        0: (0.003, 0.5, 0.3),  # toes (base; its weight cancels against the ground reaction)
        1: (0.0145, 0.50, 0.475),  # foot (ankle-MT2 segment)
        2: (0.0465, 1 - 0.433, 0.302),  # leg: COM 0.433 from the knee = 0.567 from the ankle (J_2)
        3: (0.100, 1 - 0.433, 0.323),  # thigh: 0.433 from the hip = 0.567 from the knee (J_3)
        4: (0.678 / 2, 0.626, 0.496),  # half HAT, from the hip (J_4)
    }
    names = ["toes", "foot", "shank", "thigh", "HAT/2"]
    links = []
    for i in range(5):
        mf, cf, rg = bsp[i]
        L = lengths[i]
        links.append(Link(length=L, mass=mf * m, com_distance=cf * L, inertia=mf * m * (rg * L) ** 2, name=names[i]))
    J_ref = np.vstack([J[0], J[1:5]])  # J_0 .. J_4
    muscles = []
    for name, (la, Pa, lb, Pb) in MUSCLES.items():
        muscles.append(Muscle(name, la, lb, local_point(theta_ref, J_ref, la, Pa), local_point(theta_ref, J_ref, lb, Pb)))
    chain = PlanarChain(tuple(links), tuple(muscles), base_angle=float(theta_ref[0]))
    return chain, theta_ref


def _balanced_posture(chain, theta_ref, foot_offset_deg, knee_flexion_deg, trunk_lean_deg, x_target=0.0):
    """Link angles with the whole-body centre of mass above the MTP: the shank inclination is solved for.

    foot: reference angle + offset (negative raises the heel); thigh = shank + knee flexion; HAT at
    ``trunk_lean_deg`` forward of the vertical.
    """
    from scipy.optimize import brentq

    m = chain.array("m")
    d = np.deg2rad

    def pose(phi):
        return np.array([theta_ref[1] + d(foot_offset_deg), phi, phi + d(knee_flexion_deg), d(90.0 - trunk_lean_deg)])

    def com_x(phi):
        return (com_positions(chain, pose(phi)[None])[0, :, 0] * m).sum() / m.sum() - x_target

    return pose(brentq(com_x, d(30.0), d(150.0)))


def task(chain, theta_ref, N=121, duration=0.6):
    """Rise from a half squat on the forefoot onto the toes, minimum jerk, centre of mass above the MTP at both ends."""
    t = np.linspace(0.0, duration, N)
    start = _balanced_posture(chain, theta_ref, 0.0, 30.0, 25.0)  # knees flexed 30 deg, trunk inclined 25 deg
    end = _balanced_posture(chain, theta_ref, -30.0, 0.0, 0.0)  # heels raised 30 deg, knee and hip extended
    return (t,) + minimum_jerk(t, 0.0, duration, start, end)


def main():
    global OUT
    OUT = _common.parse_out(__doc__.split("\n")[0])
    OUT.mkdir(parents=True, exist_ok=True)
    chain, theta_ref = build_leg()
    t, th, dth, ddth = task(chain, theta_ref)
    N, n = th.shape
    R, gam = with_base_equilibrium(chain, th, dth, ddth)  # ground reaction on the toes from Eq 4

    tau = joint_torques(chain, th, dth, ddth, R, gam, data_set="distal")
    tau24 = joint_torques(chain, th, dth, ddth, R, gam, data_set="proximal")
    T, resid = static_optimization(chain, th, tau, [F_MAX[m] for m in chain.muscle_names])
    if np.abs(resid).max() > 1e-6:
        raise RuntimeError(f"the muscles cannot produce the joint torques (residual {np.abs(resid).max():.3g} N m)")
    phi = joint_reactions(chain, th, dth, ddth, T, R, gam, data_set="distal")
    phi10 = joint_reactions(chain, th, dth, ddth, T, R, gam, data_set="proximal")
    tauM = muscle_torques(chain, th, T)
    grf = contact_vectors(chain, th, R, gam)[:, 0]
    com = (com_positions(chain, th) * chain.array("m")[None, :, None]).sum(1) / chain.array("m").sum()

    ma = moment_arm_table(chain, theta_ref[1:], JOINTS) * 100.0
    ma.index.name = "muscle"
    (ma.round(3) + 0.0).to_csv(OUT / "leg_moment_arms_cm_reference_posture.csv")

    summary = pd.DataFrame({"time": t})
    for k, name in enumerate(JOINTS):
        summary[f"theta_{chain.links[k + 1].name}"] = th[:, k]
        summary[f"tau_{name}"] = tau[:, k]
        summary[f"phi_x_{name}"] = phi[:, k, 0]
        summary[f"phi_y_{name}"] = phi[:, k, 1]
    for m, name in enumerate(chain.muscle_names):
        summary[f"T_{name}"] = T[:, m]
    summary["grf_x"], summary["grf_y"] = grf[:, 0], grf[:, 1]
    summary["com_x"], summary["com_y"] = com[:, 0], com[:, 1]
    summary.to_csv(OUT / "leg_summary.csv", index=False, float_format="%.9g")
    checks = pd.DataFrame({
        "check": ["max |Eq 9 - Eq 10| (N)", "max |Eq 23 - Eq 24| (N m)",
                  "max |tau - Eq 22(T)| after static optimisation (N m)", "max |phi| (N)", "max |tau| (N m)",
                  "peak vertical ground reaction / body weight of the half body"],
        "value": [np.abs(phi - phi10).max(), np.abs(tau - tau24).max(), np.abs(tau - tauM).max(), np.abs(phi).max(),
                  np.abs(tau).max(), grf[:, 1].max() / (chain.array("m").sum() * chain.gravity)],
    })
    checks.to_csv(OUT / "leg_checks.csv", index=False, float_format="%.3e")

    df = contributions(chain, th, dth, ddth, T, R, gam, data_set="distal", time=t)
    df[df["state"] % 4 == 0].to_csv(OUT / "leg_contributions.csv", index=False, float_format="%.6g")
    proj = project_reactions(df, chain, th)

    # ---------------------------------------------------------------- figures
    colors = {m: c for m, c in zip(chain.muscle_names, plt.get_cmap("tab10").colors)}
    fig, axs = plt.subplots(1, 3, figsize=(7.2, 5.0), sharey=True)
    for ax, s, title in zip(axs, (0, N // 2, N - 1), ("t = 0", f"t = {t[N // 2]:.3f} s", f"t = {t[-1]:.2f} s")):
        draw_chain(ax, chain, th[s], muscle_colors=colors, label_muscles=(s == 0))
        J = joint_positions(chain, th[s])
        ax.plot(com[s, 0], com[s, 1], "x", color="tab:blue")
        foot0 = np.array([0.0, -0.03])
        ax.annotate("", xy=foot0 + grf[s] * 4e-4, xytext=foot0, arrowprops=dict(arrowstyle="->", color="tab:blue"))
        ax.axhline(-0.03, color="0.5", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlim(-0.35, 0.35)
        ax.set_xlabel("x (m)", fontsize=8)
    axs[0].set_ylabel("y (m)", fontsize=8)
    fig.suptitle("Sagittal leg, toes as the base link: rise onto the toes (× centre of mass, arrow: ground reaction)",
                 fontsize=9)
    fig.tight_layout()
    savefig(fig, "leg_model")
    plt.close(fig)

    fig = plot_stacked_contributions(df, "torque", joint_names=[f"{j} torque τ (N m)" for j in JOINTS],
                                     max_sources=10)
    fig.suptitle("Leg: contributions to the joint torques (Eq 23)", y=1.01, fontsize=10)
    savefig(fig, "leg_torque_contributions")
    plt.close(fig)

    fig = plot_stacked_contributions(proj, "compression", joint_names=[f"{j} compression (N)" for j in JOINTS],
                                     max_sources=11)
    fig.suptitle("Leg: contributions to the joint compression (Eqs 9, 12)", y=1.01, fontsize=10)
    savefig(fig, "leg_compression_contributions")
    plt.close(fig)

    fig = plot_stacked_contributions(proj, "shear", joint_names=[f"{j} shear (N)" for j in JOINTS], max_sources=11)
    fig.suptitle("Leg: contributions to the joint shear force (Eqs 9, 12)", y=1.01, fontsize=10)
    savefig(fig, "leg_shear_contributions")
    plt.close(fig)

    fig, axs = plt.subplots(1, 2, figsize=(8, 2.8))
    for m, name in enumerate(chain.muscle_names):
        axs[0].plot(t, T[:, m], label=name, color=colors[name])
    axs[0].set_xlabel("time (s)")
    axs[0].set_ylabel("tension (N)")
    axs[0].legend(fontsize=6, ncol=2, frameon=False)
    for k, name in enumerate(JOINTS):
        axs[1].plot(t, np.linalg.norm(phi[:, k], axis=1), label=name)
    axs[1].plot(t, np.linalg.norm(grf, axis=1), "k--", label="ground reaction")
    axs[1].set_xlabel("time (s)")
    axs[1].set_ylabel("force magnitude (N)")
    axs[1].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    savefig(fig, "leg_muscles_and_joint_forces")
    plt.close(fig)
    print(checks.to_string(index=False))
    print(ma.round(2).to_string())


if __name__ == "__main__":
    main()
