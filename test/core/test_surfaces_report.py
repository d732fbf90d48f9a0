"""Contact surfaces of an explanation, on shapes with an exact overlap."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.checker import CollisionChecker
from my_collision_pkg.contacts import BodyType
from my_collision_pkg.robot_model import Box, RobotModel
from my_collision_pkg.scene import AddObject, ObjectShape, PlanningScene, SceneObject
from my_collision_pkg.surfaces_report import explanation_surfaces
from my_collision_pkg.transforms import make_transform

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
