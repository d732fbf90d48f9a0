"""What both node executables share: start-up errors, numeric parameters, the spin loop."""
from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.node import Node


class ConfigurationError(Exception):
    """A parameter is missing or invalid, or the model cannot be loaded: the node cannot start."""


def number_parameter(node: Node, name: str, kind: type, low: float, high: float):
    """A numeric parameter as ``kind`` (float or int), range-checked.

    Parameters are declared with dynamic typing so that ``:=0`` (an integer) is as
    good as ``:=0.0``; this converts and checks.

    Raises
    ------
    ConfigurationError
        Naming the parameter, for a non-number, a fraction where a whole number is
        needed, or a value outside ``[low, high]``.
    """
    value = node.get_parameter(name).value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"parameter '{name}' must be a number, got {value!r}")
    if kind is int and float(value) != int(value):
        raise ConfigurationError(f"parameter '{name}' must be a whole number, got {value!r}")
    value = kind(value)
    if not (low <= value <= high):
        raise ConfigurationError(f"parameter '{name}' = {value} is outside [{low}, {high}]")
    return value


def run_node(make_node: Callable[[], Node], name: str, make_executor: Callable[[], Executor], args=None) -> int:
    """Init, build the node, spin until Ctrl-C or shutdown, clean up; the process's exit code.

    A bad configuration ends start-up with one line on stderr and exit code 1.
    """
    rclpy.init(args=args)
    try:
        node = make_node()
    except (ConfigurationError, ParameterException) as exc:
        print(f"{name}: cannot start: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    executor = make_executor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
