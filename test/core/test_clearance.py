"""Clearance (CollisionChecker.clearance): rows, padding, Jacobians in closed form, mimics, attached objects,
k smallest, bad input."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.core.checks import narrowphase
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.clearance import Clearance
from my_collision_pkg.core.checks.results import BodyType, Status
from my_collision_pkg.core.model.robot_model import Box, RobotModel, Sphere
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject


def _add(oid, spec, center, link=None, touch=()):
    return AddObject(SceneObject(oid, (ObjectShape(spec),), make_transform(None, center), link, tuple(touch)))


def _slider_with_box(padding=0.0):
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False, default_padding_m=padding)
    # box face at x = 0.9, far from the block (z = 1) and from the base sphere's influence at 0.3 m
    scene.apply([_add("wall", Box((0.2, 0.2, 0.2)), (1.0, 0.0, 0.0))])
    return scene, CollisionChecker(scene)


def test_sphere_on_slider_against_box_closed_form():
    scene, checker = _slider_with_box()
    for x in (0.0, 0.3, 0.55, 0.75):
        res = checker.clearance(["slide_x", "slide_y"], [x, 0.0], 0.3)
        assert res.status == Status.VALID
        rows = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("ball", "wall")]
        if 0.8 - x >= 0.3:
            assert not rows
            continue
        (r,) = rows
        assert res.distance[r] == pytest.approx(0.8 - x, abs=1e-9)
        np.testing.assert_allclose(res.normals[r], [1, 0, 0], atol=1e-9)
        np.testing.assert_allclose(res.points[r], [[x + 0.1, 0, 0], [0.9, 0, 0]], atol=1e-7)
        np.testing.assert_allclose(res.points_local[r, 0], [0.1, 0, 0], atol=1e-7)     # ball frame
        np.testing.assert_allclose(res.points_local[r, 1], [-0.1, 0, 0], atol=1e-7)    # wall frame
        np.testing.assert_allclose(res.jacobian[r], [-1.0, 0.0], atol=1e-9)
        assert tuple(res.body_types[r]) == (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT)
        assert res.jacobian_joint_names == ("slide_x", "slide_y")
        assert res.smooth[r]
    # penetrating: negative distance (MTD along x), same gradient
    res = checker.clearance(["slide_x"], [0.85], 0.0)
    (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("ball", "wall")]
    assert res.distance[r] == pytest.approx(-0.05, abs=1e-7)
    np.testing.assert_allclose(res.jacobian[r], [-1.0], atol=1e-6)
    assert res.jacobian_joint_names == ("slide_x",)


def test_padding_is_subtracted_and_switchable():
    scene, checker = _slider_with_box(padding=0.02)
    padded = checker.clearance(["slide_x"], [0.6], 0.3)
    plain = checker.clearance(["slide_x"], [0.6], 0.3, pad_environment_collisions=False)
    d_pad = padded.distance[list(map(tuple, padded.body_names)).index(("ball", "wall"))]
    d_plain = plain.distance[list(map(tuple, plain.body_names)).index(("ball", "wall"))]
    assert d_plain == pytest.approx(0.2, abs=1e-9)
    assert d_pad == pytest.approx(0.2 - 0.02, abs=1e-9)       # only the link is padded, objects are not
    # negative when only the padded bodies overlap
    res = checker.clearance(["slide_x"], [0.79], 0.0)
    (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("ball", "wall")]
    assert res.distance[r] == pytest.approx(0.01 - 0.02, abs=1e-9)


def test_without_jacobians_and_batch_rows():
    scene, checker = _slider_with_box()
    Q = np.array([[0.0, 0.0], [0.6, 0.0], [0.7, 0.0]])
    res = checker.clearance(["slide_x", "slide_y"], Q, 0.25, compute_jacobians=False)
    assert res.jacobian.shape == (len(res), 0)
    wall = [r for r in range(len(res)) if res.body_names[r, 1] == "wall"]
    assert [int(res.configuration_index[r]) for r in wall] == [1, 2]
    np.testing.assert_allclose(res.distance[wall], [0.2, 0.1], atol=1e-9)
    flat = checker.clearance(["slide_x", "slide_y"], Q.ravel(), 0.25)
    np.testing.assert_allclose(flat.distance, res.distance)


REVOLUTE_MIMIC_URDF = """
<robot name="arm">
  <link name="base"/>
  <link name="arm"><collision><origin xyz="0.5 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="slider"/>
  <link name="follower"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="turn" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="slider"/><axis xyz="1 0 0"/>
    <origin xyz="0 0 2"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="follow" type="prismatic"><parent link="slider"/><child link="follower"/><axis xyz="0 1 0"/>
    <mimic joint="slide" multiplier="-0.5" offset="0.1"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>
"""


@pytest.fixture
def arm():
    scene = PlanningScene(RobotModel.from_urdf_string(REVOLUTE_MIMIC_URDF), allow_adjacent=False)
    scene.apply([_add("ball", Sphere(0.05), (0.0, 0.8, 0.0)), _add("top", Sphere(0.05), (0.3, 0.4, 2.0))])
    return scene, CollisionChecker(scene)


def test_revolute_closed_form(arm):
    scene, checker = arm
    c = np.array([0.0, 0.8, 0.0])
    for theta in (0.3, 1.0, 1.4):
        res = checker.clearance(["turn"], [theta], 1.0)
        (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("arm", "ball")]
        p = 0.5 * np.array([np.cos(theta), np.sin(theta), 0.0])
        gap = np.linalg.norm(p - c)
        assert res.distance[r] == pytest.approx(gap - 0.1, abs=1e-8)
        grad = (p - c) / gap @ (0.5 * np.array([-np.sin(theta), np.cos(theta), 0.0]))
        assert res.jacobian[r, 0] == pytest.approx(grad, abs=1e-8)


def test_mimic_joint_folded_into_its_leader(arm):
    scene, checker = arm
    s = 0.3
    res = checker.clearance(["slide"], [s], 1.0)
    assert res.jacobian_joint_names == ("slide",)
    (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("follower", "top")]
    f = np.array([s, -0.5 * s + 0.1, 2.0])           # follower: slider x, follow y
    top = np.array([0.3, 0.4, 2.0])
    gap = np.linalg.norm(top - f)
    assert res.distance[r] == pytest.approx(gap - 0.1, abs=1e-8)
    # d f / d slide = (1, -0.5, 0); distance grows as f leaves top
    grad = (f - top) / gap @ np.array([1.0, -0.5, 0.0])
    assert res.jacobian[r, 0] == pytest.approx(grad, abs=1e-8)
    # every active joint when the request names none
    full = checker.clearance([], np.zeros(0), 1.0)
    assert full.status == Status.VALID, full.message
    assert full.jacobian_joint_names == scene.robot.active_joint_names == ("turn", "slide")


def test_attached_object_rides_its_link(arm):
    scene, checker = arm
    # a sphere attached 0.2 m further out along the arm
    scene.apply([_add("tool", Sphere(0.05), (0.7, 0.0, 0.0), link="arm", touch=("arm",))])
    theta = 0.9
    res = checker.clearance(["turn"], [theta], 2.0)
    (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("tool", "ball")]
    assert tuple(res.body_types[r]) == (BodyType.ROBOT_ATTACHED, BodyType.WORLD_OBJECT)
    p = 0.7 * np.array([np.cos(theta), np.sin(theta), 0.0])
    c = np.array([0.0, 0.8, 0.0])
    gap = np.linalg.norm(p - c)
    assert res.distance[r] == pytest.approx(gap - 0.1, abs=1e-8)
    grad = (p - c) / gap @ (0.7 * np.array([-np.sin(theta), np.cos(theta), 0.0]))
    assert res.jacobian[r, 0] == pytest.approx(grad, abs=1e-8)
    # witness point on the tool in the tool's own frame (it turns with the arm): 0.05 m towards the ball
    R = np.array([[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0], [0, 0, 1]])
    np.testing.assert_allclose(res.points_local[r, 0], R.T @ (0.05 * (c - p) / gap), atol=1e-7)


def test_k_smallest_per_configuration(arm):
    scene, checker = arm
    Q = np.array([[0.2, 0.1], [1.2, -0.3]])
    full = checker.clearance(["turn", "slide"], Q, 10.0)
    best = checker.clearance(["turn", "slide"], Q, 10.0, max_rows_per_configuration=1)
    assert len(best) == 2
    for c in range(2):
        d = full.distance[full.configuration_index == c]
        assert len(d) >= 2
        assert best.distance[best.configuration_index == c][0] == pytest.approx(d.min())
        assert np.all(np.diff(d) >= 0)               # rows of a configuration are in increasing distance


def test_jacobian_matches_central_differences(arm):
    scene, checker = arm
    scene.apply([_add("tool", Box((0.1, 0.05, 0.08)), (0.7, 0.0, 0.0), link="arm", touch=("arm",))])
    robot, world = scene.robot, scene.world
    rng = np.random.default_rng(3)
    h = 1e-6
    errors = []
    for q in rng.uniform([-3, -1], [3, 1], size=(20, 2)):
        res = checker.clearance(["turn", "slide"], q, 5.0)
        for r in range(len(res)):
            a, b = res.shape_pairs[r]
            fd = []
            for j in range(2):
                e = np.zeros(2)
                e[j] = h
                d = [narrowphase.pair_distance(world, world.shape_transforms(robot.link_transforms(q + s * e)), a, b)
                     .distance_m for s in (1, -1)]
                fd.append((d[0] - d[1]) / (2 * h))
            fd = np.array(fd)
            errors.append(np.linalg.norm(fd - res.jacobian[r]) / max(np.linalg.norm(fd), 1e-6))
    assert len(errors) > 20
    assert np.median(errors) < 1e-6
    assert np.quantile(errors, 0.99) < 1e-3


@pytest.mark.parametrize("kwargs, fault", [
    (dict(influence_distance=float("nan")), "influence_distance"),
    (dict(influence_distance=-0.1), "influence_distance"),
    (dict(influence_distance=float("inf")), "influence_distance"),
    (dict(joint_names=["turn", "nope"]), "nope"),
    (dict(positions=[0.1, 0.2, 0.3]), "positions"),
    (dict(positions=[0.1, float("nan")]), "slide"),
    (dict(max_rows_per_configuration=-1), "max_rows_per_configuration"),
    (dict(group_name="no_such_group"), "no_such_group"),
    (dict(joint_names=["follow"], positions=[0.1]), "follow"),
])
def test_bad_input_is_named(arm, kwargs, fault):
    scene, checker = arm
    args = dict(joint_names=["turn", "slide"], positions=[0.1, 0.2], influence_distance=0.1)
    args.update(kwargs)
    res = checker.clearance(args.pop("joint_names"), args.pop("positions"), args.pop("influence_distance"), **args)
    assert isinstance(res, Clearance)
    assert res.status == Status.INVALID_REQUEST
    assert fault in res.message
    assert len(res) == 0


def test_too_many_configurations_and_out_of_bounds(arm):
    scene, checker = arm
    res = checker.clearance(["turn"], np.zeros((5, 1)), 0.1, max_batch=4)
    assert res.status == Status.INVALID_REQUEST and "max_batch" in res.message
    res = checker.clearance(["turn"], [[0.0], [3.5]], 0.1)
    assert res.status == Status.OUT_OF_BOUNDS and "turn" in res.message and "configuration 1" in res.message


def test_touching_rows_are_not_smooth():
    scene, checker = _slider_with_box()
    res = checker.clearance(["slide_x"], [0.8], 0.1)          # ball face exactly on the box face
    (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("ball", "wall")]
    assert abs(res.distance[r]) < 1e-9
    assert not res.smooth[r]
    res = checker.clearance(["slide_x"], [0.7], 0.2)
    (r,) = [r for r in range(len(res)) if tuple(res.body_names[r]) == ("ball", "wall")]
    assert res.smooth[r]


def test_request_object_and_world_snapshot():
    from my_collision_pkg.core.checks.request import CheckRequest
    scene, checker = _slider_with_box()
    before = scene.world
    scene.apply([_add("wall", Box((0.2, 0.2, 0.2)), (2.0, 0.0, 0.0))])       # moved away
    old = checker.clearance(["slide_x"], [0.6], 0.3, request=CheckRequest(world=before))
    new = checker.clearance(["slide_x"], [0.6], 0.3)
    assert ("ball", "wall") in set(map(tuple, old.body_names))
    assert ("ball", "wall") not in set(map(tuple, new.body_names))
    with pytest.raises(TypeError):
        checker.clearance(["slide_x"], [0.6], 0.3, request=CheckRequest(), group_name="x")


def test_witness_check_kernel_against_every_triangle():
    """project_onto_meshes (packed trees of two meshes) against the nearest point over every triangle."""
    import trimesh

    from my_collision_pkg.core.kernels.mesh_queries import MeshTree, closest_on_triangle, closest_point_on_triangles
    from my_collision_pkg.core.kernels.witness_check import pack_meshes, project_onto_meshes
    meshes = [trimesh.creation.icosphere(2, 0.1), trimesh.creation.box((0.3, 0.1, 0.2))]
    triangles = [np.ascontiguousarray(np.asarray(m.vertices)[m.faces]) for m in meshes]
    trees = [MeshTree.of(m.vertices, m.faces) for m in meshes]
    packed = pack_meshes(trees, triangles)
    rng = np.random.default_rng(3)
    k = 200
    mesh = rng.integers(0, 2, k).astype(np.int64)
    T = np.stack([make_transform(None, rng.normal(size=3)) for _ in range(k)])
    for i in range(k):
        T[i, :3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    local = rng.normal(scale=0.15, size=(k, 3))
    # half the points exactly on a triangle (its centroid): distance zero there
    on = rng.random(k) < 0.5
    for i in np.flatnonzero(on):
        local[i] = triangles[mesh[i]][rng.integers(len(triangles[mesh[i]]))].mean(axis=0)
    points = np.einsum("kij,kj->ki", T[:, :3, :3], local) + T[:, :3, 3]
    d2, tri = np.empty(k), np.empty(k, dtype=np.int64)
    project_onto_meshes(points, T, mesh, *packed, d2, tri)
    for i in range(k):
        nearest, t = closest_point_on_triangles(local[i], triangles[mesh[i]])
        assert d2[i] == pytest.approx(np.sum((nearest - local[i]) ** 2), abs=1e-15)
        # the triangle returned is one at that distance (ties: any of them)
        on_triangle = np.empty(3)
        closest_on_triangle(local[i], triangles[mesh[i]], int(tri[i]), on_triangle)
        assert np.sum((on_triangle - local[i]) ** 2) == pytest.approx(d2[i], abs=1e-15)
    assert np.all(d2[on] < 1e-24)


def test_answer_arrays_c_ordered_single_equal_to_batch_and_first_configuration_out_of_bounds(arm):
    scene, checker = arm
    names = ["turn", "slide"]
    Q = np.array([[0.0, 0.0], [0.3, 0.2], [1.0, -0.5], [-2.0, 1.5]])
    batch = checker.clearance(names, Q, 1.0)
    assert batch.ok and len(set(batch.configuration_index.tolist())) >= 2
    fields = ("configuration_index", "body_names", "body_types", "shape_ids", "subshape_ids", "distance", "points",
              "points_local", "normals", "jacobian", "smooth", "shape_pairs")
    for c, q in enumerate(Q):
        single = checker.clearance(names, q, 1.0)
        mine = batch.configuration_index == c
        for name in fields:
            value = getattr(single, name)
            assert value.flags.c_contiguous, name
            expected = getattr(batch, name)[mine]
            if name == "configuration_index":
                expected = expected - c
            assert value.dtype == expected.dtype and value.shape == expected.shape, name
            assert value.tobytes() == expected.tobytes() if value.dtype != object else value.tolist() == expected.tolist()
    assert all(getattr(batch, name).flags.c_contiguous for name in fields)
    # the first configuration outside the limits is named, with its first joint outside them
    res = checker.clearance(names, [[0.0, 0.0], [0.0, 0.0], [3.5, -2.5], [3.5, 0.0]], 0.1)
    assert res.status == Status.OUT_OF_BOUNDS and "configuration 2" in res.message and "'turn'" in res.message
    res = checker.clearance(names, [[0.0, 0.0], [0.0, -2.5]], 0.1)
    assert res.status == Status.OUT_OF_BOUNDS and "configuration 1" in res.message and "'slide'" in res.message


def test_compiled_rows_bit_identical_to_numpy(arm):
    """The compiled Jacobian rows and body-frame points (kernels.clearance_rows) are numpy's numbers bit for
    bit: revolute, prismatic and mimic joints, robot links, world objects, an object attached with an offset."""
    from my_collision_pkg.core.checks import clearance
    from my_collision_pkg.core.kernels.clearance_rows import jacobian_and_local_points
    scene, _ = arm
    scene.apply([_add("tool", Box((0.1, 0.05, 0.08)), (0.7, 0.1, 0.0), link="arm", touch=("arm",))])
    world = scene.world
    tables = clearance._tables(world)
    mk = tables.mk
    rng = np.random.default_rng(7)
    n_shapes, n_rows, n_cfg = len(world.shapes), 400, 5
    q = rng.uniform(scene.robot.lower_limits, scene.robot.upper_limits, size=(n_cfg, len(scene.robot.active_joint_names)))
    T_link = scene.robot.link_transforms_batch(q)
    cfg = np.sort(rng.integers(0, n_cfg, n_rows))
    shape_pair = rng.integers(0, n_shapes, (n_rows, 2))
    points = rng.normal(size=(n_rows, 2, 3))
    normals = rng.normal(size=(n_rows, 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    normals[:5] = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-0.0, 0.0, -1.0], [0.6, 0.0, 0.8]]
    jac = np.empty((n_rows, len(mk.child_link)))
    local = np.empty((n_rows, 2, 3))
    jacobian_and_local_points(T_link, cfg, shape_pair, tables.shape_link, tables.owner_link, tables.owner_offset,
                              mk.child_link, mk.axis, mk.prismatic, tables.chain, points, normals, True, jac, local)
    link = tables.shape_link[shape_pair]
    expected = clearance._row_jacobians(tables, T_link, cfg, (link[:, 1], link[:, 0]), (points[:, 1], points[:, 0]),
                                        normals, (1.0, -1.0))
    assert jac.tobytes() == expected.tobytes()
    assert (jac != 0.0).any(axis=0).all()             # every joint column moves some row
    plain = tables.plain_frame[shape_pair].all(axis=1)
    assert plain.any() and not plain.all()            # the tool (attached with an offset) is left to numpy
    expected = clearance._local_points(T_link, cfg, tables.owner_link[shape_pair], tables.owner_offset[shape_pair],
                                       points)
    assert local[plain].tobytes() == expected[plain].tobytes()
    # through the public call, the tool's rows included (numpy's frames for the chunk that has them)
    res = CollisionChecker(scene).clearance(["turn", "slide"], q, 5.0)
    assert res.status == Status.VALID and "tool" in res.body_names
    for r in range(len(res)):
        T = T_link[res.configuration_index[r]]
        for s in range(2):
            shape = res.shape_pairs[r, s]
            T_owner = (np.eye(4) if tables.owner_link[shape] < 0 else T[tables.owner_link[shape]]) \
                @ tables.owner_offset[shape]
            np.testing.assert_allclose(T_owner[:3, :3] @ res.points_local[r, s] + T_owner[:3, 3], res.points[r, s],
                                       atol=1e-12)


def test_compiled_sphere_gaps_and_first_distances_bit_identical_to_numpy():
    """kernels.clearance_rows.sphere_gaps and settle_first_distances give numpy's numbers (the formulas clearance
    and narrowphase used before), bit for bit, culled, apart, failed and unmeasured rows included."""
    from my_collision_pkg.core.kernels.clearance_rows import settle_first_distances, sphere_gaps
    rng = np.random.default_rng(11)
    n_cfg, n_shapes, k = 3, 6, 500
    T = rng.normal(size=(n_cfg, n_shapes, 4, 4))
    centre, radius = rng.normal(size=(n_shapes, 3)), rng.uniform(0.0, 1.0, n_shapes)
    cfg, a, b = rng.integers(0, n_cfg, k), rng.integers(0, n_shapes, k), rng.integers(0, n_shapes, k)
    gaps = np.empty(k)
    sphere_gaps(T, cfg, a, b, centre, radius, gaps)
    T_a, T_b = T[cfg, a], T[cfg, b]
    centre_a = np.einsum("kij,kj->ki", T_a[:, :3, :3], centre[a]) + T_a[:, :3, 3]
    centre_b = np.einsum("kij,kj->ki", T_b[:, :3, :3], centre[b]) + T_b[:, :3, 3]
    assert gaps.tobytes() == (np.linalg.norm(centre_b - centre_a, axis=1) - radius[a] - radius[b]).tobytes()

    raw = rng.uniform(-0.1, 0.6, k)
    p0 = rng.normal(size=(k, 3))
    p1 = p0 + rng.normal(size=(k, 3)) * raw[:, None]
    measured = rng.random(k) < 0.9
    raw[~measured] = np.nan
    raw[:4] = [1e7, 0.2, 0.3, 1e-6]             # a failure, a failed point, touching points, below the slack
    p0[1, 2] = 2e6
    p1[2] = p0[2]
    far_from = rng.uniform(0.0, 0.5, k)
    mesh = rng.random(k) < 0.5
    slack, sane_m = 1e-5, 1e6
    got = (np.full(k, np.inf), np.zeros((k, 2, 3)), np.zeros((k, 3)), np.zeros(k, dtype=np.int8),
           np.empty(k, dtype=np.bool_), np.empty(k, dtype=np.bool_))
    settle_first_distances(raw, p0, p1, measured, far_from, slack, sane_m, mesh, *got[:4], 1, 2, *got[4:])
    want = (np.full(k, np.inf), np.zeros((k, 2, 3)), np.zeros((k, 3)), np.zeros(k, dtype=np.int8))
    with np.errstate(invalid="ignore"):
        sane = measured & (np.abs(raw) < sane_m) & (np.abs(p0) < sane_m).all(axis=1) & (np.abs(p1) < sane_m).all(axis=1)
        far = sane & (raw >= far_from)
        delta = p1 - p0
        gap = np.sqrt(np.einsum("ki,ki->k", delta, delta))
        apart = sane & ~far & (raw > slack) & (gap > 1e-12)
    rows = apart.nonzero()[0]
    normal = delta[rows] / gap[rows, None]
    want[0][rows] = raw[rows]
    want[1][rows, 0] = p0[rows]
    want[1][rows, 1] = p0[rows] + raw[rows, None] * normal
    want[2][rows] = normal
    want[3][rows] = np.where(mesh[rows], 2, 1)
    for x, y in zip(got[:4], want):
        assert x.tobytes() == y.tobytes()
    assert (got[4] == (~far & ~apart)).all() and (got[5] == (sane & mesh & ~(raw > slack))).all()
    assert 0 < len(rows) < k and far.any() and got[4].sum() > (~measured).sum() and got[5].any()


@pytest.mark.parametrize("k_max", [0, 1, 3])
def test_compiled_row_order_is_numpy_lexsort(k_max):
    """kernels.clearance_rows.assemble_rows keeps, orders and flags the rows as numpy's lexsort by (configuration,
    padded distance) did, ties (equal distances, +0 and -0) in candidate order, k_max per configuration."""
    from my_collision_pkg.core.kernels.clearance_rows import assemble_rows
    rng = np.random.default_rng(5 + k_max)
    k, n_pairs = 600, 7
    cfg = np.sort(rng.integers(0, 40, k))
    pair = rng.integers(0, n_pairs, k)
    margins = rng.choice([0.0, 0.01, 0.02], n_pairs)
    distance = rng.choice([-0.01, -0.0, 0.0, 1e-10, 0.01, 0.02, 0.03], k) + np.where(rng.random(k) < 0.5, 0.0, margins[pair])
    state = rng.integers(0, 3, k).astype(np.int8)
    points, normal = rng.normal(size=(k, 2, 3)), rng.normal(size=(k, 3))
    normal[rng.random(k) < 0.05] = np.nan
    subshapes = rng.integers(-1, 50, (k, 2)).astype(np.int32)
    exact, deepest, kink = (rng.random(k) < p for p in (0.9, 0.3, 0.1))
    got = assemble_rows(state, distance, points, normal, subshapes, exact, deepest, kink, cfg, pair, margins, k_max, 1,
                        1e-9)
    rows = (state == 1).nonzero()[0]
    d_padded = distance[rows] - margins[pair[rows]]
    order = np.lexsort((d_padded, cfg[rows]))
    if k_max > 0:
        c_sorted = cfg[rows][order]
        order = order[np.arange(len(order)) - np.searchsorted(c_sorted, c_sorted, side="left") < k_max]
    rows = rows[order]
    d = distance[rows]
    smooth = exact[rows] & np.isfinite(normal[rows]).all(axis=1) & ~(np.abs(d) < 1e-9) & ~((d < 0.0) & deepest[rows]) \
        & ~kink[rows]
    want = (rows, cfg[rows], pair[rows], d_padded[order], points[rows], normal[rows], subshapes[rows], smooth)
    for x, y in zip(got, want):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    assert smooth.any() and not smooth.all() and len(rows) >= 40          # (40 configurations)


def test_one_configuration_faults_are_named_as_before(arm):
    """One configuration takes a compiled path from named values to candidate rows (clearance._single_clearance):
    its faults are named as the general path names them, the configuration's own first."""
    scene, checker = arm
    res = checker.clearance(["turn", "slide"], [float("nan"), 0.2], 0.1, group_name="no_such_group")
    assert res.status == Status.INVALID_REQUEST and "'turn'" in res.message and "non-finite" in res.message
    res = checker.clearance(["turn", "slide"], [0.1, float("inf")], 0.1)
    assert res.status == Status.INVALID_REQUEST and "'slide'" in res.message and "configuration" not in res.message
    res = checker.clearance(["turn"], [3.5], 0.1)
    assert res.status == Status.OUT_OF_BOUNDS and "'turn'" in res.message and "configuration" not in res.message
    assert res.message == checker.clearance(["turn"], [[3.5], [3.5]], 0.1).message.replace(" in configuration 0", "")
    # read-only and strided positions: the same answer as a plain array
    plain = checker.clearance(["turn", "slide"], np.array([0.3, 0.1]), 0.5)
    assert len(plain) > 0
    frozen = np.array([0.3, 9.0, 0.1])[::2]
    frozen.flags.writeable = False
    other = checker.clearance(["turn", "slide"], frozen, 0.5)
    for name in ("distance", "points", "jacobian", "shape_pairs"):
        assert getattr(other, name).tobytes() == getattr(plain, name).tobytes()


def test_answers_made_without_the_dataclass_init_are_the_same_objects():
    """clearance._answer fills a Clearance's __dict__ directly: the same fields as Clearance(...) makes, and the
    empty answer's arrays have the dtypes and shapes of the dataclass's defaults."""
    import dataclasses

    from my_collision_pkg.core.checks import clearance

    assert not hasattr(Clearance, "__post_init__") and not hasattr(Clearance, "__slots__")
    fields = [Status.VALID, "two rows", ("a", "b")] + [np.arange(2 * k) for k in range(12)]
    fast, made = clearance._answer(*fields), Clearance(*fields)
    assert vars(fast).keys() == vars(made).keys() and all(vars(fast)[k] is vars(made)[k] for k in vars(made))
    empty, default = clearance._no_rows("none", ("a", "b"), 3), Clearance(Status.VALID, "none", ("a", "b"),
                                                                          jacobian=np.zeros((0, 3)))
    for f in dataclasses.fields(Clearance):
        x, y = getattr(empty, f.name), getattr(default, f.name)
        if isinstance(y, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and x is not y, f.name
        else:
            assert x == y, f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        empty.message = "changed"


def test_packed_arrays_read_back_as_they_were():
    """kernels.clearance_rows.pack_arrays: each packed array (floats, then ints, booleans as 0 and 1) is read
    back with its shape and values by the kernels' readers."""
    from my_collision_pkg.core.kernels import clearance_rows as cr
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(size=(4, 3)), rng.normal(size=5), rng.normal(size=(2, 3, 3))
    d, e = rng.integers(-9, 9, size=(3, 2)), rng.random(6) < 0.5
    floats, ints = cr.pack_arrays([a, b, c], [d, e])
    assert np.array_equal(cr._f2(floats, ints, 0), a) and np.array_equal(cr._f1(floats, ints, 1), b)
    assert np.array_equal(cr._f3(floats, ints, 2), c) and np.array_equal(cr._i2(ints, 3), d)
    assert np.array_equal(cr._i1(ints, 4), e.astype(np.int64))


def test_candidate_rows_are_the_culling_of_the_five_calls(arm):
    """clearance_rows.candidate_rows (completion, poses and culling in one call) gives the poses and candidate
    rows of forward kinematics, shape poses, obb_candidates and sphere_gaps called one after the other."""
    from my_collision_pkg.core.checks import clearance
    from my_collision_pkg.core.kernels.clearance_rows import candidate_rows, sphere_gaps
    from my_collision_pkg.core.kernels.culling import obb_candidates
    scene, checker = arm
    world = scene.world
    selection = world.pair_selection("", True, False)
    tables = clearance._tables(world)
    pt = clearance._pair_tables(world, tables, selection)
    rng = np.random.default_rng(11)
    q = rng.uniform(scene.robot.lower_limits, scene.robot.upper_limits, size=(40, len(scene.robot.active_joint_names)))
    counts = []
    for influence in (0.05, 0.5, 2.0):
        thresholds = pt.thresholds(influence, selection.margins)
        poses, rows, _, T_link, T_shape = pt.buffers(len(q))
        count = candidate_rows(q, tables.all_joints, tables.no_current, True, *tables.packed_world, selection.pairs,
                               thresholds, poses, rows)
        T_link_ref = scene.robot.link_transforms_batch(q)
        T_shape_ref = world.shape_transforms(T_link_ref)
        assert T_link.tobytes() == T_link_ref.tobytes() and T_shape.tobytes() == T_shape_ref.tobytes()
        boxes = np.empty((len(q), len(selection.pairs)), dtype=np.bool_)
        obb_candidates(T_shape_ref, world.obb_center, world.obb_axes, world.obb_half, selection.pairs, thresholds,
                       boxes)
        cfg, pair = np.nonzero(boxes)
        gaps = np.empty(len(cfg))
        sphere_gaps(T_shape_ref, cfg, pt.a[pair], pt.b[pair], tables.sphere_centre, tables.sphere_radius, gaps)
        keep = gaps < thresholds[pair]
        assert np.array_equal(rows[0, :count], cfg[keep]) and np.array_equal(rows[1, :count], pair[keep])
        counts.append(count)
    assert counts[-1] > counts[0] >= 0 and counts[-1] > 0
    # outside the limits: refused; a joint not named keeps the current value
    outside = q[:1].copy()
    outside[0, 0] = scene.robot.upper_limits[0] + 0.1
    assert candidate_rows(outside, tables.all_joints, tables.no_current, True, *tables.packed_world, selection.pairs,
                          thresholds, *pt.buffers(1)[:2]) < 0


def test_answers_without_rows_share_read_only_empty_arrays(arm):
    """Answers without rows share their empty arrays, read-only (made once per Jacobian width), each of its
    field's dtype and shape as a fresh answer's; an answer with rows owns writable arrays."""
    from my_collision_pkg.core.checks import clearance
    scene, checker = arm
    names = scene.robot.active_joint_names
    far = np.zeros(len(names))
    first, second = checker.clearance(names, far, 0.0), checker.clearance(names, far, 0.0, compute_jacobians=False)
    again = checker.clearance(names, far, 0.0)
    assert len(first) == len(second) == len(again) == 0
    fresh = clearance._empty_arrays(len(names))
    fields = ("configuration_index", "body_names", "body_types", "shape_ids", "subshape_ids", "distance", "points",
              "points_local", "normals", "jacobian", "smooth", "shape_pairs")
    for name, want in zip(fields, fresh):
        got = getattr(first, name)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert not got.flags.writeable and getattr(again, name) is got, name
    assert second.jacobian.shape == (0, 0) and first.jacobian.shape == (0, len(names))
    near = checker.clearance(names, far, 10.0)
    assert len(near) > 0 and all(getattr(near, name).flags.writeable for name in fields if name != "body_names")
