"""Running a labelling job's shards on Ray (an optional dependency: imported only here, only when used).

One Ray task per shard (:func:`labeller.label_shard`, one CPU each): a worker process keeps
the checker it built for a world, so Ray's reuse of worker processes makes each worker
build its checker once. The driver keeps a bounded number of shards in flight (twice the
slots), writes each finished shard's part file itself (so workers need no shared file
system for the output, and a shard is written once), and stops at the first shard that
fails with an error of its own (a file that does not load on a node, a refused request),
naming it.

Faults: a task whose worker process dies (killed, out of memory, its node lost) is
retried by Ray up to ``MAX_RETRIES`` times on any node; its labels are the same wherever it
runs, and the driver writes each shard once, so the output has every item once.

Without ``address`` a local Ray is started on this machine (``workers`` CPUs, default every
core; its temporary files under ``temp_dir``) and shut down at the end; with ``address``
(``host:port`` of a running cluster's head, or ``auto``), or in a process where Ray is already
initialised, the job uses that cluster and at most ``workers`` of its CPUs at once (default
all; with ``workers`` given, the next shard is submitted when one finishes).
"""
from __future__ import annotations

import os
from collections.abc import Callable

import my_collision_pkg
from my_collision_pkg.tools.label.labeller import LabelError, label_shard

MAX_RETRIES = 4                  # runs of one shard's task after its worker died, before the job fails
IN_FLIGHT_PER_SLOT = 2           # shards submitted per CPU used: the next one waits while one runs
LOCAL_NODE_IP = "127.0.0.1"      # the local Ray's address: it serves this machine only


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise LabelError("the ray engine needs Ray (pip install ray; requirements/python.txt pins it); "
                         "or label in this process with --engine local") from exc
    return ray


def run_on_ray(job, pending: list, finished: Callable, *, address: str | None = None, workers: int | None = None,
               temp_dir: str | None = None) -> None:
    """Label ``pending`` shards of ``job`` on Ray; ``finished(shard, table, info)`` for each, in the driver.

    Raises
    ------
    LabelError
        A shard whose task failed (its error, naming the shard), a worker that died more than
        ``MAX_RETRIES`` times on one shard, or a Ray that cannot be started or joined.
    """
    ray = _import_ray()
    if workers is not None and workers < 1:
        raise LabelError(f"workers must be at least 1, not {workers}")
    started = False
    if not ray.is_initialized():
        settings = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
        # Ray puts the driver's current folder on its workers' sys.path: run from this repository's
        # root, the workers would import the source tree (no built kernels: numba compiles for
        # minutes) instead of the package the driver runs. The folder holding that package, then.
        here = os.getcwd()
        try:
            os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(my_collision_pkg.__file__))))
            if address:
                ray.init(address=address, **settings)
            else:
                # a Ray of this machine only: every process on the loopback address
                ray.init(num_cpus=workers, _temp_dir=temp_dir, _node_ip_address=LOCAL_NODE_IP, **settings)
        except Exception as exc:      # Ray raises ConnectionError, RuntimeError, ValueError, ...
            where = f"the Ray cluster at {address}" if address else "a local Ray"
            raise LabelError(f"cannot start or join {where}: {' '.join(str(exc).split())}") from exc
        finally:
            os.chdir(here)
        started = True
    try:
        if not pending:
            return
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        # where Ray itself caps the shards running at once (a local Ray of ``workers`` CPUs, no cap
        # asked, or a cap of every CPU) keep the next shard queued behind each one; below that, on a
        # cluster, ``workers`` shards at most are submitted at once, so at most that many run
        capped_by_ray = (started and not address) or not workers or workers >= cpus
        in_flight = IN_FLIGHT_PER_SLOT * cpus if capped_by_ray else workers
        task = ray.remote(label_shard).options(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False,
                                                name="label_shard")
        options = ray.put(job.options)
        queue = list(reversed(pending))
        running: dict = {}
        try:
            _drain(ray, task, options, job, queue, running, in_flight, finished)
        except BaseException:
            for ref in running:           # a joined cluster would run them on for nothing
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:
            ray.shutdown()


def _drain(ray, task, options, job, queue: list, running: dict, in_flight: int, finished: Callable) -> None:
    """Submit the queued shards (at most ``in_flight`` at once) and hand each result on."""
    while queue or running:
        while queue and len(running) < in_flight:
            shard = queue.pop()
            running[task.remote(options, shard, job.rows(shard))] = shard
        ready, _ = ray.wait(list(running), num_returns=1)
        for ref in ready:
            shard = running.pop(ref)
            try:
                finished(*ray.get(ref))
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                text = " ".join(str(cause if cause is not None else exc).split())
                raise LabelError(f"shard {shard.name}: {text}") from exc
            except ray.exceptions.RayError as exc:
                raise LabelError(f"shard {shard.name}: its worker failed {MAX_RETRIES + 1} times: "
                                 f"{' '.join(str(exc).split())[:300]}") from exc
