"""Contact surfaces: the cross-section of two overlapping bodies, with a pressure field.

A contact surface explains *how much* two bodies overlap, in the manner of Drake's hydroelastic
contact surfaces (``lcmt_hydroelastic_contact_surface_for_viz``), but for ordinary rigid meshes:

1. The intersection volume of the two bodies is computed with manifold3d (a robust boolean),
   in a frame whose z axis is the contact normal and whose origin is on the contact plane.
2. manifold3d slices it by the contact plane (z = 0), which passes through a given point (the
   caller passes the midpoint of the two witness points). The cut is a set of polygons, possibly
   with holes; manifold3d clips them to the cells of a coarse grid and triangulates each cell.
3. The pressure at every vertex is the thickness of the intersection volume along the normal
   line through the vertex (the total length of the line inside the volume), times a stiffness
   in Pa/m. No library measures that for many points at once, so it is done here: an exact,
   vectorised line/triangle test against the intersection mesh, watertight at shared edges,
   which agrees with manifold3d's own ``ray_cast`` to rounding (the tests check it).
4. The triangulation is refined (longest-edge bisection) where linear interpolation of the
   pressure misses its integral, until the estimated error is small, within a bounded budget.
5. Force, pressure-weighted centroid and moment follow from exact integrals of the linearly
   interpolated pressure over each triangle.

Steps 1 to 3 and 5 are here; the refinement (step 4) is in :mod:`.refinement`, the outline
(the boundary loops of the triangulation) in :mod:`.outline`. Everything is plain
numpy/trimesh/manifold3d, nothing of ROS.

Precision
---------
Areas, forces and the rest are computed in double precision, but the outline comes from
manifold3d's cross-sections, which slice in single precision and keep coordinates on a 1e-8 m
grid: outline vertices are within about 1e-8 m (plus 6e-8 of their distance from the plane
point) of the true section. Pressures are exact at the vertices (up to rounding); the force
and centroid carry the refinement error, about ``REFINE_RELATIVE_TOLERANCE`` of the force.

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

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.kernels.thickness import thickness_along_lines
from my_collision_pkg.core.surfaces.outline import boundary_loops
from my_collision_pkg.core.surfaces.plane_geometry import cross_2d, left_normals, triangle_areas, unit_rows
from my_collision_pkg.core.surfaces.refinement import (  # noqa: F401  (the refinement's limits, also named here)
    MAX_EDGE_FRACTION,
    MAX_PATCH_VERTICES,
    MAX_REFINE_PASSES,
    MIN_EDGE_FRACTION,
    REFINE_MARKED_FRACTION,
    REFINE_RELATIVE_TOLERANCE,
    EdgeTable,
    refine,
)

__all__ = [
    "ContactSurfaceError",
    "SurfacePatch",
    "compute_contact_surface",
]

#: How far ``normal_world`` may be from unit length before it is rejected as a caller bug.
NORMAL_UNIT_TOLERANCE = 1e-6

#: The cross-section is first cut into square cells, this many along its longer side, and each
#: cell triangulated: this bounds the size of the first triangles.
INITIAL_GRID_CELLS = 8

#: Boundary vertices are sampled this fraction of the patch diagonal inside the patch, so that
#: the thickness there is the limit from inside (a line grazing a wall parallel to the normal is
#: otherwise ambiguous), and at least ``_ROUNDING_MARGIN`` times the rounding of the outline.
BOUNDARY_NUDGE_FRACTION = 1e-6

#: manifold3d slices in single precision (relative rounding 6e-8) and its cross-sections keep
#: coordinates on a 1e-8 grid (Clipper2 at 8 decimals): the outline is that close to the truth.
_SLICE_RELATIVE_ROUNDING = float(np.finfo(np.float32).eps)
_SECTION_GRID_M = 1e-8
_ROUNDING_MARGIN = 10.0

#: The grid that finds which triangles of the intersection lie over a point has this many times
#: the square root of their number cells per side (cells a few times smaller than a typical
#: triangle keep the candidate pairs per point few), and at most ``_MAX_GRID_CELLS_PER_SIDE``.
_GRID_CELLS_PER_TRIANGLE_ROOT = 2.0
_MAX_GRID_CELLS_PER_SIDE = 64
#: Grid cells are grown by this fraction of their size when triangles are binned, so rounding
#: can never drop a triangle from a cell it touches.
_GRID_MARGIN_FRACTION = 1e-6

#: Below this length, the sum of two unit boundary normals at a vertex means a spike.
_SPIKE_TOLERANCE = 1e-9


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
        One int64 array of vertex indices per boundary loop, through every boundary vertex (outer
        boundaries counter-clockwise, holes clockwise, seen from the tip of the normal). Each loop
        is closed explicitly: its last index repeats its first, so it can be drawn directly as a
        LINE_STRIP.
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

    section = overlap.slice(0.0)
    if section.is_empty():
        return None
    points_plane, triangles = _triangulate_on_grid(section)
    if len(triangles) == 0:
        return None

    patch_diagonal_m = float(np.linalg.norm(np.ptp(points_plane, axis=0)))
    outline_rounding_m = _SECTION_GRID_M + _SLICE_RELATIVE_ROUNDING * float(np.abs(points_plane).max())
    nudge_m = max(BOUNDARY_NUDGE_FRACTION * patch_diagonal_m, _ROUNDING_MARGIN * outline_rounding_m)
    region_plane = np.array(
        [points_plane.min(axis=0) - 2.0 * nudge_m, points_plane.max(axis=0) + 2.0 * nudge_m]
    )
    sampler = _ThicknessSampler(overlap, region_plane, nudge_m)
    thickness_m = sampler.sample(points_plane, _boundary_inward_directions(points_plane, triangles))
    points_plane, triangles, thickness_m = refine(
        points_plane, triangles, thickness_m, sampler.sample, patch_diagonal_m
    )
    outlines = boundary_loops(triangles)
    return _assemble_patch(
        points_plane,
        triangles,
        np.maximum(thickness_m, 0.0) * stiffness,
        outlines,
        origin_world,
        rotation_world_plane,
    )


def overlap_extent_along(
    mesh_0_world: trimesh.Trimesh, mesh_1_world: trimesh.Trimesh, normal_world: np.ndarray
) -> tuple[float, float] | None:
    """Lowest and highest value of ``normal_world . x`` over the two bodies' intersection volume.

    Returns None when the bodies do not overlap. Same inputs and errors as
    :func:`compute_contact_surface`.
    """
    normal_unit_world = _validated_normal(normal_world)
    rotation_world_plane = _plane_axes_world(normal_unit_world)
    origin_world = np.zeros(3)
    solid_0 = _solid_in_plane_frame(mesh_0_world, "mesh_0_world", origin_world, rotation_world_plane)
    solid_1 = _solid_in_plane_frame(mesh_1_world, "mesh_1_world", origin_world, rotation_world_plane)
    overlap = manifold3d.Manifold.batch_boolean([solid_0, solid_1], manifold3d.OpType.Intersect)
    if overlap.is_empty() or overlap.volume() <= 0.0:
        return None
    bounds = overlap.bounding_box()          # (x_min, y_min, z_min, x_max, y_max, z_max), z along the normal
    return float(bounds[2]), float(bounds[5])


# ---------------------------------------------------------------------------------------------
# Input validation and conversion


def _finite_3_vector(value: np.ndarray, argument_name: str) -> np.ndarray:
    try:
        vector = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ContactSurfaceError(f"{argument_name} must be a finite 3-vector, got {value!r}") from error
    if vector.shape != (3,) or not np.all(np.isfinite(vector)):
        raise ContactSurfaceError(f"{argument_name} must be a finite 3-vector, got {value!r}")
    return vector


def _validated_normal(normal_world: np.ndarray) -> np.ndarray:
    normal = _finite_3_vector(normal_world, "normal_world")
    length = float(np.linalg.norm(normal))
    if abs(length - 1.0) > NORMAL_UNIT_TOLERANCE:
        raise ContactSurfaceError(
            f"normal_world must be a unit vector (length within {NORMAL_UNIT_TOLERANCE} of 1), "
            f"got length {length:.9g}"
        )
    return normal / length


def _validated_point(plane_point_world: np.ndarray) -> np.ndarray:
    return _finite_3_vector(plane_point_world, "plane_point_world")


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
    """Measure the thickness of a closed solid along vertical lines (the plane frame's normal lines).

    Along a vertical line, a crossing of an upward-facing triangle leaves the solid and a crossing
    of a downward-facing one enters it, so the length of the line inside the solid is the sum of
    the exit heights minus the sum of the entry heights, however many times the line crosses it.
    Each triangle therefore adds ``+z`` or ``-z`` (its height above the point) to every point
    whose vertical line pierces it, i.e. every point of its projection onto the plane; vertical
    triangles project to segments and add nothing.

    A point exactly on a projected edge or vertex is decided as if it were moved by the
    infinitesimal offset ``(-eps**2, eps)``: every edge test is evaluated on the edge's
    lexicographically ordered endpoints, so triangles that share an edge agree bit for bit, and a
    line through an edge or vertex is counted once, the way manifold3d's watertight ray cast does.
    Vectorised numpy over the candidate (point, triangle) pairs of a uniform grid.

    Parameters
    ----------
    solid_plane : manifold3d.Manifold
        The intersection volume, in the plane frame.
    region_plane : np.ndarray
        (2, 2) float, metres, plane frame: lower and upper corners of the box that contains every
        point that will be sampled (points outside it are not supported).
    nudge_m : float
        How far boundary samples are moved inside the patch, metres.
    """

    def __init__(
        self, solid_plane: manifold3d.Manifold, region_plane: np.ndarray, nudge_m: float
    ) -> None:
        mesh = solid_plane.to_mesh64()
        vertices = np.asarray(mesh.vert_properties, dtype=np.float64)[:, :3]
        faces = np.asarray(mesh.tri_verts, dtype=np.int64).reshape(-1, 3)
        corners_xy = vertices[faces, :2]  # (F, 3, 2)
        corners_z = vertices[faces, 2]  # (F, 3)
        twice_area = cross_2d(corners_xy[:, 1] - corners_xy[:, 0], corners_xy[:, 2] - corners_xy[:, 0])
        upright = twice_area != 0.0
        corners_xy, corners_z, twice_area = corners_xy[upright], corners_z[upright], twice_area[upright]
        facing = np.sign(twice_area)  # +1 exit (faces up), -1 entry (faces down)

        tails = corners_xy
        heads = np.roll(corners_xy, -1, axis=1)
        swap = (tails[..., 0] > heads[..., 0]) | (
            (tails[..., 0] == heads[..., 0]) & (tails[..., 1] > heads[..., 1])
        )
        edge_start = np.where(swap[..., None], heads, tails)  # (F, 3, 2)
        edge_vector = np.where(swap[..., None], tails, heads) - edge_start
        # Per triangle: the start x, start y, vector x, vector y of its three ordered edges.
        self._edges = np.ascontiguousarray(
            np.concatenate(
                [edge_start[..., 0], edge_start[..., 1], edge_vector[..., 0], edge_vector[..., 1]],
                axis=1,
            )
        )  # (F, 12)
        # The triangle's inside is on the left of its edges when it is counter-clockwise.
        self._inside_left = (facing[:, None] * np.where(swap, -1.0, 1.0)) > 0.0  # (F, 3)
        # Per triangle: a corner (x, y, z), the slopes dz/dx and dz/dy of its plane, its lowest
        # and highest z (heights are clipped to them, so a near-vertical sliver cannot produce a
        # height outside its own corners), and +1 or -1 for the side it faces.
        span_1 = corners_xy[:, 1] - corners_xy[:, 0]
        span_2 = corners_xy[:, 2] - corners_xy[:, 0]
        rise_1 = corners_z[:, 1] - corners_z[:, 0]
        rise_2 = corners_z[:, 2] - corners_z[:, 0]
        self._planes = np.ascontiguousarray(
            np.column_stack(
                [
                    corners_xy[:, 0],
                    corners_z[:, 0],
                    (rise_1 * span_2[:, 1] - rise_2 * span_1[:, 1]) / twice_area,
                    (rise_2 * span_1[:, 0] - rise_1 * span_2[:, 0]) / twice_area,
                    corners_z.min(axis=1),
                    corners_z.max(axis=1),
                    facing,
                ]
            )
        )  # (F, 8)
        self._facing = facing
        self._z_extent_m = float(np.ptp(vertices[:, 2])) if len(vertices) else 0.0
        self._nudge_m = nudge_m
        self._build_grid(corners_xy, region_plane)

    def _build_grid(self, corners_xy: np.ndarray, region_plane: np.ndarray) -> None:
        """Bin the projected triangles into a uniform grid over the region that will be sampled.

        A triangle is listed in the cells its projection overlaps, row by row (the x-extent of
        the triangle within each row's band, grown by a rounding margin), not in every cell of
        its bounding box: the projected triangles of curved links are long slivers whose boxes
        cover many cells they miss.
        """
        self._grid_origin = region_plane[0]
        extent = np.maximum(region_plane[1] - region_plane[0], np.finfo(float).tiny)
        cells_per_side = int(
            np.clip(
                np.ceil(_GRID_CELLS_PER_TRIANGLE_ROOT * np.sqrt(len(corners_xy))),
                1,
                _MAX_GRID_CELLS_PER_SIDE,
            )
        )
        self._cell_size = extent / cells_per_side
        self._cells_per_side = cells_per_side
        margin = _GRID_MARGIN_FRACTION * float(self._cell_size.max())

        # Every (triangle, row) pair of the rows the triangle's y-extent spans.
        first_row = self._cell_of(corners_xy.min(axis=1) - margin)[:, 1]
        last_row = self._cell_of(corners_xy.max(axis=1) + margin)[:, 1]
        row_count = last_row - first_row + 1
        triangle = np.repeat(np.arange(len(corners_xy)), row_count)
        row = first_row[triangle] + (
            np.arange(int(row_count.sum())) - np.repeat(np.cumsum(row_count) - row_count, row_count)
        )
        band_low = self._grid_origin[1] + row * self._cell_size[1] - margin
        band_high = band_low + self._cell_size[1] + 2.0 * margin

        # The x-extent of the triangle within the band: the union of its edges clipped to it.
        tails = corners_xy[triangle]  # (R, 3, 2)
        vectors = np.roll(tails, -1, axis=1) - tails
        flat = vectors[..., 1] == 0.0
        safe_dy = np.where(flat, 1.0, vectors[..., 1])
        to_low = (band_low[:, None] - tails[..., 1]) / safe_dy
        to_high = (band_high[:, None] - tails[..., 1]) / safe_dy
        enter = np.where(flat, 0.0, np.maximum(np.minimum(to_low, to_high), 0.0))
        leave = np.where(flat, 1.0, np.minimum(np.maximum(to_low, to_high), 1.0))
        in_band = np.where(
            flat,
            (tails[..., 1] >= band_low[:, None]) & (tails[..., 1] <= band_high[:, None]),
            enter <= leave,
        )
        x_enter = tails[..., 0] + enter * vectors[..., 0]
        x_leave = tails[..., 0] + leave * vectors[..., 0]
        x_low = np.where(in_band, np.minimum(x_enter, x_leave), np.inf).min(axis=1)
        x_high = np.where(in_band, np.maximum(x_enter, x_leave), -np.inf).max(axis=1)
        touches = x_low <= x_high
        triangle, row = triangle[touches], row[touches]
        first_column = self._cell_of(np.column_stack([x_low[touches] - margin, band_low[touches]]))[:, 0]
        last_column = self._cell_of(np.column_stack([x_high[touches] + margin, band_low[touches]]))[:, 0]

        column_count = last_column - first_column + 1
        cell_triangle = np.repeat(triangle, column_count)
        column = np.repeat(first_column, column_count) + (
            np.arange(int(column_count.sum()))
            - np.repeat(np.cumsum(column_count) - column_count, column_count)
        )
        cell = np.repeat(row, column_count) * cells_per_side + column
        order = np.argsort(cell, kind="stable")
        self._triangles_by_cell = cell_triangle[order]
        self._cell_bounds = np.searchsorted(cell[order], np.arange(cells_per_side**2 + 1))

    def _cell_of(self, points: np.ndarray) -> np.ndarray:
        index = np.floor((points - self._grid_origin) / self._cell_size).astype(np.int64)
        return np.clip(index, 0, self._cells_per_side - 1)

    def sample(self, points_plane: np.ndarray, inward: np.ndarray) -> np.ndarray:
        """Return the thickness (N,) in metres along the vertical line through each point.

        Parameters
        ----------
        points_plane : np.ndarray
            (N, 2) float, metres, plane frame.
        inward : np.ndarray
            (N, 2) float: unit inward direction for boundary points (sampled ``nudge_m`` inside,
            so that a line grazing a wall of the solid counts as inside), zero for interior points.
        """
        positions = points_plane + self._nudge_m * inward
        if len(self._facing) == 0 or len(positions) == 0:
            return np.zeros(len(positions))
        cell_xy = self._cell_of(positions)
        cell = cell_xy[:, 1] * self._cells_per_side + cell_xy[:, 0]
        return thickness_along_lines(np.ascontiguousarray(positions, dtype=np.float64), cell, self._cell_bounds,
                                     self._triangles_by_cell, self._edges, self._inside_left, self._planes,
                                     self._z_extent_m)


def _boundary_inward_directions(points_plane: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Unit inward directions (V, 2) at the boundary vertices of a triangulation, zero inside.

    Triangles are counter-clockwise, so the inside is on the left of every boundary edge as it
    is wound; at a vertex the inward direction bisects the left normals of its boundary edges.
    """
    edges = EdgeTable(points_plane, triangles)
    boundary = edges.uses == 1
    tails, heads = edges.directed[boundary, 0], edges.directed[boundary, 1]
    directions = unit_rows(points_plane[heads] - points_plane[tails])
    bisector = np.zeros_like(points_plane)
    np.add.at(bisector, tails, left_normals(directions))
    np.add.at(bisector, heads, left_normals(directions))
    # At a spike (the boundary turns back on itself) the normals cancel: point into the spike.
    along = np.zeros_like(points_plane)
    np.add.at(along, tails, directions)
    np.add.at(along, heads, -directions)
    spike = np.linalg.norm(bisector, axis=1) < _SPIKE_TOLERANCE
    bisector[spike] = along[spike]
    return unit_rows(bisector)


# ---------------------------------------------------------------------------------------------
# Triangulation


def _triangulate_on_grid(section: manifold3d.CrossSection) -> tuple[np.ndarray, np.ndarray]:
    """Triangulate a cross-section cell by cell over a square grid, with manifold3d.

    Triangulating the whole polygon at once gives fans of needles across it (a disc cut from a
    fine sphere has hundreds of outline vertices and no inner ones), which no amount of edge
    bisection makes well shaped. Cutting the section by the cells of a grid first
    (``INITIAL_GRID_CELLS`` along its longer side) bounds every triangle by the cell size; the
    cells' triangulations share the points where they meet, so merging equal points gives one
    conforming triangulation.

    Returns
    -------
    points_plane : np.ndarray
        (V, 2) float, metres, plane frame.
    triangles : np.ndarray
        (T, 3) int64, counter-clockwise.
    """
    bounds = np.asarray(section.bounds(), dtype=np.float64)  # min x, min y, max x, max y
    lower, upper = bounds[:2], bounds[2:]
    cell_size_m = float(np.max(upper - lower)) / INITIAL_GRID_CELLS
    if not cell_size_m > 0.0:
        return np.empty((0, 2)), np.empty((0, 3), dtype=np.int64)
    cell_counts = np.maximum(np.ceil((upper - lower) / cell_size_m).astype(int), 1)
    xs = lower[0] + cell_size_m * np.arange(cell_counts[0] + 1)
    ys = lower[1] + cell_size_m * np.arange(cell_counts[1] + 1)
    xs[-1], ys[-1] = max(xs[-1], upper[0]), max(ys[-1], upper[1])

    pieces_points = []
    pieces_triangles = []
    point_count = 0
    for x_low, x_high in zip(xs[:-1], xs[1:]):
        for y_low, y_high in zip(ys[:-1], ys[1:]):
            cell = manifold3d.CrossSection(
                [np.array([[x_low, y_low], [x_high, y_low], [x_high, y_high], [x_low, y_high]])]
            )
            piece = section ^ cell
            if piece.is_empty():
                continue
            loops = [np.asarray(loop, dtype=np.float64) for loop in piece.to_polygons()]
            piece_triangles = np.asarray(manifold3d.triangulate(loops), dtype=np.int64)
            pieces_points.append(np.concatenate(loops))
            pieces_triangles.append(piece_triangles.reshape(-1, 3) + point_count)
            point_count += len(pieces_points[-1])
    if not pieces_points:
        return np.empty((0, 2)), np.empty((0, 3), dtype=np.int64)

    points_plane, merged = np.unique(np.concatenate(pieces_points), axis=0, return_inverse=True)
    triangles = merged.ravel()[np.concatenate(pieces_triangles)]
    triangles = triangles[triangle_areas(points_plane, triangles) > 0.0]
    used = np.unique(triangles)
    renumber = np.full(len(points_plane), -1, dtype=np.int64)
    renumber[used] = np.arange(len(used))
    return points_plane[used], renumber[triangles]


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
    areas_m2 = triangle_areas(points_plane, triangles)
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
