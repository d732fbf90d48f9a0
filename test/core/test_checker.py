"""Predicate and explain on primitive scenes with exact answers."""
import numpy as np
import pytest
from core_scenes import SLIDER_URDF, assert_contact_invariants

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType, ContactType, Status
from my_collision_pkg.core.errors import RequestError
from my_collision_pkg.core.model.robot_model import Box, RobotModel, Sphere
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject
from my_collision_pkg.core.model.srdf import parse_srdf
from my_collision_pkg.core.model.transforms import make_transform


def world_sphere(oid, center, radius):
    return AddObject(SceneObject(oid, (ObjectShape(Sphere(radius)),), make_transform(None, center)))


def world_box(oid, center, size):
    return AddObject(SceneObject(oid, (ObjectShape(Box(tuple(size))),), make_transform(None, center)))


# ----- self-collision, exact depths ------------------------------------------
@pytest.mark.parametrize("x, depth", [(0.15, 0.05), (0.199, 0.001), (0.05, 0.15)])
def test_sphere_sphere_depth_normal_witness_points(slider_checker, x, depth):
    e = slider_checker.explain(["slide_x"], [x])
    assert not e.valid and e.status == Status.IN_COLLISION
    (c,) = e.contacts
    assert c.type == ContactType.SELF
    assert c.link_names == ("base", "ball")
    assert c.body_types == (BodyType.ROBOT_LINK, BodyType.ROBOT_LINK)
    assert c.shape_ids == (0, 0) and c.subshape_ids == (-1, -1)
    assert c.distance == pytest.approx(-depth, abs=1e-9)
    assert c.penetration_depth == pytest.approx(depth, abs=1e-9)
    np.testing.assert_allclose(c.normal, [1, 0, 0], atol=1e-9)
    np.testing.assert_allclose(c.nearest_points[0], [0.1, 0, 0], atol=1e-6)      # on base, deepest in ball
    np.testing.assert_allclose(c.nearest_points[1], [x - 0.1, 0, 0], atol=1e-6)  # on ball, deepest in base
    np.testing.assert_allclose(c.nearest_points_local[0], [0.1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(c.nearest_points_local[1], [-0.1, 0, 0], atol=1e-6)
    assert_contact_invariants(c)
    assert e.colliding_links == ("base", "ball")
    assert "self-collision between 'base' and 'ball'" in e.message
    assert f"{depth * 1000:.2f} mm" in e.message
    assert "padding" not in e.message


def test_free_configuration_is_valid_with_no_contacts(slider_checker):
    assert slider_checker.check(["slide_x"], [0.5]).valid
    e = slider_checker.explain(["slide_x"], [0.5])
    assert e.valid and e.status == Status.VALID and e.contacts == ()


def test_near_miss_reported_without_invalidating(slider_checker):
    e = slider_checker.explain(["slide_x"], [0.25], contact_distance=0.1)
    assert e.valid
    (c,) = e.contacts
    assert c.distance == pytest.approx(0.05, abs=1e-6)
    np.testing.assert_allclose(c.normal, [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(c.nearest_points[0], [0.1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(c.nearest_points[1], [0.15, 0, 0], atol=1e-6)
    assert_contact_invariants(c)
    assert slider_checker.explain(["slide_x"], [0.25], contact_distance=0.04).contacts == ()


def test_box_box_overlap_depth_and_normal():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([world_box("crate", [0.0, 0.25, 1.0], [0.4, 0.4, 0.4])])
    checker = CollisionChecker(scene)
    # block (0.2 box at y) against crate spanning y in [0.05, 0.45]: overlap 0.05 - (y - 0.1)
    e = checker.explain(["slide_x", "slide_y"], [1.0, 0.02])
    env = [c for c in e.contacts if c.type == ContactType.ENVIRONMENT]
    assert env and all(c.link_names == ("block", "crate") for c in env)
    assert all(c.body_types == (BodyType.ROBOT_LINK, BodyType.WORLD_OBJECT) for c in env)
    for c in env:
        assert c.penetration_depth == pytest.approx(0.07, abs=1e-9)
        np.testing.assert_allclose(c.normal, [0, 1, 0], atol=1e-9)
        assert c.nearest_points[0][1] == pytest.approx(0.12, abs=1e-9)   # block face, deepest in crate
        assert c.nearest_points[1][1] == pytest.approx(0.05, abs=1e-9)   # crate face, deepest in block
        assert_contact_invariants(c)


def test_sphere_against_box_face():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([world_box("wall", [0.6, 0.0, 0.0], [0.2, 1.0, 1.0])])
    e = CollisionChecker(scene).explain(["slide_x"], [0.45])   # ball spans [0.35, 0.55], wall from 0.5
    (c,) = [c for c in e.contacts if c.link_names == ("ball", "wall")]
    assert c.penetration_depth == pytest.approx(0.05, abs=1e-9)
    np.testing.assert_allclose(c.normal, [1, 0, 0], atol=1e-9)
    np.testing.assert_allclose(c.nearest_points[0], [0.55, 0, 0], atol=1e-6)
    np.testing.assert_allclose(c.nearest_points[1], [0.5, 0, 0], atol=1e-6)
    assert_contact_invariants(c)


# ----- order, limits, padding ------------------------------------------------
def test_explain_reports_self_before_environment_and_predicate_names_environment_first():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([world_sphere("bead", [0.3, 0.0, 0.0], 0.1)])
    checker = CollisionChecker(scene)
    e = checker.explain(["slide_x"], [0.19])        # ball touches base (self) and bead (environment)
    kinds = [c.type for c in e.contacts]
    assert kinds == sorted(kinds) and ContactType.SELF in kinds and ContactType.ENVIRONMENT in kinds
    assert e.message.startswith("self-collision")
    verdict = checker.check(["slide_x"], [0.19])
    assert not verdict.valid and verdict.message.startswith("environment collision")


def test_joint_limits_refuse_with_the_joint_named(slider_checker):
    v = slider_checker.check(["slide_x"], [2.5])
    assert not v.valid and v.status == Status.OUT_OF_BOUNDS and "slide_x" in v.message
    e = slider_checker.explain(["slide_x"], [2.5])
    assert e.status == Status.OUT_OF_BOUNDS and not e.valid
    slider_checker.check_joint_limits = False
    assert slider_checker.check(["slide_x"], [2.5]).valid


def test_padding_applies_per_flag():
    robot = RobotModel.from_urdf_string(SLIDER_URDF)
    scene = PlanningScene(robot, allow_adjacent=False, default_padding_m=0.03)
    scene.apply([world_sphere("bead", [0.0, 0.0, -0.25], 0.1)])   # 0.05 m below the base sphere
    checker = CollisionChecker(scene)
    # ball 0.05 m from base: summed self padding 0.06 m
    assert checker.check(["slide_x"], [0.25]).valid
    v = checker.check(["slide_x"], [0.25], pad_self_collisions=True)
    assert not v.valid and v.status == Status.IN_COLLISION
    e = checker.explain(["slide_x"], [0.25], pad_self_collisions=True)
    assert not e.valid and "padding 60.00 mm" in e.message
    assert e.contacts[0].distance == pytest.approx(0.05, abs=1e-6)
    assert_contact_invariants(e.contacts[0])
    # environment: only the robot side is padded (0.03 < 0.05)
    assert checker.check(["slide_x"], [1.0]).valid
    scene.set_padding(link_padding_m={"base": 0.06})
    assert not checker.check(["slide_x"], [1.0]).valid
    assert checker.check(["slide_x"], [1.0], pad_environment_collisions=False).valid
    e = checker.explain(["slide_x"], [1.0])
    assert e.colliding_links == ("base", "bead") and "padding 60.00 mm" in e.message


def test_group_restricts_pairs_to_moved_links():
    robot = RobotModel.from_urdf_string(SLIDER_URDF)
    semantic = parse_srdf("""<robot name="slider">
        <group name="xs"><joint name="slide_x"/></group>
        <group name="ys"><joint name="slide_y"/></group></robot>""", robot)
    checker = CollisionChecker(PlanningScene(robot, semantic, allow_adjacent=False))
    assert not checker.check(["slide_x"], [0.1], group_name="xs").valid
    assert checker.check(["slide_x"], [0.1], group_name="ys").valid
    bad = checker.check(["slide_x"], [0.1], group_name="zs")
    assert bad.status == Status.INVALID_REQUEST and "unknown group 'zs'" in bad.message


def test_adjacent_links_allowed_by_default_and_switchable():
    urdf = """<robot name="pair">
      <link name="a"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
      <link name="mid"/>
      <link name="b"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
      <joint name="j" type="prismatic"><parent link="a"/><child link="mid"/><axis xyz="1 0 0"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="f" type="fixed"><parent link="mid"/><child link="b"/></joint></robot>"""
    robot = RobotModel.from_urdf_string(urdf)
    assert CollisionChecker(PlanningScene(robot)).check(["j"], [0.0]).valid
    assert not CollisionChecker(PlanningScene(robot, allow_adjacent=False)).check(["j"], [0.0]).valid
    scene = PlanningScene(robot)
    scene.set_allowed_collision("a", "b", False)
    assert not CollisionChecker(scene).check(["j"], [0.0]).valid


def test_contact_budget_bounds_contacts_but_not_the_verdict():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False)
    scene.apply([world_box("crate", [0.0, 0.0, 0.5], [3.0, 3.0, 1.5])])   # swallows everything
    checker = CollisionChecker(scene, max_contacts=2)
    e = checker.explain(["slide_x"], [0.1])
    assert not e.valid and len(e.contacts) == 2 and e.contact_budget_spent
    assert "+3 more colliding body pairs" in e.message
    assert len(checker.explain(["slide_x"], [0.1], max_contacts=50).contacts) > 2


def test_explain_valid_equals_predicate_on_random_configurations():
    scene = PlanningScene(RobotModel.from_urdf_string(SLIDER_URDF), allow_adjacent=False, default_padding_m=0.01)
    scene.apply([world_sphere("bead", [0.4, 0.3, 0.5], 0.2), world_box("slab", [-0.5, 0.0, 0.9], [0.3, 2, 0.1])])
    checker = CollisionChecker(scene)
    rng = np.random.default_rng(7)
    Q = rng.uniform(-1.0, 1.0, size=(3000, 2))
    batch, _ = checker.check_batch(["slide_x", "slide_y"], Q, pad_self_collisions=True)
    single = np.array([checker.check(["slide_x", "slide_y"], q, pad_self_collisions=True).valid for q in Q])
    explained = np.array([checker.explain(["slide_x", "slide_y"], q, pad_self_collisions=True).valid for q in Q])
    np.testing.assert_array_equal(batch, single)
    np.testing.assert_array_equal(explained, single)
    assert 0.05 < single.mean() < 0.95     # both outcomes exercised


# ----- bad input ----------------------------------------------------------------
@pytest.mark.parametrize("names, positions, fragment", [
    (["slide_x"], [float("nan")], "non-finite"),
    (["slide_x"], [float("inf")], "non-finite"),
    (["slide_x"], [0.1, 0.2], "1 joint names but 2 positions"),
    (["slide_x", "slide_y"], [0.1], "positions"),
    (["nope"], [0.0], "unknown joint 'nope'"),
    (["slide_x", "slide_x"], [0.0, 0.0], "named twice"),
    (["fix_ball"], [0.0], "'fix_ball' is fixed"),
    ([], [], "names no joints"),
])
def test_bad_requests_are_refused_with_a_reason(slider_checker, names, positions, fragment):
    v = slider_checker.check(names, positions)
    assert not v.valid and v.status == Status.INVALID_REQUEST and fragment in v.message
    e = slider_checker.explain(names, positions)
    assert not e.valid and e.status == Status.INVALID_REQUEST and fragment in e.message
    valid, summary = slider_checker.check_batch(names, positions)
    if (names, positions) == (["slide_x"], [0.1, 0.2]):     # two rows of one joint: a valid batch
        assert valid.shape == (2,) and summary.status != Status.INVALID_REQUEST
    else:
        assert summary.status == Status.INVALID_REQUEST and valid.size == 0
    with pytest.raises(RequestError):
        slider_checker.is_valid(names, positions)


def test_batch_reports_counts_and_first_refusal(slider_checker):
    valid, summary = slider_checker.check_batch(["slide_x"], [[0.5], [0.1], [3.0], [0.6]])
    np.testing.assert_array_equal(valid, [True, False, False, True])
    assert summary.status == Status.IN_COLLISION and "2 of 4" in summary.message and "index 1" in summary.message


def test_negative_contact_distance_is_refused(slider_checker):
    e = slider_checker.explain(["slide_x"], [0.5], contact_distance=-1.0)
    assert e.status == Status.INVALID_REQUEST and "contact_distance" in e.message


def test_joints_not_named_keep_the_scene_current_values(slider_scene, slider_checker):
    # the block (slide_y) starts at 0; the ball collides with the base at slide_x = 0
    assert not slider_checker.check(["slide_y"], [0.5]).valid          # slide_x current value: 0
    slider_scene.set_current_positions(["slide_x"], [1.0])
    assert slider_checker.check(["slide_y"], [0.5]).valid
    e = slider_checker.explain(["slide_y"], [0.5])
    assert e.joint_names == ("slide_x", "slide_y")
    np.testing.assert_array_equal(e.positions, [1.0, 0.5])


@pytest.mark.parametrize("names, values, fragment", [
    (["slide_z"], [0.0], "'slide_z' is not an active joint"),
    (["slide_x"], [float("nan")], "non-finite"),
    (["slide_x"], [0.0, 1.0], "1 joint names but 2 positions"),
])
def test_bad_current_state_updates_change_nothing(slider_scene, names, values, fragment):
    before = slider_scene.current_positions.copy()
    with pytest.raises(RequestError, match=fragment):
        slider_scene.set_current_positions(names, values)
    np.testing.assert_array_equal(slider_scene.current_positions, before)


# ----- the request object ------------------------------------------------------
def test_a_request_object_gives_the_keywords_verdicts():
    from my_collision_pkg.core.checks.request import CheckRequest
    robot = RobotModel.from_urdf_string(SLIDER_URDF)
    scene = PlanningScene(robot, allow_adjacent=False, default_padding_m=0.03)
    scene.apply([world_sphere("bead", [0.0, 0.0, -0.25], 0.1)])
    checker = CollisionChecker(scene)
    world = scene.world
    for keywords in (dict(), dict(pad_self_collisions=True), dict(pad_environment_collisions=False, world=world),
                     dict(contact_distance=0.2, max_contacts=1)):
        request = CheckRequest(**keywords)
        only_check = {k: v for k, v in keywords.items() if k not in ("contact_distance", "max_contacts")}
        for x in (0.25, 1.0, 0.1):
            assert checker.check(["slide_x"], [x], request=request) == checker.check(["slide_x"], [x], **only_check)
            assert checker.is_valid(["slide_x"], [x], request=request) == checker.is_valid(["slide_x"], [x],
                                                                                            **only_check)
            by_request, by_keywords = (checker.explain(["slide_x"], [x], request=request),
                                       checker.explain(["slide_x"], [x], **keywords))
            assert (by_request.valid, by_request.status, by_request.message) == \
                (by_keywords.valid, by_keywords.status, by_keywords.message)
            assert [c.distance for c in by_request.contacts] == [c.distance for c in by_keywords.contacts]
        valid_r, summary_r = checker.check_batch(["slide_x"], [[0.25], [1.0], [0.1]], request=request)
        valid_k, summary_k = checker.check_batch(["slide_x"], [[0.25], [1.0], [0.1]], **only_check)
        np.testing.assert_array_equal(valid_r, valid_k)
        assert summary_r == summary_k


def test_a_request_object_with_a_keyword_is_a_type_error(slider_checker):
    from my_collision_pkg.core.checks.request import CheckRequest
    request = CheckRequest(pad_self_collisions=True)
    with pytest.raises(TypeError, match="group_name"):
        slider_checker.check(["slide_x"], [0.5], request=request, group_name="xs")
    with pytest.raises(TypeError, match="pad_self_collisions"):
        slider_checker.is_valid(["slide_x"], [0.5], request=request, pad_self_collisions=True)
    with pytest.raises(TypeError, match="world"):
        slider_checker.check_batch(["slide_x"], [0.5], request=request, world=slider_checker.scene.world)
    with pytest.raises(TypeError, match="contact_distance"):
        slider_checker.explain(["slide_x"], [0.5], request=request, contact_distance=0.1)
    with pytest.raises(TypeError, match="max_contacts"):
        slider_checker.check_motion(["slide_x"], [0.5], [0.6], request=request, max_contacts=3)
    with pytest.raises(TypeError, match="pad_environment_collisions"):
        slider_checker.check_trajectory(["slide_x"], [[0.5], [0.6]], [0.0, 1.0], request=request,
                                        pad_environment_collisions=False)
    # keywords left at their defaults are no clash
    assert slider_checker.check(["slide_x"], [0.5], request=request, group_name="").valid
