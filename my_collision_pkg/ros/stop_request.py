"""A stop asked by SIGINT or SIGTERM, noted from the first line of a node's process.

The entry scripts install this before importing anything heavy, so that a Ctrl-C
during start-up is never lost (an interrupt raised inside a library callback can
be swallowed) nor acted on half-way (rclpy's own handlers shut the context down
under a node still being built). The spin loop of ``ros.runtime.run_node``
looks at :data:`STOP_ASKED`. Standard library only.
"""
from __future__ import annotations

import signal
import threading

STOP_ASKED = threading.Event()


def install() -> None:
    """Make SIGINT and SIGTERM set STOP_ASKED (main thread only; idempotent)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: STOP_ASKED.set())
