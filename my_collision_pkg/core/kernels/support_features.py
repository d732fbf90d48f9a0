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


@njit(cache=True)
def support_gap(points, d, tolerance):
    """How far behind the support plane along ``d`` the nearest point of ``points`` (m, 3) outside the
    support feature lies: ``max h - max {h_i : h_i < max h - tolerance}`` with ``h = points @ d``
    (metres for a unit ``d``); +inf when every point is in the feature."""
    m = points.shape[0]
    top = -np.inf
    for i in range(m):
        h = points[i, 0] * d[0] + points[i, 1] * d[1] + points[i, 2] * d[2]
        if h > top:
            top = h
    below = -np.inf
    for i in range(m):
        h = points[i, 0] * d[0] + points[i, 1] * d[1] + points[i, 2] * d[2]
        if h < top - tolerance and h > below:
            below = h
    return top - below


@njit(cache=True)
def plane_basis(n0, n1, n2):
    """Unit vectors u, v (u0, u1, u2, v0, v1, v2) with (u, v, n) a right-handed orthonormal frame of
    the unit normal n: u = n x (1, 0, 0) normalised, or n x (0, 1, 0) where n is near x; v = n x u."""
    if abs(n0) < 0.9:                 # u = n x (1, 0, 0)
        u0, u1, u2 = 0.0, n2, -n1
    else:                             # u = n x (0, 1, 0)
        u0, u1, u2 = -n2, 0.0, n0
    length = np.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    u0, u1, u2 = u0 / length, u1 / length, u2 / length
    return u0, u1, u2, n1 * u2 - n2 * u1, n2 * u0 - n0 * u2, n0 * u1 - n1 * u0


@njit(cache=True)
def inside_margin(point, feature, count, normal):
    """How far ``point`` (3,), seen along the unit ``normal``, lies inside the convex feature ``feature[:count]``
    (a segment: along it, from its nearer end; a polygon of unordered points: from its nearest edge line),
    metres; negative outside."""
    u0, u1, u2, v0, v1, v2 = plane_basis(normal[0], normal[1], normal[2])
    xs = np.empty(count)
    ys = np.empty(count)
    for i in range(count):
        xs[i] = feature[i, 0] * u0 + feature[i, 1] * u1 + feature[i, 2] * u2
        ys[i] = feature[i, 0] * v0 + feature[i, 1] * v1 + feature[i, 2] * v2
    px = point[0] * u0 + point[1] * u1 + point[2] * u2
    py = point[0] * v0 + point[1] * v1 + point[2] * v2
    if count == 2:
        ex, ey = xs[1] - xs[0], ys[1] - ys[0]
        span = np.sqrt(ex * ex + ey * ey)
        if span <= 0.0:
            return -np.inf
        s = ((px - xs[0]) * ex + (py - ys[0]) * ey) / span
        return min(s, span - s)
    # a convex polygon: its edges are the point pairs with every other point on one side
    best = np.inf
    for i in range(count):
        for j in range(i + 1, count):
            ex, ey = xs[j] - xs[i], ys[j] - ys[i]
            span = np.sqrt(ex * ex + ey * ey)
            if span <= 0.0:
                continue
            nx, ny = -ey / span, ex / span
            lo, hi = 0.0, 0.0
            for k in range(count):
                side = (xs[k] - xs[i]) * nx + (ys[k] - ys[i]) * ny
                lo = min(lo, side)
                hi = max(hi, side)
            scale = 1e-9 * span
            if lo >= -scale:              # the others on the + side: inside is +
                best = min(best, (px - xs[i]) * nx + (py - ys[i]) * ny)
            elif hi <= scale:
                best = min(best, -((px - xs[i]) * nx + (py - ys[i]) * ny))
    return best
