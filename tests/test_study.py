"""The main job (osim-emb run) on the built-in shoulder model, at a coarse step."""

import numpy as np
import pytest

from osim_emb.io.builtin_models import builtin_model_path, load_builtin
from osim_emb.cli.main import main
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


def test_main_job_validates_against_opensim(osim, tmp_path, monkeypatch):
    from osim_emb.opensim import reference_values as rv
    from osim_emb.report.study import run_main_job
    submitted = []
    real_submit = rv._submit
    monkeypatch.setattr(rv, "_submit", lambda pool, reference, *a: submitted.append(reference)
                        or real_submit(pool, reference, *a))
    res = run_main_job(None, tmp_path, step_deg=30.0, formats=("png", "svg"), progress=False, workers=2,
                       cache_dir=False)
    # OpenSim's evaluations were submitted once each, ahead of the package's work (prefetched), and collected
    assert sorted(submitted) == ["computeMomentArm_mvp", "computeMomentArm_mvp", "minus_dL_dq"] and not rv._PENDING
    assert res["length_difference"] < 1e-12
    b = res["B"]["summary"]
    assert b.max_abs_difference_m.max() < 1e-8  # closed-form R = computeMomentArm (elevation-only rhythm)
    a = res["A"]["summary"]
    mvp = a[a.reference == "computeMomentArm_mvp"]
    assert (mvp.max_abs_difference_m > 1e-5).any()  # two-coordinate couplers: OpenSim's projection departs
    assert all(r for r in mvp[mvp.max_abs_difference_m > 1e-8].cause)  # and every departure is explained
    assert a.unexplained_points.sum() == 0 and b.unexplained_points.sum() == 0
    report = (tmp_path / "report.md").read_text()
    assert "computeMomentArm_mvp" in report and "stale wrap-point cache" in report and "unexplained" not in \
        report.replace("unexplained points", "")
    assert "| --- |" in report and "![" in report and "sha256" in report
    import re
    model = load_builtin()  # where the worst differences lie: a swept value in degrees, inside its range
    at = re.findall(r"\| (\w+) = (-?[\d.]+) deg \|", report)
    assert at
    for name, value in at:
        lo, hi = np.degrees(model.coordinates[model.coordinate_index(name)].range)
        assert lo - 1e-6 <= float(value) <= hi + 1e-6, (name, value)
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") >= 3 and "<table>" in page and "src='http" not in page  # self-contained
    assert load_osim(tmp_path / "shoulder3d.osim") == load_builtin()
    assert list((tmp_path / "moment_arms").glob("moment_arm_shoulder_elv_vs_shoulder_elv*.png"))


@pytest.mark.parametrize("name", ["arm26.osim", "leg6dof9musc.osim"])
def test_run_on_any_model_without_flags(osim, models_dir, tmp_path, monkeypatch, capsys, name):
    from test_figure_style import check_written_figure
    monkeypatch.setenv("OSIM_EMB_CACHE", str(tmp_path / "cache"))
    assert main(["run", str(models_dir / name), "--out", str(tmp_path / "out"), "--step", "20", "--workers", "1",
                 "--formats", "pdf,svg,png", "--quiet"]) == 0
    out = tmp_path / "out"
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.md'}" in printed and ".partial" not in printed  # the final folder is named
    report = (out / "report.md").read_text()
    assert "unexplained points" in report and "model sha256" in report
    assert "in 20-degree steps over their whole ranges" in report  # the step the command was given
    figs = sorted((out / "moment_arms").glob("moment_arm_*.svg"))
    assert figs
    for f in figs + sorted((out / "moment_arms").glob("error_heatmap_*.svg")):
        check_written_figure(f.with_suffix(""))
    assert list((out / "moment_arms" / "sto").glob("*_Length.sto"))
    import pandas as pd
    stale = pd.read_csv(out / "moment_arms" / "stale_cache_effect.csv").select_dtypes("number")
    # the stale-cache section: a table of the units that differ, or says there are none (no empty table)
    assert ("Fresh geometry minus" in report) == bool((stale.abs().to_numpy() > 0).any())
    assert ("None: the fresh-geometry and" in report) == (not (stale.abs().to_numpy() > 0).any())


def test_default_sweep_is_the_spanned_rotational_coordinates(models_dir):
    from osim_emb.report.study import default_sweep
    assert default_sweep(load_osim(models_dir / "arm26.osim")) == ["r_shoulder_elev", "r_elbow_flex"]
    leg = default_sweep(load_osim(models_dir / "leg6dof9musc.osim"))
    assert "knee_angle_r" in leg and not any(c.startswith("pelvis") for c in leg)


def test_run_command_without_arguments_uses_the_builtin(monkeypatch, tmp_path):
    called = {}

    def fake(model_path, out, **kw):
        called.update(model=model_path, out=out, **kw)
        return {}

    monkeypatch.setattr("osim_emb.report.study.run_main_job", fake)
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


def test_sweep_guess_is_the_default_sweep(models_dir):
    """OpenSim starts on the sweep guessed without the compiled path kernels: right on the shared models."""
    from osim_emb.report.study import _sweep_guess, default_sweep
    for m in (load_builtin(), load_osim(models_dir / "arm26.osim"), load_osim(models_dir / "leg6dof9musc.osim")):
        assert _sweep_guess(m) == default_sweep(m)


def test_prefetched_references_are_collected_not_repeated(osim, models_dir, tmp_path):
    from osim_emb.opensim import reference_values as rv
    from osim_emb.opensim.moment_arms import make_sweeps
    path = str(models_dir / "arm26.osim")
    m = load_osim(path)
    q = make_sweeps(m, ["r_elbow_flex"], 40.0)[0].q
    args = ([("minus_dL_dq", path)], q, m.coordinate_names, np.array([c.range for c in m.coordinates]),
            ["BIClong", "TRIlong"], ["r_elbow_flex"])
    assert rv.prefetch_references(*args, workers=2, cache_dir=tmp_path) == 1
    assert rv.prefetch_references(*args, workers=2, cache_dir=tmp_path) == 0  # already submitted
    got = rv.evaluate_references(*args, workers=2, cache_dir=tmp_path, progress=False)["minus_dL_dq"]
    assert not rv._PENDING and not got["cached"] and got["seconds"] > 0
    serial = rv.evaluate_references(*args, workers=1, cache_dir=False, progress=False)["minus_dL_dq"]
    assert np.array_equal(got["values"], serial["values"]) and np.array_equal(got["lengths"], serial["lengths"])
    assert rv.prefetch_references(*args, workers=2, cache_dir=tmp_path) == 0  # cached on disk now
    q2 = q + 0.01
    assert rv.prefetch_references(args[0], q2, *args[2:], workers=2, cache_dir=tmp_path) == 1
    rv.cancel_prefetched()
    assert not rv._PENDING
