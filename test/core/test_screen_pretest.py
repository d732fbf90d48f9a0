"""The screen's convex pre-test (``kernels.culling.first_candidate_row``, run by ``pair_tests.any_collision``).

The pre-test drops a candidate pair before the narrow phase when GJK proves its convex
solids farther apart than its margin. It must drop only pairs the narrow phase calls free,
so the screen's answers stay :func:`pair_tests.first_collision`'s:

- on the Panda with ``config/panda_world.yaml``, 1 cm padding (self pairs padded too) and
  one object of every primitive kind, on random configurations and on configurations
  bisected to within 1e-6 rad of the first contact along lines (so that pairs at their
  margin are met), every pair the pre-test drops is free by ``PosedPairs.collides``, and
  pairs are both dropped and kept (the test exercises both sides);
- without the pre-test the kernel keeps exactly ``obb_candidates``' pairs;
- ``any_collision`` returns the first colliding row of a block, as ``first_collision`` says.
"""
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks.pair_tests import PairTestScratch, any_collision, first_collision, posed_candidates
from my_collision_pkg.core.kernels.culling import first_candidate_row
from my_collision_pkg.core.model.shapes import Box, Capsule, Cone, Cylinder, Sphere
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")     # a table and a post
PADDING_M = 0.01
N_RANDOM = 1500
N_BOUNDARY = 150
BISECTION_TOLERANCE_RAD = 1e-6
SEED = 20_261_206


def _at(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


@pytest.fixture(scope="module")
def panda():
    """(world, selection) of the Panda with the table, the post, a primitive of every kind and padding."""
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    scene.set_padding(default_padding_m=PADDING_M)
    objects = [("ball", Sphere(0.06), _at(0.4, -0.3, 0.5)), ("can", Cylinder(0.05, 0.2), _at(0.3, 0.35, 0.6)),
               ("pill", Capsule(0.04, 0.2), _at(-0.3, -0.4, 0.45)), ("cone", Cone(0.07, 0.15), _at(0.5, 0.2, 0.3)),
               ("crate", Box((0.15, 0.1, 0.1)), _at(-0.45, 0.2, 0.6))]
    scene.apply([AddObject(SceneObject(name, (ObjectShape(shape),), T)) for name, shape, T in objects])
    world = scene.world
    return world, world.pair_selection("", True, True)


def _rows(world, n, seed):
    robot = world.robot
    lower, upper = robot.lower_limits, robot.upper_limits
    return np.random.default_rng(seed).uniform(lower, upper, size=(n, len(lower)))


def _boundary_rows(world, selection, scratch, q):
    """Free configurations within BISECTION_TOLERANCE_RAD of a colliding one, bisected along the
    lines from free rows of ``q`` to colliding ones."""
    hit = first_collision(scratch, world, q, selection) >= 0
    free, colliding = q[~hit], q[hit]
    n = min(N_BOUNDARY, len(free), len(colliding))
    out = []
    for lo, hi in zip(free[:n], colliding[:n]):
        while np.max(np.abs(hi - lo)) > BISECTION_TOLERANCE_RAD:
            mid = 0.5 * (lo + hi)
            if first_collision(scratch, world, mid[None, :], selection)[0] >= 0:
                hi = mid
            else:
                lo = mid
        out.append(lo)
    return np.array(out)


def test_the_pretest_drops_only_pairs_the_narrow_phase_calls_free(panda):
    world, selection = panda
    scratch = PairTestScratch()
    q = _rows(world, N_RANDOM, SEED)
    boundary = _boundary_rows(world, selection, scratch, q)
    assert len(boundary) == N_BOUNDARY
    rows = np.vstack([q, boundary])
    buffers, arguments = scratch.single_buffers(world, selection)
    screen = scratch.screen_arguments(world, selection)
    assert screen[1].any()                       # pairs with convex solids on both sides
    dropped = kept = 0
    for k in range(len(rows)):
        one = np.ascontiguousarray(rows[k:k + 1])
        row, n = first_candidate_row(one, 0, *arguments, *screen)
        assert row == (0 if n > 0 else -1)
        survivors = set(buffers.survivors[:n].tolist())
        assert set(np.flatnonzero(buffers.candidates[0]).tolist()) == survivors     # cleared where dropped
        # culled again without the pre-test: every pair it dropped must be free
        _, T_shape, candidates = posed_candidates(world, one, selection.pairs, selection.margins)
        np.testing.assert_array_equal(T_shape[0], buffers.T_world_shape[0])
        assert survivors <= set(np.flatnonzero(candidates[0]).tolist())
        posed = scratch.posed(world, T_shape[0])
        for p in np.flatnonzero(candidates[0]).tolist():
            if p in survivors:
                kept += 1
                continue
            dropped += 1
            a, b = selection.pairs[p].tolist()
            assert not posed.collides(a, b, selection.calls[p], selection.margins[p]), (k, a, b)
    assert dropped > 100 and kept > 100, (dropped, kept)


def test_the_kernel_culls_as_obb_candidates(panda):
    """With no pair measurable (no pre-test), the kernel's own culling keeps exactly the pairs
    of ``obb_candidates``, at every row (with and without padding)."""
    world, selection = panda
    scratch = PairTestScratch()
    rows = _rows(world, N_RANDOM, SEED + 2)
    for pad in (True, False):
        chosen = world.pair_selection("", pad, pad)
        buffers, arguments = scratch.single_buffers(world, chosen)
        convex, measurable, warm = scratch.screen_arguments(world, chosen)
        none = np.zeros_like(measurable)
        _, _, candidates = posed_candidates(world, rows, chosen.pairs, chosen.margins)
        assert candidates.any(axis=1).sum() > N_RANDOM // 10
        for k in range(len(rows)):
            row, n = first_candidate_row(np.ascontiguousarray(rows[k:k + 1]), 0, *arguments, convex, none, warm)
            np.testing.assert_array_equal(buffers.candidates[0], candidates[k])
            assert buffers.survivors[:n].tolist() == np.flatnonzero(candidates[k]).tolist()


def test_any_collision_is_the_first_colliding_row(panda):
    world, selection = panda
    scratch = PairTestScratch()
    q = _rows(world, N_RANDOM, SEED + 1)
    q = np.vstack([q, _boundary_rows(world, selection, scratch, q)])
    first = first_collision(scratch, world, q, selection)
    for k in range(len(q)):                                  # one row at a time
        assert any_collision(scratch, world, q[k:k + 1], selection) == (0 if first[k] >= 0 else -1), k
    hits = first >= 0
    assert 0 < hits.sum() < len(q)
    # blocks of rows: the first colliding row of each, rows free before it
    free_rows = np.flatnonzero(~hits)
    for start in range(0, len(free_rows) - 40, 40):
        block = q[free_rows[start:start + 40]]
        assert any_collision(scratch, world, block, selection) == -1
        block = np.vstack([block, q[np.flatnonzero(hits)[start // 40 % hits.sum()]][None, :], block])
        assert any_collision(scratch, world, block, selection) == 40



def test_a_surface_point_inside_a_solid_is_found_only_when_deep_enough():
    """kernels.culling.surface_point_inside: a box's corner (half extents 0.5 m) 0.01 m inside a
    box, a sphere and a cylinder (each 0.3 m across half) is found at depth 0.005 m, not 0.02 m; a
    tetrahedron's vertex 0.05 m inside a box at 0.01 m, not 0.06 m."""
    from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CONVEX, KIND_CYLINDER, KIND_SPHERE
    from my_collision_pkg.core.kernels.culling import surface_point_inside
    from my_collision_pkg.core.kernels.gjk import convex_arrays
    tetrahedron = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    none = np.zeros((0, 3))
    convex = convex_arrays([KIND_BOX, KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CONVEX],
                           [[0.5, 0.5, 0.5], [0.3, 0.3, 0.3], [0.3, 0.0, 0.0], [0.3, 0.3, 0.0], [0.0, 0.0, 0.0]],
                           [none, none, none, none, tetrahedron])
    at_origin, other = np.eye(4), np.eye(4)
    other[:3, 3] = [0.5 + 0.29, 0.5, 0.5]              # the corner (0.5, 0.5, 0.5) 0.29 from the centre
    for s in (1, 2, 3):
        assert surface_point_inside(convex, 0, at_origin, s, other, 0.005), s
        assert not surface_point_inside(convex, 0, at_origin, s, other, 0.02), s
    other[:3, 3] = [0.25, 0.0, 0.0]
    assert surface_point_inside(convex, 4, at_origin, 1, other, 0.01)
    assert not surface_point_inside(convex, 4, at_origin, 1, other, 0.06)
    assert not surface_point_inside(convex, 1, other, 4, at_origin, 0.0)     # into a convex mesh: not tested
