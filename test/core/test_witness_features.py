"""Support features and witness points of convex solids (``core/checks/witness_features.py``), exact cases.

- A box's support feature is a vertex, an edge or a face by the direction's zero components,
  its points in lexicographic order; a convex mesh's collinear points reduce to the two ends.
- Two cubes, each turned 45 degrees so that an edge faces the other, with crossing edges: the
  witness points are where the edges cross; with parallel edges the distance has a kink (None).
- The switch margin (issue 40) of such crossing edges: how far the crossing lies from the nearer
  end of either edge; of a tilted cube's corner pressed into a box's face: how far its next
  corner lies behind it (from the corners' heights); below SWITCH_MARGIN_M near a switch.
"""
import math

import numpy as np
import pytest

from my_collision_pkg.core.checks.penetration import Body
from my_collision_pkg.core.checks.witness_features import SWITCH_MARGIN_M, feature_contact, feature_witness, \
    support_feature
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CONVEX, KIND_CYLINDER

HALF = (0.1, 0.2, 0.3)


def pose(R=np.eye(3), t=(0.0, 0.0, 0.0)):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


def rotation_x(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rotation_y(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


@pytest.mark.parametrize("direction, expected", [
    ((1.0, 1.0, 1.0), [(0.1, 0.2, 0.3)]),
    ((1.0, 0.0, 1.0), [(0.1, -0.2, 0.3), (0.1, 0.2, 0.3)]),
    ((0.0, 0.0, -1.0), [(-0.1, -0.2, -0.3), (-0.1, 0.2, -0.3), (0.1, -0.2, -0.3), (0.1, 0.2, -0.3)]),
])
def test_box_support_feature_is_a_vertex_an_edge_or_a_face(direction, expected):
    box = Body(KIND_BOX, HALF, pose(t=(1.0, 2.0, 3.0)))
    d = np.array(direction) / np.linalg.norm(direction)
    np.testing.assert_allclose(support_feature(box, d), np.array(expected) + (1.0, 2.0, 3.0), atol=1e-15)


def test_collinear_points_reduce_to_the_ends():
    points = np.array([[0.0, 0.0, 1.0], [0.5, 0.0, 1.0], [1.0, 0.0, 1.0], [0.25, 0.0, 1.0], [0.3, 0.1, 0.0]])
    mesh = Body(KIND_CONVEX, np.zeros(3), pose(), vertices_shape=points)
    np.testing.assert_array_equal(support_feature(mesh, np.array([0.0, 0.0, 1.0])), [[0.0, 0.0, 1.0], [1.0, 0.0, 1.0]])


def test_cylinder_side_is_a_segment_and_its_end_a_disc():
    cylinder = Body(KIND_CYLINDER, (0.05, 0.2), pose())                 # radius, half length
    side = support_feature(cylinder, np.array([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(side, [[0.05, 0.0, -0.2], [0.05, 0.0, 0.2]], atol=1e-15)
    end = support_feature(cylinder, np.array([0.0, 0.0, 1.0]))
    assert len(end) == 8
    np.testing.assert_allclose(end[:, 2], 0.2)
    np.testing.assert_allclose(np.hypot(end[:, 0], end[:, 1]), 0.05)


@pytest.mark.parametrize("gap", [0.01, -0.003])
def test_crossing_edges_meet_where_they_cross(gap):
    h = 0.1 * math.sqrt(2.0)                        # a 0.2 m cube turned 45 degrees: its edge this far out
    lower = Body(KIND_BOX, (0.1, 0.1, 0.1), pose(rotation_x(math.pi / 4)))               # top edge along x
    upper = Body(KIND_BOX, (0.1, 0.1, 0.1), pose(rotation_y(math.pi / 4), (0.02, 0.03, 2 * h + gap)))  # along y
    normal = np.array([0.0, 0.0, 1.0])
    p0, p1 = feature_witness(lower, upper, gap, normal)
    np.testing.assert_allclose(p0, [0.02, 0.0, h], atol=1e-15)
    np.testing.assert_allclose(p1, [0.02, 0.0, h + gap], atol=1e-15)
    parallel = Body(KIND_BOX, (0.1, 0.1, 0.1), pose(rotation_x(math.pi / 4), (0.02, 0.03, 2 * h + gap)))
    assert feature_witness(lower, parallel, gap, normal) is None


@pytest.mark.parametrize("x, expected", [(0.02, 0.07), (0.1 - 5e-6, 5e-6)])
def test_crossing_edges_switch_margin_is_the_crossing_to_the_nearer_end(x, expected):
    """The lower edge runs along x over [-0.1, 0.1], the upper along y over [0.03 - 0.1, 0.03 + 0.1]: they cross
    at (x, 0), 0.07 m from the upper edge's end (x = 0.02), or 5 um from the lower edge's end."""
    h, gap = 0.1 * math.sqrt(2.0), -0.003
    lower = Body(KIND_BOX, (0.1, 0.1, 0.1), pose(rotation_x(math.pi / 4)))
    upper = Body(KIND_BOX, (0.1, 0.1, 0.1), pose(rotation_y(math.pi / 4), (x, 0.03, 2 * h + gap)))
    p0, p1, margin_m = feature_contact(lower, upper, gap, np.array([0.0, 0.0, 1.0]))
    np.testing.assert_allclose(p0, [x, 0.0, h], atol=1e-15)
    assert margin_m == pytest.approx(expected, abs=1e-12)
    assert (margin_m >= SWITCH_MARGIN_M) == (expected >= SWITCH_MARGIN_M)


@pytest.mark.parametrize("tilt_rad", [0.3, 2e-4])
def test_corner_in_a_face_switch_margin_is_the_next_corner_behind_it(tilt_rad):
    """A 0.1 m cube tilted about y by 0.2 rad and about x by ``tilt_rad``, its lowest corner 2 mm into the top
    face of a box, at the face's middle: the margin is the height of the cube's next corner above the lowest
    (from the eight corners), below SWITCH_MARGIN_M when nearly an edge (tilt 2e-4 rad: 20 um)."""
    box = Body(KIND_BOX, HALF, pose())
    R = rotation_x(tilt_rad) @ rotation_y(0.2)
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * 0.05 @ R.T
    heights = np.sort(corners[:, 2])
    lowest = corners[np.argmin(corners[:, 2])]
    depth = 0.002
    cube = Body(KIND_BOX, (0.05, 0.05, 0.05), pose(R, np.array([0.0, 0.0, HALF[2] - depth]) - lowest))
    p0, p1, margin_m = feature_contact(box, cube, -depth, np.array([0.0, 0.0, 1.0]))
    np.testing.assert_allclose(p1, [0.0, 0.0, HALF[2] - depth], atol=1e-15)
    assert margin_m == pytest.approx(heights[1] - heights[0], rel=1e-9)
    assert (margin_m >= SWITCH_MARGIN_M) == (tilt_rad > 1e-3)
