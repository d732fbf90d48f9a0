"""A small Python client of the collision_validator services.

It spins its own node in one long-lived executor thread and waits on futures
with a timeout, which keeps a round trip near the transport's floor (building an
executor per call, as ``spin_until_future_complete`` does, costs milliseconds).
Never use it from inside a callback of the same executor. It is thread-safe: many
threads may call through one client at once (its service QoS keeps up to
``ros.qos.SERVICE_QUEUE_DEPTH`` calls in flight without loss).

A service that does not answer in time raises :class:`ServiceTimeout`, whose message
is one line naming the service and the time waited: a script catches it, prints it
and exits 1 (see :func:`exit_on_client_error`). With ``server_alive`` (a callable,
e.g. a started process's ``poll() is None``) the waits end as soon as the server
is gone, with :class:`ServerExited`.

A check (no side effects) on a service that has not yet answered this client, with no
answer after RESEND_AFTER_S, is sent again, and the first answer is taken: an answer
to a request that reached the server before the server discovered this client is
lost in the transport (see RESEND_AFTER_S).
"""
from __future__ import annotations

import array
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

from my_collision_pkg.srv import ApplyCollisionObjects, CheckValidity, CheckValidityBatch, ExplainCollision
from my_collision_pkg.msg import AllowedCollisionDefault, AllowedCollisionEntry
from my_collision_pkg.srv import CheckMotion, CheckTrajectory, ComputeClearance
from my_collision_pkg.srv import GetAllowedCollisions, SetAllowedCollisions
from my_collision_pkg.srv import ClearOctomap, SetOctomap

from my_collision_pkg.ros.conversions import collector_paused
from my_collision_pkg.ros.qos import SERVICE_QOS

DEFAULT_TIMEOUT_S = 10.0


# How often a wait looks at ``server_alive``, seconds.
ALIVE_POLL_S = 0.1
# A check that has no answer this long after it was sent is sent again (then after twice
# as long since the last send, and so on, at most MAX_RESENDS times), and the first answer
# to either send is taken. A server sends an answer only to a client whose reply reader it
# has discovered (rmw_fastrtps waits ~100 ms for it); a request that arrives before that,
# right after the client appeared on a loaded machine, is served and its answer lost.
# So only until a service has answered this client once (after that, its server knows
# the client's reply reader, and a slow answer is a long request, not worth doing twice);
# and only the services without side effects (IDEMPOTENT_SERVICES): a scene update is
# never sent again, and times out instead.
RESEND_AFTER_S = 2.0
MAX_RESENDS = 3
IDEMPOTENT_SERVICES = frozenset({"check", "batch", "explain", "motion", "trajectory", "clearance", "get_allowed"})


def resend_times(start: float, deadline: float) -> list[float]:
    """When a request sent at ``start`` (monotonic seconds) is sent again if still unanswered:
    RESEND_AFTER_S after it, then doubling gaps, at most MAX_RESENDS, all before ``deadline``."""
    times, gap, at = [], RESEND_AFTER_S, start
    while len(times) < MAX_RESENDS and at + gap < deadline:
        at += gap
        times.append(at)
        gap *= 2
    return times


class ServiceTimeout(RuntimeError):
    """A service did not answer (or was not advertised) in time; the message is one line.

    Attributes
    ----------
    service : str
        The service's full name, e.g. ``/collision_validator/check_motion``.
    timeout_s : float
        How long the client waited.
    """

    def __init__(self, message: str, service: str = "", timeout_s: float = float("nan")) -> None:
        super().__init__(message)
        self.service = service
        self.timeout_s = timeout_s


class ServerExited(RuntimeError):
    """The server's process ended while a call or a wait for its services was pending."""

    def __init__(self, message: str, service: str = "") -> None:
        super().__init__(message)
        self.service = service


def exit_on_client_error(main: Callable[[], int], prog: str) -> int:
    """Run ``main``; a :class:`ServiceTimeout` or :class:`ServerExited` is one line on stderr and exit code 1."""
    try:
        return main()
    except (ServiceTimeout, ServerExited) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1


class ValidatorClient:
    """Blocking calls to a running collision_validator.

    Parameters
    ----------
    validator : str
        Fully qualified node name of the validator (services are ``<validator>/<service>``).
    context : rclpy Context, optional
        An initialised context; by default a private one is made (and shut down by :meth:`close`).
    node_name : str
        The client's own node name.
    timeout_s : float
        How long a call waits for its answer, seconds.
    server_alive : callable, optional
        ``server_alive()`` is False once the server is known to be gone (its process
        exited); waits then end at once with :class:`ServerExited`.
    """

    def __init__(self, validator: str = "/collision_validator", *, context: Context | None = None,
                 node_name: str = "collision_validator_client", timeout_s: float = DEFAULT_TIMEOUT_S,
                 server_alive: Callable[[], bool] | None = None) -> None:
        self._server_alive = server_alive
        self._answered: set[str] = set()     # services that have answered this client at least once
        self._own_context = context is None
        if context is None:
            context = Context()
            rclpy.init(context=context)
        self._context = context
        self._timeout_s = timeout_s
        self.node = rclpy.create_node(node_name, context=context)
        # SERVICE_QOS (deep queues) on the client side too: with ROS 2's default depth of 10,
        # answers to more than 10 calls in flight from threads sharing this client are dropped.
        self._clients = {
            "check": self.node.create_client(CheckValidity, f"{validator}/check_validity", qos_profile=SERVICE_QOS),
            "batch": self.node.create_client(CheckValidityBatch, f"{validator}/check_validity_batch",
                                             qos_profile=SERVICE_QOS),
            "explain": self.node.create_client(ExplainCollision, f"{validator}/explain", qos_profile=SERVICE_QOS),
            "apply": self.node.create_client(ApplyCollisionObjects, f"{validator}/apply_collision_objects",
                                             qos_profile=SERVICE_QOS),
            "motion": self.node.create_client(CheckMotion, f"{validator}/check_motion", qos_profile=SERVICE_QOS),
            "trajectory": self.node.create_client(CheckTrajectory, f"{validator}/check_trajectory",
                                                  qos_profile=SERVICE_QOS),
            "clearance": self.node.create_client(ComputeClearance, f"{validator}/compute_clearance",
                                                 qos_profile=SERVICE_QOS),
            "set_allowed": self.node.create_client(SetAllowedCollisions, f"{validator}/set_allowed_collisions",
                                                   qos_profile=SERVICE_QOS),
            "get_allowed": self.node.create_client(GetAllowedCollisions, f"{validator}/get_allowed_collisions",
                                                   qos_profile=SERVICE_QOS),
            "clear_octomap": self.node.create_client(ClearOctomap, f"{validator}/clear_octomap",
                                                     qos_profile=SERVICE_QOS),
            "set_octomap": self.node.create_client(SetOctomap, f"{validator}/set_octomap", qos_profile=SERVICE_QOS),
        }
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self._executor.spin()
        except Exception:  # the context was shut down while spinning
            pass

    @property
    def timeout_s(self) -> float:
        """How long a call waits for its answer, seconds."""
        return self._timeout_s

    def service_name(self, which: str) -> str:
        """The full name of service ``which`` ("check", "batch", "explain", "apply", "motion", "trajectory",
        "clearance", "set_allowed", "get_allowed", "clear_octomap", "set_octomap")."""
        return self._clients[which].srv_name

    def _check_alive(self, service: str, doing: str) -> None:
        if self._server_alive is not None and not self._server_alive():
            raise ServerExited(f"the server of '{service}' exited {doing}", service)

    def wait_for_services(self, timeout_s: float = 30.0, services=("check", "batch", "explain", "apply")) -> None:
        """Block until the services are available (by default all four), ``timeout_s`` for all of them.

        Raises
        ------
        ServiceTimeout
            Naming the first service not advertised within ``timeout_s``.
        ServerExited
            If ``server_alive`` says the server is gone.
        """
        deadline = time.monotonic() + timeout_s
        for name in services:
            client = self._clients[name]
            while True:
                self._check_alive(client.srv_name, "before advertising it")
                left_s = deadline - time.monotonic()
                step_s = min(left_s, ALIVE_POLL_S) if self._server_alive is not None else left_s
                if client.wait_for_service(timeout_sec=max(step_s, 0.0)):
                    break
                if time.monotonic() >= deadline:
                    raise ServiceTimeout(f"service '{client.srv_name}' not available after {timeout_s:g} s",
                                         client.srv_name, timeout_s)

    def _call(self, which: str, request, fields: dict | None = None):
        """Set ``fields`` (other request fields by name) on ``request``, call service ``which``, wait for the answer.

        Raises
        ------
        ServiceTimeout
            If no answer comes within the client's timeout.
        """
        for name, value in (fields or {}).items():
            setattr(request, name, value)
        client = self._clients[which]
        done = threading.Event()
        answered: list = []

        def send():
            future = client.call_async(request)
            future.add_done_callback(lambda f: (answered.append(f), done.set()))
            return future

        futures = [send()]
        start = time.monotonic()
        deadline = start + self._timeout_s
        first = which not in self._answered
        resends = resend_times(start, deadline) if first and which in IDEMPOTENT_SERVICES else []
        try:
            while True:
                now = time.monotonic()
                wake = min([deadline] + resends[:1] + ([now + ALIVE_POLL_S] if self._server_alive else []))
                if done.wait(max(wake - now, 0.0)):
                    self._answered.add(which)
                    return answered[0].result()
                if self._server_alive is not None and not self._server_alive():
                    raise ServerExited(f"the server of '{client.srv_name}' exited before answering", client.srv_name)
                if time.monotonic() >= deadline:
                    raise ServiceTimeout(f"service '{client.srv_name}' did not answer within {self._timeout_s:g} s",
                                         client.srv_name, self._timeout_s)
                if resends and time.monotonic() >= resends[0]:
                    resends.pop(0)
                    futures.append(send())
        finally:
            for future in futures:
                if not future.done():
                    client.remove_pending_request(future)

    def check(self, joint_names, positions, **fields) -> CheckValidity.Response:
        request = CheckValidity.Request(joint_names=list(joint_names), positions=[float(v) for v in positions])
        return self._call("check", request, fields)

    def check_batch(self, joint_names, positions_rows, **fields) -> CheckValidityBatch.Response:
        """Rows of positions (N, K): a list of rows or a numpy array (copied without a Python loop)."""
        if isinstance(positions_rows, np.ndarray):
            flat = np.ascontiguousarray(positions_rows, dtype=float).ravel()
        else:
            flat = [float(v) for row in positions_rows for v in row]
        request = CheckValidityBatch.Request(joint_names=list(joint_names), positions=flat)
        return self._call("batch", request, fields)

    def explain(self, joint_names, positions, **fields) -> ExplainCollision.Response:
        request = ExplainCollision.Request(joint_names=list(joint_names), positions=[float(v) for v in positions])
        return self._call("explain", request, fields)

    def apply(self, objects) -> ApplyCollisionObjects.Response:
        return self._call("apply", ApplyCollisionObjects.Request(objects=list(objects)))

    def check_motion(self, joint_names, start, goal, **fields) -> CheckMotion.Response:
        """The straight joint-space motion ``start`` -> ``goal``; ``fields`` set other request fields (mode, ...)."""
        request = CheckMotion.Request(joint_names=list(joint_names), start=[float(v) for v in start],
                                      goal=[float(v) for v in goal])
        return self._call("motion", request, fields)

    def check_trajectory(self, trajectory, **fields) -> CheckTrajectory.Response:
        """A trajectory_msgs/JointTrajectory; ``fields`` set other request fields (mode, stop_at_first_contact, ...)."""
        request = CheckTrajectory.Request(trajectory=trajectory)
        return self._call("trajectory", request, fields)

    def compute_clearance(self, joint_names, positions_rows, influence_distance: float,
                          **fields) -> ComputeClearance.Response:
        """Every checked pair within ``influence_distance`` (m) of touching, for one configuration
        (a flat row) or N (rows, or an (N, K) array); ``fields`` set other request fields
        (``max_rows_per_configuration``, ``compute_jacobians``, ``group_name``, padding switches).

        ``conversions.clearance_from_response(response)`` gives the rows as numpy arrays.
        Python's cyclic garbage collector is paused while the call waits (the answer's
        hundreds of thousands of Point messages are made by the executor thread, and
        collections walking them cost more than the transport; the messages hold no cycles).
        """
        flat = np.ascontiguousarray(positions_rows, dtype=float).ravel()
        request = ComputeClearance.Request(joint_names=list(joint_names), influence_distance=float(influence_distance))
        request.positions = array.array("d", flat.tobytes())
        with collector_paused():
            return self._call("clearance", request, fields)

    def set_allowed_collisions(self, entries=(), defaults=(), *, replace: bool = False) -> SetAllowedCollisions.Response:
        """Edit the allowed collision matrix: ``entries`` of (name, name, allowed), ``defaults`` of (name, allowed)."""
        request = SetAllowedCollisions.Request(
            entries=[AllowedCollisionEntry(name_1=a, name_2=b, allowed=bool(allowed)) for a, b, allowed in entries],
            defaults=[AllowedCollisionDefault(name=name, allowed=bool(allowed)) for name, allowed in defaults],
            replace=bool(replace))
        return self._call("set_allowed", request)

    def get_allowed_collisions(self, names=()) -> GetAllowedCollisions.Response:
        """The effective matrix over ``names`` (default: every link with geometry and every object)."""
        return self._call("get_allowed", GetAllowedCollisions.Request(names=list(names)))

    def clear_octomap(self) -> ClearOctomap.Response:
        """Forget every cell of the occupancy map ``<octomap>``; the answer counts the cells removed."""
        return self._call("clear_octomap", ClearOctomap.Request())

    def set_octomap(self, file_path: str = "", points_xyz_m=None, resolution_m: float = 0.0) -> SetOctomap.Response:
        """Replace the occupancy map by an octomap file (``.bt`` / ``.ot``, on the node's machine) or by the
        cells holding points (N, 3) in the planning frame, metres (``resolution_m`` 0: the node's
        ``octomap_resolution``). Neither: the map is cleared."""
        request = SetOctomap.Request(file_path=str(file_path), resolution_m=float(resolution_m))
        if points_xyz_m is not None:
            flat = np.ascontiguousarray(points_xyz_m, dtype=float).ravel()
            request.points_xyz_m = array.array("d", flat.tobytes())
        return self._call("set_octomap", request)

    def close(self) -> None:
        """Stop spinning, then destroy the node (no callback runs on a destroyed handle), then the context."""
        self._executor.shutdown()
        self._thread.join(timeout=5.0)
        self.node.destroy_node()
        if self._own_context:
            rclpy.try_shutdown(context=self._context)

    def __enter__(self) -> "ValidatorClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
