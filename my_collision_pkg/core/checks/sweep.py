"""One joint-linear motion against the pairs of one request: the sweep, its bounds and its tables.

A motion is ``q(t) = q0 + t (q1 - q0)`` for ``t`` in [0, 1]. :class:`Sweep` holds one
such motion and answers, per shape pair, the first time it touches
(:meth:`Sweep.first_touch`), when a touching pair stops touching
(:meth:`Sweep.exit_time`) and exact distances along the way. The tables that do not
depend on the motion (per world and request: bounding spheres, which joints move which
shape, lever lengths, cover spheres, narrow-phase routes) are built once per world
snapshot through :meth:`CollisionWorld.cached`.

Certified mode (conservative advancement; LaValle, *Planning Algorithms* 5.3.4;
Schwarzer, Saha and Latombe 2002). For each shape pair the request checks, at a time
``t`` we know a lower bound ``d`` of the pair's signed distance and bounds ``V0``, ``V1``
such that at ``t + s`` the distance changes at most at the rate ``V0 + |s| V1`` (metres
per unit of ``t``). The distance then drops by at most ``h V0 + h^2 V1 / 2`` over ``h``
(the rate integrated), so the pair stays farther apart than its padding ``m`` plus
``tolerance_m / 2`` for the ``h`` that solves ``h V0 + h^2 V1 / 2 = d - m - tolerance_m / 2``: the pair's next
evaluation time (each pair keeps its own clock, so far pairs are skipped for long). A
pair evaluated at ``d < m + tolerance_m`` counts as touching, so each step is at least
the time to close ``tolerance_m / 2`` and the search ends. The first touching time
over all pairs is ``cc_time``. Guarantee: no time at which a pair is closer than
``m + tolerance_m / 2`` (so no collision, however thin the obstacle or fast the
motion) lies before ``cc_time``; the price is that a pair passing within
``tolerance_m`` of its padding may be reported as a contact. Coal computes distances
to ``min(1e-6 m, tolerance_m / 10)``, inside that reserve.

Far world objects. Before the search, the world-object pairs that a swept bound of each
robot shape proves apart over the whole motion are dropped (:func:`motion_pair_candidates`,
conservative), so a motion costs what the objects near its path cost, not the world's size.

Bounded work. Each compiled :func:`advancement.advance` call makes at most a step budget of
bound evaluations (``limits.ADVANCE_CALL_STEPS``) and fills at most ``NEED_SLOTS`` narrow-phase
slots, then returns to Python with the unfinished pairs still live, where the request's
:class:`limits.WorkMeter` looks at the stop event and at ``max_certified_steps``.

Steps on a time grid (``GRID_STEPS``, :mod:`kernels.grid_advance`). A step that leaves a
reserve of at least ``grid_advance.SNAP_GAP_M`` ends on the time grid below where the bound
lets it end (``1 / grid_advance.SNAP_GRID``) when that keeps at least half of it; a shorter
step is as certain as the full one. Pairs that reach the same grid time share the link
poses and the shapes' levers there, which the per-motion cache keeps; the sphere covers are
measured only for pairs whose bounding spheres come within ``grid_advance.COVER_GATE_M`` of
the narrow phase's threshold. Near contact (a smaller reserve) steps end where the bound lets
them, as before.

Halving first (``DYADIC_PREFIX``, :func:`grid_advance.certify_dyadic`). Before the forward
steps every pair is evaluated at t = 0 and t = 1 and the motion's time is halved where the
bounds from both ends of an interval (:func:`advancement.interval_bound`) do not yet hold
the pair above ``m + tolerance_m / 2``: an interval certified from both ends may be about
twice as long as a forward step from its start, and every evaluation lands on the cache's
grid of ``1 / grid_advance.CACHE_GRID``, shared by all pairs. A pair that comes near (the
narrow phase would be needed, or the shortest interval does not certify) goes on with the
forward steps from the end of its certified prefix. The certified clearance of a valid
motion halves the prefix intervals that could be its smallest once more
(:func:`grid_advance.dyadic_clearance`), so it is not looser than the forward steps'.

The narrow phase in the kernel (:mod:`kernels.gjk`). A pair within ``COVER_ACCEPT_M`` of
``m + tolerance_m`` first gets GJK's certified lower bound of its convex solids' distance
(primitives, convex meshes, meshes' hulls) in the compiled loop; only a pair that may
touch, or whose hulls come nearer than the rules of :meth:`Sweep.narrow` accept, is
handed to coal in Python.

Distance lower bounds, cheapest first, in one compiled call per round
(:func:`advancement.advance`, each pair stepping on its own clock): the two bounding
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
axis ``j`` (the distance from a line is convex: a box's farthest point is a corner; the
grid kernels' cached levers take the sphere's alone, :func:`grid_advance.shape_levers`), and
``V1 = sum_rev |dq_j| D_j``. Attached objects ride their link; world objects do not
move. For a pair of robot bodies the joints above both bodies move them rigidly
together and cannot change their distance, so they are left out. The pair's bounds are
the sums of its two bodies' bounds.

The same bounds hold over ``[t - h, t]``: the levers grow with ``|s| D_j`` whichever way
the time ``s`` runs from ``t``, and ``D_j`` does not depend on the configuration. So two
evaluations of a pair bound its distance over the time between them from both ends, which
is how a valid motion's smallest certified clearance is kept at little cost
(:meth:`Sweep.certified_clearance`, :func:`advancement.interval_bound`).
"""
from __future__ import annotations

import enum
import math
import threading
import weakref
from typing import NamedTuple

import coal
import numpy as np

from my_collision_pkg.core.checks.limits import (ADVANCE_CALL_STEPS, EXACT_CALL_STEPS, NARROW_CALL_STEPS, WorkMeter,
                                                 step_weight)
from my_collision_pkg.core.checks.narrowphase import pair_distance
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.geometry.hulls import kept_hull_edges
from my_collision_pkg.core.kernels import advancement as mk
from my_collision_pkg.core.kernels import grid_advance as gk
from my_collision_pkg.core.kernels import gjk
from my_collision_pkg.core.kernels.codes import JOINT_PRISMATIC
from my_collision_pkg.core.model.shapes import is_primitive
from my_collision_pkg.core.scene.planning_scene import CollisionWorld, PairSelection

EXIT_TIME_TOLERANCE = 1e-4        # exit times of trajectory intervals, fraction of the segment
DEEPEST_SEARCH_STEPS = 20         # golden-section steps refining an interval's deepest contact
NEVER = math.inf                  # the touch time of a pair that never touches
# A convex-hull distance at least this far beyond the padding is used as the step's bound
# as it is; closer hulls get the exact (mesh) distance, which gives longer steps.
HULL_ACCEPT_M = 0.001
# Largest GJK tolerance of the sweep's coal distances (each request uses the smaller of it
# and a tenth of its touch tolerance); not narrowphase's GJK_TOLERANCE_M, which sets the
# precision of explain's witness points.
SWEEP_GJK_TOLERANCE_M = 1e-6
# Sphere covers this far beyond the padding + tolerance give the step as they are (no narrow
# phase): far pairs take a few more, much cheaper, compiled steps.
COVER_ACCEPT_M = 0.01
# Motion checks drop the world-object pairs that cannot come near during the motion
# (:func:`motion_pair_candidates`); tests switch it off to compare with every pair.
CULL_FAR_OBJECTS = True
# ... when the request has at least this many world-object pairs (below it the test costs
# more than the pairs it could drop).
CULL_MIN_ENV_PAIRS = 64
# Most narrow-phase evaluations at t = 1 that :meth:`Sweep.certified_clearance` makes to
# tighten the bound of a pair's last step (each one, about the cost of a narrow-phase step).
CLEARANCE_END_EVALUATIONS = 2
# NEED slots of one compiled advancement call (the call returns when they are full): the
# (slots, L, 4, 4) link poses it hands to the narrow phase are the only per-pair buffer.
NEED_SLOTS = 128
# Steps end on a time grid where that keeps most of the step, so pairs share the poses and
# levers of grid times (:mod:`kernels.grid_advance`); tests switch it off to compare with
# every pair on its own clock.
GRID_STEPS = True
# ... when the grid's tables (:func:`grid_advance.grid_cache_size`) hold at most this many floats.
GRID_CACHE_MAX_FLOATS = 1 << 21
# Before the forward steps, certify each pair over as long a prefix of the motion as halving
# the motion's time proves apart (grid_advance.certify_dyadic); the forward steps go on from
# where that stopped.
DYADIC_PREFIX = True
# ... keeping at most this many evaluations per pair (where the prefix then stops), for the
# certified clearance, which refines the lowest intervals by at most DYADIC_REFINEMENTS more
DYADIC_POINTS = 24
DYADIC_REFINEMENTS = 64


# ----- kinematic tables for the speed bound ------------------------------------
class MotionKinematics:
    """Per-robot tables of the speed bound: which movable joints lie above each link, fixed offsets, joint order.

    Attributes
    ----------
    mimic_matrix, mimic_offset : the robot's map from active positions to movable joint values.
    prismatic : (M,) bool, per movable joint.
    axis : (M, 3) joint axes in their child link's frame.
    child_link : (M,) the link each movable joint moves directly.
    chain : (L, M) bool, joint j moves link k.
    path_len : (L,) summed lengths of the fixed joint offsets from the root, metres.
    below : (M, M) bool, joint k lies strictly below joint j.
    """

    def __init__(self, robot) -> None:
        (self.mimic_matrix, self.mimic_offset, kind, axis, link_parent, T_parent_origin,
         link_joint) = robot.kinematics_arrays
        n_links, n_mov = len(link_parent), len(kind)
        self.prismatic = kind == JOINT_PRISMATIC
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
        # depth[j]: movable joints from the root down to joint j, j included (the topmost
        # moving joint of a chain has the least)
        self.depth = self.chain[self.child_link].sum(axis=1) if n_mov else np.zeros(0, dtype=np.int64)


def motion_kinematics(world: CollisionWorld) -> MotionKinematics:
    """The speed-bound tables of ``world``'s robot (kept with the snapshot: cheap, and no cache on the model)."""
    return world.cached(("sweep", "kinematics"), MotionKinematics, world.robot)


def shape_spheres(world: CollisionWorld) -> tuple[np.ndarray, np.ndarray]:
    """Bounding sphere of each shape: centre in its frame (S, 3) and radius (S,)."""
    centre = world.obb_center
    radius = np.array([getattr(e.geometry, "bounding_radius_m", None) or float(np.linalg.norm(h))
                       for e, h in zip(world.shapes, world.obb_half)])
    return centre, radius


class NarrowRoute(enum.IntEnum):
    """How the sweep's narrow phase measures a pair (a route, not a shape kind)."""
    CONVEX = 0       # both convex (primitives or convex meshes): coal's exact distance
    HULLS_FIRST = 1  # meshes with convex hulls: the hulls' distance, then the exact mesh distance
    SOLID = 2        # otherwise: narrowphase.pair_distance, with the solid-body test


def selection_key(world: CollisionWorld, selection: PairSelection) -> bytes:
    """A cache key of ``selection`` in ``world``: its pair indices as bytes, made once per selection
    object (the entry keeps the object alive, so its id is not reused while the world lives)."""
    owner, key = world.cached(("sweep", "selection_key", id(selection)),
                              lambda: (selection, selection.index.tobytes()))
    return key if owner is selection else selection.index.tobytes()


def pair_routes(world: CollisionWorld, selection: PairSelection) -> tuple[np.ndarray, list, list]:
    """Per pair of a selection its :class:`NarrowRoute` (P,), and per shape of the world its
    coal geometry and its coal hull (lists of S): cached per world and selection.

    The routes are array operations over per-shape flags, so a world of thousands of
    objects (tens of thousands of pairs) costs milliseconds per snapshot, not a Python
    pass over its pairs.
    """
    return world.cached(("sweep", "pair_routes", selection_key(world, selection)), _build_pair_routes, world,
                        selection)


def _build_pair_routes(world: CollisionWorld, selection: PairSelection) -> tuple[np.ndarray, list, list]:
    geoms, hulls = shape_coal_objects(world)
    is_bvh = np.fromiter((e.geometry.is_bvh for e in world.shapes), dtype=bool, count=len(world.shapes))
    has_hull = np.fromiter((h is not None for h in hulls), dtype=bool, count=len(hulls))
    a, b = selection.pairs[:, 0], selection.pairs[:, 1]
    route = np.full(len(a), int(NarrowRoute.SOLID), dtype=np.int64)
    route[has_hull[a] & has_hull[b]] = int(NarrowRoute.HULLS_FIRST)
    route[~(is_bvh[a] | is_bvh[b])] = int(NarrowRoute.CONVEX)
    return route, geoms, hulls


def shape_coal_objects(world: CollisionWorld) -> tuple[list, list]:
    """Per shape of ``world``: its coal geometry and its coal hull (None without one); cached."""
    return world.cached(("sweep", "coal_objects"), lambda: ([e.geometry.coal_geometry for e in world.shapes],
                                                            [e.geometry.coal_hull for e in world.shapes]))


def cover_arrays(world: CollisionWorld) -> mk.CoverArrays:
    """Per world, the shapes' cover spheres and solids for the advancement kernels (cached).

    Each shape's kind is its ``solid_kind`` (a code of :mod:`kernels.codes`): a primitive is
    taken as its solid (``solid_params``: box half extents; sphere radius; radius and half
    length of cylinders, capsules and cones; the kernels bound a cone by its enclosing
    cylinder), a mesh by its cover spheres. See :class:`advancement.CoverArrays`.
    """
    return world.cached(("sweep", "covers"), _build_cover_arrays, world)


def _build_cover_arrays(world: CollisionWorld) -> mk.CoverArrays:
    kind, params, container = [], [], []
    centres, radii, start = [], [], [0]
    probes, probe_start = [], [0]
    for entry in world.shapes:
        g = entry.geometry
        kind.append(g.solid_kind)                          # a primitive's own kind, or a mesh's
        if is_primitive(g.spec):
            params.append(np.asarray(g.solid_params, dtype=float))
            container.append(False)
        else:                                              # bounded by its cover spheres
            params.append(np.zeros(3))
            container.append(g.solid_kind >= 0)            # convex or closed mesh
        centres.append(np.asarray(g.cover_centres_shape, dtype=float).reshape(-1, 3))
        radii.append(np.asarray(g.cover_radii_m, dtype=float).ravel())
        start.append(start[-1] + len(radii[-1]))
        probes.append(np.asarray(g.probe_points_shape, dtype=float).reshape(-1, 3))
        probe_start.append(probe_start[-1] + len(probes[-1]))
    start = np.array(start, dtype=np.int64)
    all_centres = np.ascontiguousarray(np.concatenate(centres + [np.zeros((0, 3))]))
    all_radii = np.ascontiguousarray(np.concatenate(radii + [np.zeros(0)]))
    # reach of shape s: the farthest cover sphere from its box centre (0 without spheres)
    count = np.diff(start)
    owner = np.repeat(np.arange(len(count)), count)
    far = np.linalg.norm(all_centres - world.obb_center[owner], axis=1) + all_radii
    reach = np.zeros(len(count))
    np.maximum.at(reach, owner, far)
    return mk.CoverArrays(
        np.array(kind, dtype=np.int64), np.ascontiguousarray(np.array(params, dtype=float).reshape(-1, 3)),
        start, all_centres, all_radii, reach * (1.0 + 1e-9) + 1e-12,
        np.array(container, dtype=np.bool_),
        np.array(probe_start, dtype=np.int64), np.ascontiguousarray(np.concatenate(probes + [np.zeros((0, 3))])))


def convex_solids(world: CollisionWorld) -> gjk.ConvexArrays:
    """Per world, the shapes' convex solids for :func:`gjk.lower_bound` (cached): primitives by
    their sizes, convex meshes by their vertices, other meshes by their hulls' vertices (a
    mesh without a hull is not supported there), with their hulls' edges."""
    def build():
        kinds, params, vertices = [], [], []
        for entry in world.shapes:
            g = entry.geometry
            kinds.append(g.solid_kind)
            params.append(np.asarray(g.solid_params, dtype=float) if is_primitive(g.spec) else np.zeros(3))
            vertices.append(g.hull_vertices_shape if g.coal_hull is not None else np.zeros((0, 3)))
        return gjk.convex_arrays(kinds, params, vertices, [kept_hull_edges(v) if len(v) else [] for v in vertices])
    return world.cached(("sweep", "convex_solids"), build)


def kernel_routes(world: CollisionWorld, selection: PairSelection) -> tuple[tuple, np.ndarray]:
    """The world's :func:`convex_solids` as a plain tuple and, per pair of the selection, how the
    grid kernel's own narrow phase measures it (``grid_advance.ROUTE_*``: convex solids, hulls,
    or not at all); cached per world and selection (the fields of :class:`grid_advance.NarrowArrays`
    that do not change from one motion to the next)."""
    return world.cached(("sweep", "kernel_routes", selection_key(world, selection)), _build_kernel_routes, world,
                        selection)


def _build_kernel_routes(world: CollisionWorld, selection: PairSelection) -> tuple[tuple, np.ndarray]:
    convex = convex_solids(world)
    a, b = selection.pairs[:, 0], selection.pairs[:, 1]
    both = convex.supported[a] & convex.supported[b]
    route, _, _ = pair_routes(world, selection)
    kernel_route = np.full(len(route), gk.ROUTE_NONE, dtype=np.int64)
    kernel_route[both & (route == int(NarrowRoute.CONVEX))] = gk.ROUTE_CONVEX
    kernel_route[both & (route == int(NarrowRoute.HULLS_FIRST))] = gk.ROUTE_HULLS
    return tuple(convex), kernel_route


def shape_arrays(world: CollisionWorld) -> mk.ShapeArrays:
    """The shapes' links, frames and bounding boxes of ``world`` as the kernels take them."""
    return world.cached(("sweep", "shapes"), mk.ShapeArrays, world.shape_link, world.T_frame_shape, world.obb_center,
                        world.obb_axes, world.obb_half)


def sweep_tables(world: CollisionWorld, selection: PairSelection, kin: MotionKinematics) -> dict:
    """The parts of a sweep's bounds that do not depend on the motion, cached per world and selection:
    bounding spheres, which joints move each shape (A (S, M)), the lever lengths without prismatic
    travel (S, M), and per pair the joints that move one body but not the other (W_a, W_b (P, M))."""
    return world.cached(("sweep", "tables", selection_key(world, selection)), _build_sweep_tables, world, selection,
                        kin)


def _build_sweep_tables(world: CollisionWorld, selection: PairSelection, kin: MotionKinematics) -> dict:
    centre, radius = shape_spheres(world)
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
    robot_shapes = np.flatnonzero(on_robot)
    world_shapes = np.flatnonzero(~on_robot)
    is_env = ~on_robot[b] if len(b) else np.zeros(0, dtype=bool)
    # the world-object pairs grouped by their world shape: shape w's are env_by_shape[start[w]:start[w + 1]]
    env = np.flatnonzero(is_env)
    env_by_shape = env[np.argsort(b[env], kind="stable")]
    env_start = np.searchsorted(b[env_by_shape], np.arange(len(world.shapes) + 1))
    W_a, W_b = (A[a] & ~common).astype(float), (A[b] & ~common).astype(float)
    static = dict(robot_shapes=robot_shapes)
    return dict(
        a=np.ascontiguousarray(a), b=np.ascontiguousarray(b),        # copies, not column views (one numba layout)
        route_list=pair_routes(world, selection)[0].tolist(),
        top_terms=top_speed_terms(static, W_a, W_b, a, b),
        centre=centre, radius=radius, box_local=mk.box_corners(centre, world.obb_axes, world.obb_half),
        centre_link=centre_link, world_centre=centre_link[world_shapes],   # a world object's frame is the world
        robot_shapes=robot_shapes, world_shapes=world_shapes, world_radius=radius[world_shapes],
        is_env=is_env, n_env=int(env.size), self_pairs=np.flatnonzero(~is_env), env_by_shape=env_by_shape,
        env_start=env_start, robot_link=lk[robot_shapes], robot_A=A[robot_shapes], robot_lever=lever[robot_shapes],
        A=A, link=lk, lever=lever, chain=kin.chain.astype(float),
        below_T=np.ascontiguousarray(kin.below.T, dtype=float),        # C order whatever the size (one layout)
        W_a=W_a, W_b=W_b)


# ----- culling far world objects ------------------------------------------------
def motion_pair_candidates(world: CollisionWorld, selection: PairSelection, static: dict, kin: MotionKinematics,
                           q0: np.ndarray, q1: np.ndarray, adq: np.ndarray, R_static: np.ndarray,
                           threshold: np.ndarray, dropped: dict | None = None) -> np.ndarray:
    """The pairs of ``selection`` (indices, in order) that may come within ``threshold`` (P,) metres
    during the motion q0 -> q1: every self pair, and the world-object pairs that a swept bound
    of the robot body does not prove apart.

    A robot shape's bounding sphere (centre ``c``, radius ``r``) moves along a path no longer
    than ``l = sum_j |dq_j| lever_j`` (revolute ``j`` above it: the centre's largest distance
    from the axis over the motion, ``R_static - r``; prismatic: 1), so every centre on it lies
    within ``l / 2`` of the midpoint of ``c(0)`` and ``c(1)`` (``|x - c0| + |x - c1| <= l``).
    When the topmost moving joint above it is revolute, its axis and origin ``o`` stay fixed
    and the centre stays within ``R_static - r`` of ``o``. A world object's bounding sphere
    farther than ``threshold`` from either ball of a robot shape cannot come within it of
    that shape. One robot-wide ball (holding each shape's smaller ball) drops far objects for
    all pairs at once first, so the cost is that of the world's shapes and the kept pairs, not
    of every pair. Conservative: no pair that can touch is dropped.

    ``static``: :func:`sweep_tables`; ``adq`` (M,): the motion's |joint deltas|; ``R_static``
    (R, M): the levers of the robot shapes (``static["robot_shapes"]``) about each joint.
    ``dropped``: when given, filled with what :func:`dropped_clearance` needs to bound the
    distances of the dropped pairs (arrays the test computes anyway).
    """
    n_pairs = len(selection.pairs)
    if n_pairs == 0 or static["n_env"] == 0:
        return np.arange(n_pairs)
    robot_shapes = static["robot_shapes"]
    T_link = world.robot.link_transforms_batch(np.stack([q0, q1]))          # (2, L, 4, 4)
    link = static["robot_link"]
    local = static["centre_link"][robot_shapes]
    c0 = np.einsum("sij,sj->si", T_link[0, link, :3, :3], local) + T_link[0, link, :3, 3]
    c1 = np.einsum("sij,sj->si", T_link[1, link, :3, :3], local) + T_link[1, link, :3, 3]
    r = static["radius"][robot_shapes]
    moving = static["robot_A"] & (adq[None, :] > 0)                         # (R, M)
    lever = np.where(kin.prismatic[None, :], 1.0, np.maximum(R_static - r[:, None], 0.0))
    path = (moving * adq[None, :] * lever).sum(axis=1)                      # (R,) path length bound
    mid, reach_mid = 0.5 * (c0 + c1), 0.5 * path
    reach_anchor = np.full(len(r), np.inf)
    anchor = c0
    if moving.shape[1]:                   # the topmost moving joint's origin, when it is revolute
        top = np.argmin(np.where(moving, kin.depth[None, :], np.iinfo(np.int64).max), axis=1)
        anchored = moving.any(axis=1) & ~kin.prismatic[top]
        anchor = T_link[0, kin.child_link[top], :3, 3]
        rows = np.arange(len(r))
        reach_anchor[anchored] = np.maximum(R_static[rows, top] - r, 0.0)[anchored]
    # per robot shape, its smaller ball, and one ball holding them all
    use_anchor = reach_anchor < reach_mid
    small_c = np.where(use_anchor[:, None], anchor, mid)
    small_r = np.where(use_anchor, reach_anchor, reach_mid) + r
    centre_all = 0.5 * (small_c.min(axis=0) + small_c.max(axis=0))
    radius_all = float(np.max(np.linalg.norm(small_c - centre_all, axis=1) + small_r))
    slack = 1e-9 * (1.0 + radius_all)
    world_c, world_r = static["world_centre"], static["world_radius"]
    gap = np.linalg.norm(world_c - centre_all, axis=1) - world_r - radius_all
    close = gap <= float(threshold.max()) + slack
    near = static["world_shapes"][close]
    if dropped is not None:
        dropped.update(far_shapes=static["world_shapes"][~close], far_gap=gap[~close] - slack, slack=slack,
                       mid=mid, reach_mid=reach_mid, anchor=anchor, reach_anchor=reach_anchor, radius=r,
                       test=np.zeros(0, dtype=np.int64), ok=np.zeros(0, dtype=bool))
    start = static["env_start"]
    counts = start[near + 1] - start[near]
    total = int(counts.sum())
    if total == 0:
        return static["self_pairs"]
    ends = np.cumsum(counts)
    test = static["env_by_shape"][np.arange(total) - np.repeat(ends - counts - start[near], counts)]
    a, b = selection.pairs[test, 0], selection.pairs[test, 1]
    slot = np.searchsorted(robot_shapes, a)                                 # row of each pair's robot shape
    wc = static["centre_link"][b]
    wr = static["radius"][b]
    th = threshold[test] + slack
    ok = np.linalg.norm(wc - mid[slot], axis=1) - reach_mid[slot] - r[slot] - wr <= th
    ok &= np.linalg.norm(wc - anchor[slot], axis=1) - reach_anchor[slot] - r[slot] - wr <= th
    if dropped is not None:
        dropped.update(test=test, ok=ok)
    return np.sort(np.concatenate([static["self_pairs"], test[ok]]))


def swept_gaps(world: CollisionWorld, selection: PairSelection, static: dict, dropped: dict,
               pairs: np.ndarray) -> np.ndarray:
    """Lower bounds (K,) of the distances of world-object pairs ``pairs`` (indices into
    ``selection``) over the whole motion: the world object's bounding sphere against each of
    the two balls of :func:`motion_pair_candidates` that hold the robot shape at every time
    (the larger gap), less its slack. ``dropped``: as that function filled it."""
    a, b = selection.pairs[pairs, 0], selection.pairs[pairs, 1]
    slot = np.searchsorted(static["robot_shapes"], a)
    wc, wr, r = static["centre_link"][b], static["radius"][b], dropped["radius"][slot]
    by_mid = np.linalg.norm(wc - dropped["mid"][slot], axis=1) - dropped["reach_mid"][slot] - r - wr
    by_anchor = np.linalg.norm(wc - dropped["anchor"][slot], axis=1) - dropped["reach_anchor"][slot] - r - wr
    return np.maximum(by_mid, by_anchor) - dropped["slack"]


def dropped_clearance(world: CollisionWorld, selection: PairSelection, static: dict, dropped: dict,
                      below: float) -> tuple[float, int]:
    """The smallest lower bound of (distance - padding) over the pairs :func:`motion_pair_candidates`
    dropped (an index into ``selection``'s pairs, or -1), when it is below ``below`` metres; else
    (inf, -1). Holds over the whole motion.

    The pairs dropped pair by pair have their bounds from that test; a world object dropped
    for all robot shapes at once (its gap from the robot-wide ball) has its pairs bounded one
    by one only when that gap less the largest padding is below the best so far.
    """
    best, where = math.inf, -1
    margins = selection.margins
    test, ok = dropped["test"], dropped["ok"]
    if len(test) and not ok.all():
        gone = test[~ok]
        value = swept_gaps(world, selection, static, dropped, gone) - margins[gone]
        i = int(np.argmin(value))
        best, where = float(value[i]), int(gone[i])
    far, far_gap = dropped["far_shapes"], dropped["far_gap"]
    if len(far):
        top = float(margins.max()) if len(margins) else 0.0
        start, by_shape = static["env_start"], static["env_by_shape"]
        for w in far[far_gap - top < min(best, below)].tolist():
            mine = by_shape[start[w]:start[w + 1]]
            if not len(mine):
                continue
            value = swept_gaps(world, selection, static, dropped, mine) - margins[mine]
            i = int(np.argmin(value))
            if value[i] < best:
                best, where = float(value[i]), int(mine[i])
    return (best, where) if best < below else (math.inf, -1)


# ----- one motion -----------------------------------------------------------------
class Sweep:
    """One joint-linear motion against the pairs of one request: poses, speed and distance bounds.

    Parameters
    ----------
    world : CollisionWorld
    selection : PairSelection
        The pairs the request checks (``request.selection(world)``).
    request : CheckRequest
        The request the motion belongs to (the contacts steps explain with it).
    q0, q1 : (A,) the motion's start and end configurations.
    tolerance_m : float
        Pairs closer than their padding plus this count as touching, metres.
    meter : limits.WorkMeter or None
        The request's account: its steps bound the search (:class:`errors.WorkLimitError`
        beyond it), its stop event is looked at between compiled calls. None: default limits.
    cull : bool or None
        Drop the world-object pairs that cannot come near during the motion
        (:func:`motion_pair_candidates`); None: ``CULL_FAR_OBJECTS``. The sweep's
        ``selection``, ``pairs``, ``a``, ``b`` and ``margins`` are the kept pairs (``kept``:
        their indices into the request's pairs, ``full_selection``). ``dropped``: what
        :func:`dropped_clearance` needs to bound the dropped pairs (None when none was
        dropped); ``tables``: the :func:`sweep_tables` of the request.
    """

    def __init__(self, world: CollisionWorld, selection: PairSelection, request: CheckRequest, q0: np.ndarray,
                 q1: np.ndarray, tolerance_m: float, *, meter: WorkMeter | None = None,
                 cull: bool | None = None) -> None:
        self.world, self.request = world, request
        self.full_selection = selection
        self.meter = meter if meter is not None else WorkMeter()
        self.q0, self.dq = q0, q1 - q0
        self.tol = tolerance_m
        # GJK's precision stays well inside the half tolerance every step keeps in reserve
        self._coal_request = _coal_request(tolerance_m)                # shared, never written to
        self._poses = None            # (coal.Transform3s, coal.Transform3s), made at the first narrow-phase call
        robot = world.robot
        self.robot = robot
        kin = self.kin = motion_kinematics(world)
        static = sweep_tables(world, selection, kin)
        self.centre_shape, self.radius = static["centre"], static["radius"]
        self.box_local = static["box_local"]
        A = static["A"]
        # per motion: |joint deltas|, the robot shapes' static levers (fixed offsets + prismatic
        # travel below each joint + centre + radius) and how fast each shape moves relative to
        # each joint's frame (world objects do not move: their rows stay zero)
        self.adq, R_static, self.D_below, self.moved = mk.motion_speed_tables(
            kin.mimic_matrix, kin.mimic_offset, kin.prismatic, static["chain"], kin.child_link,
            static["robot_shapes"], static["robot_link"], static["robot_A"], static["robot_lever"],
            static["below_T"], len(A), q0, q1)
        cull = CULL_FAR_OBJECTS if cull is None else cull
        route, geoms, hulls = pair_routes(world, selection)
        kept = None
        self.tables, self.dropped = static, None
        if cull and static["n_env"] >= CULL_MIN_ENV_PAIRS:
            threshold = selection.margins + tolerance_m + request.contact_distance
            dropped: dict = {}
            kept = motion_pair_candidates(world, selection, static, kin, q0, q1, self.adq, R_static, threshold,
                                          dropped)
            if len(kept) == len(selection.pairs):
                kept = None
            else:
                self.dropped = dropped
        self._geoms, self._hulls = geoms, hulls                            # per shape
        if kept is None:                                                  # every pair of the request
            self.kept = np.arange(len(selection.pairs))
            self.W_a, self.W_b = static["W_a"], static["W_b"]             # (P, M)
            self._route = static["route_list"] if "route_list" in static else route.tolist()
        else:
            self.kept = kept                                              # indices into the request's pairs
            selection = PairSelection(*(np.ascontiguousarray(x[kept]) for x in selection))
            self.W_a = np.ascontiguousarray(static["W_a"][kept])
            self.W_b = np.ascontiguousarray(static["W_b"][kept])
            self._route = route[kept].tolist()
        self.selection = selection                                        # the pairs this sweep checks
        self.pairs = selection.pairs
        self.margins = selection.margins
        # contiguous copies, not column views: a view has numba layout 'A', but 'C' when it holds one
        # pair, and each layout is a signature of its own, compiled in the request path
        if kept is None:                                                  # made with the tables
            self.a, self.b = static["a"], static["b"]
        else:
            self.a, self.b = np.ascontiguousarray(self.pairs[:, 0]), np.ascontiguousarray(self.pairs[:, 1])
        self.covers = cover_arrays(world)
        # the compiled kernels' argument packs, built once per sweep
        self.speed_arrays = mk.SpeedArrays(self.W_a, self.W_b, kin.child_link, kin.axis, kin.prismatic,
                                           self.centre_shape, self.radius, self.box_local, self.adq, self.D_below)
        if kept is None:         # the selection's (pair, joint) terms, cached with the tables
            top = summed_top_speeds(static["top_terms"], kin.prismatic, self.adq, R_static, len(self.a))
        else:
            top = pair_top_speeds(static, self.W_a, self.W_b, self.a, self.b, kin.prismatic, self.adq, R_static,
                                  len(world.shapes))
        self.pair_arrays = mk.PairArrays(self.a, self.b, self.margins, top)
        self.shape_arrays = shape_arrays(world)
        # the packs as the kernels take them from Python: plain tuples (see advancement.advance);
        # the robot's, the shapes' and the covers' are the world's (cached with it)
        robot_pack, shape_pack, cover_pack = world.cached(("sweep", "static_packs"), _static_packs, world)
        self.robot_arrays = mk.RobotArrays(*robot_pack)
        self.speed_pack = tuple(self.speed_arrays)
        self.kernel_packs = (tuple(self.pair_arrays), robot_pack, shape_pack, self.speed_pack, cover_pack)
        self.kernel_steps = np.zeros(len(self.pairs), dtype=np.int64)    # per pair, for benchmarks
        self.narrow_calls = np.zeros(len(self.pairs), dtype=np.int64)
        self.step_weight = step_weight(len(robot.link_names), len(kin.prismatic))   # steps per bound evaluation
        self.what = "the motion"                # how a refusal names the request, and its progress at time t
        self.progress = float
        self._T_all = None                                                # (S, 4, 4) scratch of narrow()
        self._grid_cache = None                                           # see grid_cache()
        self._narrow_pack = None                                          # see narrow_pack()
        self._dyadic = None                                               # see first_touch()
        self._clearance = None                                            # see first_touch()
        self.track_table, self._track = None, None                        # see first_touch(), track
        self.earliest_touch = NEVER                                       # see first_touch()
        self.gjk_calls = np.zeros(len(self.pairs), dtype=np.int64)        # per pair, for benchmarks
        self.hull_gap = np.full(len(self.pairs), np.inf)                 # per pair, see narrow()

    # ----- poses --------------------------------------------------------
    def configurations(self, t: np.ndarray) -> np.ndarray:
        return self.q0[None, :] + np.asarray(t, dtype=float)[:, None] * self.dq[None, :]

    def poses(self, t: np.ndarray):
        """Link poses (K, L, 4, 4) and shape poses (K, S, 4, 4) at times t (K,)."""
        T_link = self.robot.link_transforms_batch(self.configurations(t))
        return T_link, self.world.shape_transforms(T_link)

    # ----- bounds -------------------------------------------------------
    def speeds(self, p: np.ndarray, T_link: np.ndarray, T_shape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Speed bound of pairs p from their times t on: |d distance / dt| <= V0 + s V1 at t + s.

        ``T_link[k]`` (L, 4, 4), ``T_shape[k]`` (S, 4, 4) are the poses at pair k's time. Returns
        V0 (K,) in metres per unit time and V1 (K,) in metres per unit time squared.
        """
        V0, V1 = np.zeros(len(p)), np.zeros(len(p))
        if len(self.adq):
            corners = np.empty((8, 3))
            for k, q in enumerate(np.asarray(p, dtype=np.int64).tolist()):
                a, b = int(self.a[q]), int(self.b[q])
                V0[k], V1[k] = mk.pair_speed(np.ascontiguousarray(T_link[k]), np.ascontiguousarray(T_shape[k, a]),
                                             np.ascontiguousarray(T_shape[k, b]), a, b, q, self.speed_pack,
                                             corners)
        return V0, V1

    def narrow(self, p: int, T_a: np.ndarray, T_b: np.ndarray, T_link: np.ndarray, enough: float) -> float:
        """A lower bound of pair p's signed distance, exact below ``min(enough, padding + HULL_ACCEPT_M)``.

        Primitive and convex pairs get coal's exact distance; mesh pairs their convex hulls'
        distance (a hull contains its mesh) when the hulls are at least that far, else the
        exact mesh distance (the surfaces' distance while the hulls are apart, its excess over
        the hulls' kept in ``hull_gap[p]``; with the solid-body test of
        :func:`narrowphase.pair_distance` when they overlap).
        """
        if self._poses is None:
            self._poses = (coal.Transform3s(), coal.Transform3s())
        pose_a, pose_b = self._poses
        pose_a.setRotation(T_a[:3, :3])
        pose_a.setTranslation(T_a[:3, 3])
        pose_b.setRotation(T_b[:3, :3])
        pose_b.setTranslation(T_b[:3, 3])
        route = self._route[p]
        a, b = int(self.a[p]), int(self.b[p])
        if route == NarrowRoute.CONVEX:
            return coal.distance(self._geoms[a], pose_a, self._geoms[b], pose_b, self._coal_request,
                                 coal.DistanceResult())
        if route == NarrowRoute.HULLS_FIRST:
            hull = coal.distance(self._hulls[a], pose_a, self._hulls[b], pose_b, self._coal_request,
                                 coal.DistanceResult())
            if hull >= min(enough, float(self.margins[p]) + HULL_ACCEPT_M):
                return hull
            if hull > 0.0:       # hulls apart, so are the bodies: the surfaces' distance is exact
                mesh = coal.distance(self._geoms[a], pose_a, self._geoms[b], pose_b, self._coal_request,
                                     coal.DistanceResult())
                self.hull_gap[p] = max(mesh - hull, 0.0)        # for the grid kernel's hull steps
                return mesh
        T_all = self._T_all
        if T_all is None:                     # pair_distance reads the poses of shapes a and b only
            T_all = self._T_all = np.empty((len(self.world.shapes), 4, 4))
        T_all[a] = T_a
        T_all[b] = T_b
        return pair_distance(self.world, T_all, a, b).distance_m

    def exact(self, p: int, t: float):
        """(PairDistance, T_link, T_shape) of pair p at time t (counts against the request's steps)."""
        meter = self.meter
        meter.check_stop()
        meter.spend(EXACT_CALL_STEPS)
        if meter.spent:
            raise meter.refuse_steps(self.progress(t), self.what)
        T_link, T_shape = self.poses(np.array([t]))
        return pair_distance(self.world, T_shape[0], int(self.a[p]), int(self.b[p])), T_link[0], T_shape[0]

    # ----- conservative advancement ------------------------------------
    def first_touch(self, p: np.ndarray, t_start: np.ndarray, stop_at_first: bool, *, track_clearance: bool = False,
                    reuse_buffers: bool = False, handover: OneCallLeft | None = None):
        """Per pair p[k], the first time >= t_start[k] at which it touches (inf when never).

        With ``stop_at_first`` the search stops once no pair can touch before the earliest
        touch found (later touches of other pairs are then not searched: inf).

        With ``track_clearance`` every bound a step is taken on is kept in ``self.track``
        (:class:`advancement.ClearanceTrack`, per pair k) for :meth:`certified_clearance`.

        With ``reuse_buffers`` the search's work arrays are this thread's from the last such
        search of the same sizes (no allocation per motion: the bool check's hot path); the
        sweep's tracks and the returned arrays then hold another search's values after the
        next one, so :meth:`certified_clearance` must not follow and the caller reads the
        returns (or ``earliest_touch``) before the next search.

        ``handover``: what :func:`one_call_search` left of the same search (this sweep's motion,
        tolerance, meter and ``track_clearance``, every pair of the request from t = 0, the
        sweep culling none): its first compiled call is not made again, the search goes on from
        that call's returns and arrays (the same as this sweep's own would be; they are then
        this thread's, as with ``reuse_buffers``).

        The compiled :func:`advancement.advance` steps every pair on the bounds of its
        bounding and cover spheres; a pair whose bound comes within ``COVER_ACCEPT_M`` of its
        padding + tolerance gets one step on the narrow phase's distance (:meth:`narrow`),
        which alone decides that a pair touches.

        Returns
        -------
        touch_t : (K,) times; speed : (K,) the speed bound at the touch (for TIME1). The
        earliest of the times is kept in ``earliest_touch`` (inf when no pair touches).
        """
        p = np.asarray(p, dtype=np.int64)
        live = np.arange(len(p))
        best = NEVER
        slots = max(1, min(len(self.pairs), NEED_SLOTS))        # buffers live for this search only
        buffers = _search_buffers(slots, len(self.robot.link_names), len(p)) if reuse_buffers else None
        if handover is not None:
            (known, status, V0, V1, T_pair, T_link, self.kernel_steps, need), track_pack = handover.out, handover.track
            self._grid_cache, self._narrow_pack = handover.cache, handover.narrow
            self.gjk_calls, self.hull_gap = handover.narrow[5], handover.narrow[6]
            seq, seq_n, t, tail_t, end = handover.seq, handover.seq_n, handover.t, handover.tail_t, handover.end
            touch = np.full(len(p), NEVER)
            speed = np.zeros(len(p))
        elif buffers is None:
            t = np.asarray(t_start, dtype=float).copy()
            touch = np.full(len(p), NEVER)
            speed = np.zeros(len(p))
            known = np.zeros(len(p), dtype=np.bool_)
            T_pair, T_link = np.empty((slots, 2, 4, 4)), np.empty((slots, len(self.robot.link_names), 4, 4))
            status = np.empty(len(p), dtype=np.int64)
            V0, V1 = np.empty(slots), np.empty(slots)
            need = np.empty(slots, dtype=np.int64)
            seq = seq_n = tail_t = end = None         # made where the halving runs
            track_pack = np.empty((len(mk.ClearanceTrack._fields), len(p)))
        else:
            (T_pair, T_link, status, V0, V1, need, seq, seq_n, tail_t, end, t, touch, speed, known,
             track_pack) = buffers
            seq_n.fill(0)
            t[:] = t_start
            touch.fill(NEVER)
            speed.fill(0.0)
            known.fill(False)
        tol = self.tol
        meter = self.meter
        p_list = margins = None                  # plain lists, made when the narrow phase is needed
        narrow_calls = self.narrow_calls
        snap = snapped_step if GRID_STEPS and self.grid_cache() is not None else plain_step
        self.track_table = track_pack
        if handover is None:
            track_pack[...] = _EMPTY_TRACK
        self._track = None                       # the views of self.track, made when asked for
        packs = (*self.kernel_packs, tol, COVER_ACCEPT_M,
                 tuple(mk.AdvanceOutputs(known, status, V0, V1, T_pair, T_link, self.kernel_steps, need)))
        weight = self.step_weight
        advance, extra = mk.advance, ()
        if GRID_STEPS:
            cache = self.grid_cache()
            if cache is not None:
                advance, extra = gk.advance_on_grid, (cache, self.narrow_pack())
        if live.size * weight > meter.limits.max_certified_steps - meter.steps:   # every pair takes a step at least
            raise meter.refuse_pairs(live.size, weight, self.what)
        self._dyadic = None
        self._clearance = None        # grid_clearance's inputs and returns when made with the search
        first = None                  # the first forward call's returns, made with the halving
        if handover is not None or (extra and DYADIC_PREFIX and (t == 0.0).any()):   # far pairs: halving first
            budget = meter.call_budget(weight)
            if budget > 0:
                if seq is None:
                    seq, seq_n = np.empty((6, len(p), DYADIC_POINTS)), np.zeros(len(p), dtype=np.int64)
                    tail_t, end = np.empty(len(p)), np.empty((len(p), 3))
                if handover is not None:          # made by one_call_search, the same call on the same arrays
                    used, live, count, stop, used_forward, clearance = handover.returns
                else:
                    used, live, count, stop, used_forward, clearance = gk.certify_then_advance(
                        self.q0, self.dq, t, p, *packs, budget, track_pack, track_clearance, *extra, seq, seq_n,
                        meter.limits.max_certified_steps - meter.steps, ADVANCE_CALL_STEPS, weight, tail_t, end,
                        DYADIC_REFINEMENTS)
                meter.spend(math.ceil(used * weight))
                if count == 0 and stop == len(live):     # the forward call finished every live pair
                    meter.spend(math.ceil(used_forward * weight))
                    live = live[:0]
                elif count >= 0:
                    first = (count, stop, used_forward)
                self._dyadic = (seq, seq_n)
                if clearance[-1] != -2:       # the search finished in the call: its clearance too
                    self._clearance = (len(p), tail_t, end, clearance)
        while live.size:
            meter.check_stop()
            if first is not None:     # already made (limit 1: no touch was known before it)
                (count, stop, used), first = first, None
            else:
                budget = meter.call_budget(weight)
                if budget <= 0:      # progress: the share of pair-time certified
                    done = float(np.mean(np.where(np.isfinite(touch), 1.0, np.clip(t, 0.0, 1.0))))
                    raise meter.refuse_steps(self.progress(done), self.what)
                limit = min(1.0, best) if stop_at_first else 1.0
                count, stop, used = advance(self.q0, self.dq, limit, t, live, p, *packs, budget, track_pack,
                                            track_clearance, *extra)
            meter.spend(math.ceil(used * weight) + NARROW_CALL_STEPS * count)
            keep = []
            items = need[:count]
            ks = live[items]
            if count and p_list is None:
                p_list, margins, track = p.tolist(), self.margins.tolist(), self.track
            for k, tk, v0, v1, T_pair_i, T_link_i in zip(ks.tolist(), t[ks].tolist(), V0[:count].tolist(),
                                                          V1[:count].tolist(), T_pair[:count], T_link[:count]):
                if stop_at_first and tk > best:
                    continue
                q = p_list[k]
                margin = margins[q]
                rest = 1.0 - tk
                narrow_calls[q] += 1
                d = self.narrow(q, T_pair_i[0], T_pair_i[1], T_link_i, margin + tol + rest * (v0 + 0.5 * rest * v1))
                if d < margin + tol:
                    touch[k], speed[k] = tk, v0
                    best = min(best, tk)
                    continue
                if track_clearance:
                    record_evaluation(track_pack, k, tk, d, v0, v1)
                if v0 + v1 <= 0.0:
                    if track_clearance:
                        track.tail[k] = d
                    continue
                reserve = d - margin - 0.5 * tol
                tk = snap(tk, 2.0 * reserve / (v0 + math.sqrt(v0 * v0 + 2.0 * v1 * reserve)), reserve)
                t[k] = tk
                known[k] = margin + 0.5 * tol > 0.0
                if tk <= 1.0:
                    keep.append(k)
                elif track_clearance:
                    track.tail[k] = d - rest * (v0 + 0.5 * rest * v1)
            pending = live[stop:]
            live = np.concatenate([np.array(keep, dtype=np.int64), pending]) if pending.size else \
                np.array(keep, dtype=np.int64)
        self._T_all = None
        self.earliest_touch = best
        return touch, speed

    @property
    def track(self) -> mk.ClearanceTrack:
        """The last :meth:`first_touch`'s :class:`advancement.ClearanceTrack`: views of the rows of
        ``track_table`` (made at the first use)."""
        if self._track is None:
            self._track = mk.ClearanceTrack(*self.track_table)
        return self._track

    def narrow_pack(self):
        """The :class:`grid_advance.NarrowArrays` of this sweep as the grid kernel takes it (a plain
        tuple, made at the first call and kept for every search of the sweep, so each pair's
        GJK direction carries over from one search to the next)."""
        if self._narrow_pack is None:
            convex, kernel_route = kernel_routes(self.world, self.full_selection)
            if len(self.kept) != len(kernel_route):                  # the sweep culled pairs
                kernel_route = np.ascontiguousarray(kernel_route[self.kept])
            self._narrow_pack = tuple(gk.NarrowArrays(convex, kernel_route, np.zeros((len(kernel_route), 3)),
                                                      float(self._coal_request.gjk_tolerance), HULL_ACCEPT_M,
                                                      self.gjk_calls, self.hull_gap))
        return self._narrow_pack

    def grid_cache(self):
        """The :class:`grid_advance.GridCache` of this motion as the kernel takes it (a plain
        tuple, made at the first call and kept for every search of the sweep), or None when
        its tables would hold more than ``GRID_CACHE_MAX_FLOATS`` floats."""
        if self._grid_cache is None:
            n_links, n_mov = len(self.robot.link_names), len(self.kin.prismatic)
            if self.world.cached(("sweep", "grid_cache_floats"), gk.grid_cache_size, n_links,
                                 _robot_shape_count(self.world), n_mov) > GRID_CACHE_MAX_FLOATS:
                self._grid_cache = False
            else:
                self._grid_cache = _pooled_grid_cache(self, self.world, n_links, n_mov)
        return self._grid_cache or None

    def certified_clearance(self, p: np.ndarray) -> tuple[float, float, int]:
        """After :meth:`first_touch` over pairs p (K,) with ``track_clearance`` found no touch:
        a lower bound of the smallest (signed distance - padding) over the motion and over
        every pair of the request, the time where the bound is reached, and the pair (an index
        into the request's pairs, ``full_selection``; -1 when the request has none).

        The number: per pair, the smallest of its interval bounds
        (:func:`advancement.interval_bound`) between consecutive evaluations of the search
        (the bounding-sphere, cover or narrow-phase distance each step was taken on) and of
        its last step's bound over ``[t, 1]``; the pairs dropped before the search add their
        swept-sphere bounds (:func:`dropped_clearance`, over the whole motion: time NaN).
        A last step's bound below every pair's interval bounds is bounded from both ends:
        the pair's cover bound at t = 1 (one compiled call for all such pairs), and for the
        smallest ones the narrow phase there (at most ``CLEARANCE_END_EVALUATIONS``). Less
        the sweep's GJK tolerance, for the precision of coal's distances.
        """
        low_row = self.track_table[4]             # ClearanceTrack.low (self.track, where more is needed)
        p = np.asarray(p, dtype=np.int64)
        best, time, where = math.inf, math.nan, -1
        if len(p):
            pairs, robot, shapes, speed, covers = self.kernel_packs
            dyadic = self._dyadic if self._dyadic is not None and len(self._dyadic[1]) == len(p) else None
            used = -1
            made = self._clearance if dyadic is not None else None
            if made is not None and made[0] == len(p):      # grid_clearance ran with the search
                _, tail_t, end, (k, best, time, k2, value, t_value, used) = made
            elif dyadic is not None:        # smallest_clearance and dyadic_clearance in one call where they can
                tail_t, end = np.empty(len(p)), np.empty((len(p), 3))
                k, best, time, k2, value, t_value, used = gk.grid_clearance(
                    self.q0, self.dq, p, pairs, robot, shapes, speed, covers, self.tol, COVER_ACCEPT_M,
                    self.track_table, tail_t, end, self.grid_cache(), self.narrow_pack(), dyadic[0], dyadic[1],
                    DYADIC_REFINEMENTS)
            else:
                tail_t, end = np.empty(len(p)), np.empty((len(p), 3))
                k, best, time = mk.smallest_clearance(self.q0 + self.dq, p, pairs, robot, shapes, speed, covers,
                                                      self.tol, self.track_table, tail_t, end)
            margins = self.margins
            evaluations = CLEARANCE_END_EVALUATIONS
            T_end = None
            while evaluations > 0 and _tail_needs_narrow(k, best, end, low_row, margins, p):
                track = self.track
                if T_end is None:                 # the narrow phase at t = 1, for the smallest last steps
                    T_end = self.poses(np.array([1.0]))
                q = int(p[k])
                exact = self.narrow(q, T_end[1][0, self.a[q]], T_end[1][0, self.b[q]], T_end[0][0], math.inf)
                evaluations -= 1
                bound, t_bound = mk.interval_bound(float(track.last_t[k]), float(track.last_d[k]),
                                                   float(track.last_v0[k]), float(track.last_v1[k]), 1.0,
                                                   max(float(end[k, 0]), exact), float(end[k, 1]), float(end[k, 2]))
                end[k, 0] = np.nan                # measured
                if bound > track.tail[k]:
                    track.tail[k], tail_t[k] = bound, t_bound
                per = np.minimum(track.low, track.tail) - margins[p]
                k = int(np.argmin(per))
                best = float(per[k])
                from_tail = track.tail[k] < track.low[k]
                time = float(tail_t[k] if from_tail else track.low_t[k])
            if dyadic is not None:
                if used < 0:                # the narrow phase at t = 1 came first: the refinements now
                    k2, value, t_value, used = gk.dyadic_clearance(self.q0, self.dq, p, pairs, robot, shapes, speed,
                                                                   covers, self.tol, COVER_ACCEPT_M, self.grid_cache(),
                                                                   self.narrow_pack(), dyadic[0], dyadic[1],
                                                                   float(best), DYADIC_REFINEMENTS)
                self.meter.spend(math.ceil(used * self.step_weight))
                if k2 >= 0 and value < best:
                    k, best, time = k2, value, t_value
            best, time = float(best), float(time)
            where = int(self.kept[p[k]]) if k >= 0 else -1
            self._T_all = None
        if self.dropped is not None:
            value, pair = dropped_clearance(self.world, self.full_selection, self.tables, self.dropped, best)
            if pair >= 0:
                best, time, where = value, math.nan, pair
        return best - self._coal_request.gjk_tolerance, time, where

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


def _prefix_floor(seq: np.ndarray, seq_n: np.ndarray, margins: np.ndarray, p: np.ndarray) -> float:
    """The smallest interval bound less its padding over the prefixes :func:`grid_advance.certify_dyadic`
    certified (``seq[4, k, :seq_n[k] - 1]``, pair k's intervals; ``margins[p[k]]`` its padding), metres;
    inf when there are none."""
    if seq.shape[2] < 2:
        return math.inf
    inside = np.arange(seq.shape[2] - 1)[None, :] < (seq_n - 1)[:, None]
    lows = np.where(inside, seq[4, :, :-1], np.inf).min(axis=1) - margins[p]
    return float(lows.min()) if len(lows) else math.inf


def _tail_needs_narrow(k: int, best: float, end: np.ndarray, low: np.ndarray, margins: np.ndarray,
                       p: np.ndarray) -> bool:
    """Whether the smallest clearance so far, ``best``, is item k's last-step bound and that bound can
    still be tightened by the narrow phase at t = 1 (:meth:`Sweep.certified_clearance`): k >= 0, its
    end not yet measured (``end[k, 0]`` not NaN), and ``best`` below its interval bounds (``low[k]``)
    less its padding (``margins[p[k]]``)."""
    return k >= 0 and not math.isnan(end[k, 0]) and best < low[k] - margins[p[k]]


def _static_packs(world: CollisionWorld) -> tuple[tuple, tuple, tuple]:
    """The kernels' robot, shape and cover packs of ``world`` (plain tuples; the same for every motion)."""
    return (tuple(mk.RobotArrays(*world.robot.kinematics_arrays)), tuple(shape_arrays(world)),
            tuple(cover_arrays(world)))


_COAL_REQUESTS: dict[float, coal.DistanceRequest] = {}


def _coal_request(tolerance_m: float) -> coal.DistanceRequest:
    """The sweep's coal distance request for touch tolerance ``tolerance_m``: signed distances, GJK's
    precision well inside the half tolerance every step keeps in reserve; one per tolerance,
    shared by every sweep (coal reads it, nothing writes to it after it is made)."""
    request = _COAL_REQUESTS.get(tolerance_m)
    if request is None:
        request = coal.DistanceRequest()
        request.enable_signed_distance = True
        request.gjk_tolerance = min(SWEEP_GJK_TOLERANCE_M, 0.1 * tolerance_m)
        if len(_COAL_REQUESTS) < 64:
            _COAL_REQUESTS[tolerance_m] = request
    return request


def gjk_tolerance(tolerance_m: float) -> float:
    """The precision of a sweep's coal distances at touch tolerance ``tolerance_m``, metres."""
    return float(_coal_request(tolerance_m).gjk_tolerance)


_GRID_POOL = threading.local()
_SEARCH_POOL = threading.local()


def _search_buffers(slots: int, n_links: int, n_pairs: int):
    """This thread's work arrays of :meth:`Sweep.first_touch` for these sizes (made at the first
    call, then the same arrays: their contents are the last search's)."""
    key = (slots, n_links, n_pairs)
    entry = getattr(_SEARCH_POOL, "entry", None)
    if entry is None or entry[0] != key:
        entry = (key, (np.empty((slots, 2, 4, 4)), np.empty((slots, n_links, 4, 4)), np.empty(n_pairs, dtype=np.int64),
                       np.empty(slots), np.empty(slots), np.empty(slots, dtype=np.int64),
                       np.empty((6, n_pairs, DYADIC_POINTS)), np.zeros(n_pairs, dtype=np.int64), np.empty(n_pairs),
                       np.empty((n_pairs, 3)), np.empty(n_pairs), np.empty(n_pairs), np.empty(n_pairs),
                       np.empty(n_pairs, dtype=np.bool_), np.empty((len(mk.ClearanceTrack._fields), n_pairs))))
        _SEARCH_POOL.entry = entry
    return entry[1]


def _pooled_grid_cache(owner, world: CollisionWorld, n_links: int, n_mov: int) -> tuple:
    """A :class:`grid_advance.GridCache` (plain tuple) for ``owner`` (a sweep): this thread's last
    one of the same sizes, its flags cleared, when the owner that had it is gone (its pages are
    then warm, where fresh ones cost page faults on every motion); else a new one."""
    shape_link = world.shape_link                        # the slots are cached per world: its own links
    slot = world.cached(("sweep", "cache_slots"), gk.cache_slots, shape_link)
    key = (n_links, len(shape_link), _robot_shape_count(world), n_mov)
    entry = getattr(_GRID_POOL, "entry", None)
    if entry is not None and entry[0] == key and entry[1]() is None:
        posed, T_link, measured, lever, _, T_shape, centre = entry[2]
        posed.fill(False)
        measured.fill(False)
        cache = (posed, T_link, measured, lever, slot, T_shape, centre)
    else:
        cache = tuple(gk.new_grid_cache(n_links, shape_link, n_mov))
    _GRID_POOL.entry = (key, weakref.ref(owner), cache)
    return cache


class OneCallPlan:
    """What :func:`one_call_search` needs of a world and a selection whatever the
    motion, as the arguments of :func:`grid_advance.settle_in_one_call` (made by
    :func:`one_call_plan`, cached with the world; the margins are read from the selection at
    each call, since selections of one world with the same pairs share the plan).

    Attributes
    ----------
    n_pairs, n_links, n_mov : int
        Pairs of the selection, links of the robot, its movable joints.
    weight : float
        Steps per bound evaluation (:func:`step_weight`).
    n_env : int
        The selection's robot-to-world pairs (``static["n_env"]``: whether the sweep would cull).
    tables : tuple
        :func:`advancement.motion_speed_tables`' arguments but q0 and q1.
    terms : tuple
        (pair, flat) of the selection's :func:`top_speed_terms`.
    pair_a, pair_b, every : (P,) int64
        The pairs' shapes and their indices 0 .. P - 1.
    robot_pack, shape_pack, cover_pack, speed_static : tuple
        The kernels' packs (``speed_static``: :class:`advancement.SpeedArrays` without ``adq``
        and ``D_below``).
    convex, kernel_route
        :func:`kernel_routes` of the selection.
    shape_link : (S,) int64
        The world's shapes' links (the grid cache's slots).
    """
    __slots__ = ("n_pairs", "n_links", "n_mov", "weight", "n_env", "tables", "terms", "pair_a", "pair_b", "every",
                 "robot_pack", "shape_pack", "cover_pack", "speed_static", "convex", "kernel_route", "shape_link",
                 "__weakref__")


def one_call_plan(world: CollisionWorld, selection: PairSelection) -> OneCallPlan | None:
    """The :class:`OneCallPlan` of ``selection`` in ``world`` (cached with the world), or None where
    :func:`one_call_search` never answers: no pairs, or a grid cache beyond
    ``GRID_CACHE_MAX_FLOATS``. (The module's switches are read at each call, not here.)"""
    return world.cached(("sweep", "one_call", selection_key(world, selection)), _one_call_plan, world, selection)


def _one_call_plan(world: CollisionWorld, selection: PairSelection) -> OneCallPlan | None:
    n_pairs = len(selection.pairs)
    if n_pairs == 0:
        return None
    kin = motion_kinematics(world)
    static = sweep_tables(world, selection, kin)
    n_links, n_mov = len(world.robot.link_names), len(kin.prismatic)
    if gk.grid_cache_size(n_links, _robot_shape_count(world), n_mov) > GRID_CACHE_MAX_FLOATS:
        return None
    plan = OneCallPlan()
    plan.n_pairs, plan.n_links, plan.n_mov, plan.weight = n_pairs, n_links, n_mov, step_weight(n_links, n_mov)
    plan.n_env = static["n_env"]
    plan.tables = (kin.mimic_matrix, kin.mimic_offset, kin.prismatic, static["chain"], kin.child_link,
                   static["robot_shapes"], static["robot_link"], static["robot_A"], static["robot_lever"],
                   static["below_T"], len(static["A"]))
    pair, _, flat = static["top_terms"]
    plan.terms = (pair, flat)
    plan.pair_a, plan.pair_b = static["a"], static["b"]
    plan.every = np.arange(n_pairs, dtype=np.int64)
    plan.robot_pack, plan.shape_pack, plan.cover_pack = world.cached(("sweep", "static_packs"), _static_packs, world)
    plan.speed_static = (static["W_a"], static["W_b"], kin.child_link, kin.axis, kin.prismatic, static["centre"],
                         static["radius"], static["box_local"])
    plan.convex, plan.kernel_route = kernel_routes(world, selection)
    plan.shape_link = world.shape_link
    return plan


_ONE_CALL_POOL = threading.local()


def _one_call_buffers(plan: OneCallPlan, tolerance_m: float) -> tuple:
    """This thread's work arrays of :func:`one_call_search` for ``plan`` (made at its first
    call with the plan, tolerance and sizes, then the same arrays: the kernel resets what it reads),
    the GJK precision and a :class:`grid_advance.OneCallPack` of the plan's packs and these arrays:
    ``(out, track, cache, warm, calls, hull_gap, seq, seq_n, t, tail_t, end, eps, pack)``."""
    key = (tolerance_m, NEED_SLOTS, DYADIC_POINTS)
    entry = getattr(_ONE_CALL_POOL, "entry", None)
    if entry is not None and entry[0]() is plan and entry[1] == key:
        return entry[2]
    n_pairs, n_links = plan.n_pairs, plan.n_links
    slots = max(1, min(n_pairs, NEED_SLOTS))
    out = (np.empty(n_pairs, dtype=np.bool_), np.empty(n_pairs, dtype=np.int64), np.empty(slots), np.empty(slots),
           np.empty((slots, 2, 4, 4)), np.empty((slots, n_links, 4, 4)), np.empty(n_pairs, dtype=np.int64),
           np.empty(slots, dtype=np.int64))
    buffers = (out, np.empty((len(mk.ClearanceTrack._fields), n_pairs)),
               tuple(gk.new_grid_cache(n_links, plan.shape_link, plan.n_mov)), np.empty((n_pairs, 3)),
               np.empty(n_pairs, dtype=np.int64), np.empty(n_pairs), np.empty((6, n_pairs, DYADIC_POINTS)),
               np.empty(n_pairs, dtype=np.int64), np.empty(n_pairs), np.empty(n_pairs), np.empty((n_pairs, 3)),
               gjk_tolerance(tolerance_m))
    out, track, cache, warm, calls, hull_gap, seq, seq_n, t, tail_t, end, _ = buffers
    pack = gk.one_call_pack(plan.tables, plan.terms, plan.pair_a, plan.pair_b, plan.robot_pack, plan.shape_pack,
                            plan.speed_static, plan.cover_pack, out, track, cache, plan.convex, plan.kernel_route,
                            warm, calls, hull_gap, seq, seq_n, t, plan.every, tail_t, end)
    buffers = buffers + (pack,)
    _ONE_CALL_POOL.entry = (weakref.ref(plan), key, buffers)
    return buffers


class OneCallLeft(NamedTuple):
    """What :func:`one_call_search` leaves of a search its call did not settle, for
    :meth:`Sweep.first_touch` (``handover``) to go on from: the call's returns and the arrays it
    worked on (this thread's: valid until the next one-call search on the thread)."""
    returns: tuple               # certify_then_advance's (used, live, count, stop, used_forward, clearance)
    out: tuple                   # advancement.AdvanceOutputs, as a plain tuple
    track: np.ndarray            # (7, P) the clearance track's rows
    cache: tuple                 # grid_advance.GridCache
    narrow: tuple                # grid_advance.NarrowArrays
    seq: np.ndarray
    seq_n: np.ndarray
    t: np.ndarray
    tail_t: np.ndarray
    end: np.ndarray


def free_clearance_in_one_call(world: CollisionWorld, selection: PairSelection, q0: np.ndarray, q1: np.ndarray,
                               tolerance_m: float, meter: WorkMeter, track_clearance: bool,
                               plan: OneCallPlan | None = None) -> float | None:
    """:func:`one_call_search`'s clearance when its call settles the motion, else None (then a
    :class:`Sweep` answers, from the start)."""
    found = one_call_search(world, selection, q0, q1, tolerance_m, meter, track_clearance, plan)
    return None if isinstance(found, OneCallLeft) else found


def one_call_search(world: CollisionWorld, selection: PairSelection, q0: np.ndarray, q1: np.ndarray,
                    tolerance_m: float, meter: WorkMeter, track_clearance: bool,
                    plan: OneCallPlan | None = None, exact_clearance: bool = True) -> float | OneCallLeft | None:
    """The bool check's certified search of the motion q0 -> q1 (A,) over every pair of
    ``selection`` when one compiled call settles it, with none of :class:`Sweep`'s Python: the
    same :func:`grid_advance.certify_then_advance` call that :meth:`Sweep.first_touch` makes
    first, on the same arrays (fresh GJK directions, fresh work arrays), and the same account
    on ``meter``, made by :func:`grid_advance.settle_in_one_call` with the motion's speed
    tables. ``plan``: :func:`one_call_plan` of ``world`` and ``selection`` when the caller
    holds it (default: looked up).

    Returns the motion's certified clearance (``track_clearance``; as
    :meth:`Sweep.certified_clearance`) or inf when that call certifies every pair free and,
    with ``track_clearance``, its clearance needs no narrow phase at t = 1. Otherwise, having
    spent nothing, it returns a :class:`OneCallLeft` when the call ran (a pair needs the
    caller's narrow phase, the only one that can call a pair touching, or the clearance needs
    it at t = 1): the caller runs the :class:`Sweep`, whose :meth:`Sweep.first_touch` goes on
    from the call (``handover``) as from its own same call; or None when the call did not run
    (the work limits could refuse the motion, the sweep would cull world objects, the grid or
    the halving is switched off, or the grid cache is too large): the Sweep then makes the call
    itself. The verdict, the clearance and the work are the same either way.

    ``exact_clearance`` False (the planner's free tubes): a free motion whose clearance alone
    would need the caller's narrow phase at t = 1 (or its refinements after it) is answered here
    with the clearance the call certified without it: the smallest of the halving's prefix
    interval bounds, the forward steps' interval bounds and the last steps' tails (each pair's
    whole motion, less its padding), a lower bound of the Sweep's clearance, not equal to it.
    The verdict is the same (every pair was certified free by the call)."""
    if not (GRID_STEPS and DYADIC_PREFIX):
        return None
    if plan is None:
        plan = one_call_plan(world, selection)
        if plan is None:
            return None
    if CULL_FAR_OBJECTS and plan.n_env >= CULL_MIN_ENV_PAIRS:
        return None
    weight = plan.weight
    steps_left = meter.limits.max_certified_steps - meter.steps
    budget = meter.call_budget(weight)
    if plan.n_pairs * weight > steps_left or budget <= 0:
        return None
    (out, track, cache, warm, calls, hull_gap, seq, seq_n, t, tail_t, end, eps,
     pack) = _one_call_buffers(plan, tolerance_m)
    margins = selection.margins
    returns = gk.settle_in_one_call(pack, q0, q1, margins, tolerance_m, COVER_ACCEPT_M, budget, track_clearance, eps,
                                    HULL_ACCEPT_M, steps_left, ADVANCE_CALL_STEPS, weight, DYADIC_REFINEMENTS)
    used, live, count, stop, used_forward, clearance = returns
    n_live = len(live)
    forward_done = count == 0 and stop == n_live
    if not (n_live == 0 or forward_done):
        return OneCallLeft(returns, out, track, cache, (plan.convex, plan.kernel_route, warm, eps, HULL_ACCEPT_M, calls,
                                                        hull_gap), seq, seq_n, t, tail_t, end)
    best = math.inf
    if track_clearance:              # Sweep.certified_clearance, when grid_clearance ran in the call
        k, best, _, k2, value, _, used_clearance = clearance
        if used_clearance < 0 or (CLEARANCE_END_EVALUATIONS > 0
                                  and _tail_needs_narrow(k, best, end, track[4], margins, plan.every)):
            if exact_clearance:
                return OneCallLeft(returns, out, track, cache, (plan.convex, plan.kernel_route, warm, eps,
                                                                HULL_ACCEPT_M, calls, hull_gap), seq, seq_n, t,
                                   tail_t, end)
            if used_clearance < 0:         # no refinements ran: the halving's prefix bounds as they are
                value, k2, used_clearance = _prefix_floor(seq, seq_n, margins, plan.every), 0, 0
        if k2 >= 0 and value < best:
            best = value
    meter.spend(math.ceil(used * weight))
    if forward_done:
        meter.spend(math.ceil(used_forward * weight))
    if track_clearance:
        meter.spend(math.ceil(used_clearance * weight))
        return float(best) - eps
    return math.inf


def pair_top_speeds(static: dict, W_a: np.ndarray, W_b: np.ndarray, a: np.ndarray, b: np.ndarray,
                    prismatic: np.ndarray, adq: np.ndarray, R_static: np.ndarray, n_shapes: int) -> np.ndarray:
    """Per pair (P,), a bound of how fast its distance changes anywhere along the motion, in
    metres per unit time: ``sum_j |dq_j| R_j`` over the joints that move one body and not the
    other (``W_a``, ``W_b`` (P, M)), with ``R_j`` the body's configuration-independent lever
    about joint j (``R_static`` (R, M), rows ``static["robot_shapes"]``: the fixed offsets from
    the joint down to the shape, the prismatic travel on the way, the sphere's centre and
    radius), 1 for a prismatic joint. The levers at a time t and their growth (the speed
    bounds ``V0 + h V1`` of the module docstring) are tighter near t; over a long interval the
    growth ``h V1`` takes them past these levers, which no configuration exceeds."""
    lever = np.zeros((n_shapes, len(adq)))
    lever[static["robot_shapes"]] = np.where(prismatic[None, :], 1.0, R_static)
    return np.ascontiguousarray((W_a * lever[a] + W_b * lever[b]) @ adq)


def top_speed_terms(static: dict, W_a: np.ndarray, W_b: np.ndarray, a: np.ndarray,
                    b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nonzero terms of :func:`pair_top_speeds`' sum, per pair and joint that moves one body
    and not the other: (pair (T,), joint (T,), flat index (T,) into the (R, M) robot-shape lever
    table), made once per selection (:func:`sweep_tables`)."""
    n_mov = W_a.shape[1]
    row = np.full(max(int(a.max(initial=-1)), int(b.max(initial=-1))) + 1, -1, dtype=np.int64)
    row[static["robot_shapes"][static["robot_shapes"] < len(row)]] = np.arange(
        int(np.count_nonzero(static["robot_shapes"] < len(row))))
    pairs, joints, flat = [], [], []
    for W, s in ((W_a, a), (W_b, b)):
        p, j = np.nonzero(W)
        pairs.append(p)
        joints.append(j)
        flat.append(row[s[p]] * n_mov + j)
    return (np.concatenate(pairs).astype(np.int64), np.concatenate(joints).astype(np.int64),
            np.concatenate(flat).astype(np.int64))


def summed_top_speeds(terms: tuple, prismatic: np.ndarray, adq: np.ndarray, R_static: np.ndarray,
                      n_pairs: int) -> np.ndarray:
    """:func:`pair_top_speeds` from the selection's :func:`top_speed_terms` (the same sum, one
    compiled pass over the terms per motion instead of two (P, M) products)."""
    pair, _, flat = terms
    return mk.summed_lever_speeds(pair, flat, prismatic, R_static, adq, n_pairs)


def _robot_shape_count(world: CollisionWorld) -> int:
    """How many of the world's shapes ride the robot (cached per world)."""
    return world.cached(("sweep", "robot_shape_count"), lambda: int(np.count_nonzero(world.shape_link >= 0)))


def plain_step(t: float, h: float, reserve: float) -> float:
    """The end of a step of length h from t (:func:`snapped_step` without the grid)."""
    return t + h


def snapped_step(t: float, h: float, reserve: float) -> float:
    """:func:`grid_advance.snapped` in plain floats: the end of a step of length h > 0 from t
    taken on a bound that leaves ``reserve`` metres."""
    end = t + h
    if end >= 1.0 or reserve < gk.SNAP_GAP_M:
        return end
    g = math.floor(end * gk.GRID) / gk.GRID
    return g if g - t >= gk.SNAP_KEEP * h and g <= end else end


def record_evaluation(table: np.ndarray, k: int, t: float, d: float, v0: float, v1: float) -> None:
    """Pair k of the track ``table`` (the (7, K) rows of a :class:`advancement.ClearanceTrack`)
    evaluated at t (its distance lower bound d and speed bounds v0, v1): what
    :func:`advancement.advance` records, the interval closed by the arithmetic of
    :func:`advancement.interval_bound`, in plain floats (a compiled call would take longer to
    hand over its arguments than the arithmetic takes)."""
    last_t, d_a, va0, va1, low = table[:5, k].tolist()
    if last_t == last_t:                                  # not NaN: the interval [last_t, t] closes
        h = t - last_t
        v_a = va0 + 0.5 * h * va1
        v_b = v0 + 0.5 * h * v1
        if v_a + v_b <= 0.0:
            bound, t_bound = max(d_a, d), last_t
        else:
            s = min(max((d_a - d + h * v_b) / (v_a + v_b), 0.0), h)
            bound, t_bound = max(d_a - s * v_a, d - (h - s) * v_b), last_t + s
        if bound < low:
            table[4:6, k] = (bound, t_bound)
    table[:4, k] = (t, d, v0, v1)


def new_track(n: int, table: np.ndarray | None = None) -> mk.ClearanceTrack:
    """An empty :class:`advancement.ClearanceTrack` for n pairs: views of the rows of ``table``
    (7, n), written here (default: a new one)."""
    table = np.empty((len(mk.ClearanceTrack._fields), n)) if table is None else table
    table[...] = _EMPTY_TRACK                      # one broadcast, not a fill per row
    return mk.ClearanceTrack(*table)


# a ClearanceTrack column before any evaluation: last_t NaN, low and tail inf, the rest 0
_EMPTY_TRACK = np.array([[math.nan], [0.0], [0.0], [0.0], [math.inf], [0.0], [math.inf]])


def _safe_step(gap: np.ndarray, V0: np.ndarray, V1: np.ndarray) -> np.ndarray:
    """Largest h with h V0 + h^2 V1 / 2 <= gap (the distance cannot close ``gap`` sooner); inf if nothing moves."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h = 2.0 * gap / (V0 + np.sqrt(V0 * V0 + 2.0 * V1 * np.maximum(gap, 0.0)))
    return np.where(V0 + V1 > 0, h, NEVER)

