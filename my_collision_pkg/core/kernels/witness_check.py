"""Compiled check of convex-hull witness points against the meshes they stand for (numba).

The clearance call measures a mesh pair by the distance between the meshes' convex hulls
when the hulls are apart. A hull contains its mesh, so the hull distance is a lower bound
of the mesh distance; when each hull witness point also lies on its mesh's surface, the
two witness points are points of the meshes at the hull distance, so the mesh distance is
that distance as well. :func:`project_onto_meshes` gives, for a batch of witness points,
their squared distances to their meshes and the triangles nearest to them, for every mesh
of a world at once (the meshes' triangles and AABB trees packed end to end,
:func:`pack_meshes`).

A hull's vertices are vertices of its mesh (qhull keeps the input points), and a hull
witness point lies on the hull's face farthest along the witness normal, which holds the
hull vertex farthest that way. When that face is a triangle of the mesh (or lies in one
of them, or is an edge or a vertex of it), the triangle has that vertex as a corner:
:func:`hull_vertex_triangles` lists, per hull vertex, the mesh triangles with a corner
there, so that the check can try those few triangles before the whole mesh
(``clearance_rows.check_on_meshes``).

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


def hull_vertex_triangles(vertex_start, vertices, mesh_shapes, triangle_sets):
    """Per hull vertex of a world's convex solids, the triangles of its shape's mesh with a corner at it.

    Parameters
    ----------
    vertex_start : (S + 1,) int64, vertices (V, 3): the convex solids' vertices (``gjk.ConvexArrays``; shape s
        owns ``vertices[vertex_start[s]:vertex_start[s + 1]]``, its hull's vertices, shape frame, metres).
    mesh_shapes : the shapes whose meshes are packed (``pack_meshes``), in slot order; triangle_sets : their
        triangles (T, 3, 3), shape frame (triangle indices are each mesh's own, as ``pack_meshes`` keeps them).

    Returns
    -------
    (start (V + 1,) int64, triangles (N,) int64): hull vertex ``v``'s triangles are
    ``triangles[start[v]:start[v + 1]]``, in increasing index, those with a corner whose three coordinates
    equal the vertex's (a mesh with repeated vertices gives each copy's triangles); none for the vertices of
    shapes without a packed mesh, or matched by no corner. One sort of every mesh's corners and hull vertices
    together, no Python loop over vertices (the Panda's nine meshes: about 1.3 ms, once per world's clearance
    tables).
    """
    n_vertices = len(vertices)
    corner_sets, corner_mesh, hull_sets, hull_vertex, hull_mesh, corner_offset = [], [], [], [], [], []
    n_corners = 0
    for j, (s, triangles) in enumerate(zip(mesh_shapes, triangle_sets)):
        lo, hi = int(vertex_start[s]), int(vertex_start[s + 1])
        corners = np.asarray(triangles, dtype=np.float64).reshape(-1, 3)
        corner_offset.append(n_corners)
        corner_sets.append(corners)
        corner_mesh.append(np.full(len(corners), j, dtype=np.int64))
        n_corners += len(corners)
        hull_sets.append(np.asarray(vertices[lo:hi], dtype=np.float64).reshape(-1, 3))
        hull_vertex.append(np.arange(lo, hi, dtype=np.int64))
        hull_mesh.append(np.full(hi - lo, j, dtype=np.int64))
    count = np.zeros(n_vertices, dtype=np.int64)
    first = np.zeros(n_vertices, dtype=np.int64)
    triangle_of = np.zeros(0, dtype=np.int64)
    if n_corners and sum(len(h) for h in hull_sets):
        corner_mesh_all = np.concatenate(corner_mesh)
        hull_vertex_all = np.concatenate(hull_vertex)
        # corners then hull vertices, sorted by mesh and coordinates (by value: -0.0 and 0.0 alike) in runs of equal
        # points; within a run (a stable sort) the corners come first, in increasing index, so their triangles do too
        points = np.concatenate(corner_sets + hull_sets)
        key = np.concatenate([corner_mesh_all] + hull_mesh)
        for axis in range(3):          # each coordinate's rank among its distinct values: one int64 key, one sort
            values, rank = np.unique(points[:, axis], return_inverse=True)
            if (int(key.max()) + 1) * len(values) >= 2 ** 62:          # (huge meshes: the key ranked first)
                key = np.unique(key, return_inverse=True)[1].ravel()
            key = key * len(values) + rank.ravel()
        order = np.argsort(key, kind="stable")
        ranked = key[order]
        new_run = np.ones(len(points), dtype=bool)
        new_run[1:] = ranked[1:] != ranked[:-1]
        run = np.cumsum(new_run) - 1                        # each sorted point's run
        is_corner = order < n_corners
        corner_rank = np.cumsum(is_corner) - is_corner      # corners before each sorted point
        run_first = corner_rank[new_run]                    # each run's first corner among the sorted corners
        run_corners = np.bincount(run, weights=is_corner, minlength=len(run_first)).astype(np.int64)
        hull_at = np.flatnonzero(~is_corner)                # the hull vertices' places among the sorted points
        vertex = hull_vertex_all[order[hull_at] - n_corners]
        count[vertex] = run_corners[run[hull_at]]
        first[vertex] = run_first[run[hull_at]]
        sorted_corners = order[is_corner]
        triangle_of = (sorted_corners - np.asarray(corner_offset, dtype=np.int64)[corner_mesh_all[sorted_corners]]) // 3
    start = np.zeros(n_vertices + 1, dtype=np.int64)
    start[1:] = np.cumsum(count)
    within = np.arange(int(start[-1])) - np.repeat(start[:-1], count)
    return start, triangle_of[np.repeat(first, count) + within]


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
