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
"""
from __future__ import annotations

import math

import numpy as np

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CYLINDER, KIND_SPHERE
from my_collision_pkg.core.kernels.support_features import support_points

__all__ = ["FEATURE_TOLERANCE_M", "support_feature", "feature_witness"]

FEATURE_TOLERANCE_M = 1e-7
# points of a disc (a cylinder's or cone's flat end) used as its feature's polygon
_DISC_POINTS = 8
# How far (in the segments' own parameter, 0..1) a crossing may lie outside both segments and
# still count (numerical slack); beyond it the features do not cross as found.
_CROSSING_SLACK = 1e-6


# the eight corners of a box of half-sizes 1 (x slowest, z fastest)
_BOX_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
_DISC_ANGLES = np.linspace(0.0, 2.0 * np.pi, _DISC_POINTS, endpoint=False)
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
    d_local = body.R.T @ direction_world
    points = _candidates(body, d_local)
    if body.kind == KIND_SPHERE:
        return points @ body.R.T + body.t
    out = np.empty((len(points), 3))
    count = support_points(np.ascontiguousarray(points, dtype=float), d_local, float(tolerance_m), out)
    return out[:count] @ body.R.T + body.t


def feature_witness(body0, body1, distance_m: float, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The witness points (p0, p1) where the two bodies' features along ``normal`` (body 0 -> body 1)
    meet, ``p1 = p0 + distance_m * normal``, when they meet at one point (the distance is smooth
    there); None when they touch along a segment or a patch (a kink: not smooth) or do not meet
    as found (numerical trouble: not smooth either)."""
    f0 = support_feature(body0, normal)
    f1 = support_feature(body1, -normal)
    shift = distance_m * normal
    if len(f0) == 1:
        return f0[0], f0[0] + shift
    if len(f1) == 1:
        return f1[0] - shift, f1[0]
    if len(f0) == 2 and len(f1) == 2:
        # p0 = a + s e0, p1 = b + t e1 with p1 - p0 = shift: solve in the plane normal to n (basis u, v)
        a, e0 = f0[0], f0[1] - f0[0]
        b, e1 = f1[0], f1[1] - f1[0]
        nx, ny, nz = (float(x) for x in normal)
        if abs(nx) < 0.9:                 # u = n x (1, 0, 0)
            ux, uy, uz = 0.0, nz, -ny
        else:                             # u = n x (0, 1, 0)
            ux, uy, uz = -nz, 0.0, nx
        norm = math.sqrt(ux * ux + uy * uy + uz * uz)
        ux, uy, uz = ux / norm, uy / norm, uz / norm
        vx, vy, vz = ny * uz - nz * uy, nz * ux - nx * uz, nx * uy - ny * ux
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
        return p0, p0 + shift
    return None
