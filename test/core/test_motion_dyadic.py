"""Certified motions with the halving prefix (grid_advance.certify_dyadic) against forward steps only.

Halving certifies an interval from the bounds at both its ends; it must not change a
verdict, must never report a contact later than the true first one, and the certified
clearance it reports must stay a lower bound of the exact distances along the motion.
"""
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks import sweep
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import MotionMode
from my_collision_pkg.core.kernels import grid_advance as gk
from my_collision_pkg.core.scene.loading import load_scene, panda_paths

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")     # a table and a post


@pytest.fixture
def prefix_on_and_off():
    saved = sweep.DYADIC_PREFIX
    yield
    sweep.DYADIC_PREFIX = saved


@pytest.fixture(scope="module")
def panda():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene)
    robot = scene.robot
    rng = np.random.default_rng(29)
    samples = rng.uniform(robot.lower_limits, robot.upper_limits, size=(240, len(robot.lower_limits)))
    valid, _ = checker.check_batch(robot.active_joint_names, samples)
    good = samples[valid]
    return checker, list(zip(good[0::2][:16], good[1::2][:16]))


def test_panda_halving_keeps_verdicts_and_is_never_late(panda, prefix_on_and_off):
    checker, edges = panda
    names = checker.scene.robot.active_joint_names
    invalid = 0
    for q0, q1 in edges:
        sweep.DYADIC_PREFIX = True
        halving = checker.check_motion(names, q0, q1)
        sweep.DYADIC_PREFIX = False
        forward = checker.check_motion(names, q0, q1)
        assert halving.valid == forward.valid
        if halving.valid:
            assert halving.min_clearance_m >= 0.0
            continue
        invalid += 1
        reference = checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=2e-3)
        if not reference.valid:
            assert halving.cc_time <= reference.cc_time + 1e-12
    assert 0 < invalid < len(edges)


def test_panda_halving_clearance_is_below_the_sampled_distances(panda, prefix_on_and_off):
    # a certified clearance is a lower bound: never above the checker's own clearance at any
    # sample of the motion (every pair, exact narrow phase)
    checker, edges = panda
    names = checker.scene.robot.active_joint_names
    sweep.DYADIC_PREFIX = True
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


def test_the_cache_grid_holds_every_step_grid_time():
    assert gk.CACHE_GRID % gk.GRID == 0
    assert gk.cache_index(3 / gk.GRID) == 3 * (gk.CACHE_GRID // gk.GRID)
    assert gk.cache_index(1.0) == gk.CACHE_GRID and gk.cache_index(0.5 / gk.CACHE_GRID) == -1
