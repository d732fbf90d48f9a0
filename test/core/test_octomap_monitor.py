"""The occupancy map monitor (core.perception.monitor): clouds in, the scene's '<octomap>' out.

The Panda (example-robot-data) with synthetic numpy clouds. Expected cells are computed
from the points directly (``OccupancyMap.from_points`` of the points that should be kept);
link poses are cross-checked against pinocchio's forward kinematics (a peer sharing no
code with the package's kinematics); robot surfaces are sampled with trimesh.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.perception.monitor import CloudUpdate, OctomapMonitor
from my_collision_pkg.core.perception.occupancy import OccupancyMap, OctomapFileError, write_binary_octomap
from my_collision_pkg.core.perception.point_cloud import (PointCloudError, decode_point_cloud,
                                                          encode_point_cloud)
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import OCTOMAP_ID, AddObject, ObjectShape, RemoveObject, SceneObject

RESOLUTION_M = 0.02
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.0]        # hand at (0.31, 0, 0.59)
REACH = [0.0, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.0]              # hand at (0.63, 0, 0.38), fingers lower
# A box-shaped cloud (filled, 1 cm apart) where REACH's fingers go and FREE's robot is not.
BOX_LOW_M, BOX_HIGH_M = (0.58, -0.12, 0.26), (0.70, 0.12, 0.34)


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture(scope="module")
def panda_files():
    return panda_paths()


@pytest.fixture
def scene(panda_files):
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    scene.set_current_positions(scene.robot.active_joint_names, FREE)
    return scene


def _box_cloud(low=BOX_LOW_M, high=BOX_HIGH_M, spacing=0.01):
    axes = [np.arange(lo, hi + 1e-9, spacing) for lo, hi in zip(low, high)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


def _keys(points_or_map, resolution=RESOLUTION_M):
    occupancy = points_or_map if isinstance(points_or_map, OccupancyMap) else \
        OccupancyMap.from_points(points_or_map, resolution)
    return occupancy.cell_keys()


def _surface_samples(world, q, per_shape, seed):
    """Points on every robot shape's surface (links and attached objects), planning frame."""
    T = world.shape_transforms(world.robot.link_transforms(np.asarray(q, float)))
    points = []
    for k, entry in enumerate(world.shapes):
        if entry.on_robot:
            mesh = entry.geometry.triangle_mesh().copy()
            mesh.apply_transform(T[k])
            sample, _ = trimesh.sample.sample_surface(mesh, per_shape, seed=seed + k)
            points.append(np.asarray(sample))
    return np.concatenate(points)


# ----- self-filtering ------------------------------------------------------------------
def test_points_on_the_robot_and_attached_objects_are_all_filtered(scene):
    scene.apply([AddObject(SceneObject("gripped_box", (ObjectShape(Box((0.04, 0.04, 0.06))),),
                                       np.eye(4), "panda_hand"))])
    monitor = OctomapMonitor(scene, resolution_m=RESOLUTION_M, padding_m=0.0, max_update_rate_hz=0.0)
    robot_points = _surface_samples(scene.world, FREE, 300, seed=3)
    box = _box_cloud()
    result = monitor.update(np.vstack([robot_points, box]), scene.planning_frame)
    assert result.applied
    assert result.n_robot_filtered == len(robot_points)
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(box))
    assert result.n_cells == scene.occupancy.n_occupied == monitor.stats.cells


def test_padding_filters_points_near_the_robot_and_keeps_the_rest(scene):
    monitor = OctomapMonitor(scene, padding_m=0.03, max_update_rate_hz=0.0)
    world = scene.world
    hand = world.robot.link_transforms(np.asarray(FREE, float))[world.robot.link_index("panda_hand")]
    # the hand's origin lies inside it; points 1 m above the hand are far from every link
    near = hand[:3, 3] + np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.005]])
    far = hand[:3, 3] + np.array([[0.0, 0.0, 1.0], [0.05, 0.0, 1.0]])
    result = monitor.update(np.vstack([near, far]), scene.planning_frame)
    assert result.n_robot_filtered == 2
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(far))


def test_points_and_cells_inside_world_objects_are_cleared(scene):
    scene.apply([AddObject(SceneObject("crate", (ObjectShape(Box((0.1, 0.1, 0.1))),),
                                       _translation(0.64, 0.0, 0.30)))])
    monitor = OctomapMonitor(scene, padding_m=0.0, max_update_rate_hz=0.0)
    box = _box_cloud()
    inside = np.all(np.abs(box - [0.64, 0.0, 0.30]) <= 0.05 + 1e-9, axis=1)
    result = monitor.update(box, scene.planning_frame)
    assert result.n_object_filtered == np.count_nonzero(inside)
    centres = scene.occupancy.leaf_centres_m()
    assert not np.any(np.all(np.abs(centres - [0.64, 0.0, 0.30]) < 0.05, axis=1))
    # a map set as a whole (a file) loses its cells inside the crate too
    published = monitor.set_map(OccupancyMap.from_points(box, RESOLUTION_M))
    centres = published.leaf_centres_m()
    assert not np.any(np.all(np.abs(centres - [0.64, 0.0, 0.30]) < 0.05, axis=1))
    assert published.n_occupied < OccupancyMap.from_points(box, RESOLUTION_M).n_occupied


def _translation(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


# ----- frames ----------------------------------------------------------------------------
def test_a_cloud_in_a_link_frame_lands_where_the_link_pose_puts_it(scene, panda_files):
    pinocchio = pytest.importorskip("pinocchio")
    q = np.array([0.4, -0.3, 0.2, -2.0, 0.1, 1.9, 0.3, 0.02])
    scene.set_current_positions(scene.robot.active_joint_names, q)
    monitor = OctomapMonitor(scene, padding_m=0.0, max_update_rate_hz=0.0)
    # a patch 0.5 m in front of the hand along its approach axis (z), in the hand's frame
    patch_hand = np.stack(np.meshgrid(np.arange(-0.05, 0.05, 0.01), np.arange(-0.05, 0.05, 0.01), [0.5],
                                      indexing="ij"), -1).reshape(-1, 3)
    result = monitor.update(patch_hand, "panda_hand")
    assert result.n_robot_filtered == 0
    # the hand's pose from pinocchio (both finger joints at the finger value)
    model = pinocchio.buildModelFromUrdf(panda_files[0])
    data = model.createData()
    names = list(scene.robot.active_joint_names)
    q_pin = pinocchio.neutral(model)
    for j in range(1, model.njoints):            # the arm's joints (the fingers do not move the hand)
        if model.names[j] in names[:7]:
            q_pin[model.joints[j].idx_q] = q[names.index(model.names[j])]
    pinocchio.forwardKinematics(model, data, q_pin)
    pinocchio.updateFramePlacements(model, data)
    T = data.oMf[model.getFrameId("panda_hand")].homogeneous
    expected = patch_hand @ T[:3, :3].T + T[:3, 3]
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(expected))


def test_unknown_frame_refused_in_one_line_map_unchanged(scene):
    monitor = OctomapMonitor(scene, max_update_rate_hz=0.0)
    monitor.update(_box_cloud(), scene.planning_frame)
    before = scene.occupancy
    with pytest.raises(PointCloudError, match="camera_link") as info:
        monitor.update(_box_cloud(), "camera_link")
    assert "\n" not in str(info.value) and "planning frame" in str(info.value)
    assert scene.occupancy is before
    assert monitor.stats.clouds_refused == 1 and "camera_link" in monitor.stats.last_error


# ----- rate, range, subsampling ----------------------------------------------------------------
def test_clouds_sooner_than_the_rate_allows_are_skipped_and_counted(scene):
    clock = FakeClock()
    monitor = OctomapMonitor(scene, max_update_rate_hz=4.0, clock=clock)     # one every 0.25 s
    first = monitor.update(_box_cloud(), scene.planning_frame)
    assert first.applied
    before = scene.occupancy
    clock.now_s += 0.1
    assert not monitor.admit()
    skipped = monitor.update(_box_cloud(low=(0.6, 0.3, 0.3), high=(0.7, 0.4, 0.4)), scene.planning_frame)
    assert skipped == CloudUpdate(applied=False)
    assert scene.occupancy is before
    assert monitor.stats.clouds_skipped == 2 and monitor.stats.clouds_applied == 1
    clock.now_s += 0.16                                                      # 0.26 s after the first
    moved = monitor.update(_box_cloud(low=(0.6, 0.3, 0.3), high=(0.7, 0.4, 0.4)), scene.planning_frame)
    assert moved.applied and scene.occupancy is not before
    assert monitor.stats.clouds_applied == 2 and monitor.stats.last_update_s == clock.now_s
    # a refused cloud does not count as applied: the next one is not held back by it
    clock.now_s += 0.3
    with pytest.raises(PointCloudError):
        monitor.update(np.zeros((2, 2)), scene.planning_frame)
    assert monitor.admit()


def test_max_range_and_point_subsample(scene):
    monitor = OctomapMonitor(scene, max_range_m=1.0, point_subsample=3, max_update_rate_hz=0.0, padding_m=0.0)
    sensor = np.array([0.64, 0.0, 1.0])                   # 0.66 to 0.76 m above the box's points
    cloud = np.vstack([_box_cloud(), [[5.0, 0.0, 1.5], [0.0, 8.0, 1.5], [0.0, 0.0, 40.0]]])
    result = monitor.update(cloud, scene.planning_frame, sensor_origin_m=sensor)
    kept = cloud[::3]
    within = kept[np.linalg.norm(kept - sensor, axis=1) <= 1.0]
    assert result.n_subsampled_out == len(cloud) - len(kept)
    assert result.n_beyond_range == len(kept) - len(within) > 0
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(within))


def test_decoded_clouds_keep_their_counts_and_messages_decode(scene):
    monitor = OctomapMonitor(scene, max_update_rate_hz=0.0, padding_m=0.0)
    box = _box_cloud()
    cloud = np.vstack([box, [[np.nan, 0.0, 0.0], [np.inf, 1.0, 1.0]]])
    decoded = decode_point_cloud(**encode_point_cloud(cloud))
    result = monitor.update(decoded, scene.planning_frame)
    assert result.n_received == len(cloud) and result.n_non_finite == 2
    assert monitor.stats.points_non_finite == 2
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(box))

    class Header:
        frame_id = "panda_link0"

    class Message:
        header = Header()

    message = Message()
    for name, value in encode_point_cloud(box + [0.0, 0.0, 0.1]).items():
        setattr(message, name, value)
    result = monitor.update_message(message)
    assert result.applied
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(box + [0.0, 0.0, 0.1]))


# ----- bad input -------------------------------------------------------------------------------
def _message(frame="panda_link0", **changes):
    class Header:
        frame_id = frame

    class Message:
        header = Header()

    message = Message()
    fields = encode_point_cloud(_box_cloud(low=(0.6, 0.3, 0.3), high=(0.7, 0.4, 0.4)))
    fields.update(changes)
    for name, value in fields.items():
        setattr(message, name, value)
    return message


@pytest.mark.parametrize("make, fault", [
    (lambda m: m.update(np.zeros((3, 2)), "panda_link0"), "(N, 3)"),
    (lambda m: m.update(np.array([[0.5, 0.0, np.nan]]), "panda_link0"), "NaN"),
    (lambda m: m.update(_box_cloud(), "panda_link0", sensor_origin_m=(0, 0)), "sensor origin"),
    (lambda m: m.update(np.full((1, 3), 1e4), "panda_link0"), "spans"),
    (lambda m: m.update(_box_cloud(), "tool0"), "tool0"),
    (lambda m: m.update_message(_message(fields=[("y", 4, 7, 1), ("z", 8, 7, 1)])), "no x field"),
    (lambda m: m.update_message(_message(point_step=8)), "point_step"),
    (lambda m: m.update_message(_message(data=b"\0" * 5)), "bytes"),
    (lambda m: m.update_message(_message(width=10 ** 6, row_step=12 * 10 ** 6)), "bound of 100000"),
    (lambda m: m.update_message(_message(frame="odom")), "odom"),
])
def test_bad_input_raises_one_line_and_leaves_the_map(scene, make, fault):
    monitor = OctomapMonitor(scene, max_range_m=math.inf, max_update_rate_hz=0.0, max_cloud_points=100_000)
    monitor.update(_box_cloud(), scene.planning_frame)
    world, before = scene.world, scene.occupancy
    with pytest.raises(PointCloudError) as info:
        make(monitor)
    assert fault in str(info.value) and "\n" not in str(info.value)
    assert scene.world is world and scene.occupancy is before
    assert monitor.stats.clouds_refused == 1 and monitor.stats.clouds_applied == 1


def test_bad_maps_refused_and_the_map_kept(scene, tmp_path):
    monitor = OctomapMonitor(scene, mode="accumulate", max_update_rate_hz=0.0)
    monitor.update(_box_cloud(), scene.planning_frame)
    before = scene.occupancy
    corrupt = tmp_path / "broken.bt"
    good = tmp_path / "good.bt"
    write_binary_octomap(str(good), OccupancyMap.from_points(_box_cloud(), 0.05))
    corrupt.write_bytes(good.read_bytes()[:-7])
    with pytest.raises(OctomapFileError, match="broken.bt"):
        monitor.set_map(OccupancyMap.load(str(corrupt)))
    with pytest.raises(PointCloudError, match="resolution"):       # accumulate needs its own resolution
        monitor.set_map(OccupancyMap.load(str(good)))
    with pytest.raises(PointCloudError, match="OccupancyMap"):
        monitor.set_map("good.bt")
    with pytest.raises(PointCloudError, match="resolution"):
        monitor.set_points(_box_cloud(), resolution_m=-1.0)
    assert scene.occupancy is before


@pytest.mark.parametrize("option, value", [
    ("resolution_m", 0.0), ("resolution_m", 2.0), ("mode", "latest"), ("max_range_m", 0.0),
    ("max_range_m", float("nan")), ("padding_m", -0.01), ("padding_m", 5.0), ("point_subsample", 0),
    ("point_subsample", 1.5), ("max_update_rate_hz", -1.0), ("max_cloud_points", 0),
    ("max_cloud_points", 10 ** 9),
])
def test_options_checked_in_the_constructor_by_name(scene, option, value):
    with pytest.raises(PointCloudError, match=f"'{option}'"):
        OctomapMonitor(scene, **{option: value})


# ----- the map as a whole, and the checks -------------------------------------------------------------
def test_the_map_changes_the_checks_and_clear_restores_them(scene):
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    assert checker.check(names, np.asarray(REACH)).valid
    monitor = OctomapMonitor(scene, max_update_rate_hz=0.0)
    monitor.update(_box_cloud(), scene.planning_frame)
    verdict = checker.check(names, np.asarray(REACH))
    assert not verdict.valid and OCTOMAP_ID in verdict.message
    assert checker.check(names, np.asarray(FREE)).valid
    cells = scene.occupancy.n_occupied
    assert monitor.clear() == cells
    assert scene.occupancy is None and OCTOMAP_ID not in scene.world.objects
    assert checker.check(names, np.asarray(REACH)).valid
    assert monitor.stats.cells == 0 and monitor.clear() == 0


def test_set_points_and_set_map_from_a_file(scene, tmp_path):
    monitor = OctomapMonitor(scene, max_update_rate_hz=0.0)
    published = monitor.set_points(_box_cloud(), resolution_m=0.04)
    assert published.resolution_m == 0.04 and scene.occupancy is published
    np.testing.assert_array_equal(_keys(published, 0.04), _keys(_box_cloud(), 0.04))
    path = tmp_path / "box.bt"
    write_binary_octomap(str(path), OccupancyMap.from_points(_box_cloud(), RESOLUTION_M))
    loaded = monitor.set_map(OccupancyMap.load(str(path)))
    np.testing.assert_array_equal(loaded.cell_keys(), _keys(_box_cloud()))
    assert monitor.set_points(np.zeros((0, 3))).n_occupied == 0 and scene.occupancy is None


def test_accumulate_adds_clouds_and_follows_a_removed_map(scene):
    monitor = OctomapMonitor(scene, mode="accumulate", max_update_rate_hz=0.0, padding_m=0.0)
    a, b = _box_cloud(), _box_cloud(low=(0.6, 0.3, 0.3), high=(0.7, 0.4, 0.4))
    monitor.update(a, scene.planning_frame, sensor_origin_m=(0.0, 0.0, 1.0))
    monitor.update(b, scene.planning_frame, sensor_origin_m=(0.0, -1.0, 1.0))
    np.testing.assert_array_equal(_keys(scene.occupancy), np.union1d(_keys(a), _keys(b)))
    scene.apply([RemoveObject(OCTOMAP_ID)])              # removed from outside: the monitor forgets it too
    monitor.update(b, scene.planning_frame, sensor_origin_m=(0.0, -1.0, 1.0))
    np.testing.assert_array_equal(_keys(scene.occupancy), _keys(b))
