"""Compiled check of convex-hull witness points against the meshes they stand for (numba).

The clearance call measures a mesh pair by the distance between the meshes' convex hulls
when the hulls are apart. A hull contains its mesh, so the hull distance is a lower bound
of the mesh distance; when each hull witness point also lies on its mesh's surface, the
two witness points are points of the meshes at the hull distance, so the mesh distance is
that distance as well. :func:`project_onto_meshes` gives, for a batch of witness points,
their squared distances to their meshes and the triangles nearest to them, for every mesh
of a world at once (the meshes' triangles and AABB trees packed end to end,
:func:`pack_meshes`).

Arrays are float64 in metres; ``T_world_x`` (4, 4) is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.mesh_queries import tree_closest_point


def pack_meshes(trees, triangle_sets):
    """Pack meshes' AABB trees (``MeshTree``) and triangles (T, 3, 3) end to end for :func:`project_onto_meshes`.

    Returns ``(triangle_start, node_start, triangles, bounds, nodes, order, face_normals)``;
    mesh ``m`` owns triangles ``triangle_start[m]:triangle_start[m + 1]`` and tree nodes
    ``node_start[m]:node_start[m + 1]`` (indices inside each mesh's slices are its own).
    """
    n = len(trees)
    triangle_start = np.zeros(n + 1, dtype=np.int64)
    node_start = np.zeros(n + 1, dtype=np.int64)
    for m in range(n):
        triangle_start[m + 1] = triangle_start[m] + len(triangle_sets[m])
        node_start[m + 1] = node_start[m] + len(trees[m].nodes)
    if n == 0:
        return (triangle_start, node_start, np.zeros((0, 3, 3)), np.zeros((0, 2, 3)), np.zeros((0, 3), dtype=np.int64),
                np.zeros(0, dtype=np.int64), np.zeros((0, 4)))
    triangles = np.ascontiguousarray(np.concatenate([np.asarray(t, dtype=float) for t in triangle_sets]))
    bounds = np.ascontiguousarray(np.concatenate([np.asarray(t.bounds, dtype=float) for t in trees]))
    nodes = np.ascontiguousarray(np.concatenate([np.asarray(t.nodes, dtype=np.int64) for t in trees]))
    order = np.ascontiguousarray(np.concatenate([np.asarray(t.order, dtype=np.int64) for t in trees]))
    face_normals = np.ascontiguousarray(np.concatenate([np.asarray(t.face_normals, dtype=float) for t in trees]))
    return triangle_start, node_start, triangles, bounds, nodes, order, face_normals


@njit(cache=True)
def project_onto_meshes(points_world, T_world_mesh, mesh, triangle_start, node_start, triangles, bounds, nodes, order,
                        face_normals, out_d2, out_triangle, bound_d2=np.inf):
    """Squared distance of each point to its mesh's surface, and the nearest triangle.

    Parameters
    ----------
    points_world : (K, 3) points in the planning frame.
    T_world_mesh : (K, 4, 4) pose of each point's mesh.
    mesh : (K,) int64, each point's mesh in the packed arrays (:func:`pack_meshes`).
    triangle_start, node_start, triangles, bounds, nodes, order, face_normals : the packed meshes.
    out_d2 : (K,) float, written: squared distance to the mesh surface (exact, through the tree).
    out_triangle : (K,) int64, written: index of the nearest triangle within its mesh.
    bound_d2 : look only for triangles nearer than this (squared, metres; see
        :func:`mesh_queries.tree_closest_point`): where none is, ``out_d2`` is ``bound_d2`` and
        ``out_triangle`` -1; elsewhere the numbers are those of an unbounded search, bit for bit.
    """
    local = np.empty(3)
    nearest = np.empty(3)
    for k in range(points_world.shape[0]):
        m = mesh[k]
        for i in range(3):
            acc = 0.0
            for u in range(3):
                acc += T_world_mesh[k, u, i] * (points_world[k, u] - T_world_mesh[k, u, 3])
            local[i] = acc
        t0, t1 = triangle_start[m], triangle_start[m + 1]
        n0, n1 = node_start[m], node_start[m + 1]
        d2, t, _ = tree_closest_point(local, triangles[t0:t1], bounds[n0:n1], nodes[n0:n1], order[t0:t1], nearest,
                                      -1, face_normals[t0:t1], bound_d2)
        out_d2[k] = d2
        out_triangle[k] = t
