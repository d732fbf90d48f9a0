"""The browser view of a running validator: ``python -m my_collision_pkg.tools.web_view``.

A small ROS node (``web_view``) that serves :mod:`my_collision_pkg.viz.web` and draws on it
what the validator publishes: its world objects (``~/scene_objects``, a MarkerArray, latched)
and every contact report (``~/contacts``: the robot posed at the report's joint state, links
in contact red, contacts with normals, contact surfaces by pressure). The robot's collision
geometry comes from the same URDF/SRDF the validator loaded (parameters ``urdf_path`` and
``srdf_path``, default the Panda of example-robot-data). For people without RViz.

    python -m my_collision_pkg.tools.web_view --ros-args -p port:=8080 \\
        -p contacts_topic:=/collision_validator/contacts -p scene_objects_topic:=/collision_validator/scene_objects
"""
from __future__ import annotations

import sys

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from my_collision_pkg.msg import ContactReport

from my_collision_pkg.ros.qos import LATCHED_QOS
from my_collision_pkg.ros.runtime import CallbackGuard, ConfigurationError, run_node

NODE_NAME = "web_view"
DEFAULTS = {
    "contacts_topic": ("/collision_validator/contacts", "ContactReport topic to draw"),
    "scene_objects_topic": ("/collision_validator/scene_objects", "MarkerArray of the world objects"),
    "urdf_path": ("", "URDF (or .xacro) of the robot the validator checks (empty: the Panda)"),
    "srdf_path": ("", "its SRDF (empty: the Panda's when urdf_path is empty)"),
    "host": ("127.0.0.1", "address the page is served on (0.0.0.0: every interface)"),
    "port": (8080, "port the page is served on"),
}


class WebViewNode(Node):
    """Subscribes to the validator's reports and scene objects and draws them on a served page."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        self.callback_guard = CallbackGuard(self.get_logger())
        for name, (default, description) in DEFAULTS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=description, read_only=True))
        value = {name: self.get_parameter(name).value for name in DEFAULTS}
        from my_collision_pkg.core.checks.checker import CollisionChecker
        from my_collision_pkg.core.errors import CollisionPkgError
        from my_collision_pkg.core.scene.loading import load_scene, panda_paths
        from my_collision_pkg.viz.web import WebView, WebViewError
        urdf, srdf = value["urdf_path"], value["srdf_path"] or None
        try:
            if not urdf:
                urdf, panda_srdf = panda_paths()
                srdf = srdf or panda_srdf
            checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=None))
            self.view = WebView(checker, host=value["host"], port=int(value["port"]))
        except (CollisionPkgError, WebViewError, OSError) as exc:
            raise ConfigurationError(str(exc)) from exc
        self.create_subscription(ContactReport, value["contacts_topic"], self.callback_guard.timer(self._on_report),
                                 LATCHED_QOS)
        self.create_subscription(MarkerArray, value["scene_objects_topic"],
                                 self.callback_guard.timer(self.view.draw_scene_markers), LATCHED_QOS)
        self.get_logger().info(f"serving the browser view at {self.view.url}")
        print(f"serving the browser view at {self.view.url}", flush=True)

    def _on_report(self, report: ContactReport) -> None:
        self.view.draw(report, title="last contact report")

    def destroy_node(self) -> None:
        self.view.close()
        super().destroy_node()


def main(args=None) -> int:
    return run_node(WebViewNode, NODE_NAME, SingleThreadedExecutor, args)


if __name__ == "__main__":
    sys.exit(main())
