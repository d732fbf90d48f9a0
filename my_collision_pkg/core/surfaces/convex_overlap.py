"""The overlap of two closed meshes as a convex polytope, when it is one: the contact surfaces' fast path.

:func:`prepare_solid` checks that a triangle mesh bounds a volume (closed and consistently
oriented, after merging coincident vertices) and records what the fast path needs: whether
the mesh is convex, the planes and edges of its convex hull (the mesh itself when convex), and
the mesh triangles that are not on the hull. :meth:`PreparedSolid.transformed` moves it rigidly.

:func:`hull_overlap_points` gives candidate vertices of the overlap of two prepared solids'
hulls: a vertex of the intersection of two convex polytopes is a vertex of one inside the
other, or where an edge of one crosses a face of the other, so every edge of each hull is clipped
to the other hull, and the hull vertices inside and the crossings are the candidates; their convex
hull (:func:`convex_polytope`, qhull) is the overlap of the hulls. That is the overlap of the
solids when both are convex, or when neither hull reaches the other mesh's pocket triangles
(:func:`pockets_reached`: a convex solid meets a pocket of a mesh only through its triangles, as
the mesh's own body lies between the pocket and anything the convex solid meets of the mesh).

Everything is plain numpy and scipy; metres, in whatever frame the vertices are given.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.kernels.footprint import polytope_volume_centroid
from my_collision_pkg.core.kernels.overlap import clip_edges_to_planes

__all__ = [
    "ConvexPolytope",
    "MeshVolumeError",
    "PreparedSolid",
    "contains_point",
    "hull_overlap_points",
    "pockets_reached",
    "convex_polytope",
    "prepare_solid",
]

#: A face plane may have mesh vertices this fraction of the mesh's size above it and the mesh
#: still count as convex (rounding of the vertex coordinates), and a hull plane may have a mesh
#: triangle's corners that far above it and the triangle still count as on the hull.
CONVEX_RELATIVE_TOLERANCE = 1e-9

#: An edge of one solid whose part inside the other is shorter than minus this fraction of its
#: length (rounding of a touch at a point) still gives that point.
EDGE_TOUCH_TOLERANCE = 1e-9

#: A mesh whose enclosed volume is below this fraction of its bounding box's encloses none.
MIN_RELATIVE_VOLUME = 1e-12


class MeshVolumeError(CollisionPkgError, ValueError):
    """A mesh does not bound a volume (open, inconsistently oriented, flat, or not finite)."""


@dataclass(frozen=True)
class PreparedSolid:
    """A closed triangle mesh and its convex hull, in one frame (metres).

    Attributes
    ----------
    vertices : (V, 3) mesh vertices.
    faces : (F, 3) int64, outward (counter-clockwise seen from outside).
    convex : bool, the mesh is its own convex hull.
    hull_planes : (H, 4) outward unit normal and offset of each hull face: inside is
        ``normal . x <= offset``.
    hull_points : (W, 3) the hull's vertices.
    hull_edges : (E, 2) int64 index pairs into ``hull_points``.
    pocket_triangles : (K, 3, 3) corners of the mesh triangles that are not on the hull (empty
        when convex).
    size_m : float, the diagonal of the mesh's bounding box.
    hull_faces : (S, 3) int64 outward triangles of the hull, indices into ``hull_points``.
    T_world_frame : (4, 4) the pose of the frame the solid was prepared in (identity there).
    frame_cache : dict, shared by the solid and its moved copies: manifold3d solids of the mesh,
        its hull and its pockets (hull minus mesh) in the frame it was prepared in, built on use.
    """

    vertices: np.ndarray
    faces: np.ndarray
    convex: bool
    hull_planes: np.ndarray
    hull_points: np.ndarray
    hull_edges: np.ndarray
    pocket_triangles: np.ndarray
    size_m: float
    hull_faces: np.ndarray = field(repr=False, default=None)
    T_world_frame: np.ndarray = field(repr=False, default_factory=lambda: np.eye(4))
    frame_cache: dict = field(repr=False, compare=False, default_factory=dict)

    def transformed(self, T_world_frame: np.ndarray) -> PreparedSolid:
        """The same solid moved by the rigid transform ``T_world_frame`` (4, 4)."""
        rotation, translation = T_world_frame[:3, :3], T_world_frame[:3, 3]
        normals = self.hull_planes[:, :3] @ rotation.T
        planes = np.column_stack([normals, self.hull_planes[:, 3] + normals @ translation])
        hull_points = self.hull_points @ rotation.T + translation
        return PreparedSolid(
            vertices=hull_points if self.hull_points is self.vertices else self.vertices @ rotation.T + translation,
            faces=self.faces,
            convex=self.convex,
            hull_planes=planes,
            hull_points=hull_points,
            hull_edges=self.hull_edges,
            pocket_triangles=(self.pocket_triangles @ rotation.T + translation) if len(self.pocket_triangles)
            else self.pocket_triangles,
            size_m=self.size_m,
            hull_faces=self.hull_faces,
            T_world_frame=T_world_frame @ self.T_world_frame,
            frame_cache=self.frame_cache,
        )

    @property
    def lower(self) -> np.ndarray:
        return self.hull_points.min(axis=0)

    @property
    def upper(self) -> np.ndarray:
        return self.hull_points.max(axis=0)


def prepare_solid(vertices: np.ndarray, faces: np.ndarray, argument_name: str) -> PreparedSolid:
    """Check that a mesh bounds a volume and prepare it for :func:`hull_overlap_points`.

    Coincident vertices are merged when the mesh is not closed as given (an STL-like triangle
    soup); an inside-out mesh is turned outward.

    Raises
    ------
    MeshVolumeError
        Naming ``argument_name``: the mesh is empty, not finite, has face indices outside its
        vertex list, is not a closed, consistently oriented 2-manifold even after merging
        coincident vertices, or encloses no volume.
    """
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(vertices) == 0 or len(faces) == 0:
        raise MeshVolumeError(f"{argument_name} is empty (no vertices or no faces)")
    if not np.all(np.isfinite(vertices)):
        raise MeshVolumeError(f"{argument_name} has non-finite vertex coordinates")
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise MeshVolumeError(f"{argument_name} has face indices outside its vertex list")
    twins = _edge_twins(faces, len(vertices))
    if twins is None:
        unique_vertices, merged = np.unique(vertices, axis=0, return_inverse=True)
        faces = merged.reshape(-1)[faces]
        faces = faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 2] != faces[:, 0])]
        vertices = unique_vertices
        twins = _edge_twins(faces, len(vertices)) if len(faces) else None
    if twins is None:
        raise MeshVolumeError(
            f"{argument_name} does not bound a volume: it is not a closed, consistently oriented "
            f"2-manifold even after merging coincident vertices"
        )
    size_m = float(np.linalg.norm(np.ptp(vertices, axis=0)))
    corners = vertices[faces]
    centre = vertices.mean(axis=0)
    volume_m3 = float(np.linalg.det(corners - centre).sum()) / 6.0
    if not abs(volume_m3) > MIN_RELATIVE_VOLUME * max(size_m, np.finfo(float).tiny) ** 3:
        raise MeshVolumeError(f"{argument_name} encloses no volume (it is flat or degenerate)")
    if volume_m3 < 0.0:
        faces = np.ascontiguousarray(faces[:, ::-1])
        corners = vertices[faces]
        twins = _edge_twins(faces, len(vertices))

    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    normals = np.divide(normals, lengths[:, None], out=np.zeros_like(normals), where=lengths[:, None] > 0.0)
    tolerance_m = CONVEX_RELATIVE_TOLERANCE * size_m
    used = np.unique(faces)
    edge_count = 3 * len(faces) // 2
    # Locally convex at every edge (the far corner of the neighbour is not above a face's plane)
    # and a sphere's topology (Euler characteristic 2): the Gauss map is then a one-sheeted
    # cover of the sphere, so the surface bounds a convex body.
    opposite = faces[:, [2, 0, 1]].reshape(-1)  # the corner opposite each directed edge
    face_of_edge = np.repeat(np.arange(len(faces)), 3)
    tails = faces.reshape(-1)
    rise = np.einsum("ij,ij->i", normals[face_of_edge], vertices[opposite[twins]] - vertices[tails])
    convex = bool(rise.max() <= tolerance_m) and len(used) - edge_count + len(faces) == 2
    if convex:
        keep = lengths > 0.0
        planes = np.column_stack([normals[keep], np.einsum("ij,ij->i", normals[keep], corners[keep, 0])])
        directed = np.column_stack([tails, faces[:, [1, 2, 0]].reshape(-1)])
        edges = directed[directed[:, 0] < directed[:, 1]]
        return PreparedSolid(vertices, faces, True, planes, vertices, edges, np.zeros((0, 3, 3)), size_m,
                             hull_faces=faces, frame_cache={"vertices": vertices, "faces": faces})

    try:
        hull = ConvexHull(vertices)
    except QhullError as error:
        raise MeshVolumeError(f"{argument_name} encloses no volume (qhull: {error})") from error
    planes = np.column_stack([hull.equations[:, :3], -hull.equations[:, 3]])
    simplex_edges = np.concatenate([hull.simplices[:, [0, 1]], hull.simplices[:, [1, 2]], hull.simplices[:, [2, 0]]])
    edges = np.unique(np.sort(simplex_edges, axis=1), axis=0).astype(np.int64)
    hull_points = vertices
    # A mesh triangle is on the hull when no hull vertex is above its plane.
    rises = (vertices[hull.vertices] @ normals.T) - np.einsum("ij,ij->i", normals, corners[:, 0])[None, :]
    on_hull = rises.max(axis=0) <= tolerance_m
    # qhull's triangles are not consistently wound: turn each to face along its outward normal.
    simplices = hull.simplices.astype(np.int64)
    hull_corners = vertices[simplices]
    facing = np.einsum("ij,ij->i", np.cross(hull_corners[:, 1] - hull_corners[:, 0],
                                            hull_corners[:, 2] - hull_corners[:, 0]), hull.equations[:, :3])
    hull_faces = np.where((facing < 0.0)[:, None], simplices[:, [0, 2, 1]], simplices)
    return PreparedSolid(vertices, faces, False, planes, hull_points, edges, corners[~on_hull], size_m,
                         hull_faces=hull_faces, frame_cache={"vertices": vertices, "faces": faces})


def _edge_twins(faces: np.ndarray, vertex_count: int) -> np.ndarray | None:
    """For each directed edge (3F of them, face by face), the index of its reverse; None if the
    mesh is not a closed, consistently oriented 2-manifold (an edge without exactly one twin)."""
    tails = faces.reshape(-1)
    heads = faces[:, [1, 2, 0]].reshape(-1)
    keys = tails * vertex_count + heads
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if len(sorted_keys) > 1 and np.any(sorted_keys[1:] == sorted_keys[:-1]):
        return None
    reverse = heads * vertex_count + tails
    position = np.minimum(np.searchsorted(sorted_keys, reverse), len(sorted_keys) - 1)
    if not np.array_equal(sorted_keys[position], reverse):
        return None
    return order[position]


def pockets_reached(solid: PreparedSolid, other: PreparedSolid) -> bool:
    """Whether the other solid's hull may reach a pocket of this one (a mesh triangle off its
    hull): False for a convex solid, and whenever every pocket triangle lies wholly outside one
    of the other hull's planes."""
    return not solid.convex and not _pockets_clear_of(solid.pocket_triangles, other.hull_planes)


def hull_overlap_points(solid_0: PreparedSolid, solid_1: PreparedSolid) -> np.ndarray:
    """Candidate vertices (N, 3) of the overlap of the two solids' hulls (empty if none): the
    hull of these points is that overlap."""
    lower = np.maximum(solid_0.lower, solid_1.lower)
    upper = np.minimum(solid_0.upper, solid_1.upper)
    if np.any(lower > upper):
        return np.zeros((0, 3))
    return np.concatenate([
        _clip_edges(solid_0, solid_1.hull_planes, lower, upper),
        _clip_edges(solid_1, solid_0.hull_planes, lower, upper),
    ])


def _pockets_clear_of(triangles: np.ndarray, planes: np.ndarray) -> bool:
    """Whether every triangle (K, 3, 3) is wholly outside some plane of a convex solid."""
    if len(triangles) == 0:
        return True
    heights = np.einsum("kcd,hd->khc", triangles, planes[:, :3]) - planes[None, :, 3, None]
    return bool(np.all(np.any(np.all(heights > 0.0, axis=2), axis=1)))


def _clip_edges(solid: PreparedSolid, planes: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The solid's hull vertices inside the convex set ``planes`` and the points where its hull
    edges cross the set's boundary (each once), compiled (``kernels.overlap``).

    Only vertices and edges whose bounding box meets the box ``lower``-``upper`` (the overlap of
    the two solids' boxes) can be inside.
    """
    return clip_edges_to_planes(_kernel_array(solid.hull_points, np.float64), _kernel_array(solid.hull_edges, np.int64),
                                _kernel_array(planes, np.float64), _kernel_array(lower, np.float64),
                                _kernel_array(upper, np.float64), EDGE_TOUCH_TOLERANCE)


def _kernel_array(array: np.ndarray, dtype) -> np.ndarray:
    """A C-ordered, writable ndarray of ``dtype`` (the one signature the kernel is compiled for); no copy when
    it is one already."""
    if type(array) is np.ndarray and array.dtype == dtype and array.flags.c_contiguous and array.flags.writeable:
        return array
    return np.require(array, dtype=dtype, requirements=["C", "W"])


@dataclass(frozen=True)
class ConvexPolytope:
    """The convex hull of points in a frame whose z axis is the projection direction (metres).

    Attributes
    ----------
    points : (N, 3) the points, of which the hull's vertices are a subset.
    simplices : (S, 3) int64 hull triangles (qhull's, not consistently wound).
    equations : (S, 4) outward unit normal and offset: inside is ``normal . x + offset <= 0``.
    volume_m3 : float.
    centroid : (3,) the volume centroid.
    """

    points: np.ndarray
    simplices: np.ndarray
    equations: np.ndarray
    volume_m3: float
    centroid: np.ndarray


def _hull(points: np.ndarray):
    """qhull's convex hull of the points, or None when there are fewer than 4 or they span no volume."""
    if len(points) < 4:
        return None
    try:
        return ConvexHull(points)
    except QhullError:
        return None


def convex_polytope(points: np.ndarray) -> ConvexPolytope | None:
    """The convex hull of the points, or None when they span no volume (qhull's faces; the volume and
    centroid compiled, ``kernels.footprint.polytope_volume_centroid``)."""
    hull = _hull(points)
    if hull is None:
        return None
    points = np.require(points, np.float64, ["C", "W"])
    simplices = hull.simplices.astype(np.int64)
    centroid = np.zeros(3)
    total = polytope_volume_centroid(points, simplices, hull.vertices.astype(np.int64), centroid)
    if not total > 0.0:
        return None
    return ConvexPolytope(points, simplices, hull.equations, float(total), centroid)


def convex_polytope_reference(points: np.ndarray) -> ConvexPolytope | None:
    """:func:`convex_polytope` with the volume and centroid in numpy (the compiled one's reference)."""
    hull = _hull(points)
    if hull is None:
        return None
    simplices = hull.simplices
    apex = points[hull.vertices].mean(axis=0)
    a, b, c = points[simplices[:, 0]] - apex, points[simplices[:, 1]] - apex, points[simplices[:, 2]] - apex
    # |a . (b x c)| / 6: the tetrahedron on each hull triangle and a point inside
    volumes = np.abs(a[:, 0] * (b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1]) + a[:, 1] * (b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2])
                     + a[:, 2] * (b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0])) / 6.0
    total = float(volumes.sum())
    if not total > 0.0:
        return None
    centroid = apex + (volumes @ (a + b + c)) / (4.0 * total)
    return ConvexPolytope(points, simplices.astype(np.int64), hull.equations, total, centroid)


def contains_point(solid: PreparedSolid, point: np.ndarray) -> bool:
    """Whether a point (3,) is inside the closed mesh: its generalised winding number is above 1/2.

    The winding number is the sum of the solid angles of the mesh's triangles seen from the point
    over 4 pi (van Oosterom and Strackee's formula): 1 inside, 0 outside, robust near the surface.
    """
    corners = solid.vertices[solid.faces] - np.asarray(point, dtype=np.float64)
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    la, lb, lc = (np.linalg.norm(v, axis=1) for v in (a, b, c))
    numerator = np.einsum("ij,ij->i", a, np.cross(b, c))
    denominator = (la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la
                   + np.einsum("ij,ij->i", c, a) * lb)
    winding = float(np.arctan2(numerator, denominator).sum()) / (2.0 * np.pi)
    return winding > 0.5
