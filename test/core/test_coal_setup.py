"""core.geometry.coal_setup pins coal's box support factor at 1 (issue 40): coal 3.0 sets it once per
process from the first box query's direction (1 + 1e-10 when that direction has a zero component), so
box distances depended on what the process had queried first."""
import subprocess
import sys

PROBE = r"""
import sys
import numpy as np
if sys.argv[1] == "coal_first":
    import coal
    box = coal.Box(1.0, 1.0, 1.0)
    # an axis-aligned first query: coal sets its factor to 1 + 1e-10, and this -x face moves by 5e-11 m
    d = coal.distance(box, coal.Transform3s(), box, coal.Transform3s(np.eye(3), np.array([3.0, 0.0, 0.0])),
                      coal.DistanceRequest(), coal.DistanceResult())
    assert 2.0 - d > 1e-11, d
if sys.argv[1] == "halfspace_first":
    import coal
    # the support with swept sphere (halfspace distances): its own factor, set the same way
    d = coal.distance(coal.Halfspace(np.array([1.0, 0.0, 0.0]), 0.0), coal.Transform3s(), coal.Box(1.0, 1.0, 1.0),
                      coal.Transform3s(np.eye(3), np.array([3.0, 0.0, 0.0])), coal.DistanceRequest(),
                      coal.DistanceResult())
    assert 2.5 - d > 1e-11, d
from my_collision_pkg.core.geometry import coal_setup
print(coal_setup.BOX_SUPPORT_EXACT, coal_setup.box_inflation())
"""


def _probe(first: str) -> str:
    return subprocess.run([sys.executable, "-W", "error", "-c", PROBE, first], check=True, capture_output=True,
                          text=True, timeout=120).stdout.strip()


def test_box_support_exact_in_a_fresh_process():
    assert _probe("package_first") == "True (0.0, 0.0)"


def test_box_support_set_back_to_exact_after_a_query_before_the_import():
    assert _probe("coal_first") == "True (0.0, 0.0)"
    assert _probe("halfspace_first") == "True (0.0, 0.0)"
