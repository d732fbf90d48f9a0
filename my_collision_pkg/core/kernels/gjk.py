"""A certified lower bound of the distance between two convex solids, compiled (GJK).

The solids are given by their support functions: primitives (box, sphere, cylinder,
capsule; a cone is taken as its enclosing cylinder) by their sizes, convex meshes and
the convex hulls of meshes by their vertices. GJK walks a simplex of the Minkowski
difference ``C = A - B`` towards its point ``v`` nearest the origin. Every iteration
measures ``w``, the point of C farthest along ``-v``; the plane through w normal to v
separates the origin from all of C, so ``(v . w) / |v|`` is a lower bound of the
distance for *any* v, whatever the simplex arithmetic did, and ``|v|`` (a point of C)
an upper one. The search stops when the two are within ``eps_m + rel * bound``, when no
iteration brings v nearer, or after ``MAX_ITERATIONS``; it returns the best lower bound
seen. Its soundness rests only on the support points being those of the solids (or of
solids containing them, as a hull contains its mesh). When the solids may overlap the
bound is at most 0 (the callers then ask an exact narrow phase).

``v`` starts where the caller's ``warm`` says (the last direction found for the same
pair: consecutive steps of a motion see nearly the same poses, so two or three
iterations usually suffice) and is written back there.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                 KIND_MESH, KIND_OPEN_MESH, KIND_SPHERE)

MAX_ITERATIONS = 64
# floating-point slack taken off every bound: the support points are computed through a pose
# (a rotation and a translation of coordinates up to a few metres), metres
ROUNDING_M = 1e-12


class ConvexArrays(NamedTuple):
    """Per shape of a world (S shapes, V hull vertices in all), its convex solid for :func:`lower_bound`.

    ``kind`` and ``params`` are those of :class:`advancement.CoverArrays` (a primitive's
    sizes); a convex mesh and a mesh with a hull are their vertices
    ``vertices[vertex_start[s]:vertex_start[s + 1]]`` (shape frame). ``supported[s]``: the
    shape has a convex solid here (a primitive, or a mesh with vertices).
    """
    kind: np.ndarray             # (S,) int64, kernels.codes KIND_*
    params: np.ndarray           # (S, 3) metres
    vertex_start: np.ndarray     # (S + 1,) int64
    vertices: np.ndarray         # (V, 3) shape frame, metres
    supported: np.ndarray        # (S,) bool


@njit(cache=True)
def support(kind, params, vertices, start, stop, dx, dy, dz):
    """The point of a solid (shape frame) farthest along the direction (dx, dy, dz) (shape frame)."""
    if kind == KIND_SPHERE:
        r = params[0]
        n = math.sqrt(dx * dx + dy * dy + dz * dz)
        if n == 0.0:
            return r, 0.0, 0.0
        return r * dx / n, r * dy / n, r * dz / n
    if kind == KIND_BOX:
        return (params[0] if dx >= 0.0 else -params[0], params[1] if dy >= 0.0 else -params[1],
                params[2] if dz >= 0.0 else -params[2])
    if kind == KIND_CYLINDER or kind == KIND_CONE:       # a cone: its enclosing cylinder
        r, h = params[0], params[1]
        n = math.sqrt(dx * dx + dy * dy)
        z = h if dz >= 0.0 else -h
        if n == 0.0:
            return 0.0, 0.0, z
        return r * dx / n, r * dy / n, z
    if kind == KIND_CAPSULE:
        r, h = params[0], params[1]
        n = math.sqrt(dx * dx + dy * dy + dz * dz)
        z = h if dz >= 0.0 else -h
        if n == 0.0:
            return 0.0, 0.0, z + r
        return r * dx / n, r * dy / n, z + r * dz / n
    best = -np.inf
    bx, by, bz = 0.0, 0.0, 0.0
    for i in range(start, stop):
        x, y, z = vertices[i, 0], vertices[i, 1], vertices[i, 2]
        s = x * dx + y * dy + z * dz
        if s > best:
            best = s
            bx, by, bz = x, y, z
    return bx, by, bz


@njit(cache=True, inline="always")
def _world_support(convex, s, T, dx, dy, dz):
    """Shape s (pose T (4, 4)): its point farthest along the world direction (dx, dy, dz), world frame."""
    lx = T[0, 0] * dx + T[1, 0] * dy + T[2, 0] * dz
    ly = T[0, 1] * dx + T[1, 1] * dy + T[2, 1] * dz
    lz = T[0, 2] * dx + T[1, 2] * dy + T[2, 2] * dz
    px, py, pz = support(convex.kind[s], convex.params[s], convex.vertices, convex.vertex_start[s],
                         convex.vertex_start[s + 1], lx, ly, lz)
    return (T[0, 0] * px + T[0, 1] * py + T[0, 2] * pz + T[0, 3],
            T[1, 0] * px + T[1, 1] * py + T[1, 2] * pz + T[1, 3],
            T[2, 0] * px + T[2, 1] * py + T[2, 2] * pz + T[2, 3])


@njit(cache=True)
def nearest_on_simplex(P, n, out):
    """The point of the hull of P[:n] (n <= 4 points, (4, 3)) nearest the origin, in ``out`` (3,).

    Every face of the simplex (every non-empty subset of its points) whose affine hull's
    nearest point lies inside it is a candidate; the nearest candidate is the answer (the
    hull's nearest point lies inside one face, where it is that face's affine nearest
    point). P is rewritten to hold only that face's points; returns their number.
    """
    best = np.inf
    best_mask = 1
    bx, by, bz = P[0, 0], P[0, 1], P[0, 2]
    E = np.zeros((3, 3))                   # rows past a face's size are read times 0: never garbage
    for mask in range(1, 1 << n):
        idx0 = -1
        m = 0
        for i in range(n):
            if mask & (1 << i):
                if idx0 < 0:
                    idx0 = i
                else:
                    E[m, 0] = P[i, 0] - P[idx0, 0]
                    E[m, 1] = P[i, 1] - P[idx0, 1]
                    E[m, 2] = P[i, 2] - P[idx0, 2]
                    m += 1
        p0x, p0y, p0z = P[idx0, 0], P[idx0, 1], P[idx0, 2]
        if m == 0:
            x, y, z = p0x, p0y, p0z
        else:
            # minimise |p0 + sum mu_i e_i|: G mu = -E p0, G = E E^T (m x m)
            G00 = E[0, 0] * E[0, 0] + E[0, 1] * E[0, 1] + E[0, 2] * E[0, 2]
            r0 = -(E[0, 0] * p0x + E[0, 1] * p0y + E[0, 2] * p0z)
            if m == 1:
                if G00 <= 1e-300:
                    continue
                mu0, mu1, mu2 = r0 / G00, 0.0, 0.0
            else:
                G01 = E[0, 0] * E[1, 0] + E[0, 1] * E[1, 1] + E[0, 2] * E[1, 2]
                G11 = E[1, 0] * E[1, 0] + E[1, 1] * E[1, 1] + E[1, 2] * E[1, 2]
                r1 = -(E[1, 0] * p0x + E[1, 1] * p0y + E[1, 2] * p0z)
                if m == 2:
                    det = G00 * G11 - G01 * G01
                    if det <= 1e-14 * G00 * G11 or det <= 1e-300:
                        continue
                    mu0 = (r0 * G11 - r1 * G01) / det
                    mu1 = (G00 * r1 - G01 * r0) / det
                    mu2 = 0.0
                else:
                    G02 = E[0, 0] * E[2, 0] + E[0, 1] * E[2, 1] + E[0, 2] * E[2, 2]
                    G12 = E[1, 0] * E[2, 0] + E[1, 1] * E[2, 1] + E[1, 2] * E[2, 2]
                    G22 = E[2, 0] * E[2, 0] + E[2, 1] * E[2, 1] + E[2, 2] * E[2, 2]
                    r2 = -(E[2, 0] * p0x + E[2, 1] * p0y + E[2, 2] * p0z)
                    c00 = G11 * G22 - G12 * G12
                    c01 = G02 * G12 - G01 * G22
                    c02 = G01 * G12 - G02 * G11
                    det = G00 * c00 + G01 * c01 + G02 * c02
                    if det <= 1e-14 * G00 * G11 * G22 or det <= 1e-300:
                        continue
                    c11 = G00 * G22 - G02 * G02
                    c12 = G01 * G02 - G00 * G12
                    c22 = G00 * G11 - G01 * G01
                    mu0 = (c00 * r0 + c01 * r1 + c02 * r2) / det
                    mu1 = (c01 * r0 + c11 * r1 + c12 * r2) / det
                    mu2 = (c02 * r0 + c12 * r1 + c22 * r2) / det
            if mu0 <= 0.0 or (m > 1 and mu1 <= 0.0) or (m > 2 and mu2 <= 0.0) or mu0 + mu1 + mu2 >= 1.0:
                continue                           # the affine nearest point is outside this face
            x = p0x + mu0 * E[0, 0] + mu1 * E[1, 0] + mu2 * E[2, 0]
            y = p0y + mu0 * E[0, 1] + mu1 * E[1, 1] + mu2 * E[2, 1]
            z = p0z + mu0 * E[0, 2] + mu1 * E[1, 2] + mu2 * E[2, 2]
        norm2 = x * x + y * y + z * z
        if norm2 < best:
            best = norm2
            best_mask = mask
            bx, by, bz = x, y, z
    out[0], out[1], out[2] = bx, by, bz
    kept = 0
    for i in range(n):
        if best_mask & (1 << i):
            P[kept, 0], P[kept, 1], P[kept, 2] = P[i, 0], P[i, 1], P[i, 2]
            kept += 1
    return kept


@njit(cache=True)
def lower_bound(convex, a, Ta, b, Tb, warm, eps_m, rel):
    """A lower bound of the distance between shapes a and b of ``convex`` (a :class:`ConvexArrays`)
    at poses Ta, Tb (4, 4), metres: within ``eps_m + rel * bound`` of the distance when the
    search converged, at most 0 when the solids may overlap. ``warm`` (3,) is the direction to
    start from (A's point minus B's; any non-zero vector), overwritten with the last one."""
    P = np.empty((4, 3))
    v = np.empty(3)
    vx, vy, vz = warm[0], warm[1], warm[2]
    if vx * vx + vy * vy + vz * vz <= 1e-24:
        vx = Ta[0, 3] - Tb[0, 3]
        vy = Ta[1, 3] - Tb[1, 3]
        vz = Ta[2, 3] - Tb[2, 3]
        if vx * vx + vy * vy + vz * vz <= 1e-24:
            vx, vy, vz = 1.0, 0.0, 0.0
    n = 0
    lower = -np.inf
    norm2 = np.inf
    for _ in range(MAX_ITERATIONS):
        ax, ay, az = _world_support(convex, a, Ta, -vx, -vy, -vz)
        bx, by, bz = _world_support(convex, b, Tb, vx, vy, vz)
        wx, wy, wz = ax - bx, ay - by, az - bz
        vn = math.sqrt(vx * vx + vy * vy + vz * vz)
        bound = (vx * wx + vy * wy + vz * wz) / vn
        if bound > lower:
            lower = bound
        if norm2 < np.inf and math.sqrt(norm2) - lower <= eps_m + rel * max(lower, 0.0):
            break
        P[n, 0], P[n, 1], P[n, 2] = wx, wy, wz
        n = nearest_on_simplex(P, n + 1, v)
        new2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
        if new2 >= norm2:                  # no progress: v is as near as this arithmetic gets
            break
        norm2 = new2
        if n == 4 or new2 <= 1e-24:        # the origin is inside (or on) the simplex: the solids touch
            lower = min(lower, 0.0)
            break
        vx, vy, vz = v[0], v[1], v[2]
        if math.sqrt(norm2) - lower <= eps_m + rel * max(lower, 0.0):
            break
    warm[0], warm[1], warm[2] = vx, vy, vz
    return lower - ROUNDING_M * (1.0 + abs(lower))


def convex_arrays(kinds, params, vertex_sets) -> ConvexArrays:
    """A :class:`ConvexArrays` from per-shape kinds (S,), sizes (S, 3) and vertex sets (S arrays
    (V_s, 3), empty where the shape has no convex solid of vertices)."""
    kinds = np.asarray(kinds, dtype=np.int64)
    counts = [len(v) for v in vertex_sets]
    start = np.zeros(len(counts) + 1, dtype=np.int64)
    start[1:] = np.cumsum(counts)
    vertices = np.ascontiguousarray(np.concatenate([np.asarray(v, dtype=float).reshape(-1, 3) for v in vertex_sets]
                                                   + [np.zeros((0, 3))]))
    primitive = (kinds >= KIND_BOX) & (kinds <= KIND_CONE)
    meshy = (kinds == KIND_CONVEX) | (kinds == KIND_MESH) | (kinds == KIND_OPEN_MESH)
    supported = primitive | (meshy & (np.asarray(counts) > 0))
    return ConvexArrays(kinds, np.ascontiguousarray(np.asarray(params, dtype=float).reshape(-1, 3)), start, vertices,
                        supported)
