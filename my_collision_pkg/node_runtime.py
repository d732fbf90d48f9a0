"""What both node executables share: start-up errors, numeric parameters, the spin loop."""
from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from . import stop_request


# How often the spin loop looks for a stop request, seconds (work is served at once).
SPIN_PERIOD_S = 0.1


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
    """Init, build the node, spin until Ctrl-C or SIGTERM, clean up; the process's exit code.

    A bad configuration ends start-up with one line on stderr and exit code 1.
    SIGINT and SIGTERM only note that a stop was asked (see stop_request; the
    entry scripts install that first); the spin loop looks every SPIN_PERIOD_S and
    then stops in order: callbacks finish, the node is destroyed, the context shut
    down. rclpy's own handlers would shut the context down at once, under a node
    still being built or a callback still publishing (RCLError "context is
    invalid").
    """
    stop_request.install()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = make_node()
    except (ConfigurationError, ParameterException) as exc:
        print(f"{name}: cannot start: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    executor = make_executor()
    executor.add_node(node)
    try:
        while not stop_request.STOP_ASKED.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
