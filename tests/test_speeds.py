"""OpenSim's speeds of Ball, Free and Ellipsoid joints' rotations (angular velocities) beside the package's coordinate
rates (osim_emb.core.speeds): against the rotation's finite differences, OpenSim's Manager and states files, and
refusals (gimbal lock, an angle that is not a generalized coordinate)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import osim_emb as oe
from osim_emb.core.kinematics import body_transforms, forward_kinematics
from osim_emb.core.speeds import SpeedMapError, rates_from_speeds, speed_accelerations, speed_jacobian, \
    speeds_from_rates
from osim_emb.io.motion import MotionFileError, coordinates_from_motion, read_motion

BODY = """<Body name="{name}"><mass>{mass}</mass><mass_center>{com}</mass_center>
<inertia>{inertia} 0 0 0</inertia></Body>"""
FRAME = """<PhysicalOffsetFrame name="{name}"><socket_parent>{parent}</socket_parent>
<translation>{xyz}</translation><orientation>{rot}</orientation></PhysicalOffsetFrame>"""


def _coordinate(name, default=0.0, speed=0.0, kind="rotational", locked=False):
    return (f'<Coordinate name="{name}"><default_value>{default}</default_value><default_speed_value>{speed}'
            f'</default_speed_value><range>-3 3</range><locked>{str(locked).lower()}</locked></Coordinate>')


def ball_free_osim(speeds=(0.0,) * 6, *, locked_ball_angle=False) -> str:
    """ground -Free- trunk -Ball- arm, both joints with offset frames turned on both sides; the free joint's three
    rotations then its translations, the ball's three rotations, with the given default speeds."""
    free = [_coordinate(f"free_r{k}", 0.2 * (k + 1), speeds[k]) for k in range(3)]
    free += [_coordinate(f"free_t{k}", 0.1 * k, 0.3, "translational") for k in range(3)]
    ball = [_coordinate(f"ball_r{k}", -0.3 + 0.25 * k, speeds[3 + k], locked=locked_ball_angle and k == 1)
            for k in range(3)]
    joints = [("FreeJoint", "free", "/ground", "/bodyset/trunk", free, ("0 1 0", "0.1 0.2 -0.3"), ("0 0.2 0", "0 0 0.4")),
              ("BallJoint", "ball", "/bodyset/trunk", "/bodyset/arm", ball, ("0.05 -0.2 0.1", "0.3 0 0.2"),
               ("0 0.25 0", "-0.2 0.1 0"))]
    jx = []
    for tag, name, parent, child, coords, (pt, pr), (ct, cr) in joints:
        jx.append(f'<{tag} name="{name}"><socket_parent_frame>{name}_parent</socket_parent_frame>'
                  f'<socket_child_frame>{name}_child</socket_child_frame><coordinates>{"".join(coords)}</coordinates>'
                  f'<frames>{FRAME.format(name=f"{name}_parent", parent=parent, xyz=pt, rot=pr)}'
                  f'{FRAME.format(name=f"{name}_child", parent=child, xyz=ct, rot=cr)}</frames></{tag}>')
    bodies = (BODY.format(name="trunk", mass=10.0, com="0 0.1 0.02", inertia="0.5 0.3 0.4")
              + BODY.format(name="arm", mass=2.0, com="0.01 -0.15 0", inertia="0.02 0.004 0.018"))
    return ('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><Model name="ball_free">'
            f'<gravity>0 -9.80665 0</gravity><BodySet><objects>{bodies}</objects></BodySet>'
            f'<JointSet><objects>{"".join(jx)}</objects></JointSet></Model></OpenSimDocument>')


#: a CoordinateLimitForce on ball_r1 (beyond -10 degrees, damped) and a CoordinateActuator on ball_r2
LIMIT_AND_TORQUE = ('<ForceSet><objects><CoordinateLimitForce name="limit"><coordinate>ball_r1</coordinate>'
                    "<upper_stiffness>20</upper_stiffness><upper_limit>-10</upper_limit><lower_stiffness>15"
                    "</lower_stiffness><lower_limit>-40</lower_limit><damping>0.5</damping><transition>5</transition>"
                    '</CoordinateLimitForce><CoordinateActuator name="torque"><coordinate>ball_r2</coordinate>'
                    "<optimal_force>2</optimal_force></CoordinateActuator></objects></ForceSet>")


def _opensim_states_read_back(osim, path, model, folder):
    """OpenSim's Manager over 0.05 s from the file's default state, its states file written by OpenSim (501 frames)
    and read back by the package: (table, header, the read rates at the inner frames, the central differences of the
    file's coordinates there)."""
    om = osim.Model(str(path))
    state = om.initSystem()
    manager = osim.Manager(om)
    manager.setIntegratorAccuracy(1e-12)
    manager.initialize(state)
    for t in np.linspace(0.0, 0.05, 501)[1:]:
        manager.integrate(float(t))
    sto = folder / "states.sto"
    osim.STOFileAdapter.write(manager.getStatesTable(), str(sto))
    tab, head = read_motion(sto)
    time, q, qd = coordinates_from_motion(model, tab, head)
    dt = np.diff(time)
    return tab, head, qd[1:-1], (q[2:] - q[:-2]) / (dt[1:] + dt[:-1])[:, None]


def read_text(folder, text, name="ball_free.osim"):
    (folder / name).write_text(text)
    return oe.load_osim(folder / name)


def _vee(w):
    return np.array([w[2, 1] - w[1, 2], w[0, 2] - w[2, 0], w[1, 0] - w[0, 1]]) / 2.0


def test_speeds_are_the_joint_frames_angular_velocity_by_finite_differences(tmp_path):
    """u = E q̇ equals ω_FM in F from central differences of the joint's rotation (parent frame F and child frame M
    from the package's kinematics, independent of E); the inverse map recovers q̇; translations keep their rates."""
    model = read_text(tmp_path, ball_free_osim())
    rng = np.random.default_rng(5)
    idx = {c: k for k, c in enumerate(model.coordinate_names)}
    trunk, arm = (model.body_names.index(b) for b in ("trunk", "arm"))
    off = {"free": (_offset("0 1 0", "0.1 0.2 -0.3"), _offset("0 0.2 0", "0 0 0.4")),
           "ball": (_offset("0.05 -0.2 0.1", "0.3 0 0.2"), _offset("0 0.25 0", "-0.2 0.1 0"))}
    for _ in range(5):
        q = model.default_q + rng.uniform(-0.6, 0.6, model.n_q)
        qd = rng.normal(size=model.n_q)
        u = speeds_from_rates(model, q, qd)[0]
        h = 1e-6
        for joint, parent, child in (("free", None, trunk), ("ball", trunk, arm)):
            def rel(qq):
                x = body_transforms(model, forward_kinematics(model, qq))[0]
                g_child = x[child]
                g_parent = np.eye(4) if parent is None else x[parent]
                f = g_parent @ off[joint][0]
                m = g_child @ off[joint][1]
                return f[:3, :3], f[:3, :3].T @ m[:3, :3]
            f_rot, r_fm = rel(q)
            r_dot = (rel(q + h * qd)[1] - rel(q - h * qd)[1]) / (2 * h)
            omega = _vee(r_dot @ r_fm.T)
            k = [idx[f"{joint}_r{i}"] for i in range(3)]
            np.testing.assert_allclose(u[k], omega, atol=2e-8)
            np.testing.assert_allclose((speed_jacobian(model, q)[0] @ qd)[k], omega, atol=2e-8)
            assert not np.allclose(u[k], qd[k], atol=1e-3)  # the rates differ from the speeds here
        t = [idx[f"free_t{i}"] for i in range(3)]
        np.testing.assert_array_equal(u[t], qd[t])
        np.testing.assert_allclose(rates_from_speeds(model, q, u)[0], qd, rtol=0, atol=1e-13)
    # a model saved as JSON keeps its OpenSim document, hence its joints' speeds
    oe.save_model(model, tmp_path / "ball_free.emb.json")
    again = oe.load_model(tmp_path / "ball_free.emb.json")
    np.testing.assert_array_equal(speeds_from_rates(again, q, qd), speeds_from_rates(model, q, qd))


def _offset(xyz, rot):
    from scipy.spatial.transform import Rotation
    x = np.eye(4)
    x[:3, :3] = Rotation.from_euler("XYZ", [float(v) for v in rot.split()]).as_matrix()
    x[:3, 3] = [float(v) for v in xyz.split()]
    return x


def test_inspect_names_the_joints_whose_speeds_are_angular_velocities(tmp_path, capsys):
    from osim_emb.cli.main import main
    (tmp_path / "ball_free.osim").write_text(ball_free_osim())
    assert main(["inspect", str(tmp_path / "ball_free.osim")]) == 0
    out = capsys.readouterr().out
    assert "FreeJoint 'free': free_r0, free_r1, free_r2" in out and "BallJoint 'ball': ball_r0, ball_r1, ball_r2" in out


def test_gimbal_lock_and_dependent_angles_are_refused(tmp_path):
    model = read_text(tmp_path, ball_free_osim())
    q = model.default_q.copy()
    q[model.coordinate_index("ball_r1")] = np.pi / 2
    with pytest.raises(SpeedMapError, match=r"BallJoint 'ball' is in gimbal lock at frame 0 \('ball_r1'"):
        rates_from_speeds(model, q, np.ones(model.n_q), source="x.sto")
    # a states file in gimbal lock: refused with the file
    names = model.coordinate_names
    table = pd.DataFrame({"time": [0.0, 0.1], **{c: [q[k]] * 2 for k, c in enumerate(names)},
                          **{f"{c}_u": [1.0, 1.0] for c in names}})
    oe.write_motion(tmp_path / "lock.sto", table)
    tab, head = read_motion(tmp_path / "lock.sto")
    with pytest.raises(MotionFileError, match="lock.sto.*gimbal lock"):
        coordinates_from_motion(model, tab, head)
    # a locked ball angle: the rates of the other two cannot be solved from three angular velocity components
    locked = read_text(tmp_path, ball_free_osim(locked_ball_angle=True), "locked.osim")
    assert "ball_r1" not in locked.coordinate_names
    with pytest.raises(SpeedMapError, match="BallJoint 'ball'.*'ball_r1' not a generalized coordinate"):
        rates_from_speeds(locked, locked.default_q, np.ones(locked.n_q))
    # ... while writing speeds takes the locked angle's rate (0) through its function
    u = speeds_from_rates(locked, locked.default_q, np.ones(locked.n_q))
    assert np.all(np.isfinite(u))


def test_states_of_a_free_and_ball_joint_model_equal_opensims_manager(osim, tmp_path):
    """The default speeds (OpenSim's u) as the initial state, the simulation's NAME_u columns as OpenSim's speeds, and
    OpenSim's states file read back into coordinate rates: against OpenSim 4.6's Manager from the same default
    state (Euler angles, as OpenSim keeps them), and against the file's own coordinates by central differences."""
    path = tmp_path / "ball_free.osim"
    path.write_text(ball_free_osim(speeds=(0.4, -0.7, 1.1, 0.9, 0.5, -1.2)))
    model = oe.load_osim(path)
    t_end, times = 0.3, np.linspace(0.0, 0.3, 7)
    ours = oe.simulate(model, t_end, t_eval=times, rtol=1e-11, atol=1e-12)
    om = osim.Model(str(path))
    state = om.initSystem()
    cs = om.getCoordinateSet()
    coords = [cs.get(i) for i in range(cs.getSize())]

    def values(s):
        return [(c.getName(), c.getValue(s), c.getSpeedValue(s)) for c in coords]

    rows = [values(state)]
    manager = osim.Manager(om)
    manager.setIntegratorAccuracy(1e-11)
    manager.initialize(state)
    for t in times[1:]:
        rows.append(values(manager.integrate(float(t))))  # (integrate returns its one working state)
    worst_q = worst_u = 0.0
    for n, row in enumerate(rows):
        for name, value, speed in row:
            worst_q = max(worst_q, abs(value - ours[name].iloc[n]))
            worst_u = max(worst_u, abs(speed - ours[f"{name}_u"].iloc[n]))
    print(f"q {worst_q:.1e} rad, u {worst_u:.1e} rad/s")
    assert worst_q < 1e-9 and worst_u < 1e-9, (worst_q, worst_u)

    # OpenSim's own states file, densely reported: its speeds read back as rates equal dq/dt of its coordinates
    tab, head, rates, central = _opensim_states_read_back(osim, path, model, tmp_path)  # (a new model: a second
    # Manager on a re-initialized one crashes OpenSim)
    print(f"file speeds as rates vs central differences: {np.abs(rates - central).max():.1e} rad/s")
    np.testing.assert_allclose(rates, central, rtol=0, atol=1e-7)
    k = model.coordinate_index("ball_r2")
    assert np.abs(tab[[c for c in tab.columns if c.endswith("ball_r2/speed")][0]].to_numpy()[1:-1]
                  - central[:, k]).max() > 1e-2  # the file's speed is not the angle's rate


def test_generalized_forces_about_opensims_speeds_equal_its_inverse_dynamics_and_actuators(osim, tmp_path):
    """τ_u = E⁻ᵀ τ_q (the package's inverse dynamics about the coordinates) equals OpenSim's InverseDynamicsSolver at
    u = E q̇ and u̇ = d(E q̇)/dt (central differences along the motion); a CoordinateActuator on a ball angle is
    OpenSim's mobility force: Eᵀ F e_k about the coordinates, so that E⁻ᵀ of it is F e_k."""
    from osim_emb.core.dynamics import actuator_generalized_forces, inverse_dynamics
    from osim_emb.core.speeds import forces_about_speeds
    from osim_emb.io.force_set import Actuator
    from osim_emb.opensim.bridge import OpenSimReference
    path = tmp_path / "ball_free.osim"
    path.write_text(ball_free_osim())
    model = oe.load_osim(path)
    ref = OpenSimReference(str(path), model)
    idx = ref.speed_indices()
    order = [idx[c] for c in model.coordinate_names]
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(4):
        q = model.default_q + rng.uniform(-0.5, 0.5, model.n_q)
        qd, qdd = rng.normal(size=model.n_q), rng.normal(size=model.n_q)
        h = 1e-5
        u = speeds_from_rates(model, q, qd)[0]
        u_dot = (speeds_from_rates(model, q + h * qd + h * h / 2 * qdd, qd + h * qdd)[0]
                 - speeds_from_rates(model, q - h * qd + h * h / 2 * qdd, qd - h * qdd)[0]) / (2 * h)
        np.testing.assert_allclose(speed_accelerations(model, q, qd, qdd)[0], u_dot, atol=1e-8)
        u_dot = speed_accelerations(model, q, qd, qdd)[0]
        tau_u = forces_about_speeds(model, q, inverse_dynamics(model, q, qd, qdd))[0]
        ref.set_configuration(q)
        ref.set_speeds(u)
        udot = np.zeros(len(order))
        udot[order] = u_dot
        theirs = ref.inverse_dynamics(udot)[order]
        worst = max(worst, np.abs(tau_u - theirs).max() / np.abs(theirs).max())
    print(f"inverse dynamics about the speeds: {worst:.1e} relative")
    assert worst < 1e-9, worst
    # OpenSim's CoordinateActuator on ball_r1 (overridden to 3 N m) moves its inverse dynamics by 3 e_k about the
    # speeds; the package's generalized force of the same actuator, about the speeds, is that
    k = model.coordinate_index("ball_r1")
    withforce = tmp_path / "ball_torque.osim"
    withforce.write_text(ball_free_osim().replace("</JointSet>", "</JointSet><ForceSet><objects><CoordinateActuator "
                                                  'name="ball_torque"><coordinate>ball_r1</coordinate><optimal_force>1'
                                                  "</optimal_force></CoordinateActuator></objects></ForceSet>"))
    ref = OpenSimReference(str(withforce), model)
    ref.set_configuration(q)
    ref.set_speeds(u)
    actuator = osim.CoordinateActuator.safeDownCast(ref.model_os.getForceSet().get("ball_torque"))
    actuator.overrideActuation(ref.state, True)
    actuator.setOverrideActuation(ref.state, 3.0)
    pushed = ref.inverse_dynamics(udot)[order]
    actuator.overrideActuation(ref.state, False)
    free = ref.inverse_dynamics(udot)[order]
    np.testing.assert_allclose(free - pushed, 3.0 * np.eye(model.n_q)[k], atol=1e-12)
    act = Actuator(name="ball_torque", kind="CoordinateActuator", optimal_force=3.0, min_control=-1.0, max_control=1.0,
                   coordinate="ball_r1")
    b = actuator_generalized_forces(model, q, [act])[0, :, 0]
    np.testing.assert_allclose(forces_about_speeds(model, q, b), free - pushed, atol=1e-12)
    assert np.count_nonzero(np.abs(b) > 1e-12) > 1  # about the coordinates it reaches the other ball angles


def test_a_model_without_coordinates_has_no_speeds(tmp_path):
    text = ('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><Model name="welded"><BodySet>'
            f'<objects>{BODY.format(name="block", mass=1.0, com="0 0 0", inertia="1 1 1")}</objects></BodySet>'
            '<JointSet><objects><WeldJoint name="weld"><socket_parent_frame>/ground</socket_parent_frame>'
            '<socket_child_frame>/bodyset/block</socket_child_frame></WeldJoint></objects></JointSet></Model>'
            '</OpenSimDocument>')
    model = read_text(tmp_path, text, "welded.osim")
    assert model.n_q == 0
    assert speeds_from_rates(model, np.zeros((3, 0)), np.zeros((3, 0))).shape == (3, 0)


def test_a_free_joint_with_angles_solved_from_a_weld_reads_opensims_states(osim, tmp_path):
    """A FreeJoint whose y and z angles are solved from a WeldConstraint loop (chosen dependent): OpenSim's speeds of
    its rotations are the angular velocity, so the generalized x angle's rate needs the dependent angles' values and
    speeds, which OpenSim's states file has; read back, the rates equal the central differences of the file's
    coordinates (OpenSim's Manager, the constrained motion under gravity)."""
    from opensim_builders import build_welded
    path = tmp_path / "welded.osim"
    build_welded(osim, path)
    model = oe.load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "j2_coord_1", "j3_coord_1",
                                                       "j3_coord_2", "j3_coord_4"])
    assert model.coordinate_names == ["j3_coord_0", "j3_coord_3", "j3_coord_5"]
    tab, head, rates, central = _opensim_states_read_back(osim, path, model, tmp_path)
    print(f"rates with dependent angles vs central differences: {np.abs(rates - central).max():.1e} rad/s "
          f"(of {np.abs(central).max():.2g})")
    np.testing.assert_allclose(rates, central, rtol=0, atol=1e-7)
    # without the dependent angles' columns the rates cannot be had: refused by name
    tab = tab[[c for c in tab.columns if "j3_coord_1" not in c]]
    with pytest.raises(MotionFileError, match="FreeJoint 'j3'.*'j3_coord_1' not a generalized coordinate"):
        coordinates_from_motion(model, tab, head)


def test_a_limit_force_and_an_actuator_on_ball_angles_are_opensims_mobility_forces(osim, tmp_path):
    """A CoordinateLimitForce on ball_r1 (beyond its upper limit, damped: its speed is OpenSim's u_k, the angular
    velocity component) and a CoordinateActuator on ball_r2 from the model's ForceSet: the package's generalized
    forces (coordinate_forces_from_model, limit_generalized_forces, coordinate_state), taken about OpenSim's speeds,
    equal the change they make in OpenSim's InverseDynamicsSolver at random states."""
    from osim_emb.core.speeds import forces_about_speeds
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.simulation.motions import limit_generalized_forces
    from osim_emb.simulation.muscle_driven import coordinate_forces_from_model, coordinate_state
    path = tmp_path / "limited.osim"
    path.write_text(ball_free_osim().replace("</JointSet>", "</JointSet>" + LIMIT_AND_TORQUE))
    model = oe.load_osim(path)
    limits, actuators = coordinate_forces_from_model(model)
    assert [f.name for f in limits] == ["limit"] and [a.name for a in actuators] == ["torque"]
    ref = OpenSimReference(str(path), model)
    idx = ref.speed_indices()
    order = [idx[c] for c in model.coordinate_names]
    force_set = ref.model_os.getForceSet()
    limit, torque = force_set.get("limit"), osim.CoordinateActuator.safeDownCast(force_set.get("torque"))
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(4):
        q = model.default_q + rng.uniform(-0.3, 0.3, model.n_q)
        q[model.coordinate_index("ball_r1")] = rng.uniform(-0.15, 0.2)  # (-8.6 to 11 degrees: in and past the ramp)
        qd = rng.normal(size=model.n_q)
        ref.set_configuration(q)
        ref.set_speeds(speeds_from_rates(model, q, qd)[0])
        udot = rng.normal(size=model.n_q)
        torque.overrideActuation(ref.state, True)
        torque.setOverrideActuation(ref.state, 1.5)
        pushed = ref.inverse_dynamics(udot)[order]
        limit.setAppliesForce(ref.state, False)
        torque.overrideActuation(ref.state, False)
        free = ref.inverse_dynamics(udot)[order]  # (the actuator's default control, 0, applies nothing)
        limit.setAppliesForce(ref.state, True)
        tau = limit_generalized_forces(limits, q[None], qd[None])[0]
        _, _, gradient = coordinate_state(actuators[0], q, qd)
        tau += 1.5 * gradient  # (the overridden actuation is the force itself)
        ours = forces_about_speeds(model, q, tau)
        assert abs(ours[model.coordinate_index("ball_r1")]) > 0.5  # the limit is active
        worst = max(worst, float(np.abs(ours - (free - pushed)).max()))
    print(f"limit force and actuator on ball angles about OpenSim's speeds: {worst:.1e} N m")
    assert worst < 1e-10


def test_a_simulation_with_forces_on_ball_angles_equals_opensims_manager(osim, tmp_path):
    """The same limit force and actuator (its control a sine) in a forward simulation from nonzero default speeds:
    simulate_muscles (the numpy route; the compiled integrators refuse such forces by name) against OpenSim's
    Manager over 0.3 s."""
    from osim_emb.simulation.muscle_driven import ExcitationSpec, simulate_muscles
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    from osim_emb.simulation.muscle_driven_jit import _coordinate_force_map
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    path = tmp_path / "limited.osim"
    path.write_text(ball_free_osim(speeds=(0.4, -0.7, 1.1, 0.9, 0.5, -1.2)).replace("</JointSet>",
                                                                                   "</JointSet>" + LIMIT_AND_TORQUE))
    model = oe.load_osim(path)
    controls = {"torque": ExcitationSpec.parse("sine:0:10:0:1")}
    assert "Ball, Free or Ellipsoid" in _coordinate_force_map(MuscleDrivenSystem(model, {}, controls=controls))
    times = np.linspace(0.0, 0.3, 7)
    ours = simulate_muscles(model, 0.3, {}, controls=controls, t_eval=times, rtol=1e-10, atol=1e-12, method="DOP853")
    theirs = opensim_muscle_simulation(str(path), times, {}, controls=controls, accuracy=1e-10)
    names = theirs["names"]
    dq = np.abs(np.column_stack([ours[n] for n in names]) - theirs["q"]).max()
    du = np.abs(np.column_stack([ours[f"{n}_u"] for n in names]) - theirs["u"]).max()
    print(f"forces on ball angles, 0.3 s against OpenSim's Manager: q {dq:.1e} rad, u {du:.1e} rad/s")
    assert dq < 1e-8 and du < 1e-7


def test_a_limit_force_on_a_free_joint_with_dependent_angles_acts_through_the_angular_velocity(osim, tmp_path):
    """The welded lump's FreeJoint with its y and z angles solved from the loop: a CoordinateLimitForce on its x angle
    moves at u_x, the x component of the lump's angular velocity in ground (central differences of the lump's rotation
    along q + h q̇, the dependent angles following the loop), and does the power F u_x."""
    from opensim_builders import build_welded
    from osim_emb.simulation.muscle_driven import coordinate_forces_from_model, coordinate_state
    path = tmp_path / "welded.osim"
    build_welded(osim, path)
    text = path.read_text().replace("</ConstraintSet>", "</ConstraintSet><ForceSet><objects><CoordinateLimitForce "
                                    'name="limit"><coordinate>j3_coord_0</coordinate><upper_stiffness>5'
                                    "</upper_stiffness><upper_limit>0</upper_limit><lower_stiffness>5</lower_stiffness>"
                                    "<lower_limit>-1</lower_limit><damping>0.1</damping><transition>1</transition>"
                                    "</CoordinateLimitForce></objects></ForceSet>", 1)
    assert "CoordinateLimitForce" in text
    path.write_text(text)
    model = oe.load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "j2_coord_1", "j3_coord_1",
                                                       "j3_coord_2", "j3_coord_4"])
    (limit,), _ = coordinate_forces_from_model(model)
    lump = model.body_names.index("lump")
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = model.default_q + rng.uniform(-0.1, 0.1, model.n_q)
        qd = rng.normal(size=model.n_q)
        value, speed, gradient = coordinate_state(limit, q, qd)
        h = 1e-6
        rot = [body_transforms(model, forward_kinematics(model, q + s * h * qd))[0][lump][:3, :3] for s in (1, -1)]
        r0 = body_transforms(model, forward_kinematics(model, q))[0][lump][:3, :3]
        omega = _vee((rot[0] - rot[1]) / (2 * h) @ r0.T)
        assert value == pytest.approx(q[model.coordinate_index("j3_coord_0")])
        assert speed == pytest.approx(omega[0], abs=1e-7)
        np.testing.assert_allclose(gradient @ qd, speed, atol=1e-14)


def test_the_full_coordinate_dae_writes_opensims_speeds(osim, tmp_path):
    """The full-coordinate DAE (simulation.dae) of the FreeJoint/BallJoint model from its default state: its NAME_u
    columns are OpenSim's speeds, equal to OpenSim's Manager's over 0.3 s."""
    from osim_emb.simulation.dae import FullCoordinateDAE
    path = tmp_path / "ball_free.osim"
    path.write_text(ball_free_osim(speeds=(0.4, -0.7, 1.1, 0.9, 0.5, -1.2)))
    model = oe.load_osim(path)
    dae = FullCoordinateDAE.from_osim(path)
    times = np.linspace(0.0, 0.3, 4)
    ours = dae.simulate(0.3, dae.consistent_state(model.default_q, model.default_qdot), t_eval=times, rtol=1e-11,
                        atol=1e-12)
    om = osim.Model(str(path))
    state = om.initSystem()
    manager = osim.Manager(om)
    manager.setIntegratorAccuracy(1e-11)
    manager.initialize(state)
    cs = om.getCoordinateSet()
    worst = 0.0
    for n, t in enumerate(times[1:], start=1):
        s = manager.integrate(float(t))
        worst = max(worst, max(abs(cs.get(i).getSpeedValue(s) - ours[f"{cs.get(i).getName()}_u"].iloc[n])
                               for i in range(cs.getSize())))
    print(f"DAE speeds vs OpenSim's Manager: {worst:.1e} rad/s")
    assert worst < 1e-8
