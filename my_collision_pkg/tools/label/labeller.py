"""Labelling one shard of a job in this process: the checker built once per process and world, the columns.

This is what each Ray worker runs (and what ``--no-ray`` runs in the driver). It imports
neither Ray nor ROS. A process keeps the checkers it built (:func:`checker_for`, the last
``CHECKERS_KEPT`` worlds), so a worker builds the robot and the world once and labels every
later shard of that world with the same checker. Checkers are made with
``batch_workers=1``: a Ray worker never forks (Ray spreads the work over processes itself).

The labels are the single-process answers of the checker's public calls on the shard's
items, so they do not depend on how the job is cut or where a shard runs:

- configurations: :meth:`CollisionChecker.first_collisions` (``check_batch``'s verdicts and the
  pair the predicate stopped at) and, with a clearance influence distance,
  :meth:`CollisionChecker.clearance` with one row per configuration (the smallest signed
  distance, its pair and its gradient) over the configurations within the joint limits;
- edges: :meth:`CollisionChecker.check_motion` in certified mode, one call per edge.
"""
from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import NO_CC_TIME, MotionMode, Status
from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.tools.label.items import CONFIGURATIONS, EDGES

CHECKERS_KEPT = 4               # checkers (robot + one world each) a process keeps


class LabelError(CollisionPkgError):
    """A labelling job that cannot run: a bad robot, world or item file, or a refused request."""


@dataclass(frozen=True)
class LabelOptions:
    """What every shard of a job needs besides its items (sent to each worker; plain data).

    ``urdf_path``, ``srdf_path`` (may be empty), ``world_paths``: absolute file paths that
    must resolve on every node; ``joint_names``: the columns of the items (the robot's other
    joints stay at their default positions); ``group_name``: the request's group ("" for the
    whole robot); ``clearance_m``: the influence distance of the clearance columns (metres;
    None: no clearance); ``with_positions``: write the items' joint values with their labels.
    """
    urdf_path: str
    srdf_path: str
    world_paths: tuple[str, ...]
    joint_names: tuple[str, ...]
    group_name: str = ""
    clearance_m: float | None = None
    with_positions: bool = True


@dataclass(frozen=True)
class Shard:
    """Items ``start`` to ``stop`` (exclusive) of ``kind``, labelled in world ``world_index``."""
    kind: str
    world_index: int
    start: int
    stop: int

    @property
    def name(self) -> str:
        """The shard's part file, relative to the output folder."""
        return f"{self.kind}/part-w{self.world_index:04d}-{self.start:012d}.parquet"


_checkers: OrderedDict = OrderedDict()
_builds = [0]


def build_checker(options: LabelOptions, world_index: int) -> CollisionChecker:
    """A new checker on the robot and world ``world_index`` (``batch_workers=1``).

    Raises
    ------
    LabelError
        Naming the robot or world file that cannot be loaded, and why.
    """
    world_path = options.world_paths[world_index] if options.world_paths else None
    try:
        scene = load_scene(urdf_path=options.urdf_path, srdf_path=options.srdf_path or None, world_path=world_path)
    except (CollisionPkgError, OSError, ValueError) as exc:
        raise LabelError(_load_failure(options, world_path, exc)) from exc
    return CollisionChecker(scene, batch_workers=1)


def _load_failure(options: LabelOptions, world_path: str | None, exc: Exception) -> str:
    """One line naming the file that failed to load."""
    text = " ".join(str(exc).split())
    for path, what in ((world_path, "world file"), (options.srdf_path, "SRDF"), (options.urdf_path, "URDF")):
        if path and (path in text or os.path.basename(path) in text):
            return f"{what} {path}: {text}" if path not in text else text
    return f"robot {options.urdf_path}" + (f" with world file {world_path}" if world_path else "") + f": {text}"


def checker_for(options: LabelOptions, world_index: int) -> tuple[CollisionChecker, bool]:
    """This process's checker for ``world_index`` (built on first use, then reused) and whether it was built now."""
    key = (options.urdf_path, options.srdf_path, options.world_paths[world_index] if options.world_paths else None)
    checker = _checkers.get(key)
    if checker is not None:
        _checkers.move_to_end(key)
        return checker, False
    checker = build_checker(options, world_index)
    _checkers[key] = checker
    _builds[0] += 1
    while len(_checkers) > CHECKERS_KEPT:
        _checkers.popitem(last=False)[1].close()
    return checker, True


def label_configurations(checker: CollisionChecker, options: LabelOptions, q: np.ndarray) -> dict[str, np.ndarray]:
    """The label columns of configurations ``q`` (n, J) over ``options.joint_names``.

    ``valid``, ``status`` (a :class:`Status` value), ``pair_0``/``pair_1`` (the first colliding
    pair's owners, None where valid or out of limits); with ``options.clearance_m``:
    ``clearance_m`` (NaN where no pair is within the influence distance or the configuration is
    outside the limits), ``clearance_pair_0``/``clearance_pair_1``, ``clearance_gradient`` (n, J)
    and ``clearance_smooth``.
    """
    names = options.joint_names
    first = checker.first_collisions(names, q, group_name=options.group_name)
    if first.summary.status == Status.INVALID_REQUEST:
        raise LabelError(f"the configurations were refused: {first.summary.message}")
    columns = {"valid": first.valid, "status": first.status,
               "pair_0": first.pair_names[:, 0], "pair_1": first.pair_names[:, 1]}
    if options.clearance_m is not None:
        n, j = q.shape
        distance = np.full(n, np.nan)
        bodies = np.full((n, 2), None, dtype=object)
        gradient = np.full((n, j), np.nan)
        smooth = np.zeros(n, dtype=bool)
        inside = np.flatnonzero(first.status != Status.OUT_OF_BOUNDS)
        if inside.size:
            rows = checker.clearance(names, q[inside], options.clearance_m, group_name=options.group_name,
                                     max_rows_per_configuration=1)
            if rows.status != Status.VALID:
                raise LabelError(f"the clearance request was refused: {rows.message}")
            at = inside[rows.configuration_index]
            distance[at] = rows.distance
            bodies[at] = rows.body_names
            order = [rows.jacobian_joint_names.index(name) for name in names]
            gradient[at] = rows.jacobian[:, order]
            smooth[at] = rows.smooth
        columns.update(clearance_m=distance, clearance_pair_0=bodies[:, 0], clearance_pair_1=bodies[:, 1],
                       clearance_gradient=gradient, clearance_smooth=smooth)
    return columns


def label_edges(checker: CollisionChecker, options: LabelOptions, edges: np.ndarray) -> dict[str, np.ndarray]:
    """The label columns of edges (n, 2, J): certified :meth:`CollisionChecker.check_motion` per edge.

    ``valid``, ``status``, ``cc_time`` (the first contact's fraction of the edge in [0, 1], NaN
    where valid), ``pair_0``/``pair_1`` (the first contact's pair, None where valid),
    ``min_clearance_m`` (a valid edge's certified lower bound of its clearance, NaN otherwise).
    """
    n = len(edges)
    valid = np.zeros(n, dtype=bool)
    status = np.zeros(n, dtype=np.int8)
    cc_time = np.full(n, np.nan)
    pairs = np.full((n, 2), None, dtype=object)
    clearance = np.full(n, np.nan)
    for i, (start, goal) in enumerate(edges):
        result = checker.check_motion(options.joint_names, start, goal, group_name=options.group_name,
                                      mode=MotionMode.CERTIFIED)
        if result.status == Status.INVALID_REQUEST:
            raise LabelError(f"edge refused: {result.message}")
        valid[i], status[i] = result.valid, int(result.status)
        if result.cc_time != NO_CC_TIME:
            cc_time[i] = result.cc_time
        if result.contacts:
            pairs[i] = result.contacts[0].link_names
        clearance[i] = result.min_clearance_m
    return {"valid": valid, "status": status, "cc_time": cc_time, "pair_0": pairs[:, 0], "pair_1": pairs[:, 1],
            "min_clearance_m": clearance}


def label_shard(options: LabelOptions, shard: Shard, rows: np.ndarray):
    """Label one shard in this process: ``(shard, table, info)``.

    ``table`` is the shard's :mod:`pyarrow` table (see :func:`output.shard_table`); ``info``
    says which process labelled it, whether it built its checker for it, and how long it took.
    """
    from my_collision_pkg.tools.label.output import shard_table
    began = time.perf_counter()
    checker, built = checker_for(options, shard.world_index)
    rows = np.asarray(rows, dtype=float)
    if shard.kind == CONFIGURATIONS:
        columns = label_configurations(checker, options, rows)
    elif shard.kind == EDGES:
        columns = label_edges(checker, options, rows)
    else:
        raise LabelError(f"unknown kind of item {shard.kind!r}")
    table = shard_table(options, shard, rows, columns)
    info = {"pid": os.getpid(), "built_checker": built, "checkers_built": _builds[0],
            "package": os.path.dirname(os.path.abspath(__file__)),
            "seconds": time.perf_counter() - began}
    return shard, table, info
