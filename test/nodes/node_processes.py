"""Node executables as real processes, and Panda configurations for the node tests."""
from __future__ import annotations

import os
import signal
import subprocess

from ament_index_python.packages import get_package_prefix

from my_collision_pkg.models import panda_paths

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
ARM = [f"panda_joint{i}" for i in range(1, 8)]
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]           # the SRDF's "default" state
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]          # reaches down through the table


def executable(name: str) -> str:
    return os.path.join(get_package_prefix("my_collision_pkg"), "lib", "my_collision_pkg", name)


def ros_args(params: dict) -> list[str]:
    args = ["--ros-args"]
    for key, value in params.items():
        args += ["-p", f"{key}:={value}"]
    return args


class NodeProcess:
    """One node executable in its own process; stopped with SIGINT, then killed."""

    def __init__(self, name: str, params: dict, extra_args: list[str] | None = None) -> None:
        self.process = subprocess.Popen([executable(name)] + ros_args(params) + (extra_args or []),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stdout.read() if self.process.stdout else ""


def panda_params(**overrides) -> dict:
    urdf, srdf = panda_paths()
    params = {"urdf_path": urdf, "srdf_path": srdf, "scene_path": PANDA_WORLD}
    params.update(overrides)
    return params
