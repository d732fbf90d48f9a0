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


class LaunchArgumentError(CollisionPkgError):
    """A launch argument is invalid; the message is one line that names it."""


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
        from my_collision_pkg.core.scene.loading import is_xacro

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


def resolve_launch(values: Mapping[str, str], *, config_dir: str,
                   package_installed: Callable[[str], bool]) -> LaunchPlan:
    """Check the launch arguments and resolve them to a :class:`LaunchPlan`.

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
    from my_collision_pkg.core.scene.loading import panda_paths, parse_xacro_args, read_description
    from my_collision_pkg.core.model.robot_model import RobotModel
    from my_collision_pkg.core.model.srdf import parse_srdf
    from my_collision_pkg.core.scene.world_file import load_world_file

    unknown = sorted(set(values) - set(ARGUMENT_NAMES))
    if unknown:
        raise LaunchArgumentError(f"unknown launch argument(s) {', '.join(unknown)}; known: {', '.join(ARGUMENT_NAMES)}")
    v = {argument.name: argument.default for argument in ARGUMENTS}
    v.update(values)

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

    try:
        xacro_args = parse_xacro_args(v["xacro_args"])
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"xacro_args:={v['xacro_args']}: {exc}") from exc

    default_robot = v["urdf"].strip() == DEFAULT_ROBOT
    try:
        panda_urdf, panda_srdf = panda_paths() if default_robot else (None, None)
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"urdf:={DEFAULT_ROBOT}: {exc}") from exc
    urdf_path = panda_urdf if default_robot else _file_argument("urdf", v["urdf"])
    try:
        urdf_xml = read_description(urdf_path, "URDF", xacro_args)
        robot = RobotModel.from_urdf_string(urdf_xml)
    except CollisionPkgError as exc:
        raise LaunchArgumentError(f"urdf:={v['urdf']}: {exc}") from exc

    srdf = v["srdf"].strip()
    if is_none(srdf):
        srdf_path = ""
    elif srdf == AUTO:
        srdf_path = panda_srdf if default_robot else ""
    else:
        srdf_path = _file_argument("srdf", srdf)
    srdf_xml = ""
    warnings = []
    if srdf_path:
        try:
            srdf_xml = read_description(srdf_path, "SRDF", xacro_args)
            semantic = parse_srdf(srdf_xml, robot)
        except CollisionPkgError as exc:
            raise LaunchArgumentError(f"srdf:={srdf}: {exc}") from exc
        # unknown names are skipped, as MoveIt does; an SRDF of another robot shows here
        warnings += [f"srdf:={srdf}: {warning}" for warning in semantic.warnings]

    scene = v["scene"].strip()
    if is_none(scene):
        scene_path = ""
    elif scene == AUTO:
        scene_path = os.path.join(config_dir, PANDA_WORLD_FILE) if default_robot else ""
    else:
        scene_path = _file_argument("scene", scene)
    if scene_path:
        try:
            load_world_file(scene_path, robot.root_link)
        except CollisionPkgError as exc:
            raise LaunchArgumentError(f"scene:={scene}: {exc}") from exc

    fixed_frame = v["fixed_frame"].strip()
    if not fixed_frame:
        raise LaunchArgumentError("fixed_frame:= needs a frame name (or 'auto' for the URDF's root link)")
    if fixed_frame == AUTO:
        fixed_frame = robot.root_link
    elif fixed_frame not in robot.link_names:
        warnings.append(f"fixed_frame:={fixed_frame} is not a link of robot '{robot.name}'; "
                        "RViz shows nothing until some TF publisher provides it")
    return LaunchPlan(urdf_path=urdf_path, srdf_path=srdf_path, scene_path=scene_path, xacro_args=xacro_args,
                      robot_description=urdf_xml, robot_description_semantic=srdf_xml, root_link=robot.root_link,
                      fixed_frame=fixed_frame, rviz=rviz, robot_state_publisher=start_rsp,
                      joint_states_topic=joint_states_topic, warnings=tuple(warnings))


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
