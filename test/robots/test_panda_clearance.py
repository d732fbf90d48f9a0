"""Panda clearance (example-robot-data URDF + SRDF, config/panda_world.yaml): Jacobians against central
differences of the checker's own distance, the finger mimic, an attached object, padding, a group;
distances against coal through pinocchio on the same shape pairs."""
import os

import numpy as np
import pinocchio as pin
import pytest

from my_collision_pkg.core.checks import narrowphase, penetration, witness_features
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import BodyType, Status
from my_collision_pkg.core.model.robot_model import Box
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

WORLD = os.path.join(os.path.dirname(__file__), "..", "..", "config", "panda_world.yaml")
H = 1e-6                     # central-difference step, rad or m
N_CONFIGURATIONS = 40


def _scene(panda_files, **kwargs):
    urdf, srdf = panda_files
    return load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD, **kwargs)


def _fd_errors(scene, res, Q, names):
    """Per row: relative error of the Jacobian row against central differences of the same shape pair."""
    robot, world = scene.robot, scene.world
    resolver_columns = [robot.active_joint_names.index(n) for n in names]
    errors = []
    for r in range(len(res)):
        q = Q[res.configuration_index[r]]
        a, b = res.shape_pairs[r]
        fd = np.empty(len(names))
        for j, col in enumerate(resolver_columns):
            d = []
            for s in (1.0, -1.0):
                x = q.copy()
                x[col] += s * H
                T = world.shape_transforms(robot.link_transforms(x))
                d.append(narrowphase.pair_distance(world, T, int(a), int(b)).distance_m)
            fd[j] = (d[0] - d[1]) / (2 * H)
        errors.append(np.linalg.norm(fd - res.jacobian[r]) / max(np.linalg.norm(fd), 1e-6))
    return np.array(errors)


def _assert_fd(scene, res, Q, names, min_rows=20):
    errors = _fd_errors(scene, res, Q, names)
    smooth = errors[res.smooth]
    assert len(smooth) >= min_rows, f"only {len(smooth)} smooth rows"
    assert np.median(smooth) < 1e-6, np.median(smooth)
    assert np.quantile(smooth, 0.99) < 1e-3, np.sort(smooth)[-5:]
    return errors


def _configurations(scene, random_configurations, seed, n=N_CONFIGURATIONS):
    robot = scene.robot
    return random_configurations(robot.lower_limits, robot.upper_limits, n, seed)


def test_jacobians_with_the_world_and_the_finger_mimic(panda_files, random_configurations):
    scene = _scene(panda_files)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    assert "panda_finger_joint2" not in names and "panda_finger_joint1" in names     # joint2 mimics joint1
    Q = _configurations(scene, random_configurations, 1)
    res = checker.clearance(names, Q, 0.1)
    assert res.status == Status.VALID, res.message
    assert res.jacobian.shape == (len(res), len(names))
    assert set(res.configuration_index.tolist()) <= set(range(len(Q)))
    assert {BodyType.WORLD_OBJECT, BodyType.ROBOT_LINK} <= set(res.body_types.ravel().tolist())
    _assert_fd(scene, res, Q, names)
    # the finger column: rows on a finger against a world object move with the finger joint
    col = names.index("panda_finger_joint1")
    finger = np.array([("finger" in a) != ("finger" in b) and "panda_hand" not in (a, b)
                       for a, b in res.body_names])
    assert np.any(np.abs(res.jacobian[finger, col]) > 1e-6) or not finger.any()
    # invariants of each row
    np.testing.assert_allclose(np.linalg.norm(res.normals, axis=1), 1.0, atol=1e-9)
    gap = np.einsum("ri,ri->r", res.points[:, 1] - res.points[:, 0], res.normals)
    np.testing.assert_allclose(gap, res.distance, atol=1e-7)      # no padding here


def test_jacobians_named_subset_padding_attached_object(panda_files, random_configurations):
    scene = _scene(panda_files, default_padding_m=0.01)
    box = SceneObject("tool", (ObjectShape(Box((0.06, 0.06, 0.1))),), make_transform(None, (0.0, 0.0, 0.15)),
                      "panda_hand", ("panda_hand", "panda_leftfinger", "panda_rightfinger"))
    scene.apply([AddObject(box)])
    checker = CollisionChecker(scene)
    names = ("panda_joint2", "panda_joint4", "panda_joint6", "panda_finger_joint1")
    Q_full = _configurations(scene, random_configurations, 2)
    Q = Q_full[:, [scene.robot.active_joint_names.index(n) for n in names]]
    res = checker.clearance(names, Q, 0.1, pad_self_collisions=True)
    assert res.status == Status.VALID, res.message
    assert res.jacobian_joint_names == names
    # the unnamed joints keep the scene's current values: differences around that configuration
    base = np.repeat(scene.current_positions[None], len(Q), axis=0)
    base[:, [scene.robot.active_joint_names.index(n) for n in names]] = Q
    assert np.any(res.body_types == BodyType.ROBOT_ATTACHED)
    _assert_fd(scene, res, base, names, min_rows=10)
    # padding: distance = padded-free distance minus the pair's summed padding
    plain = checker.clearance(names, Q, 0.1, pad_self_collisions=True, pad_environment_collisions=False)
    world = scene.world
    for r in range(min(len(res), 50)):
        a, b = res.shape_pairs[r]
        margin = world.shapes[a].padding_m + world.shapes[b].padding_m
        T = world.shape_transforms(scene.robot.link_transforms(base[res.configuration_index[r]]))
        d = narrowphase.pair_distance(world, T, int(a), int(b)).distance_m
        assert res.distance[r] == pytest.approx(d - margin, abs=1e-9)
    # body-frame witness points: the owner's frame (link, attached object on its link, world object)
    attached = 0
    for r in range(len(res)):
        T_link = scene.robot.link_transforms(base[res.configuration_index[r]])
        for side in (0, 1):
            T_owner = world.shape_owner_frame(int(res.shape_pairs[r, side]), T_link)
            expected = T_owner[:3, :3].T @ (res.points[r, side] - T_owner[:3, 3])
            np.testing.assert_allclose(res.points_local[r, side], expected, atol=1e-12)
            attached += res.body_types[r, side] == BodyType.ROBOT_ATTACHED
    assert attached > 0
    env_plain = plain.distance[plain.body_types[:, 1] == BodyType.WORLD_OBJECT]
    env_pad = res.distance[res.body_types[:, 1] == BodyType.WORLD_OBJECT]
    assert len(env_pad) >= len(env_plain)         # padding brings more pairs within the influence


def test_group_keeps_pairs_moved_by_the_group(panda_files, random_configurations):
    scene = _scene(panda_files)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    Q = _configurations(scene, random_configurations, 3)
    whole = checker.clearance(names, Q, 0.3)
    hand = checker.clearance(names, Q, 0.3, group_name="hand")
    assert hand.status == Status.VALID and 0 < len(hand) < len(whole)
    hand_links = set(scene.semantic.group_links(scene.robot, "hand"))
    assert all(a in hand_links or b in hand_links for a, b in hand.body_names)
    _assert_fd(scene, hand, Q, names, min_rows=10)


def test_k_smallest_and_without_jacobians(panda_files, random_configurations):
    scene = _scene(panda_files)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    Q = _configurations(scene, random_configurations, 4, n=10)
    full = checker.clearance(names, Q, 0.5)
    best = checker.clearance(names, Q, 0.5, max_rows_per_configuration=3, compute_jacobians=False)
    assert best.jacobian.shape == (len(best), 0)
    for c in range(len(Q)):
        d = np.sort(full.distance[full.configuration_index == c])[:3]
        np.testing.assert_allclose(best.distance[best.configuration_index == c], d)


def test_distances_agree_with_pinocchio_and_coal(panda_files, random_configurations, coal_peer_factory):
    scene = _scene(panda_files)
    checker = CollisionChecker(scene)
    peer = coal_peer_factory(scene, panda_files[0])
    robot, world = scene.robot, scene.world
    names = robot.active_joint_names
    Q = _configurations(scene, random_configurations, 5, n=20)
    res = checker.clearance(names, Q, 0.2)
    pair_of = {tuple(p): k for k, p in enumerate(world.pairs.tolist())}
    compared = 0
    for r in np.flatnonzero(res.distance > 1e-4):             # separated pairs: one definition everywhere
        k = pair_of[tuple(res.shape_pairs[r].tolist())]
        d = peer.pair_distance(robot, Q[res.configuration_index[r]], k)
        assert d == pytest.approx(res.distance[r], abs=1e-5)
        compared += 1
    assert compared > 20
    # and our Jacobian against pinocchio's frame Jacobian at the witness point for one row
    r = int(np.flatnonzero((res.body_types[:, 1] == BodyType.WORLD_OBJECT) & (res.distance > 1e-3))[0])
    q = Q[res.configuration_index[r]]
    q_pin = peer.pin_configuration(robot, q)
    model, data = peer.model, peer.data
    pin.forwardKinematics(model, data, q_pin)
    pin.updateFramePlacements(model, data)
    link = res.body_names[r, 0]
    frame = model.getFrameId(link)
    J6 = pin.computeFrameJacobian(model, data, q_pin, frame, pin.LOCAL_WORLD_ALIGNED)
    offset = res.points[r, 0] - data.oMf[frame].translation
    Jp = J6[:3] + np.cross(J6[3:].T, offset).T
    grad_pin = -res.normals[r] @ Jp                  # body 1 is the world: only body 0 moves
    # pinocchio's q columns for our active joints (the mimic finger joint2 has its own column)
    cols = [model.joints[model.getJointId(n)].idx_v for n in names]
    expected = grad_pin[cols]
    j2 = model.getJointId("panda_finger_joint2")
    if j2 < model.njoints:
        expected[names.index("panda_finger_joint1")] += grad_pin[model.joints[j2].idx_v]
    np.testing.assert_allclose(res.jacobian[r], expected, atol=1e-8)


def _gap_m(world, T, shape, point):
    """coal's distance of a point (a sphere of zero radius) from a shape it lies outside of."""
    import coal
    result = coal.DistanceResult()
    return coal.distance(coal.Sphere(0.0), narrowphase.coal_transform(make_transform(None, point)),
                         world.shapes[shape].geometry.coal_geometry, narrowphase.coal_transform(T[shape]),
                         narrowphase._REQUEST, result)


def _support_m(world, T, shape, direction):
    """``max direction . x`` over the convex solid of ``shape`` at poses ``T`` (a mesh's: its hull's vertices, the
    same maximum as over the mesh), metres."""
    from my_collision_pkg.core.checks import clearance
    from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CYLINDER
    convex = clearance._tables(world).convex
    local = T[shape, :3, :3].T @ direction
    offset = direction @ T[shape, :3, 3]
    if convex.kind[shape] == KIND_BOX:
        return offset + np.abs(local) @ convex.params[shape]
    if convex.kind[shape] == KIND_CYLINDER:
        radius, half_length = convex.params[shape, :2]
        return offset + radius * np.hypot(local[0], local[1]) + half_length * abs(local[2])
    vertices = convex.vertices[convex.vertex_start[shape]:convex.vertex_start[shape + 1]]
    assert len(vertices)
    return offset + np.max(vertices @ local)


def _plane_gap(world, T, a, b, distance, normal):
    """``distance`` minus the gap between the planes normal to ``normal`` (a -> b) that touch a and b: >= 0 for
    any normal and the true distance of two convex solids, 0 along the true normal."""
    n = np.asarray(normal) / np.linalg.norm(normal)
    return distance - (-_support_m(world, T, b, -n) - _support_m(world, T, a, n))


@pytest.mark.parametrize("influence", [0.05, 0.5])
def test_rows_are_those_of_an_unculled_reference(panda_files, random_configurations, influence, monkeypatch):
    """Every checked pair through narrowphase.pair_distance, no culling: clearance finds the same rows with the
    same numbers, and most mesh pairs are settled on their hulls (no mesh distance computed)."""
    from my_collision_pkg.core.checks import clearance
    scene = _scene(panda_files, default_padding_m=0.01)
    checker = CollisionChecker(scene)
    robot, world = scene.robot, scene.world
    names = robot.active_joint_names
    Q = _configurations(scene, random_configurations, 11, n=150)
    mesh_distances = []
    original = clearance._mesh_distance
    monkeypatch.setattr(clearance, "_mesh_distance", lambda *a: (mesh_distances.append(1), original(*a))[1])
    res = checker.clearance(names, Q, influence)
    assert res.status == Status.VALID, res.message
    selection = world.pair_selection("", True, False)
    ours = {(int(c), *map(int, p)): r for r, (c, p) in enumerate(zip(res.configuration_index, res.shape_pairs))}
    assert len(ours) == len(res)
    expected, mesh_rows, cylinder_rows = 0, 0, 0
    for c, q in enumerate(Q):
        T = world.shape_transforms(robot.link_transforms(q))
        for (a, b), margin in zip(selection.pairs.tolist(), selection.margins.tolist()):
            ref = narrowphase.pair_distance(world, T, a, b)
            r = ours.get((c, a, b))
            if not ref.distance_m < influence + margin:
                assert r is None, (c, a, b, ref.distance_m)
                continue
            assert r is not None, f"pair {a}, {b} at {ref.distance_m} m dropped in configuration {c}"
            expected += 1
            assert res.distance[r] == pytest.approx(ref.distance_m - margin, abs=1e-8)
            p0, p1 = res.points[r]
            np.testing.assert_allclose(p1 - p0, (res.distance[r] + margin) * res.normals[r], atol=1e-9)
            if ref.distance_m > 1e-4:      # apart: the normal is unique, the witness points on the bodies
                # (coal's GJK at 1e-9 m against a curved primitive leaves the normal ~1e-5 uncertain; against a
                # cylinder's side, where ours is exact (gjk.cylinder_side_distances), up to ~1e-3 at 0.05 m: then
                # the plane along ours must separate the bodies more tightly than along coal's, to 1e-9 m)
                if np.abs(res.normals[r] - ref.normal_world).max() > 1e-4:
                    assert clearance._tables(world).cylinder[[a, b]].any(), (c, a, b)
                    ours_gap = _plane_gap(world, T, a, b, ref.distance_m, res.normals[r])
                    assert ours_gap <= 1e-9 and ours_gap < _plane_gap(world, T, a, b, ref.distance_m, ref.normal_world)
                    cylinder_rows += 1
                # a witness point on its body: 1 um off it along the normal is 1 um from the body
                n = res.normals[r]
                assert _gap_m(world, T, a, p0 + 1e-6 * n) == pytest.approx(1e-6, abs=1e-8)
                assert _gap_m(world, T, b, p1 - 1e-6 * n) == pytest.approx(1e-6, abs=1e-8)
                if world.shapes[a].geometry.is_bvh or world.shapes[b].geometry.is_bvh:
                    mesh_rows += 1
            # a penetrating convex pair: its features meet at one point, not within the switch margin
            settled = True
            if ref.distance_m < 0 and ref.rule != "deepest_point" and penetration.nearly_convex(world, a) \
                    and penetration.nearly_convex(world, b):
                found = witness_features.feature_contact(penetration.body(world, T, a), penetration.body(world, T, b),
                                                         ref.distance_m, ref.normal_world)
                settled = found is not None and found[2] >= witness_features.SWITCH_MARGIN_M
            assert res.smooth[r] == (ref.exact and abs(ref.distance_m) >= clearance.SMOOTH_DISTANCE_M
                                     and not (ref.distance_m < 0 and ref.rule == "deepest_point") and settled)
    assert expected == len(res)
    assert mesh_rows >= (10 if influence < 0.1 else 200)
    assert len(mesh_distances) < 0.1 * mesh_rows, (len(mesh_distances), mesh_rows)
    assert cylinder_rows < 0.05 * expected, (cylinder_rows, expected)


def _first_distances(world, Q):
    """The default request's pairs, and clearance_rows.first_distance_rows over every pair (row order: pairs
    within configurations) of configurations Q posed in ``world``: (tables, pair tables, pairs, T_shape, cfg,
    pair, its returns)."""
    from my_collision_pkg.core.checks import clearance
    from my_collision_pkg.core.kernels.clearance_rows import first_distance_rows
    tables = clearance._tables(world)
    pairs = world.pair_selection("", True, False).pairs
    pt = clearance._PairTables(tables, pairs)
    T_shape = np.stack([world.shape_transforms(world.robot.link_transforms(q)) for q in Q])
    cfg = np.repeat(np.arange(len(Q)), len(pairs))
    pair = np.tile(np.arange(len(pairs)), len(Q))
    return tables, pt, pairs, T_shape, cfg, pair, first_distance_rows(cfg, pair, T_shape, *tables.row_world,
                                                                      *pt.row_pairs, clearance._HULL_GJK_M)


def test_compiled_first_distances_of_polytope_pairs_are_coals(panda_files, random_configurations):
    """The compiled GJK's first distances (box-box, mesh hull-box, hull-hull: polytopes) are coal's on the same
    posed shapes, distance, witness points and normal within 1e-9 m / 1e-9, on 300 random configurations and the
    two rows of issue 40 where Drake is off (box-box at 465 mm, mesh-box at 179 mm: valid configurations 105
    and 58 of the issue's seed); every apart row of those pairs is taken by the compiled GJK, none left to coal."""
    from my_collision_pkg.core.geometry.coal_setup import coal
    from my_collision_pkg.core.kernels.codes import KIND_BOX
    scene = _scene(panda_files)
    robot, world = scene.robot, scene.world
    checker = CollisionChecker(scene)
    names = robot.active_joint_names
    drawn = np.random.default_rng(20260611).uniform(robot.lower_limits, robot.upper_limits, size=(2000, len(names)))
    valid = drawn[[checker.check(names, q).valid for q in drawn]]
    Q = np.vstack([valid[[105, 58]], _configurations(scene, random_configurations, 41, 300)])
    tables, pt, pairs, T_shape, cfg, pair, (raw, p0, p1, measured, coal_rows, _) = _first_distances(world, Q)
    polytope = tables.compiled[pairs[:, 0]] & tables.compiled[pairs[:, 1]]
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = 1e-12
    result = coal.DistanceResult()
    left_to_coal = set(coal_rows.tolist())
    is_box = tables.convex.kind == KIND_BOX
    counts = {"box-box": 0, "mesh-box": 0, "mesh-mesh": 0}
    named = {}
    for k in np.flatnonzero(polytope[pair]):
        a, b = pairs[pair[k]]
        c = cfg[k]
        result.clear()
        d = coal.distance(tables.first[a], narrowphase.coal_transform(T_shape[c, a]), tables.first[b],
                          narrowphase.coal_transform(T_shape[c, b]), request, result)
        if d <= 1e-6:
            continue                                       # touching or overlapping: not the compiled GJK's
        assert k not in left_to_coal, (c, a, b, d)
        q0, q1 = np.asarray(result.getNearestPoint1()), np.asarray(result.getNearestPoint2())
        assert abs(raw[k] - d) <= 1e-9, (c, a, b, raw[k], d)
        assert np.abs(p0[k] - q0).max() <= 1e-9 and np.abs(p1[k] - q1).max() <= 1e-9, (c, a, b, p0[k], q0, p1[k], q1)
        if d > 1e-3:
            n_ours, n_coal = (p1[k] - p0[k]) / raw[k], (q1 - q0) / d
            assert np.abs(n_ours - n_coal).max() <= 1e-9, (c, a, b, n_ours, n_coal)
        counts["box-box" if is_box[a] and is_box[b] else "mesh-box" if is_box[a] or is_box[b] else "mesh-mesh"] += 1
        if c < 2:
            named.setdefault((c, str(world.shapes[a].owner), str(world.shapes[b].owner)), []).append(d)
    assert counts["box-box"] >= 300 and counts["mesh-box"] >= 300 and counts["mesh-mesh"] >= 300, counts
    assert min(abs(np.array(named[(0, "panda_rightfinger", "table")]) - 0.465)) < 1e-3, named
    assert min(abs(np.array(named[(1, "panda_link5", "panda_rightfinger")]) - 0.179)) < 1e-3, named


def test_cylinder_side_first_distances_are_certified(panda_files, random_configurations):
    """Polytope-cylinder rows settled by gjk.cylinder_side_distances (nearest points on the cylinder's side) and
    gjk.cylinder_end_distances (on a cap or a rim) and the rest by GJK on the cylinder itself (a rim against an edge
    or a face: clearance_rows._cylinder_rows_by_gjk) are exact: the planes along their normal touching the two
    solids are their distance apart (to 1e-10 m), the cylinder's point is on its side or on an end and the other on
    its solid's supporting plane; coal's distance of the same posed solids agrees within coal's own certified
    slack; every apart row is settled, none left to coal."""
    from my_collision_pkg.core.geometry.coal_setup import coal
    scene = _scene(panda_files)
    robot, world = scene.robot, scene.world
    Q = _configurations(scene, random_configurations, 43, 200)
    tables, pt, pairs, T_shape, cfg, pair, (raw, p0, p1, measured, coal_rows, _) = _first_distances(world, Q)
    left_to_coal = set(coal_rows.tolist())
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = 1e-9
    result = coal.DistanceResult()
    settled, left, ends = 0, 0, 0
    for k in np.flatnonzero(pt.route[pair] >= 2):
        a, b = pairs[pair[k]]
        c = cfg[k]
        if k in left_to_coal:
            left += 1
            continue
        if raw[k] < 0.0:
            continue                 # overlapping: EPA's start of the MTD (kernels.epa, test_epa.py)
        settled += 1
        T = T_shape[c]
        n = (p1[k] - p0[k]) / raw[k]
        assert abs(np.linalg.norm(p1[k] - p0[k]) - raw[k]) <= 1e-12 and raw[k] > 0.0
        assert -1e-12 <= _plane_gap(world, T, a, b, raw[k], n) <= 1e-10, (c, a, b)
        cylinder, point, other, sign = (a, p0[k], b, -1.0) if tables.cylinder[a] else (b, p1[k], a, 1.0)
        radius, half_length = tables.convex.params[cylinder, :2]
        local = T[cylinder, :3, :3].T @ (point - T[cylinder, :3, 3])
        on_side = abs(np.hypot(local[0], local[1]) - radius) <= 1e-12 and abs(local[2]) < half_length
        on_end = abs(abs(local[2]) - half_length) <= 1e-12 and np.hypot(local[0], local[1]) <= radius + 1e-12
        assert on_side or on_end, (c, a, b, local)
        ends += not on_side
        other_point = p1[k] if cylinder == a else p0[k]
        assert abs(_support_m(world, T, other, sign * n) - sign * n @ other_point) <= 1e-12
        result.clear()
        d = coal.distance(tables.first[a], narrowphase.coal_transform(T[a]), tables.first[b],
                          narrowphase.coal_transform(T[b]), request, result)
        q0, q1 = np.asarray(result.getNearestPoint1()), np.asarray(result.getNearestPoint2())
        coal_slack = _plane_gap(world, T, a, b, d, q1 - q0)
        assert abs(d - raw[k]) <= coal_slack + 1e-10, (c, a, b, d, raw[k], coal_slack)
    assert settled >= 1000 and ends >= 50 and left == 0, (settled, ends, left)
