"""The checker's distance function on shape pairs with exact answers."""
import numpy as np
import pytest
import trimesh
from core_scenes import two_objects

from my_collision_pkg.core.checks.narrowphase import pair_distance, pair_distance_lower_bound
from my_collision_pkg.core.model.robot_model import Box, Capsule, Cone, Cylinder, Sphere, TriangleMesh


def pose(xyz=(0.0, 0.0, 0.0), yaw_rad=0.0):
    T = np.eye(4)
    c, s = np.cos(yaw_rad), np.sin(yaw_rad)
    T[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    T[:3, 3] = xyz
    return T


def box_mesh(size):
    mesh = trimesh.creation.box(extents=size)
    return TriangleMesh(np.asarray(mesh.vertices), np.asarray(mesh.faces))


def assert_invariant(result):
    np.testing.assert_allclose(result.p1_world - result.p0_world, result.distance_m * result.normal_world, atol=1e-12)
    assert np.linalg.norm(result.normal_world) == pytest.approx(1.0, abs=1e-12)


def test_box_against_cylinder_has_witness_points_on_both_bodies():
    world, T, a, b = two_objects(Box((1.0, 1.0, 1.0)), pose(), Cylinder(0.25, 1.0), pose((0.2, 0.0, 0.0)))
    result = pair_distance(world, T, a, b)
    assert result.distance_m == pytest.approx(-0.55, abs=1e-6)
    np.testing.assert_allclose(result.p0_world, [0.5, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(result.p1_world, [-0.05, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(result.normal_world, [1.0, 0.0, 0.0], atol=1e-6)
    assert result.exact
    assert_invariant(result)


@pytest.mark.parametrize("cube", [Box((1.0, 1.0, 1.0)), box_mesh((1.0, 1.0, 1.0))], ids=["box", "convex mesh"])
def test_cube_and_cone_at_the_origin_penetrate_by_one(cube):
    world, T, a, b = two_objects(cube, pose(), Cone(1.0, 1.0), pose())
    result = pair_distance(world, T, a, b)
    assert result.distance_m == pytest.approx(-1.0, abs=1e-6)
    assert_invariant(result)


def test_boxes_turned_45_degrees_give_the_minimal_distance():
    world, T, a, b = two_objects(Box((1.0, 1.0, 1.0)), pose(yaw_rad=np.pi / 4),
                                 Box((1.0, 1.0, 1.0)), pose((2.0, 0.0, 0.0), yaw_rad=np.pi / 4))
    result = pair_distance(world, T, a, b)
    assert result.distance_m == pytest.approx(2.0 - np.sqrt(2.0), abs=1e-6)
    np.testing.assert_allclose(result.p0_world, [np.sqrt(0.5), 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(result.p1_world, [2.0 - np.sqrt(0.5), 0.0, 0.0], atol=1e-6)
    assert_invariant(result)


def test_sphere_inside_a_big_sphere_keeps_witness_points_on_the_bodies():
    world, T, a, b = two_objects(Sphere(20.0), pose(), Capsule(1.0, 2.0), pose((0.0, 0.0, 15.0)))
    result = pair_distance(world, T, a, b)
    # the capsule (z from 13 to 17) lies wholly inside the sphere: it leaves it by moving up
    # until its lowest point reaches the surface at z = 20, a depth of 20 - 13 = 7
    assert result.distance_m == pytest.approx(-7.0, abs=1e-6)
    assert np.linalg.norm(result.p0_world) == pytest.approx(20.0, abs=1e-6)
    assert_invariant(result)


@pytest.mark.parametrize("gap_m", [0.3, 0.01, 1e-4])
def test_mesh_against_box_apart_is_exact(gap_m):
    mesh = trimesh.creation.icosphere(subdivisions=3, radius=0.1)
    world, T, a, b = two_objects(TriangleMesh(np.asarray(mesh.vertices), np.asarray(mesh.faces)), pose(),
                                 Box((0.1, 0.1, 0.1)), pose((0.1 + 0.05 + gap_m, 0.0, 0.0)))
    assert world.shapes[a].geometry.is_bvh is False  # a closed convex mesh is a convex solid
    result = pair_distance(world, T, a, b)
    assert result.distance_m == pytest.approx(gap_m, abs=1e-9)
    assert result.exact
    assert_invariant(result)


def test_body_inside_a_closed_mesh_is_penetrating_and_the_bound_knows_it():
    # a closed, non-convex mesh: a box with a notch, so it is checked as a BVH surface
    outer = trimesh.boolean.difference([trimesh.creation.box(extents=(1.0, 1.0, 1.0)),
                                        trimesh.creation.box(extents=(0.2, 0.2, 2.0),
                                                             transform=pose((0.45, 0.45, 0.0)))],
                                       engine="manifold")
    world, T, a, b = two_objects(TriangleMesh(np.asarray(outer.vertices), np.asarray(outer.faces)), pose(),
                                 Sphere(0.05), pose((-0.2, -0.2, 0.0)))
    assert world.shapes[a].geometry.is_closed_bvh
    result = pair_distance(world, T, a, b)
    assert result.distance_m < 0.0
    assert_invariant(result)
    assert pair_distance_lower_bound(world, T, a, b, enough_m=0.1) <= result.distance_m


@pytest.mark.parametrize("seed", range(5))
def test_lower_bound_never_exceeds_the_distance(seed):
    rng = np.random.default_rng(seed)
    mesh = trimesh.creation.torus(major_radius=0.3, minor_radius=0.05)
    specs = [Box((0.2, 0.1, 0.3)), Sphere(0.1), Cylinder(0.05, 0.3), Capsule(0.05, 0.2),
             TriangleMesh(np.asarray(mesh.vertices), np.asarray(mesh.faces))]
    for _ in range(10):
        i, j = rng.integers(len(specs), size=2)
        T_b = pose(rng.uniform(-0.6, 0.6, size=3), yaw_rad=rng.uniform(-np.pi, np.pi))
        world, T, a, b = two_objects(specs[i], pose(), specs[j], T_b)
        exact = pair_distance(world, T, a, b).distance_m
        for enough in (0.0, 0.05, 1.0):
            assert pair_distance_lower_bound(world, T, a, b, enough) <= exact + 1e-9
