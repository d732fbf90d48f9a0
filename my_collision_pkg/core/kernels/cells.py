"""Compiled lookup of occupancy cells (numba): which cells overlap some axis-aligned boxes.

Cells are cubes given by centres (C, 3) sorted by x and side lengths (C,); boxes by their
corners. Used to pick the cells a check replaces the occupancy octree with
(:mod:`my_collision_pkg.core.checks.octomap_cells`).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def cells_in_boxes(centres_sorted_x, sizes, max_size, box_lo, box_hi, out):
    """Mark in ``out`` (C,) bool every cell (centres sorted by x) overlapping one of the boxes.

    A cell overlaps a box when their closed extents meet on every axis. Each box costs a
    binary search on x and a scan of the cells whose x range can reach it.
    """
    n = centres_sorted_x.shape[0]
    xs = centres_sorted_x[:, 0]
    reach = 0.5 * max_size
    for b in range(box_lo.shape[0]):
        start = np.searchsorted(xs, box_lo[b, 0] - reach)
        stop = np.searchsorted(xs, box_hi[b, 0] + reach, side="right")
        for c in range(start, min(stop, n)):
            if out[c]:
                continue
            h = 0.5 * sizes[c]
            inside = True
            for k in range(3):
                if centres_sorted_x[c, k] + h < box_lo[b, k] or centres_sorted_x[c, k] - h > box_hi[b, k]:
                    inside = False
                    break
            if inside:
                out[c] = True
