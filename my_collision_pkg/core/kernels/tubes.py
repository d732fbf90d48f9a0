"""Compiled lookup of a joint-space edge among the free motions kept by ``core.checks.free_tubes`` (numba),
the same edge cut into pieces each beside one of them (:func:`tube_pieces_cover`), a kept motion written into
their ring (:func:`tube_keep`), the edge's complete ends with their checks
(:func:`edge_ends`, the bool check's first step) and its screen's samples (:func:`screen_samples`).

:func:`tube_margin` returns, over kept motions k (a ring of ``count`` rows), the largest of
``bound[k] - levers @ max(|a - E_k(ta)|, |b - E_k(tb)|)``, the smallest (distance -
padding) its module's argument guarantees on the edge a -> b, with ``E_k(t) = start[k] + t
step[k]`` and ta, tb the clipped projections of a and b on E_k. It stops at the first value
of at least ``enough``. Metres, radians.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def tube_margin(start, step, length2, bound, levers, count, q0, q1, enough):
    """(best value, its row) as in the module docstring; (-inf, -1) when ``count`` is 0."""
    n_joints = q0.shape[0]
    best = -np.inf
    where = -1
    for k in range(count):
        da = 0.0
        db = 0.0
        for j in range(n_joints):
            da += (q0[j] - start[k, j]) * step[k, j]
            db += (q1[j] - start[k, j]) * step[k, j]
        ta = min(max(da / length2[k], 0.0), 1.0)
        tb = min(max(db / length2[k], 0.0), 1.0)
        reach = 0.0
        for j in range(n_joints):
            ea = abs(q0[j] - start[k, j] - ta * step[k, j])
            eb = abs(q1[j] - start[k, j] - tb * step[k, j])
            reach += levers[j] * (ea if ea > eb else eb)
        value = bound[k] - reach
        if value > best:
            best = value
            where = k
            if best >= enough:
                break
    return best, where


@njit(cache=True)
def tube_pieces_cover(start, step, length2, bound, levers, count, q0, q1, enough, gate, max_depth):
    """Whether the edge q0 -> q1 (A,) is covered: :func:`tube_margin` of the whole edge is at least
    ``enough``, or, when it is at least ``gate`` (metres, below ``enough``: the edge runs near the
    kept motions), the edge cut into 2, 4, .. ``2 ** max_depth`` equal pieces has every piece's
    :func:`tube_margin` at least ``enough`` (each piece beside a kept motion of its own: every
    configuration on the edge lies on a piece). Returns the number of pieces that covered it (1:
    the whole edge), or 0. The pieces' ends are ``q0 + (i / n) (q1 - q0)``, the first ``q0`` and
    the last ``q1`` exactly, each shared by the two pieces that meet there."""
    best, _ = tube_margin(start, step, length2, bound, levers, count, q0, q1, enough)
    if best >= enough:
        return 1
    if not best >= gate:
        return 0
    n_joints = q0.shape[0]
    a = np.empty(n_joints)
    b = np.empty(n_joints)
    for depth in range(1, max_depth + 1):
        n = 1 << depth
        covered = True
        for i in range(n):
            for j in range(n_joints):
                b[j] = q1[j] if i == n - 1 else q0[j] + ((i + 1) / n) * (q1[j] - q0[j])
                a[j] = q0[j] if i == 0 else q0[j] + (i / n) * (q1[j] - q0[j])
            value, _ = tube_margin(start, step, length2, bound, levers, count, a, b, enough)
            if not value >= enough:
                covered = False
                break
        if covered:
            return n
    return 0


# edge_ends' codes
EDGE_OK, EDGE_NOT_FINITE, EDGE_OUT_OF_LIMITS, EDGE_TOO_LONG = 0, 1, 2, 3


@njit(cache=True)
def edge_ends(values, indices, current, check_limits, lower, upper, max_delta, out):
    """The complete start and goal (2, A) of an edge into ``out``: ``current`` (A,) with the
    joint values ``values`` (2, K) at ``indices`` (K,). Returns ``EDGE_NOT_FINITE`` when a
    value is NaN or infinite (``out`` unfilled), else ``EDGE_OUT_OF_LIMITS`` when
    ``check_limits`` and an end leaves [lower, upper], else ``EDGE_TOO_LONG`` when a joint
    moves by more than ``max_delta``, else ``EDGE_OK``."""
    for e in range(2):
        for k in range(values.shape[1]):
            if not np.isfinite(values[e, k]):
                return EDGE_NOT_FINITE
    for e in range(2):
        for a in range(current.shape[0]):
            out[e, a] = current[a]
        for k in range(values.shape[1]):
            out[e, indices[k]] = values[e, k]
    if check_limits:
        for e in range(2):
            for a in range(current.shape[0]):
                if out[e, a] < lower[a] or out[e, a] > upper[a]:
                    return EDGE_OUT_OF_LIMITS
    for a in range(current.shape[0]):
        if not abs(out[1, a] - out[0, a]) <= max_delta:
            return EDGE_TOO_LONG
    return EDGE_OK


@njit(cache=True)
def tube_keep(start, step, length2, bound, k, q0, q1, bound_m):
    """Row k of the tubes' ring set to the free motion q0 -> q1 (A,) with clearance bound ``bound_m``:
    its bound is -inf while the row is written (a lookup in between answers nothing from it),
    ``step`` q1 - q0, ``length2`` its squared length (1 where it is zero)."""
    bound[k] = -np.inf
    length = 0.0
    for j in range(q0.shape[0]):
        start[k, j] = q0[j]
        d = q1[j] - q0[j]
        step[k, j] = d
        length += d * d
    length2[k] = length if length > 0.0 else 1.0
    bound[k] = bound_m


@njit(cache=True)
def screen_samples(q0, q1, mimic_matrix, screen_step, min_samples, max_samples, orders):
    """The bool check's screen of the motion q0 -> q1 (A,): (n, rows) with n the samples at most
    ``screen_step`` apart in every movable joint (``mimic_matrix`` (M, A) @ (q1 - q0)), between 1
    and ``max_samples``, and, when n > ``min_samples``, ``rows`` (n, A) the configurations at times
    ``orders[n, i] / n`` in that order (``orders`` (max_samples + 1, max_samples): each row n's
    first n entries are ``motion.screen_order(n)``), else ``rows`` (0, A). The same values as
    ``q0 + (order / n) * (q1 - q0)`` row by row."""
    n_act = q0.shape[0]
    largest = 0.0
    for i in range(mimic_matrix.shape[0]):
        s = 0.0
        for a in range(n_act):
            s += mimic_matrix[i, a] * (q1[a] - q0[a])
        s = abs(s)
        if s > largest:
            largest = s
    n = int(np.ceil(largest / screen_step - 1e-12))
    n = min(max_samples, max(1, n))
    if n <= min_samples:
        return n, np.empty((0, n_act))
    rows = np.empty((n, n_act))
    for i in range(n):
        f = orders[n, i] / n
        for a in range(n_act):
            rows[i, a] = q0[a] + f * (q1[a] - q0[a])
    return n, rows
