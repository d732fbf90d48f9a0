"""Motions: is the joint-space straight line between two configurations free?

A motion is ``q(t) = q0 + t (q1 - q0)`` for ``t`` in [0, 1].

Certified mode (the default) cannot skip a collision: conservative advancement over
each shape pair of the request on a :class:`sweep.Sweep` (the guarantee, the distance
bounds and the speed bound are set out in :mod:`sweep`). The first touching time over
all pairs is ``cc_time``; every pair touching then is reported with its contact.

A valid certified motion also reports the smallest clearance the search certified
(:meth:`sweep.Sweep.certified_clearance`: a lower bound over the motion and the request's
pairs of signed distance minus padding, where it is reached and the two bodies).

Certified-bool mode (``MotionMode.CERTIFIED_BOOL``, for planners) gives CERTIFIED's verdict
and nothing else: no contacts, no ``cc_time``, no clearance. It first screens samples of
the motion at most ``SCREEN_STEP`` (rad or m) apart in every joint, midpoints first
(:func:`screen_order`), stopping at the first colliding one (a motion of at most
``SCREEN_MIN_SAMPLES`` samples is not screened), so an invalid motion is
refused about as fast as sampling refuses it; only a motion whose samples are all free
goes on to the certificate (the certified search with ``stop_at_first``, no clearance
kept). A colliding sample is a configuration on the line closer than its padding, which
CERTIFIED refuses too, so the verdicts are the same.

Discrete mode samples the motion with at most ``max_step`` (rad or m) between samples
in every joint (mimic joints included) and checks the samples with the batch
predicate, as MoveIt does: a thin obstacle can be jumped over. No tolerance applies.

The helpers that trajectories share (request checks, the contacts at a time, the cc
fields) are public here; :mod:`trajectory` chains motions.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from my_collision_pkg.core.checks.contact_builder import ContactBuilder
from my_collision_pkg.core.checks.explain import Explainer
from my_collision_pkg.core.checks.limits import WorkMeter, joint_delta_error, samples_error
from my_collision_pkg.core.checks.narrowphase import hull_distance_lower_bound, pair_distance
from my_collision_pkg.core.checks.request import CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import (CCType, Contact, DEFAULT_TOUCH_TOLERANCE_M, MotionMode,  # noqa: F401
                                                  MotionResult, NO_CC_TIME, Status, TrajectoryResult)
from my_collision_pkg.core.checks.sweep import OneCallLeft, OneCallPlan, Sweep, one_call_search
from my_collision_pkg.core.errors import CollisionPkgError, RequestError, RequestStopped, WorkLimitError
from my_collision_pkg.core.kernels import advancement as mk
from my_collision_pkg.core.kernels.tubes import screen_samples
from my_collision_pkg.core.scene.planning_scene import CollisionWorld

# Certified mode keeps the bounds its steps are taken on and reports the smallest clearance
# they certify (MotionResult.min_clearance_m); benchmarks switch it off to measure its cost.
TRACK_CLEARANCE = True

# Certified-bool mode: the screen's samples are at most this far apart (rad or m) in every
# joint, when the request names no step of its own (OMPL's default resolution for the Panda,
# 0.01 of its 13 rad joint-space extent, is 0.13 rad along the line).
SCREEN_STEP = 0.1
# ... only when it has more than this many samples: a shorter motion goes to the certificate
# straight away (its halving evaluates the ends, then the midpoint). Planner edges this short
# are nearly all valid (of 1179 recorded RRTConnect + simplifier edges around the Panda's post
# and table with at most 4 samples, 6 collided), so their screen was ~30 us spent for nothing.
SCREEN_MIN_SAMPLES = 4
# ... and never more than this many samples (a longer motion is screened at a longer step;
# the certificate decides the rest)
SCREEN_MAX_SAMPLES = 64
# A motion the search's first compiled call leaves to the Sweep (a pair needs the narrow phase:
# it passes near an obstacle, ~2 % of a planner's edges, ~0.8-2 ms each) is screened again first,
# at this fraction of the screen's step (at most SCREEN_MAX_SAMPLES samples): a colliding sample
# refuses it without the Sweep (CERTIFIED's verdict too: a configuration on it collides). 0: not.
SWEEP_SCREEN_FRACTION = 0.25

# Discrete samples posed and checked together (as the batch's chunk): memory per request
# does not grow with the samples, and the stop event is looked at between chunks.
SAMPLE_CHUNK = 4096


# ----- request handling ------------------------------------------------------------
def check_tolerance(tolerance_m: float) -> None:
    """Raises :class:`RequestError` unless the touch tolerance (metres) is finite and > 0."""
    if not np.isfinite(tolerance_m) or tolerance_m <= 0:
        raise RequestError(f"tolerance_m {tolerance_m} m must be finite and > 0")


def motion_mode(mode, max_step: float, *, allow_bool: bool = True) -> MotionMode:
    """``mode`` as a :class:`MotionMode`; :class:`RequestError` when unknown, DISCRETE without a
    usable step, a negative or non-finite screening step in CERTIFIED_BOOL, or CERTIFIED_BOOL
    where it is not offered (``allow_bool`` False: trajectories)."""
    try:
        mode = MotionMode(int(mode))
    except ValueError as exc:
        raise RequestError(f"unknown motion mode {mode} (CERTIFIED=0, DISCRETE=1, CERTIFIED_BOOL=2)") from exc
    if mode == MotionMode.DISCRETE and (not np.isfinite(max_step) or max_step <= 0):
        raise RequestError(f"max_step {max_step} must be finite and > 0 in discrete mode")
    if mode == MotionMode.CERTIFIED_BOOL:
        if not allow_bool:
            raise RequestError("mode CERTIFIED_BOOL (2) is for single motions; use CERTIFIED (0) or DISCRETE (1)")
        if not np.isfinite(max_step) or max_step < 0:
            raise RequestError(f"max_step {max_step} (the screening step of CERTIFIED_BOOL) must be finite and >= 0")
    return mode


def limits_verdict(resolver: ConfigurationResolver, q: np.ndarray, what: str) -> str | None:
    """The limits message of configuration ``q`` (A,), prefixed by ``what`` (e.g. "start"), or None."""
    message = resolver.limits_message(q)
    return None if message is None else f"{what}: {message}"


def _endpoint(resolver: ConfigurationResolver, joint_names, values, what: str) -> np.ndarray:
    try:
        return resolver.single_configuration(joint_names, values)[0]
    except RequestError as exc:
        raise RequestError(f"{what}: {exc}") from exc


def _prepare(resolver: ConfigurationResolver, request: CheckRequest, joint_names, start, goal):
    world = request.world_of(resolver.scene)
    if len(start) != len(goal):
        raise RequestError(f"start has {len(start)} positions but goal has {len(goal)}")
    q0 = _endpoint(resolver, joint_names, start, "start")
    q1 = _endpoint(resolver, joint_names, goal, "goal")
    selection = request.selection(world)
    return world, selection, q0, q1


def check_joint_delta(robot, q0: np.ndarray, q1: np.ndarray, limit: float, what: str = "the motion") -> None:
    """Raises :class:`WorkLimitError` (``max_joint_delta``) when an active joint moves more than
    ``limit`` (rad or m) from q0 to q1 (A,), naming the joint."""
    delta = np.abs(q1 - q0)
    if delta.size and not float(delta.max()) <= limit:
        raise joint_delta_error(robot.active_joint_names, delta, limit, what)


def sample_count(robot, dq: np.ndarray, max_step: float) -> float:
    """Intervals of the discrete samples of motion ``dq`` (A,) at ``max_step`` (as :func:`sample_times`;
    a float: inf or beyond any int for a tiny step)."""
    largest = float(np.max(np.abs(robot.kinematics_arrays[0] @ dq))) if dq.size else 0.0
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        n = float(np.ceil(np.float64(largest) / np.float64(max_step) - 1e-12))
    return n if n > 1.0 else 1.0


def check_samples(asked: float, limit: int, what: str = "the motion") -> None:
    """Raises :class:`WorkLimitError` (``max_motion_samples``) when ``asked`` samples exceed ``limit``."""
    if not asked <= limit:
        raise samples_error(asked, limit, what)


# ----- contacts along a motion ------------------------------------------------------
def pair_kind(world: CollisionWorld, pair_index: int) -> str:
    """"self-collision" or "environment collision", for pair ``pair_index`` of ``world.pairs``."""
    return "self-collision" if world.pair_is_self[pair_index] else "environment collision"


def _owner_frames(world: CollisionWorld, T_link: np.ndarray, a: int, b: int):
    return (np.array(world.shape_owner_frame(a, T_link)), np.array(world.shape_owner_frame(b, T_link)))


def with_cc(contact: Contact, sweep: Sweep, a: int, b: int, t: float, cc_type: CCType,
            T_link0: np.ndarray, T_link1: np.ndarray) -> Contact:
    """``contact`` of shapes a and b at time t with its cc fields: per body the time and
    kind (none for a body the motion does not move), the owner frames at the motion's
    start (link poses ``T_link0`` (L, 4, 4)) and end (``T_link1``)."""
    times, types = [], []
    for s in (a, b):
        moved = bool(sweep.moved[s])
        times.append(float(t) if moved else NO_CC_TIME)
        types.append(cc_type if moved else CCType.NONE)
    return dataclasses.replace(contact, transforms=_owner_frames(sweep.world, T_link0, a, b),
                               cc_time=tuple(times), cc_type=tuple(types),
                               cc_transforms=_owner_frames(sweep.world, T_link1, a, b))


def cc_type(t: float, speed: float, tolerance_m: float) -> CCType:
    """When in the motion a contact at time t is (TIME1 also when the pair, closing at
    ``speed`` metres per unit time, cannot get ``tolerance_m`` closer before the end)."""
    if t <= 0.0:
        return CCType.TIME0
    if t >= 1.0 or (speed > 0 and (1.0 - t) * speed <= tolerance_m):
        return CCType.TIME1
    return CCType.BETWEEN


def shape_index(world: CollisionWorld) -> dict:
    """Shape index of each (owner, shape id) of ``world`` (cached with the snapshot; do not write to it)."""
    return world.cached(("motion", "shape_index"), _build_shape_index, world)


def _build_shape_index(world: CollisionWorld) -> dict:
    return {(e.owner, e.shape_id): s for s, e in enumerate(world.shapes)}


def _near_pairs(sweep: Sweep, T_shape: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Pairs (indices into the sweep's pairs) that neither their bounding spheres nor their
    sphere covers (:func:`advancement.certainly_apart`) prove to be ``threshold`` (P,) apart
    at shape poses ``T_shape`` (S, 4, 4)."""
    world = sweep.world
    every = np.arange(len(sweep.pairs))
    centres = np.einsum("sij,sj->si", T_shape[:, :3, :3], sweep.centre_shape) + T_shape[:, :3, 3]
    lower = np.linalg.norm(centres[sweep.a] - centres[sweep.b], axis=1) - sweep.radius[sweep.a] - sweep.radius[sweep.b]
    near = every[lower < threshold]
    covers = sweep.covers
    return near[~mk.certainly_apart(near, sweep.a, sweep.b, np.ascontiguousarray(T_shape), threshold, covers.kind,
                                    covers.params, covers.cover_start, covers.cover_c, covers.cover_r,
                                    sweep.centre_shape, covers.reach, covers.container, covers.probe_start,
                                    covers.probes, world.obb_center, world.obb_axes, world.obb_half)]


def sweep_contacts(explainer: Explainer, sweep: Sweep, q: np.ndarray, contact_distance: float):
    """Explain's contacts (and verdict) at configuration ``q`` (A,) over the sweep's pairs: the
    same as :meth:`Explainer.explain` with the sweep's request, since every pair culled from the
    sweep is farther than its padding + tolerance + ``contact_distance`` all along the motion.

    Returns (contacts, valid): at most the request's budget of contacts, refusing pairs' first.
    """
    refusing, contacts = explainer.contacts_over(sweep.world, np.asarray(q, dtype=float)[None, :],
                                                 sweep.selection, contact_distance)
    return tuple(contacts[:explainer.budget(sweep.request.max_contacts)]), not refusing


def contacts_at(explainer: Explainer, sweep: Sweep, t: float, speed_at: dict):
    """Contacts of every pair touching at t (penetrating: explain's contacts), cc fields filled.

    Pairs within the request's ``contact_distance`` of touching are reported too; at most
    its ``max_contacts``. Exact distances are computed only for the pairs :func:`_near_pairs`
    keeps. ``speed_at``: the speed bound of pairs that first touch at t (for TIME1).

    Returns
    -------
    contacts : tuple of Contact, nearest first; q : (A,) the configuration at t;
    touching : list of the pairs (indices into the sweep's pairs) touching at t.
    """
    world, robot, request = sweep.world, sweep.robot, sweep.request
    q = sweep.configurations(np.array([t]))[0]
    T_link, T_shape = sweep.poses(np.array([t]))
    T_link0, _ = sweep.poses(np.array([0.0]))
    T_link1, _ = sweep.poses(np.array([1.0]))
    threshold = sweep.margins + sweep.tol + request.contact_distance
    near = _near_pairs(sweep, T_shape[0], threshold)
    by_shapes = None          # explain's contacts by shape pair, made when a pair penetrates
    build = ContactBuilder(world, T_link[0], T_shape[0])
    out: list[tuple[float, Contact]] = []
    touching: list[int] = []
    for p in near:
        a, b = int(sweep.a[p]), int(sweep.b[p])
        if hull_distance_lower_bound(world, T_shape[0], a, b) >= threshold[p]:
            continue            # the hulls alone hold the pair beyond the threshold
        res = pair_distance(world, T_shape[0], a, b)
        if res.distance_m >= threshold[p]:
            continue
        if res.distance_m < 0 and by_shapes is None:
            by_shapes = _explained_by_shapes(explainer, sweep, q)
        if res.distance_m < sweep.margins[p] + sweep.tol:
            touching.append(int(p))
        kind = cc_type(t, speed_at.get(int(p), 0.0), sweep.tol)
        found = by_shapes.get((a, b)) if res.distance_m < 0 else None
        if not found:
            found = [build.make(a, b, res.p0_world, res.normal_world, res.distance_m, None, None)]
        for c in found:
            out.append((c.distance, with_cc(c, sweep, a, b, t, kind, T_link0[0], T_link1[0])))
    out.sort(key=lambda item: item[0])
    contacts = [c for _, c in out]
    budget = explainer.budget(request.max_contacts)
    return tuple(contacts[:budget]), q, touching


def _explained_by_shapes(explainer: Explainer, sweep: Sweep, q: np.ndarray) -> dict[tuple[int, int], list[Contact]]:
    """Explain's contacts at ``q`` over the sweep's pairs, by (shape a, shape b) index pair."""
    explained, _ = sweep_contacts(explainer, sweep, q, 0.0)
    index = shape_index(sweep.world)
    by_shapes: dict[tuple[int, int], list[Contact]] = {}
    for c in explained:
        key = (index[(c.link_names[0], c.shape_ids[0])], index[(c.link_names[1], c.shape_ids[1])])
        by_shapes.setdefault(key, []).append(c)
    return by_shapes


# ----- one motion -------------------------------------------------------------------
def check_motion(explainer: Explainer, request: CheckRequest, joint_names, start, goal, *,
                 mode=MotionMode.CERTIFIED, max_step: float = 0.0,
                 tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M, meter: WorkMeter | None = None) -> MotionResult:
    """See :meth:`checker.CollisionChecker.check_motion` (never raises on bad input).

    ``meter``: the request's :class:`limits.WorkMeter` (limits and stop event; default: the
    default limits, no stop event).

    Raises
    ------
    RequestStopped
        When the meter's stop event is set while the check works.
    """
    resolver = explainer.resolver
    scene = resolver.scene
    names = scene.robot.active_joint_names
    meter = meter if meter is not None else WorkMeter()
    limits = meter.limits
    try:
        start = np.asarray(start, dtype=float).ravel()
        goal = np.asarray(goal, dtype=float).ravel()
        mode = motion_mode(mode, max_step)
        check_tolerance(tolerance_m)
        request.check_contact_distance()
        world, selection, q0, q1 = _prepare(resolver, request, joint_names, start, goal)
        check_joint_delta(world.robot, q0, q1, limits.max_joint_delta)
        if mode == MotionMode.DISCRETE:
            check_samples(sample_count(world.robot, q1 - q0, max_step) + 1, limits.max_motion_samples)
    except RequestStopped:
        raise
    except (CollisionPkgError, TypeError, ValueError) as exc:
        return MotionResult(False, Status.INVALID_REQUEST, str(exc), NO_CC_TIME, (), names,
                            scene.current_positions.copy())
    for q, what in ((q0, "start"), (q1, "goal")):
        message = limits_verdict(resolver, q, what)
        if message is not None:
            return MotionResult(False, Status.OUT_OF_BOUNDS, message, NO_CC_TIME, (), names, q.copy())
    meter.check_stop()
    try:
        if mode == MotionMode.CERTIFIED_BOOL:
            valid = motion_is_free(explainer, world, selection, request, q0, q1, tolerance_m, meter,
                                   max_step if max_step > 0 else SCREEN_STEP)
            return MotionResult(valid, Status.VALID if valid else Status.IN_COLLISION,
                                "valid" if valid else BOOL_IN_COLLISION, NO_CC_TIME, (), names, q0.copy())
        sweep = Sweep(world, selection, request, q0, q1, tolerance_m, meter=meter)
        if mode == MotionMode.DISCRETE:
            return discrete_motion(explainer, sweep, max_step)
        return _certified(explainer, sweep)
    except WorkLimitError as exc:
        return MotionResult(False, Status.INVALID_REQUEST, str(exc), NO_CC_TIME, (), names, q0.copy())


# The message of a motion the bool check refuses (it names no pair: CERTIFIED does).
BOOL_IN_COLLISION = "in collision (certified bool check: no contact details; mode CERTIFIED names them)"


def screen_order(n: int) -> np.ndarray:
    """Sample numbers 1 .. n (times k / n; the start is left to the certificate) in the order the
    screen checks them: coarse to fine (the halving's midpoints first, as MoveIt's and VAMP's
    checks order them), since a long invalid motion most often collides away from its ends."""
    order = _SCREEN_ORDERS.get(n)
    if order is None:
        out, intervals = [], [(0, n)]            # breadth first: each level halves every interval
        while intervals:
            deeper = []
            for lo, hi in intervals:
                if hi - lo > 1:
                    mid = (lo + hi) // 2
                    out.append(mid)
                    deeper += [(lo, mid), (mid, hi)]
            intervals = deeper
        order = _SCREEN_ORDERS[n] = np.array(out + [n], dtype=float)
    return order


_SCREEN_ORDERS: dict[int, np.ndarray] = {}


def _screen_orders(max_samples: int) -> np.ndarray:
    """(max_samples + 1, max_samples): row n's first n entries are :func:`screen_order` (n) (the
    table :func:`kernels.tubes.screen_samples` reads; made once per ``max_samples``)."""
    table = _SCREEN_TABLES.get(max_samples)
    if table is None:
        table = np.zeros((max_samples + 1, max(1, max_samples)))
        for n in range(1, max_samples + 1):
            table[n, :n] = screen_order(n)
        table.setflags(write=False)
        _SCREEN_TABLES[max_samples] = table
    return table


_SCREEN_TABLES: dict[int, np.ndarray] = {}


def motion_is_free(explainer: Explainer, world: CollisionWorld, selection, request: CheckRequest, q0: np.ndarray,
                   q1: np.ndarray, tolerance_m: float, meter: WorkMeter, screen_step: float,
                   plan: OneCallPlan | None = None) -> bool:
    """CERTIFIED's verdict on the motion q0 -> q1 (A,), endpoints within limits: the discrete screen
    (:func:`screen_order`, samples at most ``screen_step`` apart, at most ``SCREEN_MAX_SAMPLES``),
    then, when every sample is free, the certified search stopping at the first touch with no
    clearance kept (no contacts are made either way). ``plan``: ``sweep.one_call_plan(world,
    selection)`` when the caller keeps it (default: looked up).

    Raises
    ------
    WorkLimitError, RequestStopped
        As the certified search (the request's limits and stop event).
    """
    return _free_motion(explainer, world, selection, request, q0, q1, tolerance_m, meter, screen_step, False,
                        plan) is not None


def free_motion_clearance(explainer: Explainer, world: CollisionWorld, selection, request: CheckRequest,
                          q0: np.ndarray, q1: np.ndarray, tolerance_m: float, meter: WorkMeter,
                          screen_step: float, plan: OneCallPlan | None = None,
                          exact_clearance: bool = True) -> float | None:
    """:func:`motion_is_free`, with the certified clearance of a free motion: None when a
    configuration on the motion touches, else a lower bound of the smallest (signed distance -
    padding) over the motion and every pair of the request, metres (``Sweep.certified_clearance``;
    the search keeps its bounds for it, about a fifth more time per free motion). With
    ``exact_clearance`` False a free motion the search's first compiled call certified is
    answered with that call's clearance even where the Sweep would refine it with the narrow
    phase at t = 1 (``sweep.one_call_search``: a lower bound of that clearance; same verdict).

    Raises
    ------
    WorkLimitError, RequestStopped
        As :func:`motion_is_free`.
    """
    return _free_motion(explainer, world, selection, request, q0, q1, tolerance_m, meter, screen_step, True, plan,
                        exact_clearance)


def _free_motion(explainer: Explainer, world: CollisionWorld, selection, request: CheckRequest, q0: np.ndarray,
                 q1: np.ndarray, tolerance_m: float, meter: WorkMeter, screen_step: float,
                 clearance: bool, plan: OneCallPlan | None = None, exact_clearance: bool = True) -> float | None:
    """None when the motion touches; else its certified clearance (``clearance``) or inf."""
    mimic_matrix = world.robot.kinematics_arrays[0] if plan is None else plan.robot_pack[0]     # the same array
    n, q = screen_samples(q0, q1, mimic_matrix, screen_step, SCREEN_MIN_SAMPLES, SCREEN_MAX_SAMPLES,
                          _screen_orders(SCREEN_MAX_SAMPLES))
    if n > SCREEN_MIN_SAMPLES and explainer.any_collision(world, q, selection) >= 0:
        return None
    settled = one_call_search(world, selection, q0, q1, tolerance_m, meter, clearance, plan, exact_clearance)
    if settled is not None and not isinstance(settled, OneCallLeft):
        return settled               # free, settled by the search's first compiled call
    if SWEEP_SCREEN_FRACTION > 0.0:  # a finer screen before the Sweep (it touches no array a handover reads)
        _, q = screen_samples(q0, q1, mimic_matrix, screen_step * SWEEP_SCREEN_FRACTION, 0, SCREEN_MAX_SAMPLES,
                              _screen_orders(SCREEN_MAX_SAMPLES))
        if explainer.any_collision(world, q, selection) >= 0:
            return None
    sweep = Sweep(world, selection, request, q0, q1, tolerance_m, meter=meter)
    every = np.arange(len(sweep.pairs))
    sweep.first_touch(every, np.zeros(len(sweep.pairs)), stop_at_first=True, reuse_buffers=True,
                      track_clearance=clearance, handover=settled)   # from the first call's returns, when made
    if math.isfinite(sweep.earliest_touch):
        return None
    return sweep.certified_clearance(every)[0] if clearance else math.inf


def _certified(explainer: Explainer, sweep: Sweep) -> MotionResult:
    names = sweep.robot.active_joint_names
    every = np.arange(len(sweep.pairs))
    touch, speed = sweep.first_touch(every, np.zeros(len(every)), stop_at_first=True,
                                     track_clearance=TRACK_CLEARANCE)
    if not math.isfinite(sweep.earliest_touch):
        if not TRACK_CLEARANCE:
            return MotionResult(True, Status.VALID, "valid", NO_CC_TIME, (), names, sweep.q0.copy())
        clearance, t, p = sweep.certified_clearance(every)
        bodies = ()
        if p >= 0:
            a, b = sweep.full_selection.pairs[p]
            bodies = (sweep.world.shapes[a].owner, sweep.world.shapes[b].owner)
        return MotionResult(True, Status.VALID, "valid", NO_CC_TIME, (), names, sweep.q0.copy(),
                            min_clearance_m=clearance, min_clearance_time=t, min_clearance_bodies=bodies)
    t = float(touch.min())
    speed_at = {int(p): float(speed[p]) for p in np.flatnonzero(touch == t)}
    contacts, q, _ = contacts_at(explainer, sweep, t, speed_at)
    return MotionResult(False, Status.IN_COLLISION, motion_message(sweep, int(np.flatnonzero(touch == t)[0]), t,
                                                                   contacts), t, contacts, names, q)


def motion_message(sweep: Sweep, p: int, t: float, contacts) -> str:
    """The one-line message of a motion whose pair p (index into the sweep's pairs) first touches at t."""
    world = sweep.world
    a, b = sweep.a[p], sweep.b[p]
    kind = pair_kind(world, int(sweep.selection.index[p]))
    mine = [c for c in contacts if c.link_names == (world.shapes[a].owner, world.shapes[b].owner)]
    what = ""
    if mine:
        d = mine[0].distance
        what = f": penetration {-d * 1000:.3f} mm" if d < 0 else f": distance {d * 1000:.3f} mm"
    pairs = {c.link_names for c in contacts}
    more = f" (+{len(pairs) - 1} more touching body pair{'s' if len(pairs) > 2 else ''})" if len(pairs) > 1 else ""
    return (f"{kind} between '{world.shapes[a].owner}' and '{world.shapes[b].owner}' at t={t:.6f} "
            f"of the motion{what}{more}")


def sample_times(sweep: Sweep, max_step: float) -> np.ndarray:
    """Times (n + 1,) in [0, 1] of the fewest evenly spaced samples at most ``max_step`` apart in every joint."""
    return np.linspace(0.0, 1.0, sample_intervals(sweep, max_step) + 1)


def sample_intervals(sweep: Sweep, max_step: float) -> int:
    """n: the motion's discrete samples are at times k / n, k = 0 .. n (see :func:`sample_times`)."""
    largest = float(np.max(sweep.adq)) if len(sweep.adq) else 0.0
    return max(1, int(math.ceil(largest / max_step - 1e-12)))


def sample_chunks(n: int, chunk: int | None = None):
    """Times of samples 0 .. n of :func:`sample_times` (``np.linspace(0, 1, n + 1)``, the same
    values), ``chunk`` (default ``SAMPLE_CHUNK``) at a time: (first sample number, times) per chunk."""
    chunk = SAMPLE_CHUNK if chunk is None else chunk
    step = 1.0 / n
    for lo in range(0, n + 1, chunk):
        times = np.arange(lo, min(lo + chunk, n + 1), dtype=float) * step
        if lo + len(times) == n + 1:
            times[-1] = 1.0
        yield lo, times


def swept_shapes(sweep: Sweep) -> np.ndarray | None:
    """Sorted indices of the shapes of the sweep's pairs (those discrete samples pose), or None
    (every shape) when the sweep culled none of the request's pairs."""
    if sweep.selection is sweep.full_selection:
        return None
    return np.unique(sweep.pairs) if len(sweep.pairs) else np.zeros(0, dtype=np.int64)


def discrete_motion(explainer: Explainer, sweep: Sweep, max_step: float) -> MotionResult:
    """The motion checked at :func:`sample_times`, ``SAMPLE_CHUNK`` samples at a time, on the
    sweep's pairs (far world objects culled); the contacts are explain's at the first invalid sample."""
    names = sweep.robot.active_joint_names
    n = sample_intervals(sweep, max_step)
    shapes = swept_shapes(sweep)
    hit = None
    for lo, times in sample_chunks(n):
        q = sweep.configurations(times)
        first = explainer.first_collision(sweep.world, q, sweep.selection, shapes=shapes, stop=sweep.meter)
        hits = np.flatnonzero(first >= 0)
        if hits.size:
            hit = (lo + int(hits[0]), float(times[hits[0]]), q[hits[0]].copy(), int(first[hits[0]]))
            break
    if hit is None:
        return MotionResult(True, Status.VALID, f"valid at all {n + 1} samples", NO_CC_TIME, (), names,
                            sweep.q0.copy())
    k, t, q_k, p = hit
    kind = CCType.TIME0 if k == 0 else (CCType.TIME1 if k == n else CCType.BETWEEN)
    explained, _ = sweep_contacts(explainer, sweep, q_k, sweep.request.contact_distance)
    T_link0, _ = sweep.poses(np.array([0.0]))
    T_link1, _ = sweep.poses(np.array([1.0]))
    index = shape_index(sweep.world)
    contacts = tuple(with_cc(c, sweep, index[(c.link_names[0], c.shape_ids[0])],
                             index[(c.link_names[1], c.shape_ids[1])], t, kind, T_link0[0], T_link1[0])
                     for c in explained)
    world = sweep.world
    a, b = sweep.a[p], sweep.b[p]
    message = (f"{pair_kind(world, int(sweep.selection.index[p]))} between '{world.shapes[a].owner}' and "
               f"'{world.shapes[b].owner}' at t={t:.6f} of the motion (sample {k} of {n + 1})")
    return MotionResult(False, Status.IN_COLLISION, message, t, contacts, names, q_k)
