"""Clearance answers <-> messages (conversions.py), without a ROS graph.

A Clearance is built by hand (every field known), filled into a ComputeClearance
response, serialized and read back as DDS would, and turned back into a Clearance: every
array must come back equal, in its per-row shape.
"""
from __future__ import annotations

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Vector3
from rclpy.serialization import deserialize_message, serialize_message

from my_collision_pkg.core.checks.clearance import Clearance
from my_collision_pkg.core.checks.results import BodyType, Contact, ContactType, Status
from my_collision_pkg.msg import Clearance as ClearanceMsg
from my_collision_pkg.ros import conversions
from my_collision_pkg.srv import ComputeClearance

STAMP = Time(sec=5, nanosec=6)


def hand_made(rows: int = 3, joints: int = 2, seed: int = 4) -> Clearance:
    rng = np.random.default_rng(seed)
    names = np.array([[f"link{r}", f"object{r}"] for r in range(rows)], dtype=object).reshape(rows, 2)
    types = np.tile(np.array([BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT], dtype=np.uint8), (rows, 1))
    normals = rng.normal(size=(rows, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return Clearance(Status.VALID, f"{rows} pair rows", tuple(f"j{k}" for k in range(joints)),
                     np.arange(rows, dtype=np.int64) // 2, names, types,
                     rng.integers(0, 5, size=(rows, 2)).astype(np.int32),
                     np.array([[r, -1] for r in range(rows)], dtype=np.int32).reshape(rows, 2),
                     rng.uniform(-0.01, 0.3, size=rows), rng.normal(size=(rows, 2, 3)), rng.normal(size=(rows, 2, 3)),
                     normals, rng.normal(size=(rows, joints)), np.array([r % 2 == 0 for r in range(rows)], dtype=bool))


def _round_trip(response):
    return deserialize_message(serialize_message(response), ComputeClearance.Response)


@pytest.mark.parametrize("rows, joints", [(3, 2), (1, 7), (0, 7), (5, 0)])
def test_a_clearance_crosses_the_wire_unchanged(rows, joints):
    sent = hand_made(rows, joints)
    response = conversions.fill_compute_clearance_response(ComputeClearance.Response(), sent)
    assert len(response.body_names) == len(response.points) == len(response.points_local) == 2 * rows
    assert len(response.normals) == len(response.distance) == len(response.smooth) == rows
    assert len(response.jacobian) == rows * joints
    # row r's pair is entries 2r, 2r+1
    if rows:
        assert response.body_names[2 * rows - 1] == sent.body_names[rows - 1, 1]
        assert response.points[1].x == sent.points[0, 1, 0]
    got = conversions.clearance_from_response(_round_trip(response))
    assert got.status == sent.status and got.message == sent.message
    assert got.jacobian_joint_names == sent.jacobian_joint_names
    for name in ("configuration_index", "body_names", "body_types", "shape_ids", "subshape_ids", "distance",
                 "points", "points_local", "normals", "smooth"):
        np.testing.assert_array_equal(getattr(got, name), getattr(sent, name), err_msg=name)
        assert getattr(got, name).shape == getattr(sent, name).shape, name
    np.testing.assert_array_equal(got.jacobian, sent.jacobian.reshape(rows, joints) if joints else
                                  np.zeros((rows, 0)))


def test_a_refusal_carries_its_status_and_no_rows():
    refused = Clearance(Status.INVALID_REQUEST, "influence_distance nan m must be finite and >= 0")
    response = conversions.fill_compute_clearance_response(ComputeClearance.Response(), refused)
    assert response.status == ComputeClearance.Response.INVALID_REQUEST
    assert "influence_distance" in response.message and len(response.distance) == 0


def test_the_fast_point_builder_makes_the_constructors_messages():
    values = np.random.default_rng(1).normal(size=(20, 3))
    for cls in (Point, Vector3):
        fast = conversions._points_msgs(values, cls)
        assert fast == [cls(x=x, y=y, z=z) for x, y, z in values.tolist()]
        assert all(type(m) is cls for m in fast)
        # they serialize like any other message of the type
        msg = ComputeClearance.Response(normals=[Vector3(x=1.0)])
        if cls is Point:
            msg.points = fast
            assert list(_round_trip(msg).points) == fast


def test_the_clearance_topic_message_is_the_nearest_row():
    clearance = hand_made(4, 3)
    msg = conversions.clearance_msg(clearance, 0.3, "base", STAMP)
    r = int(np.argmin(clearance.distance))
    assert msg.found and msg.distance == clearance.distance[r] and msg.influence_distance == 0.3
    assert list(msg.body_names) == list(clearance.body_names[r]) and msg.header.frame_id == "base"
    assert list(msg.jacobian) == clearance.jacobian[r].tolist() and msg.smooth == bool(clearance.smooth[r])
    assert [msg.normal.x, msg.normal.y, msg.normal.z] == clearance.normals[r].tolist()
    empty = conversions.clearance_msg(Clearance(Status.VALID, "no pair", ("j0",)), 0.3, "base", STAMP)
    assert not empty.found and empty.distance == float("inf") and not empty.body_names
    assert isinstance(empty, ClearanceMsg)


@pytest.mark.parametrize("rule, fallback", [("mtd", False), ("deepest_point", False), ("deepest_point", True)])
def test_a_contact_message_says_which_depth_rule_gave_its_numbers(rule, fallback):
    p = np.zeros(3)
    contact = Contact(type=ContactType.SELF, link_names=("a", "b"), body_types=(BodyType.ROBOT_LINK,) * 2,
                      shape_ids=(0, 0), subshape_ids=(3, -1), position=p, nearest_points=(p, p),
                      nearest_points_local=(p, p), normal=np.array([0.0, 0.0, 1.0]), distance=-0.01,
                      penetration_depth=0.01, depth_is_fallback=fallback, depth_rule=rule)
    msg = conversions.contact_to_msg(contact)
    assert msg.depth_rule == rule and msg.depth_is_fallback is fallback


@pytest.mark.parametrize("influence, compute_jacobians", [(0.0, True), (0.0, False), (float("nan"), True)])
def test_an_answer_without_rows_has_the_cores_jacobian_shape(influence, compute_jacobians):
    """issue 40: an empty Jacobian came back (0, J) where the core gives (0, 0) (a refusal), and
    the core's own (0, J) / (0, 0) for a valid answer with / without Jacobians must survive the wire."""
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene
    urdf = ('<robot name="r"><link name="base"/><link name="arm"><collision><geometry><sphere radius="0.1"/>'
            '</geometry></collision></link><joint name="j" type="prismatic"><parent link="base"/><child link="arm"/>'
            '<axis xyz="1 0 0"/><limit lower="0" upper="1" effort="1" velocity="1"/></joint></robot>')
    core = CollisionChecker(load_scene(urdf_xml=urdf)).clearance(["j"], [0.5], influence,
                                                                 compute_jacobians=compute_jacobians)
    assert len(core) == 0
    response = _round_trip(conversions.fill_compute_clearance_response(ComputeClearance.Response(), core))
    got = conversions.clearance_from_response(response, compute_jacobians)
    assert got.jacobian.shape == core.jacobian.shape
