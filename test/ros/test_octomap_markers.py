"""The occupancy map in ``~/scene_objects``: one CUBE_LIST of its cells, coloured by height (no DDS).

Built from a real core scene (the Panda) whose map was set by the octomap monitor;
the marker's cubes are checked against the map's own cells. Also the conversions the
octomap interfaces add (a PointCloud2 of points, flat point lists, colours).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from visualization_msgs.msg import Marker

from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.perception.monitor import OctomapMonitor
from my_collision_pkg.core.perception.occupancy import OccupancyMap, write_binary_octomap
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import OCTOMAP_ID, AddObject, ObjectShape, SceneObject
from my_collision_pkg.ros.scene_markers import (NAMESPACE_PREFIX, SceneMarkerCache, height_colors,
                                                scene_objects_marker_array)

RESOLUTION_M = 0.02


@pytest.fixture(scope="module")
def panda_scene():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    T = np.eye(4)
    T[:3, 3] = (0.0, 0.6, 0.2)
    scene.apply([AddObject(SceneObject("crate", (ObjectShape(Box((0.1, 0.1, 0.1))),), T))])
    return scene


def _cloud():
    """A slanted wall in front of the robot: heights 0.2 to 0.6 m."""
    u, v = np.meshgrid(np.arange(-0.2, 0.2, 0.01), np.arange(0.0, 0.4, 0.01), indexing="ij")
    return np.column_stack([np.full(u.size, 0.8) + 0.2 * v.ravel(), u.ravel(), 0.2 + v.ravel()])


def _octomap_markers(array):
    return [m for m in array.markers if m.ns == NAMESPACE_PREFIX + OCTOMAP_ID]


def test_the_map_is_one_cube_list_of_its_cells_coloured_by_height(panda_scene):
    monitor = OctomapMonitor(panda_scene, resolution_m=RESOLUTION_M, max_update_rate_hz=0.0)
    monitor.update(_cloud(), panda_scene.planning_frame)
    occupancy = panda_scene.occupancy
    array = scene_objects_marker_array(panda_scene.world, "panda_link0", Time(sec=7))
    cubes = _octomap_markers(array)
    assert len(cubes) == 1                          # one marker, not one per cell, not a mesh
    marker = cubes[0]
    assert marker.type == Marker.CUBE_LIST and marker.action == Marker.ADD
    assert marker.header.frame_id == "panda_link0" and marker.header.stamp.sec == 7
    assert (marker.scale.x, marker.scale.y, marker.scale.z) == pytest.approx((RESOLUTION_M,) * 3)
    assert marker.pose.orientation.w == pytest.approx(1.0) and marker.pose.position.x == 0.0
    centres = np.array([(p.x, p.y, p.z) for p in marker.points])
    assert len(centres) == occupancy.n_occupied > 100
    expected = occupancy.cell_boxes().centres_m
    np.testing.assert_allclose(centres[np.lexsort(centres.T)], expected[np.lexsort(expected.T)], atol=1e-12)
    # a colour per cube, blue at the lowest, red at the highest, ordered by height in between
    assert len(marker.colors) == len(marker.points)
    rgba = np.array([(c.r, c.g, c.b, c.a) for c in marker.colors])
    low, high = np.argmin(centres[:, 2]), np.argmax(centres[:, 2])
    np.testing.assert_allclose(rgba[low], (0.0, 0.0, 1.0, 1.0), atol=1e-6)
    np.testing.assert_allclose(rgba[high], (1.0, 0.0, 0.0, 1.0), atol=1e-6)
    np.testing.assert_allclose(rgba, height_colors(centres[:, 2]), atol=1e-6)
    # the other objects are still drawn as their shapes
    crate = [m for m in array.markers if m.ns == NAMESPACE_PREFIX + "crate"]
    assert len(crate) == 1 and crate[0].type == Marker.CUBE


def test_pruned_cells_of_a_file_are_drawn_as_resolution_cubes(panda_scene, tmp_path):
    # a solid 8 x 8 x 8 block of cells on the octree's grid: the octomap library prunes it
    # into one cell of 8 resolution cells a side when it writes the file
    block = (np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3) + [40.5, 0.5, 16.5]) \
        * RESOLUTION_M
    path = tmp_path / "block.bt"
    write_binary_octomap(str(path), OccupancyMap.from_points(block, RESOLUTION_M))
    loaded = OccupancyMap.load(str(path))
    assert loaded.n_occupied < len(block)          # pruned: fewer cells listed than it covers
    monitor = OctomapMonitor(panda_scene, resolution_m=RESOLUTION_M, max_update_rate_hz=0.0)
    monitor.set_map(loaded)
    marker, = _octomap_markers(scene_objects_marker_array(panda_scene.world, "panda_link0", Time()))
    assert len(marker.points) == len(block) == 512
    assert marker.scale.x == pytest.approx(RESOLUTION_M)
    centres = np.array([(p.x, p.y, p.z) for p in marker.points])
    np.testing.assert_allclose(centres[np.lexsort(centres.T)], block[np.lexsort(block.T)], atol=1e-9)


def test_no_map_no_cube_list_and_the_cache_reuses_an_unchanged_map(panda_scene):
    monitor = OctomapMonitor(panda_scene, resolution_m=RESOLUTION_M, max_update_rate_hz=0.0)
    monitor.update(_cloud(), panda_scene.planning_frame)
    cache = SceneMarkerCache()
    first, = _octomap_markers(scene_objects_marker_array(panda_scene.world, "panda_link0", Time(sec=1), cache=cache))
    again, = _octomap_markers(scene_objects_marker_array(panda_scene.world, "panda_link0", Time(sec=2), cache=cache))
    assert again is first and again.header.stamp.sec == 2
    monitor.update(_cloud() + [0.0, 0.0, 0.1], panda_scene.planning_frame)
    moved, = _octomap_markers(scene_objects_marker_array(panda_scene.world, "panda_link0", Time(sec=3), cache=cache))
    assert moved is not first and min(p.z for p in moved.points) > min(p.z for p in first.points)
    monitor.clear()
    assert not _octomap_markers(scene_objects_marker_array(panda_scene.world, "panda_link0", Time(), cache=cache))


def test_height_colours_of_one_height_and_of_none():
    np.testing.assert_allclose(height_colors(np.array([0.3, 0.3])), [[0, 0, 1, 1], [0, 0, 1, 1]])
    assert height_colors(np.zeros(0)).shape == (0, 4)


# ----- the octomap conversions (ros/conversions.py) ------------------------------------------
def test_point_cloud_msg_decodes_back_to_its_points():
    from my_collision_pkg.core.perception.point_cloud import FLOAT64, decode_point_cloud_message
    from my_collision_pkg.ros.conversions import point_cloud_msg
    points = np.random.default_rng(1).uniform(-2.0, 2.0, (257, 3))
    msg = point_cloud_msg(points, "panda_hand", Time(sec=3), datatype=FLOAT64, extra_bytes=4)
    assert msg.header.frame_id == "panda_hand" and msg.header.stamp.sec == 3
    assert (msg.width, msg.height, msg.point_step) == (257, 1, 28)
    assert [f.name for f in msg.fields] == ["x", "y", "z"]
    np.testing.assert_array_equal(decode_point_cloud_message(msg).points_m, points)


def test_flat_points_are_checked_by_name():
    from my_collision_pkg.core.errors import RequestError
    from my_collision_pkg.ros.conversions import points_from_flat_xyz
    np.testing.assert_array_equal(points_from_flat_xyz([1, 2, 3, 4, 5, 6], "p", 2), [[1, 2, 3], [4, 5, 6]])
    for values, bound, fault in [([1, 2], 5, "multiple of 3"), ([0.0] * 9, 2, "bound of 2"),
                                 ([0.0, float("inf"), 0.0], 5, "p[1]")]:
        with pytest.raises(RequestError, match=re.escape(fault)):
            points_from_flat_xyz(values, "p", bound)


def test_color_msgs_carry_the_values():
    from my_collision_pkg.ros.conversions import color_msgs
    colours = color_msgs(np.array([[0.25, 0.5, 0.75, 1.0], [1.0, 0.0, 0.0, 0.5]]))
    assert [(c.r, c.g, c.b, c.a) for c in colours] == [(0.25, 0.5, 0.75, 1.0), (1.0, 0.0, 0.0, 0.5)]
    assert color_msgs(np.zeros((0, 4))) == []
