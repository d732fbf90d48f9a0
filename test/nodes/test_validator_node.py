"""collision_validator over DDS: every service, bad input, concurrency, the invariant."""
from __future__ import annotations

import math
import os
import subprocess
import threading

import numpy as np
import pytest
import yaml
from node_processes import ARM, FREE, INTO_TABLE, NodeProcess, executable, listener, panda_params, ros_args
from geometry_msgs.msg import Pose
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray
from shape_msgs.msg import SolidPrimitive

from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.msg import CollisionObject, Contact, ContactReport
from my_collision_pkg.srv import CheckValidity
from my_collision_pkg.ros.validator_node import REPORT_QOS

VALID, IN_COLLISION, OUT_OF_BOUNDS, INVALID = (CheckValidity.Response.VALID, CheckValidity.Response.IN_COLLISION,
                                               CheckValidity.Response.OUT_OF_BOUNDS,
                                               CheckValidity.Response.INVALID_REQUEST)
RNG_SEED = 11


def box_object(oid, xyz, size, frame="", operation=CollisionObject.ADD, touch=()):
    msg = CollisionObject()
    msg.header.frame_id = frame
    msg.id = oid
    msg.operation = operation
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in xyz)
    msg.pose.orientation.w = 1.0
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[float(v) for v in size])]
    msg.primitive_poses = [Pose()]
    msg.touch_links = list(touch)
    return msg


def find_self_collision(client):
    rng = np.random.default_rng(RNG_SEED)
    lo = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
    hi = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
    for q in rng.uniform(lo, hi, size=(400, 7)):
        r = client.explain(ARM, q)
        if not r.valid and r.contacts and all(c.type == Contact.SELF for c in r.contacts):
            return q, r
    raise AssertionError("no self-colliding configuration among 400 random ones")


def test_free_self_and_environment_verdicts(validator):
    free = validator.check(ARM, FREE)
    assert free.valid and free.status == VALID
    env = validator.check(ARM, INTO_TABLE)
    assert not env.valid and env.status == IN_COLLISION and "table" in env.message
    q, explained = find_self_collision(validator)
    self_check = validator.check(ARM, q)
    assert not self_check.valid and self_check.status == IN_COLLISION
    assert explained.message.startswith("self-collision")


def test_explain_returns_contacts_with_the_documented_geometry(validator):
    r = validator.explain(ARM, INTO_TABLE)
    assert not r.valid and r.status == IN_COLLISION
    assert "table" in r.colliding_links
    assert r.contacts
    for c in r.contacts:
        p0 = np.array([c.nearest_points[0].x, c.nearest_points[0].y, c.nearest_points[0].z])
        p1 = np.array([c.nearest_points[1].x, c.nearest_points[1].y, c.nearest_points[1].z])
        n = np.array([c.normal.x, c.normal.y, c.normal.z])
        np.testing.assert_allclose(p1 - p0, c.distance * n, atol=1e-9)
        assert math.isclose(np.linalg.norm(n), 1.0, abs_tol=1e-9)
        if c.type == Contact.ENVIRONMENT:
            assert c.body_types[1] == Contact.WORLD_OBJECT and c.link_names[1] in ("table", "post")
    # the state lists every joint, the fingers included, as checked
    assert list(r.state.name) == ARM + ["panda_finger_joint1"]
    np.testing.assert_allclose(r.state.position[:7], INTO_TABLE)


def test_near_misses_with_contact_distance(validator):
    r = validator.explain(ARM, FREE, contact_distance=0.5)
    assert r.valid and r.status == VALID
    assert r.contacts and all(c.distance > 0 for c in r.contacts)


def test_explain_publishes_a_contact_report(validator):
    with listener("report_listener", ContactReport, "/collision_validator/contacts", REPORT_QOS) as (_, executor,
                                                                                                    received):
        for _ in range(50):                    # discovery, then the report of our own call
            validator.explain(ARM, INTO_TABLE)
            executor.spin_once(timeout_sec=0.1)
            if any(not m.valid for m in received):
                break
        report = next(m for m in received if not m.valid)
        assert report.header.frame_id == "panda_link0"
        assert report.contacts and list(report.state.name)[:7] == ARM


def test_batch_matches_single_checks(validator):
    rng = np.random.default_rng(RNG_SEED + 1)
    Q = rng.uniform(-1.5, 1.5, size=(300, 7))
    Q[:, 3] = rng.uniform(-3.0, -0.1, size=300)
    Q[:, 5] = rng.uniform(0.0, 3.7, size=300)
    batch = validator.check_batch(ARM, Q)
    singles = [validator.check(ARM, q).valid for q in Q]
    assert list(batch.valid) == singles
    assert 0 < sum(singles) < len(singles)


def test_explain_valid_equals_check_valid_on_random_configurations(validator):
    rng = np.random.default_rng(RNG_SEED + 2)
    lo = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
    hi = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
    Q = rng.uniform(lo, hi, size=(300, 7))
    mismatches = []
    refused = 0
    for q in Q:
        check, explain = validator.check(ARM, q), validator.explain(ARM, q)
        refused += not check.valid
        if check.valid != explain.valid or check.status != explain.status:
            mismatches.append((q, check.message, explain.message))
    assert not mismatches
    assert refused > 0


def test_out_of_bounds(validator):
    q = list(FREE)
    q[3] = 0.5                                 # panda_joint4 upper limit is -0.0698
    r = validator.check(ARM, q)
    assert not r.valid and r.status == OUT_OF_BOUNDS and "panda_joint4" in r.message


@pytest.mark.parametrize("names, positions, fragment", [
    (["panda_joint1", "ghost"], [0.0, 0.0], "unknown joint 'ghost'"),
    (["panda_joint1", "panda_joint1"], [0.0, 0.0], "named twice"),
    (ARM, FREE[:6], "7 joint names but 6 positions"),
    (ARM, [math.nan] + FREE[1:], "non-finite"),
    (ARM, [math.inf] + FREE[1:], "non-finite"),
    ([], [], "names no joints"),
    (["panda_finger_joint2"], [0.01], "mimics 'panda_finger_joint1'"),
])
def test_bad_requests_are_refused_and_the_node_keeps_serving(validator, names, positions, fragment):
    for call in (validator.check, validator.explain):
        r = call(names, positions)
        assert not r.valid and r.status == INVALID and fragment in r.message
    assert validator.check(ARM, FREE).valid


def test_unknown_group_and_large_batch_are_refused(validator):
    r = validator.check(ARM, FREE, group_name="tentacle")
    assert r.status == INVALID and "unknown group 'tentacle'" in r.message
    assert validator.check(ARM, FREE, group_name="arm").valid
    big = validator.check_batch(ARM, [FREE] * 5001)          # the fixture sets max_batch = 5000
    assert big.status == INVALID and "max_batch" in big.message and list(big.valid) == []
    ragged = validator.check_batch(ARM, [FREE[:5]])
    assert ragged.status == INVALID


def test_apply_objects_all_or_nothing(validator):
    ok = validator.apply([box_object("crate", (0.4, -0.4, 0.5), (0.1, 0.1, 0.1))])
    assert ok.success, ok.message
    reach = [-0.785, 0.6, 0.0, -1.6, 0.0, 2.2, 0.785]
    before = validator.check(ARM, reach)
    bad = validator.apply([box_object("crate2", (0.0, 0.0, 1.0), (0.1, 0.1, 0.1)),
                           box_object("broken", (0.0, 0.0, 1.0), (0.1, -0.1, 0.1))])
    assert not bad.success and "broken" in bad.message and "scene unchanged" in bad.message
    unknown_frame = validator.apply([box_object("floating", (0, 0, 1), (0.1, 0.1, 0.1), frame="mars")])
    assert not unknown_frame.success and "mars" in unknown_frame.message
    remove_missing = validator.apply([box_object("nothing", (0, 0, 0), (1, 1, 1), operation=CollisionObject.REMOVE)])
    assert not remove_missing.success and "'nothing'" in remove_missing.message
    assert validator.check(ARM, reach).valid == before.valid
    gone = validator.apply([box_object("crate", (0, 0, 0), (1, 1, 1), operation=CollisionObject.REMOVE)])
    assert gone.success


def test_attached_object_moves_with_the_hand(validator):
    # a 20 cm rod held by the hand (10 to 30 cm below it), allowed to touch the hand and fingers
    rod = box_object("rod", (0.0, 0.0, 0.2), (0.02, 0.02, 0.2), frame="panda_hand",
                     touch=["panda_leftfinger", "panda_rightfinger", "panda_hand"])
    assert validator.apply([rod]).success
    try:
        r = validator.explain(ARM, FREE)
        assert r.valid, r.message
        down = [0.0, 0.3, 0.0, -2.0, 0.0, 2.3, 0.785]          # hand 14 cm over the table: only the rod reaches it
        r = validator.explain(ARM, down)
        assert r.colliding_links == ["rod", "table"]
        assert r.contacts[0].body_types[0] == Contact.ROBOT_ATTACHED and r.contacts[0].type == Contact.ENVIRONMENT
    finally:
        assert validator.apply([box_object("rod", (0, 0, 0), (1, 1, 1), operation=CollisionObject.REMOVE)]).success


def test_concurrent_clients_while_objects_change(validator):
    errors = []
    stop = threading.Event()

    def checker(k):
        try:
            with ValidatorClient(node_name=f"concurrent_{os.getpid()}_{k}") as client:
                client.wait_for_services(30)
                while not stop.is_set():
                    r = client.check(ARM, FREE)
                    if r.status not in (VALID, IN_COLLISION):
                        errors.append(r.message)
                    e = client.explain(ARM, INTO_TABLE)
                    if e.valid:
                        errors.append("the table vanished")
        except Exception as exc:  # surfaced through the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=checker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        for k in range(30):
            box = box_object("flicker", (0.0, -0.5, 0.3 + 0.01 * k), (0.05, 0.05, 0.05))
            assert validator.apply([box]).success
            assert validator.apply([box_object("flicker", (0, 0, 0), (1, 1, 1),
                                               operation=CollisionObject.REMOVE)]).success
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors


def test_missing_robot_model_ends_start_up_with_one_line():
    result = subprocess.run([executable("collision_validator")] + ros_args({"urdf_path": "/no/such/robot.urdf"}),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "/no/such/robot.urdf" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("params, fragment", [
    ({"default_padding": "abc"}, "default_padding"),
    ({"default_padding": "5.0"}, "default_padding"),
    ({"scene_path": "/no/world.yaml"}, "/no/world.yaml"),
    ({"link_padding_names": "[panda_hand,panda_link7]", "link_padding_values": "[0.01]"}, "link_padding"),
])
def test_bad_parameters_end_start_up_with_one_line(params, fragment):
    result = subprocess.run([executable("collision_validator")] + ros_args(panda_params(**params)),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_integer_padding_is_accepted_and_joint_states_are_monitored():
    # a second validator under its own name, so the module's validator does not answer
    node = NodeProcess("collision_validator", panda_params(default_padding="0", monitor_joint_states="true",
                                                           monitor_rate_hz="20"), {"__node": "monitored"})
    try:
        with listener("joint_state_source", ContactReport, "/monitored/contacts", REPORT_QOS) as (ros, executor,
                                                                                                 reports):
            publisher = ros.create_publisher(JointState, "/joint_states", 10)
            with ValidatorClient("/monitored", node_name="monitor_client", context=ros.context) as client:
                client.wait_for_services(60)
                state = JointState(name=ARM, position=INTO_TABLE)
                for _ in range(100):
                    publisher.publish(state)
                    executor.spin_once(timeout_sec=0.1)
                    if any(not r.valid for r in reports):
                        break
                report = next(r for r in reports if not r.valid)
                assert list(report.state.position[:7]) == pytest.approx(INTO_TABLE)
                # the monitored state is the scene's current state: a request naming only joint 1 keeps the rest
                partial = client.check(["panda_joint1"], [0.0])
                assert not partial.valid and "table" in partial.message
                # a scene change alone (no new joint state) has the monitor report the state again
                reports.clear()
                assert client.apply([box_object("table", (0, 0, 0), (1, 1, 1),
                                                operation=CollisionObject.REMOVE)]).success
                for _ in range(100):
                    executor.spin_once(timeout_sec=0.1)
                    if any(r.valid for r in reports):
                        break
                report = next(r for r in reports if r.valid)
                assert list(report.state.position[:7]) == pytest.approx(INTO_TABLE)
    finally:
        output = node.stop()
    assert "Traceback" not in output


def test_scene_objects_are_published_for_rviz(validator):
    with listener("scene_listener", MarkerArray, "/collision_validator/scene_objects", REPORT_QOS) as (_, executor,
                                                                                                     arrays):
        def latest_namespaces(wanted, rounds=100):
            for _ in range(rounds):
                executor.spin_once(timeout_sec=0.1)
                if arrays and wanted({m.ns for m in arrays[-1].markers}):
                    break
            return {m.ns for m in arrays[-1].markers} if arrays else set()

        # sent at start-up and kept for late joiners
        assert {"scene_objects/table", "scene_objects/post"} <= latest_namespaces(
            lambda ns: "scene_objects/table" in ns)
        assert validator.apply([box_object("crate_for_rviz", (0.3, -0.5, 0.3), (0.1, 0.1, 0.1))]).success
        assert "scene_objects/crate_for_rviz" in latest_namespaces(lambda ns: "scene_objects/crate_for_rviz" in ns)
        assert validator.apply([box_object("crate_for_rviz", (0, 0, 0), (1, 1, 1),
                                           operation=CollisionObject.REMOVE)]).success
        assert "scene_objects/crate_for_rviz" not in latest_namespaces(
            lambda ns: "scene_objects/crate_for_rviz" not in ns)


def test_robot_description_parameters_take_urdf_and_srdf_text(tmp_path):
    urdf = ("<robot name='pair'><link name='a'><collision><geometry><sphere radius='0.1'/></geometry>"
            "</collision></link><link name='b'><collision><geometry><sphere radius='0.1'/></geometry></collision>"
            "</link><joint name='slide' type='prismatic'><parent link='a'/><child link='b'/><axis xyz='1 0 0'/>"
            "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint></robot>")
    srdf = "<robot name='pair'><group name='mover'><joint name='slide'/></group></robot>"
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"described": {"ros__parameters": {
        "robot_description": urdf, "robot_description_semantic": srdf}}}))
    node = NodeProcess("collision_validator", {}, {"__node": "described"}, extra_args=["--params-file", str(params)])
    try:
        with ValidatorClient("/described", node_name="described_client") as client:
            client.wait_for_services(60)
            # adjacent links may touch by default
            assert client.check(["slide"], [0.0]).valid
            assert client.check(["slide"], [0.5], group_name="mover").valid
            assert client.check(["slide"], [0.5], group_name="arm").status == INVALID
    finally:
        output = node.stop()
    assert "Traceback" not in output
