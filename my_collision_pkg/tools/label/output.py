"""The output folder of a labelling job: one Parquet part file per shard, and a manifest.

::

    OUT/manifest.json                                  the job, its shards, when it completed
    OUT/configurations/part-wWWWW-SSSSSSSSSSSS.parquet one shard: world WWWW, items from SSSS...
    OUT/edges/part-wWWWW-SSSSSSSSSSSS.parquet

A part file is written under a temporary name in its folder and renamed into place
(``os.replace``, atomic on one file system) only when complete, by the driver alone: a part
file that exists is a finished shard, and a shard is written at most once however often
Ray ran its task. A run on a folder with a manifest resumes: it checks that the job is the
same (:func:`open_output`; another job is refused, naming what differs), deletes the
temporary files a crash left, and labels only the shards without a part file.

The columns are described in ``docs/labelling.md``; :func:`read_labels` reads them back.
"""
from __future__ import annotations

import glob
import json
import os
import tempfile

import numpy as np

from my_collision_pkg.tools.label.items import CONFIGURATIONS, KINDS

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
_TEMPORARY_PREFIX = ".writing-"


class OutputError(Exception):
    """An output folder that holds another job's labels, or cannot be written."""


def _list_column(values: np.ndarray):
    """(n, k) floats as a fixed-size list column."""
    import pyarrow as pa
    values = np.ascontiguousarray(values, dtype=np.float64)
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])


def shard_table(options, shard, rows: np.ndarray, columns: dict[str, np.ndarray]):
    """One shard's labels as a :mod:`pyarrow` table, its columns in a fixed order (docs/labelling.md)."""
    import pyarrow as pa
    n = len(rows)
    world = options.world_paths[shard.world_index] if options.world_paths else ""
    data = {"world_index": pa.array(np.full(n, shard.world_index, dtype=np.int32)),
            "world": pa.array([world] * n, type=pa.string()).dictionary_encode(),
            "item": pa.array(np.arange(shard.start, shard.stop, dtype=np.int64))}
    if options.with_positions:
        if shard.kind == CONFIGURATIONS:
            data["q"] = _list_column(rows)
        else:
            data["start"], data["goal"] = _list_column(rows[:, 0]), _list_column(rows[:, 1])
    for name, values in columns.items():
        if name == "clearance_gradient":
            data[name] = _list_column(values)
        elif values.dtype == object:
            data[name] = pa.array(list(values), type=pa.string())
        else:
            data[name] = pa.array(values)
    metadata = {"my_collision_pkg.joint_names": json.dumps(list(options.joint_names)),
                "my_collision_pkg.kind": shard.kind}
    return pa.table(data).replace_schema_metadata(metadata)


def write_part(folder: str, shard, table) -> str:
    """Write ``table`` as ``shard``'s part file, atomically (a temporary file renamed into place)."""
    import pyarrow.parquet as pq
    path = os.path.join(folder, shard.name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, suffix=".parquet", dir=os.path.dirname(path))
    os.close(handle)
    try:
        pq.write_table(table, temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def _write_json(path: str, data: dict) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w") as stream:
        json.dump(data, stream, indent=1, sort_keys=True)
        stream.write("\n")
    os.replace(temporary, path)


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(old) | set(new))
    found = []
    for key in keys:
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            found += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            found.append(f"{prefix}{key}")
    return found


def open_output(folder: str, job: dict) -> set[str]:
    """Prepare ``folder`` for ``job`` (the job's description, plain JSON data); the shards already done.

    A new folder gets a manifest. A folder with a manifest of the same job is resumed: the
    temporary files of an interrupted write are deleted and the names of the part files present
    (relative to ``folder``) are returned. A manifest of another job is refused.

    Raises
    ------
    OutputError
        When ``folder`` holds another job's manifest (naming the settings that differ) or is not a folder.
    """
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise OutputError(f"output {folder}: not a folder")
    os.makedirs(folder, exist_ok=True)
    manifest = os.path.join(folder, MANIFEST)
    record = {"format_version": FORMAT_VERSION, "job": job, "complete": False}
    if os.path.exists(manifest):
        try:
            with open(manifest) as stream:
                old = json.load(stream)
        except (OSError, ValueError) as exc:
            raise OutputError(f"output {folder}: cannot read {MANIFEST}: {exc}") from exc
        differ = _differences(old.get("job", {}), json.loads(json.dumps(job)))
        if old.get("format_version") != FORMAT_VERSION:
            differ.insert(0, "format_version")
        if differ:
            raise OutputError(f"output {folder} holds the labels of another job (different: {', '.join(differ)}); "
                              "give a new output folder, or the same settings to resume it")
        for kind in KINDS:
            for leftover in glob.glob(os.path.join(folder, kind, _TEMPORARY_PREFIX + "*")):
                os.unlink(leftover)
        record = old
    elif any(os.path.exists(os.path.join(folder, kind)) for kind in KINDS):
        raise OutputError(f"output {folder}: has part files but no {MANIFEST}; give an empty or new folder")
    record["complete"] = False
    _write_json(manifest, record)
    done = set()
    for kind in KINDS:
        for path in glob.glob(os.path.join(folder, kind, "part-*.parquet")):
            done.add(os.path.relpath(path, folder))
    return done


def mark_complete(folder: str, summary: dict) -> None:
    """Record in the manifest that every shard is written, with ``summary`` (counts, time)."""
    manifest = os.path.join(folder, MANIFEST)
    with open(manifest) as stream:
        record = json.load(stream)
    record.update(complete=True, summary=summary)
    _write_json(manifest, record)


def read_labels(folder: str, kind: str = CONFIGURATIONS):
    """Every part file of ``kind`` in ``folder`` as one :mod:`pyarrow` table, sorted by world and item."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    paths = sorted(glob.glob(os.path.join(folder, kind, "part-*.parquet")))
    if not paths:
        raise OutputError(f"output {folder}: no {kind} part files")
    tables = [pq.read_table(path) for path in paths]
    # the world column is dictionary-encoded per part: unify before concatenating
    table = pa.concat_tables([t.set_column(t.schema.get_field_index("world"), "world",
                                           t.column("world").cast(pa.string())) for t in tables])
    return table.sort_by([("world_index", "ascending"), ("item", "ascending")])
