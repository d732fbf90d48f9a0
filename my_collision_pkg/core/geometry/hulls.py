"""The edges of a point set's convex hull, for the compiled support search of :mod:`kernels.gjk`."""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError


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
