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
``POINT_CLOUD_QOS``
    The ``sensor_msgs/PointCloud2`` subscription (``point_cloud_topic``): best effort and
    volatile as ROS 2's sensor data profile (so it matches a camera driver's publisher,
    reliable or best effort), but depth 1: a cloud takes 0.1-0.5 s to fold into the map,
    and clouds queued behind it would be stale by then; the newest one is taken.
"""
from __future__ import annotations

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
POINT_CLOUD_QOS = QoSProfile(depth=POINT_CLOUD_DEPTH, reliability=ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
