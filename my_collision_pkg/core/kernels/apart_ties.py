"""Apart clearance rows beside a tie along a flat feature (numba): where ``smooth`` must be false.

An apart row's Jacobian is the gradient of the distance at the configuration. Where one body's
nearest feature is a straight line (a box's edge, a cylinder's or a capsule's side line), a point
of the other body farther along that line can be nearly as near as the witness pair; when the
joints move the two pairs differently, a small motion makes the farther pair the nearer one and
the witness points jump along the line: the distance has a kink within that motion, and central
differences no longer match the gradient (issue 40's apart rows 1329, link2 / post, and 1384,
link1 / table: jumps of 7.7 mm and 6.2 mm along the line within a 1e-5 rad step, Jacobians 36 and
6 times the test's bound off).

The test, each way along the line from the witness point: the point ``s`` along it (3 mm, or up
to the line's end; a way with less room than ``MIN_STEP_M`` is not stepped) and its nearest point
on the other body make the stepped pair, ``e`` apart (d the row's distance). To first order a joint
motion ``dq`` changes the gap between the two pairs' distances, ``e - d``, by ``(J_s - J) . dq`` (J
the row's Jacobian, J_s the stepped pair's, same normal), so the row is not smooth where a motion
of ``TIE_JOINT_STEP`` in each joint closes it: ``sum |J_s - J| * TIE_JOINT_STEP > e - d``, with the
two rows at least ``JACOBIAN_ABS`` apart (less moves no entry by the clearance tests' absolute
bound). Against a single nearest vertex ``e - d`` is about ``s**2 / (2 d)``, far above what such
a step closes; against a feature nearly parallel to the line it is near 0. A tie whose two ends
move alike under every joint leaves the gradient whole (on the Panda, link1's side beside the
post, parallel to it whatever joint 1 does).

A prismatic joint gives both pairs the same entry (same normal); a revolute one gives each point
``(p - o) . (n x a)``, which a point moved by x changes by at most |x|. The stepped point moves s,
and its nearest point on a convex body (a primitive, a hull) at most s, so ``|J_s - J|`` sums to at
most ``2 s k`` (k the revolute joints that move either body): only stepped pairs with
``e - d < 2 s k TIE_JOINT_STEP`` have their Jacobian rows computed, and rows whose bodies no
revolute joint moves are not looked at.

The other body's distance is exact for a box, sphere, cylinder or capsule (its formula); a mesh or
a convex mesh is taken as its convex hull (GJK on the hull's vertices, in :func:`stepped_ties`'s loop,
stopped as soon as a support plane puts the stepped point beyond the threshold). A hull contains
its mesh, so the stepped point is never farther from it than from the mesh: a stepped pair that the
mesh brings within reach is within reach on the hull too, and its Jacobian row is then the hull
point's. (A cone is not looked at.)

Arrays are float64 in metres; ``T_world_x`` (4, 4) is the pose of ``x`` in the planning frame.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CYLINDER, KIND_SPHERE
from my_collision_pkg.core.kernels.gjk import MAX_ITERATIONS, nearest_face, vertex_support

# how far along the line the witness point is stepped, metres
FEATURE_STEP_M = 3e-3
# the joint motion (each joint, radians or metres) within which a jump of the nearest points marks a row not
# smooth: twice the clearance tests' central-difference step
TIE_JOINT_STEP = 2e-5
# the least step tried, metres: a shorter jump moves a Jacobian entry by less than 3e-4 of a 1 m lever
MIN_STEP_M = 3e-4
# two Jacobian rows closer than this (summed over the joints) are the same gradient: the clearance tests' absolute
# bound on central differences
JACOBIAN_ABS = 1e-6
# a witness point this near two faces of a box (one face of a cylinder or capsule side) is on that edge (line)
ON_FEATURE_M = 1e-9


@njit(cache=True, fastmath=False, inline="always")
def _to_local(T, c, s, x, y, z):
    """World point (x, y, z) in the frame of shape s posed by ``T[c, s]`` (read in place: no view is made)."""
    dx, dy, dz = x - T[c, s, 0, 3], y - T[c, s, 1, 3], z - T[c, s, 2, 3]
    return (T[c, s, 0, 0] * dx + T[c, s, 1, 0] * dy + T[c, s, 2, 0] * dz,
            T[c, s, 0, 1] * dx + T[c, s, 1, 1] * dy + T[c, s, 2, 1] * dz,
            T[c, s, 0, 2] * dx + T[c, s, 1, 2] * dy + T[c, s, 2, 2] * dz)


@njit(cache=True, fastmath=False, inline="always")
def _to_world(T, c, s, x, y, z):
    """Shape s's point (x, y, z) (its frame, posed by ``T[c, s]``) in the planning frame."""
    return (T[c, s, 0, 0] * x + T[c, s, 0, 1] * y + T[c, s, 0, 2] * z + T[c, s, 0, 3],
            T[c, s, 1, 0] * x + T[c, s, 1, 1] * y + T[c, s, 1, 2] * z + T[c, s, 1, 3],
            T[c, s, 2, 0] * x + T[c, s, 2, 1] * y + T[c, s, 2, 2] * z + T[c, s, 2, 3])


@njit(cache=True, fastmath=False)
def line_feature(kind, p0, p1, p2, lx, ly, lz):
    """The straight line of a primitive solid (sizes p0, p1, p2: ``gjk.ConvexArrays`` params) that holds the
    witness point (lx, ly, lz) (shape frame): (axis, room along +axis, room along -axis), axis the shape-frame axis
    the line runs along (0, 1, 2) and the rooms in metres up to the line's ends; axis -1 where the point is on no
    such line (a box's face or corner, a cylinder's cap or rim, a sphere, a mesh)."""
    if kind == KIND_BOX:
        local = (lx, ly, lz)
        half = (p0, p1, p2)
        on = 0
        off_axis = -1
        for i in range(3):
            if abs(abs(local[i]) - half[i]) <= ON_FEATURE_M:
                on += 1
            else:
                off_axis = i
        if on != 2:
            return -1, 0.0, 0.0
        return off_axis, half[off_axis] - local[off_axis], half[off_axis] + local[off_axis]
    if kind == KIND_CYLINDER or kind == KIND_CAPSULE:
        r, h = p0, p1
        rho = math.sqrt(lx * lx + ly * ly)
        if abs(rho - r) <= ON_FEATURE_M and abs(lz) < h - ON_FEATURE_M:
            return 2, h - lz, h + lz
    return -1, 0.0, 0.0


@njit(cache=True, fastmath=False)
def primitive_nearest(kind, p0, p1, p2, lx, ly, lz):
    """The point of a primitive solid (sizes p0, p1, p2: ``gjk.ConvexArrays`` params) nearest to the point
    (lx, ly, lz), both in the shape's frame: (distance in metres, 0 inside; x, y, z); NaN for a cone."""
    if kind == KIND_BOX:
        cx = min(max(lx, -p0), p0)
        cy = min(max(ly, -p1), p1)
        cz = min(max(lz, -p2), p2)
    elif kind == KIND_SPHERE or kind == KIND_CAPSULE:
        cz = min(max(lz, -p1), p1) if kind == KIND_CAPSULE else 0.0
        rx, ry, rz = lx, ly, lz - cz
        norm = math.sqrt(rx * rx + ry * ry + rz * rz)
        f = min(p0 / norm, 1.0) if norm > 0.0 else 0.0
        cx, cy, cz = f * rx, f * ry, cz + f * rz
    elif kind == KIND_CYLINDER:
        rho = math.sqrt(lx * lx + ly * ly)
        f = min(p0 / rho, 1.0) if rho > 0.0 else 0.0
        cx, cy, cz = f * lx, f * ly, min(max(lz, -p1), p1)
    else:
        return np.nan, 0.0, 0.0, 0.0
    ex, ey, ez = cx - lx, cy - ly, cz - lz
    return math.sqrt(ex * ex + ey * ey + ez * ez), cx, cy, cz


@njit(cache=True, fastmath=False)
def stepped_ties(smooth, distance, cfg, shape_pair, points, T_world_shape, kind, params, vertex_start, vertices,
                 neighbour_start, neighbours, probes, support, revolute_joints):
    """The stepped pairs of the smooth apart rows near enough to their witness pairs to be looked at (the
    module's test), before their Jacobian rows.

    Parameters
    ----------
    smooth : (R,) bool, the rows looked at (True).
    distance : (R,) each row's signed distance (unpadded, metres); rows at 0 or below are not looked at.
    cfg : (R,) int64, each row's configuration in ``T_world_shape`` (N, S, 4, 4).
    shape_pair : (R, 2) int64, each row's shapes; points : (R, 2, 3) their witness points (planning frame).
    kind, params, vertex_start ... probes : the convex solids (``gjk.ConvexArrays``).
    support : (R, 2) int64, each side's hull vertex where the row's GJK ended (-1: none): a hull's first support
        climb starts there (elsewhere from its probe vertices).
    revolute_joints : (R,) the number of revolute joints that move either body of each row (0: not looked at).

    Returns
    -------
    (rows (T,) int64, pairs (T, 2, 3), gaps (T,)): each stepped pair's row (in row order; a row has up to four:
    two sides, two ways), the pair, body 0's point then body 1's (the stepped point on the line's side, its
    nearest point on the other), and ``e - d`` (metres).
    """
    n = smooth.shape[0]
    rows = np.empty(4 * n, dtype=np.int64)
    pairs = np.empty((4 * n, 2, 3))
    gaps = np.empty(4 * n)
    P = np.empty((4, 3))
    v = np.empty(3)
    E = np.empty((3, 3))
    count = 0
    for r in range(n):
        d = distance[r]
        if not smooth[r] or not d > 0.0 or revolute_joints[r] == 0:
            continue
        c = cfg[r]
        for s in range(2):
            a, b = shape_pair[r, s], shape_pair[r, 1 - s]
            ka, kb = kind[a], kind[b]
            if not (ka == KIND_BOX or ka == KIND_CYLINDER or ka == KIND_CAPSULE):
                continue
            b_primitive = kb == KIND_BOX or kb == KIND_SPHERE or kb == KIND_CYLINDER or kb == KIND_CAPSULE
            start, stop = vertex_start[b], vertex_start[b + 1]
            if not b_primitive and not stop > start:
                continue                   # a cone, or a body without a hull: not looked at
            px, py, pz = points[r, s, 0], points[r, s, 1], points[r, s, 2]
            ax, ay, az = _to_local(T_world_shape, c, a, px, py, pz)
            axis, room_plus, room_minus = line_feature(ka, params[a, 0], params[a, 1], params[a, 2], ax, ay, az)
            if axis < 0:
                continue
            ex, ey, ez = T_world_shape[c, a, 0, axis], T_world_shape[c, a, 1, axis], T_world_shape[c, a, 2, axis]
            bx, by, bz = _to_local(T_world_shape, c, b, points[r, 1 - s, 0], points[r, 1 - s, 1], points[r, 1 - s, 2])
            at = support[r, 1 - s]         # the hull vertex the next support climb starts from
            if not start <= at < stop:
                at = -1
            for sign in (1.0, -1.0):
                room = room_plus if sign > 0.0 else room_minus
                if room < MIN_STEP_M:
                    continue
                step = min(FEATURE_STEP_M, room)
                x, y, z = px + sign * step * ex, py + sign * step * ey, pz + sign * step * ez
                lx, ly, lz = _to_local(T_world_shape, c, b, x, y, z)       # the stepped point, in b's frame
                reach = 2.0 * step * revolute_joints[r] * TIE_JOINT_STEP
                if b_primitive:
                    e, qx, qy, qz = primitive_nearest(kb, params[b, 0], params[b, 1], params[b, 2], lx, ly, lz)
                else:
                    # GJK on the hull minus the stepped point, from the direction to the witness point; out of it
                    # as soon as a support plane is beyond the threshold (e infinite), else the simplex's nearest
                    # point once within 1e-12 m of the best lower bound or no step brings it nearer. The support
                    # climbs along the hull's edges in place (``gjk.vertex_support``'s, from ``at``).
                    e = np.inf
                    vx, vy, vz = bx - lx, by - ly, bz - lz
                    n_simplex = 0
                    norm2 = np.inf
                    beyond = False
                    for _ in range(MAX_ITERATIONS):
                        vn = math.sqrt(vx * vx + vy * vy + vz * vz)
                        if vn == 0.0:
                            break
                        if at < 0 or neighbour_start[at + 1] == neighbour_start[at]:
                            at = vertex_support(vertices, neighbour_start, neighbours, probes, b, start, stop, at,
                                                -vx, -vy, -vz)
                        else:
                            best = -(vertices[at, 0] * vx + vertices[at, 1] * vy + vertices[at, 2] * vz)
                            moved = True
                            while moved:
                                moved = False
                                for k in range(neighbour_start[at], neighbour_start[at + 1]):
                                    j = neighbours[k]
                                    h = -(vertices[j, 0] * vx + vertices[j, 1] * vy + vertices[j, 2] * vz)
                                    if h > best:
                                        best, at, moved = h, j, True
                                        break
                        wx, wy, wz = vertices[at, 0] - lx, vertices[at, 1] - ly, vertices[at, 2] - lz
                        bound = (vx * wx + vy * wy + vz * wz) / vn
                        if bound >= d + reach:
                            beyond = True
                            break
                        if norm2 < np.inf and math.sqrt(norm2) - bound <= 1e-12:
                            break
                        P[n_simplex, 0], P[n_simplex, 1], P[n_simplex, 2] = wx, wy, wz
                        n_simplex = nearest_face(P, n_simplex + 1, v, E)
                        new2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
                        if new2 >= norm2 or n_simplex == 4:
                            break
                        norm2 = new2
                        vx, vy, vz = v[0], v[1], v[2]
                    qx, qy, qz = lx + vx, ly + vy, lz + vz
                    if not beyond:
                        e = math.sqrt(vx * vx + vy * vy + vz * vz)
                if e - d < reach:
                    rows[count] = r
                    gaps[count] = e - d
                    wx, wy, wz = _to_world(T_world_shape, c, b, qx, qy, qz)
                    pairs[count, s, 0], pairs[count, s, 1], pairs[count, s, 2] = x, y, z
                    pairs[count, 1 - s, 0], pairs[count, 1 - s, 1], pairs[count, 1 - s, 2] = wx, wy, wz
                    count += 1
    return rows[:count].copy(), pairs[:count].copy(), gaps[:count].copy()


@njit(cache=True, fastmath=False)
def joint_step_closes(row, stepped, gap_m):
    """Whether a motion of ``TIE_JOINT_STEP`` in each joint can close ``gap_m`` between a stepped pair's distance
    and its row's, to first order, the two Jacobian rows (over the same joints) being different gradients:
    ``sum |stepped - row|`` above ``JACOBIAN_ABS`` and, times ``TIE_JOINT_STEP``, above ``gap_m``."""
    total = 0.0
    for j in range(row.shape[0]):
        total += abs(stepped[j] - row[j])
    return total > JACOBIAN_ABS and total * TIE_JOINT_STEP > gap_m
