"""Lossless .osim writing: export without change keeps everything; edits keep what they do not touch;
a JSON model keeps its OpenSim document (export, rhythm, moment-arm references)."""

import collections
import logging

import numpy as np
import pytest

from osim_emb.core import dynamics as dyn
from osim_emb.io import load_osim
from osim_emb.io.model_json import load_model, save_model
from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
from osim_emb.paths import geometry

MODELS = ["arm26.osim", "leg6dof9musc.osim", "mobl_arms_holzbaur.osim", "mobl_arms_holzbaur_nowrap_variant.osim",
          "double_pendulum.osim"]


def component_counts(osim, path):
    """OpenSim's components of a file, counted by concrete class."""
    m = osim.Model(str(path))
    m.initSystem()
    return collections.Counter(c.getConcreteClassName() for c in m.getComponentsList()), m


@pytest.mark.parametrize("name", MODELS)
def test_export_without_change_keeps_every_component_and_the_numbers(osim, models_dir, tmp_path, name):
    src = models_dir / name
    model = load_osim(src)
    out = tmp_path / name
    write_osim(model, out)
    before, _ = component_counts(osim, src)
    after, _ = component_counts(osim, out)
    assert after == before
    again = load_osim(out)
    assert again == model
    lo, hi = model.coordinate_ranges.T
    q = np.random.default_rng(2).uniform(np.maximum(lo, -3), np.minimum(hi, 3), (5, model.n_q))
    for a, b in zip(geometry.lengths_and_moment_arms(model, q), geometry.lengths_and_moment_arms(again, q)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dyn.dynamics_terms(model, q, 0 * q).mass, dyn.dynamics_terms(again, q, 0 * q).mass)


def test_rhythm_export_keeps_geometry_actuators_and_comments(osim, models_dir, tmp_path):
    from osim_emb.rhythm.rhythms import apply
    src = models_dir / "mobl_arms_holzbaur.osim"
    model = load_osim(src)
    new = apply(model, "degroot2001")
    out = tmp_path / "mobl_rhythm.osim"
    write_osim(new, out)
    text, source = out.read_text(), src.read_text()
    assert text.count(".vtp") == source.count(".vtp") > 200  # every mesh reference stays
    assert text.count("<!--") == source.count("<!--")
    before, _ = component_counts(osim, src)
    after, m = component_counts(osim, out)
    assert after == before  # same components; only coupler functions changed
    assert load_osim(out) == new


def test_moving_points_as_bodies_and_locked_coordinates_are_edits(osim, models_dir, tmp_path, caplog):
    from osim_emb.io import read_osim
    src = models_dir / "mobl_arms_holzbaur.osim"
    model = load_osim(src)
    with caplog.at_level(logging.WARNING):
        write_osim(moving_points_as_bodies(model.extras["document"]), tmp_path / "mvp.osim")
        doc = read_osim(src)
        for c in doc.coordinates:
            if c.name in ("deviation", "flexion"):
                c.locked = True
        write_osim(doc, tmp_path / "locked.osim")
    assert not caplog.records  # both written by editing the source, nothing regenerated
    before, _ = component_counts(osim, src)
    mvp, _ = component_counts(osim, tmp_path / "mvp.osim")
    assert mvp["Body"] > before["Body"] and mvp["Mesh"] == before["Mesh"]
    locked = load_osim(tmp_path / "locked.osim")
    assert "deviation" not in locked.coordinate_names and "flexion" not in locked.coordinate_names


def test_json_model_keeps_its_document(osim, models_dir, tmp_path):
    from osim_emb.rhythm.rhythms import apply
    model = load_osim(models_dir / "mobl_arms_holzbaur.osim")
    save_model(model, tmp_path / "mobl.emb.json")
    back = load_model(tmp_path / "mobl.emb.json")
    assert back == model
    write_osim(back, tmp_path / "from_json.osim")
    assert (tmp_path / "from_json.osim").read_text().count(".vtp") > 200
    assert load_osim(tmp_path / "from_json.osim") == model
    assert apply(back, "degroot2001") == apply(model, "degroot2001")


def test_moment_arms_study_takes_a_json_model(osim, models_dir, tmp_path):
    from osim_emb.opensim.moment_arms import run_moment_arm_study
    model = load_osim(models_dir / "arm26.osim")
    save_model(model, tmp_path / "arm26.emb.json")
    res = run_moment_arm_study(str(tmp_path / "arm26.emb.json"), ["r_elbow_flex"], step_deg=30.0,
                               references=["computeMomentArm"], out_dir=tmp_path / "out", progress=False)
    assert res is not None
