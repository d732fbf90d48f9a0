"""The collision world: an immutable snapshot of everything a check needs.

A :class:`CollisionWorld` holds the robot, its objects, the allowed collision
matrix and the padding, and precomputes from them the table of collision shapes
(:class:`ShapeEntry`), the arrays the compiled kernels read, and the list of shape
pairs to test (environment pairs first). :meth:`CollisionWorld.pair_selection`
gives the pairs one request checks (:class:`PairSelection`); tables other modules
derive from a world live in its :meth:`CollisionWorld.cached`.

A scene update makes the next snapshot from the current one
(:meth:`CollisionWorld.with_objects`): the rows of the objects it did not touch, the
robot's rows and every shape's geometry and world-fixed fcl object are shared, only
the touched objects' rows are made, and the pair table is recomputed by array
operations; no per-object Python work is done for the untouched objects. The old
snapshot is never changed (every array of the new one is a new array).
"""
from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import fcl
import numpy as np

from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.geometry.shape_geometry import ShapeGeometry
from my_collision_pkg.core.kernels.kinematics import shape_poses
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.srdf import SemanticModel
from my_collision_pkg.core.scene.acm import AllowedCollisionMatrix
from my_collision_pkg.core.scene.objects import SceneObject

T = TypeVar("T")
_MISSING = object()


class PairSelection(NamedTuple):
    """The shape pairs one request checks (environment pairs first)."""
    index: np.ndarray        # (P,) indices into CollisionWorld.pairs
    pairs: np.ndarray        # (P, 2) shape indices, body 0 then body 1
    margins: np.ndarray      # (P,) padding that applies, metres
    calls: np.ndarray        # (P, 2) fcl object indices in call order (see _fcl_call_order)
    swapped: np.ndarray      # (P,) fcl is called body 1 first


@dataclass(frozen=True)
class ShapeEntry:
    """One collision shape of the scene as the checker sees it."""
    owner: str
    body_type: BodyType
    shape_id: int
    link_index: int                 # link the shape rides on, -1 for world objects
    T_frame_shape: np.ndarray = field(compare=False, repr=False)   # in link frame, or planning frame
    T_owner_shape: np.ndarray = field(compare=False, repr=False)   # in the owner's own frame
    geometry: ShapeGeometry = field(compare=False, repr=False)
    padding_m: float = 0.0

    @property
    def on_robot(self) -> bool:
        return self.body_type != BodyType.WORLD_OBJECT


def _fcl_pose(T: np.ndarray):
    return fcl.Transform(T[:3, :3], T[:3, 3])


class _Rows:
    """The per-shape columns of one snapshot, in shape order (the robot's shapes, then each
    object's shapes, objects in the order of ``CollisionWorld.objects``).

    ``code`` names each row's owner: ``-1 - link_index`` for a robot link's shapes, the
    object's code (increasing along the rows) for an object's. ``fixed_plain`` and
    ``fixed_variant`` hold the posed fcl objects of world-fixed shapes (None for shapes
    that ride on a link: those are per thread, see :meth:`CollisionWorld.fcl_objects`).
    Never changed once made: every operation returns new columns.
    """
    __slots__ = ("entries", "link", "T", "obb_center", "obb_axes", "obb_half", "padding", "on_robot", "is_bvh",
                 "has_variant", "code", "fixed_plain", "fixed_variant")
    COLUMNS = __slots__

    def __init__(self, **columns) -> None:
        for name in self.COLUMNS:
            setattr(self, name, columns[name])

    def __len__(self) -> int:
        return len(self.link)

    @classmethod
    def of(cls, entries: list[ShapeEntry], codes: list[int]) -> "_Rows":
        """Columns of some shape entries (Python work per entry: only for entries being made)."""
        n = len(entries)
        boxed = np.empty(n, dtype=object)
        boxed[:] = entries
        plain, variant = np.empty(n, dtype=object), np.empty(n, dtype=object)
        for k, e in enumerate(entries):
            if e.link_index < 0 and e.geometry.fcl_geometry is not None:    # (an octree has none)
                pose = _fcl_pose(e.T_frame_shape)
                plain[k] = fcl.CollisionObject(e.geometry.fcl_geometry, pose)
                v = e.geometry.fcl_geometry_against_mesh
                variant[k] = None if v is None else fcl.CollisionObject(v, pose)
        return cls(entries=boxed,
                   link=np.array([e.link_index for e in entries], dtype=np.int64).reshape(n),
                   T=np.array([e.T_frame_shape for e in entries], dtype=float).reshape(n, 4, 4),
                   obb_center=np.array([e.geometry.obb_center_shape for e in entries], dtype=float).reshape(n, 3),
                   obb_axes=np.array([e.geometry.obb_axes_shape for e in entries], dtype=float).reshape(n, 3, 3),
                   obb_half=np.array([e.geometry.obb_half_extents_m for e in entries], dtype=float).reshape(n, 3),
                   padding=np.array([e.padding_m for e in entries], dtype=float).reshape(n),
                   on_robot=np.array([e.on_robot for e in entries], dtype=bool).reshape(n),
                   is_bvh=np.array([e.geometry.is_bvh for e in entries], dtype=bool).reshape(n),
                   has_variant=np.array([e.geometry.fcl_geometry_against_mesh is not None for e in entries],
                                        dtype=bool).reshape(n),
                   code=np.array(codes, dtype=np.int64).reshape(n), fixed_plain=plain, fixed_variant=variant)

    def take(self, index: np.ndarray) -> "_Rows":
        """The rows at ``index`` (indices or a boolean mask), as new columns."""
        return _Rows(**{name: getattr(self, name)[index] for name in self.COLUMNS})

    @staticmethod
    def concat(parts: list["_Rows"]) -> "_Rows":
        if len(parts) == 1:
            return parts[0]
        return _Rows(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in _Rows.COLUMNS})

    def put(self, index: np.ndarray, block: "_Rows") -> "_Rows":
        """New columns with the rows at ``index`` replaced by ``block``'s rows."""
        columns = {}
        for name in self.COLUMNS:
            column = getattr(self, name).copy()
            column[index] = getattr(block, name)
            columns[name] = column
        return _Rows(**columns)


class CollisionWorld:
    """Immutable snapshot of everything a check needs. Build through PlanningScene."""

    def __init__(self, robot: RobotModel, semantic: SemanticModel, robot_shapes: tuple[ShapeEntry, ...],
                 objects: dict[str, SceneObject], object_geometry: dict[str, tuple[ShapeGeometry, ...]],
                 acm: AllowedCollisionMatrix, default_padding_m: float, link_padding_m: dict[str, float]) -> None:
        self._set_contents(robot, semantic, objects, object_geometry, acm, default_padding_m, link_padding_m)
        robot_entries = [ShapeEntry(s.owner, s.body_type, s.shape_id, s.link_index, s.T_frame_shape,
                                    s.T_owner_shape, s.geometry, self.link_padding(s.owner)) for s in robot_shapes]
        codes = itertools.count()
        self._object_code = {oid: next(codes) for oid in self.objects}
        self._next_code = len(self._object_code)
        parts = [_Rows.of(robot_entries, [-1 - e.link_index for e in robot_entries])]
        parts += [self._object_rows(oid) for oid in self.objects]
        self._n_robot_rows = len(robot_entries)
        self._finish(_Rows.concat(parts), None)

    # ----- construction -------------------------------------------------
    def _set_contents(self, robot, semantic, objects, object_geometry, acm, default_padding_m, link_padding_m) -> None:
        self.robot = robot
        self.semantic = semantic
        self.objects = dict(objects)
        self.object_geometry = dict(object_geometry)
        self.acm = acm
        self.default_padding_m = float(default_padding_m)
        self.link_padding_m = dict(link_padding_m)
        self._tls = threading.local()
        self._derived: dict[object, object] = {}
        self._derived_lock = threading.Lock()

    def _finish(self, rows: _Rows, previous: "CollisionWorld | None") -> None:
        """Public arrays and pair tables of ``rows`` (reusing ``previous``'s self pairs when they still hold)."""
        self._rows = rows
        self.shapes = tuple(rows.entries.tolist())
        self.shape_link = rows.link
        self.T_frame_shape = rows.T
        self.obb_center = rows.obb_center
        self.obb_axes = rows.obb_axes
        self.obb_half = rows.obb_half
        self._riding = np.flatnonzero(rows.link >= 0)
        self._build_pairs(previous)

    def _derive(self, objects: dict[str, SceneObject], object_geometry: dict, acm: AllowedCollisionMatrix,
                rows: _Rows, object_code: dict[str, int], next_code: int) -> "CollisionWorld":
        world = CollisionWorld.__new__(CollisionWorld)
        world._set_contents(self.robot, self.semantic, {}, {}, acm, self.default_padding_m, self.link_padding_m)
        world.objects, world.object_geometry = objects, object_geometry     # already the new snapshot's own dicts
        world._object_code, world._next_code, world._n_robot_rows = object_code, next_code, self._n_robot_rows
        world._finish(rows, self)
        return world

    def with_objects(self, objects: dict[str, SceneObject], object_geometry: dict[str, tuple[ShapeGeometry, ...]],
                     touched: set[str], added: set[str]) -> "CollisionWorld":
        """The snapshot after a batch of object updates, made from this one at the cost of the change.

        Parameters
        ----------
        objects, object_geometry : dict
            The new snapshot's objects and their geometry (taken over, not copied). Objects
            (re)added by the batch come last, in the order of their addition.
        touched : set of str
            Every object id the batch added, moved or removed (an untouched id keeps its rows).
        added : set of str
            The ids the batch (re)added; their rows are made anew (and appended).
        """
        old = self.objects
        drop, moved, appended = [], [], 0
        for oid in touched:
            present = oid in objects
            if oid in old and (not present or oid in added):
                drop.append(oid)
            elif oid in old and objects[oid] is not old[oid]:
                moved.append(oid)
            if present and oid in added:
                appended += 1
        rows = self._rows
        code = self._object_code
        if drop or appended:
            code = dict(code)
        if moved:
            index = np.concatenate([self._object_row_range(oid) for oid in moved])
            rows = rows.put(index, _Rows.concat([self._object_rows(oid, objects, object_geometry) for oid in moved]))
        if drop:
            gone = np.array([code.pop(oid) for oid in drop], dtype=np.int64)
            rows = rows.take(~np.isin(rows.code, gone))
        next_code = self._next_code
        if appended:
            new_ids = list(itertools.islice(reversed(objects), appended))[::-1]
            parts = [rows]
            for oid in new_ids:
                code[oid] = next_code
                next_code += 1
                parts.append(self._object_rows(oid, objects, object_geometry, code[oid]))
            rows = _Rows.concat(parts)
        return self._derive(objects, object_geometry, self.acm, rows, code, next_code)

    def with_acm(self, acm: AllowedCollisionMatrix) -> "CollisionWorld":
        """The same objects under another allowed collision matrix (shapes shared, pairs recomputed)."""
        return self._derive(dict(self.objects), dict(self.object_geometry), acm, self._rows, self._object_code,
                            self._next_code)

    def _object_row_range(self, oid: str) -> np.ndarray:
        """Row indices of an object of this snapshot (its rows are contiguous, codes increase along rows)."""
        codes = self._rows.code[self._n_robot_rows:]
        c = self._object_code[oid]
        lo, hi = np.searchsorted(codes, c, "left"), np.searchsorted(codes, c, "right")
        return np.arange(lo, hi) + self._n_robot_rows

    def _object_rows(self, oid: str, objects: dict | None = None, object_geometry: dict | None = None,
                     code: int | None = None) -> _Rows:
        obj = (self.objects if objects is None else objects)[oid]
        geoms = (self.object_geometry if object_geometry is None else object_geometry)[oid]
        if obj.attached:
            link_index, body_type, padding = (self.robot.link_index(obj.link), BodyType.ROBOT_ATTACHED,
                                              self.link_padding(obj.link))
        else:
            link_index, body_type, padding = -1, BodyType.WORLD_OBJECT, 0.0
        ids = obj.shape_ids if obj.shape_ids else range(len(obj.shapes))
        entries = [ShapeEntry(obj.id, body_type, int(shape_id), link_index, obj.T_frame_object @ shape.T_object_shape,
                              shape.T_object_shape, geom, padding)
                   for shape_id, shape, geom in zip(ids, obj.shapes, geoms)]
        code = self._object_code[oid] if code is None else code
        return _Rows.of(entries, [code] * len(entries))

    def cached(self, key: object, build: Callable[..., T], *args) -> T:
        """What ``build(*args)`` returns for this snapshot, made on the first call for ``key``.

        The one cache for tables derived from a world (pair selections, motion tables):
        they live and die with the snapshot. Two threads may both build on a first call;
        one result is kept and both get it.
        """
        value = self._derived.get(key, _MISSING)
        if value is _MISSING:
            built = build(*args)
            with self._derived_lock:
                value = self._derived.setdefault(key, built)
        return value

    def link_padding(self, link: str) -> float:
        return self.link_padding_m.get(link, self.default_padding_m)

    def _touch_allowed(self, a: ShapeEntry, b: ShapeEntry) -> bool:
        """Attached objects may touch their own link and their touch links."""
        return self.touch_allowed(a.owner, b.owner)

    def touch_allowed(self, a: str, b: str) -> bool:
        """Whether bodies ``a`` and ``b`` (link names, object ids) may touch because one is an
        attached object and the other its link or one of its touch links."""
        for x, y in ((a, b), (b, a)):
            obj = self.objects.get(x)
            if obj is not None and obj.attached and (y == obj.link or y in obj.touch_links):
                return True
        return False

    def _owner_rows(self, name: str) -> np.ndarray:
        if name in self._object_code:
            return self._object_row_range(name)
        if self.robot.has_link(name):
            return np.flatnonzero(self._rows.code[:self._n_robot_rows] == -1 - self.robot.link_index(name))
        return np.zeros(0, dtype=np.int64)

    def _build_pairs(self, previous: "CollisionWorld | None") -> None:
        """Pairs (i, j), i < j, of a shape on the robot (link or attached) and another body:
        environment pairs (j a world object) first, then self pairs, each ordered by i then j."""
        rows = self._rows
        on_robot = np.flatnonzero(rows.on_robot)
        in_world = np.flatnonzero(~rows.on_robot)
        # environment: every (robot, world) pair unless the matrix allows the two bodies; the
        # model's entries name links only, so only entries naming an object can allow one,
        # unless default entries (allowed with everything) are set: then body by body
        special = self.acm.pairs_naming_other_than(self.robot.link_names) if len(in_world) else ()
        by_body = len(in_world) > 0 and self.acm.has_default_entries
        allowed = np.zeros((len(on_robot), len(in_world)), dtype=bool) if special or by_body else None
        if by_body:
            robot_owner = [e.owner for e in rows.entries[on_robot].tolist()]
            world_owner = [e.owner for e in rows.entries[in_world].tolist()]
            robot_names, robot_at = np.unique(np.array(robot_owner, dtype=object), return_inverse=True)
            world_names, world_at = np.unique(np.array(world_owner, dtype=object), return_inverse=True)
            by_names = np.array([[self.acm.allowed(a, b) for b in world_names.tolist()]
                                 for a in robot_names.tolist()], dtype=bool).reshape(len(robot_names), len(world_names))
            allowed[:] = by_names[np.ix_(robot_at.ravel(), world_at.ravel())]
        elif special:
            robot_position = np.full(len(rows), -1, dtype=np.int64)
            robot_position[on_robot] = np.arange(len(on_robot))
            world_position = np.full(len(rows), -1, dtype=np.int64)
            world_position[in_world] = np.arange(len(in_world))
            for a, b in special:
                if not self.acm.allowed(a, b):
                    continue
                for x, y in ((a, b), (b, a)):
                    rx, ry = robot_position[self._owner_rows(x)], world_position[self._owner_rows(y)]
                    rx, ry = rx[rx >= 0], ry[ry >= 0]
                    if len(rx) and len(ry):
                        allowed[np.ix_(rx, ry)] = True
        if allowed is None:          # every (robot, world) pair, robot shape by robot shape
            env = np.empty((len(on_robot) * len(in_world), 2), dtype=np.int64)
            env[:, 0] = np.repeat(on_robot, len(in_world))
            env[:, 1] = np.tile(in_world, len(on_robot))
        else:
            r, c = np.nonzero(~allowed)
            env = np.column_stack([on_robot[r], in_world[c]]).astype(np.int64).reshape(-1, 2)
        # self: few shapes (the robot's and the attached objects'); kept from the previous
        # snapshot when these shapes, the matrix and so the answer are the same
        robot_entries = rows.entries[on_robot].tolist()
        local = None
        if previous is not None and previous.acm is self.acm and len(previous._robot_entries) == len(robot_entries) \
                and all(map(operator.is_, previous._robot_entries, robot_entries)):
            local = previous._self_local
        if local is None:
            found = []
            for x, a in enumerate(robot_entries):
                for y in range(x + 1, len(robot_entries)):
                    b = robot_entries[y]
                    if a.owner == b.owner or self.acm.allowed(a.owner, b.owner) or self._touch_allowed(a, b):
                        continue
                    found.append((x, y))
            local = np.array(found, dtype=np.int64).reshape(-1, 2)
        self._robot_entries, self._self_local = robot_entries, local
        pairs = np.ascontiguousarray(np.vstack([env, on_robot[local]]), dtype=np.int64).reshape(-1, 2)
        self.pairs = pairs
        self.pair_calls, self.pair_swapped = self._fcl_call_order(pairs)
        self._n_env = len(env)
        self.pair_is_self = np.arange(len(pairs)) >= len(env)
        self.pair_padding_m = rows.padding[pairs[:, 0]] + rows.padding[pairs[:, 1]]

    def _fcl_call_order(self, pairs) -> tuple[np.ndarray, np.ndarray]:
        """How fcl is called for each pair: object indices (P, 2) and whether they are swapped.

        fcl answers a shape-versus-mesh query in mesh-first order whatever the order
        of the call (normal, witness points and triangle ids all refer to the mesh as
        the first object), so such pairs are always called mesh first and their results
        swapped back. Index ``s`` is shape s's fcl object, ``S + s`` its variant for use
        against meshes (see ShapeGeometry.fcl_geometry_against_mesh).
        """
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        rows = self._rows
        a, b = pairs[:, 0], pairs[:, 1]
        swap = rows.is_bvh[b] & ~rows.is_bvh[a]
        calls = np.empty_like(pairs)
        if not swap.any():           # no shape against a mesh the other way round: the pairs' own order
            calls[:] = pairs
        else:
            calls[:, 0] = np.where(swap, b, a)
            calls[:, 1] = np.where(swap, a, b)
        variant = rows.is_bvh[calls[:, 0]] & rows.has_variant[calls[:, 1]]
        if variant.any():
            calls[variant, 1] += len(rows)
        return calls, swap

    # ----- queries ------------------------------------------------------
    def pair_selection(self, group: str, pad_environment: bool, pad_self: bool) -> "PairSelection":
        """The pairs a request checks, with their padding margins and fcl call order (cached).

        With a group, only pairs with at least one body moved by the group are kept.

        Raises
        ------
        RequestError
            If the group is unknown.
        """
        key = ("pair_selection", group, bool(pad_environment), bool(pad_self))
        selection = self._derived.get(key)    # the single predicate's path: one lookup, no further call
        if selection is None:
            selection = self.cached(key, self._select_pairs, *key[1:])
        return selection

    def _select_pairs(self, group: str, pad_environment: bool, pad_self: bool) -> "PairSelection":
        if not group:               # every pair: the world's own arrays, no copies
            n_env = self._n_env
            margins = self.pair_padding_m.copy()
            if not pad_environment:
                margins[:n_env] = 0.0
            if not pad_self:
                margins[n_env:] = 0.0
            return PairSelection(np.arange(len(self.pairs)), self.pairs, margins, self.pair_calls, self.pair_swapped)
        keep = np.ones(len(self.pairs), dtype=bool)
        if group:
            links = self.semantic.group_links(self.robot, group)
            # a shape is moved by the group when it rides on one of its links (a link's own
            # shapes and the objects attached to it); world objects ride on none (-1)
            moved = np.isin(self.shape_link, [self.robot.link_index(link) for link in links])
            if len(self.pairs):
                keep = moved[self.pairs[:, 0]] | moved[self.pairs[:, 1]]
        index = np.flatnonzero(keep)
        pad = np.where(self.pair_is_self, pad_self, pad_environment)
        margins = np.ascontiguousarray(np.where(pad, self.pair_padding_m, 0.0)[index])
        return PairSelection(index, np.ascontiguousarray(self.pairs[index]), margins, self.pair_calls[index],
                             self.pair_swapped[index])

    def fcl_objects(self) -> list:
        """This thread's fcl objects: one per shape, then one per shape's variant against meshes
        (None where it has none).

        World-fixed ones are posed once, when their object is added or moved, and shared by
        every thread and every later snapshot (no check changes them); those that ride on a
        link are this thread's own (a check sets their pose).
        """
        objects = getattr(self._tls, "objects", None)
        if objects is None:
            plain, variants = self._rows.fixed_plain.tolist(), self._rows.fixed_variant.tolist()
            identity = fcl.Transform(np.eye(3), np.zeros(3))
            shapes = self.shapes
            for k in self._riding.tolist():
                geometry = shapes[k].geometry
                plain[k] = fcl.CollisionObject(geometry.fcl_geometry, identity)
                variant = geometry.fcl_geometry_against_mesh
                variants[k] = None if variant is None else fcl.CollisionObject(variant, identity)
            objects = self._tls.objects = plain + variants
        return objects

    def shape_transforms(self, T_world_link: np.ndarray) -> np.ndarray:
        """Poses of every shape in the planning frame.

        Parameters
        ----------
        T_world_link : (L, 4, 4) or (N, L, 4, 4) array
            Link poses, as ``RobotModel.link_transforms`` (``_batch``) gives them.

        Returns
        -------
        T_world_shape : (S, 4, 4) or (N, S, 4, 4) array, shapes in :attr:`shapes` order.
        """
        links = np.ascontiguousarray(T_world_link, dtype=float)
        batch = links if links.ndim == 4 else links[None]
        out = np.empty((batch.shape[0], len(self.shapes), 4, 4))
        shape_poses(batch, self.shape_link, self.T_frame_shape, out)
        return out if links.ndim == 4 else out[0]

    def shape_owner_frame(self, shape_index: int, T_world_link: np.ndarray) -> np.ndarray:
        """Pose (4, 4) of a shape owner's frame in the planning frame."""
        e = self.shapes[shape_index]
        if e.body_type == BodyType.ROBOT_LINK:
            return T_world_link[e.link_index]
        obj = self.objects[e.owner]
        if obj.attached:
            return T_world_link[e.link_index] @ obj.T_frame_object
        return obj.T_frame_object
