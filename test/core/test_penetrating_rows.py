"""Clearance's penetrating convex rows in one compiled call (kernels/penetrating_rows.py) give, field for field and
bit for bit, the rows of the per-row path (narrowphase.pair_contacts, then the witness features), on Panda
configurations that penetrate (the table, the post and self-collisions: mesh-mesh, mesh-box, mesh-cylinder,
box-box and box-cylinder rows)."""
import dataclasses
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.scene.loading import load_scene, panda_paths

PANDA_WORLD = os.path.join(os.path.dirname(__file__), "..", "..", "config", "panda_world.yaml")
SEED = 20260611


@pytest.fixture(scope="module")
def panda():
    urdf, srdf = panda_paths()
    checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD), batch_workers=1)
    names = checker.scene.robot.active_joint_names
    robot = checker.scene.robot
    Q = np.random.default_rng(SEED).uniform(robot.lower_limits, robot.upper_limits, size=(400, len(names)))
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


@pytest.mark.parametrize("influence_m", [0.05, 0.5])
def test_compiled_penetrating_rows_equal_the_per_row_path(panda, monkeypatch, influence_m):
    checker, names, Q = panda
    assert len(Q) >= 20
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
