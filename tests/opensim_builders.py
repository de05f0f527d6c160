"""Small OpenSim models built with the API for the tests (shared by several test files)."""

from __future__ import annotations


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
