"""The on-mesh check of apart mesh rows (``kernels.clearance_rows.check_on_meshes``) tries each hull witness point
on the few mesh triangles with a corner at the hull vertex farthest along the row's normal before projecting it onto
its mesh: on Panda configurations with config/panda_world.yaml at 0.5 m, its decisions are the projection's, row by
row, the rows' numbers byte-identical, and every triangle it gives is within ON_MESH_M of the witness point."""
import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance
from my_collision_pkg.core.checks.clearance import ON_MESH_M
from my_collision_pkg.core.kernels import clearance_rows as cr
from my_collision_pkg.core.kernels.mesh_queries import closest_on_triangle
from my_collision_pkg.core.kernels.witness_check import hull_vertex_triangles, project_onto_meshes
from core_scenes import panda_world_checker

INFLUENCE_M = 0.5


@pytest.fixture(scope="module")
def captured():
    """(world tables, the settle_rows calls' arguments) of single clearance calls on 150 Panda configurations
    (the steps one by one, so that settle_rows is called from Python)."""
    checker, names, Q = panda_world_checker(150)
    calls = []
    settle = clearance.settle_rows

    def kept(*args):
        calls.append(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
        return settle(*args)

    mp = pytest.MonkeyPatch()
    mp.setattr(clearance, "_single_rows", clearance._posed_rows)
    mp.setattr(clearance, "settle_rows", kept)
    try:
        for q in Q:
            assert checker.clearance(names, q, INFLUENCE_M).ok
    finally:
        mp.undo()
    tables = clearance._tables(checker.scene.world)
    yield checker.scene.world, tables, calls
    checker.close()


def _projection_world(tables):
    """The clearance tables' row world without the hull vertices' triangles: every witness point projected."""
    return cr.pack_row_world(tables.convex, tables.packed_meshes, tables.shape_link, tables.owner_link,
                             tables.owner_offset, tables.mk.child_link, tables.mk.axis, tables.mk.prismatic,
                             tables.chain)


def _settle(args, row_world, on_mesh_d2=None):
    """settle_rows on a captured call's inputs, into fresh copies of its outputs: (outputs, returned)."""
    out = [a.copy() for a in args[18:23]]
    head = [a.copy() if isinstance(a, np.ndarray) else a for a in args[:18]]
    if on_mesh_d2 is not None:
        head[15] = on_mesh_d2
    returned = cr.settle_rows(*head[:8], *row_world, *head[10:18], *out, args[23])
    return out, returned


def _local(T, p):
    """p (planning frame) in the frame of pose T, as witness_check.project_onto_meshes computes it."""
    local = np.empty(3)
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += T[u, i] * (p[u] - T[u, 3])
        local[i] = acc
    return local


def _triangle_distance_m(world, shape, T, p, t):
    """Distance from p (planning frame) to triangle t of the shape's mesh (mesh frame)."""
    local = _local(T, p)
    nearest = np.empty(3)
    closest_on_triangle(local, world.shapes[shape].geometry.triangles_shape, int(t), nearest)
    return float(np.linalg.norm(nearest - local))


def test_hull_vertices_are_mesh_vertices(captured):
    """Every Panda hull vertex has mesh triangles (qhull keeps the input points), each with a corner there."""
    world, tables, _ = captured
    start, triangles = tables.hull_triangles
    convex = tables.convex
    checked = np.flatnonzero(tables.mesh_slot >= 0)
    assert len(checked) >= 9
    for s in checked:
        mesh = world.shapes[s].geometry.triangles_shape
        for v in range(convex.vertex_start[s], convex.vertex_start[s + 1]):
            mine = triangles[start[v]:start[v + 1]]
            assert len(mine) >= 3 and np.all(np.diff(mine) > 0)
            assert all((mesh[t] == convex.vertices[v]).all(axis=1).any() for t in mine)
            every = np.flatnonzero((mesh == convex.vertices[v]).all(axis=2).any(axis=1))
            assert mine.tolist() == every.tolist()
    # shapes without a packed mesh (boxes, the convex hand parts): no triangles
    for s in np.flatnonzero(tables.mesh_slot < 0):
        assert start[convex.vertex_start[s + 1]] == start[convex.vertex_start[s]]


def test_shortcut_decides_as_the_projection(captured):
    """Row by row the same states, rows left and numbers as with every witness point projected; the subshapes that
    differ name triangles within ON_MESH_M of the point."""
    world, tables, calls = captured
    projected = _projection_world(tables)
    n_done = n_other_triangle = 0
    for args in calls:
        (dist_a, pts_a, nrm_a, state_a, sub_a), (slow_a, rest_a, over_a) = _settle(args, tables.row_world)
        (dist_b, pts_b, nrm_b, state_b, sub_b), (slow_b, rest_b, over_b) = _settle(args, projected)
        assert state_a.tolist() == state_b.tolist()
        assert rest_a.tolist() == rest_b.tolist() and slow_a.tolist() == slow_b.tolist()
        assert over_a.tolist() == over_b.tolist()
        for x, y in ((dist_a, dist_b), (pts_a, pts_b), (nrm_a, nrm_b)):
            assert x.tobytes() == y.tobytes()
        cfg, pair, T_shape, pair_i = args[5], args[6], args[7], args[11]
        pairs = cr._i2(pair_i, cr._P_PAIRS)
        n_done += int(np.sum(state_b == args[16]))
        for k, s in zip(*np.nonzero(sub_a != sub_b)):
            n_other_triangle += 1
            assert sub_a[k, s] >= 0
            shape = pairs[pair[k], s]
            d = _triangle_distance_m(world, shape, T_shape[cfg[k], shape], pts_a[k, s], sub_a[k, s])
            assert d <= ON_MESH_M, (k, s, d)
    # the rows settled are many, and the shortcut's triangles differ from the projection's on some
    assert n_done >= 3000 and n_other_triangle >= 100, (n_done, n_other_triangle)


def test_each_side_on_its_hull_vertex_triangles(captured):
    """Side by side (every mesh side of every apart mesh row): a triangle found among the hull vertex's triangles is
    within ON_MESH_M of the point and the projection finds the side on its mesh too; and on the Panda the few
    triangles settle every side the projection finds on its mesh."""
    world, tables, calls = captured
    projected = _projection_world(tables)
    convex = tables.convex
    start, hull_triangles = tables.hull_triangles
    triangle_start, node_start, triangles, bounds, nodes, order, face_normals = tables.packed_meshes
    on_mesh_d2 = ON_MESH_M ** 2
    n_sides = n_found = n_on = 0
    for args in calls:
        # the rows' state before the check: every apart mesh row left to check (nothing is within -1)
        (_, pts, nrm, state, _), _ = _settle(args, projected, on_mesh_d2=-1.0)
        cfg, pair, T_shape, pair_i = args[5], args[6], args[7], args[11]
        pairs = cr._i2(pair_i, cr._P_PAIRS)
        slots = cr._i2(pair_i, cr._P_MESH_SLOT)
        for k in np.flatnonzero(state == args[17]):
            for s in range(2):
                m = slots[pair[k], s]
                if m < 0:
                    continue
                shape = pairs[pair[k], s]
                T = T_shape[cfg[k], shape]
                sign = 1.0 if s == 0 else -1.0
                t = cr._on_support_triangles(pts[k, s], sign * nrm[k, 0], sign * nrm[k, 1], sign * nrm[k, 2], -1, T,
                                             shape, convex.vertex_start, convex.vertices, convex.neighbour_start,
                                             convex.neighbours, convex.probes, start, hull_triangles,
                                             triangles[triangle_start[m]:triangle_start[m + 1]], on_mesh_d2,
                                             np.empty(3), np.empty(3))
                d2 = np.empty(1)
                nearest = np.empty(1, dtype=np.int64)
                project_onto_meshes(pts[k, s][None].copy(), T[None].copy(), np.array([m]), triangle_start, node_start,
                                    triangles, bounds, nodes, order, face_normals, d2, nearest,
                                    clearance._ON_MESH_SEARCH_D2)
                on = d2[0] <= on_mesh_d2 and nearest[0] >= 0
                n_sides += 1
                n_on += on
                if t >= 0:
                    n_found += 1
                    assert on
                    assert _triangle_distance_m(world, shape, T, pts[k, s], t) <= ON_MESH_M
    assert n_sides >= 5000 and n_on > 0.9 * n_sides, (n_sides, n_on)
    assert n_found == n_on, (n_found, n_on)


def test_no_shortcut_without_tables():
    """hull_vertex_triangles of no mesh: empty lists for every vertex; a hull vertex not on its mesh: none."""
    start, triangles = hull_vertex_triangles(np.array([0, 2], dtype=np.int64), np.zeros((2, 3)), [], [])
    assert start.tolist() == [0, 0, 0] and len(triangles) == 0
    tetra = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    faces = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    hull = np.vstack([tetra, [[2.0, 2.0, 2.0]]])
    start, triangles = hull_vertex_triangles(np.array([0, 5], dtype=np.int64), hull, [0], [tetra[faces]])
    assert [triangles[start[v]:start[v + 1]].tolist() for v in range(5)] == [[0, 1, 3], [0, 1, 2], [0, 2, 3],
                                                                            [1, 2, 3], []]


def test_falls_back_to_the_projection():
    """A box whose top face is a fan of four triangles around its centre (a vertex inside the hull's face, not a
    hull vertex): a point on the fan triangle away from the hull vertex farthest along the normal is not within
    ON_MESH_M of that vertex's triangles, and the projection settles it; a point just above the face is off the mesh
    both ways; a point at the centre is settled on the vertex's triangles. Each decision and triangle is that of
    the check without the shortcut, but where the point lies on several triangles (the centre)."""
    from my_collision_pkg.core.geometry.hulls import hull_edges
    from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_MESH
    from my_collision_pkg.core.kernels.gjk import convex_arrays
    from my_collision_pkg.core.kernels.mesh_queries import MeshTree
    from my_collision_pkg.core.kernels.witness_check import pack_meshes
    h = 0.1
    corners = np.array([[x, y, z] for z in (-h, h) for y in (-h, h) for x in (-h, h)])    # index x + 2 y + 4 z
    vertices = np.vstack([corners, [[0.0, 0.0, h]]])                                      # 8: the top face's centre
    faces = np.array([[0, 2, 3], [0, 3, 1],                                  # bottom (-z)
                      [8, 4, 5], [8, 5, 7], [8, 7, 6], [8, 6, 4],            # top (+z), a fan around 8
                      [0, 1, 5], [0, 5, 4], [2, 6, 7], [2, 7, 3],            # -y, +y
                      [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]])           # -x, +x
    triangles = np.ascontiguousarray(vertices[faces])
    tree = MeshTree.of(vertices, faces)
    assert tree.manifold
    packed = pack_meshes([tree], [triangles])
    hull = convex_arrays([KIND_MESH, KIND_BOX], np.full((2, 3), h), [corners, np.zeros((0, 3))],
                         [hull_edges(corners), []])
    tables = hull_vertex_triangles(hull.vertex_start, hull.vertices, [0], [triangles])
    no_tables = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    # the normal tilted so that the hull vertex farthest along it is corner 4 (-h, -h, h)
    normal = np.array([-1e-3, -1e-3, 1.0]) / np.linalg.norm([-1e-3, -1e-3, 1.0])
    points = np.array([[[0.09, 0.0, h], [0.0, 0.0, 1.0]],          # on fan triangle 3 (8, 5, 7), +x side
                       [[0.09, 0.0, h + 1e-6], [0.0, 0.0, 1.0]],   # above the face: off the mesh
                       [[0.0, 0.0, h], [0.0, 0.0, 1.0]]])          # the centre: on every fan triangle
    answers = []
    for hull_triangles in (tables, no_tables):
        state = np.full(3, 2, dtype=np.int8)
        subshapes = np.full((3, 2), -1, dtype=np.int32)
        rest = cr.check_on_meshes(state, points.copy(), np.repeat(normal[None], 3, axis=0), np.full((3, 2), -1),
                                  np.eye(4)[None, None].repeat(2, axis=1), np.zeros(3, dtype=np.int64),
                                  np.repeat([[0, 1]], 3, axis=0), np.repeat([[0, -1]], 3, axis=0),
                                  np.repeat([[True, False]], 3, axis=0), 2, 1, ON_MESH_M ** 2, *packed,
                                  hull.vertex_start, hull.vertices, hull.neighbour_start, hull.neighbours, hull.probes,
                                  *hull_triangles, subshapes, clearance._ON_MESH_SEARCH_D2)
        answers.append((state.tolist(), rest.tolist(), subshapes[:, 0].tolist()))
    (state, rest, sub), (state_p, rest_p, sub_p) = answers
    assert state == state_p == [1, 2, 1] and rest == rest_p == [1]
    assert sub[0] == sub_p[0] == 3      # projected: triangle 3 has no corner at corner 4 (triangles 2, 5, 7, 10)
    assert sub[2] == 2 and sub_p[2] in (2, 3, 4, 5)    # corner 4's first triangle; the projection's: a fan one
