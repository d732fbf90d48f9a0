"""Contact geometry on the Franka Panda (issue 8): deepest-point depths of link meshes.

A link is lowered a known depth into a box, the depth computed here from the STL file
(read by trimesh) posed by pinocchio's own kinematics; thousands of contacts keep the
documented invariant and unit normals.
"""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin
import pytest
import trimesh

from my_collision_pkg.core.checks import narrowphase
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.kernels.depth import points_depth
from my_collision_pkg.core.kernels.mesh_queries import INSIDE_WINDING, tree_closest_point, winding_number
from my_collision_pkg.core.scene.loading import example_robot_data_share, load_scene
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
TOL_M = 1e-6


def _lowest_vertex_world(urdf: str, link: str, q7: np.ndarray) -> np.ndarray:
    """Lowest vertex (3,) of ``link``'s collision mesh, by pinocchio and the STL file alone."""
    model, geometry = pin.buildModelsFromUrdf(urdf, [example_robot_data_share()],
                                              geometry_types=pin.GeometryType.COLLISION)
    data, gdata = model.createData(), pin.GeometryData(geometry)
    q = pin.neutral(model)
    q[:7] = q7
    pin.updateGeometryPlacements(model, data, geometry, gdata, q)
    k = geometry.getGeometryId(f"{link}_0")
    mesh = trimesh.load(geometry.geometryObjects[k].meshPath, force="mesh")
    vertices = np.asarray(mesh.vertices) * np.asarray(geometry.geometryObjects[k].meshScale)
    M = gdata.oMg[k]
    world = vertices @ M.rotation.T + M.translation
    return world[np.argmin(world[:, 2])]


@pytest.mark.parametrize("link, depth_m", [("panda_link6", 0.005), ("panda_link5", 0.012), ("panda_hand", 0.003)])
def test_link_lowered_a_known_depth_into_a_box(panda_files, link, depth_m):
    urdf, srdf = panda_files
    q7 = np.array([0.3, 0.4, -0.2, -2.0, 0.5, 1.2, 0.7])
    low = _lowest_vertex_world(urdf, link, q7)
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    T_box = np.eye(4)
    T_box[:3, 3] = [low[0], low[1], low[2] + depth_m - 0.5]          # top face depth_m above the vertex
    scene.apply([AddObject(SceneObject("box", (ObjectShape(Box((0.03, 0.03, 1.0))),), T_box))])
    e = CollisionChecker(scene).explain([f"panda_joint{i}" for i in range(1, 8)], q7)
    contacts = [c for c in e.contacts if c.link_names == (link, "box")]
    assert not e.valid and contacts
    c = contacts[0]
    assert c.penetration_depth == pytest.approx(depth_m, abs=TOL_M)
    np.testing.assert_allclose(c.nearest_points[0], low, atol=TOL_M)          # the vertex itself
    np.testing.assert_allclose(c.nearest_points[1], low + [0.0, 0.0, depth_m], atol=TOL_M)
    np.testing.assert_allclose(c.normal, [0.0, 0.0, -1.0], atol=TOL_M)        # the box moves down
    assert not c.depth_is_fallback


def test_invariants_on_thousands_of_panda_contacts(panda_files, random_configurations):
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene)
    robot = scene.robot
    names = robot.active_joint_names
    Q = random_configurations(robot.lower_limits, robot.upper_limits, 4000, 8)
    valid, _ = checker.check_batch(names, Q)
    n_contacts = n_fallback = 0
    for q in Q[~valid]:
        e = checker.explain(names, q, contact_distance=0.02)
        assert not e.valid
        for c in e.contacts:
            p0, p1 = c.nearest_points
            np.testing.assert_allclose(p1 - p0, c.distance * c.normal, atol=1e-9)
            assert np.linalg.norm(c.normal) == pytest.approx(1.0, abs=1e-9)
            assert c.penetration_depth == pytest.approx(max(0.0, -c.distance))
            n_contacts += 1
            n_fallback += c.depth_is_fallback
    assert n_contacts >= 1000
    # measured: 46 of 2593 (1.8 %) with vertices, edge midpoints and face centroids tested
    # (326 of 2750, 12 %, with vertices alone): grazes where no sample of either body is inside
    assert n_fallback < 0.05 * n_contacts


def test_link_mesh_trees_match_brute_force(panda_files):
    """Each Panda link mesh's tree: nearest point as trimesh finds it over every triangle, and the
    side as the winding number over every triangle, on random points around the link."""
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    meshes = [e.geometry for e in scene.world.shapes if e.geometry.mesh_tree is not None]
    assert len(meshes) >= 8 and all(g.mesh_tree.manifold for g in meshes)
    rng = np.random.default_rng(3)
    out = np.empty(3)
    for g in meshes:
        lo, hi = g.source_mesh.bounds
        points = rng.uniform(lo - 0.02, hi + 0.02, size=(150, 3))
        triangles = g.triangles_shape
        tree = g.mesh_tree
        expected = np.array([np.min(np.linalg.norm(trimesh.triangles.closest_point(
            triangles, np.repeat(p[None], len(triangles), axis=0)) - p, axis=1)) for p in points])
        found = np.array([np.sqrt(tree_closest_point(p, triangles, tree.bounds, tree.nodes, tree.order, out)[0])
                          for p in points])
        np.testing.assert_allclose(found, expected, atol=1e-12)
        depth = np.empty(len(points))
        points_depth(points, np.eye(4), g.solid_kind, g.solid_params, np.zeros((0, 4)), triangles, tree.bounds,
                     tree.nodes, tree.order, tree.pseudo_normals, tree.manifold, np.zeros(3), np.eye(3),
                     np.full(3, 1e9), depth, np.empty((len(points), 3)), np.empty(len(points), dtype=np.int64))
        winding = np.array([winding_number(p, triangles) for p in points])
        np.testing.assert_array_equal(depth > 0.0, winding > INSIDE_WINDING)
        assert 0 < np.count_nonzero(depth > 0.0) < len(points)
        np.testing.assert_allclose(depth[depth > 0.0], expected[depth > 0.0], atol=1e-12)


def _same(x, y) -> bool:
    """Two PairDistance answers equal bit for bit."""
    return (np.float64(x.distance_m).tobytes() == np.float64(y.distance_m).tobytes()
            and all(np.asarray(u, dtype=float).tobytes() == np.asarray(v, dtype=float).tobytes()
                    for u, v in zip(x[1:4], y[1:4]))
            and x.exact == y.exact and tuple(x.subshapes) == tuple(y.subshapes) and x.rule == y.rule)


def test_likely_penetrating_pairs_answer_as_with_the_regions_first(panda_files, panda_configurations):
    """pair_contacts(likely_penetrating=True) asks only whether an overlap region exists before the
    hulls' MTD (issue 40): bit for bit the answer of the regions computed first (deepest_regions, then the
    convex-mesh rule; coal's distance where there is none), on Panda link pairs and link-world pairs
    whose convex hulls overlap."""
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)      # the table and the post too
    world, robot = scene.world, scene.robot
    pairs = world.pair_selection("", False, False).pairs
    seen = {True: 0, False: 0}
    for q in panda_configurations[:200]:
        T = world.shape_transforms(robot.link_transforms(q))
        for a, b in pairs.tolist():
            ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
            if not (ga.is_closed_bvh or gb.is_closed_bvh) or narrowphase.hull_distance_lower_bound(world, T, a, b) > 0:
                continue
            regions = narrowphase.deepest_regions(world, T, a, b, 1)
            expected = narrowphase._as_convex(world, T, a, b, regions) if regions \
                else narrowphase.pair_contacts(world, T, a, b, 1)
            got = narrowphase.pair_contacts(world, T, a, b, 1, likely_penetrating=True)
            assert len(got) == len(expected) and all(_same(x, y) for x, y in zip(got, expected))
            seen[bool(regions)] += 1
    assert seen[True] >= 20 and seen[False] >= 1, seen
