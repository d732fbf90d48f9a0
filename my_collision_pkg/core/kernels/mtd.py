"""Compiled minimum translation distance (MTD) of two posed convex solids (numba): the check and the search.

The same computation as :mod:`my_collision_pkg.core.checks.penetration` (which documents the
method and keeps the numpy version as the reference), in one compiled call per pair:

- :func:`check_mtd`: whether coal's (depth, normal) of a penetrating pair is the MTD: the overlap
  ``h_A(n) + h_B(-n)`` along coal's normal equals its depth, and neither eight neighbours of the
  normal ``local_rad`` away nor any candidate direction (box face normals, axes of round shapes
  and the radial directions to them, the line between the centres, cross products of edge
  directions) gives less, all within ``tol``;
- :func:`search_mtd`: the MTD over the candidates, an optional extra direction and a
  Fibonacci sampling of the sphere, the best few refined by a pattern search on the sphere.

A body is ``kind`` (``kernels.codes``: KIND_BOX .. KIND_CONE, or KIND_CONVEX for a vertex set),
``params`` (3,) its sizes (``ShapeGeometry.solid_params``), ``vertices`` (V, 3) its vertices in its
own frame (convex sets; a (1, 3) placeholder otherwise) and its pose ``T_world_body`` (4, 4).
Directions are unit (3,) vectors in the planning frame, from body A to body B; metres.
The kernels take no Python objects and release the GIL.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CYLINDER, KIND_SPHERE

MAX_CANDIDATES = 2 * (3 + 3 + 1 + 9 + 1)    # both signs of: 3 per body, the centre line, 3 x 3 edge crosses, 1 extra
_UNIT_MIN = 1e-12                            # shorter candidate vectors are dropped (as penetration._unit_rows)
_RHO_MIN = 1e-15                             # a direction this close to a round shape's axis has no radial part
_SEED_SEPARATION = 0.999                     # refined seeds are further apart than this cosine
_SEED_LOOKAHEAD = 4                          # the best (lookahead x seeds) directions are tried as seeds


@njit(inline="always")
def _support(kind, params, vertices, T, d0, d1, d2):
    """h(d): the largest ``d . x`` over the posed body, for the world direction (d0, d1, d2)."""
    # the direction in the body's frame: R.T @ d
    x = T[0, 0] * d0 + T[1, 0] * d1 + T[2, 0] * d2
    y = T[0, 1] * d0 + T[1, 1] * d1 + T[2, 1] * d2
    z = T[0, 2] * d0 + T[1, 2] * d1 + T[2, 2] * d2
    offset = d0 * T[0, 3] + d1 * T[1, 3] + d2 * T[2, 3]
    if kind == KIND_BOX:
        lx = params[0] if x >= 0.0 else -params[0]
        ly = params[1] if y >= 0.0 else -params[1]
        lz = params[2] if z >= 0.0 else -params[2]
        return x * lx + y * ly + z * lz + offset
    if kind == KIND_SPHERE:
        length = max(math.sqrt(x * x + y * y + z * z), 1e-300)
        r = params[0]
        return x * (r * x / length) + y * (r * y / length) + z * (r * z / length) + offset
    if kind == KIND_CYLINDER or kind == KIND_CAPSULE or kind == KIND_CONE:
        r, hl = params[0], params[1]
        rho = math.sqrt(x * x + y * y)
        if rho > _RHO_MIN:
            ux, uy = x / rho, y / rho
        else:
            ux, uy = 0.0, 0.0
        if kind == KIND_CYLINDER:
            lz = hl if z >= 0.0 else -hl
            return x * (r * ux) + y * (r * uy) + z * lz + offset
        if kind == KIND_CAPSULE:
            length = max(math.sqrt(x * x + y * y + z * z), 1e-300)
            lz = r * z / length + (hl if z >= 0.0 else -hl)
            return x * (r * x / length) + y * (r * y / length) + z * lz + offset
        if hl * z >= r * rho - hl * z:              # cone: the apex at +hl, else the base rim at -hl
            return z * hl + offset
        return x * (r * ux) + y * (r * uy) + z * (-hl) + offset
    return _vertex_max(vertices, x, y, z) + offset      # a convex vertex set


@njit(inline="always")
def _vertex_max(vertices, x, y, z):
    """The largest ``(x, y, z) . v`` over the rows v of ``vertices`` (-inf for none): four running maxima over
    interleaved rows, then the largest of the four (the same float as one running maximum: each product is
    computed alike and the maximum of floats does not depend on the order; ~1.5x faster on the Panda's hulls, the
    four compare chains independent). Not :func:`_vertex_argmax`'s value: keeping the rows too costs 100 ns a scan
    of a 152-vertex hull against 70."""
    n = vertices.shape[0]
    b0 = b1 = b2 = b3 = -np.inf
    m = n - n % 4
    for i in range(0, m, 4):
        a0 = x * vertices[i, 0] + y * vertices[i, 1] + z * vertices[i, 2]
        a1 = x * vertices[i + 1, 0] + y * vertices[i + 1, 1] + z * vertices[i + 1, 2]
        a2 = x * vertices[i + 2, 0] + y * vertices[i + 2, 1] + z * vertices[i + 2, 2]
        a3 = x * vertices[i + 3, 0] + y * vertices[i + 3, 1] + z * vertices[i + 3, 2]
        if a0 > b0:
            b0 = a0
        if a1 > b1:
            b1 = a1
        if a2 > b2:
            b2 = a2
        if a3 > b3:
            b3 = a3
    for i in range(m, n):
        a0 = x * vertices[i, 0] + y * vertices[i, 1] + z * vertices[i, 2]
        if a0 > b0:
            b0 = a0
    if b1 > b0:
        b0 = b1
    if b2 > b0:
        b0 = b2
    if b3 > b0:
        b0 = b3
    return b0


@njit(inline="always")
def _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d0, d1, d2):
    """``h_A(d) + h_B(-d)``: how far B must travel along d to leave A."""
    return (_support(kind_a, params_a, vertices_a, T_a, d0, d1, d2)
            + _support(kind_b, params_b, vertices_b, T_b, -d0, -d1, -d2))


@njit(cache=True, nogil=True)
def overlaps(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, directions, out):
    """``out[i] = h_A(d_i) + h_B(-d_i)`` for unit world directions ``directions`` (N, 3)."""
    for i in range(directions.shape[0]):
        out[i] = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                          directions[i, 0], directions[i, 1], directions[i, 2])


@njit(inline="always")
def _add_unit(out, count, v0, v1, v2):
    length = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    if length > _UNIT_MIN:
        out[count, 0], out[count, 1], out[count, 2] = v0 / length, v1 / length, v2 / length
        return count + 1
    return count


@njit(inline="always")
def _body_candidates(kind, params, T, cx, cy, cz, out, count):
    """A body's candidate directions (face normals, axis, radial to the axis; cone side), other centre c."""
    if kind == KIND_BOX:
        for k in range(3):
            count = _add_unit(out, count, T[0, k], T[1, k], T[2, k])
    elif kind == KIND_CYLINDER or kind == KIND_CAPSULE or kind == KIND_CONE:
        a0, a1, a2 = T[0, 2], T[1, 2], T[2, 2]
        count = _add_unit(out, count, a0, a1, a2)
        w0, w1, w2 = cx - T[0, 3], cy - T[1, 3], cz - T[2, 3]
        along = w0 * a0 + w1 * a1 + w2 * a2
        w0, w1, w2 = w0 - along * a0, w1 - along * a1, w2 - along * a2
        length = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        if length > _UNIT_MIN:
            count = _add_unit(out, count, w0 / length, w1 / length, w2 / length)
            if kind == KIND_CONE:
                r, hl = params[0], params[1]
                count = _add_unit(out, count, 2.0 * hl * w0 / length + r * a0, 2.0 * hl * w1 / length + r * a1,
                                  2.0 * hl * w2 / length + r * a2)
    elif kind == KIND_SPHERE:
        count = _add_unit(out, count, cx - T[0, 3], cy - T[1, 3], cz - T[2, 3])
    return count


@njit(inline="always")
def _edge_count(kind):
    if kind == KIND_BOX:
        return 3
    if kind == KIND_CYLINDER or kind == KIND_CAPSULE or kind == KIND_CONE:
        return 1
    return 0


@njit(inline="always")
def _edge_column(kind, k):
    """The world column of the body's rotation that is its k-th edge direction."""
    return k if kind == KIND_BOX else 2


# no extra candidate direction: a constant of the compiled code (a fresh empty array each call cost an allocation)
_NO_EXTRA = np.empty((0, 3))


@njit(cache=True, nogil=True)
def candidate_directions(kind_a, params_a, T_a, kind_b, params_b, T_b, extra, out):
    """Candidate MTD directions of the pair, both signs, written to ``out`` (MAX_CANDIDATES, 3); their count.

    ``extra`` (E, 3): more directions to include (E <= 1), e.g. coal's normal."""
    return _candidates(kind_a, params_a, T_a, kind_b, params_b, T_b, extra, out)


@njit(inline="always")
def _candidates(kind_a, params_a, T_a, kind_b, params_b, T_b, extra, out):
    """:func:`candidate_directions`, inlined in the kernels here (no call: its six arrays are not counted up and
    down again)."""
    count = _body_candidates(kind_a, params_a, T_a, T_b[0, 3], T_b[1, 3], T_b[2, 3], out, 0)
    count = _body_candidates(kind_b, params_b, T_b, T_a[0, 3], T_a[1, 3], T_a[2, 3], out, count)
    count = _add_unit(out, count, T_b[0, 3] - T_a[0, 3], T_b[1, 3] - T_a[1, 3], T_b[2, 3] - T_a[2, 3])
    for i in range(_edge_count(kind_a)):
        ca = _edge_column(kind_a, i)
        e0, e1, e2 = T_a[0, ca], T_a[1, ca], T_a[2, ca]
        for j in range(_edge_count(kind_b)):
            cb = _edge_column(kind_b, j)
            f0, f1, f2 = T_b[0, cb], T_b[1, cb], T_b[2, cb]
            count = _add_unit(out, count, e1 * f2 - e2 * f1, e2 * f0 - e0 * f2, e0 * f1 - e1 * f0)
    for i in range(extra.shape[0]):
        count = _add_unit(out, count, extra[i, 0], extra[i, 1], extra[i, 2])
    for i in range(count):
        out[count + i, 0], out[count + i, 1], out[count + i, 2] = -out[i, 0], -out[i, 1], -out[i, 2]
    return 2 * count


@njit(inline="always")
def _tangent_basis(n0, n1, n2):
    """Two unit vectors u, v with (n, u, v) orthogonal (as penetration._tangent_basis)."""
    if abs(n0) < 0.9:
        u0, u1, u2 = 0.0, n2, -n1
    else:
        u0, u1, u2 = -n2, 0.0, n0
    length = (u0 * u0 + u1 * u1 + u2 * u2) ** 0.5
    u0, u1, u2 = u0 / length, u1 / length, u2 / length
    return u0, u1, u2, n1 * u2 - n2 * u1, n2 * u0 - n0 * u2, n0 * u1 - n1 * u0


@njit(inline="always")
def _pattern(n0, n1, n2, step, out):
    """The 8 unit neighbours of n at angle ``step`` (4 along u, v; 4 diagonal), as penetration._PATTERN."""
    u0, u1, u2, v0, v1, v2 = _tangent_basis(n0, n1, n2)
    s = math.tan(step)
    diagonal = 1.0 / math.sqrt(2.0)
    count = 0
    for k in range(8):
        if k == 0:
            a, b = 1.0, 0.0
        elif k == 1:
            a, b = -1.0, 0.0
        elif k == 2:
            a, b = 0.0, 1.0
        elif k == 3:
            a, b = 0.0, -1.0
        elif k == 4:
            a, b = diagonal, diagonal
        elif k == 5:
            a, b = diagonal, -diagonal
        elif k == 6:
            a, b = -diagonal, diagonal
        else:
            a, b = -diagonal, -diagonal
        count = _add_unit(out, count, n0 + s * (a * u0 + b * v0), n1 + s * (a * u1 + b * v1),
                          n2 + s * (a * u2 + b * v2))
    return count


@njit(cache=True, nogil=True)
def check_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, tol, local_rad):
    """Whether coal's penetrating answer (``depth`` > 0 metres, unit ``normal`` from A to B) is the MTD.

    True when the overlap along ``normal`` is ``depth`` and neither its 8 neighbours ``local_rad``
    away nor any candidate direction gives less than ``depth``, both within ``tol`` metres.
    """
    return check_mtd_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, tol,
                           local_rad)[0]


@njit(cache=True, nogil=True)
def check_mtd_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, tol,
                    local_rad):
    """:func:`check_mtd` (the same comparisons, in the same order), and the least overlap among the neighbours and
    candidate directions it compared (metres; +inf where it does not hold): (holds, least). Where it holds, the
    check of another depth along the same normal is ``least >= that depth - tol`` (:func:`polish_checked_least`)."""
    n0, n1, n2 = normal[0], normal[1], normal[2]
    value = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n0, n1, n2)
    if not abs(value - depth) <= tol:
        return False, np.inf
    floor = depth - tol
    least = np.inf
    dirs = np.empty((MAX_CANDIDATES + 8, 3))  # the candidate directions, then the neighbours: one allocation
    near = dirs[MAX_CANDIDATES:]
    for i in range(_pattern(n0, n1, n2, local_rad, near)):
        other = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                         near[i, 0], near[i, 1], near[i, 2])
        if not other >= floor:                  # (a NaN fails, as in numpy's min)
            return False, np.inf
        least = min(least, other)
    for i in range(_candidates(kind_a, params_a, T_a, kind_b, params_b, T_b, _NO_EXTRA, dirs)):
        other = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                         dirs[i, 0], dirs[i, 1], dirs[i, 2])
        if not other >= floor:
            return False, np.inf
        least = min(least, other)
    return True, least


@njit(inline="always")
def _refine(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n, value, start, stop, out):
    """Pattern search on the sphere from unit n (overlap ``value``): the local minimum to ``out``; its overlap."""
    return _refine_into(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n, value, start, stop,
                        out, np.empty((8, 3)))


@njit(inline="always")
def _refine_into(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n, value, start, stop, out,
                 trial):
    """:func:`_refine` with its scratch ``trial`` (8, 3) given (a caller that refines many directions makes it once)."""
    n0, n1, n2 = n[0], n[1], n[2]
    step = start
    while step > stop:
        count = _pattern(n0, n1, n2, step, trial)
        best, best_value = -1, np.inf            # the first smallest, as numpy's argmin
        for i in range(count):
            v = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                         trial[i, 0], trial[i, 1], trial[i, 2])
            if v < best_value:
                best, best_value = i, v
        if best >= 0 and best_value < value:
            n0, n1, n2 = trial[best, 0], trial[best, 1], trial[best, 2]
            value = best_value
            step *= 1.5
        else:
            step *= 0.5
    out[0], out[1], out[2] = n0, n1, n2
    return value


@njit(cache=True, nogil=True)
def search_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, extra, sphere, seeds,
               start, stop, out_direction):
    """The MTD over the candidates, ``extra`` (E <= 1, 3) and the unit directions ``sphere`` (S, 3), the best
    ``seeds`` distinct ones refined from step ``start`` down to ``stop`` radians.

    Writes the direction (unit, from A to B) to ``out_direction`` (3,); returns the depth (metres).
    """
    candidates = np.empty((MAX_CANDIDATES, 3))
    m = candidate_directions(kind_a, params_a, T_a, kind_b, params_b, T_b, extra, candidates)
    total = m + sphere.shape[0]
    dirs = np.empty((total, 3))
    dirs[:m] = candidates[:m]
    dirs[m:] = sphere
    values = np.empty(total)
    for i in range(total):
        values[i] = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                             dirs[i, 0], dirs[i, 1], dirs[i, 2])
    order = np.argsort(values, kind="mergesort")
    best = values[order[0]]
    for k in range(3):
        out_direction[k] = dirs[order[0], k]
    seen = np.empty((seeds, 3))
    n_seen = 0
    refined = np.empty(3)
    for j in range(min(_SEED_LOOKAHEAD * seeds, total)):
        if n_seen >= seeds:
            break
        i = order[j]
        close = False
        for s in range(n_seen):
            if dirs[i, 0] * seen[s, 0] + dirs[i, 1] * seen[s, 1] + dirs[i, 2] * seen[s, 2] > _SEED_SEPARATION:
                close = True
                break
        if close:
            continue
        for k in range(3):
            seen[n_seen, k] = dirs[i, k]
        n_seen += 1
        value = _refine(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, dirs[i], values[i],
                        start, stop, refined)
        if value < best:
            best = value
            for k in range(3):
                out_direction[k] = refined[k]
    return best


@njit(cache=True, nogil=True)
def coal_answer_is_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, distance, p0, p1, hint,
                       tol_abs, tol_rel, local_rad, out):
    """coal's penetrating answer for two convex solids, its unit normal made and checked in one call.

    ``distance`` < 0 (metres), witness points ``p0`` (on A) and ``p1`` (on B), ``hint`` coal's normal (3,).
    The unit normal from A to B is ``(p1 - p0) / |p1 - p0|`` times the sign of the distance where both are
    above 1e-12, else the unit ``hint``, else the line between the bodies' origins, else +z (as
    ``narrowphase._unit_normal``); it is written to ``out[0]``, and ``p0 + distance * normal`` to ``out[1]``.
    Returns :func:`check_mtd` of depth ``-distance`` along that normal, tolerance
    ``tol_abs + tol_rel * depth``.
    """
    return coal_answer_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, distance, p0, p1,
                             hint, tol_abs, tol_rel, local_rad, out)[0]


@njit(cache=True, nogil=True)
def coal_answer_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, distance, p0, p1, hint,
                      tol_abs, tol_rel, local_rad, out):
    """:func:`coal_answer_is_mtd`, with :func:`check_mtd_least`'s least overlap: (holds, least)."""
    d0, d1, d2 = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    norm = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if norm > 1e-12 and abs(distance) > 1e-12:
        signed = norm if distance > 0.0 else -norm
        n0, n1, n2 = d0 / signed, d1 / signed, d2 / signed
    else:
        h0, h1, h2 = hint[0], hint[1], hint[2]
        length = math.sqrt(h0 * h0 + h1 * h1 + h2 * h2)
        if length > 1e-12:
            n0, n1, n2 = h0 / length, h1 / length, h2 / length
        else:
            b0, b1, b2 = T_b[0, 3] - T_a[0, 3], T_b[1, 3] - T_a[1, 3], T_b[2, 3] - T_a[2, 3]
            length = math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
            if length > 1e-12:
                n0, n1, n2 = b0 / length, b1 / length, b2 / length
            else:
                n0, n1, n2 = 0.0, 0.0, 1.0
    out[0, 0], out[0, 1], out[0, 2] = n0, n1, n2
    out[1, 0], out[1, 1], out[1, 2] = p0[0] + distance * n0, p0[1] + distance * n1, p0[2] + distance * n2
    depth = -distance
    return check_mtd_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, out[0], depth,
                           tol_abs + tol_rel * abs(depth), local_rad)


@njit(inline="always")
def _face_overlap(kind_o, params_o, vertices_o, T_o, T_f, offset, m0, m1, m2):
    """The overlap along a face's outward unit normal (m0, m1, m2) (world) of body f, pushing the other body o
    out through that face: ``offset + m . t_f`` (the face's plane: body f's support there) ``+ h_o(-m)``."""
    return offset + m0 * T_f[0, 3] + m1 * T_f[1, 3] + m2 * T_f[2, 3] + _support(kind_o, params_o, vertices_o, T_o,
                                                                                  -m0, -m1, -m2)


BASIN_KEPT_VERTICES = 4        # other_basin_gap: a vertex set's support vertices kept as lower bounds of its support


@njit(inline="always")
def _vertex_argmax(vertices, x, y, z):
    """The largest ``(x, y, z) . v`` over the rows v of ``vertices`` and the first row that gives it ((-inf, -1) for
    none): as :func:`_vertex_max`, each of the four running maxima keeping its first row, ties between them going to
    the lowest row (so the row one running maximum keeps)."""
    n = vertices.shape[0]
    b0 = b1 = b2 = b3 = -np.inf
    i0 = i1 = i2 = i3 = -1
    m = n - n % 4
    for i in range(0, m, 4):
        a0 = x * vertices[i, 0] + y * vertices[i, 1] + z * vertices[i, 2]
        a1 = x * vertices[i + 1, 0] + y * vertices[i + 1, 1] + z * vertices[i + 1, 2]
        a2 = x * vertices[i + 2, 0] + y * vertices[i + 2, 1] + z * vertices[i + 2, 2]
        a3 = x * vertices[i + 3, 0] + y * vertices[i + 3, 1] + z * vertices[i + 3, 2]
        if a0 > b0:
            b0, i0 = a0, i
        if a1 > b1:
            b1, i1 = a1, i + 1
        if a2 > b2:
            b2, i2 = a2, i + 2
        if a3 > b3:
            b3, i3 = a3, i + 3
    for i in range(m, n):
        a0 = x * vertices[i, 0] + y * vertices[i, 1] + z * vertices[i, 2]
        if a0 > b0:
            b0, i0 = a0, i
    if b1 > b0 or (b1 == b0 and i1 >= 0 and (i0 < 0 or i1 < i0)):
        b0, i0 = b1, i1
    if b2 > b0 or (b2 == b0 and i2 >= 0 and (i0 < 0 or i2 < i0)):
        b0, i0 = b2, i2
    if b3 > b0 or (b3 == b0 and i3 >= 0 and (i0 < 0 or i3 < i0)):
        b0, i0 = b3, i3
    return b0, i0


@njit(inline="always")
def _kept_face_overlap(vertices_o, T_o, T_f, offset, m0, m1, m2, kept, n_kept, depth, margin):
    """:func:`_face_overlap` of a vertex set o (the same arithmetic, the same value), or +inf where a lower bound of
    it, from the vertices ``kept[:n_kept]`` (indices into ``vertices_o``), is already ``margin`` or more deeper than
    ``depth``; returns (value, n_kept).

    The support ``h_o(-m)`` is the largest ``-m . v`` over the vertices: the largest over a few of them, each
    computed as the full scan computes it, is at most that float, and adding it to the same terms in the same
    order keeps the order (rounding is monotone), so the bound is at most the value the scan gives, to the last
    bit: no face whose value is within ``margin`` is skipped. Where the bound does not decide, the full scan
    runs, and its support vertex (the first largest, as :func:`_support` takes it) goes to the front of ``kept``
    (at most ``kept.shape[0]``, the most recently found first): neighbouring faces of a hull mostly share it."""
    d0, d1, d2 = -m0, -m1, -m2
    x = T_o[0, 0] * d0 + T_o[1, 0] * d1 + T_o[2, 0] * d2
    y = T_o[0, 1] * d0 + T_o[1, 1] * d1 + T_o[2, 1] * d2
    z = T_o[0, 2] * d0 + T_o[1, 2] * d1 + T_o[2, 2] * d2
    offset_o = d0 * T_o[0, 3] + d1 * T_o[1, 3] + d2 * T_o[2, 3]
    plane = offset + m0 * T_f[0, 3] + m1 * T_f[1, 3] + m2 * T_f[2, 3]
    if n_kept > 0:
        low = -np.inf
        for k in range(n_kept):
            j = kept[k]
            value = x * vertices_o[j, 0] + y * vertices_o[j, 1] + z * vertices_o[j, 2]
            if value > low:
                low = value
        if not (plane + (low + offset_o) - depth < margin):
            return np.inf, n_kept
    best, at = _vertex_argmax(vertices_o, x, y, z)
    if at >= 0:                                  # move (or put) it to the front
        k = 0
        while k < n_kept and kept[k] != at:
            k += 1
        if k == n_kept and n_kept < kept.shape[0]:
            n_kept += 1
        if k == kept.shape[0]:
            k -= 1
        while k > 0:
            kept[k] = kept[k - 1]
            k -= 1
        kept[0] = at
    return plane + (best + offset_o), n_kept


@njit(cache=True, nogil=True)
def other_basin_gap(kind_a, params_a, vertices_a, T_a, faces_a, offsets_a, kind_b, params_b, vertices_b, T_b, faces_b,
                    offsets_b, normal, depth, p0, p1, margin, min_cos, start, stop):
    """How much deeper than ``depth`` the best *other* local minimum of the overlap lies, among those reached
    from a candidate direction (:func:`candidate_directions`) or a face normal of either body (``faces_x``
    (F, 3) unit outward normals in the body's frame, ``offsets_x`` (F,) their planes' offsets ``max n . v``):
    a candidate whose overlap is within ``margin`` of ``depth`` and more than ``acos(min_cos)`` from the unit
    ``normal`` (from A to B) is refined (:func:`_refine`, ``start`` to ``stop`` radians); it counts when it stays
    that far away. Metres; +inf when no candidate is within ``margin``. ``p0``, ``p1``: a point of A and one of
    B (the witness points): a face normal whose overlap is at least its own body's support there plus the other
    body's support at that point (``offset + m . (t_f - p)``, a lower bound) is skipped beyond ``margin``
    without the other body's support function; so is a candidate direction where one body is a vertex set and
    the other a primitive, bounded by the primitive's support and the vertex set's witness point. A face that
    passes that bound, the other body a vertex set, is bounded next by the other body's support vertices of the
    last faces it was scanned for (:func:`_kept_face_overlap`, a bound at most the scan's float): the full scan
    runs only where that does not decide, so every face within ``margin`` is refined as before, with the same
    float, and the answer is the same to the last bit."""
    n0, n1, n2 = normal[0], normal[1], normal[2]
    best = np.inf
    dirs = np.empty((MAX_CANDIDATES + 10, 3))  # the candidates, _refine's scratch (8), the refined direction, d
    refined = dirs[MAX_CANDIDATES + 8]
    m = _candidates(kind_a, params_a, T_a, kind_b, params_b, T_b, _NO_EXTRA, dirs)
    n_faces_a, n_faces_b = faces_a.shape[0], faces_b.shape[0]
    # one body a vertex set (its support costs a pass over its vertices), the other a primitive
    vertices_a_only = kind_a > KIND_CONE and not kind_b > KIND_CONE
    vertices_b_only = kind_b > KIND_CONE and not kind_a > KIND_CONE
    # a face's lower bound, offset + face . w, with w the other witness point's offset from the body's origin,
    # in the body's frame: w_a = R_a^T (t_a - p1), w_b = R_b^T (t_b - p0)
    x, y, z = T_a[0, 3] - p1[0], T_a[1, 3] - p1[1], T_a[2, 3] - p1[2]
    wa0, wa1, wa2 = (T_a[0, 0] * x + T_a[1, 0] * y + T_a[2, 0] * z, T_a[0, 1] * x + T_a[1, 1] * y + T_a[2, 1] * z,
                     T_a[0, 2] * x + T_a[1, 2] * y + T_a[2, 2] * z)
    x, y, z = T_b[0, 3] - p0[0], T_b[1, 3] - p0[1], T_b[2, 3] - p0[2]
    wb0, wb1, wb2 = (T_b[0, 0] * x + T_b[1, 0] * y + T_b[2, 0] * z, T_b[0, 1] * x + T_b[1, 1] * y + T_b[2, 1] * z,
                     T_b[0, 2] * x + T_b[1, 2] * y + T_b[2, 2] * z)
    # the other body's support vertices of the faces scanned last, where it is a vertex set (_kept_face_overlap)
    kept = np.empty((2, BASIN_KEPT_VERTICES), dtype=np.int64)
    kept_a = kept[0]
    kept_b = kept[1]
    n_kept_a, n_kept_b = 0, 0
    d = dirs[MAX_CANDIDATES + 9]
    trial = dirs[MAX_CANDIDATES:MAX_CANDIDATES + 8]
    for i in range(m + n_faces_a + n_faces_b):
        if i < m:
            d0, d1, d2 = dirs[i, 0], dirs[i, 1], dirs[i, 2]
        elif i < m + n_faces_a:                # a face of A: the direction from A to B is its outward normal
            f = i - m
            x, y, z = faces_a[f, 0], faces_a[f, 1], faces_a[f, 2]
            if not (offsets_a[f] + x * wa0 + y * wa1 + z * wa2 - depth < margin):
                continue                       # its plane beyond B's witness point: deeper by the margin at least
            d0 = T_a[0, 0] * x + T_a[0, 1] * y + T_a[0, 2] * z
            d1 = T_a[1, 0] * x + T_a[1, 1] * y + T_a[1, 2] * z
            d2 = T_a[2, 0] * x + T_a[2, 1] * y + T_a[2, 2] * z
        else:                                  # a face of B: the direction from A to B is minus its normal
            f = i - m - n_faces_a
            x, y, z = faces_b[f, 0], faces_b[f, 1], faces_b[f, 2]
            if not (offsets_b[f] + x * wb0 + y * wb1 + z * wb2 - depth < margin):
                continue
            d0 = -(T_b[0, 0] * x + T_b[0, 1] * y + T_b[0, 2] * z)
            d1 = -(T_b[1, 0] * x + T_b[1, 1] * y + T_b[1, 2] * z)
            d2 = -(T_b[2, 0] * x + T_b[2, 1] * y + T_b[2, 2] * z)
        if d0 * n0 + d1 * n1 + d2 * n2 >= min_cos:
            continue
        if i < m:
            if vertices_a_only:        # A's support bounded below by its witness point, B's exact (a primitive)
                h_b = _support(kind_b, params_b, vertices_b, T_b, -d0, -d1, -d2)
                if not (d0 * p0[0] + d1 * p0[1] + d2 * p0[2] + h_b - depth < margin):
                    continue
                value = _support(kind_a, params_a, vertices_a, T_a, d0, d1, d2) + h_b
            elif vertices_b_only:
                h_a = _support(kind_a, params_a, vertices_a, T_a, d0, d1, d2)
                if not (h_a - (d0 * p1[0] + d1 * p1[1] + d2 * p1[2]) - depth < margin):
                    continue
                value = h_a + _support(kind_b, params_b, vertices_b, T_b, -d0, -d1, -d2)
            else:
                value = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d0, d1, d2)
        elif i < m + n_faces_a:
            if kind_b > KIND_CONE:
                value, n_kept_b = _kept_face_overlap(vertices_b, T_b, T_a, offsets_a[i - m], d0, d1, d2, kept_b,
                                                     n_kept_b, depth, margin)
            else:
                value = _face_overlap(kind_b, params_b, vertices_b, T_b, T_a, offsets_a[i - m], d0, d1, d2)
        else:
            if kind_a > KIND_CONE:
                value, n_kept_a = _kept_face_overlap(vertices_a, T_a, T_b, offsets_b[i - m - n_faces_a], -d0, -d1,
                                                     -d2, kept_a, n_kept_a, depth, margin)
            else:
                value = _face_overlap(kind_a, params_a, vertices_a, T_a, T_b, offsets_b[i - m - n_faces_a], -d0, -d1,
                                      -d2)
        if not value - depth < margin:
            continue
        d[0], d[1], d[2] = d0, d1, d2
        value = _refine_into(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d, value, start,
                             stop, refined, trial)
        if refined[0] * n0 + refined[1] * n1 + refined[2] * n2 < min_cos and value - depth < best:
            best = value - depth
    return best


# --- polishing an MTD to the exact local minimum of the overlap (issue 40) ---
POLISH_SUPPORT = 6              # at most this many support vertices of a body along the normal
_POLISH_ROUNDS = 24             # support features recomputed at most this many times
_POLISH_EPS_M = 1e-7            # a vertex this close to the support plane along the normal is a support vertex, ...
_POLISH_MAX_EPS_M = 1e-5        # ... this tolerance grown tenfold up to this while no candidate lowers the overlap
_POLISH_MIN_COS = 0.9           # candidates further than acos(0.9) (26 degrees) from the normal are not taken
_POLISH_CIRCLE_RAD = 0.05       # the half-width of the arc searched along a great circle (round bodies)
_POLISH_CIRCLE_EDGES = 3        # the circles normal to the edges among a body's first this many support vertices
_GOLDEN = 0.6180339887498949


@njit(inline="always")
def _polishable(kind):
    """Whether the body is vertices plus at most a disc (a vertex set, a box, a cylinder)."""
    return kind == KIND_BOX or kind == KIND_CYLINDER or kind > KIND_CONE


@njit(inline="always")
def _corner(kind, p0, p1, p2, i):
    """Corner i of a box (half sizes p0, p1, p2) or end point i of a cylinder's axis (half length p1), in its own
    frame: (x, y, z); scalars in and out, so that inlined it takes no reference count."""
    if kind == KIND_BOX:
        return p0 if i & 1 else -p0, p1 if i & 2 else -p1, p2 if i & 4 else -p2
    return 0.0, 0.0, p1 if i & 1 else -p1


@njit(cache=True, nogil=True)
def _support_set(kind, params, vertices, T, d0, d1, d2, eps, out, values, index):
    """The body's vertices within ``eps`` of its support plane along world direction d (at most
    POLISH_SUPPORT, the highest first), posed, to ``out``; their count. ``values``, ``index``
    (POLISH_SUPPORT,): work space. A plain call, one exit, every array argument read last there:
    no reference count, no allocation (``kernels.gjk``'s note on reference counts)."""
    x = T[0, 0] * d0 + T[1, 0] * d1 + T[2, 0] * d2
    y = T[0, 1] * d0 + T[1, 1] * d1 + T[2, 1] * d2
    z = T[0, 2] * d0 + T[1, 2] * d1 + T[2, 2] * d2
    primitive = kind == KIND_BOX or kind == KIND_CYLINDER     # (else a vertex set)
    n_vertices = 8 if kind == KIND_BOX else (2 if kind == KIND_CYLINDER else vertices.shape[0])
    p0 = params[0] if kind == KIND_BOX else 0.0          # (the parameters _corner reads: a box's half sizes,
    p1 = params[1] if kind == KIND_BOX or kind == KIND_CYLINDER else 0.0      # a cylinder's half length)
    p2 = params[2] if kind == KIND_BOX else 0.0
    if primitive:
        top = -np.inf
        for i in range(n_vertices):
            v0, v1, v2 = _corner(kind, p0, p1, p2, i)
            value = x * v0 + y * v1 + z * v2
            if value > top:
                top = value
    else:
        top = _vertex_max(vertices, x, y, z)
    count = 0
    for i in range(n_vertices):
        v0, v1, v2 = _corner(kind, p0, p1, p2, i) if primitive else (vertices[i, 0], vertices[i, 1], vertices[i, 2])
        value = x * v0 + y * v1 + z * v2
        if value < top - eps:
            continue
        # insert, highest first, keeping at most POLISH_SUPPORT
        j = count if count < POLISH_SUPPORT else POLISH_SUPPORT - 1
        if count == POLISH_SUPPORT and value <= values[j]:
            continue
        while j > 0 and values[j - 1] < value:
            values[j], index[j] = values[j - 1], index[j - 1]
            j -= 1
        values[j], index[j] = value, i
        if count < POLISH_SUPPORT:
            count += 1
    for k in range(count):
        i = index[k]
        v0, v1, v2 = _corner(kind, p0, p1, p2, i) if primitive else (vertices[i, 0], vertices[i, 1], vertices[i, 2])
        for r in range(3):
            out[k, r] = T[r, 0] * v0 + T[r, 1] * v1 + T[r, 2] * v2 + T[r, 3]
    return count + 0 * (params.shape[0] + vertices.shape[0] + T.shape[0] + out.shape[0] + values.shape[0]
                        + index.shape[0])


@njit(cache=True, nogil=True)
def _local_overlap(sa, na, ra, axa, sb, nb, rb, axb, m0, m1, m2):
    """The overlap along unit m of the support vertices ``sa`` (A) and ``sb`` (B) and the bodies' discs (radius
    ``r``, world axis ``ax``): never above the overlap of the bodies. A plain call, one exit, every array argument
    read last there: numba takes no reference count on them (``kernels.gjk``'s note on reference counts; inlined,
    it took four each way per call, and the polish's golden sections call it ~50 times a circle)."""
    top_a = -np.inf
    for i in range(na):
        value = m0 * sa[i, 0] + m1 * sa[i, 1] + m2 * sa[i, 2]
        if value > top_a:
            top_a = value
    top_b = -np.inf
    for i in range(nb):
        value = -(m0 * sb[i, 0] + m1 * sb[i, 1] + m2 * sb[i, 2])
        if value > top_b:
            top_b = value
    total = top_a + top_b
    if ra > 0.0:
        along = m0 * axa[0] + m1 * axa[1] + m2 * axa[2]
        total += ra * math.sqrt(max(m0 * m0 + m1 * m1 + m2 * m2 - along * along, 0.0))
    if rb > 0.0:
        along = m0 * axb[0] + m1 * axb[1] + m2 * axb[2]
        total += rb * math.sqrt(max(m0 * m0 + m1 * m1 + m2 * m2 - along * along, 0.0))
    return total if sa.shape[0] + sb.shape[0] + axa.shape[0] + axb.shape[0] >= 0 else np.nan


@njit(inline="always")
def _add_candidate(cands, count, n0, n1, n2, c0, c1, c2):
    """A unit candidate of the vector c, turned towards n; dropped when short or far from n."""
    length = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
    if not length > 1e-14 or count >= cands.shape[0]:
        return count
    c0, c1, c2 = c0 / length, c1 / length, c2 / length
    dot = c0 * n0 + c1 * n1 + c2 * n2
    if dot < 0.0:
        c0, c1, c2, dot = -c0, -c1, -c2, -dot
    if dot < _POLISH_MIN_COS:
        return count
    cands[count, 0], cands[count, 1], cands[count, 2] = c0, c1, c2
    return count + 1


@njit(inline="always")
def _circle_minimum(sa, na, ra, axa, sb, nb, rb, axb, n0, n1, n2, e0, e1, e2, out):
    """Golden-section minimum of the local overlap (:func:`_local_overlap`) on the great circle normal to unit
    e, within _POLISH_CIRCLE_RAD of n's projection on it, to ``out``. False when n is along e."""
    along = n0 * e0 + n1 * e1 + n2 * e2
    u0, u1, u2 = n0 - along * e0, n1 - along * e1, n2 - along * e2
    length = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
    if not length > 1e-9:
        return False
    u0, u1, u2 = u0 / length, u1 / length, u2 / length
    w0, w1, w2 = e1 * u2 - e2 * u1, e2 * u0 - e0 * u2, e0 * u1 - e1 * u0
    lo, hi = -_POLISH_CIRCLE_RAD, _POLISH_CIRCLE_RAD
    x1 = hi - _GOLDEN * (hi - lo)
    x2 = lo + _GOLDEN * (hi - lo)
    c, s = math.cos(x1), math.sin(x1)
    f1 = _local_overlap(sa, na, ra, axa, sb, nb, rb, axb, c * u0 + s * w0, c * u1 + s * w1, c * u2 + s * w2)
    c, s = math.cos(x2), math.sin(x2)
    f2 = _local_overlap(sa, na, ra, axa, sb, nb, rb, axb, c * u0 + s * w0, c * u1 + s * w1, c * u2 + s * w2)
    while hi - lo > 1e-11:
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - _GOLDEN * (hi - lo)
            c, s = math.cos(x1), math.sin(x1)
            f1 = _local_overlap(sa, na, ra, axa, sb, nb, rb, axb, c * u0 + s * w0, c * u1 + s * w1, c * u2 + s * w2)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + _GOLDEN * (hi - lo)
            c, s = math.cos(x2), math.sin(x2)
            f2 = _local_overlap(sa, na, ra, axa, sb, nb, rb, axb, c * u0 + s * w0, c * u1 + s * w1, c * u2 + s * w2)
    x = x1 if f1 <= f2 else x2
    c, s = math.cos(x), math.sin(x)
    out[0], out[1], out[2] = c * u0 + s * w0, c * u1 + s * w1, c * u2 + s * w2
    return True


@njit(cache=True, nogil=True)
def polish_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, out_normal):
    """The exact local minimum of the overlap ``h_A(n) + h_B(-n)`` near a penetrating pair's MTD (unit
    ``normal`` from A to B, ``depth`` metres, e.g. EPA's): the normal to ``out_normal`` (3,), the depth returned.

    For bodies made of vertices and at most one disc (vertex sets, boxes, cylinders; not both round): the
    support vertices of each body along the normal (within a tolerance, at most POLISH_SUPPORT) give the
    candidates: a face normal of either (three support vertices of one body), the cross product of an edge
    of each (two support vertices of each), a cylinder's axis, and, with a cylinder, the minimum of the overlap
    of the support vertices and the disc (golden section) along the great circle normal to each edge among a
    body's first _POLISH_CIRCLE_EDGES support vertices (where the edge swept by the cylinder's rim is curved);
    each candidate's overlap is bounded below by that of the support vertices and the disc, and the exact
    overlap is taken in the order of the bounds (equal bounds in the order listed) until a bound is not below
    the best. The best replaces the normal while it lowers the overlap, and the support vertices are taken
    again there; where none does, the tolerance grows tenfold
    (_POLISH_EPS_M up to _POLISH_MAX_EPS_M, kept from then on) until it takes in another vertex, and the
    candidates are taken again (at most _POLISH_ROUNDS rounds in all). Other pairs,
    or no lower overlap found: ``normal`` and the overlap along it.
    """
    n0, n1, n2 = normal[0], normal[1], normal[2]
    out_normal[0], out_normal[1], out_normal[2] = n0, n1, n2
    value = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n0, n1, n2)
    if not (_polishable(kind_a) and _polishable(kind_b)) or (kind_a == KIND_CYLINDER and kind_b == KIND_CYLINDER):
        return value
    ra = params_a[0] if kind_a == KIND_CYLINDER else 0.0
    rb = params_b[0] if kind_b == KIND_CYLINDER else 0.0
    k = POLISH_SUPPORT
    pairs = k * (k - 1) // 2
    max_candidates = 2 * k * (k - 1) * (k - 2) // 6 + pairs * pairs + 2 + 2 * pairs
    # the working arrays in four allocations instead of ten (rows of one float block, one float vector, the flags
    # and the indices)
    rows = np.empty((max_candidates + 2 * POLISH_SUPPORT + 3, 3))
    cands = rows[:max_candidates]
    sa = rows[max_candidates:max_candidates + POLISH_SUPPORT]
    sb = rows[max_candidates + POLISH_SUPPORT:max_candidates + 2 * POLISH_SUPPORT]
    axa = rows[max_candidates + 2 * POLISH_SUPPORT]
    axb = rows[max_candidates + 2 * POLISH_SUPPORT + 1]
    point = rows[max_candidates + 2 * POLISH_SUPPORT + 2]
    for r in range(3):
        axa[r] = T_a[r, 2]
        axb[r] = T_b[r, 2]
    singles = np.empty(max_candidates + POLISH_SUPPORT)
    bounds = singles[:max_candidates]
    values = singles[max_candidates:]
    taken = np.empty(max_candidates, dtype=np.bool_)
    index = np.empty(POLISH_SUPPORT, dtype=np.int64)
    eps = _POLISH_EPS_M
    for _ in range(_POLISH_ROUNDS):
        na = _support_set(kind_a, params_a, vertices_a, T_a, n0, n1, n2, eps, sa, values, index)
        nb = _support_set(kind_b, params_b, vertices_b, T_b, -n0, -n1, -n2, eps, sb, values, index)
        count = 0
        for side in range(2):                          # face normals: three support vertices of one body
            s = sa if side == 0 else sb
            ns = na if side == 0 else nb
            for i in range(ns):
                for j in range(i + 1, ns):
                    for l in range(j + 1, ns):
                        x0, x1, x2 = s[j, 0] - s[i, 0], s[j, 1] - s[i, 1], s[j, 2] - s[i, 2]
                        y0, y1, y2 = s[l, 0] - s[i, 0], s[l, 1] - s[i, 1], s[l, 2] - s[i, 2]
                        count = _add_candidate(cands, count, n0, n1, n2, x1 * y2 - x2 * y1, x2 * y0 - x0 * y2,
                                               x0 * y1 - x1 * y0)
        for i in range(na):                            # edge x edge
            for j in range(i + 1, na):
                x0, x1, x2 = sa[j, 0] - sa[i, 0], sa[j, 1] - sa[i, 1], sa[j, 2] - sa[i, 2]
                for l in range(nb):
                    for m in range(l + 1, nb):
                        y0, y1, y2 = sb[m, 0] - sb[l, 0], sb[m, 1] - sb[l, 1], sb[m, 2] - sb[l, 2]
                        count = _add_candidate(cands, count, n0, n1, n2, x1 * y2 - x2 * y1, x2 * y0 - x0 * y2,
                                               x0 * y1 - x1 * y0)
        if ra > 0.0:
            count = _add_candidate(cands, count, n0, n1, n2, axa[0], axa[1], axa[2])
        if rb > 0.0:
            count = _add_candidate(cands, count, n0, n1, n2, axb[0], axb[1], axb[2])
        if ra > 0.0 or rb > 0.0:                       # an edge swept by the rim: along the circle normal to it
            for side in range(2):
                s = sa if side == 0 else sb
                ns = min(na if side == 0 else nb, _POLISH_CIRCLE_EDGES)
                for i in range(ns):
                    for j in range(i + 1, ns):
                        x0, x1, x2 = s[j, 0] - s[i, 0], s[j, 1] - s[i, 1], s[j, 2] - s[i, 2]
                        length = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
                        if not length > 1e-12:
                            continue
                        if _circle_minimum(sa, na, ra, axa, sb, nb, rb, axb, n0, n1, n2, x0 / length, x1 / length,
                                           x2 / length, point):
                            count = _add_candidate(cands, count, n0, n1, n2, point[0], point[1], point[2])
        for c in range(count):
            bounds[c] = _local_overlap(sa, na, ra, axa, sb, nb, rb, axb, cands[c, 0], cands[c, 1], cands[c, 2])
            taken[c] = False
        # the candidates in increasing bound (the first listed of equal bounds first: a stable sort's order), each
        # picked by a pass over the bounds: only the few below the best are taken, so no sort of them all
        best, best_value = -1, value
        while True:
            c, low = -1, np.inf
            for t in range(count):
                if not taken[t] and bounds[t] < low:        # (a NaN or +inf bound is never picked)
                    c, low = t, bounds[t]
            if c < 0 or not low < best_value:
                break
            taken[c] = True
            exact = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                             cands[c, 0], cands[c, 1], cands[c, 2])
            if exact < best_value:
                best, best_value = c, exact
        if best < 0:
            # no candidate lowers the overlap: a larger tolerance, where it takes in another support vertex
            grown = False
            while eps * 10.0 <= _POLISH_MAX_EPS_M * 1.0000001 and not grown:
                eps *= 10.0
                grown = (_support_set(kind_a, params_a, vertices_a, T_a, n0, n1, n2, eps, sa, values, index) > na
                         or _support_set(kind_b, params_b, vertices_b, T_b, -n0, -n1, -n2, eps, sb, values, index)
                         > nb)
            if not grown:
                break
            continue
        n0, n1, n2 = cands[best, 0], cands[best, 1], cands[best, 2]
        value = best_value
    out_normal[0], out_normal[1], out_normal[2] = n0, n1, n2
    return value


@njit(cache=True, nogil=True)
def polished_coal_answer(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, distance, p0, p1, hint,
                         tol_abs, tol_rel, local_rad, out):
    """:func:`coal_answer_is_mtd`, then, where it holds, the answer polished (:func:`polish_mtd`).

    ``out`` (3, 3): the unit normal, ``p0 + d * normal`` and, in ``out[2, 0]``, the signed distance ``d``:
    the polished one (minus its depth) where the polished normal and depth pass :func:`check_mtd` too and are
    no deeper than coal's answer plus the tolerance, else coal's ``distance``. Returns
    :func:`coal_answer_is_mtd`'s answer (on coal's answer).
    """
    ok, least = coal_answer_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, distance, p0,
                                  p1, hint, tol_abs, tol_rel, local_rad, out[0:2])
    out[2, 0], out[2, 1], out[2, 2] = distance, 0.0, 0.0
    if not ok:
        return False
    polished_distance = polish_checked_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                                             out[0], -distance, tol_abs, tol_rel, local_rad, least)
    if polished_distance != distance:
        n0, n1, n2 = out[0, 0], out[0, 1], out[0, 2]
        out[1, 0], out[1, 1], out[1, 2] = (p0[0] + polished_distance * n0, p0[1] + polished_distance * n1,
                                           p0[2] + polished_distance * n2)
        out[2, 0] = polished_distance
    return True


@njit(cache=True, nogil=True)
def polish_checked(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, tol_abs,
                   tol_rel, local_rad):
    """:func:`polish_mtd` of an MTD (unit ``normal``, ``depth`` metres) of a pair it polishes, kept only where it passes
    :func:`check_mtd` (tolerance ``tol_abs + tol_rel * depth``) and lies no deeper than ``depth`` plus that
    tolerance: then ``normal`` is overwritten and minus the polished depth returned; else ``-depth``."""
    return polish_checked_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth,
                                tol_abs, tol_rel, local_rad, np.nan)


@njit(inline="always")
def _same_bits(x, y):
    """The three numbers of x and y are the same, signs of zero included."""
    for k in range(3):
        if not (x[k] == y[k] and math.copysign(1.0, x[k]) == math.copysign(1.0, y[k])):
            return False
    return True


@njit(cache=True, nogil=True)
def polish_checked_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, tol_abs,
                         tol_rel, local_rad, least):
    """:func:`polish_checked`, given ``least``: :func:`check_mtd_least`'s least overlap for ``normal`` where that check
    held (NaN: not known). Where the polish leaves the normal as it was (bit for bit; then its depth is the overlap
    along it, computed as that check computed it), the polished answer's check would compare the same overlaps
    (the same neighbours and candidates) with the polished depth minus the tolerance, and the one along the normal
    with the polished depth itself: it is read from ``least``, the same answer without the overlaps again."""
    if not (_polishable(kind_a) and _polishable(kind_b)) or (kind_a == KIND_CYLINDER and kind_b == KIND_CYLINDER):
        return -depth                                   # (spheres, capsules, cones, two cylinders: not polished)
    tol = tol_abs + tol_rel * abs(depth)
    polished = np.empty(3)
    value = polish_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, normal, depth, polished)
    if not (value > 0.0 and value <= depth + tol):
        return -depth
    if not math.isnan(least) and _same_bits(polished, normal):
        if not least >= value - tol:
            return -depth
    elif not check_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, polished, value, tol,
                       local_rad):
        return -depth
    normal[0], normal[1], normal[2] = polished[0], polished[1], polished[2]
    return -value
