"""What the node executables share: start-up errors, numeric parameters (declared and read
from one table; read-only, or taking effect at run time through :class:`DynamicParameters`),
service callbacks that never let an exception escape and that a stop refuses or waits for,
the node built in a worker thread (a stop during start-up ends the process at once), the
spin loop and its bounded, orderly stop, and the allocator trim after big requests.

The QoS profiles live in :mod:`my_collision_pkg.ros.qos`; ``SERVICE_QOS`` is also
imported here, where ``node_runtime.SERVICE_QOS`` (an old public path) finds it.
"""
from __future__ import annotations

import functools
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import rclpy
from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from my_collision_pkg.core import errors as core_errors
from my_collision_pkg.core.memory import release_free_memory
from my_collision_pkg.ros import stop_request
# Re-exported: node_runtime.SERVICE_QOS, an old public path, forwards here.
from my_collision_pkg.ros.qos import SERVICE_QOS, SERVICE_QUEUE_DEPTH  # noqa: F401


# How often the spin loop looks for a stop request, seconds (work is served at once).
SPIN_PERIOD_S = 0.1
# On a stop, how long callbacks in flight may take to finish; past it the process ends
# without destroying the node under them (stop_request.STOP_DEADLINE_S bounds it all).
IN_FLIGHT_WAIT_S = 1.5
# The answer to a request that a stop cut short, or that came in after the stop.
SHUTTING_DOWN = "node shutting down"
# Raised by the core when its stop event is set mid-check.
REQUEST_STOPPED = core_errors.RequestStopped


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


# ----- parameters --------------------------------------------------------------------
def check_number(name: str, value, kind: type, low: float, high: float):
    """``value`` of parameter ``name`` as ``kind`` (float or int), range-checked.

    Raises
    ------
    ConfigurationError
        Naming the parameter, for a non-number, a fraction where a whole number is
        needed, or a value outside ``[low, high]``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"parameter '{name}' must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigurationError(f"parameter '{name}' must be a finite number in [{low}, {high}], got {value!r}")
    if kind is int and float(value) != int(value):
        raise ConfigurationError(f"parameter '{name}' must be a whole number, got {value!r}")
    value = kind(value)
    if not (low <= value <= high):
        raise ConfigurationError(f"parameter '{name}' = {value} is outside [{low}, {high}]")
    return value


def number_parameter(node: Node, name: str, kind: type, low: float, high: float):
    """A numeric parameter as ``kind`` (float or int), range-checked.

    Parameters are declared with dynamic typing so that ``:=0`` (an integer) is as
    good as ``:=0.0``; this converts and checks.

    Raises
    ------
    ConfigurationError
        As :func:`check_number`.
    """
    return check_number(name, node.get_parameter(name).value, kind, low, high)


def check_bool(name: str, value) -> bool:
    """``value`` of parameter ``name`` if it is a bool; raises ConfigurationError naming the parameter."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"parameter '{name}' must be true or false, got {value!r}")
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
    dynamic : bool
        True: it may be set while the node runs (the node applies it, see
        :class:`DynamicParameters`); False (default): read-only after start-up,
        ``set_parameters`` refuses it with a reason.
    """
    name: str
    kind: type
    low: float
    high: float
    description: str
    dynamic: bool = False

    def descriptor(self) -> ParameterDescriptor:
        """Dynamic typing (``:=0`` is as good as ``:=0.0``) with the range, integer or floating point;
        read-only unless :attr:`dynamic`."""
        d = ParameterDescriptor(description=self.description, dynamic_typing=True, read_only=not self.dynamic)
        if self.kind is int:
            d.integer_range = [IntegerRange(from_value=int(self.low), to_value=int(self.high), step=1)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(self.low), to_value=float(self.high),
                                                         step=0.0)]
        return d

    def declare(self, node: Node, default) -> None:
        """Declare the parameter on ``node`` with ``default``."""
        node.declare_parameter(self.name, default, self.descriptor())

    def check(self, value):
        """``value`` as :attr:`kind`; raises ConfigurationError as :func:`check_number` does."""
        return check_number(self.name, value, self.kind, self.low, self.high)

    def read(self, node: Node):
        """The value as :attr:`kind`; raises ConfigurationError as :func:`number_parameter` does."""
        return self.check(node.get_parameter(self.name).value)


class NamedParameterRefusals:
    """A Node mixin: every refused parameter set names its parameters.

    The SetParameters services call :meth:`set_parameters_atomically` per request. rclpy's
    own checks run before the node's callbacks, and some of their reasons do not say which
    parameter they refuse ("Wrong parameter type, expected 'Type.BOOL' got 'Type.DOUBLE'"
    for ``use_sim_time``); such a reason gets ``parameter '<name>': `` in front.
    """

    def set_parameters_atomically(self, parameter_list: list[Parameter]) -> SetParametersResult:
        result = super().set_parameters_atomically(parameter_list)
        if not result.successful and any(p.name not in result.reason for p in parameter_list):
            names = ", ".join(f"'{p.name}'" for p in parameter_list)
            result.reason = f"parameter {names}: {result.reason}"
        return result


class DynamicParameters:
    """The parameters of a node that take effect at run time.

    ``add(name, check, apply)``: on ``set_parameters``, ``check(value)`` converts the new
    value or raises ConfigurationError (the request is then refused with that message,
    which names the parameter, and nothing changes); once every changed parameter of the
    request passed its check, ``apply(value)`` of each makes it take effect. Parameters
    not added here are left to their descriptors (read-only ones are refused by rclpy
    before this is asked). Create it after the parameters are declared: rclpy calls the
    callback for declarations too.
    """

    def __init__(self, node: Node) -> None:
        self._rows: dict[str, tuple[Callable, Callable]] = {}
        self._lock = threading.Lock()
        node.add_on_set_parameters_callback(self._on_set)

    def add(self, name: str, check: Callable, apply: Callable) -> None:
        self._rows[name] = (check, apply)

    @property
    def names(self) -> tuple[str, ...]:
        """The parameters that take effect at run time, in the order added."""
        return tuple(self._rows)

    def _on_set(self, parameters: list[Parameter]) -> SetParametersResult:
        """Every set is answered: a check or an apply that raises anything refuses the set, naming
        the parameter (an exception leaving this callback would end the node's executor)."""
        try:
            return self._checked_set(parameters)
        except Exception as exc:  # noqa: BLE001 - refused with the reason; the node keeps serving
            names = ", ".join(f"'{p.name}'" for p in parameters)
            return SetParametersResult(successful=False,
                                       reason=f"parameter {names}: {type(exc).__name__}: {_one_line(exc)}")

    def _checked_set(self, parameters: list[Parameter]) -> SetParametersResult:
        with self._lock:
            changes = []
            for parameter in parameters:
                row = self._rows.get(parameter.name)
                if row is None:
                    continue
                if parameter.type_ == Parameter.Type.NOT_SET:
                    return SetParametersResult(successful=False,
                                               reason=f"parameter '{parameter.name}' cannot be unset")
                try:
                    changes.append((parameter.name, row[0](parameter.value), row[1]))
                except ConfigurationError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
            for name, value, apply in changes:
                try:
                    apply(value)
                except (ConfigurationError, ValueError, core_errors.CollisionPkgError) as exc:
                    return SetParametersResult(successful=False, reason=f"parameter '{name}': {_one_line(exc)}")
            return SetParametersResult(successful=True)


# ----- callbacks ---------------------------------------------------------------------
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


def is_refusal(response) -> bool:
    """Whether ``response`` refuses its request (what :func:`refuse` sets): ``success`` false,
    or ``status`` INVALID_REQUEST where the type has that constant."""
    if isinstance(getattr(response, "success", None), bool) and not response.success:
        return True
    invalid = getattr(type(response), "INVALID_REQUEST", None)
    return invalid is not None and getattr(response, "status", None) == invalid


def _stopped_by_the_stop(exc: BaseException) -> bool:
    return isinstance(exc, REQUEST_STOPPED)


class CallbackGuard:
    """Wraps service callbacks so that no exception leaves them, and lets a stop wait for them.

    An unexpected exception answers the request with :func:`refuse` and a message
    naming the exception; its traceback is logged once per (callback, exception type,
    place raised), later ones of the same kind get one line. The node keeps serving.

    :attr:`stopping` is set by :meth:`begin_stop` (``run_node`` does it on SIGINT or
    SIGTERM); a node passes it to the core as its stop event. From then on a new
    request is answered :data:`SHUTTING_DOWN` (INVALID_REQUEST) without being served,
    a request the core stops (``core.errors.RequestStopped``) or that fails while
    stopping gets that answer too, without a log line, and timer or subscription
    callbacks are skipped. :meth:`wait_idle` waits for the callbacks in flight.

    Use ``node.create_service(Srv, name, guard.service(callback, Srv), ...)``, or
    :meth:`timer` for timer and subscription callbacks (nothing to answer there).
    """

    def __init__(self, logger) -> None:
        self._logger = logger
        self._seen: set[tuple] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self.failures = 0
        self.stopping = threading.Event()

    def begin_stop(self) -> None:
        """Refuse new requests from now on and tell the core to stop (sets :attr:`stopping`)."""
        self.stopping.set()

    @property
    def in_flight(self) -> int:
        """Callbacks running now."""
        with self._lock:
            return self._in_flight

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for no callback to be running; True if none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout_s)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1

    def _leave(self) -> None:
        with self._idle:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.notify_all()

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
            if self.stopping.is_set():
                return refuse(srv_type.Response, SHUTTING_DOWN)
            self._enter()
            try:
                return callback(request, response)
            except Exception as exc:  # noqa: BLE001 - every exception becomes an answer
                if self.stopping.is_set() or _stopped_by_the_stop(exc):
                    return refuse(srv_type.Response, SHUTTING_DOWN)
                summary = self._report(name, exc)
                return refuse(srv_type.Response, f"internal error, request not served: {summary}")
            finally:
                self._leave()
        return guarded

    def timer(self, callback: Callable) -> Callable:
        """A callback without an answer (timer, subscription) that logs instead of raising."""
        name = getattr(callback, "__name__", repr(callback))

        @functools.wraps(callback)
        def guarded(*args):
            if self.stopping.is_set():
                return None
            self._enter()
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001
                if not (self.stopping.is_set() or _stopped_by_the_stop(exc)):
                    self._report(name, exc)
                return None
            finally:
                self._leave()
        return guarded


# ----- memory --------------------------------------------------------------------------
class MemoryReturn:
    """Gives freed memory back to the system a moment after a big request, off the request's path.

    :meth:`after_big_request` (called by a callback whose request was above a size)
    schedules one :func:`release_free_memory` ``delay_s`` later in a daemon thread, by
    when the answer has been sent and its buffers freed; calls while one is pending add
    nothing. Small requests never call it.
    """

    def __init__(self, delay_s: float = 0.25) -> None:
        self._delay_s = delay_s
        self._lock = threading.Lock()
        self._pending = False
        self.releases = 0

    def after_big_request(self) -> None:
        with self._lock:
            if self._pending:
                return
            self._pending = True
        timer = threading.Timer(self._delay_s, self._release)
        timer.daemon = True
        timer.start()

    def _release(self) -> None:
        with self._lock:
            self._pending = False
        release_free_memory()
        self.releases += 1


# ----- the process -------------------------------------------------------------------
def _build_in_worker(make_node: Callable[[], Node], name: str) -> Node | BaseException:
    """``make_node()`` in a worker thread while the main thread waits, free to take a signal.

    A stop during start-up ends the process from the signal handler (stop_request's
    start-up phase): a compiler holding the worker cannot delay it.
    """
    outcome: list = []
    done = threading.Event()

    def build() -> None:
        try:
            outcome.append(make_node())
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            outcome.append(exc)
        finally:
            done.set()

    threading.Thread(target=build, name=f"{name}_start_up", daemon=True).start()
    while not done.wait(SPIN_PERIOD_S):
        pass
    return outcome[0]


def _executor_idle(executor: Executor, timeout_s: float) -> bool:
    """Whether the executor's own work (a response being sent) finished within ``timeout_s``."""
    tracker = getattr(executor, "_work_tracker", None)     # rclpy's count of executing tasks (Jazzy)
    if tracker is None or not hasattr(tracker, "wait"):
        return True
    return bool(tracker.wait(max(0.0, timeout_s)))


def run_node(make_node: Callable[[], Node], name: str, make_executor: Callable[[], Executor], args=None) -> int:
    """Init, build the node, spin until Ctrl-C or SIGTERM, clean up; the process's exit code.

    The node is built in a worker thread: SIGINT or SIGTERM before it is built ends the
    process at once with exit code 0 (stop_request, start-up phase). A bad configuration
    ends start-up with one line on stderr and exit code 1; so does any other exception
    raised while the node is built (named by its type).

    Once it runs, a stop sets the node's ``callback_guard.stopping`` (if it has a
    :class:`CallbackGuard` there: new requests are refused, the core stops long ones),
    then waits up to IN_FLIGHT_WAIT_S for the callbacks in flight, destroys the node and
    shuts the context down; if a callback is still running then, the process ends without
    destroying the node under it (a callback publishing into a destroyed publisher would
    raise). Exit code 0 either way, within stop_request.STOP_DEADLINE_S. rclpy's own
    handlers would shut the context down at once, under a node still being built or a
    callback still publishing (RCLError "context is invalid").
    """
    stop_request.install()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = _build_in_worker(make_node, name)
    if isinstance(node, (ConfigurationError, ParameterException)):
        print(f"{name}: cannot start: {_one_line(node)}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    if isinstance(node, BaseException):
        print(f"{name}: cannot start: unexpected {type(node).__name__}: {_one_line(node)}", file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    guard = getattr(node, "callback_guard", None)
    if isinstance(guard, CallbackGuard):
        stop_request.on_stop(guard.begin_stop)
    executor = make_executor()
    executor.add_node(node)
    stop_request.running()
    try:
        while not stop_request.STOP_ASKED.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
    except ExternalShutdownException:
        pass
    deadline = time.monotonic() + IN_FLIGHT_WAIT_S
    idle = True
    if isinstance(guard, CallbackGuard):
        guard.begin_stop()
        idle = guard.wait_idle(IN_FLIGHT_WAIT_S)
    idle = idle and _executor_idle(executor, deadline - time.monotonic())
    if not idle:
        stop_request.exit_now(0)     # a callback still runs: leave without destroying the node under it
    executor.shutdown(timeout_sec=0.0)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0
