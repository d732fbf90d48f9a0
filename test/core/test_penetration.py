"""Penetration depth as the minimum translation distance (MTD) (issue 15).

Primitive pairs, partly and wholly inside, against their closed-form MTD where there is
a simple one, and every pairing of the five kinds, wholly and partly, against the oracle; coal's answer checked and, where EPA is wrong, replaced; the issue's two Panda
configurations; Panda mesh depths against an independent brute-force oracle on the hulls.

The oracle (:func:`brute_mtd`) shares no code with the package: each body is a dense set
of its own surface points (primitives sampled here; meshes by their hull vertices), the
overlap along ``n`` is ``max_A n.a - min_B n.b``, minimised over 20k directions of a
Fibonacci sphere and then by Nelder-Mead on the two angles from the best few.
"""
from __future__ import annotations

import os

import coal
import numpy as np
import pytest
from scipy.optimize import minimize

from my_collision_pkg.core.checks import penetration
from my_collision_pkg.core.checks.penetration import Body
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CYLINDER, KIND_SPHERE

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
TOL_M = 1e-6


# ----- the independent oracle ----------------------------------------------------
def _surface_points(kind: int, params, T: np.ndarray, n: int = 720) -> tuple[np.ndarray, float]:
    """(points (world), radius): the primitive is the hull of the points grown by the radius, exactly
    (box, sphere, capsule) or to ~r(1-cos(pi/n)) (cylinder, cone)."""
    r, hl = params[0], params[1]
    if kind == KIND_SPHERE:
        return T[:3, 3][None].copy(), r
    if kind == KIND_CAPSULE:
        return np.array([[0, 0, hl], [0, 0, -hl]]) @ T[:3, :3].T + T[:3, 3], r
    if kind == KIND_BOX:
        g = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T * np.asarray(params)
    elif kind == KIND_SPHERE:
        g = r * _fib(20000)
    else:
        a = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
        ring = np.column_stack([r * np.cos(a), r * np.sin(a)])
        if kind == KIND_CYLINDER:
            g = np.vstack([np.column_stack([ring, np.full(n, z)]) for z in (-hl, hl)])
        elif kind == KIND_CONE:
            g = np.vstack([np.column_stack([ring, np.full(n, -hl)]), [[0.0, 0.0, hl]]])
        else:       # capsule: two sphere samplings at the ends
            s = r * _fib(20000)
            g = np.vstack([s + [0, 0, hl], s - [0, 0, hl]])
    return g @ T[:3, :3].T + T[:3, 3], 0.0


def _fib(count: int) -> np.ndarray:
    i = np.arange(count) + 0.5
    z = 1 - 2 * i / count
    phi = np.pi * (1 + 5 ** 0.5) * i
    rho = np.sqrt(1 - z * z)
    return np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])


def brute_mtd(body_a: tuple, body_b: tuple) -> tuple[float, np.ndarray]:
    """(MTD, direction from A to B) of two bodies, each (points, radius): the hull of the points grown by the
    radius, by search over directions."""
    (points_a, r_a), (points_b, r_b) = body_a, body_b

    def f(n):
        return float(np.max(points_a @ n) - np.min(points_b @ n)) + r_a + r_b

    dirs = _fib(20000)
    values = np.max(dirs @ points_a.T, axis=1) - np.min(dirs @ points_b.T, axis=1) + r_a + r_b
    best, best_n = np.inf, None
    for i in np.argsort(values)[:6]:
        theta0 = np.arccos(np.clip(dirs[i, 2], -1, 1)), np.arctan2(dirs[i, 1], dirs[i, 0])

        def g(x):
            return f(np.array([np.sin(x[0]) * np.cos(x[1]), np.sin(x[0]) * np.sin(x[1]), np.cos(x[0])]))
        res = minimize(g, theta0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
        if res.fun < best:
            x = res.x
            best, best_n = float(res.fun), np.array([np.sin(x[0]) * np.cos(x[1]), np.sin(x[0]) * np.sin(x[1]),
                                                     np.cos(x[0])])
    return best, best_n


# ----- shapes ----------------------------------------------------------------------
def _pose(t=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = np.cos(rpy[0]), np.sin(rpy[0]), np.cos(rpy[1]), np.sin(rpy[1]), np.cos(rpy[2]), \
        np.sin(rpy[2])
    T = np.eye(4)
    T[:3, :3] = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]]) \
        @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    T[:3, 3] = t
    return T


def _coal(kind, params):
    r, hl = params[0], params[1]
    return {KIND_BOX: lambda: coal.Box(*(2 * np.asarray(params))), KIND_SPHERE: lambda: coal.Sphere(r),
            KIND_CYLINDER: lambda: coal.Cylinder(r, 2 * hl), KIND_CAPSULE: lambda: coal.Capsule(r, 2 * hl),
            KIND_CONE: lambda: coal.Cone(r, 2 * hl)}[kind]()


def _checked(kind_a, params_a, T_a, kind_b, params_b, T_b):
    """What narrowphase does for a penetrating primitive pair: coal's answer, checked, or the search's."""
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = request.epa_tolerance = 1e-9
    result = coal.DistanceResult()
    to = lambda T: coal.Transform3s(np.ascontiguousarray(T[:3, :3]), np.ascontiguousarray(T[:3, 3]))  # noqa: E731
    d = coal.distance(_coal(kind_a, params_a), to(T_a), _coal(kind_b, params_b), to(T_b), request, result)
    a, b = Body(kind_a, params_a, T_a), Body(kind_b, params_b, T_b)
    p0, p1 = np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2())
    normal = (p1 - p0) / d if abs(d) > 1e-12 else np.array(result.normal)
    ok, n, depth = penetration.checked_mtd(a, b, -d, normal)
    return depth, n, ok, -d


# (name, kind_a, params_a, pose_a, kind_b, params_b, pose_b, analytic MTD, analytic direction from A to B or None)
BOX = (0.5, 0.4, 0.3)
CASES = [
    ("sphere-sphere partly", KIND_SPHERE, (0.3, 0, 0), _pose(), KIND_SPHERE, (0.2, 0, 0), _pose((0.1, 0.2, -0.2)),
     0.5 - 0.3, (1 / 3, 2 / 3, -2 / 3)),
    ("sphere-sphere wholly", KIND_SPHERE, (0.5, 0, 0), _pose(), KIND_SPHERE, (0.1, 0, 0), _pose((0.1, 0, 0)),
     0.5, (1.0, 0, 0)),
    ("sphere-box wholly", KIND_BOX, BOX, _pose(), KIND_SPHERE, (0.1, 0, 0), _pose((0.2, 0.1, 0.05)),
     0.3 - 0.05 + 0.1, (0, 0, 1.0)),
    ("sphere-box partly", KIND_BOX, BOX, _pose(), KIND_SPHERE, (0.1, 0, 0), _pose((0.55, 0.1, 0.0)),
     0.5 - 0.55 + 0.1, (1.0, 0, 0)),
    ("box-box partly", KIND_BOX, BOX, _pose(), KIND_BOX, (0.1, 0.2, 0.3), _pose((0.55, 0.0, 0.1)),
     min(0.5 + 0.1 - 0.55, 0.4 + 0.2, 0.3 + 0.3 - 0.1), (1.0, 0, 0)),
    ("box-box wholly", KIND_BOX, BOX, _pose(), KIND_BOX, (0.05, 0.1, 0.05), _pose((0.1, -0.25, 0.2)),
     min(0.5 - 0.1 + 0.05, 0.4 - 0.25 + 0.1, 0.3 - 0.2 + 0.05), (0, 0, 1.0)),
    ("box in a long cylinder (off axis)", KIND_CYLINDER, (0.1, 0.5, 0), _pose(), KIND_BOX, (0.02, 0.01, 0.05),
     _pose((0.03, 0.0, 0.1)), 0.1 - 0.03 + 0.02, (1.0, 0, 0)),
    ("box in a long tilted cylinder", KIND_CYLINDER, (0.1, 0.5, 0), _pose((0.2, -0.1, 0.3), (0.4, -0.7, 0.2)),
     KIND_BOX, (0.02, 0.01, 0.05), _pose((0.2, -0.1, 0.3), (0.4, -0.7, 0.2)) @ _pose((0.03, 0.0, 0.1)),
     0.1 - 0.03 + 0.02, None),
    ("capsule-capsule parallel", KIND_CAPSULE, (0.1, 0.3, 0), _pose(), KIND_CAPSULE, (0.1, 0.3, 0),
     _pose((0.15, 0, 0.05)), 0.2 - 0.15, (1.0, 0, 0)),
    ("capsule-capsule crossed", KIND_CAPSULE, (0.1, 0.3, 0), _pose(), KIND_CAPSULE, (0.08, 0.3, 0),
     _pose((0.0, 0.12, 0.1), (0.0, np.pi / 2, 0.0)), 0.18 - 0.12, (0, 1.0, 0)),
    ("capsule in a capsule", KIND_CAPSULE, (0.3, 0.5, 0), _pose(), KIND_CAPSULE, (0.02, 0.05, 0),
     _pose((0.1, 0, 0.2)), 0.32 - 0.1, (1.0, 0, 0)),
    ("sphere in a cylinder", KIND_CYLINDER, (0.2, 0.4, 0), _pose(), KIND_SPHERE, (0.05, 0, 0), _pose((0.1, 0, 0.1)),
     0.2 - 0.1 + 0.05, (1.0, 0, 0)),
    ("sphere partly in a cylinder", KIND_CYLINDER, (0.2, 0.4, 0), _pose(), KIND_SPHERE, (0.05, 0, 0),
     _pose((0.0, 0.22, 0.0)), 0.2 - 0.22 + 0.05, (0, 1.0, 0)),
    ("sphere in a cylinder near its cap", KIND_CYLINDER, (0.2, 0.4, 0), _pose(), KIND_SPHERE, (0.05, 0, 0),
     _pose((0.0, 0.05, -0.38)), 0.4 - 0.38 + 0.05, (0, 0, -1.0)),
    ("sphere in a cone", KIND_CONE, (0.2, 0.2, 0), _pose(), KIND_SPHERE, (0.02, 0, 0), _pose((0, 0, -0.15)),
     0.05 + 0.02, (0, 0, -1.0)),
    ("box in a box, rotated", KIND_BOX, BOX, _pose((0.1, 0.2, 0.3), (0.3, 0.2, -0.5)), KIND_BOX, (0.05, 0.05, 0.05),
     _pose((0.1, 0.2, 0.3), (0.3, 0.2, -0.5)) @ _pose((0.0, 0.3, 0.0)), 0.4 - 0.3 + 0.05, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_primitive_pair_mtd_is_analytic(case):
    _, ka, pa, Ta, kb, pb, Tb, mtd, direction = case
    depth, n, _, _ = _checked(ka, pa, Ta, kb, pb, Tb)
    assert depth == pytest.approx(mtd, abs=TOL_M)
    if direction is not None:
        np.testing.assert_allclose(n, direction, atol=1e-5)
    # the result is a separating translation: B moved by (depth + 1e-6) n is apart, by (depth - 1e-4) n is not
    a, b = Body(ka, pa, Ta), Body(kb, pb, Tb)
    assert penetration.overlap(a, b, n[None])[0] == pytest.approx(depth, abs=1e-9)
    # and the oracle agrees
    oracle, _ = brute_mtd(_surface_points(ka, pa, Ta), _surface_points(kb, pb, Tb))
    assert oracle == pytest.approx(mtd, abs=2e-5)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_swapped_pair_gives_the_same_depth_and_the_opposite_normal(case):
    _, ka, pa, Ta, kb, pb, Tb, mtd, _ = case
    d_ab, n_ab, _, _ = _checked(ka, pa, Ta, kb, pb, Tb)
    d_ba, n_ba, _, _ = _checked(kb, pb, Tb, ka, pa, Ta)
    assert d_ba == pytest.approx(d_ab, abs=TOL_M)
    assert penetration.overlap(Body(kb, pb, Tb), Body(ka, pa, Ta), -n_ab[None])[0] == pytest.approx(d_ab, abs=TOL_M)


# Every unordered pairing of the five primitive kinds, B wholly inside A and B partly
# inside A (across A's side at +x), against the oracle: the closed forms above cover the
# pairings that have a simple one, this covers the rest (cylinder and cone pairs).
_BIG = {KIND_SPHERE: ((0.3, 0.0, 0.0), 0.3), KIND_CAPSULE: ((0.2, 0.3, 0.0), 0.2), KIND_BOX: ((0.3, 0.25, 0.2), 0.3),
        KIND_CYLINDER: ((0.25, 0.3, 0.0), 0.25), KIND_CONE: ((0.3, 0.3, 0.0), 0.175)}   # params, side x at z=-0.05
_SMALL = {KIND_SPHERE: (0.04, 0.0, 0.0), KIND_CAPSULE: (0.02, 0.04, 0.0), KIND_BOX: (0.03, 0.02, 0.04),
          KIND_CYLINDER: (0.03, 0.04, 0.0), KIND_CONE: (0.04, 0.04, 0.0)}
_KIND_NAMES = {KIND_SPHERE: "sphere", KIND_CAPSULE: "capsule", KIND_BOX: "box", KIND_CYLINDER: "cylinder",
               KIND_CONE: "cone"}
_ORDER = (KIND_SPHERE, KIND_BOX, KIND_CAPSULE, KIND_CYLINDER, KIND_CONE)
PAIRINGS = [(a, b, where) for i, a in enumerate(_ORDER) for b in _ORDER[i:] for where in ("wholly", "partly")]


@pytest.mark.parametrize("kind_a, kind_b, where", PAIRINGS,
                         ids=[f"{_KIND_NAMES[a]}-{_KIND_NAMES[b]} {w}" for a, b, w in PAIRINGS])
def test_every_primitive_pairing_gives_the_oracles_mtd(kind_a, kind_b, where):
    params_a, side_x = _BIG[kind_a]
    params_b = _SMALL[kind_b]
    x = 0.05 if where == "wholly" else side_x - 0.01
    T_b = _pose((x, 0.03, -0.05), (0.3, 0.2, 0.1))
    depth, n, _, _ = _checked(kind_a, params_a, _pose(), kind_b, params_b, T_b)
    oracle, _ = brute_mtd(_surface_points(kind_a, params_a, _pose()), _surface_points(kind_b, params_b, T_b))
    assert oracle > 0.0                                  # the pair does overlap
    assert depth == pytest.approx(oracle, abs=2e-5)
    # n separates: the overlap along it is the depth, within the check's own tolerance
    along_n = penetration.overlap(Body(kind_a, params_a, _pose()), Body(kind_b, params_b, T_b), n[None])[0]
    assert along_n == pytest.approx(depth, abs=penetration.CHECK_ABS_M + penetration.CHECK_REL * depth)


def test_a_wrong_epa_answer_is_caught_and_replaced():
    # coal's answer replaced by a cap direction through a long cylinder: the check must refuse it
    a = Body(KIND_CYLINDER, (0.1, 0.5, 0), _pose())
    b = Body(KIND_BOX, (0.02, 0.01, 0.05), _pose((0.03, 0.0, 0.1)))
    wrong_depth = float(penetration.overlap(a, b, np.array([[0, 0, -1.0]]))[0])
    ok, n, depth = penetration.checked_mtd(a, b, wrong_depth, np.array([0, 0, -1.0]))
    # the search's answer, polished to the exact minimum (the box's face against the cylinder's side line)
    assert not ok and depth == pytest.approx(0.09, abs=1e-15)
    np.testing.assert_allclose(n, [1.0, 0, 0], atol=1e-15)
    # a depth that is not the overlap along its own normal is refused too
    ok, _, depth = penetration.checked_mtd(a, b, 0.05, np.array([1.0, 0, 0]))
    assert not ok and depth == pytest.approx(0.09, abs=1e-15)
    # the right answer passes (its depth the overlap along the normal, to rounding)
    ok, _, depth = penetration.checked_mtd(a, b, 0.09, np.array([1.0, 0, 0]))
    assert ok and depth == pytest.approx(0.09, abs=1e-15)


# ----- the Panda: the configurations, and meshes as convex solids ------------
NAMES = [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1"]
FINGER_IN_POST = [-2.0782, -0.26, -2.863, -2.6279, 2.8137, 1.8538, -2.1269, 0.0222]
FINGER_IN_POST_LOW = [-1.766, 0.0267, -2.7677, -2.16, 2.6173, 3.0226, 1.7868, 0.0298]
LINK0_LINK6 = [2.4575, 1.4252, 0.1761, -2.9495, 0.2268, 3.6586, 2.273, 0.0392]


@pytest.fixture(scope="module")
def panda_world_scene():
    from my_collision_pkg.core.model.example_robots import panda_paths  # noqa: PLC0415
    urdf, srdf = panda_paths()
    from my_collision_pkg.core.checks.checker import CollisionChecker  # noqa: PLC0415
    from my_collision_pkg.core.scene.loading import load_scene  # noqa: PLC0415
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    return scene, CollisionChecker(scene)


def _shape_poses(scene, q) -> np.ndarray:
    T_link = scene.robot.link_transforms(np.asarray(q, dtype=float))
    return np.array([T_link[s.link_index] @ s.T_frame_shape if s.link_index >= 0 else s.T_frame_shape
                     for s in scene.world.shapes])


def _oracle_points(scene, T_shape, shape: int) -> np.ndarray:
    g = scene.world.shapes[shape].geometry
    if g.source_mesh is None:
        return _surface_points(g.solid_kind, g.solid_params, T_shape[shape], n=3600)
    hull = g.source_mesh.convex_hull
    return np.asarray(hull.vertices) @ T_shape[shape][:3, :3].T + T_shape[shape][:3, 3], 0.0


def _shape_index(scene, link: str, shape_id: int) -> int:
    return next(i for i, s in enumerate(scene.world.shapes) if s.owner == link and s.shape_id == shape_id)


def _check_contact_against_oracle(scene, q, contact, tol_m):
    T = _shape_poses(scene, q)
    a = _shape_index(scene, contact.link_names[0], contact.shape_ids[0])
    b = _shape_index(scene, contact.link_names[1], contact.shape_ids[1])
    oracle, _ = brute_mtd(_oracle_points(scene, T, a), _oracle_points(scene, T, b))
    assert -contact.distance == pytest.approx(oracle, abs=tol_m)
    np.testing.assert_allclose(contact.nearest_points[1] - contact.nearest_points[0], contact.distance * contact.normal,
                               atol=1e-9)


def test_finger_box_inside_the_post_is_pushed_out_radially(panda_world_scene):
    scene, checker = panda_world_scene
    e = checker.explain(NAMES, FINGER_IN_POST)
    assert not e.valid
    found = [c for c in e.contacts if c.link_names == ("panda_rightfinger", "post") and c.shape_ids == (3, 0)]
    assert found
    c = found[0]
    assert c.depth_rule == "mtd" and not c.depth_is_fallback
    assert -c.distance == pytest.approx(0.0281, abs=5e-4)        # the issue: 28.2 mm (was 624.7)
    assert abs(c.normal[2]) < 1e-6                                # radial, not through a cap
    # every penetrating finger/post contact matches the oracle
    for c in e.contacts:
        if c.distance < 0 and "post" in c.link_names:
            _check_contact_against_oracle(scene, FINGER_IN_POST, c, 2e-5)


def test_finger_box_inside_the_post_near_its_bottom_is_not_pushed_through_the_cap(panda_world_scene):
    # the second configuration: coal's EPA answered -367 mm towards the bottom cap
    scene, checker = panda_world_scene
    e = checker.explain(NAMES, FINGER_IN_POST_LOW)
    deep = [c for c in e.contacts if "post" in c.link_names and c.distance < 0]
    assert not e.valid and deep
    for c in deep:
        assert c.depth_rule == "mtd"
        assert -c.distance < 0.1                                  # far less than the 367 mm to the cap
        _check_contact_against_oracle(scene, FINGER_IN_POST_LOW, c, 2e-5)


def test_link0_link6_meshes_are_convex_solids(panda_world_scene):
    scene, checker = panda_world_scene
    e = checker.explain(NAMES, LINK0_LINK6)
    found = [c for c in e.contacts if set(c.link_names) == {"panda_link0", "panda_link6"}]
    assert not e.valid and found
    c = found[0]
    assert c.depth_rule == "mtd"
    assert -c.distance == pytest.approx(0.1204, abs=5e-4)         # the issue: Drake -120.4 mm (ours was -49.2)
    _check_contact_against_oracle(scene, LINK0_LINK6, c, 1e-5)


def test_panda_mesh_depths_match_the_hull_oracle_at_random_penetrating_configurations(panda_world_scene):
    scene, checker = panda_world_scene
    rng = np.random.default_rng(15)
    lo, hi = np.array([-2.9, -1.76, -2.9, -3.07, -2.9, -0.02, -2.9, 0.0]), \
        np.array([2.9, 1.76, 2.9, -0.07, 2.9, 3.75, 2.9, 0.04])
    checked = 0
    verdicts = []
    for _ in range(60):
        q = rng.uniform(lo, hi)
        e = checker.explain(NAMES, q)
        verdicts.append((e.valid, checker.check(NAMES, q).valid))
        for c in e.contacts:
            if c.distance < -1e-4 and c.depth_rule == "mtd" and checked < 25:
                _check_contact_against_oracle(scene, q, c, 2e-5)
                checked += 1
    assert checked >= 10
    assert all(x == y for x, y in verdicts)      # explain's verdict is still the predicate's


def test_nearly_convex_rule_documented_tolerance(panda_world_scene):
    scene, _ = panda_world_scene
    world = scene.world
    for i, s in enumerate(world.shapes):
        g = s.geometry
        if g.source_mesh is None or not g.source_mesh.is_watertight:
            continue
        ratio = 1.0 - abs(g.source_mesh.volume) / g.source_mesh.convex_hull.volume
        assert penetration.nearly_convex(world, i) == (ratio <= penetration.CONVEX_VOLUME_TOLERANCE)


def test_a_non_convex_mesh_keeps_the_deepest_point_rule(panda_world_scene):
    import trimesh  # noqa: PLC0415
    from my_collision_pkg.core.model.example_robots import panda_paths  # noqa: PLC0415
    from my_collision_pkg.core.model.shapes import Sphere, TriangleMesh  # noqa: PLC0415
    from my_collision_pkg.core.scene.loading import load_scene  # noqa: PLC0415
    from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject  # noqa: PLC0415
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    torus = trimesh.creation.torus(0.2, 0.05)           # hull volume 1.8x its own: genuinely non-convex
    T_ring = np.eye(4)
    T_ring[:3, 3] = [0.5, 0.0, 1.0]
    T_ball = np.eye(4)
    T_ball[:3, 3] = [0.5 + 0.2, 0.0, 1.0]                # a sphere on the ring's core circle
    scene.apply([AddObject(SceneObject("ring", (ObjectShape(TriangleMesh(np.asarray(torus.vertices),
                                                                          np.asarray(torus.faces))),), T_ring)),
                 AddObject(SceneObject("ball", (ObjectShape(Sphere(0.02)),), T_ball))])
    world = scene.world
    ring = next(i for i, s in enumerate(world.shapes) if s.owner == "ring")
    assert not penetration.nearly_convex(world, ring)
    from my_collision_pkg.core.checks.narrowphase import pair_distance  # noqa: PLC0415
    ball = next(i for i, s in enumerate(world.shapes) if s.owner == "ball")
    T = _shape_poses(scene, np.zeros(len(scene.robot.active_joint_names)))
    result = pair_distance(world, T, ring, ball)
    assert result.distance_m < 0 and result.rule == "deepest_point"
