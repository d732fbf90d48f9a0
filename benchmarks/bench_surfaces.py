"""Speed of contact-surface computation on overlapping Panda collision meshes.

Run:  python benchmarks/bench_surfaces.py [--rounds 7]

Pairs of Panda link collision meshes (example-robot-data, 200-300 triangles each) are placed so
that they overlap: the second link is turned and its centroid put a few centimetres from the
first's. The contact plane passes through the mean vertex of their overlap, perpendicular to a
fixed normal, as ``surfaces_report`` does with the witness points of the deepest contact.

For every pair, ``compute_contact_surface`` is timed ``--rounds`` times after one warm-up call;
the figure of a pair is the median of its rounds. Printed: milliseconds per pair with the size
of the surface, then the median and the max over the pairs, against the 20 ms target of issue 4.
Then the surfaces of every penetrating shape pair of two colliding Panda configurations
(the demo's), computed as the validator does (``surfaces_report.explanation_surfaces``).
One machine, one run: the figures move with the machine's load.
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import sysconfig
import time

import manifold3d
import numpy as np
import trimesh

from my_collision_pkg.core.surfaces.contact_surface import compute_contact_surface

TARGET_MS_PER_PAIR = 20.0
STIFFNESS_PA_PER_M = 1.0e6
ROUNDS = 7
MS_PER_S = 1e3
PANDA_COLLISION_MESHES = (
    pathlib.Path(sysconfig.get_paths()["purelib"])
    / "cmeel.prefix/share/example-robot-data/robots/panda_description/meshes/collision"
)

# (link 0, link 1, rotation of link 1 about x, y, z in radians, offset of its centroid from link
# 0's in metres, contact normal from link 0 towards link 1)
POSES = [
    ("link3", "link4", (0.0, 0.0, 0.0), (0.0, 0.0, 0.08), (0.0, 0.0, 1.0)),
    ("link3", "link4", (0.0, 0.0, 1.57), (0.02, 0.0, 0.05), (0.0, 0.3, 1.0)),
    ("link1", "link2", (0.4, -0.2, 0.3), (0.03, 0.02, 0.06), (0.3, 0.2, 0.9)),
    ("link2", "link3", (1.57, 0.0, 0.0), (0.0, 0.04, 0.04), (0.0, 0.7, 0.7)),
    ("link5", "link6", (1.2, 0.0, -0.5), (0.05, -0.03, 0.02), (1.0, 0.0, 0.0)),
    ("link4", "link5", (0.0, 0.8, 0.0), (0.0, 0.0, 0.1), (0.0, 0.0, 1.0)),
    ("link0", "link1", (0.0, 0.0, 0.5), (0.0, 0.0, 0.1), (0.0, 0.0, 1.0)),
    ("link6", "link7", (0.3, 0.3, 0.3), (0.02, 0.02, 0.02), (0.6, -0.6, 0.5)),
    ("hand", "link7", (1.57, 0.0, 0.0), (0.0, 0.0, 0.03), (0.0, 0.0, 1.0)),
]


def load_link(name: str) -> trimesh.Trimesh:
    return trimesh.load(PANDA_COLLISION_MESHES / f"{name}.stl", force="mesh")


def place_pair(pose) -> tuple[trimesh.Trimesh, trimesh.Trimesh, np.ndarray, np.ndarray]:
    """The two meshes in the world, the plane point and the unit normal."""
    name_0, name_1, angles_rad, offset_m, normal = pose
    mesh_0_world = load_link(name_0)
    mesh_1_world = load_link(name_1)
    T_world_link1 = trimesh.transformations.euler_matrix(*angles_rad)
    T_world_link1[:3, 3] = (
        mesh_0_world.centroid - T_world_link1[:3, :3] @ mesh_1_world.centroid + np.asarray(offset_m)
    )
    mesh_1_world.apply_transform(T_world_link1)
    normal_world = np.asarray(normal, dtype=float)
    normal_world /= np.linalg.norm(normal_world)
    overlap = to_manifold(mesh_0_world) ^ to_manifold(mesh_1_world)
    plane_point_world = np.asarray(overlap.to_mesh64().vert_properties)[:, :3].mean(axis=0)
    return mesh_0_world, mesh_1_world, plane_point_world, normal_world


def to_manifold(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    return manifold3d.Manifold(
        manifold3d.Mesh64(
            vert_properties=np.ascontiguousarray(mesh.vertices, dtype=np.float64),
            tri_verts=np.ascontiguousarray(mesh.faces, dtype=np.uint64),
        )
    )


def time_pair_ms(arguments, rounds: int) -> tuple[float, object]:
    patch = compute_contact_surface(*arguments)  # warm-up
    samples_ms = []
    for _ in range(rounds):
        start = time.perf_counter()
        patch = compute_contact_surface(*arguments)
        samples_ms.append((time.perf_counter() - start) * MS_PER_S)
    return statistics.median(samples_ms), patch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timed calls per pair")
    options = parser.parse_args()
    if not PANDA_COLLISION_MESHES.is_dir():
        raise SystemExit(f"bench_surfaces: Panda meshes not found in {PANDA_COLLISION_MESHES}")

    print(f"contact surfaces on Panda collision meshes ({platform.processor() or platform.machine()},"
          f" numpy {np.__version__}, manifold3d, {options.rounds} rounds, median per pair)")
    print(f"{'pair':<14}{'tris':>11}{'ms':>9}{'vertices':>10}{'triangles':>11}{'area cm2':>10}")
    per_pair_ms = []
    for pose in POSES:
        mesh_0_world, mesh_1_world, plane_point_world, normal_world = place_pair(pose)
        arguments = (mesh_0_world, mesh_1_world, plane_point_world, normal_world, STIFFNESS_PA_PER_M)
        milliseconds, patch = time_pair_ms(arguments, options.rounds)
        per_pair_ms.append(milliseconds)
        triangle_counts = f"{len(mesh_0_world.faces)}+{len(mesh_1_world.faces)}"
        if patch is None:
            print(f"{pose[0] + '/' + pose[1]:<14}{triangle_counts:>11}{milliseconds:>9.2f}  (no surface)")
            continue
        print(
            f"{pose[0] + '/' + pose[1]:<14}{triangle_counts:>11}{milliseconds:>9.2f}"
            f"{len(patch.vertices_world):>10}{len(patch.triangles):>11}{patch.area_m2 * 1e4:>10.1f}"
        )

    median_ms = statistics.median(per_pair_ms)
    max_ms = max(per_pair_ms)
    verdict = "met" if max_ms < TARGET_MS_PER_PAIR else "missed"
    print(
        f"per pair: median {median_ms:.2f} ms, max {max_ms:.2f} ms; target {TARGET_MS_PER_PAIR:.0f} ms"
        f" ({median_ms / TARGET_MS_PER_PAIR:.2f} and {max_ms / TARGET_MS_PER_PAIR:.2f} of it): {verdict}"
    )
    colliding_configurations(options.rounds)


# Colliding Panda configurations (panda_joint1..7): the demo's self- and environment collisions.
COLLIDING = (
    ("self-collision", [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785]),
    ("into the table", [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]),
)


def colliding_configurations(rounds: int) -> None:
    """Surfaces as the validator computes them: every penetrating shape pair of an explanation."""
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces

    urdf, srdf = panda_paths()
    world_file = pathlib.Path(__file__).resolve().parent.parent / "config" / "panda_world.yaml"
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=str(world_file))
    checker = CollisionChecker(scene)
    arm = [f"panda_joint{i}" for i in range(1, 8)]
    print("explain + surfaces on colliding Panda configurations (default world), per penetrating shape pair")
    for title, q in COLLIDING:
        explanation = checker.explain(arm, q)
        explanation_surfaces(scene.world, explanation, STIFFNESS_PA_PER_M)      # warm-up
        seconds = []
        for _ in range(rounds):
            start = time.perf_counter()
            surfaces = explanation_surfaces(scene.world, explanation, STIFFNESS_PA_PER_M)
            seconds.append(time.perf_counter() - start)
        per_pair = statistics.median(seconds) * MS_PER_S / max(len(surfaces), 1)
        print(f"  {title}: {len(surfaces)} surfaces in {statistics.median(seconds) * MS_PER_S:.1f} ms, "
              f"{per_pair:.2f} ms per pair (target {TARGET_MS_PER_PAIR:.0f} ms): "
              f"{'met' if per_pair < TARGET_MS_PER_PAIR else 'missed'}")


if __name__ == "__main__":
    main()
