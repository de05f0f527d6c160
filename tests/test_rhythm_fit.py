"""Rhythm fitted to measured kinematics (issue 14): fit, pole condition, export to OpenSim, guards, reader."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.transform import Rotation

from osim_emb.core import kinematics as kin
from osim_emb.rhythm import rhythms as rh
from osim_emb.cli.main import main
from osim_emb.io import load_osim
from osim_emb.io.osim_writer import write_osim
from osim_emb.rhythm.fit import MOBL_DEPENDENTS, fit, surface_terms

TRUE = {  # deg-free coefficients (rad/rad^k) of a known surface, one set per dependent, on surface_terms(3, 2)
    "sternoclavicular_r2": [-0.20, 0.05, 0.03, -0.02, 0.01, -0.03],
    "sternoclavicular_r3": [0.10, 0.02, -0.01, 0.0, 0.02, 0.01],
    "acromioclavicular_r1": [0.15, -0.01, 0.02, 0.01, -0.02, 0.0],
    "acromioclavicular_r2": [-0.05, 0.08, 0.0, 0.03, 0.0, -0.01],
    "acromioclavicular_r3": [0.40, -0.03, 0.01, -0.02, 0.01, 0.02],
}


def _synthetic(noise=0.0, seed=0):
    """Three studies x two shoulders, three planes and horizontal flexion, per-shoulder offsets (deg)."""
    terms = surface_terms(3, 2)
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(3):
        for sh in range(2):
            rows += [(f"#{s}", f"#{s}/{sh}", "elevation", plane, elev)
                     for plane in (0.0, 30.0, 90.0) for elev in np.arange(20.0, 141.0, 10.0)]
            rows += [(f"#{s}", f"#{s}/{sh}", "horizontal flexion", plane, 90.0) for plane in np.arange(0.0, 101.0, 10.0)]
    df = pd.DataFrame(rows, columns=["study", "shoulder", "task", "plane_of_elevation_deg", "elevation_deg"])
    p, e = np.radians(df.plane_of_elevation_deg.to_numpy()), np.radians(df.elevation_deg.to_numpy())
    shoulders = df.shoulder.unique()
    for d, c in TRUE.items():
        off = dict(zip(shoulders, rng.normal(0, 10, len(shoulders))))
        df[d] = (np.degrees(sum(ci * p ** j * e ** k for ci, (j, k) in zip(c, terms))) + df.shoulder.map(off)
                 + noise * rng.normal(size=len(df)))
    return df


def test_fit_recovers_a_known_surface():
    data = _synthetic()
    res = fit(data, degree=3, plane_degree=2, ridge=0.0)
    for d, c in TRUE.items():
        np.testing.assert_allclose(res.coefficients[d], c, atol=1e-9)
        assert res.rms_fit_deg[d] < 1e-7 and res.rms_cv_deg[d] < 1e-7
    noisy = fit(_synthetic(noise=1.0, seed=1), degree=3, plane_degree=2)
    for d in TRUE:  # the noise (1 deg) is what remains, in and out of sample
        assert 0.8 < noisy.rms_fit_deg[d] < 1.1 and 0.8 < noisy.rms_cv_deg[d] < 1.6


def test_pole_condition_and_mvp_coefficient_layout():
    res = fit(_synthetic(noise=0.5), degree=4, plane_degree=2)
    r = res.rhythm
    x = np.column_stack([np.linspace(-1.6, 2.3, 50), np.zeros(50)])
    for t in r.terms:
        jet = t.function.evaluate(x, 1)
        assert np.abs(jet.value).max() == 0.0 and np.abs(jet.gradient[:, 0]).max() == 0.0
        # exponents of OpenSim's MultivariatePolynomialFunction: only terms with the elevation are non-zero
        e = t.function.exponents
        assert np.all(t.function.coefficients[e[:, 1] == 0] == 0.0)
    assert max(rh.pole_motion(r).values()) == 0.0
    assert max(rh.pole_motion(rh.builtin_rhythm("degroot2001-regression")).values()) > 0.2  # the headline


def test_fitted_rhythm_keeps_the_scapula_still_at_the_pole(models_dir):
    m = load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")
    res = fit(_synthetic(noise=0.5), degree=3, plane_degree=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rh.RhythmDomainWarning)
        fitted = rh.apply(m, res.rhythm)
        linear = rh.apply(m, "degroot2001")
    q = np.repeat(m.default_q[None], 23, 0)
    q[:, m.coordinate_index("elv_angle")] = np.radians(np.linspace(-90, 130, 23))
    q[:, m.coordinate_index("shoulder_elv")] = 0.0
    k = [b.name for b in m.bodies].index("scapula")
    for model, still in ((fitted, True), (linear, False)):
        bt = kin.body_transforms(model, kin.forward_kinematics(model, q, 0))[:, k]
        spread = np.abs(bt - bt[0]).max()
        assert (spread < 1e-14) if still else (spread > 0.05)


def test_export_opensim_assembles_to_the_fitted_values(osim, models_dir, tmp_path):
    from osim_emb.opensim.bridge import OpenSimReference
    m = load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")
    r = fit(_synthetic(noise=0.5), degree=3, plane_degree=2).rhythm
    m2 = rh.apply(m, r, outside="ignore")
    out = tmp_path / "fitted.osim"
    write_osim(m2, out)
    assert "<MultivariatePolynomialFunction" in out.read_text()
    ref = OpenSimReference(str(out), m2, disable_forces=True)
    s = ref.state
    deps = [t.dependent for t in r.terms]
    ie, iz = m2.coordinate_index("elv_angle"), m2.coordinate_index("shoulder_elv")
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(5):
        q = m2.default_q.copy()
        q[ie], q[iz] = rng.uniform(0.0, 1.6), rng.uniform(0.2, 2.4)
        ref.set_configuration(q)
        for d in deps:  # start every dependent coordinate away from the rhythm
            ref.coords.get(d).setValue(s, 0.3, False)
        for c in ("elv_angle", "shoulder_elv"):
            ref.coords.get(c).set_is_free_to_satisfy_constraints(False)
        ref.model_os.assemble(s)
        want = r.evaluate(q[[ie, iz]][None], outside="ignore")
        for d in deps:
            worst = max(worst, abs(ref.coords.get(d).getValue(s) - want[d][0]))
        for t in r.terms:
            for mname in t.mirrors:
                worst = max(worst, abs(ref.coords.get(mname).getValue(s) + want[t.dependent][0]))
    assert worst <= 1e-8


def test_domain_guard_warns_or_refuses():
    r = fit(_synthetic(), degree=2, plane_degree=1).rhythm
    assert r.domain["shoulder_elv"] == pytest.approx((0.0, np.radians(140.0)))
    inside = np.radians([[30.0, 60.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r.evaluate(inside)
    outside = np.radians([[-60.0, 60.0]])
    with pytest.warns(rh.RhythmDomainWarning, match="elv_angle = -60.0 deg"):
        r.evaluate(outside)
    with pytest.raises(rh.RhythmError, match="outside the domain"):
        r.evaluate(outside, outside="error")
    back = rh.Rhythm.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.domain == r.domain


def test_domain_guard_on_apply(models_dir):
    m = load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")
    r = fit(_synthetic(), degree=2, plane_degree=1).rhythm  # plane data 0..100 deg; the model goes -90..130
    with pytest.warns(rh.RhythmDomainWarning, match="mobl|ranges of model"):
        rh.apply(m, r)
    with pytest.raises(rh.RhythmError, match="outside the domain"):
        rh.apply(m, r, outside="error")


def test_csv_term_without_mirror_is_refused(tmp_path, models_dir):
    p = tmp_path / "no_mirror.csv"
    p.write_text("dependent,mirrors,mode,elv_angle,shoulder_elv,intercept\nsternoclavicular_r2,,replace,0.1,-0.2,0\n")
    with pytest.raises(rh.RhythmError, match=r"no_mirror.csv, line 2.*sternoclavicular_r2.*no mirror"):
        rh.load_rhythm(p)
    p.write_text("dependent,mode,elv_angle,shoulder_elv,intercept\nsternoclavicular_r2,replace,0.1,-0.2,0\n")
    with pytest.raises(rh.RhythmError, match="no mirror"):
        rh.load_rhythm(p)
    # 'none' is accepted by the reader, but the model undoes sternoclavicular_r2 with unrotscap_r2
    p.write_text("dependent,mirrors,mode,elv_angle,shoulder_elv,intercept\nsternoclavicular_r2,none,replace,0.1,-0.2,0\n")
    r = rh.load_rhythm(p)
    m = load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")
    with pytest.raises(rh.RhythmError, match="does not name its mirror 'unrotscap_r2'"):
        rh.apply(m, r)


def test_fit_rhythm_command(tmp_path):
    data = tmp_path / "data.csv"
    _synthetic(noise=0.5).to_csv(data, index=False)
    out = tmp_path / "r.json"
    assert main(["fit-rhythm", str(data), "-o", str(out), "--degree", "3", "--figures", str(tmp_path)]) == 0
    r = rh.load_rhythm(out)
    assert [t.dependent for t in r.terms] == list(MOBL_DEPENDENTS)
    assert all(t.mirrors == MOBL_DEPENDENTS[t.dependent] for t in r.terms)
    assert (tmp_path / "r_fit.csv").exists() and (tmp_path / "r_surfaces.png").exists()
    from test_figure_style import check_written_figure
    check_written_figure(tmp_path / "r_surfaces", 7.2)  # the project's figure style, double column
    # a second run refuses to replace the figures (before any work), and replaces them with --overwrite
    (tmp_path / "r.json").unlink()
    (tmp_path / "r_fit.csv").unlink()
    assert main(["fit-rhythm", str(data), "-o", str(out), "--figures", str(tmp_path)]) == 2
    assert not out.exists()
    assert main(["fit-rhythm", str(data), "-o", str(out), "--figures", str(tmp_path), "--overwrite"]) == 0


# -- the Spartacus reader on a tiny dataset built from known ISB angles ---------------------------------------
def _fake_spartacus(root):
    base = root / "spartacus"
    (base / "dataset").mkdir(parents=True)
    (base / "dataset" / "dataset_of_datasets.csv").write_text(
        "dataset_id,dataset_authors,dataset_year,dataset_doi,scapula_correction_method,side_as_right\n"
        "#1,A et al.,2000,10.1/a,,True\n#2,B et al.,2001,10.1/b,,False\n")
    (base / "dataset" / "dataset_segment_directions.csv").write_text(
        "dataset_id,thorax_x_sense,thorax_y_sense,thorax_z_sense,scapula_x_sense,scapula_y_sense,scapula_z_sense\n"
        "#1,+posteroanterior,+inferosuperior,+mediolateral,+posteroanterior,+inferosuperior,+mediolateral\n"
        "#2,+mediolateral,+posteroanterior,+inferosuperior,+mediolateral,+posteroanterior,+inferosuperior\n")
    head = ("dataset_id,humeral_motion,thoracohumeral_angle,joint,euler_sequence,shoulder_id,side,folder,"
            "dof_1st_euler,dof_2nd_euler,dof_3rd_euler\n")
    rows = ["#1,frontal plane elevation,x',scapulothoracic,yx'z'',1,right,#1_A,a1.csv,a2.csv,a3.csv",
            "#2,sagittal plane elevation,y',scapulothoracic,zy'x'',1,left,#2_B,b1.csv,b2.csv,b3.csv"]
    (base / "dataset" / "dataset_clean_of_joint_data.csv").write_text(head + "\n".join(rows) + "\n")
    elev = np.arange(20.0, 121.0, 10.0)
    isb = np.column_stack([30 + 0.1 * elev, -0.4 * elev, -5 + 0.1 * elev])  # ST protraction, medial rot., tilt
    # study 1: ISB frames and sequence, right side
    d1 = base / "data" / "#1_A"
    d1.mkdir(parents=True)
    for k in range(3):
        np.savetxt(d1 / f"a{k + 1}.csv", np.column_stack([elev, isb[:, k]]), delimiter=",")
    # study 2: axes (x lateral, y anterior, z up), left side, sequence z-y'-x''
    b = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], float)  # columns: study axes in ISB directions
    mirror = np.diag([1.0, 1.0, -1.0])
    r_isb = Rotation.from_euler("YXZ", isb, degrees=True).as_matrix()
    r_study = b.T @ (mirror @ r_isb @ mirror) @ b
    ang = Rotation.from_matrix(r_study).as_euler("ZYX", degrees=True)
    d2 = base / "data" / "#2_B"
    d2.mkdir(parents=True)
    for k in range(3):
        np.savetxt(d2 / f"b{k + 1}.csv", np.column_stack([-elev, ang[:, k]]), delimiter=",")
    return elev, isb


def test_spartacus_reader_recovers_isb_angles(tmp_path):
    from osim_emb.rhythm.spartacus import read_spartacus
    elev, isb = _fake_spartacus(tmp_path)
    d = read_spartacus(tmp_path, step_deg=None)
    names = ["ST_protraction", "ST_medial_rotation", "ST_posterior_tilt"]
    for sid, plane in (("#1", 0.0), ("#2", 90.0)):
        s = d[d.study == sid].sort_values("elevation_deg")
        np.testing.assert_allclose(s.elevation_deg, elev)
        assert (s.plane_of_elevation_deg == plane).all()
        np.testing.assert_allclose(s[names].to_numpy(), isb, atol=1e-9)
        np.testing.assert_allclose(s.acromioclavicular_r3, -isb[:, 1], atol=1e-9)  # upward rotation positive
        np.testing.assert_allclose(s.acromioclavicular_r1, isb[:, 2], atol=1e-9)


def test_builtin_fitted_rhythm_and_rhythm_command_refusal(models_dir, tmp_path, capsys):
    r = rh.builtin_rhythm("spartacus2024")
    assert max(rh.pole_motion(r).values()) == 0.0 and set(r.domain) == {"elv_angle", "shoulder_elv"}
    assert all(isinstance(t.function, rh.fn.MultivariatePolynomial) for t in r.terms)
    src = models_dir / "mobl_arms_holzbaur_nowrap_variant.osim"
    code = main(["rhythm", str(src), "--rhythm", "spartacus2024", "--outside", "error", "-o", str(tmp_path / "x.osim")])
    assert code != 0 and "outside the domain" in capsys.readouterr().err
    assert not (tmp_path / "x.osim").exists()


def test_add_mode_polynomial_and_spline_rhythms_export(models_dir):
    """'add' of a polynomial to a linear coupler stays a polynomial (exact); a spline-surface rhythm is turned
    into polynomials over its domain with the error reported."""
    m = load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")
    poly = rh.fn.MultivariatePolynomial(2, 2, [0.0, 0.0, 0.0, 0.0, 0.05, 0.0])  # 0.05 p e
    r = rh.Rhythm("add", ("elv_angle", "shoulder_elv"),
                  (rh.RhythmTerm("acromioclavicular_r3", poly, ("unrothum_r3",), "add"),))
    m2 = rh.apply(m, r)
    f = m2.extras["document"].couplers
    c = next(c for c in f if c.dependent == "acromioclavicular_r3")
    assert isinstance(c.function, rh.fn.MultivariatePolynomial)
    x = np.random.default_rng(0).uniform(-1, 2, (20, 2))
    q = np.repeat(m.default_q[None], 20, 0)
    q[:, [m.coordinate_index("elv_angle"), m.coordinate_index("shoulder_elv")]] = x
    old = m.dependent_coordinate("acromioclavicular_r3").function.evaluate(q).value
    np.testing.assert_allclose(c.function.evaluate(x).value, old + poly.evaluate(x).value, atol=1e-15)
    grid_p, grid_e = np.linspace(0, 1.5, 7), np.linspace(0, 2.5, 9)
    z = 0.3 * grid_e[None, :] + 0.02 * np.outer(grid_p, grid_e) ** 2
    spline = rh.Rhythm("spline", ("elv_angle", "shoulder_elv"),
                       (rh.RhythmTerm("acromioclavicular_r3", rh.fn.SplineSurface(grid_p, grid_e, z),
                                      ("unrothum_r3",)),),
                       domain={"elv_angle": (0, 1.5), "shoulder_elv": (0, 2.5)})
    as_poly, err = rh.as_polynomial(spline, order=4)
    assert isinstance(as_poly.terms[0].function, rh.fn.MultivariatePolynomial)
    assert err["acromioclavicular_r3"] < 1e-10  # the spline interpolates a degree-4 polynomial


def test_the_command_line_writes_the_domain_warning_as_one_line(tmp_path, models_dir, capsys):
    """A rhythm applied outside its data (`osim-emb rhythm`): the domain warning is the command's one-line warning,
    not Python's warning format with the source line."""
    from osim_emb.cli.main import main
    r = fit(_synthetic(), degree=2, plane_degree=1).rhythm  # plane data 0..100 deg; the model goes -90..130
    path = tmp_path / "rhythm.json"
    path.write_text(json.dumps(r.to_dict()))
    assert main(["rhythm", str(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim"), "--rhythm", str(path), "-o",
                 str(tmp_path / "out.osim")]) == 0
    err = capsys.readouterr().err
    assert "osim-emb: WARNING:" in err and "outside" in err
    assert "RhythmDomainWarning" not in err and "apply(" not in err


# -- units: radians where degrees belong (audit 21, A3, A4), the pole warning on the model's range (C6) -----------
def test_fit_rhythm_refuses_radians_in_the_degree_columns(tmp_path, capsys):
    data = _synthetic(noise=0.5)
    for c in ("plane_of_elevation_deg", "elevation_deg"):
        data[c] = data[c] * np.pi / 180.0
    src = tmp_path / "radians.csv"
    data.to_csv(src, index=False)
    out = tmp_path / "r.json"
    assert main(["fit-rhythm", str(src), "-o", str(out), "--figures", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err
    assert "radians.csv" in err and "plane_of_elevation_deg" in err and "elevation_deg [0.349, 2.44]" in err  # 20...140 deg
    assert "look like radians" in err and "57.2958" in err and "--confirm-degrees" not in err
    assert not out.exists() and not (tmp_path / "r_fit.csv").exists() and not (tmp_path / "figs").exists()
    with pytest.raises(ValueError, match="cannot be confirmed"):  # no override for the inputs
        fit(data, confirm_degrees=["elevation_deg"])


def test_fit_refuses_a_radian_dependent_unless_confirmed(tmp_path, capsys):
    data = _synthetic(noise=0.0)
    data["acromioclavicular_r2"] = data["acromioclavicular_r2"] * np.pi / 180.0
    src = tmp_path / "dep.csv"
    data.to_csv(src, index=False)
    out = tmp_path / "r.json"
    assert main(["fit-rhythm", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "dep.csv" in err and "acromioclavicular_r2" in err and "--confirm-degrees acromioclavicular_r2" in err
    assert "sternoclavicular_r2" not in err and not out.exists()
    # a dependent truly in degrees that moves less than 3.2 deg (0.8 deg per rad of elevation, no offsets)
    small = _synthetic(noise=0.0)
    small["acromioclavicular_r2"] = np.degrees(0.8 * np.radians(small.elevation_deg)) / 57.29577951308232 * 1.0
    assert small["acromioclavicular_r2"].abs().max() <= 3.2
    with pytest.raises(ValueError, match="acromioclavicular_r2 .* look like radians"):
        fit(small, cross_validate=False)
    res = fit(small, confirm_degrees=["acromioclavicular_r2"], cross_validate=False, ridge=0.0)
    # d = 0.8 e (e in rad) expressed in deg = 0.8 * e_rad deg -> 0.8 / 57.2958 rad per rad of elevation
    np.testing.assert_allclose(res.coefficients["acromioclavicular_r2"], [0.8 * np.pi / 180.0, 0.0, 0.0], atol=1e-9)


def test_csv_intercept_in_degrees_is_refused(tmp_path, models_dir, capsys):
    p = tmp_path / "r_deg.csv"
    p.write_text("dependent,mirrors,mode,elv_angle,shoulder_elv,intercept\n"
                 "sternoclavicular_r3,unrotscap_r3,replace,0.0,0.1,0\n"
                 "sternoclavicular_r2,unrotscap_r2,replace,0.12,-0.242,15\n")
    with pytest.raises(rh.RhythmError, match=r"r_deg.csv, line 3, column 'intercept'.*sternoclavicular_r2.*radians"
                                             r".*15 deg would be 0\.26179"):
        rh.load_rhythm(p)
    out = tmp_path / "x.osim"
    assert main(["rhythm", str(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim"), "--rhythm", str(p),
                 "-o", str(out)]) == 2
    assert "r_deg.csv, line 3" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "x_mvp.osim").exists()
    p.write_text(p.read_text().replace(",15\n", ",0.2618\n"))  # the same in radians is accepted
    assert rh.load_rhythm(p).terms[1].function.intercept == pytest.approx(np.radians(15.0), abs=1e-4)


def test_apply_refuses_a_term_beyond_a_full_turn_on_the_model_ranges(tmp_path, models_dir, monkeypatch):
    m = load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")
    # a slope of 6.9 (0.12 deg/deg taken through degrees) over MoBL's elv_angle up to 130 deg: 6.9 * 2.2689 rad
    p = tmp_path / "r_slope.csv"
    p.write_text("dependent,mirrors,mode,elv_angle,shoulder_elv,intercept\n"
                 "sternoclavicular_r2,unrotscap_r2,replace,6.9,0.0,0\n")
    with pytest.raises(rh.RhythmError, match=r"r_slope.csv.*'sternoclavicular_r2' reaches 15\.66 rad .*full turn"):
        rh.apply(m, rh.load_rhythm(p))
    # a rhythm fitted to radians taken for degrees (the check of the data switched off) is refused by apply
    data = _synthetic(noise=0.5)
    for c in ("plane_of_elevation_deg", "elevation_deg"):
        data[c] = data[c] * np.pi / 180.0
    import osim_emb.rhythm.fit as fit_module
    monkeypatch.setattr(fit_module, "check_degree_columns", lambda *a, **k: None)
    bad = fit(data, cross_validate=False).rhythm
    with pytest.raises(rh.RhythmError, match="more than a full turn"):
        rh.apply(m, bad, outside="ignore")


def _mobl_range(path, coordinate):
    import re
    text = path.read_text()
    block = text[text.index(f'<Coordinate name="{coordinate}">'):]
    lo, hi = map(float, re.search(r"<range>\s*(\S+)\s+(\S+)\s*</range>", block).groups())
    return lo, hi


def test_pole_warning_uses_the_model_range(models_dir, tmp_path, caplog):
    src = models_dir / "mobl_arms_holzbaur_nowrap_variant.osim"
    lo, hi = _mobl_range(src, "elv_angle")  # -90...130 deg
    span = np.degrees(hi - lo)
    with caplog.at_level("WARNING", logger="osim_emb.rhythm.rhythms"):
        rh.apply(load_osim(src), "degroot2001")
    text = caplog.text
    # de Groot & Brand's plane slopes (Sy 0.140, Cy 0.120 deg/deg) times the model's range: 30.8, 26.4 deg
    assert f"acromioclavicular_r2 by {0.140 * span:.1f} deg" in text and f"sternoclavicular_r2 by {0.120 * span:.1f} deg" in text
    assert "30.8" in text and "26.4" in text and "-90.0...130.0 deg" in text
    # a model whose elv_angle range is narrower (-0.5...1.0 rad): the motion shrinks with it
    narrow = tmp_path / "narrow.osim"
    t = src.read_text()
    i = t.index('<Coordinate name="elv_angle">')
    j = t.index("<range>", i)
    k = t.index("</range>", j)
    narrow.write_text(t[:j] + "<range>-0.5 1.0</range>" + t[k + len("</range>"):])
    caplog.clear()
    with caplog.at_level("WARNING", logger="osim_emb.rhythm.rhythms"):
        rh.apply(load_osim(narrow), "degroot2001")
    assert f"acromioclavicular_r2 by {0.140 * np.degrees(1.5):.1f} deg" in caplog.text  # 12.0 deg


def test_fit_table_header_and_the_documented_fit(tmp_path):
    """RHYTHM_fit.csv names its first column; docs/rhythm.md's fit table is what the documented command prints."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    src = root / "validation" / "shoulder_rhythm" / "data" / "spartacus_derived.csv"
    out = tmp_path / "my_rhythm.json"
    assert main(["fit-rhythm", str(src), "-o", str(out), "--degree", "2", "--plane-degree", "1"]) == 0
    table = pd.read_csv(tmp_path / "my_rhythm_fit.csv")
    assert list(table.columns) == ["dependent", "n_samples", "rms_fit_deg", "rms_cv_leave_one_study_out_deg"]
    doc = (root / "docs" / "rhythm.md").read_text()
    rows = {}
    for line in doc[doc.index("| dependent | samples | RMS fit (deg)"):].splitlines()[2:7]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = (int(cells[1]), float(cells[2]), float(cells[3]))
    assert set(rows) == set(table.dependent)
    for _, r in table.iterrows():
        n, rms, cv = rows[r.dependent]
        assert n == r.n_samples and abs(rms - r.rms_fit_deg) <= 0.005 and abs(cv - r.rms_cv_leave_one_study_out_deg) <= 0.005


def test_surface_figure_hatches_the_extrapolated_planes(tmp_path, monkeypatch):
    from osim_emb.report import rhythm_figures
    data = _synthetic(noise=0.5)  # planes 0...100 deg, elevations up to 140 deg
    res = fit(data, degree=2, plane_degree=1, cross_validate=False)
    figs = []
    save = rhythm_figures.fs.save
    monkeypatch.setattr(rhythm_figures.fs, "save", lambda fig, *a, **k: figs.append(fig) or save(fig, *a, **k))
    rhythm_figures.plot_fit(res, data, tmp_path / "s", formats=("svg",))
    axes = np.array(figs[0].axes).reshape(-1, 2)
    want = {0: [(0.0, 0.0), (140.0, 180.0)], 1: [(-90.0, 0.0), (100.0, 130.0)]}  # the data's limits (synthetic)
    for row in axes:
        for col, ax in enumerate(row):
            spans = sorted((round(p.get_x(), 6), round(p.get_x() + p.get_width(), 6)) for p in ax.patches
                           if p.get_hatch() and p.get_label() == rhythm_figures.EXTRAPOLATED)
            assert spans == [s for s in want[col] if s[1] > s[0]]
    svg = (tmp_path / "s.svg").read_text()
    assert "beyond the data (extrapolated)" in svg
