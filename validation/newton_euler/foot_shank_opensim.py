"""3D inverse dynamics of a foot and a shank in one matrix solve, against OpenSim.

The matrix method (seed: Watanabe, "Inverse dynamics": Newton-Euler per segment, moments in the segment
basis, S(v) for cross products, one linear solve) is applied literally (``foot_shank_inverse_dynamics``,
the notebook's 12 x 12 system) and through the general recipe (``chain_inverse_dynamics``).  The
reference is an equivalent OpenSim model: shank on a FreeJoint (its reaction is the thigh's load on the
shank at the knee), foot on a BallJoint at the ankle, full inertia tensors with products of inertia and
offset centres of mass, a PrescribedForce (ground reaction at the centre of pressure), prescribed motion
(q, u, udot), OpenSim's InverseDynamicsSolver and Joint.calcReactionOnChildExpressedInGround.

Two data sets: 100 random states, and a smooth 1 s motion (sinusoidal coordinates, 201 samples) with a
stance-like ground reaction.  Writes validation/newton_euler/results/foot_shank_opensim.csv and
foot_shank_motion.csv, and the figure foot_shank_motion.pdf/.png.

Run:  python validation/newton_euler/foot_shank_opensim.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from osim_emb.seeds.newton_euler import (  # noqa: E402
    RigidSegment,
    chain_inverse_dynamics,
    foot_shank_inverse_dynamics,
)
from osim_emb.opensim.newton_euler import opensim_foot_shank_reference  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
G = (0.0, -9.80665, 0.0)

# Segment parameters (plausible adult values; inertia tensors with products of inertia, in the body frames)
M_S, M_F = 3.5, 1.1
I_S = np.array([[0.0480, 0.0012, -0.0009], [0.0012, 0.0060, 0.0015], [-0.0009, 0.0015, 0.0470]])
I_F = np.array([[0.0010, 0.0002, 0.0001], [0.0002, 0.0042, -0.0003], [0.0001, -0.0003, 0.0040]])
COM_S, COM_F = np.array([0.008, -0.186, 0.004]), np.array([0.065, -0.028, 0.006])  # body frames
ANKLE_S, ANKLE_F = np.array([0.0, -0.430, 0.0]), np.array([-0.030, 0.045, 0.0])


def solve_both(ref, GRF, COP):
    lit = foot_shank_inverse_dynamics(M_F, I_F, M_S, I_S, ref["R_F"], ref["R_S"], ref["a_cmF"], ref["a_cmS"],
                                      ref["w_F"], ref["w_S"], ref["dw_F"], ref["dw_S"], ref["p_A"] - ref["p_cmF"],
                                      COP - ref["p_cmF"], ref["p_A"] - ref["p_cmS"], ref["p_K"] - ref["p_cmS"], GRF, G)
    F, M = chain_inverse_dynamics([RigidSegment("foot", M_F, I_F), RigidSegment("shank", M_S, I_S)],
                                  np.stack([ref["R_F"], ref["R_S"]], 1), np.stack([ref["p_cmF"], ref["p_cmS"]], 1),
                                  np.stack([ref["a_cmF"], ref["a_cmS"]], 1), np.stack([ref["w_F"], ref["w_S"]], 1),
                                  np.stack([ref["dw_F"], ref["dw_S"]], 1), np.stack([ref["p_A"], ref["p_K"]], 1),
                                  F_ext=np.stack([GRF, np.zeros_like(GRF)], 1), p_ext=np.stack([COP, COP], 1),
                                  gravity=G)
    gen = {"F_A": F[:, 0], "M_A": M[:, 0], "F_K": F[:, 1], "M_K": M[:, 1]}
    to_body = lambda R, v: np.einsum("nij,nj->ni", R, v)  # noqa: E731
    osim = {"F_A": ref["F_A"], "F_K": ref["F_K"], "M_A": to_body(ref["R_F"], ref["M_A"]),
            "M_K": to_body(ref["R_S"], ref["M_K"])}
    return lit, gen, osim


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    OUT = ap.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    # random states
    rng = np.random.default_rng(2024)
    N = 100
    q, u, ud = rng.uniform(-0.8, 0.8, (N, 9)), rng.uniform(-4, 4, (N, 9)), rng.uniform(-30, 30, (N, 9))
    GRF = rng.normal(size=(N, 3)) * [120.0, 700.0, 60.0]
    COP = rng.normal(size=(N, 3)) * 0.3
    ref = opensim_foot_shank_reference(M_F, I_F, COM_F, ANKLE_F, M_S, I_S, COM_S, ANKLE_S, q, u, ud, GRF, COP, G)
    cases = {"random states": (ref, GRF, COP)}
    # smooth motion: shank swinging over a planted foot-like trajectory, stance-like GRF
    t = np.linspace(0.0, 1.0, 201)
    w = 2 * np.pi
    amp = np.array([0.10, 0.15, 0.40, 0.05, 0.02, 0.03, 0.05, 0.10, 0.30])
    off = np.array([0.02, -0.05, 0.10, 0.0, 0.45, 0.0, 0.01, 0.02, -0.05])
    qm = off + amp * np.sin(w * t)[:, None]
    um = amp * w * np.cos(w * t)[:, None]
    udm = -amp * w**2 * np.sin(w * t)[:, None]
    s = np.sin(np.pi * t)
    GRFm = np.stack([80 * np.sin(2 * np.pi * t), 700 * s + 150 * s**3, 20 * np.sin(2 * np.pi * t)], 1)
    COPm = np.stack([-0.05 + 0.25 * t, np.zeros_like(t), 0.02 * np.ones_like(t)], 1)
    refm = opensim_foot_shank_reference(M_F, I_F, COM_F, ANKLE_F, M_S, I_S, COM_S, ANKLE_S, qm, um, udm, GRFm, COPm, G)
    cases["smooth 1 s motion"] = (refm, GRFm, COPm)
    for name, (r, grf, cop) in cases.items():
        lit, gen, osim = solve_both(r, grf, cop)
        for key in ("F_A", "M_A", "F_K", "M_K"):
            scale = np.abs(osim[key]).max()
            rows.append(dict(data=name, states=len(grf), load=key,
                             max_rel_diff_notebook_system=np.abs(lit[key] - osim[key]).max() / scale,
                             max_rel_diff_general_recipe=np.abs(gen[key] - osim[key]).max() / scale,
                             max_abs_opensim=scale, opensim_udot_error=r["udot_error"].max()))
    df = pd.DataFrame(rows)
    df.to_csv(OUT / "foot_shank_opensim.csv", index=False, float_format="%.3e")

    lit, gen, osim = solve_both(refm, GRFm, COPm)
    series = pd.DataFrame({"time": t})
    for key in ("F_A", "M_A", "F_K", "M_K"):
        for c, ax in enumerate("xyz"):
            series[f"{key}_{ax}_matrix"] = lit[key][:, c]
            series[f"{key}_{ax}_opensim"] = osim[key][:, c]
    series.to_csv(OUT / "foot_shank_motion.csv", index=False, float_format="%.10g")
    fig, axs = plt.subplots(1, 4, figsize=(11, 2.6))
    titles = {"F_A": "ankle force on foot (N, global)", "M_A": "ankle moment on foot (N m, foot basis)",
              "F_K": "knee force on shank (N, global)", "M_K": "knee moment on shank (N m, shank basis)"}
    for ax, key in zip(axs, ("F_A", "M_A", "F_K", "M_K")):
        for c, comp in enumerate("xyz"):
            ax.plot(t, osim[key][:, c], lw=2.5, alpha=0.35, label=f"{comp} OpenSim")
            ax.plot(t, lit[key][:, c], "k--", lw=0.7, label="matrix solve" if c == 0 else None)
        ax.set_title(titles[key], fontsize=8)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.tick_params(labelsize=7)
    axs[0].legend(fontsize=6, frameon=False)
    fig.tight_layout()
    for ext in ("pdf", "png"):
        fig.savefig(OUT / f"foot_shank_motion.{ext}", dpi=200 if ext == "png" else None, bbox_inches="tight",
                    metadata={"CreationDate": None} if ext == "pdf" else None)
    pd.set_option("display.width", 200)
    print(df.to_string(index=False))


if __name__ == "__main__":
    main()
