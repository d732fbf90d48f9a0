"""Clearance with Jacobians (issue 15) beside pinocchio + coal computing the same thing, in one run.

Franka Panda (example-robot-data URDF + SRDF) with the default world (``config/panda_world.yaml``),
a fixed random set of configurations within the limits. For each influence distance
(0.05 m and 0.5 m), with and without Jacobians:

- ours, one configuration per call (``CollisionChecker.clearance(names, q, d)``) and the whole set
  in one call (batch): microseconds per configuration, median of rounds;
- pinocchio + coal, what a pinocchio user writes: the model and the collision geometry from the
  same URDF (``pin.buildModelFromUrdf``, ``pin.buildGeomFromUrdf(..., pin.COLLISION)``), the
  table and the post added as coal objects fixed to the universe, our checked pairs (ACM applied)
  as its collision pairs; per configuration ``pin.computeDistances`` over the pairs, the pairs
  below the influence distance kept, and for their witness points ``pin.computeJointJacobians``
  + ``pin.getFrameJacobian`` (LOCAL_WORLD_ALIGNED) shifted to the point, the row
  ``n . (J_1(p1) - J_0(p0))``, the mimic finger folded into its leader. pinocchio has no batch
  call: its batch figure is its per-configuration loop.

Prints the figures, the ratio ours / pinocchio + coal (target <= 0.5), and how well the two
agree (rows found by both, largest distance and Jacobian difference on pairs both call apart, and
the rows where coal's surface distance is positive while one body lies inside the other).

    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_clearance.py --configurations 200 --rounds 3

Issue 40's comparison with Drake 1.58's CalcRobotClearance (a by-hand peer in its own venv, see
benchmarks/by_hand/drake_clearance.py): ``--export-drake FILE`` writes the scene, the four sets (the
first 200 valid and 256 penetrating configurations of bench_core's seed 20260611, at 0.05 m and
0.5 m) and our rows; ``--drake-sets`` times ours on them (single and batch), to set beside the
Drake script's figures, the two run alternately.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORLD = os.path.join(REPO, "config", "panda_world.yaml")
INFLUENCES_M = (0.05, 0.5)


class PinocchioClearance:
    """pinocchio + coal on the shape pairs our scene checks (no padding)."""

    def __init__(self, scene, urdf: str, package_dir: str) -> None:
        import coal
        import pinocchio as pin
        from my_collision_pkg.core.model.shapes import Box, Cylinder, Sphere

        self.pin = pin
        self.model = pin.buildModelFromUrdf(urdf)
        self.geom = pin.buildGeomFromUrdf(self.model, urdf, pin.COLLISION, package_dirs=[package_dir])
        by_name = {o.name: k for k, o in enumerate(self.geom.geometryObjects)}
        world = scene.world
        index = []
        for shape in world.shapes:
            if shape.link_index >= 0:
                index.append(by_name[f"{shape.owner}_{shape.shape_id}"])
                continue
            spec = shape.geometry.spec
            if isinstance(spec, Box):
                g = coal.Box(*spec.size_m)
            elif isinstance(spec, Cylinder):
                g = coal.Cylinder(spec.radius_m, spec.length_m)
            elif isinstance(spec, Sphere):
                g = coal.Sphere(spec.radius_m)
            else:
                raise ValueError(f"world shape {spec} not supported here")
            T = shape.T_frame_shape
            obj = pin.GeometryObject(f"{shape.owner}_{shape.shape_id}", 0, 0,
                                     pin.SE3(T[:3, :3].copy(), T[:3, 3].copy()), g)
            index.append(self.geom.addGeometryObject(obj))
        selection = world.pair_selection("", False, False)
        self.pairs = selection.pairs
        for a, b in self.pairs:
            self.geom.addCollisionPair(pin.CollisionPair(index[a], index[b]))
        self.data = self.model.createData()
        self.gdata = pin.GeometryData(self.geom)
        for request in self.gdata.distanceRequests:
            request.enable_signed_distance = True
        self.frame_of = [self.geom.geometryObjects[index[s]].parentFrame if world.shapes[s].link_index >= 0 else -1
                         for s in range(len(world.shapes))]
        robot = scene.robot
        self.robot = robot
        movable = {n: i for i, n in enumerate(robot.movable_joint_names)}
        self.q_map = []                      # (idx_q, index into our movable values)
        for j in range(1, self.model.njoints):
            if self.model.names[j] in movable:
                self.q_map.append((self.model.joints[j].idx_q, movable[self.model.names[j]]))
        # our active joints -> pinocchio velocity columns, mimics folded with their multiplier
        mimic = robot.kinematics_arrays[0]
        self.fold = np.zeros((self.model.nv, len(robot.active_joint_names)))
        for j in range(1, self.model.njoints):
            name = self.model.names[j]
            if name in movable:
                self.fold[self.model.joints[j].idx_v] = mimic[movable[name]]

    def q_pin(self, q: np.ndarray) -> np.ndarray:
        values = self.robot.movable_values(q)
        out = self.pin.neutral(self.model)
        for idx_q, k in self.q_map:
            out[idx_q] = values[k]
        return out

    def clearance(self, q: np.ndarray, influence: float, jacobians: bool):
        pin = self.pin
        model, data, geom, gdata = self.model, self.data, self.geom, self.gdata
        qp = self.q_pin(q)
        pin.computeDistances(model, data, geom, gdata, qp)
        rows = []
        if jacobians:
            pin.computeJointJacobians(model, data, qp)
            pin.updateFramePlacements(model, data)
        for k, result in enumerate(gdata.distanceResults):
            d = result.min_distance
            if d >= influence:
                continue
            p0, p1 = result.getNearestPoint1(), result.getNearestPoint2()
            p0, p1 = np.asarray(p0), np.asarray(p1)
            gap = np.linalg.norm(p1 - p0)
            # coal leaves the normal unset for mesh-mesh distances: the user takes it from the points
            n = (p1 - p0) / gap if d > 0 and gap > 1e-12 else np.asarray(result.normal)
            row = None
            if jacobians:
                row = np.zeros(model.nv)
                for side, point, sign in ((0, p0, -1.0), (1, p1, 1.0)):
                    frame = self.frame_of[self.pairs[k, side]]
                    if frame < 0:
                        continue
                    J = pin.getFrameJacobian(model, data, frame, pin.LOCAL_WORLD_ALIGNED)
                    r = np.asarray(point) - data.oMf[frame].translation
                    Jp = J[:3] + np.cross(J[3:].T, r).T
                    row += sign * (n @ Jp)
                row = row @ self.fold
            rows.append((k, d, row))
        return rows


def _median_us(fn, n_cfg: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) / n_cfg * 1e6


# ----- issue 40: the four sets of the Drake comparison ------------------------------------
DRAKE_SEED = 20260611            # bench_core's seed: 2000 configurations uniform within the limits
DRAKE_DRAWN = 2000
DRAKE_SETS = (("valid", 200), ("penetrating", 256))


def drake_sets(checker, names):
    """{(kind, influence): configurations (n, A)}: the first 200 valid and the first 256 penetrating
    configurations of the seed's 2000 draws, each at 0.05 m and 0.5 m."""
    robot = checker.scene.robot
    Q = np.random.default_rng(DRAKE_SEED).uniform(robot.lower_limits, robot.upper_limits,
                                                  size=(DRAKE_DRAWN, len(names)))
    valid = np.array([checker.check(names, q).valid for q in Q])
    out = {}
    for kind, n in DRAKE_SETS:
        chosen = Q[valid if kind == "valid" else ~valid][:n]
        for influence in INFLUENCES_M:
            out[(kind, influence)] = chosen
    return out


def export_drake(path: str, checker, urdf: str, sets: dict, names) -> None:
    """The scene as benchmarks/by_hand/drake_edges.py models it, the four sets, and our rows (body
    names, distance, Jacobian over the active joints) for the by-hand Drake script to compare."""
    import json
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_motion import export_edges
    scene = checker.scene
    robot = scene.robot
    export_edges(path, checker, urdf, [], [])
    data = json.load(open(path))
    data["mimic_matrix"] = robot.kinematics_arrays[0].tolist()
    data["active_joints"] = list(names)
    data["sets"] = []
    for (kind, influence), Q in sets.items():
        rows = checker.clearance(names, Q, influence)
        data["sets"].append({"kind": kind, "influence": influence,
                             "configurations": [robot.movable_values(q).tolist() for q in Q],
                             "rows": {"configuration": rows.configuration_index.tolist(),
                                      "bodies": rows.body_names.tolist(), "distance": rows.distance.tolist(),
                                      "jacobian": rows.jacobian.tolist(), "smooth": rows.smooth.tolist()}})
    with open(path, "w") as out:
        json.dump(data, out)
    print(f"wrote the four sets and our rows to {path}")


def run_drake_sets(checker, names, rounds: int, workers_note: str) -> None:
    """Ours per configuration on the four sets: single (a loop of one-configuration calls) and batch
    (one call; batch_workers as set), best of ``rounds`` rounds, microseconds per configuration."""
    sets = drake_sets(checker, names)
    print(f"ours on the four sets (seed {DRAKE_SEED}); best of {rounds} rounds; us per configuration; {workers_note}")
    print(f"{'set':>12} {'influence':>9} | {'rows':>6} {'single':>8} {'batch':>8}")
    for (kind, influence), Q in sets.items():
        single, batch = np.inf, np.inf
        for _ in range(rounds):
            t = time.perf_counter()
            for q in Q:
                checker.clearance(names, q, influence)
            single = min(single, (time.perf_counter() - t) / len(Q) * 1e6)
            t = time.perf_counter()
            rows = checker.clearance(names, Q, influence)
            batch = min(batch, (time.perf_counter() - t) / len(Q) * 1e6)
        print(f"{kind + ' ' + str(len(Q)):>12} {influence:>9.2f} | {len(rows):>6} {single:>8.1f} {batch:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configurations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--drake-sets", action="store_true",
                        help="only ours on issue 40's four sets (set beside benchmarks/by_hand/drake_clearance.py)")
    parser.add_argument("--export-drake", default=None, metavar="FILE",
                        help="write the scene, the four sets and our rows for benchmarks/by_hand/drake_clearance.py")
    args = parser.parse_args()
    if args.drake_sets or args.export_drake:
        from my_collision_pkg.core.checks.checker import CollisionChecker
        from my_collision_pkg.core.model.example_robots import panda_paths
        from my_collision_pkg.core.scene.loading import load_scene
        urdf, srdf = panda_paths()
        checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD))
        names = checker.scene.robot.active_joint_names
        checker.clearance(names, np.zeros((2, len(names))), 0.5)         # warm
        if args.export_drake:
            export_drake(args.export_drake, checker, urdf, drake_sets(checker, names), names)
        if args.drake_sets:
            # the batch workers forked first (as a node's are after its first large batch), so that every set's
            # batch is shared with them where the checker would share it (not only the sets after the fork)
            from my_collision_pkg.core.checks.batch_workers import MIN_FORK_CONFIGURATIONS
            robot = checker.scene.robot
            checker.clearance(names, np.random.default_rng(1).uniform(robot.lower_limits, robot.upper_limits,
                                                                      size=(MIN_FORK_CONFIGURATIONS, len(names))), 0.05)
            run_drake_sets(checker, names, args.rounds, f"batch_workers {checker.batch_workers} "
                           f"({len(checker.batch_worker_pids)} forked before timing)")
        return

    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.model.example_robots import example_robot_data_share, panda_paths
    from my_collision_pkg.core.scene.loading import load_scene

    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=WORLD)
    checker = CollisionChecker(scene)
    robot = scene.robot
    names = robot.active_joint_names
    Q = np.random.default_rng(args.seed).uniform(robot.lower_limits, robot.upper_limits,
                                                 size=(args.configurations, len(names)))
    peer = PinocchioClearance(scene, urdf, os.path.dirname(example_robot_data_share()))
    n = len(Q)
    checker.clearance(names, Q[:5], 0.5)                      # warm
    print(f"Panda + default world, {n} random configurations, {len(peer.pairs)} checked shape pairs, "
          f"{args.rounds} rounds (median); us per configuration")
    print(f"{'influence':>9} {'jac':>4} | {'ours single':>11} {'ours batch':>10} {'pin+coal':>9} | "
          f"{'single/pin':>10} {'batch/pin':>9} | {'rows ours':>9} {'rows pin':>8} {'max|dd| m':>9} {'max|dJ|':>8} "
          f"{'inside':>6}")
    for influence in INFLUENCES_M:
        for jac in (False, True):
            single = _median_us(lambda: [checker.clearance(names, q, influence, compute_jacobians=jac) for q in Q],
                                n, args.rounds)
            batch = _median_us(lambda: checker.clearance(names, Q, influence, compute_jacobians=jac), n, args.rounds)
            pinc = _median_us(lambda: [peer.clearance(q, influence, jac) for q in Q], n, args.rounds)
            # agreement on separated pairs (penetration numbers differ by definition: see issue 15)
            ours = checker.clearance(names, Q, influence, compute_jacobians=jac)
            key = {}
            for r in range(len(ours)):
                key[(int(ours.configuration_index[r]), *ours.shape_pairs[r].tolist())] = r
            rows_pin, dd, dJ, inside = 0, 0.0, 0.0, 0
            for c, q in enumerate(Q):
                for k, d, row in peer.clearance(q, influence, jac):
                    rows_pin += 1
                    r = key.get((c, *peer.pairs[k].tolist()))
                    if r is None or d <= 1e-4:
                        continue
                    if ours.distance[r] <= 0.0:     # coal's surface distance of a body inside another
                        inside += 1
                        continue
                    dd = max(dd, abs(d - ours.distance[r]))
                    if jac:
                        dJ = max(dJ, float(np.max(np.abs(row - ours.jacobian[r]))))
            print(f"{influence:>9.2f} {'yes' if jac else 'no':>4} | {single:>11.1f} {batch:>10.1f} {pinc:>9.1f} | "
                  f"{single / pinc:>10.2f} {batch / pinc:>9.2f} | {len(ours):>9} {rows_pin:>8} {dd:>9.1e} "
                  f"{dJ if jac else float('nan'):>8.1e} {inside:>6}")
    print("target: ours <= 0.5 x pinocchio + coal. max|dd|, max|dJ|: over pairs both call apart; inside: rows coal"
          " calls apart (surface distance) where ours finds one body inside the other (negative distance)")


if __name__ == "__main__":
    main()
