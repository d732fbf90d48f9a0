"""The smallest clearance a certified motion check certifies (MotionResult.min_clearance_*).

The reported number must be a lower bound of every checked pair's signed distance minus
padding along the motion: checked against the analytic minimum of a ball sliding past a
box or a sphere, and against the checker's own clearance sampled every 1e-3 of the motion
on the Panda. On the analytic cases it must also be tight to the documented factor: at
least half the true minimum less the touch tolerance (docs/checks.md).
"""
import math
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks import motion, sweep
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, MotionMode, Status
from my_collision_pkg.core.checks.narrowphase import pair_distance
from my_collision_pkg.core.model.robot_model import Box, RobotModel, Sphere
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject

BALL_RADIUS_M = 0.05
TOL = DEFAULT_TOUCH_TOLERANCE_M
SLIDER_URDF = f"""
<robot name="passer">
  <link name="base"/>
  <link name="ball"><collision><geometry><sphere radius="{BALL_RADIUS_M}"/></geometry></collision></link>
  <joint name="x" type="prismatic">
    <parent link="base"/><child link="ball"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
</robot>
"""
BOX_HALF_M = 0.1
OBSTACLE_RADIUS_M = 0.08


def _pose(x=0.0, y=0.0, z=0.0):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _slider(obstacle, y_m: float, padding_m: float = 0.0) -> CollisionChecker:
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), default_padding_m=padding_m)
    scene.apply([AddObject(SceneObject("obstacle", (ObjectShape(obstacle),), _pose(y=y_m)))])
    return CollisionChecker(scene)


# Within sweep.COVER_ACCEPT_M of touching the steps are taken on exact distances: the bound is
# at least half the true minimum (less the tolerance); farther, on the ball's sphere cover,
# whose slack (18 mm for this ball) comes on top, so only half of COVER_ACCEPT_M is sure
# (docs/checks.md).
@pytest.mark.parametrize("gap_m", [0.002, 0.005, 0.02])
@pytest.mark.parametrize("padding_m", [0.0, 0.003])
def test_ball_past_box_is_bounded_by_the_exact_minimum(gap_m, padding_m):
    factor = 0.5 * min(gap_m, sweep.COVER_ACCEPT_M) / gap_m
    # the ball's centre runs along y = 0; the box's near face is at y = radius + padding + gap,
    # so the smallest distance minus padding is gap_m, over |x| <= BOX_HALF_M
    y = BALL_RADIUS_M + padding_m + gap_m + BOX_HALF_M
    checker = _slider(Box((2 * BOX_HALF_M,) * 3), y, padding_m)
    result = checker.check_motion(["x"], [-1.0], [1.0])
    assert result.valid and result.status == Status.VALID
    assert result.min_clearance_m <= gap_m
    assert result.min_clearance_m >= factor * gap_m - TOL
    assert result.min_clearance_bodies == ("ball", "obstacle")
    # where the bound is reached it is below the exact distance there
    x = -1.0 + 2.0 * result.min_clearance_time
    assert result.min_clearance_m <= math.hypot(max(abs(x) - BOX_HALF_M, 0.0), gap_m)


@pytest.mark.parametrize("gap_m", [0.003, 0.01])
def test_ball_past_sphere_is_bounded_by_the_exact_minimum_and_its_time(gap_m):
    y = BALL_RADIUS_M + OBSTACLE_RADIUS_M + gap_m
    checker = _slider(Sphere(OBSTACLE_RADIUS_M), y)
    result = checker.check_motion(["x"], [-0.6], [1.0])    # closest at x = 0: t = 0.375
    assert result.valid
    assert 0.5 * gap_m - TOL <= result.min_clearance_m <= gap_m
    # the bound at time t cannot exceed the exact distance there
    x = -0.6 + 1.6 * result.min_clearance_time
    exact = math.hypot(x, y) - BALL_RADIUS_M - OBSTACLE_RADIUS_M
    assert result.min_clearance_m <= exact
    assert abs(result.min_clearance_time - 0.375) < 0.05


def test_a_motion_that_does_not_move_the_pair_reports_its_distance():
    gap_m = 0.004
    checker = _slider(Sphere(OBSTACLE_RADIUS_M), BALL_RADIUS_M + OBSTACLE_RADIUS_M + gap_m)
    result = checker.check_motion(["x"], [0.0], [0.0])
    assert result.valid
    assert gap_m - 1e-5 <= result.min_clearance_m <= gap_m


def test_no_clearance_for_discrete_invalid_or_refused_motions():
    checker = _slider(Box((2 * BOX_HALF_M,) * 3), BALL_RADIUS_M + BOX_HALF_M + 0.01)
    discrete = checker.check_motion(["x"], [-1.0], [1.0], mode=MotionMode.DISCRETE, max_step=0.01)
    assert discrete.valid and math.isnan(discrete.min_clearance_m) and discrete.min_clearance_bodies == ()
    hit = _slider(Box((2 * BOX_HALF_M,) * 3), 0.0).check_motion(["x"], [-1.0], [1.0])
    assert not hit.valid and math.isnan(hit.min_clearance_m) and math.isnan(hit.min_clearance_time)
    refused = checker.check_motion(["x"], [-1.0], [1.0, 2.0])
    assert refused.status == Status.INVALID_REQUEST and math.isnan(refused.min_clearance_m)


def test_tracking_off_gives_the_same_verdicts_and_no_clearance(monkeypatch):
    checker = _slider(Box((2 * BOX_HALF_M,) * 3), BALL_RADIUS_M + BOX_HALF_M + 0.01)
    on = checker.check_motion(["x"], [-1.0], [1.0])
    monkeypatch.setattr(motion, "TRACK_CLEARANCE", False)
    off = checker.check_motion(["x"], [-1.0], [1.0])
    assert on.valid and off.valid and on.message == off.message
    assert math.isfinite(on.min_clearance_m) and math.isnan(off.min_clearance_m)


def test_interval_bound_is_the_meeting_point_of_the_two_cones():
    from my_collision_pkg.core.kernels.advancement import interval_bound
    # distance 1 at t=0 and 1 at t=1, speed bound 1 on both sides: they meet at t = 0.5 at 0.5
    bound, t = interval_bound(0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0)
    assert bound == pytest.approx(0.5) and t == pytest.approx(0.5)
    # a fast side meets a slow one late; the value is where both cones are equal
    bound, t = interval_bound(0.0, 0.4, 2.0, 0.0, 0.5, 0.3, 0.5, 0.0)
    assert bound == pytest.approx(0.4 - 2.0 * t) and bound == pytest.approx(0.3 - 0.5 * (0.5 - t))
    # nothing moves: both values bound the same distance
    assert interval_bound(0.0, 0.2, 0.0, 0.0, 1.0, 0.3, 0.0, 0.0) == (0.3, 0.0)


def test_python_record_matches_the_compiled_interval_bound():
    from my_collision_pkg.core.kernels.advancement import interval_bound
    rng = np.random.default_rng(3)
    for _ in range(200):
        ta, h = rng.uniform(0, 0.5), rng.uniform(0, 0.5)
        da, db = rng.uniform(0.0, 0.2, 2)
        va0, va1, vb0, vb1 = rng.uniform(0.0, 2.0, 4) * (rng.uniform() > 0.1)
        table = np.empty((7, 2))
        track = sweep.new_track(2, table)
        sweep.record_evaluation(table, 1, ta, da, va0, va1)
        sweep.record_evaluation(table, 1, ta + h, db, vb0, vb1)
        bound, t = interval_bound(ta, da, va0, va1, ta + h, db, vb0, vb1)
        assert track.low[1] == pytest.approx(bound, abs=1e-15) and track.low_t[1] == pytest.approx(t, abs=1e-15)
        assert track.last_t[1] == ta + h and track.last_d[1] == db and math.isinf(track.low[0])


# ----- the Panda: the bound under the checker's own distances, sampled densely ---------
def _panda():
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    urdf, srdf = panda_paths()
    world = os.path.join(os.path.dirname(__file__), "..", "..", "config", "panda_world.yaml")
    return load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world)


@pytest.fixture(scope="module")
def panda_checker():
    return CollisionChecker(_panda())


def _valid_edges(checker, n, seed):
    robot = checker.scene.robot
    rng = np.random.default_rng(seed)
    samples = rng.uniform(robot.lower_limits, robot.upper_limits, size=(8 * n, len(robot.lower_limits)))
    valid, _ = checker.check_batch(robot.active_joint_names, samples)
    good = samples[valid]
    return list(zip(good[0:2 * n:2], good[1:2 * n:2]))


def _densely_sampled_violations(checker, names, q0, q1, bound, steps=1000, **request):
    """Samples (every 1 / steps of the motion) where a checked pair's distance minus padding is below ``bound``."""
    t = np.linspace(0.0, 1.0, steps + 1)
    q = q0[None, :] + t[:, None] * (q1 - q0)[None, :]
    rows = checker.clearance(names, q, max(bound, 0.0), compute_jacobians=False, **request)
    assert rows.ok, rows.message
    return rows.distance[rows.distance < bound]


def test_panda_bound_is_below_every_sampled_distance(panda_checker):
    names = panda_checker.scene.robot.active_joint_names
    ratios = []
    valid = 0
    for q0, q1 in _valid_edges(panda_checker, 12, 2026):
        result = panda_checker.check_motion(names, q0, q1)
        if not result.valid:
            continue
        valid += 1
        assert 0.0 < result.min_clearance_m < math.inf and 0.0 <= result.min_clearance_time <= 1.0
        assert len(result.min_clearance_bodies) == 2
        assert _densely_sampled_violations(panda_checker, names, q0, q1, result.min_clearance_m).size == 0
        # the bound at its own time is below the reported pair's distance there (found by clearance)
        q = q0 + result.min_clearance_time * (q1 - q0)
        rows = panda_checker.clearance(names, q, 1.0, compute_jacobians=False)
        mine = [d for d, pair in zip(rows.distance, rows.body_names) if tuple(pair) == result.min_clearance_bodies]
        assert mine and result.min_clearance_m <= min(mine)
        ratios.append(result.min_clearance_m / min(mine))
    assert valid >= 4
    assert min(ratios) > 0.0


def test_panda_bound_with_padding_and_a_group(panda_checker):
    scene = _panda()
    scene.set_padding(default_padding_m=0.005)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    done = 0
    for q0, q1 in _valid_edges(checker, 20, 77):
        for request in (dict(pad_self_collisions=True), dict(group_name="panda_arm")):
            result = checker.check_motion(names, q0, q1, **request)
            if not result.valid:
                continue
            done += 1
            assert _densely_sampled_violations(checker, names, q0, q1, result.min_clearance_m, **request).size == 0
    assert done >= 4


def test_pairs_dropped_before_the_search_are_bounded_over_the_whole_motion(panda_checker, monkeypatch):
    # a world of many boxes: the sweep drops the far ones; their swept bounds stay below
    # their exact distances at every sampled time, and the reported bound below all of them
    scene = _panda()
    rng = np.random.default_rng(5)
    objects = []
    for i in range(40):
        centre = rng.uniform([-1.5, -1.5, 0.0], [1.5, 1.5, 1.5])
        if np.linalg.norm(centre[:2]) < 0.9:
            continue
        objects.append(AddObject(SceneObject(f"crate{i}", (ObjectShape(Box((0.1, 0.1, 0.1))),), _pose(*centre))))
    scene.apply(objects)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    world = scene.world
    request = CheckRequest.from_keywords(None)
    selection = request.selection(world)
    checked = 0
    for q0, q1 in _valid_edges(checker, 6, 11):
        s = sweep.Sweep(world, selection, request, q0, q1, TOL)
        if s.dropped is None:
            continue
        gone = np.setdiff1d(np.arange(len(selection.pairs)), s.kept)
        bounds = sweep.swept_gaps(world, selection, s.tables, s.dropped, gone)
        for t in np.linspace(0.0, 1.0, 21):
            T_shape = world.shape_transforms(scene.robot.link_transforms(q0 + t * (q1 - q0)))
            for pair, bound in zip(gone[::7], bounds[::7]):
                a, b = selection.pairs[pair]
                assert bound <= pair_distance(world, T_shape, int(a), int(b)).distance_m
        value, pair = sweep.dropped_clearance(world, selection, s.tables, s.dropped, math.inf)
        assert pair in gone and value == pytest.approx(np.min(bounds - selection.margins[gone]))
        result = checker.check_motion(names, q0, q1)
        if result.valid:
            assert result.min_clearance_m <= value
            assert _densely_sampled_violations(checker, names, q0, q1, result.min_clearance_m, steps=200).size == 0
        checked += 1
    assert checked >= 2
