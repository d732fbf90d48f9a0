"""The compiled MTD check and search (kernels.mtd) against penetration's numpy reference.

Every pairing of the five primitive kinds and a convex vertex set (an irregular polytope), posed at
random so that they overlap: the overlaps along many directions are the same; the check says the
same of coal's answer, of a wrong depth and of a wrong normal; the search finds the depth the numpy
reference finds, and the overlap along its direction is that depth. other_basin_gap answers as the
function before session 44 (every face past the witness bound fully scanned) on Panda's penetrating rows, and
its kept-vertex bound never skips a face within the margin.
"""
from __future__ import annotations

import itertools

import coal
import numpy as np
import pytest
import trimesh
from numba import njit

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.checks.penetration import Body
from my_collision_pkg.core.kernels import mtd
from my_collision_pkg.core.kernels.mtd import (MAX_CANDIDATES, _face_overlap, _kept_face_overlap, _overlap, _refine,
                                              _support, candidate_directions)
from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                KIND_SPHERE)
from core_scenes import random_rotation, reference_counts

SEED = 1_717
POSES_PER_PAIRING = 4
DEPTH_TOL_M = 1e-9          # the two paths differ by rounding only (sums in another order)
_ROUND = {KIND_BOX: (0.04, 0.03, 0.05), KIND_SPHERE: (0.05, 0.0, 0.0), KIND_CYLINDER: (0.04, 0.06, 0.0),
          KIND_CAPSULE: (0.03, 0.05, 0.0), KIND_CONE: (0.05, 0.06, 0.0)}
KINDS = (KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_CONE, KIND_CONVEX)


def _hull_vertices() -> np.ndarray:
    """A convex vertex set: an elongated, irregular polytope (a rock) about the origin."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(60, 3)) * np.array([0.05, 0.035, 0.06])
    hull = trimesh.convex.convex_hull(points)
    return np.array(hull.vertices, dtype=float)


HULL = _hull_vertices()


def _body(kind: int, T: np.ndarray) -> Body:
    if kind == KIND_CONVEX:
        return Body(KIND_CONVEX, np.zeros(3), T, HULL)
    return Body(kind, np.array(_ROUND[kind]), T)


def _coal_shape(kind: int):
    p = _ROUND.get(kind)
    if kind == KIND_BOX:
        return coal.Box(*(2.0 * np.array(p)))
    if kind == KIND_SPHERE:
        return coal.Sphere(p[0])
    if kind == KIND_CYLINDER:
        return coal.Cylinder(p[0], 2.0 * p[1])
    if kind == KIND_CAPSULE:
        return coal.Capsule(p[0], 2.0 * p[1])
    if kind == KIND_CONE:
        return coal.Cone(p[0], 2.0 * p[1])
    hull = trimesh.convex.convex_hull(HULL)
    model = coal.BVHModelOBBRSS()
    model.beginModel(len(hull.faces), len(hull.vertices))
    model.addVertices(np.asarray(hull.vertices, dtype=float))
    model.addTriangles(np.asarray(hull.faces, dtype=np.int32))
    model.endModel()
    model.buildConvexHull(True, "Qt")
    return model.convex


def _posed_pairs():
    rng = np.random.default_rng(SEED)
    for kind_a, kind_b in itertools.product(KINDS, KINDS):
        for _ in range(POSES_PER_PAIRING):
            T_a, T_b = np.eye(4), np.eye(4)
            T_a[:3, :3], T_b[:3, :3] = random_rotation(rng), random_rotation(rng)
            T_a[:3, 3] = rng.uniform(-0.01, 0.01, 3)
            T_b[:3, 3] = T_a[:3, 3] + rng.uniform(-0.05, 0.05, 3)
            yield kind_a, kind_b, T_a, T_b


def _coal_answer(kind_a, kind_b, T_a, T_b):
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = request.epa_tolerance = 1e-9
    result = coal.DistanceResult()
    distance = coal.distance(_coal_shape(kind_a), coal.Transform3s(T_a[:3, :3].copy(), T_a[:3, 3].copy()),
                             _coal_shape(kind_b), coal.Transform3s(T_b[:3, :3].copy(), T_b[:3, 3].copy()),
                             request, result)
    return float(distance), np.array(result.normal)


PAIRS = list(_posed_pairs())


@pytest.mark.parametrize("kind_a, kind_b", list(itertools.product(KINDS, KINDS)))
def test_overlaps_equal_numpy(kind_a, kind_b):
    directions = penetration.fibonacci_sphere(200)
    for ka, kb, T_a, T_b in PAIRS:
        if (ka, kb) != (kind_a, kind_b):
            continue
        a, b = _body(ka, T_a), _body(kb, T_b)
        out = np.empty(len(directions))
        mtd.overlaps(*a.kernel_arguments(), *b.kernel_arguments(), directions, out)
        np.testing.assert_allclose(out, penetration.overlap(a, b, directions), rtol=0.0, atol=1e-12)


def test_candidates_equal_numpy():
    for ka, kb, T_a, T_b in PAIRS:
        a, b = _body(ka, T_a), _body(kb, T_b)
        out = np.empty((mtd.MAX_CANDIDATES, 3))
        count = mtd.candidate_directions(ka, a.params, a.T, kb, b.params, b.T, np.zeros((0, 3)), out)
        np.testing.assert_allclose(out[:count], penetration.candidates(a, b), rtol=0.0, atol=1e-12)


def test_check_and_search_equal_numpy():
    """coal's answer, a wrong depth and a wrong normal, on every pair that penetrates: same verdict of the
    check, same depth (and normal, where the search's minimum is unique) from the search."""
    checked = searched = 0
    for index, (ka, kb, T_a, T_b) in enumerate(PAIRS):
        distance, normal = _coal_answer(ka, kb, T_a, T_b)
        if not distance < -1e-4:
            continue
        a, b = _body(ka, T_a), _body(kb, T_b)
        # coal's answer on every pair; a wrong normal or a wrong depth (each a search) on every other one
        wrong = (-distance * 1.5, normal) if index % 2 else (-distance, np.array([0.3, -0.8, 0.52]))
        for depth, n in ((-distance, normal), wrong):
            ok, direction, value = penetration.checked_mtd(a, b, depth, n)
            ok_ref, direction_ref, value_ref = penetration.checked_mtd_reference(a, b, depth, n)
            assert ok == ok_ref, (ka, kb, depth)
            assert value == pytest.approx(value_ref, abs=DEPTH_TOL_M), (ka, kb)
            checked += 1
            if not ok:
                searched += 1
                assert np.linalg.norm(direction) == pytest.approx(1.0, abs=1e-12)
                # the overlap along the compiled direction is its depth, and no direction of the reference is better
                assert float(penetration.overlap(a, b, direction[None])[0]) == pytest.approx(value, abs=1e-12)
                assert value <= value_ref + DEPTH_TOL_M
    assert checked > 100 and searched > 50          # the pairs exercise both the check and the search


def test_search_finds_the_known_mtd():
    """A unit box 10 mm into a large box's face: the search (no seed) finds 10 mm along the face normal."""
    T_b = np.eye(4)
    T_b[2, 3] = 0.5 + 0.05 - 0.01
    a = Body(KIND_BOX, np.array([0.5, 0.5, 0.5]), np.eye(4))
    b = Body(KIND_BOX, np.array([0.05, 0.05, 0.05]), T_b)
    ok, n, depth = penetration.checked_mtd(a, b, np.nan, np.zeros(3))
    assert not ok
    assert depth == pytest.approx(0.01, abs=1e-9)
    np.testing.assert_allclose(n, [0.0, 0.0, 1.0], atol=1e-6)


POLISHED = (KIND_BOX, KIND_CYLINDER, KIND_CONVEX)


def test_polish_reaches_the_exact_local_minimum_from_coal_answer():
    """issue 40: from coal's EPA answer (depth within about 1e-7 m), polish_mtd's normal is a local minimum of the
    overlap to rounding (a pattern search from it down to 1e-13 rad finds nothing 1e-12 m lower), its depth is
    the overlap along it, and it is never deeper than coal's; some answers move (EPA's are not exact)."""
    polished = moved = 0
    for ka, kb, T_a, T_b in PAIRS:
        if ka not in POLISHED or kb not in POLISHED or ka == kb == KIND_CYLINDER:
            continue
        distance, normal = _coal_answer(ka, kb, T_a, T_b)
        if not distance < -1e-4:
            continue
        a, b = _body(ka, T_a), _body(kb, T_b)
        n = normal / np.linalg.norm(normal)
        along = penetration.overlap(a, b, n[None])[0]
        out = np.empty(3)
        depth = mtd.polish_mtd(*a.kernel_arguments(), *b.kernel_arguments(), n, -distance, out)
        assert np.linalg.norm(out) == pytest.approx(1.0, abs=1e-12)
        assert float(penetration.overlap(a, b, out[None])[0]) == pytest.approx(depth, abs=1e-15)
        assert depth <= along + 1e-15
        fine = np.empty(3)
        best = mtd.search_mtd(*a.kernel_arguments(), *b.kernel_arguments(), out[None].copy(), np.zeros((0, 3)), 1,
                              1e-3, 1e-13, fine)
        if float(fine @ out) > 0.99:            # (the search's seed may be another, deeper, candidate)
            assert best >= depth - 1e-12, (ka, kb, depth - best)
        polished += 1
        moved += depth < along - 1e-12
    assert polished >= 20 and moved >= 1, (polished, moved)


def test_checked_answers_are_polished_and_others_kept():
    """checked_mtd polishes coal's accepted answer for vertex sets, boxes and cylinders (the depth the overlap
    along the normal, never deeper than coal's overlap); spheres, capsules and cones keep coal's depth."""
    for ka, kb, T_a, T_b in PAIRS:
        distance, normal = _coal_answer(ka, kb, T_a, T_b)
        if not distance < -1e-4:
            continue
        a, b = _body(ka, T_a), _body(kb, T_b)
        ok, n, depth = penetration.checked_mtd(a, b, -distance, normal)
        if not ok:
            continue
        if ka in POLISHED and kb in POLISHED and not ka == kb == KIND_CYLINDER:
            assert float(penetration.overlap(a, b, n[None])[0]) == pytest.approx(depth, abs=1e-15)
            assert depth <= float(penetration.overlap(a, b, (normal / np.linalg.norm(normal))[None])[0]) + 1e-15
        else:
            assert depth == -distance


def _kernel_body(kind: int, T: np.ndarray) -> tuple:
    """(kind, params, vertices, pose) as the kernels of ``kernels.mtd`` take a body."""
    if kind == KIND_CONVEX:
        return KIND_CONVEX, np.zeros(3), HULL, T
    return kind, np.array(_ROUND[kind], dtype=float), np.zeros((1, 3)), T


def test_check_least_and_polish_from_it_equal_check_and_polish():
    """check_mtd_least holds where check_mtd does; polish_checked_least given its least overlap returns the same bits
    (depth and normal) as polish_checked, where the polish moves the normal and where it leaves it."""
    kept = moved = 0
    for ka, kb, T_a, T_b in PAIRS:
        distance, normal = _coal_answer(ka, kb, T_a, T_b)
        if not distance < -1e-4:
            continue
        a, b = _kernel_body(ka, T_a), _kernel_body(kb, T_b)
        n = normal / np.linalg.norm(normal)
        depth = -distance
        tol = penetration.CHECK_ABS_M + penetration.CHECK_REL * depth
        ok = mtd.check_mtd(*a, *b, n, depth, tol, penetration.LOCAL_CHECK_RAD)
        ok_least, least = mtd.check_mtd_least(*a, *b, n, depth, tol, penetration.LOCAL_CHECK_RAD)
        assert ok_least == ok
        if not ok:
            continue
        n_plain, n_least = n.copy(), n.copy()
        d_plain = mtd.polish_checked(*a, *b, n_plain, depth, penetration.CHECK_ABS_M, penetration.CHECK_REL,
                                     penetration.LOCAL_CHECK_RAD)
        d_least = mtd.polish_checked_least(*a, *b, n_least, depth, penetration.CHECK_ABS_M, penetration.CHECK_REL,
                                           penetration.LOCAL_CHECK_RAD, least)
        assert np.float64(d_least).tobytes() == np.float64(d_plain).tobytes()
        assert n_least.tobytes() == n_plain.tobytes()
        polished = np.empty(3)
        mtd.polish_mtd(*a, *b, n, depth, polished)
        if polished.tobytes() == n.tobytes():
            kept += 1
        else:
            moved += 1
    assert kept > 0 and moved > 0


def _support_set_reference(kind, params, vertices, T, d, eps):
    """``mtd._support_set`` in plain Python floats, the same operations in the same order: the body's vertices
    within ``eps`` of its top along world direction d, highest first (equal values in vertex order), at most
    POLISH_SUPPORT, posed."""
    x = T[0, 0] * d[0] + T[1, 0] * d[1] + T[2, 0] * d[2]
    y = T[0, 1] * d[0] + T[1, 1] * d[1] + T[2, 1] * d[2]
    z = T[0, 2] * d[0] + T[1, 2] * d[1] + T[2, 2] * d[2]
    if kind == KIND_BOX:
        p = params
        local = [(p[0] if i & 1 else -p[0], p[1] if i & 2 else -p[1], p[2] if i & 4 else -p[2]) for i in range(8)]
    elif kind == KIND_CYLINDER:
        local = [(0.0, 0.0, params[1] if i & 1 else -params[1]) for i in range(2)]
    else:
        local = [tuple(v) for v in vertices]
    values = [x * v[0] + y * v[1] + z * v[2] for v in local]
    top = max(values)
    kept = sorted((i for i in range(len(local)) if not values[i] < top - eps), key=lambda i: -values[i])
    return [[T[r, 0] * local[i][0] + T[r, 1] * local[i][1] + T[r, 2] * local[i][2] + T[r, 3] for r in range(3)]
            for i in kept[:mtd.POLISH_SUPPORT]]


def test_support_set_is_the_posed_top_vertices_and_takes_no_reference_counts():
    # the polish's support vertices (a plain call since session 45, work space from the caller, no allocation): the
    # reference's bits for boxes, cylinders and the hull, tolerances from none to many vertices; neither it nor the
    # local overlap it feeds takes a reference count (kernels/gjk.py's note)
    rng = np.random.default_rng(SEED)
    out = np.empty((mtd.POLISH_SUPPORT, 3))
    values = np.empty(mtd.POLISH_SUPPORT)
    index = np.empty(mtd.POLISH_SUPPORT, dtype=np.int64)
    sizes = {1: 0, 2: 0, mtd.POLISH_SUPPORT: 0}
    for kind in (KIND_BOX, KIND_CYLINDER, KIND_CONVEX):
        for _ in range(200):
            T = np.eye(4)
            T[:3, :3] = random_rotation(rng)
            T[:3, 3] = rng.normal(size=3) * 0.2
            kind_, params, vertices, _ = _kernel_body(kind, T)
            d = rng.normal(size=3)
            d /= np.linalg.norm(d)
            if rng.random() < 0.3:                 # along a face or an edge of the body: several vertices on top
                d = T[:3, :3] @ np.sign(np.round(rng.normal(size=3)))
                d = d / np.linalg.norm(d) if np.linalg.norm(d) > 0 else T[:3, 2]
            eps = float(rng.choice([0.0, 1e-7, 1e-5, 1e-2, 0.1]))     # (0.1 m: more than six vertices on top)
            count = mtd._support_set(kind_, params, vertices, T, d[0], d[1], d[2], eps, out, values, index)
            expected = _support_set_reference(kind_, params, vertices, T, d, eps)
            assert count == len(expected)
            assert out[:count].tolist() == expected
            if count in sizes:
                sizes[count] += 1
    assert min(sizes.values()) > 0, sizes
    T = np.eye(4)
    assert reference_counts(mtd._support_set, KIND_CONVEX, np.zeros(3), HULL, T, 0.3, -0.2, 0.9, 1e-7, out, values,
                            index) == 0
    axis = np.array([0.0, 0.0, 1.0])
    assert reference_counts(mtd._local_overlap, out, 3, 0.05, axis, out, 2, 0.0, axis, 1.0, 0.0, 0.0) == 0


def test_face_bound_never_contradicts_the_svd():
    """support_features._clearly_not_on_a_line is True only where the SVD's second singular value is above the
    tolerance: points on a line, off it by 1e-9 .. 1e-5 m, and spread on a plane."""
    from my_collision_pkg.core.kernels.support_features import _clearly_not_on_a_line
    rng = np.random.default_rng(5)
    tolerance = 1e-7
    said_face = 0
    for _ in range(3000):
        k = int(rng.integers(3, 9))
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        points = rng.uniform(-0.05, 0.05, size=(k, 1)) * direction
        points += rng.normal(size=(k, 3)) * 10.0 ** rng.uniform(-9.0, -1.0)
        centred = points - points.sum(axis=0) / k
        if _clearly_not_on_a_line(centred, tolerance):
            said_face += 1
            assert np.linalg.svd(centred, compute_uv=False)[1] > tolerance
    assert said_face > 0


@njit(cache=False)
def _other_basin_gap_full_scans(kind_a, params_a, vertices_a, T_a, faces_a, offsets_a, kind_b, params_b, vertices_b, T_b,
                                 faces_b, offsets_b, normal, depth, p0, p1, margin, min_cos, start, stop):
    """:func:`mtd.other_basin_gap` as it was before session 44: every face normal that passes the witness point's
    bound gets the other body's full support (a pass over its vertices). The reference of
    test_other_basin_gap_equals_the_full_scans."""
    n0, n1, n2 = normal[0], normal[1], normal[2]
    best = np.inf
    refined = np.empty(3)
    dirs = np.empty((MAX_CANDIDATES, 3))
    m = candidate_directions(kind_a, params_a, T_a, kind_b, params_b, T_b, np.empty((0, 3)), dirs)
    n_faces_a, n_faces_b = faces_a.shape[0], faces_b.shape[0]
    # one body a vertex set (its support costs a pass over its vertices), the other a primitive
    vertices_a_only = kind_a > KIND_CONE and not kind_b > KIND_CONE
    vertices_b_only = kind_b > KIND_CONE and not kind_a > KIND_CONE
    # a face's lower bound, offset + face . w, with w the other witness point's offset from the body's origin,
    # in the body's frame: w_a = R_a^T (t_a - p1), w_b = R_b^T (t_b - p0)
    x, y, z = T_a[0, 3] - p1[0], T_a[1, 3] - p1[1], T_a[2, 3] - p1[2]
    wa0, wa1, wa2 = (T_a[0, 0] * x + T_a[1, 0] * y + T_a[2, 0] * z, T_a[0, 1] * x + T_a[1, 1] * y + T_a[2, 1] * z,
                     T_a[0, 2] * x + T_a[1, 2] * y + T_a[2, 2] * z)
    x, y, z = T_b[0, 3] - p0[0], T_b[1, 3] - p0[1], T_b[2, 3] - p0[2]
    wb0, wb1, wb2 = (T_b[0, 0] * x + T_b[1, 0] * y + T_b[2, 0] * z, T_b[0, 1] * x + T_b[1, 1] * y + T_b[2, 1] * z,
                     T_b[0, 2] * x + T_b[1, 2] * y + T_b[2, 2] * z)
    d = np.empty(3)
    for i in range(m + n_faces_a + n_faces_b):
        if i < m:
            d0, d1, d2 = dirs[i, 0], dirs[i, 1], dirs[i, 2]
        elif i < m + n_faces_a:                # a face of A: the direction from A to B is its outward normal
            f = i - m
            x, y, z = faces_a[f, 0], faces_a[f, 1], faces_a[f, 2]
            if not (offsets_a[f] + x * wa0 + y * wa1 + z * wa2 - depth < margin):
                continue                       # its plane beyond B's witness point: deeper by the margin at least
            d0 = T_a[0, 0] * x + T_a[0, 1] * y + T_a[0, 2] * z
            d1 = T_a[1, 0] * x + T_a[1, 1] * y + T_a[1, 2] * z
            d2 = T_a[2, 0] * x + T_a[2, 1] * y + T_a[2, 2] * z
        else:                                  # a face of B: the direction from A to B is minus its normal
            f = i - m - n_faces_a
            x, y, z = faces_b[f, 0], faces_b[f, 1], faces_b[f, 2]
            if not (offsets_b[f] + x * wb0 + y * wb1 + z * wb2 - depth < margin):
                continue
            d0 = -(T_b[0, 0] * x + T_b[0, 1] * y + T_b[0, 2] * z)
            d1 = -(T_b[1, 0] * x + T_b[1, 1] * y + T_b[1, 2] * z)
            d2 = -(T_b[2, 0] * x + T_b[2, 1] * y + T_b[2, 2] * z)
        if d0 * n0 + d1 * n1 + d2 * n2 >= min_cos:
            continue
        if i < m:
            if vertices_a_only:        # A's support bounded below by its witness point, B's exact (a primitive)
                h_b = _support(kind_b, params_b, vertices_b, T_b, -d0, -d1, -d2)
                if not (d0 * p0[0] + d1 * p0[1] + d2 * p0[2] + h_b - depth < margin):
                    continue
                value = _support(kind_a, params_a, vertices_a, T_a, d0, d1, d2) + h_b
            elif vertices_b_only:
                h_a = _support(kind_a, params_a, vertices_a, T_a, d0, d1, d2)
                if not (h_a - (d0 * p1[0] + d1 * p1[1] + d2 * p1[2]) - depth < margin):
                    continue
                value = h_a + _support(kind_b, params_b, vertices_b, T_b, -d0, -d1, -d2)
            else:
                value = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d0, d1, d2)
        elif i < m + n_faces_a:
            value = _face_overlap(kind_b, params_b, vertices_b, T_b, T_a, offsets_a[i - m], d0, d1, d2)
        else:
            value = _face_overlap(kind_a, params_a, vertices_a, T_a, T_b, offsets_b[i - m - n_faces_a], -d0, -d1, -d2)
        if not value - depth < margin:
            continue
        d[0], d[1], d[2] = d0, d1, d2
        value = _refine(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d, value, start, stop,
                        refined)
        if refined[0] * n0 + refined[1] * n1 + refined[2] * n2 < min_cos and value - depth < best:
            best = value - depth
    return best



@pytest.fixture(scope="module")
def basin_calls() -> list:
    """The bodies, normal, depth and witness points of the penetrating convex rows the clearance answers in its
    compiled call (``clearance._penetrating_convex_rows``) on the penetrating ones of 150 Panda
    configurations at 0.05 m, with the witness points ``feature_contact`` gives (found rows only)."""
    from my_collision_pkg.core.checks import clearance, witness_features
    from my_collision_pkg.core.kernels.support_features import feature_contact
    from core_scenes import panda_world_checker
    checker, names, Q = panda_world_checker(150)
    constants = witness_features.feature_constants()
    calls = []
    original = clearance._penetrating_convex_rows

    def recorded(world, T_shape, cfg, pair, pairs, slow, overlapping, raw, p0, p1, out):
        left = original(world, T_shape, cfg, pair, pairs, slow, overlapping, raw, p0, p1, out)
        for k in sorted(set(slow) - set(left)):
            bodies = []
            for s in (int(x) for x in pairs[pair[k]]):
                kind, params, vertices, faces, offsets = witness_features.contact_parts(world, s)
                bodies.append((int(kind), np.array(params, dtype=float), np.array(vertices, dtype=float),
                               np.array(T_shape[cfg[k], s], dtype=float), np.array(faces, dtype=float),
                               np.array(offsets, dtype=float)))
            normal = np.array(out.normal[k], dtype=float)
            witness = np.empty((2, 3))
            found, _ = feature_contact(*bodies[0], *bodies[1], float(out.distance[k]), normal, *constants, witness)
            if found:
                calls.append((bodies[0], bodies[1], normal, -float(out.distance[k]), witness[0].copy(),
                              witness[1].copy()))
        return left

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(clearance, "_penetrating_convex_rows", recorded)
        # (a one-configuration request's compiled steps call the kernel itself: the steps one by one here)
        monkeypatch.setattr(clearance, "_single_rows", clearance._posed_rows)
        try:
            for q in Q:
                if not checker.check(names, q).valid:
                    checker.clearance(names, q, 0.05)
        finally:
            checker.close()
    return calls


@pytest.mark.parametrize("margin_m", [2e-5, 1e-3, 1e-2])
def test_other_basin_gap_equals_the_full_scans(basin_calls, margin_m):
    """mtd.other_basin_gap, which bounds a face's overlap from the other body's support vertices of the faces it
    scanned last before scanning all its vertices, answers as the full scans (the function before session 44):
    on the penetrating convex rows of Panda configurations (hull-hull, hull-box, hull-cylinder, box-box,
    box-cylinder), both bodies in either order, at the switch margin and at larger margins (more candidates
    refined): below the margin the same float, bit for bit; at or above it (+inf) exactly where it was."""
    calls = basin_calls
    assert sum(a[0] == KIND_CONVEX and b[0] == KIND_CONVEX for a, b, *_ in calls) >= 10
    within = 0
    for body_0, body_1, normal, depth, p0, p1 in calls:
        for a, b, n, w_a, w_b in ((body_0, body_1, normal, p0, p1), (body_1, body_0, -normal, p1, p0)):
            args = (*a, *b, n, depth, w_a, w_b, margin_m, 0.9999500004166653, 0.05, 1e-9)
            new, old = mtd.other_basin_gap(*args), _other_basin_gap_full_scans(*args)
            assert (new < margin_m) == (old < margin_m), (new, old)
            if old < margin_m:
                within += 1
                assert np.float64(new).tobytes() == np.float64(old).tobytes(), (new, old)
    assert within >= 4                        # (8 at 2e-5 m, nearly every row at the larger margins)


@njit(cache=False)
def _kept_face_mismatches(kind_o, params_o, vertices_o, T_o, T_f, faces_f, offsets_f, depth, kept_size):
    """For each face of body f (in order, the kept vertices carried from face to face as other_basin_gap carries
    them), mtd._kept_face_overlap against the full support (mtd._face_overlap) at margins on both sides of the
    face's own overlap above ``depth`` and at the switch margin: the number of (face, margin) checks and of those
    where it skipped a face within the margin or gave another float."""
    kept = np.empty(kept_size, dtype=np.int64)
    n_kept = 0
    checks, bad = 0, 0
    for f in range(faces_f.shape[0]):
        x, y, z = faces_f[f, 0], faces_f[f, 1], faces_f[f, 2]
        m0 = T_f[0, 0] * x + T_f[0, 1] * y + T_f[0, 2] * z         # the face's outward normal, world
        m1 = T_f[1, 0] * x + T_f[1, 1] * y + T_f[1, 2] * z
        m2 = T_f[2, 0] * x + T_f[2, 1] * y + T_f[2, 2] * z
        full = _face_overlap(kind_o, params_o, vertices_o, T_o, T_f, offsets_f[f], m0, m1, m2)
        gap = full - depth
        for margin in (2e-5, gap, np.nextafter(gap, np.inf), np.nextafter(gap, -np.inf), gap + 1e-9, gap - 1e-9):
            value, _ = _kept_face_overlap(vertices_o, T_o, T_f, offsets_f[f], m0, m1, m2, kept.copy(), n_kept, depth,
                                          margin)
            checks += 1
            if value == np.inf:
                if gap < margin:
                    bad += 1
            elif value != full:
                bad += 1
        # (an infinite margin scans every face: the kept vertices as after a scan)
        value, n_kept = _kept_face_overlap(vertices_o, T_o, T_f, offsets_f[f], m0, m1, m2, kept, n_kept, depth, np.inf)
        if value != full:
            bad += 1
    return checks, bad


def test_kept_vertices_bound_never_skips_a_face_within_the_margin(basin_calls):
    """The lower bound from the kept support vertices (mtd._kept_face_overlap) is at most the face's overlap as the
    full scan computes it, to the last bit: at a margin one ulp above the face's own overlap (above the depth) the
    face is never skipped, and a face not skipped gets the full scan's float; faces of both bodies of the Panda
    rows, the other body a hull."""
    checks = 0
    for body_0, body_1, normal, depth, p0, p1 in basin_calls:
        for f, o in ((body_0, body_1), (body_1, body_0)):
            if o[0] != KIND_CONVEX or f[4].shape[0] == 0:
                continue
            for kept_size in (1, mtd.BASIN_KEPT_VERTICES):
                n, bad = _kept_face_mismatches(o[0], o[1], o[2], o[3], f[3], f[4], f[5], depth, kept_size)
                assert bad == 0
                checks += n
    assert checks > 10_000


@njit
def _scans(vertices, x, y, z):
    """mtd's unrolled scans (largest value; largest value and its first row) and one running maximum over the rows."""
    best, at = -np.inf, -1
    for i in range(vertices.shape[0]):
        value = x * vertices[i, 0] + y * vertices[i, 1] + z * vertices[i, 2]
        if value > best:
            best, at = value, i
    return mtd._vertex_max(vertices, x, y, z), mtd._vertex_argmax(vertices, x, y, z), best, at


def test_unrolled_vertex_scans_give_the_first_largest_row():
    """The four running maxima of _vertex_max and _vertex_argmax give the float and the row of one running maximum
    (the first of equals), on vertex sets of 0 to 19 rows of small integers (many ties, every remainder of 4) and
    on the Panda-sized rock."""
    rng = np.random.default_rng(SEED)
    cases = [(rng.integers(-2, 3, size=(rng.integers(0, 20), 3)).astype(float), rng.integers(-2, 3, size=3))
             for _ in range(4000)]
    cases += [(_hull_vertices(), rng.normal(size=3)) for _ in range(200)]
    for vertices, d in cases:
        value, (arg_value, row), best, at = _scans(vertices, float(d[0]), float(d[1]), float(d[2]))
        assert value == best and arg_value == best and row == at, (vertices, d, value, arg_value, row, best, at)
