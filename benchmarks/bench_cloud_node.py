"""Full camera clouds into the running validator: clouds received and applied per second, by
publisher QoS, the validator's ``point_cloud_reliability`` and the Fast DDS setting.

Run:  python benchmarks/bench_cloud_node.py [--seconds 10] [--rate-hz 30]
      [--dds default fastdds_large_clouds.xml] [--modes best_effort auto] [--publishers best_effort reliable]
      [--points 307200 ...] [--checks 300]

For each Fast DDS setting (``default``: none; a file name: that XML profile from the package's
``config/`` as ``FASTRTPS_DEFAULT_PROFILES_FILE``, in both processes) and each
``point_cloud_reliability`` (``best_effort`` is what the node subscribed with before the
parameter existed), one ``collision_validator`` (Panda, default world, 2 cm cells) is started;
then for each publisher QoS the test's camera (``test/nodes/cloud_publisher.py``: organised
clouds, 16 bytes a point, 640 x 480 = 307,200 points unless ``--points`` says otherwise,
a wall 1.2-1.5 m in front of the robot) sends at ``--rate-hz`` for ``--seconds``. The node's
own summary line of that stretch gives the counts: clouds received (taken from DDS) and
applied to the map (folding one in takes 0.1-0.5 s, so only the newest waiting one is
applied whenever the map is free; the rest are "replaced").

With ``--checks N``, ``check_validity`` round trips from another process (a ValidatorClient
in this one: N calls 20 ms apart) are timed once with no stream, then during each stream
(from 3 s in): median, p99 and max in ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test", "nodes"))

from node_processes import ARM, FREE, NodeProcess, panda_params  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402

PUBLISHER = os.path.join(os.path.dirname(HERE), "test", "nodes", "cloud_publisher.py")
SUMMARY = re.compile(r"point clouds on '[^']+' \((?P<policy>\w+)\): (?P<received>\d+) received in (?P<span>[\d.]+) s "
                     r"\([^)]*\), (?P<applied>\d+) applied")
STARTUP_TIMEOUT_S = 120.0
SUMMARY_WITHIN_S = 20.0
CHECK_PERIOD_S = 0.02
CHECKS_AFTER_S = 3.0          # into a stream: the camera process is up and sending


def round_trips(client, n: int) -> str:
    """``n`` check_validity calls CHECK_PERIOD_S apart: median, p99 and max round trip, ms."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        client.check(ARM, FREE)
        times.append(time.perf_counter() - start)
        time.sleep(CHECK_PERIOD_S)
    times.sort()
    return (f"check_validity median {statistics.median(times) * 1e3:.1f} ms, p99 "
            f"{times[int(0.99 * (len(times) - 1))] * 1e3:.1f} ms, max {times[-1] * 1e3:.1f} ms")


def run(dds: str, mode: str, publishers: list[str], points: list[int], rate_hz: float, seconds: float,
        checks: int = 0) -> None:
    env = {} if dds == "default" else {
        "FASTRTPS_DEFAULT_PROFILES_FILE": os.path.join(get_package_share_directory("my_collision_pkg"), "config", dds)}
    topic = f"/bench_cloud_node_{os.getpid()}"
    name = f"bench_cloud_validator_{os.getpid()}"
    node = NodeProcess("collision_validator", panda_params(point_cloud_topic=topic, point_cloud_reliability=mode,
                                                           octomap_resolution=0.02), {"__node": name}, env=env)
    client = None
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while "services ready" not in node.output():
            if node.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the validator did not start:\n" + node.output()[-2000:])
            time.sleep(0.2)
        if checks:
            from my_collision_pkg.ros.client import ValidatorClient
            client = ValidatorClient(f"/{name}", node_name=f"bench_cloud_client_{os.getpid()}", timeout_s=30.0)
            client.wait_for_services(timeout_s=STARTUP_TIMEOUT_S)
            print(f"{dds:<26} {mode:<12} no stream: {round_trips(client, checks)}", flush=True)
        for publisher_qos in publishers:
            for n in points:
                before = len(SUMMARY.findall(node.output()))
                camera = subprocess.Popen([sys.executable, PUBLISHER, topic, "--reliability", publisher_qos,
                                           "--rate-hz", str(rate_hz), "--seconds", str(seconds), "--points", str(n)],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                          env={**os.environ, **env})
                latency = ""
                if client is not None:
                    time.sleep(CHECKS_AFTER_S)
                    latency = "; during it " + round_trips(client, checks)
                out = camera.communicate()[0]
                sent = int(re.search(r"sent (\d+)", out).group(1)) if "sent" in out else 0
                deadline = time.monotonic() + SUMMARY_WITHIN_S
                while len(SUMMARY.findall(node.output())) <= before and time.monotonic() < deadline:
                    time.sleep(0.2)
                found = list(SUMMARY.finditer(node.output()))[before:]
                if found:
                    m = found[0]
                    received, applied = int(m["received"]), int(m["applied"])
                    policy = m["policy"]
                else:
                    received, applied, policy = 0, 0, "-"
                print(f"{dds:<26} {mode:<12} {publisher_qos:<12} {policy:<12} {n:>8} {sent:>5} {received:>8} "
                      f"{received / seconds:>6.1f} {applied:>7} {applied / seconds:>6.1f}{latency}", flush=True)
    finally:
        if client is not None:
            client.close()
        node.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate-hz", type=float, default=30.0)
    parser.add_argument("--dds", nargs="+", default=["default", "fastdds_large_clouds.xml"])
    parser.add_argument("--modes", nargs="+", default=["best_effort", "auto"])
    parser.add_argument("--publishers", nargs="+", default=["best_effort", "reliable"])
    parser.add_argument("--points", type=int, nargs="+", default=[307_200])
    parser.add_argument("--checks", type=int, default=0, help="check_validity calls timed per stream (0: none)")
    args = parser.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} load {os.getloadavg()[0]:.1f}; {args.rate_hz:g} Hz for "
          f"{args.seconds:g} s; counts from the node's own summary line")
    print(f"{'Fast DDS':<26} {'node mode':<12} {'publisher':<12} {'subscribed':<12} {'points':>8} {'sent':>5} "
          f"{'received':>8} {'/s':>6} {'applied':>7} {'/s':>6}")
    for dds in args.dds:
        for mode in args.modes:
            run(dds, mode, args.publishers, args.points, args.rate_hz, args.seconds, args.checks)


if __name__ == "__main__":
    main()
