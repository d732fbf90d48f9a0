"""Explain's hull rule done a phase at a time over all pairs (kernels/explain_batch.py), against the per-pair
rules it stands for, on the Panda with the demo world (a table and a post: environment pairs too).

For every pair the hull rule takes (nearly convex solids, one a closed mesh, one a mesh, no padding) the
verdict must be the predicate's own pair test and the contact the numbers of ``narrowphase.hull_mtd`` on
that pair alone; the compiled start (contact_distance 0) must give what explain's own steps give.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.contact_builder import single_contact_point
from my_collision_pkg.core.checks.explain import hull_parts
from my_collision_pkg.core.checks.narrowphase import hull_mtd
from my_collision_pkg.core.checks.pair_tests import PairTestScratch
from my_collision_pkg.core.checks.results import BodyType
from my_collision_pkg.core.scene.loading import load_scene, panda_paths

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
SEED = 20_261_201
N_CONFIGURATIONS = 600
TOL_M = 1e-12           # the same computation: equal up to the last bits at most


@pytest.fixture(scope="module")
def refused():
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    checker = CollisionChecker(scene, check_joint_limits=True)
    robot = scene.robot
    names = robot.active_joint_names
    Q = np.random.default_rng(SEED).uniform(robot.lower_limits, robot.upper_limits,
                                            size=(N_CONFIGURATIONS, len(names)))
    bad = [q for q in Q if not checker.check(names, q).valid]
    assert len(bad) > 50
    return scene, checker, bad


def _key(contact):
    return contact.link_names + contact.shape_ids


def _hull_rule(world, a: int, b: int, margin: float) -> bool:
    ha, hb = hull_parts(world, a), hull_parts(world, b)
    return ha is not None and hb is not None and margin <= 0.0 and (ha[4] or hb[4]) and (ha[7] or hb[7])


def test_hull_rule_verdicts_and_contacts_are_the_per_pair_rules(refused):
    scene, checker, configurations = refused
    world, robot = scene.world, scene.robot
    selection = world.pair_selection("", True, False)
    scratch = PairTestScratch()
    seen = {"colliding": 0, "apart": 0, "environment": 0, "inside": 0}
    for q in configurations:
        explanation = checker.explain(robot.active_joint_names, q, max_contacts=10_000)
        assert not explanation.valid
        by_pair: dict[tuple, list] = {}
        for contact in explanation.contacts:
            by_pair.setdefault(_key(contact), []).append(contact)
        T_link = robot.link_transforms(q)
        T_shape = world.shape_transforms(T_link)
        posed = scratch.posed(world, T_shape)
        for (a, b), call, margin in zip(selection.pairs.tolist(), selection.calls, selection.margins.tolist()):
            if not _hull_rule(world, a, b, margin):
                continue
            ea, eb = world.shapes[a], world.shapes[b]
            key = (ea.owner, eb.owner, ea.shape_id, eb.shape_id)
            found = posed.collides(a, b, call, margin)
            if not found:
                assert key not in by_pair
                seen["apart"] += 1
                continue
            hulls = hull_mtd(world, T_shape, a, b, None)
            if hulls is None:       # the hulls come out apart: the full rules, not this batch
                continue
            [contact] = by_pair[key]
            seen["colliding"] += 1
            seen["environment"] += BodyType.WORLD_OBJECT in contact.body_types
            seen["inside"] += not posed.surfaces_cross(call)
            assert abs(contact.distance - hulls.distance_m) <= TOL_M
            for got, want in ((contact.nearest_points[0], hulls.p0_world), (contact.nearest_points[1], hulls.p1_world),
                              (contact.normal, hulls.normal_world),
                              (contact.position, 0.5 * (hulls.p0_world + hulls.p1_world))):
                np.testing.assert_allclose(got, want, rtol=0.0, atol=TOL_M)
            assert contact.depth_rule == hulls.rule
            assert contact.single_contact_point == single_contact_point(ea.geometry, eb.geometry)
            owners = [world.shape_owner_frame(s, T_link) for s in (a, b)]
            for T_owner, T_contact, point, local in zip(owners, contact.transforms, contact.nearest_points,
                                                        contact.nearest_points_local):
                np.testing.assert_array_equal(T_contact, T_owner)
                np.testing.assert_allclose(T_owner[:3, :3] @ local + T_owner[:3, 3], point, rtol=0.0, atol=1e-9)
    # the set reaches every branch: link-link and link-object contacts, a body inside a mesh, pairs apart
    assert seen["colliding"] > 100 and seen["environment"] > 10 and seen["inside"] > 0 and seen["apart"] > 10, seen


def test_the_compiled_start_gives_explains_own_steps(refused):
    """contact_distance 0 starts with the predicate's compiled call; a tiny positive contact_distance takes
    explain's own steps (and finds no near miss that small): the same explanation."""
    scene, checker, configurations = refused
    names = scene.robot.active_joint_names
    for q in configurations:
        fast = checker.explain(names, q, max_contacts=10_000)
        slow = checker.explain(names, q, contact_distance=1e-300, max_contacts=10_000)
        assert (fast.valid, fast.status, fast.message, fast.colliding_links) == \
            (slow.valid, slow.status, slow.message, slow.colliding_links)
        np.testing.assert_array_equal(fast.positions, slow.positions)
        assert len(fast.contacts) == len(slow.contacts)
        for c, d in zip(fast.contacts, slow.contacts):
            assert (c.link_names, c.shape_ids, c.subshape_ids, c.depth_rule, c.depth_is_fallback) == \
                (d.link_names, d.shape_ids, d.subshape_ids, d.depth_rule, d.depth_is_fallback)
            assert c.distance == d.distance
            for x, y in zip((c.position, c.normal, *c.nearest_points, *c.nearest_points_local, *c.transforms),
                            (d.position, d.normal, *d.nearest_points, *d.nearest_points_local, *d.transforms)):
                np.testing.assert_array_equal(x, y)


def test_contacts_own_their_arrays(refused):
    """The batched contacts' arrays are views of arrays made for them: no two contacts share memory, and the
    explanation's positions are not the predicate's per-thread buffer."""
    scene, checker, configurations = refused
    names = scene.robot.active_joint_names
    q = configurations[0]
    explanation = checker.explain(names, q, max_contacts=10_000)
    kept = explanation.positions.copy()
    checker.check(names, configurations[1])          # reuses the thread's buffers
    np.testing.assert_array_equal(explanation.positions, kept)
    arrays = [[c.position, c.normal, *c.nearest_points, *c.nearest_points_local, *c.transforms]
              for c in explanation.contacts]
    assert len(arrays) > 1
    for i, mine in enumerate(arrays):
        for j, theirs in enumerate(arrays):
            if i != j:
                assert not any(np.shares_memory(x, y) for x in mine for y in theirs)
