"""How many large PointCloud2 messages arrive over DDS on this machine, by QoS, size, rate and DDS transport.

Run:  python benchmarks/bench_cloud_qos.py [--points 50000 100000 307200] [--rate-hz 30] [--seconds 5]
      [--transports default LARGE_DATA] [--qos best_effort/best_effort reliable/reliable ...]

Each case is two fresh processes on this machine (one ROS domain, Fast DDS): a publisher of
``--points``-point clouds (FLOAT32 x, y, z and 4 bytes of rgb a point: 16 bytes, a
640 x 480 camera's 307,200 points are 4.9 MB) at ``--rate-hz`` for ``--seconds``, and a
subscriber that only counts what it takes (depth 1, as the validator's subscription). A QoS
case is ``publisher/subscriber`` reliability (``best_effort`` or ``reliable``; a reliable
subscriber does not match a best-effort publisher, so that pair is not run). The publisher
keeps the last 5 (a camera driver's usual depth). ``--transports`` names what
``FASTDDS_BUILTIN_TRANSPORTS`` is set to (``default``: unset, Fast DDS's shared memory +
UDPv4); ``--shm-segment-mb`` runs a case with an XML profile instead: shared memory with a
segment of that size, plus UDPv4; ``--profiles`` a case per XML file given (the package's
``config/fastdds_large_clouds.xml``). ``--side`` says which process gets the setting (both, or
only the publisher or the subscriber, the other keeping Fast DDS's defaults).

Printed per case: clouds sent, clouds received (and per second), the share received.
What the validator then applies is another matter (a cloud costs 0.1-0.5 s to fold into the
map): docs/perception.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

SUBSCRIBER_EXTRA_S = 4.0        # the subscriber listens this long after the publisher's last cloud
MATCH_TIMEOUT_S = 20.0
PUBLISHER_DEPTH = 5
POINT_STEP_BYTES = 16

SHM_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor><transport_id>shm_big</transport_id><type>SHM</type>
      <segment_size>{segment}</segment_size></transport_descriptor>
    <transport_descriptor><transport_id>udp</transport_id><type>UDPv4</type></transport_descriptor>
  </transport_descriptors>
  <participant profile_name="shm_big" is_default_profile="true"><rtps>
    <userTransports><transport_id>shm_big</transport_id><transport_id>udp</transport_id></userTransports>
    <useBuiltinTransports>false</useBuiltinTransports>
  </rtps></participant>
</profiles>
"""


def _qos(reliability: str):
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    return ReliabilityPolicy.RELIABLE if reliability == "reliable" else ReliabilityPolicy.BEST_EFFORT, \
        QoSProfile, HistoryPolicy, DurabilityPolicy


def _profile(reliability: str, depth: int):
    policy, QoSProfile, HistoryPolicy, DurabilityPolicy = _qos(reliability)
    return QoSProfile(depth=depth, reliability=policy, history=HistoryPolicy.KEEP_LAST,
                      durability=DurabilityPolicy.VOLATILE)


def run_publisher(topic: str, points: int, rate_hz: float, seconds: float, reliability: str) -> None:
    import numpy as np
    import rclpy
    from sensor_msgs.msg import PointCloud2
    from my_collision_pkg.ros.conversions import point_cloud_msg
    rclpy.init()
    node = rclpy.create_node(f"bench_cloud_pub_{os.getpid()}")
    publisher = node.create_publisher(PointCloud2, topic, _profile(reliability, PUBLISHER_DEPTH))
    rng = np.random.default_rng(1)
    cloud = point_cloud_msg(rng.uniform(-1.0, 1.0, (points, 3)) + [1.5, 0.0, 0.5], "panda_link0", extra_bytes=4)
    deadline = time.monotonic() + MATCH_TIMEOUT_S
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)                               # the match completed on both sides
    n = int(round(rate_hz * seconds))
    start = time.monotonic()
    for i in range(n):
        time.sleep(max(0.0, start + i / rate_hz - time.monotonic()))
        publisher.publish(cloud)
    late_s = time.monotonic() - start - (n - 1) / rate_hz
    print(f"sent {n} late_s {late_s:.2f}", flush=True)
    time.sleep(SUBSCRIBER_EXTRA_S)                # a reliable writer repairs what was lost meanwhile
    node.destroy_node()
    rclpy.shutdown()


def run_subscriber(topic: str, seconds: float, reliability: str) -> None:
    import signal
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import PointCloud2
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))       # the driver's "done": print the count
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node(f"bench_cloud_sub_{os.getpid()}")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stamps = []
    node.create_subscription(PointCloud2, topic, lambda msg: stamps.append(time.monotonic()),
                             _profile(reliability, 1))
    end = time.monotonic() + MATCH_TIMEOUT_S + 1.0 + seconds + SUBSCRIBER_EXTRA_S + 30.0
    while time.monotonic() < end and not stop:
        executor.spin_once(timeout_sec=0.05)
    span = (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    print(f"received {len(stamps)} span_s {span:.2f}", flush=True)
    node.destroy_node()
    rclpy.shutdown()


def run_case(points: int, rate_hz: float, seconds: float, pub_qos: str, sub_qos: str, env: dict,
             side: str = "both") -> dict:
    topic = f"/bench_cloud_{os.getpid()}_{time.monotonic_ns()}"
    base = [sys.executable, os.path.abspath(__file__)]
    common = ["--topic", topic, "--seconds", str(seconds)]
    full_env = {**os.environ, **env}
    sub_env = full_env if side in ("both", "sub") else dict(os.environ)
    pub_env = full_env if side in ("both", "pub") else dict(os.environ)
    sub = subprocess.Popen(base + ["--role", "sub", "--reliability", sub_qos] + common,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=sub_env)
    pub = subprocess.Popen(base + ["--role", "pub", "--reliability", pub_qos, "--points", str(points),
                                   "--rate-hz", str(rate_hz)] + common,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=pub_env)
    pub_out, _ = pub.communicate(timeout=MATCH_TIMEOUT_S + seconds + 60)
    sub.terminate()
    sub_out, _ = sub.communicate(timeout=30)
    sent = next((int(line.split()[1]) for line in pub_out.splitlines() if line.startswith("sent ")), 0)
    got = next((int(line.split()[1]) for line in sub_out.splitlines() if line.startswith("received ")), None)
    if got is None:                                # terminated before printing: listen time is fixed, so rerun
        got = -1
    return {"sent": sent, "received": got, "pub_out": pub_out, "sub_out": sub_out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=("driver", "pub", "sub"), default="driver")
    parser.add_argument("--topic", default="")
    parser.add_argument("--reliability", default="best_effort")
    parser.add_argument("--points", type=int, nargs="+", default=[50_000, 100_000, 307_200])
    parser.add_argument("--rate-hz", type=float, default=30.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--transports", nargs="*", default=["default", "LARGE_DATA"])
    parser.add_argument("--shm-segment-mb", type=float, nargs="*", default=[])
    parser.add_argument("--profiles", nargs="*", default=[], help="Fast DDS XML profile files, each a case "
                        "(FASTRTPS_DEFAULT_PROFILES_FILE), e.g. config/fastdds_large_clouds.xml")
    parser.add_argument("--side", choices=("both", "pub", "sub"), default="both",
                        help="which process gets the transport setting (the other one Fast DDS's default)")
    parser.add_argument("--qos", nargs="+", default=["best_effort/best_effort", "reliable/best_effort",
                                                     "reliable/reliable"])
    args = parser.parse_args()
    if args.role == "pub":
        return run_publisher(args.topic, args.points[0], args.rate_hz, args.seconds, args.reliability)
    if args.role == "sub":
        return run_subscriber(args.topic, args.seconds, args.reliability)
    envs = [(name, {} if name == "default" else {"FASTDDS_BUILTIN_TRANSPORTS": name}) for name in args.transports]
    folder = tempfile.mkdtemp(prefix="bench_cloud_qos_")
    for mb in args.shm_segment_mb:
        path = os.path.join(folder, f"shm_{mb:g}MB.xml")
        with open(path, "w") as f:
            f.write(SHM_PROFILE.format(segment=int(mb * 1024 * 1024)))
        envs.append((f"SHM segment {mb:g} MB + UDPv4 (XML)", {"FASTRTPS_DEFAULT_PROFILES_FILE": path,
                                                               "RMW_FASTRTPS_USE_QOS_FROM_XML": "0"}))
    for path in args.profiles:
        envs.append((os.path.basename(path), {"FASTRTPS_DEFAULT_PROFILES_FILE": os.path.abspath(path)}))
    load = os.getloadavg()[0]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} load {load:.1f}; {args.rate_hz:g} Hz for {args.seconds:g} s; "
          f"{POINT_STEP_BYTES} bytes a point; publisher depth {PUBLISHER_DEPTH}, subscriber depth 1; "
          f"transport setting in: {args.side}")
    print(f"{'transport':<36} {'pub/sub QoS':<26} {'points':>8} {'MB':>5} {'sent':>5} {'received':>8} {'/s':>6} "
          f"{'share':>6}")
    for name, env in envs:
        for qos in args.qos:
            pub_qos, sub_qos = qos.split("/")
            for points in args.points:
                r = run_case(points, args.rate_hz, args.seconds, pub_qos, sub_qos, env, args.side)
                share = r["received"] / r["sent"] if r["sent"] else float("nan")
                print(f"{name:<36} {qos:<26} {points:>8} {points * POINT_STEP_BYTES / 1e6:>5.1f} {r['sent']:>5} "
                      f"{r['received']:>8} {r['received'] / args.seconds:>6.1f} {share:>6.0%}", flush=True)
                if r["received"] < 0 or r["sent"] == 0:
                    print("  publisher:", r["pub_out"][-500:], "\n  subscriber:", r["sub_out"][-500:])


if __name__ == "__main__":
    main()
