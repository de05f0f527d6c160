"""The safe API: configurations matched by name, checked against ranges, NaN and degrees refused; tidy tables."""

import numpy as np
import pandas as pd
import pytest

import osim_emb
from osim_emb import ConfigurationError, degrees_to_q, moment_arm_table
from osim_emb.io import read_osim_string
from osim_emb.io.convert import document_to_model
from osim_emb.paths import geometry

ARM = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
<Model name="two_link">
  <Ground name="ground"/>
  <BodySet name="bodyset"><objects>
    <Body name="upper"><mass>1.5</mass><mass_center>0 -0.15 0</mass_center><inertia>0.01 0.002 0.01 0 0 0</inertia></Body>
    <Body name="lower"><mass>1</mass><mass_center>0 -0.12 0</mass_center><inertia>0.008 0.001 0.008 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet name="jointset"><objects>
    <PinJoint name="shoulder">
      <socket_parent_frame>ground_offset</socket_parent_frame><socket_child_frame>upper_offset</socket_child_frame>
      <coordinates><Coordinate name="shoulder_flexion"><default_value>0</default_value><range>-1.5 2.5</range></Coordinate></coordinates>
      <frames>
        <PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
        <PhysicalOffsetFrame name="upper_offset"><socket_parent>/bodyset/upper</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
      </frames>
    </PinJoint>
    <PinJoint name="elbow">
      <socket_parent_frame>upper_offset</socket_parent_frame><socket_child_frame>lower_offset</socket_child_frame>
      <coordinates><Coordinate name="elbow_flexion"><default_value>0</default_value><range>0 2.6</range></Coordinate></coordinates>
      <frames>
        <PhysicalOffsetFrame name="upper_offset"><socket_parent>/bodyset/upper</socket_parent><translation>0 -0.3 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
        <PhysicalOffsetFrame name="lower_offset"><socket_parent>/bodyset/lower</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
      </frames>
    </PinJoint>
  </objects></JointSet>
  <ForceSet name="forceset"><objects>
    <PathActuator name="biceps"><GeometryPath name="path"><PathPointSet><objects>
      <PathPoint name="o"><socket_parent_frame>/ground</socket_parent_frame><location>0.03 0.05 0</location></PathPoint>
      <PathPoint name="i"><socket_parent_frame>/bodyset/lower</socket_parent_frame><location>0.02 -0.05 0</location></PathPoint>
    </objects></PathPointSet></GeometryPath></PathActuator>
    <PathActuator name="triceps"><GeometryPath name="path"><PathPointSet><objects>
      <PathPoint name="o"><socket_parent_frame>/bodyset/upper</socket_parent_frame><location>-0.02 -0.1 0</location></PathPoint>
      <PathPoint name="i"><socket_parent_frame>/bodyset/lower</socket_parent_frame><location>-0.02 0.03 0</location></PathPoint>
    </objects></PathPointSet></GeometryPath></PathActuator>
  </objects></ForceSet>
</Model>
</OpenSimDocument>
"""


@pytest.fixture(scope="module")
def arm():
    return document_to_model(read_osim_string(ARM, name="two_link.osim"))


def test_names_and_exports(arm):
    assert osim_emb.load_model is osim_emb.io.model_json.load_model
    assert arm.coordinate_names == ["shoulder_flexion", "elbow_flexion"]
    text = repr(arm)
    assert len(text) < 200 and "two_link" in text and "2 coordinates" in text and "2 muscles" in text


def test_dataframe_series_dict_matched_by_name(arm):
    q = np.array([[0.3, 1.2], [-0.5, 0.4]])
    ref = geometry.lengths_and_moment_arms(arm, q)
    swapped = pd.DataFrame({"elbow_flexion": q[:, 1], "shoulder_flexion": q[:, 0]})
    for given in (swapped, {"elbow_flexion": q[:, 1], "shoulder_flexion": q[:, 0]}):
        got = geometry.lengths_and_moment_arms(arm, given)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
    one = geometry.lengths_and_moment_arms(arm, pd.Series({"elbow_flexion": 1.2, "shoulder_flexion": 0.3}))
    np.testing.assert_array_equal(one[1][0], ref[1][0])


def test_missing_and_unknown_names_are_named(arm):
    with pytest.raises(ConfigurationError, match=r"missing coordinates \['elbow_flexion'\]"):
        geometry.lengths_and_moment_arms(arm, pd.DataFrame({"shoulder_flexion": [0.1]}))
    with pytest.raises(ConfigurationError, match=r"unknown coordinates \['wrist'\]"):
        geometry.muscle_lengths(arm, {"shoulder_flexion": 0.1, "elbow_flexion": 0.2, "wrist": 0.0})
    with pytest.raises(ConfigurationError, match=r"shape \(N, 2\)"):
        geometry.lengths_and_moment_arms(arm, np.zeros(3))


def test_nan_refused_and_ranges_checked_with_round_off(arm):
    with pytest.raises(ConfigurationError, match="finite"):
        geometry.lengths_and_moment_arms(arm, [0.1, np.nan])
    geometry.lengths_and_moment_arms(arm, [0.1, -2e-8])  # round-off below a bound is accepted
    geometry.lengths_and_moment_arms(arm, [2.5 + 4e-6, 0.1])  # a bound written with 6 digits
    with pytest.raises(ConfigurationError, match="outside its range"):
        geometry.lengths_and_moment_arms(arm, [0.1, -0.01])
    length, _ = geometry.lengths_and_moment_arms(arm, [0.1, -0.01], allow_out_of_range=True)
    assert np.isfinite(length).all()


def test_degrees_never_taken_silently(arm):
    with pytest.raises(ConfigurationError, match="degrees_to_q"):
        geometry.lengths_and_moment_arms(arm, {"shoulder_flexion": 30.0, "elbow_flexion": 90.0})
    q = degrees_to_q(arm, {"shoulder_flexion": 30.0, "elbow_flexion": 90.0})
    np.testing.assert_allclose(q, [[np.pi / 6, np.pi / 2]], rtol=0, atol=1e-15)
    a = geometry.lengths_and_moment_arms(arm, q)[1]
    b = geometry.lengths_and_moment_arms(arm, [np.pi / 6, np.pi / 2])[1]
    np.testing.assert_array_equal(a, b)


def test_moment_arm_table_is_tidy_and_labelled(arm):
    q = pd.DataFrame({"shoulder_flexion": [0.3, -0.5], "elbow_flexion": [1.2, 0.4]}, index=["a", "b"])
    t = moment_arm_table(arm, q)
    assert list(t.columns) == ["pose", "muscle", "coordinate", "motion_type", "q", "length_m", "moment_arm_m"]
    assert len(t) == 2 * 2 * 2
    length, r = geometry.lengths_and_moment_arms(arm, q)
    row = t[(t.pose == "b") & (t.muscle == "triceps") & (t.coordinate == "elbow_flexion")].iloc[0]
    assert row.moment_arm_m == r[1, 1, 1] and row.length_m == length[1, 1] and row.q == 0.4
    # the ground-attached biceps spans both joints; triceps (upper -> lower) only the elbow
    assert t[(t.muscle == "triceps") & (t.coordinate == "shoulder_flexion")].moment_arm_m.abs().max() < 1e-15
    # -dL/dq by central differences, an independent check of the labels
    h = 1e-6
    qb = np.array([[-0.5, 0.4 + h], [-0.5, 0.4 - h]])
    lb = geometry.muscle_lengths(arm, qb)
    assert abs(-(lb[0, 1] - lb[1, 1]) / (2 * h) - row.moment_arm_m) < 1e-8


def test_load_osim_takes_an_opensim_model(osim, tmp_path):
    path = tmp_path / "two_link.osim"
    path.write_text(ARM)
    m = osim.Model(str(path))
    model = osim_emb.load_osim(m)
    assert model == osim_emb.load_osim(path)
