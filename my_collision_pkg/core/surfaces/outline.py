"""The outline of a triangulation: which edges are on its boundary, chained into loops.

Triangles are (T, 3) int64 vertex indices; an edge is the unordered pair of its two
vertices, and one that a single triangle uses lies on the boundary.
"""
from __future__ import annotations

import numpy as np

#: Edge (i, j), i < j, is keyed i * EDGE_KEY_BASE + j (vertex counts stay far below it).
EDGE_KEY_BASE = np.int64(1) << np.int64(31)


def unique_edges(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The unique edges of a triangulation (E of them) and how its triangles use them.

    Returns
    -------
    keys : np.ndarray
        (E,) int64 sorted keys ``low * EDGE_KEY_BASE + high`` of the vertex pairs.
    directed : np.ndarray
        (E, 2) the vertex pair as wound in the first triangle that uses it (inside on its left).
    of_triangle : np.ndarray
        (T, 3) int64: edge ``k`` of a triangle runs from its corner ``k`` to corner ``k + 1``.
    uses : np.ndarray
        (E,) how many triangles use the edge: 1 on the boundary, 2 inside.
    """
    corner_pairs = np.stack(
        [triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]], axis=1
    ).reshape(-1, 2)
    low = corner_pairs.min(axis=1)
    high = corner_pairs.max(axis=1)
    keys, first_use, of_triangle, uses = np.unique(
        low * EDGE_KEY_BASE + high, return_index=True, return_inverse=True, return_counts=True
    )
    return keys, corner_pairs[first_use], of_triangle.reshape(-1, 3), uses


def boundary_loops(triangles: np.ndarray) -> tuple[np.ndarray, ...]:
    """The outline of a triangulation: its boundary edges chained into closed loops.

    A boundary edge is used by exactly one triangle; it is followed in that triangle's
    winding (counter-clockwise triangles give counter-clockwise outer loops and clockwise
    holes).

    Parameters
    ----------
    triangles : np.ndarray
        (T, 3) int64 vertex indices, consistently wound.

    Returns
    -------
    tuple of np.ndarray
        One int64 array of vertex indices per loop, closed (last index = first).
    """
    _, directed, _, uses = unique_edges(triangles)
    boundary = np.flatnonzero(uses == 1)
    tails = directed[boundary, 0].tolist()
    heads = directed[boundary, 1].tolist()
    leaving: dict[int, list[int]] = {}
    for edge, tail in enumerate(tails):
        leaving.setdefault(tail, []).append(edge)
    used = [False] * len(tails)
    loops = []
    for first_edge in range(len(tails)):
        if used[first_edge]:
            continue
        loop = [tails[first_edge]]
        edge = first_edge
        while True:
            used[edge] = True
            vertex = heads[edge]
            loop.append(vertex)
            if vertex == loop[0]:
                break
            unused = [candidate for candidate in leaving.get(vertex, ()) if not used[candidate]]
            if not unused:  # cannot happen on a valid triangulation; close the strip anyway
                loop.append(loop[0])
                break
            edge = unused[0]
        loops.append(np.asarray(loop, dtype=np.int64))
    return tuple(loops)
