"""A picture of a collision without RViz: headless PNG rendering with matplotlib (Agg).

:func:`render_report_png` draws the robot's collision geometry posed at the
checked configuration (translucent grey, the links in contact tinted red), the
world objects (translucent tan), every contact as a dot (red when penetrating,
yellow for a near miss) with an arrow along the contact normal, and the contact
surfaces as triangles coloured by pressure (:mod:`viz.style`, the same map and
arrow policy as the RViz markers). Axes are equal, in metres, in the planning frame.

It takes either core objects (an :class:`core.checks.results.Explanation` and the
:class:`core.surfaces.explanation_surfaces.ContactSurface` tuple) or a ``ContactReport`` message or
``ExplainCollision`` response (read by attribute names only: this module imports
no ROS package). A motion's first-contact state draws the same way, from a
:class:`core.checks.results.MotionResult` or a ``CheckMotion`` response (anything with a
``cc_time``): there the closest contacts are touches found to the motion check's
tolerance (a small positive distance), drawn as contacts, and the title gives
``cc_time``. :func:`render_explanation_pngs` draws several to a folder
(``make demo``).

Resources are passed in: file paths, or the defaults of :func:`default_world_file` and
``core.scene.loading.panda_paths``, found without ament (this module imports no ROS
package, not even inside a function).

Command line (the Panda with the default world unless told otherwise)::

    python -m my_collision_pkg.viz.render --out contacts.png --positions 0 1.5 0 -0.5 0 1.571 0.785
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from mpl_toolkits.mplot3d import proj3d
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M
from my_collision_pkg.viz.style import (MM_PER_M, PNG_ARROW_MIN_LENGTH_M, arrow_length_m, point_xyz, pressure_colormap,
                                       pressure_fractions)

DEFAULT_VIEW = (35.0, -60.0)            # (elevation, azimuth), degrees, matplotlib's convention
DEFAULT_SIZE_PX = (960, 720)
DPI = 100
ROBOT_RGBA = (0.55, 0.58, 0.62, 0.16)
ROBOT_IN_CONTACT_RGBA = (0.95, 0.45, 0.40, 0.30)
WORLD_RGBA = (0.80, 0.66, 0.45, 0.30)
CONTACT_RGB = (0.9, 0.0, 0.0)
NEAR_MISS_RGB = (1.0, 0.8, 0.0)
CONTACT_DOT_AREA_PT2 = 36.0
SURFACE_ALPHA = 0.95
LIGHT_DIRECTION = np.array([0.3, -0.5, 0.81]) / np.linalg.norm([0.3, -0.5, 0.81])
AMBIENT_LIGHT = 0.45                    # share of a face's colour kept when it faces away from the light
AXES_ZOOM = 1.0
ZORDER_GEOMETRY, ZORDER_SURFACES, ZORDER_CONTACTS = 1, 10, 11
BOUNDS_MARGIN = 0.05                    # fraction of the scene size added around it
PACKAGE_NAME = "my_collision_pkg"
PANDA_WORLD_FILE = "panda_world.yaml"   # the default world beside the Panda, in the package's config/
# A motion's contacts at cc_time within this of the closest one are touches (distance >= 0 possible).
MOTION_TOUCH_DISTANCE_M = DEFAULT_TOUCH_TOLERANCE_M


@dataclass(frozen=True)
class RenderedImage:
    """Where the picture went and where its contacts landed.

    Attributes
    ----------
    path : str
    width_px, height_px : int
    contact_pixels : np.ndarray
        (N, 2) float: column and row (origin top-left) of each contact dot, in
        the order of the contacts drawn.
    """
    path: str
    width_px: int
    height_px: int
    contact_pixels: np.ndarray


@dataclass(frozen=True)
class _DrawnContact:
    names: tuple[str, str]
    position: np.ndarray
    normal: np.ndarray
    distance_m: float
    touching: bool          # drawn as a contact (red) rather than a near miss (yellow)


@dataclass(frozen=True)
class _DrawnSurface:
    vertices: np.ndarray    # (V, 3) metres
    triangles: np.ndarray   # (T, 3)
    pressure_pa: np.ndarray  # (V,)


def _configuration(world, report) -> np.ndarray:
    """Positions of the robot's active joints (robot order) from an Explanation or a ContactReport."""
    robot = world.robot
    if hasattr(report, "state"):                     # a ContactReport message
        q = np.array(robot.default_positions(), dtype=float)
        for name, value in zip(report.state.name, report.state.position):
            k = robot.active_index(name)
            if k is not None:
                q[k] = value
        return q
    q = np.asarray(report.positions, dtype=float)
    if len(q) != len(robot.active_joint_names):
        raise ValueError(f"the report holds {len(q)} positions; the robot '{robot.name}' has "
                         f"{len(robot.active_joint_names)} active joints")
    return q


def _is_motion(report) -> bool:
    """A motion's first-contact state (MotionResult, CheckMotion response) rather than one configuration."""
    return hasattr(report, "cc_time")


def _contacts(report) -> list[_DrawnContact]:
    """The contacts to draw; which are touches (red) and which near misses (yellow).

    One configuration: a contact touches when it penetrates. A motion's first contact
    (``cc_time`` >= 0): the check stops where the closest pair comes within its tolerance
    (plus padding), so the closest contact and those within ``MOTION_TOUCH_DISTANCE_M`` of
    it touch even at a small positive distance; farther ones are near misses.
    """
    distances = [float(c.distance) for c in report.contacts]
    touch_m = 0.0
    if distances and _is_motion(report) and float(report.cc_time) >= 0.0:
        touch_m = max(min(distances), 0.0) + MOTION_TOUCH_DISTANCE_M
    return [_DrawnContact(tuple(c.link_names), point_xyz(c.position), point_xyz(c.normal), d, d < 0.0 or d <= touch_m)
            for c, d in zip(report.contacts, distances)]


def _surfaces(surfaces) -> list[_DrawnSurface]:
    drawn = []
    for s in surfaces:
        if hasattr(s, "patch"):                      # core.surfaces.explanation_surfaces.ContactSurface
            p = s.patch
            drawn.append(_DrawnSurface(np.asarray(p.vertices_world, float).reshape(-1, 3),
                                       np.asarray(p.triangles, np.int64).reshape(-1, 3),
                                       np.asarray(p.pressure_pa, float).ravel()))
        else:                                        # a ContactSurface message
            vertices = np.array([point_xyz(v) for v in s.vertices], float).reshape(-1, 3)
            drawn.append(_DrawnSurface(vertices, np.asarray(s.triangles, np.int64).reshape(-1, 3),
                                       np.asarray(s.pressure, float).ravel()))
    return drawn


def _posed_triangles(world, q: np.ndarray, bodies_in_contact: set[str]):
    """World-frame triangles (K, 3, 3) of robot, robot-in-contact and world shapes."""
    T_world_shapes = world.shape_transforms(world.robot.link_transforms(q))
    groups: dict[str, list[np.ndarray]] = {"robot": [], "contact": [], "world": []}
    for entry, T_world_shape in zip(world.shapes, T_world_shapes):
        mesh = entry.geometry.triangle_mesh()
        if entry.link_index < 0:
            group = "world"
        else:
            group = "contact" if entry.owner in bodies_in_contact else "robot"
        vertices = np.asarray(mesh.vertices, float) @ T_world_shape[:3, :3].T + T_world_shape[:3, 3]
        groups[group].append(vertices[np.asarray(mesh.faces, np.int64)])
    return {k: (np.concatenate(v) if v else np.zeros((0, 3, 3))) for k, v in groups.items()}


def _shaded(triangles: np.ndarray, rgba) -> np.ndarray:
    """Per-face RGBA (K, 4): ``rgba`` darkened by the angle between the face and a fixed light."""
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    cosines = np.abs(normals @ LIGHT_DIRECTION) / np.where(lengths > 0, lengths, 1.0)
    faces = np.tile(np.asarray(rgba, dtype=float), (len(triangles), 1))
    faces[:, :3] *= (AMBIENT_LIGHT + (1.0 - AMBIENT_LIGHT) * cosines)[:, None]
    return faces


def _title(contacts: list[_DrawnContact], cc_time: float | None = None) -> str:
    """``body_a=body_b: penetration 12.3 mm`` for the deepest pair (and how many more pairs).

    With ``cc_time`` (a motion's first contact): ``body_a=body_b: first contact at cc_time 0.51300
    (distance 0.065 mm)``.
    """
    touching = [c for c in contacts if c.touching]
    if not touching:
        return f"no collision ({len(contacts)} near misses)" if contacts else "no collision"
    deepest = min(touching, key=lambda c: c.distance_m)
    others = len({c.names for c in touching}) - 1
    more = f" (+{others} more colliding pair{'s' if others > 1 else ''})" if others else ""
    if cc_time is not None:
        gap = (f"penetration {-deepest.distance_m * MM_PER_M:.1f} mm" if deepest.distance_m < 0
               else f"distance {deepest.distance_m * MM_PER_M:.3f} mm")
        return f"{'='.join(deepest.names)}: first contact at cc_time {cc_time:.5f} ({gap}){more}"
    return f"{'='.join(deepest.names)}: penetration {-deepest.distance_m * MM_PER_M:.1f} mm{more}"


def _cropped(triangles: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Triangles (K, 3, 3) cut to the box [low, high]: those wholly outside one face dropped, vertices clamped.

    Clamping is exact for axis-aligned boxes (the table) and moves only the rim of finer meshes.
    """
    if not len(triangles):
        return triangles
    outside = ((triangles < low).all(axis=1) | (triangles > high).all(axis=1)).any(axis=1)
    return np.clip(triangles[~outside], low, high)


def _set_equal_axes(ax, points: np.ndarray) -> None:
    low, high = points.min(axis=0), points.max(axis=0)
    center = 0.5 * (low + high)
    half = 0.5 * float(np.max(high - low)) * (1.0 + BOUNDS_MARGIN) or 0.5
    ax.set_xlim(center[0] - half, center[0] + half)
    ax.set_ylim(center[1] - half, center[1] + half)
    ax.set_zlim(center[2] - half, center[2] + half)
    ax.set_box_aspect((1.0, 1.0, 1.0), zoom=AXES_ZOOM)


def render_report_png(path: str, world, report, surfaces=None, *, title: str | None = None,
                      view: tuple[float, float] = DEFAULT_VIEW,
                      size_px: tuple[int, int] = DEFAULT_SIZE_PX,
                      zoom_half_size_m: float | None = None) -> RenderedImage:
    """Draw a checked configuration, its contacts and contact surfaces to a PNG file.

    Parameters
    ----------
    path : str
        PNG file to write (its folder must exist).
    world : core.scene.planning_scene.CollisionWorld
        The snapshot the report was computed on (``PlanningScene.world``): robot
        and object geometry, in the planning frame.
    report : core.checks.results.Explanation, or a ContactReport message or ExplainCollision response
        The configuration (``positions``, or ``state`` by joint name) and the contacts.
        A motion's first-contact state works the same way: a ``core.checks.results.MotionResult``
        (``positions``) or a CheckMotion response (``state``).
    surfaces : sequence, optional
        ``core.surfaces.explanation_surfaces.ContactSurface`` objects or ContactSurface messages; by
        default a report message's own ``surfaces`` (none for an Explanation).
    title : str, optional
        Defaults to the deepest colliding pair and its depth in mm.
    view : (elevation, azimuth), degrees
    size_px : (width, height)
    zoom_half_size_m : float, optional
        Draw only the cube of this half size (metres) centred on the contacts (a
        close-up of a thin obstacle); by default the whole scene.

    Returns
    -------
    RenderedImage

    Raises
    ------
    ValueError
        If the report's configuration does not fit the robot, or ``zoom_half_size_m`` is not > 0.
    """
    if zoom_half_size_m is not None and not zoom_half_size_m > 0:
        raise ValueError(f"zoom_half_size_m must be > 0, got {zoom_half_size_m}")
    if surfaces is None:  # a message (ContactReport, ExplainCollision response) carries its own
        surfaces = getattr(report, "surfaces", ()) if hasattr(report, "state") else ()
    q = _configuration(world, report)
    contacts = _contacts(report)
    drawn_surfaces = _surfaces(surfaces)
    in_contact = {name for c in contacts if c.touching for name in c.names}
    triangles = _posed_triangles(world, q, in_contact)
    positions = np.array([c.position for c in contacts]).reshape(-1, 3)
    if zoom_half_size_m is not None:
        every = np.concatenate([t.reshape(-1, 3) for t in triangles.values()] + [positions])
        center = positions.mean(axis=0) if len(positions) else 0.5 * (every.min(axis=0) + every.max(axis=0))
        low, high = center - zoom_half_size_m, center + zoom_half_size_m
        triangles = {group: _cropped(t, low, high) for group, t in triangles.items()}

    width, height = size_px
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0.0, 0.0, 1.0, 0.93), projection="3d")
    ax.view_init(elev=view[0], azim=view[1])
    # Painter's order by layer, not by mplot3d's per-collection depth guess: geometry is
    # translucent, and surfaces and contacts are what the picture is for.
    ax.computed_zorder = False
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    for layer, (group, rgba) in enumerate((("world", WORLD_RGBA), ("robot", ROBOT_RGBA),
                                           ("contact", ROBOT_IN_CONTACT_RGBA))):
        if len(triangles[group]):
            ax.add_collection3d(Poly3DCollection(triangles[group], facecolors=_shaded(triangles[group], rgba),
                                                 edgecolors="none", zorder=ZORDER_GEOMETRY + layer))
    top_pa = max((float(s.pressure_pa.max()) for s in drawn_surfaces if s.pressure_pa.size), default=0.0)
    for s in drawn_surfaces:
        if not len(s.triangles):
            continue
        fractions = pressure_fractions(s.pressure_pa[s.triangles].mean(axis=1), top_pa)
        colours = np.column_stack([pressure_colormap(fractions), np.full(len(s.triangles), SURFACE_ALPHA)])
        ax.add_collection3d(Poly3DCollection(s.vertices[s.triangles], facecolors=colours, edgecolors="none",
                                             zorder=ZORDER_SURFACES))
    if contacts:
        colours = [CONTACT_RGB if c.touching else NEAR_MISS_RGB for c in contacts]
        ax.scatter(positions[:, 0], positions[:, 1], positions[:, 2], s=CONTACT_DOT_AREA_PT2, c=colours,
                   depthshade=False, edgecolors="black", linewidths=0.5, zorder=ZORDER_CONTACTS)
        for c, colour in zip(contacts, colours):
            n = c.normal / (np.linalg.norm(c.normal) or 1.0)
            length = arrow_length_m(-c.distance_m, min_length_m=PNG_ARROW_MIN_LENGTH_M)
            ax.quiver(*c.position, *(length * n), color=colour, linewidth=1.5, arrow_length_ratio=0.25,
                      zorder=ZORDER_CONTACTS)
    bounds = [t.reshape(-1, 3) for t in triangles.values() if len(t)] + [positions]
    bounds += [s.vertices for s in drawn_surfaces]
    points = np.concatenate(bounds) if bounds else np.zeros((1, 3))
    if zoom_half_size_m is not None:
        points = np.array([low, high])
    _set_equal_axes(ax, points if len(points) else np.zeros((1, 3)))
    cc_time = float(report.cc_time) if _is_motion(report) else None
    fig.suptitle(title if title is not None else _title(contacts, cc_time), fontsize=12)

    canvas.draw()
    pixels = np.zeros((len(contacts), 2))
    if contacts:
        x2, y2, _ = proj3d.proj_transform(positions[:, 0], positions[:, 1], positions[:, 2], ax.get_proj())
        display = ax.transData.transform(np.column_stack([x2, y2]))
        pixels = np.column_stack([display[:, 0], height - display[:, 1]])
    fig.savefig(path, dpi=DPI, format="png")
    return RenderedImage(str(path), width, height, pixels)


def _file_stem(title: str) -> str:
    """``"self-collision: elbow folded"`` -> ``"self-collision"`` (the part before a colon, safe characters)."""
    head = title.split(":", 1)[0].strip().lower() or "report"
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in head)


def render_explanation_pngs(pictures, folder: str, *, urdf_path: str | None = None, srdf_path: str | None = None,
                            world_path: str | None = None, view: tuple[float, float] = DEFAULT_VIEW) -> list[str]:
    """One PNG per ``(title, explanation)`` in ``folder`` (made if missing); returns the paths.

    ``explanation`` is an ExplainCollision response, a ContactReport or a core
    Explanation (core surfaces are then not drawn: pass them to
    :func:`render_report_png`), or a motion's first-contact state (a CheckMotion
    response or a core MotionResult). The geometry comes from a scene loaded here: by
    default the Panda from example-robot-data and the package's default world;
    give the files the explanations were computed with when they differ. Files
    are named after the part of each title before a colon; the picture's title is
    the given one above the explanation's message (a report has none: then the
    deepest colliding pair).

    Raises
    ------
    CollisionPkgError
        If the robot or world files cannot be loaded.
    """
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    if urdf_path is None:
        urdf_path, default_srdf = panda_paths()
        srdf_path = srdf_path or default_srdf
        world_path = world_path or default_world_file()
    world = load_scene(urdf_path=urdf_path, srdf_path=srdf_path, world_path=world_path).world
    os.makedirs(folder, exist_ok=True)
    written, used = [], set()
    for title, explanation in pictures:
        stem = _file_stem(title)
        name, k = stem, 2
        while name in used:
            name, k = f"{stem}_{k}", k + 1
        used.add(name)
        # the explanation's own message where it has one, so picture and answer name the same pair
        cc_time = float(explanation.cc_time) if _is_motion(explanation) else None
        heading = f"{title}\n{getattr(explanation, 'message', '') or _title(_contacts(explanation), cc_time)}"
        image = render_report_png(os.path.join(folder, f"{name}.png"), world, explanation, title=heading, view=view)
        written.append(os.path.abspath(image.path))
    return written


# ----- command line ----------------------------------------------------------------------------
def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m my_collision_pkg.viz.render",
        description="Explain one robot configuration (with contact surfaces) and draw it to a PNG.")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--urdf", help="URDF file (default: the Panda from example-robot-data)")
    parser.add_argument("--srdf", help="SRDF file (default: the Panda's, when --urdf is not given)")
    parser.add_argument("--scene", help="world YAML (default: config/panda_world.yaml for the Panda)")
    parser.add_argument("--joints", nargs="+", help="joint names (default: the robot's active joints, in order)")
    parser.add_argument("--positions", nargs="+", type=float, required=True, help="joint positions, rad or m")
    parser.add_argument("--contact-distance", type=float, default=0.0, help="also draw near misses, metres")
    parser.add_argument("--elev", type=float, default=DEFAULT_VIEW[0], help="view elevation, degrees")
    parser.add_argument("--azim", type=float, default=DEFAULT_VIEW[1], help="view azimuth, degrees")
    parser.add_argument("--title", help="picture title (default: the deepest colliding pair)")
    return parser.parse_args(argv)


def default_world_file() -> str | None:
    """The package's ``config/panda_world.yaml``, found without ament (None when neither place holds it).

    Looked for in the install prefix this module was installed under
    (``<prefix>/lib/pythonX.Y/site-packages/my_collision_pkg/viz`` ->
    ``<prefix>/share/my_collision_pkg/config``), then in the source checkout this
    module's real path lies in (a ``--symlink-install`` links back to it).
    """
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    install_prefix = os.path.join(package_dir, os.pardir, os.pardir, os.pardir, os.pardir)
    source_root = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), os.pardir)
    candidates = [os.path.join(install_prefix, "share", PACKAGE_NAME, "config", PANDA_WORLD_FILE),
                  os.path.join(source_root, "config", PANDA_WORLD_FILE)]
    return next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)


def main(argv=None) -> int:
    args = _parse_args(argv)
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.errors import CollisionPkgError
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces
    try:
        if args.urdf:
            urdf, srdf, scene_file = args.urdf, args.srdf, args.scene
        else:
            urdf, srdf = panda_paths()
            srdf = args.srdf or srdf
            scene_file = args.scene or default_world_file()
        scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=scene_file)
        joints = args.joints or list(scene.robot.active_joint_names[:len(args.positions)])
        explanation = CollisionChecker(scene).explain(joints, args.positions, contact_distance=args.contact_distance)
        surfaces = explanation_surfaces(scene.world, explanation) if explanation.contacts else ()
        image = render_report_png(args.out, scene.world, explanation, surfaces, title=args.title,
                                  view=(args.elev, args.azim))
    except (CollisionPkgError, ValueError, OSError) as exc:
        print(f"render: {exc}", file=sys.stderr)
        return 1
    print(f"{explanation.message}\n{image.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
