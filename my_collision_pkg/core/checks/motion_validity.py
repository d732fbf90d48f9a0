"""The planner's checks of one set of joints: is this configuration valid, is this motion valid (bools only).

A sampling planner (OMPL, through :mod:`my_collision_pkg.planning.ompl`) asks these two
questions hundreds of times per plan with the same joints, group and padding, so
:class:`MotionValidity` resolves the names, the group's pairs and the snapshot once and
answers each call with the least Python it can:

- :meth:`MotionValidity.is_valid`: :meth:`CollisionChecker.check`'s verdict of one
  configuration (limits included);
- :meth:`MotionValidity.is_motion_valid`: CERTIFIED's verdict of the joint-space line
  (never True where a configuration on it collides), by the discrete screen and then the
  certificate of :func:`motion.motion_is_free` (``MotionMode.CERTIFIED_BOOL``);
- :meth:`MotionValidity.is_motion_valid_discrete`: samples only, at most ``max_step`` apart
  in every joint (may jump over a thin obstacle; for comparison, as MoveIt and OMPL sample).

The snapshot is the scene's current one at each call (a planning scene update is seen by
the next call). The last ``EDGE_MEMORY`` edge verdicts are kept per snapshot and asked
again for free: OMPL's simplifier and ``PathGeometric.check`` ask about the same edge
(same start and goal, in that order) again, about one call in seven while planning the
Panda around the post. The last ``free_tubes.TUBE_MEMORY`` free edges are kept with their
certified clearance too: a later edge that runs close enough beside one of them is answered
free with no search (:mod:`free_tubes`: no configuration on it comes within the touch
tolerance, so the verdict is CERTIFIED's), as most of the simplifier's short edges are.
Joints not named keep the scene's current values. Made by
:meth:`CollisionChecker.motion_validity`.
"""
from __future__ import annotations

import math

import numpy as np

from my_collision_pkg.core.checks import motion
from my_collision_pkg.core.checks.free_tubes import FreeTubes, joint_levers
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.sweep import gjk_tolerance, one_call_plan
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, Status
from my_collision_pkg.core.errors import RequestError
from my_collision_pkg.core.kernels.tubes import EDGE_NOT_FINITE, EDGE_OUT_OF_LIMITS, EDGE_TOO_LONG, edge_ends

# edge verdicts kept per snapshot (start and goal bytes -> bool), dropped all at once when full
EDGE_MEMORY = 4096

# a snapshot's one-call plan before its first search (sweep.one_call_plan is made then: a
# MotionValidity used for configurations only never builds it)
_NO_PLAN_YET = object()


class MotionValidity:
    """Bool checks of configurations and motions of ``joint_names`` (see the module docstring).

    Parameters
    ----------
    checker : CollisionChecker
    explainer, resolver : the checker's (passed in by :meth:`CollisionChecker.motion_validity`).
    joint_names : sequence of str
        The joints whose values every call gives, in that order.
    request : CheckRequest
        Group and padding switches (its ``contact_distance`` and ``max_contacts`` are not used).
    screen_step : float
        The screen's sample spacing, rad or m (0: ``motion.SCREEN_STEP``).
    tolerance_m : float
        The certificate's touch tolerance, metres.
    tubes : bool
        Answer edges beside earlier free ones from their clearance (:mod:`free_tubes`; the
        verdicts are the same, only faster). False: every edge is searched.

    Raises
    ------
    RequestError
        For unknown or repeated joints, an unknown group, a bad tolerance or screening step.
    """

    def __init__(self, checker, explainer, resolver, joint_names, request: CheckRequest, *,
                 screen_step: float = 0.0, tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                 tubes: bool = True) -> None:
        motion.check_tolerance(tolerance_m)
        if not math.isfinite(screen_step) or screen_step < 0:
            raise RequestError(f"screen_step {screen_step} must be finite and >= 0")
        self._checker, self._explainer, self._resolver = checker, explainer, resolver
        self._names = tuple(str(n) for n in joint_names)
        self._indices = resolver.joint_indices(self._names)
        self._request = request
        self._screen_step = screen_step if screen_step > 0 else motion.SCREEN_STEP
        self._tolerance_m = float(tolerance_m)
        self._use_tubes = bool(tubes)
        # (world, selection, edge memory, tubes, the search's sweep.one_call_plan or _NO_PLAN_YET)
        # of the current snapshot, replaced as one, so a call that started on one snapshot never
        # writes what it found into another's memory
        self._snapshot: tuple = (None, None, {}, None, _NO_PLAN_YET)
        robot = checker.scene.robot
        self._lower, self._upper = robot.lower_limits, robot.upper_limits
        self._selection_for(checker.scene.world)         # an unknown group fails here, not at the first call

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self._names

    @property
    def screen_step(self) -> float:
        """The screen's sample spacing (rad or m)."""
        return self._screen_step

    def _current(self, world) -> tuple:
        """(world, selection, edge memory (see EDGE_MEMORY), FreeTubes or None, the selection's
        ``sweep.one_call_plan``: None where it has none, ``_NO_PLAN_YET`` before :meth:`_plan_of`) of ``world``."""
        snapshot = self._snapshot
        if world is not snapshot[0]:
            selection = self._request.selection(world)
            tubes = None
            if self._use_tubes:
                levers = joint_levers(world, selection)
                if levers is not None:        # GJK's precision on top of the touch tolerance
                    tubes = FreeTubes(levers, self._tolerance_m + gjk_tolerance(self._tolerance_m))
            snapshot = self._snapshot = (world, selection, {}, tubes, _NO_PLAN_YET)
        return snapshot

    def _plan_of(self, snapshot: tuple):
        """The ``sweep.one_call_plan`` (or None) of ``snapshot`` (a :meth:`_current` tuple), made at the
        first call and kept with the snapshot while it is the current one."""
        plan = snapshot[4]
        if plan is _NO_PLAN_YET:
            plan = one_call_plan(snapshot[0], snapshot[1])
            if self._snapshot is snapshot:
                self._snapshot = (*snapshot[:4], plan)
        return plan

    def _selection_for(self, world):
        return self._current(world)[1]

    @property
    def tube_hits(self) -> int:
        """Edges answered free from an earlier free edge's clearance (:mod:`free_tubes`) in this snapshot."""
        tubes = self._snapshot[3]
        return tubes.hits if tubes is not None else 0

    def _out_of_limits(self, q: np.ndarray) -> bool:
        """The resolver's limits verdict (``limits_message(q) is not None``) of configuration(s) q (A,) or
        (N, A), in two comparisons."""
        return self._resolver.check_joint_limits and bool(((q < self._lower) | (q > self._upper)).any())

    def _full(self, values) -> np.ndarray:
        """The complete configuration (A,) of joint values (K,) (:class:`RequestError` on NaN or a wrong length)."""
        values = np.asarray(values, dtype=float)
        if values.shape != self._indices.shape or not math.isfinite(values.sum()):
            raise RequestError(f"expected {len(self._indices)} finite values for joints {list(self._names)}, "
                               f"got {values.tolist()}")
        q = self._checker.scene.current_positions.copy()
        q[self._indices] = values
        return q

    def _ends(self, start, goal) -> np.ndarray:
        """The complete start and goal configurations (2, A) of joint values (K,) each, in one array
        (:class:`RequestError` on NaN or a wrong length, as :meth:`_full`)."""
        try:
            values = np.array((start, goal), dtype=float)
        except ValueError:                                 # ragged: lengths differ
            values = None
        if values is None or values.shape != (2, len(self._indices)) or not math.isfinite(values.sum()):
            self._full(start)
            self._full(goal)
            raise RequestError(f"expected {len(self._indices)} finite values for joints {list(self._names)}")
        q = np.empty((2, len(self._lower)))
        q[:] = self._checker.scene.current_positions
        q[:, self._indices] = values
        return q

    def is_valid(self, values) -> bool:
        """True when the configuration (joint values (K,), this object's joints) is within limits and
        collision-free (:meth:`CollisionChecker.check`'s fast path).

        Raises
        ------
        RequestError
            On NaN or a wrong number of values.
        """
        request = self._request
        verdict = self._checker.check(self._names, values, group_name=request.group_name,
                                      pad_environment_collisions=request.pad_environment_collisions,
                                      pad_self_collisions=request.pad_self_collisions, world=request.world)
        if verdict.status == Status.INVALID_REQUEST:
            raise RequestError(verdict.message)
        return verdict.valid

    def is_motion_valid(self, start, goal) -> bool:
        """CERTIFIED's verdict on the line from ``start`` to ``goal`` (joint values (K,) each): False
        when a configuration on it collides or an end is outside the joint limits.

        Raises
        ------
        RequestError
            On NaN, a wrong number of values, or a motion beyond the checker's work limits.
        RequestStopped
            When the checker's stop event is set while the check runs.
        """
        checker = self._checker
        scene = checker.scene
        world = scene.world
        snapshot = self._current(world)
        _, selection, edges, tubes, plan = snapshot
        limit = checker.limits.max_joint_delta
        try:
            values = np.array((start, goal), dtype=float)
        except ValueError:                                 # ragged: lengths differ
            values = None
        if values is None or values.shape != (2, len(self._indices)):
            self._ends(start, goal)                        # raises, naming what is wrong
        ends = np.empty((2, len(self._lower)))             # (2, A): start and goal, complete
        code = edge_ends(values, self._indices, scene.current_positions, self._resolver.check_joint_limits,
                         self._lower, self._upper, limit, ends)
        if code == EDGE_NOT_FINITE:
            self._ends(start, goal)                        # raises, naming the values
        key = ends.tobytes()
        known = edges.get(key)
        if known is not None:
            return known
        if code == EDGE_OUT_OF_LIMITS:
            return False
        q0 = ends[0]
        q1 = ends[1]
        if code == EDGE_TOO_LONG:
            motion.check_joint_delta(world.robot, q0, q1, limit)           # raises, naming the joint
        if plan is _NO_PLAN_YET:
            plan = self._plan_of(snapshot)
        if tubes is not None and tubes.covers(q0, q1):
            valid = True
        elif tubes is None:
            valid = motion.motion_is_free(self._explainer, world, selection, self._request, q0, q1,
                                          self._tolerance_m, checker.work_meter(), self._screen_step, plan)
        else:
            clearance = motion.free_motion_clearance(self._explainer, world, selection, self._request, q0, q1,
                                                     self._tolerance_m, checker.work_meter(),
                                                     self._screen_step, plan, exact_clearance=False)
            valid = clearance is not None
            if valid:
                tubes.add(q0, q1, clearance)
        if len(edges) >= EDGE_MEMORY:
            edges.clear()
        edges[key] = valid
        return valid

    def is_motion_valid_discrete(self, start, goal, max_step: float = 0.0, *, segments: int = 0) -> bool:
        """The line sampled at ``segments`` + 1 evenly spaced times, or (``segments`` 0) at most
        ``max_step`` (rad or m, > 0) apart in every joint, ends included, every sample checked:
        may be True where a thin obstacle lies between samples.

        Raises
        ------
        RequestError
            On NaN, a wrong number of values, neither a ``max_step`` > 0 nor ``segments`` >= 1,
            or more samples than the checker's ``max_motion_samples``.
        """
        if segments < 1 and not (math.isfinite(max_step) and max_step > 0):
            raise RequestError(f"max_step {max_step} must be finite and > 0 (or segments >= 1)")
        world = self._checker.scene.world
        selection = self._selection_for(world)
        q0, q1 = self._full(start), self._full(goal)
        if self._out_of_limits(q0) or self._out_of_limits(q1):
            return False
        dq = q1 - q0
        n = float(segments) if segments >= 1 else motion.sample_count(world.robot, dq, max_step)
        motion.check_samples(n + 1, self._checker.limits.max_motion_samples)
        for _, times in motion.sample_chunks(int(n)):
            q = q0[None, :] + times[:, None] * dq[None, :]
            if self._explainer.any_collision(world, q, selection) >= 0:
                return False
        return True
