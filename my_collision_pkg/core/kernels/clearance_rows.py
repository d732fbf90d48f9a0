"""Compiled per-row work of a clearance answer (numba): sphere culling, apart rows, Jacobian rows, body-frame points.

For every candidate row of a chunk at once, what ``checks.clearance`` computed with numpy
operations per chunk: :func:`sphere_gaps` (the bounding spheres' distances that cull rows),
:func:`settle_first_distances` (which rows the first distance culls, which are apart and
their witness points and normal, which go to the narrow phase), :func:`check_on_meshes`
(whether the hull witness points of apart mesh rows lie on their meshes) and
:func:`jacobian_and_local_points` (the Jacobian row ``n . (v_1(p1) - v_0(p0))`` over the
movable joints and each witness point in its body's own frame).

A chunk calls them through four kernels, so that a one-configuration request pays few
dispatches (numba's costs about 0.2 us per array argument, and as much per array returned):
:func:`candidate_rows` (completion, limits, forward kinematics, shape poses, box and sphere
culling), :func:`first_distance_rows` (the compiled GJK's first distances), :func:`settle_rows`
(apart rows and the on-mesh check) and :func:`finish_rows` (row order, Jacobian rows,
body-frame points), each taking the world's and the selection's arrays packed in two
(:func:`pack_world`, :func:`pack_row_world`, :func:`pack_row_pairs`).

The numbers are those numpy gave, bit for bit: every product and sum is written in the
order numpy's calls made them on this build (numpy's ``einsum`` over a contiguous axis of
three sums the first and the third term first, then the second; over a strided axis, in
order), and there is no fused multiply-add (``fastmath`` off). Arrays are float64, metres;
``T_world_x`` (4, 4) is the pose of ``x`` in the planning frame; link -1 is the world.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.apart_ties import joint_step_closes, stepped_ties
from my_collision_pkg.core.kernels.culling import obb_candidates
from my_collision_pkg.core.kernels.epa import CURVED_EPS_M, expand_tetrahedra, penetration_distances
from my_collision_pkg.core.kernels.gjk import (ConvexArrays, cylinder_end_distances, cylinder_side_distances,
                                              hull_distances, vertex_support)
from my_collision_pkg.core.kernels.kinematics import forward_kinematics, shape_poses
from my_collision_pkg.core.kernels.mesh_queries import closest_on_triangle
from my_collision_pkg.core.kernels.penetrating_rows import slow_convex_rows
from my_collision_pkg.core.kernels.witness_check import project_onto_meshes

# Codes candidate_rows returns instead of a row count: a value is NaN or infinite, or a configuration is
# outside the joint limits (the caller's own path then names the fault).
CANDIDATES_NON_FINITE = -1
CANDIDATES_OUT_OF_LIMITS = -2


@njit(cache=True, fastmath=False)
def jacobian_and_local_points(T_world_link, cfg, shape_pair, shape_link, owner_link, owner_offset, child_link, axis,
                              prismatic, chain, points, normals, jacobians, out_jacobian, out_local):
    """Jacobian rows over the movable joints and body-frame witness points of R rows.

    Parameters
    ----------
    T_world_link : (C, L, 4, 4) link poses of the chunk's configurations.
    cfg : (R,) int64, each row's configuration in ``T_world_link``.
    shape_pair : (R, 2) int64, each row's two shapes (body 0, body 1).
    shape_link : (S,) int64, the link that carries each shape (-1: the world).
    owner_link : (S,) int64, the link each shape's body frame is fixed to (-1: the world).
    owner_offset : (S, 4, 4) each shape's body frame in its owner link's frame; read only for the
        world (link -1). A body on a link must have its link's frame (a robot link): the caller
        computes rows with any other body frame (an object attached with an offset) another way.
    child_link : (M,) int64, the link each movable joint moves directly.
    axis : (M, 3) each movable joint's axis in its child link's frame.
    prismatic : (M,) bool, per movable joint.
    chain : (L + 1, M) float, 1.0 where joint m moves link l (row L, picked by link -1: zeros).
    points : (R, 2, 3) witness points (planning frame), body 0 then body 1.
    normals : (R, 3) unit normals from body 0 to body 1.
    jacobians : bool, False: ``out_jacobian`` is not written.
    out_jacobian : (R, M) written: ``sum over the two points of sign * n . d point / d m`` (+ point 1,
        - point 0); revolute ``(p - o) . (n x a)``, prismatic ``n . a``, zero for joints not moving the link.
    out_local : (R, 2, 3) written: each witness point in its body's frame.
    """
    n_rows = cfg.shape[0]
    n_mov = child_link.shape[0]
    world_row = chain.shape[0] - 1
    for r in range(n_rows):
        c = cfg[r]
        n0, n1, n2 = normals[r, 0], normals[r, 1], normals[r, 2]
        if jacobians:
            l1 = shape_link[shape_pair[r, 1]]
            l0 = shape_link[shape_pair[r, 0]]
            l1 = l1 if l1 >= 0 else world_row
            l0 = l0 if l0 >= 0 else world_row
            for m in range(n_mov):
                T = T_world_link[c, child_link[m]]
                # the axis in the planning frame (numpy's einsum over j: terms 0 and 2, then 1)
                a0 = (T[0, 0] * axis[m, 0] + T[0, 2] * axis[m, 2]) + T[0, 1] * axis[m, 1]
                a1 = (T[1, 0] * axis[m, 0] + T[1, 2] * axis[m, 2]) + T[1, 1] * axis[m, 1]
                a2 = (T[2, 0] * axis[m, 0] + T[2, 2] * axis[m, 2]) + T[2, 1] * axis[m, 1]
                if prismatic[m]:
                    v1 = (n0 * a0 + n2 * a2) + n1 * a1
                    v0 = v1
                else:
                    c0 = n1 * a2 - n2 * a1
                    c1 = n2 * a0 - n0 * a2
                    c2 = n0 * a1 - n1 * a0
                    v1 = ((points[r, 1, 0] - T[0, 3]) * c0 + (points[r, 1, 1] - T[1, 3]) * c1) \
                        + (points[r, 1, 2] - T[2, 3]) * c2
                    v0 = ((points[r, 0, 0] - T[0, 3]) * c0 + (points[r, 0, 1] - T[1, 3]) * c1) \
                        + (points[r, 0, 2] - T[2, 3]) * c2
                total = 0.0 + (1.0 * v1) * chain[l1, m]
                out_jacobian[r, m] = total + (-1.0 * v0) * chain[l0, m]
        for s in range(2):
            k = owner_link[shape_pair[r, s]]
            if k < 0:
                T = owner_offset[shape_pair[r, s]]
            else:
                T = T_world_link[c, k]
            d0 = points[r, s, 0] - T[0, 3]
            d1 = points[r, s, 1] - T[1, 3]
            d2 = points[r, s, 2] - T[2, 3]
            for i in range(3):
                out_local[r, s, i] = (T[0, i] * d0 + T[1, i] * d1) + T[2, i] * d2


@njit(cache=True, fastmath=False)
def sphere_gaps(T_world_shape, cfg, a, b, centre, radius, out_gap):
    """The distance between two shapes' bounding spheres, negative when they overlap, for K rows
    (what ``narrowphase.bounding_sphere_gaps`` computed with numpy's einsum and norm, bit for bit).

    Parameters
    ----------
    T_world_shape : (N, S, 4, 4) every shape's pose at N configurations.
    cfg, a, b : (K,) int64, row k: shapes ``a[k]`` and ``b[k]`` at configuration ``cfg[k]``.
    centre : (S, 3) each bounding sphere's centre in its shape's frame; radius : (S,) its radius.
    out_gap : (K,) written.
    """
    for k in range(cfg.shape[0]):
        out_gap[k] = _sphere_gap(T_world_shape, cfg[k], a[k], b[k], centre, radius)


@njit(cache=True, fastmath=False, inline="always")
def _sphere_gap(T_world_shape, c, a, b, centre, radius):
    """The bounding spheres' gap of shapes a and b at configuration c (see :func:`sphere_gaps`)."""
    Ta = T_world_shape[c, a]
    Tb = T_world_shape[c, b]
    ca, cb = centre[a], centre[b]
    s = 0.0
    for i in range(3):
        xa = ((Ta[i, 0] * ca[0] + Ta[i, 2] * ca[2]) + Ta[i, 1] * ca[1]) + Ta[i, 3]
        xb = ((Tb[i, 0] * cb[0] + Tb[i, 2] * cb[2]) + Tb[i, 1] * cb[1]) + Tb[i, 3]
        d = xb - xa
        s = d * d if i == 0 else s + d * d          # numpy's norm: (x0^2 + x1^2) + x2^2
    return (np.sqrt(s) - radius[a]) - radius[b]


def pack_world(lower, upper, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
               link_joint, shape_link, T_frame_shape, obb_center, obb_axes, obb_half, centre, radius):
    """The per-world arrays :func:`candidate_rows` reads, as two flat arrays (floats, ints), so that a call
    passes two arrays, not sixteen (numba's dispatch costs about 0.2 us per array argument).

    Parameters
    ----------
    lower, upper : (A,) joint limits; mimic_matrix (M, A), mimic_offset (M,), joint_kind (M,), joint_axis (M, 3),
        link_parent (L,), T_parent_origin (L, 4, 4), link_joint (L,): the robot's ``kinematics_arrays``;
        shape_link (S,), T_frame_shape (S, 4, 4): the world's shape placement; obb_center (S, 3),
        obb_axes (S, 3, 3), obb_half (S, 3): the shapes' boxes; centre (S, 3), radius (S,): their spheres.

    Returns
    -------
    floats : float64, every float array above in this order, flattened (C order); ints : int64, (A, M, L, S)
        then joint_kind, link_parent, link_joint and shape_link.
    """
    n_act, n_mov, n_links, n_shapes = len(lower), len(mimic_offset), len(link_parent), len(shape_link)
    floats = np.concatenate([np.ascontiguousarray(x, dtype=np.float64).ravel() for x in (
        lower, upper, mimic_matrix, mimic_offset, joint_axis, T_parent_origin, T_frame_shape, obb_center, obb_axes,
        obb_half, centre, radius)])
    ints = np.concatenate([np.array([n_act, n_mov, n_links, n_shapes], dtype=np.int64)]
                          + [np.ascontiguousarray(x, dtype=np.int64).ravel()
                             for x in (joint_kind, link_parent, link_joint, shape_link)])
    return floats, ints


def pose_sizes(ints, n_cfg: int) -> tuple[int, int, int]:
    """The lengths of q (N, A), T_world_link (N, L, 4, 4) and T_world_shape (N, S, 4, 4) in
    :func:`candidate_rows`'s ``poses`` for N configurations of the world ``ints`` describes."""
    return n_cfg * int(ints[0]), n_cfg * int(ints[2]) * 16, n_cfg * int(ints[3]) * 16


@njit(cache=True, fastmath=False)
def candidate_rows(values, indices, current, check_limits, floats, ints, pairs, thresholds, poses, rows):
    """N configurations from named values to the candidate rows of a clearance chunk, in one call: the
    configurations completed, checked (finite, within the limits), posed (forward kinematics, shape poses)
    and culled (oriented boxes as :func:`culling.obb_candidates`, then bounding spheres as :func:`sphere_gaps`),
    what ``checks.clearance`` did in five calls and numpy between them, with the same numbers.

    Parameters
    ----------
    values : (N, K) positions of the active joints ``indices`` (K,) int64; the others keep ``current`` (A,).
    check_limits : bool, refuse a configuration outside the joint limits.
    floats, ints : the world's arrays (:func:`pack_world`).
    pairs : (P, 2) int64 checked shape pairs; thresholds : (P,) influence plus each pair's padding.
    poses : float64 (N A + 16 N L + 16 N S,), written: the complete configurations q (N, A), then their link
        poses (N, L, 4, 4), then their shape poses (N, S, 4, 4), each C-ordered (:func:`pose_sizes`).
    rows : (2, N P) int64, written: the candidate rows' configurations (row 0) and pairs (row 1).

    Returns
    -------
    The number R of rows (configuration-major, pairs in order) whose boxes are within their threshold and
    whose spheres' gap is below it, ``rows[:, :R]``; or ``CANDIDATES_NON_FINITE`` when a value is not finite
    (nothing written), or ``CANDIDATES_OUT_OF_LIMITS`` when a completed configuration is outside the limits
    (q written up to it, no pose).
    """
    n_act, n_mov, n_links, n_shapes = ints[0], ints[1], ints[2], ints[3]
    o = 4
    joint_kind = ints[o:o + n_mov]
    o += n_mov
    link_parent = ints[o:o + n_links]
    o += n_links
    link_joint = ints[o:o + n_links]
    o += n_links
    shape_link = ints[o:o + n_shapes]
    f = 0
    lower = floats[f:f + n_act]
    f += n_act
    upper = floats[f:f + n_act]
    f += n_act
    mimic_matrix = floats[f:f + n_mov * n_act].reshape((n_mov, n_act))
    f += n_mov * n_act
    mimic_offset = floats[f:f + n_mov]
    f += n_mov
    joint_axis = floats[f:f + 3 * n_mov].reshape((n_mov, 3))
    f += 3 * n_mov
    T_parent_origin = floats[f:f + 16 * n_links].reshape((n_links, 4, 4))
    f += 16 * n_links
    T_frame_shape = floats[f:f + 16 * n_shapes].reshape((n_shapes, 4, 4))
    f += 16 * n_shapes
    obb_center = floats[f:f + 3 * n_shapes].reshape((n_shapes, 3))
    f += 3 * n_shapes
    obb_axes = floats[f:f + 9 * n_shapes].reshape((n_shapes, 3, 3))
    f += 9 * n_shapes
    obb_half = floats[f:f + 3 * n_shapes].reshape((n_shapes, 3))
    f += 3 * n_shapes
    centre = floats[f:f + 3 * n_shapes].reshape((n_shapes, 3))
    f += 3 * n_shapes
    radius = floats[f:f + n_shapes]
    n_cfg = values.shape[0]
    n_pairs = pairs.shape[0]
    q = poses[:n_cfg * n_act].reshape((n_cfg, n_act))
    start = n_cfg * n_act
    T_world_link = poses[start:start + n_cfg * n_links * 16].reshape((n_cfg, n_links, 4, 4))
    start += n_cfg * n_links * 16
    T_world_shape = poses[start:start + n_cfg * n_shapes * 16].reshape((n_cfg, n_shapes, 4, 4))
    for c in range(n_cfg):
        for k in range(values.shape[1]):
            if not np.isfinite(values[c, k]):
                return CANDIDATES_NON_FINITE
    for c in range(n_cfg):
        for a in range(n_act):
            q[c, a] = current[a]
        for k in range(values.shape[1]):
            q[c, indices[k]] = values[c, k]
        if check_limits:
            for a in range(n_act):
                if q[c, a] < lower[a] or q[c, a] > upper[a]:
                    return CANDIDATES_OUT_OF_LIMITS
    forward_kinematics(q, mimic_matrix, mimic_offset, joint_kind, joint_axis, link_parent, T_parent_origin,
                       link_joint, T_world_link)
    shape_poses(T_world_link, shape_link, T_frame_shape, T_world_shape)
    candidates = np.empty((n_cfg, n_pairs), dtype=np.bool_)
    obb_candidates(T_world_shape, obb_center, obb_axes, obb_half, pairs, thresholds, candidates)
    count = 0
    for c in range(n_cfg):
        for p in range(n_pairs):
            if candidates[c, p] and _sphere_gap(T_world_shape, c, pairs[p, 0], pairs[p, 1], centre, radius) \
                    < thresholds[p]:
                rows[0, count], rows[1, count] = c, p
                count += 1
    return count


@njit(cache=True, fastmath=False)
def settle_first_distances(raw, p0, p1, measured, far_from, apart_above, sane_below, mesh, out_distance, out_points,
                           out_normal, out_state, done, check_mesh, out_slow, out_overlapping):
    """Sort the K candidate rows of a chunk by their first distance (hulls or primitives, measured or not).

    Parameters
    ----------
    raw : (K,) first signed distance (NaN: not measured); p0, p1 : (K, 3) its witness points.
    measured : (K,) bool, rows with a first distance.
    far_from : (K,) the threshold plus the slack beyond which a first distance culls the row.
    apart_above : float, a first distance above this (and witness points apart) is an apart row.
    sane_below : float, a first distance or witness coordinate at this or beyond is a failure.
    mesh : (K,) bool, rows with a mesh (an apart row to be checked on the meshes).
    out_distance, out_points (K, 2, 3), out_normal (K, 3), out_state (K,) int8 : written for the
        apart rows: the distance, the witness points (point 1 at ``p0 + d n``), the unit normal
        ``(p1 - p0) / |p1 - p0|``, and ``check_mesh`` (mesh rows) or ``done``.
    out_slow : (K,) bool written: rows neither culled nor apart (measured by the narrow phase).
    out_overlapping : (K,) bool written: sane mesh rows whose first distance is not above ``apart_above``.
    """
    for k in range(raw.shape[0]):
        d = raw[k]
        sane = measured[k] and abs(d) < sane_below
        for i in range(3):
            sane = sane and abs(p0[k, i]) < sane_below and abs(p1[k, i]) < sane_below
        far = sane and d >= far_from[k]
        x0, x1, x2 = p1[k, 0] - p0[k, 0], p1[k, 1] - p0[k, 1], p1[k, 2] - p0[k, 2]
        gap = np.sqrt((x0 * x0 + x2 * x2) + x1 * x1)      # numpy's einsum order
        apart = sane and not far and d > apart_above and gap > 1e-12
        if apart:
            n0, n1, n2 = x0 / gap, x1 / gap, x2 / gap
            out_distance[k] = d
            out_points[k, 0, 0], out_points[k, 0, 1], out_points[k, 0, 2] = p0[k, 0], p0[k, 1], p0[k, 2]
            out_points[k, 1, 0] = p0[k, 0] + d * n0
            out_points[k, 1, 1] = p0[k, 1] + d * n1
            out_points[k, 1, 2] = p0[k, 2] + d * n2
            out_normal[k, 0], out_normal[k, 1], out_normal[k, 2] = n0, n1, n2
            out_state[k] = check_mesh if mesh[k] else done
        out_slow[k] = not far and not apart
        out_overlapping[k] = sane and mesh[k] and not d > apart_above


@njit(cache=True, fastmath=False)
def check_on_meshes(state, points, normals, support, T_world_shape, cfg, shape_pair, mesh_slot, is_mesh, check_mesh, done,
                    on_mesh_d2, triangle_start, node_start, triangles, bounds, nodes, order, face_normals,
                    vertex_start, vertices, neighbour_start, neighbours, probes, hull_triangle_start, hull_triangles,
                    out_subshapes, search_d2=np.inf):
    """Settle the rows whose state is ``check_mesh`` (hulls apart): ``done`` where each mesh's hull witness
    point lies on its mesh (squared distance at most ``on_mesh_d2``); returns the other rows, in order.

    Parameters
    ----------
    state : (K,) int8, read and written.
    points : (K, 2, 3) the rows' witness points (planning frame); normals : (K, 3) their unit normals (0 to 1).
    support : (K, 2) int64, each side's hull vertex farthest along its normal where the caller knows it (the GJK's
        last support vertex, :func:`first_distance_rows`), -1 where not (then climbed to here).
    T_world_shape : (N, S, 4, 4); cfg : (K,) int64, each row's configuration.
    shape_pair, mesh_slot : (K, 2) int64, each row's shapes and their meshes in the packed trees (-1: none).
    is_mesh : (K, 2) bool, sides that are meshes (a mesh without a packed tree is never on its mesh).
    triangle_start ... face_normals : the packed meshes (``witness_check.pack_meshes``).
    vertex_start ... probes : the convex solids' hull vertices and edges (``gjk.ConvexArrays``).
    hull_triangle_start, hull_triangles : each hull vertex's mesh triangles (``witness_check.hull_vertex_triangles``);
        empty arrays: no shortcut, every side projected.
    out_subshapes : (K, 2) int32, written for the checked sides: a triangle within ``on_mesh_d2`` of the point
        (see below), or the projection's nearest triangle.
    search_d2 : the projection looks only for triangles nearer than this (squared; above ``on_mesh_d2``, so that
        the rows it settles are those of an unbounded search, with the same triangles, bit for bit; a side with
        none is off its mesh, its subshape -1 until the row's mesh distance sets it).

    Each side is first tried on a few triangles (:func:`_on_support_triangles`): the mesh triangles with a
    corner at the hull vertex farthest along the side's normal (``+n`` for side 0, ``-n`` for side 1, where the
    hull witness point lies). When one of them is within ``on_mesh_d2`` of the point (the same point in the mesh
    frame and the same point-triangle arithmetic as the projection), the side is on its mesh, as the projection
    would find (its nearest triangle is at most as far), and its subshape is the first of those triangles within
    ``on_mesh_d2``, in increasing triangle index (the same in any process, single or batch): a triangle of the
    mesh within ``on_mesh_d2`` of the point, the projection's nearest one or another one (mostly where the point
    is a vertex or on an edge they share: on issue 40's sets every one is within 2.5e-14 m). Stopping at the first
    tests 1.5 triangles per side instead of 6.4 (on the Panda, about 8 us per single clearance call at 0.5 m).
    The other sides are projected: :func:`witness_check.project_onto_meshes` on them in (row, side) order, so
    its numbers are those of a call on all of them. On the Panda with config/panda_world.yaml every side on its
    mesh is settled by the few triangles (the meshes' vertices are all on their hulls).
    """
    shortcut = hull_triangle_start.shape[0] == vertices.shape[0] + 1
    on_few = np.zeros((state.shape[0], 2), dtype=np.bool_)      # sides settled on a few triangles
    local = np.empty(3)
    nearest = np.empty(3)
    n = 0
    for k in range(state.shape[0]):
        if state[k] == check_mesh:
            for s in range(2):
                if is_mesh[k, s] and mesh_slot[k, s] >= 0:
                    shape = shape_pair[k, s]
                    if shortcut and vertex_start[shape + 1] > vertex_start[shape]:
                        T = T_world_shape[cfg[k], shape]
                        sign = 1.0 if s == 0 else -1.0
                        m = mesh_slot[k, s]
                        t = _on_support_triangles(points[k, s], sign * normals[k, 0], sign * normals[k, 1],
                                                  sign * normals[k, 2], support[k, s], T, shape, vertex_start, vertices,
                                                  neighbour_start, neighbours, probes, hull_triangle_start,
                                                  hull_triangles, triangles[triangle_start[m]:triangle_start[m + 1]],
                                                  on_mesh_d2, local, nearest)
                        if t >= 0:
                            out_subshapes[k, s] = t
                            on_few[k, s] = True
                            continue
                    n += 1
    at_point = np.empty((n, 3))
    at_pose = np.empty((n, 4, 4))
    at_slot = np.empty(n, dtype=np.int64)
    at_row = np.empty(n, dtype=np.int64)
    at_side = np.empty(n, dtype=np.int64)
    i = 0
    for k in range(state.shape[0]):
        if state[k] == check_mesh:
            for s in range(2):
                if is_mesh[k, s] and mesh_slot[k, s] >= 0 and not on_few[k, s]:
                    at_point[i] = points[k, s]
                    at_pose[i] = T_world_shape[cfg[k], shape_pair[k, s]]
                    at_slot[i], at_row[i], at_side[i] = mesh_slot[k, s], k, s
                    i += 1
    d2 = np.zeros(n)
    triangle = np.full(n, -1, dtype=np.int64)
    if n:
        project_onto_meshes(at_point, at_pose, at_slot, triangle_start, node_start, triangles, bounds, nodes, order,
                            face_normals, d2, triangle, max(search_d2, on_mesh_d2))
    off = np.zeros(state.shape[0], dtype=np.bool_)
    for k in range(state.shape[0]):
        if state[k] == check_mesh:
            for s in range(2):
                if is_mesh[k, s] and mesh_slot[k, s] < 0:
                    off[k] = True
    for i in range(n):
        out_subshapes[at_row[i], at_side[i]] = triangle[i]
        if not d2[i] <= on_mesh_d2 or triangle[i] < 0:
            off[at_row[i]] = True
    count = 0
    for k in range(state.shape[0]):
        if state[k] == check_mesh:
            if off[k]:
                count += 1
            else:
                state[k] = done
    rest = np.empty(count, dtype=np.int64)
    count = 0
    for k in range(state.shape[0]):
        if state[k] == check_mesh:
            rest[count] = k
            count += 1
    return rest


@njit(cache=True, fastmath=False, inline="always")
def _on_support_triangles(point_world, dx, dy, dz, at, T_world_mesh, shape, vertex_start, vertices, neighbour_start,
                          neighbours, probes, hull_triangle_start, hull_triangles, mesh_triangles, on_mesh_d2, local,
                          nearest):
    """The first triangle within ``on_mesh_d2`` (squared, metres) of a hull witness point among the mesh triangles
    with a corner at the hull vertex farthest along (dx, dy, dz) (planning frame), or -1 when none is.
    ``at``: that vertex where the caller knows it (GJK's last support vertex), -1 to climb to it here.

    The vertex is ``gjk.vertex_support``'s (climbing the hull's edges from its probe vertices) along the
    direction in the mesh frame; the point goes to the mesh frame (``local``, written) as
    ``witness_check.project_onto_meshes`` takes it there, and each triangle's squared distance is computed as
    ``mesh_queries.tree_closest_point`` computes it (``mesh_queries.closest_on_triangle``, then the three squared
    differences summed in order; ``nearest`` scratch): the same numbers as the projection's, so a triangle found
    here within ``on_mesh_d2`` puts the projection's nearest within it too. Triangles are tried in increasing
    index (``hull_triangles``' order)."""
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += T_world_mesh[u, i] * (point_world[u] - T_world_mesh[u, 3])
        local[i] = acc
    v = at
    if v < 0:
        lx = T_world_mesh[0, 0] * dx + T_world_mesh[1, 0] * dy + T_world_mesh[2, 0] * dz
        ly = T_world_mesh[0, 1] * dx + T_world_mesh[1, 1] * dy + T_world_mesh[2, 1] * dz
        lz = T_world_mesh[0, 2] * dx + T_world_mesh[1, 2] * dy + T_world_mesh[2, 2] * dz
        v = vertex_support(vertices, neighbour_start, neighbours, probes, shape, vertex_start[shape],
                           vertex_start[shape + 1], -1, lx, ly, lz)
    for j in range(hull_triangle_start[v], hull_triangle_start[v + 1]):
        t = hull_triangles[j]
        closest_on_triangle(local, mesh_triangles, t, nearest)
        ex, ey, ez = nearest[0] - local[0], nearest[1] - local[1], nearest[2] - local[2]
        d2 = ex * ex + ey * ey + ez * ez
        if d2 <= on_mesh_d2:
            return t
    return -1


@njit(cache=True, fastmath=False)
def assemble_rows(state, distance, points, normal, subshapes, exact, deepest, kink, cfg, pair, margins, k_max, done,
                  smooth_distance):
    """The rows of a chunk's answer: candidate rows whose state is ``done``, per configuration in increasing
    padded distance (ties in candidate order), at most ``k_max`` per configuration (0: all).

    Parameters
    ----------
    state, distance : (K,) each candidate's state and signed distance (unpadded).
    points (K, 2, 3), normal (K, 3), subshapes (K, 2) int32 : its witness points, normal, subshapes.
    exact, deepest, kink : (K,) bool, its flags (see ``checks.clearance._Measured``).
    cfg, pair : (K,) int64, its configuration (nondecreasing) and checked pair.
    margins : (P,) each pair's padding.
    smooth_distance : float, below this |distance| a row is not smooth (the bodies touch).

    Returns
    -------
    (rows, cfg, pair, padded distance, points, normal, subshapes, smooth) of the R rows kept, in order:
    what ``numpy.lexsort((padded, cfg))`` and its gathers gave.
    """
    n = state.shape[0]
    kept = np.empty(n, dtype=np.int64)
    padded = np.empty(n)
    r = 0
    for k in range(n):
        if k and cfg[k] < cfg[k - 1]:
            raise ValueError("candidate rows must be in configuration order")
        if state[k] == done:
            kept[r] = k
            padded[r] = distance[k] - margins[pair[k]]
            r += 1
    # each configuration's rows: a stable insertion sort by padded distance, then its first k_max
    out = 0
    start = 0
    while start < r:
        end = start + 1
        while end < r and cfg[kept[end]] == cfg[kept[start]]:
            end += 1
        for i in range(start + 1, end):
            key, row = padded[i], kept[i]
            j = i - 1
            while j >= start and padded[j] > key:
                padded[j + 1], kept[j + 1] = padded[j], kept[j]
                j -= 1
            padded[j + 1], kept[j + 1] = key, row
        stop = end if k_max <= 0 else min(end, start + k_max)
        for i in range(start, stop):
            kept[out], padded[out] = kept[i], padded[i]
            out += 1
        start = end
    rows = kept[:out].copy()
    out_cfg = np.empty(out, dtype=np.int64)
    out_pair = np.empty(out, dtype=np.int64)
    out_points = np.empty((out, 2, 3))
    out_normal = np.empty((out, 3))
    out_subshapes = np.empty((out, 2), dtype=np.int32)
    smooth = np.empty(out, dtype=np.bool_)
    for i in range(out):
        k = rows[i]
        out_cfg[i], out_pair[i] = cfg[k], pair[k]
        out_points[i] = points[k]
        out_normal[i] = normal[k]
        out_subshapes[i] = subshapes[k]
        d = distance[k]
        finite = np.isfinite(normal[k, 0]) and np.isfinite(normal[k, 1]) and np.isfinite(normal[k, 2])
        smooth[i] = exact[k] and finite and not abs(d) < smooth_distance and not (d < 0.0 and deepest[k]) \
            and not kink[k]
    return rows, out_cfg, out_pair, padded[:out].copy(), out_points, out_normal, out_subshapes, smooth


# ----- arrays packed for a call: numba's dispatch costs about 0.2 us per array argument ---------------------------
def pack_arrays(float_arrays, int_arrays):
    """Arrays as two flat ones: ``floats`` (float64) holds the float arrays, ``ints`` (int64) a header (offset and
    up to three dimensions per array, float arrays first, then the int arrays) and then the int arrays (booleans
    as 0 and 1). Array i is read back by :func:`_f1` ... :func:`_i2` (floats: i; ints: len(float_arrays) + j)."""
    n = len(float_arrays) + len(int_arrays)
    header = np.zeros(4 * n, dtype=np.int64)
    float_parts, int_parts = [], []
    f_offset, i_offset = 0, 4 * n
    for i, x in enumerate(list(float_arrays) + list(int_arrays)):
        is_float = i < len(float_arrays)
        x = np.ascontiguousarray(x, dtype=np.float64 if is_float else np.int64)
        if x.ndim > 3:
            raise ValueError("pack_arrays: at most three dimensions")
        header[4 * i] = f_offset if is_float else i_offset
        header[4 * i + 1:4 * i + 1 + x.ndim] = x.shape
        (float_parts if is_float else int_parts).append(x.ravel())
        if is_float:
            f_offset += x.size
        else:
            i_offset += x.size
    floats = np.concatenate(float_parts) if float_parts else np.zeros(0)
    ints = np.concatenate([header] + int_parts)
    return floats, ints


@njit(cache=True, inline="always")
def _f1(floats, ints, i):
    o, d0 = ints[4 * i], ints[4 * i + 1]
    return floats[o:o + d0]


@njit(cache=True, inline="always")
def _f2(floats, ints, i):
    o, d0, d1 = ints[4 * i], ints[4 * i + 1], ints[4 * i + 2]
    return floats[o:o + d0 * d1].reshape((d0, d1))


@njit(cache=True, inline="always")
def _f3(floats, ints, i):
    o, d0, d1, d2 = ints[4 * i], ints[4 * i + 1], ints[4 * i + 2], ints[4 * i + 3]
    return floats[o:o + d0 * d1 * d2].reshape((d0, d1, d2))


@njit(cache=True, inline="always")
def _i1(ints, i):
    o, d0 = ints[4 * i], ints[4 * i + 1]
    return ints[o:o + d0]


@njit(cache=True, inline="always")
def _i2(ints, i):
    o, d0, d1 = ints[4 * i], ints[4 * i + 1], ints[4 * i + 2]
    return ints[o:o + d0 * d1].reshape((d0, d1))


def pack_row_world(convex, packed_meshes, shape_link, owner_link, owner_offset, child_link, axis, prismatic, chain,
                   hull_triangles=None):
    """The per-world arrays of :func:`first_distance_rows`, :func:`settle_rows` and :func:`finish_rows`, packed
    (:func:`pack_arrays`): the convex solids (a ``gjk.ConvexArrays``), the packed meshes
    (``witness_check.pack_meshes``), the Jacobians' tables (as :func:`jacobian_and_local_points` takes them) and
    ``hull_triangles``, each hull vertex's mesh triangles (``witness_check.hull_vertex_triangles``: start, triangles)
    that :func:`check_on_meshes` tries before projecting a witness point (None: none, every point projected)."""
    (kind, params, vertex_start, vertices, supported, neighbour_start, neighbours, probes) = convex
    triangle_start, node_start, triangles, bounds, nodes, order, face_normals = packed_meshes
    if hull_triangles is None:
        hull_triangles = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return pack_arrays([params, vertices, triangles, bounds, face_normals, owner_offset, axis, chain],
                       [kind, vertex_start, supported, neighbour_start, neighbours, probes, triangle_start, node_start,
                        nodes, order, shape_link, owner_link, child_link, prismatic, hull_triangles[0],
                        hull_triangles[1]])


# the arrays' places in pack_row_world's output
_W_PARAMS, _W_VERTICES, _W_TRIANGLES, _W_BOUNDS, _W_FACE_NORMALS, _W_OWNER_OFFSET, _W_AXIS, _W_CHAIN = range(8)
(_W_KIND, _W_VERTEX_START, _W_SUPPORTED, _W_NEIGHBOUR_START, _W_NEIGHBOURS, _W_PROBES, _W_TRIANGLE_START,
 _W_NODE_START, _W_NODES, _W_ORDER, _W_SHAPE_LINK, _W_OWNER_LINK, _W_CHILD_LINK, _W_PRISMATIC, _W_HULL_TRIANGLE_START,
 _W_HULL_TRIANGLES) = range(8, 24)


def pack_row_pairs(pairs, direct, compiled, mesh, mesh_slot, is_mesh, plain_frames, slack, margins):
    """The per-selection arrays (P checked pairs) of the row kernels, packed (:func:`pack_arrays`): the pairs'
    shapes (P, 2), which have a first distance (``direct``), its route (``compiled``: 1 the compiled GJK, 2 and 3
    a cylinder, first or second shape, with a polytope: :func:`first_distance_rows`; 0 coal), which have a mesh,
    their meshes' slots and mesh sides (P, 2), whose body frames are taken as they are, the first distance's
    slack and the padding (metres)."""
    return pack_arrays([slack, margins], [pairs, direct, compiled, mesh, mesh_slot, is_mesh, plain_frames])


_P_SLACK, _P_MARGINS = 0, 1
_P_PAIRS, _P_DIRECT, _P_COMPILED, _P_MESH, _P_MESH_SLOT, _P_IS_MESH, _P_PLAIN = range(2, 9)


@njit(cache=True, fastmath=False)
def _route_rows(cfg, pair, pairs, compiled, measured, T_world_shape, low, high, count):
    """The ``count`` measured rows whose pair's route (``compiled``) is in [low, high], in row order: (rows,
    shape a, shape b, route - 2 (a polytope-cylinder row's cylinder side), pose of a, pose of b)."""
    rows = np.empty(count, dtype=np.int64)
    a = np.empty(count, dtype=np.int64)
    b = np.empty(count, dtype=np.int64)
    side = np.empty(count, dtype=np.int64)
    Ta = np.empty((count, 4, 4))
    Tb = np.empty((count, 4, 4))
    i = 0
    for k in range(cfg.shape[0]):
        if measured[k] and low <= compiled[pair[k]] <= high:
            rows[i], a[i], b[i] = k, pairs[pair[k], 0], pairs[pair[k], 1]
            side[i] = compiled[pair[k]] - 2
            Ta[i] = T_world_shape[cfg[k], a[i]]
            Tb[i] = T_world_shape[cfg[k], b[i]]
            i += 1
    return rows, a, b, side, Ta, Tb


@njit(cache=True, fastmath=False)
def _settle(rows, got, distance, q0, q1, settled, raw, p0, p1):
    """The rows (``rows``) whose distance was found (``got``) settled with it and its witness points."""
    for i in range(rows.shape[0]):
        if got[i]:
            k = rows[i]
            settled[k] = True
            raw[k] = distance[i]
            p0[k] = q0[i]
            p1[k] = q1[i]


@njit(cache=True, fastmath=False)
def _cylinder_rows_by_gjk(convex, a, b, Ta, Tb, eps_m, distance, p0, p1, converged):
    """The polytope-cylinder rows the side and end rules left (``converged`` False: mostly a rim against an edge or
    a face of the polytope): ``gjk.hull_distances`` on the two solids as they are (the cylinder by its support
    function), settled where GJK's upper and lower bounds close to ``eps_m`` (so exact to that, as the polytope rows
    are); the rows it leaves (the solids overlap or touch, or the search did not close) stay unsettled."""
    idx = np.nonzero(~converged)[0]
    n = idx.shape[0]
    if n == 0:
        return
    d = np.empty(n)
    q0 = np.empty((n, 3))
    q1 = np.empty((n, 3))
    got = np.zeros(n, dtype=np.bool_)
    hull_distances(convex, a[idx], b[idx], Ta[idx], Tb[idx], eps_m, d, q0, q1, got, np.empty((0, 3, 4, 3)),
                   np.zeros(0, dtype=np.bool_), np.empty((0, 2), dtype=np.int64))
    _settle(idx, got, d, q0, q1, converged, distance, p0, p1)


@njit(cache=True, fastmath=False)
def first_distance_rows(cfg, pair, T_world_shape, world_f, world_i, pair_f, pair_i, eps_m, use_ends=True,
                        use_epa=True):
    """The first distances of a chunk's K candidate rows that the compiled GJK takes, and the rows left to coal.

    Parameters
    ----------
    cfg, pair : (K,) int64, each row's configuration in ``T_world_shape`` (N, S, 4, 4) and checked pair.
    world_f, world_i : :func:`pack_row_world`; pair_f, pair_i : :func:`pack_row_pairs`.
    eps_m : the GJK's gap at convergence, metres.

    Returns
    -------
    (raw (K,), p0 (K, 3), p1 (K, 3), measured (K,) bool, coal_rows, support (K, 2) int64): the first signed distance
    and its witness points of the rows the compiled GJK settled (NaN, zeros elsewhere), which rows have (or will
    have) a first distance (every direct row), the direct rows it did not settle, in order, for coal, and the hull
    vertices of the polytope rows whose distance ``gjk.hull_distances`` settled (each side's farthest towards the
    other, as its last support points took them; -1 elsewhere), where ``check_on_meshes`` starts. The GJK runs once
    over the polytope rows (``compiled`` 1) in row order (the numbers of one ``gjk.hull_distances`` call on
    them), then once over the polytope-cylinder rows (``compiled`` 2: the pair's first shape is the cylinder, 3:
    its second) in row order (one ``gjk.cylinder_side_distances`` call, which settles those whose nearest points
    are on the cylinder's side, then, with ``use_ends``, one ``gjk.cylinder_end_distances`` call on the rows it
    left, which settles those nearest on a cap or a rim, then one ``gjk.hull_distances`` call on the cylinder itself
    for the rows still left (a rim against the polytope's edge or face: :func:`_cylinder_rows_by_gjk`); ``use_ends``
    False: those are left to coal, as before session 41, for side-by-side timing). Then, with ``use_epa``, the rows
    of both routes still left whose solids overlap get their penetration from one ``epa.penetration_distances``
    call (GJK, then EPA, in row order: minus the overlap along EPA's normal, EPA's witness points; polytopes to
    ``eps_m``, a cylinder to ``epa.CURVED_EPS_M``), a start that the penetrating rows' kernel checks and polishes to
    the MTD (``penetrating_rows``); ``use_epa`` False: those are left to coal's EPA, as before session 42.
    """
    pairs = _i2(pair_i, _P_PAIRS)
    direct = _i1(pair_i, _P_DIRECT)
    compiled = _i1(pair_i, _P_COMPILED)
    n = cfg.shape[0]
    raw = np.full(n, np.nan)
    p0 = np.zeros((n, 3))
    p1 = np.zeros((n, 3))
    measured = np.zeros(n, dtype=np.bool_)
    support = np.full((n, 2), -1, dtype=np.int64)
    n_compiled = 0
    n_side = 0
    for k in range(n):
        if direct[pair[k]]:
            measured[k] = True
            if compiled[pair[k]] == 1:
                n_compiled += 1
            elif compiled[pair[k]] >= 2:
                n_side += 1
    settled = np.zeros(n, dtype=np.bool_)
    convex = ConvexArrays(_i1(world_i, _W_KIND), _f2(world_f, world_i, _W_PARAMS),
                          _i1(world_i, _W_VERTEX_START), _f2(world_f, world_i, _W_VERTICES),
                          _i1(world_i, _W_SUPPORTED), _i1(world_i, _W_NEIGHBOUR_START),
                          _i1(world_i, _W_NEIGHBOURS), _i2(world_i, _W_PROBES))
    if n_compiled:
        rows, a_c, b_c, _, Ta, Tb = _route_rows(cfg, pair, pairs, compiled, measured, T_world_shape, 1, 1,
                                                n_compiled)
        d_c = np.empty(n_compiled)
        q0 = np.empty((n_compiled, 3))
        q1 = np.empty((n_compiled, 3))
        got = np.zeros(n_compiled, dtype=np.bool_)
        tetrahedra = np.empty((n_compiled if use_epa else 0, 3, 4, 3))
        inside = np.zeros(n_compiled if use_epa else 0, dtype=np.bool_)
        support_c = np.empty((n_compiled, 2), dtype=np.int64)
        hull_distances(convex, a_c, b_c, Ta, Tb, eps_m, d_c, q0, q1, got, tetrahedra, inside, support_c)
        _settle(rows, got, d_c, q0, q1, settled, raw, p0, p1)
        for i in range(n_compiled):
            if got[i]:
                support[rows[i], 0], support[rows[i], 1] = support_c[i, 0], support_c[i, 1]
        if use_epa:
            # the polytopes that overlap: EPA from the tetrahedron that GJK ended with
            m = 0
            for i in range(n_compiled):
                if inside[i] and not got[i]:
                    rows[m], a_c[m], b_c[m], Ta[m], Tb[m], tetrahedra[m] = rows[i], a_c[i], b_c[i], Ta[i], Tb[i], \
                        tetrahedra[i]
                    m += 1
            if m:
                got_t = np.zeros(m, dtype=np.bool_)
                expand_tetrahedra(convex, a_c[:m], b_c[:m], Ta[:m], Tb[:m], tetrahedra[:m], eps_m, d_c, q0, q1, got_t)
                _settle(rows[:m], got_t, d_c, q0, q1, settled, raw, p0, p1)
    if n_side:
        rows_s, a_s, b_s, side, Ta_s, Tb_s = _route_rows(cfg, pair, pairs, compiled, measured, T_world_shape, 2, 3,
                                                         n_side)
        d_s = np.empty(n_side)
        s0 = np.empty((n_side, 3))
        s1 = np.empty((n_side, 3))
        got_s = np.zeros(n_side, dtype=np.bool_)
        cylinder_side_distances(convex, a_s, b_s, side, Ta_s, Tb_s, eps_m, d_s, s0, s1, got_s)
        if use_ends:
            cylinder_end_distances(convex, a_s, b_s, side, Ta_s, Tb_s, d_s, s0, s1, got_s)
            _cylinder_rows_by_gjk(convex, a_s, b_s, Ta_s, Tb_s, eps_m, d_s, s0, s1, got_s)
        _settle(rows_s, got_s, d_s, s0, s1, settled, raw, p0, p1)
    if use_epa and (n_compiled or n_side):
        n_epa = 0
        for k in range(n):
            if measured[k] and not settled[k] and compiled[pair[k]] >= 1:
                n_epa += 1
        if n_epa:
            rows_e, a_e, b_e, _, Ta_e, Tb_e = _route_rows(cfg, pair, pairs, compiled, measured & ~settled,
                                                          T_world_shape, 1, 3, n_epa)
            d_e = np.empty(n_epa)
            e0 = np.empty((n_epa, 3))
            e1 = np.empty((n_epa, 3))
            got_e = np.zeros(n_epa, dtype=np.bool_)
            penetration_distances(convex, a_e, b_e, Ta_e, Tb_e, eps_m, CURVED_EPS_M, d_e, e0, e1, got_e)
            _settle(rows_e, got_e, d_e, e0, e1, settled, raw, p0, p1)
    n_coal = 0
    for k in range(n):
        if measured[k] and not settled[k]:
            n_coal += 1
    coal_rows = np.empty(n_coal, dtype=np.int64)
    i = 0
    for k in range(n):
        if measured[k] and not settled[k]:
            coal_rows[i] = k
            i += 1
    return raw, p0, p1, measured, coal_rows, support


@njit(cache=True, fastmath=False)
def settle_rows(raw, p0, p1, measured, support, cfg, pair, T_world_shape, world_f, world_i, pair_f, pair_i, thresholds,
                apart_above, sane_below, on_mesh_d2, done, check_mesh, out_distance, out_points, out_normal, out_state,
                out_subshapes, search_d2=np.inf):
    """:func:`settle_first_distances` of a chunk's K candidate rows, then :func:`check_on_meshes` of the
    apart mesh rows, in one call (their numbers).

    Parameters
    ----------
    raw, p0, p1, measured : as :func:`settle_first_distances` (``far_from`` is ``thresholds[pair] + slack[pair]``).
    support : (K, 2) int64, :func:`first_distance_rows`' hull vertices (-1: none), for :func:`check_on_meshes`.
    cfg, pair : (K,) int64 each row's configuration in ``T_world_shape`` (N, S, 4, 4) and checked pair.
    world_f, world_i : :func:`pack_row_world`; pair_f, pair_i : :func:`pack_row_pairs`.
    thresholds : (P,) each pair's threshold; search_d2 : as :func:`check_on_meshes`.
    out_distance ... out_state, out_subshapes : the rows' answers, written as those two kernels write them; then
        every row settled (``done``) whose distance is not below its pair's threshold is culled (state 0).

    Returns
    -------
    (slow, rest, overlapping): the rows for the narrow phase (neither culled nor apart), in order; the apart
    mesh rows whose witness points are not on their meshes (for the meshes' distance), in order; and
    ``overlapping`` (K,) as :func:`settle_first_distances` writes it.
    """
    slack = _f1(pair_f, pair_i, _P_SLACK)
    mesh = _i1(pair_i, _P_MESH)
    n = cfg.shape[0]
    far_from = np.empty(n)
    row_mesh = np.empty(n, dtype=np.bool_)
    for k in range(n):
        far_from[k] = thresholds[pair[k]] + slack[pair[k]]
        row_mesh[k] = mesh[pair[k]] != 0
    slow_rows = np.empty(n, dtype=np.bool_)
    overlapping = np.empty(n, dtype=np.bool_)
    settle_first_distances(raw, p0, p1, measured, far_from, apart_above, sane_below, row_mesh, out_distance,
                           out_points, out_normal, out_state, done, check_mesh, slow_rows, overlapping)
    n_slow = 0
    any_check = False
    for k in range(n):
        if slow_rows[k]:
            n_slow += 1
        if out_state[k] == check_mesh:
            any_check = True
    slow = np.empty(n_slow, dtype=np.int64)
    i = 0
    for k in range(n):
        if slow_rows[k]:
            slow[i] = k
            i += 1
    if not any_check:
        _cull_done(out_state, out_distance, pair, thresholds, done)
        return slow, np.empty(0, dtype=np.int64), overlapping
    pairs = _i2(pair_i, _P_PAIRS)
    mesh_slot = _i2(pair_i, _P_MESH_SLOT)
    is_mesh = _i2(pair_i, _P_IS_MESH)
    row_pair = np.empty((n, 2), dtype=np.int64)
    row_slot = np.empty((n, 2), dtype=np.int64)
    row_is_mesh = np.empty((n, 2), dtype=np.bool_)
    for k in range(n):
        for s in range(2):
            row_pair[k, s] = pairs[pair[k], s]
            row_slot[k, s] = mesh_slot[pair[k], s]
            row_is_mesh[k, s] = is_mesh[pair[k], s] != 0
    rest = check_on_meshes(out_state, out_points, out_normal, support, T_world_shape, cfg, row_pair, row_slot, row_is_mesh,
                           check_mesh, done, on_mesh_d2, _i1(world_i, _W_TRIANGLE_START), _i1(world_i, _W_NODE_START),
                           _f3(world_f, world_i, _W_TRIANGLES), _f3(world_f, world_i, _W_BOUNDS),
                           _i2(world_i, _W_NODES), _i1(world_i, _W_ORDER), _f2(world_f, world_i, _W_FACE_NORMALS),
                           _i1(world_i, _W_VERTEX_START), _f2(world_f, world_i, _W_VERTICES),
                           _i1(world_i, _W_NEIGHBOUR_START), _i1(world_i, _W_NEIGHBOURS), _i2(world_i, _W_PROBES),
                           _i1(world_i, _W_HULL_TRIANGLE_START), _i1(world_i, _W_HULL_TRIANGLES), out_subshapes,
                           search_d2)
    _cull_done(out_state, out_distance, pair, thresholds, done)
    return slow, rest, overlapping


@njit(cache=True, fastmath=False)
def _cull_done(state, distance, pair, thresholds, done):
    """Rows settled here (``state == done``) whose distance is not below their pair's threshold are culled
    (state 0): what ``checks.clearance._measure`` does over every row after the narrow phase, done here so that
    a chunk whose rows all settle here needs no numpy pass after it (the same comparison, the same rows)."""
    for k in range(state.shape[0]):
        if state[k] == done and not distance[k] < thresholds[pair[k]]:
            state[k] = 0


@njit(cache=True, fastmath=False)
def _untie(smooth, distance, cfg, shape_pair, points, normals, T_world_link, T_world_shape, support, world_f, world_i):
    """``smooth`` set False on the apart rows whose nearest points can jump along a flat feature within a small
    joint motion (``apart_ties``: :func:`apart_ties.stepped_ties`, then the row's and the stepped pair's Jacobian
    rows by :func:`jacobian_and_local_points` over the movable joints, :func:`apart_ties.joint_step_closes`)."""
    M = _i1(world_i, _W_CHILD_LINK).shape[0]
    shape_link = _i1(world_i, _W_SHAPE_LINK)
    prismatic = _i1(world_i, _W_PRISMATIC)
    chain = _f2(world_f, world_i, _W_CHAIN)
    world_row = chain.shape[0] - 1
    revolute = np.zeros(cfg.shape[0])
    for r in range(cfg.shape[0]):
        l0, l1 = shape_link[shape_pair[r, 0]], shape_link[shape_pair[r, 1]]
        l0 = l0 if l0 >= 0 else world_row
        l1 = l1 if l1 >= 0 else world_row
        for m in range(M):
            if not prismatic[m] and (chain[l0, m] != 0.0 or chain[l1, m] != 0.0):
                revolute[r] += 1.0
    rows, pairs, gaps = stepped_ties(smooth, distance, cfg, shape_pair, points, T_world_shape, _i1(world_i, _W_KIND),
                                     _f2(world_f, world_i, _W_PARAMS), _i1(world_i, _W_VERTEX_START),
                                     _f2(world_f, world_i, _W_VERTICES), _i1(world_i, _W_NEIGHBOUR_START),
                                     _i1(world_i, _W_NEIGHBOURS), _i2(world_i, _W_PROBES), support, revolute)
    n = rows.shape[0]
    if n == 0:
        return
    both_cfg = np.empty(2 * n, dtype=np.int64)
    both_shapes = np.empty((2 * n, 2), dtype=np.int64)
    both_points = np.empty((2 * n, 2, 3))
    both_normals = np.empty((2 * n, 3))
    for i in range(n):
        r = rows[i]
        for h in range(2):
            both_cfg[2 * i + h] = cfg[r]
            both_shapes[2 * i + h] = shape_pair[r]
            both_normals[2 * i + h] = normals[r]
        both_points[2 * i] = points[r]
        both_points[2 * i + 1] = pairs[i]
    jac = np.empty((2 * n, M))
    local = np.empty((2 * n, 2, 3))
    jacobian_and_local_points(T_world_link, both_cfg, both_shapes, shape_link, _i1(world_i, _W_OWNER_LINK),
                              _f3(world_f, world_i, _W_OWNER_OFFSET), _i1(world_i, _W_CHILD_LINK),
                              _f2(world_f, world_i, _W_AXIS), prismatic, chain, both_points, both_normals, True, jac,
                              local)
    for i in range(n):
        if joint_step_closes(jac[2 * i], jac[2 * i + 1], gaps[i]):
            smooth[rows[i]] = False


@njit(cache=True, fastmath=False)
def finish_rows(state, distance, points, normal, subshapes, exact, deepest, kink, cfg, pair, T_world_link,
                T_world_shape, support, world_f, world_i, pair_f, pair_i, k_max, done, smooth_distance, jacobians,
                no_subshape):
    """:func:`assemble_rows` and :func:`jacobian_and_local_points` of a chunk's measured rows in one call (their
    numbers): the rows kept, in order, with their Jacobian rows over the movable joints and body-frame points.
    The apart rows beside a tie along a flat feature are not smooth (:func:`_untie`, with ``apart_ties``).

    Parameters
    ----------
    state ... kink, cfg, pair : as :func:`assemble_rows` takes them (the margins are the packed pairs').
    T_world_link : (N, L, 4, 4); T_world_shape : (N, S, 4, 4); support : (K, 2) int64, :func:`first_distance_rows`'
    hull vertices (-1: none; where the tie test's searches start); world_f, world_i : :func:`pack_row_world`;
    pair_f, pair_i : :func:`pack_row_pairs`.
    k_max, done, smooth_distance : as :func:`assemble_rows`; jacobians : bool, compute the Jacobian rows.
    no_subshape : the subshape of a side that is not a mesh (its subshape is set to it).

    Returns
    -------
    (cfg, pair, padded distance, points, normal, subshapes (``no_subshape`` on the sides that are not meshes),
    smooth, local (R, 2, 3), jacobian (R, M) or (R, 0), plain): ``plain`` False when a row has a body frame :func:`jacobian_and_local_points` does not take (an
    object attached with an offset): its ``local`` is then to be computed otherwise.
    """
    margins = _f1(pair_f, pair_i, _P_MARGINS)
    kept, out_cfg, out_pair, padded, pts, nrm, subs, smooth = assemble_rows(
        state, distance, points, normal, subshapes, exact, deepest, kink, cfg, pair, margins, k_max, done,
        smooth_distance)
    n_rows = out_cfg.shape[0]
    pairs = _i2(pair_i, _P_PAIRS)
    plain_frames = _i1(pair_i, _P_PLAIN)
    is_mesh = _i2(pair_i, _P_IS_MESH)
    child_link = _i1(world_i, _W_CHILD_LINK)
    shape_pair = np.empty((n_rows, 2), dtype=np.int64)
    row_distance = np.empty(n_rows)
    row_support = np.empty((n_rows, 2), dtype=np.int64)
    plain = True
    for r in range(n_rows):
        shape_pair[r, 0], shape_pair[r, 1] = pairs[out_pair[r], 0], pairs[out_pair[r], 1]
        row_distance[r] = distance[kept[r]]
        row_support[r, 0], row_support[r, 1] = support[kept[r], 0], support[kept[r], 1]
        plain = plain and plain_frames[out_pair[r]] != 0
        for s in range(2):
            if is_mesh[out_pair[r], s] == 0:
                subs[r, s] = no_subshape
    if n_rows:
        _untie(smooth, row_distance, out_cfg, shape_pair, pts, nrm, T_world_link, T_world_shape, row_support, world_f,
               world_i)
    local = np.empty((n_rows, 2, 3))
    jac = np.empty((n_rows, child_link.shape[0] if jacobians else 0))
    if n_rows:
        jacobian_and_local_points(T_world_link, out_cfg, shape_pair, _i1(world_i, _W_SHAPE_LINK),
                                  _i1(world_i, _W_OWNER_LINK), _f3(world_f, world_i, _W_OWNER_OFFSET), child_link,
                                  _f2(world_f, world_i, _W_AXIS), _i1(world_i, _W_PRISMATIC),
                                  _f2(world_f, world_i, _W_CHAIN), pts, nrm, jacobians, jac, local)
    return out_cfg, out_pair, padded, pts, nrm, subs, smooth, local, jac, plain


# ----- one configuration's rows in one call: the outputs in buffers, nothing boxed --------------------------------
# what single_rows left done (info[0]): its first distances (coal's rows left), the rows settled (narrow-phase or
# off-mesh rows left), or the answer's rows
SINGLE_FIRST, SINGLE_SETTLED, SINGLE_DONE = 1, 2, 3
# what single_settled_rows left: penetrating rows its kernel did not answer (the per-row path's), in the slow rows' place
SINGLE_LEFT = 4
SINGLE_INFO = 8
# single_settled_rows' penetration constants (``penetration_constants``), by place in its float array
PEN_SANE, PEN_TOL_ABS, PEN_TOL_REL, PEN_LOCAL_RAD, PEN_FEATURE_TOL, PEN_CROSSING_SLACK, PEN_SWITCH_MARGIN, \
    PEN_SAME_BASIN_COS, PEN_BASIN_START, PEN_BASIN_STOP = range(10)


@njit(inline="always")
def single_info_start(n_pairs):
    """Where :func:`single_rows`' info (SINGLE_INFO int64) starts in its int64 buffer, for P checked pairs."""
    return 5 * n_pairs


@njit(inline="always")
def single_support_start(n_pairs):
    """Where :func:`single_rows`' first distances' hull vertices (K, 2) start in its int64 buffer: after the info."""
    return single_info_start(n_pairs) + SINGLE_INFO


def single_buffer_sizes(n_pairs: int, n_movable: int) -> tuple[int, int, int, int, int]:
    """The sizes of :func:`single_rows`'s buffers for P checked pairs (at most P candidate rows) and M movable
    joints: float64, int64, int32, int8 and bool."""
    P = n_pairs
    return 33 * P + n_movable * P, single_support_start(P) + 2 * P, 4 * P, P, 6 * P


@njit(cache=True, fastmath=False)
def single_rows(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, thresholds, eps_m,
                apart_above, sane_below, on_mesh_d2, search_d2, done, check_mesh, k_max, smooth_distance, jacobians,
                no_subshape, F, I, I32, I8, B):
    """:func:`first_distance_rows`, :func:`settle_rows` and :func:`finish_rows` of one configuration's K candidate
    rows in one call, as far as they go without Python, each step's outputs written into the buffers (sizes
    :func:`single_buffer_sizes`; layout below, P the number of checked pairs, M of movable joints), so that no
    array is made for Python between the steps (numba boxes each array it returns: ~0.7 us).

    The call stops after the first distances when some rows are left to coal (``info[0]`` SINGLE_FIRST), after
    settling when rows are left to the narrow phase or to the meshes' distance (SINGLE_SETTLED); the caller goes
    on from there with the same functions on the buffers. Otherwise it assembles the answer's rows (SINGLE_DONE).
    The numbers are those of the three calls, bit for bit (the same functions on the same values).

    Buffers (each step's arrays at the first K, or n, entries of its place)
    -----------------------------------------------------------------------
    F float64: raw [0, P), p0 [P, 4P), p1 [4P, 7P), distance [7P, 8P), points [8P, 14P), normal [14P, 17P), the
      answer's padded distance [17P, 18P), points [18P, 24P), normal [24P, 27P), local points [27P, 33P),
      Jacobian rows over the movable joints [33P, 33P + MP) (n, M).
    I int64: coal rows [0, P), slow rows [P, 2P), off-mesh rows [2P, 3P), the answer's cfg [3P, 4P) and pair
      [4P, 5P), then info: (step, coal rows, slow rows, off-mesh rows, answer rows, plain), then the first
      distances' hull vertices [5P + SINGLE_INFO, 7P + SINGLE_INFO) (K, 2).
    I32: subshapes [0, 2P), the answer's subshapes [2P, 4P). I8: state [0, P).
    B: measured [0, P), exact [P, 2P), deepest [2P, 3P), kink [3P, 4P), overlapping [4P, 5P), smooth [5P, 6P).
    The measured rows' answers (distance ... kink) start as ``checks.clearance._Measured`` makes them.
    """
    P = _i2(pair_i, _P_PAIRS).shape[0]
    k = cfg.shape[0]
    support_at = single_support_start(P)
    info = I[single_info_start(P):support_at]
    raw_b = F[0:P]
    p0_b = F[P:4 * P].reshape((P, 3))
    p1_b = F[4 * P:7 * P].reshape((P, 3))
    dist_b = F[7 * P:8 * P]
    pts_b = F[8 * P:14 * P].reshape((P, 2, 3))
    nrm_b = F[14 * P:17 * P].reshape((P, 3))
    subs_b = I32[0:2 * P].reshape((P, 2))
    state_b = I8[0:P]
    measured_b = B[0:P]
    exact_b = B[P:2 * P]
    deepest_b = B[2 * P:3 * P]
    kink_b = B[3 * P:4 * P]
    raw, p0, p1, measured, coal_rows, support = first_distance_rows(cfg, pair, T_world_shape, world_f, world_i, pair_f,
                                                                    pair_i, eps_m)
    support_b = I[support_at:support_at + 2 * k].reshape((k, 2))
    for r in range(k):
        raw_b[r] = raw[r]
        measured_b[r] = measured[r]
        support_b[r, 0], support_b[r, 1] = support[r, 0], support[r, 1]
        for j in range(3):
            p0_b[r, j] = p0[r, j]
            p1_b[r, j] = p1[r, j]
        state_b[r] = 0
        dist_b[r] = np.inf
        for s in range(2):
            subs_b[r, s] = -1
            for j in range(3):
                pts_b[r, s, j] = 0.0
        for j in range(3):
            nrm_b[r, j] = 0.0
        exact_b[r] = True
        deepest_b[r] = False
        kink_b[r] = False
    n_coal = coal_rows.shape[0]
    for i in range(n_coal):
        I[i] = coal_rows[i]
    info[0], info[1], info[2], info[3], info[4], info[5] = SINGLE_FIRST, n_coal, 0, 0, 0, 1
    if n_coal:
        return
    slow, rest, overlapping = settle_rows(raw, p0, p1, measured, support, cfg, pair, T_world_shape, world_f, world_i, pair_f,
                                          pair_i, thresholds, apart_above, sane_below, on_mesh_d2, done, check_mesh,
                                          dist_b[:k], pts_b[:k], nrm_b[:k], state_b[:k], subs_b[:k], search_d2)
    for i in range(slow.shape[0]):
        I[P + i] = slow[i]
    for i in range(rest.shape[0]):
        I[2 * P + i] = rest[i]
    for r in range(k):
        B[4 * P + r] = overlapping[r]
    info[0], info[2], info[3] = SINGLE_SETTLED, slow.shape[0], rest.shape[0]
    if slow.shape[0] or rest.shape[0]:
        return
    _finish_single(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, k_max, done,
                   smooth_distance, jacobians, no_subshape, F, I, I32, I8, B)


@njit(cache=True, fastmath=False)
def _finish_single(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, k_max, done,
                   smooth_distance, jacobians, no_subshape, F, I, I32, I8, B):
    """:func:`finish_rows` of the measured rows in the buffers (:func:`single_rows`' layout), the answer's rows
    written into them; info SINGLE_DONE."""
    P = _i2(pair_i, _P_PAIRS).shape[0]
    M = _i1(world_i, _W_CHILD_LINK).shape[0]
    k = cfg.shape[0]
    support_at = single_support_start(P)
    info = I[single_info_start(P):support_at]
    out_cfg, out_pair, padded, pts, nrm, subs, smooth, local, jac, plain = finish_rows(
        I8[0:k], F[7 * P:7 * P + k], F[8 * P:8 * P + 6 * k].reshape((k, 2, 3)), F[14 * P:14 * P + 3 * k].reshape((k, 3)),
        I32[0:2 * k].reshape((k, 2)), B[P:P + k], B[2 * P:2 * P + k], B[3 * P:3 * P + k], cfg, pair, T_world_link,
        T_world_shape, I[support_at:support_at + 2 * k].reshape((k, 2)), world_f, world_i, pair_f, pair_i, k_max, done,
        smooth_distance, jacobians, no_subshape)
    n = out_cfg.shape[0]
    jac_b = F[33 * P:33 * P + M * P].reshape((P, M))
    for r in range(n):
        I[3 * P + r] = out_cfg[r]
        I[4 * P + r] = out_pair[r]
        F[17 * P + r] = padded[r]
        B[5 * P + r] = smooth[r]
        for s in range(2):
            I32[2 * P + 2 * r + s] = subs[r, s]
            for j in range(3):
                F[18 * P + 6 * r + 3 * s + j] = pts[r, s, j]
                F[27 * P + 6 * r + 3 * s + j] = local[r, s, j]
        for j in range(3):
            F[24 * P + 3 * r + j] = nrm[r, j]
        for j in range(jac.shape[1]):
            jac_b[r, j] = jac[r, j]
    info[0], info[4], info[5] = SINGLE_DONE, n, 1 if plain else 0


@njit(cache=True, fastmath=False)
def single_settled_rows(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, thresholds, pairs,
                        closed, bvh, slot, bodies, pen, disc_cos, disc_sin, k_max, done, culled, smooth_distance,
                        jacobians, no_subshape, F, I, I32, I8, B):
    """After :func:`single_rows` stopped at SINGLE_SETTLED with narrow-phase rows only (no off-mesh row): its
    penetrating convex rows answered (``penetrating_rows.slow_convex_rows``), the rows beyond their thresholds
    culled and the answer's rows assembled (SINGLE_DONE), in this one call; the Python steps between
    (``checks.clearance._narrow_phase``, ``_finished_rows``) on the same numbers, so the same bits.

    It does nothing (info stays SINGLE_SETTLED) where a row is off its mesh, or where a slow row's shape has not been
    looked at yet (``slot`` -2: its body is made in Python, ``checks.clearance._ConvexPacks``); it stops at
    SINGLE_LEFT, the rows the kernel left (the per-row path's) in the slow rows' place, where some are left.

    ``pairs``, ``closed``, ``bvh``, ``slot``, ``bodies``: as ``slow_convex_rows`` takes them; ``pen`` (10,) its
    constants by place (PEN_SANE ...); ``disc_cos``, ``disc_sin`` the features' disc; ``culled`` the state code
    of a row culled. The rest as :func:`single_rows`.
    """
    P = _i2(pair_i, _P_PAIRS).shape[0]
    k = cfg.shape[0]
    info = I[single_info_start(P):single_support_start(P)]
    n_slow = info[2]
    if info[0] != SINGLE_SETTLED or info[3] != 0 or n_slow == 0:
        return
    slow = I[P:P + n_slow]
    for i in range(n_slow):
        if slot[pairs[pair[slow[i]], 0]] == -2 or slot[pairs[pair[slow[i]], 1]] == -2:
            return
    state_b = I8[0:k]
    dist_b = F[7 * P:7 * P + k]
    left = slow_convex_rows(
        slow, cfg, pair, pairs, closed, bvh, slot, B[4 * P:4 * P + k], F[0:k], F[P:P + 3 * k].reshape((k, 3)),
        F[4 * P:4 * P + 3 * k].reshape((k, 3)), T_world_shape, bodies, pen[PEN_SANE], pen[PEN_TOL_ABS],
        pen[PEN_TOL_REL], pen[PEN_LOCAL_RAD], pen[PEN_FEATURE_TOL], disc_cos, disc_sin, pen[PEN_CROSSING_SLACK],
        pen[PEN_SWITCH_MARGIN], pen[PEN_SAME_BASIN_COS], pen[PEN_BASIN_START], pen[PEN_BASIN_STOP], done, state_b,
        dist_b, F[8 * P:8 * P + 6 * k].reshape((k, 2, 3)), F[14 * P:14 * P + 3 * k].reshape((k, 3)),
        I32[0:2 * k].reshape((k, 2)), B[P:P + k], B[2 * P:2 * P + k], B[3 * P:3 * P + k])
    n_left = left.shape[0]
    for i in range(n_left):
        I[P + i] = left[i]
    info[2] = n_left
    if n_left:
        info[0] = SINGLE_LEFT
        return
    for r in range(k):                 # (checks.clearance._narrow_phase's culling after the slow rows)
        if state_b[r] == done and not dist_b[r] < thresholds[pair[r]]:
            state_b[r] = culled
    _finish_single(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, k_max, done,
                   smooth_distance, jacobians, no_subshape, F, I, I32, I8, B)


@njit(cache=True, fastmath=False)
def single_request_rows(values, indices, current, check_limits, floats, ints, pairs, thresholds, poses, rows,
                        T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, eps_m, apart_above, sane_below,
                        on_mesh_d2, search_d2, done, check_mesh, k_max, smooth_distance, jacobians, no_subshape, closed,
                        bvh, slot, bodies, pen, disc_cos, disc_sin, culled, F, I, I32, I8, B):
    """A one-configuration request's compiled steps in one call: :func:`candidate_rows` (``values`` (1, K); its
    arguments first, ``T_world_link`` and ``T_world_shape`` the views of ``poses`` it fills), then, where it found
    candidate rows, :func:`single_rows` and :func:`single_settled_rows` of them (their arguments after, in their
    order). The same numbers as the three calls (the same functions on the same values), without two of the calls
    from Python and the Python between them.

    Returns candidate_rows' answer: the number of candidate rows (the rows' steps ran on ``rows[:, :count]`` where
    it is positive, ``I``'s info as they left it) or a refusal code (CANDIDATES_NON_FINITE,
    CANDIDATES_OUT_OF_LIMITS)."""
    count = candidate_rows(values, indices, current, check_limits, floats, ints, pairs, thresholds, poses, rows)
    if count <= 0:
        return count
    cfg = rows[0, :count]
    pair = rows[1, :count]
    single_rows(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, thresholds, eps_m,
                apart_above, sane_below, on_mesh_d2, search_d2, done, check_mesh, k_max, smooth_distance, jacobians,
                no_subshape, F, I, I32, I8, B)
    single_settled_rows(cfg, pair, T_world_link, T_world_shape, world_f, world_i, pair_f, pair_i, thresholds, pairs,
                        closed, bvh, slot, bodies, pen, disc_cos, disc_sin, k_max, done, culled, smooth_distance,
                        jacobians, no_subshape, F, I, I32, I8, B)
    return count
