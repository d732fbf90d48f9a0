"""The collision world: an immutable snapshot of everything a check needs.

A :class:`CollisionWorld` holds the robot, its objects, the allowed collision
matrix and the padding, and precomputes from them the table of collision shapes
(:class:`ShapeEntry`), the arrays the compiled kernels read, and the list of shape
pairs to test (environment pairs first). :meth:`CollisionWorld.pair_selection`
gives the pairs one request checks (:class:`PairSelection`); tables other modules
derive from a world live in its :meth:`CollisionWorld.cached`.
"""
from __future__ import annotations

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


class CollisionWorld:
    """Immutable snapshot of everything a check needs. Build through PlanningScene."""

    def __init__(self, robot: RobotModel, semantic: SemanticModel, robot_shapes: tuple[ShapeEntry, ...],
                 objects: dict[str, SceneObject], object_geometry: dict[str, tuple[ShapeGeometry, ...]],
                 acm: AllowedCollisionMatrix, default_padding_m: float, link_padding_m: dict[str, float]) -> None:
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
        self.shapes = self._build_shapes(robot_shapes)
        self._build_arrays()
        self._build_pairs()

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

    # ----- construction -------------------------------------------------
    def link_padding(self, link: str) -> float:
        return self.link_padding_m.get(link, self.default_padding_m)

    def _build_shapes(self, robot_shapes: tuple[ShapeEntry, ...]) -> tuple[ShapeEntry, ...]:
        shapes = [ShapeEntry(s.owner, s.body_type, s.shape_id, s.link_index, s.T_frame_shape, s.T_owner_shape,
                             s.geometry, self.link_padding(s.owner)) for s in robot_shapes]
        for obj in self.objects.values():
            geoms = self.object_geometry[obj.id]
            if obj.attached:
                link_index, body_type, padding = (self.robot.link_index(obj.link), BodyType.ROBOT_ATTACHED,
                                                  self.link_padding(obj.link))
            else:
                link_index, body_type, padding = -1, BodyType.WORLD_OBJECT, 0.0
            for shape_id, (shape, geom) in enumerate(zip(obj.shapes, geoms)):
                shapes.append(ShapeEntry(obj.id, body_type, shape_id, link_index,
                                         obj.T_frame_object @ shape.T_object_shape, shape.T_object_shape, geom,
                                         padding))
        return tuple(shapes)

    def _build_arrays(self) -> None:
        s = self.shapes
        self.shape_link = np.array([e.link_index for e in s], dtype=np.int64)
        self.T_frame_shape = np.array([e.T_frame_shape for e in s], dtype=float).reshape(-1, 4, 4)
        self.obb_center = np.array([e.geometry.obb_center_shape for e in s], dtype=float).reshape(-1, 3)
        self.obb_axes = np.array([e.geometry.obb_axes_shape for e in s], dtype=float).reshape(-1, 3, 3)
        self.obb_half = np.array([e.geometry.obb_half_extents_m for e in s], dtype=float).reshape(-1, 3)

    def _touch_allowed(self, a: ShapeEntry, b: ShapeEntry) -> bool:
        """Attached objects may touch their own link and their touch links."""
        for x, y in ((a, b), (b, a)):
            if x.body_type == BodyType.ROBOT_ATTACHED:
                obj = self.objects[x.owner]
                if y.owner == obj.link or y.owner in obj.touch_links:
                    return True
        return False

    def _build_pairs(self) -> None:
        env, slf = [], []
        for i, a in enumerate(self.shapes):
            if not a.on_robot:
                continue
            for j, b in enumerate(self.shapes):
                if i == j or a.owner == b.owner:
                    continue
                if b.on_robot and j < i:
                    continue
                if self.acm.allowed(a.owner, b.owner) or self._touch_allowed(a, b):
                    continue
                (slf if b.on_robot else env).append((i, j))
        pairs = env + slf
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.pair_calls, self.pair_swapped = self._fcl_call_order(pairs)
        self.pair_is_self = np.arange(len(pairs)) >= len(env)
        self.pair_padding_m = np.array([self.shapes[i].padding_m + self.shapes[j].padding_m for i, j in pairs],
                                       dtype=float)

    def _fcl_call_order(self, pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """How fcl is called for each pair: object indices (P, 2) and whether they are swapped.

        fcl answers a shape-versus-mesh query in mesh-first order whatever the order
        of the call (normal, witness points and triangle ids all refer to the mesh as
        the first object), so such pairs are always called mesh first and their results
        swapped back. Index ``s`` is shape s's fcl object, ``S + s`` its variant for use
        against meshes (see ShapeGeometry.fcl_geometry_against_mesh).
        """
        n = len(self.shapes)
        calls, swapped = [], []
        for a, b in pairs:
            ga, gb = self.shapes[a].geometry, self.shapes[b].geometry
            swap = gb.is_bvh and not ga.is_bvh
            first, second = (b, a) if swap else (a, b)
            if self.shapes[first].geometry.is_bvh and self.shapes[second].geometry.fcl_geometry_against_mesh is not None:
                second += n
            calls.append((first, second))
            swapped.append(swap)
        return np.array(calls, dtype=np.int64).reshape(-1, 2), np.array(swapped, dtype=bool)

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
        keep = np.ones(len(self.pairs), dtype=bool)
        if group:
            links = self.semantic.group_links(self.robot, group)
            moved = np.array([(e.owner in links) or (e.body_type == BodyType.ROBOT_ATTACHED
                                                     and self.objects[e.owner].link in links)
                              for e in self.shapes], dtype=bool)
            if len(self.pairs):
                keep = moved[self.pairs[:, 0]] | moved[self.pairs[:, 1]]
        index = np.flatnonzero(keep)
        pad = np.where(self.pair_is_self, pad_self, pad_environment)
        margins = np.ascontiguousarray(np.where(pad, self.pair_padding_m, 0.0)[index])
        return PairSelection(index, np.ascontiguousarray(self.pairs[index]), margins, self.pair_calls[index],
                             self.pair_swapped[index])

    def fcl_objects(self) -> list:
        """This thread's fcl objects: one per shape, then one per shape's variant against meshes
        (None where it has none); world-fixed ones already posed."""
        objects = getattr(self._tls, "objects", None)
        if objects is None:
            plain, variants = [], []
            for e in self.shapes:
                T = e.T_frame_shape if e.link_index < 0 else np.eye(4)
                pose = fcl.Transform(T[:3, :3], T[:3, 3])
                plain.append(fcl.CollisionObject(e.geometry.fcl_geometry, pose))
                variant = e.geometry.fcl_geometry_against_mesh
                variants.append(None if variant is None else fcl.CollisionObject(variant, pose))
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
