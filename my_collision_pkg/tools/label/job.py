"""A labelling job: the robot, the worlds, the work items, how they are cut into shards, and running it.

:func:`make_job` checks everything a job needs before any work (the robot and every world
file load, the joints exist, item files are readable): a bad file fails the job at the
start with one line naming it (:class:`labeller.LabelError`). :func:`run_job` labels the
shards not yet written in the output folder, on Ray (:mod:`ray_engine`) or in this process,
and writes each finished shard's part file (:mod:`output`).
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.model.example_robots import panda_paths
from my_collision_pkg.tools.label import output
from my_collision_pkg.tools.label.items import CONFIGURATIONS, EDGES, FileItems, SampledItems, read_items
from my_collision_pkg.tools.label.labeller import LabelError, LabelOptions, Shard, build_checker, label_shard

DEFAULT_SHARD_SIZE = 20_000           # configurations per shard (a part file): about 0.1 s of work for the Panda
DEFAULT_EDGE_SHARD_SIZE = 500         # edges per shard: about 0.2 s
DEFAULT_EDGE_LENGTH_RAD = 0.5         # a sampled edge's goal: its start plus up to this much per joint


@dataclass(frozen=True)
class LabelJob:
    """What to label (see :func:`make_job`)."""
    options: LabelOptions
    configurations: SampledItems | FileItems | None
    edges: SampledItems | FileItems | None
    shard_size: int = DEFAULT_SHARD_SIZE
    edge_shard_size: int = DEFAULT_EDGE_SHARD_SIZE

    def shards(self) -> Iterator[Shard]:
        """Every shard, world by world (a worker then mostly reuses one checker), configurations first."""
        worlds = range(max(1, len(self.options.world_paths)))
        for kind, items, size in ((CONFIGURATIONS, self.configurations, self.shard_size),
                                  (EDGES, self.edges, self.edge_shard_size)):
            if items is None:
                continue
            for world in worlds:
                for start in range(0, items.count, size):
                    yield Shard(kind, world, start, min(items.count, start + size))

    def rows(self, shard: Shard) -> np.ndarray:
        items = self.configurations if shard.kind == CONFIGURATIONS else self.edges
        return items.rows(shard.start, shard.stop)

    def describe(self) -> dict:
        """The job as plain JSON data (the manifest's ``job``): a resumed run must describe the same job."""
        o = self.options
        files = [p for p in (o.urdf_path, o.srdf_path, *o.world_paths) if p]
        items = {kind: (it.describe() if it is not None else None)
                 for kind, it in ((CONFIGURATIONS, self.configurations), (EDGES, self.edges))}
        for it in (self.configurations, self.edges):
            if isinstance(it, FileItems):
                files.append(it.path)
        return {"urdf": o.urdf_path, "srdf": o.srdf_path, "worlds": list(o.world_paths),
                "joint_names": list(o.joint_names), "group": o.group_name, "clearance_m": o.clearance_m,
                "with_positions": o.with_positions, "items": items, "shard_size": self.shard_size,
                "edge_shard_size": self.edge_shard_size, "file_sha256": {p: _digest(p) for p in files}}


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _existing(path: str, what: str) -> str:
    if not os.path.isfile(path):
        raise LabelError(f"{what} {path}: no such file")
    return os.path.abspath(path)


def make_job(*, urdf_path: str | None = None, srdf_path: str | None = None, world_paths=(),
             joint_names=None, group_name: str = "", samples: int = 0, seed: int = 0,
             configurations_path: str | None = None, edges: int = 0, edges_path: str | None = None,
             edge_length_rad: float = DEFAULT_EDGE_LENGTH_RAD, clearance_m: float | None = None,
             with_positions: bool = True, shard_size: int = DEFAULT_SHARD_SIZE,
             edge_shard_size: int = DEFAULT_EDGE_SHARD_SIZE) -> LabelJob:
    """A checked job. Without ``urdf_path`` the robot is the Panda of example-robot-data (``panda_paths``).

    Sampled configurations (``samples`` with ``seed``) or a file of them
    (``configurations_path``), and/or sampled edges (``edges``, ``edge_length_rad``) or a file
    (``edges_path``): see :mod:`items`. Every item is labelled in every world (no world: the
    robot alone). Each robot and world file is loaded here once, so that a bad one fails now.

    Raises
    ------
    LabelError
        One line naming the file or setting at fault.
    """
    if urdf_path is None:
        if srdf_path is not None:
            raise LabelError("--srdf without --urdf: give the URDF too")
        urdf_path, srdf_path = panda_paths()
    urdf_path = _existing(urdf_path, "URDF")
    srdf_path = _existing(srdf_path, "SRDF") if srdf_path else ""
    worlds = tuple(_existing(p, "world file") for p in world_paths)
    if shard_size < 1 or edge_shard_size < 1:
        raise LabelError("shard sizes must be at least 1")
    if samples < 0 or edges < 0:
        raise LabelError("the numbers of samples and edges cannot be negative")
    if samples and configurations_path:
        raise LabelError("give sampled configurations or a configuration file, not both")
    if edges and edges_path:
        raise LabelError("give sampled edges or an edge file, not both")
    if not (samples or configurations_path or edges or edges_path):
        raise LabelError("nothing to label: give --samples, --configurations, --edges or --edges-file")
    if clearance_m is not None and not (np.isfinite(clearance_m) and clearance_m >= 0.0):
        raise LabelError(f"the clearance influence distance must be a finite number >= 0 m, not {clearance_m}")
    if not (np.isfinite(edge_length_rad) and edge_length_rad >= 0.0):
        raise LabelError(f"the edge length must be a finite number >= 0, not {edge_length_rad}")
    probe = LabelOptions(urdf_path, srdf_path, worlds, ())
    # every world loads (the robot with it): a bad file fails here, by name, before any work
    checkers = [build_checker(probe, w) for w in range(max(1, len(worlds)))]
    robot = checkers[0].scene.robot
    names = tuple(joint_names) if joint_names else tuple(robot.active_joint_names)
    unknown = [n for n in names if n not in robot.active_joint_names]
    if unknown:
        raise LabelError(f"{urdf_path}: no active joint named {', '.join(unknown)}")
    if group_name and group_name not in checkers[0].scene.semantic.groups:
        raise LabelError(f"{srdf_path or urdf_path}: no group named {group_name!r}")
    for checker in checkers:
        checker.close()
    index = [robot.active_joint_names.index(n) for n in names]
    lower, upper = robot.lower_limits[index], robot.upper_limits[index]
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        if samples or edges:
            raise LabelError("sampling needs finite limits for every joint; name the joints with --joints")
    options = LabelOptions(urdf_path, srdf_path, worlds, names, group_name, clearance_m, with_positions)
    configurations = (SampledItems(CONFIGURATIONS, samples, seed, lower, upper) if samples
                      else read_items(configurations_path, CONFIGURATIONS, names) if configurations_path else None)
    edge_items = (SampledItems(EDGES, edges, seed, lower, upper, edge_length_rad) if edges
                  else read_items(edges_path, EDGES, names) if edges_path else None)
    return LabelJob(options, configurations, edge_items, shard_size, edge_shard_size)


def run_job(job: LabelJob, folder: str, *, engine: str = "ray", address: str | None = None,
            workers: int | None = None, temp_dir: str | None = None,
            on_shard: Callable[[Shard, dict], None] | None = None) -> dict:
    """Label every shard of ``job`` not yet in ``folder``; the summary written to the manifest.

    ``engine`` "ray" (see :func:`ray_engine.run_on_ray` for ``address``, ``workers`` and
    ``temp_dir``) or "local" (this process, one shard after another). ``on_shard(shard, info)``
    is called after each part file is written (progress; ``info`` from
    :func:`labeller.label_shard`).

    Raises
    ------
    LabelError, output.OutputError
        Naming what failed; the part files written so far stay (a later run resumes).
    """
    began = time.time()
    done = output.open_output(folder, job.describe())
    pending = [s for s in job.shards() if s.name not in done]

    def finished(shard: Shard, table, info: dict) -> None:
        if os.path.exists(os.path.join(folder, shard.name)):
            return                                       # written once only, however often it ran
        output.write_part(folder, shard, table)
        if on_shard is not None:
            on_shard(shard, info)

    if engine == "ray":
        from my_collision_pkg.tools.label.ray_engine import run_on_ray
        run_on_ray(job, pending, finished, address=address, workers=workers, temp_dir=temp_dir)
    elif engine == "local":
        for shard in pending:
            finished(*label_shard(job.options, shard, job.rows(shard)))
    else:
        raise LabelError(f"unknown engine {engine!r} (ray or local)")
    summary = {"shards": sum(1 for _ in job.shards()), "shards_labelled_now": len(pending),
               "seconds_now": round(time.time() - began, 3), "engine": engine}
    output.mark_complete(folder, summary)
    return summary


__all__ = ["CollisionPkgError", "DEFAULT_EDGE_LENGTH_RAD", "DEFAULT_EDGE_SHARD_SIZE", "DEFAULT_SHARD_SIZE",
           "LabelError", "LabelJob", "make_job", "run_job"]
