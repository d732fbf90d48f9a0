"""The labelling tool without Ray: items, labels against the single-process calls, part files, resuming, bad files.

The Ray engine (a two-node cluster, a killed worker) is tested in test_label_ray.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("pyarrow", reason="the labelling tool writes Parquet with pyarrow (requirements/python.txt)")

from label_scenes import (assert_same_labels, column, reference_checker, reference_clearance,  # noqa: E402
                          reference_edges, write_worlds)

from my_collision_pkg.tools.label import output  # noqa: E402
from my_collision_pkg.tools.label.items import (CONFIGURATIONS, EDGES, SAMPLE_BLOCK, ItemFileError,  # noqa: E402
                                                SampledItems, read_items)
from my_collision_pkg.tools.label.job import make_job, run_job  # noqa: E402
from my_collision_pkg.tools.label.labeller import LabelError  # noqa: E402

N_CONFIGURATIONS = 3000
N_EDGES = 24
CLEARANCE_M = 0.1


def test_sampled_items_do_not_depend_on_how_they_are_cut():
    lower, upper = np.array([-1.0, 0.0, -3.0]), np.array([1.0, 0.5, 3.0])
    items = SampledItems(CONFIGURATIONS, 2 * SAMPLE_BLOCK + 100, 7, lower, upper)
    whole = items.rows(0, items.count)
    cuts = [0, 13, SAMPLE_BLOCK - 1, SAMPLE_BLOCK + 5, 2 * SAMPLE_BLOCK + 99, items.count]
    pieces = np.concatenate([items.rows(a, b) for a, b in zip(cuts, cuts[1:])])
    np.testing.assert_array_equal(whole, pieces)
    assert np.all(whole >= lower) and np.all(whole <= upper)
    assert not np.array_equal(whole, SampledItems(CONFIGURATIONS, items.count, 8, lower, upper).rows(0, items.count))
    edges = SampledItems(EDGES, 500, 7, lower, upper, 0.2).rows(0, 500)
    assert edges.shape == (500, 2, 3)
    assert np.all(np.abs(edges[:, 1] - edges[:, 0]) <= 0.2 + 1e-12)
    assert np.all(edges[:, 1] >= lower) and np.all(edges[:, 1] <= upper)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    return write_worlds(tmp_path_factory.mktemp("worlds"))


@pytest.fixture(scope="module")
def job(worlds):
    return make_job(world_paths=worlds, samples=N_CONFIGURATIONS, seed=11, edges=N_EDGES, clearance_m=CLEARANCE_M,
                    shard_size=700, edge_shard_size=10)


@pytest.fixture(scope="module")
def labelled(job, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("labels"))
    run_job(job, folder, engine="local")
    return folder


def test_labels_are_the_single_process_answers(job, labelled, worlds):
    names = list(job.options.joint_names)
    q = job.configurations.rows(0, N_CONFIGURATIONS)
    edges = job.edges.rows(0, N_EDGES)
    table = output.read_labels(labelled, CONFIGURATIONS)
    edge_table = output.read_labels(labelled, EDGES)
    assert table.num_rows == 2 * N_CONFIGURATIONS and edge_table.num_rows == 2 * N_EDGES
    for w, world in enumerate(worlds):
        rows = column(table, "world_index") == w
        checker = reference_checker(world)
        valid, _ = checker.check_batch(names, q)
        first = checker.first_collisions(names, q)
        np.testing.assert_array_equal(column(table, "item")[rows], np.arange(N_CONFIGURATIONS))
        assert column(table, "q")[rows].tobytes() == q.tobytes()
        np.testing.assert_array_equal(column(table, "valid")[rows], valid)
        np.testing.assert_array_equal(column(table, "status")[rows], first.status)
        np.testing.assert_array_equal(column(table, "pair_0")[rows], first.pair_names[:, 0])
        np.testing.assert_array_equal(column(table, "pair_1")[rows], first.pair_names[:, 1])
        assert 0 < np.count_nonzero(valid) < N_CONFIGURATIONS
        # clearance: one row per configuration within the limits (all of them here), the smallest distance
        distance, gradient, rows_c = reference_clearance(checker, names, q, CLEARANCE_M)
        assert column(table, "clearance_m")[rows].tobytes() == distance.tobytes()
        assert column(table, "clearance_gradient")[rows].tobytes() == gradient.tobytes()
        np.testing.assert_array_equal(column(table, "clearance_pair_0")[rows][rows_c.configuration_index],
                                      rows_c.body_names[:, 0])
        assert np.all(column(table, "clearance_m")[rows][~valid] <= 0.0)
        # edges: certified check_motion per edge
        reference = reference_edges(checker, names, edges)
        edge_rows = column(edge_table, "world_index") == w
        for name, values in reference.items():
            got = column(edge_table, name)[edge_rows]
            if values.dtype == object:
                np.testing.assert_array_equal(got, values)
            else:
                assert got.astype(values.dtype).tobytes() == values.tobytes(), name
        assert 0 < np.count_nonzero(reference["valid"]) < N_EDGES


def test_manifest_and_part_files(job, labelled):
    with open(os.path.join(labelled, output.MANIFEST)) as stream:
        manifest = json.load(stream)
    assert manifest["complete"] and manifest["job"]["items"]["configurations"]["seed"] == 11
    parts = sorted(os.listdir(os.path.join(labelled, CONFIGURATIONS)))
    assert len(parts) == 2 * 5 and all(p.startswith("part-w000") for p in parts[:5])
    assert parts[0] == "part-w0000-000000000000.parquet" and parts[4] == "part-w0000-000000002800.parquet"


class _Crash(Exception):
    pass


def test_a_crashed_run_resumes_without_redoing_finished_shards(job, labelled, tmp_path):
    folder = str(tmp_path / "out")
    written = []

    def crash_after_three(shard, info):
        written.append(shard.name)
        if len(written) == 3:
            raise _Crash()
    with pytest.raises(_Crash):
        run_job(job, folder, engine="local", on_shard=crash_after_three)
    # a half-written part file of the crash (a temporary) is cleaned; the finished ones stay untouched
    open(os.path.join(folder, CONFIGURATIONS, ".writing-x.parquet"), "w").close()
    before = {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in written}
    again = []
    summary = run_job(job, folder, engine="local", on_shard=lambda shard, info: again.append(shard.name))
    assert summary["shards_labelled_now"] == summary["shards"] - 3
    assert not set(again) & set(written)
    assert {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in written} == before
    assert not [f for f in os.listdir(os.path.join(folder, CONFIGURATIONS)) if f.startswith(".")]
    for kind in (CONFIGURATIONS, EDGES):
        assert_same_labels(output.read_labels(folder, kind), output.read_labels(labelled, kind))


def test_another_job_in_the_same_folder_is_refused(worlds, labelled):
    other = make_job(world_paths=worlds, samples=N_CONFIGURATIONS, seed=12, edges=N_EDGES,
                     clearance_m=CLEARANCE_M, shard_size=700, edge_shard_size=10)
    with pytest.raises(output.OutputError, match="items.configurations.seed"):
        run_job(other, labelled, engine="local")


def test_configurations_read_from_files_get_the_labels_of_the_same_sampled_ones(job, labelled, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    q = job.configurations.rows(0, N_CONFIGURATIONS)
    names = job.options.joint_names
    np.save(tmp_path / "q.npy", q)
    pq.write_table(pa.table({n: q[:, k] for k, n in enumerate(names)}), tmp_path / "q.parquet")
    np.testing.assert_array_equal(read_items(str(tmp_path / "q.parquet"), CONFIGURATIONS, names).values, q)
    from_file = make_job(world_paths=[job.options.world_paths[1]], configurations_path=str(tmp_path / "q.npy"),
                         shard_size=1000)
    run_job(from_file, str(tmp_path / "out"), engine="local")
    got = output.read_labels(str(tmp_path / "out"))
    want = output.read_labels(labelled).filter(pa.compute.equal(pa.compute.field("world_index"), 1))
    for name in ("item", "q", "valid", "status", "pair_0", "pair_1"):
        assert got.column(name).equals(want.column(name)), name


def test_bad_item_files_are_named(tmp_path):
    names = ("a", "b")
    np.save(tmp_path / "wrong.npy", np.zeros((4, 3)))
    with pytest.raises(ItemFileError, match="wrong.npy.*shape"):
        read_items(str(tmp_path / "wrong.npy"), CONFIGURATIONS, names)
    np.save(tmp_path / "nan.npy", np.array([[0.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(ItemFileError, match="nan.npy: row 1"):
        read_items(str(tmp_path / "nan.npy"), CONFIGURATIONS, names)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(ItemFileError, match="junk.parquet"):
        read_items(str(tmp_path / "junk.parquet"), EDGES, names)


def _label_command(*args, timeout_s=300):
    env = dict(os.environ, PYTHONSAFEPATH="1")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "my_collision_pkg.tools.label", *args], capture_output=True,
                          text=True, timeout=timeout_s, env=env)
    return done, time.monotonic() - began


@pytest.mark.parametrize("content, fault", [
    ("objects: [\n  - id: table\n    shapes: [{type: box, size: [1, 2]}]\n", "world file"),
    ("frame_id: panda_link0\nobjects:\n  - {id: box, shapes: [{type: box, size: [1, 1]}]}\n", "size"),
])
def test_a_corrupt_world_file_fails_at_the_start_with_one_line_naming_it(tmp_path, content, fault):
    bad = tmp_path / "corrupt_world.yaml"
    bad.write_text(content)
    good = write_worlds(tmp_path)[0]
    done, _ = _label_command("--world", good, "--world", str(bad), "--samples", "100", "--output",
                             str(tmp_path / "out"), "--engine", "ray")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("label: error:") and str(bad) in lines[0], done.stderr
    assert not (tmp_path / "out").exists()             # nothing started


def test_a_bad_robot_fails_at_the_start_naming_the_file(tmp_path):
    urdf = tmp_path / "broken.urdf"
    urdf.write_text("<robot name='r'><link name='a'/><joint name='j' type='revolute'>")
    done, _ = _label_command("--urdf", str(urdf), "--samples", "10", "--output", str(tmp_path / "out"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and str(urdf) in done.stderr
    done, _ = _label_command("--world", str(tmp_path / "missing.yaml"), "--samples", "10", "--output",
                             str(tmp_path / "out"))
    assert done.returncode == 2 and "missing.yaml: no such file" in done.stderr


def test_the_tool_imports_no_ros_and_no_ray_until_it_runs_on_ray():
    code = ("import sys; sys.modules['rclpy'] = None\n"
            "import my_collision_pkg.tools.label.cli, my_collision_pkg.tools.label.__main__\n"
            "bad = [m for m, v in sys.modules.items() if v is not None\n"
            "       and (m.split('.')[0] in ('rclpy', 'ray', 'ament_index_python') or m.endswith('_msgs'))]\n"
            "assert not bad, bad\n")
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
