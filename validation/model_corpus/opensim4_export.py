"""Pre-4.0 models of the corpus written as OpenSim 4 files (``osim-emb convert OLD.osim -o NEW.osim``), against the
originals in OpenSim 4.6.

    python validation/model_corpus/opensim4_export.py              # the corpus of run.py (scratch), a few minutes
    python validation/model_corpus/opensim4_export.py --only Walker

For each model of ``results/corpus.csv`` (``agrees``, ``opensim_coriolis``) whose file is older than version 40000,
in its own subprocess: the package's model written with ``write_osim(..., opensim4=True)`` (what the file leaves out
is the writer's one warning, kept in ``left_out``), both files loaded by OpenSim 4.6 (a ContactMesh whose file is not
in the corpus left out of both, as the moment-arm references do), then at 8 states — the defaults, then coordinates
drawn within 1 (rad, m) of their defaults and their ranges, speeds N(0, 0.5) — the unlocked coordinates set on both,
both assembled (the loops closed by OpenSim's own assembler), and compared: every coordinate's value, every body's
ground transform, every force's record values and every coordinate's acceleration; and, at the defaults, the visual
geometry of the ground and every body (``osim_emb.opensim.bridge.visual_geometry``: each Geometry component's class,
mesh file (written alike, or found as the same file), scale factors, colour, opacity, visibility, representation,
and its frame's ground transform): ``geometry`` counts the converted file's pieces of the original's,
``geometry_diffs`` names the differences; and the appearance (colour, opacity, visibility, representation) of every
wrap object, path and contact geometry (``bridge.display_appearances``: a pre-4.0 file's display properties as
OpenSim 4.6 upgrades them), ``appearances`` counting the converted file's equal ones (round 26).

Status: ``agrees`` (coordinates and transforms within 1e-9, records and accelerations within 1e-9 of their size),
``differs`` (or any geometry difference, or its frames' transforms beyond 1e-9), ``opensim_fails`` (OpenSim cannot
build the original), ``converted_fails`` (it cannot build the converted file), ``error``, ``timeout``. Writes ``results/opensim4_export.csv``.
"""

from __future__ import annotations

import logging
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import corpus_study  # noqa: E402  (this folder's corpus study)

TOL = 1e-9
STATES = 8
COLUMNS = ["model", "corpus_status", "version", "status", "states", "max_coordinate", "max_transform",
           "max_record_rel", "max_accel_rel", "forces", "constraints", "geometry", "max_geometry_transform",
           "geometry_diffs", "appearances", "left_out", "reason", "time_s"]


def file_version(path: Path) -> int | None:
    head = path.read_bytes()[:600].decode("latin-1")
    found = re.search(r"Version\s*=\s*[\"'](\d+)", head)
    return int(found.group(1)) if found else None


def pre_4(path: Path) -> bool:
    version = file_version(path)
    return version is not None and version < 40000


def _opensim_model(osim, path: str):
    from osim_emb.opensim.bridge import missing_contact_meshes, without_contact_meshes
    model = osim.Model(path)
    missing = missing_contact_meshes(path)
    if missing:
        without_contact_meshes(model, missing)
    return model, model.initSystem()


def _evaluate(osim, model, state, q: dict, u: dict, t: float):
    state.setTime(t)
    cs = model.getCoordinateSet()
    for name, value in q.items():
        if not cs.get(name).getLocked(state):
            cs.get(name).setValue(state, value, False)
    model.assemble(state)
    for name, value in u.items():
        if not cs.get(name).getLocked(state):
            cs.get(name).setSpeedValue(state, value)
    try:
        model.realizeAcceleration(state)
        accelerations = np.array([cs.get(i).getAccelerationValue(state) for i in range(cs.getSize())])
    except Exception:  # noqa: BLE001 - a singular mass matrix (massless bodies): forces and kinematics only
        model.realizeDynamics(state)
        accelerations = None
    coordinates = np.array([cs.get(i).getValue(state) for i in range(cs.getSize())])
    bodies = model.getBodySet()
    transforms = []
    for i in range(bodies.getSize()):
        x = bodies.get(i).getTransformInGround(state)
        r = x.R()
        transforms.append([r.get(a, b) for a in range(3) for b in range(3)] + list(x.p().to_numpy()))
    forces = {}
    fs = model.getForceSet()
    for i in range(fs.getSize()):
        record = fs.get(i).getRecordValues(state)
        forces[fs.get(i).getName()] = np.array([record.get(k) for k in range(record.size())])
    return coordinates, np.array(transforms), forces, accelerations


def study_one(path: str, args) -> dict:
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.opensim.bridge import (compare_appearances, compare_visual_geometry, display_appearances,
                                         require_opensim, visual_geometry)
    osim = require_opensim()
    row = {"version": str(file_version(Path(path)))}  # a label (the table's float format would round it)
    try:
        original, s_a = _opensim_model(osim, path)
    except Exception as err:  # noqa: BLE001 - OpenSim's own refusal is data here
        return {**row, "status": "opensim_fails", "reason": str(err).strip().splitlines()[-1][:300]}
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logging.getLogger("osim_emb").addHandler(handler)
    try:
        with tempfile.TemporaryDirectory() as folder:
            target = Path(folder) / "converted.osim"
            write_osim(load_osim(path, strict=False), target, opensim4=True)
            try:
                converted, s_b = _opensim_model(osim, str(target))
            except Exception as err:  # noqa: BLE001 - a defect of the writer, reported
                return {**row, "status": "converted_fails", "reason": str(err).strip().splitlines()[-1][:300]}
            # visual geometry at the default state (the converted file's meshes found from its own folder)
            geometry_a = visual_geometry(osim, original, s_a)
            geometry_b = visual_geometry(osim, converted, s_b)
            looks_a, looks_b = display_appearances(osim, original), display_appearances(osim, converted)
    finally:
        logging.getLogger("osim_emb").removeHandler(handler)
    row["left_out"] = " | ".join(m.split(": ", 2)[-1] for m in said if "OpenSim 4" in m)[:300]
    row["forces"] = converted.getForceSet().getSize()
    row["constraints"] = f"{converted.getConstraintSet().getSize()} of {original.getConstraintSet().getSize()}"
    geometry_diffs, row["max_geometry_transform"] = compare_visual_geometry(geometry_a, geometry_b)
    look_diffs = compare_appearances(looks_a, looks_b)
    row["appearances"] = f"{len(looks_a) - len({d.split()[0] for d in look_diffs})} of {len(looks_a)}"
    geometry_diffs += look_diffs
    row["geometry"] = f"{len(geometry_b)} of {len(geometry_a)}"
    row["geometry_diffs"] = " | ".join(geometry_diffs)[:300]
    cs = original.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    default = {n: cs.get(n).getValue(s_a) for n in names}
    lo = {n: cs.get(n).getRangeMin() for n in names}
    hi = {n: cs.get(n).getRangeMax() for n in names}
    rng = np.random.default_rng(0)
    worst = {"max_coordinate": 0.0, "max_transform": 0.0, "max_record_rel": 0.0, "max_accel_rel": 0.0}
    for k in range(STATES):
        q = {n: default[n] if k == 0 else rng.uniform(max(lo[n], default[n] - 1), min(hi[n], default[n] + 1))
             for n in names}
        u = {n: 0.0 if k == 0 else rng.normal(0.0, 0.5) for n in names}
        qa, xa, fa, aa = _evaluate(osim, original, s_a, q, u, 0.01 * k)
        qb, xb, fb, ab = _evaluate(osim, converted, s_b, q, u, 0.01 * k)
        worst["max_coordinate"] = max(worst["max_coordinate"], float(np.abs(qa - qb).max(initial=0.0)))
        worst["max_transform"] = max(worst["max_transform"], float(np.abs(xa - xb).max(initial=0.0)))
        for name in set(fa) & set(fb):
            a, b = fa[name], fb[name]
            size = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0), 1.0)
            d = np.abs(a - b).max(initial=0.0) / size if a.shape == b.shape else np.inf
            worst["max_record_rel"] = max(worst["max_record_rel"], float(d))
        if aa is None or ab is None:  # OpenSim cannot solve for them (singular mass matrix): said, not compared
            worst["max_accel_rel"] = worst["max_accel_rel"] if aa is None and ab is None else np.inf
            row["reason"] = "accelerations not compared: OpenSim's mass matrix is singular"
            continue
        size = max(np.abs(aa).max(initial=0.0), 1.0)
        worst["max_accel_rel"] = max(worst["max_accel_rel"], float(np.abs(aa - ab).max(initial=0.0) / size))
    agrees = all(v <= TOL for v in worst.values()) and not geometry_diffs and row["max_geometry_transform"] <= TOL
    return {**row, **worst, "states": STATES, "status": "agrees" if agrees else "differs"}


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0], study=study_one,
                        out=HERE / "results" / "opensim4_export.csv", columns=COLUMNS, timeout=300.0, select=pre_4,
                        summary=lambda r: f"{r.get('max_transform', '')} {r.get('max_accel_rel', '')}")


if __name__ == "__main__":
    sys.exit(main())
