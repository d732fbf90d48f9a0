"""ContactReport -> visualization_msgs/MarkerArray, for RViz (pure functions, no node).

MoveIt's conventions where it has them (``moveit_core/collision_detection``'s
``getCollisionMarkersFromContacts``): one namespace per pair of bodies, named
``body_a=body_b``; a red SPHERE of radius 0.035 m at each contact position,
lifetime 60 s. The array always starts with a DELETEALL marker, so contacts of
an earlier report vanish when a new one arrives, also when it is empty.

Added here, per pair namespace:

- an ARROW from each witness point along that body's outward normal (``+normal``
  from ``nearest_points[0]``, ``-normal`` from ``nearest_points[1]``): for a
  penetration the two arrows leave the overlap in opposite directions; for a
  near miss they point at each other across the gap. The arrow length grows
  linearly with the penetration depth, between a minimum and a maximum;
- near misses (``distance > 0``) drawn in yellow instead of red;
- one TEXT_VIEW_FACING label with the pair and its deepest penetration in mm
  (or its smallest clearance, for a pair with near misses only);
- every contact surface as a TRIANGLE_LIST coloured per vertex by pressure
  (:func:`viz.style.pressure_colormap`), plus its outline as LINE_STRIPs: the boundary
  edges of the triangulation (edges used by one triangle), chained into loops.

Frames: every marker takes the report's header (frame and stamp); the report's
points are already in that frame. Units: metres, seconds, pascals.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from builtin_interfaces.msg import Duration
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from my_collision_pkg.core.checks.contact_list import NS_PER_S
from my_collision_pkg.ros.conversions import point_msg
from my_collision_pkg.viz import style
from my_collision_pkg.viz.style import (ARROW_LENGTH_PER_DEPTH, ARROW_MAX_LENGTH_M, MARKER_ARROW_MIN_LENGTH_M, MM_PER_M,
                                        point_xyz, pressure_colormap, pressure_fractions)

# MoveIt's contact markers: radius 0.035 m, RGBA (1, 0, 0, 0.8), lifetime 60 s.
MOVEIT_CONTACT_RADIUS_M = 0.035
MOVEIT_CONTACT_RGBA = (1.0, 0.0, 0.0, 0.8)
MOVEIT_MARKER_LIFETIME_S = 60.0

NEAR_MISS_RGBA = (1.0, 0.85, 0.0, 0.8)
LABEL_RGBA = (1.0, 1.0, 1.0, 1.0)
OUTLINE_RGBA = (0.1, 0.1, 0.1, 1.0)
PAIR_SEPARATOR = "="


def _check_rgba(name: str, rgba) -> tuple[float, float, float, float]:
    try:
        values = tuple(float(v) for v in rgba)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be 4 numbers (red, green, blue, alpha), got {rgba!r}") from exc
    if len(values) != 4 or not all(0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"{name} must be 4 numbers in [0, 1] (red, green, blue, alpha), got {rgba!r}")
    return values


@dataclass(frozen=True)
class MarkerOptions:
    """How contacts and surfaces are drawn (metres, seconds, pascals; RGBA in [0, 1]).

    Raises
    ------
    ValueError
        From the constructor, naming the first option out of its range.
    """
    sphere_radius_m: float = MOVEIT_CONTACT_RADIUS_M
    contact_rgba: tuple[float, float, float, float] = MOVEIT_CONTACT_RGBA
    near_miss_rgba: tuple[float, float, float, float] = NEAR_MISS_RGBA
    # 0 keeps markers until deleted (ROS's meaning of a zero lifetime).
    lifetime_s: float = MOVEIT_MARKER_LIFETIME_S
    show_arrows: bool = True
    # Arrow length = clip(arrow_min_length_m + arrow_length_per_depth * depth, min, max).
    arrow_min_length_m: float = MARKER_ARROW_MIN_LENGTH_M
    arrow_max_length_m: float = ARROW_MAX_LENGTH_M
    arrow_length_per_depth: float = ARROW_LENGTH_PER_DEPTH
    arrow_shaft_diameter_m: float = 0.008
    arrow_head_diameter_m: float = 0.016
    show_labels: bool = True
    label_height_m: float = 0.03
    # The label sits this far above the pair's deepest contact (along the frame's z).
    label_offset_m: float = 0.06
    label_rgba: tuple[float, float, float, float] = LABEL_RGBA
    show_surfaces: bool = True
    surface_alpha: float = 0.9
    outline_width_m: float = 0.003
    outline_rgba: tuple[float, float, float, float] = OUTLINE_RGBA
    # Pressure drawn with the colormap's top colour; 0: the report's largest pressure.
    pressure_max_pa: float = 0.0

    def __post_init__(self) -> None:
        positive = ("sphere_radius_m", "arrow_min_length_m", "arrow_max_length_m", "arrow_shaft_diameter_m",
                    "arrow_head_diameter_m", "label_height_m", "outline_width_m")
        non_negative = ("lifetime_s", "arrow_length_per_depth", "label_offset_m", "pressure_max_pa")
        for name in positive + non_negative:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            if name in positive and value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}")
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
            object.__setattr__(self, name, float(value))
        if self.arrow_max_length_m < self.arrow_min_length_m:
            raise ValueError(f"arrow_max_length_m ({self.arrow_max_length_m}) must be >= arrow_min_length_m "
                             f"({self.arrow_min_length_m})")
        if not (0.0 <= self.surface_alpha <= 1.0):
            raise ValueError(f"surface_alpha must be in [0, 1], got {self.surface_alpha}")
        for name in ("contact_rgba", "near_miss_rgba", "label_rgba", "outline_rgba"):
            object.__setattr__(self, name, _check_rgba(name, getattr(self, name)))


# ----- small pure helpers (tested on their own) ----------------------------------------
def pair_namespace(body_a: str, body_b: str) -> str:
    """MoveIt's namespace of a pair of bodies: ``body_a=body_b``."""
    return f"{body_a}{PAIR_SEPARATOR}{body_b}"


def arrow_length_m(penetration_depth_m: float, options: MarkerOptions) -> float:
    """Arrow length for a penetration depth: the shared policy (:func:`viz.style.arrow_length_m`) with these options."""
    return style.arrow_length_m(penetration_depth_m, min_length_m=options.arrow_min_length_m,
                                max_length_m=options.arrow_max_length_m,
                                length_per_depth=options.arrow_length_per_depth)


def boundary_loops(triangles) -> list[list[int]]:
    """Boundary of a triangulation as vertex-index loops, each closed (last == first).

    Boundary edges are the edges used by exactly one triangle. They are chained
    following the triangles' winding where it is consistent (so loops do not jump
    across a vertex where two boundary loops touch); an edge whose chain cannot
    be closed (a malformed triangulation) yields an open chain instead.

    Parameters
    ----------
    triangles : array-like (T, 3) or (3T,)
        Vertex indices.
    """
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    uses: dict[tuple[int, int], int] = defaultdict(int)
    directed: dict[tuple[int, int], tuple[int, int]] = {}
    for a, b, c in tris.tolist():
        for u, v in ((a, b), (b, c), (c, a)):
            key = (u, v) if u < v else (v, u)
            uses[key] += 1
            directed[key] = (u, v)
    # Each boundary edge once, in its triangle's direction u -> v.
    outgoing: dict[int, list[int]] = defaultdict(list)
    incoming: dict[int, list[int]] = defaultdict(list)
    for key, count in uses.items():
        if count == 1:
            u, v = directed[key]
            outgoing[u].append(v)
            incoming[v].append(u)
    used: set[tuple[int, int]] = set()

    def next_vertex(u: int) -> int | None:
        for v in outgoing[u]:
            if (u, v) not in used:
                used.add((u, v))
                return v
        for v in incoming[u]:  # inconsistent winding: walk an edge backwards
            if (v, u) not in used:
                used.add((v, u))
                return v
        return None

    loops = []
    for start in sorted(outgoing):
        while True:
            loop = [start]
            nxt = next_vertex(start)
            if nxt is None:
                break
            while nxt is not None:
                loop.append(nxt)
                if nxt == start:
                    break
                nxt = next_vertex(nxt)
            loops.append(loop)
    return loops


# ----- message building ------------------------------------------------------------------
def _color(rgba) -> ColorRGBA:
    return ColorRGBA(r=float(rgba[0]), g=float(rgba[1]), b=float(rgba[2]), a=float(rgba[3]))


def _duration(seconds: float) -> Duration:
    whole = int(math.floor(seconds))
    return Duration(sec=whole, nanosec=int(round((seconds - whole) * NS_PER_S)) % NS_PER_S)


class _Builder:
    """Numbers the markers of each namespace from 0 and fills the common fields."""

    def __init__(self, header, options: MarkerOptions) -> None:
        self._header = header
        self._lifetime = _duration(options.lifetime_s)
        self._next_id: dict[str, int] = defaultdict(int)
        self.markers: list[Marker] = []

    def add(self, ns: str, marker_type: int) -> Marker:
        m = Marker()
        m.header.frame_id = self._header.frame_id
        m.header.stamp = self._header.stamp
        m.ns = ns
        m.id = self._next_id[ns]
        self._next_id[ns] += 1
        m.type = marker_type
        m.action = Marker.ADD
        m.pose.orientation.w = 1.0
        m.lifetime = self._lifetime
        self.markers.append(m)
        return m


def _delete_all(header) -> Marker:
    m = Marker()
    m.header.frame_id = header.frame_id
    m.header.stamp = header.stamp
    m.action = Marker.DELETEALL
    m.pose.orientation.w = 1.0
    return m


def _add_contact(b: _Builder, ns: str, contact, options: MarkerOptions) -> None:
    rgba = options.near_miss_rgba if contact.distance > 0 else options.contact_rgba
    sphere = b.add(ns, Marker.SPHERE)
    sphere.pose.position = point_msg(point_xyz(contact.position))
    diameter = 2.0 * options.sphere_radius_m
    sphere.scale.x = sphere.scale.y = sphere.scale.z = diameter
    sphere.color = _color(rgba)
    if not options.show_arrows:
        return
    normal = point_xyz(contact.normal)
    norm = float(np.linalg.norm(normal))
    if not math.isfinite(norm) or norm == 0.0:
        return
    normal /= norm
    length = arrow_length_m(contact.penetration_depth, options)
    for witness, direction in zip(contact.nearest_points, (normal, -normal)):
        start = point_xyz(witness)
        arrow = b.add(ns, Marker.ARROW)
        arrow.points = [point_msg(start), point_msg(start + length * direction)]
        arrow.scale.x = options.arrow_shaft_diameter_m
        arrow.scale.y = options.arrow_head_diameter_m
        arrow.scale.z = 0.0  # RViz's default head length for point-to-point arrows
        arrow.color = _color(rgba)


def _label_text(ns: str, contacts) -> str:
    deepest = max(c.penetration_depth for c in contacts)
    if any(c.distance < 0 for c in contacts):
        return f"{ns}  {deepest * MM_PER_M:.1f} mm"
    clearance = min(c.distance for c in contacts)
    return f"{ns}  clearance {clearance * MM_PER_M:.1f} mm"


def _add_text(b: _Builder, ns: str, anchor_position, text: str, options: MarkerOptions) -> None:
    """A label ``label_offset_m`` above a contact position."""
    label = b.add(ns, Marker.TEXT_VIEW_FACING)
    position = point_xyz(anchor_position)
    position[2] += options.label_offset_m
    label.pose.position = point_msg(position)
    label.scale.z = options.label_height_m
    label.color = _color(options.label_rgba)
    label.text = text


def _add_label(b: _Builder, ns: str, contacts, options: MarkerOptions) -> None:
    anchor = min(contacts, key=lambda c: c.distance)  # deepest (or closest) contact
    _add_text(b, ns, anchor.position, _label_text(ns, contacts), options)


def _surface_arrays(surface) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    vertices = np.array([[p.x, p.y, p.z] for p in surface.vertices], dtype=float).reshape(-1, 3)
    pressure = np.asarray(surface.pressure, dtype=float).reshape(-1)
    triangles = np.asarray(surface.triangles, dtype=np.int64).reshape(-1)
    usable = len(triangles) // 3 * 3
    triangles = triangles[:usable].reshape(-1, 3)
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        triangles = triangles[np.all((triangles >= 0) & (triangles < len(vertices)), axis=1)]
    if len(pressure) != len(vertices):
        pressure = np.zeros(len(vertices))
    return vertices, triangles, pressure


def _add_surface(b: _Builder, ns: str, surface, pressure_top_pa: float, options: MarkerOptions) -> None:
    vertices, triangles, pressure = _surface_arrays(surface)
    if len(triangles) == 0:
        return
    corners = triangles.reshape(-1)
    rgb = pressure_colormap(pressure_fractions(pressure[corners], pressure_top_pa))
    mesh = b.add(ns, Marker.TRIANGLE_LIST)
    mesh.scale.x = mesh.scale.y = mesh.scale.z = 1.0
    # RViz multiplies each vertex alpha by color.a, and blends only when a vertex alpha is < 1.
    mesh.color = _color((1.0, 1.0, 1.0, 1.0))
    mesh.points = [point_msg(vertices[i]) for i in corners]
    mesh.colors = [ColorRGBA(r=float(r), g=float(g), b=float(bb), a=options.surface_alpha) for r, g, bb in rgb]
    for loop in boundary_loops(triangles):
        outline = b.add(ns, Marker.LINE_STRIP)
        outline.scale.x = options.outline_width_m
        outline.color = _color(options.outline_rgba)
        outline.points = [point_msg(vertices[i]) for i in loop]


def report_to_marker_array(report, options: MarkerOptions | None = None) -> MarkerArray:
    """Markers for one ContactReport: DELETEALL first, then one namespace per body pair.

    Parameters
    ----------
    report : my_collision_pkg.msg.ContactReport
        Contacts and surfaces in ``report.header.frame_id`` (metres).
    options : MarkerOptions, optional
        Sizes, colours, lifetime; defaults to MoveIt's look.

    Returns
    -------
    MarkerArray
        ``markers[0]`` is a DELETEALL; every other marker has the report's header,
        and a unique ``(ns, id)`` (ids count from 0 in each namespace). A report
        without contacts or surfaces gives the DELETEALL alone.
    """
    options = options or MarkerOptions()
    b = _Builder(report.header, options)
    pairs: dict[str, list] = {}
    for contact in report.contacts:
        pairs.setdefault(pair_namespace(contact.link_names[0], contact.link_names[1]), []).append(contact)
    for ns, contacts in pairs.items():
        for contact in contacts:
            _add_contact(b, ns, contact, options)
        if options.show_labels:
            _add_label(b, ns, contacts, options)
    if options.show_surfaces and report.surfaces:
        top = options.pressure_max_pa
        if top <= 0:
            top = max((max(s.pressure, default=0.0) for s in report.surfaces), default=0.0)
        for surface in report.surfaces:
            _add_surface(b, pair_namespace(surface.body_names[0], surface.body_names[1]), surface, float(top),
                         options)
    return MarkerArray(markers=[_delete_all(report.header)] + b.markers)


# ----- trajectory contact intervals ------------------------------------------------------
INTERVAL_LINE_WIDTH_M = 0.006
INTERVAL_RGBA = (1.0, 0.4, 0.0, 0.9)


def contact_intervals_marker_array(contact_lists, frame_id: str, stamp, sweeps=None,
                                   options: MarkerOptions | None = None) -> MarkerArray:
    """Markers for a trajectory's contact intervals: DELETEALL first, then one namespace per body pair.

    Per interval of each ContactList message: a SPHERE at the deepest contact
    (red, or yellow for a near miss), a LINE_STRIP of the touching point's swept
    path when ``sweeps`` gives one (orange), and a TEXT label ``pair [t0, t1) s,
    depth mm``. ``sweeps[i][j]`` is the path (S, 3) of interval ``j`` of list
    ``i`` (:func:`core.checks.interval_sweeps.interval_sweeps`) or None.

    Frames: everything in ``frame_id`` (the planning frame of the check).
    """
    options = options or MarkerOptions()
    header = Header(frame_id=frame_id, stamp=stamp)
    b = _Builder(header, options)
    for i, contact_list in enumerate(contact_lists):
        ns = pair_namespace(contact_list.link_names[0], contact_list.link_names[1])
        for j, interval in enumerate(contact_list.intervals):
            contact = interval.contact
            sphere = b.add(ns, Marker.SPHERE)
            sphere.pose.position = point_msg(point_xyz(contact.position))
            sphere.scale.x = sphere.scale.y = sphere.scale.z = 2.0 * options.sphere_radius_m
            sphere.color = _color(options.near_miss_rgba if contact.distance > 0 else options.contact_rgba)
            path = None if sweeps is None else sweeps[i][j]
            if path is not None and len(path) >= 2:
                line = b.add(ns, Marker.LINE_STRIP)
                line.scale.x = INTERVAL_LINE_WIDTH_M
                line.color = _color(INTERVAL_RGBA)
                line.points = [point_msg(p) for p in path]
            if options.show_labels:
                _add_text(b, ns, contact.position,
                          f"{ns}  [{interval.activation_time:.3f}, {interval.deactivation_time:.3f}) s  "
                          f"{contact.penetration_depth * MM_PER_M:.1f} mm", options)
    return MarkerArray(markers=[_delete_all(header)] + b.markers)
