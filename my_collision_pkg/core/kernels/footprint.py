"""Compiled footprint of a convex overlap on the contact plane (numba), for the contact surfaces.

The same computation as ``core.surfaces.contact_surface`` does in numpy for a convex polytope (its
faces from qhull, in the plane frame: the plane is z = 0, z along the contact normal), in one call:

- :func:`polytope_volume_centroid`: the volume and volume centroid, summed over the tetrahedra on
  each hull triangle and the mean of the hull's vertices;
- :func:`convex_footprint`: the footprint drawn with the faces of one side (upward faces ``n_z >
  wall``, downward ``n_z < -wall``): the side that is not one plane (else the one with more faces),
  its triangles turned counter-clockwise about z (zero-area ones dropped), the vertices they use
  (in ascending index order) with the thickness there (the upper faces' lowest height minus the
  lower faces' highest, clipped to [0, height span]), and the outline: the used vertices that a
  face of the other side meets, ordered by angle about their mean.

Metres; arrays float64 / int64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def polytope_volume_centroid(points, simplices, hull_vertices, out_centroid):
    """Volume (m^3) of the convex hull of ``points`` (N, 3) given its triangles ``simplices`` (S, 3) and
    vertex indices ``hull_vertices`` (H,); its centroid to ``out_centroid`` (3,). A volume <= 0: none."""
    a0 = a1 = a2 = 0.0
    for i in range(hull_vertices.shape[0]):
        v = hull_vertices[i]
        a0 += points[v, 0]
        a1 += points[v, 1]
        a2 += points[v, 2]
    count = hull_vertices.shape[0]
    a0, a1, a2 = a0 / count, a1 / count, a2 / count
    total = 0.0
    m0 = m1 = m2 = 0.0
    for s in range(simplices.shape[0]):
        i, j, k = simplices[s, 0], simplices[s, 1], simplices[s, 2]
        x0, x1, x2 = points[i, 0] - a0, points[i, 1] - a1, points[i, 2] - a2
        y0, y1, y2 = points[j, 0] - a0, points[j, 1] - a1, points[j, 2] - a2
        z0, z1, z2 = points[k, 0] - a0, points[k, 1] - a1, points[k, 2] - a2
        volume = abs(x0 * (y1 * z2 - y2 * z1) + x1 * (y2 * z0 - y0 * z2) + x2 * (y0 * z1 - y1 * z0)) / 6.0
        total += volume
        m0 += volume * (x0 + y0 + z0)
        m1 += volume * (x1 + y1 + z1)
        m2 += volume * (x2 + y2 + z2)
    if total > 0.0:
        out_centroid[0] = a0 + m0 / (4.0 * total)
        out_centroid[1] = a1 + m1 / (4.0 * total)
        out_centroid[2] = a2 + m2 / (4.0 * total)
    return total


@njit(inline="always")
def _flat(equations, mask, tolerance):
    """Whether the unit normals of the faces in ``mask`` all equal the first one's within ``tolerance``."""
    first = -1
    for s in range(equations.shape[0]):
        if not mask[s]:
            continue
        if first < 0:
            first = s
            continue
        for k in range(3):
            if not abs(equations[s, k] - equations[first, k]) <= tolerance:
                return False
    return True


@njit(cache=True, nogil=True)
def convex_footprint(points, simplices, equations, wall, flat):
    """The footprint of a convex polytope (plane frame) drawn with one side's faces.

    Parameters
    ----------
    points : (N, 3) the polytope's points (its vertices among them), plane frame.
    simplices : (S, 3) int64 its hull triangles; equations : (S, 4) their outward unit normals and offsets
        (inside: ``n . x + offset <= 0``).
    wall : a face with ``|n_z| <= wall`` is a wall (neither side); flat : normals equal within this are one plane.

    Returns
    -------
    (ok, points_xy (M, 2), triangles (T, 3) into points_xy, thickness (M,), outline (L + 1,) closed loop
    into points_xy, area m^2). ``ok`` False (the rest empty) when a side has no face.
    """
    n = points.shape[0]
    s_count = simplices.shape[0]
    low, high = np.inf, -np.inf
    for i in range(n):
        low = min(low, points[i, 2])
        high = max(high, points[i, 2])
    up = np.empty(s_count, dtype=np.bool_)
    down = np.empty(s_count, dtype=np.bool_)
    n_up = n_down = 0
    for s in range(s_count):
        up[s] = equations[s, 2] > wall
        down[s] = equations[s, 2] < -wall
        n_up += up[s]
        n_down += down[s]
    if n_up == 0 or n_down == 0:
        return (False, np.empty((0, 2)), np.empty((0, 3), dtype=np.int64), np.empty(0),
                np.empty(0, dtype=np.int64), 0.0)
    flat_up, flat_down = _flat(equations, up, flat), _flat(equations, down, flat)
    if flat_up != flat_down:
        side = down if flat_up else up
    else:
        side = up if n_up >= n_down else down
    # the side's triangles, counter-clockwise in x-y; the area of all of them
    kept = np.empty((s_count, 3), dtype=np.int64)
    n_kept = 0
    area = 0.0
    for s in range(s_count):
        if not side[s]:
            continue
        i, j, k = simplices[s, 0], simplices[s, 1], simplices[s, 2]
        e0, e1 = points[j, 0] - points[i, 0], points[j, 1] - points[i, 1]
        f0, f1 = points[k, 0] - points[i, 0], points[k, 1] - points[i, 1]
        signed = 0.5 * (e0 * f1 - e1 * f0)
        area += abs(signed)
        if signed == 0.0:
            continue
        kept[n_kept, 0] = i
        if signed < 0.0:
            kept[n_kept, 1], kept[n_kept, 2] = k, j
        else:
            kept[n_kept, 1], kept[n_kept, 2] = j, k
        n_kept += 1
    on_outline = np.zeros(n, dtype=np.bool_)
    for s in range(s_count):
        if not side[s]:
            for c in range(3):
                on_outline[simplices[s, c]] = True
    # the vertices the kept triangles use, in ascending order (as np.unique), and the triangles on them
    index = np.full(n, -1, dtype=np.int64)
    for t in range(n_kept):
        for c in range(3):
            index[kept[t, c]] = 0
    m = 0
    for i in range(n):
        if index[i] == 0:
            index[i] = m
            m += 1
    used = np.empty(m, dtype=np.int64)
    for i in range(n):
        if index[i] >= 0:
            used[index[i]] = i
    triangles = np.empty((n_kept, 3), dtype=np.int64)
    for t in range(n_kept):
        for c in range(3):
            triangles[t, c] = index[kept[t, c]]
    points_xy = np.empty((m, 2))
    thickness = np.empty(m)
    span = high - low
    n_boundary = 0
    for v in range(m):
        p = used[v]
        x, y = points[p, 0], points[p, 1]
        points_xy[v, 0], points_xy[v, 1] = x, y
        top, bottom = np.inf, -np.inf
        for s in range(s_count):
            if up[s] or down[s]:
                z = -(equations[s, 3] + (x * equations[s, 0] + y * equations[s, 1])) / equations[s, 2]
                if up[s]:
                    top = min(top, z)
                else:
                    bottom = max(bottom, z)
        thickness[v] = min(max(top - bottom, 0.0), span)
        n_boundary += on_outline[p]
    # the outline: boundary vertices by angle about their mean
    boundary = np.empty(n_boundary, dtype=np.int64)
    c0 = c1 = 0.0
    b = 0
    for v in range(m):
        if on_outline[used[v]]:
            boundary[b] = v
            c0 += points_xy[v, 0]
            c1 += points_xy[v, 1]
            b += 1
    outline = np.empty(n_boundary + 1 if n_boundary > 0 else 0, dtype=np.int64)
    if n_boundary > 0:
        c0, c1 = c0 / n_boundary, c1 / n_boundary
        angles = np.empty(n_boundary)
        for b in range(n_boundary):
            angles[b] = math.atan2(points_xy[boundary[b], 1] - c1, points_xy[boundary[b], 0] - c0)
        order = np.argsort(angles, kind="mergesort")
        for b in range(n_boundary):
            outline[b] = boundary[order[b]]
        outline[n_boundary] = outline[0]
    return True, points_xy, triangles, thickness, outline, area
