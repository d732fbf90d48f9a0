"""Objects of a planning scene and the updates that add, move and remove them.

A :class:`SceneObject` is a world object (posed in the planning frame) or an
object attached to a robot link (posed in the link frame), made of one or more
:class:`ObjectShape`. A :data:`SceneUpdate` (:class:`AddObject`,
:class:`MoveObject`, :class:`RemoveObject`, :class:`ClearObjects`) is one change;
:meth:`PlanningScene.apply <my_collision_pkg.core.scene.planning_scene.PlanningScene.apply>`
applies a batch of them, all or nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.model.shapes import MAX_COORDINATE_M, ShapeSpec

ROTATION_TOLERANCE = 1e-6      # how far R @ R.T may be from the identity, per entry
OCTOMAP_ID = "<octomap>"       # the occupancy map's world object (MoveIt's name for it)


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
    # the shapes' ids in contacts (default: their positions 0, 1, ...); the octomap's cells,
    # checked as boxes, keep their cell ids here
    shape_ids: tuple[int, ...] = ()

    @property
    def attached(self) -> bool:
        return self.link is not None


@dataclass(frozen=True)
class AddObject:
    """Add an object, or replace the object of the same id (as in MoveIt)."""
    object: SceneObject


@dataclass(frozen=True)
class MoveObject:
    """New pose for an existing object.

    ``T_frame_object`` is the object's pose in ``frame``. ``frame`` None (the default)
    is the object's own frame: the planning frame for a world object, its link for an
    attached one. ``frame`` naming the planning frame or a robot link: the pose is in
    that frame at the scene's current joint positions (``PlanningScene.current_positions``)
    and is converted into the object's own frame. A MOVE never attaches or detaches: a
    world object stays in the world, an attached object on its link.
    """
    id: str
    T_frame_object: np.ndarray = field(compare=False)
    frame: str | None = None


@dataclass(frozen=True)
class RemoveObject:
    """Remove one object, world or attached."""
    id: str


@dataclass(frozen=True)
class ClearObjects:
    """Remove every world object; ``include_attached`` removes attached ones too."""
    include_attached: bool = False


SceneUpdate = AddObject | MoveObject | RemoveObject | ClearObjects


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


def check_object_transform(T, what: str) -> None:
    """Refuse a pose that is not a rigid 4x4 transform within the coordinate bound.

    Raises
    ------
    SceneError
        Naming ``what``: a non-finite or mis-shaped matrix, a position beyond
        ``MAX_COORDINATE_M`` in some coordinate, or a rotation that is not orthonormal.
    """
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise SceneError(f"{what} is not a finite 4x4 transform")
    if np.any(np.abs(T[:3, 3]) > MAX_COORDINATE_M):
        raise SceneError(f"{what} has position {[float(v) for v in T[:3, 3]]} beyond the bound of "
                         f"{MAX_COORDINATE_M:g} m in each coordinate")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=ROTATION_TOLERANCE) or np.linalg.det(R) <= 0:
        raise SceneError(f"{what} has a rotation that is not orthonormal")
