"""Compiled thickness of a solid along vertical lines (numba), for the contact surfaces.

:func:`thickness_along_lines` measures, for each point of a grid, the length of the
vertical line through it that lies inside a closed solid given by its binned upright
triangles (``core.surfaces.contact_surface`` prepares the bins). Metres throughout.
"""
from __future__ import annotations

import numpy as np
from numba import njit


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
    as the vectorised numpy form it replaced in ``core.surfaces.contact_surface``.
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

