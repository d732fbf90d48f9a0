"""A browser view of a scene and an answer, for people without RViz (viser; no ROS).

:func:`show` serves an interactive 3D page (http://HOST:PORT, a local web server in a
background thread) of a checker's scene with an answer drawn on it:

- the robot's collision geometry posed at the answer's configuration (grey), the links in
  contact red; world objects (tan) and the occupancy map (the world object ``<octomap>``,
  its occupied cells as squares);
- contacts as red dots (near misses yellow) with arrows along their normals, the contact
  surfaces coloured by pressure (:mod:`viz.style`, the colormap of the RViz markers and PNGs);
- clearance rows (a :class:`~my_collision_pkg.core.checks.results.Clearance`) as arrows from
  the witness point on the first body to the one on the second (green, orange below 5 cm);
- a motion or trajectory (:class:`Motion`) with a time slider: moving it poses the robot at
  that instant and explains it again (red links and contacts follow), and the panel lists the
  contact intervals (from a ``TrajectoryResult``'s contact lists, else found by checking the
  path at :data:`INTERVAL_SAMPLES` instants, said so) and a motion result's first contact.

It takes core objects (an ``Explanation``, a ``MotionResult``, a ``TrajectoryResult``) or,
read by attribute names only (this module imports no ROS package), a ``ContactReport`` and
the ``MarkerArray`` of ``~/scene_objects``: ``tools/web_view.py`` feeds it from a running
node's ``~/contacts`` and ``~/scene_objects``.
Why viser: its wheel carries its built web client (three.js), so the page works offline and
nothing is built or downloaded at run time; it serves from a thread, has a time slider and
per-node updates, and is maintained for robotics. meshcat-python (last release 2021) ships a
client too but has no GUI controls; trimesh's viewer is a desktop window (pyglet), not a
browser page; a three.js page by hand means writing and shipping the client ourselves
(docs/web_view.md).

Command line (the Panda and config/panda_world.yaml unless told otherwise; the default
configuration is ``make demo``'s environment collision)::

    python -m my_collision_pkg.viz.web [--positions Q...] [--goal Q...] [--port 8080]
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import threading
import time

import numpy as np

from my_collision_pkg.viz.style import (MARKER_ARROW_MIN_LENGTH_M, arrow_length_m, point_xyz,
                                       pressure_colormap, pressure_fractions)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
ENVIRONMENT_INTENSITY = 0.4
ROBOT_RGB = (105, 110, 120)
ROBOT_IN_CONTACT_RGB = (215, 0, 0)
WORLD_RGB = (185, 135, 70)
OCTOMAP_RGB = (70, 110, 200)
CONTACT_RGB = (255, 0, 0)
NEAR_MISS_RGB = (255, 205, 0)
CLEARANCE_RGB = (40, 170, 60)
CLEARANCE_CLOSE_RGB = (255, 140, 0)
CLEARANCE_CLOSE_M = 0.05
ROBOT_OPACITY = 1.0
WORLD_OPACITY = 0.6                     # contacts and surfaces inside an object stay visible
CONTACT_DOT_SIZE_M = 0.025
ARROW_SHAFT_RADIUS_M = 0.004
ARROW_HEAD_RADIUS_M = 0.010
ARROW_HEAD_LENGTH_M = 0.02
INTERVAL_SAMPLES = 201                  # instants checked along a motion when no contact lists are given
SLIDER_STEPS = 200
OCTOMAP_ID = "<octomap>"
# visualization_msgs/Marker's type and action codes (read by value: this module imports no ROS)
MARKER_CUBE, MARKER_SPHERE, MARKER_CYLINDER, MARKER_CUBE_LIST = 1, 2, 3, 6
MARKER_MESH_RESOURCE, MARKER_TRIANGLE_LIST, MARKER_ADD = 10, 11, 0
# make demo's environment collision (panda_joint1..7): the arm reaching down through the table
DEMO_POSITIONS = (0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785)
DEMO_START = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)


class WebViewError(RuntimeError):
    """The browser view cannot start (viser missing, port taken, bad input)."""


@dataclasses.dataclass(frozen=True)
class Motion:
    """A path to show with a time slider: joint-linear through ``waypoints`` (K, N) at ``times_s`` (K,).

    A straight motion (``check_motion``) is two waypoints; ``times_s`` defaults to 0..1 (the
    motion's own parameter ``t``).
    """
    joint_names: tuple[str, ...]
    waypoints: np.ndarray
    times_s: np.ndarray | None = None

    def __post_init__(self):
        waypoints = np.atleast_2d(np.asarray(self.waypoints, dtype=float))
        if waypoints.shape[0] < 2 or waypoints.shape[1] != len(self.joint_names):
            raise WebViewError(f"a motion needs at least two waypoints of {len(self.joint_names)} values, "
                               f"got an array of shape {waypoints.shape}")
        times = (np.linspace(0.0, 1.0, len(waypoints)) if self.times_s is None
                 else np.asarray(self.times_s, dtype=float).ravel())
        if len(times) != len(waypoints) or not np.all(np.diff(times) > 0) or not np.all(np.isfinite(times)):
            raise WebViewError("times_s must be finite, strictly increasing and one per waypoint")
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        object.__setattr__(self, "waypoints", waypoints)
        object.__setattr__(self, "times_s", times)

    def at(self, time_s: float) -> np.ndarray:
        """The joint values at ``time_s`` (clamped into the motion's span)."""
        t = float(np.clip(time_s, self.times_s[0], self.times_s[-1]))
        k = int(np.clip(np.searchsorted(self.times_s, t, side="right") - 1, 0, len(self.times_s) - 2))
        w = (t - self.times_s[k]) / (self.times_s[k + 1] - self.times_s[k])
        return (1.0 - w) * self.waypoints[k] + w * self.waypoints[k + 1]


def _viser():
    try:
        import viser
    except ImportError as exc:  # an optional dependency: pip install my_collision_pkg[web]
        raise WebViewError("the browser view needs viser (pip install 'my_collision_pkg[web]' or viser==1.1.1)") from exc
    return viser


def _quaternion_wxyz(R: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    m = np.asarray(R, dtype=float)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = ((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
    norm = math.sqrt(sum(v * v for v in q)) or 1.0
    return tuple(v / norm for v in q)


def contact_intervals_text(contact_lists) -> list[str]:
    """``link_a / link_b: 0.412-0.530 s (deepest 3.1 mm)`` for each interval of ``TrajectoryResult.contact_lists``."""
    lines = []
    for contact_list in contact_lists:
        names = " / ".join(contact_list.link_names)
        for interval in contact_list:
            depth = ""
            if interval.contact is not None and interval.contact.distance < 0:
                depth = f" (deepest {-interval.contact.distance * 1000.0:.1f} mm)"
            lines.append(f"{names}: {interval.activation_ns * 1e-9:.3f}-{interval.deactivation_ns * 1e-9:.3f} s{depth}")
    return lines


def sampled_contact_intervals(checker, motion: Motion, samples: int = INTERVAL_SAMPLES) -> list[tuple[float, float]]:
    """Spans of ``motion``'s time where ``checker.check_batch`` finds a collision, at ``samples`` instants."""
    times = np.linspace(motion.times_s[0], motion.times_s[-1], samples)
    valid, _ = checker.check_batch(motion.joint_names, np.array([motion.at(t) for t in times]))
    invalid = ~np.asarray(valid, dtype=bool)
    spans, start = [], None
    for t, bad in zip(times, invalid):
        if bad and start is None:
            start = t
        if not bad and start is not None:
            spans.append((float(start), float(t)))
            start = None
    if start is not None:
        spans.append((float(start), float(times[-1])))
    return spans


class WebView:
    """A served page of one checker's scene; draw answers on it with :meth:`draw` and :meth:`set_motion`.

    Thread-safe enough for one caller: viser sends every change to the open pages.
    """

    def __init__(self, checker, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, title: str = "my_collision_pkg"):
        viser = _viser()
        self.checker = checker
        try:
            self.server = viser.ViserServer(host=host, port=int(port), label=title, verbose=False)
        except OSError as exc:
            raise WebViewError(f"cannot serve on {host}:{port}: {exc}") from exc
        self.server.scene.set_up_direction("+z")
        # less image-based light than viser's default, so that the colours stay recognisable
        self.server.scene.configure_environment_map("warehouse", environment_intensity=ENVIRONMENT_INTENSITY)
        self._lock = threading.Lock()
        self._robot_handles: dict[int, object] = {}
        self._robot_owners: dict[int, str] = {}
        self._motion: Motion | None = None
        self._slider = None
        self._surface_handles: list = []
        self._marker_handles: list = []
        self.header = self.server.gui.add_markdown("**my_collision_pkg** browser view")
        self.status = self.server.gui.add_markdown("")
        self._intervals = self.server.gui.add_markdown("")
        self._draw_world()
        self._draw_robot(np.asarray(checker.scene.world.robot.default_positions(), dtype=float), set())

    # ----- what the page shows ------------------------------------------------------------------
    @property
    def url(self) -> str:
        host = self.server.get_host()
        return f"http://{'localhost' if host in ('0.0.0.0', '::') else host}:{self.server.get_port()}"

    def _world(self):
        return self.checker.scene.world

    def _draw_world(self) -> None:
        world = self._world()
        scene = self.server.scene
        low, high = np.full(3, np.inf), np.full(3, -np.inf)
        for k, entry in enumerate(world.shapes):
            if entry.link_index >= 0 or entry.owner == OCTOMAP_ID:
                continue
            mesh = entry.geometry.triangle_mesh()
            T = np.asarray(entry.T_frame_shape, dtype=float)
            scene.add_mesh_simple(f"/world/{entry.owner}/{k}", np.asarray(mesh.vertices, np.float32),
                                  np.asarray(mesh.faces, np.uint32), color=WORLD_RGB, opacity=WORLD_OPACITY,
                                  wxyz=_quaternion_wxyz(T[:3, :3]), position=tuple(T[:3, 3]))
            corners = np.asarray(mesh.vertices) @ T[:3, :3].T + T[:3, 3]
            low, high = np.minimum(low, corners.min(axis=0)), np.maximum(high, corners.max(axis=0))
        occupancy = self.checker.scene.occupancy
        if occupancy is not None and occupancy.n_occupied:
            cells = occupancy.cell_boxes()
            centres = np.asarray(cells.centres_m, dtype=np.float32).reshape(-1, 3)
            scene.add_point_cloud("/world/octomap", centres, colors=OCTOMAP_RGB,
                                  point_size=float(occupancy.resolution_m), point_shape="square")
        centre = 0.5 * (low + high) if np.all(np.isfinite(low)) else None
        if centre is None:              # no world objects yet (the node tool draws them later): a robot-sized view
            self.server.initial_camera.look_at = (0.3, 0.0, 0.3)
            self.server.initial_camera.position = (1.5, -1.6, 1.2)
        else:
            self.server.initial_camera.look_at = (float(centre[0]), float(centre[1]), float(max(centre[2], 0.3)))
            self.server.initial_camera.position = (float(centre[0]) + 0.9, float(centre[1]) - 1.1, 1.0)

    def _draw_robot(self, q: np.ndarray, in_contact: set[str]) -> None:
        """Pose every robot shape at the full configuration ``q``; links in ``in_contact`` red."""
        world = self._world()
        T_world_shapes = world.shape_transforms(world.robot.link_transforms(np.asarray(q, dtype=float)))
        with self._lock:
            for k, (entry, T) in enumerate(zip(world.shapes, T_world_shapes)):
                if entry.link_index < 0:
                    continue
                colour = ROBOT_IN_CONTACT_RGB if entry.owner in in_contact else ROBOT_RGB
                handle = self._robot_handles.get(k)
                if handle is None:
                    mesh = entry.geometry.triangle_mesh()
                    handle = self.server.scene.add_mesh_simple(
                        f"/robot/{entry.owner}/{k}", np.asarray(mesh.vertices, np.float32),
                        np.asarray(mesh.faces, np.uint32), color=colour, opacity=ROBOT_OPACITY)
                    self._robot_handles[k] = handle
                    self._robot_owners[k] = entry.owner
                handle.wxyz = _quaternion_wxyz(T[:3, :3])
                handle.position = tuple(float(v) for v in T[:3, 3])
                handle.color = colour

    def _configuration(self, result) -> np.ndarray:
        """Active joint positions (robot order) of a core result (``positions``) or a ContactReport
        message (``state``, by joint name; joints it does not name keep their default)."""
        robot = self._world().robot
        if hasattr(result, "state"):
            q = np.array(robot.default_positions(), dtype=float)
            for name, value in zip(result.state.name, result.state.position):
                k = robot.active_index(name)
                if k is not None:
                    q[k] = value
            return q
        q = np.asarray(getattr(result, "positions", ()), dtype=float)
        if len(q) != len(robot.active_joint_names):
            raise WebViewError(f"the result holds {len(q)} positions; the robot '{robot.name}' has "
                               f"{len(robot.active_joint_names)} active joints")
        return q

    def draw(self, result, surfaces=None, *, clearance=None, title: str | None = None) -> None:
        """Draw an ``Explanation``, a ``MotionResult`` or a ContactReport message (its configuration and
        contacts) with its contact surfaces (default: a report's own, computed for an Explanation's
        penetrating pairs, none for a motion) and optionally clearance rows."""
        q = self._configuration(result)
        contacts = list(getattr(result, "contacts", ()))
        touch_m = 0.0
        if hasattr(result, "cc_time") and contacts and float(result.cc_time) >= 0.0:
            touch_m = max(min(float(c.distance) for c in contacts), 0.0) + 1e-4
        touching = [float(c.distance) < 0.0 or float(c.distance) <= touch_m for c in contacts]
        in_contact = {n for c, t in zip(contacts, touching) if t for n in c.link_names}
        in_contact |= set(getattr(result, "colliding_links", ()))
        self._draw_robot(q, in_contact)
        self._draw_contacts(contacts, touching)
        if surfaces is None:
            if hasattr(result, "state"):
                surfaces = getattr(result, "surfaces", ())
            elif contacts and not hasattr(result, "cc_time"):
                from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces
                surfaces = explanation_surfaces(self._world(), result)
        self._draw_surfaces(surfaces or ())
        if clearance is not None:
            self.draw_clearance(clearance)
        message = getattr(result, "message", "") or (f"{sum(touching)} contacts" if contacts else "no contact")
        self.status.content = "\n\n".join(x for x in (f"**{title}**" if title else "", message) if x)

    def _draw_contacts(self, contacts, touching) -> None:
        scene = self.server.scene
        if not contacts:
            scene.add_point_cloud("/answer/contacts", np.zeros((0, 3), np.float32), colors=CONTACT_RGB, visible=False)
            scene.add_arrows("/answer/normals", np.zeros((0, 2, 3), np.float32), colors=CONTACT_RGB, visible=False)
            return
        points = np.array([point_xyz(c.position) for c in contacts], dtype=np.float32)
        colours = np.array([CONTACT_RGB if t else NEAR_MISS_RGB for t in touching], dtype=np.uint8)
        scene.add_point_cloud("/answer/contacts", points, colors=colours, point_size=CONTACT_DOT_SIZE_M,
                              point_shape="circle", point_shading="flat")
        ends = []
        for c, p in zip(contacts, points):
            n = point_xyz(c.normal)
            n = n / (np.linalg.norm(n) or 1.0)
            ends.append((p, p + arrow_length_m(-float(c.distance), min_length_m=MARKER_ARROW_MIN_LENGTH_M) * n))
        scene.add_arrows("/answer/normals", np.array(ends, dtype=np.float32), colors=colours,
                         shaft_radius=ARROW_SHAFT_RADIUS_M, head_radius=ARROW_HEAD_RADIUS_M,
                         head_length=ARROW_HEAD_LENGTH_M)

    def _draw_surfaces(self, surfaces) -> None:
        import trimesh
        scene = self.server.scene
        for handle in self._surface_handles:
            handle.remove()
        self._surface_handles = []
        patches = []                     # (vertices (V, 3), triangles (T, 3), pressure (V,) Pa)
        for surface in surfaces:
            if hasattr(surface, "patch"):  # core.surfaces.explanation_surfaces.ContactSurface
                p = surface.patch
                patches.append((np.asarray(p.vertices_world, float).reshape(-1, 3),
                                np.asarray(p.triangles, np.int64).reshape(-1, 3), np.asarray(p.pressure_pa, float).ravel()))
            else:                          # a ContactSurface message
                patches.append((np.array([point_xyz(v) for v in surface.vertices], float).reshape(-1, 3),
                                np.asarray(surface.triangles, np.int64).reshape(-1, 3),
                                np.asarray(surface.pressure, float).ravel()))
        top_pa = max((float(np.max(pressure)) for _, _, pressure in patches if pressure.size), default=0.0)
        for k, (vertices, triangles, pressure) in enumerate(patches):
            if not len(triangles) or len(pressure) != len(vertices):
                continue
            rgb = pressure_colormap(pressure_fractions(pressure, top_pa))
            mesh = trimesh.Trimesh(vertices, np.vstack([triangles, triangles[:, ::-1]]), process=False)
            mesh.visual.vertex_colors = np.column_stack([(rgb * 255).astype(np.uint8),
                                                         np.full(len(vertices), 255, np.uint8)])
            self._surface_handles.append(scene.add_mesh_trimesh(f"/answer/surfaces/{k}", mesh))

    def draw_scene_markers(self, markers) -> int:
        """World objects from a ``visualization_msgs/MarkerArray`` such as the validator's ``~/scene_objects``
        (read by attribute: cubes, spheres, cylinders, triangle lists, cube lists (octomap cells) and
        meshes given as file paths or ``file://`` URIs; other markers are counted in the panel).
        Returns how many markers were drawn."""
        import trimesh
        for handle in self._marker_handles:
            handle.remove()
        self._marker_handles = []
        skipped = 0
        scene = self.server.scene
        for k, m in enumerate(getattr(markers, "markers", ())):
            if int(m.action) != MARKER_ADD:
                continue
            rgb = tuple(int(255 * float(c)) for c in (m.color.r, m.color.g, m.color.b))
            opacity = float(m.color.a) or 1.0
            scale = np.array([m.scale.x, m.scale.y, m.scale.z], dtype=float)
            o = m.pose.orientation
            pose = {"wxyz": (float(o.w), float(o.x), float(o.y), float(o.z)), "position": tuple(point_xyz(m.pose.position))}
            name = f"/markers/{m.ns}/{m.id}/{k}"
            if int(m.type) == MARKER_CUBE:
                mesh = trimesh.creation.box(extents=scale)
            elif int(m.type) == MARKER_SPHERE:
                mesh = trimesh.creation.icosphere(subdivisions=2, radius=0.5)
                mesh.apply_scale(scale)
            elif int(m.type) == MARKER_CYLINDER:
                mesh = trimesh.creation.cylinder(radius=0.5, height=1.0, sections=24)
                mesh.apply_scale(scale)
            elif int(m.type) == MARKER_TRIANGLE_LIST and len(m.points) >= 3:
                vertices = np.array([point_xyz(p) for p in m.points], float)[: 3 * (len(m.points) // 3)]
                mesh = trimesh.Trimesh(vertices, np.arange(len(vertices)).reshape(-1, 3), process=False)
            elif int(m.type) == MARKER_CUBE_LIST and len(m.points):
                centres = np.array([point_xyz(p) for p in m.points], np.float32)
                self._marker_handles.append(scene.add_point_cloud(name, centres, colors=rgb or OCTOMAP_RGB,
                                                                  point_size=float(scale[0]), **pose))
                continue
            elif int(m.type) == MARKER_MESH_RESOURCE and m.mesh_resource.startswith(("file://", "/")):
                mesh = trimesh.load(m.mesh_resource.removeprefix("file://"), force="mesh")
                mesh.apply_scale(scale)
            else:
                skipped += 1
                continue
            self._marker_handles.append(scene.add_mesh_simple(
                name, np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces, np.uint32), color=rgb,
                opacity=min(opacity, WORLD_OPACITY), side="double", **pose))
        if skipped:
            self.header.content = f"**my_collision_pkg** browser view ({skipped} scene markers not drawn)"
        return len(self._marker_handles)

    def draw_clearance(self, clearance, configuration: int = 0) -> None:
        """Clearance rows of one configuration as arrows from the first body's witness point to the second's."""
        rows = np.flatnonzero(np.asarray(clearance.configuration_index) == configuration)
        if not len(rows):
            return
        points = np.asarray(clearance.points, dtype=np.float32)[rows]
        distance = np.asarray(clearance.distance, dtype=float)[rows]
        colours = np.array([CLEARANCE_CLOSE_RGB if d < CLEARANCE_CLOSE_M else CLEARANCE_RGB for d in distance],
                           dtype=np.uint8)
        self.server.scene.add_arrows("/answer/clearance", points, colors=colours, shaft_radius=0.5 * ARROW_SHAFT_RADIUS_M,
                                     head_radius=0.5 * ARROW_HEAD_RADIUS_M, head_length=0.5 * ARROW_HEAD_LENGTH_M)

    def set_motion(self, motion: Motion, result=None, initial_time_s: float | None = None) -> None:
        """A time slider over ``motion``: each instant is posed and explained; the panel lists the contact
        intervals (``result.contact_lists`` of a TrajectoryResult, else sampled) and a MotionResult's cc_time."""
        self._motion = motion
        lines = contact_intervals_text(getattr(result, "contact_lists", ()) or ())
        if lines:
            text = "**Contact intervals** (check_trajectory)\n\n" + "\n\n".join(lines)
        else:
            spans = sampled_contact_intervals(self.checker, motion)
            text = (f"**Contact intervals** (checked at {INTERVAL_SAMPLES} instants)\n\n"
                    + ("\n\n".join(f"{a:.3f}-{b:.3f}" for a, b in spans) if spans else "none"))
        if result is not None and hasattr(result, "cc_time") and float(result.cc_time) >= 0.0:
            text += f"\n\nFirst contact (certified): t = {float(result.cc_time):.4f}"
        self._intervals.content = text
        t0, t1 = float(motion.times_s[0]), float(motion.times_s[-1])
        start = t0 if initial_time_s is None else float(np.clip(initial_time_s, t0, t1))
        if self._slider is None:
            self._slider = self.server.gui.add_slider("time", min=t0, max=t1, step=(t1 - t0) / SLIDER_STEPS,
                                                      initial_value=start)
            self._slider.on_update(lambda _event: self.set_time(float(self._slider.value)))
        else:
            self._slider.min, self._slider.max, self._slider.value = t0, t1, start

    def set_time(self, time_s: float) -> None:
        """Pose and explain the motion's configuration at ``time_s``."""
        if self._motion is None:
            raise WebViewError("no motion to move along: call set_motion first")
        explanation = self.checker.explain(self._motion.joint_names, self._motion.at(time_s))
        self.draw(explanation, title=f"t = {time_s:.3f}")

    def close(self) -> None:
        self.server.stop()


def show(checker, result=None, *, surfaces=None, clearance=None, motion: Motion | None = None,
         host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, title: str | None = None) -> WebView:
    """Serve the page of ``checker``'s scene with ``result`` drawn on it; returns the :class:`WebView`
    (its ``url``; the server runs in a background thread until ``close()`` or the process ends).

    ``result``: an ``Explanation`` (``checker.explain``), a ``MotionResult`` (its first contact) or a
    ``TrajectoryResult`` (its first contact, and its contact lists with ``motion``); ``motion`` adds the
    time slider.
    """
    view = WebView(checker, host=host, port=port)
    if motion is not None:
        cc_time = float(getattr(result, "cc_time", -1.0))   # a straight motion's first contact, on 0..1
        view.set_motion(motion, result, initial_time_s=cc_time if cc_time >= 0 and len(motion.times_s) == 2 else None)
    shown = getattr(result, "first_contact", None) if hasattr(result, "contact_lists") else result
    if shown is not None and len(getattr(shown, "positions", ())):
        view.draw(shown, surfaces, clearance=clearance, title=title)
    elif motion is not None:
        view.set_time(float(motion.times_s[0]))
    return view


# ----- command line ----------------------------------------------------------------------------
def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m my_collision_pkg.viz.web",
                                     description="Serve a browser view of a scene and the explanation of one "
                                                 "configuration (and a motion to it with a time slider).")
    parser.add_argument("--urdf", help="URDF file (default: the Panda from example-robot-data)")
    parser.add_argument("--srdf", help="SRDF file (default: the Panda's, when --urdf is not given)")
    parser.add_argument("--scene", help="world YAML (default: config/panda_world.yaml for the Panda)")
    parser.add_argument("--joints", nargs="+", help="joint names (default: the robot's first active joints)")
    parser.add_argument("--positions", nargs="+", type=float, help="joint positions, rad or m "
                        "(default for the Panda: make demo's environment collision)")
    parser.add_argument("--start", nargs="+", type=float, help="also show the motion from these positions to "
                        "--positions with a time slider (default for the Panda: the SRDF's ready pose)")
    parser.add_argument("--no-motion", action="store_true", help="no motion, only the configuration")
    parser.add_argument("--clearance", type=float, default=0.0, help="also draw clearance rows within this distance, m")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = _parse_args(argv)
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.errors import CollisionPkgError
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.viz.render import default_world_file
    try:
        if args.urdf:
            urdf, srdf, world_file = args.urdf, args.srdf, args.scene
            positions, start = args.positions, args.start
            if positions is None:
                raise WebViewError("--positions is needed with --urdf")
        else:
            urdf, srdf = panda_paths()
            srdf = args.srdf or srdf
            world_file = args.scene or default_world_file()
            positions = args.positions or list(DEMO_POSITIONS)
            start = args.start or (list(DEMO_START) if len(positions) == len(DEMO_START) else None)
        checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world_file))
        joints = args.joints or list(checker.scene.world.robot.active_joint_names[:len(positions)])
        explanation = checker.explain(joints, positions)
        clearance = checker.clearance(joints, positions, args.clearance) if args.clearance > 0 else None
        motion = None
        if start is not None and not args.no_motion:
            motion = Motion(tuple(joints), np.array([start, positions], dtype=float))
        view = show(checker, explanation, clearance=clearance, host=args.host, port=args.port)
        if motion is not None:
            result = checker.check_motion(joints, start, positions)
            view.set_motion(motion, result, initial_time_s=float(motion.times_s[-1]))
            view.draw(explanation, clearance=clearance)
    except (CollisionPkgError, WebViewError, ValueError, OSError) as exc:
        print(f"web: {exc}", file=sys.stderr)
        return 1
    print(explanation.message)
    print(f"serving the browser view at {view.url} (Ctrl-C to stop)", flush=True)
    try:
        deadline = time.monotonic() + args.duration if args.duration > 0 else math.inf
        while time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    except KeyboardInterrupt:
        pass
    view.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
