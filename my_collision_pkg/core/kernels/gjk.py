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

A vertex solid's support point is found by climbing its convex hull's edges
(:func:`vertex_support`): from the best of its extreme vertices along ``PROBE_DIRECTIONS`` at the
first iteration and from the last support point after that, to a neighbour farther along
the direction while there is one. On a convex polytope a vertex no neighbour of which is
farther along a direction is the farthest of all (the simplex method's argument), so the
point is the one a scan of every vertex finds; on the Panda's hulls (102 to 152
vertices) it looks at a fifth of them or fewer. A vertex set given without its hull's
edges (or whose hull qhull cannot build: flat or degenerate) is scanned whole.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                 KIND_MESH, KIND_OPEN_MESH, KIND_SPHERE)

# Reference counts: numba takes a reference count on each array argument of a compiled function at its entry and
# drops it after the argument's last use, an atomic operation each way; its pruning pass removes the pairs only
# where all those drops fall at one point and no call to another compiled function lies between. The small helpers
# called in the distance loops (vertex_support, nearest_face_ab, posed_support, epa._support_world) therefore call
# none (their work inlined: _climb, posed_point) and have one exit, where every array argument is read last
# (``0 * (a.shape[0] + ...)``, added to an integer result): no count is taken at all (~70 ns a call saved).
MAX_ITERATIONS = 64
# floating-point slack taken off every bound: the support points are computed through a pose
# (a rotation and a translation of coordinates up to a few metres), metres
ROUNDING_M = 1e-12
# the directions (shape frame) along which each vertex solid's extreme vertices are kept, to
# start a climb from: the cube's 6 face and 8 corner directions
PROBE_DIRECTIONS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1],
                             [1, 1, 1], [1, 1, -1], [1, -1, 1], [1, -1, -1], [-1, 1, 1], [-1, 1, -1],
                             [-1, -1, 1], [-1, -1, -1]], dtype=float)


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
    # the hulls' edges: vertex i's neighbours are neighbours[neighbour_start[i]:neighbour_start[i + 1]]
    # (indices into vertices); a shape whose vertices have none is scanned whole (see vertex_support)
    neighbour_start: np.ndarray  # (V + 1,) int64
    neighbours: np.ndarray       # (E,) int64
    probes: np.ndarray           # (S, len(PROBE_DIRECTIONS)) int64 extreme vertex per probe direction (-1: none)


@njit(cache=True, inline="always")
def primitive_support(kind, p0, p1, p2, dx, dy, dz):
    """The point of a primitive solid (sizes p0, p1, p2: :class:`ConvexArrays` ``params``) farthest
    along (dx, dy, dz), shape frame. Numbers only: an array passed to an inlined helper costs a
    reference count per call."""
    if kind == KIND_SPHERE:
        r = p0
        n = math.sqrt(dx * dx + dy * dy + dz * dz)
        if n == 0.0:
            return r, 0.0, 0.0
        return r * dx / n, r * dy / n, r * dz / n
    if kind == KIND_BOX:
        return (p0 if dx >= 0.0 else -p0, p1 if dy >= 0.0 else -p1, p2 if dz >= 0.0 else -p2)
    if kind == KIND_CYLINDER or kind == KIND_CONE:       # a cone: its enclosing cylinder
        r, h = p0, p1
        n = math.sqrt(dx * dx + dy * dy)
        z = h if dz >= 0.0 else -h
        if n == 0.0:
            return 0.0, 0.0, z
        return r * dx / n, r * dy / n, z
    # capsule
    r, h = p0, p1
    n = math.sqrt(dx * dx + dy * dy + dz * dz)
    z = h if dz >= 0.0 else -h
    if n == 0.0:
        return 0.0, 0.0, z + r
    return r * dx / n, r * dy / n, z + r * dz / n


@njit(cache=True)
def vertex_support(vertices, neighbour_start, neighbours, probes, s, start, stop, at, dx, dy, dz):
    """The index of shape s's vertex (``vertices[start:stop]``) farthest along (dx, dy, dz) (shape
    frame): climbing its hull's edges from vertex ``at``, or when ``at`` < 0 from the best of its
    extreme vertices along the probe directions (``probes[s]``, -1 past the last); a vertex with
    no neighbours (a set given without its hull's edges) has the whole range scanned instead.
    A plain call (:func:`_climb`'s), where no reference count is taken (the note above)."""
    return _climb(vertices, neighbour_start, neighbours, probes, s, start, stop, at, dx, dy, dz)


@njit(inline="always")
def _climb(vertices, neighbour_start, neighbours, probes, s, start, stop, at, dx, dy, dz):
    """:func:`vertex_support`'s work, inlined into it and into :func:`posed_support`: one exit, where every array
    argument is read last (the note on reference counts above)."""
    if at < 0:
        best = -np.inf
        at = start
        for k in range(probes.shape[1]):
            i = probes[s, k]
            if i < 0:
                break
            v = vertices[i, 0] * dx + vertices[i, 1] * dy + vertices[i, 2] * dz
            if v > best:
                best = v
                at = i
    if neighbour_start[at + 1] == neighbour_start[at]:
        best = -np.inf
        at = start
        for i in range(start, stop):
            v = vertices[i, 0] * dx + vertices[i, 1] * dy + vertices[i, 2] * dz
            if v > best:
                best = v
                at = i
    else:
        best = vertices[at, 0] * dx + vertices[at, 1] * dy + vertices[at, 2] * dz
        moved = True
        while moved:
            moved = False
            for e in range(neighbour_start[at], neighbour_start[at + 1]):
                j = neighbours[e]
                v = vertices[j, 0] * dx + vertices[j, 1] * dy + vertices[j, 2] * dz
                if v > best:
                    best = v
                    at = j
                    moved = True
                    break
    return at + 0 * (vertices.shape[0] + neighbour_start.shape[0] + neighbours.shape[0] + probes.shape[0])


@njit(cache=True)
def nearest_on_simplex(P, n, out):
    """See :func:`nearest_face`, with scratch of its own."""
    return nearest_face(P, n, out, np.empty((3, 3)))


@njit(cache=True)
def nearest_face(P, n, out, E):
    """The point of the hull of P[:n] (n <= 4 points, (4, 3)) nearest the origin, in ``out`` (3,).

    Every face of the simplex (every non-empty subset of its points) whose affine hull's
    nearest point lies inside it is a candidate; the nearest candidate is the answer (the
    hull's nearest point lies inside one face, where it is that face's affine nearest
    point). P is rewritten to hold only that face's points; returns their number. ``E`` (3, 3)
    is scratch, zeroed here.

    The faces holding the newest point ``P[n - 1]`` are tried first and alone when one of them
    is a candidate: GJK's nearest point lies on one of those (the previous simplex's nearest
    point was not beaten by its own faces). Only when rounding leaves none are the others
    tried. Whatever face is taken, GJK's lower bound stays sound: it rests on the support
    points alone.
    """
    best = np.inf
    best_mask = 1
    bx, by, bz = P[0, 0], P[0, 1], P[0, 2]
    for i in range(3):                     # rows past a face's size are read times 0: never garbage
        E[i, 0], E[i, 1], E[i, 2] = 0.0, 0.0, 0.0     # (not E[:]: a view costs a reference count)
    newest = 1 << (n - 1)
    for mask in range(1, 2 << n):
        if mask >= 1 << n:                 # second pass, the faces without the newest point
            if best < np.inf:
                break
            mask -= 1 << n
            if mask & newest:
                continue
        elif not mask & newest:
            continue
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
    start from (A's point minus B's; any non-zero vector), overwritten with the last one.

    The iterations read plain local arrays only (the two support points in a loop over the two
    shapes, :func:`primitive_support` and :func:`vertex_support`): a tuple's field, a row view
    or an array handed to an inlined helper in the loop costs numba an atomic reference count
    each, and on the Panda's bench edges those were a third of this function's time."""
    kind, params, vertex_start, vertices = convex.kind, convex.params, convex.vertex_start, convex.vertices
    neighbour_start, neighbours, probes = convex.neighbour_start, convex.neighbours, convex.probes
    P = np.empty((4, 3))
    v = np.empty(3)
    E = np.empty((3, 3))
    T = np.empty((2, 4, 4))                # the two poses, side 0 = a, side 1 = b
    for i in range(4):
        for c in range(4):
            T[0, i, c] = Ta[i, c]
            T[1, i, c] = Tb[i, c]
    at_a, at_b = -1, -1
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
    ax = ay = az = bx = by = bz = 0.0
    for _ in range(MAX_ITERATIONS):
        for side in range(2):              # a's point farthest along -v, b's along v (world frame)
            s = a if side == 0 else b
            at = at_a if side == 0 else at_b
            dx, dy, dz = (-vx, -vy, -vz) if side == 0 else (vx, vy, vz)
            lx = T[side, 0, 0] * dx + T[side, 1, 0] * dy + T[side, 2, 0] * dz
            ly = T[side, 0, 1] * dx + T[side, 1, 1] * dy + T[side, 2, 1] * dz
            lz = T[side, 0, 2] * dx + T[side, 1, 2] * dy + T[side, 2, 2] * dz
            k = kind[s]
            if KIND_BOX <= k <= KIND_CONE:
                px, py, pz = primitive_support(k, params[s, 0], params[s, 1], params[s, 2], lx, ly, lz)
            else:
                at = vertex_support(vertices, neighbour_start, neighbours, probes, s, vertex_start[s],
                                    vertex_start[s + 1], at, lx, ly, lz)
                px, py, pz = vertices[at, 0], vertices[at, 1], vertices[at, 2]
            wx = T[side, 0, 0] * px + T[side, 0, 1] * py + T[side, 0, 2] * pz + T[side, 0, 3]
            wy = T[side, 1, 0] * px + T[side, 1, 1] * py + T[side, 1, 2] * pz + T[side, 1, 3]
            wz = T[side, 2, 0] * px + T[side, 2, 1] * py + T[side, 2, 2] * pz + T[side, 2, 3]
            if side == 0:
                ax, ay, az, at_a = wx, wy, wz, at
            else:
                bx, by, bz, at_b = wx, wy, wz, at
        wx, wy, wz = ax - bx, ay - by, az - bz
        vn = math.sqrt(vx * vx + vy * vy + vz * vz)
        bound = (vx * wx + vy * wy + vz * wz) / vn
        if bound > lower:
            lower = bound
        if norm2 < np.inf and math.sqrt(norm2) - lower <= eps_m + rel * max(lower, 0.0):
            break
        P[n, 0], P[n, 1], P[n, 2] = wx, wy, wz
        n = nearest_face(P, n + 1, v, E)
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


def convex_arrays(kinds, params, vertex_sets, edge_sets=None) -> ConvexArrays:
    """A :class:`ConvexArrays` from per-shape kinds (S,), sizes (S, 3) and vertex sets (S arrays
    (V_s, 3), empty where the shape has no convex solid of vertices), with each vertex set's
    extreme vertices along ``PROBE_DIRECTIONS``. ``edge_sets``: per shape, per vertex the
    indices of its neighbours along its hull's edges (``geometry.hulls.hull_edges``) for
    :func:`vertex_support`; None, or an empty list for a shape: its vertices are scanned whole."""
    kinds = np.asarray(kinds, dtype=np.int64)
    sets = [np.asarray(v, dtype=float).reshape(-1, 3) for v in vertex_sets]
    counts = [len(v) for v in sets]
    start = np.zeros(len(counts) + 1, dtype=np.int64)
    start[1:] = np.cumsum(counts)
    vertices = np.ascontiguousarray(np.concatenate(sets + [np.zeros((0, 3))]))
    primitive = (kinds >= KIND_BOX) & (kinds <= KIND_CONE)
    meshy = (kinds == KIND_CONVEX) | (kinds == KIND_MESH) | (kinds == KIND_OPEN_MESH)
    supported = primitive | (meshy & (np.asarray(counts) > 0))
    degree = np.zeros(len(vertices), dtype=np.int64)
    lists, probes = [], np.full((len(sets), len(PROBE_DIRECTIONS)), -1, dtype=np.int64)
    for s, points in enumerate(sets):
        if not len(points):
            continue
        probes[s] = start[s] + np.argmax(points @ PROBE_DIRECTIONS.T, axis=0)
        edges = edge_sets[s] if edge_sets is not None else []
        if len(edges) == len(points):
            for i, near in enumerate(edges):
                degree[start[s] + i] = len(near)
                lists.append(start[s] + np.asarray(near, dtype=np.int64))
    neighbour_start = np.zeros(len(vertices) + 1, dtype=np.int64)
    neighbour_start[1:] = np.cumsum(degree)
    neighbours = np.ascontiguousarray(np.concatenate(lists + [np.zeros(0, dtype=np.int64)]).astype(np.int64))
    return ConvexArrays(kinds, np.ascontiguousarray(np.asarray(params, dtype=float).reshape(-1, 3)), start, vertices,
                        supported, neighbour_start, neighbours, probes)


# hull_distances: iterations at most (a polytope pair converges in far fewer; a row that does not is
# left to the caller's exact fallback), and the gap between the upper and the lower bound accepted when
# the search stops without progress (the arithmetic's floor), metres
HULL_MAX_ITERATIONS = 128
HULL_STALL_M = 1e-9


@njit(cache=True)
def nearest_face_ab(P, PA, PB, n, E, out):
    """:func:`nearest_face` that also carries each simplex point's two support points (``PA``, ``PB``:
    A's and B's, P = PA - PB) and writes the nearest point's pair of witnesses: ``out`` (9,) =
    (v, point of A, point of B), v = a - b. Returns the number of points kept (compacted in P, PA, PB)."""
    best = np.inf
    best_mask = 1
    b0 = b1 = b2 = 0.0
    for i in range(3):
        E[i, 0], E[i, 1], E[i, 2] = 0.0, 0.0, 0.0
    newest = 1 << (n - 1)
    for mask in range(1, 2 << n):
        if mask >= 1 << n:
            if best < np.inf:
                break
            mask -= 1 << n
            if mask & newest:
                continue
        elif not mask & newest:
            continue
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
        mu0, mu1, mu2 = 0.0, 0.0, 0.0
        if m > 0:
            G00 = E[0, 0] * E[0, 0] + E[0, 1] * E[0, 1] + E[0, 2] * E[0, 2]
            r0 = -(E[0, 0] * p0x + E[0, 1] * p0y + E[0, 2] * p0z)
            if m == 1:
                if G00 <= 1e-300:
                    continue
                mu0 = r0 / G00
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
                continue
        x = p0x + mu0 * E[0, 0] + mu1 * E[1, 0] + mu2 * E[2, 0]
        y = p0y + mu0 * E[0, 1] + mu1 * E[1, 1] + mu2 * E[2, 1]
        z = p0z + mu0 * E[0, 2] + mu1 * E[1, 2] + mu2 * E[2, 2]
        norm2 = x * x + y * y + z * z
        if norm2 < best:
            best = norm2
            best_mask = mask
            b0, b1, b2 = mu0, mu1, mu2
    # the witnesses: the same weights on A's and B's support points of the face taken
    w0 = 1.0 - b0 - b1 - b2
    for c in range(9):
        out[c] = 0.0
    j = 0
    for i in range(n):
        if best_mask & (1 << i):
            w = w0 if j == 0 else (b0 if j == 1 else (b1 if j == 2 else b2))
            for c in range(3):
                out[3 + c] += w * PA[i, c]
                out[6 + c] += w * PB[i, c]
            j += 1
    for c in range(3):
        out[c] = out[3 + c] - out[6 + c]
    kept = 0
    for i in range(n):
        if best_mask & (1 << i):
            for c in range(3):
                P[kept, c], PA[kept, c], PB[kept, c] = P[i, c], PA[i, c], PB[i, c]
            kept += 1
    # (one exit: reference counts)
    return kept + 0 * (P.shape[0] + PA.shape[0] + PB.shape[0] + E.shape[0] + out.shape[0])


@njit(cache=True)
def hull_distances(convex, shape_a, shape_b, Ta, Tb, eps_m, distance, p0, p1, converged, tetrahedra, inside,
                   support):
    """The distance of convex solids ``shape_a[k]``, ``shape_b[k]`` of ``convex`` (a :class:`ConvexArrays`)
    at poses ``Ta[k]``, ``Tb[k]`` (K, 4, 4) for every row k, with its witness points ``p0[k]`` (on a)
    and ``p1[k]`` (on b), world frame: GJK run until its upper bound |a - b| and its lower bound are
    within ``eps_m`` (plus as much relative), ``distance[k]`` = |a - b|. ``converged[k]``: False where
    the solids touch or overlap, or the search did not close the gap (HULL_MAX_ITERATIONS, or no progress
    with the gap above HULL_STALL_M): the caller measures those rows otherwise. Deterministic: the same
    rows give the same bits in any process.

    ``inside[k]``: True where the search ended with a tetrahedron of support points holding the origin (the solids
    overlap), kept in ``tetrahedra[k]`` (3, 4, 3): its points of A - B, A's and B's support points (world), the
    start an EPA takes (``epa.expand_tetrahedra``) without a GJK of its own; ``tetrahedra`` (0, 3, 4, 3) and
    ``inside`` (0,) keep none. ``support[k]`` (2,): the vertices of a and b (indices into the vertex array; -1 for a
    primitive) of the last support points, along the final direction (a's farthest towards b, b's towards a); a
    (0, 2) array keeps none."""
    keep = inside.shape[0] > 0
    keep_support = support.shape[0] > 0
    kind, params, vertex_start, vertices = convex.kind, convex.params, convex.vertex_start, convex.vertices
    neighbour_start, neighbours, probes = convex.neighbour_start, convex.neighbours, convex.probes
    P = np.empty((4, 3))
    PA = np.empty((4, 3))
    PB = np.empty((4, 3))
    E = np.empty((3, 3))
    out = np.empty(9)
    T = np.empty((2, 4, 4))
    for k in range(shape_a.shape[0]):
        a, b = shape_a[k], shape_b[k]
        for i in range(4):
            for c in range(4):
                T[0, i, c] = Ta[k, i, c]
                T[1, i, c] = Tb[k, i, c]
        vx = T[0, 0, 3] - T[1, 0, 3]
        vy = T[0, 1, 3] - T[1, 1, 3]
        vz = T[0, 2, 3] - T[1, 2, 3]
        if vx * vx + vy * vy + vz * vz <= 1e-24:
            vx, vy, vz = 1.0, 0.0, 0.0
        at_a, at_b = -1, -1
        n = 0
        lower = -np.inf
        norm2 = np.inf
        ok = False
        qax = qay = qaz = qbx = qby = qbz = 0.0      # the witnesses of the current v
        ax = ay = az = bx = by = bz = 0.0
        for _ in range(HULL_MAX_ITERATIONS):
            for side in range(2):
                s = a if side == 0 else b
                at = at_a if side == 0 else at_b
                dx, dy, dz = (-vx, -vy, -vz) if side == 0 else (vx, vy, vz)
                lx = T[side, 0, 0] * dx + T[side, 1, 0] * dy + T[side, 2, 0] * dz
                ly = T[side, 0, 1] * dx + T[side, 1, 1] * dy + T[side, 2, 1] * dz
                lz = T[side, 0, 2] * dx + T[side, 1, 2] * dy + T[side, 2, 2] * dz
                kk = kind[s]
                if KIND_BOX <= kk <= KIND_CONE:
                    px, py, pz = primitive_support(kk, params[s, 0], params[s, 1], params[s, 2], lx, ly, lz)
                else:
                    at = vertex_support(vertices, neighbour_start, neighbours, probes, s, vertex_start[s],
                                        vertex_start[s + 1], at, lx, ly, lz)
                    px, py, pz = vertices[at, 0], vertices[at, 1], vertices[at, 2]
                wx = T[side, 0, 0] * px + T[side, 0, 1] * py + T[side, 0, 2] * pz + T[side, 0, 3]
                wy = T[side, 1, 0] * px + T[side, 1, 1] * py + T[side, 1, 2] * pz + T[side, 1, 3]
                wz = T[side, 2, 0] * px + T[side, 2, 1] * py + T[side, 2, 2] * pz + T[side, 2, 3]
                if side == 0:
                    ax, ay, az, at_a = wx, wy, wz, at
                else:
                    bx, by, bz, at_b = wx, wy, wz, at
            wx, wy, wz = ax - bx, ay - by, az - bz
            vn = math.sqrt(vx * vx + vy * vy + vz * vz)
            bound = (vx * wx + vy * wy + vz * wz) / vn
            if bound > lower:
                lower = bound
            if norm2 < np.inf and math.sqrt(norm2) - lower <= eps_m * (1.0 + max(lower, 0.0)):
                ok = True
                break
            P[n, 0], P[n, 1], P[n, 2] = wx, wy, wz
            PA[n, 0], PA[n, 1], PA[n, 2] = ax, ay, az
            PB[n, 0], PB[n, 1], PB[n, 2] = bx, by, bz
            n = nearest_face_ab(P, PA, PB, n + 1, E, out)
            new2 = out[0] * out[0] + out[1] * out[1] + out[2] * out[2]
            if new2 >= norm2:          # no progress: the arithmetic's floor
                ok = math.sqrt(norm2) - lower <= HULL_STALL_M
                break
            norm2 = new2
            qax, qay, qaz, qbx, qby, qbz = out[3], out[4], out[5], out[6], out[7], out[8]
            if n == 4 or new2 <= 1e-24:
                break                  # touching or overlapping: not ours
            vx, vy, vz = out[0], out[1], out[2]
        if keep_support:
            support[k, 0], support[k, 1] = at_a, at_b
        if keep:
            inside[k] = n == 4
            if n == 4:
                for i in range(4):
                    for c in range(3):
                        tetrahedra[k, 0, i, c] = P[i, c]
                        tetrahedra[k, 1, i, c] = PA[i, c]
                        tetrahedra[k, 2, i, c] = PB[i, c]
        converged[k] = ok and lower > 0.0
        distance[k] = math.sqrt(norm2) if norm2 < np.inf else 0.0
        p0[k, 0], p0[k, 1], p0[k, 2] = qax, qay, qaz
        p1[k, 0], p1[k, 1], p1[k, 2] = qbx, qby, qbz


# how far inside its axis segment's ends (metres, plus as much relative) the nearest axis point of a cylinder
# must be, and how far beyond the cylinder's radius the other solid, for cylinder_side_distances to settle a row
SIDE_MARGIN_M = 1e-9


@njit(cache=True)
def cylinder_side_distances(convex, shape_a, shape_b, cylinder_side, Ta, Tb, eps_m, distance, p0, p1, converged):
    """:func:`hull_distances` of rows pairing a polytope (a hull, a box) with a cylinder, exact where the pair's
    nearest points lie on the cylinder's side (not on a cap or a rim); ``cylinder_side[k]`` is 0 where
    ``shape_a[k]`` is the cylinder, 1 where ``shape_b[k]`` is.

    A cylinder of radius r about the axis segment S lies in the capsule ``S + ball(r)``, so its distance to a
    solid P is at least ``dist(P, S) - r``; P and S are polytopes (S a box of zero width), so GJK reaches their
    nearest points p and s exactly in finitely many steps. Where s is inside S (by ``SIDE_MARGIN_M``), p - s is
    perpendicular to the axis and the point ``s + r (p - s) / |p - s|`` is on the cylinder's side: the bound is
    attained there, so that point and p are the cylinder's and P's nearest points, at ``|p - s| - r``. Rows whose
    s is an end of S (the nearest point on a cap or a rim), or whose P comes within ``SIDE_MARGIN_M`` of the
    capsule, are left (``converged`` False) for the caller to measure otherwise."""
    kind = convex.kind.copy()
    params = convex.params.copy()
    for k in range(shape_a.shape[0]):               # each row's cylinder as its axis segment
        s = shape_a[k] if cylinder_side[k] == 0 else shape_b[k]
        kind[s] = KIND_BOX
        params[s, 0], params[s, 1], params[s, 2] = 0.0, 0.0, convex.params[s, 1]
    segments = ConvexArrays(kind, params, convex.vertex_start, convex.vertices, convex.supported,
                            convex.neighbour_start, convex.neighbours, convex.probes)
    hull_distances(segments, shape_a, shape_b, Ta, Tb, eps_m, distance, p0, p1, converged, np.empty((0, 3, 4, 3)),
                   np.empty(0, dtype=np.bool_), np.empty((0, 2), dtype=np.int64))
    for k in range(shape_a.shape[0]):
        if not converged[k]:
            continue
        side = cylinder_side[k]
        s = shape_a[k] if side == 0 else shape_b[k]
        T = Ta[k] if side == 0 else Tb[k]
        r, h = convex.params[s, 0], convex.params[s, 1]
        sx, sy, sz = (p0[k, 0], p0[k, 1], p0[k, 2]) if side == 0 else (p1[k, 0], p1[k, 1], p1[k, 2])
        px, py, pz = (p1[k, 0], p1[k, 1], p1[k, 2]) if side == 0 else (p0[k, 0], p0[k, 1], p0[k, 2])
        zx, zy, zz = T[0, 2], T[1, 2], T[2, 2]
        t = (sx - T[0, 3]) * zx + (sy - T[1, 3]) * zy + (sz - T[2, 3]) * zz
        wx, wy, wz = px - sx, py - sy, pz - sz
        along = wx * zx + wy * zy + wz * zz
        wx, wy, wz = wx - along * zx, wy - along * zy, wz - along * zz
        n = math.sqrt(wx * wx + wy * wy + wz * wz)
        if not (abs(t) < h - SIDE_MARGIN_M * (1.0 + h) and n > r + SIDE_MARGIN_M
                and abs(along) <= SIDE_MARGIN_M):
            converged[k] = False
            continue
        cx, cy, cz = sx + r * wx / n, sy + r * wy / n, sz + r * wz / n
        distance[k] = math.sqrt((px - cx) ** 2 + (py - cy) ** 2 + (pz - cz) ** 2)
        if side == 0:
            p0[k, 0], p0[k, 1], p0[k, 2] = cx, cy, cz
        else:
            p1[k, 0], p1[k, 1], p1[k, 2] = cx, cy, cz


# cylinder_end_distances: the most the upper bound |p - c| of a settled row may exceed the lower bound of the
# planes along its normal touching the two solids, metres (the row's distance is exact to this), the vertex walks
# and Newton steps at most, and the nearest circle point's tolerance between two Newton steps, radians
END_CERTIFIED_M = 1e-10
END_MAX_STEPS = 12
END_NEWTON_STEPS = 30
END_NEWTON_RAD = 1e-15


@njit(cache=True)
def posed_support(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, s, T, at, dx, dy, dz):
    """The point of shape s (a primitive, or a vertex solid: :class:`ConvexArrays`' arrays) at pose T farthest along
    the world direction (dx, dy, dz): (x, y, z, id) in the world frame, ``id`` the vertex a vertex solid's climb
    ends at (started from ``at``; -1: from its probes), or a primitive's corner sign code (bit 0, 1, 2: the local
    support point's x, y, z >= 0). A plain call (:func:`posed_point`'s), where no reference count is taken."""
    return posed_point(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, s, T, at, dx, dy, dz)


@njit(inline="always")
def posed_point(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, s, T, at, dx, dy, dz):
    """:func:`posed_support`'s work, inlined into it and into ``epa``'s support (no call inside: the climb is
    :func:`_climb`, inlined; one exit, every array argument read last: the note on reference counts above)."""
    lx = T[0, 0] * dx + T[1, 0] * dy + T[2, 0] * dz
    ly = T[0, 1] * dx + T[1, 1] * dy + T[2, 1] * dz
    lz = T[0, 2] * dx + T[1, 2] * dy + T[2, 2] * dz
    kk = kind[s]
    if KIND_BOX <= kk <= KIND_CONE:
        px, py, pz = primitive_support(kk, params[s, 0], params[s, 1], params[s, 2], lx, ly, lz)
        vid = (1 if px >= 0.0 else 0) + (2 if py >= 0.0 else 0) + (4 if pz >= 0.0 else 0)
    else:
        vid = _climb(vertices, neighbour_start, neighbours, probes, s, vertex_start[s], vertex_start[s + 1], at, lx,
                     ly, lz)
        px, py, pz = vertices[vid, 0], vertices[vid, 1], vertices[vid, 2]
    wx = T[0, 0] * px + T[0, 1] * py + T[0, 2] * pz + T[0, 3]
    wy = T[1, 0] * px + T[1, 1] * py + T[1, 2] * pz + T[1, 3]
    wz = T[2, 0] * px + T[2, 1] * py + T[2, 2] * pz + T[2, 3]
    vid += 0 * (kind.shape[0] + params.shape[0] + vertex_start.shape[0] + vertices.shape[0]
                + neighbour_start.shape[0] + neighbours.shape[0] + probes.shape[0] + T.shape[0])
    return wx, wy, wz, vid


@njit(cache=True)
def _polytope_point(convex, s, T, at, dx, dy, dz):
    """:func:`posed_support` of polytope s (a box, or a vertex solid) of ``convex``."""
    return posed_support(convex.kind, convex.params, convex.vertex_start, convex.vertices, convex.neighbour_start,
                         convex.neighbours, convex.probes, s, T, at, dx, dy, dz)


@njit(cache=True, inline="always")
def _cylinder_top(T, r, h, dx, dy, dz):
    """``max d . x`` over the cylinder (radius r, half-length h, pose T) for the world direction d."""
    lx = T[0, 0] * dx + T[1, 0] * dy + T[2, 0] * dz
    ly = T[0, 1] * dx + T[1, 1] * dy + T[2, 1] * dz
    lz = T[0, 2] * dx + T[1, 2] * dy + T[2, 2] * dz
    return T[0, 3] * dx + T[1, 3] * dy + T[2, 3] * dz + r * math.sqrt(lx * lx + ly * ly) + h * abs(lz)


@njit(cache=True)
def _certified_gap(convex, s, Tp, at, T, r, h, px, py, pz, cx, cy, cz):
    """``|p - c| - (min over P of n . x - max over the cylinder of n . x)``, n = (p - c) / |p - c|: how much the
    distance |p - c| of a point p of polytope s and a point c of the cylinder may exceed the true one (>= 0 up to
    rounding, 0 when they are the nearest points). Returns (gap, |p - c|)."""
    nx, ny, nz = px - cx, py - cy, pz - cz
    d = math.sqrt(nx * nx + ny * ny + nz * nz)
    if not d > 0.0:
        return np.inf, d
    nx, ny, nz = nx / d, ny / d, nz / d
    qx, qy, qz, _ = _polytope_point(convex, s, Tp, at, -nx, -ny, -nz)
    lower = (nx * qx + ny * qy + nz * qz) - _cylinder_top(T, r, h, nx, ny, nz)
    return d - lower, d


@njit(cache=True)
def _rim_point(T, r, h, px, py, pz):
    """The point of the cylinder's end (cap disk or rim, on the side of p along the axis) nearest p, for p beyond
    that end's plane: (x, y, z, beyond) with ``beyond`` False when p is not beyond either end's plane."""
    zx, zy, zz = T[0, 2], T[1, 2], T[2, 2]
    rx, ry, rz = px - T[0, 3], py - T[1, 3], pz - T[2, 3]
    t = rx * zx + ry * zy + rz * zz
    end = h if t >= 0.0 else -h
    if not abs(t) > h:
        return 0.0, 0.0, 0.0, False
    wx, wy, wz = rx - t * zx, ry - t * zy, rz - t * zz
    wn = math.sqrt(wx * wx + wy * wy + wz * wz)
    ox, oy, oz = T[0, 3] + end * zx, T[1, 3] + end * zy, T[2, 3] + end * zz
    if wn <= r:
        return ox + wx, oy + wy, oz + wz, True
    return ox + r * wx / wn, oy + r * wy / wn, oz + r * wz / wn, True


@njit(cache=True)
def _edge_rim(T, r, h, end, ax, ay, az, bx, by, bz, cx, cy, cz):
    """The point of the rim (circle of radius r at ``end`` (+-h) along the axis) nearest the line through a and b,
    by Newton steps on the circle's angle from the rim point c, and its nearest point on the line: (rim x, y, z,
    line x, y, z, t) with t the line point's place along a -> b (0 at a, 1 at b); t NaN when Newton did not settle."""
    e1x, e1y, e1z = T[0, 0], T[1, 0], T[2, 0]
    e2x, e2y, e2z = T[0, 1], T[1, 1], T[2, 1]
    ox, oy, oz = T[0, 3] + end * T[0, 2], T[1, 3] + end * T[1, 2], T[2, 3] + end * T[2, 2]
    dx, dy, dz = bx - ax, by - ay, bz - az
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    if not length > 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.nan
    dx, dy, dz = dx / length, dy / length, dz / length
    theta = math.atan2((cx - ox) * e2x + (cy - oy) * e2y + (cz - oz) * e2z,
                       (cx - ox) * e1x + (cy - oy) * e1y + (cz - oz) * e1z)
    settled = False
    for _ in range(END_NEWTON_STEPS):
        co, si = math.cos(theta), math.sin(theta)
        ux, uy, uz = co * e1x + si * e2x, co * e1y + si * e2y, co * e1z + si * e2z      # radial unit
        vx, vy, vz = -si * e1x + co * e2x, -si * e1y + co * e2y, -si * e1z + co * e2z   # tangent unit
        qx, qy, qz = ox + r * ux - ax, oy + r * uy - ay, oz + r * uz - az
        qd = qx * dx + qy * dy + qz * dz
        c1 = r * (vx * dx + vy * dy + vz * dz)               # c' . d
        c2 = -r * (ux * dx + uy * dy + uz * dz)              # c'' . d
        g1 = r * (qx * vx + qy * vy + qz * vz) - qd * c1     # half of g'
        g2 = r * r - r * (qx * ux + qy * uy + qz * uz) - c1 * c1 - qd * c2   # half of g''
        if not g2 > 0.0:
            break
        step = g1 / g2
        theta -= step
        if abs(step) <= END_NEWTON_RAD:
            settled = True
            break
    if not settled:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.nan
    co, si = math.cos(theta), math.sin(theta)
    cx = ox + r * (co * e1x + si * e2x)
    cy = oy + r * (co * e1y + si * e2y)
    cz = oz + r * (co * e1z + si * e2z)
    t = (cx - ax) * dx + (cy - ay) * dy + (cz - az) * dz
    return cx, cy, cz, ax + t * dx, ay + t * dy, az + t * dz, t / length


@njit(cache=True)
def cylinder_end_distances(convex, shape_a, shape_b, cylinder_side, Ta, Tb, distance, p0, p1, converged):
    """Rows pairing a polytope P (a hull, a box) with a cylinder whose nearest points are on the cylinder's end (a
    cap or a rim) and on a vertex or an edge of P, exact: each row's ``p0``, ``p1`` on entry give a direction from
    the cylinder to P (those :func:`cylinder_side_distances` left: P's and the axis segment's nearest points); the
    rows settled get ``converged`` True, their distance and witness points (on a, on b); the others are left as
    they were, for the caller to measure otherwise. ``cylinder_side[k]`` as :func:`cylinder_side_distances`.

    From the direction u (cylinder to P), P's vertex v lowest along u and the end's point c nearest v (under v on
    the cap, or the rim's point nearest v) give a new direction (v - c); a walk that comes back to its vertex has
    P's nearest point at that vertex; one that swings between two vertices has it on their edge, whose nearest
    rim point Newton steps on the rim's angle find. A row is settled only when the planes along its normal
    n = (p - c) / |p - c| touching P and the cylinder are within ``END_CERTIFIED_M`` of |p - c| (p a point of P,
    c one of the cylinder's: the distance is |p - c| within that), whatever the walk did."""
    for k in range(shape_a.shape[0]):
        if converged[k]:
            continue
        side = cylinder_side[k]
        cyl = shape_a[k] if side == 0 else shape_b[k]
        pol = shape_b[k] if side == 0 else shape_a[k]
        T = Ta[k] if side == 0 else Tb[k]
        Tp = Tb[k] if side == 0 else Ta[k]
        r, h = convex.params[cyl, 0], convex.params[cyl, 1]
        if side == 0:
            ux, uy, uz = p1[k, 0] - p0[k, 0], p1[k, 1] - p0[k, 1], p1[k, 2] - p0[k, 2]
        else:
            ux, uy, uz = p0[k, 0] - p1[k, 0], p0[k, 1] - p1[k, 1], p0[k, 2] - p1[k, 2]
        if not ux * ux + uy * uy + uz * uz > 1e-24:
            ux, uy, uz = Tp[0, 3] - T[0, 3], Tp[1, 3] - T[1, 3], Tp[2, 3] - T[2, 3]
        at = -1
        last, before = -1, -2
        lx = ly = lz = 0.0              # the last vertex
        found = False
        px = py = pz = cx = cy = cz = 0.0
        for _ in range(END_MAX_STEPS):
            vx, vy, vz, vid = _polytope_point(convex, pol, Tp, at, -ux, -uy, -uz)
            at = vid if not (KIND_BOX <= convex.kind[pol] <= KIND_CONE) else -1
            if vid == last:                               # back at its vertex: P's nearest point there
                px, py, pz = vx, vy, vz
                cx, cy, cz, beyond = _rim_point(T, r, h, vx, vy, vz)
                found = beyond
                break
            if vid == before:                             # between two vertices: their edge
                zx, zy, zz = T[0, 2], T[1, 2], T[2, 2]
                mx, my, mz = 0.5 * (vx + lx), 0.5 * (vy + ly), 0.5 * (vz + lz)
                t_mid = (mx - T[0, 3]) * zx + (my - T[1, 3]) * zy + (mz - T[2, 3]) * zz
                end = h if t_mid >= 0.0 else -h
                cx, cy, cz, px, py, pz, t = _edge_rim(T, r, h, end, lx, ly, lz, vx, vy, vz, cx, cy, cz)
                found = 0.0 < t < 1.0
                break
            cx, cy, cz, beyond = _rim_point(T, r, h, vx, vy, vz)
            if not beyond:
                break
            ux, uy, uz = vx - cx, vy - cy, vz - cz
            if not ux * ux + uy * uy + uz * uz > 0.0:
                break
            before, last = last, vid
            lx, ly, lz = vx, vy, vz
        if not found:
            continue
        gap, d = _certified_gap(convex, pol, Tp, at, T, r, h, px, py, pz, cx, cy, cz)
        if not (-END_CERTIFIED_M <= gap <= END_CERTIFIED_M):
            continue
        converged[k] = True
        distance[k] = d
        if side == 0:
            p0[k, 0], p0[k, 1], p0[k, 2] = cx, cy, cz
            p1[k, 0], p1[k, 1], p1[k, 2] = px, py, pz
        else:
            p0[k, 0], p0[k, 1], p0[k, 2] = px, py, pz
            p1[k, 0], p1[k, 1], p1[k, 2] = cx, cy, cz
