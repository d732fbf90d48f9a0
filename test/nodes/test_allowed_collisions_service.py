"""~/set_allowed_collisions and ~/get_allowed_collisions over DDS: edits change the answers of
every service at once, a bad edit is refused by name and changes nothing."""
from __future__ import annotations

import numpy as np
import pytest
from node_processes import ARM, FREE, INTO_TABLE

from my_collision_pkg.srv import CheckMotion

ELBOW_FOLDED = [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785]        # the demo's self-collision
HAND_PARTS = ("panda_hand", "panda_leftfinger", "panda_rightfinger")


@pytest.fixture(scope="module")
def client(validator):
    validator.wait_for_services(services=("set_allowed", "get_allowed", "clearance", "motion"))
    return validator


def _matrix(answer) -> tuple[list[str], np.ndarray]:
    names = list(answer.names)
    return names, np.asarray(answer.allowed, dtype=bool).reshape(len(names), len(names))


def test_an_edit_makes_the_folded_pose_valid_and_reverting_restores_it(client):
    assert not client.check(ARM, ELBOW_FOLDED).valid
    answer = client.set_allowed_collisions([("panda_link2", part, True) for part in HAND_PARTS])
    assert answer.success, answer.message
    assert client.check(ARM, ELBOW_FOLDED).valid
    assert client.explain(ARM, ELBOW_FOLDED).valid
    names, matrix = _matrix(client.get_allowed_collisions())
    assert all(matrix[names.index("panda_link2"), names.index(part)] for part in HAND_PARTS)
    np.testing.assert_array_equal(matrix, matrix.T)
    assert client.set_allowed_collisions([("panda_link2", part, False) for part in HAND_PARTS]).success
    assert not client.check(ARM, ELBOW_FOLDED).valid
    listed = {(e.name_1, e.name_2): e.allowed for e in client.get_allowed_collisions().entries}
    assert listed[("panda_hand", "panda_link2")] is False


def test_a_bad_edit_is_refused_by_name_and_changes_nothing(client):
    before = client.get_allowed_collisions()
    answer = client.set_allowed_collisions([("panda_link2", "panda_hand", True), ("table", "ghost", True)])
    assert not answer.success and "ghost" in answer.message and "unchanged" in answer.message
    assert not client.check(ARM, ELBOW_FOLDED).valid
    after = client.get_allowed_collisions()
    assert list(after.allowed) == list(before.allowed) and list(after.names) == list(before.names)
    unknown = client.get_allowed_collisions(["panda_hand", "nope"])
    assert not unknown.success and "'nope'" in unknown.message


def test_default_entries_reach_motions_and_clearance_at_once(client):
    assert ("table" in client.compute_clearance(ARM, INTO_TABLE, 0.05).body_names)
    assert client.set_allowed_collisions(defaults=[("table", True)]).success
    try:
        assert not ("table" in client.compute_clearance(ARM, INTO_TABLE, 0.05).body_names)
        motion = client.check_motion(ARM, FREE, INTO_TABLE, mode=CheckMotion.Request.CERTIFIED)
        assert all("table" not in c.link_names for c in motion.contacts)
        defaults = {d.name: d.allowed for d in client.get_allowed_collisions().defaults}
        assert defaults == {"table": True}
    finally:
        assert client.set_allowed_collisions(replace=True).success
    assert ("table" in client.compute_clearance(ARM, INTO_TABLE, 0.05).body_names)
    assert not client.get_allowed_collisions().defaults
