"""Small OpenSim models built with the API for the tests (shared by several test files)."""

from __future__ import annotations

import math

import numpy as np


def add_custom_joint_with_coupler(osim, model, parent, vec, mass: float, com, inertia):
    """Append body ``b_custom`` on a CustomJoint (two rotations about skew axes, a SimmSpline translation)
    whose coordinate ``c_b`` follows a two-coordinate coupler 0.7 c_a - 0.4 c_c + 0.1; returns the body.
    ``vec()`` gives the joint frames' offsets."""
    b = osim.Body("b_custom", mass, com, inertia)
    model.addBody(b)
    st = osim.SpatialTransform()
    for ax, cname, axis in ((0, "c_a", (1, 1, 0)), (1, "c_b", (0, 1, 1)), (3, "c_c", (1, 0, 0))):
        st.updTransformAxis(ax).setCoordinateNames(osim.ArrayStr(cname, 1))
        st.updTransformAxis(ax).setAxis(osim.Vec3(*axis))
        st.updTransformAxis(ax).set_function(osim.LinearFunction(1, 0))
    sp = osim.SimmSpline()
    for x, y in [(-1, 0.0), (0, 0.01), (0.5, 0.03), (1, 0.02)]:
        sp.addPoint(x, y)
    st.updTransformAxis(3).set_function(sp)
    model.addJoint(osim.CustomJoint("custom", parent, vec(), vec(), b, vec(), vec(), st))
    cc = osim.CoordinateCouplerConstraint()
    cc.setName("coupler2")
    names = osim.ArrayStr()
    names.append("c_a")
    names.append("c_c")
    cc.setIndependentCoordinateNames(names)
    cc.setDependentCoordinateName("c_b")
    coef = osim.ArrayDouble()
    for c in (0.7, -0.4, 0.1):
        coef.append(c)
    cc.setFunction(osim.LinearFunction(coef))
    model.addConstraint(cc)
    return b


def pin_arm(osim, name: str, *, torso: bool = False, shoulder_orientation=(0.0, 0.0, 0.0),
            elbow_orientation=(0.0, 0.0, 0.0), elbow_child_orientation=None, coordinates=(("q1", -1.0, 1.0),
                                                                                        ("q2", -1.0, 1.0))):
    """Ground (or a 5 kg torso welded to it) - humerus (pin "shoulder", 0.3 m above its origin) - forearm (pin
    "elbow" 0.3 m below the humerus origin, 0.25 m above the forearm's); 1 kg bodies, inertia 0.1; the pins' frame
    orientations (parent side; child side of the elbow: the same unless given) and the coordinates' (name, min,
    max). Returns (model, humerus, forearm, torso or None)."""
    v = osim.Vec3
    m = osim.Model()
    m.setName(name)
    hum = osim.Body("humerus", 1.0, v(0), osim.Inertia(0.1))
    fore = osim.Body("forearm", 1.0, v(0), osim.Inertia(0.1))
    parent, trunk = m.getGround(), None
    if torso:
        parent = trunk = osim.Body("torso", 5.0, v(0), osim.Inertia(0.1))
        m.addBody(parent)
    m.addBody(hum)
    m.addBody(fore)
    if torso:
        m.addJoint(osim.WeldJoint("weld", m.getGround(), v(0), v(0), parent, v(0), v(0)))
    child = elbow_orientation if elbow_child_orientation is None else elbow_child_orientation
    j1 = osim.PinJoint("shoulder", parent, v(0), v(*shoulder_orientation), hum, v(0, 0.3, 0), v(0))
    j2 = osim.PinJoint("elbow", hum, v(0, -0.3, 0), v(*elbow_orientation), fore, v(0, 0.25, 0), v(*child))
    for j, (cname, lo, hi) in zip((j1, j2), coordinates):
        m.addJoint(j)
        j.updCoordinate().setName(cname)
        j.updCoordinate().setRangeMin(lo)
        j.updCoordinate().setRangeMax(hi)
    return m, hum, fore, trunk


def package_values(model, q, qd) -> dict:
    """What the tests compare with OpenSim at configurations q and speeds qd: body transforms, lengths and moment
    arms (opensim_compat), the dynamics terms and the forward accelerations."""
    from osim_emb.core import dynamics as dyn
    from osim_emb.core import kinematics as kin
    from osim_emb.paths import geometry
    lengths, arms = geometry.lengths_and_moment_arms(model, q, opensim_compat=True)
    return {"transforms": kin.body_transforms(model, kin.forward_kinematics(model, q, order=0)),
            "lengths": lengths, "arms": arms, "terms": dyn.dynamics_terms(model, q, qd),
            "qdd": dyn.forward_dynamics(model, q, qd)}


def assert_equals_opensim(path, model, q, qd, unit: str, *, arm_atol: float = 1e-14) -> None:
    """At each configuration q[n] (speeds qd[n]): every body's ground transform (1e-14), the length (1e-14 m) and
    moment arms (``arm_atol``) of one path unit, the mass matrix (1e-12 relative) and the forward accelerations with
    forces removed (1e-10) of the package equal OpenSim's API on the model file ``path``."""
    import numpy as np
    from osim_emb.opensim.bridge import OpenSimReference
    ours = package_values(model, q, qd)
    ref = OpenSimReference(str(path), model)
    ref_d = OpenSimReference(str(path), model, disable_forces=True)
    m = [mu.name for mu in model.muscles].index(unit)
    for n in range(len(q)):
        ref.set_configuration(q[n])
        for k, body in enumerate(model.bodies):
            np.testing.assert_allclose(ref.body_transform(body.name), ours["transforms"][n, k], rtol=0, atol=1e-14)
        assert abs(ref.muscle_length(unit) - ours["lengths"][n, m]) < 1e-14
        for k, c in enumerate(model.coordinate_names):
            assert abs(ref.moment_arm(unit, c) - ours["arms"][n, k, m]) < arm_atol, (n, c)
        r = ref_d.reduced_dynamics(q[n], qd[n])
        np.testing.assert_allclose(r["mass"], ours["terms"].mass[n], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(r["qddot"], ours["qdd"][n], rtol=1e-10, atol=1e-10)


def with_element_text(source, tag: str, value: str, destination) -> None:
    """A copy of the model file ``source`` with the first ``<tag>``'s text replaced by ``value``."""
    text = source.read_text()
    start = text.index(f"<{tag}>") + len(f"<{tag}>")
    end = text.index(f"</{tag}>", start)
    destination.write_text(text[:start] + value + text[end:])


def read_sto(path):
    """A storage file, OpenSim's state labels (a simulate/simulate-muscles output) given the package's names."""
    from osim_emb.io.motion import from_opensim_states
    from osim_emb.opensim.static_optimization import read_storage
    return from_opensim_states(read_storage(path))


def cubic(c, t):
    return c[0] + c[1] * t + c[2] * t**2 + c[3] * t**3


def cubic_rate(c, t):
    return c[1] + 2 * c[2] * t + 3 * c[3] * t**2


def cubic_acceleration(c, t):
    return 2 * c[2] + 6 * c[3] * t


def opensim_static_optimization(osim, model_path, tmp_path, times, convergence, coef):
    """OpenSim's StaticOptimization (AnalyzeTool) along q(t) = coef[name] cubics: (coordinate names, activation
    and force tables)."""
    model = osim.Model(str(model_path))
    model.initSystem()
    cs = model.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    cols, data = [], []
    for n in names:
        p = cs.get(n).getAbsolutePathString()
        cols += [p + "/value", p + "/speed"]
        data += [cubic(coef[n], times), cubic_rate(coef[n], times)]
    data = np.array(data).T
    tmp_path.mkdir(parents=True, exist_ok=True)
    states = tmp_path / "states.sto"
    with open(states, "w") as f:
        f.write(f"states\nversion=1\nnRows={len(times)}\nnColumns={len(cols) + 1}\ninDegrees=no\nendheader\n")
        f.write("time\t" + "\t".join(cols) + "\n")
        for t, row in zip(times, data):
            f.write(f"{t:.17g}\t" + "\t".join(f"{v:.17g}" for v in row) + "\n")
    from osim_emb.opensim.static_optimization import opensim_static_optimization as run
    res = run(model_path, states, convergence=convergence, out_dir=tmp_path / "run")
    act, frc = res["activation"], res["force"]
    return names, act, frc


def opensim_static_optimization_inputs(osim, model_path, names, times, coef):
    """OpenSim's moment arms, lengths, speeds and (muscle-free) inverse dynamics at the frames."""
    model = osim.Model(str(model_path))
    state = model.initSystem()
    quiet = osim.Model(str(model_path))
    for j in range(quiet.getMuscles().getSize()):
        quiet.getMuscles().get(j).set_appliesForce(False)
    qstate = quiet.initSystem()
    ids = osim.InverseDynamicsSolver(quiet)
    muscles = model.getMuscles()
    mnames = [muscles.get(j).getName() for j in range(muscles.getSize())]
    N, nq, m = len(times), len(names), len(mnames)
    R = np.zeros((N, nq, m))
    L = np.zeros((N, m))
    V = np.zeros((N, m))
    tau = np.zeros((N, nq))
    fopt = np.zeros((N, m))
    for i, t in enumerate(times):
        for mm, ss in ((model, state), (quiet, qstate)):
            for n in names:
                c = mm.getCoordinateSet().get(n)
                c.setValue(ss, cubic(coef[n], t), False)
                c.setSpeedValue(ss, cubic_rate(coef[n], t))
            mm.realizeVelocity(ss)
        for j in range(m):
            mus = muscles.get(j)
            L[i, j], V[i, j] = mus.getLength(state), mus.getLengtheningSpeed(state)
            fopt[i, j] = mus.calcInextensibleTendonActiveFiberForce(state, 1.0)
            for k, n in enumerate(names):
                R[i, k, j] = mus.computeMomentArm(state, model.getCoordinateSet().get(n))
        udot = osim.Vector(nq, 0.0)
        for k, n in enumerate(names):
            udot.set(k, cubic_acceleration(coef[n], t))
        tv = ids.solve(qstate, udot)
        tau[i] = [tv.get(k) for k in range(nq)]
    return mnames, R, L, V, tau, fopt


def model_with_forces(osim, source, forces, path):
    """A copy of the model file ``source`` with ``forces`` ({name: an OpenSim Force}) added, written to ``path``."""
    m = osim.Model(str(source))
    for name, force in forces.items():
        force.setName(name)
        m.addForce(force)
    m.finalizeConnections()
    m.printToXML(str(path))
    return path


# -- external loads and motions written as OpenSim files (tests of external loads and joint reactions) ---------

T = np.linspace(0.0, 0.4, 41)  # the data's times (0.01 s); the motions' frames are among them


def write_loads(folder, forces, data_columns):
    """An ExternalLoads XML with ``forces`` (name, body, force frame, point frame, force id, point id, torque id)
    and its data file of ``data_columns`` (label -> values at T)."""
    items = "".join(
        f"<ExternalForce name=\"{n}\"><isDisabled>false</isDisabled><applied_to_body>{b}</applied_to_body>"
        f"<force_expressed_in_body>{ff}</force_expressed_in_body><point_expressed_in_body>{pf}"
        f"</point_expressed_in_body><force_identifier>{fi}</force_identifier><point_identifier>{pi}"
        f"</point_identifier><torque_identifier>{ti}</torque_identifier></ExternalForce>"
        for n, b, ff, pf, fi, pi, ti in forces)
    xml = folder / "loads.xml"
    xml.write_text(f"<?xml version=\"1.0\" encoding=\"UTF-8\" ?><OpenSimDocument Version=\"40000\"><ExternalLoads "
                   f"name=\"loads\"><objects>{items}</objects><groups /><datafile>loads.mot</datafile>"
                   "</ExternalLoads></OpenSimDocument>")
    labels = list(data_columns)
    rows = [f"{t:.17g}\t" + "\t".join(f"{data_columns[c][i]:.17g}" for c in labels) for i, t in enumerate(T)]
    (folder / "loads.mot").write_text(f"loads\nversion=1\nnRows={len(T)}\nnColumns={len(labels) + 1}\ninDegrees=no\n"
                                      "endheader\ntime\t" + "\t".join(labels) + "\n" + "\n".join(rows) + "\n")
    return xml


def pendulum_loads(folder):
    """Two loads on the double pendulum: on rod2 a force in ground at a moving point in ground; on rod1 a force
    and a torque in rod1's frame at a point fixed in rod1 (body-frame data)."""
    s = np.sin(7 * T)
    cols = {"tip_vx": 3 + s, "tip_vy": -5 + 2 * T, "tip_vz": 0.5 * s,
            "tip_px": 0.3 + 0.1 * T, "tip_py": -1.4 + 0.2 * s, "tip_pz": 0.05 * T,
            "mid_vx": 1.0 + T, "mid_vy": 2 * s, "mid_vz": -0.3 + 0 * T,
            "mid_px": 0.0 + 0 * T, "mid_py": -0.5 + 0 * T, "mid_pz": 0.02 + 0 * T,
            "mid_torque_x": 0.1 * s, "mid_torque_y": 0 * T, "mid_torque_z": 0.4 - T}
    return write_loads(folder, [("tip", "rod2", "ground", "ground", "tip_v", "tip_p", ""),
                                ("mid", "rod1", "rod1", "rod1", "mid_v", "mid_p", "mid_torque_")], cols)


def write_motion_file(path, names, coef, times):
    """q_k(t) = a + b t + c t² (radians): OpenSim's quintic and the package's cubic spline both give q̈ exactly."""
    rows = [f"{t:.17g}\t" + "\t".join(f"{a + b * t + c * t * t:.17g}" for a, b, c in (coef[n] for n in names))
            for t in times]
    path.write_text(f"motion\nversion=1\nnRows={len(times)}\nnColumns={len(names) + 1}\ninDegrees=no\nendheader\n"
                    "time\t" + "\t".join(names) + "\n" + "\n".join(rows) + "\n")
    return path


def build_shoulder(osim, path, kind):
    """ground -weld- thorax -(kind)- scapula -pin- humerus; offsets with orientations on both sides, a winging axis
    off the joint origin; one path thorax -> scapula, one thorax -> scapula -> humerus."""
    m = osim.Model()
    m.setName(f"{kind}_test")
    thorax = osim.Body("thorax", 10.0, osim.Vec3(0, -0.1, 0), osim.Inertia(0.5, 0.3, 0.4))
    scapula = osim.Body("scapula", 0.5, osim.Vec3(0.01, -0.02, 0.03), osim.Inertia(0.002, 0.003, 0.0025))
    humerus = osim.Body("humerus", 2.0, osim.Vec3(0, -0.15, 0), osim.Inertia(0.01, 0.002, 0.01))
    for b in (thorax, scapula, humerus):
        m.addBody(b)
    m.addJoint(osim.WeldJoint("ground_thorax", m.getGround(), osim.Vec3(0, 1.2, 0), osim.Vec3(0.1, -0.2, 0.05),
                              thorax, osim.Vec3(0), osim.Vec3(0)))
    frames = (thorax, osim.Vec3(0.02, -0.05, 0.07), osim.Vec3(0.1, 0.3, -0.2), scapula, osim.Vec3(-0.01, 0.02, -0.03),
              osim.Vec3(0.2, -0.1, 0.4), osim.Vec3(0.08, 0.15, 0.07))
    if kind == "ScapulothoracicJoint":
        joint = osim.ScapulothoracicJoint("scapulothoracic", *frames, osim.Vec2(0.012, -0.025), 0.6)
    else:
        joint = osim.EllipsoidJoint("shoulder_ellipsoid", *frames)
    m.addJoint(joint)
    pin = osim.PinJoint("gh", scapula, osim.Vec3(0.03, -0.02, 0.01), osim.Vec3(0, 0, 0.3), humerus, osim.Vec3(0, 0.1, 0),
                        osim.Vec3(0))
    m.addJoint(pin)
    for i in range(joint.numCoordinates()):
        joint.upd_coordinates(i).setRangeMin(-0.8)
        joint.upd_coordinates(i).setRangeMax(0.8)
    pin.upd_coordinates(0).setRangeMin(-1.0)
    pin.upd_coordinates(0).setRangeMax(1.5)
    for name, points in (("serratus", [("thorax", (0.05, -0.1, 0.08)), ("scapula", (-0.02, 0.01, 0.04))]),
                         ("deltoid", [("thorax", (0.03, 0.02, 0.1)), ("scapula", (0.02, 0.03, 0.0)),
                                      ("humerus", (0.01, -0.12, 0.005))])):
        actuator = osim.PathActuator()
        actuator.setName(name)
        for k, (body, location) in enumerate(points):
            actuator.addNewPathPoint(f"{name}_p{k}", m.getBodySet().get(body), osim.Vec3(*location))
        m.addForce(actuator)
    m.finalizeConnections()
    m.printToXML(str(path))


def build_welded(osim, path):
    """ground -pin z- crank -universal (x, y)- coupler, and a lump on a FreeJoint welded (WeldConstraint) to a frame
    of the coupler where it is at the defaults: eight coordinates, six equations (rotations and origins), two
    degrees of freedom; a path from ground to the coupler, one from the crank to the lump."""
    m = osim.Model()
    m.setName("welded")
    crank = osim.Body("crank", 1.0, osim.Vec3(0, -0.15, 0), osim.Inertia(0.01, 0.001, 0.01))
    coupler = osim.Body("coupler", 1.5, osim.Vec3(0, -0.25, 0), osim.Inertia(0.03, 0.002, 0.03))
    lump = osim.Body("lump", 2.0, osim.Vec3(0.02, -0.05, 0.01), osim.Inertia(0.02, 0.01, 0.015, 0.001, 0.0, 0.002))
    j1 = osim.PinJoint("j1", m.getGround(), osim.Vec3(0), osim.Vec3(0), crank, osim.Vec3(0), osim.Vec3(0))
    j2 = osim.UniversalJoint("j2", crank, osim.Vec3(0, -0.3, 0), osim.Vec3(0), coupler, osim.Vec3(0), osim.Vec3(0))
    j3 = osim.FreeJoint("j3", m.getGround(), lump)
    add_parts(m, (crank, coupler, lump), (j1, j2, j3))
    for c, v in zip([j1.upd_coordinates(0), j2.upd_coordinates(0), j2.upd_coordinates(1)], (0.3, 0.4, -0.2)):
        c.setDefaultValue(v)
        c.setRangeMin(v - 1.0)
        c.setRangeMax(v + 1.0)
    on_coupler = osim.Transform(osim.Rotation(0.3, osim.Vec3(0, 0, 1)), osim.Vec3(0.04, -0.45, 0.02))
    s = m.initSystem()
    pose = coupler.getTransformInGround(s).compose(on_coupler)
    angles = pose.R().convertRotationToBodyFixedXYZ()
    for k in range(3):
        j3.upd_coordinates(k).setDefaultValue(angles.get(k))
        j3.upd_coordinates(3 + k).setDefaultValue(pose.p().get(k))
    m.addConstraint(osim.WeldConstraint("weld", coupler, on_coupler, lump, osim.Transform()))
    add_path_actuator(osim, m, "m1", [("ground", (0.1, 0.1, 0.0)), ("coupler", (0.02, -0.2, 0.0))])
    add_path_actuator(osim, m, "m2", [("crank", (0.03, -0.1, 0.01)), ("lump", (0.0, -0.05, 0.02))])
    m.finalizeConnections()
    m.printToXML(str(path))


def add_parts(model, bodies, joints) -> None:
    for b in bodies:
        model.addBody(b)
    for j in joints:
        model.addJoint(j)


def add_path_actuator(osim, model, name: str, points) -> None:
    """A PathActuator through (body name or "ground", location) points."""
    actuator = osim.PathActuator()
    actuator.setName(name)
    for k, (body, location) in enumerate(points):
        frame = model.getGround() if body == "ground" else model.getBodySet().get(body)
        actuator.addNewPathPoint(f"{name}_{k}", frame, osim.Vec3(*location))
    model.addForce(actuator)


def build_coupled_weld(osim, path):
    """A planar loop redundant between a WeldConstraint and two couplers (the structure of OpenSim's
    CoupledCoordinatesMPPsMomentArmTest): ground -pin z- crank -pin z- link, a foot on a PlanarJoint welded to the
    link's tip; couplers make each pin angle half the foot's, so the weld's rotation equation already holds (one
    degree of freedom); a path actuator from the crank to the foot."""
    m = osim.Model()
    m.setName("coupled_weld")
    crank = osim.Body("crank", 1.0, osim.Vec3(0, -0.15, 0), osim.Inertia(0.01, 0.002, 0.01))
    link = osim.Body("link", 1.5, osim.Vec3(0.01, -0.25, 0), osim.Inertia(0.03, 0.003, 0.03))
    foot = osim.Body("foot", 0.8, osim.Vec3(0.05, -0.02, 0), osim.Inertia(0.004, 0.004, 0.006))
    j1 = osim.PinJoint("knee1", m.getGround(), osim.Vec3(0), osim.Vec3(0), crank, osim.Vec3(0), osim.Vec3(0))
    j2 = osim.PinJoint("knee2", crank, osim.Vec3(0, -0.3, 0), osim.Vec3(0), link, osim.Vec3(0), osim.Vec3(0))
    j3 = osim.PlanarJoint("foot_joint", m.getGround(), foot)
    add_parts(m, (crank, link, foot), (j1, j2, j3))
    for c in (j1.upd_coordinates(0), j2.upd_coordinates(0)):
        c.setDefaultValue(0.35)
        c.setRangeMin(-1.0)
        c.setRangeMax(1.5)
    s = m.initSystem()
    tip = link.getTransformInGround(s).compose(osim.Transform(osim.Vec3(0, -0.5, 0)))
    j3.upd_coordinates(0).setDefaultValue(0.7)
    j3.upd_coordinates(0).setRangeMin(-2.0)
    j3.upd_coordinates(0).setRangeMax(3.0)
    for k in (1, 2):
        j3.upd_coordinates(k).setDefaultValue(tip.p().get(k - 1))
        j3.upd_coordinates(k).setRangeMin(-2.0)
        j3.upd_coordinates(k).setRangeMax(2.0)
    m.addConstraint(osim.WeldConstraint("weld", link, osim.Transform(osim.Vec3(0, -0.5, 0)), foot, osim.Transform()))
    for name in ("knee1", "knee2"):
        coupler = osim.CoordinateCouplerConstraint()
        coupler.setName(f"{name}_coupler")
        independent = osim.ArrayStr()
        independent.append("foot_joint_coord_0")
        coupler.setIndependentCoordinateNames(independent)
        coupler.setDependentCoordinateName(f"{name}_coord_0")
        coupler.setFunction(osim.LinearFunction(0.5, 0.0))
        m.addConstraint(coupler)
    add_path_actuator(osim, m, "m1", [("crank", (0.03, -0.1, 0.0)), ("foot", (0.1, 0.02, 0.0))])
    m.finalizeConnections()
    m.printToXML(str(path))


def body_xyz_offset(osim, angles, p):
    """A SimTK Transform: body-fixed X-Y-Z rotation by ``angles`` (rad), then the origin ``p``."""
    axes = [osim.CoordinateAxis(k) for k in range(3)]
    r = osim.Rotation(osim.BodyRotationSequence, angles[0], axes[0], angles[1], axes[1], angles[2], axes[2])
    return osim.Transform(r, osim.Vec3(*p))


def build_arm26_with_force_elements(osim, source, path, *, contact: bool = True):
    """arm26 (``source``) with a force element of every kind that acts on its arm: the hand's sphere pressed into
    a wall (a ground half space x < 0.23 m; the static-optimization tests' reaching motions pull the hand out of it
    at t ≈ 0.08 s; a HuntCrossleyForce with friction), a PointToPointSpring from above the shoulder to the forearm, a
    BushingForce across the elbow between offset frames of the humerus and the forearm, a SpringGeneralizedForce on
    the elbow and a PrescribedForce on the forearm (a ground force at a forearm point, a torque). ``contact``: False
    leaves the wall and the sphere out."""
    m = osim.Model(str(source))
    g = m.getGround()
    humerus = m.getBodySet().get("r_humerus")
    forearm = m.getBodySet().get("r_ulna_radius_hand")
    if contact:
        add_wall_contact(osim, m, forearm)
    spring = osim.PointToPointSpring(g, osim.Vec3(0.0, 0.95, 0.17), forearm, osim.Vec3(0.0, -0.2, 0.0), 40.0, 0.2)
    spring.setName("strap")
    m.addForce(spring)

    bushing = osim.BushingForce("elbow_pad", humerus, body_xyz_offset(osim, (0.1, -0.1, 0.2), (0.01, -0.25, 0.0)),
                                forearm, body_xyz_offset(osim, (0.0, 0.05, -0.3), (0.0, 0.04, 0.01)), osim.Vec3(300, 200, 250),
                                osim.Vec3(2.0, 3.0, 1.5), osim.Vec3(3.0, 2.0, 2.5), osim.Vec3(0.05, 0.04, 0.03))
    m.addForce(bushing)
    coil = osim.SpringGeneralizedForce("r_elbow_flex")
    coil.setName("elbow_coil")
    coil.setStiffness(3.0)
    coil.setRestLength(0.2)
    coil.setViscosity(0.1)
    m.addForce(coil)
    push = osim.PrescribedForce("push", forearm)
    push.setForceFunctions(osim.LinearFunction(8.0, -2.0), osim.Constant(3.0), osim.Constant(-1.0))
    push.setPointFunctions(osim.Constant(0.01), osim.Constant(-0.25), osim.Constant(0.0))
    push.setTorqueFunctions(osim.Constant(0.1), osim.Constant(0.0), osim.LinearFunction(-1.0, 0.3))
    push.set_forceIsGlobal(True)
    push.set_pointIsGlobal(False)
    m.addForce(push)
    m.finalizeConnections()
    m.printToXML(str(path))
    return path


def add_wall_contact(osim, m, forearm) -> None:
    """A ground half space x < 0.23 m (its x axis, into it, along ground's -x) and a 4 cm sphere on the forearm at
    the hand, in a HuntCrossleyForce (low dissipation: the hand leaves the wall at 0.8 m/s, which a dissipation of 1
    would turn into a pull, hence no force)."""
    m.addContactGeometry(osim.ContactHalfSpace(osim.Vec3(0.23, 0, 0), osim.Vec3(0, 0, math.pi), m.getGround(), "wall"))
    m.addContactGeometry(osim.ContactSphere(0.04, osim.Vec3(0, -0.3, 0), forearm, "palm"))
    contact = osim.HuntCrossleyForce()
    contact.setName("palm_wall")
    contact.addGeometry("wall")
    contact.addGeometry("palm")
    contact.setStiffness(1e4)
    contact.setDissipation(0.3)
    contact.setStaticFriction(0.6)
    contact.setDynamicFriction(0.4)
    contact.setViscousFriction(0.2)
    contact.setTransitionVelocity(0.1)
    m.addForce(contact)


def with_forces_switched_off(osim, source, path, names):
    """A copy of the model file ``source`` at ``path`` with the named forces (muscles or any other) switched off
    (``appliesForce`` false), by OpenSim's API."""
    m = osim.Model(str(source))
    for name in names:
        m.updForceSet().get(name).set_appliesForce(False)
    m.printToXML(str(path))
    return path
