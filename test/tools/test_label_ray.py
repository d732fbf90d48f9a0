"""The labelling tool on a local Ray cluster of two nodes (Ray's cluster utilities, one CPU each).

One cluster serves the whole module (Ray starts slowly); its temporary files live in a
fresh folder under /tmp, and the teardown checks that none of its processes is left.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

pytest.importorskip("pyarrow", reason="the labelling tool writes Parquet with pyarrow (requirements/python.txt)")
# Everything on the loopback address: Ray otherwise rewrites 127.0.0.1 in a cluster address into
# this machine's outside address (get_node_ip_address); with "clusters" off it keeps localhost.
# Its temporary files (and its ray_current_cluster file) in a fresh folder under /tmp (short:
# Ray's socket paths must fit). Set before Ray is imported, and inherited by the subprocesses.
RAY_TEMP_DIR = tempfile.mkdtemp(prefix="ray-label-", dir="/tmp")
os.environ["RAY_TMPDIR"] = RAY_TEMP_DIR
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray", reason="the labelling tool's Ray engine needs ray (requirements/python.txt)")

from label_scenes import column, reference_checker, reference_clearance, reference_edges, write_worlds  # noqa: E402

from my_collision_pkg.tools.label import labeller, output  # noqa: E402
from my_collision_pkg.tools.label.items import CONFIGURATIONS, EDGES  # noqa: E402
from my_collision_pkg.tools.label.job import make_job, run_job  # noqa: E402

N_CONFIGURATIONS = 100_000          # per world: 200,000 labels over the two worlds
SHARD = 10_000
OBJECT_STORE_BYTES = 100 * 1024 * 1024
KILL_WAIT_S = 120.0


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                if text.encode() in stream.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster
    temp_dir = RAY_TEMP_DIR
    node = {"num_cpus": 1, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False,
            "node_ip_address": "127.0.0.1"}
    c = None
    try:
        c = Cluster(initialize_head=True, head_node_args=dict(node))
        c.add_node(**node)
        c.wait_for_nodes()
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if c is not None:
            c.shutdown()
        deadline = time.monotonic() + 30.0
        while _processes_mentioning(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _processes_mentioning(temp_dir)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"Ray processes left after the cluster's shutdown: {left}"


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    return write_worlds(tmp_path_factory.mktemp("worlds"))


@pytest.fixture(scope="module")
def big_job(worlds):
    return make_job(world_paths=worlds, samples=N_CONFIGURATIONS, seed=38, shard_size=SHARD)


@pytest.fixture(scope="module")
def references(big_job, worlds):
    """Per world: check_batch's verdicts and first_collisions' statuses and pairs on the job's configurations."""
    q = big_job.configurations.rows(0, N_CONFIGURATIONS)
    answers = []
    for world in worlds:
        checker = reference_checker(world)
        valid, _ = checker.check_batch(big_job.options.joint_names, q)
        answers.append((valid, checker.first_collisions(big_job.options.joint_names, q)))
    return q, answers


def _assert_every_item_once_and_exact(folder, references):
    q, answers = references
    table = output.read_labels(folder, CONFIGURATIONS)
    assert table.num_rows == 2 * N_CONFIGURATIONS
    for w, (valid, first) in enumerate(answers):
        rows = column(table, "world_index") == w
        np.testing.assert_array_equal(column(table, "item")[rows], np.arange(N_CONFIGURATIONS))   # once each
        assert column(table, "q")[rows].tobytes() == q.tobytes()
        assert column(table, "valid")[rows].tobytes() == valid.tobytes()
        assert column(table, "status")[rows].tobytes() == first.status.tobytes()
        np.testing.assert_array_equal(column(table, "pair_0")[rows], first.pair_names[:, 0])
        np.testing.assert_array_equal(column(table, "pair_1")[rows], first.pair_names[:, 1])
        assert 0 < np.count_nonzero(valid) < N_CONFIGURATIONS


def test_100k_configurations_over_two_scenes_on_two_nodes_are_check_batch_bit_for_bit(cluster, big_job, references,
                                                                                       tmp_path):
    infos = []
    run_job(big_job, str(tmp_path / "out"), engine="ray", address=cluster.address,
            on_shard=lambda shard, info: infos.append(info))
    _assert_every_item_once_and_exact(str(tmp_path / "out"), references)
    # the workers ran the package this process runs (not, say, the source tree of the current folder)
    assert {i["package"] for i in infos} == {os.path.dirname(os.path.abspath(labeller.__file__))}
    # both nodes' workers took part, and each built a world's checker once, then reused it
    pids = {i["pid"] for i in infos}
    assert len(pids) >= 2
    builds = sum(i["built_checker"] for i in infos)
    assert builds <= 2 * len(pids) < len(infos)


def test_a_worker_killed_mid_job_is_retried_and_every_item_is_written_once(cluster, big_job, references, tmp_path):
    killed = []
    seen = set()
    armed = threading.Event()

    def killer():
        deadline = time.monotonic() + KILL_WAIT_S
        while not killed and time.monotonic() < deadline:
            for pid in list(seen):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as stream:
                        busy = stream.read().startswith(b"ray::label_shard")
                except OSError:
                    continue
                if busy:                                # labelling a shard right now
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.001)
    thread = threading.Thread(target=killer, daemon=True)

    def on_shard(shard, info):
        seen.add(info["pid"])
        if not armed.is_set():
            armed.set()
            thread.start()
    run_job(big_job, str(tmp_path / "out"), engine="ray", address=cluster.address, on_shard=on_shard)
    thread.join(timeout=5.0)
    assert killed, "no worker was seen labelling a shard to be killed"
    _assert_every_item_once_and_exact(str(tmp_path / "out"), references)


def test_clearance_and_edges_from_the_command_line_on_the_cluster_match_one_process(cluster, worlds, tmp_path):
    n, n_edges, influence = 1500, 30, 0.1
    args = ["--samples", str(n), "--edges", str(n_edges), "--seed", "5", "--clearance", str(influence),
            "--shard-size", "400", "--edge-shard-size", "8", "--address", cluster.address, "--output",
            str(tmp_path / "out"), "--quiet"]
    for world in worlds:
        args += ["--world", world]
    done = subprocess.run([sys.executable, "-m", "my_collision_pkg.tools.label", *args], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONSAFEPATH="1"))
    assert done.returncode == 0, done.stderr
    job = make_job(world_paths=worlds, samples=n, edges=n_edges, seed=5, clearance_m=influence)
    names = job.options.joint_names
    q, edges = job.configurations.rows(0, n), job.edges.rows(0, n_edges)
    table = output.read_labels(str(tmp_path / "out"), CONFIGURATIONS)
    edge_table = output.read_labels(str(tmp_path / "out"), EDGES)
    for w, world in enumerate(worlds):
        checker = reference_checker(world)
        rows = column(table, "world_index") == w
        valid, _ = checker.check_batch(names, q)
        assert column(table, "valid")[rows].tobytes() == valid.tobytes()
        distance, gradient, _ = reference_clearance(checker, names, q, influence)
        assert column(table, "clearance_m")[rows].tobytes() == distance.tobytes()
        assert column(table, "clearance_gradient")[rows].tobytes() == gradient.tobytes()
        edge_rows = column(edge_table, "world_index") == w
        for name, values in reference_edges(checker, names, edges).items():
            got = column(edge_table, name)[edge_rows]
            if values.dtype == object:
                np.testing.assert_array_equal(got, values)
            else:
                assert got.astype(values.dtype).tobytes() == values.tobytes(), name
