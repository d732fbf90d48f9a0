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
    best = -np.inf                                   # a convex vertex set
    for i in range(vertices.shape[0]):
        value = x * vertices[i, 0] + y * vertices[i, 1] + z * vertices[i, 2]
        if value > best:
            best = value
    return best + offset


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


@njit(cache=True, nogil=True)
def candidate_directions(kind_a, params_a, T_a, kind_b, params_b, T_b, extra, out):
    """Candidate MTD directions of the pair, both signs, written to ``out`` (MAX_CANDIDATES, 3); their count.

    ``extra`` (E, 3): more directions to include (E <= 1), e.g. coal's normal."""
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
    n0, n1, n2 = normal[0], normal[1], normal[2]
    value = _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n0, n1, n2)
    if not abs(value - depth) <= tol:
        return False
    floor = depth - tol
    near = np.empty((8, 3))
    for i in range(_pattern(n0, n1, n2, local_rad, near)):
        if not _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                        near[i, 0], near[i, 1], near[i, 2]) >= floor:     # (a NaN fails, as in numpy's min)
            return False
    dirs = np.empty((MAX_CANDIDATES, 3))
    for i in range(candidate_directions(kind_a, params_a, T_a, kind_b, params_b, T_b, np.empty((0, 3)), dirs)):
        if not _overlap(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b,
                        dirs[i, 0], dirs[i, 1], dirs[i, 2]) >= floor:
            return False
    return True


@njit(inline="always")
def _refine(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n, value, start, stop, out):
    """Pattern search on the sphere from unit n (overlap ``value``): the local minimum to ``out``; its overlap."""
    n0, n1, n2 = n[0], n[1], n[2]
    trial = np.empty((8, 3))
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
    return check_mtd(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, out[0], depth,
                     tol_abs + tol_rel * abs(depth), local_rad)


@njit(inline="always")
def _face_overlap(kind_o, params_o, vertices_o, T_o, T_f, offset, m0, m1, m2):
    """The overlap along a face's outward unit normal (m0, m1, m2) (world) of body f, pushing the other body o
    out through that face: ``offset + m . t_f`` (the face's plane: body f's support there) ``+ h_o(-m)``."""
    return offset + m0 * T_f[0, 3] + m1 * T_f[1, 3] + m2 * T_f[2, 3] + _support(kind_o, params_o, vertices_o, T_o,
                                                                                  -m0, -m1, -m2)


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
    the other a primitive, bounded by the primitive's support and the vertex set's witness point."""
    n0, n1, n2 = normal[0], normal[1], normal[2]
    best = np.inf
    refined = np.empty(3)
    dirs = np.empty((MAX_CANDIDATES, 3))
    m = candidate_directions(kind_a, params_a, T_a, kind_b, params_b, T_b, np.empty((0, 3)), dirs)
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
    d = np.empty(3)
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
            value = _face_overlap(kind_b, params_b, vertices_b, T_b, T_a, offsets_a[i - m], d0, d1, d2)
        else:
            value = _face_overlap(kind_a, params_a, vertices_a, T_a, T_b, offsets_b[i - m - n_faces_a], -d0, -d1, -d2)
        if not value - depth < margin:
            continue
        d[0], d[1], d[2] = d0, d1, d2
        value = _refine(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d, value, start, stop,
                        refined)
        if refined[0] * n0 + refined[1] * n1 + refined[2] * n2 < min_cos and value - depth < best:
            best = value - depth
    return best
