"""Compiled inner loops (numba) for kinematics, shape poses and culling.

Each kernel works on a batch of N configurations so the single and the batch
predicate share one code path. Arrays are float64, transforms are 4x4 and
``T_world_x`` names the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import JOINT_PRISMATIC as PRISMATIC, JOINT_REVOLUTE as REVOLUTE  # noqa: F401
# Slack added to every separating-axis comparison so that touching boxes are
# kept for the exact narrow phase (culling must never reject a contact).
SAT_EPSILON = 1e-9
# Generalised winding number above which a point is inside a closed mesh.
INSIDE_WINDING = 0.5
# Bounding spheres apart by less than this still go to the separating-axis test.
SPHERE_SLACK_M = 1e-6
SQRT3 = np.sqrt(3.0)


@njit(cache=True, fastmath=False)
def forward_kinematics(positions, mimic_matrix, mimic_offset, joint_kind, joint_axis,
                       link_parent, T_parent_origin, link_joint, T_world_link):
    """Fill T_world_link (N, L, 4, 4) for active positions (N, A).

    ``link_parent[k]`` is the parent index of link k (-1 for the root),
    ``T_parent_origin[k]`` the fixed joint origin, ``link_joint[k]`` the movable
    joint index moving link k (-1 for a held joint).
    """
    n_cfg = positions.shape[0]
    n_mov = mimic_matrix.shape[0]
    n_act = mimic_matrix.shape[1]
    n_links = link_parent.shape[0]
    values = np.empty(n_mov)
    motion = np.empty((4, 4))
    local = np.empty((4, 4))
    for c in range(n_cfg):
        for m in range(n_mov):
            v = mimic_offset[m]
            for a in range(n_act):
                v += mimic_matrix[m, a] * positions[c, a]
            values[m] = v
        for k in range(n_links):
            p = link_parent[k]
            j = link_joint[k]
            if j >= 0:
                for r in range(4):
                    for s in range(4):
                        motion[r, s] = 1.0 if r == s else 0.0
                x, y, z = joint_axis[j, 0], joint_axis[j, 1], joint_axis[j, 2]
                if joint_kind[j] == REVOLUTE:
                    sn = np.sin(values[j])
                    cs = np.cos(values[j])
                    t = 1.0 - cs
                    motion[0, 0] = t * x * x + cs
                    motion[0, 1] = t * x * y - sn * z
                    motion[0, 2] = t * x * z + sn * y
                    motion[1, 0] = t * x * y + sn * z
                    motion[1, 1] = t * y * y + cs
                    motion[1, 2] = t * y * z - sn * x
                    motion[2, 0] = t * x * z - sn * y
                    motion[2, 1] = t * y * z + sn * x
                    motion[2, 2] = t * z * z + cs
                else:
                    motion[0, 3] = values[j] * x
                    motion[1, 3] = values[j] * y
                    motion[2, 3] = values[j] * z
                for r in range(4):
                    for s in range(4):
                        acc = 0.0
                        for q in range(4):
                            acc += T_parent_origin[k, r, q] * motion[q, s]
                        local[r, s] = acc
            else:
                for r in range(4):
                    for s in range(4):
                        local[r, s] = T_parent_origin[k, r, s]
            if p < 0:
                for r in range(4):
                    for s in range(4):
                        T_world_link[c, k, r, s] = local[r, s]
            else:
                for r in range(4):
                    for s in range(4):
                        acc = 0.0
                        for q in range(4):
                            acc += T_world_link[c, p, r, q] * local[q, s]
                        T_world_link[c, k, r, s] = acc


@njit(cache=True)
def shape_poses(T_world_link, shape_link, T_frame_shape, T_world_shape):
    """Fill T_world_shape (N, S, 4, 4); shapes with ``shape_link < 0`` are world-fixed."""
    n_cfg = T_world_link.shape[0]
    for c in range(n_cfg):
        for s in range(shape_link.shape[0]):
            k = shape_link[s]
            if k < 0:
                for r in range(4):
                    for q in range(4):
                        T_world_shape[c, s, r, q] = T_frame_shape[s, r, q]
            else:
                for r in range(4):
                    for q in range(4):
                        acc = 0.0
                        for u in range(4):
                            acc += T_world_link[c, k, r, u] * T_frame_shape[s, u, q]
                        T_world_shape[c, s, r, q] = acc


@njit(cache=True)
def _obb_world(T, center, axes, out_center, out_axes):
    for r in range(3):
        acc = T[r, 3]
        for u in range(3):
            acc += T[r, u] * center[u]
        out_center[r] = acc
        for col in range(3):
            acc = 0.0
            for u in range(3):
                acc += T[r, u] * axes[u, col]
            out_axes[r, col] = acc


@njit(cache=True)
def _obb_overlap(ca, Aa, ha, cb, Ab, hb, margin, R, absR, t):
    """Separating-axis test of two oriented boxes, box A grown by ``margin``.

    ``R``, ``absR`` (3, 3) and ``t`` (3,) are scratch space.
    """
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for u in range(3):
                acc += Aa[u, i] * Ab[u, j]
            R[i, j] = acc
            absR[i, j] = abs(acc) + SAT_EPSILON
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += Aa[u, i] * (cb[u] - ca[u])
        t[i] = acc
    ea0 = ha[0] + margin
    ea1 = ha[1] + margin
    ea2 = ha[2] + margin
    for i in range(3):
        ea = ea0 if i == 0 else (ea1 if i == 1 else ea2)
        rb = hb[0] * absR[i, 0] + hb[1] * absR[i, 1] + hb[2] * absR[i, 2]
        if abs(t[i]) > ea + rb:
            return False
    for j in range(3):
        ra = ea0 * absR[0, j] + ea1 * absR[1, j] + ea2 * absR[2, j]
        proj = t[0] * R[0, j] + t[1] * R[1, j] + t[2] * R[2, j]
        if abs(proj) > ra + hb[j]:
            return False
    for i in range(3):
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        e1 = ea0 if i1 == 0 else (ea1 if i1 == 1 else ea2)
        e2 = ea0 if i2 == 0 else (ea1 if i2 == 1 else ea2)
        for j in range(3):
            j1 = (j + 1) % 3
            j2 = (j + 2) % 3
            ra = e1 * absR[i2, j] + e2 * absR[i1, j]
            rb = hb[j1] * absR[i, j2] + hb[j2] * absR[i, j1]
            proj = t[i2] * R[i1, j] - t[i1] * R[i2, j]
            if abs(proj) > ra + rb:
                return False
    return True


@njit(cache=True)
def obb_candidates(T_world_shape, obb_center, obb_axes, obb_half, pairs, margin, out):
    """out[c, p] = the bounding boxes of pair p may be within margin[p] at configuration c.

    The boxes' circumscribed spheres are compared first (box A grown by ``margin`` lies
    within its sphere grown by sqrt(3) * margin): pairs whose spheres are apart by more
    than ``SPHERE_SLACK_M`` are rejected without the separating-axis test, which only
    ever rejects pairs whose boxes are apart.
    """
    n_cfg = T_world_shape.shape[0]
    n_shapes = obb_center.shape[0]
    centers = np.empty((n_shapes, 3))
    axes = np.empty((n_shapes, 3, 3))
    radius = np.empty(n_shapes)
    R = np.empty((3, 3))
    absR = np.empty((3, 3))
    t = np.empty(3)
    for s in range(n_shapes):
        radius[s] = np.sqrt(obb_half[s, 0] ** 2 + obb_half[s, 1] ** 2 + obb_half[s, 2] ** 2)
    for c in range(n_cfg):
        for s in range(n_shapes):
            _obb_world(T_world_shape[c, s], obb_center[s], obb_axes[s], centers[s], axes[s])
        for p in range(pairs.shape[0]):
            a = pairs[p, 0]
            b = pairs[p, 1]
            dx = centers[b, 0] - centers[a, 0]
            dy = centers[b, 1] - centers[a, 1]
            dz = centers[b, 2] - centers[a, 2]
            reach = radius[a] + radius[b] + SQRT3 * margin[p] + SPHERE_SLACK_M
            if dx * dx + dy * dy + dz * dz > reach * reach:
                out[c, p] = False
            else:
                out[c, p] = _obb_overlap(centers[a], axes[a], obb_half[a], centers[b], axes[b],
                                         obb_half[b], margin[p], R, absR, t)


@njit(cache=True)
def point_in_box(point, box_center, box_axes, box_half) -> bool:
    """True when a point lies in an oriented box (centre, axes as columns, half extents), all in one frame."""
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += box_axes[u, i] * (point[u] - box_center[u])
        if abs(acc) > box_half[i]:
            return False
    return True


@njit(cache=True)
def contains_probe(T_world_outer, T_world_inner, probes_inner, obb_center, obb_axes, obb_half, triangles):
    """True when a probe point of the inner shape lies inside the closed outer mesh.

    Probes (K, 3) are in the inner shape's frame; the outer box (centre, axes,
    half extents) and triangles (T, 3, 3) in the outer shape's frame.
    """
    point_world = np.empty(3)
    point = np.empty(3)
    for k in range(probes_inner.shape[0]):
        for r in range(3):
            acc = T_world_inner[r, 3]
            for u in range(3):
                acc += T_world_inner[r, u] * probes_inner[k, u]
            point_world[r] = acc - T_world_outer[r, 3]
        for r in range(3):   # rotate into the outer frame: R_outer^T (p - t_outer)
            acc = 0.0
            for u in range(3):
                acc += T_world_outer[u, r] * point_world[u]
            point[r] = acc
        if point_in_box(point, obb_center, obb_axes, obb_half) and winding_number(point, triangles) > INSIDE_WINDING:
            return True
    return False


@njit(cache=True)
def winding_number(point, triangles):
    """Generalised winding number of a closed triangle mesh (T, 3, 3) at a point (3,).

    About 1 inside, 0 outside (solid angles summed, Van Oosterom and Strackee).
    """
    total = 0.0
    for t in range(triangles.shape[0]):
        ax = triangles[t, 0, 0] - point[0]
        ay = triangles[t, 0, 1] - point[1]
        az = triangles[t, 0, 2] - point[2]
        bx = triangles[t, 1, 0] - point[0]
        by = triangles[t, 1, 1] - point[1]
        bz = triangles[t, 1, 2] - point[2]
        cx = triangles[t, 2, 0] - point[0]
        cy = triangles[t, 2, 1] - point[1]
        cz = triangles[t, 2, 2] - point[2]
        la = np.sqrt(ax * ax + ay * ay + az * az)
        lb = np.sqrt(bx * bx + by * by + bz * bz)
        lc = np.sqrt(cx * cx + cy * cy + cz * cz)
        det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
        den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc \
            + (bx * cx + by * cy + bz * cz) * la + (cx * ax + cy * ay + cz * az) * lb
        total += 2.0 * np.arctan2(det, den)
    return total / (4.0 * np.pi)


@njit(cache=True)
def closest_point_on_triangles(point, triangles):
    """Nearest point (3,) to ``point`` on a set of triangles (T, 3, 3), and its triangle index.

    Per triangle: the Voronoi-region walk of Ericson, Real-Time Collision Detection, 5.1.5.
    """
    best = np.empty(3)
    candidate = np.empty(3)
    best_d2 = np.inf
    best_t = -1
    for t in range(triangles.shape[0]):
        a, b, c = triangles[t, 0], triangles[t, 1], triangles[t, 2]
        ab = b - a
        ac = c - a
        ap = point - a
        d1 = ab @ ap
        d2 = ac @ ap
        if d1 <= 0.0 and d2 <= 0.0:
            candidate[:] = a
        else:
            bp = point - b
            d3 = ab @ bp
            d4 = ac @ bp
            cp = point - c
            d5 = ab @ cp
            d6 = ac @ cp
            vc = d1 * d4 - d3 * d2
            vb = d5 * d2 - d1 * d6
            va = d3 * d6 - d5 * d4
            if d3 >= 0.0 and d4 <= d3:
                candidate[:] = b
            elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
                candidate[:] = a + (d1 / (d1 - d3)) * ab
            elif d6 >= 0.0 and d5 <= d6:
                candidate[:] = c
            elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
                candidate[:] = a + (d2 / (d2 - d6)) * ac
            elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
                w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
                candidate[:] = b + w * (c - b)
            else:
                denom = 1.0 / (va + vb + vc)
                candidate[:] = a + ab * (vb * denom) + ac * (vc * denom)
        diff = candidate - point
        dist2 = diff @ diff
        if dist2 < best_d2:
            best_d2 = dist2
            best[:] = candidate
            best_t = t
    return best, best_t


@njit(cache=True)
def thickness_along_lines(positions, cells, cell_bounds, triangles_by_cell, edges, inside_left, planes, z_extent):
    """Length inside a closed solid of the vertical line through each point (N, 2).

    The solid's upright triangles are binned in a grid (``cells[n]`` is point n's cell,
    ``triangles_by_cell[cell_bounds[c]:cell_bounds[c + 1]]`` the triangles of cell c).
    ``edges`` (F, 12): start x, start y, vector x, vector y of each triangle's three
    ordered edges; ``inside_left`` (F, 3): the inside is left of that edge; ``planes``
    (F, 8): a corner x, y, z, slopes dz/dx and dz/dy, lowest and highest z, and +1
    (exit, facing up) or -1 (entry). A pierced triangle adds its facing times its
    height; the sum is clipped to [0, z_extent]. Same arithmetic, in the same order,
    as the vectorised form it replaces in ``surfaces``.
    """
    n = positions.shape[0]
    out = np.zeros(n)
    for i in range(n):
        px = positions[i, 0]
        py = positions[i, 1]
        c = cells[i]
        total = 0.0
        for slot in range(cell_bounds[c], cell_bounds[c + 1]):
            t = triangles_by_cell[slot]
            inside = True
            for k in range(3):
                side = edges[t, 6 + k] * (py - edges[t, 3 + k]) - edges[t, 9 + k] * (px - edges[t, k])
                if (side >= 0.0) != inside_left[t, k]:
                    inside = False
                    break
            if inside:
                height = planes[t, 2] + planes[t, 3] * (px - planes[t, 0]) + planes[t, 4] * (py - planes[t, 1])
                height = min(max(height, planes[t, 5]), planes[t, 6])
                total += planes[t, 7] * height
        out[i] = min(max(total, 0.0), z_extent)
    return out


# Codes returned by single_configuration_candidates besides a candidate count (>= 0).
NON_FINITE = -1
OUT_OF_LIMITS_BASE = -2      # code OUT_OF_LIMITS_BASE - k: active joint k is outside its limits


@njit(cache=True)
def single_configuration_candidates(values, indices, current, check_limits, lower, upper,
                                    mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent,
                                    T_parent_origin, link_joint, shape_link, T_frame_shape, obb_center,
                                    obb_axes, obb_half, pairs, margins, q, T_world_link, T_world_shape,
                                    candidates, survivors):
    """One configuration from named values to the pairs that survive culling, in one call.

    ``values`` (K,) are the positions of the active joints ``indices`` (K,); the
    others keep ``current`` (A,). Fills ``q`` (1, A) with the complete configuration
    and, unless it is refused, ``T_world_link`` (1, L, 4, 4), ``T_world_shape``
    (1, S, 4, 4), ``candidates`` (1, P) as :func:`obb_candidates` and ``survivors``
    with the indices of the candidate pairs, in pair order.

    Returns the number of survivors, ``NON_FINITE`` when a value is NaN or infinite,
    or ``OUT_OF_LIMITS_BASE - k`` when active joint k (the first) is outside
    [lower, upper] and ``check_limits`` is set.
    """
    for k in range(values.shape[0]):
        if not np.isfinite(values[k]):
            return NON_FINITE
    for a in range(current.shape[0]):
        q[0, a] = current[a]
    for k in range(values.shape[0]):
        q[0, indices[k]] = values[k]
    if check_limits:
        for a in range(current.shape[0]):
            if q[0, a] < lower[a] or q[0, a] > upper[a]:
                return OUT_OF_LIMITS_BASE - a
    forward_kinematics(q, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
                       link_joint, T_world_link)
    shape_poses(T_world_link, shape_link, T_frame_shape, T_world_shape)
    obb_candidates(T_world_shape, obb_center, obb_axes, obb_half, pairs, margins, candidates)
    n = 0
    for p in range(pairs.shape[0]):
        if candidates[0, p]:
            survivors[n] = p
            n += 1
    return n


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel now, so that no request pays for it."""
    T = np.eye(4)[None, None].copy()
    forward_kinematics(np.zeros((1, 1)), np.ones((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int64),
                       np.array([[0.0, 0.0, 1.0]]), np.array([-1], dtype=np.int64), np.eye(4)[None].copy(),
                       np.array([0], dtype=np.int64), T)
    poses = np.empty((1, 2, 4, 4))
    shape_poses(T, np.array([0, -1], dtype=np.int64), np.stack([np.eye(4), np.eye(4)]), poses)
    out = np.empty((1, 1), dtype=np.bool_)
    obb_candidates(poses, np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]), np.ones((2, 3)),
                   np.array([[0, 1]], dtype=np.int64), np.zeros(1), out)
    triangles = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    contains_probe(np.eye(4), np.eye(4), np.zeros((1, 3)), np.zeros(3), np.eye(3), np.ones(3), triangles)
    closest_point_on_triangles(np.zeros(3), triangles)
    current = np.zeros(1)
    current.setflags(write=False)       # as PlanningScene.current_positions: one signature, compiled here
    single_configuration_candidates(np.zeros(1), np.zeros(1, dtype=np.int64), current, True, -np.ones(1),
                                    np.ones(1), np.ones((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int64),
                                    np.array([[0.0, 0.0, 1.0]]), np.array([-1], dtype=np.int64),
                                    np.eye(4)[None].copy(), np.array([0], dtype=np.int64),
                                    np.array([0, -1], dtype=np.int64), np.stack([np.eye(4), np.eye(4)]),
                                    np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]), np.ones((2, 3)),
                                    np.array([[0, 1]], dtype=np.int64), np.zeros(1), np.empty((1, 1)),
                                    np.empty((1, 1, 4, 4)), np.empty((1, 2, 4, 4)), np.empty((1, 1), dtype=np.bool_),
                                    np.empty(1, dtype=np.int64))
    thickness_along_lines(np.zeros((1, 2)), np.zeros(1, dtype=np.int64), np.array([0, 0], dtype=np.int64),
                          np.zeros(0, dtype=np.int64), np.zeros((1, 12)), np.zeros((1, 3), dtype=np.bool_),
                          np.zeros((1, 8)), 1.0)
