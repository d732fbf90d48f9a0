"""Drake's CheckEdgeCollisionFree on the edges of bench_motion.py: a by-hand peer, outside `make bench`.

Drake 1.58 needs Python 3.12, so this runs in a venv of its own (not the project's):

    python3.12 -m venv /tmp/drake-venv && /tmp/drake-venv/bin/pip install drake==1.58.0 trimesh
    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_motion.py --export-edges /tmp/edges.json
    /tmp/drake-venv/bin/python benchmarks/by_hand/drake_edges.py /tmp/edges.json

Run the two commands in turn (twice, for the noise) to set the figures side by side; each
prints its medians over the same edges.

The scene is the one bench_motion checks:
- The URDF with its visual elements dropped, and each collision STL converted to OBJ
  (trimesh). Drake 1.58 reads neither STL nor DAE for proximity, and takes each mesh as its
  convex hull.
- The root welded to the world, and the world file's primitives welded at their poses.
- Every pair of bodies that the exported request does not check filtered out.
- Padding 0.

The Panda's second finger joint, a mimic joint for us, is a joint of its own in Drake; it
gets the exported (mimicked) value. Edges are timed best of ``--rounds`` with both of
Drake's step measures, the default (the Euclidean norm of the joint change) and the largest
joint change (bench_motion's discrete sampling). Both use ``--step`` (0.05). The verdicts
are compared with the fine reference's: an edge the reference finds invalid and Drake calls
free is a miss.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time

import numpy as np
import trimesh
from pydrake.all import (Box, CollisionFilterDeclaration, Cylinder, GeometrySet, ProximityProperties,
                         RigidTransform, RobotDiagramBuilder, SceneGraphCollisionChecker, SpatialInertia, Sphere,
                         UnitInertia)


def drake_urdf(urdf: str, folder: str) -> str:
    """A copy of ``urdf`` in ``folder`` without visuals, its collision STL meshes as OBJ files there."""
    share = urdf.split("/robots/")[0]
    text = re.sub(r"<visual>.*?</visual>", "", open(urdf).read(), flags=re.S)

    def to_obj(match: re.Match) -> str:
        source = match.group(1).replace("package://example-robot-data", share)
        target = os.path.join(folder, os.path.basename(source)[:-4] + ".obj")
        if not os.path.exists(target):
            trimesh.load(source, force="mesh").export(target)
        return f'filename="{target}"'

    text = re.sub(r'filename="(package://[^"]+[.]stl)"', to_obj, text)
    path = os.path.join(folder, "robot.urdf")
    with open(path, "w") as out:
        out.write(text)
    return path


def build_checker(edges: dict, folder: str, step: float, largest_change: bool):
    builder = RobotDiagramBuilder(time_step=0.0)
    plant = builder.plant()
    (robot,) = builder.parser().AddModels(drake_urdf(edges["urdf"], folder))
    plant.WeldFrames(plant.world_frame(), plant.GetFrameByName(edges["root_link"], robot))
    bodies = {}
    for item in edges["objects"]:
        p = item["params"]
        shape = {"box": lambda: Box(2 * p[0], 2 * p[1], 2 * p[2]), "sphere": lambda: Sphere(p[0]),
                 "cylinder": lambda: Cylinder(p[0], 2 * p[1])}[item["kind"]]()
        instance = plant.AddModelInstance(f"object_{len(bodies)}_{item['owner']}")
        body = plant.AddRigidBody(item["owner"], instance, SpatialInertia(1.0, np.zeros(3), UnitInertia(1, 1, 1)))
        plant.RegisterCollisionGeometry(body, RigidTransform(), shape, item["owner"], ProximityProperties())
        plant.WeldFrames(plant.world_frame(), body.body_frame(), RigidTransform(np.array(item["pose"])))
        bodies[item["owner"]] = body
    plant.Finalize()
    diagram = builder.Build()
    checked = {tuple(pair) for pair in edges["pairs"]}
    geometries = {plant.get_body(i).name(): plant.GetCollisionGeometriesForBody(plant.get_body(i))
                  for i in plant.GetBodyIndices(robot)}
    geometries.update({name: plant.GetCollisionGeometriesForBody(body) for name, body in bodies.items()})
    names = [name for name, ids in geometries.items() if ids]
    filters = CollisionFilterDeclaration()
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if tuple(sorted((a, b))) not in checked:
                filters.ExcludeBetween(GeometrySet(geometries[a]), GeometrySet(geometries[b]))
    diagram.scene_graph().collision_filter_manager().Apply(filters)
    options = {}
    if largest_change:
        options["configuration_distance_function"] = lambda a, b: float(np.max(np.abs(a - b)))
    checker = SceneGraphCollisionChecker(model=diagram, robot_model_instances=[robot], edge_step_size=step,
                                         env_collision_padding=0.0, self_collision_padding=0.0, **options)
    order = np.array([plant.GetJointByName(name, robot).position_start() for name in edges["joints"]])
    return checker, order, plant.num_positions()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("edges", help="the JSON file bench_motion.py --export-edges wrote")
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    edges = json.load(open(args.edges))
    reference = np.array(edges["reference_valid"])
    print(f"{len(reference)} edges, {int((~reference).sum())} invalid by the reference; "
          f"{len(edges['pairs'])} body pairs checked; step {args.step}")
    with tempfile.TemporaryDirectory() as folder:
        for largest_change in (False, True):
            checker, order, n_positions = build_checker(edges, folder, args.step, largest_change)

            def positions(values):
                q = np.zeros(n_positions)
                q[order] = values
                return q

            pairs = [(positions(a), positions(b)) for a, b in edges["edges"]]
            checker.CheckEdgeCollisionFree(*pairs[0])
            best = np.full(len(pairs), np.inf)
            free = np.zeros(len(pairs), dtype=bool)
            for _ in range(args.rounds):
                for k, (a, b) in enumerate(pairs):
                    start = time.perf_counter()
                    free[k] = checker.CheckEdgeCollisionFree(a, b)
                    best[k] = min(best[k], time.perf_counter() - start)
            measure = "largest joint change" if largest_change else "Euclidean norm (Drake's default)"
            print(f"Drake CheckEdgeCollisionFree, step {args.step} in the {measure}: median "
                  f"{np.median(best) * 1e3:.2f} ms, p90 {np.percentile(best, 90) * 1e3:.2f} ms; invalid "
                  f"{int((~free).sum())}, missed {int(np.sum(free & ~reference))}, refused where the reference "
                  f"is valid {int(np.sum(~free & reference))}")


if __name__ == "__main__":
    main()
