"""The MoveIt bridge: MoveIt's messages in, the collision core's changes and answers out.

Two halves, one concept:

- **Converters** (pure functions, no node): a ``moveit_msgs/PlanningScene`` (full or diff)
  becomes one :class:`SceneChange` (:func:`planning_scene_change`) that
  :func:`apply_scene_change` applies all or nothing; a ``GetStateValidity`` request becomes a
  :class:`StateValidity` (:func:`evaluate_state_validity`) that
  :func:`fill_state_validity_response` writes into a response. They read messages by their
  field names only (moveit_msgs ``ros2`` branch, 2.6.0), so the tests feed them stand-in
  classes with the same fields; moveit_msgs itself is imported only by the node half.
- **The node half** (:func:`declare_moveit_parameters`, :func:`read_moveit_parameters`,
  :func:`attach_moveit_bridge`, :class:`MoveItBridge`): with moveit_msgs importable, the
  validator node serves ``~/check_state_validity`` (``/check_state_validity`` with
  ``moveit_global_names``), ``~/check_multi_state_validity`` where the installed moveit_msgs
  has ``GetMultiStateValidity``, mirrors ``planning_scene_topic`` and pulls
  ``planning_scene_service`` once at start-up.

MoveIt's meaning is followed where this package can hold it (``moveit_core``'s
``PlanningScene::setPlanningSceneMsg`` / ``setPlanningSceneDiffMsg`` and
``robotStateMsgToRobotState``), in MoveIt's order: robot state (joints, then attached
objects), allowed collision matrix, padding and scale, world objects, octomap. Where it
cannot, the message is refused by name (never applied in part):

- planes (``CollisionObject.planes``): refused, naming the object (no approximation);
- ``link_scale`` other than 1: refused, naming the link (padding is applied);
- multi-DOF joint values (``multi_dof_joint_state``): refused, naming the joint;
- frame ids: the planning frame (the robot's root link, or the parent frame of a fixed SRDF
  virtual joint on it: MoveIt's planning frame), robot links, ``fixed_frame_transforms``
  (kept from message to message) and object ids; an object's subframes are not mirrored, so
  ``object/subframe`` frame ids are refused;
- the octomap (``world.octomap``): mirrored into the world object ``<octomap>`` when it is
  an ``OcTree`` in binary form, in the planning frame with an identity origin (as MoveIt's
  occupancy monitor publishes it); any other (a full, non-binary map, another tree type, a
  map posed elsewhere) is refused by name. A full scene replaces the map (an empty one
  clears it); a diff changes it only when it carries one.

Differences kept on purpose: an empty ``header.frame_id`` means the planning frame (as in this
package's own ``ApplyCollisionObjects``; MoveIt refuses it); removing an object keeps the
allowed-collision entries that name it (MoveIt drops them); a full scene with an empty matrix
restores the model's matrix (SRDF and adjacency) where MoveIt would allow nothing.
"""
from __future__ import annotations

import math
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from geometry_msgs.msg import Pose

from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.results import Contact, Status
from my_collision_pkg.core.errors import CollisionPkgError, ModelError, RequestError, SceneError
from my_collision_pkg.core.model.description_files import is_xacro, read_text_file
from my_collision_pkg.core.geometry.shape_geometry import build_shape
from my_collision_pkg.core.model.shapes import TriangleMesh
from my_collision_pkg.core.perception.occupancy import OccupancyMap
from my_collision_pkg.core.scene.objects import (OCTOMAP_ID, AddObject, MoveObject, ObjectShape, RemoveObject,
                                                 SceneObject, check_object_transform)
from my_collision_pkg.msg import CollisionObject as OwnCollisionObject
from my_collision_pkg.ros.conversions import collision_object_to_updates, point_msg, pose_to_transform, vector_msg

# CollisionObject.operation (moveit_msgs/msg/CollisionObject.msg). The field is a ROS ``byte``:
# the real messages carry it (and the constants) as one-byte ``bytes`` (b'\x00'); read it
# through :func:`operation_of`, never compare the raw field with these ints.
ADD, REMOVE, APPEND, MOVE = 0, 1, 2, 3
_OPERATIONS = {ADD: "ADD", REMOVE: "REMOVE", APPEND: "APPEND", MOVE: "MOVE"}
# MoveIt reserves this id for the octomap (collision_detection::OCTOMAP_NS); so does the core
OWN_ADD = OwnCollisionObject.ADD     # this package's CollisionObject, read by conversions
# A link scale this close to 1 is taken as 1 (MoveIt's own messages carry exactly 1.0).
LINK_SCALE_TOLERANCE = 1e-9
# MoveIt's JointConstraint bound slack (2 machine epsilons, kinematic_constraint.cpp).
JOINT_CONSTRAINT_SLACK = 2.0 * np.finfo(float).eps
# Poses of the same shape closer than this (per matrix entry) are the same pose: no update.
SAME_POSE_TOLERANCE = 1e-12
NOT_EVALUATED = float("nan")       # ConstraintEvalResult.distance of a constraint not evaluated


# ===== scene messages ==========================================================================
@dataclass(frozen=True)
class SceneChange:
    """One PlanningScene message as changes of this package's scene, applied by :func:`apply_scene_change`.

    Attributes
    ----------
    objects : dict of str to SceneObject
        Every object (world and attached) after the message; the scene's own objects where
        the message did not touch them.
    joint_names, positions : tuple
        Joint values to set (active joints only; mimic joints dropped).
    acm_entries, acm_defaults : tuple
        ``(name_a, name_b, allowed)`` and ``(name, allowed)``; used when ``acm_replace`` is not None.
    acm_replace : bool or None
        None: the message leaves the matrix as it is; True: the matrix becomes the model's
        (SRDF and adjacency) with these entries (MoveIt replaces the matrix whole).
    link_padding_m : dict of str to float
    fixed_frames : dict of str to (4, 4) array
        ``T_planning_frame`` of every fixed frame known after the message.
    warnings : tuple of str
        What was not mirrored or was corrected (quaternions, octomap, robot model name).
    """
    objects: dict
    joint_names: tuple = ()
    positions: tuple = ()
    acm_entries: tuple = ()
    acm_defaults: tuple = ()
    acm_replace: bool | None = None
    link_padding_m: dict = field(default_factory=dict)
    fixed_frames: dict = field(default_factory=dict)
    warnings: tuple = ()
    # the octomap: with set_occupancy, the new map (an OccupancyMap; None: cleared); without,
    # the message leaves the map as it is
    occupancy: object = None
    set_occupancy: bool = False


class _Frames:
    """Frame ids to ``T_planning_frame`` (4, 4), at joint values ``q`` and objects ``objects``."""

    def __init__(self, robot, q: np.ndarray, objects: dict, fixed_frames: dict, aliases) -> None:
        self.robot = robot
        self.q = q
        self.objects = objects
        self.fixed = fixed_frames
        self.planning = {"", robot.root_link, *aliases}
        self._links = None

    def link_poses(self) -> np.ndarray:
        if self._links is None:
            self._links = self.robot.link_transforms(np.array(self.q, dtype=float))
        return self._links

    def set_positions(self, q: np.ndarray) -> None:
        self.q = q
        self._links = None

    def link(self, link: str) -> np.ndarray:
        return self.link_poses()[self.robot.link_index(link)]

    def object_pose(self, obj: SceneObject) -> np.ndarray:
        return self.link(obj.link) @ obj.T_frame_object if obj.attached else obj.T_frame_object

    def __call__(self, frame_id: str, what: str) -> np.ndarray:
        frame = frame_id[1:] if frame_id.startswith("/") else frame_id
        if frame in self.planning:
            return np.eye(4)
        if self.robot.has_link(frame):
            return self.link(frame)
        if frame in self.objects:
            return self.object_pose(self.objects[frame])
        if frame in self.fixed:
            return self.fixed[frame]
        if "/" in frame and frame.split("/", 1)[0] in self.objects:
            raise SceneError(f"{what}: frame '{frame_id}' is a subframe; object subframes are not mirrored")
        raise SceneError(f"{what}: unknown frame '{frame_id}' (neither the planning frame '{self.robot.root_link}', "
                         "a robot link, an object nor a fixed frame)")


def planning_frame_aliases(srdf_xml: str | None, root_link: str) -> tuple[str, ...]:
    """MoveIt's names of the planning frame: the parent frames of the SRDF's fixed virtual joints on ``root_link``.

    (MoveIt's model frame is the virtual joint's parent frame; a fixed one is the root link's
    frame.) Unparsable SRDF text gives no aliases: the node's own SRDF parser reports it.
    """
    if not srdf_xml:
        return ()
    try:
        root = ET.fromstring(srdf_xml)
    except ET.ParseError:
        return ()
    aliases = []
    for joint in root.iter("virtual_joint"):
        parent = (joint.get("parent_frame") or "").lstrip("/")
        if joint.get("type") == "fixed" and joint.get("child_link") == root_link and parent:
            aliases.append(parent)
    return tuple(aliases)


def robot_state_joint_values(robot_state, robot) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The active joints' values of a ``moveit_msgs/RobotState`` (mimic joints dropped: they follow their leader).

    Raises
    ------
    RequestError
        Names and positions of different lengths, a repeated, unknown or fixed joint, a
        non-finite value, or any multi-DOF joint value (not held by this package).
    """
    multi = list(robot_state.multi_dof_joint_state.joint_names)
    if multi:
        raise RequestError(f"multi-DOF joint '{multi[0]}' in multi_dof_joint_state: multi-DOF joint values are "
                           "not supported (floating and planar joints are held at their origin)")
    joint_state = robot_state.joint_state
    names, positions = list(joint_state.name), list(joint_state.position)
    if len(names) != len(positions):
        raise RequestError(f"joint_state has {len(names)} names but {len(positions)} positions")
    out_names, out_values, seen = [], [], set()
    for name, value in zip(names, positions):
        if name in seen:
            raise RequestError(f"joint '{name}' is named twice in joint_state")
        seen.add(name)
        if robot.active_index(name) is None:
            if not robot.has_joint(name):
                raise RequestError(f"unknown joint '{name}' in joint_state")
            if robot.joint(name).mimic_of is not None:
                continue
            raise RequestError(f"joint '{name}' in joint_state is {robot.joint(name).type}, not a variable")
        if not math.isfinite(value):
            raise RequestError(f"joint '{name}' has non-finite position {value}")
        out_names.append(name)
        out_values.append(float(value))
    return tuple(out_names), tuple(out_values)


def _with_values(robot, q: np.ndarray, names, values) -> np.ndarray:
    q = np.array(q, dtype=float)
    for name, value in zip(names, values):
        q[robot.active_index(name)] = value
    return q


def _shapes_of(msg, robot, what: str, warnings: list[str]) -> tuple[ObjectShape, ...]:
    """The shapes of a moveit CollisionObject (poses in the object frame); () when it has none.

    Primitives and meshes are read as this package's own ``ApplyCollisionObjects`` reads them
    (``conversions.collision_object_to_updates`` of the same fields in the object frame).

    Raises
    ------
    SceneError
        For planes, length mismatches, bad primitives or meshes (naming the object).
    """
    if len(msg.planes):
        raise SceneError(f"{what} has {len(msg.planes)} plane(s): planes are not supported (give a thin box)")
    if len(msg.primitives) != len(msg.primitive_poses):
        raise SceneError(f"{what}: {len(msg.primitives)} primitives but {len(msg.primitive_poses)} primitive_poses")
    if len(msg.meshes) != len(msg.mesh_poses):
        raise SceneError(f"{what}: {len(msg.meshes)} meshes but {len(msg.mesh_poses)} mesh_poses")
    if len(msg.subframe_names) != len(msg.subframe_poses):
        raise SceneError(f"{what}: {len(msg.subframe_names)} subframe_names but {len(msg.subframe_poses)} "
                         "subframe_poses")
    if not (len(msg.primitives) or len(msg.meshes)):
        return ()
    in_object_frame = SimpleNamespace(header=SimpleNamespace(frame_id=""), pose=Pose(), id=msg.id, operation=OWN_ADD,
                                      primitives=msg.primitives, primitive_poses=msg.primitive_poses,
                                      meshes=msg.meshes, mesh_poses=msg.mesh_poses, touch_links=())
    (update,) = collision_object_to_updates(in_object_frame, robot, warnings)
    return tuple(update.object.shapes)


def operation_of(obj_msg) -> int:
    """The ``operation`` of a CollisionObject as an int (0..3); the field is a ROS ``byte``.

    rclpy gives a ``byte`` field as a one-byte ``bytes`` (``CollisionObject.ADD == b'\\x00'``);
    an int (or a one-byte bytearray) is accepted as well.

    Raises
    ------
    SceneError
        A value that is neither one byte nor an int.
    """
    op = obj_msg.operation
    if isinstance(op, (bytes, bytearray)):
        if len(op) != 1:
            raise SceneError(f"object '{obj_msg.id}': operation {op!r} is not one byte")
        return op[0]
    if isinstance(op, (int, np.integer)) and not isinstance(op, bool):
        return int(op)
    raise SceneError(f"object '{obj_msg.id}': operation {op!r} is neither a byte nor an int")


def _has_geometry(msg) -> bool:
    return bool(len(msg.primitives) or len(msg.meshes) or len(msg.planes))


def _pose_is_empty(pose) -> bool:
    """MoveIt's ``isEmpty(pose)``: every position and quaternion component zero."""
    p, q = pose.position, pose.orientation
    return not any((p.x, p.y, p.z, q.x, q.y, q.z, q.w))


def _object_transform(T: np.ndarray, what: str) -> np.ndarray:
    check_object_transform(T, what)
    return T


def _apply_attached(aco, objects: dict, frames: _Frames, warnings: list[str]) -> None:
    """One AttachedCollisionObject of a scene's robot state, applied to ``objects`` (MoveIt's scene meaning)."""
    robot = frames.robot
    obj_msg = aco.object
    oid, link, op = obj_msg.id, aco.link_name, operation_of(obj_msg)
    what = f"attached object '{oid}'"
    if op in (ADD, APPEND):
        if not oid:
            raise SceneError("an attached collision object needs a non-empty id")
        if oid == OCTOMAP_ID or robot.has_link(oid):
            raise SceneError(f"{what}: the id is reserved or the name of a robot link")
        if not robot.has_link(link):
            raise SceneError(f"{what}: cannot attach to unknown link '{link}'")
        for t in aco.touch_links:
            if not robot.has_link(t):
                raise SceneError(f"{what} names unknown touch link '{t}'")
        T_world_link = frames.link(link)
        old = objects.get(oid)
        in_world = old if old is not None and not old.attached else None
        if op == ADD and not _has_geometry(obj_msg):
            if in_world is None:
                raise SceneError(f"{what}: no geometry given and no world object of that id to attach")
            shapes = in_world.shapes
            T_link_object = np.linalg.inv(T_world_link) @ in_world.T_frame_object
        else:
            shapes = _shapes_of(obj_msg, robot, what, warnings)
            if not shapes:
                raise SceneError(f"{what} has no primitives and no meshes")
            T_header_object = pose_to_transform(obj_msg.pose, f"{what} pose", warnings)
            T_link_object = np.linalg.inv(T_world_link) @ frames(obj_msg.header.frame_id, what) @ T_header_object
        touch = tuple(dict.fromkeys(aco.touch_links))
        if op == APPEND and old is not None and old.attached:
            if _pose_is_empty(obj_msg.pose):
                T_link_object = old.T_frame_object
            shapes = tuple(shapes) + tuple(old.shapes)
            touch = tuple(dict.fromkeys(tuple(old.touch_links) + touch))
        objects.pop(oid, None)
        objects[oid] = SceneObject(oid, tuple(shapes), _object_transform(T_link_object, f"{what} pose"), link, touch)
        return
    if op == REMOVE:
        if oid:
            old = objects.get(oid)
            if old is None or not old.attached:
                raise SceneError(f"cannot detach '{oid}': no such attached object")
            if link and old.link != link:
                raise SceneError(f"cannot detach '{oid}' from '{link}': it is attached to '{old.link}'")
            bodies = [old]
        else:
            if link and not robot.has_link(link):
                raise SceneError(f"cannot detach objects from unknown link '{link}'")
            bodies = [o for o in objects.values() if o.attached and (not link or o.link == link)]
        for body in bodies:
            T_world_object = frames.object_pose(body)
            del objects[body.id]            # detached: back into the world at its current pose
            objects[body.id] = SceneObject(body.id, body.shapes, T_world_object)
        return
    raise SceneError(f"{what}: operation {_OPERATIONS.get(op, op)!r} is not supported for attached objects "
                     "(ADD, APPEND, REMOVE)")


def _apply_world_object(msg, objects: dict, frames: _Frames, warnings: list[str]) -> None:
    """One CollisionObject of ``world.collision_objects``, applied to ``objects`` (MoveIt's scene meaning)."""
    oid, op = msg.id, operation_of(msg)
    what = f"object '{oid}'"
    if op == REMOVE:
        if not oid:
            for k in [k for k, o in objects.items() if not o.attached]:
                del objects[k]
            return
        old = objects.get(oid)
        if old is None:
            warnings.append(f"REMOVE of object '{oid}' ignored: no such world object (MoveIt ignores it too)")
        elif not old.attached:
            del objects[oid]
        # an attached id: MoveIt's own diff of an attach (the world copy goes, the attached one stays)
        return
    if not oid:
        raise SceneError("a collision object needs a non-empty id")
    if oid == OCTOMAP_ID or frames.robot.has_link(oid):
        raise SceneError(f"{what}: the id is reserved or the name of a robot link")
    old = objects.get(oid)
    if old is not None and old.attached:
        raise SceneError(f"{what} is attached to '{old.link}': {_OPERATIONS.get(op, op)} of a world object "
                         "of the same id is refused (detach it first)")
    if op == MOVE:
        if old is None:
            raise SceneError(f"cannot move world object '{oid}': no such world object")
        T = frames(msg.header.frame_id, what) @ pose_to_transform(msg.pose, f"{what} pose", warnings)
        objects[oid] = SceneObject(oid, old.shapes, _object_transform(T, f"{what} pose"))
        return
    if op not in (ADD, APPEND):
        raise SceneError(f"{what}: unsupported operation {op!r} (ADD=0, REMOVE=1, APPEND=2, MOVE=3)")
    T_world_header = frames(msg.header.frame_id, what)
    shapes = _shapes_of(msg, frames.robot, what, warnings)
    if not shapes:
        raise SceneError(f"{what} has no primitives and no meshes")
    T = _object_transform(T_world_header @ pose_to_transform(msg.pose, f"{what} pose", warnings), f"{what} pose")
    if op == APPEND and old is not None:
        objects[oid] = SceneObject(oid, tuple(old.shapes) + shapes, T)
        return
    objects.pop(oid, None)
    objects[oid] = SceneObject(oid, shapes, T)


def acm_from_msg(acm) -> tuple[tuple, tuple]:
    """``(entries, defaults)`` of a ``moveit_msgs/AllowedCollisionMatrix``: ``(a, b, allowed)`` per pair
    (a before b in ``entry_names``) and ``(name, allowed)`` per default entry.

    Raises
    ------
    SceneError
        Lengths that do not match, a repeated name, or an entry that differs from its mirror
        (the matrix is square and symmetric).
    """
    names = list(acm.entry_names)
    rows = [list(e.enabled) for e in acm.entry_values]
    if len(rows) != len(names):
        raise SceneError(f"allowed_collision_matrix has {len(names)} entry_names but {len(rows)} entry_values")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SceneError(f"allowed_collision_matrix names '{dup}' twice")
    for i, row in enumerate(rows):
        if len(row) != len(names):
            raise SceneError(f"allowed_collision_matrix row '{names[i]}' has {len(row)} values for {len(names)} names")
    entries = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if bool(rows[i][j]) != bool(rows[j][i]):
                raise SceneError(f"allowed_collision_matrix is not symmetric for '{names[i]}' and '{names[j]}'")
            entries.append((names[i], names[j], bool(rows[i][j])))
    default_names, default_values = list(acm.default_entry_names), list(acm.default_entry_values)
    if len(default_names) != len(default_values):
        raise SceneError(f"allowed_collision_matrix has {len(default_names)} default_entry_names but "
                         f"{len(default_values)} default_entry_values")
    return tuple(entries), tuple((n, bool(v)) for n, v in zip(default_names, default_values))


def _fixed_frames_of(transforms, aliases: set[str], what: str, warnings: list[str]) -> dict:
    frames = {}
    for t in transforms:
        child = t.child_frame_id.lstrip("/")
        parent = t.header.frame_id.lstrip("/")
        if child in aliases:
            continue
        if parent not in aliases:
            raise SceneError(f"fixed frame '{child}' is given relative to '{t.header.frame_id}', not the planning "
                             "frame")
        pose = SimpleNamespace(position=t.transform.translation, orientation=t.transform.rotation)
        frames[child] = pose_to_transform(pose, f"{what} '{child}'", warnings)
    return frames


def planning_scene_change(msg, scene, *, fixed_frames: dict | None = None, aliases=()) -> SceneChange:
    """Convert a ``moveit_msgs/PlanningScene`` (full, or a diff when ``is_diff``) against ``scene`` as it is now.

    Nothing is changed; every fault is found here, before :func:`apply_scene_change`.

    Parameters
    ----------
    msg : moveit_msgs/PlanningScene (or anything with its fields)
    scene : PlanningScene
    fixed_frames : dict, optional
        Fixed frames kept from earlier messages (``T_planning_frame`` per frame id).
    aliases : sequence of str
        Other names of the planning frame (:func:`planning_frame_aliases`).

    Raises
    ------
    SceneError, RequestError
        Naming the object, link, joint or frame at fault.
    """
    robot = scene.robot
    world = scene.world
    warnings: list[str] = []
    planning = {"", robot.root_link, *aliases}
    full = not msg.is_diff
    if msg.robot_model_name and msg.robot_model_name != robot.name:
        warnings.append(f"the scene is for robot model '{msg.robot_model_name}', this node has '{robot.name}'")
    fixed = {} if full else dict(fixed_frames or {})
    fixed.update(_fixed_frames_of(msg.fixed_frame_transforms, planning, "fixed frame", warnings))
    objects = dict(world.objects)
    frames = _Frames(robot, scene.current_positions, objects, fixed, aliases)
    # robot state: joints, then attached objects (MoveIt's setCurrentState)
    state = msg.robot_state
    names, values = (), ()
    if full or len(state.joint_state.name) or len(state.multi_dof_joint_state.joint_names) \
            or len(state.attached_collision_objects):
        names, values = robot_state_joint_values(state, robot)
        frames.set_positions(_with_values(robot, scene.current_positions, names, values))
        if not state.is_diff:
            for oid in [k for k, o in objects.items() if o.attached]:
                del objects[oid]
        for aco in state.attached_collision_objects:
            if not state.is_diff and operation_of(aco.object) != ADD:
                raise SceneError(f"attached object '{aco.object.id}': a robot state that is not a diff can only ADD "
                                 "attached objects")
            _apply_attached(aco, objects, frames, warnings)
    # the allowed collision matrix (replaced whole, as MoveIt does)
    acm_replace, entries, defaults = None, (), ()
    if full or len(msg.allowed_collision_matrix.entry_names):
        entries, defaults = acm_from_msg(msg.allowed_collision_matrix)
        acm_replace = True
    padding = {}
    for lp in msg.link_padding:
        if not robot.has_link(lp.link_name):
            raise SceneError(f"link_padding names unknown link '{lp.link_name}'")
        if not (math.isfinite(lp.padding) and lp.padding >= 0):
            raise SceneError(f"link_padding of '{lp.link_name}' is {lp.padding} m; it must be finite and >= 0")
        padding[lp.link_name] = float(lp.padding)
    for ls in msg.link_scale:
        if not robot.has_link(ls.link_name):
            raise SceneError(f"link_scale names unknown link '{ls.link_name}'")
        if not abs(ls.scale - 1.0) <= LINK_SCALE_TOLERANCE:
            raise SceneError(f"link_scale of '{ls.link_name}' is {ls.scale}: link scaling is not supported "
                             "(only 1; use link_padding)")
    # world objects (the octomap is set on its own, below)
    if full:
        for oid in [k for k, o in objects.items() if not o.attached and k != OCTOMAP_ID]:
            del objects[oid]
    for co in msg.world.collision_objects:
        _apply_world_object(co, objects, frames, warnings)
    with_pose = getattr(msg.world, "octomap", None)
    octomap = getattr(with_pose, "octomap", None)
    occupancy, set_occupancy = None, full
    if octomap is not None and (octomap.id or len(octomap.data)):
        occupancy, set_occupancy = occupancy_from_octomap_msg(with_pose, frames), True
    known = set(objects)
    for name in [n for e in entries for n in e[:2]] + [d[0] for d in defaults]:
        if name not in known and not robot.has_link(name):
            raise SceneError(f"allowed_collision_matrix names '{name}', neither a robot link nor an object of the "
                             "scene")
    return SceneChange(objects, names, values, entries, defaults, acm_replace, padding, fixed, tuple(warnings),
                       occupancy, set_occupancy)


OCTREE_POSE_TOLERANCE = 1e-9     # how far an octomap's pose may be from the planning frame's


def occupancy_from_octomap_msg(with_pose, frames: "_Frames"):
    """An ``octomap_msgs/OctomapWithPose`` as an OccupancyMap (planning frame).

    Raises
    ------
    SceneError, OctomapFileError
        Naming the fault: a tree other than ``OcTree``, a full (non-binary) map, a map not in
        the planning frame (frame or origin), corrupt data.
    """
    octomap = with_pose.octomap
    what = "world.octomap"
    if octomap.id != "OcTree":
        raise SceneError(f"{what}: a '{octomap.id}' tree; only occupancy OcTrees are mirrored")
    if not octomap.binary:
        raise SceneError(f"{what}: a full (non-binary) map; only binary maps are mirrored (MoveIt's occupancy "
                         "monitor sends binary ones)")
    frame = with_pose.header.frame_id or octomap.header.frame_id
    T = frames(frame, what) @ pose_to_transform(with_pose.origin, f"{what} origin")
    if not np.allclose(T, np.eye(4), rtol=0.0, atol=OCTREE_POSE_TOLERANCE):
        raise SceneError(f"{what}: the map is posed at {np.round(T[:3, 3], 6).tolist()} (frame '{frame}', origin) "
                         "and not in the planning frame; only maps in the planning frame are mirrored")
    data = np.asarray(octomap.data, dtype=np.int8).view(np.uint8).tobytes()
    return OccupancyMap.from_binary_data(data, float(octomap.resolution), what)


def _same_spec(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, TriangleMesh):
        return (np.array_equal(a.vertices_m, b.vertices_m) and np.array_equal(a.triangles, b.triangles))
    return a == b


def _same_shapes(a: SceneObject, b: SceneObject) -> bool:
    if a.shapes is b.shapes:
        return True
    return len(a.shapes) == len(b.shapes) and all(
        _same_spec(x.spec, y.spec) and np.allclose(x.T_object_shape, y.T_object_shape, rtol=0,
                                                   atol=SAME_POSE_TOLERANCE)
        for x, y in zip(a.shapes, b.shapes))


def object_updates(current: dict, target: dict) -> list:
    """The core updates (one per id) that turn objects ``current`` into ``target``.

    An object whose shapes, link and touch links stay is moved (``MoveObject`` in its own
    frame) or left alone, so its geometry is not built again; any other change is an
    ``AddObject`` (which replaces).
    """
    updates = [RemoveObject(oid) for oid in current if oid not in target and oid != OCTOMAP_ID]
    for oid, obj in target.items():
        if oid == OCTOMAP_ID:           # set through PlanningScene.set_occupancy
            continue
        old = current.get(oid)
        if old is obj:
            continue
        if old is None or old.link != obj.link or tuple(old.touch_links) != tuple(obj.touch_links) \
                or not _same_shapes(old, obj):
            updates.append(AddObject(obj))
        elif not np.allclose(old.T_frame_object, obj.T_frame_object, rtol=0, atol=SAME_POSE_TOLERANCE):
            updates.append(MoveObject(oid, np.array(obj.T_frame_object, dtype=float)))
    return updates


def apply_scene_change(scene, change: SceneChange):
    """Apply a :class:`SceneChange` all or nothing; returns the new world.

    Objects first (one ``scene.apply``: a fault there changes nothing), then joint values and
    the allowed collision matrix (a fault there puts the objects and joint values back as they
    were before raising), then the padding, which :func:`planning_scene_change` checked by the
    core's own rules (known links, finite, >= 0) and which therefore cannot fail.

    Raises
    ------
    SceneError, RequestError, MeshError, ModelError
        As the core raises them; the scene is then as it was.
    """
    old_objects = scene.world.objects
    old_q = np.array(scene.current_positions, dtype=float)
    scene.apply(object_updates(old_objects, change.objects))
    try:
        if change.joint_names:
            scene.set_current_positions(change.joint_names, change.positions)
        if change.acm_replace is not None:
            setter = getattr(scene, "set_allowed_collisions", None)
            if setter is None:
                raise SceneError("this core cannot set allowed collisions (PlanningScene.set_allowed_collisions)")
            setter(change.acm_entries, change.acm_defaults, replace=change.acm_replace)
    except (CollisionPkgError, ValueError):
        scene.set_current_positions(scene.robot.active_joint_names, old_q)
        scene.apply(object_updates(scene.world.objects, old_objects))
        raise
    if change.link_padding_m:
        scene.set_padding(link_padding_m=change.link_padding_m)
    if change.set_occupancy:
        scene.set_occupancy(change.occupancy)
    return scene.world


# ===== GetStateValidity ========================================================================
@dataclass(frozen=True)
class StateValidity:
    """The answer to one GetStateValidity request (in core terms).

    ``valid`` is false when the state collides, is outside the joint limits, a constraint
    is not satisfied or not evaluated, or the request is malformed (``status`` INVALID_REQUEST,
    the fault in ``message``: the response has no field for it). ``constraint_results``:
    ``(satisfied, distance)`` per constraint in MoveIt's order (joint, position, orientation,
    visibility); a constraint not evaluated is ``(False, nan)``.
    """
    valid: bool
    status: Status
    message: str
    contacts: tuple[Contact, ...] = ()
    constraint_results: tuple[tuple[bool, float], ...] = ()


def _state_objects(robot_state, world, frames: _Frames, warnings: list[str]) -> dict:
    """The objects of the checked state: the scene's, with the state's attached objects
    (``robotStateMsgToRobotState``: not a diff and some joint values: the scene's attached
    objects are dropped; ADD attaches (geometry needed), REMOVE drops; never into the world).

    Raises
    ------
    SceneError
    """
    objects = dict(world.objects)
    named = len(robot_state.joint_state.name) or len(robot_state.multi_dof_joint_state.joint_names)
    if not robot_state.is_diff and named:
        for oid in [k for k, o in objects.items() if o.attached]:
            del objects[oid]
    robot = frames.robot
    for aco in robot_state.attached_collision_objects:
        obj_msg = aco.object
        oid, op = obj_msg.id, operation_of(obj_msg)
        what = f"attached object '{oid}'"
        if op == REMOVE:
            old = objects.get(oid)
            if old is None or not old.attached:
                raise SceneError(f"cannot remove {what}: the state has no such attached object")
            del objects[oid]
            continue
        if op != ADD:
            raise SceneError(f"{what}: operation {_OPERATIONS.get(op, op)!r} in a robot state (ADD, REMOVE)")
        if not oid or robot.has_link(oid):
            raise SceneError(f"{what}: needs a non-empty id that is not a robot link")
        if not robot.has_link(aco.link_name):
            raise SceneError(f"{what}: cannot attach to unknown link '{aco.link_name}'")
        for t in aco.touch_links:
            if not robot.has_link(t):
                raise SceneError(f"{what} names unknown touch link '{t}'")
        old = objects.get(oid)
        if old is not None and not old.attached:
            raise SceneError(f"{what}: the scene has a world object of that id; give the attached copy another id")
        if not _has_geometry(obj_msg):
            raise SceneError(f"{what}: no geometry (a robot state's attached objects carry their shapes)")
        shapes = _shapes_of(obj_msg, robot, what, warnings)
        T_link_object = (np.linalg.inv(frames.link(aco.link_name)) @ frames(obj_msg.header.frame_id, what)
                         @ pose_to_transform(obj_msg.pose, f"{what} pose", warnings))
        objects.pop(oid, None)
        objects[oid] = SceneObject(oid, shapes, _object_transform(T_link_object, f"{what} pose"), aco.link_name,
                                   tuple(dict.fromkeys(aco.touch_links)))
    return objects


def world_with_objects(scene, world, objects: dict):
    """A snapshot like ``world`` holding ``objects`` (the scene is not changed; new objects' geometry is built).

    Raises
    ------
    SceneError, MeshError
        For an object that cannot be built.
    """
    if objects.keys() == world.objects.keys() and all(objects[k] is world.objects[k] for k in objects):
        return world
    old = world.objects
    kept = {k: o for k, o in old.items() if objects.get(k) is o}
    fresh = {k: o for k, o in objects.items() if old.get(k) is not o}
    new_objects, geometry = dict(kept), {k: world.object_geometry[k] for k in kept}
    for oid, obj in fresh.items():
        previous = old.get(oid)
        if previous is not None and _same_shapes(previous, obj):
            geometry[oid] = world.object_geometry[oid]
        else:
            geoms = []
            for k, shape in enumerate(obj.shapes):
                check_object_transform(shape.T_object_shape, f"object '{oid}' shape {k} pose")
                try:
                    geoms.append(build_shape(shape.spec, oid, scene.resolver))
                except ModelError as exc:
                    if type(exc) is ModelError:
                        raise SceneError(f"object '{oid}' shape {k}: {exc}") from exc
                    raise
            geometry[oid] = tuple(geoms)
        new_objects[oid] = obj
    touched = set(fresh) | (set(old) - set(objects))
    return world.with_objects(new_objects, geometry, touched, set(fresh))


def _joint_constraint_results(constraints, robot, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """(N, C) satisfied, (N, C) distances of the joint constraints at configurations Q (N, A), and a fault or ''."""
    items = list(constraints.joint_constraints)
    ok = np.ones((len(Q), len(items)), dtype=bool)
    dist = np.zeros((len(Q), len(items)))
    fault = ""
    for c, jc in enumerate(items):
        index = robot.active_index(jc.joint_name)
        if index is None:
            ok[:, c], dist[:, c] = False, NOT_EVALUATED
            fault = fault or f"joint constraint {c}: '{jc.joint_name}' is not an active joint of the robot"
            continue
        diff = Q[:, index] - float(jc.position)
        if robot.joint(jc.joint_name).type == "continuous":
            diff = (diff + math.pi) % (2.0 * math.pi) - math.pi
        above, below = abs(float(jc.tolerance_above)), abs(float(jc.tolerance_below))
        ok[:, c] = (diff <= above + JOINT_CONSTRAINT_SLACK) & (diff >= -below - JOINT_CONSTRAINT_SLACK)
        dist[:, c] = float(jc.weight) * np.abs(diff)
    return ok, dist, fault


def _other_constraints(constraints) -> tuple[int, str]:
    counts = [(kind, len(getattr(constraints, f"{kind}_constraints")))
              for kind in ("position", "orientation", "visibility")]
    n = sum(count for _, count in counts)
    text = ", ".join(f"{count} {kind}" for kind, count in counts if count)
    return n, (f"{text} constraint(s) not evaluated (only joint constraints are)" if n else "")


def _state_configurations(checker, robot_state, joint_states=None):
    """(names, values) of the base state and, for the multi-state service, the complete
    configurations (N, A) of each joint state applied in turn on top of it (MoveIt's
    ``setVariableValues`` on one state: joints not named keep the previous state's value)."""
    robot = checker.scene.robot
    names, values = robot_state_joint_values(robot_state, robot)
    q0 = _with_values(robot, checker.scene.current_positions, names, values)
    if joint_states is None:
        return names, values, q0[None, :]
    rows, q = [], q0
    for k, js in enumerate(joint_states):
        state = SimpleNamespace(joint_state=js, multi_dof_joint_state=SimpleNamespace(joint_names=()))
        try:
            n, v = robot_state_joint_values(state, robot)
        except RequestError as exc:
            raise RequestError(f"joint_states[{k}]: {exc}") from exc
        q = _with_values(robot, q, n, v)
        rows.append(q)
    return names, values, np.array(rows, dtype=float).reshape(len(rows), len(q0))


def evaluate_state_validity(checker, request, *, fixed_frames: dict | None = None, aliases=(),
                            joint_states=None) -> StateValidity:
    """Answer a GetStateValidity request (or, with ``joint_states``, a GetMultiStateValidity one).

    The state: the scene's current joint values with the request's ``robot_state`` on top
    (``is_diff``: see :func:`_state_objects`), its attached objects on a temporary snapshot
    (the scene is not changed). ``group_name`` restricts the checked bodies. The verdict is
    the checker's (joint limits included, as the node's ``check_validity``); contacts are
    explain's. With ``joint_states`` each is applied in turn and checked, stopping at the
    first invalid one; the answer is that state's (or the last one's).
    """
    scene = checker.scene
    world = scene.world
    robot = scene.robot
    warnings: list[str] = []
    try:
        names, values, Q = _state_configurations(checker, request.robot_state, joint_states)
        frames = _Frames(robot, Q[0] if joint_states is None else
                         _with_values(robot, scene.current_positions, names, values), world.objects,
                         fixed_frames or {}, aliases)
        objects = _state_objects(request.robot_state, world, frames, warnings)
        state_world = world_with_objects(scene, world, objects)
    except CollisionPkgError as exc:
        return StateValidity(False, Status.INVALID_REQUEST, str(exc))
    if not len(Q):
        return StateValidity(False, Status.INVALID_REQUEST, "joint_states is empty")
    check_request = CheckRequest(group_name=request.group_name, world=state_world)
    all_names = robot.active_joint_names
    constraint_ok, constraint_dist, fault = _joint_constraint_results(request.constraints, robot, Q)
    n_other, not_evaluated = _other_constraints(request.constraints)
    if joint_states is None:
        verdicts = [checker.check(all_names, Q[0], request=check_request)]
        index = 0
    else:
        valid, verdict = checker.check_batch(all_names, Q, request=check_request)
        if verdict.status == Status.INVALID_REQUEST:
            return StateValidity(False, verdict.status, verdict.message)
        state_ok = valid & constraint_ok.all(axis=1) & (n_other == 0)
        index = int(np.flatnonzero(~state_ok)[0]) if not state_ok.all() else len(Q) - 1
        verdicts = [checker.check(all_names, Q[index], request=check_request)]
    verdict = verdicts[0]
    results = tuple((bool(ok), float(d)) for ok, d in zip(constraint_ok[index], constraint_dist[index]))
    results += ((False, NOT_EVALUATED),) * n_other
    if verdict.status == Status.INVALID_REQUEST:
        return StateValidity(False, verdict.status, verdict.message, (), results)
    contacts = ()
    if verdict.status == Status.IN_COLLISION:
        contacts = checker.explain(all_names, Q[index], request=check_request).contacts
    messages = [verdict.message] + [m for m in (fault, not_evaluated) if m] + warnings
    if joint_states is not None:
        messages.insert(0, f"state {index} of {len(Q)}")
    valid = bool(verdict.valid and all(ok for ok, _ in results))
    return StateValidity(valid, verdict.status, "; ".join(messages), tuple(contacts), results)


def contact_information(contact: Contact, contact_type, planning_frame: str, stamp=None):
    """A ``moveit_msgs/ContactInformation`` (``contact_type``) of a contact: positive ``depth`` for
    penetration (``-distance``), MoveIt's body types, the planning frame."""
    msg = contact_type()
    msg.header.frame_id = planning_frame
    if stamp is not None:
        msg.header.stamp = stamp
    msg.position = point_msg(contact.position)
    msg.normal = vector_msg(contact.normal)
    msg.depth = float(-contact.distance)
    msg.contact_body_1, msg.contact_body_2 = contact.link_names
    msg.body_type_1, msg.body_type_2 = (int(t) for t in contact.body_types)
    return msg


def fill_state_validity_response(response, result: StateValidity, *, contact_type, constraint_result_type,
                                 planning_frame: str, stamp=None):
    """Copy a :class:`StateValidity` into a GetStateValidity (or GetMultiStateValidity) response.

    ``cost_sources`` stays empty.
    """
    response.valid = bool(result.valid)
    response.contacts = [contact_information(c, contact_type, planning_frame, stamp) for c in result.contacts]
    results = []
    for ok, distance in result.constraint_results:
        r = constraint_result_type()
        r.result, r.distance = bool(ok), float(distance)
        results.append(r)
    response.constraint_result = results
    return response


class SceneMirror:
    """Applies PlanningScene messages to a scene one at a time, all or nothing, keeping the fixed frames.

    Parameters
    ----------
    scene : PlanningScene
    aliases : sequence of str
        MoveIt's names of the planning frame (:func:`planning_frame_aliases`).
    warn : callable
        ``warn(line)`` for each refusal (one line naming the fault) and each warning.
    on_change : callable, optional
        ``on_change(world)`` after a message was applied.
    """

    def __init__(self, scene, aliases=(), *, warn, on_change=None) -> None:
        self._scene = scene
        self.aliases = tuple(aliases)
        self._warn = warn
        self._on_change = on_change
        self._lock = threading.Lock()
        self.fixed_frames: dict = {}
        self.applied = 0
        self.refused = 0

    def apply(self, msg, source: str) -> bool:
        """Apply one message; True if applied, else one warning line and the scene unchanged."""
        with self._lock:
            try:
                change = planning_scene_change(msg, self._scene, fixed_frames=self.fixed_frames, aliases=self.aliases)
                world = apply_scene_change(self._scene, change)
            except CollisionPkgError as exc:
                self.refused += 1
                self._warn(f"{source}: planning scene {'diff' if msg.is_diff else 'message'} refused, scene "
                           f"unchanged: {exc}")
                return False
            self.fixed_frames = change.fixed_frames
            self.applied += 1
        for warning in change.warnings:
            self._warn(f"{source}: {warning}")
        if self._on_change is not None:
            self._on_change(world)
        return True


# ===== the node half ===========================================================================
COMPAT_CHOICES = ("auto", "true", "false")
SERVICE_NAME = "check_state_validity"
MULTI_SERVICE_NAME = "check_multi_state_validity"
PULL_TIMEOUT_S = 10.0              # how long the start-up pull waits for the service and its answer
PULL_POLL_S = 0.25
SCENE_QUEUE_DEPTH = 100            # move_group publishes its scene with depth 100: a dropped diff breaks the mirror
# every component of a GetPlanningScene request (PlanningSceneComponents.msg)
ALL_COMPONENTS = 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128 | 256 | 512


def declare_moveit_parameters(node) -> None:
    """Declare the bridge's parameters on ``node`` (read-only)."""
    from rcl_interfaces.msg import ParameterDescriptor, ParameterType
    s = ParameterType.PARAMETER_STRING
    # dynamic typing: ``moveit_compat:=true`` on a command line arrives as a bool
    node.declare_parameter("moveit_compat", "auto", ParameterDescriptor(
        description="MoveIt bridge: auto (on when moveit_msgs imports), true (required), false (off)",
        dynamic_typing=True, read_only=True))
    node.declare_parameter("moveit_global_names", False, ParameterDescriptor(
        description="serve /check_state_validity instead of ~/check_state_validity (move_group owns the global name)",
        dynamic_typing=True, read_only=True))
    node.declare_parameter("planning_scene_topic", "", ParameterDescriptor(
        description="moveit_msgs/PlanningScene topic mirrored into the scene (e.g. /monitored_planning_scene; "
                    "empty: off)", type=s, read_only=True))
    node.declare_parameter("planning_scene_service", "", ParameterDescriptor(
        description="GetPlanningScene service pulled once at start-up (e.g. /get_planning_scene; empty: off)",
        type=s, read_only=True))


def read_moveit_parameters(node) -> dict:
    """The bridge's parameters, checked.

    Raises
    ------
    ConfigurationError
        Naming the parameter with a bad value, or ``moveit_compat`` true where moveit_msgs
        cannot be imported (checked here, before the scene is loaded, so that start-up
        ends at once).
    """
    from my_collision_pkg.ros.runtime import ConfigurationError, check_bool
    compat = node.get_parameter("moveit_compat").value
    if isinstance(compat, bool):
        compat = "true" if compat else "false"
    if not isinstance(compat, str) or compat not in COMPAT_CHOICES:
        raise ConfigurationError(f"parameter 'moveit_compat' must be one of {', '.join(COMPAT_CHOICES)}, "
                                 f"got {compat!r}")
    if compat == "true" and import_moveit_msgs() is None:
        raise ConfigurationError(MOVEIT_REQUIRED_MISSING)
    p = {"moveit_compat": compat,
         "moveit_global_names": check_bool("moveit_global_names", node.get_parameter("moveit_global_names").value)}
    for name in ("planning_scene_topic", "planning_scene_service"):
        p[name] = node.get_parameter(name).value or ""
    return p


MOVEIT_REQUIRED_MISSING = ("moveit_compat is true but moveit_msgs cannot be imported (source a ROS install that "
                           "has moveit_msgs)")


def import_moveit_msgs():
    """``(moveit_msgs.msg, moveit_msgs.srv)``, or None where moveit_msgs is not importable."""
    try:
        import moveit_msgs.msg
        import moveit_msgs.srv
    except ImportError:
        return None
    return moveit_msgs.msg, moveit_msgs.srv


def attach_moveit_bridge(node, parameters: dict) -> "MoveItBridge | None":
    """The bridge on ``node`` (a validator node with ``scene``, ``checker``, ``callback_guard``), or None.

    ``moveit_compat`` false: None. Without moveit_msgs: ``auto`` logs one line and gives None;
    ``true`` raises.

    Raises
    ------
    ConfigurationError
        ``moveit_compat`` true and moveit_msgs not importable (one line).
    """
    from my_collision_pkg.ros.runtime import ConfigurationError
    compat = parameters["moveit_compat"]
    if compat == "false":
        return None
    modules = import_moveit_msgs()
    if modules is None:
        if compat == "true":
            raise ConfigurationError(MOVEIT_REQUIRED_MISSING)
        node.get_logger().info("moveit_msgs is not importable: MoveIt bridge off (~/check_state_validity, scene "
                               "mirror); set moveit_compat false to silence this")
        return None
    return MoveItBridge(node, parameters, *modules)


def _srdf_text(node) -> str:
    for name, is_path in (("robot_description_semantic", False), ("srdf_path", True)):
        if node.has_parameter(name):
            value = node.get_parameter(name).value or ""
            if value and is_path and not is_xacro(value):
                return read_text_file(value, "SRDF")     # bounded; the scene has read it already
            if value and not is_path:
                return value
    return ""


class MoveItBridge:
    """The MoveIt side of a validator node: GetStateValidity (and GetMultiStateValidity), the scene mirror.

    Parameters
    ----------
    node : rclpy Node
        With ``scene``, ``checker`` and ``callback_guard`` (the validator node).
    parameters : dict
        As :func:`read_moveit_parameters` gives.
    msg, srv : modules
        ``moveit_msgs.msg`` and ``moveit_msgs.srv``.
    """

    def __init__(self, node, parameters: dict, msg, srv) -> None:
        from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        from my_collision_pkg.ros.qos import SERVICE_QOS
        self._node = node
        self._msg, self._srv = msg, srv
        self._log = node.get_logger()
        robot = node.scene.robot
        self.aliases = planning_frame_aliases(_srdf_text(node), robot.root_link)
        self.planning_frame = self.aliases[0] if self.aliases else robot.root_link
        self.mirror = SceneMirror(node.scene, self.aliases, warn=self._log.warning,
                                  on_change=getattr(node, "publish_scene_objects", None))   # ~/scene_objects
        prefix = "/" if parameters["moveit_global_names"] else "~/"
        guard = node.callback_guard
        checks = ReentrantCallbackGroup()
        self.services = [prefix + SERVICE_NAME]
        node.create_service(srv.GetStateValidity, prefix + SERVICE_NAME,
                            guard.service(self._on_check_state_validity, srv.GetStateValidity),
                            qos_profile=SERVICE_QOS, callback_group=checks)
        multi = getattr(srv, "GetMultiStateValidity", None)
        if multi is not None:
            node.create_service(multi, prefix + MULTI_SERVICE_NAME, guard.service(self._on_check_multi, multi),
                                qos_profile=SERVICE_QOS, callback_group=checks)
            self.services.append(prefix + MULTI_SERVICE_NAME)
        mirror = MutuallyExclusiveCallbackGroup()
        self.topic = parameters["planning_scene_topic"]
        if self.topic:
            qos = QoSProfile(depth=SCENE_QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)
            node.create_subscription(msg.PlanningScene, self.topic, guard.timer(self._on_planning_scene), qos,
                                     callback_group=mirror)
        self._pull = None
        if parameters["planning_scene_service"]:
            self._start_pull(parameters["planning_scene_service"], mirror)
        self._log.info(f"MoveIt bridge: {', '.join(self.services)}; planning scene topic "
                       f"{self.topic or 'off'}; start-up pull {parameters['planning_scene_service'] or 'off'}; "
                       f"planning frame '{self.planning_frame}'"
                       + ("" if multi is not None else "; this moveit_msgs has no GetMultiStateValidity"))

    # ----- GetStateValidity ---------------------------------------------------------------
    def _answer(self, request, response, joint_states=None):
        result = evaluate_state_validity(self._node.checker, request, fixed_frames=self.mirror.fixed_frames,
                                         aliases=self.aliases, joint_states=joint_states)
        if result.status == Status.INVALID_REQUEST or any(math.isnan(d) for _, d in result.constraint_results):
            self._log.warning(f"check_state_validity: {result.message}")
        stamp = self._node.get_clock().now().to_msg()
        return fill_state_validity_response(response, result, contact_type=self._msg.ContactInformation,
                                            constraint_result_type=self._msg.ConstraintEvalResult,
                                            planning_frame=self.planning_frame, stamp=stamp)

    def _on_check_state_validity(self, request, response):
        return self._answer(request, response)

    def _on_check_multi(self, request, response):
        return self._answer(request, response, joint_states=list(request.joint_states))

    # ----- the mirror ---------------------------------------------------------------------
    def _on_planning_scene(self, msg) -> None:
        self.mirror.apply(msg, self.topic)

    def _start_pull(self, service: str, group) -> None:
        client = self._node.create_client(self._srv.GetPlanningScene, service, callback_group=group)
        state = {"client": client, "future": None, "waited": 0.0, "service": service}
        self._pull = state
        state["timer"] = self._node.create_timer(PULL_POLL_S, self._node.callback_guard.timer(self._poll_pull),
                                                 callback_group=group)

    def _poll_pull(self) -> None:
        """Never blocks: asks once the service is there, applies the answer when it comes, gives up at the timeout."""
        state = self._pull
        state["waited"] += PULL_POLL_S
        future = state["future"]
        if future is None:
            if state["client"].service_is_ready():
                request = self._srv.GetPlanningScene.Request()
                request.components.components = ALL_COMPONENTS
                state["future"] = state["client"].call_async(request)
                state["waited"] = 0.0
            elif state["waited"] >= PULL_TIMEOUT_S:
                self._end_pull(f"{state['service']} not available after {PULL_TIMEOUT_S:g} s: no start-up scene "
                               "(the mirror waits for the topic)")
            return
        if future.done():
            exc = future.exception()
            if exc is not None:
                self._end_pull(f"{state['service']} failed: {exc}")
                return
            self._end_pull(None)
            self.mirror.apply(future.result().scene, state["service"])
        elif state["waited"] >= PULL_TIMEOUT_S:
            future.cancel()
            self._end_pull(f"{state['service']} did not answer within {PULL_TIMEOUT_S:g} s: no start-up scene")

    def _end_pull(self, warning: str | None) -> None:
        state = self._pull
        state["timer"].cancel()
        if warning:
            self._log.warning(warning)
