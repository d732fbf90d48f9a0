"""Compiled inner loops (numba) for contact geometry: inside tests and depths of points.

A point's *depth* in a solid is its distance to the solid's surface when the
point lies inside it (> 0), and a negative number when it lies outside. Every
kernel also gives the nearest surface point, so a contact's witness points are
the inside point and that surface point. Solids, in their own frame (metres):

- primitives, analytic: box (half extents), sphere, cylinder (z axis, centred),
  capsule (z axis, centred, ``length`` between the hemisphere centres), cone
  (z axis, base at ``-length/2``, apex at ``+length/2``, as fcl and coal);
- convex meshes, exact: the planes of their faces (for a point inside a convex
  solid the nearest surface point lies on the nearest face plane);
- closed meshes: generalised winding number for inside, nearest point over all
  triangles for the depth (``kernels.winding_number``, ``closest_point_on_triangles``).

Transforms are 4x4 and ``T_world_x`` is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .kernels import INSIDE_WINDING, closest_point_on_triangles, winding_number

KIND_BOX = 0
KIND_SPHERE = 1
KIND_CYLINDER = 2
KIND_CAPSULE = 3
KIND_CONE = 4
KIND_CONVEX = 5
KIND_MESH = 6
OUTSIDE = -1.0            # depth of a point that is not inside
_TINY = 1e-15


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
def _mesh_depth(hull_planes, triangles, p, surface, triangle):
    """Closed mesh; ``hull_planes`` (H, 4) those of its convex hull (a point outside them is outside)."""
    for f in range(hull_planes.shape[0]):
        if hull_planes[f, 0] * p[0] + hull_planes[f, 1] * p[1] + hull_planes[f, 2] * p[2] > hull_planes[f, 3]:
            return OUTSIDE
    if winding_number(p, triangles) <= INSIDE_WINDING:
        return OUTSIDE
    closest, t = closest_point_on_triangles(p, triangles)
    surface[:] = closest
    triangle[0] = t
    d = closest - p
    return np.sqrt(d @ d)


@njit(cache=True)
def point_depth(kind, params, planes, triangles, p, surface, triangle):
    """Depth of p (3,) in a solid (its own frame); fills the nearest surface point and,
    for a closed mesh, ``triangle[0]`` with its triangle index."""
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
    return _mesh_depth(planes, triangles, p, surface, triangle)


@njit(cache=True)
def points_depth(points_world, T_world_solid, kind, params, planes, triangles, box_center, box_axes, box_half,
                 depth_out, surface_world_out, triangle_out):
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
    for n in range(points_world.shape[0]):
        for r in range(3):
            acc = 0.0
            for u in range(3):
                acc += T_world_solid[u, r] * (points_world[n, u] - T_world_solid[u, 3])
            p[r] = acc
        inside_box = True
        for i in range(3):
            acc = 0.0
            for u in range(3):
                acc += box_axes[u, i] * (p[u] - box_center[u])
            if abs(acc) > box_half[i]:
                inside_box = False
                break
        if not inside_box:
            depth_out[n] = OUTSIDE
            triangle_out[n] = -1
            continue
        triangle[0] = -1
        d = point_depth(kind, params, planes, triangles, p, surface, triangle)
        depth_out[n] = d
        triangle_out[n] = triangle[0]
        if d >= 0.0:
            count += 1
            for r in range(3):
                acc = T_world_solid[r, 3]
                for u in range(3):
                    acc += T_world_solid[r, u] * surface[u]
                q[r] = acc
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


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel now, so that no request pays for it."""
    triangles = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    planes = np.array([[0.0, 0.0, 1.0, 1.0]])
    points = np.zeros((1, 3))
    depth = np.empty(1)
    surface = np.empty((1, 3))
    triangle = np.empty(1, dtype=np.int64)
    out = np.empty(3)
    for kind in range(KIND_MESH + 1):
        points_depth(points, np.eye(4), kind, np.ones(3), planes, triangles, np.zeros(3), np.eye(3), np.ones(3),
                     depth, surface, triangle)
        support_point(kind, np.ones(3), np.zeros((1, 3)), np.ones(3), out)
    label_components(2, np.array([[0, 1]], dtype=np.int64), np.array([True, True]))
