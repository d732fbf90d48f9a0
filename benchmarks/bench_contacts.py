"""Explain's cost with the exact contact geometry (issue 8), and that the predicate did not move.

Franka Panda (example-robot-data) with the default world (``config/panda_world.yaml``),
a fixed random set of configurations within the limits. Prints, in one run:

- predicate, one configuration per call: microseconds per configuration (median of rounds);
- batch predicate over the whole set: microseconds per configuration (median of rounds);
- explain on every configuration the predicate refuses, ``contact_distance = 0``:
  median and max milliseconds per call, and the contacts it returned.

Run it on two commits (the package found first on ``PYTHONPATH`` is the one measured)
to compare before and after; the targets are explain median < 1 ms and max < 5 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from my_collision_pkg.checker import CollisionChecker
from my_collision_pkg.models import load_scene, panda_paths

WORLD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config", "panda_world.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configurations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20_260_611)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD)
    checker = CollisionChecker(scene)
    robot = scene.robot
    names = robot.active_joint_names
    lo = np.where(np.isfinite(robot.lower_limits), robot.lower_limits, -np.pi)
    hi = np.where(np.isfinite(robot.upper_limits), robot.upper_limits, np.pi)
    Q = np.random.default_rng(args.seed).uniform(lo, hi, size=(args.configurations, len(lo)))
    import my_collision_pkg
    print(f"package: {os.path.dirname(my_collision_pkg.__file__)}")

    single, batch = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        for q in Q:
            checker.check(names, q)
        single.append((time.perf_counter() - t) / len(Q) * 1e6)
        t = time.perf_counter()
        valid, _ = checker.check_batch(names, Q)
        batch.append((time.perf_counter() - t) / len(Q) * 1e6)
    refused = Q[~valid]
    for q in refused[:5]:                     # first calls build per-shape caches
        checker.explain(names, q)
    times, n_contacts = [], 0
    for q in refused:
        t = time.perf_counter()
        e = checker.explain(names, q)
        times.append((time.perf_counter() - t) * 1e3)
        n_contacts += len(e.contacts)
    print(f"predicate, one per call: {statistics.median(single):.1f} us per configuration "
          f"(rounds: {', '.join(f'{x:.1f}' for x in single)})")
    print(f"batch predicate:         {statistics.median(batch):.2f} us per configuration "
          f"(rounds: {', '.join(f'{x:.2f}' for x in batch)})")
    print(f"explain on {len(refused)} refused configurations: median {statistics.median(times):.3f} ms, "
          f"p90 {np.percentile(times, 90):.3f} ms, max {max(times):.3f} ms, {n_contacts} contacts")


if __name__ == "__main__":
    main()
