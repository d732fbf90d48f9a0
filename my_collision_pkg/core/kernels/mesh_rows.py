"""The surface distance of clearance's apart mesh rows whose hull witness points are off their meshes (numba).

``checks.clearance`` measures a mesh pair first on the convex hulls. When the hulls are apart but a hull
witness point is not on its mesh (it lies on a hull face that bridges a concavity), the row needs the
meshes' own distance; coal's BVH mesh distance answered it (~100-1000 us a row). Here it is answered from
what the hull distance already gives, exactly:

- an upper bound U: each mesh side's hull witness point projected onto its mesh (the nearest surface point,
  through the mesh's tree), a box side's hull witness point as it is (the box is its own hull); the distance
  between those two surface points is attained, so the meshes' distance is at most U;
- a lower bound per pair of triangles: along the hull normal n (a -> b), ``min over t_b of n . x`` minus
  ``max over t_a of n . x`` (a projection onto a unit vector shortens no distance).

Only pairs whose lower bound is at most U can hold the nearest points; with n the hulls' normal these are
the few triangles next to each hull's supporting plane. They are measured in increasing bound with the
closed-form distance of two triangles (the least of the six corner-triangle and nine edge-edge distances:
exact for triangles that do not meet, which holds here as the solids are apart) until the bound reaches the
least distance found. The answer is the least distance over every pair of triangles of the two surfaces (a
box side: its twelve surface triangles), to rounding (~1e-16 m), whatever the order of work. Sides that are
neither a packed closed mesh nor a box (cylinders, open meshes) are left to the caller (coal).

Arrays are float64, metres; ``T_world_x`` (4, 4) is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.mesh_queries import closest_on_triangle, tree_closest_point

# the upper bound's slack: relative and absolute (metres), far above the rounding of a projection and a norm
# and the compiled GJK's witness point on a box side (its gap 1e-12 m), so that the pair holding the nearest
# points is never pruned by rounding (a looser bound only keeps a few more pairs)
_BOUND_REL = 1e-9
_BOUND_ABS_M = 1e-9
# a triangle's bounding sphere is grown by this (metres), and a sphere's distance to a box shrunk by it: rounding
# never lets a lower bound exceed a true distance (a looser bound only measures a pair more)
_SPHERE_SLACK_M = 1e-12

# a box's twelve surface triangles, by corner (corner c at (+-hx, +-hy, +-hz), the sign of axis i set where
# bit i of c is)
_BOX_FACES = np.array([[0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3], [0, 4, 5], [0, 5, 1],
                       [2, 3, 7], [2, 7, 6], [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5]], dtype=np.int64)


@njit(cache=True)
def box_triangles(hx, hy, hz):
    """The twelve surface triangles (12, 3, 3) of a box of half-extents hx, hy, hz, in its own frame."""
    out = np.empty((12, 3, 3))
    for f in range(12):
        for i in range(3):
            c = _BOX_FACES[f, i]
            out[f, i, 0] = hx if c & 1 else -hx
            out[f, i, 1] = hy if c & 2 else -hy
            out[f, i, 2] = hz if c & 4 else -hz
    return out


@njit(cache=True)
def _segments_nearest(px, py, pz, qx, qy, qz, ux, uy, uz, vx, vy, vz):
    """The nearest points of segments p-q and u-v (clamped closest points of the two lines, Ericson, Real-Time
    Collision Detection, 5.1.9): (squared distance, point on p-q (3), point on u-v (3))."""
    d1x, d1y, d1z = qx - px, qy - py, qz - pz
    d2x, d2y, d2z = vx - ux, vy - uy, vz - uz
    rx, ry, rz = px - ux, py - uy, pz - uz
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    s = 0.0
    t = 0.0
    if a <= 1e-30 and e <= 1e-30:
        pass
    elif a <= 1e-30:
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = d1x * rx + d1y * ry + d1z * rz
        if e <= 1e-30:
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = d1x * d2x + d1y * d2y + d1z * d2z
            denom = a * e - b * b
            if denom > 0.0:
                s = min(max((b * f - c * e) / denom, 0.0), 1.0)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    c1x, c1y, c1z = px + d1x * s, py + d1y * s, pz + d1z * s
    c2x, c2y, c2z = ux + d2x * t, uy + d2y * t, uz + d2z * t
    return (c1x - c2x) ** 2 + (c1y - c2y) ** 2 + (c1z - c2z) ** 2, c1x, c1y, c1z, c2x, c2y, c2z


@njit(cache=True)
def triangles_nearest(wa, i, wb, j, p, out, w):
    """The squared distance of two triangles ``wa[i]`` and ``wb[j]`` (same frame) that do not meet: the least of
    the six corner-triangle and nine edge-edge distances. Writes ``w`` (6,): the point on wa[i], then the point
    on wb[j] (the first of equal least candidates, in that order). ``p``, ``out`` (3,): scratch."""
    best = np.inf
    for c in range(3):                       # a corner of a against triangle b
        p[0], p[1], p[2] = wa[i, c, 0], wa[i, c, 1], wa[i, c, 2]
        closest_on_triangle(p, wb, j, out)
        d2 = (out[0] - p[0]) ** 2 + (out[1] - p[1]) ** 2 + (out[2] - p[2]) ** 2
        if d2 < best:
            best = d2
            w[0], w[1], w[2], w[3], w[4], w[5] = p[0], p[1], p[2], out[0], out[1], out[2]
    for c in range(3):                       # a corner of b against triangle a
        p[0], p[1], p[2] = wb[j, c, 0], wb[j, c, 1], wb[j, c, 2]
        closest_on_triangle(p, wa, i, out)
        d2 = (out[0] - p[0]) ** 2 + (out[1] - p[1]) ** 2 + (out[2] - p[2]) ** 2
        if d2 < best:
            best = d2
            w[0], w[1], w[2], w[3], w[4], w[5] = out[0], out[1], out[2], p[0], p[1], p[2]
    for e in range(3):
        e1 = (e + 1) % 3
        for f in range(3):
            f1 = (f + 1) % 3
            d2, ax, ay, az, bx, by, bz = _segments_nearest(
                wa[i, e, 0], wa[i, e, 1], wa[i, e, 2], wa[i, e1, 0], wa[i, e1, 1], wa[i, e1, 2],
                wb[j, f, 0], wb[j, f, 1], wb[j, f, 2], wb[j, f1, 0], wb[j, f1, 1], wb[j, f1, 2])
            if d2 < best:
                best = d2
                w[0], w[1], w[2], w[3], w[4], w[5] = ax, ay, az, bx, by, bz
    return best


@njit(cache=True)
def _heights(tris, T, nx, ny, nz, highest):
    """Each triangle's highest (``highest``) or lowest point along the world direction n, with the triangles
    (T, 3, 3) in the frame posed at T: (T,)."""
    lx = T[0, 0] * nx + T[1, 0] * ny + T[2, 0] * nz
    ly = T[0, 1] * nx + T[1, 1] * ny + T[2, 1] * nz
    lz = T[0, 2] * nx + T[1, 2] * ny + T[2, 2] * nz
    offset = T[0, 3] * nx + T[1, 3] * ny + T[2, 3] * nz
    out = np.empty(tris.shape[0])
    for t in range(tris.shape[0]):
        h0 = tris[t, 0, 0] * lx + tris[t, 0, 1] * ly + tris[t, 0, 2] * lz
        h1 = tris[t, 1, 0] * lx + tris[t, 1, 1] * ly + tris[t, 1, 2] * lz
        h2 = tris[t, 2, 0] * lx + tris[t, 2, 1] * ly + tris[t, 2, 2] * lz
        out[t] = (max(h0, max(h1, h2)) if highest else min(h0, min(h1, h2))) + offset
    return out


@njit(cache=True)
def _posed(tris, keep, T):
    """The triangles ``tris[keep]`` posed at T (world frame): (len(keep), 3, 3)."""
    out = np.empty((keep.shape[0], 3, 3))
    for m in range(keep.shape[0]):
        t = keep[m]
        for c in range(3):
            x, y, z = tris[t, c, 0], tris[t, c, 1], tris[t, c, 2]
            out[m, c, 0] = T[0, 0] * x + T[0, 1] * y + T[0, 2] * z + T[0, 3]
            out[m, c, 1] = T[1, 0] * x + T[1, 1] * y + T[1, 2] * z + T[1, 3]
            out[m, c, 2] = T[2, 0] * x + T[2, 1] * y + T[2, 2] * z + T[2, 3]
    return out


@njit(cache=True)
def _spheres(w):
    """Bounding spheres (T, 4) (centre, radius) of triangles ``w`` (T, 3, 3): the centroid and the farthest corner,
    the radius grown by ``_SPHERE_SLACK_M`` so that rounding never makes a sphere bound exceed a true distance."""
    out = np.empty((w.shape[0], 4))
    for t in range(w.shape[0]):
        cx = (w[t, 0, 0] + w[t, 1, 0] + w[t, 2, 0]) / 3.0
        cy = (w[t, 0, 1] + w[t, 1, 1] + w[t, 2, 1]) / 3.0
        cz = (w[t, 0, 2] + w[t, 1, 2] + w[t, 2, 2]) / 3.0
        r2 = 0.0
        for c in range(3):
            r2 = max(r2, (w[t, c, 0] - cx) ** 2 + (w[t, c, 1] - cy) ** 2 + (w[t, c, 2] - cz) ** 2)
        out[t, 0], out[t, 1], out[t, 2], out[t, 3] = cx, cy, cz, math.sqrt(r2) + _SPHERE_SLACK_M
    return out


@njit(cache=True)
def _box_gaps(spheres, T, half):
    """Each sphere's distance to the solid box of half-extents ``half`` posed at T (0 where they meet): a lower
    bound of the distance between the sphere's triangle and any of the box's triangles."""
    out = np.empty(spheres.shape[0])
    for t in range(spheres.shape[0]):
        d2 = 0.0
        for i in range(3):
            x = T[0, i] * (spheres[t, 0] - T[0, 3]) + T[1, i] * (spheres[t, 1] - T[1, 3]) + \
                T[2, i] * (spheres[t, 2] - T[2, 3])
            e = max(abs(x) - half[i], 0.0)
            d2 += e * e
        out[t] = math.sqrt(d2) - spheres[t, 3] - _SPHERE_SLACK_M
    return out


@njit(cache=True)
def _on_surface(tris, slot, point, T, node_start, bounds, nodes, order, face_normals, t0, out_world):
    """``point`` (world) projected onto a packed mesh's surface (``slot`` >= 0; its triangles ``tris`` from packed
    triangle ``t0``), or kept as it is (a box: the hull witness point is on the box), into ``out_world``."""
    if slot < 0:
        out_world[0], out_world[1], out_world[2] = point[0], point[1], point[2]
        return
    local = np.empty(3)
    for i in range(3):
        local[i] = T[0, i] * (point[0] - T[0, 3]) + T[1, i] * (point[1] - T[1, 3]) + T[2, i] * (point[2] - T[2, 3])
    nearest = np.empty(3)
    n0, n1 = node_start[slot], node_start[slot + 1]
    t1 = t0 + tris.shape[0]
    tree_closest_point(local, tris, bounds[n0:n1], nodes[n0:n1], order[t0:t1], nearest, -1, face_normals[t0:t1])
    for i in range(3):
        out_world[i] = T[i, 0] * nearest[0] + T[i, 1] * nearest[1] + T[i, 2] * nearest[2] + T[i, 3]


@njit(cache=True)
def mesh_surface_rows(rows, cfg, shape_pair, mesh_slot, T_world_shape, is_box, params, triangle_start, node_start,
                      triangles, bounds, nodes, order, face_normals, sane_below, done, out_state, out_distance,
                      out_points, out_normal, out_subshapes, out_work):
    """The meshes' own distance of apart rows whose hull witness points are off their meshes (see the module).

    Parameters
    ----------
    rows : (R,) int64, the rows to measure, each with its hulls' witness points ``out_points[k]`` (on a, on b) and
        unit normal ``out_normal[k]`` (a -> b) on entry.
    cfg : (K,) int64, each row's configuration in ``T_world_shape`` (N, S, 4, 4).
    shape_pair, mesh_slot : (K, 2) int64, each row's shapes and their meshes in the packed trees (-1: none).
    is_box, params : (S,) bool, (S, 3): shapes that are a box (a primitive solid, not a mesh) and each shape's
        sizes (``gjk.ConvexArrays``; a box: half-extents).
    triangle_start ... face_normals : the packed meshes (``witness_check.pack_meshes``).
    sane_below : an answer whose distance is not in (0, this) or whose witness points coincide is left.
    done : the state written for a row settled.
    out_state, out_distance, out_points, out_normal, out_subshapes : a settled row's state, distance, witness points
        (on a; on b at ``p0 + d n``), unit normal (p1 - p0) / |p1 - p0| and triangles (-1 on a box side).
    out_work : (K,) int64, written for each row measured: the triangle pairs measured.

    Returns
    -------
    The rows left (a side neither a packed mesh nor a box, or no sane answer), in order, for coal.
    """
    left = np.zeros(rows.shape[0], dtype=np.bool_)
    p = np.empty(3)
    scratch = np.empty(3)
    w = np.empty(6)
    qa = np.empty(3)
    qb = np.empty(3)
    for r in range(rows.shape[0]):
        k = rows[r]
        a, b = shape_pair[k, 0], shape_pair[k, 1]
        slot_a, slot_b = mesh_slot[k, 0], mesh_slot[k, 1]
        if not (slot_a >= 0 or is_box[a]) or not (slot_b >= 0 or is_box[b]):
            left[r] = True
            continue
        Ta = T_world_shape[cfg[k], a]
        Tb = T_world_shape[cfg[k], b]
        ta0 = triangle_start[slot_a] if slot_a >= 0 else 0
        tb0 = triangle_start[slot_b] if slot_b >= 0 else 0
        tris_a = triangles[ta0:triangle_start[slot_a + 1]] if slot_a >= 0 else \
            box_triangles(params[a, 0], params[a, 1], params[a, 2])
        tris_b = triangles[tb0:triangle_start[slot_b + 1]] if slot_b >= 0 else \
            box_triangles(params[b, 0], params[b, 1], params[b, 2])
        # the upper bound: two surface points
        _on_surface(tris_a, slot_a, out_points[k, 0], Ta, node_start, bounds, nodes, order, face_normals, ta0, qa)
        _on_surface(tris_b, slot_b, out_points[k, 1], Tb, node_start, bounds, nodes, order, face_normals, tb0, qb)
        upper = math.sqrt((qb[0] - qa[0]) ** 2 + (qb[1] - qa[1]) ** 2 + (qb[2] - qa[2]) ** 2)
        upper = upper * (1.0 + _BOUND_REL) + _BOUND_ABS_M
        # the lower bounds along the hull normal
        nx, ny, nz = out_normal[k, 0], out_normal[k, 1], out_normal[k, 2]
        top = _heights(tris_a, Ta, nx, ny, nz, True)
        bottom = _heights(tris_b, Tb, nx, ny, nz, False)
        highest, lowest = top.max(), bottom.min()
        n_a = 0
        keep_a = np.empty(top.shape[0], dtype=np.int64)
        for i in range(top.shape[0]):
            if not lowest - top[i] > upper:
                keep_a[n_a] = i
                n_a += 1
        n_b = 0
        keep_b = np.empty(bottom.shape[0], dtype=np.int64)
        for j in range(bottom.shape[0]):
            if not bottom[j] - highest > upper:
                keep_b[n_b] = j
                n_b += 1
        keep_a, keep_b = keep_a[:n_a], keep_b[:n_b]
        wa = _posed(tris_a, keep_a, Ta)
        wb = _posed(tris_b, keep_b, Tb)
        # lateral bounds: each kept triangle's bounding sphere, and its sphere's distance to a box on the other side
        sa = _spheres(wa)
        sb = _spheres(wb)
        body_a = _box_gaps(sa, Tb, params[b]) if slot_b < 0 else np.zeros(n_a)
        body_b = _box_gaps(sb, Ta, params[a]) if slot_a < 0 else np.zeros(n_b)
        n_pairs = 0
        pair_i = np.empty(n_a * n_b, dtype=np.int64)
        pair_j = np.empty(n_a * n_b, dtype=np.int64)
        pair_bound = np.empty(n_a * n_b)
        for ii in range(n_a):
            if body_a[ii] > upper:
                continue
            for jj in range(n_b):
                bound = max(bottom[keep_b[jj]] - top[keep_a[ii]], max(body_a[ii], body_b[jj]))
                if bound > upper:
                    continue
                dx, dy, dz = sb[jj, 0] - sa[ii, 0], sb[jj, 1] - sa[ii, 1], sb[jj, 2] - sa[ii, 2]
                bound = max(bound, math.sqrt(dx * dx + dy * dy + dz * dz) - sa[ii, 3] - sb[jj, 3])
                if not bound > upper:
                    pair_i[n_pairs], pair_j[n_pairs], pair_bound[n_pairs] = ii, jj, bound
                    n_pairs += 1
        visit = np.argsort(pair_bound[:n_pairs], kind="mergesort")
        best = np.inf
        bi = bj = -1
        x0 = y0 = z0 = x1 = y1 = z1 = 0.0
        work = 0
        for o in range(n_pairs):
            m = visit[o]
            if not pair_bound[m] * abs(pair_bound[m]) < best:      # bound^2 (signed) against the least d^2 so far
                break
            work += 1
            d2 = triangles_nearest(wa, pair_i[m], wb, pair_j[m], p, scratch, w)
            if d2 < best:
                best, bi, bj = d2, keep_a[pair_i[m]], keep_b[pair_j[m]]
                x0, y0, z0, x1, y1, z1 = w[0], w[1], w[2], w[3], w[4], w[5]
        out_work[k] = work
        d = math.sqrt(best)
        gx, gy, gz = x1 - x0, y1 - y0, z1 - z0
        gap = math.sqrt(gx * gx + gy * gy + gz * gz)
        if not (0.0 < d < sane_below and gap > 1e-12):
            left[r] = True
            continue
        gx, gy, gz = gx / gap, gy / gap, gz / gap
        out_state[k] = done
        out_distance[k] = d
        out_points[k, 0, 0], out_points[k, 0, 1], out_points[k, 0, 2] = x0, y0, z0
        out_points[k, 1, 0], out_points[k, 1, 1], out_points[k, 1, 2] = x0 + d * gx, y0 + d * gy, z0 + d * gz
        out_normal[k, 0], out_normal[k, 1], out_normal[k, 2] = gx, gy, gz
        out_subshapes[k, 0] = bi if slot_a >= 0 else -1
        out_subshapes[k, 1] = bj if slot_b >= 0 else -1
    count = 0
    for r in range(rows.shape[0]):
        if left[r]:
            count += 1
    out = np.empty(count, dtype=np.int64)
    count = 0
    for r in range(rows.shape[0]):
        if left[r]:
            out[count] = rows[r]
            count += 1
    return out
