"""Refinement of a contact surface's triangulation where the interpolated pressure misses its integral.

:func:`refine` bisects the longest edges (conforming, shapes bounded) where the
thickness sampled at edge midpoints departs most from linear interpolation, until the
estimated error of the integral is small or a budget is spent. :class:`EdgeTable` holds
the unique edges of a triangulation with their lengths and midpoints. Points are (V, 2)
metres in the contact plane's frame; triangles (T, 3) counter-clockwise.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from my_collision_pkg.core.surfaces.outline import unique_edges
from my_collision_pkg.core.surfaces.plane_geometry import left_normals, triangle_areas, unit_rows

#: Refinement stops when the estimated error of the integrated thickness (hence of the force)
#: is below this fraction of it.
REFINE_RELATIVE_TOLERANCE = 3e-3

#: Each refinement pass splits the edges with the largest estimated errors that together hold
#: this fraction of the total estimated error.
REFINE_MARKED_FRACTION = 0.8

#: Edges longer than this fraction of the patch's bounding-box diagonal are always split, so no
#: triangle is so large that a bump of the thickness field can hide inside it unsampled.
MAX_EDGE_FRACTION = 1.0 / 8.0

#: Edges shorter than this fraction of the patch's bounding-box diagonal are never split: this
#: bounds the refinement where the thickness field has a kink or a jump.
MIN_EDGE_FRACTION = 1.0 / 256.0

#: At most this many refinement passes (each pass splits every marked edge once).
MAX_REFINE_PASSES = 16

#: Refinement stops before a pass that would make the patch exceed this many vertices.
MAX_PATCH_VERTICES = 4000


def refine(
    points_plane: np.ndarray,
    triangles: np.ndarray,
    thickness_m: np.ndarray,
    sample: Callable[[np.ndarray, np.ndarray], np.ndarray],
    patch_diagonal_m: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Refine the triangulation until the integral of the interpolated thickness converges.

    Every pass samples the thickness at the midpoint of each edge it has not seen. Over a
    triangle, the rule ``area / 3 * sum of the edge-midpoint values`` is exact for quadratic
    fields while linear interpolation gives ``area / 3 * sum of the edge means``, so the
    difference, shared among the edges, estimates where and by how much the linear interpolation
    misses the integral. A pass ends the refinement when the estimated total error is below
    ``REFINE_RELATIVE_TOLERANCE`` of the integral and no edge is longer than
    ``MAX_EDGE_FRACTION`` of the patch diagonal. Otherwise it splits the edges with the largest
    estimated errors that together hold ``REFINE_MARKED_FRACTION`` of it (never edges shorter
    than ``MIN_EDGE_FRACTION`` of the patch diagonal), and every over-long edge. It also stops
    after ``MAX_REFINE_PASSES`` passes or before exceeding ``MAX_PATCH_VERTICES`` vertices.

    Splitting is longest-edge bisection, which keeps it conforming and the triangle shapes
    bounded: a triangle with any split edge also has its longest edge split, and is cut from the
    midpoint of that edge to the opposite corner and to the midpoints of its other split edges.

    ``sample(points_plane, inward)`` gives the thickness (N,) at points (N, 2), a boundary point
    being measured a little way along its unit inward direction (N, 2; zero inside the patch).

    Returns the refined points (V, 2), triangles (T, 3) and thickness (V,) in the plane frame.
    """
    min_edge_m = MIN_EDGE_FRACTION * patch_diagonal_m
    max_edge_m = MAX_EDGE_FRACTION * patch_diagonal_m
    cached_keys = np.empty(0, dtype=np.int64)
    cached_thickness = np.empty(0)

    for _ in range(MAX_REFINE_PASSES):
        edges = EdgeTable(points_plane, triangles)
        midpoint_thickness, sampled = _lookup(cached_keys, cached_thickness, edges.keys)
        wanted = ~sampled & (edges.lengths > min_edge_m)
        if np.any(wanted):
            midpoint_thickness[wanted] = sample(
                edges.midpoints[wanted], edges.inward(wanted)
            )
            sampled |= wanted

        areas_m2 = triangle_areas(points_plane, triangles)
        integral_m3 = float(np.sum(areas_m2 * thickness_m[triangles].mean(axis=1)))
        edge_mean = 0.5 * (thickness_m[edges.directed[:, 0]] + thickness_m[edges.directed[:, 1]])
        adjacent_area_m2 = np.bincount(
            edges.of_triangle.ravel(), weights=np.repeat(areas_m2, 3), minlength=len(edges.keys)
        )
        error_m3 = np.where(
            sampled, np.abs(midpoint_thickness - edge_mean) * adjacent_area_m2 / 3.0, 0.0
        )
        error_m3[edges.lengths <= min_edge_m] = 0.0
        too_long = edges.lengths > max_edge_m
        total_error_m3 = float(error_m3.sum())
        converged = total_error_m3 <= REFINE_RELATIVE_TOLERANCE * integral_m3
        if converged and not np.any(too_long):
            break

        marked = too_long.copy()
        if not converged:
            by_error = np.argsort(error_m3)[::-1]
            share = np.cumsum(error_m3[by_error])
            count = int(np.searchsorted(share, REFINE_MARKED_FRACTION * total_error_m3)) + 1
            marked[by_error[:count]] = True
        marked = _close_marks(marked, edges.of_triangle, edges.lengths)
        if len(points_plane) + int(marked.sum()) > MAX_PATCH_VERTICES:
            break
        missing = marked & ~sampled
        if np.any(missing):
            midpoint_thickness[missing] = sample(
                edges.midpoints[missing], edges.inward(missing)
            )
            sampled |= missing
        # Edges that are not split live on into the next pass with their samples (the keys of
        # an edge table are sorted, so the kept ones are too).
        kept = sampled & ~marked
        cached_keys, cached_thickness = edges.keys[kept], midpoint_thickness[kept]

        new_vertex_of_edge = np.full(len(edges.keys), -1, dtype=np.int64)
        new_vertex_of_edge[marked] = len(points_plane) + np.arange(int(marked.sum()))
        points_plane = np.concatenate([points_plane, edges.midpoints[marked]])
        thickness_m = np.concatenate([thickness_m, midpoint_thickness[marked]])
        triangles = _bisect_triangles(triangles, edges, new_vertex_of_edge, marked)

    return points_plane, triangles, thickness_m


class EdgeTable:
    """The unique edges of a triangulation (E of them), how triangles use them, and their geometry.

    ``keys``, ``directed``, ``of_triangle`` and ``uses`` are those of :func:`outline.unique_edges`.

    Attributes
    ----------
    keys : np.ndarray
        (E,) int64 sorted keys ``low * EDGE_KEY_BASE + high`` of the vertex pairs.
    of_triangle : np.ndarray
        (T, 3) int64: edge ``k`` of a triangle runs from its corner ``k`` to corner ``k + 1``.
    uses : np.ndarray
        (E,) how many triangles use the edge: 1 on the boundary, 2 inside.
    directed : np.ndarray
        (E, 2) the vertex pair as wound in one triangle that uses it (inside on its left).
    lengths, midpoints : np.ndarray
        (E,) metres and (E, 2) metres, plane frame.
    """

    def __init__(self, points_plane: np.ndarray, triangles: np.ndarray) -> None:
        self.keys, self.directed, self.of_triangle, self.uses = unique_edges(triangles)
        self._starts = points_plane[self.directed[:, 0]]
        self._ends = points_plane[self.directed[:, 1]]
        self.lengths = np.linalg.norm(self._ends - self._starts, axis=1)
        self.midpoints = 0.5 * (self._starts + self._ends)

    def inward(self, selected: np.ndarray) -> np.ndarray:
        """Unit inward directions at the selected edges' midpoints: zero inside the patch, the
        left normal of the edge on its boundary (the inside is on the left of a wound edge)."""
        inward = unit_rows(left_normals(self._ends[selected] - self._starts[selected]))
        inward[self.uses[selected] != 1] = 0.0
        return inward


def _lookup(
    cached_keys: np.ndarray, cached_thickness: np.ndarray, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the cached midpoint thickness (E,) for edge keys, and which were cached."""
    found = np.zeros(len(keys), dtype=bool)
    thickness = np.zeros(len(keys))
    if len(cached_keys):
        position = np.minimum(np.searchsorted(cached_keys, keys), len(cached_keys) - 1)
        found = cached_keys[position] == keys
        thickness[found] = cached_thickness[position[found]]
    return thickness, found


def _close_marks(marked: np.ndarray, edge_of_triangle: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Extend edge marks until every triangle with a marked edge has its longest edge marked."""
    marked = marked.copy()
    longest_local = np.argmax(lengths[edge_of_triangle], axis=1)
    longest_edge = edge_of_triangle[np.arange(len(edge_of_triangle)), longest_local]
    while True:
        needs = marked[edge_of_triangle].any(axis=1) & ~marked[longest_edge]
        if not np.any(needs):
            return marked
        marked[longest_edge[needs]] = True


def _bisect_triangles(
    triangles: np.ndarray,
    edges: EdgeTable,
    new_vertex_of_edge: np.ndarray,
    marked: np.ndarray,
) -> np.ndarray:
    """Split every triangle with marked edges (its longest edge among them) by bisection.

    With corners rotated to (a, b, c) so that ab is the longest edge and m its midpoint, the
    triangle becomes (a, m, c) and (m, b, c); then (a, m, c) is cut from m to the midpoint of ca
    if ca is marked, and (m, b, c) from m to the midpoint of bc if bc is marked. Winding is kept.
    """
    lengths = edges.lengths[edges.of_triangle]
    rotation = np.argmax(lengths, axis=1)[:, None] + np.arange(3)[None, :]
    rows = np.arange(len(triangles))[:, None]
    corners = triangles[rows, rotation % 3]  # (T, 3): a, b, c
    sides = edges.of_triangle[rows, rotation % 3]  # (T, 3): ab, bc, ca
    split = marked[sides]
    keep = triangles[~split[:, 0]]

    cut = split[:, 0]
    a, b, c = corners[cut].T
    m = new_vertex_of_edge[sides[cut, 0]]
    n_bc = new_vertex_of_edge[sides[cut, 1]]
    k_ca = new_vertex_of_edge[sides[cut, 2]]
    left_cut = split[cut, 2]
    right_cut = split[cut, 1]
    children = [
        keep,
        np.column_stack([a, m, c])[~left_cut],
        np.column_stack([a, m, k_ca])[left_cut],
        np.column_stack([k_ca, m, c])[left_cut],
        np.column_stack([m, b, c])[~right_cut],
        np.column_stack([m, b, n_bc])[right_cut],
        np.column_stack([m, n_bc, c])[right_cut],
    ]
    return np.concatenate(children).astype(np.int64)
