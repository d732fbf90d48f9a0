"""Kinematics, limits, mimic joints and URDF errors on inline robots."""
import numpy as np
import pytest

from my_collision_pkg.core.errors import ModelError
from my_collision_pkg.core.model.robot_model import Box, Cylinder, MeshRef, RobotModel, Sphere

# Two revolute links in the x-y plane (lengths 1 m and 0.5 m), a prismatic tool,
# a continuous wrist and a finger pair with mimic joints (one chained, one with
# multiplier -1 and an offset).
ARM_URDF = """
<robot name="planar">
  <link name="base"/>
  <link name="upper"><collision><geometry><cylinder radius="0.05" length="1"/></geometry></collision></link>
  <link name="fore"><collision><origin xyz="0.25 0 0" rpy="0 1.5707963267948966 0"/>
    <geometry><box size="0.1 0.1 0.5"/></geometry></collision></link>
  <link name="tool"/>
  <link name="wrist"/>
  <link name="finger_a"/>
  <link name="finger_b"/>
  <link name="finger_c"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="1 0 0"/><axis xyz="0 0 1"/><limit lower="0.5" upper="2" effort="1" velocity="1"/></joint>
  <joint name="extend" type="prismatic"><parent link="fore"/><child link="tool"/>
    <origin xyz="0.5 0 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.2" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="continuous"><parent link="tool"/><child link="wrist"/><axis xyz="1 0 0"/></joint>
  <joint name="grip" type="prismatic"><parent link="wrist"/><child link="finger_a"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>
  <joint name="grip_mirror" type="prismatic"><parent link="wrist"/><child link="finger_b"/>
    <axis xyz="0 1 0"/><limit lower="-0.04" upper="0" effort="1" velocity="1"/>
    <mimic joint="grip" multiplier="-1" offset="0.001"/></joint>
  <joint name="grip_chain" type="prismatic"><parent link="wrist"/><child link="finger_c"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="grip_mirror" multiplier="2"/></joint>
</robot>
"""


@pytest.fixture
def arm():
    return RobotModel.from_urdf_string(ARM_URDF)


def test_active_joints_exclude_mimic_and_fixed(arm):
    assert arm.active_joint_names == ("shoulder", "elbow", "extend", "wrist", "grip")
    assert arm.root_link == "base"
    np.testing.assert_array_equal(arm.lower_limits, [-3, 0.5, 0, -np.inf, 0])
    np.testing.assert_array_equal(arm.upper_limits, [3, 2, 0.2, np.inf, 0.04])


def test_default_positions_are_zero_clamped_into_limits(arm):
    np.testing.assert_array_equal(arm.default_positions(), [0, 0.5, 0, 0, 0])


def test_forward_kinematics_matches_planar_geometry(arm):
    shoulder, elbow, extend = 0.3, 1.1, 0.15
    T = arm.link_transforms([shoulder, elbow, extend, 0.0, 0.0])
    idx = {n: i for i, n in enumerate(arm.link_names)}
    elbow_xy = np.array([np.cos(shoulder), np.sin(shoulder)])
    np.testing.assert_allclose(T[idx["fore"]][:2, 3], elbow_xy, atol=1e-12)
    tool_xy = elbow_xy + (0.5 + extend) * np.array([np.cos(shoulder + elbow), np.sin(shoulder + elbow)])
    np.testing.assert_allclose(T[idx["tool"]][:2, 3], tool_xy, atol=1e-12)
    np.testing.assert_allclose(T[idx["tool"]][:3, :3] @ [1, 0, 0],
                               [np.cos(shoulder + elbow), np.sin(shoulder + elbow), 0], atol=1e-12)


def test_mimic_joints_follow_multiplier_offset_and_chains(arm):
    grip = 0.03
    T = arm.link_transforms([0.0, 0.5, 0.0, 0.0, grip])
    idx = {n: i for i, n in enumerate(arm.link_names)}
    T_wrist = T[idx["wrist"]]
    local_b = np.linalg.inv(T_wrist) @ T[idx["finger_b"]]
    local_c = np.linalg.inv(T_wrist) @ T[idx["finger_c"]]
    mirror = -1.0 * grip + 0.001
    np.testing.assert_allclose(local_b[:3, 3], [0, mirror, 0], atol=1e-12)
    np.testing.assert_allclose(local_c[:3, 3], [0, 0, 2 * mirror], atol=1e-12)
    np.testing.assert_allclose(arm.movable_values(np.array([0, 0.5, 0, 0, grip]))[-2:], [mirror, 2 * mirror])


def test_batch_kinematics_equals_single(arm):
    rng = np.random.default_rng(3)
    lo = np.array([-3, 0.5, 0, -10, 0]); hi = np.array([3, 2, 0.2, 10, 0.04])
    Q = rng.uniform(lo, hi, size=(50, 5))
    batch = arm.link_transforms_batch(Q)
    for k in range(len(Q)):
        np.testing.assert_allclose(batch[k], arm.link_transforms(Q[k]), atol=1e-12)


def test_collision_elements_keep_origin_and_index(arm):
    elements = {e.link: e for e in arm.collision_elements}
    assert isinstance(elements["upper"].shape, Cylinder) and elements["upper"].shape_id == 0
    fore = elements["fore"]
    assert isinstance(fore.shape, Box) and fore.shape.size_m == (0.1, 0.1, 0.5)
    np.testing.assert_allclose(fore.T_link_shape[:3, 3], [0.25, 0, 0])
    np.testing.assert_allclose(fore.T_link_shape[:3, :3] @ [0, 0, 1], [1, 0, 0], atol=1e-12)


def test_several_collisions_per_link_are_numbered():
    robot = RobotModel.from_urdf_string("""
        <robot name="r"><link name="a">
          <collision><geometry><sphere radius="1"/></geometry></collision>
          <collision><geometry><mesh filename="package://p/m.stl" scale="2 2 2"/></geometry></collision>
        </link></robot>""")
    shapes = [(e.shape_id, e.shape) for e in robot.collision_elements]
    assert shapes == [(0, Sphere(1.0)), (1, MeshRef("package://p/m.stl", (2.0, 2.0, 2.0)))]


def test_tolerates_elements_urdf_parser_py_rejects():
    # old-style transmission, texture inside a material, and no robot name
    robot = RobotModel.from_urdf_string("""
        <robot>
          <material name="skin"><texture filename="skin.png"/></material>
          <link name="a"><visual><geometry><box size="1 1 1"/></geometry>
            <material name="x"><texture/></material></visual></link>
          <link name="b"/>
          <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
            <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
          <transmission type="pr2_mechanism_model/SimpleTransmission" name="t">
            <actuator name="m"/><joint name="j"/><mechanicalReduction>1</mechanicalReduction>
          </transmission>
        </robot>""")
    assert robot.active_joint_names == ("j",)
    assert robot.name == "robot"


@pytest.mark.parametrize("xml, fragment", [
    ("", "empty"),
    ("<robot name='r'><link name='a'></robot>", "not well-formed"),
    ("<model name='r'/>", "<model>"),
    ("<robot name='r'><link name='a'/><link name='b'/></robot>", "exactly one root"),
    ("<robot name='r'><link name='a'/><joint name='j' type='fixed'><parent link='a'/>"
     "<child link='zz'/></joint></robot>", "unknown link 'zz'"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'><parent link='a'/>"
     "<child link='b'/><limit lower='1' upper='-1' effort='1' velocity='1'/></joint></robot>", "lower limit"),
    ("<robot name='r'><link name='a'/><link name='b'/><link name='c'/>"
     "<joint name='j1' type='revolute'><parent link='a'/><child link='b'/>"
     "<limit lower='-1' upper='1' effort='1' velocity='1'/><mimic joint='j2'/></joint>"
     "<joint name='j2' type='revolute'><parent link='a'/><child link='c'/>"
     "<limit lower='-1' upper='1' effort='1' velocity='1'/><mimic joint='j1'/></joint></robot>", "cycle"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'><parent link='a'/>"
     "<child link='b'/><axis xyz='0 0 0'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
     "</robot>", "zero axis"),
])
def test_malformed_urdf_gives_specific_error(xml, fragment):
    with pytest.raises(ModelError, match=None) as info:
        RobotModel.from_urdf_string(xml)
    assert fragment in str(info.value)


def test_mimic_of_an_unknown_joint_moves_on_its_own_with_a_warning():
    robot = RobotModel.from_urdf_string(
        "<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'><parent link='a'/>"
        "<child link='b'/><limit lower='-1' upper='1' effort='1' velocity='1'/><mimic joint='ghost'/></joint>"
        "</robot>")
    assert robot.active_joint_names == ("j",)
    assert any("'ghost'" in w for w in robot.warnings)


def test_missing_urdf_file_names_the_file(tmp_path):
    with pytest.raises(ModelError, match="nothere.urdf"):
        RobotModel.from_urdf_file(str(tmp_path / "nothere.urdf"))


# ----- numbers that are not finite or beyond MAX_COORDINATE_M ------------------------
def _one_joint(origin="0 0 0", limit='lower="-1" upper="1"', axis="1 0 0", collision_origin="0 0 0"):
    return f"""<robot name="one"><link name="a"/>
      <link name="b"><collision><origin xyz="{collision_origin}"/><geometry><sphere radius="0.1"/></geometry>
      </collision></link>
      <joint name="j" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="{origin}"/>
        <axis xyz="{axis}"/><limit {limit} effort="1" velocity="1"/></joint></robot>"""


@pytest.mark.parametrize("urdf, fragment", [
    (_one_joint(origin="nan 0 0.333"), "joint 'j' origin xyz has non-finite values"),
    (_one_joint(origin="0 inf 0"), "joint 'j' origin xyz has non-finite values"),
    (_one_joint(origin="1e12 0 0"), "joint 'j' origin xyz [1000000000000.0, 0.0, 0.0] is beyond the bound"),
    (_one_joint(limit='lower="nan" upper="1"'), "joint 'j' limits has non-finite values"),
    (_one_joint(limit='lower="-1" upper="inf"'), "joint 'j' limits has non-finite values"),
    (_one_joint(axis="nan 0 1"), "joint 'j' axis has non-finite values"),
    (_one_joint(collision_origin="0 0 nan"), "link 'b' <collision> 0 origin xyz has non-finite values"),
])
def test_non_finite_or_huge_urdf_numbers_are_refused_naming_the_element(urdf, fragment):
    with pytest.raises(ModelError, match=None) as info:
        RobotModel.from_urdf_string(urdf)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_nan_origin_robot_is_refused_while_the_same_robot_with_a_finite_origin_loads():
    ok = RobotModel.from_urdf_string(_one_joint(origin="0 0 0.333"))
    np.testing.assert_allclose(ok.link_transforms(np.array([0.5]))[1][:3, 3], [0.5, 0.0, 0.333])
    with pytest.raises(ModelError, match="origin"):
        RobotModel.from_urdf_string(_one_joint(origin="nan 0 0.333"))


@pytest.mark.parametrize("geometry, fragment", [
    ('<box size="1e300 1 1"/>', "box size"),
    ('<sphere radius="1e300"/>', "sphere radius"),
    ('<cylinder radius="0.1" length="2e4"/>', "cylinder radius and length"),
])
def test_huge_urdf_shapes_are_refused_when_the_scene_is_built(geometry, fragment):
    from my_collision_pkg.core.scene.planning_scene import PlanningScene
    robot = RobotModel.from_urdf_string(f"""<robot name="big"><link name="a"><collision><geometry>{geometry}
        </geometry></collision></link></robot>""")
    with pytest.raises(ModelError) as info:
        PlanningScene(robot)
    assert fragment in str(info.value) and "beyond the bound of 10000 m" in str(info.value)
