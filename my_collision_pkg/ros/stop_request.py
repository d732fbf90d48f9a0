"""A stop asked by SIGINT or SIGTERM, noted from the first line of a node's process, and acted on in time.

The entry scripts install this before importing anything heavy, so that a Ctrl-C
during start-up is never lost (an interrupt raised inside a library callback can
be swallowed) nor acted on half-way (rclpy's own handlers shut the context down
under a node still being built). Standard library only.

Two phases:

- **starting** (from :func:`install` until :func:`running`): imports, loading the model,
  compiling kernels. A stop ends the process at once, exit code 0 (:func:`exit_now`):
  nothing is served yet, so nothing is lost, and no orderly shutdown could wait for
  a compiler holding the main thread. The node is built in a worker thread
  (``ros.runtime.run_node``) so that the main thread is free to take the signal.
- **running**: a stop sets :data:`STOP_ASKED` and calls the callbacks given to
  :func:`on_stop` (the node's stop event: long requests end early); the spin loop of
  ``ros.runtime.run_node`` then stops in order. Whatever happens, the process ends
  :data:`STOP_DEADLINE_S` after the stop (a watchdog thread), exit code 0. A second
  signal ends it at once.
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

STOP_ASKED = threading.Event()
# From the stop (running phase) to the end of the process at the latest, seconds.
STOP_DEADLINE_S = 1.9

_STARTING, _RUNNING = "starting", "running"
_phase = _STARTING
_callbacks: list[Callable[[], None]] = []
_lock = threading.Lock()
_deadline: threading.Timer | None = None


def install() -> None:
    """Make SIGINT and SIGTERM stop the process as described above (main thread only; idempotent)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)


def running() -> None:
    """Enter the running phase: from now on a stop is orderly (bounded by STOP_DEADLINE_S)."""
    global _phase
    _phase = _RUNNING


def is_running() -> bool:
    return _phase == _RUNNING


def on_stop(callback: Callable[[], None]) -> None:
    """Call ``callback()`` (in the main thread, from the signal handler) when a stop is asked while running.

    It must be quick and must not raise (an exception is ignored); setting a
    ``threading.Event`` is the intended use. Called at once if the stop was already asked.
    """
    with _lock:
        _callbacks.append(callback)
    if STOP_ASKED.is_set():
        _call(callback)


def exit_now(code: int = 0) -> None:
    """End the process now: flush stdout and stderr, then ``os._exit(code)`` (no clean-up, no thread joined)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


def finish(code: int) -> None:
    """End the process with ``code`` once the node is down: the exit handlers run, then
    :func:`exit_now`, skipping the interpreter's module teardown (about a second with numba
    and LLVM loaded) and the join of worker threads left idle."""
    try:
        atexit._run_exitfuncs()
    finally:
        exit_now(code)


def request_stop() -> None:
    """What a signal does (also callable directly, e.g. from a test): see the module docstring."""
    first = not STOP_ASKED.is_set()
    STOP_ASKED.set()
    if _phase == _STARTING or not first:
        exit_now(0)
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        _call(callback)
    _arm_deadline()


def process_age_s() -> float | None:
    """Seconds since this process started (from /proc), or None where that cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime_s = float(f.read().split()[0])
        return max(0.0, uptime_s - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


# The clock of process_age_s where /proc is missing: the first import of this module.
_IMPORTED_AT = time.monotonic()


def seconds_since_start() -> float:
    """Seconds since the process started (since this module was first imported where /proc is missing)."""
    age = process_age_s()
    return age if age is not None else time.monotonic() - _IMPORTED_AT


def _on_signal(signum, frame) -> None:  # noqa: ARG001 - the signal handler's signature
    request_stop()


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # noqa: BLE001 - a stop callback must not stop the stop
        pass


def _arm_deadline() -> None:
    global _deadline
    with _lock:
        if _deadline is not None:
            return
        _deadline = threading.Timer(STOP_DEADLINE_S, exit_now, args=(0,))
        _deadline.daemon = True
        _deadline.start()
