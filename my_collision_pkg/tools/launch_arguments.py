"""The arguments of ``launch/collision.launch.py`` and the start-up plan they resolve to.

The launch file is a thin adapter: it declares :data:`ARGUMENTS`, hands their values
to :func:`resolve_launch` *before* it returns any node, and starts what the returned
:class:`LaunchPlan` says. Everything that can be wrong with the arguments (a file
that cannot be read, a xacro that fails, an SRDF or a world that does not fit the
robot, RViz asked for but not installed) is found here, as a
:class:`LaunchArgumentError` whose message is one line naming the argument. This
module imports neither ``launch`` nor ``rclpy``, so it is tested without ROS.

Spellings: ``none`` switches the SRDF or the world off (``ros2 launch`` refuses an
empty ``scene:=``); ``auto`` is the default of ``srdf``, ``scene`` and
``fixed_frame`` and means "what fits the robot": the Panda's SRDF and
``config/panda_world.yaml`` for the default robot (``urdf:=panda``), nothing for any
other robot, and the URDF's root link (the planning frame) as the RViz fixed frame.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.srdf import parse_srdf
from my_collision_pkg.core.scene.loading import is_xacro, panda_paths, parse_xacro_args, read_description
from my_collision_pkg.core.scene.world_file import load_world_file

NONE = "none"
AUTO = "auto"
DEFAULT_ROBOT = "panda"
DEFAULT_JOINT_STATES_TOPIC = "/contact_markers/joint_states"
PANDA_WORLD_FILE = "panda_world.yaml"
RVIZ_CONFIG_FILE = "contacts.rviz"
RVIZ_PACKAGE = "rviz2"
ROBOT_STATE_PUBLISHER_PACKAGE = "robot_state_publisher"
# The empty string and a quoted empty string (what `scene:="''"` reaches the launch
# file as) mean "none" too, so the old spellings fail no more.
_NONE_SPELLINGS = (NONE, "", "''", '""')
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
_FIXED_FRAME_LINE = re.compile(r"^(?P<indent>\s*)Fixed Frame:.*$", re.MULTILINE)


class LaunchArgumentError(ValueError):
    """A launch argument is invalid; the message is one line that names it.

    The tools' own error (a ``ValueError``), not one of the core's: a core error met
    while reading a file an argument names is re-raised as this, from that cause.
    """


@dataclass(frozen=True)
class LaunchArgument:
    """One ``name:=value`` argument of the launch file."""

    name: str
    default: str
    description: str


ARGUMENTS: tuple[LaunchArgument, ...] = (
    LaunchArgument(
        "urdf", DEFAULT_ROBOT,
        "robot description: a .urdf or .urdf.xacro file; 'panda' (default) is the Franka Panda of "
        "example-robot-data"),
    LaunchArgument(
        "srdf", AUTO,
        "semantic description (groups, disabled pairs): a .srdf or .srdf.xacro file, or 'none'; "
        "'auto' (default): the Panda's SRDF for urdf:=panda, none for any other robot"),
    LaunchArgument(
        "xacro_args", "",
        "arguments of the xacro files given as urdf and srdf, as on xacro's command line: "
        "'name:=value other:=value'"),
    LaunchArgument(
        "scene", AUTO,
        "world YAML loaded at start-up, or 'none'; 'auto' (default): config/panda_world.yaml for "
        "urdf:=panda, none for any other robot"),
    LaunchArgument(
        "fixed_frame", AUTO,
        "RViz fixed frame; 'auto' (default): the URDF's root link, the frame of contacts and world objects"),
    LaunchArgument(
        "rviz", "false",
        "also start RViz with config/contacts.rviz (true/false)"),
    LaunchArgument(
        "robot_state_publisher", "true",
        "also start robot_state_publisher (/robot_description and TF, which RViz needs) (true/false)"),
    LaunchArgument(
        "joint_states", DEFAULT_JOINT_STATES_TOPIC,
        "joint states robot_state_publisher follows: by default the last contact report's; "
        "/joint_states follows a live robot"),
)
ARGUMENT_NAMES = tuple(argument.name for argument in ARGUMENTS)


@dataclass(frozen=True)
class LaunchPlan:
    """What to start, resolved from the launch arguments. Paths are absolute; '' is none."""

    urdf_path: str
    srdf_path: str
    scene_path: str
    xacro_args: dict[str, str]
    robot_description: str          # the URDF's XML, xacro expanded
    robot_description_semantic: str  # the SRDF's XML, xacro expanded ('' for none)
    root_link: str                  # the planning frame of the validator
    fixed_frame: str
    rviz: bool
    robot_state_publisher: bool
    joint_states_topic: str
    warnings: tuple[str, ...] = field(default=())

    def validator_parameters(self) -> dict[str, str]:
        """The collision_validator's model parameters.

        Files go by path (the node reads and expands them itself, and takes relative
        mesh paths from the URDF's folder), except a xacro file that needs
        ``xacro_args``: the node has no such parameter, so it gets the expanded XML.
        """
        expand = bool(self.xacro_args)
        parameters = {"scene_path": self.scene_path}
        if expand and is_xacro(self.urdf_path):
            parameters["robot_description"] = self.robot_description
        else:
            parameters["urdf_path"] = self.urdf_path
        if expand and self.srdf_path and is_xacro(self.srdf_path):
            parameters["robot_description_semantic"] = self.robot_description_semantic
        else:
            parameters["srdf_path"] = self.srdf_path
        return parameters


def parse_bool(name: str, value: str) -> bool:
    """A true/false launch argument.

    Raises
    ------
    LaunchArgumentError
        For anything but true/false (or 1/0, yes/no, on/off), naming the argument.
    """
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise LaunchArgumentError(f"{name}:={value} is not true or false")


def is_none(value: str) -> bool:
    """Whether an ``srdf`` or ``scene`` value switches the file off."""
    return value.strip() in _NONE_SPELLINGS


def _file_argument(name: str, value: str) -> str:
    path = os.path.abspath(os.path.expanduser(value.strip()))
    if not os.path.isfile(path):
        why = "is a folder" if os.path.isdir(path) else "does not exist"
        raise LaunchArgumentError(f"{name}:={value}: the file '{path}' {why}")
    return path


@dataclass(frozen=True)
class _Robot:
    """The robot the arguments name: its files, the expanded URDF and the parsed model."""
    urdf_path: str
    urdf_xml: str
    model: RobotModel
    default_srdf_path: str           # the Panda's SRDF for urdf:=panda, '' for any other robot
    is_default: bool


def _all_values(values: Mapping[str, str]) -> dict[str, str]:
    """Every argument's value: the given ones over the defaults. Refuses unknown names."""
    unknown = sorted(set(values) - set(ARGUMENT_NAMES))
    if unknown:
        raise LaunchArgumentError(f"unknown launch argument(s) {', '.join(unknown)}; known: {', '.join(ARGUMENT_NAMES)}")
    v = {argument.name: argument.default for argument in ARGUMENTS}
    v.update(values)
    return v


def _requested_nodes(v: Mapping[str, str], package_installed: Callable[[str], bool]) -> tuple[bool, bool, str]:
    """``(rviz, robot_state_publisher, joint_states topic)``: the optional nodes, each installed if asked for."""
    rviz = parse_bool("rviz", v["rviz"])
    start_rsp = parse_bool("robot_state_publisher", v["robot_state_publisher"])
    if rviz and not package_installed(RVIZ_PACKAGE):
        raise LaunchArgumentError(f"rviz:=true but the ROS package '{RVIZ_PACKAGE}' is not installed "
                                  "(install ros-<distro>-rviz2, or give rviz:=false)")
    if start_rsp and not package_installed(ROBOT_STATE_PUBLISHER_PACKAGE):
        raise LaunchArgumentError(
            f"robot_state_publisher:=true but the ROS package '{ROBOT_STATE_PUBLISHER_PACKAGE}' is not installed "
            "(install ros-<distro>-robot-state-publisher, or give robot_state_publisher:=false)")
    joint_states_topic = v["joint_states"].strip()
    if not joint_states_topic:
        raise LaunchArgumentError("joint_states:= needs a topic name")
    return rviz, start_rsp, joint_states_topic


def _xacro_arguments(text: str) -> dict[str, str]:
    try:
        return parse_xacro_args(text)
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"xacro_args:={text}: {exc}") from exc


def _load_robot(urdf: str, xacro_args: Mapping[str, str]) -> _Robot:
    """The ``urdf`` argument read (xacro expanded) and parsed: 'panda' or a file."""
    is_default = urdf.strip() == DEFAULT_ROBOT
    try:
        panda_urdf, panda_srdf = panda_paths() if is_default else (None, None)
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"urdf:={DEFAULT_ROBOT}: {exc}") from exc
    urdf_path = panda_urdf if is_default else _file_argument("urdf", urdf)
    try:
        urdf_xml = read_description(urdf_path, "URDF", xacro_args)
        model = RobotModel.from_urdf_string(urdf_xml)
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"urdf:={urdf}: {exc}") from exc
    return _Robot(urdf_path, urdf_xml, model, panda_srdf or "", is_default)


def _load_semantic(srdf: str, robot: _Robot, xacro_args: Mapping[str, str]) -> tuple[str, str, list[str]]:
    """``(srdf path, SRDF XML, warnings)`` of the ``srdf`` argument ('' and '' for none), checked against the robot."""
    srdf = srdf.strip()
    if is_none(srdf):
        return "", "", []
    srdf_path = robot.default_srdf_path if srdf == AUTO else _file_argument("srdf", srdf)
    if not srdf_path:
        return "", "", []
    try:
        srdf_xml = read_description(srdf_path, "SRDF", xacro_args)
        semantic = parse_srdf(srdf_xml, robot.model)
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"srdf:={srdf}: {exc}") from exc
    # unknown names are skipped, as MoveIt does; an SRDF of another robot shows here
    return srdf_path, srdf_xml, [f"srdf:={srdf}: {warning}" for warning in semantic.warnings]


def _check_world(scene: str, robot: _Robot, config_dir: str) -> str:
    """The world file of the ``scene`` argument ('' for none), loaded once to check it fits the robot."""
    scene = scene.strip()
    if is_none(scene):
        return ""
    if scene == AUTO:
        scene_path = os.path.join(config_dir, PANDA_WORLD_FILE) if robot.is_default else ""
    else:
        scene_path = _file_argument("scene", scene)
    if scene_path:
        try:
            load_world_file(scene_path, robot.model.root_link)
        except CollisionPkgError as exc:
            raise LaunchArgumentError(f"scene:={scene}: {exc}") from exc
    return scene_path


def _fixed_frame(value: str, robot: RobotModel) -> tuple[str, list[str]]:
    """RViz's fixed frame (``auto``: the root link) and a warning when it is no link of the robot."""
    fixed_frame = value.strip()
    if not fixed_frame:
        raise LaunchArgumentError("fixed_frame:= needs a frame name (or 'auto' for the URDF's root link)")
    if fixed_frame == AUTO:
        return robot.root_link, []
    if fixed_frame not in robot.link_names:
        return fixed_frame, [f"fixed_frame:={fixed_frame} is not a link of robot '{robot.name}'; "
                             "RViz shows nothing until some TF publisher provides it"]
    return fixed_frame, []


def resolve_launch(values: Mapping[str, str], *, config_dir: str,
                   package_installed: Callable[[str], bool]) -> LaunchPlan:
    """Check the launch arguments and resolve them to a :class:`LaunchPlan`.

    The steps, each failing with the argument it reads: the optional nodes, the xacro
    arguments, the robot (URDF), its SRDF, the world, the RViz fixed frame. Files are
    read and parsed by the core's own loading functions, as the node will read them.

    Parameters
    ----------
    values : mapping of str to str
        Argument name to value, as ``ros2 launch`` gives them; missing ones take
        their default from :data:`ARGUMENTS`.
    config_dir : str
        The package's ``config`` folder (holds the Panda's world and the RViz config).
    package_installed : callable
        Whether a ROS package (``rviz2``, ``robot_state_publisher``) is installed.

    Raises
    ------
    LaunchArgumentError
        One line naming the argument at fault: an unknown argument, a file that cannot
        be read, a xacro that fails, a URDF, SRDF or world file that is malformed or
        does not fit the robot, a boolean that is not one, or a node asked for whose
        package is not installed.
    """
    v = _all_values(values)
    rviz, start_rsp, joint_states_topic = _requested_nodes(v, package_installed)
    xacro_args = _xacro_arguments(v["xacro_args"])
    robot = _load_robot(v["urdf"], xacro_args)
    srdf_path, srdf_xml, warnings = _load_semantic(v["srdf"], robot, xacro_args)
    scene_path = _check_world(v["scene"], robot, config_dir)
    fixed_frame, frame_warnings = _fixed_frame(v["fixed_frame"], robot.model)
    return LaunchPlan(urdf_path=robot.urdf_path, srdf_path=srdf_path, scene_path=scene_path, xacro_args=xacro_args,
                      robot_description=robot.urdf_xml, robot_description_semantic=srdf_xml,
                      root_link=robot.model.root_link, fixed_frame=fixed_frame, rviz=rviz,
                      robot_state_publisher=start_rsp, joint_states_topic=joint_states_topic,
                      warnings=tuple(warnings + frame_warnings))


def rviz_config_text(template: str, fixed_frame: str) -> str:
    """An RViz config (``config/contacts.rviz``'s text) with its global fixed frame set.

    Raises
    ------
    LaunchArgumentError
        If the template has no ``Fixed Frame:`` line.
    """
    text, count = _FIXED_FRAME_LINE.subn(lambda m: f"{m.group('indent')}Fixed Frame: {fixed_frame}", template)
    if count != 1:
        raise LaunchArgumentError(f"the RViz config has {count} 'Fixed Frame:' lines, expected 1")
    return text
