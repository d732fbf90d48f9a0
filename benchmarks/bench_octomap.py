"""From a 100k-point cloud to an occupancy map: decode, frame, self-filter, map build.

Run:  python benchmarks/bench_octomap.py [--points 100000] [--rounds 5] [--resolution 0.02]

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
- the self-filter again on one thread (numba's), beside the figure on all of them.
"""
from __future__ import annotations

import argparse
import statistics
import time

import coal
import numba
import numpy as np
import trimesh

from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.perception.cloud_frames import cloud_to_planning_frame
from my_collision_pkg.core.perception.occupancy import MODE_ACCUMULATE, OccupancyMap, OccupancyUpdater
from my_collision_pkg.core.perception.point_cloud import FLOAT32, decode_point_cloud, encode_point_cloud
from my_collision_pkg.core.perception.self_filter import filter_robot_points, points_outside_world_objects
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
