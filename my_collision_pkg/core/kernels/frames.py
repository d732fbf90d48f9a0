"""Moving points and axes between frames inside compiled kernels: the one place the loops are written.

Every helper is ``@njit(inline="always")``: numba pastes its body into the calling
kernel, so a kernel that calls one computes exactly what it computed with the loop
written out (same products, summed in the same order: the translation first, then
the columns 0, 1, 2). ``T_world_x`` (4, 4) is the pose of frame ``x`` in the planning
frame (rotation ``R`` in its first three rows and columns, translation ``t`` in its
last column); points and vectors are (3,) arrays in metres.
"""
from __future__ import annotations

from numba import njit


@njit(inline="always")
def point_to_world(T_world_x, point_x, out_world):
    """``out_world = R @ point_x + t``: a point given in frame x, in the planning frame."""
    for r in range(3):
        acc = T_world_x[r, 3]
        for u in range(3):
            acc += T_world_x[r, u] * point_x[u]
        out_world[r] = acc


@njit(inline="always")
def point_to_frame(T_world_x, point_world, out_x):
    """``out_x = R.T @ (point_world - t)``: a point given in the planning frame, in frame x."""
    for r in range(3):
        acc = 0.0
        for u in range(3):
            acc += T_world_x[u, r] * (point_world[u] - T_world_x[u, 3])
        out_x[r] = acc


@njit(inline="always")
def vector_to_frame(T_world_x, vector_world, out_x):
    """``out_x = R.T @ vector_world``: a direction given in the planning frame, in frame x."""
    for r in range(3):
        acc = 0.0
        for u in range(3):
            acc += T_world_x[u, r] * vector_world[u]
        out_x[r] = acc


@njit(inline="always")
def axes_to_world(T_world_x, axes_x, out_world):
    """``out_world = R @ axes_x``: axes (3, 3) given as columns in frame x, in the planning frame."""
    for r in range(3):
        for col in range(3):
            acc = 0.0
            for u in range(3):
                acc += T_world_x[r, u] * axes_x[u, col]
            out_world[r, col] = acc
