"""World and attached objects, atomic updates, mesh lookup, solid bodies, threads."""
import threading
import time

import fcl
import manifold3d
import numpy as np
import pytest
import trimesh
from core_scenes import SLIDER_URDF, assert_contact_invariants

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType, ContactType, Status
from my_collision_pkg.core.errors import MeshError, ModelError, SceneError
from my_collision_pkg.core.geometry.mesh_files import MeshResolver
from my_collision_pkg.core.model.robot_model import Box, Capsule, Cone, Cylinder, MeshRef, RobotModel, Sphere, TriangleMesh
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.scene.planning_scene import (AddObject, ClearObjects, MoveObject, ObjectShape, PlanningScene, RemoveObject,
                                    SceneObject)
from my_collision_pkg.core.model.transforms import make_transform


SWAP_PAUSE_S = 0.002
WORKER_PAUSE_S = 0.0005


def obj(oid, spec, center=(0, 0, 0), link=None, touch=()):
    return SceneObject(oid, (ObjectShape(spec),), make_transform(None, center), link, tuple(touch))


@pytest.fixture
def scene():
    return PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)


def test_add_move_remove_clear(scene):
    checker = CollisionChecker(scene)
    scene.apply([AddObject(obj("crate", Box((0.2, 0.2, 0.2)), (0.5, 0, 0)))])
    assert not checker.check(["slide_x"], [0.5]).valid
    scene.apply([MoveObject("crate", make_transform(None, [-1.0, 0, 0]))])
    assert checker.check(["slide_x"], [0.5]).valid
    assert not checker.check(["slide_x"], [-1.0]).valid
    scene.apply([RemoveObject("crate")])
    assert checker.check(["slide_x"], [-1.0]).valid
    scene.apply([AddObject(obj("a", Sphere(0.05), (1, 1, 1))), AddObject(obj("b", Sphere(0.05), (2, 2, 2)))])
    scene.apply([ClearObjects()])
    assert scene.world.objects == {}


@pytest.mark.parametrize("spec", [Box((0.1, 0.1, 0.1)), Sphere(0.05), Cylinder(0.05, 0.2), Capsule(0.05, 0.2),
                                  Cone(0.05, 0.2)])
def test_every_primitive_collides_where_it_stands(scene, spec):
    scene.apply([AddObject(obj("thing", spec, (0.7, 0, 0)))])
    checker = CollisionChecker(scene)
    assert not checker.check(["slide_x"], [0.7]).valid
    assert checker.check(["slide_x"], [1.2]).valid


def test_failed_batch_changes_nothing(scene):
    scene.apply([AddObject(obj("keep", Sphere(0.1), (0.5, 0, 0)))])
    before = scene.world
    with pytest.raises(SceneError, match="'ghost'"):
        scene.apply([AddObject(obj("new", Sphere(0.1), (1, 0, 0))), RemoveObject("ghost")])
    assert scene.world is before and set(scene.world.objects) == {"keep"}


@pytest.mark.parametrize("bad, fragment", [
    (obj("neg", Box((0.1, -0.1, 0.1))), "must be finite and positive"),
    (obj("nan", Sphere(float("nan"))), "must be finite and positive"),
    (obj("base", Sphere(0.1)), "name of a robot link"),
    (SceneObject("empty", ()), "has no shapes"),
    (obj("lost", Sphere(0.1), link="no_such_link"), "unknown link 'no_such_link'"),
    (obj("toucher", Sphere(0.1), link="ball", touch=["nowhere"]), "unknown touch link 'nowhere'"),
    (SceneObject("skew", (ObjectShape(Sphere(0.1)),), np.diag([2.0, 1.0, 1.0, 1.0])), "not orthonormal"),
])
def test_invalid_objects_are_refused_and_named(scene, bad, fragment):
    with pytest.raises(SceneError) as info:
        scene.apply([AddObject(bad)])
    assert fragment in str(info.value) and bad.id in str(info.value)
    assert scene.world.objects == {}


def test_move_and_remove_unknown_objects_name_them(scene):
    with pytest.raises(SceneError, match="cannot move object 'x'"):
        scene.apply([MoveObject("x", np.eye(4))])
    with pytest.raises(SceneError, match="cannot remove object 'y'"):
        scene.apply([RemoveObject("y")])


def test_attached_object_moves_with_its_link_and_may_touch_touch_links(scene):
    # a rod on the ball (link frame), reaching 0.3 m along -x: it hits the base sphere near x = 0.3
    rod = obj("rod", Box((0.3, 0.02, 0.02)), (-0.2, 0, 0), link="ball")
    scene.apply([AddObject(rod)])
    checker = CollisionChecker(scene)
    e = checker.explain(["slide_x"], [0.35])
    assert not e.valid
    (c,) = [c for c in e.contacts if "rod" in c.link_names]
    assert c.type == ContactType.SELF
    assert set(zip(c.link_names, c.body_types)) == {("base", BodyType.ROBOT_LINK), ("rod", BodyType.ROBOT_ATTACHED)}
    assert_contact_invariants(c)
    assert checker.check(["slide_x"], [0.6]).valid          # moved away with the ball
    scene.apply([AddObject(SceneObject("rod", rod.shapes, rod.T_frame_object, "ball", ("base",)))])
    assert checker.check(["slide_x"], [0.35]).valid         # base is now a touch link


def test_attached_object_against_world_object_is_an_environment_contact(scene):
    scene.apply([AddObject(obj("cup", Sphere(0.05), (0.0, 0.0, 0.2), link="ball")),
                 AddObject(obj("shelf", Box((0.2, 0.2, 0.02)), (1.0, 0.0, 0.25)))])
    e = CollisionChecker(scene).explain(["slide_x"], [1.0])
    (c,) = e.contacts
    assert c.type == ContactType.ENVIRONMENT and c.link_names == ("cup", "shelf")
    assert c.penetration_depth == pytest.approx(0.01, abs=1e-9)   # cup top at 0.25, shelf from 0.24


def test_missing_mesh_names_link_and_uri(tmp_path):
    urdf = SLIDER_URDF.replace('<sphere radius="0.1"/></geometry></collision>\n  </link>\n  <link name="carriage"/>',
                               '<mesh filename="package://nopkg/meshes/gone.stl"/></geometry></collision>\n'
                               '  </link>\n  <link name="carriage"/>', 1)
    with pytest.raises(MeshError) as info:
        PlanningScene(RobotModel.from_urdf_string(urdf), resolver=MeshResolver([str(tmp_path)]))
    assert info.value.owner == "base" and info.value.uri == "package://nopkg/meshes/gone.stl"
    assert "'base'" in str(info.value)


def test_unreadable_mesh_names_link_and_uri(tmp_path):
    bad = tmp_path / "broken.stl"
    bad.write_bytes(b"this is not a mesh")
    urdf = f"""<robot name="m"><link name="hull"><collision><geometry><mesh filename="file://{bad}"/>
        </geometry></collision></link></robot>"""
    with pytest.raises(MeshError, match="hull"):
        PlanningScene(RobotModel.from_urdf_string(urdf))


def test_mesh_lookup_by_package_search_folder_and_relative_path(tmp_path):
    pkg = tmp_path / "mypkg" / "meshes"
    pkg.mkdir(parents=True)
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(pkg / "cube.stl")
    resolver = MeshResolver([str(tmp_path)], base_dir=str(tmp_path / "mypkg"))
    assert resolver.resolve("package://mypkg/meshes/cube.stl", "l") == str(pkg / "cube.stl")
    assert resolver.resolve("meshes/cube.stl", "l") == str(pkg / "cube.stl")
    assert resolver.resolve(f"file://{pkg / 'cube.stl'}", "l") == str(pkg / "cube.stl")
    assert resolver.resolve(str(pkg / "cube.stl"), "l") == str(pkg / "cube.stl")


@pytest.fixture
def installed_package(tmp_path):
    """The share folder of an installed package 'mypkg' holding meshes/cube.stl."""
    share = tmp_path / "install" / "mypkg"
    (share / "meshes").mkdir(parents=True)
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(share / "meshes" / "cube.stl")
    return share


def test_package_lookup_is_the_injected_callable(installed_package):
    share = installed_package
    asked = []

    def find_package_share(name):
        asked.append(name)
        return str(share) if name == "mypkg" else None

    resolver = MeshResolver(find_package_share=find_package_share)
    assert resolver.resolve("package://mypkg/meshes/cube.stl", "l") == str(share / "meshes" / "cube.stl")
    with pytest.raises(MeshError, match="package 'other' is not found by the package lookup"):
        resolver.resolve("package://other/meshes/cube.stl", "l")
    assert asked == ["mypkg", "other"]
    with pytest.raises(MeshError, match="package 'mypkg' is not in the search folders"):
        MeshResolver().resolve("package://mypkg/meshes/cube.stl", "l")


def test_load_scene_hands_the_package_lookup_to_the_resolver(installed_package):
    share = installed_package
    urdf = """<robot name="m"><link name="hull"><collision><geometry>
        <mesh filename="package://mypkg/meshes/cube.stl"/></geometry></collision></link></robot>"""

    def find_package_share(name):
        return str(share) if name == "mypkg" else None

    scene = load_scene(urdf_xml=urdf, find_package_share=find_package_share)
    assert scene.resolver.find_package_share is find_package_share
    assert [e.owner for e in scene.world.shapes] == ["hull"]


def test_convex_mesh_gives_true_depth(tmp_path):
    path = tmp_path / "cube.stl"
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(path)
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([AddObject(obj("cube", MeshRef(str(path)), (0.5, 0.0, 0.0)))])
    assert not scene.world.shapes[-1].geometry.is_bvh       # closed and convex: checked as a convex solid
    e = CollisionChecker(scene).explain(["slide_x"], [0.33])  # ball spans [0.23, 0.43], cube from 0.4
    (c,) = [c for c in e.contacts if c.link_names == ("ball", "cube")]
    # EPA on a convex mesh converges to its own tolerance, not to machine precision
    assert c.penetration_depth == pytest.approx(0.03, abs=1e-5)
    np.testing.assert_allclose(c.normal, [1, 0, 0], atol=1e-5)
    assert_contact_invariants(c)


def _l_shaped_mesh():
    """A closed, non-convex L: an arm x in [-0.5, 0.5], y and z in [-0.25, 0.25], and a leg
    x in [0, 0.5] rising to z = 0.75."""
    arm = manifold3d.Manifold.cube([1.0, 0.5, 0.5]).translate([-0.5, -0.25, -0.25])
    leg = manifold3d.Manifold.cube([0.5, 0.5, 1.0]).translate([0.0, -0.25, -0.25])
    m = (arm + leg).to_mesh()
    return trimesh.Trimesh(np.asarray(m.vert_properties)[:, :3], np.asarray(m.tri_verts))


def test_robot_body_wholly_inside_a_closed_world_mesh_collides():
    mesh = _l_shaped_mesh()
    assert mesh.is_watertight and not mesh.is_convex
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([AddObject(SceneObject("hull", (ObjectShape(TriangleMesh(mesh.vertices, mesh.faces)),),
                                       make_transform(None, [2.0, 0, 0])))])
    world = scene.world
    hull = world.shapes[-1]
    ball = next(s for s in world.shapes if s.owner == "ball")
    assert hull.geometry.is_closed_bvh
    # ball (r = 0.1) centred at x = 1.75: 0.15 m clear of every face of the L's arm.
    # Plain fcl on the same geometry says "free".
    o1 = fcl.CollisionObject(ball.geometry.fcl_geometry, fcl.Transform(np.eye(3), [1.75, 0.0, 0.0]))
    o2 = fcl.CollisionObject(hull.geometry.fcl_geometry, fcl.Transform(np.eye(3), [2.0, 0.0, 0.0]))
    assert not fcl.collide(o1, o2, fcl.CollisionRequest(), fcl.CollisionResult())
    checker = CollisionChecker(scene)
    v = checker.check(["slide_x"], [1.75])
    assert not v.valid and v.status == Status.IN_COLLISION and "'ball' and 'hull'" in v.message
    e = checker.explain(["slide_x"], [1.75])
    assert not e.valid
    (c,) = [c for c in e.contacts if c.link_names == ("ball", "hull")]
    # depth is that of the ball's deepest surface point: every face is 0.25 m from the
    # centre, so no surface point is deeper than 0.25 m (reached along the arm)
    assert c.penetration_depth == pytest.approx(0.25, abs=2e-3)
    assert_contact_invariants(c)
    assert checker.check(["slide_x"], [1.0]).valid
    np.testing.assert_array_equal(checker.check_batch(["slide_x"], [[1.75], [1.0]])[0], [False, True])


def test_world_body_wholly_inside_a_closed_link_mesh_collides(tmp_path):
    path = tmp_path / "ell.stl"
    _l_shaped_mesh().export(path)
    urdf = SLIDER_URDF.replace('<box size="0.2 0.2 0.2"/>', f'<mesh filename="{path}"/>')
    scene = PlanningScene(RobotModel.from_urdf_string(urdf), allow_adjacent=False)
    scene.apply([AddObject(obj("pebble", Box((0.04, 0.04, 0.04)), (-0.25, 0.0, 1.0)))])
    checker = CollisionChecker(scene)
    e = checker.explain(["slide_x", "slide_y"], [1.0, 0.0])
    assert not e.valid and e.colliding_links == ("block", "pebble")
    assert_contact_invariants(e.contacts[0])
    assert checker.check(["slide_x", "slide_y"], [1.0, 1.0]).valid


def test_concurrent_checks_see_old_or_new_world_never_a_mix(scene):
    checker = CollisionChecker(scene)
    left = obj("left", Sphere(0.15), (-0.5, 0, 0))
    right = obj("right", Sphere(0.15), (0.5, 0, 0))
    # ball at x=0.5 collides with 'right' only; with 'left' only at x=-0.5: query both positions
    scene.apply([AddObject(left)])
    stop = threading.Event()
    seen, errors = set(), []

    def worker():
        while not stop.is_set():
            e = checker.explain(["slide_x"], [0.0], contact_distance=0.6)
            ids = frozenset(n for c in e.contacts for n in c.link_names if n in ("left", "right"))
            if len(ids) != 1:
                errors.append(ids)
            seen.add(ids)
            # yield the GIL between explains: three busy threads otherwise starve the updating
            # thread for up to a second per update (GIL convoy), and the test takes minutes
            time.sleep(WORKER_PAUSE_S)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for k in range(200):
        if k % 2 == 0:
            scene.apply([RemoveObject("left"), AddObject(right)])
        else:
            scene.apply([RemoveObject("right"), AddObject(left)])
        time.sleep(SWAP_PAUSE_S)       # let the checking threads run between swaps
    stop.set()
    for t in threads:
        t.join()
    assert not errors
    assert seen == {frozenset({"left"}), frozenset({"right"})}


def test_padding_must_be_valid():
    robot = RobotModel.from_urdf_string(SLIDER_URDF)
    with pytest.raises(ModelError, match="default padding"):
        PlanningScene(robot, default_padding_m=-0.1)
    with pytest.raises(ModelError, match="unknown link 'zz'"):
        PlanningScene(robot, link_padding_m={"zz": 0.1})


BODY_SIZE_M = 0.35          # no depth against one triangle exceeds the diagonal of the 0.2 m block


@pytest.mark.parametrize("joint, value, normal", [
    ("slide_x", 1.45, [1, 0, 0]),     # ball (sphere) 0.05 m into the L's end face at x = 1.5
    ("slide_y", 0.70, [0, 1, 0]),     # block (box) 0.05 m into the L's side face at y = 0.75
])
def test_primitive_against_a_mesh_keeps_body_order(joint, value, normal):
    """fcl answers shape-versus-mesh queries mesh first; contacts must still point from body 0 to 1."""
    mesh = _l_shaped_mesh()
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    hull_at = [2.0, 0.0, 0.0] if joint == "slide_x" else [0.0, 1.0, 1.0]
    scene.apply([AddObject(SceneObject("hull", (ObjectShape(TriangleMesh(mesh.vertices, mesh.faces)),),
                                       make_transform(None, hull_at)))])
    checker = CollisionChecker(scene)
    names, q = ["slide_x", "slide_y"], [value, 0.0] if joint == "slide_x" else [1.0, value]
    if joint == "slide_y":
        q[0] = -1.0                                # ball out of the way
    e = checker.explain(names, q)
    hull_contacts = [c for c in e.contacts if c.link_names[1] == "hull"]
    assert hull_contacts and not e.valid
    # a BVH mesh is checked triangle by triangle (as in fcl and coal): depth and normal are those
    # of the body against one triangle, which may leave sideways, but they point from body 0 into body 1
    for c in hull_contacts:
        assert 0 < c.penetration_depth < BODY_SIZE_M
        assert np.dot(c.normal, normal) > 0
        assert c.subshape_ids[0] == -1 and c.subshape_ids[1] >= 0      # triangle index on the mesh side
        assert_contact_invariants(c)
    # a near miss 0.05 m short of the face: witness points on the right bodies, in the world frame
    q_near = list(q)
    q_near[0 if joint == "slide_x" else 1] = value - 0.1
    e = checker.explain(names, q_near, contact_distance=0.2)
    (c,) = [c for c in e.contacts if c.link_names[1] == "hull"]
    assert c.distance == pytest.approx(0.05, abs=1e-5)
    np.testing.assert_allclose(c.normal, normal, atol=1e-4)
    face = np.dot(normal, [1.5, 0, 0]) if joint == "slide_x" else 0.75
    assert np.dot(normal, c.nearest_points[1]) == pytest.approx(face, abs=1e-5)
    assert_contact_invariants(c)


@pytest.mark.parametrize("suffix", ["stl", "obj", "dae"])
def test_mesh_formats_load_with_their_scale(tmp_path, suffix):
    path = tmp_path / f"brick.{suffix}"
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(path)
    urdf = f"""<robot name="m"><link name="brick"><collision><geometry>
        <mesh filename="file://{path}" scale="2 1 0.5"/></geometry></collision></link></robot>"""
    scene = PlanningScene(RobotModel.from_urdf_string(urdf))
    geometry = scene.world.shapes[0].geometry
    lo, hi = geometry.triangle_mesh().bounds
    np.testing.assert_allclose(hi - lo, [0.2, 0.2, 0.15], atol=1e-9)
    assert not geometry.is_bvh            # a closed box is convex: checked as a convex solid


# ----- numeric extremes, ambiguous requests, batches in chunks -----------------------
@pytest.mark.parametrize("spec, center, fragment", [
    (Box((1e300, 1.0, 1.0)), (0, 0, 0), "box size"),
    (Sphere(1e300), (0, 0, 0), "sphere radius"),
    (Cylinder(0.1, 2e4), (0, 0, 0), "cylinder radius and length"),
    (Sphere(0.1), (1e12, 0, 0), "pose has position"),
    (TriangleMesh(np.array([[0, 0, 0], [1e308, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float),
                  np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])), (0, 0, 0), "vertex coordinate of 1e+308 m"),
])
def test_extreme_objects_are_refused_and_the_scene_is_unchanged(scene, spec, center, fragment):
    scene.apply([AddObject(obj("keep", Sphere(0.1), (0.5, 0, 0)))])
    before = scene.world
    with pytest.raises((SceneError, MeshError)) as info:
        scene.apply([AddObject(obj("huge", spec, center))])
    assert fragment in str(info.value) and "beyond the bound of 10000 m" in str(info.value)
    assert scene.world is before
    # at the bound itself an object is accepted
    scene.apply([AddObject(obj("far", Sphere(0.1), (1e4, 0, 0)))])
    assert "far" in scene.world.objects


def test_a_shape_pose_beyond_the_bound_is_refused(scene):
    shape = ObjectShape(Sphere(0.1), make_transform(None, [0.0, -2e4, 0.0]))
    with pytest.raises(SceneError, match="object 'o' shape 0 pose has position"):
        scene.apply([AddObject(SceneObject("o", (shape,)))])
    with pytest.raises(SceneError, match="beyond the bound"):
        scene.apply([AddObject(obj("o", Sphere(0.1))), MoveObject("o", make_transform(None, [0, 0, 1e5]))])
    assert not scene.world.objects


def test_apply_returns_the_world_it_made(scene):
    world = scene.apply([AddObject(obj("a", Sphere(0.05), (1, 1, 1)))])
    assert world is scene.world and set(world.objects) == {"a"}


@pytest.mark.parametrize("updates, fragment", [
    ([AddObject(obj("a", Sphere(0.05))), MoveObject("a", np.eye(4))], "object 'a' appears more than once"),
    ([RemoveObject("a"), AddObject(obj("a", Sphere(0.05)))], "object 'a' appears more than once"),
    ([AddObject(obj("a", Sphere(0.05))), ClearObjects()], "only allowed as the first update"),
])
def test_ambiguous_update_batches_are_refused(updates, fragment):
    from my_collision_pkg.core.scene.planning_scene import check_unambiguous
    with pytest.raises(SceneError, match=fragment):
        check_unambiguous(updates)


def test_unambiguous_update_batches_pass():
    from my_collision_pkg.core.scene.planning_scene import check_unambiguous
    check_unambiguous([ClearObjects(), AddObject(obj("a", Sphere(0.05))), AddObject(obj("b", Sphere(0.05))),
                       MoveObject("c", np.eye(4)), RemoveObject("d")])


def test_batches_over_several_chunks_equal_single_checks(scene):
    from my_collision_pkg.core.checks.checker import BATCH_CHUNK
    scene.apply([AddObject(obj("wall", Box((0.1, 2.0, 2.0)), (1.0, 0, 0)))])
    checker = CollisionChecker(scene)
    rng = np.random.default_rng(5)
    n = 2 * BATCH_CHUNK + 37
    q = rng.uniform(-2.2, 2.2, size=(n, 2))        # some outside the limits [-2, 2]
    valid, summary = checker.check_batch(["slide_x", "slide_y"], q)
    singles = [checker.check(["slide_x", "slide_y"], row) for row in q[::97]]
    np.testing.assert_array_equal(valid[::97], [v.valid for v in singles])
    # exact: out of the limits [-2, 2], or the ball (r 0.1 at x) in the wall (x 0.95..1.05) or the base sphere
    x = q[:, 0]
    expected = ~np.any(np.abs(q) > 2.0, axis=1) & ~(np.abs(x - 1.0) < 0.15) & ~(np.abs(x) < 0.2)
    np.testing.assert_array_equal(valid, expected)
    first = int(np.flatnonzero(~expected)[0])
    assert summary.message == f"{int((~expected).sum())} of {n} configurations invalid (first: index {first})"
    assert summary.status == (Status.OUT_OF_BOUNDS if np.any(np.abs(q[first]) > 2.0) else Status.IN_COLLISION)


def test_batch_limit_is_one_parameter_with_one_message(scene):
    checker = CollisionChecker(scene)
    valid, summary = checker.check_batch(["slide_x"], np.zeros(11), max_batch=10)
    assert summary.status == Status.INVALID_REQUEST and summary.message == "11 configurations exceed max_batch = 10"
    assert valid.size == 0
    valid, summary = checker.check_batch(["slide_x"], np.full(10, 1.0), max_batch=10)
    assert summary.status == Status.VALID and valid.all() and valid.size == 10
    big = 3 * 4096
    bad = np.full(big, 1.0)
    bad[big - 1] = np.nan
    _, summary = checker.check_batch(["slide_x"], bad)
    assert summary.status == Status.INVALID_REQUEST
    assert summary.message == f"joint 'slide_x' has non-finite position nan in configuration {big - 1}"


# ----- corrupt mesh files are named as such -------------------------------------------
def _write(path, data):
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("name, data, fragment", [
    ("noise.stl", bytes(range(256)) * 3, "is not a valid STL: neither a binary STL (its header counts"),
    ("short.stl", b"\x00" * 40, "is not a valid STL: 40 bytes, shorter than a binary STL's 84-byte header"),
    ("truncated.stl", b"\x00" * 80 + (1000).to_bytes(4, "little") + b"\x00" * 100,
     "header counts 1000 triangles, 50084 bytes, but the file has 184"),
    # text after 'solid' that is no STL: with charset_normalizer it decodes to no triangles
    ("latin1_noise.stl", b"solid \xfc\xfe\xff" + bytes(range(128, 256)), ("is not a valid STL", "holds no triangles")),
    ("broken.dae", b"<COLLADA><libr", "is not a valid COLLADA: "),
    ("broken.obj", b"v 1 2\nf 1 2 9\n", "is not a valid OBJ: "),
    ("empty.stl", b"", "is not a valid STL: 0 bytes"),
    ("nothing.stl", b"solid nothing\nendsolid nothing\n", "holds no triangles (an empty or truncated STL?)"),
])
def test_corrupt_mesh_file_is_named_as_not_valid(scene, tmp_path, name, data, fragment):
    path = _write(tmp_path / name, data)
    before = scene.world
    with pytest.raises(MeshError) as info:
        scene.apply([AddObject(obj("part", MeshRef(path)))])
    message = str(info.value)
    fragments = fragment if isinstance(fragment, tuple) else (fragment,)
    assert any(f in message for f in fragments) and f"mesh file '{path}'" in message and "'part'" in message, message
    assert "ModuleNotFoundError" not in message
    assert scene.world is before


def test_valid_text_mesh_in_another_encoding_is_read(scene, tmp_path):
    """A comment in Latin-1 is valid OBJ; trimesh guesses the encoding with charset_normalizer
    (a dependency); without it the message names the file and the missing package."""
    path = _write(tmp_path / "latin1.obj", b"# Greifer f\xfcr Kisten\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
                                          b"f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    try:
        import charset_normalizer  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(MeshError, match=r"mesh file '.*latin1.obj' is not a valid OBJ: its text is not UTF-8.*"
                                            r"charset-normalizer"):
            scene.apply([AddObject(obj("part", MeshRef(path)))])
        return
    scene.apply([AddObject(obj("part", MeshRef(path)))])
    assert len(scene.world.object_geometry["part"][0].source_mesh.faces) == 4
