"""OpenSim 1.x (10901+) and OpenSim 4.0 development (30501) files, written here in those layouts, read as OpenSim 4.6
reads them: body transforms, path points, L and R equal OpenSim's; versions OpenSim does not read, or that the
package does not, are refused by name (docs/importer.md, "File versions")."""

import numpy as np
import pytest

from osim_emb.io import UnsupportedFeatureError, load_osim, read_osim_string
from test_model_features import compare_with_opensim

_CONSTANT = "<function><Constant name=''><value> 0 </value></Constant></function>"
_AXES = {"rotation1": "1 0 0", "rotation2": "0 1 0", "rotation3": "0 0 1",
         "translation1": "1 0 0", "translation2": "0 1 0", "translation3": "0 0 1"}


def _spatial_transform(moving_axis: str, coordinate: str, function: str, extra: str = "") -> str:
    """A 1.x/3.3 SpatialTransform: ``moving_axis`` driven by ``coordinate`` through ``function``, the others 0."""
    out = []
    for name, axis in _AXES.items():
        if name == moving_axis:
            out.append(f"<TransformAxis name='{name}'>{function}<coordinates> {coordinate} </coordinates>"
                       f"{extra}<axis> {axis} </axis></TransformAxis>")
        else:
            out.append(f"<TransformAxis name='{name}'>{_CONSTANT}<coordinates> </coordinates>"
                       f"<axis> {axis} </axis></TransformAxis>")
    return "<SpatialTransform name=''>" + "".join(out) + "</SpatialTransform>"


def _body_1x(name, mass, com, inertia, joint=""):
    ixx, iyy, izz = inertia
    return (f"<Body name='{name}'><mass> {mass} </mass><mass_center> {com} </mass_center>"
            f"<inertia_xx> {ixx} </inertia_xx><inertia_yy> {iyy} </inertia_yy><inertia_zz> {izz} </inertia_zz>"
            "<inertia_xy> 0 </inertia_xy><inertia_xz> 0 </inertia_xz><inertia_yz> 0 </inertia_yz>"
            f"<Joint>{joint}</Joint><WrapObjectSet name=''><objects/><groups/></WrapObjectSet></Body>")


def _custom_joint_1x(name, parent, location_in_parent, orientation_in_parent, coordinate, rng, transform):
    return (f"<CustomJoint name='{name}'><parent_body> {parent} </parent_body>"
            f"<location_in_parent> {location_in_parent} </location_in_parent>"
            f"<orientation_in_parent> {orientation_in_parent} </orientation_in_parent>"
            "<location> 0 0 0 </location><orientation> 0 0 0 </orientation>"
            f"<CoordinateSet name=''><objects><Coordinate name='{coordinate}'><default_value> 0 </default_value>"
            f"<initial_value> 0 </initial_value><range> {rng} </range><clamped> true </clamped>"
            "<locked> false </locked><prescribed_function/></Coordinate></objects><groups/></CoordinateSet>"
            f"<reverse> false </reverse>{transform}</CustomJoint>")


def _muscle_1x(name, points, wraps=""):
    """A Thelen2003Muscle as OpenSim 1.x wrote it: its MusclePointSet (and MuscleWrapSet) directly in the muscle."""
    return (f"<Thelen2003Muscle name='{name}'><MusclePointSet name=''><objects>{points}</objects><groups/>"
            f"</MusclePointSet>{wraps}<max_isometric_force> 500 </max_isometric_force>"
            "<optimal_fiber_length> 0.12 </optimal_fiber_length><tendon_slack_length> 0.15 </tendon_slack_length>"
            "<pennation_angle> 0.1 </pennation_angle></Thelen2003Muscle>")


_SPLINE_X = "-1 -0.5 0 0.5 1 1.5 2 2.6"


def _attachment(axis, ys):
    return (f"<{axis}Attachment><natCubicSpline name=''><x> {_SPLINE_X} </x><y> {ys} </y></natCubicSpline>"
            f"</{axis}Attachment><{axis.lower()}_coordinate> elbow_flexion </{axis.lower()}_coordinate>")


#: ground -> upper (CustomJoint: rotation3 an empty <function/>, OpenSim's LinearFunction(1, 0); an orientation with
#: more than 6 significant digits) -> lower (rotation3 = elbow angle, with a 1.x <is_rotation>); a muscle with a
#: MuscleViaPoint (<coordinates>) and one ending in a MovingMusclePoint (natCubicSpline XAttachment ...).
ARM_1X = ("<?xml version='1.0' encoding='UTF-8'?><OpenSimDocument Version='10901'><Model name='arm_1x'>"
          "<ForceSet name=''><objects>"
          + _muscle_1x("biceps",
                       "<MusclePoint name='o'><location> 0.03 0.05 0.01 </location><body> ground </body></MusclePoint>"
                       "<MuscleViaPoint name='v'><location> 0.035 -0.25 0 </location><body> upper </body>"
                       "<range> 0.5 2 </range><coordinates> elbow_flexion </coordinates></MuscleViaPoint>"
                       "<MusclePoint name='i'><location> 0.02 -0.05 0 </location><body> lower </body></MusclePoint>")
          + _muscle_1x("brachialis",
                       "<MusclePoint name='o'><location> 0.01 -0.12 0.005 </location><body> upper </body></MusclePoint>"
                       "<MovingMusclePoint name='m'><location> 0 0 0 </location><body> lower </body>"
                       + _attachment("X", "0.02 0.025 0.03 0.032 0.031 0.028 0.024 0.02")
                       + _attachment("Y", "-0.03 -0.031 -0.033 -0.036 -0.04 -0.043 -0.045 -0.046")
                       + _attachment("Z", "0 0.001 0.002 0.002 0.001 0 -0.001 -0.002")
                       + "</MovingMusclePoint>")
          + "</objects><groups/></ForceSet><length_units> meters </length_units><force_units> N </force_units>"
          "<gravity> 0 -9.80665 0 </gravity><BodySet name=''><objects>"
          + _body_1x("ground", 0, "0 0 0", (0, 0, 0))
          + _body_1x("upper", 1.5, "0 -0.15 0", (0.01, 0.002, 0.01),
                     _custom_joint_1x("shoulder", "ground", "0.01 0 0.02", "0 0 0.123456789", "shoulder_flexion",
                                      "-1.5 2.5", _spatial_transform("rotation3", "shoulder_flexion", "<function/>")))
          + _body_1x("lower", 1.0, "0 -0.12 0", (0.008, 0.001, 0.008),
                     _custom_joint_1x("elbow", "upper", "0 -0.3 0", "0 0 0", "elbow_flexion", "0 2.6",
                                      _spatial_transform("rotation3", "elbow_flexion",
                                                         "<function><LinearFunction name=''><coefficients> 1 0 "
                                                         "</coefficients></LinearFunction></function>",
                                                         "<is_rotation> true </is_rotation>")))
          + "</objects><groups/></BodySet><ConstraintSet name=''><objects/><groups/></ConstraintSet>"
          "<MarkerSet name=''><objects/><groups/></MarkerSet></Model></OpenSimDocument>")


def _pin_30501(name, parent, child, location_in_child, coordinate, default):
    return (f"<PinJoint name='{name}'><connectors>"
            f"<Connector_PhysicalFrame_ name='parent_body'><connectee_name>{parent}</connectee_name>"
            "</Connector_PhysicalFrame_>"
            f"<Connector_PhysicalFrame_ name='child_body'><connectee_name>{child}</connectee_name>"
            "</Connector_PhysicalFrame_></connectors>"
            "<location_in_parent>0 0 0</location_in_parent><orientation_in_parent>0 0 0.3</orientation_in_parent>"
            f"<location_in_child>{location_in_child}</location_in_child>"
            "<orientation_in_child>0 0 0</orientation_in_child>"
            f"<CoordinateSet><objects><Coordinate name='{coordinate}'><motion_type>rotational</motion_type>"
            f"<default_value>{default}</default_value><range>-1.57079633 1.57079633</range></Coordinate>"
            "</objects><groups /></CoordinateSet><reverse>false</reverse></PinJoint>")


#: The double pendulum of OpenSim's Python tutorial 3 (version 30501: a JointSet whose joints name their bodies by
#: connectors, with 3.3 offsets), with a muscle from the ground to rod2 (path points with <body>, as 3.3).
PENDULUM_30501 = (
    "<?xml version='1.0' encoding='UTF-8'?><OpenSimDocument Version='30501'><Model name='double_pendulum'>"
    "<gravity>0 -9.80665 0</gravity><BodySet><objects>"
    "<Body name='rod1'><mass>1</mass><mass_center>0 0.2 0</mass_center><inertia>0.01 0.001 0.01 0 0 0</inertia></Body>"
    "<Body name='rod2'><mass>1</mass><mass_center>0 0 0</mass_center><inertia>0.01 0.001 0.01 0 0 0</inertia></Body>"
    "</objects><groups /></BodySet><FrameSet><objects></objects><groups /></FrameSet><JointSet><objects>"
    + _pin_30501("pin1", "../ground", "../rod1", "0 0.5 0", "q1", "-0.78539816")
    + _pin_30501("pin2", "rod1", "rod2", "0 0.512345678 0", "q2", "-1.04719755")
    + "</objects></JointSet><ForceSet><objects><Thelen2003Muscle name='m'><GeometryPath><PathPointSet><objects>"
    "<PathPoint name='a'><location>0.1 0.05 0</location><body>ground</body></PathPoint>"
    "<PathPoint name='b'><location>0.02 0.3 0</location><body>rod1</body></PathPoint>"
    "<PathPoint name='c'><location>0.01 0.1 0</location><body>rod2</body></PathPoint>"
    "</objects></PathPointSet></GeometryPath><max_isometric_force>100</max_isometric_force>"
    "<optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.2</tendon_slack_length>"
    "</Thelen2003Muscle></objects></ForceSet></Model></OpenSimDocument>")


def _poses(model, n=8, seed=0):
    lo, hi = model.coordinate_ranges.T
    q = np.random.default_rng(seed).uniform(lo, hi, (n, model.n_q))
    return np.vstack([model.default_q, q])


@pytest.mark.parametrize("text", [ARM_1X, PENDULUM_30501], ids=["version_10901", "version_30501"])
def test_legacy_file_equals_opensim(osim, tmp_path, text):
    path = tmp_path / "legacy.osim"
    path.write_text(text)
    model = load_osim(path)
    q = _poses(model)
    names, err = compare_with_opensim(path, model, q)
    assert names and err["transform"] < 1e-12 and err["points"] < 1e-12
    assert err["length"] < 1e-12 and err["moment_arm"] < 1e-12


def test_1x_translations_are_noted():
    doc = read_osim_string(ARM_1X, name="arm_1x.osim")
    notes = "\n".join(doc.notes)
    for fragment in ("MusclePoint -> PathPoint", "MuscleViaPoint -> ConditionalPathPoint", "natCubicSpline -> SimmSpline",
                     "MovingMusclePoint -> MovingPathPoint", "GeometryPath", "<is_rotation> dropped",
                     "<pennation_angle> -> <pennation_angle_at_optimal>",
                     "empty <function> for coordinate 'shoulder_flexion' read as LinearFunction(1, 0)"):
        assert fragment in notes
    kinds = {f.name: [p.kind for p in f.points] for f in doc.forces}
    assert kinds == {"biceps": ["fixed", "conditional", "fixed"], "brachialis": ["fixed", "moving"]}
    wrapped = ARM_1X.replace("</MusclePointSet>", "</MusclePointSet><MuscleWrapSet name=''><objects><MuscleWrap "
                             "name=''><wrap_object> cyl </wrap_object><method> hybrid </method><range> -1 -1 </range>"
                             "</MuscleWrap></objects><groups/></MuscleWrapSet>", 1)
    doc = read_osim_string(wrapped, name="arm_1x.osim")
    assert [w.wrap_object for w in doc.forces[0].wraps] == ["cyl"]


@pytest.mark.parametrize("version, fragment", [
    ("10400", "OpenSim 4.6 itself refuses files older than 10500"),
    ("10600", "older than 10901"),
    ("30510", "between 30505 and 30516"),
])
def test_versions_not_read_are_refused_by_name(version, fragment):
    with pytest.raises(UnsupportedFeatureError) as err:
        read_osim_string(ARM_1X.replace("Version='10901'", f"Version='{version}'"), name="old.osim")
    assert err.value.element == "<OpenSimDocument>"
    assert fragment in err.value.reason
    assert str(err.value).startswith("old.osim")


def test_1x_file_written_as_opensim4_equals_opensim(osim, tmp_path):
    """`convert -o NEW.osim` on a 1.x file: the OpenSim 4 file generated from the records (paths moved into
    GeometryPaths, the empty <function/> written as the LinearFunction it is) gives OpenSim the same L and R."""
    from osim_emb.io.osim_writer import write_osim
    source = tmp_path / "arm_1x.osim"
    source.write_text(ARM_1X)
    model = load_osim(source)
    out = tmp_path / "arm_4.osim"
    write_osim(model, out, opensim4=True)
    assert 'Version="40000"' in out.read_text()[:200]
    q = _poses(model)
    names, err = compare_with_opensim(out, model, q)
    assert names and max(err.values()) < 1e-12


@pytest.mark.parametrize("force, carried", [
    ("<BushingForce name='bush'><body_1>ground</body_1><body_2>ground</body_2></BushingForce>", True),
    ("<TorqueActuator name='bush'><bodyA>ground</bodyA><bodyB>ground</bodyB></TorqueActuator>", False),
])
def test_1x_file_with_a_pathless_force_is_regenerated_with_it_or_says_so(osim, tmp_path, caplog, force, carried):
    """A pre-4.0 BushingForce names its bodies the 3.x way, which the generated OpenSim 4 file writes as 4.x
    frames; a TorqueActuator's bodies are not brought to 4.x: the regenerated file leaves it out (named in a
    warning).  Either way it keeps the paths, and OpenSim initializes it."""
    import logging
    from osim_emb.io.osim_writer import write_osim
    source = tmp_path / "arm_1x_bushing.osim"
    source.write_text(ARM_1X.replace("<ForceSet name=''><objects>", f"<ForceSet name=''><objects>{force}", 1))
    model = load_osim(source)
    kind = force[1:force.index(" ")]
    assert ("bush", kind) in model.extras["forces"]
    out = tmp_path / "arm_4.osim"
    with caplog.at_level(logging.WARNING):
        write_osim(model, out, opensim4=True)
    assert ("leaves out 1 force(s)" in caplog.text and f"bush ({kind})" in caplog.text) is not carried
    m = osim.Model(str(out))
    m.initSystem()
    assert m.getForceSet().getSize() == len(model.muscles) + carried
    names, err = compare_with_opensim(out, model, _poses(model))
    assert names and max(err.values()) < 1e-12


def test_4x_path_point_sockets_in_an_older_file_are_read_as_opensim_reads_them(osim, tmp_path):
    """A pre-4.0 file whose path points name their frame the 4.x way (<socket_parent_frame>, as in Moco's
    subject_walk_armless_18musc.osim, version 30000): OpenSim converts <body> only where there is one and reads
    the socket in the converted model, so '/ground' and '/bodyset/NAME' are read; lengths and moment arms equal
    OpenSim's; any other socket is refused by element."""
    text = ARM_1X.replace("<body> ground </body></MusclePoint>",
                          "<socket_parent_frame>/ground</socket_parent_frame></MusclePoint>", 1)
    text = text.replace("<location> 0.02 -0.05 0 </location><body> lower </body>",
                        "<location> 0.02 -0.05 0 </location><socket_parent_frame>/bodyset/lower</socket_parent_frame>")
    assert text.count("socket_parent_frame>") == 4
    source = tmp_path / "arm_1x_sockets.osim"
    source.write_text(text)
    model = load_osim(source)
    points = model.extras["document"].forces[0].points
    assert [p.body for p in points] == ["ground", "upper", "lower"]
    names, err = compare_with_opensim(source, model, _poses(model))
    assert names and max(err.values()) < 1e-12
    with pytest.raises(UnsupportedFeatureError, match="only '/ground' and '/bodyset/NAME' are read"):
        read_osim_string(text.replace("/bodyset/lower", "../lower"), name="bad.osim")
