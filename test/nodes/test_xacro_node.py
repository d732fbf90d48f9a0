"""collision_validator started on xacro descriptions (urdf_path / srdf_path ending in .xacro),
as `ros2 run ... -p urdf_path:=robot.urdf.xacro` does; the robot is test/data/two_arms
(see test/core/test_xacro.py for its geometry)."""
from __future__ import annotations

import math
import os
import subprocess

from node_processes import REPO, STARTUP_TIMEOUT_S, NodeProcess, executable, ros_args

from my_collision_pkg.ros.client import ValidatorClient
from my_collision_pkg.srv import CheckValidity

DATA = os.path.join(REPO, "test", "data")
URDF_XACRO = os.path.join(DATA, "two_arms.urdf.xacro")
SRDF_XACRO = os.path.join(DATA, "two_arms.srdf.xacro")
JOINTS = ["left_joint", "right_joint"]


def test_the_node_expands_xacro_files_and_checks_the_robot_they_describe():
    node = NodeProcess("collision_validator", {"urdf_path": URDF_XACRO, "srdf_path": SRDF_XACRO})
    client = ValidatorClient(node_name=f"test_xacro_client_{os.getpid()}")
    try:
        client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S, services=("check", "explain"))
        free = client.check(JOINTS, [0.0, 0.0])
        assert free.valid and free.status == CheckValidity.Response.VALID
        crossed = client.check(JOINTS, [-math.pi / 2, 0.0])
        assert not crossed.valid and crossed.status == CheckValidity.Response.IN_COLLISION
        assert "left_arm" in crossed.message and "right_arm" in crossed.message
        explained = client.explain(JOINTS, [-math.pi / 2, 0.0])
        assert explained.contacts
        assert all(sorted(c.link_names) == ["left_arm", "right_arm"] for c in explained.contacts)
        # the SRDF (a xacro too) was read: its group is known, an unknown one is refused
        assert client.check(JOINTS, [0.0, 0.0], group_name="arms").valid
        unknown = client.check(JOINTS, [0.0, 0.0], group_name="legs")
        assert unknown.status == CheckValidity.Response.INVALID_REQUEST and "legs" in unknown.message
    finally:
        client.close()
        output = node.stop()
    assert "planning frame 'base'" in output, output


def test_a_failing_xacro_ends_start_up_with_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "needs_arg.urdf.xacro"
    bad.write_text('<robot name="n" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                   '<link name="$(arg base_name)"/></robot>')
    result = subprocess.run([executable("collision_validator")] + ros_args({"urdf_path": str(bad)}),
                            capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("collision_validator: cannot start:")
    assert "needs_arg.urdf.xacro" in lines[0] and "base_name" in lines[0]
