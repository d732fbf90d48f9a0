"""check_motion over DDS against the core call plus the transport's floor.

Prints, measured side by side in one run (for each edge the three calls follow
each other, A B C A B C ...):
- the core call ``CollisionChecker.check_motion`` in this process (certified);
- the ``~/check_motion`` round trip of collision_validator (same scene, same edge);
- the round trip of a server answering CheckMotion without looking at the request
  (the transport's floor for this message);
and the ratio of the median round trip to (median core + median floor), target <= 1.5.
Edges: random edges between random valid Panda configurations (default world),
plus the edge from the SRDF's default state down through the table.
Run with ``make bench`` (or ``scripts/env.sh python benchmarks/bench_motion_services.py``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from _servers import panda_validator_command, panda_world_path, running, serve_floor

EDGES = 60
ROUNDS = 5
WARMUP_ROUNDS = 1
MAX_EDGE_RAD = 0.6            # each joint moves at most this much along an edge
TARGET_RATIO = 1.5
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]
ARM = [f"panda_joint{i}" for i in range(1, 8)]
STARTUP_TIMEOUT_S = 60.0
RNG_SEED = 5


def floor_server() -> int:
    """A CheckMotion server that does no work: the cost of the transport alone."""
    from my_collision_pkg.srv import CheckMotion

    def fill(response):
        response.valid, response.status, response.message = True, CheckMotion.Response.VALID, "valid"
        response.cc_time = -1.0

    return serve_floor(CheckMotion, "check_motion", fill)


def edges(checker, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    robot = checker.scene.robot
    lower, upper = robot.lower_limits[:7], robot.upper_limits[:7]
    out = [(np.array(FREE), np.array(INTO_TABLE))]
    while len(out) < EDGES:
        q0 = rng.uniform(lower, upper)
        q1 = np.clip(q0 + rng.uniform(-MAX_EDGE_RAD, MAX_EDGE_RAD, 7), lower, upper)
        if checker.check(ARM, q0).valid and checker.check(ARM, q1).valid:
            out.append((q0, q1))
    return out


def main() -> int:
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.ros.client import ValidatorClient
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths

    urdf, srdf = panda_paths()
    core = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=panda_world_path()))
    motions = edges(core, np.random.default_rng(RNG_SEED))
    core_ms, ours_ms, floor_ms = [], [], []
    invalid = 0
    with running(panda_validator_command(), [sys.executable, os.path.abspath(__file__), "--floor-server"]):
        ours = ValidatorClient("/collision_validator", node_name="bench_motion_ours")
        floor = ValidatorClient("/floor", node_name="bench_motion_floor")
        ours.wait_for_services(STARTUP_TIMEOUT_S, services=("motion",))
        floor.wait_for_services(STARTUP_TIMEOUT_S, services=("motion",))
        for round_index in range(WARMUP_ROUNDS + ROUNDS):
            for q0, q1 in motions:
                start = time.perf_counter()
                expected = core.check_motion(ARM, q0, q1)
                t_core = (time.perf_counter() - start) * 1e3
                start = time.perf_counter()
                answer = ours.check_motion(ARM, q0, q1)
                t_ours = (time.perf_counter() - start) * 1e3
                start = time.perf_counter()
                floor.check_motion(ARM, q0, q1)
                t_floor = (time.perf_counter() - start) * 1e3
                assert answer.valid == expected.valid and answer.cc_time == expected.cc_time, answer.message
                if round_index >= WARMUP_ROUNDS:
                    core_ms.append(t_core)
                    ours_ms.append(t_ours)
                    floor_ms.append(t_floor)
                    invalid += not expected.valid
        ours.close()
        floor.close()
    m_core, m_ours, m_floor = (statistics.median(v) for v in (core_ms, ours_ms, floor_ms))
    p90 = [float(np.percentile(v, 90)) for v in (core_ms, ours_ms, floor_ms)]
    ratio = m_ours / (m_core + m_floor)
    print(f"check_motion (certified), Panda + default world, {len(motions)} edges x {ROUNDS} rounds "
          f"({invalid // ROUNDS} edges invalid); {os.cpu_count()} CPUs")
    print(f"{'':38s} {'median ms':>10s} {'p90 ms':>8s}")
    print(f"{'core CollisionChecker.check_motion':38s} {m_core:10.3f} {p90[0]:8.3f}")
    print(f"{'~/check_motion round trip':38s} {m_ours:10.3f} {p90[1]:8.3f}")
    print(f"{'empty CheckMotion server (floor)':38s} {m_floor:10.3f} {p90[2]:8.3f}")
    print(f"round trip / (core + floor) at the median: {ratio:.2f} (target <= {TARGET_RATIO}) "
          f"{'met' if ratio <= TARGET_RATIO else 'MISSED'}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    sys.exit(floor_server() if parser.parse_args().floor_server else main())
