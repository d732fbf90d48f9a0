"""Certified motions on the time grid (kernels/grid_advance.py) against every pair on its own clock,
and with the halving prefix against forward steps only.

The grid changes where steps end (never beyond the step the bound allows) and shares
poses and levers between pairs; it must not change a verdict, must never report a
contact later than the true first one, and its cached speed bounds must be its bounding
spheres' (never below ``advancement.pair_speed``'s, which also takes the box corners).
"""
import math
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks import sweep
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.results import MotionMode
from my_collision_pkg.core.kernels import advancement as mk
from my_collision_pkg.core.kernels import grid_advance as gk
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")     # a table and a post
BALL_RADIUS_M = 0.005
SLIDER_URDF = f"""
<robot name="slider">
  <link name="base"/>
  <link name="ball"><collision><geometry><sphere radius="{BALL_RADIUS_M}"/></geometry></collision></link>
  <joint name="x" type="prismatic">
    <parent link="base"/><child link="ball"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
  </joint>
</robot>
"""


@pytest.fixture
def grid_on_and_off():
    """Restores sweep.GRID_STEPS and sweep.DYADIC_PREFIX after a test that switches them."""
    saved = sweep.GRID_STEPS, sweep.DYADIC_PREFIX
    yield
    sweep.GRID_STEPS, sweep.DYADIC_PREFIX = saved


@pytest.mark.parametrize("t, h, reserve", [(0.0, 0.3, 1.0), (0.1, 0.07, 0.2), (0.40625, 0.02, 0.5),
                                           (0.5, 0.001, 1.0), (0.9, 0.2, 1.0), (0.3, 0.2, 0.01)])
def test_a_snapped_step_is_never_longer_and_keeps_its_share(t, h, reserve):
    end = gk.snapped(t, h, reserve)
    assert t < end <= t + h
    if end != t + h:                         # snapped: a grid time, most of the step kept
        assert end * gk.GRID == math.floor(end * gk.GRID)
        assert end - t >= gk.SNAP_KEEP * h
        assert reserve >= gk.SNAP_GAP_M and t + h < 1.0
    assert sweep.snapped_step(t, h, reserve) == end       # the Python steps snap alike


def test_grid_index_only_on_grid_times():
    assert gk.grid_index(0.0) == 0 and gk.grid_index(1.0) == gk.GRID
    assert gk.grid_index(3 / gk.GRID) == 3
    assert gk.grid_index(0.5 / gk.GRID) == -1 and gk.grid_index(1.5) == -1


def test_the_cache_grid_holds_every_step_grid_time():
    assert gk.CACHE_GRID % gk.GRID == 0
    assert gk.cache_index(3 / gk.GRID) == 3 * (gk.CACHE_GRID // gk.GRID)
    assert gk.cache_index(1.0) == gk.CACHE_GRID and gk.cache_index(0.5 / gk.CACHE_GRID) == -1


@pytest.mark.parametrize("plate_x_m", [0.1234, 0.5118, 0.8777])
@pytest.mark.parametrize("grid", [False, True])
def test_a_fast_ball_meets_a_thin_plate_at_the_analytic_time(plate_x_m, grid, grid_on_and_off):
    # a 0.1 mm plate crossed at 6 m per unit time: a step too long by a hair would jump it
    sweep.GRID_STEPS = grid
    scene = load_scene(urdf_xml=SLIDER_URDF)
    T = np.eye(4)
    T[0, 3] = plate_x_m + 0.00005
    scene.apply([AddObject(SceneObject("plate", (ObjectShape(Box((0.0001, 1.0, 1.0))),), T))])
    checker = CollisionChecker(scene)
    result = checker.check_motion(["x"], [-3.0], [3.0])
    first = (plate_x_m - BALL_RADIUS_M + 3.0) / 6.0      # the ball's first touch, analytic
    assert not result.valid
    assert result.cc_time <= first + 1e-12
    assert result.cc_time == pytest.approx(first, abs=1e-4)
    coarse = checker.check_motion(["x"], [-3.0], [3.0], mode=MotionMode.DISCRETE, max_step=0.05)
    assert coarse.valid                       # sampling jumps the plate: the case is a real test


@pytest.fixture(scope="module")
def panda():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene)
    robot = scene.robot
    rng = np.random.default_rng(17)
    samples = rng.uniform(robot.lower_limits, robot.upper_limits, size=(240, len(robot.lower_limits)))
    valid, _ = checker.check_batch(robot.active_joint_names, samples)
    good = samples[valid]
    return checker, list(zip(good[0::2][:14], good[1::2][:14]))


# GRID_STEPS: the time grid against every pair on its own clock; DYADIC_PREFIX: the halving
# prefix (grid_advance.certify_dyadic, intervals certified from both ends) against forward
# steps only
@pytest.mark.parametrize("switch", ["GRID_STEPS", "DYADIC_PREFIX"])
def test_panda_grid_verdicts_equal_own_clocks_and_never_late(panda, grid_on_and_off, switch):
    checker, edges = panda
    names = checker.scene.robot.active_joint_names
    invalid = 0
    for q0, q1 in edges:
        setattr(sweep, switch, True)
        grid = checker.check_motion(names, q0, q1)
        setattr(sweep, switch, False)
        plain = checker.check_motion(names, q0, q1)
        assert grid.valid == plain.valid
        if grid.valid:
            assert grid.min_clearance_m >= 0.0
            continue
        invalid += 1
        # the first touch is certified: never after a fine discrete reference's first invalid sample
        reference = checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=2e-3)
        if not reference.valid:
            assert grid.cc_time <= reference.cc_time + 1e-12
    assert 0 < invalid < len(edges)


def _sphere_speed(s, T_link, T_shape, q):
    """V0 of pair q from the bounding spheres' levers in numpy: per joint that moves one body
    and not the other, |dq| (prismatic) or |dq| x (centre's distance from the axis + radius)."""
    speed = mk.SpeedArrays(*s.speed_pack)
    v0 = 0.0
    for side, (W, shape) in enumerate(((speed.W_a, s.a[q]), (speed.W_b, s.b[q]))):
        centre = T_shape[shape, :3, :3] @ speed.centre_shape[shape] + T_shape[shape, :3, 3]
        for j in range(len(speed.adq)):
            if W[q, j] == 0.0 or speed.adq[j] == 0.0:
                continue
            if speed.prismatic[j]:
                v0 += speed.adq[j]
                continue
            J = speed.child_link[j]
            axis = T_link[J, :3, :3] @ speed.axis[j]
            r = centre - T_link[J, :3, 3]
            v0 += speed.adq[j] * (np.linalg.norm(r - (r @ axis) * axis) + speed.radius[shape])
    return v0


def test_cached_levers_give_the_sphere_speed_bound_never_below_pair_speed(panda):
    # the grid's levers are the bounding spheres' (pair_speed also takes the bounding box
    # corners where they are nearer the axis): V0 is the spheres' sum, V1 pair_speed's
    checker, edges = panda
    world = checker.scene.world
    request = CheckRequest()
    selection = request.selection(world)
    q0, q1 = edges[0]
    s = sweep.Sweep(world, selection, request, q0, q1, 1e-4)
    speed = mk.SpeedArrays(*s.speed_pack)
    corners = np.empty((8, 3))
    n_mov = len(s.adq)
    looser = 0
    for t in (0.0, 0.37, 1.0):
        T_link, T_shape = s.poses(np.array([t]))
        for q in range(len(s.pairs)):
            a, b = int(s.a[q]), int(s.b[q])
            expected = mk.pair_speed(T_link[0], np.ascontiguousarray(T_shape[0, a]),
                                     np.ascontiguousarray(T_shape[0, b]), a, b, q, s.speed_pack, corners)
            lever_a, lever_b = np.zeros(n_mov), np.zeros(n_mov)
            gk.shape_levers(T_link[0], np.ascontiguousarray(T_shape[0, a]), a, speed, lever_a)
            if world.shape_link[b] >= 0:
                gk.shape_levers(T_link[0], np.ascontiguousarray(T_shape[0, b]), b, speed, lever_b)
            got = gk.speed_from_levers(q, a, b, lever_a, lever_b, speed)
            assert got[0] == pytest.approx(_sphere_speed(s, T_link[0], T_shape[0], q), rel=1e-12, abs=1e-15)
            assert got[1] == pytest.approx(expected[1], rel=1e-12, abs=1e-15)
            assert got[0] >= expected[0] * (1 - 1e-12)
            looser += got[0] > expected[0] * (1 + 1e-9)
    assert looser > 0              # the corners do tighten some pairs: the two bounds differ


def test_the_speed_bound_holds_against_true_point_speeds(panda):
    # the bound V0 + h V1 from time t must exceed how fast any corner of a link's box moves
    # (finite differences of its world position) over [t, t + h] of a Panda motion
    checker, edges = panda
    world = checker.scene.world
    request = CheckRequest()
    selection = request.selection(world)
    q0, q1 = edges[1]
    s = sweep.Sweep(world, selection, request, q0, q1, 1e-4)
    env = [q for q in range(len(s.pairs)) if world.shape_link[s.b[q]] < 0]   # robot shape vs world object
    assert env
    corners = np.empty((8, 3))
    h = 0.1
    for t in (0.0, 0.45):
        T_link, T_shape = s.poses(np.array([t]))
        times = t + np.linspace(0.0, h, 201)
        _, T_path = s.poses(times)
        for q in env:
            a, b = int(s.a[q]), int(s.b[q])
            V0, V1 = mk.pair_speed(T_link[0], np.ascontiguousarray(T_shape[0, a]),
                                   np.ascontiguousarray(T_shape[0, b]), a, b, q, s.speed_pack, corners)
            box = s.box_local[a]                                           # (8, 3), shape frame
            points = np.einsum("kij,pj->kpi", T_path[:, a, :3, :3], box) + T_path[:, a, None, :3, 3]
            speed = np.linalg.norm(np.diff(points, axis=0), axis=2).max() / (times[1] - times[0])
            assert speed <= (V0 + h * V1) * (1 + 1e-6)


def test_panda_halving_clearance_is_below_the_sampled_distances(panda):
    # a certified clearance (the halving prefix's included) is a lower bound: never above the
    # checker's own clearance at any sample of the motion (every pair, exact narrow phase)
    checker, edges = panda
    names = checker.scene.robot.active_joint_names
    assert sweep.DYADIC_PREFIX
    checked = 0
    for q0, q1 in edges[:8]:
        result = checker.check_motion(names, q0, q1)
        if not result.valid:
            continue
        checked += 1
        sampled = min(float(np.min(checker.clearance(names, q0 + s * (q1 - q0), 1.0).distance, initial=np.inf))
                      for s in np.linspace(0.0, 1.0, 201))
        assert result.min_clearance_m <= sampled + 1e-9
    assert checked >= 3
