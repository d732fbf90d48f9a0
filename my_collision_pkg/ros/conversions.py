"""The one place where core objects and ROS messages meet.

Everything here is a pure function (no node, no I/O). Message constants and
core enums share their values (see ``core/checks/results.py`` and the ``.msg`` files).
The geometry builders (:func:`point_msg`, :func:`vector_msg`, :func:`transform_to_pose`) serve
the marker modules too.
"""
from __future__ import annotations

import array
import contextlib
import gc

import numpy as np
from geometry_msgs.msg import Point, Pose, Vector3
from sensor_msgs.msg import JointState, PointCloud2, PointField
from std_msgs.msg import ColorRGBA
from shape_msgs.msg import SolidPrimitive
from trajectory_msgs.msg import JointTrajectory

from my_collision_pkg.msg import AllowedCollisionDefault, AllowedCollisionEntry
from my_collision_pkg.msg import Clearance as ClearanceMsg
from my_collision_pkg.msg import CollisionObject as CollisionObjectMsg
from my_collision_pkg.msg import Contact as ContactMsg
from my_collision_pkg.msg import ContactInterval as ContactIntervalMsg
from my_collision_pkg.msg import ContactList as ContactListMsg
from my_collision_pkg.msg import ContactReport
from my_collision_pkg.msg import ContactSurface as ContactSurfaceMsg

from my_collision_pkg.core.checks.results import Clearance
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.contact_list import NS_PER_S, ContactInterval, ContactList, seconds_from_ns
from my_collision_pkg.core.checks.results import Contact, Explanation, Status
from my_collision_pkg.core.errors import RequestError, SceneError
from my_collision_pkg.core.checks.results import MotionResult, TrajectoryResult
from my_collision_pkg.core.model.robot_model import Box, Cone, Cylinder, RobotModel, Sphere, TriangleMesh
from my_collision_pkg.core.scene.planning_scene import (AddObject, ClearObjects, MoveObject, ObjectShape, RemoveObject, SceneObject, SceneUpdate,
                    check_unambiguous)
from my_collision_pkg.core.model.shapes import MAX_MESH_TRIANGLES
from my_collision_pkg.core.model.transforms import make_transform, matrix_to_quaternion, quaternion_to_matrix
from my_collision_pkg.core.perception.point_cloud import FLOAT32, encode_point_cloud

# A pose quaternion whose norm differs from 1 by more than this is normalised with a
# warning in the answer (MoveIt warns likewise); closer ones are normalised silently.
QUATERNION_NORM_TOLERANCE = 1e-3
SECONDS_PER_NS = 1.0 / NS_PER_S         # the same float as 1e-9


# ----- geometry ------------------------------------------------------------------
def check_request_from_msg(request, world) -> CheckRequest:
    """The core's request object from a service request of this package, checked against ``world``.

    Every check service's request has ``group_name`` and the two padding switches; explain
    and check_motion also have ``contact_distance`` and ``max_contacts`` (0: the node's own
    budget).
    """
    return CheckRequest(group_name=request.group_name,
                        pad_environment_collisions=request.pad_environment_collisions,
                        pad_self_collisions=request.pad_self_collisions,
                        contact_distance=getattr(request, "contact_distance", 0.0),
                        max_contacts=getattr(request, "max_contacts", 0) or None, world=world)


def point_msg(p) -> Point:
    """A geometry_msgs/Point of a 3-sequence (metres, in whatever frame the caller means)."""
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def vector_msg(v) -> Vector3:
    """A geometry_msgs/Vector3 of a 3-sequence."""
    return Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def pose_to_transform(pose: Pose, what: str, warnings: list[str] | None = None) -> np.ndarray:
    """4x4 transform of a Pose.

    A zero quaternion is taken as the identity and a non-unit one is normalised, each
    with a line appended to ``warnings`` (when given), as MoveIt does. Position bounds
    are the scene's (see ``core.scene.objects.check_object_transform``).

    Raises
    ------
    SceneError
        For non-finite values or a quaternion whose norm is not finite (e.g. 1e200).
    """
    p, q = pose.position, pose.orientation
    position = np.array([p.x, p.y, p.z], dtype=float)
    quat = np.array([q.x, q.y, q.z, q.w], dtype=float)
    if not (np.all(np.isfinite(position)) and np.all(np.isfinite(quat))):
        raise SceneError(f"{what} has non-finite values")
    with np.errstate(over="ignore"):
        norm = float(np.sqrt(np.sum(quat * quat)))
    if not np.isfinite(norm):
        raise SceneError(f"{what} orientation {[float(v) for v in quat]} has a norm that is not finite; "
                         "give a unit quaternion")
    if norm < 1e-12:
        quat = np.array([0.0, 0.0, 0.0, 1.0])
        if warnings is not None:
            warnings.append(f"{what} has a zero quaternion, taken as the identity")
    elif abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        if warnings is not None:
            warnings.append(f"{what} quaternion of norm {norm:.6g} normalised")
    unit = quat / norm if norm >= 1e-12 else quat
    return make_transform(quaternion_to_matrix(unit), position)


# ----- joint states -------------------------------------------------------------
def joint_state_msg(joint_names, positions, stamp=None) -> JointState:
    msg = JointState()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.name = list(joint_names)
    msg.position = [float(v) for v in positions]
    return msg


# ----- contacts -------------------------------------------------------------------
def contact_to_msg(contact: Contact) -> ContactMsg:
    msg = ContactMsg()
    msg.type = int(contact.type)
    msg.link_names = list(contact.link_names)
    msg.body_types = [int(t) for t in contact.body_types]
    msg.shape_ids = [int(s) for s in contact.shape_ids]
    msg.subshape_ids = [int(s) for s in contact.subshape_ids]
    msg.position = point_msg(contact.position)
    msg.nearest_points = [point_msg(p) for p in contact.nearest_points]
    msg.nearest_points_local = [point_msg(p) for p in contact.nearest_points_local]
    msg.normal = vector_msg(contact.normal)
    msg.distance = float(contact.distance)
    msg.penetration_depth = float(contact.penetration_depth)
    msg.single_contact_point = bool(contact.single_contact_point)
    msg.depth_rule = str(contact.depth_rule)
    msg.depth_is_fallback = bool(contact.depth_is_fallback)
    fill_contact_motion_fields(msg, contact)
    return msg


def surface_to_msg(surface) -> ContactSurfaceMsg:
    """A :class:`core.surfaces.explanation_surfaces.ContactSurface` as a message."""
    patch = surface.patch
    msg = ContactSurfaceMsg()
    msg.body_names = list(surface.body_names)
    msg.shape_ids = [int(s) for s in surface.shape_ids]
    msg.body_types = [int(t) for t in surface.body_types]
    msg.centroid = point_msg(patch.centroid_world)
    msg.force = vector_msg(patch.force_world_n)
    msg.moment = vector_msg(patch.moment_world_nm)
    msg.vertices = [point_msg(v) for v in patch.vertices_world]
    msg.pressure = [float(p) for p in patch.pressure_pa]
    msg.triangles = [int(i) for i in np.asarray(patch.triangles).ravel()]
    msg.area = float(patch.area_m2)
    return msg


def fill_explain_response(response, explanation: Explanation, surfaces=(), stamp=None):
    """Copy an explanation (and contact surfaces) into an ExplainCollision response."""
    response.valid = bool(explanation.valid)
    response.status = int(explanation.status)
    response.message = explanation.message
    response.colliding_links = list(explanation.colliding_links)
    response.contacts = [contact_to_msg(c) for c in explanation.contacts]
    response.surfaces = [surface_to_msg(s) for s in surfaces]
    response.state = joint_state_msg(explanation.joint_names, explanation.positions, stamp)
    return response


def contact_report(explanation: Explanation | MotionResult, planning_frame: str, stamp, surfaces=()) -> ContactReport:
    """The ContactReport of a checked state: an explanation, or a motion's first-contact state
    (the motion's start when it is valid)."""
    report = ContactReport()
    report.header.frame_id = planning_frame
    report.header.stamp = stamp
    report.state = joint_state_msg(explanation.joint_names, explanation.positions, stamp)
    report.valid = bool(explanation.valid)
    report.contacts = [contact_to_msg(c) for c in explanation.contacts]
    report.surfaces = [surface_to_msg(s) for s in surfaces]
    return report


# ----- collision objects ------------------------------------------------------------
def _primitive_spec(primitive: SolidPrimitive, what: str):
    dims = [float(d) for d in primitive.dimensions]
    kinds = {SolidPrimitive.BOX: ("box", 3), SolidPrimitive.SPHERE: ("sphere", 1),
             SolidPrimitive.CYLINDER: ("cylinder", 2), SolidPrimitive.CONE: ("cone", 2)}
    if primitive.type not in kinds:
        raise SceneError(f"{what} has unsupported primitive type {primitive.type} (box, sphere, cylinder, cone)")
    name, count = kinds[primitive.type]
    if len(dims) < count:
        raise SceneError(f"{what} ({name}) needs {count} dimensions, got {len(dims)}")
    if not all(np.isfinite(d) and d > 0 for d in dims[:count]):
        raise SceneError(f"{what} ({name}) has dimensions {dims[:count]}; each must be finite and positive")
    if primitive.type == SolidPrimitive.BOX:
        return Box((dims[SolidPrimitive.BOX_X], dims[SolidPrimitive.BOX_Y], dims[SolidPrimitive.BOX_Z]))
    if primitive.type == SolidPrimitive.SPHERE:
        return Sphere(dims[SolidPrimitive.SPHERE_RADIUS])
    if primitive.type == SolidPrimitive.CYLINDER:
        return Cylinder(dims[SolidPrimitive.CYLINDER_RADIUS], dims[SolidPrimitive.CYLINDER_HEIGHT])
    return Cone(dims[SolidPrimitive.CONE_RADIUS], dims[SolidPrimitive.CONE_HEIGHT])


def _mesh_spec(mesh, what: str) -> TriangleMesh:
    if len(mesh.triangles) > MAX_MESH_TRIANGLES:
        raise SceneError(f"{what} has {len(mesh.triangles)} triangles, more than the bound of {MAX_MESH_TRIANGLES} "
                         "(MAX_MESH_TRIANGLES); simplify it")
    vertices = np.array([[v.x, v.y, v.z] for v in mesh.vertices], dtype=float).reshape(-1, 3)
    triangles = np.array([list(t.vertex_indices) for t in mesh.triangles], dtype=np.int64).reshape(-1, 3)
    if len(triangles) == 0 or not np.all(np.isfinite(vertices)):
        raise SceneError(f"{what} needs finite vertices and at least one triangle")
    if triangles.max() >= len(vertices):
        raise SceneError(f"{what} has a triangle that indexes a vertex that does not exist")
    return TriangleMesh(vertices, triangles)


def collision_objects_to_updates(msgs, robot: RobotModel) -> tuple[list[SceneUpdate], list[str]]:
    """Scene updates and warnings for the objects of one ApplyCollisionObjects request.

    Raises
    ------
    SceneError
        As :func:`collision_object_to_updates`, or when an id appears twice or a
        REMOVE-all is not first (see ``scene.check_unambiguous``).
    """
    updates: list[SceneUpdate] = []
    warnings: list[str] = []
    for msg in msgs:
        updates.extend(collision_object_to_updates(msg, robot, warnings))
    check_unambiguous(updates)
    return updates, warnings


def collision_object_to_updates(msg: CollisionObjectMsg, robot: RobotModel,
                                warnings: list[str] | None = None) -> list[SceneUpdate]:
    """Scene updates for one CollisionObject message (MoveIt's meaning of the fields).

    Quaternion warnings (see :func:`pose_to_transform`) are appended to ``warnings``.

    ``header.frame_id`` empty or the planning frame: a world object; another robot
    link: an object attached to that link (poses in the link frame). ADD replaces
    an object of the same id; REMOVE with an empty id removes every world object.
    MOVE: the pose is in ``header.frame_id`` (empty: the planning frame) as for ADD,
    taken at the scene's current joint positions and converted into the object's own
    frame; a MOVE never attaches or detaches (see ``core.scene.objects.MoveObject``).

    Raises
    ------
    SceneError
        Naming the object and the fault (unknown frame or operation, length
        mismatches, bad sizes or poses).
    """
    oid = msg.id
    name = f"object '{oid}'"
    operation = msg.operation
    if operation == CollisionObjectMsg.REMOVE:
        return [RemoveObject(oid)] if oid else [ClearObjects()]
    if not oid:
        raise SceneError("a collision object needs a non-empty id")
    frame = msg.header.frame_id
    link = None
    if frame not in ("", robot.root_link):
        if not robot.has_link(frame):
            raise SceneError(f"{name}: frame '{frame}' is neither the planning frame '{robot.root_link}' "
                             "nor a robot link")
        link = frame
    T_frame_object = pose_to_transform(msg.pose, f"{name} pose", warnings)
    if operation == CollisionObjectMsg.MOVE:
        return [MoveObject(oid, T_frame_object, link or robot.root_link)]
    if operation != CollisionObjectMsg.ADD:
        raise SceneError(f"{name}: unsupported operation {operation!r} (ADD=0, REMOVE=1, MOVE=3)")
    if len(msg.primitives) != len(msg.primitive_poses):
        raise SceneError(f"{name}: {len(msg.primitives)} primitives but {len(msg.primitive_poses)} primitive_poses")
    if len(msg.meshes) != len(msg.mesh_poses):
        raise SceneError(f"{name}: {len(msg.meshes)} meshes but {len(msg.mesh_poses)} mesh_poses")
    shapes = []
    for k, (primitive, pose) in enumerate(zip(msg.primitives, msg.primitive_poses)):
        where = f"{name} primitive {k}"
        shapes.append(ObjectShape(_primitive_spec(primitive, where),
                                  pose_to_transform(pose, f"{where} pose", warnings)))
    for k, (mesh, pose) in enumerate(zip(msg.meshes, msg.mesh_poses)):
        where = f"{name} mesh {k}"
        shapes.append(ObjectShape(_mesh_spec(mesh, where), pose_to_transform(pose, f"{where} pose", warnings)))
    if not shapes:
        raise SceneError(f"{name} has no primitives and no meshes")
    return [AddObject(SceneObject(oid, tuple(shapes), T_frame_object, link, tuple(msg.touch_links)))]


# ----- motions and trajectories ---------------------------------------------------------
# (CheckMotion, CheckTrajectory, ContactList; core side in core/checks/motion.py and contact_list.py)
def transform_to_pose(T_world_frame: np.ndarray) -> Pose:
    """A Pose of a 4x4 homogeneous transform (the frame's pose in the world)."""
    T = np.asarray(T_world_frame, dtype=float)
    q = matrix_to_quaternion(T[:3, :3])
    pose = Pose()
    pose.position = point_msg(T[:3, 3])
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = (float(v) for v in q)
    return pose


def fill_contact_motion_fields(msg: ContactMsg, contact: Contact) -> ContactMsg:
    """Copy a contact's ``transforms`` and ``cc_*`` fields into its message (identity poses where unset)."""
    if contact.transforms is not None:
        msg.transforms = [transform_to_pose(T) for T in contact.transforms]
    msg.cc_time = [float(t) for t in contact.cc_time]
    msg.cc_type = [int(t) for t in contact.cc_type]
    if contact.cc_transforms is not None:
        msg.cc_transforms = [transform_to_pose(T) for T in contact.cc_transforms]
    return msg


def fill_check_motion_response(response, result: MotionResult, stamp=None):
    """Copy a :class:`motion.MotionResult` into a CheckMotion response."""
    response.valid = bool(result.valid)
    response.status = int(result.status)
    response.message = result.message
    response.cc_time = float(result.cc_time)
    response.contacts = [contact_to_msg(c) for c in result.contacts]
    response.state = joint_state_msg(result.joint_names, result.positions, stamp)
    response.min_clearance = float(result.min_clearance_m)
    response.min_clearance_time = float(result.min_clearance_time)
    response.min_clearance_bodies = [str(name) for name in result.min_clearance_bodies]
    return response


def trajectory_contact_report(result: TrajectoryResult, planning_frame: str, stamp) -> ContactReport:
    """The ContactReport of a trajectory's first-contact state; without one, a valid report with no state."""
    if result.first_contact is not None:
        return contact_report(result.first_contact, planning_frame, stamp)
    report = ContactReport()
    report.header.frame_id = planning_frame
    report.header.stamp = stamp
    report.valid = bool(result.valid)
    return report


def contact_interval_to_msg(interval: ContactInterval) -> ContactIntervalMsg:
    """Integer nanoseconds become float seconds; an interval without a contact gets an empty Contact."""
    msg = ContactIntervalMsg()
    msg.activation_time = seconds_from_ns(interval.activation_ns)
    msg.deactivation_time = seconds_from_ns(interval.deactivation_ns)
    if interval.contact is not None:
        msg.contact = contact_to_msg(interval.contact)
    return msg


def contact_list_to_msg(contact_list: ContactList) -> ContactListMsg:
    msg = ContactListMsg()
    msg.link_names = list(contact_list.link_names)
    msg.body_types = [int(t) for t in contact_list.body_types]
    msg.intervals = [contact_interval_to_msg(i) for i in contact_list]
    return msg


def fill_check_trajectory_response(response, result: TrajectoryResult):
    """Copy a :class:`motion.TrajectoryResult` into a CheckTrajectory response."""
    response.valid = bool(result.valid)
    response.status = int(result.status)
    response.message = result.message
    response.first_invalid_time = float(result.first_invalid_time_s)
    response.first_invalid_segment = int(result.first_invalid_segment)
    response.contact_lists = [contact_list_to_msg(cl) for cl in result.contact_lists]
    return response


def invalid_trajectory_result(message: str) -> TrajectoryResult:
    """The answer to a trajectory request refused before the core saw it."""
    return TrajectoryResult(False, Status.INVALID_REQUEST, message)


def duration_to_seconds(duration) -> float:
    """A builtin_interfaces/Duration in seconds."""
    return float(duration.sec) + float(duration.nanosec) * SECONDS_PER_NS


def joint_trajectory_to_arrays(trajectory: JointTrajectory) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(joint_names, points (W, K), times_s (W,))`` of a JointTrajectory.

    Positions only (velocities, accelerations and efforts are ignored). When every
    ``time_from_start`` is zero, waypoint ``w`` is at ``w`` seconds.

    Raises
    ------
    RequestError
        For an empty trajectory, a waypoint whose number of positions differs from
        the number of joint names, non-finite positions, or negative or
        non-increasing ``time_from_start`` (naming the waypoint).
    """
    names = list(trajectory.joint_names)
    waypoints = list(trajectory.points)
    if not waypoints:
        raise RequestError("the trajectory has no points")
    if not names:
        raise RequestError("the trajectory has no joint_names")
    rows = []
    for w, point in enumerate(waypoints):
        if len(point.positions) != len(names):
            raise RequestError(f"trajectory point {w} has {len(point.positions)} positions for "
                               f"{len(names)} joint names")
        row = np.asarray(point.positions, dtype=float)
        if not np.all(np.isfinite(row)):
            bad = int(np.flatnonzero(~np.isfinite(row))[0])
            raise RequestError(f"trajectory point {w}: joint '{names[bad]}' has a non-finite position")
        rows.append(row)
    points = np.vstack(rows)
    times_s = np.array([duration_to_seconds(p.time_from_start) for p in waypoints])
    if not np.any(times_s):
        return names, points, np.arange(len(waypoints), dtype=float)
    for w, t in enumerate(times_s):
        if t < 0:
            raise RequestError(f"trajectory point {w} has a negative time_from_start {t:.9g} s")
        if w and t <= times_s[w - 1]:
            raise RequestError(f"trajectory point {w} time_from_start {t:.9g} s is not after point {w - 1}'s "
                               f"{times_s[w - 1]:.9g} s")
    return names, points, times_s


# ----- clearance ---------------------------------------------------------------------
def _points_msgs(values: np.ndarray, cls=Point) -> list:
    """geometry_msgs Points (or Vector3s) of an (N, 3) array, built without the constructor's checks.

    A message's keyword constructor checks every field's name and type, about 3.8 us per
    point here; a clearance batch has hundreds of thousands of points. Where the generated
    class has the slots this was measured with (``_x``, ``_y``, ``_z``, ``_check_fields``,
    rosidl_generator_py of Jazzy), each message is made empty and its slots set to the
    Python floats a constructor would store (1.0 us per point); any other layout uses the
    constructor.
    """
    # one flat list of Python floats, read three at a time (a list per point would cost ~0.05 us more each)
    flat = iter(np.asarray(values, dtype=float).ravel().tolist())
    rows = zip(flat, flat, flat)
    if tuple(getattr(cls, "__slots__", ())) != _XYZ_SLOTS:
        return [cls(x=x, y=y, z=z) for x, y, z in rows]
    new = object.__new__
    out = []
    append = out.append
    for x, y, z in rows:
        m = new(cls)
        m._x, m._y, m._z, m._check_fields = x, y, z, False
        append(m)
    return out


_XYZ_SLOTS = ("_x", "_y", "_z", "_check_fields")


def _float64s(values) -> array.array:
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).ravel().tobytes())


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while a block makes many small objects, on again after.

    Building a response's hundreds of thousands of Point messages triggers collection after
    collection, each walking every object made so far: measured 0.86-1.13 s against
    0.19-0.20 s without them for 42 151 clearance rows. The messages hold no cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def fill_compute_clearance_response(response, clearance: Clearance):
    """Copy a :class:`core.checks.clearance.Clearance` into a ComputeClearance response (flat arrays).

    Per-row pairs (bodies, types, shape ids, points) are flattened row-major: entries 2r
    and 2r+1 belong to row r; ``jacobian`` is R x J row-major.
    """
    with collector_paused():
        return _fill_compute_clearance_response(response, clearance)


def _fill_compute_clearance_response(response, clearance: Clearance):
    response.status = int(clearance.status)
    response.message = clearance.message
    response.jacobian_joint_names = list(clearance.jacobian_joint_names)
    response.configuration_index = array.array("I", np.asarray(clearance.configuration_index, dtype=np.uint32)
                                               .tobytes())
    names = np.asarray(clearance.body_names, dtype=object).ravel().tolist()
    # (link names and object ids are str already: a copy of each only where one is not)
    response.body_names = names if all(type(n) is str for n in names) else [str(n) for n in names]
    response.body_types = array.array("B", np.asarray(clearance.body_types, dtype=np.uint8).ravel().tobytes())
    response.shape_ids = array.array("i", np.asarray(clearance.shape_ids, dtype=np.int32).ravel().tobytes())
    response.subshape_ids = array.array("i", np.asarray(clearance.subshape_ids, dtype=np.int32).ravel().tobytes())
    response.distance = _float64s(clearance.distance)
    response.points = _points_msgs(clearance.points)
    response.points_local = _points_msgs(clearance.points_local)
    response.normals = _points_msgs(clearance.normals, Vector3)
    response.jacobian = _float64s(clearance.jacobian)
    response.smooth = np.asarray(clearance.smooth, dtype=bool).ravel().tolist()      # (Python bools)
    return response


def clearance_from_response(response, compute_jacobians: bool = True) -> Clearance:
    """The :class:`core.checks.clearance.Clearance` a ComputeClearance response carries (numpy arrays).

    For Python clients: ``clearance_from_response(client.compute_clearance(...))`` gives the
    same arrays as the core call (``shape_pairs`` is left empty: the scene's shape indices
    do not cross the wire). An answer without rows has the core's Jacobian shape: (0, J) for
    a valid answer with Jacobians, (0, 0) for a refusal or without Jacobians (pass the
    request's ``compute_jacobians``: a response without rows does not say it).
    """
    rows = len(response.distance)
    names = tuple(response.jacobian_joint_names)

    def xyz(msgs) -> np.ndarray:
        return np.array([(m.x, m.y, m.z) for m in msgs], dtype=float).reshape(-1, 3)

    jacobian = np.asarray(response.jacobian, dtype=float)
    return Clearance(
        Status(response.status), response.message, names,
        np.asarray(response.configuration_index, dtype=np.int64),
        np.array(list(response.body_names), dtype=object).reshape(rows, 2),
        np.asarray(response.body_types, dtype=np.uint8).reshape(rows, 2),
        np.asarray(response.shape_ids, dtype=np.int32).reshape(rows, 2),
        np.asarray(response.subshape_ids, dtype=np.int32).reshape(rows, 2),
        np.asarray(response.distance, dtype=float),
        xyz(response.points).reshape(rows, 2, 3), xyz(response.points_local).reshape(rows, 2, 3),
        xyz(response.normals).reshape(rows, 3),
        _jacobian_shaped(jacobian, rows, len(names), Status(response.status) == Status.VALID and compute_jacobians),
        np.asarray(response.smooth, dtype=bool))


def _jacobian_shaped(jacobian: np.ndarray, rows: int, n_joints: int, with_columns: bool) -> np.ndarray:
    """A response's flat Jacobian as the core shapes it: (R, J); (R, 0) without Jacobians; no rows: (0, J)
    only for a valid answer with Jacobians, else (0, 0)."""
    if rows == 0:
        return np.zeros((0, n_joints if with_columns else 0))
    return jacobian.reshape(rows, n_joints) if jacobian.size else np.zeros((rows, 0))


def clearance_msg(clearance: Clearance, influence_distance_m: float, planning_frame: str, stamp) -> ClearanceMsg:
    """The ~/clearance message of one configuration's clearance: its nearest row, or ``found`` false."""
    msg = ClearanceMsg()
    msg.header.frame_id = planning_frame
    msg.header.stamp = stamp
    msg.influence_distance = float(influence_distance_m)
    msg.joint_names = list(clearance.jacobian_joint_names)
    if not len(clearance):
        msg.found, msg.distance = False, float("inf")
        return msg
    r = int(np.argmin(clearance.distance))
    msg.found = True
    msg.distance = float(clearance.distance[r])
    msg.body_names = [str(n) for n in clearance.body_names[r]]
    msg.body_types = [int(t) for t in clearance.body_types[r]]
    msg.points = [point_msg(p) for p in clearance.points[r]]
    msg.normal = vector_msg(clearance.normals[r])
    if clearance.jacobian.shape[1]:
        msg.jacobian = [float(v) for v in clearance.jacobian[r]]
    msg.smooth = bool(clearance.smooth[r])
    return msg


# ----- allowed collision matrix --------------------------------------------------------
def allowed_collision_edits_from_msg(request) -> tuple[list[tuple[str, str, bool]], list[tuple[str, bool]], bool]:
    """(entries, defaults, replace) of a SetAllowedCollisions request, for
    ``PlanningScene.set_allowed_collisions`` (which checks the names)."""
    entries = [(e.name_1, e.name_2, bool(e.allowed)) for e in request.entries]
    defaults = [(d.name, bool(d.allowed)) for d in request.defaults]
    return entries, defaults, bool(request.replace)


def fill_get_allowed_collisions_response(response, names, matrix: np.ndarray, acm):
    """A GetAllowedCollisions response: the effective (N, N) matrix over ``names``, and the
    matrix's explicit and default entries (sorted by name)."""
    response.success = True
    response.names = list(names)
    response.allowed = [bool(v) for v in np.asarray(matrix, dtype=bool).ravel().tolist()]
    entries = []
    for pair, allowed in acm.entries().items():
        a, b = sorted(pair) if len(pair) == 2 else (next(iter(pair)),) * 2
        entries.append((a, b, allowed))
    response.entries = [AllowedCollisionEntry(name_1=a, name_2=b, allowed=bool(allowed))
                        for a, b, allowed in sorted(entries)]
    response.defaults = [AllowedCollisionDefault(name=name, allowed=bool(allowed))
                         for name, allowed in sorted(acm.default_entries.items())]
    response.message = (f"{len(names)} bodies, {len(response.entries)} entries, "
                        f"{len(response.defaults)} default entries")
    return response


# ----- occupancy maps ------------------------------------------------------------------
def points_from_flat_xyz(values, what: str, max_points: int) -> np.ndarray:
    """(N, 3) float64 points of a flat ``float64[]`` field (x0, y0, z0, x1, ...), metres.

    Raises
    ------
    RequestError
        Naming ``what``: a length that is not a multiple of 3, more than ``max_points``
        points, or a NaN or infinite value (with its index).
    """
    flat = np.asarray(values, dtype=float).ravel()
    if len(flat) % 3:
        raise RequestError(f"{what} has {len(flat)} values, not a multiple of 3 (x, y, z per point)")
    if len(flat) // 3 > max_points:
        raise RequestError(f"{what} holds {len(flat) // 3} points, more than the bound of {max_points} "
                           f"(max_cloud_points)")
    bad = np.flatnonzero(~np.isfinite(flat))
    if len(bad):
        raise RequestError(f"{what}[{bad[0]}] is {flat[bad[0]]}; every coordinate must be finite")
    return flat.reshape(-1, 3)


def point_msgs(points_m: np.ndarray) -> list[Point]:
    """geometry_msgs Points of an (N, 3) array (about 1 us a point, see the clearance builder)."""
    return _points_msgs(points_m, Point)


_RGBA_SLOTS = ("_r", "_g", "_b", "_a", "_check_fields")


def color_msgs(rgba: np.ndarray) -> list[ColorRGBA]:
    """std_msgs ColorRGBAs of an (N, 4) array of r, g, b, a in [0, 1], built without the
    constructor's checks where the generated class has the slots this was written for."""
    rows = np.asarray(rgba, dtype=np.float32).reshape(-1, 4).astype(float).tolist()
    if tuple(getattr(ColorRGBA, "__slots__", ())) != _RGBA_SLOTS:
        return [ColorRGBA(r=r, g=g, b=b, a=a) for r, g, b, a in rows]
    new = object.__new__
    out = []
    append = out.append
    for r, g, b, a in rows:
        m = new(ColorRGBA)
        m._r, m._g, m._b, m._a, m._check_fields = r, g, b, a, False
        append(m)
    return out


def point_cloud_msg(points_m: np.ndarray, frame_id: str, stamp=None, *, datatype: int = FLOAT32,
                    extra_bytes: int = 0) -> PointCloud2:
    """A ``sensor_msgs/PointCloud2`` of points (N, 3) in ``frame_id``, metres: unorganised
    (height 1), fields x, y, z of ``datatype`` (PointField's code, FLOAT32 by default) from
    offset 0, ``extra_bytes`` of padding per point (``core.perception.point_cloud.encode_point_cloud``)."""
    plain = encode_point_cloud(points_m, datatype=datatype, extra_bytes=extra_bytes)
    msg = PointCloud2(height=plain["height"], width=plain["width"], point_step=plain["point_step"],
                      row_step=plain["row_step"], is_bigendian=plain["is_bigendian"], is_dense=True)
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp
    msg.fields = [PointField(name=name, offset=offset, datatype=code, count=count)
                  for name, offset, code, count in plain["fields"]]
    msg.data = array.array("B", plain["data"])
    return msg
