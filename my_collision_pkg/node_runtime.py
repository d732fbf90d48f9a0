"""What both node executables share: start-up errors, numeric parameters, the spin loop."""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions, install_signal_handlers


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
    While the node is being built, SIGINT and SIGTERM only note that a stop was
    asked: rclpy's own handlers would shut the context down under the half-built
    node, and an interrupt raised inside a library callback can be swallowed and
    lost. rclpy's handlers take over once the node and its executor exist; a stop
    asked before that ends the process quietly, as one asked later does.
    """
    stop_asked = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop_asked.set())
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = make_node()
    except (ConfigurationError, ParameterException) as exc:
        print(f"{name}: cannot start: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    executor = make_executor()
    executor.add_node(node)
    install_signal_handlers(SignalHandlerOptions.ALL)
    try:
        if not stop_asked.is_set():
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
