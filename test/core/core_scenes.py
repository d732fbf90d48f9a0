"""Small inline robots whose collision answers are known exactly, contact checks, random poses, and the
reference counts in a kernel's compiled code."""
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


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A rotation matrix from a unit quaternion of four normal draws of ``rng`` (uniform over rotations)."""
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_pose(rng: np.random.Generator, spread_m: float) -> np.ndarray:
    """A 4x4 pose: :func:`random_rotation`, then a translation uniform in [-spread_m, spread_m] per axis."""
    T = np.eye(4)
    T[:3, :3] = random_rotation(rng)
    T[:3, 3] = rng.uniform(-spread_m, spread_m, 3)
    return T


# bench_core's seed (issue 40's configurations): uniform in the Panda's joint limits, with config/panda_world.yaml
PANDA_SEED = 20260611


def panda_world_checker(n_configurations: int, world_path: str | None = None):
    """(checker, active joint names, the first ``n_configurations`` of :data:`PANDA_SEED`'s draws): the Panda of
    example-robot-data with config/panda_world.yaml (or ``world_path``), in this process only (``batch_workers`` 1).
    Close the checker."""
    import os

    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    urdf, srdf = panda_paths()
    world = world_path or os.path.join(os.path.dirname(__file__), "..", "..", "config", "panda_world.yaml")
    checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world), batch_workers=1)
    robot = checker.scene.robot
    names = robot.active_joint_names
    Q = np.random.default_rng(PANDA_SEED).uniform(robot.lower_limits, robot.upper_limits,
                                                  size=(n_configurations, len(names)))
    return checker, names, Q


def reference_counts(function, *args):
    """The reference-count calls (NRT_incref, NRT_decref) in the optimised code of the compiled ``function`` compiled
    afresh (uncached, so that its code can be read) and called on ``args``: its own body, not the Python wrapper's
    (``kernels.gjk``'s note on reference counts)."""
    import re

    from numba import njit
    fresh = njit(function.py_func)
    fresh(*args)
    counts = 0
    for module in fresh.inspect_llvm().values():
        for body in re.split(r"\n(?=define )", module):
            name = re.match(r"define [^@]*@\"?([^\"(]*)", body)
            if name and function.py_func.__name__ in name.group(1) and "cpython" not in name.group(1):
                counts += body.count("call void @NRT_incref(") + body.count("call void @NRT_decref(")
    return counts
