"""collision_validator and contact_markers stop at any time: during start-up (while compiling,
with an empty numba cache) and while a long request is in flight; start-up says what it spent.

The issue's bound is 2 s from the signal to the end of the process, exit code 0, no
traceback; the tests allow STOP_BOUND_S (a loaded machine) and check the exit code and
the output.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time

import pytest
from node_processes import ARM, FREE, STARTUP_TIMEOUT_S, NodeProcess, panda_params
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.srv import CheckTrajectory

STOP_BOUND_S = 5.0
PHASE_TIMEOUT_S = 60.0
# Far from FREE, through the world's post: every segment has contacts, each costs a certified sweep.
OTHER = [1.5, 0.3, 0.5, -1.5, 0.8, 2.5, -0.5]
LONG_TRAJECTORY_SEGMENTS = 200          # about 20 s of certified checking on the Panda


def _wait_for(process: NodeProcess, pattern: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        output = process.output()
        if re.search(pattern, output):
            return output
        assert process.process.poll() is None, f"the node ended before '{pattern}':\n{output}"
        time.sleep(0.05)
    raise AssertionError(f"no '{pattern}' within {timeout_s} s:\n{process.output()}")


def _stop(process: NodeProcess, signum: int) -> tuple[int, float, str]:
    """Send ``signum``; (exit code, seconds to exit, output). Kills the process past STOP_BOUND_S."""
    start = time.monotonic()
    process.process.send_signal(signum)
    try:
        code = process.process.wait(STOP_BOUND_S)
    except subprocess.TimeoutExpired:
        process.process.kill()
        process.process.wait()
        return -999, time.monotonic() - start, process.output()
    return code, time.monotonic() - start, process.output()


def _assert_clean(output: str) -> None:
    assert "Traceback" not in output, output
    assert "InvalidHandle" not in output, output
    assert "failed with an unexpected" not in output, output


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_the_kernels_compile_ends_the_process_at_once(tmp_path, signum):
    # an empty cache of its own: the node compiles every kernel (about a minute), and is stopped in the middle
    process = NodeProcess("collision_validator", panda_params(), {"__node": "compiling_validator"},
                          env={"NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")})
    try:
        _wait_for(process, "compiling the kernels", PHASE_TIMEOUT_S)
        time.sleep(1.0)
        assert process.process.poll() is None and "services ready" not in process.output()
        code, seconds, output = _stop(process, signum)
    finally:
        process.stop()
    print(f"exit code {code} {seconds:.2f} s after the signal")
    assert code == 0 and seconds < STOP_BOUND_S, (code, seconds, output)
    _assert_clean(output)
    assert "services ready" not in output


def test_a_stop_while_importing_ends_the_process_at_once():
    process = NodeProcess("collision_validator", panda_params(), {"__node": "importing_validator"})
    try:
        time.sleep(0.5)
        assert process.process.poll() is None
        code, seconds, output = _stop(process, signal.SIGTERM)
    finally:
        process.stop()
    print(f"exit code {code} {seconds:.2f} s after the signal")
    assert code == 0 and seconds < STOP_BOUND_S, (code, seconds, output)
    _assert_clean(output)


def _long_trajectory() -> JointTrajectory:
    trajectory = JointTrajectory(joint_names=ARM)
    for i in range(LONG_TRAJECTORY_SEGMENTS + 1):
        trajectory.points.append(JointTrajectoryPoint(positions=[float(v) for v in (FREE if i % 2 == 0 else OTHER)],
                                                      time_from_start=Duration(sec=i)))
    return trajectory


def test_start_up_is_logged_and_a_stop_during_a_long_request_is_quick_and_clean():
    process = NodeProcess("collision_validator", panda_params(), {"__node": "busy_validator"})
    client = ValidatorClient("/busy_validator", node_name=f"busy_client_{os.getpid()}", timeout_s=60.0)
    answers = []
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("trajectory",))
        output = _wait_for(process, "services ready", PHASE_TIMEOUT_S)
        line = re.search(r"start-up: imports [\d.]+ s, model and meshes [\d.]+ s, kernels [\d.]+ s, "
                         r"service warm-up [\d.]+ s; total ([\d.]+) s from process start", output)
        assert line, output
        assert 0.0 < float(line.group(1)) < STARTUP_TIMEOUT_S

        def call():
            try:
                answers.append(client.check_trajectory(_long_trajectory(), stop_at_first_contact=False,
                                                       mode=CheckTrajectory.Request.CERTIFIED))
            except Exception as exc:  # noqa: BLE001 - no answer is allowed: the node is going away
                answers.append(exc)
        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        time.sleep(2.0)                       # the request is being worked on
        assert not answers, "the long request ended too soon to test a stop during it"
        code, seconds, output = _stop(process, signal.SIGINT)
        caller.join(5.0)
    finally:
        client.close()
        process.stop()
    print(f"exit code {code} {seconds:.2f} s after the signal")
    assert code == 0 and seconds < STOP_BOUND_S, (code, seconds, output)
    _assert_clean(output)
    answer = answers[0] if answers else None
    if isinstance(answer, CheckTrajectory.Response):      # answered: refused, saying why
        assert answer.status == CheckTrajectory.Response.INVALID_REQUEST and "shutting down" in answer.message


def test_contact_markers_stops_quickly_and_cleanly():
    process = NodeProcess("contact_markers", {}, {"__node": "stopping_markers"})
    try:
        _wait_for(process, "drawing contact reports", PHASE_TIMEOUT_S)
        code, seconds, output = _stop(process, signal.SIGINT)
    finally:
        process.stop()
    print(f"exit code {code} {seconds:.2f} s after the signal")
    assert code == 0 and seconds < STOP_BOUND_S, (code, seconds, output)
    _assert_clean(output)


# ----- the pieces, without a process ----------------------------------------------------
class _Logger:
    def __init__(self):
        self.errors = []

    def error(self, text):
        self.errors.append(text)


def test_a_stopping_guard_refuses_new_requests_and_answers_a_stopped_one_without_a_log():
    from my_collision_pkg.ros.runtime import REQUEST_STOPPED, SHUTTING_DOWN, CallbackGuard
    from my_collision_pkg.srv import CheckMotion
    logger = _Logger()
    guard = CallbackGuard(logger)
    started, release = threading.Event(), threading.Event()

    def slow(request, response):
        started.set()
        release.wait(5.0)
        if guard.stopping.is_set():
            raise REQUEST_STOPPED("stopped")
        return response
    served = guard.service(slow, CheckMotion)
    answers = []
    worker = threading.Thread(target=lambda: answers.append(served(CheckMotion.Request(), CheckMotion.Response())))
    worker.start()
    assert started.wait(5.0) and guard.in_flight == 1
    assert not guard.wait_idle(0.05)
    guard.begin_stop()
    refused = served(CheckMotion.Request(), CheckMotion.Response())
    assert refused.status == CheckMotion.Response.INVALID_REQUEST and refused.message == SHUTTING_DOWN
    release.set()
    worker.join(5.0)
    assert guard.wait_idle(1.0) and guard.in_flight == 0
    assert answers[0].status == CheckMotion.Response.INVALID_REQUEST and answers[0].message == SHUTTING_DOWN
    assert logger.errors == [] and guard.failures == 0
    calls = []
    assert guard.timer(lambda: calls.append(1))() is None and calls == []     # skipped while stopping


def test_memory_return_runs_once_for_a_burst_of_big_requests_and_off_the_calling_thread():
    from my_collision_pkg.ros import runtime
    memory = runtime.MemoryReturn(delay_s=0.05)
    callers = []
    original = runtime.release_free_memory
    runtime.release_free_memory = lambda: callers.append(threading.current_thread()) or True
    try:
        for _ in range(5):
            memory.after_big_request()
        time.sleep(0.5)
        assert memory.releases == 1 and callers and threading.current_thread() not in callers
        memory.after_big_request()
        time.sleep(0.5)
        assert memory.releases == 2
    finally:
        runtime.release_free_memory = original
