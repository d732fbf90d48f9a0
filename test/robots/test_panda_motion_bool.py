"""The planner-facing bool motion check (``MotionMode.CERTIFIED_BOOL``, ``CollisionChecker.is_motion_valid``,
``MotionValidity``) on the Panda with ``config/panda_world.yaml``, 1 cm padding and a tool attached to the hand.

- On 1000 random edges between valid configurations, in four request kinds (whole robot,
  group ``arm``, environment padding off, self padding on), the bool equals CERTIFIED's
  verdict, by all three entry points.
- It is never valid where a 1e-4 rad discrete reference collides. The reference (up to
  ~50,000 samples an edge) runs on the bool-valid edges that come nearest to contact
  (the ``N_REFERENCE_EDGES`` with the smallest certified clearance), to keep the test
  within a minute; benchmarks/bench_planning.py checks every planned segment at 1e-4 rad.
- The 1 mm plate that 0.05 rad sampling jumps over (the demo's swing) is refused.
"""
import numpy as np
import pytest

from my_collision_pkg.core.checks import motion, sweep
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import MotionMode, Status
from my_collision_pkg.core.errors import RequestError

N_EDGES = 1000
EDGE_SEED = 20_261_206
REFERENCE_STEP_RAD = 1e-4
N_REFERENCE_EDGES = 40
ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
# the request kinds, a quarter of the edges each
KINDS = (dict(), dict(group_name="arm"), dict(pad_environment_collisions=False), dict(pad_self_collisions=True))
# the stretched-out arm whose joint-1 swing crosses the thin plate (conftest.thin_plate_scene)
STRETCHED = [0.0, 1.3, 0.0, -0.2, 0.0, 1.5, -0.785]


@pytest.fixture(scope="module")
def scene(padded_tool_scene):
    return padded_tool_scene


@pytest.fixture(scope="module")
def checker(scene):
    return CollisionChecker(scene)


@pytest.fixture(scope="module")
def edges(scene, checker, random_configurations):
    robot = scene.robot
    samples = random_configurations(robot.lower_limits, robot.upper_limits, 6 * N_EDGES, EDGE_SEED)
    valid, _ = checker.check_batch(robot.active_joint_names, samples)
    good = samples[valid]
    assert len(good) >= 2 * N_EDGES
    return list(zip(good[0:2 * N_EDGES:2], good[1:2 * N_EDGES:2]))


def test_bool_equals_certified_and_reference(scene, checker, edges):
    names = scene.robot.active_joint_names
    validity = [checker.motion_validity(names, **kind) for kind in KINDS]
    counts = {"valid": 0, "invalid": 0}
    near = []                                     # (certified clearance, edge, kind) of the valid edges
    for k, (q0, q1) in enumerate(edges):
        kind = KINDS[k % len(KINDS)]
        certified = checker.check_motion(names, q0, q1, **kind)
        assert certified.status in (Status.VALID, Status.IN_COLLISION), certified.message
        by_mode = checker.check_motion(names, q0, q1, mode=MotionMode.CERTIFIED_BOOL, **kind)
        assert by_mode.valid == certified.valid, (k, kind, certified.message)
        assert by_mode.contacts == () and by_mode.cc_time == -1.0 and np.isnan(by_mode.min_clearance_m)
        assert checker.is_motion_valid(names, q0, q1, **kind) == certified.valid, (k, kind)
        assert validity[k % len(KINDS)].is_motion_valid(q0, q1) == certified.valid, (k, kind)
        counts["valid" if certified.valid else "invalid"] += 1
        if certified.valid:
            near.append((certified.min_clearance_m, k, kind))
    # both verdicts are well represented, so the equality says something
    assert counts["valid"] >= 100 and counts["invalid"] >= 100, counts
    near.sort(key=lambda item: item[0])
    for clearance, k, kind in near[:N_REFERENCE_EDGES]:
        q0, q1 = edges[k]
        reference = checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=REFERENCE_STEP_RAD,
                                         **kind)
        assert reference.status != Status.INVALID_REQUEST, reference.message
        assert reference.valid, (k, kind, clearance, reference.message)


def test_thin_plate_refused_where_sampling_jumps_over(thin_plate_scene):
    checker = CollisionChecker(thin_plate_scene)
    start, goal = list(STRETCHED), list(STRETCHED)
    start[0], goal[0] = -0.5, 0.5
    discrete = checker.check_motion(ARM, start, goal, mode=MotionMode.DISCRETE, max_step=0.05)
    assert discrete.valid, discrete.message                # the samples jump over the plate
    assert not checker.is_motion_valid(ARM, start, goal)
    assert not checker.is_motion_valid(ARM, start, goal, screen_step=0.05)
    assert not checker.motion_validity(ARM).is_motion_valid(start, goal)
    assert checker.motion_validity(ARM).is_motion_valid_discrete(start, goal, 0.05)
    assert not checker.motion_validity(ARM).is_motion_valid_discrete(start, goal, 1e-4)


def test_bad_input_named(checker):
    with pytest.raises(RequestError, match="unknown joint|not_a_joint"):
        checker.is_motion_valid(["not_a_joint"], [0.0], [1.0])
    with pytest.raises(RequestError, match="group"):
        checker.is_motion_valid(ARM[:1], [0.0], [1.0], group_name="no_such_group")
    with pytest.raises(RequestError, match="screen"):
        checker.is_motion_valid(ARM[:1], [0.0], [1.0], screen_step=-1.0)
    validity = checker.motion_validity(ARM)
    with pytest.raises(RequestError, match="7 finite values"):
        validity.is_motion_valid([0.0] * 6, [0.0] * 7)
    with pytest.raises(RequestError, match="7 finite values"):
        validity.is_motion_valid([float("nan")] * 7, [0.0] * 7)
    # outside the limits: not valid (CERTIFIED says OUT_OF_BOUNDS)
    assert not checker.is_motion_valid(ARM[:1], [0.0], [4.0])
    assert not validity.is_motion_valid([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0], [4.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0])
    result = checker.check_trajectory(ARM[:1], [[0.0], [0.1]], [0.0, 1.0], mode=MotionMode.CERTIFIED_BOOL)
    assert result.status == Status.INVALID_REQUEST and "CERTIFIED_BOOL" in result.message


def test_screen_order_covers_every_sample_once():
    for n in (1, 2, 3, 7, 16, 64):
        order = motion.screen_order(n)
        assert sorted(order.tolist()) == list(range(1, n + 1))
        if n >= 4:
            assert order[0] == n // 2                        # the midpoint first


def test_screen_samples_are_the_numpy_rows(scene):
    """The compiled screen gives the sample count of ``mimic_matrix @ dq`` and the rows
    ``q0 + (order / n) * dq`` in ``screen_order``, bit for bit; none at or below the minimum."""
    from my_collision_pkg.core.kernels.tubes import screen_samples
    mimic = scene.world.robot.kinematics_arrays[0]
    table = motion._screen_orders(motion.SCREEN_MAX_SAMPLES)
    rng = np.random.default_rng(7)
    n_act = mimic.shape[1]
    for scale in (0.01, 0.3, 1.0, 3.0, 20.0):
        q0, q1 = rng.uniform(-1, 1, n_act), rng.uniform(-1, 1, n_act) * scale
        dq = q1 - q0
        largest = float(np.abs(mimic @ dq).max())
        want = min(motion.SCREEN_MAX_SAMPLES, max(1, int(np.ceil(largest / 0.1 - 1e-12))))
        n, rows = screen_samples(q0, q1, mimic, 0.1, motion.SCREEN_MIN_SAMPLES, motion.SCREEN_MAX_SAMPLES, table)
        assert n == want
        if n <= motion.SCREEN_MIN_SAMPLES:
            assert rows.shape == (0, n_act)
        else:
            order = motion.screen_order(n)
            assert np.array_equal(rows, q0[None, :] + (order / n)[:, None] * dq[None, :])


def test_one_call_answers_as_the_sweep_does(scene, checker, edges, monkeypatch):
    """``sweep.one_call_search`` (the search's first compiled call without a Sweep) gives each free
    edge the Sweep's certified clearance and work count to the bit, and answers most of them; the
    edges it leaves to the Sweep (which goes on from the call's returns) get the Sweep's own
    answer, as when the Sweep makes that call itself."""
    names = scene.robot.active_joint_names
    validity = checker.motion_validity(names, **KINDS[1])
    world = scene.world
    selection = validity._selection_for(world)
    plan = validity._plan_of(validity._current(world))
    assert plan is not None and plan is sweep.one_call_plan(world, selection)
    request, explainer = validity._request, validity._explainer
    one_call = motion.one_call_search
    settled, handed = [0], [0]

    def counted(*args):
        found = one_call(*args)
        settled[0] += found is not None and not isinstance(found, sweep.OneCallLeft)
        handed[0] += isinstance(found, sweep.OneCallLeft)
        return found

    def answers(fast: bool, with_plan: bool = False):
        monkeypatch.setattr(motion, "one_call_search", counted if fast else (lambda *args: None))
        out = []
        for q0, q1 in edges[:120]:
            for clearance in (True, False):
                meter = checker.work_meter()
                found = motion._free_motion(explainer, world, selection, request, q0, q1,
                                            validity._tolerance_m, meter, validity.screen_step, clearance,
                                            plan if with_plan else None)
                out.append((found, meter.steps))
        return out

    with_sweep = answers(False)
    assert settled[0] == 0 and handed[0] == 0
    with_one_call = answers(True)
    assert with_one_call == with_sweep
    free = sum(found is not None for found, _ in with_sweep)
    assert free > 50 and settled[0] > 0.8 * free
    assert handed[0] > 0                               # some edges went on in the Sweep from the call
    assert answers(True, with_plan=True) == with_sweep


def test_tube_clearance_without_narrow_phase_is_a_lower_bound(scene, checker, edges, monkeypatch):
    """``exact_clearance=False`` (the planner's free tubes): the same verdict on every edge, a
    clearance never above the exact one (the Sweep's), equal on most, and fewer edges handed to
    the Sweep, since a free edge whose clearance alone would need the narrow phase at t = 1 is
    answered from the call's own bounds."""
    names = scene.robot.active_joint_names
    validity = checker.motion_validity(names, **KINDS[1])
    world = scene.world
    selection = validity._selection_for(world)
    plan = validity._plan_of(validity._current(world))
    first_touch = sweep.Sweep.first_touch
    sweeps = [0]

    def counted(self, *args, **kwargs):
        sweeps[0] += 1
        return first_touch(self, *args, **kwargs)

    monkeypatch.setattr(sweep.Sweep, "first_touch", counted)
    runs, equal, free = [0, 0], 0, 0
    for q0, q1 in edges:
        found = []
        for i, exact in enumerate((True, False)):
            before = sweeps[0]
            found.append(motion.free_motion_clearance(validity._explainer, world, selection, validity._request, q0,
                                                      q1, validity._tolerance_m, checker.work_meter(),
                                                      validity.screen_step, plan, exact_clearance=exact))
            runs[i] += sweeps[0] - before
        exact, tube = found
        assert (exact is None) == (tube is None)
        if exact is not None:
            free += 1
            assert tube <= exact
            equal += tube == exact
    assert free > 50 and equal > 0.9 * free
    assert runs[1] <= runs[0]


def test_one_call_threads_answer_as_one_thread(scene, checker, edges, monkeypatch):
    """The one call's work arrays are per thread (``sweep._one_call_buffers``, and the Sweep that goes
    on from them): two threads searching the same edges at once, switching often, get one thread's
    answers and work counts, on edges the call settles and on edges it hands to the Sweep."""
    import sys
    import threading

    names = scene.robot.active_joint_names
    validity = checker.motion_validity(names, **KINDS[1])
    world = scene.world
    selection = validity._selection_for(world)
    plan = validity._plan_of(validity._current(world))
    one_call = motion.one_call_search
    handed = []

    def spied(*args):
        found = one_call(*args)
        if isinstance(found, sweep.OneCallLeft):
            handed.append(args[2:4])
        return found

    def answers(pairs):
        out = []
        for q0, q1 in pairs:
            meter = checker.work_meter()
            found = motion._free_motion(validity._explainer, world, selection, validity._request, q0, q1,
                                        validity._tolerance_m, meter, validity.screen_step, True, plan)
            out.append((found, meter.steps))
        return out

    monkeypatch.setattr(motion, "one_call_search", spied)
    answers(edges)
    monkeypatch.setattr(motion, "one_call_search", one_call)
    assert handed                                      # edges the Sweep goes on with
    chosen = list(edges[:40]) + [tuple(pair) for pair in handed[:10]] * 3
    expected = answers(chosen)
    assert sum(found is not None for found, _ in expected) > 20
    found: dict[int, list] = {}
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=lambda i=i: found.__setitem__(i, answers(chosen[::1 - 2 * i])))
                   for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert found[0] == expected
    assert found[1] == expected[::-1]


def test_one_call_pack_works_on_the_threads_arrays(scene, checker, edges):
    """The one call's ``grid_advance.OneCallPack`` holds this thread's work arrays themselves, not
    copies: what the call writes (the pairs' times, their step counts) is in the arrays
    ``sweep._one_call_buffers`` hands out, which the Sweep goes on from."""
    names = scene.robot.active_joint_names
    validity = checker.motion_validity(names, **KINDS[1])
    world = scene.world
    selection = validity._selection_for(world)
    plan = validity._plan_of(validity._current(world))
    tolerance_m = validity._tolerance_m
    buffers = sweep._one_call_buffers(plan, tolerance_m)
    assert sweep._one_call_buffers(plan, tolerance_m) is buffers      # made once per plan and thread
    out, t = buffers[0], buffers[8]
    ran = 0
    for q0, q1 in edges[:40]:
        q0, q1 = validity._ends(q0, q1)
        t[:] = -7.0
        out[6][:] = -1
        found = sweep.one_call_search(world, selection, q0, q1, tolerance_m, checker.work_meter(), False, plan)
        if found is None:
            continue
        ran += 1
        assert not np.any(t == -7.0)                   # reset to 0 by the call, then advanced
        assert np.all(out[6] >= 1)                     # every pair evaluated at least once
        if not isinstance(found, sweep.OneCallLeft):
            assert np.all(t > 1.0)                     # a settled edge: every pair past t = 1
    assert ran > 20
