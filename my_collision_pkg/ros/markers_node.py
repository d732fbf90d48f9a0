"""The ``contact_markers`` node: ContactReport in, visualization_msgs/MarkerArray out.

Subscribes to ``contacts_topic`` (default ``/collision_validator/contacts``) and,
for every report, publishes :func:`markers.report_to_marker_array` on
``~/markers`` and the report's joint state on ``~/joint_states`` (so that a
robot_state_publisher fed from it poses the robot model where the contacts
are). Both outputs are remappable. The drawing options are parameters (see
:class:`markers.MarkerOptions` for their meaning): read at start-up, and each takes
effect when set at run time (checked as at start-up; refused with a reason naming it
otherwise). ``contacts_topic`` is read-only. A stop (SIGINT, SIGTERM) ends the process
within about 2 s (``runtime.run_node``).
"""
from __future__ import annotations

import dataclasses
import functools
import sys

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import MarkerArray

from my_collision_pkg.msg import ContactReport

from my_collision_pkg.ros.markers import MarkerOptions, report_to_marker_array
from my_collision_pkg.ros.qos import JOINT_STATES_QOS, LATCHED_QOS
from my_collision_pkg.ros.runtime import (CallbackGuard, ConfigurationError, DynamicParameters, NumberParameter,
                                          NamedParameterRefusals, check_bool, run_node)

NODE_NAME = "contact_markers"
DEFAULT_CONTACTS_TOPIC = "/collision_validator/contacts"
# The validator publishes reports latched (validator_node.REPORT_QOS): asking for the
# same gets the last report even when this node starts after it was sent.
CONTACTS_QOS = LATCHED_QOS
# Each array is complete (it starts with DELETEALL), so only the last one matters.
MARKERS_QOS = LATCHED_QOS

# Parameter name -> (description, (low, high) for numbers or None). Names are the
# MarkerOptions field names; numbers accept integers (``:=0``), colours 4 numbers.
_NUMBER_RANGES = {
    "sphere_radius_m": ("radius of the sphere at each contact position, metres", (1e-6, 10.0)),
    "lifetime_s": ("how long RViz keeps a marker, seconds (0: until the next report)", (0.0, 1e6)),
    "arrow_min_length_m": ("length of a normal arrow at zero depth, metres", (1e-6, 10.0)),
    "arrow_max_length_m": ("longest normal arrow, metres", (1e-6, 10.0)),
    "arrow_length_per_depth": ("extra arrow length per metre of penetration (m/m)", (0.0, 1e6)),
    "arrow_shaft_diameter_m": ("diameter of an arrow's shaft, metres", (1e-6, 1.0)),
    "arrow_head_diameter_m": ("diameter of an arrow's head, metres", (1e-6, 1.0)),
    "label_height_m": ("height of the text labels, metres", (1e-6, 10.0)),
    "label_offset_m": ("label height above the pair's deepest contact, metres", (0.0, 10.0)),
    "surface_alpha": ("opacity of the contact surfaces, 0..1", (0.0, 1.0)),
    "outline_width_m": ("line width of the surface outlines, metres", (1e-6, 1.0)),
    "pressure_max_pa": ("pressure drawn with the top colour, pascals (0: the report's largest)", (0.0, 1e15)),
}
_COLOURS = {
    "contact_rgba": "colour of penetrating contacts, [r, g, b, a] in 0..1",
    "near_miss_rgba": "colour of near misses (positive distance), [r, g, b, a] in 0..1",
    "label_rgba": "colour of the text labels, [r, g, b, a] in 0..1",
    "outline_rgba": "colour of the surface outlines, [r, g, b, a] in 0..1",
}
_SWITCHES = {
    "show_arrows": "draw an arrow along the normal at each witness point",
    "show_labels": "draw a text label per body pair",
    "show_surfaces": "draw contact surfaces and their outlines",
}


def _number_parameters() -> list[NumberParameter]:
    """The numeric drawing options as parameters (floats; integers such as ``:=0`` accepted)."""
    return [NumberParameter(name, float, low, high, description, dynamic=True)
            for name, (description, (low, high)) in _NUMBER_RANGES.items()]


def check_colour(name: str, value) -> tuple[float, float, float, float]:
    """``value`` of colour parameter ``name`` as 4 floats in [0, 1]; raises ConfigurationError naming it."""
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
        raise ConfigurationError(f"parameter '{name}' must be 4 numbers [r, g, b, a], got {value!r}")
    rgba = tuple(float(v) for v in value)
    if not all(0.0 <= v <= 1.0 for v in rgba):
        raise ConfigurationError(f"parameter '{name}' = {list(rgba)} has a component outside [0, 1]")
    return rgba


class ContactMarkersNode(NamedParameterRefusals, Node):
    """Turns each ContactReport into a MarkerArray.

    Raises
    ------
    ConfigurationError
        If a drawing parameter is invalid (one line naming it).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.callback_guard = CallbackGuard(self.get_logger())
        defaults = MarkerOptions()
        self.declare_parameter("contacts_topic", DEFAULT_CONTACTS_TOPIC, ParameterDescriptor(
            description="ContactReport topic to draw", type=ParameterType.PARAMETER_STRING, read_only=True))
        for parameter in _number_parameters():
            parameter.declare(self, getattr(defaults, parameter.name))
        for name, description in _COLOURS.items():
            self.declare_parameter(name, list(getattr(defaults, name)),
                                   ParameterDescriptor(description=description, dynamic_typing=True))
        for name, description in _SWITCHES.items():
            self.declare_parameter(name, getattr(defaults, name), ParameterDescriptor(
                description=description, dynamic_typing=True))
        self.options = self._read_options()
        topic = self.get_parameter("contacts_topic").value
        if not isinstance(topic, str) or not topic:
            raise ConfigurationError("parameter 'contacts_topic' must be a non-empty topic name")
        self._markers = self.create_publisher(MarkerArray, "~/markers", MARKERS_QOS)
        self._joint_states = self.create_publisher(JointState, "~/joint_states", JOINT_STATES_QOS)
        self.create_subscription(ContactReport, topic, self.callback_guard.timer(self._on_report), CONTACTS_QOS)
        self._dynamic = DynamicParameters(self)
        for parameter in _number_parameters():
            self._dynamic.add(parameter.name, parameter.check, functools.partial(self._set_option, parameter.name))
        for name in _COLOURS:
            self._dynamic.add(name, functools.partial(check_colour, name), functools.partial(self._set_option, name))
        for name in _SWITCHES:
            self._dynamic.add(name, functools.partial(check_bool, name), functools.partial(self._set_option, name))
        self.get_logger().info(f"drawing contact reports from '{self.resolve_topic_name(topic)}' on "
                               f"'{self._markers.topic_name}'")

    # ----- parameters ---------------------------------------------------------
    def _colour(self, name: str) -> tuple[float, float, float, float]:
        return check_colour(name, self.get_parameter(name).value)

    def _read_options(self) -> MarkerOptions:
        values = {parameter.name: parameter.read(self) for parameter in _number_parameters()}
        values.update({name: self._colour(name) for name in _COLOURS})
        try:
            values.update({name: check_bool(name, self.get_parameter(name).value) for name in _SWITCHES})
            return MarkerOptions(**values)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc

    def _set_option(self, name: str, value) -> None:
        """One drawing option, set at run time (MarkerOptions checks the whole; ValueError refuses it)."""
        self.options = dataclasses.replace(self.options, **{name: value})

    # ----- callback -------------------------------------------------------------
    def _on_report(self, report: ContactReport) -> None:
        self._markers.publish(report_to_marker_array(report, self.options))
        state = report.state
        if state.name:
            if not (state.header.stamp.sec or state.header.stamp.nanosec):
                state.header.stamp = report.header.stamp
            self._joint_states.publish(state)


def main(args=None) -> int:
    return run_node(ContactMarkersNode, NODE_NAME, SingleThreadedExecutor, args)


if __name__ == "__main__":
    sys.exit(main())
