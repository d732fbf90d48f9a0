"""Contact surfaces of an explanation, on shapes with an exact overlap."""
import dataclasses

import numpy as np
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.model.robot_model import Box, RobotModel
from my_collision_pkg.core.model.shapes import Cylinder
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject
from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces
from my_collision_pkg.core.model.transforms import make_transform

STIFFNESS_PA_PER_M = 2.0e5


def test_block_in_crate_gives_the_overlap_rectangle():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([AddObject(SceneObject("crate", (ObjectShape(Box((0.4, 0.4, 0.4))),),
                                       make_transform(None, [0.0, 0.25, 1.0])))])
    checker = CollisionChecker(scene)
    explanation = checker.explain(["slide_x", "slide_y"], [1.0, 0.02])     # block y in [-0.08, 0.12]
    surfaces = explanation_surfaces(scene.world, explanation, STIFFNESS_PA_PER_M)
    (surface,) = surfaces
    assert surface.body_names == ("block", "crate")
    assert surface.body_types == (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT)
    patch = surface.patch
    # overlap: x and z the block's 0.2 x 0.2 face, 0.07 m deep along y
    assert patch.area_m2 == pytest.approx(0.04, rel=1e-6)
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * 0.07, rtol=1e-6)
    np.testing.assert_allclose(patch.force_world_n, [0.0, -STIFFNESS_PA_PER_M * 0.04 * 0.07, 0.0], rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(patch.vertices_world[:, 1], 0.085, atol=1e-9)   # mid-plane of the overlap


def test_no_penetration_no_surface():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    explanation = CollisionChecker(scene).explain(["slide_x"], [0.25], contact_distance=0.1)
    assert explanation.contacts and explanation_surfaces(scene.world, explanation) == ()


def test_mesh_contact_whose_witness_plane_misses_the_overlap_still_gets_a_surface():
    """Panda link2 against the hand (two BVH meshes): the triangle-level witness points put
    the plane beside the overlap; the surface is then cut halfway through it."""
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.core.surfaces.contact_surface import compute_contact_surface, overlap_extent_along

    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    explanation = CollisionChecker(scene).explain([f"panda_joint{i}" for i in range(1, 8)],
                                                  [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785])
    contact = min((c for c in explanation.contacts if c.link_names == ("panda_link2", "panda_hand")),
                  key=lambda c: c.distance)
    world = scene.world
    T_world_link = world.robot.link_transforms(explanation.positions)
    meshes = []
    for owner in contact.link_names:
        entry = next(e for e in world.shapes if e.owner == owner)
        meshes.append(entry.geometry.triangle_mesh().copy().apply_transform(
            T_world_link[entry.link_index] @ entry.T_frame_shape))
    low, high = overlap_extent_along(meshes[0], meshes[1], contact.normal)
    # the exact contacts' witness points now lie in the overlap; move them (and the contact)
    # along the normal to just beyond it, as the triangle-level ones were
    shift = (high + 0.005 - 0.5 * (contact.nearest_points[0] + contact.nearest_points[1]) @ contact.normal) \
        * np.asarray(contact.normal)
    contact = dataclasses.replace(contact, position=contact.position + shift,
                                  nearest_points=tuple(p + shift for p in contact.nearest_points))
    explanation = dataclasses.replace(explanation, contacts=(contact,))
    midpoint = 0.5 * (contact.nearest_points[0] + contact.nearest_points[1])
    assert compute_contact_surface(meshes[0], meshes[1], midpoint, contact.normal, STIFFNESS_PA_PER_M) is None
    (surface,) = [s for s in explanation_surfaces(world, explanation, STIFFNESS_PA_PER_M)
                  if s.body_names == ("panda_link2", "panda_hand")]
    heights = surface.patch.vertices_world @ contact.normal
    np.testing.assert_allclose(heights, 0.5 * (low + high), atol=1e-9)
    assert surface.patch.area_m2 > 0 and np.all(surface.patch.pressure_pa >= 0)


# ---------------------------------------------------------------------------------------------
# Primitive pairs: the analytic surfaces (footprint of the overlap, force = stiffness x volume)

DEPTH_M = 0.01


def slider_with(obj: SceneObject) -> PlanningScene:
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([AddObject(obj)])
    return scene


def only_surface(scene, joints, positions, owner):
    explanation = CollisionChecker(scene).explain(joints, positions)
    surfaces = [s for s in explanation_surfaces(scene.world, explanation, STIFFNESS_PA_PER_M) if owner in s.body_names]
    assert len(surfaces) == 1
    return surfaces[0]


def test_sphere_10_mm_into_a_box_gives_the_cap_footprint_and_volume():
    # The ball link (r = 0.1) at x = 1 dips 10 mm into the top face of a plate (z = -0.09).
    radius_m = 0.1
    plate = SceneObject("plate", (ObjectShape(Box((0.6, 0.6, 0.1))),), make_transform(None, [1.0, 0.0, -0.14]))
    surface = only_surface(slider_with(plate), ["slide_x"], [1.0], "plate")
    patch = surface.patch
    cap_m3 = np.pi * DEPTH_M**2 * (3.0 * radius_m - DEPTH_M) / 3.0
    footprint_m2 = np.pi * (2.0 * radius_m * DEPTH_M - DEPTH_M**2)
    assert patch.area_m2 == pytest.approx(footprint_m2, rel=1e-9)
    assert np.linalg.norm(patch.force_world_n) == pytest.approx(STIFFNESS_PA_PER_M * cap_m3, rel=1e-9)
    # the force on body 0 pushes it out of body 1, along the face normal
    body_0_is_plate = surface.body_names[0] == "plate"
    np.testing.assert_allclose(patch.force_world_n / np.linalg.norm(patch.force_world_n),
                               [0.0, 0.0, -1.0 if body_0_is_plate else 1.0], atol=1e-9)
    np.testing.assert_allclose(patch.centroid_world[:2], [1.0, 0.0], atol=1e-9)
    # the mid-plane section the old model used is much smaller: the footprint is the cap's base
    assert patch.area_m2 > 1.8 * np.pi * (2.0 * radius_m * 0.5 * DEPTH_M - (0.5 * DEPTH_M) ** 2)
    assert patch.pressure_pa.max() == pytest.approx(STIFFNESS_PA_PER_M * DEPTH_M, rel=1e-9)


def test_box_10_mm_into_a_box_gives_the_overlap_rectangle_and_volume():
    # The block link (0.2 m cube, centre z = 1) and a 0.1 m cube 10 mm into its top face.
    cube = SceneObject("cube", (ObjectShape(Box((0.1, 0.1, 0.1))),),
                       make_transform(None, [0.03, -0.02, 1.1 + 0.05 - DEPTH_M]))
    patch = only_surface(slider_with(cube), ["slide_y"], [0.0], "cube").patch
    assert patch.area_m2 == pytest.approx(0.01, rel=1e-9)
    assert np.linalg.norm(patch.force_world_n) == pytest.approx(STIFFNESS_PA_PER_M * 0.01 * DEPTH_M, rel=1e-9)
    np.testing.assert_allclose(patch.pressure_pa, STIFFNESS_PA_PER_M * DEPTH_M, rtol=1e-9)
    np.testing.assert_allclose(patch.centroid_world[:2], [0.03, -0.02], atol=1e-9)


def test_cylinder_side_on_into_a_box_gives_the_segment_prism():
    # A cylinder (r = 0.05, 0.1 long, axis along y) lying 10 mm into the block's top face.
    radius_m, length_m = 0.05, 0.1
    axis_along_y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    lying = make_transform(axis_along_y, [0.0, 0.0, 1.1 + radius_m - DEPTH_M])
    roller = SceneObject("roller", (ObjectShape(Cylinder(radius_m, length_m)),), lying)
    patch = only_surface(slider_with(roller), ["slide_y"], [0.0], "roller").patch
    half_chord_m = np.sqrt(2.0 * radius_m * DEPTH_M - DEPTH_M**2)
    segment_m2 = radius_m**2 * np.arccos((radius_m - DEPTH_M) / radius_m) - (radius_m - DEPTH_M) * half_chord_m
    assert patch.area_m2 == pytest.approx(length_m * 2.0 * half_chord_m, rel=1e-9)
    assert np.linalg.norm(patch.force_world_n) == pytest.approx(STIFFNESS_PA_PER_M * length_m * segment_m2, rel=1e-9)
    assert patch.pressure_pa.max() == pytest.approx(STIFFNESS_PA_PER_M * DEPTH_M, rel=1e-6)
