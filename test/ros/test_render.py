"""Headless PNG pictures of a checked Panda configuration (render.py)."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from matplotlib.image import imread

from my_collision_pkg.viz import render
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import ContactType
from my_collision_pkg.ros.conversions import contact_report, fill_check_motion_response, fill_explain_response
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, MotionMode
from my_collision_pkg.viz.render import RenderedImage, render_report_png
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject
from my_collision_pkg.srv import CheckMotion, ExplainCollision
from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces
from my_collision_pkg.core.model.transforms import make_transform, rpy_to_matrix

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
ARM = [f"panda_joint{i}" for i in range(1, 8)]
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]
SIZE_PX = (640, 480)
MIN_PNG_BYTES = 20_000
WINDOW_PX = 3            # half-size of the pixel window compared around a contact
RNG_SEED = 3
# A joint-1 swing of the stretched-out arm through a 1 mm plate standing on the table (as in make demo):
# the fingertips cross the plate near joint 1 = 0.013 rad, between the 0.05 rad samples at 0 and 0.05.
STRETCHED = np.array([0.0, 1.3, 0.0, -0.2, 0.0, 1.5, -0.785])
SWING_RAD = (-0.5, 0.5)
PLATE_ANGLE_RAD, PLATE_RADIUS_M, PLATE_TOP_Z_M, TABLE_TOP_Z_M = 0.025, 0.792, 0.245, 0.17
PLATE_SIZE_M = (0.06, 0.001, PLATE_TOP_Z_M - TABLE_TOP_Z_M)       # radial, along the swing, height
ZOOM_HALF_SIZE_M = 0.12


@pytest.fixture(scope="module")
def panda():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    return scene, CollisionChecker(scene)


@pytest.fixture(scope="module")
def into_table(panda):
    scene, checker = panda
    explanation = checker.explain(ARM, INTO_TABLE)
    assert not explanation.valid and explanation.contacts
    return explanation, explanation_surfaces(scene.world, explanation)


def window(image: np.ndarray, pixel) -> np.ndarray:
    col, row = (int(round(v)) for v in pixel)
    return image[max(row - WINDOW_PX, 0):row + WINDOW_PX + 1, max(col - WINDOW_PX, 0):col + WINDOW_PX + 1, :3]


def test_png_is_written(tmp_path, panda, into_table):
    scene, _ = panda
    explanation, surfaces = into_table
    path = tmp_path / "env.png"
    image = render_report_png(str(path), scene.world, explanation, surfaces, size_px=SIZE_PX)
    assert isinstance(image, RenderedImage) and image.path == str(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > MIN_PNG_BYTES
    pixels = imread(str(path))
    assert pixels.shape[:2] == (SIZE_PX[1], SIZE_PX[0])
    assert image.contact_pixels.shape == (len(explanation.contacts), 2)
    inside = (image.contact_pixels >= 0) & (image.contact_pixels < np.array(SIZE_PX))
    assert inside.all(), "every contact is in the picture"


def test_pixels_differ_where_the_contacts_are(tmp_path, panda, into_table):
    scene, _ = panda
    explanation, surfaces = into_table
    with_contacts = render_report_png(str(tmp_path / "with.png"), scene.world, explanation, surfaces,
                                      size_px=SIZE_PX)
    without = render_report_png(str(tmp_path / "without.png"), scene.world,
                                dataclasses.replace(explanation, contacts=()), (), size_px=SIZE_PX)
    a, b = imread(with_contacts.path), imread(without.path)
    for pixel in with_contacts.contact_pixels:
        assert np.abs(window(a, pixel) - window(b, pixel)).max() > 0.3
        r, g, _ = window(a, pixel).reshape(-1, 3).mean(axis=0)
        assert r > 0.5 and g < 0.5 * r, "a red dot"
    # the same scene elsewhere: the bottom-left corner holds no contact and no title
    np.testing.assert_array_equal(a[-20:, :20], b[-20:, :20])


def test_a_report_message_draws_like_the_explanation(tmp_path, panda, into_table):
    scene, _ = panda
    explanation, surfaces = into_table
    message = contact_report(explanation, scene.planning_frame, Time(sec=1), surfaces)
    from_core = render_report_png(str(tmp_path / "core.png"), scene.world, explanation, surfaces, size_px=SIZE_PX)
    from_msg = render_report_png(str(tmp_path / "msg.png"), scene.world, message, size_px=SIZE_PX)
    np.testing.assert_allclose(from_msg.contact_pixels, from_core.contact_pixels, atol=1e-6)
    np.testing.assert_allclose(imread(from_msg.path), imread(from_core.path), atol=1.0 / 255)


def test_title_names_the_deepest_pair_and_its_depth(panda, into_table):
    explanation, _ = into_table
    contacts = render._contacts(explanation)
    deepest = min(explanation.contacts, key=lambda c: c.distance)
    title = render._title(contacts)
    assert title.startswith(f"{deepest.link_names[0]}={deepest.link_names[1]}: penetration ")
    assert f"{deepest.penetration_depth * 1000:.1f} mm" in title
    assert render._title([]) == "no collision"


def test_self_collision_renders(tmp_path, panda):
    scene, checker = panda
    robot = scene.robot
    rng = np.random.default_rng(RNG_SEED)
    Q = rng.uniform(robot.lower_limits[:7], robot.upper_limits[:7], size=(2000, 7))
    valid, _ = checker.check_batch(ARM, Q)
    for q in Q[~valid]:
        explanation = checker.explain(ARM, q)
        if explanation.contacts and all(c.type == ContactType.SELF for c in explanation.contacts):
            break
    else:
        pytest.fail("no self-collision among 2000 random configurations")
    surfaces = explanation_surfaces(scene.world, explanation)
    image = render_report_png(str(tmp_path / "self.png"), scene.world, explanation, surfaces,
                              title="self-collision", view=(10.0, 30.0), size_px=SIZE_PX)
    assert os.path.getsize(image.path) > MIN_PNG_BYTES


def test_a_configuration_that_does_not_fit_the_robot_is_refused(tmp_path, panda, into_table):
    scene, _ = panda
    explanation, _ = into_table
    short = dataclasses.replace(explanation, positions=np.zeros(3))
    with pytest.raises(ValueError, match="3 positions"):
        render_report_png(str(tmp_path / "x.png"), scene.world, short)


def test_command_line(tmp_path, capsys):
    out = tmp_path / "cli.png"
    assert render.main(["--out", str(out), "--positions", *map(str, INTO_TABLE)]) == 0
    assert out.stat().st_size > MIN_PNG_BYTES
    printed = capsys.readouterr().out
    assert "table" in printed and str(out) in printed
    assert render.main(["--out", str(out), "--urdf", str(tmp_path / "missing.urdf"), "--positions", "0"]) == 1
    with pytest.raises(SystemExit) as exit_info:
        render.main(["--help"])
    assert exit_info.value.code == 0


def test_explain_responses_to_a_folder(tmp_path, panda, into_table):
    scene, _ = panda
    explanation, surfaces = into_table
    response = fill_explain_response(ExplainCollision.Response(), explanation, surfaces, Time(sec=1))
    folder = tmp_path / "pictures"
    paths = render.render_explanation_pngs(
        [("environment collision: into the table", response), ("environment collision: again", response)],
        str(folder), world_path=PANDA_WORLD)
    assert [os.path.basename(p) for p in paths] == ["environment_collision.png", "environment_collision_2.png"]
    assert all(os.path.getsize(p) > MIN_PNG_BYTES for p in paths)
    # the response's own surfaces are drawn: the picture differs from one without them
    bare = fill_explain_response(ExplainCollision.Response(), explanation, (), Time(sec=1))
    [plain] = render.render_explanation_pngs([("environment collision: into the table", bare)],
                                             str(tmp_path / "plain"), world_path=PANDA_WORLD)
    assert not np.array_equal(imread(paths[0]), imread(plain))


@pytest.fixture(scope="module")
def through_plate():
    """The certified MotionResult of the swing through the plate, with its scene and checker."""
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    T_world_plate = make_transform(rpy_to_matrix(0.0, 0.0, PLATE_ANGLE_RAD),
                                   np.array([PLATE_RADIUS_M * np.cos(PLATE_ANGLE_RAD),
                                             PLATE_RADIUS_M * np.sin(PLATE_ANGLE_RAD),
                                             TABLE_TOP_Z_M + 0.5 * PLATE_SIZE_M[2]]))
    scene.apply([AddObject(SceneObject("plate", (ObjectShape(Box(PLATE_SIZE_M)),), T_world_plate))])
    checker = CollisionChecker(scene)
    start, goal = STRETCHED.copy(), STRETCHED.copy()
    start[0], goal[0] = SWING_RAD
    discrete = checker.check_motion(ARM, start, goal, mode=MotionMode.DISCRETE, max_step=0.05)
    assert discrete.valid, "the plate lies between two samples 0.05 rad apart"
    result = checker.check_motion(ARM, start, goal)
    assert not result.valid and 0.5 < result.cc_time < 0.52 and result.contacts
    return scene, result


def test_a_motions_first_contact_is_drawn(tmp_path, through_plate):
    scene, result = through_plate
    # the check stops within its tolerance of the plate: a touch at a small positive distance, still a contact
    assert 0.0 < min(c.distance for c in result.contacts) <= 2 * DEFAULT_TOUCH_TOLERANCE_M
    drawn = render._contacts(result)
    assert all(c.touching for c in drawn)
    # a near miss requested beside it stays yellow; a valid motion has no touches
    far = dataclasses.replace(result.contacts[0], distance=result.contacts[0].distance + 0.01)
    assert [c.touching for c in render._contacts(dataclasses.replace(result, contacts=(*result.contacts, far)))] \
        == [True] * len(result.contacts) + [False]
    assert not any(c.touching for c in render._contacts(dataclasses.replace(result, cc_time=-1.0)))
    assert all("plate" in c.names for c in drawn)
    image = render_report_png(str(tmp_path / "motion.png"), scene.world, result, size_px=SIZE_PX,
                              zoom_half_size_m=ZOOM_HALF_SIZE_M)
    data = (tmp_path / "motion.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > MIN_PNG_BYTES
    a = imread(image.path)
    assert a.shape[:2] == (SIZE_PX[1], SIZE_PX[0])
    assert image.contact_pixels.shape == (len(result.contacts), 2)
    inside = (image.contact_pixels >= 0) & (image.contact_pixels < np.array(SIZE_PX))
    assert inside.all(), "every contact is in the close-up"
    without = render_report_png(str(tmp_path / "bare.png"), scene.world, dataclasses.replace(result, contacts=()),
                                size_px=SIZE_PX, zoom_half_size_m=ZOOM_HALF_SIZE_M)
    b = imread(without.path)
    for pixel in image.contact_pixels:
        assert np.abs(window(a, pixel) - window(b, pixel)).max() > 0.3
        r, g, _ = window(a, pixel).reshape(-1, 3).mean(axis=0)
        assert r > 0.5 and g < 0.5 * r, "a red dot"
    assert render._title(drawn, result.cc_time).startswith(
        f"{'='.join(result.contacts[0].link_names)}: first contact at cc_time {result.cc_time:.5f}")


def test_the_close_up_shows_the_plate(tmp_path, panda, through_plate):
    scene, result = through_plate
    without_plate, _ = panda                        # the same world file, no plate
    # the same report (the close-up is centred on its contacts), drawn with and without the plate
    with_plate = render_report_png(str(tmp_path / "plate.png"), scene.world, result, size_px=SIZE_PX,
                                   zoom_half_size_m=ZOOM_HALF_SIZE_M)
    plain = render_report_png(str(tmp_path / "noplate.png"), without_plate.world, result, size_px=SIZE_PX,
                              zoom_half_size_m=ZOOM_HALF_SIZE_M)
    differ = np.abs(imread(with_plate.path)[..., :3] - imread(plain.path)[..., :3]).max(axis=2) > 0.05
    assert differ.sum() > 500, "the plate covers a visible patch of the close-up"
    with pytest.raises(ValueError, match="zoom_half_size_m"):
        render_report_png(str(tmp_path / "x.png"), scene.world, result, zoom_half_size_m=0.0)


def test_a_check_motion_response_draws_like_the_motion_result(tmp_path, through_plate):
    scene, result = through_plate
    response = fill_check_motion_response(CheckMotion.Response(), result, Time(sec=1))
    from_core = render_report_png(str(tmp_path / "core.png"), scene.world, result, size_px=SIZE_PX,
                                  zoom_half_size_m=ZOOM_HALF_SIZE_M)
    from_msg = render_report_png(str(tmp_path / "msg.png"), scene.world, response, size_px=SIZE_PX,
                                 zoom_half_size_m=ZOOM_HALF_SIZE_M)
    np.testing.assert_allclose(from_msg.contact_pixels, from_core.contact_pixels, atol=1e-6)
    np.testing.assert_allclose(imread(from_msg.path), imread(from_core.path), atol=1.0 / 255)
