"""Bounded work per request: each WorkLimits bound refused by name, the stop event, and motion
checks that cull far world objects without changing a verdict (small inline robots)."""
import threading
import time

import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance, motion, pair_tests, sweep
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.limits import WorkLimits
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.results import MotionMode, Status
from my_collision_pkg.core.errors import CollisionPkgError, RequestStopped, WorkLimitError
from my_collision_pkg.core.model.shapes import Box, Sphere
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

# No clock in these tests (their verdicts must not depend on the machine's speed or load): a
# refusal "before any work" is shown by the search never being entered (_no_search), a stop by
# a stop event that reads as set from its n-th look on (_SetAfterLooks).

# A three-joint arm: yaw about z at the origin, pitch about y at 0.3 m up, and a prismatic
# forearm along the upper arm's x; spheres and a box on its links.
ARM_URDF = """
<robot name="arm3">
  <link name="base"/>
  <link name="turret"><collision><origin xyz="0 0 0.15"/><geometry><box size="0.1 0.1 0.3"/></geometry></collision></link>
  <link name="upper"><collision><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.06 0.06"/></geometry></collision></link>
  <link name="fore"><collision><origin xyz="0.1 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="yaw" type="revolute"><parent link="base"/><child link="turret"/><axis xyz="0 0 1"/>
    <limit lower="-3.1" upper="3.1" effort="1" velocity="1"/></joint>
  <joint name="pitch" type="revolute"><parent link="turret"/><child link="upper"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-1.5" upper="1.5" effort="1" velocity="1"/></joint>
  <joint name="reach" type="prismatic"><parent link="upper"/><child link="fore"/><origin xyz="0.5 0 0"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.3" effort="1" velocity="1"/></joint>
</robot>
"""
JOINTS = ["yaw", "pitch", "reach"]
LOWER, UPPER = np.array([-3.1, -1.5, 0.0]), np.array([3.1, 1.5, 0.3])


def chain_urdf(n_links: int, length_m: float = 0.1) -> str:
    """A straight chain of ``n_links`` boxes on revolute joints (axes alternating y and x)."""
    parts = ['<robot name="chain">', '<link name="l0"/>']
    for k in range(1, n_links + 1):
        parts.append(f'<link name="l{k}"><collision><origin xyz="0 0 {length_m / 2}"/><geometry>'
                     f'<box size="0.02 0.02 {length_m * 0.8}"/></geometry></collision></link>')
        parts.append(f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
                     f'<origin xyz="0 0 {length_m if k > 1 else 0}"/><axis xyz="{"0 1 0" if k % 2 else "1 0 0"}"/>'
                     '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    parts.append("</robot>")
    return "\n".join(parts)


def _pose(x=0.0, y=0.0, z=0.0):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _add(scene, name, shape, T):
    scene.apply([AddObject(SceneObject(name, (ObjectShape(shape),), T))])


@pytest.fixture
def arm():
    return CollisionChecker(load_scene(urdf_xml=ARM_URDF), check_joint_limits=False)


def _crowded_scene(seed: int, n_objects: int = 150, nearest_m: float = 0.3):
    """The arm among ``n_objects`` small spheres and boxes ``nearest_m`` to 3 m from the shoulder
    (it reaches 1.2 m: most are beyond its reach, some, by default, within it); one add for all
    (a scene of many world-object pairs)."""
    scene = load_scene(urdf_xml=ARM_URDF)
    rng = np.random.default_rng(seed)
    updates = []
    for k in range(n_objects):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        centre = np.array([0.0, 0.0, 0.3]) + direction * rng.uniform(nearest_m, 3.0)
        shape = Sphere(float(rng.uniform(0.01, 0.05))) if k % 2 else Box(tuple(rng.uniform(0.01, 0.08, 3)))
        updates.append(AddObject(SceneObject(f"obj{k}", (ObjectShape(shape),), _pose(*centre))))
    scene.apply(updates)
    return scene


class _SearchEntered(AssertionError):
    pass


def _no_search(call, monkeypatch):
    """``call()``'s result, failing if it entered a certified search (``Sweep.first_touch``) or sampled a motion
    (``motion.discrete_motion``): the refusals below are made from the request alone, before any work
    proportional to what it asks."""
    def entered(*args, **kwargs):
        raise _SearchEntered("the request was searched before it was refused")
    with monkeypatch.context() as patched:
        patched.setattr(sweep.Sweep, "first_touch", entered)
        patched.setattr(motion, "discrete_motion", entered)
        return call()


# ----- each bound refused by name ---------------------------------------------------
def test_a_huge_joint_delta_is_refused_by_name_at_once(arm, monkeypatch):
    result = _no_search(lambda: arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [1e20, 0.0, 0.0]), monkeypatch)
    assert result.status == Status.INVALID_REQUEST and not result.valid
    assert "max_joint_delta" in result.message and "'yaw'" in result.message and "1e+20" in result.message
    assert "split" in result.message
    # the same in a trajectory segment, and in discrete mode
    traj = arm.check_trajectory(JOINTS, [[0.0, 0.0, 0.0], [0.0, 1e20, 0.0]], [0.0, 1.0])
    assert traj.status == Status.INVALID_REQUEST and "max_joint_delta" in traj.message and "'pitch'" in traj.message
    discrete = arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [1e20, 0.0, 0.0], mode=MotionMode.DISCRETE, max_step=0.1)
    assert discrete.status == Status.INVALID_REQUEST and "max_joint_delta" in discrete.message


def test_a_clearance_answer_beyond_its_rows_bound_is_refused_by_name(arm):
    scene = _crowded_scene(3, n_objects=40, nearest_m=0.1)
    rows = np.zeros((20, len(JOINTS)))
    full = CollisionChecker(scene, check_joint_limits=False).clearance(JOINTS, rows, 3.0)
    assert full.ok and len(full) > 100
    bounded = CollisionChecker(scene, check_joint_limits=False,
                               limits=WorkLimits(max_clearance_rows=len(full) - 1)).clearance(JOINTS, rows, 3.0)
    assert bounded.status == Status.INVALID_REQUEST and len(bounded) == 0
    assert "max_clearance_rows" in bounded.message and str(len(full)) in bounded.message
    assert "max_rows_per_configuration" in bounded.message
    # at the bound it is served
    exact = CollisionChecker(scene, check_joint_limits=False,
                             limits=WorkLimits(max_clearance_rows=len(full))).clearance(JOINTS, rows, 3.0)
    assert exact.ok and len(exact) == len(full)


def test_a_clearance_far_beyond_its_rows_bound_stops_at_the_bound_not_after_the_work(monkeypatch):
    """The rows are counted chunk by chunk: a request that would give about 100x the bound is
    refused after about the bound's worth of configurations, in this process and with workers."""
    scene = _crowded_scene(3, n_objects=40, nearest_m=0.1)
    probe = CollisionChecker(scene, check_joint_limits=False).clearance(JOINTS, np.zeros((1, 3)), 3.0)
    per_configuration = len(probe)
    assert per_configuration > 20
    bound = 50 * per_configuration
    n = 5000                                     # about 100x the bound's rows
    worked = []
    original = clearance.chunk_rows

    def counting(world, selection, q, *args, **kwargs):
        worked.append(len(q))
        return original(world, selection, q, *args, **kwargs)

    monkeypatch.setattr(clearance, "chunk_rows", counting)
    monkeypatch.setattr(clearance, "CLEARANCE_CHUNK", 16)
    for workers in (1, 2):
        worked.clear()
        checker = CollisionChecker(scene, check_joint_limits=False, batch_workers=workers,
                                   limits=WorkLimits(max_clearance_rows=bound))
        try:
            result = checker.clearance(JOINTS, np.zeros((n, 3)), 3.0)
        finally:
            checker.close()
        assert result.status == Status.INVALID_REQUEST and len(result) == 0
        assert "max_clearance_rows" in result.message and "max_rows_per_configuration" in result.message
        assert f"of its {n} configurations" in result.message
        # this process's chunks: at most the bound's configurations and one chunk more (the workers' chunks
        # are not seen here; the refusal still stops handing them out)
        assert sum(worked) <= bound // per_configuration + 16


def test_clearance_chunks_hold_a_bounded_number_of_candidate_rows(monkeypatch):
    """Memory per request stays bounded in a world of many objects at a huge influence: each chunk
    holds at most CLEARANCE_CHUNK_CANDIDATES configuration x pair candidates."""
    scene = _crowded_scene(5, n_objects=202, nearest_m=0.1)
    checker = CollisionChecker(scene, check_joint_limits=False, batch_workers=1)
    n_pairs = len(checker.clearance(JOINTS, np.zeros((1, 3)), 100.0))
    assert n_pairs >= 202
    sizes = []
    original = clearance.chunk_rows

    def counting(world, selection, q, *args, **kwargs):
        sizes.append((len(q), len(selection.pairs)))
        return original(world, selection, q, *args, **kwargs)

    monkeypatch.setattr(clearance, "chunk_rows", counting)
    monkeypatch.setattr(clearance, "CLEARANCE_CHUNK_CANDIDATES", 4 * n_pairs)
    result = checker.clearance(JOINTS, np.zeros((40, 3)), 100.0)
    assert result.ok and len(result) == 40 * n_pairs
    assert len(sizes) == 10 and all(m * pairs <= 4 * n_pairs for m, pairs in sizes)
    refused = CollisionChecker(scene, check_joint_limits=False, batch_workers=1,
                               limits=WorkLimits(max_clearance_rows=5 * n_pairs)).clearance(
        JOINTS, np.zeros((4000, 3)), 100.0)
    assert refused.status == Status.INVALID_REQUEST and "max_clearance_rows" in refused.message


@pytest.mark.parametrize("max_step", [1e-6, 1e-9, 1e-300])
def test_a_tiny_discrete_step_is_refused_by_the_samples_bound(arm, max_step, monkeypatch):
    result = _no_search(lambda: arm.check_motion(JOINTS, [-2.8, 0.0, 0.0], [2.8, 0.0, 0.0],
                                                 mode=MotionMode.DISCRETE, max_step=max_step), monkeypatch)
    assert result.status == Status.INVALID_REQUEST
    assert "max_motion_samples" in result.message and f"{WorkLimits().max_motion_samples:,}" in result.message
    assert "max_step" in result.message          # how to split: a larger step


def test_the_samples_bound_counts_a_whole_discrete_trajectory(arm):
    points = np.linspace([-2.8, 0.0, 0.0], [2.8, 0.0, 0.0], 100)
    arm.limits = WorkLimits(max_motion_samples=1000)
    # 99 segments of 0.0566 rad: 6 intervals (7 samples) each at 0.01 rad = 693 samples, allowed
    ok = arm.check_trajectory(JOINTS, points, np.arange(100.0), mode=MotionMode.DISCRETE, max_step=0.01)
    assert ok.status != Status.INVALID_REQUEST, ok.message
    # at 0.005 rad: 13 samples per segment, 1287 in all
    refused = arm.check_trajectory(JOINTS, points, np.arange(100.0), mode=MotionMode.DISCRETE, max_step=0.005)
    assert refused.status == Status.INVALID_REQUEST
    assert "max_motion_samples = 1,000" in refused.message and "1,287 samples" in refused.message


def test_too_many_waypoints_are_refused_before_they_are_read(arm, monkeypatch):
    n = WorkLimits().max_trajectory_waypoints + 1
    cheap = np.broadcast_to(np.zeros(3), (n, 3))                  # no memory per waypoint
    result = _no_search(lambda: arm.check_trajectory(JOINTS, cheap, np.zeros(n)), monkeypatch)
    assert result.status == Status.INVALID_REQUEST
    assert "max_trajectory_waypoints" in result.message and f"{n:,} waypoints" in result.message
    rows = [[0.0, 0.0, 0.0]] * 1_000_000                          # a list: refused by its length too
    result = _no_search(lambda: arm.check_trajectory(JOINTS, rows, [0.0] * len(rows)), monkeypatch)
    assert result.status == Status.INVALID_REQUEST and "1,000,000 waypoints" in result.message


def test_a_long_chain_is_refused_by_the_steps_bound_quickly():
    scene = load_scene(urdf_xml=chain_urdf(300))
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    result = checker.check_motion(names, np.zeros(300), np.full(300, 0.02))
    assert result.status == Status.INVALID_REQUEST
    assert "max_certified_steps" in result.message and f"{WorkLimits().max_certified_steps:,}" in result.message
    # refused by the pairs' first bound evaluations alone (WorkMeter.refuse_pairs), before any step was spent
    assert "need at least" in result.message and "already spent" not in result.message
    # a group of its last links checks few pairs: that motion is searched, not refused
    assert "fewer pairs" in result.message


def test_the_steps_bound_refuses_a_search_that_runs_out_midway():
    arm = CollisionChecker(_crowded_scene(3), check_joint_limits=False)
    start, goal = [-3.0, 0.2, 0.0], [3.0, -0.2, 0.3]
    free = arm.check_motion(JOINTS, start, goal)
    assert free.status in (Status.VALID, Status.IN_COLLISION)
    meter_steps = []
    original = sweep.Sweep.first_touch

    def recording(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            meter_steps.append(self.meter.steps)
    sweep.Sweep.first_touch = recording
    try:
        arm.check_motion(JOINTS, start, goal)
    finally:
        sweep.Sweep.first_touch = original
    spent = meter_steps[-1]
    assert spent > 100
    arm.limits = WorkLimits(max_certified_steps=spent // 2)
    result = arm.check_motion(JOINTS, start, goal)
    assert result.status == Status.INVALID_REQUEST and "max_certified_steps" in result.message
    assert "split the motion into about" in result.message
    # a trajectory spends one budget over all its segments
    points = np.linspace(start, goal, 5)
    arm.limits = WorkLimits(max_certified_steps=spent)
    traj = arm.check_trajectory(JOINTS, np.concatenate([points, points[::-1]]), np.arange(10.0))
    assert traj.status == Status.INVALID_REQUEST and "max_certified_steps" in traj.message
    assert "the trajectory" in traj.message


def test_limits_reassigned_take_effect_for_the_next_request(arm):
    assert arm.limits == WorkLimits()
    assert arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]).status == Status.VALID
    arm.limits = WorkLimits(max_joint_delta=0.1)
    refused = arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [0.5, 0.0, 0.0])
    assert refused.status == Status.INVALID_REQUEST and "max_joint_delta = 0.1" in refused.message
    assert "split the motion into 5 parts" in refused.message
    with pytest.raises(WorkLimitError, match="max_joint_delta = 0.1"):       # the planner's bool check too
        arm.motion_validity(JOINTS).is_motion_valid([0.0, 0.0, 0.0], [0.5, 0.0, 0.0])
    assert arm.motion_validity(JOINTS).is_motion_valid([0.0, 0.0, 0.0], [0.1, 0.0, 0.0])
    arm.limits = WorkLimits()
    assert arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]).status == Status.VALID
    with pytest.raises(TypeError):
        arm.limits = {"max_joint_delta": 1.0}
    with pytest.raises(ValueError, match="max_motion_samples"):
        WorkLimits(max_motion_samples=0)
    with pytest.raises(ValueError, match="max_joint_delta"):
        WorkLimits(max_joint_delta=float("inf"))


def test_a_checker_takes_its_limits_when_built():
    checker = CollisionChecker(load_scene(urdf_xml=ARM_URDF), limits=WorkLimits(max_trajectory_waypoints=3))
    result = checker.check_trajectory(JOINTS, np.zeros((4, 3)), np.arange(4.0))
    assert result.status == Status.INVALID_REQUEST and "max_trajectory_waypoints = 3" in result.message


# ----- stopping a running check ------------------------------------------------------
class _SetAfterLooks:
    """A stop event (the checker only asks ``is_set()``) that reads as set from its ``n``-th look on, and
    counts the looks: whatever the machine's speed, the work must look at it again and again while it
    runs, and stop at the first look that finds it set."""

    def __init__(self, n: int) -> None:
        self.n, self.looks = n, 0
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        with self._lock:
            self.looks += 1
            return self.looks >= self.n


def _stopped_within(checker, call, looks: int = 5):
    """``call()`` raises RequestStopped at the first look at the stop event after it was set (its
    ``looks``-th look): the long work looked at it ``looks - 1`` times without stopping, then stopped."""
    event = _SetAfterLooks(looks)
    checker.stop_event = event
    with pytest.raises(RequestStopped, match="request stopped before it finished"):
        call()
    assert event.looks == looks, (event.looks, looks)


def test_a_long_discrete_motion_stops_when_asked(arm):
    arm.limits = WorkLimits(max_motion_samples=100_000_000)
    _stopped_within(arm, lambda: arm.check_motion(JOINTS, [-3.0, 1.2, 0.0], [3.0, 1.2, 0.0],
                                                  mode=MotionMode.DISCRETE, max_step=1e-7))


def test_a_long_certified_trajectory_stops_when_asked():
    scene = load_scene(urdf_xml=chain_urdf(12))
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    n = 10_000
    points = np.zeros((n, 12))
    points[:, 0] = 0.5 * np.sin(np.linspace(0.0, 60.0, n))
    _stopped_within(checker, lambda: checker.check_trajectory(names, points, np.arange(float(n)),
                                                              stop_at_first_contact=False))


def test_a_long_batch_stops_when_asked(arm):
    configurations = np.random.default_rng(3).uniform(LOWER, UPPER, size=(1_000_000, 3))
    _stopped_within(arm, lambda: arm.check_batch(JOINTS, configurations))


def test_a_set_stop_event_stops_explain_and_motions_at_once(arm):
    event = threading.Event()
    event.set()
    arm.stop_event = event
    with pytest.raises(RequestStopped):
        arm.explain(JOINTS, [0.0, 0.0, 0.0])
    with pytest.raises(RequestStopped):
        arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [1.0, 0.0, 0.0])
    assert issubclass(RequestStopped, CollisionPkgError)
    # bad input is still answered, not raised, and a cleared event lets checks run again
    assert arm.check_motion(["nope"], [0.0], [1.0]).status == Status.INVALID_REQUEST
    event.clear()
    assert arm.check_motion(JOINTS, [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]).status == Status.VALID


# ----- culling far world objects -------------------------------------------------------
def _motions(seed: int, n: int):
    rng = np.random.default_rng(seed)
    starts = rng.uniform(LOWER, UPPER, size=(n, 3))
    goals = np.clip(starts + rng.normal(scale=[1.5, 0.6, 0.15], size=(n, 3)), LOWER, UPPER)
    return list(zip(starts, goals))


def _summary(result):
    return (result.status, result.valid, round(result.cc_time, 9),
            tuple(sorted({c.link_names for c in result.contacts})))


@pytest.mark.parametrize("seed", [1, 2])
def test_culling_keeps_every_motion_verdict(seed, monkeypatch):
    scene = _crowded_scene(seed)
    checker = CollisionChecker(scene, check_joint_limits=False)
    world = scene.world
    selection = CheckRequest().selection(world)
    dropped = 0
    for q0, q1 in _motions(seed, 40):
        culled_sweep = sweep.Sweep(world, selection, CheckRequest(), q0, q1, 1e-4)
        dropped += len(selection.pairs) - len(culled_sweep.pairs)
        culled = [checker.check_motion(JOINTS, q0, q1),
                  checker.check_motion(JOINTS, q0, q1, mode=MotionMode.DISCRETE, max_step=0.02),
                  checker.check_motion(JOINTS, q0, q1, contact_distance=0.05)]
        monkeypatch.setattr(sweep, "CULL_FAR_OBJECTS", False)
        every = [checker.check_motion(JOINTS, q0, q1),
                 checker.check_motion(JOINTS, q0, q1, mode=MotionMode.DISCRETE, max_step=0.02),
                 checker.check_motion(JOINTS, q0, q1, contact_distance=0.05)]
        monkeypatch.setattr(sweep, "CULL_FAR_OBJECTS", True)
        for a, b in zip(culled, every):
            assert _summary(a) == _summary(b), (q0, q1, a.message, b.message)
        assert culled[0].message == every[0].message and culled[1].message == every[1].message
    assert dropped > 0.5 * 40 * int(np.count_nonzero(~world.pair_is_self[selection.index]))   # culling works


def test_culled_certified_motions_never_miss_what_dense_sampling_finds():
    scene = _crowded_scene(7, n_objects=200)
    checker = CollisionChecker(scene, check_joint_limits=False)
    found = 0
    for q0, q1 in _motions(7, 40):
        certified = checker.check_motion(JOINTS, q0, q1)
        dense = checker.check_motion(JOINTS, q0, q1, mode=MotionMode.DISCRETE, max_step=0.002)
        if not dense.valid:
            found += 1
            assert not certified.valid, (q0, q1, dense.message)
            assert certified.cc_time <= dense.cc_time + 1e-9
    assert found >= 3                                         # the test is about something


def test_culled_trajectories_keep_their_intervals(monkeypatch):
    scene = _crowded_scene(5)
    checker = CollisionChecker(scene, check_joint_limits=False)
    rng = np.random.default_rng(5)
    for _ in range(4):
        points = np.clip(np.cumsum(rng.normal(scale=[0.8, 0.3, 0.05], size=(6, 3)), axis=0), LOWER, UPPER)
        results = []
        for cull in (True, False):
            monkeypatch.setattr(sweep, "CULL_FAR_OBJECTS", cull)
            for mode, step in ((MotionMode.CERTIFIED, 0.0), (MotionMode.DISCRETE, 0.02)):
                r = checker.check_trajectory(JOINTS, points, np.arange(6.0), mode=mode, max_step=step,
                                             stop_at_first_contact=False)
                intervals = tuple((cl.link_names, tuple((i.activation_ns, i.deactivation_ns) for i in cl))
                                  for cl in r.contact_lists)
                results.append((r.status, r.message, intervals))
        assert results[:2] == results[2:]


def test_an_object_in_the_swept_path_is_found_among_far_ones():
    scene = _crowded_scene(11, n_objects=200, nearest_m=1.3)
    # the forearm sphere's centre sweeps a circle of radius 0.6 m at z = 0.3 m: a small
    # cube on it at yaw = 1.0 rad, between the motion's ends
    _add(scene, "in_the_way", Box((0.01, 0.01, 0.01)), _pose(0.6 * np.cos(1.0), 0.6 * np.sin(1.0), 0.3))
    checker = CollisionChecker(scene)
    world = scene.world
    q0, q1 = np.array([0.2, 0.0, 0.0]), np.array([1.8, 0.0, 0.0])
    s = sweep.Sweep(world, CheckRequest().selection(world), CheckRequest(), q0, q1, 1e-4)
    assert len(s.pairs) < len(CheckRequest().selection(world).pairs)            # far objects were dropped
    owners = {world.shapes[b].owner for b in s.b}
    assert "in_the_way" in owners
    for result in (checker.check_motion(JOINTS, q0, q1),
                   checker.check_motion(JOINTS, q0, q1, mode=MotionMode.DISCRETE, max_step=0.005),
                   checker.check_trajectory(JOINTS, [q0, q1], [0.0, 1.0]).first_contact):
        assert result.status == Status.IN_COLLISION and "in_the_way" in result.message, result.message
        assert 0.0 < result.cc_time < 1.0


def test_discrete_chunks_do_not_change_the_answer(arm, monkeypatch):
    _add(arm.scene, "post", Box((0.05, 0.05, 1.0)), _pose(0.0, 0.6, 0.3))
    q0, q1 = [0.0, 0.0, 0.0], [3.0, 0.0, 0.0]
    whole = arm.check_motion(JOINTS, q0, q1, mode=MotionMode.DISCRETE, max_step=0.001)
    monkeypatch.setattr(motion, "SAMPLE_CHUNK", 7)
    monkeypatch.setattr(pair_tests, "POSE_CHUNK", 5)
    chunked = arm.check_motion(JOINTS, q0, q1, mode=MotionMode.DISCRETE, max_step=0.001)
    assert whole.status == Status.IN_COLLISION and "post" in whole.message
    assert (chunked.status, chunked.message, chunked.cc_time) == (whole.status, whole.message, whole.cc_time)
    valid, _ = arm.check_batch(JOINTS, np.linspace(q0, q1, 100))
    monkeypatch.setattr(pair_tests, "POSE_CHUNK", 4096)
    again, _ = arm.check_batch(JOINTS, np.linspace(q0, q1, 100))
    assert not valid.all() and (valid == again).all()


def test_the_motion_warm_up_runs_its_checks():
    from my_collision_pkg.core.checks.trajectory import warm_up_motion_checks
    start = time.perf_counter()
    warm_up_motion_checks()
    assert time.perf_counter() - start < 60.0            # compiled or loaded, not hung


def test_trajectory_intervals_do_not_depend_on_the_sweeps_kept(arm, monkeypatch):
    from my_collision_pkg.core.checks import trajectory
    _add(arm.scene, "post", Box((0.05, 0.05, 1.0)), _pose(0.0, 0.6, 0.3))
    # back and forth through the post: a contact interval in many segments
    yaw = np.tile([0.0, 3.0], 6)
    points = np.stack([yaw, np.zeros_like(yaw), np.zeros_like(yaw)], axis=1)

    def intervals():
        r = arm.check_trajectory(JOINTS, points, np.arange(float(len(yaw))), stop_at_first_contact=False)
        return r.status, r.message, [(cl.link_names, [(i.activation_ns, i.deactivation_ns, i.contact.distance)
                                                       for i in cl]) for cl in r.contact_lists]
    every = intervals()
    monkeypatch.setattr(trajectory, "KEPT_SWEEPS", 1)
    assert intervals() == every
    assert every[0] == Status.IN_COLLISION and sum(len(x[1]) for x in every[2]) >= 10
