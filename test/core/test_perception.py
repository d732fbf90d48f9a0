"""Perception core: point cloud decoding, cloud frames, self-filtering, occupancy maps.

Synthetic clouds only (numpy). The self-filter is cross-checked against trimesh's own
closest-point and inside tests on the posed link meshes (a peer that shares no code with
the compiled kernels); occupancy cells against coal's own octree and octomap's ray casting.
"""
from __future__ import annotations

import os

import coal
import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.model.shapes import Box, Cylinder, Sphere
from my_collision_pkg.core.perception.cloud_frames import cloud_to_planning_frame, frame_pose
from my_collision_pkg.core.perception.occupancy import (MODE_ACCUMULATE, MODE_REPLACE, OccupancyMap,
                                                        OccupancyUpdater, OctomapFileError, write_binary_octomap)
from my_collision_pkg.core.perception.point_cloud import (FLOAT32, FLOAT64, INT16, MAX_CLOUD_POINTS, UINT8,
                                                          PointCloudError, decode_point_cloud,
                                                          decode_point_cloud_message, encode_point_cloud)
from my_collision_pkg.core.perception.self_filter import (SURFACE_TOLERANCE_M, clear_cells_in_world_objects,
                                                          filter_robot_points, points_outside_world_objects)
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

RESOLUTION_M = 0.02


@pytest.fixture(scope="module")
def panda():
    urdf, srdf = panda_paths()
    return load_scene(urdf_path=urdf, srdf_path=srdf)


def _translation(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _random_configurations(scene, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = scene.robot.lower_limits, scene.robot.upper_limits
    return rng.uniform(lo, hi, (n, len(lo)))


def _posed_surface_samples(world, q, per_shape, seed):
    """Points on every robot shape's surface (planning frame) and the posed meshes (trimesh)."""
    T = world.shape_transforms(world.robot.link_transforms(q))
    points, meshes = [], []
    for k, entry in enumerate(world.shapes):
        if not entry.on_robot:
            continue
        mesh = entry.geometry.triangle_mesh().copy()
        mesh.apply_transform(T[k])
        sample, _ = trimesh.sample.sample_surface(mesh, per_shape, seed=seed + k)
        points.append(np.asarray(sample))
        meshes.append(mesh)
    return np.concatenate(points), meshes


def _box_surface(center, size, spacing):
    """Points on the faces of an axis-aligned box, spacing apart (planning frame)."""
    c, h = np.asarray(center, float), np.asarray(size, float) / 2
    out = []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        gu = np.arange(-h[u], h[u] + 1e-12, spacing)
        gv = np.arange(-h[v], h[v] + 1e-12, spacing)
        U, V = np.meshgrid(gu, gv)
        for sign in (-1, 1):
            p = np.zeros((U.size, 3))
            p[:, axis] = sign * h[axis]
            p[:, u], p[:, v] = U.ravel(), V.ravel()
            out.append(p + c)
    return np.concatenate(out)


# ----- decoding ---------------------------------------------------------------------------------
@pytest.mark.parametrize("datatype", [FLOAT32, FLOAT64])
@pytest.mark.parametrize("big_endian", [False, True])
def test_decode_round_trip(datatype, big_endian):
    rng = np.random.default_rng(1)
    points = rng.uniform(-2, 2, (500, 3))
    cloud = encode_point_cloud(points, datatype=datatype, extra_bytes=4, is_bigendian=big_endian)
    decoded = decode_point_cloud(**cloud)
    expected = points.astype(np.float32).astype(float) if datatype == FLOAT32 else points
    np.testing.assert_array_equal(decoded.points_m, expected)
    assert (decoded.n_received, decoded.n_non_finite, decoded.n_beyond_range) == (500, 0, 0)


def test_decode_organised_cloud_with_padded_rows_and_other_fields():
    """A 4 x 3 cloud: rgb before x, fields in another order, 8 padding bytes per row."""
    width, height, point_step, row_pad = 4, 3, 32, 8
    row_step = width * point_step + row_pad
    data = bytearray(row_step * height)
    expected = np.zeros((height, width, 3))
    for r in range(height):
        for c in range(width):
            xyz = np.array([r + 0.25, c - 0.5, r * c * 0.125])
            expected[r, c] = xyz
            base = r * row_step + c * point_step
            data[base:base + 4] = np.array([7], "<u4").tobytes()                  # rgb
            data[base + 8:base + 16] = np.array([xyz[2]], "<f8").tobytes()         # z as FLOAT64
            data[base + 16:base + 20] = np.array([xyz[0]], "<f4").tobytes()        # x
            data[base + 20:base + 24] = np.array([xyz[1]], "<f4").tobytes()        # y
    fields = [("rgb", 0, 6, 1), ("z", 8, FLOAT64, 1), ("x", 16, FLOAT32, 1), ("y", 20, FLOAT32, 1)]
    decoded = decode_point_cloud(fields=fields, data=bytes(data), point_step=point_step, row_step=row_step,
                                 width=width, height=height, is_bigendian=False)
    np.testing.assert_array_equal(decoded.points_m, expected.reshape(-1, 3))


def test_decode_integer_fields_and_field_objects():
    class Field:
        def __init__(self, name, offset, datatype, count):
            self.name, self.offset, self.datatype, self.count = name, offset, datatype, count

    values = np.array([[1, -2, 300], [-400, 5, 6]], dtype="<i2")
    decoded = decode_point_cloud(fields=[Field("x", 0, INT16, 1), Field("y", 2, INT16, 1), Field("z", 4, INT16, 1)],
                                 data=values.tobytes(), point_step=6, row_step=12, width=2, height=1)
    np.testing.assert_array_equal(decoded.points_m, values.astype(float))


def test_decode_message_like_object():
    class Cloud:
        pass

    points = np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]])
    msg = Cloud()
    for key, value in encode_point_cloud(points, datatype=FLOAT64).items():
        setattr(msg, key, value)
    msg.data = list(msg.data)                       # rclpy may hand uint8[] as a sequence of ints
    np.testing.assert_array_equal(decode_point_cloud_message(msg).points_m, points)
    del msg.row_step
    with pytest.raises(PointCloudError, match="row_step"):
        decode_point_cloud_message(msg)


def test_non_finite_points_dropped_and_counted_and_range():
    points = np.array([[1, 0, 0], [np.nan, 0, 0], [0, np.inf, 0], [3, 0, 0], [0, 0, -np.inf], [0.5, 0.5, 0.5]])
    cloud = encode_point_cloud(points, datatype=FLOAT32)
    decoded = decode_point_cloud(**cloud)
    assert decoded.n_non_finite == 3 and decoded.n_beyond_range == 0
    np.testing.assert_array_equal(decoded.points_m, points[[0, 3, 5]])
    ranged = decode_point_cloud(**cloud, max_range_m=2.0)
    assert ranged.n_non_finite == 3 and ranged.n_beyond_range == 1
    np.testing.assert_array_equal(ranged.points_m, points[[0, 5]])
    # range from a sensor origin other than the frame's: (3, 0, 0) is 0.5 m from (2.5, 0, 0)
    shifted = decode_point_cloud(**cloud, max_range_m=1.0, sensor_origin_m=(2.5, 0, 0))
    np.testing.assert_array_equal(shifted.points_m, points[[3]])


def _cloud(**changes):
    cloud = encode_point_cloud(np.zeros((10, 3)), datatype=FLOAT32)
    cloud.update(changes)
    return cloud


@pytest.mark.parametrize("changes, fault", [
    (dict(fields=[("x", 0, FLOAT32, 1), ("y", 4, FLOAT32, 1)]), "no z field"),
    (dict(fields=[("rgb", 0, FLOAT32, 1)]), "no x, y, z fields"),
    (dict(fields=[("x", 0, FLOAT32, 1), ("y", 4, FLOAT32, 1), ("z", 8, 9, 1)]), "field 'z' has unsupported datatype 9"),
    (dict(fields=[("x", 0, FLOAT32, 1), ("y", 4, FLOAT32, 1), ("z", 8, FLOAT64, 1)]), "point_step 12 is too small"),
    (dict(point_step=8, row_step=80), "point_step 8 is too small"),
    (dict(fields=[("x", 0, FLOAT32, 1), ("y", 2, FLOAT32, 1), ("z", 8, FLOAT32, 1)]), "fields 'x' and 'y' overlap"),
    (dict(fields=[("x", 0, FLOAT32, 1), ("y", 4, FLOAT32, 1), ("z", 8, FLOAT32, 1), ("x", 0, UINT8, 1)]),
     "field 'x' appears twice"),
    (dict(data=bytes(100)), "data has 100 bytes, not row_step \\* height = 120"),
    (dict(row_step=100), "row_step 100 is smaller than width \\* point_step"),
    (dict(width=-1), "width is -1"),
    (dict(point_step=12.0), "point_step is 12.0"),
    (dict(fields=[("x", 0, FLOAT32)]), "field 0 has 3 entries"),
])
def test_bad_clouds_refused_by_name(changes, fault):
    with pytest.raises(PointCloudError, match=fault):
        decode_point_cloud(**_cloud(**changes))


def test_cloud_beyond_size_bound_refused_before_reading_data():
    with pytest.raises(PointCloudError, match=f"more than the bound of {MAX_CLOUD_POINTS} \\(MAX_CLOUD_POINTS\\)"):
        decode_point_cloud(**_cloud(width=MAX_CLOUD_POINTS + 1, row_step=12 * (MAX_CLOUD_POINTS + 1)))
    with pytest.raises(PointCloudError, match="more than the bound of 5"):
        decode_point_cloud(**_cloud(), max_points=5)


# ----- frames ---------------------------------------------------------------------------------
def test_cloud_in_link_frame_lands_where_the_link_pose_puts_it(panda):
    robot, world = panda.robot, panda.world
    q = _random_configurations(panda, 1, seed=3)[0]
    link = "panda_link7"
    T_world_link = robot.link_transforms(q)[robot.link_index(link)]
    # points on link7's own shapes, written in link7's frame
    k = next(i for i, e in enumerate(world.shapes) if e.owner == link)
    mesh = world.shapes[k].geometry.triangle_mesh().copy()
    mesh.apply_transform(world.shapes[k].T_frame_shape)           # shape frame -> link frame
    points_link, _ = trimesh.sample.sample_surface(mesh, 2000, seed=5)
    points_world, T = cloud_to_planning_frame(np.asarray(points_link), link, robot, q)
    np.testing.assert_allclose(T, T_world_link)
    # the link frame's origin and axes land on the link pose's translation and columns
    unit, _ = cloud_to_planning_frame(np.vstack([np.zeros(3), np.eye(3)]), "/" + link, robot, q)
    np.testing.assert_allclose(unit[0], T_world_link[:3, 3], atol=1e-12)
    np.testing.assert_allclose(unit[1:] - unit[0], T_world_link[:3, :3].T, atol=1e-12)
    # and they lie on the posed link: all filtered; read as planning-frame points they are not
    assert filter_robot_points(world, q, points_world).n_dropped == len(points_world)
    planning, T_plan = cloud_to_planning_frame(points_world, robot.root_link, robot, q)
    np.testing.assert_array_equal(planning, points_world)
    np.testing.assert_array_equal(T_plan, np.eye(4))


def test_unknown_frame_refused_with_the_fix(panda):
    q = panda.current_positions
    with pytest.raises(PointCloudError, match="frame 'camera_depth_optical_frame' is neither the planning frame "
                                              "'panda_link0' nor a link .* transform the cloud into 'panda_link0'"):
        frame_pose(panda.robot, "camera_depth_optical_frame", q)
    with pytest.raises(PointCloudError, match="empty frame_id"):
        cloud_to_planning_frame(np.zeros((1, 3)), "", panda.robot, q)


# ----- self-filter --------------------------------------------------------------------------------
def test_points_on_the_robot_surfaces_are_all_filtered(panda):
    world = panda.world
    for q in _random_configurations(panda, 4, seed=11):
        points, _ = _posed_surface_samples(world, q, 800, seed=int(q[0] * 1000) % 97)
        result = filter_robot_points(world, q, points, padding_m=0.0)
        assert result.n_dropped == len(points), f"{len(points) - result.n_dropped} surface points kept at q={q}"
        assert np.all(result.nearest_shape >= 0)
        assert len(result.points_m) == 0
        # the same points through a FLOAT32 PointCloud2 (coordinates rounded by up to 6e-8 m)
        decoded = decode_point_cloud(**encode_point_cloud(points, datatype=FLOAT32)).points_m
        assert np.max(np.abs(decoded - points)) > 1e-9
        assert filter_robot_points(world, q, decoded, padding_m=0.0).n_dropped == len(points)


def test_points_in_front_of_the_robot_are_kept(panda):
    world, q = panda.world, panda.current_positions
    rng = np.random.default_rng(2)
    points = rng.uniform([0.9, -0.5, 0.0], [1.4, 0.5, 0.8], (5000, 3))     # beyond the arm's reach at q
    result = filter_robot_points(world, q, points, padding_m=0.05)
    assert result.n_dropped == 0
    np.testing.assert_array_equal(result.points_m, points)
    assert np.all(result.nearest_shape == -1)


@pytest.mark.parametrize("padding_m", [0.0, 0.01, 0.04])
def test_filter_agrees_with_trimesh_distance_and_inside(panda, padding_m):
    """Random points around the arm: dropped exactly when trimesh finds them inside a posed
    shape or within the padding of one (points within 1e-6 m of the limit are not judged)."""
    world = panda.world
    q = _random_configurations(panda, 1, seed=21)[0]
    surface, meshes = _posed_surface_samples(world, q, 300, seed=1)
    rng = np.random.default_rng(4)
    # points near the surfaces (within 6 cm of a surface sample) and some anywhere around
    near = surface[rng.integers(0, len(surface), 1500)] + rng.normal(0, 0.03, (1500, 3))
    points = np.vstack([near, rng.uniform(surface.min(0) - 0.1, surface.max(0) + 0.1, (500, 3))])
    distance = np.full(len(points), np.inf)
    inside = np.zeros(len(points), dtype=bool)
    for mesh in meshes:
        _, d, _ = trimesh.proximity.closest_point(mesh, points)
        distance = np.minimum(distance, d)
        inside |= mesh.contains(points)
    limit = max(padding_m, SURFACE_TOLERANCE_M)
    expected = inside | (distance <= limit)
    judged = inside | (np.abs(distance - limit) > 1e-6)
    result = filter_robot_points(world, q, points, padding_m=padding_m)
    dropped = ~result.keep
    assert expected.sum() > 50 and (~expected).sum() > 50
    mismatch = np.flatnonzero((dropped != expected) & judged)
    assert len(mismatch) == 0, (f"{len(mismatch)} points disagree, e.g. {points[mismatch[:3]]} distance "
                                f"{distance[mismatch[:3]]} inside {inside[mismatch[:3]]}")


def test_points_within_padding_filtered_beyond_kept_primitives():
    """Analytic distances to a sphere, a box and a cylinder attached to the hand (far from the arm)."""
    scene = load_scene(urdf_path=panda_paths()[0], srdf_path=panda_paths()[1])
    bare = scene.world
    hand = "panda_hand"
    # (shape, its centre in the hand frame, its surface's distance from the centre along hand x)
    parts = ((Sphere(0.05), (0.0, 0.0, 0.6), 0.05), (Box((0.04, 0.06, 0.08)), (0.5, 0.0, 0.4), 0.02),
             (Cylinder(0.03, 0.1), (-0.5, 0.0, 0.4), 0.03))
    shapes = tuple(ObjectShape(spec, _translation(*centre)) for spec, centre, _ in parts)
    scene.apply([AddObject(SceneObject("tool", shapes, np.eye(4), hand, (hand,)))])
    world, q = scene.world, scene.current_positions
    T_hand = scene.robot.link_transforms(q)[scene.robot.link_index(hand)]
    padding = 0.02
    gaps = np.array([-0.01, 0.0, 0.5 * padding, padding - 1e-6, padding + 1e-6, 1.5 * padding])
    for spec, centre, half_x in parts:
        direction = 1.0 if centre[0] >= 0 else -1.0          # away from the hand
        local = np.array(centre) + np.column_stack([direction * (half_x + gaps), np.zeros((len(gaps), 2))])
        points = local @ T_hand[:3, :3].T + T_hand[:3, 3]
        assert filter_robot_points(bare, q, points, padding_m=padding).n_dropped == 0   # the tool alone decides
        result = filter_robot_points(world, q, points, padding_m=padding)
        np.testing.assert_array_equal(result.keep, gaps > padding, err_msg=f"{spec}")
        at_zero = filter_robot_points(world, q, points, padding_m=0.0)
        np.testing.assert_array_equal(at_zero.keep, gaps > SURFACE_TOLERANCE_M, err_msg=f"{spec}")


def test_bad_filter_input_refused(panda):
    q = panda.current_positions
    with pytest.raises(PointCloudError, match="padding -0.1 m must be"):
        filter_robot_points(panda.world, q, np.zeros((3, 3)), padding_m=-0.1)
    with pytest.raises(PointCloudError, match=r"\(N, 3\) array, not \(3,\)"):
        filter_robot_points(panda.world, q, np.zeros(3))
    with pytest.raises(PointCloudError, match="NaN or infinite"):
        filter_robot_points(panda.world, q, np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(PointCloudError, match=f"{len(q) - 1} joint positions for the {len(q)} active joints"):
        filter_robot_points(panda.world, q[:-1], np.zeros((1, 3)))


def test_points_and_cells_inside_world_objects_cleared(panda):
    scene = load_scene(urdf_path=panda_paths()[0], srdf_path=panda_paths()[1])
    box_center, box_size = np.array([0.6, 0.0, 0.3]), np.array([0.2, 0.32, 0.2])   # faces between cell centres
    scene.apply([AddObject(SceneObject("crate", (ObjectShape(Box(tuple(box_size))),), _translation(*box_center)))])
    world = scene.world
    rng = np.random.default_rng(8)
    points = rng.uniform(box_center - 0.25, box_center + 0.25, (20000, 3))
    expected_inside = np.all(np.abs(points - box_center) <= box_size / 2, axis=1)
    kept = points_outside_world_objects(world, points)
    np.testing.assert_array_equal(kept.keep, ~expected_inside)
    assert set(kept.nearest_shape[~kept.keep].tolist()) == {next(i for i, e in enumerate(world.shapes)
                                                                if e.owner == "crate")}
    occupancy = OccupancyMap.from_points(points, RESOLUTION_M)
    cleared = clear_cells_in_world_objects(world, occupancy)
    centres = occupancy.leaf_centres_m()
    centre_inside = np.all(np.abs(centres - box_center) <= box_size / 2, axis=1)
    assert centre_inside.sum() > 100
    assert cleared.n_occupied == occupancy.n_occupied - centre_inside.sum()
    np.testing.assert_array_equal(cleared.cell_keys(), np.sort(_keys(centres[~centre_inside], RESOLUTION_M)))
    # robot links are not world objects: points on them stay
    surface, _ = _posed_surface_samples(world, scene.current_positions, 50, seed=0)
    assert points_outside_world_objects(world, surface).n_dropped == 0


def _keys(centres, resolution):
    occupancy = OccupancyMap.from_points(centres, resolution)
    return occupancy.cell_keys()


# ----- occupancy ---------------------------------------------------------------------------------
def test_replace_and_accumulate_agree_on_a_static_scene():
    """Two boxes and a floor patch seen from a sensor: the same cells from makeOctree and from
    octomap's ray casting, after one cloud and after the same cloud three times more."""
    cloud = np.vstack([_box_surface((0.8, 0.2, 0.3), (0.2, 0.3, 0.25), 0.01),
                       _box_surface((0.7, -0.4, 0.15), (0.1, 0.1, 0.3), 0.01),
                       np.column_stack([g.ravel() for g in np.meshgrid(np.arange(0.4, 1.2, 0.01),
                                                                       np.arange(-0.6, 0.6, 0.01), [0.0])])])
    sensor = np.array([0.0, 0.0, 1.0])
    replaced = OccupancyUpdater(resolution_m=RESOLUTION_M, mode=MODE_REPLACE).update(cloud, sensor)
    accumulate = OccupancyUpdater(resolution_m=RESOLUTION_M, mode=MODE_ACCUMULATE)
    first = accumulate.update(cloud, sensor)
    for _ in range(3):
        last = accumulate.update(cloud, sensor)
    assert replaced.n_occupied > 1000
    np.testing.assert_array_equal(first.cell_keys(), replaced.cell_keys())
    np.testing.assert_array_equal(last.cell_keys(), replaced.cell_keys())
    # the same cells as coal's own octree of the cloud
    single = cloud.astype(np.float32).astype(float)             # octomap's coordinates are single precision
    boxes = np.array([np.asarray(b) for b in coal.makeOctree(single, RESOLUTION_M).toBoxes()])
    np.testing.assert_array_equal(np.sort(_keys(boxes[:, :3], RESOLUTION_M)), replaced.cell_keys())


def test_accumulate_clears_free_space_replace_forgets():
    """An object that moves away: its old cells are cleared by rays through them (accumulate),
    while cells no ray crosses stay; replace keeps only the latest cloud."""
    wall = _box_surface((1.0, 0.0, 0.5), (0.02, 0.6, 0.6), 0.01)
    near_box = _box_surface((0.5, 0.0, 0.5), (0.1, 0.1, 0.1), 0.01)
    side_box = _box_surface((0.0, 0.8, 0.5), (0.1, 0.1, 0.1), 0.01)       # out of the later rays
    sensor = np.array([0.0, 0.0, 0.5])
    accumulate = OccupancyUpdater(resolution_m=RESOLUTION_M, mode=MODE_ACCUMULATE)
    before = accumulate.update(np.vstack([wall, near_box, side_box]), sensor)
    for _ in range(10):
        after = accumulate.update(wall, sensor)
    near_cells = before.cell_at(near_box)
    assert np.all(near_cells >= 0)
    # the box's face toward the sensor lies on rays to the wall: cleared
    facing = near_box[np.isclose(near_box[:, 0], 0.45)]
    assert np.all(after.cell_at(facing) == -1)
    assert np.all(after.cell_at(side_box) >= 0)
    assert np.all(after.cell_at(wall) >= 0)
    # the same as octomap's own list of occupied leaves, fed the same clouds
    import octomap
    tree = octomap.OcTree(RESOLUTION_M)
    for cloud in [np.vstack([wall, near_box, side_box])] + [wall] * 10:
        tree.insertPointCloud(cloud, sensor, discretize=True)
    np.testing.assert_array_equal(after.cell_keys(), _keys(np.asarray(tree.extractPointCloud()[0]), RESOLUTION_M))
    replace = OccupancyUpdater(resolution_m=RESOLUTION_M, mode=MODE_REPLACE)
    replace.update(np.vstack([wall, near_box, side_box]), sensor)
    np.testing.assert_array_equal(replace.update(wall, sensor).cell_keys(), _keys(wall, RESOLUTION_M))
    assert accumulate.clear().n_occupied == 0 and accumulate.current.n_occupied == 0


def test_cells_boxes_ids_and_coal_contacts():
    """cell_at on grid boundaries follows coal's rounding; coal's b1 maps to the cell a probe or a
    box touches, whichever of the two objects the tree is."""
    rng = np.random.default_rng(6)
    points = np.vstack([rng.integers(-40, 40, (500, 3)) * RESOLUTION_M,            # on cell faces
                        rng.uniform(-0.8, 0.8, (500, 3)),
                        np.repeat(rng.uniform(-0.8, 0.8, (8, 3)), np.arange(1, 9), axis=0)])   # 1..8 hits a cell
    occupancy = OccupancyMap.from_points(points, RESOLUTION_M)
    boxes = occupancy.cell_boxes()
    assert occupancy.n_occupied == len(boxes.centres_m) == len(np.unique(occupancy.cell_keys()))
    np.testing.assert_allclose(boxes.size_m, RESOLUTION_M)
    assert np.all(boxes.occupancy > 0.5)
    # the cells listed from the points' keys are coal's own toBoxes(), in another order
    own = np.array(occupancy.coal_geometry.toBoxes())
    ours = np.column_stack([boxes.centres_m, boxes.size_m, boxes.occupancy])
    np.testing.assert_allclose(ours[np.lexsort(ours[:, :3].T)], own[np.lexsort(own[:, :3].T), :5], rtol=0,
                               atol=1e-12)
    index = occupancy.cell_at(points)
    assert np.all(index >= 0)
    assert np.all(np.abs(points - boxes.centres_m[index]) <= RESOLUTION_M / 2 + 1e-12)
    assert np.all(occupancy.cell_at(boxes.centres_m) == np.arange(occupancy.n_occupied))
    assert occupancy.cell_at(np.array([[5.0, 5.0, 5.0]]))[0] == -1
    request = coal.CollisionRequest()
    request.num_max_contacts = 1
    request.enable_contact = True
    identity = coal.Transform3s()
    for k in rng.choice(occupancy.n_occupied, 12, replace=False):
        # a box inside cell k alone, then a box over several cells: the contact's cell is k,
        # then one of the cells the big box overlaps; the tree first or second
        for side, offset, expected in ((0.6, 0.1, k), (2.5, 0.0, None)):
            box = coal.Box(side * RESOLUTION_M, side * RESOLUTION_M, side * RESOLUTION_M)
            centre = boxes.centres_m[k] + offset * RESOLUTION_M
            pose = coal.Transform3s(np.eye(3), centre)
            for tree_first in (True, False):
                # coal's ids are node addresses: a contact is read against the map whose tree it came from
                fresh = OccupancyMap.from_points(points, RESOLUTION_M)        # nothing probed yet
                np.testing.assert_array_equal(fresh.cell_boxes().centres_m, boxes.centres_m)
                result = coal.CollisionResult()
                if tree_first:
                    coal.collide(fresh.coal_geometry, identity, box, pose, request, result)
                else:
                    coal.collide(box, pose, fresh.coal_geometry, identity, request, result)
                contact = result.getContact(0)
                assert contact.b2 == -1                     # the id lands in b1 either way
                cell = fresh.cell_of_coal_id(contact.b1, near_m=contact.pos)  # probing near the contact
                assert cell == fresh.cell_of_coal_id(contact.b1)              # and from the full table
                if expected is not None:
                    assert cell == expected
                else:
                    assert cell >= 0 and np.all(np.abs(boxes.centres_m[cell] - centre)
                                                <= (side / 2 + 0.5) * RESOLUTION_M + 1e-12)
    assert occupancy.cell_of_coal_id(-12345) == -1


def test_octomap_files_round_trip(tmp_path):
    import octomap
    points = _box_surface((0.3, 0.1, 0.4), (0.3, 0.2, 0.1), 0.01)
    occupancy = OccupancyMap.from_points(points, RESOLUTION_M)
    binary = str(tmp_path / "map.bt")
    write_binary_octomap(binary, occupancy)
    loaded = OccupancyMap.load(binary)
    assert loaded.source == binary and loaded.resolution_m == pytest.approx(RESOLUTION_M)
    np.testing.assert_array_equal(loaded.cell_keys(), occupancy.cell_keys())
    full = str(tmp_path / "map.ot")
    tree = octomap.OcTree(RESOLUTION_M)
    tree.updateNodes(occupancy.leaf_centres_m(), True)
    tree.updateInnerOccupancy()
    assert tree.write(full.encode())
    np.testing.assert_array_equal(OccupancyMap.load(full).cell_keys(), occupancy.cell_keys())
    # a solid block prunes into bigger cells: split back into resolution cells
    block = (np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3) + 0.5) * 0.05
    solid = octomap.OcTree(0.05)
    for _ in range(3):
        solid.updateNodes(block, True)
    solid.updateInnerOccupancy()
    assert solid.writeBinary(str(tmp_path / "block.bt").encode())
    pruned = OccupancyMap.load(str(tmp_path / "block.bt"))
    assert pruned.n_occupied < 512 and np.max(pruned.cell_boxes().size_m) > 0.05
    assert len(pruned.leaf_centres_m()) == 512
    np.testing.assert_array_equal(pruned.cell_keys(), _keys(block, 0.05))
    assert np.all(pruned.cell_at(block) >= 0)


@pytest.mark.parametrize("corruption, fault", [
    (lambda d: d[:-7], "corrupt data: truncated after"),
    (lambda d: d + b"\x01\x02\x03", "corrupt data: 3 bytes after the tree"),
    (lambda d: b"PK\x03\x04" + d, "not an octomap .bt file"),
    (lambda d: b"", "not an octomap .bt file"),
    (lambda d: d.replace(b"id OcTree", b"id ColorOcTree"), "holds a 'ColorOcTree', not an OcTree"),
    (lambda d: d.replace(b"res 0.02", b"res -0.02"), "resolution -0.02 m outside"),
    (lambda d: d.replace(b"\ndata\n", b"\n"), "corrupt header: no 'data' line"),
    (lambda d: _change_size(d, +5), "corrupt data"),
])
def test_corrupt_octomap_file_refused_by_name(tmp_path, corruption, fault):
    good = str(tmp_path / "good.bt")
    write_binary_octomap(good, OccupancyMap.from_points(_box_surface((0, 0, 0), (0.2, 0.2, 0.2), 0.01),
                                                        RESOLUTION_M))
    with open(good, "rb") as f:
        data = f.read()
    bad = str(tmp_path / "bad.bt")
    with open(bad, "wb") as f:
        f.write(corruption(data))
    with pytest.raises(OctomapFileError, match=f"octomap file '{bad}': {fault}"):
        OccupancyMap.load(bad)


def _change_size(data: bytes, delta: int) -> bytes:
    head, _, rest = data.partition(b"\nsize ")
    number, _, tail = rest.partition(b"\n")
    return head + b"\nsize " + str(int(number) + delta).encode() + b"\n" + tail


def test_missing_or_misnamed_octomap_file_refused(tmp_path):
    with pytest.raises(OctomapFileError, match="'.*nowhere.bt': cannot be read"):
        OccupancyMap.load(str(tmp_path / "nowhere.bt"))
    other = tmp_path / "map.yaml"
    other.write_text("x")
    with pytest.raises(OctomapFileError, match="must end in .bt \\(binary\\) or .ot \\(full\\), not '.yaml'"):
        OccupancyMap.load(str(other))
    broken = tmp_path / "broken.ot"
    broken.write_bytes(b"# Octomap OcTree file\nid OcTree\nsize 40\nres 0.1\ndata\n" + os.urandom(30))
    with pytest.raises(OctomapFileError, match="broken.ot': corrupt data"):
        OccupancyMap.load(str(broken))


def test_updater_refuses_bad_settings_and_input():
    with pytest.raises(PointCloudError, match="mode 'merge' is not one of replace, accumulate"):
        OccupancyUpdater(resolution_m=0.05, mode="merge")
    with pytest.raises(PointCloudError, match="resolution 0 m must be between"):
        OccupancyUpdater(resolution_m=0)
    updater = OccupancyUpdater(resolution_m=0.05)
    first = updater.update(np.array([[0.1, 0.2, 0.3]]))
    with pytest.raises(PointCloudError, match="NaN or infinite"):
        updater.update(np.array([[np.nan, 0, 0]]))
    assert updater.current is first and first.n_occupied == 1
    with pytest.raises(PointCloudError, match="differs from the updater's"):
        updater.set_map(OccupancyMap.empty(0.1))
    with pytest.raises(PointCloudError, match="beyond the 1638.4 m an octree of resolution 0.05 m spans"):
        updater.update(np.array([[0.0, 2000.0, 0.0]]))
