"""Fixtures of the core tests (robots from core_scenes)."""
import pytest
from core_scenes import SLIDER_URDF

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.scene.planning_scene import PlanningScene


@pytest.fixture
def slider_robot():
    return RobotModel.from_urdf_string(SLIDER_URDF)


@pytest.fixture
def slider_scene(slider_robot):
    # adjacency switched off: base and ball are joined only through geometry-less carriage
    return PlanningScene(slider_robot, allow_adjacent=False)


@pytest.fixture
def slider_checker(slider_scene):
    return CollisionChecker(slider_scene)
