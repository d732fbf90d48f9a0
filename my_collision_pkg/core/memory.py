"""Giving freed memory back to the system: :func:`release_free_memory`.

CPython and numpy free big arrays to the C allocator, but glibc's malloc keeps
freed pages of its arenas for reuse: after a big request or a big mesh is gone the
process can hold gigabytes it no longer uses. ``malloc_trim(0)`` returns them. Where
the C library has no ``malloc_trim`` (musl, macOS, Windows) this is a no-op.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading

_LOCK = threading.Lock()
_TRIM = None
_LOOKED_UP = False


def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    global _TRIM, _LOOKED_UP
    with _LOCK:
        if not _LOOKED_UP:
            _LOOKED_UP = True
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                trim = libc.malloc_trim
                trim.argtypes = [ctypes.c_size_t]
                trim.restype = ctypes.c_int
                _TRIM = trim
            except (OSError, AttributeError, TypeError):
                _TRIM = None
        return _TRIM


def release_free_memory(*, collect_garbage: bool = False) -> bool:
    """Give the allocator's free memory back to the system (glibc ``malloc_trim(0)``).

    Parameters
    ----------
    collect_garbage : bool
        First run Python's cycle collector, so that objects kept alive only by
        reference cycles (e.g. a mesh's caches) are freed too.

    Returns
    -------
    bool
        Whether memory was returned (False where ``malloc_trim`` is unavailable or
        found nothing to return).
    """
    if collect_garbage:
        gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    return bool(trim(0))
