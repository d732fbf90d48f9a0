"""The one-configuration fast path of ``CollisionChecker.check`` against the batch path.

``check`` completes, validates, limit-checks, poses and culls one configuration in one
compiled call; ``check_batch`` runs the vectorised code. On a small arm with every kind
of joint (revolute, continuous, prismatic, a mimic), primitive links, world objects
(primitives and a closed mesh a link can sit wholly inside), an attached object,
padding and SRDF groups, both must give the same verdict and status on random
configurations in and out of the limits, with named subsets of the joints; the
messages must be those of the batch path's pieces (``single_configuration``,
``pair_selection``, the first colliding pair in environment-first order).
"""
import threading

import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.kernels import culling as kernels
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.model.robot_model import Box, RobotModel, Sphere, TriangleMesh
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject
from my_collision_pkg.core.model.srdf import parse_srdf
from my_collision_pkg.core.model.transforms import make_transform

N_RANDOM = 600
OUT_OF_LIMITS_FRACTION = 0.15     # each limited joint's range is widened by this on both sides
CONTINUOUS_RANGE_RAD = 4.0
SEED = 9

ARM_URDF = """
<robot name="arm">
  <link name="base"><collision><origin xyz="0 0 0.05"/><geometry><box size="0.3 0.3 0.1"/></geometry></collision></link>
  <link name="upper"><collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.05" length="0.5"/></geometry>
  </collision></link>
  <link name="fore"><collision><origin xyz="0.2 0 0"/><geometry><box size="0.4 0.08 0.08"/></geometry></collision></link>
  <link name="hand"><collision><geometry><sphere radius="0.06"/></geometry></collision></link>
  <link name="finger_a"><collision><geometry><box size="0.02 0.02 0.06"/></geometry></collision></link>
  <link name="finger_b"><collision><geometry><box size="0.02 0.02 0.06"/></geometry></collision></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-2.5" upper="2.5" effort="1" velocity="1"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0 0 0.5"/>
    <axis xyz="0 1 0"/><limit lower="-2.0" upper="2.0" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="continuous"><parent link="fore"/><child link="hand"/><origin xyz="0.45 0 0"/>
    <axis xyz="1 0 0"/></joint>
  <joint name="grip" type="prismatic"><parent link="hand"/><child link="finger_a"/><origin xyz="0.06 0 0.02"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>
  <joint name="grip_mirror" type="prismatic"><parent link="hand"/><child link="finger_b"/>
    <origin xyz="0.06 0 -0.02"/><axis xyz="0 0 1"/><limit lower="-0.04" upper="0" effort="1" velocity="1"/>
    <mimic joint="grip" multiplier="-1"/></joint>
</robot>
"""
ARM_SRDF = """<robot name="arm">
  <group name="reach"><joint name="shoulder"/><joint name="elbow"/></group>
  <group name="gripper"><joint name="grip"/></group>
  <disable_collisions link1="finger_a" link2="finger_b" reason="never"/>
</robot>"""
GROUPS = ("", "reach", "gripper")


def _closed_box_mesh(size):
    mesh = trimesh.creation.box(extents=size)
    return TriangleMesh(np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=np.int64))


def _objects():
    """World objects in reach of the arm, a hollow closed box the hand fits inside, an attached tool."""
    return [
        AddObject(SceneObject("post", (ObjectShape(Box((0.08, 0.08, 1.2))),), make_transform(None, [0.45, 0.2, 0.6]))),
        AddObject(SceneObject("ball", (ObjectShape(Sphere(0.12)),), make_transform(None, [-0.3, -0.35, 0.75]))),
        AddObject(SceneObject("crate", (ObjectShape(_closed_box_mesh((0.5, 0.5, 0.5))),),
                              make_transform(None, [0.0, 0.55, 0.55]))),
        AddObject(SceneObject("tool", (ObjectShape(Box((0.03, 0.03, 0.12))),), make_transform(None, [0.0, 0.0, 0.08]),
                              link="hand", touch_links=("finger_a", "finger_b"))),
    ]


def _scene(padding_m: float = 0.02, objects: bool = True) -> PlanningScene:
    robot = RobotModel.from_urdf_string(ARM_URDF)
    scene = PlanningScene(robot, parse_srdf(ARM_SRDF, robot), default_padding_m=padding_m,
                          link_padding_m={"hand": 0.035})
    if objects:
        scene.apply(_objects())
    return scene


def _random_requests(robot: RobotModel, rng: np.random.Generator, n: int):
    """(names, values) pairs: random non-empty subsets of the active joints in random order."""
    lower, upper = robot.lower_limits, robot.upper_limits
    finite = np.isfinite(lower) & np.isfinite(upper)
    span = np.where(finite, upper - lower, 0.0)
    low = np.where(finite, lower - OUT_OF_LIMITS_FRACTION * span, -CONTINUOUS_RANGE_RAD)
    high = np.where(finite, upper + OUT_OF_LIMITS_FRACTION * span, CONTINUOUS_RANGE_RAD)
    names = robot.active_joint_names
    requests = []
    for _ in range(n):
        q = rng.uniform(low, high)
        if rng.random() < 0.5:
            chosen = np.arange(len(names))
        else:
            chosen = rng.permutation(len(names))[:rng.integers(1, len(names) + 1)]
        requests.append(([names[k] for k in chosen], q[chosen]))
    return requests


def _reference(checker: CollisionChecker, names, values, **options):
    """(valid, status, message) through the batch path and the pieces the message comes from."""
    world = checker.scene.world
    try:
        q = checker.single_configuration(names, values)
        selection = world.pair_selection(options.get("group_name", ""),
                                         options.get("pad_environment_collisions", True),
                                         options.get("pad_self_collisions", False))
    except CollisionPkgError as exc:
        return False, Status.INVALID_REQUEST, str(exc)
    valid, summary = checker.check_batch(names, np.asarray(values)[None, :], **options)
    assert summary.status != Status.INVALID_REQUEST
    robot = checker.scene.robot
    if summary.status == Status.OUT_OF_BOUNDS:
        lower, upper = robot.lower_limits, robot.upper_limits
        k = int(np.flatnonzero((q[0] < lower) | (q[0] > upper))[0])
        return False, Status.OUT_OF_BOUNDS, (f"joint '{robot.active_joint_names[k]}' at {q[0, k]:.6g} is outside "
                                             f"its limits [{lower[k]:.6g}, {upper[k]:.6g}]")
    if summary.status == Status.VALID:
        return True, Status.VALID, "valid"
    hit = int(checker._first_collision(world, q, selection)[0])
    a, b = selection.pairs[hit]
    kind = "self-collision" if world.pair_is_self[selection.index[hit]] else "environment collision"
    return False, Status.IN_COLLISION, f"{kind} between '{world.shapes[a].owner}' and '{world.shapes[b].owner}'"


@pytest.fixture(scope="module")
def arm_scene():
    return _scene()


@pytest.mark.parametrize("check_limits", [True, False])
@pytest.mark.parametrize("pad_environment, pad_self", [(True, False), (False, False), (True, True), (False, True)])
def test_single_equals_batch_on_random_configurations(arm_scene, check_limits, pad_environment, pad_self):
    checker = CollisionChecker(arm_scene, check_joint_limits=check_limits)
    robot = arm_scene.robot
    rng = np.random.default_rng(SEED)
    arm_scene.set_current_positions(["shoulder", "elbow", "wrist", "grip"], [0.3, -0.4, 1.0, 0.02])
    statuses = []
    for k, (names, values) in enumerate(_random_requests(robot, rng, N_RANDOM)):
        options = dict(group_name=GROUPS[k % len(GROUPS)], pad_environment_collisions=pad_environment,
                       pad_self_collisions=pad_self)
        verdict = checker.check(names, values, **options)
        expected = _reference(checker, names, values, **options)
        assert (verdict.valid, verdict.status, verdict.message) == expected, (names, values, options)
        statuses.append(verdict.status)
    seen = set(statuses)
    assert {Status.VALID, Status.IN_COLLISION} <= seen           # both outcomes exercised
    assert (Status.OUT_OF_BOUNDS in seen) == check_limits
    assert statuses.count(Status.IN_COLLISION) >= 20


def test_solid_body_and_padding_refusals_match_the_batch_path(arm_scene):
    """The hand wholly inside the closed crate (no surface contact) and a pair within its padding only."""
    checker = CollisionChecker(arm_scene)
    names = ["shoulder", "elbow", "wrist", "grip"]
    world = arm_scene.world
    # Shoulder turned to +y, elbow level: the hand's centre at (0, 0.45, 0.6), inside the crate.
    inside = [np.pi / 2, 0.0, 0.0, 0.0]
    T_hand = arm_scene.robot.link_transforms(np.array(inside))[arm_scene.robot.link_index("hand")]
    crate = world.objects["crate"].T_frame_object
    assert np.all(np.abs(T_hand[:3, 3] - crate[:3, 3]) < 0.25 - 0.06)
    for options in ({}, {"pad_environment_collisions": False}):
        verdict = checker.check(names, inside, **options)
        assert not verdict.valid and "'crate'" in verdict.message
        assert (verdict.valid, verdict.status, verdict.message) == _reference(checker, names, inside, **options)
    # Configurations refused only because of padding (hand 0.035 m, other links 0.02 m):
    # a sweep of the shoulder and elbow must find some, and both paths must agree on them.
    padding_only = 0
    for shoulder in np.linspace(-2.5, 2.5, 41):
        for elbow in np.linspace(-2.0, 2.0, 41):
            q = [shoulder, elbow, 0.0, 0.0]
            padded = checker.check(names, q)
            bare = checker.check(names, q, pad_environment_collisions=False)
            if bare.valid and not padded.valid:
                padding_only += 1
                assert (padded.valid, padded.status, padded.message) == _reference(checker, names, q)
                assert bare == checker.check(names, q, pad_environment_collisions=False)
                assert _reference(checker, names, q, pad_environment_collisions=False)[:2] == (True, Status.VALID)
    assert padding_only > 0


@pytest.mark.parametrize("names, positions", [
    (["shoulder"], [float("nan")]),
    (["elbow", "shoulder"], [0.1, float("-inf")]),
    (["shoulder"], [0.1, 0.2]),
    (["shoulder", "elbow"], [0.1]),
    (["shoulder"], [[0.1]]),
    (["nope"], [0.0]),
    (["shoulder", "shoulder"], [0.0, 0.0]),
    (["grip_mirror"], [0.0]),
    ([], []),
])
def test_bad_input_gives_the_same_message(arm_scene, names, positions):
    checker = CollisionChecker(arm_scene)
    with pytest.raises(CollisionPkgError) as raised:
        checker.single_configuration(names, positions)
    for attempt in range(2):         # the second time the joint names may be cached
        verdict = checker.check(names, positions)
        assert (verdict.valid, verdict.status, verdict.message) == (False, Status.INVALID_REQUEST, str(raised.value))
        assert checker.explain(names, positions).message == str(raised.value)


def test_unknown_group_after_the_configuration_faults(arm_scene):
    checker = CollisionChecker(arm_scene)
    v = checker.check(["shoulder"], [0.1], group_name="nope")
    assert v.status == Status.INVALID_REQUEST and "nope" in v.message
    v = checker.check(["shoulder"], [float("nan")], group_name="nope")     # the configuration's fault first
    assert v.status == Status.INVALID_REQUEST and "non-finite" in v.message


def test_any_input_form_uses_the_one_compiled_signature(arm_scene):
    checker = CollisionChecker(arm_scene)
    names = list(arm_scene.robot.active_joint_names)
    read_only = np.zeros(len(names))
    read_only.setflags(write=False)
    forms = [[0.0] * len(names), [0] * len(names), np.zeros(len(names), dtype=np.float32), read_only,
             np.zeros((len(names), 3))[:, 1], tuple(np.zeros(len(names)))]
    verdicts = [checker.check(names, form) for form in forms]
    assert len({(v.valid, v.status, v.message) for v in verdicts}) == 1
    assert len(kernels.single_configuration_candidates.signatures) == 1


def test_world_snapshots_of_different_sizes_interleaved():
    """Per-thread buffers follow the snapshot: one with objects, one without, alternating."""
    scene = _scene(objects=False)
    bare = scene.world
    scene.apply(_objects())
    full = scene.world
    checker = CollisionChecker(scene)
    names = list(scene.robot.active_joint_names)
    rng = np.random.default_rng(SEED + 1)
    Q = rng.uniform(scene.robot.lower_limits.clip(-3, 3), scene.robot.upper_limits.clip(-3, 3), size=(200, 4))
    expected = {id(w): checker.check_batch(names, Q, world=w)[0] for w in (bare, full)}
    assert not np.array_equal(expected[id(bare)], expected[id(full)])
    for k, q in enumerate(Q):
        for w in (bare, full) if k % 2 else (full, bare):
            assert checker.check(names, q, world=w).valid == expected[id(w)][k]


def test_threads_calling_check_at_once_agree_with_the_batch(arm_scene):
    checker = CollisionChecker(arm_scene)
    names = list(arm_scene.robot.active_joint_names)
    rng = np.random.default_rng(SEED + 2)
    Q = rng.uniform(arm_scene.robot.lower_limits.clip(-3, 3), arm_scene.robot.upper_limits.clip(-3, 3),
                    size=(400, 4))
    expected, _ = checker.check_batch(names, Q)
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(4)

    def worker(t: int) -> None:
        start.wait()
        order = np.random.default_rng(t).permutation(len(Q))
        out = np.zeros(len(Q), dtype=bool)
        for _ in range(3):
            for k in order:
                out[k] = checker.check(names, Q[k]).valid
        results[t] = out

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for out in results.values():
        np.testing.assert_array_equal(out, expected)
