"""~/compute_clearance and ~/clearance over DDS: answers equal the core's, bad input refused by name.

The module's validator (conftest: Panda, SRDF, default world, ``max_batch`` 5000) answers
``compute_clearance``; the core checker on the same scene computes the same rows in this
process, and the response, read back with ``conversions.clearance_from_response``, must
carry them unchanged (same code, same scene: equal to float precision). A second validator
with ``monitor_joint_states`` publishes ``~/clearance`` for the state sent on
/joint_states.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from node_processes import ARM, FREE, INTO_TABLE, PANDA_WORLD, STARTUP_TIMEOUT_S, NodeProcess, listener, panda_params
from sensor_msgs.msg import JointState
from test_parameters import Parameters

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.kernels.mesh_queries import closest_point_on_triangles
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.msg import Clearance as ClearanceMsg
from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.ros.conversions import clearance_from_response
from my_collision_pkg.ros.validator_node import DEFAULT_CLEARANCE_INFLUENCE_M, REPORT_QOS
from my_collision_pkg.srv import ComputeClearance

VALID, OUT_OF_BOUNDS, INVALID = (ComputeClearance.Response.VALID, ComputeClearance.Response.OUT_OF_BOUNDS,
                                 ComputeClearance.Response.INVALID_REQUEST)
# panda_joint4's range is [-3.0718, -0.0698]: 0.5 is outside it
OUT_OF_LIMITS = [0.0, -0.785, 0.0, 0.5, 0.0, 1.571, 0.785]
NEAR_TABLE = [0.0, 0.9, 0.0, -1.2, 0.0, 1.571, 0.785]       # the hand a few centimetres above the table
RNG_SEED = 15
TIE_TOLERANCE_M = 1e-9


@pytest.fixture(scope="module")
def core():
    urdf, srdf = panda_paths()
    return CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD))


@pytest.fixture(scope="module")
def client(validator):
    validator.wait_for_services(services=("clearance",))
    return validator


def _configurations(core, n: int) -> np.ndarray:
    robot = core.scene.robot
    arm = [robot.active_joint_names.index(name) for name in ARM]
    lower, upper = robot.lower_limits[arm], robot.upper_limits[arm]
    rows = np.random.default_rng(RNG_SEED).uniform(lower, upper, size=(n, len(ARM)))
    rows[0], rows[1], rows[2] = FREE, NEAR_TABLE, INTO_TABLE
    return rows


def _assert_same_rows(answer, expected, core, rows) -> None:
    """The node's rows are the core's: same code, same scene.

    coal's iterative distances end within their tolerance from where the previous call left
    them, so a process that ran other queries first (the node's warm-up) may differ by about
    5e-11 m. A witness point on an edge or vertex that mesh triangles share (hull witness
    points are often vertices) may then name any of them (``subshape_ids``): allowed where
    the point lies on the triangle the node names.
    """
    assert answer.status == expected.status and answer.message == expected.message
    assert answer.jacobian_joint_names == expected.jacobian_joint_names
    assert len(answer) == len(expected)
    np.testing.assert_array_equal(answer.configuration_index, expected.configuration_index)
    np.testing.assert_array_equal(answer.body_names, expected.body_names)
    np.testing.assert_array_equal(answer.body_types, expected.body_types)
    np.testing.assert_array_equal(answer.shape_ids, expected.shape_ids)
    np.testing.assert_array_equal(answer.smooth, expected.smooth)
    for name in ("distance", "points", "points_local", "normals", "jacobian"):
        np.testing.assert_allclose(getattr(answer, name), getattr(expected, name), rtol=0, atol=TIE_TOLERANCE_M,
                                   err_msg=name)
    for r, side in zip(*np.nonzero(answer.subshape_ids != expected.subshape_ids)):
        gap = _gap_to_triangle(core, rows, int(expected.configuration_index[r]),
                               int(expected.shape_pairs[r, side]), int(answer.subshape_ids[r, side]),
                               answer.points[r, side])
        assert gap < TIE_TOLERANCE_M, (r, side, gap)


def _gap_to_triangle(core, rows, c: int, shape: int, triangle: int, p_world) -> float:
    """Distance (m) from ``p_world`` to triangle ``triangle`` of mesh shape ``shape`` at configuration ``c``."""
    robot, world = core.scene.robot, core.scene.world
    q = np.array(core.scene.current_positions, dtype=float)
    if rows is not None:
        for name, value in zip(ARM, np.atleast_2d(rows)[c]):
            q[robot.active_joint_names.index(name)] = value
    T_shape = world.shape_transforms(robot.link_transforms(q))[shape]
    mesh = world.shapes[shape].geometry.source_mesh
    corners = np.asarray(mesh.vertices)[np.asarray(mesh.faces)[triangle]]
    p_shape = T_shape[:3, :3].T @ (np.asarray(p_world) - T_shape[:3, 3])
    nearest, _ = closest_point_on_triangles(p_shape, np.ascontiguousarray(corners[None]))
    return float(np.linalg.norm(nearest - p_shape))


@pytest.mark.parametrize("influence_m, max_rows, jacobians", [(0.05, 0, True), (0.5, 0, True), (0.5, 3, False)])
def test_a_batch_answers_as_the_core(client, core, influence_m, max_rows, jacobians):
    rows = _configurations(core, 40)
    response = client.compute_clearance(ARM, rows, influence_m, max_rows_per_configuration=max_rows,
                                        compute_jacobians=jacobians)
    expected = core.clearance(ARM, rows, influence_m, max_rows_per_configuration=max_rows,
                              compute_jacobians=jacobians)
    assert expected.ok and len(expected) > 40          # every configuration has rows at these distances
    _assert_same_rows(clearance_from_response(response), expected, core, rows)
    assert len(response.body_names) == len(response.points) == len(response.points_local) == 2 * len(expected)
    assert len(response.jacobian) == (len(expected) * len(ARM) if jacobians else 0)
    if max_rows:
        assert np.bincount(np.asarray(response.configuration_index)).max() <= max_rows


def test_one_configuration_near_the_table_has_a_penetrating_and_a_near_row(client, core):
    answer = clearance_from_response(client.compute_clearance(ARM, INTO_TABLE, 0.05))
    assert answer.ok and answer.jacobian_joint_names == tuple(ARM)
    table = [r for r in range(len(answer)) if "table" in answer.body_names[r]]
    assert table and min(answer.distance[table]) < 0.0     # the arm reaches through the table
    # body 0 is the robot side of a robot-vs-world row
    assert all(answer.body_types[r, 0] != ComputeClearance.Response.WORLD_OBJECT for r in table)
    assert all(answer.body_types[r, 1] == ComputeClearance.Response.WORLD_OBJECT for r in table)
    # the normal runs from body 0 to body 1 and the Jacobian row is its gradient: finite, not zero
    norms = np.linalg.norm(answer.normals, axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-9)
    assert np.all(np.isfinite(answer.jacobian)) and np.linalg.norm(answer.jacobian[table[0]]) > 0.0


def test_without_joint_names_the_current_state_is_checked_over_every_active_joint(client, core):
    response = client.compute_clearance([], [], 0.5)
    expected = core.clearance([], [], 0.5)
    assert response.status == VALID and len(response.distance) > 0
    assert tuple(response.jacobian_joint_names) == core.scene.robot.active_joint_names
    _assert_same_rows(clearance_from_response(response), expected, core, None)


@pytest.mark.parametrize("influence_m, fragment", [(float("nan"), "influence_distance"),
                                                   (-0.1, "influence_distance"),
                                                   (float("inf"), "influence_distance")])
def test_a_bad_influence_distance_is_refused_by_name(client, influence_m, fragment):
    response = client.compute_clearance(ARM, FREE, influence_m)
    assert response.status == INVALID and fragment in response.message
    assert len(response.distance) == 0


def test_bad_joints_and_lengths_are_refused_by_name(client):
    unknown = client.compute_clearance(["panda_joint1", "no_such_joint"], [0.0, 0.0], 0.1)
    assert unknown.status == INVALID and "no_such_joint" in unknown.message
    ragged = client.compute_clearance(ARM, FREE[:-1], 0.1)
    assert ragged.status == INVALID and "6" in ragged.message
    nan = client.compute_clearance(ARM, [float("nan")] + FREE[1:], 0.1)
    assert nan.status == INVALID and "panda_joint1" in nan.message
    too_many = client.compute_clearance(ARM, np.tile(FREE, (5001, 1)), 0.1)
    assert too_many.status == INVALID and "5000" in too_many.message


def test_a_configuration_outside_the_limits_is_out_of_bounds(client):
    response = client.compute_clearance(ARM, np.array([FREE, OUT_OF_LIMITS]), 0.1)
    assert response.status == OUT_OF_BOUNDS and "panda_joint4" in response.message
    assert "configuration 1" in response.message and len(response.distance) == 0


@pytest.fixture(scope="module")
def monitored():
    name = "clearance_monitor"
    process = NodeProcess("collision_validator", panda_params(monitor_joint_states="true", monitor_rate_hz="20"),
                          {"__node": name})
    client = ValidatorClient(f"/{name}", node_name=f"clearance_monitor_client_{os.getpid()}")
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("clearance",))
        yield name, client, Parameters(client.node, name)
    finally:
        client.close()
        output = process.stop()
        assert "Traceback" not in output, output


def _next_clearance(name, state, accept, rounds=100):
    with listener("clearance_listener", ClearanceMsg, f"/{name}/clearance", REPORT_QOS) as (ros, executor, msgs):
        publisher = ros.create_publisher(JointState, "/joint_states", 10)
        for _ in range(rounds):
            publisher.publish(JointState(name=ARM, position=list(state)))
            executor.spin_once(timeout_sec=0.1)
            hits = [m for m in msgs if accept(m)]
            if hits:
                return hits[-1]
    raise AssertionError(f"no matching ~/clearance message for {state}")


def test_the_monitored_state_publishes_its_nearest_pair(monitored, core):
    name, client, parameters = monitored
    msg = _next_clearance(name, NEAR_TABLE, lambda m: m.found and list(m.joint_names) and
                          abs(m.distance - _nearest(core, NEAR_TABLE)[0]) < 1e-9)
    distance, bodies, jacobian = _nearest(core, NEAR_TABLE)
    assert msg.influence_distance == DEFAULT_CLEARANCE_INFLUENCE_M
    assert tuple(msg.body_names) == bodies
    assert msg.header.frame_id == core.scene.robot.root_link
    assert list(msg.joint_names) == list(core.scene.robot.active_joint_names)
    np.testing.assert_allclose(msg.jacobian, jacobian, atol=1e-12)
    # nothing within a 1 mm influence at the SRDF's default state: found false, distance +inf
    (result,) = parameters.set(clearance_influence_distance=0.001)
    assert result.successful, result.reason
    empty = _next_clearance(name, FREE, lambda m: not m.found)
    assert empty.distance == float("inf") and not empty.body_names and empty.influence_distance == 0.001


def _nearest(core, arm_positions):
    robot = core.scene.robot
    full = [float(v) for v in core.scene.current_positions]
    for name, value in zip(ARM, arm_positions):
        full[robot.active_joint_names.index(name)] = value
    answer = core.clearance(robot.active_joint_names, full, DEFAULT_CLEARANCE_INFLUENCE_M,
                            max_rows_per_configuration=1)
    assert len(answer) == 1
    return float(answer.distance[0]), tuple(answer.body_names[0]), answer.jacobian[0]
