"""The QoS profiles of the package's services and topics, chosen once.

``SERVICE_QOS``
    Every validator service and every client calling one (a deep queue on both sides).
``LATCHED_QOS``
    Reliable and transient-local with depth 1: the last message is kept for late
    joiners (RViz or the marker node started after it was sent). The validator's
    reports and scene markers, the marker node's arrays, and its subscription to the
    reports use it.
``JOINT_STATES_QOS``
    The ``sensor_msgs/JointState`` streams (subscribed and republished): ROS 2's
    default profile, depth 10.
``point_cloud_qos(reliability)``, ``POINT_CLOUD_QOS``
    The ``sensor_msgs/PointCloud2`` subscription (``point_cloud_topic``): volatile, depth 1
    (a cloud takes 0.1-0.5 s to fold into the map, and clouds queued behind it would be
    stale by then; the newest one is taken), reliable or best effort as the parameter
    ``point_cloud_reliability`` says (:data:`POINT_CLOUD_RELIABILITIES`). ``auto`` (the
    default) follows the publishers (:func:`reliability_for_publishers`, re-checked by
    ``ros.point_cloud_subscription``): a best-effort subscriber matches a reliable
    publisher, but then a large cloud that loses one fragment is lost whole, which is
    why 300k-point clouds from a reliable driver never arrived (docs/perception.md).
    ``POINT_CLOUD_QOS`` is the best-effort profile (its old meaning).
"""
from __future__ import annotations

from collections.abc import Iterable

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

# Requests (server side) and answers (client side) waiting to be taken, per service.
SERVICE_QUEUE_DEPTH = 1000
# ROS 2's default service QoS keeps the last 10 messages: under more than 10 concurrent
# callers the server's request queue (or a client's answer queue) overflows and calls are
# silently never answered. Both sides need the depth; deepening one side alone still loses calls.
SERVICE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=SERVICE_QUEUE_DEPTH,
                         reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

# Each latched message is complete (a report, or a marker array starting with DELETEALL), so
# only the last one matters. RELIABLE + TRANSIENT_LOCAL offers what any subscriber may ask:
# RViz's default (reliable, volatile) and a transient-local subscriber started later.
LATCHED_DEPTH = 1
LATCHED_QOS = QoSProfile(depth=LATCHED_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL, history=HistoryPolicy.KEEP_LAST)

JOINT_STATES_DEPTH = 10
JOINT_STATES_QOS = QoSProfile(depth=JOINT_STATES_DEPTH)

POINT_CLOUD_DEPTH = 1
# point_cloud_reliability: follow the publishers, or one fixed policy
POINT_CLOUD_AUTO = "auto"
POINT_CLOUD_RELIABLE = "reliable"
POINT_CLOUD_BEST_EFFORT = "best_effort"
POINT_CLOUD_RELIABILITIES = (POINT_CLOUD_AUTO, POINT_CLOUD_RELIABLE, POINT_CLOUD_BEST_EFFORT)
DEFAULT_POINT_CLOUD_RELIABILITY = POINT_CLOUD_AUTO
_POLICIES = {POINT_CLOUD_RELIABLE: ReliabilityPolicy.RELIABLE, POINT_CLOUD_BEST_EFFORT: ReliabilityPolicy.BEST_EFFORT}


def point_cloud_qos(reliability: str | ReliabilityPolicy) -> QoSProfile:
    """The cloud subscription's profile: depth 1, volatile, ``reliability`` (``"reliable"``,
    ``"best_effort"`` or a ReliabilityPolicy; ``"auto"`` is resolved by the caller).

    Raises
    ------
    ValueError
        For any other value.
    """
    policy = _POLICIES.get(reliability, reliability) if isinstance(reliability, str) else reliability
    if policy not in (ReliabilityPolicy.RELIABLE, ReliabilityPolicy.BEST_EFFORT):
        raise ValueError(f"point cloud reliability {reliability!r} is not one of reliable, best_effort")
    return QoSProfile(depth=POINT_CLOUD_DEPTH, reliability=policy, durability=DurabilityPolicy.VOLATILE,
                      history=HistoryPolicy.KEEP_LAST)


def reliability_for_publishers(offered: Iterable[ReliabilityPolicy]) -> ReliabilityPolicy:
    """What ``auto`` subscribes with, given the reliability each publisher of the topic offers.

    RELIABLE when there is at least one publisher and every one offers reliable (the
    subscription then matches them all and gets lost fragments resent); BEST_EFFORT
    otherwise (no publisher yet, or one best-effort publisher, which a reliable
    subscription would not match). rosbag2's recorder chooses the same way.
    """
    offered = list(offered)
    if offered and all(policy == ReliabilityPolicy.RELIABLE for policy in offered):
        return ReliabilityPolicy.RELIABLE
    return ReliabilityPolicy.BEST_EFFORT


POINT_CLOUD_QOS = point_cloud_qos(POINT_CLOUD_BEST_EFFORT)
