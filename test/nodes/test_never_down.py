"""Never down, round 2 (issue 39), over DDS against the real executables.

- Every declared parameter of both nodes (rclpy's own ``use_sim_time`` too), set through
  the standard ``rcl_interfaces/srv/SetParameters`` service to every hostile value of every
  ROS parameter type: each set is answered (accepted, or refused naming the parameter),
  the node stays up, and a check is answered after each set.
- Start-ups with a non-finite number end with one line naming the parameter.
- ``~/set_octomap`` with a FIFO, a symlink to ``/dev/zero`` and a directory: refused by name
  within a second, the map unchanged, the scene updates still served.
- ``~/get_allowed_collisions`` with more names than its bound: refused in milliseconds.
- A self pair in ``~/set_allowed_collisions``: refused by name, matrix unchanged.
- After a clearance refused by its row bound, the node's memory goes back near its start.
"""
from __future__ import annotations

import math
import os
import subprocess
import time

import numpy as np
import pytest
from node_processes import (ARM, FREE, INTO_TABLE, STARTUP_TIMEOUT_S, NodeProcess, executable, panda_params, ros_args,
                            rss_mb)
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters

from my_collision_pkg.core.scene.planning_scene import MAX_ALLOWED_COLLISIONS_NAMES
from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.srv import CheckValidity, ComputeClearance

NODE = "never_down_validator"
MARKERS_NODE = "never_down_markers"
CALL_TIMEOUT_S = 30.0
REFUSED_WITHIN_S = 1.0
NAMES_REFUSED_WITHIN_S = 0.5      # a round trip plus the count of names (measured: a few ms)
RSS_BACK_WITHIN_MB = 50.0
VALID, INVALID = CheckValidity.Response.VALID, CheckValidity.Response.INVALID_REQUEST

# One hostile value of each ROS parameter type, and the numbers that killed the node.
_T = ParameterType
HOSTILE_VALUES = {
    "double NaN": ParameterValue(type=_T.PARAMETER_DOUBLE, double_value=math.nan),
    "double +inf": ParameterValue(type=_T.PARAMETER_DOUBLE, double_value=math.inf),
    "double -inf": ParameterValue(type=_T.PARAMETER_DOUBLE, double_value=-math.inf),
    "double 1e308": ParameterValue(type=_T.PARAMETER_DOUBLE, double_value=1e308),
    "double -0.0": ParameterValue(type=_T.PARAMETER_DOUBLE, double_value=-0.0),
    "double 0.5": ParameterValue(type=_T.PARAMETER_DOUBLE, double_value=0.5),
    "integer max": ParameterValue(type=_T.PARAMETER_INTEGER, integer_value=2**63 - 1),
    "integer min": ParameterValue(type=_T.PARAMETER_INTEGER, integer_value=-2**63),
    "integer 0": ParameterValue(type=_T.PARAMETER_INTEGER, integer_value=0),
    "string": ParameterValue(type=_T.PARAMETER_STRING, string_value="abc"),
    "empty string": ParameterValue(type=_T.PARAMETER_STRING, string_value=""),
    "bool true": ParameterValue(type=_T.PARAMETER_BOOL, bool_value=True),
    "bool false": ParameterValue(type=_T.PARAMETER_BOOL, bool_value=False),
    "byte array": ParameterValue(type=_T.PARAMETER_BYTE_ARRAY, byte_array_value=[b"\x00", b"\xff"]),
    "bool array": ParameterValue(type=_T.PARAMETER_BOOL_ARRAY, bool_array_value=[True, False]),
    "integer array": ParameterValue(type=_T.PARAMETER_INTEGER_ARRAY, integer_array_value=[1, 2**63 - 1]),
    "double array": ParameterValue(type=_T.PARAMETER_DOUBLE_ARRAY, double_array_value=[math.nan, math.inf]),
    "empty double array": ParameterValue(type=_T.PARAMETER_DOUBLE_ARRAY, double_array_value=[]),
    "string array": ParameterValue(type=_T.PARAMETER_STRING_ARRAY, string_array_value=["a", ""]),
    "not set": ParameterValue(type=_T.PARAMETER_NOT_SET),
}


class ParameterServices:
    """A node's own parameter services, called from a client's node (spun by the client)."""

    def __init__(self, node, target: str):
        self._clients = {kind: node.create_client(srv, f"/{target}/{name}") for kind, srv, name in (
            ("set", SetParameters, "set_parameters"), ("get", GetParameters, "get_parameters"),
            ("list", ListParameters, "list_parameters"))}
        for client in self._clients.values():
            assert client.wait_for_service(timeout_sec=CALL_TIMEOUT_S)

    def _call(self, kind: str, request):
        """The answer; a request that got none within a few seconds is sent again (a lost
        answer right after discovery), up to CALL_TIMEOUT_S: no answer at all fails."""
        client = self._clients[kind]
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            future = client.call_async(request)
            resend_at = min(deadline, time.monotonic() + 3.0)
            while not future.done() and time.monotonic() < resend_at:
                time.sleep(0.002)
            if future.done():
                return future.result()
            client.remove_pending_request(future)
        raise AssertionError(f"{client.srv_name} did not answer within {CALL_TIMEOUT_S} s")

    def names(self) -> list[str]:
        return list(self._call("list", ListParameters.Request()).result.names)

    def values(self, names) -> list[ParameterValue]:
        return list(self._call("get", GetParameters.Request(names=list(names))).values)

    def set(self, name: str, value: ParameterValue):
        (result,) = self._call("set", SetParameters.Request(parameters=[Parameter(name=name, value=value)])).results
        return result


def _hostile_sets(parameters: ParameterServices, after_each_set) -> dict:
    """Every declared parameter to every hostile value; an accepted value is set back at once.

    Returns {parameter: [names of the values accepted]}; asserts that every refusal names
    the parameter and calls ``after_each_set(name)`` after each set.
    """
    names = parameters.names()
    originals = dict(zip(names, parameters.values(names)))
    accepted = {}
    for name in names:
        for label, value in HOSTILE_VALUES.items():
            result = parameters.set(name, value)
            if result.successful:
                accepted.setdefault(name, []).append(label)
                restored = parameters.set(name, originals[name])
                assert restored.successful, (name, label, restored.reason)
            else:
                assert name in result.reason, (name, label, result.reason)
            after_each_set(name)
    assert parameters.values(names) == [originals[n] for n in names]
    return accepted


@pytest.fixture(scope="module")
def validator():
    process = NodeProcess("collision_validator", panda_params(monitor_joint_states="true"),
                          {"__node": NODE})
    client = ValidatorClient(f"/{NODE}", node_name=f"never_down_client_{os.getpid()}", timeout_s=CALL_TIMEOUT_S,
                             server_alive=lambda: process.process.poll() is None)
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=(
            "check", "clearance", "set_allowed", "get_allowed", "set_octomap", "clear_octomap", "apply"))
        yield process, client, ParameterServices(client.node, NODE)
    finally:
        client.close()
        output = process.stop()
        assert "Traceback" not in output, output


def test_every_parameter_set_to_every_hostile_value_is_answered_and_the_node_stays_up(validator):
    process, client, parameters = validator
    answered_checks = []

    def check_answered(name):
        answer = client.check(ARM, FREE)
        assert answer.status == VALID, (name, answer.message)
        answered_checks.append(name)

    accepted = _hostile_sets(parameters, check_answered)
    assert process.process.poll() is None
    # the six integer bounds that a double NaN or inf used to kill are among those checked
    for name in ("max_batch", "max_motion_samples", "max_trajectory_waypoints", "max_certified_steps",
                 "max_clearance_rows", "batch_workers"):
        assert answered_checks.count(name) == len(HOSTILE_VALUES)
        assert not {"double NaN", "double +inf", "double -inf"} & set(accepted.get(name, ())), accepted.get(name)
    print(f"{len(set(answered_checks))} parameters x {len(HOSTILE_VALUES)} values answered, each followed by an "
          f"answered check; accepted (then set back): {accepted}")


def test_contact_markers_answers_every_hostile_value_and_stays_up():
    process = NodeProcess("contact_markers", {}, {"__node": MARKERS_NODE})
    client = ValidatorClient(f"/{MARKERS_NODE}", node_name=f"never_down_markers_client_{os.getpid()}")
    try:
        parameters = ParameterServices(client.node, MARKERS_NODE)
        _hostile_sets(parameters, lambda name: None)
        assert process.process.poll() is None
    finally:
        client.close()
        output = process.stop()
    assert "Traceback" not in output, output


@pytest.mark.parametrize("name, value", [("max_clearance_rows", ".nan"), ("max_batch", ".inf"),
                                         ("default_padding", "-.inf"), ("octomap_resolution", ".nan")])
def test_a_non_finite_number_at_start_up_ends_it_with_one_line_naming_the_parameter(name, value):
    result = subprocess.run([executable("collision_validator")] + ros_args(panda_params(**{name: value})),
                            capture_output=True, text=True, timeout=120)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1, result.stderr
    # ours: "parameter 'x' must be a finite number in [lo, hi]"; rclpy's range check of a declared
    # float range comes first for floats: "Parameter x out of range Min: .., Max: .., value: -inf"
    assert len(lines) == 1 and name in lines[0] and ("finite" in lines[0] or "out of range" in lines[0]), result.stderr
    assert "Traceback" not in result.stderr + result.stdout


# ----- files that never end -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_set_octomap_refuses_special_files_by_name_within_a_second(validator, tmp_path, kind):
    _, client, _ = validator
    assert client.set_octomap(points_xyz_m=[0.6, 0.0, 0.3], resolution_m=0.02).success
    path = tmp_path / "map.bt"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    start = time.monotonic()
    answer = client.set_octomap(file_path=str(path))
    elapsed = time.monotonic() - start
    assert not answer.success and str(path) in answer.message and "map unchanged" in answer.message, answer.message
    assert {"fifo": "FIFO", "/dev/zero": "character device", "directory": "directory"}[kind] in answer.message
    assert elapsed < REFUSED_WITHIN_S, elapsed
    cleared = client.clear_octomap()                     # the map was the one point: unchanged
    assert cleared.success and cleared.cells_removed == 1, cleared.message
    assert client.set_allowed_collisions([("panda_hand", "table", False)]).success   # updates still served


# ----- the allowed collision matrix -----------------------------------------------------------
def test_more_names_than_the_bound_are_refused_by_name_in_milliseconds(validator):
    _, client, _ = validator
    names = ["table"] * 20_000
    start = time.monotonic()
    answer = client.get_allowed_collisions(names)
    elapsed = time.monotonic() - start
    assert not answer.success and "MAX_ALLOWED_COLLISIONS_NAMES" in answer.message, answer.message
    assert str(MAX_ALLOWED_COLLISIONS_NAMES) in answer.message.replace(",", "")
    assert elapsed < NAMES_REFUSED_WITHIN_S, elapsed
    print(f"20,000 names refused in {elapsed * 1e3:.1f} ms")
    ok = client.get_allowed_collisions(["table", "table"])
    assert ok.success and list(ok.allowed) == [True] * 4


def test_a_self_pair_is_refused_by_name(validator):
    _, client, _ = validator
    before = client.get_allowed_collisions(["table", "panda_hand"])
    answer = client.set_allowed_collisions([("panda_hand", "table", True), ("table", "table", False)])
    assert not answer.success and "('table', 'table') names one body twice" in answer.message, answer.message
    assert list(client.get_allowed_collisions(["table", "panda_hand"]).allowed) == list(before.allowed)


# ----- memory after a refusal -----------------------------------------------------------------
def test_memory_goes_back_after_a_clearance_refused_by_its_row_bound(validator):
    process, client, _ = validator
    pid = process.process.pid
    rng = np.random.default_rng(39)
    rows = rng.uniform(-0.3, 0.3, size=(4_000, len(ARM))) + np.asarray(FREE)   # within the limits
    small = client.compute_clearance(ARM, rows[:20], influence_distance=1.0)
    assert small.status == ComputeClearance.Response.VALID, small.message
    time.sleep(1.0)
    start_mb = rss_mb(pid)
    start = time.monotonic()
    refused = client.compute_clearance(ARM, rows, influence_distance=1.0)
    elapsed = time.monotonic() - start
    assert refused.status == ComputeClearance.Response.INVALID_REQUEST, refused.message
    assert "max_clearance_rows" in refused.message, refused.message
    peak_mb = rss_mb(pid)
    time.sleep(1.5)                                       # the memory return comes a moment after the answer
    end_mb = rss_mb(pid)
    print(f"refused in {elapsed:.2f} s; validator RSS {start_mb:.0f} MB before, {peak_mb:.0f} MB after the "
          f"answer, {end_mb:.0f} MB a moment later")
    assert end_mb - start_mb < RSS_BACK_WITHIN_MB
    assert client.check(ARM, INTO_TABLE).status != INVALID
