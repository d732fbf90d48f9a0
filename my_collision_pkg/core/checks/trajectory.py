"""Trajectories: a chain of joint-linear motions between timed waypoints, and when each body pair touches.

Per body pair, the intervals ``[activation, deactivation)`` during which the pair
touches, in integer nanoseconds from the trajectory's start (one
:class:`contact_list.ContactList` per body pair). Entries are certified as motions are
(:mod:`sweep`); exits are found by marching (a touching pair keeps touching while its
distance cannot have risen past ``m + tolerance_m``) and bisection to
``sweep.EXIT_TIME_TOLERANCE`` of the segment; a gap shorter than the marching step may
be merged into one interval. Shape pairs of one body pair, and intervals that meet at a
waypoint, are merged. An interval still open at the trajectory's end is closed one
nanosecond after it (the last instant is in contact). Each interval carries its
deepest contact (the march's samples refined by a golden-section search), whose cc
fields describe its own segment. With ``stop_at_first_contact`` the scan ends with the
segment of the first contact, keeping only the pairs touching at that first time.
In discrete mode the intervals are runs of invalid samples.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from my_collision_pkg.core.checks.contact_builder import ContactBuilder
from my_collision_pkg.core.checks.contact_list import ContactList, ns_from_seconds
from my_collision_pkg.core.checks.explain import Explainer
from my_collision_pkg.core.checks.limits import WorkMeter
from my_collision_pkg.core.checks.motion import (cc_type, check_joint_delta, check_motion, check_samples,
                                                 check_tolerance, contacts_at, discrete_motion, limits_verdict,
                                                 motion_message, motion_mode, sample_chunks, sample_intervals,
                                                 shape_index, swept_shapes, with_cc)
from my_collision_pkg.core.checks.pair_tests import PairTestScratch
from my_collision_pkg.core.checks.request import CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import (Contact, DEFAULT_TOUCH_TOLERANCE_M, MotionMode, MotionResult,
                                                  Status, TrajectoryResult)
from my_collision_pkg.core.checks.sweep import NEVER, Sweep
from my_collision_pkg.core.errors import CollisionPkgError, RequestError, RequestStopped, WorkLimitError
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject


# Sweeps of segments with contacts kept for the intervals' contacts (others are made again)
KEPT_SWEEPS = 16


@dataclass
class ContactSpan:
    """A contact interval of one shape pair, in seconds from the trajectory's start."""
    start_s: float
    end_s: float
    open_end: bool               # still touching at the end of its segment
    deepest: tuple               # (distance, segment, time in the segment, pair index)


def _check_waypoints(resolver: ConfigurationResolver, joint_names, points, times_s, max_waypoints: int):
    """Full configurations (N, A) and times (N,) of a trajectory; RequestError naming the fault
    (:class:`WorkLimitError` beyond ``max_waypoints``, before the waypoints are read)."""
    names = list(joint_names)
    if points is not None and not hasattr(points, "__len__"):
        points = list(points)                       # an iterator of waypoints
    count = len(points) if points is not None else 0
    if count > max_waypoints:
        raise WorkLimitError("max_trajectory_waypoints",
                             f"the trajectory has {count:,} waypoints, more than max_trajectory_waypoints = "
                             f"{max_waypoints:,}: split it into {-(-count // max_waypoints):,} trajectories "
                             f"(sharing their end waypoints) or raise max_trajectory_waypoints")
    block = None
    if isinstance(points, np.ndarray) and points.dtype != object:
        block = np.asarray(points, dtype=float)
        if block.ndim != 2 or block.shape[1] != len(names):
            block = None
    rows = block if block is not None else (list(points) if points is not None else [])
    if not len(rows):
        raise RequestError("the trajectory has no waypoints")
    if block is None:
        for i, row in enumerate(rows):
            n = np.asarray(row, dtype=float).size
            if n != len(names):
                raise RequestError(f"waypoint {i} has {n} positions, expected {len(names)} (one per joint name)")
    times = np.asarray(times_s, dtype=float).ravel()
    if times.size != len(rows):
        raise RequestError(f"{len(rows)} waypoints but {times.size} times")
    if not np.all(np.isfinite(times)):
        i = int(np.flatnonzero(~np.isfinite(times))[0])
        raise RequestError(f"waypoint {i} has non-finite time {times[i]} s")
    if np.any(times < 0):
        i = int(np.flatnonzero(times < 0)[0])
        raise RequestError(f"waypoint {i} has negative time_from_start {times[i]} s")
    if len(times) > 1 and np.all(times == 0):
        times = np.arange(len(times), dtype=float)          # untimed: the waypoint index as seconds
    for i in range(1, len(times)):
        if times[i] <= times[i - 1]:
            raise RequestError(f"waypoint {i} at {times[i]} s is not after waypoint {i - 1} at {times[i - 1]} s")
    try:
        values = block if block is not None else np.array([np.asarray(r, dtype=float).ravel() for r in rows])
        Q = resolver.full_configurations(names, values)
    except RequestError as exc:
        raise RequestError(f"waypoints: {exc}") from exc
    return Q, times


def _segment_events(sweep: Sweep, stop_at_first: bool):
    """Touch intervals of shape pairs in one segment: (pair, entry, exit or None, deepest (t, d)).

    With ``stop_at_first`` only the pairs touching at the segment's first contact time.
    """
    every = np.arange(len(sweep.pairs))
    touch, speed = sweep.first_touch(every, np.zeros(len(every)), stop_at_first=stop_at_first)
    if not np.isfinite(touch).any():
        return [], NEVER, {}
    first = float(touch.min())
    speed_at = {int(p): float(speed[p]) for p in np.flatnonzero(touch == first)}
    events = []
    pending, entries = every, touch
    while True:
        resume_p, resume_t = [], []
        for k in np.flatnonzero(np.isfinite(entries)):
            p, te = int(pending[k]), float(entries[k])
            if stop_at_first and te > first:
                continue
            t_exit, deepest = sweep.exit_time(p, te)
            events.append((p, te, t_exit, deepest))
            if t_exit is not None and not stop_at_first:
                resume_p.append(p)
                resume_t.append(t_exit)
        if not resume_p:
            return events, first, speed_at
        pending = np.array(resume_p, dtype=np.int64)
        entries, _ = sweep.first_touch(pending, np.array(resume_t), stop_at_first=False)


def _interval_contact(sweep: Sweep, p: int, t: float) -> Contact:
    """The contact of pair p at time t of the sweep's segment, cc fields relative to the segment."""
    res, T_link, T_shape = sweep.exact(p, t)
    a, b = int(sweep.a[p]), int(sweep.b[p])
    build = ContactBuilder(sweep.world, T_link, T_shape)
    contact = build.make(a, b, res.p0_world, res.normal_world, res.distance_m, None, None)
    T_link0, _ = sweep.poses(np.array([0.0]))
    T_link1, _ = sweep.poses(np.array([1.0]))
    V0, _ = sweep.speeds(np.array([p]), T_link[None], T_shape[None])
    return with_cc(contact, sweep, a, b, t, cc_type(t, float(V0[0]), sweep.tol), T_link0[0], T_link1[0])


def _merged_spans(items: list[ContactSpan]) -> list[ContactSpan]:
    """The spans of one body pair, merged where they overlap or meet (in seconds), by start time."""
    items.sort(key=lambda x: x.start_s)
    merged: list[ContactSpan] = []
    for span in items:
        last = merged[-1] if merged else None
        if last is not None and span.start_s <= last.end_s:
            if span.end_s > last.end_s or (span.end_s == last.end_s and span.open_end):
                last.end_s, last.open_end = span.end_s, span.open_end
            if span.deepest[0] < last.deepest[0]:
                last.deepest = span.deepest
        else:
            merged.append(ContactSpan(span.start_s, span.end_s, span.open_end, span.deepest))
    return merged


def _contact_lists(spans: dict, sweep_of, end_s: float) -> tuple[ContactList, ...]:
    """One ContactList per body pair from the shape pairs' spans (merged where they overlap or meet);
    ``sweep_of(segment)``: the :class:`Sweep` of a segment with contacts."""
    lists = []
    for (owners, body_types), items in spans.items():
        timed: list[list] = []          # [activation ns, deactivation ns, span], merged again after rounding
        for span in _merged_spans(items):
            activation = ns_from_seconds(span.start_s)
            deactivation = ns_from_seconds(span.end_s)
            if span.open_end and span.end_s >= end_s:
                deactivation += 1                      # in contact through the trajectory's last instant
            deactivation = max(deactivation, activation + 1)
            if timed and activation < timed[-1][1]:
                timed[-1][1] = max(timed[-1][1], deactivation)
                if span.deepest[0] < timed[-1][2].deepest[0]:
                    timed[-1][2] = span
            else:
                timed.append([activation, deactivation, span])
        contact_list = ContactList(owners, body_types)
        for activation, deactivation, span in timed:
            _, segment, t_local, p = span.deepest
            contact = _interval_contact(sweep_of(segment), p, t_local)
            if not contact_list.add_contact_at(activation, deactivation, contact):
                raise AssertionError(f"interval [{activation}, {deactivation}) ns of {owners} does not fit its list")
        lists.append(contact_list)
    return tuple(lists)


def check_trajectory(explainer: Explainer, request: CheckRequest, joint_names, points, times_s, *,
                     mode=MotionMode.CERTIFIED, max_step: float = 0.0, stop_at_first_contact: bool = True,
                     tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M,
                     meter: WorkMeter | None = None) -> TrajectoryResult:
    """See :meth:`checker.CollisionChecker.check_trajectory` (never raises on bad input).

    The request's contact distance and budget are not used: the first contact's contacts
    are those of the pairs touching then, within the checker's budget. ``meter``: the
    request's :class:`limits.WorkMeter` (its steps bound covers all segments together).

    Raises
    ------
    RequestStopped
        When the meter's stop event is set while the check works.
    """
    resolver = explainer.resolver
    meter = meter if meter is not None else WorkMeter()
    limits = meter.limits
    request = dataclasses.replace(request, contact_distance=0.0, max_contacts=None)
    try:
        mode = motion_mode(mode, max_step, allow_bool=False)
        check_tolerance(tolerance_m)
        world = request.world_of(resolver.scene)
        Q, times = _check_waypoints(resolver, joint_names, points, times_s, limits.max_trajectory_waypoints)
        selection = request.selection(world)
        robot = world.robot
        if len(Q) > 1 and not float(np.max(np.abs(np.diff(Q, axis=0)))) <= limits.max_joint_delta:
            for i in range(len(Q) - 1):             # name the first segment beyond the bound
                check_joint_delta(robot, Q[i], Q[i + 1], limits.max_joint_delta, f"segment {i}")
        if mode == MotionMode.DISCRETE:
            check_samples(_trajectory_samples(robot, Q, max_step), limits.max_motion_samples, "the trajectory")
    except RequestStopped:
        raise
    except (CollisionPkgError, TypeError, ValueError) as exc:
        return TrajectoryResult(False, Status.INVALID_REQUEST, str(exc))
    for i, q in enumerate(Q):
        message = limits_verdict(resolver, q, f"waypoint {i}")
        if message is not None:
            return TrajectoryResult(False, Status.OUT_OF_BOUNDS, message, float(times[i]), max(i - 1, 0))
    try:
        return _scan(explainer, request, world, selection, Q, times, mode, max_step, stop_at_first_contact,
                     tolerance_m, meter)
    except WorkLimitError as exc:
        return TrajectoryResult(False, Status.INVALID_REQUEST, str(exc))


def _trajectory_samples(robot, Q: np.ndarray, max_step: float) -> float:
    """Discrete samples of all segments of waypoints Q (N, A) at ``max_step`` (a float: may be inf)."""
    if len(Q) < 2:
        return 2.0
    largest = np.max(np.abs(np.diff(Q, axis=0) @ robot.kinematics_arrays[0].T), axis=1) \
        if robot.kinematics_arrays[0].shape[0] else np.zeros(len(Q) - 1)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        n = np.maximum(np.ceil(largest / max_step - 1e-12), 1.0)
    return float(np.sum(n + 1.0))


def _scan(explainer: Explainer, request: CheckRequest, world, selection, Q: np.ndarray, times: np.ndarray, mode,
          max_step: float, stop_at_first_contact: bool, tolerance_m: float, meter: WorkMeter) -> TrajectoryResult:
    """The segments of a checked trajectory, one after the other (see :func:`check_trajectory`)."""
    n_segments = max(len(Q) - 1, 1)
    spans: dict = {}
    # the segments with contacts (their intervals' contacts are made at the end): the last few
    # sweeps are kept, the others made again when needed, so memory does not grow with them
    ends: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    kept: dict[int, Sweep] = {}
    first: tuple | None = None          # (time s, segment, MotionResult)
    for i in range(n_segments):
        meter.check_stop()
        qa, qb, ta, tb = (Q[i], Q[i + 1], times[i], times[i + 1]) if len(Q) > 1 else (Q[0], Q[0], times[0], times[0])
        sweep = Sweep(world, selection, request, qa, qb, tolerance_m, meter=meter)
        sweep.what, sweep.progress = "the trajectory", (lambda t, i=i: (i + t) / n_segments)
        before = len(spans), sum(len(v) for v in spans.values())
        if mode == MotionMode.DISCRETE:
            found = _discrete_segment(explainer, sweep, i, ta, tb, max_step, spans, stop_at_first_contact)
        else:
            found = _certified_segment(explainer, sweep, i, ta, tb, spans, stop_at_first_contact,
                                       first is None)
        if found is not None or (len(spans), sum(len(v) for v in spans.values())) != before:
            ends[i] = (qa, qb)
            kept[i] = sweep
            while len(kept) > KEPT_SWEEPS:
                kept.pop(next(iter(kept)))
        if found is not None and first is None:
            first = found
        if first is not None and stop_at_first_contact:
            break
    def sweep_of(segment: int) -> Sweep:
        if segment not in kept:
            kept[segment] = Sweep(world, selection, request, *ends[segment], tolerance_m, meter=meter)
            while len(kept) > KEPT_SWEEPS:
                kept.pop(next(iter(kept)))
        return kept[segment]
    lists = _contact_lists(spans, sweep_of, float(times[-1]))
    if first is None:
        plural = "s" if n_segments > 1 else ""
        return TrajectoryResult(True, Status.VALID, f"valid ({n_segments} segment{plural})", -1.0, -1, lists, None)
    time_s, segment, result = first
    message = f"{result.message} (segment {segment}, {time_s:.6f} s into the trajectory)"
    return TrajectoryResult(False, Status.IN_COLLISION, message, float(time_s), int(segment), lists, result)


def _certified_segment(explainer: Explainer, sweep: Sweep, segment: int, ta: float, tb: float, spans: dict,
                       stop: bool, report_first: bool):
    """Certified check of one segment: spans per shape pair; with ``report_first``, (time s,
    segment, MotionResult) of its first contact, else (or without contact) None."""
    world = sweep.world
    events, t_first, speed_at = _segment_events(sweep, stop)
    for p, te, tx, (t_deep, d_deep) in events:
        a, b = int(sweep.a[p]), int(sweep.b[p])
        key = ((world.shapes[a].owner, world.shapes[b].owner),
               (world.shapes[a].body_type, world.shapes[b].body_type))
        spans.setdefault(key, []).append(ContactSpan(ta + te * (tb - ta), ta + (tx if tx is not None else 1.0)
                                                     * (tb - ta), tx is None, (d_deep, segment, t_deep, p)))
    if not events or not report_first:
        return None
    contacts, q, _ = contacts_at(explainer, sweep, t_first, speed_at)
    p0 = min(speed_at)
    result = MotionResult(False, Status.IN_COLLISION, motion_message(sweep, p0, t_first, contacts),
                          t_first, contacts, sweep.robot.active_joint_names, q)
    return ta + t_first * (tb - ta), segment, result


def _discrete_segment(explainer: Explainer, sweep: Sweep, segment: int, ta: float, tb: float, max_step: float,
                      spans: dict, stop: bool):
    """Discrete sampling of one segment (``SAMPLE_CHUNK`` samples at a time, far world objects
    culled): spans per body pair from consecutive invalid samples; (time s, segment,
    MotionResult) of its first invalid sample, or None."""
    world = sweep.world
    n = sample_intervals(sweep, max_step)
    shapes = swept_shapes(sweep)
    index = shape_index(world)
    names = sweep.robot.active_joint_names
    at_sample = dataclasses.replace(sweep.request, world=world)
    found_any = False
    for lo, local in sample_chunks(n):
        q = sweep.configurations(local)
        first_hit = explainer.first_collision(world, q, sweep.selection, shapes=shapes, stop=sweep.meter)
        bad = np.flatnonzero(first_hit >= 0)
        if bad.size == 0:
            continue
        found_any = True
        for j in (bad[:1] if stop else bad):
            sweep.meter.check_stop()
            k = lo + int(j)
            explanation = explainer.explain(names, q[j], at_sample)
            for c in explanation.contacts:
                if c.distance >= 0 and explanation.valid:
                    continue
                a, b = index[(c.link_names[0], c.shape_ids[0])], index[(c.link_names[1], c.shape_ids[1])]
                match = np.flatnonzero((sweep.a == a) & (sweep.b == b))
                if match.size == 0:
                    continue
                p = int(match[0])
                key = (c.link_names, c.body_types)
                t_abs = ta + float(local[j]) * (tb - ta)
                t_next = ta + ((k + 1) * (1.0 / n) if k + 1 < n else 1.0) * (tb - ta)
                spans.setdefault(key, []).append(ContactSpan(t_abs, t_next if k < n else tb, k == n,
                                                             (c.distance, segment, float(local[j]), p)))
        if stop:
            break
    if not found_any:
        return None
    result = discrete_motion(explainer, sweep, max_step)
    return ta + result.cc_time * (tb - ta), segment, result


# ----- warm-up ------------------------------------------------------------------------
# A two-joint arm (a box on a revolute joint, a sphere on a prismatic one) for the warm-up.
_WARM_UP_URDF = """
<robot name="warm_up_arm">
  <link name="base"/>
  <link name="arm"><collision><origin xyz="0.3 0 0"/><geometry><box size="0.4 0.05 0.05"/></geometry></collision></link>
  <link name="tip"><collision><geometry><sphere radius="0.03"/></geometry></collision></link>
  <joint name="turn" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="arm"/><child link="tip"/><origin xyz="0.5 0 0"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.2" effort="1" velocity="1"/></joint>
</robot>
"""


def warm_up_motion_checks() -> None:
    """Compile (or load from numba's cache) every kernel the motion checks use, with the argument
    types they pass: one certified and one discrete motion, and a certified trajectory with
    contact intervals, of a small arm through a block (some 30 ms once compiled).

    For a node's start-up (the compiled kernels' own warm-up, :func:`kernels.warm_up.warm_up`,
    leaves the motion kernels out: they take the checks' argument packs)."""
    scene = PlanningScene(RobotModel.from_urdf_string(_WARM_UP_URDF))
    T = np.eye(4)
    T[:3, 3] = (0.0, 0.6, 0.0)
    scene.apply([AddObject(SceneObject("block", (ObjectShape(Box((0.1, 0.1, 0.1))),), T))])
    explainer = Explainer(ConfigurationResolver(scene), PairTestScratch(), max_contacts=10, contacts_per_pair=2)
    names = ["turn", "slide"]
    for mode, step in ((MotionMode.CERTIFIED, 0.0), (MotionMode.DISCRETE, 0.05)):
        check_motion(explainer, CheckRequest(), names, [0.0, 0.1], [3.0, 0.1], mode=mode, max_step=step)
    check_trajectory(explainer, CheckRequest(), names, [[0.0, 0.1], [3.0, 0.1]], [0.0, 1.0],
                     stop_at_first_contact=False)
