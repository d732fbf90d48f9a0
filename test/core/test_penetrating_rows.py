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
