"""The scene's objects as markers, without a running ROS graph."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF
from visualization_msgs.msg import Marker

from my_collision_pkg.core.model.robot_model import Box, Capsule, Cylinder, MeshRef, RobotModel, Sphere
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, RemoveObject, SceneObject
from my_collision_pkg.ros.scene_markers import scene_objects_marker_array
from my_collision_pkg.core.model.transforms import make_transform, rpy_to_matrix


@pytest.fixture
def scene(tmp_path):
    import trimesh
    mesh_path = tmp_path / "part.stl"
    trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(mesh_path)
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF))
    scene.apply([
        AddObject(SceneObject("table", (ObjectShape(Box((1.0, 2.0, 0.1))),
                                        ObjectShape(Cylinder(0.05, 0.5), make_transform(None, [0, 0, -0.3]))),
                              make_transform(rpy_to_matrix(0, 0, np.pi / 2), [0.5, 0.0, -0.2]))),
        AddObject(SceneObject("marble", (ObjectShape(Sphere(0.1)),), make_transform(None, [2, 0, 0]))),
        AddObject(SceneObject("pill", (ObjectShape(Capsule(0.02, 0.1)),), make_transform(None, [0, 2, 0]))),
        AddObject(SceneObject("part", (ObjectShape(MeshRef(str(mesh_path))),), make_transform(None, [0, -2, 0]))),
        AddObject(SceneObject("tool", (ObjectShape(Box((0.02, 0.02, 0.2))),), make_transform(None, [0, 0, 0.1]),
                              "block")),
    ])
    return scene


def test_one_marker_per_shape_in_the_right_frame(scene):
    array = scene_objects_marker_array(scene.world, "base", scene_stamp())
    assert array.markers[0].action == Marker.DELETEALL
    assert all(m.header.stamp.sec == 12 for m in array.markers)
    drawn = {(m.ns, m.id): m for m in array.markers[1:]}
    assert set(drawn) == {("scene_objects/table", 0), ("scene_objects/table", 1), ("scene_objects/marble", 0),
                          ("scene_objects/pill", 0), ("scene_objects/part", 0), ("scene_objects/tool", 0)}
    table = drawn[("scene_objects/table", 0)]
    assert table.type == Marker.CUBE and table.header.frame_id == "base"
    assert (table.scale.x, table.scale.y, table.scale.z) == pytest.approx((1.0, 2.0, 0.1))
    assert (table.pose.position.x, table.pose.position.z) == pytest.approx((0.5, -0.2))
    leg = drawn[("scene_objects/table", 1)]
    assert leg.type == Marker.CYLINDER and leg.pose.position.z == pytest.approx(-0.5)
    assert drawn[("scene_objects/marble", 0)].type == Marker.SPHERE
    assert drawn[("scene_objects/marble", 0)].scale.x == pytest.approx(0.2)
    pill = drawn[("scene_objects/pill", 0)]
    assert pill.type == Marker.TRIANGLE_LIST and len(pill.points) % 3 == 0 and pill.points
    part = drawn[("scene_objects/part", 0)]
    assert part.type == Marker.MESH_RESOURCE and part.mesh_resource.startswith("file:///")
    tool = drawn[("scene_objects/tool", 0)]
    assert tool.header.frame_id == "block"                    # attached: drawn in its link's frame
    assert tool.pose.position.z == pytest.approx(0.1)
    assert tool.color.b > tool.color.r                        # attached objects in another colour


def test_removed_objects_vanish(scene):
    scene.apply([RemoveObject("marble")])
    array = scene_objects_marker_array(scene.world, "base", scene_stamp())
    assert array.markers[0].action == Marker.DELETEALL
    assert "scene_objects/marble" not in {m.ns for m in array.markers}


def scene_stamp():
    from builtin_interfaces.msg import Time
    return Time(sec=12, nanosec=5)
