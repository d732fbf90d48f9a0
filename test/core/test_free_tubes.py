"""Free tubes (``core/checks/free_tubes.py``) on the slider of core_scenes, where every number is exact.

The ball (r = 0.1 m) slides along x towards the base sphere (r = 0.1 m at the origin): at
carriage position x their distance is x - 0.2 m, and no other pair comes closer than 0.6 m
there. A prismatic joint moves every point of its body by exactly its own change, so its
lever is 1 m/m, and after the free edge x: 0.8 -> 1.0 (certified clearance 0.6 m less GJK's
precision) the tube's bound for an edge from 0.9 to e is exactly e - 0.2 m, the true
clearance at e: the tube must answer every such edge whose clearance is at least the touch
tolerance plus GJK's precision, and no other.
"""
import numpy as np
import pytest

from my_collision_pkg.core.checks.free_tubes import FreeTubes, joint_levers
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M
from my_collision_pkg.core.checks.sweep import gjk_tolerance


def test_prismatic_levers_are_one(slider_checker):
    world = slider_checker.scene.world
    validity = slider_checker.motion_validity(["slide_x"])
    levers = joint_levers(world, validity._selection_for(world))
    np.testing.assert_array_equal(levers, [1.0, 1.0])


@pytest.mark.parametrize("clearance_m, from_tube, valid", [
    (0.3, True, True),
    (2e-4, True, True),                # above the touch tolerance + GJK's precision (1.01e-4)
    (1e-4, False, True),               # below it: searched, and not touching (distance == tolerance)
    (5e-5, False, False),              # within the touch tolerance: CERTIFIED refuses it
])
def test_the_tube_answers_exactly_down_to_the_touch_tolerance(slider_checker, clearance_m, from_tube, valid):
    validity = slider_checker.motion_validity(["slide_x"])
    assert validity.is_motion_valid([0.8], [1.0])
    assert validity.tube_hits == 0
    end = 0.2 + clearance_m
    assert validity.is_motion_valid([0.9], [end]) == valid
    assert validity.tube_hits == int(from_tube)
    assert slider_checker.check_motion(["slide_x"], [0.9], [end]).valid == valid


def test_tubes_off_search_every_edge(slider_checker):
    validity = slider_checker.motion_validity(["slide_x"], tubes=False)
    assert validity.is_motion_valid([0.8], [1.0])
    assert validity.is_motion_valid([0.9], [0.5])
    assert validity.tube_hits == 0


def test_memory_keeps_the_newest_and_refuses_useless_tubes():
    tubes = FreeTubes(np.array([1.0]), DEFAULT_TOUCH_TOLERANCE_M + gjk_tolerance(DEFAULT_TOUCH_TOLERANCE_M),
                      capacity=2)
    tubes.add(np.array([0.0]), np.array([1.0]), 1e-5)          # below what can answer anything: not kept
    assert len(tubes) == 0 and not tubes.covers(np.array([0.2]), np.array([0.3]))
    tubes.add(np.array([0.0]), np.array([1.0]), 0.5)
    tubes.add(np.array([5.0]), np.array([6.0]), 0.5)
    assert tubes.covers(np.array([0.2]), np.array([1.3]))       # 0.3 beyond the first: 0.2 left
    assert tubes.covers(np.array([0.2]), np.array([1.499]))     # 0.001 left
    assert not tubes.covers(np.array([0.2]), np.array([1.49995]))   # 5e-5 left: less than needed
    assert tubes.hits == 2
    tubes.add(np.array([10.0]), np.array([11.0]), 0.5)        # the ring drops the oldest
    assert len(tubes) == 2
    assert not tubes.covers(np.array([0.2]), np.array([0.3]))
    assert tubes.covers(np.array([10.2]), np.array([10.3]))


def test_a_kept_tube_row_is_written_as_numpy_writes_it():
    """kernels.tubes.tube_keep: start, step q1 - q0, its squared length (1 when zero) and the bound."""
    from my_collision_pkg.core.kernels.tubes import tube_keep
    start, step, length2, bound = np.zeros((3, 4)), np.zeros((3, 4)), np.ones(3), np.full(3, -np.inf)
    q0, q1 = np.array([0.1, -0.2, 0.3, 0.0]), np.array([0.4, 0.2, 0.3, -0.5])
    tube_keep(start, step, length2, bound, 1, q0, q1, 0.05)
    assert np.array_equal(start[1], q0) and np.array_equal(step[1], q1 - q0)
    assert np.isclose(length2[1], (q1 - q0) @ (q1 - q0), rtol=1e-15) and bound[1] == 0.05
    assert np.all(bound[[0, 2]] == -np.inf)
    tube_keep(start, step, length2, bound, 2, q0, q0, 0.01)
    assert length2[2] == 1.0 and not step[2].any()


def test_an_edge_cut_into_pieces_each_beside_a_tube_is_covered():
    """An L of two free motions in the plane (levers 1 m/rad, clearance 0.03 m) and a shortcut
    across its corner: as a whole 0.04 rad from either motion at one end (margin -0.01 m:
    uncovered), in halves 0.02 rad from one each (0.01 m left: covered). A shortcut whose
    midpoint lies 0.03 rad from both motions is covered by no pieces (every cut leaves a piece
    ending there, with nothing left); with the gate above the whole edge's margin, no edge is cut."""
    from my_collision_pkg.core.checks import free_tubes
    needed = DEFAULT_TOUCH_TOLERANCE_M + gjk_tolerance(DEFAULT_TOUCH_TOLERANCE_M)
    tubes = FreeTubes(np.array([1.0, 1.0]), needed)
    tubes.add(np.array([0.0, 0.0]), np.array([1.0, 0.0]), 0.03)
    tubes.add(np.array([1.0, 0.0]), np.array([1.0, 1.0]), 0.03)
    corner_cut = (np.array([0.96, 0.0]), np.array([1.0, 0.04]))
    assert tubes.covers(*corner_cut)
    assert not tubes.covers(np.array([0.94, 0.0]), np.array([1.0, 0.06]))
    gate = free_tubes.SPLIT_GATE_M
    try:
        free_tubes.SPLIT_GATE_M = -0.005             # the whole edge's margin (-0.01 m) is below the gate: not cut
        assert not tubes.covers(*corner_cut)
    finally:
        free_tubes.SPLIT_GATE_M = gate
    assert tubes.hits == 1


def test_pieces_meet_exactly_at_the_edge_ends():
    """kernels.tubes.tube_pieces_cover: 1 for an edge inside one tube, the number of pieces
    that covered it otherwise, 0 when none did."""
    from my_collision_pkg.core.kernels.tubes import tube_pieces_cover
    start = np.array([[0.0, 0.0], [1.0, 0.0]])
    step = np.array([[1.0, 0.0], [0.0, 1.0]])
    length2, bound, levers = np.ones(2), np.full(2, 0.3), np.ones(2)
    args = (start, step, length2, bound, levers, 2)
    assert tube_pieces_cover(*args, np.array([0.2, 0.0]), np.array([0.8, 0.1]), 0.01, -1.0, 3) == 1
    assert tube_pieces_cover(*args, np.array([0.5, 0.0]), np.array([1.0, 0.5]), 0.01, -1.0, 3) == 2
    assert tube_pieces_cover(*args, np.array([0.5, 0.0]), np.array([1.0, 0.5]), 0.01, -1.0, 0) == 0
    assert tube_pieces_cover(*args, np.array([0.0, 0.5]), np.array([1.0, 1.5]), 0.01, -1.0, 3) == 0
