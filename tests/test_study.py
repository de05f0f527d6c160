"""The main job (osim-emb run) on the built-in shoulder model, at a coarse step."""

import numpy as np

from osim_emb.builtin_models import builtin_model_path, load_builtin
from osim_emb.cli import main
from osim_emb.io import load_osim


def test_builtin_model_is_the_seeds_shoulder():
    m = load_builtin()
    assert m.coordinate_names == ["elv_angle", "shoulder_elv", "shoulder_rot"]
    assert len(m.muscles) == 14 and {mu.type_name for mu in m.muscles} == {"Thelen2003Muscle"}
    doc = m.extras["document"]
    two = [c for c in doc.couplers if c.independents == ["elv_angle", "shoulder_elv"]]
    assert len(two) == 10  # clavicle and scapula angles and their mirrors
    hum = m.body("humerus")
    assert hum.mass == 0.0271 * 75.0  # de Leva (1996), 75 kg male
    assert builtin_model_path().suffix == ".osim"


def test_main_job_validates_against_opensim(osim, tmp_path):
    from osim_emb.study import run_main_job
    res = run_main_job(None, tmp_path, step_deg=30.0, formats=("png",), progress=False)
    assert res["length_difference"] < 1e-12
    b = res["B"]["summary"]
    assert b.max_abs_difference.max() < 1e-8  # closed-form R = computeMomentArm (elevation-only rhythm)
    a = res["A"]["summary"]
    mvp = a[a.reference == "computeMomentArm_mvp"]
    assert (mvp.max_abs_difference > 1e-5).any()  # two-coordinate couplers: OpenSim's projection departs
    assert all(r for r in mvp[mvp.max_abs_difference > 1e-8].reason)  # and every departure is explained
    report = (tmp_path / "report.md").read_text()
    assert "computeMomentArm_mvp" in report and "stale wrap-point cache" in report
    assert load_osim(tmp_path / "shoulder3d.osim") == load_builtin()
    assert (tmp_path / "moment_arms" / "leaders_moment_arms.png").exists()


def test_run_command_without_arguments_uses_the_builtin(monkeypatch, tmp_path):
    called = {}

    def fake(model_path, out, **kw):
        called.update(model=model_path, out=out, **kw)
        return {}

    monkeypatch.setattr("osim_emb.study.run_main_job", fake)
    assert main(["run", "--out", str(tmp_path), "--step", "5", "--quiet"]) == 0
    assert called["model"] is None and called["step_deg"] == 5.0


def test_builtin_muscles_do_not_depend_on_opensims_global_defaults(osim, models_dir):
    """OpenSim registers a file's <defaults> for the whole process (MoBL has a default Thelen2003Muscle);
    the built-in model writes every Thelen property, so OpenSim reads it the same after loading MoBL."""
    osim.Model(str(models_dir / "mobl_arms_holzbaur.osim"))
    m = osim.Model(str(builtin_model_path()))
    ours = {mu.name: mu.parameters for mu in load_builtin().muscles}
    for i in range(m.getMuscles().getSize()):
        t = osim.Thelen2003Muscle.safeDownCast(m.getMuscles().get(i))
        p = ours[t.getName()]
        assert (t.get_FmaxTendonStrain(), t.get_KshapePassive(), t.get_Af(), t.get_Flen()) == \
            (p.FmaxTendonStrain, p.KshapePassive, p.Af, p.Flen)
