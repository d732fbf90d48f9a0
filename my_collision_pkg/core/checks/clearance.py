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
then by bounding spheres and convex hulls (lower bounds of the distance), so only pairs
that may lie within the influence distance reach the exact distance.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import coal
import numpy as np

from my_collision_pkg.core.checks import narrowphase
from my_collision_pkg.core.checks.request import MAX_BATCH_CONFIGURATIONS, CheckRequest, ConfigurationResolver
from my_collision_pkg.core.checks.results import NO_SUBSHAPE, Status
from my_collision_pkg.core.checks.sweep import motion_kinematics
from my_collision_pkg.core.errors import CollisionPkgError, RequestError
from my_collision_pkg.core.kernels.codes import KIND_CONVEX
from my_collision_pkg.core.kernels.culling import obb_candidates
from my_collision_pkg.core.scene.planning_scene import CollisionWorld

__all__ = ["Clearance", "SMOOTH_DISTANCE_M", "compute_clearance", "point_jacobians"]

# Below this |distance| (metres) with the witness points coincident, the normal is not defined
# by the geometry (the bodies touch): the row is not smooth.
SMOOTH_DISTANCE_M = 1e-9
# How much a hull distance from coal (default tolerance) may exceed the true one: a hull
# bound is trusted to cull a pair only beyond the threshold by this much.
_HULL_SLACK_M = 1e-5
CLEARANCE_CHUNK = 1024          # configurations posed and culled together


@dataclass(frozen=True)
class Clearance:
    """Answer of :meth:`checker.CollisionChecker.clearance`: R rows, flat arrays.

    Attributes
    ----------
    configuration_index : (R,) int64, the row's configuration (0 for a single one).
    body_names : (R, 2) object (str), body 0 and body 1 (link or object ids).
    body_types : (R, 2) uint8, :class:`results.BodyType` values.
    shape_ids, subshape_ids : (R, 2) int32 (subshape -1 where none).
    distance : (R,) float, signed distance minus the pair's padding, metres.
    points : (R, 2, 3) witness points in the planning frame.
    points_local : (R, 2, 3) each witness point in its body's frame.
    normals : (R, 3) unit, body 0 -> body 1.
    jacobian : (R, J) d distance / d q over ``jacobian_joint_names`` (zeros (R, 0) without Jacobians).
    smooth : (R,) bool.
    jacobian_joint_names : tuple of J names.
    status, message : :class:`results.Status` and a one-line message.
    """
    status: Status
    message: str
    jacobian_joint_names: tuple[str, ...] = ()
    configuration_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    body_names: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=object), repr=False)
    body_types: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.uint8), repr=False)
    shape_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int32), repr=False)
    subshape_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int32), repr=False)
    distance: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)), repr=False)
    points_local: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)), repr=False)
    normals: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)), repr=False)
    jacobian: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    smooth: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)
    shape_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64), repr=False)

    def __len__(self) -> int:
        return int(self.distance.shape[0])

    @property
    def ok(self) -> bool:
        return self.status == Status.VALID


def _refused(status: Status, message: str, names=()) -> Clearance:
    return Clearance(status, message, tuple(names))


class _Tables:
    """Per-world tables: each shape's link (-1: world-fixed) and which movable joints move it."""

    def __init__(self, world: CollisionWorld) -> None:
        mk = motion_kinematics(world)
        n_links, n_mov = mk.chain.shape
        # one zero row at the end, picked by link index -1 (world-fixed shapes)
        self.chain = np.vstack([mk.chain, np.zeros((1, n_mov), dtype=bool)]).astype(float)
        self.mk = mk
        self.shape_link = np.asarray(world.shape_link, dtype=np.int64)
        self.names = np.array([e.owner for e in world.shapes], dtype=object)
        self.types = np.array([int(e.body_type) for e in world.shapes], dtype=np.uint8)
        self.ids = np.array([e.shape_id for e in world.shapes], dtype=np.int32)
        kinds = [e.geometry.solid_kind for e in world.shapes]
        self.bvh = np.array([bool(e.geometry.is_bvh) for e in world.shapes])
        self.convex = np.array([0 <= k <= KIND_CONVEX for k in kinds])
        self.centre = world.obb_center
        self.radius = np.array([float(getattr(e.geometry, "bounding_radius_m", 0.0) or np.linalg.norm(h))
                                for e, h in zip(world.shapes, world.obb_half)])
        self.hulls = [e.geometry.coal_hull if e.geometry.is_bvh else None for e in world.shapes]


def _tables(world: CollisionWorld) -> _Tables:
    return world.cached(("clearance", "tables"), _Tables, world)


def point_jacobians(world: CollisionWorld, T_world_link: np.ndarray, links: np.ndarray, points: np.ndarray,
                    normals: np.ndarray) -> np.ndarray:
    """``normals[r] . d points[r] / d m`` (R, M) over the movable joints, for points fixed to ``links`` (R,).

    ``T_world_link`` (L, 4, 4) at one configuration; link -1 is the world (no motion).
    Revolute joint j: ``axis_j x (p - o_j)``; prismatic: ``axis_j`` (axes in the planning frame).
    """
    tables = _tables(world)
    mk = tables.mk
    child = mk.child_link
    R_child = T_world_link[child, :3, :3]                     # (M, 3, 3)
    axis_w = np.einsum("mij,mj->mi", R_child, mk.axis)         # (M, 3)
    origin_w = T_world_link[child, :3, 3]                      # (M, 3)
    # revolute: n . (a x (p - o)) = (p - o) . (n x a); prismatic: n . a
    n_cross_a = np.cross(normals[:, None, :], axis_w[None, :, :])            # (R, M, 3)
    rev = np.einsum("rmk,rmk->rm", points[:, None, :] - origin_w[None, :, :], n_cross_a)
    pri = normals @ axis_w.T
    value = np.where(mk.prismatic[None, :], pri, rev)
    return value * tables.chain[links]


def _validate(influence_distance, max_rows_per_configuration) -> None:
    try:
        influence = float(influence_distance)
    except (TypeError, ValueError):
        raise RequestError(f"influence_distance {influence_distance!r} must be a number of metres") from None
    if not np.isfinite(influence) or influence < 0.0:
        raise RequestError(f"influence_distance {influence_distance} m must be finite and >= 0")
    if int(max_rows_per_configuration) < 0:
        raise RequestError(f"max_rows_per_configuration {max_rows_per_configuration} must be >= 0")


def _within(world, tables: _Tables, T_c: np.ndarray, a: int, b: int, threshold: float):
    """The pair's :class:`narrowphase.PairDistance`, or None when a lower bound puts it ``threshold`` or more apart."""
    T_a, T_b = T_c[a], T_c[b]
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    ca = T_a[:3, :3] @ tables.centre[a] + T_a[:3, 3]
    cb = T_b[:3, :3] @ tables.centre[b] + T_b[:3, 3]
    if float(np.linalg.norm(cb - ca)) - tables.radius[a] - tables.radius[b] >= threshold:
        return None
    if tables.bvh[a] or tables.bvh[b]:
        ha = tables.hulls[a] if tables.bvh[a] else world.shapes[a].geometry.coal_geometry
        hb = tables.hulls[b] if tables.bvh[b] else world.shapes[b].geometry.coal_geometry
        if ha is not None and hb is not None:
            result = coal.DistanceResult()
            hull = coal.distance(ha, narrowphase.coal_transform(T_a), hb, narrowphase.coal_transform(T_b),
                                 _HULL_REQUEST, result)
            if hull >= threshold + _HULL_SLACK_M:
                return None
            if hull > _HULL_SLACK_M:
                # hulls apart: the meshes are apart and neither holds the other, so the pair's
                # distance is coal's surface distance (what pair_distance answers here, without
                # its solid-body test)
                result = coal.DistanceResult()
                d = float(coal.distance(ga.coal_geometry, narrowphase.coal_transform(T_a), gb.coal_geometry,
                                        narrowphase.coal_transform(T_b), _WITNESS_REQUEST, result))
                p0, p1 = np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())
                gap = float(np.linalg.norm(p1 - p0))
                if d > 0.0 and gap > 1e-12:
                    normal = (p1 - p0) / gap
                    return narrowphase.PairDistance(d, p0, p0 + d * normal, normal, True,
                                                    (int(result.b1), int(result.b2)))
    return narrowphase.pair_distance(world, T_c, a, b)


_HULL_REQUEST = coal.DistanceRequest()
_WITNESS_REQUEST = coal.DistanceRequest()
_WITNESS_REQUEST.enable_signed_distance = True
_WITNESS_REQUEST.gjk_tolerance = narrowphase.WITNESS_PRECISION_M
_WITNESS_REQUEST.epa_tolerance = narrowphase.WITNESS_PRECISION_M


def compute_clearance(resolver: ConfigurationResolver, request: CheckRequest, joint_names, positions,
                      influence_distance: float, *, max_rows_per_configuration: int = 0,
                      compute_jacobians: bool = True, max_batch: int = MAX_BATCH_CONFIGURATIONS,
                      stop=None) -> Clearance:
    """See :meth:`checker.CollisionChecker.clearance` (never raises on bad input)."""
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
        resolver.check_finite(joint_names, values, 0, n > 1)
        selection = request.selection(world)
    except CollisionPkgError as exc:
        return _refused(Status.INVALID_REQUEST, str(exc))
    influence = float(influence_distance)
    k_max = int(max_rows_per_configuration)
    names = tuple(joint_names) if len(joint_names) else robot.active_joint_names
    columns = indices if len(joint_names) else np.arange(len(robot.active_joint_names))
    q_all = resolver.complete(indices, values)
    if resolver.check_joint_limits:
        for c in range(n):
            message = resolver.limits_message(q_all[c])
            if message is not None:
                return _refused(Status.OUT_OF_BOUNDS, message + (f" in configuration {c}" if n > 1 else ""), names)
    tables = _tables(world)
    mimic = tables.mk.mimic_matrix[:, columns]                   # (M, J)
    pairs, margins = selection.pairs, selection.margins
    cull = margins + influence
    rows_cfg, rows_pair, rows_d, rows_p, rows_n, rows_sub, rows_smooth, rows_J = [], [], [], [], [], [], [], []
    for start in range(0, n, CLEARANCE_CHUNK):
        if stop is not None:
            stop.check_stop()
        q = q_all[start:start + CLEARANCE_CHUNK]
        T_link = robot.link_transforms_batch(q)
        T_shape = world.shape_transforms(T_link)
        candidates = np.empty((q.shape[0], len(pairs)), dtype=np.bool_)
        obb_candidates(T_shape, world.obb_center, world.obb_axes, world.obb_half, pairs, cull, candidates)
        for c in range(q.shape[0]):
            if stop is not None and c % 16 == 0:
                stop.check_stop()
            T_c = T_shape[c]
            found_p, found_d, found_pts, found_n, found_sub, found_smooth = [], [], [], [], [], []
            for p in np.flatnonzero(candidates[c]).tolist():
                a, b = int(pairs[p, 0]), int(pairs[p, 1])
                threshold = influence + margins[p]
                result = _within(world, tables, T_c, a, b, threshold)
                if result is None or not result.distance_m < threshold:
                    continue
                d = float(result.distance_m)
                normal = np.asarray(result.normal_world, dtype=float)
                p0 = np.asarray(result.p0_world, dtype=float)
                p1 = np.asarray(result.p1_world, dtype=float)
                smooth = bool(result.exact) and np.all(np.isfinite(normal))
                if abs(d) < SMOOTH_DISTANCE_M:
                    smooth = False              # touching: no normal from the geometry
                if d < 0.0 and getattr(result, "rule", "deepest_point") == "deepest_point":
                    smooth = False              # deepest-point depth of a non-convex mesh (MTD rows stay smooth)
                found_p.append(p)
                found_d.append(d - margins[p])
                found_pts.append((p0, p1))
                found_n.append(normal)
                found_sub.append(result.subshapes)
                found_smooth.append(smooth)
            if not found_p:
                continue
            order = np.argsort(np.asarray(found_d), kind="stable")
            if k_max > 0:
                order = order[:k_max]
            pts = np.asarray(found_pts)[order]
            nrm = np.asarray(found_n)[order]
            sel = np.asarray(found_p, dtype=np.int64)[order]
            rows_cfg.append(np.full(len(order), start + c, dtype=np.int64))
            rows_pair.append(sel)
            rows_d.append(np.asarray(found_d)[order])
            rows_p.append(pts)
            rows_n.append(nrm)
            rows_sub.append(np.asarray(found_sub, dtype=np.int32).reshape(-1, 2)[order])
            rows_smooth.append(np.asarray(found_smooth, dtype=bool)[order])
            if compute_jacobians:
                sa, sb = pairs[sel, 0], pairs[sel, 1]
                J_mov = (point_jacobians(world, T_link[c], tables.shape_link[sb], pts[:, 1], nrm)
                         - point_jacobians(world, T_link[c], tables.shape_link[sa], pts[:, 0], nrm))
                rows_J.append(J_mov @ mimic)
    if not rows_cfg:
        return Clearance(Status.VALID, f"no pair within {influence:g} m in {n} configuration{'s' if n > 1 else ''}",
                         names, jacobian=np.zeros((0, len(names) if compute_jacobians else 0)))
    cfg = np.concatenate(rows_cfg)
    sel = np.concatenate(rows_pair)
    shape_pairs = pairs[sel]
    pts = np.concatenate(rows_p)
    sub = np.concatenate(rows_sub)
    sub = np.where(tables.bvh[shape_pairs], sub, NO_SUBSHAPE).astype(np.int32)
    local = _local_points(world, q_all, cfg, shape_pairs, pts)
    jac = np.concatenate(rows_J) if compute_jacobians else np.zeros((len(cfg), 0))
    return Clearance(Status.VALID, f"{len(cfg)} pair rows within {influence:g} m in {n} configuration"
                     f"{'s' if n > 1 else ''}", names, cfg, tables.names[shape_pairs], tables.types[shape_pairs],
                     tables.ids[shape_pairs], sub, np.concatenate(rows_d), pts, local, np.concatenate(rows_n), jac,
                     np.concatenate(rows_smooth), shape_pairs)


def _local_points(world: CollisionWorld, q_all: np.ndarray, cfg: np.ndarray, shape_pairs: np.ndarray,
                  pts: np.ndarray) -> np.ndarray:
    """Each witness point (R, 2, 3) in its body's own frame (link frame; object frame)."""
    out = np.empty_like(pts)
    robot = world.robot
    for c in np.unique(cfg).tolist():
        rows = np.flatnonzero(cfg == c)
        T_link = robot.link_transforms(q_all[c])
        frames: dict[int, np.ndarray] = {}
        for r in rows.tolist():
            for side in (0, 1):
                s = int(shape_pairs[r, side])
                T = frames.get(s)
                if T is None:
                    T = frames[s] = world.shape_owner_frame(s, T_link)
                out[r, side] = T[:3, :3].T @ (pts[r, side] - T[:3, 3])
    return out
