"""Plane-frame helpers of the contact surfaces: 2-D cross products, unit rows, normals, areas.

Points are (N, 2) arrays in metres in the contact plane's frame (z along the contact normal).
"""
from __future__ import annotations

import numpy as np


def cross_2d(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """z component of the cross product of 2-vectors (..., 2) x (..., 2)."""
    return first[..., 0] * second[..., 1] - first[..., 1] * second[..., 0]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row (N, 2) scaled to unit length; zero rows stay zero."""
    lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, lengths, out=np.zeros_like(vectors), where=lengths > 0.0)


def left_normals(directions: np.ndarray) -> np.ndarray:
    """Each direction (N, 2) turned a quarter turn counter-clockwise (the normal on its left)."""
    return np.column_stack([-directions[:, 1], directions[:, 0]])


def triangle_areas(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Signed areas (T,) of 2-D triangles, positive when counter-clockwise."""
    return 0.5 * cross_2d(
        points[triangles[:, 1]] - points[triangles[:, 0]],
        points[triangles[:, 2]] - points[triangles[:, 0]],
    )
