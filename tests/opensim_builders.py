"""Small OpenSim models built with the API for the tests (shared by several test files)."""

from __future__ import annotations

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
    from osim_emb.opensim.static_optimization import read_storage
    return read_storage(path)


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
