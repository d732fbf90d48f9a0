"""Compiled queries on boxes and triangle meshes (numba): inside tests and closest points.

- :func:`point_in_box`: a point in an oriented box;
- :func:`winding_number` and :func:`contains_probe`: a point, or a probe point of
  another shape, inside a closed triangle mesh (generalised winding number);
- :func:`closest_on_triangle`: the nearest point of one triangle and the feature
  (face, edge or corner) it lies on; :func:`closest_point_on_triangles` over a set of
  triangles, :func:`tree_closest_point` through an AABB tree of them;
- :class:`MeshTree` and :func:`build_triangle_tree`: that tree, with the pseudo-normals
  that tell a closed mesh's inside from its outside (Baerentzen and Aanaes 2005).

Arrays are float64 in metres; a triangle set is (T, 3, 3) (triangle, corner, axis);
``T_world_x`` (4, 4) is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.frames import point_to_frame, point_to_world

# Generalised winding number above which a point is inside a closed mesh.
INSIDE_WINDING = 0.5
# Nearest feature of a triangle (a, b, c) to a point: its interior, a corner, an edge
# (edge k joins corner k and corner k + 1 mod 3). Indexes the rows of the pseudo-normals.
FEATURE_FACE = 0
FEATURE_VERTEX = 1        # + corner index
FEATURE_EDGE = 4          # + edge index
N_FEATURES = 7
TREE_LEAF_SIZE = 4        # triangles per leaf of the AABB tree
_TREE_STACK = 128         # traversal stack; the median-split tree is about log2(T) deep
# A triangle is skipped when its plane is farther than the nearest point so far by more than
# this (metres), beyond its normal's own error bound (MeshTree.face_normals): far above rounding.
_PLANE_MARGIN_M = 1e-12
# bound of the rounding error of a computed cross product, in units of eps * |largest coordinate| * |edge|
_CROSS_ERROR = 32.0


@njit(cache=True)
def point_in_box(point, box_center, box_axes, box_half) -> bool:
    """True when a point lies in an oriented box (centre, axes as columns, half extents), all in one frame."""
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += box_axes[u, i] * (point[u] - box_center[u])
        if abs(acc) > box_half[i]:
            return False
    return True


@njit(cache=True)
def contains_probe(T_world_outer, T_world_inner, probes_inner, obb_center, obb_axes, obb_half, triangles):
    """True when a probe point of the inner shape lies inside the closed outer mesh.

    Probes (K, 3) are in the inner shape's frame; the outer box (centre, axes,
    half extents) and triangles (T, 3, 3) in the outer shape's frame.
    """
    point_world = np.empty(3)
    point = np.empty(3)
    for k in range(probes_inner.shape[0]):
        point_to_world(T_world_inner, probes_inner[k], point_world)
        point_to_frame(T_world_outer, point_world, point)
        if point_in_box(point, obb_center, obb_axes, obb_half) and winding_number(point, triangles) > INSIDE_WINDING:
            return True
    return False


@njit(cache=True)
def contains_any_point(T_world_outer, T_world_points, points, obb_center, obb_axes, obb_half, hull_planes, triangles):
    """True when one of many points lies inside the closed outer mesh (as :func:`contains_probe`,
    for thousands of points: an occupancy map's cell centres).

    Points (K, 3), sorted by x then y, are in their own frame (``T_world_points``); the outer box, the planes of the
    outer mesh's convex hull (F, 4: outward unit normal, offset; none: no quick test) and the
    triangles (T, 3, 3) in the outer shape's frame. A point outside the box or outside one hull
    plane is outside the mesh; only the others pay for a winding number.
    """
    point_world = np.empty(3)
    point = np.empty(3)
    # the points sorted by x then y (their own frame): only those in the x-y window the outer
    # box's corners span are looked at
    lo, hi, y_lo, y_hi = np.inf, -np.inf, np.inf, -np.inf
    corner = np.empty(3)
    for c in range(8):
        for i in range(3):
            corner[i] = obb_center[i]
            for u in range(3):
                sign = 1.0 if (c >> u) & 1 else -1.0
                corner[i] += sign * obb_half[u] * obb_axes[i, u]
        point_to_world(T_world_outer, corner, point_world)
        point_to_frame(T_world_points, point_world, point)
        lo = min(lo, point[0])
        hi = max(hi, point[0])
        y_lo = min(y_lo, point[1])
        y_hi = max(y_hi, point[1])
    xs = points[:, 0]
    block = np.searchsorted(xs, lo)
    stop = np.searchsorted(xs, hi, side="right")
    while block < stop:                    # each run of equal x is sorted by y: its y window only
        end = np.searchsorted(xs, xs[block], side="right")
        ys = points[block:end, 1]
        first = block + np.searchsorted(ys, y_lo)
        last = block + np.searchsorted(ys, y_hi, side="right")
        for k in range(first, last):
            point_to_world(T_world_points, points[k], point_world)
            point_to_frame(T_world_outer, point_world, point)
            if not point_in_box(point, obb_center, obb_axes, obb_half):
                continue
            outside = False
            for f in range(hull_planes.shape[0]):
                if hull_planes[f, 0] * point[0] + hull_planes[f, 1] * point[1] + hull_planes[f, 2] * point[2] \
                        > hull_planes[f, 3]:
                    outside = True
                    break
            if not outside and winding_number(point, triangles) > INSIDE_WINDING:
                return True
        block = end
    return False


@njit(cache=True)
def winding_number(point, triangles):
    """Generalised winding number of a closed triangle mesh (T, 3, 3) at a point (3,).

    About 1 inside, 0 outside (solid angles summed, Van Oosterom and Strackee).
    """
    total = 0.0
    for t in range(triangles.shape[0]):
        ax = triangles[t, 0, 0] - point[0]
        ay = triangles[t, 0, 1] - point[1]
        az = triangles[t, 0, 2] - point[2]
        bx = triangles[t, 1, 0] - point[0]
        by = triangles[t, 1, 1] - point[1]
        bz = triangles[t, 1, 2] - point[2]
        cx = triangles[t, 2, 0] - point[0]
        cy = triangles[t, 2, 1] - point[1]
        cz = triangles[t, 2, 2] - point[2]
        la = np.sqrt(ax * ax + ay * ay + az * az)
        lb = np.sqrt(bx * bx + by * by + bz * bz)
        lc = np.sqrt(cx * cx + cy * cy + cz * cz)
        det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
        den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc \
            + (bx * cx + by * cy + bz * cz) * la + (cx * ax + cy * ay + cz * az) * lb
        total += 2.0 * np.arctan2(det, den)
    return total / (4.0 * np.pi)



@njit(cache=True)
def closest_on_triangle(p, triangles, t, out):
    """Nearest point ``out`` (3,) of triangle ``t`` to p, and which feature it lies on (FEATURE_*).

    The Voronoi regions of the corners, edges and face, tested in turn on dot products
    of the edge vectors (as in Ericson, Real-Time Collision Detection, 5.1.5).
    """
    ax, ay, az = triangles[t, 0, 0], triangles[t, 0, 1], triangles[t, 0, 2]
    bx, by, bz = triangles[t, 1, 0], triangles[t, 1, 1], triangles[t, 1, 2]
    cx, cy, cz = triangles[t, 2, 0], triangles[t, 2, 1], triangles[t, 2, 2]
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = p[0] - ax, p[1] - ay, p[2] - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        out[0], out[1], out[2] = ax, ay, az
        return FEATURE_VERTEX
    bpx, bpy, bpz = p[0] - bx, p[1] - by, p[2] - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        out[0], out[1], out[2] = bx, by, bz
        return FEATURE_VERTEX + 1
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        out[0], out[1], out[2] = ax + v * abx, ay + v * aby, az + v * abz
        return FEATURE_EDGE
    cpx, cpy, cpz = p[0] - cx, p[1] - cy, p[2] - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        out[0], out[1], out[2] = cx, cy, cz
        return FEATURE_VERTEX + 2
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        out[0], out[1], out[2] = ax + w * acx, ay + w * acy, az + w * acz
        return FEATURE_EDGE + 2
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        out[0], out[1], out[2] = bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz)
        return FEATURE_EDGE + 1
    denom = 1.0 / (va + vb + vc)
    v, w = vb * denom, vc * denom
    out[0] = ax + abx * v + acx * w
    out[1] = ay + aby * v + acy * w
    out[2] = az + abz * v + acz * w
    return FEATURE_FACE



@njit(cache=True)
def closest_point_on_triangles(point, triangles):
    """Nearest point (3,) to ``point`` on a set of triangles (T, 3, 3), and its triangle index.

    Every triangle through :func:`closest_on_triangle`; the first of equally near ones wins.
    """
    best = np.empty(3)
    candidate = np.empty(3)
    best_d2 = np.inf
    best_t = -1
    for t in range(triangles.shape[0]):
        closest_on_triangle(point, triangles, t, candidate)
        dx, dy, dz = candidate[0] - point[0], candidate[1] - point[1], candidate[2] - point[2]
        d2 = dx * dx + dy * dy + dz * dz
        if d2 < best_d2:
            best_d2 = d2
            best[:] = candidate
            best_t = t
    return best, best_t


# ----- closed meshes: AABB tree and pseudo-normals -------------------------------
# A face whose doubled area is below this fraction of the mesh's squared size has no
# usable normal: such a mesh keeps the winding number for the side.
_DEGENERATE_AREA = 1e-14


class MeshTree(NamedTuple):
    """What the contact kernels need of a closed mesh, built once with its shape.

    Arrays are in the mesh frame (metres). ``bounds``, ``nodes``, ``order``: the AABB
    tree of :func:`build_triangle_tree`. ``pseudo_normals`` (T, 7, 3): per triangle,
    the unit face normal (row FEATURE_FACE), the angle-weighted normal of each corner
    (FEATURE_VERTEX + k) and the sum of the two face normals at each edge
    (FEATURE_EDGE + k, edge k from corner k to corner k + 1). ``manifold``: every edge
    is shared by exactly two faces that run it in opposite directions, no face is
    degenerate, and no two connected pieces have overlapping boxes; only then does the
    pseudo-normal of the nearest feature tell inside from outside. ``face_normals``
    (T, 4): each triangle's unit normal and a bound of that normal's direction error
    (radians) from rounding (inf for a degenerate face), so that the distance to the
    triangle's plane is a safe lower bound of the distance to the triangle
    (:func:`tree_closest_point` skips triangles with it).
    """
    bounds: np.ndarray
    nodes: np.ndarray
    order: np.ndarray
    pseudo_normals: np.ndarray
    manifold: bool
    face_normals: np.ndarray

    @staticmethod
    def of(vertices: np.ndarray, faces: np.ndarray, component_labels: np.ndarray | None = None) -> "MeshTree":
        """Tree, pseudo-normals and the manifold check of a mesh (V, 3) with faces (T, 3)."""
        vertices = np.ascontiguousarray(vertices, dtype=float)
        faces = np.ascontiguousarray(faces, dtype=np.int64)
        n_v, n_t = len(vertices), len(faces)
        corners = vertices[faces]
        bounds, nodes, order = build_triangle_tree(np.ascontiguousarray(corners), TREE_LEAF_SIZE)
        cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        length = np.linalg.norm(cross, axis=1)
        extent = float(np.max(vertices.max(axis=0) - vertices.min(axis=0))) if n_v else 0.0
        usable = length > _DEGENERATE_AREA * max(extent, 1e-300) ** 2
        unit = np.zeros_like(cross)
        unit[usable] = cross[usable] / length[usable, None]
        pseudo = np.zeros((n_t, N_FEATURES, 3))
        pseudo[:, FEATURE_FACE] = unit
        longest = np.max(np.linalg.norm(corners - corners[:, [1, 2, 0]], axis=2), axis=1) if n_t else np.zeros(0)
        largest = float(np.max(np.abs(vertices))) if n_v else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            error = _CROSS_ERROR * np.finfo(float).eps * largest * longest / length
        face_normals = np.ascontiguousarray(np.column_stack([unit, np.where(usable, error, np.inf)]))
        vertex_normal = np.zeros((n_v, 3))
        for k in range(3):
            e1 = corners[:, (k + 1) % 3] - corners[:, k]
            e2 = corners[:, (k + 2) % 3] - corners[:, k]
            angle = np.arctan2(np.linalg.norm(np.cross(e1, e2), axis=1), np.einsum("ij,ij->i", e1, e2))
            np.add.at(vertex_normal, faces[:, k], angle[:, None] * unit)
        norm = np.linalg.norm(vertex_normal, axis=1)
        vertex_normal[norm > 0] /= norm[norm > 0, None]
        pseudo[:, FEATURE_VERTEX:FEATURE_VERTEX + 3] = vertex_normal[faces]
        # directed edges: edge k of face t runs from corner k to corner k + 1
        source, target = faces.ravel(), faces[:, [1, 2, 0]].ravel()
        key = source * n_v + target
        sorted_keys = np.sort(key)
        rank = np.argsort(key, kind="stable")
        manifold = bool(usable.all()) and n_t > 0 and bool(np.all(np.diff(sorted_keys) > 0))
        twin = np.searchsorted(sorted_keys, target * n_v + source).clip(0, max(len(key) - 1, 0))
        manifold = manifold and bool(np.all(sorted_keys[twin] == target * n_v + source))
        neighbour_face = rank[twin] // 3 if manifold else np.arange(3 * n_t) // 3
        pseudo[:, FEATURE_EDGE:FEATURE_EDGE + 3] = (unit[np.arange(3 * n_t) // 3] + unit[neighbour_face]).reshape(
            n_t, 3, 3)
        if manifold and component_labels is not None and len(np.unique(component_labels)) > 1:
            manifold = not _pieces_overlap(corners, np.asarray(component_labels))
        return MeshTree(bounds, nodes, order, np.ascontiguousarray(pseudo), manifold, face_normals)


def _pieces_overlap(corners: np.ndarray, labels: np.ndarray) -> bool:
    """Whether the boxes of two connected pieces (face labels) of a mesh overlap (nested or crossing shells)."""
    pieces = np.unique(labels)
    lo = np.array([corners[labels == k].reshape(-1, 3).min(axis=0) for k in pieces])
    hi = np.array([corners[labels == k].reshape(-1, 3).max(axis=0) for k in pieces])
    meet = np.all(lo[:, None] <= hi[None], axis=2) & np.all(lo[None] <= hi[:, None], axis=2)
    np.fill_diagonal(meet, False)
    return bool(meet.any())


@njit(cache=True)
def build_triangle_tree(triangles, leaf_size):
    """A flat AABB tree over triangles (T, 3, 3), split at the median centroid along the widest axis.

    Returns ``bounds`` (N, 2, 3) (each node's box: low and high corners), ``nodes``
    (N, 3) int64 (first child, whose sibling is the next node, or -1 for a leaf; first
    slot in ``order``; number of triangles of a leaf, 0 for an inner node) and ``order``
    (T,) int64 (triangle indices, each leaf's a contiguous run). Node 0 is the root.
    """
    n_tri = triangles.shape[0]
    centroid = np.empty((n_tri, 3))
    tri_lo = np.empty((n_tri, 3))
    tri_hi = np.empty((n_tri, 3))
    for t in range(n_tri):
        for i in range(3):
            a, b, c = triangles[t, 0, i], triangles[t, 1, i], triangles[t, 2, i]
            centroid[t, i] = (a + b + c) / 3.0
            tri_lo[t, i] = min(a, min(b, c))
            tri_hi[t, i] = max(a, max(b, c))
    order = np.arange(n_tri)
    max_nodes = max(1, 2 * n_tri)
    bounds = np.empty((max_nodes, 2, 3))
    nodes = np.empty((max_nodes, 3), dtype=np.int64)
    stack = np.empty((max_nodes, 3), dtype=np.int64)       # node, start, end
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, 0, n_tri
    top, n_nodes = 1, 1
    while top > 0:
        top -= 1
        node, start, end = stack[top, 0], stack[top, 1], stack[top, 2]
        c_lo = np.full(3, np.inf)
        c_hi = np.full(3, -np.inf)
        for i in range(3):
            bounds[node, 0, i] = np.inf
            bounds[node, 1, i] = -np.inf
        for k in range(start, end):
            t = order[k]
            for i in range(3):
                bounds[node, 0, i] = min(bounds[node, 0, i], tri_lo[t, i])
                bounds[node, 1, i] = max(bounds[node, 1, i], tri_hi[t, i])
                c_lo[i] = min(c_lo[i], centroid[t, i])
                c_hi[i] = max(c_hi[i], centroid[t, i])
        axis = 0
        for i in range(1, 3):
            if c_hi[i] - c_lo[i] > c_hi[axis] - c_lo[axis]:
                axis = i
        if end - start <= leaf_size or c_hi[axis] - c_lo[axis] <= 0.0:
            nodes[node, 0], nodes[node, 1], nodes[node, 2] = -1, start, end - start
            continue
        run = order[start:end].copy()
        ranked = np.argsort(centroid[run, axis], kind="mergesort")
        for k in range(end - start):
            order[start + k] = run[ranked[k]]
        mid = (start + end) // 2
        left = n_nodes
        n_nodes += 2
        nodes[node, 0], nodes[node, 1], nodes[node, 2] = left, start, 0
        stack[top, 0], stack[top, 1], stack[top, 2] = left, start, mid
        stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = left + 1, mid, end
        top += 2
    return bounds[:n_nodes].copy(), nodes[:n_nodes].copy(), order



@njit(cache=True)
def _box_distance2(bounds, node, p):
    """Squared distance of p to a node's box (0 inside); branch-free, the value of the
    plain per-axis test (lo - p > 0 or p - hi > 0, at most one of them as lo <= hi)."""
    d2 = 0.0
    for i in range(3):
        e = max(max(bounds[node, 0, i] - p[i], p[i] - bounds[node, 1, i]), 0.0)
        d2 += e * e
    return d2


@njit(cache=True)
def tree_closest_point(p, triangles, bounds, nodes, order, out, seed_triangle=-1, face_normals=None, bound_d2=np.inf):
    """Nearest point ``out`` (3,) to p on a triangle mesh through its tree (:func:`build_triangle_tree`).

    Exact (every triangle whose box could hold a nearer point is tested; boxes are
    visited nearest first). ``seed_triangle`` (a triangle likely near p, e.g. the
    answer for a neighbouring point; -1 for none) is tested first so that more boxes
    are pruned. ``face_normals`` (T, 4) (``MeshTree.face_normals``; None: not used)
    skips a triangle whose plane alone is farther than the nearest point so far, by
    more than the normal's rounding error: the answer is the same, bit for bit.
    ``bound_d2``: look only for triangles nearer than this (squared, metres); where the nearest
    is, the answer is the same, bit for bit (the boxes and triangles it prunes hold no triangle as
    near as the nearest, and the others are visited in the same order, so the first of equal
    nearest ones is the same one); where none is, (``bound_d2``, -1, FEATURE_FACE) is returned
    (``out`` not written). Ignored when ``seed_triangle`` is given.
    Returns (squared distance, triangle index, feature).
    """
    stack = np.empty(_TREE_STACK, dtype=np.int64)
    stack_d2 = np.empty(_TREE_STACK)          # each stacked node's box distance (squared)
    candidate = np.empty(3)
    best_d2 = bound_d2
    best_t = -1
    best_f = FEATURE_FACE
    if seed_triangle >= 0:
        best_f = closest_on_triangle(p, triangles, seed_triangle, out)
        best_d2 = (out[0] - p[0]) ** 2 + (out[1] - p[1]) ** 2 + (out[2] - p[2]) ** 2
        best_t = seed_triangle
    stack[0] = 0
    stack_d2[0] = _box_distance2(bounds, 0, p)
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if stack_d2[top] >= best_d2:
            continue
        first = nodes[node, 0]
        if first < 0:
            for k in range(nodes[node, 1], nodes[node, 1] + nodes[node, 2]):
                t = order[k]
                if face_normals is not None:
                    dx = p[0] - triangles[t, 0, 0]
                    dy = p[1] - triangles[t, 0, 1]
                    dz = p[2] - triangles[t, 0, 2]
                    plane = abs(face_normals[t, 0] * dx + face_normals[t, 1] * dy + face_normals[t, 2] * dz)
                    plane -= face_normals[t, 3] * (abs(dx) + abs(dy) + abs(dz)) + _PLANE_MARGIN_M
                    if plane > 0.0 and plane * plane > best_d2:
                        continue
                f = closest_on_triangle(p, triangles, t, candidate)
                dx, dy, dz = candidate[0] - p[0], candidate[1] - p[1], candidate[2] - p[2]
                d2 = dx * dx + dy * dy + dz * dz
                if d2 < best_d2:
                    best_d2, best_t, best_f = d2, t, f
                    out[0], out[1], out[2] = candidate[0], candidate[1], candidate[2]
            continue
        near_d2 = _box_distance2(bounds, first, p)
        far_d2 = _box_distance2(bounds, first + 1, p)
        near, far = first, first + 1
        if far_d2 < near_d2:
            near, far, near_d2, far_d2 = far, near, far_d2, near_d2
        if far_d2 < best_d2 and top < _TREE_STACK:
            stack[top] = far
            stack_d2[top] = far_d2
            top += 1
        if near_d2 < best_d2 and top < _TREE_STACK:
            stack[top] = near
            stack_d2[top] = near_d2
            top += 1
    return best_d2, best_t, best_f

