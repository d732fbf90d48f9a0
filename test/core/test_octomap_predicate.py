"""The predicate's octree test: coal's tree per robot shape, and cells wholly inside a closed link mesh.

coal tests the cells against a mesh's surface only; a cell wholly inside a closed robot mesh
is found by the solid-body test over the cell centres (``kernels.mesh_queries.contains_any_point``,
which reads only the x-y window of the mesh's box). Both are checked against plain answers:
the winding number point by point, and the same cells as box world objects.
"""
from __future__ import annotations

import numpy as np
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.kernels.mesh_queries import contains_any_point, contains_probe
from my_collision_pkg.core.model.example_robots import panda_paths
from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.perception.occupancy import OccupancyMap
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.scene.objects import AddObject, ObjectShape, SceneObject

RESOLUTION_M = 0.01


@pytest.fixture(scope="module")
def panda():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    return scene, CollisionChecker(scene)


def _link_pose(scene, link):
    return scene.robot.link_transforms(np.array(scene.current_positions))[scene.robot.link_index(link)]


def test_a_cell_wholly_inside_a_closed_link_mesh_collides(panda):
    scene, checker = panda
    names = scene.robot.active_joint_names
    q = np.array(scene.current_positions)
    world = scene.world
    k = next(s for s, e in enumerate(world.shapes) if e.owner == "panda_link3" and e.geometry.is_closed_bvh)
    geometry = world.shapes[k].geometry
    T = world.shape_transforms(scene.robot.link_transforms(q))[k]
    # a cell deep inside the mesh: its centre and its 8 corners (and more) inside, by the winding number
    rng = np.random.default_rng(3)

    def inside(p_world):
        return contains_probe(T, np.eye(4), p_world[None, :], geometry.obb_center_shape, geometry.obb_axes_shape,
                              geometry.obb_half_extents_m, geometry.triangles_shape)
    offsets = np.stack(np.meshgrid(*[np.linspace(-1.0, 1.0, 3)] * 3, indexing="ij"), -1).reshape(-1, 3)
    centre = None
    for _ in range(2000):
        p_shape = geometry.obb_center_shape + geometry.obb_axes_shape @ (
            rng.uniform(-1, 1, 3) * geometry.obb_half_extents_m)
        candidate = T[:3, :3] @ p_shape + T[:3, 3]
        cell = (np.floor(candidate / RESOLUTION_M) + 0.5) * RESOLUTION_M
        if all(inside(cell + 1.5 * RESOLUTION_M * o) for o in offsets):
            centre = cell
            break
    assert centre is not None, "no cell found wholly inside panda_link3's mesh"
    occupancy = OccupancyMap.from_points(centre[None, :], RESOLUTION_M)
    assert occupancy.n_occupied == 1
    try:
        assert checker.check(names, q).valid
        scene.set_occupancy(occupancy)
        verdict = checker.check(names, q)
        assert not verdict.valid and "<octomap>" in verdict.message and "panda_link3" in verdict.message
        explanation = checker.explain(names, q)
        assert not explanation.valid
        assert any("<octomap>" in c.link_names and "panda_link3" in c.link_names for c in explanation.contacts)
    finally:
        scene.set_occupancy(None)


def test_many_point_inside_test_equals_the_winding_number_point_by_point(panda):
    scene, _ = panda
    world = scene.world
    rng = np.random.default_rng(16)
    T_link = scene.robot.link_transforms(np.array(scene.current_positions))
    T_shape = world.shape_transforms(T_link)
    for k, entry in enumerate(world.shapes):
        g = entry.geometry
        if not g.is_closed_bvh:
            continue
        T = T_shape[k]
        centre = T[:3, :3] @ g.obb_center_shape + T[:3, 3]
        points = centre + rng.uniform(-1.5, 1.5, size=(4000, 3)) * g.obb_half_extents_m.max()
        points = points[np.lexsort((points[:, 2], points[:, 1], points[:, 0]))]
        I = np.eye(4)
        each = np.array([contains_probe(T, I, p[None, :], g.obb_center_shape, g.obb_axes_shape, g.obb_half_extents_m,
                                        g.triangles_shape) for p in points])
        assert each.any() and not each.all(), entry.owner
        for subset in (points, points[~each], points[each][:1]):
            expected = bool(np.any([contains_probe(T, I, p[None, :], g.obb_center_shape, g.obb_axes_shape,
                                                   g.obb_half_extents_m, g.triangles_shape) for p in subset]))
            got = contains_any_point(T, I, np.ascontiguousarray(subset), g.obb_center_shape, g.obb_axes_shape,
                                     g.obb_half_extents_m, g.solid_planes, g.triangles_shape)
            assert got == expected, entry.owner


def test_tree_verdicts_equal_the_same_cells_as_box_objects(panda):
    scene, checker = panda
    names = scene.robot.active_joint_names
    rng = np.random.default_rng(7)
    points = rng.uniform([0.2, -0.5, 0.0], [0.7, 0.5, 0.8], size=(300, 3))
    occupancy = OccupancyMap.from_points(points, 0.04)
    cells = occupancy.cell_boxes()
    q = rng.uniform(scene.robot.lower_limits, scene.robot.upper_limits, size=(150, len(names)))
    try:
        scene.set_occupancy(occupancy)
        tree = [checker.check(names, x).valid for x in q]
    finally:
        scene.set_occupancy(None)
    shapes = []
    for centre, size in zip(cells.centres_m, cells.size_m):
        T = np.eye(4)
        T[:3, 3] = centre
        shapes.append(ObjectShape(Box((float(size),) * 3), T))
    scene.apply([AddObject(SceneObject("cells_as_boxes", tuple(shapes)))])
    try:
        boxes = [checker.check(names, x).valid for x in q]
    finally:
        from my_collision_pkg.core.scene.objects import RemoveObject
        scene.apply([RemoveObject("cells_as_boxes")])
    assert tree == boxes
    assert 0 < sum(tree) < len(tree)
