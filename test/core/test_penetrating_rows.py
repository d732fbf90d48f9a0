"""Clearance's penetrating convex rows in one compiled call (kernels/penetrating_rows.py) give, field for field and
bit for bit, the rows of the per-row path (narrowphase.pair_contacts, then the witness features) when both start
from coal's EPA, on Panda configurations that penetrate (the table, the post and self-collisions: mesh-mesh,
mesh-box, mesh-cylinder, box-box and box-cylinder rows); started from the compiled EPA (kernels/epa.py, the default),
the same rows to rounding (a cylinder's: the polished normal within 1e-6 on the flat bottom of the overlap along the
rim), and no penetrating convex row left to coal's first distance."""
import dataclasses
from functools import partial

import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance
from my_collision_pkg.core.kernels.clearance_rows import first_distance_rows as _first_distance_rows
from core_scenes import panda_world_checker


@pytest.fixture(scope="module")
def panda():
    checker, names, Q = panda_world_checker(400)
    penetrating = Q[[not checker.check(names, q).valid for q in Q]][:40]
    yield checker, names, penetrating
    checker.close()


def _fields(answer) -> list:
    return [getattr(answer, f.name) for f in dataclasses.fields(answer)]


def _same(a, b) -> None:
    for x, y in zip(_fields(a), _fields(b)):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes() if x.dtype != object else x.tolist() == y.tolist()
        else:
            assert x == y


def _close(a, b) -> None:
    """The same rows, flags and triangles; numbers within rounding (distances), 1e-8 m (points) and 1e-6 (normals,
    Jacobians)."""
    tolerance = {"distance": 1e-12, "points": 1e-8, "points_local": 1e-8, "normals": 1e-6, "jacobian": 1e-6}
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in tolerance:
            assert x.shape == y.shape and np.abs(x - y).max(initial=0.0) <= tolerance[f.name], f.name
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes() if x.dtype != object else x.tolist() == y.tolist()
        else:
            assert x == y


@pytest.mark.parametrize("influence_m", [0.05, 0.5])
def test_compiled_penetrating_rows_equal_the_per_row_path(panda, monkeypatch, influence_m):
    """From coal's EPA (``use_epa`` False, as before session 42): bit for bit."""
    checker, names, Q = panda
    assert len(Q) >= 20
    monkeypatch.setattr(clearance, "first_distance_rows", partial(_first_distance_rows, use_epa=False))
    # (a one-configuration request's compiled steps call the kernel itself: the steps one by one here)
    monkeypatch.setattr(clearance, "_single_rows", clearance._posed_rows)
    answered = []
    original = clearance._penetrating_convex_rows

    def counted(world, T_shape, cfg, pair, pairs, slow, *rest):
        left = original(world, T_shape, cfg, pair, pairs, slow, *rest)
        answered.append(len(slow) - len(left))
        return left

    monkeypatch.setattr(clearance, "_penetrating_convex_rows", counted)
    single = [checker.clearance(names, q, influence_m) for q in Q]
    batch = checker.clearance(names, Q, influence_m)
    assert sum(answered) >= len(Q)            # most penetrating rows are taken by the compiled call
    def per_row(world, T_shape, cfg, pair, pairs, slow, *rest):
        return slow                           # every slow row through narrowphase.pair_contacts, one by one

    monkeypatch.setattr(clearance, "_penetrating_convex_rows", per_row)
    for q, compiled in zip(Q, single):
        _same(compiled, checker.clearance(names, q, influence_m))
    _same(batch, checker.clearance(names, Q, influence_m))
    assert (batch.distance < 0.0).sum() >= len(Q)


@pytest.mark.parametrize("influence_m", [0.05, 0.5])
def test_rows_from_the_compiled_epa_are_the_per_row_paths(panda, monkeypatch, influence_m):
    """From the compiled EPA (the default): coal's first distance sees no penetrating row; the rows are the per-row
    path's (coal's EPA, checked, polished) to rounding, single and batch."""
    checker, names, Q = panda
    coal_rows = []
    original = clearance._coal_first_distances

    def counted(tables, T_shape, cfg, pair, pairs, pt, rows, raw, *rest):
        original(tables, T_shape, cfg, pair, pairs, pt, rows, raw, *rest)
        coal_rows.extend(raw[rows].tolist())

    monkeypatch.setattr(clearance, "_coal_first_distances", counted)
    single = [checker.clearance(names, q, influence_m) for q in Q]
    batch = checker.clearance(names, Q, influence_m)
    assert not any(d < 0.0 for d in coal_rows), sorted(coal_rows)[:5]
    monkeypatch.setattr(clearance, "_coal_first_distances", original)
    monkeypatch.setattr(clearance, "_penetrating_convex_rows", lambda world, T, cfg, pair, pairs, slow, *rest: slow)
    for q, compiled in zip(Q, single):
        _close(compiled, checker.clearance(names, q, influence_m))
    _close(batch, checker.clearance(names, Q, influence_m))
    assert (batch.distance < 0.0).sum() >= len(Q)


def test_leading_surface_points_tell_overlaps_as_the_full_scan(panda):
    """The region test of a penetrating mesh row (kernels.depth.pair_overlaps_along) looks first at each body's
    surface point farthest along the overlap's normal (leading_sample_inside): its answer is pair_overlaps' (the
    full scans) on every closed-mesh pair of the penetrating configurations' rows, along their normals and along
    random directions; where a leading point says yes, the scan of that side finds a point inside too; and the
    leading points tell most rows by themselves."""
    from my_collision_pkg.core.checks import narrowphase
    from my_collision_pkg.core.kernels import depth

    checker, names, Q = panda
    scene = checker.scene
    robot, world = scene.robot, scene.world
    rng = np.random.default_rng(7)
    told = asked = 0
    for q in Q:
        rows = checker.clearance(names, q, 0.0)
        full = np.array(scene.current_positions, dtype=float)
        for name, value in zip(names, q):
            full[robot.active_joint_names.index(name)] = value
        T_shape = world.shape_transforms(robot.link_transforms(full))
        for (a, b), d, n in zip(rows.shape_pairs.tolist(), rows.distance, rows.normals):
            geometries = world.shapes[a].geometry, world.shapes[b].geometry
            if not d < 0.0 or not any(g.is_closed_bvh for g in geometries) \
                    or min(g.solid_kind for g in geometries) < 0:
                continue
            (samples_a, solid_a), (samples_b, solid_b) = narrowphase.body_packs(world, a), narrowphase.body_packs(world, b)
            packs = (tuple(samples_a), tuple(solid_a), T_shape[a], tuple(samples_b), tuple(solid_b), T_shape[b])
            truth = depth.pair_overlaps(*packs)
            for u in [np.asarray(n, dtype=float)] + list(rng.normal(size=(3, 3))):
                u = u / np.linalg.norm(u)
                assert depth.pair_overlaps_along(*packs, *u) == truth
            asked += 1
            lead_a = depth.leading_sample_inside(depth.SurfaceSamples(*samples_a), T_shape[a], T_shape[b],
                                                 depth.SolidArrays(*solid_b), *n)
            lead_b = depth.leading_sample_inside(depth.SurfaceSamples(*samples_b), T_shape[b], T_shape[a],
                                                 depth.SolidArrays(*solid_a), *(-np.asarray(n)))
            if lead_a:
                assert depth.any_surface_point_inside(depth.SurfaceSamples(*samples_a), T_shape[a], T_shape[b],
                                                      depth.SolidArrays(*solid_b))
            if lead_b:
                assert depth.any_surface_point_inside(depth.SurfaceSamples(*samples_b), T_shape[b], T_shape[a],
                                                      depth.SolidArrays(*solid_a))
            told += bool(lead_a or lead_b)
    assert asked >= 20 and told >= 0.7 * asked, (told, asked)
