"""Every request answered under mixed parallel load on a loaded machine (issue 39).

One validator following a point-cloud topic; for ``MCP_SOAK_SECONDS`` (default 45 s;
the issue's few minutes by hand: ``MCP_SOAK_SECONDS=300 make test
TESTS=test/nodes/test_soak_mixed.py``) five client threads call in parallel through one client:
certified and discrete motions, trajectories, clearance batches and configuration
checks, while a camera publishes clouds and busy processes take every core. Every call
must be answered within its (generous) timeout: a ``ServiceTimeout`` is an unanswered
request, and the test fails on the first; so does an answer from a callback that failed
("internal error"). A refusal by a work bound is an answer (counted and printed). The node must still be up, with no traceback
in its log. Counts and the slowest answer per service are printed (``pytest -s``).
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration
from node_processes import ARM, FREE, STARTUP_TIMEOUT_S, NodeProcess, panda_params
from rclpy.context import Context
from sensor_msgs.msg import PointCloud2
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from my_collision_pkg.ros.client import ServiceTimeout, ValidatorClient
from my_collision_pkg.ros.conversions import point_cloud_msg
from my_collision_pkg.srv import CheckMotion, CheckValidity

NODE = "soak_validator"
TOPIC = f"/soak_cloud_{os.getpid()}"
SOAK_S = float(os.environ.get("MCP_SOAK_SECONDS", "45"))
ANSWER_WITHIN_S = 60.0             # a hang detector on a loaded machine, not a speed target
CLOUD_RATE_HZ = 5.0
CLOUD_POINTS = 20_000
LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
INVALID = CheckValidity.Response.INVALID_REQUEST


def _busy(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _trajectory(rng) -> JointTrajectory:
    start = rng.uniform(LOWER, UPPER)
    waypoints = start + np.cumsum(rng.uniform(-0.05, 0.05, size=(10, len(ARM))), axis=0)
    waypoints = np.clip(waypoints, LOWER, UPPER)
    msg = JointTrajectory(joint_names=ARM)
    for k, q in enumerate(waypoints):
        msg.points.append(JointTrajectoryPoint(positions=[float(v) for v in q],
                                               time_from_start=Duration(sec=k, nanosec=0)))
    return msg


@pytest.fixture(scope="module")
def soak_node():
    process = NodeProcess("collision_validator", panda_params(
        point_cloud_topic=TOPIC, octomap_max_update_rate_hz=CLOUD_RATE_HZ, octomap_resolution=0.02), {"__node": NODE})
    client = ValidatorClient(f"/{NODE}", node_name=f"soak_client_{os.getpid()}", timeout_s=ANSWER_WITHIN_S,
                             server_alive=lambda: process.process.poll() is None)
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("check", "motion", "trajectory", "clearance"))
        yield process, client
    finally:
        client.close()
        output = process.stop()
        assert "Traceback" not in output, output[-3000:]


def test_mixed_parallel_requests_are_all_answered_on_a_loaded_machine(soak_node):
    process, client = soak_node
    stop = threading.Event()
    counts: dict[str, int] = {}
    slowest: dict[str, float] = {}
    refusals: dict[str, int] = {}
    failures: list[str] = []
    lock = threading.Lock()

    def timed(kind: str, call) -> None:
        start = time.monotonic()
        try:
            answer = call()
        except ServiceTimeout as exc:
            with lock:
                failures.append(f"{kind}: {exc}")
            stop.set()
            return
        elapsed = time.monotonic() - start
        with lock:
            counts[kind] = counts.get(kind, 0) + 1
            slowest[kind] = max(slowest.get(kind, 0.0), elapsed)
            if getattr(answer, "status", None) == INVALID:
                # a work bound's refusal is an answer (a random trajectory through the table with
                # every contact interval can pass max_certified_steps); a callback that failed is not
                refusals[kind] = refusals.get(kind, 0) + 1
                if "internal error" in answer.message:
                    failures.append(f"{kind}: {answer.message}")

    def caller(kind: str, seed: int) -> None:
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            if kind == "certified motion" or kind == "discrete motion":
                start = rng.uniform(LOWER, UPPER)
                goal = np.clip(start + rng.uniform(-0.5, 0.5, size=len(ARM)), LOWER, UPPER)
                mode = CheckMotion.Request.CERTIFIED if kind == "certified motion" else CheckMotion.Request.DISCRETE
                timed(kind, lambda: client.check_motion(ARM, start, goal, mode=mode, max_step=0.01))
            elif kind == "trajectory":
                timed(kind, lambda: client.check_trajectory(_trajectory(rng)))
            elif kind == "clearance":
                rows = rng.uniform(LOWER, UPPER, size=(10, len(ARM)))
                timed(kind, lambda: client.compute_clearance(ARM, rows, influence_distance=0.1))
            else:
                timed(kind, lambda: client.check(ARM, rng.uniform(LOWER, UPPER)))

    context = Context()
    rclpy.init(context=context)
    camera = rclpy.create_node(f"soak_camera_{os.getpid()}", context=context)
    publisher = camera.create_publisher(PointCloud2, TOPIC, 1)
    rng = np.random.default_rng(39)
    clouds_sent = 0
    busy_stop = multiprocessing.Event()
    busy = [multiprocessing.Process(target=_busy, args=(busy_stop,), daemon=True)
            for _ in range(os.cpu_count() or 2)]
    for worker in busy:
        worker.start()
    threads = [threading.Thread(target=caller, args=(kind, seed), daemon=True) for seed, kind in enumerate(
        ("certified motion", "discrete motion", "trajectory", "clearance", "check"))]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + SOAK_S
        while time.monotonic() < deadline and not stop.is_set():
            centre = rng.uniform((0.4, -0.4, 0.3), (0.7, 0.4, 0.6))
            cloud = centre + rng.uniform(-0.1, 0.1, size=(CLOUD_POINTS, 3))
            publisher.publish(point_cloud_msg(cloud, "panda_link0"))
            clouds_sent += 1
            time.sleep(1.0 / CLOUD_RATE_HZ)
        stop.set()
        for thread in threads:
            thread.join(ANSWER_WITHIN_S + 10.0)
    finally:
        stop.set()
        busy_stop.set()
        for worker in busy:
            worker.join(5.0)
        camera.destroy_node()
        rclpy.try_shutdown(context=context)
    print(f"soak {SOAK_S:.0f} s with {len(busy)} busy processes: answers {counts} (refused by a bound: {refusals}), "
          f"slowest { {k: round(v, 2) for k, v in slowest.items()} } s, {clouds_sent} clouds sent")
    assert not failures, failures[:5]
    assert process.process.poll() is None
    assert all(counts.get(kind, 0) > 0 for kind in ("certified motion", "discrete motion", "trajectory", "clearance",
                                                    "check")), counts
    assert not any(thread.is_alive() for thread in threads)
