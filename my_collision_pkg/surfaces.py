"""Contact surfaces: the cross-section of two overlapping bodies, with a pressure field.

A contact surface explains *how much* two bodies overlap, in the manner of Drake's hydroelastic
contact surfaces (``lcmt_hydroelastic_contact_surface_for_viz``), but for ordinary rigid meshes:

1. The intersection volume of the two bodies is computed with manifold3d (a robust boolean).
2. It is cut by the contact plane, which passes through a given point (the caller passes the
   midpoint of the two witness points) perpendicular to the contact normal. The cut is a set of
   polygons (possibly with holes), triangulated by manifold3d.
3. The pressure at every vertex of that triangulation is the thickness of the intersection volume
   along the normal line through the vertex (the total length of the line inside the volume,
   found by manifold3d's watertight ray cast), times a stiffness in Pa/m.
4. The triangulation is refined where linear interpolation of the pressure is poor, so that the
   integrals below (of the piecewise-linear pressure over the triangles) converge.
5. Force, pressure-weighted centroid and moment follow from exact integrals of the linearly
   interpolated pressure over each triangle.

Everything here is plain numpy/trimesh/manifold3d: no rclpy, no message types.

Conventions
-----------
``normal_world`` points from body 0 towards body 1 (the direction in which body 1 must move to
separate). The force is the one applied to body 0, so it points along ``-normal_world``. All
lengths are metres, pressures pascals, forces newtons, moments newton-metres, everything in the
world frame of the input meshes.
"""

from __future__ import annotations

from dataclasses import dataclass

import manifold3d
import numpy as np
import trimesh

from my_collision_pkg.errors import CollisionPkgError

__all__ = [
    "ContactSurfaceError",
    "SurfacePatch",
    "compute_contact_surface",
]

#: How far ``normal_world`` may be from unit length before it is rejected as a caller bug.
NORMAL_UNIT_TOLERANCE = 1e-6

#: An edge is split when linear interpolation along it misses the thickness at its midpoint by
#: more than this fraction of the largest thickness sampled on the patch.
REFINE_RELATIVE_TOLERANCE = 1e-3

#: Edges longer than this fraction of the patch's bounding-box diagonal are always split, so no
#: triangle is so large that a bump of the thickness field can hide inside it unsampled.
MAX_EDGE_FRACTION = 1.0 / 8.0

#: Edges shorter than this fraction of the patch's bounding-box diagonal are never split: this
#: bounds the refinement where the thickness field has a kink or a jump.
MIN_EDGE_FRACTION = 1.0 / 256.0

#: At most this many refinement passes (each pass splits every marked edge once).
MAX_REFINE_PASSES = 10

#: Refinement stops before a pass that would make the patch exceed this many vertices.
MAX_PATCH_VERTICES = 4000

#: Boundary vertices are sampled this fraction of the patch scale inside the patch, so that the
#: thickness there is the limit from inside (a ray grazing a wall parallel to the normal is
#: otherwise ambiguous). It is well above the float32 rounding of manifold3d's cross-sections
#: (relative 6e-8) and far below any feature that matters.
BOUNDARY_NUDGE_FRACTION = 1e-6

#: The rays that measure the thickness start and end this fraction of the intersection's
#: extent along the normal beyond its bounding box.
RAY_MARGIN_FRACTION = 0.1

#: Edge (i, j), i < j, is keyed i * _EDGE_KEY_BASE + j (vertex counts stay far below it).
_EDGE_KEY_BASE = np.int64(1) << np.int64(31)


class ContactSurfaceError(CollisionPkgError, ValueError):
    """An input to :func:`compute_contact_surface` is invalid.

    The message names the argument at fault (``mesh_0_world``, ``mesh_1_world``,
    ``plane_point_world``, ``normal_world`` or ``stiffness_pa_per_m``). It is a ``ValueError`` so
    that callers that only know the standard library can still catch it.
    """


@dataclass(frozen=True)
class SurfacePatch:
    """A triangulated contact surface with a per-vertex pressure field, in the world frame.

    Attributes
    ----------
    vertices_world : np.ndarray
        (V, 3) float, metres, world frame. Every vertex lies on the contact plane.
    triangles : np.ndarray
        (T, 3) int64 indices into ``vertices_world``, wound counter-clockwise seen from the tip of
        the contact normal (so ``cross(b - a, c - a)`` points along ``normal_world``).
    pressure_pa : np.ndarray
        (V,) float, pascals, non-negative: stiffness times the thickness of the intersection
        volume along the normal line through the vertex (the limit from inside the patch for
        vertices on its boundary). Interpolated linearly inside each triangle.
    outlines : tuple of np.ndarray
        One int64 array of vertex indices per boundary loop (outer boundaries counter-clockwise,
        holes clockwise, seen from the tip of the normal). Each loop is closed explicitly: its last
        index repeats its first, so it can be drawn directly as a LINE_STRIP. Vertices inserted on
        boundary edges by refinement are collinear with the loop and are not listed.
    area_m2 : float
        Total area of the triangles, square metres.
    centroid_world : np.ndarray
        (3,) float, metres: the pressure-weighted centroid (the area centroid if the pressure
        vanishes everywhere).
    force_world_n : np.ndarray
        (3,) float, newtons: the net force applied to body 0, ``-normal * integral of pressure``.
    moment_world_nm : np.ndarray
        (3,) float, newton-metres: the net moment applied to body 0 about ``centroid_world``. For a
        planar patch with a purely normal pressure it vanishes up to rounding, because the
        centroid is pressure-weighted; it is reported for parity with Drake's message.
    """

    vertices_world: np.ndarray
    triangles: np.ndarray
    pressure_pa: np.ndarray
    outlines: tuple[np.ndarray, ...]
    area_m2: float
    centroid_world: np.ndarray
    force_world_n: np.ndarray
    moment_world_nm: np.ndarray


def compute_contact_surface(
    mesh_0_world: trimesh.Trimesh,
    mesh_1_world: trimesh.Trimesh,
    plane_point_world: np.ndarray,
    normal_world: np.ndarray,
    stiffness_pa_per_m: float,
) -> SurfacePatch | None:
    """Compute the contact surface of two overlapping closed meshes.

    Parameters
    ----------
    mesh_0_world, mesh_1_world : trimesh.Trimesh
        The two bodies, vertices in metres in the world frame. Each must bound a volume: closed
        and consistently oriented (after merging coincident vertices). An inside-out mesh
        (negative volume) is accepted and flipped.
    plane_point_world : np.ndarray
        (3,) float, metres, world frame: a point of the contact plane (the midpoint of the two
        witness points).
    normal_world : np.ndarray
        (3,) float, unit, world frame: the contact normal, from body 0 towards body 1. The contact
        plane is perpendicular to it.
    stiffness_pa_per_m : float
        Pressure per metre of thickness, Pa/m, positive.

    Returns
    -------
    SurfacePatch or None
        The surface, or None when the bodies do not overlap or the plane misses their
        intersection volume.

    Raises
    ------
    ContactSurfaceError
        (a ``ValueError``) if the normal is not a finite unit 3-vector, the plane point is not a
        finite 3-vector, the stiffness is not finite and positive, or a mesh is empty, not finite,
        or does not bound a volume even after merging coincident vertices. The message names the
        argument.
    """
    normal_unit_world = _validated_normal(normal_world)
    origin_world = _validated_point(plane_point_world)
    stiffness = _validated_stiffness(stiffness_pa_per_m)

    # The plane frame P: origin on the plane, z along the normal, so the plane is z = 0 and the
    # normal lines are vertical. Its columns are the plane's axes expressed in the world frame.
    rotation_world_plane = _plane_axes_world(normal_unit_world)
    solid_0 = _solid_in_plane_frame(mesh_0_world, "mesh_0_world", origin_world, rotation_world_plane)
    solid_1 = _solid_in_plane_frame(mesh_1_world, "mesh_1_world", origin_world, rotation_world_plane)

    overlap = manifold3d.Manifold.batch_boolean([solid_0, solid_1], manifold3d.OpType.Intersect)
    if overlap.is_empty() or overlap.volume() <= 0.0:
        return None

    polygons_plane = [
        np.asarray(loop, dtype=np.float64) for loop in overlap.slice(0.0).to_polygons() if len(loop) >= 3
    ]
    if not polygons_plane:
        return None
    points_plane = np.concatenate(polygons_plane)
    triangles = np.asarray(manifold3d.triangulate(polygons_plane), dtype=np.int64).reshape(-1, 3)
    if len(triangles) == 0 or _triangle_areas(points_plane, triangles).sum() <= 0.0:
        return None

    loop_starts = np.cumsum([0] + [len(loop) for loop in polygons_plane])
    outlines = tuple(
        np.append(np.arange(start, stop, dtype=np.int64), np.int64(start))
        for start, stop in zip(loop_starts[:-1], loop_starts[1:])
    )

    patch_scale_m = float(
        max(np.linalg.norm(np.ptp(points_plane, axis=0)), np.abs(points_plane).max())
    )
    sampler = _ThicknessSampler(overlap, nudge_m=BOUNDARY_NUDGE_FRACTION * patch_scale_m)
    inward = _loop_inward_directions(polygons_plane)
    thickness_m = sampler.sample(points_plane, inward)

    points_plane, triangles, thickness_m = _refine(
        points_plane, triangles, thickness_m, sampler, patch_scale_m
    )
    return _assemble_patch(
        points_plane,
        triangles,
        np.maximum(thickness_m, 0.0) * stiffness,
        outlines,
        origin_world,
        rotation_world_plane,
    )


# ---------------------------------------------------------------------------------------------
# Input validation and conversion


def _validated_normal(normal_world: np.ndarray) -> np.ndarray:
    normal = np.asarray(normal_world, dtype=np.float64)
    if normal.shape != (3,) or not np.all(np.isfinite(normal)):
        raise ContactSurfaceError(
            f"normal_world must be a finite 3-vector, got {np.asarray(normal_world)!r}"
        )
    length = float(np.linalg.norm(normal))
    if abs(length - 1.0) > NORMAL_UNIT_TOLERANCE:
        raise ContactSurfaceError(
            f"normal_world must be a unit vector (length within {NORMAL_UNIT_TOLERANCE} of 1), "
            f"got length {length:.9g}"
        )
    return normal / length


def _validated_point(plane_point_world: np.ndarray) -> np.ndarray:
    point = np.asarray(plane_point_world, dtype=np.float64)
    if point.shape != (3,) or not np.all(np.isfinite(point)):
        raise ContactSurfaceError(
            f"plane_point_world must be a finite 3-vector, got {np.asarray(plane_point_world)!r}"
        )
    return point


def _validated_stiffness(stiffness_pa_per_m: float) -> float:
    try:
        stiffness = float(stiffness_pa_per_m)
    except (TypeError, ValueError) as error:
        raise ContactSurfaceError(
            f"stiffness_pa_per_m must be a number, got {stiffness_pa_per_m!r}"
        ) from error
    if not np.isfinite(stiffness) or stiffness <= 0.0:
        raise ContactSurfaceError(
            f"stiffness_pa_per_m must be finite and positive, got {stiffness_pa_per_m!r}"
        )
    return stiffness


def _plane_axes_world(normal_unit_world: np.ndarray) -> np.ndarray:
    """Return (3, 3) rotation_world_plane whose columns are the plane axes x, y, z in world.

    z is the normal; x is the world axis least aligned with it, made orthogonal. For an
    axis-aligned normal the frame is an exact signed permutation of the world axes, so boxes
    stay exact.
    """
    seed_axis = np.zeros(3)
    seed_axis[int(np.argmin(np.abs(normal_unit_world)))] = 1.0
    x_axis = seed_axis - np.dot(seed_axis, normal_unit_world) * normal_unit_world
    x_axis /= np.linalg.norm(x_axis)
    y_axis = np.cross(normal_unit_world, x_axis)
    return np.column_stack([x_axis, y_axis, normal_unit_world])


def _solid_in_plane_frame(
    mesh_world: trimesh.Trimesh,
    argument_name: str,
    origin_world: np.ndarray,
    rotation_world_plane: np.ndarray,
) -> manifold3d.Manifold:
    """Convert a world-frame trimesh to a manifold3d solid expressed in the plane frame."""
    vertices = getattr(mesh_world, "vertices", None)
    faces = getattr(mesh_world, "faces", None)
    if vertices is None or faces is None:
        raise ContactSurfaceError(
            f"{argument_name} must be a trimesh.Trimesh, got {type(mesh_world).__name__}"
        )
    vertices_world = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(vertices_world) == 0 or len(faces) == 0:
        raise ContactSurfaceError(f"{argument_name} is empty (no vertices or no faces)")
    if not np.all(np.isfinite(vertices_world)):
        raise ContactSurfaceError(f"{argument_name} has non-finite vertex coordinates")
    if faces.min() < 0 or faces.max() >= len(vertices_world):
        raise ContactSurfaceError(f"{argument_name} has face indices outside its vertex list")

    vertices_plane = np.ascontiguousarray((vertices_world - origin_world) @ rotation_world_plane)
    faces_u64 = np.ascontiguousarray(faces, dtype=np.uint64)
    solid = _manifold_from_arrays(vertices_plane, faces_u64)
    if solid.status() != manifold3d.Error.NoError:
        # STL-like input repeats each vertex per face; let manifold3d merge coincident ones.
        mesh64 = manifold3d.Mesh64(vert_properties=vertices_plane, tri_verts=faces_u64)
        mesh64.merge()
        solid = manifold3d.Manifold(mesh64)
    if solid.status() != manifold3d.Error.NoError:
        raise ContactSurfaceError(
            f"{argument_name} does not bound a volume: it is not a closed, consistently oriented "
            f"2-manifold even after merging coincident vertices "
            f"(manifold3d status {solid.status().name})"
        )
    volume = solid.volume()
    if volume < 0.0:
        solid = _manifold_from_arrays(vertices_plane, np.ascontiguousarray(faces_u64[:, ::-1]))
        volume = solid.volume()
    if solid.is_empty() or volume <= 0.0:
        raise ContactSurfaceError(f"{argument_name} encloses no volume (it is flat or degenerate)")
    return solid


def _manifold_from_arrays(vertices: np.ndarray, faces_u64: np.ndarray) -> manifold3d.Manifold:
    return manifold3d.Manifold(manifold3d.Mesh64(vert_properties=vertices, tri_verts=faces_u64))


# ---------------------------------------------------------------------------------------------
# Thickness of the intersection volume along the normal


class _ThicknessSampler:
    """Measure the thickness of a solid along vertical lines (the normal lines of the plane frame).

    Parameters
    ----------
    solid_plane : manifold3d.Manifold
        The intersection volume, in the plane frame.
    nudge_m : float
        How far boundary samples are moved inside the patch, metres.
    """

    def __init__(self, solid_plane: manifold3d.Manifold, nudge_m: float) -> None:
        box = np.asarray(solid_plane.bounding_box(), dtype=np.float64).reshape(2, 3)
        margin_m = RAY_MARGIN_FRACTION * max(box[1, 2] - box[0, 2], nudge_m) + nudge_m
        self._solid = solid_plane
        self._z_low_m = float(box[0, 2] - margin_m)
        self._z_high_m = float(box[1, 2] + margin_m)
        self._nudge_m = nudge_m

    def sample(self, points_plane: np.ndarray, inward: np.ndarray) -> np.ndarray:
        """Return the thickness (N,) in metres along the vertical line through each point.

        Parameters
        ----------
        points_plane : np.ndarray
            (N, 2) float, metres, plane frame.
        inward : np.ndarray
            (N, 2) float: unit inward direction for boundary points, zero for interior points.
        """
        positions = points_plane + self._nudge_m * inward
        thickness = np.empty(len(positions))
        ray_cast = self._solid.ray_cast
        z_low, z_high = self._z_low_m, self._z_high_m
        for index, (x_m, y_m) in enumerate(positions.tolist()):
            # Along the ray a hit on an upward-facing triangle leaves the solid and one on a
            # downward-facing triangle enters it, so the length inside is the sum of exit
            # heights minus the sum of entry heights, however many times the line crosses.
            length_m = 0.0
            for hit in ray_cast((x_m, y_m, z_low), (x_m, y_m, z_high)):
                normal_z = hit.normal[2]
                if normal_z > 0.0:
                    length_m += hit.position[2]
                elif normal_z < 0.0:
                    length_m -= hit.position[2]
            thickness[index] = length_m
        return thickness


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, lengths, out=np.zeros_like(vectors), where=lengths > 0.0)


def _left_normals(directions: np.ndarray) -> np.ndarray:
    return np.column_stack([-directions[:, 1], directions[:, 0]])


def _loop_inward_directions(polygons_plane: list[np.ndarray]) -> np.ndarray:
    """Unit inward directions (N, 2) at the vertices of the cross-section loops.

    manifold3d winds outer loops counter-clockwise and holes clockwise, so the inside is on the
    left of every loop edge; the inward direction bisects the left normals of the two edges.
    """
    directions = []
    for loop in polygons_plane:
        edge_out = _unit_rows(np.roll(loop, -1, axis=0) - loop)
        edge_in = np.roll(edge_out, 1, axis=0)
        bisector = _left_normals(edge_in) + _left_normals(edge_out)
        # At a spike (the loop turns back on itself) the bisector vanishes: go back along it.
        spike = np.linalg.norm(bisector, axis=1) < 1e-9
        bisector[spike] = edge_out[spike] - edge_in[spike]
        directions.append(_unit_rows(bisector))
    return np.concatenate(directions)


# ---------------------------------------------------------------------------------------------
# Refinement


def _triangle_areas(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    edge_ab = points[triangles[:, 1]] - points[triangles[:, 0]]
    edge_ac = points[triangles[:, 2]] - points[triangles[:, 0]]
    return 0.5 * (edge_ab[:, 0] * edge_ac[:, 1] - edge_ab[:, 1] * edge_ac[:, 0])


def _refine(
    points_plane: np.ndarray,
    triangles: np.ndarray,
    thickness_m: np.ndarray,
    sampler: _ThicknessSampler,
    patch_scale_m: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split edges until linear interpolation matches the thickness at every edge midpoint.

    An edge is split when the thickness sampled at its midpoint differs from the mean of its end
    values by more than ``REFINE_RELATIVE_TOLERANCE`` times the largest thickness seen, or when it
    is longer than ``MAX_EDGE_FRACTION`` of the patch scale; never when it is shorter than
    ``MIN_EDGE_FRACTION`` of it. Triangles are split conformingly: a triangle with a marked edge
    also has its longest edge marked, one with two marked edges has all three; three marks give
    four similar triangles, one mark (the longest edge) bisects the triangle. Samples at edge
    midpoints are cached by edge, so every pass casts rays only for edges it has not seen.

    Returns the refined points (V, 2), triangles (T, 3) and thickness (V,).
    """
    min_edge_m = MIN_EDGE_FRACTION * patch_scale_m
    max_edge_m = MAX_EDGE_FRACTION * patch_scale_m
    cached_keys = np.empty(0, dtype=np.int64)
    cached_thickness = np.empty(0)
    largest_thickness_m = float(thickness_m.max(initial=0.0))

    for _ in range(MAX_REFINE_PASSES):
        corner_pairs = np.stack(
            [triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]], axis=1
        )  # (T, 3, 2): edge k runs from corner k to corner k+1, interior on its left
        low = corner_pairs.min(axis=2)
        high = corner_pairs.max(axis=2)
        keys, first_use, edge_of_triangle, uses = np.unique(
            (low * _EDGE_KEY_BASE + high).ravel(),
            return_index=True,
            return_inverse=True,
            return_counts=True,
        )
        edge_of_triangle = edge_of_triangle.reshape(-1, 3)
        directed = corner_pairs.reshape(-1, 2)[first_use]  # (E, 2) as wound in a triangle
        starts = points_plane[directed[:, 0]]
        ends = points_plane[directed[:, 1]]
        lengths = np.linalg.norm(ends - starts, axis=1)
        midpoints = 0.5 * (starts + ends)

        # Thickness at the midpoint of every edge long enough to split, from the cache or by
        # new rays; short edges are sampled only if the closure below marks them.
        midpoint_thickness, sampled = _lookup(cached_keys, cached_thickness, keys)
        wanted = ~sampled & (lengths > min_edge_m)
        if np.any(wanted):
            midpoint_thickness[wanted] = sampler.sample(
                midpoints[wanted], _edge_inward(starts[wanted], ends[wanted], uses[wanted])
            )
            sampled |= wanted
            largest_thickness_m = max(largest_thickness_m, float(midpoint_thickness[wanted].max()))

        interpolation_error = np.abs(
            midpoint_thickness - 0.5 * (thickness_m[directed[:, 0]] + thickness_m[directed[:, 1]])
        )
        marked = sampled & (lengths > min_edge_m) & (
            (interpolation_error > REFINE_RELATIVE_TOLERANCE * largest_thickness_m)
            | (lengths > max_edge_m)
        )
        if not np.any(marked):
            break
        marked = _close_marks(marked, edge_of_triangle, lengths)
        if len(points_plane) + int(marked.sum()) > MAX_PATCH_VERTICES:
            break
        missing = marked & ~sampled
        if np.any(missing):
            midpoint_thickness[missing] = sampler.sample(
                midpoints[missing], _edge_inward(starts[missing], ends[missing], uses[missing])
            )
            sampled |= missing
        fresh = sampled & ~np.isin(keys, cached_keys)
        order = np.argsort(np.concatenate([cached_keys, keys[fresh]]))
        cached_keys = np.concatenate([cached_keys, keys[fresh]])[order]
        cached_thickness = np.concatenate([cached_thickness, midpoint_thickness[fresh]])[order]

        new_vertex_of_edge = np.full(len(keys), -1, dtype=np.int64)
        new_vertex_of_edge[marked] = len(points_plane) + np.arange(int(marked.sum()))
        points_plane = np.concatenate([points_plane, midpoints[marked]])
        thickness_m = np.concatenate([thickness_m, midpoint_thickness[marked]])
        triangles = _split_triangles(triangles, edge_of_triangle, new_vertex_of_edge, marked)

    return points_plane, triangles, thickness_m


def _lookup(
    cached_keys: np.ndarray, cached_thickness: np.ndarray, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the cached midpoint thickness (E,) for sorted edge keys, and which were cached."""
    position = np.minimum(np.searchsorted(cached_keys, keys), max(len(cached_keys) - 1, 0))
    found = np.zeros(len(keys), dtype=bool)
    if len(cached_keys):
        found = cached_keys[position] == keys
    thickness = np.zeros(len(keys))
    thickness[found] = cached_thickness[position[found]]
    return thickness, found


def _edge_inward(starts: np.ndarray, ends: np.ndarray, uses: np.ndarray) -> np.ndarray:
    """Unit inward directions (E, 2) at edge midpoints: the edge's left normal on the boundary
    (an edge used by one triangle, wound with the inside on its left), zero inside."""
    inward = _unit_rows(_left_normals(ends - starts))
    inward[uses != 1] = 0.0
    return inward


def _close_marks(marked: np.ndarray, edge_of_triangle: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Extend edge marks until every triangle has none, only its longest, or all three."""
    marked = marked.copy()
    longest_local = np.argmax(lengths[edge_of_triangle], axis=1)
    longest_edge = edge_of_triangle[np.arange(len(edge_of_triangle)), longest_local]
    while True:
        marks = marked[edge_of_triangle]
        count = marks.sum(axis=1)
        before = int(marked.sum())
        marked[longest_edge[count > 0]] = True
        marked[edge_of_triangle[count >= 2].ravel()] = True
        if int(marked.sum()) == before:
            return marked


def _split_triangles(
    triangles: np.ndarray,
    edge_of_triangle: np.ndarray,
    new_vertex_of_edge: np.ndarray,
    marked: np.ndarray,
) -> np.ndarray:
    """Split triangles whose edges are marked (closed marks: zero, one or three per triangle)."""
    marks = marked[edge_of_triangle]
    count = marks.sum(axis=1)
    keep = triangles[count == 0]

    red = count == 3
    corner_a, corner_b, corner_c = triangles[red].T
    mid_ab, mid_bc, mid_ca = new_vertex_of_edge[edge_of_triangle[red]].T
    red_children = np.concatenate(
        [
            np.column_stack([corner_a, mid_ab, mid_ca]),
            np.column_stack([mid_ab, corner_b, mid_bc]),
            np.column_stack([mid_ca, mid_bc, corner_c]),
            np.column_stack([mid_ab, mid_bc, mid_ca]),
        ]
    )

    green = count == 1
    local = np.argmax(marks[green], axis=1)  # the marked edge runs from corner local to local+1
    rows = np.arange(int(green.sum()))
    green_triangles = triangles[green]
    first = green_triangles[rows, local]
    second = green_triangles[rows, (local + 1) % 3]
    opposite = green_triangles[rows, (local + 2) % 3]
    middle = new_vertex_of_edge[edge_of_triangle[green][rows, local]]
    green_children = np.concatenate(
        [np.column_stack([first, middle, opposite]), np.column_stack([middle, second, opposite])]
    )
    return np.concatenate([keep, red_children, green_children]).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Integrals and the result


def _assemble_patch(
    points_plane: np.ndarray,
    triangles: np.ndarray,
    pressure_pa: np.ndarray,
    outlines: tuple[np.ndarray, ...],
    origin_world: np.ndarray,
    rotation_world_plane: np.ndarray,
) -> SurfacePatch:
    """Integrate the piecewise-linear pressure exactly and express everything in the world."""
    areas_m2 = _triangle_areas(points_plane, triangles)
    corners = points_plane[triangles]  # (T, 3, 2)
    corner_pressure = pressure_pa[triangles]  # (T, 3)
    pressure_sum = corner_pressure.sum(axis=1)

    # With barycentric weights l_i, the integral of l_i * l_j over a triangle of area A is
    # A (1 + [i == j]) / 12, which gives these exact integrals of linear (and bilinear) fields.
    force_per_triangle_n = areas_m2 * pressure_sum / 3.0
    first_moment_per_triangle = (areas_m2 / 12.0)[:, None] * (
        pressure_sum[:, None] * corners.sum(axis=1)
        + np.einsum("tk,tkd->td", corner_pressure, corners)
    )
    total_force_n = float(force_per_triangle_n.sum())
    area_m2 = float(areas_m2.sum())
    if total_force_n > 0.0:
        centroid_plane = first_moment_per_triangle.sum(axis=0) / total_force_n
    else:
        centroid_plane = (areas_m2[:, None] * corners.mean(axis=1)).sum(axis=0) / area_m2

    # Moment about the centroid of the force -pressure * z on each area element at (x, y, 0):
    # r x F = (r_x, r_y, 0) x (0, 0, -p) = (-p r_y, p r_x, 0), integrated.
    lever_moment = first_moment_per_triangle.sum(axis=0) - centroid_plane * total_force_n
    moment_plane_nm = np.array([-lever_moment[1], lever_moment[0], 0.0])

    axes_xy_world = rotation_world_plane[:, :2]
    normal_world = rotation_world_plane[:, 2]
    vertices_world = origin_world + points_plane @ axes_xy_world.T
    return SurfacePatch(
        vertices_world=vertices_world,
        triangles=triangles,
        pressure_pa=pressure_pa,
        outlines=outlines,
        area_m2=area_m2,
        centroid_world=origin_world + axes_xy_world @ centroid_plane,
        force_world_n=-total_force_n * normal_world,
        moment_world_nm=rotation_world_plane @ moment_plane_nm,
    )
