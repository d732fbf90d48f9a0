"""ContactReport -> MarkerArray (markers.py), without a ROS graph: hand-made reports in, markers checked."""
from __future__ import annotations

import math

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Vector3
from visualization_msgs.msg import Marker

from my_collision_pkg.ros.markers import (
    MOVEIT_CONTACT_RADIUS_M,
    MOVEIT_CONTACT_RGBA,
    MOVEIT_MARKER_LIFETIME_S,
    MarkerOptions,
    arrow_length_m,
    boundary_loops,
    pair_namespace,
    report_to_marker_array,
)
from my_collision_pkg.msg import Contact, ContactReport, ContactSurface
from my_collision_pkg.viz.style import pressure_colormap

FRAME = "panda_link0"
STAMP = Time(sec=12, nanosec=345)


def make_contact(a: str, b: str, position, normal, distance: float) -> Contact:
    c = Contact()
    c.type = Contact.SELF
    c.link_names = [a, b]
    p = np.asarray(position, dtype=float)
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    p0, p1 = p - 0.5 * distance * n, p + 0.5 * distance * n
    c.position = Point(x=p[0], y=p[1], z=p[2])
    c.nearest_points = [Point(x=p0[0], y=p0[1], z=p0[2]), Point(x=p1[0], y=p1[1], z=p1[2])]
    c.normal = Vector3(x=n[0], y=n[1], z=n[2])
    c.distance = float(distance)
    c.penetration_depth = max(0.0, -float(distance))
    return c


def make_surface(a: str, b: str, vertices, triangles, pressure) -> ContactSurface:
    s = ContactSurface()
    s.body_names = [a, b]
    s.vertices = [Point(x=float(v[0]), y=float(v[1]), z=float(v[2])) for v in vertices]
    s.triangles = [int(i) for i in np.asarray(triangles).ravel()]
    s.pressure = [float(p) for p in pressure]
    return s


def square_grid(n: int, size_m: float = 0.1, z_m: float = 0.5):
    """A flat n x n grid of squares, each split into two CCW triangles (seen from +z)."""
    xs = np.linspace(0.0, size_m, n + 1)
    vertices = np.array([[x, y, z_m] for y in xs for x in xs])
    tris = []
    for j in range(n):
        for i in range(n):
            v = j * (n + 1) + i
            tris += [[v, v + 1, v + n + 2], [v, v + n + 2, v + n + 1]]
    return vertices, np.array(tris)


def make_report(contacts=(), surfaces=()) -> ContactReport:
    r = ContactReport()
    r.header.frame_id = FRAME
    r.header.stamp = STAMP
    r.contacts = list(contacts)
    r.surfaces = list(surfaces)
    return r


@pytest.fixture
def report():
    vertices, triangles = square_grid(3)
    pressure = np.linspace(0.0, 3000.0, len(vertices))
    return make_report(
        contacts=[make_contact("panda_link5", "table", [0.5, 0.0, 0.2], [0, 0, -1], -0.02),
                  make_contact("panda_link5", "table", [0.55, 0.0, 0.2], [0, 0, -1], -0.01),
                  make_contact("panda_link1", "panda_link7", [0.1, 0.2, 0.3], [1, 0, 0], -0.004),
                  make_contact("panda_hand", "post", [0.0, 0.5, 0.4], [0, 1, 0], 0.015)],
        surfaces=[make_surface("panda_link5", "table", vertices, triangles, pressure)])


def of_type(markers, marker_type, ns=None):
    return [m for m in markers if m.type == marker_type and m.action == Marker.ADD and (ns is None or m.ns == ns)]


def xyz(p):
    return np.array([p.x, p.y, p.z])


def rgba(c):
    return (c.r, c.g, c.b, c.a)


# ----- the array as a whole ---------------------------------------------------------------
def test_empty_report_gives_only_deleteall():
    markers = report_to_marker_array(make_report()).markers
    assert len(markers) == 1
    assert markers[0].action == Marker.DELETEALL
    assert markers[0].header.frame_id == FRAME


def test_deleteall_first_and_only_first(report):
    markers = report_to_marker_array(report).markers
    assert markers[0].action == Marker.DELETEALL
    assert all(m.action == Marker.ADD for m in markers[1:])


def test_ids_unique_per_namespace(report):
    markers = report_to_marker_array(report).markers[1:]
    keys = [(m.ns, m.id) for m in markers]
    assert len(keys) == len(set(keys))
    for ns in {m.ns for m in markers}:
        assert sorted(m.id for m in markers if m.ns == ns) == list(range(sum(m.ns == ns for m in markers)))


def test_one_namespace_per_body_pair(report):
    markers = report_to_marker_array(report).markers[1:]
    assert {m.ns for m in markers} == {"panda_link5=table", "panda_link1=panda_link7", "panda_hand=post"}
    assert pair_namespace("a", "b") == "a=b"


def test_frame_stamp_and_lifetime_from_report(report):
    for m in report_to_marker_array(report).markers:
        assert m.header.frame_id == FRAME
        assert (m.header.stamp.sec, m.header.stamp.nanosec) == (STAMP.sec, STAMP.nanosec)
    for m in report_to_marker_array(report).markers[1:]:
        assert m.lifetime.sec + m.lifetime.nanosec * 1e-9 == pytest.approx(MOVEIT_MARKER_LIFETIME_S)
        assert m.pose.orientation.w == 1.0  # a valid quaternion: RViz refuses all-zero ones


def test_marker_types_present(report):
    types = {m.type for m in report_to_marker_array(report).markers[1:]}
    assert types == {Marker.SPHERE, Marker.ARROW, Marker.TEXT_VIEW_FACING, Marker.TRIANGLE_LIST, Marker.LINE_STRIP}


# ----- contacts -------------------------------------------------------------------------------
def test_spheres_at_contacts_with_moveit_look(report):
    markers = report_to_marker_array(report).markers
    spheres = of_type(markers, Marker.SPHERE)
    assert len(spheres) == len(report.contacts)
    for sphere, contact in zip(spheres, report.contacts):
        np.testing.assert_allclose(xyz(sphere.pose.position), xyz(contact.position))
        assert sphere.scale.x == sphere.scale.y == sphere.scale.z == pytest.approx(2 * MOVEIT_CONTACT_RADIUS_M)
    penetrating = [s for s in spheres if s.ns != "panda_hand=post"]
    assert all(rgba(s.color) == pytest.approx(MOVEIT_CONTACT_RGBA) for s in penetrating)


def test_near_miss_is_yellow(report):
    markers = report_to_marker_array(report).markers
    near = of_type(markers, Marker.SPHERE, "panda_hand=post") + of_type(markers, Marker.ARROW, "panda_hand=post")
    assert len(near) == 3
    for m in near:
        r, g, b, _ = rgba(m.color)
        assert r > 0.9 and g > 0.7 and b < 0.2, "yellow"


def test_two_arrows_per_contact_along_outward_normals(report):
    markers = report_to_marker_array(report).markers
    for ns, contacts in (("panda_link5=table", report.contacts[:2]), ("panda_hand=post", report.contacts[3:])):
        arrows = of_type(markers, Marker.ARROW, ns)
        assert len(arrows) == 2 * len(contacts)
        for k, contact in enumerate(contacts):
            n = xyz(contact.normal)
            for i, sign in ((0, 1.0), (1, -1.0)):
                arrow = arrows[2 * k + i]
                start, end = xyz(arrow.points[0]), xyz(arrow.points[1])
                np.testing.assert_allclose(start, xyz(contact.nearest_points[i]))
                direction = (end - start) / np.linalg.norm(end - start)
                np.testing.assert_allclose(direction, sign * n, atol=1e-12)
                assert np.linalg.norm(end - start) == pytest.approx(
                    arrow_length_m(contact.penetration_depth, MarkerOptions()))


def test_arrow_length_grows_with_depth_and_is_bounded():
    o = MarkerOptions(arrow_min_length_m=0.05, arrow_max_length_m=0.2, arrow_length_per_depth=5.0)
    assert arrow_length_m(0.0, o) == pytest.approx(0.05)
    assert arrow_length_m(0.01, o) == pytest.approx(0.1)
    assert arrow_length_m(0.02, o) > arrow_length_m(0.01, o)
    assert arrow_length_m(10.0, o) == pytest.approx(0.2)


def test_one_label_per_pair_with_depth_in_mm(report):
    labels = {m.ns: m for m in of_type(report_to_marker_array(report).markers, Marker.TEXT_VIEW_FACING)}
    assert set(labels) == {"panda_link5=table", "panda_link1=panda_link7", "panda_hand=post"}
    assert labels["panda_link5=table"].text == "panda_link5=table  20.0 mm"
    assert labels["panda_link1=panda_link7"].text == "panda_link1=panda_link7  4.0 mm"
    assert labels["panda_hand=post"].text == "panda_hand=post  clearance 15.0 mm"
    # above the deepest contact of the pair
    np.testing.assert_allclose(xyz(labels["panda_link5=table"].pose.position),
                               [0.5, 0.0, 0.2 + MarkerOptions().label_offset_m])


# ----- surfaces -------------------------------------------------------------------------------
def test_triangle_list_matches_surface(report):
    surface = report.surfaces[0]
    meshes = of_type(report_to_marker_array(report).markers, Marker.TRIANGLE_LIST)
    assert len(meshes) == 1
    mesh = meshes[0]
    assert mesh.ns == "panda_link5=table"
    n_triangles = len(surface.triangles) // 3
    assert len(mesh.points) == 3 * n_triangles
    assert len(mesh.colors) == 3 * n_triangles
    for point, index in zip(mesh.points, surface.triangles):
        np.testing.assert_allclose(xyz(point), xyz(surface.vertices[index]))
    assert (mesh.scale.x, mesh.scale.y, mesh.scale.z) == (1.0, 1.0, 1.0)


def test_surface_colours_follow_pressure(report):
    surface = report.surfaces[0]
    mesh = of_type(report_to_marker_array(report).markers, Marker.TRIANGLE_LIST)[0]
    pressure = np.asarray(surface.pressure)
    top = pressure.max()
    for colour, index in zip(mesh.colors, surface.triangles):
        np.testing.assert_allclose(rgba(colour)[:3], pressure_colormap([pressure[index] / top])[0])
        assert colour.a == pytest.approx(MarkerOptions().surface_alpha)
    # a fixed scale, when given, replaces the report's largest pressure
    fixed = report_to_marker_array(report, MarkerOptions(pressure_max_pa=2 * top))
    first = of_type(fixed.markers, Marker.TRIANGLE_LIST)[0].colors[-1]
    expected = pressure_colormap([pressure[surface.triangles[-1]] / (2 * top)])[0]
    np.testing.assert_allclose(rgba(first)[:3], expected)


def test_outline_is_the_closed_boundary(report):
    markers = report_to_marker_array(report).markers
    outlines = of_type(markers, Marker.LINE_STRIP)
    assert len(outlines) == 1
    points = np.array([xyz(p) for p in outlines[0].points])
    np.testing.assert_allclose(points[0], points[-1])  # the loop closes
    assert len(points) == 3 * 4 + 1  # 12 boundary edges of a 3 x 3 grid, plus the closing point
    # every point on the border of the 0.1 m square, none inside
    on_border = np.isclose(points[:, 0], 0) | np.isclose(points[:, 0], 0.1) | \
        np.isclose(points[:, 1], 0) | np.isclose(points[:, 1], 0.1)
    assert on_border.all()


def test_colormap_ends_and_clipping():
    colours = pressure_colormap([-1.0, 0.0, 0.5, 1.0, 2.0, math.nan])
    assert colours.shape == (6, 3)
    assert np.all((colours >= 0) & (colours <= 1))
    np.testing.assert_allclose(colours[0], colours[1])
    np.testing.assert_allclose(colours[3], colours[4])
    np.testing.assert_allclose(colours[5], colours[1])
    assert colours[3][0] > colours[1][0] and colours[1][2] > colours[3][2], "low is blue, high is red"


def test_zero_pressure_surface_gets_the_low_colour():
    vertices, triangles = square_grid(1)
    report = make_report(surfaces=[make_surface("a", "b", vertices, triangles, np.zeros(len(vertices)))])
    mesh = of_type(report_to_marker_array(report).markers, Marker.TRIANGLE_LIST)[0]
    for c in mesh.colors:
        np.testing.assert_allclose(rgba(c)[:3], pressure_colormap([0.0])[0])


# ----- boundary loops -----------------------------------------------------------------------
def test_boundary_loops_of_a_square_with_a_hole():
    # 3 x 3 grid without its centre square: an outer loop of 12 edges and a hole of 4.
    _, triangles = square_grid(3)
    ring = np.delete(triangles, [8, 9], axis=0)
    loops = boundary_loops(ring)
    assert sorted(len(loop) for loop in loops) == [5, 13]
    for loop in loops:
        assert loop[0] == loop[-1]
    hole = min(loops, key=len)
    assert set(hole) == {5, 6, 9, 10}


def test_boundary_loops_of_two_triangles_touching_at_a_vertex():
    loops = boundary_loops([[0, 1, 2], [2, 3, 4]])
    assert sorted(sorted(loop[:-1]) for loop in loops) == [[0, 1, 2], [2, 3, 4]]
    assert all(loop[0] == loop[-1] for loop in loops)


def test_boundary_loops_tolerates_inconsistent_winding():
    # the second triangle runs over the shared edge 1-2 in the same direction as the first
    loops = boundary_loops([[0, 1, 2], [1, 2, 3]])
    assert len(loops) == 1
    assert loops[0][0] == loops[0][-1] and sorted(loops[0][:-1]) == [0, 1, 2, 3]


# ----- options ----------------------------------------------------------------------------------
def test_options_are_configurable(report):
    o = MarkerOptions(sphere_radius_m=0.01, contact_rgba=(0, 0, 1, 1), lifetime_s=2.5, show_arrows=False,
                      show_labels=False, show_surfaces=False)
    markers = report_to_marker_array(report, o).markers
    assert {m.type for m in markers[1:]} == {Marker.SPHERE}
    sphere = markers[1]
    assert sphere.scale.x == pytest.approx(0.02)
    assert rgba(sphere.color) == (0.0, 0.0, 1.0, 1.0)
    assert (sphere.lifetime.sec, sphere.lifetime.nanosec) == (2, 500_000_000)


@pytest.mark.parametrize("kwargs, word", [
    ({"sphere_radius_m": 0.0}, "sphere_radius_m"),
    ({"lifetime_s": -1.0}, "lifetime_s"),
    ({"contact_rgba": (1, 0, 0)}, "contact_rgba"),
    ({"near_miss_rgba": (1, 0, 0, 2)}, "near_miss_rgba"),
    ({"arrow_min_length_m": 0.3, "arrow_max_length_m": 0.1}, "arrow_max_length_m"),
    ({"surface_alpha": 1.5}, "surface_alpha"),
    ({"pressure_max_pa": math.inf}, "pressure_max_pa"),
])
def test_bad_options_name_the_field(kwargs, word):
    with pytest.raises(ValueError, match=word):
        MarkerOptions(**kwargs)


def test_options_are_frozen():
    with pytest.raises(AttributeError):
        MarkerOptions().sphere_radius_m = 1.0  # type: ignore[misc]
