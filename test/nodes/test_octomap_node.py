"""The occupancy map over DDS: a PointCloud2 topic, ``~/clear_octomap``, ``~/set_octomap``.

One validator (its own node name) on the Panda and the default world, following a cloud
topic of its own. A box-shaped cloud where ``REACH``'s fingers go turns that state invalid
(against ``<octomap>``) once the node applies it; the clear and set services change the
map in one step. Waits are polls with a timeout (hang detectors, not speed targets); the
measured latencies are printed (``pytest -s``).
"""
from __future__ import annotations

import os
import subprocess
import time

import numpy as np
import pytest
import rclpy
from node_processes import ARM, FREE, STARTUP_TIMEOUT_S, NodeProcess, executable, listener, panda_params, ros_args
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState, PointCloud2
from visualization_msgs.msg import Marker, MarkerArray

from my_collision_pkg.core.perception.occupancy import OccupancyMap, write_binary_octomap
from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.ros.conversions import point_cloud_msg
from my_collision_pkg.msg import ContactReport
from my_collision_pkg.ros.qos import LATCHED_QOS
from my_collision_pkg.srv import ClearOctomap, SetOctomap

NODE = "octomap_validator"
TOPIC = f"/octomap_test_cloud_{os.getpid()}"
RATE_HZ = 5.0                      # octomap_max_update_rate_hz: an update period of 0.2 s
REACH = [0.0, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785]        # fingers down into the box below; valid without it
BOX_LOW_M, BOX_HIGH_M = (0.58, -0.12, 0.26), (0.70, 0.12, 0.34)
ANSWER_WITHIN_S = 20.0             # hang detector for a change to show (one update period is expected)
REPUBLISH_S = 1.0                  # the subscription is best effort: a lost cloud is sent again


def _box_cloud():
    axes = [np.arange(lo, hi + 1e-9, 0.01) for lo, hi in zip(BOX_LOW_M, BOX_HIGH_M)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


@pytest.fixture(scope="module")
def octomap_node():
    process = NodeProcess("collision_validator", panda_params(
        point_cloud_topic=TOPIC, octomap_max_update_rate_hz=RATE_HZ, octomap_resolution=0.02), {"__node": NODE})
    client = ValidatorClient(f"/{NODE}", node_name=f"octomap_client_{os.getpid()}", timeout_s=30.0)
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f"octomap_camera_{os.getpid()}", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    publisher = node.create_publisher(PointCloud2, TOPIC, 5)
    scene_objects = []
    node.create_subscription(MarkerArray, f"/{NODE}/scene_objects", scene_objects.append, LATCHED_QOS)
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S,
                                 services=("check", "clear_octomap", "set_octomap"))
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while publisher.get_subscription_count() == 0:          # the node's subscription is matched
            assert time.monotonic() < deadline, "the validator never subscribed to " + TOPIC
            executor.spin_once(timeout_sec=0.05)
        yield process, client, publisher, executor, scene_objects
    finally:
        client.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        output = process.stop()
        print(output[-3000:])
        assert "Traceback" not in output, output


def _until(condition, publish=None, timeout_s=ANSWER_WITHIN_S, executor=None):
    """Poll ``condition()`` until true; ``publish()`` first and every REPUBLISH_S; the seconds it took."""
    start = time.monotonic()
    sent = -np.inf
    while True:
        if publish is not None and time.monotonic() - sent >= REPUBLISH_S:
            publish()
            sent = time.monotonic()
        if condition():
            return time.monotonic() - start
        assert time.monotonic() - start < timeout_s, "no change within the timeout"
        if executor is not None:
            executor.spin_once(timeout_sec=0.02)
        else:
            time.sleep(0.02)


def _valid(client, q=REACH) -> bool:
    return client.check(ARM, q).valid


def test_a_published_cloud_turns_a_state_invalid_and_clear_restores_it(octomap_node):
    _, client, publisher, _, _ = octomap_node
    assert _valid(client) and _valid(client, FREE)
    cloud = point_cloud_msg(_box_cloud(), "panda_link0")
    seconds = _until(lambda: not _valid(client), lambda: publisher.publish(cloud))
    print(f"cloud of {cloud.width} points to an invalid check_validity: {seconds * 1e3:.0f} ms")
    answer = client.check(ARM, REACH)
    assert "<octomap>" in answer.message
    assert _valid(client, FREE)                    # the hand far above the box
    time.sleep(2.0 / RATE_HZ)                      # nothing in flight any more
    cleared = client.clear_octomap()
    assert cleared.success and cleared.cells_removed > 100, cleared.message
    assert _valid(client)                          # at once: the answer comes after the new world
    again = client.clear_octomap()
    assert again.success and again.cells_removed == 0


def test_a_cloud_in_the_hand_frame_follows_the_hand(octomap_node):
    _, client, publisher, _, _ = octomap_node
    # the node's current state (no /joint_states here) is the model's default: the box given in
    # the hand's frame at that state lands where it lies in the planning frame
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    urdf, srdf = panda_paths()
    robot = load_scene(urdf_path=urdf, srdf_path=srdf).robot
    T_world_hand = robot.link_transforms(robot.default_positions())[robot.link_index("panda_hand")]
    box_hand = (_box_cloud() - T_world_hand[:3, 3]) @ T_world_hand[:3, :3]
    cloud = point_cloud_msg(box_hand, "panda_hand")
    _until(lambda: not _valid(client), lambda: publisher.publish(cloud))
    time.sleep(2.0 / RATE_HZ)
    assert client.clear_octomap().cells_removed > 100
    assert _valid(client)


def test_a_malformed_cloud_is_logged_and_leaves_the_map(octomap_node):
    process, client, publisher, _, _ = octomap_node
    _until(lambda: not _valid(client), lambda: publisher.publish(point_cloud_msg(_box_cloud(), "panda_link0")))
    time.sleep(2.0 / RATE_HZ)
    no_x = point_cloud_msg(_box_cloud() + [0.0, 0.6, 0.0], "panda_link0")
    no_x.fields = [f for f in no_x.fields if f.name != "x"]
    odom = point_cloud_msg(_box_cloud() + [0.0, 0.6, 0.0], "odom")
    _until(lambda: "no x field" in process.output(), lambda: publisher.publish(no_x))
    _until(lambda: "frame 'odom'" in process.output(), lambda: publisher.publish(odom))
    output = process.output()
    line = next(line for line in output.splitlines() if "no x field" in line)
    assert f"point cloud on '{TOPIC}' dropped, occupancy map unchanged" in line
    assert not _valid(client)                      # the box is still there
    assert "<octomap>" in client.check(ARM, REACH).message
    assert "Traceback" not in output
    assert client.clear_octomap().success


def test_set_octomap_from_points_and_files(octomap_node, tmp_path):
    _, client, _, executor, scene_objects = octomap_node
    box = _box_cloud()
    answer = client.set_octomap(points_xyz_m=box)
    assert answer.success and answer.cells == OccupancyMap.from_points(box, 0.02).n_occupied, answer.message
    assert not _valid(client)
    # the map is drawn as one CUBE_LIST of its cells in ~/scene_objects
    def drawn():
        for array in reversed(scene_objects):
            cubes = [m for m in array.markers if m.ns == "scene_objects/<octomap>"]
            return len(cubes) == 1 and cubes[0].type == Marker.CUBE_LIST and len(cubes[0].points) == answer.cells
        return False
    _until(drawn, executor=executor)
    # refused: a flat list that is not x, y, z triples, NaN, both a file and points, a corrupt file
    for kwargs, fault in [({"points_xyz_m": box.ravel()[:-1]}, "multiple of 3"),
                          ({"points_xyz_m": np.array([0.6, 0.0, np.nan])}, "finite"),
                          ({"points_xyz_m": box, "file_path": "/tmp/x.bt"}, "not both"),
                          ({"file_path": str(tmp_path / "missing.bt")}, "missing.bt"),
                          ({"points_xyz_m": box, "resolution_m": -1.0}, "resolution")]:
        refused = client.set_octomap(**kwargs)
        assert not refused.success and fault in refused.message and "map unchanged" in refused.message, \
            refused.message
        assert not _valid(client)
    # a .bt file (the box moved up, out of REACH's way): the state is valid again
    path = tmp_path / "lifted.bt"
    write_binary_octomap(str(path), OccupancyMap.from_points(box + [0.0, 0.0, 0.6], 0.02))
    from_file = client.set_octomap(file_path=str(path))
    assert from_file.success and from_file.cells > 100, from_file.message
    assert _valid(client)
    # no file and no points: the map is cleared
    empty = client.set_octomap()
    assert empty.success and empty.cells == 0
    assert client.clear_octomap().cells_removed == 0


@pytest.mark.parametrize("srv_type, expected", [
    (ClearOctomap.Request, {}),
    (ClearOctomap.Response, {"success": "boolean", "message": "string", "cells_removed": "uint32"}),
    (SetOctomap.Request, {"file_path": "string", "points_xyz_m": "sequence<double>", "resolution_m": "double"}),
    (SetOctomap.Response, {"success": "boolean", "message": "string", "cells": "uint32"}),
])
def test_the_octomap_services_fields_are_the_contract(srv_type, expected):
    assert srv_type.get_fields_and_field_types() == expected


@pytest.mark.parametrize("params, named", [({"octomap_mode": "latest"}, "octomap_mode"),
                                           ({"octomap_resolution": 0.0}, "octomap_resolution"),
                                           ({"octomap_point_subsample": 0}, "octomap_point_subsample")])
def test_a_bad_octomap_parameter_ends_start_up_with_one_line(params, named):
    result = subprocess.run([executable("collision_validator")] + ros_args(panda_params(**params)),
                            capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("collision_validator: cannot start:"), result.stderr
    assert named in lines[0], lines[0]


def test_a_wrist_camera_cloud_accumulates_at_the_joint_state(tmp_path):
    """accumulate, a cloud in the hand's frame posed at the state from /joint_states (FREE, not
    the model's default): the box lands under REACH's fingers only if the node used that state."""
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    urdf, srdf = panda_paths()
    robot = load_scene(urdf_path=urdf, srdf_path=srdf).robot
    q_free = np.array(FREE + [0.0])
    T_world_hand = robot.link_transforms(q_free)[robot.link_index("panda_hand")]
    box_hand = (_box_cloud() - T_world_hand[:3, 3]) @ T_world_hand[:3, :3]
    name = "octomap_wrist_validator"
    topic = f"/octomap_wrist_cloud_{os.getpid()}"
    process = NodeProcess("collision_validator", panda_params(
        point_cloud_topic=topic, octomap_mode="accumulate", monitor_joint_states="true"), {"__node": name})
    client = ValidatorClient(f"/{name}", node_name=f"wrist_client_{os.getpid()}", timeout_s=30.0)
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("check", "clear_octomap"))
        with listener(f"wrist_camera_{os.getpid()}", ContactReport, f"/{name}/contacts", LATCHED_QOS) as (
                ros, executor, reports):
            states = ros.create_publisher(JointState, "/joint_states", 10)
            clouds = ros.create_publisher(PointCloud2, topic, 5)
            state = JointState(name=list(robot.active_joint_names), position=q_free.tolist())

            def at_free():
                states.publish(state)
                return any(np.allclose(r.state.position[:7], FREE) for r in reports)
            _until(at_free, executor=executor)
            assert _valid(client)
            cloud = point_cloud_msg(box_hand, "panda_hand")
            seconds = _until(lambda: not _valid(client), lambda: clouds.publish(cloud), executor=executor)
            print(f"wrist cloud (accumulate) to an invalid check_validity: {seconds * 1e3:.0f} ms")
            assert "<octomap>" in client.check(ARM, REACH).message
            time.sleep(0.5)
            assert client.clear_octomap().cells_removed > 100
            assert _valid(client)
    finally:
        client.close()
        output = process.stop()
    assert "Traceback" not in output, output
    assert "octomap: point clouds from" in output and "accumulate" in output
