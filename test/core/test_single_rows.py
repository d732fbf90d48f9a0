"""A one-configuration clearance request runs its compiled steps in one call into per-thread buffers
(``kernels.clearance_rows.single_rows``, ``checks.clearance._single_rows``): its answers are those of the steps
called one by one (``checks.clearance._posed_rows``, what a batch chunk runs), every field bit for bit, whichever
step the call stops after (rows left to coal's first distance, to the narrow phase or the meshes' distance, or
none), on Panda configurations with the world, valid and penetrating, near and far, with and without Jacobians and
a row bound per configuration."""
import dataclasses

import numpy as np
import pytest

from my_collision_pkg.core.checks import clearance
from my_collision_pkg.core.kernels.clearance_rows import SINGLE_DONE
from core_scenes import panda_world_checker


# config/panda_world.yaml (a table and a post) and a ball behind the arm (within 0.05 m of it in 4 of the 160
# configurations, within 0.5 m in 75): a sphere's rows have their first
# distance from coal (every hull, box and cylinder row is compiled), so that the one call stops there too
BALL_WORLD = """frame_id: panda_link0
objects:
  - id: table
    pose: {position: [0.65, 0.0, 0.15]}
    shapes:
      - {type: box, size: [0.5, 1.0, 0.04]}
  - id: post
    pose: {position: [0.0, 0.55, 0.4]}
    shapes:
      - {type: cylinder, radius: 0.05, length: 0.8}
  - id: ball
    pose: {position: [-0.5, -0.5, 0.7]}
    shapes:
      - {type: sphere, radius: 0.1}
"""


@pytest.fixture(scope="module")
def panda(tmp_path_factory):
    world = tmp_path_factory.mktemp("single_rows") / "ball_world.yaml"
    world.write_text(BALL_WORLD)
    checker, names, Q = panda_world_checker(160, str(world))
    yield checker, names, Q
    checker.close()


def _same(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            assert x.tobytes() == y.tobytes() if x.dtype != object else x.tolist() == y.tolist(), f.name
        else:
            assert x == y, f.name


# penetrating rows the second call left to the per-row path, at least, in these 160 configurations (as counted when
# this test was written)
MIN_LEFT = {0.05: 1, 0.5: 1}


@pytest.mark.parametrize("influence_m", [0.05, 0.5])
def test_one_call_rows_equal_the_steps_one_by_one(panda, monkeypatch, influence_m):
    checker, names, Q = panda
    # the compiled steps called from Python (not fused with the candidate rows in single_request_rows), so that where
    # they stop is counted here; test_fused_request_rows_equal_the_three_calls holds the fused call to these answers
    monkeypatch.setattr(clearance, "ONE_CALL", False)
    stops = {"coal": 0, "narrow": 0}
    from_first, narrow = clearance._measure_from_first, clearance._narrow_phase

    def counted_first(*args):
        stops["coal"] += 1
        return from_first(*args)

    def counted_narrow(*args):
        stops["narrow"] += 1
        return narrow(*args)

    settled = clearance.single_settled_rows

    def counted_settled(*args):
        settled(*args)
        info = args[-4][5 * len(args[9]):]                      # I's info (P = len(pairs))
        stops["penetrating done" if info[0] == SINGLE_DONE else "penetrating left"] += 1

    monkeypatch.setattr(clearance, "_measure_from_first", counted_first)
    monkeypatch.setattr(clearance, "_narrow_phase", counted_narrow)
    monkeypatch.setattr(clearance, "single_settled_rows", counted_settled)
    stops.update({"penetrating done": 0, "penetrating left": 0})
    keywords = [{}, {"compute_jacobians": False}, {"max_rows_per_configuration": 2}]
    answers = [checker.clearance(names, q, influence_m, **keywords[c % 3]) for c, q in enumerate(Q)]
    seen = dict(stops)
    monkeypatch.setattr(clearance, "_single_rows", clearance._posed_rows)
    for c, (q, answer) in enumerate(zip(Q, answers)):
        assert answer.ok, answer.message
        _same(answer, checker.clearance(names, q, influence_m, **keywords[c % 3]))
    # every place the one call stops at was met (rows left to coal: the ball's; to the narrow phase: penetrating
    # pairs whose shapes' bodies were not made yet, or with a row off its mesh; penetrating rows answered by the
    # second call, single_settled_rows, or some of them left to the per-row path), and most answers with rows came
    # out of the calls themselves (_measure_from_first goes on through _narrow_phase: "narrow" counts both stops)
    assert seen["coal"] >= 1 and seen["narrow"] - seen["coal"] >= 1, seen
    assert seen["penetrating done"] >= 10 and seen["penetrating left"] >= MIN_LEFT[influence_m], seen
    with_rows = sum(len(a.distance) > 0 for a in answers)
    assert with_rows - seen["narrow"] >= 20, (with_rows, seen)


@pytest.mark.parametrize("influence_m", [0.05, 0.5])
def test_fused_request_rows_equal_the_three_calls(panda, monkeypatch, influence_m):
    """``single_request_rows`` (the candidate rows, single_rows and single_settled_rows in one compiled call, a
    request's path once the penetrating rows' bodies are made) gives every answer of the three calls bit for bit,
    and it is the path taken."""
    checker, names, Q = panda
    keywords = [{}, {"compute_jacobians": False}, {"max_rows_per_configuration": 2}]
    monkeypatch.setattr(clearance, "ONE_CALL", False)
    three = [checker.clearance(names, q, influence_m, **keywords[c % 3]) for c, q in enumerate(Q)]
    monkeypatch.setattr(clearance, "ONE_CALL", True)
    fused, calls = clearance.single_request_rows, []

    def counted(*args):
        calls.append(fused(*args))
        return calls[-1]

    monkeypatch.setattr(clearance, "single_request_rows", counted)
    for c, (q, answer) in enumerate(zip(Q, three)):
        _same(answer, checker.clearance(names, q, influence_m, **keywords[c % 3]))
    # every request went through the fused call (the bodies were made by the first pass), most with candidate rows
    assert len(calls) == len(Q) and sum(count > 0 for count in calls) >= 20, (len(calls), calls[:10])
