"""Run-time edits of the allowed collision matrix (PlanningScene.set_allowed_collisions).

On the Panda with the default world: edits change verdicts exactly for the named pairs,
MoveIt's precedence of default entries, all-or-nothing refusal by name, and every check
(predicate, batch, explain, motions, clearance) following the matrix at once.
"""
from __future__ import annotations

import collections
import time
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.scene.acm import AllowedCollisionMatrix
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject
from my_collision_pkg.core.model.shapes import Box

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
ARM = [f"panda_joint{i}" for i in range(1, 8)]
ELBOW_FOLDED = [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785]        # the demo's self-collision
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
HAND_PARTS = ("panda_hand", "panda_leftfinger", "panda_rightfinger")


@pytest.fixture
def panda():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    return scene, CollisionChecker(scene)


def _pairs(checker, q) -> set[frozenset]:
    return {frozenset(c.link_names) for c in checker.explain(ARM, q, max_contacts=1000).contacts
            if c.distance <= 0.0}


def _random(checker, n, seed=15):
    robot = checker.scene.robot
    arm = [robot.active_joint_names.index(name) for name in ARM]
    return np.random.default_rng(seed).uniform(robot.lower_limits[arm], robot.upper_limits[arm], size=(n, len(ARM)))


def test_allowing_the_elbow_pairs_makes_the_folded_pose_valid_and_reverting_restores_it(panda):
    scene, checker = panda
    assert _pairs(checker, ELBOW_FOLDED) == {frozenset(("panda_link2", p)) for p in HAND_PARTS}
    # the pair alone: the fingers still touch the upper arm
    scene.set_allowed_collisions([("panda_link2", "panda_hand", True)])
    assert _pairs(checker, ELBOW_FOLDED) == {frozenset(("panda_link2", p)) for p in HAND_PARTS[1:]}
    scene.set_allowed_collisions([("panda_link2", p, True) for p in HAND_PARTS[1:]])
    assert checker.check(ARM, ELBOW_FOLDED).valid
    scene.set_allowed_collisions([("panda_link2", p, False) for p in HAND_PARTS])
    assert not checker.check(ARM, ELBOW_FOLDED).valid
    assert _pairs(checker, ELBOW_FOLDED) == {frozenset(("panda_link2", p)) for p in HAND_PARTS}


def test_an_edit_changes_verdicts_exactly_for_the_named_pair(panda):
    scene, checker = panda
    rows = _random(checker, 120)
    before = [_pairs(checker, q) for q in rows]
    counts = collections.Counter(pair for b in before for pair in b)
    named, touching = counts.most_common(1)[0]             # the pair that touches most often
    assert touching >= 3
    scene.set_allowed_collisions([(*sorted(named), True)])
    after = [_pairs(checker, q) for q in rows]
    assert all(a == b - {named} for a, b in zip(after, before))
    valid = checker.check_batch(ARM, rows)[0]
    assert valid.tolist() == [not a for a in after]


def test_default_entries_follow_moveits_precedence(panda):
    scene, checker = panda
    table_pairs = sorted(tuple(sorted(p)) for p in _pairs(checker, INTO_TABLE) if "table" in p)
    assert len(table_pairs) >= 2
    # the table may touch everything: no table contact anywhere
    scene.set_allowed_collisions(defaults=[("table", True)])
    assert all("table" not in p for p in _pairs(checker, INTO_TABLE))
    # an explicit entry wins over the default entry
    named = frozenset(table_pairs[0])
    scene.set_allowed_collisions([(*table_pairs[0], False)])
    assert {p for p in _pairs(checker, INTO_TABLE) if "table" in p} == {named}
    # both bodies with defaults: allowed only if both allow
    acm = AllowedCollisionMatrix(default_entries={"a": True, "b": False, "c": True})
    assert acm.allowed("a", "c") and not acm.allowed("a", "b") and acm.allowed("a", "x")
    assert not acm.allowed("b", "x") and not acm.allowed("x", "y")
    # the model's entries (SRDF, adjacency) are explicit: a default entry does not undo them
    scene.set_allowed_collisions(defaults=[("panda_link1", False)])
    assert scene.world.acm.allowed("panda_link0", "panda_link1")


def test_replace_starts_from_the_models_matrix(panda):
    scene, checker = panda
    scene.set_allowed_collisions([("panda_link6", "table", True)], [("post", True)])
    scene.set_allowed_collisions([("panda_link2", "panda_hand", True)], replace=True)
    acm = scene.world.acm
    assert not acm.allowed("panda_link6", "table") and not acm.allowed("panda_link6", "post")
    assert acm.allowed("panda_link2", "panda_hand") and acm.allowed("panda_link0", "panda_link1")


@pytest.mark.parametrize("entries, defaults, fragment", [
    ([("panda_link2", "no_such_link", True)], [], "no_such_link"),
    ([("panda_link2", "panda_hand", True), ("table", "ghost", True)], [], "entry 1: 'ghost'"),
    ([("panda_link2", "panda_hand", "yes")], [], "allowed must be true or false"),
    ([("panda_link2", "panda_hand")], [], "entry 0: expected (name, name, allowed)"),
    ([], [("nobody", True)], "default entry 0: 'nobody'"),
    ([], [("", True)], "non-empty"),
])
def test_a_bad_edit_is_refused_by_name_and_changes_nothing(panda, entries, defaults, fragment):
    scene, checker = panda
    world = scene.world
    with pytest.raises(SceneError, match=None) as raised:
        scene.set_allowed_collisions(entries, defaults)
    assert fragment in str(raised.value)
    assert scene.world is world                          # all or nothing: the same snapshot
    assert not checker.check(ARM, ELBOW_FOLDED).valid


def test_motions_and_clearance_follow_the_matrix_at_once(panda):
    scene, checker = panda
    assert not checker.check_motion(ARM, FREE, INTO_TABLE).valid
    table_rows = lambda: [r for r, names in enumerate(checker.clearance(ARM, INTO_TABLE, 0.05).body_names)
                          if "table" in names]
    assert table_rows()
    scene.set_allowed_collisions(defaults=[("table", True)])
    assert not table_rows()
    motion = checker.check_motion(ARM, FREE, INTO_TABLE)
    assert all("table" not in c.link_names for c in motion.contacts)
    discrete = checker.check_motion(ARM, FREE, INTO_TABLE, mode="discrete", max_step=0.05)
    assert all("table" not in c.link_names for c in discrete.contacts)


def test_entries_naming_objects_added_later_and_attached_touch_links(panda):
    scene, checker = panda
    T = np.eye(4)
    T[:3, 3] = (0.4, 0.0, 0.5)
    scene.apply([AddObject(SceneObject("crate", (ObjectShape(Box((0.1, 0.1, 0.1))),), T))])
    scene.set_allowed_collisions(defaults=[("crate", True)])
    assert scene.world.acm.allowed("crate", "panda_hand")
    names, matrix = scene.allowed_collisions()
    assert names[-3:] == ("table", "post", "crate") or set(names[-3:]) == {"table", "post", "crate"}
    np.testing.assert_array_equal(matrix, matrix.T)
    assert matrix.diagonal().all()
    i, j = names.index("crate"), names.index("panda_hand")
    assert matrix[i, j]
    k, m = names.index("panda_link0"), names.index("panda_link1")
    assert matrix[k, m]                                        # adjacent links
    with pytest.raises(SceneError, match="'nope'"):
        scene.allowed_collisions(["panda_hand", "nope"])


# ----- self pairs and the size of an answer (issue 39) -------------------------------
def test_a_self_pair_is_refused_by_name_and_the_matrix_is_unchanged(panda):
    scene, checker = panda
    before = scene.world
    with pytest.raises(SceneError, match=r"entry 1: \('table', 'table'\) names one body twice"):
        scene.set_allowed_collisions([("panda_hand", "table", True), ("table", "table", False)])
    assert scene.world is before
    assert not checker.check(ARM, INTO_TABLE).valid


def test_a_name_given_twice_is_one_body_and_may_touch_itself(panda):
    scene, _ = panda
    names, matrix = scene.allowed_collisions(["table", "table", "panda_hand"])
    assert names == ("table", "table", "panda_hand")
    assert matrix[0, 1] and matrix[1, 0]
    assert not matrix[0, 2]


def test_more_names_than_the_bound_are_refused_before_any_work(panda):
    from my_collision_pkg.core.scene.planning_scene import MAX_ALLOWED_COLLISIONS_NAMES
    scene, _ = panda
    too_many = ["table"] * (MAX_ALLOWED_COLLISIONS_NAMES + 1)
    start = time.monotonic()
    with pytest.raises(SceneError, match="MAX_ALLOWED_COLLISIONS_NAMES"):
        scene.allowed_collisions(too_many)
    assert time.monotonic() - start < 0.05
    names, matrix = scene.allowed_collisions(too_many[:MAX_ALLOWED_COLLISIONS_NAMES])
    assert matrix.shape == (MAX_ALLOWED_COLLISIONS_NAMES,) * 2 and matrix.all()
