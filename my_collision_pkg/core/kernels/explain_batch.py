"""Explain's per-configuration work on many shape pairs in one compiled call each (numba).

Explain's common pair (two nearly convex solids, one of them a closed mesh, no padding) needs
the solid-body test, fcl's predicate, coal's distance of the two hulls, the check of coal's
answer and the contact's points. fcl and coal are called from Python; the rest runs here, for
every pair of a configuration at once, instead of one compiled call per pair and test:

- :func:`plan_pairs`: a configuration's candidate pairs in explain's order (self pairs first), which
  of them the hull rule takes, and for those whether one shape lies wholly inside a closed mesh of
  the other (as ``narrowphase.inside_closed_mesh``: the same :func:`mesh_queries.contains_probe`
  calls in the same order);
- :func:`hull_contact_rows`: per pair, coal's penetrating answer on the hulls made into a unit
  normal, checked and polished (:func:`mtd.polished_coal_answer`), and where both owners are robot links
  the contact's points (:func:`contact_points.contact_points`, the owner frames as
  ``ContactBuilder`` makes them).

Shapes are indices into per-shape tables of one world snapshot (``checks.explain``'s
``_BatchTables``): variable-length rows (vertices, probe points, triangles) are stacked, shape
``s`` owning rows ``start[s]:stop[s]``. Poses are (4, 4) in the planning frame; metres.
The kernels take no Python objects and release the GIL.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from my_collision_pkg.core.kernels.contact_points import contact_points
from my_collision_pkg.core.kernels.mesh_queries import contains_probe
from my_collision_pkg.core.kernels.mtd import polished_coal_answer

ROWS = 6        # per pair of hull_contact_rows: normal, coal's p1, then contact_points' four rows
# the bits of a shape's code (explain's per-shape table)
CODE_HULL = 1       # a nearly convex solid (explain.hull_parts is not None)
CODE_CLOSED = 2     # a closed mesh
CODE_BVH = 4        # a mesh
CODE_KNOWN = 8      # the shape's rows of the tables are filled


@njit(inline="always")
def _outer_of(T_world_shape, sa, sb, code, probe_start, probe_stop, probes, obb_center, obb_axes, obb_half,
              triangle_start, triangle_stop, triangles):
    """The outer shape when ``sb`` lies inside closed mesh ``sa`` (tried first) or ``sa`` inside ``sb``, else -1."""
    for side in range(2):
        outer = sa if side == 0 else sb
        inner = sb if side == 0 else sa
        if code[outer] & CODE_CLOSED == 0:
            continue
        if contains_probe(T_world_shape[outer], T_world_shape[inner], probes[probe_start[inner]:probe_stop[inner]],
                          obb_center[outer], obb_axes[outer], obb_half[outer],
                          triangles[triangle_start[outer]:triangle_stop[outer]]):
            return outer
    return -1


@njit(cache=True, nogil=True)
def plan_pairs(survivors, pair_index, pair_is_self, pairs, margins, code, T_world_shape, probe_start, probe_stop,
               probes, obb_center, obb_axes, obb_half, triangle_start, triangle_stop, triangles, order, hull_rule,
               inside):
    """Explain's plan for the candidate pairs ``survivors`` (rows of a selection: ``pair_index`` into the
    world's pairs, whose ``pair_is_self`` is looked up; ``pairs`` (P, 2) shapes, ``margins`` (P,) metres).

    Writes ``order``: the survivors, self pairs first, each kind in the survivors' order; ``hull_rule[i]``:
    whether pair ``order[i]`` is under the hull rule (both shapes nearly convex solids, one a closed mesh,
    one a mesh, no padding); ``inside[i]``: for those, :func:`pairs_inside`'s outer shape or -1 (-1 for the
    others; the outer shape when the second lies inside the first, a closed mesh (tried first), or the first
    inside the second). Probe points are in the inner shape's frame, the oriented boxes
    (``CollisionWorld.obb_*``) and triangles (T, 3, 3) in the outer shape's. Returns the number of hull-rule pairs, or -1 (nothing else written) when a shape of the
    survivors is not yet CODE_KNOWN.
    """
    n = survivors.shape[0]
    for i in range(n):
        p = survivors[i]
        if code[pairs[p, 0]] & CODE_KNOWN == 0 or code[pairs[p, 1]] & CODE_KNOWN == 0:
            return -1
    m = 0
    for first in range(2):
        for i in range(n):
            p = survivors[i]
            if pair_is_self[pair_index[p]] == (first == 0):
                order[m] = p
                m += 1
    count = 0
    for i in range(n):
        p = order[i]
        sa, sb = pairs[p, 0], pairs[p, 1]
        both, either = code[sa] & code[sb], code[sa] | code[sb]
        rule = both & CODE_HULL != 0 and either & CODE_CLOSED != 0 and either & CODE_BVH != 0 and margins[p] <= 0.0
        hull_rule[i] = rule
        inside[i] = -1
        if rule:
            count += 1
            inside[i] = _outer_of(T_world_shape, sa, sb, code, probe_start, probe_stop, probes, obb_center,
                                  obb_axes, obb_half, triangle_start, triangle_stop, triangles)
    return count


@njit(cache=True, nogil=True)
def hull_contact_rows(T_world_shape, kind, params, vertex_start, vertex_stop, vertices, T_world_link, owner_link, a, b,
                      distance, witness, tol_abs, tol_rel, local_rad, rows, is_mtd):
    """Per pair k (shapes ``a[k]``, ``b[k]``): coal's answer on the hulls made into a contact's numbers.

    ``distance[k]`` < 0 and ``witness[k]`` (3, 3): coal's point on a, point on b and normal. ``kind``,
    ``params`` and the stacked ``vertices`` describe each shape's convex solid as ``kernels.mtd`` takes it.
    ``is_mtd[k]``: :func:`mtd.coal_answer_is_mtd`; :func:`mtd.polished_coal_answer` writes the (polished) normal
    to ``rows[k, 0]``, coal's point on a moved onto it by the (polished) distance to ``rows[k, 1]``, and that
    distance over ``distance[k]`` (in place). Where it holds and both shapes' owners are robot links
    (``owner_link`` (S,) the link index, -1 for an object), ``rows[k, 2:6]`` are :func:`contact_points`
    (p1, midpoint, p0 and p1 in the owners' frames), each owner frame's inverse taken as
    ``ContactBuilder`` takes a link's: ``p @ R + t``, ``R`` the link's rotation, ``t = -(translation @ R)``.
    """
    t_a = np.empty(3)
    t_b = np.empty(3)
    answer = np.empty((3, 3))
    for k in range(a.shape[0]):
        sa, sb = a[k], b[k]
        ok = polished_coal_answer(kind[sa], params[sa], vertices[vertex_start[sa]:vertex_stop[sa]],
                                  T_world_shape[sa], kind[sb], params[sb],
                                  vertices[vertex_start[sb]:vertex_stop[sb]], T_world_shape[sb], distance[k],
                                  witness[k, 0], witness[k, 1], witness[k, 2], tol_abs, tol_rel, local_rad, answer)
        rows[k, 0:2] = answer[0:2]
        distance[k] = answer[2, 0]
        is_mtd[k] = ok
        la, lb = owner_link[sa], owner_link[sb]
        if not ok or la < 0 or lb < 0:
            continue
        T_a, T_b = T_world_link[la], T_world_link[lb]
        for j in range(3):
            t_a[j] = -(T_a[0, 3] * T_a[0, j] + T_a[1, 3] * T_a[1, j] + T_a[2, 3] * T_a[2, j])
            t_b[j] = -(T_b[0, 3] * T_b[0, j] + T_b[1, 3] * T_b[1, j] + T_b[2, 3] * T_b[2, j])
        contact_points(witness[k, 0], rows[k, 0], distance[k], T_a[:3, :3], t_a, T_b[:3, :3], t_b, rows[k, 2:6])


def warm_up() -> None:
    """Compile (or load from numba's cache) both kernels with the argument types explain passes (a box inside a
    closed one-triangle 'mesh' is never found inside; a box against a box for the contact rows)."""
    n_shapes = 2
    T = np.stack([np.eye(4), np.eye(4)])
    code = np.array([CODE_KNOWN | CODE_HULL | CODE_CLOSED | CODE_BVH, CODE_KNOWN | CODE_HULL], dtype=np.uint8)
    starts = np.zeros(n_shapes, dtype=np.int64)
    stops = np.ones(n_shapes, dtype=np.int64)
    triangles = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    one = np.zeros(1, dtype=np.int64)
    plan_pairs(one, one, np.zeros(1, dtype=np.bool_), np.array([[0, 1]], dtype=np.int64), np.zeros(1), code, T,
               starts, stops, np.zeros((1, 3)), np.zeros((n_shapes, 3)), np.stack([np.eye(3), np.eye(3)]),
               np.ones((n_shapes, 3)), starts, stops, triangles, np.empty(1, dtype=np.int64),
               np.empty(1, dtype=np.bool_), np.empty(1, dtype=np.int64))
    witness = np.array([[[0.0, 0.0, 0.5], [0.0, 0.0, -0.5], [0.0, 0.0, 1.0]]])
    hull_contact_rows(T, np.zeros(n_shapes, dtype=np.int64), np.full((n_shapes, 3), 0.5), starts, stops,
                      np.zeros((1, 3)), T.copy(), np.zeros(n_shapes, dtype=np.int64), np.zeros(1, dtype=np.int64),
                      np.ones(1, dtype=np.int64), np.array([-1.0]), witness, 1e-6, 1e-6, 1e-3,
                      np.empty((1, ROWS, 3)), np.empty(1, dtype=np.bool_))
