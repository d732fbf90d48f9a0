"""A depth camera's stream, as a process of its own: 640 x 480 clouds at a rate, then a line.

    python cloud_publisher.py TOPIC --reliability best_effort|reliable --rate-hz 30 --seconds 10 [--points N]

Each cloud is organised (height 480, width 640: 307,200 points, FLOAT32 x, y, z and 4 bytes
of rgb a point, 4.9 MB, as a RealSense-style driver sends; ``--points`` other than 307,200
gives 640 x (N // 640)), a wall facing the robot in
``panda_link0``'s frame. Cloud ``i`` stands at ``wall_x_m(i)``: VARIANTS positions in
turn, so a map built from it says which cloud it was. The publisher keeps the last 5
(a camera driver's usual depth), waits until a subscription matches, then sends at the
rate and prints ``sent N in S s`` (N clouds over S seconds from the first to the last).
A process of its own so that the test's process and its GIL are not the camera.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

WIDTH, HEIGHT = 640, 480
VARIANTS = 4
WALL_X0_M, WALL_STEP_M = 1.2, 0.1            # the wall at 1.2, 1.3, 1.4, 1.5 m in front of the robot
WALL_Y_M, WALL_Z_M = (-0.8, 0.8), (0.1, 1.3)
MATCH_TIMEOUT_S = 30.0
PUBLISHER_DEPTH = 5


def wall_x_m(i: int) -> float:
    """Where cloud ``i``'s wall stands, metres along panda_link0's x."""
    return WALL_X0_M + WALL_STEP_M * (i % VARIANTS)


def wall_points(x_m: float, height: int = HEIGHT) -> np.ndarray:
    """(height * WIDTH, 3) points of a wall at ``x_m``, row by row."""
    y, z = np.meshgrid(np.linspace(*WALL_Y_M, WIDTH), np.linspace(*WALL_Z_M, height)[::-1])
    return np.stack([np.full(y.size, x_m), y.ravel(), z.ravel()], axis=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("topic")
    parser.add_argument("--reliability", choices=("best_effort", "reliable"), required=True)
    parser.add_argument("--rate-hz", type=float, default=30.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--points", type=int, default=WIDTH * HEIGHT)
    args = parser.parse_args()

    import rclpy
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import PointCloud2

    from my_collision_pkg.ros.conversions import point_cloud_msg

    rclpy.init()
    node = rclpy.create_node("test_depth_camera")
    policy = ReliabilityPolicy.RELIABLE if args.reliability == "reliable" else ReliabilityPolicy.BEST_EFFORT
    publisher = node.create_publisher(PointCloud2, args.topic, QoSProfile(
        depth=PUBLISHER_DEPTH, reliability=policy, history=HistoryPolicy.KEEP_LAST,
        durability=DurabilityPolicy.VOLATILE))
    clouds = []
    height = max(1, args.points // WIDTH)
    for i in range(VARIANTS):
        cloud = point_cloud_msg(wall_points(wall_x_m(i), height), "panda_link0", extra_bytes=4)
        cloud.height, cloud.width, cloud.row_step = height, WIDTH, WIDTH * cloud.point_step
        clouds.append(cloud)
    deadline = time.monotonic() + MATCH_TIMEOUT_S
    while publisher.get_subscription_count() == 0:
        if time.monotonic() > deadline:
            print("no subscription matched", flush=True)
            return 1
        time.sleep(0.05)
    time.sleep(0.5)                                      # the match is complete on both sides
    n = int(round(args.rate_hz * args.seconds))
    start = time.monotonic()
    for i in range(n):
        time.sleep(max(0.0, start + i / args.rate_hz - time.monotonic()))
        publisher.publish(clouds[i % VARIANTS])
    print(f"sent {n} in {time.monotonic() - start:.2f} s", flush=True)
    time.sleep(1.0)                                      # a reliable writer resends what was lost meanwhile
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
