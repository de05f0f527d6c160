"""The passive forces OpenSim applies without a path (contact, springs, bushings, prescribed forces;
``osim_emb.simulation.force_elements``) over the model corpus, against OpenSim 4.6's accelerations.

    python validation/model_corpus/force_elements.py              # the corpus of run.py (scratch), a few minutes
    python validation/model_corpus/force_elements.py --only Walker

For each model of ``results/corpus.csv`` (``agrees``, ``opensim_coriolis``) whose file has a HuntCrossleyForce,
SmoothSphereHalfSpaceForce, PointToPointSpring, BushingForce, SpringGeneralizedForce or PrescribedForce, in its own
subprocess: OpenSim's model with every other force switched off (``appliesForce`` false), then at 24 states -- 12
along the package's own 0.4 s passive simulation of the model (so that it meets the floor where it has one) and 12
drawn as run.py draws configurations, with random rates, at t = 0.25 s -- Simbody's u̇ (``realizeAcceleration``)
against the package's from M q̈ = G − N q̇ + τ(force elements) (``speed_accelerations``).  ``contact_states``: the
states with a contact force.

Status: ``agrees`` (max |u̇ − u̇_OpenSim| ≤ 1e-9 max(1, |u̇|)), ``differs``, ``unapplied`` (every element of these
types left out by the package, with the reason), ``error``, ``timeout``. Writes ``results/force_elements.csv``.
"""

from __future__ import annotations

import re
import sys
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import _poses, corpus_study  # noqa: E402  (this folder's corpus study)

TOL_REL = 1e-9
COLUMNS = ["model", "status", "elements", "unapplied", "states", "contact_states", "max_udot_rel", "max_tau",
           "reason", "time_s"]
TYPES = ("HuntCrossleyForce", "SmoothSphereHalfSpaceForce", "PointToPointSpring", "BushingForce",
         "SpringGeneralizedForce", "PrescribedForce")
PATTERN = re.compile("<(" + "|".join(TYPES) + r")[\s>]")


def has_elements(path: Path) -> bool:
    try:
        return PATTERN.search(path.read_text(errors="replace")) is not None
    except OSError:
        return False


def study_one(path: str, args) -> dict:
    from osim_emb.core.kinematics import forward_kinematics
    from osim_emb.core.speeds import speed_accelerations
    from osim_emb.io import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.simulation import force_elements as fe
    from osim_emb.simulation.motions import simulate
    from osim_emb import forward_dynamics
    t0 = time.perf_counter()
    model = load_osim(path)
    elements = fe.model_force_elements(model)
    row = {"model": path, "elements": elements.describe(),
           "unapplied": "; ".join(f"{u.type} {u.name!r}: {u.reason}" for u in elements.unapplied)}
    if not elements:
        row.update(status="unapplied", time_s=time.perf_counter() - t0)
        return row
    keep = {law.name for law in elements.laws}
    ref = OpenSimReference(path, model)
    osim = ref.osim
    for c in ref.model_os.getComponentsList():
        f = osim.Force.safeDownCast(c)
        if f is not None and f.getName() not in keep:
            f.set_appliesForce(False)
    ref.state = ref.model_os.initSystem()
    ref.coords = ref.model_os.getCoordinateSet()
    ref.state.setTime(0.25)
    seed = zlib.crc32(path.encode())
    rng = np.random.default_rng(seed)
    run = simulate(model, 0.4, n_output=13, rtol=1e-8, atol=1e-8, max_seconds=120.0)
    q_run = run[model.coordinate_names].to_numpy()[1:]
    q_run_dot = np.gradient(run[model.coordinate_names].to_numpy(), run["time"].to_numpy(), axis=0)[1:]
    q_drawn = _poses(model, 12, seed)
    q = np.vstack([q_run, q_drawn])
    qd = np.vstack([q_run_dot, rng.normal(scale=0.5, size=q_drawn.shape)])
    idx = ref.speed_indices()
    cols = [idx[c] for c in model.coordinate_names]
    contact = fe.ForceElements(tuple(law for law in elements.laws
                                     if isinstance(law, (fe.HuntCrossleyContact, fe.SmoothSphereHalfSpaceContact))))
    worst, largest_tau, done, touching = 0.0, 0.0, 0, 0
    for i in range(len(q)):
        try:
            ref.set_configuration(q[i])
        except RuntimeError:  # a loop OpenSim's functions cannot close there: that state is left out
            continue
        ref.set_rates(q[i], qd[i])
        theirs = ref.accelerations()[cols]
        tau = fe.force_element_forces(model, elements, [0.25], q[i][None], qd[i][None])
        ours = speed_accelerations(model, q[i][None], qd[i][None], forward_dynamics(model, q[i], qd[i], tau))[0]
        worst = max(worst, np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max()))
        largest_tau = max(largest_tau, np.abs(tau).max())
        if contact:
            kin = forward_kinematics(model, q[i][None], order=1)
            ws = fe.force_element_wrenches(model, kin, qd[i][None], 0.25, contact)
            touching += any(np.abs(w.force).max() > 1e-3 for w in ws)
        done += 1
    row.update(states=done, contact_states=touching, max_udot_rel=worst, max_tau=largest_tau)
    row["status"] = "agrees" if done and worst <= TOL_REL else "differs"
    row["time_s"] = time.perf_counter() - t0
    return row


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0], study=study_one,
                        out=HERE / "results" / "force_elements.csv", columns=COLUMNS, timeout=600.0,
                        select=has_elements,
                        summary=lambda r: f"{r.get('elements', '')} {r.get('max_udot_rel', '')}")


if __name__ == "__main__":
    sys.exit(main())
