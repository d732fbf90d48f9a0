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

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from my_collision_pkg.core.errors import CollisionPkgError, ModelError
from my_collision_pkg.core.geometry.mesh_files import MeshResolver, load_mesh_file
from my_collision_pkg.core.geometry.shape_geometry import build_shape
from my_collision_pkg.core.model.example_robots import example_robot_data_share
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.shapes import MAX_COORDINATE_M, MeshRef, ShapeSpec, is_primitive
from my_collision_pkg.core.model.srdf import parse_srdf
from my_collision_pkg.core.scene.loading import is_xacro, panda_paths, parse_xacro_args, read_description
from my_collision_pkg.core.scene.objects import AddObject
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
# Launch configurations that launch and launch_ros set themselves (ros2 launch --launch-prefix,
# PushRosNamespace, SetParameter, SetRemap): never one of this file's arguments, never refused.
LAUNCH_OWN_CONFIGURATIONS = frozenset({"launch-prefix", "launch-prefix-filter", "ros_namespace",
                                       "global_params", "ros_remaps"})


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


def check_argument_names(values: Mapping[str, str] | Iterable[str]) -> None:
    """Refuse every name that is not one of :data:`ARGUMENT_NAMES`.

    ``values`` is a mapping of name to value (the message then shows ``name:=value``)
    or just names. A name close to a known one (``urdff``) gets a "did you mean";
    any other gets the list of valid names.

    Raises
    ------
    LaunchArgumentError
        One line naming each unknown argument.
    """
    given = dict(values) if isinstance(values, Mapping) else {name: None for name in values}
    unknown = sorted(set(given) - set(ARGUMENT_NAMES))
    if not unknown:
        return
    faults, suggested_all = [], True
    for name in unknown:
        shown = name if given[name] is None else f"{name}:={given[name]}"
        close = difflib.get_close_matches(name, ARGUMENT_NAMES, n=1)
        if close:
            faults.append(f"{shown}: unknown launch argument, did you mean '{close[0]}'?")
        else:
            faults.append(f"{shown}: unknown launch argument")
            suggested_all = False
    message = "; ".join(faults)
    if not suggested_all:
        message += f" (valid: {', '.join(ARGUMENT_NAMES)})"
    raise LaunchArgumentError(message)


def arguments_from_configurations(configurations: Mapping[str, str]) -> dict[str, str]:
    """This file's argument values out of ``context.launch_configurations``.

    ``launch_configurations`` holds every ``name:=value`` given to the launch file,
    declared or not, besides the ones :data:`LAUNCH_OWN_CONFIGURATIONS` names (set
    by launch and launch_ros themselves, skipped here). Every other name must be one
    of :data:`ARGUMENTS`: a misspelled ``urdff:=...`` is refused instead of being
    ignored. A launch file that includes this one with configurations of its own
    includes it in ``GroupAction(..., scoped=True, forwarding=False)`` (see
    docs/launch.md).

    Raises
    ------
    LaunchArgumentError
        See :func:`check_argument_names`.
    """
    given = {name: value for name, value in configurations.items() if name not in LAUNCH_OWN_CONFIGURATIONS}
    check_argument_names(given)
    return given


def _all_values(values: Mapping[str, str]) -> dict[str, str]:
    """Every argument's value: the given ones over the defaults. Refuses unknown names."""
    check_argument_names(values)
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


def _check_world(scene: str, robot: _Robot, config_dir: str) -> tuple[str, list]:
    """``(path, updates)`` of the ``scene`` argument's world file ('' and [] for none), loaded to check it fits the robot."""
    scene = scene.strip()
    if is_none(scene):
        return "", []
    if scene == AUTO:
        scene_path = os.path.join(config_dir, PANDA_WORLD_FILE) if robot.is_default else ""
    else:
        scene_path = _file_argument("scene", scene)
    updates = []
    if scene_path:
        try:
            updates = load_world_file(scene_path, robot.model.root_link)
        except CollisionPkgError as exc:
            raise LaunchArgumentError(f"scene:={scene}: {exc}") from exc
    return scene_path, updates


def check_shape(spec: ShapeSpec, owner: str, resolver: MeshResolver) -> None:
    """Check one collision shape as the validator will build it, without building a mesh's geometry.

    A primitive is built (what the validator does: sizes finite, positive and within
    the coordinate bound). A mesh is resolved and read (found, readable, triangles),
    its scale and vertices checked; its convex hull and triangle tree, the slow part
    of the validator's start-up (compiled code), are not built here.

    Raises
    ------
    ModelError, MeshError
        Naming ``owner`` (a link or an object id) and the size or the mesh at fault.
    """
    if is_primitive(spec):
        build_shape(spec, owner, resolver)
        return
    if not isinstance(spec, MeshRef):
        return                                  # an inline mesh: none comes from a file
    scale = [abs(float(s)) for s in spec.scale]
    if not all(0.0 < s <= MAX_COORDINATE_M for s in scale):
        raise ModelError(f"'{owner}': mesh scale {list(spec.scale)} must be finite, positive and at most "
                         f"{MAX_COORDINATE_M:g}")
    mesh = load_mesh_file(resolver.resolve(spec.uri, owner), spec.scale, owner, spec.uri)
    # the validator's bound on the scaled vertices (a NaN fails the comparison too)
    largest_m = float(abs(mesh.vertices).max()) if len(mesh.vertices) else 0.0
    if not largest_m <= MAX_COORDINATE_M:
        raise ModelError(f"mesh '{spec.uri}' of '{owner}': has a vertex coordinate of {largest_m:g} m, "
                         f"beyond the bound of {MAX_COORDINATE_M:g} m")


def _mesh_resolver(robot: _Robot, description_by_path: bool,
                   find_package_share: Callable[[str], str | None] | None) -> MeshResolver:
    """The resolver the validator builds: relative mesh paths from the URDF's folder when it gets the path."""
    folders = []
    try:
        folders.append(example_robot_data_share())
    except CollisionPkgError:
        pass
    base_dir = os.path.dirname(robot.urdf_path) if description_by_path else None
    return MeshResolver(folders, base_dir, find_package_share=find_package_share)


def _check_geometry(v: Mapping[str, str], robot: _Robot, resolver: MeshResolver, world_updates) -> None:
    """Every collision shape of the robot and of the world's objects, as the validator will build them."""
    urdf_label = f"urdf:={v['urdf']}" + (f" (xacro_args:={v['xacro_args']})" if v["xacro_args"].strip() else "")
    for element in robot.model.collision_elements:
        try:
            check_shape(element.shape, element.link, resolver)
        except CollisionPkgError as exc:
            raise LaunchArgumentError(f"{urdf_label}: collision geometry: {exc}") from exc
    for update in world_updates:
        if not isinstance(update, AddObject):
            continue
        for shape in update.object.shapes:
            try:
                check_shape(shape.spec, update.object.id, resolver)
            except CollisionPkgError as exc:
                raise LaunchArgumentError(f"scene:={v['scene']}: collision geometry: {exc}") from exc


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
                   package_installed: Callable[[str], bool],
                   find_package_share: Callable[[str], str | None] | None = None,
                   check_geometry: bool = True) -> LaunchPlan:
    """Check the launch arguments and resolve them to a :class:`LaunchPlan`.

    The steps, each failing with the argument it reads: the optional nodes, the xacro
    arguments, the robot (URDF), its SRDF, the world, the collision geometry of the
    robot and of the world's objects, the RViz fixed frame. Files are read and parsed
    by the core's own loading functions, as the node will read them.

    Parameters
    ----------
    values : mapping of str to str
        Argument name to value, as ``ros2 launch`` gives them; missing ones take
        their default from :data:`ARGUMENTS`.
    config_dir : str
        The package's ``config`` folder (holds the Panda's world and the RViz config).
    package_installed : callable
        Whether a ROS package (``rviz2``, ``robot_state_publisher``) is installed.
    find_package_share : callable, optional
        ``package://`` lookup for the mesh check (the launch file passes the ament
        index); without it only ``example-robot-data``'s folder is searched.
    check_geometry : bool
        Check every collision shape (sizes, mesh files found and readable); on by
        default. Takes about 0.4 s for the Panda and compiles nothing.

    Raises
    ------
    LaunchArgumentError
        One line naming the argument at fault: an unknown argument, a file that cannot
        be read, a xacro that fails, a URDF, SRDF or world file that is malformed or
        does not fit the robot, a collision shape of a bad size or a mesh file missing
        or unreadable, a boolean that is not one, or a node asked for whose package
        is not installed.
    """
    v = _all_values(values)
    rviz, start_rsp, joint_states_topic = _requested_nodes(v, package_installed)
    xacro_args = _xacro_arguments(v["xacro_args"])
    robot = _load_robot(v["urdf"], xacro_args)
    srdf_path, srdf_xml, warnings = _load_semantic(v["srdf"], robot, xacro_args)
    scene_path, world_updates = _check_world(v["scene"], robot, config_dir)
    fixed_frame, frame_warnings = _fixed_frame(v["fixed_frame"], robot.model)
    plan = LaunchPlan(urdf_path=robot.urdf_path, srdf_path=srdf_path, scene_path=scene_path, xacro_args=xacro_args,
                      robot_description=robot.urdf_xml, robot_description_semantic=srdf_xml,
                      root_link=robot.model.root_link, fixed_frame=fixed_frame, rviz=rviz,
                      robot_state_publisher=start_rsp, joint_states_topic=joint_states_topic,
                      warnings=tuple(warnings + frame_warnings))
    if check_geometry:
        by_path = "urdf_path" in plan.validator_parameters()
        _check_geometry(v, robot, _mesh_resolver(robot, by_path, find_package_share), world_updates)
    return plan


def resolve_launch_configurations(context, *, config_dir: str, package_installed: Callable[[str], bool],
                                  find_package_share: Callable[[str], str | None] | None = None) -> LaunchPlan:
    """:func:`resolve_launch` of ``context.launch_configurations`` (see :func:`arguments_from_configurations`).

    ``context`` is the launch context, or anything with a ``launch_configurations``
    mapping of name to value.
    """
    values = arguments_from_configurations(dict(context.launch_configurations))
    return resolve_launch(values, config_dir=config_dir, package_installed=package_installed,
                          find_package_share=find_package_share)


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
