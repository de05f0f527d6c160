"""``osim-emb scale`` over the model corpus, against OpenSim 4.6's ``Model::scale``.

    python validation/model_corpus/scaling.py                # the corpus of run.py (scratch)
    python validation/model_corpus/scaling.py --only arm     # a subset (path substring)

For each model that ``results/corpus.csv`` lists as ``agrees`` or ``opensim_coriolis``, in its own subprocess:
scale factors for every body drawn from [0.9, 1.1] per axis (seeded by the model's path, so reproducible; uniform
on bodies whose joints carry a translational coupler, which OpenSim scales only uniformly), masses scaled with the
volume and then to 1.1 times the model's mass; ``osim-emb scale MODEL -o OUT --scale BODY=SX,SY,SZ ... --mass M``
and OpenSim's ``Model::scale`` with the same ScaleSet on the model as OpenSim loads it (an older file: as OpenSim
upgrades and writes it, the text the command scales — OpenSim writes its spline arrays with 6 significant digits,
so its in-memory model of the original differs by ~1e-8 m), the package's scaled file and OpenSim's scaled model as
it holds it in memory (its printed file rounds spline arrays to 6 significant digits: 4.3e-6 m in a path length of
subject01_RRA_adjusted) compared through OpenSim's API (``osim_emb.opensim.scaling.compare_models``: mass properties, bodies and markers at
3 random poses, path lengths there, fibre and tendon lengths).

Status: ``agrees`` (every quantity within 1e-9, kg and m), ``differs``, ``refused`` (the package says why: joint
types or wrap objects whose scaling it does not reproduce), ``opensim_fails``, ``error``, ``timeout``.
Writes ``results/scaling.csv``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import MESH_SUFFIXES, corpus_study, run_command  # noqa: E402  (this folder's corpus study)

TOL = 1e-9
KEYS = ["mass", "mass_center", "inertia", "body_origin", "marker", "path_length", "optimal_fiber_length",
        "tendon_slack_length"]
COLUMNS = ["model", "bodies", "muscles", "status", "max_diff", "worst", *KEYS, "package_s", "opensim_s", "reason",
           "time_s"]


def _meshes_beside(path: str, folder: str) -> None:
    """Link the mesh files of the model's folder into ``folder``: OpenSim's initSystem loads a ContactMesh's file
    (an ElasticFoundationForce's) beside the model file and refuses the model without it."""
    for mesh in Path(path).parent.iterdir():
        if mesh.suffix.lower() in MESH_SUFFIXES and not (Path(folder) / mesh.name).exists():
            (Path(folder) / mesh.name).symlink_to(mesh)


def study_one(path: str) -> dict:
    import opensim as osim
    from osim_emb.opensim.scaling import compare_models
    from osim_emb.io.osim_scaling import osim_version
    from osim_emb.opensim.scaling import opensim_upgraded_text
    rng = np.random.default_rng(zlib.crc32(Path(path).name.encode()))
    scratch = tempfile.TemporaryDirectory()
    source = path
    if osim_version(Path(path).read_bytes().decode("utf-8", errors="replace")) < 30517:
        source = str(Path(scratch.name) / "upgraded.osim")  # what the command scales: OpenSim's own upgrade
        Path(source).write_text(opensim_upgraded_text(path))
        _meshes_beside(path, scratch.name)
    model = osim.Model(source)
    state = model.initSystem()
    bodies = [b.getName() for b in model.getBodySet()]
    row: dict = {"bodies": len(bodies), "muscles": model.getMuscles().getSize()}
    factors = {b: rng.uniform(0.9, 1.1, 3) for b in bodies}
    cs = model.getCoordinateSet()
    for c in model.getComponentsList():
        if c.getConcreteClassName() == "CoordinateCouplerConstraint":
            cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
            dep = cs.get(cc.getDependentCoordinateName())
            parent = dep.getJoint().getParentFrame().findBaseFrame().getName()
            if parent in factors:
                factors[parent] = np.full(3, factors[parent][0])
    mass = 1.1 * sum(model.getBodySet().get(b).getMass() for b in bodies)
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = Path(tmp) / "ours.osim", Path(tmp) / "theirs.osim"
        _meshes_beside(path, tmp)
        row["package_s"], refusal = run_command(["scale", path, "-o", str(ours), "--quiet", f"--mass={mass!r}",
                        *[f"--scale={b}={','.join(repr(float(v)) for v in f)}" for b, f in factors.items()]])
        if refusal is not None:
            return {**row, "status": "refused", "reason": refusal}
        scale_set = osim.ScaleSet()
        for b, f in factors.items():
            s = osim.Scale()
            s.setSegmentName(b)
            s.setScaleFactors(osim.Vec3(*f))
            s.setApply(True)
            scale_set.cloneAndAppend(s)
        t0 = time.perf_counter()
        try:
            model.scale(state, scale_set, False, mass)
            model.printToXML(str(theirs))
        except Exception as err:  # noqa: BLE001 - OpenSim's exceptions are RuntimeErrors or SWIG's
            return {**row, "status": "opensim_fails", "reason": str(err).replace("\n", " ")[:300]}
        row["opensim_s"] = time.perf_counter() - t0
        d = compare_models(ours, model, poses=3)  # OpenSim's scaled model in memory: its file rounds splines
    scratch.cleanup()
    row.update(d)
    worst = max(KEYS, key=lambda k: d[k])
    row.update(max_diff=d[worst], worst=worst, status="agrees" if d[worst] <= TOL else "differs")
    return row


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0],
                        study=lambda path, _: study_one(path), out=HERE / "results" / "scaling.csv",
                        columns=COLUMNS, timeout=300.0, summary=lambda row: row.get("max_diff", ""))


if __name__ == "__main__":
    sys.exit(main())
