"""Small inline robots whose collision answers are known exactly, and contact checks."""
import numpy as np
import pytest

from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject


# A prismatic slider carrying a sphere (r = 0.1 m) along x, over a fixed base
# link holding a sphere (r = 0.1 m) at the origin, and a second arm whose box
# can be moved along y. All geometry is primitive, so depths are exact.
SLIDER_URDF = """
<robot name="slider">
  <link name="base">
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <link name="carriage"/>
  <link name="ball">
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <link name="block">
    <collision><origin xyz="0 0 0"/><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
  </link>
  <joint name="slide_x" type="prismatic">
    <parent link="base"/><child link="carriage"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
  <joint name="fix_ball" type="fixed">
    <parent link="carriage"/><child link="ball"/><origin xyz="0 0 0"/>
  </joint>
  <joint name="slide_y" type="prismatic">
    <parent link="base"/><child link="block"/><axis xyz="0 1 0"/><origin xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def assert_contact_invariants(contact, atol=1e-9):
    p0, p1 = contact.nearest_points
    np.testing.assert_allclose(p1 - p0, contact.distance * contact.normal, atol=atol)
    np.testing.assert_allclose(np.linalg.norm(contact.normal), 1.0, atol=1e-9)
    np.testing.assert_allclose(contact.position, 0.5 * (p0 + p1), atol=atol)
    assert contact.penetration_depth == pytest.approx(max(0.0, -contact.distance))


def two_objects(spec_a, T_a, spec_b, T_b):
    """World objects 'a' and 'b' beside the slider robot: (world, T_world_shape, index of a, index of b)."""
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([AddObject(SceneObject("a", (ObjectShape(spec_a),), T_a)),
                 AddObject(SceneObject("b", (ObjectShape(spec_b),), T_b))])
    world = scene.world
    T_world_shape = world.shape_transforms(world.robot.link_transforms(scene.current_positions))
    index = {e.owner: k for k, e in enumerate(world.shapes) if not e.on_robot}
    return world, T_world_shape, index["a"], index["b"]
