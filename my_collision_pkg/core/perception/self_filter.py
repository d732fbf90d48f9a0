"""Self-filtering: points on or near the robot dropped, points and cells inside world objects cleared.

A point is *near* a shape when it lies inside the shape's solid or within ``padding_m`` of
its surface (within :data:`SURFACE_TOLERANCE_M` at least, so that a point on the surface
whose coordinates went through a FLOAT32 cloud still counts as on it). The tests are exact for every
kind of shape the package builds, not a bounding-box mask:

- primitives (box, sphere, cylinder, capsule, cone): the analytic distance to the solid
  (0 inside), in the shape's frame, as ``kernels.depth`` poses them;
- convex meshes: inside when no face plane (``ShapeGeometry.solid_planes``) has the point
  in front; else near when a triangle lies within the limit (an AABB tree of the
  triangles searched only within the limit, exact point-triangle distances from
  ``kernels.mesh_queries.closest_on_triangle``);
- closed non-convex meshes: near when a triangle lies within the limit (as above); else
  inside when the point is behind every plane of the convex hull and the pseudo-normal of
  its nearest feature (``kernels.mesh_queries.tree_closest_point`` on the shape's own
  ``MeshTree``) says so, or, for a mesh that is not a clean 2-manifold, its generalised
  winding number (``winding_number``);
- open meshes (no inside): near when a triangle lies within the limit.

Every shape is first culled by a sphere about its posed bounding box, then by that box
(in the shape frame), both grown by the limit: both contain the shape, so the culls drop
no near point. One compiled, parallel pass over the points (numba ``prange``) tests them
against every shape; the tables of the shapes are built once per world snapshot
(``CollisionWorld.cached``).

:func:`filter_robot_points` applies it to the robot's links and attached objects at a
configuration; :func:`points_outside_world_objects` to the world objects (moveit2#3614:
the sensor sees the objects a client already put in the world, and their cells must not
be kept as well); :func:`clear_cells_in_world_objects` drops the occupancy cells whose
centre lies inside a world object.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                KIND_MESH, KIND_OPEN_MESH, KIND_SPHERE)
from my_collision_pkg.core.kernels.mesh_queries import (INSIDE_WINDING, MeshTree, closest_on_triangle, tree_closest_point,
                                                        winding_number)
from my_collision_pkg.core.model.shapes import OcTree
from my_collision_pkg.core.perception.occupancy import OccupancyMap
from my_collision_pkg.core.perception.point_cloud import PointCloudError, check_points
from my_collision_pkg.core.scene.world import CollisionWorld

# A point this near a surface (metres) counts as on it, when the padding is smaller: a
# PointCloud2 holds FLOAT32 coordinates, which move a point by up to 6e-8 m at 1 m and
# 1e-6 m at 16 m from the origin, so "on the surface" means within 10 micrometres, far
# below any padding a user sets or any depth camera's noise (millimetres).
SURFACE_TOLERANCE_M = 1e-5
# Largest padding accepted (metres): beyond it the robot would swallow its whole workspace.
MAX_PADDING_M = 1.0
_SELF_KEY = "perception.self_filter.robot_solids"
_WORLD_KEY = "perception.self_filter.world_solids"
_CHUNK = 1024                  # points per parallel task of near_solids
_STACK_DEPTH = 256             # traversal stack of _triangles_within (a median-split tree is ~log2(T) deep)


class SolidTable(NamedTuple):
    """The shapes one filter tests, as flat arrays (shape frame, metres), built once per world.

    ``shapes`` (S,): indices into ``CollisionWorld.shapes``; ``kinds`` (S,) (``kernels.codes``);
    ``params`` (S, 3): primitive sizes (``ShapeGeometry.solid_params``); ``box_center``,
    ``box_axes``, ``box_half``: each shape's bounding box; ``planes`` (F, 4) with
    ``plane_start`` (S + 1,): face planes of a convex mesh, hull planes of a closed mesh;
    ``triangles`` (T, 3, 3) with ``triangle_start`` (S + 1,), and their trees (``bounds``,
    ``nodes``, ``order``, ``face_normals``, ``pseudo_normals``, ``node_start`` (S + 1,)),
    local to each shape's run; ``manifold`` (S,).
    """
    shapes: np.ndarray
    kinds: np.ndarray
    params: np.ndarray
    box_center: np.ndarray
    box_axes: np.ndarray
    box_half: np.ndarray
    planes: np.ndarray
    plane_start: np.ndarray
    triangles: np.ndarray
    triangle_start: np.ndarray
    bounds: np.ndarray
    nodes: np.ndarray
    order: np.ndarray
    face_normals: np.ndarray
    pseudo_normals: np.ndarray
    node_start: np.ndarray
    manifold: np.ndarray


@dataclass(frozen=True)
class FilteredPoints:
    """What a filter keeps of a cloud.

    Attributes
    ----------
    points_m : (M, 3) array
        The kept points (planning frame, metres), in input order.
    keep : (N,) bool array
        Which input points were kept.
    nearest_shape : (N,) int64 array
        For each dropped point, the index (into ``CollisionWorld.shapes``) of the first
        shape it is near; -1 for kept points.
    """
    points_m: np.ndarray
    keep: np.ndarray
    nearest_shape: np.ndarray

    @property
    def n_dropped(self) -> int:
        return int(len(self.keep) - np.count_nonzero(self.keep))


def _solid_table(world: CollisionWorld, shapes: np.ndarray) -> SolidTable:
    """The flat arrays of some shapes of a world (see :class:`SolidTable`)."""
    kinds, params, centers, axes, halves, manifold = [], [], [], [], [], []
    planes, triangles, bounds, nodes, order, face_normals, pseudo = [], [], [], [], [], [], []
    plane_start, triangle_start, node_start = [0], [0], [0]
    for s in shapes.tolist():
        g = world.shapes[s].geometry
        kind = int(g.solid_kind)
        kinds.append(kind)
        params.append(np.asarray(g.solid_params, dtype=float))
        centers.append(g.obb_center_shape)
        axes.append(g.obb_axes_shape)
        halves.append(g.obb_half_extents_m)
        p = np.asarray(g.solid_planes, dtype=float).reshape(-1, 4) if kind in (KIND_CONVEX, KIND_MESH) \
            else np.zeros((0, 4))
        planes.append(p)
        tri = np.zeros((0, 3, 3))
        tree = None
        if kind == KIND_MESH and g.triangles_shape is not None and g.mesh_tree is not None:
            tri, tree = g.triangles_shape, g.mesh_tree
        elif kind in (KIND_CONVEX, KIND_MESH, KIND_OPEN_MESH) and g.source_mesh is not None:
            vertices = np.asarray(g.source_mesh.vertices, dtype=float)
            faces = np.asarray(g.source_mesh.faces, dtype=np.int64)
            tri = np.ascontiguousarray(vertices[faces])
            tree = MeshTree.of(vertices, faces)
        if tree is None:
            manifold.append(False)
            tree = MeshTree(np.zeros((0, 2, 3)), np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64),
                            np.zeros((0, 7, 3)), False, np.zeros((0, 4)))
        else:
            manifold.append(bool(tree.manifold))
        triangles.append(np.asarray(tri, dtype=float).reshape(-1, 3, 3))
        bounds.append(tree.bounds)
        nodes.append(tree.nodes)
        order.append(tree.order)
        face_normals.append(tree.face_normals)
        pseudo.append(tree.pseudo_normals)
        plane_start.append(plane_start[-1] + len(planes[-1]))
        triangle_start.append(triangle_start[-1] + len(triangles[-1]))
        node_start.append(node_start[-1] + len(tree.nodes))
    n = len(kinds)

    def stack(parts, shape, dtype=float):
        return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(shape, dtype=dtype), dtype=dtype)

    return SolidTable(np.asarray(shapes, dtype=np.int64), np.array(kinds, dtype=np.int64).reshape(n),
                      stack([p[None] for p in params], (0, 3)), stack([c[None] for c in centers], (0, 3)),
                      stack([a[None] for a in axes], (0, 3, 3)), stack([h[None] for h in halves], (0, 3)),
                      stack(planes, (0, 4)), np.array(plane_start, dtype=np.int64), stack(triangles, (0, 3, 3)),
                      np.array(triangle_start, dtype=np.int64), stack(bounds, (0, 2, 3)),
                      stack(nodes, (0, 3), np.int64), stack(order, (0,), np.int64), stack(face_normals, (0, 4)),
                      stack(pseudo, (0, 7, 3)), np.array(node_start, dtype=np.int64),
                      np.array(manifold, dtype=np.bool_).reshape(n))


@njit(cache=True)
def _cone_distance(radius, half, rho, z):
    """Distance of the point (rho >= 0, z) of a cone's half plane to the cone (0 inside).

    The half plane's section is the triangle (0, -h), (r, -h), (0, h): an outside point
    with rho >= 0 is nearest to its base or its slant side, never to its axis.
    """
    if -half <= z <= half and rho <= radius * (half - z) / (2.0 * half):
        return 0.0
    rb = min(max(rho, 0.0), radius)
    base = np.sqrt((rho - rb) ** 2 + (z + half) ** 2)
    ex, ez = -radius, 2.0 * half
    t = ((rho - radius) * ex + (z + half) * ez) / (ex * ex + ez * ez)
    t = min(max(t, 0.0), 1.0)
    slant = np.sqrt((rho - (radius + t * ex)) ** 2 + (z - (-half + t * ez)) ** 2)
    return min(base, slant)


@njit(cache=True)
def _triangles_within(p, limit, triangles, bounds, nodes, order, surface):
    """Whether some triangle lies within ``limit`` of p (exact; tree boxes farther than it are skipped)."""
    if triangles.shape[0] == 0:
        return False
    limit2 = limit * limit
    stack = np.empty(_STACK_DEPTH, dtype=np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        d2 = 0.0
        for i in range(3):
            e = max(max(bounds[node, 0, i] - p[i], p[i] - bounds[node, 1, i]), 0.0)
            d2 += e * e
        if d2 > limit2:
            continue
        first = nodes[node, 0]
        if first < 0:
            for k in range(nodes[node, 1], nodes[node, 1] + nodes[node, 2]):
                closest_on_triangle(p, triangles, order[k], surface)
                e2 = (surface[0] - p[0]) ** 2 + (surface[1] - p[1]) ** 2 + (surface[2] - p[2]) ** 2
                if e2 <= limit2:
                    return True
            continue
        if top + 2 <= _STACK_DEPTH:
            stack[top] = first
            stack[top + 1] = first + 1
            top += 2
        else:                   # deeper than any median-split tree of MAX_MESH_TRIANGLES: test it all
            for k in range(triangles.shape[0]):
                closest_on_triangle(p, triangles, k, surface)
                e2 = (surface[0] - p[0]) ** 2 + (surface[1] - p[1]) ** 2 + (surface[2] - p[2]) ** 2
                if e2 <= limit2:
                    return True
            return False
    return False


@njit(cache=True)
def _outside_some_plane(planes, p):
    """Whether p lies in front of one of the planes (F, 4) (outward normal, offset)."""
    for f in range(planes.shape[0]):
        if planes[f, 0] * p[0] + planes[f, 1] * p[1] + planes[f, 2] * p[2] > planes[f, 3]:
            return True
    return False


@njit(cache=True)
def _near_shape(p, s, limit, kinds, params, planes, plane_start, triangles, triangle_start, bounds, nodes, order,
                face_normals, pseudo_normals, node_start, manifold, surface):
    """Whether p (shape frame) lies inside shape s or within ``limit`` of its surface."""
    kind = kinds[s]
    if kind == KIND_BOX:
        acc = 0.0
        for i in range(3):
            e = max(abs(p[i]) - params[s, i], 0.0)
            acc += e * e
        return acc <= limit * limit
    if kind == KIND_SPHERE:
        return np.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) - params[s, 0] <= limit
    if kind == KIND_CYLINDER:
        dr = max(np.sqrt(p[0] * p[0] + p[1] * p[1]) - params[s, 0], 0.0)
        dz = max(abs(p[2]) - params[s, 1], 0.0)
        return dr * dr + dz * dz <= limit * limit
    if kind == KIND_CAPSULE:
        z = min(max(p[2], -params[s, 1]), params[s, 1])
        return np.sqrt(p[0] * p[0] + p[1] * p[1] + (p[2] - z) ** 2) - params[s, 0] <= limit
    if kind == KIND_CONE:
        return _cone_distance(params[s, 0], params[s, 1], np.sqrt(p[0] * p[0] + p[1] * p[1]), p[2]) <= limit
    pl = planes[plane_start[s]:plane_start[s + 1]]
    if kind == KIND_CONVEX and pl.shape[0] > 0 and not _outside_some_plane(pl, p):
        return True                         # inside every face plane: inside the convex solid
    t0, t1 = triangle_start[s], triangle_start[s + 1]
    n0, n1 = node_start[s], node_start[s + 1]
    tri = triangles[t0:t1]
    if _triangles_within(p, limit, tri, bounds[n0:n1], nodes[n0:n1], order[t0:t1], surface):
        return True                         # on the surface or within the limit of it
    if kind != KIND_MESH or tri.shape[0] == 0:
        return False                        # convex: outside a plane; open mesh: no inside
    if pl.shape[0] > 0 and _outside_some_plane(pl, p):
        return False                        # outside the convex hull
    if manifold[s]:
        d2, t, feature = tree_closest_point(p, tri, bounds[n0:n1], nodes[n0:n1], order[t0:t1], surface, -1,
                                            face_normals[t0:t1])
        side = 0.0
        for i in range(3):
            side += (p[i] - surface[i]) * pseudo_normals[t0 + t, feature, i]
        return side < 0.0
    return winding_number(p, tri) > INSIDE_WINDING


@njit(cache=True, parallel=True)
def near_solids(points_world, T_shape_world, spheres_world, limits, kinds, params, box_center, box_axes, box_half, planes,
                plane_start, triangles, triangle_start, bounds, nodes, order, face_normals, pseudo_normals,
                node_start, manifold, hit_out):
    """For each point (N, 3) (planning frame), the first shape it is near (-1: none) into ``hit_out`` (N,).

    ``T_shape_world`` (S, 4, 4): each shape's inverse pose; ``spheres_world`` (S, 4): a
    sphere (centre, radius) about each posed shape's bounding box, grown by its limit, and
    ``limits`` (S,): the distance within which a point is near (padding plus tolerance); the
    rest as :class:`SolidTable`. A point outside every sphere costs one distance per shape.
    """
    n_shapes = kinds.shape[0]
    n_points = points_world.shape[0]
    n_chunks = (n_points + _CHUNK - 1) // _CHUNK
    for c in prange(n_chunks):
        p = np.empty(3)               # scratch, one per chunk of points
        surface = np.empty(3)
        for n in range(c * _CHUNK, min((c + 1) * _CHUNK, n_points)):
            hit_out[n] = -1
            x, y, z = points_world[n, 0], points_world[n, 1], points_world[n, 2]
            for s in range(n_shapes):
                dx, dy, dz = x - spheres_world[s, 0], y - spheres_world[s, 1], z - spheres_world[s, 2]
                if dx * dx + dy * dy + dz * dz > spheres_world[s, 3] * spheres_world[s, 3]:
                    continue
                for i in range(3):
                    p[i] = T_shape_world[s, i, 0] * x + T_shape_world[s, i, 1] * y + T_shape_world[s, i, 2] * z \
                        + T_shape_world[s, i, 3]
                limit = limits[s]
                inside_box = True
                for i in range(3):
                    acc = 0.0
                    for u in range(3):
                        acc += box_axes[s, u, i] * (p[u] - box_center[s, u])
                    if abs(acc) > box_half[s, i] + limit:
                        inside_box = False
                        break
                if not inside_box:
                    continue
                if _near_shape(p, s, limit, kinds, params, planes, plane_start, triangles, triangle_start, bounds,
                               nodes, order, face_normals, pseudo_normals, node_start, manifold, surface):
                    hit_out[n] = s
                    break


def _check_positions(world: CollisionWorld, positions) -> np.ndarray:
    q = np.asarray(positions, dtype=float).reshape(-1)
    n = len(world.robot.active_joint_names)
    if len(q) != n:
        raise PointCloudError(f"{len(q)} joint positions for the {n} active joints of robot '{world.robot.name}'")
    if not np.all(np.isfinite(q)):
        raise PointCloudError("joint positions hold NaN or infinite values")
    return q


def _check_padding(padding_m: float) -> float:
    if not (np.isfinite(padding_m) and 0.0 <= padding_m <= MAX_PADDING_M):
        raise PointCloudError(f"padding {padding_m!r} m must be finite, >= 0 and at most {MAX_PADDING_M} m "
                              f"(MAX_PADDING_M)")
    return float(padding_m)


def _run(world: CollisionWorld, table: SolidTable, T_world_shape: np.ndarray, points: np.ndarray,
         padding_m: float) -> FilteredPoints:
    n = len(points)
    hit = np.full(n, -1, dtype=np.int64)
    if len(table.shapes) and n:
        T = T_world_shape[table.shapes]
        R_t = np.transpose(T[:, :3, :3], (0, 2, 1))
        inverse = np.zeros_like(T)
        inverse[:, :3, :3] = R_t
        inverse[:, :3, 3] = -np.einsum("sij,sj->si", R_t, T[:, :3, 3])
        inverse[:, 3, 3] = 1.0
        limits = np.full(len(table.shapes), max(padding_m, SURFACE_TOLERANCE_M))
        spheres = np.empty((len(table.shapes), 4))
        spheres[:, :3] = np.einsum("sij,sj->si", T[:, :3, :3], table.box_center) + T[:, :3, 3]
        spheres[:, 3] = np.linalg.norm(table.box_half, axis=1) * (1.0 + 1e-12) + limits + SURFACE_TOLERANCE_M
        near_solids(points, np.ascontiguousarray(inverse), spheres, limits, table.kinds, table.params, table.box_center,
                    table.box_axes, table.box_half, table.planes, table.plane_start, table.triangles,
                    table.triangle_start, table.bounds, table.nodes, table.order, table.face_normals,
                    table.pseudo_normals, table.node_start, table.manifold, hit)
    keep = hit < 0
    nearest = np.full(n, -1, dtype=np.int64)
    dropped = ~keep
    nearest[dropped] = table.shapes[hit[dropped]]
    return FilteredPoints(np.ascontiguousarray(points[keep]), keep, nearest)


def robot_solids(world: CollisionWorld) -> SolidTable:
    """The robot's links and attached objects of a world as a :class:`SolidTable` (cached on the world)."""
    return world.cached(_SELF_KEY, lambda: _solid_table(world, np.array(
        [k for k, e in enumerate(world.shapes) if e.on_robot], dtype=np.int64)))


def world_object_solids(world: CollisionWorld) -> SolidTable:
    """The world objects (not attached) of a world as a :class:`SolidTable` (cached on the world).

    The occupancy map's octree is left out: points and cells are filtered against the objects
    a client placed, not against the map they feed.
    """
    return world.cached(_WORLD_KEY, lambda: _solid_table(world, np.array(
        [k for k, e in enumerate(world.shapes) if not e.on_robot and not isinstance(e.geometry.spec, OcTree)],
        dtype=np.int64)))


def filter_robot_points(world: CollisionWorld, positions: np.ndarray, points_world_m: np.ndarray,
                        padding_m: float = 0.0) -> FilteredPoints:
    """The points not on or within ``padding_m`` of the robot's links and attached objects.

    Parameters
    ----------
    world : CollisionWorld
        The snapshot whose robot shapes (links and attached objects) filter.
    positions : (A,) array
        Active joint positions that pose the robot (the cloud's time stamp's state).
    points_world_m : (N, 3) array
        Points in the planning frame, metres.
    padding_m : float
        Distance from a surface within which a point is dropped (metres; 0: on the surface,
        within :data:`SURFACE_TOLERANCE_M`, or inside only).

    Returns
    -------
    FilteredPoints

    Raises
    ------
    PointCloudError
        For points that are not (N, 3) finite coordinates, positions of the wrong length
        or not finite, or a bad padding.
    """
    points = check_points(points_world_m)
    padding = _check_padding(padding_m)
    T_world_shape = world.shape_transforms(world.robot.link_transforms(_check_positions(world, positions)))
    return _run(world, robot_solids(world), T_world_shape, points, padding)


def points_outside_world_objects(world: CollisionWorld, points_world_m: np.ndarray,
                                 padding_m: float = 0.0) -> FilteredPoints:
    """The points not inside (or within ``padding_m`` of) any world object (attached ones excluded).

    Raises
    ------
    PointCloudError
        For points that are not (N, 3) finite coordinates or a bad padding.
    """
    points = check_points(points_world_m)
    padding = _check_padding(padding_m)
    # world objects ride on no link: their poses are the world's own (planning frame)
    return _run(world, world_object_solids(world), world.T_frame_shape, points, padding)


def clear_cells_in_world_objects(world: CollisionWorld, occupancy: OccupancyMap,
                                 padding_m: float = 0.0) -> OccupancyMap:
    """The map without the cells whose centre lies inside (or within ``padding_m`` of) a world object.

    Cells bigger than the resolution (pruned nodes of a loaded file) are split into
    resolution cells first, so only the part inside an object goes. The same map is
    returned when no cell is inside one.
    """
    centres = occupancy.leaf_centres_m()
    kept = points_outside_world_objects(world, centres, padding_m)
    if kept.n_dropped == 0:
        return occupancy
    return OccupancyMap.from_cell_centres(kept.points_m, occupancy.resolution_m, source=occupancy.source)
