"""Compiled support feature of a convex solid's candidate points along a direction (numba).

:func:`support_points` is the shape-frame part of ``core.checks.witness_features.support_feature``:
the points within a tolerance of the largest projection on ``d``, rounded to 12 decimals,
duplicates dropped, in lexicographic order; more than two of them that lie on a line (the
second singular value of the centred points at most the tolerance) are reduced to the line's
two ends. Metres.

:func:`feature_contact` is the whole of ``witness_features.feature_contact`` in one call: both
bodies' support features along the normal, where they meet, and the contact's switch margin
(with :func:`kernels.mtd.other_basin_gap`), for the clearance's penetrating rows.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CYLINDER, KIND_SPHERE
from my_collision_pkg.core.kernels.mtd import other_basin_gap


@njit(inline="always")
def _before3(a0, a1, a2, b0, b1, b2):
    """Row (a0, a1, a2) sorts strictly before row (b0, b1, b2) (lexicographic, as Python's tuples)."""
    if a0 < b0:
        return True
    if a0 > b0:
        return False
    if a1 < b1:
        return True
    if a1 > b1:
        return False
    return a2 < b2


@njit(cache=True)
def _clearly_not_on_a_line(centred, tolerance):
    """Whether the second singular value of ``centred`` (k, 3) is above twice ``tolerance``, shown without an SVD:
    with e2 the sum of the squared cross products of all row pairs (the second elementary symmetric function of
    the squared singular values, ``s1 s2 + s1 s3 + s2 s3`` in squares) and F the sum of squared rows (``s1 + s2
    + s3`` in squares), ``e2 <= 3 s1^2 s2^2 <= 3 F s2^2``, so ``e2 > 12 F tolerance^2`` gives
    ``s2 > 2 tolerance``: the SVD's s[1] (within ~1e-16 s1 of s2) is then above ``tolerance`` too. False
    does not say the points are on a line (the SVD decides then)."""
    k = centred.shape[0]
    frobenius = 0.0
    for i in range(k):
        frobenius += centred[i, 0] * centred[i, 0] + centred[i, 1] * centred[i, 1] + centred[i, 2] * centred[i, 2]
    bound = 12.0 * frobenius * tolerance * tolerance
    e2 = 0.0
    for i in range(k):
        a0, a1, a2 = centred[i, 0], centred[i, 1], centred[i, 2]
        for j in range(i + 1, k):
            b0, b1, b2 = centred[j, 0], centred[j, 1], centred[j, 2]
            x0, x1, x2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
            e2 += x0 * x0 + x1 * x1 + x2 * x2
            if e2 > bound:
                return True
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
            out[count, 0], out[count, 1], out[count, 2] = points[i, 0], points[i, 1], points[i, 2]
            count += 1
    if count == 1:
        return 1
    chosen = np.round(out[:count], 12)
    # insertion sort (stable: of rows equal as numbers, -0.0 or 0.0, the first listed stays first), a row moved as
    # its three numbers (no copy or view made per step)
    for i in range(1, count):
        r0, r1, r2 = chosen[i, 0], chosen[i, 1], chosen[i, 2]
        k = i - 1
        while k >= 0 and _before3(r0, r1, r2, chosen[k, 0], chosen[k, 1], chosen[k, 2]):
            chosen[k + 1, 0], chosen[k + 1, 1], chosen[k + 1, 2] = chosen[k, 0], chosen[k, 1], chosen[k, 2]
            k -= 1
        chosen[k + 1, 0], chosen[k + 1, 1], chosen[k + 1, 2] = r0, r1, r2
    kept = 0
    for i in range(count):
        if kept == 0 or not (chosen[i, 0] == out[kept - 1, 0] and chosen[i, 1] == out[kept - 1, 1]
                             and chosen[i, 2] == out[kept - 1, 2]):
            out[kept, 0], out[kept, 1], out[kept, 2] = chosen[i, 0], chosen[i, 1], chosen[i, 2]
            kept += 1
    if kept > 2:
        centred = out[:kept] - (out[:kept].sum(axis=0) / kept)
        if _clearly_not_on_a_line(centred, tolerance):
            return kept                   # (the SVD below would find s[1] > tolerance: a face, kept whole)
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


@njit(inline="always")
def _min(a, b):
    """Python's ``min(a, b)``: ``b`` only when it is smaller (a NaN first stays, a NaN second is passed over)."""
    return b if b < a else a


@njit(cache=True, nogil=True)
def _candidate_points(kind, params, vertices, x, y, z, disc_cos, disc_sin):
    """The points (shape frame, (m, 3)) among which the support feature along the shape-frame direction (x, y, z)
    is found, as ``witness_features._candidates``: a box's eight corners (x slowest), a capsule's two cap points,
    a cylinder's or cone's rim points along the direction's radial part, its discs' points (``disc_cos``,
    ``disc_sin``: the disc's unit circle) and a cone's apex, a vertex set's vertices."""
    if kind == KIND_BOX:
        points = np.empty((8, 3))
        m = 0
        for sx in (-1.0, 1.0):
            for sy in (-1.0, 1.0):
                for sz in (-1.0, 1.0):
                    points[m, 0], points[m, 1], points[m, 2] = sx * params[0], sy * params[1], sz * params[2]
                    m += 1
        return points
    if kind == KIND_CAPSULE:
        r, hl = params[0], params[1]
        length = math.sqrt(x * x + y * y + z * z)
        points = np.empty((2, 3))
        for i in range(2):
            points[i, 0] = r * (x / length)
            points[i, 1] = r * (y / length)
            points[i, 2] = (hl if i == 0 else -hl) + r * (z / length)
        return points
    if kind == KIND_CYLINDER or kind == KIND_CONE:
        r, hl = params[0], params[1]
        rho = math.hypot(x, y)
        ends = 2 if kind == KIND_CYLINDER else 1          # rims and discs: at -hl, and +hl for a cylinder
        n_disc = disc_cos.shape[0]
        n_rims = ends if rho > 1e-12 else 0
        points = np.empty((n_rims + ends * n_disc + (1 if kind == KIND_CONE else 0), 3))
        m = 0
        if n_rims:
            rx, ry = x / rho * r, y / rho * r
            for e in range(ends):
                points[m, 0], points[m, 1], points[m, 2] = rx, ry, -hl if e == 0 else hl
                m += 1
        for e in range(ends):
            for i in range(n_disc):
                points[m, 0], points[m, 1], points[m, 2] = r * disc_cos[i], r * disc_sin[i], -hl if e == 0 else hl
                m += 1
        if kind == KIND_CONE:
            points[m, 0], points[m, 1], points[m, 2] = 0.0, 0.0, hl
        return points
    return vertices


@njit(cache=True, nogil=True)
def _round_gap(kind, params, x, y, z):
    """``witness_features._round_gap``: how far behind the support plane a round body's next extreme point lies."""
    r, hl = params[0], params[1]
    length = math.sqrt(x * x + y * y + z * z)
    rho, z = math.hypot(x, y) / length, z / length
    if kind == KIND_CYLINDER:
        return min(2.0 * hl * abs(z), 2.0 * r * rho)
    if kind == KIND_CAPSULE:
        return 2.0 * hl * abs(z)
    apex_over_rim = 2.0 * hl * z - r * rho
    return abs(apex_over_rim) if apex_over_rim >= 0.0 else min(-apex_over_rim, 2.0 * r * rho)


@njit(cache=True, nogil=True)
def _body_feature(kind, params, vertices, T, d0, d1, d2, tolerance, disc_cos, disc_sin, out):
    """The support feature of a posed body along the world direction (d0, d1, d2), world points to ``out``:
    (count, gap) as ``witness_features._feature`` (count 1: a point, 2: a segment, more: a face)."""
    x = T[0, 0] * d0 + T[1, 0] * d1 + T[2, 0] * d2          # the direction in the body's frame
    y = T[0, 1] * d0 + T[1, 1] * d1 + T[2, 1] * d2
    z = T[0, 2] * d0 + T[1, 2] * d1 + T[2, 2] * d2
    if kind == KIND_SPHERE:
        length = math.sqrt(x * x + y * y + z * z)
        local = np.empty((1, 3))
        local[0, 0], local[0, 1], local[0, 2] = params[0] * x / length, params[0] * y / length, params[0] * z / length
        count, gap = 1, np.inf
    else:
        points = _candidate_points(kind, params, vertices, x, y, z, disc_cos, disc_sin)
        work = np.empty((points.shape[0] + 1, 3))    # the support points, then the direction: one allocation
        local = work[:points.shape[0]]
        d = work[points.shape[0]]
        d[0], d[1], d[2] = x, y, z
        count = support_points(points, d, tolerance, local)
        if count > 2:
            gap = np.inf
        elif kind == KIND_CYLINDER or kind == KIND_CAPSULE or kind == KIND_CONE:
            gap = _round_gap(kind, params, x, y, z) if count == 1 else np.inf
        else:
            gap = support_gap(points, d, tolerance)
    for i in range(count):
        for j in range(3):
            out[i, j] = local[i, 0] * T[j, 0] + local[i, 1] * T[j, 1] + local[i, 2] * T[j, 2] + T[j, 3]
    return count, gap


@njit(cache=True, nogil=True)
def feature_contact(kind_0, params_0, vertices_0, T_0, faces_0, offsets_0, kind_1, params_1, vertices_1, T_1, faces_1,
                    offsets_1, distance, normal, tolerance, disc_cos, disc_sin, crossing_slack, switch_margin,
                    same_basin_cos, basin_start, basin_stop, out):
    """``witness_features.feature_contact`` of a penetrating convex pair in one call.

    Bodies as :func:`kernels.mtd.other_basin_gap` takes them (kind, params, vertices, pose, unit face normals
    and offsets); ``distance`` < 0 metres, ``normal`` (3,) unit from body 0 to body 1; ``tolerance`` the
    feature tolerance (metres), ``disc_cos``, ``disc_sin`` a disc's unit circle, ``crossing_slack`` how far
    outside both segments a crossing may lie (their parameter), ``switch_margin`` below which the other
    local minima are not looked for, ``same_basin_cos``, ``basin_start``, ``basin_stop`` as
    :func:`other_basin_gap` takes them. Writes the witness points to ``out[0]``, ``out[1]`` and returns
    (True, switch margin in metres) where the features meet at one point; (False, 0.0) otherwise (a kink, or
    the features do not meet as found).
    """
    n0, n1, n2 = normal[0], normal[1], normal[2]
    m0 = vertices_0.shape[0] if kind_0 > KIND_CONE else 20
    m1 = vertices_1.shape[0] if kind_1 > KIND_CONE else 20
    features = np.empty((max(m0, 1) + max(m1, 1), 3))     # both bodies' support features: one allocation
    f0 = features[:max(m0, 1)]
    f1 = features[max(m0, 1):]
    c0, gap0 = _body_feature(kind_0, params_0, vertices_0, T_0, n0, n1, n2, tolerance, disc_cos, disc_sin, f0)
    c1, gap1 = _body_feature(kind_1, params_1, vertices_1, T_1, -n0, -n1, -n2, tolerance, disc_cos, disc_sin, f1)
    s0, s1, s2 = distance * n0, distance * n1, distance * n2
    if c0 == 1 or c1 == 1:
        if c0 == 1:
            for j in range(3):
                out[0, j] = f0[0, j]
            out[1, 0], out[1, 1], out[1, 2] = f0[0, 0] + s0, f0[0, 1] + s1, f0[0, 2] + s2
        else:
            for j in range(3):
                out[1, j] = f1[0, j]
            out[0, 0], out[0, 1], out[0, 2] = f1[0, 0] - s0, f1[0, 1] - s1, f1[0, 2] - s2
        switch = _min(gap0, gap1)
        if c1 > 1:
            switch = _min(switch, inside_margin(out[0], f1, c1, normal))
        elif c0 > 1:
            switch = _min(switch, inside_margin(out[1], f0, c0, normal))
    elif c0 == 2 and c1 == 2:
        # p0 = a + s e0, p1 = b + t e1 with p1 - p0 = shift: solved in the plane normal to n (basis u, v)
        e0x, e0y, e0z = f0[1, 0] - f0[0, 0], f0[1, 1] - f0[0, 1], f0[1, 2] - f0[0, 2]
        e1x, e1y, e1z = f1[1, 0] - f1[0, 0], f1[1, 1] - f1[0, 1], f1[1, 2] - f1[0, 2]
        dx, dy, dz = f1[0, 0] - f0[0, 0], f1[0, 1] - f0[0, 1], f1[0, 2] - f0[0, 2]
        ux, uy, uz, vx, vy, vz = plane_basis(n0, n1, n2)
        e0u, e0v = e0x * ux + e0y * uy + e0z * uz, e0x * vx + e0y * vy + e0z * vz
        e1u, e1v = e1x * ux + e1y * uy + e1z * uz, e1x * vx + e1y * vy + e1z * vz
        du, dv = dx * ux + dy * uy + dz * uz, dx * vx + dy * vy + dz * vz
        det = e1u * e0v - e0u * e1v
        length0 = math.sqrt(e0x * e0x + e0y * e0y + e0z * e0z)
        length1 = math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
        if abs(det) <= 1e-12 * (length0 * length1 + 1e-300):
            return False, 0.0                                     # parallel segments: a kink
        s = (e1u * dv - e1v * du) / det
        t = (e0u * dv - e0v * du) / det
        if not (-crossing_slack <= s <= 1 + crossing_slack and -crossing_slack <= t <= 1 + crossing_slack):
            return False, 0.0
        clamped = min(max(s, 0.0), 1.0)
        out[0, 0], out[0, 1], out[0, 2] = f0[0, 0] + clamped * e0x, f0[0, 1] + clamped * e0y, f0[0, 2] + clamped * e0z
        out[1, 0], out[1, 1], out[1, 2] = out[0, 0] + s0, out[0, 1] + s1, out[0, 2] + s2
        switch = _min(_min(_min(gap0, gap1), min(s, 1.0 - s) * length0), min(t, 1.0 - t) * length1)
    else:
        return False, 0.0
    if switch >= switch_margin:
        switch = _min(switch, other_basin_gap(kind_0, params_0, vertices_0, T_0, faces_0, offsets_0, kind_1, params_1,
                                              vertices_1, T_1, faces_1, offsets_1, normal, -distance, out[0], out[1],
                                              switch_margin, same_basin_cos, basin_start, basin_stop))
    return True, switch
