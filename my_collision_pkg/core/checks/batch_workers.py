"""Batches on every core: forked worker processes that check shares of one batch.

python-fcl and coal hold the GIL in their calls, so threads cannot run the narrow phase
side by side. A :class:`BatchPool` is ``workers - 1`` processes forked from this one; the
calling process checks a share itself. Each worker holds the :class:`CollisionWorld`
snapshot it was forked with (shared copy-on-write: meshes, BVHs and compiled kernels are
not rebuilt), so a batch only ships configurations (float arrays over a pipe) and gets back,
per configuration, the index of the first colliding pair or -1: exactly what the one-process
path computes (:func:`pair_tests.first_collision`), so the verdicts are identical.

How a batch runs (:meth:`BatchPool.run`): the batch is cut into chunks of about
``TARGET_CHUNK_S`` of work, smaller towards the end (guided scheduling, on the time left at
the speeds measured in this batch: the caller times its own chunks, each worker reports the
seconds its chunk took); before each chunk of its own the calling process sends every
worker enough to stay busy until it collects again (``BACKLOG_FACTOR``), so a worker never
waits for the caller, and a slower process (another load, a slower CPU) gets less.
Once nothing is left to hand out, the caller takes back the last chunk still queued in a
worker that holds more work than the caller would take for that chunk, where the worker has
not begun it (:class:`_Claims`: memory both share, under a lock, so a chunk is done once; the
worker answers it "skipped"), and does it itself rather than wait.
For the batch, the calling thread is kept on its CPU and each worker on another one
(``PIN_CPUS``; the thread's mask is restored afterwards): left alone, the scheduler often
puts two of them on one CPU while another process keeps the other busy. Between its
chunks the calling process looks at the stop event; a stopped request waits
for the chunks already sent (at most ``PREFETCH`` per worker) and raises
:class:`errors.RequestStopped`. A worker that fails answers with its error, which is raised
here as :class:`BatchWorkerError` naming the worker; one that dies or sends nothing for
``reply_timeout_s`` (at least ``REPLY_TIMEOUT_FLOOR_S``, more when the caller's own chunks
are slow) ends the pool and raises it too, never a hang. The next batch forks a new pool.

Which snapshot: a pool serves the world it was forked with (held by weak reference: the
pool does not keep an old snapshot alive in this process); a batch on another snapshot (an
object added, an allowed collision changed, a request's own ``world``) closes the pool and
forks a new one if the batch has at least ``MIN_FORK_CONFIGURATIONS`` (forking costs about
15-25 ms for the Panda; docs/performance.md), else it runs in the calling process.

Fork, not forkserver or spawn: a clean worker would import the package (about 2 s) and
rebuild or unpickle the snapshot's meshes and fcl BVHs on every scene change (0.2-0.8 s
for the Panda) where a fork shares them. The price is what fork copies of a process with threads
(rclpy's executor and DDS threads, numba's thread pool): only the forking thread, with the
locks other threads held. A worker therefore runs only core code on its world: it never
touches rclpy, logging or stdout, renews the snapshot's cache lock, calls no parallel
(numba ``prange``) kernel, ignores SIGINT (a Ctrl-C is the parent's to handle), takes its
work from its pipe and ends with ``os._exit`` (no atexit handlers, no finalisers of
objects it inherited) when the pipe closes, so it also ends when the parent dies, however
the parent ends. The reply timeout bounds what a lock left held at fork time could cost.
"""
from __future__ import annotations

import atexit
import ctypes
import gc
import os
import signal
import struct
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Callable
from multiprocessing import Lock, Pipe
from multiprocessing.sharedctypes import RawArray
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from queue import SimpleQueue

import numpy as np

from my_collision_pkg.core.checks.batch_jobs import CLEARANCE_ROWS, FIRST_COLLISION
from my_collision_pkg.core.errors import CollisionPkgError, RequestStopped

# Batches of fewer configurations stay in the calling process: below it a second core gives
# back less than the round trips cost (a pool already holding the snapshot), or than forking
# one costs (about 15 ms for the Panda: a batch on a new snapshot). docs/performance.md.
MIN_PARALLEL_CONFIGURATIONS = 1000
MIN_FORK_CONFIGURATIONS = 5000
# Most worker processes of one pool (more cores than this are not used).
MAX_BATCH_WORKERS = 64
# A chunk is sized for about this much work (fewer round trips), and at most 1 /
# GUIDED_SHARES of the time the processes need for what is left at their measured speeds
# (guided scheduling: the last chunks are small, so the processes finish together); between
# MIN_CHUNK and MAX_CHUNK configurations. The first chunks (no speed measured) are FIRST_CHUNK, or a GUIDED_SHARES-th
# of an even share of a smaller batch (200 clearance configurations: about 34, not the whole batch to one worker).
TARGET_CHUNK_S = 0.012
GUIDED_SHARES = 3
MIN_CHUNK = 16
MAX_CHUNK = 4096
FIRST_CHUNK = 256
# Chunks queued per worker before any speed is measured (neither the caller's nor its own).
PREFETCH = 2
# A chunk of the caller's is a stretch in which it feeds nobody, so before each one every
# worker is sent more until what it holds unanswered takes it at least BACKLOG_FACTOR x that
# chunk's time + BACKLOG_EXTRA_S at its own measured speed (the CPUs of one machine need not
# be equally fast, nor keep their speed: docs/performance.md), in at most MAX_QUEUED_CHUNKS
# chunks. Until every worker's speed is known, chunks are cut for
# at most FIRST_SLICE_S of work.
BACKLOG_FACTOR = 1.2
BACKLOG_EXTRA_S = 0.001
MAX_QUEUED_CHUNKS = 4
FIRST_SLICE_S = 0.004
# A worker that sends nothing for this long (or REPLY_TIMEOUT_FACTOR times the caller's
# slowest chunk, if longer) is taken for hung: the pool is killed and the batch fails.
REPLY_TIMEOUT_FLOOR_S = 20.0
REPLY_TIMEOUT_FACTOR = 100.0
# During a batch, keep the calling thread on its CPU and each worker on another one
# (when there are enough CPUs in the thread's mask; the mask is restored after the batch).
PIN_CPUS = True
# How often a caller waiting for its workers looks at the stop event, seconds.
STOP_POLL_S = 0.05
# On close, how long workers may take to leave before they are killed, seconds.
CLOSE_WAIT_S = 1.0
# The jobs a worker does on a chunk of configurations (see _work).
# (FIRST_COLLISION, CLEARANCE_ROWS: defined in batch_jobs, a leaf module, and kept importable from here)
# How long the error of a worker that ended waits to name its exit status, seconds.
LOST_STATUS_WAIT_S = 0.2
# Chunks a worker's claims remember (by sequence number modulo this; more than MAX_QUEUED_CHUNKS), and how long
# either side waits for the claims' lock before it goes on without it, seconds (the lock is held for a few
# instructions: only a process that died holding it keeps it).
CLAIM_SLOTS = 64
CLAIM_WAIT_S = 1.0


class BatchWorkerError(CollisionPkgError):
    """A batch worker process failed, died or stopped answering; the message names the worker
    (its process id) and what happened. The batch has no answer; the next one forks a new pool."""


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):          # not Linux
        return max(1, os.cpu_count() or 1)


def resolve_workers(value) -> int:
    """The process count ``value`` asks for: None or 0 means every available core.

    Raises
    ------
    ValueError
        Naming ``batch_workers``, for a non-integer or a value outside [0, MAX_BATCH_WORKERS].
    """
    if value is None:
        value = 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"batch_workers must be a whole number (0: every core), got {value!r}")
    value = int(value)
    if not 0 <= value <= MAX_BATCH_WORKERS:
        raise ValueError(f"batch_workers = {value} is outside [0, {MAX_BATCH_WORKERS}] (0: every core)")
    return min(available_cores(), MAX_BATCH_WORKERS) if value == 0 else value


# ----- the worker process ----------------------------------------------------------------
def _work(world, scratch, job: tuple, q: np.ndarray):
    """One chunk's answer: ``job`` is (FIRST_COLLISION, selection key) or (CLEARANCE_ROWS,
    selection key, influence, k_max, compute_jacobians, columns)."""
    from my_collision_pkg.core.checks import clearance, pair_tests
    kind, key = job[0], job[1]
    selection = world.pair_selection(*key)
    if kind == FIRST_COLLISION:
        return pair_tests.first_collision(scratch, world, q, selection)
    if kind == CLEARANCE_ROWS:
        return clearance.chunk_rows(world, selection, q, *job[2:])
    raise ValueError(f"unknown batch job '{kind}'")


def _framed(reply) -> bytes:
    """``reply`` pickled and framed as ``Connection.send`` frames it (a 4-byte big-endian length, or -1 and an 8-byte
    one beyond 2 GiB), so that the caller's ``Connection.recv`` reads it."""
    payload = ForkingPickler.dumps(reply)
    n = len(payload)
    header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!i", -1) + struct.pack("!Q", n)
    return header + bytes(payload)


def _send_replies(fd: int, outbox: SimpleQueue, idle: threading.Event, begun: threading.Event) -> None:
    """A worker's second thread: its framed answers written to the pipe in order, each in one blocking write.

    An answer larger than the pipe's buffer (a clearance chunk's rows: hundreds of kB) is written only as the caller
    reads it, and the caller reads between chunks of its own; this thread waits for that while the worker goes on
    with its next chunk. The write holds no GIL, and it is one system call (not a header and a body, as
    ``Connection.send_bytes`` makes it): the worker's compiled kernels keep the GIL for milliseconds, so a second
    call would wait for them. ``idle``: set while it waits for an answer; ``begun``: set as it takes one (for the
    worker, which then goes on). A pipe that fails ends the worker, as the caller has gone."""
    while True:
        idle.set()
        data = outbox.get()
        idle.clear()
        begun.set()
        if data is None:
            return
        try:
            view = memoryview(data)
            while view.nbytes:
                view = view[os.write(fd, view):]
        except OSError:
            os._exit(0)


def _serve(conn: Connection, world, claims: "_Claims | None") -> None:
    """A worker's loop: (batch, seq, job, q) in, ("ok", batch, seq, answer, seconds of work) out (through
    :func:`_send_replies`' thread); ("skipped", batch, seq, None, 0.0) for a chunk the caller took back before it
    began (``claims``)."""
    from my_collision_pkg.core.checks.pair_tests import PairTestScratch
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.freeze()            # inherited objects stay out of this process's collections (fewer copied pages)
    if hasattr(world, "_derived_lock"):
        world._derived_lock = threading.Lock()      # another thread of the parent may have held it at fork
    scratch = PairTestScratch()
    outbox: SimpleQueue = SimpleQueue()
    idle, begun = threading.Event(), threading.Event()
    threading.Thread(target=_send_replies, args=(conn.fileno(), outbox, idle, begun), name="batch replies",
                     daemon=True).start()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return                                   # the parent closed the pipe or ended
        if message is None:
            return
        batch, seq, job, q = message
        if claims is not None and not claims.begin(_claim_tag(batch, seq)):
            outbox.put(_framed(("skipped", batch, seq, None, 0.0)))      # the caller took it back
            continue
        start = time.perf_counter()
        try:
            reply = ("ok", batch, seq, _work(world, scratch, job, q), time.perf_counter() - start)
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
            where = traceback.extract_tb(exc.__traceback__)
            place = f" at {os.path.basename(where[-1].filename)}:{where[-1].lineno}" if where else ""
            reply = ("error", batch, seq, f"{type(exc).__name__}: {exc}{place}", 0.0)
        waiting = idle.is_set()
        outbox.put(_framed(reply))
        if waiting:                   # let the thread take it (and start its write) before a chunk holds the GIL
            begun.wait()
        begun.clear()


class _Worker:
    __slots__ = ("pid", "conn", "queue", "queued", "rate", "heard", "cpu", "claims", "taken_back")

    def __init__(self, pid: int, conn: Connection, claims: "_Claims | None") -> None:
        self.pid = pid
        self.conn = conn
        self.claims = claims
        self.taken_back: set[int] = set()   # seqs of chunks taken back whose "skipped" reply has not come yet
        self.queue: deque = deque()     # (token, seq, size, q) of the chunks sent and not answered, in order
        self.queued = 0                 # configurations sent and not answered
        self.rate = 0.0                 # configurations per second of its work in this batch (0: not yet known)
        self.heard = time.monotonic()   # last answer, or when the queue was last empty
        self.cpu = -1                   # the CPU it is pinned to (-1: any)

    def owes(self) -> bool:
        """Whether a reply is still to come: a chunk queued, or one taken back whose "skipped" has not come."""
        return bool(self.queue or self.taken_back)

    def backlog_s(self, rate: float) -> float:
        """Seconds of work it holds at ``rate`` configurations per second: what is left of the
        chunk it works on (begun when it last answered, or was sent work while idle) and the
        chunks queued behind it."""
        if not self.queue:
            return 0.0
        first = self.queue[0][2]
        left = max(0.0, first / rate - (time.monotonic() - self.heard))
        return left + (self.queued - first) / rate


def _libc_sched_getcpu():
    """glibc's ``sched_getcpu`` (the CPU the calling thread runs on), or None where it cannot be had."""
    try:
        function = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    function.argtypes = []
    return function


_SCHED_GETCPU = _libc_sched_getcpu()


def _current_cpu() -> int:
    """The CPU the calling thread runs on: ``sched_getcpu`` (well under a microsecond); else the field of
    /proc/self/task/<tid>/stat that holds it (about 0.1 ms in a process the size of a validator's: the kernel
    gathers the whole line)."""
    if _SCHED_GETCPU is not None:
        cpu = _SCHED_GETCPU()
        if cpu >= 0:
            return cpu
    with open(f"/proc/self/task/{threading.get_native_id()}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[36])


_POOLS: "weakref.WeakSet[BatchPool]" = weakref.WeakSet()


def _here(local, deliver, state: dict, token, q: np.ndarray) -> None:
    """A chunk done in the calling process and delivered; its time sets the caller's speed (``state["rate"]``,
    configurations per second) and its slowest chunk."""
    start = time.perf_counter()
    deliver(token, local(q))
    elapsed = time.perf_counter() - start
    state["slowest"] = max(state["slowest"], elapsed)
    state["rate"] = len(q) / max(elapsed, 1e-9)


def _claim_tag(batch: int, seq: int) -> int:
    """A chunk's number in its pool, unique across batches (seq counts from 1 in each batch)."""
    return (batch << 32) + seq


class _Claims:
    """Which of a worker's queued chunks it began and which the caller took back, in memory the two processes share
    (made before the fork), under one lock: a chunk is done by exactly one of them. At the end of a batch the caller
    takes back a chunk still queued in a worker that holds more work than the caller would take for it (the worker
    was sent work to outlast the caller's own chunks; at the end that is time the caller would wait)."""

    def __init__(self) -> None:
        self.lock = Lock()
        self.began = RawArray(ctypes.c_int64, CLAIM_SLOTS)
        self.taken = RawArray(ctypes.c_int64, CLAIM_SLOTS)

    def begin(self, tag: int) -> bool:
        """The worker's: whether it may begin chunk ``tag`` (not taken back); marks it begun."""
        return self._claim(tag, self.began, self.taken, True)

    def take_back(self, tag: int) -> bool:
        """The caller's: whether it takes chunk ``tag`` back (the worker has not begun it); marks it taken."""
        return self._claim(tag, self.taken, self.began, False)

    def _claim(self, tag: int, mine, theirs, without_lock: bool) -> bool:
        """Chunk ``tag`` marked in ``mine`` unless ``theirs`` holds it, under the lock; ``without_lock``: the answer
        where the lock cannot be had within CLAIM_WAIT_S (the other process died holding it)."""
        slot = tag % CLAIM_SLOTS
        if not self.lock.acquire(timeout=CLAIM_WAIT_S):
            return without_lock
        try:
            if theirs[slot] == tag:
                return False
            mine[slot] = tag
            return True
        finally:
            self.lock.release()


def _fork_worker(world, inherited: list[Connection]) -> _Worker:
    parent_end, child_end = Pipe(duplex=True)
    try:
        claims = _Claims()
    except OSError:              # (no shared memory or semaphores here: the pool works without taking chunks back)
        claims = None
    pid = os.fork()
    if pid == 0:                                         # the worker
        code = 0
        try:
            parent_end.close()
            for conn in inherited:                       # other workers' pipes: theirs to close
                conn.close()
            _serve(child_end, world, claims)
        except BaseException:  # noqa: BLE001 - a worker never returns into the caller's code
            code = 1
        finally:
            os._exit(code)
    child_end.close()
    return _Worker(pid, parent_end, claims)


class BatchPool:
    """``n_workers`` processes forked now, each holding ``world`` (see the module docstring).

    Parameters
    ----------
    world : CollisionWorld
        The snapshot the workers check against.
    n_workers : int
        Worker processes (the caller checks a share too: ``n_workers + 1`` cores in all).
    """

    def __init__(self, world, n_workers: int) -> None:
        if n_workers < 1:
            raise ValueError(f"a batch pool needs at least one worker, got {n_workers}")
        self._world = weakref.ref(world)
        self._batch = 0
        self._workers: list[_Worker] = []
        try:
            for _ in range(n_workers):
                inherited = [w.conn for w in self._workers] + [w.conn for p in list(_POOLS) for w in p._workers]
                self._workers.append(_fork_worker(world, inherited))
        except BaseException:
            self.close()
            raise
        _POOLS.add(self)

    @property
    def pids(self) -> tuple[int, ...]:
        """The workers' process ids (empty once closed)."""
        return tuple(w.pid for w in self._workers)

    def serves(self, world) -> bool:
        """Whether this pool's workers hold ``world`` (the same snapshot object) and are all there."""
        return bool(self._workers) and self._world() is world

    # ----- one batch --------------------------------------------------------------------
    def run(self, next_task: Callable[[int], tuple | None], job: tuple,
            local: Callable[[np.ndarray], object], deliver: Callable[[object, object], None],
            stop=None, total: int | None = None, wanted: Callable[[], bool] | None = None) -> None:
        """Check every task, in the workers and here.

        Parameters
        ----------
        next_task : callable(size) -> (token, q) or None
            The next at most ``size`` configurations: ``q`` (m, A) complete configurations
            within the limits and ``token`` (what :func:`deliver` gets back); None when done.
        job : tuple
            What the workers compute on each chunk: ``(FIRST_COLLISION, selection key)``, the
            first colliding pair per configuration over ``world.pair_selection(*key)`` (key:
            group name and the padding switches), or ``(CLEARANCE_ROWS, key, influence,
            k_max, compute_jacobians, columns)``, :func:`clearance.chunk_rows`.
        local : callable(q)
            The same answer, in this process.
        deliver : callable(token, first)
            Called here once per task with its answer (in any order).
        stop : WorkMeter or None
            Its stop event is looked at between chunks.
        total : int or None
            About how many configurations the tasks hold (for the guided chunk sizes).
        wanted : callable() -> bool, or None
            Whether the answers are still wanted once ``next_task`` has given None (False: the batch ended early,
            e.g. past a bound; chunks queued in a worker are then not taken back to be done here). None: always.

        Raises
        ------
        RequestStopped
            The stop event was set (the chunks already sent are waited for first).
        BatchWorkerError
            A worker failed, died or did not answer; the pool is closed.
        """
        restore = self._spread_over_cpus()
        try:
            self._run(next_task, job, local, deliver, stop, total, wanted)
        finally:
            if restore is not None:
                try:
                    os.sched_setaffinity(0, restore)
                except OSError:
                    pass

    def _spread_over_cpus(self) -> set[int] | None:
        """With PIN_CPUS and a CPU for each process: the calling thread kept on the CPU it is
        on and each worker on another one, for this batch (the scheduler, left alone, often puts
        two of them on one CPU when another process keeps the other busy: measured 1.4-1.5x
        the one-process time then, docs/performance.md). The thread's own CPU mask to restore
        afterwards, or None when nothing was changed."""
        if not PIN_CPUS:
            return None
        try:
            allowed = sorted(os.sched_getaffinity(0))
            if len(allowed) < len(self._workers) + 1:
                return None
            here = _current_cpu()
            if here not in allowed:
                return None
            others = [cpu for cpu in allowed if cpu != here]
            for worker, cpu in zip(self._workers, others):
                if worker.cpu != cpu:
                    os.sched_setaffinity(worker.pid, {cpu})
                    worker.cpu = cpu
            os.sched_setaffinity(0, {here})
            return set(allowed)
        except (OSError, ValueError, IndexError, AttributeError):
            return None

    def _run(self, next_task, job: tuple, local, deliver, stop, total: int | None, wanted) -> None:
        self._batch += 1
        batch = self._batch
        workers = self._workers
        for worker in workers:
            worker.rate = 0.0
        # rates in configurations per second of work (0: not measured yet in this batch)
        state = {"seq": 0, "done": False, "slowest": 0.0, "taken": 0, "rate": 0.0, "wanted": wanted}

        def slice_s() -> float:
            """The seconds of work a chunk is cut for now (0 before the caller's first chunk)."""
            own = state["rate"]
            if own <= 0.0:
                return 0.0
            if not total:
                return TARGET_CHUNK_S
            combined = own + sum(w.rate or own for w in workers)
            unanswered = total - state["taken"] + sum(w.queued for w in workers)
            share = min(TARGET_CHUNK_S, unanswered / combined / GUIDED_SHARES)
            if not all(w.rate for w in workers):        # a worker's speed is not known yet
                share = min(share, FIRST_SLICE_S)
            return share

        # the first chunks (no speed measured): FIRST_CHUNK, and at most a GUIDED_SHARES-th of an even share of the
        # batch, so that a small batch of costly configurations is not handed whole to the first worker
        first = FIRST_CHUNK if not total else \
            max(MIN_CHUNK, min(FIRST_CHUNK, -(-total // ((len(workers) + 1) * GUIDED_SHARES))))

        def chunk(rate: float) -> int:
            share = slice_s()
            if share <= 0.0 or rate <= 0.0:
                return first
            return int(min(MAX_CHUNK, max(MIN_CHUNK, rate * share)))

        def take(size: int):
            size = max(MIN_CHUNK, size)
            if total and total - state["taken"] - size < MIN_CHUNK:
                size = max(size, total - state["taken"])      # (no piece below MIN_CHUNK left for a round trip)
            task = next_task(size)
            if task is None:
                state["done"] = True
            else:
                state["taken"] += len(task[1])
            return task

        def send(worker: _Worker) -> bool:
            task = None if state["done"] else take(chunk(worker.rate or state["rate"]))
            if task is None:
                return False
            token, q = task
            state["seq"] += 1
            if not worker.queue:
                worker.heard = time.monotonic()
            worker.queue.append((token, state["seq"], len(q), q))
            worker.queued += len(q)
            try:
                worker.conn.send((batch, state["seq"], job, q))
            except (BrokenPipeError, OSError) as exc:
                raise self._lost(worker, f"could not be sent its work ({exc})") from exc
            return True

        def feed(worker: _Worker) -> None:
            """Send until the worker holds work for longer than the caller's next chunk takes
            (or PREFETCH chunks, before its speed is known), at most MAX_QUEUED_CHUNKS."""
            while len(worker.queue) < MAX_QUEUED_CHUNKS and not state["done"]:
                rate, share = worker.rate or state["rate"], slice_s()
                if rate > 0.0 and share > 0.0:
                    if worker.backlog_s(rate) >= BACKLOG_FACTOR * share + BACKLOG_EXTRA_S:
                        return
                elif len(worker.queue) >= PREFETCH:
                    return
                if not send(worker):
                    return

        try:
            for worker in workers:
                feed(worker)
            while not state["done"]:
                if stop is not None:
                    stop.check_stop()
                self._collect(batch, deliver, feed, 0.0, state["slowest"])
                for worker in workers:
                    feed(worker)
                if state["done"]:
                    break
                task = take(chunk(state["rate"]))
                if task is None:
                    break
                _here(local, deliver, state, *task)
            while any(w.owes() for w in workers):
                if stop is not None:
                    stop.check_stop()
                self._collect(batch, deliver, feed, 0.0, state["slowest"])
                if not self._take_back(batch, local, deliver, state):
                    self._collect(batch, deliver, feed, STOP_POLL_S, state["slowest"])
        except RequestStopped:
            self._drain(batch, state["slowest"])
            raise
        except BaseException:
            self.close()
            raise

    def _take_back(self, batch: int, local, deliver, state: dict) -> bool:
        """At the end of a batch (nothing left to hand out, and its answers still ``wanted``): the last chunk queued in
        the worker that holds the most work, done here instead, where that work is more than this process would take
        for the chunk at its own speed and the worker has not begun it (:class:`_Claims`); whether one was."""
        own = state["rate"]
        if own <= 0.0 or (state["wanted"] is not None and not state["wanted"]()):
            return False                   # (a batch ended early, its bound passed: nothing more is done)
        held = [(w.backlog_s(w.rate or own), w) for w in self._workers if w.queue and w.claims is not None]
        if not held:
            return False
        backlog_s, worker = max(held, key=lambda item: item[0])
        token, seq, size, q = worker.queue[-1]
        if backlog_s <= size / own or not worker.claims.take_back(_claim_tag(batch, seq)):
            return False
        worker.queue.pop()
        worker.queued -= size
        worker.taken_back.add(seq)
        _here(local, deliver, state, token, q)
        return True

    def _timeout_s(self, slowest_s: float) -> float:
        return max(REPLY_TIMEOUT_FLOOR_S, REPLY_TIMEOUT_FACTOR * slowest_s)

    def _collect(self, batch: int, deliver, feed, timeout_s: float, slowest_s: float) -> None:
        """Take every answer that is ready (waiting up to ``timeout_s`` for one), deliver it
        and ``feed`` that worker more; raise on a failed, dead or silent worker."""
        busy = {w.conn: w for w in self._workers if w.owes()}
        if not busy:
            return
        # a look without waiting is one poll per pipe (wait() builds a selector each call)
        ready = [c for c in busy if c.poll()] if timeout_s <= 0 else wait(list(busy), timeout_s)
        for conn in ready:
            worker = busy[conn]
            while worker.owes() and conn.poll():
                answer = self._receive(worker, batch)
                if answer is not None:
                    deliver(*answer)
                feed(worker)
        now = time.monotonic()
        limit = self._timeout_s(slowest_s)
        for worker in self._workers:
            if worker.owes() and now - worker.heard > limit:
                raise self._lost(worker, f"sent no answer for {now - worker.heard:.1f} s (timeout {limit:.1f} s)")

    def _receive(self, worker: _Worker, batch: int) -> tuple[object, object] | None:
        """The next answer of ``worker``: its chunk's token and answer; None for a chunk taken back."""
        try:
            kind, answer_batch, seq, payload, elapsed = worker.conn.recv()
        except (EOFError, OSError) as exc:
            raise self._lost(worker, "ended unexpectedly") from exc
        if kind == "skipped" and answer_batch == batch and seq in worker.taken_back:
            worker.taken_back.discard(seq)
            worker.heard = time.monotonic()
            return None
        if not worker.queue:
            raise self._lost(worker, f"answered chunk {answer_batch}.{seq}, none expected")
        token, expected, size, _ = worker.queue.popleft()
        worker.queued -= size
        if kind == "ok" and elapsed > 0.0:
            worker.rate = size / elapsed
        worker.heard = time.monotonic()
        if kind == "error":
            raise self._lost(worker, f"failed: {payload}")
        if answer_batch != batch or seq != expected:
            raise self._lost(worker, f"answered chunk {answer_batch}.{seq}, expected {batch}.{expected}")
        return token, payload

    def _drain(self, batch: int, slowest_s: float) -> None:
        """After a stop: wait for the chunks already sent and drop their answers (or close the pool)."""
        try:
            deadline = time.monotonic() + self._timeout_s(slowest_s)
            for worker in self._workers:
                while worker.owes():
                    if not worker.conn.poll(max(0.0, deadline - time.monotonic())):
                        raise self._lost(worker, "sent no answer after the stop")
                    self._receive(worker, batch)
        except BatchWorkerError:
            self.close()

    def _lost(self, worker: _Worker, what: str) -> BatchWorkerError:
        """The error for ``worker``; the pool is closed (its processes ended)."""
        status = ""
        deadline = time.monotonic() + LOST_STATUS_WAIT_S     # a worker that closed its pipe is ending
        while worker.pid > 0:
            try:
                pid, code = os.waitpid(worker.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                status = (f" (killed by signal {os.WTERMSIG(code)})" if os.WIFSIGNALED(code)
                          else f" (exit code {os.WEXITSTATUS(code)})")
                break
            if "ended" not in what or time.monotonic() > deadline:
                break
            time.sleep(0.005)
        message = f"batch worker process {worker.pid} {what}{status}"
        if status:
            worker.pid = -1                                   # reaped: close() leaves it alone
        self.close()
        return BatchWorkerError(message + "; the batch has no answer (set batch_workers = 1 to check in one process)")

    # ----- the end ----------------------------------------------------------------------
    def close(self, wait: bool = True) -> None:
        """End the workers: close their pipes (a worker leaves when it sees that), wait up to
        CLOSE_WAIT_S for them, then kill them. ``wait=False``: a daemon thread waits and reaps
        them, so that replacing a pool does not wait for the old one. Idempotent."""
        workers, self._workers = self._workers, []
        _POOLS.discard(self)
        for worker in workers:
            try:
                worker.conn.close()
            except OSError:
                pass
        pids = [w.pid for w in workers if w.pid > 0]
        if not pids:
            return
        if wait:
            _reap(pids)
        else:
            threading.Thread(target=_reap, args=(pids,), name="batch_workers_reaper", daemon=True).start()


def _reap(pids: list[int]) -> None:
    """Wait up to CLOSE_WAIT_S for the processes ``pids`` to end, then kill and reap the rest."""
    deadline = time.monotonic() + CLOSE_WAIT_S
    for pid in pids:
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            if time.monotonic() > deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
                break
            time.sleep(0.002)


def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()


atexit.register(_close_all)


class BatchWorkers:
    """A checker's batch workers: the process count and the pool, forked on first use.

    Parameters
    ----------
    workers : int or None
        Processes a large batch is split across, the caller included (None or 0: every
        available core; 1: the caller only, no pool).
    """

    def __init__(self, workers: int | None = None) -> None:
        self._lock = threading.Lock()
        self._pool: BatchPool | None = None
        self._workers = resolve_workers(workers)
        self.min_parallel = MIN_PARALLEL_CONFIGURATIONS      # thresholds (settable, e.g. by tests)
        self.min_fork = MIN_FORK_CONFIGURATIONS

    @property
    def workers(self) -> int:
        return self._workers

    @workers.setter
    def workers(self, value) -> None:
        value = resolve_workers(value)
        with self._lock:
            if value != self._workers:
                self._close_pool()
            self._workers = value

    @property
    def pool(self) -> BatchPool | None:
        """The pool now (None before the first large batch, after close or a failure)."""
        return self._pool

    def wants_pool(self, n_configurations: int) -> bool:
        """Whether a batch of ``n_configurations`` may be split across processes (see :meth:`acquire`)."""
        return self._workers > 1 and n_configurations >= min(self.min_parallel, self.min_fork)

    def acquire(self, world, n_configurations: int) -> BatchPool | None:
        """The pool for a batch of ``n_configurations`` on ``world``, with this object's lock
        held (release it with :meth:`release`); or None (nothing held), when the batch is
        better checked in the calling process: another batch is using the pool, or the
        batch is below ``min_parallel``, or the pool holds another snapshot (or none yet)
        and the batch is below ``min_fork``. A pool on another snapshot is replaced."""
        if self._workers < 2 or n_configurations < min(self.min_parallel, self.min_fork):
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            pool = self._pool
            if pool is not None and pool.serves(world):
                if n_configurations >= self.min_parallel:
                    return pool
            elif n_configurations >= self.min_fork:
                self._close_pool(wait=False)
                self._pool = BatchPool(world, self._workers - 1)
                return self._pool
        except BaseException:
            self._lock.release()
            raise
        self._lock.release()
        return None

    def release(self) -> None:
        self._lock.release()

    def _close_pool(self, wait: bool = True) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(wait=wait)

    def close(self) -> None:
        """End the pool's processes (a later large batch forks a new one)."""
        with self._lock:
            self._close_pool()
