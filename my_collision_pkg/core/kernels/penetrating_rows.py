"""Compiled narrow phase of a clearance chunk's penetrating convex rows (numba), one call per step over all rows.

The clearance's rows whose hulls (or primitives) overlap went one by one through Python
(``checks.narrowphase.pair_contacts``, then the witness features), each step a compiled call of
its own. Here the same compiled functions run over every such row of a chunk in one call
(the first distance's penetrating answer is their start: the compiled EPA's, ``kernels.epa``, made in
``clearance_rows.first_distance_rows``, or coal's, made in Python, where that left the row):

- :func:`convex_penetration_rows`: per row, for a pair with a mesh, ``kernels.depth.pair_overlaps`` first
  (whether a surface point of either solid lies inside the other: ``narrowphase.regions_exist``); then
  coal's penetrating answer checked and polished to the exact local minimum of the overlap (the MTD), as
  ``narrowphase.hull_mtd`` does it
  (``kernels.mtd.polished_coal_answer``) for a pair with a mesh, or as ``narrowphase.checked_convex``
  does it (``kernels.mtd.check_mtd`` and ``polish_checked``) for two primitives; then the witness
  points where the two bodies' features meet and the switch margin
  (``kernels.support_features.feature_contact``, as ``clearance._feature_witness``).

The same functions on the same numbers: every row's answer is bit for bit the one of the per-row
calls. A row whose check fails (the MTD is searched then, in Python as before) is flagged, not
answered. Bodies come from per-world typed lists indexed by a slot per shape (see
``checks.clearance``); poses are ``T_world_shape[c, s]`` (N, S, 4, 4). Metres, planning frame.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.depth import pair_overlaps_along
from my_collision_pkg.core.kernels.mtd import check_mtd_least, polish_checked_least, polished_coal_answer
from my_collision_pkg.core.kernels.support_features import feature_contact

ROUTE_HULLS = 1         # a pair with a mesh: coal's answer on the hulls, polished_coal_answer
ROUTE_PRIMITIVES = 2    # two primitives: coal's answer on the shapes, checked_convex's check and polish
# what convex_penetration_rows made of a row
ROW_ANSWERED, ROW_NOT_CHECKED, ROW_NO_REGION = 1, 0, 2


@njit(cache=True, nogil=True)
def convex_penetration_rows(route, cfg, shape_a, shape_b, slot_a, slot_b, T_world_shape, bodies, distance, p0, p1,
                            hint, tol_abs, tol_rel, local_rad, feature_tolerance, disc_cos, disc_sin, crossing_slack,
                            switch_margin, same_basin_cos, basin_start, basin_stop, out_distance, out_points,
                            out_normal, out_kink, out_state):
    """The MTD and witness features of penetrating convex rows, each as the per-row Python path computes it.

    Parameters
    ----------
    route : (R,) int64, ROUTE_HULLS or ROUTE_PRIMITIVES.
    cfg, shape_a, shape_b : (R,) int64, each row's configuration in ``T_world_shape`` (N, S, 4, 4) and shapes.
    slot_a, slot_b : (R,) int64, the shapes' entries in ``bodies``: a typed list of (surface samples, solid,
        parts): the depth kernels' packs (``narrowphase.body_packs``) and the convex solid's (kind, params,
        vertices, unit face normals, offsets) (``witness_features.contact_parts``).
    distance, p0, p1, hint : (R,), (R, 3) x 3: coal's signed distance (< 0), witness points and normal.
    tol_abs, tol_rel, local_rad : the MTD check's tolerances (``penetration``).
    feature_tolerance ... basin_stop : ``feature_contact``'s constants (``witness_features``).
    out_distance (R,), out_points (R, 2, 3), out_normal (R, 3), out_kink (R,) bool : written for answered rows.
    out_state (R,) int8 : ROW_ANSWERED; ROW_NO_REGION where a ROUTE_HULLS row has no surface point of either
        solid inside the other (``kernels.depth.pair_overlaps`` false: ``narrowphase.regions_exist``, looked at
        first there); ROW_NOT_CHECKED where coal's answer fails the check (or its normal is not defined by its
        points): the caller measures these rows otherwise.
    """
    answer = np.empty((3, 3))
    n = np.empty(3)
    witness = np.empty((2, 3))
    for i in range(cfg.shape[0]):
        c, a, b = cfg[i], shape_a[i], shape_b[i]
        samples_a, solid_a, parts_a = bodies[slot_a[i]]
        samples_b, solid_b, parts_b = bodies[slot_b[i]]
        kind_a, params_a, vertices_a, faces_a, offsets_a = parts_a
        kind_b, params_b, vertices_b, faces_b, offsets_b = parts_b
        T_a = T_world_shape[c, a]
        T_b = T_world_shape[c, b]
        d = distance[i]
        out_state[i] = ROW_NOT_CHECKED
        if route[i] == ROUTE_HULLS:          # narrowphase.pair_contacts: regions_exist, then hull_mtd
            # (the overlap's normal from a to b: p1 = p0 - depth n, the two points more than 1e-12 apart)
            x0, x1, x2 = p0[i, 0] - p1[i, 0], p0[i, 1] - p1[i, 1], p0[i, 2] - p1[i, 2]
            norm = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
            if not pair_overlaps_along(samples_a, solid_a, T_a, samples_b, solid_b, T_b, x0 / norm, x1 / norm,
                                       x2 / norm):
                out_state[i] = ROW_NO_REGION
                continue
            if not polished_coal_answer(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, d,
                                        p0[i], p1[i], hint[i], tol_abs, tol_rel, local_rad, answer):
                continue
            d_out = answer[2, 0]
            for j in range(3):
                n[j] = answer[0, j]
                out_points[i, 0, j] = p0[i, j]
                out_points[i, 1, j] = answer[1, j]
        else:                                # narrowphase.checked_convex after pair_contacts's _unit_normal
            x0, x1, x2 = p1[i, 0] - p0[i, 0], p1[i, 1] - p0[i, 1], p1[i, 2] - p0[i, 2]
            norm = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
            if not (norm > 1e-12 and abs(d) > 1e-12):
                continue                     # (the normal from coal's hint: the Python path)
            signed = norm if d > 0.0 else -norm
            u0, u1, u2 = x0 / signed, x1 / signed, x2 / signed
            depth = -d                       # penetration.checked_mtd
            tol = tol_abs + tol_rel * abs(depth)
            length = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
            if not (length > 1e-12 and math.isfinite(depth)):
                continue
            n[0], n[1], n[2] = u0 / length, u1 / length, u2 / length
            ok, least = check_mtd_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n, depth,
                                        tol, local_rad)
            if not ok:
                continue
            depth = -polish_checked_least(kind_a, params_a, vertices_a, T_a, kind_b, params_b, vertices_b, T_b, n,
                                          depth, tol_abs, tol_rel, local_rad, least)
            d_out = -depth
            for j in range(3):
                out_points[i, 0, j] = p0[i, j]
                out_points[i, 1, j] = p0[i, j] - depth * n[j]
        out_state[i] = ROW_ANSWERED
        out_distance[i] = d_out
        for j in range(3):
            out_normal[i, j] = n[j]
        # clearance._feature_witness (the distance is negative here)
        found, margin = feature_contact(kind_a, params_a, vertices_a, T_a, faces_a, offsets_a, kind_b, params_b,
                                        vertices_b, T_b, faces_b, offsets_b, d_out, n, feature_tolerance, disc_cos,
                                        disc_sin, crossing_slack, switch_margin, same_basin_cos, basin_start,
                                        basin_stop, witness)
        if not found:
            out_kink[i] = True
        else:
            for j in range(3):
                out_points[i, 0, j] = witness[0, j]
                out_points[i, 1, j] = witness[1, j]
            out_kink[i] = not margin >= switch_margin


@njit(cache=True, nogil=True)
def unseen_shapes(rows, pair, pairs, slot):
    """Whether a shape of a row (``pairs[pair[rows]]``, (R,), (K,), (P, 2) int64) has ``slot`` -2 (not looked at
    yet: its body is not made)."""
    for i in range(rows.shape[0]):
        p = pair[rows[i]]
        if slot[pairs[p, 0]] == -2 or slot[pairs[p, 1]] == -2:
            return True
    return False


@njit(inline="always")
def _route(a, b, closed, bvh, slot):
    if slot[a] < 0 or slot[b] < 0:
        return 0
    if closed[a] or closed[b]:
        return ROUTE_HULLS
    if not bvh[a] and not bvh[b]:
        return ROUTE_PRIMITIVES
    return 0


@njit(cache=True, nogil=True)
def slow_convex_rows(slow, cfg, pair, pairs, closed, bvh, slot, overlapping, raw, p0, p1, T_world_shape, bodies, sane_m,
                     tol_abs, tol_rel, local_rad, feature_tolerance, disc_cos, disc_sin, crossing_slack, switch_margin,
                     same_basin_cos, basin_start, basin_stop, done, out_state, out_distance, out_points, out_normal,
                     out_subshapes, out_exact, out_deepest, out_kink):
    """The slow rows of a clearance chunk (``slow`` (R,) indices into its K candidate rows) that are penetrating
    convex pairs whose first distance is coal's penetrating answer, answered by :func:`convex_penetration_rows`
    from that answer; returns the other slow rows, in order.

    Parameters
    ----------
    slow : (R,) int64 rows; cfg, pair : (K,) int64 each row's configuration in ``T_world_shape`` and checked pair.
    pairs : (P, 2) int64 the checked shape pairs; closed, bvh : (S,) bool each shape is a closed mesh, a mesh.
    slot : (S,) int64 each shape's entry in ``bodies`` (as :func:`convex_penetration_rows`; negative: not a nearly
        convex solid). A row's route: ROUTE_HULLS where both shapes have an entry and one is a closed mesh,
        ROUTE_PRIMITIVES where both have one and neither is a mesh, none otherwise.
    overlapping : (K,) bool the hulls overlap (first distance not above the apart bound, sane).
    raw, p0, p1 : (K,), (K, 3), (K, 3) the rows' first signed distance and witness points: a row is taken when
        its distance is negative (coal's: the compiled GJK never gives one), every number of it is below
        ``sane_m`` in size, and, for ROUTE_HULLS (also overlapping), its points are more than 1e-12 apart and its
        distance more than 1e-12 in size (so that coal's normal, not kept, is not needed).
    tol_abs ... basin_stop : as :func:`convex_penetration_rows`.
    done : the state code of an answered row; out_state ... out_kink : the chunk's (K, ...) answers, written for
        the answered rows (state ``done``, subshapes -1, exact true, deepest false).
    """
    n = slow.shape[0]
    take = np.zeros(n, dtype=np.bool_)
    n_take = 0
    for i in range(n):
        k = slow[i]
        route = _route(pairs[pair[k], 0], pairs[pair[k], 1], closed, bvh, slot)
        d = raw[k]
        if route == 0 or not d < 0.0 or not abs(d) < sane_m:
            continue
        sane = True
        for j in range(3):
            sane = sane and abs(p0[k, j]) < sane_m and abs(p1[k, j]) < sane_m
        if not sane:
            continue
        if route == ROUTE_HULLS:
            x0, x1, x2 = p1[k, 0] - p0[k, 0], p1[k, 1] - p0[k, 1], p1[k, 2] - p0[k, 2]
            if not (overlapping[k] and math.sqrt(x0 * x0 + x1 * x1 + x2 * x2) > 1e-12 and abs(d) > 1e-12):
                continue
        take[i] = True
        n_take += 1
    rows = np.empty(n_take, dtype=np.int64)
    m = 0
    for i in range(n):
        if take[i]:
            rows[m] = slow[i]
            m += 1
    route = np.empty(n_take, dtype=np.int64)
    shape_a = np.empty(n_take, dtype=np.int64)
    shape_b = np.empty(n_take, dtype=np.int64)
    slot_a = np.empty(n_take, dtype=np.int64)
    slot_b = np.empty(n_take, dtype=np.int64)
    row_cfg = np.empty(n_take, dtype=np.int64)
    distance = np.empty(n_take)
    q0 = np.empty((n_take, 3))
    q1 = np.empty((n_take, 3))
    for i in range(n_take):
        k = rows[i]
        route[i] = _route(pairs[pair[k], 0], pairs[pair[k], 1], closed, bvh, slot)
        shape_a[i], shape_b[i] = pairs[pair[k], 0], pairs[pair[k], 1]
        slot_a[i], slot_b[i] = slot[shape_a[i]], slot[shape_b[i]]
        row_cfg[i] = cfg[k]
        distance[i] = raw[k]
        for j in range(3):
            q0[i, j] = p0[k, j]
            q1[i, j] = p1[k, j]
    d_out = np.empty(n_take)
    points = np.empty((n_take, 2, 3))
    normal = np.empty((n_take, 3))
    kink = np.zeros(n_take, dtype=np.bool_)
    state = np.zeros(n_take, dtype=np.int8)
    convex_penetration_rows(route, row_cfg, shape_a, shape_b, slot_a, slot_b, T_world_shape, bodies, distance, q0, q1,
                            np.zeros((n_take, 3)), tol_abs, tol_rel, local_rad, feature_tolerance, disc_cos, disc_sin,
                            crossing_slack, switch_margin, same_basin_cos, basin_start, basin_stop, d_out, points,
                            normal, kink, state)
    answered = np.zeros(n, dtype=np.bool_)
    m = 0
    for i in range(n):
        if not take[i]:
            continue
        t = m
        m += 1
        if state[t] != ROW_ANSWERED:
            continue
        answered[i] = True
        k = slow[i]
        out_state[k] = done
        out_distance[k] = d_out[t]
        for j in range(3):
            out_points[k, 0, j] = points[t, 0, j]
            out_points[k, 1, j] = points[t, 1, j]
            out_normal[k, j] = normal[t, j]
        out_subshapes[k, 0], out_subshapes[k, 1] = -1, -1
        out_exact[k] = True
        out_deepest[k] = False
        out_kink[k] = kink[t]
    n_left = 0
    for i in range(n):
        if not answered[i]:
            n_left += 1
    left = np.empty(n_left, dtype=np.int64)
    m = 0
    for i in range(n):
        if not answered[i]:
            left[m] = slow[i]
            m += 1
    return left
