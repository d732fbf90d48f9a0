"""The bool motion check's free tubes (``core/checks/free_tubes.py``) on the Panda with ``config/panda_world.yaml``,
1 cm padding and a tool attached to the hand.

- The joint levers bound how fast every pair's distance changes: on 150 valid
  configurations moved by up to 0.03 rad per joint, no pair's distance (``clearance`` at a
  10 m influence) changed by more than ``levers @ |dq|``.
- Edges beside a free edge that comes within 1 cm of contact (its pieces, and its ends moved
  by up to 0.1 rad), asked after it with tubes on, get CERTIFIED's verdict (a fresh ``check_motion``), and the tubes
  answered a good share of them; colliding ones are among them, so a tube that claimed too
  much would show.
- A scene update drops the tubes: an object put across a free edge makes its pieces invalid.
"""
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.free_tubes import joint_levers
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
SEED = 20_261_207
# the request kinds, in turn per free edge: whole robot, group arm, environment padding off, self padding on
KINDS = (dict(), dict(group_name="arm"), dict(pad_environment_collisions=False), dict(pad_self_collisions=True))
NEAR_M, NEAR_EDGES = 0.01, 40        # free edges at most this close to contact, and how many


@pytest.fixture(scope="module")
def checker(padded_tool_scene):
    """The Panda with the world, 1 cm padding and a tool attached to the hand (conftest, as test_panda_motion_bool)."""
    return CollisionChecker(padded_tool_scene)


def valid_configurations(checker, n, seed, random_configurations):
    robot = checker.scene.robot
    q = random_configurations(robot.lower_limits, robot.upper_limits, 4 * n, seed)
    valid, _ = checker.check_batch(robot.active_joint_names, q)
    assert valid.sum() >= n
    return q[valid][:n]


def row_distances(result):
    """{(configuration, bodies, shapes, subshapes): distance} of a clearance answer."""
    keys = zip(result.configuration_index.tolist(), map(tuple, result.body_names.tolist()),
               map(tuple, result.shape_ids.tolist()), map(tuple, result.subshape_ids.tolist()))
    return dict(zip(keys, result.distance.tolist()))


def test_levers_bound_every_pair_distance_change(checker, random_configurations):
    robot = checker.scene.robot
    names = robot.active_joint_names
    world = checker.scene.world
    validity = checker.motion_validity(names)
    levers = joint_levers(world, validity._selection_for(world))
    assert levers is not None and levers.shape == (len(names),) and (levers > 0).all()
    q = valid_configurations(checker, 150, SEED, random_configurations)
    rng = np.random.default_rng(SEED)
    dq = rng.uniform(-0.03, 0.03, size=q.shape)
    moved = np.clip(q + dq, robot.lower_limits, robot.upper_limits)
    before = row_distances(checker.clearance(names, q, 10.0, compute_jacobians=False))
    after = row_distances(checker.clearance(names, moved, 10.0, compute_jacobians=False))
    reach = np.abs(moved - q) @ levers
    common = before.keys() & after.keys()
    assert len(common) > 1000
    worst = max(abs(after[key] - before[key]) / reach[key[0]] for key in common)
    assert worst <= 1.0 + 1e-9, worst
    assert worst > 0.05                  # the bound is not so loose that it says nothing


def test_edges_beside_a_free_edge_get_certified_verdicts(checker, random_configurations):
    names = checker.scene.robot.active_joint_names
    robot = checker.scene.robot
    q = valid_configurations(checker, 1600, SEED + 1, random_configurations)
    rng = np.random.default_rng(SEED + 1)
    verdicts = {True: 0, False: 0}
    hits = edges = 0
    for q0, q1 in zip(q[0::2], q[1::2]):
        q1 = q0 + 0.25 * (q1 - q0)                     # planner-sized edges
        kind = KINDS[edges % len(KINDS)]
        edge = checker.check_motion(names, q0, q1, **kind)
        if not (edge.valid and edge.min_clearance_m < NEAR_M) or edges == NEAR_EDGES:
            continue                                   # free edges near contact only
        edges += 1
        validity = checker.motion_validity(names, **kind)
        assert validity.is_motion_valid(q0, q1)
        for _ in range(10):
            s, t = np.sort(rng.uniform(0.0, 1.0, 2))
            a, b = q0 + s * (q1 - q0), q0 + t * (q1 - q0)
            if rng.uniform() < 0.7:
                scale = rng.choice([0.003, 0.01, 0.03, 0.1])
                a = np.clip(a + rng.uniform(-scale, scale, len(a)), robot.lower_limits, robot.upper_limits)
                b = np.clip(b + rng.uniform(-scale, scale, len(b)), robot.lower_limits, robot.upper_limits)
            certified = checker.check_motion(names, a, b, **kind)
            assert validity.is_motion_valid(a, b) == certified.valid, (kind, certified.message)
            verdicts[certified.valid] += 1
        hits += validity.tube_hits
    assert edges == NEAR_EDGES
    assert verdicts[True] >= 100 and verdicts[False] >= 3, verdicts
    assert hits >= 0.3 * verdicts[True], (hits, verdicts)


def test_a_scene_update_drops_the_tubes(panda_files):
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene)
    q0 = np.array([-0.3, 0.2, 0.0, -1.8, 0.0, 2.0, 0.785])
    q1 = q0.copy()
    q1[0] = 0.3
    validity = checker.motion_validity(ARM)
    assert validity.is_motion_valid(q0, q1)
    a, b = q0 + 0.4 * (q1 - q0), q0 + 0.6 * (q1 - q0)
    assert validity.is_motion_valid(a, b)
    assert validity.tube_hits == 1                     # the piece was answered from the tube
    robot = scene.robot
    middle = scene.current_positions.copy()
    middle[[robot.active_index(j) for j in ARM]] = 0.5 * (q0 + q1)
    hand = robot.link_transforms_batch(middle[None])[0][robot.link_index("panda_hand")][:3, 3]
    scene.apply([AddObject(SceneObject("block", (ObjectShape(Box((0.05, 0.05, 0.05))),),
                                       make_transform(None, tuple(hand.tolist()))))])
    assert not validity.is_motion_valid(a, b)
    assert not checker.check_motion(ARM, a, b).valid
