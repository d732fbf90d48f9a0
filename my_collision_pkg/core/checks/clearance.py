"""Clearance: every checked shape pair within an influence distance, with its signed distance and its Jacobian.

What optimisation-based planners call per configuration (Drake's ``CalcRobotClearance``,
trajopt's collision terms): one row per *shape* pair whose signed distance minus the
pair's padding is below ``influence_distance``, checked pairs only (the request's
selection: ACM, group, padding switches), with

- the distance, witness points and normal of the checker's one distance function
  (:func:`narrowphase.pair_distance`; body 0 -> body 1), minus the pair's padding, so
  negative when the padded bodies overlap (Drake's convention);
- the Jacobian row ``d distance / d q`` over the requested joints:
  ``n . (v_1(p1) - v_0(p0))`` with ``v_x(p)`` the velocity of the point ``p`` fixed to
  body ``x`` per unit joint velocity (revolute: ``axis x (p - origin)``, prismatic:
  ``axis``; world objects do not move, attached objects ride their link), movable joints
  folded into the active ones by the robot's mimic matrix;
- ``smooth``: False where the distance is not differentiable there or the gradient is
  not to be trusted (witness points coincide with no defined normal, a fallback value of
  the distance function, the deepest-point rule of a penetrating non-convex mesh).

Pairs are culled first by their oriented bounding boxes grown by padding + influence,
then by bounding spheres (both for every pair and configuration of a chunk at once),
then by the distance of the convex hulls (a lower bound of a mesh's distance; for
primitives the distance itself): the compiled GJK's for polytopes (hulls, boxes), for a
polytope and a cylinder nearest on its side, and the compiled exact end rows of a polytope and
a cylinder nearest on its cap or rim (``gjk.cylinder_end_distances``, certified by separating
planes to 1e-10 m); coal's otherwise. A mesh pair whose hulls are apart, with each hull
witness point on its mesh's surface (within ``ON_MESH_M``), is at the hulls' distance
(the points are on the meshes, no mesh point is nearer): that is its row, with no mesh
distance computed (a witness point is first tried on the few mesh triangles at the hull vertex
farthest along the row's normal, projected onto the whole mesh only when none is that near:
``kernels.clearance_rows.check_on_meshes``). Other apart mesh pairs get the meshes' own distance (the least over their
triangles, compiled: ``kernels.mesh_rows``, exact to rounding, where each side is a closed mesh or a
box; coal's mesh distance otherwise), and penetrating or touching pairs :func:`narrowphase.pair_distance` itself, so every row has the numbers of
that one distance function, up to its GJK tolerance: an apart row of two polytopes (~1e-12 m)
or of a polytope and a cylinder's side, cap or rim (exact, where coal's GJK against the curved
surface leaves the witness points up to ~1e-5 m off) has the exact ones. Jacobians and body-frame points are
computed for every row of a chunk at once.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time

import numpy as np
from numba.typed import List as numba_list

from my_collision_pkg.core.checks import narrowphase, octomap_cells, penetration, witness_features
from my_collision_pkg.core.checks.batch_jobs import CLEARANCE_ROWS
from my_collision_pkg.core.checks.request import MAX_BATCH_CONFIGURATIONS, CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import NO_SUBSHAPE, BodyType, Clearance, Status
from my_collision_pkg.core.checks.sweep import convex_solids, motion_kinematics
from my_collision_pkg.core.errors import CollisionPkgError, RequestError
from my_collision_pkg.core.geometry.coal_setup import coal   # coal with its box support pinned (see there)
from my_collision_pkg.core.kernels.clearance_rows import (CANDIDATES_NON_FINITE, CANDIDATES_OUT_OF_LIMITS,
                                                          SINGLE_DONE, SINGLE_FIRST, SINGLE_LEFT, SINGLE_SETTLED,
                                                          single_buffer_sizes, single_info_start,
                                                          single_support_start, single_request_rows, single_rows,
                                                          single_settled_rows,
                                                           candidate_rows, finish_rows, first_distance_rows,
                                                           pack_row_pairs, pack_row_world, pack_world, pose_sizes,
                                                           settle_rows)
from my_collision_pkg.core.kernels.mesh_rows import mesh_surface_rows
from my_collision_pkg.core.kernels.penetrating_rows import slow_convex_rows, unseen_shapes
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CONVEX, KIND_CYLINDER, KIND_MESH, KIND_OPEN_MESH
from my_collision_pkg.core.kernels.witness_check import hull_vertex_triangles, pack_meshes
from my_collision_pkg.core.scene.objects import OCTOMAP_ID
from my_collision_pkg.core.scene.planning_scene import CollisionWorld

__all__ = ["Clearance", "SMOOTH_DISTANCE_M", "compute_clearance", "point_jacobians"]

# Below this |distance| (metres) with the witness points coincident, the normal is not defined
# by the geometry (the bodies touch): the row is not smooth.
SMOOTH_DISTANCE_M = 1e-9
# How much a hull distance from coal may exceed the true one (GJK stopped by its tolerance or its
# iteration limit): a hull bound is trusted to cull a pair only beyond the threshold by this much.
_HULL_SLACK_M = 1e-5
CLEARANCE_CHUNK = 1024          # configurations posed and culled together (at most)
# Candidate rows (configurations x checked shape pairs) of one chunk, at most: a chunk holds
# fewer configurations when the scene has many pairs, so that the memory of one chunk (about
# 100 bytes per candidate while it is measured) and the work done before the row bound is
# looked at again stay bounded whatever the scene (a 202-object world: a few configurations).
CLEARANCE_CHUNK_CANDIDATES = 131_072
# A clearance configuration costs at least this many predicate checks (about 50 measured for
# the Panda at 0.3 m with Jacobians): the batch-worker thresholds, counted in predicate
# configurations, are applied to n times this.
CLEARANCE_WORK_PER_CONFIGURATION = 20
# A batch the workers may share is judged at the speed of this process's chunks in the last batch of its kind on the
# world snapshot, or, where that says little work or none is kept, first measures this many configurations here:
# when the whole batch would take less than MIN_SHARED_WORK_S at that speed, it stays in this process (a clearance
# configuration costs 9 us at 0.05 m and 220 us when penetrating at 0.5 m on the Panda: no fixed count per
# configuration tells them apart; a pool's round trips and scheduling cost about a millisecond a batch:
# docs/performance.md).
SHARE_PROBE_CONFIGURATIONS = 4
MIN_SHARED_WORK_S = 0.004
_SPEEDS_KEPT = 64                  # request kinds (influence, row bound, Jacobians) whose speed a snapshot keeps


def _refused(status: Status, message: str, names=()) -> Clearance:
    return Clearance(status, message, tuple(names))


# Clearance's fields in order (a frozen dataclass without __post_init__: an instance is its fields in its __dict__)
_FIELDS = tuple(f.name for f in dataclasses.fields(Clearance))


def _answer(*fields) -> Clearance:
    """``Clearance(*fields)`` (every field, in order) as the dataclass's ``__init__`` makes it, without its
    ``object.__setattr__`` per field (a few microseconds of a one-configuration request)."""
    answer = object.__new__(Clearance)
    answer.__dict__.update(zip(_FIELDS, fields))
    return answer


def _empty_arrays(n_jacobian: int) -> tuple:
    """The twelve row arrays of an answer without rows (each empty, of its field's dtype and shape)."""
    return (np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=object), np.zeros((0, 2), dtype=np.uint8),
            np.zeros((0, 2), dtype=np.int32), np.zeros((0, 2), dtype=np.int32), np.zeros(0), np.zeros((0, 2, 3)),
            np.zeros((0, 2, 3)), np.zeros((0, 3)), np.zeros((0, n_jacobian)), np.zeros(0, dtype=bool),
            np.zeros((0, 2), dtype=np.int64))


# the empty row arrays of _no_rows per Jacobian width, made once and shared by every answer without rows:
# read-only (an array with no element holds nothing to share; read-only, no caller can take one for a buffer
# of its own to write in). Twelve fresh arrays were about 2 us of a 13 us one-configuration request.
_EMPTY_ARRAYS: dict[int, tuple] = {}


def _no_rows(message: str, names: tuple, n_jacobian: int) -> Clearance:
    """A VALID answer without rows (each array empty, of its field's dtype and shape; shared, read-only)."""
    arrays = _EMPTY_ARRAYS.get(n_jacobian)
    if arrays is None:
        arrays = _empty_arrays(n_jacobian)
        for array in arrays:
            array.flags.writeable = False
        if len(_EMPTY_ARRAYS) < 64:
            _EMPTY_ARRAYS[n_jacobian] = arrays
    return _answer(Status.VALID, message, names, *arrays)


# the answers without rows of one-configuration requests, per (message, joint names, Jacobian width): a Clearance
# is frozen and its empty arrays read-only, so one answer serves every such request (~1.5 us of a ~12 us request)
_NO_ROWS_SINGLE: dict[tuple, Clearance] = {}


def _no_rows_single(influence: float, names: tuple, n_jacobian: int) -> Clearance:
    message = f"no pair within {influence:g} m in 1 configuration"
    key = (message, names, n_jacobian)
    found = _NO_ROWS_SINGLE.get(key)
    if found is None:
        found = _no_rows(message, names, n_jacobian)
        if len(_NO_ROWS_SINGLE) >= 64:
            _NO_ROWS_SINGLE.clear()
        _NO_ROWS_SINGLE[key] = found
    return found


class _Tables:
    """Per-world tables: each shape's link (-1: world-fixed), which movable joints move it, the
    geometry of its first distance (its convex hull for a mesh), its mesh in the packed
    triangle trees (-1: none), and its owner's frame."""

    def __init__(self, world: CollisionWorld) -> None:
        mk = motion_kinematics(world)
        n_links, n_mov = mk.chain.shape
        # one zero row at the end, picked by link index -1 (world-fixed shapes)
        self.chain = np.vstack([mk.chain, np.zeros((1, n_mov), dtype=bool)]).astype(float)
        self.mk = mk
        shapes = world.shapes
        self.shape_link = np.asarray(world.shape_link, dtype=np.int64)
        self.names = np.array([e.owner for e in shapes], dtype=object)
        self.types = np.array([int(e.body_type) for e in shapes], dtype=np.uint8)
        self.ids = np.array([e.shape_id for e in shapes], dtype=np.int32)
        self.bvh = np.array([bool(e.geometry.is_bvh) for e in shapes])
        # the first distance of a pair: coal on these (a mesh's hull, a lower bound of its distance;
        # None: a mesh without a hull, measured by pair_distance only)
        self.first = [(e.geometry.coal_hull if e.geometry.is_bvh else e.geometry.coal_geometry) for e in shapes]
        self.has_first = np.array([g is not None for g in self.first], dtype=bool)
        self.mesh = [e.geometry.coal_geometry for e in shapes]
        # shapes whose first distance is our compiled GJK (gjk.hull_distances) when paired with another of
        # them: meshes with hull vertices, and boxes (polytopes: GJK closes its gap to 1e-12 m in a few
        # steps; curved primitives stay with coal)
        self.convex = convex_solids(world)
        kind = self.convex.kind
        vertex_kind = (kind == KIND_CONVEX) | (kind == KIND_MESH) | (kind == KIND_OPEN_MESH)
        self.compiled = self.convex.supported & ((self.bvh & self.has_first & vertex_kind) | (kind == KIND_BOX))
        # cylinders (primitives): paired with one of the shapes above, measured by gjk.cylinder_side_distances
        # where the pair's nearest points are on the cylinder's side (exact there), by coal otherwise
        self.cylinder = self.convex.supported & ~self.bvh & (kind == KIND_CYLINDER)
        # boxes (primitives): a side of an off-mesh row measured by kernels.mesh_rows (its twelve surface triangles)
        self.box = self.convex.supported & ~self.bvh & (kind == KIND_BOX)
        # closed meshes with a tree: where hull witness points are checked against the mesh
        checked = [s for s, e in enumerate(shapes) if e.geometry.is_bvh and e.geometry.mesh_tree is not None
                   and e.geometry.triangles_shape is not None]
        self.mesh_slot = np.full(len(shapes), -1, dtype=np.int64)
        self.mesh_slot[checked] = np.arange(len(checked))
        # per thread: coal poses of the shapes, reused from request to request (each is set before a row uses it)
        self._scratch = threading.local()
        self._mimic_columns: dict[bytes, np.ndarray] = {}
        packed = pack_meshes([shapes[s].geometry.mesh_tree for s in checked],
                             [shapes[s].geometry.triangles_shape for s in checked])
        self.packed_meshes = packed          # (for _mesh_distances: the meshes' own distance)
        # owner frame of shape s: T_world_link[owner_link[s]] @ owner_offset[s] (link -1: the identity)
        self.owner_link = np.empty(len(shapes), dtype=np.int64)
        self.owner_offset = np.empty((len(shapes), 4, 4))
        for s, e in enumerate(shapes):
            if e.body_type == BodyType.ROBOT_LINK:
                self.owner_link[s], self.owner_offset[s] = e.link_index, np.eye(4)
            else:
                obj = world.objects[e.owner]
                self.owner_link[s] = e.link_index if obj.attached else -1
                self.owner_offset[s] = obj.T_frame_object
        # body frames the compiled rows take as they are (clearance_rows.jacobian_and_local_points): a link's
        # own frame (offset exactly the identity) or a world object's frame (link -1); others (an object
        # attached with an offset) are computed by numpy (_local_points)
        self.plain_frame = (self.owner_link < 0) | (self.owner_offset == np.eye(4)).all(axis=(1, 2))
        # the row kernels' world arrays (convex solids, packed meshes, the Jacobians' tables), packed in two
        # and each hull vertex's mesh triangles, tried before a hull witness point's projection onto its mesh
        self.hull_triangles = hull_vertex_triangles(self.convex.vertex_start, self.convex.vertices, checked,
                                                    [shapes[s].geometry.triangles_shape for s in checked])
        self.row_world = pack_row_world(self.convex, packed, self.shape_link, self.owner_link, self.owner_offset,
                                        mk.child_link, mk.axis, mk.prismatic, self.chain, self.hull_triangles)
        # the shapes' bounding spheres (those of narrowphase.bounding_sphere_gaps: the box's centre, bounding radius)
        self.sphere_centre = np.array([e.geometry.obb_center_shape for e in shapes], dtype=float).reshape(-1, 3)
        self.sphere_radius = np.array([float(e.geometry.bounding_radius_m) for e in shapes])
        # a chunk's complete configurations as candidate_rows's named values: every active joint, in order
        robot = world.robot
        self.all_joints = np.arange(len(robot.active_joint_names), dtype=np.int64)
        # the values of joints not named (none, in a chunk): read-only, as the scene's current positions are
        # (one compiled signature for both)
        self.no_current = np.zeros(len(robot.active_joint_names))
        self.no_current.flags.writeable = False
        # candidate_rows's world arrays (limits, kinematics, shape placement, boxes, spheres), packed
        self.packed_world = pack_world(*robot.limit_arrays, *robot.kinematics_arrays, world.shape_link,
                                       world.T_frame_shape, world.obb_center, world.obb_axes, world.obb_half,
                                       self.sphere_centre, self.sphere_radius)

    def coal_poses(self) -> list:
        """This thread's coal pose of each shape (``Transform3s``, made once; set by the caller before use)."""
        poses = getattr(self._scratch, "poses", None)
        if poses is None:
            poses = self._scratch.poses = [coal.Transform3s() for _ in range(len(self.shape_link))]
        return poses

    def mimic_columns(self, columns: np.ndarray) -> np.ndarray:
        """``mimic_matrix[:, columns]`` (M, J): the movable joints' motion per requested joint, kept for the last
        few joint lists (read-only)."""
        key = columns.tobytes()
        found = self._mimic_columns.get(key)
        if found is None:
            found = self.mk.mimic_matrix[:, columns]
            found.flags.writeable = False
            if len(self._mimic_columns) >= 16:
                self._mimic_columns.clear()
            self._mimic_columns[key] = found
        return found

    def coal_result(self) -> "coal.DistanceResult":
        """This thread's coal distance result (made once; cleared by the caller before each use)."""
        result = getattr(self._scratch, "result", None)
        if result is None:
            result = self._scratch.result = coal.DistanceResult()
        return result


def _tables(world: CollisionWorld) -> _Tables:
    return world.cached(("clearance", "tables"), _Tables, world)


class _PairTables:
    """The per-shape tables of :class:`_Tables` taken per checked pair of one selection (P pairs), so that
    a request indexes them once by its candidate rows' pair: shapes, the first-distance route, the mesh
    checks, the owner links, whether the body frames are taken as they are, and the answer's body columns."""

    def __init__(self, tables: _Tables, pairs: np.ndarray, margins: np.ndarray | None = None) -> None:
        pairs = np.asarray(pairs, dtype=np.int64)
        self.a = np.ascontiguousarray(pairs[:, 0])
        self.b = np.ascontiguousarray(pairs[:, 1])
        # both shapes have a first distance (coal on hulls or primitives)
        self.direct = tables.has_first[self.a] & tables.has_first[self.b]
        self.mesh = tables.bvh[self.a] | tables.bvh[self.b]
        # direct pairs measured by the compiled GJK: both shapes polytopes (a mesh's hull, a box), so that GJK
        # reaches the pair's nearest features in finitely many steps (box-box too: its points and normal are
        # coal's within 1e-12 m, test_clearance's box pairs); pairs with a curved shape stay with coal
        self.compiled = self.direct & tables.compiled[self.a] & tables.compiled[self.b]
        # the first distance's route in first_distance_rows: 1 the compiled GJK (polytopes), 2 and 3 a cylinder
        # (first or second shape) with a polytope (gjk.cylinder_side_distances), 0 coal
        route = self.compiled.astype(np.int64)
        route[self.direct & tables.cylinder[self.a] & tables.compiled[self.b]] = 2
        route[self.direct & tables.compiled[self.a] & tables.cylinder[self.b]] = 3
        self.route = route
        # how far beyond its threshold a first distance must be to cull the pair (a hull's GJK slack)
        self.slack = np.where(self.mesh, _HULL_SLACK_M, 0.0)
        self.bvh = tables.bvh[pairs]                              # (P, 2)
        self.mesh_slot = tables.mesh_slot[pairs]                  # (P, 2)
        self.owner_link = tables.owner_link[pairs]                # (P, 2)
        self.plain_frames = tables.plain_frame[pairs].all(axis=1)  # both body frames taken as they are
        self.names = tables.names[pairs]                          # (P, 2)
        self.types = tables.types[pairs]
        self.ids = tables.ids[pairs]
        for array in vars(self).values():
            array.flags.writeable = False
        self._thresholds: dict[float, np.ndarray] = {}
        # the row kernels' pair arrays, packed in two (margins: the selection's; zeros where not given)
        self.row_pairs = pack_row_pairs(pairs, self.direct, self.route, self.mesh, self.mesh_slot, self.bvh,
                                        self.plain_frames, self.slack,
                                        np.zeros(len(pairs)) if margins is None else margins)
        self._single = threading.local()
        self._ints = tables.packed_world[1]

    def buffers(self, n_cfg: int) -> tuple:
        """Outputs of ``candidate_rows`` for ``n_cfg`` configurations: (poses, rows, q, T_world_link,
        T_world_shape), the last three views of ``poses``; for one configuration, this thread's, made once
        (a request's answer is made of copies: nothing refers to them after it)."""
        if n_cfg == 1:
            found = getattr(self._single, "buffers", None)
            if found is not None:
                return found
        n_q, n_link, n_shape = pose_sizes(self._ints, n_cfg)
        poses = np.empty(n_q + n_link + n_shape)
        n_act, n_links, n_shapes = (int(x) for x in self._ints[[0, 2, 3]])
        found = (poses, np.empty((2, n_cfg * len(self.a)), dtype=np.int64), poses[:n_q].reshape(n_cfg, n_act),
                 poses[n_q:n_q + n_link].reshape(n_cfg, n_links, 4, 4),
                 poses[n_q + n_link:].reshape(n_cfg, n_shapes, 4, 4))
        if n_cfg == 1:
            self._single.buffers = found
        return found

    def single_buffers(self, n_movable: int) -> "_SingleBuffers":
        """This thread's buffers of one configuration's rows (``clearance_rows.single_rows``), made once."""
        found = getattr(self._single, "rows", None)
        if found is None:
            found = self._single.rows = _SingleBuffers(len(self.a), n_movable)
        return found

    def thresholds(self, influence: float, margins: np.ndarray) -> np.ndarray:
        """``influence + margins`` (P,), the selection's ``margins``, kept for the last few influences."""
        found = self._thresholds.get(influence)
        if found is None:
            found = influence + margins
            if len(self._thresholds) >= 8:
                self._thresholds.clear()
            self._thresholds[influence] = found
        return found


class _SingleBuffers:
    """The buffers ``clearance_rows.single_rows`` writes one configuration's rows into (P checked pairs, so at most
    P candidate rows; M movable joints), and the views of them that the steps after it take, in its layout."""

    def __init__(self, n_pairs: int, n_movable: int) -> None:
        sizes = single_buffer_sizes(n_pairs, n_movable)
        self.F = np.zeros(sizes[0])
        self.I = np.zeros(sizes[1], dtype=np.int64)
        self.I32 = np.zeros(sizes[2], dtype=np.int32)
        self.I8 = np.zeros(sizes[3], dtype=np.int8)
        self.B = np.zeros(sizes[4], dtype=bool)
        self.P, self.M = n_pairs, n_movable
        self.steps_done = False        # the request's compiled steps already ran into these (set per request)
        self.info = self.I[single_info_start(n_pairs):single_support_start(n_pairs)]
        self._support_at = single_support_start(n_pairs)

    def first(self, k: int) -> tuple:
        """The first distances of the K rows: raw (K,), p0, p1 (K, 3), measured (K,), hull vertices (K, 2)."""
        F, P = self.F, self.P
        return (F[:k], F[P:P + 3 * k].reshape(k, 3), F[4 * P:4 * P + 3 * k].reshape(k, 3), self.B[:k],
                self._support(k))

    def _support(self, k: int) -> np.ndarray:
        """The first distances' hull vertices of the K rows (K, 2), after the info."""
        return self.I[self._support_at:self._support_at + 2 * k].reshape(k, 2)

    def measured(self, k: int) -> _Measured:
        F, P, B = self.F, self.P, self.B
        return _Measured.of(self.I8[:k], F[7 * P:7 * P + k], F[8 * P:8 * P + 6 * k].reshape(k, 2, 3),
                            F[14 * P:14 * P + 3 * k].reshape(k, 3), self.I32[:2 * k].reshape(k, 2), B[P:P + k],
                            B[2 * P:2 * P + k], B[3 * P:3 * P + k], self._support(k))

    def rows(self, place: int, n: int) -> np.ndarray:
        """Row indices (coal's: place 0, the narrow phase's: 1, the meshes' distance: 2)."""
        return self.I[place * self.P:place * self.P + n]

    def overlapping(self, k: int) -> np.ndarray:
        return self.B[4 * self.P:4 * self.P + k]

    def answer(self, n: int, jacobians: bool) -> tuple:
        """Copies of the answer's n rows: cfg, pair, padded distance, points, normal, subshapes, smooth, local
        points and the Jacobian rows over the movable joints ((n, M); (n, 0) without Jacobians)."""
        F, I, P = self.F, self.I, self.P
        return (I[3 * P:3 * P + n].copy(), I[4 * P:4 * P + n].copy(), F[17 * P:17 * P + n].copy(),
                F[18 * P:18 * P + 6 * n].copy().reshape(n, 2, 3), F[24 * P:24 * P + 3 * n].copy().reshape(n, 3),
                self.I32[2 * P:2 * P + 2 * n].copy().reshape(n, 2), self.B[5 * P:5 * P + n].copy(),
                F[27 * P:27 * P + 6 * n].copy().reshape(n, 2, 3),
                F[33 * P:33 * P + self.M * n].reshape(n, self.M) if jacobians else np.zeros((n, 0)))


def _pair_tables(world: CollisionWorld, tables: _Tables, selection) -> _PairTables:
    """The :class:`_PairTables` of ``selection`` (cached with the world, by the selection object, which the
    cache entry holds so that its id is not reused)."""
    held, built = world.cached(("clearance", "pair tables", id(selection)),
                               lambda: (selection, _PairTables(tables, selection.pairs, selection.margins)))
    if held is not selection:           # (cannot happen while the entry holds it; built afresh if it did)
        return _PairTables(tables, selection.pairs, selection.margins)
    return built


def point_jacobians(world: CollisionWorld, T_world_link: np.ndarray, links: np.ndarray, points: np.ndarray,
                    normals: np.ndarray) -> np.ndarray:
    """``normals[r] . d points[r] / d m`` (R, M) over the movable joints, for points fixed to ``links`` (R,).

    ``T_world_link`` (L, 4, 4) at one configuration; link -1 is the world (no motion).
    Revolute joint j: ``axis_j x (p - o_j)``; prismatic: ``axis_j`` (axes in the planning frame).
    """
    return _row_jacobians(_tables(world), np.asarray(T_world_link)[None], np.zeros(len(links), dtype=np.int64),
                          (np.asarray(links),), (np.asarray(points, dtype=float),), np.asarray(normals, dtype=float),
                          (1.0,))


def _row_jacobians(tables: _Tables, T_world_link: np.ndarray, cfg: np.ndarray, links, points, normals: np.ndarray,
                   signs) -> np.ndarray:
    """``sum_i signs[i] * normals[r] . d points[i][r] / d m`` (R, M), ``points[i]`` fixed to ``links[i]``,
    row r at configuration ``cfg[r]`` of ``T_world_link`` (C, L, 4, 4)."""
    mk = tables.mk
    child = mk.child_link
    T_child = T_world_link[:, child]                                   # (C, M, 4, 4)
    axis_w = np.einsum("cmij,mj->cmi", T_child[:, :, :3, :3], mk.axis)[cfg]   # (R, M, 3)
    origin_w = T_child[:, :, :3, 3][cfg]                               # (R, M, 3)
    # revolute: n . (a x (p - o)) = (p - o) . (n x a); prismatic: n . a
    n = normals[:, None, :]
    n_cross_a = (n[..., 1] * axis_w[..., 2] - n[..., 2] * axis_w[..., 1],     # each (R, M)
                 n[..., 2] * axis_w[..., 0] - n[..., 0] * axis_w[..., 2],
                 n[..., 0] * axis_w[..., 1] - n[..., 1] * axis_w[..., 0])
    pri = np.einsum("rk,rmk->rm", normals, axis_w)
    total = 0.0
    for link, point, sign in zip(links, points, signs):
        arm = point[:, None, :] - origin_w                                 # (R, M, 3)
        rev = arm[..., 0] * n_cross_a[0] + arm[..., 1] * n_cross_a[1] + arm[..., 2] * n_cross_a[2]
        total = total + sign * np.where(mk.prismatic[None, :], pri, rev) * tables.chain[link]
    return total


def _validate(influence_distance, max_rows_per_configuration) -> None:
    try:
        influence = float(influence_distance)
    except (TypeError, ValueError):
        raise RequestError(f"influence_distance {influence_distance!r} must be a number of metres") from None
    if not math.isfinite(influence) or influence < 0.0:
        raise RequestError(f"influence_distance {influence_distance} m must be finite and >= 0")
    if int(max_rows_per_configuration) < 0:
        raise RequestError(f"max_rows_per_configuration {max_rows_per_configuration} must be >= 0")


# the first distance (hulls, primitives) and the mesh distance: coal at the witness precision
_REQUEST = coal.DistanceRequest()
_REQUEST.enable_signed_distance = True
_REQUEST.gjk_tolerance = narrowphase.WITNESS_PRECISION_M
_REQUEST.epa_tolerance = narrowphase.WITNESS_PRECISION_M
# the first distance of a pair with a mesh (convex hulls): tighter, so that the witness points, and the
# normal, are as precise as those of coal's mesh distance (the hulls are polytopes: a few more GJK steps)
_HULL_REQUEST = coal.DistanceRequest()
_HULL_REQUEST.enable_signed_distance = True
_HULL_REQUEST.gjk_tolerance = 1e-12
_HULL_REQUEST.epa_tolerance = narrowphase.WITNESS_PRECISION_M
# the compiled GJK's gap between its upper and lower bounds at convergence (relative beyond 1 m), metres
_HULL_GJK_M = 1e-12
# A hull witness point this close to its mesh's surface (metres) is a point of the mesh: with both
# on their meshes, the meshes' distance is the hulls' one (to within twice this).
ON_MESH_M = 1e-9
# The projection of a hull witness point onto its mesh looks only for triangles nearer than twice ON_MESH_M
# (squared): the points on their meshes get the triangle an unbounded search gives, bit for bit, in a fraction of
# its work (the tree's boxes and triangles farther than that are not opened); a point farther is off its mesh
# either way (its row's mesh distance sets the triangles).
_ON_MESH_SEARCH_D2 = (2.0 * ON_MESH_M) ** 2
_EYE4 = np.eye(4)
_EYE4.flags.writeable = False
_SANE_M = 1e6                   # beyond this a coal answer is a failure (see narrowphase._SANE_DISTANCE_M)
_STOP_EVERY = 256               # rows measured between two looks at the stop flag
# single_settled_rows' constants by place (clearance_rows.PEN_SANE ...): those _penetrating_convex_rows hands
# slow_convex_rows, the same float64 values
_PENETRATION_CONSTANTS = np.array([_SANE_M, penetration.CHECK_ABS_M, penetration.CHECK_REL,
                                   penetration.LOCAL_CHECK_RAD, *witness_features.feature_constants()[:1],
                                   *witness_features.feature_constants()[3:]], dtype=float)
# A one-configuration request's candidate rows and their compiled steps in one call (``single_request_rows``), once
# the penetrating rows' bodies are made; False: three calls from Python (tests count where the steps stop), the same
# rows.
ONE_CALL = True

# how each candidate row was settled by _measure
_CULLED, _DONE, _CHECK_MESH = 0, 1, 2
# single_rows' constants after the thresholds (its first distances' gap, the apart slack, the sane bound, the on-mesh
# and search distances squared, the states done and check-mesh), as the one-configuration steps pass them
_SINGLE_ROW_CONSTANTS = (_HULL_GJK_M, _HULL_SLACK_M, _SANE_M, ON_MESH_M ** 2, _ON_MESH_SEARCH_D2, _DONE, _CHECK_MESH)
# single_settled_rows' disc for the witness features (unit circle: cosines, sines)
_FEATURE_DISC = witness_features.feature_constants()[1:3]


class _Measured:
    """Per candidate (K of them): the raw signed distance, witness points, normal, subshapes and flags."""

    def __init__(self, k: int) -> None:
        self.state = np.zeros(k, dtype=np.int8)
        self.distance = np.full(k, np.inf)
        self.points = np.zeros((k, 2, 3))
        self.normal = np.zeros((k, 3))
        self.subshapes = np.full((k, 2), -1, dtype=np.int32)
        self.exact = np.ones(k, dtype=bool)
        self.deepest = np.zeros(k, dtype=bool)      # rule "deepest_point"
        self.kink = np.zeros(k, dtype=bool)         # features touching along a segment or patch, or near a switch
        # the compiled GJK's hull vertices of each side (first_distance_rows' support), -1 where none is known
        self.support = np.full((k, 2), -1, dtype=np.int64)

    @classmethod
    def of(cls, state, distance, points, normal, subshapes, exact, deepest, kink, support) -> "_Measured":
        """The answers in the given arrays (each as :meth:`__init__` makes it, or as a kernel went on from there)."""
        out = cls.__new__(cls)
        out.state, out.distance, out.points, out.normal = state, distance, points, normal
        out.subshapes, out.exact, out.deepest, out.kink, out.support = subshapes, exact, deepest, kink, support
        return out

    def store(self, k: int, result: narrowphase.PairDistance) -> None:
        self.state[k] = _DONE
        self.distance[k] = float(result.distance_m)
        self.points[k, 0] = result.p0_world
        self.points[k, 1] = result.p1_world
        self.normal[k] = result.normal_world
        self.subshapes[k] = result.subshapes
        self.exact[k] = bool(result.exact)
        self.deepest[k] = getattr(result, "rule", "deepest_point") == "deepest_point"


def _measure(world: CollisionWorld, tables: _Tables, T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray,
             pairs: np.ndarray, thresholds: np.ndarray, stop, pair_tables: _PairTables | None = None) -> _Measured:
    """Distances of the candidate rows (configuration ``cfg[k]`` of ``T_shape``, pair ``pair[k]``).

    A row is kept (``state == _DONE``) when its distance is below its pair's threshold. Its
    numbers are those of :func:`narrowphase.pair_distance`, computed by the cheapest exact way:

    - two primitive (or convex) shapes apart: their distance (the compiled GJK's for two polytopes and for a
      polytope and a cylinder's side, the compiled end rows for a polytope and a cylinder's cap or rim, exact;
      coal's otherwise, the call pair_distance makes);
    - a pair with a mesh: coal's distance of the hulls (a hull contains its mesh: a lower
      bound, which culls the pair when it is the threshold or more); with the hulls apart and
      each mesh's hull witness point on the mesh's surface (:func:`kernels.clearance_rows.check_on_meshes`,
      all rows of the chunk in one call), the meshes are at the hulls' distance, attained at
      those points (the meshes are apart, neither inside the other); otherwise the meshes' own distance
      (:func:`_mesh_distances`: compiled over their triangles, or coal's mesh distance, as
      :func:`narrowphase.pair_distance` has it while the surfaces are apart);
    - everything else (penetrating or touching hulls or primitives, meshes without hulls):
      :func:`narrowphase.pair_distance` itself; its penetrating convex pairs (two primitives, or nearly convex
      solids one of which is a closed mesh) from their first distance's penetrating answer (the compiled EPA's,
      ``kernels.epa``, for polytopes and polytope-cylinder pairs; coal's otherwise), in one compiled call over the
      chunk's rows (:func:`_penetrating_convex_rows`), the others one by one.
    """
    k_rows = len(cfg)
    out = _Measured(k_rows)
    if k_rows == 0:
        return out
    pt = _PairTables(tables, pairs) if pair_tables is None else pair_tables
    # hull-hull (and hull-box) rows: one compiled GJK call over all of them (deterministic, no per-row
    # Python), in the call that gathers them; rows it leaves (touching, overlapping, not converged) and the
    # other direct rows go to coal below
    raw, p0, p1, measured, coal_rows, support = first_distance_rows(cfg, pair, T_shape, *tables.row_world,
                                                                    *pt.row_pairs, _HULL_GJK_M)
    return _measure_from_first(world, tables, pt, T_shape, cfg, pair, pairs, thresholds, stop, out, raw, p0, p1,
                               measured, coal_rows, support)


def _measure_from_first(world: CollisionWorld, tables: _Tables, pt: _PairTables, T_shape: np.ndarray,
                        cfg: np.ndarray, pair: np.ndarray, pairs: np.ndarray, thresholds: np.ndarray, stop,
                        out: _Measured, raw: np.ndarray, p0: np.ndarray, p1: np.ndarray, measured: np.ndarray,
                        coal_rows: np.ndarray, support: np.ndarray) -> _Measured:
    """:func:`_measure` after ``first_distance_rows`` (its outputs ``raw`` ... ``support``; ``out`` as made)."""
    out.support = support
    if len(coal_rows):
        _coal_first_distances(tables, T_shape, cfg, pair, pairs, pt, coal_rows, raw, p0, p1, stop)
    # one compiled pass over the rows: a sane first distance (a lower bound, exact for primitives) at or
    # beyond the threshold culls the row; apart rows get their distance, witness points (point 1 at
    # p0 + d n) and normal, to be checked on the meshes (mesh rows: kept where each mesh's hull witness point
    # lies on its mesh) or done; the rest are slow
    slow_rows, rest, overlapping = settle_rows(
        raw, p0, p1, measured, support, cfg, pair, T_shape, *tables.row_world, *pt.row_pairs, thresholds, _HULL_SLACK_M, _SANE_M,
        ON_MESH_M ** 2, _DONE, _CHECK_MESH, out.distance, out.points, out.normal, out.state, out.subshapes,
        _ON_MESH_SEARCH_D2)
    return _narrow_phase(world, tables, pt, T_shape, cfg, pair, pairs, thresholds, stop, out, raw, p0, p1, slow_rows,
                         rest, overlapping)


def _narrow_phase(world: CollisionWorld, tables: _Tables, pt: _PairTables, T_shape: np.ndarray, cfg: np.ndarray,
                  pair: np.ndarray, pairs: np.ndarray, thresholds: np.ndarray, stop, out: _Measured, raw: np.ndarray,
                  p0: np.ndarray, p1: np.ndarray, slow_rows: np.ndarray, rest: np.ndarray,
                  overlapping: np.ndarray) -> _Measured:
    """:func:`_measure` after ``settle_rows`` (its outputs ``slow_rows``, ``rest``, ``overlapping``): the rows left to
    the narrow phase and to the meshes' distance."""
    # penetrating or touching (hulls or primitives), or no first distance: pair_distance's own rules
    slow = slow_rows.tolist()
    ab = None                                                      # pairs[pair] (K, 2), made if a row needs it
    # hull witness points off their meshes: the meshes' own distance
    if len(rest):
        ab = pairs.take(pair, axis=0)
        _mesh_distances(world, tables, pt, T_shape, cfg, pair, ab, rest, out, slow)
    if slow:
        # penetrating convex rows: coal's answer checked, polished and given its witness features in compiled
        # calls over all of them; the rows it leaves go on below, one by one
        slow = _penetrating_convex_rows(world, T_shape, cfg, pair, pairs, slow, overlapping, raw, p0, p1, out)
    _rows_one_by_one(world, T_shape, cfg, pair, pairs, thresholds, stop, out, slow, overlapping, ab, len(rest))
    return out


def _rows_one_by_one(world: CollisionWorld, T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray, pairs: np.ndarray,
                     thresholds: np.ndarray, stop, out: _Measured, slow: list, overlapping: np.ndarray,
                     ab: np.ndarray | None, n_rest: int) -> None:
    """:func:`_narrow_phase`'s last step: the slow rows the compiled calls left (``slow``), one by one
    (:func:`narrowphase.pair_contacts`, then the witness features), then the rows beyond their thresholds culled
    (where a row was measured here or by the meshes' distance: ``n_rest`` of those)."""
    if slow and ab is None:
        ab = pairs.take(pair, axis=0)
    for i, k in enumerate(slow):
        if stop is not None and i % _STOP_EVERY == _STOP_EVERY - 1:
            stop.check_stop()
        a, b = int(ab[k, 0]), int(ab[k, 1])
        # hulls that overlap: the meshes likely do, so pair_contacts looks for the overlap first (the
        # same answer, in another order of work: see narrowphase.pair_contacts)
        out.store(k, narrowphase.pair_contacts(world, T_shape[cfg[k]], a, b, 1, bool(overlapping[k]))[0])
        if out.distance[k] < 0.0 and not out.deepest[k] and penetration.nearly_convex(world, a) \
                and penetration.nearly_convex(world, b):
            _feature_witness(world, T_shape[cfg[k]], a, b, k, out)
    if len(slow) or n_rest:             # (settle_rows culled the rows it settled the same way)
        out.state[(out.state == _DONE) & ~(out.distance < thresholds[pair])] = _CULLED


class _ConvexPacks:
    """Per world: the compiled penetrating-row kernel's bodies, made for a shape the first time one of its rows is
    slow: each shape's slot (-2: not looked at yet, -1: not a nearly convex solid, :func:`penetration.nearly_convex`)
    and the typed list, per slot, of (surface samples, solid, parts): the depth kernels' body packs
    (:func:`narrowphase.body_packs`) and the convex solid's parts (:func:`witness_features.contact_parts`). A
    shape's hull (its convexity test) costs ~25 ms for a Panda link: only the shapes met are looked at. New
    bodies go into a new list and slot array (copied), so that a kernel running in another thread reads the
    ones it was given."""

    def __init__(self, world: CollisionWorld) -> None:
        shapes = world.shapes
        self.slot = np.full(len(shapes), -2, dtype=np.int64)
        self.closed = np.array([bool(e.geometry.is_closed_bvh) for e in shapes])
        self.bvh = np.array([bool(e.geometry.is_bvh) for e in shapes])
        self.bodies = None                   # a numba typed list once a body is in it
        self._items: list = []               # its items (the typed list is made from these: reading one back from
        self._lock = threading.Lock()        # a typed list compiles numba's getitem, ~2 s, on its first use)

    def looked_at(self, world: CollisionWorld, rows: np.ndarray, pair: np.ndarray, pairs: np.ndarray) -> tuple:
        """(slot, bodies) with both shapes of every row (``pairs[pair[rows]]``) looked at (bodies None: none is a
        nearly convex solid)."""
        slot, bodies = self.slot, self.bodies
        if not unseen_shapes(rows, pair, pairs, slot):      # (compiled: the numpy way cost ~6 us a call)
            return slot, bodies
        shapes = pairs.take(pair.take(rows), axis=0).ravel()
        with self._lock:
            slot, bodies = self.slot.copy(), self.bodies
            added = []
            for s in np.unique(shapes).tolist():
                if slot[s] != -2:
                    continue
                geometry = world.shapes[s].geometry
                if geometry.solid_kind < 0 or not penetration.nearly_convex(world, s):
                    slot[s] = -1
                    continue
                samples, solid = narrowphase.body_packs(world, s)
                parts = witness_features.contact_parts(world, s)
                added.append((tuple(_kernel_array(x) for x in samples),
                              (int(solid[0]),) + tuple(_kernel_array(x) for x in solid[1:8]) + (bool(solid[8]),)
                              + tuple(_kernel_array(x) for x in solid[9:]),
                              (int(parts[0]),) + tuple(_kernel_array(x) for x in parts[1:])))
                slot[s] = len(self._items) + len(added) - 1
            if added:
                self._items = self._items + added
                bodies = numba_list()
                for item in self._items:
                    bodies.append(item)
            self.slot, self.bodies = slot, bodies
        return slot, bodies


def _kernel_array(x):
    """An array as the typed list holds it (C-ordered, writable: one item type; a copy only if not)."""
    return np.require(x, requirements=["C", "W"])


def _penetrating_convex_rows(world: CollisionWorld, T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray,
                             pairs: np.ndarray, slow: list, overlapping: np.ndarray, raw: np.ndarray, p0: np.ndarray,
                             p1: np.ndarray, out: _Measured) -> list:
    """The slow rows that :func:`narrowphase.pair_contacts` would answer with a convex pair's checked MTD, answered
    in one compiled call over all of them (``kernels.penetrating_rows.slow_convex_rows``) with their witness
    features and kinks (:func:`_feature_witness`); returns the other slow rows, in order, for the per-row path.

    (The first distance of a pair of polytopes or of a polytope and a cylinder is the compiled EPA's, ``kernels.epa``,
    where its solids overlap; coal's below otherwise: the check and the polish make either the MTD.)

    - two primitives whose first distance (coal's, the call pair_contacts makes) is penetrating and sane: that
      answer, checked and polished (``narrowphase.checked_convex``);
    - two nearly convex solids, one a closed mesh, whose first distance (coal's, on the hulls) is penetrating and
      sane: where a surface point of either solid lies inside the other (``narrowphase.regions_exist``, which
      pair_contacts looks at first), that answer checked and polished (``narrowphase.hull_mtd``, whose own call to
      coal differs only by a looser GJK tolerance: the same numbers on every row of issue 40's four sets).

    A row whose answer fails the check (the MTD is searched then), or that has no region, stays for the per-row
    path, which computes it from the start."""
    packs = world.cached(("clearance", "convex packs"), _ConvexPacks, world)
    rows = np.array(slow, dtype=np.int64)
    slot, bodies = packs.looked_at(world, rows, pair, pairs)
    if bodies is None:
        return slow
    left = slow_convex_rows(rows, cfg, pair, pairs, packs.closed, packs.bvh, slot, overlapping, raw, p0, p1, T_shape,
                            bodies, _SANE_M, penetration.CHECK_ABS_M, penetration.CHECK_REL,
                            penetration.LOCAL_CHECK_RAD, *witness_features.feature_constants(), _DONE, out.state,
                            out.distance, out.points, out.normal, out.subshapes, out.exact, out.deepest, out.kink)
    return left.tolist()


def _coal_first_distances(tables: _Tables, T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray, pairs: np.ndarray,
                          pt: _PairTables, rows: np.ndarray, raw: np.ndarray, p0: np.ndarray, p1: np.ndarray,
                          stop) -> None:
    """coal's first distance (hulls tightened to 1e-12 m, primitives at the witness precision) of candidate
    ``rows``, into ``raw``, ``p0``, ``p1``; each shape's coal pose set once per configuration."""
    rotation = np.ascontiguousarray(T_shape[:, :, :3, :3])
    translation = np.ascontiguousarray(T_shape[:, :, :3, 3])
    poses = tables.coal_poses()                 # this thread's, set below before a row uses one
    posed = [-1] * T_shape.shape[1]             # configuration each pose holds
    first = tables.first
    cfg_list, ab_list = cfg[rows].tolist(), pairs[pair[rows]].tolist()
    requests = [_HULL_REQUEST if m else _REQUEST for m in pt.mesh[pair[rows]].tolist()]
    result = tables.coal_result()
    near0, near1 = [], []
    for i, k in enumerate(rows.tolist()):
        if stop is not None and i % _STOP_EVERY == _STOP_EVERY - 1:
            stop.check_stop()
        c = cfg_list[i]
        a, b = ab_list[i]
        for s in (a, b):
            if posed[s] != c:
                poses[s].setRotation(rotation[c, s])
                poses[s].setTranslation(translation[c, s])
                posed[s] = c
        result.clear()
        raw[k] = coal.distance(first[a], poses[a], first[b], poses[b], requests[i], result)
        near0.append(result.getNearestPoint1())
        near1.append(result.getNearestPoint2())
    p0[rows] = np.asarray(near0, dtype=float).reshape(-1, 3)
    p1[rows] = np.asarray(near1, dtype=float).reshape(-1, 3)


def _feature_witness(world: CollisionWorld, T_shape: np.ndarray, a: int, b: int, k: int, out: _Measured) -> None:
    """A penetrating convex pair's witness points moved to where the two bodies' features meet along the
    MTD normal (:func:`witness_features.feature_witness`: EPA's points are right for the depth, not always
    for the gradient); marked a kink (not smooth) where the features touch along a segment or a patch, or
    where the contact is within ``witness_features.SWITCH_MARGIN_M`` of a switch. One compiled call
    (:func:`witness_features.posed_feature_contact`)."""
    found = witness_features.posed_feature_contact(world, T_shape, a, b, float(out.distance[k]), out.normal[k])
    if found is None:
        out.kink[k] = True
    else:
        out.points[k, 0], out.points[k, 1], margin_m = found
        out.kink[k] = not margin_m >= witness_features.SWITCH_MARGIN_M


def _mesh_distances(world, tables: _Tables, pt: _PairTables, T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray,
                    ab: np.ndarray, rest: np.ndarray, out: _Measured, slow: list) -> None:
    """The surface distance of the apart mesh rows ``rest`` (hulls apart, a hull witness point off its mesh): the
    compiled :func:`kernels.mesh_rows.mesh_surface_rows` (the least distance over the two surfaces' triangles,
    pruned by an upper bound from the witness points projected onto the meshes and by planes along the hull
    normal; exact to rounding) for rows whose sides are closed meshes or boxes, coal's mesh distance
    (:func:`_mesh_distance`) for the others."""
    left = mesh_surface_rows(rest, cfg, ab, pt.mesh_slot[pair], T_shape, tables.box, tables.convex.params,
                             *tables.packed_meshes[:2], *tables.packed_meshes[2:], _SANE_M, _DONE, out.state,
                             out.distance, out.points, out.normal, out.subshapes, np.zeros(len(cfg), dtype=np.int64))
    for k in left.tolist():
        _mesh_distance(world, tables, T_shape, int(cfg[k]), ab[k], k, out, slow)


def _mesh_distance(world, tables: _Tables, T_shape, c: int, ab, k: int, out: _Measured, slow: list) -> None:
    """The surface distance of two shapes whose hulls are apart (so the meshes are apart and neither holds
    the other): coal's mesh distance, what pair_distance answers here, without its solid-body test."""
    a, b = int(ab[0]), int(ab[1])
    result = coal.DistanceResult()
    d = float(coal.distance(tables.mesh[a], narrowphase.coal_transform(T_shape[c, a]), tables.mesh[b],
                            narrowphase.coal_transform(T_shape[c, b]), _REQUEST, result))
    p0, p1 = np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())
    gap = float(np.linalg.norm(p1 - p0))
    if not (0.0 < d < _SANE_M and gap > 1e-12):
        out.state[k] = _CULLED
        slow.append(k)
        return
    normal = (p1 - p0) / gap
    out.store(k, narrowphase.PairDistance(d, p0, p0 + d * normal, normal, True, (int(result.b1), int(result.b2))))


def chunk_rows(world: CollisionWorld, selection, q: np.ndarray, influence: float, k_max: int,
               compute_jacobians: bool, columns: np.ndarray, stop=None) -> tuple | None:
    """The clearance rows of configurations ``q`` (m, A) over ``selection``, as
    :func:`compute_clearance` concatenates them (configuration indices from 0 in ``q``), or
    None when no pair is within ``influence``. One chunk of a batch, in this process or in a
    batch worker (:mod:`batch_workers`): a configuration's rows do not depend on the others."""
    tables = _tables(world)
    pt = _pair_tables(world, tables, selection)
    thresholds = pt.thresholds(influence, selection.margins)
    q = np.ascontiguousarray(q, dtype=float)
    if not q.flags.writeable:
        q = q.copy()                        # (one compiled signature for every caller)
    # poses and culling (boxes, then spheres) of every configuration in one compiled call
    poses, rows, _, T_link, T_shape = pt.buffers(q.shape[0])
    count = candidate_rows(q, tables.all_joints, tables.no_current, False, *tables.packed_world, selection.pairs,
                           thresholds, poses, rows)
    if count == 0:
        return None
    return _posed_rows(world, tables, pt, selection, T_link, T_shape, rows[0, :count], rows[1, :count], thresholds,
                       k_max, compute_jacobians, columns, stop)


def _posed_rows(world: CollisionWorld, tables: _Tables, pt: _PairTables, selection, T_link: np.ndarray,
                T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray, thresholds: np.ndarray, k_max: int,
                compute_jacobians: bool, columns: np.ndarray, stop) -> tuple | None:
    """:func:`chunk_rows` after the poses (``T_link``, ``T_shape``) and the culling: the rows of the
    candidate rows ``cfg``, ``pair`` (configuration-major, pairs in order), or None."""
    found = _measure(world, tables, T_shape, cfg, pair, selection.pairs, thresholds, stop, pt)
    return _finished_rows(tables, pt, selection, T_link, T_shape, cfg, pair, found, k_max, compute_jacobians,
                          columns)


def _finished_rows(tables: _Tables, pt: _PairTables, selection, T_link: np.ndarray, T_shape: np.ndarray,
                   cfg: np.ndarray, pair: np.ndarray, found: _Measured, k_max: int, compute_jacobians: bool,
                   columns: np.ndarray) -> tuple | None:
    """:func:`_posed_rows` after the rows are measured (``found``)."""
    # the rows kept, per configuration smallest padded distance first (stable), at most k_max each, with their
    # witness points, normal, subshapes and smooth flag, Jacobian rows over the movable joints and body-frame
    # points, in one compiled call (the numbers numpy's lexsort, _row_jacobians and _local_points gave, bit for bit)
    cfg, pair, d_padded, pts, nrm, subshapes, smooth, local, jac_m, plain = finish_rows(
        found.state, found.distance, found.points, found.normal, found.subshapes, found.exact, found.deepest,
        found.kink, cfg, pair, T_link, T_shape, found.support, *tables.row_world, *pt.row_pairs, k_max, _DONE,
        SMOOTH_DISTANCE_M, bool(compute_jacobians), NO_SUBSHAPE)
    if len(cfg) == 0:
        return None
    if not plain:                                # an object attached with an offset: its frame by numpy
        local = _local_points(T_link, cfg, pt.owner_link[pair], tables.owner_offset[selection.pairs[pair]], pts)
    jac = np.dot(jac_m, tables.mimic_columns(columns)) if compute_jacobians else np.zeros((len(cfg), 0))
    return cfg, pair, d_padded, pts, local, nrm, subshapes, smooth, jac


def chunk_configurations(n_pairs: int) -> int:
    """How many configurations one chunk holds with ``n_pairs`` checked shape pairs: at most
    CLEARANCE_CHUNK, and at most CLEARANCE_CHUNK_CANDIDATES candidate rows (at least one)."""
    return int(max(1, min(CLEARANCE_CHUNK, CLEARANCE_CHUNK_CANDIDATES // max(1, int(n_pairs)))))


class _RowCounter:
    """The rows of the answer so far, counted chunk by chunk against ``max_rows``.

    Each chunk's part is reduced first as the answer will be (the octomap's rows: one per
    configuration and robot shape, its nearest cell), so the count is that of the answer.
    ``passed`` turns true at the first chunk that takes the count beyond the bound."""

    def __init__(self, world: CollisionWorld, tables: _Tables, pairs: np.ndarray, max_rows: int | None) -> None:
        self.max_rows = None if max_rows is None else int(max_rows)
        self.rows = 0
        self.configurations = 0            # configurations counted
        self.passed = False
        self._tables, self._pairs = tables, pairs
        self._octree = OCTOMAP_ID in world.objects        # (as a tree, or as the cell boxes of a request)

    def count(self, start: int, end: int, part):
        """Count the part of configurations ``start:end`` (None: no row); the part as reduced."""
        if part is not None and self._octree:
            shape_pairs = self._pairs[part[1]]
            keep = octomap_cells.nearest_cell_keep(part[0], self._tables.names[shape_pairs],
                                                   self._tables.ids[shape_pairs], part[2])
            part = None if not keep.any() else tuple(x[keep] for x in part)
        self.rows += 0 if part is None else len(part[0])
        self.configurations += end - start
        if self.max_rows is not None and self.rows > self.max_rows:
            self.passed = True
        return part

    def message(self, n: int) -> str:
        return (f"max_clearance_rows: the answer would have more than {self.max_rows} rows ({self.rows} rows in "
                f"{self.configurations} of its {n} configurations, where the work stopped); set "
                "max_rows_per_configuration, a smaller influence_distance or send fewer configurations per request")


def _timed_chunk_rows(timed: list, world: CollisionWorld, selection, q: np.ndarray, job: tuple, stop):
    """:func:`chunk_rows` of ``q``, its seconds and configurations added to ``timed``."""
    start = time.perf_counter()
    part = chunk_rows(world, selection, q, *job, stop=stop)
    timed[0] += time.perf_counter() - start
    timed[1] += len(q)
    return part


def _rows_in_pool(pool, world: CollisionWorld, request: CheckRequest, selection, q_all: np.ndarray, job: tuple,
                  stop, chunk: int, counter: _RowCounter, begin: int, timed: list) -> list[tuple]:
    """:func:`chunk_rows` over ``q_all[begin:]``, shared between this process and ``pool``'s workers;
    the parts in configuration order. No chunk is handed out once ``counter`` has passed its bound. ``timed``:
    this process's own chunks' seconds and configurations are added to it."""
    n = len(q_all)
    cursor = [begin]
    found: list[tuple[int, tuple]] = []

    def next_task(size: int):
        start = cursor[0]
        if start >= n or counter.passed:
            return None
        cursor[0] = min(n, start + min(size, chunk))
        return (start, cursor[0]), q_all[start:cursor[0]]

    def deliver(token: tuple, part) -> None:
        start = token[0]
        part = counter.count(start, token[1], part)
        if part is not None and not counter.passed:
            found.append((start, part))

    key = (request.group_name, request.pad_environment_collisions, request.pad_self_collisions)
    pool.run(next_task, (CLEARANCE_ROWS, key) + job, lambda q: _timed_chunk_rows(timed, world, selection, q, job, stop),
             deliver, stop=stop, total=n - begin, wanted=lambda: not counter.passed)
    found.sort(key=lambda item: item[0])
    return [(part[0] + start,) + part[1:] for start, part in found]


def compute_clearance(resolver: ConfigurationResolver, request: CheckRequest, joint_names, positions,
                      influence_distance: float, *, max_rows_per_configuration: int = 0,
                      compute_jacobians: bool = True, max_batch: int = MAX_BATCH_CONFIGURATIONS,
                      stop=None, workers=None, max_rows: int | None = None) -> Clearance:
    """See :meth:`checker.CollisionChecker.clearance` (never raises on bad input).

    ``workers``: a :class:`batch_workers.BatchWorkers` that may share a large batch with
    worker processes (None: this process only); the rows are the same either way.
    ``max_rows``: the most rows of the answer (None: no bound). The rows are counted per
    chunk (after ``max_rows_per_configuration`` and the octomap's per-cell reduction) and the
    work stops at the first chunk that passes the bound: the request is refused then, by
    name, with how to split it, after work proportional to the bound, not to the request."""
    scene = resolver.scene
    robot = scene.robot
    try:
        world = request.world_of(scene)
        _validate(influence_distance, max_rows_per_configuration)
        joint_names = tuple(joint_names)
        if joint_names:
            indices, values = resolver.named_values(joint_names, positions, max_batch)
        else:                       # no joints named: the scene's current configuration
            if np.asarray(positions, dtype=float).size:
                raise RequestError(f"no joint names but {np.asarray(positions).size} positions")
            indices, values = np.zeros(0, dtype=np.int64), np.zeros((1, 0))
        n = values.shape[0]
        if n > 1:                   # (one configuration: candidate_rows looks, and the fault is named then)
            resolver.check_finite(joint_names, values, 0, True)
        try:
            selection = request.selection(world)
        except CollisionPkgError:
            resolver.check_finite(joint_names, values, 0, n > 1)     # a fault of the configuration comes first
            raise
    except CollisionPkgError as exc:
        return _refused(Status.INVALID_REQUEST, str(exc))
    influence = float(influence_distance)
    k_max = int(max_rows_per_configuration)
    names = tuple(joint_names) if len(joint_names) else robot.active_joint_names
    columns = indices if len(joint_names) else np.arange(len(robot.active_joint_names))
    if n == 1:
        return _single_clearance(resolver, world, selection, joint_names, indices, values, influence, k_max,
                                 bool(compute_jacobians), columns, names, stop, max_rows)
    q_all = resolver.complete(indices, values)
    if resolver.check_joint_limits:
        lower, upper = robot.limit_arrays
        outside = (q_all < lower) | (q_all > upper)
        if outside.any():
            c = int(outside.any(axis=1).argmax())
            message = resolver.limits_message(q_all[c])
            return _refused(Status.OUT_OF_BOUNDS, message + (f" in configuration {c}" if n > 1 else ""), names)
    tables = _tables(world)
    pairs = selection.pairs
    job = (influence, k_max, bool(compute_jacobians), np.asarray(columns, dtype=np.int64))
    chunk = chunk_configurations(len(pairs))
    counter = _RowCounter(world, tables, pairs, max_rows)
    parts = []
    begin = 0
    speeds = kind = None            # the speeds kept per kind of request, where the workers may share this batch
    timed = [0.0, 0]                # seconds and configurations of this process's own chunks
    if workers is not None and n > SHARE_PROBE_CONFIGURATIONS and \
            workers.wants_pool(n * CLEARANCE_WORK_PER_CONFIGURATION):
        # a batch of less work than MIN_SHARED_WORK_S stays in this process (the workers' round trips would cost
        # more than they give), its work judged at the speed this process's chunks took in the last batch of its kind
        # on this snapshot; where that says little work (or none is kept), at the speed of its own first
        # configurations, measured here first (a batch judged large goes to the pool at once: its workers would
        # idle during that measure)
        speeds = world.cached(("clearance", "seconds per configuration"), dict)
        kind = (influence, k_max, bool(compute_jacobians))
        per_configuration_s = speeds.get(kind)
        if per_configuration_s is None or per_configuration_s * n < MIN_SHARED_WORK_S:
            begin = min(SHARE_PROBE_CONFIGURATIONS, chunk)
            part = counter.count(0, begin, _timed_chunk_rows(timed, world, selection, q_all[:begin], job, stop))
            if part is not None:
                parts.append(part)
            per_configuration_s = timed[0] / timed[1]
        if counter.passed or per_configuration_s * n < MIN_SHARED_WORK_S:
            workers = None
    pool = None if workers is None or counter.passed else workers.acquire(world, n * CLEARANCE_WORK_PER_CONFIGURATION)
    if pool is not None:
        try:
            parts += _rows_in_pool(pool, world, request, selection, q_all, job, stop, chunk, counter, begin, timed)
        finally:
            workers.release()
    elif not counter.passed:
        for start in range(begin, n, chunk):
            if stop is not None:
                stop.check_stop()
            end = min(n, start + chunk)
            part = counter.count(start, end, _timed_chunk_rows(timed, world, selection, q_all[start:end], job, stop))
            if part is not None:
                parts.append((part[0] + start,) + part[1:])
            if counter.passed:
                break
    if speeds is not None and timed[1]:
        if len(speeds) >= _SPEEDS_KEPT and kind not in speeds:    # (influence distances swept: a bounded table)
            speeds.clear()
        speeds[kind] = timed[0] / timed[1]
    if counter.passed:
        parts.clear()
        return _refused(Status.INVALID_REQUEST, counter.message(n), names)
    if not parts:
        return Clearance(Status.VALID, f"no pair within {influence:g} m in {n} configuration{'s' if n > 1 else ''}",
                         names, jacobian=np.zeros((0, len(names) if compute_jacobians else 0)))
    if len(parts) == 1:             # one chunk: its arrays are its own (made by chunk_rows), C-ordered as a concatenation
        cfg, sel, dist, pts, local, nrm, sub, smooth, jac = (np.ascontiguousarray(x) for x in parts[0])
    else:
        cfg, sel, dist, pts, local, nrm, sub, smooth, jac = (np.concatenate(x) for x in zip(*parts))
    shape_pairs = pairs.take(sel, axis=0)
    pt = _pair_tables(world, tables, selection)
    sub = np.where(pt.bvh.take(sel, axis=0), sub, NO_SUBSHAPE).astype(np.int32)
    return Clearance(Status.VALID, f"{len(cfg)} pair rows within {influence:g} m in {n} configuration"
                     f"{'s' if n > 1 else ''}", names, cfg.astype(np.int64), pt.names.take(sel, axis=0),
                     pt.types.take(sel, axis=0), pt.ids.take(sel, axis=0), sub, dist, pts, local, nrm, jac, smooth,
                     shape_pairs)


def _single_clearance(resolver: ConfigurationResolver, world: CollisionWorld, selection, joint_names: tuple,
                      indices: np.ndarray, values: np.ndarray, influence: float, k_max: int, compute_jacobians: bool, columns: np.ndarray,
                      names: tuple, stop, max_rows: int | None) -> Clearance:
    """:func:`compute_clearance` of one configuration (``values`` (1, K) of joints ``indices``), the
    same answer: its completion, limits check, poses and culling in one compiled call, then its rows as a
    chunk of one, in this process (a batch worker would give the same rows)."""
    tables = _tables(world)
    pt = _pair_tables(world, tables, selection)
    thresholds = pt.thresholds(influence, selection.margins)
    if not (values.flags.c_contiguous and values.flags.writeable):
        values = np.array(values)                             # (one compiled signature for every caller)
    poses, rows, q, T_link, T_shape = pt.buffers(1)
    packs = world.cached(("clearance", "convex packs"), _ConvexPacks, world)
    buffers = pt.single_buffers(tables.mk.child_link.shape[0])
    buffers.steps_done = ONE_CALL and packs.bodies is not None        # (read by _single_rows)
    if buffers.steps_done:
        # the candidate rows and their compiled steps in one call (single_request_rows: the calls below, fused)
        count = single_request_rows(
            values, indices, resolver.scene.current_positions, bool(resolver.check_joint_limits),
            *tables.packed_world, selection.pairs, thresholds, poses, rows, T_link, T_shape, *tables.row_world,
            *pt.row_pairs, *_SINGLE_ROW_CONSTANTS, k_max, SMOOTH_DISTANCE_M, bool(compute_jacobians), NO_SUBSHAPE,
            packs.closed, packs.bvh, packs.slot, packs.bodies, _PENETRATION_CONSTANTS, *_FEATURE_DISC, _CULLED,
            buffers.F, buffers.I, buffers.I32, buffers.I8, buffers.B)
    else:
        count = candidate_rows(values, indices, resolver.scene.current_positions, bool(resolver.check_joint_limits),
                               *tables.packed_world, selection.pairs, thresholds, poses, rows)
    if count == CANDIDATES_NON_FINITE:
        try:
            resolver.check_finite(joint_names, values, 0, False)
        except CollisionPkgError as exc:
            return _refused(Status.INVALID_REQUEST, str(exc))
        return _refused(Status.INVALID_REQUEST, "a joint position is not finite")     # (check_finite names it)
    if count == CANDIDATES_OUT_OF_LIMITS:
        return _refused(Status.OUT_OF_BOUNDS, resolver.limits_message(q[0]), names)
    if stop is not None:
        stop.check_stop()
    part = None if count == 0 else _single_rows(world, tables, pt, selection, T_link, T_shape, rows[0, :count],
                                                rows[1, :count], thresholds, k_max, compute_jacobians,
                                                np.asarray(columns, dtype=np.int64), stop)
    if part is not None or (max_rows is not None and max_rows < 0):
        rows_here = 0 if part is None else len(part[0])
        # (the count of a chunk of one, as _RowCounter makes it: its octomap rows reduced first; the counter itself
        # only where that or the bound needs it)
        if OCTOMAP_ID in world.objects or (max_rows is not None and rows_here > max_rows):
            counter = _RowCounter(world, tables, selection.pairs, max_rows)
            part = counter.count(0, 1, part)
            if counter.passed:
                return _refused(Status.INVALID_REQUEST, counter.message(1), names)
    if part is None:
        return _no_rows_single(influence, names, len(names) if compute_jacobians else 0)
    cfg, sel, dist, pts, local, nrm, sub, smooth, jac = part      # (finish_rows's, subshapes set on non-mesh sides)
    # (take: the rows of the pair tables, a third of the time of an index array's gather)
    return _answer(Status.VALID, f"{len(cfg)} pair rows within {influence:g} m in 1 configuration", names, cfg,
                   pt.names.take(sel, axis=0), pt.types.take(sel, axis=0), pt.ids.take(sel, axis=0), sub, dist, pts,
                   np.ascontiguousarray(local), nrm, np.ascontiguousarray(jac), smooth, selection.pairs.take(sel, axis=0))


def _single_rows(world: CollisionWorld, tables: _Tables, pt: _PairTables, selection, T_link: np.ndarray,
                 T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray, thresholds: np.ndarray, k_max: int,
                 compute_jacobians: bool, columns: np.ndarray, stop) -> tuple | None:
    """:func:`_posed_rows` of one configuration's candidate rows: the compiled steps in one call
    (``clearance_rows.single_rows``, into this thread's buffers; already run, with single_settled_rows, where the
    buffers say ``steps_done``: :func:`_single_clearance`'s ``single_request_rows``), then, where it stopped (rows left
    to coal, to the narrow phase or to the meshes' distance), the same steps as :func:`_measure` from there. The same
    rows."""
    buffers = pt.single_buffers(tables.mk.child_link.shape[0])
    info = buffers.info
    if not buffers.steps_done:
        _single_steps(world, tables, pt, selection, T_link, T_shape, cfg, pair, thresholds, k_max, compute_jacobians,
                      buffers)
    step, n_coal, n_slow, n_rest, n, plain = info[:6].tolist()
    if step != SINGLE_DONE:
        k = len(cfg)
        out = buffers.measured(k)
        raw, p0, p1, measured, support = buffers.first(k)
        pairs = selection.pairs
        if step == SINGLE_FIRST:
            found = _measure_from_first(world, tables, pt, T_shape, cfg, pair, pairs, thresholds, stop, out, raw, p0,
                                        p1, measured, buffers.rows(0, n_coal), support)
        elif step == SINGLE_LEFT:         # the penetrating rows' kernel answered the others
            _rows_one_by_one(world, T_shape, cfg, pair, pairs, thresholds, stop, out, buffers.rows(1, n_slow).tolist(),
                             buffers.overlapping(k), None, 0)
            found = out
        else:
            found = _narrow_phase(world, tables, pt, T_shape, cfg, pair, pairs, thresholds, stop, out, raw, p0, p1,
                                  buffers.rows(1, n_slow), buffers.rows(2, n_rest), buffers.overlapping(k))
        return _finished_rows(tables, pt, selection, T_link, T_shape, cfg, pair, found, k_max, compute_jacobians,
                              columns)
    if n == 0:
        return None
    cfg, pair, d_padded, pts, nrm, subshapes, smooth, local, jac_m = buffers.answer(n, compute_jacobians)
    if not plain:                                # an object attached with an offset: its frame by numpy
        local = _local_points(T_link, cfg, pt.owner_link[pair], tables.owner_offset[selection.pairs[pair]], pts)
    jac = np.dot(jac_m, tables.mimic_columns(columns)) if compute_jacobians else jac_m
    return cfg, pair, d_padded, pts, local, nrm, subshapes, smooth, jac


def _single_steps(world: CollisionWorld, tables: _Tables, pt: _PairTables, selection, T_link: np.ndarray,
                  T_shape: np.ndarray, cfg: np.ndarray, pair: np.ndarray, thresholds: np.ndarray, k_max: int,
                  compute_jacobians: bool, buffers: _SingleBuffers) -> None:
    """The compiled steps of one configuration's candidate rows into ``buffers``: ``single_rows``, then, where it left
    penetrating rows only and their shapes' bodies are made, ``single_settled_rows`` (answered and the answer
    assembled in one more call)."""
    single_rows(cfg, pair, T_link, T_shape, *tables.row_world, *pt.row_pairs, thresholds, *_SINGLE_ROW_CONSTANTS, k_max,
                SMOOTH_DISTANCE_M, bool(compute_jacobians), NO_SUBSHAPE, buffers.F, buffers.I, buffers.I32, buffers.I8,
                buffers.B)
    info = buffers.info
    if info[0] == SINGLE_SETTLED and info[3] == 0:
        packs = world.cached(("clearance", "convex packs"), _ConvexPacks, world)
        if packs.bodies is not None:
            single_settled_rows(cfg, pair, T_link, T_shape, *tables.row_world, *pt.row_pairs, thresholds,
                                selection.pairs, packs.closed, packs.bvh, packs.slot, packs.bodies,
                                _PENETRATION_CONSTANTS, *_FEATURE_DISC, k_max, _DONE,
                                _CULLED, SMOOTH_DISTANCE_M, bool(compute_jacobians), NO_SUBSHAPE, buffers.F, buffers.I,
                                buffers.I32, buffers.I8, buffers.B)


def _local_points(T_world_link: np.ndarray, cfg: np.ndarray, owner_link: np.ndarray, owner_offset: np.ndarray,
                  pts: np.ndarray) -> np.ndarray:
    """Each witness point (R, 2, 3) in its body's own frame (link frame; object frame), row r at
    configuration ``cfg[r]`` of ``T_world_link`` (C, L, 4, 4), side s of row r owned by link
    ``owner_link[r, s]`` (-1: the world) at ``owner_offset[r, s]`` (4, 4) from it."""
    C, L = T_world_link.shape[:2]
    # link -1 (world-fixed objects): the identity, appended after the links
    T_links = np.empty((C, L + 1, 4, 4))
    T_links[:, :L] = T_world_link
    T_links[:, L] = _EYE4
    T_owner = T_links[cfg[:, None], owner_link] @ owner_offset  # (R, 2, 4, 4)
    return np.einsum("rsji,rsj->rsi", T_owner[..., :3, :3], pts - T_owner[..., :3, 3])
