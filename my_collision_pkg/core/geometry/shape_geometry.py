"""Collision geometry of one shape: fcl and coal objects, bounding volumes, solid and surface samples.

A :class:`ShapeGeometry` is everything the checker needs about one shape in its
own frame: the fcl geometry, an oriented bounding box for culling, probe points
for the solid-body test, and (lazily) a triangle mesh for surfaces and pictures.
Closed convex meshes become ``fcl.Convex`` (true GJK/EPA depth and normal);
other meshes become BVH models, whose contacts carry the triangle index.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import fcl
import numpy as np
import trimesh

from my_collision_pkg.core.geometry.coal_setup import coal   # coal with its box support pinned (see there)
from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER, KIND_MESH,
                                                KIND_OPEN_MESH, KIND_SPHERE)
from my_collision_pkg.core.kernels.depth import adjacency
from my_collision_pkg.core.kernels.mesh_queries import MeshTree
from my_collision_pkg.core.errors import MeshError, ModelError
from my_collision_pkg.core.geometry.mesh_files import MeshResolver, load_mesh_file  # noqa: F401 (re-exported)
from my_collision_pkg.core.model.shapes import MAX_COORDINATE_M, MAX_MESH_TRIANGLES, Cone, MeshRef, OcTree, ShapeSpec, TriangleMesh, is_primitive

SPHERE_SUBDIVISIONS = 3      # icosphere used to draw spheres and build their surfaces
ROUND_SECTIONS = 48          # facets around cylinders, capsules and cones
MIN_DIMENSION_M = 0.0        # sizes must be strictly above this


@dataclass(frozen=True)
class ShapeGeometry:
    """One collision shape in its own frame.

    Attributes
    ----------
    spec : ShapeSpec
        What the shape was built from.
    fcl_geometry : fcl.CollisionGeometry
    obb_center_shape : (3,) centre of the oriented bounding box, shape frame, metres.
    obb_axes_shape : (3, 3) box axes as columns, shape frame.
    obb_half_extents_m : (3,) half sizes along those axes.
    probe_points_shape : (K, 3) one point inside (or on) each connected piece.
    is_bvh : bool
        Mesh checked as a triangle soup (subshape ids are triangle indices).
    is_closed_bvh : bool
        BVH mesh that encloses a volume: the solid-body test applies to it.
    """
    spec: ShapeSpec
    fcl_geometry: object = field(compare=False, repr=False)
    obb_center_shape: np.ndarray = field(compare=False, repr=False)
    obb_axes_shape: np.ndarray = field(compare=False, repr=False)
    obb_half_extents_m: np.ndarray = field(compare=False, repr=False)
    probe_points_shape: np.ndarray = field(compare=False, repr=False)
    is_bvh: bool = False
    is_closed_bvh: bool = False
    source_mesh: trimesh.Trimesh | None = field(default=None, compare=False, repr=False)
    # fcl geometry to use against BVH meshes when the plain one is unreliable there
    fcl_geometry_against_mesh: object = field(default=None, compare=False, repr=False)
    # coal's view of the shape, for exact signed distances (see narrowphase.py): the shape
    # itself (primitive, convex mesh, or BVH model of a triangle mesh), and a convex solid
    # containing it (the shape itself when convex, else its mesh's convex hull)
    coal_geometry: object = field(default=None, compare=False, repr=False)
    coal_hull: object = field(default=None, compare=False, repr=False)
    # the vertices of that convex solid when it is a mesh's (a convex mesh's own, a closed or open
    # mesh's hull: (V, 3), shape frame, metres; empty for primitives and meshes without a hull),
    # for the compiled distance bounds of kernels/gjk.py
    hull_vertices_shape: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)), compare=False,
                                            repr=False)
    # radius of a sphere about obb_center_shape that contains the shape, metres
    bounding_radius_m: float = 0.0
    # the shape as a solid for the deepest-point contacts (kernels/depth.py): its kind
    # (kernels.codes KIND_*, KIND_OPEN_MESH for an open mesh, which bounds no volume), sizes (box half extents;
    # radius and half length of cylinders, capsules, cones; sphere radius), face planes of
    # a convex mesh or of a closed mesh's convex hull (F, 4: outward unit normal, offset),
    # and the surface points tested inside the other body with the edges joining them
    # (see _surface_samples: the vertices of the mesh or of a primitive's tessellation,
    # then its edge midpoints and face centroids)
    solid_kind: int = KIND_OPEN_MESH
    solid_params: np.ndarray = field(default_factory=lambda: np.zeros(3), compare=False, repr=False)
    solid_planes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)), compare=False, repr=False)
    surface_points_shape: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)), compare=False, repr=False)
    surface_edges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64), compare=False,
                                      repr=False)
    # spheres (centres (N, 3) in the shape frame, radii (N,) in metres) whose union contains
    # the shape: a mesh's every triangle (its surface; not the inside of a closed mesh), a
    # primitive's whole solid. Certified motion checks bound distances with them.
    cover_centres_shape: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)), compare=False, repr=False)
    cover_radii_m: np.ndarray = field(default_factory=lambda: np.zeros(0), compare=False, repr=False)
    # per surface point, an earlier point next to it (-1: none), for the kernels' distance bounds,
    # and a face of the mesh (or tessellation) it lies on (the contact's subshape id on that body)
    surface_parents: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False,
                                        repr=False)
    surface_faces: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False,
                                      repr=False)
    # the surface points' neighbours along surface_edges, for the kernels' distance bounds: those
    # of point j are surface_adjacency[surface_adjacency_start[j]:surface_adjacency_start[j + 1]]
    surface_adjacency_start: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64),
                                                compare=False, repr=False)
    surface_adjacency: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), compare=False,
                                          repr=False)
    triangles_shape: np.ndarray | None = field(default=None, compare=False, repr=False)
    # a closed non-convex mesh's AABB tree and pseudo-normals (kernels.mesh_queries.MeshTree)
    mesh_tree: MeshTree | None = field(default=None, compare=False, repr=False)
    _tessellation: dict = field(default_factory=dict, compare=False, repr=False)

    def triangle_mesh(self) -> trimesh.Trimesh:
        """Triangle mesh of the shape in its own frame (primitives tessellated once, on first use)."""
        if self.source_mesh is not None:
            return self.source_mesh
        cached = self._tessellation.get("mesh")
        if cached is None:
            cached = self._tessellation.setdefault("mesh", primitive_mesh(self.spec))
        return cached


def _cone_mesh(spec: Cone) -> trimesh.Trimesh:
    """trimesh's cone has its base at z = 0: moved down to be centred like the fcl cone."""
    mesh = trimesh.creation.cone(radius=spec.radius_m, height=spec.length_m, sections=ROUND_SECTIONS)
    mesh.apply_translation([0.0, 0.0, -spec.length_m / 2.0])
    return mesh


class PrimitiveParts(NamedTuple):
    """How a primitive of one kind becomes geometry: each entry is a function of its spec.

    Attributes
    ----------
    sizes : spec -> (str, sizes)
        What the sizes are called in an error message, and the sizes (metres) that must be
        finite and positive.
    half_extents_m : spec -> (3,) array
        Half sizes of its bounding box, centred on its frame.
    fcl_shape, coal_shape : spec -> shape
        Its fcl and coal shapes, in the same frame convention.
    tessellation : spec -> trimesh.Trimesh
        A triangle mesh of it, centred on its frame like the fcl shape.
    solid_params : spec -> (3,) array
        The sizes the depth kernels read (``kernels.depth.SolidArrays.params``).
    bounding_radius_m : spec -> float
        Radius of the smallest sphere about its frame's origin that holds it (a sphere's
        radius, not its bounding box's half diagonal): the sweep's bounds start from it.
    """
    sizes: Callable
    half_extents_m: Callable
    fcl_shape: Callable
    coal_shape: Callable
    tessellation: Callable
    solid_params: Callable
    bounding_radius_m: Callable


# Every primitive kind (core.model.shapes: each spec's ``kind``) and its parts: the one dispatch over primitives.
PRIMITIVE_PARTS: dict[int, PrimitiveParts] = {
    KIND_BOX: PrimitiveParts(
        sizes=lambda s: ("box size", s.size_m),
        half_extents_m=lambda s: np.asarray(s.size_m, dtype=float) / 2.0,
        fcl_shape=lambda s: fcl.Box(*s.size_m),
        coal_shape=lambda s: coal.Box(*(float(v) for v in s.size_m)),
        tessellation=lambda s: trimesh.creation.box(extents=s.size_m),
        solid_params=lambda s: np.asarray(s.size_m, dtype=float) / 2.0,
        bounding_radius_m=lambda s: float(np.linalg.norm(s.size_m)) / 2.0),
    KIND_SPHERE: PrimitiveParts(
        sizes=lambda s: ("sphere radius", [s.radius_m]),
        half_extents_m=lambda s: np.full(3, s.radius_m),
        fcl_shape=lambda s: fcl.Sphere(s.radius_m),
        coal_shape=lambda s: coal.Sphere(float(s.radius_m)),
        tessellation=lambda s: trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=s.radius_m),
        solid_params=lambda s: np.array([s.radius_m, 0.0, 0.0]),
        bounding_radius_m=lambda s: float(s.radius_m)),
    KIND_CYLINDER: PrimitiveParts(
        sizes=lambda s: ("cylinder radius and length", [s.radius_m, s.length_m]),
        half_extents_m=lambda s: np.array([s.radius_m, s.radius_m, s.length_m / 2.0]),
        fcl_shape=lambda s: fcl.Cylinder(s.radius_m, s.length_m),
        coal_shape=lambda s: coal.Cylinder(float(s.radius_m), float(s.length_m)),
        tessellation=lambda s: trimesh.creation.cylinder(radius=s.radius_m, height=s.length_m,
                                                         sections=ROUND_SECTIONS),
        solid_params=lambda s: np.array([s.radius_m, s.length_m / 2.0, 0.0]),
        bounding_radius_m=lambda s: float(math.hypot(s.radius_m, s.length_m / 2.0))),
    KIND_CAPSULE: PrimitiveParts(
        sizes=lambda s: ("capsule radius and length", [s.radius_m, s.length_m]),
        half_extents_m=lambda s: np.array([s.radius_m, s.radius_m, s.length_m / 2.0 + s.radius_m]),
        fcl_shape=lambda s: fcl.Capsule(s.radius_m, s.length_m),
        coal_shape=lambda s: coal.Capsule(float(s.radius_m), float(s.length_m)),
        tessellation=lambda s: trimesh.creation.capsule(height=s.length_m, radius=s.radius_m,
                                                        count=[ROUND_SECTIONS, ROUND_SECTIONS]),
        solid_params=lambda s: np.array([s.radius_m, s.length_m / 2.0, 0.0]),
        bounding_radius_m=lambda s: float(s.radius_m + s.length_m / 2.0)),
    KIND_CONE: PrimitiveParts(
        sizes=lambda s: ("cone radius and length", [s.radius_m, s.length_m]),
        half_extents_m=lambda s: np.array([s.radius_m, s.radius_m, s.length_m / 2.0]),
        fcl_shape=lambda s: fcl.Cone(s.radius_m, s.length_m),
        coal_shape=lambda s: coal.Cone(float(s.radius_m), float(s.length_m)),
        tessellation=_cone_mesh,
        solid_params=lambda s: np.array([s.radius_m, s.length_m / 2.0, 0.0]),
        bounding_radius_m=lambda s: float(math.hypot(s.radius_m, s.length_m / 2.0))),
}


def primitive_parts(spec: ShapeSpec) -> PrimitiveParts:
    """The parts of a primitive spec's kind.

    Raises
    ------
    TypeError
        If ``spec`` is not a primitive (a mesh has no kind of its own).
    """
    if not is_primitive(spec):
        raise TypeError(f"{type(spec).__name__} is not a primitive")
    return PRIMITIVE_PARTS[spec.kind]


def primitive_mesh(spec: ShapeSpec) -> trimesh.Trimesh:
    """Tessellation of a primitive, centred on its frame like the fcl shape."""
    return primitive_parts(spec).tessellation(spec)


def _coal_convex(vertices: np.ndarray, faces: np.ndarray):
    """A coal convex solid from a closed convex triangle mesh (built in coal from its BVH
    model's arrays: no Python work per vertex or triangle).

    Raises
    ------
    RuntimeError
        Where coal refuses the mesh (e.g. "Too many neighbors" on a vertex of high valence).
    """
    model = coal.BVHModelOBBRSS()        # only a carrier of the arrays: its tree is never built
    model.beginModel(len(faces), len(vertices))
    model.addVertices(np.ascontiguousarray(vertices, dtype=float))
    model.addTriangles(np.ascontiguousarray(faces, dtype=np.int64))
    model.buildConvexRepresentation(False)
    return model.convex


def _coal_bvh(vertices: np.ndarray, faces: np.ndarray):
    """A coal BVH model (triangle soup) of a mesh."""
    model = coal.BVHModelOBBRSS()
    model.beginModel(len(faces), len(vertices))
    model.addVertices(np.ascontiguousarray(vertices, dtype=float))
    model.addTriangles(np.ascontiguousarray(faces, dtype=np.int64))
    model.endModel()
    return model


COVER_SPHERES = 16           # spheres covering a mesh's triangles (fewer for small meshes)
COVER_CELLS = 16             # boxes (each in its circumscribed sphere) covering a primitive's bounding box
_COVER_ITERATIONS = 8


def mesh_sphere_cover(vertices: np.ndarray, faces: np.ndarray, count: int = COVER_SPHERES):
    """Spheres whose union contains every triangle of a mesh: (centres (N, 3), radii (N,)).

    The triangles are clustered by centroid (k-means from farthest-point seeds); each
    cluster's sphere is centred on its vertices' box and reaches its farthest vertex, so it
    contains its triangles (a ball is convex). Checked here, vertex by vertex.
    """
    vertices = np.asarray(vertices, dtype=float)
    faces = np.asarray(faces, dtype=np.int64)
    corners = vertices[faces]                                    # (F, 3, 3)
    centroids = corners.mean(axis=1)
    k = max(1, min(int(count), len(faces)))
    # the clusters' means are found on at most _COVER_SAMPLE centroids (every one of a
    # smaller mesh); every triangle is then labelled and covered
    sample = centroids[::max(1, -(-len(centroids) // _COVER_SAMPLE))]
    seeds = [0]
    gap = np.linalg.norm(sample - sample[0], axis=1)
    for _ in range(1, k):
        seeds.append(int(np.argmax(gap)))
        gap = np.minimum(gap, np.linalg.norm(sample - sample[seeds[-1]], axis=1))
    means = sample[seeds].copy()
    for _ in range(_COVER_ITERATIONS):
        label = _nearest_mean(sample, means)
        for c in range(k):
            members = sample[label == c]
            if len(members):
                means[c] = members.mean(axis=0)
    label = _nearest_mean(centroids, means)
    centres, radii = [], []
    for c in range(k):
        points = corners[label == c].reshape(-1, 3)
        if not len(points):
            continue
        centre = (points.min(axis=0) + points.max(axis=0)) / 2.0
        radius = float(np.max(np.linalg.norm(points - centre, axis=1))) * (1.0 + 1e-9) + 1e-12
        if np.any(np.linalg.norm(points - centre, axis=1) > radius):
            raise AssertionError("a cover sphere misses a vertex of its triangles")
        centres.append(centre)
        radii.append(radius)
    centres, radii = np.array(centres), np.array(radii)
    return np.ascontiguousarray(centres), np.ascontiguousarray(radii)


_COVER_SAMPLE = 50_000       # centroids a mesh's cover clusters are fitted on (robot meshes have fewer)
_COVER_CHUNK = 65536         # centroids compared with the means at once (bounds the (chunk, k, 3) temporary)


def _nearest_mean(centroids: np.ndarray, means: np.ndarray) -> np.ndarray:
    """Index of the nearest of ``means`` (k, 3) for each of ``centroids`` (F, 3), chunk by chunk."""
    label = np.empty(len(centroids), dtype=np.int64)
    for start in range(0, len(centroids), _COVER_CHUNK):
        part = centroids[start:start + _COVER_CHUNK]
        label[start:start + len(part)] = np.argmin(((part[:, None, :] - means[None, :, :]) ** 2).sum(axis=2), axis=1)
    return label


def box_sphere_cover(half: np.ndarray, cells: int = COVER_CELLS):
    """Spheres containing a centred box of half sizes ``half`` (3,): the box cut into at most
    ``cells`` equal boxes, each in its circumscribed sphere. (centres (N, 3), radii (N,))."""
    half = np.asarray(half, dtype=float)
    lo, hi = 1e-12, 2.0 * float(np.max(half))
    for _ in range(60):                    # smallest cell size giving at most ``cells`` cells
        size = 0.5 * (lo + hi)
        if np.prod(np.ceil(2.0 * half / size)) <= cells:
            hi = size
        else:
            lo = size
    n = np.maximum(np.ceil(2.0 * half / hi - 1e-9), 1).astype(int)
    step = 2.0 * half / n
    grids = [-half[i] + step[i] * (np.arange(n[i]) + 0.5) for i in range(3)]
    centres = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, 3)
    radius = float(np.linalg.norm(step / 2.0)) * (1.0 + 1e-9) + 1e-12
    return np.ascontiguousarray(centres), np.full(len(centres), radius)


def _check_sizes(owner: str, what: str, values) -> None:
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= MIN_DIMENSION_M):
        raise ModelError(f"'{owner}': {what} {[float(v) for v in np.ravel(arr)]} must be finite and positive")
    if np.any(arr > MAX_COORDINATE_M):
        raise ModelError(f"'{owner}': {what} {[float(v) for v in np.ravel(arr)]} is beyond the bound of "
                         f"{MAX_COORDINATE_M:g} m")


def _check_vertices(owner: str, uri: str, vertices: np.ndarray) -> None:
    """Mesh vertices (V, 3), metres, after scaling: finite and within MAX_COORDINATE_M."""
    if not np.all(np.isfinite(vertices)):
        raise MeshError(owner, uri, "has non-finite vertices")
    if vertices.size and np.max(np.abs(vertices)) > MAX_COORDINATE_M:
        raise MeshError(owner, uri, f"has a vertex coordinate of {np.max(np.abs(vertices)):g} m, beyond the bound "
                                    f"of {MAX_COORDINATE_M:g} m")


def _primitive(spec: ShapeSpec, owner: str) -> ShapeGeometry:
    parts = primitive_parts(spec)
    _check_sizes(owner, *parts.sizes(spec))
    geom, half = parts.fcl_shape(spec), parts.half_extents_m(spec)
    # fcl's dedicated sphere-triangle routines give negative depths and local-frame witness
    # points here; an ellipsoid with three equal radii is the same solid through plain GJK/EPA.
    against_mesh = fcl.Ellipsoid(spec.radius_m, spec.radius_m, spec.radius_m) if spec.kind == KIND_SPHERE else None
    coal_geometry = parts.coal_shape(spec)
    kind, params = spec.kind, parts.solid_params(spec)
    tessellation = parts.tessellation(spec)
    cover_centres, cover_radii = box_sphere_cover(half)
    return ShapeGeometry(spec, geom, np.zeros(3), np.eye(3), half, np.zeros((1, 3)),
                         fcl_geometry_against_mesh=against_mesh, coal_geometry=coal_geometry,
                         coal_hull=coal_geometry, bounding_radius_m=parts.bounding_radius_m(spec),
                         solid_kind=kind, solid_params=params, _tessellation={"mesh": tessellation},
                         cover_centres_shape=cover_centres, cover_radii_m=cover_radii,
                         **_surface_samples(tessellation.vertices, tessellation.faces, tessellation.edges_unique))


def _surface_samples(vertices, faces, edges) -> dict:
    """Surface points tested inside the other body, and the edges joining them (for grouping).

    The vertices (0 .. V-1), then each edge's midpoint (joined to its two ends), then
    each face's centroid (joined to its three corners and its three edge midpoints): a
    shallow graze of two coarse meshes often has no vertex inside the other body but a
    midpoint or a centroid. Each point's parent is an earlier point next to it: a
    vertex's highest-numbered lower neighbour, an edge's first end, a face's first edge
    midpoint.
    """
    vertices = np.asarray(vertices, dtype=float)
    faces = np.asarray(faces, dtype=np.int64)
    edges = np.sort(np.asarray(edges, dtype=np.int64), axis=1)
    n_v, n_e, n_f = len(vertices), len(edges), len(faces)
    midpoints = vertices[edges].mean(axis=1)
    centroids = vertices[faces].mean(axis=1)
    mid_index = n_v + np.arange(n_e)
    centroid_index = n_v + n_e + np.arange(n_f)
    edge_key = edges[:, 0] * n_v + edges[:, 1]
    rank = np.argsort(edge_key)
    links = [np.column_stack([edges[:, 0], mid_index]), np.column_stack([edges[:, 1], mid_index])]
    parents = np.full(n_v + n_e + n_f, -1, dtype=np.int64)
    np.maximum.at(parents, edges[:, 1], edges[:, 0])         # edges are sorted: edges[:, 0] < edges[:, 1]
    parents[mid_index] = edges[:, 0]
    on_face = np.full(n_v + n_e + n_f, -1, dtype=np.int64)
    on_face[centroid_index] = np.arange(n_f)
    for k in range(3):
        on_face[faces[:, k]] = np.arange(n_f)
        links.append(np.column_stack([faces[:, k], centroid_index]))
        u, v = faces[:, k], faces[:, (k + 1) % 3]
        key = np.minimum(u, v) * n_v + np.maximum(u, v)
        at = np.searchsorted(edge_key[rank], key).clip(0, max(n_e - 1, 0))
        found = edge_key[rank][at] == key
        links.append(np.column_stack([n_v + rank[at][found], centroid_index[found]]))
        on_face[n_v + rank[at][found]] = np.flatnonzero(found)
        if k == 0:
            parents[centroid_index[found]] = n_v + rank[at][found]
    surface_edges = np.ascontiguousarray(np.vstack(links), dtype=np.int64)
    adjacency_start, adjacent = adjacency(n_v + n_e + n_f, surface_edges)
    return {"surface_points_shape": np.ascontiguousarray(np.vstack([vertices, midpoints, centroids])),
            "surface_edges": surface_edges, "surface_parents": parents, "surface_faces": on_face,
            "surface_adjacency_start": adjacency_start, "surface_adjacency": adjacent}


def _face_planes(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(F, 4) outward unit normal and offset of each face of a closed convex mesh."""
    corners = vertices[faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    keep = lengths > 1e-15
    normals = normals[keep] / lengths[keep, None]
    offsets = np.einsum("ij,ij->i", normals, corners[keep, 0])
    if np.mean(offsets - normals @ vertices.mean(axis=0)) < 0.0:     # inward winding: turn out
        normals, offsets = -normals, -offsets
    return np.ascontiguousarray(np.hstack([normals, offsets[:, None]]))


def _convex_hull(mesh: trimesh.Trimesh) -> trimesh.Trimesh | None:
    """The mesh's convex hull, or None where qhull refuses it (a flat mesh)."""
    try:
        return mesh.convex_hull
    except Exception:  # qhull raises its own error types for flat and degenerate point sets
        return None


OBB_EXACT_MAX_HULL_FACES = 4096     # beyond: a principal-axes box (trimesh's minimal box is quadratic in the hull)


LEAN_MESH_TRIANGLES = 100_000      # a mesh above this is kept without the tables trimesh cached while it was built


def _lean(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """The mesh to keep as a shape's ``source_mesh``: a big one as a new mesh of the same
    vertices and faces, without trimesh's cached tables (adjacency, edges, hull: hundreds of
    megabytes per million triangles, recomputed if ever asked for)."""
    if len(mesh.faces) <= LEAN_MESH_TRIANGLES:
        return mesh
    return trimesh.Trimesh(np.asarray(mesh.vertices), np.asarray(mesh.faces), process=False)


def _oriented_box(mesh: trimesh.Trimesh, vertices: np.ndarray, hull_faces: int, hull_points: np.ndarray):
    """(centre (3,), axes (3, 3) as columns, half sizes (3,)) of a box containing the mesh, shape frame.

    The smaller of the axis-aligned box and an oriented one: trimesh's minimal-volume box
    when the convex hull has at most ``OBB_EXACT_MAX_HULL_FACES`` faces (every robot
    mesh here has far fewer), else the box along the principal axes of the hull's points
    (linear time; a 300k-triangle hull took trimesh over a minute).
    """
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    center, half = (lo + hi) / 2.0, np.maximum((hi - lo) / 2.0, 1e-9)
    axes = np.eye(3)
    try:
        if hull_faces <= OBB_EXACT_MAX_HULL_FACES:
            T_obb = mesh.bounding_box_oriented.primitive.transform
            extents = mesh.bounding_box_oriented.primitive.extents
            c_obb, R_obb = T_obb[:3, 3].copy(), T_obb[:3, :3].copy()
        else:
            mean = hull_points.mean(axis=0)
            _, R_obb = np.linalg.eigh(np.cov((hull_points - mean).T))
            if np.linalg.det(R_obb) < 0:
                R_obb[:, 2] = -R_obb[:, 2]
            local = (hull_points - mean) @ R_obb
            p_lo, p_hi = local.min(axis=0), local.max(axis=0)
            c_obb, extents = mean + R_obb @ ((p_lo + p_hi) / 2.0), p_hi - p_lo
        if np.prod(extents) < np.prod(2.0 * half):
            center, axes, half = c_obb, R_obb, np.maximum(extents / 2.0, 1e-9)
    except Exception:  # degenerate (flat) meshes: keep the axis-aligned box
        pass
    return center, axes, half


def _mesh_geometry(spec: ShapeSpec, mesh: trimesh.Trimesh, owner: str, uri: str) -> ShapeGeometry:
    vertices = np.array(mesh.vertices, dtype=float)      # plain arrays: trimesh's tracked ones are slow
    faces = np.array(mesh.faces, dtype=np.int64)
    _check_vertices(owner, uri, vertices)
    closed = bool(mesh.is_watertight)
    convex = closed and bool(mesh.is_convex)
    coal_convex = None
    if convex:
        try:
            coal_convex = _coal_convex(vertices, faces)
        except RuntimeError:     # coal refuses it (e.g. "Too many neighbors"): checked as a closed mesh
            convex = False
    if convex:
        hull_faces = np.hstack([np.full((len(faces), 1), 3, dtype=np.int64), faces]).ravel()
        geom = fcl.Convex(vertices, len(faces), hull_faces)
    else:
        geom = fcl.BVHModel()
        geom.beginModel(len(vertices), len(faces))
        geom.addSubModel(vertices, faces)
        geom.endModel()
    hull = None if convex else _convex_hull(mesh)
    center, axes, half = _oriented_box(mesh, vertices, len(faces) if convex else (len(hull.faces) if hull else 0),
                                       vertices if convex else (np.asarray(hull.vertices) if hull else vertices))
    labels = trimesh.graph.connected_component_labels(mesh.face_adjacency, node_count=len(faces))
    _, first_face = np.unique(labels, return_index=True)
    probes = np.ascontiguousarray(vertices[faces[first_face, 0]])
    triangles = np.ascontiguousarray(vertices[faces]) if closed and not convex else None
    tree = MeshTree.of(vertices, faces, labels) if triangles is not None else None
    if convex:
        coal_geometry = coal_hull = coal_convex
        hull_vertices = vertices
    else:
        coal_geometry = _coal_bvh(vertices, faces)
        coal_hull, hull_vertices = None, np.zeros((0, 3))   # no hull (a flat mesh): no hull bound for it
        if hull is not None:
            try:
                coal_hull = _coal_convex(np.asarray(hull.vertices), np.asarray(hull.faces))
                hull_vertices = np.asarray(hull.vertices, dtype=float)
            except Exception:  # coal refuses some hulls (e.g. "Too many neighbors" on a vertex)
                coal_hull = None
    radius = float(np.max(np.linalg.norm(vertices - center, axis=1)))
    kind = KIND_CONVEX if convex else (KIND_MESH if closed else KIND_OPEN_MESH)
    cover_centres, cover_radii = mesh_sphere_cover(vertices, faces)
    planes = np.zeros((0, 4))
    if convex:
        planes = _face_planes(vertices, faces)
    elif closed and hull is not None:   # the hull's planes: a quick "outside" before the winding number
        try:
            planes = _face_planes(np.asarray(hull.vertices, dtype=float), np.asarray(hull.faces, dtype=np.int64))
        except Exception:  # a degenerate hull: no quick test
            planes = np.zeros((0, 4))
    return ShapeGeometry(spec, geom, np.ascontiguousarray(center), np.ascontiguousarray(axes),
                         np.ascontiguousarray(half), probes, is_bvh=not convex, is_closed_bvh=closed and not convex,
                         source_mesh=_lean(mesh), triangles_shape=triangles, coal_geometry=coal_geometry,
                         coal_hull=coal_hull, hull_vertices_shape=np.ascontiguousarray(hull_vertices, dtype=float),
                         bounding_radius_m=radius, solid_kind=kind, solid_planes=planes,
                         mesh_tree=tree, cover_centres_shape=cover_centres, cover_radii_m=cover_radii,
                         **_surface_samples(vertices, faces, mesh.edges_unique))


def octree_geometry(spec: OcTree) -> ShapeGeometry:
    """The occupancy octree as one shape: coal's tree for the predicate, no fcl geometry.

    Only the predicate's pair test meets this shape (through coal,
    :func:`~my_collision_pkg.core.checks.narrowphase.octree_pair_collides`); every other
    check replaces it by its cells as boxes (:mod:`~my_collision_pkg.core.checks.octomap_cells`).
    The bounding box is the cells' axis-aligned bounds; the probe points (for the solid-body
    test against closed robot meshes) are the cell centres, sorted by x then y
    (:func:`~my_collision_pkg.core.kernels.mesh_queries.contains_any_point` reads a slab).
    """
    cells = spec.occupancy.cell_boxes()
    centres, half = cells.centres_m, cells.size_m[:, None] / 2.0
    lo, hi = (centres - half).min(axis=0), (centres + half).max(axis=0)
    centre, half_extents = (lo + hi) / 2.0, (hi - lo) / 2.0
    by_x = np.ascontiguousarray(centres[np.lexsort((centres[:, 2], centres[:, 1], centres[:, 0]))])
    return ShapeGeometry(spec, None, centre, np.eye(3), half_extents, by_x,
                         coal_geometry=spec.occupancy.coal_geometry, coal_hull=None,
                         bounding_radius_m=float(np.linalg.norm(half_extents)))


def build_shape(spec: ShapeSpec, owner: str, resolver: MeshResolver) -> ShapeGeometry:
    """fcl geometry and bounding volumes for one shape.

    Raises
    ------
    MeshError
        If a mesh cannot be found or read (names ``owner`` and the URI).
    ModelError
        If a primitive has a non-positive or non-finite size.
    """
    if isinstance(spec, OcTree):
        return octree_geometry(spec)
    if isinstance(spec, MeshRef):
        _check_sizes(owner, "mesh scale", [abs(s) for s in spec.scale])
        path = resolver.resolve(spec.uri, owner)
        return _mesh_geometry(spec, load_mesh_file(path, spec.scale, owner, spec.uri), owner, spec.uri)
    if isinstance(spec, TriangleMesh):
        vertices = np.asarray(spec.vertices_m, dtype=float)
        triangles = np.asarray(spec.triangles, dtype=np.int64)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or triangles.ndim != 2 or triangles.shape[1] != 3 \
                or len(triangles) == 0:
            raise MeshError(owner, "<inline mesh>", "needs vertices (V, 3) and at least one triangle (T, 3)")
        if len(triangles) > MAX_MESH_TRIANGLES:
            raise MeshError(owner, "<inline mesh>", f"has {len(triangles)} triangles, more than the bound of "
                                                    f"{MAX_MESH_TRIANGLES} (MAX_MESH_TRIANGLES); simplify it")
        if triangles.min() < 0 or triangles.max() >= len(vertices):
            raise MeshError(owner, "<inline mesh>", "a triangle indexes a vertex that does not exist")
        _check_vertices(owner, "<inline mesh>", vertices)   # before trimesh sees them
        mesh = trimesh.Trimesh(vertices, triangles, process=True)
        return _mesh_geometry(spec, mesh, owner, "<inline mesh>")
    return _primitive(spec, owner)
