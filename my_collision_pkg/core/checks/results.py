"""What a check reports: contacts, verdicts and explanations (plain data).

Conventions (those of hpp-fcl's ``Contact`` and Tesseract's ``ContactResult``):
body 0 and body 1 are ordered (for environment contacts: the robot body, then
the world object); ``normal`` is a unit vector from body 0 to body 1;
``nearest_points[0]`` lies on body 0 and ``nearest_points[1]`` on body 1, with
``nearest_points[1] - nearest_points[0] == distance * normal``; ``distance`` is
signed, negative when the bodies penetrate, and then
``penetration_depth == -distance``. Everything is in metres, in the planning
frame unless the name says ``local`` (the body's own frame: link frame for a
link, object frame for an object).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class ContactType(enum.IntEnum):
    SELF = 0
    ENVIRONMENT = 1


class BodyType(enum.IntEnum):
    ROBOT_LINK = 0
    WORLD_OBJECT = 1
    ROBOT_ATTACHED = 2


class Status(enum.IntEnum):
    """Outcome of a check (same values as the services' status constants)."""
    VALID = 0
    IN_COLLISION = 1
    OUT_OF_BOUNDS = 2
    INVALID_REQUEST = 3


class CCType(enum.IntEnum):
    """When along a motion a body is in contact (Tesseract's ``ContinuousCollisionType``).

    NONE: the body does not move in the motion (or no motion was checked); TIME0: in
    contact at the motion's start; TIME1: only at its end; BETWEEN: first in contact
    strictly inside the motion.
    """
    NONE = 0
    TIME0 = 1
    TIME1 = 2
    BETWEEN = 3


NO_SUBSHAPE = -1
NO_CC_TIME = -1.0


@dataclass(frozen=True)
class Contact:
    """One contact (or near miss) between two bodies."""
    type: ContactType
    link_names: tuple[str, str]
    body_types: tuple[BodyType, BodyType]
    shape_ids: tuple[int, int]
    subshape_ids: tuple[int, int]
    position: np.ndarray = field(repr=False)
    nearest_points: tuple[np.ndarray, np.ndarray] = field(repr=False)
    nearest_points_local: tuple[np.ndarray, np.ndarray] = field(repr=False)
    normal: np.ndarray = field(repr=False)
    distance: float
    penetration_depth: float
    single_contact_point: bool = False
    # the depth is not the deepest point's (no surface point of either body lies inside the
    # other, e.g. an edge through an edge): fcl's or coal's contact against one triangle
    depth_is_fallback: bool = False
    # World pose (4, 4) of each body's frame (link frame; object frame) at the checked
    # configuration, or at the motion's start for a motion check.
    transforms: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    # Motion checks only: per body, the time in [0, 1] of the first contact along the
    # motion (-1 for a body the motion does not move), its kind, and the body's frame
    # pose at the motion's end (interpolate with ``transforms`` to get the contact pose).
    cc_time: tuple[float, float] = (NO_CC_TIME, NO_CC_TIME)
    cc_type: tuple[CCType, CCType] = (CCType.NONE, CCType.NONE)
    cc_transforms: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    # Which rule gave a penetrating contact's numbers: "mtd" (convex solids, and meshes convex
    # within penetration.CONVEX_VOLUME_TOLERANCE: distance is minus the minimum translation
    # distance, the normal its direction; separated contacts carry their plain distance and
    # "mtd") or "deepest_point" (non-convex meshes: the deepest surface point of the overlap).
    depth_rule: str = "mtd"

    @property
    def in_penetration(self) -> bool:
        return self.distance < 0.0


@dataclass(frozen=True)
class Verdict:
    """Answer of the validity predicate."""
    valid: bool
    status: Status
    message: str


@dataclass(frozen=True)
class BatchCollisions:
    """Answer of :meth:`checker.CollisionChecker.first_collisions`: the batch predicate with its reasons.

    ``valid`` (N,) is ``check_batch``'s array; ``status`` (N,) int8 holds a :class:`Status`
    value per configuration (VALID, IN_COLLISION or OUT_OF_BOUNDS); ``pair_names`` (N, 2)
    the owners (link or object names) of the first colliding shape pair, body 0 then body 1
    (None where there is none), and ``pair_shape_ids`` (N, 2) their shape ids within the
    owner (-1 where there is none). No rows when ``summary`` is INVALID_REQUEST.
    """
    summary: Verdict
    valid: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)
    status: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8), repr=False)
    pair_names: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=object), repr=False)
    pair_shape_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64), repr=False)


@dataclass(frozen=True)
class Explanation:
    """Answer of :meth:`CollisionChecker.explain`.

    ``valid`` equals the predicate's verdict on the same request. ``contacts``
    lists self-contacts before environment contacts; near misses (positive
    distance, reported when ``contact_distance > 0``) come after the contacts
    that refused the configuration. ``positions`` is the full configuration
    checked (every active joint, in the robot's order ``joint_names``).
    """
    valid: bool
    status: Status
    message: str
    colliding_links: tuple[str, ...] = ()
    contacts: tuple[Contact, ...] = ()
    joint_names: tuple[str, ...] = ()
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    contact_budget_spent: bool = False


class MotionMode(enum.IntEnum):
    """How a motion is checked (same values as the services' constants)."""
    CERTIFIED = 0
    DISCRETE = 1
    # CERTIFIED's verdict alone, for planners (no contacts, no cc_time, no clearance): a
    # discrete screen first, the certificate only for motions the screen passes
    CERTIFIED_BOOL = 2


DEFAULT_TOUCH_TOLERANCE_M = 1e-4   # pairs closer than this (plus padding) touch, in motion checks


@dataclass(frozen=True)
class MotionResult:
    """Answer of :meth:`CollisionChecker.check_motion`.

    ``cc_time`` in [0, 1] is the first contact along the motion (-1 when none);
    ``contacts`` are every pair touching there (within the tolerance, or
    ``contact_distance``) with the ``cc_*`` fields filled; ``positions`` is the full
    configuration (every active joint, order ``joint_names``) at ``cc_time``, or at the
    start when the motion is valid.

    A valid certified motion also carries the smallest clearance the check certified:
    ``min_clearance_m`` is a lower bound, over every time of the motion and every pair the
    request checks, of the pair's signed distance minus its padding (metres; inf when the
    request checks no pair); ``min_clearance_time`` in [0, 1] is where that bound is reached
    (NaN when it holds over the whole motion: a pair dropped before the search by its
    swept bound), ``min_clearance_bodies`` the pair's two bodies (links, world objects or
    attached objects). NaN and () otherwise: discrete mode, an invalid motion or a refused
    request. See docs/checks.md for how tight it is.
    """
    valid: bool
    status: Status
    message: str
    cc_time: float = NO_CC_TIME
    contacts: tuple[Contact, ...] = ()
    joint_names: tuple[str, ...] = ()
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    min_clearance_m: float = float("nan")
    min_clearance_time: float = float("nan")
    min_clearance_bodies: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrajectoryResult:
    """Answer of :meth:`CollisionChecker.check_trajectory`.

    ``contact_lists`` holds one :class:`ContactList` per body pair that touches (times in
    integer nanoseconds from the trajectory's start); ``first_contact`` is the first
    contact state as a :class:`MotionResult` of its segment (``cc_time`` relative to it).
    """
    valid: bool
    status: Status
    message: str
    first_invalid_time_s: float = -1.0
    first_invalid_segment: int = -1
    contact_lists: tuple = ()
    first_contact: MotionResult | None = None


@dataclass(frozen=True)
class Clearance:
    """Answer of :meth:`checker.CollisionChecker.clearance`: R rows, flat arrays (computed in ``clearance.py``).

    Attributes
    ----------
    configuration_index : (R,) int64, the row's configuration (0 for a single one).
    body_names : (R, 2) object (str), body 0 and body 1 (link or object ids).
    body_types : (R, 2) uint8, :class:`results.BodyType` values.
    shape_ids, subshape_ids : (R, 2) int32 (subshape -1 where none).
    distance : (R,) float, signed distance minus the pair's padding, metres.
    points : (R, 2, 3) witness points in the planning frame.
    points_local : (R, 2, 3) each witness point in its body's frame.
    normals : (R, 3) unit, body 0 -> body 1.
    jacobian : (R, J) d distance / d q over ``jacobian_joint_names`` (zeros (R, 0) without Jacobians).
    smooth : (R,) bool.
    jacobian_joint_names : tuple of J names.
    status, message : :class:`results.Status` and a one-line message.
    """
    status: Status
    message: str
    jacobian_joint_names: tuple[str, ...] = ()
    configuration_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    body_names: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=object), repr=False)
    body_types: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.uint8), repr=False)
    shape_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int32), repr=False)
    subshape_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int32), repr=False)
    distance: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)), repr=False)
    points_local: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)), repr=False)
    normals: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)), repr=False)
    jacobian: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    smooth: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)
    shape_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64), repr=False)

    def __len__(self) -> int:
        return int(self.distance.shape[0])

    @property
    def ok(self) -> bool:
        return self.status == Status.VALID
