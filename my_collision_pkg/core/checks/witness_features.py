"""Witness points of a convex pair from its contact features, and whether its distance is smooth there.

The signed distance of two convex solids, apart or penetrating (minus the minimum translation
distance), with unit normal ``n`` from body 0 to body 1, is attained between body 0's
*support feature* along ``+n`` (its points of largest ``n . p``) and body 1's along ``-n``.
Each feature is a point, a segment or a face (a polygon). The distance's gradient is
``n . (v_1(p1) - v_0(p0))`` with ``p0``, ``p1`` the points where the two features meet
(seen along ``n``): defined by the geometry, and the distance differentiable, when

- either feature is a single point (a vertex, a sphere's point, a cylinder's rim point):
  that point, and its translate by the distance along ``n`` on the other body; or
- both are segments that are not parallel: the points where they cross (seen along ``n``).

Any other pair of features (face-face, segment-face, parallel segments) touches along a
segment or a patch: rotating either body moves one end of it first, so the distance has a
kink there (one-sided derivatives differ) and no Jacobian row is right: such a row is not
``smooth``. GJK and EPA return *a* point of the features (coal: where its simplex ended),
right for the distance, not always the one the gradient needs (issue 40: a Panda finger box
through the post, edge against the cylinder's side line, Jacobian 62 % off).

Features are found with a tolerance of ``FEATURE_TOLERANCE_M`` along ``n``: a feature that
is a point only by less than that (a face tilted by a micro-radian) is taken as the face,
and its row as not smooth (its derivative changes over a tiny motion).

A smooth contact must also stay the same contact over a small motion: the distance is
differentiable at a switch-free configuration, but a switch (another vertex reaching the
support plane, the contact point leaving the other feature, another local minimum of the
overlap becoming the deepest) one tiny motion away puts a kink right beside it, and a
Jacobian there is the gradient only on one side. :func:`feature_contact` therefore also
returns the contact's *switch margin* (metres), the smallest of

- for a point or segment feature: how far behind its support plane the body's next
  candidate point lies (:func:`kernels.support_features.support_gap`; a cylinder's rim
  point: its opposite rim point, ``2 hl |n . axis|``, or the rim point across the cap,
  ``2 r sin(angle to the axis)``; a capsule's or cone's likewise);
- where one feature is a point and the other a segment or a polygon: how far inside the
  other the point lies, seen along ``n`` (:func:`kernels.support_features.inside_margin`);
  two crossing segments: how far inside each the crossing lies;
- how much deeper than the depth the best other local minimum of the overlap is, among those
  reached from the MTD check's candidate directions and the bodies' face normals more than
  0.01 rad (``_SAME_BASIN_COS``) from ``n`` (:func:`kernels.mtd.other_basin_gap`; computed only when the
  others are at least ``SWITCH_MARGIN_M``).

Each of them changes by at most about twice the largest point speed times the motion (the
Panda: about 2 m per radian), so a row whose margin is below ``SWITCH_MARGIN_M`` (2e-5 m:
a 1e-5 rad joint step, the central differences of the tests) may switch within that
motion, and is not smooth. Other local minima that no candidate or face normal reaches
(a hull edge across another body's edge, a contact on a curved rim) are not looked for.

The clearance's penetrating rows use :func:`posed_feature_contact`: all of :func:`feature_contact`
in one compiled call (:func:`kernels.support_features.feature_contact`), the same features, kinks
and margins, and points equal but for the last bit or two (the Python path's matrix products are
numpy's); this module's Python functions are its reference (test/core/test_witness_features.py).
"""
from __future__ import annotations

import math

import numpy as np

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.kernels import support_features as compiled
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CYLINDER, KIND_SPHERE
from my_collision_pkg.core.kernels.mtd import other_basin_gap
from my_collision_pkg.core.kernels.support_features import inside_margin, plane_basis, support_gap, support_points

__all__ = ["FEATURE_TOLERANCE_M", "SWITCH_MARGIN_M", "support_feature", "feature_contact", "feature_witness",
           "posed_feature_contact", "compiled_feature_contact"]

FEATURE_TOLERANCE_M = 1e-7
# A contact whose switch margin (see the module docstring) is below this is not smooth: metres,
# twice the Panda's largest point speed (about 1 m per radian) times a 1e-5 rad step.
SWITCH_MARGIN_M = 2e-5
# Local minima of the overlap closer than this to the normal (radians, after refinement) are its own.
_SAME_BASIN_COS = math.cos(1e-2)
# The refinement of another local minimum: from this step down to that one (radians).
_BASIN_START_RAD, _BASIN_STOP_RAD = 0.05, 1e-9
# points of a disc (a cylinder's or cone's flat end) used as its feature's polygon
_DISC_POINTS = 8
# How far (in the segments' own parameter, 0..1) a crossing may lie outside both segments and
# still count (numerical slack); beyond it the features do not cross as found.
_CROSSING_SLACK = 1e-6


# the eight corners of a box of half-sizes 1 (x slowest, z fastest)
_BOX_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
_DISC_ANGLES = np.linspace(0.0, 2.0 * np.pi, _DISC_POINTS, endpoint=False)
_DISC_COS, _DISC_SIN = np.cos(_DISC_ANGLES), np.sin(_DISC_ANGLES)      # the compiled path's unit disc
_DISCS: dict = {}                 # (radius, z) -> the disc's points, read-only; a world has few
_DISC_CACHE_SIZE = 1024


def _disc(radius: float, z: float) -> np.ndarray:
    disc = _DISCS.get((radius, z))
    if disc is None:
        disc = np.column_stack([radius * np.cos(_DISC_ANGLES), radius * np.sin(_DISC_ANGLES),
                                np.full(_DISC_POINTS, z)])
        disc.setflags(write=False)
        if len(_DISCS) < _DISC_CACHE_SIZE:
            _DISCS[(radius, z)] = disc
    return disc


def _candidates(body, d_local: np.ndarray) -> np.ndarray:
    """Points (shape frame) among which a support feature along ``d_local`` is found."""
    k, p = body.kind, body.params
    if k == KIND_BOX:
        return _BOX_SIGNS * p[:3]
    if k == KIND_SPHERE:
        return (p[0] * d_local / np.linalg.norm(d_local))[None, :]
    if k in (KIND_CYLINDER, KIND_CAPSULE, KIND_CONE):
        r, hl = float(p[0]), float(p[1])
        rho = float(np.hypot(d_local[0], d_local[1]))
        if k == KIND_CAPSULE:
            unit = d_local / np.linalg.norm(d_local)
            return np.array([[0.0, 0.0, hl], [0.0, 0.0, -hl]]) + r * unit
        if rho > 1e-12:
            radial = np.array([d_local[0] / rho, d_local[1] / rho, 0.0]) * r
            rims = [radial + [0.0, 0.0, -hl]] + ([radial + [0.0, 0.0, hl]] if k == KIND_CYLINDER else [])
        else:
            rims = []
        discs = [_disc(r, -hl)] + ([_disc(r, hl)] if k == KIND_CYLINDER else [])
        apex = [np.array([[0.0, 0.0, hl]])] if k == KIND_CONE else []
        return np.vstack([np.asarray(rims).reshape(-1, 3)] + discs + apex)
    return body.vertices_shape


def support_feature(body, direction_world: np.ndarray, tolerance_m: float = FEATURE_TOLERANCE_M) -> np.ndarray:
    """The support feature of a posed convex solid (:class:`penetration.Body`) along a unit direction:
    its points (world, (m, 3)) within ``tolerance_m`` of the largest projection, duplicates dropped
    (compiled: :func:`kernels.support_features.support_points`). One point: a vertex; two: a
    segment; more: a face (or collinear points, reduced to the segment's ends)."""
    return _feature(body, direction_world, tolerance_m)[0]


def _round_gap(body, d_local: np.ndarray) -> float:
    """How far behind the support plane the next extreme point of a round body lies (its single support
    point is a rim point or a cap's point): the opposite rim, or the rim point across the axis."""
    k, p = body.kind, body.params
    r, hl = float(p[0]), float(p[1])
    x, y, z = (float(v) for v in d_local)
    length = math.sqrt(x * x + y * y + z * z)
    rho, z = math.hypot(x, y) / length, z / length
    if k == KIND_CYLINDER:
        return min(2.0 * hl * abs(z), 2.0 * r * rho)
    if k == KIND_CAPSULE:
        return 2.0 * hl * abs(z)
    apex_over_rim = 2.0 * hl * z - r * rho          # cone: the apex at +hl, the base rim at -hl
    return abs(apex_over_rim) if apex_over_rim >= 0.0 else min(-apex_over_rim, 2.0 * r * rho)


def _feature(body, direction_world: np.ndarray, tolerance_m: float = FEATURE_TOLERANCE_M) -> tuple[np.ndarray, float]:
    """(support feature as :func:`support_feature`, its gap): how far behind the support plane the body's
    next candidate point lies, for a point or a segment (+inf for a face, a sphere, a round body's side
    line or cap)."""
    d_local = body.R.T @ direction_world
    points = _candidates(body, d_local)
    if body.kind == KIND_SPHERE:
        return points @ body.R.T + body.t, math.inf
    points = np.ascontiguousarray(points, dtype=float)
    out = np.empty((len(points), 3))
    count = support_points(points, d_local, float(tolerance_m), out)
    if count > 2:
        gap = math.inf
    elif body.kind in (KIND_CYLINDER, KIND_CAPSULE, KIND_CONE):
        gap = _round_gap(body, d_local) if count == 1 else math.inf
    else:
        gap = support_gap(points, d_local, float(tolerance_m))
    return out[:count] @ body.R.T + body.t, gap


_NO_FACES = np.zeros((0, 3))
_NO_OFFSETS = np.zeros(0)
_FACES: dict = {}                 # id(face normals) -> (those normals, unit normals, offsets); a world has few
_FACES_CACHE_SIZE = 1024


def _faces(body) -> tuple[np.ndarray, np.ndarray]:
    """(unit outward face normals (F, 3), their planes' offsets (F,)) of a convex vertex set in its own frame,
    kept per normals array (the world keeps one per shape); none for a primitive (its faces are the MTD
    check's candidate directions)."""
    normals = body.face_normals_shape
    if normals is None or body.vertices_shape is None:
        return _NO_FACES, _NO_OFFSETS
    held = _FACES.get(id(normals))
    if held is None or held[0] is not normals:
        held = (normals,) + _unit_faces(normals, body.vertices_shape)
        if len(_FACES) < _FACES_CACHE_SIZE:
            _FACES[id(normals)] = held
    return held[1], held[2]


def _unit_faces(normals: np.ndarray, vertices_shape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit outward face normals (F, 3), their planes' offsets ``max n . v`` (F,)) of a vertex set's faces."""
    unit = np.ascontiguousarray(normals / np.linalg.norm(normals, axis=1)[:, None])
    offsets = np.ascontiguousarray((unit @ np.asarray(vertices_shape, dtype=float).T).max(axis=1))
    return unit, offsets


def _contact_parts(world, shape: int) -> tuple:
    """(kind, params, vertices, unit face normals, offsets) of a shape's convex solid, as
    :func:`kernels.support_features.feature_contact` takes a body (placeholders for a primitive)."""
    kind, params, vertices = penetration.kernel_parts(world, shape)
    normals = penetration.face_normals(world, shape)
    if normals is None or kind <= KIND_CONE:
        return kind, params, vertices, _NO_FACES, _NO_OFFSETS
    return (kind, params, vertices) + _unit_faces(normals, vertices)


_PARTS_KEY = "witness_features: compiled contact parts"      # CollisionWorld.cached key, with the shape index


def contact_parts(world, shape: int) -> tuple:
    """(kind, params, vertices, unit face normals, offsets) of a shape's convex solid as
    :func:`kernels.support_features.feature_contact` takes a body, kept per world snapshot (call only when
    ``penetration.nearly_convex``)."""
    return world.cached((_PARTS_KEY, shape), _contact_parts, world, shape)


def feature_constants() -> tuple:
    """The constants :func:`kernels.support_features.feature_contact` takes after the normal, in order (the
    tolerance, the disc, the crossing slack, the switch margin and the other basins' search)."""
    return (FEATURE_TOLERANCE_M, _DISC_COS, _DISC_SIN, _CROSSING_SLACK, SWITCH_MARGIN_M, _SAME_BASIN_COS,
            _BASIN_START_RAD, _BASIN_STOP_RAD)


def posed_feature_contact(world, T_world_shape: np.ndarray, a: int, b: int, distance_m: float,
                          normal: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
    """:func:`feature_contact` of shapes ``a`` (body 0) and ``b`` (body 1) of ``world`` (both nearly convex:
    ``penetration.nearly_convex``) at the poses ``T_world_shape`` (S, 4, 4), in one compiled call
    (:func:`kernels.support_features.feature_contact`); the same answers but for the last bits of the
    points (the compiled sums run in their own order)."""
    parts_a = contact_parts(world, a)
    parts_b = contact_parts(world, b)
    out = np.empty((2, 3))
    found, margin_m = compiled.feature_contact(
        *parts_a[:3], _kernel_pose(T_world_shape[a]), *parts_a[3:], *parts_b[:3], _kernel_pose(T_world_shape[b]),
        *parts_b[3:], float(distance_m), _kernel_pose(normal), FEATURE_TOLERANCE_M, _DISC_COS, _DISC_SIN,
        _CROSSING_SLACK, SWITCH_MARGIN_M, _SAME_BASIN_COS, _BASIN_START_RAD, _BASIN_STOP_RAD, out)
    if not found:
        return None
    return out[0], out[1], float(margin_m)


def compiled_feature_contact(body0, body1, distance_m: float,
                             normal: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
    """:func:`feature_contact` of two posed bodies (:class:`penetration.Body`) through the compiled call that
    :func:`posed_feature_contact` makes (for tests and one-off pairs)."""
    faces0, offsets0 = _faces(body0)
    faces1, offsets1 = _faces(body1)
    out = np.empty((2, 3))
    found, margin_m = compiled.feature_contact(
        *body0.kernel_arguments(), faces0, offsets0, *body1.kernel_arguments(), faces1, offsets1, float(distance_m),
        _kernel_pose(np.asarray(normal, dtype=float)), FEATURE_TOLERANCE_M, _DISC_COS, _DISC_SIN, _CROSSING_SLACK,
        SWITCH_MARGIN_M, _SAME_BASIN_COS, _BASIN_START_RAD, _BASIN_STOP_RAD, out)
    if not found:
        return None
    return out[0], out[1], float(margin_m)


def _kernel_pose(array: np.ndarray) -> np.ndarray:
    """A float64 array as the compiled kernels take it: C-ordered, writable (a copy only if not)."""
    flags = array.flags
    if flags.c_contiguous and flags.writeable and array.dtype == np.float64:
        return array
    return np.array(array, dtype=np.float64, order="C")


def _other_basin(body0, body1, depth_m: float, normal: np.ndarray, p0: np.ndarray, p1: np.ndarray) -> float:
    """:func:`kernels.mtd.other_basin_gap` of the pair, witness points ``p0``, ``p1`` (metres; +inf when none
    is within SWITCH_MARGIN_M)."""
    faces0, offsets0 = _faces(body0)
    faces1, offsets1 = _faces(body1)
    k0, s0, v0, T0 = body0.kernel_arguments()
    k1, s1, v1, T1 = body1.kernel_arguments()
    return other_basin_gap(k0, s0, v0, T0, faces0, offsets0, k1, s1, v1, T1, faces1, offsets1,
                           np.ascontiguousarray(normal, dtype=float), float(depth_m), np.ascontiguousarray(p0),
                           np.ascontiguousarray(p1), SWITCH_MARGIN_M, _SAME_BASIN_COS, _BASIN_START_RAD,
                           _BASIN_STOP_RAD)


def feature_witness(body0, body1, distance_m: float, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The witness points (p0, p1) where the two bodies' features along ``normal`` (body 0 -> body 1)
    meet, ``p1 = p0 + distance_m * normal``, when they meet at one point (the distance is
    differentiable there); None when they touch along a segment or a patch (a kink: not smooth) or
    do not meet as found (numerical trouble: not smooth either). :func:`feature_contact` with the
    switch margin left out."""
    found = _contact(body0, body1, distance_m, normal, False)
    return None if found is None else found[:2]


def feature_contact(body0, body1, distance_m: float, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(p0, p1, switch margin in metres) of a penetrating convex pair (``distance_m`` < 0): the witness
    points of :func:`feature_witness` and how far the contact is from a switch (module docstring: a row
    is smooth only when it is at least SWITCH_MARGIN_M); None where :func:`feature_witness` is None."""
    return _contact(body0, body1, distance_m, normal, True)


def _contact(body0, body1, distance_m: float, normal: np.ndarray, margin: bool):
    f0, gap0 = _feature(body0, normal)
    f1, gap1 = _feature(body1, -normal)
    shift = distance_m * normal
    if len(f0) == 1 or len(f1) == 1:
        if len(f0) == 1:
            p0 = f0[0]
            p1 = p0 + shift
        else:
            p1 = f1[0]
            p0 = p1 - shift
        if not margin:
            return p0, p1
        switch = min(gap0, gap1)
        unit = np.ascontiguousarray(normal, dtype=float)
        if len(f1) > 1:
            switch = min(switch, inside_margin(np.ascontiguousarray(p0), np.ascontiguousarray(f1), len(f1), unit))
        elif len(f0) > 1:
            switch = min(switch, inside_margin(np.ascontiguousarray(p1), np.ascontiguousarray(f0), len(f0), unit))
        if switch >= SWITCH_MARGIN_M:
            switch = min(switch, _other_basin(body0, body1, -distance_m, normal, p0, p1))
        return p0, p1, switch
    if len(f0) == 2 and len(f1) == 2:
        # p0 = a + s e0, p1 = b + t e1 with p1 - p0 = shift: solve in the plane normal to n (basis u, v)
        a, e0 = f0[0], f0[1] - f0[0]
        b, e1 = f1[0], f1[1] - f1[0]
        ux, uy, uz, vx, vy, vz = plane_basis(*(float(x) for x in normal))
        e0x, e0y, e0z = (float(x) for x in e0)
        e1x, e1y, e1z = (float(x) for x in e1)
        dx, dy, dz = (float(x) for x in (b - a))
        e0u, e0v = e0x * ux + e0y * uy + e0z * uz, e0x * vx + e0y * vy + e0z * vz
        e1u, e1v = e1x * ux + e1y * uy + e1z * uz, e1x * vx + e1y * vy + e1z * vz
        du, dv = dx * ux + dy * uy + dz * uz, dx * vx + dy * vy + dz * vz
        det = e1u * e0v - e0u * e1v      # of the rows e0, -e1 in the plane
        scale = math.sqrt(e0x * e0x + e0y * e0y + e0z * e0z) * math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
        if abs(det) <= 1e-12 * (scale + 1e-300):
            return None                                           # parallel segments: a kink
        s = (e1u * dv - e1v * du) / det            # s e0 - t e1 = b - a, in the plane
        t = (e0u * dv - e0v * du) / det
        if not (-_CROSSING_SLACK <= s <= 1 + _CROSSING_SLACK and -_CROSSING_SLACK <= t <= 1 + _CROSSING_SLACK):
            return None
        p0 = a + min(max(s, 0.0), 1.0) * e0
        if not margin:
            return p0, p0 + shift
        length0 = math.sqrt(e0x * e0x + e0y * e0y + e0z * e0z)
        length1 = math.sqrt(e1x * e1x + e1y * e1y + e1z * e1z)
        switch = min(gap0, gap1, min(s, 1.0 - s) * length0, min(t, 1.0 - t) * length1)
        if switch >= SWITCH_MARGIN_M:
            switch = min(switch, _other_basin(body0, body1, -distance_m, normal, p0, p0 + shift))
        return p0, p0 + shift, switch
    return None
