"""Bounded work per request, over DDS: requests beyond a bound refused by name, memory that
returns after big requests that are allowed.

One validator (its own node name) with ``check_joint_limits:=false``, so that the motions
below are refused by the work bounds and not by the joint limits. The time bounds asserted
here are hang detectors (without the bounds these requests ran for minutes or for ever),
not speed targets; the measured round trips are printed (``pytest -s``).
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from node_processes import ARM, FREE, STARTUP_TIMEOUT_S, NodeProcess, panda_params, rss_mb
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from my_collision_pkg.core.checks.limits import WorkLimits
from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.srv import CheckMotion, CheckTrajectory

NODE = "bounded_validator"
INVALID = CheckMotion.Response.INVALID_REQUEST
REFUSAL_WITHIN_S = 10.0           # a refusal comes before any work: seconds at most, even on a loaded machine
BIG_REQUESTS = 10
RSS_GROWTH_ALLOWED_MB = 150.0     # before the bounds, one 200,000-sample motion held 800 MB more


@pytest.fixture(scope="module")
def validator():
    process = NodeProcess("collision_validator", panda_params(check_joint_limits="false"), {"__node": NODE})
    client = ValidatorClient(f"/{NODE}", node_name=f"bounds_client_{os.getpid()}", timeout_s=60.0)
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("check", "motion", "trajectory"))
        yield process, client
    finally:
        client.close()
        output = process.stop()
        assert "Traceback" not in output, output


def _timed(call):
    start = time.perf_counter()
    answer = call()
    return answer, time.perf_counter() - start


def test_a_motion_of_1e20_rad_is_refused_by_its_joint_delta(validator):
    _, client = validator
    goal = list(FREE)
    goal[0] = 1e20
    answer, seconds = _timed(lambda: client.check_motion(ARM, FREE, goal, mode=CheckMotion.Request.CERTIFIED))
    print(f"1e20 rad certified motion refused in {seconds * 1e3:.1f} ms: {answer.message}")
    assert answer.status == INVALID and not answer.valid
    assert "max_joint_delta" in answer.message and "panda_joint1" in answer.message
    assert seconds < REFUSAL_WITHIN_S


@pytest.mark.parametrize("max_step", [1e-6, 1e-9, 1e-300])
def test_a_discrete_motion_of_too_many_samples_is_refused_by_name(validator, max_step):
    _, client = validator
    goal = list(FREE)
    goal[0] = FREE[0] + 5.6
    answer, seconds = _timed(lambda: client.check_motion(ARM, FREE, goal, mode=CheckMotion.Request.DISCRETE,
                                                         max_step=max_step))
    print(f"max_step {max_step:g} over 5.6 rad refused in {seconds * 1e3:.1f} ms: {answer.message}")
    assert answer.status == INVALID
    assert "max_motion_samples" in answer.message
    assert "internal error" not in answer.message
    assert seconds < REFUSAL_WITHIN_S


def _trajectory(n: int) -> JointTrajectory:
    points = [JointTrajectoryPoint(positions=list(FREE), time_from_start=Duration(sec=k)) for k in range(n)]
    return JointTrajectory(joint_names=list(ARM), points=points)


def test_a_trajectory_of_too_many_waypoints_is_refused_by_name(validator):
    _, client = validator
    n = 2 * WorkLimits().max_trajectory_waypoints
    trajectory = _trajectory(n)
    answer, seconds = _timed(lambda: client.check_trajectory(trajectory))
    print(f"{n} waypoints refused in {seconds * 1e3:.1f} ms: {answer.message}")
    assert answer.status == CheckTrajectory.Response.INVALID_REQUEST
    assert "max_trajectory_waypoints" in answer.message and str(n) in answer.message.replace(",", "")
    assert seconds < REFUSAL_WITHIN_S


CLEARANCE_HANG_S = 60.0           # issue 39: before the per-chunk count, 100,000 configurations took 275 s


def test_a_clearance_far_beyond_its_rows_bound_is_refused_after_the_bounds_worth(validator):
    """50,000 Panda configurations at 1 m influence would give about 3.7 million rows: refused by
    max_clearance_rows (default 100,000) after about the bound's worth of work, as a request of about
    the bound's size takes (printed; the asserted time is a hang detector)."""
    _, client = validator
    client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("clearance",))
    rng = np.random.default_rng(39)
    lower, upper = np.array([-2.8, -1.7, -2.8, -3.0, -2.8, 0.0, -2.8]), np.array([2.8, 1.7, 2.8, -0.1, 2.8, 3.7, 2.8])
    Q = rng.uniform(lower, upper, size=(50_000, len(ARM)))
    small, small_s = _timed(lambda: client.compute_clearance(ARM, Q[:1000], 1.0))
    answer, seconds = _timed(lambda: client.compute_clearance(ARM, Q, 1.0))
    print(f"clearance at 1 m: 1,000 configurations ({len(small.distance)} rows) answered in {small_s:.2f} s; "
          f"50,000 refused in {seconds:.2f} s: {answer.message}")
    assert small.status == 0 and 0 < len(small.distance) <= WorkLimits().max_clearance_rows
    assert answer.status == INVALID and len(answer.distance) == 0
    assert "max_clearance_rows" in answer.message and "of its 50000 configurations" in answer.message
    assert seconds < CLEARANCE_HANG_S


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the node's RSS from /proc")
def test_memory_returns_after_big_allowed_requests(validator):
    process, client = validator
    pid = process.process.pid
    samples = 100_000                                      # allowed: half of max_motion_samples
    goal = list(FREE)
    goal[0] = FREE[0] + 2.0
    max_step = 2.0 / samples
    rows = np.tile(np.asarray(FREE), (50_000, 1))          # half of the default max_batch

    def big_requests(count: int) -> None:
        for k in range(count):
            if k % 2 == 0:
                answer = client.check_motion(ARM, FREE, goal, mode=CheckMotion.Request.DISCRETE, max_step=max_step)
                assert answer.valid, answer.message
            else:
                answer = client.check_batch(ARM, rows)
                assert len(answer.valid) == len(rows) and all(answer.valid), answer.message

    big_requests(2)                                        # every buffer of these requests made once
    time.sleep(1.0)                                        # the trim comes a moment after the answer
    start_mb = rss_mb(pid)
    peak_mb = start_mb
    for _ in range(BIG_REQUESTS // 2):
        big_requests(2)
        peak_mb = max(peak_mb, rss_mb(pid))
    time.sleep(1.0)
    end_mb = rss_mb(pid)
    print(f"validator RSS over {BIG_REQUESTS} big requests: {start_mb:.0f} MB at the start, "
          f"{peak_mb:.0f} MB at most between them, {end_mb:.0f} MB after")
    assert end_mb - start_mb < RSS_GROWTH_ALLOWED_MB
