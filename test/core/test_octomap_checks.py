"""Every check with an occupancy map (the world object ``<octomap>``) on the Panda.

A box-shaped cloud in front of the robot (a solid box filled with points, and its surface
only) is made into an occupancy map; its answers are cross-checked against the same box
as a world object (the package's box checks) and against coal's own distance between the
posed robot shapes and each cell box (brute force over the cells), a peer that shares no
code with the cell selection (core/checks/octomap_cells.py):

- predicate: 1000 random configurations, no miss for the filled cloud, misses of the
  hollow one only with the robot inside its hollow; every extra collision within one cell
  (diagonal) of the box;
- explain: contacts name cells that overlap the robot shape, lie within a cell of the box,
  carry their witness point on the cell; adjacent cells merged; ``valid`` is the predicate;
- certified motions never miss what dense sampling (1e-3 rad) finds, and report it no
  later; discrete motions and trajectories agree with the predicate;
- clearance: one row per robot shape, its distance coal's to the nearest cell box;
- padding, the allowed-collision matrix and the bad inputs (the object ``<octomap>`` is not
  moved or added through updates, ``max_octomap_cells``).

``replace`` and ``accumulate`` agreeing on a static scene is in test_perception.py.
"""
from __future__ import annotations

import coal
import numpy as np
import pytest
import trimesh

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.limits import WorkLimits
from my_collision_pkg.core.checks.results import MotionMode, Status
from my_collision_pkg.core.errors import SceneError
from my_collision_pkg.core.model.example_robots import panda_paths
from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.perception.occupancy import OccupancyMap
from my_collision_pkg.core.scene.loading import load_scene
from my_collision_pkg.core.scene.objects import OCTOMAP_ID, AddObject, MoveObject, ObjectShape, SceneObject

RESOLUTION_M = 0.02
DIAGONAL_M = RESOLUTION_M * np.sqrt(3.0)
BOX_CENTRE_M = np.array([0.45, 0.05, 0.35])
BOX_SIZE_M = np.array([0.2, 0.3, 0.3])
N_CONFIGURATIONS = 1000
SEED = 1616
WITNESS_TOLERANCE_M = 1e-6
CLEARANCE_TOLERANCE_M = 1e-6
DENSE_STEP_RAD = 1e-3


# ----- scenes ------------------------------------------------------------------------------
def _grid(lo, hi, step):
    axes = [np.linspace(a, b, int(np.ceil((b - a) / step)) + 1) for a, b in zip(lo, hi)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def _filled_cloud() -> np.ndarray:
    """Points filling the closed box, at most half a cell apart (faces included): every cell
    meeting the box holds one."""
    return _grid(BOX_CENTRE_M - BOX_SIZE_M / 2, BOX_CENTRE_M + BOX_SIZE_M / 2, RESOLUTION_M / 2)


def _surface_cloud() -> np.ndarray:
    """The filled cloud's points on the box's faces only."""
    points = _filled_cloud()
    lo, hi = BOX_CENTRE_M - BOX_SIZE_M / 2, BOX_CENTRE_M + BOX_SIZE_M / 2
    on_face = np.any(np.isclose(points, lo) | np.isclose(points, hi), axis=1)
    return points[on_face]


def _translation(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def _panda(**options):
    urdf, srdf = panda_paths()
    return load_scene(urdf_path=urdf, srdf_path=srdf, **options)


def _box_object() -> AddObject:
    return AddObject(SceneObject("box", (ObjectShape(Box(tuple(BOX_SIZE_M))),), _translation(BOX_CENTRE_M)))


@pytest.fixture(scope="module")
def scenes():
    """Checkers on four Panda scenes: no object, the box object, the filled map, the surface map."""
    plain = _panda()
    box = _panda()
    box.apply([_box_object()])
    filled, surface = _panda(), _panda()
    filled.set_occupancy(OccupancyMap.from_points(_filled_cloud(), RESOLUTION_M))
    surface.set_occupancy(OccupancyMap.from_points(_surface_cloud(), RESOLUTION_M))
    return {name: CollisionChecker(scene) for name, scene in
            (("plain", plain), ("box", box), ("filled", filled), ("surface", surface))}


@pytest.fixture(scope="module")
def configurations(scenes):
    """N_CONFIGURATIONS random configurations free of self-collision, and their verdicts per scene."""
    plain = scenes["plain"]
    robot = plain.scene.robot
    rng = np.random.default_rng(SEED)
    q = rng.uniform(robot.lower_limits, robot.upper_limits, (2 * N_CONFIGURATIONS, len(robot.lower_limits)))
    names = robot.active_joint_names
    free, _ = plain.check_batch(names, q)
    q = q[free][:N_CONFIGURATIONS]
    assert len(q) == N_CONFIGURATIONS
    valid = {name: checker.check_batch(names, q)[0] for name, checker in scenes.items() if name != "plain"}
    return names, q, valid


def _posed(world, q):
    """(S, 4, 4) shape poses at configuration ``q``."""
    return world.shape_transforms(world.robot.link_transforms(q))


def _coal_pose(T):
    return coal.Transform3s(T[:3, :3], T[:3, 3])


def _coal_distance(geometry_a, T_a, geometry_b, T_b) -> float:
    request, result = coal.DistanceRequest(), coal.DistanceResult()
    return coal.distance(geometry_a, _coal_pose(T_a), geometry_b, _coal_pose(T_b), request, result)


def _coal_collide(geometry_a, T_a, geometry_b, T_b) -> bool:
    request, result = coal.CollisionRequest(), coal.CollisionResult()
    return bool(coal.collide(geometry_a, _coal_pose(T_a), geometry_b, _coal_pose(T_b), request, result))


def _robot_shape_index(world, link: str, shape_id: int) -> int:
    return next(k for k, e in enumerate(world.shapes) if e.on_robot and e.owner == link and e.shape_id == shape_id)


def _overlaps_body(world, T, k, centre, size, tolerance_m=WITNESS_TOLERANCE_M) -> bool:
    """Whether the cube (centre, side) meets robot shape ``k`` posed at ``T[k]`` as a solid:
    coal's distance to its surface, or the cube's centre inside its closed mesh (trimesh)."""
    geometry = world.shapes[k].geometry
    if _coal_distance(geometry.coal_geometry, T[k], coal.Box(size, size, size), _translation(centre)) <= tolerance_m:
        return True
    mesh = geometry.triangle_mesh().copy()
    mesh.apply_transform(T[k])
    return bool(mesh.is_watertight and mesh.contains(centre[None, :])[0])


def _robot_distance_to_box(world, q) -> float:
    """coal's distance from the posed robot (every shape) to the box."""
    T = _posed(world, q)
    box = coal.Box(*BOX_SIZE_M)
    return min(_coal_distance(e.geometry.coal_geometry, T[k], box, _translation(BOX_CENTRE_M))
               for k, e in enumerate(world.shapes) if e.on_robot)


# ----- the predicate -----------------------------------------------------------------------
def test_the_filled_cloud_collides_wherever_the_box_does_and_extras_lie_within_a_cell(scenes, configurations):
    names, q, valid = configurations
    box_hits = ~valid["box"]
    map_hits = ~valid["filled"]
    assert 50 < box_hits.sum() < N_CONFIGURATIONS - 50, "the box must be hit by some configurations, not all"
    missed = np.flatnonzero(box_hits & ~map_hits)
    assert missed.size == 0, f"configurations colliding with the box object but not its filled map: {missed[:10]}"
    world = scenes["plain"].scene.world
    extra = np.flatnonzero(map_hits & ~box_hits)
    far = [(int(i), d) for i in extra.tolist() if (d := _robot_distance_to_box(world, q[i])) >= DIAGONAL_M]
    assert not far, f"extra collisions more than a cell diagonal from the box: {far[:5]}"
    # our own distance agrees: every extra configuration has a box clearance row within the diagonal
    if extra.size:
        clearance = scenes["box"].clearance(names, q[extra], DIAGONAL_M)
        assert clearance.status == Status.VALID, clearance.message
        with_box = {int(i) for i, pair in zip(clearance.configuration_index, clearance.body_names) if "box" in pair}
        assert with_box == set(range(extra.size))


def test_the_surface_cloud_misses_only_a_robot_inside_the_hollow(scenes, configurations):
    """The surface map's cells form a shell a cell thick: a configuration the box hits and the
    shell does not has every robot shape that meets the box wholly inside the hollow."""
    names, q, valid = configurations
    box_hits, shell_hits = ~valid["box"], ~valid["surface"]
    world = scenes["plain"].scene.world
    inner_lo = BOX_CENTRE_M - BOX_SIZE_M / 2 + RESOLUTION_M
    inner_hi = BOX_CENTRE_M + BOX_SIZE_M / 2 - RESOLUTION_M
    box = coal.Box(*BOX_SIZE_M)
    for i in np.flatnonzero(box_hits & ~shell_hits).tolist():
        T = _posed(world, q[i])
        for k, entry in enumerate(world.shapes):
            if entry.on_robot and _coal_collide(entry.geometry.coal_geometry, T[k], box, _translation(BOX_CENTRE_M)):
                vertices = np.asarray(entry.geometry.triangle_mesh().vertices) @ T[k, :3, :3].T + T[k, :3, 3]
                assert np.all((vertices > inner_lo) & (vertices < inner_hi)), \
                    f"configuration {i}: {entry.owner} meets the box but not its surface map"
    # the shell is a subset of the filled map: it never collides where the filled map does not
    assert not np.any(shell_hits & valid["filled"])
    extra = np.flatnonzero(shell_hits & ~box_hits)
    far = [int(i) for i in extra.tolist() if _robot_distance_to_box(world, q[i]) >= DIAGONAL_M]
    assert not far, f"extra collisions of the surface map more than a cell diagonal from the box: {far[:5]}"
    assert shell_hits.sum() > 0.8 * box_hits.sum()


# ----- explain -----------------------------------------------------------------------------
def _cells_touch(occupancy, a: int, b: int) -> bool:
    boxes = occupancy.cell_boxes()
    gap = np.abs(boxes.centres_m[a] - boxes.centres_m[b]) - (boxes.size_m[a] + boxes.size_m[b]) / 2
    return bool(np.all(gap <= 1e-9))


@pytest.mark.parametrize("which", ["filled", "surface"])
def test_explain_names_cells_that_overlap_the_robot_inside_the_box(scenes, configurations, which):
    names, q, valid = configurations
    checker = scenes[which]
    world = checker.scene.world
    occupancy = checker.scene.occupancy
    boxes = occupancy.cell_boxes()
    colliding = np.flatnonzero(~valid[which])
    rng = np.random.default_rng(SEED + 1)
    picked = rng.choice(colliding, size=min(15, colliding.size), replace=False)
    free = np.flatnonzero(valid[which])[:5]
    n_map_contacts = 0
    for i in np.concatenate([picked, free]).tolist():
        explanation = checker.explain(names, q[i])
        assert explanation.valid == checker.check(names, q[i]).valid == bool(valid[which][i])
        T = _posed(world, q[i])
        per_shape: dict[tuple, list[int]] = {}
        for contact in explanation.contacts:
            if OCTOMAP_ID not in contact.link_names:
                continue
            n_map_contacts += 1
            side = contact.link_names.index(OCTOMAP_ID)
            cell = contact.shape_ids[side]
            assert contact.subshape_ids[side] == cell and 0 <= cell < occupancy.n_occupied
            centre, size = boxes.centres_m[cell], boxes.size_m[cell]
            # the cell lies within a cell of the box
            assert np.all(np.abs(centre - BOX_CENTRE_M) <= BOX_SIZE_M / 2 + size / 2 + 1e-9)
            # the witness point on the map's side lies on that cell
            witness = contact.nearest_points[side]
            assert np.all(np.abs(witness - centre) <= size / 2 + WITNESS_TOLERANCE_M), (witness, centre)
            # the cell's box overlaps the robot shape (coal), or lies inside its closed mesh (trimesh)
            link, shape_id = contact.link_names[1 - side], contact.shape_ids[1 - side]
            k = _robot_shape_index(world, link, shape_id)
            assert contact.distance <= 0.0
            assert _overlaps_body(world, T, k, centre, size)
            per_shape.setdefault((link, shape_id), []).append(cell)
        for (link, _), cells in per_shape.items():   # adjacent cells are one region: one contact
            for a in range(len(cells)):
                for b in range(a + 1, len(cells)):
                    assert not _cells_touch(occupancy, cells[a], cells[b]), f"{link}: cells {cells[a]}, {cells[b]}"
        if not explanation.valid:
            assert any(OCTOMAP_ID in c.link_names for c in explanation.contacts)
    assert n_map_contacts >= len(picked)


# ----- motions -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def edges(scenes, configurations):
    """100 short edges (0.2 to 0.4 rad long in joint space, clipped to the limits): 10 from
    configurations in collision with the box, 90 from free ones within 10 cm of it (the map
    is the filled one: the first ones start in collision with it, many of the others run
    into it). (A certified motion starting deep in the filled map costs a second or two: the
    contacts of hundreds of cells; so few of those.)"""
    names, q, valid = configurations
    rng = np.random.default_rng(SEED + 2)
    colliding = q[~valid["box"]]
    free = np.flatnonzero(valid["box"] & valid["filled"])
    near_rows = scenes["box"].clearance(names, q[free], 0.1)
    near = q[free[np.unique(near_rows.configuration_index[np.any(near_rows.body_names == "box", axis=1)])]]
    assert len(near) >= 90 and len(colliding) >= 10
    starts = np.vstack([colliding[rng.choice(len(colliding), 10, replace=False)],
                        near[rng.choice(len(near), 90, replace=False)]])
    direction = rng.normal(size=starts.shape)
    direction[:, 7:] = 0.0                                   # the fingers stay
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    goals = starts + direction * rng.uniform(0.2, 0.4, (len(starts), 1))
    robot = scenes["plain"].scene.robot
    return names, starts, np.clip(goals, robot.lower_limits, robot.upper_limits)


def _first_dense_collision(checker, names, start, goal, chunk=64):
    """The first time in [0, 1] at which a sample 1e-3 rad apart (every joint) is in
    collision (predicate), or None; samples are checked a chunk at a time from the start."""
    steps = int(np.ceil(np.max(np.abs(goal - start)) / DENSE_STEP_RAD))
    t = np.linspace(0.0, 1.0, steps + 1)
    for k in range(0, len(t), chunk):
        valid, _ = checker.check_batch(names, start + t[k:k + chunk, None] * (goal - start))
        if not valid.all():
            return float(t[k + int(np.flatnonzero(~valid)[0])])
    return None


def test_certified_motions_never_miss_what_dense_sampling_finds(scenes, edges):
    """A dense sample in collision (predicate) means the certified check is invalid at a
    time no later; from a free start, its contacts name cells the robot touches then."""
    checker = scenes["filled"]
    world = checker.scene.world
    boxes = checker.scene.occupancy.cell_boxes()
    names, starts, goals = edges
    counts = {"start in collision": 0, "into the map": 0, "free": 0}
    for start, goal in zip(starts, goals):
        first = _first_dense_collision(checker, names, start, goal)
        result = checker.check_motion(names, start, goal)
        assert result.status != Status.INVALID_REQUEST, result.message
        if first is None:
            counts["free"] += 1
            continue
        assert not result.valid, f"certified missed a collision sampled at t={first}"
        assert 0.0 <= result.cc_time <= first + 1e-12, (result.cc_time, first)
        assert result.contacts                      # the map's, or a self-collision met first
        if first == 0.0:
            counts["start in collision"] += 1
            continue
        counts["into the map"] += 1
        # at cc_time, the robot is within the touch tolerance of the cells it names
        T = _posed(world, start + result.cc_time * (goal - start))
        for contact in result.contacts:
            if OCTOMAP_ID in contact.link_names:
                side = contact.link_names.index(OCTOMAP_ID)
                cell = contact.subshape_ids[side]
                k = _robot_shape_index(world, contact.link_names[1 - side], contact.shape_ids[1 - side])
                size = boxes.size_m[cell]
                assert _coal_distance(world.shapes[k].geometry.coal_geometry, T[k], coal.Box(size, size, size),
                                      _translation(boxes.centres_m[cell])) <= 2e-3
    assert counts["start in collision"] >= 10 and counts["into the map"] >= 10 and counts["free"] >= 10, counts


def test_discrete_motions_and_trajectories_agree_with_the_predicate(scenes, edges):
    checker = scenes["filled"]
    names, starts, goals = edges
    robot = checker.scene.robot
    step = 0.01
    n_invalid = 0
    for start, goal in list(zip(starts, goals))[10:50]:
        n = int(np.ceil(np.max(np.abs(goal - start)) / step - 1e-12))
        t = np.linspace(0.0, 1.0, n + 1)
        valid, _ = checker.check_batch(names, start + t[:, None] * (goal - start))
        discrete = checker.check_motion(names, start, goal, mode=MotionMode.DISCRETE, max_step=step)
        assert discrete.status != Status.INVALID_REQUEST, discrete.message
        assert discrete.valid == bool(valid.all())
        if not discrete.valid:
            n_invalid += 1
            assert discrete.cc_time == pytest.approx(t[int(np.flatnonzero(~valid)[0])])
            assert discrete.contacts                # the map's, or a self-collision met first
            assert not checker.check_motion(names, start, goal).valid       # certified too
    assert n_invalid >= 3
    # a trajectory through three waypoints: invalid exactly when one of its segments is
    n_invalid_trajectories = 0
    for k in range(10, 50, 2):
        turn = np.clip(goals[k] + 0.5 * (goals[k + 1] - starts[k + 1]), robot.lower_limits, robot.upper_limits)
        points = np.stack([starts[k], goals[k], turn])          # two short segments
        result = checker.check_trajectory(names, points, np.array([0.0, 1.0, 2.0]))
        assert result.status != Status.INVALID_REQUEST, result.message
        first_segment = checker.check_motion(names, points[0], points[1])
        segments = [first_segment] if not first_segment.valid else \
            [first_segment, checker.check_motion(names, points[1], points[2])]
        n_invalid_trajectories += not result.valid
        assert result.valid == all(s.valid for s in segments)
        if not result.valid:
            first = next(j for j, s in enumerate(segments) if not s.valid)
            assert result.first_invalid_segment == first
            assert result.first_invalid_time_s == pytest.approx(first + segments[first].cc_time, abs=1e-6)
            assert result.first_contact.contacts
    assert n_invalid_trajectories >= 2


# ----- clearance ---------------------------------------------------------------------------
def test_clearance_rows_are_counted_after_the_per_cell_reduction(scenes, configurations):
    """issue 40: a 48-cell map answer of 53 rows said "758 pair rows" and max_clearance_rows = 100
    refused it as 758: the message and the bound count the rows of the answer."""
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.checks.limits import WorkLimits
    names, q, valid = configurations
    checker = scenes["filled"]
    answer = checker.clearance(names, q[:20], 0.3)
    assert answer.status == Status.VALID, answer.message
    on_map = np.any(answer.body_names == OCTOMAP_ID, axis=1)
    assert on_map.sum() > 0
    assert answer.message.startswith(f"{len(answer)} pair rows")
    at_bound = CollisionChecker(checker.scene, limits=WorkLimits(max_clearance_rows=len(answer)))
    assert at_bound.clearance(names, q[:20], 0.3).ok
    below = CollisionChecker(checker.scene, limits=WorkLimits(max_clearance_rows=len(answer) - 1))
    refused = below.clearance(names, q[:20], 0.3)
    assert refused.status == Status.INVALID_REQUEST and "max_clearance_rows" in refused.message


def test_clearance_gives_each_robot_shape_its_nearest_cell_as_coal_measures_it(scenes, configurations):
    names, q, valid = configurations
    checker = scenes["filled"]
    world = checker.scene.world
    boxes = checker.scene.occupancy.cell_boxes()
    influence_m = 0.05
    world_plain = scenes["plain"].scene.world
    near = [i for i in np.flatnonzero(valid["box"]).tolist()
            if _robot_distance_to_box(world_plain, q[i]) < influence_m][:6]
    assert len(near) >= 3
    n_rows = 0
    for i in near:
        clearance = checker.clearance(names, q[i], influence_m)
        assert clearance.status == Status.VALID, clearance.message
        T = _posed(world, q[i])
        rows = {}
        for r in range(len(clearance)):
            pair = tuple(clearance.body_names[r])
            if OCTOMAP_ID in pair:
                side = pair.index(OCTOMAP_ID)
                key = (pair[1 - side], int(clearance.shape_ids[r, 1 - side]))
                assert key not in rows, f"two rows for {key}"
                rows[key] = (float(clearance.distance[r]), int(clearance.shape_ids[r, side]),
                             int(clearance.subshape_ids[r, side]))
        for k, entry in enumerate(world.shapes):
            if not entry.on_robot:
                continue
            vertices = np.asarray(entry.geometry.triangle_mesh().vertices) @ T[k, :3, :3].T + T[k, :3, 3]
            lo, hi = vertices.min(axis=0) - influence_m, vertices.max(axis=0) + influence_m
            reach = np.all((boxes.centres_m + boxes.size_m[:, None] / 2 >= lo)
                           & (boxes.centres_m - boxes.size_m[:, None] / 2 <= hi), axis=1)
            distances = {int(c): _coal_distance(entry.geometry.coal_geometry, T[k],
                                                coal.Box(*(boxes.size_m[c],) * 3), _translation(boxes.centres_m[c]))
                         for c in np.flatnonzero(reach).tolist()}
            nearest = min(distances.values(), default=np.inf)
            key = (entry.owner, entry.shape_id)
            if nearest >= influence_m:
                assert key not in rows, f"configuration {i}: a row for {key} whose cells are all beyond the influence"
                continue
            assert key in rows, f"configuration {i}: no row for {key}, coal's nearest cell at {nearest:.4f} m"
            distance, cell, subshape = rows[key]
            assert cell == subshape
            if nearest > 0.0:
                assert abs(distance - nearest) <= CLEARANCE_TOLERANCE_M, (key, distance, nearest)
                assert abs(distances[cell] - nearest) <= CLEARANCE_TOLERANCE_M
            else:
                assert distance <= CLEARANCE_TOLERANCE_M
            n_rows += 1
    assert n_rows >= len(near)


# ----- padding and the allowed-collision matrix --------------------------------------------
def test_padding_makes_a_robot_within_padding_of_a_cell_invalid_as_with_a_box(scenes, configurations):
    names, q, valid = configurations
    padding_m = 0.02
    padded_map = _panda(default_padding_m=padding_m)
    padded_map.set_occupancy(scenes["filled"].scene.occupancy)
    padded_box = _panda(default_padding_m=padding_m)
    padded_box.apply([_box_object()])
    map_checker, box_checker = CollisionChecker(padded_map), CollisionChecker(padded_box)
    # the configurations the unpadded box and map leave free but that come near them
    subset = np.flatnonzero(valid["filled"] & valid["box"])[:300]
    map_valid, _ = map_checker.check_batch(names, q[subset])
    box_valid, _ = box_checker.check_batch(names, q[subset])
    plain_padded = CollisionChecker(_panda(default_padding_m=padding_m))
    self_ok, _ = plain_padded.check_batch(names, q[subset])
    assert not np.any(~box_valid & map_valid & self_ok), "padded box invalid, padded filled map valid"
    # invalid with the map exactly when some robot shape is within the padding of a cell (unpadded clearance)
    clearance = scenes["filled"].clearance(names, q[subset], padding_m + 0.005)
    nearest = np.full(len(subset), np.inf)
    for r in range(len(clearance)):
        if OCTOMAP_ID in tuple(clearance.body_names[r]):
            c = int(clearance.configuration_index[r])
            nearest[c] = min(nearest[c], float(clearance.distance[r]))
    clear_of_boundary = self_ok & (np.abs(nearest - padding_m) > 1e-4)
    newly_invalid = ~map_valid & self_ok
    assert newly_invalid.sum() >= 5, "some configurations must come within the padding"
    np.testing.assert_array_equal(newly_invalid[clear_of_boundary], (nearest < padding_m)[clear_of_boundary])


def _hand_only_map(scene, q):
    """A map of cells on the hand's outer surface away from every other link, at ``q``."""
    world = scene.world
    T = _posed(world, q)
    k = _robot_shape_index(world, "panda_hand", 0)
    mesh = world.shapes[k].geometry.triangle_mesh().copy()
    mesh.apply_transform(T[k])
    rng = np.random.default_rng(SEED + 3)
    points, _ = trimesh.sample.sample_surface(mesh, 400, seed=SEED + 3)
    points = np.asarray(points)
    others = [(j, e) for j, e in enumerate(world.shapes) if e.on_robot and e.owner != "panda_hand"]
    keep = []
    for p in points[rng.permutation(len(points))]:
        cell = coal.Box(RESOLUTION_M, RESOLUTION_M, RESOLUTION_M)
        centre = (np.floor(p / RESOLUTION_M) + 0.5) * RESOLUTION_M
        if all(_coal_distance(e.geometry.coal_geometry, T[j], cell, _translation(centre)) > 0.01 for j, e in others):
            keep.append(p)
        if len(keep) >= 5:
            break
    return OccupancyMap.from_points(np.array(keep), RESOLUTION_M)


def test_allowing_the_hand_against_the_octomap_makes_a_hand_only_contact_valid():
    scene = _panda()
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    q = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02])
    assert checker.check(names, q).valid
    scene.set_occupancy(_hand_only_map(scene, q))
    explanation = checker.explain(names, q)
    assert not explanation.valid
    assert {c.link_names for c in explanation.contacts} == {("panda_hand", OCTOMAP_ID)}
    scene.set_allowed_collisions([("panda_hand", OCTOMAP_ID, True)])
    assert checker.check(names, q).valid and checker.explain(names, q).valid
    assert checker.check_motion(names, q, q + 0.001).valid


# ----- bad input ---------------------------------------------------------------------------
def test_the_octomap_object_is_not_added_or_moved_through_updates(scenes):
    scene = _panda()
    occupancy = scenes["filled"].scene.occupancy
    scene.set_occupancy(occupancy)
    before = scene.world
    for update in (MoveObject(OCTOMAP_ID, _translation((0.1, 0.0, 0.0))),
                   AddObject(SceneObject(OCTOMAP_ID, (ObjectShape(Box((0.1, 0.1, 0.1))),), np.eye(4)))):
        with pytest.raises(SceneError, match=OCTOMAP_ID) as refused:
            scene.apply([update])
        assert "\n" not in str(refused.value)
        assert scene.world is before and scene.occupancy is occupancy


def test_a_request_beyond_max_octomap_cells_is_refused_by_name(scenes, configurations):
    names, q, valid = configurations
    occupancy = scenes["filled"].scene.occupancy
    scene = _panda()
    scene.set_occupancy(occupancy)
    checker = CollisionChecker(scene, limits=WorkLimits(max_octomap_cells=10))
    i = int(np.flatnonzero(~valid["filled"])[0])
    assert not checker.check(names, q[i]).valid                 # the predicate tests the tree: no bound
    for result in (checker.explain(names, q[i]), checker.clearance(names, q[i], 0.1),
                   checker.check_motion(names, q[i], q[i] + 0.01),
                   checker.check_trajectory(names, np.stack([q[i], q[i] + 0.01]), np.array([0.0, 1.0]))):
        assert result.status == Status.INVALID_REQUEST
        assert result.message.startswith("max_octomap_cells") and "\n" not in result.message
    checker.limits = WorkLimits()
    assert checker.explain(names, q[i]).status == Status.IN_COLLISION


def test_a_cell_wholly_inside_a_closed_link_mesh_is_a_collision():
    """The solid-body test: cells that no link surface meets, but inside the link, collide;
    cells outside it do not. Beside them a wall of cells far from the arm (so the tree's
    bounds overlap every link, and many cells share the links' x range)."""
    scene = _panda()
    checker = CollisionChecker(scene)
    names = scene.robot.active_joint_names
    q = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02])
    world = scene.world
    T = _posed(world, q)
    fine = 0.01
    wall = _grid((-0.6, -0.8, 0.0), (-0.6, 0.8, 1.2), fine / 2)
    for link in ("panda_link4", "panda_link2", "panda_hand"):
        k = _robot_shape_index(world, link, 0)
        mesh = world.shapes[k].geometry.triangle_mesh().copy()
        mesh.apply_transform(T[k])
        # the 1 cm cell deepest inside: wholly inside when its centre is deeper than half its diagonal
        lo, hi = np.floor(mesh.bounds[0] / fine) * fine + fine / 2, mesh.bounds[1]
        centres = _grid(lo, lo + np.floor((hi - lo) / fine) * fine, fine)
        depth = trimesh.proximity.signed_distance(mesh, centres)           # > 0 inside
        centre = centres[np.argmax(depth)]
        assert depth.max() > fine * np.sqrt(3.0) / 2 + 1e-3
        scene.set_occupancy(OccupancyMap.from_points(np.vstack([wall, centre[None, :]]), fine))
        verdict = checker.check(names, q)
        assert not verdict.valid and OCTOMAP_ID in verdict.message and link in verdict.message, (link, verdict)
        scene.set_occupancy(OccupancyMap.from_points(wall, fine))
        assert checker.check(names, q).valid
