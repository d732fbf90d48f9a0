"""Compiled culling (numba): which shape pairs may touch, and the one-configuration fast path.

:func:`obb_candidates` keeps the pairs whose oriented bounding boxes may lie within a
margin of each other (bounding spheres first, then the separating-axis test; it never
drops a pair that touches). :func:`single_configuration_candidates` runs one
configuration from named joint values through the limits check, the forward
kinematics, the shape poses and the culling in one call (the checker's fast path).
:func:`first_candidate_row` poses and culls a motion's samples one at a time (the bool
check's screen), with a convex pre-test (GJK's distance bound) of the pairs that survive;
:func:`first_candidate_row_packed` is the same call with its arguments that stay from one
motion to the next in one :class:`ScreenPack` (made by :func:`screen_pack`).

Arrays are float64; ``T_world_x`` (4, 4) is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.experimental import structref

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CYLINDER, KIND_SPHERE
from my_collision_pkg.core.kernels.gjk import ConvexArrays, lower_bound
from my_collision_pkg.core.kernels.kinematics import forward_kinematics, shape_poses

# Slack added to every separating-axis comparison so that touching boxes are
# kept for the exact narrow phase (culling must never reject a contact).
SAT_EPSILON = 1e-9
# Bounding spheres apart by less than this still go to the separating-axis test.
SPHERE_SLACK_M = 1e-6
SQRT3 = np.sqrt(3.0)
# first_candidate_row drops a candidate pair whose convex solids' certified distance bound is at
# least its margin plus this (metres): far above the tolerances of fcl's contact test and
# coal's distance, which decide the pair otherwise.
SCREEN_SLACK_M = 1e-5
# ... and stops GJK once its lower and upper bounds are within this many metres plus
# SCREEN_GJK_RELATIVE of the bound: the screen needs only "beyond the margin or not", so a
# loose search suffices (a pair it cannot settle is kept for the narrow phase).
SCREEN_GJK_EPS_M = 1e-4
SCREEN_GJK_RELATIVE = 0.05
# first_candidate_row_packed calls a candidate pair colliding, without the caller's narrow
# phase, when a point of one shape's own surface (a mesh's hull vertex, which is one of its
# vertices, or a box's corner) lies at least this deep (metres) inside the other, a box, sphere
# or cylinder (solids): the two then overlap, whatever the padding (>= 0).
SCREEN_INSIDE_M = 1e-4


@njit(inline="always")
def _obb_world_at(T_world_shape, c, s, obb_center, obb_axes, out_center, out_axes):
    """Shape ``s``'s bounding box (centre, axes as columns) from its frame to the planning frame at configuration
    ``c``, into ``out_center[s]``, ``out_axes[s]``: on the arrays themselves, no view made (each view costs its array
    a reference count up and down)."""
    for r in range(3):
        acc = T_world_shape[c, s, r, 3]
        for u in range(3):
            acc += T_world_shape[c, s, r, u] * obb_center[s, u]
        out_center[s, r] = acc
    for r in range(3):
        for col in range(3):
            acc = 0.0
            for u in range(3):
                acc += T_world_shape[c, s, r, u] * obb_axes[s, u, col]
            out_axes[s, r, col] = acc


@njit(inline="always")
def _obb_overlap_at(centers, axes, half, a, b, margin, R, absR, t):
    """Separating-axis test of oriented boxes ``a`` and ``b`` (rows of ``centers`` (S, 3), ``axes`` (S, 3, 3) as
    columns, ``half`` (S, 3) half extents), box a grown by ``margin``; on the arrays themselves (no view made).
    ``R``, ``absR`` (3, 3) and ``t`` (3,) are scratch space."""
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for u in range(3):
                acc += axes[a, u, i] * axes[b, u, j]
            R[i, j] = acc
            absR[i, j] = abs(acc) + SAT_EPSILON
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += axes[a, u, i] * (centers[b, u] - centers[a, u])
        t[i] = acc
    ea0 = half[a, 0] + margin
    ea1 = half[a, 1] + margin
    ea2 = half[a, 2] + margin
    for i in range(3):
        ea = ea0 if i == 0 else (ea1 if i == 1 else ea2)
        rb = half[b, 0] * absR[i, 0] + half[b, 1] * absR[i, 1] + half[b, 2] * absR[i, 2]
        if abs(t[i]) > ea + rb:
            return False
    for j in range(3):
        ra = ea0 * absR[0, j] + ea1 * absR[1, j] + ea2 * absR[2, j]
        proj = t[0] * R[0, j] + t[1] * R[1, j] + t[2] * R[2, j]
        if abs(proj) > ra + half[b, j]:
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
            rb = half[b, j1] * absR[i, j2] + half[b, j2] * absR[i, j1]
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
            _obb_world_at(T_world_shape, c, s, obb_center, obb_axes, centers, axes)
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
                out[c, p] = _obb_overlap_at(centers, axes, obb_half, a, b, margin[p], R, absR, t)



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
    return posed_survivors(q, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
                           link_joint, shape_link, T_frame_shape, obb_center, obb_axes, obb_half, pairs, margins,
                           T_world_link, T_world_shape, candidates, survivors)


@njit(cache=True)
def posed_survivors(q, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin, link_joint,
                    shape_link, T_frame_shape, obb_center, obb_axes, obb_half, pairs, margins, T_world_link,
                    T_world_shape, candidates, survivors):
    """The configuration ``q`` (1, A) posed (``T_world_link``, ``T_world_shape``) and culled
    (``candidates`` (1, P) as :func:`obb_candidates`): the number n of candidate pairs, their
    indices in ``survivors[:n]``, in pair order."""
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


@njit(cache=True)
def _cull_posed_row(T_world_shape, obb_center, obb_axes, obb_half, pairs, margins, radius, centers, axes, axes_ready,
                    R, absR, t, candidates, survivors):
    """:func:`obb_candidates` of the one configuration posed in ``T_world_shape`` (1, S, 4, 4),
    with the same answers, into ``candidates`` (1, P) and the candidate pairs' indices into
    ``survivors``; returns their number.

    The separating-axis test is :func:`_obb_overlap_at`'s in the same arithmetic, written out in
    the loop (a helper handed these arrays costs numba reference counts per call, which
    here cost as much as the test), reading the boxes by index, and with the rotation
    between the boxes computed a row at a time as box A's face axes need it: most pairs
    past the sphere test are told apart by the first of those. A shape's box axes are
    turned to the planning frame only when one of its pairs passes the sphere test.
    ``radius`` (S,): the boxes' circumscribed radii; ``centers`` (S, 3), ``axes`` (S, 3, 3),
    ``axes_ready`` (S,) bool, ``R``, ``absR`` (3, 3) and ``t`` (3,): scratch.
    """
    n_shapes = obb_center.shape[0]
    for s in range(n_shapes):
        for r in range(3):
            acc = T_world_shape[0, s, r, 3]
            for u in range(3):
                acc += T_world_shape[0, s, r, u] * obb_center[s, u]
            centers[s, r] = acc
        axes_ready[s] = False
    n = 0
    for p in range(pairs.shape[0]):
        a = pairs[p, 0]
        b = pairs[p, 1]
        margin = margins[p]
        dx = centers[b, 0] - centers[a, 0]
        dy = centers[b, 1] - centers[a, 1]
        dz = centers[b, 2] - centers[a, 2]
        reach = radius[a] + radius[b] + SQRT3 * margin + SPHERE_SLACK_M
        keep = False
        if not dx * dx + dy * dy + dz * dz > reach * reach:
            for side in range(2):
                s = a if side == 0 else b
                if not axes_ready[s]:
                    for r in range(3):
                        for col in range(3):
                            acc = 0.0
                            for u in range(3):
                                acc += T_world_shape[0, s, r, u] * obb_axes[s, u, col]
                            axes[s, r, col] = acc
                    axes_ready[s] = True
            ea0 = obb_half[a, 0] + margin
            ea1 = obb_half[a, 1] + margin
            ea2 = obb_half[a, 2] + margin
            hb0 = obb_half[b, 0]
            hb1 = obb_half[b, 1]
            hb2 = obb_half[b, 2]
            separated = False
            for i in range(3):                       # box A's face axes
                for j in range(3):
                    acc = 0.0
                    for u in range(3):
                        acc += axes[a, u, i] * axes[b, u, j]
                    R[i, j] = acc
                    absR[i, j] = abs(acc) + SAT_EPSILON
                acc = 0.0
                for u in range(3):
                    acc += axes[a, u, i] * (centers[b, u] - centers[a, u])
                t[i] = acc
                ea = ea0 if i == 0 else (ea1 if i == 1 else ea2)
                rb = hb0 * absR[i, 0] + hb1 * absR[i, 1] + hb2 * absR[i, 2]
                if abs(t[i]) > ea + rb:
                    separated = True
                    break
            if not separated:
                for j in range(3):                   # box B's face axes
                    ra = ea0 * absR[0, j] + ea1 * absR[1, j] + ea2 * absR[2, j]
                    proj = t[0] * R[0, j] + t[1] * R[1, j] + t[2] * R[2, j]
                    hb = hb0 if j == 0 else (hb1 if j == 1 else hb2)
                    if abs(proj) > ra + hb:
                        separated = True
                        break
            if not separated:
                for k in range(9):                   # the edges' cross products
                    i = k // 3
                    j = k % 3
                    i1 = (i + 1) % 3
                    i2 = (i + 2) % 3
                    e1 = ea0 if i1 == 0 else (ea1 if i1 == 1 else ea2)
                    e2 = ea0 if i2 == 0 else (ea1 if i2 == 1 else ea2)
                    j1 = (j + 1) % 3
                    j2 = (j + 2) % 3
                    h1 = hb0 if j1 == 0 else (hb1 if j1 == 1 else hb2)
                    h2 = hb0 if j2 == 0 else (hb1 if j2 == 1 else hb2)
                    ra = e1 * absR[i2, j] + e2 * absR[i1, j]
                    rb = h1 * absR[i, j2] + h2 * absR[i, j1]
                    proj = t[i2] * R[i1, j] - t[i1] * R[i2, j]
                    if abs(proj) > ra + rb:
                        separated = True
                        break
            keep = not separated
        candidates[0, p] = keep
        if keep:
            survivors[n] = p
            n += 1
    return n


@njit(cache=True, inline="always")
def _inside_solid(kind, p0, p1, p2, x, y, z, depth):
    """Whether the point (x, y, z) (the solid's frame) lies at least ``depth`` inside a box (half
    extents p0, p1, p2), sphere (radius p0) or cylinder (radius p0, half length p1 along z); False
    for any other kind."""
    if kind == KIND_BOX:
        return abs(x) <= p0 - depth and abs(y) <= p1 - depth and abs(z) <= p2 - depth
    if kind == KIND_SPHERE:
        r = p0 - depth
        return r > 0.0 and x * x + y * y + z * z <= r * r
    if kind == KIND_CYLINDER:
        r = p0 - depth
        return r > 0.0 and x * x + y * y <= r * r and abs(z) <= p1 - depth
    return False


@njit(cache=True)
def surface_point_inside(convex, m, T_m, s, T_s, depth):
    """Whether a point of shape m's own surface (its hull vertices, which are its mesh's vertices,
    or a box's 8 corners; ``convex`` a :class:`gjk.ConvexArrays`) at pose ``T_m`` (4, 4) lies at
    least ``depth`` metres inside shape s (a box, sphere or cylinder) at pose ``T_s``: then the two
    shapes overlap."""
    kind_s = convex.kind[s]
    if not (kind_s == KIND_BOX or kind_s == KIND_SPHERE or kind_s == KIND_CYLINDER):
        return False
    p0, p1, p2 = convex.params[s, 0], convex.params[s, 1], convex.params[s, 2]
    first, last = convex.vertex_start[m], convex.vertex_start[m + 1]
    corners = convex.kind[m] == KIND_BOX and last == first
    n = 8 if corners else last - first
    for i in range(n):
        if corners:
            x = convex.params[m, 0] if i & 1 else -convex.params[m, 0]
            y = convex.params[m, 1] if i & 2 else -convex.params[m, 1]
            z = convex.params[m, 2] if i & 4 else -convex.params[m, 2]
        else:
            x, y, z = convex.vertices[first + i, 0], convex.vertices[first + i, 1], convex.vertices[first + i, 2]
        wx = T_m[0, 0] * x + T_m[0, 1] * y + T_m[0, 2] * z + T_m[0, 3] - T_s[0, 3]
        wy = T_m[1, 0] * x + T_m[1, 1] * y + T_m[1, 2] * z + T_m[1, 3] - T_s[1, 3]
        wz = T_m[2, 0] * x + T_m[2, 1] * y + T_m[2, 2] * z + T_m[2, 3] - T_s[2, 3]
        if _inside_solid(kind_s, p0, p1, p2, T_s[0, 0] * wx + T_s[1, 0] * wy + T_s[2, 0] * wz,
                         T_s[0, 1] * wx + T_s[1, 1] * wy + T_s[2, 1] * wz,
                         T_s[0, 2] * wx + T_s[1, 2] * wy + T_s[2, 2] * wz, depth):
            return True
    return False


@njit(cache=True)
def first_candidate_row(rows, start, lower, upper, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent,
                        T_parent_origin, link_joint, shape_link, T_frame_shape, obb_center, obb_axes, obb_half, pairs,
                        margins, q, T_world_link, T_world_shape, candidates, survivors, convex_tuple, measurable,
                        warm):
    """The first row r >= ``start`` of ``rows`` (N, A), complete configurations, at which a pair
    survives culling and a convex pre-test, one row at a time (rows after it are not posed).

    Each row is posed (``q[0]`` its copy, ``T_world_link``, ``T_world_shape``) and culled as
    :func:`single_configuration_candidates` culls (:func:`_cull_posed_row`, the same answers
    as :func:`obb_candidates`). A surviving pair p whose two shapes have convex solids
    (``measurable[p]``: primitives, convex meshes, meshes' convex hulls, each containing its
    shape; ``convex_tuple`` the world's :class:`gjk.ConvexArrays` as a plain tuple) gets
    :func:`gjk.lower_bound` of their distance at the row's poses; when that bound is at least
    ``margins[p] + SCREEN_SLACK_M`` the shapes are farther apart than the margin (a hull
    contains its mesh, so a body inside a closed mesh makes the bound <= 0), so the pair
    cannot collide and is dropped (``candidates[0, p]`` cleared).

    Returns (r, n) for the first row with a pair left, with ``survivors[:n]`` those pairs in
    pair order and the buffers filled for row r, or (-1, 0). ``lower`` and ``upper`` are not
    read (the arguments after the configuration are :func:`single_configuration_candidates`');
    ``warm`` (P, 3): per pair, the last GJK direction (any values; kept between calls, it
    only speeds the search up).
    """
    r, n, _ = _first_candidate_row(rows, start, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent,
                                   T_parent_origin, link_joint, shape_link, T_frame_shape, obb_center, obb_axes,
                                   obb_half, pairs, margins, q, T_world_link, T_world_shape, candidates, survivors,
                                   convex_tuple, measurable, warm, False)
    return r, n


@njit(cache=True)
def _first_candidate_row(rows, start, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent,
                         T_parent_origin, link_joint, shape_link, T_frame_shape, obb_center, obb_axes, obb_half, pairs,
                         margins, q, T_world_link, T_world_shape, candidates, survivors, convex_tuple, measurable,
                         warm, certify):
    """:func:`first_candidate_row`, returning (r, n, overlap): with ``certify``, a kept pair whose
    GJK bound is <= 0 and one of whose shapes has a surface point ``SCREEN_INSIDE_M`` inside the
    other (:func:`surface_point_inside`) returns at once with ``overlap`` True (the row collides;
    ``survivors[:n]`` then hold the pairs kept before it and that pair last)."""
    convex = ConvexArrays(*convex_tuple)
    n_shapes = obb_center.shape[0]
    radius = np.empty(n_shapes)
    for s in range(n_shapes):
        radius[s] = np.sqrt(obb_half[s, 0] ** 2 + obb_half[s, 1] ** 2 + obb_half[s, 2] ** 2)
    centers = np.empty((n_shapes, 3))
    axes = np.empty((n_shapes, 3, 3))
    axes_ready = np.empty(n_shapes, dtype=np.bool_)
    R = np.empty((3, 3))
    absR = np.empty((3, 3))
    t = np.empty(3)
    for r in range(start, rows.shape[0]):
        for a in range(rows.shape[1]):
            q[0, a] = rows[r, a]
        forward_kinematics(q, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
                           link_joint, T_world_link)
        shape_poses(T_world_link, shape_link, T_frame_shape, T_world_shape)
        n = _cull_posed_row(T_world_shape, obb_center, obb_axes, obb_half, pairs, margins, radius, centers, axes,
                            axes_ready, R, absR, t, candidates, survivors)
        kept = 0
        for i in range(n):
            p = survivors[i]
            if measurable[p]:
                a = pairs[p, 0]
                b = pairs[p, 1]
                bound = lower_bound(convex, a, T_world_shape[0, a], b, T_world_shape[0, b], warm[p], SCREEN_GJK_EPS_M,
                                    SCREEN_GJK_RELATIVE)
                if bound >= margins[p] + SCREEN_SLACK_M:
                    candidates[0, p] = False
                    continue
                if certify and bound <= 0.0 and margins[p] >= 0.0 and (
                        surface_point_inside(convex, a, T_world_shape[0, a], b, T_world_shape[0, b], SCREEN_INSIDE_M)
                        or surface_point_inside(convex, b, T_world_shape[0, b], a, T_world_shape[0, a],
                                                SCREEN_INSIDE_M)):
                    survivors[kept] = p
                    return r, kept + 1, True
            survivors[kept] = p
            kept += 1
        if kept > 0:
            return r, kept, False
    return -1, 0, False


# The fields of a ScreenPack: first_candidate_row's arguments after (rows, start), which stay
# the same from one screen to the next for one snapshot, selection and thread
SCREEN_FIELDS = ("lower", "upper", "mimic_matrix", "mimic_offset", "joint_kind", "joint_axis", "link_parent",
                 "T_parent_origin", "link_joint", "shape_link", "T_frame_shape", "obb_center", "obb_axes", "obb_half",
                 "pairs", "margins", "q", "T_world_link", "T_world_shape", "candidates", "survivors", "convex",
                 "measurable", "warm")


@structref.register
class ScreenPackType(types.StructRef):
    """The numba type of a :class:`ScreenPack`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class ScreenPack(structref.StructRefProxy):
    """:func:`first_candidate_row`'s arguments after ``(rows, start)`` (:data:`SCREEN_FIELDS`: the
    kinematics, the shapes' boxes, the selection's pairs and margins, this thread's buffers, the
    convex solids and GJK directions) as one object, made by :func:`screen_pack`. It holds the
    arrays themselves (the kernel's writes land in the caller's buffers). Passed as one argument
    it is typed and unboxed once per call instead of its 24 arrays and a tuple of 8 (about 2.5-7
    us a call on the 2-core VM, most of a short screen's cost)."""


structref.define_proxy(ScreenPack, ScreenPackType, list(SCREEN_FIELDS))


@njit(cache=True)
def screen_pack(lower, upper, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
                link_joint, shape_link, T_frame_shape, obb_center, obb_axes, obb_half, pairs, margins, q, T_world_link,
                T_world_shape, candidates, survivors, convex, measurable, warm):
    """A :class:`ScreenPack` of these (:func:`first_candidate_row`'s arguments after ``start``;
    compiled and cached, so that making one compiles nothing in a process that has warmed up)."""
    return ScreenPack(lower, upper, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
                      link_joint, shape_link, T_frame_shape, obb_center, obb_axes, obb_half, pairs, margins, q,
                      T_world_link, T_world_shape, candidates, survivors, convex, measurable, warm)


@njit(cache=True)
def first_candidate_row_packed(rows, start, pack):
    """:func:`first_candidate_row` (rows, start, and the arguments ``pack`` holds), returning (r, n,
    overlap): ``overlap`` True when a kept pair of row r certainly collides (a surface point of one
    shape at least ``SCREEN_INSIDE_M`` inside the other, a box, sphere or cylinder: see
    :func:`_first_candidate_row`), so that the caller needs no narrow phase to call row r colliding;
    else the same returns and writes as :func:`first_candidate_row`."""
    return _first_candidate_row(rows, start, pack.mimic_matrix, pack.mimic_offset, pack.joint_kind, pack.joint_axis,
                                pack.link_parent, pack.T_parent_origin, pack.link_joint, pack.shape_link,
                                pack.T_frame_shape, pack.obb_center, pack.obb_axes, pack.obb_half, pack.pairs,
                                pack.margins, pack.q, pack.T_world_link, pack.T_world_shape, pack.candidates,
                                pack.survivors, pack.convex, pack.measurable, pack.warm, True)
