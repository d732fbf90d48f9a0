"""Contact surfaces (my_collision_pkg.core.surfaces.contact_surface), checked against geometry whose answer is known.

The surface is the footprint of the overlap on the contact plane (its projection along the
normal), the pressure the stiffness times the overlap's thickness along the normal, so the force
is the stiffness times the overlap's volume. Tolerances, and why:

* Boxes are exact polyhedra: areas, pressures and forces are exact up to rounding (1e-9
  relative here; the manifold3d path rounds its footprint to float32, relative 6e-8: 1e-6).
* Forces of convex overlaps come from the volume of the overlap polytope (qhull), exact up to
  rounding: compared with manifold3d's own volume of the same boolean to ``VOLUME_RTOL`` (1e-9).
* Icospheres and 48-sided cylinders are polyhedra, not spheres and cylinders. Every vertex is on
  the true surface (radius R) and every face plane at least ``r_in`` (measured on the mesh) from
  the centre or axis, so the polyhedron lies between the solids of radius ``r_in`` and ``R``:
  areas and volumes are checked to lie between the analytic values for those two: a bracket,
  not a guessed tolerance. The analytic surfaces of the true primitives
  (``primitive_surfaces``, through ``explanation_surfaces``) are checked against the closed
  forms to 1e-9.
* The manifold3d path (non-convex overlaps) draws a refined triangulation; its force is still
  the exact volume; the integral of the drawn pressure is within ``REFINED_RTOL`` of it.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import sys
import sysconfig

import manifold3d
import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.errors import CollisionPkgError
from my_collision_pkg.core.surfaces.contact_surface import (
    REFINE_RELATIVE_TOLERANCE,
    ContactSurfaceError,
    SurfacePatch,
    compute_contact_surface,
    contact_surface_of_solids,
    prepared_solid,
)

STIFFNESS_PA_PER_M = 2.0e6
EXACT_RTOL = 1e-6
VOLUME_RTOL = 1e-9
REFINED_RTOL = 0.01
assert REFINED_RTOL >= 3.0 * REFINE_RELATIVE_TOLERANCE
ON_PLANE_ATOL_M = 1e-9
PANDA_COLLISION_MESHES = (
    pathlib.Path(sysconfig.get_paths()["purelib"])
    / "cmeel.prefix/share/example-robot-data/robots/panda_description/meshes/collision"
)


# ---------------------------------------------------------------------------------------------
# Helpers


def box(extents_m, centre_m=(0.0, 0.0, 0.0), rotation=None) -> trimesh.Trimesh:
    mesh = trimesh.creation.box(extents=extents_m)
    if rotation is not None:
        transform = np.eye(4)
        transform[:3, :3] = rotation
        mesh.apply_transform(transform)
    mesh.apply_translation(centre_m)
    return mesh


def icosphere(radius_m: float, centre_m, subdivisions: int = 4) -> trimesh.Trimesh:
    mesh = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius_m)
    mesh.apply_translation(centre_m)
    return mesh


def inscribed_radius(mesh: trimesh.Trimesh, centre_m) -> float:
    """Smallest distance from ``centre_m`` to a face plane: the mesh contains that ball."""
    offsets = mesh.triangles[:, 0] - np.asarray(centre_m)
    return float(np.min(np.abs(np.einsum("ij,ij->i", offsets, mesh.face_normals))))


def to_manifold(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    return manifold3d.Manifold(
        manifold3d.Mesh64(
            vert_properties=np.ascontiguousarray(mesh.vertices, dtype=np.float64),
            tri_verts=np.ascontiguousarray(mesh.faces, dtype=np.uint64),
        )
    )


def overlap_volume_m3(mesh_0: trimesh.Trimesh, mesh_1: trimesh.Trimesh) -> float:
    return (to_manifold(mesh_0) ^ to_manifold(mesh_1)).volume()


def plane_frame(normal_world) -> np.ndarray:
    """Some rotation whose third column is the normal (for building expected prisms)."""
    normal = np.asarray(normal_world, dtype=float)
    helper = np.eye(3)[int(np.argmin(np.abs(normal)))]
    x_axis = np.cross(helper, normal)
    x_axis /= np.linalg.norm(x_axis)
    return np.column_stack([x_axis, np.cross(normal, x_axis), normal])


def volume_over_patch_m3(mesh_0, mesh_1, patch: SurfacePatch, point_world, normal_world) -> float:
    """Volume of the overlap that lies on normal lines through the patch, by manifold3d.

    The patch is extruded along the normal into a prism that spans the overlap, and intersected
    with it. Whatever the shapes, the integral of the thickness over the patch equals this.
    """
    rotation = plane_frame(normal_world)
    points_plane = (patch.vertices_world - point_world) @ rotation
    loops = [points_plane[loop[:-1], :2] for loop in patch.outlines]
    section = manifold3d.CrossSection(loops)
    overlap = to_manifold(mesh_0) ^ to_manifold(mesh_1)
    plane_from_world = np.column_stack([rotation.T, -rotation.T @ np.asarray(point_world)])  # 3x4
    overlap_plane = overlap.transform(plane_from_world)
    bounds = overlap_plane.bounding_box()  # min x, y, z, max x, y, z
    lower_z, upper_z = bounds[2] - 1.0, bounds[5] + 1.0
    prism = manifold3d.Manifold.extrude(section, upper_z - lower_z).translate((0.0, 0.0, lower_z))
    return (overlap_plane ^ prism).volume()


def mirrored(mesh: trimesh.Trimesh, point_world, normal_world) -> trimesh.Trimesh:
    """The mirror image of a mesh in a plane, with its faces rewound to stay outward."""
    normal = np.asarray(normal_world, dtype=float)
    offsets = (mesh.vertices - point_world) @ normal
    vertices = mesh.vertices - 2.0 * offsets[:, None] * normal
    return trimesh.Trimesh(vertices=vertices, faces=mesh.faces[:, ::-1], process=False)


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    quaternion = rng.normal(size=4)
    return trimesh.transformations.quaternion_matrix(quaternion / np.linalg.norm(quaternion))[:3, :3]


def assert_well_formed(patch: SurfacePatch, point_world, normal_world) -> None:
    """Shape, plane, winding, loop and sign invariants every patch must satisfy."""
    normal = np.asarray(normal_world, dtype=float)
    vertex_count = len(patch.vertices_world)
    assert patch.vertices_world.shape == (vertex_count, 3)
    assert patch.triangles.dtype == np.int64 and patch.triangles.shape[1] == 3
    assert patch.triangles.min() >= 0 and patch.triangles.max() < vertex_count
    assert patch.pressure_pa.shape == (vertex_count,)
    assert np.all(patch.pressure_pa >= 0.0)
    np.testing.assert_allclose(
        (patch.vertices_world - point_world) @ normal, 0.0, atol=ON_PLANE_ATOL_M
    )
    corners = patch.vertices_world[patch.triangles]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    assert np.all(normals @ normal > 0.0), "triangles must wind counter-clockwise about the normal"
    np.testing.assert_allclose(0.5 * np.linalg.norm(normals, axis=1).sum(), patch.area_m2, rtol=1e-12)
    for loop in patch.outlines:
        assert loop.dtype == np.int64 and len(loop) >= 4 and loop[0] == loop[-1]
    boundary_vertices = np.unique(np.concatenate([loop[:-1] for loop in patch.outlines]))
    assert len(boundary_vertices) == sum(len(loop) - 1 for loop in patch.outlines)
    # outer loops counter-clockwise, holes clockwise: their signed areas add up to the area
    enclosed_m2 = sum(signed_area_about(patch.vertices_world[loop], normal) for loop in patch.outlines)
    assert enclosed_m2 == pytest.approx(patch.area_m2, rel=1e-9)
    force_along_normal = patch.force_world_n @ normal
    assert force_along_normal <= 0.0, "the force on body 0 points from body 1 towards body 0"
    np.testing.assert_allclose(
        np.cross(patch.force_world_n, normal), 0.0, atol=1e-12 * max(1.0, abs(force_along_normal))
    )
    np.testing.assert_allclose((patch.centroid_world - point_world) @ normal, 0.0, atol=ON_PLANE_ATOL_M)


def drawn_force_n(patch: SurfacePatch) -> float:
    """Integral of the linearly interpolated vertex pressures over the triangles."""
    corners = patch.vertices_world[patch.triangles]
    areas = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    return float((areas * patch.pressure_pa[patch.triangles].mean(axis=1)).sum())


def signed_area_about(loop_points_world: np.ndarray, normal_world) -> float:
    """Signed area of a closed loop (last point = first) seen from the tip of the normal."""
    cross = np.cross(loop_points_world[:-1], loop_points_world[1:]).sum(axis=0)
    return 0.5 * float(cross @ np.asarray(normal_world, dtype=float))


# ---------------------------------------------------------------------------------------------
# Boxes: everything exact


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_overlapping_boxes_give_the_overlap_rectangle(axis, sign):
    # Body 0 spans [-0.1, 0.1] on every axis; body 1 is shifted by 0.17 m along the normal and a
    # little sideways, so the overlap is 0.03 m deep and 0.15 x 0.17 m across.
    normal = np.zeros(3)
    normal[axis] = sign
    sideways = np.roll(np.array([0.0, 0.05, 0.03]), axis)
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=0.17 * normal + sideways)
    depth_m = 0.03
    point = 0.085 * normal  # midpoint of the witness points on the two faces
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)

    assert patch is not None
    assert_well_formed(patch, point, normal)
    assert patch.area_m2 == pytest.approx(0.15 * 0.17, rel=EXACT_RTOL)
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * depth_m, rtol=EXACT_RTOL)
    volume_m3 = 0.15 * 0.17 * depth_m
    assert overlap_volume_m3(body_0, body_1) == pytest.approx(volume_m3, rel=1e-12)
    np.testing.assert_allclose(
        patch.force_world_n, -STIFFNESS_PA_PER_M * volume_m3 * normal, rtol=EXACT_RTOL, atol=1e-9
    )
    rectangle_centre = point + 0.5 * sideways  # the overlap spans [s - 0.1, 0.1] sideways
    np.testing.assert_allclose(patch.centroid_world, rectangle_centre, atol=1e-8)
    moment_scale_nm = np.linalg.norm(patch.force_world_n) * 0.2
    np.testing.assert_allclose(patch.moment_world_nm, 0.0, atol=1e-12 * moment_scale_nm)

    # One outline, counter-clockwise about the normal, around the rectangle.
    assert len(patch.outlines) == 1
    loop_points = patch.vertices_world[patch.outlines[0]]
    assert signed_area_about(loop_points, normal) == pytest.approx(patch.area_m2, rel=1e-12)


def test_rectangle_vertices_lie_in_the_overlap_rectangle():
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=(0.05, 0.03, 0.17))
    point, normal = np.array([0.0, 0.0, 0.085]), np.array([0.0, 0.0, 1.0])
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    lower, upper = np.array([-0.05, -0.07]), np.array([0.1, 0.1])
    xy = patch.vertices_world[:, :2]
    assert np.all(xy >= lower - 1e-8) and np.all(xy <= upper + 1e-8)
    for corner in [lower, upper, [lower[0], upper[1]], [upper[0], lower[1]]]:
        assert np.min(np.linalg.norm(xy - corner, axis=1)) < 1e-8


def test_a_small_overlap_keeps_its_outline_to_the_rounding_of_the_section():
    # 10 um deep, 10 mm x 0.1 mm across; the section is rounded to about 1e-8 m.
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=(0.19, 0.1999, 0.2 - 1e-5))
    point, normal = np.array([0.095, 0.1, 0.1 - 5e-6]), np.array([0.0, 0.0, 1.0])
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)
    perimeter_m, area_m2 = 2 * (0.01 + 1e-4), 0.01 * 1e-4
    rounding_m = 1e-8 + 6e-8 * 0.005
    assert abs(patch.area_m2 - area_m2) <= perimeter_m * rounding_m
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * 1e-5, rtol=1e-6)


def test_far_from_the_origin_nothing_is_lost():
    offset = np.array([120.0, -75.0, 30.0])
    body_0 = box((0.2, 0.2, 0.2), centre_m=offset)
    body_1 = box((0.2, 0.2, 0.2), centre_m=offset + (0.05, 0.03, 0.17))
    point, normal = offset + (0.0, 0.0, 0.085), np.array([0.0, 0.0, 1.0])
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)
    assert patch.area_m2 == pytest.approx(0.15 * 0.17, rel=EXACT_RTOL)
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * 0.03, rtol=EXACT_RTOL)


def test_rotated_boxes_with_the_normal_along_a_face_normal_are_exact():
    rotation = random_rotation(np.random.default_rng(3))
    body_0 = box((0.2, 0.2, 0.2), rotation=rotation)
    body_1 = box((0.2, 0.2, 0.2), rotation=rotation, centre_m=rotation @ (0.05, 0.03, 0.17))
    point, normal = rotation @ (0.0, 0.0, 0.085), rotation @ (0.0, 0.0, 1.0)
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)
    assert patch.area_m2 == pytest.approx(0.15 * 0.17, rel=EXACT_RTOL)
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * 0.03, rtol=EXACT_RTOL)
    assert -patch.force_world_n @ normal == pytest.approx(
        STIFFNESS_PA_PER_M * 0.15 * 0.17 * 0.03, rel=EXACT_RTOL
    )


def test_swapping_the_bodies_reverses_the_force():
    body_0 = box((0.2, 0.2, 0.2))
    turn = trimesh.transformations.rotation_matrix(0.3, [0, 0, 1])[:3, :3]
    body_1 = box((0.2, 0.3, 0.2), centre_m=(0.02, 0.0, 0.15), rotation=turn)
    point, normal = np.array([0.0, 0.0, 0.075]), np.array([0.0, 0.0, 1.0])
    forward = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    backward = compute_contact_surface(body_1, body_0, point, -normal, STIFFNESS_PA_PER_M)
    assert backward.area_m2 == pytest.approx(forward.area_m2, rel=EXACT_RTOL)
    np.testing.assert_allclose(backward.force_world_n, -forward.force_world_n, rtol=EXACT_RTOL)
    np.testing.assert_allclose(backward.centroid_world, forward.centroid_world, atol=1e-8)


def test_a_hole_in_the_overlap_gives_an_inner_clockwise_outline():
    # A square tube (0.2 m outside, 0.1 m inside, along z) dipped into a slab: the cut is a
    # square ring with a constant thickness.
    outside = manifold3d.Manifold.cube((0.2, 0.2, 0.4), True)
    tube = outside - manifold3d.Manifold.cube((0.1, 0.1, 0.6), True)
    tube_mesh = tube.to_mesh64()
    body_0 = trimesh.Trimesh(
        vertices=np.asarray(tube_mesh.vert_properties)[:, :3],
        faces=np.asarray(tube_mesh.tri_verts),
        process=False,
    )
    body_1 = box((1.0, 1.0, 0.2), centre_m=(0.0, 0.0, 0.27))  # overlaps z in [0.17, 0.2]
    point, normal = np.array([0.0, 0.0, 0.185]), np.array([0.0, 0.0, 1.0])
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)

    assert_well_formed(patch, point, normal)
    assert patch.area_m2 == pytest.approx(0.2**2 - 0.1**2, rel=EXACT_RTOL)
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * 0.03, rtol=EXACT_RTOL)
    areas = sorted(signed_area_about(patch.vertices_world[loop], normal) for loop in patch.outlines)
    np.testing.assert_allclose(areas, [-(0.1**2), 0.2**2], rtol=EXACT_RTOL)
    np.testing.assert_allclose(patch.centroid_world, point, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# Spheres: brackets from the polyhedron


def lens_volume_m3(radius_m: float, centre_distance_m: float) -> float:
    """Volume of the overlap of two balls of equal radius."""
    if centre_distance_m >= 2.0 * radius_m:
        return 0.0
    return np.pi * (4.0 * radius_m + centre_distance_m) * (2.0 * radius_m - centre_distance_m) ** 2 / 12.0


@pytest.mark.parametrize("subdivisions", [3, 4])
def test_two_spheres_give_the_disc_geometry_predicts(subdivisions):
    rng = np.random.default_rng(7 + subdivisions)
    radius_m, distance_m = 0.08, 0.1
    normal = rng.normal(size=3)
    normal /= np.linalg.norm(normal)
    centre_0 = np.array([0.3, -0.2, 0.5])
    centre_1 = centre_0 + distance_m * normal
    body_0 = icosphere(radius_m, centre_0, subdivisions)
    body_1 = icosphere(radius_m, centre_1, subdivisions)
    # The deepest points are on the line of centres; their midpoint is halfway.
    point = 0.5 * (centre_0 + centre_1)
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)

    half_m = 0.5 * distance_m
    r_in = inscribed_radius(body_0, centre_0)
    assert radius_m * 0.99 < r_in < radius_m  # the tessellation is fine enough to be a sphere
    disc_outer_m = np.sqrt(radius_m**2 - half_m**2)
    disc_inner_m = np.sqrt(r_in**2 - half_m**2)
    # Every vertex is inside the outer disc; the outline runs between the two discs.
    radii = np.linalg.norm(patch.vertices_world - point, axis=1)
    assert radii.max() <= disc_outer_m + 1e-7
    outline_radii = radii[np.concatenate([loop for loop in patch.outlines])]
    assert outline_radii.min() >= disc_inner_m - 1e-7
    assert np.pi * disc_inner_m**2 <= patch.area_m2 <= np.pi * disc_outer_m**2
    assert len(patch.outlines) == 1

    # The overlap is mirror-symmetric about the plane and convex, so every normal line through it
    # crosses the plane inside the patch, once: the force is stiffness times its whole volume.
    volume_m3 = overlap_volume_m3(body_0, body_1)
    assert lens_volume_m3(r_in, distance_m) <= volume_m3 <= lens_volume_m3(radius_m, distance_m)
    force_n = -patch.force_world_n @ normal
    assert force_n == pytest.approx(STIFFNESS_PA_PER_M * volume_m3, rel=VOLUME_RTOL)
    # Symmetry puts the centroid on the line of centres; no moment about it.
    np.testing.assert_allclose(patch.centroid_world, point, atol=1e-3 * disc_outer_m)
    np.testing.assert_allclose(patch.moment_world_nm, 0.0, atol=1e-9 * force_n * radius_m)
    # The deepest point of the lens is on the line of centres: 2 * (R - d/2) thick.
    assert patch.pressure_pa.max() <= STIFFNESS_PA_PER_M * 2.0 * (radius_m - half_m) * (1 + 1e-9)
    assert patch.pressure_pa.max() >= STIFFNESS_PA_PER_M * 2.0 * (r_in - half_m)


def cap_volume_m3(ball_radius_m: float, centre_height_m: float) -> float:
    """Volume of the part of a ball of radius rho below the plane z = 0, its centre at height c."""
    cap_m = ball_radius_m - centre_height_m
    return np.pi * cap_m**2 * (3.0 * ball_radius_m - cap_m) / 3.0


def test_sphere_against_a_box_face():
    radius_m, depth_m = 0.05, 0.012
    centre = np.array([0.01, -0.02, radius_m - depth_m])  # the box's top face is z = 0
    sphere = icosphere(radius_m, centre, subdivisions=4)
    block = box((0.4, 0.4, 0.2), centre_m=(0.0, 0.0, -0.1))
    # Witness points: the sphere's lowest point and its projection on the face.
    point = np.array([centre[0], centre[1], -0.5 * depth_m])
    normal = np.array([0.0, 0.0, 1.0])  # from the box (body 0) to the sphere (body 1)
    patch = compute_contact_surface(block, sphere, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)

    # The footprint of the cap is its base on the face: the disc of radius a, a^2 = rho^2 - c^2,
    # bracketed by the inscribed and circumscribed balls; the mid-plane's section (smaller) is not it.
    r_in = inscribed_radius(sphere, centre)
    c = centre[2]
    disc_outer_m = np.sqrt(radius_m**2 - c**2)
    disc_inner_m = np.sqrt(r_in**2 - c**2)
    assert np.pi * disc_inner_m**2 <= patch.area_m2 <= np.pi * disc_outer_m**2
    section_m = np.sqrt(radius_m**2 - (c + 0.5 * depth_m) ** 2)
    assert patch.area_m2 > 1.5 * np.pi * section_m**2
    radii = np.linalg.norm(patch.vertices_world - point, axis=1)
    assert radii.max() <= disc_outer_m + 1e-9

    # The force is the stiffness times the cap's volume, bracketed by the two balls' caps, and
    # exactly (to rounding) the volume manifold3d finds for the mesh overlap.
    force_n = -patch.force_world_n @ normal
    volume_m3 = overlap_volume_m3(block, sphere)
    assert force_n == pytest.approx(STIFFNESS_PA_PER_M * volume_m3, rel=VOLUME_RTOL)
    assert STIFFNESS_PA_PER_M * cap_volume_m3(r_in, c) <= force_n <= STIFFNESS_PA_PER_M * cap_volume_m3(radius_m, c)
    # The top of the overlap is the face (one plane): the drawn pressure is the exact field, its
    # integral the force; at the centre it is the depth, on the rim zero.
    assert drawn_force_n(patch) == pytest.approx(force_n, rel=1e-9)
    assert patch.pressure_pa.max() == pytest.approx(STIFFNESS_PA_PER_M * depth_m, rel=1e-3)
    rim = np.concatenate([loop for loop in patch.outlines])
    assert np.all(patch.pressure_pa[rim] <= STIFFNESS_PA_PER_M * 1e-9)
    np.testing.assert_allclose(patch.centroid_world, point, atol=1e-3 * disc_outer_m)


# ---------------------------------------------------------------------------------------------
# The force invariant on random shapes


def random_convex_body(rng: np.random.Generator, kind: str) -> trimesh.Trimesh:
    if kind == "hull":
        points = rng.normal(size=(40, 3)) * rng.uniform(0.03, 0.08, size=3)
        return trimesh.convex.convex_hull(points)
    return box(rng.uniform(0.05, 0.15, size=3), rotation=random_rotation(rng))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["hull", "box"])
def test_force_is_stiffness_times_volume_for_a_mirrored_convex_body(seed, kind):
    # A convex body and its mirror image in a random plane that cuts it: their overlap is convex
    # and symmetric about that plane, its footprint the section by the plane.
    rng = np.random.default_rng(seed)
    body_0 = random_convex_body(rng, kind)
    normal = rng.normal(size=3)
    normal /= np.linalg.norm(normal)
    heights = body_0.vertices @ normal
    # A convex body's centroid is at least a quarter of its width from any supporting plane, so
    # a plane within a fifth of the width above it cuts the body.
    point = body_0.centroid + rng.uniform(0.05, 0.2) * (heights.max() - heights.min()) * normal
    body_1 = mirrored(body_0, point, normal)
    volume_m3 = overlap_volume_m3(body_0, body_1)
    assert volume_m3 > 0.0

    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)
    force_n = -patch.force_world_n @ normal
    assert force_n == pytest.approx(STIFFNESS_PA_PER_M * volume_m3, rel=VOLUME_RTOL)
    section = to_manifold(body_0).transform(
        np.column_stack([plane_frame(normal).T, -plane_frame(normal).T @ point])).slice(0.0)
    assert patch.area_m2 == pytest.approx(section.area(), rel=1e-6)
    np.testing.assert_allclose(patch.moment_world_nm, 0.0, atol=1e-12 * force_n)


@pytest.mark.parametrize("seed", range(6))
def test_force_is_stiffness_times_the_volume_and_area_the_projection_for_any_plane(seed):
    # Without symmetry the footprint is wider than any section; the force is still the
    # stiffness times the overlap's volume, the area that of manifold3d's projection of it, and
    # the centroid the projection of its volume centroid.
    rng = np.random.default_rng(100 + seed)
    body_0 = random_convex_body(rng, "hull")
    body_1 = random_convex_body(rng, "box" if seed % 2 else "hull")
    body_1.apply_translation(rng.normal(size=3) * 0.02)
    overlap = to_manifold(body_0) ^ to_manifold(body_1)
    assert overlap.volume() > 0.0
    normal = rng.normal(size=3)
    normal /= np.linalg.norm(normal)
    point = np.asarray(overlap.to_mesh64().vert_properties)[:, :3].mean(axis=0)
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    assert_well_formed(patch, point, normal)
    force_n = -patch.force_world_n @ normal
    assert force_n == pytest.approx(STIFFNESS_PA_PER_M * overlap.volume(), rel=VOLUME_RTOL)
    rotation = plane_frame(normal)
    overlap_plane = overlap.transform(np.column_stack([rotation.T, -rotation.T @ point]))
    assert patch.area_m2 == pytest.approx(overlap_plane.project().area(), rel=1e-6)
    overlap_mesh = trimesh.Trimesh(np.asarray(overlap.to_mesh64().vert_properties)[:, :3],
                                   np.asarray(overlap.to_mesh64().tri_verts))
    expected_centroid = overlap_mesh.center_mass - ((overlap_mesh.center_mass - point) @ normal) * normal
    np.testing.assert_allclose(patch.centroid_world, expected_centroid, atol=1e-9)
    # The drawn field is the thickness at the vertices: every vertex's pressure is the ray cast's.
    boundary = np.concatenate([loop for loop in patch.outlines])
    interior = np.setdiff1d(np.arange(len(patch.vertices_world)), boundary)
    expected_m = ray_cast_thickness_m(body_0, body_1, patch.vertices_world[interior], normal)
    np.testing.assert_allclose(patch.pressure_pa[interior] / STIFFNESS_PA_PER_M, expected_m, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# No surface


def test_separated_bodies_have_no_surface():
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=(0.0, 0.0, 0.25))
    assert compute_contact_surface(body_0, body_1, [0, 0, 0.1], [0, 0, 1.0], STIFFNESS_PA_PER_M) is None


def test_touching_bodies_have_no_surface():
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=(0.0, 0.0, 0.2))
    assert compute_contact_surface(body_0, body_1, [0, 0, 0.1], [0, 0, 1.0], STIFFNESS_PA_PER_M) is None


@pytest.mark.parametrize("plane_height_m", [0.05, 0.15, -1.0])
def test_a_plane_that_misses_the_overlap_has_no_surface(plane_height_m):
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=(0.0, 0.0, 0.17))  # overlap z in [0.07, 0.1]
    patch = compute_contact_surface(
        body_0, body_1, [0.0, 0.0, plane_height_m], [0, 0, 1.0], STIFFNESS_PA_PER_M
    )
    assert patch is None


def test_a_plane_beside_the_overlap_has_no_surface():
    body_0 = box((0.2, 0.2, 0.2))
    body_1 = box((0.2, 0.2, 0.2), centre_m=(0.0, 0.0, 0.17))
    # The overlap spans x in [-0.1, 0.1]; a plane x = 0.2 misses it.
    patch = compute_contact_surface(body_0, body_1, [0.2, 0, 0.085], [1.0, 0, 0], STIFFNESS_PA_PER_M)
    assert patch is None


# ---------------------------------------------------------------------------------------------
# Bad input


def open_box() -> trimesh.Trimesh:
    mesh = box((0.2, 0.2, 0.2))
    return trimesh.Trimesh(vertices=mesh.vertices, faces=mesh.faces[:-2], process=False)


OVERLAPPING = (box((0.2, 0.2, 0.2)), box((0.2, 0.2, 0.2), centre_m=(0.0, 0.0, 0.17)))
GOOD_POINT = np.array([0.0, 0.0, 0.085])
GOOD_NORMAL = np.array([0.0, 0.0, 1.0])


@pytest.mark.parametrize(
    "normal, message",
    [
        ([0.0, 0.0, 0.0], "normal_world must be a unit vector"),
        ([0.0, 0.0, 2.0], "normal_world must be a unit vector"),
        ([0.0, 0.6, 0.6], "normal_world must be a unit vector"),
        ([0.0, np.nan, 1.0], "normal_world must be a finite 3-vector"),
        ([0.0, 1.0], "normal_world must be a finite 3-vector"),
    ],
)
def test_a_bad_normal_is_refused(normal, message):
    with pytest.raises(ContactSurfaceError, match=message):
        compute_contact_surface(*OVERLAPPING, GOOD_POINT, normal, STIFFNESS_PA_PER_M)


@pytest.mark.parametrize("stiffness", [0.0, -1.0, np.inf, np.nan, "stiff", None])
def test_a_bad_stiffness_is_refused(stiffness):
    with pytest.raises(ContactSurfaceError, match="stiffness_pa_per_m must be"):
        compute_contact_surface(*OVERLAPPING, GOOD_POINT, GOOD_NORMAL, stiffness)


@pytest.mark.parametrize("point", [[0.0, np.inf, 0.0], [0.0, 0.0], "here"])
def test_a_bad_plane_point_is_refused(point):
    with pytest.raises(ContactSurfaceError, match="plane_point_world must be a finite 3-vector"):
        compute_contact_surface(*OVERLAPPING, point, GOOD_NORMAL, STIFFNESS_PA_PER_M)


def test_an_open_mesh_is_refused_naming_the_body():
    body_0, body_1 = OVERLAPPING
    with pytest.raises(ContactSurfaceError, match="mesh_1_world does not bound a volume"):
        compute_contact_surface(body_0, open_box(), GOOD_POINT, GOOD_NORMAL, STIFFNESS_PA_PER_M)
    with pytest.raises(ContactSurfaceError, match="mesh_0_world does not bound a volume"):
        compute_contact_surface(open_box(), body_1, GOOD_POINT, GOOD_NORMAL, STIFFNESS_PA_PER_M)


def test_other_bad_meshes_are_refused_naming_the_body():
    body_0, body_1 = OVERLAPPING
    flat = trimesh.Trimesh(
        vertices=[[0, 0, 0], [1, 0, 0], [0, 1, 0]], faces=[[0, 1, 2], [0, 2, 1]], process=False
    )
    non_finite = body_1.copy()
    non_finite.vertices[0, 0] = np.nan
    cases = [
        ("a box", "mesh_1_world must be a trimesh.Trimesh"),
        (trimesh.Trimesh(), "mesh_1_world is empty"),
        (non_finite, "mesh_1_world has non-finite vertex coordinates"),
        (flat, "mesh_1_world"),
    ]
    for mesh_1, message in cases:
        with pytest.raises(ContactSurfaceError, match=message):
            compute_contact_surface(body_0, mesh_1, GOOD_POINT, GOOD_NORMAL, STIFFNESS_PA_PER_M)


def test_the_error_is_a_value_error_in_the_core_hierarchy():
    assert issubclass(ContactSurfaceError, ValueError)
    assert issubclass(ContactSurfaceError, CollisionPkgError)


def test_unmerged_and_inside_out_meshes_are_repaired():
    body_0, body_1 = OVERLAPPING
    reference = compute_contact_surface(body_0, body_1, GOOD_POINT, GOOD_NORMAL, STIFFNESS_PA_PER_M)
    # An STL-like triangle soup: every face has its own three vertices.
    soup = trimesh.Trimesh(
        vertices=body_1.vertices[body_1.faces].reshape(-1, 3),
        faces=np.arange(3 * len(body_1.faces)).reshape(-1, 3),
        process=False,
    )
    inside_out = trimesh.Trimesh(vertices=body_0.vertices, faces=body_0.faces[:, ::-1], process=False)
    for mesh_0, mesh_1 in [(body_0, soup), (inside_out, body_1)]:
        patch = compute_contact_surface(mesh_0, mesh_1, GOOD_POINT, GOOD_NORMAL, STIFFNESS_PA_PER_M)
        assert patch.area_m2 == pytest.approx(reference.area_m2, rel=1e-12)
        np.testing.assert_allclose(patch.force_world_n, reference.force_world_n, rtol=1e-12)


def test_the_patch_is_immutable():
    patch = compute_contact_surface(*OVERLAPPING, GOOD_POINT, GOOD_NORMAL, STIFFNESS_PA_PER_M)
    with pytest.raises(dataclasses.FrozenInstanceError):
        patch.area_m2 = 0.0


def test_the_module_imports_no_ros():
    import my_collision_pkg

    code = (
        "import sys, my_collision_pkg.core.surfaces.contact_surface\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('rclpy', 'geometry_msgs', "
        "'visualization_msgs') or m.startswith('my_collision_pkg.msg')]\n"
        "assert not bad, bad\n"
    )
    package_parent = str(pathlib.Path(my_collision_pkg.__file__).resolve().parent.parent)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [package_parent] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=environment)


# ---------------------------------------------------------------------------------------------
# Real meshes: two Panda links


def panda_link(name: str) -> trimesh.Trimesh:
    path = PANDA_COLLISION_MESHES / f"{name}.stl"
    if not path.exists():
        pytest.skip(f"example-robot-data Panda meshes not installed ({path})")
    return trimesh.load(path, force="mesh")


def ray_cast_thickness_m(mesh_0, mesh_1, points_world, normal_world) -> np.ndarray:
    """Total length of the normal line through each point inside the overlap, by manifold3d."""
    overlap = to_manifold(mesh_0) ^ to_manifold(mesh_1)
    reach_m = 10.0 * float(np.ptp(np.asarray(overlap.to_mesh64().vert_properties)[:, :3], axis=0).max())
    normal = np.asarray(normal_world, dtype=float)
    lengths = []
    for point in points_world:
        hits = overlap.ray_cast(tuple(point - reach_m * normal), tuple(point + reach_m * normal))
        heights = np.array([np.dot(np.asarray(hit.position) - point, normal) for hit in hits])
        facing = np.sign([np.dot(hit.normal, normal) for hit in hits])
        lengths.append(float(np.sum(facing * heights)) if len(hits) else 0.0)
    return np.array(lengths)


PANDA_POSES = [
    # (link 0, link 1, rotation of link 1 about x, y, z in radians, offset of its centroid, normal)
    ("link3", "link4", (0.0, 0.0, 0.0), (0.0, 0.0, 0.08), (0.0, 0.0, 1.0)),
    ("link1", "link2", (0.4, -0.2, 0.3), (0.03, 0.02, 0.06), (0.3, 0.2, 0.9)),
    ("link5", "link6", (1.2, 0.0, -0.5), (0.05, -0.03, 0.02), (1.0, 0.0, 0.0)),
]


def place_panda_pair(pose):
    name_0, name_1, angles, offset, normal = pose
    body_0 = panda_link(name_0)
    body_1 = panda_link(name_1)
    transform = trimesh.transformations.euler_matrix(*angles)
    transform[:3, 3] = body_0.centroid - transform[:3, :3] @ body_1.centroid + np.asarray(offset)
    body_1.apply_transform(transform)
    normal = np.asarray(normal, dtype=float)
    normal /= np.linalg.norm(normal)
    overlap = to_manifold(body_0) ^ to_manifold(body_1)
    point = np.asarray(overlap.to_mesh64().vert_properties)[:, :3].mean(axis=0)
    return body_0, body_1, point, normal


@pytest.mark.parametrize("pose", PANDA_POSES, ids=[f"{p[0]}-{p[1]}" for p in PANDA_POSES])
def test_two_panda_links_give_the_footprint_of_their_overlap(pose):
    body_0, body_1, point, normal = place_panda_pair(pose)
    assert body_0.is_watertight and body_1.is_watertight
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)

    assert patch is not None and len(patch.triangles) > 0 and patch.area_m2 > 0.0
    assert_well_formed(patch, point, normal)
    assert np.any(patch.pressure_pa > 0.0)

    # The area is that of manifold3d's projection of the overlap onto the plane, to its float32
    # rounding; the force the stiffness times the overlap's volume.
    overlap = to_manifold(body_0) ^ to_manifold(body_1)
    rotation = plane_frame(normal)
    overlap_plane = overlap.transform(np.column_stack([rotation.T, -rotation.T @ point]))
    assert patch.area_m2 == pytest.approx(overlap_plane.project().area(), rel=1e-5)
    force_n = -patch.force_world_n @ normal
    assert force_n == pytest.approx(STIFFNESS_PA_PER_M * overlap.volume(), rel=VOLUME_RTOL)
    # The drawn pressure integrates to the force within the refinement's tolerance (exactly on
    # the convex path, where the other side of the overlap is flat or the field is linear).
    assert drawn_force_n(patch) == pytest.approx(force_n, rel=REFINED_RTOL)


def test_pressures_match_manifold3d_ray_casts_on_panda_links():
    body_0, body_1, point, normal = place_panda_pair(PANDA_POSES[1])
    patch = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    boundary = np.concatenate([loop for loop in patch.outlines])
    interior = np.setdiff1d(np.arange(len(patch.vertices_world)), boundary)
    assert len(interior) > 20
    expected_m = ray_cast_thickness_m(body_0, body_1, patch.vertices_world[interior], normal)
    np.testing.assert_allclose(patch.pressure_pa[interior] / STIFFNESS_PA_PER_M, expected_m, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Analytic surfaces of primitive pairs, and the mesh path on the same tessellations


def rigid(rotation=None, translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    if rotation is not None:
        T[:3, :3] = rotation
    T[:3, 3] = translation
    return T


def test_sphere_cap_analytic_and_mesh_against_the_closed_form():
    # Issue 17's case: a sphere (r = 0.05) 10 mm into a box face, stiffness 1e6.
    from my_collision_pkg.core.model.shapes import Box, Sphere
    from my_collision_pkg.core.surfaces.primitive_surfaces import primitive_contact_surface

    radius_m, depth_m, stiffness = 0.05, 0.01, 1.0e6
    centre = np.array([0.01, 0.02, radius_m - depth_m])
    point, normal = np.array([0.01, 0.02, -0.5 * depth_m]), np.array([0.0, 0.0, 1.0])
    cap_m3 = np.pi * depth_m**2 * (3.0 * radius_m - depth_m) / 3.0           # 1.466e-5 m^3: 14.66 N
    footprint_m2 = np.pi * (2.0 * radius_m * depth_m - depth_m**2)            # 2.83e-3 m^2
    analytic = primitive_contact_surface(Box((0.4, 0.4, 0.2)), rigid(translation=(0, 0, -0.1)), Sphere(radius_m),
                                         rigid(translation=centre), point, normal, stiffness)
    assert -analytic.force_world_n @ normal == pytest.approx(stiffness * cap_m3, rel=1e-12)
    assert analytic.area_m2 == pytest.approx(footprint_m2, rel=1e-12)
    assert_well_formed_analytic(analytic, point, normal)

    sphere = icosphere(radius_m, centre, subdivisions=3)
    mesh = compute_contact_surface(box((0.4, 0.4, 0.2), centre_m=(0, 0, -0.1)), sphere, point, normal, stiffness)
    r_in = inscribed_radius(sphere, centre)
    c = centre[2]
    assert stiffness * cap_volume_m3(r_in, c) <= -mesh.force_world_n @ normal <= stiffness * cap_m3
    assert np.pi * (r_in**2 - c**2) <= mesh.area_m2 <= footprint_m2


def test_cylinder_side_on_analytic_and_mesh_against_the_closed_form():
    from my_collision_pkg.core.model.shapes import Box, Cylinder
    from my_collision_pkg.core.surfaces.primitive_surfaces import primitive_contact_surface

    radius_m, length_m, depth_m, stiffness = 0.05, 0.2, 0.01, 1.0e6
    axis_along_y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    T_cylinder = rigid(axis_along_y, (0.0, 0.0, radius_m - depth_m))
    point, normal = np.array([0.0, 0.0, -0.5 * depth_m]), np.array([0.0, 0.0, 1.0])

    def segment_m2(r):        # circular segment of a disc of radius r whose centre is c above the chord
        c = radius_m - depth_m
        return r**2 * np.arccos(c / r) - c * np.sqrt(r**2 - c**2)

    analytic = primitive_contact_surface(Box((0.4, 0.4, 0.2)), rigid(translation=(0, 0, -0.1)),
                                         Cylinder(radius_m, length_m), T_cylinder, point, normal, stiffness)
    assert -analytic.force_world_n @ normal == pytest.approx(stiffness * length_m * segment_m2(radius_m), rel=1e-12)
    half_chord_m = np.sqrt(2.0 * radius_m * depth_m - depth_m**2)
    assert analytic.area_m2 == pytest.approx(length_m * 2.0 * half_chord_m, rel=1e-12)
    assert_well_formed_analytic(analytic, point, normal)

    cylinder = trimesh.creation.cylinder(radius=radius_m, height=length_m, sections=48).apply_transform(T_cylinder)
    mesh = compute_contact_surface(box((0.4, 0.4, 0.2), centre_m=(0, 0, -0.1)), cylinder, point, normal, stiffness)
    # the 48-gon lies between the circles of radius r cos(pi / 48) (its faces) and r (its corners)
    r_in = radius_m * np.cos(np.pi / 48)
    force_n = -mesh.force_world_n @ normal
    assert stiffness * length_m * segment_m2(r_in) <= force_n <= stiffness * length_m * segment_m2(radius_m)
    assert force_n == pytest.approx(stiffness * overlap_volume_m3(box((0.4, 0.4, 0.2), centre_m=(0, 0, -0.1)),
                                                                  cylinder), rel=VOLUME_RTOL)
    c = radius_m - depth_m
    assert length_m * 2.0 * np.sqrt(r_in**2 - c**2) <= mesh.area_m2 <= analytic.area_m2 * (1 + 1e-12)


def test_box_into_box_analytic_matches_the_mesh_path_exactly():
    from my_collision_pkg.core.model.shapes import Box
    from my_collision_pkg.core.surfaces.primitive_surfaces import primitive_contact_surface

    rotation = random_rotation(np.random.default_rng(5))
    T_0 = rigid(rotation, (0.3, -0.1, 0.2))
    T_1 = T_0 @ rigid(translation=(0.02, -0.01, 0.1 + 0.05 - 0.01))        # 10 mm into the top face
    point, normal = T_0[:3, :3] @ (0.02, -0.01, 0.095) + T_0[:3, 3], T_0[:3, :3] @ (0.0, 0.0, 1.0)
    analytic = primitive_contact_surface(Box((0.2, 0.2, 0.2)), T_0, Box((0.1, 0.1, 0.1)), T_1, point, normal, 1e6)
    mesh = compute_contact_surface(box((0.2, 0.2, 0.2)).apply_transform(T_0), box((0.1, 0.1, 0.1)).apply_transform(T_1),
                                   point, normal, 1e6)
    for patch in (analytic, mesh):
        assert -patch.force_world_n @ normal == pytest.approx(1e6 * 0.1 * 0.1 * 0.01, rel=1e-9)
        assert patch.area_m2 == pytest.approx(0.01, rel=1e-9)
        np.testing.assert_allclose(patch.centroid_world, point, atol=1e-12)
    np.testing.assert_allclose(analytic.pressure_pa, 1e6 * 0.01, rtol=1e-9)


def test_primitive_surfaces_decline_where_no_closed_form_holds():
    from my_collision_pkg.core.model.shapes import Box, Sphere
    from my_collision_pkg.core.surfaces.primitive_surfaces import primitive_contact_surface

    plate, T_plate = Box((0.4, 0.4, 0.2)), rigid(translation=(0, 0, -0.1))
    up = np.array([0.0, 0.0, 1.0])
    # over the plate's edge: the cap crosses a side face
    assert primitive_contact_surface(plate, T_plate, Sphere(0.05), rigid(translation=(0.19, 0, 0.04)),
                                     [0.19, 0, -0.005], up, 1e6) is None
    # a normal that is not the face's
    tilted = np.array([0.0, np.sin(0.01), np.cos(0.01)])
    assert primitive_contact_surface(plate, T_plate, Sphere(0.05), rigid(translation=(0, 0, 0.04)),
                                     [0, 0, -0.005], tilted, 1e6) is None
    # boxes whose axes are not parallel
    turned = trimesh.transformations.rotation_matrix(0.3, [0, 0, 1])[:3, :3]
    assert primitive_contact_surface(plate, T_plate, Box((0.1, 0.1, 0.1)), rigid(turned, (0, 0, 0.04)),
                                     [0, 0, -0.005], up, 1e6) is None
    # separated
    assert primitive_contact_surface(plate, T_plate, Sphere(0.05), rigid(translation=(0, 0, 0.06)),
                                     [0, 0, 0.005], up, 1e6) is None


def assert_well_formed_analytic(patch: SurfacePatch, point_world, normal_world) -> None:
    """As assert_well_formed, but the triangles inscribe the exact area instead of summing to it."""
    normal = np.asarray(normal_world, dtype=float)
    corners = patch.vertices_world[patch.triangles]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    assert np.all(normals @ normal > 0.0)
    drawn_m2 = 0.5 * np.linalg.norm(normals, axis=1).sum()
    assert 0.99 * patch.area_m2 <= drawn_m2 <= patch.area_m2 * (1 + 1e-12)
    np.testing.assert_allclose((patch.vertices_world - point_world) @ normal, 0.0, atol=ON_PLANE_ATOL_M)
    assert np.all(patch.pressure_pa >= 0.0)
    for loop in patch.outlines:
        assert loop[0] == loop[-1] and len(loop) >= 4
        assert signed_area_about(patch.vertices_world[loop], normal) == pytest.approx(drawn_m2, rel=1e-9)
    np.testing.assert_allclose(patch.moment_world_nm, 0.0)


def test_a_pocket_inside_the_other_body_is_taken_out_of_the_hulls_overlap():
    # A slab with a dent in its top face (non-convex: the dent is a pocket of its hull) and a box
    # pressed into that face, covering the dent: the overlap is the hulls' overlap less the dent.
    slab = to_manifold(box((0.3, 0.3, 0.1), centre_m=(0, 0, -0.05)))
    dent = to_manifold(box((0.04, 0.04, 0.006), centre_m=(0.01, 0, -0.003 + 1e-9)))
    dented = slab - dent
    mesh = dented.to_mesh64()
    body_0 = trimesh.Trimesh(np.array(mesh.vert_properties)[:, :3], np.array(mesh.tri_verts), process=False)
    body_1 = box((0.1, 0.1, 0.1), centre_m=(0, 0, 0.05 - 0.01))               # 10 mm into the face
    point, normal = np.array([0.0, 0.0, -0.005]), np.array([0.0, 0.0, 1.0])
    volume_m3 = overlap_volume_m3(body_0, body_1)
    assert volume_m3 == pytest.approx(0.1 * 0.1 * 0.01 - 0.04 * 0.04 * 0.006, rel=1e-6)
    solids = [prepared_solid(body, "mesh") for body in (body_0, body_1)]
    assert not solids[0].convex and len(solids[0].pocket_triangles) > 0
    # by the pockets (solids used many times, as explanation_surfaces does) and by manifold3d
    by_pockets = contact_surface_of_solids(*solids, point, normal, STIFFNESS_PA_PER_M, subtract_pockets=True)
    by_manifold = compute_contact_surface(body_0, body_1, point, normal, STIFFNESS_PA_PER_M)
    for patch in (by_pockets, by_manifold):
        assert_well_formed(patch, point, normal)
        assert -patch.force_world_n @ normal == pytest.approx(STIFFNESS_PA_PER_M * volume_m3, rel=VOLUME_RTOL)
        assert patch.area_m2 == pytest.approx(0.01, rel=1e-6)      # the dent does not cut through
        # the volume centroid moves away from the dent, and the pressure centroid with it
        expected_x = -(0.04 * 0.04 * 0.006 * 0.01) / volume_m3
        assert patch.centroid_world[0] == pytest.approx(expected_x, rel=1e-6)
    # the pockets' path draws the hulls' overlap: a constant 10 mm (the dent's 6 mm not taken out)
    np.testing.assert_allclose(by_pockets.pressure_pa, STIFFNESS_PA_PER_M * 0.01, rtol=1e-9)
