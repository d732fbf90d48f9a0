"""Motion and trajectory checks on small inline robots with analytic answers."""
import math

import numpy as np
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType, CCType, Status
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, MotionMode
from my_collision_pkg.core.model.robot_model import Box, Sphere
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

BALL_RADIUS_M = 0.005
# A small ball on a prismatic joint along x.
SLIDER_URDF = f"""
<robot name="slider">
  <link name="base"/>
  <link name="ball"><collision><geometry><sphere radius="{BALL_RADIUS_M}"/></geometry></collision></link>
  <joint name="x" type="prismatic">
    <parent link="base"/><child link="ball"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
</robot>
"""

ARM_REACH_M = 0.5
TIP_RADIUS_M = 0.05
# A two-joint planar arm: shoulder about z at the origin, elbow about z at (0.5, 0, 0),
# each link carrying a sphere at its tip.
ARM_URDF = f"""
<robot name="arm">
  <link name="base"/>
  <link name="upper"><collision><origin xyz="{ARM_REACH_M} 0 0"/><geometry><sphere radius="{TIP_RADIUS_M}"/></geometry></collision></link>
  <link name="fore"><collision><origin xyz="0.3 0 0"/><geometry><sphere radius="{TIP_RADIUS_M}"/></geometry></collision></link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="-3.1" upper="3.1" effort="1" velocity="1"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="fore"/><origin xyz="{ARM_REACH_M} 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-2.5" upper="2.5" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def _pose(x=0.0, y=0.0, z=0.0):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _world_object(scene, name, shape, T):
    scene.apply([AddObject(SceneObject(name, (ObjectShape(shape),), T))])


@pytest.fixture
def wall_checker():
    """The slider with a 1 mm wall whose near face is at x = WALL_X_M."""
    scene = load_scene(urdf_xml=SLIDER_URDF)
    _world_object(scene, "wall", Box((0.001, 1.0, 1.0)), _pose(x=WALL_X_M + 0.0005))
    return CollisionChecker(scene)


WALL_X_M = 0.5118     # between two 5 cm samples of a 0..1 m motion, whatever the ball's place


def test_thin_wall_discrete_misses_certified_finds(wall_checker):
    discrete = wall_checker.check_motion(["x"], [0.0], [1.0], mode=MotionMode.DISCRETE, max_step=0.05)
    assert discrete.valid and discrete.status == Status.VALID
    result = wall_checker.check_motion(["x"], [0.0], [1.0])
    assert not result.valid and result.status == Status.IN_COLLISION
    crossing = WALL_X_M - BALL_RADIUS_M          # the ball's centre when it first touches the wall
    assert result.cc_time == pytest.approx(crossing, abs=1e-3)
    assert result.cc_time <= crossing + 1e-12   # never later than the true first contact
    assert "'ball' and 'wall'" in result.message
    assert result.positions[0] == pytest.approx(result.cc_time)
    (contact,) = result.contacts
    assert contact.link_names == ("ball", "wall")
    assert contact.distance < DEFAULT_TOUCH_TOLERANCE_M
    assert contact.cc_type == (CCType.BETWEEN, CCType.NONE)
    assert contact.cc_time == (result.cc_time, -1.0)
    np.testing.assert_allclose(contact.transforms[0][:3, 3], [0, 0, 0], atol=1e-12)     # at the start
    np.testing.assert_allclose(contact.cc_transforms[0][:3, 3], [1, 0, 0], atol=1e-12)  # at the end
    np.testing.assert_allclose(contact.transforms[1], contact.cc_transforms[1])         # the wall stays


def test_thin_wall_fine_discrete_agrees(wall_checker):
    fine = wall_checker.check_motion(["x"], [0.0], [1.0], mode=MotionMode.DISCRETE, max_step=1e-4)
    certified = wall_checker.check_motion(["x"], [0.0], [1.0])
    assert not fine.valid
    assert certified.cc_time <= fine.cc_time <= certified.cc_time + 2e-4


def test_motion_away_and_short_of_the_wall_is_valid(wall_checker):
    assert wall_checker.check_motion(["x"], [0.0], [-1.0]).valid
    short = wall_checker.check_motion(["x"], [0.0], [WALL_X_M - BALL_RADIUS_M - 0.01])
    assert short.valid and short.cc_time == -1.0 and short.contacts == ()
    np.testing.assert_allclose(short.positions, [0.0])


def test_cc_types_at_the_ends(wall_checker):
    inside = WALL_X_M + 0.0005
    starting = wall_checker.check_motion(["x"], [inside], [-0.5])
    assert starting.cc_time == 0.0 and starting.contacts[0].cc_type[0] == CCType.TIME0
    ending = wall_checker.check_motion(["x"], [0.0], [WALL_X_M - BALL_RADIUS_M])
    assert not ending.valid
    assert ending.cc_time == pytest.approx(1.0, abs=1e-3)
    assert ending.contacts[0].cc_type[0] == CCType.TIME1


def test_a_motion_that_does_not_move(wall_checker):
    assert wall_checker.check_motion(["x"], [0.2], [0.2]).valid
    still = wall_checker.check_motion(["x"], [WALL_X_M], [WALL_X_M])
    assert not still.valid and still.cc_time == 0.0
    assert still.contacts[0].cc_type == (CCType.NONE, CCType.NONE)   # nothing moves: no cc time
    assert still.contacts[0].cc_time == (-1.0, -1.0)


def test_padding_is_a_margin_along_the_motion():
    scene = load_scene(urdf_xml=SLIDER_URDF, default_padding_m=0.01)
    _world_object(scene, "wall", Box((0.001, 1.0, 1.0)), _pose(x=WALL_X_M + 0.0005))
    checker = CollisionChecker(scene)
    padded = checker.check_motion(["x"], [0.0], [1.0])
    assert padded.cc_time == pytest.approx(WALL_X_M - BALL_RADIUS_M - 0.01, abs=1e-3)
    bare = checker.check_motion(["x"], [0.0], [1.0], pad_environment_collisions=False)
    assert bare.cc_time == pytest.approx(WALL_X_M - BALL_RADIUS_M, abs=1e-3)


def test_tolerance_is_a_parameter(wall_checker):
    near = WALL_X_M - BALL_RADIUS_M - 0.001        # stops 1 mm short of the wall
    assert wall_checker.check_motion(["x"], [0.0], [near]).valid
    coarse = wall_checker.check_motion(["x"], [0.0], [near], tolerance_m=0.003)
    assert not coarse.valid
    assert coarse.contacts[0].distance < 0.003 and coarse.contacts[0].distance >= 0.001 - 1e-9


# ----- revolute ---------------------------------------------------------------------
@pytest.fixture
def arm_checker():
    """The arm with a ball obstacle on the shoulder's circle at 45 degrees."""
    scene = load_scene(urdf_xml=ARM_URDF)
    angle = math.pi / 4
    _world_object(scene, "ball", Sphere(TIP_RADIUS_M), _pose(ARM_REACH_M * math.cos(angle),
                                                              ARM_REACH_M * math.sin(angle)))
    return CollisionChecker(scene)


def test_revolute_sweep_hits_at_the_analytic_angle(arm_checker):
    result = arm_checker.check_motion(["shoulder", "elbow"], [0.0, 0.0], [math.pi / 2, 0.0])
    # the tip sphere meets the ball when the chord between their centres is 2 r
    gap = 2.0 * math.asin(TIP_RADIUS_M / ARM_REACH_M)
    expected = (math.pi / 4 - gap) / (math.pi / 2)
    assert not result.valid
    assert result.cc_time == pytest.approx(expected, abs=1e-3)
    assert result.cc_time <= expected + 1e-12
    by_link = {c.link_names[0]: c for c in result.contacts}
    assert by_link["upper"].cc_type == (CCType.BETWEEN, CCType.NONE)


def test_a_link_not_moved_by_the_motion_has_no_cc_time(arm_checker):
    # only the elbow turns: the forearm sweeps into the ball, the upper arm touches it throughout
    scene = load_scene(urdf_xml=ARM_URDF)
    _world_object(scene, "ball", Sphere(TIP_RADIUS_M), _pose(ARM_REACH_M + 0.3 * math.cos(0.6),
                                                              0.3 * math.sin(0.6)))
    checker = CollisionChecker(scene)
    result = checker.check_motion(["shoulder", "elbow"], [0.0, 0.0], [0.0, 1.2])
    assert not result.valid
    (contact,) = [c for c in result.contacts if c.link_names == ("fore", "ball")]
    assert contact.cc_type == (CCType.BETWEEN, CCType.NONE)
    gap = 2.0 * math.asin(TIP_RADIUS_M / 0.3)
    assert result.cc_time == pytest.approx((0.6 - gap) / 1.2, abs=1e-3)


def test_certified_never_misses_what_fine_sampling_finds():
    """Random edges of the two-joint arm among obstacles against a 1e-4 rad discrete reference."""
    scene = load_scene(urdf_xml=ARM_URDF)
    rng = np.random.default_rng(7)
    for k in range(6):
        r, a = rng.uniform(0.3, 0.8), rng.uniform(-math.pi, math.pi)
        _world_object(scene, f"obstacle{k}", Sphere(0.03), _pose(r * math.cos(a), r * math.sin(a)))
    checker = CollisionChecker(scene)
    names = ["shoulder", "elbow"]
    lower, upper = scene.robot.lower_limits, scene.robot.upper_limits
    samples = rng.uniform(lower, upper, size=(400, 2))
    valid, _ = checker.check_batch(names, samples)
    starts = samples[valid]
    step = 1e-4
    n_collide = n_checked = 0
    for q0, q1 in zip(starts[0::2][:30], starts[1::2][:30]):
        certified = checker.check_motion(names, q0, q1)
        reference = checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=step)
        n_checked += 1
        if not reference.valid:
            n_collide += 1
            assert not certified.valid
            assert certified.cc_time <= reference.cc_time + 1e-9
        elif not certified.valid:   # only a near touch, within the tolerance
            assert min(c.distance for c in certified.contacts) < DEFAULT_TOUCH_TOLERANCE_M
    assert n_checked >= 20 and n_collide >= 3


def test_self_pairs_ignore_joints_that_move_both_links():
    """The forearm folding onto the upper arm: the shoulder's turn changes nothing between them."""
    urdf = ARM_URDF.replace('<collision><origin xyz="0.3 0 0"/>', '<collision><origin xyz="-0.3 0 0"/>')
    urdf = urdf.replace('<origin xyz="0.5 0 0"/><geometry>', '<origin xyz="0.15 0 0"/><geometry>')
    scene = load_scene(urdf_xml=urdf, allow_adjacent=False)
    checker = CollisionChecker(scene)
    # upper's sphere 0.35 m behind the elbow, the forearm's 0.3 m behind it once unfolded
    names = ["shoulder", "elbow"]
    a = checker.check_motion(names, [0.0, 2.0], [0.0, 0.0])
    b = checker.check_motion(names, [-2.0, 2.0], [2.0, 0.0])
    assert not a.valid and not b.valid
    assert a.cc_time == pytest.approx(b.cc_time, abs=1e-3)
    # law of cosines: |c_upper - c_fore| = 0.1 m at elbow angle e
    cos_e = (0.35 ** 2 + 0.3 ** 2 - 0.1 ** 2) / (2 * 0.35 * 0.3)
    expected = (2.0 - math.acos(cos_e)) / 2.0
    assert a.cc_time == pytest.approx(expected, abs=1e-3)
    assert {c.link_names for c in a.contacts} == {("upper", "fore")}


def test_attached_objects_ride_their_link(wall_checker):
    scene = wall_checker.scene
    scene.apply([AddObject(SceneObject("rod", (ObjectShape(Box((0.1, 0.01, 0.01)), _pose(x=0.05)),),
                                       np.eye(4), link="ball"))])
    result = wall_checker.check_motion(["x"], [0.0], [1.0])
    assert result.cc_time == pytest.approx(WALL_X_M - 0.1, abs=1e-3)
    rod = [c for c in result.contacts if c.link_names[0] == "rod"]
    assert rod and rod[0].body_types == (BodyType.ROBOT_ATTACHED, BodyType.WORLD_OBJECT)


# ----- trajectories ------------------------------------------------------------------
@pytest.fixture
def block_checker():
    """The slider (ball radius 5 mm) and a 0.2 m block over x in [0.4, 0.6]."""
    scene = load_scene(urdf_xml=SLIDER_URDF)
    _world_object(scene, "block", Box((0.2, 1.0, 1.0)), _pose(x=0.5))
    return CollisionChecker(scene)


@pytest.mark.parametrize("points, times", [([[0.0], [1.0]], [0.0, 2.0]),
                                           ([[0.0], [0.5], [1.0]], [0.0, 1.0, 2.0])])
def test_sweep_through_a_box_is_one_interval(block_checker, points, times):
    """Entry at x = 0.4 - r, exit at x = 0.6 + r, at 0.5 m/s; a waypoint inside the block changes nothing."""
    result = block_checker.check_trajectory(["x"], points, times, stop_at_first_contact=False)
    assert not result.valid and result.status == Status.IN_COLLISION
    (contact_list,) = result.contact_lists
    assert tuple(contact_list.link_names) == ("ball", "block")
    (interval,) = list(contact_list)
    entry_s, exit_s = (0.4 - BALL_RADIUS_M) / 0.5, (0.6 + BALL_RADIUS_M) / 0.5
    assert interval.activation_ns / 1e9 == pytest.approx(entry_s, abs=1e-3)
    assert interval.deactivation_ns / 1e9 == pytest.approx(exit_s, abs=1e-3)
    assert interval.activation_ns / 1e9 <= entry_s
    assert interval.contact.distance == pytest.approx(-(0.1 + BALL_RADIUS_M), abs=2e-3)   # deepest: centred
    assert result.first_invalid_time_s == pytest.approx(entry_s, abs=1e-3)
    assert result.first_invalid_segment == 0
    assert result.first_contact is not None and result.first_contact.contacts


def test_trajectory_two_passes_give_two_intervals(block_checker):
    result = block_checker.check_trajectory(["x"], [[0.0], [1.0], [0.0]], [0.0, 1.0, 2.0],
                                            stop_at_first_contact=False)
    (contact_list,) = result.contact_lists
    first, second = list(contact_list)
    assert first.activation_ns / 1e9 == pytest.approx(0.395, abs=1e-3)
    assert first.deactivation_ns / 1e9 == pytest.approx(0.605, abs=1e-3)
    assert second.activation_ns / 1e9 == pytest.approx(1.395, abs=1e-3)
    assert second.deactivation_ns / 1e9 == pytest.approx(1.605, abs=1e-3)


def test_trajectory_stop_at_first_contact_stops(block_checker):
    result = block_checker.check_trajectory(["x"], [[0.0], [1.0], [0.0]], [0.0, 1.0, 2.0])
    (contact_list,) = result.contact_lists
    assert len(contact_list) == 1 and result.first_invalid_segment == 0


def test_valid_trajectory_and_untimed_waypoints(block_checker):
    valid = block_checker.check_trajectory(["x"], [[0.0], [-0.5], [0.2]], [0.0, 0.0, 0.0])
    assert valid.valid and valid.first_invalid_time_s == -1.0 and valid.first_invalid_segment == -1
    assert valid.contact_lists == ()
    hit = block_checker.check_trajectory(["x"], [[0.0], [0.2], [1.0]], [0.0, 0.0, 0.0])
    # untimed: waypoint index as seconds; the ball reaches 0.395 in segment 1 at (0.395-0.2)/0.8
    assert hit.first_invalid_segment == 1
    assert hit.first_invalid_time_s == pytest.approx(1.0 + 0.195 / 0.8, abs=1e-3)


def test_trajectory_discrete_mode(block_checker):
    result = block_checker.check_trajectory(["x"], [[0.0], [1.0]], [0.0, 1.0], mode=MotionMode.DISCRETE,
                                            max_step=0.01, stop_at_first_contact=False)
    (contact_list,) = result.contact_lists
    (interval,) = list(contact_list)
    assert interval.activation_ns / 1e9 == pytest.approx(0.40, abs=0.011)
    assert interval.deactivation_ns / 1e9 == pytest.approx(0.61, abs=0.011)


# ----- bad input ---------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, words", [
    (dict(joint_names=["x"], start=[0.0], goal=[0.0, 1.0]), "start has 1 positions but goal has 2"),
    (dict(joint_names=["x"], start=[float("nan")], goal=[1.0]), "non-finite"),
    (dict(joint_names=["nope"], start=[0.0], goal=[1.0]), "unknown joint 'nope'"),
    (dict(joint_names=["x"], start=[0.0], goal=[1.0], mode=MotionMode.DISCRETE, max_step=0.0), "max_step"),
    (dict(joint_names=["x"], start=[0.0], goal=[1.0], mode=MotionMode.DISCRETE, max_step=-1.0), "max_step"),
    (dict(joint_names=["x"], start=[0.0], goal=[1.0], group_name="nothing"), "nothing"),
    (dict(joint_names=["x"], start=[0.0], goal=[1.0], tolerance_m=0.0), "tolerance_m"),
    (dict(joint_names=["x"], start=[0.0], goal=[1.0], mode=7), "unknown motion mode"),
])
def test_bad_motion_requests(wall_checker, kwargs, words):
    result = wall_checker.check_motion(**kwargs)
    assert result.status == Status.INVALID_REQUEST and not result.valid
    assert words in result.message


def test_motion_out_of_limits(wall_checker):
    result = wall_checker.check_motion(["x"], [0.0], [3.0])
    assert result.status == Status.OUT_OF_BOUNDS and "goal" in result.message and "'x'" in result.message


@pytest.mark.parametrize("points, times, words", [
    ([], [], "no waypoints"),
    ([[0.0], [0.1, 0.2]], [0.0, 1.0], "waypoint 1 has 2 positions"),
    ([[0.0], [0.1]], [0.0, -1.0], "negative"),
    ([[0.0], [0.1], [0.2]], [0.0, 1.0, 1.0], "waypoint 2 at 1.0 s is not after waypoint 1"),
    ([[0.0], [0.1]], [1.0, 0.5], "is not after"),
    ([[0.0], [float("nan")]], [0.0, 1.0], "non-finite"),
    ([[0.0], [0.1]], [0.0], "2 waypoints but 1 times"),
])
def test_bad_trajectory_requests(block_checker, points, times, words):
    result = block_checker.check_trajectory(["x"], points, times)
    assert result.status == Status.INVALID_REQUEST and words in result.message


def test_trajectory_out_of_limits(block_checker):
    result = block_checker.check_trajectory(["x"], [[0.0], [-0.1], [5.0]], [0.0, 1.0, 2.0])
    assert result.status == Status.OUT_OF_BOUNDS and "waypoint 2" in result.message
    assert result.first_invalid_time_s == 2.0 and result.first_invalid_segment == 1


def test_explain_fills_transforms(wall_checker):
    explanation = wall_checker.explain(["x"], [WALL_X_M])
    (contact,) = explanation.contacts
    np.testing.assert_allclose(contact.transforms[0][:3, 3], [WALL_X_M, 0, 0])
    np.testing.assert_allclose(contact.transforms[1][:3, 3], [WALL_X_M + 0.0005, 0, 0])
    assert contact.cc_type == (CCType.NONE, CCType.NONE) and contact.cc_time == (-1.0, -1.0)


def test_trajectory_intervals_cover_every_sampled_collision():
    """Random arm trajectories among obstacles: every colliding sample (explain, 1/400 of a
    segment apart) lies inside an interval of its body pair, and each interval starts touching."""
    scene = load_scene(urdf_xml=ARM_URDF)
    rng = np.random.default_rng(11)
    for k in range(6):
        r, a = rng.uniform(0.4, 0.7), rng.uniform(-math.pi, math.pi)
        _world_object(scene, f"obstacle{k}", Sphere(0.08), _pose(r * math.cos(a), r * math.sin(a)))
    checker = CollisionChecker(scene)
    names = ["shoulder", "elbow"]
    lower, upper = scene.robot.lower_limits, scene.robot.upper_limits
    n_inside = 0
    for _ in range(6):
        points = rng.uniform(lower, upper, size=(3, 2))
        times = np.array([0.0, 1.0, 2.5])
        result = checker.check_trajectory(names, points, times, stop_at_first_contact=False)
        lists = {tuple(cl.link_names): list(cl) for cl in result.contact_lists}
        for entries in lists.values():
            for interval in entries:
                assert interval.activation_ns < interval.deactivation_ns
        for seg in range(2):
            for u in np.linspace(0.0, 1.0, 401):
                q = points[seg] + u * (points[seg + 1] - points[seg])
                explanation = checker.explain(names, q)
                if explanation.valid:
                    continue
                t_ns = (times[seg] + u * (times[seg + 1] - times[seg])) * 1e9
                for contact in explanation.contacts:
                    entries = lists.get(contact.link_names, [])
                    assert any(i.activation_ns - 1 <= t_ns < i.deactivation_ns + 1 for i in entries), \
                        (contact.link_names, t_ns, [(i.activation_ns, i.deactivation_ns) for i in entries])
                    n_inside += 1
        if not result.valid:
            assert result.first_invalid_time_s * 1e9 == pytest.approx(
                min(i.activation_ns for entries in lists.values() for i in entries), abs=2)
    assert n_inside > 50


def test_a_request_object_gives_the_keywords_motion_verdicts(block_checker):
    from my_collision_pkg.core.checks.request import CheckRequest
    for keywords in (dict(), dict(contact_distance=0.05, max_contacts=1), dict(pad_environment_collisions=False)):
        request = CheckRequest(**keywords)
        for mode in (MotionMode.CERTIFIED, MotionMode.DISCRETE):
            by_request = block_checker.check_motion(["x"], [0.0], [1.0], mode=mode, max_step=0.01, request=request)
            by_keywords = block_checker.check_motion(["x"], [0.0], [1.0], mode=mode, max_step=0.01, **keywords)
            assert (by_request.valid, by_request.status, by_request.message, by_request.cc_time) == \
                (by_keywords.valid, by_keywords.status, by_keywords.message, by_keywords.cc_time)
            assert [c.distance for c in by_request.contacts] == [c.distance for c in by_keywords.contacts]
    trajectory_keywords = dict(pad_environment_collisions=False)
    by_request = block_checker.check_trajectory(["x"], [[0.0], [1.0]], [0.0, 2.0], stop_at_first_contact=False,
                                                request=CheckRequest(**trajectory_keywords))
    by_keywords = block_checker.check_trajectory(["x"], [[0.0], [1.0]], [0.0, 2.0], stop_at_first_contact=False,
                                                 **trajectory_keywords)
    assert (by_request.valid, by_request.status, by_request.message) == \
        (by_keywords.valid, by_keywords.status, by_keywords.message)
    assert [[(i.activation_ns, i.deactivation_ns) for i in cl] for cl in by_request.contact_lists] == \
        [[(i.activation_ns, i.deactivation_ns) for i in cl] for cl in by_keywords.contact_lists]
