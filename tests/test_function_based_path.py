"""FunctionBasedPath import (issue 13): L, R and dL/dt equal OpenSim 4.6's getLength, computeMomentArm and
getLengtheningSpeed on models built here with the OpenSim API; malformed paths fail with a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.io import load_osim
from osim_emb.io.errors import OsimImportError
from osim_emb.paths.geometry import lengthening_speeds
from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths

TOL = 1e-8


def _two_link_model(osim, paths):
    """Ground - b1 - b2 by pin joints q1, q2 and a slider s3 on b2; ``paths(m)`` adds the forces."""
    m = osim.Model()
    m.setName("fbp_test")
    b1 = osim.Body("b1", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    b2 = osim.Body("b2", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    b3 = osim.Body("b3", 0.5, osim.Vec3(0), osim.Inertia(0.05))
    for b in (b1, b2, b3):
        m.addBody(b)
    j1 = osim.PinJoint("j1", m.getGround(), osim.Vec3(0), osim.Vec3(0), b1, osim.Vec3(0, 0.5, 0), osim.Vec3(0))
    j2 = osim.PinJoint("j2", b1, osim.Vec3(0, -0.5, 0), osim.Vec3(0), b2, osim.Vec3(0, 0.5, 0), osim.Vec3(0))
    j3 = osim.SliderJoint("j3", b2, osim.Vec3(0, -0.3, 0), osim.Vec3(0), b3, osim.Vec3(0), osim.Vec3(0))
    for j, name in ((j1, "q1"), (j2, "q2"), (j3, "s3")):
        m.addJoint(j)
        j.updCoordinate().setName(name)
        j.updCoordinate().setRangeMin(-2.0)
        j.updCoordinate().setRangeMax(2.0)
    paths(m)
    m.finalizeConnections()
    return m


def _mvp(osim, dimension, order, seed):
    from math import comb
    c = np.random.default_rng(seed).uniform(-0.05, 0.05, comb(dimension + order, order))
    c[0] = 0.3
    return osim.MultivariatePolynomialFunction(osim.Vector(c.tolist()), dimension, order)


def _add_paths(osim):
    def add(m):
        # 1: length function only, coordinates in reverse model order (OpenSim derives R and speed)
        mus = osim.Millard2012EquilibriumMuscle("fb_length", 100, 0.1, 0.2, 0.0)
        p = osim.FunctionBasedPath()
        p.setCoordinatePaths(["/jointset/j3/s3", "/jointset/j1/q1"])
        p.setLengthFunction(_mvp(osim, 2, 4, 1))
        mus.set_path(p)
        m.addForce(mus)
        # 2: explicit moment-arm and lengthening-speed functions over three coordinates
        act = osim.PathActuator()
        act.setName("fb_full")
        p = osim.FunctionBasedPath()
        p.setCoordinatePaths(["/jointset/j1/q1", "/jointset/j2/q2", "/jointset/j3/s3"])
        p.setLengthFunction(_mvp(osim, 3, 3, 2))
        for k in range(3):
            p.appendMomentArmFunction(_mvp(osim, 3, 2, 10 + k))
        p.setLengtheningSpeedFunction(_mvp(osim, 6, 2, 20))
        act.set_path(p)
        m.addForce(act)
        # 3: an ordinary GeometryPath beside them
        g = osim.Millard2012EquilibriumMuscle("geometric", 100, 0.1, 0.2, 0.0)
        g.addNewPathPoint("o", m.getBodySet().get("b1"), osim.Vec3(0.05, 0.2, 0))
        g.addNewPathPoint("i", m.getBodySet().get("b3"), osim.Vec3(0.05, -0.1, 0))
        m.addForce(g)
    return add


@pytest.fixture(scope="module")
def fbp_model(osim, tmp_path_factory):
    path = tmp_path_factory.mktemp("fbp") / "fbp_test.osim"
    _two_link_model(osim, _add_paths(osim)).printToXML(str(path))
    return path


def _opensim_values(osim, path, q, qdot):
    m = osim.Model(str(path))
    s = m.initSystem()
    coords = [m.getCoordinateSet().get(n) for n in ("q1", "q2", "s3")]
    names = ["fb_length", "fb_full", "geometric"]
    lengths, arms, speeds = [], [], []
    for qn, un in zip(q, qdot):
        for c, v, u in zip(coords, qn, un):
            c.setValue(s, v, False)
            c.setSpeedValue(s, u)
        m.realizeVelocity(s)
        row_l, row_r, row_s = [], [], []
        for name in names:
            pth = osim.PathActuator.safeDownCast(m.getForceSet().get(name)).getPath()
            row_l.append(pth.getLength(s))
            row_r.append([pth.computeMomentArm(s, c) for c in coords])
            row_s.append(pth.getLengtheningSpeed(s))
        lengths.append(row_l)
        arms.append(np.array(row_r).T)
        speeds.append(row_s)
    return np.array(lengths), np.array(arms), np.array(speeds)


@pytest.mark.opensim
def test_function_based_paths_equal_opensim(osim, fbp_model):
    model = load_osim(fbp_model)
    assert [m.name for m in model.muscles] == ["fb_length", "fb_full", "geometric"]
    rng = np.random.default_rng(5)
    q = rng.uniform(-1.5, 1.5, (25, 3))
    qdot = rng.uniform(-3, 3, (25, 3))
    ref_l, ref_r, ref_s = _opensim_values(osim, fbp_model, q, qdot)
    lengths, arms = lengths_and_moment_arms(model, q)
    assert np.abs(lengths - ref_l).max() < TOL
    assert np.abs(arms - ref_r).max() < TOL
    assert np.abs(muscle_lengths(model, q) - ref_l).max() < TOL
    assert np.abs(lengthening_speeds(model, q, qdot) - ref_s).max() < TOL
    # a subset, in another order
    l2, r2 = lengths_and_moment_arms(model, q, ["geometric", "fb_length"])
    assert np.abs(l2 - ref_l[:, [2, 0]]).max() < TOL and np.abs(r2 - ref_r[:, :, [2, 0]]).max() < TOL


@pytest.mark.opensim
def test_moment_arm_is_minus_gradient_of_length(fbp_model):
    """Without moment-arm functions, R = -dL/dq (central differences)."""
    model = load_osim(fbp_model)
    q = np.random.default_rng(2).uniform(-1, 1, (6, 3))
    _, r = lengths_and_moment_arms(model, q, ["fb_length"])
    h = 1e-6
    for k in range(3):
        dq = np.zeros(3)
        dq[k] = h
        fd = (muscle_lengths(model, q + dq, ["fb_length"]) - muscle_lengths(model, q - dq, ["fb_length"])) / (2 * h)
        assert np.abs(-fd[:, 0] - r[:, k, 0]).max() < 1e-8


@pytest.mark.opensim
def test_written_model_keeps_function_based_paths(osim, fbp_model, tmp_path):
    from osim_emb.io.osim_writer import write_osim
    model = load_osim(fbp_model)
    out = tmp_path / "again.osim"
    write_osim(model, out)
    again = load_osim(out)
    q = np.random.default_rng(3).uniform(-1, 1, (5, 3))
    l1, r1 = lengths_and_moment_arms(model, q)
    l2, r2 = lengths_and_moment_arms(again, q)
    assert np.array_equal(l1, l2) and np.array_equal(r1, r2)
    osim.Model(str(out)).initSystem()  # OpenSim loads it


_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="m">
<Ground name="ground"/>
<BodySet name="bodyset"><objects><Body name="b1"><mass>1</mass><mass_center>0 0 0</mass_center>
<inertia>0.1 0.1 0.1 0 0 0</inertia></Body></objects></BodySet>
<JointSet name="jointset"><objects><PinJoint name="j1"><socket_parent_frame>ground_offset</socket_parent_frame>
<socket_child_frame>b1_offset</socket_child_frame>
<coordinates><Coordinate name="q1"><range>-2 2</range></Coordinate></coordinates>
<frames><PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="b1_offset"><socket_parent>/bodyset/b1</socket_parent></PhysicalOffsetFrame></frames>
</PinJoint></objects></JointSet>
<ForceSet name="forceset"><objects><PathActuator name="act"><FunctionBasedPath name="path">
<coordinate_paths>{paths}</coordinate_paths>
<length_function><MultivariatePolynomialFunction><coefficients>{coef}</coefficients>
<dimension>{dim}</dimension><order>1</order></MultivariatePolynomialFunction></length_function>
</FunctionBasedPath></PathActuator></objects></ForceSet>
</Model></OpenSimDocument>"""


def _load_string(**kw):
    from osim_emb.io.convert import document_to_model
    from osim_emb.io.osim_reader import read_osim_string
    return document_to_model(read_osim_string(_XML.format(**kw)))


def test_function_based_path_from_xml_string():
    model = _load_string(paths="/jointset/j1/q1", coef="0.3 -0.02", dim=1)
    q = np.array([[0.5], [-1.0]])
    lengths, arms = lengths_and_moment_arms(model, q)
    assert np.allclose(lengths[:, 0], 0.3 - 0.02 * q[:, 0], atol=1e-15)
    assert np.allclose(arms[:, 0, 0], 0.02, atol=1e-15)
    from osim_emb.paths.geometry import path_states
    with pytest.raises(ValueError, match="unit 'act' has no path points"):
        path_states(model, q)


@pytest.mark.parametrize("kw, message", [
    (dict(paths="/jointset/j1/nope", coef="0.3 -0.02", dim=1), "coordinate '/jointset/j1/nope', which does not exist"),
    (dict(paths="/jointset/j1/q1", coef="0.3 -0.02 0.1", dim=2), "takes 2 inputs"),
    (dict(paths="", coef="0.3 -0.02", dim=1), "at least one coordinate"),
    (dict(paths="/jointset/j1/q1 /jointset/j1/q1", coef="0.3 -0.02 0.1", dim=2), "more than once"),
])
def test_bad_function_based_paths_are_rejected(kw, message):
    with pytest.raises(OsimImportError, match=message):
        _load_string(**kw)


def test_json_export_refuses_function_based_paths(tmp_path):
    from osim_emb.io.model_json import save_model
    model = _load_string(paths="/jointset/j1/q1", coef="0.3 -0.02", dim=1)
    with pytest.raises(ValueError, match="unit 'act' has a FunctionBasedPath"):
        save_model(model, tmp_path / "m.emb.json")
    assert not (tmp_path / "m.emb.json").exists()


def test_lengthening_speeds_are_the_time_derivative_of_the_lengths():
    """Without wrap objects a path is smooth: dL/dt at (q, qdot) equals the central difference of L along qdot
    (an independent route: lengths only)."""
    import osim_emb as oe
    model = oe.load_builtin()
    rng = np.random.default_rng(5)
    q = oe.degrees_to_q(model, rng.uniform([10, 30, -20], [60, 100, 20], size=(6, 3)))
    qdot = rng.normal(size=q.shape)
    h = 1e-6
    fd = (oe.muscle_lengths(model, q + h * qdot, wrapping=False)
          - oe.muscle_lengths(model, q - h * qdot, wrapping=False)) / (2 * h)
    assert np.abs(oe.lengthening_speeds(model, q, qdot, wrapping=False) - fd).max() < 1e-8


def test_muscle_driven_simulation_with_a_function_based_path_equals_opensim(osim, fbp_model, caplog):
    """A Millard muscle on a FunctionBasedPath beside one on a GeometryPath, driven for 0.05 s, against OpenSim's
    Manager; the function-based muscle is simulated (not reported as left out), the PathActuator is left out
    (no control: no force, as in OpenSim) and said so."""
    import logging
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import ExcitationSpec, simulate_muscles
    model = load_osim(str(fbp_model))
    times = np.linspace(0.0, 0.05, 6)
    exc = {"fb_length": ExcitationSpec.parse("0.6"), "geometric": ExcitationSpec.parse("sine:0.3:20:0:0.4")}
    with caplog.at_level(logging.WARNING):
        ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12)
    assert "fb_length" not in caplog.text
    assert "leaves out 1 PathActuator (fb_full)" in caplog.text
    ref = opensim_muscle_simulation(fbp_model, times, exc, accuracy=1e-9)
    d = largest_differences(ours, ref)
    assert d["q"] < 1e-7
    assert d["fiber_length"] < 1e-8
    assert np.ptp(ours["fb_length_fiber_length"]) > 1e-4  # the function-based muscle does move
