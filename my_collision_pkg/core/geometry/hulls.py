"""The edges of a point set's convex hull, for the compiled support search of :mod:`kernels.gjk`."""
from __future__ import annotations

import weakref

import numpy as np
from scipy.spatial import ConvexHull, QhullError

# hull_edges per live array (id -> (weak reference, edges)), for kept_hull_edges
_KEPT: dict[int, tuple[weakref.ref, list]] = {}


def hull_edges(points: np.ndarray) -> list[np.ndarray]:
    """Per point of ``points`` (V, 3), the sorted indices of its neighbours along the edges of
    their convex hull's triangulated faces (none for a point inside the hull); every list is
    empty when qhull cannot build the hull (flat or degenerate points)."""
    near: list[set] = [set() for _ in range(len(points))]
    try:
        hull = ConvexHull(np.asarray(points, dtype=float))
    except (QhullError, ValueError):
        return [np.zeros(0, dtype=np.int64) for _ in near]
    for i, j, k in hull.simplices.tolist():
        near[i].update((j, k))
        near[j].update((i, k))
        near[k].update((i, j))
    return [np.array(sorted(n), dtype=np.int64) for n in near]


def kept_hull_edges(points: np.ndarray) -> list[np.ndarray]:
    """:func:`hull_edges` of an array that is never changed once made (a shape's hull vertices),
    computed once while the array lives: a new world snapshot that keeps a shape's geometry (a
    scene update, a new octomap) does not run qhull on it again (the Panda's 13 hulls took
    about 8 ms, which the first motion check of every snapshot paid)."""
    key = id(points)
    kept = _KEPT.get(key)
    if kept is not None and kept[0]() is points:
        return kept[1]
    edges = hull_edges(points)
    _KEPT[key] = (weakref.ref(points, lambda _, k=key: _KEPT.pop(k, None)), edges)
    return edges
