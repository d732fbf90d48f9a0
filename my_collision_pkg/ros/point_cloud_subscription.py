"""The validator's point-cloud subscription: its QoS fitted to the topic's publishers, the
newest cloud handed to the map whenever the map is free, and counts of both.

:class:`CloudSubscription` subscribes to a ``sensor_msgs/PointCloud2`` topic with depth 1
(``qos.point_cloud_qos``) and a reliability that ``point_cloud_reliability`` sets:

- ``reliable`` or ``best_effort``: that policy, fixed;
- ``auto`` (the default): every ``ADAPT_PERIOD_S`` it looks at the topic's publishers
  (``node.get_publishers_info_by_topic``) and subscribes reliable when there is at least
  one and every one offers reliable, best effort otherwise
  (``qos.reliability_for_publishers``, the choice rosbag2's recorder makes); when the
  answer changes, the subscription is made anew and one line says so. The new one comes
  first, so no cloud falls in a gap; the old one is ignored from then on and destroyed at
  the next look (an executor may still hold it in a wait set it built before).

Why it matters: a best-effort subscription does match a reliable publisher, but DDS then
sends to it best effort, and a cloud of several MB is hundreds of fragments: one lost
fragment loses the cloud, with nothing resent. That is how 300k-point clouds from a
reliable driver never arrived (docs/perception.md has the figures).

Receiving and applying are apart. The subscription's callback only keeps the message, still
serialized (a raw subscription: one copy, no message built), as the newest one and counts it
(``received``); a cloud still waiting when a newer one comes
is dropped (``replaced``). A guard condition in a callback group of its own hands the
newest waiting cloud, made a message, to ``apply(msg)`` whenever the previous one is done (folding a cloud
into the map takes 0.1-0.5 s); ``apply`` answers :data:`APPLIED`, :data:`SKIPPED` (the rate
bound) or :data:`REFUSED`. So the DDS reader is drained at the camera's rate while the map
follows at its own, and both are counted: after a burst of clouds (no cloud for
``CLOUD_PAUSE_S`` and none waiting), and every ``CLOUD_REPORT_PERIOD_S`` while clouds keep
coming, one info line gives the counts and rates of that stretch; :attr:`totals` holds
them since the start.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import PointCloud2

from my_collision_pkg.ros.qos import (POINT_CLOUD_AUTO, POINT_CLOUD_BEST_EFFORT, POINT_CLOUD_RELIABILITIES,
                                      POINT_CLOUD_RELIABLE, point_cloud_qos, reliability_for_publishers)
from my_collision_pkg.ros.runtime import ConfigurationError

PARAMETER = "point_cloud_reliability"
# How often 'auto' looks at the publishers, and the counts are looked at, seconds.
ADAPT_PERIOD_S = 1.0
# No cloud for this long (and none waiting or being applied) ends a burst: its counts are logged.
CLOUD_PAUSE_S = 1.0
# While clouds keep coming, their counts are logged this often, seconds.
CLOUD_REPORT_PERIOD_S = 60.0

APPLIED, SKIPPED, REFUSED = "applied", "skipped", "refused"
_POLICY_NAMES = {ReliabilityPolicy.RELIABLE: POINT_CLOUD_RELIABLE,
                 ReliabilityPolicy.BEST_EFFORT: POINT_CLOUD_BEST_EFFORT}


def check_reliability(value) -> str:
    """``value`` of ``point_cloud_reliability`` if it is one of POINT_CLOUD_RELIABILITIES.

    Raises
    ------
    ConfigurationError
        Naming the parameter and the allowed values, for anything else (another string,
        a number, a bool, an array).
    """
    if not isinstance(value, str) or value not in POINT_CLOUD_RELIABILITIES:
        raise ConfigurationError(f"parameter '{PARAMETER}' must be one of {', '.join(POINT_CLOUD_RELIABILITIES)}, "
                                 f"got {value!r}")
    return value


@dataclass(frozen=True)
class CloudCounts:
    """Clouds of one stretch of time (or since the start): ``received`` from DDS, and what
    became of them: ``applied`` to the map, ``skipped`` by the rate bound, ``refused``
    (malformed, unknown frame, ...), ``replaced`` by a newer cloud before the map was free.
    ``first_s`` and ``last_s``: when the first and the last were received (monotonic);
    ``policy``: the subscription's reliability when the last was received."""
    received: int = 0
    applied: int = 0
    skipped: int = 0
    refused: int = 0
    replaced: int = 0
    first_s: float = 0.0
    last_s: float = 0.0
    policy: str = ""

    @property
    def span_s(self) -> float:
        """From the first cloud received to the last one, seconds."""
        return max(0.0, self.last_s - self.first_s)

    def summary(self, topic: str) -> str:
        # a stretch of n clouds spans n - 1 periods: the rate is per period
        span_s = self.span_s
        per_s = (lambda n: f"{(n - 1) / span_s:.1f}/s" if span_s > 0 and n > 1 else "-/s")
        return (f"point clouds on '{topic}' ({self.policy}): {self.received} received in {span_s:.1f} s "
                f"({per_s(self.received)}), {self.applied} applied ({per_s(self.applied)}), {self.skipped} skipped "
                f"(octomap_max_update_rate_hz), {self.refused} refused, {self.replaced} replaced by a newer cloud "
                "before the map was free")


class CloudSubscription:
    """The subscription of ``topic`` (module docstring): ``apply(msg) -> APPLIED | SKIPPED |
    REFUSED`` is called with the newest cloud whenever the previous call returned.

    Parameters
    ----------
    node : Node
    topic : str
    apply : callable
    reliability : str
        One of POINT_CLOUD_RELIABILITIES (checked: ConfigurationError otherwise).
    wrap : callable
        Wraps every callback given to rclpy (the node's ``CallbackGuard.timer``: no
        exception escapes, nothing runs once the node stops).
    """

    def __init__(self, node: Node, topic: str, apply: Callable[[PointCloud2], str], *, reliability: str,
                 wrap: Callable[[Callable], Callable] = lambda callback: callback) -> None:
        self._node = node
        self._topic = topic
        self._apply = apply
        self._mode = check_reliability(reliability)
        self._lock = threading.Lock()
        self._pending: bytes | None = None                   # the newest cloud not yet applied, serialized
        self._applying = False
        self._stretch = CloudCounts()
        self._totals = CloudCounts()
        self._current: object | None = None                   # the live subscription's token (_subscribe)
        # subscription, timer: one group (a subscription is never replaced under its own callback);
        # the map's work in another, so that receiving never waits for it
        self._receive_group = MutuallyExclusiveCallbackGroup()
        self._apply_group = MutuallyExclusiveCallbackGroup()
        self._wrap = wrap
        self._retired = []                                    # replaced subscriptions, destroyed at the next look
        self._incompatible = 0                                # best-effort publishers a reliable subscription misses
        self._ready = node.create_guard_condition(wrap(self._apply_newest), callback_group=self._apply_group)
        self._policy = self._wanted_policy()
        self._subscription = self._subscribe(self._policy)
        self._log_subscribed()
        self._timer = node.create_timer(ADAPT_PERIOD_S, wrap(self._on_timer), callback_group=self._receive_group)

    # ----- what it reports ------------------------------------------------------
    @property
    def topic(self) -> str:
        return self._topic

    @property
    def mode(self) -> str:
        """``point_cloud_reliability``: auto, reliable or best_effort."""
        return self._mode

    @property
    def policy(self) -> str:
        """What the subscription uses now: ``reliable`` or ``best_effort``."""
        return _POLICY_NAMES[self._policy]

    @property
    def totals(self) -> CloudCounts:
        """The counts since the start."""
        with self._lock:
            return self._totals

    # ----- settings -------------------------------------------------------------
    def set_reliability(self, value) -> None:
        """A new ``point_cloud_reliability`` (checked at once; ConfigurationError naming the
        parameter otherwise). The subscription follows within ADAPT_PERIOD_S."""
        self._mode = check_reliability(value)

    def close(self) -> None:
        """Destroy the subscriptions, the timer and the guard condition."""
        self._node.destroy_timer(self._timer)
        for subscription in self._retired + [self._subscription]:
            self._node.destroy_subscription(subscription)
        self._retired = []
        self._node.destroy_guard_condition(self._ready)

    # ----- the QoS -------------------------------------------------------------
    def _wanted_policy(self) -> ReliabilityPolicy:
        if self._mode == POINT_CLOUD_RELIABLE:
            return ReliabilityPolicy.RELIABLE
        if self._mode == POINT_CLOUD_BEST_EFFORT:
            return ReliabilityPolicy.BEST_EFFORT
        publishers = self._node.get_publishers_info_by_topic(self._topic)
        return reliability_for_publishers(info.qos_profile.reliability for info in publishers)

    def _subscribe(self, policy: ReliabilityPolicy):
        token = object()                                      # this subscription's; a retired one's clouds are ignored
        self._current = token
        # no QoS event handlers: rclpy's executor can fail on an event handler destroyed from another
        # thread while it builds its wait set (InvalidHandle in add_to_wait_set, seen here); the
        # incompatible-publisher warning they would give is logged by _warn_incompatible instead
        # raw: a cloud is kept as its serialized bytes (one copy) and made a message only when it is
        # applied; most clouds are replaced unread, and receiving stays cheap beside the map's work
        return self._node.create_subscription(PointCloud2, self._topic,
                                              self._wrap(lambda data: self._receive(data, token)),
                                              point_cloud_qos(policy), callback_group=self._receive_group,
                                              event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False),
                                              raw=True)

    def _log_subscribed(self) -> None:
        why = ""
        if self._mode == POINT_CLOUD_AUTO:
            publishers = self._node.get_publishers_info_by_topic(self._topic)
            reliable = sum(info.qos_profile.reliability == ReliabilityPolicy.RELIABLE for info in publishers)
            why = f" (auto: {len(publishers)} publisher{'' if len(publishers) == 1 else 's'}, {reliable} reliable)"
        self._node.get_logger().info(f"point clouds on '{self._topic}': subscribed {self.policy}, depth 1{why}")

    def _adapt(self) -> None:
        for subscription in self._retired:
            self._node.destroy_subscription(subscription)
        self._retired = []
        policy = self._wanted_policy()
        self._warn_incompatible(policy)
        if policy == self._policy:
            return
        self._retired.append(self._subscription)
        self._subscription = self._subscribe(policy)          # the new one first: no gap
        self._policy = policy
        self._log_subscribed()

    def _warn_incompatible(self, policy: ReliabilityPolicy) -> None:
        """A fixed ``reliable`` with best-effort publishers on the topic: one warning per change
        of their number (a reliable subscription never matches them)."""
        best_effort = 0
        if policy == ReliabilityPolicy.RELIABLE:
            best_effort = sum(info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
                              for info in self._node.get_publishers_info_by_topic(self._topic))
        if best_effort and best_effort != self._incompatible:
            self._node.get_logger().warning(
                f"point clouds on '{self._topic}': {best_effort} best-effort publisher(s), which the reliable "
                f"subscription ({PARAMETER} = {self._mode}) does not match: their clouds never arrive "
                f"(set {PARAMETER} to auto or best_effort)")
        self._incompatible = best_effort

    # ----- receiving and applying -------------------------------------------------
    def _receive(self, msg: bytes, token: object) -> None:
        if token is not self._current:
            return                                            # a retired subscription's
        now = time.monotonic()
        with self._lock:
            replaced = int(self._pending is not None)
            self._pending = msg
            self._stretch = _count(self._stretch, now, replaced, self.policy)
            self._totals = _count(self._totals, now, replaced, self.policy)
        self._ready.trigger()

    def _apply_newest(self) -> None:
        with self._lock:
            msg, self._pending = self._pending, None
            self._applying = msg is not None
        if msg is None:
            return
        outcome = REFUSED
        try:
            outcome = self._apply(deserialize_message(msg, PointCloud2))
        finally:
            with self._lock:
                self._applying = False
                if outcome in (APPLIED, SKIPPED, REFUSED):
                    self._stretch = replace(self._stretch, **{outcome: getattr(self._stretch, outcome) + 1})
                    self._totals = replace(self._totals, **{outcome: getattr(self._totals, outcome) + 1})

    def _on_timer(self) -> None:
        self._adapt()
        now = time.monotonic()
        with self._lock:
            stretch = self._stretch
            idle = self._pending is None and not self._applying
            paused = stretch.received > 0 and idle and now - stretch.last_s >= CLOUD_PAUSE_S
            long = stretch.received > 0 and now - stretch.first_s >= CLOUD_REPORT_PERIOD_S
            if not (paused or long):
                return
            self._stretch = CloudCounts()
        self._node.get_logger().info(stretch.summary(self._topic))


def _count(counts: CloudCounts, now: float, replaced: int, policy: str) -> CloudCounts:
    """``counts`` with one more cloud received at ``now`` (``replaced``: 1 if it replaced a waiting one)."""
    return replace(counts, received=counts.received + 1, replaced=counts.replaced + replaced,
                   first_s=counts.first_s if counts.received else now, last_s=now, policy=policy)
