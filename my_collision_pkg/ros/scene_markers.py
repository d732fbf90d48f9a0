"""The planning scene's objects as RViz markers (visualization_msgs/MarkerArray).

World objects are drawn in the planning frame, attached objects in the frame of
their link (RViz poses them through TF as the robot moves). One namespace per
object, ``scene_objects/<id>``, one marker per shape; the array starts with a
DELETEALL so that removed objects vanish. The occupancy map (the world object
``<octomap>``) is one CUBE_LIST of its occupied cells (pruned cells split into cells of
the map's resolution, each a cube of that side), coloured by height: blue at the lowest
cell, through green and yellow, red at the highest.
"""
from __future__ import annotations

import os

import numpy as np
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.model.robot_model import Box, Cylinder, MeshRef, Sphere
from my_collision_pkg.core.model.shapes import OcTree
from my_collision_pkg.core.scene.planning_scene import CollisionWorld
from my_collision_pkg.ros.conversions import collector_paused, color_msgs, point_msg, point_msgs, transform_to_pose

NAMESPACE_PREFIX = "scene_objects/"
WORLD_OBJECT_RGBA = (0.75, 0.65, 0.45, 0.7)
ATTACHED_OBJECT_RGBA = (0.35, 0.6, 0.9, 0.8)
OCTOMAP_ALPHA = 1.0
# The height ramp of the occupancy cells: (fraction of the height span, r, g, b).
HEIGHT_RAMP = ((0.0, 0.0, 0.0, 1.0), (0.25, 0.0, 1.0, 1.0), (0.5, 0.0, 1.0, 0.0), (0.75, 1.0, 1.0, 0.0),
               (1.0, 1.0, 0.0, 0.0))


def height_colors(z_m: np.ndarray, alpha: float = OCTOMAP_ALPHA) -> np.ndarray:
    """(N, 4) RGBA of heights (N,): :data:`HEIGHT_RAMP` from the lowest (blue) to the highest (red);
    all blue when every height is the same."""
    z = np.asarray(z_m, dtype=float).reshape(-1)
    if len(z) == 0:
        return np.zeros((0, 4))
    span = float(np.ptp(z))
    t = (z - z.min()) / span if span > 0.0 else np.zeros(len(z))
    stops = np.array(HEIGHT_RAMP)
    rgba = np.empty((len(z), 4))
    for channel in range(3):
        rgba[:, channel] = np.interp(t, stops[:, 0], stops[:, channel + 1])
    rgba[:, 3] = alpha
    return rgba


def _octomap_marker(marker: Marker, spec: OcTree) -> None:
    """The occupied cells of a map as one CUBE_LIST, side = the resolution, a colour per cell."""
    occupancy = spec.occupancy
    centres = occupancy.leaf_centres_m()
    marker.type = Marker.CUBE_LIST
    marker.scale.x = marker.scale.y = marker.scale.z = float(occupancy.resolution_m)
    marker.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=OCTOMAP_ALPHA)
    # two small messages a cell: without the cyclic collector's passes over them, 4-5 us a
    # cell instead of 10-20 (measured with 60,000 cells; the messages hold no cycles)
    with collector_paused():
        marker.points = point_msgs(centres)
        marker.colors = color_msgs(height_colors(centres[:, 2]))


def _shape_marker(marker: Marker, entry) -> None:
    """Type, scale and (for tessellated shapes) points of one shape."""
    spec = entry.geometry.spec
    marker.scale.x = marker.scale.y = marker.scale.z = 1.0
    if isinstance(spec, OcTree):
        _octomap_marker(marker, spec)
    elif isinstance(spec, Box):
        marker.type = Marker.CUBE
        marker.scale.x, marker.scale.y, marker.scale.z = (float(v) for v in spec.size_m)
    elif isinstance(spec, Sphere):
        marker.type = Marker.SPHERE
        marker.scale.x = marker.scale.y = marker.scale.z = 2.0 * spec.radius_m
    elif isinstance(spec, Cylinder):
        marker.type = Marker.CYLINDER
        marker.scale.x = marker.scale.y = 2.0 * spec.radius_m
        marker.scale.z = float(spec.length_m)
    elif isinstance(spec, MeshRef):     # RViz reads package:// and file:// itself
        marker.type = Marker.MESH_RESOURCE
        marker.mesh_resource = spec.uri if "://" in spec.uri else "file://" + os.path.abspath(spec.uri)
        marker.scale.x, marker.scale.y, marker.scale.z = (float(v) for v in spec.scale)
    else:   # capsules, cones and inline meshes: the triangles themselves
        marker.type = Marker.TRIANGLE_LIST
        mesh = entry.geometry.triangle_mesh()
        marker.points = [point_msg(p) for p in mesh.vertices[mesh.faces.ravel()]]


class SceneMarkerCache:
    """The markers made for the shapes of earlier snapshots, for :func:`scene_objects_marker_array`.

    A scene update shares the shape entries of the objects it did not touch with the
    previous snapshot, so with a cache the array after an update makes markers for the
    touched objects only (the others are reused, their stamp renewed). Holds the
    markers of the last array made with it.
    """

    def __init__(self) -> None:
        self._frame: str | None = None
        self._markers: dict[int, tuple[object, Marker]] = {}


def scene_objects_marker_array(world: CollisionWorld, planning_frame: str, stamp, *,
                               cache: SceneMarkerCache | None = None) -> MarkerArray:
    """Markers for every world and attached object of ``world`` (a DELETEALL first).

    With ``cache``, markers of shapes the cache already drew are reused (see
    :class:`SceneMarkerCache`).
    """
    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id, clear.header.stamp = planning_frame, stamp
    markers = [clear]
    known = cache._markers if cache is not None and cache._frame == planning_frame else {}
    made: dict[int, tuple[object, Marker]] = {}
    for entry in world.shapes:
        if entry.body_type == BodyType.ROBOT_LINK:
            continue
        hit = known.get(id(entry))
        if hit is not None and hit[0] is entry:
            marker = hit[1]
            marker.header.stamp = stamp
        else:
            attached = entry.body_type == BodyType.ROBOT_ATTACHED
            marker = Marker(action=Marker.ADD, ns=NAMESPACE_PREFIX + entry.owner, id=entry.shape_id)
            marker.header.frame_id = world.objects[entry.owner].link if attached else planning_frame
            marker.header.stamp = stamp
            marker.pose = transform_to_pose(entry.T_frame_shape)
            r, g, b, a = ATTACHED_OBJECT_RGBA if attached else WORLD_OBJECT_RGBA
            marker.color = ColorRGBA(r=r, g=g, b=b, a=a)
            _shape_marker(marker, entry)
        made[id(entry)] = (entry, marker)
        markers.append(marker)
    if cache is not None:
        cache._frame, cache._markers = planning_frame, made
    return MarkerArray(markers=markers)
