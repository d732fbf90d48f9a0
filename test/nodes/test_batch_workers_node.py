"""collision_validator's ``batch_workers`` over DDS: ~/check_validity_batch split across processes.

One validator started with ``batch_workers:=2`` (its own node name) answers batches of
6,000 Panda configurations; every answer is compared with the core's one-process
answer (``batch_workers=1``) on the same model and world, built here, with the same
scene changes made on both sides: an object added through ~/apply_collision_objects and
an allowed collision switched through ~/set_allowed_collisions between batches, so the
node's workers must follow the scene; a ~/compute_clearance batch gives the core's rows. The workers are the node's child processes; the
parameter set at run time ends them (1) and a bad value is refused by name; once the node
is stopped, no worker is left.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest
from geometry_msgs.msg import Pose
from node_processes import ARM, PANDA_WORLD, STARTUP_TIMEOUT_S, NodeProcess, panda_params
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from shape_msgs.msg import SolidPrimitive

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject
from my_collision_pkg.msg import CollisionObject
from my_collision_pkg.ros import conversions
from my_collision_pkg.ros.client import ValidatorClient

NODE = "batch_validator"
N = 6_000                     # above MIN_FORK_CONFIGURATIONS (5,000): the pool is forked
SEED = 23
BOX_ID = "batch_box"
BOX_XYZ = (0.35, 0.0, 0.55)
BOX_SIZE = (0.4, 0.4, 0.4)
CALL_TIMEOUT_S = 30.0
GONE_TIMEOUT_S = 5.0
CLEARANCE_N = 400
CLEARANCE_INFLUENCE_M = 0.1
FLOAT_ATOL = 1e-9


def _stat(pid) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command (state first), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def children(pid: int, settle_s: float = GONE_TIMEOUT_S, expect: int | None = None) -> set[int]:
    """Live processes whose parent is ``pid``; with ``expect``, waits up to ``settle_s`` for that
    many (a replaced pool's workers are reaped by a thread of the node, a moment later)."""
    deadline = time.monotonic() + settle_s
    while True:
        found = set()
        for entry in os.listdir("/proc"):
            fields = _stat(entry) if entry.isdigit() else None
            if fields is not None and fields[0] != "Z" and int(fields[1]) == pid:
                found.add(int(entry))
        if expect is None or len(found) == expect or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def box_message() -> CollisionObject:
    msg = CollisionObject()
    msg.id, msg.operation = BOX_ID, CollisionObject.ADD
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = BOX_XYZ
    msg.pose.orientation.w = 1.0
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=list(BOX_SIZE))]
    msg.primitive_poses = [Pose()]
    return msg


def set_parameter(client: ValidatorClient, name: str, value: int):
    """The SetParameters result (successful, reason) of ``name := value`` (an integer)."""
    service = client.node.create_client(SetParameters, f"/{NODE}/set_parameters")
    try:
        assert service.wait_for_service(timeout_sec=CALL_TIMEOUT_S)
        request = SetParameters.Request(parameters=[Parameter(name=name, value=ParameterValue(
            type=ParameterType.PARAMETER_INTEGER, integer_value=value))])
        future = service.call_async(request)
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not future.done():
            assert time.monotonic() < deadline, "set_parameters did not answer"
            time.sleep(0.01)
        return future.result().results[0]
    finally:
        client.node.destroy_client(service)


@pytest.fixture(scope="module")
def node():
    process = NodeProcess("collision_validator", panda_params(batch_workers=2), {"__node": NODE})
    client = ValidatorClient(f"/{NODE}", node_name=f"batch_client_{os.getpid()}")
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("batch", "apply", "set_allowed"))
        yield process, client
    finally:
        client.close()
        process.stop()


@pytest.fixture(scope="module")
def reference():
    """The core on the node's model and world, in this process only (batch_workers=1)."""
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    return scene, CollisionChecker(scene, batch_workers=1)


def batch_answers(client, reference, Q):
    """The node's answer to Q and the core's one-process answer: equal verdicts, status and message."""
    scene, checker = reference
    answer = client.check_batch(ARM, Q)
    valid, summary = checker.check_batch(ARM, Q)
    assert list(answer.valid) == valid.tolist()
    assert (answer.status, answer.message) == (int(summary.status), summary.message)
    return valid


def test_batches_on_two_processes_follow_the_scene(node, reference):
    process, client = node
    scene, _ = reference
    robot = scene.robot
    arm = [robot.active_index(name) for name in ARM]
    lower, upper = robot.lower_limits[arm], robot.upper_limits[arm]
    Q = np.random.default_rng(SEED).uniform(lower - 0.1, upper + 0.1, size=(N, len(ARM)))
    base = batch_answers(client, reference, Q)
    assert 0 < np.count_nonzero(base) < N
    workers = children(process.process.pid, expect=1)
    assert len(workers) == 1                       # batch_workers 2: one worker and the node itself

    assert client.apply([box_message()]).success
    scene.apply([AddObject(SceneObject(BOX_ID, (ObjectShape(Box(BOX_SIZE)),), make_transform(None, BOX_XYZ)))])
    with_box = batch_answers(client, reference, Q)
    assert np.count_nonzero(with_box) < np.count_nonzero(base)
    after_box = children(process.process.pid, expect=1)
    assert len(after_box) == 1 and not after_box & workers     # forked again for the new snapshot

    entries = [(BOX_ID, link, True) for link in robot.link_names]
    assert client.set_allowed_collisions(entries).success
    for a, b, allowed in entries:
        scene.set_allowed_collision(a, b, allowed)
    np.testing.assert_array_equal(batch_answers(client, reference, Q), base)
    assert not children(process.process.pid, expect=1) & after_box



def test_clearance_batches_on_two_processes(node, reference):
    """~/compute_clearance of 400 configurations (each counts as 20 predicate ones: the pool may share it, where
    its first configurations' speed says it is work enough) gives the core's one-process rows."""
    process, client = node
    scene, checker = reference
    robot = scene.robot
    arm = [robot.active_index(name) for name in ARM]
    Q = np.random.default_rng(SEED + 2).uniform(robot.lower_limits[arm], robot.upper_limits[arm],
                                                size=(CLEARANCE_N, len(ARM)))
    served = conversions.clearance_from_response(client.compute_clearance(ARM, Q, CLEARANCE_INFLUENCE_M))
    local = checker.clearance(ARM, Q, CLEARANCE_INFLUENCE_M)
    assert (served.status, served.message) == (local.status, local.message) and len(local) > CLEARANCE_N
    for name in ("configuration_index", "body_names", "shape_ids", "smooth"):
        np.testing.assert_array_equal(getattr(served, name), getattr(local, name), err_msg=name)
    # the node's box pose comes from a message (a quaternion), the reference's from a matrix:
    # the same to 1e-11 m (the core tests compare 1 and 2 processes exactly on one scene)
    for name in ("distance", "points", "jacobian"):
        np.testing.assert_allclose(getattr(served, name), getattr(local, name), rtol=0, atol=FLOAT_ATOL,
                                   err_msg=name)
    assert len(children(process.process.pid, expect=1)) == 1


def test_batch_workers_parameter_at_run_time(node, reference):
    process, client = node
    scene, _ = reference
    robot = scene.robot
    arm = [robot.active_index(name) for name in ARM]
    Q = np.random.default_rng(SEED + 1).uniform(robot.lower_limits[arm], robot.upper_limits[arm], size=(N, len(ARM)))
    batch_answers(client, reference, Q)
    assert len(children(process.process.pid, expect=1)) == 1
    result = set_parameter(client, "batch_workers", 1)
    assert result.successful, result.reason
    assert children(process.process.pid, expect=0) == set()     # the pool ended with the new count
    batch_answers(client, reference, Q)
    assert children(process.process.pid, settle_s=0.0) == set()  # one process: no pool
    bad = set_parameter(client, "batch_workers", -1)
    assert not bad.successful and "batch_workers" in bad.reason
    result = set_parameter(client, "batch_workers", 2)
    assert result.successful, result.reason
    batch_answers(client, reference, Q)
    workers = children(process.process.pid, expect=1)
    assert len(workers) == 1
    process.stop()
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers), "a batch worker outlived the node"
