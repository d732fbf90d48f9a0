"""The command line of the labelling tool (``python -m my_collision_pkg.tools.label --help``).

Exit status 0 when every shard is written; 2 with one line ``label: error: ...`` naming the
file or setting at fault (checked before any work), 1 when the job fails while running (a
shard's error, naming it; the part files written so far stay, and the same command resumes).
"""
from __future__ import annotations

import argparse
import sys
import time

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.tools.label.job import (DEFAULT_EDGE_LENGTH_RAD, DEFAULT_EDGE_SHARD_SIZE, DEFAULT_SHARD_SIZE,
                                              make_job, run_job)
from my_collision_pkg.tools.label.output import OutputError

EPILOG = """examples:
  # 1M Panda configurations in two worlds, with the nearest pair and its gradient within 0.1 m
  python -m my_collision_pkg.tools.label --world a.yaml --world b.yaml --samples 1000000 --seed 1 \\
      --clearance 0.1 --output labels/
  # edges from a file, on a running Ray cluster
  python -m my_collision_pkg.tools.label --urdf r.urdf.xacro --srdf r.srdf --world w.yaml \\
      --edges-file edges.npz --address auto --output labels/
The same command on the same output folder resumes an interrupted run. See docs/labelling.md."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m my_collision_pkg.tools.label", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Exact collision labels (verdict, first colliding pair, clearance with "
                                            "gradient, certified edges) for many configurations and motions, "
                                            "written as Parquet, on Ray.")
    robot = p.add_argument_group("robot and worlds")
    robot.add_argument("--urdf", help="URDF or .urdf.xacro (default: the Panda of example-robot-data)")
    robot.add_argument("--srdf", help="SRDF or .srdf.xacro (default with the Panda: its SRDF)")
    robot.add_argument("--world", action="append", default=[], metavar="FILE",
                       help="a world YAML file (repeat for several: every item is labelled in each)")
    robot.add_argument("--joints", help="comma-separated joints of the items (default: every active joint)")
    robot.add_argument("--group", default="", help="the SRDF group whose links are checked (default: all)")
    items = p.add_argument_group("work items")
    items.add_argument("--samples", type=int, default=0, help="configurations drawn uniformly within the limits")
    items.add_argument("--configurations", metavar="FILE", help="configurations from .npy, .npz (q) or .parquet")
    items.add_argument("--edges", type=int, default=0, help="edges (start, goal) drawn with the seed")
    items.add_argument("--edges-file", metavar="FILE", help="edges from .npy (N,2,J), .npz (start, goal) or .parquet")
    items.add_argument("--edge-length", type=float, default=DEFAULT_EDGE_LENGTH_RAD, metavar="RAD",
                       help="a sampled goal is its start plus up to this per joint (0: uniform; default %(default)s)")
    items.add_argument("--seed", type=int, default=0, help="seed of the sampled items (default %(default)s)")
    labels = p.add_argument_group("labels")
    labels.add_argument("--clearance", type=float, metavar="METRES",
                        help="add the smallest signed distance within this influence distance, its pair and gradient")
    labels.add_argument("--no-positions", action="store_true", help="do not repeat the joint values in the output")
    run = p.add_argument_group("running")
    run.add_argument("--output", required=True, metavar="FOLDER", help="output folder (resumed if it holds this job)")
    run.add_argument("--engine", choices=("ray", "local"), default="ray",
                     help="ray (default) or local: this process only, no Ray")
    run.add_argument("--address", help="join this Ray cluster (host:port or auto) instead of starting a local Ray")
    run.add_argument("--workers", type=int, help="CPUs used at once (default: every CPU of the local Ray or cluster)")
    run.add_argument("--ray-temp-dir", metavar="FOLDER", help="temporary folder of a local Ray (default Ray's /tmp/ray)")
    run.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE,
                     help="configurations per part file (default %(default)s)")
    run.add_argument("--edge-shard-size", type=int, default=DEFAULT_EDGE_SHARD_SIZE,
                     help="edges per part file (default %(default)s)")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        job = make_job(urdf_path=args.urdf, srdf_path=args.srdf, world_paths=args.world,
                       joint_names=args.joints.split(",") if args.joints else None, group_name=args.group,
                       samples=args.samples, seed=args.seed, configurations_path=args.configurations,
                       edges=args.edges, edges_path=args.edges_file, edge_length_rad=args.edge_length,
                       clearance_m=args.clearance, with_positions=not args.no_positions,
                       shard_size=args.shard_size, edge_shard_size=args.edge_shard_size)
    except (CollisionPkgError, OutputError) as exc:
        print(f"label: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    total = sum(1 for _ in job.shards())
    count = [0]
    began = time.perf_counter()

    def progress(shard, info) -> None:
        count[0] += 1
        if not args.quiet:
            print(f"label: {shard.name} ({shard.stop - shard.start} items, pid {info['pid']}, "
                  f"{info['seconds']:.2f} s); {count[0]} written now", flush=True)
    try:
        summary = run_job(job, args.output, engine=args.engine, address=args.address, workers=args.workers,
                          temp_dir=args.ray_temp_dir, on_shard=progress)
    except OutputError as exc:
        print(f"label: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except CollisionPkgError as exc:
        print(f"label: failed: {' '.join(str(exc).split())} (the part files written stay; the same command "
              "resumes)", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"label: {total} shards in {args.output} ({summary['shards_labelled_now']} now, "
              f"{time.perf_counter() - began:.1f} s)")
    return 0
