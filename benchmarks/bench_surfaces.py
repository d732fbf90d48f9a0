"""Speed and accuracy of contact surfaces, before (main's mid-plane slice) and after (the footprint), in one run.

Run:  PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_surfaces.py [--rounds 15] [--before REV]

Three parts, each timed ``--rounds`` times after one warm-up call (median and p90 per pair):

1. The analytic cases of issue 17, stiffness 1e6 Pa/m: a box 10 mm into a box (a 0.1 m cube into a
   0.2 m cube), a sphere (r = 0.05 m) 10 mm into a box face, a cylinder (r = 0.05 m, 0.2 m long)
   side-on 10 mm into a box face. Printed: stiffness x the analytic overlap volume and the
   analytic footprint area against what each path computes. Paths: *before* (the surfaces
   package at ``--before``, loaded from git, on the tessellations the scene uses: icosphere 3,
   48-sided cylinder), *mesh* (``compute_contact_surface`` now, same tessellations), *analytic*
   (``primitive_contact_surface``, what ``explanation_surfaces`` uses for primitive pairs).
2. ``make demo``'s pairs: every penetrating shape pair of the demo's two colliding Panda
   configurations (``config/panda_world.yaml``), through ``explanation_surfaces`` before and after.
3. Nine overlapping Panda link-mesh pairs through ``compute_contact_surface`` before and after.

Drake's hydroelastic figures on this machine (issue 17): box into box 0.044 ms, sphere into box
0.81 ms. The target is a median <= 1 ms per pair. One machine, one run: figures move with the load,
which is printed (1-minute load average; the machine has 2 cores shared with other jobs).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import statistics
import subprocess
import sys
import sysconfig
import time
import types

import manifold3d
import numpy as np
import trimesh

from my_collision_pkg.core.geometry.shape_geometry import ROUND_SECTIONS, SPHERE_SUBDIVISIONS
from my_collision_pkg.core.model.shapes import Box, Cylinder, Sphere
from my_collision_pkg.core.surfaces.contact_surface import compute_contact_surface
from my_collision_pkg.core.surfaces.primitive_surfaces import primitive_contact_surface

TARGET_MS_PER_PAIR = 1.0
STIFFNESS_PA_PER_M = 1.0e6
ROUNDS = 15
MS_PER_S = 1e3
BEFORE_REVISION = "b2f4836"      # main before issue 17's surfaces (the mid-plane slice)
# dependencies first; a module the revision does not have is skipped (convex_overlap and primitive_surfaces
# came with the footprint)
SURFACE_MODULES = ("plane_geometry", "outline", "refinement", "convex_overlap", "contact_surface", "primitive_surfaces",
                   "explanation_surfaces")
REPOSITORY = pathlib.Path(__file__).resolve().parent.parent
PANDA_COLLISION_MESHES = (
    pathlib.Path(sysconfig.get_paths()["purelib"])
    / "cmeel.prefix/share/example-robot-data/robots/panda_description/meshes/collision"
)
DEPTH_M = 0.01
RADIUS_M = 0.05
CYLINDER_LENGTH_M = 0.2


def load_before(revision: str) -> types.ModuleType | None:
    """The surfaces package as it was at ``revision``, imported from git under another name."""
    package_name = "_surfaces_before"
    package = types.ModuleType(package_name)
    package.__path__ = []
    sys.modules[package_name] = package
    for name in SURFACE_MODULES:
        path = f"my_collision_pkg/core/surfaces/{name}.py"
        try:
            present = subprocess.run(["git", "-C", str(REPOSITORY), "cat-file", "-e", f"{revision}:{path}"],
                                     capture_output=True).returncode == 0
            if not present and name in ("convex_overlap", "primitive_surfaces"):
                continue
            source = subprocess.run(["git", "-C", str(REPOSITORY), "show", f"{revision}:{path}"],
                                    check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"(before: cannot read {name}.py at {revision}: {error}; only the new code is timed)")
            return None
        source = source.replace("my_collision_pkg.core.surfaces.", f"{package_name}.")
        spec = importlib.util.spec_from_loader(f"{package_name}.{name}", loader=None)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        exec(compile(source, f"{revision}:{name}.py", "exec"), module.__dict__)
        setattr(package, name, module)
    return package


CPU_MS: list[float] = []    # the process CPU time of every timed call, per part (see timed)


def timed(call, rounds: int) -> tuple[float, float, object]:
    """Median and p90 wall-clock milliseconds of ``call()`` over ``rounds`` calls after a warm-up,
    and its result. The median process CPU time of the calls is appended to ``CPU_MS``: on a
    shared machine the wall clock also counts the time other jobs hold the cores."""
    result = call()
    samples_ms, cpu_ms = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = call()
        cpu_ms.append((time.process_time() - start_cpu) * MS_PER_S)
        samples_ms.append((time.perf_counter() - start) * MS_PER_S)
    CPU_MS.append(statistics.median(cpu_ms))
    return statistics.median(samples_ms), float(np.percentile(samples_ms, 90)), result


def pose(rotation=None, translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    if rotation is not None:
        T[:3, :3] = rotation
    T[:3, 3] = translation
    return T


def analytic_cases():
    """(title, spec 0, T 0, spec 1, T 1, plane point, normal, analytic volume, analytic area)."""
    chord_half_m = np.sqrt(2.0 * RADIUS_M * DEPTH_M - DEPTH_M**2)
    sphere_cap_m3 = np.pi * DEPTH_M**2 * (3.0 * RADIUS_M - DEPTH_M) / 3.0
    segment_m2 = RADIUS_M**2 * np.arccos((RADIUS_M - DEPTH_M) / RADIUS_M) - (RADIUS_M - DEPTH_M) * chord_half_m
    lying = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # the cylinder's axis along y
    block = Box((0.4, 0.4, 0.2))
    block_pose = pose(translation=(0.0, 0.0, -0.1))                          # top face z = 0
    up = np.array([0.0, 0.0, 1.0])
    return [
        ("box 10 mm into box", Box((0.2, 0.2, 0.2)), pose(translation=(0.0, 0.0, -0.1)), Box((0.1, 0.1, 0.1)),
         pose(translation=(0.02, -0.01, 0.05 - DEPTH_M)), np.array([0.02, -0.01, -0.5 * DEPTH_M]), up,
         0.1 * 0.1 * DEPTH_M, 0.1 * 0.1),
        ("sphere 10 mm into box", block, block_pose, Sphere(RADIUS_M), pose(translation=(0.01, 0.02, RADIUS_M - DEPTH_M)),
         np.array([0.01, 0.02, -0.5 * DEPTH_M]), up, sphere_cap_m3, np.pi * chord_half_m**2),
        ("cylinder side-on into box", block, block_pose, Cylinder(RADIUS_M, CYLINDER_LENGTH_M),
         pose(lying, (0.0, 0.0, RADIUS_M - DEPTH_M)), np.array([0.0, 0.0, -0.5 * DEPTH_M]), up,
         CYLINDER_LENGTH_M * segment_m2, CYLINDER_LENGTH_M * 2.0 * chord_half_m),
    ]


def tessellation(spec, T_world_shape) -> trimesh.Trimesh:
    if isinstance(spec, Box):
        mesh = trimesh.creation.box(extents=spec.size_m)
    elif isinstance(spec, Sphere):
        mesh = trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=spec.radius_m)
    else:
        mesh = trimesh.creation.cylinder(radius=spec.radius_m, height=spec.length_m, sections=ROUND_SECTIONS)
    return mesh.apply_transform(T_world_shape)


def run_analytic_cases(before, rounds: int) -> dict[str, list[tuple[float, float]]]:
    print(f"\n1. analytic cases (stiffness {STIFFNESS_PA_PER_M:.0e} Pa/m): force = stiffness x overlap volume, "
          f"area = footprint")
    print(f"   {'case':<27}{'path':<10}{'median ms':>10}{'p90 ms':>8}{'cpu ms':>8}{'force N':>10}{'k*V N':>9}{'rel err':>9}"
          f"{'area cm2':>10}{'exact':>8}")
    after_ms = {}
    for title, spec_0, T_0, spec_1, T_1, point, normal, volume_m3, area_m2 in analytic_cases():
        meshes = (tessellation(spec_0, T_0), tessellation(spec_1, T_1))
        paths = []
        if before is not None:
            paths.append(("before", lambda: before.contact_surface.compute_contact_surface(
                *meshes, point, normal, STIFFNESS_PA_PER_M)))
        paths.append(("mesh", lambda: compute_contact_surface(*meshes, point, normal, STIFFNESS_PA_PER_M)))
        paths.append(("analytic", lambda: primitive_contact_surface(spec_0, T_0, spec_1, T_1, point, normal,
                                                                     STIFFNESS_PA_PER_M)))
        expected_n = STIFFNESS_PA_PER_M * volume_m3
        for path, call in paths:
            median_ms, p90_ms, patch = timed(call, rounds)
            if path != "before":
                after_ms.setdefault(path, []).append((median_ms, CPU_MS[-1]))
            force_n = float(-patch.force_world_n @ normal)
            print(f"   {title:<27}{path:<10}{median_ms:>10.3f}{p90_ms:>8.3f}{CPU_MS[-1]:>8.3f}{force_n:>10.3f}{expected_n:>9.3f}"
                  f"{force_n / expected_n - 1.0:>+9.1e}{patch.area_m2 * 1e4:>10.2f}{area_m2 * 1e4:>8.2f}")
    print("   (mesh: the tessellation's overlap, smaller than the true primitive's: icosphere "
          f"{SPHERE_SUBDIVISIONS}, {ROUND_SECTIONS}-sided cylinder)")
    return after_ms


# Colliding Panda configurations (panda_joint1..7): the demo's self- and environment collisions.
COLLIDING = (
    ("self-collision", [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785]),
    ("into the table", [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]),
)


def run_demo_pairs(before, rounds: int) -> list[float]:
    """Per penetrating shape pair, as the validator computes it (explanation_surfaces), one pair at a time."""
    import dataclasses

    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces

    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=str(REPOSITORY / "config" / "panda_world.yaml"))
    checker = CollisionChecker(scene)
    arm = [f"panda_joint{i}" for i in range(1, 8)]
    print("\n2. make demo's pairs: explanation_surfaces per penetrating shape pair (deepest contact's plane)")
    print(f"   {'configuration':<16}{'pair':<36}{'before ms':>10}{'p90':>7}{'after ms':>10}{'p90':>7}{'cpu':>7}"
          f"{'area before':>12}{'after cm2':>10}{'force before':>13}{'after N':>9}")
    after_ms = []
    for title, q in COLLIDING:
        explanation = checker.explain(arm, q)
        pairs = {}
        for contact in explanation.contacts:
            key = (contact.link_names, contact.shape_ids)
            if contact.distance < 0 and (key not in pairs or contact.distance < pairs[key].distance):
                pairs[key] = contact
        for (names, shape_ids), contact in pairs.items():
            one = dataclasses.replace(explanation, contacts=(contact,))
            row = f"   {title:<16}{names[0] + '/' + names[1] + ' ' + str(shape_ids[1]):<36}"
            results = []
            for module in ([before.explanation_surfaces] if before is not None else []) + [None]:
                function = explanation_surfaces if module is None else module.explanation_surfaces
                median_ms, p90_ms, surfaces = timed(lambda f=function: f(scene.world, one, STIFFNESS_PA_PER_M),
                                                    rounds)
                results.append((median_ms, p90_ms, surfaces[0].patch if surfaces else None))
            if before is None:
                results.insert(0, (float("nan"), float("nan"), None))
            after_ms.append((results[1][0], CPU_MS[-1]))
            areas = [r[2].area_m2 * 1e4 if r[2] is not None else float("nan") for r in results]
            forces = [float(np.linalg.norm(r[2].force_world_n)) if r[2] is not None else float("nan") for r in results]
            print(row + f"{results[0][0]:>10.2f}{results[0][1]:>7.2f}{results[1][0]:>10.2f}{results[1][1]:>7.2f}"
                  f"{CPU_MS[-1]:>7.2f}"
                  f"{areas[0]:>12.2f}{areas[1]:>10.2f}{forces[0]:>13.3f}{forces[1]:>9.3f}")
    return after_ms


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


def place_pair(link_pose) -> tuple[trimesh.Trimesh, trimesh.Trimesh, np.ndarray, np.ndarray, float]:
    """The two meshes in the world, the plane point, the unit normal and the overlap's volume."""
    name_0, name_1, angles_rad, offset_m, normal = link_pose
    mesh_0_world = trimesh.load(PANDA_COLLISION_MESHES / f"{name_0}.stl", force="mesh")
    mesh_1_world = trimesh.load(PANDA_COLLISION_MESHES / f"{name_1}.stl", force="mesh")
    T_world_link1 = trimesh.transformations.euler_matrix(*angles_rad)
    T_world_link1[:3, 3] = (
        mesh_0_world.centroid - T_world_link1[:3, :3] @ mesh_1_world.centroid + np.asarray(offset_m)
    )
    mesh_1_world.apply_transform(T_world_link1)
    normal_world = np.asarray(normal, dtype=float)
    normal_world /= np.linalg.norm(normal_world)
    overlap = to_manifold(mesh_0_world) ^ to_manifold(mesh_1_world)
    plane_point_world = np.asarray(overlap.to_mesh64().vert_properties)[:, :3].mean(axis=0)
    return mesh_0_world, mesh_1_world, plane_point_world, normal_world, overlap.volume()


def to_manifold(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    return manifold3d.Manifold(
        manifold3d.Mesh64(
            vert_properties=np.ascontiguousarray(mesh.vertices, dtype=np.float64),
            tri_verts=np.ascontiguousarray(mesh.faces, dtype=np.uint64),
        )
    )


def run_link_pairs(before, rounds: int) -> list[float]:
    print("\n3. overlapping Panda link meshes (200-300 triangles each): compute_contact_surface")
    print(f"   {'pair':<14}{'before ms':>10}{'p90':>7}{'after ms':>10}{'p90':>7}{'cpu':>7}{'k*V N':>9}{'before N':>10}"
          f"{'after N':>9}{'area before':>12}{'after cm2':>10}")
    after_ms = []
    for link_pose in POSES:
        mesh_0_world, mesh_1_world, point, normal, volume_m3 = place_pair(link_pose)
        arguments = (mesh_0_world, mesh_1_world, point, normal, STIFFNESS_PA_PER_M)
        functions = ([before.contact_surface.compute_contact_surface] if before is not None else []) + [
            compute_contact_surface]
        results = [timed(lambda f=f: f(*arguments), rounds) for f in functions]
        if before is None:
            results.insert(0, (float("nan"), float("nan"), None))
        after_ms.append((results[1][0], CPU_MS[-1]))
        forces = [float(-r[2].force_world_n @ normal) if r[2] is not None else float("nan") for r in results]
        areas = [r[2].area_m2 * 1e4 if r[2] is not None else float("nan") for r in results]
        print(f"   {link_pose[0] + '/' + link_pose[1]:<14}{results[0][0]:>10.2f}{results[0][1]:>7.2f}"
              f"{results[1][0]:>10.2f}{results[1][1]:>7.2f}{CPU_MS[-1]:>7.2f}{STIFFNESS_PA_PER_M * volume_m3:>9.2f}{forces[0]:>10.2f}"
              f"{forces[1]:>9.2f}{areas[0]:>12.2f}{areas[1]:>10.2f}")
    return after_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timed calls per pair")
    parser.add_argument("--before", default=BEFORE_REVISION, help="git revision of the 'before' surfaces")
    parser.add_argument("--skip-links", action="store_true", help="skip part 3")
    options = parser.parse_args()
    if not PANDA_COLLISION_MESHES.is_dir():
        raise SystemExit(f"bench_surfaces: Panda meshes not found in {PANDA_COLLISION_MESHES}")
    before = load_before(options.before)
    load = os.getloadavg()
    print(f"contact surfaces, {options.rounds} rounds per pair after a warm-up; before = surfaces at "
          f"{options.before}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    by_path = run_analytic_cases(before, options.rounds)
    summary = [("analytic cases, analytic path", by_path["analytic"]), ("analytic cases, mesh path", by_path["mesh"]),
               ("demo pairs", run_demo_pairs(before, options.rounds))]
    if not options.skip_links:
        summary.append(("link-mesh pairs", run_link_pairs(before, options.rounds)))
    print()
    for title, figures in summary:
        median_ms = statistics.median(wall for wall, _ in figures)
        median_cpu_ms = statistics.median(cpu for _, cpu in figures)
        print(f"{title}: median of the per-pair medians (after) {median_ms:.3f} ms wall, {median_cpu_ms:.3f} ms CPU; "
              f"worst {max(wall for wall, _ in figures):.3f} ms; target {TARGET_MS_PER_PAIR:.0f} ms: "
              f"{'met' if median_ms <= TARGET_MS_PER_PAIR else 'missed'} (wall), "
              f"{'met' if median_cpu_ms <= TARGET_MS_PER_PAIR else 'missed'} (CPU)")
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
