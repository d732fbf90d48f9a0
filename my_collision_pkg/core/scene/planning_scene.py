"""The planning scene: robot, allowed collisions, padding, world and attached objects.

A :class:`PlanningScene` holds an immutable :class:`CollisionWorld` snapshot and
swaps it whole on every change, so a check that took a snapshot sees either the
old or the new world, never a mix, and a change that fails leaves the scene as
it was. Each snapshot precomputes what checks need: shape tables for the
compiled kernels and the list of shape pairs to test, environment pairs first.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import fcl
import numpy as np

from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.errors import ModelError, RequestError, SceneError
from my_collision_pkg.core.geometry.shape_geometry import MeshResolver, ShapeGeometry, build_shape
from my_collision_pkg.core.kernels.kinematics import shape_poses
from my_collision_pkg.core.model.robot_model import MAX_COORDINATE_M, RobotModel, ShapeSpec
from my_collision_pkg.core.model.srdf import SemanticModel

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
class ObjectShape:
    """One shape of an object, posed in the object frame."""
    spec: ShapeSpec
    T_object_shape: np.ndarray = field(default_factory=lambda: np.eye(4), compare=False)


@dataclass(frozen=True)
class SceneObject:
    """A world object, or an attached object when ``link`` names a robot link.

    ``T_frame_object`` is the object pose in the planning frame (world object)
    or in the link frame (attached object).
    """
    id: str
    shapes: tuple[ObjectShape, ...]
    T_frame_object: np.ndarray = field(default_factory=lambda: np.eye(4), compare=False)
    link: str | None = None
    touch_links: tuple[str, ...] = ()

    @property
    def attached(self) -> bool:
        return self.link is not None


@dataclass(frozen=True)
class AddObject:
    object: SceneObject


@dataclass(frozen=True)
class MoveObject:
    """New pose for an existing object (in its current frame)."""
    id: str
    T_frame_object: np.ndarray = field(compare=False)


@dataclass(frozen=True)
class RemoveObject:
    id: str


@dataclass(frozen=True)
class ClearObjects:
    """Remove every world object; ``include_attached`` removes attached ones too."""
    include_attached: bool = False


SceneUpdate = AddObject | MoveObject | RemoveObject | ClearObjects


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


class AllowedCollisionMatrix:
    """Which bodies (link names, object ids) may touch.

    Built from adjacency (links joined by a joint, geometry-less links in
    between skipped) and the SRDF; entries set at run time override both.
    """

    def __init__(self, defaults: frozenset[frozenset[str]] = frozenset(),
                 overrides: dict[frozenset[str], bool] | None = None) -> None:
        self._defaults = defaults
        self._overrides = dict(overrides or {})

    def allowed(self, a: str, b: str) -> bool:
        key = frozenset((a, b))
        if key in self._overrides:
            return self._overrides[key]
        return key in self._defaults

    def with_entry(self, a: str, b: str, allowed: bool) -> "AllowedCollisionMatrix":
        overrides = dict(self._overrides)
        overrides[frozenset((a, b))] = allowed
        return AllowedCollisionMatrix(self._defaults, overrides)


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
        return self.cached(key, self._select_pairs, group, bool(pad_environment), bool(pad_self))

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


def _nearest_geometric_ancestor(robot: RobotModel, link: str, has_geometry: set[str]) -> str | None:
    parent = robot.parent_link(link)
    while parent is not None and parent not in has_geometry:
        parent = robot.parent_link(parent)
    return parent


class PlanningScene:
    """Mutable, thread-safe holder of the current :class:`CollisionWorld` and joint state.

    Parameters
    ----------
    robot : RobotModel
    semantic : SemanticModel, optional
        SRDF contents; without it no pairs are disabled beyond adjacency and no groups exist.
    resolver : MeshResolver, optional
    default_padding_m : float
        Padding of every robot link without its own value (metres, >= 0).
    link_padding_m : dict, optional
        Per-link padding (metres, >= 0).
    allow_adjacent : bool
        Let links joined by a joint touch (default true).

    Raises
    ------
    MeshError, ModelError
        If a link's geometry cannot be built or a padding is invalid.
    """

    def __init__(self, robot: RobotModel, semantic: SemanticModel | None = None, *,
                 resolver: MeshResolver | None = None, default_padding_m: float = 0.0,
                 link_padding_m: dict[str, float] | None = None, allow_adjacent: bool = True) -> None:
        self._robot = robot
        self._semantic = semantic or SemanticModel()
        self._resolver = resolver or MeshResolver()
        self._lock = threading.Lock()
        _check_padding(robot, default_padding_m, link_padding_m or {})
        robot_shapes = []
        for element in robot.collision_elements:
            geom = build_shape(element.shape, element.link, self._resolver)
            robot_shapes.append(ShapeEntry(element.link, BodyType.ROBOT_LINK, element.shape_id,
                                           robot.link_index(element.link), element.T_link_shape,
                                           element.T_link_shape, geom))
        self._robot_shapes = tuple(robot_shapes)
        with_geometry = {e.link for e in robot.collision_elements}
        defaults = set(self._semantic.disabled_pairs)
        if allow_adjacent:
            for link in with_geometry:
                ancestor = _nearest_geometric_ancestor(robot, link, with_geometry)
                if ancestor is not None:
                    defaults.add(frozenset((link, ancestor)))
        self._world = CollisionWorld(robot, self._semantic, self._robot_shapes, {}, {},
                                     AllowedCollisionMatrix(frozenset(defaults)), default_padding_m,
                                     dict(link_padding_m or {}))
        self._positions = robot.default_positions()
        self._positions.setflags(write=False)

    # ----- read access --------------------------------------------------
    @property
    def robot(self) -> RobotModel:
        return self._robot

    @property
    def semantic(self) -> SemanticModel:
        return self._semantic

    @property
    def resolver(self) -> MeshResolver:
        return self._resolver

    @property
    def world(self) -> CollisionWorld:
        """The current snapshot (immutable)."""
        return self._world

    @property
    def current_positions(self) -> np.ndarray:
        """(A,) the current value of every active joint (read-only array)."""
        return self._positions

    @property
    def planning_frame(self) -> str:
        return self._robot.root_link

    # ----- changes ------------------------------------------------------
    def set_current_positions(self, joint_names, positions) -> None:
        """Update the current state of some active joints.

        Raises
        ------
        RequestError
            For an unknown or inactive joint, a length mismatch or a non-finite value.
        """
        names = list(joint_names)
        values = np.asarray(positions, dtype=float).ravel()
        if len(names) != len(values):
            raise RequestError(f"{len(names)} joint names but {len(values)} positions")
        with self._lock:
            q = self._positions.copy()
            for name, value in zip(names, values):
                index = self._robot.active_index(name)
                if index is None:
                    raise RequestError(f"'{name}' is not an active joint of the robot")
                if not np.isfinite(value):
                    raise RequestError(f"joint '{name}' has non-finite position {value}")
                q[index] = value
            q.setflags(write=False)
            self._positions = q

    def apply(self, updates: list[SceneUpdate] | tuple[SceneUpdate, ...]) -> CollisionWorld:
        """Apply a batch of object updates in order, all or nothing; returns the new world.

        (A request from outside may first be checked with :func:`check_unambiguous`.)

        Raises
        ------
        SceneError
            Naming the object and the fault; the scene is then unchanged.
        MeshError
            If an object's mesh cannot be read; the scene is then unchanged.
        """
        with self._lock:
            world = self._world
            objects = dict(world.objects)
            geometry = dict(world.object_geometry)
            for update in updates:
                self._apply_one(update, objects, geometry)
            self._world = CollisionWorld(self._robot, self._semantic, self._robot_shapes, objects, geometry,
                                         world.acm, world.default_padding_m, world.link_padding_m)
            return self._world

    def _apply_one(self, update: SceneUpdate, objects: dict, geometry: dict) -> None:
        if isinstance(update, AddObject):
            obj = update.object
            self._validate_object(obj)
            geoms = []
            for k, shape in enumerate(obj.shapes):
                try:
                    geoms.append(build_shape(shape.spec, f"{obj.id}", self._resolver))
                except ModelError as exc:
                    if type(exc) is ModelError:
                        raise SceneError(f"object '{obj.id}' shape {k}: {exc}") from exc
                    raise
            objects[obj.id] = obj            # adding an existing id replaces it, as in MoveIt
            geometry[obj.id] = tuple(geoms)
        elif isinstance(update, MoveObject):
            if update.id not in objects:
                raise SceneError(f"cannot move object '{update.id}': no such object")
            _check_transform(update.T_frame_object, f"object '{update.id}' pose")
            old = objects[update.id]
            objects[update.id] = SceneObject(old.id, old.shapes, np.asarray(update.T_frame_object, dtype=float),
                                             old.link, old.touch_links)
        elif isinstance(update, RemoveObject):
            if update.id not in objects:
                raise SceneError(f"cannot remove object '{update.id}': no such object")
            del objects[update.id]
            del geometry[update.id]
        elif isinstance(update, ClearObjects):
            for oid in [k for k, o in objects.items() if update.include_attached or not o.attached]:
                del objects[oid]
                del geometry[oid]
        else:
            raise SceneError(f"unknown scene update {type(update).__name__}")

    def _validate_object(self, obj: SceneObject) -> None:
        if not obj.id or not isinstance(obj.id, str):
            raise SceneError("an object needs a non-empty id")
        if self._robot.has_link(obj.id):
            raise SceneError(f"object id '{obj.id}' is already the name of a robot link")
        if not obj.shapes:
            raise SceneError(f"object '{obj.id}' has no shapes")
        if obj.link is not None and not self._robot.has_link(obj.link):
            raise SceneError(f"object '{obj.id}' is attached to unknown link '{obj.link}'")
        for t in obj.touch_links:
            if not self._robot.has_link(t):
                raise SceneError(f"object '{obj.id}' names unknown touch link '{t}'")
        _check_transform(obj.T_frame_object, f"object '{obj.id}' pose")
        for k, shape in enumerate(obj.shapes):
            _check_transform(shape.T_object_shape, f"object '{obj.id}' shape {k} pose")

    def set_allowed_collision(self, a: str, b: str, allowed: bool) -> None:
        """Allow or forbid contact between two bodies (link names or object ids).

        Raises
        ------
        SceneError
            If a name is neither a robot link nor a known object.
        """
        with self._lock:
            world = self._world
            for name in (a, b):
                if not self._robot.has_link(name) and name not in world.objects:
                    raise SceneError(f"'{name}' is neither a robot link nor an object of the scene")
            self._world = CollisionWorld(self._robot, self._semantic, self._robot_shapes, world.objects,
                                         world.object_geometry, world.acm.with_entry(a, b, allowed),
                                         world.default_padding_m, world.link_padding_m)

    def set_padding(self, default_padding_m: float | None = None,
                    link_padding_m: dict[str, float] | None = None) -> None:
        """Change the default and/or per-link padding (metres, >= 0).

        Raises
        ------
        ModelError
            For a negative or non-finite padding or an unknown link.
        """
        with self._lock:
            world = self._world
            default = world.default_padding_m if default_padding_m is None else default_padding_m
            links = dict(world.link_padding_m)
            links.update(link_padding_m or {})
            _check_padding(self._robot, default, links)
            self._world = CollisionWorld(self._robot, self._semantic, self._robot_shapes, world.objects,
                                         world.object_geometry, world.acm, default, links)


def _check_padding(robot: RobotModel, default: float, per_link: dict[str, float]) -> None:
    if not np.isfinite(default) or default < 0:
        raise ModelError(f"default padding {default} m must be finite and >= 0")
    for link, value in per_link.items():
        if not robot.has_link(link):
            raise ModelError(f"padding given for unknown link '{link}'")
        if not np.isfinite(value) or value < 0:
            raise ModelError(f"padding {value} m of link '{link}' must be finite and >= 0")


def update_target(update: SceneUpdate) -> str:
    """The object id an update names ('' for ClearObjects)."""
    return update.object.id if isinstance(update, AddObject) else getattr(update, "id", "")


def check_unambiguous(updates) -> None:
    """Refuse a batch of updates whose result would depend on their order.

    The rule: each object id at most once per batch, and a ClearObjects (REMOVE with
    an empty id) only as the first update. Such a batch gives the same scene in any
    order of its other updates, so "all or nothing" has one meaning.

    Raises
    ------
    SceneError
        Naming the repeated id, or the misplaced ClearObjects.
    """
    seen: set[str] = set()
    for k, update in enumerate(updates):
        if isinstance(update, ClearObjects):
            if k != 0:
                raise SceneError(f"update {k} removes every object; that is only allowed as the first update "
                                 "of a request")
            continue
        oid = update_target(update)
        if oid in seen:
            raise SceneError(f"object '{oid}' appears more than once in one request (one operation per id; "
                             "send a second request for a second change)")
        seen.add(oid)


def _check_transform(T, what: str) -> None:
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise SceneError(f"{what} is not a finite 4x4 transform")
    if np.any(np.abs(T[:3, 3]) > MAX_COORDINATE_M):
        raise SceneError(f"{what} has position {[float(v) for v in T[:3, 3]]} beyond the bound of "
                         f"{MAX_COORDINATE_M:g} m in each coordinate")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) <= 0:
        raise SceneError(f"{what} has a rotation that is not orthonormal")
