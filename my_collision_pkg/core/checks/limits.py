"""Bounded work per request: the limits a check refuses beyond, and the meter that enforces them.

:class:`WorkLimits` holds the bounds (one frozen value; a checker's ``limits`` may be
replaced at run time and applies from the next request). A request beyond a bound is
refused before (or, for the certified search, while) it works, with
``Status.INVALID_REQUEST`` and a one-line message naming the bound's field, the value
asked, the limit and how to split the request (:class:`errors.WorkLimitError` inside
the core).

:class:`WorkMeter` is one request's account: the certified steps spent so far against
``max_certified_steps``, and the checker's ``stop_event`` (any object with
``is_set()``), looked at between chunks of work so that a stopped request raises
:class:`errors.RequestStopped` within a fraction of a second.

The defaults were chosen by measurement on the Panda (example-robot-data with the
default world, 2 cores; the figures are in each field's note): each bound is far above
what ordinary requests use and keeps a request within a few seconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from my_collision_pkg.core.errors import RequestStopped, WorkLimitError

# Steps (see WorkLimits.max_certified_steps) one compiled advancement call may spend before
# it returns to Python, where the stop event and the request's step budget are looked at:
# about 20 ms of work.
ADVANCE_CALL_STEPS = 10_000
# What one narrow-phase distance (coal, through Python) counts for against
# max_certified_steps: measured 30 us against 2.2 us per bound evaluation on the Panda
# (200 random motions with the default world), rounded up.
NARROW_CALL_STEPS = 15
# What one exact distance of a trajectory's interval search (:meth:`sweep.Sweep.exact`: the
# poses, then the distance with the solid-body test) counts for: measured about 240 us on the
# Panda's meshes in contact, about 100 bound evaluations.
EXACT_CALL_STEPS = 100
# The robot size (links + movable joints) at which one bound evaluation counts as one
# step: the Panda's 13 + 9. A bound evaluation costs forward kinematics down to the pair's
# links and a lever per joint above them; measured 2.2 us on the Panda and 137 us on a
# 300-link chain (601), which STEP_SIZE_EXPONENT fits: (601 / 22) ** 1.25 = 63.
STEP_ROBOT_SIZE = 22
STEP_SIZE_EXPONENT = 1.25


def step_weight(n_links: int, n_movable: int) -> float:
    """Steps one compiled bound evaluation counts for on a robot of this size (>= 1)."""
    return max(1.0, ((n_links + n_movable) / STEP_ROBOT_SIZE) ** STEP_SIZE_EXPONENT)


@dataclass(frozen=True)
class WorkLimits:
    """The most work one request may ask for; beyond each bound it is refused by name.

    Attributes
    ----------
    max_motion_samples : int
        Discrete samples (configurations) of one discrete ``check_motion``, and in total
        over the segments of one discrete ``check_trajectory``, counted before any work.
        Samples are posed and checked 4096 at a time at most, so memory does not grow with
        it; time does: about 6 us per sample on the Panda with the default world (2 cores),
        so the default, 200 000, takes about 1-2 s. A MoveIt-like 0.01 rad step over the
        Panda's longest range (5.9 rad) needs 591 samples, a 1e-4 rad step 59 001.
    max_trajectory_waypoints : int
        Waypoints of one ``check_trajectory``, counted before they are read. Measured: 0.7-
        0.9 ms per certified segment on the Panda (ordinary trajectories of 10 to 1000
        waypoints), so the default, 10 000, answers in about 8 s; planners' trajectories
        have tens to hundreds.
    max_joint_delta : float
        Largest ``|goal - start|`` of one active joint in one motion (one trajectory
        segment): radians for revolute and continuous joints, metres for prismatic ones,
        checked before any work. The default, 4 pi (two full turns), passes every motion
        of a revolute joint within a range of up to 2 pi and two turns of a continuous one;
        1e20 rad is refused at once, by joint name.
    max_certified_steps : int
        The certified search's work per request, summed over a trajectory's segments: each
        compiled bound evaluation counts :func:`step_weight` steps (1 on a robot the Panda's
        size, more on larger ones, so that a step costs about the same time, 2.2 us), each
        narrow-phase distance ``NARROW_CALL_STEPS``, each exact distance of a trajectory's
        interval search ``EXACT_CALL_STEPS``. Measured on the Panda with the default world:
        300 random motions p50 about 1 000 steps, p99 about 8 000; a valid 1000-waypoint
        trajectory about 70 per segment; a trajectory swinging through the post in every
        segment with ``stop_at_first_contact`` off about 57 000 per segment (its intervals'
        exits and deepest points). The default, 2 000 000, is spent in about 4-5 s on 2
        cores, so a pathological motion or a 300-link chain (refused before any work: its
        44 551 pairs alone need more) never runs for minutes.
    max_clearance_rows : int
        Rows of one clearance answer (``CollisionChecker.clearance``, ``~/compute_clearance``):
        an answer with more is refused, naming the bound and suggesting
        ``max_rows_per_configuration``, a smaller influence distance or fewer configurations.
        Rows, not configurations, size the answer: the Panda with the default world has about
        1.5 rows per random configuration at 0.05 m influence and 42 at 0.5 m. Measured per
        row over DDS: 242 bytes, and about 17 us to fill the response, 13 us to serialize it
        and 33 us to read it back in a Python client (machine loaded). The default, 100 000
        (2 400 configurations at 0.5 m, 24 MB), answers in a few seconds.
    max_octomap_cells : int
        Occupancy-map cells one request may check as boxes (explain, clearance, motions and
        trajectories replace the octree by the cells near the robot, or near its swept
        volume; :mod:`octomap_cells`): a request whose region holds more is refused, naming
        the bound. About 10 us of set-up a cell; the default, 20 000 (a 2.8 m^2 wall at
        2 cm), is set up in about 0.2 s.
    """
    max_motion_samples: int = 200_000
    max_trajectory_waypoints: int = 10_000
    max_joint_delta: float = 4.0 * math.pi
    max_certified_steps: int = 2_000_000
    max_clearance_rows: int = 100_000
    max_octomap_cells: int = 20_000

    def __post_init__(self) -> None:
        for name in ("max_motion_samples", "max_trajectory_waypoints", "max_certified_steps", "max_clearance_rows",
                     "max_octomap_cells"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"WorkLimits.{name} must be an integer >= 1, got {value!r}")
        if not (isinstance(self.max_joint_delta, (int, float)) and math.isfinite(self.max_joint_delta)
                and self.max_joint_delta > 0):
            raise ValueError(f"WorkLimits.max_joint_delta must be finite and > 0, got {self.max_joint_delta!r}")


class WorkMeter:
    """One request's work against its :class:`WorkLimits`, and the checker's stop event.

    Parameters
    ----------
    limits : WorkLimits
    stop_event : object with ``is_set()`` or None
    """
    __slots__ = ("limits", "stop_event", "steps")

    def __init__(self, limits: WorkLimits | None = None, stop_event=None) -> None:
        self.limits = limits if limits is not None else WorkLimits()
        self.stop_event = stop_event
        self.steps = 0

    def check_stop(self) -> None:
        """Raises :class:`RequestStopped` when the stop event is set."""
        event = self.stop_event
        if event is not None and event.is_set():
            raise RequestStopped()

    def call_budget(self, weight: float = 1.0) -> int:
        """Bound evaluations the next compiled advancement call may make, each counting ``weight``
        steps (0: the request's steps are spent)."""
        left = min(ADVANCE_CALL_STEPS, self.limits.max_certified_steps - self.steps)
        return 0 if left <= 0 else max(1, int(left / weight))

    def spend(self, steps: int) -> None:
        self.steps += int(steps)

    @property
    def spent(self) -> bool:
        return self.steps >= self.limits.max_certified_steps

    def refuse_pairs(self, n_pairs: int, weight: float, what: str = "the motion") -> WorkLimitError:
        """The refusal, before any work, of a certified search over ``n_pairs`` shape pairs whose
        first bound evaluations alone (``weight`` steps each) exceed the steps left."""
        limit = self.limits.max_certified_steps
        need = math.ceil(n_pairs * weight)
        return WorkLimitError("max_certified_steps",
                              f"certified search of {what} checks {n_pairs:,} shape pairs, which need at least "
                              f"{need:,} steps, more than max_certified_steps = {limit:,}"
                              + (f" ({self.steps:,} already spent)" if self.steps else "")
                              + ": check fewer pairs (a group, the allowed collision matrix), split the request "
                              "or raise max_certified_steps")

    def refuse_steps(self, progress: float, what: str = "the motion") -> WorkLimitError:
        """The refusal of a certified search that spent its steps having certified ``progress``
        (a fraction in [0, 1]) of ``what``."""
        limit = self.limits.max_certified_steps
        done = max(float(progress), 0.0)
        if done > 0.0:
            estimate = self.steps / done
            parts = max(2, math.ceil(estimate / limit))
            split = f"split {what} into about {parts:,} parts" if parts < 10_000 else "split it into much shorter parts"
        else:
            split = f"split {what} into much shorter parts"
        return WorkLimitError("max_certified_steps",
                              f"certified search of {what} needs more than max_certified_steps = {limit:,} steps "
                              f"({self.steps:,} spent, {done:.3g} of it certified): {split}, check fewer pairs "
                              f"(a group, the allowed collision matrix) or raise max_certified_steps")


def joint_delta_error(names, delta, limit: float, what: str = "the motion") -> WorkLimitError:
    """The refusal of a motion whose joint ``names[k]`` moves ``delta[k]`` beyond ``limit``."""
    k = int(max(range(len(delta)), key=lambda i: abs(delta[i])))
    asked = abs(float(delta[k]))
    parts = math.ceil(asked / limit) if math.isfinite(asked) and asked / limit < 1e6 else None
    split = f"split {what} into {parts:,} parts" if parts is not None else f"split {what} into shorter parts"
    return WorkLimitError("max_joint_delta",
                          f"joint '{names[k]}' moves {asked:.6g} in {what}, more than max_joint_delta = {limit:g} "
                          f"(rad or m): {split} or raise max_joint_delta")


def samples_error(asked: float, limit: int, what: str = "the motion") -> WorkLimitError:
    """The refusal of a discrete check that needs ``asked`` samples (may be inf) beyond ``limit``."""
    if math.isfinite(asked) and asked < 1e15:
        asked_text = f"{int(math.ceil(asked)):,}"
        parts = math.ceil(asked / limit)
        split = f"split {what} into {parts:,} parts, " if parts < 10_000 else ""
    else:
        asked_text, split = "more than 1e15", ""
    return WorkLimitError("max_motion_samples",
                          f"discrete check of {what} needs {asked_text} samples, more than max_motion_samples = "
                          f"{limit:,}: {split}use a larger max_step or raise max_motion_samples")
