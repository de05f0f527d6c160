"""`osim-emb joint-reactions` against OpenSim 4.6's JointReaction analysis (AnalyzeTool with the same forces file,
actuator files and external loads), a pin's axial moment against the actuator across it, and the refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from opensim_builders import T, add_parts, build_arm26_with_force_elements, pendulum_loads, read_sto, \
    with_forces_switched_off, write_motion_file
from osim_emb.cli.main import main

# every flag stated: OpenSim applies a 3.x file's <defaults> to its type process-wide, so a TorqueActuator left to its
# default after another test read such a file would be local in OpenSim (tests/test_static_optimization_cli.py)
LEG_ACTUATORS = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <ForceSet name="residuals">
    <objects>
      <CoordinateActuator name="FX"><coordinate>pelvis_tx</coordinate><optimal_force>100</optimal_force>
        <min_control>-1000</min_control><max_control>1000</max_control></CoordinateActuator>
      <CoordinateActuator name="FY"><coordinate>pelvis_ty</coordinate><optimal_force>100</optimal_force>
        <min_control>-1000</min_control><max_control>1000</max_control></CoordinateActuator>
      <CoordinateActuator name="MZ"><coordinate>pelvis_tilt</coordinate><optimal_force>100</optimal_force>
        <min_control>-1000</min_control><max_control>1000</max_control></CoordinateActuator>
      <PointActuator name="heel_FY"><body>calcn_r</body><point>0.05 -0.01 0.0</point><direction>0 1 0</direction>
        <force_is_global>true</force_is_global><optimal_force>50</optimal_force><min_control>-100</min_control>
        <max_control>100</max_control></PointActuator>
      <TorqueActuator name="knee_MZ"><bodyA>tibia_r</bodyA><bodyB>femur_r</bodyB><axis>0 0 1</axis>
        <torque_is_global>true</torque_is_global>
        <optimal_force>5</optimal_force><min_control>-100</min_control><max_control>100</max_control></TorqueActuator>
    </objects>
  </ForceSet>
</OpenSimDocument>
"""


def _sinusoids(names, base, amp, times):
    return pd.DataFrame({"time": times, **{n: base[k] + amp[k] * np.sin(2 * np.pi * times * (1 + 0.2 * k))
                                           for k, n in enumerate(names)}})


ARM26_MUSCLES = ["TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA"]


def _arm26_motion(models_dir, tmp_path):
    """(arm26's path, the 11 frame times, a sinusoidal motion file of its two coordinates over 1 s)."""
    from osim_emb.io.motion import write_motion
    times = np.linspace(0, 1, 11)
    motion = tmp_path / "motion.mot"
    write_motion(motion, _sinusoids(["r_shoulder_elev", "r_elbow_flex"], [0.3, 1.0], [0.2, 0.5], times), name="m")
    return models_dir / "arm26.osim", times, motion


def _compare(ours, ref):
    assert list(ours.columns) == list(ref.columns)
    np.testing.assert_allclose(ours["time"], ref["time"], atol=1e-9)
    d = np.abs(ours.to_numpy()[:, 1:] - ref.to_numpy()[:, 1:])
    return float(d.max()), float(np.abs(ref.to_numpy()[:, 1:]).max())


@pytest.mark.opensim
@pytest.mark.models
@pytest.mark.parametrize("on, frame", [("child", "ground"), ("parent", "ground"), ("child", "child"),
                                       ("parent", "parent"), ("child", "rod1")])
def test_double_pendulum_reactions_equal_opensims(osim, models_dir, tmp_path, capsys, on, frame):
    """The passive double pendulum along a motion (no forces file): every joint's reaction on the child or the
    parent, in ground, the child's, the parent's or a named body's frame, against OpenSim's JointReaction."""
    from osim_emb.io.motion import write_motion
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    path = models_dir / "double_pendulum.osim"
    motion = tmp_path / "motion.mot"
    write_motion(motion, _sinusoids(["q1", "q2"], [0.1, -0.4], [0.5, 0.8], np.linspace(0, 1, 41)), name="m")
    ref = opensim_joint_reactions(path, motion, on=[on], expressed_in=[frame])["loads"]
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "ours"), "--on", on,
                 "--in", frame]) == 0
    d, scale = _compare(read_sto(tmp_path / "ours_JointReaction_ReactionLoads.sto"), ref)
    with capsys.disabled():
        print(f"\n[agreement] double pendulum reactions on {on} in {frame} vs OpenSim's JointReaction: {d:.2e} "
              f"(of {scale:.3g} N, N m, m)")
    assert d < 1e-8 * scale


def test_a_pin_transmits_about_its_axis_only_the_actuator_torque(models_dir, tmp_path):
    """Physics, not OpenSim: a pin joint cannot carry a moment about its axis, except the mobility force applied
    across it. With reserve torques on both pins (the forces file's reserve_q1, reserve_q2) the reactions' moments
    about the pins' z axes equal those torques, at any motion; the moments about the other axes do not vanish."""
    from osim_emb.io.motion import write_motion
    path = models_dir / "double_pendulum.osim"
    motion = tmp_path / "motion.mot"
    times = np.linspace(0, 1, 21)
    write_motion(motion, _sinusoids(["q1", "q2"], [0.3, 0.2], [0.6, 0.9], times), name="m")
    torques = pd.DataFrame({"time": times, "reserve_q1": 3 * np.cos(5 * times), "reserve_q2": -1 + times ** 2})
    write_motion(tmp_path / "forces.sto", torques, name="f")
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "r"), "--forces",
                 str(tmp_path / "forces.sto"), "--in", "child"]) == 0
    loads = read_sto(tmp_path / "r_JointReaction_ReactionLoads.sto")
    np.testing.assert_allclose(loads["pin1_on_rod1_in_rod1_mz"], torques["reserve_q1"], atol=1e-10)
    np.testing.assert_allclose(loads["pin2_on_rod2_in_rod2_mz"], torques["reserve_q2"], atol=1e-10)
    assert np.abs(loads["pin1_on_rod1_in_rod1_fy"]).max() > 1.0


@pytest.mark.opensim
@pytest.mark.models
def test_arm26_reactions_with_static_optimization_forces_equal_opensims(osim, models_dir, tmp_path, capsys):
    """arm26 (six muscles, wrapping) along a motion: the muscle forces from `static-optimization`, then
    `joint-reactions --forces` against OpenSim's JointReaction reading the same forces file; and the plot."""
    from osim_emb.io.motion import write_motion
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    path = models_dir / "arm26.osim"
    motion = tmp_path / "motion.mot"
    write_motion(motion, _sinusoids(["r_shoulder_elev", "r_elbow_flex"], [0.3, 1.0], [0.2, 0.5],
                                    np.linspace(0, 1, 41)), name="m")
    assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "so")]) == 0
    forces = tmp_path / "so_StaticOptimization_force.sto"
    ref = opensim_joint_reactions(path, motion, forces_file=forces, on=["parent"], expressed_in=["child"])["loads"]
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "ours"), "--forces", str(forces),
                 "--on", "parent", "--in", "child", "--plot"]) == 0
    d, scale = _compare(read_sto(tmp_path / "ours_JointReaction_ReactionLoads.sto"), ref)
    with capsys.disabled():
        print(f"\n[agreement] arm26 reactions under static-optimization forces vs OpenSim's JointReaction: {d:.2e} "
              f"(of {scale:.4g} N, N m, m)")
    assert d < 1e-8 * scale
    assert (tmp_path / "ours_JointReaction_ReactionLoads.png").stat().st_size > 10_000


@pytest.mark.opensim
@pytest.mark.models
def test_leg_with_coupled_patella_and_actuators_equals_opensims(osim, models_dir, tmp_path, capsys):
    """leg6dof9musc (a patella coupled to the knee, moving and conditional path points) with an actuator file of
    coordinate, point and torque actuators shared by static optimization, every joint on the child in ground.
    The motion file also holds the coupled coordinate: without it OpenSim's AnalyzeTool assembles the patella
    from its default to its assembly accuracy, and its reactions move by ~0.07 N (measured; said in the docs)."""
    import osim_emb as oe
    from osim_emb.core.kinematics import dependent_coordinate_columns
    from osim_emb.io.motion import write_motion
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    from osim_emb.simulation.motions import analysis_states
    path = models_dir / "leg6dof9musc.osim"
    model = oe.load_osim(path)
    actuators = tmp_path / "actuators.xml"
    actuators.write_text(LEG_ACTUATORS)
    times = np.linspace(0, 1, 41)
    table = _sinusoids(model.coordinate_names, [0.05, 0.0, 0.95, 0.3, -0.6, 0.1], [0.05, 0.1, 0.02, 0.4, 0.5, 0.2],
                       times)
    q, qd, _ = analysis_states(times, table[model.coordinate_names].to_numpy(), None)
    table["knee_angle_pat_r"] = dependent_coordinate_columns(model, q, qd)["knee_angle_pat_r"]
    motion = tmp_path / "motion.mot"
    write_motion(motion, table, name="m")
    assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "so"), "--actuators",
                 str(actuators)]) == 0
    forces = tmp_path / "so_StaticOptimization_force.sto"
    ref = opensim_joint_reactions(path, motion, forces_file=forces, actuator_files=[actuators])["loads"]
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "ours"), "--forces", str(forces),
                 "--actuators", str(actuators)]) == 0
    d, scale = _compare(read_sto(tmp_path / "ours_JointReaction_ReactionLoads.sto"), ref)
    with capsys.disabled():
        print(f"\n[agreement] leg6dof9musc reactions (coupled patella, actuators) vs OpenSim's JointReaction: "
              f"{d:.2e} (of {scale:.4g} N, N m, m)")
    assert d < 1e-9 * scale  # OpenSim splines the coupled coordinate's column on its own: ~1e-6 N


@pytest.mark.opensim
@pytest.mark.models
def test_external_loads_and_a_setup_file_equal_opensims(osim, models_dir, tmp_path, capsys, monkeypatch):
    """The double pendulum under the external loads of the external-load tests (a force at a moving ground point
    on rod2, a force and torque in rod1's frame), as an AnalyzeTool setup that OpenSim writes: `joint-reactions
    --setup` against OpenSim's AnalyzeTool run on that setup; the loads change the reactions by newtons."""
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions, opensim_joint_reactions_setup
    path = models_dir / "double_pendulum.osim"
    loads = pendulum_loads(tmp_path)
    motion = write_motion_file(tmp_path / "motion.mot", ["q1", "q2"], {"q1": (0.3, 1.0, -2.0), "q2": (-0.5, 2.0, 1.5)},
                               T[::2])
    bare = opensim_joint_reactions(path, motion, joints=["pin2", "pin1"], on=["parent", "child"],
                                   expressed_in=["rod2", "ground"], external_loads=None)["loads"]
    opensim_joint_reactions(path, motion, joints=["pin2", "pin1"], on=["parent", "child"],
                            expressed_in=["rod2", "ground"], external_loads=loads, out_dir=tmp_path / "w")
    setup = tmp_path / "w" / "joint_reaction_setup.xml"
    ref = opensim_joint_reactions_setup(setup, tmp_path / "opensim")["loads"]
    monkeypatch.chdir(tmp_path)
    out_dir = tmp_path / "w" / "results"
    assert main(["joint-reactions", "--setup", str(setup), "--overwrite"]) == 0
    ours = read_sto(out_dir / "jr_JointReaction_ReactionLoads.sto")
    d, scale = _compare(ours, ref)
    effect, _ = _compare(bare, ref)
    with capsys.disabled():
        print(f"\n[agreement] joint reactions with external loads, from an AnalyzeTool setup, vs OpenSim's: {d:.2e} "
              f"(of {scale:.3g}; the loads' effect {effect:.3g})")
    assert d < 1e-8 * scale and effect > 1.0


def test_bad_requests_and_forces_are_refused_by_name(models_dir, tmp_path, capsys):
    from osim_emb.io.motion import write_motion
    arm, times, motion = _arm26_motion(models_dir, tmp_path)
    muscles = ARM26_MUSCLES
    good = pd.DataFrame({"time": times, **{m: 10 + 0 * times for m in muscles}})
    write_motion(tmp_path / "forces.sto", good, name="f")
    write_motion(tmp_path / "short.sto", good.drop(columns="BRA"), name="f")
    write_motion(tmp_path / "extra.sto", good.assign(mystery=1.0), name="f")
    write_motion(tmp_path / "early.sto", good.assign(time=times * 0.5), name="f")
    base = ["joint-reactions", str(arm), str(motion), "-o", str(tmp_path / "x")]
    cases = [
        (["--forces", str(tmp_path / "forces.sto"), "--joints", "r_knee"], "no joint 'r_knee'"),
        (["--forces", str(tmp_path / "forces.sto"), "--on", "both"], "must be 'child' or 'parent'"),
        (["--forces", str(tmp_path / "forces.sto"), "--in", "nowhere"], "express_in_frame 'nowhere'"),
        (["--forces", str(tmp_path / "forces.sto"), "--joints", "r_shoulder", "r_elbow", "--in", "a", "b", "c"],
         "3 entries for 2 joints"),
        (["--forces", str(tmp_path / "short.sto")], "no force given for 1 actuator(s) of arm26: BRA"),
        (["--forces", str(tmp_path / "extra.sto")], "'mystery': not a muscle"),
        (["--forces", str(tmp_path / "early.sto")], "the forces cover t = 0 to 0.5 s"),
        ([], "give their forces with --forces"),
    ]
    for extra, message in cases:
        assert main(base + extra) != 0
        err = capsys.readouterr().err
        assert message in err, (extra, err)
        assert not (tmp_path / "x_JointReaction_ReactionLoads.sto").exists()


@pytest.mark.opensim
@pytest.mark.models
def test_actuator_on_a_locked_coordinate_equals_opensims(osim, models_dir, tmp_path, capsys):
    """arm26 with its elbow locked and a CoordinateActuator on it (it moves nothing; its torque and the lock's are
    the elbow's reaction about its axis): `joint-reactions` against OpenSim's JointReaction with the same actuator
    file, the muscles' forces from `static-optimization`."""
    from osim_emb.io.motion import write_motion
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    text = (models_dir / "arm26.osim").read_text()
    start = text.index('<Coordinate name="r_elbow_flex">')
    locked = text[:start] + text[start:].replace("<locked>false</locked>", "<locked>true</locked>", 1)
    assert locked != text
    path = tmp_path / "arm26_locked.osim"
    path.write_text(locked)
    actuators = tmp_path / "actuators.xml"
    actuators.write_text('<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="a"><objects>'
                         '<CoordinateActuator name="elbow_torque"><coordinate>r_elbow_flex</coordinate>'
                         '<optimal_force>10</optimal_force></CoordinateActuator></objects></ForceSet></OpenSimDocument>')
    motion = tmp_path / "motion.mot"
    times = np.linspace(0, 1, 21)
    write_motion(motion, _sinusoids(["r_shoulder_elev"], [0.4], [0.3], times), name="m")
    assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "so")]) == 0
    so = read_sto(tmp_path / "so_StaticOptimization_force.sto")
    so["elbow_torque"] = 4.0 * np.sin(3 * times)
    write_motion(tmp_path / "forces.sto", so, name="f")
    ref = opensim_joint_reactions(path, motion, forces_file=tmp_path / "forces.sto", actuator_files=[actuators],
                                  expressed_in=["child"])["loads"]
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "ours"), "--forces",
                 str(tmp_path / "forces.sto"), "--actuators", str(actuators), "--in", "child"]) == 0
    d, scale = _compare(read_sto(tmp_path / "ours_JointReaction_ReactionLoads.sto"), ref)
    with capsys.disabled():
        print(f"\n[agreement] arm26, an actuator on its locked elbow, vs OpenSim's JointReaction: {d:.2e} "
              f"(of {scale:.4g})")
    assert d < 1e-8 * scale


def _two_rods(osim, path, reversed_joint: bool):
    """ground -pin1- rod1 and rod2 on pin2 at rod1's tip, pin2 written rod1 -> rod2, or (``reversed_joint``) rod2 ->
    rod1, which Simbody reverses (its child rod1 is nearer the ground); the same frames either way."""
    m = osim.Model()
    m.setName("two_rods")
    rod1 = osim.Body("rod1", 1.0, osim.Vec3(0.05, -0.25, 0.01), osim.Inertia(0.02, 0.002, 0.02))
    rod2 = osim.Body("rod2", 0.7, osim.Vec3(0.0, -0.2, 0.02), osim.Inertia(0.01, 0.001, 0.01))
    on1, on2 = (osim.Vec3(0, -0.5, 0), osim.Vec3(0.1, 0, 0)), (osim.Vec3(0.02, 0.05, 0), osim.Vec3(0, 0.2, 0))
    ends = (rod2, *on2, rod1, *on1) if reversed_joint else (rod1, *on1, rod2, *on2)
    add_parts(m, (rod1, rod2), (osim.PinJoint("pin1", m.getGround(), osim.Vec3(0), osim.Vec3(0), rod1, osim.Vec3(0),
                                              osim.Vec3(0)), osim.PinJoint("pin2", *ends)))
    m.finalizeConnections()
    m.printToXML(str(path))


@pytest.mark.opensim
def test_a_joint_simbody_reverses_carries_the_unreversed_joints_reaction(osim, tmp_path, capsys):
    """pin2 written rod2 -> rod1 (Simbody reverses it): its reaction on the child rod1 and on the parent rod2 equal
    OpenSim's for the same joint written rod1 -> rod2 (on the parent and on the child there; its angle negated), at
    random states.  (OpenSim's own reaction for the reversed joint is its child's mobilizer's, pin1's:
    ``Joint::calcReactionOnChildExpressedInGround`` takes the child frame's MobilizedBody.)"""
    from osim_emb import load_osim
    from osim_emb.simulation.joint_reactions import joint_reactions_of_motion, reaction_requests
    _two_rods(osim, tmp_path / "reversed.osim", True)
    _two_rods(osim, tmp_path / "forward.osim", False)
    model = load_osim(tmp_path / "reversed.osim")
    rng = np.random.default_rng(3)
    q = model.default_q + rng.uniform(-0.6, 0.6, (5, 2))
    qd = rng.normal(size=(5, 2))
    requests = reaction_requests(model, ["pin2"], "child") + reaction_requests(model, ["pin2"], "parent")
    ours = joint_reactions_of_motion(model, np.zeros(5), q, qd, {}, requests=requests, progress=False).loads
    om = osim.Model(str(tmp_path / "forward.osim"))
    state = om.initSystem()
    coordinates, pin2 = om.getCoordinateSet(), om.getJointSet().get("pin2")
    worst = 0.0
    for n in range(5):
        for k, sign in enumerate((1.0, -1.0)):
            coordinates.get(k).setValue(state, sign * float(q[n, k]), False)
            coordinates.get(k).setSpeedValue(state, sign * float(qd[n, k]))
        om.realizeAcceleration(state)
        for r, reaction in enumerate((pin2.calcReactionOnParentExpressedInGround(state),
                                      pin2.calcReactionOnChildExpressedInGround(state))):
            ref = np.concatenate([reaction.get(1).to_numpy(), reaction.get(0).to_numpy()])
            worst = max(worst, float(np.abs(ours[n, r, :6] - ref).max()))
    with capsys.disabled():
        print(f"\n[agreement] a reversed joint's reactions vs OpenSim's for the joint written forward: {worst:.1e} "
              f"(of {np.abs(ours[..., :6]).max():.3g} N, N m)")
    assert worst < 1e-12


def _reach_and_its_muscle_forces(model, tmp_path):
    """(a quadratic reach of arm26's two coordinates, the muscle forces `static-optimization` gives along it)."""
    motion = write_motion_file(tmp_path / "reach.mot", ["r_shoulder_elev", "r_elbow_flex"],
                               {"r_shoulder_elev": (0.2, 0.5, 1.0), "r_elbow_flex": (0.3, 2.0, 1.5)}, T[::2])
    assert main(["static-optimization", str(model), str(motion), "-o", str(tmp_path / "so"), "--no-passive"]) == 0
    return motion, tmp_path / "so_StaticOptimization_force.sto"


@pytest.mark.opensim
@pytest.mark.models
def test_force_elements_act_on_the_bodies_as_in_opensims_joint_reaction(osim, models_dir, tmp_path, capsys):
    """arm26 with a contact (the hand pressed into a wall until t ≈ 0.08 s), a point spring, a bushing across the
    elbow, a coordinate spring and a prescribed force (``opensim_builders.build_arm26_with_force_elements``) along a
    quadratic reach, the muscle forces from `static-optimization`: `joint-reactions` applies the elements' wrenches
    to the bodies and equals OpenSim's JointReaction, which applies every force of the model; arm26 without the
    elements, or without the contact alone, under the same forces is far from it."""
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    arm26 = models_dir / "arm26.osim"
    path = build_arm26_with_force_elements(osim, arm26, tmp_path / "arm26_elements.osim")
    build_arm26_with_force_elements(osim, arm26, tmp_path / "arm26_no_contact.osim", contact=False)
    motion, forces = _reach_and_its_muscle_forces(path, tmp_path)
    ref = opensim_joint_reactions(path, motion, forces_file=forces)["loads"]
    capsys.readouterr()
    for name, model in (("ours", path), ("bare", arm26), ("no_contact", tmp_path / "arm26_no_contact.osim")):
        assert main(["-v", "joint-reactions", str(model), str(motion), "-o", str(tmp_path / name), "--forces",
                     str(forces)]) == 0
    err = capsys.readouterr().err
    assert ("joint-reactions applies the model's 1 HuntCrossleyContact, 1 PointToPointSpring, 1 Bushing, "
            "1 CoordinateSpring, 1 PrescribedBodyForce") in err
    assert "leaves out" not in err and "does not apply" not in err
    d, scale = _compare(read_sto(tmp_path / "ours_JointReaction_ReactionLoads.sto"), ref)
    effect = {name: _compare(read_sto(tmp_path / f"{name}_JointReaction_ReactionLoads.sto"), ref)[0]
              for name in ("bare", "no_contact")}
    with capsys.disabled():
        print(f"\n[agreement] arm26 reactions with contact, bushing, springs, prescribed force vs OpenSim's "
              f"JointReaction: {d:.1e} (of {scale:.4g} N, N m, m; the elements' effect {effect['bare']:.3g}, the "
              f"contact's alone {effect['no_contact']:.3g})")
    assert d < 1e-8 * scale
    assert effect["bare"] > 10.0 and effect["no_contact"] > 5.0


@pytest.mark.models
def test_disabled_and_excluded_forces_as_opensims_joint_reaction(osim, models_dir, tmp_path, capsys):
    """The model of the previous test with BRA and the contact switched off in the file (``appliesForce`` false),
    the forces file naming BRA: OpenSim's JointReaction applies neither; `joint-reactions` on that file, and on the
    file with both on but ``--exclude-forces BRA,palm_wall``, equals it."""
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    path = build_arm26_with_force_elements(osim, models_dir / "arm26.osim", tmp_path / "arm26_elements.osim")
    off = with_forces_switched_off(osim, path, tmp_path / "arm26_off.osim", ["BRA", "palm_wall"])
    motion, forces = _reach_and_its_muscle_forces(path, tmp_path)
    ref = opensim_joint_reactions(off, motion, forces_file=forces)["loads"]
    capsys.readouterr()
    assert main(["joint-reactions", str(off), str(motion), "-o", str(tmp_path / "off"), "--forces", str(forces)]) == 0
    assert "appliesForce false" in capsys.readouterr().err
    assert main(["-v", "joint-reactions", str(path), str(motion), "-o", str(tmp_path / "excluded"), "--forces",
                 str(forces), "--exclude-forces", "BRA,palm_wall"]) == 0
    assert "the forces of BRA in" in capsys.readouterr().err
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "on"), "--forces", str(forces)]) == 0
    d = {name: _compare(read_sto(tmp_path / f"{name}_JointReaction_ReactionLoads.sto"), ref)
         for name in ("off", "excluded", "on")}
    with capsys.disabled():
        print(f"\n[agreement] arm26 reactions with BRA and the contact off (appliesForce false / --exclude-forces) vs "
              f"OpenSim's JointReaction: {d['off'][0]:.1e} / {d['excluded'][0]:.1e} (of {d['off'][1]:.4g} N, N m, m; "
              f"with both on {d['on'][0]:.3g})")
    assert d["off"][0] < 1e-8 * d["off"][1] and d["excluded"][0] < 1e-8 * d["off"][1] and d["on"][0] > 5.0


def test_the_external_loads_records_in_a_forces_file_are_not_read_as_forces(models_dir, tmp_path):
    """OpenSim's StaticOptimization writes the external loads' records (BODY_FORCE_Fx ...) beside the muscle forces;
    with those loads given they are not forces to apply (OpenSim's JointReaction reads them as nothing either)."""
    import osim_emb as oe
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.simulation.joint_reactions import joint_reactions_of_motion
    model = oe.load_osim(str(models_dir / "double_pendulum.osim"))
    loads = read_external_loads(pendulum_loads(tmp_path))
    t = T[2:6]
    q = np.column_stack([0.3 + t, -0.5 + 2 * t])
    qd = np.column_stack([1.0 + 0 * t, 2.0 + 0 * t])
    plain = joint_reactions_of_motion(model, t, q, qd, {}, external_loads=loads)
    echoed = {f"{body}_{name}_{x}": np.ones(len(t)) for body, name in (("rod2", "tip"), ("rod1", "mid"))
              for x in ("Fx", "Fy", "Fz", "px", "py", "pz", "Tx", "Ty", "Tz")}
    np.testing.assert_array_equal(joint_reactions_of_motion(model, t, q, qd, echoed, external_loads=loads).loads,
                                  plain.loads)
    with pytest.raises(ValueError, match="a record of the external loads given"):
        joint_reactions_of_motion(model, t, q, qd, {"rod2_tap_Fx": np.ones(len(t))}, external_loads=loads)


def test_forces_ending_within_one_step_of_the_motion_are_extrapolated_as_opensim_does(models_dir, tmp_path, capsys):
    """Forces linear in time (10 + 5 t N) on OpenSim's grid ending 4 ms early: extrapolated linearly, the reactions at
    the last frame equal those from the same forces given at the motion's own frames."""
    from osim_emb.io.motion import write_motion
    arm, times, motion = _arm26_motion(models_dir, tmp_path)
    grid = np.linspace(0, 0.996, 11)  # OpenSim's resampled grid ending 4 ms before the motion
    write_motion(tmp_path / "early.sto", pd.DataFrame({"time": grid, **{m: 10 + 5 * grid for m in ARM26_MUSCLES}}),
                 name="f")
    write_motion(tmp_path / "exact.sto", pd.DataFrame({"time": times, **{m: 10 + 5 * times for m in ARM26_MUSCLES}}),
                 name="f")
    for name in ("early", "exact"):
        assert main(["joint-reactions", str(arm), str(motion), "-o", str(tmp_path / name), "--forces",
                     str(tmp_path / f"{name}.sto")]) == 0
    assert "1 frame(s) at most one step (0.0996 s) beyond the forces' times 0 to 0.996" in capsys.readouterr().err
    early, exact = (read_sto(tmp_path / f"{n}_JointReaction_ReactionLoads.sto") for n in ("early", "exact"))
    columns = [c for c in exact.columns if c != "time"]
    np.testing.assert_allclose(early[columns].to_numpy(), exact[columns].to_numpy(), rtol=1e-9, atol=1e-8)
