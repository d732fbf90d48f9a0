"""~/compute_clearance over DDS against the core call plus the transport's floor, in one run.

The issue-15 target: a request of 1000 Panda configurations (default world) answered in at
most 1.5x (the core call + the floor); issue 40's: at most 1.1x. Where

- *core* is ``CollisionChecker.clearance`` on the same scene, in this process;
- *floor* is a server of ComputeClearance that does no work: it answers every request with
  a response of the same rows, built once at its start, and is sent the same request of
  1000 configurations (so the floor carries the same bytes both ways: serialization, DDS,
  deserialization; before 2026-12-06 it was sent one configuration, which left the
  request's 56 kB out of the floor), and the floor of an empty response.

Calls alternate ours, floor, core (machines are noisy). Prints per influence distance
(0.05 m and 0.5 m, with Jacobians): rows, median round trip of each, the ratio and where
the rest goes (the response's conversion from the core's arrays, measured alone).

    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_clearance_service.py --rounds 7
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from _servers import panda_validator_command, running, serve_answers

ARM = [f"panda_joint{i}" for i in range(1, 8)]
CONFIGURATIONS = 1000
INFLUENCES_M = (0.05, 0.5)
TARGET_RATIO = 1.5                      # issue 15's
ISSUE_40_TARGET_RATIO = 1.1             # issue 40's, on the same ratio
STARTUP_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 120.0
SEED = 15


def _configurations(n: int = CONFIGURATIONS) -> np.ndarray:
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths

    urdf, srdf = panda_paths()
    robot = load_scene(urdf_path=urdf, srdf_path=srdf).robot
    arm = [robot.active_joint_names.index(name) for name in ARM]
    return np.random.default_rng(SEED).uniform(robot.lower_limits[arm], robot.upper_limits[arm], size=(n, len(ARM)))


def _core():
    from _servers import panda_world_path

    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths

    urdf, srdf = panda_paths()
    return CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=panda_world_path()))


def floor_server() -> int:
    """A ComputeClearance server answering each influence distance with its prebuilt rows (no work)."""
    from my_collision_pkg.ros.conversions import fill_compute_clearance_response
    from my_collision_pkg.srv import ComputeClearance

    core, rows = _core(), _configurations()
    prebuilt = {}
    for influence in INFLUENCES_M:
        prebuilt[influence] = fill_compute_clearance_response(ComputeClearance.Response(),
                                                              core.clearance(ARM, rows, influence))
    fields = [name for name in ComputeClearance.Response.get_fields_and_field_types()]

    def answer(request, response):
        full = prebuilt.get(request.influence_distance)
        if full is None:              # any other request: the empty answer
            response.status = ComputeClearance.Response.VALID
            return
        for name in fields:
            setattr(response, name, getattr(full, name))

    return serve_answers(ComputeClearance, "compute_clearance", answer)


def main(rounds: int, batch_workers: int | None = None) -> int:
    from my_collision_pkg.ros.client import ValidatorClient
    from my_collision_pkg.ros.conversions import fill_compute_clearance_response
    from my_collision_pkg.srv import ComputeClearance

    core, rows = _core(), _configurations()
    for influence in INFLUENCES_M:          # compiled and warm before anything is timed
        core.clearance(ARM, rows[:10], influence)
    node = dict(max_batch=CONFIGURATIONS) if batch_workers is None else dict(max_batch=CONFIGURATIONS,
                                                                            batch_workers=batch_workers)
    with running(panda_validator_command(**node),
                 [sys.executable, os.path.abspath(__file__), "--floor-server"]):
        ours = ValidatorClient("/collision_validator", node_name="bench_clearance_ours", timeout_s=CALL_TIMEOUT_S)
        floor = ValidatorClient("/floor", node_name="bench_clearance_floor", timeout_s=CALL_TIMEOUT_S)
        ours.wait_for_services(STARTUP_TIMEOUT_S, services=("clearance",))
        floor.wait_for_services(STARTUP_TIMEOUT_S, services=("clearance",))
        empty_s = []
        for _ in range(20):
            start = time.perf_counter()
            floor.compute_clearance(ARM, rows[:1], 0.0)
            empty_s.append(time.perf_counter() - start)
        print(f"collision_validator ~/compute_clearance, Panda + default world, {CONFIGURATIONS} random "
              f"configurations per request, Jacobians on, {rounds} rounds (median); {os.cpu_count()} CPUs")
        print(f"empty ComputeClearance answer (floor): {statistics.median(empty_s) * 1e3:.2f} ms round trip")
        print(f"{'influence':>9s} {'rows':>7s} | {'ours ms':>9s} {'core ms':>9s} {'floor ms':>9s} "
              f"{'fill ms':>8s} | {'ours/(core+floor)':>17s}")
        for influence in INFLUENCES_M:
            answer = ours.compute_clearance(ARM, rows, influence)            # warm (and checked)
            assert answer.status == ComputeClearance.Response.VALID, answer.message
            floor.compute_clearance(ARM, rows, influence)
            ours_s, floor_s, core_s, fill_s = [], [], [], []
            for _ in range(rounds):
                start = time.perf_counter()
                answer = ours.compute_clearance(ARM, rows, influence)
                ours_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                same = floor.compute_clearance(ARM, rows, influence)
                floor_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                result = core.clearance(ARM, rows, influence)
                core_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                fill_compute_clearance_response(ComputeClearance.Response(), result)
                fill_s.append(time.perf_counter() - start)
            assert len(answer.distance) == len(same.distance) == len(result), (len(answer.distance),
                                                                                len(same.distance), len(result))
            o, c, f, fi = (statistics.median(v) * 1e3 for v in (ours_s, core_s, floor_s, fill_s))
            ratio = o / (c + f)
            verdicts = ", ".join(f"<= {target}: {'met' if ratio <= target else 'MISSED'}"
                                 for target in (TARGET_RATIO, ISSUE_40_TARGET_RATIO))
            print(f"{influence:9.2f} {len(result):7d} | {o:9.1f} {c:9.1f} {f:9.1f} {fi:8.1f} | {ratio:9.2f} "
                  f"({verdicts})")
        ours.close()
        floor.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--floor-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch-workers", type=int, default=None,
                        help="the node's batch_workers parameter (default: the node's default, every core)")
    args = parser.parse_args()
    sys.exit(floor_server() if args.floor_server else main(args.rounds, args.batch_workers))
