"""``body_kinematics_of_motion`` (``osim-emb body-kinematics``) over the model corpus, against OpenSim 4.6's API.

    python validation/model_corpus/body_kinematics.py             # the corpus of run.py (scratch), a few minutes
    python validation/model_corpus/body_kinematics.py --only arm  # a subset (path substring)

For each model that ``results/corpus.csv`` lists as ``agrees`` or ``opensim_coriolis``, in its own subprocess: the
bodies the package reports for "all" against OpenSim's bodies (its BodySet's and any among the model's <components>;
the importer's carriers of moving path points must not appear), then at 3 configurations (the default and 2 drawn
as run.py draws them) with random rates, set in OpenSim through ``OpenSimReference`` (couplers and loops from their
functions) and every coordinate's speed as the package's states files write it, every body's centre
of mass (``findStationLocationInGround``), body-fixed X-Y-Z angles (``convertRotationToBodyFixedXYZ``), centre-of-mass
velocity (``findStationVelocityInGround``) and angular velocity (``getVelocityInGround``), and the model's centre of
mass and its velocity (``calcMassCenterPosition``, ``calcMassCenterVelocity``). (OpenSim's BodyKinematics analysis
reports these same API values, after its tool assembles each state; its accelerations are its forward dynamics',
docs/kinematics.md, so accelerations are not compared here.)

Status: ``agrees`` (positions within 1e-9 m, angles 1e-7 degrees, velocities 1e-9 of the largest), ``differs``,
``refused``, ``error``, ``timeout``. Writes ``results/body_kinematics.csv``.
"""

from __future__ import annotations

import sys
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import _poses, corpus_study  # noqa: E402  (this folder's corpus study)

TOL_M, TOL_DEG, TOL_REL = 1e-9, 1e-7, 1e-9
COLUMNS = ["model", "bodies", "status", "same_bodies", "poses", "max_position_m", "max_angle_deg",
           "max_velocity_rel", "reason", "time_s"]


def _vec(v) -> np.ndarray:
    return np.array([v.get(k) for k in range(3)])


def study_one(path: str, args) -> dict:
    from osim_emb.io import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.simulation.body_kinematics import body_kinematics_of_motion
    t0 = time.perf_counter()
    model = load_osim(path)
    ref = OpenSimReference(path, model)
    osim = ref.osim
    bodies = [c.getName() for c in ref.model_os.getComponentsList() if osim.Body.safeDownCast(c) is not None]
    row = {"model": path, "bodies": len(bodies)}
    seed = zlib.crc32(path.encode())
    q = np.vstack([model.default_q, _poses(model, 2, seed)])
    qd = np.random.default_rng(seed).normal(size=q.shape)
    ours = body_kinematics_of_motion(model, np.arange(len(q), dtype=float), q, qd, np.zeros_like(q))
    names = [c[:-2] for c in ours["pos"].columns if c.endswith("_X") and c != "center_of_mass_X"]
    row["same_bodies"] = sorted(names) == sorted(bodies)  # a body among <components> too (BodySet ones first)
    worst = {"pos": 0.0, "ang": 0.0, "vel": 0.0}
    largest = 1e-300
    done = 0
    for i in range(len(q)):
        try:
            ref.set_configuration(q[i])
        except RuntimeError:  # a loop OpenSim's functions cannot close there: that pose is left out
            continue
        done += 1
        ref.set_rates(q[i], qd[i])  # every coordinate's OpenSim speed, as the states files write them
        s = ref.state
        for name in names:
            b = ref.body(name)
            com = b.getMassCenter()
            theirs_pos = _vec(b.findStationLocationInGround(s, com))
            theirs_ang = np.degrees(_vec(b.getTransformInGround(s).R().convertRotationToBodyFixedXYZ()))
            theirs_vel = np.concatenate([_vec(b.findStationVelocityInGround(s, com)),
                                         np.degrees(_vec(b.getVelocityInGround(s).get(0)))])
            p, v = ours["pos"].iloc[i], ours["vel"].iloc[i]
            worst["pos"] = max(worst["pos"], np.abs(p[[f"{name}_{a}" for a in "XYZ"]].to_numpy() - theirs_pos).max())
            d = np.abs(p[[f"{name}_O{a}" for a in "xyz"]].to_numpy() - theirs_ang)
            worst["ang"] = max(worst["ang"], np.minimum(d, 360.0 - d).max())  # +-180 degrees are one angle
            mine_vel = v[[f"{name}_{a}" for a in ("X", "Y", "Z", "Ox", "Oy", "Oz")]].to_numpy()
            worst["vel"] = max(worst["vel"], np.abs(mine_vel - theirs_vel).max())
            largest = max(largest, np.abs(theirs_vel).max())
        com = ["center_of_mass_X", "center_of_mass_Y", "center_of_mass_Z"]
        if np.isnan(ours["pos"].iloc[i][com].to_numpy()).all():  # a massless model: none (OpenSim divides by 0)
            continue
        com_pos = _vec(ref.model_os.calcMassCenterPosition(s))
        com_vel = _vec(ref.model_os.calcMassCenterVelocity(s))
        worst["pos"] = max(worst["pos"], np.abs(ours["pos"].iloc[i][com].to_numpy() - com_pos).max())
        worst["vel"] = max(worst["vel"], np.abs(ours["vel"].iloc[i][com].to_numpy() - com_vel).max())
    row.update(poses=done, max_position_m=worst["pos"], max_angle_deg=worst["ang"],
               max_velocity_rel=worst["vel"] / largest)
    ok = (row["same_bodies"] and done > 0 and worst["pos"] <= TOL_M and worst["ang"] <= TOL_DEG
          and worst["vel"] <= TOL_REL * largest)
    row["status"] = "agrees" if ok else "differs"
    row["time_s"] = time.perf_counter() - t0
    return row


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0], study=study_one,
                        out=HERE / "results" / "body_kinematics.csv", columns=COLUMNS, timeout=300.0)


if __name__ == "__main__":
    sys.exit(main())
