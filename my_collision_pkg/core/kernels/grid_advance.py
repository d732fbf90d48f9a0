"""Conservative advancement on a time grid: the pairs of one motion share poses and levers.

:func:`advancement.advance` steps every pair on its own clock, so every step poses the
robot (forward kinematics) and measures the shape's levers about the moving joints for
that pair alone. Here a step that would end at time ``t + h`` ends instead at the grid
time below it, ``floor((t + h) G) / G`` (``G = GRID`` intervals, a power of two, so grid
times are exact floats), when that keeps at least ``SNAP_KEEP`` of the step; shorter
steps (near contact) end where the bound lets them. A shorter step is as sound as the
full one (the bound holds over the whole of ``[t, t + h]``). Pairs that reach the same
grid time then share what depends only on the time: the link poses (one forward
kinematics per grid time and motion) and each shape's levers about each joint (its
bounding sphere's distance from the axis, see :func:`shape_levers`), which
:class:`GridCache` keeps across the calls of one search. The bounds, the covers, the NEED
hand-over and the clearance records are those of :func:`advancement.advance`, but for
one saving: the sphere covers are measured
only for pairs whose bounding spheres are within ``COVER_GATE_M`` of the narrow phase's
threshold (a farther pair steps on its spheres' bound, which is as sound and costs less
than the covers would save). On the Panda's benchmark edges both together took the
kernel's time per edge to about 0.7 of :func:`advancement.advance`'s (a quarter more
steps, each cheaper).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.core import types
from numba.experimental import structref

from my_collision_pkg.core.kernels.advancement import (DONE, NEED, AdvanceOutputs, CoverArrays, PairArrays,
                                                       RobotArrays, ShapeArrays, SpeedArrays,
                                                       cover_scratch, by_spheres, hand_over, interval_bound,
                                                       off_axis_sq, posed_centre,
                                                       primitive_bound, raised_by_covers, record_interval, rigid_fk,
                                                       shape_pose, smallest_clearance, solid_distance,
                                                       solid_distance_of, sphere_lever, step_length, track_rows,
                                                       motion_speed_tables, summed_lever_speeds)
from my_collision_pkg.core.kernels.gjk import ConvexArrays, lower_bound

GRID = 32                  # grid intervals over the motion's t in [0, 1] (a power of two)
# The cache keeps poses and levers at the times g / CACHE_GRID (a multiple of GRID, so every
# grid time is a cache time): the forward steps snap to GRID, the halving of
# :func:`certify_dyadic` goes down to intervals of 1 / CACHE_GRID
CACHE_LEVELS = 7
CACHE_GRID = 1 << CACHE_LEVELS
# the shortest interval dyadic_clearance halves (a span of t)
REFINE_SHORTEST = 2.0 ** -24
# dyadic_clearance splits an interval where its bound is lowest, but no nearer either end than
# this share of the interval
REFINE_CLAMP = 0.1
SNAP_KEEP = 0.5            # a step snaps to the grid when it keeps at least this share of its length
# The sphere covers are measured only when the bounding spheres leave less than this beyond
# the narrow phase's threshold (padding + tolerance + accept): farther pairs step on their
# spheres, a step that is shorter but costs a fraction of the covers' (metres). At 0, where
# the narrow phase would otherwise be needed: on the Panda's bench edges 0.05 gave the
# halving 0.3 fewer evaluations per edge of 686 and the certified edge took 1.31-1.41x the
# discrete 0.05 rad one (7 runs, mean 1.37) against 1.24-1.33x at 0 (5 runs, mean 1.30).
COVER_GATE_M = 0.0
# Only steps whose bound leaves at least this reserve (distance - padding - tolerance / 2,
# metres) snap: near contact, where a certified clearance is decided, steps are as they were.
SNAP_GAP_M = 0.05
GJK_GATE_M = 0.0
# How the kernel's own narrow phase (:func:`gjk.lower_bound`) may measure a pair
# (:class:`NarrowArrays` ``route``): not at all (the pair goes to the caller's narrow phase),
# as two convex solids, or as the convex hulls of meshes (accepted only at least
# ``hull_accept`` beyond the padding, as the caller's hull route).
ROUTE_NONE, ROUTE_CONVEX, ROUTE_HULLS = -1, 0, 1
# GJK's relative precision (on top of its absolute ``eps``): far pairs stop a little short of
# the distance, a slightly shorter step, never an unsound one
GJK_RELATIVE = 1e-3


class NarrowArrays(NamedTuple):
    """The kernel's own narrow phase for the pairs of one sweep (P pairs): a pair whose bound
    comes within the cover's accept distance gets :func:`gjk.lower_bound` (the distance of its
    convex solids) here, and goes to the caller only when that bound cannot take the step."""
    convex: tuple                # a gjk.ConvexArrays of the world's shapes, as a plain tuple
    route: np.ndarray            # (P,) int64 ROUTE_*
    warm: np.ndarray             # (P, 3) each pair's last GJK direction (read and written)
    eps: float                   # GJK's absolute precision, metres
    hull_accept: float           # the least hull distance beyond the padding that decides, metres
    calls: np.ndarray            # (P,) int64 GJK calls per pair (added to)
    hull_gap: np.ndarray         # (P,) the caller's last mesh distance less hull distance (inf: none), metres


class GridCache(NamedTuple):
    """What the pairs of one motion share per cache time ``g / CACHE_GRID`` (g = 0 .. CACHE_GRID),
    filled lazily.

    ``posed[g]``: ``T_link[g]`` (L, 4, 4) holds the link poses there; ``measured[g, r]``: the
    robot shape in slot r (``slot[s]``: shape s's slot, -1 for a world object, which nothing
    moves) is measured there (:func:`measure_shape`): ``T_shape[g, r]`` (4, 4) holds its pose,
    ``centre[g, r]`` (3,) its bounding sphere's centre in the world and ``lever[g, r]`` (M,)
    its levers about the revolute joints the motion moves (0 for the others), metres.
    """
    posed: np.ndarray            # (CACHE_GRID + 1,) bool
    T_link: np.ndarray           # (CACHE_GRID + 1, L, 4, 4)
    measured: np.ndarray         # (CACHE_GRID + 1, R) bool
    lever: np.ndarray            # (CACHE_GRID + 1, R, M)
    slot: np.ndarray             # (S,) int64
    T_shape: np.ndarray          # (CACHE_GRID + 1, R, 4, 4)
    centre: np.ndarray           # (CACHE_GRID + 1, R, 3)


def grid_cache_size(n_links: int, n_robot_shapes: int, n_movable: int) -> int:
    """Floats a :class:`GridCache` holds for a robot of this size."""
    return (CACHE_GRID + 1) * (16 * n_links + n_robot_shapes * (max(n_movable, 1) + 19))


def cache_slots(shape_link: np.ndarray) -> np.ndarray:
    """Per shape (links ``shape_link`` (S,), -1 for a world object) its slot in a
    :class:`GridCache`'s lever table: the robot shapes in order, -1 for world objects."""
    on_robot = np.asarray(shape_link) >= 0
    slot = np.full(len(on_robot), -1, dtype=np.int64)
    slot[on_robot] = np.arange(int(on_robot.sum()))
    return slot


def new_grid_cache(n_links: int, shape_link: np.ndarray, n_movable: int) -> GridCache:
    """An empty :class:`GridCache` for a robot of ``n_links`` links and ``n_movable`` movable
    joints, with shapes on links ``shape_link`` (S,) (-1: a world object)."""
    slot = cache_slots(shape_link)
    n_robot = max(int(np.count_nonzero(slot >= 0)), 1)
    G = CACHE_GRID + 1
    return GridCache(np.zeros(G, dtype=np.bool_), np.empty((G, n_links, 4, 4)), np.zeros((G, n_robot), dtype=np.bool_),
                     np.empty((G, n_robot, max(n_movable, 1))), slot, np.empty((G, n_robot, 4, 4)),
                     np.empty((G, n_robot, 3)))


class PairSpeeds(NamedTuple):
    """Per pair of one motion (P pairs, M movable joints), :func:`speed_from_levers` with what
    does not change along the motion summed once (:func:`pair_speeds`): V0 is ``v0_fixed[q]``
    + ``w_a[q] . lever_a`` + ``w_b[q] . lever_b`` and V1 is ``v1[q]``."""
    w_a: np.ndarray              # (P, max(M, 1)) |dq_j| where revolute joint j moves body 0 and not body 1, else 0
    w_b: np.ndarray              # (P, max(M, 1)) the same for body 1
    v0_fixed: np.ndarray         # (P,) the prismatic joints' share of V0
    v1: np.ndarray               # (P,) V1


@njit(cache=True)
def pair_speeds(pair_a, pair_b, speed):
    """The :class:`PairSpeeds` of the pairs (``pair_a``, ``pair_b``) of a motion (``speed``: a
    :class:`advancement.SpeedArrays`); V1 summed in :func:`speed_from_levers`'s order."""
    W_a, W_b, prismatic, adq, D_below = speed.W_a, speed.W_b, speed.prismatic, speed.adq, speed.D_below
    n, n_mov = pair_a.shape[0], adq.shape[0]
    w_a, w_b = np.zeros((n, max(n_mov, 1))), np.zeros((n, max(n_mov, 1)))
    v0_fixed, v1 = np.zeros(n), np.zeros(n)
    for q in range(n):
        for side in range(2):
            s = pair_a[q] if side == 0 else pair_b[q]
            W = W_a if side == 0 else W_b
            w = w_a if side == 0 else w_b
            for j in range(n_mov):
                if W[q, j] == 0.0 or adq[j] == 0.0:
                    continue
                if prismatic[j]:
                    v0_fixed[q] += adq[j]
                    continue
                w[q, j] = adq[j]
                v1[q] += adq[j] * D_below[s, j]
    return PairSpeeds(w_a, w_b, v0_fixed, v1)


@njit(cache=True)
def fixed_centres(shape_link, T_frame_shape, centre_shape):
    """(S, 3): each world object's bounding sphere centre in the world (robot shapes' rows: 0)."""
    out = np.zeros((shape_link.shape[0], 3))
    for s in range(shape_link.shape[0]):
        if shape_link[s] < 0:
            out[s, 0], out[s, 1], out[s, 2] = posed_centre(T_frame_shape[s], centre_shape, s)
    return out


@njit(cache=True, inline="always")
def measure_shape(T_link_g, g, s, r, shape_link, T_frame_shape, centre_shape, radius, prismatic, adq, child_link, axis,
                  T_shape_g, centre_g, lever_g):
    """Robot shape s at the link poses ``T_link_g[g]`` (L, 4, 4): its pose into ``T_shape_g[g, r]``
    (4, 4), its bounding sphere's centre into ``centre_g[g, r]`` (3,) and its levers
    (:func:`shape_levers`) into ``lever_g[g, r]`` (M,): slot r of time g of the grid cache's
    tables, or of the one-time scratch tables for poses off the grid. The tables are indexed,
    never viewed, and the :class:`advancement.SpeedArrays` fields it reads are passed one by
    one: a row view or a tuple handed to an inlined helper costs numba a reference count on
    each of its arrays per call."""
    k = shape_link[s]
    for i in range(3):
        a0, a1, a2, a3 = T_link_g[g, k, i, 0], T_link_g[g, k, i, 1], T_link_g[g, k, i, 2], T_link_g[g, k, i, 3]
        for c in range(4):
            T_shape_g[g, r, i, c] = (a0 * T_frame_shape[s, 0, c] + a1 * T_frame_shape[s, 1, c]
                                     + a2 * T_frame_shape[s, 2, c] + a3 * T_frame_shape[s, 3, c])
    for c in range(4):
        T_shape_g[g, r, 3, c] = T_frame_shape[s, 3, c]
    x, y, z = centre_shape[s, 0], centre_shape[s, 1], centre_shape[s, 2]
    cx = T_shape_g[g, r, 0, 0] * x + T_shape_g[g, r, 0, 1] * y + T_shape_g[g, r, 0, 2] * z + T_shape_g[g, r, 0, 3]
    cy = T_shape_g[g, r, 1, 0] * x + T_shape_g[g, r, 1, 1] * y + T_shape_g[g, r, 1, 2] * z + T_shape_g[g, r, 1, 3]
    cz = T_shape_g[g, r, 2, 0] * x + T_shape_g[g, r, 2, 1] * y + T_shape_g[g, r, 2, 2] * z + T_shape_g[g, r, 2, 3]
    centre_g[g, r, 0], centre_g[g, r, 1], centre_g[g, r, 2] = cx, cy, cz
    rad = radius[s]
    for j in range(adq.shape[0]):
        lever_g[g, r, j] = 0.0
        if adq[j] == 0.0 or prismatic[j]:
            continue
        J = child_link[j]
        ux, uy, uz = axis[j, 0], axis[j, 1], axis[j, 2]
        ox, oy, oz = T_link_g[g, J, 0, 3], T_link_g[g, J, 1, 3], T_link_g[g, J, 2, 3]
        ax = T_link_g[g, J, 0, 0] * ux + T_link_g[g, J, 0, 1] * uy + T_link_g[g, J, 0, 2] * uz
        ay = T_link_g[g, J, 1, 0] * ux + T_link_g[g, J, 1, 1] * uy + T_link_g[g, J, 1, 2] * uz
        az = T_link_g[g, J, 2, 0] * ux + T_link_g[g, J, 2, 1] * uy + T_link_g[g, J, 2, 2] * uz
        off = off_axis_sq(ox, oy, oz, ax, ay, az, cx, cy, cz)
        lever_g[g, r, j] = (np.sqrt(off) if off > 0.0 else 0.0) + rad


@njit(cache=True)
def off_grid_tables(n_links, n_mov):
    """The tables :func:`measure_shape` fills for one time off the cache's grid, in the cache's
    form with one time: the link poses (1, L, 4, 4) and the pair's two shapes (slot 0 shape a,
    1 shape b): poses (1, 2, 4, 4), sphere centres (1, 2, 3) and levers (1, 2, M)."""
    return (np.empty((1, n_links, 4, 4)), np.empty((1, 2, 4, 4)), np.empty((1, 2, 3)),
            np.empty((1, 2, max(n_mov, 1))))


@njit(cache=True, inline="always")
def pose_into(out, s, r, g, T_frame_shape, T_shape_g, T_free):
    """out (4, 4) = shape s's pose: a world object's (r < 0: ``T_frame_shape``), its cached one
    at cache time g (slot r: ``T_shape_g``) or, off the grid (g < 0), ``T_free``'s (which may
    be out itself)."""
    for i in range(4):
        for c in range(4):
            if r < 0:
                out[i, c] = T_frame_shape[s, i, c]
            elif g >= 0:
                out[i, c] = T_shape_g[g, r, i, c]
            else:
                out[i, c] = T_free[i, c]


@njit(cache=True, inline="always")
def _side_bound(c, Tp, s, p, radius, kind, params):
    """:func:`advancement.primitive_bound`'s side bound from shape s's posed bounding sphere
    centre ``c`` (3,) to primitive p (pose Tp): -inf when the centre lies in p's solid."""
    wx, wy, wz = c[0] - Tp[0, 3], c[1] - Tp[1, 3], c[2] - Tp[2, 3]
    x = Tp[0, 0] * wx + Tp[1, 0] * wy + Tp[2, 0] * wz
    y = Tp[0, 1] * wx + Tp[1, 1] * wy + Tp[2, 1] * wz
    z = Tp[0, 2] * wx + Tp[1, 2] * wy + Tp[2, 2] * wz
    outside = solid_distance(kind[p], params[p], x, y, z)
    if outside > 0.0:
        return outside - radius[s]
    return -np.inf


@njit(cache=True, inline="always")
def centre_bound(ca, cb, Ta, Tb, a, b, radius, kind, params):
    """:func:`advancement.primitive_bound` of shapes a and b from their posed bounding sphere
    centres ``ca``, ``cb`` (3,) and poses Ta, Tb."""
    dx, dy, dz = ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2]
    d = np.sqrt(dx * dx + dy * dy + dz * dz) - radius[a] - radius[b]
    if not by_spheres(kind[b]):
        d = max(d, _side_bound(ca, Tb, a, b, radius, kind, params))
    elif not by_spheres(kind[a]):
        d = max(d, _side_bound(cb, Ta, b, a, radius, kind, params))
    return d


@njit(cache=True)
def snapped(t, h, reserve):
    """The end of a step of length h > 0 from t taken on a bound that leaves ``reserve`` metres:
    the grid time below ``t + h`` when ``reserve >= SNAP_GAP_M`` and that keeps at least
    ``SNAP_KEEP`` of the step, else ``t + h`` (never more than ``t + h``)."""
    end = t + h
    if end >= 1.0 or reserve < SNAP_GAP_M:                 # past the motion's end: the step is the pair's last
        return end
    g = np.floor(end * GRID) / GRID
    if g - t >= SNAP_KEEP * h and g <= end:
        return g
    return end


@njit(cache=True)
def grid_index(t):
    """g when t is the grid time g / GRID in [0, 1], else -1."""
    if t < 0.0 or t > 1.0:
        return -1
    g = int(np.floor(t * GRID))
    return g if g / GRID == t else -1


@njit(cache=True)
def cache_index(t):
    """g when t is the cache time g / CACHE_GRID in [0, 1], else -1."""
    if t < 0.0 or t > 1.0:
        return -1
    g = int(np.floor(t * CACHE_GRID))
    return g if g / CACHE_GRID == t else -1


@njit(cache=True)
def shape_levers(T_link, T, s, speed, out):
    """out (M,): shape s's (pose T (4, 4)) lever about each revolute joint the motion moves:
    its bounding sphere's (:func:`advancement.sphere_lever`); 0 for prismatic and still
    joints. Not the smaller of that and the bounding box corners' farthest distance, as
    :func:`advancement.pair_speed` takes it: on the Panda's benchmark edges the corners
    cost a third of :func:`certify_dyadic`'s time and saved under 1% of its evaluations."""
    prismatic, adq = speed.prismatic, speed.adq
    cx, cy, cz = posed_centre(T, speed.centre_shape, s)
    for j in range(adq.shape[0]):
        out[j] = 0.0
        if adq[j] == 0.0 or prismatic[j]:
            continue
        out[j] = sphere_lever(T_link, j, speed, cx, cy, cz, speed.radius[s])


@njit(cache=True)
def speed_from_levers(q, a, b, lever_a, lever_b, speed):
    """(V0, V1) of pair q from its shapes' levers (:func:`shape_levers`): the sums of
    :func:`advancement.pair_speed`, over the joints that move one body and not the other."""
    W_a, W_b, prismatic, adq, D_below = speed.W_a, speed.W_b, speed.prismatic, speed.adq, speed.D_below
    v0 = 0.0
    v1 = 0.0
    for side in range(2):
        s = a if side == 0 else b
        W = W_a if side == 0 else W_b
        lever = lever_a if side == 0 else lever_b
        for j in range(adq.shape[0]):
            if W[q, j] == 0.0 or adq[j] == 0.0:
                continue
            if prismatic[j]:
                v0 += adq[j]
                continue
            v0 += adq[j] * lever[j]
            v1 += adq[j] * D_below[s, j]
    return v0, v1


@njit(cache=True)
def speeds_and_centres(pairs, shapes, speed):
    """What the ``*_with`` kernels take that their plain forms make from their arguments (plain
    tuples of :class:`PairArrays`, :class:`ShapeArrays`, :class:`SpeedArrays`): the pairs'
    :func:`pair_speeds` as a plain tuple and the world objects' :func:`fixed_centres`."""
    ps = pair_speeds(PairArrays(*pairs).pair_a, PairArrays(*pairs).pair_b, SpeedArrays(*speed))
    fixed_c = fixed_centres(ShapeArrays(*shapes).shape_link, ShapeArrays(*shapes).T_frame_shape,
                            SpeedArrays(*speed).centre_shape)
    return (ps.w_a, ps.w_b, ps.v0_fixed, ps.v1), fixed_c


@njit(cache=True)
def advance_on_grid(q0, dq, limit, t, live, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track,
                    tracking, cache, narrow):
    """:func:`advancement.advance` (same arguments, returns, outputs and records) with steps
    snapped to the grid (:func:`snapped`), the poses and levers of grid times kept in
    ``cache`` (a :class:`GridCache` as a plain tuple, kept across the calls of one search),
    and a narrow phase of its own (``narrow``, a :class:`NarrowArrays` as a plain tuple): a
    pair that would go to the caller first gets its convex solids' distance bound, and steps
    on it here when that bound shows it apart (above 0 and the padding + tolerance; for hulls
    also at least ``hull_accept`` beyond the padding or enough to reach the limit, or leaving
    at least the pair's last measured mesh-to-hull gap in reserve). Only
    pairs that may touch, or whose hulls come too near, go to the caller. A GJK call counts
    as one more bound evaluation in ``used`` (it costs about as much)."""
    speeds, fixed_c = speeds_and_centres(pairs, shapes, speed)
    return advance_on_grid_with(q0, dq, limit, t, live, p, pairs, robot, shapes, speed, covers, tol, accept, out,
                                budget, track, tracking, cache, narrow, speeds, fixed_c)


@njit(cache=True)
def advance_on_grid_with(q0, dq, limit, t, live, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget,
                         track, tracking, cache, narrow, speeds, fixed_c):
    """:func:`advance_on_grid` with the pairs' :func:`pair_speeds` (``speeds``, as a plain tuple)
    and the world objects' :func:`fixed_centres` ``fixed_c`` made by the caller."""
    pairs, robot, shapes = PairArrays(*pairs), RobotArrays(*robot), ShapeArrays(*shapes)
    speed, covers, out = SpeedArrays(*speed), CoverArrays(*covers), AdvanceOutputs(*out)
    cache = GridCache(*cache)
    narrow = NarrowArrays(*narrow)
    convex = ConvexArrays(*narrow.convex)
    route, warm, gjk_calls = narrow.route, narrow.warm, narrow.calls
    gjk_eps, hull_accept, hull_gap = narrow.eps, narrow.hull_accept, narrow.hull_gap
    track = track_rows(track)
    pair_a, pair_b, margins = pairs.pair_a, pairs.pair_b, pairs.margins
    known, status, steps = out.known, out.status, out.steps
    n = live.shape[0]
    count = 0
    positions = np.empty(q0.shape[0])
    values = np.empty(robot.mimic_matrix.shape[0])
    n_links = out.T_link.shape[1]
    n_mov = speed.adq.shape[0]
    free, off_T, off_c, off_lever = off_grid_tables(n_links, n_mov)
    T_free, T_a, T_b, c_a, c_b = free[0], off_T[0, 0], off_T[0, 1], off_c[0, 0], off_c[0, 1]
    lever_a, lever_b = off_lever[0, 0], off_lever[0, 1]
    work = cover_scratch(covers.cover_start)
    free_t = np.nan                                # T_free holds the poses at free_t
    w_a, w_b, v0_fixed, v1_pair = speeds
    shape_link, T_frame_shape, slot = shapes.shape_link, shapes.T_frame_shape, cache.slot
    centre_shape, radius, prismatic, adq, child_link, axis = (speed.centre_shape, speed.radius, speed.prismatic,
                                                               speed.adq, speed.child_link, speed.axis)
    # plain local arrays in the loop, as in certify_dyadic
    posed, T_link_g, measured, lever_g, T_shape_g, centre_g = (cache.posed, cache.T_link, cache.measured,
                                                               cache.lever, cache.T_shape, cache.centre)
    kind, params = covers.kind, covers.params
    Tp = np.empty((4, 4))                           # the primitive's pose for the side bound
    capacity = out.V0.shape[0]
    used = 0
    for j in range(n):
        if used >= budget or count >= capacity:
            return count, j, used
        k = live[j]
        q = p[k]
        a = pair_a[q]
        b = pair_b[q]
        m = margins[q]
        status[j] = DONE
        keeps_apart = m + 0.5 * tol > 0.0
        ra, rb = slot[a], slot[b]
        side = 1 if not by_spheres(kind[b]) else (0 if not by_spheres(kind[a]) else -1)   # the primitive's side
        while t[k] <= limit:
            if used >= budget:
                return count, j, used          # item j is still live, at the time reached
            used += 1
            steps[q] += 1
            tk = t[k]
            g = cache_index(tk)
            if g >= 0:
                if not posed[g]:
                    for joint in range(q0.shape[0]):
                        positions[joint] = q0[joint] + tk * dq[joint]
                    rigid_fk(positions, robot, n_links, values, T_link_g[g])
                    posed[g] = True
                if ra >= 0 and not measured[g, ra]:
                    measure_shape(T_link_g, g, a, ra, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, T_shape_g, centre_g, lever_g)
                    measured[g, ra] = True
                if rb >= 0 and not measured[g, rb]:
                    measure_shape(T_link_g, g, b, rb, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, T_shape_g, centre_g, lever_g)
                    measured[g, rb] = True
            else:
                if tk != free_t:
                    for joint in range(q0.shape[0]):
                        positions[joint] = q0[joint] + tk * dq[joint]
                    rigid_fk(positions, robot, n_links, values, T_free)
                    free_t = tk
                if ra >= 0:
                    measure_shape(free, 0, a, 0, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, off_T, off_c, off_lever)
                if rb >= 0:
                    measure_shape(free, 0, b, 1, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, off_T, off_c, off_lever)
            v0, v1 = v0_fixed[q], v1_pair[q]
            if ra >= 0:
                if g >= 0:
                    cax, cay, caz = centre_g[g, ra, 0], centre_g[g, ra, 1], centre_g[g, ra, 2]
                    for e in range(n_mov):
                        v0 += w_a[q, e] * lever_g[g, ra, e]
                else:
                    cax, cay, caz = c_a[0], c_a[1], c_a[2]
                    for e in range(n_mov):
                        v0 += w_a[q, e] * lever_a[e]
            else:
                cax, cay, caz = fixed_c[a, 0], fixed_c[a, 1], fixed_c[a, 2]
            if rb >= 0:
                if g >= 0:
                    cbx, cby, cbz = centre_g[g, rb, 0], centre_g[g, rb, 1], centre_g[g, rb, 2]
                    for e in range(n_mov):
                        v0 += w_b[q, e] * lever_g[g, rb, e]
                else:
                    cbx, cby, cbz = c_b[0], c_b[1], c_b[2]
                    for e in range(n_mov):
                        v0 += w_b[q, e] * lever_b[e]
            else:
                cbx, cby, cbz = fixed_c[b, 0], fixed_c[b, 1], fixed_c[b, 2]
            rest = 1.0 - tk
            enough = m + tol + rest * (v0 + 0.5 * rest * v1)
            dx, dy, dz = cax - cbx, cay - cby, caz - cbz
            d = np.sqrt(dx * dx + dy * dy + dz * dz) - radius[a] - radius[b]
            if side >= 0:                  # a primitive: the other's bounding sphere against its solid
                s_p = b if side == 1 else a
                r_p = rb if side == 1 else ra
                s_o = a if side == 1 else b
                ox, oy, oz = (cax, cay, caz) if side == 1 else (cbx, cby, cbz)
                for e in range(4):          # the primitive's pose, copied in the loop: a helper taking
                    for c in range(4):      # these arrays costs reference counts on each of them per call
                        if r_p < 0:
                            Tp[e, c] = T_frame_shape[s_p, e, c]
                        elif g >= 0:
                            Tp[e, c] = T_shape_g[g, r_p, e, c]
                        elif side == 0:
                            Tp[e, c] = T_a[e, c]
                        else:
                            Tp[e, c] = T_b[e, c]
                wx, wy, wz = ox - Tp[0, 3], oy - Tp[1, 3], oz - Tp[2, 3]
                outside = solid_distance_of(kind[s_p], params[s_p, 0], params[s_p, 1], params[s_p, 2],
                                            Tp[0, 0] * wx + Tp[1, 0] * wy + Tp[2, 0] * wz,
                                            Tp[0, 1] * wx + Tp[1, 1] * wy + Tp[2, 1] * wz,
                                            Tp[0, 2] * wx + Tp[1, 2] * wy + Tp[2, 2] * wz)
                if outside > 0.0:
                    d = max(d, outside - radius[s_o])
            near = d < enough and d < m + tol + accept + max(COVER_GATE_M, 0.0)
            if near:                       # the poses of the pair for the covers, GJK and the hand-over
                pose_into(T_a, a, ra, g, T_frame_shape, T_shape_g, T_a)
                pose_into(T_b, b, rb, g, T_frame_shape, T_shape_g, T_b)
            if d < enough and keeps_apart and d < m + tol + accept + COVER_GATE_M:
                d = raised_by_covers(a, b, T_a, T_b, d, enough, known[k], covers, shapes, centre_shape, work)
            if d < enough and d < m + tol + accept:
                r = route[q]
                apart = False
                if r != ROUTE_NONE:
                    used += 1
                    gjk_calls[q] += 1
                    bound = lower_bound(convex, a, T_a, b, T_b, warm[q], gjk_eps, GJK_RELATIVE)
                    # hulls: far enough beyond the padding, or nearer but with meshes that were
                    # lately no farther apart than the hulls leave in reserve (a step on the hull
                    # at least half as long as on the mesh, for a fraction of its cost)
                    apart = bound > 0.0 and bound >= m + tol and (
                        r == ROUTE_CONVEX or bound >= min(enough, m + hull_accept)
                        or bound - m - 0.5 * tol >= hull_gap[q])
                    if apart:
                        d = bound
                if not apart:
                    status[j] = NEED
                    hand_over(out, count, j, v0, v1, T_a, T_b)
                    out.T_link[count] = T_link_g[g] if g >= 0 else T_free
                    count += 1
                    break
            if tracking:
                record_interval(track, k, tk, d, v0, v1)
            if v0 + v1 <= 0.0:
                if tracking:
                    track.tail[k] = d
                t[k] = np.inf
                break
            reserve = d - m - 0.5 * tol
            t[k] = snapped(tk, step_length(reserve, v0, v1), reserve)
            known[k] = keeps_apart
            if tracking and t[k] > 1.0:
                track.tail[k] = d - rest * (v0 + 0.5 * rest * v1)
    return count, n, used


@njit(cache=True)
def certify_dyadic(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track, tracking,
                   cache, narrow, seq, seq_n):
    """Certify each pair p[k] whose time t[k] is 0 over a prefix of the motion by halving:
    returns the bound evaluations made (a GJK call counts as one more), at most about
    ``budget``.

    A pair is evaluated at t = 0 and t = 1; an interval ``[ta, tb]``
    whose two ends' bounds hold the distance above the padding + tolerance / 2 all through
    it (:func:`advancement.interval_bound`, the bound from both ends) is certified, and the
    next one starts at tb; one that is not is halved (its midpoint evaluated), down to
    intervals of ``1 / CACHE_GRID``. So every evaluation lands on the cache's grid and is
    shared by all pairs there, and a far pair is evaluated about half as often as by
    forward steps, which use the bound from one end only. A pair whose midpoint needs the
    caller's narrow phase, comes within the tolerance, or whose shortest interval does not
    certify, stops at the end ``ta`` of its certified prefix: ``t[k] = ta`` (``known[k]``
    set when ta > 0), for :func:`advance_on_grid` to go on from there. A pair certified up
    to t = 1 gets ``t[k] = inf``. The certified prefix's evaluations (time, distance bound,
    speed bounds) are kept in ``seq[:4, k, :seq_n[k]]`` ((6, K, C): at most C, where the
    prefix stops), for :func:`dyadic_clearance`, and each interval's bound and its time
    (:func:`advancement.interval_bound`, from its two ends) in ``seq[4:, k, :seq_n[k] - 1]``; with ``tracking`` the track's last
    evaluation is the prefix's end (the forward steps close their intervals from there; the
    tail of a finished pair is its bound at t = 1). A pair with a non-positive padding +
    tolerance / 2 is left to the forward steps (the covers' bound needs a pair known to be
    apart). Packs as :func:`advance_on_grid` takes them.

    An evaluation of pair q at time tk gives d, a lower bound of its signed distance (the
    bounding spheres, and a primitive's solid against the other's sphere; the sphere covers
    when those come within ``COVER_GATE_M`` of the narrow phase's threshold, taken as the
    bodies' distance only if the pair was apart at its last certified time or neither body
    can hold the other; then :func:`gjk.lower_bound` when within ``accept``), and v0, v1, its
    speed bounds there (:class:`PairSpeeds` and the shapes' cached levers); it needs the
    caller's narrow phase when the pair may touch or its hulls come too near. The covers and
    GJK are skipped when the spheres alone leave the distance the pair can close over the
    interval the evaluation bounds. :func:`advance_on_grid` and :func:`dyadic_clearance`
    evaluate in the same lines, written out in each loop and reading plain local arrays
    only: a helper call, or a tuple's field or an array view taken per evaluation, costs
    reference counts on its arrays, and those cost more than the evaluation (a compiled
    helper taking the loop's arrays made :func:`certify_dyadic` 2.4x slower; the written-out
    loop reading plain arrays took it from 223 to 177 us per bench edge)."""
    speeds, fixed_c = speeds_and_centres(pairs, shapes, speed)
    return certify_dyadic_with(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track,
                               tracking, cache, narrow, seq, seq_n, speeds, fixed_c)


@njit(cache=True)
def certify_dyadic_with(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track, tracking,
                        cache, narrow, seq, seq_n, speeds, fixed_c):
    """:func:`certify_dyadic` with the pairs' :func:`pair_speeds` (``speeds``, as a plain tuple)
    and the world objects' :func:`fixed_centres` ``fixed_c`` made by the caller."""
    pairs, robot, shapes = PairArrays(*pairs), RobotArrays(*robot), ShapeArrays(*shapes)
    speed, covers, out = SpeedArrays(*speed), CoverArrays(*covers), AdvanceOutputs(*out)
    cache = GridCache(*cache)
    narrow = NarrowArrays(*narrow)
    convex = ConvexArrays(*narrow.convex)
    route, warm, gjk_calls = narrow.route, narrow.warm, narrow.calls
    gjk_eps, hull_accept, hull_gap = narrow.eps, narrow.hull_accept, narrow.hull_gap
    track = track_rows(track)
    known, steps = out.known, out.steps
    n_links = robot.link_parent.shape[0]
    n_mov = speed.adq.shape[0]
    positions = np.empty(q0.shape[0])
    values = np.empty(robot.mimic_matrix.shape[0])
    free, off_T, off_c, off_lever = off_grid_tables(n_links, n_mov)
    T_free, T_a, T_b, c_a, c_b = free[0], off_T[0, 0], off_T[0, 1], off_c[0, 0], off_c[0, 1]
    lever_a, lever_b = off_lever[0, 0], off_lever[0, 1]
    work = cover_scratch(covers.cover_start)
    free_t = np.nan
    w_a, w_b, v0_fixed, v1_pair = speeds
    shape_link, T_frame_shape, slot = shapes.shape_link, shapes.T_frame_shape, cache.slot
    centre_shape, radius, prismatic, adq, child_link, axis = (speed.centre_shape, speed.radius, speed.prismatic,
                                                               speed.adq, speed.child_link, speed.axis)
    # the loop reads plain local arrays only: a tuple's field or an array view made per
    # evaluation costs reference counts that cost more than the evaluation's arithmetic
    posed, T_link_g, measured, lever_g, T_shape_g, centre_g = (cache.posed, cache.T_link, cache.measured,
                                                               cache.lever, cache.T_shape, cache.centre)
    pair_a, pair_b, margins, v_max = pairs.pair_a, pairs.pair_b, pairs.margins, pairs.v_max
    kind, params = covers.kind, covers.params
    Tp = np.empty((4, 4))                           # the primitive's pose for the side bound
    depth = CACHE_LEVELS + 2
    st_t, st_d, st_v0, st_v1 = np.empty(depth), np.empty(depth), np.empty(depth), np.empty(depth)
    capacity = seq.shape[2]
    shortest = 1.0 / CACHE_GRID
    used = 0
    for k in range(p.shape[0]):
        if used >= budget:
            break
        if t[k] != 0.0:
            continue
        q = p[k]
        a = pair_a[q]
        b = pair_b[q]
        m = margins[q]
        if not m + 0.5 * tol > 0.0:
            continue
        ra, rb = slot[a], slot[b]
        side = 1 if not by_spheres(kind[b]) else (0 if not by_spheres(kind[a]) else -1)   # the primitive's side
        phase = 0                  # evaluating t = 0, then t = 1, then midpoints
        tk, horizon, known_k = 0.0, 1.0, known[k]
        ta, da, va0, va1 = 0.0, 0.0, 0.0, 0.0
        top = 0
        kept = 0
        while True:
            # ----- the evaluation of pair q at tk -----
            used += 1
            steps[q] += 1
            g = cache_index(tk)
            if g >= 0:
                if not posed[g]:
                    for joint in range(q0.shape[0]):
                        positions[joint] = q0[joint] + tk * dq[joint]
                    rigid_fk(positions, robot, n_links, values, T_link_g[g])
                    posed[g] = True
                if ra >= 0 and not measured[g, ra]:
                    measure_shape(T_link_g, g, a, ra, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, T_shape_g, centre_g, lever_g)
                    measured[g, ra] = True
                if rb >= 0 and not measured[g, rb]:
                    measure_shape(T_link_g, g, b, rb, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, T_shape_g, centre_g, lever_g)
                    measured[g, rb] = True
            else:
                if tk != free_t:
                    for joint in range(q0.shape[0]):
                        positions[joint] = q0[joint] + tk * dq[joint]
                    rigid_fk(positions, robot, n_links, values, T_free)
                    free_t = tk
                if ra >= 0:
                    measure_shape(free, 0, a, 0, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, off_T, off_c, off_lever)
                if rb >= 0:
                    measure_shape(free, 0, b, 1, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                                  adq, child_link, axis, off_T, off_c, off_lever)
            v0, v1 = v0_fixed[q], v1_pair[q]
            if ra >= 0:
                if g >= 0:
                    cax, cay, caz = centre_g[g, ra, 0], centre_g[g, ra, 1], centre_g[g, ra, 2]
                    for e in range(n_mov):
                        v0 += w_a[q, e] * lever_g[g, ra, e]
                else:
                    cax, cay, caz = c_a[0], c_a[1], c_a[2]
                    for e in range(n_mov):
                        v0 += w_a[q, e] * lever_a[e]
            else:
                cax, cay, caz = fixed_c[a, 0], fixed_c[a, 1], fixed_c[a, 2]
            if rb >= 0:
                if g >= 0:
                    cbx, cby, cbz = centre_g[g, rb, 0], centre_g[g, rb, 1], centre_g[g, rb, 2]
                    for e in range(n_mov):
                        v0 += w_b[q, e] * lever_g[g, rb, e]
                else:
                    cbx, cby, cbz = c_b[0], c_b[1], c_b[2]
                    for e in range(n_mov):
                        v0 += w_b[q, e] * lever_b[e]
            else:
                cbx, cby, cbz = fixed_c[b, 0], fixed_c[b, 1], fixed_c[b, 2]
            enough = m + tol + horizon * min(v0 + 0.5 * horizon * v1, v_max[q])
            dx, dy, dz = cax - cbx, cay - cby, caz - cbz
            d = np.sqrt(dx * dx + dy * dy + dz * dz) - radius[a] - radius[b]
            if side >= 0:                  # a primitive: the other's bounding sphere against its solid
                s_p = b if side == 1 else a
                r_p = rb if side == 1 else ra
                s_o = a if side == 1 else b
                ox, oy, oz = (cax, cay, caz) if side == 1 else (cbx, cby, cbz)
                for e in range(4):          # the primitive's pose, copied in the loop: a helper taking
                    for c in range(4):      # these arrays costs reference counts on each of them per call
                        if r_p < 0:
                            Tp[e, c] = T_frame_shape[s_p, e, c]
                        elif g >= 0:
                            Tp[e, c] = T_shape_g[g, r_p, e, c]
                        elif side == 0:
                            Tp[e, c] = T_a[e, c]
                        else:
                            Tp[e, c] = T_b[e, c]
                wx, wy, wz = ox - Tp[0, 3], oy - Tp[1, 3], oz - Tp[2, 3]
                outside = solid_distance_of(kind[s_p], params[s_p, 0], params[s_p, 1], params[s_p, 2],
                                            Tp[0, 0] * wx + Tp[1, 0] * wy + Tp[2, 0] * wz,
                                            Tp[0, 1] * wx + Tp[1, 1] * wy + Tp[2, 1] * wz,
                                            Tp[0, 2] * wx + Tp[1, 2] * wy + Tp[2, 2] * wz)
                if outside > 0.0:
                    d = max(d, outside - radius[s_o])
            r = route[q]
            measure = r != ROUTE_NONE and d < enough and d < m + tol + accept + GJK_GATE_M
            near = measure or (d < enough and d < m + tol + accept + max(COVER_GATE_M, 0.0))
            if near:                       # the poses of the pair for the covers and GJK
                pose_into(T_a, a, ra, g, T_frame_shape, T_shape_g, T_a)
                pose_into(T_b, b, rb, g, T_frame_shape, T_shape_g, T_b)
            if not measure and d < enough and d < m + tol + accept + COVER_GATE_M:
                d = raised_by_covers(a, b, T_a, T_b, d, enough, known_k, covers, shapes, centre_shape, work)
            need = False
            if measure or (d < enough and d < m + tol + accept):
                apart = False
                if r != ROUTE_NONE:
                    used += 1
                    gjk_calls[q] += 1
                    bound = lower_bound(convex, a, T_a, b, T_b, warm[q], gjk_eps, GJK_RELATIVE)
                    apart = bound > 0.0 and bound >= m + tol and (
                        r == ROUTE_CONVEX or bound >= min(enough, m + hull_accept)
                        or bound - m - 0.5 * tol >= hull_gap[q])
                    if apart:
                        d = max(d, bound)
                need = not apart and d < m + tol + accept
            # ----- what the evaluation decides -----
            if need or (phase != 1 and d < m + tol):
                break
            if phase == 0:
                da, va0, va1 = d, v0, v1
                seq[0, k, 0], seq[1, k, 0], seq[2, k, 0], seq[3, k, 0] = 0.0, d, v0, v1
                kept = 1
                phase, tk, horizon, known_k = 1, 1.0, 1.0, True
                continue
            phase = 2
            st_t[top], st_d[top], st_v0[top], st_v1[top] = tk, d, v0, v1
            top += 1
            while top > 0 and kept < capacity:        # certify what the ends now hold
                tb, db, vb0, vb1 = st_t[top - 1], st_d[top - 1], st_v0[top - 1], st_v1[top - 1]
                low, low_t = interval_bound(ta, da, va0, va1, tb, db, vb0, vb1, v_max[q])
                if not (low >= m + 0.5 * tol and db >= m + tol):
                    break
                seq[0, k, kept], seq[1, k, kept], seq[2, k, kept], seq[3, k, kept] = tb, db, vb0, vb1
                seq[4, k, kept - 1], seq[5, k, kept - 1] = low, low_t
                kept += 1
                top -= 1
                ta, da, va0, va1 = tb, db, vb0, vb1
            if top == 0 or kept >= capacity:
                break
            h = st_t[top - 1] - ta
            if h <= shortest or top >= depth or used >= budget:
                break
            tk, horizon = ta + 0.5 * h, 0.5 * h
        if kept == 0:
            continue
        seq_n[k] = kept
        if tracking:                                   # the forward steps go on from the prefix's end
            track.last_t[k], track.last_d[k], track.last_v0[k], track.last_v1[k] = ta, da, va0, va1
        if ta == 1.0:                                  # certified up to t = 1
            t[k] = np.inf
            if tracking:
                track.tail[k] = da
        else:
            t[k] = ta
            if ta > 0.0:
                known[k] = True
    return used


@njit(cache=True, inline="always")
def _interval_at(seq, k, i, m, v_max):
    """(bound - m, its time) of pair k's interval i: [seq t_i, t_i+1] (:func:`advancement.interval_bound`,
    speeds no larger than ``v_max``)."""
    bound, tb = interval_bound(seq[0, k, i], seq[1, k, i], seq[2, k, i], seq[3, k, i],
                               seq[0, k, i + 1], seq[1, k, i + 1], seq[2, k, i + 1], seq[3, k, i + 1], v_max)
    return bound - m, tb


@njit(cache=True, inline="always")
def _lowest(bound_m, bound_t, k, n):
    """(value, time, index) of the lowest of pair k's first n interval bounds (inf, NaN, -1: none)."""
    best, best_t, best_i = np.inf, np.nan, -1
    for i in range(n):
        if bound_m[k, i] < best:
            best, best_t, best_i = bound_m[k, i], bound_t[k, i], i
    return best, best_t, best_i


@njit(cache=True)
def dyadic_clearance(q0, dq, p, pairs, robot, shapes, speed, covers, tol, accept, cache, narrow, seq, seq_n, floor,
                     evaluations):
    """The smallest clearance (bound of distance - padding) over the prefixes :func:`certify_dyadic`
    certified, ``(k, value, time, used)``: the pair k (-1 when none), the value, where it is
    reached and the evaluations made.

    An interval certified by halving only had to keep the pair above the padding +
    tolerance / 2, so its bound can be far below the pair's real clearance. While the lowest
    prefix interval is below ``floor`` (the clearance the forward steps certified), it is
    split once more where its bound is reached (the two cones' crossing, kept at least
    ``REFINE_CLAMP`` of the interval from either end: evaluating there raises the lowest
    point of the bound itself, where a midpoint may fall beside it), moved to the nearest
    cache time when that keeps the same distance from the ends (its poses and levers then
    shared with the other pairs there: on the bench edges the refinements took 0.87x the
    time, for clearances a median 1.000x, p10 0.993x, p90 1.003x those at the crossing),
    down to intervals of ``REFINE_SHORTEST`` and at most ``evaluations`` times; so
    the answer is as good as the forward steps' wherever it can be the smallest. On the 200
    valid edges of ``bench_motion.py`` the crossing gave bounds a median 0.204x the smallest
    distance sampled every 1/200 of the motion (p10 0.015x), the midpoint 0.196x (p10
    0.011x, and 2 bounds at or below 0), for the same 64 evaluations."""
    pairs, robot, shapes = PairArrays(*pairs), RobotArrays(*robot), ShapeArrays(*shapes)
    speed, covers = SpeedArrays(*speed), CoverArrays(*covers)
    cache = GridCache(*cache)
    narrow = NarrowArrays(*narrow)
    convex = ConvexArrays(*narrow.convex)
    route, warm, gjk_calls = narrow.route, narrow.warm, narrow.calls
    gjk_eps, hull_accept, hull_gap = narrow.eps, narrow.hull_accept, narrow.hull_gap
    n_links = robot.link_parent.shape[0]
    n_mov = speed.adq.shape[0]
    positions = np.empty(q0.shape[0])
    values = np.empty(robot.mimic_matrix.shape[0])
    free, off_T, off_c, off_lever = off_grid_tables(n_links, n_mov)
    T_free, T_a, T_b, c_a, c_b = free[0], off_T[0, 0], off_T[0, 1], off_c[0, 0], off_c[0, 1]
    lever_a, lever_b = off_lever[0, 0], off_lever[0, 1]
    work = cover_scratch(covers.cover_start)
    free_t = np.nan
    ps = pair_speeds(pairs.pair_a, pairs.pair_b, speed)
    w_a, w_b, v0_fixed, v1_pair = ps.w_a, ps.w_b, ps.v0_fixed, ps.v1
    fixed_c = fixed_centres(shapes.shape_link, shapes.T_frame_shape, speed.centre_shape)
    shape_link, T_frame_shape, slot = shapes.shape_link, shapes.T_frame_shape, cache.slot
    centre_shape, radius, prismatic, adq, child_link, axis = (speed.centre_shape, speed.radius, speed.prismatic,
                                                               speed.adq, speed.child_link, speed.axis)
    posed, T_link_g, measured, lever_g, T_shape_g, centre_g = (cache.posed, cache.T_link, cache.measured,
                                                               cache.lever, cache.T_shape, cache.centre)
    kind, params = covers.kind, covers.params
    Tp = np.empty((4, 4))                           # the primitive's pose for the side bound
    n = p.shape[0]
    capacity = seq.shape[2]
    # per pair k and interval i (seq's points i, i + 1): its bound less the padding and where
    # it is reached; a refinement recomputes only the two intervals it makes
    bound_m, bound_t = np.full((n, max(capacity - 1, 1)), np.inf), np.full((n, max(capacity - 1, 1)), np.nan)
    low, low_t = np.full(n, np.inf), np.full(n, np.nan)
    low_i = np.full(n, -1)
    for k in range(n):                # the halving's interval bounds (seq rows 4, 5)
        m = pairs.margins[p[k]]
        for i in range(seq_n[k] - 1):
            bound_m[k, i], bound_t[k, i] = seq[4, k, i] - m, seq[5, k, i]
        low[k], low_t[k], low_i[k] = _lowest(bound_m, bound_t, k, seq_n[k] - 1)
    shortest = REFINE_SHORTEST
    used = 0
    while True:
        k = int(np.argmin(low)) if n else -1
        if k < 0 or low[k] >= floor or used >= evaluations:
            break
        i = low_i[k]
        ta, tb = seq[0, k, i], seq[0, k, i + 1]
        if tb - ta <= shortest or seq_n[k] >= capacity:
            break
        q = p[k]
        tm = min(max(low_t[k], ta + REFINE_CLAMP * (tb - ta)), tb - REFINE_CLAMP * (tb - ta))
        snap = np.floor(tm * CACHE_GRID + 0.5) / CACHE_GRID      # the cache time nearest: poses shared
        if ta + REFINE_CLAMP * (tb - ta) <= snap <= tb - REFINE_CLAMP * (tb - ta):
            tm = snap
        # ----- the evaluation of pair q at tk (certify_dyadic's, the pair known apart) -----
        tk, horizon, known_k = tm, max(tm - ta, tb - tm), True
        a, b, m = pairs.pair_a[q], pairs.pair_b[q], pairs.margins[q]
        ra, rb = slot[a], slot[b]
        side = 1 if not by_spheres(kind[b]) else (0 if not by_spheres(kind[a]) else -1)
        used += 1
        g = cache_index(tk)
        if g >= 0:
            if not posed[g]:
                for joint in range(q0.shape[0]):
                    positions[joint] = q0[joint] + tk * dq[joint]
                rigid_fk(positions, robot, n_links, values, T_link_g[g])
                posed[g] = True
            if ra >= 0 and not measured[g, ra]:
                measure_shape(T_link_g, g, a, ra, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                              adq, child_link, axis, T_shape_g, centre_g, lever_g)
                measured[g, ra] = True
            if rb >= 0 and not measured[g, rb]:
                measure_shape(T_link_g, g, b, rb, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                              adq, child_link, axis, T_shape_g, centre_g, lever_g)
                measured[g, rb] = True
        else:
            if tk != free_t:
                for joint in range(q0.shape[0]):
                    positions[joint] = q0[joint] + tk * dq[joint]
                rigid_fk(positions, robot, n_links, values, T_free)
                free_t = tk
            if ra >= 0:
                measure_shape(free, 0, a, 0, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                              adq, child_link, axis, off_T, off_c, off_lever)
            if rb >= 0:
                measure_shape(free, 0, b, 1, shape_link, T_frame_shape, centre_shape, radius, prismatic,
                              adq, child_link, axis, off_T, off_c, off_lever)
        v0, v1 = v0_fixed[q], v1_pair[q]
        if ra >= 0:
            if g >= 0:
                cax, cay, caz = centre_g[g, ra, 0], centre_g[g, ra, 1], centre_g[g, ra, 2]
                for e in range(n_mov):
                    v0 += w_a[q, e] * lever_g[g, ra, e]
            else:
                cax, cay, caz = c_a[0], c_a[1], c_a[2]
                for e in range(n_mov):
                    v0 += w_a[q, e] * lever_a[e]
        else:
            cax, cay, caz = fixed_c[a, 0], fixed_c[a, 1], fixed_c[a, 2]
        if rb >= 0:
            if g >= 0:
                cbx, cby, cbz = centre_g[g, rb, 0], centre_g[g, rb, 1], centre_g[g, rb, 2]
                for e in range(n_mov):
                    v0 += w_b[q, e] * lever_g[g, rb, e]
            else:
                cbx, cby, cbz = c_b[0], c_b[1], c_b[2]
                for e in range(n_mov):
                    v0 += w_b[q, e] * lever_b[e]
        else:
            cbx, cby, cbz = fixed_c[b, 0], fixed_c[b, 1], fixed_c[b, 2]
        enough = m + tol + horizon * min(v0 + 0.5 * horizon * v1, pairs.v_max[q])
        dx, dy, dz = cax - cbx, cay - cby, caz - cbz
        d = np.sqrt(dx * dx + dy * dy + dz * dz) - radius[a] - radius[b]
        if side >= 0:                  # a primitive: the other's bounding sphere against its solid
            s_p = b if side == 1 else a
            r_p = rb if side == 1 else ra
            s_o = a if side == 1 else b
            ox, oy, oz = (cax, cay, caz) if side == 1 else (cbx, cby, cbz)
            for e in range(4):          # the primitive's pose, copied in the loop: a helper taking
                for c in range(4):      # these arrays costs reference counts on each of them per call
                    if r_p < 0:
                        Tp[e, c] = T_frame_shape[s_p, e, c]
                    elif g >= 0:
                        Tp[e, c] = T_shape_g[g, r_p, e, c]
                    elif side == 0:
                        Tp[e, c] = T_a[e, c]
                    else:
                        Tp[e, c] = T_b[e, c]
            wx, wy, wz = ox - Tp[0, 3], oy - Tp[1, 3], oz - Tp[2, 3]
            outside = solid_distance_of(kind[s_p], params[s_p, 0], params[s_p, 1], params[s_p, 2],
                                        Tp[0, 0] * wx + Tp[1, 0] * wy + Tp[2, 0] * wz,
                                        Tp[0, 1] * wx + Tp[1, 1] * wy + Tp[2, 1] * wz,
                                        Tp[0, 2] * wx + Tp[1, 2] * wy + Tp[2, 2] * wz)
            if outside > 0.0:
                d = max(d, outside - radius[s_o])
        r = route[q]
        measure = r != ROUTE_NONE and d < enough and d < m + tol + accept + GJK_GATE_M
        near = measure or (d < enough and d < m + tol + accept + max(COVER_GATE_M, 0.0))
        if near:                       # the poses of the pair for the covers and GJK
            pose_into(T_a, a, ra, g, T_frame_shape, T_shape_g, T_a)
            pose_into(T_b, b, rb, g, T_frame_shape, T_shape_g, T_b)
        if not measure and d < enough and d < m + tol + accept + COVER_GATE_M:
            d = raised_by_covers(a, b, T_a, T_b, d, enough, known_k, covers, shapes, centre_shape, work)
        need = False
        if measure or (d < enough and d < m + tol + accept):
            apart = False
            if r != ROUTE_NONE:
                used += 1
                gjk_calls[q] += 1
                bound = lower_bound(convex, a, T_a, b, T_b, warm[q], gjk_eps, GJK_RELATIVE)
                apart = bound > 0.0 and bound >= m + tol and (
                    r == ROUTE_CONVEX or bound >= min(enough, m + hull_accept)
                    or bound - m - 0.5 * tol >= hull_gap[q])
                if apart:
                    d = max(d, bound)
            need = not apart and d < m + tol + accept
        if need:                 # only the narrow phase could say more: the interval stays as it is
            break
        for j in range(seq_n[k], i + 1, -1):
            for r in range(4):
                seq[r, k, j] = seq[r, k, j - 1]
        for j in range(seq_n[k] - 1, i + 1, -1):
            bound_m[k, j], bound_t[k, j] = bound_m[k, j - 1], bound_t[k, j - 1]
        seq[0, k, i + 1], seq[1, k, i + 1], seq[2, k, i + 1], seq[3, k, i + 1] = tm, d, v0, v1
        seq_n[k] += 1
        m = pairs.margins[q]
        bound_m[k, i], bound_t[k, i] = _interval_at(seq, k, i, m, pairs.v_max[q])
        bound_m[k, i + 1], bound_t[k, i + 1] = _interval_at(seq, k, i + 1, m, pairs.v_max[q])
        low[k], low_t[k], low_i[k] = _lowest(bound_m, bound_t, k, seq_n[k] - 1)
    if n == 0:
        return -1, np.inf, np.nan, used
    k = int(np.argmin(low))
    return k, low[k], low_t[k], used


@njit(cache=True)
def grid_clearance(q0, dq, p, pairs, robot, shapes, speed, covers, tol, accept, track, tail_t, end, cache, narrow,
                   seq, seq_n, evaluations):
    """:func:`advancement.smallest_clearance` and then :func:`dyadic_clearance` in one call (each
    compiled call costs about 10 us to take its arguments): ``(k, value, time, k2, value2,
    time2, used)``, smallest_clearance's answer and dyadic_clearance's, refining down to the
    former (``used`` -1 when it did not run). dyadic_clearance runs only when the smallest
    clearance does not need the caller's narrow phase at t = 1 first (its pair closed by a
    last step whose end bound is below its interval bounds: then the caller measures it and
    calls dyadic_clearance itself)."""
    k, best, time = smallest_clearance(q0 + dq, p, pairs, robot, shapes, speed, covers, tol, track, tail_t, end)
    if k >= 0 and not np.isnan(end[k, 0]) and best < track_rows(track).low[k] - PairArrays(*pairs).margins[p[k]]:
        return k, best, time, -1, np.inf, np.nan, -1
    k2, value, t_value, used = dyadic_clearance(q0, dq, p, pairs, robot, shapes, speed, covers, tol, accept, cache,
                                                narrow, seq, seq_n, best, evaluations)
    return k, best, time, k2, value, t_value, used


@njit(cache=True)
def certify_then_advance(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track, tracking,
                         cache, narrow, seq, seq_n, steps_left, call_steps, weight, tail_t, end, evaluations):
    """:func:`certify_dyadic` and then the first :func:`advance_on_grid` call (limit 1) over the
    pairs it left live, in one compiled call, and when that call finished every pair without
    the caller's narrow phase and with ``tracking``, :func:`grid_clearance` too (``tail_t``,
    ``end``, ``evaluations``: its arguments). Returns ``(used, live, count, stop,
    used_forward, clearance)``: certify_dyadic's evaluations, the live items (indices k with
    ``t[k] <= 1``), the forward call's returns (count -1 when its budget was spent: the
    caller goes on) and grid_clearance's returns (their last, ``used``, -2 when it did not
    run). The forward call's budget is the one the caller's meter would give after
    certify_dyadic's (``steps_left`` steps, at most ``call_steps`` per call, ``weight`` steps
    per evaluation: :meth:`limits.WorkMeter.call_budget`). Each compiled call costs about
    10 us to take its arguments: a valid motion's whole search is one call."""
    speeds, fixed_c = speeds_and_centres(pairs, shapes, speed)
    return certify_then_advance_with(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget,
                                     track, tracking, cache, narrow, seq, seq_n, steps_left, call_steps, weight,
                                     tail_t, end, evaluations, speeds, fixed_c)


@njit(cache=True)
def certify_then_advance_with(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track,
                              tracking, cache, narrow, seq, seq_n, steps_left, call_steps, weight, tail_t, end,
                              evaluations, speeds, fixed_c):
    """:func:`certify_then_advance` with the pairs' :func:`pair_speeds` (``speeds``, as a plain
    tuple) and the world objects' :func:`fixed_centres` ``fixed_c`` made by the caller (made
    once for both of its kernels)."""
    used = certify_dyadic_with(q0, dq, t, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track,
                               tracking, cache, narrow, seq, seq_n, speeds, fixed_c)
    live = np.flatnonzero(t <= 1.0)
    left = min(call_steps, steps_left - np.ceil(used * weight))
    forward = 0 if left <= 0 else max(1, int(left / weight))
    count, stop, used_forward = -1, 0, 0
    if live.shape[0] > 0 and forward > 0:
        count, stop, used_forward = advance_on_grid_with(q0, dq, 1.0, t, live, p, pairs, robot, shapes, speed,
                                                         covers, tol, accept, out, forward, track, tracking, cache,
                                                         narrow, speeds, fixed_c)
    clearance = (-1, np.inf, np.nan, -1, np.inf, np.nan, -2)
    if tracking and (live.shape[0] == 0 or (count == 0 and stop == live.shape[0])):
        clearance = grid_clearance(q0, dq, p, pairs, robot, shapes, speed, covers, tol, accept, track, tail_t, end,
                                   cache, narrow, seq, seq_n, evaluations)
    return used, live, count, stop, used_forward, clearance


# The fields of a OneCallPack: settle_in_one_call's arguments that stay the same from one
# motion to the next on one thread for one plan
ONE_CALL_FIELDS = ("tables", "terms", "pair_a", "pair_b", "robot", "shapes", "speed_static", "covers", "out", "track",
                   "cache", "convex", "route", "warm", "calls", "hull_gap", "seq", "seq_n", "t", "p", "tail_t", "end",
                   "fixed_c")


@structref.register
class OneCallPackType(types.StructRef):
    """The numba type of a :class:`OneCallPack`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class OneCallPack(structref.StructRefProxy):
    """What :func:`settle_in_one_call` takes that stays the same from one motion to the next (a
    plan's tables and packs and one thread's work arrays, :data:`ONE_CALL_FIELDS`) as one
    object, made by :func:`one_call_pack`. It holds the arrays themselves (writes in the
    kernel land in the caller's arrays). Passed as one argument it is typed and unboxed once
    per call instead of the some 80 arrays of its tuples: on the Panda's short free edges
    that took the call from about 30 to 25 us."""


structref.define_proxy(OneCallPack, OneCallPackType, list(ONE_CALL_FIELDS))


@njit(cache=True)
def one_call_pack(tables, terms, pair_a, pair_b, robot, shapes, speed_static, covers, out, track, cache, convex, route,
                  warm, calls, hull_gap, seq, seq_n, t, p, tail_t, end):
    """A :class:`OneCallPack` of these fields and the world objects' :func:`fixed_centres`
    (compiled and cached, so that making one compiles nothing in a process that has warmed up)."""
    fixed_c = fixed_centres(shapes[0], shapes[1], speed_static[5])
    return OneCallPack(tables, terms, pair_a, pair_b, robot, shapes, speed_static, covers, out, track, cache, convex,
                       route, warm, calls, hull_gap, seq, seq_n, t, p, tail_t, end, fixed_c)


@njit(cache=True)
def settle_in_one_call(pack, q0, q1, margins, tol, accept, budget, tracking, eps, hull_accept, steps_left, call_steps,
                       weight, evaluations):
    """:func:`certify_then_advance` of the motion q0 -> q1 (A,) from t = 0 over pairs ``p`` (every
    pair of the selection), with what depends on the motion made here: the speed tables
    (:func:`advancement.motion_speed_tables` of ``tables``: its arguments but q0, q1), the top
    speeds (:func:`advancement.summed_lever_speeds` of ``terms``: the selection's pair and flat
    index terms), and the work arrays reset as fresh ones (``t`` 0, ``seq_n`` 0, ``known``, the
    per-pair ``steps``, the GJK directions and calls, the hull gaps, the clearance ``track``
    (7, P) and the grid ``cache``'s flags), so that the search's first compiled call is one
    call of few arguments (``sweep.one_call_search``). ``pack``: a :class:`OneCallPack` of the
    arguments that stay (:data:`ONE_CALL_FIELDS`: ``tables``, ``terms``, the pairs' shapes,
    the robot, shape, speed (:class:`SpeedArrays` but ``adq`` and ``D_below``) and cover
    packs, the work arrays, the narrow phase's convex solids, routes, GJK directions, calls
    and hull gaps, and the pairs ``p``); ``margins`` the pairs' paddings, ``eps`` and
    ``hull_accept`` the :class:`NarrowArrays` scalars. Returns certify_then_advance's returns."""
    t, seq_n, out, track, cache = pack.t, pack.seq_n, pack.out, pack.track, pack.cache
    warm, calls, hull_gap = pack.warm, pack.calls, pack.hull_gap
    n_pairs = pack.p.shape[0]
    t[:] = 0.0
    seq_n[:] = 0
    known, steps = out[0], out[6]
    known[:] = False
    steps[:] = 0
    for k in range(n_pairs):
        track[0, k] = np.nan
        track[1, k] = 0.0
        track[2, k] = 0.0
        track[3, k] = 0.0
        track[4, k] = np.inf
        track[5, k] = 0.0
        track[6, k] = np.inf
        warm[k, 0] = 0.0
        warm[k, 1] = 0.0
        warm[k, 2] = 0.0
        calls[k] = 0
        hull_gap[k] = np.inf
    cache[0][:] = False
    cache[2][:] = False
    (mimic_matrix, mimic_offset, prismatic, chain, child_link, robot_shapes, robot_link, robot_A, robot_lever, below_T,
     n_shapes) = pack.tables
    adq, R_static, D_below, _ = motion_speed_tables(mimic_matrix, mimic_offset, prismatic, chain, child_link,
                                                    robot_shapes, robot_link, robot_A, robot_lever, below_T, n_shapes,
                                                    q0, q1)
    terms = pack.terms
    top = summed_lever_speeds(terms[0], terms[1], prismatic, R_static, adq, n_pairs)
    W_a, W_b, s_child, axis, s_prismatic, centre, radius, box_local = pack.speed_static
    speed = (W_a, W_b, s_child, axis, s_prismatic, centre, radius, box_local, adq, D_below)
    pairs = (pack.pair_a, pack.pair_b, margins, top)
    narrow = (pack.convex, pack.route, warm, eps, hull_accept, calls, hull_gap)
    speeds = pair_speeds(pack.pair_a, pack.pair_b, SpeedArrays(*speed))
    used, live, count, stop, used_forward, clearance = certify_then_advance_with(
        q0, q1 - q0, t, pack.p, pairs, pack.robot, pack.shapes, speed, pack.covers, tol, accept, out, budget, track,
        tracking, cache, narrow, pack.seq, seq_n, steps_left, call_steps, weight, pack.tail_t, pack.end, evaluations,
        (speeds.w_a, speeds.w_b, speeds.v0_fixed, speeds.v1), pack.fixed_c)
    return used, live, count, stop, used_forward, clearance
