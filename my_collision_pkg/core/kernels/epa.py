"""Penetration depth of two overlapping convex solids, compiled (GJK, then EPA).

The clearance's first distance of a pair whose convex solids overlap (two hulls, a hull and a box or a
cylinder, two primitives) was coal's GJK/EPA, called row by row from Python
(``checks.clearance._coal_first_distances``). Here the same kind of answer is computed in one compiled
call over the rows, on the support functions of :mod:`kernels.gjk` (``vertex_support``'s climb over a
hull's edges, ``primitive_support``):

- GJK from the line between the solids' origins (as ``gjk.hull_distances``) until its simplex is a
  tetrahedron holding the origin (the solids overlap); a row whose GJK ends otherwise (apart, touching,
  a degenerate simplex, no progress) is not answered;
- EPA (the expanding polytope) from that tetrahedron: the polytope's face nearest the origin gives a
  unit direction ``n``; the Minkowski difference ``C = A - B``'s support point along ``n`` is added
  and the faces it sees are replaced by the fan from it to their horizon, until the support value
  ``h_C(n)`` (the overlap of A and B along n, an upper bound of the depth) is within the tolerance of
  the face's distance (a lower bound: the polytope lies inside C).

The answer is coal's convention: a signed distance ``-h_C(n)`` (minus the overlap along the returned
normal), a point ``p0`` on A (the face's barycentric weights on A's support points) and
``p1 = p0 - depth n`` on B, the normal from A to B being ``(p0 - p1) / |p0 - p1|``. It is a *start*:
the clearance checks it (``kernels.mtd.check_mtd``: the overlap along n is its depth, no neighbour or
candidate direction gives less) and polishes it to the exact local minimum of the overlap before it is a
row (``kernels.penetrating_rows``); a row whose check fails is measured from the start by the per-row
path (coal). Deterministic: the same rows give the same bits in any process. Metres, planning frame.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CONE, KIND_CYLINDER
from my_collision_pkg.core.kernels.gjk import HULL_MAX_ITERATIONS, nearest_face_ab, posed_point

# the polytope's vertices at most (4 of the tetrahedron, one per EPA iteration after it); a row that needs
# more is not answered
EPA_MAX_VERTICES = 128
# faces at most: a closed triangulated polytope of V vertices has 2 V - 4
_MAX_FACES = 2 * EPA_MAX_VERTICES
# a face whose normal's cross product is shorter than this (squared, relative to its edges') is degenerate
_DEGENERATE = 1e-24
# the smallest depth answered (metres): below it the solids touch, and coal measures the row
EPA_MIN_DEPTH_M = 1e-9
# EPA's gap between its bounds where a solid is curved (a cylinder against a polytope: the polish that follows
# makes it exact), metres: coal's EPA tolerance for the clearance's first distances (narrowphase.WITNESS_PRECISION_M)
CURVED_EPS_M = 1e-9


@njit(inline="always")
def _curved(kind):
    """A primitive with a curved surface (EPA converges on it to a tolerance, never exactly)."""
    return KIND_BOX < kind <= KIND_CONE


@njit(cache=True)
def _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, s, T, at, dx, dy, dz,
                   out):
    """Shape s's point farthest along the world direction (dx, dy, dz) at pose T (``gjk.posed_support``), to
    ``out`` (3,); returns the vertex index climbed to (vertex sets; ``at``: where to climb from, -1 the probes) or
    -1 (primitives)."""
    out[0], out[1], out[2], vid = posed_point(kind, params, vertex_start, vertices, neighbour_start, neighbours,
                                              probes, s, T, at, dx, dy, dz)
    vid += 0 * (kind.shape[0] + params.shape[0] + vertex_start.shape[0] + vertices.shape[0] + neighbour_start.shape[0]
                + neighbours.shape[0] + probes.shape[0] + T.shape[0] + out.shape[0])       # (gjk: reference counts)
    return -1 if KIND_BOX <= kind[s] <= KIND_CONE else vid


@njit(cache=True)
def _set_face(W, F, FN, FD, f, i, j, k):
    """Face f = (i, j, k) of the polytope's vertices W, counter-clockwise seen from outside: its unit outward
    normal and its distance from the origin. False where it is degenerate."""
    e0, e1, e2 = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
    g0, g1, g2 = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
    c0, c1, c2 = e1 * g2 - e2 * g1, e2 * g0 - e0 * g2, e0 * g1 - e1 * g0
    length2 = c0 * c0 + c1 * c1 + c2 * c2
    if not length2 > _DEGENERATE * (e0 * e0 + e1 * e1 + e2 * e2) * (g0 * g0 + g1 * g1 + g2 * g2):
        return False
    length = math.sqrt(length2)
    c0, c1, c2 = c0 / length, c1 / length, c2 / length
    F[f, 0], F[f, 1], F[f, 2] = i, j, k
    FN[f, 0], FN[f, 1], FN[f, 2] = c0, c1, c2
    # the mean of the three vertices' offsets: the same plane, rounded evenly
    FD[f] = (c0 * (W[i, 0] + W[j, 0] + W[k, 0]) + c1 * (W[i, 1] + W[j, 1] + W[k, 1])
             + c2 * (W[i, 2] + W[j, 2] + W[k, 2])) / 3.0
    return True


@njit(cache=True)
def expand_polytope(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, Ta, b, Tb, W, WA, WB,
                    eps_m, out, scratch_i, scratch_f, stack):
    """EPA from the tetrahedron ``W[:4]`` (points of C = A - B holding the origin; ``WA``, ``WB`` (EPA_MAX_VERTICES,
    3) their points of A and B, overwritten beyond 4) to the depth of shapes a, b at poses Ta, Tb.

    Stops when the overlap along the nearest face's normal is within ``eps_m`` (plus as much relative) of the
    face's distance. ``out`` (8,): the depth (the overlap along the normal), the unit normal from A to B, A's
    point (3) and the gap left (overlap minus the face's distance). Returns False where the polytope cannot grow
    (a degenerate face, a horizon that does not close, EPA_MAX_VERTICES reached). ``scratch_i`` (_MAX_FACES, 14)
    int64, ``scratch_f`` (_MAX_FACES, 4) and ``stack`` (2, 3 _MAX_FACES + 3) int64: work space, any content."""
    F = scratch_i[:, 0:3]                 # the faces' vertices, counter-clockwise seen from outside
    adj = scratch_i[:, 3:6]               # face across edge e = (F[f, e], F[f, e + 1])
    adj_edge = scratch_i[:, 6:9]          # that edge's index in the face across
    alive = scratch_i[:, 9]               # 1: a face of the polytope (slots below n_used)
    free = scratch_i[:, 10]               # a stack of freed face slots
    horizon_f = scratch_i[:, 11]
    horizon_e = scratch_i[:, 12]
    FN = scratch_f[:, 0:3]
    FD = scratch_f[:, 3]
    new_faces = scratch_i[:, 13]
    stack_f = stack[0]                    # the faces to look at across an edge, and that edge
    stack_e = stack[1]
    n_free = 0
    pa = np.empty(3)
    pb = np.empty(3)
    # the tetrahedron: faces opposite each vertex (slots 0..3), turned outwards
    tet = ((1, 2, 3), (0, 3, 2), (0, 1, 3), (0, 2, 1))
    for t in range(4):
        i, j, k = tet[t]
        f = t
        if not _set_face(W, F, FN, FD, f, i, j, k):
            return False
        alive[f] = 1
        # outwards: away from the opposite vertex t
        side = (FN[f, 0] * (W[t, 0] - W[i, 0]) + FN[f, 1] * (W[t, 1] - W[i, 1]) + FN[f, 2] * (W[t, 2] - W[i, 2]))
        if side > 0.0:
            if not _set_face(W, F, FN, FD, f, i, k, j):
                return False
    for f in range(4):
        for e in range(3):
            u, v = F[f, e], F[f, (e + 1) % 3]
            for g in range(4):
                if g == f:
                    continue
                for h in range(3):
                    if F[g, h] == v and F[g, (h + 1) % 3] == u:
                        adj[f, e], adj_edge[f, e] = g, h
    n_vertices = 4
    n_used = 4                             # slots handed out so far: 0 .. n_used - 1 (then from the freed ones)
    at_a, at_b = -1, -1
    for _ in range(EPA_MAX_VERTICES + 1):
        best = -1
        best_d = np.inf
        for f in range(n_used):
            if alive[f] != 0 and FD[f] < best_d:
                best, best_d = f, FD[f]
        if best < 0:
            return False
        n0, n1, n2 = FN[best, 0], FN[best, 1], FN[best, 2]
        at_a = _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, Ta, at_a,
                              n0, n1, n2, pa)
        at_b = _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, b, Tb, at_b,
                              -n0, -n1, -n2, pb)
        w0, w1, w2 = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
        upper = n0 * w0 + n1 * w1 + n2 * w2
        gap = upper - best_d
        if gap <= eps_m * (1.0 + abs(best_d)):
            # the origin's foot on the face, in barycentric weights, carried to A's support points
            i, j, k = F[best, 0], F[best, 1], F[best, 2]
            x0, x1, x2 = best_d * n0, best_d * n1, best_d * n2
            e0, e1, e2 = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
            g0, g1, g2 = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
            r0, r1, r2 = x0 - W[i, 0], x1 - W[i, 1], x2 - W[i, 2]
            d00 = e0 * e0 + e1 * e1 + e2 * e2
            d01 = e0 * g0 + e1 * g1 + e2 * g2
            d11 = g0 * g0 + g1 * g1 + g2 * g2
            d20 = r0 * e0 + r1 * e1 + r2 * e2
            d21 = r0 * g0 + r1 * g1 + r2 * g2
            det = d00 * d11 - d01 * d01
            if not det > 0.0:
                return False
            lj = (d11 * d20 - d01 * d21) / det
            lk = (d00 * d21 - d01 * d20) / det
            li = 1.0 - lj - lk
            out[0] = upper
            out[1], out[2], out[3] = n0, n1, n2
            for c in range(3):
                out[4 + c] = li * WA[i, c] + lj * WA[j, c] + lk * WA[k, c]
            out[7] = gap
            return True
        if n_vertices >= EPA_MAX_VERTICES:
            return False
        nv = n_vertices
        W[nv, 0], W[nv, 1], W[nv, 2] = w0, w1, w2
        for c in range(3):
            WA[nv, c] = pa[c]
            WB[nv, c] = pb[c]
        n_vertices += 1
        # the faces the new point sees, from the nearest one across their edges (depth first: the horizon's
        # edges come out in order around it); each face not seen across an edge gives that edge to the horizon
        alive[best] = 0
        free[n_free] = best
        n_free += 1
        top = 0
        for e in range(2, -1, -1):
            stack_f[top], stack_e[top] = adj[best, e], adj_edge[best, e]
            top += 1
        n_horizon = 0
        while top > 0:
            top -= 1
            g, h = stack_f[top], stack_e[top]
            if alive[g] == 0:
                continue
            i = F[g, 0]
            seen = (FN[g, 0] * (w0 - W[i, 0]) + FN[g, 1] * (w1 - W[i, 1]) + FN[g, 2] * (w2 - W[i, 2])) > 0.0
            if not seen:
                horizon_f[n_horizon], horizon_e[n_horizon] = g, h
                n_horizon += 1
                continue
            alive[g] = 0
            free[n_free] = g
            n_free += 1
            # the other two edges, the next one (h + 1) first
            for step in (2, 1):
                e = (h + step) % 3
                stack_f[top], stack_e[top] = adj[g, e], adj_edge[g, e]
                top += 1
        if n_horizon < 3 or n_free + _MAX_FACES - n_used < n_horizon:
            return False
        # the fan: face (v, u, new) across each horizon edge (u, v) of a face kept
        for t in range(n_horizon):
            g, h = horizon_f[t], horizon_e[t]
            u, v = F[g, h], F[g, (h + 1) % 3]
            if n_free > 0:
                f = free[n_free - 1]
                n_free -= 1
            else:
                f = n_used
                n_used += 1
            if not _set_face(W, F, FN, FD, f, v, u, nv):
                return False
            alive[f] = 1
            adj[f, 0], adj_edge[f, 0] = g, h
            adj[g, h], adj_edge[g, h] = f, 0
            new_faces[t] = f
        # the fan's own edges: (u, new) of one face against (new, u) of another
        for t in range(n_horizon):
            f = new_faces[t]
            u = F[f, 1]                      # edge 1 = (u, new)
            found = False
            for s in range(n_horizon):
                g = new_faces[s]
                if F[g, 0] == u:             # edge 2 of g = (new, F[g, 0])
                    adj[f, 1], adj_edge[f, 1] = g, 2
                    adj[g, 2], adj_edge[g, 2] = f, 1
                    found = True
                    break
            if not found:
                return False
    return False


@njit(cache=True)
def _complete_tetrahedron(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, Ta, b, Tb, P,
                          PA, PB, n):
    """GJK's simplex ``P[:n]`` (n = 2 or 3 points of C = A - B, ``PA``, ``PB`` their points of A and B) holding the
    origin on its segment or triangle, made a tetrahedron holding it (on a face): a segment gets C's support point
    along a direction normal to it, a triangle the farther of C's support points along its two normals. False
    where C is flat there (the solids touch: no support point beyond the face by more than rounding)."""
    pa = np.empty(3)
    pb = np.empty(3)
    if n == 2:
        s0, s1, s2 = P[1, 0] - P[0, 0], P[1, 1] - P[0, 1], P[1, 2] - P[0, 2]
        # the cross product with the axis least along the segment
        if abs(s0) <= abs(s1) and abs(s0) <= abs(s2):
            d0, d1, d2 = 0.0, s2, -s1
        elif abs(s1) <= abs(s2):
            d0, d1, d2 = -s2, 0.0, s0
        else:
            d0, d1, d2 = s1, -s0, 0.0
        length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if not length > 0.0:
            return False
        d0, d1, d2 = d0 / length, d1 / length, d2 / length
        _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, Ta, -1, d0, d1,
                       d2, pa)
        _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, b, Tb, -1, -d0, -d1,
                       -d2, pb)
        w0, w1, w2 = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
        if not d0 * w0 + d1 * w1 + d2 * w2 > EPA_MIN_DEPTH_M:
            return False
        P[2, 0], P[2, 1], P[2, 2] = w0, w1, w2
        for c in range(3):
            PA[2, c] = pa[c]
            PB[2, c] = pb[c]
    e0, e1, e2 = P[1, 0] - P[0, 0], P[1, 1] - P[0, 1], P[1, 2] - P[0, 2]
    g0, g1, g2 = P[2, 0] - P[0, 0], P[2, 1] - P[0, 1], P[2, 2] - P[0, 2]
    m0, m1, m2 = e1 * g2 - e2 * g1, e2 * g0 - e0 * g2, e0 * g1 - e1 * g0
    length = math.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
    if not length > 0.0:
        return False
    m0, m1, m2 = m0 / length, m1 / length, m2 / length
    best = -np.inf
    for sign in (1.0, -1.0):
        _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, Ta, -1,
                       sign * m0, sign * m1, sign * m2, pa)
        _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, b, Tb, -1,
                       -sign * m0, -sign * m1, -sign * m2, pb)
        w0, w1, w2 = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
        beyond = sign * (m0 * w0 + m1 * w1 + m2 * w2)
        if beyond > best:
            best = beyond
            P[3, 0], P[3, 1], P[3, 2] = w0, w1, w2
            for c in range(3):
                PA[3, c] = pa[c]
                PB[3, c] = pb[c]
    return best > EPA_MIN_DEPTH_M


@njit(cache=True)
def penetration_distances(convex, shape_a, shape_b, Ta, Tb, eps_m, curved_eps_m, distance, p0, p1, answered):
    """The penetration of the convex solids ``shape_a[k]``, ``shape_b[k]`` of ``convex`` (a
    ``gjk.ConvexArrays``) at poses ``Ta[k]``, ``Tb[k]`` (K, 4, 4), for every row k that GJK finds
    overlapping: ``distance[k]`` minus the depth (< 0), ``p0[k]`` on a and ``p1[k] = p0[k] - depth n`` on b
    (coal's convention; the unit normal n from a to b is ``(p0 - p1) / depth``), and ``answered[k]`` True.

    EPA stops at ``eps_m`` (plus as much relative) between its bounds for two polytopes and at
    ``curved_eps_m`` where a shape is curved (a sphere, cylinder or capsule). Rows not answered (left as they
    were): the solids apart or touching (no tetrahedron of GJK holds the origin within HULL_MAX_ITERATIONS),
    a depth below EPA_MIN_DEPTH_M, a cone (its support here is its enclosing cylinder's), or EPA failing
    (:func:`expand_polytope`)."""
    kind, params, vertex_start, vertices = convex.kind, convex.params, convex.vertex_start, convex.vertices
    neighbour_start, neighbours, probes = convex.neighbour_start, convex.neighbours, convex.probes
    P = np.empty((4, 3))
    W = np.empty((EPA_MAX_VERTICES, 3))
    WA = np.empty((EPA_MAX_VERTICES, 3))
    WB = np.empty((EPA_MAX_VERTICES, 3))
    E = np.empty((3, 3))
    v9 = np.empty(9)
    pa = np.empty(3)
    pb = np.empty(3)
    result = np.empty(8)
    scratch_i = np.empty((_MAX_FACES, 14), dtype=np.int64)
    scratch_f = np.empty((_MAX_FACES, 4))
    stack = np.empty((2, 3 * _MAX_FACES + 3), dtype=np.int64)
    for k in range(shape_a.shape[0]):
        a, b = shape_a[k], shape_b[k]
        answered[k] = False
        if kind[a] == KIND_CONE or kind[b] == KIND_CONE:
            continue
        T0 = Ta[k]
        T1 = Tb[k]
        vx = T0[0, 3] - T1[0, 3]
        vy = T0[1, 3] - T1[1, 3]
        vz = T0[2, 3] - T1[2, 3]
        if vx * vx + vy * vy + vz * vz <= 1e-24:
            vx, vy, vz = 1.0, 0.0, 0.0
        at_a, at_b = -1, -1
        n = 0
        norm2 = np.inf
        inside = False
        on_face = False
        for _ in range(HULL_MAX_ITERATIONS):
            at_a = _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, T0,
                                  at_a, -vx, -vy, -vz, pa)
            at_b = _support_world(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, b, T1,
                                  at_b, vx, vy, vz, pb)
            wx, wy, wz = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
            if vx * wx + vy * wy + vz * wz > 0.0:
                break                      # a plane separates the origin from C: apart
            P[n, 0], P[n, 1], P[n, 2] = wx, wy, wz
            for c in range(3):
                WA[n, c] = pa[c]
                WB[n, c] = pb[c]
            n = nearest_face_ab(P, WA, WB, n + 1, E, v9)
            new2 = v9[0] * v9[0] + v9[1] * v9[1] + v9[2] * v9[2]
            if n == 4:
                inside = True
                break
            if new2 <= 1e-24:
                on_face = True             # the origin on the simplex's face P[:n] (n < 4)
                break
            if new2 >= norm2:
                break                      # no progress: touching, or the arithmetic's floor (not answered)
            norm2 = new2
            vx, vy, vz = v9[0], v9[1], v9[2]
        if not inside and on_face and n >= 2:
            # the origin on a segment or a triangle of C (symmetric shapes: two spheres along their centre line)
            inside = _complete_tetrahedron(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes,
                                           a, T0, b, T1, P, WA, WB, n)
        if not inside:
            continue
        for i in range(4):
            for c in range(3):
                W[i, c] = P[i, c]
        eps = curved_eps_m if (_curved(kind[a]) or _curved(kind[b])) else eps_m
        if expand_polytope(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, a, T0, b, T1, W,
                           WA, WB, eps, result, scratch_i, scratch_f, stack):
            _answer_row(result, k, distance, p0, p1, answered)


@njit(cache=True)
def _answer_row(result, k, distance, p0, p1, answered):
    """Row k's answer from :func:`expand_polytope`'s ``result``, where its depth is at least EPA_MIN_DEPTH_M."""
    depth = result[0]
    if not (depth >= EPA_MIN_DEPTH_M and math.isfinite(depth)):
        return
    distance[k] = -depth
    for c in range(3):
        p0[k, c] = result[4 + c]
        p1[k, c] = result[4 + c] - depth * result[1 + c]
    answered[k] = True


@njit(cache=True)
def expand_tetrahedra(convex, shape_a, shape_b, Ta, Tb, tetrahedra, eps_m, distance, p0, p1, answered):
    """:func:`penetration_distances` of two polytopes from the tetrahedron the distance's own GJK ended with
    (``gjk.hull_distances``' ``tetrahedra`` (K, 3, 4, 3): points of A - B holding the origin, A's and B's support
    points), so that no second GJK runs: EPA (:func:`expand_polytope`) to ``eps_m``, the answer as there. Rows
    not answered are left as they were (the caller measures them from the start)."""
    kind, params, vertex_start, vertices = convex.kind, convex.params, convex.vertex_start, convex.vertices
    neighbour_start, neighbours, probes = convex.neighbour_start, convex.neighbours, convex.probes
    W = np.empty((EPA_MAX_VERTICES, 3))
    WA = np.empty((EPA_MAX_VERTICES, 3))
    WB = np.empty((EPA_MAX_VERTICES, 3))
    result = np.empty(8)
    scratch_i = np.empty((_MAX_FACES, 14), dtype=np.int64)
    scratch_f = np.empty((_MAX_FACES, 4))
    stack = np.empty((2, 3 * _MAX_FACES + 3), dtype=np.int64)
    for k in range(shape_a.shape[0]):
        answered[k] = False
        for i in range(4):
            for c in range(3):
                W[i, c] = tetrahedra[k, 0, i, c]
                WA[i, c] = tetrahedra[k, 1, i, c]
                WB[i, c] = tetrahedra[k, 2, i, c]
        if expand_polytope(kind, params, vertex_start, vertices, neighbour_start, neighbours, probes, shape_a[k],
                           Ta[k], shape_b[k], Tb[k], W, WA, WB, eps_m, result, scratch_i, scratch_f, stack):
            _answer_row(result, k, distance, p0, p1, answered)
