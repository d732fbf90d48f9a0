"""Compiled clipping of a convex solid's edges to another convex solid (numba), for the contact surfaces.

:func:`clip_edges_to_planes` gives the candidate vertices of the overlap of two convex polytopes
from one side: the vertices of the first inside the second, and the points where its edges
cross the second's boundary (``core.surfaces.convex_overlap`` calls it both ways). Metres.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def clip_edges_to_planes(points, edges, planes, lower, upper, touch):
    """Vertices (N, 3) of ``points`` inside the convex set ``planes`` and edge crossings of it.

    ``points`` (V, 3) a solid's hull vertices (and possibly more points inside the hull),
    ``edges`` (E, 2) int64 index pairs of its hull edges, ``planes`` (H, 4) the other convex
    solid's outward unit normals and offsets (inside: ``normal . x <= offset``), ``lower`` and
    ``upper`` (3,) the box both solids' boxes share (nothing outside it can be inside both).
    An edge whose part inside is shorter than ``-touch`` (in its parameter, rounding of a touch
    at a point) still gives that point. Each crossing is given once per edge.
    """
    count = 0
    out = np.empty((points.shape[0] + 2 * edges.shape[0], 3))
    n_planes = planes.shape[0]
    for i in range(points.shape[0]):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        if (px < lower[0] or py < lower[1] or pz < lower[2] or px > upper[0] or py > upper[1]
                or pz > upper[2]):
            continue
        inside = True
        for j in range(n_planes):
            if planes[j, 0] * px + planes[j, 1] * py + planes[j, 2] * pz - planes[j, 3] > 0.0:
                inside = False
                break
        if inside:
            out[count, 0], out[count, 1], out[count, 2] = px, py, pz
            count += 1
    for e in range(edges.shape[0]):
        a, b = edges[e, 0], edges[e, 1]
        near = True
        for k in range(3):
            low = min(points[a, k], points[b, k])
            high = max(points[a, k], points[b, k])
            if low > upper[k] or high < lower[k]:
                near = False
                break
        if not near:
            continue
        t_in, t_out = 0.0, 1.0
        outside = False
        for j in range(n_planes):
            h_start = planes[j, 0] * points[a, 0] + planes[j, 1] * points[a, 1] + planes[j, 2] * points[a, 2] \
                - planes[j, 3]
            h_end = planes[j, 0] * points[b, 0] + planes[j, 1] * points[b, 1] + planes[j, 2] * points[b, 2] \
                - planes[j, 3]
            if h_start > 0.0 and h_end > 0.0:
                outside = True
                break
            if h_start > 0.0:                      # entering (h_end <= 0)
                t_in = max(t_in, h_start / (h_start - h_end))
            elif h_end > 0.0:                      # leaving (h_start <= 0)
                t_out = min(t_out, h_start / (h_start - h_end))
        if outside or t_in > t_out + touch:
            continue
        t_low, t_high = min(t_in, t_out), max(t_in, t_out)
        if t_low > 0.0:
            for k in range(3):
                out[count, k] = points[a, k] + t_low * (points[b, k] - points[a, k])
            count += 1
        if t_high < 1.0:
            for k in range(3):
                out[count, k] = points[a, k] + t_high * (points[b, k] - points[a, k])
            count += 1
    return out[:count]
