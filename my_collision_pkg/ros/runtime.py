"""What the node executables share: start-up errors, numeric parameters (declared and read
from one table), service callbacks that never let an exception escape, the spin loop.

The QoS profiles live in :mod:`my_collision_pkg.ros.qos`; ``SERVICE_QOS`` is also
imported here, where ``node_runtime.SERVICE_QOS`` (an old public path) finds it.
"""
from __future__ import annotations

import functools
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import rclpy
from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from my_collision_pkg.ros import stop_request
# Re-exported: node_runtime.SERVICE_QOS, an old public path, forwards here.
from my_collision_pkg.ros.qos import SERVICE_QOS, SERVICE_QUEUE_DEPTH  # noqa: F401


# How often the spin loop looks for a stop request, seconds (work is served at once).
SPIN_PERIOD_S = 0.1


def ament_package_share(package: str) -> str | None:
    """The share folder of an installed ROS package (the ament index), or None if there is none.

    The core's ``package://`` lookup (``load_scene(find_package_share=...)``): the core itself
    never imports ament_index_python.
    """
    try:
        return get_package_share_directory(package)
    except (PackageNotFoundError, ValueError, LookupError, OSError):
        return None


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


@dataclass(frozen=True)
class NumberParameter:
    """A numeric node parameter: declared with its range once, read back range-checked.

    Attributes
    ----------
    name : str
    kind : type
        ``float`` or ``int``: what :meth:`read` returns.
    low, high : float
        The accepted range, both ends included; also the descriptor's range.
    description : str
    """
    name: str
    kind: type
    low: float
    high: float
    description: str

    def descriptor(self) -> ParameterDescriptor:
        """Dynamic typing (``:=0`` is as good as ``:=0.0``) with the range, integer or floating point."""
        d = ParameterDescriptor(description=self.description, dynamic_typing=True)
        if self.kind is int:
            d.integer_range = [IntegerRange(from_value=int(self.low), to_value=int(self.high), step=1)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(self.low), to_value=float(self.high),
                                                         step=0.0)]
        return d

    def declare(self, node: Node, default) -> None:
        """Declare the parameter on ``node`` with ``default``."""
        node.declare_parameter(self.name, default, self.descriptor())

    def read(self, node: Node):
        """The value as :attr:`kind`; raises ConfigurationError as :func:`number_parameter` does."""
        return number_parameter(node, self.name, self.kind, self.low, self.high)


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def refuse(response_type: type, message: str):
    """A fresh response of ``response_type`` that refuses the request with ``message``.

    Sets whichever of the usual fields the type has: ``valid = False``, ``status =
    INVALID_REQUEST``, ``success = False``, ``message``.
    """
    response = response_type()
    if hasattr(response, "valid") and isinstance(response.valid, bool):
        response.valid = False
    if hasattr(response, "status") and hasattr(response_type, "INVALID_REQUEST"):
        response.status = response_type.INVALID_REQUEST
    if hasattr(response, "success"):
        response.success = False
    if hasattr(response, "message"):
        response.message = message
    return response


class CallbackGuard:
    """Wraps service callbacks so that no exception leaves them.

    An unexpected exception answers the request with :func:`refuse` and a message
    naming the exception; its traceback is logged once per (callback, exception type,
    place raised), later ones of the same kind get one line. The node keeps serving.

    Use ``node.create_service(Srv, name, guard.service(callback, Srv), ...)``, or
    :meth:`timer` for timer and subscription callbacks (nothing to answer there).
    """

    def __init__(self, logger) -> None:
        self._logger = logger
        self._seen: set[tuple] = set()
        self._lock = threading.Lock()
        self.failures = 0

    def _report(self, name: str, exc: BaseException) -> str:
        tb = traceback.extract_tb(exc.__traceback__)
        where = (tb[-1].filename, tb[-1].lineno) if tb else ("", 0)
        key = (name, type(exc).__name__, where)
        with self._lock:
            self.failures += 1
            first = key not in self._seen
            self._seen.add(key)
        summary = f"{type(exc).__name__}: {_one_line(exc)}"
        if first:
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self._logger.error(f"{name} failed with an unexpected {summary}; the node keeps serving\n{text}")
        else:
            self._logger.error(f"{name} failed again with an unexpected {summary} (traceback logged before)")
        return summary

    def service(self, callback: Callable, srv_type: type) -> Callable:
        """``callback(request, response) -> response`` that answers instead of raising."""
        name = getattr(callback, "__name__", repr(callback))

        @functools.wraps(callback)
        def guarded(request, response):
            try:
                return callback(request, response)
            except Exception as exc:  # noqa: BLE001 - every exception becomes an answer
                summary = self._report(name, exc)
                return refuse(srv_type.Response, f"internal error, request not served: {summary}")
        return guarded

    def timer(self, callback: Callable) -> Callable:
        """A callback without an answer (timer, subscription) that logs instead of raising."""
        name = getattr(callback, "__name__", repr(callback))

        @functools.wraps(callback)
        def guarded(*args):
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001
                self._report(name, exc)
                return None
        return guarded


def run_node(make_node: Callable[[], Node], name: str, make_executor: Callable[[], Executor], args=None) -> int:
    """Init, build the node, spin until Ctrl-C or SIGTERM, clean up; the process's exit code.

    A bad configuration ends start-up with one line on stderr and exit code 1; so
    does any other exception raised while the node is built (named by its type).
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
        print(f"{name}: cannot start: {_one_line(exc)}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    except Exception as exc:  # noqa: BLE001 - a start-up fault is one line, not a traceback
        print(f"{name}: cannot start: unexpected {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
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
