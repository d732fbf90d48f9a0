"""Explain's cost with the exact contact geometry (issues 8 and 9), and that the predicate did not move.

Franka Panda (example-robot-data) with the default world (``config/panda_world.yaml``),
a fixed random set of configurations within the limits. Prints, per package measured:

- predicate, one configuration per call: microseconds per configuration (median of rounds);
- batch predicate over the whole set: microseconds per configuration (median of rounds);
- explain on every configuration the predicate refuses, ``contact_distance = 0``:
  median, p90 and max milliseconds per call, wall clock and this process's CPU time
  (the CPU time is what a loaded machine disturbs least), the contacts it returned and
  how many of them are fallbacks (``depth_is_fallback``);
- the time to load the scene (URDF, SRDF, world, meshes and their trees).

``--baseline REV`` also measures the package as it is at git revision REV (its
``my_collision_pkg`` sources extracted to a temporary folder), in separate processes
alternating with the current package, and prints both side by side with ratios.
The targets are explain median < 1 ms and max < 3 ms (issue 9).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORLD = os.path.join(REPO, "config", "panda_world.yaml")
FIGURES = (("predicate_us", "predicate, one per call (us/cfg)"), ("batch_us", "batch predicate (us/cfg)"),
           ("explain_median_ms", "explain median (ms)"), ("explain_p90_ms", "explain p90 (ms)"),
           ("explain_max_ms", "explain max (ms)"), ("explain_cpu_median_ms", "explain CPU median (ms)"),
           ("explain_cpu_p90_ms", "explain CPU p90 (ms)"), ("explain_cpu_max_ms", "explain CPU max (ms)"),
           ("contacts", "contacts"), ("fallbacks", "fallback contacts"), ("load_s", "scene load (s)"))


def measure(configurations: int, seed: int, rounds: int) -> dict:
    """The figures of the package found first on the import path."""
    import my_collision_pkg
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths

    urdf, srdf = panda_paths()
    t = time.perf_counter()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD)
    load_s = time.perf_counter() - t
    checker = CollisionChecker(scene)
    robot = scene.robot
    names = robot.active_joint_names
    lo = np.where(np.isfinite(robot.lower_limits), robot.lower_limits, -np.pi)
    hi = np.where(np.isfinite(robot.upper_limits), robot.upper_limits, np.pi)
    Q = np.random.default_rng(seed).uniform(lo, hi, size=(configurations, len(lo)))
    single, batch = [], []
    for _ in range(rounds):
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
    wall, cpu, n_contacts, n_fallback = [], [], 0, 0
    for q in refused:
        t, c = time.perf_counter(), time.process_time()
        e = checker.explain(names, q)
        cpu.append((time.process_time() - c) * 1e3)
        wall.append((time.perf_counter() - t) * 1e3)
        n_contacts += len(e.contacts)
        n_fallback += sum(bool(x.depth_is_fallback) for x in e.contacts)
    return {"package": os.path.dirname(my_collision_pkg.__file__), "refused": int(len(refused)),
            "predicate_us": statistics.median(single), "batch_us": statistics.median(batch),
            "explain_median_ms": statistics.median(wall), "explain_p90_ms": float(np.percentile(wall, 90)),
            "explain_max_ms": max(wall), "explain_cpu_median_ms": statistics.median(cpu),
            "explain_cpu_p90_ms": float(np.percentile(cpu, 90)), "explain_cpu_max_ms": max(cpu),
            "contacts": n_contacts, "fallbacks": n_fallback, "load_s": load_s}


def _extract(revision: str, folder: str) -> str:
    """``my_collision_pkg`` of a git revision, extracted under ``folder``; returns the folder to import from."""
    archive = subprocess.run(["git", "-C", REPO, "archive", "--format=tar", revision, "my_collision_pkg"],
                             check=True, capture_output=True).stdout
    path = os.path.join(folder, "archive.tar")
    with open(path, "wb") as f:
        f.write(archive)
    with tarfile.open(path) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _child(python_path: str | None, args) -> dict:
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = python_path + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, os.path.abspath(__file__), "--json", "--configurations", str(args.configurations),
               "--seed", str(args.seed), "--rounds", str(args.rounds)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def _print_one(figures: dict) -> None:
    print(f"package: {figures['package']}  ({figures['refused']} refused configurations)")
    for key, label in FIGURES:
        print(f"  {label:34s} {figures[key]:10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configurations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20_260_611)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV", help="also measure my_collision_pkg at this git revision")
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs of each package (with --baseline)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.configurations, args.seed, args.rounds)))
        return
    if not args.baseline:
        _print_one(measure(args.configurations, args.seed, args.rounds))
        return
    with tempfile.TemporaryDirectory(prefix="bench_contacts_") as folder:
        old_path = _extract(args.baseline, folder)
        runs: dict[str, list[dict]] = {"baseline": [], "current": []}
        for _ in range(args.repeats):
            runs["baseline"].append(_child(old_path, args))
            runs["current"].append(_child(None, args))
    print(f"baseline: {args.baseline} ({runs['baseline'][0]['package']})")
    print(f"current:  {runs['current'][0]['package']}")
    print(f"{runs['current'][0]['refused']} refused configurations of {args.configurations}; "
          f"{args.repeats} alternating run(s) each, figures per run")
    for key, label in FIGURES:
        old = [r[key] for r in runs["baseline"]]
        new = [r[key] for r in runs["current"]]
        ratios = [n / o if o else float("nan") for o, n in zip(old, new)]
        print(f"  {label:34s} baseline {' '.join(f'{x:9.3f}' for x in old)}   current "
              f"{' '.join(f'{x:9.3f}' for x in new)}   current/baseline {' '.join(f'{x:.2f}' for x in ratios)}")


if __name__ == "__main__":
    main()
