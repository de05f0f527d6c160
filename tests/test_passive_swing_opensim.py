"""Passive swing of the MoBL shoulder and elbow against OpenSim's Manager (issue 6; the 1 s study is
validation/passive_swing/run_swing.py, whose functions this test reuses on a 0.3 s swing)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from osim_emb.io.convert import document_to_model
from osim_emb.io.osim_writer import write_osim

SCRIPT = Path(__file__).resolve().parents[1] / "validation" / "passive_swing" / "run_swing.py"


def _study():
    spec = importlib.util.spec_from_file_location("run_swing", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_short_passive_swing_equals_opensim_and_stays_on_the_rhythm(osim, models_dir, tmp_path):
    sw = _study()
    doc = sw.locked_document(models_dir / "mobl_arms_holzbaur.osim")
    path = tmp_path / "mobl_locked.osim"
    write_osim(doc, path)
    model = document_to_model(doc)
    times = np.round(np.linspace(0.0, 0.3, 31), 12)
    q, u, _, _ = sw.package_swing(model, times)
    r = sw.opensim_swing(path, model, times, 1e-8, time_one_shot=False)
    diff = np.abs(r["q"] - q).max()
    # every OpenSim coordinate (the 13 coupled ones too) against the package's joint functions of q
    values = {c.name: c.function(q) for c in model.dependent_coordinates}
    values.update({c: q[:, k] for k, c in enumerate(model.coordinate_names)})
    diff_all = max(np.abs(r["all"][:, i] - values[n]).max() for i, n in enumerate(r["names"]))
    rhythm = sw.rhythm_error(r["ref"], model, q)
    print(f"[agreement] 0.3 s swing: max |q - q_OpenSim(1e-8)| = {diff:.2e} rad (generalized), {diff_all:.2e} rad "
          f"(all 21 coordinates); package rhythm error {rhythm.max():.1e}; OpenSim max|QErr| {r['qerr'].max():.1e}")
    assert diff < 1e-6
    assert diff_all < 1e-6
    assert np.abs(r["u"] - u).max() < 1e-5
    # on the rhythm by construction: OpenSim's own coupler functions at the package's coordinates
    assert rhythm.max() <= 1e-15
    assert r["qerr"].max() < 1e-8  # OpenSim projects its constraint error to below its accuracy
