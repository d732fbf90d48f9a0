"""The work items of a labelling job: configurations and edges, sampled with a seed or read from a file.

Sampled items are the same for a seed whatever the shard size, the number of workers or
nodes: item ``i`` comes from block ``i // SAMPLE_BLOCK``, whose generator is seeded with
``(seed, kind, block)`` (numpy's ``SeedSequence`` with a spawn key), so a shard draws only
the blocks it covers and no shard depends on another.

- A configuration is a vector over the job's joints (radians or metres), drawn uniformly
  within their limits.
- An edge is a pair (start, goal) over the job's joints: the start uniform within the
  limits; the goal the start plus an offset uniform in ``[-edge_length, edge_length]`` per
  joint, clipped to the limits (``edge_length`` 0: the goal uniform within the limits too).

Files: configurations from a ``.npy`` (N, J), a ``.npz`` with an array ``q`` (N, J), or a
Parquet file with a list column ``q`` or one column per joint name; edges from a ``.npy``
(N, 2, J), a ``.npz`` with arrays ``start`` and ``goal`` (N, J), or a Parquet file with list
columns ``start`` and ``goal``. Every row must have one value per joint and be finite
(checked when the file is read: a bad file fails the job at the start, naming it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from my_collision_pkg.core.errors import CollisionPkgError

CONFIGURATIONS = "configurations"
EDGES = "edges"
KINDS = (CONFIGURATIONS, EDGES)
SAMPLE_BLOCK = 8192                 # items drawn from one seeded generator
_KIND_KEY = {CONFIGURATIONS: 0, EDGES: 1}


class ItemFileError(CollisionPkgError):
    """A configuration or edge file that cannot be read or does not fit the job's joints."""


def _block_rng(seed: int, kind: str, block: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=(_KIND_KEY[kind], int(block))))


def _sample_block(seed: int, kind: str, block: int, lower: np.ndarray, upper: np.ndarray,
                  edge_length: float) -> np.ndarray:
    """Block ``block``: (SAMPLE_BLOCK, J) configurations or (SAMPLE_BLOCK, 2, J) edges."""
    rng = _block_rng(seed, kind, block)
    start = rng.uniform(lower, upper, size=(SAMPLE_BLOCK, len(lower)))
    if kind == CONFIGURATIONS:
        return start
    if edge_length > 0.0:
        goal = np.clip(start + rng.uniform(-edge_length, edge_length, size=start.shape), lower, upper)
    else:
        goal = rng.uniform(lower, upper, size=start.shape)
    return np.stack([start, goal], axis=1)


@dataclass(frozen=True)
class SampledItems:
    """``count`` items of ``kind`` drawn with ``seed`` within [lower, upper] (see the module docstring)."""
    kind: str
    count: int
    seed: int
    lower: np.ndarray
    upper: np.ndarray
    edge_length: float = 0.0

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Items ``start`` to ``stop`` (exclusive): (n, J) configurations or (n, 2, J) edges."""
        if not 0 <= start <= stop <= self.count:
            raise IndexError(f"items [{start}, {stop}) outside [0, {self.count})")
        parts = []
        for block in range(start // SAMPLE_BLOCK, (stop - 1) // SAMPLE_BLOCK + 1 if stop > start else 0):
            rows = _sample_block(self.seed, self.kind, block, self.lower, self.upper, self.edge_length)
            first = block * SAMPLE_BLOCK
            parts.append(rows[max(start, first) - first:min(stop, first + SAMPLE_BLOCK) - first])
        shape = (0, len(self.lower)) if self.kind == CONFIGURATIONS else (0, 2, len(self.lower))
        return np.concatenate(parts) if parts else np.zeros(shape)

    def describe(self) -> dict:
        return {"source": "sampled", "count": self.count, "seed": self.seed,
                **({"edge_length": self.edge_length} if self.kind == EDGES else {})}


@dataclass(frozen=True)
class FileItems:
    """Items read from ``path`` (held in memory: the driver hands each shard its rows)."""
    kind: str
    path: str
    values: np.ndarray

    @property
    def count(self) -> int:
        return len(self.values)

    def rows(self, start: int, stop: int) -> np.ndarray:
        return self.values[start:stop]

    def describe(self) -> dict:
        return {"source": "file", "path": self.path, "count": self.count}


def _parquet_lists(path: str, table, column: str, n_joints: int) -> np.ndarray:
    values = table.column(column).combine_chunks()
    if values.null_count:
        raise ItemFileError(f"{path}: column '{column}' has empty rows")
    flat = values.flatten().to_numpy(zero_copy_only=False).astype(float)
    if flat.size != len(values) * n_joints:
        raise ItemFileError(f"{path}: column '{column}' must hold {n_joints} values per row (one per joint)")
    return flat.reshape(len(values), n_joints)


def _read_parquet(path: str, kind: str, joint_names: tuple[str, ...]) -> np.ndarray:
    import pyarrow.parquet as pq
    table = pq.read_table(path)
    names = set(table.column_names)
    n = len(joint_names)
    if kind == CONFIGURATIONS:
        if "q" in names:
            return _parquet_lists(path, table, "q", n)
        missing = [j for j in joint_names if j not in names]
        if missing:
            raise ItemFileError(f"{path}: no column 'q' and no column for joint(s) {', '.join(missing)}")
        return np.column_stack([table.column(j).to_numpy(zero_copy_only=False).astype(float) for j in joint_names])
    if not {"start", "goal"} <= names:
        raise ItemFileError(f"{path}: an edge file needs the list columns 'start' and 'goal'")
    return np.stack([_parquet_lists(path, table, "start", n), _parquet_lists(path, table, "goal", n)], axis=1)


def read_items(path: str, kind: str, joint_names: tuple[str, ...]) -> FileItems:
    """The configurations or edges of ``path`` (.npy, .npz or .parquet) over ``joint_names``.

    Raises
    ------
    ItemFileError
        Naming the file: missing, unreadable, of another shape, or with non-finite values.
    """
    n = len(joint_names)
    if not os.path.isfile(path):
        raise ItemFileError(f"{path}: no such {kind} file")
    try:
        if path.endswith(".parquet"):
            values = _read_parquet(path, kind, joint_names)
        elif path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as data:
                keys = ("q",) if kind == CONFIGURATIONS else ("start", "goal")
                missing = [k for k in keys if k not in data.files]
                if missing:
                    raise ItemFileError(f"{path}: no array named {', '.join(repr(k) for k in missing)}")
                arrays = [np.asarray(data[k], dtype=float) for k in keys]
            values = arrays[0] if kind == CONFIGURATIONS else np.stack(arrays, axis=1)
        elif path.endswith(".npy"):
            values = np.asarray(np.load(path, allow_pickle=False), dtype=float)
        else:
            raise ItemFileError(f"{path}: {kind} are read from .npy, .npz or .parquet files")
    except ItemFileError:
        raise
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ItemFileError(f"{path}: cannot read {kind}: {exc}") from exc
    except Exception as exc:     # pyarrow's errors (ArrowInvalid is a ValueError; others are not)
        raise ItemFileError(f"{path}: cannot read {kind}: {exc}") from exc
    shape = (n,) if kind == CONFIGURATIONS else (2, n)
    if values.ndim != len(shape) + 1 or values.shape[1:] != shape:
        raise ItemFileError(f"{path}: {kind} must have shape (N, {', '.join(map(str, shape))}) "
                            f"for the joints {', '.join(joint_names)}; the file has {values.shape}")
    if not np.all(np.isfinite(values)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(values.reshape(len(values), -1)), axis=1))[0])
        raise ItemFileError(f"{path}: row {bad} has a value that is not finite")
    return FileItems(kind, os.path.abspath(path), np.ascontiguousarray(values))
