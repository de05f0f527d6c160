"""Contribution of each variable to each joint's torque and reaction force.

The point of the seed (abstract; Eqs 9, 10, 12, 23, 24): each joint torque
``tau_k`` and reaction force ``phi_{k-1,k}`` is a sum of terms, each carrying
one variable:

* the force of each muscle (reactions only, Eq 12: a muscle contributes its
  force on the distal link to every joint it spans and nothing to the others);
* the weight ``m_i g`` of each link;
* the contact resistance ``R_i`` of each link;
* the angular acceleration ``thdd_i`` and the angular velocity ``thd_i`` (through
  ``thd_i^2``) of each link.

:func:`contributions` returns these as a tidy table whose values summed over
``source`` give exactly :func:`~osim_emb.seeds.planar.closed_form.joint_torques`
and :func:`~osim_emb.seeds.planar.closed_form.joint_reactions`.  The torque of
Eq 23/24 has no muscle term: muscles *produce* ``tau_k`` (Eq 22); with
``include_muscle_torque=True`` the table also has the quantity
``"muscle_torque"`` whose sources are the muscles (Eq 22 term by term).
The figure of the table: :func:`osim_emb.report.contribution_figures.plot_stacked_contributions`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from osim_emb.seeds.planar.chain import PlanarChain, as_loads, as_state, muscle_joint_moments, spanning_muscle_force
from osim_emb.seeds.planar.closed_form import CATEGORY_CODES, _check_data_set, compiled_terms

__all__ = ["CATEGORIES", "QUANTITIES", "source_labels", "contributions"]

QUANTITIES = ("torque", "reaction_x", "reaction_y")
CATEGORIES = ("muscle", "weight", "contact", "angular_acceleration", "angular_velocity")
_CAT_OF_TERM = {"weight": "weight", "contact": "contact", "inertia_acc": "angular_acceleration",
                "inertia_vel": "angular_velocity"}


def source_labels(chain: PlanarChain) -> pd.DataFrame:
    """All sources: one row per muscle, then weight, contact, angular acceleration, angular velocity per link."""
    rows = [(m.name, "muscle", pd.NA) for m in chain.muscles]
    names = chain.link_names
    for i in range(chain.n + 1):
        rows.append((f"weight: {names[i]}", "weight", i))
    for i in range(chain.n + 1):
        rows.append((f"contact: {names[i]}", "contact", i))
    for i in range(1, chain.n + 1):
        rows.append((f"angular acceleration: {names[i]}", "angular_acceleration", i))
    for i in range(1, chain.n + 1):
        rows.append((f"angular velocity: {names[i]}", "angular_velocity", i))
    df = pd.DataFrame(rows, columns=["source", "category", "link"])
    df["link"] = df["link"].astype("Int64")
    return df


def contributions(chain: PlanarChain, theta, dtheta, ddtheta, tension=None, R=None, gamma_R=None,
                  data_set: str = "distal", include_muscle_torque: bool = False, time=None) -> pd.DataFrame:
    """Tidy table of contributions: ``state, joint, quantity, source, category, link, value``.

    ``quantity`` is ``"torque"`` (Eq 23 or 24; Eq 13 for joint n),
    ``"reaction_x"`` / ``"reaction_y"`` (components of ``phi_{k-1,k}``, the
    force on link k-1 by link k, Eq 9 or 10 with Eq 12) and, optionally,
    ``"muscle_torque"`` (Eq 22 per muscle).  ``time`` (N,) adds a ``time``
    column.  Summing ``value`` over ``source`` for a (state, joint, quantity)
    gives the total.
    """
    _check_data_set(data_set)
    st = as_state(chain, theta, dtheta, ddtheta)
    T, Rm, gm = as_loads(chain, st.N, tension, R, gamma_R)
    N, n, M = st.N, chain.n, chain.n_muscles
    src = source_labels(chain)
    S = len(src)
    key = {}
    for s, row in src.iterrows():
        if row["category"] != "muscle":
            key[(row["category"], int(row["link"]))] = s
    th, dth, ddth = st.theta[:, 1:], st.dtheta[:, 1:], st.ddtheta[:, 1:]

    blocks = []  # (quantity, array (N, n, S), source mask)
    # map (category code, link) of a term to its source row
    code_to_source = np.full((len(CATEGORY_CODES), n + 1), -1, dtype=int)
    for c, cat in enumerate(CATEGORY_CODES):
        for i in range(n + 1):
            code_to_source[c, i] = key.get((_CAT_OF_TERM[cat], i), -1)
    # torque
    ct = compiled_terms(chain, "torque", data_set)
    src_idx = code_to_source[ct.category, ct.link]
    G = np.zeros((len(ct.terms), n * S))
    G[np.arange(len(ct.terms)), (ct.joint - 1) * S + src_idx] = 1.0
    torque = ct.grouped(G, st.theta, st.dtheta, st.ddtheta, Rm, gm).reshape(N, n, S)
    not_muscle = np.arange(S) >= M
    blocks.append(("torque", torque, not_muscle))
    # reactions
    ct = compiled_terms(chain, "reaction", data_set)
    src_idx = code_to_source[ct.category, ct.link]
    G = np.zeros((len(ct.terms), n * 2 * S))
    G[np.arange(len(ct.terms)), ((ct.joint - 1) * 2 + ct.component - 1) * S + src_idx] = 1.0
    reac = ct.grouped(G, st.theta, st.dtheta, st.ddtheta, Rm, gm).reshape(N, n, 2, S)
    if M:
        reac[..., :M] = np.moveaxis(spanning_muscle_force(chain, th, T, per_muscle=True), -1, 2)
    all_sources = np.ones(S, dtype=bool)
    blocks.append(("reaction_x", reac[:, :, 0], all_sources))
    blocks.append(("reaction_y", reac[:, :, 1], all_sources))
    if include_muscle_torque:
        mt = np.zeros((N, n, S))
        if M:
            mt[..., :M] = muscle_joint_moments(chain, th, T)
        blocks.append(("muscle_torque", mt, np.arange(S) < M))

    frames = []
    for quantity, arr, mask in blocks:
        idx = np.nonzero(mask)[0]
        a = arr[:, :, idx]  # (N, n, S')
        s_i, j_i, k_i = np.meshgrid(np.arange(N), np.arange(1, n + 1), idx, indexing="ij")
        frames.append(pd.DataFrame({
            "state": s_i.ravel(),
            "joint": j_i.ravel(),
            "quantity": quantity,
            "source": src["source"].to_numpy()[k_i.ravel()],
            "category": src["category"].to_numpy()[k_i.ravel()],
            "link": src["link"].array[k_i.ravel()],
            "value": a.ravel(),
        }))
    df = pd.concat(frames, ignore_index=True)
    if time is not None:
        time = np.asarray(time, dtype=float).reshape(-1)
        if time.shape[0] != N:
            raise ValueError(f"time has {time.shape[0]} values for {N} states")
        df.insert(1, "time", time[df["state"].to_numpy()])
    df["quantity"] = pd.Categorical(df["quantity"], categories=list(QUANTITIES) + ["muscle_torque"])
    return df
