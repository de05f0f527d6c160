"""Helpers shared by the planar-chain validation scripts (not part of the package API)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from osim_emb.simulation.motions import minimum_jerk as _minimum_jerk
from osim_emb.seeds.planar import (
    PlanarChain,
    joint_positions,
    muscle_geometry,
    muscle_joint_moments,
)

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"


def minimum_jerk(t, t0, t1, a, b):
    """Minimum-jerk transition from a to b over [t0, t1] (osim_emb.simulation.motions.minimum_jerk) for vectors of
    end points: value, first and second derivative of shape t.shape + a.shape."""
    a, b, t = np.asarray(a, dtype=float), np.asarray(b, dtype=float), np.asarray(t, dtype=float)
    return _minimum_jerk(t.reshape(t.shape + (1,) * a.ndim), t0, t1, a, b)


def local_point(theta_ref, J_ref, link: int, P_global) -> tuple[float, float]:
    """Coordinates in the frame of ``link`` (x along u_i, y along w_i) of a global point at the reference pose."""
    th = theta_ref[link]
    u = np.array([np.cos(th), np.sin(th)])
    w = np.array([-np.sin(th), np.cos(th)])
    r = np.asarray(P_global, dtype=float) - J_ref[link]
    return (float(r @ u), float(r @ w))


def static_optimization(chain: PlanarChain, theta, tau, f_max, penalty=1e6):
    """Muscle tensions minimising sum (T/F_max)^2 subject to Eq 22 = tau and T >= 0.

    Per state: a penalised non-negative least-squares problem (scipy.optimize.nnls) in the
    activations a = T/F_max with row-normalised moment equations, then the minimum-norm
    solution on the active set (exact equality when it keeps all active tensions positive).
    Returns tensions (N, M) and the residual tau - Eq 22(T) (N, n).
    """
    from scipy.optimize import nnls

    theta = np.atleast_2d(theta)
    tau = np.atleast_2d(tau)
    f_max = np.asarray(f_max, dtype=float)
    M = chain.n_muscles
    A = muscle_joint_moments(chain, theta, np.ones((theta.shape[0], M)))  # (N, n, M): Eq 22 per unit tension
    T = np.zeros((theta.shape[0], M))
    for s in range(theta.shape[0]):  # one small optimisation per state (examples only)
        Ah = A[s] * f_max[None, :]
        d = 1.0 / np.linalg.norm(Ah, axis=1)
        big = np.vstack([penalty * d[:, None] * Ah, np.eye(M)])
        rhs = np.concatenate([penalty * d * tau[s], np.zeros(M)])
        a, _ = nnls(big, rhs, maxiter=50 * M)
        act = a > 0
        As = Ah[:, act]
        a_pol = As.T @ np.linalg.lstsq(As @ As.T, tau[s], rcond=None)[0]
        if np.all(a_pol > 0) and np.allclose(As @ a_pol, tau[s], rtol=0, atol=1e-12 * max(1.0, np.abs(tau[s]).max())):
            a = np.zeros(M)
            a[act] = a_pol
        T[s] = a * f_max
    resid = tau - np.einsum("nkm,nm->nk", A, T)
    return T, resid


def project_reactions(df: pd.DataFrame, chain: PlanarChain, theta) -> pd.DataFrame:
    """Axial (compressive) and shear components of the joint force on the distal link of each joint.

    The force on link k by link k-1 is ``-phi_{k-1,k}``; its component along
    ``u_k`` is the compression of joint k (positive when link k-1 pushes link k
    away, i.e. bone-on-bone compression), its component along ``w_k`` the shear.
    Works source by source, so the projected contributions still sum to the totals.
    """
    theta = np.atleast_2d(theta)
    keys = ["state", "joint", "source"]
    x = df[df["quantity"] == "reaction_x"]
    y = df[df["quantity"] == "reaction_y"][keys + ["value"]]
    wide = x.merge(y, on=keys, suffixes=("_x", "_y"), validate="one_to_one")
    th = theta[wide["state"].to_numpy(), wide["joint"].to_numpy() - 1]
    fx, fy = -wide["value_x"].to_numpy(), -wide["value_y"].to_numpy()
    comp = fx * np.cos(th) + fy * np.sin(th)
    shear = -fx * np.sin(th) + fy * np.cos(th)
    base = wide.drop(columns=["value_x", "value_y", "quantity"])
    return pd.concat([base.assign(quantity="compression", value=comp), base.assign(quantity="shear", value=shear)],
                     ignore_index=True)


def draw_chain(ax, chain: PlanarChain, theta, color="k", muscles=True, alpha=1.0, lw=2.0, muscle_colors=None,
               label_muscles=False):
    """Stick figure of the chain (joints, links) with the muscles' lines of action."""
    theta = np.atleast_2d(theta)
    J = joint_positions(chain, theta)[0]
    ax.plot(J[:, 0], J[:, 1], "-", color=color, lw=lw, alpha=alpha, solid_capstyle="round")
    ax.plot(J[1:-1, 0], J[1:-1, 1], "o", color=color, ms=3.5, alpha=alpha)
    if muscles and chain.n_muscles:
        pa, pb, _ = muscle_geometry(chain, theta)
        for m in range(chain.n_muscles):
            c = (muscle_colors or {}).get(chain.muscles[m].name, "tab:red")
            ax.plot([pa[0, m, 0], pb[0, m, 0]], [pa[0, m, 1], pb[0, m, 1]], "-", color=c, lw=1.0, alpha=alpha)
            if label_muscles:
                mid = 0.5 * (pa[0, m] + pb[0, m])
                ax.text(mid[0], mid[1], chain.muscles[m].name, fontsize=6, color=c)
    ax.set_aspect("equal")


def moment_arm_table(chain: PlanarChain, theta, joint_names) -> pd.DataFrame:
    """Eq 22 per unit tension (m) for each muscle and joint at one posture (positive = counter-clockwise)."""
    A = muscle_joint_moments(chain, np.atleast_2d(theta), np.ones((1, chain.n_muscles)))[0]  # (n, M)
    return pd.DataFrame(A.T, index=chain.muscle_names, columns=joint_names)


def parse_out(description: str) -> Path:
    """The --out option of the scripts (default results/); sets the folder savefig writes to."""
    global OUT
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: results/)")
    OUT = ap.parse_args().out
    return OUT


def savefig(fig, stem: str):
    OUT.mkdir(parents=True, exist_ok=True)
    for ext in ("pdf", "png"):
        fig.savefig(OUT / f"{stem}.{ext}", dpi=200 if ext == "png" else None, bbox_inches="tight",
                    metadata={"CreationDate": None} if ext == "pdf" else None)
