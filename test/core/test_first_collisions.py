"""CollisionChecker.first_collisions: check_batch's verdicts with each configuration's status and first pair."""
import numpy as np

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject
from my_collision_pkg.core.model.shapes import Box


def _checker_with_wall(slider_scene, workers=1):
    # a wall at x = 1.0 (0.1 thick): the ball (r = 0.1) touches it from x = 0.85 on
    T = np.eye(4)
    T[0, 3] = 1.0
    slider_scene.apply([AddObject(SceneObject("wall", (ObjectShape(Box((0.1, 2.0, 2.0))),), T))])
    return CollisionChecker(slider_scene, batch_workers=workers)


def test_status_and_pair_per_configuration(slider_scene):
    checker = _checker_with_wall(slider_scene)
    # ball on the base sphere (self), free, on the wall (environment), beyond the limit
    x = np.array([[0.05], [0.5], [1.0], [2.5]])
    answer = checker.first_collisions(["slide_x"], x)
    valid, summary = checker.check_batch(["slide_x"], x)
    np.testing.assert_array_equal(answer.valid, valid)
    assert answer.summary == summary
    assert answer.status.tolist() == [Status.IN_COLLISION, Status.VALID, Status.IN_COLLISION, Status.OUT_OF_BOUNDS]
    assert sorted(answer.pair_names[0]) == ["ball", "base"]
    assert answer.pair_names[1].tolist() == [None, None]
    assert answer.pair_names[2].tolist() == ["ball", "wall"]       # body 0 the robot link, body 1 the object
    assert answer.pair_names[3].tolist() == [None, None]
    assert answer.pair_shape_ids[1].tolist() == [-1, -1] and answer.pair_shape_ids[2].tolist() == [0, 0]


def test_bad_input_is_refused_with_no_rows(slider_scene):
    answer = _checker_with_wall(slider_scene).first_collisions(["no_such_joint"], [[0.0]])
    assert answer.summary.status == Status.INVALID_REQUEST and "no_such_joint" in answer.summary.message
    assert answer.valid.shape == (0,) and answer.pair_names.shape == (0, 2)


def test_the_same_answers_with_forked_batch_workers(slider_scene):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.2, 2.2, size=(6000, 1))
    one = _checker_with_wall(slider_scene, workers=1).first_collisions(["slide_x"], x)
    two_checker = CollisionChecker(slider_scene, batch_workers=2)
    two = two_checker.first_collisions(["slide_x"], x)
    two_checker.close()
    np.testing.assert_array_equal(one.valid, two.valid)
    np.testing.assert_array_equal(one.status, two.status)
    np.testing.assert_array_equal(one.pair_names, two.pair_names)
    assert set(one.status.tolist()) == {Status.VALID, Status.IN_COLLISION, Status.OUT_OF_BOUNDS}
