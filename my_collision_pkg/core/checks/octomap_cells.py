"""The occupancy octree's cells as boxes, for every check beyond the predicate.

The world object ``<octomap>`` is one shape in a snapshot: coal's octree, which the
predicate (single and batch) tests against each robot shape in one call
(:func:`~my_collision_pkg.core.checks.narrowphase.octree_pair_collides`). Explain, clearance,
certified and discrete motions and trajectories need contact geometry, distances and
motion bounds that the package computes for boxes, so for them the tree is replaced by the
occupied cells that can matter, each a box whose shape id is its cell id:

- at configurations: the cells overlapping a robot shape's axis-aligned bounds (from its
  oriented bounding box), grown by the request's reach (padding, contact distance or
  influence distance);
- along a motion: the same at samples of the joint-space path, each grown by a bound of
  how far any point of the shape moves between two samples
  (:func:`displacement_bounds`: joint steps times static levers, the bound the certified
  sweep uses), so no cell the shape can reach between samples is left out.

The derived snapshot (:func:`with_cells`) shares everything with the scene's but the
octomap rows, and is made per request: at most ``WorkLimits.max_octomap_cells`` cells,
beyond which the request is refused by name. Contacts then name the cell in
``subshape_ids`` too; explain reports the contacts of adjacent cells with one robot shape
as one region, deepest first (:func:`merge_cell_regions`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from my_collision_pkg.core.checks.narrowphase import coal_transform
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.results import Contact
from my_collision_pkg.core.checks.sweep import motion_kinematics
from my_collision_pkg.core.errors import RequestError
from my_collision_pkg.core.geometry.coal_setup import coal   # coal with its box support pinned (see there)
from my_collision_pkg.core.geometry.shape_geometry import build_shape
from my_collision_pkg.core.kernels.cells import cells_in_boxes
from my_collision_pkg.core.model.shapes import Box, OcTree
from my_collision_pkg.core.scene.objects import OCTOMAP_ID, ObjectShape, SceneObject
from my_collision_pkg.core.scene.world import CollisionWorld

REGION_CANDIDATES = 3          # cells explain computes per region (the nearest by the hull's distance)
CELL_DISTANCE_SLACK_M = 1e-6   # cells this far beyond explain's reach are kept (coal's distance precision)
MAX_PATH_SAMPLES = 64          # samples of one motion segment for its region
MAX_PATH_SAMPLES_TOTAL = 4096  # samples of a whole trajectory (fewer per segment, each grown more)
PATH_STEP_M = 0.01             # aim: a shape moves at most this far between two samples


class CellTable:
    """One map's cells sorted by x (for :func:`~my_collision_pkg.core.kernels.cells.cells_in_boxes`)
    and the box geometry of each cell size (shared by every derived snapshot)."""

    def __init__(self, occupancy) -> None:
        cells = occupancy.cell_boxes()
        self.occupancy = occupancy
        self.order = np.argsort(cells.centres_m[:, 0], kind="stable")
        self.centres = np.ascontiguousarray(cells.centres_m[self.order])
        self.sizes = np.ascontiguousarray(cells.size_m[self.order])
        self.max_size = float(self.sizes.max()) if len(self.sizes) else 0.0
        self._geometry: dict[float, object] = {}

    def near(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Sorted cell ids of the cells overlapping any box ``lo`` (B, 3) .. ``hi`` (B, 3)."""
        out = np.zeros(len(self.order), dtype=np.bool_)
        if len(lo) and len(out):
            cells_in_boxes(self.centres, self.sizes, self.max_size, np.ascontiguousarray(lo, dtype=float),
                           np.ascontiguousarray(hi, dtype=float), out)
        return np.sort(self.order[out])

    def box_geometry(self, size_m: float):
        geometry = self._geometry.get(size_m)
        if geometry is None:
            geometry = self._geometry.setdefault(size_m, build_shape(Box((size_m, size_m, size_m)), OCTOMAP_ID, None))
        return geometry


def tree_shapes(world: CollisionWorld) -> np.ndarray:
    """Indices of ``world``'s octree shapes (empty without an octomap)."""
    return world.cached(("octomap", "tree_shapes"), lambda: np.array(
        [s for s, e in enumerate(world.shapes) if isinstance(e.geometry.spec, OcTree)], dtype=np.int64))


def cell_table(world: CollisionWorld) -> CellTable:
    obj = world.objects[OCTOMAP_ID]
    return world.cached(("octomap", "cells"), CellTable, obj.shapes[0].spec.occupancy)


def _robot_shapes_facing_tree(world: CollisionWorld, selection) -> tuple[np.ndarray, float]:
    """Robot shapes paired with the tree in ``selection``, and the largest padding margin of those pairs."""
    trees = tree_shapes(world)
    pairs = selection.pairs
    with_tree = np.isin(pairs[:, 1], trees) | np.isin(pairs[:, 0], trees)
    robot = np.where(np.isin(pairs[with_tree, 1], trees), pairs[with_tree, 0], pairs[with_tree, 1])
    margin = float(selection.margins[with_tree].max()) if with_tree.any() else 0.0
    return np.unique(robot), margin


def shape_bounds(world: CollisionWorld, T_world_shape: np.ndarray, shapes: np.ndarray):
    """Axis-aligned bounds (K, R, 3) lo and hi of shapes ``shapes`` (R,) at poses (K, S, 4, 4)."""
    T = T_world_shape[:, shapes]
    R, t = T[..., :3, :3], T[..., :3, 3]
    centre = np.einsum("krij,rj->kri", R, world.obb_center[shapes]) + t
    axes = np.einsum("krij,rjl->kril", R, world.obb_axes[shapes])          # columns in the world frame
    half = np.einsum("kril,rl->kri", np.abs(axes), world.obb_half[shapes])
    return centre - half, centre + half


def displacement_bounds(world: CollisionWorld, shapes: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """(R,) how far, at most, any point of each robot shape moves along the joint-space segment q0 -> q1.

    Per movable joint j on the shape's chain: its step |dv_j| times the shape's static lever
    about it (the summed fixed offsets from the joint down to the shape's link, the prismatic
    travel on the chain, the shape's bounding-sphere centre and radius) for a revolute
    joint, the step itself for a prismatic one.
    """
    kin = motion_kinematics(world)
    if len(kin.prismatic) == 0:
        return np.zeros(len(shapes))
    v0 = kin.mimic_matrix @ q0 + kin.mimic_offset
    v1 = kin.mimic_matrix @ q1 + kin.mimic_offset
    step = np.abs(v1 - v0)
    travel = np.where(kin.prismatic, np.maximum(np.abs(v0), np.abs(v1)), 0.0)
    link = world.shape_link[shapes]
    chain = kin.chain[link]                                                    # (R, M)
    local = world.T_frame_shape[shapes]
    centre = np.einsum("rij,rj->ri", local[:, :3, :3], world.obb_center[shapes]) + local[:, :3, 3]
    radius = np.array([world.shapes[s].geometry.bounding_radius_m for s in shapes.tolist()])
    lever = (kin.path_len[link][:, None] - kin.path_len[kin.child_link][None, :] + (chain * travel).sum(axis=1)[:, None]
             + np.linalg.norm(centre, axis=1)[:, None] + radius[:, None])
    per_joint = np.where(kin.prismatic[None, :], 1.0, np.maximum(lever, 0.0)) * step[None, :]
    return (chain * per_joint).sum(axis=1)


class CellLimitExceeded(RequestError):
    """A request reaches more occupancy-map cells than ``WorkLimits.max_octomap_cells``."""


def with_cells(world: CollisionWorld, cells: np.ndarray, limit: int) -> CollisionWorld:
    """``world`` with its octree replaced by the boxes of cells ``cells`` (cell ids).

    Raises
    ------
    CellLimitExceeded
        When there are more than ``limit`` cells (``WorkLimits.max_octomap_cells``).
    """
    if len(cells) > limit:
        raise CellLimitExceeded(f"max_octomap_cells: the request reaches {len(cells)} occupancy-map cells, more than "
                           f"the limit {limit}; check a shorter motion or a smaller distance, or coarsen the map")
    table = cell_table(world)
    boxes = table.occupancy.cell_boxes()
    objects, geometry = dict(world.objects), dict(world.object_geometry)
    old = objects.pop(OCTOMAP_ID)
    del geometry[OCTOMAP_ID]
    if len(cells) == 0:
        return world.with_objects(objects, geometry, {OCTOMAP_ID}, set())
    shapes, geoms = [], []
    T = np.eye(4)
    for c in cells.tolist():
        T_cell = T.copy()
        T_cell[:3, 3] = boxes.centres_m[c]
        size = float(boxes.size_m[c])
        shapes.append(ObjectShape(Box((size, size, size)), T_cell))
        geoms.append(table.box_geometry(size))
    objects[OCTOMAP_ID] = SceneObject(OCTOMAP_ID, tuple(shapes), old.T_frame_object, shape_ids=tuple(cells.tolist()))
    geometry[OCTOMAP_ID] = tuple(geoms)
    return world.with_objects(objects, geometry, {OCTOMAP_ID}, {OCTOMAP_ID})


def cells_at_configurations(world: CollisionWorld, selection, q: np.ndarray, reach_m: float) -> np.ndarray:
    """Cell ids near the robot shapes facing the tree at configurations ``q`` (N, A), within
    ``reach_m`` plus the pairs' padding."""
    shapes, margin = _robot_shapes_facing_tree(world, selection)
    if len(shapes) == 0:
        return np.zeros(0, dtype=np.int64)
    T_shape = world.shape_transforms(world.robot.link_transforms_batch(np.atleast_2d(q)))
    lo, hi = shape_bounds(world, T_shape, shapes)
    grow = reach_m + margin
    return cell_table(world).near((lo - grow).reshape(-1, 3), (hi + grow).reshape(-1, 3))


def cells_along_path(world: CollisionWorld, selection, waypoints: np.ndarray, reach_m: float) -> np.ndarray:
    """Cell ids any robot shape facing the tree can come within ``reach_m`` (plus padding) of
    along the joint-space polyline through ``waypoints`` (W, A)."""
    shapes, margin = _robot_shapes_facing_tree(world, selection)
    if len(shapes) == 0:
        return np.zeros(0, dtype=np.int64)
    los, his = [], []
    most = max(2, min(MAX_PATH_SAMPLES, MAX_PATH_SAMPLES_TOTAL // max(1, len(waypoints) - 1)))
    for k in range(len(waypoints) - 1):
        q0, q1 = waypoints[k], waypoints[k + 1]
        D = displacement_bounds(world, shapes, q0, q1)
        m = int(np.clip(np.ceil(D.max(initial=0.0) / (2.0 * PATH_STEP_M)) + 1, 2, most))
        t = np.linspace(0.0, 1.0, m)
        path = q0[None, :] + t[:, None] * (q1 - q0)[None, :]
        T_shape = world.shape_transforms(world.robot.link_transforms_batch(path))
        lo, hi = shape_bounds(world, T_shape, shapes)
        grow = (D / (2.0 * (m - 1)) + reach_m + margin)[None, :, None]
        los.append((lo - grow).reshape(-1, 3))
        his.append((hi + grow).reshape(-1, 3))
    if not los:                      # one waypoint: a configuration
        return cells_at_configurations(world, selection, waypoints, reach_m)
    return cell_table(world).near(np.concatenate(los), np.concatenate(his))


def expanded(request: CheckRequest, world: CollisionWorld, cells: np.ndarray, limit: int) -> CheckRequest:
    """``request`` on ``world`` with the octree replaced by ``cells`` (raises RequestError beyond ``limit``)."""
    return dataclasses.replace(request, world=with_cells(world, cells, limit))


def has_octree(world: CollisionWorld) -> bool:
    return OCTOMAP_ID in world.objects and len(tree_shapes(world)) > 0


def name_cells(contacts) -> tuple[Contact, ...]:
    """Contacts with the octomap's side naming its cell in ``subshape_ids`` (its shape id is the cell id)."""
    out = []
    for c in contacts:
        if OCTOMAP_ID in c.link_names:
            sub = tuple(c.shape_ids[i] if c.link_names[i] == OCTOMAP_ID else c.subshape_ids[i] for i in range(2))
            c = dataclasses.replace(c, subshape_ids=sub)
        out.append(c)
    return tuple(out)


def touching_components(centres_m: np.ndarray, sizes_m: np.ndarray, joined: np.ndarray | None = None) -> np.ndarray:
    """(K,) a label per cube (centres (K, 3), sides (K,)): cubes that touch (faces, edges or
    corners), or that ``joined`` (K, K) bool joins, directly or through others, share one."""
    half = sizes_m / 2.0
    gap = np.abs(centres_m[:, None, :] - centres_m[None, :, :]) - (half[:, None, None] + half[None, :, None])
    touching = np.all(gap <= 1e-9 * max(1.0, float(half.max(initial=0.0))), axis=2)
    if joined is not None:
        touching |= joined
    label = np.arange(len(centres_m))
    changed = True
    while changed:                                  # connected components by label propagation
        new = np.where(touching, label[None, :], len(label)).min(axis=1)
        changed = bool(np.any(new != label))
        label = new
    return label


def cells_for_explain(world: CollisionWorld, selection, q: np.ndarray, reach_m: float,
                      limit: int | None = None) -> tuple[np.ndarray, dict]:
    """The cells explain needs at configuration ``q`` (1, A), and the regions they stand for.

    Per robot shape facing the tree, the cells within its padding plus ``reach_m`` by coal's
    signed distance to the shape's convex hull are split into regions of touching cells; of
    each region the ``REGION_CANDIDATES`` nearest (deepest) cells are kept. The hull contains
    the shape, so a cell left out is no nearer to the shape than those kept by the hull's
    measure; explain computes the kept cells' contacts and reports each region by its deepest
    (the checker falls back to every nearby cell where this would change the verdict, see
    ``CollisionChecker.explain``).

    Returns
    -------
    cells : sorted cell ids
    regions : dict
        ``(robot body, robot shape id, cell id) -> region label``, for :func:`merge_cell_regions`.

    Raises
    ------
    CellLimitExceeded
        When more than ``limit`` cells (``WorkLimits.max_octomap_cells``) are near the shapes.
    """
    shapes, _ = _robot_shapes_facing_tree(world, selection)
    regions: dict[tuple, int] = {}
    if len(shapes) == 0:
        return np.zeros(0, dtype=np.int64), regions
    trees = tree_shapes(world)
    T_shape = world.shape_transforms(world.robot.link_transforms_batch(np.atleast_2d(q)))
    lo, hi = shape_bounds(world, T_shape, shapes)
    table = cell_table(world)
    boxes = table.occupancy.cell_boxes()
    pairs = selection.pairs
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    kept, examined = [], 0
    for r, s in enumerate(shapes.tolist()):
        with_tree = (((pairs[:, 0] == s) & np.isin(pairs[:, 1], trees))
                     | ((pairs[:, 1] == s) & np.isin(pairs[:, 0], trees)))
        threshold = float(selection.margins[with_tree].max(initial=0.0)) + reach_m
        near = table.near(lo[0, r:r + 1] - threshold, hi[0, r:r + 1] + threshold)
        if len(near) == 0:
            continue
        examined += len(near)
        if limit is not None and examined > limit:
            raise CellLimitExceeded(f"max_octomap_cells: the request reaches more than {limit} occupancy-map cells "
                                    f"(the limit); check at a smaller contact distance, or coarsen the map")
        g = world.shapes[s].geometry
        solid = g.coal_hull if g.coal_hull is not None else g.coal_geometry
        pose = coal_transform(T_shape[0, s])
        d = np.empty(len(near))
        for k, c in enumerate(near.tolist()):
            size = float(boxes.size_m[c])
            result = coal.DistanceResult()
            d[k] = coal.distance(solid, pose, coal.Box(size, size, size),
                                 coal.Transform3s(np.eye(3), boxes.centres_m[c]), request, result)
        close = d <= threshold + CELL_DISTANCE_SLACK_M
        if not close.any():
            continue
        near, d = near[close], d[close]
        label = touching_components(boxes.centres_m[near], boxes.size_m[near])
        entry = world.shapes[s]
        for comp in np.unique(label).tolist():
            members = np.flatnonzero(label == comp)
            best = members[np.argsort(d[members], kind="stable")[:REGION_CANDIDATES]]
            region = len(set(regions.values()))
            for c in near[best].tolist():
                kept.append(int(c))
                regions[(entry.owner, entry.shape_id, int(c))] = region
    return np.unique(np.array(kept, dtype=np.int64)), regions


def merge_cell_regions(contacts, occupancy, regions: dict | None = None) -> tuple[Contact, ...]:
    """One contact per region: the contacts between one robot shape and cells of the octomap
    that touch one another (faces, edges or corners) are one region, reported by its deepest
    contact; regions come deepest first, after the contacts not involving the octomap (whose
    order is kept). ``regions`` (from :func:`cells_for_explain`) gives the regions where the
    contacts' cells alone do not show them (cells left out joined them)."""
    contacts = name_cells(contacts)
    others = [c for c in contacts if OCTOMAP_ID not in c.link_names]
    cells = [c for c in contacts if OCTOMAP_ID in c.link_names]
    if not cells:
        return contacts
    boxes = occupancy.cell_boxes()
    groups: dict[tuple, list[Contact]] = {}
    for c in cells:
        side = 0 if c.link_names[1] == OCTOMAP_ID else 1          # the robot's side
        groups.setdefault((c.link_names[side], c.shape_ids[side], c.distance > 0.0), []).append(c)
    merged = []
    for (body, shape_id, _), members in groups.items():
        ids = np.array([c.shape_ids[c.link_names.index(OCTOMAP_ID)] for c in members], dtype=np.int64)
        joined = None
        if regions:                  # cells of one region found before explain are joined too
            known = np.array([regions.get((body, shape_id, int(c)), -1) for c in ids.tolist()])
            joined = (known[:, None] == known[None, :]) & (known[:, None] >= 0)
        label = touching_components(boxes.centres_m[ids], boxes.size_m[ids], joined)
        for comp in np.unique(label).tolist():
            group = [members[k] for k in np.flatnonzero(label == comp).tolist()]
            merged.append(min(group, key=lambda c: c.distance))
    merged.sort(key=lambda c: c.distance)
    touching = [c for c in others if c.distance <= 0.0] + [c for c in merged if c.distance <= 0.0]
    return tuple(touching + [c for c in others if c.distance > 0.0] + [c for c in merged if c.distance > 0.0])


def nearest_cell_keep(configuration_index: np.ndarray, body_names: np.ndarray, shape_ids: np.ndarray,
                      distance: np.ndarray) -> np.ndarray:
    """Which clearance rows (R,) :func:`nearest_cell_rows` keeps: every row not on the octomap, and per
    configuration and robot shape the octomap row of least distance (the first of equals).
    ``body_names`` and ``shape_ids`` (R, 2); works on a chunk of rows as on a whole answer."""
    keep = np.ones(len(distance), dtype=bool)
    if len(distance) == 0:
        return keep
    on_map = (body_names[:, 0] == OCTOMAP_ID) | (body_names[:, 1] == OCTOMAP_ID)
    if not on_map.any():
        return keep
    robot_side = np.where(body_names[:, 1] == OCTOMAP_ID, 0, 1)
    rows = np.arange(len(distance))
    key_shape = shape_ids[rows, robot_side]
    keep = ~on_map
    best: dict[tuple, int] = {}
    for r in np.flatnonzero(on_map).tolist():
        key = (int(configuration_index[r]), str(body_names[r, robot_side[r]]), int(key_shape[r]))
        if key not in best or distance[r] < distance[best[key]]:
            best[key] = r
    keep[list(best.values())] = True
    return keep


def nearest_cell_rows(result):
    """A :class:`~my_collision_pkg.core.checks.results.Clearance` with, per configuration and
    robot shape, only the row of its nearest octomap cell (the octomap is one body: as a
    world object, it gets one row per robot shape, with the nearest cell's id as its shape and
    subshape id); other rows unchanged, in their order."""
    if len(result) == 0:
        return result
    names = result.body_names
    on_map = (names[:, 0] == OCTOMAP_ID) | (names[:, 1] == OCTOMAP_ID)
    if not on_map.any():
        return result
    robot_side = np.where(names[:, 1] == OCTOMAP_ID, 0, 1)
    keep = nearest_cell_keep(result.configuration_index, names, result.shape_ids, result.distance)
    subshape = result.subshape_ids.copy()
    map_side = 1 - robot_side
    subshape[on_map, map_side[on_map]] = result.shape_ids[on_map, map_side[on_map]]
    index = np.flatnonzero(keep)
    columns = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    columns["subshape_ids"] = subshape
    for name, value in list(columns.items()):
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == len(result):
            columns[name] = value[index]
    return type(result)(**columns)
