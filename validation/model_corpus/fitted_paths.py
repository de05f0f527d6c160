"""Fitted paths on models the package was not written for: each model's paths replaced by FunctionBasedPaths (fit-paths'
fit, order 3, on 400 random configurations), then the compiled integrator and OpenSim 4.6's Manager on that same file.

    python validation/model_corpus/fitted_paths.py              # two corpus models (run.py's scratch corpus)
    python validation/model_corpus/fitted_paths.py A.osim B.osim

For each model: ``simulate_muscles`` (method "auto": the compiled integrator, rtol 1e-10) and
``opensim_muscle_simulation`` (accuracy 1e-9, the file's controllers off) over 0.02 s from the same equilibrium, the
first four muscles at 0.3, the fifth a 20 rad/s sine; the largest differences of the coordinates (rad, m), fibre
lengths (m) and activations.  Writes ``results/fitted_paths.csv``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import DEFAULT_CORPUS  # noqa: E402  (this folder's corpus study)

DEFAULT_MODELS = ("opensim-core/Bindings/Python/tutorials/resources/Tutorial 6/gait10dof18musc_simbody.osim",
                  "opensim-core/OpenSim/Simulation/Test/testSimulationUtilities_leg6dof9musc_20303.osim")


def compare(src: Path, tmp: Path) -> dict:
    from osim_emb.io import load_osim
    from osim_emb.io.function_based_path_xml import document_with_fitted_paths
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.paths.path_fitting import FitSettings
    from osim_emb.simulation.excitations import ExcitationSpec
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model = load_osim(str(src))
    lo, hi = model.coordinate_ranges.T
    lo, hi = np.where(np.isfinite(lo), lo, -1.0), np.where(np.isfinite(hi), hi, 1.0)
    q = np.random.default_rng(0).uniform(lo, hi, (400, model.n_q))
    fitted = tmp / src.name
    write_osim(document_with_fitted_paths(model, q, None, FitSettings(min_order=3, max_order=3))[0], fitted)
    model = load_osim(str(fitted))
    names = [u.name for u in model.muscles]
    exc = {n: ExcitationSpec.parse("0.3") for n in names[:4]}
    if len(names) > 4:
        exc[names[4]] = ExcitationSpec.parse("sine:0.2:20:0:0.3")
    times = np.linspace(0.0, 0.02, 6)
    ours = simulate_muscles(model, 0.02, exc, t_eval=times, rtol=1e-10, atol=1e-12,
                            allow_out_of_range=True)  # OpenSim starts from the file's defaults
    ref = opensim_muscle_simulation(fitted, times, exc, accuracy=1e-9, own_controllers=False)
    d = largest_differences(ours, ref)
    return {"model": src.name, "muscles": len(names), "method": ours.attrs["method"],
            "max_q_rad_or_m": d["q"], "max_fiber_length_m": d["fiber_length"], "max_activation": d["activation"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "fitted_paths.csv")
    args = ap.parse_args(argv)
    models = args.models or [DEFAULT_CORPUS / m for m in DEFAULT_MODELS]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in tqdm(models, desc="models (fit, then both integrators)", unit="model"):
            rows.append(compare(src, Path(tmp)))
            tqdm.write(", ".join(f"{k} {v:.1e}" if isinstance(v, float) else f"{k} {v}" for k, v in rows[-1].items()))
    pd.DataFrame(rows).to_csv(args.out, index=False, float_format="%.3g")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
