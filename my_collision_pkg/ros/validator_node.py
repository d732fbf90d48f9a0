"""The ``collision_validator`` node: a thin ROS 2 adapter over the collision core.

Services (relative to the node): ``~/check_validity``, ``~/check_validity_batch``,
``~/explain``, ``~/apply_collision_objects``, ``~/check_motion``,
``~/check_trajectory``, ``~/compute_clearance``, ``~/set_allowed_collisions``,
``~/get_allowed_collisions``, ``~/clear_octomap``, ``~/set_octomap``. Topics: ``~/contacts`` (ContactReport),
published after every explain, check_motion and check_trajectory (the first-contact state)
and, with ``monitor_joint_states``, for the current state at ``monitor_rate_hz``;
``~/clearance`` (Clearance), with ``monitor_joint_states``, the current state's nearest
pair within ``clearance_influence_distance`` at the same rate;
``~/scene_objects`` (MarkerArray), the world and attached objects, at start-up
and after every change; ``~/contact_intervals`` (MarkerArray), the contact intervals
of the last checked trajectory. With ``point_cloud_topic``, a ``sensor_msgs/PointCloud2``
subscription (``ros.point_cloud_subscription``: its reliability per ``point_cloud_reliability``,
the newest cloud to the map whenever it is free) feeds the occupancy map (the world object
``<octomap>``) through ``core.perception.monitor.OctomapMonitor`` (docs/perception.md).

A new service is added with ``self._serve(SrvType, "~/name", self._on_name)``: the
callback then runs under the node's CallbackGuard (no exception escapes; it answers
INVALID_REQUEST / success = false) with the deep SERVICE_QOS. A check callback takes
``world = self.scene.world`` once, builds one core request with
``conversions.check_request_from_msg(request, world)`` and passes it (``request=``) to
every core call of that request. ``big=`` names when a request is big enough that freed
memory is given back to the system after it (``runtime.MemoryReturn``).

Start-up: every compiled kernel the services use is compiled (or loaded from numba's
cache) before any service is created (``core.warm_up.warm_up_services``); one info line
says what start-up spent, then "services ready". A stop (SIGINT, SIGTERM) is handled by
``runtime.run_node``: at once during start-up, within about 2 s once running; the stop
event (``callback_guard.stopping``) is the checker's, so long checks end early.

Parameters: see PARAMETERS (numbers) and _declare_parameters; those given a setter take
effect when set at run time (range-checked, refused with a reason otherwise), every other
one is read-only (``set_parameters`` refuses it). A new run-time parameter is one row.
``batch_workers`` (0, the default: every core) splits a large ``~/check_validity_batch`` or ``~/compute_clearance``
across worker processes forked from this one (``core.checks.batch_workers``; they hold the
scene snapshot, never rclpy); ``destroy_node`` ends them, and so does the end of the process.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import sys
import threading
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState, PointCloud2
from visualization_msgs.msg import MarkerArray

from my_collision_pkg.msg import Clearance as ClearanceMsg
from my_collision_pkg.msg import ContactReport
from my_collision_pkg.srv import ApplyCollisionObjects, CheckValidity, CheckValidityBatch, ExplainCollision
from my_collision_pkg.srv import CheckMotion, CheckTrajectory, ComputeClearance
from my_collision_pkg.srv import GetAllowedCollisions, SetAllowedCollisions
from my_collision_pkg.srv import ClearOctomap, SetOctomap

from my_collision_pkg.ros import conversions
from my_collision_pkg.core.checks.checker import DEFAULT_CONTACTS_PER_PAIR, DEFAULT_MAX_CONTACTS, MAX_BATCH_CONFIGURATIONS, CollisionChecker
from my_collision_pkg.core.checks.batch_workers import MAX_BATCH_WORKERS
from my_collision_pkg.core.checks.limits import WorkLimits
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.errors import CollisionPkgError, RequestError
from my_collision_pkg.core.model.shapes import MAX_COORDINATE_M
from my_collision_pkg.core.perception.monitor import (DEFAULT_MAX_RANGE_M, DEFAULT_MAX_UPDATE_RATE_HZ,
                                                      DEFAULT_PADDING_M, DEFAULT_RESOLUTION_M, MAX_POINT_SUBSAMPLE,
                                                      MAX_UPDATE_RATE_HZ, OctomapMonitor)
from my_collision_pkg.core.perception.occupancy import (MAX_RESOLUTION_M, MIN_RESOLUTION_M, MODE_REPLACE,
                                                        UPDATE_MODES, OccupancyMap)
from my_collision_pkg.core.perception.point_cloud import MAX_CLOUD_POINTS
from my_collision_pkg.core.perception.self_filter import MAX_PADDING_M
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.warm_up import warm_up_services
from my_collision_pkg.ros import stop_request
from my_collision_pkg.ros.qos import DEFAULT_POINT_CLOUD_RELIABILITY, JOINT_STATES_QOS, LATCHED_QOS, SERVICE_QOS
from my_collision_pkg.ros import point_cloud_subscription as cloud_subscription
from my_collision_pkg.ros.runtime import (CallbackGuard, ConfigurationError, DynamicParameters, MemoryReturn,
                                          NamedParameterRefusals,
                                          NumberParameter, ament_package_share, check_bool, is_refusal, run_node)
from my_collision_pkg.core.checks.interval_sweeps import interval_sweeps
from my_collision_pkg.ros.markers import contact_intervals_marker_array
from my_collision_pkg.ros.moveit_bridge import attach_moveit_bridge, declare_moveit_parameters, read_moveit_parameters
from my_collision_pkg.ros.scene_markers import SceneMarkerCache, scene_objects_marker_array
from my_collision_pkg.core.surfaces.explanation_surfaces import DEFAULT_STIFFNESS_PA_PER_M, explanation_surfaces

NODE_NAME = "collision_validator"
DEFAULT_MAX_BATCH = 100_000
DEFAULT_MONITOR_RATE_HZ = 10.0
# ~/clearance (with monitor_joint_states) looks for the nearest pair within this, metres.
DEFAULT_CLEARANCE_INFLUENCE_M = 0.3
# Reports are kept for late joiners (RViz started after the node) and sent reliably.
REPORT_QOS = LATCHED_QOS

# Requests above these sizes give freed memory back to the system afterwards (MemoryReturn).
BIG_REQUEST_ROWS = 10_000            # batch configurations, trajectory waypoints, discrete motion samples
BIG_REQUEST_CONTACTS = 1_000         # contacts in an explain answer
BIG_REQUEST_CLEARANCE_ROWS = 10_000  # rows of a clearance answer
BIG_REQUEST_MESH_ELEMENTS = 100_000  # vertices + triangles of the meshes of one apply
# A /joint_states position beyond this magnitude (rad or m) is no joint state: the message is dropped.
MAX_JOINT_STATE_POSITION = MAX_COORDINATE_M
JOINT_STATES_WARNING_PERIOD_S = 5.0
# A refused point cloud is logged at most this often (a camera sends tens a second).
POINT_CLOUD_WARNING_PERIOD_S = 5.0
MAX_WARNING_KINDS = 100               # kinds of point cloud fault remembered for the throttle
# octomap_max_range: beyond 1000 m (an octree of 2 cm cells spans 655 m) it is no bound.
MAX_OCTOMAP_RANGE_M = 1000.0


_DEFAULT_LIMITS = WorkLimits()

# The numeric parameters: (parameter, default, setter). Declared with the parameter's range
# and read back checked against it, in this order (the first bad one is reported). A row
# with a setter ``setter(node, value)`` takes effect when set at run time (its parameter
# is ``dynamic=True``); the others are read-only once the node runs.
PARAMETERS = (
    (NumberParameter("default_padding", float, 0.0, 1.0, "padding of every robot link, metres", dynamic=True),
     0.0, lambda node, value: node.scene.set_padding(default_padding_m=value)),
    (NumberParameter("max_contacts", int, 1, 100_000, "contact budget of explain when a request gives 0",
                     dynamic=True),
     DEFAULT_MAX_CONTACTS, lambda node, value: setattr(node.checker, "max_contacts", value)),
    (NumberParameter("contacts_per_pair", int, 1, 1000, "most contacts kept per pair of shapes", dynamic=True),
     DEFAULT_CONTACTS_PER_PAIR, lambda node, value: setattr(node.checker, "contacts_per_pair", value)),
    (NumberParameter("monitor_rate_hz", float, 0.01, 1000.0, "most reports per second for the monitored state",
                     dynamic=True),
     DEFAULT_MONITOR_RATE_HZ, lambda node, value: node.set_monitor_rate(value)),
    (NumberParameter("max_batch", int, 1, MAX_BATCH_CONFIGURATIONS, "most configurations in one batch request",
                     dynamic=True),
     DEFAULT_MAX_BATCH, lambda node, value: setattr(node, "max_batch", value)),
    (NumberParameter("batch_workers", int, 0, MAX_BATCH_WORKERS,
                     "processes a large check_validity_batch or compute_clearance is split across (0: every core; 1: this one)",
                     dynamic=True),
     0, lambda node, value: setattr(node.checker, "batch_workers", value)),
    (NumberParameter("surface_stiffness", float, 1e-9, 1e15, "contact-surface pressure per metre of overlap, Pa/m",
                     dynamic=True),
     DEFAULT_STIFFNESS_PA_PER_M, lambda node, value: setattr(node, "surface_stiffness", value)),
    # the work bounds of one request (core.checks.limits.WorkLimits; docs/limits.md)
    (NumberParameter("max_motion_samples", int, 1, 10_000_000,
                     "most discrete samples of one check_motion (in total, of one discrete check_trajectory)",
                     dynamic=True),
     _DEFAULT_LIMITS.max_motion_samples, lambda node, value: node.set_work_limit("max_motion_samples", value)),
    (NumberParameter("max_trajectory_waypoints", int, 2, 1_000_000, "most waypoints of one check_trajectory",
                     dynamic=True),
     _DEFAULT_LIMITS.max_trajectory_waypoints,
     lambda node, value: node.set_work_limit("max_trajectory_waypoints", value)),
    (NumberParameter("max_joint_delta", float, 1e-6, 1e3,
                     "largest |goal - start| of one joint in one motion or trajectory segment, rad or m",
                     dynamic=True),
     _DEFAULT_LIMITS.max_joint_delta, lambda node, value: node.set_work_limit("max_joint_delta", value)),
    (NumberParameter("max_certified_steps", int, 1_000, 1_000_000_000,
                     "the certified search's work per request, steps (about 2 us each)", dynamic=True),
     _DEFAULT_LIMITS.max_certified_steps, lambda node, value: node.set_work_limit("max_certified_steps", value)),
    (NumberParameter("max_clearance_rows", int, 1, 100_000_000, "most rows of one compute_clearance answer",
                     dynamic=True),
     _DEFAULT_LIMITS.max_clearance_rows, lambda node, value: node.set_work_limit("max_clearance_rows", value)),
    (NumberParameter("max_octomap_cells", int, 1, 10_000_000,
                     "most occupancy-map cells one request checks as boxes (explain, clearance, motions)",
                     dynamic=True),
     _DEFAULT_LIMITS.max_octomap_cells, lambda node, value: node.set_work_limit("max_octomap_cells", value)),
    # the occupancy map monitor (core.perception.monitor; docs/perception.md), read once at start-up
    (NumberParameter("octomap_resolution", float, MIN_RESOLUTION_M, MAX_RESOLUTION_M,
                     "cell side of the occupancy map, metres"), DEFAULT_RESOLUTION_M, None),
    (NumberParameter("octomap_max_range", float, 0.01, MAX_OCTOMAP_RANGE_M,
                     "points farther than this from the sensor are not marked occupied, metres"),
     DEFAULT_MAX_RANGE_M, None),
    (NumberParameter("octomap_padding", float, 0.0, MAX_PADDING_M,
                     "points within this of the robot, its attached objects and the world objects are dropped, "
                     "metres"), DEFAULT_PADDING_M, None),
    (NumberParameter("octomap_point_subsample", int, 1, MAX_POINT_SUBSAMPLE,
                     "use every k-th point of a cloud"), 1, None),
    (NumberParameter("octomap_max_update_rate_hz", float, 0.0, MAX_UPDATE_RATE_HZ,
                     "most clouds applied per second (0: no bound); others are skipped"),
     DEFAULT_MAX_UPDATE_RATE_HZ, None),
    (NumberParameter("max_cloud_points", int, 1, MAX_CLOUD_POINTS,
                     "largest point cloud (width * height) accepted, and most points of ~/set_octomap"),
     MAX_CLOUD_POINTS, None),
    (NumberParameter("clearance_influence_distance", float, 0.0, 100.0,
                     "~/clearance (with monitor_joint_states): the nearest pair within this, metres", dynamic=True),
     DEFAULT_CLEARANCE_INFLUENCE_M, lambda node, value: setattr(node, "clearance_influence_distance", value)),
)
# The old name of the table: (parameter, default) pairs.
NUMBER_PARAMETERS = tuple((parameter, default) for parameter, default, _ in PARAMETERS)


def _check_table(rows) -> None:
    for parameter, _, setter in rows:
        if parameter.dynamic != (setter is not None):
            raise ValueError(f"parameter '{parameter.name}': dynamic=True needs a setter, and only then")


_check_table(PARAMETERS)
# The switches that take effect at run time, as the numbers above: name -> setter.
SWITCH_SETTERS = {
    "check_joint_limits": lambda node, value: setattr(node.checker, "check_joint_limits", value),
}


def joint_state_fault(names, positions, is_robot_joint) -> str | None:
    """Why a /joint_states message cannot be used as the state (None if it can).

    Refused: names and positions of different lengths, a joint named twice, a non-finite
    position of a robot joint, or one beyond MAX_JOINT_STATE_POSITION (rad or m). Joints
    of other robots (``is_robot_joint(name)`` false) are ignored otherwise.
    """
    fault = joint_state_fault_kind(names, positions, is_robot_joint)
    return None if fault is None else fault[1]


def joint_state_fault_kind(names, positions, is_robot_joint) -> tuple[str, str] | None:
    """As :func:`joint_state_fault`, with the kind of fault first: ("lengths" | "repeated" |
    "non-finite" | "out of range", message)."""
    names, positions = list(names), list(positions)
    if len(names) != len(positions):
        return "lengths", f"{len(names)} joint names but {len(positions)} positions"
    seen = set()
    for name in names:
        if name in seen:
            return "repeated", f"joint '{name}' is named twice"
        seen.add(name)
    for name, value in zip(names, positions):
        if not is_robot_joint(name):
            continue
        if not math.isfinite(value):
            return "non-finite", f"joint '{name}' has non-finite position {value}"
        if abs(value) > MAX_JOINT_STATE_POSITION:
            return "out of range", (f"joint '{name}' position {value:g} is beyond +-{MAX_JOINT_STATE_POSITION:g} "
                                    "(rad or m)")
    return None


def _descriptor(description: str, *, type_: int | None = None, dynamic: bool = False,
                read_only: bool = True) -> ParameterDescriptor:
    d = ParameterDescriptor(description=description, dynamic_typing=dynamic, read_only=read_only)
    if type_ is not None:
        d.type = type_
    return d


class CollisionValidatorNode(NamedParameterRefusals, Node):
    """Loads the planning scene from parameters and serves checks over it.

    Raises
    ------
    ConfigurationError
        If the robot model or world cannot be loaded (one line naming the fault).
    """

    def __init__(self, **kwargs) -> None:
        imports_s = stop_request.seconds_since_start()
        super().__init__(NODE_NAME, **kwargs)
        self.callback_guard = self._guard = CallbackGuard(self.get_logger())
        self._stopping = self.callback_guard.stopping          # set on SIGINT / SIGTERM (runtime.run_node)
        self._memory = MemoryReturn()
        self._declare_parameters()
        p = self._read_parameters()
        self.max_batch = p["max_batch"]
        self.surface_stiffness = p["surface_stiffness"]
        self.clearance_influence_distance = p["clearance_influence_distance"]
        spent = {}
        clock = time.perf_counter()
        try:
            self.scene = load_scene(urdf_xml=p["robot_description"] or None, urdf_path=p["urdf_path"] or None,
                                    srdf_xml=p["robot_description_semantic"] or None,
                                    srdf_path=p["srdf_path"] or None, world_path=p["scene_path"] or None,
                                    package_paths=p["package_paths"], default_padding_m=p["default_padding"],
                                    link_padding_m=p["link_padding"], find_package_share=ament_package_share)
            spent["model and meshes"], clock = time.perf_counter() - clock, time.perf_counter()
            self.octomap = OctomapMonitor(
                self.scene, resolution_m=p["octomap_resolution"], mode=p["octomap_mode"],
                max_range_m=p["octomap_max_range"], padding_m=p["octomap_padding"],
                point_subsample=p["octomap_point_subsample"], max_update_rate_hz=p["octomap_max_update_rate_hz"],
                max_cloud_points=p["max_cloud_points"])
            self.get_logger().info("compiling the kernels, or loading them from numba's cache")
            limits = WorkLimits(**{f.name: p[f.name] for f in dataclasses.fields(WorkLimits)})
            self.checker = CollisionChecker(self.scene, check_joint_limits=p["check_joint_limits"],
                                            max_contacts=p["max_contacts"], contacts_per_pair=p["contacts_per_pair"],
                                            limits=limits, stop_event=self._stopping,
                                            batch_workers=p["batch_workers"])
            spent["kernels"], clock = time.perf_counter() - clock, time.perf_counter()
            self._warm_up_services()
            spent["service warm-up"] = time.perf_counter() - clock
        except (CollisionPkgError, ValueError) as exc:
            raise ConfigurationError(str(exc)) from exc
        for warning in self.scene.robot.warnings:
            self.get_logger().warning(f"URDF: {warning}")
        for warning in self.scene.semantic.warnings:
            self.get_logger().warning(f"SRDF: {warning}")
        self._checks = ReentrantCallbackGroup()
        self._interval_markers = self.create_publisher(MarkerArray, "~/contact_intervals", REPORT_QOS)
        self._reports = self.create_publisher(ContactReport, "~/contacts", REPORT_QOS)
        self._scene_objects = self.create_publisher(MarkerArray, "~/scene_objects", REPORT_QOS)
        self._clearance = None
        # markers of the objects an update did not touch are reused (their shape entries are
        # shared with the previous snapshot): an update costs what it changes
        self._scene_marker_cache = SceneMarkerCache()
        self._scene_markers_lock = threading.Lock()
        self._monitor_lock = threading.Lock()
        self._monitor_dirty = False
        self.publish_scene_objects()
        self._monitor_timer = None
        self._joint_states_warned: dict[str, float] = {}
        self._point_cloud_warned: dict[str, float] = {}
        self._serve(CheckValidity, "~/check_validity", self._on_check)
        self._serve(CheckValidityBatch, "~/check_validity_batch", self._on_check_batch, big=_big_batch)
        self._serve(ExplainCollision, "~/explain", self._on_explain, big=_big_explain)
        self._serve(CheckMotion, "~/check_motion", self._on_check_motion, big=_big_motion)
        self._serve(CheckTrajectory, "~/check_trajectory", self._on_check_trajectory, big=_big_trajectory)
        self._serve(ComputeClearance, "~/compute_clearance", self._on_compute_clearance, big=_big_clearance)
        # scene updates one at a time
        updates = MutuallyExclusiveCallbackGroup()
        self._serve(ApplyCollisionObjects, "~/apply_collision_objects", self._on_apply, updates, big=_big_apply)
        self._serve(SetAllowedCollisions, "~/set_allowed_collisions", self._on_set_allowed, updates)
        self._serve(GetAllowedCollisions, "~/get_allowed_collisions", self._on_get_allowed)
        self._serve(ClearOctomap, "~/clear_octomap", self._on_clear_octomap, updates)
        self._serve(SetOctomap, "~/set_octomap", self._on_set_octomap, updates)
        self._point_cloud_topic = p["point_cloud_topic"]
        self.point_clouds = None
        if self._point_cloud_topic:
            # QoS fitted to the publishers (point_cloud_reliability); receiving and applying in groups
            # of their own: a camera that always has the next cloud ready cannot starve the scene
            # updates (the monitor's lock orders clouds against ~/clear_octomap, ~/set_octomap)
            self.point_clouds = cloud_subscription.CloudSubscription(
                self, self._point_cloud_topic, self._on_point_cloud, reliability=p[cloud_subscription.PARAMETER],
                wrap=self._guard.timer)
        if p["monitor_joint_states"]:
            self._clearance = self.create_publisher(ClearanceMsg, "~/clearance", REPORT_QOS)
            monitor = MutuallyExclusiveCallbackGroup()
            self.create_subscription(JointState, "/joint_states", self._guard.timer(self._on_joint_states),
                                     JOINT_STATES_QOS, callback_group=monitor)
            self._monitor_timer = self.create_timer(1.0 / p["monitor_rate_hz"],
                                                    self._guard.timer(self._on_monitor_timer), callback_group=monitor)
        self._dynamic = DynamicParameters(self)
        for parameter, _, setter in PARAMETERS:
            if setter is not None:
                self._dynamic.add(parameter.name, parameter.check, functools.partial(setter, self))
        for name, setter in SWITCH_SETTERS.items():
            self._dynamic.add(name, functools.partial(check_bool, name), functools.partial(setter, self))
        self._dynamic.add(cloud_subscription.PARAMETER, cloud_subscription.check_reliability,
                          self._set_point_cloud_reliability)
        # with moveit_msgs: ~/check_state_validity and the PlanningScene mirror (docs/moveit.md)
        self.moveit = attach_moveit_bridge(self, p)
        robot = self.scene.robot
        log = self.get_logger()
        log.info(f"robot '{robot.name}': {len(robot.active_joint_names)} joints, {len(self.scene.world.shapes)} "
                 f"shapes, {len(self.scene.world.pairs)} checked pairs, {len(self.scene.world.objects)} objects; "
                 f"planning frame '{self.scene.planning_frame}'")
        total_s = stop_request.seconds_since_start()
        log.info("start-up: " + ", ".join([f"imports {imports_s:.2f} s"]
                                          + [f"{what} {seconds:.2f} s" for what, seconds in spent.items()])
                 + f"; total {total_s:.2f} s from process start")
        if self._point_cloud_topic:
            o = self.octomap
            log.info(f"octomap: point clouds from '{self._point_cloud_topic}' ({o.mode}, {o.resolution_m:g} m cells, "
                     f"range {o.max_range_m:g} m, padding {o.padding_m:g} m, point_subsample {o.point_subsample}, "
                     f"at most {o.max_update_rate_hz:g} Hz and {o.max_cloud_points} points)")
            if not (p["monitor_joint_states"] or p.get("planning_scene_topic")):
                log.warning("octomap: neither monitor_joint_states nor planning_scene_topic is set, so the robot "
                            "stays in its default state: clouds are self-filtered (and a cloud in a link's frame "
                            "posed) at that state, not at the real robot's")
        log.info(f"services ready ({total_s:.2f} s after process start)")

    def _warm_up_services(self) -> None:
        """Every kernel the services use, compiled or loaded now; a failure here only costs the first requests."""
        try:
            warm_up_services(self.checker, should_stop=self._stopping.is_set)
            if not self._stopping.is_set():
                self.octomap.warm_up()                 # the self-filter of clouds and ~/set_octomap
        except Exception as exc:  # noqa: BLE001 - the requests themselves report what is wrong
            self.get_logger().warning(f"service warm-up failed ({type(exc).__name__}: {exc}); the first requests "
                                      "may compile kernels")

    def destroy_node(self) -> None:
        """Ends the batch worker processes (``batch_workers``), then the node."""
        checker = getattr(self, "checker", None)
        if checker is not None:
            checker.close()
        super().destroy_node()

    # ----- parameters ---------------------------------------------------------
    def _declare_parameters(self) -> None:
        s, d = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
        self.declare_parameter("robot_description", "", _descriptor("URDF XML (or give urdf_path)", type_=s))
        self.declare_parameter("urdf_path", "", _descriptor("URDF file (used when robot_description is empty)",
                                                            type_=s))
        self.declare_parameter("robot_description_semantic", "", _descriptor("SRDF XML (or give srdf_path)",
                                                                             type_=s))
        self.declare_parameter("srdf_path", "", _descriptor("SRDF file (optional)", type_=s))
        self.declare_parameter("scene_path", "", _descriptor("world YAML loaded at start-up (optional)", type_=s))
        self.declare_parameter("link_padding_names", [""], _descriptor(
            "links with their own padding (pairs with link_padding_values)", type_=d))
        self.declare_parameter("link_padding_values", [0.0], _descriptor(
            "padding of each link in link_padding_names, metres", dynamic=True))
        # dynamic typing: a value of another type is refused by check_bool, naming the parameter
        self.declare_parameter("check_joint_limits", True, _descriptor("refuse configurations outside joint limits",
                                                                        dynamic=True, read_only=False))
        self.declare_parameter("package_paths", [""], _descriptor(
            "extra folders searched for package:// meshes (each holding package folders)", type_=d))
        self.declare_parameter("monitor_joint_states", False, _descriptor(
            "follow /joint_states and publish contacts of the current state"))
        self.declare_parameter("point_cloud_topic", "", _descriptor(
            "sensor_msgs/PointCloud2 topic feeding the occupancy map '<octomap>' (empty: none)", type_=s))
        # dynamic typing: a value of another type is refused by check_reliability, naming the parameter
        self.declare_parameter(cloud_subscription.PARAMETER, DEFAULT_POINT_CLOUD_RELIABILITY, _descriptor(
            "point_cloud_topic's subscription: auto (reliable when every publisher is, else best effort), "
            "reliable or best_effort", dynamic=True, read_only=False))
        self.declare_parameter("octomap_mode", MODE_REPLACE, _descriptor(
            f"occupancy map updates: {' or '.join(UPDATE_MODES)}", type_=s))
        for parameter, default, _ in PARAMETERS:
            parameter.declare(self, default)
        declare_moveit_parameters(self)

    def _strings(self, name: str) -> list[str]:
        return [v for v in (self.get_parameter(name).value or []) if v]

    def _read_parameters(self) -> dict:
        p = {name: self.get_parameter(name).value for name in (
            "robot_description", "urdf_path", "robot_description_semantic", "srdf_path", "scene_path",
            "check_joint_limits", "monitor_joint_states", "point_cloud_topic", "octomap_mode")}
        if p["octomap_mode"] not in UPDATE_MODES:
            raise ConfigurationError(f"parameter 'octomap_mode' = '{p['octomap_mode']}' is not one of "
                                     f"{', '.join(UPDATE_MODES)}")
        p["check_joint_limits"] = check_bool("check_joint_limits", p["check_joint_limits"])
        p[cloud_subscription.PARAMETER] = cloud_subscription.check_reliability(
            self.get_parameter(cloud_subscription.PARAMETER).value)
        if not p["robot_description"] and not p["urdf_path"]:
            raise ConfigurationError("no robot model: set robot_description (URDF XML) or urdf_path")
        p.update({parameter.name: parameter.read(self) for parameter, _, _ in PARAMETERS})
        p.update(read_moveit_parameters(self))
        p["package_paths"] = self._strings("package_paths")
        names = self._strings("link_padding_names")
        values = self.get_parameter("link_padding_values").value or []
        values = [v for v in values] if names else []
        if len(names) != len(values):
            raise ConfigurationError(f"link_padding_names has {len(names)} entries but link_padding_values "
                                     f"has {len(values)}")
        try:
            p["link_padding"] = {n: float(v) for n, v in zip(names, values)}
        except (TypeError, ValueError) as exc:
            raise ConfigurationError("link_padding_values must be numbers") from exc
        return p

    # ----- services ------------------------------------------------------------
    # Every callback takes the world snapshot once (``world = self.scene.world``), in its
    # CheckRequest, and uses it for every step: one request sees one world however the
    # scene changes.
    def _serve(self, srv_type, name: str, callback, callback_group=None, *, big=None) -> None:
        """A service of this node: deep request queue (SERVICE_QOS), callbacks in parallel
        (unless ``callback_group`` says otherwise), and no exception escaping ``callback``
        (CallbackGuard answers INVALID_REQUEST / success = false). When ``big(request,
        response)`` is true after the answer, or the answer refuses the request (a bound can
        stop a request after part of its work, which leaves memory behind and no big answer
        to tell of it), freed memory goes back to the system shortly after (off the
        request's path)."""
        served = callback
        if big is not None:
            def served(request, response, callback=callback):
                response = callback(request, response)
                if is_refusal(response) or big(request, response):
                    self._memory.after_big_request()
                return response
            served.__name__ = callback.__name__
        self.create_service(srv_type, name, self._guard.service(served, srv_type), qos_profile=SERVICE_QOS,
                            callback_group=callback_group or self._checks)

    def _on_check(self, request: CheckValidity.Request, response: CheckValidity.Response):
        verdict = self.checker.check(request.joint_names, np.asarray(request.positions, dtype=float),
                                     request=conversions.check_request_from_msg(request, self.scene.world))
        response.valid, response.status, response.message = verdict.valid, int(verdict.status), verdict.message
        return response

    def _on_check_batch(self, request: CheckValidityBatch.Request, response: CheckValidityBatch.Response):
        valid, verdict = self.checker.check_batch(
            request.joint_names, np.asarray(request.positions, dtype=float), max_batch=self.max_batch,
            request=conversions.check_request_from_msg(request, self.scene.world))
        response.valid = valid.tolist()
        response.status, response.message = int(verdict.status), verdict.message
        return response

    def _on_explain(self, request: ExplainCollision.Request, response: ExplainCollision.Response):
        world = self.scene.world
        explanation = self.checker.explain(request.joint_names, np.asarray(request.positions, dtype=float),
                                           request=conversions.check_request_from_msg(request, world))
        surfaces = ()
        if request.compute_surfaces and explanation.contacts:
            surfaces = explanation_surfaces(world, explanation, self.surface_stiffness)
        stamp = self.get_clock().now().to_msg()
        conversions.fill_explain_response(response, explanation, surfaces, stamp)
        if explanation.status != Status.INVALID_REQUEST:
            self._reports.publish(conversions.contact_report(explanation, world.robot.root_link, stamp, surfaces))
        return response

    def _on_check_motion(self, request: CheckMotion.Request, response: CheckMotion.Response):
        world = self.scene.world
        result = self.checker.check_motion(
            request.joint_names, np.asarray(request.start, dtype=float), np.asarray(request.goal, dtype=float),
            mode=request.mode, max_step=request.max_step, request=conversions.check_request_from_msg(request, world))
        stamp = self.get_clock().now().to_msg()
        conversions.fill_check_motion_response(response, result, stamp)
        if result.status != Status.INVALID_REQUEST:
            self._reports.publish(conversions.contact_report(result, world.robot.root_link, stamp))
        return response

    def _on_check_trajectory(self, request: CheckTrajectory.Request, response: CheckTrajectory.Response):
        world = self.scene.world
        try:
            joint_names, points, times_s = conversions.joint_trajectory_to_arrays(request.trajectory)
        except RequestError as exc:
            return conversions.fill_check_trajectory_response(response, conversions.invalid_trajectory_result(
                str(exc)))
        result = self.checker.check_trajectory(
            joint_names, points, times_s, mode=request.mode, max_step=request.max_step,
            stop_at_first_contact=request.stop_at_first_contact,
            request=conversions.check_request_from_msg(request, world))
        conversions.fill_check_trajectory_response(response, result)
        if result.status != Status.INVALID_REQUEST:
            stamp = self.get_clock().now().to_msg()
            frame = world.robot.root_link
            self._reports.publish(conversions.trajectory_contact_report(result, frame, stamp))
            sweeps = interval_sweeps(self.checker, joint_names, points, times_s, result.contact_lists)
            self._interval_markers.publish(contact_intervals_marker_array(response.contact_lists, frame, stamp,
                                                                          sweeps))
        return response

    def _on_compute_clearance(self, request: ComputeClearance.Request, response: ComputeClearance.Response):
        clearance = self.checker.clearance(
            request.joint_names, np.asarray(request.positions, dtype=float), request.influence_distance,
            max_rows_per_configuration=request.max_rows_per_configuration,
            compute_jacobians=request.compute_jacobians, max_batch=self.max_batch,
            request=conversions.check_request_from_msg(request, self.scene.world))
        return conversions.fill_compute_clearance_response(response, clearance)

    def _on_apply(self, request: ApplyCollisionObjects.Request, response: ApplyCollisionObjects.Response):
        try:
            updates, warnings = conversions.collision_objects_to_updates(request.objects, self.scene.robot)
            world = self.scene.apply(updates)
        except CollisionPkgError as exc:
            response.success, response.message = False, f"scene unchanged: {exc}"
            return response
        response.success = True
        response.message = f"applied {len(request.objects)} object update(s); {len(world.objects)} objects"
        if warnings:
            response.message += "; warning: " + "; ".join(warnings)
            self.get_logger().warning(f"apply_collision_objects: {'; '.join(warnings)}")
        self.publish_scene_objects(world)
        return response

    def _on_set_allowed(self, request: SetAllowedCollisions.Request, response: SetAllowedCollisions.Response):
        entries, defaults, replace = conversions.allowed_collision_edits_from_msg(request)
        try:
            self.scene.set_allowed_collisions(entries, defaults, replace=replace)
        except CollisionPkgError as exc:
            response.success, response.message = False, f"matrix unchanged: {exc}"
            return response
        response.success = True
        response.message = (f"{'replaced the run-time matrix with' if replace else 'set'} {len(entries)} entries and "
                            f"{len(defaults)} default entries")
        self.mark_monitored_state_changed()
        return response

    def _on_get_allowed(self, request: GetAllowedCollisions.Request, response: GetAllowedCollisions.Response):
        world = self.scene.world
        try:
            names, matrix = self.scene.allowed_collisions(list(request.names), world=world)
        except CollisionPkgError as exc:
            response.success, response.message = False, str(exc)
            return response
        return conversions.fill_get_allowed_collisions_response(response, names, matrix, world.acm)

    def _on_clear_octomap(self, request: ClearOctomap.Request, response: ClearOctomap.Response):
        removed = self.octomap.clear()
        response.success, response.cells_removed = True, removed
        response.message = f"occupancy map cleared: {removed} cells removed"
        self.publish_scene_objects()
        return response

    def _on_set_octomap(self, request: SetOctomap.Request, response: SetOctomap.Response):
        try:
            if request.file_path and len(request.points_xyz_m):
                raise RequestError("give file_path or points_xyz_m, not both")
            if request.file_path:
                occupancy = self.octomap.set_map(OccupancyMap.load(request.file_path))
                source = f"file '{request.file_path}'"
            else:
                points = conversions.points_from_flat_xyz(request.points_xyz_m, "points_xyz_m",
                                                          self.octomap.max_cloud_points)
                occupancy = self.octomap.set_points(points, request.resolution_m or None)
                source = f"{len(points)} points"
        except CollisionPkgError as exc:
            response.success, response.message = False, f"map unchanged: {exc}"
            return response
        response.success, response.cells = True, occupancy.n_occupied
        response.message = (f"occupancy map set from {source}: {occupancy.n_occupied} cells of "
                            f"{occupancy.resolution_m:g} m")
        self.publish_scene_objects()
        return response

    def _on_point_cloud(self, msg: PointCloud2) -> str:
        """The newest cloud, folded into the map: APPLIED, SKIPPED (the rate bound) or REFUSED."""
        try:
            result = self.octomap.update_message(msg)
        except CollisionPkgError as exc:
            self._warn_point_cloud(str(exc))
            return cloud_subscription.REFUSED
        if not result.applied:
            return cloud_subscription.SKIPPED
        self.get_logger().debug(f"point cloud: {result.summary()}")
        self.publish_scene_objects()
        return cloud_subscription.APPLIED

    def _set_point_cloud_reliability(self, value: str) -> None:
        """point_cloud_reliability at run time: the subscription follows within ADAPT_PERIOD_S (kept if none)."""
        if self.point_clouds is not None:
            self.point_clouds.set_reliability(value)

    def publish_scene_objects(self, world=None) -> None:
        """Draw the scene's world as it is now on ~/scene_objects (``world``, a caller's new
        snapshot, is never newer); the monitored state (with ``monitor_joint_states``) is
        reported again, as its contacts may have changed. One array at a time: updates from
        several callback groups (scene updates, point clouds, the MoveIt mirror) end with the
        latest world's array latched."""
        with self._scene_markers_lock:
            world = self.scene.world
            self._scene_objects.publish(scene_objects_marker_array(world, world.robot.root_link,
                                                                   self.get_clock().now().to_msg(),
                                                                   cache=self._scene_marker_cache))
        self.mark_monitored_state_changed()

    def mark_monitored_state_changed(self) -> None:
        """Have the monitor report the current state again at its next tick (a new world, matrix or joint values)."""
        with self._monitor_lock:
            self._monitor_dirty = True

    def set_work_limit(self, name: str, value) -> None:
        """One field of the checker's WorkLimits, from the next request on."""
        self.checker.limits = dataclasses.replace(self.checker.limits, **{name: value})

    # ----- joint state monitoring ------------------------------------------------
    def _on_joint_states(self, msg: JointState) -> None:
        robot = self.scene.robot
        fault = joint_state_fault_kind(msg.name, msg.position, lambda name: robot.active_index(name) is not None)
        if fault is not None:
            self._warn_joint_states(*fault)
            return
        names, values = [], []
        for name, value in zip(msg.name, msg.position):
            if robot.active_index(name) is not None:
                names.append(name)
                values.append(value)
        if not names:
            return
        try:
            self.scene.set_current_positions(names, values)
        except CollisionPkgError as exc:
            self._warn_joint_states("refused", str(exc))
            return
        with self._monitor_lock:
            self._monitor_dirty = True

    def _warn_joint_states(self, kind: str, message: str) -> None:
        """One warning per kind of fault every JOINT_STATES_WARNING_PERIOD_S at most."""
        now = time.monotonic()
        with self._monitor_lock:
            if now - self._joint_states_warned.get(kind, -math.inf) < JOINT_STATES_WARNING_PERIOD_S:
                return
            self._joint_states_warned[kind] = now
        self.get_logger().warning(f"/joint_states message dropped: {message} (this kind of fault is reported "
                                  f"at most every {JOINT_STATES_WARNING_PERIOD_S:g} s)")

    def _warn_point_cloud(self, message: str) -> None:
        """One warning per kind of fault (its message with the numbers left out) every
        POINT_CLOUD_WARNING_PERIOD_S at most."""
        kind = re.sub(r"[-+]?\d[\d.e+-]*", "#", message)
        now = time.monotonic()
        with self._monitor_lock:
            if now - self._point_cloud_warned.get(kind, -math.inf) < POINT_CLOUD_WARNING_PERIOD_S:
                return
            if len(self._point_cloud_warned) >= MAX_WARNING_KINDS:
                self._point_cloud_warned.clear()
            self._point_cloud_warned[kind] = now
        self.get_logger().warning(f"point cloud on '{self._point_cloud_topic}' dropped, occupancy map unchanged: "
                                  f"{message} (this kind of fault is reported at most every "
                                  f"{POINT_CLOUD_WARNING_PERIOD_S:g} s)")

    def set_monitor_rate(self, rate_hz: float) -> None:
        """Most reports per second of the monitored state (takes effect at once; kept if not monitoring)."""
        if self._monitor_timer is not None:
            self._monitor_timer.timer_period_ns = int(1e9 / rate_hz)

    def _on_monitor_timer(self) -> None:
        with self._monitor_lock:
            if not self._monitor_dirty:
                return
            self._monitor_dirty = False
        world = self.scene.world
        positions = self.scene.current_positions
        explanation = self.checker.explain(world.robot.active_joint_names, positions, world=world)
        stamp = self.get_clock().now().to_msg()
        self._reports.publish(conversions.contact_report(explanation, world.robot.root_link, stamp))
        influence_m = self.clearance_influence_distance
        clearance = self.checker.clearance(world.robot.active_joint_names, positions, influence_m,
                                           max_rows_per_configuration=1, world=world)
        if clearance.ok:
            self._clearance.publish(conversions.clearance_msg(clearance, influence_m, world.robot.root_link, stamp))
        else:
            self.get_logger().warning(f"~/clearance not published: {clearance.message}",
                                      throttle_duration_sec=JOINT_STATES_WARNING_PERIOD_S)


# ----- when a request is big (memory is given back after it) -----------------------
def _big_batch(request, response) -> bool:
    return len(request.positions) > BIG_REQUEST_ROWS * max(1, len(request.joint_names))


def _big_explain(request, response) -> bool:
    return len(response.contacts) > BIG_REQUEST_CONTACTS


def _big_motion(request, response) -> bool:
    if request.mode != CheckMotion.Request.DISCRETE or not request.max_step > 0.0:
        return False
    try:
        span = float(np.max(np.abs(np.asarray(request.goal, dtype=float) - np.asarray(request.start, dtype=float))))
    except ValueError:
        return False
    return math.isfinite(span) and span / request.max_step > BIG_REQUEST_ROWS


def _big_trajectory(request, response) -> bool:
    return len(request.trajectory.points) > BIG_REQUEST_ROWS


def _big_clearance(request, response) -> bool:
    return len(response.distance) > BIG_REQUEST_CLEARANCE_ROWS


def _big_apply(request, response) -> bool:
    elements = sum(len(mesh.vertices) + len(mesh.triangles) for obj in request.objects for mesh in obj.meshes)
    removes = any(obj.operation == obj.REMOVE for obj in request.objects)   # a big mesh may be going away
    return removes or elements > BIG_REQUEST_MESH_ELEMENTS


def main(args=None) -> int:
    return run_node(CollisionValidatorNode, NODE_NAME, MultiThreadedExecutor, args)


if __name__ == "__main__":
    sys.exit(main())
