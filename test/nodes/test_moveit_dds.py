"""The MoveIt bridge over DDS, with the real moveit_msgs (skipped where moveit_msgs does not import).

The node starts on the Panda with no world file; the world (the table and post of
config/panda_world.yaml) comes from one full ``moveit_msgs/PlanningScene`` published on the
mirrored topic. Then ``~/check_state_validity`` answers 1000 random configurations as
``~/check_validity`` does, and its contacts' depths are minus explain's distances.

moveit_msgs is not on PyPI nor in Debian: build it from its ``ros2`` branch (with
octomap_msgs and object_recognition_msgs) against this project's venv, source its install
and put its ``lib/`` on ``LD_LIBRARY_PATH`` (docs/moveit.md).
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

moveit_msg = pytest.importorskip("moveit_msgs.msg", reason="moveit_msgs is not installed (ROS install only)")
moveit_srv = pytest.importorskip("moveit_msgs.srv", reason="moveit_msgs is not installed (ROS install only)")

import rclpy  # noqa: E402
from geometry_msgs.msg import Pose  # noqa: E402
from node_processes import ARM, FREE, INTO_TABLE, STARTUP_TIMEOUT_S, NodeProcess, panda_params  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from shape_msgs.msg import SolidPrimitive  # noqa: E402

from my_collision_pkg.srv import CheckValidity, ExplainCollision  # noqa: E402

N_CONFIGURATIONS = 1000
SEED = 1818
CALL_TIMEOUT_S = 30.0
TOPIC = f"/test_monitored_planning_scene_{os.getpid()}"


def _object(oid, xyz, primitive_type, dimensions):
    co = moveit_msg.CollisionObject()
    co.header.frame_id = "panda_link0"
    co.id = oid
    co.operation = moveit_msg.CollisionObject.ADD
    co.pose.position.x, co.pose.position.y, co.pose.position.z = (float(v) for v in xyz)
    co.pose.orientation.w = 1.0
    co.primitives = [SolidPrimitive(type=primitive_type, dimensions=[float(d) for d in dimensions])]
    co.primitive_poses = [Pose()]
    return co


def panda_world_scene():
    """config/panda_world.yaml as one full PlanningScene: the table (box) and the post (cylinder)."""
    msg = moveit_msg.PlanningScene()
    msg.is_diff = False
    cylinder = [0.0, 0.0]
    cylinder[SolidPrimitive.CYLINDER_HEIGHT], cylinder[SolidPrimitive.CYLINDER_RADIUS] = 0.8, 0.05
    msg.world.collision_objects = [_object("table", (0.65, 0.0, 0.15), SolidPrimitive.BOX, (0.5, 1.0, 0.04)),
                                   _object("post", (0.0, 0.55, 0.4), SolidPrimitive.CYLINDER, cylinder)]
    return msg


class Caller:
    """A client node of its own context: publisher of the mirrored topic and the three services."""

    def __init__(self) -> None:
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f"moveit_dds_test_{os.getpid()}", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.scene = self.node.create_publisher(moveit_msg.PlanningScene, TOPIC, qos)
        self.validity = self.node.create_client(moveit_srv.GetStateValidity,
                                                "/collision_validator/check_state_validity")
        self.check = self.node.create_client(CheckValidity, "/collision_validator/check_validity")
        self.explain = self.node.create_client(ExplainCollision, "/collision_validator/explain")
        # one executor spinning in its own thread for the whole module; callers wait on the future
        # (spin_until_future_complete per call made each of the 2000 calls take ~0.1 s here)
        self._stop = threading.Event()
        self._spinner = threading.Thread(target=self._spin, daemon=True)
        self._spinner.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def wait(self, predicate, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} within {timeout_s:g} s")
            time.sleep(0.05)

    def call(self, client, request):
        future = client.call_async(request)
        answered = threading.Event()
        future.add_done_callback(lambda _: answered.set())
        assert answered.wait(CALL_TIMEOUT_S), f"{client.srv_name} did not answer within {CALL_TIMEOUT_S:g} s"
        return future.result()

    def state_validity(self, names, q):
        request = moveit_srv.GetStateValidity.Request()
        request.robot_state.joint_state.name = list(names)
        request.robot_state.joint_state.position = [float(v) for v in q]
        return self.call(self.validity, request)

    def close(self) -> None:
        self._stop.set()
        self._spinner.join()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture(scope="module")
def mirrored():
    params = panda_params(moveit_compat="true", planning_scene_topic=TOPIC, max_batch=5000)
    del params["scene_path"]                        # the world comes from the PlanningScene message
    process = NodeProcess("collision_validator", params)
    caller = Caller()
    try:
        for client in (caller.validity, caller.check, caller.explain):
            caller.wait(lambda c=client: c.service_is_ready() or process.process.poll() is not None,
                        STARTUP_TIMEOUT_S, f"{client.srv_name} ready")
            assert process.process.poll() is None, process.output()
        caller.wait(lambda: caller.scene.get_subscription_count() > 0, STARTUP_TIMEOUT_S, "the node subscribed")
        assert caller.state_validity(ARM, INTO_TABLE).valid       # no table yet
        caller.scene.publish(panda_world_scene())
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while caller.state_validity(ARM, INTO_TABLE).valid:
            assert time.monotonic() < deadline, "the mirrored table never appeared:\n" + process.output()
        yield caller
    finally:
        caller.close()
        print(process.stop())


def test_state_validity_equals_check_validity_on_1000_configurations(mirrored):
    rng = np.random.default_rng(SEED)
    lo = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
    hi = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
    invalid = 0
    for q in rng.uniform(lo, hi, size=(N_CONFIGURATIONS, len(ARM))):
        moveit = mirrored.state_validity(ARM, q)
        request = CheckValidity.Request()
        request.joint_names, request.positions = list(ARM), [float(v) for v in q]
        ours = mirrored.call(mirrored.check, request)
        assert moveit.valid == ours.valid, (q.tolist(), ours.message)
        assert not moveit.cost_sources
        invalid += not ours.valid
    assert 0 < invalid < N_CONFIGURATIONS


def test_contact_depths_are_minus_explains_distances(mirrored):
    assert mirrored.state_validity(ARM, FREE).valid
    moveit = mirrored.state_validity(ARM, INTO_TABLE)
    request = ExplainCollision.Request()
    request.joint_names, request.positions = list(ARM), [float(v) for v in INTO_TABLE]
    explained = mirrored.call(mirrored.explain, request)
    assert not moveit.valid and len(moveit.contacts) == len(explained.contacts) > 0
    for contact, ours in zip(moveit.contacts, explained.contacts):
        assert contact.depth == pytest.approx(-ours.distance, abs=1e-12) and contact.depth > 0
        assert (contact.contact_body_1, contact.contact_body_2) == tuple(ours.link_names)
        assert contact.header.frame_id in ("panda_link0", "world")
    assert any(c.contact_body_2 == "table" and c.body_type_2 == moveit_msg.ContactInformation.WORLD_OBJECT
               for c in moveit.contacts)


def _octomap_around(point_m, half_m=0.08, resolution_m=0.02):
    """octomap_msgs/OctomapWithPose (binary OcTree, planning frame) filling a cube about ``point_m``."""
    from octomap_msgs.msg import OctomapWithPose
    from my_collision_pkg.core.perception.occupancy import OccupancyMap, binary_octomap_data
    axis = np.arange(-half_m, half_m + 1e-9, resolution_m / 2.0)
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3) + np.asarray(point_m)
    occupancy = OccupancyMap.from_points(grid, resolution_m)
    with_pose = OctomapWithPose()
    with_pose.header.frame_id = "panda_link0"
    with_pose.origin.orientation.w = 1.0
    with_pose.octomap.binary, with_pose.octomap.id, with_pose.octomap.resolution = True, "OcTree", resolution_m
    with_pose.octomap.data = np.frombuffer(binary_octomap_data(occupancy), dtype=np.uint8).view(np.int8).tolist()
    return with_pose


def test_a_mirrored_octomap_changes_the_verdict_and_a_full_scene_clears_it(mirrored):
    pytest.importorskip("octomap_msgs.msg", reason="octomap_msgs is not installed (ROS install only)")
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    robot = scene.robot
    q = np.array(scene.current_positions, dtype=float)
    for name, value in zip(ARM, FREE):
        q[robot.active_joint_names.index(name)] = value
    hand = robot.link_transforms(q)[robot.link_index("panda_hand")][:3, 3]
    assert mirrored.state_validity(ARM, FREE).valid
    msg = moveit_msg.PlanningScene()
    msg.is_diff = True
    msg.robot_state.is_diff = True
    msg.world.octomap = _octomap_around(hand)
    mirrored.scene.publish(msg)
    mirrored.wait(lambda: not mirrored.state_validity(ARM, FREE).valid, 10.0, "the mirrored octomap refuses FREE")
    answer = mirrored.state_validity(ARM, FREE)
    assert any(c.contact_body_2 == "<octomap>" and c.body_type_2 == moveit_msg.ContactInformation.WORLD_OBJECT
               and c.depth > 0 for c in answer.contacts)
    request = CheckValidity.Request()
    request.joint_names, request.positions = list(ARM), [float(v) for v in FREE]
    assert not mirrored.call(mirrored.check, request).valid
    mirrored.scene.publish(panda_world_scene())        # a full scene without a map clears it
    mirrored.wait(lambda: mirrored.state_validity(ARM, FREE).valid, 10.0, "the full scene clears the octomap")


def test_global_names_serve_check_state_validity_at_the_root():
    params = panda_params(moveit_compat="true", moveit_global_names=True)
    name = "/check_state_validity"
    process = NodeProcess("collision_validator", params)
    caller = Caller()
    try:
        client = caller.node.create_client(moveit_srv.GetStateValidity, name)
        caller.wait(lambda: client.service_is_ready() or process.process.poll() is not None, STARTUP_TIMEOUT_S,
                    f"{name} ready")
        assert process.process.poll() is None, process.output()
        request = moveit_srv.GetStateValidity.Request()
        request.robot_state.joint_state.name = list(ARM)
        request.robot_state.joint_state.position = [float(v) for v in INTO_TABLE]
        assert not caller.call(client, request).valid          # the world file's table
        request.robot_state.joint_state.position = [float(v) for v in FREE]
        assert caller.call(client, request).valid
    finally:
        caller.close()
        print(process.stop())


def test_multi_state_validity_stops_at_the_first_invalid_state(mirrored):
    multi = getattr(moveit_srv, "GetMultiStateValidity", None)
    if multi is None:
        pytest.skip("this moveit_msgs has no GetMultiStateValidity (newer releases only)")
    from sensor_msgs.msg import JointState
    client = mirrored.node.create_client(multi, "/collision_validator/check_multi_state_validity")
    mirrored.wait(client.service_is_ready, STARTUP_TIMEOUT_S, "check_multi_state_validity ready")

    def ask(*states):
        request = multi.Request()
        request.joint_states = [JointState(name=list(ARM), position=[float(v) for v in q]) for q in states]
        return mirrored.call(client, request)

    assert ask(FREE, FREE).valid
    refused = ask(FREE, INTO_TABLE, FREE)
    single = mirrored.state_validity(ARM, INTO_TABLE)
    assert not refused.valid and not single.valid
    # the answer is the first invalid state's: its contacts are that state's
    assert sorted((c.contact_body_1, c.contact_body_2) for c in refused.contacts) == \
        sorted((c.contact_body_1, c.contact_body_2) for c in single.contacts)
    mirrored.node.destroy_client(client)


def test_the_start_up_pull_mirrors_a_get_planning_scene_answer():
    """A GetPlanningScene server (the real type) answering with the table and the post: the
    validator, started with ``planning_scene_service`` and no world file, pulls it once."""
    service = f"/test_get_planning_scene_{os.getpid()}"
    caller = Caller()
    asked = []

    def answer(request, response):
        asked.append(request.components.components)
        response.scene = panda_world_scene()
        return response
    server = caller.node.create_service(moveit_srv.GetPlanningScene, service, answer)
    params = panda_params(moveit_compat="true", planning_scene_service=service)
    del params["scene_path"]
    process = NodeProcess("collision_validator", params, {"__node": "pulling_validator"})
    try:
        client = caller.node.create_client(moveit_srv.GetStateValidity, "/pulling_validator/check_state_validity")
        caller.wait(lambda: client.service_is_ready() or process.process.poll() is not None, STARTUP_TIMEOUT_S,
                    "the pulling validator ready")
        assert process.process.poll() is None, process.output()
        request = moveit_srv.GetStateValidity.Request()
        request.robot_state.joint_state.name = list(ARM)
        request.robot_state.joint_state.position = [float(v) for v in INTO_TABLE]
        caller.wait(lambda: bool(asked) and not caller.call(client, request).valid, STARTUP_TIMEOUT_S,
                    "the pulled table refuses INTO_TABLE")
        assert len(asked) == 1 and asked[0] != 0                 # one pull, asking for every component
        request.robot_state.joint_state.position = [float(v) for v in FREE]
        assert caller.call(client, request).valid
    finally:
        caller.node.destroy_service(server)
        caller.close()
        print(process.stop())
