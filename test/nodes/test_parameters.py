"""collision_validator's parameters at run time, and /joint_states validation, over DDS.

One validator (its own node name) with monitor_joint_states; parameters are set through
the node's own rcl_interfaces/srv/SetParameters service, as ``ros2 param set`` does.
"""
from __future__ import annotations

import os
import time

import pytest
from node_processes import ARM, FREE, INTO_TABLE, STARTUP_TIMEOUT_S, NodeProcess, listener, panda_params
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from sensor_msgs.msg import JointState

from my_collision_pkg.msg import ContactReport
from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.ros.validator_node import PARAMETERS, REPORT_QOS, SWITCH_SETTERS
from my_collision_pkg.srv import CheckValidity

NODE = "param_validator"
CALL_TIMEOUT_S = 30.0
RESEND_AFTER_S = 3.0
VALID, OUT_OF_BOUNDS, INVALID = (CheckValidity.Response.VALID, CheckValidity.Response.OUT_OF_BOUNDS,
                                 CheckValidity.Response.INVALID_REQUEST)
# panda_joint4's range is [-3.0718, -0.0698]: 0.5 is outside it
OUT_OF_LIMITS = [0.0, -0.785, 0.0, 0.5, 0.0, 1.571, 0.785]


def _value(value) -> ParameterValue:
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    if isinstance(value, float):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=str(value))


class Parameters:
    """The node's SetParameters / GetParameters services, called from the client's node (spun by the client)."""

    def __init__(self, node, target: str = NODE):
        self._set = node.create_client(SetParameters, f"/{target}/set_parameters")
        self._get = node.create_client(GetParameters, f"/{target}/get_parameters")
        assert self._set.wait_for_service(timeout_sec=CALL_TIMEOUT_S)
        assert self._get.wait_for_service(timeout_sec=CALL_TIMEOUT_S)

    @staticmethod
    def _call(client, request):
        """The answer to ``request``, sent again if none came within RESEND_AFTER_S.

        Both calls are idempotent. A request sent right after ``wait_for_service`` can get
        no answer when the server has not yet discovered the client's reply reader (a known
        DDS discovery race, seen here on a loaded machine), so a lost answer is asked again.
        """
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            future = client.call_async(request)
            resend_at = min(deadline, time.monotonic() + RESEND_AFTER_S)
            while not future.done() and time.monotonic() < resend_at:
                time.sleep(0.01)
            if future.done():
                return future.result()
            client.remove_pending_request(future)
            assert time.monotonic() < deadline, "the parameter service did not answer"

    def set(self, **values):
        """Results (successful, reason) of setting each parameter."""
        request = SetParameters.Request(parameters=[Parameter(name=k, value=_value(v)) for k, v in values.items()])
        return self._call(self._set, request).results

    def get(self, name):
        values = self._call(self._get, GetParameters.Request(names=[name])).values
        v = values[0]
        return {ParameterType.PARAMETER_INTEGER: v.integer_value, ParameterType.PARAMETER_DOUBLE: v.double_value,
                ParameterType.PARAMETER_BOOL: v.bool_value, ParameterType.PARAMETER_STRING: v.string_value,
                ParameterType.PARAMETER_DOUBLE_ARRAY: list(v.double_array_value)}[v.type]


@pytest.fixture(scope="module")
def node():
    process = NodeProcess("collision_validator", panda_params(max_batch=100, monitor_joint_states="true",
                                                              monitor_rate_hz="20"), {"__node": NODE})
    client = ValidatorClient(f"/{NODE}", node_name=f"param_client_{os.getpid()}")
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S)
        yield process, client, Parameters(client.node)
    finally:
        client.close()
        process.stop()


def test_every_parameter_is_read_only_or_takes_effect():
    dynamic = {p.name for p, _, setter in PARAMETERS if setter is not None} | set(SWITCH_SETTERS)
    assert {"max_batch", "max_contacts", "contacts_per_pair", "surface_stiffness", "monitor_rate_hz",
            "default_padding", "check_joint_limits"} <= dynamic
    assert all(p.dynamic == (setter is not None) and p.descriptor().read_only == (setter is None)
               for p, _, setter in PARAMETERS)


@pytest.mark.parametrize("name, value", [("urdf_path", "/elsewhere/robot.urdf"), ("scene_path", ""),
                                         ("monitor_joint_states", False), ("srdf_path", "x.srdf")])
def test_read_only_parameters_are_refused_with_a_reason(node, name, value):
    _, _, parameters = node
    before = parameters.get(name)
    (result,) = parameters.set(**{name: value})
    assert not result.successful and name in result.reason and "read-only" in result.reason
    assert parameters.get(name) == before


def test_max_batch_takes_effect_and_is_range_checked(node):
    _, client, parameters = node
    assert client.check_batch(ARM, [FREE] * 50).status == VALID
    (result,) = parameters.set(max_batch=10)
    assert result.successful, result.reason
    assert parameters.get("max_batch") == 10
    refused = client.check_batch(ARM, [FREE] * 11)
    assert refused.status == INVALID and "10" in refused.message
    assert client.check_batch(ARM, [FREE] * 10).status == VALID
    for bad in (0, 2.5, "many", 10**12):
        (result,) = parameters.set(max_batch=bad)
        assert not result.successful and "max_batch" in result.reason, (bad, result.reason)
    assert parameters.get("max_batch") == 10
    (result,) = parameters.set(max_batch=100)
    assert result.successful and client.check_batch(ARM, [FREE] * 50).status == VALID


def test_max_contacts_and_check_joint_limits_take_effect(node):
    _, client, parameters = node
    many = client.explain(ARM, INTO_TABLE, contact_distance=0.05)
    assert len(many.contacts) > 1
    (result,) = parameters.set(max_contacts=1)
    assert result.successful, result.reason
    assert len(client.explain(ARM, INTO_TABLE, contact_distance=0.05).contacts) == 1
    parameters.set(max_contacts=100)
    assert client.check(ARM, OUT_OF_LIMITS).status == OUT_OF_BOUNDS
    (result,) = parameters.set(check_joint_limits=False)
    assert result.successful, result.reason
    assert client.check(ARM, OUT_OF_LIMITS).status != OUT_OF_BOUNDS
    (result,) = parameters.set(check_joint_limits="no")
    assert not result.successful and "check_joint_limits" in result.reason
    parameters.set(check_joint_limits=True)
    assert client.check(ARM, OUT_OF_LIMITS).status == OUT_OF_BOUNDS


def test_default_padding_takes_effect(node):
    _, client, parameters = node
    assert client.check(ARM, FREE).valid
    (result,) = parameters.set(default_padding=0.9)
    assert result.successful, result.reason
    assert not client.check(ARM, FREE).valid
    (result,) = parameters.set(default_padding=-1.0)
    assert not result.successful and "default_padding" in result.reason
    parameters.set(default_padding=0.0)
    assert client.check(ARM, FREE).valid


def _reports_after(executor, reports, publisher, message, wait_s):
    count = len(reports)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        publisher.publish(message)
        executor.spin_once(timeout_sec=0.05)
    return reports[count:]


def _stamp_s(report) -> float:
    return report.header.stamp.sec + 1e-9 * report.header.stamp.nanosec


def _first_reports(executor, reports, publisher, message, max_wait_s):
    """Publish ``message`` until a report stamped after the first publication comes (a loaded
    machine may take seconds to connect). Reports stamped before it are not answers: the
    topic is latched, so a new subscriber first gets the last report of an earlier request."""
    count = len(reports)
    since_s = time.time()
    deadline = time.monotonic() + max_wait_s
    while time.monotonic() < deadline and not any(_stamp_s(r) >= since_s for r in reports[count:]):
        publisher.publish(message)
        executor.spin_once(timeout_sec=0.05)
    return [r for r in reports[count:] if _stamp_s(r) >= since_s]


def _settle(executor, reports, quiet_s, max_s):
    """Spin until no report has arrived for ``quiet_s`` (at most ``max_s``)."""
    deadline = time.monotonic() + max_s
    count, quiet_since = len(reports), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < quiet_s:
        executor.spin_once(timeout_sec=0.05)
        if len(reports) != count:
            count, quiet_since = len(reports), time.monotonic()


def test_bad_joint_states_are_dropped_with_a_warning(node):
    process, client, _ = node
    with listener("bad_states_source", ContactReport, f"/{NODE}/contacts", REPORT_QOS) as (ros, executor, reports):
        publisher = ros.create_publisher(JointState, "/joint_states", 10)
        good = _first_reports(executor, reports, publisher, JointState(name=ARM, position=INTO_TABLE), 15.0)
        assert good and not good[-1].valid
        _settle(executor, reports, quiet_s=1.0, max_s=10.0)   # reports of the last good messages may be on their way
        bad = {
            "7 joint names but 3 positions": JointState(name=ARM, position=FREE[:3]),
            "joint 'panda_joint1' is named twice": JointState(name=ARM + ["panda_joint1"], position=FREE + [0.1]),
            "joint 'panda_joint2' has non-finite position nan": JointState(
                name=ARM, position=[0.0, float("nan")] + FREE[2:]),
            "joint 'panda_joint3' position 1e+308 is beyond": JointState(
                name=ARM, position=[0.0, 0.0, 1e308] + FREE[3:]),
        }
        for fault, message in bad.items():
            after = _reports_after(executor, reports, publisher, message, 0.6)
            assert after == [], f"a report followed the message with '{fault}'"
        # the state is still the good one: a check naming only joint 1 keeps the others
        assert "table" in client.check(["panda_joint1"], [0.0]).message
    output = process.output()
    for fault in bad:
        assert f"/joint_states message dropped: {fault}" in output, output[-3000:]


def test_contact_markers_options_take_effect_or_are_refused_by_name(node):
    _, client, _ = node
    markers = NodeProcess("contact_markers", {}, {"__node": "param_markers"})
    try:
        parameters = Parameters(client.node, "param_markers")
        (result,) = parameters.set(sphere_radius_m=0.05)
        assert result.successful, result.reason
        assert parameters.get("sphere_radius_m") == 0.05
        (result,) = parameters.set(arrow_max_length_m=1e-5)     # below arrow_min_length_m
        assert not result.successful and "arrow_max_length_m" in result.reason
        (result,) = parameters.set(show_labels="yes")
        assert not result.successful and "show_labels" in result.reason
        (result,) = parameters.set(contacts_topic="/elsewhere")
        assert not result.successful and "read-only" in result.reason
    finally:
        output = markers.stop()
    assert "Traceback" not in output


@pytest.mark.parametrize("names, positions, fault", [
    (ARM, FREE[:3], "7 joint names but 3 positions"),
    (ARM + ["panda_joint2"], FREE + [0.0], "joint 'panda_joint2' is named twice"),
    (ARM, [float("inf")] + FREE[1:], "joint 'panda_joint1' has non-finite position inf"),
    (ARM, FREE[:6] + [-1e308], "joint 'panda_joint7' position -1e+308 is beyond"),
    (["other_robot_joint"] + ARM, [float("nan")] + FREE, None),          # not this robot's: ignored
    (ARM, FREE, None),
])
def test_joint_state_faults_are_named(names, positions, fault):
    from my_collision_pkg.ros.validator_node import joint_state_fault
    found = joint_state_fault(names, positions, lambda name: name in ARM)
    assert (found is None) if fault is None else (found is not None and found.startswith(fault)), found
