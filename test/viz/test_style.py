"""The drawing policy the RViz markers and the PNG pictures share (viz/style.py), and render's default world."""
import math
import os

import numpy as np
import pytest

from my_collision_pkg.viz.render import default_world_file
from my_collision_pkg.viz.style import (ARROW_LENGTH_PER_DEPTH, ARROW_MAX_LENGTH_M, MARKER_ARROW_MIN_LENGTH_M,
                                        MM_PER_M, PNG_ARROW_MIN_LENGTH_M, arrow_length_m, point_xyz)


@pytest.mark.parametrize("min_length_m", [MARKER_ARROW_MIN_LENGTH_M, PNG_ARROW_MIN_LENGTH_M])
def test_arrows_grow_with_depth_from_each_pictures_minimum_to_the_shared_maximum(min_length_m):
    assert arrow_length_m(0.0, min_length_m=min_length_m) == min_length_m
    assert arrow_length_m(-0.5, min_length_m=min_length_m) == min_length_m, "a near miss gets the shortest arrow"
    depth_m = 0.01
    assert math.isclose(arrow_length_m(depth_m, min_length_m=min_length_m),
                        min_length_m + ARROW_LENGTH_PER_DEPTH * depth_m)
    assert arrow_length_m(10.0, min_length_m=min_length_m) == ARROW_MAX_LENGTH_M


def test_the_pictures_keep_their_own_shortest_arrow():
    assert (MARKER_ARROW_MIN_LENGTH_M, PNG_ARROW_MIN_LENGTH_M) == (0.05, 0.06)
    assert arrow_length_m(0.02, min_length_m=0.1, max_length_m=0.15, length_per_depth=10.0) == 0.15


class _MessagePoint:
    x, y, z = 1.0, -2.0, 0.5


def test_points_read_alike_from_messages_and_arrays():
    np.testing.assert_array_equal(point_xyz(_MessagePoint()), [1.0, -2.0, 0.5])
    np.testing.assert_array_equal(point_xyz([1, -2, 0.5]), [1.0, -2.0, 0.5])
    assert point_xyz((0, 0, 1)).dtype == float
    assert MM_PER_M * 0.0123 == pytest.approx(12.3)


def test_the_default_world_is_found_without_ament():
    path = default_world_file()
    assert path is not None and os.path.isfile(path) and os.path.basename(path) == "panda_world.yaml"
