"""Every clearance row of random Panda configurations with config/panda_world.yaml against an
independent computation (issue 40), and the two rows the issue found wrong, by name.

- apart rows: coal's distance of the two posed shapes (the real meshes) within 1 um;
- penetrating rows (all of the Panda's bodies are convex solids for contact numbers): minus the
  minimum translation distance, checked with the two support functions: the overlap along the
  row's normal is its depth within 1 um, and no direction of a dense set (plus the bodies' own
  face normals and axes) separates them by less than the depth minus 1 um;
- every smooth row's Jacobian, apart or penetrating, against central differences of the same
  pair's distance (step ``H``): max |J - fd| <= max(1e-3 max |fd|, 1e-6); a penetrating row
  within ``SWITCH_MARGIN_M`` of a switch of its contact is not smooth (docs/clearance.md), and
  one such row, whose Jacobian really is off, by name; an apart row whose nearest points can jump
  along a box's edge or a cylinder's side line within a small joint motion is not smooth
  (kernels.apart_ties), and the two such rows of the 2000 configurations, whose Jacobians really
  are off, by name. (Over all 2000 configurations no smooth row misses the bound at 0.05 m or
  0.5 m; docs/clearance.md.)

The configurations are those of bench_core's seed (20260611, uniform within the limits).
"""
import os

import coal
import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance, penetration, witness_features
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.limits import WorkLimits
from my_collision_pkg.core.kernels import apart_ties
from my_collision_pkg.core.kernels import clearance_rows as cr
from my_collision_pkg.core.scene.loading import load_scene

WORLD = os.path.join(os.path.dirname(__file__), "..", "..", "config", "panda_world.yaml")
SEED = 20260611
N_DRAWN = 2000
N_CHECKED = 300
H = 1e-5                       # central-difference step (rad, m): above the distances' 1e-9 m precision
DISTANCE_TOL_M = 1e-6
JACOBIAN_REL, JACOBIAN_ABS = 1e-3, 1e-6


@pytest.fixture(scope="module")
def panda(panda_files):
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD)
    checker = CollisionChecker(scene, batch_workers=1, limits=WorkLimits(max_clearance_rows=10 ** 8))
    robot = scene.robot
    Q = np.random.default_rng(SEED).uniform(robot.lower_limits, robot.upper_limits,
                                            size=(N_DRAWN, len(robot.active_joint_names)))
    return scene, checker, Q


def _row(result, owners, shape_ids):
    rows = [k for k in range(len(result))
            if tuple(result.body_names[k]) == owners and tuple(int(i) for i in result.shape_ids[k]) == shape_ids]
    return rows[0] if rows else None


def _central_differences(checker, names, Q, result, influence):
    """(R, A) central differences of each row's own pair distance, and the rows that have them."""
    n, A = Q.shape
    P = np.repeat(Q, 2 * A, axis=0).reshape(n, 2, A, A)
    for j in range(A):
        P[:, 0, j, j] += H
        P[:, 1, j, j] -= H
    robot = checker.scene.robot
    P = np.clip(P.reshape(-1, A), robot.lower_limits, robot.upper_limits)
    moved = checker.clearance(names, P, influence + 0.1)
    distance = {(int(c), int(a), int(b)): d for c, (a, b), d in
                zip(moved.configuration_index, moved.shape_pairs, moved.distance)}
    fd = np.zeros((len(result), A))
    for k in range(len(result)):
        c = int(result.configuration_index[k])
        a, b = (int(x) for x in result.shape_pairs[k])
        for j in range(A):
            plus, minus = (2 * c) * A + j, (2 * c + 1) * A + j
            fd[k, j] = (distance[(plus, a, b)] - distance[(minus, a, b)]) / (P[plus, j] - P[minus, j])
    return fd


def _fibonacci_directions(n: int) -> np.ndarray:
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    phi = np.pi * (1.0 + 5 ** 0.5) * k
    rho = np.sqrt(1.0 - z * z)
    return np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])


DIRECTIONS = _fibonacci_directions(20000)


def _independent_distance(world, T, a, b, normal):
    """coal's distance of the posed shapes when apart; for a penetrating pair (None, overlap along
    ``normal``, least overlap over DIRECTIONS and the bodies' own directions)."""
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = 1e-10
    result = coal.DistanceResult()
    d = coal.distance(ga.coal_geometry, coal.Transform3s(T[a][:3, :3], T[a][:3, 3]), gb.coal_geometry,
                      coal.Transform3s(T[b][:3, :3], T[b][:3, 3]), request, result)
    return float(d)


def _overlaps(body0, body1, directions):
    h0, _ = body0.support(directions)
    h1, _ = body1.support(-directions)
    return h0 + h1


def test_index_1211_link0_link6_overlap_is_negative_and_kept_at_influence_0(panda):
    """issue 40: panda_link0 / panda_link6 (mesh-mesh) penetrate by 0.239 mm at index 1211; the row
    was distance 0, coinciding witness points, and missing at influence 0."""
    scene, checker, Q = panda
    names = scene.robot.active_joint_names
    for influence in (0.0, 0.05):
        result = checker.clearance(names, Q[1211], influence)
        k = _row(result, ("panda_link0", "panda_link6"), (0, 0))
        assert k is not None, f"the link0/link6 row is missing at influence {influence}"
        assert result.distance[k] == pytest.approx(-0.239e-3, abs=0.001e-3)
        assert np.linalg.norm(result.points[k, 1] - result.points[k, 0]) == pytest.approx(0.239e-3, abs=0.001e-3)
        assert result.smooth[k]
    fd = _central_differences(checker, names, Q[1211:1212], result, 0.05)
    assert np.max(np.abs(result.jacobian[k] - fd[k])) <= max(JACOBIAN_REL * np.max(np.abs(fd[k])), JACOBIAN_ABS)


def test_index_142_finger_box_post_jacobian_matches_central_differences(panda):
    """issue 40: panda_rightfinger shape 2 / post (box-cylinder) at -40.23 mm at index 142: the
    Jacobian row was 62 % off central differences while smooth was true."""
    scene, checker, Q = panda
    names = scene.robot.active_joint_names
    result = checker.clearance(names, Q[142], 0.05)
    k = _row(result, ("panda_rightfinger", "post"), (2, 0))
    assert k is not None
    assert result.distance[k] == pytest.approx(-40.23e-3, abs=0.01e-3)
    assert result.smooth[k]
    fd = _central_differences(checker, names, Q[142:143], result, 0.05)
    assert np.max(np.abs(result.jacobian[k] - fd[k])) <= max(JACOBIAN_REL * np.max(np.abs(fd[k])), JACOBIAN_ABS)


def test_index_800_link5_finger_two_contacts_as_deep_is_not_smooth(panda):
    """issue 40: panda_link5 / panda_rightfinger shape 2 (hull-box) at -1.294 mm at index 800: an edge-edge
    contact, and a hull face against a finger corner 13.8 degrees away whose overlap is only 0.82 um larger,
    which becomes the MTD within a 1e-5 rad step of joint 7; the Jacobian row is 46 % off central differences (the
    one-sided slopes differ), and the row was smooth. Now: not smooth, the other contact within the margin."""
    scene, checker, Q = panda
    names = scene.robot.active_joint_names
    result = checker.clearance(names, Q[800], 0.05)
    k = _row(result, ("panda_link5", "panda_rightfinger"), (0, 2))
    assert k is not None
    assert result.distance[k] == pytest.approx(-1.294e-3, abs=0.001e-3)
    assert not result.smooth[k]
    fd = _central_differences(checker, names, Q[800:801], result, 0.05)
    assert np.max(np.abs(result.jacobian[k] - fd[k])) > 0.1 * np.max(np.abs(fd[k]))
    world, robot = scene.world, scene.robot
    T = world.shape_transforms(robot.link_transforms_batch(Q[800:801]))[0]
    a, b = (int(x) for x in result.shape_pairs[k])
    p0, p1, margin_m = witness_features.posed_feature_contact(world, T, a, b, float(result.distance[k]),
                                                              result.normals[k])       # the clearance's own call
    assert margin_m < 1e-6                      # the other contact's overlap: 0.82 um above the depth
    np.testing.assert_array_equal(np.stack([p0, p1]), result.points[k])
    # the Python path: the same contact, but for the last bits of the points (numpy's matrix products)
    body_a, body_b = penetration.body(world, T, a), penetration.body(world, T, b)
    q0, q1, python_margin_m = witness_features.feature_contact(body_a, body_b, float(result.distance[k]),
                                                               result.normals[k])
    np.testing.assert_allclose(np.stack([q0, q1]), result.points[k], rtol=0.0, atol=1e-15)
    assert python_margin_m == pytest.approx(margin_m, rel=0.0, abs=1e-15)


@pytest.mark.parametrize("index, link", [(1416, "panda_link5"), (1718, "panda_link7")])
def test_post_rows_with_the_polished_depth_match_central_differences(panda, index, link):
    """issue 40: two hull / post rows that stayed 0.17 % and 0.11 % off central differences even against a
    careful pattern search of the MTD (EPA's depth at q +- H off by up to 3e-7 m): with the polished MTD the
    depth is the overlap along the normal and a local minimum, and the smooth row meets the bound."""
    scene, checker, Q = panda
    world, robot = scene.world, scene.robot
    names = robot.active_joint_names
    result = checker.clearance(names, Q[index], 0.05)
    rows = [k for k in range(len(result)) if tuple(result.body_names[k]) == (link, "post")]
    assert len(rows) == 1
    k = rows[0]
    assert result.distance[k] < 0.0 and result.smooth[k]
    T = world.shape_transforms(robot.link_transforms_batch(Q[index:index + 1]))[0]
    a, b = (int(x) for x in result.shape_pairs[k])
    body0, body1 = penetration.body(world, T, a), penetration.body(world, T, b)
    assert _overlaps(body0, body1, result.normals[k][None, :])[0] == pytest.approx(-result.distance[k], abs=1e-15)
    fd = _central_differences(checker, names, Q[index:index + 1], result, 0.05)
    assert np.max(np.abs(result.jacobian[k] - fd[k])) <= JACOBIAN_REL * np.max(np.abs(fd[k]))


def _tie_arrays(checker):
    """The packed convex solids of kernels.apart_ties.stepped_ties for the Panda scene."""
    wf, wi = clearance._tables(checker.scene.world).row_world
    return (cr._i1(wi, cr._W_KIND), cr._f2(wf, wi, cr._W_PARAMS), cr._i1(wi, cr._W_VERTEX_START),
            cr._f2(wf, wi, cr._W_VERTICES), cr._i1(wi, cr._W_NEIGHBOUR_START), cr._i1(wi, cr._W_NEIGHBOURS),
            cr._i2(wi, cr._W_PROBES))


@pytest.mark.parametrize("index, owners", [(1329, ("panda_link2", "post")), (1384, ("panda_link1", "table"))])
def test_apart_rows_whose_nearest_points_jump_along_a_line_are_not_smooth(panda, index, owners):
    """issue 40: two apart rows at 0.5 m whose Jacobian misses central differences (link2's witness point jumps
    7.7 mm along the post's side line within the step, link1's 6.2 mm along the table's edge) were smooth. Now
    the stepped pair 3 mm along the line is nearly as near, and a 2e-5 step of the joints closes the gap."""
    scene, checker, Q = panda
    names = scene.robot.active_joint_names
    result = checker.clearance(names, Q[index], 0.5)
    k = [k for k in range(len(result)) if tuple(result.body_names[k]) == owners][0]
    assert result.distance[k] > 0.3
    assert not result.smooth[k]
    fd = _central_differences(checker, names, Q[index:index + 1], result, 0.5)
    assert np.max(np.abs(result.jacobian[k] - fd[k])) > 5 * JACOBIAN_REL * np.max(np.abs(fd[k]))
    # the nearest points jump by more than 5 mm within the central-difference step
    steps = np.vstack([H * np.eye(len(names)), -H * np.eye(len(names))])
    moved = checker.clearance(names, np.clip(Q[index] + steps, scene.robot.lower_limits, scene.robot.upper_limits),
                              0.5 + 0.1)
    jumps = [np.max(np.linalg.norm(moved.points[m] - result.points[k], axis=1)) for m in range(len(moved))
             if tuple(moved.body_names[m]) == owners]
    assert max(jumps) > 5e-3


def test_a_tie_along_the_post_that_joint_1_moves_alike_stays_smooth(panda):
    """index 224: link1's side is parallel to the post's side line whatever joint 1 does (both vertical), so the
    stepped pairs 3 mm up and down the post are nearly as near as the witness pair (the kernel computes their
    Jacobian rows) but move as it does: the row stays smooth, and its Jacobian matches central differences."""
    scene, checker, Q = panda
    world, robot = scene.world, scene.robot
    names = robot.active_joint_names
    result = checker.clearance(names, Q[224], 0.5)
    k = [k for k in range(len(result)) if tuple(result.body_names[k]) == ("panda_link1", "post")][0]
    assert result.smooth[k]
    fd = _central_differences(checker, names, Q[224:225], result, 0.5)
    assert np.max(np.abs(result.jacobian[k] - fd[k])) <= max(JACOBIAN_REL * np.max(np.abs(fd[k])), JACOBIAN_ABS)
    solids = _tie_arrays(checker)
    T = world.shape_transforms(robot.link_transforms_batch(Q[224:225]))
    shape_pair = result.shape_pairs[k][None].astype(np.int64)
    rows, pairs, gaps = apart_ties.stepped_ties(np.array([True]), result.distance[k:k + 1].copy(),
                                                np.zeros(1, dtype=np.int64), shape_pair, result.points[k][None].copy(),
                                                T, *solids, np.full((1, 2), -1, dtype=np.int64), np.ones(1))
    assert len(rows) == 2                                  # up and down the post's side line
    assert np.all(gaps < 2 * apart_ties.FEATURE_STEP_M * apart_ties.TIE_JOINT_STEP)
    assert np.all(np.abs(pairs[:, 1, 2] - result.points[k][1, 2]) == pytest.approx(apart_ties.FEATURE_STEP_M))


@pytest.mark.parametrize("influence", [0.05, 0.5])
def test_every_row_against_an_independent_distance_and_central_differences(panda, influence):
    scene, checker, Q = panda
    world, robot = scene.world, scene.robot
    names = robot.active_joint_names
    Q = Q[:N_CHECKED]
    result = checker.clearance(names, Q, influence)
    assert len(result) > N_CHECKED
    T_all = world.shape_transforms(robot.link_transforms_batch(Q))
    apart_errors, penetrating = [], 0
    for k in range(len(result)):
        c = int(result.configuration_index[k])
        a, b = (int(x) for x in result.shape_pairs[k])
        d = float(result.distance[k])
        assert d != 0.0, f"configuration {c}: a row at distance exactly 0 ({result.body_names[k]})"
        if d > 0.0:
            apart_errors.append(abs(_independent_distance(world, T_all[c], a, b, result.normals[k]) - d))
            continue
        penetrating += 1
        assert penetration.nearly_convex(world, a) and penetration.nearly_convex(world, b)
        body0, body1 = penetration.body(world, T_all[c], a), penetration.body(world, T_all[c], b)
        along = _overlaps(body0, body1, result.normals[k][None, :])[0]
        assert along == pytest.approx(-d, abs=DISTANCE_TOL_M), (c, tuple(result.body_names[k]))
        own = np.vstack([DIRECTIONS, body0.R.T, -body0.R.T, body1.R.T, -body1.R.T])
        assert _overlaps(body0, body1, own).min() >= -d - DISTANCE_TOL_M, (c, tuple(result.body_names[k]))
    assert max(apart_errors) <= DISTANCE_TOL_M, max(apart_errors)
    assert penetrating > 10
    # Jacobians of the smooth rows
    fd = _central_differences(checker, names, Q, result, influence)
    err = np.max(np.abs(result.jacobian - fd), axis=1)
    ok = err <= np.maximum(JACOBIAN_REL * np.max(np.abs(fd), axis=1), JACOBIAN_ABS)
    apart = result.distance > 0.0
    smooth = result.smooth
    assert smooth.sum() > 0.9 * len(result)
    assert (smooth & ~apart).sum() > 10
    bad = np.flatnonzero(smooth & ~ok)
    assert len(bad) == 0, [(int(result.configuration_index[k]), tuple(result.body_names[k]), float(err[k]))
                           for k in bad]
