"""Body kinematics along a motion, as OpenSim's BodyKinematics analysis reports them.

For each body: the ground position of its centre of mass and its orientation as body-fixed X-Y-Z Euler angles
(:func:`osim_emb.core.kinematics.body_fixed_xyz_angles`); the centre of mass's velocity and the body's angular
velocity; its acceleration and angular acceleration — in ground, or (``local``) the velocities and accelerations
expressed in the body's frame (positions stay in ground, as OpenSim's).  With every body, also the whole model's
centre of mass (``center_of_mass_X`` ...: the mass-weighted mean of the bodies').  The velocities and accelerations
are Eqs 44 and 57 with the frames' Jacobians and their derivatives: v = J q̇, a = J q̈ + (dJ/dt) q̇.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np
import pandas as pd

from osim_emb.core.kinematics import (body_fixed_xyz_angles, body_transforms, forward_kinematics,
                                      point_accelerations, point_velocities)
from osim_emb.model import Model

__all__ = ["body_kinematics_of_motion", "opensim_bodies", "CENTER_OF_MASS"]

log = logging.getLogger("osim_emb")

#: OpenSim's name for the whole model's centre of mass
CENTER_OF_MASS = "center_of_mass"


def opensim_bodies(model: Model) -> list[int]:
    """Indices of the model's bodies that are OpenSim bodies (in the file's order): not the massless carriers of
    moving path points the importer adds (named MUSCLE/POINT)."""
    carriers = {p.body for m in model.muscles for p in m.points if p.kind == "moving"}
    return [k for k, b in enumerate(model.bodies) if b.name not in carriers]


def _bodies(model: Model, bodies: Sequence[str]) -> tuple[list[int], bool]:
    """(indices of the recorded bodies, whether the whole model's centre of mass is recorded): OpenSim's rule —
    "all" is every body and the centre of mass, "center_of_mass" the latter alone; an unknown name is refused."""
    real = opensim_bodies(model)
    names = [model.bodies[k].name for k in real]
    picked, com = [], False
    for name in bodies:
        if name == "all":
            return real, True
        if name == CENTER_OF_MASS:
            com = True
            continue
        if name not in names:
            raise ValueError(f"body-kinematics: no body {name!r} in model {model.name!r} (bodies: "
                             f"{', '.join(names[:8])}{' ...' if len(names) > 8 else ''})")
        picked.append(real[names.index(name)])
    return picked, com


def body_kinematics_of_motion(model: Model, time: Any, q: Any, qdot: Any, qddot: Any, *,
                              bodies: Sequence[str] = ("all",), local: bool = False,
                              in_degrees: bool = True) -> dict[str, pd.DataFrame]:
    """Positions, velocities and accelerations of bodies along a motion (OpenSim's BodyKinematics).

    Parameters
    ----------
    model : Model
    time : array_like
        (T,) seconds.
    q, qdot, qddot : array_like
        (T, n_q) coordinates, rates and accelerations (rad, m; e.g. :func:`osim_emb.simulation.motions.analysis_states`).
    bodies : sequence of str, default ("all",)
        Body names, "all" (every body and the model's centre of mass) or "center_of_mass".
    local : bool, default False
        Express velocities and accelerations in each body's frame (OpenSim's ``express_results_in_body_local_frame``).
    in_degrees : bool, default True
        Angles, angular velocities and accelerations in degrees (OpenSim's default), else radians.

    Returns
    -------
    dict
        "pos", "vel", "acc": tables with ``time`` and BODY_X, BODY_Y, BODY_Z (m, m/s, m/s²), BODY_Ox, BODY_Oy,
        BODY_Oz (deg or rad, and per s, per s²) for each body, then center_of_mass_X, _Y, _Z.
    """
    time = np.asarray(time, dtype=float)
    q, qdot, qddot = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qdot, qddot))
    picked, with_com = _bodies(model, bodies)
    kin = forward_kinematics(model, q, order=2)
    pose = body_transforms(model, kin)  # (T, n_bodies, 4, 4)
    scale = 180.0 / np.pi if in_degrees else 1.0
    tables = {k: {"time": time} for k in ("pos", "vel", "acc")}
    com_sums = {k: np.zeros((len(time), 3)) for k in tables}
    mass = 0.0
    for k, body in enumerate(model.bodies):
        rot = kin.transforms[:, body.frame, :3, :3]
        com_in_frame = body.frame_to_body[:3, :3] @ body.com + body.frame_to_body[:3, 3]
        values = {"pos": np.einsum("nij,j->ni", pose[:, k, :3, :3], body.com) + pose[:, k, :3, 3],
                  "vel": point_velocities(kin, body.frame, com_in_frame, qdot),
                  "acc": point_accelerations(kin, body.frame, com_in_frame, qdot, qddot)}
        if with_com:
            mass += body.mass
            for key in tables:
                com_sums[key] += body.mass * values[key]
        if k not in picked:
            continue
        xi = kin.jacobian[:, body.frame]
        omega = np.einsum("nkc,nk->nc", xi[..., :3], qdot)
        alpha = (np.einsum("nkc,nk->nc", xi[..., :3], qddot)
                 + np.einsum("nklc,nk,nl->nc", kin.jacobian_derivative[:, body.frame, ..., :3], qdot, qdot))
        angles = {"pos": body_fixed_xyz_angles(pose[:, k, :3, :3]), "vel": omega, "acc": alpha}
        for key in tables:
            v, w = values[key], angles[key]
            if local and key != "pos":  # into the body's frame (the frame's rotation then the body's)
                to_body = np.einsum("nji,nj->ni", rot, v), np.einsum("nji,nj->ni", rot, w)
                v, w = (np.einsum("ji,nj->ni", body.frame_to_body[:3, :3], x) for x in to_body)
            for axis, j in zip("XYZ", range(3)):
                tables[key][f"{body.name}_{axis}"] = v[:, j]
            for axis, j in zip("xyz", range(3)):
                tables[key][f"{body.name}_O{axis}"] = w[:, j] * scale
    if with_com:
        if not mass > 0.0:
            log.warning("body-kinematics: model %r has no mass, so no centre of mass (NaN, as OpenSim's)", model.name)
        for key in tables:
            for axis, j in zip("XYZ", range(3)):
                tables[key][f"{CENTER_OF_MASS}_{axis}"] = com_sums[key][:, j] / mass if mass > 0.0 else np.nan
    return {k: pd.DataFrame(v) for k, v in tables.items()}
