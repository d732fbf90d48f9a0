"""The surface distance of apart mesh rows whose hull witness points are off their meshes (kernels/mesh_rows.py),
against coal's BVH mesh distance on posed Panda shapes: through clearance (the rows that reach it on random
configurations with the world) and directly on every apart mesh-mesh and mesh-box pair of a few configurations."""

import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance, narrowphase
from my_collision_pkg.core.geometry.coal_setup import coal
from my_collision_pkg.core.kernels.mesh_queries import closest_point_on_triangles
from my_collision_pkg.core.kernels.mesh_rows import box_triangles, mesh_surface_rows
from core_scenes import panda_world_checker

# coal's mesh distance against ours: both exact to rounding on triangle pairs (coal's triangle-box answers go
# through its GJK at the witness precision, 1e-9 m)
AGREE_M = 1e-9


@pytest.fixture(scope="module")
def panda():
    checker, names, Q = panda_world_checker(200)
    yield checker, names, Q
    checker.close()


def _coal_mesh(tables, a, b, Ta, Tb):
    result = coal.DistanceResult()
    d = coal.distance(tables.mesh[a], narrowphase.coal_transform(Ta), tables.mesh[b], narrowphase.coal_transform(Tb),
                      clearance._REQUEST, result)
    return float(d), np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())


def _on_triangle(world, s, T, triangle, point) -> float:
    """Distance of a world point to triangle ``triangle`` of shape s's mesh (posed at T)."""
    local = T[:3, :3].T @ (point - T[:3, 3])
    tri = np.ascontiguousarray(world.shapes[s].geometry.triangles_shape[triangle:triangle + 1])
    nearest, _ = closest_point_on_triangles(local, tri)
    return float(np.linalg.norm(nearest - local))


def test_box_triangles_are_the_box_surface():
    tris = box_triangles(0.1, 0.2, 0.3)
    assert tris.shape == (12, 3, 3)
    assert np.allclose(np.abs(tris), [0.1, 0.2, 0.3])
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    area = 0.5 * np.linalg.norm(normals, axis=1)
    assert np.isclose(area.sum(), 2 * (0.2 * 0.4 + 0.2 * 0.6 + 0.4 * 0.6))     # the box's surface, once


def test_off_mesh_rows_in_clearance_equal_coal(panda, monkeypatch):
    checker, names, Q = panda
    seen = []
    original = clearance._mesh_distances

    def recorded(world, tables, pt, T_shape, cfg, pair, ab, rest, out, slow):
        original(world, tables, pt, T_shape, cfg, pair, ab, rest, out, slow)
        for k in rest.tolist():
            seen.append((world, tables, int(ab[k, 0]), int(ab[k, 1]), T_shape[cfg[k], ab[k, 0]].copy(),
                         T_shape[cfg[k], ab[k, 1]].copy(), int(out.state[k]), float(out.distance[k]),
                         out.points[k].copy(), out.normal[k].copy(), out.subshapes[k].copy(), k in slow))

    monkeypatch.setattr(clearance, "_mesh_distances", recorded)
    for q in Q:
        checker.clearance(names, q, 0.5)
    assert len(seen) >= 20
    compiled = 0
    for world, tables, a, b, Ta, Tb, state, d, points, normal, sub, slow in seen:
        assert not slow and state == clearance._DONE
        d_coal, p0_coal, p1_coal = _coal_mesh(tables, a, b, Ta, Tb)
        assert abs(d - d_coal) <= AGREE_M
        assert np.allclose(points[1] - points[0], d * normal, atol=1e-15)
        assert np.isclose(np.linalg.norm(normal), 1.0)
        for s, (shape, T) in enumerate(((a, Ta), (b, Tb))):
            if tables.mesh_slot[shape] >= 0:          # the row's triangle holds its witness point
                assert _on_triangle(world, shape, T, int(sub[s]), points[s]) <= 1e-12
        compiled += all(tables.mesh_slot[s] >= 0 or tables.box[s] for s in (a, b))
    assert compiled >= len(seen) // 2


def test_every_apart_mesh_pair_equals_coal(panda):
    """The kernel on every apart pair of a closed mesh with a closed mesh or a box (not only the off-mesh ones), with
    the hulls' witness points and normal from coal: the meshes' distance, as coal's."""
    checker, names, Q = panda
    world = checker.scene.world
    tables = clearance._tables(world)
    n_shapes = len(world.shapes)
    usable = [s for s in range(n_shapes) if tables.first[s] is not None and (tables.mesh_slot[s] >= 0 or tables.box[s])]
    measured = 0
    for q in Q[:12]:
        T_shape = world.shape_transforms(world.robot.link_transforms(q))
        for i, a in enumerate(usable):
            for b in usable[i + 1:]:
                if tables.mesh_slot[a] < 0 and tables.mesh_slot[b] < 0:
                    continue
                Ta, Tb = T_shape[a], T_shape[b]
                result = coal.DistanceResult()
                h = coal.distance(tables.first[a], narrowphase.coal_transform(Ta), tables.first[b],
                                  narrowphase.coal_transform(Tb), clearance._HULL_REQUEST, result)
                if not h > 1e-6:
                    continue
                p0, p1 = np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())
                K = 1
                state = np.zeros(K, dtype=np.int8)
                distance = np.full(K, h)
                points = np.array([[p0, p1]])
                normal = ((p1 - p0) / np.linalg.norm(p1 - p0))[None]
                sub = np.full((K, 2), -1, dtype=np.int32)
                poses = np.stack([np.eye(4)] * n_shapes)[None].copy()
                poses[0, a], poses[0, b] = Ta, Tb
                left = mesh_surface_rows(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                                         np.array([[a, b]], dtype=np.int64),
                                         np.array([[tables.mesh_slot[a], tables.mesh_slot[b]]], dtype=np.int64),
                                         poses, tables.box, tables.convex.params, *tables.packed_meshes,
                                         1e6, 1, state, distance, points, normal, sub, np.zeros(1, dtype=np.int64))
                assert len(left) == 0
                d_coal = _coal_mesh(tables, a, b, Ta, Tb)[0]
                assert abs(distance[0] - d_coal) <= AGREE_M, (world.shapes[a].owner, world.shapes[b].owner)
                assert distance[0] >= h - 1e-9            # the hulls' distance is a lower bound
                measured += 1
    assert measured >= 100
