"""Analytic contact surfaces for primitive pairs pressed into a box face, where the closed form is exact.

Same model as :mod:`.contact_surface` (the footprint of the overlap on the contact plane, the
pressure a stiffness times the overlap's thickness along the normal), for the true primitives
rather than their tessellations:

* **box into box**, the two boxes' axes parallel and the normal along one of them: the overlap is
  a box, the footprint a rectangle, the thickness constant;
* **sphere into a box face**, the normal along the face normal, the part of the ball beyond the
  face inside the box's other faces: the overlap is a spherical cap (or a ball less a cap), the
  footprint a disc;
* **cylinder side-on into a box face**, its axis along a box axis parallel to the face: the
  overlap is a prism on a circular segment, the footprint a rectangle.

Force (stiffness times the overlap's volume), centroid (the projection of the volume centroid)
and area are the closed forms. The drawn triangles inscribe the footprint (a disc is drawn as a
polygon of ``DISC_RIM_VERTICES`` vertices) and carry the exact pressure at their vertices.

:func:`primitive_contact_surface` returns None when the pair is not one of these, or is one
but not in the configuration where the closed form holds; the caller then uses the mesh path.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.spatial import Delaunay

from my_collision_pkg.core.model.shapes import Box, Cylinder, Sphere
from my_collision_pkg.core.surfaces.contact_surface import SurfacePatch, patch_from_plane_frame, plane_axes_world

__all__ = ["ALIGNMENT_TOLERANCE", "DISC_RIM_VERTICES", "primitive_contact_surface"]

#: The contact normal and the box axes (and, for box pairs, the two boxes' axes; for a cylinder,
#: its axis and a box axis) must agree to this (sine of the angle) for a closed form to be used;
#: the surface's normal is then the box axis. The contact normals of these pairs are off the face
#: normal by a few 1e-9 (the depth solvers' rounding); tilting the projection by an angle a moves
#: the footprint's outline by a times the overlap's thickness (1e-8 m for 10 mm at 1e-6).
ALIGNMENT_TOLERANCE = 1e-6

#: A disc footprint is drawn as a polygon of this many vertices, with rings inside.
DISC_RIM_VERTICES = 64
DISC_RINGS = 8
#: A segment footprint is drawn with this many columns across its width.
SEGMENT_COLUMNS = 32


def primitive_contact_surface(
    spec_0, T_world_0: np.ndarray, spec_1, T_world_1: np.ndarray,
    plane_point_world: np.ndarray, normal_world: np.ndarray, stiffness_pa_per_m: float,
    *, plane_into_overlap: bool = False,
) -> SurfacePatch | None:
    """The analytic contact surface of two primitive shapes, or None where no closed form applies.

    Parameters
    ----------
    spec_0, spec_1 : shape specs (``core.model.shapes``) of bodies 0 and 1.
    T_world_0, T_world_1 : (4, 4) poses of the shapes in the world, metres.
    plane_point_world : (3,) a point of the contact plane, metres.
    normal_world : (3,) unit contact normal, from body 0 towards body 1.
    stiffness_pa_per_m : pressure per metre of thickness, positive.
    plane_into_overlap : a plane that misses the overlap is moved halfway through it (else None).
    """
    normal_world = np.asarray(normal_world, dtype=float)
    if isinstance(spec_1, Box) and not isinstance(spec_0, Box):
        patch = primitive_contact_surface(spec_1, T_world_1, spec_0, T_world_0, plane_point_world, -normal_world,
                                          stiffness_pa_per_m, plane_into_overlap=plane_into_overlap)
        return None if patch is None else _reversed(patch)
    if not isinstance(spec_0, Box):
        return None
    face = _box_face(spec_0, T_world_0, normal_world)
    if face is None:
        return None
    axis, sign = face
    # Work in the box's frame: the face is x[axis] = sign * half[axis], facing sign * e_axis.
    rotation_box = T_world_0[:3, :3]
    half = 0.5 * np.asarray(spec_0.size_m, dtype=float)
    T_box_other = np.linalg.inv(T_world_0) @ T_world_1
    if isinstance(spec_1, Box):
        result = _box_in_box(half, axis, sign, T_box_other, 0.5 * np.asarray(spec_1.size_m, dtype=float))
    elif isinstance(spec_1, Sphere):
        result = _round_in_face(half, axis, sign, T_box_other[:3, 3], float(spec_1.radius_m), None, 0.0)
    elif isinstance(spec_1, Cylinder):
        cylinder_axis = T_box_other[:3, 2]
        along = int(np.argmax(np.abs(cylinder_axis)))
        if along == axis or 1.0 - cylinder_axis[along] ** 2 > ALIGNMENT_TOLERANCE**2:
            return None
        result = _round_in_face(half, axis, sign, T_box_other[:3, 3], float(spec_1.radius_m), along,
                                0.5 * float(spec_1.length_m))
    else:
        return None
    if result is None:
        return None
    points_box, triangles, outline, template_axes, thickness_m, area_m2, volume_m3, centroid_box, (low, high) = result
    # The surface's normal is the face's outward normal, from body 0 (the box) towards body 1.
    normal_box = np.zeros(3)
    normal_box[axis] = sign
    normal_unit_world = rotation_box @ normal_box
    rotation_world_plane = plane_axes_world(normal_unit_world)
    origin_world = np.asarray(plane_point_world, dtype=float)
    height_m = float((origin_world - T_world_0[:3, 3]) @ normal_unit_world)   # of the plane, along the normal
    if not low <= height_m <= high:
        if not plane_into_overlap:
            return None
        origin_world = origin_world + (0.5 * (low + high) - height_m) * normal_unit_world
    to_world = lambda p: p @ rotation_box.T + T_world_0[:3, 3]   # noqa: E731
    axes_xy = rotation_world_plane[:, :2]
    points_plane = (to_world(points_box) - origin_world) @ axes_xy
    centroid_plane = (to_world(centroid_box) - origin_world) @ axes_xy
    # The templates wind counter-clockwise in their two box axes; the plane frame may mirror them.
    if np.linalg.det(axes_xy.T @ rotation_box[:, list(template_axes)]) < 0.0:
        triangles, outline = triangles[:, [0, 2, 1]], outline[::-1]
    return patch_from_plane_frame(points_plane, triangles, stiffness_pa_per_m * thickness_m,
                                  (np.ascontiguousarray(outline),), area_m2,
                                  stiffness_pa_per_m * volume_m3, centroid_plane, origin_world, rotation_world_plane)


def _box_face(spec: Box, T_world_box: np.ndarray, normal_world: np.ndarray) -> tuple[int, float] | None:
    """The box axis (0, 1, 2) and side (+1, -1) whose face the normal leaves by, if aligned."""
    normal_box = T_world_box[:3, :3].T @ normal_world
    axis = int(np.argmax(np.abs(normal_box)))
    if 1.0 - normal_box[axis] ** 2 > ALIGNMENT_TOLERANCE**2:      # the sine squared of the angle
        return None
    return axis, float(np.sign(normal_box[axis]))


def _box_in_box(half_0, axis, sign, T_box_other, half_1):
    """Overlap of box 0 (centred, axis-aligned) with a box whose axes are parallel to its own."""
    rotation = T_box_other[:3, :3]
    permutation = np.abs(rotation)
    if np.any(np.minimum(permutation, np.abs(permutation - 1.0)) > ALIGNMENT_TOLERANCE):
        return None
    extent_1 = permutation @ half_1
    centre_1 = T_box_other[:3, 3]
    lower = np.maximum(-half_0, centre_1 - extent_1)
    upper = np.minimum(half_0, centre_1 + extent_1)
    if np.any(upper <= lower):
        return None
    across = [k for k in range(3) if k != axis]
    corners = np.zeros((4, 3))
    corners[:, across[0]] = [lower[across[0]], upper[across[0]], upper[across[0]], lower[across[0]]]
    corners[:, across[1]] = [lower[across[1]], lower[across[1]], upper[across[1]], upper[across[1]]]
    corners[:, axis] = 0.5 * (lower[axis] + upper[axis])
    size = upper - lower
    thickness = np.full(4, size[axis])
    # the overlap's extent along the face normal (sign * x[axis]), from the box's centre
    heights = tuple(sorted([sign * lower[axis], sign * upper[axis]]))
    return (corners, np.array([[0, 1, 2], [0, 2, 3]]), np.array([0, 1, 2, 3, 0]), (across[0], across[1]), thickness,
            float(size[across[0]] * size[across[1]]), float(np.prod(size)), 0.5 * (lower + upper), heights)


def _round_in_face(half, axis, sign, centre, radius, along, half_length):
    """A sphere (``along`` None) or a cylinder with its axis along box axis ``along`` pressed into
    the face ``x[axis] = sign * half[axis]`` of a centred, axis-aligned box."""
    depth_axis_m = 2.0 * half[axis]
    height = sign * centre[axis] - half[axis]           # of the centre above the face
    if not -radius < height < radius or height - radius < -depth_axis_m:
        return None
    reach = np.sqrt(radius**2 - height**2) if height >= 0.0 else radius   # footprint half-width
    across = [k for k in range(3) if k != axis and k != along]
    if any(abs(centre[k]) + reach > half[k] for k in across):
        return None
    cap_m = radius - height                            # how far the body goes beyond the face
    if along is None:
        area = np.pi * reach**2
        volume = np.pi * cap_m**2 * (3.0 * radius - cap_m) / 3.0
        # the cap's centroid is on the line through the centre along the normal
        depth_of_centroid = 3.0 * (2.0 * radius - cap_m) ** 2 / (4.0 * (3.0 * radius - cap_m))
        offsets, triangles, outline = _disc_template()
        template_axes = (across[0], across[1])
        lateral = offsets * reach
        q = np.linalg.norm(lateral, axis=1)
        points = np.tile(centre, (len(lateral), 1))
        points[:, across[0]] += lateral[:, 0]
        points[:, across[1]] += lateral[:, 1]
        centroid = centre.copy()
    else:
        lower = max(-half[along], centre[along] - half_length)
        upper = min(half[along], centre[along] + half_length)
        if upper <= lower:
            return None
        length = upper - lower
        segment_area = radius**2 * np.arccos(np.clip(height / radius, -1.0, 1.0)) - height * np.sqrt(radius**2 - height**2)
        area = length * 2.0 * reach
        volume = length * segment_area
        fractions, along_ends, triangles, outline = _segment_template()
        q = reach * fractions
        points = np.tile(centre, (len(q), 1))
        points[:, across[0]] += q
        points[:, along] = np.where(along_ends, upper, lower)
        template_axes = (across[0], along)
        centroid = centre.copy()
        centroid[along] = 0.5 * (lower + upper)
        depth_of_centroid = None
    # Along a normal line at distance q from the axis the body spans heights height -+ s; the
    # part beyond the face (height <= 0) is the overlap.
    span = np.sqrt(np.maximum(radius**2 - q**2, 0.0))
    thickness = np.clip(np.minimum(0.0, height + span) - (height - span), 0.0, None)
    points[:, axis] = sign * half[axis]                # on the face (the plane is placed by the caller)
    if depth_of_centroid is not None:
        centroid[axis] = sign * (sign * centre[axis] - depth_of_centroid)
    else:
        centroid[axis] = sign * half[axis]
    # heights along the face's outward normal, from the box centre, that the overlap spans
    heights = (half[axis] + max(height - radius, -depth_axis_m), half[axis])
    return points, triangles, outline, template_axes, thickness, float(area), float(volume), centroid, heights


@lru_cache(maxsize=1)
def _disc_template() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A triangulated unit disc: offsets (V, 2) (the rim first, counter-clockwise), triangles
    (T, 3) counter-clockwise, and the rim as a closed loop. Rings of vertices at equal radial
    steps, each with fewer vertices towards the centre."""
    radii = np.linspace(1.0, 0.0, DISC_RINGS + 1)
    rings = []
    for k, radius in enumerate(radii[:-1]):
        count = max(6, int(round(DISC_RIM_VERTICES * radius)))
        angles = 2.0 * np.pi * (np.arange(count) + 0.5 * (k % 2)) / count
        rings.append(radius * np.column_stack([np.cos(angles), np.sin(angles)]))
    offsets = np.concatenate(rings + [np.zeros((1, 2))])
    triangles = _counter_clockwise(offsets, Delaunay(offsets).simplices.astype(np.int64))
    outline = np.append(np.arange(len(rings[0])), 0)
    for array in (offsets, triangles, outline):
        array.setflags(write=False)
    return offsets, triangles, outline


@lru_cache(maxsize=1)
def _segment_template() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A rectangle cut into ``SEGMENT_COLUMNS`` columns across (denser near the sides, where the
    thickness of a circular segment changes fastest): the across fraction (V,) in [-1, 1] and
    which end along the axis (V,) of each vertex, triangles (T, 3) counter-clockwise in
    (across, along), and the boundary as a closed loop."""
    columns = np.cos(np.linspace(np.pi, 0.0, SEGMENT_COLUMNS + 1))
    n = len(columns)
    fractions = np.concatenate([columns, columns[::-1]])          # low end left to right, then back
    ends = np.concatenate([np.zeros(n, dtype=bool), np.ones(n, dtype=bool)])
    first = np.arange(n - 1)
    triangles = np.concatenate([np.column_stack([first, first + 1, 2 * n - 2 - first]),
                                np.column_stack([first, 2 * n - 2 - first, 2 * n - 1 - first])])
    triangles = _counter_clockwise(np.column_stack([fractions, ends.astype(float)]), triangles)
    outline = np.append(np.arange(2 * n), 0)
    for array in (fractions, ends, triangles, outline):
        array.setflags(write=False)
    return fractions, ends, triangles, outline


def _counter_clockwise(points_plane: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    corners = points_plane[triangles]
    signed = ((corners[:, 1, 0] - corners[:, 0, 0]) * (corners[:, 2, 1] - corners[:, 0, 1])
              - (corners[:, 1, 1] - corners[:, 0, 1]) * (corners[:, 2, 0] - corners[:, 0, 0]))
    return np.where((signed < 0.0)[:, None], triangles[:, [0, 2, 1]], triangles)


def _reversed(patch: SurfacePatch) -> SurfacePatch:
    """The same surface seen from the other body: the force reversed, triangles rewound."""
    triangles = patch.triangles[:, [0, 2, 1]]
    outlines = tuple(loop[::-1].copy() for loop in patch.outlines)
    return SurfacePatch(patch.vertices_world, np.ascontiguousarray(triangles), patch.pressure_pa, outlines,
                        patch.area_m2, patch.centroid_world, -patch.force_world_n, -patch.moment_world_nm)
