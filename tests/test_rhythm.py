"""Two-coordinate shoulder rhythm (issue 5): replacing the SIMM couplers, export to .osim, OpenSim agreement."""

import numpy as np
import pytest

from osim_emb.core import kinematics as kin
from osim_emb.rhythm import rhythms as rh
from osim_emb.cli.main import main
from osim_emb.io import load_osim
from osim_emb.io.osim_writer import write_osim
from osim_emb.paths.geometry import lengths_and_moment_arms


@pytest.fixture(scope="module")
def mobl(models_dir):
    return load_osim(models_dir / "mobl_arms_holzbaur.osim")


@pytest.fixture(scope="module")
def mobl_nowrap(models_dir):
    return load_osim(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim")


def _q(model, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = model.coordinate_ranges.T
    return rng.uniform(lo, hi, (n, model.n_q))


def test_holzbaur_couplers_are_the_documented_slopes(mobl):
    z = np.zeros((1, mobl.n_q))
    k = mobl.coordinate_index("shoulder_elv")
    for dep, slope in [("sternoclavicular_r2", -0.242), ("sternoclavicular_r3", 0.1025),
                       ("acromioclavicular_r1", 0.178), ("acromioclavicular_r2", -0.049),
                       ("acromioclavicular_r3", 0.396)]:
        g = mobl.dependent_coordinate(dep).function.evaluate(z).gradient[0, k]
        assert g == pytest.approx(slope, abs=6e-5)
        for m in rh.HOLZBAUR_MIRRORS[dep]:
            assert mobl.dependent_coordinate(m).function.evaluate(z).gradient[0, k] == pytest.approx(-g, abs=1e-15)


def test_zero_plane_of_elevation_slopes_reproduce_the_model_exactly(mobl):
    zero = rh.builtin_rhythm("degroot2001").with_zero_slopes("elv_angle")
    assert rh.apply(mobl, zero) == mobl


def test_two_coordinate_couplers_with_zero_hy_reproduce_kinematics_and_moment_arms(mobl_nowrap):
    """The same rhythm written as two-input LinearFunction couplers (a different code path) gives the same
    body poses and moment arms to round-off."""
    two = rh.apply(mobl_nowrap, rh.builtin_rhythm("holzbaur2005"))
    assert [len(c.independents) for c in two.extras["document"].couplers if c.dependent.startswith("stern")] == [2, 2]
    q = _q(mobl_nowrap, 20, 1)
    a = kin.body_transforms(mobl_nowrap, kin.forward_kinematics(mobl_nowrap, q, 0))
    b = kin.body_transforms(two, kin.forward_kinematics(two, q, 0))
    np.testing.assert_allclose(b, a, atol=1e-6)  # the published slopes are rounded to 6 digits
    _, r1 = lengths_and_moment_arms(mobl_nowrap, q, wrapping=False)
    _, r2 = lengths_and_moment_arms(two, q, wrapping=False)
    np.testing.assert_allclose(r2, r1, atol=1e-6)


def test_degroot_rhythm_has_both_slopes_and_mirrors(mobl):
    m2 = rh.apply(mobl, "degroot2001")
    z = np.zeros((1, m2.n_q))
    ie, iz = m2.coordinate_index("elv_angle"), m2.coordinate_index("shoulder_elv")
    g0 = mobl.dependent_coordinate("acromioclavicular_r3").function.evaluate(z).gradient[0]
    g = m2.dependent_coordinate("acromioclavicular_r3").function.evaluate(z).gradient[0]
    assert g[ie] == pytest.approx(-0.079) and g[iz] == pytest.approx(g0[iz], abs=1e-15)
    gm = m2.dependent_coordinate("unrothum_r3").function.evaluate(z).gradient[0]
    np.testing.assert_allclose(gm, -g, atol=1e-15)
    reg = rh.apply(mobl, "degroot2001-regression")
    g = reg.dependent_coordinate("sternoclavicular_r3").function.evaluate(z).gradient[0]
    assert (g[ie], g[iz]) == pytest.approx((-0.046, 0.123))


def test_export_roundtrip_and_opensim_loads_and_assembles(osim, mobl, tmp_path):
    from osim_emb.opensim.bridge import OpenSimReference
    m2 = rh.apply(mobl, "degroot2001")
    out = tmp_path / "mobl_degroot.osim"
    write_osim(m2, out)
    again = load_osim(out)
    assert again == m2
    text = out.read_text()
    assert "<independent_coordinate_names>elv_angle shoulder_elv</independent_coordinate_names>" in text
    ref = OpenSimReference(str(out), again)
    ref.model_os.assemble(ref.state)
    assert np.abs(ref.state.getQErr().to_numpy()).max() < 1e-10
    q = _q(m2, 30, 3)
    bt = kin.body_transforms(m2, kin.forward_kinematics(m2, q, 0))
    worst = 0.0
    for n in range(len(q)):
        ref.set_configuration(q[n])
        for k, b in enumerate(m2.bodies):
            if ref.model_os.getBodySet().contains(b.name):
                worst = max(worst, np.abs(ref.body_transform(b.name) - bt[n, k]).max())
    assert worst < 1e-10


def test_rhythm_command_writes_model_and_variant(models_dir, tmp_path):
    out = tmp_path / "new.osim"
    assert main(["rhythm", str(models_dir / "mobl_arms_holzbaur_nowrap_variant.osim"), "--rhythm", "degroot2001",
                 "-o", str(out)]) == 0
    assert out.exists() and (tmp_path / "new_mvp.osim").exists()
    assert load_osim(out).n_q == 5


def test_user_table_rhythm(tmp_path, mobl_nowrap):
    r = rh.builtin_rhythm("degroot2001-regression")
    path = tmp_path / "my_rhythm.csv"
    path.write_text(r.to_table())
    back = rh.load_rhythm(path)
    assert back.inputs == r.inputs and [t.dependent for t in back.terms] == [t.dependent for t in r.terms]
    assert all(a.function == b.function and a.mirrors == b.mirrors for a, b in zip(back.terms, r.terms))
    assert rh.apply(mobl_nowrap, back) == rh.apply(mobl_nowrap, r)
    bad = tmp_path / "bad.csv"
    bad.write_text("dependent,mirrors,mode,elv_angle,no_such_coordinate,intercept\nsternoclavicular_r2,unrotscap_r2,replace,1,1,0\n")
    with pytest.raises(rh.RhythmError, match="no_such_coordinate"):
        rh.apply(mobl_nowrap, rh.load_rhythm(bad))


def test_moment_arms_equal_minus_dL_dq_of_opensim_with_two_coordinate_couplers(osim, mobl_nowrap, tmp_path):
    """Our R is the partial derivative -dL/dq; OpenSim's getLength on the exported file agrees to FD precision,
    while computeMomentArm departs from it with two-coordinate couplers (the notes' DELT1 example)."""
    from osim_emb.opensim.bridge import OpenSimReference
    m2 = rh.apply(mobl_nowrap, "degroot2001")
    out = tmp_path / "m2.osim"
    write_osim(m2, out)
    ref = OpenSimReference(str(out), m2)
    q = m2.default_q.copy()
    q[m2.coordinate_index("shoulder_elv")] = np.radians(60)
    q[m2.coordinate_index("elv_angle")] = np.radians(40)
    _, r = lengths_and_moment_arms(m2, q[None], wrapping=False)
    names = [mu.name for mu in m2.muscles]
    h = 1e-5
    worst = 0.0
    for k, c in enumerate(m2.coordinate_names[:3]):
        dq = np.zeros(m2.n_q)
        dq[k] = h
        ref.set_configuration(q + dq)
        lp = np.array([ref.muscle_length(n) for n in names])
        ref.set_configuration(q - dq)
        lm = np.array([ref.muscle_length(n) for n in names])
        worst = max(worst, np.abs(-(lp - lm) / (2 * h) - r[0, k]).max())
    assert worst < 1e-7
    ref.set_configuration(q)
    d1 = names.index("DELT1")
    k = m2.coordinate_index("shoulder_elv")
    cma = ref.moment_arm("DELT1", "shoulder_elv")
    assert abs(cma - r[0, k, d1]) > 1e-4  # OpenSim's coupling projection moves elv_angle too


def test_rhythm_on_a_model_without_its_coordinates_is_refused_first(models_dir, tmp_path, capsys):
    """arm26 has no elv_angle: one error line, not first a warning about the rhythm's pole motion."""
    code = main(["rhythm", str(models_dir / "arm26.osim"), "-o", str(tmp_path / "x.osim")])
    err = capsys.readouterr().err
    assert code == 2 and "uses coordinate 'elv_angle', which model 'arm26' does not have" in err
    assert "WARNING" not in err and not (tmp_path / "x.osim").exists()
