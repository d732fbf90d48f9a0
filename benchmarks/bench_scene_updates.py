"""Cost of one scene update against the size of the world, and of the first check after it.

Run:  python benchmarks/bench_scene_updates.py [--objects 2000] [--mesh-triangles 500000]

The Panda (example-robot-data) and boxes added one ``PlanningScene.apply`` at a time,
as a stream of ApplyCollisionObjects requests adds them. Printed, in milliseconds:

- ADD of one box when the world holds 10, 1000 and 2000 objects (median of the 9
  updates around that count), and MOVE and REMOVE of one box at the end;
- ``check`` right after an update (the first check on a new snapshot builds that
  snapshot's lazy tables) and the steady ``check`` on an unchanged world;
- with ``--mesh-triangles N`` (0: skipped): ADD and REMOVE of one N-triangle mesh
  (a UV sphere), their times and the process RSS before the ADD, after it and after
  the REMOVE.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.model.robot_model import Box, TriangleMesh
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.scene.planning_scene import AddObject, MoveObject, ObjectShape, RemoveObject, SceneObject

MS_PER_S = 1e3
MARKS = (10, 1000, 2000)
WINDOW = 9
RANDOM_SEED = 14


def _box(oid: str, rng: np.random.Generator) -> SceneObject:
    """A 5 cm box somewhere 1.5 to 3 m from the robot (so the arm's checks stay valid)."""
    angle, radius = rng.uniform(0, 2 * np.pi), rng.uniform(1.5, 3.0)
    centre = [radius * np.cos(angle), radius * np.sin(angle), rng.uniform(0.0, 1.0)]
    return SceneObject(oid, (ObjectShape(Box((0.05, 0.05, 0.05))),), make_transform(None, centre))


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * MS_PER_S


def updates(n_objects: int) -> None:
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    checker = CollisionChecker(scene)
    names = list(scene.robot.active_joint_names)
    q = list(scene.current_positions)
    checker.check(names, q)
    rng = np.random.default_rng(RANDOM_SEED)
    add_ms, first_check_ms = [], []
    for k in range(n_objects):
        add_ms.append(_ms(lambda: scene.apply([AddObject(_box(f"box{k}", rng))])))
        first_check_ms.append(_ms(lambda: checker.check(names, q)))
    steady = statistics.median(_ms(lambda: checker.check(names, q)) for _ in range(50))
    print(f"Panda, {len(scene.world.shapes)} shapes, {len(scene.world.pairs)} pairs at the end")
    print(f"{'objects':>8} {'ADD ms':>8} {'check after ms':>15}")
    for mark in MARKS:
        if mark > n_objects:
            continue
        lo, hi = max(0, mark - WINDOW), mark
        print(f"{mark:>8} {statistics.median(add_ms[lo:hi]):>8.3f} {statistics.median(first_check_ms[lo:hi]):>15.3f}")
    move_ms, move_check_ms, remove_ms = [], [], []
    for k in range(WINDOW):
        T = make_transform(None, [2.0, 2.0, 0.1 * k])
        move_ms.append(_ms(lambda: scene.apply([MoveObject(f"box{k}", T)])))
        move_check_ms.append(_ms(lambda: checker.check(names, q)))
    for k in range(WINDOW):
        remove_ms.append(_ms(lambda: scene.apply([RemoveObject(f"box{n_objects - 1 - k}")])))
    print(f"at {n_objects} objects: MOVE {statistics.median(move_ms):.3f} ms (check after "
          f"{statistics.median(move_check_ms):.3f} ms), REMOVE {statistics.median(remove_ms):.3f} ms, "
          f"steady check {steady:.3f} ms")


def big_mesh(triangles: int) -> None:
    import trimesh

    from my_collision_pkg.core.memory import release_free_memory

    sections = max(3, int(round(np.sqrt(triangles / 4.0))))     # a UV sphere has about 4 n^2 triangles
    sphere = trimesh.creation.uv_sphere(radius=0.2, count=[sections, sections])
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    spec = TriangleMesh(np.array(sphere.vertices), np.array(sphere.faces))
    mesh = SceneObject("big", (ObjectShape(spec),), make_transform(None, [2.0, 0.0, 0.5]))
    del sphere
    release_free_memory()
    before = _rss_mb()
    add = _ms(lambda: scene.apply([AddObject(mesh)]))
    after_add = _rss_mb()
    remove = _ms(lambda: scene.apply([RemoveObject("big")]))
    after_remove = _rss_mb()
    print(f"mesh of {len(spec.triangles)} triangles: ADD {add / MS_PER_S:.2f} s, REMOVE {remove:.1f} ms; "
          f"RSS before {before:.0f} MB, after ADD {after_add:.0f} MB, after REMOVE {after_remove:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--mesh-triangles", type=int, default=0)
    args = parser.parse_args()
    if args.objects:
        updates(args.objects)
    if args.mesh_triangles:
        big_mesh(args.mesh_triangles)


if __name__ == "__main__":
    main()
