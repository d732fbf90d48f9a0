"""Compiled contact depths (numba): how deep points lie in a solid, and the overlap regions of two solids.

A point's *depth* in a solid is its distance to the solid's surface when the
point lies inside it (> 0), and a negative number when it lies outside. Every
kernel also gives the nearest surface point, so a contact's witness points are
the inside point and that surface point. Solids, in their own frame (metres):

- primitives, analytic: box (half extents), sphere, cylinder (z axis, centred),
  capsule (z axis, centred, ``length`` between the hemisphere centres), cone
  (z axis, base at ``-length/2``, apex at ``+length/2``, as fcl and coal);
- convex meshes, exact: the planes of their faces (for a point inside a convex
  solid the nearest surface point lies on the nearest face plane);
- closed meshes: the nearest surface point through an AABB tree over the triangles
  (``mesh_queries.tree_closest_point``), and the side of the point from the
  angle-weighted pseudo-normal of the nearest feature (face, edge or vertex;
  Baerentzen and Aanaes 2005), exact for a closed, consistently oriented
  2-manifold. A mesh that is not one (``MeshTree.manifold`` false) keeps the
  generalised winding number for the side (``mesh_queries.winding_number``); its
  depth still comes from the tree.

:func:`points_depth` and :func:`point_depth` give depths of points;
:func:`surface_points_inside` finds one body's surface samples inside another solid
and groups them; :func:`pair_regions` gives the deepest point of each overlap region
of two posed solids (both directions, merged, refined by support points). A body comes
to these two as named packs of arrays: its :class:`SurfaceSamples` and itself as a
:class:`SolidArrays` (numba reads NamedTuples of arrays field by field).

Transforms are 4x4 and ``T_world_x`` is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                KIND_MESH, KIND_SPHERE)
from my_collision_pkg.core.kernels.frames import point_to_frame, point_to_world, vector_to_frame
from my_collision_pkg.core.kernels.mesh_queries import INSIDE_WINDING, point_in_box, tree_closest_point, winding_number

OUTSIDE = -1.0            # depth of a point that is not inside
ON_SURFACE_M = 1e-12      # a mesh point nearer the surface than this touches it: not inside
_TINY = 1e-15
# surface_points_inside: a point is rejected at once when it lies this far outside the other
# body's box (metres; far above the rounding of one transform against two)
_BOX_PREFILTER_M = 1e-9


class SolidArrays(NamedTuple):
    """One body as a solid, as the depth kernels read it: arrays in its own frame, metres.

    ``kind``: its code (``kernels.codes`` KIND_*); ``params`` (3,): a primitive's sizes (box
    half extents; radius and half length of a cylinder, capsule or cone; sphere radius);
    ``planes`` (F, 4): the face planes of a convex mesh or of a closed mesh's convex hull
    (outward unit normal, offset); ``triangles`` (T, 3, 3) and the ``MeshTree`` arrays
    (``bounds``, ``nodes``, ``order``, ``pseudo_normals``, ``manifold``, ``face_normals``)
    of a closed mesh (placeholders for other kinds); its bounding box ``box_center`` (3,),
    ``box_axes`` (3, 3) (axes as columns) and ``box_half`` (3,) half extents.
    """
    kind: int
    params: np.ndarray
    planes: np.ndarray
    triangles: np.ndarray
    bounds: np.ndarray
    nodes: np.ndarray
    order: np.ndarray
    pseudo_normals: np.ndarray
    manifold: bool
    box_center: np.ndarray
    box_axes: np.ndarray
    box_half: np.ndarray
    face_normals: np.ndarray


class SurfaceSamples(NamedTuple):
    """One body's surface points tested inside the other body, in its own frame (metres).

    ``points`` (N, 3); ``parents`` (N,): an earlier point next to each (-1: none);
    ``edges`` (E, 2): the pairs of points joined along the surface, and their
    :func:`adjacency` ``adjacent_start`` (N + 1,) and ``adjacent`` (2E,); ``faces`` (N,):
    the face of the mesh (or tessellation) each point lies on (``ShapeGeometry.surface_*``).
    """
    points: np.ndarray
    parents: np.ndarray
    edges: np.ndarray
    adjacent_start: np.ndarray
    adjacent: np.ndarray
    faces: np.ndarray


class InsidePoints(NamedTuple):
    """What :func:`surface_points_inside` finds of body x's surface points in a solid.

    Per point (N): ``points_world`` (N, 3) (rows of points outside the solid's box left
    unset), ``depth`` (N,), ``surface_world`` (N, 3) (its nearest point on the solid's
    surface), ``triangle`` (N,) (the solid's triangle it lies nearest to, -1: none) and
    ``labels`` (N,) (its group, -1 outside). Per group (R): ``deepest`` (R,) (index of its
    deepest point) and ``lo``, ``hi`` (R, 3) (the box of its points).
    """
    points_world: np.ndarray
    depth: np.ndarray
    surface_world: np.ndarray
    triangle: np.ndarray
    labels: np.ndarray
    deepest: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@njit(cache=True)
def _box_depth(half, p, surface):
    depth = np.inf
    axis = 0
    for i in range(3):
        d = half[i] - abs(p[i])
        if d < 0.0:
            return OUTSIDE
        if d < depth:
            depth, axis = d, i
    surface[:] = p
    surface[axis] = half[axis] if p[axis] >= 0.0 else -half[axis]
    return depth


@njit(cache=True)
def _sphere_depth(radius, p, surface):
    r = np.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
    if r > radius:
        return OUTSIDE
    if r < _TINY:
        surface[0], surface[1], surface[2] = 0.0, 0.0, radius
    else:
        for i in range(3):
            surface[i] = p[i] * radius / r
    return radius - r


@njit(cache=True)
def _radial(p, rho, out_x_y):
    """Unit radial direction of p in the xy plane (x axis on the axis)."""
    if rho < _TINY:
        out_x_y[0], out_x_y[1] = 1.0, 0.0
    else:
        out_x_y[0], out_x_y[1] = p[0] / rho, p[1] / rho


@njit(cache=True)
def _cylinder_depth(radius, half_length, p, surface):
    rho = np.sqrt(p[0] * p[0] + p[1] * p[1])
    radial = radius - rho
    axial = half_length - abs(p[2])
    if radial < 0.0 or axial < 0.0:
        return OUTSIDE
    surface[:] = p
    if axial <= radial:
        surface[2] = half_length if p[2] >= 0.0 else -half_length
        return axial
    u = np.empty(2)
    _radial(p, rho, u)
    surface[0], surface[1] = u[0] * radius, u[1] * radius
    return radial


@njit(cache=True)
def _capsule_depth(radius, half_length, p, surface):
    z = min(max(p[2], -half_length), half_length)
    dx, dy, dz = p[0], p[1], p[2] - z
    r = np.sqrt(dx * dx + dy * dy + dz * dz)
    if r > radius:
        return OUTSIDE
    if r < _TINY:
        dx, dy, dz, r = 1.0, 0.0, 0.0, 1.0
    surface[0] = dx * radius / r
    surface[1] = dy * radius / r
    surface[2] = z + dz * radius / r
    return radius - r


@njit(cache=True)
def _cone_depth(radius, half_length, p, surface):
    rho = np.sqrt(p[0] * p[0] + p[1] * p[1])
    z = p[2]
    if z < -half_length or z > half_length:
        return OUTSIDE
    if rho > radius * (half_length - z) / (2.0 * half_length):
        return OUTSIDE
    base = z + half_length
    # lateral side in the (rho, z) half plane: segment from the rim (radius, -h) to the apex (0, h)
    ex, ez = -radius, 2.0 * half_length
    t = ((rho - radius) * ex + (z + half_length) * ez) / (ex * ex + ez * ez)
    t = min(max(t, 0.0), 1.0)
    qr, qz = radius + t * ex, -half_length + t * ez
    side = np.sqrt((rho - qr) ** 2 + (z - qz) ** 2)
    u = np.empty(2)
    _radial(p, rho, u)
    if base <= side:
        surface[0], surface[1], surface[2] = p[0], p[1], -half_length
        return base
    surface[0], surface[1], surface[2] = u[0] * qr, u[1] * qr, qz
    return side


@njit(cache=True)
def _convex_depth(planes, p, surface):
    """planes (F, 4): outward unit normal n and offset d, inside where n . p <= d."""
    depth = np.inf
    best = 0
    for f in range(planes.shape[0]):
        d = planes[f, 3] - (planes[f, 0] * p[0] + planes[f, 1] * p[1] + planes[f, 2] * p[2])
        if d < 0.0:
            return OUTSIDE
        if d < depth:
            depth, best = d, f
    for i in range(3):
        surface[i] = p[i] + depth * planes[best, i]
    return depth



@njit(cache=True)
def _mesh_depth(hull_planes, triangles, bounds, nodes, order, pseudo_normals, manifold, p, surface, triangle,
                face_normals=None):
    """Closed mesh; ``hull_planes`` (H, 4) those of its convex hull (a point outside them is outside)."""
    for f in range(hull_planes.shape[0]):
        if hull_planes[f, 0] * p[0] + hull_planes[f, 1] * p[1] + hull_planes[f, 2] * p[2] > hull_planes[f, 3]:
            return OUTSIDE
    if not manifold and winding_number(p, triangles) <= INSIDE_WINDING:
        return OUTSIDE
    d2, t, feature = tree_closest_point(p, triangles, bounds, nodes, order, surface, triangle[0], face_normals)
    triangle[0] = t                 # also the next point's seed
    if manifold:
        side = 0.0
        for i in range(3):
            side += (p[i] - surface[i]) * pseudo_normals[t, feature, i]
        if not side < 0.0:
            return OUTSIDE
    depth = np.sqrt(d2)
    return depth if depth > ON_SURFACE_M else OUTSIDE


@njit(cache=True)
def point_depth(kind, params, planes, triangles, bounds, nodes, order, pseudo_normals, manifold, p, surface,
                triangle, face_normals=None):
    """Depth of p (3,) in a solid (its own frame); fills the nearest surface point and,
    for a closed mesh, ``triangle[0]`` with its triangle index (on entry: a triangle
    likely near p, or -1). A closed mesh comes with
    its tree (``bounds``, ``nodes``, ``order``), its pseudo-normals (T, 7, 3) and whether
    they decide the side (``manifold``); other kinds ignore those."""
    if kind == KIND_BOX:
        return _box_depth(params, p, surface)
    if kind == KIND_SPHERE:
        return _sphere_depth(params[0], p, surface)
    if kind == KIND_CYLINDER:
        return _cylinder_depth(params[0], params[1], p, surface)
    if kind == KIND_CAPSULE:
        return _capsule_depth(params[0], params[1], p, surface)
    if kind == KIND_CONE:
        return _cone_depth(params[0], params[1], p, surface)
    if kind == KIND_CONVEX:
        return _convex_depth(planes, p, surface)
    return _mesh_depth(planes, triangles, bounds, nodes, order, pseudo_normals, manifold, p, surface, triangle,
                       face_normals)


@njit(cache=True)
def points_depth(points_world, T_world_solid, kind, params, planes, triangles, bounds, nodes, order, pseudo_normals,
                 manifold, box_center, box_axes, box_half, depth_out, surface_world_out, triangle_out,
                 face_normals=None):
    """Depth in a posed solid of points (N, 3) given in the planning frame.

    Points outside the solid's bounding box (centre, axes as columns, half
    extents; solid frame) are rejected before the exact test. Fills
    ``depth_out`` (N,) and, for inside points, ``surface_world_out`` (N, 3) and
    ``triangle_out`` (N,) (the nearest triangle of a mesh, else -1).
    Returns the number of inside points.
    """
    triangle = np.empty(1, dtype=np.int64)
    p = np.empty(3)
    q = np.empty(3)
    surface = np.empty(3)
    count = 0
    seed = -1                 # the last nearest triangle: points come in surface order
    for n in range(points_world.shape[0]):
        point_to_frame(T_world_solid, points_world[n], p)
        if not point_in_box(p, box_center, box_axes, box_half):
            depth_out[n] = OUTSIDE
            triangle_out[n] = -1
            continue
        triangle[0] = seed
        d = point_depth(kind, params, planes, triangles, bounds, nodes, order, pseudo_normals, manifold, p, surface,
                        triangle, face_normals)
        if kind == KIND_MESH and triangle[0] >= 0:
            seed = triangle[0]
        depth_out[n] = d
        triangle_out[n] = triangle[0] if d >= 0.0 else -1
        if d >= 0.0:
            count += 1
            point_to_world(T_world_solid, surface, q)
            surface_world_out[n] = q
    return count


@njit(cache=True)
def support_point(kind, params, vertices, direction, out):
    """Point of a solid (own frame) farthest along ``direction`` (3,); convex and meshes use vertices."""
    dx, dy, dz = direction[0], direction[1], direction[2]
    if kind == KIND_BOX:
        out[0] = params[0] if dx >= 0.0 else -params[0]
        out[1] = params[1] if dy >= 0.0 else -params[1]
        out[2] = params[2] if dz >= 0.0 else -params[2]
        return
    norm = np.sqrt(dx * dx + dy * dy + dz * dz)
    rho = np.sqrt(dx * dx + dy * dy)
    if kind == KIND_SPHERE:
        for i in range(3):
            out[i] = params[0] * direction[i] / max(norm, _TINY)
        return
    ux, uy = (dx / rho, dy / rho) if rho > _TINY else (0.0, 0.0)
    if kind == KIND_CYLINDER:
        out[0], out[1] = params[0] * ux, params[0] * uy
        out[2] = params[1] if dz >= 0.0 else -params[1]
        return
    if kind == KIND_CAPSULE:
        z = params[1] if dz >= 0.0 else -params[1]
        out[0] = params[0] * dx / max(norm, _TINY)
        out[1] = params[0] * dy / max(norm, _TINY)
        out[2] = z + params[0] * dz / max(norm, _TINY)
        return
    if kind == KIND_CONE:
        apex = params[1] * dz
        rim = params[0] * rho - params[1] * dz
        if apex >= rim:
            out[0], out[1], out[2] = 0.0, 0.0, params[1]
        else:
            out[0], out[1], out[2] = params[0] * ux, params[0] * uy, -params[1]
        return
    best = -np.inf
    for v in range(vertices.shape[0]):
        s = vertices[v, 0] * dx + vertices[v, 1] * dy + vertices[v, 2] * dz
        if s > best:
            best = s
            out[:] = vertices[v]


@njit(cache=True)
def refine_to_support(steps, kind_x, params_x, vertices_x, T_world_x, point, surface, depth, T_world_solid, solid):
    """Move body x's deepest point in a solid to x's support point along the push-out, up to ``steps`` times.

    Body x: its kind, sizes and vertices (:func:`support_point`) and pose; the solid: a
    :class:`SolidArrays` posed at ``T_world_solid``.

    ``point`` and ``surface`` (3,) (planning frame) and ``depth`` are the current deepest
    point, its nearest point on the solid's surface and its depth. Each step takes x's
    extreme point along ``point - surface`` and keeps it if it lies deeper. Returns
    (depth, point, surface, triangle of the solid (-1: none), whether it moved).
    """
    point = point.copy()
    surface = surface.copy()
    local = np.empty(3)
    push_out = np.empty(3)
    direction = np.empty(3)
    candidate = np.empty((1, 3))
    d = np.empty(1)
    s = np.empty((1, 3))
    t = np.empty(1, dtype=np.int64)
    triangle = -1
    moved = False
    for _ in range(steps):
        length = 0.0
        for i in range(3):
            length += (point[i] - surface[i]) ** 2
        length = np.sqrt(length)
        if length < 1e-15:
            break
        for i in range(3):
            push_out[i] = point[i] - surface[i]
        vector_to_frame(T_world_x, push_out, direction)       # -(surface - point) in x's frame
        for r in range(3):
            direction[r] = direction[r] / length
        support_point(kind_x, params_x, vertices_x, direction, local)
        point_to_world(T_world_x, local, candidate[0])
        points_depth(candidate, T_world_solid, solid.kind, solid.params, solid.planes, solid.triangles, solid.bounds,
                     solid.nodes, solid.order, solid.pseudo_normals, solid.manifold, solid.box_center,
                     solid.box_axes, solid.box_half, d, s, t, solid.face_normals)
        if d[0] <= depth + 1e-12:
            break
        depth = d[0]
        point[:] = candidate[0]
        surface[:] = s[0]
        triangle = t[0]
        moved = True
    return depth, point, surface, triangle, moved


@njit(cache=True)
def label_components(n_points, edges, keep):
    """Connected components (labels (n_points,)) of the kept points along edges (E, 2); -1 if not kept."""
    parent = np.arange(n_points)
    for e in range(edges.shape[0]):
        i, j = edges[e, 0], edges[e, 1]
        if not (keep[i] and keep[j]):
            continue
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        if i != j:
            parent[max(i, j)] = min(i, j)
    labels = np.full(n_points, -1)
    for k in range(n_points):
        if keep[k]:
            r = k
            while parent[r] != r:
                r = parent[r]
            labels[k] = r
    return labels


@njit(cache=True)
def _first_plane_outside(planes_t, p):
    """The first plane f (of ``planes_t`` (4, H): the rows of (H, 4) planes as columns) with
    n . p - d > 0 and that value; (-1, 0) when p is inside them all.

    One pass over every plane without a branch (the compiler vectorises it: a point inside
    the hull, the common case, scans them all), then the first one found in order. The
    values are those of the plain per-plane loop, bit for bit.
    """
    n = planes_t.shape[1]
    x, y, z = p[0], p[1], p[2]
    a, b, c, d = planes_t[0], planes_t[1], planes_t[2], planes_t[3]
    hit = 0
    for f in range(n):
        hit += a[f] * x + b[f] * y + c[f] * z - d[f] > 0.0
    if hit:
        for f in range(n):
            v = a[f] * x + b[f] * y + c[f] * z - d[f]
            if v > 0.0:
                return f, v
    return -1, 0.0


@njit(inline="always")
def _first_plane_outside_rows(planes, p):
    """:func:`_first_plane_outside` of the planes as rows (``planes`` (H, 4)), the same values bit for bit: for one
    point, where a transposed copy of the planes would cost more than the scan."""
    x, y, z = p[0], p[1], p[2]
    for f in range(planes.shape[0]):
        v = planes[f, 0] * x + planes[f, 1] * y + planes[f, 2] * z - planes[f, 3]
        if v > 0.0:
            return f, v
    return -1, 0.0


@njit(cache=True)
def _mesh_signed_distance(hull_planes_t, triangles, bounds, nodes, order, pseudo_normals, p, surface, seed,
                          face_normals=None):
    """Signed distance of p to a closed 2-manifold mesh (> 0 inside), its nearest triangle and True;
    or, when a plane of the mesh's convex hull (``hull_planes_t`` (4, H), see
    :func:`_first_plane_outside`) already puts p outside, minus the distance to that plane
    (an upper bound of the signed distance), -1 and False."""
    f, v = _first_plane_outside(hull_planes_t, p)
    if f >= 0:
        return -v, -1, False
    s, t = _tree_signed_distance(triangles, bounds, nodes, order, pseudo_normals, p, surface, seed, face_normals)
    return s, t, True


@njit(inline="always")
def _tree_signed_distance(triangles, bounds, nodes, order, pseudo_normals, p, surface, seed, face_normals):
    """Signed distance of p to a closed 2-manifold mesh (> 0 inside) by its nearest triangle (the tree's, written to
    ``surface``) and that feature's pseudo-normal, and the triangle: :func:`_mesh_signed_distance` where no hull plane
    puts p outside."""
    d2, t, feature = tree_closest_point(p, triangles, bounds, nodes, order, surface, seed, face_normals)
    side = 0.0
    for i in range(3):
        side += (p[i] - surface[i]) * pseudo_normals[t, feature, i]
    d = np.sqrt(d2)
    return (d if side < 0.0 else -d), t


@njit(cache=True)
def adjacency(n_points, edges):
    """The neighbours of each point along edges (E, 2): those of point j are
    ``adjacent[adjacent_start[j]:adjacent_start[j + 1]]``."""
    adjacent_start = np.zeros(n_points + 1, dtype=np.int64)
    for e in range(edges.shape[0]):
        adjacent_start[edges[e, 0] + 1] += 1
        adjacent_start[edges[e, 1] + 1] += 1
    for j in range(n_points):
        adjacent_start[j + 1] += adjacent_start[j]
    fill = adjacent_start[:n_points].copy()
    adjacent = np.empty(2 * edges.shape[0], dtype=np.int64)
    for e in range(edges.shape[0]):
        i, k = edges[e, 0], edges[e, 1]
        adjacent[fill[i]] = k
        fill[i] += 1
        adjacent[fill[k]] = i
        fill[k] += 1
    return adjacent_start, adjacent


@njit(cache=True)
def _place_point(points_shape, j, T_world_x, T_world_solid, box_center, box_axes, box_half, points_world, local):
    """Point j of body x in the planning frame and in the solid's frame; returns its squared
    distance to the solid's box (0 inside)."""
    point_to_world(T_world_x, points_shape[j], points_world[j])
    point_to_frame(T_world_solid, points_world[j], local[j])
    excess2 = 0.0
    for i in range(3):
        acc = 0.0
        for u in range(3):
            acc += box_axes[u, i] * (local[j, u] - box_center[u])
        e = abs(acc) - box_half[i]
        if e > 0.0:
            excess2 += e * e
    return excess2


@njit(cache=True)
def _to_world(T_world_solid, surface, out, j):
    """Row j of ``out`` (N, 3): the solid-frame point ``surface`` (3,) in the planning frame."""
    point_to_world(T_world_solid, surface, out[j])


@njit(cache=True)
def _scan_surface_points(samples, T_world_x, T_world_solid, solid, planes_t, points_world, local, depth,
                         surface_world, triangle, s_lo, s_hi, exact, placed, first_only):
    """The first pass of :func:`surface_points_inside` over body x's points in order: each point's
    side and (bounds of) its depth, filled into the arrays (N points; see there), each point decided
    from earlier points only. ``planes_t``: the solid's planes as columns (``planes.T``, C-ordered).
    With ``first_only`` it returns at the first point found inside (depth > 0), the arrays then
    filled up to that point only. Returns (the last nearest triangle, the seed of the next search;
    whether a point was found inside when ``first_only``, else False).
    """
    points_shape, parent = samples.points, samples.parents
    adjacent_start, adjacent = samples.adjacent_start, samples.adjacent
    kind, params, planes, triangles = solid.kind, solid.params, solid.planes, solid.triangles
    bounds, nodes, order, pseudo_normals = solid.bounds, solid.nodes, solid.order, solid.pseudo_normals
    manifold, face_normals = solid.manifold, solid.face_normals
    box_center, box_axes, box_half = solid.box_center, solid.box_axes, solid.box_half
    n = points_shape.shape[0]
    surface = np.empty(3)
    one = np.empty(1, dtype=np.int64)
    bounded = kind == KIND_MESH and manifold
    neighbours = adjacent_start.shape[0] == n + 1
    last = -1
    seed = -1
    # x's frame straight to the solid's box axes (one product per point): a point this
    # finds outside the box by more than _BOX_PREFILTER_M is outside it whatever the rounding
    box_from_x = np.empty((3, 4))
    for i in range(3):
        for c in range(4):
            acc = 0.0
            for u in range(3):
                row = 0.0                    # row u of (R_solid^T [R_x | t_x - t_solid])
                for w in range(3):
                    row += T_world_solid[w, u] * (T_world_x[w, c] - (T_world_solid[w, 3] if c == 3 else 0.0))
                acc += box_axes[u, i] * (row - (box_center[u] if c == 3 else 0.0))
            box_from_x[i, c] = acc
    for j in range(n):
        excess2 = 0.0
        for i in range(3):
            acc = box_from_x[i, 3]
            for u in range(3):
                acc += box_from_x[i, u] * points_shape[j, u]
            e = abs(acc) - box_half[i]
            if e > 0.0:
                excess2 += e * e
        if excess2 > _BOX_PREFILTER_M * _BOX_PREFILTER_M:
            s_hi[j] = -np.sqrt(excess2)          # placed later if a later point's bound needs it
            continue
        placed[j] = True
        excess2 = _place_point(points_shape, j, T_world_x, T_world_solid, box_center, box_axes, box_half,
                               points_world, local)
        if excess2 > 0.0:
            s_hi[j] = -np.sqrt(excess2)
            continue
        if not bounded:
            one[0] = seed
            d = point_depth(kind, params, planes, triangles, bounds, nodes, order, pseudo_normals, manifold,
                            local[j], surface, one, face_normals)
            if kind == KIND_MESH and one[0] >= 0:
                seed = one[0]
            if d < 0.0:
                continue
            triangle[j] = one[0] if kind == KIND_MESH else -1
            depth[j] = d
            _to_world(T_world_solid, surface, surface_world, j)
            if first_only and d > 0.0:
                return seed, True
            continue
        ref = parent[j]
        if ref < 0 or np.isnan(s_hi[ref]):
            ref = last
        if ref >= 0 and not placed[ref]:         # outside the box: its bound as if placed at once
            placed[ref] = True
            s_hi[ref] = -np.sqrt(_place_point(points_shape, ref, T_world_x, T_world_solid, box_center, box_axes,
                                              box_half, points_world, local))
        lo_j, hi_j = -np.inf, np.inf
        if ref >= 0:
            dx = local[j, 0] - local[ref, 0]
            dy = local[j, 1] - local[ref, 1]
            dz = local[j, 2] - local[ref, 2]
            gap = np.sqrt(dx * dx + dy * dy + dz * dz)
            lo_j, hi_j = s_lo[ref] - gap, s_hi[ref] + gap
        if not (lo_j > ON_SURFACE_M or hi_j < 0.0) and neighbours:
            # not decided by the reference: every earlier neighbour with an interval narrows it
            for e in range(adjacent_start[j], adjacent_start[j + 1]):
                k = adjacent[e]
                if k >= j or k == ref or not placed[k] or np.isnan(s_hi[k]):
                    continue
                dx = local[j, 0] - local[k, 0]
                dy = local[j, 1] - local[k, 1]
                dz = local[j, 2] - local[k, 2]
                gap = np.sqrt(dx * dx + dy * dy + dz * dz)
                if s_lo[k] - gap > lo_j:
                    lo_j = s_lo[k] - gap
                if s_hi[k] + gap < hi_j:
                    hi_j = s_hi[k] + gap
                if lo_j > ON_SURFACE_M or hi_j < 0.0:
                    break
        if lo_j > ON_SURFACE_M:                  # inside, depth within [lo_j, hi_j]
            s_lo[j], s_hi[j] = lo_j, hi_j
            depth[j] = lo_j
            if first_only:
                return seed, True
            continue
        if hi_j < 0.0:                           # outside
            s_lo[j], s_hi[j] = lo_j, hi_j
            continue
        if ref >= 0 and exact[ref] and triangle[ref] >= 0:
            seed = triangle[ref]
        s, t, known = _mesh_signed_distance(planes_t, triangles, bounds, nodes, order, pseudo_normals, local[j],
                                            surface, seed, face_normals)
        if not known:
            s_lo[j], s_hi[j] = -np.inf, s
            continue
        seed = t
        s_lo[j] = s_hi[j] = s
        exact[j] = True
        triangle[j] = t
        last = j
        if s <= ON_SURFACE_M:
            continue
        depth[j] = s
        _to_world(T_world_solid, surface, surface_world, j)
        if first_only:
            return seed, True
    return seed, False


@njit(cache=True)
def _scan_buffers(n):
    """What :func:`_scan_surface_points` fills for n points, as it expects them before the scan:
    world and solid-frame points, depth (``OUTSIDE``), surface point, triangle (-1), the interval
    of the signed distance (NaN: nothing known), exact, and placed (points_world, local and the
    interval's top computed in full)."""
    return (np.empty((n, 3)), np.empty((n, 3)), np.full(n, OUTSIDE), np.zeros((n, 3)), np.full(n, -1),
            np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))


@njit(cache=True)
def surface_points_inside(samples, T_world_x, T_world_solid, solid):
    """Body x's surface points (:class:`SurfaceSamples`, posed at ``T_world_x``) inside a solid
    (:class:`SolidArrays`, posed at ``T_world_solid``), grouped along their ``edges``, and the
    deepest point of each group.

    The same depths as :func:`points_depth` for every point that may be the deepest of its
    group. For a closed 2-manifold mesh the signed distance s is 1-Lipschitz: each point
    gets an interval of s, exact when computed, else from its ``parent`` (an earlier point
    near it, -1 for none: then the last computed point) widened by the distance between
    the two, narrowed when that does not tell the side by its earlier neighbours along
    ``edges`` (``adjacent_start``, ``adjacent``: :func:`adjacency` of ``edges``; when
    ``adjacent_start`` does not have one entry per point plus one, the parent alone) the same
    way; the side is known when the interval does not hold 0. Points outside the box
    or the hull get an upper bound (minus their distance to it). An inside point's exact
    depth is computed only when its upper bound (also from the exact depths computed
    so far) reaches the deepest exact depth of its group; the others keep their lower
    bound in ``depth`` (and no surface point).
    Returns an :class:`InsidePoints`.
    """
    edges = samples.edges
    kind, planes, triangles = solid.kind, solid.planes, solid.triangles
    bounds, nodes, order, pseudo_normals = solid.bounds, solid.nodes, solid.order, solid.pseudo_normals
    manifold, face_normals = solid.manifold, solid.face_normals
    n = samples.points.shape[0]
    points_world, local, depth, surface_world, triangle, s_lo, s_hi, exact, placed = _scan_buffers(n)
    surface = np.empty(3)
    bounded = kind == KIND_MESH and manifold
    planes_t = np.ascontiguousarray(planes.T)     # hull planes as columns: a vectorised scan
    seed, _ = _scan_surface_points(samples, T_world_x, T_world_solid, solid, planes_t, points_world, local, depth,
                                   surface_world, triangle, s_lo, s_hi, exact, placed, False)
    keep = depth > 0.0
    if not keep.any():                       # nothing inside: no group
        return InsidePoints(points_world, depth, surface_world, triangle, np.full(n, -1), np.full(0, -1),
                            np.full((0, 3), np.inf), np.full((0, 3), -np.inf))
    labels = label_components(n, edges, keep)
    if bounded:
        best = np.full(n, -np.inf)
        pending = 0
        for j in range(n):
            if labels[j] >= 0:
                if exact[j]:
                    best[labels[j]] = max(best[labels[j]], depth[j])
                else:
                    pending += 1
        if pending > 0:
            upper = np.where((labels >= 0) & ~exact, s_hi, -np.inf)
            ranked = np.argsort(-upper)
            computed = np.empty(pending, dtype=np.int64)     # exact in this pass: the deep ones
            n_computed = 0
            for m in range(pending):
                j = ranked[m]
                bound = upper[j]
                for c in range(n_computed):            # tighter bounds from the deep points computed so far
                    k = computed[c]
                    if labels[k] != labels[j]:
                        continue
                    dx = local[j, 0] - local[k, 0]
                    dy = local[j, 1] - local[k, 1]
                    dz = local[j, 2] - local[k, 2]
                    bound = min(bound, depth[k] + np.sqrt(dx * dx + dy * dy + dz * dz))
                if bound < best[labels[j]]:
                    continue
                s, t, known = _mesh_signed_distance(planes_t, triangles, bounds, nodes, order, pseudo_normals,
                                                    local[j], surface, seed, face_normals)
                computed[n_computed] = j
                n_computed += 1
                exact[j] = True
                depth[j] = max(s, ON_SURFACE_M)       # inside by its interval: s > 0 but for rounding
                triangle[j] = t
                _to_world(T_world_solid, surface, surface_world, j)
                best[labels[j]] = max(best[labels[j]], depth[j])
    deepest, lo, hi = summarize_regions(labels, depth, points_world)
    return InsidePoints(points_world, depth, surface_world, triangle, labels, deepest, lo, hi)


@njit(cache=True)
def summarize_regions(labels, depth, points):
    """Per region (labels from :func:`label_components`, -1 outside): its deepest point and box.

    Returns ``deepest`` (R,) int64 (index of the deepest point of each region, regions
    in order of their first point) and ``lo``, ``hi`` (R, 3) (the box of its points).
    """
    n = labels.shape[0]
    slot = np.full(n, -1)
    n_regions = 0
    for k in range(n):
        if labels[k] >= 0 and slot[labels[k]] < 0:
            slot[labels[k]] = n_regions
            n_regions += 1
    deepest = np.full(n_regions, -1)
    lo = np.full((n_regions, 3), np.inf)
    hi = np.full((n_regions, 3), -np.inf)
    for k in range(n):
        if labels[k] < 0:
            continue
        r = slot[labels[k]]
        if deepest[r] < 0 or depth[k] > depth[deepest[r]]:
            deepest[r] = k
        for i in range(3):
            lo[r, i] = min(lo[r, i], points[k, i])
            hi[r, i] = max(hi[r, i], points[k, i])
    return deepest, lo, hi


@njit(cache=True)
def merge_regions(depth, lo, hi):
    """Group regions (R,) whose boxes (R, 3), grown by the deeper of the two depths, meet.

    Returns the group (R,) of each region: the index of its group's first region.
    """
    n = depth.shape[0]
    parent = np.arange(n)
    for i in range(n):
        for j in range(i + 1, n):
            grow = max(depth[i], depth[j])
            meet = True
            for u in range(3):
                if lo[i, u] - grow > hi[j, u] or lo[j, u] - grow > hi[i, u]:
                    meet = False
                    break
            if not meet:
                continue
            a, b = i, j
            while parent[a] != a:
                a = parent[a]
            while parent[b] != b:
                b = parent[b]
            if a != b:
                parent[max(a, b)] = min(a, b)
    for i in range(n):
        r = i
        while parent[r] != r:
            r = parent[r]
        parent[i] = r
    return parent




@njit(cache=True)
def pair_regions(max_regions, steps, samples_a, solid_a, T_world_a, samples_b, solid_b, T_world_b):
    """:func:`deepest_of_regions` for a caller in Python: each body's :class:`SurfaceSamples` and
    :class:`SolidArrays` given as plain tuples of their fields (numba types a plain tuple of
    arrays at the speed of single arrays, a NamedTuple field by field in Python on every call)."""
    return deepest_of_regions(max_regions, steps, SurfaceSamples(*samples_a), SolidArrays(*solid_a), T_world_a,
                              SurfaceSamples(*samples_b), SolidArrays(*solid_b), T_world_b)


@njit(cache=True)
def any_surface_point_inside(samples, T_world_x, T_world_solid, solid):
    """Whether :func:`surface_points_inside` finds any of body x's points inside the solid (depth > 0):
    its first pass, in the same order and with the same numbers, stopped at the first such point."""
    points_world, local, depth, surface_world, triangle, s_lo, s_hi, exact, placed = _scan_buffers(
        samples.points.shape[0])
    planes_t = np.ascontiguousarray(solid.planes.T)
    _, found = _scan_surface_points(samples, T_world_x, T_world_solid, solid, planes_t, points_world, local, depth,
                                    surface_world, triangle, s_lo, s_hi, exact, placed, True)
    return found


# how far inside the solid (metres) the leading surface point must be for deepest_sample_inside to say yes: well
# above ON_SURFACE_M and the rounding of the two depth routines, so that the scan would say yes at that point too
_LEADING_INSIDE_M = 1e-9


@njit(cache=True)
def leading_sample_inside(samples, T_world_x, T_world_solid, solid, nx, ny, nz):
    """:func:`_leading_sample_inside` (its entry for Python callers)."""
    return _leading_sample_inside(samples, T_world_x, T_world_solid, solid, nx, ny, nz, np.empty((3, 3)),
                                  np.empty(1, dtype=np.int64))


@njit(inline="always")
def _leading_sample_inside(samples, T_world_x, T_world_solid, solid, nx, ny, nz, scratch, one):
    """Whether body x's surface point farthest along the world direction (nx, ny, nz) (the first of equals) lies
    inside the solid by more than _LEADING_INSIDE_M: the depth :func:`_scan_surface_points` computes for it (the
    same placing, ``point_depth`` or, for a closed 2-manifold mesh, ``_mesh_signed_distance``).

    A yes means :func:`any_surface_point_inside` says yes too (that point is one of those it scans, and its bounds
    are sound), so :func:`pair_overlaps` may answer from it; a no says nothing. Along the overlap's normal from x
    to the solid, the leading point is where x reaches deepest into it: most overlapping pairs are told here.

    ``scratch`` (3, 3) float64 and ``one`` (1,) int64: working space (a caller testing twice makes it once)."""
    points = samples.points
    n = points.shape[0]
    if n == 0:
        return False
    # the direction in x's frame
    mx = T_world_x[0, 0] * nx + T_world_x[1, 0] * ny + T_world_x[2, 0] * nz
    my = T_world_x[0, 1] * nx + T_world_x[1, 1] * ny + T_world_x[2, 1] * nz
    mz = T_world_x[0, 2] * nx + T_world_x[1, 2] * ny + T_world_x[2, 2] * nz
    best = 0
    best_v = -np.inf
    for j in range(n):
        v = points[j, 0] * mx + points[j, 1] * my + points[j, 2] * mz
        if v > best_v:
            best_v, best = v, j
    world = scratch[0:1]
    local = scratch[1:2]
    excess2 = _place_point(points[best:best + 1], 0, T_world_x, T_world_solid, solid.box_center, solid.box_axes,
                           solid.box_half, world, local)
    if excess2 > 0.0:
        return False
    surface = scratch[2]
    if solid.kind == KIND_MESH and solid.manifold:
        # (_mesh_signed_distance's answer for the one point, its hull planes read as rows: no transposed copy)
        f, _ = _first_plane_outside_rows(solid.planes, local[0])
        if f >= 0:
            return False
        s, _ = _tree_signed_distance(solid.triangles, solid.bounds, solid.nodes, solid.order, solid.pseudo_normals,
                                     local[0], surface, -1, solid.face_normals)
        return s > _LEADING_INSIDE_M
    one[0] = -1
    d = point_depth(solid.kind, solid.params, solid.planes, solid.triangles, solid.bounds, solid.nodes, solid.order,
                    solid.pseudo_normals, solid.manifold, local[0], surface, one, solid.face_normals)
    return d > _LEADING_INSIDE_M


@njit(cache=True)
def pair_overlaps_along(samples_a, solid_a, T_world_a, samples_b, solid_b, T_world_b, nx, ny, nz):
    """:func:`pair_overlaps`, the same answer, told first from the two leading surface points along the unit
    (nx, ny, nz) from a to b (a's farthest along it inside b, b's farthest against it inside a:
    :func:`leading_sample_inside`), the full scans only where neither is inside."""
    # (inlined: no call counting the two packs' arrays up and down again; one working space for both)
    scratch = np.empty((3, 3))
    one = np.empty(1, dtype=np.int64)
    if _leading_sample_inside(SurfaceSamples(*samples_a), T_world_a, T_world_b, SolidArrays(*solid_b), nx, ny, nz,
                              scratch, one):
        return True
    if _leading_sample_inside(SurfaceSamples(*samples_b), T_world_b, T_world_a, SolidArrays(*solid_a), -nx, -ny, -nz,
                              scratch, one):
        return True
    return pair_overlaps(samples_a, solid_a, T_world_a, samples_b, solid_b, T_world_b)


@njit(cache=True)
def pair_overlaps(samples_a, solid_a, T_world_a, samples_b, solid_b, T_world_b):
    """Whether :func:`pair_regions` (same arguments, without its counts) finds a region: a surface point
    of a inside b or of b inside a (:func:`any_surface_point_inside`, a's points first). The same answer
    as ``len(pair_regions(...)[0]) > 0``, at the cost of the points up to the first one inside."""
    if any_surface_point_inside(SurfaceSamples(*samples_a), T_world_a, T_world_b, SolidArrays(*solid_b)):
        return True
    return any_surface_point_inside(SurfaceSamples(*samples_b), T_world_b, T_world_a, SolidArrays(*solid_a))


@njit(cache=True)
def deepest_of_regions(max_regions, steps, samples_a, solid_a, T_world_a, samples_b, solid_b, T_world_b):
    """Deepest point of each separate overlap region of two posed solids a and b, deepest first.

    Per body: its surface points (:class:`SurfaceSamples`), the body as a solid
    (:class:`SolidArrays`) and its pose. Side 0 is a's
    points inside b, side 1 b's inside a (:func:`surface_points_inside`). The deepest
    point of each group of a side is a region; regions whose boxes, grown by the deeper
    of the two depths, meet are one (:func:`merge_regions`). In each, the deepest point
    of each side whose body has a support function (a primitive or a convex mesh) is
    moved to its support point along the push-out (``steps`` times at most,
    :func:`refine_to_support`), and the deeper side gives the region's contact.
    Returns, for at most ``max(1, max_regions)`` regions (none when no point is inside):
    ``depth`` (R,), ``p0``, ``p1`` (R, 3) (witness points on a and b, planning frame),
    ``normal`` (R, 3) (unit, from a to b; ``p1 = p0 - depth * normal``) and
    ``subshapes`` (R, 2) (face of a, face of b the witness points lie on; -1: unknown).
    """
    sides = (surface_points_inside(samples_a, T_world_a, T_world_b, solid_b),
             surface_points_inside(samples_b, T_world_b, T_world_a, solid_a))
    n0, n1 = sides[0].deepest.shape[0], sides[1].deepest.shape[0]
    n = n0 + n1
    depth_of = np.empty(n)
    lo = np.empty((n, 3))
    hi = np.empty((n, 3))
    for r in range(n):
        side = 0 if r < n0 else 1
        slot = r if r < n0 else r - n0
        k = sides[side].deepest[slot]
        depth_of[r] = sides[side].depth[k]
        lo[r] = sides[side].lo[slot]
        hi[r] = sides[side].hi[slot]
    group = merge_regions(depth_of, lo, hi)
    # the deepest region of each (group, side), in the order the pairs first appear
    best = np.full((max(n, 1), 2), -1)
    key_group = np.empty(n, dtype=np.int64)
    key_side = np.empty(n, dtype=np.int64)
    n_keys = 0
    for r in range(n):
        g, side = group[r], (0 if r < n0 else 1)
        if best[g, side] < 0:
            key_group[n_keys], key_side[n_keys] = g, side
            n_keys += 1
            best[g, side] = r
        elif depth_of[r] > depth_of[best[g, side]]:
            best[g, side] = r
    # per group (in the order groups first appear): the deeper of its sides' refined points
    g_depth = np.empty(n)
    g_point = np.empty((n, 3))
    g_surface = np.empty((n, 3))
    g_side = np.empty(n, dtype=np.int64)
    g_triangle = np.empty(n, dtype=np.int64)
    g_face = np.empty(n, dtype=np.int64)
    g_slot = np.full(max(n, 1), -1)
    n_groups = 0
    for m in range(n_keys):
        g, side = key_group[m], key_side[m]
        r = best[g, side]
        inside = sides[side]
        k = inside.deepest[r if side == 0 else r - n0]
        depth = inside.depth[k]
        point = inside.points_world[k].copy()
        surface = inside.surface_world[k].copy()
        triangle = inside.triangle[k]
        face = samples_a.faces[k] if side == 0 else samples_b.faces[k]
        if side == 0 and solid_a.kind <= KIND_CONVEX:
            depth, point, surface, t, moved = refine_to_support(
                steps, solid_a.kind, solid_a.params, samples_a.points, T_world_a, point, surface, depth, T_world_b,
                solid_b)
            if moved:
                triangle, face = t, -1
        elif side == 1 and solid_b.kind <= KIND_CONVEX:
            depth, point, surface, t, moved = refine_to_support(
                steps, solid_b.kind, solid_b.params, samples_b.points, T_world_b, point, surface, depth, T_world_a,
                solid_a)
            if moved:
                triangle, face = t, -1
        q = g_slot[g]
        if q < 0:
            q = g_slot[g] = n_groups
            n_groups += 1
        elif not depth > g_depth[q]:
            continue
        g_depth[q], g_side[q], g_triangle[q], g_face[q] = depth, side, triangle, face
        g_point[q] = point
        g_surface[q] = surface
    ranked = np.argsort(-g_depth[:n_groups], kind="mergesort")      # stable: ties keep their order
    n_out = min(n_groups, max(1, max_regions))
    out_depth = np.empty(n_out)
    p0 = np.empty((n_out, 3))
    p1 = np.empty((n_out, 3))
    normal = np.empty((n_out, 3))
    subshapes = np.empty((n_out, 2), dtype=np.int64)
    for m in range(n_out):
        q = ranked[m]
        depth = g_depth[q]
        out_depth[m] = depth
        for i in range(3):
            if g_side[q] == 0:    # a point of a inside b: b moves along point - surface
                p0[m, i] = g_point[q, i]
                normal[m, i] = (g_point[q, i] - g_surface[q, i]) / depth
            else:                 # a point of b inside a: b moves along surface - point
                p0[m, i] = g_surface[q, i]
                normal[m, i] = (g_surface[q, i] - g_point[q, i]) / depth
        for i in range(3):
            p1[m, i] = p0[m, i] - depth * normal[m, i]
        if g_side[q] == 0:
            subshapes[m, 0], subshapes[m, 1] = g_face[q], g_triangle[q]
        else:
            subshapes[m, 0], subshapes[m, 1] = g_triangle[q], g_face[q]
    return out_depth, p0, p1, normal, subshapes
