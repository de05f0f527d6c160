"""``osim-emb joint-reactions`` over the model corpus, against OpenSim 4.6's JointReaction analysis.

    python validation/model_corpus/joint_reactions.py                # the corpus of run.py (scratch)
    python validation/model_corpus/joint_reactions.py --only arm     # a subset (path substring)

For each model that ``results/corpus.csv`` lists as ``agrees`` or ``opensim_coriolis``, in its own subprocess: the
static-optimization study's motion (every generalized coordinate from its default by 0.05 rad or 2 mm along a
smooth step, 11 frames over 1 s, an OpenSim states file with the dependent coordinates from the package's
couplings: ``static_optimization.write_states``) and a forces file with a force for every actuator OpenSim's
model has (muscles 20–80 N, varying in time; the model's CoordinateActuators, PointActuators and TorqueActuators
2–8 N or N m). The command ``osim-emb joint-reactions MODEL STATES --forces FORCES --model-actuators`` (every
joint, on the child, in ground) and OpenSim's JointReaction (AnalyzeTool) on the same files, with the model's forces
that are neither actuators, CoordinateLimitForces, PathSprings, Ligaments nor force elements the command applies
(contact, bushings, springs, prescribed forces: ``APPLIED_FORCE_TYPES``, since round 19) switched off in OpenSim's
copy (the command leaves them out and says so). Both read that copy (OpenSim writes an older file's spline arrays with 6 significant digits: reading the
original instead would compare two slightly different models). Compared: every reaction's force, moment and point
at the 11 frames.

Status: ``agrees`` (within 1e-7 of the largest load, N, N m, m), ``opensim_coriolis`` (differs on a model whose
forward accelerations OpenSim gets wrong, corpus.csv), ``opensim_reversed_joint`` (only a joint Simbody
reverses differs: OpenSim reports its child's own mobilizer reaction there; tests/test_joint_reactions.py -k
reverses checks the package's against the joint written forward), ``differs``, ``refused`` (the package says why: reversed
joints, actuator types it does not read), ``opensim_fails``, ``error``, ``timeout``.
Writes ``results/joint_reactions.csv``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))
from run import corpus_study, run_command  # noqa: E402  (this folder's corpus study)
from static_optimization import DURATION, FRAMES, write_states  # noqa: E402  (the same motion and states file)

TOL = 1e-7
COLUMNS = ["model", "coordinates", "joints", "muscles", "actuators", "status", "max_diff", "largest_load",
           "worst_column", "package_s", "opensim_s", "reason", "time_s"]


def write_forces(osim_model, path: Path) -> tuple[int, int]:
    """A forces file: every actuator of OpenSim's model, muscles 20–80 N, the others 2–8 (N or N m); (muscles,
    others)."""
    import opensim as osim
    t = np.linspace(0.0, DURATION, FRAMES)  # the motion's times
    acts = osim_model.getActuators()
    labels, data, n_muscles = [], [], 0
    for i in range(acts.getSize()):
        a = acts.get(i)
        is_muscle = osim.Muscle.safeDownCast(a) is not None
        n_muscles += is_muscle
        scale = 10.0 if is_muscle else 1.0
        labels.append(a.getName())
        data.append(scale * (5.0 + 3.0 * np.sin(2 * np.pi * t + 0.7 * i)))
    rows = np.column_stack([t, *data]) if data else t[:, None]
    head = f"forces\nversion=1\nnRows={len(t)}\nnColumns={len(labels) + 1}\ninDegrees=no\nendheader\n"
    body = "\n".join("\t".join(f"{v:.17g}" for v in row) for row in rows)
    path.write_text(head + "\t".join(["time", *labels]) + "\n" + body + "\n")
    return n_muscles, len(labels) - n_muscles


def study_one(path: str) -> dict:
    import opensim as osim
    from osim_emb import load_osim
    from osim_emb.io.force_elements import APPLIED_FORCE_TYPES
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    from osim_emb.opensim.static_optimization import read_storage
    model = load_osim(path)
    doc = model.extras["document"]
    row: dict = {"coordinates": model.n_q, "joints": len(doc.joints), "muscles": len(model.muscles)}
    with tempfile.TemporaryDirectory() as tmp:
        states, forces = Path(tmp) / "states.sto", Path(tmp) / "forces.sto"
        original = osim.Model(path)
        write_states(original, model, states)
        row["muscles"], row["actuators"] = write_forces(original, forces)
        copy = Path(tmp) / "model.osim"  # the forces the command leaves out, off in OpenSim's copy
        fs = original.updForceSet()
        for i in range(fs.getSize()):
            f = fs.get(i)
            if osim.Actuator.safeDownCast(f) is None and f.getConcreteClassName() not in (
                    "CoordinateLimitForce", "PathSpring", "Ligament", "Blankevoort1991Ligament", *APPLIED_FORCE_TYPES):
                f.set_appliesForce(False)
        original.finalizeConnections()
        original.printToXML(str(copy))
        prefix = Path(tmp) / "ours"
        row["package_s"], refusal = run_command(["joint-reactions", str(copy), str(states), "-o", str(prefix), "--forces", str(forces),
                        "--model-actuators", "--quiet", "--outside-range", "warn"])
        if refusal is not None:
            return {**row, "status": "refused", "reason": refusal}
        ours = read_storage(f"{prefix}_JointReaction_ReactionLoads.sto")
        t0 = time.perf_counter()
        try:
            theirs = opensim_joint_reactions(copy, states, forces_file=forces)["loads"]
        except Exception as err:  # noqa: BLE001 - OpenSim's exceptions are RuntimeErrors or SWIG's
            return {**row, "status": "opensim_fails", "reason": str(err).replace("\n", " ")[:300]}
        row["opensim_s"] = time.perf_counter() - t0
    if list(theirs.columns) != list(ours.columns) or len(theirs) != len(ours):
        return {**row, "status": "differs", "reason": f"columns or rows differ: OpenSim {theirs.shape}, the package "
                                                      f"{ours.shape}"}
    labels = [c for c in ours.columns if c != "time"]
    d = np.abs(ours[labels].to_numpy() - theirs[labels].to_numpy())
    scale = float(np.abs(theirs[labels].to_numpy()).max()) if labels else 0.0
    worst = labels[int(np.argmax(d.max(axis=0)))] if labels else ""
    row.update(max_diff=float(d.max()) if labels else 0.0, largest_load=scale, worst_column=worst)
    row["status"] = "agrees" if row["max_diff"] <= TOL * max(scale, 1.0) else "differs"
    from osim_emb.simulation.joint_reactions import joint_topology
    reversed_joints = [j for j, t in joint_topology(model).items() if t.reversed]
    if row["status"] == "differs" and reversed_joints:
        others = [k for k, c in enumerate(labels) if not any(c.startswith(f"{j}_on_") for j in reversed_joints)]
        if not others or d[:, others].max() <= TOL * max(scale, 1.0):
            row["status"] = "opensim_reversed_joint"
            row["reason"] = (f"only the joint(s) Simbody reverses differ ({', '.join(reversed_joints)}): OpenSim reports "
                             "the child body's own mobilizer reaction there (Joint::calcReactionOnChildExpressedInGround"
                             " takes the child frame's MobilizedBody)")
    return row


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0],
                        study=lambda path, _: study_one(path),
                        out=HERE / "results" / "joint_reactions.csv", columns=COLUMNS, timeout=300.0,
                        summary=lambda row: row.get("max_diff", ""), relabel_coriolis=True)


if __name__ == "__main__":
    sys.exit(main())
