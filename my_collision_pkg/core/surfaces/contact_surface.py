"""Contact surfaces: the footprint of two overlapping bodies on the contact plane, with a pressure field.

A contact surface explains *how much* two bodies overlap, in the manner of Drake's hydroelastic
contact surfaces (``lcmt_hydroelastic_contact_surface_for_viz``), but for ordinary rigid meshes.
The contact plane passes through a given point (the caller passes the midpoint of the two
witness points) perpendicular to the contact normal, and:

* the surface is the *footprint* of the intersection volume on that plane: its projection along
  the normal (every point of the plane whose normal line meets the overlap);
* the pressure at a point of the surface is a stiffness (Pa/m) times the *thickness* of the
  overlap along the normal line through it (the total length of the line inside the overlap);
* so the force is the stiffness times the overlap's volume (the integral of the thickness over
  the footprint is the volume), the pressure-weighted centroid is the projection of the overlap's
  volume centroid, and the moment about that centroid of a normal pressure on a plane vanishes.

Two ways to compute it:

1. **Convex overlaps** (:mod:`.convex_overlap`): when the overlap is a convex polytope (two convex
   meshes: boxes, tessellated spheres, cylinders, capsules, cones, convex links; or meshes convex
   but for pockets that neither meets), its vertices are found by clipping each hull's edges to
   the other hull, and qhull gives its faces, volume and centroid exactly. The footprint is
   triangulated by the overlap's faces on one side (the lower or the upper ones, projected; they
   tile the footprint), the thickness at each vertex is the distance between the upper and lower
   faces there. Where the other side is one plane (a body pressed into a flat face), the thickness
   is linear on each triangle, so the drawn field is the exact one. For solids used many times
   (``explanation_surfaces``), an overlap that reaches a pocket of a mesh (a part of its hull
   outside it) is the hulls' overlap less the pockets' parts in it, by manifold3d booleans of the
   small pocket solids, unless a pocket's part may cut through the overlap: force and centroid
   stay exact, the footprint is the hulls' overlap's, and the drawn thickness is the hulls'
   (it overstates the pressure over a pocket by the pocket's depth there).
2. **Any closed meshes** (manifold3d): the intersection volume by a boolean, its projection onto
   the plane (``Manifold.project``) cut into a grid and triangulated, the thickness at every
   vertex by an exact line/solid test (:class:`_ThicknessSampler`), the triangulation refined
   where linear interpolation of the thickness misses its integral (:mod:`.refinement`). Force
   and centroid still come from the volume and centroid of the intersection, exactly.

Analytic surfaces for primitive pairs (a sphere or a box pressed into a box face, ...) are in
:mod:`.primitive_surfaces`. Everything is plain numpy/scipy/trimesh/manifold3d, nothing of ROS.

Precision
---------
Force, centroid and moment are exact up to rounding for the polytopes given (the tessellation of
a curved primitive is a polytope: its overlap is that of the tessellation, not of the primitive).
On the manifold3d path the outline comes from manifold3d's cross-sections (single precision, a
1e-8 m grid): outline vertices are within about 1e-8 m of the true footprint.

Conventions
-----------
``normal_world`` points from body 0 towards body 1 (the direction in which body 1 must move to
separate). The force is the one applied to body 0, so it points along ``-normal_world``. All
lengths are metres, pressures pascals, forces newtons, moments newton-metres, everything in the
world frame of the input meshes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import manifold3d
import numpy as np
import trimesh

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.kernels.footprint import convex_footprint
from my_collision_pkg.core.kernels.thickness import thickness_along_lines
from my_collision_pkg.core.surfaces.convex_overlap import (
    MeshVolumeError,
    PreparedSolid,
    contains_point,
    convex_polytope,
    hull_overlap_points,
    pockets_reached,
    prepare_solid,
)
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
    "contact_surface_of_solids",
    "overlap_extent_along",
    "patch_from_plane_frame",
    "plane_axes_world",
    "prepared_solid",
]

#: How far ``normal_world`` may be from unit length before it is rejected as a caller bug.
NORMAL_UNIT_TOLERANCE = 1e-6

#: The footprint is first cut into square cells, this many along its longer side, and each
#: cell triangulated: this bounds the size of the first triangles (manifold3d path).
INITIAL_GRID_CELLS = 8

#: Boundary vertices are sampled this fraction of the patch diagonal inside the patch, so that
#: the thickness there is the limit from inside (a line grazing a wall parallel to the normal is
#: otherwise ambiguous), and at least ``_ROUNDING_MARGIN`` times the rounding of the outline.
BOUNDARY_NUDGE_FRACTION = 1e-6

#: A face of the overlap whose unit normal has a component along the contact normal below this
#: is parallel to the normal (a wall): it projects to a segment and bounds no part of the surface.
WALL_NORMAL_TOLERANCE = 1e-9

#: A pocket's part in the hulls' overlap within this fraction of the overlap's size of its upper
#: and of its lower faces may cut through the overlap (then manifold3d computes the surface).
POCKET_TOUCH_FRACTION = 1e-9

#: Faces on one side of the overlap whose unit normals differ by less than this are one plane.
FLAT_NORMAL_TOLERANCE = 1e-9

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
        vertices on its boundary). Interpolated linearly inside each triangle for drawing.
    outlines : tuple of np.ndarray
        One int64 array of vertex indices per boundary loop, through every boundary vertex (outer
        boundaries counter-clockwise, holes clockwise, seen from the tip of the normal). Each loop
        is closed explicitly: its last index repeats its first, so it can be drawn directly as a
        LINE_STRIP.
    area_m2 : float
        Area of the footprint, square metres: the total area of the triangles, except for an
        analytic surface (:mod:`.primitive_surfaces`), whose area is the exact one and whose
        triangles inscribe it.
    centroid_world : np.ndarray
        (3,) float, metres, on the plane: the pressure-weighted centroid, which is the projection
        of the overlap's volume centroid onto the plane.
    force_world_n : np.ndarray
        (3,) float, newtons: the net force applied to body 0, ``-normal * stiffness * volume``
        (the integral of the pressure over the footprint).
    moment_world_nm : np.ndarray
        (3,) float, newton-metres: the net moment applied to body 0 about ``centroid_world``. For a
        planar patch with a purely normal pressure it vanishes, because the centroid is
        pressure-weighted; it is reported for parity with Drake's message.
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
        intersection volume (lies wholly above or below it along the normal).

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
    solid_0 = prepared_solid(mesh_0_world, "mesh_0_world")
    solid_1 = prepared_solid(mesh_1_world, "mesh_1_world")
    return contact_surface_of_solids(solid_0, solid_1, origin_world, normal_unit_world, stiffness)


def prepared_solid(mesh: trimesh.Trimesh, argument_name: str) -> PreparedSolid:
    """A mesh checked and prepared for :func:`contact_surface_of_solids`, in the mesh's frame.

    Raises
    ------
    ContactSurfaceError
        Naming ``argument_name``, as :func:`compute_contact_surface` describes.
    """
    vertices = getattr(mesh, "vertices", None)
    faces = getattr(mesh, "faces", None)
    if vertices is None or faces is None:
        raise ContactSurfaceError(f"{argument_name} must be a trimesh.Trimesh, got {type(mesh).__name__}")
    try:
        return prepare_solid(vertices, faces, argument_name)
    except MeshVolumeError as error:
        raise ContactSurfaceError(str(error)) from error


def contact_surface_of_solids(
    solid_0: PreparedSolid,
    solid_1: PreparedSolid,
    plane_point_world: np.ndarray,
    normal_unit_world: np.ndarray,
    stiffness_pa_per_m: float,
    *,
    plane_into_overlap: bool = False,
    known_to_overlap: bool = False,
    subtract_pockets: bool = False,
) -> SurfacePatch | None:
    """:func:`compute_contact_surface` on prepared solids (world frame) and checked arguments.

    With ``plane_into_overlap``, a plane that misses the overlap is moved along the normal to
    halfway through it instead of giving None. With ``known_to_overlap`` (the caller has a
    penetrating contact of the two), the check that the convex path's overlap is inside a
    non-convex body (which can only fail when the bodies do not overlap) is skipped. With
    ``subtract_pockets`` (solids prepared once and used many times: their pocket solids are
    kept), an overlap that reaches a pocket of a mesh is the hulls' overlap less the pockets'
    parts when these cannot cut through it; otherwise, and by default, such an overlap is
    computed by manifold3d.
    """
    rotation_world_plane = plane_axes_world(normal_unit_world)
    reached = (pockets_reached(solid_0, solid_1), pockets_reached(solid_1, solid_0))
    if any(reached) and not subtract_pockets:
        return _manifold_surface(solid_0, solid_1, plane_point_world, rotation_world_plane, stiffness_pa_per_m,
                                 plane_into_overlap)
    points_world = hull_overlap_points(solid_0, solid_1)
    if len(points_world) == 0:
        return None
    polytope = convex_polytope((points_world - plane_point_world) @ rotation_world_plane)
    if polytope is None:
        return None
    volume_m3, centroid_plane = polytope.volume_m3, polytope.centroid
    if any(reached):
        # The overlap is the hulls' overlap less the pockets' parts in it (inclusion-exclusion
        # over the pockets, by manifold3d booleans of the small pocket solids).
        pocketed = _less_pockets(solid_0, solid_1, reached, plane_point_world, rotation_world_plane, polytope)
        if pocketed is None:      # a pocket may cut through the overlap: its footprint is not the hulls'
            return _manifold_surface(solid_0, solid_1, plane_point_world, rotation_world_plane, stiffness_pa_per_m,
                                     plane_into_overlap)
        volume_m3, centroid_plane = pocketed
        if not volume_m3 > 0.0:
            return None
    elif not known_to_overlap and not all(solid.convex or contains_point(solid, plane_point_world
                                                                          + rotation_world_plane @ centroid_plane)
                                          for solid in (solid_0, solid_1)):
        return _manifold_surface(solid_0, solid_1, plane_point_world, rotation_world_plane, stiffness_pa_per_m,
                                 plane_into_overlap)
    return _convex_surface(polytope, volume_m3, centroid_plane, plane_point_world, rotation_world_plane,
                           stiffness_pa_per_m, plane_into_overlap)


def overlap_extent_along(
    mesh_0_world: trimesh.Trimesh, mesh_1_world: trimesh.Trimesh, normal_world: np.ndarray
) -> tuple[float, float] | None:
    """Lowest and highest value of ``normal_world . x`` over the two bodies' intersection volume.

    Returns None when the bodies do not overlap. Same inputs and errors as
    :func:`compute_contact_surface`.
    """
    normal_unit_world = _validated_normal(normal_world)
    solid_0 = prepared_solid(mesh_0_world, "mesh_0_world")
    solid_1 = prepared_solid(mesh_1_world, "mesh_1_world")
    rotation_world_plane = plane_axes_world(normal_unit_world)
    overlap = _manifold_overlap(solid_0, solid_1, np.zeros(3), rotation_world_plane)
    if overlap is None:
        return None
    bounds = overlap.bounding_box()          # (x_min, y_min, z_min, x_max, y_max, z_max), z along the normal
    return float(bounds[2]), float(bounds[5])


# ---------------------------------------------------------------------------------------------
# Convex overlaps


def _plane_origin(polytope, origin_world, rotation_world_plane, plane_into_overlap):
    """Where the surface's plane goes: ``origin_world`` when the plane (z = 0 of the plane frame)
    cuts the polytope; else, with ``plane_into_overlap``, moved along the plane's normal to the
    middle of the polytope's heights; else None (no surface)."""
    heights = polytope.points[:, 2]
    low, high = float(heights.min()), float(heights.max())
    if low <= 0.0 <= high:
        return origin_world
    if not plane_into_overlap:
        return None
    return origin_world + 0.5 * (low + high) * rotation_world_plane[:, 2]


def _convex_surface(polytope, volume_m3, centroid_plane, origin_world, rotation_world_plane, stiffness,
                    plane_into_overlap):
    """The surface drawn on the convex polytope of the overlap (plane frame: the plane is z = 0),
    with the overlap's volume and centroid (those of the polytope, or less the pockets): the footprint,
    its thickness and outline in one compiled call (``kernels.footprint.convex_footprint``; the numpy
    reference is :func:`_convex_surface_reference`)."""
    origin_world = _plane_origin(polytope, origin_world, rotation_world_plane, plane_into_overlap)
    if origin_world is None:
        return None
    ok, points_xy, triangles, thickness, outline, area_m2 = convex_footprint(
        np.require(polytope.points, np.float64, ["C", "W"]), np.require(polytope.simplices, np.int64, ["C", "W"]),
        np.require(polytope.equations, np.float64, ["C", "W"]), WALL_NORMAL_TOLERANCE, FLAT_NORMAL_TOLERANCE)
    if not ok:
        return None
    return patch_from_plane_frame(points_xy, triangles, stiffness * thickness, (outline,), area_m2,
                                  stiffness * volume_m3, centroid_plane[:2], origin_world, rotation_world_plane)


def _convex_surface_reference(polytope, volume_m3, centroid_plane, origin_world, rotation_world_plane, stiffness,
                              plane_into_overlap):
    """:func:`_convex_surface` in numpy (the reference of the compiled footprint)."""
    origin_world = _plane_origin(polytope, origin_world, rotation_world_plane, plane_into_overlap)
    if origin_world is None:
        return None
    normals, offsets = polytope.equations[:, :3], polytope.equations[:, 3]
    up = normals[:, 2] > WALL_NORMAL_TOLERANCE
    down = normals[:, 2] < -WALL_NORMAL_TOLERANCE
    if not np.any(up) or not np.any(down):
        return None
    # Draw with the faces of the side that is not one plane (the other side's height is then
    # linear over each of them, and so is the thickness); else with the side with more faces.
    flat_up, flat_down = _is_flat(normals[up]), _is_flat(normals[down])
    if flat_up != flat_down:
        side = down if flat_up else up
    else:
        side = up if up.sum() >= down.sum() else down
    triangles = polytope.simplices[side]
    points_xy = polytope.points[:, :2]
    signed = triangle_areas(points_xy, triangles)
    triangles = np.where((signed < 0.0)[:, None], triangles[:, [0, 2, 1]], triangles)[signed != 0.0]
    area_m2 = float(np.abs(signed).sum())
    # A vertex of this side is on the footprint's outline exactly when a face of the other side or
    # a wall meets it (inside the footprint the thickness is positive and only this side's faces
    # surround a vertex of it).
    on_outline = np.zeros(len(points_xy), dtype=bool)
    on_outline[polytope.simplices[~side]] = True
    used, triangles = np.unique(triangles, return_inverse=True)
    triangles = triangles.reshape(-1, 3)
    points_xy = points_xy[used]
    outline = _convex_loop(points_xy, np.flatnonzero(on_outline[used]))
    # Heights of the upper and lower faces over each vertex: z = -(offset + n_x x + n_y y) / n_z.
    top = _heights_over(points_xy, normals[up], offsets[up]).min(axis=1)
    bottom = _heights_over(points_xy, normals[down], offsets[down]).max(axis=1)
    heights = polytope.points[:, 2]
    thickness = np.clip(top - bottom, 0.0, float(heights.max() - heights.min()))
    return patch_from_plane_frame(points_xy, triangles, stiffness * thickness, (outline,), area_m2,
                                  stiffness * volume_m3, centroid_plane[:2], origin_world, rotation_world_plane)


def _convex_loop(points_xy: np.ndarray, boundary: np.ndarray) -> np.ndarray:
    """The boundary vertices of a convex region as one closed counter-clockwise loop: in angle
    about their mean (inside the region)."""
    offsets = points_xy[boundary] - points_xy[boundary].mean(axis=0)
    loop = boundary[np.argsort(np.arctan2(offsets[:, 1], offsets[:, 0]), kind="stable")]
    return np.append(loop, loop[0])


def _heights_over(points_xy: np.ndarray, normals: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(V, F) heights of the face planes ``normal . x + offset = 0`` over the points (V, 2)."""
    return -(offsets[None, :] + points_xy @ normals[:, :2].T) / normals[None, :, 2]


def _less_pockets(solid_0, solid_1, reached, origin_world, rotation_world_plane, polytope):
    """Volume and centroid (plane frame) of the overlap of two solids from those of their hulls'
    overlap (``polytope``): A n B = (H_A - P_A) n (H_B - P_B), with P the pockets (hull less
    mesh) and only the pockets the other hull reaches counted.

    Returns None when the pockets' parts may cut through the hulls' overlap somewhere (the
    footprint would then not be the hulls' overlap's): where they do over an area, their upward
    faces there lie on the overlap's upper faces and their downward faces on its lower ones, so
    it suffices that no upward triangle of theirs lying on the upper faces overlaps, seen along
    the normal, a downward one lying on the lower faces.
    """
    volume_m3, centroid_plane = polytope.volume_m3, polytope.centroid
    normals, offsets = polytope.equations[:, :3], polytope.equations[:, 3]
    up = normals[:, 2] > WALL_NORMAL_TOLERANCE
    down = normals[:, 2] < -WALL_NORMAL_TOLERANCE
    touch_m = POCKET_TOUCH_FRACTION * float(np.ptp(polytope.points, axis=0).max())
    plane_from_world = np.eye(4)
    plane_from_world[:3, :3] = rotation_world_plane.T
    plane_from_world[:3, 3] = -rotation_world_plane.T @ origin_world

    def in_plane(solid, what):
        return _frame_manifold(solid, what).transform((plane_from_world @ solid.T_world_frame)[:3, :])

    terms = []
    if reached[0]:
        terms.append((-1.0, in_plane(solid_0, "pockets") ^ in_plane(solid_1, "hull")))
    if reached[1]:
        terms.append((-1.0, in_plane(solid_1, "pockets") ^ in_plane(solid_0, "hull")))
    if reached[0] and reached[1]:
        terms.append((1.0, in_plane(solid_0, "pockets") ^ in_plane(solid_1, "pockets")))
    moment = volume_m3 * np.asarray(centroid_plane, dtype=float)
    on_top, on_bottom = [], []
    for sign, part in terms:
        if part.is_empty() or not part.volume() > 0.0:
            continue
        mesh = part.to_mesh64()
        vertices = np.asarray(mesh.vert_properties, dtype=np.float64)[:, :3]
        faces = np.asarray(mesh.tri_verts, dtype=np.int64).reshape(-1, 3)
        if sign < 0.0:
            top = _heights_over(vertices[:, :2], normals[up], offsets[up]).min(axis=1)
            bottom = _heights_over(vertices[:, :2], normals[down], offsets[down]).max(axis=1)
            corners_xy = vertices[faces][:, :, :2]
            facing = cross_2d(corners_xy[:, 1] - corners_xy[:, 0], corners_xy[:, 2] - corners_xy[:, 0])
            on_top.append(corners_xy[(facing > 0.0) & np.all((vertices[:, 2] >= top - touch_m)[faces], axis=1)])
            on_bottom.append(corners_xy[(facing < 0.0) & np.all((vertices[:, 2] <= bottom + touch_m)[faces], axis=1)])
        part_volume_m3, part_centroid = _volume_and_centroid_of(vertices, faces)
        volume_m3 += sign * part_volume_m3
        moment = moment + sign * part_volume_m3 * part_centroid
    if on_top and _any_overlap(np.concatenate(on_top), np.concatenate(on_bottom), touch_m):
        return None
    return volume_m3, (moment / volume_m3 if volume_m3 > 0.0 else moment)


def _any_overlap(triangles_a: np.ndarray, triangles_b: np.ndarray, margin_m: float) -> bool:
    """Whether a triangle of (A, 3, 2) and one of (B, 3, 2) overlap over an area (by more than
    ``margin_m`` across): no edge direction of either separates them (separating axes)."""
    if len(triangles_a) == 0 or len(triangles_b) == 0:
        return False
    pairs_a = np.repeat(triangles_a, len(triangles_b), axis=0)        # (P, 3, 2)
    pairs_b = np.tile(triangles_b, (len(triangles_a), 1, 1))
    edges = np.concatenate([np.roll(pairs_a, -1, axis=1) - pairs_a, np.roll(pairs_b, -1, axis=1) - pairs_b], axis=1)
    axes = np.stack([-edges[..., 1], edges[..., 0]], axis=-1)          # (P, 6, 2) edge normals
    axes /= np.maximum(np.linalg.norm(axes, axis=-1, keepdims=True), np.finfo(float).tiny)
    project_a = np.einsum("pkd,pad->pka", axes, pairs_a)              # (P, 6, 3)
    project_b = np.einsum("pkd,pbd->pkb", axes, pairs_b)
    separated = (project_a.max(axis=2) <= project_b.min(axis=2) + margin_m) | (
        project_b.max(axis=2) <= project_a.min(axis=2) + margin_m)
    return bool(np.any(~np.any(separated, axis=1)))


def _frame_manifold(solid: PreparedSolid, what: str) -> manifold3d.Manifold:
    """The solid's mesh, hull or pockets (hull less mesh) as a manifold3d solid in the frame it
    was prepared in, built once and kept in its ``frame_cache``."""
    cache = solid.frame_cache
    if what not in cache:
        if what == "mesh":
            cache[what] = _manifold_of(cache["vertices"], cache["faces"])
        elif what == "hull":
            used, faces = np.unique(solid.hull_faces, return_inverse=True)
            cache[what] = _manifold_of(cache["vertices"][used], faces.reshape(-1, 3))
        else:
            cache[what] = _frame_manifold(solid, "hull") - _frame_manifold(solid, "mesh")
    return cache[what]


def _manifold_of(vertices: np.ndarray, faces: np.ndarray) -> manifold3d.Manifold:
    vertices = np.array(vertices, dtype=np.float64, order="C").reshape(-1, 3)
    faces_u64 = np.array(faces, dtype=np.uint64, order="C").reshape(-1, 3)
    manifold = manifold3d.Manifold(manifold3d.Mesh64(vert_properties=vertices, tri_verts=faces_u64))
    if manifold.status() != manifold3d.Error.NoError:
        mesh64 = manifold3d.Mesh64(vert_properties=vertices, tri_verts=faces_u64)
        mesh64.merge()
        manifold = manifold3d.Manifold(mesh64)
    return manifold


def _is_flat(unit_normals: np.ndarray) -> bool:
    return bool(np.all(np.abs(unit_normals - unit_normals[0]) <= FLAT_NORMAL_TOLERANCE))


# ---------------------------------------------------------------------------------------------
# Any closed meshes: manifold3d


def _manifold_overlap(solid_0, solid_1, origin_world, rotation_world_plane) -> manifold3d.Manifold | None:
    """The intersection volume as a manifold3d solid in the plane frame, or None if empty."""
    solids = [_manifold_in_plane_frame(solid, origin_world, rotation_world_plane) for solid in (solid_0, solid_1)]
    overlap = manifold3d.Manifold.batch_boolean(solids, manifold3d.OpType.Intersect)
    if overlap.is_empty() or overlap.volume() <= 0.0:
        return None
    return overlap


def _manifold_in_plane_frame(solid: PreparedSolid, origin_world, rotation_world_plane) -> manifold3d.Manifold:
    plane_from_world = np.eye(4)
    plane_from_world[:3, :3] = rotation_world_plane.T
    plane_from_world[:3, 3] = -rotation_world_plane.T @ origin_world
    return _frame_manifold(solid, "mesh").transform((plane_from_world @ solid.T_world_frame)[:3, :])


def _manifold_surface(solid_0, solid_1, origin_world, rotation_world_plane, stiffness, plane_into_overlap):
    overlap = _manifold_overlap(solid_0, solid_1, origin_world, rotation_world_plane)
    if overlap is None:
        return None
    bounds = overlap.bounding_box()
    low, high = float(bounds[2]), float(bounds[5])
    if not low <= 0.0 <= high:
        if not plane_into_overlap:
            return None
        middle = 0.5 * (low + high)
        origin_world = origin_world + middle * rotation_world_plane[:, 2]
        overlap = overlap.translate((0.0, 0.0, -middle))
    footprint = overlap.project()
    if footprint.is_empty():
        return None
    points_plane, triangles = _triangulate_on_grid(footprint)
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
    volume_m3, centroid_plane = _volume_and_centroid(overlap)
    return patch_from_plane_frame(points_plane, triangles, np.maximum(thickness_m, 0.0) * stiffness, boundary_loops(triangles),
                  float(triangle_areas(points_plane, triangles).sum()), stiffness * volume_m3, centroid_plane[:2],
                  origin_world, rotation_world_plane)


def _volume_and_centroid(solid: manifold3d.Manifold) -> tuple[float, np.ndarray]:
    """Volume and volume centroid (3,) of a closed manifold3d solid, by its signed tetrahedra."""
    mesh = solid.to_mesh64()
    return _volume_and_centroid_of(np.asarray(mesh.vert_properties, dtype=np.float64)[:, :3],
                                   np.asarray(mesh.tri_verts, dtype=np.int64).reshape(-1, 3))


def _volume_and_centroid_of(vertices: np.ndarray, faces: np.ndarray) -> tuple[float, np.ndarray]:
    """Volume and volume centroid (3,) of a closed outward mesh, by its signed tetrahedra."""
    corners = vertices[faces]
    apex = vertices.mean(axis=0)
    volumes = np.linalg.det(corners - apex) / 6.0
    total = float(volumes.sum())
    centroid = (volumes[:, None] * (corners.sum(axis=1) + apex)).sum(axis=0) / (4.0 * total)
    return total, centroid


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


def plane_axes_world(normal_unit_world: np.ndarray) -> np.ndarray:
    """Return (3, 3) rotation_world_plane whose columns are the plane axes x, y, z in world.

    z is the normal; x is the world axis least aligned with it, made orthogonal. For an
    axis-aligned normal the frame is an exact signed permutation of the world axes, so boxes
    stay exact.
    """
    # Three floats: plain arithmetic (numpy's small-array calls cost more than the work here).
    nx, ny, nz = (float(v) for v in normal_unit_world)
    seed = min(range(3), key=lambda k: abs((nx, ny, nz)[k]))
    along = (nx, ny, nz)[seed]
    x_axis = [-along * nx, -along * ny, -along * nz]
    x_axis[seed] += 1.0
    length = math.sqrt(x_axis[0] ** 2 + x_axis[1] ** 2 + x_axis[2] ** 2)
    xx, xy, xz = x_axis[0] / length, x_axis[1] / length, x_axis[2] / length
    return np.array([[xx, ny * xz - nz * xy, nx],
                     [xy, nz * xx - nx * xz, ny],
                     [xz, nx * xy - ny * xx, nz]])

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
# The result


def patch_from_plane_frame(
    points_plane: np.ndarray,
    triangles: np.ndarray,
    pressure_pa: np.ndarray,
    outlines: tuple[np.ndarray, ...],
    area_m2: float,
    force_n: float,
    centroid_plane: np.ndarray,
    origin_world: np.ndarray,
    rotation_world_plane: np.ndarray,
) -> SurfacePatch:
    """A :class:`SurfacePatch` from a surface computed in the plane frame (plane z = 0).

    ``points_plane`` (V, 2) metres, ``triangles`` (T, 3) counter-clockwise about the normal,
    ``pressure_pa`` (V,), ``outlines`` closed loops of vertex indices, ``area_m2`` the footprint's
    area; ``origin_world`` (3,) the plane frame's origin and ``rotation_world_plane`` (3, 3) its
    axes (from :func:`plane_axes_world`).

    ``force_n`` is the integral of the pressure (stiffness times the overlap's volume) and
    ``centroid_plane`` (2,) its pressure-weighted centroid, the projection of the volume
    centroid. The moment about it of the normal pressure is zero.
    """
    axes_xy_world = rotation_world_plane[:, :2]
    normal_world = rotation_world_plane[:, 2]
    vertices_world = origin_world + points_plane @ axes_xy_world.T
    return SurfacePatch(
        vertices_world=vertices_world,
        triangles=np.ascontiguousarray(triangles, dtype=np.int64),
        pressure_pa=np.asarray(pressure_pa, dtype=np.float64),
        outlines=outlines,
        area_m2=float(area_m2),
        centroid_world=origin_world + axes_xy_world @ centroid_plane,
        force_world_n=-force_n * normal_world,
        moment_world_nm=np.zeros(3),
    )
