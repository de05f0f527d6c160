"""simulate-muscles' states files read by OpenSim 4.6's StatesTrajectory, over the corpus.

Every model the muscle-driven corpus study runs (``results/muscle_driven.csv``: status ``agrees``, at most 30
muscles) is simulated for 0.01 s by ``osim-emb simulate-muscles`` (3 samples); OpenSim's
``StatesTrajectory.createFromStatesTable(model, table, False, True)`` (the tendon forces, outputs, as extra columns)
must find every state variable of the model in the file, each value the file's at the last sample.

    python validation/model_corpus/states_files.py          # after run.py has extracted the corpus; about 3 min
Results: ``results/states_files.csv`` (model, states, largest |OpenSim - file| over the states, or the error).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import DEFAULT_CORPUS  # noqa: E402


def main() -> None:
    import opensim as osim
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "states_files.csv")
    args = ap.parse_args()
    osim.Logger.setLevelString("error")
    study = pd.read_csv(HERE / "results" / "muscle_driven.csv")
    models = study[(study.status == "agrees") & (study.muscles <= 30)].model
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "states.sto"
        for k, name in enumerate(models, 1):
            path = args.corpus / name
            run = subprocess.run([sys.executable, "-m", "osim_emb", "-q", "simulate-muscles", str(path), "-o", str(out),
                                  "--t-end", "0.01", "--samples", "3", "--overwrite", "--lenient"],
                                 capture_output=True, text=True)
            row = {"model": name, "status": "", "states": np.nan, "max_abs_difference": np.nan, "reason": ""}
            if run.returncode != 0:
                row.update(status="not_simulated", reason=run.stderr.strip().splitlines()[-1][:300])
            else:
                try:
                    model = osim.Model(str(path))
                    model.initSystem()
                    table = osim.TimeSeriesTable(str(out))
                    states = osim.StatesTrajectory.createFromStatesTable(model, table, False, True)
                    names = [model.getStateVariableNames().get(i) for i in range(model.getNumStateVariables())]
                    d = [abs(model.getStateVariableValue(states.get(2), n) - table.getDependentColumn(n)[2])
                         for n in names]
                    row.update(status="read", states=len(names), max_abs_difference=float(np.nanmax(d)),
                               reason="OpenSim's value NaN" if np.isnan(d).any() else "")
                except Exception as err:  # noqa: BLE001 -- OpenSim's refusal is the result
                    row.update(status="refused_by_opensim", reason=str(err).splitlines()[0][:300])
            rows.append(row)
            print(f"{k}/{len(models)} {row['status']:18s} {name}", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False)
    print(f"wrote {args.out}: {table.status.value_counts().to_dict()}")


if __name__ == "__main__":
    main()
