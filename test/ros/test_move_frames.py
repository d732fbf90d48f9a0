"""CollisionObject MOVE honours header.frame_id (conversions + scene, no DDS)."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF
from geometry_msgs.msg import Pose
from shape_msgs.msg import SolidPrimitive

from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.scene.planning_scene import PlanningScene
from my_collision_pkg.msg import CollisionObject
from my_collision_pkg.ros.conversions import collision_objects_to_updates


def pose(x=0.0, y=0.0, z=0.0):
    p = Pose()
    p.position.x, p.position.y, p.position.z = float(x), float(y), float(z)
    p.orientation.w = 1.0
    return p


def message(oid, frame, at, operation=CollisionObject.ADD):
    msg = CollisionObject()
    msg.id, msg.operation, msg.header.frame_id = oid, operation, frame
    msg.pose = pose(*at)
    if operation == CollisionObject.ADD:
        msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.05, 0.05, 0.05])]
        msg.primitive_poses = [pose()]
    return msg


@pytest.fixture
def scene():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF))
    scene.set_current_positions(["slide_x", "slide_y"], [0.5, 0.3])     # ball at (0.5, 0, 0), block at (0, 0.3, 1)
    return scene


def apply(scene, *msgs):
    updates, _ = collision_objects_to_updates(list(msgs), scene.robot)
    return scene.apply(updates)


def position(scene, oid):
    return scene.world.objects[oid].T_frame_object[:3, 3]


def test_move_of_a_world_object_to_a_link_frame_puts_it_at_the_links_current_pose(scene):
    apply(scene, message("post", "", (2, 2, 0)))
    apply(scene, message("post", "ball", (0, 0, 0), CollisionObject.MOVE))
    assert not scene.world.objects["post"].attached
    np.testing.assert_allclose(position(scene, "post"), [0.5, 0, 0], atol=1e-12)
    apply(scene, message("post", "block", (0, 0, 0.2), CollisionObject.MOVE))
    np.testing.assert_allclose(position(scene, "post"), [0, 0.3, 1.2], atol=1e-12)


@pytest.mark.parametrize("frame", ["", "base"])
def test_add_and_move_agree_on_the_planning_frame(scene, frame):
    apply(scene, message("post", frame, (1, 2, 3)))
    added = position(scene, "post").copy()
    apply(scene, message("post", frame, (1, 2, 3), CollisionObject.MOVE))
    np.testing.assert_allclose(position(scene, "post"), added)
    np.testing.assert_allclose(added, [1, 2, 3])


def test_move_of_an_attached_object_is_converted_into_its_link_frame(scene):
    apply(scene, message("tool", "block", (0, 0, 0.1)))
    np.testing.assert_allclose(position(scene, "tool"), [0, 0, 0.1])
    apply(scene, message("tool", "block", (0, 0, 0.2), CollisionObject.MOVE))       # its own link: as given
    np.testing.assert_allclose(position(scene, "tool"), [0, 0, 0.2])
    apply(scene, message("tool", "", (0.1, 0.3, 1.5), CollisionObject.MOVE))        # planning frame
    assert scene.world.objects["tool"].link == "block"
    np.testing.assert_allclose(position(scene, "tool"), [0.1, 0, 0.5], atol=1e-12)
    apply(scene, message("tool", "ball", (0, 0, 1), CollisionObject.MOVE))          # another link
    np.testing.assert_allclose(position(scene, "tool"), [0.5, -0.3, 0], atol=1e-12)


@pytest.mark.parametrize("frame", ["nowhere", "post"])
def test_move_in_a_frame_that_is_no_link_is_refused_by_name(scene, frame):
    apply(scene, message("post", "", (2, 2, 0)))
    before = scene.world
    with pytest.raises(SceneError, match=f"frame '{frame}' is neither the planning frame"):
        apply(scene, message("post", frame, (0, 0, 0), CollisionObject.MOVE))
    assert scene.world is before


def test_message_mesh_above_the_triangle_bound_is_refused_before_conversion(scene, monkeypatch):
    from geometry_msgs.msg import Point
    from shape_msgs.msg import Mesh, MeshTriangle

    from my_collision_pkg.ros import conversions
    monkeypatch.setattr(conversions, "MAX_MESH_TRIANGLES", 2)
    msg = CollisionObject()
    msg.id, msg.operation = "big", CollisionObject.ADD
    mesh = Mesh()
    mesh.vertices = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))]
    mesh.triangles = [MeshTriangle(vertex_indices=list(t)) for t in ((0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3))]
    msg.meshes, msg.mesh_poses = [mesh], [pose()]
    with pytest.raises(SceneError, match=r"object 'big' mesh 0 has 4 triangles, more than the bound of 2"):
        collision_objects_to_updates([msg], scene.robot)


# ----- scene markers after an update: untouched objects' markers reused --------------------
def test_marker_cache_gives_the_same_array_and_reuses_untouched_markers(scene):
    from builtin_interfaces.msg import Time

    from my_collision_pkg.ros.scene_markers import SceneMarkerCache, scene_objects_marker_array
    cache = SceneMarkerCache()
    apply(scene, message("post", "", (2, 2, 0)), message("crate", "", (1, 2, 0)), message("tool", "block", (0, 0, 0.1)))
    first = scene_objects_marker_array(scene.world, "base", Time(sec=1), cache=cache)
    apply(scene, message("post", "ball", (0, 0, 0), CollisionObject.MOVE))
    stamp = Time(sec=2)
    cached = scene_objects_marker_array(scene.world, "base", stamp, cache=cache)
    fresh = scene_objects_marker_array(scene.world, "base", stamp)
    assert cached == fresh
    by_ns = {m.ns: m for m in first.markers[1:]}
    for m in cached.markers[1:]:
        assert (m is by_ns[m.ns]) == (m.ns != "scene_objects/post")
        assert m.header.stamp == stamp
    apply(scene, message("crate", "", (0, 0, 0), CollisionObject.REMOVE))
    after_remove = scene_objects_marker_array(scene.world, "base", stamp, cache=cache)
    assert [m.ns for m in after_remove.markers[1:]] == ["scene_objects/post", "scene_objects/tool"]
    assert after_remove == scene_objects_marker_array(scene.world, "base", stamp)
