"""Motion checks on the Panda: certified against discrete sampling, on the same edges, one run.

Run:  python benchmarks/bench_motion.py [--edges 300] [--reference-step 1e-4] [--rounds 2] [--order rotate]

Scene: the Panda of example-robot-data with its SRDF and ``config/panda_world.yaml``
(a table and a post). Edges: pairs of random valid configurations (the same seed every
run). Per edge and per method, ``CollisionChecker.check_motion`` is timed (best of
``--rounds``, the methods interleaved per edge so machine noise falls on all alike, and
their order rotated from one edge to the next, ``--order rotate``: a method run after
another on the same edge is faster, by about a tenth on this machine, so a fixed order,
``--order fixed`` (certified first, as until 2026-12-04), favours the methods run last):

- certified (conservative advancement, tolerance 1e-4 m);
- certified without clearance tracking (``motion.TRACK_CLEARANCE`` off: what the smallest
  certified clearance of a valid motion costs is the difference of the two);
- certified with every pair on its own clock (``sweep.GRID_STEPS`` off: the search before
  the time grid of ``kernels.grid_advance``, for the ratio of the two in one run);
- discrete at 0.01 rad and at 0.05 rad (MoveIt-like) through the batch predicate.

Printed: milliseconds per edge (median, p90), the number of edges each calls invalid,
and agreement with a fine discrete reference (``--reference-step``, 1e-4 rad by
default): edges the method misses (reference invalid, method valid), edges where the
certified ``cc_time`` is later than the reference's first collision (for discrete
sampling the first invalid sample is later by construction: not counted), and edges only the
certified check refuses, with the distance (exact, narrow phase) of its touching pair at
``cc_time`` and the reference's smallest distance of that pair over its samples within
0.01 of ``cc_time``.

``--export-edges FILE`` also writes the edges, the reference's verdicts, the link pairs the
request checks and the world's primitives to FILE (JSON), for ``benchmarks/by_hand/drake_edges.py``
(Drake's ``CheckEdgeCollisionFree`` on the same edges, in a Python 3.12 venv of its own).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from _edges import valid_edges

from my_collision_pkg.core.checks import motion, sweep
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, MotionMode
from my_collision_pkg.core.checks.narrowphase import pair_distance
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CYLINDER, KIND_SPHERE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
EDGE_SEED = 20_261_130
WINDOW = 0.01


def _reference_clearance(checker, q0, q1, contact, t: float, step: float) -> float:
    """Smallest exact distance of the contact's shape pair over reference samples near t."""
    world = checker.scene.world
    index = {(e.owner, e.shape_id): s for s, e in enumerate(world.shapes)}
    a, b = index[(contact.link_names[0], contact.shape_ids[0])], index[(contact.link_names[1], contact.shape_ids[1])]
    n = max(1, int(np.ceil(np.max(np.abs(q1 - q0)) / step)))
    times = np.arange(n + 1) / n
    near = times[np.abs(times - t) <= WINDOW]
    q = q0[None, :] + near[:, None] * (q1 - q0)[None, :]
    T_shape = world.shape_transforms(checker.scene.robot.link_transforms_batch(q))
    return min(pair_distance(world, T, a, b).distance_m for T in T_shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=300)
    parser.add_argument("--reference-step", type=float, default=1e-4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--order", choices=("rotate", "fixed"), default="rotate",
                        help="the methods' order on each edge: rotated per edge (default) or always as listed")
    parser.add_argument("--export-edges", default=None, metavar="FILE",
                        help="write the edges and the reference's verdicts to FILE (JSON) for by_hand/drake_edges.py")
    args = parser.parse_args()
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    edges = valid_edges(checker, args.edges, EDGE_SEED)
    methods = {"certified": dict(),
               "certified untracked": dict(),
               "certified own clocks": dict(),
               "discrete 0.01 rad": dict(mode=MotionMode.DISCRETE, max_step=0.01),
               "discrete 0.05 rad": dict(mode=MotionMode.DISCRETE, max_step=0.05)}
    checker.check_motion(names, *edges[0])                 # compile and warm up
    times = {m: [] for m in methods}
    results = {m: [] for m in methods}
    listed = list(methods)
    for e, (q0, q1) in enumerate(edges):
        shift = e % len(listed) if args.order == "rotate" else 0
        for m in listed[shift:] + listed[:shift]:
            options = methods[m]
            best = np.inf
            motion.TRACK_CLEARANCE = m != "certified untracked"
            sweep.GRID_STEPS = m != "certified own clocks"
            for _ in range(args.rounds):
                start = time.perf_counter()
                result = checker.check_motion(names, q0, q1, **options)
                best = min(best, time.perf_counter() - start)
            times[m].append(best * 1e3)
            results[m].append(result)
    motion.TRACK_CLEARANCE = True
    sweep.GRID_STEPS = True
    reference = [checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=args.reference_step)
                 for q0, q1 in edges]
    if args.export_edges:
        export_edges(args.export_edges, checker, urdf, edges, reference)
    print(f"Panda + panda_world.yaml, {len(edges)} edges between valid configurations, methods' order "
          f"{'rotated per edge' if args.order == 'rotate' else 'fixed'}; "
          f"reference: discrete at {args.reference_step:g} rad ({sum(not r.valid for r in reference)} invalid)")
    print(f"{'method':<21} {'median ms':>10} {'p90 ms':>8} {'invalid':>8} {'missed':>7} {'later':>6}")
    for m in methods:
        missed = sum(1 for r, ref in zip(results[m], reference) if r.valid and not ref.valid)
        later = sum(1 for r, ref in zip(results[m], reference)
                    if not r.valid and not ref.valid and r.cc_time > ref.cc_time + 1e-12)
        later_text = f"{later:>6d}" if m.startswith("certified") else f"{'-':>6}"   # a sample lands after the contact
        print(f"{m:<21} {np.median(times[m]):>10.2f} {np.percentile(times[m], 90):>8.2f} "
              f"{sum(not r.valid for r in results[m]):>8d} {missed:>7d} {later_text}")
    base = np.median(times["discrete 0.01 rad"])
    print(f"median ratio certified / discrete 0.01 rad: {np.median(times['certified']) / base:.2f}; "
          f"certified / discrete 0.05 rad: {np.median(times['certified']) / np.median(times['discrete 0.05 rad']):.2f}")
    tracked, untracked = np.array(times["certified"]), np.array(times["certified untracked"])
    valid = np.array([r.valid for r in results["certified"]])
    sampled = np.array(times["discrete 0.05 rad"])
    for label, rows in (("valid", valid), ("invalid", ~valid)):
        if rows.any():
            print(f"{label} edges ({int(rows.sum())}): certified median {np.median(tracked[rows]):.3f} ms, discrete 0.05 "
                  f"rad {np.median(sampled[rows]):.3f} ms (x{np.median(tracked[rows]) / np.median(sampled[rows]):.2f})")
    print(f"clearance tracking, certified: median {np.median(tracked):.3f} vs {np.median(untracked):.3f} ms "
          f"untracked (x{np.median(tracked) / np.median(untracked):.3f}), p90 {np.percentile(tracked, 90):.3f} vs "
          f"{np.percentile(untracked, 90):.3f} ms; per edge, median of tracked / untracked "
          f"{np.median(tracked / untracked):.3f} (valid edges {np.median(tracked[valid] / untracked[valid]):.3f}, "
          f"median extra {np.median(tracked[valid] - untracked[valid]) * 1e3:.1f} us)")
    verdicts = sum(r.valid != u.valid for r, u in zip(results["certified"], results["certified untracked"]))
    print(f"verdicts that differ tracked vs untracked: {verdicts}")
    grid, own = np.array(times["certified"]), np.array(times["certified own clocks"])
    differ = sum(r.valid != u.valid for r, u in zip(results["certified"], results["certified own clocks"]))
    print(f"time grid vs own clocks: median {np.median(grid):.3f} vs {np.median(own):.3f} ms "
          f"(x{np.median(grid) / np.median(own):.3f}), per edge median x{np.median(grid / own):.3f}, "
          f"p90 {np.percentile(grid, 90):.3f} vs {np.percentile(own, 90):.3f} ms; verdicts that differ: {differ}")
    only = [(k, r) for k, (r, ref) in enumerate(zip(results["certified"], reference)) if not r.valid and ref.valid]
    both = sum(1 for r, ref in zip(results["certified"], reference) if not r.valid and not ref.valid)
    neither = sum(1 for r, ref in zip(results["certified"], reference) if r.valid and ref.valid)
    print(f"certified vs reference: both invalid {both}, both valid {neither}, certified only {len(only)}")
    for k, r in only:
        q0, q1 = edges[k]
        contact = min(r.contacts, key=lambda c: c.distance)
        clearance = _reference_clearance(checker, q0, q1, contact, r.cc_time, args.reference_step)
        print(f"  edge {k}: {r.message}; reference's smallest distance of that pair near cc_time "
              f"{clearance * 1e3:.4f} mm (tolerance {DEFAULT_TOUCH_TOLERANCE_M * 1e3:g} mm)")


def export_edges(path: str, checker, urdf: str, edges, reference) -> None:
    """The edges as every movable joint's values by name (mimic joints included), the reference's
    verdicts, the link (or world object) pairs the default request checks, and the world's
    primitives with their poses in the planning frame (panda_link0, the robot's root)."""
    scene = checker.scene
    robot, world = scene.robot, scene.world
    kinds = {KIND_BOX: "box", KIND_SPHERE: "sphere", KIND_CYLINDER: "cylinder"}
    covers = sweep.cover_arrays(world)
    objects = []
    for s in np.flatnonzero(world.shape_link < 0):
        kind = int(covers.kind[s])
        if kind not in kinds:
            raise ValueError(f"world shape of '{world.shapes[s].owner}' is not a box, sphere or cylinder")
        objects.append({"owner": world.shapes[s].owner, "kind": kinds[kind], "params": covers.params[s].tolist(),
                        "pose": world.T_frame_shape[s].tolist()})
    pairs = sorted({tuple(sorted((world.shapes[a].owner, world.shapes[b].owner))) for a, b in world.pairs})
    values = [[robot.movable_values(q).tolist() for q in edge] for edge in edges]
    with open(path, "w") as out:
        json.dump({"urdf": urdf, "root_link": robot.root_link, "joints": list(robot.movable_joint_names),
                   "edges": values, "reference_valid": [bool(r.valid) for r in reference], "pairs": pairs,
                   "objects": objects}, out)
    print(f"wrote {len(edges)} edges, {len(pairs)} body pairs and {len(objects)} world objects to {path}")


if __name__ == "__main__":
    main()
