"""Contact geometry with exact answers: witness points, depths and normals (issue 8).

Primitive and convex pairs come from coal's exact signed distance; penetrating
closed meshes from the deepest point of each overlap region. Expectations are
analytic, or those of coal's own tests (box_box_distance_3, capsule_box_1) and
Tesseract's (box against cylinder); meshes are cross-checked by brute force with
trimesh (its own closest-point and signed-distance code, not our kernels).
"""
import dataclasses

import numpy as np
import pytest
import trimesh
from core_scenes import SLIDER_URDF, assert_contact_invariants, two_objects

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import NO_CC_TIME, Contact
from my_collision_pkg.core.kernels.depth import points_depth
from my_collision_pkg.core.kernels.mesh_queries import FEATURE_EDGE, FEATURE_FACE, MeshTree, tree_closest_point
from my_collision_pkg.core.geometry.shape_geometry import build_shape
from my_collision_pkg.core.geometry.shape_geometry import MeshResolver
from my_collision_pkg.core.kernels.mesh_queries import INSIDE_WINDING, winding_number
from my_collision_pkg.core.checks.narrowphase import deepest_regions, pair_contacts, pair_distance, regions_exist
from my_collision_pkg.core.model.robot_model import Box, Capsule, Cone, Cylinder, RobotModel, Sphere, TriangleMesh
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject

TOL_M = 1e-6


def pose(xyz=(0.0, 0.0, 0.0), rotation=np.eye(3)):
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = xyz
    return T


def rot(axis, angle_rad):
    """Rotation matrix about a unit axis (Rodrigues)."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle_rad) * K + (1.0 - np.cos(angle_rad)) * K @ K


def as_mesh(mesh):
    return TriangleMesh(np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces))


def notched_box(size, notch_m=0.1):
    """A closed, non-convex box (a square notch cut through one vertical edge): checked as a BVH."""
    size = np.asarray(size, dtype=float)
    cut = trimesh.creation.box(extents=(2 * notch_m, 2 * notch_m, 2 * size[2]),
                               transform=pose((size[0] / 2, size[1] / 2, 0.0)))
    return trimesh.boolean.difference([trimesh.creation.box(extents=size), cut], engine="manifold")


def assert_invariant(result):
    np.testing.assert_allclose(result.p1_world - result.p0_world, result.distance_m * result.normal_world,
                               atol=1e-12)
    assert np.linalg.norm(result.normal_world) == pytest.approx(1.0, abs=1e-12)


# ----- the cases of the issue ----------------------------------------------------
def test_box_against_cylinder_tesseract_case():
    world, T, a, b = two_objects(Box((1.0, 1.0, 1.0)), pose(), Cylinder(0.25, 1.0), pose((0.2, 0.0, 0.0)))
    r = pair_distance(world, T, a, b)
    assert r.distance_m == pytest.approx(-0.55, abs=TOL_M)
    np.testing.assert_allclose(r.p0_world, [0.5, 0.0, 0.0], atol=TOL_M)
    np.testing.assert_allclose(r.p1_world, [-0.05, 0.0, 0.0], atol=TOL_M)
    np.testing.assert_allclose(r.normal_world, [1.0, 0.0, 0.0], atol=TOL_M)
    assert_invariant(r)


@pytest.mark.parametrize("cube", [Box((1.0, 1.0, 1.0)), as_mesh(trimesh.creation.box(extents=(1.0, 1.0, 1.0)))],
                         ids=["box", "convex mesh"])
def test_unit_cube_and_cone_at_the_origin(cube):
    world, T, a, b = two_objects(cube, pose(), Cone(1.0, 1.0), pose())
    r = pair_distance(world, T, a, b)
    assert r.distance_m == pytest.approx(-1.0, abs=TOL_M)
    # the cone (apex at +0.5 m, base at -0.5 m) leaves the cube by moving 1 m up, or 1 m down
    # (then only its apex touches the bottom face): both are minimal
    assert abs(r.normal_world[2]) == pytest.approx(1.0, abs=TOL_M)
    assert abs(r.p0_world[2]) == pytest.approx(0.5, abs=TOL_M) and abs(r.p1_world[2]) == pytest.approx(0.5, abs=TOL_M)
    assert_invariant(r)


def test_sphere_against_capsule_witness_points_on_the_bodies():
    world, T, a, b = two_objects(Sphere(20.0), pose(), Capsule(1.0, 2.0), pose((0.0, 0.0, 20.5)))
    r = pair_distance(world, T, a, b)       # capsule spans z 18.5 .. 22.5
    assert r.distance_m == pytest.approx(-1.5, abs=TOL_M)
    np.testing.assert_allclose(r.p0_world, [0.0, 0.0, 20.0], atol=TOL_M)
    np.testing.assert_allclose(r.p1_world, [0.0, 0.0, 18.5], atol=TOL_M)
    assert_invariant(r)


def test_coal_box_box_distance_3():
    # coal test/cpp/box_box_distance.cpp, distance_box_box_3: unit boxes turned 45 degrees
    world, T, a, b = two_objects(Box((1.0, 1.0, 1.0)), pose((-2.0, 1.0, 0.5), rot([0, 0, 1], np.pi / 4)),
                                 Box((1.0, 1.0, 1.0)), pose((2.0, 0.5, 0.5), rot([0, 1, 0], np.pi / 4)))
    r = pair_distance(world, T, a, b)
    assert r.distance_m == pytest.approx(4.0 - np.sqrt(2.0), abs=TOL_M)
    np.testing.assert_allclose(r.p0_world, [np.sqrt(2.0) / 2 - 2.0, 1.0, 0.5], atol=TOL_M)
    np.testing.assert_allclose(r.p1_world, [2.0 - np.sqrt(2.0) / 2, 1.0, 0.5], atol=TOL_M)
    assert_invariant(r)


@pytest.mark.parametrize("T_capsule, distance, p_capsule, p_box", [
    (pose((3.0, 0.0, 0.0)), 0.5, [1.0, 0.0, None], [0.5, 0.0, None]),
    (pose((0.0, 0.0, 8.0)), 2.0, [0.0, 0.0, 4.0], [0.0, 0.0, 2.0]),
    (pose((-10.0, 0.0, 0.0), rot([0, 1, 0], np.pi / 2)), 5.5, [-6.0, 0.0, 0.0], [-0.5, 0.0, 0.0]),
], ids=["side", "above", "behind"])
def test_coal_capsule_box_1(T_capsule, distance, p_capsule, p_box):
    # coal test/cpp/capsule_box_1.cpp: capsule r 2, length 4 against a 1 x 2 x 4 box
    world, T, a, b = two_objects(Capsule(2.0, 4.0), T_capsule, Box((1.0, 2.0, 4.0)), pose())
    r = pair_distance(world, T, a, b)
    assert r.distance_m == pytest.approx(distance, abs=TOL_M)
    for got, want in ((r.p0_world, p_capsule), (r.p1_world, p_box)):
        for k in range(3):
            if want[k] is not None:       # side by side the nearest points form a segment along z
                assert got[k] == pytest.approx(want[k], abs=TOL_M)
    assert_invariant(r)


# ----- every primitive pair, stacked along z, at a known penetration and separation ----
# Each shape with its top (lower body) and bottom (upper body) along z and whether that
# side is flat (then the witness point may lie anywhere on the touching patch). The cone,
# as the lower body, is turned over so that both bodies meet with its flat base.
SHAPES = {
    "box": (Box((0.3, 0.3, 0.2)), 0.1, True),
    "sphere": (Sphere(0.1), 0.1, False),
    "cylinder": (Cylinder(0.1, 0.2), 0.1, True),
    "capsule": (Capsule(0.1, 0.1), 0.15, False),
    "cone": (Cone(0.15, 0.2), 0.1, True),
}
PAIRS = [(x, y) for i, x in enumerate(SHAPES) for y in list(SHAPES)[i:]]


@pytest.mark.parametrize("gap_m", [-0.01, 0.02], ids=["penetrating", "apart"])
@pytest.mark.parametrize("lower, upper", PAIRS)
def test_primitive_pair_stacked(lower, upper, gap_m):
    spec_a, top_a, flat_a = SHAPES[lower]
    spec_b, bottom_b, flat_b = SHAPES[upper]
    turn = rot([1, 0, 0], np.pi) if lower == "cone" else np.eye(3)
    world, T, a, b = two_objects(spec_a, pose(rotation=turn), spec_b, pose((0.0, 0.0, top_a + bottom_b + gap_m)))
    r = pair_distance(world, T, a, b)
    assert r.exact
    assert r.distance_m == pytest.approx(gap_m, abs=TOL_M)
    np.testing.assert_allclose(r.normal_world, [0.0, 0.0, 1.0], atol=TOL_M)
    assert r.p0_world[2] == pytest.approx(top_a, abs=TOL_M)
    assert r.p1_world[2] == pytest.approx(top_a + gap_m, abs=TOL_M)
    if not (flat_a and flat_b):           # a round side touches at its pole
        np.testing.assert_allclose(r.p0_world[:2], [0.0, 0.0], atol=TOL_M)
    else:                                 # flat on flat: anywhere on the smaller face
        assert np.linalg.norm(r.p0_world[:2]) <= 0.1 + TOL_M
    assert_invariant(r)


# ----- meshes: the deepest point ---------------------------------------------------
@pytest.mark.parametrize("tilt_rad", [0.0, 0.3])
@pytest.mark.parametrize("depth_m", [0.005, 0.03])
@pytest.mark.parametrize("table", ["primitive box", "mesh box"])
@pytest.mark.parametrize("block", ["convex box mesh", "non-convex box mesh"])
def test_box_mesh_pushed_into_a_box(block, table, depth_m, tilt_rad):
    size = np.array([0.4, 0.4, 0.4])
    mesh = trimesh.creation.box(extents=size) if block == "convex box mesh" else notched_box(size)
    R = rot([1, 0, 0], tilt_rad)
    lowest = -(size[1] / 2 * np.sin(tilt_rad) + size[2] / 2 * np.cos(tilt_rad))   # edge y = z = -0.2
    table_spec = Box((3.0, 3.0, 1.0)) if table == "primitive box" else as_mesh(notched_box((3.0, 3.0, 1.0)))
    world, T, a, b = two_objects(as_mesh(mesh), pose((0.0, 0.0, -depth_m - lowest), R),
                                 table_spec, pose((0.0, 0.0, -0.5)))
    assert world.shapes[a].geometry.is_bvh == (block != "convex box mesh")
    assert world.shapes[b].geometry.is_bvh == (table != "primitive box")
    results = pair_contacts(world, T, a, b, 4)
    r = results[0]
    assert r.exact
    assert r.distance_m == pytest.approx(-depth_m, abs=TOL_M)
    np.testing.assert_allclose(r.normal_world, [0.0, 0.0, -1.0], atol=TOL_M)   # table moves down
    assert r.p0_world[2] == pytest.approx(-depth_m, abs=TOL_M)
    assert r.p1_world[2] == pytest.approx(0.0, abs=TOL_M)
    # the deepest point is on the lowest edge of the block (tilted), or its bottom face
    local = (np.linalg.inv(T[a]) @ np.append(r.p0_world, 1.0))[:3]
    assert local[2] == pytest.approx(-0.2, abs=TOL_M)
    if tilt_rad > 0.0:
        assert local[1] == pytest.approx(-0.2, abs=TOL_M)
    assert all(x.distance_m >= r.distance_m for x in results)
    assert_invariant(r)


@pytest.mark.parametrize("table", ["primitive box", "mesh box"])
def test_icosphere_into_a_box(table):
    sphere = trimesh.creation.icosphere(subdivisions=2, radius=0.1)
    lowest = float(sphere.vertices[:, 2].min())
    depth_m = 0.012
    table_spec = Box((2.0, 2.0, 1.0)) if table == "primitive box" else as_mesh(notched_box((2.0, 2.0, 1.0)))
    world, T, a, b = two_objects(table_spec, pose((0.0, 0.0, -0.5)), as_mesh(sphere),
                                 pose((0.0, 0.0, -depth_m - lowest)))
    r = pair_distance(world, T, a, b)
    assert r.distance_m == pytest.approx(-depth_m, abs=TOL_M)
    np.testing.assert_allclose(r.normal_world, [0.0, 0.0, 1.0], atol=TOL_M)     # the sphere moves up
    k = np.argmin(sphere.vertices[:, 2])
    np.testing.assert_allclose(r.p1_world, sphere.vertices[k] + T[b][:3, 3], atol=TOL_M)
    assert_invariant(r)


def test_sphere_primitive_into_a_mesh_is_refined_to_its_lowest_point():
    block = notched_box((1.0, 1.0, 1.0))
    world, T, a, b = two_objects(Sphere(0.1), pose((-0.2, -0.1, 0.5 + 0.1 - 0.02)), as_mesh(block), pose())
    r = pair_distance(world, T, a, b)
    assert r.exact and r.distance_m == pytest.approx(-0.02, abs=1e-9)
    np.testing.assert_allclose(r.p0_world, [-0.2, -0.1, 0.48], atol=1e-9)
    np.testing.assert_allclose(r.p1_world, [-0.2, -0.1, 0.5], atol=1e-9)


def test_legs_across_a_table_give_one_contact_per_leg():
    # a table-like U: two legs 0.8 m apart, the left one 10 mm longer, joined by a bridge
    parts = [trimesh.creation.box(extents=(0.1, 0.1, 0.3), transform=pose((-0.4, 0.0, -0.005))),
             trimesh.creation.box(extents=(0.1, 0.1, 0.29), transform=pose((0.4, 0.0, 0.0))),
             trimesh.creation.box(extents=(0.9, 0.1, 0.1), transform=pose((0.0, 0.0, 0.15)))]
    u = trimesh.boolean.union(parts, engine="manifold")
    bottom = float(u.vertices[:, 2].min())                 # the left leg's foot
    world, T, a, b = two_objects(as_mesh(u), pose((0.0, 0.0, -0.02 - bottom)), Box((3.0, 3.0, 1.0)),
                                 pose((0.0, 0.0, -0.5)))
    results = pair_contacts(world, T, a, b, 4)
    assert len(results) == 2
    assert results[0].distance_m == pytest.approx(-0.02, abs=TOL_M)
    assert results[1].distance_m == pytest.approx(-0.01, abs=TOL_M)
    assert results[0].p0_world[0] < -0.3 and results[1].p0_world[0] > 0.3
    assert len(pair_contacts(world, T, a, b, 1)) == 1


def _surface_samples(mesh):
    """The points of a mesh tested inside the other body: vertices, edge midpoints, face centroids."""
    return np.vstack([mesh.vertices, mesh.vertices[mesh.edges_unique].mean(axis=1), mesh.triangles_center])


def _brute_force_deepest(mesh_a, mesh_b):
    """Deepest surface sample of either mesh inside the other, by trimesh's signed distance (> 0 inside)."""
    best = (0.0, None, None)
    for side, (x, y) in enumerate(((mesh_a, mesh_b), (mesh_b, mesh_a))):
        samples = _surface_samples(x)
        depth = trimesh.proximity.signed_distance(y, samples)
        k = int(np.argmax(depth))
        if depth[k] > best[0]:
            best = (float(depth[k]), side, samples[k])
    return best


@pytest.mark.parametrize("seed", range(12))
def test_two_overlapping_closed_meshes_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    knot = trimesh.creation.torus(major_radius=0.12, minor_radius=0.04, major_sections=24, minor_sections=12)
    block = notched_box((0.2, 0.15, 0.1), notch_m=0.03)
    T_b = pose(rng.uniform(-0.05, 0.05, 3), rot(rng.normal(size=3), rng.uniform(0, np.pi)))
    world, T, a, b = two_objects(as_mesh(knot), pose(), as_mesh(block), T_b)
    assert world.shapes[a].geometry.is_closed_bvh and world.shapes[b].geometry.is_closed_bvh
    mesh_a = world.shapes[a].geometry.triangle_mesh().copy().apply_transform(T[a])
    mesh_b = world.shapes[b].geometry.triangle_mesh().copy().apply_transform(T[b])
    depth, side, point = _brute_force_deepest(mesh_a, mesh_b)
    r = pair_distance(world, T, a, b)
    if depth <= 0.0:
        pytest.skip("this pose has no surface sample inside (edge through edge)")
    assert r.exact
    assert -r.distance_m == pytest.approx(depth, abs=1e-9)
    np.testing.assert_allclose(r.p0_world if side == 0 else r.p1_world, point, atol=1e-9)
    assert_invariant(r)


# ----- the mesh tree: closest point and side against brute force ------------------
def tree_against_brute_force(geometry, n_points=400, seed=0, near_surface_m=1e-9):
    """Closest point and side of random points by the shape's tree, checked against brute force.

    Points fill the mesh's box grown by a fifth, plus points just off random surface
    points. Distance: the least over all triangles of trimesh's closest point on each
    triangle (``trimesh.triangles.closest_point``; its ``proximity.closest_point`` misses
    the nearest triangle now and then). Side: the
    generalised winding number summed over all triangles. Points nearer the surface than
    ``near_surface_m`` are on it (either side is right). Returns how many were inside.
    """
    mesh, tree, triangles = geometry.source_mesh, geometry.mesh_tree, geometry.triangles_shape
    rng = np.random.default_rng(seed)
    lo, hi = mesh.bounds
    grow = 0.2 * (hi - lo)
    surface_points, _ = trimesh.sample.sample_surface(mesh, n_points // 2, seed=seed)
    points = np.vstack([rng.uniform(lo - grow, hi + grow, size=(n_points // 2, 3)),
                        surface_points + rng.normal(scale=1e-3 * np.max(hi - lo), size=surface_points.shape)])
    expected_m = np.array([np.min(np.linalg.norm(
        trimesh.triangles.closest_point(triangles, np.repeat(p[None], len(triangles), axis=0)) - p, axis=1))
        for p in points])
    out = np.empty(3)
    for p, expected in zip(points, expected_m):
        d2, t, _ = tree_closest_point(p, triangles, tree.bounds, tree.nodes, tree.order, out)
        assert np.sqrt(d2) == pytest.approx(expected, abs=1e-12)
        assert np.linalg.norm(out - p) == pytest.approx(expected, abs=1e-12)
        assert 0 <= t < len(triangles)
    depth = np.empty(len(points))
    surface = np.empty((len(points), 3))
    triangle = np.empty(len(points), dtype=np.int64)
    planes = np.zeros((0, 4))        # no hull planes: every point goes through the exact test
    points_depth(points, np.eye(4), geometry.solid_kind, geometry.solid_params, planes, triangles, tree.bounds,
                 tree.nodes, tree.order, tree.pseudo_normals, tree.manifold, np.zeros(3), np.eye(3),
                 np.full(3, 1e9), depth, surface, triangle)
    winding = np.array([winding_number(p, triangles) for p in points])
    on_surface = expected_m < near_surface_m
    np.testing.assert_array_equal((depth > 0.0)[~on_surface], (winding > INSIDE_WINDING)[~on_surface])
    inside = depth > 0.0
    np.testing.assert_allclose(depth[inside], expected_m[inside], atol=1e-12)
    return int(inside.sum())


def mesh_geometry(mesh):
    return build_shape(as_mesh(mesh), "thing", MeshResolver())


@pytest.mark.parametrize("make", [
    lambda: trimesh.creation.torus(major_radius=0.12, minor_radius=0.04, major_sections=24, minor_sections=12),
    lambda: notched_box((0.2, 0.15, 0.1), notch_m=0.03),
    lambda: trimesh.creation.annulus(r_min=0.05, r_max=0.1, height=0.04, sections=20),
    lambda: trimesh.boolean.union([trimesh.creation.box(extents=(0.3, 0.05, 0.05)),
                                   trimesh.creation.icosphere(subdivisions=2, radius=0.04)], engine="manifold"),
], ids=["torus", "notched box", "annulus", "box through a ball"])
def test_tree_closest_point_and_side_match_brute_force(make):
    geometry = mesh_geometry(make())
    assert geometry.is_closed_bvh and geometry.mesh_tree.manifold
    assert tree_against_brute_force(geometry) > 20


def test_mesh_that_is_not_one_manifold_keeps_the_winding_number():
    # two boxes crossing each other as separate shells: closed, each edge has two faces,
    # but the pieces overlap, so the nearest feature's normal can lie about the side
    a = trimesh.creation.box(extents=(0.3, 0.1, 0.1))
    b = trimesh.creation.box(extents=(0.1, 0.1, 0.3))
    geometry = mesh_geometry(trimesh.util.concatenate([a, b]))
    assert geometry.is_closed_bvh and not geometry.mesh_tree.manifold
    assert tree_against_brute_force(geometry) > 20


def test_pseudo_normals_of_a_cube():
    cube = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    tree = MeshTree.of(cube.vertices, cube.faces)
    assert tree.manifold
    faces = np.asarray(cube.faces)
    for t in range(len(faces)):
        corners = np.asarray(cube.vertices)[faces[t]]
        np.testing.assert_allclose(tree.pseudo_normals[t, FEATURE_FACE], cube.face_normals[t], atol=1e-12)
        for k in range(3):             # a corner's angle-weighted normal points along the diagonal
            np.testing.assert_allclose(tree.pseudo_normals[t, 1 + k], corners[k] / np.linalg.norm(corners[k]),
                                       atol=1e-12)
            edge = tree.pseudo_normals[t, FEATURE_EDGE + k]       # the diagonal of a face or an outer edge
            mid = (corners[k] + corners[(k + 1) % 3]) / 2.0
            assert edge @ mid > 0.0


def test_open_and_inconsistent_meshes_are_not_manifold():
    box = trimesh.creation.box(extents=(1.0, 1.0, 1.0))
    open_box = MeshTree.of(box.vertices, box.faces[:-1])
    assert not open_box.manifold
    flipped = np.asarray(box.faces).copy()
    flipped[0] = flipped[0, ::-1]
    assert not MeshTree.of(box.vertices, flipped).manifold


# ----- through explain: the contact builder, the message, single_contact_point ----
def _slider_with(spec, T_object, attach=False):
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([AddObject(SceneObject("thing", (ObjectShape(spec),), T_object))])
    return CollisionChecker(scene)


def test_explain_uses_the_exact_contacts_and_flags_single_points():
    # the ball (sphere r 0.1 on slide_x) against a cylinder: one point only
    checker = _slider_with(Cylinder(0.25, 1.0), pose((0.4, 0.0, 0.0)))
    e = checker.explain(["slide_x"], [0.1])                # ball spans x 0 .. 0.2, cylinder from 0.15
    c = next(c for c in e.contacts if c.link_names == ("ball", "thing"))
    assert c.penetration_depth == pytest.approx(0.05, abs=TOL_M)
    np.testing.assert_allclose(c.nearest_points[0], [0.2, 0.0, 0.0], atol=TOL_M)
    np.testing.assert_allclose(c.nearest_points[1], [0.15, 0.0, 0.0], atol=TOL_M)
    assert c.single_contact_point and not c.depth_is_fallback
    assert_contact_invariants(c)
    # the block (a box) against a box: a face can touch a face, so not a single point
    checker = _slider_with(Box((1.0, 1.0, 0.2)), pose((0.0, 0.5, 1.0)))
    c = next(c for c in checker.explain(["slide_y"], [-0.04]).contacts if c.link_names == ("block", "thing"))
    assert c.penetration_depth == pytest.approx(0.06, abs=TOL_M) and not c.single_contact_point
    assert_contact_invariants(c)



def test_a_built_contact_is_the_dataclass_its_constructor_makes():
    # ContactBuilder.make fills the frozen Contact's fields directly: every field set, the defaults
    # where it sets none, and the same object as Contact(**fields) (equal reprs, replace works)
    checker = _slider_with(Box((1.0, 1.0, 0.2)), pose((0.0, 0.5, 1.0)))
    c = next(c for c in checker.explain(["slide_y"], [-0.04]).contacts if c.link_names == ("block", "thing"))
    names = [f.name for f in dataclasses.fields(Contact)]
    assert sorted(vars(c)) == sorted(names)
    rebuilt = Contact(**{name: getattr(c, name) for name in names})
    assert repr(rebuilt) == repr(c) and c.cc_time == (NO_CC_TIME, NO_CC_TIME) and c.cc_transforms is None
    moved = dataclasses.replace(c, distance=-0.5)
    assert moved.distance == -0.5 and moved.link_names == c.link_names
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.distance = 0.0

def test_explain_on_a_mesh_reports_the_deepest_point_in_the_message():
    parts = [trimesh.creation.box(extents=(0.1, 0.1, 0.3), transform=pose((0.0, -0.4, 0.0))),
             trimesh.creation.box(extents=(0.1, 0.1, 0.3), transform=pose((0.0, 0.4, 0.0))),
             trimesh.creation.box(extents=(0.1, 0.9, 0.1), transform=pose((0.0, 0.0, 0.15)))]
    u = trimesh.boolean.union(parts, engine="manifold")
    # legs at y = +-0.4 with their feet 7 mm below the block link's top (z = 1.1)
    checker = _slider_with(as_mesh(u), pose((0.0, 0.0, 1.1 + 0.15 - 0.007)))
    e = checker.explain(["slide_x", "slide_y"], [1.5, 0.4])     # the block under one leg, the ball away
    contacts = [c for c in e.contacts if c.link_names == ("block", "thing")]
    assert not e.valid and len(contacts) == 1
    c = contacts[0]
    assert c.penetration_depth == pytest.approx(0.007, abs=TOL_M)
    np.testing.assert_allclose(c.normal, [0.0, 0.0, 1.0], atol=TOL_M)          # the U moves up
    assert c.nearest_points[0][2] == pytest.approx(1.1, abs=TOL_M)
    assert c.nearest_points[1][2] == pytest.approx(1.093, abs=TOL_M)
    assert not c.single_contact_point and not c.depth_is_fallback
    assert "'block' and 'thing': penetration 7.00 mm" in e.message
    assert_contact_invariants(c)


# ----- the overlap test of likely-penetrating pairs (issue 40) --------------------
def _crossed_shells():
    """Closed but not a 2-manifold: two boxes crossing as separate shells (the winding number decides)."""
    return as_mesh(trimesh.util.concatenate([trimesh.creation.box(extents=(0.3, 0.1, 0.1)),
                                             trimesh.creation.box(extents=(0.1, 0.1, 0.3))]))


@pytest.mark.parametrize("make_a, make_b", [
    (lambda: as_mesh(trimesh.creation.torus(major_radius=0.12, minor_radius=0.04, major_sections=24,
                                            minor_sections=12)), lambda: as_mesh(notched_box((0.2, 0.15, 0.1), 0.03))),
    (_crossed_shells, lambda: as_mesh(trimesh.creation.icosphere(subdivisions=2, radius=0.08))),
    (lambda: as_mesh(notched_box((0.2, 0.15, 0.1), 0.03)), lambda: Box((0.12, 0.08, 0.2))),
    (lambda: Cylinder(0.05, 0.3), lambda: as_mesh(trimesh.creation.icosphere(subdivisions=2, radius=0.08))),
], ids=["torus-notched box", "crossed shells-icosphere", "notched box-box", "cylinder-icosphere"])
def test_overlap_test_agrees_with_the_deepest_regions(make_a, make_b):
    """narrowphase.regions_exist (kernels.depth.pair_overlaps: stops at the first surface point inside) is
    true exactly where deepest_regions finds a region, over poses from deep overlaps to apart, both ways."""
    rng = np.random.default_rng(40)
    found = {True: 0, False: 0}
    for _ in range(60):
        T_b = pose(rng.uniform(-0.2, 0.2, 3), rot(rng.normal(size=3), rng.uniform(0, np.pi)))
        world, T, a, b = two_objects(make_a(), pose(), make_b(), T_b)
        for x, y in ((a, b), (b, a)):
            exists = regions_exist(world, T, x, y)
            assert exists == bool(deepest_regions(world, T, x, y, 1))
            found[exists] += 1
    assert found[True] >= 10 and found[False] >= 10
