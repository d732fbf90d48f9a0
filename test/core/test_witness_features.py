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

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.checks.penetration import Body
from my_collision_pkg.core.checks.witness_features import SWITCH_MARGIN_M, compiled_feature_contact, feature_contact, \
    feature_witness, support_feature
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER, \
    KIND_SPHERE

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


def _prism_vertices() -> tuple[np.ndarray, np.ndarray]:
    """A hexagonal prism (radius 0.06 m, half height 0.08 m), turned so that no face is axis-aligned: vertices and
    outward face normals in its own frame."""
    angles = np.arange(6) * np.pi / 3.0
    ring = np.column_stack([0.06 * np.cos(angles), 0.06 * np.sin(angles)])
    vertices = np.vstack([np.column_stack([ring, np.full(6, z)]) for z in (-0.08, 0.08)])
    normals = [np.array([math.cos(a + np.pi / 6), math.sin(a + np.pi / 6), 0.0]) for a in angles]
    normals += [np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, -1.0])]
    R = rotation_x(0.3) @ rotation_y(0.2)
    return np.ascontiguousarray(vertices @ R.T), np.ascontiguousarray(np.array(normals) @ R.T)


PRISM, PRISM_FACES = _prism_vertices()
SIZES = {KIND_BOX: (0.05, 0.08, 0.11), KIND_SPHERE: (0.07, 0.0, 0.0), KIND_CYLINDER: (0.04, 0.12, 0.0),
         KIND_CAPSULE: (0.03, 0.09, 0.0), KIND_CONE: (0.05, 0.1, 0.0)}


def _posed(kind, T):
    if kind == KIND_CONVEX:
        return Body(KIND_CONVEX, np.zeros(3), T, vertices_shape=PRISM, face_normals_shape=PRISM_FACES)
    return Body(kind, np.array(SIZES[kind]), T)


def _random_rotation(rng):
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@pytest.mark.parametrize("kind_0", [KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_CONE, KIND_CONVEX])
def test_compiled_feature_contact_equals_python(kind_0):
    rng = np.random.default_rng(40 + kind_0)
    checked = found = 0
    for kind_1 in (KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_CONE, KIND_CONVEX):
        for _ in range(12):
            square = rng.random() < 0.5          # axis-aligned poses: faces and edges meet faces
            R0 = np.eye(3) if square else _random_rotation(rng)
            R1 = np.eye(3) if square else _random_rotation(rng)
            body0 = _posed(kind_0, pose(R0, rng.uniform(-0.01, 0.01, 3)))
            body1 = _posed(kind_1, pose(R1, rng.uniform(-0.12, 0.12, 3)))
            ok, n, depth = penetration.checked_mtd(body0, body1, 0.01, np.array([0.0, 0.0, 1.0]))
            if not depth > 0.0:
                continue
            normals = [n]
            for axis in np.vstack([R0.T, R1.T]):     # normals snapped to the bodies' axes, of MTD's sign
                normals.append(axis if axis @ n > 0.0 else -axis)
            for normal in normals:
                normal = np.ascontiguousarray(normal / np.linalg.norm(normal))
                d = -float(penetration.overlap(body0, body1, normal[None])[0])
                want = feature_contact(body0, body1, d, normal)
                got = compiled_feature_contact(body0, body1, d, normal)
                checked += 1
                assert (want is None) == (got is None), (kind_0, kind_1, normal)
                if want is None:
                    continue
                found += 1
                np.testing.assert_allclose(got[0], want[0], rtol=0.0, atol=1e-12)
                np.testing.assert_allclose(got[1], want[1], rtol=0.0, atol=1e-12)
                if math.isinf(want[2]):
                    assert got[2] == want[2]
                else:
                    assert got[2] == pytest.approx(want[2], rel=0.0, abs=1e-12)
    assert checked > 200 and found > 0
    assert kind_0 == KIND_SPHERE or found < checked      # kinks seen too (a sphere's feature is always a point)
