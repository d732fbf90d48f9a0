"""kernels.apart_ties: the lines a witness point lies on, the exact distances to primitives, the stepped pairs of
two box edges (parallel: a tie; crossing: none) and the joint-step rule that turns a row not smooth."""
import math

import numpy as np
import pytest

from my_collision_pkg.core.kernels import apart_ties
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CYLINDER, KIND_SPHERE
from my_collision_pkg.core.kernels.gjk import PROBE_DIRECTIONS

NO_SUPPORT = np.full((1, 2), -1, dtype=np.int64)      # no GJK support vertex known: climbs start at the probes


def _pose(rx=0.0, rz=0.0, t=(0.0, 0.0, 0.0)):
    """T_world_shape: a rotation by rx about x, then by rz about z, then the translation t."""
    cx, sx, cz, sz = math.cos(rx), math.sin(rx), math.cos(rz), math.sin(rz)
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    T = np.eye(4)
    T[:3, :3] = Rz @ Rx
    T[:3, 3] = t
    return T


def _world(T, local):
    return T[:3, :3] @ np.asarray(local, dtype=float) + T[:3, 3]


def test_line_feature_finds_box_edges_and_cylinder_side_lines():
    box = np.array([0.1, 0.2, 0.3])
    axis, room_plus, room_minus = apart_ties.line_feature(KIND_BOX, *box, 0.1, -0.2, 0.05)
    assert axis == 2
    assert room_plus == pytest.approx(0.25, abs=1e-12) and room_minus == pytest.approx(0.35, abs=1e-12)
    for local in ([0.1, 0.2, 0.3], [0.1, 0.0, 0.0], [0.05, 0.2, 0.1]):        # a corner, a face, a face
        assert apart_ties.line_feature(KIND_BOX, *box, *local)[0] == -1
    cylinder = np.array([0.05, 0.4, 0.0])                                     # radius, half length
    side = [0.05 * math.cos(1.1), 0.05 * math.sin(1.1), -0.1]
    axis, room_plus, room_minus = apart_ties.line_feature(KIND_CYLINDER, *cylinder, *side)
    assert axis == 2
    assert room_plus == pytest.approx(0.5, abs=1e-12) and room_minus == pytest.approx(0.3, abs=1e-12)
    for kind, local in ((KIND_CYLINDER, [0.05, 0.0, 0.4]), (KIND_CYLINDER, [0.01, 0.02, 0.4]),
                        (KIND_SPHERE, [0.05, 0.0, 0.0])):                    # a rim, a cap, a sphere
        assert apart_ties.line_feature(kind, *cylinder, *local)[0] == -1
    axis, _, _ = apart_ties.line_feature(KIND_CAPSULE, *cylinder, *side)
    assert axis == 2


@pytest.mark.parametrize("kind, params", [(KIND_BOX, [0.1, 0.2, 0.3]), (KIND_SPHERE, [0.15, 0.0, 0.0]),
                                          (KIND_CYLINDER, [0.1, 0.25, 0.0]), (KIND_CAPSULE, [0.1, 0.25, 0.0])])
def test_primitive_distances_and_nearest_points_against_dense_surface_samples(kind, params):
    """The exact distance to each primitive is never above the nearest of 200,000 surface samples and within
    their spacing of it; the nearest point written is on the surface at that distance."""
    rng = np.random.default_rng(7)
    T = _pose(rx=0.4, rz=1.3, t=(0.3, 0.1, -0.2))
    p0, p1, _ = params
    u = rng.normal(size=(200000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    if kind == KIND_BOX:                    # points on the faces: push each direction out to the box
        local = u / np.max(np.abs(u) / np.array(params), axis=1)[:, None]
    elif kind == KIND_SPHERE:
        local = p0 * u
    else:                                   # side and caps (a capsule: hemispheres)
        z = rng.uniform(-p1, p1, size=len(u))
        side = np.column_stack([p0 * u[:, 0] / np.hypot(u[:, 0], u[:, 1]), p0 * u[:, 1] / np.hypot(u[:, 0], u[:, 1]),
                                z])
        if kind == KIND_CYLINDER:
            rho = p0 * np.sqrt(rng.uniform(size=len(u)))
            cap = np.column_stack([rho * u[:, 0] / np.hypot(u[:, 0], u[:, 1]),
                                   rho * u[:, 1] / np.hypot(u[:, 0], u[:, 1]), np.sign(u[:, 2]) * p1])
        else:
            cap = p0 * u + np.column_stack([np.zeros(len(u)), np.zeros(len(u)), np.sign(u[:, 2]) * p1])
        local = np.where(rng.uniform(size=len(u))[:, None] < 0.5, side, cap)
    samples = local @ T[:3, :3].T + T[:3, 3]
    for x in rng.uniform(-0.8, 0.8, size=(20, 3)) + T[:3, 3]:
        x_local = T[:3, :3].T @ (x - T[:3, 3])
        d, *nearest_local = apart_ties.primitive_nearest(kind, *map(float, params), *x_local)
        nearest = np.min(np.linalg.norm(samples - x, axis=1))
        if d == 0.0:                        # inside
            continue
        assert d <= nearest + 1e-12
        assert nearest - d < 5e-3
        assert np.linalg.norm(_world(T, nearest_local) - x) == pytest.approx(d, abs=1e-12)
        assert apart_ties.primitive_nearest(kind, *map(float, params), *nearest_local)[0] < 1e-12


def _two_edges(angle_rad, gap_m):
    """Two cubes (half 0.1 m) each turned 45 degrees about x, one above the other, so that the lower one's top
    edge (along x) faces the upper one's bottom edge, turned by ``angle_rad`` about the vertical; the row
    arrays of :func:`apart_ties.stepped_ties` for that pair, their witness points at x = 0."""
    h = 0.1 * math.sqrt(2.0)
    T = np.stack([_pose(rx=math.pi / 4), _pose(rx=math.pi / 4, rz=angle_rad, t=(0.0, 0.0, 2 * h + gap_m))])
    kind = np.array([KIND_BOX, KIND_BOX], dtype=np.int64)
    params = np.array([[0.1, 0.1, 0.1], [0.1, 0.1, 0.1]])
    points = np.array([[[0.0, 0.0, h], [0.0, 0.0, h + gap_m]]])
    no_vertices = (np.zeros(3, dtype=np.int64), np.zeros((0, 3)), np.zeros(1, dtype=np.int64),
                   np.zeros(0, dtype=np.int64), np.full((2, len(PROBE_DIRECTIONS)), -1, dtype=np.int64))
    return (np.array([True]), np.array([gap_m]), np.array([0]), np.array([[0, 1]]), points, T[None], kind,
            params, *no_vertices)


def test_parallel_box_edges_give_stepped_pairs_at_the_same_distance():
    no_joint = apart_ties.stepped_ties(*_two_edges(0.0, 0.05), NO_SUPPORT, np.zeros(1))[0]
    assert len(no_joint) == 0                              # no revolute joint moves them: not looked at
    rows, pairs, gaps = apart_ties.stepped_ties(*_two_edges(0.0, 0.05), NO_SUPPORT, np.ones(1))
    assert list(rows) == [0, 0, 0, 0]                     # both sides' lines, both ways
    np.testing.assert_allclose(np.abs(gaps), 0.0, atol=1e-15)
    for pair in pairs:                                     # 3 mm along x, straight above each other
        assert abs(pair[0, 0]) == pytest.approx(apart_ties.FEATURE_STEP_M, abs=1e-15)
        assert np.linalg.norm(pair[1] - pair[0]) == pytest.approx(0.05, abs=1e-15)


@pytest.mark.parametrize("angle_rad", [0.5, 0.2])
def test_crossing_box_edges_give_no_stepped_pair(angle_rad):
    """Edges crossing at an angle: the stepped point is sqrt(d**2 + (s sin angle)**2) away (3.6e-6 m farther at
    0.2 rad), beyond what a joint step can close (2 s k TIE_JOINT_STEP = 1.2e-7 m for one joint)."""
    rows, _, _ = apart_ties.stepped_ties(*_two_edges(angle_rad, 0.05), NO_SUPPORT, np.ones(1))
    assert len(rows) == 0


def test_a_box_edge_over_a_sphere_gives_no_stepped_pair():
    args = list(_two_edges(0.0, 0.05))
    args[6] = np.array([KIND_BOX, KIND_SPHERE], dtype=np.int64)
    args[7] = np.array([[0.1, 0.1, 0.1], [0.1, 0.0, 0.0]])
    h = 0.1 * math.sqrt(2.0)
    args[5] = args[5].copy()
    args[5][0, 1] = _pose(t=(0.0, 0.0, h + 0.05 + 0.1))          # the sphere's lowest point 0.05 m above the edge
    rows, _, _ = apart_ties.stepped_ties(*args, NO_SUPPORT, np.ones(1))
    assert len(rows) == 0


def test_joint_step_closes_where_the_two_pairs_move_apart_by_more_than_the_gap():
    row = np.array([0.3, -0.2, 0.0])
    assert not apart_ties.joint_step_closes(row, row.copy(), 0.0)               # moved alike: nothing closes
    assert not apart_ties.joint_step_closes(row, row.copy(), -1e-17)            # (rounding below the row)
    assert not apart_ties.joint_step_closes(row, row + 1e-7, 0.0)               # the same gradient, to 8e-7
    stepped = row + np.array([0.0, 0.01, -0.005])                               # closes 3e-7 m per 2e-5 step
    assert apart_ties.joint_step_closes(row, stepped, 2.9e-7)
    assert not apart_ties.joint_step_closes(row, stepped, 3.1e-7)
