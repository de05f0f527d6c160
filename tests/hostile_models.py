"""A small OpenSim 4 model as an XML string, for the hostile-input and fuzz tests (no files needed)."""

SMALL_OSIM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="{model_name}">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground"/>
    <BodySet name="bodyset"><objects>
      <Body name="{body_name}">
        <mass>{mass}</mass>
        <mass_center>0 -0.5 0</mass_center>
        <inertia>{inertia}</inertia>
        <WrapObjectSet><objects>
          <WrapCylinder name="{wrap_name}">
            <xyz_body_rotation>0 0 0</xyz_body_rotation><translation>0 0 0</translation>
            <radius>0.02</radius><length>0.1</length>
          </WrapCylinder>
        </objects></WrapObjectSet>
      </Body>
      <Body name="lower">
        <mass>1</mass>
        <mass_center>0 -0.5 0</mass_center>
        <inertia>0.1 0.1 0.01 0 0 0</inertia>
        <WrapObjectSet><objects>
          <WrapCylinder name="{wrap_name_2}">
            <xyz_body_rotation>0 0 0</xyz_body_rotation><translation>0 0 0</translation>
            <radius>0.02</radius><length>0.1</length>
          </WrapCylinder>
        </objects></WrapObjectSet>
      </Body>
    </objects></BodySet>
    <JointSet name="jointset"><objects>
      <PinJoint name="shoulder">
        <socket_parent_frame>ground_offset</socket_parent_frame>
        <socket_child_frame>upper_offset</socket_child_frame>
        <coordinates>
          <Coordinate name="{coordinate_name}">
            <default_value>{default}</default_value>
            <range>{range}</range>
          </Coordinate>
        </coordinates>
        <frames>
          <PhysicalOffsetFrame name="ground_offset">
            <socket_parent>/ground</socket_parent>
            <translation>0 0 0</translation><orientation>0 0 0</orientation>
          </PhysicalOffsetFrame>
          <PhysicalOffsetFrame name="upper_offset">
            <socket_parent>/bodyset/{body_name}</socket_parent>
            <translation>0 0 0</translation><orientation>0 0 0</orientation>
          </PhysicalOffsetFrame>
        </frames>
      </PinJoint>
      <CustomJoint name="{joint_name}">
        <socket_parent_frame>upper_offset2</socket_parent_frame>
        <socket_child_frame>lower_offset</socket_child_frame>
        <coordinates>
          <Coordinate name="elbow"><default_value>0.5</default_value><range>0 2</range></Coordinate>
        </coordinates>
        <SpatialTransform>
          <TransformAxis name="rotation1">
            <coordinates>elbow</coordinates>
            <axis>0 0 1</axis>
            {elbow_function}
          </TransformAxis>
          <TransformAxis name="rotation2"><coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
          <TransformAxis name="rotation3"><coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
          <TransformAxis name="translation1"><coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
          <TransformAxis name="translation2"><coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
          <TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis></TransformAxis>
        </SpatialTransform>
        <frames>
          <PhysicalOffsetFrame name="upper_offset2">
            <socket_parent>/bodyset/{body_name}</socket_parent>
            <translation>0 -1 0</translation><orientation>0 0 0</orientation>
          </PhysicalOffsetFrame>
          <PhysicalOffsetFrame name="lower_offset">
            <socket_parent>/bodyset/lower</socket_parent>
            <translation>0 0 0</translation><orientation>0 0 0</orientation>
          </PhysicalOffsetFrame>
        </frames>
      </CustomJoint>
    </objects></JointSet>
    <ForceSet name="forceset"><objects>
      <PathActuator name="{muscle_name}">
        <GeometryPath name="geometrypath">
          <PathPointSet><objects>
            <PathPoint name="p1"><socket_parent_frame>/bodyset/{body_name}</socket_parent_frame>
              <location>0.02 -0.2 0</location></PathPoint>
            <PathPoint name="p2"><socket_parent_frame>/bodyset/lower</socket_parent_frame>
              <location>0.02 -0.2 0</location></PathPoint>
          </objects></PathPointSet>
          <PathWrapSet><objects>
            <PathWrap name="pw"><wrap_object>{wrap_name}</wrap_object><method>hybrid</method></PathWrap>
          </objects></PathWrapSet>
        </GeometryPath>
      </PathActuator>
      <PathActuator name="{muscle_name_2}">
        <GeometryPath name="geometrypath">
          <PathPointSet><objects>
            <PathPoint name="p1"><socket_parent_frame>/bodyset/{body_name}</socket_parent_frame>
              <location>-0.02 -0.2 0</location></PathPoint>
            <PathPoint name="p2"><socket_parent_frame>/bodyset/lower</socket_parent_frame>
              <location>-0.02 -0.2 0</location></PathPoint>
          </objects></PathPointSet>
        </GeometryPath>
      </PathActuator>
      <CoordinateLimitForce name="limit"><coordinate>elbow</coordinate></CoordinateLimitForce>
    </objects></ForceSet>
  </Model>
</OpenSimDocument>
"""

DEFAULTS = dict(model_name="small", body_name="upper", mass="2", inertia="0.2 0.2 0.02 0 0 0", wrap_name="cyl",
                wrap_name_2="cyl2", coordinate_name="shoulder_q", default="0", range="-1.5 1.5",
                joint_name="elbow_joint", elbow_function='<LinearFunction name="function"><coefficients>1 0'
                                                         '</coefficients></LinearFunction>',
                muscle_name="m1", muscle_name_2="m2")


def small_osim(**changes: str) -> str:
    """The small model's XML with some placeholders changed."""
    return SMALL_OSIM.format(**{**DEFAULTS, **changes})


def small_model_file(folder):
    """The small model written to ``folder``/small.osim (its path)."""
    from pathlib import Path
    path = Path(folder) / "small.osim"
    path.write_text(small_osim())
    return path


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of ``osim-emb ARGV``; a traceback is a test failure."""
    from osim_emb.cli.main import main
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err
