"""Compiled support feature of a convex solid's candidate points along a direction (numba).

:func:`support_points` is the shape-frame part of ``core.checks.witness_features.support_feature``:
the points within a tolerance of the largest projection on ``d``, rounded to 12 decimals,
duplicates dropped, in lexicographic order; more than two of them that lie on a line (the
second singular value of the centred points at most the tolerance) are reduced to the line's
two ends. Metres.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _before(a, b):
    """Row a sorts strictly before row b (lexicographic, as Python's tuples)."""
    for j in range(3):
        if a[j] < b[j]:
            return True
        if a[j] > b[j]:
            return False
    return False


@njit(cache=True)
def support_points(points, d, tolerance, out):
    """Writes the support feature of ``points`` (m, 3) along ``d`` (3,) into ``out`` (m, 3); returns
    how many rows (1: a vertex, 2: a segment, more: a face). See the module docstring."""
    m = points.shape[0]
    h = np.empty(m)
    top = -np.inf
    for i in range(m):
        h[i] = points[i, 0] * d[0] + points[i, 1] * d[1] + points[i, 2] * d[2]
        if h[i] > top:
            top = h[i]
    count = 0
    for i in range(m):
        if h[i] >= top - tolerance:
            out[count] = points[i]
            count += 1
    if count == 1:
        return 1
    chosen = np.round(out[:count], 12)
    # insertion sort (stable: of rows equal as numbers, -0.0 or 0.0, the first listed stays first)
    for i in range(1, count):
        row = chosen[i].copy()
        k = i - 1
        while k >= 0 and _before(row, chosen[k]):
            chosen[k + 1] = chosen[k]
            k -= 1
        chosen[k + 1] = row
    kept = 0
    for i in range(count):
        if kept == 0 or not (chosen[i, 0] == out[kept - 1, 0] and chosen[i, 1] == out[kept - 1, 1]
                             and chosen[i, 2] == out[kept - 1, 2]):
            out[kept] = chosen[i]
            kept += 1
    if kept > 2:
        centred = out[:kept] - (out[:kept].sum(axis=0) / kept)
        _, s, vt = np.linalg.svd(centred, full_matrices=False)
        if s[1] <= tolerance:
            t = centred @ vt[0]
            lo, hi = np.argmin(t), np.argmax(t)
            a, b = out[lo].copy(), out[hi].copy()
            out[0] = a
            out[1] = b
            kept = 2
    return kept
