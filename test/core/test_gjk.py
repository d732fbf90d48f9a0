"""kernels/gjk.py: the compiled lower bound of convex solids' distance, against coal and exact cases."""
import coal
import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.geometry.hulls import hull_edges
from my_collision_pkg.core.geometry.shape_geometry import _coal_convex
from my_collision_pkg.core.kernels import gjk
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CYLINDER, KIND_MESH, KIND_SPHERE
from core_scenes import random_pose, random_rotation, reference_counts

EPS_M = 1e-7


def _pose(rng, spread_m=0.3):
    return random_pose(rng, spread_m)


@pytest.fixture(scope="module", params=["scanned", "climbed"])
def solids(request):
    """Five solids as gjk.ConvexArrays and as coal geometries: box, sphere, cylinder, capsule, a
    hull (its vertices scanned whole, or climbed along its edges)."""
    rng = np.random.default_rng(3)
    hull = trimesh.convex.convex_hull(rng.normal(size=(150, 3)) * [0.05, 0.08, 0.12])
    kinds = [KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_MESH]
    params = [[0.1, 0.05, 0.2], [0.07, 0, 0], [0.05, 0.15, 0], [0.04, 0.1, 0], [0, 0, 0]]
    vertex_sets = [np.zeros((0, 3))] * 4 + [np.asarray(hull.vertices)]
    edges = [[]] * 4 + [hull_edges(vertex_sets[4])] if request.param == "climbed" else None
    convex = gjk.convex_arrays(kinds, params, vertex_sets, edges)
    assert (len(convex.neighbours) > 0) == (request.param == "climbed")
    geoms = [coal.Box(0.2, 0.1, 0.4), coal.Sphere(0.07), coal.Cylinder(0.05, 0.3), coal.Capsule(0.04, 0.2),
             _coal_convex(np.asarray(hull.vertices), np.asarray(hull.faces))]
    return convex, geoms


def _coal_distance(geoms, a, Ta, b, Tb):
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = 1e-10
    return coal.distance(geoms[a], coal.Transform3s(Ta[:3, :3], Ta[:3, 3]), geoms[b],
                         coal.Transform3s(Tb[:3, :3], Tb[:3, 3]), request, coal.DistanceResult())


def test_the_bound_never_exceeds_coal_and_is_within_its_precision(solids):
    convex, geoms = solids
    rng = np.random.default_rng(11)
    apart = overlapping = 0
    for _ in range(3000):
        a, b = (int(i) for i in rng.integers(0, 5, 2))
        Ta, Tb = _pose(rng), _pose(rng)
        exact = _coal_distance(geoms, a, Ta, b, Tb)
        bound = gjk.lower_bound(convex, a, Ta, b, Tb, np.zeros(3), EPS_M, 0.0)
        if exact > 1e-9:
            apart += 1
            assert bound <= exact + 1e-9
            assert bound >= exact - 2 * EPS_M
        elif exact < -1e-6:
            overlapping += 1
            assert bound <= 1e-9           # overlapping solids: never a positive bound
    assert apart > 500 and overlapping > 200


def test_a_warm_start_gives_the_same_bound(solids):
    convex, geoms = solids
    rng = np.random.default_rng(5)
    Ta, Tb = np.eye(4), _pose(rng)
    Tb[:3, 3] = [0.45, 0.1, -0.05]
    warm = np.zeros(3)
    cold = gjk.lower_bound(convex, 4, Ta, 0, Tb, warm, EPS_M, 0.0)
    assert np.linalg.norm(warm) > 0.0               # the direction is kept for the next call
    again = gjk.lower_bound(convex, 4, Ta, 0, Tb, warm, EPS_M, 0.0)
    assert again == pytest.approx(cold, abs=2 * EPS_M)
    assert again <= _coal_distance(geoms, 4, Ta, 0, Tb) + 1e-9


@pytest.mark.parametrize("gap_m", [0.001, 0.02, 0.3])
def test_box_against_box_face_to_face_is_the_gap(solids, gap_m):
    convex, _ = solids
    Ta, Tb = np.eye(4), np.eye(4)
    Tb[0, 3] = 0.2 + gap_m                    # half extents 0.1 along x on both
    assert gjk.lower_bound(convex, 0, Ta, 0, Tb, np.zeros(3), EPS_M, 0.0) == pytest.approx(gap_m, abs=2 * EPS_M)


def test_sphere_against_capsule_end_is_exact(solids):
    convex, _ = solids
    Ta, Tb = np.eye(4), np.eye(4)
    Tb[2, 3] = 0.1 + 0.04 + 0.07 + 0.05       # capsule half length 0.1, radius 0.04; sphere 0.07; gap 0.05
    bound = gjk.lower_bound(convex, 3, Ta, 1, Tb, np.zeros(3), EPS_M, 0.0)
    assert bound == pytest.approx(0.05, abs=2 * EPS_M)


def test_the_nearest_point_of_a_triangle_is_found_inside_it():
    P = np.zeros((4, 3))
    P[:3] = [[1.0, -1.0, 0.5], [1.0, 1.0, 0.5], [1.0, 0.0, -1.0]]
    out = np.empty(3)
    kept = gjk.nearest_on_simplex(P, 3, out)
    assert kept == 3
    np.testing.assert_allclose(out, [1.0, 0.0, 0.0], atol=1e-12)
    P[:2] = [[2.0, 0.0, 0.0], [0.5, 0.0, 0.0]]        # a segment whose nearest point is its end
    assert gjk.nearest_on_simplex(P, 2, out) == 1
    np.testing.assert_allclose(out, [0.5, 0.0, 0.0])


def test_shapes_without_a_solid_are_not_supported():
    convex = gjk.convex_arrays([KIND_BOX, KIND_MESH], [[0.1, 0.1, 0.1], [0, 0, 0]], [np.zeros((0, 3))] * 2)
    assert convex.supported.tolist() == [True, False]


@pytest.mark.parametrize("points", [
    np.random.default_rng(8).normal(size=(300, 3)) * [0.05, 0.2, 0.1],
    # a box's surface sampled on a grid: flat faces of many coplanar points, hull vertices only at corners
    np.array([[x, y, z] for x in np.linspace(-1, 1, 7) for y in np.linspace(-1, 1, 5) for z in np.linspace(-1, 1, 4)
              if max(abs(x), abs(y), abs(z)) == 1.0]) * [0.1, 0.05, 0.02],
    np.asarray(trimesh.creation.icosphere(subdivisions=3, radius=0.08).vertices),
], ids=["random", "box_grid", "icosphere"])
def test_climbing_the_hull_finds_the_vertex_a_full_scan_finds(points):
    # from every probe start and from random vertices, along random directions: the climb ends
    # on a vertex exactly as far along the direction as the farthest of all
    convex = gjk.convex_arrays([KIND_MESH], [[0, 0, 0]], [points], [hull_edges(points)])
    assert len(convex.neighbours) > 0
    rng = np.random.default_rng(21)
    V = convex.vertices
    starts = [int(i) for i in convex.probes[0] if i >= 0]
    hull_vertices = np.flatnonzero(np.diff(convex.neighbour_start) > 0)
    for _ in range(400):
        d = rng.normal(size=3)
        along = V[:, 0] * d[0] + V[:, 1] * d[1] + V[:, 2] * d[2]      # the kernel's arithmetic
        farthest = np.max(along)
        # from the probes' best (at = -1), from each probe start and from a random hull vertex
        for start in [-1, *starts, int(rng.choice(hull_vertices))]:
            at = gjk.vertex_support(V, convex.neighbour_start, convex.neighbours, convex.probes, 0, 0, len(V), start,
                                    *d)
            assert along[at] == farthest


def test_a_flat_vertex_set_has_no_edges_and_is_scanned_whole():
    flat = np.random.default_rng(2).normal(size=(40, 3)) * [0.1, 0.1, 0.0]
    assert all(len(n) == 0 for n in hull_edges(flat))
    convex = gjk.convex_arrays([KIND_MESH], [[0, 0, 0]], [flat], [hull_edges(flat)])
    d = np.array([0.3, -0.8, 0.1])
    at = gjk.vertex_support(convex.vertices, convex.neighbour_start, convex.neighbours, convex.probes, 0, 0, len(flat),
                            0, *d)
    along = flat[:, 0] * d[0] + flat[:, 1] * d[1] + flat[:, 2] * d[2]
    assert along[at] == np.max(along)


def test_kept_hull_edges_are_computed_once_per_live_array(monkeypatch):
    # the same edges as hull_edges; qhull runs once per array while the array lives, again for
    # an equal but new array, and the array is not kept alive by it
    import weakref
    from my_collision_pkg.core.geometry import hulls
    points = np.random.default_rng(5).normal(size=(60, 3))
    calls = []
    plain = hulls.hull_edges
    monkeypatch.setattr(hulls, "hull_edges", lambda p: calls.append(1) or plain(p))
    first = hulls.kept_hull_edges(points)
    assert [e.tolist() for e in first] == [e.tolist() for e in plain(points)]
    assert hulls.kept_hull_edges(points) is first and len(calls) == 1
    copy = points.copy()
    assert [e.tolist() for e in hulls.kept_hull_edges(copy)] == [e.tolist() for e in first] and len(calls) == 2
    gone = weakref.ref(copy)
    del copy
    assert gone() is None


def _box_point_distance(half, T_box, points):
    """Exact distances of world points (N, 3) to a solid box (half sizes, pose)."""
    local = (points - T_box[:3, 3]) @ T_box[:3, :3]
    return np.linalg.norm(local - np.clip(local, -half, half), axis=1)


def test_cylinder_end_distances_are_exact_on_caps_and_rims():
    """A box (a hull of 8 vertices, climbed, and a box primitive) above a cylinder's end, beside or over its rim
    in random poses: the rows cylinder_end_distances settles are certified (the planes along their normal touching
    both solids within 1e-10 m of the distance), their points are on the box and on the cylinder's end, and the
    distance is the least of the box's height over the cap (where its lowest point is over it) and 20,000 rim
    points' exact distances to the box, within 1e-6 m (the sampling's resolution); the closed cases: cap (1 m)
    and edge over the rim (sqrt 2 m) exact."""
    rng = np.random.default_rng(7)
    half = np.array([0.5, 0.3, 0.2])
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half
    hull = trimesh.convex.convex_hull(corners)
    convex = gjk.convex_arrays([KIND_CYLINDER, KIND_BOX, KIND_MESH], [[1.0, 1.0, 0.0], half, [0, 0, 0]],
                               [np.zeros((0, 3)), np.zeros((0, 3)), hull.vertices],
                               [[], [], hull_edges(np.asarray(hull.vertices))])
    theta = np.linspace(0.0, 2 * np.pi, 20000, endpoint=False)
    rim = np.stack([np.cos(theta), np.sin(theta), np.ones_like(theta)], axis=1)
    poses = []
    for _ in range(150):
        T = np.eye(4)
        T[:3, :3] = random_rotation(rng)
        r = rng.uniform(0.0, 2.5)
        a = rng.uniform(0, 2 * np.pi)
        T[:3, 3] = [r * np.cos(a), r * np.sin(a), rng.uniform(1.9, 2.6)]
        poses.append(T)
    closed = [(np.array([0.2, 0.1, 1.0 + 1.0 + 0.2]), 1.0),                    # the box's face 1 m over the cap
              (np.array([1.0 + 1.0 + 0.5, 0.0, 1.0 + 1.0 + 0.2]), np.sqrt(2.0))]   # its edge (2, y, 2) over the rim
    for centre, _ in closed:
        T = np.eye(4)
        T[:3, 3] = centre
        poses.append(T)
    settled = 0
    for shape in (1, 2):
        n = len(poses)
        Tc = np.repeat(np.eye(4)[None], n, axis=0)
        Tb = np.stack(poses)
        a = np.zeros(n, dtype=np.int64)
        b = np.full(n, shape, dtype=np.int64)
        side = np.zeros(n, dtype=np.int64)
        d, p0, p1 = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3))
        got = np.zeros(n, dtype=bool)
        gjk.cylinder_side_distances(convex, a, b, side, Tc, Tb, 1e-12, d, p0, p1, got)
        side_rows = got.copy()
        gjk.cylinder_end_distances(convex, a, b, side, Tc, Tb, d, p0, p1, got)
        for k in np.flatnonzero(got & ~side_rows):
            settled += 1
            T = Tb[k]
            # the box's lowest point over the cap's inside (its height), else the nearest rim point
            low = T[:3, 3] - T[:3, :3] @ (np.sign(T[2, :3]) * half)
            truth = min(_box_point_distance(half, T, rim).min(),
                        low[2] - 1.0 if np.hypot(low[0], low[1]) <= 1.0 else np.inf)
            assert d[k] <= truth + 1e-12 and truth - d[k] <= 1e-6, (shape, k, d[k], truth)
            assert abs(np.linalg.norm(p1[k] - p0[k]) - d[k]) <= 1e-12
            n_ = (p1[k] - p0[k]) / d[k]
            box_low = n_ @ T[:3, 3] - np.abs(T[:3, :3].T @ n_) @ half           # min over the box of n . x
            cyl_high = np.hypot(n_[0], n_[1]) + abs(n_[2])                      # max over the cylinder
            assert -1e-12 <= d[k] - (box_low - cyl_high) <= 1e-10, (shape, k)
            assert abs(n_ @ p1[k] - box_low) <= 1e-12                           # p1 on the box's plane
            assert abs(p0[k, 2] - 1.0) <= 1e-12 and np.hypot(p0[k, 0], p0[k, 1]) <= 1.0 + 1e-12
        for (centre, exact), k in zip(closed, (n - 2, n - 1)):
            assert got[k] and not side_rows[k] and abs(d[k] - exact) <= 1e-12, (shape, k, d[k], exact)
    assert settled >= 200, settled


def test_the_distance_loops_helpers_take_no_reference_counts():
    # vertex_support, nearest_face_ab, posed_support and epa._support_world run a few times per GJK or EPA step:
    # numba's pruning pass removes every reference count on their array arguments (one exit, each argument read
    # last there, no compiled call inside: the note in kernels/gjk.py), which a second return, an argument's earlier
    # last use or a call to another compiled function undoes
    from my_collision_pkg.core.kernels import epa
    points = np.random.default_rng(6).normal(size=(60, 3))
    convex = gjk.convex_arrays([KIND_MESH, KIND_BOX], [[0, 0, 0], [0.1, 0.2, 0.3]], [points, np.zeros((0, 3))],
                               [hull_edges(points), []])
    c = convex
    assert reference_counts(gjk.vertex_support, c.vertices, c.neighbour_start, c.neighbours, c.probes, 0, 0,
                            len(points), -1, 0.3, -0.2, 0.9) == 0
    P, PA, PB = np.random.default_rng(4).normal(size=(3, 4, 3))
    P = PA - PB
    assert reference_counts(gjk.nearest_face_ab, P, PA, PB, 3, np.empty((3, 3)), np.empty(9)) == 0
    T = np.eye(4)
    assert reference_counts(gjk.posed_support, c.kind, c.params, c.vertex_start, c.vertices, c.neighbour_start,
                            c.neighbours, c.probes, 0, T, -1, 0.3, -0.2, 0.9) == 0
    assert reference_counts(epa._support_world, c.kind, c.params, c.vertex_start, c.vertices, c.neighbour_start,
                            c.neighbours, c.probes, 0, T, -1, 0.3, -0.2, 0.9, np.empty(3)) == 0
