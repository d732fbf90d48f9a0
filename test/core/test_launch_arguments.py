"""The launch file's arguments and checks (my_collision_pkg.tools.launch_arguments), without ROS.

The launch file itself needs ``launch``/``launch_ros`` (not installable here); it is a
thin adapter over this module, and its structure is checked by reading its source.
"""
from __future__ import annotations

import ast
import os
import re

import pytest

pytest.importorskip("my_collision_pkg.tools.launch_arguments",
                    reason="the tools/ layer is not installed (the pip wheel holds core/ and viz/ only)")
from my_collision_pkg.tools.launch_arguments import (  # noqa: E402
    ARGUMENTS, AUTO, DEFAULT_JOINT_STATES_TOPIC, NONE, LaunchArgumentError, is_none, parse_bool,
    resolve_launch, rviz_config_text)
from my_collision_pkg.core.scene.loading import example_robot_paths, panda_paths, read_description

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "config")
LAUNCH_FILE = os.path.join(REPO, "launch", "collision.launch.py")
README = os.path.join(REPO, "docs", "launch.md")
TWO_ARMS_URDF = os.path.join(REPO, "test", "data", "two_arms.urdf.xacro")
TWO_ARMS_SRDF = os.path.join(REPO, "test", "data", "two_arms.srdf.xacro")


def everything_installed(package: str) -> bool:
    return True


def nothing_installed(package: str) -> bool:
    return False


def resolve(installed=everything_installed, **values):
    return resolve_launch(values, config_dir=CONFIG, package_installed=installed)


@pytest.fixture(scope="module")
def ur5():
    return example_robot_paths("ur_description", "ur5_robot.urdf", "ur5.srdf")


# ----- the argument table ---------------------------------------------------------
def readme_argument_table() -> dict[str, str]:
    """``| `name` | `default` | what |`` rows of the README's launch-argument table ("(empty)": '')."""
    with open(README, encoding="utf-8") as stream:
        text = stream.read()
    section = text[text.index("### Launch arguments"):]
    section = section[:section.index("\n#", 1)]
    rows = re.findall(r"^\| `([a-z_]+)` \| (`[^`]*`|\(empty\)) \|", section, re.MULTILINE)
    return {name: "" if default == "(empty)" else default.strip("`") for name, default in rows}


def test_the_readme_table_lists_every_argument_with_its_default():
    assert readme_argument_table() == {argument.name: argument.default for argument in ARGUMENTS}


def test_arguments_are_unique_and_described():
    names = [argument.name for argument in ARGUMENTS]
    assert len(names) == len(set(names))
    assert names[:2] == ["urdf", "srdf"]
    for argument in ARGUMENTS:
        assert isinstance(argument.default, str) and len(argument.description) > 20
    described = {argument.name: argument.description for argument in ARGUMENTS}
    for name in ("srdf", "scene"):
        assert f"'{NONE}'" in described[name] and f"'{AUTO}'" in described[name]
    assert "xacro" in described["urdf"] and "xacro" in described["srdf"]


def test_the_launch_file_declares_the_table_and_starts_nodes_only_after_the_checks():
    tree = ast.parse(open(LAUNCH_FILE, encoding="utf-8").read())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "my_collision_pkg.tools.launch_arguments" for alias in node.names}
    assert {"ARGUMENTS", "resolve_launch_configurations"} <= imported
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def calls(node, name):
        return [c for c in ast.walk(node) if isinstance(c, ast.Call)
                and getattr(c.func, "id", getattr(c.func, "attr", None)) == name]

    generate = functions["generate_launch_description"]
    assert calls(generate, "DeclareLaunchArgument") and calls(generate, "OpaqueFunction")
    assert not calls(generate, "Node")
    # the OpaqueFunction only starts the checks (a coroutine) and waits for their end
    assert calls(functions["_start"], "OpaqueCoroutine") and calls(functions["_start"], "OnExecutionComplete")
    assert not calls(functions["_start"], "Node") and not calls(functions["_start"], "_nodes")
    # the checks read the launch configurations (every name:=value given) in a thread
    assert calls(functions["_work"], "resolve_launch_configurations")
    assert calls(functions["run"], "Thread")
    # nodes are made in _nodes only, which only start_nodes calls, after a plan was found
    nodes = [c for f in functions.values() for c in calls(f, "Node")]
    assert nodes and all(c in calls(functions["_nodes"], "Node") for c in nodes)
    callers = [name for name, f in functions.items() if calls(f, "_nodes")]
    assert callers == ["start_nodes"]
    guard = functions["start_nodes"].body[1]
    assert isinstance(guard, ast.If) and "self.plan is None" in ast.unparse(guard.test)
    # the validator's exit is watched
    assert calls(functions["_nodes"], "OnProcessExit")


# ----- the default robot -----------------------------------------------------------
def test_defaults_are_the_panda_its_srdf_its_world_and_its_root_frame():
    plan = resolve()
    urdf, srdf = panda_paths()
    assert (plan.urdf_path, plan.srdf_path) == (urdf, srdf)
    assert plan.scene_path == os.path.join(CONFIG, "panda_world.yaml")
    assert plan.root_link == plan.fixed_frame == "panda_link0"
    assert plan.rviz is False and plan.robot_state_publisher is True
    assert plan.joint_states_topic == DEFAULT_JOINT_STATES_TOPIC
    assert plan.xacro_args == {} and plan.warnings == ()
    assert plan.robot_description == open(urdf, encoding="utf-8").read()
    assert plan.validator_parameters() == {"urdf_path": urdf, "srdf_path": srdf, "scene_path": plan.scene_path}


@pytest.mark.parametrize("spelling", [NONE, "", "''", '""', " none "])
def test_none_switches_the_srdf_and_the_world_off(spelling):
    plan = resolve(srdf=spelling, scene=spelling)
    assert plan.srdf_path == "" and plan.scene_path == "" and plan.robot_description_semantic == ""
    assert plan.validator_parameters()["scene_path"] == "" and plan.validator_parameters()["srdf_path"] == ""
    assert is_none(spelling)


def test_the_panda_by_its_path_is_another_robot_for_the_defaults():
    urdf, _ = panda_paths()
    plan = resolve(urdf=urdf)
    assert plan.srdf_path == "" and plan.scene_path == ""


# ----- another robot -----------------------------------------------------------------
def test_another_robot_gets_no_panda_world_and_its_own_root_frame(ur5):
    urdf, srdf = ur5
    plan = resolve(urdf=urdf, srdf=srdf)
    assert plan.scene_path == "" and plan.srdf_path == srdf
    assert plan.root_link == plan.fixed_frame == "world"
    assert plan.validator_parameters() == {"urdf_path": urdf, "srdf_path": srdf, "scene_path": ""}


def test_the_readme_ur5_example_resolves_with_its_world(ur5):
    urdf, srdf = ur5
    plan = resolve(urdf=urdf, srdf=srdf, scene=os.path.join(CONFIG, "ur5_world.yaml"))
    assert plan.scene_path == os.path.join(CONFIG, "ur5_world.yaml") and plan.fixed_frame == "world"


def test_the_panda_world_with_another_robot_fails_naming_scene_and_frames(ur5):
    urdf, srdf = ur5
    with pytest.raises(LaunchArgumentError, match=r"^scene:=.*panda_world\.yaml: .*'panda_link0'.*'world'"):
        resolve(urdf=urdf, srdf=srdf, scene=os.path.join(CONFIG, "panda_world.yaml"))


def test_an_srdf_of_another_robot_warns_for_each_unknown_name(ur5):
    urdf, _ = ur5
    _, panda_srdf = panda_paths()
    plan = resolve(urdf=urdf, srdf=panda_srdf)
    assert plan.warnings and all(w.startswith(f"srdf:={panda_srdf}: ") for w in plan.warnings)
    assert any("panda_link" in w for w in plan.warnings)


def test_an_explicit_fixed_frame_is_kept_and_an_unknown_one_warned_of(ur5):
    urdf, _ = ur5
    assert resolve(urdf=urdf, fixed_frame="base_link").fixed_frame == "base_link"
    plan = resolve(urdf=urdf, fixed_frame="map")
    assert plan.fixed_frame == "map" and any("fixed_frame:=map" in w for w in plan.warnings)


# ----- xacro -------------------------------------------------------------------------------
def test_xacro_files_without_arguments_go_to_the_node_by_path():
    plan = resolve(urdf=TWO_ARMS_URDF, srdf=TWO_ARMS_SRDF)
    assert plan.root_link == "base" and "<xacro:" not in plan.robot_description
    assert plan.validator_parameters() == {"urdf_path": TWO_ARMS_URDF, "srdf_path": TWO_ARMS_SRDF,
                                           "scene_path": ""}


def test_xacro_arguments_reach_both_files_and_the_node_gets_the_expansion():
    plan = resolve(urdf=TWO_ARMS_URDF, srdf=TWO_ARMS_SRDF, xacro_args="prefix:=r_ arms_may_touch:=true")
    assert plan.xacro_args == {"prefix": "r_", "arms_may_touch": "true"}
    assert plan.root_link == plan.fixed_frame == "r_base"
    parameters = plan.validator_parameters()
    assert set(parameters) == {"robot_description", "robot_description_semantic", "scene_path"}
    assert parameters["robot_description"] == read_description(TWO_ARMS_URDF, xacro_args=plan.xacro_args)
    assert 'link1="r_left_arm"' in parameters["robot_description_semantic"]
    assert plan.warnings == ()


def test_a_failing_xacro_is_named_by_its_argument(tmp_path):
    bad = tmp_path / "bad.urdf.xacro"
    bad.write_text('<robot name="b" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="$(arg nope)"/></robot>')
    with pytest.raises(LaunchArgumentError, match=r"^urdf:=.*bad\.urdf\.xacro: .*xacro failed.*nope"):
        resolve(urdf=str(bad))


def test_malformed_xacro_args_are_named():
    with pytest.raises(LaunchArgumentError, match=r"^xacro_args:=prefix: .*'prefix'"):
        resolve(xacro_args="prefix")


# ----- faults found before anything starts ----------------------------------------------
def test_an_unreadable_urdf_is_one_line_naming_the_file(tmp_path):
    with pytest.raises(LaunchArgumentError) as info:
        resolve(urdf=str(tmp_path / "absent.urdf"))
    message = str(info.value)
    assert message.startswith("urdf:=") and "absent.urdf" in message and "does not exist" in message
    assert "\n" not in message
    with pytest.raises(LaunchArgumentError, match=r"^urdf:=.*is a folder"):
        resolve(urdf=str(tmp_path))


def test_a_malformed_urdf_is_named(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text('<robot name="x"><link name="a"/><joint name="j" type="fixed">'
                    '<parent link="a"/><child link="ghost"/></joint></robot>')
    with pytest.raises(LaunchArgumentError, match=r"^urdf:=.*broken\.urdf: .*ghost"):
        resolve(urdf=str(path))


def test_missing_srdf_and_scene_files_are_named(tmp_path):
    with pytest.raises(LaunchArgumentError, match=r"^srdf:=.*absent\.srdf"):
        resolve(srdf=str(tmp_path / "absent.srdf"))
    with pytest.raises(LaunchArgumentError, match=r"^scene:=.*absent\.yaml"):
        resolve(scene=str(tmp_path / "absent.yaml"))


def test_rviz_without_rviz2_fails_before_anything_starts():
    with pytest.raises(LaunchArgumentError, match=r"^rviz:=true but the ROS package 'rviz2' is not installed"):
        resolve(installed=lambda package: package != "rviz2", rviz="true")
    assert resolve(installed=lambda package: package != "rviz2", rviz="false").rviz is False
    assert resolve(rviz="true").rviz is True


def test_robot_state_publisher_missing_fails_unless_switched_off():
    with pytest.raises(LaunchArgumentError, match=r"^robot_state_publisher:=true .*robot_state_publisher:=false"):
        resolve(installed=nothing_installed)
    plan = resolve(installed=nothing_installed, robot_state_publisher="false")
    assert plan.robot_state_publisher is False and plan.rviz is False


def test_unknown_arguments_and_non_booleans_are_refused():
    with pytest.raises(LaunchArgumentError, match=r"^world:=x.yaml: unknown launch argument \(valid: urdf, srdf, "):
        resolve(world="x.yaml")
    with pytest.raises(LaunchArgumentError, match=r"^rviz:=maybe is not true or false"):
        resolve(rviz="maybe")
    assert parse_bool("x", "True") is True and parse_bool("x", "0") is False


# ----- the RViz config ---------------------------------------------------------------------
def test_the_rviz_config_gets_the_robots_fixed_frame():
    template = open(os.path.join(CONFIG, "contacts.rviz"), encoding="utf-8").read()
    text = rviz_config_text(template, "world")
    changed = [(a, b) for a, b in zip(template.splitlines(), text.splitlines()) if a != b]
    assert len(changed) == 1 and changed[0][1].strip() == "Fixed Frame: world"
    assert len(text.splitlines()) == len(template.splitlines())
    # displays that follow the fixed frame are left following it
    assert text.count("<Fixed Frame>") == template.count("<Fixed Frame>") > 0
    with pytest.raises(LaunchArgumentError, match="0 'Fixed Frame:' lines"):
        rviz_config_text("Visualization Manager: {}\n", "world")
