"""The contact surfaces' compiled convex footprint (kernels.footprint) against its numpy reference.

Convex polytopes of every make-up the surfaces meet (random point clouds; the overlap of a box
with a box, a tessellated sphere and a Panda link mesh, along several normals, the plane through
them and beside them): the same volume and centroid, and the same surface (vertices, triangles,
pressure, outline, area, force, centroid), up to rounding.
"""
from __future__ import annotations

import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.surfaces import contact_surface
from my_collision_pkg.core.surfaces.contact_surface import plane_axes_world, prepared_solid
from my_collision_pkg.core.surfaces.convex_overlap import (convex_polytope, convex_polytope_reference,
                                                           hull_overlap_points)

SEED = 4_242
STIFFNESS = 1.0e6
ROUNDING = 1e-12            # relative: sums in another order


def _clouds():
    rng = np.random.default_rng(SEED)
    for count in (4, 5, 8, 13, 40, 200):
        yield rng.normal(size=(count, 3)) * rng.uniform(0.01, 0.1, 3)
    yield np.array([[x, y, z] for x in (0.0, 0.1) for y in (0.0, 0.2) for z in (0.0, 0.01)])   # a flat box


def _overlaps():
    """(points of the overlap of two convex solids, unit normal) for several pairs and normals."""
    block = trimesh.creation.box(extents=(0.4, 0.4, 0.2))
    block.apply_translation((0.0, 0.0, -0.1))
    tools = [trimesh.creation.box(extents=(0.1, 0.1, 0.1)), trimesh.creation.icosphere(subdivisions=2, radius=0.05),
             trimesh.creation.cylinder(radius=0.05, height=0.2, sections=24)]
    rng = np.random.default_rng(SEED)
    for tool in tools:
        for _ in range(3):
            T = trimesh.transformations.random_rotation_matrix(rng.uniform(size=3))
            T[:3, 3] = (rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), 0.03)
            moved = tool.copy().apply_transform(T)
            points = hull_overlap_points(prepared_solid(block, "block"), prepared_solid(moved, "tool"))
            for normal in ((0.0, 0.0, 1.0), (0.2, -0.1, 1.0), (1.0, 0.3, 0.2)):
                n = np.asarray(normal) / np.linalg.norm(normal)
                yield points, n


@pytest.mark.parametrize("points", list(_clouds()))
def test_polytope_volume_and_centroid_equal_numpy(points):
    compiled, reference = convex_polytope(points), convex_polytope_reference(points)
    assert compiled.volume_m3 == pytest.approx(reference.volume_m3, rel=ROUNDING)
    np.testing.assert_allclose(compiled.centroid, reference.centroid, rtol=0.0,
                               atol=ROUNDING * float(np.ptp(points, axis=0).max()))
    np.testing.assert_array_equal(compiled.simplices, reference.simplices)


def test_footprint_equals_numpy():
    compared = 0
    for points_world, normal in _overlaps():
        rotation = plane_axes_world(normal)
        centre = points_world.mean(axis=0)
        for shift in (0.0, 0.004, 1.0):              # the plane through the overlap, off its middle, beside it
            origin = centre + shift * normal
            polytope = convex_polytope((points_world - origin) @ rotation)
            arguments = (polytope, polytope.volume_m3, polytope.centroid, origin, rotation, STIFFNESS, True)
            compiled = contact_surface._convex_surface(*arguments)
            reference = contact_surface._convex_surface_reference(*arguments)
            assert (compiled is None) == (reference is None)
            if compiled is None:
                continue
            size = float(np.ptp(points_world, axis=0).max())
            np.testing.assert_allclose(compiled.vertices_world, reference.vertices_world, rtol=0.0,
                                       atol=ROUNDING * size)
            np.testing.assert_array_equal(compiled.triangles, reference.triangles)
            np.testing.assert_allclose(compiled.pressure_pa, reference.pressure_pa, rtol=0.0,
                                       atol=ROUNDING * STIFFNESS * size)
            assert len(compiled.outlines) == len(reference.outlines) == 1
            np.testing.assert_array_equal(compiled.outlines[0], reference.outlines[0])
            assert compiled.area_m2 == pytest.approx(reference.area_m2, rel=ROUNDING)
            np.testing.assert_allclose(compiled.force_world_n, reference.force_world_n, rtol=ROUNDING, atol=0.0)
            np.testing.assert_allclose(compiled.centroid_world, reference.centroid_world, rtol=0.0,
                                       atol=ROUNDING * size)
            compared += 1
    assert compared >= 27
