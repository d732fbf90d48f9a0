"""Joint-space tubes around motions certified free: a planner's later edges inside one need no search.

A sampling planner's path simplifier (OMPL's B-spline smoothing, its shortcuts' pieces)
asks about many short edges that run close beside edges it asked about before. When the
certified search finds a motion E free, it also gives a lower bound ``c`` of (signed distance -
padding) over E and every pair of the request (``Sweep.certified_clearance``). No point
of a body moves further than ``levers @ |dq|`` metres when the joints move by ``dq`` along a
line, whatever the configuration (``levers`` (A,): per active joint, the largest over the
request's pairs of the configuration-independent levers of ``sweep.pair_top_speeds``;
a prismatic joint's travel taken at its limits). So for a new edge a -> b whose ends lie at
``da = a - E(ta)`` and ``db = b - E(tb)`` from points of E, each point of the new edge lies at
most ``max(|da|, |db|)`` (per joint) from a point of E (both edges are straight), and every
pair's (distance - padding) on it is at least

    c - levers @ max(|da|, |db|).

When that is at least the touch tolerance plus GJK's precision (``needed``), no
configuration on the new edge comes within the touch tolerance of a pair: the certified
search would evaluate no point it could call touching, so the edge's verdict is
CERTIFIED's own (free), with no search.

An edge that no one tube covers but that runs near the kept motions (its best margin at least
``SPLIT_GATE_M``) is cut into 2, 4, .. ``2 ** SPLIT_DEPTH`` equal pieces, and is covered when
every piece lies in a tube (each piece's own): every configuration on the edge lies on a piece,
so the same argument holds for each (the simplifier's shortcuts that cut a corner of the path
run beside two of its edges, one for each part).

Tubes belong to one snapshot and one request (the caller drops them with its edge memory);
the configurations are complete (A,), so joints outside the caller's group count too.
"""
from __future__ import annotations

import threading

import numpy as np

from my_collision_pkg.core.checks.sweep import motion_kinematics, pair_top_speeds, sweep_tables
from my_collision_pkg.core.kernels import advancement as mk
from my_collision_pkg.core.kernels.tubes import tube_keep, tube_pieces_cover

# free motions kept (the most recent ones, a ring); each lookup compares the new edge with all
TUBE_MEMORY = 256
# An edge no one tube covers is cut into pieces (2, 4, .. 2 ** SPLIT_DEPTH) only when its best
# margin over the tubes is at least this (metres; the planner's edges answered this way had a
# median margin of -7 mm as a whole: a looser gate tries many more edges that no pieces cover)
SPLIT_GATE_M = -0.05
SPLIT_DEPTH = 3


def joint_levers(world, selection) -> np.ndarray | None:
    """Per active joint (A,), metres per rad (or per metre): a bound, over the pairs of
    ``selection`` and every configuration within the joint limits, of how fast a pair's
    distance changes when that joint alone moves; None when it is not finite (a prismatic
    joint without finite limits).

    The largest over pairs of the levers :func:`sweep.pair_top_speeds` sums (joints that move
    one body of a pair and not the other), the prismatic travel below each joint taken at
    the limits; mimic joints add their multiplier times their own lever to their source's."""
    robot = world.robot
    kin = motion_kinematics(world)
    static = sweep_tables(world, selection, kin)
    n_mov = kin.mimic_matrix.shape[0]
    if len(static["a"]) == 0 or n_mov == 0:
        return np.zeros(len(robot.lower_limits))
    lower, upper = robot.lower_limits, robot.upper_limits
    finite = np.isfinite(lower) & np.isfinite(upper)
    sources = np.abs(kin.mimic_matrix) > 0
    if (sources[np.asarray(kin.prismatic, dtype=bool)] & ~finite[None, :]).any():
        return None
    q_lower = np.ascontiguousarray(np.where(finite, lower, 0.0))
    q_upper = np.ascontiguousarray(np.where(finite, upper, 0.0))
    _, R_static, _, _ = mk.motion_speed_tables(
        kin.mimic_matrix, kin.mimic_offset, kin.prismatic, static["chain"], kin.child_link, static["robot_shapes"],
        static["robot_link"], static["robot_A"], static["robot_lever"], static["below_T"], len(static["A"]),
        q_lower, q_upper)
    per_pair = pair_top_speeds(static, static["W_a"], static["W_b"], static["a"], static["b"], kin.prismatic,
                               np.eye(n_mov), R_static, len(world.shapes))           # (P, M)
    levers = np.abs(kin.mimic_matrix).T @ per_pair.max(axis=0)
    return levers if np.isfinite(levers).all() else None


class FreeTubes:
    """The last ``capacity`` free motions with their clearance bounds (see the module docstring).

    Parameters
    ----------
    levers : (A,) :func:`joint_levers`.
    needed : float
        The smallest bound that answers an edge, metres (the touch tolerance plus GJK's precision).
    """

    def __init__(self, levers: np.ndarray, needed: float, capacity: int | None = None) -> None:
        n = len(levers)
        capacity = TUBE_MEMORY if capacity is None else capacity
        self.levers = np.ascontiguousarray(levers, dtype=float)
        self.needed = float(needed)
        self._start = np.zeros((capacity, n))
        self._step = np.zeros((capacity, n))
        self._length2 = np.ones(capacity)              # |step|^2, 1 where the step is zero
        self._bound = np.full(capacity, -np.inf)
        self._writing = threading.Lock()
        self._count = 0
        self._next = 0
        self.hits = 0                                  # edges answered from a tube

    def __len__(self) -> int:
        return self._count

    def add(self, q0: np.ndarray, q1: np.ndarray, bound_m: float) -> None:
        """Keeps the free motion q0 -> q1 (A,) whose (distance - padding) is at least ``bound_m``
        everywhere (a tube that can answer nothing is not kept).

        Safe with other threads asking :meth:`covers` (OMPL may call validators from several):
        writers take turns, and a row being written has bound -inf, so a lookup between its
        statements never sees one motion's ends with another's bound."""
        if not bound_m >= self.needed:
            return
        with self._writing:
            k = self._next
            tube_keep(self._start, self._step, self._length2, self._bound, k, q0, q1, bound_m)
            capacity = len(self._bound)
            self._next = k + 1 if k + 1 < capacity else 0
            if self._count < capacity:
                self._count += 1

    def covers(self, q0: np.ndarray, q1: np.ndarray) -> bool:
        """True when the motion q0 -> q1 (A,) (contiguous float arrays) lies in a kept tube, or its
        pieces each in one (see the module docstring), far enough from every pair that no
        configuration on it comes within ``needed`` of touching (:func:`kernels.tubes.tube_pieces_cover`)."""
        if self._count == 0:
            return False
        if tube_pieces_cover(self._start, self._step, self._length2, self._bound, self.levers, self._count, q0, q1,
                             self.needed, SPLIT_GATE_M, SPLIT_DEPTH) == 0:
            return False
        self.hits += 1
        return True
