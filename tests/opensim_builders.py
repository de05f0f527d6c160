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
