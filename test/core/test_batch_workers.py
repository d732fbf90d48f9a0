"""check_batch split across forked worker processes (core/checks/batch_workers.py).

Every test compares the verdicts and the summary of ``batch_workers=2`` with those of
``batch_workers=1`` (today's one-process path) on the same batch: random Panda
configurations, some outside the limits, in the world of config/panda_world.yaml. The
scene changes between batches (an object added, an allowed collision switched) to show
that the pool follows the snapshot; a request's own ``world``, a group and padding go to
the workers too. A stop, a worker that raises, dies or hangs end in a clear error or
RequestStopped, never a hang, and the next batch works again.
"""
import os
import threading
import time

import numpy as np
import pytest

from my_collision_pkg.core.checks import batch_workers, clearance, explain, pair_tests
from my_collision_pkg.core.checks.batch_workers import BatchWorkerError, available_cores
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.errors import RequestStopped
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, RemoveObject, SceneObject

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
N = 3000                      # configurations per batch: above the (lowered) thresholds below
SEED = 17
OUTSIDE_FRACTION = 0.1        # joint ranges widened by this on both sides: some configurations out of limits
MIN_FORK = 2000               # the tests' thresholds, low so that batches stay small
MIN_PARALLEL = 500
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]          # the SRDF's "default" arm state


@pytest.fixture
def low_thresholds(monkeypatch):
    monkeypatch.setattr(batch_workers, "MIN_FORK_CONFIGURATIONS", MIN_FORK)
    monkeypatch.setattr(batch_workers, "MIN_PARALLEL_CONFIGURATIONS", MIN_PARALLEL)
    monkeypatch.setattr(clearance, "MIN_SHARED_WORK_S", 0.0)      # a clearance batch's measured work: always enough


@pytest.fixture(scope="module")
def panda_scene():
    urdf, srdf = panda_paths()
    return load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)


@pytest.fixture
def checkers(panda_scene, low_thresholds):
    one = CollisionChecker(panda_scene, batch_workers=1)
    two = CollisionChecker(panda_scene, batch_workers=2)
    yield one, two
    two.close()


def configurations(robot, n=N, seed=SEED):
    lower, upper = robot.lower_limits, robot.upper_limits
    wide = (upper - lower) * OUTSIDE_FRACTION
    return np.random.default_rng(seed).uniform(lower - wide, upper + wide, size=(n, len(lower)))


def same_answers(one, two, names, Q, **options):
    """check_batch of both checkers on Q: equal verdicts and summaries; returns the verdicts."""
    valid_1, summary_1 = one.check_batch(names, Q, **options)
    valid_2, summary_2 = two.check_batch(names, Q, **options)
    np.testing.assert_array_equal(valid_2, valid_1)
    assert summary_2 == summary_1
    return valid_1


def test_two_workers_give_the_verdicts_of_one(checkers, panda_scene):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot)
    assert two.batch_worker_pids == ()
    valid = same_answers(one, two, names, Q)
    assert len(two.batch_worker_pids) == 1                      # the pool ran: one worker and this process
    assert 0 < np.count_nonzero(valid) < N                      # both kinds of answer
    out = np.any((Q < panda_scene.robot.lower_limits) | (Q > panda_scene.robot.upper_limits), axis=1)
    assert out.any() and not valid[out].any()
    # a named subset of the joints (the others at the scene's current values), flat row-major
    arm = names[:4]
    same_answers(one, two, arm, Q[:, :4].ravel())
    # a group, self-collision padding, joint limits switched off
    group = sorted(panda_scene.semantic.groups)[0]
    same_answers(one, two, names, Q, group_name=group, pad_self_collisions=True)
    one.check_joint_limits = two.check_joint_limits = False
    try:
        same_answers(one, two, names, Q)
    finally:
        one.check_joint_limits = two.check_joint_limits = True


def test_the_pool_follows_scene_changes_and_a_request_world(checkers, panda_scene):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot, seed=SEED + 1)
    before = panda_scene.world
    base = same_answers(one, two, names, Q)
    first_pids = two.batch_worker_pids
    same_answers(one, two, names, Q)                            # same snapshot: the same pool
    assert two.batch_worker_pids == first_pids
    box = SceneObject("batch_box", (ObjectShape(Box((0.4, 0.4, 0.4))),), make_transform(None, [0.35, 0.0, 0.55]))
    panda_scene.apply([AddObject(box)])
    try:
        with_box = same_answers(one, two, names, Q)
        assert two.batch_worker_pids != first_pids              # forked again for the new snapshot
        assert np.count_nonzero(with_box) < np.count_nonzero(base)   # the box refuses more
        assert not (with_box & ~base).any()
        # an allowed collision between batches: the box may touch everything of the arm
        for link in panda_scene.robot.link_names:
            panda_scene.set_allowed_collision("batch_box", link, True)
        allowed = same_answers(one, two, names, Q)
        np.testing.assert_array_equal(allowed, base)
        # a request's own (older) snapshot: the workers check that one
        old = same_answers(one, two, names, Q, world=before)
        np.testing.assert_array_equal(old, base)
    finally:
        panda_scene.apply([RemoveObject("batch_box")])


def test_small_batches_stay_in_this_process(checkers, panda_scene):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot, n=MIN_FORK - 1)
    same_answers(one, two, names, Q)
    assert two.batch_worker_pids == ()                          # below the fork threshold: no pool
    same_answers(one, two, names, configurations(panda_scene.robot))
    pids = two.batch_worker_pids
    same_answers(one, two, names, Q[:MIN_PARALLEL])             # a pool on this snapshot takes smaller ones
    assert two.batch_worker_pids == pids
    assert one.batch_worker_pids == ()


def test_batch_workers_setting(panda_scene):
    checker = CollisionChecker(panda_scene)
    assert checker.batch_workers == min(available_cores(), batch_workers.MAX_BATCH_WORKERS)
    checker.batch_workers = 3
    assert checker.batch_workers == 3
    checker.batch_workers = 0
    assert checker.batch_workers == min(available_cores(), batch_workers.MAX_BATCH_WORKERS)
    for bad in (-1, 1.5, "2", True, batch_workers.MAX_BATCH_WORKERS + 1):
        with pytest.raises(ValueError, match="batch_workers"):
            checker.batch_workers = bad
        with pytest.raises(ValueError, match="batch_workers"):
            CollisionChecker(panda_scene, batch_workers=bad)


def test_close_ends_the_workers_and_a_later_batch_forks_again(checkers, panda_scene):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot)
    same_answers(one, two, names, Q)
    (pid,) = two.batch_worker_pids
    two.close()
    assert two.batch_worker_pids == ()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)                                         # ended and reaped
    same_answers(one, two, names, Q)
    assert two.batch_worker_pids and two.batch_worker_pids != (pid,)
    two.batch_workers = 1                                       # a new count ends the pool
    assert two.batch_worker_pids == ()


class StopAfter:
    """A stop event that is set from its ``calls``-th look on."""

    def __init__(self, calls):
        self.calls, self.looked = calls, 0

    def is_set(self):
        self.looked += 1
        return self.looked >= self.calls


class LookedAt(threading.Event):
    """A stop event that tells (through ``looked``) when the batch has looked at it ``calls``
    times, that is, once it is under way (it looks once per chunk it answers itself)."""

    def __init__(self, calls=3):
        super().__init__()
        self.calls, self.count, self.looked = calls, 0, threading.Event()

    def is_set(self):
        self.count += 1
        if self.count >= self.calls:
            self.looked.set()
        return super().is_set()


def test_a_stop_ends_the_batch_and_the_pool_serves_the_next(checkers, panda_scene):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot)
    expected = same_answers(one, two, names, Q)
    two.stop_event = StopAfter(3)
    with pytest.raises(RequestStopped):
        two.check_batch(names, Q)
    pids = two.batch_worker_pids
    two.stop_event = threading.Event()
    valid, _ = two.check_batch(names, Q)                        # the stopped batch's answers were drained
    np.testing.assert_array_equal(valid, expected)
    assert two.batch_worker_pids == pids
    # a stop set from another thread while the batch runs: set once the batch is under way, with
    # ~300 chunks still ahead (not on a timer: a fast machine ran the whole batch before it fired)
    big = np.tile(Q, (200, 1))
    two.stop_event = event = LookedAt()
    setter = threading.Thread(target=lambda: event.looked.wait(30.0) and event.set())
    setter.start()
    start = time.monotonic()
    with pytest.raises(RequestStopped):
        two.check_batch(names, big, max_batch=len(big))
    assert time.monotonic() - start < 5.0
    setter.join()


def test_a_worker_that_raises_dies_or_hangs_is_a_clear_error(checkers, panda_scene, monkeypatch):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot)
    expected = same_answers(one, two, names, Q)
    parent = os.getpid()
    real = pair_tests.first_collision

    def raising(*args, **kwargs):
        if os.getpid() != parent:
            raise RuntimeError("injected worker fault")
        return real(*args, **kwargs)

    two.close()
    monkeypatch.setattr(pair_tests, "first_collision", raising)     # the workers forked next inherit it
    with pytest.raises(BatchWorkerError, match=r"batch worker process \d+ failed: RuntimeError: injected worker"):
        two.check_batch(names, Q)
    assert two.batch_worker_pids == ()                          # the failed pool is gone
    monkeypatch.setattr(pair_tests, "first_collision", real)
    np.testing.assert_array_equal(two.check_batch(names, Q)[0], expected)

    (pid,) = two.batch_worker_pids                              # a worker killed under the pool
    os.kill(pid, 9)
    with pytest.raises(BatchWorkerError, match=r"ended unexpectedly|could not be sent"):
        two.check_batch(names, Q)
    np.testing.assert_array_equal(two.check_batch(names, Q)[0], expected)

    def hanging(*args, **kwargs):
        if os.getpid() != parent:
            time.sleep(3600)
        return real(*args, **kwargs)

    two.close()
    monkeypatch.setattr(pair_tests, "first_collision", hanging)
    monkeypatch.setattr(batch_workers, "REPLY_TIMEOUT_FLOOR_S", 0.5)
    monkeypatch.setattr(batch_workers, "REPLY_TIMEOUT_FACTOR", 0.0)
    start = time.monotonic()
    with pytest.raises(BatchWorkerError, match="sent no answer"):
        two.check_batch(names, Q)
    assert time.monotonic() - start < 10.0
    assert two.batch_worker_pids == ()


def test_a_slower_worker_is_given_less(checkers, panda_scene, monkeypatch):
    """Chunks follow the speeds measured in the batch: a worker made about 8x slower than the
    caller (a sleep per configuration in the worker only) is fed by its own speed, so the
    caller checks most of the batch, and the verdicts stay those of one process."""
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot, n=4 * N)     # long enough for the speeds measured to count
    expected, _ = one.check_batch(names, Q)
    parent = os.getpid()
    real = pair_tests.first_collision
    here = []

    def slow_in_workers(scratch, world, q, *args, **kwargs):
        if os.getpid() != parent:
            time.sleep(5e-5 * len(q))
        else:
            here.append(len(q))
        return real(scratch, world, q, *args, **kwargs)

    two.close()
    monkeypatch.setattr(pair_tests, "first_collision", slow_in_workers)     # the workers forked next inherit it
    monkeypatch.setattr(explain, "first_collision", slow_in_workers)        # the caller's own chunks
    valid, _ = two.check_batch(names, Q)
    np.testing.assert_array_equal(valid, expected)
    inside = int(np.count_nonzero(np.all((Q >= panda_scene.robot.lower_limits)
                                         & (Q <= panda_scene.robot.upper_limits), axis=1)))
    assert 0 < sum(here) < inside                               # both processes checked a share
    assert sum(here) > 0.6 * inside, f"the caller checked {sum(here)} of {inside}"


def test_chunks_a_stalled_worker_has_not_begun_are_taken_back(checkers, panda_scene, monkeypatch):
    """At the end of a batch the caller takes back the chunks still queued in a worker that holds more work than the
    caller would take for them: a worker that stalls on its second chunk (0.4 s) while chunks queue behind it has
    the last of them taken back (batch_workers._Claims) and done by the caller, which has it skip them; each chunk
    is answered once (a second answer of a chunk, or a skipped one not taken back, fails the batch) and the
    verdicts are one process's. The next batch on the pool is answered as before."""
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot, n=2 * N)
    expected, _ = one.check_batch(names, Q)
    parent = os.getpid()
    real = pair_tests.first_collision
    chunks_in_worker = []

    def stalls_in_worker(scratch, world, q, *args, **kwargs):
        if os.getpid() != parent:
            chunks_in_worker.append(len(q))          # (the worker's own copy of the list)
            if len(chunks_in_worker) == 2:
                time.sleep(0.4)
        return real(scratch, world, q, *args, **kwargs)

    taken = []
    real_take_back = batch_workers._Claims.take_back

    def counted_take_back(self, tag):
        got = real_take_back(self, tag)
        taken.append(got)
        return got

    two.close()
    monkeypatch.setattr(pair_tests, "first_collision", stalls_in_worker)     # the workers forked next inherit it
    monkeypatch.setattr(batch_workers._Claims, "take_back", counted_take_back)
    valid, _ = two.check_batch(names, Q)
    np.testing.assert_array_equal(valid, expected)
    assert any(taken), taken
    valid, _ = two.check_batch(names, Q)
    np.testing.assert_array_equal(valid, expected)


def test_a_pool_without_shared_memory_shares_batches_without_taking_back(checkers, panda_scene, monkeypatch):
    """Where the claims' shared memory or lock cannot be made (a container without /dev/shm), the pool forks and
    shares batches as before, only without taking chunks back: the verdicts and rows are one process's."""
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    Q = configurations(panda_scene.robot)

    def unavailable(self):
        raise OSError(38, "Function not implemented")

    two.close()
    monkeypatch.setattr(batch_workers._Claims, "__init__", unavailable)
    same_answers(one, two, names, Q)
    assert len(two.batch_worker_pids) == 1
    assert all(w.claims is None for w in two._batch.pool._workers)
    fork = np.random.default_rng(SEED + 13).uniform(panda_scene.robot.lower_limits, panda_scene.robot.upper_limits,
                                                    size=(MIN_FORK // 20 + 10, len(names)))
    rows, expected = two.clearance(names, fork, 0.05), one.clearance(names, fork, 0.05)
    for name in CLEARANCE_FIELDS:
        np.testing.assert_array_equal(getattr(rows, name), getattr(expected, name), err_msg=name)


def test_batches_from_two_threads_and_a_fork_from_a_thread(checkers, panda_scene):
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    batches = [configurations(panda_scene.robot, seed=SEED + k) for k in range(4)]
    expected = [one.check_batch(names, Q)[0] for Q in batches]
    answers = {}

    def run(k):
        answers[k] = two.check_batch(names, batches[k])[0]      # the pool is forked from this thread

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for k, valid in enumerate(expected):
        np.testing.assert_array_equal(answers[k], valid)        # one had the pool, the others their own process
    assert len(two.batch_worker_pids) == 1


def test_answers_equal_on_every_configuration_kind(checkers, panda_scene):
    """Summary status of a batch whose first refused configuration is out of limits, then in collision."""
    one, two = checkers
    names = panda_scene.robot.active_joint_names
    robot = panda_scene.robot
    free = robot.default_positions()
    free[:7] = FREE
    Q = np.tile(free, (N, 1))
    Q[N // 2, 0] = robot.upper_limits[0] + 0.5
    valid, summary = two.check_batch(names, Q)
    assert summary.status == Status.OUT_OF_BOUNDS and f"first: index {N // 2}" in summary.message
    assert np.count_nonzero(~valid) == 1
    same_answers(one, two, names, Q)


CLEARANCE_FIELDS = ("configuration_index", "body_names", "body_types", "shape_ids", "subshape_ids", "distance",
                    "points", "points_local", "normals", "jacobian", "smooth", "shape_pairs")


def same_clearance(one, two, names, Q, influence, **options):
    a = one.clearance(names, Q, influence, **options)
    b = two.clearance(names, Q, influence, **options)
    assert (b.status, b.message, b.jacobian_joint_names) == (a.status, a.message, a.jacobian_joint_names)
    for name in CLEARANCE_FIELDS:
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)
    return a


def test_clearance_batches_on_two_processes_give_the_same_rows(checkers, panda_scene):
    one, two = checkers
    robot = panda_scene.robot
    names = robot.active_joint_names
    n = MIN_FORK // 4          # a clearance configuration counts as CLEARANCE_WORK_PER_CONFIGURATION checks
    Q = np.random.default_rng(SEED + 7).uniform(robot.lower_limits, robot.upper_limits, size=(n, len(names)))
    rows = same_clearance(one, two, names, Q, 0.1)
    assert len(two.batch_worker_pids) == 1 and len(rows) > n    # the pool ran; rows for most configurations
    index = rows.configuration_index
    assert index.min() < n // 10 and index.max() > n - n // 10 and np.all(np.diff(index) >= 0)   # in order
    same_clearance(one, two, names[:7], Q[:, :7], 0.05, max_rows_per_configuration=2, compute_jacobians=False,
                   pad_self_collisions=True)
    one.check_joint_limits = two.check_joint_limits = True
    outside = Q.copy()
    outside[n // 2, 3] = robot.upper_limits[3] + 0.3
    refused = same_clearance(one, two, names, outside, 0.1)
    assert refused.status == Status.OUT_OF_BOUNDS and len(refused) == 0


def test_a_small_batch_of_costly_configurations_is_shared_from_its_first_chunks(checkers, panda_scene, monkeypatch):
    """The first chunks (no speed measured yet) are cut to a GUIDED_SHARES-th of an even share of the batch, not
    FIRST_CHUNK: 240 clearance configurations at 0.5 m (about 20 ms of work) on a pool that holds the snapshot are
    checked partly here, partly in the worker, none of the caller's chunks above that share (with FIRST_CHUNK
    configurations in the first chunk, the worker was sent the whole batch and the caller waited); the rows are
    one process's. The same batch taken for less work than clearance.MIN_SHARED_WORK_S stays here whole."""
    one, two = checkers
    robot = panda_scene.robot
    names = robot.active_joint_names
    fork = np.random.default_rng(SEED + 10).uniform(robot.lower_limits, robot.upper_limits,
                                                    size=(MIN_FORK // 20 + 10, len(names)))
    two.clearance(names, fork, 0.05)                             # (n x CLEARANCE_WORK_PER_CONFIGURATION >= MIN_FORK)
    assert len(two.batch_worker_pids) == 1                     # the pool holds this snapshot
    n = 240
    Q = np.random.default_rng(SEED + 11).uniform(robot.lower_limits, robot.upper_limits, size=(n, len(names)))
    parent = os.getpid()
    real = clearance.chunk_rows
    here = []

    def counted(world, selection, q, *args, **kwargs):
        if os.getpid() == parent:
            here.append(len(q))
        return real(world, selection, q, *args, **kwargs)

    monkeypatch.setattr(clearance, "chunk_rows", counted)      # the caller's own chunks (the worker forked before)
    expected = one.clearance(names, Q, 0.5)
    here.clear()
    rows = two.clearance(names, Q, 0.5)
    for name in CLEARANCE_FIELDS:
        np.testing.assert_array_equal(getattr(rows, name), getattr(expected, name), err_msg=name)
    first = -(-(n - clearance.SHARE_PROBE_CONFIGURATIONS) // (2 * batch_workers.GUIDED_SHARES))
    # (the first chunk here is the probe of the batch's speed, SHARE_PROBE_CONFIGURATIONS; the next, before any speed
    # is measured in the pool's run, is cut to the first-chunk share)
    assert here[0] == clearance.SHARE_PROBE_CONFIGURATIONS and 0 < sum(here) < n, here
    assert len(here) >= 2 and here[1] <= first < batch_workers.FIRST_CHUNK, (here, first)
    # judged large by the speed kept from that batch, the next one of its kind goes to the pool at once (no probe)
    here.clear()
    rows = two.clearance(names, Q, 0.5)
    for name in CLEARANCE_FIELDS:
        np.testing.assert_array_equal(getattr(rows, name), getattr(expected, name), err_msg=name)
    assert 0 < sum(here) < n and here[0] != clearance.SHARE_PROBE_CONFIGURATIONS, here
    # a batch whose measured work is below MIN_SHARED_WORK_S stays here, all of it, with the same rows (the kept
    # speed says little work, so it is measured again: the probe, then the rest here)
    monkeypatch.setattr(clearance, "MIN_SHARED_WORK_S", 3600.0)
    here.clear()
    rows = two.clearance(names, Q, 0.5)
    for name in CLEARANCE_FIELDS:
        np.testing.assert_array_equal(getattr(rows, name), getattr(expected, name), err_msg=name)
    assert sum(here) == n and here[0] == clearance.SHARE_PROBE_CONFIGURATIONS, here


def test_the_speeds_kept_per_kind_of_request_are_bounded(checkers, panda_scene, monkeypatch):
    """A clearance batch that may be shared leaves its speed in a table of its snapshot, one entry per kind of
    request (influence, row bound, Jacobians), for the next batch of its kind. A sweep over influence distances
    does not grow the table past clearance._SPEEDS_KEPT: a new kind that finds it full starts it again, and the
    newest kind is always kept. The rows are those of one process throughout."""
    monkeypatch.setattr(clearance, "_SPEEDS_KEPT", 3)
    one, two = checkers
    robot = panda_scene.robot
    names = robot.active_joint_names
    Q = np.random.default_rng(SEED + 12).uniform(robot.lower_limits, robot.upper_limits, size=(40, len(names)))
    speeds = panda_scene.world.cached(("clearance", "seconds per configuration"), dict)
    speeds.clear()                                     # (other tests' kinds on this snapshot)
    sizes = []
    for influence in (0.01, 0.02, 0.03, 0.04, 0.05):
        rows = two.clearance(names, Q, influence)
        expected = one.clearance(names, Q, influence)
        for name in CLEARANCE_FIELDS:
            np.testing.assert_array_equal(getattr(rows, name), getattr(expected, name), err_msg=name)
        kinds = [kind[0] for kind in speeds]
        assert influence in kinds, (influence, kinds)
        assert all(speeds[kind] > 0.0 for kind in speeds), speeds
        sizes.append(len(speeds))
    assert sizes == [1, 2, 3, 1, 2], sizes


def test_the_current_cpu_is_the_one_the_thread_is_kept_on():
    """batch_workers._current_cpu (which the pool pins around) names the CPU this thread runs on: kept on each
    allowed CPU in turn, it names that one (the thread's CPU mask restored after)."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        for cpu in allowed:
            os.sched_setaffinity(0, {cpu})
            assert batch_workers._current_cpu() == cpu
    finally:
        os.sched_setaffinity(0, set(allowed))


def test_a_workers_framed_answer_is_what_connection_recv_reads():
    """The worker writes its answers framed by batch_workers._framed, each in one system call (its reply thread);
    the caller reads them with multiprocessing's Connection.recv: the same objects, small ones and ones past both
    the 2**14 bytes where Connection.send writes a header and a body apart and the pipe's buffer."""
    from multiprocessing import Pipe
    reader, writer = Pipe(duplex=True)
    replies = [("ok", 3, 7, (np.arange(5), np.ones((2, 3))), 0.25),
               ("ok", 4, 8, (np.arange(40_000, dtype=np.int64), np.zeros((20_000, 7))), 1.5),
               ("error", 5, 9, "ValueError: x at clearance.py:1", 0.0)]

    def write_all():
        for reply in replies:
            view = memoryview(batch_workers._framed(reply))
            while view.nbytes:
                view = view[os.write(writer.fileno(), view):]

    thread = threading.Thread(target=write_all)
    thread.start()
    try:
        assert len(batch_workers._framed(replies[1])) > 1_000_000
        for reply in replies:
            assert reader.poll(10.0)
            got = reader.recv()
            assert got[0] == reply[0] and got[1:3] == reply[1:3] and got[4] == reply[4]
            if reply[0] == "ok":
                for a, b in zip(got[3], reply[3]):
                    np.testing.assert_array_equal(a, b)
            else:
                assert got[3] == reply[3]
    finally:
        thread.join(10.0)
        reader.close()
        writer.close()
