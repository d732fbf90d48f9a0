"""One exception hierarchy for the ROS-free core.

Every message names the thing at fault (joint, link, group, object, file) so a
service can hand it to the caller unchanged. Catch :class:`CollisionPkgError` to
catch every error of the core.
"""


class CollisionPkgError(Exception):
    """Base class of every error raised by the core; the ROS adapters catch it to
    turn any core error into a response field."""


class ModelError(CollisionPkgError):
    """A robot description (URDF or SRDF) is malformed or inconsistent.

    Raised while a model or scene is built: by ``RobotModel.from_urdf_string`` and
    ``from_urdf_file`` (core/model/robot_model.py), ``parse_srdf`` and
    ``parse_srdf_file`` (core/model/srdf.py), the file and xacro readers of
    core/model/description_files.py, ``example_robot_data_share`` when
    example-robot-data is missing (core/model/example_robots.py), ``load_scene``,
    ``build_shape`` for an invalid shape size, and ``PlanningScene`` for an invalid
    padding.
    """


class MeshError(ModelError):
    """A mesh referenced by a link or object cannot be found or read.

    Raised by ``MeshResolver.resolve`` and ``load_mesh_file``
    (core/geometry/mesh_files.py) and by ``build_shape`` for a mesh with invalid
    vertices (core/geometry/shape_geometry.py), so by ``PlanningScene`` and
    ``PlanningScene.apply`` when they build a link's or an object's geometry.

    Attributes
    ----------
    owner : str
        The link name or object id whose geometry names the mesh.
    uri : str
        The mesh reference as written (``package://``, ``file://`` or a path).
    """

    def __init__(self, owner: str, uri: str, reason: str) -> None:
        super().__init__(f"mesh '{uri}' of '{owner}': {reason}")
        self.owner = owner
        self.uri = uri


class RequestError(CollisionPkgError):
    """A query is malformed: unknown or repeated joint, wrong length, NaN, unknown group.

    Raised by the checks (``CollisionChecker`` and the motion checks in core/checks/)
    for the joints, positions and group of a request, by
    ``SemanticModel.group_links`` for an unknown group, by
    ``PlanningScene.set_current_positions``, and by the message conversions of
    ros/conversions.py.
    """


class SceneError(CollisionPkgError):
    """A world or attached-object update is invalid; the scene is left unchanged.

    Raised by ``PlanningScene.apply`` and ``set_allowed_collision``
    (core/scene/planning_scene.py), by ``check_unambiguous`` and
    ``check_object_transform`` (core/scene/objects.py), and by the message
    conversions of ros/conversions.py.
    """


class WorldFileError(SceneError):
    """A world description file (YAML) is malformed.

    Raised by ``parse_world`` and ``load_world_file`` (core/scene/world_file.py),
    so by ``load_scene`` given a ``world_path``.
    """


class WorkLimitError(RequestError):
    """A request asks for more work than a bound of :class:`checks.limits.WorkLimits` allows.

    Raised inside the motion checks (core/checks/motion.py, trajectory.py, sweep.py) and
    turned by them into a result with ``Status.INVALID_REQUEST`` whose message names the
    bound (its field name, the value asked, the limit) and how to split the request.

    Attributes
    ----------
    bound : str
        The field of :class:`WorkLimits` that refused the request.
    """

    def __init__(self, bound: str, message: str) -> None:
        super().__init__(message)
        self.bound = bound


class RequestStopped(CollisionPkgError):
    """A running check was stopped: the checker's ``stop_event`` was set while it worked.

    Raised by ``CollisionChecker.check_batch``, ``explain``, ``check_motion`` and
    ``check_trajectory`` (core/checks/checker.py) between chunks of their work, so a
    node shutting down gets its worker threads back within a fraction of a second.
    """

    def __init__(self, message: str = "request stopped before it finished") -> None:
        super().__init__(message)
