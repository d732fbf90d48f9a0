"""The launch file's checks before anything starts (my_collision_pkg.tools.launch_arguments), without ROS.

Two faults that upstream launch let through until every node had started (issue 14):
a collision geometry the validator refuses (a bad size, a mesh file missing or
unreadable, a bad size made by a xacro argument), and an argument name the file does
not declare (``urdff:=``), which ``context.launch_configurations`` holds but the
check never saw. The launch context is stood in for by an object with the
``launch_configurations`` mapping, the one field the launch file reads.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
import trimesh

pytest.importorskip("my_collision_pkg.tools.launch_arguments",
                    reason="the tools/ layer is not installed (the pip wheel holds core/ and viz/ only)")
from my_collision_pkg.tools.launch_arguments import (  # noqa: E402
    ARGUMENT_NAMES, LAUNCH_OWN_CONFIGURATIONS, LaunchArgumentError, arguments_from_configurations,
    check_argument_names, resolve_launch, resolve_launch_configurations)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "config")


@dataclass
class StandInContext:
    """What the launch file reads of ``launch.LaunchContext``: its launch configurations."""
    launch_configurations: dict[str, str] = field(default_factory=dict)


def resolve_context(**configurations):
    return resolve_launch_configurations(StandInContext(dict(configurations)), config_dir=CONFIG,
                                         package_installed=lambda package: True)


def one_line_error(call, *args, **kwargs) -> str:
    with pytest.raises(LaunchArgumentError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def robot_urdf(collision: str, name: str = "box_bot") -> str:
    """A two-link robot whose second link has the given ``<collision>`` geometry element."""
    return f"""<robot name="{name}">
  <link name="base"/>
  <link name="arm"><collision><geometry>{collision}</geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


# ----- unknown argument names --------------------------------------------------------------
def test_a_misspelled_argument_is_refused_with_did_you_mean():
    message = one_line_error(resolve_context, urdff="/nonexistent.urdf")
    assert message == "urdff:=/nonexistent.urdf: unknown launch argument, did you mean 'urdf'?"


def test_a_misspelling_next_to_the_declared_arguments_is_still_refused():
    # what launch_configurations holds: every declared argument (its default) and the typo
    configurations = {name: "x" for name in ARGUMENT_NAMES}
    configurations["sceen"] = "none"
    message = one_line_error(arguments_from_configurations, configurations)
    assert message.startswith("sceen:=none: unknown launch argument, did you mean 'scene'?")


def test_a_name_close_to_nothing_lists_the_valid_names():
    message = one_line_error(resolve_context, use_sim_time="true")
    assert message.startswith("use_sim_time:=true: unknown launch argument (valid: ")
    for name in ARGUMENT_NAMES:
        assert name in message


def test_every_unknown_name_is_named_in_one_line():
    message = one_line_error(check_argument_names, {"rvis": "true", "zzz": "1"})
    assert "rvis:=true: unknown launch argument, did you mean 'rviz'?" in message
    assert "zzz:=1: unknown launch argument" in message and "(valid: urdf," in message


def test_launchs_own_configurations_are_not_arguments():
    configurations = {name: "v" for name in LAUNCH_OWN_CONFIGURATIONS}
    configurations["rviz"] = "false"
    assert arguments_from_configurations(configurations) == {"rviz": "false"}


def test_the_launch_configurations_reach_the_plan():
    plan = resolve_context(scene="none", rviz="false", **{"launch-prefix": "nice"})
    assert plan.scene_path == "" and plan.root_link == "panda_link0"


# ----- collision geometry checked before anything starts -------------------------------------
def test_a_box_of_negative_size_is_refused_naming_the_link_and_the_size(tmp_path):
    urdf = write(tmp_path / "bad_box.urdf", robot_urdf('<box size="-1 0.1 0.1"/>'))
    message = one_line_error(resolve_context, urdf=urdf, scene="none")
    assert message.startswith(f"urdf:={urdf}: collision geometry: 'arm': box size")
    assert "box size" in message and "-1.0" in message and "positive" in message


def test_a_missing_mesh_file_is_refused_naming_the_mesh_and_where_it_looked(tmp_path):
    urdf = write(tmp_path / "missing_mesh.urdf", robot_urdf('<mesh filename="meshes/arm.stl"/>'))
    message = one_line_error(resolve_context, urdf=urdf, scene="none")
    assert message.startswith(f"urdf:={urdf}: collision geometry: mesh 'meshes/arm.stl' of 'arm': ")
    assert "file not found" in message and str(tmp_path / "meshes" / "arm.stl") in message


def test_a_missing_package_mesh_is_refused(tmp_path):
    urdf = write(tmp_path / "package_mesh.urdf", robot_urdf('<mesh filename="package://no_such_pkg/arm.stl"/>'))
    message = one_line_error(resolve_context, urdf=urdf, scene="none")
    assert "mesh 'package://no_such_pkg/arm.stl' of 'arm'" in message and "no_such_pkg" in message


def test_a_mesh_found_relative_to_the_urdf_passes_and_an_unreadable_one_is_refused(tmp_path):
    (tmp_path / "meshes").mkdir()
    trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(str(tmp_path / "meshes" / "arm.stl"))
    urdf = write(tmp_path / "mesh.urdf", robot_urdf('<mesh filename="meshes/arm.stl"/>'))
    assert resolve_context(urdf=urdf, scene="none").root_link == "base"
    (tmp_path / "meshes" / "empty.obj").write_text("# no faces\n")
    urdf = write(tmp_path / "empty_mesh.urdf", robot_urdf('<mesh filename="meshes/empty.obj"/>'))
    message = one_line_error(resolve_context, urdf=urdf, scene="none")
    assert "mesh 'meshes/empty.obj' of 'arm'" in message


def test_a_mesh_scale_of_zero_is_refused(tmp_path):
    (tmp_path / "arm.stl").write_bytes(trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(file_type="stl"))
    urdf = write(tmp_path / "flat.urdf", robot_urdf('<mesh filename="arm.stl" scale="1 0 1"/>'))
    message = one_line_error(resolve_context, urdf=urdf, scene="none")
    assert "'arm': mesh scale" in message


XACRO_ROBOT = """<robot name="xbot" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="arm_length" default="0.5"/>
  <link name="base"/>
  <link name="arm"><collision><geometry><box size="$(arg arm_length) 0.1 0.1"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_a_bad_size_made_by_a_xacro_argument_is_refused_naming_both(tmp_path):
    urdf = write(tmp_path / "arm.urdf.xacro", XACRO_ROBOT)
    assert resolve_context(urdf=urdf, scene="none").root_link == "base"
    message = one_line_error(resolve_context, urdf=urdf, scene="none", xacro_args="arm_length:=-1")
    assert message.startswith(f"urdf:={urdf} (xacro_args:=arm_length:=-1): collision geometry: 'arm': ")
    assert "box size [-1.0, 0.1, 0.1]" in message


def test_a_world_objects_missing_mesh_is_refused_naming_the_scene_and_the_object(tmp_path):
    world = write(tmp_path / "world.yaml", "frame_id: panda_link0\nobjects:\n  - id: statue\n    shapes:\n"
                                           "      - {type: mesh, uri: statue.stl}\n")
    message = one_line_error(resolve_context, scene=world)
    assert message.startswith(f"scene:={world}: collision geometry: mesh ") and "statue.stl' of 'statue'" in message


def test_the_panda_and_its_world_pass_the_geometry_check():
    plan = resolve_launch({}, config_dir=CONFIG, package_installed=lambda package: True)
    assert plan.root_link == "panda_link0" and plan.scene_path.endswith("panda_world.yaml")


def test_the_geometry_check_can_be_left_out(tmp_path):
    urdf = write(tmp_path / "bad_box.urdf", robot_urdf('<box size="-1 0.1 0.1"/>'))
    plan = resolve_launch({"urdf": urdf, "scene": "none"}, config_dir=CONFIG,
                          package_installed=lambda package: True, check_geometry=False)
    assert plan.urdf_path == urdf
