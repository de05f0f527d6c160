"""The moment-arm harness: OpenSim agreement, causes of differences, sweeps, tables, .sto files, motions."""

import types

import numpy as np
import pandas as pd
import pytest

from osim_emb.io import load_osim
from osim_emb.opensim.moment_arms import discontinuities, make_sweeps, run_moment_arm_study


@pytest.mark.parametrize("name,sweep,limits", [
    ("arm26.osim", ["r_shoulder_elev", "r_elbow_flex"], {"computeMomentArm": 1e-8, "computeMomentArm_mvp": 1e-8}),
    ("leg6dof9musc.osim", ["pelvis_tilt", "pelvis_tx", "hip_flexion_r", "knee_angle_r", "ankle_angle_r"],
     {"computeMomentArm": 1e-8, "computeMomentArm_mvp": 1e-8, "minus_dL_dq": 1e-7}),
])
def test_harness_against_opensim(osim, models_dir, tmp_path, name, sweep, limits):
    from osim_emb.report.comparisons import compare_with_opensim
    res = compare_with_opensim(str(models_dir / name), sweep, step_deg=15.0, out_dir=tmp_path, formats=("png",),
                               progress=False, workers=1, cache_dir=False)
    s = res["summary"]
    for ref, lim in limits.items():
        assert s[s.reference == ref].max_abs_difference_m.max() < lim, ref
    assert s.unexplained_points.sum() == 0  # every difference above tolerance has a cause
    assert (tmp_path / "package_moment_arms.csv.gz").exists() and (tmp_path / "error_heatmap_computeMomentArm.png").exists()
    pkg = pd.read_csv(tmp_path / "package_moment_arms.csv.gz")
    model = res["model"]
    for c in model.coordinates:  # every coordinate's value on every row, with its unit
        assert (f"{c.name}_deg" if c.motion_type == "rotational" else f"{c.name}_m") in pkg.columns
    assert {"length_m", "opensim_length_m", "length_fresh_geometry_m", f"moment_arm_{sweep[0]}_m"} <= set(pkg.columns)
    for c in sweep:  # the swept value in its unit's column, the swept coordinate's own value
        rows = pkg[pkg.swept_coordinate == c]
        rotational = model.coordinates[model.coordinate_index(c)].motion_type == "rotational"
        unit, own = ("deg", rows[f"{c}_deg"]) if rotational else ("mm", 1000 * rows[f"{c}_m"])
        np.testing.assert_allclose(rows[f"sweep_value_{unit}"], own, rtol=0, atol=1e-6)  # ranges clamp: 2e-7 deg
        assert rows[f"sweep_value_{'mm' if unit == 'deg' else 'deg'}"].isna().all() if name.startswith("leg") else \
            "sweep_value_mm" not in pkg.columns
    ref = pd.read_csv(tmp_path / "opensim_computeMomentArm.csv.gz")
    assert "length_m" not in ref.columns and len(ref) == len(pkg)  # package values are not repeated
    assert np.abs(pkg.length_m - pkg.opensim_length_m).max() < 1e-12


def test_stale_cache_is_named_in_fresh_geometry_mode(osim, models_dir):
    """arm26 TRIlong (two wraps): in fresh-geometry mode computeMomentArm differs by mm -- the stale cache --
    and -dL/dq differs mostly through the stale cache inside getLength; nothing is unexplained."""
    res = run_moment_arm_study(str(models_dir / "arm26.osim"), ["r_shoulder_elev"], step_deg=5.0, muscles=["TRIlong"],
                               references=["computeMomentArm", "minus_dL_dq"], opensim_compat=False, progress=False,
                               workers=1, cache_dir=False)
    s = res["summary"].set_index("reference")
    assert s.loc["computeMomentArm", "max_abs_difference_m"] > 1e-3
    assert "stale wrap-point cache" in s.loc["computeMomentArm", "cause"]
    assert s.loc["computeMomentArm", "other_mode_max_abs_difference_m"] < 1e-12  # opensim_compat reproduces it
    assert "inside getLength" in s.loc["minus_dL_dq", "cause"]
    assert s.unexplained_points.sum() == 0


def test_sweeps_are_one_degree_over_the_range(models_dir):
    from osim_emb.io import load_osim
    m = load_osim(models_dir / "mobl_arms_holzbaur.osim")
    sw = make_sweeps(m, ["elv_angle", "shoulder_elv", "shoulder_rot"], 1.0, {"elv_angle": 0, "shoulder_elv": 0,
                                                                            "shoulder_rot": 0})
    assert [len(s.angles_deg) for s in sw] == [221, 181, 111]  # 513 configurations, as in the issue
    assert sw[1].angles_deg[0] == 0 and sw[1].angles_deg[-1] == 180
    assert np.all(sw[1].q[:, m.coordinate_index("elv_angle")] == 0)


def _fake_model(lo, hi):
    c = types.SimpleNamespace(name="knee", range=(lo, hi), motion_type="rotational")
    return types.SimpleNamespace(default_q=np.zeros(1), coordinates=[c], coordinate_index=lambda n: 0)


@pytest.mark.parametrize("lo,hi,first,last", [
    (np.radians(-120.0) + 1e-9, np.radians(10.0), -120.0, 10.0),  # gait2392's knee: -119.99999994 deg
    (np.radians(-119.5), np.radians(10.25), -119.5, 10.25),  # off-grid ends are added
])
def test_sweeps_include_both_ends(lo, hi, first, last):
    s = make_sweeps(_fake_model(lo, hi), ["knee"], 1.0)[0]
    assert s.angles_deg[0] == pytest.approx(first) and s.angles_deg[-1] == pytest.approx(last)
    assert s.q[0, 0] == pytest.approx(lo, abs=1e-12) and s.q[-1, 0] == pytest.approx(hi, abs=1e-12)
    assert np.all(np.diff(s.angles_deg) > 0) and np.diff(s.angles_deg).max() <= 1.0 + 1e-12


def test_discontinuities_find_jumps_and_kinks_only():
    x = np.radians(np.arange(0, 91.0))
    smooth = 0.2 + 0.03 * np.sin(x) + 0.01 * x ** 2
    assert not discontinuities(smooth, -0.03 * np.cos(x) - 0.02 * x).any()
    jump = smooth + 0.004 * (x > np.radians(40.5))
    m = discontinuities(jump)
    assert m[40] and m[41] and m.sum() <= 4
    kink = smooth + 0.02 * np.maximum(x - np.radians(60), 0)
    r = -np.gradient(kink, x)
    r[60:] = -(0.03 * np.cos(x[60:]) + 0.02 * x[60:] + 0.02)
    assert discontinuities(kink, r)[60]


def test_sto_tables_load_in_opensim(osim, models_dir, tmp_path):
    res = run_moment_arm_study(str(models_dir / "arm26.osim"), ["r_elbow_flex"], step_deg=10.0, references=[],
                               out_dir=tmp_path, progress=False)
    t = osim.TimeSeriesTable(str(tmp_path / "sto" / "sweep_r_elbow_flex_MomentArm_r_elbow_flex.sto"))
    assert list(t.getColumnLabels()) == [m.name for m in res["model"].muscles]
    pkg = res["tables"]["package"]
    bra = pkg[pkg.muscle == "BRA"].moment_arm_r_elbow_flex_m.to_numpy()
    assert np.allclose(t.getDependentColumn("BRA").to_numpy(), bra, rtol=1e-11, atol=1e-15)
    ln = osim.TimeSeriesTable(str(tmp_path / "sto" / "sweep_r_elbow_flex_Length.sto"))
    assert ln.getNumRows() == len(res["sweeps"][0].angles_deg)
    mot = osim.TimeSeriesTable(str(tmp_path / "sto" / "sweep_r_elbow_flex_coordinates.mot"))
    assert np.allclose(mot.getDependentColumn("r_elbow_flex").to_numpy(), res["sweeps"][0].angles_deg)


def test_motion_matches_muscle_analysis(osim, models_dir, tmp_path):
    from osim_emb.io.motion import write_motion
    from osim_emb.report.comparisons import compare_motion_with_opensim
    t = np.linspace(0.0, 0.5, 6)
    write_motion(tmp_path / "ik.mot", pd.DataFrame({"time": t, "r_shoulder_elev": 40 * np.sin(3 * t),
                                                    "r_elbow_flex": 15 + 150 * t}), in_degrees=True)
    res = compare_motion_with_opensim(str(models_dir / "arm26.osim"), str(tmp_path / "ik.mot"),
                                      out_dir=tmp_path / "out", formats=("svg",))
    s = res["summary"]
    assert len(s) == 12 and s.max_abs_difference_m.max() <= 1e-8 and s.max_abs_length_difference_m.max() <= 1e-8
    assert (tmp_path / "out" / "moment_arm_r_elbow_flex_vs_time.svg").exists()
    assert (tmp_path / "out" / "sto" / "motion_Length.sto").exists()


def test_no_muscles_is_a_clear_error(models_dir):
    with pytest.raises(ValueError, match="no musculotendon units"):
        run_moment_arm_study(str(models_dir / "double_pendulum.osim"), ["q1"], references=[])


def test_plot_command_without_references_writes_styled_curves_only(models_dir, tmp_path):
    from test_figure_style import check_written_figure
    from osim_emb.cli.main import main
    out = tmp_path / "plots"
    assert main(["plot", str(models_dir / "arm26.osim"), "--sweep", "r_elbow_flex", "--step", "10",
                 "--references", "none", "--out", str(out), "--formats", "PDF,.svg"]) == 0  # (any case, a dot)
    files = sorted(out.glob("*.svg"))
    assert [f.name for f in files] == ["moment_arm_r_elbow_flex_vs_r_elbow_flex.svg"]  # no empty heat maps
    check_written_figure(files[0].with_suffix(""), 7.2)
    with pytest.raises(SystemExit):  # plot has no tables to keep: --no-plot is not one of its options
        main(["plot", str(models_dir / "arm26.osim"), "--sweep", "r_elbow_flex", "--no-plot"])
    # nothing to draw (BRA does not cross the shoulder) is an error, not an empty folder
    assert main(["plot", str(models_dir / "arm26.osim"), "--sweep", "r_shoulder_elev", "--muscles", "BRA",
                 "--references", "none", "--out", str(tmp_path / "none"), "--formats", "png", "-q"]) == 2
    assert not (tmp_path / "none").exists()


def test_plot_with_the_mvp_reference_leaves_no_temporary_model(osim, models_dir, tmp_path, monkeypatch):
    import tempfile
    from osim_emb.cli.main import main
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert main(["plot", str(models_dir / "arm26.osim"), "--sweep", "r_elbow_flex", "--step", "40", "--references",
                 "computeMomentArm_mvp", "--workers", "1", "--no-cache", "--out", str(tmp_path / "p"),
                 "--formats", "png", "-q"]) == 0
    assert list((tmp_path / "p").glob("*.png"))
    assert not list(scratch.rglob("*_mvp.osim"))  # the _mvp model written for OpenSim is removed afterwards


def test_moment_arms_command_on_arm26_explains_every_difference(osim, models_dir, tmp_path, capsys):
    from osim_emb.cli.main import main
    assert main(["moment-arms", str(models_dir / "arm26.osim"), "--sweep", "r_shoulder_elev,r_elbow_flex",
                 "--step", "10", "--workers", "1", "--no-cache", "--no-plot", "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "opensim_compat mode" in out and "unexplained" not in out
    # a count by cause per reference; each unit only with -v (the summary table has them all)
    assert "unit(s) above tolerance about" in out and "pairs by cause:" in out and " about r_elbow_flex: max " not in out
    assert main(["moment-arms", str(models_dir / "arm26.osim"), "--sweep", "r_shoulder_elev,r_elbow_flex",
                 "--step", "10", "--workers", "1", "--no-cache", "--no-plot", "-v", "--out", str(tmp_path / "v")]) == 0
    assert " about r_elbow_flex: max " in capsys.readouterr().out


def test_opensim_values_are_cached_by_model_sweep_and_version(osim, models_dir, tmp_path):
    kw = dict(step_deg=30.0, references=["computeMomentArm", "minus_dL_dq"], progress=False, workers=1,
              cache_dir=tmp_path / "cache")
    first = run_moment_arm_study(str(models_dir / "arm26.osim"), ["r_elbow_flex"], **kw)
    again = run_moment_arm_study(str(models_dir / "arm26.osim"), ["r_elbow_flex"], **kw)
    assert not any(first["cached"].values()) and all(again["cached"].values())
    pd.testing.assert_frame_equal(first["tables"]["computeMomentArm"], again["tables"]["computeMomentArm"])
    other = run_moment_arm_study(str(models_dir / "arm26.osim"), ["r_elbow_flex"], **{**kw, "step_deg": 20.0})
    assert not any(other["cached"].values())  # another sweep is another key


def test_harness_draws_no_figures_and_says_where_they_are_drawn(tmp_path):
    """The harness (opensim layer) writes tables only; asking it for figures names the report-layer functions."""
    from osim_emb.io.builtin_models import builtin_model_path
    with pytest.raises(TypeError, match="compare_with_opensim"):
        run_moment_arm_study(str(builtin_model_path()), ["shoulder_elv"], references=(), plot=True)
    res = run_moment_arm_study(str(builtin_model_path()), ["shoulder_elv"], step_deg=90, muscles=["DELT1"],
                               references=(), out_dir=tmp_path, progress=False)
    assert res["figures"] == [] and (tmp_path / "package_moment_arms.csv.gz").exists()
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.pdf"))


def test_minus_dl_dq_differences_within_the_finite_difference_noise_are_named():
    """Two finite differences over h of lengths agreeing to eps agree to 4 eps / h only (2 eps / h central):
    such a difference is 'finite_difference_noise', a larger one stays 'unexplained'."""
    from osim_emb.opensim.moment_arms import FD_STEP, _classify
    n = 7
    fd = np.full((n, 1, 1), 0.0622025)
    os_vals = fd - 1.03e-7  # OpenSim's -dL/dq, 1.03e-7 m off (the ECRB case of docs/moment_arms.md)
    pkg = {"fd": fd, "fd_fresh": fd.copy(), "fd_wide": fd.copy()}
    diff = fd - os_vals
    args = ("minus_dL_dq", diff, diff, pkg, fd, os_vals, np.zeros(diff.shape, bool),
            {"m": {"same_body": [], "projection": []}}, ["m"], ["q"], 1e-7, True)
    eps = 1.3e-13  # lengths agree to 1.3e-13 m
    assert set(_classify(*args, np.array([2 * eps / FD_STEP])).ravel()) == {"finite_difference_noise"}
    assert set(_classify(*args, np.array([2e-15 / FD_STEP])).ravel()) == {"unexplained"}
    assert set(_classify(*args).ravel()) == {"unexplained"}


def _slider_through_its_anchor(osim, path, contact_mesh: str | None = None, anchor: float = 0.2):
    """A block on a slider (x in [-0.5, 0.5] m, 0.1 m steps pass x = 0.2) pulled by a PathActuator from a ground
    point at x = ``anchor``: the path has zero length there; optionally a ContactMesh (file ``contact_mesh``) in
    contact."""
    from opensim_builders import add_parts, add_path_actuator
    model = osim.Model()
    model.setName("slider")
    block = osim.Body("block", 1.0, osim.Vec3(0), osim.Inertia(0.01))
    slider = osim.SliderJoint("slide", model.getGround(), osim.Vec3(0), osim.Vec3(0), block, osim.Vec3(0),
                              osim.Vec3(0))
    slider.updCoordinate().setName("x")
    slider.updCoordinate().setRangeMin(-0.5)
    slider.updCoordinate().setRangeMax(0.5)
    add_parts(model, [block], [slider])
    add_path_actuator(osim, model, "pull", [("ground", (anchor, 0.0, 0.0)), ("block", (0.0, 0.0, 0.0))])
    add_path_actuator(osim, model, "push", [("ground", (-0.9, 0.0, 0.0)), ("block", (0.0, 0.0, 0.0))])
    if contact_mesh:
        floor = osim.ContactHalfSpace(osim.Vec3(0, -1, 0), osim.Vec3(0, 0, -1.5708), model.getGround(), "floor")
        model.addContactGeometry(floor)
        contact = osim.ElasticFoundationForce()
        contact.setName("block_floor")
        contact.addGeometry("floor")
        model.addForce(contact)
    model.finalizeConnections()
    model.printToXML(str(path))
    if contact_mesh:  # OpenSim's API refuses to build a ContactMesh whose file is missing: written in the file
        text = path.read_text()
        mesh = (f'<ContactMesh name="cube"><socket_frame>/bodyset/block</socket_frame>'
                f'<filename>{contact_mesh}</filename></ContactMesh>')
        text = text.replace("</ContactHalfSpace>", "</ContactHalfSpace>" + mesh, 1)
        text = text.replace("<geometry>floor</geometry>", "<geometry>cube floor</geometry>", 1)
        path.write_text(text)
    return path


def test_a_zero_length_path_is_said_and_does_not_poison_the_later_opensim_values(osim, tmp_path):
    """OpenSim's computeMomentArm returns NaN where a path's two ends meet and NaN for that path ever after (its
    MomentArmSolver clears its body forces with *= 0); the reference rebuilds the model after a NaN, so the
    values after it equal a fresh OpenSim model's, and the study reports the point instead of failing."""
    from osim_emb.opensim.bridge import OpenSimReference
    path = _slider_through_its_anchor(osim, tmp_path / "slider.osim")
    model = load_osim(str(path))
    ref = OpenSimReference(str(path), model)
    values = []
    for x in (0.1, 0.2, 0.3, -0.4):
        ref.set_configuration([x])
        values.append(ref.moment_arm("pull", "x"))
    assert values[0] == pytest.approx(1.0) and np.isnan(values[1])
    fresh = osim.Model(str(path))
    state = fresh.initSystem()
    for x, value in zip((0.3, -0.4), values[2:]):
        fresh.getCoordinateSet().get("x").setValue(state, x)
        expected = osim.PathActuator.safeDownCast(fresh.getForceSet().get("pull")).getGeometryPath() \
            .computeMomentArm(state, fresh.getCoordinateSet().get("x"))
        assert value == expected and np.isfinite(value)

    import io
    from osim_emb.opensim.moment_arms import print_report
    # 100 mm steps: -0.5 ... 0.5 m, through 0.2 m
    result = run_moment_arm_study(str(path), ["x"], step_mm=100.0, out_dir=None, cache_dir=False, workers=1,
                                  progress=False)
    summary = result["summary"]
    pull = summary[(summary.muscle == "pull") & (summary.reference == "computeMomentArm")].iloc[0]
    assert pull.zero_length_points == 1 and pull.max_abs_difference_m < 1e-12
    assert "the path has zero length here" in pull.cause
    text = io.StringIO()
    print_report(result, text)
    assert "1 point(s) left out where a path has zero length" in text.getvalue()
    push = summary[(summary.muscle == "push") & (summary.reference == "computeMomentArm")].iloc[0]
    assert push.zero_length_points == 0 and push.max_abs_difference_m < 1e-12


def test_a_path_whose_ends_nearly_meet_is_said_to_be_a_kink_not_a_wrap(osim, tmp_path):
    """Tug_of_War's block at its range end brings a muscle's two points within 1e-6 m: OpenSim's -dL/dq straddles
    the kink of L = |p1 - p2| there. The study names that cause (it has no wrap and no conditional point) and keeps
    the point out of the smooth statistics."""
    path = _slider_through_its_anchor(osim, tmp_path / "slider.osim", anchor=0.2 + 1e-7)
    result = run_moment_arm_study(str(path), ["x"], step_mm=100.0, out_dir=None, cache_dir=False, workers=1,
                                  progress=False)
    summary = result["summary"].set_index(["reference", "muscle"])
    pull = summary.loc[("minus_dL_dq", "pull")]
    assert pull.max_abs_difference_m > 0.5  # a one-sided difference across the kink (0.2 m is no range end)
    assert pull.unexplained_points == 0 and "nearly meet" in pull.cause and "wrap" not in pull.cause
    assert pull.max_abs_difference_smooth_m < 1e-7
    assert "nearly meet" not in str(summary.loc[("minus_dL_dq", "push")].cause)


def test_a_model_whose_contact_mesh_file_is_missing_is_compared_without_it(osim, tmp_path, capsys):
    from osim_emb.cli.main import main
    path = _slider_through_its_anchor(osim, tmp_path / "slider.osim", contact_mesh="nowhere.obj")
    with pytest.raises(Exception, match="nowhere.obj"):  # what OpenSim itself does with the file
        osim.Model(str(path)).initSystem()
    assert main(["moment-arms", str(path), "--sweep", "x", "--step-mm", "100", "--out", str(tmp_path / "out"),
                 "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert err.count("leaves out ContactMesh 'cube' (nowhere.obj not found), the contact force(s) using it "
                     "('block_floor')") == 1
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    exact = summary[summary.reference != "minus_dL_dq"]  # minus_dL_dq: finite differences, within its 1e-7 m
    assert exact.max_abs_difference_m.max() < 1e-12 and exact.zero_length_points.tolist() == [1, 0, 1, 0]
    # a translation's sweep values in their own unit's columns (tables: one unit a column)
    assert not any(c.endswith("_deg") for c in summary.columns)
    assert summary.sweep_value_of_max_mm.between(-500, 500).all()
    table = pd.read_csv(tmp_path / "out" / "package_moment_arms.csv.gz")
    assert "sweep_value_deg" not in table.columns
    np.testing.assert_allclose(table.sweep_value_mm, 1000 * table.x_m, rtol=0, atol=1e-9)
    assert sorted(table.sweep_value_mm.unique()) == pytest.approx(np.arange(-500, 501, 100))


def test_the_rebuilds_after_opensims_nan_are_limited_and_said(osim, tmp_path, monkeypatch, caplog):
    """Each rebuild reloads the file: past MAX_REBUILDS the model is kept, so a path's values after its next NaN stay
    NaN (a difference, never agreement), and that is said once."""
    from osim_emb.opensim import bridge
    monkeypatch.setattr(bridge, "MAX_REBUILDS", 1)
    path = _slider_through_its_anchor(osim, tmp_path / "slider.osim")
    ref = bridge.OpenSimReference(str(path), load_osim(str(path)))
    values = []
    with caplog.at_level("WARNING"):
        for x in (0.2, 0.3, 0.2, 0.3):  # NaN, rebuilt (1 of 1), NaN, not rebuilt
            ref.set_configuration([x])
            values.append(ref.moment_arm("pull", "x"))
    assert np.isnan(values[0]) and values[1] == pytest.approx(-1.0) and np.isnan(values[2]) and np.isnan(values[3])
    assert caplog.text.count("its model is not rebuilt again") == 1


def test_run_sweeps_a_translation_in_its_own_steps_and_units(osim, tmp_path):
    """run --step-mm: the slider swept in 100 mm steps (the report says mm, not degrees; the provenance keeps the
    options given); about a translation -dL/dq is a ratio, plotted in m/m (OpenSim's computeMomentArm: 1 and -1),
    not as a length in cm."""
    from osim_emb.cli.main import main
    path = _slider_through_its_anchor(osim, tmp_path / "slider.osim")
    out = tmp_path / "run"
    assert main(["run", str(path), "--sweep", "x", "--step-mm", "100", "--out", str(out), "--no-cache",
                 "--formats", "svg", "-q"]) == 0
    report = (out / "report.md").read_text()
    assert "x in 100-mm steps" in report and "-degree steps" not in report
    assert "--step-mm 100" in report and "--no-cache" in report and "--formats svg" in report
    svg = (out / "moment_arms" / "moment_arm_x_vs_x.svg").read_text()
    assert "moment arm about" in svg and "(m/m)" in svg and "(cm)" not in svg
    table = pd.read_csv(out / "moment_arms" / "package_moment_arms.csv.gz")
    assert sorted(table.sweep_value_mm.unique()) == pytest.approx(np.arange(-500, 501, 100))
