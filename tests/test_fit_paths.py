"""osim-emb fit-paths (issue 13): the fitted FunctionBasedPaths load in OpenSim 4.6, whose getLength and
computeMomentArm equal the fitted polynomial; a polynomial path is recovered exactly; the fit of a
geometric path is close to it in length and moment arm."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.cli.main import main as cli_main
from osim_emb.io import load_osim
from osim_emb.paths.geometry import lengths_and_moment_arms
from osim_emb.paths.path_fitting import (FitSettings, fit_paths, monomials_and_derivatives, sample_coordinates)
from osim_emb.core.functions.multivariate import MultivariatePolynomial, polynomial_exponents


def test_monomial_derivatives_match_the_polynomial_gradient():
    rng = np.random.default_rng(0)
    e = polynomial_exponents(3, 4)
    coef = rng.normal(size=len(e))
    x = rng.uniform(-1.5, 1.5, (7, 3))
    phi, dphi = monomials_and_derivatives(e, x)
    jet = MultivariatePolynomial(3, 4, coef).evaluate(x, order=1)
    assert np.allclose(phi @ coef, jet.value, atol=1e-13)
    assert np.allclose(dphi @ coef, jet.gradient, atol=1e-13)


@pytest.fixture(scope="module")
def arm_model(osim, tmp_path_factory):
    """A torso welded to the ground, two pin joints (q1 shoulder, q2 elbow), a slider that no path crosses, and three muscles with straight
    paths and a via point: one spans q1, one q2, one both."""
    m = osim.Model()
    m.setName("fit_test")
    b1 = osim.Body("upper", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    b2 = osim.Body("lower", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    b3 = osim.Body("block", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    torso = osim.Body("torso", 5.0, osim.Vec3(0), osim.Inertia(0.1))
    for b in (b1, b2, b3, torso):
        m.addBody(b)
    m.addJoint(osim.WeldJoint("weld", m.getGround(), osim.Vec3(0), osim.Vec3(0), torso, osim.Vec3(0), osim.Vec3(0)))
    j1 = osim.PinJoint("shoulder", m.getGround(), osim.Vec3(0), osim.Vec3(0), b1, osim.Vec3(0, 0.3, 0), osim.Vec3(0))
    j2 = osim.PinJoint("elbow", b1, osim.Vec3(0, -0.3, 0), osim.Vec3(0), b2, osim.Vec3(0, 0.25, 0), osim.Vec3(0))
    j3 = osim.SliderJoint("slide", m.getGround(), osim.Vec3(1, 0, 0), osim.Vec3(0), b3, osim.Vec3(0), osim.Vec3(0))
    for j, name, lo, hi in ((j1, "q1", -1.0, 1.5), (j2, "q2", 0.0, 2.2), (j3, "s", -0.1, 0.1)):
        m.addJoint(j)
        c = j.updCoordinate()
        c.setName(name)
        c.setRangeMin(lo)
        c.setRangeMax(hi)
    g = torso
    for name, pts in (("deltoid", [(g, (0.05, 0.05, 0)), (b1, (0.04, 0.1, 0)), (b1, (0.02, -0.05, 0))]),
                      ("brachialis", [(b1, (0.02, -0.1, 0)), (b2, (0.02, 0.15, 0))]),
                      ("biceps", [(g, (0.03, 0.02, 0)), (b1, (0.04, 0.0, 0)), (b2, (0.015, 0.17, 0))])):
        mus = osim.Thelen2003Muscle(name, 200, 0.1, 0.1, 0.0)
        for k, (body, p) in enumerate(pts):
            mus.addNewPathPoint(f"{name}_{k}", body, osim.Vec3(*p))
        m.addForce(mus)
    m.finalizeConnections()
    path = tmp_path_factory.mktemp("fit") / "fit_test.osim"
    m.printToXML(str(path))
    return path


@pytest.mark.opensim
def test_fit_paths_output_loads_in_opensim_and_equals_the_polynomial(osim, arm_model, tmp_path, capsys):
    out = tmp_path / "fitted.osim"
    assert cli_main(["fit-paths", str(arm_model), "-o", str(out), "--frames", "20", "--samples-per-frame", "10",
                     "--bounds=-20,20"]) == 0
    assert "3 FunctionBasedPaths" in capsys.readouterr().out
    fitted = load_osim(out)
    spans = {m.name: m.function_path.coordinates for m in fitted.muscles}
    assert spans == {"deltoid": ("q1",), "brachialis": ("q2",), "biceps": ("q1", "q2")}  # never the slider

    q = np.random.default_rng(4).uniform([-1.0, 0.0, -0.1], [1.5, 2.2, 0.1], (15, 3))
    ours_l, ours_r = lengths_and_moment_arms(fitted, q)
    m = osim.Model(str(out))
    s = m.initSystem()
    coords = [m.getCoordinateSet().get(n) for n in ("q1", "q2", "s")]
    for n in range(len(q)):
        for c, v in zip(coords, q[n]):
            c.setValue(s, v, False)
        m.realizePosition(s)
        for k, unit in enumerate(fitted.muscles):
            path = osim.PathActuator.safeDownCast(m.getForceSet().get(unit.name)).getPath()
            assert path.getConcreteClassName() == "FunctionBasedPath"
            assert abs(path.getLength(s) - ours_l[n, k]) < 1e-10
            for j, c in enumerate(coords):
                assert abs(path.computeMomentArm(s, c) - ours_r[n, j, k]) < 1e-10

    # the fit is close to the original paths where it was sampled
    original = load_osim(arm_model)
    ref_l, ref_r = lengths_and_moment_arms(original, q)
    assert np.abs(ours_l - ref_l).max() < 1e-3
    assert np.sqrt(np.mean((ours_r - ref_r) ** 2)) < 1e-3


@pytest.mark.opensim
def test_a_polynomial_path_is_recovered_exactly(osim, tmp_path):
    """Fitting a model whose path is already a polynomial of order 3 returns its coefficients."""
    from test_function_based_path import _mvp, _two_link_model

    def add(m):
        act = osim.PathActuator()
        act.setName("poly")
        p = osim.FunctionBasedPath()
        p.setCoordinatePaths(["/jointset/j1/q1", "/jointset/j2/q2"])
        p.setLengthFunction(_mvp(osim, 2, 3, 7))
        act.set_path(p)
        m.addForce(act)

    path = tmp_path / "poly.osim"
    _two_link_model(osim, add).printToXML(str(path))
    model = load_osim(path)
    frames = np.random.default_rng(1).uniform(-1, 1, (5, 3))
    fits = fit_paths(model, sample_coordinates(model, frames, 10, (-30, 30)), settings=FitSettings(3, 3))
    (fit,) = fits
    assert fit.coordinates == ["q1", "q2"]
    function = _mvp(osim, 2, 3, 7)
    coefficients = function.getCoefficients()
    truth = np.array([coefficients.get(i) for i in range(coefficients.size())])
    assert np.abs(fit.polynomial.coefficients - truth).max() < 1e-12
    assert fit.met_tolerance and fit.length_rms < 1e-14


def test_sampling_follows_polynomial_path_fitter(tmp_path):
    """Each frame, then samples within the bounds (degrees for rotations); clamped coordinates are clipped."""
    from test_function_based_path import _XML
    from osim_emb.io.convert import document_to_model
    from osim_emb.io.osim_reader import read_osim_string
    xml = _XML.format(paths="/jointset/j1/q1", coef="0.3 -0.02", dim=1).replace(
        "<range>-2 2</range>", "<range>-2 2</range><clamped>true</clamped>")
    model = document_to_model(read_osim_string(xml))
    frames = np.array([[0.0], [1.95]])
    s = sample_coordinates(model, frames, 50, (-10, 10), seed=3)
    assert s.shape == (102, 1)
    assert s[0, 0] == 0.0 and s[51, 0] == 1.95
    assert np.all(np.abs(s[1:51, 0]) <= np.radians(10))
    assert np.all((s[52:, 0] >= 1.95 - np.radians(10)) & (s[52:, 0] <= 2.0))
    assert np.any(s[52:, 0] == 2.0)  # clipped to the range


def test_outlier_filter_flags_jumps_from_the_frame():
    from osim_emb.paths.path_fitting import outlier_samples
    rng = np.random.default_rng(0)
    values = 0.3 + rng.normal(0, 1e-3, (3 * 11, 2))  # three frames, ten samples each, two columns
    values[14, 1] += 0.05  # a jump (a wrap failing, say) in the second frame's block
    flagged = outlier_samples(values, 10)
    assert flagged.tolist() == [k == 14 for k in range(33)]
    with pytest.raises(ValueError, match="not whole blocks"):
        outlier_samples(values[:-1], 10)


def test_units_above_the_tolerances_are_summarized_or_refused(models_dir, tmp_path, capsys):
    out = tmp_path / "fitted.osim"
    base = ["fit-paths", str(models_dir / "arm26.osim"), "-o", str(out), "--frames", "8", "--samples-per-frame", "4",
            "--muscles", "BRA,BIClong", "--max-order", "2", "--length-tolerance", "1e-12"]
    assert cli_main([*base, "--fail-above-tolerance"]) == 2
    err = capsys.readouterr().err
    assert "2 of 2 units above the tolerances (BRA, BIClong); nothing written (--fail-above-tolerance)" in err
    assert not out.exists()
    assert cli_main(base) == 0
    err = capsys.readouterr().err
    assert "2 of 2 units above the tolerances (BRA, BIClong): raise --max-order" in err
    assert out.exists()


@pytest.mark.opensim
def test_a_fit_around_a_trajectory_says_where_it_holds(osim, arm_model, tmp_path, caplog):
    """A trajectory that moves q2 and keeps q1 at 0: the fit has seen q1 within the sampling bounds only. The
    command says so (the coordinate, its sampled span and its range) and each unit's FunctionBasedPath records the
    box of samples it was fitted over, in a comment OpenSim reads past (the file still loads); the box is the
    samples' own extent (checked here against the degrees of the bounds)."""
    import pandas as pd
    from osim_emb.io.motion import write_motion
    motion = tmp_path / "sweep.sto"
    q2 = np.linspace(0.2, 2.0, 12)
    write_motion(motion, pd.DataFrame({"time": np.linspace(0, 1, 12), "q1": 0.0, "q2": q2, "s": 0.0}), name="sweep")
    out = tmp_path / "fitted.osim"
    with caplog.at_level("WARNING"):
        assert cli_main(["fit-paths", str(arm_model), "-o", str(out), "--trajectory", str(motion),
                         "--samples-per-frame", "10", "--bounds=-15,15"]) == 0
    text = caplog.text
    assert "hold near the sampled poses only" in text and f"of the 12 frames of {motion}" in text
    assert "q1 [" in text and "of [-57.3, 85.94]" in text  # the range of q1 in degrees
    xml = out.read_text()
    comments = [line for line in xml.splitlines() if "fitted by osim-emb fit-paths on 132 samples" in line]
    assert len(comments) == 3
    deltoid = next(c for c in comments if "q2" not in c)  # spans q1 only
    lo, hi = (float(v) for v in deltoid.split("q1 [")[1].split("]")[0].split(","))
    assert -15.0 <= lo < -14.0 and 14.0 < hi <= 15.0  # within the bounds around q1 = 0
    osim.Model(str(out)).initSystem()  # the comments do not disturb OpenSim
