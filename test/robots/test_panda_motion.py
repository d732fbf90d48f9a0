"""Certified motion checks on the Panda (example-robot-data, SRDF, config/panda_world.yaml)
against a fine discrete reference and the pinocchio + coal peer.

For each random edge between two valid configurations:

- when the reference (our batch predicate every ``REFERENCE_STEP_RAD`` in every joint)
  finds a collision, the certified check finds one too, no later;
- when the certified check refuses an edge the reference accepts, the pair it reports
  really comes within the touching tolerance at ``cc_time``: coal (through pinocchio's
  own kinematics) measures that pair's distance there.

The reference step is 1e-3 rad here to keep ``make test`` fast; the benchmark
(benchmarks/bench_motion.py) runs the same comparison at 1e-4 rad on 300 edges.
"""
import os

import numpy as np
import pytest

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.checks.results import DEFAULT_TOUCH_TOLERANCE_M, MotionMode

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
N_EDGES = 40
EDGE_SEED = 20_261_130
REFERENCE_STEP_RAD = 1e-3
PEER_DISTANCE_SLACK_M = 1e-6     # coal through pinocchio vs our narrow phase, same meshes


@pytest.fixture(scope="module")
def world_scene(panda_files):
    urdf, srdf = panda_files
    return load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)


@pytest.fixture(scope="module")
def edges(world_scene, random_configurations):
    robot = world_scene.robot
    checker = CollisionChecker(world_scene)
    samples = random_configurations(robot.lower_limits, robot.upper_limits, 8 * N_EDGES, EDGE_SEED)
    valid, _ = checker.check_batch(robot.active_joint_names, samples)
    good = samples[valid]
    assert len(good) >= 2 * N_EDGES
    return list(zip(good[0:2 * N_EDGES:2], good[1:2 * N_EDGES:2]))


def test_certified_against_fine_reference(world_scene, edges, panda_files, coal_peer_factory):
    checker = CollisionChecker(world_scene)
    robot = world_scene.robot
    names = robot.active_joint_names
    peer = coal_peer_factory(world_scene, panda_files[0])
    world = world_scene.world
    pair_of = {(world.shapes[a].owner, world.shapes[a].shape_id, world.shapes[b].owner, world.shapes[b].shape_id): k
               for k, (a, b) in enumerate(world.pairs)}
    counts = {"both invalid": 0, "both valid": 0, "certified only (near touch)": 0}
    for q0, q1 in edges:
        certified = checker.check_motion(names, q0, q1)
        reference = checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=REFERENCE_STEP_RAD)
        assert certified.status in (Status.VALID, Status.IN_COLLISION)
        if not reference.valid:
            assert not certified.valid, f"certified missed a collision at t={reference.cc_time} ({reference.message})"
            assert certified.cc_time <= reference.cc_time + 1e-12
            counts["both invalid"] += 1
        elif not certified.valid:
            q = q0 + certified.cc_time * (q1 - q0)
            np.testing.assert_allclose(certified.positions, q, atol=1e-12)
            closest = min(peer.pair_distance(robot, q, pair_of[(c.link_names[0], c.shape_ids[0],
                                                                c.link_names[1], c.shape_ids[1])])
                          for c in certified.contacts)
            assert closest < DEFAULT_TOUCH_TOLERANCE_M + PEER_DISTANCE_SLACK_M, certified.message
            counts["certified only (near touch)"] += 1
        else:
            counts["both valid"] += 1
    print(counts)
    assert counts["both invalid"] >= 5 and counts["both valid"] >= 5


def test_panda_motion_contacts_carry_cc_fields(world_scene, edges):
    checker = CollisionChecker(world_scene)
    names = world_scene.robot.active_joint_names
    for q0, q1 in edges:
        result = checker.check_motion(names, q0, q1)
        if result.valid:
            continue
        assert result.contacts, result.message
        for contact in result.contacts:
            assert contact.transforms is not None and contact.cc_transforms is not None
            for body in range(2):
                if contact.body_types[body] == 1:          # a world object never moves
                    assert contact.cc_time[body] == -1.0
                else:
                    assert contact.cc_time[body] == pytest.approx(result.cc_time)
        return
    pytest.fail("no edge collides")


def test_sphere_covers_hold_their_shapes(world_scene):
    """Every point of every triangle of a Panda mesh lies in one of its cover spheres; every
    point of a primitive's bounding box in one of its own."""
    rng = np.random.default_rng(7)
    for entry in world_scene.world.shapes:
        g = entry.geometry
        centres, radii = g.cover_centres_shape, g.cover_radii_m
        assert len(radii) >= 1
        if g.source_mesh is not None:
            corners = np.asarray(g.source_mesh.vertices)[np.asarray(g.source_mesh.faces)]
            w = rng.dirichlet(np.ones(3), size=(len(corners), 8))                  # barycentric weights
            points = np.einsum("fkc,fcd->fkd", w, corners).reshape(-1, 3)
            points = np.vstack([points, corners.reshape(-1, 3)])
        else:
            half = g.obb_half_extents_m
            points = np.vstack([rng.uniform(-half, half, size=(2000, 3)),
                                np.array(np.meshgrid(*[[-h, h] for h in half])).reshape(3, -1).T])
        gap = np.linalg.norm(points[:, None, :] - centres[None, :, :], axis=2) - radii[None, :]
        assert np.all(gap.min(axis=1) <= 0.0), entry.owner


def test_cover_bound_is_below_the_exact_distance(world_scene, random_configurations):
    """The compiled cover bound never exceeds the narrow phase's distance where the bodies are apart."""
    from my_collision_pkg.core.checks.sweep import cover_arrays
    from my_collision_pkg.core.kernels import advancement as mk
    from my_collision_pkg.core.checks.narrowphase import pair_distance
    world, robot = world_scene.world, world_scene.robot
    kind, params, start, centres, radii, reach = cover_arrays(world)[:6]
    Q = random_configurations(robot.lower_limits, robot.upper_limits, 30, 11)
    tested = 0
    for q in Q:
        T_shape = world.shape_transforms(robot.link_transforms_batch(q[None]))[0]
        for a, b in world.pairs:
            exact = pair_distance(world, T_shape, int(a), int(b)).distance_m
            if exact <= 0.0 or exact > 0.3:
                continue
            args = (int(a), int(b), T_shape[a], T_shape[b], kind, params, start, centres, radii, world.obb_center,
                    reach)
            bound = mk.cover_bound(*args, -np.inf, np.inf)
            assert bound <= exact + 1e-9, (world.shapes[a].owner, world.shapes[b].owner, bound, exact)
            # the cut-offs: a value <= floor only when the bound is <= floor; above the ceiling
            # only a lower bound of the bound that is itself >= the ceiling
            for floor in (bound - 0.01, bound, bound + 0.01):
                cut = mk.cover_bound(*args, floor, np.inf)
                assert (cut <= floor) == (bound <= floor) and cut >= bound - 1e-12
            for ceiling in (bound - 0.05, bound + 0.01):
                cut = mk.cover_bound(*args, -np.inf, ceiling)
                assert cut == bound or ceiling <= cut <= bound + 1e-12, (cut, bound, ceiling)
            tested += 1
    assert tested > 100


def test_certainly_apart_only_for_pairs_at_least_that_far(world_scene, random_configurations):
    """The filter of the contacts step: a pair it calls apart is at least its threshold away
    (exact narrow phase, meshes as solids), over configurations that include overlaps."""
    from my_collision_pkg.core.checks.sweep import cover_arrays
    from my_collision_pkg.core.kernels import advancement as mk
    from my_collision_pkg.core.checks.narrowphase import pair_distance
    world, robot = world_scene.world, world_scene.robot
    kind, params, start, centres, radii, reach, container, probe_start, probes = cover_arrays(world)
    pairs = np.asarray(world.pairs)
    every = np.arange(len(pairs))
    Q = random_configurations(robot.lower_limits, robot.upper_limits, 40, 12)
    apart = close = 0
    for q in Q:
        T_shape = np.ascontiguousarray(world.shape_transforms(robot.link_transforms_batch(q[None]))[0])
        exact = np.array([pair_distance(world, T_shape, int(a), int(b)).distance_m for a, b in pairs])
        for threshold_m in (1e-4, 0.02):
            threshold = np.full(len(pairs), threshold_m)
            said = mk.certainly_apart(every, pairs[:, 0].copy(), pairs[:, 1].copy(), T_shape, threshold, kind, params,
                                      start, centres, radii, world.obb_center, reach, container, probe_start, probes,
                                      world.obb_center, world.obb_axes, world.obb_half)
            assert np.all(exact[said] >= threshold_m - 1e-9), exact[said].min()
            apart += int(said.sum())
            close += int(np.sum(~said & (exact < 0.05)))
    assert apart > 100 and close > 10


def test_culling_far_objects_keeps_panda_verdicts(world_scene, edges, panda_files, monkeypatch):
    """The default world plus 300 small boxes 0.2-2 m from the base (many within the arm's
    reach): the culled motion checks answer as the checks over every pair, certified and
    discrete, and culling drops most world-object pairs."""
    from my_collision_pkg.core.checks import sweep
    from my_collision_pkg.core.checks.request import CheckRequest
    from my_collision_pkg.core.model.shapes import Box
    from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject
    urdf, srdf = panda_files
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD)
    rng = np.random.default_rng(300)
    updates = []
    for k in range(300):
        direction = rng.normal(size=3)
        T = np.eye(4)
        T[:3, 3] = direction / np.linalg.norm(direction) * rng.uniform(0.2, 2.0) + [0.0, 0.0, 0.3]
        updates.append(AddObject(SceneObject(f"box{k}", (ObjectShape(Box((0.02, 0.02, 0.02))),), T)))
    scene.apply(updates)
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    world = scene.world
    selection = CheckRequest().selection(world)
    n_env = int(np.count_nonzero(~world.pair_is_self[selection.index]))
    kept_env, invalid = [], 0
    for q0, q1 in edges[:20]:
        s = sweep.Sweep(world, selection, CheckRequest(), q0, q1, DEFAULT_TOUCH_TOLERANCE_M)
        kept_env.append(int(np.count_nonzero(~world.pair_is_self[s.selection.index])))
        culled = (checker.check_motion(names, q0, q1),
                  checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=0.01))
        monkeypatch.setattr(sweep, "CULL_FAR_OBJECTS", False)
        every = (checker.check_motion(names, q0, q1),
                 checker.check_motion(names, q0, q1, mode=MotionMode.DISCRETE, max_step=0.01))
        monkeypatch.setattr(sweep, "CULL_FAR_OBJECTS", True)
        for a, b in zip(culled, every):
            assert (a.status, a.message, a.cc_time) == (b.status, b.message, b.cc_time)
        invalid += not culled[0].valid
    assert invalid >= 3
    assert np.median(kept_env) < 0.5 * n_env, (np.median(kept_env), n_env)
