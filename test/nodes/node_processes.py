"""Node executables as real processes, and Panda configurations for the node tests."""
from __future__ import annotations

import os
from contextlib import contextmanager
import signal
import subprocess
import tempfile

import rclpy
from ament_index_python.packages import get_package_prefix
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

from my_collision_pkg.core.scene.loading import panda_paths

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
ARM = [f"panda_joint{i}" for i in range(1, 8)]
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]           # the SRDF's "default" state
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]          # reaches down through the table


def executable(name: str) -> str:
    return os.path.join(get_package_prefix("my_collision_pkg"), "lib", "my_collision_pkg", name)


def ros_args(params: dict, remaps: dict | None = None) -> list[str]:
    args = ["--ros-args"]
    for key, value in params.items():
        args += ["-p", f"{key}:={value}"]
    for key, value in (remaps or {}).items():
        args += ["-r", f"{key}:={value}"]
    return args


class NodeProcess:
    """A node executable in its own process, output to a file (a pipe left unread could fill
    and stall the node); stopped with SIGINT, then killed."""

    def __init__(self, name: str, params: dict, remaps: dict | None = None, *, log_path: str | None = None,
                 extra_args: list[str] | None = None, env: dict | None = None) -> None:
        if log_path is None:
            handle, log_path = tempfile.mkstemp(prefix=f"{name}_", suffix=".log")
            os.close(handle)
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen([executable(name)] + ros_args(params, remaps) + (extra_args or []),
                                            stdout=log, stderr=subprocess.STDOUT,
                                            env=None if env is None else {**os.environ, **env})

    def output(self) -> str:
        """What the process has written so far."""
        with open(self.log_path) as log:
            return log.read()

    def stop(self) -> str:
        """Stop the process (if running) and return its output."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with open(self.log_path) as log:
            return log.read()


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` (VmRSS in /proc), MB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS in /proc/<pid>/status")


def panda_params(**overrides) -> dict:
    urdf, srdf = panda_paths()
    params = {"urdf_path": urdf, "srdf_path": srdf, "scene_path": PANDA_WORLD}
    params.update(overrides)
    return params


@contextmanager
def listener(name: str, msg_type, topic: str, qos):
    """A node of its own context subscribed to ``topic``: yields (node, executor, received list).

    The caller spins ``executor.spin_once`` while it waits; everything is torn down on exit.
    """
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    received = []
    node.create_subscription(msg_type, topic, received.append, qos)
    try:
        yield node, executor, received
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
