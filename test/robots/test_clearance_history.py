"""Clearance rows do not depend on what the process did before (issue 40), nor on how the
configurations are sent (one request, one at a time, smaller chunks).

The same request of 200 Panda configurations at influence 0.05 m (config/panda_world.yaml,
bench_core's seed) runs in fresh processes that start differently: with the request itself,
with another clearance call (7 configurations at 0.3 m), and with a box distance of coal's own
made before my_collision_pkg is imported (an axis-aligned first query: what set coal's box
support factor to 1 + 1e-10 for the whole process, see core/geometry/coal_setup.py). Every
array of the answers must be bitwise equal. Before the fix, 215 of the 320 rows' distances
differed (by up to 2.5e-11 m) between the first two processes, all of them rows with a box.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

WORLD = os.path.join(os.path.dirname(__file__), "..", "..", "config", "panda_world.yaml")
SCRIPT = r"""
import sys
import numpy as np
urdf, srdf, world, first, out = sys.argv[1:6]
if first == "coal_box_first":
    import coal
    box = coal.Box(1.0, 1.0, 1.0)
    coal.distance(box, coal.Transform3s(), box, coal.Transform3s(np.eye(3), np.array([3.0, 0.0, 0.0])),
                  coal.DistanceRequest(), coal.DistanceResult())
from my_collision_pkg.core.checks import clearance as clearance_module
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.scene.loading import load_scene
scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world)
checker = CollisionChecker(scene, batch_workers=1)
robot = scene.robot
names = robot.active_joint_names
q = np.random.default_rng(20260611).uniform(robot.lower_limits, robot.upper_limits, size=(200, len(names)))
if first != "request":
    checker.clearance(names, q[100:107], 0.3)
FIELDS = ("configuration_index", "shape_pairs", "subshape_ids", "distance", "points", "points_local", "normals",
          "jacobian", "smooth")
def arrays(answer, prefix):
    return {prefix + f: np.asarray(getattr(answer, f)) for f in FIELDS}
found = arrays(checker.clearance(names, q, 0.05), "batch_")
if first == "request":
    # one configuration at a time (the first 60), then the whole request in chunks of 16 configurations
    ones = [checker.clearance(names, q[c:c + 1], 0.05) for c in range(60)]
    for f in FIELDS:
        found["single_" + f] = np.concatenate([np.asarray(getattr(a, f)) for a in ones if len(a.distance)])
    found["single_configuration_index"] = np.concatenate(
        [np.full(len(a.distance), c) for c, a in enumerate(ones) if len(a.distance)])
    clearance_module.CLEARANCE_CHUNK = 16
    found.update(arrays(checker.clearance(names, q, 0.05), "chunked_"))
np.savez(out, **found)
"""
FIELDS = ("configuration_index", "shape_pairs", "subshape_ids", "distance", "points", "points_local", "normals",
          "jacobian", "smooth")


def _run(panda_files, first, out):
    urdf, srdf = panda_files
    subprocess.run([sys.executable, "-c", SCRIPT, urdf, srdf, WORLD, first, out], check=True, timeout=600)
    return np.load(out)


def _differ(a: dict, b: dict, prefix_a: str, prefix_b: str) -> list[str]:
    return [f"{f} ({np.sum(a[prefix_a + f] != b[prefix_b + f]) if a[prefix_a + f].shape == b[prefix_b + f].shape else 'shape'})"
            for f in FIELDS if not (a[prefix_a + f].shape == b[prefix_b + f].shape
                                    and np.array_equal(a[prefix_a + f], b[prefix_b + f]))]


@pytest.fixture(scope="module")
def answers(panda_files, tmp_path_factory):
    folder = tmp_path_factory.mktemp("history")
    return {first: _run(panda_files, first, str(folder / f"{first}.npz"))
            for first in ("request", "other_clearance", "coal_box_first")}


def test_rows_bitwise_equal_whatever_ran_first(answers):
    reference = answers["request"]
    assert len(reference["batch_distance"]) > 100
    for first in ("other_clearance", "coal_box_first"):
        assert _differ(reference, answers[first], "batch_", "batch_") == [], first


def test_single_and_chunked_rows_equal_the_batch(answers):
    found = answers["request"]
    assert _differ(found, found, "chunked_", "batch_") == []
    batch_rows = found["batch_configuration_index"] < 60
    assert batch_rows.sum() > 20
    batch = {"b_" + f: found["batch_" + f][batch_rows] for f in FIELDS}
    assert _differ(batch, found, "b_", "single_") == []
