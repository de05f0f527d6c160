"""`osim-emb convert OLD.osim -o NEW.osim` on OpenSim 3.x files with closed loops and Thelen / Millard muscles: the
regenerated OpenSim 4 file keeps the loop-closing constraints (OpenSim 4.6 assembles it to the original's poses),
gives the muscles the min_control OpenSim 4.6 reads from the original (and requires), and one warning names what it
leaves out.  The models are written here (version 30000, as OpenSim 3.3 writes them)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from lxml import etree

from osim_emb.cli.main import main

INERTIA = "<inertia_xx>0.001</inertia_xx><inertia_yy>0.001</inertia_yy><inertia_zz>0.001</inertia_zz>" \
          "<inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>"


def _coordinate(name: str, default: float, free: bool = False, motion: str = "rotational",
                lo: float = -3.14159, hi: float = 3.14159) -> str:
    return (f"<Coordinate name='{name}'><motion_type>{motion}</motion_type><default_value>{default}</default_value>"
            f"<range>{lo} {hi}</range><clamped>false</clamped><locked>false</locked>"
            + ("<is_free_to_satisfy_constraints>true</is_free_to_satisfy_constraints>" if free else "")
            + "</Coordinate>")


def _body(name: str, joint: str, parent: str, at: str, coordinates: str, joint_type: str = "PinJoint",
          orientation: str = "0 0 0") -> str:
    return (f"<Body name='{name}'><mass>1</mass><mass_center>0.05 0 0</mass_center>{INERTIA}"
            f"<Joint><{joint_type} name='{joint}'><parent_body>{parent}</parent_body>"
            f"<location_in_parent>{at}</location_in_parent><orientation_in_parent>{orientation}</orientation_in_parent>"
            "<location>0 0 0</location><orientation>0 0 0</orientation>"
            f"<CoordinateSet><objects>{coordinates}</objects></CoordinateSet></{joint_type}></Joint></Body>")


def _universal_body(name: str, joint: str, parent: str, at: str, first: str, second: str, default: float) -> str:
    """A body on a 3.x CustomJoint turning about z (``first``), then about the new y (``second``)."""
    def axis(k: str, coordinate: str, direction: str) -> str:
        function = ("<function><LinearFunction><coefficients>1 0</coefficients></LinearFunction></function>"
                    if coordinate else "")
        return (f"<TransformAxis name='{k}'>{function}<coordinates>{coordinate}</coordinates>"
                f"<axis>{direction}</axis></TransformAxis>")
    axes = (axis("rotation1", first, "0 0 1") + axis("rotation2", second, "0 1 0") + axis("rotation3", "", "1 0 0")
            + axis("translation1", "", "1 0 0") + axis("translation2", "", "0 1 0")
            + axis("translation3", "", "0 0 1"))
    return _body(name, joint, parent, at, _coordinate(first, default, free=True) + _coordinate(second, 0.0, free=True),
                 joint_type="CustomJoint").replace("</CoordinateSet>", f"</CoordinateSet><SpatialTransform>{axes}"
                                                                     "</SpatialTransform>")


def _weld(name: str, body1: str, body2: str, frame1: tuple[str, str] = ("0 0 0", "0 0 0"),
          frame2: tuple[str, str] = ("0 0 0", "0 0 0"), disabled: bool = False) -> str:
    """A 3.x WeldConstraint: each body's (location, orientation) of the welded frames."""
    return (f"<WeldConstraint name='{name}'><isDisabled>{str(disabled).lower()}</isDisabled><body_1>{body1}</body_1>"
            f"<body_2>{body2}</body_2><location_body_1>{frame1[0]}</location_body_1><orientation_body_1>{frame1[1]}"
            f"</orientation_body_1><location_body_2>{frame2[0]}</location_body_2><orientation_body_2>{frame2[1]}"
            "</orientation_body_2></WeldConstraint>")


def _muscle(tag: str, name: str, body1: str, body2: str, min_control: float, minimum_activation: float,
            extra: str = "") -> str:
    return (f"<{tag} name='{name}'><isDisabled>false</isDisabled><min_control>{min_control}</min_control>"
            "<max_control>1</max_control><GeometryPath><PathPointSet><objects>"
            f"<PathPoint name='{name}_1'><location>0.02 0.01 0</location><body>{body1}</body></PathPoint>"
            f"<PathPoint name='{name}_2'><location>0.05 0.01 0</location><body>{body2}</body></PathPoint>"
            "</objects></PathPointSet></GeometryPath><max_isometric_force>500</max_isometric_force>"
            "<optimal_fiber_length>0.05</optimal_fiber_length><tendon_slack_length>0.03</tendon_slack_length>"
            f"<pennation_angle_at_optimal>0</pennation_angle_at_optimal><minimum_activation>{minimum_activation}"
            f"</minimum_activation>{extra}</{tag}>")


def _document(name: str, bodies: str, constraints: str = "", forces: str = "", more: str = "") -> str:
    return (f"<?xml version='1.0' encoding='UTF-8' ?>\n<OpenSimDocument Version='30000'><Model name='{name}'>"
            "<gravity>0 -9.80665 0</gravity><BodySet><objects>"
            f"<Body name='ground'><mass>0</mass><mass_center>0 0 0</mass_center>{INERTIA}<Joint/></Body>{bodies}"
            f"</objects></BodySet><ConstraintSet><objects>{constraints}</objects></ConstraintSet>"
            f"<ForceSet><objects>{forces}</objects></ForceSet>{more}</Model></OpenSimDocument>\n")


#: A four-bar linkage (ground 0.4 m, crank 0.1 m, coupler 0.35 m, rocker 0.3 m) closed by a PointConstraint, the
#: coupler on a universal joint (so that the constraint's three equations are independent: OpenSim's assembler fails
#: on a planar loop's redundant one); the crank drives it (the other angles are free to satisfy the constraint); a
#: Millard muscle with
#: min_control 0 < minimum_activation 0.01 (OpenSim reads min_control 0.01); a contact sphere (carried); a controller
#: and a disabled WeldConstraint the converted file leaves out.
FOUR_BAR = _document(
    "four_bar",
    _body("crank", "crank_pin", "ground", "0 0 0", _coordinate("q_crank", 1.2))
    + _universal_body("coupler", "coupler_joint", "crank", "0.1 0 0", "q_coupler", "q_coupler_out", -0.6)
    + _body("rocker", "rocker_pin", "ground", "0.4 0 0", _coordinate("q_rocker", 1.82, free=True)),
    "<PointConstraint name='closure'><isDisabled>false</isDisabled><body_1>coupler</body_1><body_2>rocker</body_2>"
    "<location_body_1>0.35 0 0</location_body_1><location_body_2>0.3 0 0</location_body_2></PointConstraint>"
    + _weld("unused_weld", "crank", "rocker", disabled=True),
    _muscle("Millard2012EquilibriumMuscle", "flexor", "crank", "coupler", 0, 0.01,
            "<fiber_damping>0</fiber_damping>"),
    "<ContactGeometrySet><objects><ContactSphere name='knob'><body_name>crank</body_name><location>0.1 0 0"
    "</location><orientation>0 0 0</orientation><radius>0.01</radius></ContactSphere></objects></ContactGeometrySet>"
    "<ControllerSet><objects><PrescribedController name='driver'><isDisabled>false</isDisabled>"
    "<actuator_list>flexor</actuator_list><FunctionSet name='ControlFunctions'><objects><Constant><value>0.2</value>"
    "</Constant></objects></FunctionSet></PrescribedController></objects></ControllerSet>")

#: A driven arm (pin q_arm) with a free body welded to its tip (both weld frames turned and moved), and a link
#: pinned to ground held at a constant distance from the welded body.
WELDED = _document(
    "welded",
    _body("arm", "arm_pin", "ground", "0 0 0", _coordinate("q_arm", 0.4))
    + _body("cap", "cap_free", "ground", "0 0 0",
            "".join(_coordinate(n, 0.0, free=True) for n in ("cap_rx", "cap_ry", "cap_rz"))
            + "".join(_coordinate(n, 0.0, free=True, motion="translational", lo=-2, hi=2)
                      for n in ("cap_tx", "cap_ty", "cap_tz")), joint_type="FreeJoint")
    + _body("link", "link_pin", "ground", "0.5 0 0", _coordinate("q_link", 1.5, free=True)),
    _weld("glue", "arm", "cap", ("0.3 0 0", "0.3 0.2 -0.1"), ("0.01 0.02 0.03", "0.1 -0.2 0.4"))
    + "<ConstantDistanceConstraint name='rod'><isDisabled>false</isDisabled><body_1>cap</body_1><body_2>link</body_2>"
    "<location_body_1>0.05 0 0</location_body_1><location_body_2>0.2 0 0</location_body_2>"
    "<constant_distance>0.25</constant_distance></ConstantDistanceConstraint>")

#: A rocker (on a universal joint, free) whose tip stays on a line through the driven crank (PointOnLineConstraint,
#: the line turned 0.2 rad off the crank's x axis).
ON_LINE = _document(
    "on_line",
    _body("crank", "crank_pin", "ground", "0 0 0", _coordinate("q_crank", 0.5))
    + _universal_body("rocker", "rocker_joint", "ground", "0.4 0 0", "q_rocker", "q_rocker_out", 2.0),
    "<PointOnLineConstraint name='track'><isDisabled>false</isDisabled><line_body>crank</line_body>"
    "<line_direction_vec>0.98006658 0.19866933 0</line_direction_vec><point_on_line>0.02 -0.01 0</point_on_line>"
    "<follower_body>rocker</follower_body><point_on_follower>0.3 0 0</point_on_follower></PointOnLineConstraint>")

#: One pin, a Millard muscle with min_control 0 (read as 0.01) and a Thelen muscle with min_control 0.005 below its
#: minimum_activation 0.02 (OpenSim 4.6 refuses the original; the converted file raises it, and says so).
MUSCLES = _document(
    "muscles",
    _body("arm", "arm_pin", "ground", "0 0 0", _coordinate("q_arm", 0.4)),
    forces=_muscle("Millard2012EquilibriumMuscle", "millard", "ground", "arm", 0, 0.01,
                   "<fiber_damping>0</fiber_damping>")
    + _muscle("Thelen2003Muscle", "thelen", "ground", "arm", 0.005, 0.02))


def _convert(tmp_path, name: str, text: str, caplog) -> tuple:
    src, dst = tmp_path / f"{name}.osim", tmp_path / f"{name}_4.osim"
    src.write_text(text)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["convert", str(src), "-o", str(dst)]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and "written as OpenSim 4" in r.getMessage()]
    assert len(warnings) == 1, warnings  # one warning says everything the file leaves out
    return src, dst, warnings[0]


def test_converted_file_carries_the_loop_constraints_and_names_what_it_leaves_out(tmp_path, caplog):
    src, dst, warning = _convert(tmp_path, "four_bar", FOUR_BAR, caplog)
    root = etree.parse(str(dst)).getroot()
    assert root.get("Version") == "40000"
    pc = root.find(".//ConstraintSet/objects/PointConstraint")
    assert pc.get("name") == "closure" and pc.findtext("isEnforced") == "true"
    assert [pc.findtext(t) for t in ("socket_body_1", "socket_body_2")] == ["/bodyset/coupler", "/bodyset/rocker"]
    assert np.allclose([float(x) for x in pc.findtext("location_body_1").split()], [0.35, 0, 0])
    assert root.find(".//WeldConstraint") is None  # disabled in the source
    free = {c.get("name"): c.findtext("is_free_to_satisfy_constraints") for c in root.iter("Coordinate")}
    assert free == {"q_crank": None, "q_coupler": "true", "q_coupler_out": "true", "q_rocker": "true"}
    assert "visual geometry" not in warning  # the file has none: nothing of it left out
    assert "unused_weld (WeldConstraint, disabled)" in warning
    assert "driver (PrescribedController)" in warning
    assert "knob" not in warning  # carried: the contact sphere on its body's frame
    knob = root.find(".//ContactGeometrySet/objects/ContactSphere")
    assert knob.get("name") == "knob" and knob.findtext("socket_frame") == "/bodyset/crank"
    assert float(knob.findtext("radius")) == 0.01 and knob.find("body_name") is None
    assert "closure" not in warning

    src, dst, warning = _convert(tmp_path, "welded", WELDED, caplog)
    root = etree.parse(str(dst)).getroot()
    weld = root.find(".//ConstraintSet/objects/WeldConstraint")
    frames = {f.get("name"): f for f in weld.find("frames")}
    assert [weld.findtext("socket_frame1"), weld.findtext("socket_frame2")] == ["arm_offset", "cap_offset"]
    assert frames["arm_offset"].findtext("socket_parent") == "/bodyset/arm"
    assert np.allclose([float(x) for x in frames["arm_offset"].findtext("orientation").split()], [0.3, 0.2, -0.1],
                       atol=1e-15)
    assert np.allclose([float(x) for x in frames["cap_offset"].findtext("translation").split()], [0.01, 0.02, 0.03])
    cd = root.find(".//ConstraintSet/objects/ConstantDistanceConstraint")
    assert float(cd.findtext("constant_distance")) == 0.25
    assert "constraint" not in warning  # both written

    src, dst, warning = _convert(tmp_path, "on_line", ON_LINE, caplog)
    line = etree.parse(str(dst)).getroot().find(".//ConstraintSet/objects/PointOnLineConstraint")
    assert [line.findtext(t) for t in ("socket_line_body", "socket_follower_body")] == ["/bodyset/crank",
                                                                                         "/bodyset/rocker"]
    values = {t: [float(x) for x in line.findtext(t).split()] for t in ("line_direction_vec", "point_on_line",
                                                                         "point_on_follower")}
    assert np.allclose(values["line_direction_vec"], [0.98006658, 0.19866933, 0]) and \
        values["point_on_line"] == [0.02, -0.01, 0] and values["point_on_follower"] == [0.3, 0, 0]


def test_converted_muscles_get_the_min_control_opensim_reads_and_requires(tmp_path, caplog):
    src, dst, warning = _convert(tmp_path, "muscles", MUSCLES, caplog)
    root = etree.parse(str(dst)).getroot()
    controls = {m.get("name"): m.findtext("min_control") for m in root.iter("Millard2012EquilibriumMuscle",
                                                                           "Thelen2003Muscle")}
    # Millard: min_control 0 of a pre-30513 file is dropped (OpenSim's default 0.01); Thelen: raised to 0.02
    assert controls["millard"] is None and float(controls["thelen"]) == 0.02
    assert "thelen (Thelen2003Muscle: min_control 0.005 raised to its minimum_activation 0.02)" in warning
    assert "millard" not in warning
    from osim_emb.io import load_osim
    for path in (src, dst):  # the package reads the value OpenSim reads from the original (Millard)
        assert {m.name: m.parameters.min_control for m in load_osim(path).muscles}["millard"] == 0.01


def _poses(osim, path, driver: str, values) -> list[tuple[dict, dict]]:
    """Every coordinate and body transform (3 x 4) after OpenSim sets ``driver`` to each value and assembles."""
    model = osim.Model(str(path))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    out = []
    for v in values:
        coords.get(driver).setValue(state, v, True)  # assembles: the driver held (weight 10), the others free
        model.realizePosition(state)
        q = {coords.get(i).getName(): coords.get(i).getValue(state) for i in range(coords.getSize())}
        x = {}
        for i in range(model.getBodySet().getSize()):
            b = model.getBodySet().get(i)
            t = b.getTransformInGround(state)
            r = t.R().asMat33()
            x[b.getName()] = np.array([[r.get(a, c) for c in range(3)] + [t.p().get(a)] for a in range(3)])
        out.append((q, x))
    return out


@pytest.mark.opensim
@pytest.mark.parametrize("name, driver, values", [
    ("four_bar", "q_crank", (1.2, 0.4, -0.7, 2.5, 3.0)),
    ("welded", "q_arm", (0.4, 0.0, -0.5, 0.9)),
    ("on_line", "q_crank", (0.5, 0.3, 0.0, -0.4, 0.6)),
])
def test_opensim_assembles_the_converted_loops_as_the_original(osim, tmp_path, caplog, name, driver, values):
    """OpenSim 4.6 on the converted file: the dependent coordinates and every body's transform equal those of the
    3.x original (as OpenSim 4.6 reads it) at several values of the driving coordinate, and the loops move."""
    src, dst, _ = _convert(tmp_path, name, {"four_bar": FOUR_BAR, "welded": WELDED, "on_line": ON_LINE}[name], caplog)
    before, after = _poses(osim, src, driver, values), _poses(osim, dst, driver, values)
    for (q0, x0), (q1, x1), v in zip(before, after, values):
        assert q0.keys() == q1.keys() and x0.keys() == x1.keys()
        assert abs(q0[driver] - v) < 1e-6  # OpenSim assembles to its accuracy (1e-9)
        assert max(abs(q0[k] - q1[k]) for k in q0) < 1e-9
        assert max(np.abs(x0[k] - x1[k]).max() for k in x0) < 1e-9
    dependent = [k for k in before[0][0] if k != driver]
    assert np.ptp([[q[k] for k in dependent] for q, _ in after], axis=0).max() > 0.1  # the constraints act
    model = osim.Model(str(dst))
    model.initSystem()
    assert model.getConstraintSet().getSize() == 1 + (name == "welded")


@pytest.mark.opensim
def test_opensim_initializes_the_converted_muscles(osim, tmp_path, caplog):
    src, dst, _ = _convert(tmp_path, "muscles", MUSCLES, caplog)
    with pytest.raises(Exception, match="min_control"):  # the original's Thelen muscle: 0.005 < 0.02
        osim.Model(str(src)).initSystem()
    model = osim.Model(str(dst))
    model.initSystem()
    muscles = model.getMuscles()
    assert {muscles.get(i).getName(): muscles.get(i).getMinControl() for i in range(muscles.getSize())} == \
        {"millard": 0.01, "thelen": 0.02}
    _, dst, _ = _convert(tmp_path, "four_bar", FOUR_BAR, caplog)  # the Millard muscle of a model OpenSim reads
    src_model, dst_model = osim.Model(str(tmp_path / "four_bar.osim")), osim.Model(str(dst))
    src_model.initSystem()
    dst_model.initSystem()
    assert src_model.getMuscles().get(0).getMinControl() == dst_model.getMuscles().get(0).getMinControl() == 0.01


def test_an_old_path_actuators_controls_are_read_as_opensim_reads_them(osim, tmp_path):
    """Only a Muscle's min_control 0 / max_control 1 are dropped from a pre-30513 file (Muscle::updateFromXMLNode);
    a PathActuator keeps them, in OpenSim and in the package."""
    from osim_emb.io import load_osim
    actuator = ("<PathActuator name='pull'><min_control>0</min_control><max_control>1</max_control>"
                "<optimal_force>100</optimal_force><GeometryPath><PathPointSet><objects>"
                "<PathPoint name='p1'><location>0.02 0.01 0</location><body>ground</body></PathPoint>"
                "<PathPoint name='p2'><location>0.05 0.01 0</location><body>upper</body></PathPoint>"
                "</objects></PathPointSet></GeometryPath></PathActuator>")
    path = tmp_path / "actuator.osim"
    path.write_text(_document("actuator", _body("upper", "shoulder", "ground", "0 0 0", _coordinate("q", 0.0)),
                              forces=actuator))
    model = osim.Model(str(path))  # kept: the actuator lives in it
    theirs = osim.PathActuator.safeDownCast(model.getForceSet().get("pull"))
    ours = {m.name: m.parameters for m in load_osim(path).muscles}["pull"]
    assert (ours.min_control, ours.max_control) == (theirs.getMinControl(), theirs.getMaxControl()) == (0.0, 1.0)


#: A ball on a free joint with a ContactSphere touching a ContactHalfSpace on ground (HuntCrossleyForce); an arm on a
#: pin with a ContactMesh (a cube written by the test, pad.obj) pressing on the same half space
#: (ElasticFoundationForce; Simbody's elastic foundation needs a mesh); a BushingForce between the arm and the ball
#: (both frames moved and turned: PhysicalOffsetFrames in the 4.x file), a PrescribedForce on the ball and a
#: PointToPointSpring between the two bodies.
CONTACT = _document(
    "contact",
    _body("ball", "ball_free", "ground", "0 0 0",
          "".join(_coordinate(n, 0.0) for n in ("ball_rx", "ball_ry", "ball_rz"))
          + "".join(_coordinate(n, v, motion="translational", lo=-2, hi=2)
                    for n, v in (("ball_tx", 0.5), ("ball_ty", 0.09), ("ball_tz", 0.0))), joint_type="FreeJoint")
    + _body("arm", "arm_pin", "ground", "0 0.02 0", _coordinate("q_arm", 0.0)),
    forces="<HuntCrossleyForce name='ball_contact'><isDisabled>false</isDisabled>"
    "<HuntCrossleyForce::ContactParametersSet name='contact_parameters'><objects>"
    "<HuntCrossleyForce::ContactParameters><geometry>floor ball_surface</geometry><stiffness>1e7</stiffness>"
    "<dissipation>0.5</dissipation><static_friction>0.9</static_friction><dynamic_friction>0.7</dynamic_friction>"
    "<viscous_friction>0.3</viscous_friction></HuntCrossleyForce::ContactParameters></objects><groups/>"
    "</HuntCrossleyForce::ContactParametersSet><transition_velocity>0.05</transition_velocity></HuntCrossleyForce>"
    "<ElasticFoundationForce name='pad_contact'><isDisabled>false</isDisabled>"
    "<ElasticFoundationForce::ContactParametersSet name='contact_parameters'><objects>"
    "<ElasticFoundationForce::ContactParameters><geometry>pad floor</geometry><stiffness>1e6</stiffness>"
    "<dissipation>0.2</dissipation><static_friction>0.6</static_friction><dynamic_friction>0.4</dynamic_friction>"
    "<viscous_friction>0.1</viscous_friction></ElasticFoundationForce::ContactParameters></objects><groups/>"
    "</ElasticFoundationForce::ContactParametersSet><transition_velocity>0.02</transition_velocity>"
    "</ElasticFoundationForce>"
    "<BushingForce name='hinge_bushing'><isDisabled>false</isDisabled><body_1>arm</body_1><body_2>ball</body_2>"
    "<location_body_1>0.3 0.01 0</location_body_1><orientation_body_1>0.1 0 0.2</orientation_body_1>"
    "<location_body_2>0 0.02 0.01</location_body_2><orientation_body_2>0 -0.3 0</orientation_body_2>"
    "<rotational_stiffness>5 6 7</rotational_stiffness><translational_stiffness>100 200 300</translational_stiffness>"
    "<rotational_damping>0.1 0.2 0.3</rotational_damping><translational_damping>1 2 3</translational_damping>"
    "</BushingForce>"
    "<PrescribedForce name='push'><isDisabled>false</isDisabled><body>ball</body><pointIsGlobal>false</pointIsGlobal>"
    "<forceIsGlobal>true</forceIsGlobal><FunctionSet name='forceFunctions'><objects><Constant><value>1.5</value>"
    "</Constant><Constant><value>-2</value></Constant><Constant><value>0.25</value></Constant></objects>"
    "</FunctionSet><FunctionSet name='pointFunctions'><objects><Constant><value>0.01</value></Constant><Constant>"
    "<value>0</value></Constant><Constant><value>0.02</value></Constant></objects></FunctionSet></PrescribedForce>"
    "<PointToPointSpring name='tie'><isDisabled>false</isDisabled><body1>arm</body1><body2>ball</body2>"
    "<point1>0.2 0 0</point1><point2>0 0.05 0</point2><stiffness>50</stiffness><rest_length>0.1</rest_length>"
    "</PointToPointSpring>",
    more="<ContactGeometrySet><objects>"
    "<ContactHalfSpace name='floor'><body_name>ground</body_name><location>0 0 0</location>"
    "<orientation>0 0 -1.5707963267948966</orientation><display_preference>0</display_preference></ContactHalfSpace>"
    "<ContactSphere name='ball_surface'><body_name>ball</body_name><location>0.01 0 0</location>"
    "<orientation>0 0 0</orientation><radius>0.1</radius></ContactSphere>"
    "<ContactMesh name='pad'><body_name>arm</body_name><location>0.3 0 0</location><orientation>0 0.2 0</orientation>"
    "<filename>pad.obj</filename></ContactMesh></objects></ContactGeometrySet>")

#: a closed cube of side 0.1 about its origin (outward-facing triangles)
CUBE_OBJ = "".join(f"v {x} {y} {z}\n" for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.05, 0.05)) + "".join(
    f"f {a} {b} {c}\n" for a, b, c in ((1, 2, 4), (1, 4, 3), (5, 7, 8), (5, 8, 6), (1, 5, 6), (1, 6, 2),
                                       (3, 4, 8), (3, 8, 7), (1, 3, 7), (1, 7, 5), (2, 6, 8), (2, 8, 4)))


def _convert_contact(tmp_path, caplog) -> tuple:
    """CONTACT and its mesh written in tmp_path, converted into tmp_path / 'out' (the mesh named from there)."""
    src, dst = tmp_path / "contact.osim", tmp_path / "out" / "contact_4.osim"
    src.write_text(CONTACT)
    (tmp_path / "pad.obj").write_text(CUBE_OBJ)
    dst.parent.mkdir()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["convert", str(src), "-o", str(dst)]) == 0
    warnings = [r.getMessage() for r in caplog.records if "written as OpenSim 4" in r.getMessage()]
    assert len(warnings) == 1, warnings
    return src, dst, warnings[0]


def test_converted_file_carries_contact_geometry_bushings_and_prescribed_forces(tmp_path, caplog):
    src, dst, warning = _convert_contact(tmp_path, caplog)
    # all carried (the floor's visibility too: test_converted_display_properties_are_opensims_upgrade_of_them)
    for name in ("floor", "ball_surface", "pad", "ball_contact", "pad_contact", "hinge_bushing", "push", "tie"):
        assert name not in warning
    text = dst.read_text()
    assert "HuntCrossleyForce::ContactParametersSet" in text and "__osim_emb" not in text
    root = etree.fromstring(text.replace("::", "_").encode())
    geometry = {g.get("name"): g for g in root.find("Model/ContactGeometrySet/objects")}
    assert root.find("Model/ContactGeometrySet").get("name") == "contactgeometryset"
    assert {k: g.findtext("socket_frame") for k, g in geometry.items()} == \
        {"floor": "/ground", "ball_surface": "/bodyset/ball", "pad": "/bodyset/arm"}
    assert geometry["pad"].findtext("filename") == "../pad.obj"  # from the written file's folder
    assert float(geometry["ball_surface"].findtext("radius")) == 0.1
    assert all(g.find("body_name") is None and g.find("display_preference") is None for g in geometry.values())
    forces = {f.get("name"): f for f in root.find("Model/ForceSet/objects")}
    bushing = forces["hinge_bushing"]
    assert [bushing.findtext("socket_frame1"), bushing.findtext("socket_frame2")] == ["arm_offset", "ball_offset"]
    frames = {f.get("name"): f for f in bushing.find("frames")}
    assert frames["arm_offset"].findtext("socket_parent") == "/bodyset/arm"
    assert [float(x) for x in frames["ball_offset"].findtext("orientation").split()] == [0, -0.3, 0]
    assert bushing.find("body_1") is None and bushing.find("location_body_2") is None
    assert forces["push"].findtext("socket_frame") == "/bodyset/ball" and forces["push"].find("body") is None
    assert [forces["tie"].findtext(t) for t in ("socket_body1", "socket_body2")] == ["/bodyset/arm", "/bodyset/ball"]
    assert all(f.findtext("appliesForce") == "true" and f.find("isDisabled") is None for f in forces.values())


def _same_records(a, b) -> bool:
    """Force-law records equal field by field (numbers to 1e-12 relative)."""
    import dataclasses
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(_same_records(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(_same_records(x, y) for x, y in zip(a, b))
    if isinstance(a, (np.ndarray, float)):
        return np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=1e-12, atol=1e-15)
    if hasattr(a, "__dict__"):
        return type(a) is type(b) and _same_records(vars(a), vars(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_records(a[k], b[k]) for k in a)
    return a == b


def test_package_reads_the_converted_force_elements_as_the_original(tmp_path, caplog):
    from osim_emb.io import load_osim
    from osim_emb.simulation.force_elements import model_force_elements
    src, dst, _ = _convert_contact(tmp_path, caplog)
    before, after = model_force_elements(load_osim(src)), model_force_elements(load_osim(dst))
    assert before.describe() == after.describe()
    assert {type(law).__name__ for law in before.laws} == {"HuntCrossleyContact", "Bushing", "PrescribedBodyForce",
                                                          "PointToPointSpring"}
    assert _same_records(before.laws, after.laws)
    assert [(u.name, u.type) for u in before.unapplied] == [(u.name, u.type) for u in after.unapplied]


def _dynamics(osim, path, q: dict, u: dict, time: float) -> tuple[dict, dict]:
    """OpenSim's every force's record values and every coordinate's acceleration at one state."""
    model = osim.Model(str(path))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    state.setTime(time)
    for name, v in q.items():
        coords.get(name).setValue(state, v, False)
    for name, v in u.items():
        coords.get(name).setSpeedValue(state, v)
    model.realizeAcceleration(state)
    forces = {}
    for i in range(model.getForceSet().getSize()):
        f = model.getForceSet().get(i)
        r = f.getRecordValues(state)
        forces[f.getName()] = np.array([r.get(k) for k in range(r.size())])
    udot = state.getUDot()
    return forces, {"udot": np.array([udot.get(k) for k in range(udot.size())]),
                    **{coords.get(i).getName(): coords.get(i).getAccelerationValue(state)
                       for i in range(coords.getSize())}}


@pytest.mark.opensim
def test_opensim_applies_the_converted_contact_and_bushing_forces_as_the_original(osim, tmp_path, caplog):
    """OpenSim 4.6 on the 3.x original (which it upgrades) and on the converted file, at states with the sphere and
    the mesh penetrating the half space and every body moving: each force's record values, the coordinates'
    accelerations and UDot agree to 1e-9 relative, and the contact forces act."""
    src, dst, _ = _convert_contact(tmp_path, caplog)
    rng = np.random.default_rng(7)
    names = ("ball_rx", "ball_ry", "ball_rz", "ball_tx", "ball_ty", "ball_tz", "q_arm")
    for k in range(3):
        q = dict(zip(names, [*rng.normal(0, 0.2, 3), 0.5, 0.08 - 0.01 * k, 0.0, rng.normal(0, 0.05)]))
        u = dict(zip(names, rng.normal(0, 0.2, len(names))))  # slow enough that the contacts stay pressed
        (f0, a0), (f1, a1) = (_dynamics(osim, p, q, u, 0.1 * k) for p in (src, dst))
        assert f0.keys() == f1.keys() == {"ball_contact", "pad_contact", "hinge_bushing", "push", "tie"}
        for name in f0:
            scale = np.abs(f0[name]).max()
            assert scale > 0, name  # every force acts (the contacts penetrate)
            assert f0[name].shape == f1[name].shape and np.abs(f0[name] - f1[name]).max() <= 1e-9 * scale, name
        scale = np.abs(a0["udot"]).max()
        assert scale > 0 and np.abs(a0["udot"] - a1["udot"]).max() <= 1e-9 * scale
        assert max(abs(a0[c] - a1[c]) for c in names) <= 1e-9 * scale


@pytest.mark.opensim
def test_a_regenerated_4x_file_keeps_its_contact_geometry(osim, tmp_path, caplog):
    """The converted (4.x) contact model regenerated after a change the in-place editor does not make (the arm's
    mass): its ContactGeometrySet is carried as written (it was left out, and OpenSim could not load the file: its
    contact forces named missing geometry); OpenSim 4.6 gives it the forces and accelerations of the original with
    the same mass set through OpenSim's API, to 1e-9 relative."""
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    src, dst, _ = _convert_contact(tmp_path, caplog)
    doc = load_osim(dst).extras["document"]
    doc.bodies[[b.name for b in doc.bodies].index("arm")].mass = 2.0
    ours = tmp_path / "out" / "contact_4_heavier.osim"
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        write_osim(doc, ours)
    assert any("regenerated" in r.getMessage() and "leaves nothing out" in r.getMessage() for r in caplog.records)
    reference = osim.Model(str(src))
    reference.getBodySet().get("arm").setMass(2.0)
    theirs = tmp_path / "theirs_heavier.osim"
    reference.printToXML(str(theirs))
    names = ("ball_rx", "ball_ry", "ball_rz", "ball_tx", "ball_ty", "ball_tz", "q_arm")
    q = dict(zip(names, [0.1, -0.2, 0.05, 0.5, 0.07, 0.0, 0.03]))
    u = dict(zip(names, [0.1, 0.0, -0.1, 0.2, -0.1, 0.05, 0.1]))
    (f0, a0), (f1, a1) = (_dynamics(osim, p, q, u, 0.1) for p in (theirs, ours))
    assert f0.keys() == f1.keys() == {"ball_contact", "pad_contact", "hinge_bushing", "push", "tie"}
    for name in f0:
        scale = np.abs(f0[name]).max()
        assert scale > 0 and np.abs(f0[name] - f1[name]).max() <= 1e-9 * scale, name
    scale = np.abs(a0["udot"]).max()
    assert scale > 0 and np.abs(a0["udot"] - a1["udot"]).max() <= 1e-9 * scale


def test_an_unnamed_force_is_named_as_opensim_names_it(tmp_path, caplog):
    """OpenSim 4.6 names an unnamed force of a 3.x file by its type in lower case; the converted file writes that
    name (the package refuses an unnamed force in a 4.x file)."""
    from osim_emb.io import load_osim
    src, dst = tmp_path / "unnamed.osim", tmp_path / "unnamed_4.osim"
    src.write_text(CONTACT.replace("<PointToPointSpring name='tie'>", "<PointToPointSpring>"))
    (tmp_path / "pad.obj").write_text(CUBE_OBJ)
    assert main(["convert", str(src), "-o", str(dst)]) == 0
    assert '<PointToPointSpring name="pointtopointspring">' in dst.read_text()
    assert "pointtopointspring" in {f.name for f in load_osim(dst).extras["document"].forces}


def test_the_models_assembly_accuracy_is_carried(osim, tmp_path, caplog):
    """OpenSim's assembler tolerance of the file: without it the converted model assembled 2.7e-6 rad elsewhere
    (opensim-core's subject_walk_armless_18musc: assembly_accuracy 1e-7)."""
    text = WELDED.replace("<ForceSet>", "<assembly_accuracy>1e-07</assembly_accuracy><ForceSet>", 1)
    src, dst, _ = _convert(tmp_path, "accuracy", text, caplog)
    original, converted = osim.Model(str(src)), osim.Model(str(dst))
    assert converted.get_assembly_accuracy() == original.get_assembly_accuracy() == 1e-7


def _display(file: str, transform: str = "", scale: str = "", extra: str = "") -> str:
    return (f"<DisplayGeometry><geometry_file>{file}</geometry_file>"
            + (f"<transform>{transform}</transform>" if transform else "")
            + (f"<scale_factors>{scale}</scale_factors>" if scale else "") + extra + "</DisplayGeometry>")


def _visible(displays: str, transform: str = "", scale: str = "") -> str:
    return (f"<VisibleObject><GeometrySet><objects>{displays}</objects></GeometrySet>"
            + (f"<scale_factors>{scale}</scale_factors>" if scale else "")
            + (f"<transform>{transform}</transform>" if transform else "") + "</VisibleObject>")


#: A 3.x arm on a pin and a forearm on a turned, moved pin: the ground's mesh; the arm's meshes untransformed (colour,
#: opacity, hidden, a texture) and turned and moved; the forearm's VisibleObject scaled and transformed as a whole
#: (composed with its meshes' own transforms).
VISUAL = _document(
    "visual",
    _body("arm", "arm_pin", "ground", "0 0.1 0", _coordinate("q_arm", 0.4)).replace("</Body>", _visible(
        _display("bone.obj", extra="<color>0.9 0.8 0.7</color><opacity>0.25</opacity>"
                                   "<display_preference>0</display_preference>")
        + _display("bone.obj", transform="0.3 -0.2 1.1 0.01 0.02 -0.03", scale="1.5 1 0.5",
                   extra="<display_preference>1</display_preference><texture_file>skin.png</texture_file>")
        + _display("cap.obj", extra="<display_preference>4</display_preference><color>0 0 1</color>")) + "</Body>")
    + _body("forearm", "elbow", "arm", "0.3 0 0", _coordinate("q_elbow", -0.7), orientation="0.1 0.2 0.3").replace(
        "</Body>", _visible(_display("bone.obj") + _display("cap.obj", transform="-1.2 0.4 2.5 0.1 0 0.05",
                                                            scale="2 2 2"),
                            transform="0.2 0.1 -0.4 0 0.05 0.01", scale="1.1 0.9 1.3") + "</Body>"),
).replace("<Joint/></Body>", "<Joint/>" + _visible(_display("floor.obj")) + "</Body>", 1)

#: A 2.x (version 20001) file: the body's VisibleObject lists its meshes in <geometry_files>, with one scale.
VISUAL_2X = VISUAL.replace("Version='30000'", "Version='20001'").replace(
    VISUAL[VISUAL.index("<VisibleObject><GeometrySet><objects><DisplayGeometry><geometry_file>bone.obj"):
           VISUAL.index("</Body><Body name='forearm'>")],
    "<VisibleObject><geometry_files>bone.obj cap.obj floor.obj</geometry_files><scale_factors>1 2 0.5"
    "</scale_factors></VisibleObject>")


def _opensim_geometry(osim, path):
    from osim_emb.opensim.bridge import visual_geometry
    model = osim.Model(str(path))
    return visual_geometry(osim, model, model.initSystem())


@pytest.mark.opensim
@pytest.mark.parametrize("name", ["VISUAL", "VISUAL_2X"])
def test_converted_visual_geometry_is_opensims_upgrade_of_the_original(osim, tmp_path, caplog, name):
    """OpenSim 4.6 on the 3.x (2.x) original, which it upgrades, and on the converted file written into another
    folder: the same Geometry components on the ground and every body (class, mesh file found as the same file,
    scale factors, colour, opacity, visibility, representation, frame) and their frames at the same place."""
    from osim_emb.opensim.bridge import compare_visual_geometry
    text = globals()[name]
    src, dst = tmp_path / "model.osim", tmp_path / "out" / "model_4.osim"
    dst.parent.mkdir()
    (tmp_path / "Geometry").mkdir()
    for mesh in ("bone.obj", "cap.obj"):  # beside the model, and in the Geometry folder beside it
        (tmp_path / mesh).write_text(CUBE_OBJ)
    (tmp_path / "Geometry" / "floor.obj").write_text(CUBE_OBJ)
    src.write_text(text)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["convert", str(src), "-o", str(dst)]) == 0
    warning = " ".join(r.getMessage() for r in caplog.records if "written as OpenSim 4" in r.getMessage())
    original, converted = _opensim_geometry(osim, src), _opensim_geometry(osim, dst)
    # VISUAL: the ground's, the arm's three, the forearm's two; VISUAL_2X: the arm's geometry_files (a 2.x file's
    # GeometrySet is not read)
    assert len(original) == {"VISUAL": 6, "VISUAL_2X": 3}[name]
    assert all(g["found"] is not None for g in original.values())  # OpenSim's meshes, all found
    diffs, worst = compare_visual_geometry(original, converted)
    assert diffs == [] and worst <= 1e-12
    if name == "VISUAL":
        # OpenSim hangs the transformed meshes on frames of their own, away from their bodies; one is hidden
        assert sum(g["frame"] not in ("/ground", "/bodyset/arm", "/bodyset/forearm") for g in original.values()) == 3
        assert sum(not g["visible"] for g in original.values()) == 1
        assert "skin.png" in warning  # a texture OpenSim drops too, named
    assert "not carried" not in warning


@pytest.mark.opensim
def test_a_regenerated_4x_file_carries_its_attached_geometry(osim, tmp_path, caplog):
    """A 4.x source whose change the writer cannot make in place (a body's mass) is regenerated: its bodies'
    attached_geometry and geometry frames are carried as written (OpenSim 4.6 sees the geometry of the 3.x file
    the 4.x source was converted from)."""
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.opensim.bridge import compare_visual_geometry
    (tmp_path / "bone.obj").write_text(CUBE_OBJ)
    (tmp_path / "cap.obj").write_text(CUBE_OBJ)
    (tmp_path / "floor.obj").write_text(CUBE_OBJ)
    src, v4, out = tmp_path / "model.osim", tmp_path / "model_4.osim", tmp_path / "model_4_heavier.osim"
    src.write_text(VISUAL)
    assert main(["convert", str(src), "-o", str(v4)]) == 0
    doc = load_osim(v4).extras["document"]
    doc.bodies[[b.name for b in doc.bodies].index("arm")].mass = 2.0
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        write_osim(doc, out)
    assert any("regenerated" in r.getMessage() for r in caplog.records)
    diffs, worst = compare_visual_geometry(_opensim_geometry(osim, src), _opensim_geometry(osim, out))
    assert diffs == [] and worst <= 1e-12


@pytest.mark.opensim
def test_geometry_on_the_models_own_offset_frames_is_carried(osim, tmp_path, caplog):
    """Visual geometry hanging on PhysicalOffsetFrames among the model's <components> (OpenSim's
    BuiltinGeometry.osim: bricks among the ground's components on ground anchors), on the ground and on a body,
    attached to the frame or among the ground's components: a regenerated file carries those frames as written,
    and OpenSim 4.6 sees the same geometry at the same places (before: left out, and said)."""
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.opensim.bridge import compare_visual_geometry
    m = osim.Model()
    m.setName("anchors")
    arm = osim.Body("arm", 1.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
    m.addBody(arm)
    m.addJoint(osim.PinJoint("shoulder", m.getGround(), osim.Vec3(0), osim.Vec3(0), arm, osim.Vec3(0, 0.5, 0),
                             osim.Vec3(0)))
    on_ground = osim.PhysicalOffsetFrame("ground_anchor", m.getGround(),
                                         osim.Transform(osim.Rotation(0.3, osim.Vec3(0, 0, 1)), osim.Vec3(0.2, 0.1, 0)))
    on_arm = osim.PhysicalOffsetFrame("arm_anchor", arm, osim.Transform(osim.Vec3(0, -0.2, 0.05)))
    on_anchor = osim.PhysicalOffsetFrame("second_anchor", on_ground, osim.Transform(osim.Vec3(0, 0, 0.3)))
    for f in (on_ground, on_arm, on_anchor):
        m.addComponent(f)
    brick = osim.Brick(osim.Vec3(0.1, 0.05, 0.02))
    brick.setName("brick")
    m.updGround().addComponent(brick)  # among the ground's components, on the anchor
    brick.updSocket("frame").setConnecteePath("../../ground_anchor")
    on_arm.attachGeometry(osim.Cylinder(0.02, 0.1))
    on_anchor.attachGeometry(osim.Sphere(0.03))
    m.finalizeConnections()
    src, out = tmp_path / "anchors.osim", tmp_path / "anchors_heavier.osim"
    m.printToXML(str(src))
    doc = load_osim(src).extras["document"]
    doc.bodies[[b.name for b in doc.bodies].index("arm")].mass = 2.0  # a change regenerates the 4.x file
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        write_osim(doc, out)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "regenerated" in said and "PhysicalOffsetFrame" not in said and "visual geometry" not in said
    original, regenerated = _opensim_geometry(osim, src), _opensim_geometry(osim, out)
    assert len(original) == 3
    diffs, worst = compare_visual_geometry(original, regenerated)
    assert diffs == [] and worst <= 1e-12


def _wraps(*objects: str) -> str:
    return f"<WrapObjectSet><objects>{''.join(objects)}</objects></WrapObjectSet>"


def _wrap(tag: str, name: str, shape: str, display: str = "") -> str:
    return (f"<{tag} name='{name}'><xyz_body_rotation>0 0 0</xyz_body_rotation><translation>0.1 0 0</translation>"
            f"<active>true</active><quadrant>all</quadrant>{shape}{display}</{tag}>")


DISPLAYED = _document(
    "displayed",
    _body("arm", "shoulder", "ground", "0 0 0", _coordinate("q_arm", 0.3)).replace("<Joint>", _wraps(
        _wrap("WrapCylinder", "hidden_cylinder", "<radius>0.02</radius><length>0.1</length>",
              "<display_preference>0</display_preference><color>1 0 0</color>"),
        _wrap("WrapSphere", "wire_sphere", "<radius>0.03</radius>", "<display_preference>1</display_preference>"),
        _wrap("WrapEllipsoid", "plain_ellipsoid", "<dimensions>0.02 0.03 0.04</dimensions>"),
        _wrap("WrapCylinder", "inner_preference", "<radius>0.01</radius><length>0.05</length>",
              "<VisibleObject><display_preference>2</display_preference></VisibleObject>")) + "<Joint>", 1),
    forces=_muscle("Thelen2003Muscle", "green", "ground", "arm", 0.01, 0.01).replace(
        "</PathPointSet>", "</PathPointSet><default_color>0.1 0.9 0.2</default_color>")
    + _muscle("Thelen2003Muscle", "hidden", "ground", "arm", 0.01, 0.01).replace(
        "</PathPointSet>", "</PathPointSet><VisibleObject><display_preference>0</display_preference></VisibleObject>")
    + _muscle("Thelen2003Muscle", "plain", "ground", "arm", 0.01, 0.01),
    more="<ContactGeometrySet><objects>"
    "<ContactHalfSpace name='floor'><body_name>ground</body_name><location>0 0 0</location>"
    "<orientation>0 0 -1.5707963267948966</orientation><display_preference>0</display_preference></ContactHalfSpace>"
    "<ContactSphere name='blue_ball'><body_name>arm</body_name><location>0.01 0 0</location>"
    "<orientation>0 0 0</orientation><radius>0.1</radius><color>0 0 1</color>"
    "<display_preference>2</display_preference></ContactSphere>"
    "<ContactSphere name='plain_ball'><body_name>arm</body_name><location>0.2 0 0</location>"
    "<orientation>0 0 0</orientation><radius>0.05</radius></ContactSphere></objects></ContactGeometrySet>")


@pytest.mark.opensim
def test_converted_display_properties_are_opensims_upgrade_of_them(osim, tmp_path, caplog):
    """A 3.0 file's display properties of wrap objects (color, display_preference, a VisibleObject's), paths
    (default_color, a hidden VisibleObject) and contact geometry (color, display_preference): OpenSim 4.6 gives the
    converted file's wrap objects, paths and contact geometry the same colour, opacity, visibility and
    representation as it gives the original's on upgrading it (before: OpenSim's defaults, and said)."""
    from osim_emb.opensim.bridge import compare_appearances, display_appearances
    src, dst, warning = _convert(tmp_path, "displayed", DISPLAYED, caplog)
    original = display_appearances(osim, osim.Model(str(src)))
    converted = display_appearances(osim, osim.Model(str(dst)))
    assert len(original) == 10  # 4 wrap objects, 3 paths, 3 contact geometry
    assert compare_appearances(original, converted) == []
    assert not original["/bodyset/arm/wrapobjectset/hidden_cylinder"]["visible"]  # the cases are not defaults
    assert original["/bodyset/arm/wrapobjectset/wire_sphere"]["representation"] == 1
    assert original["/bodyset/arm/wrapobjectset/inner_preference"]["representation"] == 2
    assert list(original["/forceset/green/path"]["color"]) == [0.1, 0.9, 0.2]
    assert not original["/forceset/hidden/path"]["visible"]
    assert list(original["/contactgeometryset/blue_ball"]["color"]) == [0.0, 0.0, 1.0]
    assert not original["/contactgeometryset/floor"]["visible"]
    assert "display properties" not in warning
    # the 4.x file regenerated (a change the in-place editor does not make) keeps its own Appearances
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    doc = load_osim(dst).extras["document"]
    doc.bodies[[b.name for b in doc.bodies].index("arm")].mass = 2.0
    regenerated = tmp_path / "displayed_4_heavier.osim"
    write_osim(doc, regenerated)
    assert compare_appearances(original, display_appearances(osim, osim.Model(str(regenerated)))) == []


def test_a_malformed_display_transform_is_refused_by_file_and_element(tmp_path):
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    src, dst = tmp_path / "bad.osim", tmp_path / "out" / "bad_4.osim"
    dst.parent.mkdir()
    src.write_text(VISUAL.replace("0.3 -0.2 1.1 0.01 0.02 -0.03", "0.3 -0.2 1.1"))
    with pytest.raises(ValueError, match=r"bad\.osim.*Body 'arm'.*DisplayGeometry 2.*<transform>.*6 finite numbers"):
        write_osim(load_osim(src), dst, opensim4=True)
    assert not dst.exists()
    src.write_text(VISUAL.replace("0.3 -0.2 1.1 0.01 0.02 -0.03", "0.3 -0.2 nan 0.01 0.02 -0.03"))  # NaN: refused too
    with pytest.raises(ValueError, match=r"DisplayGeometry 2.*<transform>.*6 finite numbers, got '0.3 -0.2 nan"):
        write_osim(load_osim(src), dst, opensim4=True)
    assert not dst.exists()
