"""Server processes the service benchmarks measure (a helper module, not a benchmark).

- :func:`panda_validator_command`: collision_validator on the Panda and its default world.
- :func:`serve_floor`: a server of one service type that answers without looking at the
  request, the transport's floor for that message; :func:`serve_answers` one that answers
  from a table it holds (the floor of a large answer: the same bytes, no work).
- :func:`running`: processes started for a block and stopped with SIGINT afterwards.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess

STOP_TIMEOUT_S = 20.0


def panda_world_path() -> str:
    from ament_index_python.packages import get_package_share_directory

    return os.path.join(get_package_share_directory("my_collision_pkg"), "config", "panda_world.yaml")


def panda_validator_command(**parameters) -> list[str]:
    """The collision_validator command line for the Panda and its default world, plus ``parameters``."""
    from ament_index_python.packages import get_package_prefix

    from my_collision_pkg.core.scene.loading import panda_paths

    urdf, srdf = panda_paths()
    exe = os.path.join(get_package_prefix("my_collision_pkg"), "lib", "my_collision_pkg", "collision_validator")
    values = {"urdf_path": urdf, "srdf_path": srdf, "scene_path": panda_world_path(), **parameters}
    args = [exe, "--ros-args"]
    for name, value in values.items():
        args += ["-p", f"{name}:={value}"]
    return args + ["--log-level", "warn"]


def serve_floor(srv_type, service: str, fill) -> int:
    """Run node ``floor`` serving ``~/<service>`` of ``srv_type``; ``fill(response)`` sets its answer."""
    return serve_answers(srv_type, service, lambda request, response: fill(response))


def serve_answers(srv_type, service: str, answer) -> int:
    """Run node ``floor`` serving ``~/<service>`` of ``srv_type``; ``answer(request, response)`` fills the response."""
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    from my_collision_pkg.ros.runtime import run_node

    def served(request, response):
        answer(request, response)
        return response

    def make_node():
        node = rclpy.create_node("floor")
        node.create_service(srv_type, f"~/{service}", served, callback_group=ReentrantCallbackGroup())
        return node

    return run_node(make_node, "floor", MultiThreadedExecutor)


@contextlib.contextmanager
def running(*commands: list[str]):
    """Start one process per command; on leaving, SIGINT each, then kill what has not stopped."""
    processes = [subprocess.Popen(command) for command in commands]
    try:
        yield processes
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        for process in processes:
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
