"""Service round trips of collision_validator against an empty service of the same shape.

Prints, measured side by side in one run (calls alternate A, B, A, B ...):
- check_validity round trip p50 and p99 on the Panda with the default world, a
  free configuration (the predicate checks every pair);
- the same for a server that answers CheckValidity without looking at the
  request (the transport's floor), and the ratio (target <= 1.5 at p50);
- check_validity_batch throughput with 1000 configurations per request
  (target >= 20,000 configurations per second);
- check_validity throughput with one caller and with PARALLEL_CALLERS threads
  calling through one client (the package's, with SERVICE_QOS), and how many
  calls were never answered (target: 0).

Both servers run as their own processes with a multi-threaded executor; the
client spins one executor in a background thread (my_collision_pkg.ros.client).
Run with ``make bench`` (or ``scripts/env.sh python benchmarks/bench_services.py``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import numpy as np
from _servers import panda_validator_command, running, serve_floor

CALLS = 2000
WARMUP_CALLS = 200
BATCH_SIZE = 1000
BATCH_REQUESTS = 30
TARGET_RATIO_P50 = 1.5
TARGET_BATCH_PER_S = 20_000
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
ARM = [f"panda_joint{i}" for i in range(1, 8)]
PANDA_LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
PANDA_UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
STARTUP_TIMEOUT_S = 60.0
PARALLEL_CALLERS = 32
PARALLEL_CALLS_EACH = 50


def throughput(client, threads: int, calls_each: int) -> tuple[float, int, int]:
    """(answers per second, answered, unanswered) for ``threads`` callers sharing ``client``."""
    from my_collision_pkg.ros.client import ServiceTimeout

    answered, lost = [0] * threads, [0] * threads

    def caller(k: int) -> None:
        for _ in range(calls_each):
            try:
                client.check(ARM, FREE)
                answered[k] += 1
            except ServiceTimeout:
                lost[k] += 1

    workers = [threading.Thread(target=caller, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    return sum(answered) / elapsed, sum(answered), sum(lost)


def floor_server() -> int:
    """A CheckValidity server that does no work: the cost of the transport alone."""
    from my_collision_pkg.srv import CheckValidity

    def fill(response):
        response.valid, response.status, response.message = True, CheckValidity.Response.VALID, "valid"

    return serve_floor(CheckValidity, "check_validity", fill)


def _percentile(values, q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> int:
    from my_collision_pkg.ros.client import ValidatorClient

    with running(panda_validator_command(), [sys.executable, os.path.abspath(__file__), "--floor-server"]):
        ours = ValidatorClient("/collision_validator", node_name="bench_ours")
        floor = ValidatorClient("/floor", node_name="bench_floor")
        ours.wait_for_services(STARTUP_TIMEOUT_S)
        floor.wait_for_services(STARTUP_TIMEOUT_S, services=("check",))
        for _ in range(WARMUP_CALLS):
            ours.check(ARM, FREE)
            floor.check(ARM, FREE)
        ours_ms, floor_ms = [], []
        for _ in range(CALLS):
            start = time.perf_counter()
            answer = ours.check(ARM, FREE)
            ours_ms.append((time.perf_counter() - start) * 1e3)
            assert answer.valid, answer.message
            start = time.perf_counter()
            floor.check(ARM, FREE)
            floor_ms.append((time.perf_counter() - start) * 1e3)
        rng = np.random.default_rng(3)
        batches = [rng.uniform(PANDA_LOWER, PANDA_UPPER, size=(BATCH_SIZE, len(ARM))) for _ in range(BATCH_REQUESTS)]
        ours.check_batch(ARM, batches[0])
        batch_s = []
        for rows in batches:
            start = time.perf_counter()
            answer = ours.check_batch(ARM, rows)
            batch_s.append(time.perf_counter() - start)
            assert len(answer.valid) == BATCH_SIZE, answer.message
        single = throughput(ours, 1, PARALLEL_CALLERS * PARALLEL_CALLS_EACH // 4)
        parallel = throughput(ours, PARALLEL_CALLERS, PARALLEL_CALLS_EACH)
        ours.close()
        floor.close()
    p50_ours, p50_floor = statistics.median(ours_ms), statistics.median(floor_ms)
    p99_ours, p99_floor = _percentile(ours_ms, 99), _percentile(floor_ms, 99)
    ratio = p50_ours / p50_floor
    per_s = BATCH_SIZE / statistics.median(batch_s)
    print(f"collision_validator services, Panda + default world, {CALLS} calls each, alternating; "
          f"{os.cpu_count()} CPUs")
    print(f"{'round trip':34s} {'p50 ms':>8s} {'p99 ms':>8s}")
    print(f"{'check_validity (free, all pairs)':34s} {p50_ours:8.3f} {p99_ours:8.3f}")
    print(f"{'empty CheckValidity server (floor)':34s} {p50_floor:8.3f} {p99_floor:8.3f}")
    print(f"ratio to the floor at p50: {ratio:.2f} (target <= {TARGET_RATIO_P50}) "
          f"{'met' if ratio <= TARGET_RATIO_P50 else 'MISSED'}; at p99: {p99_ours / p99_floor:.2f}")
    print(f"check_validity_batch, {BATCH_SIZE} random configurations per request, {BATCH_REQUESTS} requests: "
          f"median {statistics.median(batch_s) * 1e3:.1f} ms per request, {per_s:,.0f} configurations/s "
          f"(target >= {TARGET_BATCH_PER_S:,}) {'met' if per_s >= TARGET_BATCH_PER_S else 'MISSED'}")
    print(f"check_validity throughput through one client: 1 caller {single[0]:,.0f}/s "
          f"({single[2]} of {single[1] + single[2]} unanswered); {PARALLEL_CALLERS} callers {parallel[0]:,.0f}/s "
          f"({parallel[2]} of {parallel[1] + parallel[2]} unanswered, target 0) "
          f"{'met' if parallel[2] == 0 else 'MISSED'}; ratio {parallel[0] / single[0]:.2f}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    sys.exit(floor_server() if parser.parse_args().floor_server else main())
