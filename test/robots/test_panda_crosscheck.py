"""Cross-check of the collision core against pinocchio + coal on the Franka Panda.

On 2000 random configurations within the limits (fixed seed) our verdicts, and for
colliding configurations our colliding link pairs, must equal coal's on the same
shape pairs, with no padding. Two kinds of difference are allowed, each proven
rather than assumed:

(a) near contact: coal's distance for the pair is under ``NEAR_CONTACT_M`` in
    magnitude, so the two engines differ only by rounding;
(b) solid body: we report a collision, coal does not, and one shape lies wholly
    inside a closed mesh of the other (every vertex inside, by trimesh's own
    ``contains``, independent of our winding-number kernel). Coal treats meshes as
    surfaces and misses this on purpose; we do not.

Everything else is an unexplained disagreement and fails the test. Scenarios:
the Panda alone (self-collision pairs) and the Panda with the default world
(``config/panda_world.yaml``: a table and a post, adding environment pairs).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import pytest
import trimesh

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.model.robot_model import Sphere
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

NEAR_CONTACT_M = 1e-5           # below this clearance the two engines may differ
KINEMATICS_TOLERANCE_M = 1e-9
N_KINEMATICS_SAMPLES = 100
EXPLAIN_MAX_CONTACTS = 10_000   # never spent on the Panda: every colliding pair is listed
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")


# ----- what both engines say on the random set ------------------------------------
@dataclass
class CrossCheck:
    """Both engines' answers on the random set of one scenario."""
    name: str
    scene: object
    checker: CollisionChecker
    peer: object
    Q: np.ndarray
    ours_valid: np.ndarray                 # (N,) check verdicts
    ours_status: np.ndarray                # (N,) check statuses
    batch_valid: np.ndarray                # (N,) check_batch verdicts
    explain_valid: np.ndarray              # (N,) explain verdicts
    ours_pairs: list = field(default_factory=list)    # per configuration: set of colliding link pairs
    coal_pairs: list = field(default_factory=list)
    budget_spent: int = 0


def _link_pairs(explanation) -> set:
    return {frozenset(c.link_names) for c in explanation.contacts if c.distance <= 0.0}


def _run(name: str, scene, peer, Q: np.ndarray) -> CrossCheck:
    checker = CollisionChecker(scene, check_joint_limits=True)
    names = scene.robot.active_joint_names
    verdicts = [checker.check(names, q) for q in Q]
    batch_valid, _ = checker.check_batch(names, Q)
    result = CrossCheck(name, scene, checker, peer, Q, np.array([v.valid for v in verdicts]),
                        np.array([int(v.status) for v in verdicts]), batch_valid, np.zeros(len(Q), dtype=bool))
    for k, q in enumerate(Q):
        explanation = checker.explain(names, q, contact_distance=0.0, max_contacts=EXPLAIN_MAX_CONTACTS)
        result.explain_valid[k] = explanation.valid
        result.budget_spent += int(explanation.contact_budget_spent)
        result.ours_pairs.append(_link_pairs(explanation))
        result.coal_pairs.append(peer.colliding_link_pairs(peer.pair_collisions(scene.robot, q)))
    return result


@pytest.fixture(scope="module", params=["panda", "panda_with_world"])
def crosscheck(request, panda_scene, panda_files, panda_configurations, coal_peer_factory) -> CrossCheck:
    if request.param == "panda":
        scene = panda_scene
    else:
        urdf, srdf = panda_files
        scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    return _run(request.param, scene, coal_peer_factory(scene, panda_files[0]), panda_configurations)


# ----- classifying a difference ---------------------------------------------------
def _shape_poses(scene, q: np.ndarray) -> np.ndarray:
    """(S, 4, 4) pose of every shape of the scene in the planning frame."""
    world = scene.world
    T_world_link = scene.robot.link_transforms(q)
    return np.array([T_world_link[s.link_index] @ s.T_frame_shape if s.link_index >= 0 else s.T_frame_shape
                     for s in world.shapes])


def _wholly_inside(scene, T_world_shape: np.ndarray, outer: int, inner: int) -> bool:
    """Every vertex of shape ``inner`` lies inside the closed mesh of shape ``outer`` (trimesh's test)."""
    outer_geometry = scene.world.shapes[outer].geometry
    if not outer_geometry.is_closed_bvh:
        return False
    mesh = outer_geometry.triangle_mesh()
    assert mesh.is_watertight
    vertices = np.asarray(scene.world.shapes[inner].geometry.triangle_mesh().vertices)
    T_outer_inner = np.linalg.inv(T_world_shape[outer]) @ T_world_shape[inner]
    points = trimesh.transform_points(vertices, T_outer_inner)
    return bool(np.all(mesh.contains(points)))


def classify(run: CrossCheck, k: int, link_pair: frozenset) -> str:
    """Why our answer and coal's differ on one link pair at configuration k.

    Returns "near contact", "solid body" or "unexplained".
    """
    scene, peer, q = run.scene, run.peer, run.Q[k]
    world = scene.world
    pair_indices = [p for p, links in enumerate(peer.pair_links) if links == link_pair]
    distances = [peer.pair_distance(scene.robot, q, p) for p in pair_indices]
    if distances and min(abs(d) for d in distances) < NEAR_CONTACT_M:
        return "near contact"
    we_collide = link_pair in run.ours_pairs[k]
    coal_collides = link_pair in run.coal_pairs[k]
    if we_collide and not coal_collides:
        T_world_shape = _shape_poses(scene, q)
        for p in pair_indices:
            a, b = world.pairs[p]
            if _wholly_inside(scene, T_world_shape, a, b) or _wholly_inside(scene, T_world_shape, b, a):
                return "solid body"
    return "unexplained"


def _summary(run: CrossCheck) -> dict:
    coal_valid = np.array([not pairs for pairs in run.coal_pairs])
    kinds = {"near contact": 0, "solid body": 0, "unexplained": 0}
    unexplained = []
    for k in np.flatnonzero(run.ours_valid != coal_valid):
        differing = run.ours_pairs[k] ^ run.coal_pairs[k]
        labels = [classify(run, k, lp) for lp in differing] or ["unexplained"]
        label = "unexplained" if "unexplained" in labels else labels[0]
        kinds[label] += 1
        if label == "unexplained":
            unexplained.append((int(k), sorted(map(sorted, run.ours_pairs[k])), sorted(map(sorted, run.coal_pairs[k]))))
    return {"n": len(run.Q), "ours_colliding": int((~run.ours_valid).sum()),
            "coal_colliding": int((~coal_valid).sum()), "agree": int((run.ours_valid == coal_valid).sum()),
            **kinds, "unexplained_cases": unexplained}


# ----- tests ------------------------------------------------------------------------
def test_pairs_are_the_same_on_both_sides(crosscheck):
    world = crosscheck.scene.world
    peer = crosscheck.peer
    assert len(peer.geometry_model.collisionPairs) == len(world.pairs) > 0
    for p, (a, b) in enumerate(world.pairs):
        pair = peer.geometry_model.collisionPairs[p]
        assert {pair.first, pair.second} == {peer.geometry_index[a], peer.geometry_index[b]}


def test_kinematics_match_pinocchio(panda_scene, panda_peer, panda_configurations):
    robot, peer = panda_scene.robot, panda_peer
    for q in panda_configurations[:N_KINEMATICS_SAMPLES]:
        pin.framesForwardKinematics(peer.model, peer.data, peer.pin_configuration(robot, q))
        T_world_link = robot.link_transforms(q)
        for i, link in enumerate(robot.link_names):
            oMf = peer.data.oMf[peer.model.getFrameId(link, pin.FrameType.BODY)]
            np.testing.assert_allclose(T_world_link[i][:3, :3], oMf.rotation, atol=KINEMATICS_TOLERANCE_M)
            np.testing.assert_allclose(T_world_link[i][:3, 3], oMf.translation, atol=KINEMATICS_TOLERANCE_M)


def test_configurations_are_within_limits(panda_scene, panda_configurations):
    robot = panda_scene.robot
    assert panda_configurations.shape == (2000, len(robot.active_joint_names))
    assert np.all(panda_configurations >= robot.lower_limits)
    assert np.all(panda_configurations <= robot.upper_limits)


def test_verdicts_match_coal(crosscheck, capsys):
    summary = _summary(crosscheck)
    with capsys.disabled():
        print(f"\n[{crosscheck.name}] {summary['n']} configurations: we refuse {summary['ours_colliding']}, "
              f"coal refuses {summary['coal_colliding']}; verdicts agree on {summary['agree']}; "
              f"disagreements: near contact {summary['near contact']}, solid body {summary['solid body']}, "
              f"unexplained {summary['unexplained']}")
    assert summary["ours_colliding"] > 0, "the random set should contain colliding configurations"
    assert summary["unexplained"] == 0, f"unexplained disagreements (index, ours, coal): {summary['unexplained_cases']}"


def test_colliding_link_pairs_match_coal(crosscheck, capsys):
    compared = equal = 0
    labels = {"near contact": 0, "solid body": 0, "unexplained": 0}
    unexplained = []
    for k in range(len(crosscheck.Q)):
        ours, theirs = crosscheck.ours_pairs[k], crosscheck.coal_pairs[k]
        if not ours and not theirs:
            continue
        compared += 1
        if ours == theirs:
            equal += 1
            continue
        for link_pair in ours ^ theirs:
            label = classify(crosscheck, k, link_pair)
            labels[label] += 1
            if label == "unexplained":
                unexplained.append((k, sorted(link_pair), link_pair in ours, link_pair in theirs))
    with capsys.disabled():
        print(f"\n[{crosscheck.name}] colliding configurations compared pair by pair: {compared}, identical pair "
              f"sets: {equal}; differing link pairs: {labels}")
    assert crosscheck.budget_spent == 0
    assert compared > 0
    assert not unexplained, f"unexplained pair differences (index, pair, ours, coal): {unexplained}"


def test_batch_equals_single(crosscheck):
    mismatch = np.flatnonzero(crosscheck.batch_valid != crosscheck.ours_valid)
    assert mismatch.size == 0, f"check_batch differs from check at {mismatch.tolist()}"


def test_explain_valid_equals_check(crosscheck):
    mismatch = np.flatnonzero(crosscheck.explain_valid != crosscheck.ours_valid)
    assert mismatch.size == 0, f"explain().valid differs from check() at {mismatch.tolist()}"
    # every refusal on a within-limits set is a collision, and explain lists the pairs that refused it
    assert set(crosscheck.ours_status.tolist()) <= {int(Status.VALID), int(Status.IN_COLLISION)}
    for k in np.flatnonzero(~crosscheck.ours_valid):
        assert crosscheck.ours_pairs[k], f"configuration {k} refused but explain lists no colliding pair"


# ----- the solid-body exception is real: a case built on purpose --------------------
def test_solid_body_difference_is_classified(panda_files, panda_configurations, coal_peer_factory):
    """A small sphere wholly inside the Panda's base mesh: we refuse, coal accepts, and
    the classifier recognises the difference as a solid-body case."""
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    base = scene.world.shapes[0]
    assert base.owner == "panda_link0" and base.geometry.is_closed_bvh
    mesh = base.geometry.triangle_mesh()
    T_world_base = scene.robot.link_transforms(scene.robot.default_positions())[base.link_index] @ base.T_frame_shape
    # a point well inside the base: its centre of mass, and 2 cm of clearance to the surface
    centre = np.asarray(mesh.center_mass)
    assert mesh.contains(centre[None, :])[0]
    radius = 0.01
    assert trimesh.proximity.signed_distance(mesh, centre[None, :])[0] > 2 * radius
    T_world_probe = np.eye(4)
    T_world_probe[:3, 3] = trimesh.transform_points(centre[None, :], T_world_base)[0]
    scene.apply([AddObject(SceneObject("probe", (ObjectShape(Sphere(radius)),), T_world_probe))])
    checker = CollisionChecker(scene)
    peer = coal_peer_factory(scene, urdf)
    names = scene.robot.active_joint_names
    q = panda_configurations[0]
    ours = checker.explain(names, q, max_contacts=EXPLAIN_MAX_CONTACTS)
    coal_pairs = peer.colliding_link_pairs(peer.pair_collisions(scene.robot, q))
    probe_pair = frozenset(("panda_link0", "probe"))
    assert not checker.check(names, q).valid
    assert probe_pair in _link_pairs(ours)
    assert probe_pair not in coal_pairs, "coal was expected to miss a body inside a mesh"
    run = CrossCheck("probe", scene, checker, peer, q[None, :], np.array([False]), np.array([1]),
                     np.array([False]), np.array([False]), [_link_pairs(ours)], [coal_pairs])
    assert classify(run, 0, probe_pair) == "solid body"
