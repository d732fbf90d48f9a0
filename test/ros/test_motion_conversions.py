"""Motion results <-> messages (conversions.py), interval sweeps and interval markers, without a ROS graph.

Results are built by hand (MotionResult, TrajectoryResult, ContactList) so every
field that reaches a message is known.
"""
from __future__ import annotations

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker

from my_collision_pkg.ros import conversions
from my_collision_pkg.core.checks.contact_list import ContactList
from my_collision_pkg.core.checks.results import BodyType, CCType, Contact, ContactType, Status
from my_collision_pkg.core.errors import RequestError
from my_collision_pkg.core.checks.interval_sweeps import interval_sweeps, trajectory_positions_at
from my_collision_pkg.ros.markers import contact_intervals_marker_array, pair_namespace
from my_collision_pkg.core.checks.results import MotionResult, TrajectoryResult
from my_collision_pkg.msg import Contact as ContactMsg
from my_collision_pkg.srv import CheckMotion, CheckTrajectory
from my_collision_pkg.core.model.transforms import make_transform, rpy_to_matrix

STAMP = Time(sec=3, nanosec=4)


def make_contact(links=("ball", "wall"), types=(BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT), distance=-0.002,
                 position=(0.5, 0.0, 0.0), local0=(0.1, 0.0, 0.0), **motion) -> Contact:
    p = np.asarray(position, dtype=float)
    n = np.array([1.0, 0.0, 0.0])
    return Contact(type=ContactType.ENVIRONMENT, link_names=links, body_types=types, shape_ids=(0, 0),
                   subshape_ids=(-1, -1), position=p,
                   nearest_points=(p - 0.5 * distance * n, p + 0.5 * distance * n),
                   nearest_points_local=(np.asarray(local0, dtype=float), np.zeros(3)), normal=n,
                   distance=distance, penetration_depth=max(0.0, -distance), **motion)


def pose_matrix(rpy, xyz):
    return make_transform(rpy_to_matrix(*rpy), np.asarray(xyz, dtype=float))


def test_transform_to_pose_round_trips_through_pose_to_transform():
    rng = np.random.default_rng(7)
    for _ in range(50):
        T = pose_matrix(rng.uniform(-np.pi, np.pi, 3), rng.uniform(-2, 2, 3))
        back = conversions.pose_to_transform(conversions.transform_to_pose(T), "pose")
        np.testing.assert_allclose(back, T, atol=1e-12)


def test_contact_motion_fields_reach_the_message():
    T0, T1 = pose_matrix((0.1, 0.2, 0.3), (1, 2, 3)), np.eye(4)
    C0, C1 = pose_matrix((0, 0, 1.0), (0.5, 0, 0)), pose_matrix((0, 0, 0), (0, 0, 0.25))
    contact = make_contact(transforms=(T0, T1), cc_time=(0.375, -1.0), cc_type=(CCType.BETWEEN, CCType.NONE),
                           cc_transforms=(C0, C1))
    msg = conversions.contact_to_msg(contact)
    assert list(msg.cc_time) == [0.375, -1.0]
    assert list(msg.cc_type) == [ContactMsg.CC_BETWEEN, ContactMsg.CC_NONE]
    for pose, T in zip(list(msg.transforms) + list(msg.cc_transforms), (T0, T1, C0, C1)):
        np.testing.assert_allclose(conversions.pose_to_transform(pose, "p"), T, atol=1e-12)
    # a single-configuration contact: defaults (-1, NONE) and identity poses
    plain = conversions.contact_to_msg(make_contact())
    assert list(plain.cc_time) == [-1.0, -1.0] and list(plain.cc_type) == [0, 0]


def test_motion_result_fills_the_response_and_the_report():
    contact = make_contact(cc_time=(0.4, -1.0), cc_type=(CCType.BETWEEN, CCType.NONE))
    result = MotionResult(False, Status.IN_COLLISION, "ball and wall at t=0.4", 0.4, (contact,),
                          ("slide_x", "slide_y"), np.array([0.4, 0.0]))
    response = conversions.fill_check_motion_response(CheckMotion.Response(), result, STAMP)
    assert (response.valid, response.status, response.cc_time) == (False, CheckMotion.Response.IN_COLLISION, 0.4)
    assert response.message == "ball and wall at t=0.4"
    assert list(response.state.name) == ["slide_x", "slide_y"] and list(response.state.position) == [0.4, 0.0]
    assert response.contacts[0].cc_time[0] == 0.4 and response.contacts[0].distance == -0.002
    report = conversions.contact_report(result, "base", STAMP)
    assert report.header.frame_id == "base" and not report.valid and len(report.contacts) == 1
    assert list(report.state.position) == [0.4, 0.0]


def test_trajectory_result_fills_the_response_with_seconds_from_integer_ns():
    cl = ContactList(("ball", "wall"), (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT))
    assert cl.add_contact_at(1_500_000_000, 2_250_000_001, make_contact())
    assert cl.add_contact_at(3_000_000_000, 4_000_000_000, make_contact(distance=-0.004))
    first = MotionResult(False, Status.IN_COLLISION, "m", 0.5, (make_contact(),), ("slide_x",), np.array([0.5]))
    result = TrajectoryResult(False, Status.IN_COLLISION, "ball/wall at 1.5 s", 1.5, 1, (cl,), first)
    response = conversions.fill_check_trajectory_response(CheckTrajectory.Response(), result)
    assert (response.valid, response.first_invalid_time, response.first_invalid_segment) == (False, 1.5, 1)
    (msg,) = response.contact_lists
    assert list(msg.link_names) == ["ball", "wall"]
    assert list(msg.body_types) == [ContactMsg.ROBOT_LINK, ContactMsg.WORLD_OBJECT]
    assert [(i.activation_time, i.deactivation_time) for i in msg.intervals] == [(1.5, 2.250000001), (3.0, 4.0)]
    assert msg.intervals[1].contact.distance == -0.004
    report = conversions.trajectory_contact_report(result, "base", STAMP)
    assert list(report.state.position) == [0.5] and len(report.contacts) == 1
    valid = conversions.trajectory_contact_report(TrajectoryResult(True, Status.VALID, "ok"), "base", STAMP)
    assert valid.valid and not valid.contacts


def trajectory(names, rows, times_s=None) -> JointTrajectory:
    msg = JointTrajectory(joint_names=list(names))
    for w, row in enumerate(rows):
        point = JointTrajectoryPoint(positions=[float(v) for v in row])
        if times_s is not None:
            t = times_s[w]
            point.time_from_start = Duration(sec=int(np.floor(t)), nanosec=int(round((t - np.floor(t)) * 1e9)))
        msg.points.append(point)
    return msg


def test_joint_trajectory_arrays_and_zero_times_mean_waypoint_index():
    names, points, times_s = conversions.joint_trajectory_to_arrays(trajectory(["a", "b"], [[0, 1], [2, 3], [4, 5]]))
    assert names == ["a", "b"] and points.shape == (3, 2)
    np.testing.assert_array_equal(times_s, [0.0, 1.0, 2.0])
    _, _, times_s = conversions.joint_trajectory_to_arrays(trajectory(["a"], [[0], [1]], [0.0, 0.25]))
    np.testing.assert_allclose(times_s, [0.0, 0.25])


@pytest.mark.parametrize("msg, fault", [
    (trajectory(["a"], []), "no points"),
    (trajectory([], [[]]), "no joint_names"),
    (trajectory(["a", "b"], [[0, 1], [2]]), "point 1 has 1 positions for 2 joint names"),
    (trajectory(["a", "b"], [[0, 1], [2, float("nan")]]), "joint 'b' has a non-finite"),
    (trajectory(["a"], [[0], [1], [2]], [0.0, 1.0, 1.0]), "point 2 time_from_start 1 s is not after"),
    (trajectory(["a"], [[0], [1]], [-1.0, 1.0]), "point 0 has a negative time_from_start"),
])
def test_bad_trajectories_are_refused_naming_the_fault(msg, fault):
    with pytest.raises(RequestError, match=fault):
        conversions.joint_trajectory_to_arrays(msg)


def test_trajectory_interpolation_is_joint_linear_and_clamped():
    points = np.array([[0.0, 0.0], [1.0, -2.0], [1.0, 0.0]])
    q = trajectory_positions_at(points, np.array([0.0, 2.0, 3.0]), np.array([-1.0, 1.0, 2.5, 9.0]))
    np.testing.assert_allclose(q, [[0, 0], [0.5, -1.0], [1.0, -1.0], [1.0, 0.0]])


def test_interval_sweep_follows_the_witness_point_and_markers_draw_it(slider_checker):
    # The ball slides along x from 0 to 1 m over 2 s; the interval [0.5 s, 1.5 s) sweeps its
    # witness point (0.1, 0, 0) in the ball frame from x = 0.35 to x = 0.85.
    cl = ContactList(("ball", "wall"), (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT))
    assert cl.add_contact_at(500_000_000, 1_500_000_000, make_contact(local0=(0.1, 0.0, 0.0)))
    attached = ContactList(("tool", "wall"), (BodyType.ROBOT_ATTACHED, BodyType.WORLD_OBJECT))
    assert attached.add_contact_at(0, 10, make_contact(links=("tool", "wall"),
                                                       types=(BodyType.ROBOT_ATTACHED, BodyType.WORLD_OBJECT)))
    sweeps = interval_sweeps(slider_checker, ["slide_x"], np.array([[0.0], [1.0]]), np.array([0.0, 2.0]),
                             [cl, attached], samples=5)
    np.testing.assert_allclose(sweeps[0][0][:, 0], np.linspace(0.35, 0.85, 5), atol=1e-12)
    np.testing.assert_allclose(sweeps[0][0][:, 1:], 0.0, atol=1e-12)
    assert sweeps[1] == [None]
    msgs = [conversions.contact_list_to_msg(c) for c in (cl, attached)]
    array = contact_intervals_marker_array(msgs, "base", STAMP, sweeps)
    assert array.markers[0].action == Marker.DELETEALL
    lines = [m for m in array.markers if m.type == Marker.LINE_STRIP]
    assert len(lines) == 1 and lines[0].ns == pair_namespace("ball", "wall")
    assert [p.x for p in lines[0].points] == pytest.approx(list(np.linspace(0.35, 0.85, 5)))
    spheres = [m for m in array.markers if m.type == Marker.SPHERE]
    assert {m.ns for m in spheres} == {"ball=wall", "tool=wall"}
    labels = [m.text for m in array.markers if m.type == Marker.TEXT_VIEW_FACING]
    assert "ball=wall  [0.500, 1.500) s  2.0 mm" in labels
    keys = [(m.ns, m.id) for m in array.markers[1:]]
    assert len(keys) == len(set(keys)) and all(m.header.frame_id == "base" for m in array.markers)
