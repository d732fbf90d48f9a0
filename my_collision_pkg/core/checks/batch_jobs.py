"""The names of the jobs a batch worker does on a chunk of configurations.

A leaf module: :mod:`batch_workers` (which runs the jobs) and the modules that send them
(:mod:`checker`, :mod:`clearance`) both import these names from here, so neither imports
the other for them.
"""
from __future__ import annotations

__all__ = ["CLEARANCE_ROWS", "FIRST_COLLISION"]

FIRST_COLLISION = "first_collision"      # check_batch: the first colliding pair per configuration
CLEARANCE_ROWS = "clearance_rows"        # clearance: clearance.chunk_rows
