"""Every smooth clearance row of bench_core's 2000 configurations, at 0.05 m and 0.5 m, against central
differences of an independent distance (issue 40: "`smooth` is true only where the Jacobian matches central
differences"); lists the misses.

    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/by_hand/smooth_sweep.py [--n 2000] [--own-only]
        [--indices 1329,1384] [--influences 0.05,0.5]

The configurations: numpy default_rng(20260611), uniform in the limits of the 8 active joints, with
config/panda_world.yaml (test_panda_clearance_rows.py, bench_clearance.drake_sets). Step H = 1e-5 (rad, m),
clipped to the limits; the rule: max |J - fd| <= max(1e-3 max |fd|, 1e-6) (the test's).

Two central differences per smooth row:

- ``own``: of clearance's own distance of the same shape pair at q +- H (what the test does);
- ``independent``: apart rows, coal's signed distance of the two posed shapes (the real meshes; GJK tolerance
  1e-10); penetrating rows, a careful MTD: the overlap of the two convex solids (their support functions,
  ``penetration.body``) minimised over unit directions by Nelder-Mead in the tangent plane of the row's normal at
  q +- H (simplex 1e-3 rad, tolerances 1e-13), started from that normal and from the normal at q; the least
  overlap found (never above the overlap along clearance's own normal) is the depth.

A row misses when either difference breaks the rule; each miss is printed with both errors.
"""
import argparse
import os
import sys
import time

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_clearance as bc  # noqa: E402
from my_collision_pkg.core.checks import penetration  # noqa: E402
from my_collision_pkg.core.checks.checker import CollisionChecker  # noqa: E402
from my_collision_pkg.core.checks.limits import WorkLimits  # noqa: E402
from my_collision_pkg.core.geometry.coal_setup import coal  # noqa: E402
from my_collision_pkg.core.model.example_robots import panda_paths  # noqa: E402
from my_collision_pkg.core.scene.loading import load_scene  # noqa: E402

SEED = 20260611
H = 1e-5
REL, ABS = 1e-3, 1e-6


def coal_distance(world, T, a, b):
    ga, gb = world.shapes[a].geometry, world.shapes[b].geometry
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = 1e-10
    result = coal.DistanceResult()
    return float(coal.distance(ga.coal_geometry, coal.Transform3s(T[a][:3, :3], T[a][:3, 3]), gb.coal_geometry,
                               coal.Transform3s(T[b][:3, :3], T[b][:3, 3]), request, result))


def _overlap(body0, body1, n):
    n = n / np.linalg.norm(n)
    return float(body0.support(n[None, :])[0][0] + body1.support(-n[None, :])[0][0])


def careful_depth(world, T, a, b, starts):
    """The least overlap of the convex solids of shapes a, b over unit directions, searched from ``starts``."""
    body0, body1 = penetration.body(world, T, a), penetration.body(world, T, b)
    best = np.inf
    for n0 in starts:
        n0 = n0 / np.linalg.norm(n0)
        e1 = np.cross(n0, [1.0, 0.0, 0.0] if abs(n0[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(n0, e1)
        f = lambda x: _overlap(body0, body1, n0 + x[0] * e1 + x[1] * e2)  # noqa: E731
        best = min(best, f(np.zeros(2)))
        x = np.zeros(2)
        for size in (1e-3, 1e-5):
            r = minimize(f, x, method="Nelder-Mead",
                         options={"xatol": 1e-13, "fatol": 1e-16, "maxiter": 4000,
                                  "initial_simplex": np.array([[0.0, 0.0], [size, 0.0], [0.0, size]]) + x})
            x = r.x
            best = min(best, float(r.fun))
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--own-only", action="store_true")
    parser.add_argument("--influences", default="0.05,0.5")
    parser.add_argument("--indices", default="", help="only these configurations of the 2000 (comma-separated)")
    args = parser.parse_args()
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=bc.WORLD)
    checker = CollisionChecker(scene, batch_workers=1, limits=WorkLimits(max_clearance_rows=10 ** 8))
    world, robot = scene.world, scene.robot
    names = robot.active_joint_names
    Q = np.random.default_rng(SEED).uniform(robot.lower_limits, robot.upper_limits, size=(2000, len(names)))
    Q = Q[[int(x) for x in args.indices.split(",")]] if args.indices else Q[:args.n]
    index = [int(x) for x in args.indices.split(",")] if args.indices else list(range(len(Q)))
    n, A = Q.shape
    P = np.repeat(Q, 2 * A, axis=0).reshape(n, 2, A, A)
    for j in range(A):
        P[:, 0, j, j] += H
        P[:, 1, j, j] -= H
    P = np.clip(P.reshape(-1, A), robot.lower_limits, robot.upper_limits)
    T_q = world.shape_transforms(robot.link_transforms_batch(Q))
    T_p = None if args.own_only else world.shape_transforms(robot.link_transforms_batch(P))
    for influence in (float(x) for x in args.influences.split(",")):
        t0 = time.time()
        result = checker.clearance(names, Q, influence)
        moved = checker.clearance(names, P, influence + 0.1)
        at = {(int(c), int(a), int(b)): k for k, (c, (a, b)) in
              enumerate(zip(moved.configuration_index, moved.shape_pairs))}
        smooth = np.flatnonzero(result.smooth)
        misses = []
        n_apart = n_pen = 0
        for k in smooth.tolist():
            c = int(result.configuration_index[k])
            a, b = (int(x) for x in result.shape_pairs[k])
            d = float(result.distance[k])
            apart = d > 0.0
            n_apart += apart
            n_pen += not apart
            fd_own = np.zeros(A)
            fd_ind = np.zeros(A)
            for j in range(A):
                plus, minus = (2 * c) * A + j, (2 * c + 1) * A + j
                step = P[plus, j] - P[minus, j]
                kp, km = at[(plus, a, b)], at[(minus, a, b)]
                fd_own[j] = (moved.distance[kp] - moved.distance[km]) / step
                if args.own_only:
                    continue
                if apart:
                    dp, dm = coal_distance(world, T_p[plus], a, b), coal_distance(world, T_p[minus], a, b)
                else:
                    dp = -careful_depth(world, T_p[plus], a, b, [moved.normals[kp], result.normals[k]])
                    dm = -careful_depth(world, T_p[minus], a, b, [moved.normals[km], result.normals[k]])
                fd_ind[j] = (dp - dm) / step
            J = result.jacobian[k]
            err_own = float(np.max(np.abs(J - fd_own)))
            ok_own = err_own <= max(REL * np.max(np.abs(fd_own)), ABS)
            if args.own_only:
                err_ind, ok_ind = float("nan"), True
            else:
                err_ind = float(np.max(np.abs(J - fd_ind)))
                ok_ind = err_ind <= max(REL * np.max(np.abs(fd_ind)), ABS)
            if not (ok_own and ok_ind):
                misses.append((index[c], tuple(result.body_names[k]), (a, b), tuple(int(x) for x in result.subshape_ids[k]),
                               d, err_own / max(np.max(np.abs(fd_own)), 1e-300),
                               err_ind / max(np.max(np.abs(fd_ind)), 1e-300), ok_own, ok_ind))
        print(f"influence {influence} m: {len(result)} rows, {len(smooth)} smooth ({n_apart} apart, {n_pen} "
              f"penetrating), {len(misses)} misses ({time.time() - t0:.0f} s)", flush=True)
        for m in misses:
            print(f"  configuration {m[0]} {m[1]} shapes {m[2]} subshapes {m[3]} distance {m[4]:.6e} m: "
                  f"relative error own {m[5]:.2e} ({'ok' if m[7] else 'miss'}), independent {m[6]:.2e} "
                  f"({'ok' if m[8] else 'miss'})", flush=True)


if __name__ == "__main__":
    main()
