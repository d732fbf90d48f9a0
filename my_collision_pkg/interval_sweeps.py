"""Moved to :mod:`my_collision_pkg.core.checks.interval_sweeps` (this old path warns once and forwards)."""
from my_collision_pkg._moved import forward

__getattr__ = forward(__name__, "my_collision_pkg.core.checks.interval_sweeps")
