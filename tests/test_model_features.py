"""Each model feature the OpenSim corpus exercises, in a small model built here, against OpenSim 4.6.

Path points on the ground and on offset frames (of the ground and of bodies), conditional and moving
points, each wrap type on the ground and on a body: body transforms, path points, L and R
(``opensim_compat``) equal OpenSim's ``getLength``/``computeMomentArm``.
"""

import numpy as np
import pytest

from osim_emb.core import kinematics as kin
from osim_emb.io import load_osim
from osim_emb.paths import geometry
from opensim_builders import add_custom_joint_with_coupler

WRAPS = {"WrapSphere": {"radius": 0.04}, "WrapCylinder": {"radius": 0.03, "length": 0.3},
         "WrapEllipsoid": {"dimensions": (0.03, 0.05, 0.04)}, "WrapTorus": {"inner_radius": 0.02, "outer_radius": 0.15}}


def build_feature_model(osim, path, wrap_type=None, wrap_on_ground=True, moving_wraps=True):
    """ground -> upper (pin z) -> lower (pin z, offset 0.3 m down); muscles from the ground or its offset frame."""
    m = osim.Model()
    m.setName("features")
    g = m.getGround()
    upper = osim.Body("upper", 1.5, osim.Vec3(0, -0.15, 0), osim.Inertia(0.01, 0.002, 0.01))
    lower = osim.Body("lower", 1.0, osim.Vec3(0, -0.12, 0), osim.Inertia(0.008, 0.001, 0.008))
    m.addBody(upper)
    m.addBody(lower)
    j1 = osim.PinJoint("shoulder", g, osim.Vec3(0.01, 0, 0.02), osim.Vec3(0, 0, 0.1),
                       upper, osim.Vec3(0, 0, 0), osim.Vec3(0, 0, 0))
    j2 = osim.PinJoint("elbow", upper, osim.Vec3(0, -0.3, 0), osim.Vec3(0.05, 0, 0),
                       lower, osim.Vec3(0, 0, 0), osim.Vec3(0, 0, 0))
    m.addJoint(j1)
    m.addJoint(j2)
    j1.upd_coordinates(0).setName("q_shoulder")
    j1.upd_coordinates(0).setRangeMin(-1.2)
    j1.upd_coordinates(0).setRangeMax(1.4)
    j2.upd_coordinates(0).setName("q_elbow")
    j2.upd_coordinates(0).setRangeMin(0.0)
    j2.upd_coordinates(0).setRangeMax(2.2)
    g_off = osim.PhysicalOffsetFrame("ground_offset", g, osim.Transform(osim.Rotation(0.3, osim.Vec3(0, 0, 1)),
                                                                       osim.Vec3(0.05, 0.02, -0.01)))
    u_off = osim.PhysicalOffsetFrame("upper_offset", upper, osim.Transform(osim.Rotation(-0.4, osim.Vec3(1, 0, 0)),
                                                                          osim.Vec3(0.02, -0.1, 0.01)))
    m.addComponent(g_off)
    m.addComponent(u_off)

    def muscle(name):
        mu = osim.Thelen2003Muscle(name, 200.0, 0.1, 0.1, 0.0)
        m.addForce(mu)
        return mu

    a = muscle("from_ground")
    a.addNewPathPoint("o", g, osim.Vec3(0.03, 0.06, 0.0))
    a.addNewPathPoint("i", lower, osim.Vec3(0.02, -0.05, 0.01))
    b = muscle("offset_frames")
    b.addNewPathPoint("o", g_off, osim.Vec3(-0.02, 0.04, 0.01))
    b.addNewPathPoint("v", u_off, osim.Vec3(0.03, -0.05, 0.0))
    b.addNewPathPoint("i", lower, osim.Vec3(0.0, -0.08, -0.01))
    c = muscle("conditional")
    c.addNewPathPoint("o", g, osim.Vec3(-0.03, 0.05, 0.0))
    c.addNewPathPoint("i", lower, osim.Vec3(-0.02, -0.06, 0.0))
    cp = osim.ConditionalPathPoint()
    cp.setName("via")
    cp.setParentFrame(upper)
    cp.set_location(osim.Vec3(-0.03, -0.2, 0.0))
    cp.setCoordinate(j2.get_coordinates(0))
    cp.setRangeMin(0.5)
    cp.setRangeMax(1.8)
    c.updGeometryPath().updPathPointSet().insert(1, cp)
    cp.thisown = False  # the path point set owns it now
    d = muscle("moving")
    d.addNewPathPoint("o", g, osim.Vec3(0.0, 0.07, 0.03))
    d.addNewPathPoint("i", lower, osim.Vec3(0.01, -0.1, 0.0))
    mp = osim.MovingPathPoint()
    mp.setName("moving_via")
    mp.setParentFrame(upper)
    for axis, pts in (("x", [(0.0, 0.02), (1.0, 0.03), (2.2, 0.01)]), ("y", [(0.0, -0.25), (2.2, -0.28)]),
                      ("z", [(0.0, 0.0), (2.2, 0.01)])):
        sp = osim.SimmSpline()
        for x, y in pts:
            sp.addPoint(x, y)
        getattr(mp, f"set_{axis}_location")(sp)
        getattr(mp, f"set{axis.upper()}Coordinate")(j2.get_coordinates(0))
    d.updGeometryPath().updPathPointSet().insert(1, mp)
    mp.thisown = False
    if wrap_type is not None:
        w = getattr(osim, wrap_type)()
        w.setName("wrap")
        for k, v in WRAPS[wrap_type].items():
            getattr(w, f"set_{k}")(osim.Vec3(*v) if isinstance(v, tuple) else v)
        if wrap_on_ground:
            w.set_translation(osim.Vec3(0.0, 0.0, 0.0))
            w.set_xyz_body_rotation(osim.Vec3(0.1, 0.0, 0.0))
            g.addWrapObject(w)
        else:
            w.set_translation(osim.Vec3(0.0, -0.3, 0.0))
            w.set_xyz_body_rotation(osim.Vec3(0.0, 0.2, 0.0))
            upper.addWrapObject(w)
        for mu in (a, b, d) if moving_wraps or wrap_on_ground else (a, b):
            mu.updGeometryPath().addPathWrap(w)
    m.finalizeConnections()
    m.initSystem()
    m.printToXML(str(path))


def compare_with_opensim(path, model, q):
    """Worst differences: body transforms, active path points (m), L (m), R (m)."""
    from osim_emb.opensim.bridge import OpenSimReference
    ref = OpenSimReference(str(path), model)
    bt = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))
    names = [mu.name for mu in model.muscles]
    out = {"transform": 0.0, "points": 0.0}
    lengths, r = geometry.lengths_and_moment_arms(model, q, opensim_compat=True)
    states = geometry.path_states(model, q, wrapping=False)
    el = er = 0.0
    for n in range(len(q)):
        ref.set_configuration(q[n])
        for k, b in enumerate(model.bodies):
            if ref.model_os.getBodySet().contains(b.name):
                out["transform"] = max(out["transform"], np.abs(ref.body_transform(b.name) - bt[n, k]).max())
        for m_idx, mu in enumerate(model.muscles):
            pts = ref.path_point_positions(mu.name)
            ps = states[m_idx]
            seq = ps.sequence[n][ps.sequence[n] >= 0]
            active = [i for i, p in enumerate(mu.points)
                      if p.kind != "conditional" or p.is_active(q[n:n + 1])[0]]
            assert list(seq) == active
            out["points"] = max(out["points"], np.abs(ps.positions[n, seq] - pts[seq]).max())
            length = ref.muscle_length(mu.name)
            arms = np.array([ref.moment_arm(mu.name, c) for c in model.coordinate_names])
            el = max(el, abs(lengths[n, m_idx] - length))
            er = max(er, np.abs(r[n, :, m_idx] - arms).max())
    out["length"], out["moment_arm"] = el, er
    return names, out


def _poses(model, n=12, seed=0):
    lo, hi = model.coordinate_ranges.T
    return np.random.default_rng(seed).uniform(lo, hi, (n, model.n_q))


def test_points_on_ground_offset_frames_conditional_and_moving(osim, tmp_path):
    path = tmp_path / "features.osim"
    build_feature_model(osim, path)
    model = load_osim(path)
    assert {p.body for mu in model.muscles for p in mu.points} >= {"ground", "upper", "lower"}
    _, err = compare_with_opensim(path, model, _poses(model))
    assert err["transform"] < 1e-12
    assert err["points"] < 1e-12
    assert err["length"] < 1e-12
    assert err["moment_arm"] < 1e-9


def opensim_length_derivative(ref, model, q, muscle, h=1e-6):
    """-dL/dq of OpenSim's own getLength by central differences (an independent moment arm)."""
    out = []
    for k in range(model.n_q):
        dq = np.zeros(model.n_q)
        dq[k] = h
        ref.set_configuration(q + dq)
        lp = ref.muscle_length(muscle)
        ref.set_configuration(q - dq)
        out.append(-(lp - ref.muscle_length(muscle)) / (2 * h))
    ref.set_configuration(q)
    return np.array(out)


def test_moving_point_next_to_a_wrap_on_its_body_matches_opensims_length_derivative(osim, tmp_path):
    """OpenSim's computeMomentArm leaves out a MovingPathPoint's own motion when its neighbour on the path
    (here a tangent point of a wrap on the same body) is on the same body (GeometryPath::produceForces),
    so there it differs from -dL/dq; R equals -dL/dq of OpenSim's getLength."""
    from osim_emb.opensim.bridge import OpenSimReference
    path = tmp_path / "moving_wrap.osim"
    build_feature_model(osim, path, "WrapSphere", False)
    model = load_osim(path)
    q = np.array([[0.22894359, 0.06063005], [-0.67101637, 0.57708935]])
    _, r = geometry.lengths_and_moment_arms(model, q, ["moving"], opensim_compat=True)
    ref = OpenSimReference(str(path), model)
    for n in range(len(q)):
        ref.set_configuration(q[n])
        fd = opensim_length_derivative(ref, model, q[n], "moving")
        assert np.abs(r[n, :, 0] - fd).max() < 1e-7
        arms = np.array([ref.moment_arm("moving", c) for c in model.coordinate_names])
        assert np.abs(arms - fd).max() > 1e-3  # OpenSim's computeMomentArm misses the point's motion here


@pytest.mark.parametrize("on_ground", [True, False], ids=["on_ground", "on_body"])
@pytest.mark.parametrize("wrap_type", sorted(WRAPS))
def test_each_wrap_type_on_ground_and_on_a_body(osim, tmp_path, wrap_type, on_ground):
    path = tmp_path / f"{wrap_type}.osim"
    build_feature_model(osim, path, wrap_type, on_ground, moving_wraps=on_ground)
    model = load_osim(path)
    assert model.wrap_objects[0].body == ("ground" if on_ground else "upper")
    _, err = compare_with_opensim(path, model, _poses(model, 10, seed=1))
    assert err["length"] < 1e-8
    assert err["moment_arm"] < 1e-8


# -- refusals and lenient reading: XML written in the test, no OpenSim needed ------------------------------
def _arm_with(extra_model_xml="", version="40000", forces=""):
    from test_safe_api import ARM
    text = ARM.replace('Version="40000"', f'Version="{version}"')
    if forces:
        text = text.replace("</objects></ForceSet>", forces + "</objects></ForceSet>")
    return text.replace("</Model>", extra_model_xml + "</Model>")


@pytest.mark.parametrize("extra, forces, version, element, reason", [
    ("<ConstraintSet><objects><RollingOnSurfaceConstraint name='roll'/></objects></ConstraintSet>", "", "40000",
     "<RollingOnSurfaceConstraint name='roll'>", "unsupported constraint type RollingOnSurfaceConstraint"),
    ("<components><MyPluginForce name='plugin'/></components>", "", "40000",
     "<MyPluginForce name='plugin'>", "unsupported force type MyPluginForce"),
    ("", "<MyPluginForce name='foot'/>", "40000", "<MyPluginForce name='foot'>", "unsupported force type"),
    ("", "", "10400", "<OpenSimDocument>", "OpenSim 4.6 itself refuses files older than 10500"),
    ("", "", "10600", "<OpenSimDocument>", "older than 10901"),
    ("", "", "30510", "<OpenSimDocument>", "between 30505 and 30516"),
])
def test_unsupported_features_are_refused_by_name(extra, forces, version, element, reason):
    from osim_emb.io import UnsupportedFeatureError, read_osim_string
    with pytest.raises(UnsupportedFeatureError) as err:
        read_osim_string(_arm_with(extra, version, forces), name="m.osim")
    assert err.value.element == element
    assert reason in err.value.reason


def test_contact_bushing_and_spring_forces_are_kept_as_data_and_said_not_applied(caplog):
    """OpenSim's pathless passive forces and actuators (in the ForceSet or among <components>) are read as data:
    the model imports, kinematics and paths are those without them, and the commands that leave them out name
    them (one warning per type)."""
    import logging
    from osim_emb.cli.common import warn_unapplied_forces
    from osim_emb.io import read_osim_string
    from osim_emb.io.convert import document_to_model
    from osim_emb.io.osim_reader import KNOWN_PATHLESS_FORCES, UNAPPLIED_PASSIVE_FORCES
    plain = document_to_model(read_osim_string(_arm_with(), name="m.osim"))
    forces = ("<HuntCrossleyForce name='foot'/><BushingForce name='bush'><appliesForce>false</appliesForce>"
              "</BushingForce><PointToPointSpring name='spring'/><BodyActuator name='push'/>")
    doc = read_osim_string(_arm_with("<components><SmoothSphereHalfSpaceForce name='heel'/></components>",
                                     forces=forces), name="m.osim")
    model = document_to_model(doc)
    kinds = dict(model.extras["forces"])
    assert {k: kinds[k] for k in ("foot", "bush", "spring", "push", "heel")} == {
        "foot": "HuntCrossleyForce", "bush": "BushingForce", "spring": "PointToPointSpring", "push": "BodyActuator",
        "heel": "SmoothSphereHalfSpaceForce"}
    assert set(kinds.values()) <= set(KNOWN_PATHLESS_FORCES)
    assert "BodyActuator" not in UNAPPLIED_PASSIVE_FORCES and "HuntCrossleyForce" in UNAPPLIED_PASSIVE_FORCES
    q = np.array([[0.3, 0.7]])
    np.testing.assert_array_equal(geometry.muscle_lengths(model, q), geometry.muscle_lengths(plain, q))
    with caplog.at_level(logging.WARNING):
        warn_unapplied_forces(model, "simulate")
    assert "simulate does not apply the model's 1 HuntCrossleyForce force(s): foot" in caplog.text
    assert "1 SmoothSphereHalfSpaceForce force(s): heel" in caplog.text


def test_bodies_joints_and_constraints_among_components_equal_opensim(osim, tmp_path):
    """A model built with Model::addComponent (as Moco's examples build theirs): a body, a joint with its offset
    frames and a coupler among the model's <components> (paths /NAME), beside a BodySet body.  Body transforms,
    lengths, moment arms (computeMomentArm), the mass matrix and the accelerations equal OpenSim's."""
    from opensim_builders import assert_equals_opensim
    m = osim.Model()
    m.setName("components")
    upper = osim.Body("upper", 1.5, osim.Vec3(0, -0.15, 0), osim.Inertia(0.01, 0.002, 0.01))
    m.addBody(upper)
    shoulder = osim.PinJoint("shoulder", m.getGround(), osim.Vec3(0), osim.Vec3(0, 0, 0.1), upper, osim.Vec3(0),
                             osim.Vec3(0))
    m.addJoint(shoulder)
    lower = osim.Body("lower", 1.0, osim.Vec3(0, -0.12, 0.01), osim.Inertia(0.008, 0.001, 0.008))
    m.addComponent(lower)
    elbow = osim.PinJoint("elbow", upper, osim.Vec3(0, -0.3, 0), osim.Vec3(0.1, 0, 0), lower, osim.Vec3(0.01, 0, 0),
                          osim.Vec3(0, 0.2, 0))
    m.addComponent(elbow)
    hand = osim.Body("hand", 0.4, osim.Vec3(0, -0.05, 0), osim.Inertia(0.001, 0.0005, 0.001))
    m.addComponent(hand)
    wrist = osim.PinJoint("wrist", lower, osim.Vec3(0, -0.25, 0), osim.Vec3(0), hand, osim.Vec3(0), osim.Vec3(0))
    m.addComponent(wrist)
    coupler = osim.CoordinateCouplerConstraint()
    coupler.setName("wrist_follows_elbow")
    coupler.setIndependentCoordinateNames(osim.ArrayStr("elbow_coord_0", 1))
    coupler.setDependentCoordinateName("wrist_coord_0")
    coupler.setFunction(osim.LinearFunction(0.4, 0.1))
    m.addComponent(coupler)
    actuator = osim.PathActuator()
    actuator.setName("flexor")
    actuator.addNewPathPoint("origin", upper, osim.Vec3(0.03, -0.1, 0))
    actuator.addNewPathPoint("insertion", hand, osim.Vec3(0.02, -0.03, 0.01))
    m.addForce(actuator)
    m.finalizeConnections()
    path = tmp_path / "components.osim"
    m.printToXML(str(path))
    text = path.read_text()
    assert '<Body name="lower">' in text[text.index("<components>"):text.index("</components>")]
    model = load_osim(path)
    assert model.coordinate_names == ["shoulder_coord_0", "elbow_coord_0"]
    assert [b.name for b in model.bodies] == ["upper", "lower", "hand"]
    q = np.array([[0.2, 0.4], [-0.3, 1.1], [0.5, -0.2]])
    qd = np.array([[0.3, -0.5], [1.0, 0.2], [-0.4, 0.8]])
    assert_equals_opensim(path, model, q, qd, "flexor")


def test_station_defined_frames_and_frames_nested_in_bodies_equal_opensim(osim, tmp_path):
    """OpenSim 4.5's StationDefinedFrame (axes from three Stations, one on an offset frame nested in its body's
    <components>, origin at a fourth; ab_axis -y, ab_x_ac_axis +z) as a joint's parent frame and a path point's
    frame: body transforms, L, R (computeMomentArm), M and q̈ equal OpenSim's; a bad axis name, points that do not
    form a triangle, stations on two bodies and a socket naming no Station are refused naming the frame."""
    from osim_emb.io import OsimImportError
    from opensim_builders import assert_equals_opensim
    m = osim.Model()
    m.setName("station_frames")
    b1 = osim.Body("b1", 1.0, osim.Vec3(0, -0.1, 0), osim.Inertia(0.01, 0.002, 0.01))
    m.addBody(b1)
    m.addJoint(osim.PinJoint("j1", m.getGround(), osim.Vec3(0), osim.Vec3(0), b1, osim.Vec3(0), osim.Vec3(0)))
    pof = osim.PhysicalOffsetFrame("pof", b1, osim.Transform(osim.Rotation(0.3, osim.CoordinateAxis(2)),
                                                             osim.Vec3(0.02, -0.1, 0.01)))
    b1.addComponent(pof)
    stations = {}
    for name, frame, location in (("sa", pof, (0.01, 0.02, 0.03)), ("sb", b1, (0.05, -0.3, 0.02)),
                                  ("sc", b1, (-0.04, -0.25, 0.06)), ("so", b1, (0.0, -0.3, 0.0))):
        stations[name] = osim.Station(frame, osim.Vec3(*location))
        stations[name].setName(name)
        m.addComponent(stations[name])
    sdf = osim.StationDefinedFrame()
    sdf.setName("sdf")
    sdf.set_ab_axis("-y")
    sdf.set_ab_x_ac_axis("+z")
    sdf.connectSocket_point_a(stations["sa"])
    sdf.connectSocket_point_b(stations["sb"])
    sdf.connectSocket_point_c(stations["sc"])
    sdf.connectSocket_origin_point(stations["so"])
    m.addComponent(sdf)
    b2 = osim.Body("b2", 0.5, osim.Vec3(0, -0.1, 0.01), osim.Inertia(0.005, 0.001, 0.005))
    m.addBody(b2)
    m.addJoint(osim.PinJoint("j2", sdf, osim.Vec3(0.01, 0, 0), osim.Vec3(0.1, 0, 0), b2, osim.Vec3(0), osim.Vec3(0)))
    actuator = osim.PathActuator()
    actuator.setName("across")
    actuator.addNewPathPoint("origin", m.getGround(), osim.Vec3(0.05, 0.05, 0))
    actuator.addNewPathPoint("via", sdf, osim.Vec3(0.03, 0.01, 0.02))
    actuator.addNewPathPoint("insertion", b2, osim.Vec3(0.02, -0.1, 0.0))
    m.addForce(actuator)
    m.finalizeConnections()
    path = tmp_path / "station_frames.osim"
    m.printToXML(str(path))
    model = load_osim(path)
    q = np.array([[0.2, 0.4], [-0.3, 1.1], [0.5, -0.6]])
    qd = np.array([[0.3, -0.5], [1.0, 0.2], [-0.4, 0.8]])
    assert_equals_opensim(path, model, q, qd, "across")
    from lxml import etree
    text = path.read_text()

    def station(tree, name):
        return next(e for e in tree.iter("Station") if e.get("name") == name)

    def same_as_b(tree):
        station(tree, "sc").find("location").text = station(tree, "sb").find("location").text

    def other_body(tree):
        station(tree, "so").find("socket_parent_frame").text = "/bodyset/b2"

    def no_station(tree):
        next(tree.iter("StationDefinedFrame")).find("socket_point_c").text = "/nowhere"

    def bad_axis(tree):
        next(tree.iter("StationDefinedFrame")).find("ab_axis").text = "-w"
    for change, reason in ((bad_axis, "<ab_axis> must be one of"), (same_as_b, "do not form a triangle"),
                           (other_body, "stations are on different bodies"), (no_station, "names no Station")):
        tree = etree.ElementTree(etree.fromstring(text.encode()))
        change(tree)
        bad = tmp_path / f"{change.__name__}.osim"
        tree.write(str(bad))
        with pytest.raises(OsimImportError, match=reason) as err:
            load_osim(bad)
        assert "StationDefinedFrame name='sdf'" in str(err.value)


def test_joints_listed_from_child_to_parent_are_reversed_as_simbody_does(osim, tmp_path):
    """A joint whose child body is the one nearer the ground (OpenSim 4 builds it, Simbody reverses the mobilizer;
    a 3.x file's <reverse>true</reverse> swaps the frames into this case): a CustomJoint with a rotation and a
    translation, parent frame on the outer body, child frame on the inner one, both offset and turned.  The
    package takes the inverse of the joint's chain (each motion by the negated variable, in reverse order): body
    transforms, L, R, M and q̈ equal OpenSim's; a joint that closes a loop of joints is refused naming it."""
    from osim_emb.io import OsimImportError
    from opensim_builders import assert_equals_opensim
    m = osim.Model()
    m.setName("reversed")
    inner = osim.Body("inner", 1.5, osim.Vec3(0, -0.15, 0.01), osim.Inertia(0.02, 0.003, 0.02))
    outer = osim.Body("outer", 1.0, osim.Vec3(0.01, -0.12, 0), osim.Inertia(0.01, 0.002, 0.012))
    m.addBody(inner)
    m.addBody(outer)
    m.addJoint(osim.PinJoint("hip", m.getGround(), osim.Vec3(0), osim.Vec3(0), inner, osim.Vec3(0), osim.Vec3(0)))
    st = osim.SpatialTransform()
    st.updTransformAxis(0).setCoordinateNames(osim.ArrayStr("knee_angle", 1))
    st.updTransformAxis(0).setAxis(osim.Vec3(*(np.array([0.2, 0.3, 1.0]) / np.linalg.norm([0.2, 0.3, 1.0]))))
    st.updTransformAxis(0).set_function(osim.LinearFunction(1.0, 0.0))
    st.updTransformAxis(3).setCoordinateNames(osim.ArrayStr("knee_slide", 1))
    st.updTransformAxis(3).setAxis(osim.Vec3(1, 0, 0))
    st.updTransformAxis(3).set_function(osim.LinearFunction(1.0, 0.0))
    knee = osim.CustomJoint("knee", outer, osim.Vec3(0.02, 0.05, -0.01), osim.Vec3(0.1, -0.2, 0.3), inner,
                            osim.Vec3(0.01, -0.3, 0.02), osim.Vec3(-0.1, 0.05, 0.2), st)
    m.addJoint(knee)
    actuator = osim.PathActuator()
    actuator.setName("across")
    actuator.addNewPathPoint("origin", m.getGround(), osim.Vec3(0.05, 0.05, 0))
    actuator.addNewPathPoint("via", inner, osim.Vec3(0.03, -0.2, 0.02))
    actuator.addNewPathPoint("insertion", outer, osim.Vec3(0.02, -0.1, 0.0))
    m.addForce(actuator)
    m.finalizeConnections()
    path = tmp_path / "reversed.osim"
    m.printToXML(str(path))
    model = load_osim(path)
    assert sorted(model.coordinate_names) == ["hip_coord_0", "knee_angle", "knee_slide"]
    rng = np.random.default_rng(3)
    q = rng.uniform(-0.6, 0.6, (4, model.n_q))
    qd = rng.normal(size=q.shape)
    assert_equals_opensim(path, model, q, qd, "across", arm_atol=1e-13)
    lenient = load_osim(path, strict=False)  # the lenient import keeps the reversed joint's body (it dropped it)
    assert lenient.coordinate_names == model.coordinate_names and not lenient.extras.get("skipped")
    loop = tmp_path / "loop.osim"
    text = path.read_text()
    start = text.index("<PinJoint")
    end = text.index("</PinJoint>") + len("</PinJoint>")
    pin = (text[start:end].replace('name="hip"', 'name="extra"').replace("/bodyset/inner", "/bodyset/outer")
           .replace('name="hip_coord_0"', 'name="extra_coord_0"'))
    loop.write_text(text[:end] + pin + text[end:])
    with pytest.raises(OsimImportError, match="closes a loop of joints"):
        load_osim(loop)


def test_muscles_among_components_are_read():
    from osim_emb.io import read_osim_string
    from osim_emb.io.convert import document_to_model
    muscle = ("<components><PathActuator name='extra'><GeometryPath name='path'><PathPointSet><objects>"
              "<PathPoint name='a'><socket_parent_frame>/ground</socket_parent_frame><location>0 0.1 0</location></PathPoint>"
              "<PathPoint name='b'><socket_parent_frame>/bodyset/upper</socket_parent_frame><location>0 -0.1 0</location>"
              "</PathPoint></objects></PathPointSet></GeometryPath></PathActuator></components>")
    model = document_to_model(read_osim_string(_arm_with(muscle), name="m.osim"))
    assert [m.name for m in model.muscles] == ["biceps", "triceps", "extra"]
    length = geometry.muscle_lengths(model, [0.0, 0.0], ["extra"])
    assert abs(length[0, 0] - 0.2) < 1e-15


def test_latin1_bytes_and_double_colon_names_are_read_as_opensim_reads_them(tmp_path):
    from osim_emb.io import read_osim
    text = _arm_with(forces="<HuntCrossleyForce::ContactParametersSet name='x'/>").replace(
        '<Model name="two_link">', '<Model name="two_link"><credits>M\xfcller</credits>')
    path = tmp_path / "latin1.osim"
    path.write_bytes(text.encode("latin-1"))
    doc = read_osim(path, strict=False)
    assert doc.credits == "M\xfcller"
    assert any(s.name == "x" for s in doc.skipped)


@pytest.mark.parametrize("version", ["30000", "20302"])
def test_unnamed_33_joint_is_named_after_its_type(version):
    """(OpenSim 2.x files have the 3.3 layout and are read as 3.3.)"""
    from osim_emb.io import read_osim_string
    text = f"""<OpenSimDocument Version="{version}"><Model name="m"><BodySet><objects>
      <Body name="ground"><mass>0</mass></Body>
      <Body name="block"><mass>1</mass><Joint><SliderJoint><parent_body>ground</parent_body>
        <location_in_parent>0 0 0</location_in_parent><orientation_in_parent>0 -1.5707963267949 0</orientation_in_parent>
        <location>0 0 0</location><orientation>0 0 0</orientation>
        <CoordinateSet><objects><Coordinate name="x"><range>-1 1</range></Coordinate></objects></CoordinateSet>
      </SliderJoint></Joint></Body></objects></BodySet></Model></OpenSimDocument>"""
    doc = read_osim_string(text, name="m.osim")
    assert doc.joints[0].name == "sliderjoint"
    # OpenSim reads 3.3 joint frames with 6 significant digits (XMLDocument::addPhysicalOffsetFrame30505_30517)
    assert doc.joints[0].parent.orientation[1] == -1.5708


def test_a_muscle_across_every_joint_type_and_a_coupler(osim, tmp_path):
    """Pin, Slider, Universal, Gimbal, Planar, Weld and a CustomJoint with a spline and a two-coordinate
    coupler in one chain, a muscle from the ground across all of them: L, R (every coordinate) and the
    forward accelerations (forces removed) equal OpenSim's.  (Ball and Free joints: OpenSim's speeds are
    angular velocities, so R about them is compared in tests/test_import_opensim.py by transforms only.)"""
    from osim_emb.core import dynamics as dyn
    from osim_emb.opensim.bridge import OpenSimReference
    rng = np.random.default_rng(3)
    v = lambda s=0.2: osim.Vec3(*rng.uniform(-s, s, 3))  # noqa: E731
    m = osim.Model()
    m.setName("every_joint")
    prev = m.getGround()
    for k, t in enumerate(["PinJoint", "SliderJoint", "UniversalJoint", "GimbalJoint", "PlanarJoint", "WeldJoint"]):
        b = osim.Body(f"b{k}", 1.0 + k, v(0.05), osim.Inertia(0.01, 0.02, 0.03, 0.001, 0.002, 0.003))
        m.addBody(b)
        m.addJoint(getattr(osim, t)(f"j{k}", prev, v(), v(), b, v(), v()))
        prev = b
    b = add_custom_joint_with_coupler(osim, m, prev, v, 2.0, v(0.05), osim.Inertia(0.01, 0.02, 0.03, 0, 0, 0))
    mu = osim.PathActuator()
    mu.setName("across")
    m.addForce(mu)
    mu.addNewPathPoint("o", m.getGround(), osim.Vec3(0.05, 0.1, 0.02))
    for k in range(6):
        mu.addNewPathPoint(f"v{k}", m.getBodySet().get(f"b{k}"), v(0.05))
    mu.addNewPathPoint("i", b, osim.Vec3(0.02, -0.05, 0.01))
    for k in range(m.getCoordinateSet().getSize()):
        c = m.getCoordinateSet().get(k)
        c.setRangeMin(-1.0)
        c.setRangeMax(1.0)
    m.finalizeConnections()
    m.initSystem()
    path = tmp_path / "every_joint.osim"
    m.printToXML(str(path))
    model = load_osim(path)
    assert [d.name for d in model.dependent_coordinates] == ["c_b"]
    q = np.random.default_rng(5).uniform(-0.9, 0.9, (8, model.n_q))
    qd = np.random.default_rng(6).normal(size=q.shape)
    length, r = geometry.lengths_and_moment_arms(model, q, opensim_compat=True)
    qdd = dyn.forward_dynamics(model, q, qd)
    ref = OpenSimReference(str(path), model)
    ref_d = OpenSimReference(str(path), model, disable_forces=True)
    for n in range(len(q)):
        ref.set_configuration(q[n])
        assert abs(length[n, 0] - ref.muscle_length("across")) < 1e-12
        # about the coupler's independent coordinates computeMomentArm is not the partial derivative
        # (docs/moment_arms.md): there R is checked against -dL/dq of OpenSim's getLength
        coupled = [model.coordinate_index(c) for c in ("c_a", "c_c")]
        arms = np.array([ref.moment_arm("across", c) for c in model.coordinate_names])
        fd = opensim_length_derivative(ref, model, q[n], "across")
        assert np.abs(np.delete(r[n, :, 0] - arms, coupled)).max() < 1e-10
        assert np.abs(r[n, coupled, 0] - fd[coupled]).max() < 1e-8
        expected = ref_d.reduced_dynamics(q[n], qd[n])["qddot"]
        assert np.abs(qdd[n] - expected).max() < 1e-9 * max(1.0, np.abs(expected).max())


def test_contact_parameter_sets_are_written_back_with_their_double_colons(osim, tmp_path):
    """OpenSim writes and reads <HuntCrossleyForce::ContactParametersSet>, which XML does not parse: an edited
    model is written with the '::' restored, and OpenSim initializes it with its contact force."""
    from osim_emb import write_osim
    from osim_emb.io.osim_reader import DOUBLE_COLON_MARK
    m = osim.Model()
    m.setName("ball")
    ball = osim.Body("ball", 1.0, osim.Vec3(0), osim.Inertia(0.01))
    joint = osim.SliderJoint("drop", m.getGround(), ball)
    joint.updCoordinate().setName("height")
    m.addBody(ball)
    m.addJoint(joint)
    floor = osim.ContactHalfSpace(osim.Vec3(0), osim.Vec3(0, 0, -1.5707963267949), m.getGround(), "floor")
    sphere = osim.ContactSphere(0.1, osim.Vec3(0), ball, "sphere")
    m.addContactGeometry(floor)
    m.addContactGeometry(sphere)
    contact = osim.HuntCrossleyForce()
    contact.setName("contact")
    contact.addGeometry("floor")
    contact.addGeometry("sphere")
    m.addForce(contact)
    m.finalizeConnections()
    source = tmp_path / "ball.osim"
    m.printToXML(str(source))
    assert "HuntCrossleyForce::ContactParametersSet" in source.read_text()
    model = load_osim(source)
    assert model.extras["forces"] == [("contact", "HuntCrossleyForce")]
    doc = model.extras["document"]
    doc.name = "ball_renamed"  # an edit: the source is rewritten, not copied
    out = tmp_path / "ball_out.osim"
    write_osim(doc, out)
    text = out.read_text()
    assert "HuntCrossleyForce::ContactParametersSet" in text and DOUBLE_COLON_MARK not in text
    assert 'name="ball_renamed"' in text
    written = osim.Model(str(out))
    written.initSystem()
    assert written.getForceSet().get("contact").getConcreteClassName() == "HuntCrossleyForce"
