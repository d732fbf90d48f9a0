"""World description files (YAML): the objects a scene starts with.

Format (lengths in metres, angles in radians)::

    frame_id: panda_link0          # optional; must be the planning frame (URDF root)
    objects:
      - id: table                  # unique, not a link name
        pose:                      # object pose in the planning frame (default: identity)
          position: [0.6, 0.0, 0.2]
          orientation: [0, 0, 0, 1]      # quaternion x, y, z, w ...
          # rpy: [0, 0, 1.57]            # ... or roll, pitch, yaw (not both)
        shapes:                    # one or more, each posed in the object frame
          - {type: box, size: [0.8, 1.2, 0.05]}
          - {type: sphere, radius: 0.05, pose: {position: [0, 0, 0.1]}}
          - {type: cylinder, radius: 0.03, length: 0.2}
          - {type: capsule, radius: 0.03, length: 0.2}   # length without the caps
          - {type: cone, radius: 0.03, length: 0.2}
          - {type: mesh, uri: package://pkg/meshes/part.stl, scale: [1, 1, 1]}
      - id: tool
        attached_to: panda_hand    # optional: attach to this link (pose is then in the link frame)
        touch_links: [panda_leftfinger, panda_rightfinger]
        shapes: [{type: cylinder, radius: 0.01, length: 0.1}]
    octomap:                       # optional: an occupancy map, the world object '<octomap>'
      file: maps/room.bt           # octomap binary (.bt) or full (.ot) file, planning frame

Relative mesh and octomap paths are taken from the YAML file's folder.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import yaml

from my_collision_pkg.core.errors import CollisionPkgError, WorldFileError
from my_collision_pkg.core.model.description_files import parse_file
from my_collision_pkg.core.model.shapes import Box, Capsule, Cone, Cylinder, MeshRef, Sphere
from my_collision_pkg.core.model.transforms import make_transform, quaternion_to_matrix, rpy_to_matrix
from my_collision_pkg.core.perception.occupancy import OccupancyMap
from my_collision_pkg.core.scene.objects import AddObject, ObjectShape, SceneObject

OCTOMAP_KEYS = ("file",)


@dataclass(frozen=True)
class WorldDescription:
    """What a world file holds: the objects (one AddObject each) and the occupancy map (or None).

    ``occupancy`` is an :class:`~my_collision_pkg.core.perception.occupancy.OccupancyMap`
    read from the ``octomap`` entry's file (``PlanningScene.set_occupancy`` makes it the
    world object ``<octomap>``); ``octomap_path`` is that file, resolved ('' for none).
    """
    updates: tuple
    occupancy: OccupancyMap | None = None
    octomap_path: str = ""


SHAPE_KEYS = {
    "box": ("size",),
    "sphere": ("radius",),
    "cylinder": ("radius", "length"),
    "capsule": ("radius", "length"),
    "cone": ("radius", "length"),
    "mesh": ("uri",),
}


def _numbers(value, count: int, where: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise WorldFileError(f"{where} must be a list of {count} numbers")
    try:
        out = [float(v) for v in value]
    except (TypeError, ValueError) as exc:
        raise WorldFileError(f"{where} must be a list of {count} numbers") from exc
    if not all(np.isfinite(out)):
        raise WorldFileError(f"{where} must be finite")
    return out


def _number(value, where: str) -> float:
    if isinstance(value, bool):
        raise WorldFileError(f"{where} must be a number")
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise WorldFileError(f"{where} must be a number") from exc
    if not np.isfinite(out) or out <= 0:
        raise WorldFileError(f"{where} must be finite and positive, got {value}")
    return out


def parse_pose(value, where: str) -> np.ndarray:
    """4x4 transform from ``{position, orientation | rpy}`` (both optional)."""
    if value is None:
        return np.eye(4)
    if not isinstance(value, dict):
        raise WorldFileError(f"{where} must be a mapping with position and orientation or rpy")
    unknown = set(value) - {"position", "orientation", "rpy"}
    if unknown:
        raise WorldFileError(f"{where} has unknown key(s) {sorted(unknown)}")
    if "orientation" in value and "rpy" in value:
        raise WorldFileError(f"{where} gives both orientation and rpy")
    position = _numbers(value.get("position", [0, 0, 0]), 3, f"{where} position")
    rotation = np.eye(3)
    if "orientation" in value:
        try:
            rotation = quaternion_to_matrix(_numbers(value["orientation"], 4, f"{where} orientation"))
        except ValueError as exc:
            raise WorldFileError(f"{where}: {exc}") from exc
    elif "rpy" in value:
        rotation = rpy_to_matrix(*_numbers(value["rpy"], 3, f"{where} rpy"))
    return make_transform(rotation, position)


def _shape(entry, where: str, base_dir: str | None) -> ObjectShape:
    if not isinstance(entry, dict) or "type" not in entry:
        raise WorldFileError(f"{where} must be a mapping with a 'type'")
    kind = entry["type"]
    if kind not in SHAPE_KEYS:
        raise WorldFileError(f"{where} has unknown type '{kind}' (known: {', '.join(SHAPE_KEYS)})")
    for key in SHAPE_KEYS[kind]:
        if key not in entry:
            raise WorldFileError(f"{where} ({kind}) lacks '{key}'")
    allowed = set(SHAPE_KEYS[kind]) | {"type", "pose"} | ({"scale"} if kind == "mesh" else set())
    unknown = set(entry) - allowed
    if unknown:
        raise WorldFileError(f"{where} ({kind}) has unknown key(s) {sorted(unknown)}")
    if kind == "box":
        size = _numbers(entry["size"], 3, f"{where} size")
        if min(size) <= 0:
            raise WorldFileError(f"{where} size {size} must be positive")
        spec = Box(tuple(size))
    elif kind == "sphere":
        spec = Sphere(_number(entry["radius"], f"{where} radius"))
    elif kind in ("cylinder", "capsule", "cone"):
        cls = {"cylinder": Cylinder, "capsule": Capsule, "cone": Cone}[kind]
        spec = cls(_number(entry["radius"], f"{where} radius"), _number(entry["length"], f"{where} length"))
    else:
        uri = entry["uri"]
        if not isinstance(uri, str) or not uri:
            raise WorldFileError(f"{where} uri must be a non-empty string")
        if base_dir and "://" not in uri and not os.path.isabs(uri):
            uri = os.path.join(base_dir, uri)
        scale = _numbers(entry.get("scale", [1, 1, 1]), 3, f"{where} scale")
        spec = MeshRef(uri, tuple(scale))
    return ObjectShape(spec, parse_pose(entry.get("pose"), f"{where} pose"))


def _yaml_error_line(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: the problem and where (PyYAML's own text spans lines)."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if problem is None:
        return " ".join(str(exc).split())
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def parse_world(text: str, planning_frame: str, *, base_dir: str | None = None) -> list[AddObject]:
    """Scene updates (one AddObject per object) from world YAML text (its octomap, if any,
    read and checked too; see :func:`parse_world_description` to get it).

    Raises
    ------
    WorldFileError
        Naming the object and the fault.
    """
    return list(parse_world_description(text, planning_frame, base_dir=base_dir).updates)


def _octomap_path(entry, base_dir: str | None) -> str:
    """The octomap file an ``octomap`` entry names (relative: from ``base_dir``)."""
    if not isinstance(entry, dict):
        raise WorldFileError("'octomap' must be a mapping with a 'file' (a .bt or .ot octomap file)")
    unknown = set(entry) - set(OCTOMAP_KEYS)
    if unknown:
        raise WorldFileError(f"'octomap' has unknown key(s) {sorted(unknown)} (known: {', '.join(OCTOMAP_KEYS)})")
    path = entry.get("file")
    if not isinstance(path, str) or not path.strip():
        raise WorldFileError("'octomap' needs a 'file': the path of a .bt or .ot octomap file")
    path = os.path.expanduser(path.strip())
    if base_dir and not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return os.path.normpath(path)


def parse_world_description(text: str, planning_frame: str, *, base_dir: str | None = None) -> WorldDescription:
    """The objects and the occupancy map of world YAML text; the map's file is read here.

    Raises
    ------
    WorldFileError
        Naming the object and the fault.
    OctomapFileError
        Naming the octomap file and the fault (missing, not .bt / .ot, corrupt).
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorldFileError(f"world file is not valid YAML: {_yaml_error_line(exc)}") from exc
    if data is None:
        return WorldDescription(())
    if not isinstance(data, dict):
        raise WorldFileError("world file must be a mapping with an 'objects' list")
    unknown = set(data) - {"frame_id", "objects", "octomap"}
    if unknown:
        raise WorldFileError(f"world file has unknown key(s) {sorted(unknown)}")
    frame = data.get("frame_id")
    if frame not in (None, "", planning_frame):
        raise WorldFileError(f"world frame_id '{frame}' is not the planning frame '{planning_frame}'")
    objects = data.get("objects") or []
    if not isinstance(objects, list):
        raise WorldFileError("'objects' must be a list")
    updates, seen = [], set()
    for k, entry in enumerate(objects):
        if not isinstance(entry, dict) or not entry.get("id"):
            raise WorldFileError(f"object {k} must be a mapping with an 'id'")
        oid = str(entry["id"])
        if oid in seen:
            raise WorldFileError(f"object id '{oid}' appears twice")
        seen.add(oid)
        unknown = set(entry) - {"id", "pose", "shapes", "attached_to", "touch_links"}
        if unknown:
            raise WorldFileError(f"object '{oid}' has unknown key(s) {sorted(unknown)}")
        shapes = entry.get("shapes")
        if not isinstance(shapes, list) or not shapes:
            raise WorldFileError(f"object '{oid}' needs a non-empty 'shapes' list")
        touch = entry.get("touch_links") or []
        if not isinstance(touch, list) or not all(isinstance(t, str) for t in touch):
            raise WorldFileError(f"object '{oid}' touch_links must be a list of link names")
        attached = entry.get("attached_to") or None
        updates.append(AddObject(SceneObject(
            oid, tuple(_shape(s, f"object '{oid}' shape {i}", base_dir) for i, s in enumerate(shapes)),
            parse_pose(entry.get("pose"), f"object '{oid}' pose"), attached, tuple(touch))))
    if data.get("octomap") is None:
        return WorldDescription(tuple(updates))
    path = _octomap_path(data["octomap"], base_dir)
    return WorldDescription(tuple(updates), OccupancyMap.load(path), path)


def load_world_file(path: str, planning_frame: str) -> list[AddObject]:
    """Read a world YAML file; see :func:`parse_world` (its octomap file is read and checked
    too, but not returned: :func:`load_world` returns it).

    Raises
    ------
    WorldFileError
        If the file cannot be read or is malformed (the message names the file).
    """
    return list(load_world(path, planning_frame).updates)


def load_world(path: str, planning_frame: str) -> WorldDescription:
    """Read a world YAML file: its objects and its occupancy map; see :func:`parse_world_description`.

    Raises
    ------
    WorldFileError
        If the file cannot be read or is malformed, its octomap file included (the message
        names the world file, and the octomap file when that is at fault).
    """
    base_dir = os.path.dirname(os.path.abspath(path))
    return parse_file(path, "world", lambda text: parse_world_description(text, planning_frame, base_dir=base_dir),
                      error=WorldFileError, rewrapped=CollisionPkgError)
