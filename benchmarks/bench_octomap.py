"""From a 100k-point cloud to an occupancy map, then the checks against a ~50k-cell map.

Run:  python benchmarks/bench_octomap.py [--points 100000] [--rounds 5] [--resolution 0.02]
      [--configurations 300] [--edges 20] [--map-resolution 0.01] [--skip-cloud]

A synthetic depth-camera cloud around the Panda (example-robot-data) at a fixed
configuration: 30 % of the points on the robot's own link surfaces (the camera sees the
arm), 5 % 3 to 8 cm off them (something close to the arm, which must stay), the rest on
a table top and two boxes in front of it, 1 % NaN ("no return"),
packed as a PointCloud2 (FLOAT32 x, y, z and 4 bytes of rgb a point). One of the two
boxes is also a world object, so its points are cleared. Printed, in milliseconds
(median of the rounds, after one warm-up round that compiles the kernels):

- ``decode``: PointCloud2 bytes to (N, 3) with NaN points dropped;
- ``to planning frame``: the same cloud given in ``panda_hand``'s frame, posed by the
  kinematics;
- ``self-filter``: :func:`filter_robot_points` at padding 0 and 2 cm, and the points it
  dropped; beside it a bounding-box mask (each shape's oriented box, numpy): the points
  it would drop that are more than 2 cm from the robot, and those on or inside the robot
  it would keep (on a box face, a FLOAT32 coordinate falls either side);
- ``world objects``: :func:`points_outside_world_objects` (the box object);
- ``map (replace)``: ``OccupancyMap.from_points`` (coal.makeOctree) of what is left,
  and its cells; ``map (accumulate)``: one cloud ray-cast by octomap from the camera;
- ``coal id``: ``cell_of_coal_id`` of one contact, probing near its point, and the
  fallback that probes every cell once;
- the total of decode + self-filter + world objects + replace map, the update a node does;
- the self-filter again on one thread (numba's), beside the figure on all of them;
- the 100k-point cloud itself (every finite point) made into a map, ``replace`` and
  ``accumulate``.

Then the checks with a map of about 50 000 cells (``--map-resolution``, 1 cm: a table
top, a wall behind it, two side walls and a box on the table, one cell thick, the cells of
a grid of points) on the Panda, each beside the same check on the scene without the map,
over ``--configurations`` random configurations (free of self-collision; the same seed
every run) and ``--edges`` short edges (0.3 rad) from them:

- the predicate (``check``), per configuration (best of ``--rounds``, interleaved with
  the two below), median and mean;
- coal's own ``collide`` of the posed robot shapes (``geometry.coal_geometry`` at the
  poses of the package's kinematics, computed outside the timing) against the map's
  ``coal.OcTree``, a Python loop over the same pairs (each robot shape the predicate
  pairs with ``<octomap>``), stopping at the first collision as the predicate does; the
  ratio ours / coal's (target: at most 1, although ours also poses the robot and tests
  its self pairs), and whether the two verdicts agree on the environment;
- explain (contacts with the cells) and certified ``check_motion``, per call.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time

import coal
import numba
import numpy as np
import trimesh

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import Status
from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.perception.cloud_frames import cloud_to_planning_frame
from my_collision_pkg.core.perception.occupancy import MODE_ACCUMULATE, OccupancyMap, OccupancyUpdater
from my_collision_pkg.core.perception.point_cloud import FLOAT32, decode_point_cloud, encode_point_cloud
from my_collision_pkg.core.perception.self_filter import filter_robot_points, points_outside_world_objects
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.objects import OCTOMAP_ID
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject

MS_PER_S = 1e3
RANDOM_SEED = 16
ROBOT_SHARE = 0.3                    # of the points, on the robot's surfaces
CLOSE_SHARE = 0.05                   # of the points, 3 to 8 cm off the robot's surfaces
NAN_SHARE = 0.01
CAMERA_M = np.array([1.4, 0.0, 1.0])
BOX_A = (np.array([0.65, 0.25, 0.15]), np.array([0.2, 0.2, 0.3]))   # also a world object
BOX_B = (np.array([0.6, -0.3, 0.1]), np.array([0.15, 0.25, 0.2]))


def _translation(p) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def _cloud(scene, q, n: int, rng: np.random.Generator) -> np.ndarray:
    """Synthetic points (planning frame): robot surfaces, a table top, two boxes, NaNs."""
    world = scene.world
    T = world.shape_transforms(scene.robot.link_transforms(q))
    n_robot = int(ROBOT_SHARE * n)
    robot_meshes = []
    for k, entry in enumerate(world.shapes):
        if entry.on_robot:
            mesh = entry.geometry.triangle_mesh().copy()
            mesh.apply_transform(T[k])
            robot_meshes.append(mesh)
    merged = trimesh.util.concatenate(robot_meshes)
    robot, _ = trimesh.sample.sample_surface(merged, n_robot, seed=RANDOM_SEED)
    # something held close to the arm: points 3 to 8 cm out along the surface normal
    n_close = int(CLOSE_SHARE * n)
    close, faces = trimesh.sample.sample_surface(merged, n_close, seed=RANDOM_SEED + 1)
    close = np.asarray(close) + merged.face_normals[faces] * rng.uniform(0.03, 0.08, (n_close, 1))
    n_nan = int(NAN_SHARE * n)
    n_rest = n - n_robot - n_close - n_nan
    n_box = n_rest // 4
    boxes = []
    for centre, size in (BOX_A, BOX_B):
        sample, _ = trimesh.sample.sample_surface(trimesh.creation.box(extents=size), n_box, seed=RANDOM_SEED)
        boxes.append(np.asarray(sample) + centre)
    table = np.column_stack([rng.uniform(0.3, 1.2, n_rest - 2 * n_box), rng.uniform(-0.7, 0.7, n_rest - 2 * n_box),
                             np.full(n_rest - 2 * n_box, -0.001)])
    points = np.vstack([robot, close, *boxes, table, np.full((n_nan, 3), np.nan)])
    return points[rng.permutation(len(points))]


def _box_mask(world, q, points: np.ndarray) -> np.ndarray:
    """The points inside some robot shape's oriented bounding box (what a box mask drops)."""
    T = world.shape_transforms(world.robot.link_transforms(q))
    inside = np.zeros(len(points), dtype=bool)
    for k, entry in enumerate(world.shapes):
        if not entry.on_robot:
            continue
        g = entry.geometry
        local = np.einsum("ni,ij->nj", points - T[k, :3, 3], T[k, :3, :3])
        box = np.einsum("ni,ij->nj", local - g.obb_center_shape, g.obb_axes_shape)
        inside |= np.all(np.abs(box) <= g.obb_half_extents_m, axis=1)
    return inside


def _median_ms(fn, rounds: int):
    times, value = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        value = fn()
        times.append((time.perf_counter() - start) * MS_PER_S)
    return statistics.median(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--resolution", type=float, default=0.02)
    parser.add_argument("--configurations", type=int, default=300)
    parser.add_argument("--edges", type=int, default=20)
    parser.add_argument("--map-resolution", type=float, default=0.01)
    parser.add_argument("--skip-cloud", action="store_true", help="only the checks against the ~50k-cell map")
    args = parser.parse_args()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    if not args.skip_cloud:
        cloud_figures(args)
    check_figures(args)


def cloud_figures(args) -> None:
    """The cloud to map part: decode, frames, self-filter, world clearing, the map."""
    rng = np.random.default_rng(RANDOM_SEED)
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    scene.apply([AddObject(SceneObject("box_a", (ObjectShape(Box(tuple(BOX_A[1]))),), _translation(BOX_A[0])))])
    world = scene.world
    lo, hi = scene.robot.lower_limits, scene.robot.upper_limits
    q = lo + (hi - lo) * np.array([0.5, 0.6, 0.5, 0.3, 0.5, 0.6, 0.5, 0.5, 0.5])[:len(lo)]
    points = _cloud(scene, q, args.points, rng)
    message = encode_point_cloud(points, datatype=FLOAT32, extra_bytes=4)
    T_hand = scene.robot.link_transforms(q)[scene.robot.link_index("panda_hand")]
    finite = points[np.isfinite(points).all(axis=1)]
    in_hand = np.einsum("ni,ij->nj", finite - T_hand[:3, 3], T_hand[:3, :3])

    def update():
        decoded = decode_point_cloud(**message)
        kept = filter_robot_points(world, q, decoded.points_m, padding_m=0.0)
        outside = points_outside_world_objects(world, kept.points_m)
        return OccupancyMap.from_points(outside.points_m, args.resolution)

    update()                                                        # compiles the kernels
    accumulate_warm = OccupancyUpdater(resolution_m=args.resolution, mode=MODE_ACCUMULATE)
    accumulate_warm.update(finite[:1000], CAMERA_M)

    t_decode, decoded = _median_ms(lambda: decode_point_cloud(**message), args.rounds)
    t_frame, _ = _median_ms(lambda: cloud_to_planning_frame(in_hand, "panda_hand", scene.robot, q), args.rounds)
    t_filter0, kept0 = _median_ms(lambda: filter_robot_points(world, q, decoded.points_m, 0.0), args.rounds)
    t_filter2, kept2 = _median_ms(lambda: filter_robot_points(world, q, decoded.points_m, 0.02), args.rounds)
    t_mask, mask = _median_ms(lambda: _box_mask(world, q, decoded.points_m), args.rounds)
    t_world, outside = _median_ms(lambda: points_outside_world_objects(world, kept0.points_m), args.rounds)
    t_replace, occupancy = _median_ms(lambda: OccupancyMap.from_points(outside.points_m, args.resolution),
                                      args.rounds)
    t_update, _ = _median_ms(update, args.rounds)

    def accumulate_once():
        updater = OccupancyUpdater(resolution_m=args.resolution, mode=MODE_ACCUMULATE)
        return updater.update(outside.points_m, CAMERA_M)

    t_accumulate, accumulated = _median_ms(accumulate_once, max(1, args.rounds // 2))
    # one contact of a 5 cm cube on box B's top against the map, its cell found near its point
    # (a fresh map: nothing probed), then every cell probed (the fallback)
    request = coal.CollisionRequest()
    request.enable_contact = True
    result = coal.CollisionResult()
    top = BOX_B[0] + np.array([0.0, 0.0, BOX_B[1][2] / 2])
    coal.collide(coal.Box(0.05, 0.05, 0.05), coal.Transform3s(np.eye(3), top), occupancy.coal_geometry,
                 coal.Transform3s(), request, result)
    contact = result.getContact(0)
    start = time.perf_counter()
    near_cell = occupancy.cell_of_coal_id(contact.b1, near_m=contact.pos)
    t_near = (time.perf_counter() - start) * MS_PER_S
    fresh = OccupancyMap.from_points(outside.points_m, args.resolution)
    start = time.perf_counter()
    fresh.cell_of_coal_id(-1)
    t_ids = (time.perf_counter() - start) * MS_PER_S

    n = len(decoded.points_m)
    print(f"cloud: {args.points} points ({decoded.n_non_finite} NaN dropped), {ROBOT_SHARE:.0%} on the robot, "
          f"resolution {args.resolution} m, {args.rounds} rounds (median)")
    print(f"decode                      {t_decode:8.1f} ms")
    print(f"to planning frame (hand)    {t_frame:8.1f} ms")
    print(f"self-filter, padding 0      {t_filter0:8.1f} ms   dropped {kept0.n_dropped} of {n}")
    print(f"self-filter, padding 2 cm   {t_filter2:8.1f} ms   dropped {kept2.n_dropped} of {n}")
    print(f"bounding-box mask (numpy)   {t_mask:8.1f} ms   would drop {int(mask.sum())}: "
          f"{int((mask & kept2.keep).sum())} of them more than 2 cm from the robot, and keep "
          f"{int((~mask & ~kept0.keep).sum())} on or inside it")
    print(f"world objects cleared       {t_world:8.1f} ms   dropped {outside.n_dropped} of {len(kept0.points_m)}")
    print(f"map (replace, makeOctree)   {t_replace:8.1f} ms   {occupancy.n_occupied} cells")
    print(f"map (accumulate, ray-cast)  {t_accumulate:8.1f} ms   {accumulated.n_occupied} cells "
          f"({t_accumulate / t_replace:.0f}x replace)")
    print(f"coal id of one contact      {t_near:8.1f} ms   cell {near_cell} (probing near the contact point)")
    print(f"coal ids, every cell        {t_ids:8.1f} ms   {fresh.n_occupied} cells probed")
    print(f"update: decode + filter + world + replace map  {t_update:8.1f} ms "
          f"(self-filter {t_filter0 / t_update:.0%} of it)")
    numba.set_num_threads(1)
    t_single, _ = _median_ms(lambda: filter_robot_points(world, q, decoded.points_m, 0.0), args.rounds)
    print(f"self-filter, padding 0, 1 thread  {t_single:8.1f} ms  ({t_single / t_filter0:.2f}x the "
          f"{numba.config.NUMBA_NUM_THREADS}-thread figure)")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    rounds = max(1, args.rounds // 2)
    t_whole, whole = _median_ms(lambda: OccupancyUpdater(resolution_m=args.resolution).update(finite, CAMERA_M),
                                args.rounds)
    t_whole_acc, whole_acc = _median_ms(lambda: OccupancyUpdater(resolution_m=args.resolution, mode=MODE_ACCUMULATE)
                                        .update(finite, CAMERA_M), rounds)
    print(f"{len(finite)}-point cloud to a map: replace {t_whole:.1f} ms ({whole.n_occupied} cells), "
          f"accumulate {t_whole_acc:.1f} ms ({whole_acc.n_occupied} cells)")


def _sheet(lo, hi, step: float) -> np.ndarray:
    """A grid of points from ``lo`` to ``hi`` (3,) (one axis flat), ``step`` apart."""
    axes = [np.linspace(a, b, max(1, int(round((b - a) / step)) + 1)) for a, b in zip(lo, hi)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def big_map(resolution_m: float) -> OccupancyMap:
    """About 50 000 cells at 1 cm: a table top, a back wall, two side walls and a box on the table."""
    r = resolution_m
    half = r / 2
    parts = [
        _sheet((0.25, -0.8, -0.025), (1.2, 0.8, -0.025), half),       # table top, below the base
        _sheet((1.0, -0.8, 0.0), (1.0, 0.8, 1.1), half),              # back wall
        _sheet((0.25, 0.7, 0.0), (1.0, 0.7, 0.9), half),              # side walls
        _sheet((0.25, -0.7, 0.0), (1.0, -0.7, 0.5), half),
    ]
    box_lo, box_hi = np.array([0.45, -0.35, 0.0]), np.array([0.65, -0.15, 0.3])
    for axis in range(3):                                           # the box's six faces
        for value in (box_lo[axis], box_hi[axis]):
            lo, hi = box_lo.copy(), box_hi.copy()
            lo[axis] = hi[axis] = value
            parts.append(_sheet(lo, hi, half))
    return OccupancyMap.from_points(np.vstack(parts), resolution_m)


def _coal_loop(world, T_shape: np.ndarray, robot_shapes, tree, request) -> bool:
    """coal.collide of each posed robot shape against the tree, stopping at the first hit."""
    identity = coal.Transform3s()
    for s in robot_shapes:
        result = coal.CollisionResult()
        T = T_shape[s]
        if coal.collide(world.shapes[s].geometry.coal_geometry, coal.Transform3s(T[:3, :3], T[:3, 3]), tree,
                        identity, request, result):
            return True
    return False


def _per_call_ms(fn, items) -> np.ndarray:
    out = np.empty(len(items))
    for k, item in enumerate(items):
        start = time.perf_counter()
        fn(item)
        out[k] = (time.perf_counter() - start) * MS_PER_S
    return out


def check_figures(args) -> None:
    """The predicate, explain and certified motions against a ~50k-cell map, without it, and coal's loop."""
    urdf, srdf = panda_paths()
    plain = load_scene(urdf_path=urdf, srdf_path=srdf)
    mapped = load_scene(urdf_path=urdf, srdf_path=srdf)
    start = time.perf_counter()
    occupancy = big_map(args.map_resolution)
    t_map = (time.perf_counter() - start) * MS_PER_S
    mapped.set_occupancy(occupancy)
    with_map, without = CollisionChecker(mapped), CollisionChecker(plain)
    names = plain.robot.active_joint_names
    rng = np.random.default_rng(RANDOM_SEED + 1)
    lo, hi = plain.robot.lower_limits, plain.robot.upper_limits
    q = rng.uniform(lo, hi, (3 * args.configurations, len(lo)))
    free, _ = without.check_batch(names, q)
    q = q[free][:args.configurations]
    world = mapped.world
    tree_shape = next(s for s, e in enumerate(world.shapes) if e.owner == OCTOMAP_ID)
    selection = world.pair_selection("", True, False)
    robot_shapes = sorted({int(a if b == tree_shape else b) for a, b in selection.pairs.tolist()
                           if tree_shape in (a, b)})
    request = coal.CollisionRequest()
    request.num_max_contacts = 1
    request.enable_contact = False
    poses = [world.shape_transforms(mapped.robot.link_transforms(x)) for x in q]
    for x in q[:5]:                                                   # first calls: caches and cell tables
        with_map.check(names, x), without.check(names, x), with_map.explain(names, x)
    # per configuration, the three interleaved, best of --rounds (the machine is shared: noise falls on all alike)
    t_ours, t_plain, t_coal = (np.full(len(q), np.inf) for _ in range(3))
    for _ in range(args.rounds):
        for k, (x, T) in enumerate(zip(q, poses)):
            t_ours[k] = min(t_ours[k], _per_call_ms(lambda x: with_map.check(names, x), [x])[0])
            t_plain[k] = min(t_plain[k], _per_call_ms(lambda x: without.check(names, x), [x])[0])
            t_coal[k] = min(t_coal[k], _per_call_ms(
                lambda T: _coal_loop(world, T, robot_shapes, occupancy.coal_geometry, request), [T])[0])
    ours_valid = np.array([with_map.check(names, x).valid for x in q])
    coal_hit = np.array([_coal_loop(world, T, robot_shapes, occupancy.coal_geometry, request) for T in poses])
    print(f"\nmap: {occupancy.n_occupied} cells at {args.map_resolution} m ({t_map:.0f} ms from "
          f"{len(occupancy.leaf_centres_m())} leaf cells' points), {len(robot_shapes)} robot shapes paired with "
          f"'{OCTOMAP_ID}'; {len(q)} configurations free of self-collision, {int((~ours_valid).sum())} in collision "
          f"with the map")
    print(f"predicate, with the map      median {np.median(t_ours):7.3f} ms  mean {t_ours.mean():7.3f} ms")
    print(f"predicate, without the map   median {np.median(t_plain):7.3f} ms  mean {t_plain.mean():7.3f} ms")
    print(f"coal.collide loop (poses given) median {np.median(t_coal):7.3f} ms  mean {t_coal.mean():7.3f} ms;"
          f"  ours / coal's: median {np.median(t_ours) / np.median(t_coal):.2f}, mean "
          f"{t_ours.mean() / t_coal.mean():.2f}")
    for label, group in (("free of the map", ours_valid), ("in collision with it", ~ours_valid)):
        if group.any():
            print(f"  {label} ({int(group.sum())}): ours mean {t_ours[group].mean():.3f} ms, p90 "
                  f"{np.percentile(t_ours[group], 90):.3f} ms; coal's loop mean {t_coal[group].mean():.3f} ms, p90 "
                  f"{np.percentile(t_coal[group], 90):.3f} ms")
    print(f"verdicts: ours and coal's loop agree on {int(np.sum(ours_valid == ~coal_hit))} of {len(q)} "
          f"(ours invalid, coal free: {int(np.sum(~ours_valid & ~coal_hit))}: the solid-body test or padding; "
          f"coal hit, ours valid: {int(np.sum(ours_valid & coal_hit))})")
    subset = q[:min(len(q), 100)]
    t_explain = _per_call_ms(lambda x: with_map.explain(names, x), subset)
    t_explain_plain = _per_call_ms(lambda x: without.explain(names, x), subset)
    hit = [x for x, v in zip(subset, ours_valid[:len(subset)]) if not v]
    t_explain_hit = _per_call_ms(lambda x: with_map.explain(names, x), hit) if hit else np.zeros(1)
    print(f"explain, with the map        median {np.median(t_explain):7.2f} ms  mean {t_explain.mean():7.2f} ms "
          f"(in collision with it, {len(hit)}: median {np.median(t_explain_hit):.2f} ms, max "
          f"{t_explain_hit.max():.1f} ms)")
    print(f"explain, without the map     median {np.median(t_explain_plain):7.2f} ms  mean "
          f"{t_explain_plain.mean():7.2f} ms")
    starts = q[ours_valid][:args.edges]
    direction = rng.normal(size=starts.shape)
    direction[:, 7:] = 0.0
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    goals = np.clip(starts + 0.3 * direction, lo, hi)
    edges = list(zip(starts, goals))
    results = []
    t_motion = _per_call_ms(lambda e: results.append(with_map.check_motion(names, e[0], e[1])), edges)
    t_motion_plain = _per_call_ms(lambda e: without.check_motion(names, e[0], e[1]), edges)
    refused = sum(r.status == Status.INVALID_REQUEST for r in results)
    invalid = sum(not r.valid and r.status != Status.INVALID_REQUEST for r in results)
    print(f"certified motion, with the map    median {np.median(t_motion):7.2f} ms  mean {t_motion.mean():7.2f} ms "
          f"({len(edges)} edges of 0.3 rad from free starts: {invalid} invalid, {refused} refused)")
    print(f"certified motion, without the map median {np.median(t_motion_plain):7.2f} ms  mean "
          f"{t_motion_plain.mean():7.2f} ms")


if __name__ == "__main__":
    main()
