"""The compiled MTD check and search (kernels.mtd) against penetration's numpy reference.

Every pairing of the five primitive kinds and a convex vertex set (an irregular polytope), posed at
random so that they overlap: the overlaps along many directions are the same; the check says the
same of coal's answer, of a wrong depth and of a wrong normal; the search finds the depth the numpy
reference finds, and the overlap along its direction is that depth.
"""
from __future__ import annotations

import itertools

import coal
import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.checks.penetration import Body
from my_collision_pkg.core.kernels import mtd
from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                KIND_SPHERE)
from core_scenes import random_rotation

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
