"""Body kinematics along a motion (simulation.body_kinematics, ``osim-emb body-kinematics``) against OpenSim's
BodyKinematics analysis, Simbody's Euler angles and central differences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from osim_emb.cli.main import main
from osim_emb.core.kinematics import body_fixed_xyz_angles
from osim_emb.io import load_osim
from osim_emb.io.motion import coordinates_from_motion, read_motion, write_motion
from osim_emb.paths.wrapping.base import euler_xyz_body_fixed
from osim_emb.simulation.body_kinematics import body_kinematics_of_motion
from osim_emb.simulation.motions import analysis_states


def _compare(ours: pd.DataFrame, theirs: pd.DataFrame) -> float:
    assert list(ours.columns) == list(theirs.columns)
    return float((ours - theirs).abs().to_numpy().max())


def test_euler_angles_are_simbodys(osim):
    """Body-fixed X-Y-Z angles of random rotations and of gimbal-locked ones (b = +-90 degrees) equal Simbody's
    convertRotationToBodyFixedXYZ."""
    rng = np.random.default_rng(3)
    angles = rng.uniform([-np.pi, -np.pi / 2, -np.pi], [np.pi, np.pi / 2, np.pi], size=(200, 3))
    angles[:4, 1] = [np.pi / 2, -np.pi / 2, np.pi / 2, -np.pi / 2]
    rotations = np.stack([euler_xyz_body_fixed(a) for a in angles])
    ours = body_fixed_xyz_angles(rotations)
    for r, mine in zip(rotations, ours):
        m = osim.Mat33()
        for i in range(3):
            for j in range(3):
                m.set(i, j, float(r[i, j]))
        theirs = osim.Rotation(m).convertRotationToBodyFixedXYZ()
        np.testing.assert_allclose(mine, [theirs.get(k) for k in range(3)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.stack([euler_xyz_body_fixed(a) for a in ours]), rotations, rtol=0, atol=1e-15)


def _states(t, coef):
    q = np.column_stack([a + b * np.sin(w * t) for a, b, w in coef])
    qd = np.column_stack([b * w * np.cos(w * t) for a, b, w in coef])
    qdd = np.column_stack([-b * w * w * np.sin(w * t) for a, b, w in coef])
    return q, qd, qdd


def test_double_pendulum_equals_opensims_body_kinematics(osim, models_dir, tmp_path):
    """Positions and velocities from OpenSim's BodyKinematics (AnalyzeTool, the same coordinates file) to round-off;
    OpenSim's accelerations are those of the model's forward dynamics at the motion's states (gravity here), not
    the motion's: given that q'' the package's accelerations equal them, given the motion's they differ."""
    from osim_emb.core.compiled import compiled_model
    from osim_emb.opensim.body_kinematics import opensim_body_kinematics
    path = models_dir / "double_pendulum.osim"
    model = load_osim(str(path))
    t = np.linspace(0.0, 1.0, 41)
    motion = tmp_path / "swing.mot"
    write_motion(motion, pd.DataFrame({"time": t, "q1": 0.1 + 0.5 * np.sin(3 * t), "q2": -0.4 + 0.8 * np.sin(5 * t)}))
    time, q, qd = coordinates_from_motion(model, *read_motion(motion))
    q, qd, qdd = analysis_states(time, q, qd)
    ref = opensim_body_kinematics(path, motion)
    ours = body_kinematics_of_motion(model, time, q, qd, qdd)
    assert _compare(ours["pos"], ref["pos"]) < 1e-12 and _compare(ours["vel"], ref["vel"]) < 1e-10
    forward = body_kinematics_of_motion(model, time, q, qd, compiled_model(model).forward(q, qd, np.zeros_like(q)))
    assert _compare(forward["acc"], ref["acc"]) < 1e-9
    assert _compare(ours["acc"], ref["acc"]) > 100.0  # deg/s^2: OpenSim's are not the motion's


@pytest.mark.parametrize("local", [False, True])
def test_leg_with_a_coupled_patella_equals_opensims(osim, models_dir, tmp_path, local):
    """leg6dof9musc (the patella's coordinate coupled to the knee's, CustomJoint translations) along a states file
    with every coordinate's value and speed: positions, orientations and velocities of every body and the model's
    centre of mass equal OpenSim's, in ground and in the bodies' frames."""
    from osim_emb.opensim.body_kinematics import opensim_body_kinematics
    from osim_emb.opensim.bridge import write_states_file
    path = models_dir / "leg6dof9musc.osim"
    model = load_osim(str(path))
    t = np.linspace(0.0, 1.0, 51)
    coef = [(0.1, 0.2, 3.0), (0.2, 0.1, 2.0), (0.9, 0.05, 4.0), (0.3, 0.4, 5.0), (-0.7, 0.5, 4.5), (0.1, 0.2, 6.0)]
    q, qd, _ = _states(t, coef)
    states = tmp_path / "states.sto"
    write_states_file(states, osim.Model(str(path)), model, t, q, qd)
    ref = opensim_body_kinematics(path, states, local=local)
    time, q2, qd2 = coordinates_from_motion(model, *read_motion(states))
    q2, qd2, qdd2 = analysis_states(time, q2, qd2)
    ours = body_kinematics_of_motion(model, time, q2, qd2, qdd2, local=local)
    # OpenSim's AnalyzeTool assembles each state against the coupler, which moves the coordinates by ~1e-9 rad
    # (pelvis_tilt by 8e-10 rad: its Oz differs by 4.5e-8 degrees; the pendulum above, unconstrained, agrees to
    # 1e-12, and OpenSim's API at the file's values below to 1e-12)
    assert _compare(ours["pos"], ref["pos"]) < 2e-7  # m, degrees (measured 6.8e-8)
    assert _compare(ours["vel"], ref["vel"]) < 2e-7  # m/s, deg/s (measured 8.7e-8)
    assert "patella_r_Oz" in ours["vel"] and "center_of_mass_Y" in ours["vel"]
    # OpenSim's API at the file's values, not assembled: every body's centre of mass and angles to round-off
    osim_model = osim.Model(str(path))
    state = osim_model.initSystem()
    states_table = read_motion(states)[0]
    for row in (0, 20, 50):
        for i in range(osim_model.getCoordinateSet().getSize()):
            c = osim_model.getCoordinateSet().get(i)
            c.setValue(state, float(states_table[c.getAbsolutePathString() + "/value"].iloc[row]), False)
        osim_model.realizePosition(state)
        for b in osim_model.getBodySet():
            com = b.findStationLocationInGround(state, b.getMassCenter())
            angles = b.getTransformInGround(state).R().convertRotationToBodyFixedXYZ()
            theirs = [com.get(k) for k in range(3)] + list(np.degrees([angles.get(k) for k in range(3)]))
            mine = ours["pos"][[f"{b.getName()}_{a}" for a in ("X", "Y", "Z", "Ox", "Oy", "Oz")]].iloc[row]
            np.testing.assert_allclose(mine.to_numpy(), theirs, rtol=0, atol=1e-12)


def test_accelerations_are_the_derivatives_of_the_velocities(models_dir):
    """Along q(t) = a + b sin(w t) with its exact q' and q'', every body's and the centre of mass's accelerations
    and angular accelerations equal central differences of the velocities (h = 1e-5 s), in ground and locally."""
    model = load_osim(str(models_dir / "leg6dof9musc.osim"))
    coef = [(0.1, 0.2, 3.0), (0.2, 0.1, 2.0), (0.9, 0.05, 4.0), (0.3, 0.4, 5.0), (-0.7, 0.5, 4.5), (0.1, 0.2, 6.0)]
    t = np.array([0.13, 0.41, 0.77])
    h = 1e-5
    for local in (False, True):
        at = body_kinematics_of_motion(model, t, *_states(t, coef), local=local)
        plus = body_kinematics_of_motion(model, t + h, *_states(t + h, coef), local=local)
        minus = body_kinematics_of_motion(model, t - h, *_states(t - h, coef), local=local)
        cols = [c for c in at["acc"].columns if c != "time"]
        if local:  # d/dt of a vector expressed in a moving frame is not its acceleration in that frame: only the
            cols = [c for c in cols if c.endswith(("_Ox", "_Oy", "_Oz"))]  # angular ones agree (w x w = 0)
            cols += [c for c in at["acc"].columns if c.startswith("center_of_mass")]
        diff = (plus["vel"][cols].to_numpy() - minus["vel"][cols].to_numpy()) / (2 * h)
        scale = np.abs(at["acc"][cols].to_numpy()).max()
        assert np.abs(diff - at["acc"][cols].to_numpy()).max() < 1e-6 * scale
    masses = {b.name: b.mass for b in model.bodies}
    pos = at["pos"]
    com = sum(masses[n] * pos[[f"{n}_X", f"{n}_Y", f"{n}_Z"]].to_numpy() for n in masses if f"{n}_X" in pos)
    np.testing.assert_allclose(pos[["center_of_mass_X", "center_of_mass_Y", "center_of_mass_Z"]].to_numpy(),
                               com / sum(masses.values()), rtol=0, atol=1e-15)


def test_body_kinematics_command(osim, models_dir, tmp_path, capsys):
    """The command writes OpenSim's three files, which OpenSim reads (its inDegrees header as the tables' units);
    --bodies picks bodies; an unknown body is refused, nothing written."""
    model_path = models_dir / "double_pendulum.osim"
    t = np.linspace(0.0, 1.0, 21)
    motion = tmp_path / "swing.mot"
    write_motion(motion, pd.DataFrame({"time": t, "q1": 10 * np.sin(3 * t), "q2": 20 * t}), in_degrees=True)
    prefix = tmp_path / "out" / "swing"
    assert main(["body-kinematics", str(model_path), str(motion), "-o", str(prefix), "--bodies", "rod2",
                 "--local"]) == 0
    files = [tmp_path / "out" / f"swing_BodyKinematics_{k}.sto" for k in ("pos_global", "vel_bodyLocal",
                                                                          "acc_bodyLocal")]
    for f in files:
        table = osim.TimeSeriesTable(str(f))
        assert list(table.getColumnLabels()) == [f"rod2_{a}" for a in ("X", "Y", "Z", "Ox", "Oy", "Oz")]
        assert table.getNumRows() == 21 and "inDegrees=yes" in f.read_text()
    assert main(["body-kinematics", str(model_path), str(motion), "-o", str(tmp_path / "bad" / "x"), "--bodies",
                 "rod3"]) == 2
    assert "no body 'rod3'" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_a_setup_file_runs_as_opensims_tool_runs_it(osim, models_dir, tmp_path, capsys):
    """``--setup``: an AnalyzeTool setup with a BodyKinematics analysis (two bodies, body-local frame, radians, a time
    range, paths relative to the setup) gives OpenSim's files, named as OpenSim names them, with its positions and
    velocities (accelerations: OpenSim's forward dynamics', docs/kinematics.md)."""
    from osim_emb.opensim.static_optimization import read_storage, run_setup
    work = tmp_path / "study"
    work.mkdir()
    (work / "pendulum.osim").write_bytes((models_dir / "double_pendulum.osim").read_bytes())
    t = np.linspace(0.0, 1.0, 41)
    write_motion(work / "swing.mot", pd.DataFrame({"time": t, "q1": 0.1 + 0.5 * np.sin(3 * t),
                                                   "q2": -0.4 + 0.8 * np.sin(5 * t)}))
    tool = osim.AnalyzeTool()
    tool.setName("trial")
    tool.setModelFilename("pendulum.osim")
    tool.setCoordinatesFileName("swing.mot")
    tool.setInitialTime(0.2)
    tool.setFinalTime(0.8)
    tool.setResultsDir("results")
    tool.setOutputPrecision(20)
    bk = osim.BodyKinematics()
    bk.setName("BK")
    names = osim.ArrayStr()
    for b in ("rod2", "center_of_mass"):
        names.append(b)
    bk.setBodiesToRecord(names)
    bk.setExpressResultsInLocalFrame(True)
    bk.setInDegrees(False)
    tool.getAnalysisSet().cloneAndAppend(bk)
    setup = work / "setup.xml"
    tool.printToXML(str(setup))
    run_setup(setup, tmp_path / "opensim")
    assert main(["body-kinematics", "--setup", str(setup)]) == 0
    capsys.readouterr()
    for key in ("pos_global", "vel_bodyLocal"):
        ours = read_storage(work / "results" / f"trial_BK_{key}.sto")
        theirs = read_storage(tmp_path / "opensim" / f"trial_BK_{key}.sto")
        keep = (theirs["time"] >= 0.2 - 1e-9) & (theirs["time"] <= 0.8 + 1e-9)
        theirs = theirs[keep].reset_index(drop=True)
        assert list(ours.columns) == list(theirs.columns) == ["time", *(f"rod2_{a}" for a in ("X", "Y", "Z", "Ox", "Oy",
                                                                                              "Oz")),
                                                              "center_of_mass_X", "center_of_mass_Y",
                                                              "center_of_mass_Z"]
        assert _compare(ours, theirs) < 1e-10
    assert "inDegrees=no" in (work / "results" / "trial_BK_pos_global.sto").read_text()


def test_a_massless_model_has_no_centre_of_mass(models_dir, tmp_path, caplog):
    """Every body massless: the bodies' kinematics as usual, the model's centre of mass NaN with a warning (OpenSim
    divides by the zero mass), not a refusal."""
    import re
    text = (models_dir / "double_pendulum.osim").read_text()
    path = tmp_path / "massless.osim"
    path.write_text(re.sub(r"<mass>[^<]*</mass>", "<mass>0</mass>", text))
    model = load_osim(str(path))
    t = np.array([0.0, 0.1])
    q = np.array([[0.1, 0.2], [0.2, 0.3]])
    with caplog.at_level("WARNING", logger="osim_emb"):
        out = body_kinematics_of_motion(model, t, q, np.ones_like(q), np.zeros_like(q))
    assert np.isnan(out["pos"]["center_of_mass_X"]).all() and np.isfinite(out["pos"]["rod2_X"]).all()
    assert "no mass" in caplog.text


def test_opensim_takes_missing_coupled_speeds_as_zero(osim, models_dir, tmp_path, capsys):
    """From a coordinates file without the coupled patella's column, OpenSim's BodyKinematics gives the patella the
    angular velocity it has with the coupled coordinate's speed 0 (OpenSim's API, to round-off), tens of deg/s from the
    coupling's, which the package reports (the other bodies agree)."""
    from osim_emb.opensim.body_kinematics import opensim_body_kinematics
    path = models_dir / "leg6dof9musc.osim"
    model = load_osim(str(path))
    t = np.linspace(0.0, 1.0, 51)
    base = [0.1, 0.2, 0.9, 0.3, -0.6, 0.1]
    columns = {"time": t, **{n: base[k] + 0.3 * np.sin(2 * np.pi * t * (1 + 0.3 * k))
                             for k, n in enumerate(model.coordinate_names)}}
    motion = tmp_path / "leg.mot"
    write_motion(motion, pd.DataFrame(columns))
    ref = opensim_body_kinematics(path, motion)
    time, q, qd = coordinates_from_motion(model, *read_motion(motion))
    q, qd, qdd = analysis_states(time, q, qd)
    ours = body_kinematics_of_motion(model, time, q, qd, qdd)
    patella = [f"patella_r_O{a}" for a in "xyz"]
    apart = np.abs(ours["vel"][patella].to_numpy() - ref["vel"][patella].to_numpy()).max()
    with capsys.disabled():
        print(f"\n[opensim] patella angular velocity, OpenSim's tool without the coupled column: {apart:.1f} deg/s off")
    assert apart > 10.0  # deg/s
    others = [c for c in ours["vel"].columns if not c.startswith(("patella", "center_of_mass"))]
    assert _compare(ours["vel"][others], ref["vel"][others]) < 1e-6
    row = 20
    osim_model = osim.Model(str(path))
    state = osim_model.initSystem()
    cs = osim_model.getCoordinateSet()
    for k, name in enumerate(model.coordinate_names):
        cs.get(name).setValue(state, float(q[row, k]), False)
        cs.get(name).setSpeedValue(state, float(qd[row, k]))
    osim_model.assemble(state)
    for i in range(cs.getSize()):
        if cs.get(i).getName() not in model.coordinate_names:
            cs.get(i).setSpeedValue(state, 0.0)
    osim_model.realizeVelocity(state)
    w = osim_model.getBodySet().get("patella_r").getVelocityInGround(state).get(0)
    np.testing.assert_allclose(ref["vel"][patella].iloc[row].to_numpy(), np.degrees([w.get(k) for k in range(3)]),
                               rtol=0, atol=1e-6)
