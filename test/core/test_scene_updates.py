"""Scene updates made at the cost of the change: the next snapshot equals a full rebuild,
the old snapshot is untouched, MOVE frames, memory released after big meshes."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.errors import MeshError, SceneError
from my_collision_pkg.core.memory import release_free_memory
from my_collision_pkg.core.model.robot_model import Box, RobotModel, Sphere, TriangleMesh
from my_collision_pkg.core.model.srdf import parse_srdf
from my_collision_pkg.core.model.transforms import make_transform, rpy_to_matrix
from my_collision_pkg.core.scene import planning_scene
from my_collision_pkg.core.scene.planning_scene import (AddObject, ClearObjects, CollisionWorld, MoveObject, ObjectShape,
                                                        PlanningScene, RemoveObject, SceneObject)

SRDF = """<robot name="slider"><group name="balls"><link name="ball"/></group>
<disable_collisions link1="base" link2="block" reason="test"/></robot>"""


def obj(oid, spec, center=(0, 0, 0), link=None, touch=(), shapes=1):
    return SceneObject(oid, tuple(ObjectShape(spec, make_transform(None, [0.01 * k, 0, 0])) for k in range(shapes)),
                       make_transform(rpy_to_matrix(0.1, 0.2, 0.3), center), link, tuple(touch))


@pytest.fixture
def scene():
    robot = RobotModel.from_urdf_string(SLIDER_URDF)
    return PlanningScene(robot, parse_srdf(SRDF, robot), default_padding_m=0.01, link_padding_m={"ball": 0.02})


def rebuilt(scene):
    """The world a full build makes of the scene's current contents."""
    w = scene.world
    return CollisionWorld(scene.robot, scene.semantic, scene._robot_shapes, w.objects, w.object_geometry, w.acm,
                          w.default_padding_m, w.link_padding_m)


def reference_pairs(world):
    """The pair table by its definition, pair by pair: a shape on the robot (link or attached)
    against a world object (environment pairs, first) or a later shape on the robot (self
    pairs), unless the bodies are the same, the matrix allows them, or an attached object
    touches its link or touch links; each part ordered by the first shape, then the second."""
    env, slf = [], []
    for i, a in enumerate(world.shapes):
        for j, b in enumerate(world.shapes):
            if not a.on_robot or a.owner == b.owner or (b.on_robot and j <= i):
                continue
            touch = any(x.body_type == BodyType.ROBOT_ATTACHED and
                        (y.owner == world.objects[x.owner].link or y.owner in world.objects[x.owner].touch_links)
                        for x, y in ((a, b), (b, a)))
            if not world.acm.allowed(a.owner, b.owner) and not touch:
                (slf if b.on_robot else env).append((i, j))
    return np.array(env + slf, dtype=np.int64).reshape(-1, 2), len(env)


def tables(world):
    return {"shapes": [(e.owner, e.body_type, e.shape_id, e.link_index, e.padding_m) for e in world.shapes],
            "geometry": [id(e.geometry) for e in world.shapes],
            "T": world.T_frame_shape.copy(), "link": world.shape_link.copy(), "center": world.obb_center.copy(),
            "axes": world.obb_axes.copy(), "half": world.obb_half.copy(), "pairs": world.pairs.copy(),
            "calls": world.pair_calls.copy(), "swapped": world.pair_swapped.copy(),
            "self": world.pair_is_self.copy(), "padding": world.pair_padding_m.copy(),
            "objects": list(world.objects)}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            assert a[key] == b[key], key


def test_random_updates_equal_a_full_rebuild_and_leave_old_snapshots_alone(scene):
    rng = np.random.default_rng(3)
    mesh = TriangleMesh(np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], dtype=float),
                        np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]))
    history = []
    for step in range(120):
        ids = list(scene.world.objects)
        kind = rng.integers(0, 7)
        centre = rng.uniform(-1, 1, 3)
        if kind <= 1 or not ids:
            oid = f"o{rng.integers(0, 30)}"       # new or replaced
            spec = [Box((0.1, 0.2, 0.1)), Sphere(0.05), mesh][rng.integers(0, 3)]
            link = ["ball", "block", None, None][rng.integers(0, 4)]
            updates = [AddObject(obj(oid, spec, centre, link, ("base",) if link else (), int(rng.integers(1, 3))))]
        elif kind == 2:
            updates = [MoveObject(ids[rng.integers(0, len(ids))], make_transform(None, centre))]
        elif kind == 3:
            updates = [RemoveObject(ids[rng.integers(0, len(ids))])]
        elif kind == 4:
            updates = [AddObject(obj(f"n{step}", Sphere(0.05), centre)), AddObject(obj(f"m{step}", Sphere(0.04))),
                       MoveObject(ids[0], make_transform(None, -centre))] if ids[0] not in ("n", "m") else []
        elif kind == 5:
            a = ids[rng.integers(0, len(ids))]
            scene.set_allowed_collision(a, ["ball", "base", "block", ids[0]][rng.integers(0, 4)], bool(rng.integers(0, 2)))
            updates = []
        else:
            updates = [ClearObjects(bool(rng.integers(0, 2)))] if rng.uniform() < 0.3 else []
        if updates:
            scene.apply(updates)
        assert_same(tables(scene.world), tables(rebuilt(scene)))
        pairs, n_env = reference_pairs(scene.world)
        np.testing.assert_array_equal(scene.world.pairs, pairs)
        assert np.count_nonzero(~scene.world.pair_is_self) == n_env
        history.append((scene.world, tables(scene.world)))
    for world, saved in history:
        assert_same(tables(world), saved)


def test_pair_selection_of_a_group_keeps_pairs_moved_by_it(scene):
    scene.apply([AddObject(obj("w", Sphere(0.05), (1, 1, 1))), AddObject(obj("held", Sphere(0.05), link="ball"))])
    world = scene.world
    selection = world.pair_selection("balls", True, False)
    moved = {"ball", "held"}
    for a, b in selection.pairs:
        assert world.shapes[a].owner in moved or world.shapes[b].owner in moved
    every = world.pair_selection("", True, False)
    kept = {tuple(p) for p in every.pairs
            if world.shapes[p[0]].owner in moved or world.shapes[p[1]].owner in moved}
    assert kept == {tuple(p) for p in selection.pairs}
    np.testing.assert_array_equal(every.margins[~world.pair_is_self], world.pair_padding_m[~world.pair_is_self])
    assert not np.any(every.margins[world.pair_is_self])


def test_update_shares_untouched_rows_and_geometry(scene):
    scene.apply([AddObject(obj(f"b{k}", Box((0.1, 0.1, 0.1)), (2, k, 0))) for k in range(20)])
    before = scene.world
    fcl_before = before.fcl_objects()
    scene.apply([MoveObject("b3", make_transform(None, [3, 3, 3])), RemoveObject("b7"),
                 AddObject(obj("late", Sphere(0.1), (2, 2, 2)))])
    after = scene.world
    old = {(e.owner, e.shape_id): e for e in before.shapes}
    for e in after.shapes:
        if e.owner in ("b3", "late"):
            continue
        assert e is old[(e.owner, e.shape_id)]          # the very entry, geometry and pose shared
    fcl_after = after.fcl_objects()
    n_before, n_after = len(before.shapes), len(after.shapes)
    index_before = {(e.owner, e.shape_id): k for k, e in enumerate(before.shapes)}
    for k, e in enumerate(after.shapes):
        if e.link_index < 0 and e.owner not in ("b3", "late"):
            assert fcl_after[k] is fcl_before[index_before[(e.owner, e.shape_id)]]
    assert len(fcl_after) == 2 * n_after and len(fcl_before) == 2 * n_before
    assert list(after.objects)[-1] == "late" and "b7" not in after.objects
    np.testing.assert_allclose(before.objects["b3"].T_frame_object[:3, 3], [2, 3, 0])


def test_move_in_another_frame_converts_into_the_objects_own_frame(scene):
    checker = CollisionChecker(scene)
    scene.set_current_positions(["slide_x", "slide_y"], [0.5, 0.3])
    scene.apply([AddObject(obj("post", Box((0.05, 0.05, 0.05)), (1.5, 1.5, 0))),
                 AddObject(obj("tool", Sphere(0.02), (0, 0, 0.5), link="block"))])
    # a world object moved to the ball's frame lands on the ball and stays in the world
    scene.apply([MoveObject("post", np.eye(4), "ball")])
    post = scene.world.objects["post"]
    assert not post.attached
    np.testing.assert_allclose(post.T_frame_object, make_transform(None, [0.5, 0, 0]), atol=1e-12)
    assert not checker.check(["slide_x"], [0.5]).valid and checker.check(["slide_x"], [-1.5]).valid
    # an attached object given in the planning frame is converted into its link's frame
    scene.apply([MoveObject("tool", make_transform(rpy_to_matrix(0, 0, 0.4), [0.1, 0.3, 1.5]), "base")])
    tool = scene.world.objects["tool"]
    assert tool.link == "block"
    np.testing.assert_allclose(tool.T_frame_object, make_transform(rpy_to_matrix(0, 0, 0.4), [0.1, 0, 0.5]),
                               atol=1e-12)
    # ... and given in another link's frame (the ball's, at (0.5, 0, 0))
    scene.apply([MoveObject("tool", make_transform(None, [0, 0, 1.0]), "ball")])
    np.testing.assert_allclose(scene.world.objects["tool"].T_frame_object[:3, 3], [0.5, -0.3, 0.0], atol=1e-12)
    # in its own link's frame, or with no frame: taken as it is
    for frame in ("block", None):
        scene.apply([MoveObject("tool", make_transform(None, [0, 0, 0.25]), frame)])
        np.testing.assert_allclose(scene.world.objects["tool"].T_frame_object[:3, 3], [0, 0, 0.25])


@pytest.mark.parametrize("frame", ["nowhere", "post"])
def test_move_in_an_unknown_frame_is_refused_by_name(scene, frame):
    scene.apply([AddObject(obj("post", Box((0.05, 0.05, 0.05)), (1.5, 1.5, 0)))])
    before = scene.world
    with pytest.raises(SceneError, match=f"frame '{frame}' is neither the planning frame 'base' nor a robot link"):
        scene.apply([MoveObject("post", np.eye(4), frame)])
    assert scene.world is before


def test_release_free_memory_runs_where_it_can():
    assert release_free_memory() in (True, False)
    assert release_free_memory(collect_garbage=True) in (True, False)


def test_big_mesh_updates_release_memory(scene, monkeypatch):
    calls = []
    monkeypatch.setattr(planning_scene, "release_free_memory", lambda **kw: calls.append(kw))
    monkeypatch.setattr(planning_scene, "RELEASE_AFTER_TRIANGLES", 50)
    import trimesh
    sphere = trimesh.creation.icosphere(subdivisions=2)          # 320 triangles
    spec = TriangleMesh(np.array(sphere.vertices), np.array(sphere.faces))
    scene.apply([AddObject(obj("small", Sphere(0.1), (2, 0, 0)))])
    assert calls == []
    scene.apply([AddObject(obj("big", spec, (2, 2, 0)))])
    assert len(calls) == 1
    scene.apply([MoveObject("big", np.eye(4))])
    assert len(calls) == 1
    scene.apply([RemoveObject("big")])
    assert len(calls) == 2


def test_convex_mesh_with_a_vertex_of_high_valence_is_checked_as_a_closed_mesh(scene):
    """coal refuses a convex solid with a vertex of hundreds of neighbours ("Too many
    neighbors"); the mesh is then checked as a closed mesh instead of failing the update."""
    import trimesh
    cone = trimesh.creation.cone(radius=0.1, height=0.2, sections=300)      # apex of valence 300
    assert cone.is_convex and cone.is_watertight
    spec = TriangleMesh(np.array(cone.vertices), np.array(cone.faces))
    scene.apply([AddObject(SceneObject("fan", (ObjectShape(spec),), make_transform(None, [0.6, 0, -0.1])))])
    geometry = scene.world.object_geometry["fan"][0]
    assert geometry.is_closed_bvh
    checker = CollisionChecker(scene)
    assert not checker.check(["slide_x"], [0.6]).valid
    assert checker.check(["slide_x"], [1.2]).valid


def test_mesh_above_the_triangle_bound_is_refused_by_name(scene, monkeypatch, tmp_path):
    import trimesh

    from my_collision_pkg.core.geometry import mesh_files, shape_geometry
    from my_collision_pkg.core.model.robot_model import MeshRef
    monkeypatch.setattr(shape_geometry, "MAX_MESH_TRIANGLES", 100)
    monkeypatch.setattr(mesh_files, "MAX_MESH_TRIANGLES", 100)
    sphere = trimesh.creation.icosphere(subdivisions=2)          # 320 triangles
    spec = TriangleMesh(np.array(sphere.vertices), np.array(sphere.faces))
    with pytest.raises(MeshError, match="'big'.*has 320 triangles, more than the bound of 100 "
                                         r"\(MAX_MESH_TRIANGLES\)"):
        scene.apply([AddObject(obj("big", spec))])
    path = tmp_path / "big.stl"
    sphere.export(path)
    with pytest.raises(MeshError, match=f"mesh file '{path}' has 320 triangles, more than the bound of 100"):
        scene.apply([AddObject(obj("big", MeshRef(str(path))))])
    assert scene.world.objects == {}
