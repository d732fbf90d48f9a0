"""The validator's moveit_compat parameter where moveit_msgs is not installed (this machine,
CI): ``auto`` starts as before with one log line, ``true`` ends start-up with one line and
exit code 1, a bad value is refused by name. Where moveit_msgs is installed these are
skipped and test_moveit_dds.py runs instead."""
from __future__ import annotations

import importlib.util
import os
import subprocess

import pytest
from node_processes import ARM, FREE, STARTUP_TIMEOUT_S, NodeProcess, executable, panda_params, ros_args

from my_collision_pkg.ros.client import ValidatorClient

pytestmark = pytest.mark.skipif(importlib.util.find_spec("moveit_msgs") is not None,
                                reason="moveit_msgs is installed: test_moveit_dds.py covers the bridge")


def test_auto_without_moveit_msgs_serves_as_before_and_says_so_once():
    node = NodeProcess("collision_validator", panda_params(), {"__node": "moveit_auto"})
    client = ValidatorClient("/moveit_auto", node_name=f"moveit_auto_client_{os.getpid()}")
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("check",))
        assert client.check(ARM, FREE).valid
    finally:
        client.close()
        output = node.stop()
    lines = [line for line in output.splitlines() if "moveit_msgs" in line]
    assert len(lines) == 1 and "MoveIt bridge off" in lines[0], lines
    assert "Traceback" not in output


@pytest.mark.parametrize("value, fragment", [("true", "moveit_msgs"), ("sometimes", "moveit_compat")])
def test_required_without_moveit_msgs_or_a_bad_value_ends_start_up_with_one_line(value, fragment):
    result = subprocess.run([executable("collision_validator")] + ros_args(panda_params(moveit_compat=value)),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout
