"""`osim-emb convert MODEL.osim -o NEW.osim`: an OpenSim 3.3 file written as OpenSim 4 (version 40000), the input
of commands that need 4.x elements (smooth-paths).  Checked against the 3.3 file's own model and OpenSim 4.6."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.cli.main import main


@pytest.mark.models
def test_opensim_33_file_converts_to_opensim_4(models_dir, tmp_path, caplog):
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms
    src = models_dir / "mobl_arms_holzbaur.osim"
    out = tmp_path / "mobl4.osim"
    assert main(["convert", str(src), "-o", str(out)]) == 0
    assert 'Version="40000"' in out.read_text()[:200]
    assert not any("display properties" in r.getMessage() for r in caplog.records)  # colours and visibility carried
    old, new = load_osim(src), load_osim(out)
    assert new.coordinate_names == old.coordinate_names
    q = old.default_q + np.random.default_rng(2).uniform(-0.3, 0.3, size=(20, old.n_q))
    q = np.clip(q, [c.range[0] for c in old.coordinates], [c.range[1] for c in old.coordinates])
    (l0, r0), (l1, r1) = lengths_and_moment_arms(old, q), lengths_and_moment_arms(new, q)
    assert np.abs(l1 - l0).max() < 1e-12 and np.abs(r1 - r0).max() < 1e-12


@pytest.mark.models
@pytest.mark.opensim
def test_converted_file_loads_in_opensim_with_the_same_lengths(osim, models_dir, tmp_path):
    """OpenSim 4.6 on the 4.x file gives the lengths it gives on the 3.3 file, at the default pose and 10 others."""
    src = models_dir / "mobl_arms_holzbaur.osim"
    out = tmp_path / "mobl4.osim"
    assert main(["convert", str(src), "-o", str(out)]) == 0
    rng = np.random.default_rng(4)

    def lengths(path):
        model = osim.Model(str(path))
        state = model.initSystem()
        muscles = model.getMuscles()
        coords = model.getCoordinateSet()
        out = []
        for k in range(11):
            for i in range(coords.getSize()):
                c = coords.get(i)
                if k and not c.getLocked(state) and not c.isConstrained(state):
                    lo, hi = c.getRangeMin(), c.getRangeMax()
                    c.setValue(state, lo + (hi - lo) * rng.uniform(0.3, 0.7), False)
            model.assemble(state)
            model.realizePosition(state)
            out.append([muscles.get(i).getLength(state) for i in range(muscles.getSize())])
        return np.array(out)
    rng_state = rng.bit_generator.state
    before = lengths(src)
    rng.bit_generator.state = rng_state
    after = lengths(out)
    assert before.shape[1] == 50 and np.abs(after - before).max() < 1e-12


def test_convert_refuses_an_unknown_output_type(tmp_path, capsys):
    from hostile_models import small_osim
    src = tmp_path / "m.osim"
    src.write_text(small_osim())
    assert main(["convert", str(src), "-o", str(tmp_path / "m.txt")]) == 2
    assert "must end in .json" in capsys.readouterr().err
    assert not (tmp_path / "m.txt").exists()
