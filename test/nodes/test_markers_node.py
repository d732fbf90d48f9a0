"""contact_markers over DDS: the validator explains a colliding Panda with surfaces, the
marker node draws the report, and a subscriber in its own context checks the drawing
against the explanation. Also: start-up errors and the node's QoS."""
from __future__ import annotations

import os
import subprocess
import threading
import time

import numpy as np
import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.ros.markers import MarkerOptions, pair_namespace
from my_collision_pkg.ros.markers_node import CONTACTS_QOS, MARKERS_QOS, _COLOURS, _NUMBER_RANGES, _SWITCHES
from my_collision_pkg.core.scene.loading import panda_paths
from my_collision_pkg.ros.validator_node import REPORT_QOS
from node_processes import PANDA_WORLD, NodeProcess, executable, ros_args

ARM = [f"panda_joint{i}" for i in range(1, 8)]
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]   # panda_link5 and panda_link6 reach into the table
STARTUP_TIMEOUT_S = 60.0
MARKERS_TOPIC = "/contact_markers/markers"
JOINT_STATES_TOPIC = "/contact_markers/joint_states"
RECEIVE_TIMEOUT_S = 30.0
EXPLAIN_RETRY_S = 2.0
PLANNING_FRAME = "panda_link0"


class Listener:
    """A node in its own context and executor thread, collecting MarkerArray and JointState."""

    def __init__(self) -> None:
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f"markers_listener_{os.getpid()}", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._cond = threading.Condition()
        self.arrays: list[MarkerArray] = []
        self.states: list[JointState] = []
        self.node.create_subscription(MarkerArray, MARKERS_TOPIC, self._on(self.arrays), MARKERS_QOS)
        self.node.create_subscription(JointState, JOINT_STATES_TOPIC, self._on(self.states), 10)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _on(self, store):
        def callback(msg) -> None:
            with self._cond:
                store.append(msg)
                self._cond.notify_all()
        return callback

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # the context was shut down while spinning
            pass

    def wait_for(self, predicate, timeout_s: float) -> bool:
        with self._cond:
            return self._cond.wait_for(predicate, timeout_s)

    def close(self) -> None:
        """Stop spinning and wait for the spin thread, then destroy the node, then the context.

        Destroying the node while the thread still waits on its entities once left both
        threads stuck (seen in a fresh-clone CI run: the teardown never returned).
        """
        self.executor.shutdown()
        self._thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """The validator (Panda, default world), the contact_markers node, a client and a listener."""
    logs = tmp_path_factory.mktemp("markers_graph")
    urdf, srdf = panda_paths()
    validator = NodeProcess("collision_validator", {"urdf_path": urdf, "srdf_path": srdf,
                                                    "scene_path": PANDA_WORLD}, log_path=str(logs / "validator.log"))
    markers = NodeProcess("contact_markers", {}, log_path=str(logs / "markers.log"))
    client = listener = None
    try:
        client = ValidatorClient(node_name=f"markers_test_client_{os.getpid()}")
        listener = Listener()
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S)
        yield client, listener, markers
    finally:
        if listener is not None:
            listener.close()
        if client is not None:
            client.close()
        for process in (markers, validator):
            print(process.stop())


def xyz(p) -> np.ndarray:
    return np.array([p.x, p.y, p.z])


def has_surfaces(array: MarkerArray) -> bool:
    return any(m.type == Marker.TRIANGLE_LIST for m in array.markers)


@pytest.fixture(scope="module")
def drawn(graph):
    """Explain the Panda reaching into the table, with surfaces; the MarkerArray drawn from it."""
    client, listener, _ = graph
    response = client.explain(ARM, INTO_TABLE, compute_surfaces=True)
    assert not response.valid and response.surfaces, response.message
    deadline = time.monotonic() + RECEIVE_TIMEOUT_S
    while not listener.wait_for(lambda: any(has_surfaces(a) for a in listener.arrays), EXPLAIN_RETRY_S):
        # the report is kept (transient local), so waiting is enough; explaining again only
        # covers a report lost before the marker node had matched the validator
        assert time.monotonic() < deadline, "no MarkerArray with surfaces received"
        response = client.explain(ARM, INTO_TABLE, compute_surfaces=True)
    array = next(a for a in reversed(listener.arrays) if has_surfaces(a))
    return response, array


def test_array_starts_with_deleteall_in_the_planning_frame(drawn):
    _, array = drawn
    assert array.markers[0].action == Marker.DELETEALL
    assert all(m.header.frame_id == PLANNING_FRAME for m in array.markers)
    keys = [(m.ns, m.id) for m in array.markers[1:]]
    assert len(keys) == len(set(keys))


def test_triangles_lie_on_the_explained_surfaces(drawn):
    response, array = drawn
    meshes = [m for m in array.markers if m.type == Marker.TRIANGLE_LIST]
    assert len(meshes) == len(response.surfaces)
    for surface, mesh in zip(response.surfaces, meshes):
        assert mesh.ns == pair_namespace(*surface.body_names)
        vertices = np.array([xyz(v) for v in surface.vertices])
        expected = vertices[np.asarray(surface.triangles, dtype=int)]
        points = np.array([xyz(p) for p in mesh.points])
        np.testing.assert_array_equal(points, expected)  # the same vertices, not approximations
        assert len(mesh.colors) == len(mesh.points)
        outlines = [m for m in array.markers if m.type == Marker.LINE_STRIP and m.ns == mesh.ns]
        assert outlines
        vertex_set = {tuple(v) for v in vertices}
        for outline in outlines:
            assert all(tuple(xyz(p)) in vertex_set for p in outline.points)
            np.testing.assert_array_equal(xyz(outline.points[0]), xyz(outline.points[-1]))


def test_spheres_sit_at_the_contacts(drawn):
    response, array = drawn
    spheres = [m for m in array.markers if m.type == Marker.SPHERE]
    assert len(spheres) == len(response.contacts)
    for contact in response.contacts:
        ns = pair_namespace(*contact.link_names)
        assert any(s.ns == ns and np.array_equal(xyz(s.pose.position), xyz(contact.position)) for s in spheres)
    for s in spheres:
        assert s.scale.x == pytest.approx(2 * MarkerOptions().sphere_radius_m)
        assert (s.color.r, s.color.g, s.color.b) == (1.0, 0.0, 0.0)


def test_report_state_is_republished_for_robot_state_publisher(graph, drawn):
    _, listener, _ = graph
    response, _ = drawn
    assert listener.wait_for(lambda: bool(listener.states), RECEIVE_TIMEOUT_S)
    state = listener.states[-1]
    assert list(state.name) == list(response.state.name)
    np.testing.assert_allclose(state.position[:7], INTO_TABLE)


def test_marker_node_stops_cleanly_on_sigint(graph, drawn):
    _, _, markers = graph
    output = markers.stop()
    assert markers.process.returncode == 0, output


def test_contacts_qos_matches_the_validator():
    assert CONTACTS_QOS == REPORT_QOS


def test_every_marker_option_is_a_parameter():
    from dataclasses import fields
    assert set(_NUMBER_RANGES) | set(_COLOURS) | set(_SWITCHES) == {f.name for f in fields(MarkerOptions)}


@pytest.mark.parametrize("params, word", [
    ({"sphere_radius_m": -1}, "sphere_radius_m"),
    ({"lifetime_s": "'soon'"}, "lifetime_s"),
    ({"contact_rgba": "[1.0, 0.0]"}, "contact_rgba"),
    ({"arrow_min_length_m": 0.4, "arrow_max_length_m": 0.2}, "arrow_max_length_m"),
    ({"contacts_topic": "''"}, "contacts_topic"),
])
def test_bad_parameter_ends_start_up_with_one_line(params, word):
    result = subprocess.run([executable("contact_markers")] + ros_args(params), capture_output=True, text=True,
                            timeout=STARTUP_TIMEOUT_S)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("contact_markers: cannot start:") and word in lines[0], \
        result.stderr


def test_integer_values_are_accepted_for_numbers(tmp_path):
    # ``:=1`` arrives as an integer; the node must still start (it publishes only once started)
    name = f"contact_markers_ints_{os.getpid()}"
    process = NodeProcess("contact_markers", {"sphere_radius_m": 1, "lifetime_s": 0, "pressure_max_pa": 5000,
                                              "contact_rgba": "[1, 0, 0, 1]"}, {"__node": name},
                          log_path=str(tmp_path / "markers.log"))
    listener = Listener()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while listener.node.count_publishers(f"/{name}/markers") == 0:
            assert process.process.poll() is None, "the node ended at start-up"
            assert time.monotonic() < deadline, "the node did not start"
            time.sleep(0.1)
    finally:
        listener.close()
        output = process.stop()
    assert process.process.returncode == 0, output
