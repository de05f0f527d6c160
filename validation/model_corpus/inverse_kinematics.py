"""``osim-emb inverse-kinematics`` over the model corpus, against OpenSim 4.6's InverseKinematicsTool.

    python validation/model_corpus/inverse_kinematics.py                # the corpus of run.py (scratch)
    python validation/model_corpus/inverse_kinematics.py --only gait    # a subset (path substring)

For each model that ``results/corpus.csv`` lists as ``agrees`` or ``opensim_coriolis``, in its own subprocess:
three markers are added on every body (5 cm along its frame's axes, by OpenSim's API; the model's own markers
kept), and a marker trial is made by OpenSim's kinematics along the static-optimization study's motion (11 frames,
every generalized coordinate from its default by 0.05 rad or 2 mm; the dependent coordinates from the package's
couplings so that OpenSim's constraints hold) with 1 mm of seeded noise, written as a .trc in mm. Then the command
(every marker, weight 1) and OpenSim's tool (accuracy 1e-9; 1e-8 where that fails) on the same files. Compared:
the coordinates (OpenSim's .mot, every coordinate of the package's model) and the package's objective at both
solutions.

Status: ``agrees`` (coordinates within 1e-5 rad or m), ``agrees_opensim_looser`` (further apart, the package's
objective no higher than at OpenSim's solution at any frame: OpenSim's LBFGS stopped short), ``opensim_other_minimum``
(the same, but OpenSim's coordinates more than 0.5 rad or m away: OpenSim ended in another, worse local minimum),
``differs``,
``refused`` (the package says why), ``opensim_fails``, ``error``, ``timeout``.
Writes ``results/inverse_kinematics.csv``.
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
from run import corpus_study, run_command  # noqa: E402  (this folder's corpus study)
from static_optimization import motion  # noqa: E402

TOL = 1e-5
NOISE_M = 0.001
COLUMNS = ["model", "coordinates", "dependent_coordinates", "markers", "status", "max_diff_rad_or_m",
           "opensim_objective_above_package_max", "frames_package_objective_higher", "opensim_accuracy",
           "package_s", "opensim_s", "reason", "time_s"]


def with_markers(osim, path: str, out: Path) -> Path:
    """The model with three markers on every body (5 cm along its axes), written by OpenSim."""
    model = osim.Model(path)
    bodies = model.getBodySet()
    for i in range(bodies.getSize()):
        body = bodies.get(i)
        for k, axis in enumerate("xyz"):
            offset = [0.0, 0.0, 0.0]
            offset[k] = 0.05
            model.addMarker(osim.Marker(f"osim_emb_{body.getName()}_{axis}", body, osim.Vec3(*offset)))
    model.finalizeConnections()
    model.printToXML(str(out))
    return out


def marker_trial(osim, model_path: Path, model, out: Path) -> None:
    """The markers along the study's motion by OpenSim's kinematics, noisy (seeded), as a .trc in mm."""
    from osim_emb.io.markers import write_trc
    from osim_emb.core.kinematics import dependent_coordinate_columns
    t, q, qd = motion(model)
    values = {n: q[:, k] for k, n in enumerate(model.coordinate_names)}
    values.update({k: v for k, v in dependent_coordinate_columns(model, q, qd).items() if not k.endswith("_u")})
    om = osim.Model(str(model_path))
    state = om.initSystem()
    cs = om.getCoordinateSet()
    markers = om.getMarkerSet()
    names = [markers.get(i).getName() for i in range(markers.getSize())]
    positions = np.empty((len(t), len(names), 3))
    for i in range(len(t)):
        for j in range(cs.getSize()):
            c = cs.get(j)
            if c.getName() in values and not c.getLocked(state):
                c.setValue(state, float(values[c.getName()][i]), False)
        om.realizePosition(state)
        for j in range(len(names)):
            p = markers.get(j).getLocationInGround(state)
            positions[i, j] = [p.get(0), p.get(1), p.get(2)]
    positions += np.random.default_rng(3).normal(0.0, NOISE_M, positions.shape)
    write_trc(out, t, names, positions)


def study_one(path: str) -> dict:
    import opensim as osim
    from osim_emb import load_osim
    from osim_emb.io.markers import read_trc
    from osim_emb.io.motion import coordinates_from_motion
    from osim_emb.opensim.inverse_kinematics import opensim_inverse_kinematics
    from osim_emb.opensim.static_optimization import read_storage
    from osim_emb.simulation.inverse_kinematics import inverse_kinematics
    osim.Logger.setLevelString("error")
    with tempfile.TemporaryDirectory() as tmp:
        marked = with_markers(osim, path, Path(tmp) / "marked.osim")
        model = load_osim(str(marked))
        row: dict = {"coordinates": model.n_q, "dependent_coordinates": len(model.dependent_coordinates),
                     "markers": len(model.extras["markers"])}
        trc = Path(tmp) / "trial.trc"
        marker_trial(osim, marked, model, trc)
        out = Path(tmp) / "ours.mot"
        row["package_s"], refusal = run_command(["inverse-kinematics", str(marked), str(trc), "-o", str(out), "--quiet"])
        if refusal is not None:
            return {**row, "status": "refused", "reason": refusal}
        ref, err = None, ""
        for accuracy in (1e-9, 1e-8):
            t0 = time.perf_counter()
            try:
                ref = opensim_inverse_kinematics(marked, trc, accuracy=accuracy)
                row.update(opensim_accuracy=accuracy, opensim_s=time.perf_counter() - t0)
                break
            except Exception as exc:  # noqa: BLE001 - OpenSim's exceptions are RuntimeErrors or SWIG's
                err = str(exc).replace("\n", " ")
        if ref is None:
            return {**row, "status": "opensim_fails", "reason": err[:300]}
        ours = read_storage(out)
        _, q_ours, _ = coordinates_from_motion(model, ours, {"inDegrees": "yes"}, outside="warn")
        _, q_ref, _ = coordinates_from_motion(model, ref["coordinates"], {"inDegrees": "yes"}, outside="warn")
        data = read_trc(trc)
        j_ours = inverse_kinematics(model, data, progress=False).objective
        j_ref = np.array([inverse_kinematics(model, data, frames=[i], q0=q_ref[i], max_evaluations=1,
                                             progress=False).objective[0] for i in range(len(q_ref))])
    dq = float(np.abs(q_ours - q_ref).max())
    higher = int(np.sum(j_ours > j_ref * (1 + 1e-9) + 1e-15))
    row.update(max_diff_rad_or_m=dq, opensim_objective_above_package_max=float((j_ref - j_ours).max()),
               frames_package_objective_higher=higher)
    if dq <= TOL:
        row["status"] = "agrees"
    elif higher == 0:
        row["status"] = "agrees_opensim_looser" if dq <= 0.5 else "opensim_other_minimum"
    else:
        row["status"] = "differs"
    return row


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0],
                        study=lambda path, _: study_one(path),
                        out=HERE / "results" / "inverse_kinematics.csv", columns=COLUMNS, timeout=300.0,
                        summary=lambda row: row.get("max_diff_rad_or_m", ""))


if __name__ == "__main__":
    sys.exit(main())
