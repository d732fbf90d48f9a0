"""Adapters for OMPL's Python bindings: plan with OMPL, check states and edges with this package.

OMPL (the PyPI ``ompl`` 2.0.1 wheel, nanobind bindings) is an optional dependency: this
module imports without it (``OMPL_AVAILABLE`` is then False and the calls below raise
:class:`OmplNotInstalled`, naming the ``pip install``).

- :class:`StateValidityChecker` (an ``ompl.base.StateValidityChecker``): a state is valid
  when :meth:`CollisionChecker.check` says so (joint limits included), for one group.
- :class:`CertifiedMotionValidator` (an ``ompl.base.MotionValidator``): an edge is valid
  when the certified bool check says so (:meth:`CollisionChecker.is_motion_valid`: never
  valid where a configuration on the edge collides, however thin the obstacle).
- :class:`DiscreteMotionValidator`: for comparison, this package's batch predicate at the
  states OMPL's own discrete validator would check (``validSegmentCount`` segments); it
  can step over a thin obstacle as OMPL's does.
- :func:`plan`: a planner between two configurations (SRDF group states by name, or
  joint values) with one of those validators; the path found, simplified through the same
  validator, and the time and calls spent (:class:`PlanResult`).

The state space's dimensions are mapped to joints by their names
(``RealVectorStateSpace.setDimensionName``; :func:`joint_state_space` names them); a
space with unnamed dimensions is taken in the group's joint order. Joints outside the
group keep the scene's current values.

What the bindings allow. Python subclasses of ``StateValidityChecker`` and
``MotionValidator`` are called from C++ (the planners, the path simplifier and
``PathGeometric.check`` all reach them); OMPL calls the two-state ``checkMotion``, which is
the one overridden here (the bindings expose no ``checkMotion(s1, s2, lastValid)`` to
override; planners that want the last valid state, e.g. RRT's intermediate states, are
not used here). OMPL's ``DiscreteMotionValidator`` is not bound: it is what a
``SpaceInformation`` uses when no validator is set, at ``setStateValidityCheckingResolution``.
LazyPRM and LazyRRT are not in the 2.0.1 bindings (``ompl.geometric`` has RRT,
RRTConnect, RRT*, PRM, PRM*, KPIECE1, BKPIECE1, LBKPIECE1, BIT*, FMT, ...): the lazy
planner here is LBKPIECE1 (lazy bi-directional KPIECE: edges are checked only on a
candidate path), which goes through the same validators.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from my_collision_pkg.core.errors import RequestError

try:                                   # optional: the package works without OMPL
    from ompl import base as ob
    from ompl import geometric as og
    from ompl import util as ou
except ImportError:                    # pragma: no cover - depends on the environment
    ob = og = ou = None

OMPL_AVAILABLE = ob is not None
OMPL_REQUIREMENT = "ompl==2.0.1"
# OMPL's default: an edge's states are checked at most this fraction of the space's extent apart
OMPL_DEFAULT_RESOLUTION = 0.01
DEFAULT_GROUP = "arm"
DEFAULT_PLANNER = "RRTConnect"
# planners by name (those the 2.0.1 bindings hold); LBKPIECE1 is the lazy one
PLANNER_NAMES = ("RRTConnect", "RRT", "PRM", "PRMstar", "KPIECE1", "BKPIECE1", "LBKPIECE1", "RRTstar")
LAZY_PLANNER = "LBKPIECE1"
VALIDATORS = ("certified", "discrete", "ompl")


class OmplNotInstalled(ImportError):
    """OMPL's Python bindings are needed and not installed."""


def require_ompl() -> None:
    """Raises :class:`OmplNotInstalled` (with the pip line) when OMPL is not importable."""
    if not OMPL_AVAILABLE:
        raise OmplNotInstalled(f"OMPL's Python bindings are not installed: pip install {OMPL_REQUIREMENT} "
                               "(CPython 3.11 wheel); my_collision_pkg works without them, its planning "
                               "adapters do not")


# ----- joints and the state space ---------------------------------------------------
def group_joint_names(checker, group_name: str = DEFAULT_GROUP) -> tuple[str, ...]:
    """The active joints of SRDF group ``group_name`` (all of them for ""), in the robot's order: its
    ``<joint>`` entries, the joints along its ``<chain>`` entries, the joints above its ``<link>``
    entries and those of its subgroups (as MoveIt reads a group).

    Raises
    ------
    RequestError
        For a group the SRDF does not define (the message lists the known ones), or one with no
        active joint.
    """
    robot = checker.scene.robot
    if not group_name:
        return tuple(robot.active_joint_names)
    semantic = checker.scene.semantic
    semantic.group_links(robot, group_name)              # an unknown group is refused here, by name
    by_child = {j.child: j.name for j in robot.joints}
    found: set[str] = set()

    def collect(group: str, seen: tuple[str, ...]) -> None:
        definition = semantic.groups[group]
        found.update(definition.joints)
        found.update(by_child[link] for link in definition.links if link in by_child)
        for base, tip in definition.chains:
            link = tip
            while link is not None and link != base:
                if link in by_child:
                    found.add(by_child[link])
                link = robot.parent_link(link)
        for sub in definition.subgroups:
            if sub not in seen and sub in semantic.groups:
                collect(sub, seen + (group,))

    collect(group_name, ())
    names = tuple(n for n in robot.active_joint_names if n in found)
    if not names:
        raise RequestError(f"group '{group_name}' has no active joint")
    return names


def named_configuration(checker, name: str, joint_names) -> np.ndarray:
    """The values (K,) of ``joint_names`` in SRDF group state ``name``; joints it leaves out keep the scene's values.

    Raises
    ------
    RequestError
        For a state the SRDF does not define (the message lists the known ones).
    """
    states = checker.scene.semantic.group_states
    if name not in states:
        known = ", ".join(sorted(states)) or "none"
        raise RequestError(f"unknown group state '{name}' (the SRDF's group states: {known})")
    _, values = states[name]
    robot = checker.scene.robot
    current = checker.scene.current_positions
    return np.array([values.get(j, current[robot.active_index(j)]) for j in joint_names], dtype=float)


def joint_state_space(checker, group_name: str = DEFAULT_GROUP, joint_names=None):
    """A ``RealVectorStateSpace`` of the group's joints (or of ``joint_names``): bounds from the joint
    limits, each dimension named after its joint. Returns (space, joint names).

    Raises
    ------
    RequestError
        For an unknown group or joint.
    """
    require_ompl()
    robot = checker.scene.robot
    if joint_names is None:
        names = group_joint_names(checker, group_name)
    else:
        names = tuple(str(n) for n in joint_names)
        unknown = [n for n in names if robot.active_index(n) is None]
        if unknown or not names:
            raise RequestError(f"not active joints of the robot: {unknown or 'none given'}")
    space = ob.RealVectorStateSpace(len(names))
    bounds = ob.RealVectorBounds(len(names))
    for i, name in enumerate(names):
        k = robot.active_index(name)
        bounds.setLow(i, float(robot.lower_limits[k]))
        bounds.setHigh(i, float(robot.upper_limits[k]))
    space.setBounds(bounds)
    for i, name in enumerate(names):
        space.setDimensionName(i, name)
    return space, names


def state_joint_names(space, checker, group_name: str = DEFAULT_GROUP) -> tuple[str, ...]:
    """The joint of each dimension of ``space``: its dimension names when they are all joints of the
    robot, else (unnamed dimensions) the group's joints in order, which must match the dimension.

    Raises
    ------
    RequestError
        When the names are not the robot's joints and the group's joints do not fit the dimension.
    """
    robot = checker.scene.robot
    n = space.getDimension()
    named = tuple(space.getDimensionName(i) for i in range(n))
    if all(robot.active_index(x) is not None for x in named if x) and all(named):
        return named
    names = group_joint_names(checker, group_name)
    if len(names) != n:
        raise RequestError(f"the state space has {n} dimensions ({', '.join(named)}) but group '{group_name}' "
                           f"has {len(names)} joints: name the dimensions after the joints")
    return names


# ----- validity checkers --------------------------------------------------------------
if OMPL_AVAILABLE:
    class StateValidityChecker(ob.StateValidityChecker):
        """OMPL state validity from :meth:`CollisionChecker.check` (limits included) for one group.

        ``calls``: how many states OMPL asked about.
        """

        def __init__(self, si, checker, group_name: str = DEFAULT_GROUP, **options) -> None:
            super().__init__(si)
            names = state_joint_names(si.getStateSpace(), checker, group_name)
            self.validity = checker.motion_validity(names, group_name=group_name, **options)
            self._n = len(names)
            self.calls = 0

        def isValid(self, state) -> bool:                    # noqa: N802 (OMPL's name)
            self.calls += 1
            return self.validity.is_valid(state[0:self._n])

    class CertifiedMotionValidator(ob.MotionValidator):
        """OMPL edge validity from the certified bool check (:meth:`MotionValidity.is_motion_valid`).

        ``calls`` and ``invalid``: edges asked about and refused.
        """

        def __init__(self, si, checker, group_name: str = DEFAULT_GROUP, *, record_invalid: list | None = None,
                     **options) -> None:
            super().__init__(si)
            names = state_joint_names(si.getStateSpace(), checker, group_name)
            self.validity = checker.motion_validity(names, group_name=group_name, **options)
            self._n = len(names)
            self.calls = self.invalid = 0
            self._record = record_invalid            # (start, goal) arrays of refused edges, when given

        def checkMotion(self, s1, s2) -> bool:               # noqa: N802 (OMPL's name)
            self.calls += 1
            n = self._n
            a, b = s1[0:n], s2[0:n]
            ok = self.validity.is_motion_valid(a, b)
            if not ok:
                self.invalid += 1
                if self._record is not None:
                    self._record.append((np.array(a), np.array(b)))
            return ok

    class DiscreteMotionValidator(ob.MotionValidator):
        """For comparison: the states OMPL's discrete validator checks (``validSegmentCount``
        segments of the space, at its longest valid segment fraction), with this package's
        batch predicate; may step over a thin obstacle."""

        def __init__(self, si, checker, group_name: str = DEFAULT_GROUP, **options) -> None:
            super().__init__(si)
            self._space = si.getStateSpace()
            names = state_joint_names(self._space, checker, group_name)
            self.validity = checker.motion_validity(names, group_name=group_name, **options)
            self._n = len(names)
            self.calls = self.invalid = 0

        def checkMotion(self, s1, s2) -> bool:               # noqa: N802 (OMPL's name)
            self.calls += 1
            n = self._n
            ok = self.validity.is_motion_valid_discrete(s1[0:n], s2[0:n],
                                                        segments=self._space.validSegmentCount(s1, s2))
            if not ok:
                self.invalid += 1
            return ok


# ----- planning -----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PlanResult:
    """What :func:`plan` found.

    Attributes
    ----------
    solved : bool, an exact solution was found.
    joint_names : the path's joints, in column order.
    path : (K, n) configurations (rad or m), start first; empty when not solved.
    raw_path : (K', n) the planner's path before simplification.
    solve_time_s, simplify_time_s : wall time of the planner and of the simplifier.
    solve_cpu_s, simplify_cpu_s : this process's CPU time in them (steadier on a loaded machine).
    state_checks, motion_checks : calls of the validity checker and of the motion validator
        (OMPL's own discrete validator: ``SpaceInformation.getCheckedMotionCount``).
    planner, validator : the names used.
    """
    solved: bool
    joint_names: tuple[str, ...]
    path: np.ndarray
    raw_path: np.ndarray
    solve_time_s: float
    simplify_time_s: float
    state_checks: int
    motion_checks: int
    planner: str
    validator: str
    solve_cpu_s: float = float("nan")
    simplify_cpu_s: float = float("nan")

    def format(self, digits: int = 3) -> str:
        """The path as lines of joint values (a header with the joints first)."""
        if not self.solved:
            return f"{self.planner} ({self.validator} edges): no path"
        lines = [f"{self.planner} ({self.validator} edges): {len(self.path)} waypoints over "
                 f"{', '.join(self.joint_names)}; solve {1e3 * self.solve_time_s:.1f} ms, "
                 f"simplify {1e3 * self.simplify_time_s:.1f} ms"]
        for k, q in enumerate(self.path):
            lines.append(f"  {k:2d}: [" + ", ".join(f"{v:+.{digits}f}" for v in q) + "]")
        return "\n".join(lines)


def _path_array(path, n: int) -> np.ndarray:
    return np.array([path.getState(k)[0:n] for k in range(path.getStateCount())], dtype=float).reshape(-1, n)


def _values(checker, value, names) -> np.ndarray:
    if isinstance(value, str):
        return named_configuration(checker, value, names)
    values = np.asarray(value, dtype=float).ravel()
    if values.shape != (len(names),):
        raise RequestError(f"expected {len(names)} values for joints {list(names)}, got {values.tolist()}")
    return values


def make_planner(name: str, si):
    """An OMPL geometric planner by name (:data:`PLANNER_NAMES`).

    Raises
    ------
    RequestError
        For a name the bindings do not hold (LazyPRM and LazyRRT are not in OMPL 2.0.1's).
    """
    require_ompl()
    cls = getattr(og, name, None) if name in PLANNER_NAMES or name.startswith("Lazy") else None
    if cls is None:
        raise RequestError(f"planner '{name}' is not available in OMPL's Python bindings (known: "
                           f"{', '.join(PLANNER_NAMES)}; the lazy one is {LAZY_PLANNER})")
    return cls(si)


def plan(checker, start, goal, *, group_name: str = DEFAULT_GROUP, planner: str = DEFAULT_PLANNER,
         validator: str = "certified", resolution: float = OMPL_DEFAULT_RESOLUTION, time_limit_s: float = 5.0,
         simplify: bool = True, simplify_time_s: float = 0.0, seed: int | None = None,
         joint_names=None, record_invalid_edges: list | None = None, log_level: str | None = "warn",
         **options) -> PlanResult:
    """Plan a joint-space path for ``group_name`` from ``start`` to ``goal`` with OMPL.

    Parameters
    ----------
    checker : CollisionChecker
    start, goal : str or (n,) array
        An SRDF group state's name, or the group's joint values (rad or m, in the order of
        :func:`group_joint_names`).
    planner : str
        One of :data:`PLANNER_NAMES` (``LBKPIECE1``: lazy).
    validator : str
        ``"certified"`` (the default: :class:`CertifiedMotionValidator`), ``"discrete"``
        (:class:`DiscreteMotionValidator`) or ``"ompl"`` (OMPL's own discrete validator).
    resolution : float
        The discrete validators' longest valid segment, a fraction of the space's extent
        (OMPL's ``setStateValidityCheckingResolution``; default 0.01, OMPL's own).
    time_limit_s, simplify, simplify_time_s
        The planner's time; whether to simplify the path (``SimpleSetup.simplifySolution``:
        shortcuts, B-spline smoothing, through the same validator), and for how long (0: until
        the simplifier is done).
    seed : int or None
        Seeds OMPL's random numbers (:func:`seed_random`: OMPL takes it only before its first
        random number in the process).
    joint_names : sequence of str or None
        Plan for these joints only (the state space's dimensions, bounds from their limits)
        instead of the group's; the others keep the scene's current values.
    record_invalid_edges : list or None
        With the certified validator, (start, goal) arrays of every edge it refused are appended.
    log_level : str or None
        OMPL's console level set first (:func:`set_log_level`; OMPL's level is global to the
        process): "warn" by default keeps OMPL's per-plan info lines out of the output; None
        leaves it as it is.
    options : the padding keywords of :meth:`CollisionChecker.motion_validity`.

    Raises
    ------
    OmplNotInstalled, RequestError
        Without OMPL; for an unknown group, state, planner or validator, wrong values, or an
        invalid start or goal (named).
    """
    require_ompl()
    if log_level is not None:
        set_log_level(log_level)
    if validator not in VALIDATORS:
        raise RequestError(f"unknown validator '{validator}' (known: {', '.join(VALIDATORS)})")
    if seed is not None:
        seed_random(seed)
    space, names = joint_state_space(checker, group_name, joint_names)
    q_start, q_goal = _values(checker, start, names), _values(checker, goal, names)
    setup = og.SimpleSetup(space)
    si = setup.getSpaceInformation()
    states = StateValidityChecker(si, checker, group_name, **options)
    setup.setStateValidityChecker(states)
    si.setStateValidityCheckingResolution(float(resolution))
    edges = None
    if validator == "certified":
        edges = CertifiedMotionValidator(si, checker, group_name, record_invalid=record_invalid_edges, **options)
    elif validator == "discrete":
        edges = DiscreteMotionValidator(si, checker, group_name, **options)
    if edges is not None:
        si.setMotionValidator(edges)
    for q, what in ((q_start, "start"), (q_goal, "goal")):
        if not states.validity.is_valid(q):
            verdict = checker.check(names, q, group_name=group_name, **options)
            raise RequestError(f"the {what} is not valid: {verdict.message}")
    if validator == "certified":
        _load_motion_kernels(checker, names, group_name, q_start, q_goal, options)
    a, b = space.allocState(), space.allocState()
    for i in range(len(names)):
        a[i], b[i] = float(q_start[i]), float(q_goal[i])
    setup.setStartAndGoalStates(a, b)
    setup.setPlanner(make_planner(planner, si))
    t0, c0 = time.perf_counter(), time.process_time()
    status = setup.solve(float(time_limit_s))
    solve_s, solve_cpu = time.perf_counter() - t0, time.process_time() - c0
    solved = bool(setup.haveExactSolutionPath()) and "Exact" in status.asString()
    n = len(names)
    raw = path = np.zeros((0, n))
    simplify_s = simplify_cpu = 0.0
    if solved:
        raw = _path_array(setup.getSolutionPath(), n)
        if simplify:
            t0, c0 = time.perf_counter(), time.process_time()
            setup.simplifySolution(float(simplify_time_s))
            simplify_s, simplify_cpu = time.perf_counter() - t0, time.process_time() - c0
        path = _path_array(setup.getSolutionPath(), n)
    motion_checks = edges.calls if edges is not None else int(si.getCheckedMotionCount())
    return PlanResult(solved, names, path, raw, solve_s, simplify_s, states.calls, motion_checks, planner, validator,
                      solve_cpu, simplify_cpu)


def _load_motion_kernels(checker, names, group_name: str, q_start: np.ndarray, q_goal: np.ndarray,
                         options: dict) -> None:
    """The certified bool check's compiled kernels loaded (or, on a fresh install, compiled) before
    the planner's clock starts: a motion of no length (the search's one compiled call) and the
    start-to-goal motion (the screen), on a validity object of their own, so that the planner's
    edge memory and free tubes start empty. Compiling them on a fresh pip install took longer than
    the default ``time_limit_s``, and the first plan then found no path."""
    validity = checker.motion_validity(names, group_name=group_name, **options)
    validity.is_motion_valid(q_start, q_start)
    validity.is_motion_valid(q_start, q_goal)


def seed_random(seed: int) -> None:
    """Seeds OMPL's random numbers (``ompl.util.RNG.setSeed``); OMPL takes the seed only before its
    first random number generator exists in the process (it warns and ignores it afterwards)."""
    require_ompl()
    ou.RNG.setSeed(int(seed))


def set_log_level(level: str = "warn") -> None:
    """OMPL's console messages: "debug", "info", "warn" (default), "error" or "none"."""
    require_ompl()
    levels = {"debug": ou.LOG_DEBUG, "info": ou.LOG_INFO, "warn": ou.LOG_WARN, "error": ou.LOG_ERROR,
              "none": ou.LOG_NONE}
    if level not in levels:
        raise RequestError(f"unknown log level '{level}' (known: {', '.join(levels)})")
    ou.setLogLevel(levels[level])


def segment_verdicts(checker, result: PlanResult, *, group_name: str = DEFAULT_GROUP, **options) -> list:
    """The certified :meth:`CollisionChecker.check_motion` result of every segment of ``result.path``."""
    return [checker.check_motion(result.joint_names, a, b, group_name=group_name, **options)
            for a, b in zip(result.path[:-1], result.path[1:])]


__all__ = ["DEFAULT_GROUP", "DEFAULT_PLANNER", "LAZY_PLANNER", "OMPL_AVAILABLE", "OMPL_DEFAULT_RESOLUTION",
           "OMPL_REQUIREMENT", "OmplNotInstalled", "PLANNER_NAMES", "PlanResult", "VALIDATORS", "group_joint_names",
           "joint_state_space", "make_planner", "named_configuration", "plan", "require_ompl",
           "seed_random", "segment_verdicts", "set_log_level", "state_joint_names"]
if OMPL_AVAILABLE:
    __all__ += ["CertifiedMotionValidator", "DiscreteMotionValidator", "StateValidityChecker"]
