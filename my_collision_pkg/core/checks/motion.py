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

Distance lower bounds, cheapest first, in one compiled call per round
(:func:`motion_kernels.advance`, each pair stepping on its own clock): the two bounding
spheres; then the sphere covers (:func:`geometry.mesh_sphere_cover` holds a mesh's
triangles, :func:`geometry.box_sphere_cover` a primitive's box; a primitive side is
taken exactly, a cone as its enclosing cylinder). A mesh cover bounds the distance of
the surfaces, which is the bodies' distance only while they are apart: it is used when
the pair was apart at its previous evaluation (every step keeps the distance above
``m + tolerance_m / 2``; used only when that is positive) or when neither body can hold
the other (each probe point, one per connected piece, outside the other closed body's
bounding box). Only a pair whose bound is within ``COVER_ACCEPT_M`` of ``m + tolerance_m``
goes to the narrow phase, which alone decides that a pair touches: coal's exact
distance for primitive and convex pairs; for meshes the distance of their convex hulls
(a hull contains its mesh), then the exact mesh distance when the hulls come within
``HULL_ACCEPT_M``, and :func:`narrowphase.pair_distance` (with the solid-body test) when
they overlap.

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
Hence ``V0 = sum_rev |dq_j| lever_j + sum_prism |dq_j|``, with ``lever_j`` the smaller of
``dist(c, axis_j) + rho`` and the largest distance of the shape's bounding box corners from
axis ``j`` (the distance from a line is convex: a box's farthest point is a corner), and
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

from my_collision_pkg.core.checks.results import (CCType, Contact, DEFAULT_TOUCH_TOLERANCE_M, MotionMode,  # noqa: F401
                                                  MotionResult, NO_CC_TIME, Status, TrajectoryResult)
from my_collision_pkg.core.errors import CollisionPkgError, RequestError
from my_collision_pkg.core.kernels.kinematics import PRISMATIC
from my_collision_pkg.core.kernels import advancement as mk

from my_collision_pkg.core.checks.narrowphase import pair_distance


EXIT_TIME_TOLERANCE = 1e-4        # exit times of trajectory intervals, fraction of the segment
DEEPEST_SEARCH_STEPS = 20         # golden-section steps refining an interval's deepest contact
_NEVER = math.inf
# A convex-hull distance at least this far beyond the padding is used as the step's bound
# as it is; closer hulls get the exact (mesh) distance, which gives longer steps.
HULL_ACCEPT_M = 0.005
GJK_TOLERANCE_M = 1e-6
# Sphere covers this far beyond the padding + tolerance give the step as they are (no narrow
# phase): far pairs take a few more, much cheaper, compiled steps.
COVER_ACCEPT_M = 0.01


# ----- kinematic tables for the speed bound ------------------------------------
class _Kinematics:
    """Per-robot tables: which movable joints lie above each link, fixed offsets, joint order."""

    def __init__(self, robot) -> None:
        (self.mimic_matrix, self.mimic_offset, kind, axis, link_parent, T_parent_origin,
         link_joint) = robot.kinematics_arrays
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


_COVER_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_PRIMITIVE_KIND = {"Box": mk.BOX, "Sphere": mk.BALL, "Cylinder": mk.CYLINDER, "Capsule": mk.CAPSULE,
                   "Cone": mk.CYLINDER}


def _cover_tables(world):
    """Per world, for :func:`motion_kernels.advance`: each shape's kind (its cover spheres, or a
    primitive solid) and sizes (box half extents; sphere radius; radius and half length of
    cylinders and capsules; a cone as its enclosing cylinder), its cover spheres (start offsets
    (S + 1,), centres (N, 3), radii (N,), the radius about its bounding sphere's centre
    that holds them (S,)), whether it bounds a volume that its cover does not
    fill (closed mesh), and its probe points (start offsets, points)."""
    tables = _COVER_TABLES.get(world)
    if tables is None:
        kind, params, container = [], [], []
        centres, radii, start = [], [], [0]
        probes, probe_start = [], [0]
        for entry in world.shapes:
            g = entry.geometry
            spec = type(g.spec).__name__
            if spec in _PRIMITIVE_KIND:
                kind.append(_PRIMITIVE_KIND[spec])
                sizes = g.spec
                if spec == "Box":
                    params.append(np.asarray(sizes.size_m, dtype=float) / 2.0)
                elif spec == "Sphere":
                    params.append(np.array([sizes.radius_m, 0.0, 0.0]))
                else:
                    params.append(np.array([sizes.radius_m, sizes.length_m / 2.0, 0.0]))
                container.append(False)
            else:
                kind.append(mk.COVER_SPHERES_KIND)
                params.append(np.zeros(3))
                container.append(g.solid_kind >= 0)            # convex or closed mesh
            centres.append(np.asarray(g.cover_centres_shape, dtype=float).reshape(-1, 3))
            radii.append(np.asarray(g.cover_radii_m, dtype=float).ravel())
            start.append(start[-1] + len(radii[-1]))
            probes.append(np.asarray(g.probe_points_shape, dtype=float).reshape(-1, 3))
            probe_start.append(probe_start[-1] + len(probes[-1]))
        reach = [float(np.max(np.linalg.norm(c - world.obb_center[s], axis=1) + r)) if len(r) else 0.0
                 for s, (c, r) in enumerate(zip(centres, radii))]
        tables = _COVER_TABLES[world] = (
            np.array(kind, dtype=np.int64), np.ascontiguousarray(np.array(params, dtype=float).reshape(-1, 3)),
            np.array(start, dtype=np.int64), np.ascontiguousarray(np.concatenate(centres + [np.zeros((0, 3))])),
            np.ascontiguousarray(np.concatenate(radii + [np.zeros(0)])), np.array(reach) * (1.0 + 1e-9) + 1e-12,
            np.array(container, dtype=np.bool_),
            np.array(probe_start, dtype=np.int64), np.ascontiguousarray(np.concatenate(probes + [np.zeros((0, 3))])))
    return tables


_SWEEP_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _sweep_tables(world, selection, kin: _Kinematics) -> dict:
    """The parts of a sweep's bounds that do not depend on the motion, cached per world and selection:
    bounding spheres, which joints move each shape (A (S, M)), the lever lengths without prismatic
    travel (S, M), and per pair the joints that move one body but not the other (W_a, W_b (P, M))."""
    per_world = _SWEEP_TABLES.setdefault(world, {})
    key = selection.index.tobytes()
    tables = per_world.get(key)
    if tables is None:
        centre, radius = _shape_spheres(world)
        link = world.shape_link
        on_robot = link >= 0
        A = np.zeros((len(world.shapes), len(kin.prismatic)), dtype=bool)
        A[on_robot] = kin.chain[link[on_robot]]
        T_fs = world.T_frame_shape
        centre_link = np.einsum("sij,sj->si", T_fs[:, :3, :3], centre) + T_fs[:, :3, 3]
        lk = np.where(on_robot, link, 0)
        lever = ((kin.path_len[lk][:, None] - kin.path_len[kin.child_link][None, :])
                 + np.linalg.norm(centre_link, axis=1)[:, None] + radius[:, None])
        a, b = selection.pairs[:, 0], selection.pairs[:, 1]
        common = A[a] & A[b]
        tables = per_world[key] = dict(
            centre=centre, radius=radius, box_local=mk.box_corners(centre, world.obb_axes, world.obb_half),
            A=A, link=lk, lever=lever, chain=kin.chain.astype(float),
            below_T=kin.below.T.astype(float), W_a=(A[a] & ~common).astype(float),
            W_b=(A[b] & ~common).astype(float))
    return tables


# ----- one motion -----------------------------------------------------------------
class _Sweep:
    """One joint-linear motion against the pairs of one request: poses, speed and distance bounds."""

    def __init__(self, world, selection, q0: np.ndarray, q1: np.ndarray, tolerance_m: float) -> None:
        self.world, self.selection = world, selection
        self.q0, self.dq = q0, q1 - q0
        self.tol = tolerance_m
        self.fk_arrays = world.robot.kinematics_arrays
        # GJK's precision stays well inside the half tolerance every step keeps in reserve
        self.request = coal.DistanceRequest()
        self.request.enable_signed_distance = True
        self.request.gjk_tolerance = min(GJK_TOLERANCE_M, 0.1 * tolerance_m)
        self._poses = (coal.Transform3s(), coal.Transform3s())       # set per narrow-phase call
        robot = world.robot
        self.robot = robot
        kin = self.kin = _kinematics(robot)
        self.pairs = selection.pairs
        self.margins = selection.margins
        self.a, self.b = self.pairs[:, 0], self.pairs[:, 1]
        static = _sweep_tables(world, selection, kin)
        self.centre_shape, self.radius = static["centre"], static["radius"]
        self.box_local = static["box_local"]
        A = static["A"]
        dqm = kin.mimic_matrix @ self.dq
        self.adq = np.abs(dqm)
        v0 = kin.mimic_matrix @ q0 + kin.mimic_offset
        v1 = kin.mimic_matrix @ q1 + kin.mimic_offset
        travel = np.where(kin.prismatic, np.maximum(np.abs(v0), np.abs(v1)), 0.0)
        prism_path = static["chain"] @ travel                             # (L,)
        # static lever of shape s about joint k: fixed offsets + travel below k + centre + radius
        R_static = static["lever"] + (prism_path[static["link"]][:, None] - prism_path[kin.child_link][None, :])
        w = A * self.adq[None, :] * np.where(kin.prismatic[None, :], 1.0, R_static)
        self.D_below = w @ static["below_T"]                              # (S, M)
        self.moved = np.any(A & (self.adq[None, :] > 0), axis=1)          # (S,)
        self.W_a, self.W_b = static["W_a"], static["W_b"]                 # (P, M)
        self._kind, self._geoms, self._hulls = _pair_tables(world, selection)
        self._covers = _cover_tables(world)
        self.kernel_steps = np.zeros(len(self.pairs), dtype=np.int64)    # per pair, for benchmarks
        self.narrow_calls = np.zeros(len(self.pairs), dtype=np.int64)
        n_pairs = max(len(self.pairs), 1)
        self._buffers = (np.empty((n_pairs, 2, 4, 4)), np.empty((n_pairs, len(robot.link_names), 4, 4)))

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

        ``T_link[k]`` (L, 4, 4), ``T_shape[k]`` (S, 4, 4) are the poses at pair k's time. Returns
        V0 (K,) in metres per unit time and V1 (K,) in metres per unit time squared.
        """
        V0, V1 = np.zeros(len(p)), np.zeros(len(p))
        if len(self.adq):
            kin, world = self.kin, self.world
            corners = np.empty((8, 3))
            for k, q in enumerate(np.asarray(p, dtype=np.int64).tolist()):
                a, b = int(self.a[q]), int(self.b[q])
                V0[k], V1[k] = mk.pair_speed(np.ascontiguousarray(T_link[k]), np.ascontiguousarray(T_shape[k, a]),
                                             np.ascontiguousarray(T_shape[k, b]), a, b, self.W_a, self.W_b, q,
                                             kin.child_link, kin.axis, kin.prismatic, self.centre_shape, self.radius,
                                             self.box_local, self.adq, self.D_below, corners)
        return V0, V1

    def narrow(self, p: int, T_a: np.ndarray, T_b: np.ndarray, T_link: np.ndarray, enough: float) -> float:
        """A lower bound of pair p's signed distance, exact below ``min(enough, padding + HULL_ACCEPT_M)``.

        Primitive and convex pairs get coal's exact distance; mesh pairs their convex hulls'
        distance (a hull contains its mesh) when the hulls are at least that far, else the
        exact mesh distance (the surfaces' distance while the hulls are apart; with the
        solid-body test of :func:`narrowphase.pair_distance` when they overlap).
        """
        pose_a, pose_b = self._poses
        pose_a.setRotation(T_a[:3, :3])
        pose_a.setTranslation(T_a[:3, 3])
        pose_b.setRotation(T_b[:3, :3])
        pose_b.setTranslation(T_b[:3, 3])
        how = self._kind[p]
        if how == _CONVEX:
            ga, gb = self._geoms[p]
            return coal.distance(ga, pose_a, gb, pose_b, self.request, coal.DistanceResult())
        if how == _MESH:
            ha, hb = self._hulls[p]
            hull = coal.distance(ha, pose_a, hb, pose_b, self.request, coal.DistanceResult())
            if hull >= min(enough, float(self.margins[p]) + HULL_ACCEPT_M):
                return hull
            if hull > 0.0:       # hulls apart, so are the bodies: the surfaces' distance is exact
                ga, gb = self._geoms[p]
                return coal.distance(ga, pose_a, gb, pose_b, self.request, coal.DistanceResult())
        world = self.world
        return pair_distance(world, world.shape_transforms(T_link), int(self.a[p]), int(self.b[p])).distance_m

    def exact(self, p: int, t: float):
        """(PairDistance, T_link, T_shape) of pair p at time t."""
        T_link, T_shape = self.poses(np.array([t]))
        return pair_distance(self.world, T_shape[0], int(self.a[p]), int(self.b[p])), T_link[0], T_shape[0]

    # ----- conservative advancement ------------------------------------
    def first_touch(self, p: np.ndarray, t_start: np.ndarray, stop_at_first: bool):
        """Per pair p[k], the first time >= t_start[k] at which it touches (inf when never).

        With ``stop_at_first`` the search stops once no pair can touch before the earliest
        touch found (later touches of other pairs are then not searched: inf).

        The compiled :func:`motion_kernels.advance` steps every pair on the bounds of its
        bounding and cover spheres; a pair whose bound comes within ``COVER_ACCEPT_M`` of its
        padding + tolerance gets one step on the narrow phase's distance (:meth:`narrow`),
        which alone decides that a pair touches.

        Returns
        -------
        touch_t : (K,) times; speed : (K,) the speed bound at the touch (for TIME1).
        """
        p = np.asarray(p, dtype=np.int64)
        t = np.asarray(t_start, dtype=float).copy()
        touch = np.full(len(p), _NEVER)
        speed = np.zeros(len(p))
        known = np.zeros(len(p), dtype=np.bool_)
        live = np.arange(len(p))
        best = _NEVER
        kin, world = self.kin, self.world
        T_pair, T_link = self._buffers
        tol = self.tol
        status = np.empty(len(p), dtype=np.int64)
        V0, V1 = np.empty(len(p)), np.empty(len(p))
        need = np.empty(len(p), dtype=np.int64)
        p_list, margins, narrow_calls = p.tolist(), self.margins.tolist(), self.narrow_calls
        tables = (self.a, self.b, self.margins, self.W_a, self.W_b, *self.fk_arrays, world.shape_link,
                  world.T_frame_shape, kin.child_link, kin.axis, kin.prismatic, self.centre_shape, self.radius,
                  world.obb_center, world.obb_axes, world.obb_half, self.box_local, self.adq, self.D_below,
                  *self._covers, tol, COVER_ACCEPT_M, known, status, V0, V1, T_pair, T_link, self.kernel_steps, need)
        while live.size:
            limit = min(1.0, best) if stop_at_first else 1.0
            count = mk.advance(self.q0, self.dq, limit, t, live, p, *tables)
            if not count:
                break
            keep = []
            items = need[:count]
            ks = live[items]
            for j, k, tk, v0, v1 in zip(items.tolist(), ks.tolist(), t[ks].tolist(), V0[items].tolist(),
                                        V1[items].tolist()):
                if stop_at_first and tk > best:
                    continue
                q = p_list[k]
                margin = margins[q]
                rest = 1.0 - tk
                narrow_calls[q] += 1
                d = self.narrow(q, T_pair[j, 0], T_pair[j, 1], T_link[j], margin + tol + rest * (v0 + rest * v1))
                if d < margin + tol:
                    touch[k], speed[k] = tk, v0
                    best = min(best, tk)
                    continue
                if v0 + v1 <= 0.0:
                    continue
                reserve = d - margin - 0.5 * tol
                tk += 2.0 * reserve / (v0 + math.sqrt(v0 * v0 + 4.0 * v1 * reserve))
                t[k] = tk
                known[k] = margin + 0.5 * tol > 0.0
                if tk <= 1.0:
                    keep.append(k)
            live = np.array(keep, dtype=np.int64)
        return touch, speed

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
    """Contacts of every pair touching at t (penetrating: explain's contacts), cc fields filled.

    Exact distances are computed only for pairs that neither their bounding spheres nor their
    sphere covers (:func:`motion_kernels.certainly_apart`) prove to be beyond the threshold."""
    from my_collision_pkg.core.checks.checker import _ContactBuilder
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
    # pairs whose cover bound already proves them apart by the threshold need no exact distance
    kind, params, start, cover_c, cover_r, reach, container, probe_start, probes = sweep._covers
    near = near[~mk.certainly_apart(near, sweep.a, sweep.b, np.ascontiguousarray(T0), threshold, kind, params, start,
                                    cover_c, cover_r, sweep.centre_shape, reach, container, probe_start, probes,
                                    world.obb_center, world.obb_axes, world.obb_half)]
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
    from my_collision_pkg.core.checks.checker import _ContactBuilder
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
    from my_collision_pkg.core.checks.contact_list import ContactList, ns_from_seconds
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
