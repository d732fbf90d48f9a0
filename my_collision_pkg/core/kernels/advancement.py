"""Compiled conservative advancement for certified motion checks (see :mod:`checks.sweep`).

One call advances many shape pairs, each on its own clock, with bounds that need no
narrow phase: a pair's distance is bounded below by its two bounding spheres, then by
its sphere covers (:func:`geometry.mesh_sphere_cover`, :func:`geometry.box_sphere_cover`;
a primitive side is taken exactly: box, sphere, cylinder, capsule, a cone as its
enclosing cylinder). A pair stops when it must go to the narrow phase (``NEED``: the
bound is within ``accept`` of its padding + tolerance) or when it cannot touch before
``limit`` (``DONE``).

Covers of meshes hold their triangles, not the inside of a closed mesh. Their bound is a
bound of the distance between the two surfaces, which is the bodies' distance when the
bodies are apart. It is used only when that is known: the pair was apart at its previous
evaluation and every step keeps its distance above ``padding + tolerance / 2 > 0``
(``known``), or neither body can hold the other (for each closed-mesh side, every probe
point of the other side, one per connected piece, lies outside its bounding box: a piece
inside a solid lies inside that solid's box).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CONE, KIND_CONVEX, KIND_CYLINDER, KIND_MESH,
                                                 KIND_OPEN_MESH, KIND_SPHERE)
from my_collision_pkg.core.kernels.codes import JOINT_REVOLUTE

DONE, NEED = 0, 1               # per item of advance: past its limit, or the narrow phase decides


class CoverArrays(NamedTuple):
    """Per shape of a world (S shapes, N cover spheres in all), what bounds it in the kernels.

    ``kind`` (S,) int64 is the shape's code of :mod:`kernels.codes`: a primitive
    (``KIND_BOX`` .. ``KIND_CONE``) is taken as its solid with sizes ``params`` (S, 3)
    (box half extents; sphere radius; radius and half length of cylinders, capsules and
    cones, a cone bounded by its enclosing cylinder); a mesh (``KIND_CONVEX``,
    ``KIND_MESH``, ``KIND_OPEN_MESH``) by its cover spheres.
    """
    kind: np.ndarray          # (S,) int64
    params: np.ndarray        # (S, 3) metres
    cover_start: np.ndarray   # (S + 1,) int64: shape s's spheres are [cover_start[s], cover_start[s + 1])
    cover_c: np.ndarray       # (N, 3) sphere centres, shape frame, metres
    cover_r: np.ndarray       # (N,) sphere radii, metres
    reach: np.ndarray         # (S,) radius about the bounding sphere's centre holding s's spheres, metres
    container: np.ndarray     # (S,) bool: bounds a volume its cover does not fill (convex or closed mesh)
    probe_start: np.ndarray   # (S + 1,) int64: shape s's probe points are [probe_start[s], probe_start[s + 1])
    probes: np.ndarray        # (K, 3) one point inside each connected piece, shape frame, metres


class RobotArrays(NamedTuple):
    """The robot's forward-kinematics arrays (``RobotModel.kinematics_arrays``, in that order)."""
    mimic_matrix: np.ndarray     # (M, A) movable joint values from active positions
    mimic_offset: np.ndarray     # (M,)
    joint_kind: np.ndarray       # (M,) codes.JOINT_*
    joint_axis: np.ndarray       # (M, 3) in the child link's frame
    link_parent: np.ndarray      # (L,) parent link index, -1 for the root
    T_parent_origin: np.ndarray  # (L, 4, 4) joint origin in the parent link's frame
    link_joint: np.ndarray       # (L,) movable joint that moves the link, -1 for none


class ShapeArrays(NamedTuple):
    """Per shape of a world (S shapes): where it sits and its oriented bounding box."""
    shape_link: np.ndarray       # (S,) link the shape rides, -1 for a world object
    T_frame_shape: np.ndarray    # (S, 4, 4) shape pose in its link's frame (world objects: in the world)
    obb_center: np.ndarray       # (S, 3) box centre, shape frame, metres
    obb_axes: np.ndarray         # (S, 3, 3) box axes as columns, shape frame
    obb_half: np.ndarray         # (S, 3) box half extents, metres


class PairArrays(NamedTuple):
    """The shape pairs of one request (P pairs)."""
    pair_a: np.ndarray           # (P,) shape index of body 0
    pair_b: np.ndarray           # (P,) shape index of body 1
    margins: np.ndarray          # (P,) padding, metres
    # (P,) a bound of |d distance / dt| all through the motion (metres per unit time): the
    # joints' deltas times the shapes' configuration-independent levers (sweep.pair_top_speeds)
    v_max: np.ndarray


class SpeedArrays(NamedTuple):
    """What :func:`pair_speed` needs of one motion (M movable joints, S shapes, P pairs)."""
    W_a: np.ndarray              # (P, M) 1.0 where the joint moves body 0 of the pair but not body 1
    W_b: np.ndarray              # (P, M) the same for body 1
    child_link: np.ndarray       # (M,) link each joint moves directly
    axis: np.ndarray             # (M, 3) joint axes in their child link's frame
    prismatic: np.ndarray        # (M,) bool
    centre_shape: np.ndarray     # (S, 3) bounding sphere centres, shape frame, metres
    radius: np.ndarray           # (S,) bounding sphere radii, metres
    box_local: np.ndarray        # (S, 8, 3) bounding box corners, shape frame (:func:`box_corners`)
    adq: np.ndarray              # (M,) |joint delta| of the motion
    D_below: np.ndarray          # (S, M) how fast the shape moves relative to joint j's frame


class AdvanceOutputs(NamedTuple):
    """What :func:`advance` writes, per pair (K pairs), per item (n items) or per NEED slot
    (C slots, any C >= 1: a call stops when they are full) of one call."""
    known: np.ndarray            # (K,) bool: the pair is known to be apart at its time (read and written)
    status: np.ndarray           # (n,) DONE or NEED (items before the call's stop)
    V0: np.ndarray               # (C,) speed bounds at a NEED item's time
    V1: np.ndarray               # (C,)
    T_pair: np.ndarray           # (C, 2, 4, 4) the pair's shape poses there
    T_link: np.ndarray           # (C, L, 4, 4) the link poses there
    steps: np.ndarray            # (P,) bound evaluations per pair index (added to)
    need: np.ndarray             # (C,) per slot, the NEED item (index into live), in order


class ClearanceTrack(NamedTuple):
    """What :func:`advance` records, per pair (K pairs), for the smallest clearance a certified
    motion check certified (see :func:`interval_bound`; read and written, kept across calls).

    Each evaluation of a pair at time t (a lower bound ``d`` of its signed distance and its
    speed bounds ``V0``, ``V1`` there) closes the interval from its previous evaluation; the
    pair's step past t = 1 (or a pair nothing moves) leaves the forward bound over
    ``[last_t, 1]`` in ``tail``.
    """
    last_t: np.ndarray           # (K,) time of the pair's latest evaluation (NaN: none yet)
    last_d: np.ndarray           # (K,) its distance lower bound there, metres
    last_v0: np.ndarray          # (K,) its speed bounds there
    last_v1: np.ndarray          # (K,)
    low: np.ndarray              # (K,) smallest bound over the pair's closed intervals (inf: none), metres
    low_t: np.ndarray            # (K,) the time of that bound
    tail: np.ndarray             # (K,) forward bound over [last_t, 1] once the pair finished (inf before)


@njit(cache=True, inline="always")
def track_rows(table):
    """The :class:`ClearanceTrack` whose fields are the rows of ``table`` (7, K): one array to
    hand to a compiled call, not seven."""
    return ClearanceTrack(table[0], table[1], table[2], table[3], table[4], table[5], table[6])


@njit(cache=True)
def interval_bound(ta, da, va0, va1, tb, db, vb0, vb1, v_max=np.inf):
    """Lower bound of a pair's signed distance over [ta, tb], and the time where it is reached,
    from its lower bounds da at ta and db at tb and its speed bounds there.

    The speed bound at a time t holds on both sides of t (:mod:`checks.sweep`: at ``t + s`` the
    speed is at most ``v0 + |s| v1``, the levers growing with the time away from t either way),
    so the distance closes by at most ``s v0 + s^2 v1 / 2 <= s (v0 + h v1 / 2)`` over ``s <= h``:
    over ``[ta, tb]`` (h = tb - ta) it is at least ``da - s (va0 + h va1 / 2)`` at ``ta + s``
    and at least ``db - (h - s) (vb0 + h vb1 / 2)``: the larger of the two, smallest where they
    cross.
    ``v_max``: a speed bound that holds all through the motion (``PairArrays.v_max``); either
    end's speed is taken no larger (over long intervals the levers' growth ``h va1`` is
    larger than the levers can ever be).
    """
    h = tb - ta
    va = min(va0 + 0.5 * h * va1, v_max)
    vb = min(vb0 + 0.5 * h * vb1, v_max)
    if va + vb <= 0.0:                     # nothing moves the pair: both bound the same distance
        return max(da, db), ta
    s = (da - db + h * vb) / (va + vb)
    s = min(max(s, 0.0), h)
    return max(da - s * va, db - (h - s) * vb), ta + s


@njit(cache=True, inline="always")
def _record(track, k, t, d, v0, v1):
    """Pair k evaluated at time t: distance lower bound d, speed bounds v0, v1 (``track``: a
    :class:`ClearanceTrack`). Closes the interval from its previous evaluation."""
    lt = track.last_t[k]
    if lt == lt:                           # not NaN: an interval [lt, t] closes
        bound, tb = interval_bound(lt, track.last_d[k], track.last_v0[k], track.last_v1[k], t, d, v0, v1)
        if bound < track.low[k]:
            track.low[k] = bound
            track.low_t[k] = tb
    track.last_t[k] = t
    track.last_d[k] = d
    track.last_v0[k] = v0
    track.last_v1[k] = v1


@njit(cache=True, inline="always")
def _by_spheres(kind):
    """Whether a shape of this kind is bounded by its cover spheres (a mesh), not as a primitive solid."""
    return kind == KIND_CONVEX or kind == KIND_MESH or kind == KIND_OPEN_MESH


@njit(cache=True)
def _cover_scratch(cover_start):
    """Scratch rows for the cover-bound loop: as many as the largest shape cover has spheres."""
    most = 1
    for s in range(cover_start.shape[0] - 1):
        most = max(most, cover_start[s + 1] - cover_start[s])
    return np.empty((most, 7))


@njit(cache=True)
def _solid_distance(kind, params, x, y, z):
    """Distance of point (x, y, z) (shape frame) from a primitive solid (sizes ``params`` (3,)); 0 inside."""
    return _solid_distance_of(kind, params[0], params[1], params[2], x, y, z)


@njit(cache=True, inline="always")
def _solid_distance_of(kind, p0, p1, p2, x, y, z):
    """:func:`_solid_distance` with the sizes as three numbers (a caller's loop then takes no
    row view of its params, which costs a reference count per call)."""
    if kind == KIND_BOX:
        dx = max(abs(x) - p0, 0.0)
        dy = max(abs(y) - p1, 0.0)
        dz = max(abs(z) - p2, 0.0)
        return np.sqrt(dx * dx + dy * dy + dz * dz)
    if kind == KIND_SPHERE:
        return max(np.sqrt(x * x + y * y + z * z) - p0, 0.0)
    if kind == KIND_CYLINDER or kind == KIND_CONE:      # a cone: its enclosing cylinder
        dr = max(np.sqrt(x * x + y * y) - p0, 0.0)
        dz = max(abs(z) - p1, 0.0)
        return np.sqrt(dr * dr + dz * dz)
    # capsule: radius p0 about the segment z in [-p1, p1]
    zc = min(max(z, -p1), p1)
    return max(np.sqrt(x * x + y * y + (z - zc) * (z - zc)) - p0, 0.0)


@njit(cache=True)
def cover_bound(a, b, Ta, Tb, kind, params, cover_start, cover_c, cover_r, centre, reach, floor, ceiling):
    """Lower bound of the distance between shape a (pose Ta (4, 4)) and shape b (pose Tb):
    b's primitive solid against a's cover spheres, else a's against b's, else sphere
    pairs (``reach[s]``: radius about ``centre[s]`` (shape frame) holding s's cover
    spheres). Negative values mean only "may touch".

    Two cut-offs, for a caller that uses the bound only when it exceeds ``floor`` and
    needs it exactly only below ``ceiling``: once a sphere gives a value <= ``floor`` that
    value is returned (the bound is no larger); for sphere pairs, when every one of a's
    spheres is at least ``ceiling`` from b's reach sphere, that smallest distance (a lower
    bound of the cover bound, >= ``ceiling``) is returned. ``-inf, inf``: the bound itself."""
    most = 0
    for s in range(cover_start.shape[0] - 1):
        most = max(most, cover_start[s + 1] - cover_start[s])
    return _cover_bound(a, b, Ta, Tb, kind, params, cover_start, cover_c, cover_r, centre, reach, floor, ceiling,
                        np.empty((max(most, 1), 7)))


@njit(cache=True)
def _cover_bound(a, b, Ta, Tb, kind, params, cover_start, cover_c, cover_r, centre, reach, floor, ceiling, work):
    """:func:`cover_bound` with scratch space ``work`` (at least (largest cover, 7))."""
    if _by_spheres(kind[b]) and not _by_spheres(kind[a]):
        a, b = b, a
        Ta, Tb = Tb, Ta
    a00, a01, a02, a03 = Ta[0, 0], Ta[0, 1], Ta[0, 2], Ta[0, 3]
    a10, a11, a12, a13 = Ta[1, 0], Ta[1, 1], Ta[1, 2], Ta[1, 3]
    a20, a21, a22, a23 = Ta[2, 0], Ta[2, 1], Ta[2, 2], Ta[2, 3]
    b00, b01, b02, b03 = Tb[0, 0], Tb[0, 1], Tb[0, 2], Tb[0, 3]
    b10, b11, b12, b13 = Tb[1, 0], Tb[1, 1], Tb[1, 2], Tb[1, 3]
    b20, b21, b22, b23 = Tb[2, 0], Tb[2, 1], Tb[2, 2], Tb[2, 3]
    best = np.inf
    if not _by_spheres(kind[b]):
        kb = kind[b]
        pb = params[b]
        for i in range(cover_start[a], cover_start[a + 1]):
            c0, c1, c2 = cover_c[i, 0], cover_c[i, 1], cover_c[i, 2]
            wx = a00 * c0 + a01 * c1 + a02 * c2 + a03 - b03
            wy = a10 * c0 + a11 * c1 + a12 * c2 + a13 - b13
            wz = a20 * c0 + a21 * c1 + a22 * c2 + a23 - b23
            x = b00 * wx + b10 * wy + b20 * wz
            y = b01 * wx + b11 * wy + b21 * wz
            z = b02 * wx + b12 * wy + b22 * wz
            d = _solid_distance(kb, pb, x, y, z) - cover_r[i]
            if d < best:
                best = d
                if best <= floor:
                    return best
        return best
    # work columns: 0-2 a's sphere centres (world), 3-5 b's, 6 a's spheres' bounds against b's reach
    sa, sb = cover_start[a], cover_start[b]
    nb = cover_start[b + 1] - sb
    na = cover_start[a + 1] - sa
    for i in range(nb):
        c0, c1, c2 = cover_c[sb + i, 0], cover_c[sb + i, 1], cover_c[sb + i, 2]
        work[i, 3] = b00 * c0 + b01 * c1 + b02 * c2 + b03
        work[i, 4] = b10 * c0 + b11 * c1 + b12 * c2 + b13
        work[i, 5] = b20 * c0 + b21 * c1 + b22 * c2 + b23
    # a's spheres against b's reach (a sphere about b's centre holding all of b's spheres):
    # a sphere of a whose bound there is not below the best so far cannot lower it
    e0, e1, e2 = centre[b, 0], centre[b, 1], centre[b, 2]
    cb0 = b00 * e0 + b01 * e1 + b02 * e2 + b03
    cb1 = b10 * e0 + b11 * e1 + b12 * e2 + b13
    cb2 = b20 * e0 + b21 * e1 + b22 * e2 + b23
    reach_b = reach[b]
    first = 0
    for i in range(na):
        c0, c1, c2 = cover_c[sa + i, 0], cover_c[sa + i, 1], cover_c[sa + i, 2]
        x = a00 * c0 + a01 * c1 + a02 * c2 + a03
        y = a10 * c0 + a11 * c1 + a12 * c2 + a13
        z = a20 * c0 + a21 * c1 + a22 * c2 + a23
        work[i, 0] = x
        work[i, 1] = y
        work[i, 2] = z
        dx, dy, dz = x - cb0, y - cb1, z - cb2
        work[i, 6] = np.sqrt(dx * dx + dy * dy + dz * dz) - cover_r[sa + i] - reach_b
        if work[i, 6] < work[first, 6]:
            first = i
    if na > 0 and work[first, 6] >= ceiling:
        return work[first, 6]
    for n in range(na):
        i = first if n == 0 else (n - 1 if n <= first else n)
        if n > 0 and work[i, 6] >= best:
            continue
        ra = cover_r[sa + i]
        x, y, z = work[i, 0], work[i, 1], work[i, 2]
        for j in range(nb):
            dx, dy, dz = x - work[j, 3], y - work[j, 4], z - work[j, 5]
            rb = cover_r[sb + j]
            near = best + ra + rb                 # centres closer than this give a smaller bound
            g = dx * dx + dy * dy + dz * dz
            if near > 0.0 and g < near * near:
                best = np.sqrt(g) - ra - rb
                if best <= floor:
                    return best
    return best


@njit(cache=True)
def _holds_none(outer, inner, T_outer, T_inner, container, probe_start, probes, obb_center, obb_axes, obb_half):
    """True when ``outer`` bounds no volume or no probe point of ``inner`` is in its box."""
    if not container[outer]:
        return True
    for i in range(probe_start[inner], probe_start[inner + 1]):
        c = probes[i]
        wx = T_inner[0, 0] * c[0] + T_inner[0, 1] * c[1] + T_inner[0, 2] * c[2] + T_inner[0, 3] - T_outer[0, 3]
        wy = T_inner[1, 0] * c[0] + T_inner[1, 1] * c[1] + T_inner[1, 2] * c[2] + T_inner[1, 3] - T_outer[1, 3]
        wz = T_inner[2, 0] * c[0] + T_inner[2, 1] * c[1] + T_inner[2, 2] * c[2] + T_inner[2, 3] - T_outer[2, 3]
        inside = True
        for e in range(3):
            # box axis e in outer's frame, then its offset from the box centre
            u0 = T_outer[0, 0] * obb_axes[outer, 0, e] + T_outer[0, 1] * obb_axes[outer, 1, e] + T_outer[0, 2] * obb_axes[outer, 2, e]
            u1 = T_outer[1, 0] * obb_axes[outer, 0, e] + T_outer[1, 1] * obb_axes[outer, 1, e] + T_outer[1, 2] * obb_axes[outer, 2, e]
            u2 = T_outer[2, 0] * obb_axes[outer, 0, e] + T_outer[2, 1] * obb_axes[outer, 1, e] + T_outer[2, 2] * obb_axes[outer, 2, e]
            cx = T_outer[0, 0] * obb_center[outer, 0] + T_outer[0, 1] * obb_center[outer, 1] + T_outer[0, 2] * obb_center[outer, 2]
            cy = T_outer[1, 0] * obb_center[outer, 0] + T_outer[1, 1] * obb_center[outer, 1] + T_outer[1, 2] * obb_center[outer, 2]
            cz = T_outer[2, 0] * obb_center[outer, 0] + T_outer[2, 1] * obb_center[outer, 1] + T_outer[2, 2] * obb_center[outer, 2]
            s = (wx - cx) * u0 + (wy - cy) * u1 + (wz - cz) * u2
            if abs(s) > obb_half[outer, e] * (1.0 + 1e-9) + 1e-9:
                inside = False
                break
        if inside:
            return False
    return True


@njit(cache=True)
def _rigid_fk(positions, robot, upto, values, T_link):
    """Poses T_link (L, 4, 4) of links [:upto] at active positions (A,): the arithmetic of
    :func:`kernels.forward_kinematics` (same products, same order) without the terms that
    rigid transforms make exactly zero or one (their bottom rows are 0 0 0 1). Arrays are
    indexed in full, not through row views (views cost more than the arithmetic here).
    ``robot``: :class:`RobotArrays`; ``values`` (M,): scratch for the movable joints' values."""
    mimic_matrix, mimic_offset, joint_kind, joint_axis = (robot.mimic_matrix, robot.mimic_offset, robot.joint_kind,
                                                          robot.joint_axis)
    link_parent, T_parent_origin, link_joint = robot.link_parent, robot.T_parent_origin, robot.link_joint
    for m in range(mimic_matrix.shape[0]):
        v = mimic_offset[m]
        for a in range(mimic_matrix.shape[1]):
            v += mimic_matrix[m, a] * positions[a]
        values[m] = v
    for k in range(upto):
        p = link_parent[k]
        j = link_joint[k]
        o00, o01, o02, o03 = T_parent_origin[k, 0, 0], T_parent_origin[k, 0, 1], T_parent_origin[k, 0, 2], \
            T_parent_origin[k, 0, 3]
        o10, o11, o12, o13 = T_parent_origin[k, 1, 0], T_parent_origin[k, 1, 1], T_parent_origin[k, 1, 2], \
            T_parent_origin[k, 1, 3]
        o20, o21, o22, o23 = T_parent_origin[k, 2, 0], T_parent_origin[k, 2, 1], T_parent_origin[k, 2, 2], \
            T_parent_origin[k, 2, 3]
        # local = origin @ motion (rows 0..2)
        if j >= 0 and joint_kind[j] == JOINT_REVOLUTE:
            x, y, z = joint_axis[j, 0], joint_axis[j, 1], joint_axis[j, 2]
            sn = np.sin(values[j])
            cs = np.cos(values[j])
            t = 1.0 - cs
            m00 = t * x * x + cs
            m01 = t * x * y - sn * z
            m02 = t * x * z + sn * y
            m10 = t * x * y + sn * z
            m11 = t * y * y + cs
            m12 = t * y * z - sn * x
            m20 = t * x * z - sn * y
            m21 = t * y * z + sn * x
            m22 = t * z * z + cs
            l00 = o00 * m00 + o01 * m10 + o02 * m20
            l01 = o00 * m01 + o01 * m11 + o02 * m21
            l02 = o00 * m02 + o01 * m12 + o02 * m22
            l10 = o10 * m00 + o11 * m10 + o12 * m20
            l11 = o10 * m01 + o11 * m11 + o12 * m21
            l12 = o10 * m02 + o11 * m12 + o12 * m22
            l20 = o20 * m00 + o21 * m10 + o22 * m20
            l21 = o20 * m01 + o21 * m11 + o22 * m21
            l22 = o20 * m02 + o21 * m12 + o22 * m22
            l03, l13, l23 = o03, o13, o23
        else:
            l00, l01, l02, l03 = o00, o01, o02, o03
            l10, l11, l12, l13 = o10, o11, o12, o13
            l20, l21, l22, l23 = o20, o21, o22, o23
            if j >= 0:                                   # prismatic: translation along the axis
                v = values[j]
                tx, ty, tz = v * joint_axis[j, 0], v * joint_axis[j, 1], v * joint_axis[j, 2]
                l03 = o00 * tx + o01 * ty + o02 * tz + o03
                l13 = o10 * tx + o11 * ty + o12 * tz + o13
                l23 = o20 * tx + o21 * ty + o22 * tz + o23
        if p < 0:
            T_link[k, 0, 0], T_link[k, 0, 1], T_link[k, 0, 2], T_link[k, 0, 3] = l00, l01, l02, l03
            T_link[k, 1, 0], T_link[k, 1, 1], T_link[k, 1, 2], T_link[k, 1, 3] = l10, l11, l12, l13
            T_link[k, 2, 0], T_link[k, 2, 1], T_link[k, 2, 2], T_link[k, 2, 3] = l20, l21, l22, l23
        else:
            for r in range(3):
                a0, a1, a2, a3 = T_link[p, r, 0], T_link[p, r, 1], T_link[p, r, 2], T_link[p, r, 3]
                T_link[k, r, 0] = a0 * l00 + a1 * l10 + a2 * l20
                T_link[k, r, 1] = a0 * l01 + a1 * l11 + a2 * l21
                T_link[k, r, 2] = a0 * l02 + a1 * l12 + a2 * l22
                T_link[k, r, 3] = a0 * l03 + a1 * l13 + a2 * l23 + a3
        T_link[k, 3, 0], T_link[k, 3, 1], T_link[k, 3, 2], T_link[k, 3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(cache=True)
def certainly_apart(pairs, a_of, b_of, T_shape, threshold, kind, params, cover_start, cover_c, cover_r, centre, reach,
                    container, probe_start, probes, obb_center, obb_axes, obb_half):
    """Per pair index in ``pairs``: True when its cover bound proves its distance >= threshold[p] > 0
    at the shape poses T_shape (S, 4, 4): the bound is positive (the surfaces are apart) and
    neither body can hold the other, so it bounds the bodies' distance."""
    out = np.zeros(pairs.shape[0], dtype=np.bool_)
    Ta = np.empty((4, 4))
    Tb = np.empty((4, 4))
    work = _cover_scratch(cover_start)
    for i in range(pairs.shape[0]):
        p = pairs[i]
        a, b = a_of[p], b_of[p]
        for r in range(4):
            for c in range(4):
                Ta[r, c] = T_shape[a, r, c]
                Tb[r, c] = T_shape[b, r, c]
        if not (_holds_none(a, b, Ta, Tb, container, probe_start, probes, obb_center, obb_axes, obb_half)
                and _holds_none(b, a, Tb, Ta, container, probe_start, probes, obb_center, obb_axes, obb_half)):
            continue
        bound = _cover_bound(a, b, Ta, Tb, kind, params, cover_start, cover_c, cover_r, centre, reach,
                             min(threshold[p], 0.0), np.inf, work)
        out[i] = bound > 0.0 and bound >= threshold[p]
    return out


@njit(cache=True)
def _shape_pose(T_link, shape_link, T_frame_shape, s, out):
    """out = T_link[link of s] @ T_frame_shape[s] (world shapes: T_frame_shape[s]); the link
    poses' bottom rows are 0 0 0 1, so out's is T_frame_shape[s]'s."""
    k = shape_link[s]
    if k < 0:
        for r in range(4):
            for c in range(4):
                out[r, c] = T_frame_shape[s, r, c]
        return
    for r in range(3):
        a0, a1, a2, a3 = T_link[k, r, 0], T_link[k, r, 1], T_link[k, r, 2], T_link[k, r, 3]
        for c in range(4):
            out[r, c] = (a0 * T_frame_shape[s, 0, c] + a1 * T_frame_shape[s, 1, c] + a2 * T_frame_shape[s, 2, c]
                         + a3 * T_frame_shape[s, 3, c])
    for c in range(4):
        out[3, c] = T_frame_shape[s, 3, c]


@njit(cache=True)
def box_corners(centre_shape, obb_axes, obb_half):
    """Corners (S, 8, 3) of each shape's bounding box in its frame (corner bit e: sign along axis e)."""
    out = np.empty((centre_shape.shape[0], 8, 3))
    for s in range(centre_shape.shape[0]):
        for corner in range(8):
            lx = centre_shape[s, 0]
            ly = centre_shape[s, 1]
            lz = centre_shape[s, 2]
            for e in range(3):
                sign = 1.0 if (corner >> e) & 1 else -1.0
                lx += obb_axes[s, 0, e] * sign * obb_half[s, e]
                ly += obb_axes[s, 1, e] * sign * obb_half[s, e]
                lz += obb_axes[s, 2, e] * sign * obb_half[s, e]
            out[s, corner, 0] = lx
            out[s, corner, 1] = ly
            out[s, corner, 2] = lz
    return out


@njit(cache=True)
def pair_speed(T_link, Ta, Tb, a, b, q, speed, corners):
    """:func:`_pair_speed` for a caller in Python: ``speed`` is a :class:`SpeedArrays` as a plain tuple."""
    return _pair_speed(T_link, Ta, Tb, a, b, q, SpeedArrays(*speed), corners)


@njit(cache=True)
def _pair_speed(T_link, Ta, Tb, a, b, q, speed, corners):
    """(V0, V1) of pair q (shapes a, b at poses Ta, Tb (4, 4); link poses T_link (L, 4, 4)):
    at t + s its distance changes at most at the rate V0 + |s| V1.

    A shape's lever about revolute joint j is the smaller of (its bounding sphere centre's
    distance from the axis + radius) and its bounding box's farthest corner from the axis
    (the distance from a line is convex, so a box's farthest point from it is a corner).
    Joints that move both bodies (W zero) are left out; prismatic ones add |dq_j|.
    ``speed``: :class:`SpeedArrays` (``W_a[q]``, ``W_b[q]``: the joints that move one body
    of pair q but not the other); ``corners`` (8, 3): scratch."""
    W_a, W_b, prismatic, adq, D_below = speed.W_a, speed.W_b, speed.prismatic, speed.adq, speed.D_below
    v0 = 0.0
    v1 = 0.0
    for side in range(2):
        s = a if side == 0 else b
        T = Ta if side == 0 else Tb
        W = W_a if side == 0 else W_b                # (P, M): row q is this pair's
        cx, cy, cz = posed_centre(T, speed.centre_shape, s)
        have_corners = False
        for j in range(adq.shape[0]):
            if W[q, j] == 0.0 or adq[j] == 0.0:
                continue
            if prismatic[j]:
                v0 += adq[j]
                continue
            if not have_corners:
                posed_corners(T, speed.box_local, s, corners)
                have_corners = True
            v0 += adq[j] * joint_lever(T_link, j, speed, s, cx, cy, cz, corners)
            v1 += adq[j] * D_below[s, j]
    return v0, v1


@njit(cache=True)
def summed_lever_speeds(pair, flat, prismatic, R_static, adq, n_pairs):
    """Per pair (n_pairs,), the sum over its terms i of ``lever[flat[i]] * adq[j]`` (j = flat[i] mod M,
    lever 1 for a prismatic joint, else ``R_static``'s entry), added in the terms' order: the
    motion's top speed per pair from the selection's (pair, joint) terms (``sweep.summed_top_speeds``)."""
    n_mov = adq.shape[0]
    top = np.zeros(n_pairs)
    for i in range(pair.shape[0]):
        r = flat[i] // n_mov
        j = flat[i] - r * n_mov
        lever = 1.0 if prismatic[j] else R_static[r, j]
        top[pair[i]] += lever * adq[j]
    return top


@njit(cache=True)
def motion_speed_tables(mimic_matrix, mimic_offset, prismatic, chain, child_link, robot_shapes, robot_link, robot_A,
                        robot_lever, below_T, n_shapes, q0, q1):
    """The tables of :func:`pair_speed` that depend on the motion from q0 to q1 (A,): returns
    ``(adq, R_static, D_below, moved)``.

    ``adq`` (M,): each movable joint's |delta| (``mimic_matrix`` (M, A) and ``mimic_offset``
    (M,) map active positions to movable joint values); ``R_static`` (R, M): robot shape r's
    (``robot_shapes`` (R,), on links ``robot_link`` (R,)) lever about joint k without the
    motion, ``robot_lever`` (R, M), plus the largest prismatic travel on the chain from k's
    child link (``child_link`` (M,)) down to the shape's link (``chain`` (L, M): the movable
    joints above each link, as floats); ``D_below`` (S, M) (``n_shapes`` = S): per robot
    shape and joint j, the sum over the joints k below j (``below_T[k, j]``) that move it
    (``robot_A`` (R, M)) of ``adq[k]`` times its lever about k (1 for a prismatic k), world
    objects' rows zero; ``moved`` (S,): the shape moves in this motion."""
    n_mov = mimic_matrix.shape[0]
    adq = np.empty(n_mov)
    travel = np.zeros(n_mov)
    for j in range(n_mov):
        delta = 0.0
        v0 = mimic_offset[j]
        v1 = mimic_offset[j]
        for i in range(q0.shape[0]):
            delta += mimic_matrix[j, i] * (q1[i] - q0[i])
            v0 += mimic_matrix[j, i] * q0[i]
            v1 += mimic_matrix[j, i] * q1[i]
        adq[j] = abs(delta)
        if prismatic[j]:
            travel[j] = max(abs(v0), abs(v1))
    path = np.zeros(chain.shape[0])
    for link in range(chain.shape[0]):
        for j in range(n_mov):
            path[link] += chain[link, j] * travel[j]
    n_robot = robot_shapes.shape[0]
    R_static = np.empty((n_robot, n_mov))
    D_below = np.zeros((n_shapes, n_mov))
    moved = np.zeros(n_shapes, dtype=np.bool_)
    w = np.empty(n_mov)
    for r in range(n_robot):
        s = robot_shapes[r]
        for k in range(n_mov):
            R_static[r, k] = robot_lever[r, k] + (path[robot_link[r]] - path[child_link[k]])
            w[k] = 0.0
            if robot_A[r, k]:
                w[k] = adq[k] * (1.0 if prismatic[k] else R_static[r, k])
                if adq[k] > 0.0:
                    moved[s] = True
        for j in range(n_mov):
            total = 0.0
            for k in range(n_mov):
                total += w[k] * below_T[k, j]
            D_below[s, j] = total
    return adq, R_static, D_below, moved


@njit(cache=True, inline="always")
def posed_centre(T, centre_shape, s):
    """Shape s's bounding sphere centre (``centre_shape[s]``, shape frame) at pose T (4, 4)."""
    cx = T[0, 0] * centre_shape[s, 0] + T[0, 1] * centre_shape[s, 1] + T[0, 2] * centre_shape[s, 2] + T[0, 3]
    cy = T[1, 0] * centre_shape[s, 0] + T[1, 1] * centre_shape[s, 1] + T[1, 2] * centre_shape[s, 2] + T[1, 3]
    cz = T[2, 0] * centre_shape[s, 0] + T[2, 1] * centre_shape[s, 1] + T[2, 2] * centre_shape[s, 2] + T[2, 3]
    return cx, cy, cz


@njit(cache=True, inline="always")
def posed_corners(T, box_local, s, corners):
    """corners (8, 3): shape s's bounding box corners (``box_local[s]``) at pose T (4, 4)."""
    for corner in range(8):
        lx = box_local[s, corner, 0]
        ly = box_local[s, corner, 1]
        lz = box_local[s, corner, 2]
        corners[corner, 0] = T[0, 0] * lx + T[0, 1] * ly + T[0, 2] * lz + T[0, 3]
        corners[corner, 1] = T[1, 0] * lx + T[1, 1] * ly + T[1, 2] * lz + T[1, 3]
        corners[corner, 2] = T[2, 0] * lx + T[2, 1] * ly + T[2, 2] * lz + T[2, 3]


@njit(cache=True, inline="always")
def _joint_axis(T_link, j, speed):
    """Revolute joint j's axis in the world (link poses T_link (L, 4, 4)): a point on it (its
    child link's origin) and its unit direction, ``(ox, oy, oz, ax, ay, az)``."""
    return axis_in_world(T_link, speed.child_link[j], speed.axis[j, 0], speed.axis[j, 1], speed.axis[j, 2])


@njit(cache=True, inline="always")
def axis_in_world(T_link, J, ux, uy, uz):
    """The axis (ux, uy, uz) (link J's frame) through link J's origin, in the world (link poses
    T_link (L, 4, 4)): ``(ox, oy, oz, ax, ay, az)``."""
    return (T_link[J, 0, 3], T_link[J, 1, 3], T_link[J, 2, 3],
            T_link[J, 0, 0] * ux + T_link[J, 0, 1] * uy + T_link[J, 0, 2] * uz,
            T_link[J, 1, 0] * ux + T_link[J, 1, 1] * uy + T_link[J, 1, 2] * uz,
            T_link[J, 2, 0] * ux + T_link[J, 2, 1] * uy + T_link[J, 2, 2] * uz)


@njit(cache=True, inline="always")
def _off_axis_sq(ox, oy, oz, ax, ay, az, x, y, z):
    """The squared distance of point (x, y, z) from the axis through (ox, oy, oz) along the
    unit (ax, ay, az) (may round below 0 on the axis)."""
    rx, ry, rz = x - ox, y - oy, z - oz
    along = rx * ax + ry * ay + rz * az
    return rx * rx + ry * ry + rz * rz - along * along


@njit(cache=True, inline="always")
def sphere_lever(T_link, j, speed, cx, cy, cz, radius):
    """The lever about revolute joint j (link poses T_link (L, 4, 4)) of every point of the
    sphere of centre (cx, cy, cz) and ``radius``: the centre's distance from the axis + radius."""
    ox, oy, oz, ax, ay, az = _joint_axis(T_link, j, speed)
    off = _off_axis_sq(ox, oy, oz, ax, ay, az, cx, cy, cz)
    return (np.sqrt(off) if off > 0.0 else 0.0) + radius


@njit(cache=True, inline="always")
def joint_lever(T_link, j, speed, s, cx, cy, cz, corners):
    """Shape s's lever about revolute joint j: the smaller of its bounding sphere centre's
    (cx, cy, cz) distance from the axis + radius and its posed box ``corners``' farthest
    distance from it (link poses T_link (L, 4, 4))."""
    ox, oy, oz, ax, ay, az = _joint_axis(T_link, j, speed)
    off = _off_axis_sq(ox, oy, oz, ax, ay, az, cx, cy, cz)
    lever = (np.sqrt(off) if off > 0.0 else 0.0) + speed.radius[s]
    box = 0.0
    for corner in range(8):
        off = _off_axis_sq(ox, oy, oz, ax, ay, az, corners[corner, 0], corners[corner, 1], corners[corner, 2])
        if off > box:
            box = off
    box = np.sqrt(box)
    return box if box < lever else lever


@njit(cache=True)
def advance(q0, dq, limit, t, live, p, pairs, robot, shapes, speed, covers, tol, accept, out, budget, track,
            tracking):
    """Advance the items ``live`` (n,) of pairs p (K,) from their times t (K,, updated in
    place) without narrow phase, making at most ``budget`` bound evaluations; returns
    ``(count, stop, used)``: how many items need the narrow phase, the first item not
    finished (items ``[stop:]`` are still live: their times are where the search got to;
    ``stop == n`` when every item finished) and the bound evaluations made.

    The motion is ``q0 + t dq`` (A,); ``pairs``: :class:`PairArrays`; ``robot``:
    :class:`RobotArrays`; ``shapes``: :class:`ShapeArrays`; ``speed``: :class:`SpeedArrays`;
    ``covers``: :class:`CoverArrays`; ``out``: :class:`AdvanceOutputs`; each pack given as a
    plain tuple of its fields (numba types a plain tuple of arrays at the speed of single
    arrays, a NamedTuple field by field in Python on every call). Per item j (pair
    ``p[live[j]]``): ``out.status[j]`` DONE (t past ``limit``, or inf when nothing moves
    it) or NEED (its bound is below padding + tol + accept: the narrow phase decides at t;
    ``out.V0[i]``, ``out.V1[i]``, ``out.T_pair[i]`` (2, 4, 4) and ``out.T_link[i]`` (L, 4, 4)
    hold its speed bounds and poses there, in NEED slot order); the NEED items are listed in
    ``out.need`` (slot -> item), in order. The call also stops (``stop < n``) when every
    slot of ``out.V0`` holds a NEED item, so the outputs' size, not the number of pairs,
    bounds their memory. ``out.known`` (K,) marks pairs known to be apart at t (updated);
    ``out.steps`` (P,) counts the bound evaluations made for each pair index p (added to).
    With ``tracking``, every bound the step is taken on (not NEED's: the narrow phase gives
    those) is recorded in ``track`` (the (7, K) rows of a :class:`ClearanceTrack`, per pair k), and so is the tail
    of a pair whose step passes t = 1."""
    pairs, robot, shapes = PairArrays(*pairs), RobotArrays(*robot), ShapeArrays(*shapes)
    speed, covers, out = SpeedArrays(*speed), CoverArrays(*covers), AdvanceOutputs(*out)
    track = track_rows(track)
    pair_a, pair_b, margins = pairs.pair_a, pairs.pair_b, pairs.margins
    known, status, steps = out.known, out.status, out.steps
    n = live.shape[0]
    count = 0
    positions = np.empty(q0.shape[0])
    values = np.empty(robot.mimic_matrix.shape[0])
    n_links = out.T_link.shape[1]
    T_link = np.empty((n_links, 4, 4))
    Ta = np.empty((4, 4))
    Tb = np.empty((4, 4))
    corners = np.empty((8, 3))
    work = _cover_scratch(covers.cover_start)
    fk_t = np.nan                                  # T_link holds links [:fk_upto] at time fk_t
    fk_upto = 0
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
        upto = max(shapes.shape_link[a], shapes.shape_link[b], 0) + 1       # links come after their parents
        while t[k] <= limit:
            if used >= budget:
                return count, j, used          # item j is still live, at the time reached
            used += 1
            steps[q] += 1
            for i in range(q0.shape[0]):
                positions[i] = q0[i] + t[k] * dq[i]
            if t[k] != fk_t or upto > fk_upto:     # pairs on the same clock share the poses
                _rigid_fk(positions, robot, upto, values, T_link)
                fk_t = t[k]
                fk_upto = upto
            _shape_pose(T_link, shapes.shape_link, shapes.T_frame_shape, a, Ta)
            _shape_pose(T_link, shapes.shape_link, shapes.T_frame_shape, b, Tb)
            v0, v1 = _pair_speed(T_link, Ta, Tb, a, b, q, speed, corners)
            rest = 1.0 - t[k]
            enough = m + tol + rest * (v0 + 0.5 * rest * v1)
            d = _primitive_bound(Ta, Tb, a, b, speed.centre_shape, speed.radius, covers.kind, covers.params)
            if d < enough and keeps_apart:
                d = _raised_by_covers(a, b, Ta, Tb, d, enough, known[k], covers, shapes, speed.centre_shape, work)
            if d < enough and d < m + tol + accept:
                status[j] = NEED
                hand_over(out, count, j, v0, v1, Ta, Tb)
                if fk_upto < n_links:
                    _rigid_fk(positions, robot, n_links, values, T_link)
                    fk_upto = n_links
                out.T_link[count] = T_link
                count += 1
                break
            if tracking:
                _record(track, k, t[k], d, v0, v1)
            if v0 + v1 <= 0.0:
                if tracking:
                    track.tail[k] = d
                t[k] = np.inf
                break
            reserve = d - m - 0.5 * tol
            t[k] += step_length(reserve, v0, v1)
            known[k] = keeps_apart
            if tracking and t[k] > 1.0:
                track.tail[k] = d - rest * (v0 + 0.5 * rest * v1)
    return count, n, used


@njit(cache=True)
def smallest_clearance(q1, p, pairs, robot, shapes, speed, covers, tol, track, tail_t, end):
    """The smallest clearance a search certified over pairs p (K,) (``track``: the (7, K) rows of
    a :class:`ClearanceTrack` it filled; margins from ``pairs``): returns ``(k, value, time)``,
    the pair k (-1 when K = 0), its bound of (distance - padding) in metres and where it is
    reached.

    A pair's bound is the smallest of its interval bounds and of its last step's bound over
    ``[last_t, 1]``; a last step below every pair's interval bounds is first bounded from both
    ends: at t = 1 (configuration ``q1`` (A,)) the pair's distance lower bound (bounding
    spheres raised by a primitive's solid and by the sphere covers, not cut off) and speed bounds close
    :func:`interval_bound` over ``[last_t, 1]``, which raises ``track.tail`` (``tail_t`` (K,):
    its time, 1 before). ``end`` (K, 3): per closed pair, its distance bound and speed bounds
    at t = 1 (written; NaN for the others). A cover is used at t = 1 only where the padding
    + tolerance / 2 the steps kept is positive (the pair is then known to be apart there), as
    :func:`advance` does. Packs as :func:`advance` takes them (plain tuples)."""
    pairs, robot, shapes = PairArrays(*pairs), RobotArrays(*robot), ShapeArrays(*shapes)
    speed, covers = SpeedArrays(*speed), CoverArrays(*covers)
    track = track_rows(track)
    n = p.shape[0]
    floor = np.inf
    for k in range(n):
        floor = min(floor, track.low[k] - pairs.margins[p[k]])
    n_links = robot.link_parent.shape[0]
    T_link = np.empty((n_links, 4, 4))
    values = np.empty(robot.mimic_matrix.shape[0])
    Ta = np.empty((4, 4))
    Tb = np.empty((4, 4))
    corners = np.empty((8, 3))
    work = _cover_scratch(covers.cover_start)
    posed = False
    best_k, best, best_t = -1, np.inf, np.nan
    for k in range(n):
        q = p[k]
        m = pairs.margins[q]
        end[k, 0] = np.nan
        tail_t[k] = 1.0
        if track.tail[k] - m < floor and track.last_t[k] < 1.0:
            if not posed:
                _rigid_fk(q1, robot, n_links, values, T_link)
                posed = True
            a = pairs.pair_a[q]
            b = pairs.pair_b[q]
            _shape_pose(T_link, shapes.shape_link, shapes.T_frame_shape, a, Ta)
            _shape_pose(T_link, shapes.shape_link, shapes.T_frame_shape, b, Tb)
            v0, v1 = _pair_speed(T_link, Ta, Tb, a, b, q, speed, corners)
            d = _primitive_bound(Ta, Tb, a, b, speed.centre_shape, speed.radius, covers.kind, covers.params)
            if m + 0.5 * tol > 0.0:
                d = _raised_by_covers(a, b, Ta, Tb, d, np.inf, True, covers, shapes, speed.centre_shape, work)
            end[k, 0], end[k, 1], end[k, 2] = d, v0, v1
            value, t_value = interval_bound(track.last_t[k], track.last_d[k], track.last_v0[k], track.last_v1[k],
                                            1.0, d, v0, v1)
            if value > track.tail[k]:
                track.tail[k] = value
                tail_t[k] = t_value
        low = track.low[k] - m
        tail = track.tail[k] - m
        if low < best:
            best_k, best, best_t = k, low, track.low_t[k]
        if tail < best:
            best_k, best, best_t = k, tail, tail_t[k]
    return best_k, best, best_t


@njit(cache=True, inline="always")
def step_length(reserve, v0, v1):
    """The longest h with h (v0 + h v1 / 2) <= reserve: how far a pair whose distance leaves
    ``reserve`` and changes at most at the rate v0 + s v1 at s from now may step (v0 + v1 > 0)."""
    return 2.0 * reserve / (v0 + np.sqrt(v0 * v0 + 2.0 * v1 * reserve))


@njit(cache=True, inline="always")
def hand_over(out, slot, j, v0, v1, Ta, Tb):
    """Item j to the narrow phase in NEED slot ``slot`` of ``out`` (:class:`AdvanceOutputs`):
    its speed bounds and the pair's poses (the caller writes ``out.T_link[slot]``)."""
    out.need[slot] = j
    out.V0[slot] = v0
    out.V1[slot] = v1
    out.T_pair[slot, 0] = Ta
    out.T_pair[slot, 1] = Tb


@njit(cache=True)
def _sphere_bound(Ta, Tb, a, b, centre_shape, radius):
    """Lower bound of the distance of shapes a and b (poses Ta, Tb): their bounding spheres'."""
    gap = 0.0
    for r in range(3):
        ca = Ta[r, 3]
        cb = Tb[r, 3]
        for c in range(3):
            ca += Ta[r, c] * centre_shape[a, c]
            cb += Tb[r, c] * centre_shape[b, c]
        gap += (ca - cb) * (ca - cb)
    return np.sqrt(gap) - radius[a] - radius[b]


@njit(cache=True, inline="always")
def _solid_side_bound(Ts, Tp, s, p, centre_shape, radius, kind, params):
    """Lower bound of the distance of shape s (pose Ts) from primitive p (pose Tp): the distance
    of s's bounding sphere's centre from p's solid less its radius; -inf when that centre lies
    in the solid (the bound then says nothing)."""
    cx, cy, cz = centre_shape[s, 0], centre_shape[s, 1], centre_shape[s, 2]
    wx = Ts[0, 0] * cx + Ts[0, 1] * cy + Ts[0, 2] * cz + Ts[0, 3] - Tp[0, 3]
    wy = Ts[1, 0] * cx + Ts[1, 1] * cy + Ts[1, 2] * cz + Ts[1, 3] - Tp[1, 3]
    wz = Ts[2, 0] * cx + Ts[2, 1] * cy + Ts[2, 2] * cz + Ts[2, 3] - Tp[2, 3]
    x = Tp[0, 0] * wx + Tp[1, 0] * wy + Tp[2, 0] * wz
    y = Tp[0, 1] * wx + Tp[1, 1] * wy + Tp[2, 1] * wz
    z = Tp[0, 2] * wx + Tp[1, 2] * wy + Tp[2, 2] * wz
    outside = _solid_distance(kind[p], params[p], x, y, z)
    if outside > 0.0:
        return outside - radius[s]
    return -np.inf


@njit(cache=True, inline="always")
def _primitive_bound(Ta, Tb, a, b, centre_shape, radius, kind, params):
    """Lower bound of the distance of shapes a and b: their bounding spheres' (see
    :func:`_sphere_bound`), raised where one of them is a primitive to the other's bounding
    sphere against its solid (a convex solid and a sphere whose centre is outside it are
    that far apart; a table's box is far tighter than its bounding sphere). A lower bound of
    the signed distance too: a body inside its sphere is never deeper in than the sphere."""
    d = _sphere_bound(Ta, Tb, a, b, centre_shape, radius)
    if not _by_spheres(kind[b]):
        d = max(d, _solid_side_bound(Ta, Tb, a, b, centre_shape, radius, kind, params))
    elif not _by_spheres(kind[a]):
        d = max(d, _solid_side_bound(Tb, Ta, b, a, centre_shape, radius, kind, params))
    return d


@njit(cache=True)
def _raised_by_covers(a, b, Ta, Tb, d, enough, known_apart, covers, shapes, centre_shape, work):
    """The bound ``d`` of shapes a and b raised to their cover bound (cut off at ``d`` and
    ``enough``, see :func:`cover_bound`) where that bounds the bodies' distance: the pair
    is ``known_apart``, or neither body can hold the other."""
    usable = known_apart
    if not usable:
        usable = (_holds_none(a, b, Ta, Tb, covers.container, covers.probe_start, covers.probes, shapes.obb_center,
                              shapes.obb_axes, shapes.obb_half)
                  and _holds_none(b, a, Tb, Ta, covers.container, covers.probe_start, covers.probes,
                                  shapes.obb_center, shapes.obb_axes, shapes.obb_half))
    if usable:
        cover = _cover_bound(a, b, Ta, Tb, covers.kind, covers.params, covers.cover_start, covers.cover_c,
                             covers.cover_r, centre_shape, covers.reach, d, enough, work)
        if cover > d:
            d = cover
    return d


# Public names of the step's parts, for the kernel modules that build on them
# (:mod:`kernels.grid_advance`): the same compiled functions.
rigid_fk = _rigid_fk
shape_pose = _shape_pose
sphere_bound = _sphere_bound
primitive_bound = _primitive_bound
raised_by_covers = _raised_by_covers
record_interval = _record
cover_scratch = _cover_scratch
by_spheres = _by_spheres
solid_distance = _solid_distance
solid_distance_of = _solid_distance_of
off_axis_sq = _off_axis_sq
