"""One exception hierarchy for the ROS-free core.

Every message names the thing at fault (joint, link, group, object, file) so a
service can hand it to the caller unchanged.
"""


class CollisionPkgError(Exception):
    """Base class of every error raised by the core."""


class ModelError(CollisionPkgError):
    """A robot description (URDF or SRDF) is malformed or inconsistent."""


class MeshError(ModelError):
    """A mesh referenced by a link or object cannot be found or read.

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
    """A query is malformed: unknown or repeated joint, wrong length, NaN, unknown group."""


class SceneError(CollisionPkgError):
    """A world or attached-object update is invalid; the scene is left unchanged."""


class WorldFileError(SceneError):
    """A world description file (YAML) is malformed."""
