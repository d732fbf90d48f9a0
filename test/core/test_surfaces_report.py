"""Contact surfaces of an explanation, on shapes with an exact overlap."""
import dataclasses

import numpy as np
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.model.robot_model import Box, RobotModel
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
