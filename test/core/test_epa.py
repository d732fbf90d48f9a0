"""kernels/epa.py: the compiled penetration depth (GJK, then EPA) of overlapping convex solids, against exact
cases, coal's EPA and the minimum translation distance (the least overlap over directions)."""
import coal
import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.geometry.hulls import hull_edges
from my_collision_pkg.core.geometry.shape_geometry import _coal_convex
from my_collision_pkg.core.kernels import epa, gjk, mtd
from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                 KIND_MESH, KIND_SPHERE)
from core_scenes import random_pose

EPS_M = 1e-12          # EPA's gap between its bounds for two polytopes (the clearance's)
CURVED_EPS_M = 1e-9    # ... where a shape is curved


def _pose(rng, spread_m=0.12):
    return random_pose(rng, spread_m)


# box, sphere, cylinder, capsule, a hull (climbed along its edges), the same hull scanned whole, a cone
KINDS = [KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_MESH, KIND_CONVEX, KIND_CONE]
PARAMS = [[0.1, 0.05, 0.2], [0.07, 0, 0], [0.05, 0.15, 0], [0.04, 0.1, 0], [0, 0, 0], [0, 0, 0], [0.05, 0.1, 0]]
HULL, SCANNED, CONE = 4, 5, 6
POLYTOPES = {0, HULL, SCANNED}


@pytest.fixture(scope="module")
def solids():
    """The solids as gjk.ConvexArrays and as coal geometries."""
    rng = np.random.default_rng(3)
    hull = trimesh.convex.convex_hull(rng.normal(size=(150, 3)) * [0.05, 0.08, 0.12])
    vertices = np.asarray(hull.vertices)
    vertex_sets = [np.zeros((0, 3))] * 4 + [vertices, vertices, np.zeros((0, 3))]
    edges = [[]] * 4 + [hull_edges(vertices), [], []]
    convex = gjk.convex_arrays(KINDS, PARAMS, vertex_sets, edges)
    hull_geometry = _coal_convex(vertices, np.asarray(hull.faces))
    geoms = [coal.Box(0.2, 0.1, 0.4), coal.Sphere(0.07), coal.Cylinder(0.05, 0.3), coal.Capsule(0.04, 0.2),
             hull_geometry, hull_geometry, coal.Cone(0.05, 0.2)]
    return convex, geoms, vertex_sets


def _epa(convex, a, Ta, b, Tb):
    """(answered, distance, p0, p1) of one row."""
    out = np.zeros(1), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros(1, dtype=bool)
    epa.penetration_distances(convex, np.array([a]), np.array([b]), Ta[None].copy(), Tb[None].copy(), EPS_M,
                              CURVED_EPS_M, *out)
    return bool(out[3][0]), float(out[0][0]), out[1][0], out[2][0]


def _coal(geoms, a, Ta, b, Tb):
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = 1e-12
    request.epa_tolerance = 1e-9
    result = coal.DistanceResult()
    d = coal.distance(geoms[a], coal.Transform3s(Ta[:3, :3], Ta[:3, 3]), geoms[b],
                      coal.Transform3s(Tb[:3, :3], Tb[:3, 3]), request, result)
    return d, np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())


def _mtd_body(vertex_sets, s):
    """(kind, params, vertices) as kernels.mtd takes a body."""
    kind = KIND_CONVEX if s in (HULL, SCANNED) else KINDS[s]
    vertices = vertex_sets[s] if s in (HULL, SCANNED) else np.zeros((1, 3))
    return kind, np.asarray(PARAMS[s], dtype=float), np.ascontiguousarray(vertices)


def _sphere_directions(count, rng):
    d = rng.normal(size=(count, 3))
    return d / np.linalg.norm(d, axis=1)[:, None]


def test_random_overlaps_are_the_mtd(solids):
    """Every overlapping pair GJK finds is answered (but cones), its depth is the overlap along its normal, no
    direction of 4,000 gives less, coal's EPA depth agrees within its precision, the answer passes the clearance's
    MTD check, and the witness points are on their solids, the depth apart along the normal."""
    convex, geoms, vertex_sets = solids
    rng = np.random.default_rng(17)
    sphere = _sphere_directions(4000, rng)
    counted = {"polytopes": 0, "curved": 0, "cone": 0, "left": 0, "coal failed": 0}
    values = np.empty(len(sphere))
    for _ in range(1500):
        a, b = (int(i) for i in rng.integers(0, len(KINDS), 2))
        Ta, Tb = _pose(rng), _pose(rng)
        coal_d, _, _ = _coal(geoms, a, Ta, b, Tb)
        answered, d, p0, p1 = _epa(convex, a, Ta, b, Tb)
        if CONE in (a, b):
            assert not answered
            counted["cone"] += 1
            continue
        if coal_d > -1e-6:
            assert not answered or d > -1e-6      # apart or touching: at most a tiny depth
            continue
        # the clearance's rows: two polytopes, a polytope and a cylinder; other curved pairs may need more than
        # EPA_MAX_VERTICES to reach CURVED_EPS_M (left to coal then)
        if (a in POLYTOPES or b in POLYTOPES) and {a, b} <= POLYTOPES | {2}:
            assert answered, (a, b)
        if not answered:
            counted["left"] += 1
            continue
        depth = -d
        normal = (p0 - p1) / np.linalg.norm(p0 - p1)
        assert np.allclose(p0 - p1, depth * normal, atol=1e-15)
        body_a, body_b = _mtd_body(vertex_sets, a), _mtd_body(vertex_sets, b)
        along = np.empty(1)
        mtd.overlaps(*body_a, Ta, *body_b, Tb, normal[None], along)
        polytopes = a in POLYTOPES and b in POLYTOPES
        assert abs(along[0] - depth) <= 1e-12                      # the overlap along the normal, exactly
        mtd.overlaps(*body_a, Ta, *body_b, Tb, sphere, values)
        assert values.min() >= depth - (1e-12 if polytopes else 2e-9)
        if coal_d > -1.0:                                           # (coal's EPA fails on some: -DBL_MAX)
            assert abs(depth - -coal_d) <= 1e-7                     # coal's EPA: within ~1e-8 of the MTD
        else:
            counted["coal failed"] += 1
        tol = penetration.CHECK_ABS_M + penetration.CHECK_REL * depth
        assert mtd.check_mtd(*body_a, Ta, *body_b, Tb, normal, depth, tol, penetration.LOCAL_CHECK_RAD)
        # p0 on A's surface facing B (A's support along n), p1 = p0 - depth n on B's (B's support along -n)
        h_a, h_b = np.empty(1), np.empty(1)
        mtd.overlaps(*body_a, Ta, 0, np.zeros(3), np.zeros((1, 3)), np.eye(4), normal[None], h_a)
        mtd.overlaps(*body_b, Tb, 0, np.zeros(3), np.zeros((1, 3)), np.eye(4), -normal[None], h_b)
        assert abs(h_a[0] - normal @ p0) <= (1e-12 if polytopes else 2e-9)
        assert abs(h_b[0] + normal @ p1) <= (1e-12 if polytopes else 2e-9)
        counted["polytopes" if polytopes else "curved"] += 1
    assert counted["polytopes"] > 100 and counted["curved"] > 300 and counted["cone"] > 50
    assert counted["left"] <= counted["curved"] // 10


def test_climbed_and_scanned_hulls_give_the_same_depth(solids):
    """A hull climbed along its edges and scanned whole: the same depth (to rounding: where several vertices tie
    along a face's normal, the two may take different ones)."""
    convex, _, _ = solids
    rng = np.random.default_rng(23)
    same = 0
    for _ in range(200):
        other = int(rng.integers(0, 4))
        Ta, Tb = _pose(rng), _pose(rng)
        climbed = _epa(convex, HULL, Ta, other, Tb)
        scanned = _epa(convex, SCANNED, Ta, other, Tb)
        if climbed[0]:
            assert scanned[0] and abs(climbed[1] - scanned[1]) <= 1e-12
            same += 1
    assert same > 50


@pytest.mark.parametrize("shift", [[0.15, 0.02, 0.01], [0.01, 0.08, -0.02], [0.02, -0.01, 0.35]])
def test_boxes_face_to_face_are_exact(solids, shift):
    """Two equal axis-aligned boxes (half sides 0.1, 0.05, 0.2) shifted by ``shift``: the depth is the least overlap
    over the three axes, along that axis."""
    convex, _, _ = solids
    Tb = np.eye(4)
    Tb[:3, 3] = shift
    answered, d, p0, p1 = _epa(convex, 0, np.eye(4), 0, Tb)
    overlap = 2 * np.array(PARAMS[0]) - np.abs(shift)
    axis = int(np.argmin(overlap))
    assert answered
    assert abs(-d - overlap[axis]) <= 1e-15
    normal = (p0 - p1) / np.linalg.norm(p0 - p1)
    assert np.allclose(normal, np.sign(shift[axis]) * np.eye(3)[axis], atol=1e-15)


def test_spheres_are_the_centre_line(solids):
    convex, _, _ = solids
    rng = np.random.default_rng(29)
    count = 0
    for _ in range(20):
        centre = rng.normal(size=3)
        centre *= rng.uniform(0.01, 0.13) / np.linalg.norm(centre)
        Tb = np.eye(4)
        Tb[:3, 3] = centre
        answered, d, p0, p1 = _epa(convex, 1, np.eye(4), 1, Tb)
        if not answered:                  # (more than EPA_MAX_VERTICES to reach 1e-9: left to coal)
            continue
        count += 1
        assert abs(-d - (0.14 - np.linalg.norm(centre))) <= 2e-9
        normal = (p0 - p1) / np.linalg.norm(p0 - p1)
        # the overlap along a normal theta off the centre line is |c| (1 - cos theta) more: within 2e-9 m
        assert np.linalg.norm(normal - centre / np.linalg.norm(centre)) <= np.sqrt(4e-9 / np.linalg.norm(centre))
    assert count >= 10


def test_apart_and_touching_solids_are_not_answered(solids):
    convex, _, _ = solids
    for gap in (0.5, 1e-3, 0.0):
        Tb = np.eye(4)
        Tb[0, 3] = 0.2 + gap                                        # box faces x = 0.1 and 0.1 + gap
        assert not _epa(convex, 0, np.eye(4), 0, Tb)[0]
    Tb = np.eye(4)
    Tb[0, 3] = 0.2 - 1e-11                                          # a depth below EPA_MIN_DEPTH_M
    assert not _epa(convex, 0, np.eye(4), 0, Tb)[0]


def test_epa_from_the_distance_gjks_tetrahedron_is_the_same_answer(solids):
    """The clearance's polytope rows take EPA from the tetrahedron their distance's GJK ended with
    (gjk.hull_distances keeps it, epa.expand_tetrahedra expands it): the answer of penetration_distances, which
    runs a GJK of its own, bit for bit, on overlapping polytope pairs (hulls climbed and scanned, boxes)."""
    convex, _, _ = solids
    rng = np.random.default_rng(29)
    kinds = sorted(POLYTOPES)
    a = np.array([kinds[i] for i in rng.integers(0, 3, 300)])
    b = np.array([kinds[i] for i in rng.integers(0, 3, 300)])
    Ta = np.array([_pose(rng, 0.06) for _ in range(300)])
    Tb = np.array([_pose(rng, 0.06) for _ in range(300)])
    d, p0, p1 = np.zeros(300), np.zeros((300, 3)), np.zeros((300, 3))
    got, tetrahedra, inside = np.zeros(300, dtype=bool), np.zeros((300, 3, 4, 3)), np.zeros(300, dtype=bool)
    gjk.hull_distances(convex, a, b, Ta, Tb, EPS_M, d, p0, p1, got, tetrahedra, inside,
                       np.zeros((300, 2), dtype=np.int64))
    assert not (inside & got).any()
    rows = np.flatnonzero(inside)
    assert len(rows) > 150
    from_tet = np.zeros(len(rows)), np.zeros((len(rows), 3)), np.zeros((len(rows), 3)), np.zeros(len(rows), bool)
    epa.expand_tetrahedra(convex, a[rows], b[rows], Ta[rows], Tb[rows], tetrahedra[rows], EPS_M, *from_tet)
    own = np.zeros(len(rows)), np.zeros((len(rows), 3)), np.zeros((len(rows), 3)), np.zeros(len(rows), bool)
    epa.penetration_distances(convex, a[rows], b[rows], Ta[rows], Tb[rows], EPS_M, CURVED_EPS_M, *own)
    assert from_tet[3].sum() > 150 and (from_tet[3] == own[3]).all()
    for x, y in zip(from_tet, own):
        assert x.tobytes() == y.tobytes()
    # every answer is penetrating: minus the overlap, p1 = p0 - depth n
    assert (from_tet[0][from_tet[3]] < 0).all()
