"""Planning with OMPL's Python bindings through my_collision_pkg.planning.ompl, on the Panda with
``config/panda_world.yaml`` (skipped by name where ``ompl`` is not installed).

- RRTConnect and the lazy LBKPIECE1 solve fixed pairs (the SRDF's ``default`` state to
  configurations beside and past the post) with the certified edge check, paths simplified;
  every final segment is valid by the certified ``check_motion``.
- A pair whose only passage is through a 1 mm plate (joint 1 alone, the stretched-out arm:
  the demo's swing): OMPL-resolution sampling (0.01 of the extent) jumps over the plate, and
  with our validator the planner finds no path.
"""
import os

import numpy as np
import pytest

pytest.importorskip("ompl", reason="OMPL's Python bindings (pip install ompl==2.0.1) are not installed")

from my_collision_pkg.core.checks.checker import CollisionChecker  # noqa: E402
from my_collision_pkg.core.errors import RequestError  # noqa: E402
from my_collision_pkg.core.scene.loading import load_scene  # noqa: E402
from my_collision_pkg.planning import ompl as adapters  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
PLAN_SEED = 7
TIME_LIMIT_S = 10.0
# arm configurations (group "arm", joints 1-7): the hand beside the post, on its two sides, and
# reaching over the table
BESIDE_POST_A = [1.2, 0.6, 0.0, -1.6, 0.0, 2.2, 0.785]
BESIDE_POST_B = [1.95, 0.6, 0.0, -1.6, 0.0, 2.2, 0.785]
OVER_TABLE = [0.0, 0.78, 0.0, -1.2, 0.0, 1.571, 0.785]
FIXED_PAIRS = (("default", BESIDE_POST_A), (BESIDE_POST_A, BESIDE_POST_B), (OVER_TABLE, BESIDE_POST_B))
STRETCHED = [0.0, 1.3, 0.0, -0.2, 0.0, 1.5, -0.785]


@pytest.fixture(scope="module", autouse=True)
def quiet_and_seeded():
    adapters.set_log_level("error")
    adapters.seed_random(PLAN_SEED)


@pytest.fixture(scope="module")
def checker(panda_files):
    urdf, srdf = panda_files
    return CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD))


def test_fixed_pairs_are_valid_ends_with_colliding_lines(checker):
    arm = adapters.group_joint_names(checker, "arm")
    assert arm == tuple(f"panda_joint{i}" for i in range(1, 8))
    lines_colliding = 0
    for start, goal in FIXED_PAIRS:
        a = adapters.named_configuration(checker, start, arm) if isinstance(start, str) else np.array(start)
        assert checker.check(arm, a).valid and checker.check(arm, goal).valid
        lines_colliding += not checker.check_motion(arm, a, goal).valid
    assert lines_colliding >= 1                          # at least one pair needs a way around


@pytest.mark.parametrize("planner", ["RRTConnect", adapters.LAZY_PLANNER])
def test_plans_succeed_and_every_segment_is_certified(checker, planner):
    for start, goal in FIXED_PAIRS:
        result = adapters.plan(checker, start, goal, planner=planner, time_limit_s=TIME_LIMIT_S)
        assert result.solved, (planner, start, goal)
        assert result.motion_checks > 0 and result.state_checks > 0
        first = adapters.named_configuration(checker, start, result.joint_names) if isinstance(start, str) \
            else np.array(start)
        np.testing.assert_allclose(result.path[0], first, atol=1e-9)
        np.testing.assert_allclose(result.path[-1], goal, atol=1e-9)
        for verdict in adapters.segment_verdicts(checker, result, group_name="arm"):
            assert verdict.valid, verdict.message
        assert "waypoints" in result.format()


def test_discrete_validator_for_comparison(checker):
    result = adapters.plan(checker, BESIDE_POST_A, BESIDE_POST_B, validator="discrete", time_limit_s=TIME_LIMIT_S)
    assert result.solved and result.motion_checks > 0


def test_thin_plate_no_path_through_it(thin_plate_scene):
    arm = [f"panda_joint{i}" for i in range(1, 8)]
    thin_plate_scene.set_current_positions(arm, STRETCHED)     # the joints not planned keep these values
    checker = CollisionChecker(thin_plate_scene)
    joint = ["panda_joint1"]
    start, goal = [-0.5], [0.5]
    assert checker.check(joint, start).valid and checker.check(joint, goal).valid
    # sampling at OMPL's default resolution (0.01 of joint 1's 5.8 rad range) steps over the plate
    space, names = adapters.joint_state_space(checker, joint_names=joint)
    segments = int(np.ceil(1.0 / (adapters.OMPL_DEFAULT_RESOLUTION * space.getMaximumExtent())))
    validity = checker.motion_validity(names)
    assert validity.is_motion_valid_discrete(start, goal, segments=segments)
    assert not validity.is_motion_valid(start, goal)
    # ours: the only passage is through the plate, so there is no path
    result = adapters.plan(checker, start, goal, joint_names=joint, time_limit_s=1.0)
    assert not result.solved
    assert result.motion_checks > 0


def test_unknown_names_are_named(checker):
    with pytest.raises(RequestError, match="no_such_state"):
        adapters.plan(checker, "no_such_state", OVER_TABLE)
    with pytest.raises(RequestError, match="LazyPRM"):
        adapters.plan(checker, OVER_TABLE, BESIDE_POST_A, planner="LazyPRM")
    with pytest.raises(RequestError, match="unknown validator"):
        adapters.plan(checker, OVER_TABLE, BESIDE_POST_A, validator="sometimes")
