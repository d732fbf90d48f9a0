"""The planning scene: robot, allowed collisions, padding, world and attached objects.

A :class:`PlanningScene` holds an immutable :class:`CollisionWorld` snapshot and
swaps it whole on every change, so a check that took a snapshot sees either the
old or the new world, never a mix, and a change that fails leaves the scene as
it was. The parts live in their own modules and are re-exported here: the objects
and their updates in :mod:`~my_collision_pkg.core.scene.objects`, the allowed
collision matrix in :mod:`~my_collision_pkg.core.scene.acm`, the snapshot in
:mod:`~my_collision_pkg.core.scene.world`.
"""
from __future__ import annotations

import dataclasses
import threading

import numpy as np

from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.errors import ModelError, RequestError, SceneError
from my_collision_pkg.core.geometry.mesh_files import MeshResolver
from my_collision_pkg.core.geometry.shape_geometry import ShapeGeometry, build_shape
from my_collision_pkg.core.memory import release_free_memory
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.srdf import SemanticModel
from my_collision_pkg.core.scene.acm import AllowedCollisionMatrix
from my_collision_pkg.core.model.shapes import OcTree
from my_collision_pkg.core.scene.objects import (OCTOMAP_ID, AddObject, ClearObjects, MoveObject,  # noqa: F401
                                                 ObjectShape, RemoveObject, SceneObject, SceneUpdate, check_object_transform,
                                                 check_unambiguous, update_target)  # re-exported
from my_collision_pkg.core.scene.world import CollisionWorld, PairSelection, ShapeEntry  # noqa: F401  re-exported


# After an update that added or dropped this many mesh triangles (a mesh's build leaves
# hundreds of megabytes of freed temporaries per million triangles), the allocator's free
# memory is given back to the system.
RELEASE_AFTER_TRIANGLES = 100_000
# The most bodies a GetAllowedCollisions answer covers: its matrix holds the square of this
# many flags (1,000: 1,000,000 flags, about a second of lookups).
MAX_ALLOWED_COLLISIONS_NAMES = 1_000


class PlanningScene:
    """Mutable, thread-safe holder of the current :class:`CollisionWorld` and joint state.

    Parameters
    ----------
    robot : RobotModel
    semantic : SemanticModel, optional
        SRDF contents; without it no pairs are disabled beyond adjacency and no groups exist.
    resolver : MeshResolver, optional
        Where link and object meshes are looked up (default: no search folders, no
        package lookup).
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
        acm = AllowedCollisionMatrix.from_model(robot, self._semantic, allow_adjacent)
        self._world = CollisionWorld(robot, self._semantic, self._robot_shapes, {}, {}, acm, default_padding_m,
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
        The new snapshot is made from the current one at the cost of the change (see
        :meth:`CollisionWorld.with_objects`); a snapshot already taken is never changed.
        An object (re)added by ADD comes after the others in ``world.objects``. After a
        batch that added or dropped more than ``RELEASE_AFTER_TRIANGLES`` mesh triangles,
        the allocator's free memory is given back to the system
        (:func:`~my_collision_pkg.core.memory.release_free_memory`).

        Raises
        ------
        SceneError
            Naming the object and the fault; the scene is then unchanged.
        MeshError
            If an object's mesh cannot be read; the scene is then unchanged.
        """
        return self._apply_updates(updates)

    def _apply_updates(self, updates, octomap: bool = False) -> CollisionWorld:
        with self._lock:
            world = self._world
            change = _Change(world.objects, world.object_geometry)
            for update in updates:
                self._apply_one(update, change, octomap)
            new_world = world.with_objects(change.objects, change.geometry, change.touched, change.added)
            self._world = new_world
            big = change.triangles_added + change.triangles_dropped(new_world) >= RELEASE_AFTER_TRIANGLES
        if big:
            del world, change
            release_free_memory(collect_garbage=True)
        return new_world

    @property
    def occupancy(self):
        """The occupancy map of the world object ``<octomap>`` (an
        :class:`~my_collision_pkg.core.perception.occupancy.OccupancyMap`), or None."""
        return occupancy_of(self._world)

    def set_occupancy(self, occupancy) -> CollisionWorld:
        """Make ``occupancy`` (an ``OccupancyMap``; None or an empty map: none) the world object
        ``<octomap>``, replacing the one before, in one new snapshot; returns it.

        The map is in the planning frame. Checks see the old map or the new one, never a mix.
        Other objects are untouched; removing every world object (ClearObjects) keeps the map,
        as MoveIt's does.
        """
        if occupancy is None or occupancy.n_occupied == 0:
            if OCTOMAP_ID not in self._world.objects:
                return self._world
            return self._apply_updates([RemoveObject(OCTOMAP_ID)], octomap=True)
        obj = SceneObject(OCTOMAP_ID, (ObjectShape(OcTree(occupancy)),))
        return self._apply_updates([AddObject(obj)], octomap=True)

    def _apply_one(self, update: SceneUpdate, change: "_Change", octomap: bool = False) -> None:
        objects, geometry = change.objects, change.geometry
        if not octomap and isinstance(update, (AddObject, MoveObject)) and update_target(update) == OCTOMAP_ID:
            raise SceneError(f"'{OCTOMAP_ID}' is the occupancy map's object: it is set from point clouds or an "
                             "octomap file (PlanningScene.set_occupancy; the node's point_cloud_topic and "
                             "~/set_octomap), not added or moved as a collision object")
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
            change.remove(obj.id)         # adding an existing id replaces it, as in MoveIt
            objects[obj.id] = obj
            geometry[obj.id] = tuple(geoms)
            change.touched.add(obj.id)
            change.added.add(obj.id)
            change.triangles_added += sum(_triangles(g) for g in geoms)
        elif isinstance(update, MoveObject):
            if update.id not in objects:
                raise SceneError(f"cannot move object '{update.id}': no such object")
            check_object_transform(update.T_frame_object, f"object '{update.id}' pose")
            old = objects[update.id]
            T_own_object = self._in_own_frame(old, update.frame, np.asarray(update.T_frame_object, dtype=float),
                                              change)
            check_object_transform(T_own_object, f"object '{update.id}' pose (in its own frame)")
            objects[update.id] = dataclasses.replace(old, T_frame_object=T_own_object)
            change.touched.add(update.id)
        elif isinstance(update, RemoveObject):
            if update.id not in objects:
                raise SceneError(f"cannot remove object '{update.id}': no such object")
            change.remove(update.id)
        elif isinstance(update, ClearObjects):
            for oid in [k for k, o in objects.items()
                        if (update.include_attached or not o.attached) and k != OCTOMAP_ID]:
                change.remove(oid)
        else:
            raise SceneError(f"unknown scene update {type(update).__name__}")

    def _in_own_frame(self, obj: SceneObject, frame: str | None, T_frame_object: np.ndarray,
                      change: "_Change") -> np.ndarray:
        """A pose given in ``frame`` (None: the object's own frame) as a pose in the object's own
        frame (planning frame, or its link's frame), at the current joint positions.

        Raises
        ------
        SceneError
            If ``frame`` is neither the planning frame nor a robot link.
        """
        own = obj.link if obj.attached else self._robot.root_link
        if frame is None or frame == own:
            return T_frame_object
        if frame != self._robot.root_link and not self._robot.has_link(frame):
            raise SceneError(f"cannot move object '{obj.id}': frame '{frame}' is neither the planning frame "
                             f"'{self._robot.root_link}' nor a robot link")
        T_world_link = change.link_poses(self._robot, self._positions)
        T_world_frame = np.eye(4) if frame == self._robot.root_link else T_world_link[self._robot.link_index(frame)]
        T_world_object = T_world_frame @ T_frame_object
        if not obj.attached:
            return T_world_object
        return np.linalg.inv(T_world_link[self._robot.link_index(obj.link)]) @ T_world_object

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
        check_object_transform(obj.T_frame_object, f"object '{obj.id}' pose")
        for k, shape in enumerate(obj.shapes):
            check_object_transform(shape.T_object_shape, f"object '{obj.id}' shape {k} pose")

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
            self._world = world.with_acm(world.acm.with_entry(a, b, allowed))

    def set_allowed_collisions(self, entries=(), defaults=(), *, replace: bool = False) -> CollisionWorld:
        """Set run-time entries of the allowed collision matrix, all or nothing.

        Parameters
        ----------
        entries : iterable of (name_a, name_b, allowed)
            Each pair of bodies (robot link names, world or attached object ids) may touch
            (``allowed`` true) or not, whatever the SRDF and adjacency say.
        defaults : iterable of (name, allowed)
            MoveIt's default entries: whether the body may touch every body it has no
            entry with.
        replace : bool
            Start from the model's matrix (SRDF and adjacency) without earlier run-time
            entries and defaults.

        Every check from the next request on follows the new matrix. Returns the new world.

        Raises
        ------
        SceneError
            Naming the first entry whose name is neither a robot link nor an object of the
            scene, whose ``allowed`` is not a bool, or that names one body twice (a self
            pair); the scene is then unchanged.
        """
        entries, defaults = list(entries), list(defaults)
        with self._lock:
            world = self._world

            def check_name(name, where: str) -> str:
                if not isinstance(name, str) or not name:
                    raise SceneError(f"{where}: body name {name!r} must be a non-empty string")
                if not self._robot.has_link(name) and name not in world.objects:
                    raise SceneError(f"{where}: '{name}' is neither a robot link nor an object of the scene")
                return name

            def check_flag(value, where: str) -> bool:
                if not isinstance(value, (bool, np.bool_)):
                    raise SceneError(f"{where}: allowed must be true or false, got {value!r}")
                return bool(value)

            checked, checked_defaults = [], []
            for k, entry in enumerate(entries):
                try:
                    a, b, allowed = entry
                except (TypeError, ValueError):
                    raise SceneError(f"entry {k}: expected (name, name, allowed), got {entry!r}") from None
                checked.append((check_name(a, f"entry {k}"), check_name(b, f"entry {k}"),
                                check_flag(allowed, f"entry {k} ({a}, {b})")))
                if a == b:
                    raise SceneError(f"entry {k}: ('{a}', '{a}') names one body twice; a body is never checked "
                                     "against itself, so it has no entry")
            for k, entry in enumerate(defaults):
                try:
                    name, allowed = entry
                except (TypeError, ValueError):
                    raise SceneError(f"default entry {k}: expected (name, allowed), got {entry!r}") from None
                checked_defaults.append((check_name(name, f"default entry {k}"),
                                         check_flag(allowed, f"default entry {k} ({name})")))
            self._world = world.with_acm(world.acm.with_entries(checked, checked_defaults, replace=replace))
            return self._world

    def allowed_collisions(self, names=(), *, world: CollisionWorld | None = None) -> tuple[tuple[str, ...], np.ndarray]:
        """The effective allowed collision matrix over ``names`` (default: every robot link with
        collision geometry, then every object id): (names, (N, N) bool), ``[i, j]`` true when
        bodies i and j may touch. It is what the checks follow: the matrix's entries and
        defaults, and an attached object's own link and touch links; the diagonal is true
        (a body is never checked against itself). ``world``: that snapshot instead of the
        current one.

        Raises
        ------
        SceneError
            Naming the first name that is neither a robot link nor an object, or when there
            are more than MAX_ALLOWED_COLLISIONS_NAMES names (the answer grows with their
            square); refused before any work.
        """
        world = self._world if world is None else world
        if not names:
            links = []
            for element in self._robot.collision_elements:
                if element.link not in links:
                    links.append(element.link)
            names = tuple(links) + tuple(world.objects)
        names = tuple(names)
        if len(names) > MAX_ALLOWED_COLLISIONS_NAMES:
            raise SceneError(f"{len(names)} names, more than the bound of {MAX_ALLOWED_COLLISIONS_NAMES} "
                             "(MAX_ALLOWED_COLLISIONS_NAMES; the matrix grows with their square): ask for fewer "
                             "names at a time")
        for name in names:
            if not self._robot.has_link(name) and name not in world.objects:
                raise SceneError(f"'{name}' is neither a robot link nor an object of the scene")
        acm = world.acm
        bodies = list(dict.fromkeys(names))       # a name given twice is one body: allowed to itself
        allowed = np.eye(len(bodies), dtype=bool)
        for i, a in enumerate(bodies):
            for j in range(i + 1, len(bodies)):
                b = bodies[j]
                allowed[i, j] = allowed[j, i] = acm.allowed(a, b) or world.touch_allowed(a, b)
        where = {body: k for k, body in enumerate(bodies)}
        rows = np.array([where[name] for name in names], dtype=np.intp)
        matrix = allowed[np.ix_(rows, rows)]
        return names, matrix

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


def occupancy_of(world: CollisionWorld):
    """The occupancy map held by ``world``'s object ``<octomap>``, or None."""
    obj = world.objects.get(OCTOMAP_ID)
    if obj is None or not isinstance(obj.shapes[0].spec, OcTree):
        return None
    return obj.shapes[0].spec.occupancy


def _check_padding(robot: RobotModel, default: float, per_link: dict[str, float]) -> None:
    if not np.isfinite(default) or default < 0:
        raise ModelError(f"default padding {default} m must be finite and >= 0")
    for link, value in per_link.items():
        if not robot.has_link(link):
            raise ModelError(f"padding given for unknown link '{link}'")
        if not np.isfinite(value) or value < 0:
            raise ModelError(f"padding {value} m of link '{link}' must be finite and >= 0")


def _triangles(geometry: ShapeGeometry) -> int:
    """Triangles of a shape's mesh (0 for a primitive)."""
    return 0 if geometry.source_mesh is None else len(geometry.source_mesh.faces)


class _Change:
    """One batch of updates in the making: the new objects and geometry (copies of the
    world's dicts), the ids it touched and (re)added, the geometry it dropped."""

    def __init__(self, objects: dict[str, SceneObject], geometry: dict[str, tuple[ShapeGeometry, ...]]) -> None:
        self.objects = dict(objects)
        self.geometry = dict(geometry)
        self.touched: set[str] = set()
        self.added: set[str] = set()
        self.dropped: list[tuple[ShapeGeometry, ...]] = []
        self.triangles_added = 0
        self._link_poses: np.ndarray | None = None

    def remove(self, oid: str) -> None:
        """Drop an object if present (its id then comes last when added again)."""
        if oid in self.objects:
            del self.objects[oid]
            self.dropped.append(self.geometry.pop(oid))
            self.touched.add(oid)
            self.added.discard(oid)

    def triangles_dropped(self, world: CollisionWorld) -> int:
        """Mesh triangles of the dropped geometry that the new world no longer holds."""
        kept = {id(g) for oid in self.touched if oid in world.object_geometry for g in world.object_geometry[oid]}
        return sum(_triangles(g) for geoms in self.dropped for g in geoms if id(g) not in kept)

    def link_poses(self, robot: RobotModel, positions: np.ndarray) -> np.ndarray:
        """(L, 4, 4) link poses in the planning frame at ``positions`` (computed once per batch)."""
        if self._link_poses is None:
            self._link_poses = robot.link_transforms(np.array(positions, dtype=float))   # a writable copy
        return self._link_poses
