"""The default configuration of models with loop constraints against OpenSim 4.6's assembly (``Model::initSystem``).

    python validation/model_corpus/assembly.py             # the corpus of run.py (scratch), about a minute
    python validation/model_corpus/assembly.py --only knee # a subset (path substring)

For each model that ``results/corpus.csv`` lists as ``agrees`` and that has a PointConstraint,
ConstantDistanceConstraint, PointOnLineConstraint or WeldConstraint, in its own subprocess: every coordinate at the
package's default configuration (the generalized coordinates' defaults, the dependent ones from their functions)
against its value in OpenSim's assembled default state, and which defaults the package's assembly moved
(``point_constraints.assembled_configuration``; docs/closed_chains.md).

Status: ``agrees`` (every coordinate within 1e-8 rad or m: 10 x OpenSim's assembly accuracy), ``differs``,
``refused``, ``error``, ``timeout``. Writes ``results/assembly.csv``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import corpus_study  # noqa: E402  (this folder's corpus study)

TOL = 1e-8
LOOPS = ("<PointConstraint", "<ConstantDistanceConstraint", "<PointOnLineConstraint", "<WeldConstraint")
COLUMNS = ["model", "coordinates", "dependent_coordinates", "defaults_moved", "largest_move", "status",
           "max_diff_rad_or_m", "worst", "reason", "time_s"]


def has_loops(path: Path) -> bool:
    text = path.read_text(errors="ignore")
    return any(tag in text for tag in LOOPS)


def study_one(path: str, args) -> dict:
    import numpy as np
    from osim_emb.io import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    t0 = time.perf_counter()
    model = load_osim(path)
    q0 = model.default_q[None]
    ours = dict(zip(model.coordinate_names, q0[0]))
    for d in model.dependent_coordinates:
        ours[d.name] = float(d.function.evaluate(q0, 0).value[0])
    files = {c.name: c.default for c in model.extras["document"].coordinates}
    moves = {n: abs(v - files[n]) for n, v in ours.items() if n in files and abs(v - files[n]) > 1e-12}
    ref = OpenSimReference(path, model)
    state = ref.model_os.initSystem()
    coords = ref.model_os.getCoordinateSet()
    diffs = {coords.get(i).getName(): abs(coords.get(i).getValue(state) - ours[coords.get(i).getName()])
             for i in range(coords.getSize()) if coords.get(i).getName() in ours}
    worst = max(diffs, key=diffs.get)
    return {"model": path, "coordinates": model.n_q, "dependent_coordinates": len(model.dependent_coordinates),
            "defaults_moved": len(moves), "largest_move": max(moves.values(), default=0.0),
            "status": "agrees" if diffs[worst] <= TOL else "differs", "max_diff_rad_or_m": diffs[worst],
            "worst": worst, "time_s": time.perf_counter() - t0}


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0], study=study_one,
                        out=HERE / "results" / "assembly.csv", columns=COLUMNS, timeout=300.0, select=has_loops)


if __name__ == "__main__":
    sys.exit(main())
