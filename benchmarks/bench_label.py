"""Throughput of the labelling tool on Ray (1 and 2 workers) against the single-process calls on the same items.

Run:  PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_label.py [--rounds 3]

The Panda and ``config/panda_world.yaml``; items sampled with one seed. Three workloads:

- configurations: verdict and first colliding pair (``--configurations``, default 40,000),
  against one ``check_batch`` call in one process (``batch_workers=1``) on the same items;
- clearance: the same plus the smallest signed distance within 0.1 m with its gradient
  (``--clearance-configurations``, default 4,000), against ``clearance(...,
  max_rows_per_configuration=1)`` in one process;
- edges: certified ``check_motion`` per edge (``--edges``, default 400), against the same
  calls in one loop in one process.

Each workload runs, per round, in an order that rotates from round to round:

- ``peer``: the single-process call(s) named above, items already in memory, nothing written;
- ``local``: the tool with ``engine="local"`` (this process, no Ray): the peer's work plus
  sampling, Parquet part files, the manifest;
- ``ray 1``, ``ray 2``: the tool on a local Ray started with 1 or 2 CPUs. Ray's start-up
  (``ray.init``) and the first job on a fresh Ray (worker processes started, each building
  its checker: the cold start) are timed separately, once per round; the timed run is the
  next job on that warm Ray (new output folder), which is what a long job sees for all but
  its first shards.

Printed: items per second (median over the rounds), the ratio to the peer, Ray's start-up
and cold-start seconds, the load average. Ray's overhead is the gap between ``local`` and
``ray 1`` (shipping items and tables through the object store, scheduling, the driver
writing parts); ``ray 2`` shows what a second core gives on this machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORLD = os.path.join(REPO, "config", "panda_world.yaml")
CLEARANCE_M = 0.1


def _peer(kind: str, checker, names, items: np.ndarray) -> None:
    from my_collision_pkg.core.checks.results import MotionMode
    if kind == "configurations":
        checker.check_batch(names, items)
    elif kind == "clearance":
        checker.check_batch(names, items)
        checker.clearance(names, items, CLEARANCE_M, max_rows_per_configuration=1)
    else:
        for start, goal in items:
            checker.check_motion(names, start, goal, mode=MotionMode.CERTIFIED)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configurations", type=int, default=40_000)
    p.add_argument("--clearance-configurations", type=int, default=4_000)
    p.add_argument("--edges", type=int, default=400)
    args = p.parse_args()
    import ray

    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.tools.label.job import make_job, run_job
    urdf, srdf = panda_paths()
    checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD), batch_workers=1)
    jobs = {"configurations": make_job(world_paths=[WORLD], samples=args.configurations, seed=1, shard_size=5000),
            "clearance": make_job(world_paths=[WORLD], samples=args.clearance_configurations, seed=2,
                                  clearance_m=CLEARANCE_M, shard_size=500),
            "edges": make_job(world_paths=[WORLD], edges=args.edges, seed=3, edge_shard_size=50)}
    counts = {"configurations": args.configurations, "clearance": args.clearance_configurations,
              "edges": args.edges}
    items = {k: (j.configurations or j.edges).rows(0, counts[k]) for k, j in jobs.items()}
    names = jobs["configurations"].options.joint_names
    scratch = tempfile.mkdtemp(prefix="bench-label-")
    ray_temp = tempfile.mkdtemp(prefix="ray-bench-", dir="/tmp")
    engines = ["peer", "local", "ray 1", "ray 2"]
    seconds = {(k, e): [] for k in jobs for e in engines}
    startup, cold = {1: [], 2: []}, {1: [], 2: []}
    folder_count = [0]

    def fresh_folder() -> str:
        folder_count[0] += 1
        return os.path.join(scratch, f"out{folder_count[0]}")
    try:
        for r in range(args.rounds):
            order = engines[r % len(engines):] + engines[:r % len(engines)]
            for engine in order:
                if engine.startswith("ray"):
                    workers = int(engine.split()[1])
                    began = time.perf_counter()
                    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                             logging_level="warning", _temp_dir=ray_temp)
                    startup[workers].append(time.perf_counter() - began)
                    began = time.perf_counter()
                    run_job(jobs["configurations"], fresh_folder(), engine="ray", workers=workers)
                    cold[workers].append(time.perf_counter() - began)
                for kind, job in jobs.items():
                    began = time.perf_counter()
                    if engine == "peer":
                        _peer(kind, checker, names, items[kind])
                    elif engine == "local":
                        run_job(job, fresh_folder(), engine="local")
                    else:
                        run_job(job, fresh_folder(), engine="ray", workers=workers)
                    seconds[(kind, engine)].append(time.perf_counter() - began)
                if engine.startswith("ray"):
                    ray.shutdown()
            print(f"round {r + 1}/{args.rounds} done (order {', '.join(order)})", file=sys.stderr)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(ray_temp, ignore_errors=True)
    print(f"bench_label: Panda + panda_world.yaml, {args.rounds} rounds, medians; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    print(f"{'workload':<16}{'items':>8}" + "".join(f"{e + ' /s':>14}" for e in engines)
          + "".join(f"{e + ' : peer':>14}" for e in engines[1:]))
    for kind in jobs:
        rate = {e: counts[kind] / statistics.median(seconds[(kind, e)]) for e in engines}
        print(f"{kind:<16}{counts[kind]:>8}" + "".join(f"{rate[e]:>14.0f}" for e in engines)
              + "".join(f"{rate[e] / rate['peer']:>14.2f}" for e in engines[1:]))
    for workers in (1, 2):
        print(f"ray {workers}: ray.init {statistics.median(startup[workers]):.2f} s; first job on a fresh Ray "
              f"({args.configurations} configurations: workers start, build their checker) "
              f"{statistics.median(cold[workers]):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
