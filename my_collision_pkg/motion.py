"""Motions and trajectories: is the joint-space straight line between two configurations free?

A motion is ``q(t) = q0 + t (q1 - q0)`` for ``t`` in [0, 1]; a trajectory is a chain of
such segments between waypoints, timed in seconds.

Certified mode (conservative advancement; LaValle, *Planning Algorithms* 5.3.4;
Schwarzer, Saha and Latombe 2002). For each shape pair the request checks, at a time
``t`` we know a lower bound ``d`` of the pair's signed distance and bounds ``V0``, ``V1``
such that over ``[t, t + h]`` the distance changes at most at the rate ``V0 + h V1``
(metres per unit of ``t``). The distance then drops by at most ``h V0 + h^2 V1`` over
``h``, so the pair stays farther apart than its padding ``m`` plus ``tolerance_m / 2``
for the ``h`` that solves ``h V0 + h^2 V1 = d - m - tolerance_m / 2``: the pair's next
evaluation time (each pair keeps its own clock, so far pairs are skipped for long). A
pair evaluated at ``d < m + tolerance_m`` counts as touching, so each step is at least
the time to close ``tolerance_m / 2`` and the search ends. The first touching time
over all pairs is ``cc_time``. Guarantee: no time at which a pair is closer than
``m + tolerance_m / 2`` (so no collision, however thin the obstacle or fast the
motion) lies before ``cc_time``; the price is that a pair passing within
``tolerance_m`` of its padding may be reported as a contact. Coal computes distances
to ``min(1e-6 m, tolerance_m / 10)``, inside that reserve.

Distance lower bounds, cheapest first: bounding spheres (compiled, every pair every
step); coal's exact distance for primitive and convex pairs; for meshes the distance of
their convex hulls (a hull contains its mesh), then the exact mesh distance when the
hulls come within ``HULL_ACCEPT_M``, and :func:`narrowphase.pair_distance` (with the
solid-body test) when they overlap. Spheres farther than ``SPHERE_ACCEPT_M`` are used
as they are.

The speed bound. A point ``p`` of a shape on link ``L`` moves with velocity
``sum_j dq_j * (a_j x (p - o_j))`` over revolute joints ``j`` above ``L`` (axis
``a_j`` through ``o_j``, the joint's child frame origin) plus ``sum_j dq_j a_j`` over
prismatic ones, with ``dq`` the joint deltas of the motion (mimic joints: multiplier
times their leader's delta). So ``|dp/dt| <= sum_rev |dq_j| r_j + sum_prism |dq_j|``
where ``r_j`` bounds the distance of any point of the shape from axis ``j`` over the
step. We take ``r_j = dist(c, axis_j at t) + rho + h D_j`` with ``c`` and ``rho`` the
centre and radius of the shape's bounding sphere at ``t`` and ``D_j`` a bound of how
fast the shape moves *relative to joint j's frame* (only the joints below ``j`` move
it there; rotation about, or sliding along, axis ``j`` keeps the distance to the
axis): ``D_j = sum_{k below j} |dq_k| R_k`` (+ ``|dq_k|`` for prismatic ``k``) with the
configuration-independent lever ``R_k`` = the summed lengths of the fixed joint
offsets from joint ``k`` down to ``L`` + the largest prismatic travel on that chain
during the motion + the distance of the sphere centre from ``L``'s frame + ``rho``.
Hence ``V0 = sum_rev |dq_j| (dist(c, axis_j) + rho) + sum_prism |dq_j|`` and
``V1 = sum_rev |dq_j| D_j``. Attached objects ride their link; world objects do not
move. For a pair of robot bodies the joints above both bodies move them rigidly
together and cannot change their distance, so they are left out. The pair's bounds are
the sums of its two bodies' bounds.

Discrete mode samples the motion with at most ``max_step`` (rad or m) between samples
in every joint (mimic joints included) and checks the samples with the batch
predicate, as MoveIt does: a thin obstacle can be jumped over. No tolerance applies.

Trajectories: per body pair, the intervals ``[activation, deactivation)`` during which
the pair touches, in integer nanoseconds from the trajectory's start. Entries are
certified as above; exits are found by marching (a touching pair keeps touching while
its distance cannot have risen past ``m + tolerance_m``) and bisection to
``EXIT_TIME_TOLERANCE`` of the segment; a gap shorter than the marching step may be
merged into one interval. Shape pairs of one body pair, and intervals that meet at a
waypoint, are merged. An interval still open at the trajectory's end is closed one
nanosecond after it (the last instant is in contact). Each interval carries its
deepest contact (the march's samples refined by a golden-section search), whose cc
fields describe its own segment. With ``stop_at_first_contact`` the scan ends with the
segment of the first contact, keeping only the pairs touching at that first time.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import weakref
from dataclasses import dataclass, field

import coal
import numpy as np
from numba import njit

from .contacts import CCType, Contact, NO_CC_TIME, Status
from .errors import CollisionPkgError, RequestError
from .kernels import PRISMATIC, forward_kinematics

from .narrowphase import pair_distance


class MotionMode(enum.IntEnum):
    """How a motion is checked (same values as the services' constants)."""
    CERTIFIED = 0
    DISCRETE = 1


DEFAULT_TOUCH_TOLERANCE_M = 1e-4
EXIT_TIME_TOLERANCE = 1e-4        # exit times of trajectory intervals, fraction of the segment
DEEPEST_SEARCH_STEPS = 20         # golden-section steps refining an interval's deepest contact
_NEVER = math.inf
# A convex-hull distance at least this far beyond the padding is used as the step's bound
# as it is; closer hulls get the exact (mesh) distance, which gives longer steps.
HULL_ACCEPT_M = 0.005
GJK_TOLERANCE_M = 1e-6
TAIL_PAIRS = 4                    # this few pairs left: each advances alone, in scalar steps
# Bounding spheres this far beyond the padding give the step as they are (no narrow phase):
# far pairs then take a few more, much cheaper, steps.
SPHERE_ACCEPT_M = 0.05


@dataclass(frozen=True)
class MotionResult:
    """Answer of :meth:`CollisionChecker.check_motion`.

    ``cc_time`` in [0, 1] is the first contact along the motion (-1 when none);
    ``contacts`` are every pair touching there (within the tolerance, or
    ``contact_distance``) with the ``cc_*`` fields filled; ``positions`` is the full
    configuration (every active joint, order ``joint_names``) at ``cc_time``, or at the
    start when the motion is valid.
    """
    valid: bool
    status: Status
    message: str
    cc_time: float = NO_CC_TIME
    contacts: tuple[Contact, ...] = ()
    joint_names: tuple[str, ...] = ()
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)


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


@njit(cache=True)
def _pair_speeds(T_link, T_shape, a, b, W_a, W_b, child_link, axis, prismatic, centre_shape, radius, adq,
                 D_below, V0, V1):
    """Fill V0, V1 (K,): for pair k, sum over the joints that change its distance (W) of
    |dq_j| * (distance of the shape's bounding sphere from axis j + its radius) (V0) and
    |dq_j| * D_below[s, j] (V1); prismatic joints add |dq_j| to V0 alone. Each body's sum
    bounds its speed; the two together bound how fast the distance between them changes."""
    n_pairs = a.shape[0]
    n_joints = adq.shape[0]
    for k in range(n_pairs):
        v0 = 0.0
        v1 = 0.0
        for side in range(2):
            s = a[k] if side == 0 else b[k]
            T = T_shape[k, s]
            cx = T[0, 0] * centre_shape[s, 0] + T[0, 1] * centre_shape[s, 1] + T[0, 2] * centre_shape[s, 2] + T[0, 3]
            cy = T[1, 0] * centre_shape[s, 0] + T[1, 1] * centre_shape[s, 1] + T[1, 2] * centre_shape[s, 2] + T[1, 3]
            cz = T[2, 0] * centre_shape[s, 0] + T[2, 1] * centre_shape[s, 1] + T[2, 2] * centre_shape[s, 2] + T[2, 3]
            for j in range(n_joints):
                w = W_a[k, j] if side == 0 else W_b[k, j]
                if w == 0.0 or adq[j] == 0.0:
                    continue
                if prismatic[j]:
                    v0 += adq[j]
                    continue
                J = T_link[k, child_link[j]]
                ax = J[0, 0] * axis[j, 0] + J[0, 1] * axis[j, 1] + J[0, 2] * axis[j, 2]
                ay = J[1, 0] * axis[j, 0] + J[1, 1] * axis[j, 1] + J[1, 2] * axis[j, 2]
                az = J[2, 0] * axis[j, 0] + J[2, 1] * axis[j, 1] + J[2, 2] * axis[j, 2]
                rx, ry, rz = cx - J[0, 3], cy - J[1, 3], cz - J[2, 3]
                along = rx * ax + ry * ay + rz * az
                off = rx * rx + ry * ry + rz * rz - along * along
                dist_axis = np.sqrt(off) if off > 0.0 else 0.0
                v0 += adq[j] * (dist_axis + radius[s])
                v1 += adq[j] * D_below[s, j]
        V0[k] = v0
        V1[k] = v1


@njit(cache=True)
def _shape_pose(T_link, shape_link, T_frame_shape, s, out):
    """out (4, 4) = pose of shape s given the link poses of one configuration."""
    k = shape_link[s]
    for r in range(4):
        for c in range(4):
            if k < 0:
                out[r, c] = T_frame_shape[s, r, c]
            else:
                acc = 0.0
                for u in range(4):
                    acc += T_link[k, r, u] * T_frame_shape[s, u, c]
                out[r, c] = acc


@njit(cache=True)
def _evaluate(q0, dq, t, p, pair_a, pair_b, W_a_all, W_b_all, fk_mimic, fk_offset, fk_kind, fk_axis, fk_parent, fk_origin, fk_joint,
              shape_link, T_frame_shape, child_link, axis, prismatic, centre_shape, radius, obb_axes, obb_half,
              adq, D_below, T_link, T_shape, R_a, t_a, R_b, t_b, sphere, V0, V1):
    """One step for K pairs at their own times t (K,): link poses, the two shapes' poses
    (full into T_shape (K, 2, 4, 4), rotation and translation split into R_*, t_*), the
    bounding-sphere distance and the speed bounds V0, V1. A shape's lever about a joint is
    the smaller of (sphere centre's distance from the axis + radius) and the largest
    distance of its oriented bounding box's corners from the axis (the distance from a
    line is convex, so a box's farthest point from it is a corner)."""
    n = t.shape[0]
    corners = np.empty((8, 3))
    a = np.empty(n, dtype=np.int64)
    b = np.empty(n, dtype=np.int64)
    for k in range(n):
        a[k] = pair_a[p[k]]
        b[k] = pair_b[p[k]]
    positions = np.empty((n, q0.shape[0]))
    for k in range(n):
        for i in range(q0.shape[0]):
            positions[k, i] = q0[i] + t[k] * dq[i]
    forward_kinematics(positions, fk_mimic, fk_offset, fk_kind, fk_axis, fk_parent, fk_origin, fk_joint, T_link)
    for k in range(n):
        _shape_pose(T_link[k], shape_link, T_frame_shape, a[k], T_shape[k, 0])
        _shape_pose(T_link[k], shape_link, T_frame_shape, b[k], T_shape[k, 1])
        for r in range(3):
            t_a[k, r] = T_shape[k, 0, r, 3]
            t_b[k, r] = T_shape[k, 1, r, 3]
            for c in range(3):
                R_a[k, r, c] = T_shape[k, 0, r, c]
                R_b[k, r, c] = T_shape[k, 1, r, c]
        gap = 0.0
        for r in range(3):
            ca = t_a[k, r]
            cb = t_b[k, r]
            for c in range(3):
                ca += R_a[k, r, c] * centre_shape[a[k], c]
                cb += R_b[k, r, c] * centre_shape[b[k], c]
            gap += (ca - cb) * (ca - cb)
        sphere[k] = np.sqrt(gap) - radius[a[k]] - radius[b[k]]
    for k in range(n):
        v0 = 0.0
        v1 = 0.0
        for side in range(2):
            s = a[k] if side == 0 else b[k]
            T = T_shape[k, side]
            cx = T[0, 0] * centre_shape[s, 0] + T[0, 1] * centre_shape[s, 1] + T[0, 2] * centre_shape[s, 2] + T[0, 3]
            cy = T[1, 0] * centre_shape[s, 0] + T[1, 1] * centre_shape[s, 1] + T[1, 2] * centre_shape[s, 2] + T[1, 3]
            cz = T[2, 0] * centre_shape[s, 0] + T[2, 1] * centre_shape[s, 1] + T[2, 2] * centre_shape[s, 2] + T[2, 3]
            for corner in range(8):
                for r in range(3):
                    local = centre_shape[s, r]
                    for e in range(3):
                        sign = 1.0 if (corner >> e) & 1 else -1.0
                        local += obb_axes[s, r, e] * sign * obb_half[s, e]
                    corners[corner, r] = local
            for corner in range(8):
                x = T[0, 0] * corners[corner, 0] + T[0, 1] * corners[corner, 1] + T[0, 2] * corners[corner, 2] + T[0, 3]
                y = T[1, 0] * corners[corner, 0] + T[1, 1] * corners[corner, 1] + T[1, 2] * corners[corner, 2] + T[1, 3]
                z = T[2, 0] * corners[corner, 0] + T[2, 1] * corners[corner, 1] + T[2, 2] * corners[corner, 2] + T[2, 3]
                corners[corner, 0], corners[corner, 1], corners[corner, 2] = x, y, z
            for j in range(adq.shape[0]):
                w = W_a_all[p[k], j] if side == 0 else W_b_all[p[k], j]
                if w == 0.0 or adq[j] == 0.0:
                    continue
                if prismatic[j]:
                    v0 += adq[j]
                    continue
                J = T_link[k, child_link[j]]
                ax = J[0, 0] * axis[j, 0] + J[0, 1] * axis[j, 1] + J[0, 2] * axis[j, 2]
                ay = J[1, 0] * axis[j, 0] + J[1, 1] * axis[j, 1] + J[1, 2] * axis[j, 2]
                az = J[2, 0] * axis[j, 0] + J[2, 1] * axis[j, 1] + J[2, 2] * axis[j, 2]
                rx, ry, rz = cx - J[0, 3], cy - J[1, 3], cz - J[2, 3]
                along = rx * ax + ry * ay + rz * az
                off = rx * rx + ry * ry + rz * rz - along * along
                lever = (np.sqrt(off) if off > 0.0 else 0.0) + radius[s]
                box = 0.0
                for corner in range(8):
                    rx, ry, rz = corners[corner, 0] - J[0, 3], corners[corner, 1] - J[1, 3], corners[corner, 2] - J[2, 3]
                    along = rx * ax + ry * ay + rz * az
                    off = rx * rx + ry * ry + rz * rz - along * along
                    if off > box:
                        box = off
                box = np.sqrt(box)
                v0 += adq[j] * (box if box < lever else lever)
                v1 += adq[j] * D_below[s, j]
        V0[k] = v0
        V1[k] = v1


# ----- kinematic tables for the speed bound ------------------------------------
class _Kinematics:
    """Per-robot tables: which movable joints lie above each link, fixed offsets, joint order."""

    def __init__(self, robot) -> None:
        (self.mimic_matrix, self.mimic_offset, kind, axis, link_parent, T_parent_origin,
         link_joint) = robot.kinematic_arrays()
        n_links, n_mov = len(link_parent), len(kind)
        self.prismatic = kind == PRISMATIC
        self.axis = np.asarray(axis, dtype=float).reshape(-1, 3)
        self.child_link = np.zeros(n_mov, dtype=np.int64)
        for k in range(n_links):
            if link_joint[k] >= 0:
                self.child_link[link_joint[k]] = k
        self.chain = np.zeros((n_links, n_mov), dtype=bool)      # joint j moves link k
        self.path_len = np.zeros(n_links)                        # summed fixed offsets from the root
        for k in range(n_links):                                 # parents come first
            p = link_parent[k]
            if p >= 0:
                self.chain[k] = self.chain[p]
                self.path_len[k] = self.path_len[p] + np.linalg.norm(T_parent_origin[k][:3, 3])
            if link_joint[k] >= 0:
                self.chain[k, link_joint[k]] = True
        # below[j, k]: joint k lies strictly below joint j
        self.below = self.chain[self.child_link].T.copy() if n_mov else np.zeros((0, 0), dtype=bool)
        np.fill_diagonal(self.below, False)


_KINEMATICS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _kinematics(robot) -> _Kinematics:
    kin = _KINEMATICS.get(robot)
    if kin is None:
        kin = _KINEMATICS[robot] = _Kinematics(robot)
    return kin


def _shape_spheres(world) -> tuple[np.ndarray, np.ndarray]:
    """Bounding sphere of each shape: centre in its frame (S, 3) and radius (S,)."""
    centre = world.obb_center
    radius = np.array([getattr(e.geometry, "bounding_radius_m", None) or float(np.linalg.norm(h))
                       for e, h in zip(world.shapes, world.obb_half)])
    return centre, radius


_CONVEX, _MESH, _OTHER = 0, 1, 2
_PAIR_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _pair_tables(world, selection):
    """Per pair of a selection: how its narrow phase goes (_CONVEX: coal's exact distance;
    _MESH: hulls first; _OTHER: narrowphase.pair_distance), its coal geometries and hulls (cached per world)."""
    per_world = _PAIR_TABLES.setdefault(world, {})
    key = selection.index.tobytes()
    tables = per_world.get(key)
    if tables is None:
        kind, geoms, hulls = [], [], []
        for a, b in selection.pairs:
            ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
            geoms.append((ga.coal_geometry, gb.coal_geometry))
            hulls.append((ga.coal_hull, gb.coal_hull))
            if not (ga.is_bvh or gb.is_bvh):
                kind.append(_CONVEX)
            elif ga.coal_hull is not None and gb.coal_hull is not None:
                kind.append(_MESH)
            else:
                kind.append(_OTHER)
        tables = per_world[key] = (kind, geoms, hulls)
    return tables


# ----- one motion -----------------------------------------------------------------
class _Sweep:
    """One joint-linear motion against the pairs of one request: poses, speed and distance bounds."""

    def __init__(self, world, selection, q0: np.ndarray, q1: np.ndarray, tolerance_m: float) -> None:
        self.world, self.selection = world, selection
        self.q0, self.dq = q0, q1 - q0
        self.tol = tolerance_m
        self.fk_arrays = world.robot.kinematic_arrays()
        # GJK's precision stays well inside the half tolerance every step keeps in reserve
        self.request = coal.DistanceRequest()
        self.request.enable_signed_distance = True
        self.request.gjk_tolerance = min(GJK_TOLERANCE_M, 0.1 * tolerance_m)
        robot = world.robot
        self.robot = robot
        kin = self.kin = _kinematics(robot)
        self.pairs = selection.pairs
        self.margins = selection.margins
        self.a, self.b = self.pairs[:, 0], self.pairs[:, 1]
        self.centre_shape, self.radius = _shape_spheres(world)
        link = world.shape_link
        on_robot = link >= 0
        A = np.zeros((len(world.shapes), len(kin.prismatic)), dtype=bool)
        A[on_robot] = kin.chain[link[on_robot]]
        dqm = kin.mimic_matrix @ self.dq
        self.adq = np.abs(dqm)
        v0 = kin.mimic_matrix @ q0 + kin.mimic_offset
        v1 = kin.mimic_matrix @ q1 + kin.mimic_offset
        travel = np.where(kin.prismatic, np.maximum(np.abs(v0), np.abs(v1)), 0.0)
        prism_path = kin.chain.astype(float) @ travel                     # (L,)
        # static lever of shape s about joint k: fixed offsets + travel below k + centre + radius
        T_fs = world.T_frame_shape
        centre_link = np.einsum("sij,sj->si", T_fs[:, :3, :3], self.centre_shape) + T_fs[:, :3, 3]
        lk = np.where(on_robot, link, 0)
        cl = kin.child_link
        R_static = ((kin.path_len[lk][:, None] - kin.path_len[cl][None, :])
                    + (prism_path[lk][:, None] - prism_path[cl][None, :])
                    + np.linalg.norm(centre_link, axis=1)[:, None] + self.radius[:, None])
        w = A * self.adq[None, :] * np.where(kin.prismatic[None, :], 1.0, R_static)
        self.D_below = w @ kin.below.T.astype(float)                      # (S, M)
        self.moved = np.any(A & (self.adq[None, :] > 0), axis=1)          # (S,)
        common = A[self.a] & A[self.b]
        self.W_a = (A[self.a] & ~common).astype(float)                    # (P, M)
        self.W_b = (A[self.b] & ~common).astype(float)
        self._kind, self._geoms, self._hulls = _pair_tables(world, selection)
        n_pairs = max(len(self.pairs), 1)
        self._buffers = (np.empty((n_pairs, len(robot.link_names), 4, 4)), np.empty((n_pairs, 2, 4, 4)),
                         np.empty((n_pairs, 3, 3)), np.empty((n_pairs, 3, 3)), np.empty((n_pairs, 3)),
                         np.empty((n_pairs, 3)))

    # ----- poses --------------------------------------------------------
    def configurations(self, t: np.ndarray) -> np.ndarray:
        return self.q0[None, :] + np.asarray(t, dtype=float)[:, None] * self.dq[None, :]

    def poses(self, t: np.ndarray):
        """Link poses (K, L, 4, 4) and shape poses (K, S, 4, 4) at times t (K,)."""
        T_link = self.robot.link_transforms_batch(self.configurations(t))
        return T_link, self.world.shape_transforms(T_link)

    # ----- bounds -------------------------------------------------------
    def speeds(self, p: np.ndarray, T_link: np.ndarray, T_shape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Speed bound of pairs p from their times t on: |d distance / dt| <= V0 + h V1 over [t, t + h].

        ``T_link[k]``, ``T_shape[k]`` are the poses at pair k's time. Returns V0 (K,) in metres
        per unit time and V1 (K,) in metres per unit time squared.
        """
        V0, V1 = np.zeros(len(p)), np.zeros(len(p))
        if len(self.adq):
            kin = self.kin
            _pair_speeds(np.ascontiguousarray(T_link), np.ascontiguousarray(T_shape), self.a[p], self.b[p],
                         np.ascontiguousarray(self.W_a[p]), np.ascontiguousarray(self.W_b[p]), kin.child_link,
                         kin.axis, kin.prismatic, self.centre_shape, self.radius, self.adq, self.D_below, V0, V1)
        return V0, V1

    def evaluate(self, p: np.ndarray, t: np.ndarray, slack: np.ndarray):
        """Distance lower bounds d (K,) and speed bounds V0, V1 (K,) of pairs p at their times t.

        Bounding spheres first (compiled, with the speed bounds). Where a sphere is within
        ``slack`` (K,) of the padding (it cannot end the pair's search) and closer than
        ``SPHERE_ACCEPT_M``: primitive and convex pairs get coal's exact distance, mesh pairs
        their convex hulls' distance (a hull contains its mesh) when the hulls are at least
        ``HULL_ACCEPT_M`` beyond the padding, else the exact mesh distance (with the
        solid-body test of :func:`narrowphase.pair_distance` when the hulls overlap).
        """
        n = len(p)
        a, b = self.a[p], self.b[p]
        buf = self._buffers
        T_link, T_pair, R_a, R_b, t_a, t_b = (x[:n] for x in buf[:6])
        d, V0, V1 = np.empty(n), np.empty(n), np.empty(n)
        kin, world = self.kin, self.world
        _evaluate(self.q0, self.dq, np.ascontiguousarray(t, dtype=float), p, self.a, self.b, self.W_a, self.W_b,
                  *self.fk_arrays, world.shape_link, world.T_frame_shape, kin.child_link, kin.axis, kin.prismatic,
                  self.centre_shape, self.radius, world.obb_axes, world.obb_half, self.adq, self.D_below, T_link,
                  T_pair, R_a, t_a, R_b, t_b, d, V0, V1)
        margin = self.margins[p]
        rest = 1.0 - t
        enough = margin + slack + rest * (V0 + rest * V1)
        need = np.flatnonzero((d < enough) & (d < margin + SPHERE_ACCEPT_M))
        if need.size == 0:
            return d, V0, V1
        request, kind, geoms, hulls = self.request, self._kind, self._geoms, self._hulls
        hull_enough = np.minimum(enough, margin + HULL_ACCEPT_M)
        Transform, distance, Result = coal.Transform3s, coal.distance, coal.DistanceResult
        for k in need.tolist():
            q = int(p[k])
            pose_a, pose_b = Transform(R_a[k], t_a[k]), Transform(R_b[k], t_b[k])
            how = kind[q]
            if how == _CONVEX:
                ga, gb = geoms[q]
                d[k] = distance(ga, pose_a, gb, pose_b, request, Result())
                continue
            if how == _MESH:
                ha, hb = hulls[q]
                hull = distance(ha, pose_a, hb, pose_b, request, Result())
                if hull >= hull_enough[k]:
                    d[k] = hull
                    continue
                if hull > 0.0:       # hulls apart, so are the bodies: the surfaces' distance is exact
                    ga, gb = geoms[q]
                    d[k] = distance(ga, pose_a, gb, pose_b, request, Result())
                    continue
            d[k] = pair_distance(world, world.shape_transforms(T_link[k]), int(a[k]), int(b[k])).distance_m
        return d, V0, V1

    def exact(self, p: int, t: float):
        """(PairDistance, T_link, T_shape) of pair p at time t."""
        T_link, T_shape = self.poses(np.array([t]))
        return pair_distance(self.world, T_shape[0], int(self.a[p]), int(self.b[p])), T_link[0], T_shape[0]

    # ----- conservative advancement ------------------------------------
    def first_touch(self, p: np.ndarray, t_start: np.ndarray, stop_at_first: bool):
        """Per pair p[k], the first time >= t_start[k] at which it touches (inf when never).

        With ``stop_at_first`` the search stops once no pair can touch before the earliest
        touch found (later touches of other pairs are then not searched: inf).

        Returns
        -------
        touch_t : (K,) times; speed : (K,) the speed bound at the touch (for TIME1).
        """
        p = np.asarray(p, dtype=np.int64)
        t = np.asarray(t_start, dtype=float).copy()
        touch = np.full(len(p), _NEVER)
        speed = np.zeros(len(p))
        active = np.ones(len(p), dtype=bool)
        best = _NEVER
        while True:
            limit = min(1.0, best) if stop_at_first else 1.0
            live = np.flatnonzero(active & (t <= limit))
            if live.size == 0:
                break
            if live.size <= TAIL_PAIRS:       # the last few pairs: scalar steps, less bookkeeping
                for k in live:
                    touch[k], speed[k] = self._advance_one(int(p[k]), float(t[k]), best if stop_at_first else _NEVER)
                    if stop_at_first and touch[k] < best:
                        best = float(touch[k])
                break
            pk, tk = p[live], t[live]
            d, V0, V1 = self.evaluate(pk, tk, np.full(len(pk), self.tol))
            margin = self.margins[pk]
            hit = d < margin + self.tol
            if hit.any():
                touch[live[hit]] = tk[hit]
                speed[live[hit]] = V0[hit]
                active[live[hit]] = False
                best = min(best, float(tk[hit].min()))
            go = ~hit
            step = _safe_step(d[go] - margin[go] - 0.5 * self.tol, V0[go], V1[go])
            moving = live[go]
            t[moving] = tk[go] + step
            active[moving[t[moving] > 1.0]] = False
        return touch, speed

    def _advance_one(self, p: int, t: float, best: float) -> tuple[float, float]:
        """Conservative advancement of pair p alone from t: (touch time, speed bound there), or
        (inf, 0) when it cannot touch before min(1, best)."""
        pk = np.array([p])
        tk = np.array([t])
        slack = np.array([self.tol])
        margin = float(self.margins[p])
        threshold = margin + self.tol
        limit = min(1.0, best)
        while t <= limit:
            tk[0] = t
            d, V0, V1 = self.evaluate(pk, tk, slack)
            gap, v0, v1 = float(d[0]), float(V0[0]), float(V1[0])
            if gap < threshold:
                return t, v0
            if v0 + v1 <= 0.0:
                break
            reserve = gap - margin - 0.5 * self.tol
            t += 2.0 * reserve / (v0 + math.sqrt(v0 * v0 + 4.0 * v1 * reserve))
        return _NEVER, 0.0

    def exit_time(self, p: int, t_enter: float):
        """When pair p, touching at t_enter, stops touching (None: touches until t=1).

        Returns (t_exit or None, (t, distance) of the deepest point found): the march's
        samples, refined by a golden-section search around the deepest one.
        """
        threshold = float(self.margins[p] + self.tol)
        res, T_link, T_shape = self.exact(p, t_enter)
        samples = [(t_enter, res.distance_m)]
        t, d = t_enter, res.distance_m
        grow = EXIT_TIME_TOLERANCE
        t_exit = None
        while t < 1.0:
            V0, V1 = self.speeds(np.array([p]), T_link[None], T_shape[None])
            certain = float(_safe_step(np.array([threshold - d]), V0, V1)[0])
            h = max(certain, grow)
            t_next = min(1.0, t + h)
            res, T_link, T_shape = self.exact(p, t_next)
            samples.append((t_next, res.distance_m))
            if res.distance_m < threshold:
                t, d = t_next, res.distance_m
                grow = h * 2.0 if h <= grow else EXIT_TIME_TOLERANCE
                continue
            # touching on [t, t + certain), apart at t_next: bisect what is left
            lo, hi = min(t + certain, t_next), t_next
            if lo >= hi:
                lo = t if certain <= 0 else hi
            while hi - lo > EXIT_TIME_TOLERANCE:
                mid = 0.5 * (lo + hi)
                d_mid = self.exact(p, mid)[0].distance_m
                samples.append((mid, d_mid))
                if d_mid < threshold:
                    lo = mid
                else:
                    hi = mid
            t_exit = hi
            break
        return t_exit, self._deepest(p, samples, t_exit if t_exit is not None else 1.0)

    def _deepest(self, p: int, samples: list, t_end: float) -> tuple[float, float]:
        """(t, distance) of the deepest sample, refined by golden-section search between its neighbours."""
        samples.sort()
        k = min(range(len(samples)), key=lambda i: samples[i][1])
        best = samples[k]
        lo = samples[k - 1][0] if k > 0 else samples[0][0]
        hi = samples[k + 1][0] if k + 1 < len(samples) else min(t_end, 1.0)
        ratio = (math.sqrt(5.0) - 1.0) / 2.0
        for _ in range(DEEPEST_SEARCH_STEPS):
            if hi - lo <= EXIT_TIME_TOLERANCE:
                break
            m1, m2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
            d1, d2 = self.exact(p, m1)[0].distance_m, self.exact(p, m2)[0].distance_m
            for point in ((m1, d1), (m2, d2)):
                if point[1] < best[1]:
                    best = point
            if d1 < d2:
                hi = m2
            else:
                lo = m1
        return best


def _safe_step(gap: np.ndarray, V0: np.ndarray, V1: np.ndarray) -> np.ndarray:
    """Largest h with h V0 + h^2 V1 <= gap (the distance cannot close ``gap`` sooner); inf if nothing moves."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h = 2.0 * gap / (V0 + np.sqrt(V0 * V0 + 4.0 * V1 * np.maximum(gap, 0.0)))
    return np.where(V0 + V1 > 0, h, _NEVER)


# ----- request handling ------------------------------------------------------------
def _check_tolerance(tolerance_m: float) -> None:
    if not np.isfinite(tolerance_m) or tolerance_m <= 0:
        raise RequestError(f"tolerance_m {tolerance_m} m must be finite and > 0")


def _check_mode(mode, max_step: float) -> MotionMode:
    try:
        mode = MotionMode(int(mode))
    except ValueError as exc:
        raise RequestError(f"unknown motion mode {mode} (CERTIFIED=0, DISCRETE=1)") from exc
    if mode == MotionMode.DISCRETE and (not np.isfinite(max_step) or max_step <= 0):
        raise RequestError(f"max_step {max_step} must be finite and > 0 in discrete mode")
    return mode


def _endpoint(checker, joint_names, values, what: str) -> np.ndarray:
    try:
        return checker.single_configuration(joint_names, values)[0]
    except RequestError as exc:
        raise RequestError(f"{what}: {exc}") from exc


def _pair_kind(world, pair_index: int) -> str:
    return "self-collision" if world.pair_is_self[pair_index] else "environment collision"


def _owner_frames(world, T_link: np.ndarray, a: int, b: int):
    return (np.array(world.shape_owner_frame(a, T_link)), np.array(world.shape_owner_frame(b, T_link)))


def _with_cc(contact: Contact, sweep: _Sweep, a: int, b: int, t: float, cc_type: CCType,
             T_link0: np.ndarray, T_link1: np.ndarray) -> Contact:
    times, types = [], []
    for s in (a, b):
        moved = bool(sweep.moved[s])
        times.append(float(t) if moved else NO_CC_TIME)
        types.append(cc_type if moved else CCType.NONE)
    return dataclasses.replace(contact, transforms=_owner_frames(sweep.world, T_link0, a, b),
                               cc_time=tuple(times), cc_type=tuple(types),
                               cc_transforms=_owner_frames(sweep.world, T_link1, a, b))


def _cc_type(t: float, speed: float, tolerance_m: float) -> CCType:
    if t <= 0.0:
        return CCType.TIME0
    if t >= 1.0 or (speed > 0 and (1.0 - t) * speed <= tolerance_m):
        return CCType.TIME1
    return CCType.BETWEEN


def _shape_index(world) -> dict:
    return {(e.owner, e.shape_id): s for s, e in enumerate(world.shapes)}


def _contacts_at(checker, sweep: _Sweep, t: float, speed_at: dict, contact_distance: float,
                 max_contacts: int | None):
    """Contacts of every pair touching at t (penetrating: explain's contacts), cc fields filled."""
    from .checker import _ContactBuilder
    world, robot = sweep.world, sweep.robot
    q = sweep.configurations(np.array([t]))[0]
    T_link, T_shape = sweep.poses(np.array([t]))
    T_link0, _ = sweep.poses(np.array([0.0]))
    T_link1, _ = sweep.poses(np.array([1.0]))
    every = np.arange(len(sweep.pairs))
    threshold = sweep.margins + sweep.tol + contact_distance
    T0 = T_shape[0]
    centres = np.einsum("sij,sj->si", T0[:, :3, :3], sweep.centre_shape) + T0[:, :3, 3]
    lower = np.linalg.norm(centres[sweep.a] - centres[sweep.b], axis=1) - sweep.radius[sweep.a] - sweep.radius[sweep.b]
    near = every[lower < threshold]
    explanation = checker.explain(robot.active_joint_names, q, contact_distance=0.0,
                                  max_contacts=max_contacts, world=world,
                                  **sweep.request_flags)
    by_shapes: dict[tuple[int, int], list[Contact]] = {}
    index = _shape_index(world)
    for c in explanation.contacts:
        key = (index[(c.link_names[0], c.shape_ids[0])], index[(c.link_names[1], c.shape_ids[1])])
        by_shapes.setdefault(key, []).append(c)
    build = _ContactBuilder(world, T_link[0], T_shape[0])
    out: list[tuple[float, Contact]] = []
    touching: list[int] = []
    for p in near:
        a, b = int(sweep.a[p]), int(sweep.b[p])
        res = pair_distance(world, T_shape[0], a, b)
        if res.distance_m >= threshold[p]:
            continue
        if res.distance_m < sweep.margins[p] + sweep.tol:
            touching.append(int(p))
        kind = _cc_type(t, speed_at.get(int(p), 0.0), sweep.tol)
        found = by_shapes.get((a, b)) if res.distance_m < 0 else None
        if not found:
            found = [build.make(a, b, res.p0_world, res.normal_world, res.distance_m, None, None)]
        for c in found:
            out.append((c.distance, _with_cc(c, sweep, a, b, t, kind, T_link0[0], T_link1[0])))
    out.sort(key=lambda item: item[0])
    contacts = [c for _, c in out]
    budget = checker.max_contacts if not max_contacts else int(max_contacts)
    return tuple(contacts[:budget]), q, touching


def _prepare(checker, joint_names, start, goal, group_name, pad_env, pad_self, world):
    world = checker.scene.world if world is None else world
    if len(start) != len(goal):
        raise RequestError(f"start has {len(start)} positions but goal has {len(goal)}")
    q0 = _endpoint(checker, joint_names, start, "start")
    q1 = _endpoint(checker, joint_names, goal, "goal")
    selection = world.pair_selection(group_name, pad_env, pad_self)
    return world, selection, q0, q1


def _limits_verdict(checker, q: np.ndarray, what: str) -> str | None:
    message = checker._limits_message(q)
    return None if message is None else f"{what}: {message}"


def check_motion(checker, joint_names, start, goal, *, group_name: str = "", pad_environment_collisions: bool = True,
                 pad_self_collisions: bool = False, mode=MotionMode.CERTIFIED, max_step: float = 0.0,
                 contact_distance: float = 0.0, max_contacts: int | None = None,
                 tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M, world=None) -> MotionResult:
    """See :meth:`CollisionChecker.check_motion`."""
    robot = checker.scene.robot
    names = robot.active_joint_names
    try:
        start = np.asarray(start, dtype=float).ravel()
        goal = np.asarray(goal, dtype=float).ravel()
        mode = _check_mode(mode, max_step)
        _check_tolerance(tolerance_m)
        if not np.isfinite(contact_distance) or contact_distance < 0:
            raise RequestError(f"contact_distance {contact_distance} m must be finite and >= 0")
        world, selection, q0, q1 = _prepare(checker, joint_names, start, goal, group_name,
                                            pad_environment_collisions, pad_self_collisions, world)
    except (CollisionPkgError, TypeError, ValueError) as exc:
        return MotionResult(False, Status.INVALID_REQUEST, str(exc), NO_CC_TIME, (), names,
                            checker.scene.current_positions.copy())
    for q, what in ((q0, "start"), (q1, "goal")):
        message = _limits_verdict(checker, q, what)
        if message is not None:
            return MotionResult(False, Status.OUT_OF_BOUNDS, message, NO_CC_TIME, (), names, q.copy())
    sweep = _Sweep(world, selection, q0, q1, tolerance_m)
    sweep.request_flags = dict(group_name=group_name, pad_environment_collisions=pad_environment_collisions,
                               pad_self_collisions=pad_self_collisions)
    if mode == MotionMode.DISCRETE:
        return _discrete(checker, sweep, max_step, contact_distance, max_contacts)
    return _certified(checker, sweep, contact_distance, max_contacts)


def _certified(checker, sweep: _Sweep, contact_distance: float, max_contacts) -> MotionResult:
    names = sweep.robot.active_joint_names
    every = np.arange(len(sweep.pairs))
    touch, speed = sweep.first_touch(every, np.zeros(len(every)), stop_at_first=True)
    if not np.isfinite(touch).any():
        return MotionResult(True, Status.VALID, "valid", NO_CC_TIME, (), names, sweep.q0.copy())
    t = float(touch.min())
    speed_at = {int(p): float(speed[p]) for p in np.flatnonzero(touch == t)}
    contacts, q, _ = _contacts_at(checker, sweep, t, speed_at, contact_distance, max_contacts)
    return MotionResult(False, Status.IN_COLLISION, _motion_message(sweep, int(np.flatnonzero(touch == t)[0]), t,
                                                                    contacts), t, contacts, names, q)


def _motion_message(sweep: _Sweep, p: int, t: float, contacts) -> str:
    world = sweep.world
    a, b = sweep.a[p], sweep.b[p]
    kind = _pair_kind(world, int(sweep.selection.index[p]))
    mine = [c for c in contacts if c.link_names == (world.shapes[a].owner, world.shapes[b].owner)]
    what = ""
    if mine:
        d = mine[0].distance
        what = f": penetration {-d * 1000:.3f} mm" if d < 0 else f": distance {d * 1000:.3f} mm"
    pairs = {c.link_names for c in contacts}
    more = f" (+{len(pairs) - 1} more touching body pair{'s' if len(pairs) > 2 else ''})" if len(pairs) > 1 else ""
    return (f"{kind} between '{world.shapes[a].owner}' and '{world.shapes[b].owner}' at t={t:.6f} "
            f"of the motion{what}{more}")


def _discrete(checker, sweep: _Sweep, max_step: float, contact_distance: float, max_contacts) -> MotionResult:
    names = sweep.robot.active_joint_names
    largest = float(np.max(sweep.adq)) if len(sweep.adq) else 0.0
    n = max(1, int(math.ceil(largest / max_step - 1e-12)))
    times = np.linspace(0.0, 1.0, n + 1)
    q = sweep.configurations(times)
    first = checker._first_collision(sweep.world, q, sweep.selection)
    hits = np.flatnonzero(first >= 0)
    if hits.size == 0:
        return MotionResult(True, Status.VALID, f"valid at all {n + 1} samples", NO_CC_TIME, (), names,
                            sweep.q0.copy())
    k = int(hits[0])
    t = float(times[k])
    kind = CCType.TIME0 if k == 0 else (CCType.TIME1 if k == n else CCType.BETWEEN)
    explanation = checker.explain(names, q[k], contact_distance=contact_distance, max_contacts=max_contacts,
                                  world=sweep.world, **sweep.request_flags)
    T_link0, _ = sweep.poses(np.array([0.0]))
    T_link1, _ = sweep.poses(np.array([1.0]))
    index = _shape_index(sweep.world)
    contacts = tuple(_with_cc(c, sweep, index[(c.link_names[0], c.shape_ids[0])],
                              index[(c.link_names[1], c.shape_ids[1])], t, kind, T_link0[0], T_link1[0])
                     for c in explanation.contacts)
    p = int(first[k])
    world = sweep.world
    a, b = sweep.a[p], sweep.b[p]
    message = (f"{_pair_kind(world, int(sweep.selection.index[p]))} between '{world.shapes[a].owner}' and "
               f"'{world.shapes[b].owner}' at t={t:.6f} of the motion (sample {k} of {n + 1})")
    return MotionResult(False, Status.IN_COLLISION, message, t, contacts, names, q[k].copy())


# ----- trajectories ---------------------------------------------------------------
@dataclass
class _Span:
    """A contact interval of one shape pair, in seconds from the trajectory's start."""
    start_s: float
    end_s: float
    open_end: bool               # still touching at the end of its segment
    deepest: tuple               # (distance, segment, time in the segment, pair index)


def _check_waypoints(checker, joint_names, points, times_s):
    """Full configurations (N, A) and times (N,) of a trajectory; RequestError naming the fault."""
    names = list(joint_names)
    rows = list(points) if points is not None else []
    if not rows:
        raise RequestError("the trajectory has no waypoints")
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
        Q = checker.full_configurations(names, np.array([np.asarray(r, dtype=float).ravel() for r in rows]))
    except RequestError as exc:
        raise RequestError(f"waypoints: {exc}") from exc
    return Q, times


def _segment_events(sweep: _Sweep, stop_at_first: bool):
    """Touch intervals of shape pairs in one segment: (pair, entry, exit or None, deepest (t, d)).

    With ``stop_at_first`` only the pairs touching at the segment's first contact time.
    """
    every = np.arange(len(sweep.pairs))
    touch, speed = sweep.first_touch(every, np.zeros(len(every)), stop_at_first=stop_at_first)
    if not np.isfinite(touch).any():
        return [], _NEVER, {}
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


def _interval_contact(checker, sweep: _Sweep, p: int, t: float) -> Contact:
    """The contact of pair p at time t of the sweep's segment, cc fields relative to the segment."""
    from .checker import _ContactBuilder
    res, T_link, T_shape = sweep.exact(p, t)
    a, b = int(sweep.a[p]), int(sweep.b[p])
    build = _ContactBuilder(sweep.world, T_link, T_shape)
    contact = build.make(a, b, res.p0_world, res.normal_world, res.distance_m, None, None)
    T_link0, _ = sweep.poses(np.array([0.0]))
    T_link1, _ = sweep.poses(np.array([1.0]))
    V0, _ = sweep.speeds(np.array([p]), T_link[None], T_shape[None])
    return _with_cc(contact, sweep, a, b, t, _cc_type(t, float(V0[0]), sweep.tol), T_link0[0], T_link1[0])


def _contact_lists(checker, world, spans: dict, sweeps: list, end_s: float):
    """One ContactList per body pair from the shape pairs' spans (merged where they overlap or meet)."""
    from .contact_list import ContactList, ns_from_seconds
    lists = []
    for (owners, body_types), items in spans.items():
        items.sort(key=lambda x: x.start_s)
        merged: list[_Span] = []
        for span in items:
            last = merged[-1] if merged else None
            if last is not None and span.start_s <= last.end_s:
                if span.end_s > last.end_s or (span.end_s == last.end_s and span.open_end):
                    last.end_s, last.open_end = span.end_s, span.open_end
                if span.deepest[0] < last.deepest[0]:
                    last.deepest = span.deepest
            else:
                merged.append(_Span(span.start_s, span.end_s, span.open_end, span.deepest))
        timed: list[list] = []          # [activation ns, deactivation ns, span], merged again after rounding
        for span in merged:
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
            contact = _interval_contact(checker, sweeps[segment], p, t_local)
            if not contact_list.add_contact_at(activation, deactivation, contact):
                raise AssertionError(f"interval [{activation}, {deactivation}) ns of {owners} does not fit its list")
        lists.append(contact_list)
    return tuple(lists)


def check_trajectory(checker, joint_names, points, times_s, *, group_name: str = "",
                     pad_environment_collisions: bool = True, pad_self_collisions: bool = False,
                     mode=MotionMode.CERTIFIED, max_step: float = 0.0, stop_at_first_contact: bool = True,
                     tolerance_m: float = DEFAULT_TOUCH_TOLERANCE_M, world=None) -> TrajectoryResult:
    """See :meth:`CollisionChecker.check_trajectory`."""
    try:
        mode = _check_mode(mode, max_step)
        _check_tolerance(tolerance_m)
        world = checker.scene.world if world is None else world
        Q, times = _check_waypoints(checker, joint_names, points, times_s)
        selection = world.pair_selection(group_name, pad_environment_collisions, pad_self_collisions)
    except (CollisionPkgError, TypeError, ValueError) as exc:
        return TrajectoryResult(False, Status.INVALID_REQUEST, str(exc))
    for i, q in enumerate(Q):
        message = _limits_verdict(checker, q, f"waypoint {i}")
        if message is not None:
            return TrajectoryResult(False, Status.OUT_OF_BOUNDS, message, float(times[i]), max(i - 1, 0))
    flags = dict(group_name=group_name, pad_environment_collisions=pad_environment_collisions,
                 pad_self_collisions=pad_self_collisions)
    segments = [(Q[i], Q[i + 1], times[i], times[i + 1]) for i in range(len(Q) - 1)] or \
        [(Q[0], Q[0], times[0], times[0])]
    spans: dict = {}
    sweeps: list[_Sweep] = []
    first: tuple | None = None          # (time s, segment, MotionResult)
    for i, (qa, qb, ta, tb) in enumerate(segments):
        sweep = _Sweep(world, selection, qa, qb, tolerance_m)
        sweep.request_flags = flags
        sweeps.append(sweep)
        if mode == MotionMode.DISCRETE:
            found = _discrete_segment(checker, sweep, i, ta, tb, max_step, spans, stop_at_first_contact)
            if found is not None and first is None:
                first = found
        else:
            events, t_first, speed_at = _segment_events(sweep, stop_at_first_contact)
            for p, te, tx, (t_deep, d_deep) in events:
                a, b = int(sweep.a[p]), int(sweep.b[p])
                key = ((world.shapes[a].owner, world.shapes[b].owner),
                       (world.shapes[a].body_type, world.shapes[b].body_type))
                spans.setdefault(key, []).append(_Span(ta + te * (tb - ta), ta + (tx if tx is not None else 1.0)
                                                       * (tb - ta), tx is None, (d_deep, i, t_deep, p)))
            if events and first is None:
                contacts, q, _ = _contacts_at(checker, sweep, t_first, speed_at, 0.0, None)
                p0 = min(speed_at)
                result = MotionResult(False, Status.IN_COLLISION, _motion_message(sweep, p0, t_first, contacts),
                                      t_first, contacts, sweep.robot.active_joint_names, q)
                first = (ta + t_first * (tb - ta), i, result)
        if first is not None and stop_at_first_contact:
            break
    lists = _contact_lists(checker, world, spans, sweeps, float(times[-1]))
    if first is None:
        plural = "s" if len(segments) > 1 else ""
        return TrajectoryResult(True, Status.VALID, f"valid ({len(segments)} segment{plural})", -1.0, -1, lists, None)
    time_s, segment, result = first
    message = f"{result.message} (segment {segment}, {time_s:.6f} s into the trajectory)"
    return TrajectoryResult(False, Status.IN_COLLISION, message, float(time_s), int(segment), lists, result)


def _discrete_segment(checker, sweep: _Sweep, segment: int, ta: float, tb: float, max_step: float, spans: dict,
                      stop: bool):
    """Discrete sampling of one segment: spans per body pair from consecutive invalid samples."""
    world = sweep.world
    largest = float(np.max(sweep.adq)) if len(sweep.adq) else 0.0
    n = max(1, int(math.ceil(largest / max_step - 1e-12)))
    local = np.linspace(0.0, 1.0, n + 1)
    q = sweep.configurations(local)
    first_hit = checker._first_collision(world, q, sweep.selection)
    bad = np.flatnonzero(first_hit >= 0)
    if bad.size == 0:
        return None
    index = _shape_index(world)
    names = sweep.robot.active_joint_names
    for k in (bad[:1] if stop else bad):
        explanation = checker.explain(names, q[k], world=world, **sweep.request_flags)
        for c in explanation.contacts:
            if c.distance >= 0 and explanation.valid:
                continue
            a, b = index[(c.link_names[0], c.shape_ids[0])], index[(c.link_names[1], c.shape_ids[1])]
            p = int(np.flatnonzero((sweep.a == a) & (sweep.b == b))[0])
            key = (c.link_names, c.body_types)
            t_abs = ta + local[k] * (tb - ta)
            t_next = ta + local[min(k + 1, n)] * (tb - ta)
            spans.setdefault(key, []).append(_Span(t_abs, t_next if k < n else tb, k == n,
                                                   (c.distance, segment, float(local[k]), p)))
    result = _discrete(checker, sweep, max_step, 0.0, None)
    return ta + result.cc_time * (tb - ta), segment, result
