"""Planning on the Panda: OMPL's discrete edge checks, our certified bool check and VAMP where installed, one run.

Run:  python benchmarks/bench_planning.py [--pairs 30] [--repeats 1] [--seed 20261206] [--time-limit 10]
      [--reference-step 1e-4] [--invalid-edges 300]

Scene: the Panda of example-robot-data with its SRDF and ``config/panda_world.yaml`` (a
table and a post); the 7 arm joints (group ``arm``), RRTConnect, OMPL 2.0.1's Python
bindings. Pairs: from a seed, start/goal pairs of valid configurations whose straight line
collides (the certified check), half with the fingertips (``panda_hand_tcp``) under the
table at one end and over it at the other, half with the hand on either side of the post.
Per pair, each method plans and simplifies (``SimpleSetup.simplifySolution``), the methods'
order rotated from one pair to the next:

- ``ompl 0.01``: OMPL's own discrete motion validator at its default resolution (0.01 of
  the space's extent), states by ``CollisionChecker.check`` (our StateValidityChecker);
- ``ompl 0.001``: the same at 0.001;
- ``ours``: our CertifiedMotionValidator (``MotionValidity.is_motion_valid``, the certified
  bool check) and the same StateValidityChecker;
- ``vamp``, only where ``import vamp`` works (vamp-planner; its PyPI sdist fetches its C++
  dependencies while building, so it is installed by hand, see docs/performance.md): VAMP's
  own RRTConnect and simplifier on its sphere model of the Panda, settings from
  ``vamp.configure_robot_and_planner_with_kwargs("panda", "rrtc")``, one Halton sampler for
  the run. Its world is made from the scene's objects (a box as ``vamp.Cuboid``, a cylinder
  as ``vamp.Cylinder`` added as the capsule around it, which is how VAMP checks cylinders).
  Its Panda has the 7 arm joints and no finger joints (its fingers are spheres at one fixed
  opening); the reference check below keeps our fingers at the scene's current positions.
  Its times are wall and CPU around the Python calls (its own timer, which starts after the
  planner has allocated its buffers, is printed beside them).

Printed per method: solved pairs, median solve and solve + simplify time (wall, and this
process's CPU time, steadier when the machine is shared), median state
validity and motion validator calls per pair (not counted for VAMP: nan), and the final
paths that collide with our meshes, by a dense discrete check of every segment at
``--reference-step`` rad (the deepest first penetration among them, by the certified
trajectory check's contact intervals). For VAMP, then: its world, how many pairs have an
end its spheres call colliding, how many of its paths leave our joint limits, its own
timers' medians, and its times over ours. Then the time of an invalid edge: the edges our
validator refused while planning (up to ``--invalid-edges``), each timed with the bool
check, with our discrete check at OMPL's resolution (``check_motion(mode=DISCRETE)`` with
the step that gives OMPL's ``validSegmentCount`` samples) and with the discrete bool of the
same samples (``MotionValidity.is_motion_valid_discrete``), alternating. Without ``vamp``
the last line says VAMP was skipped.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import MotionMode
from my_collision_pkg.core.model.shapes import Box, Cylinder
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.planning import ompl as adapters

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PANDA_WORLD = os.path.join(REPO, "config", "panda_world.yaml")
PAIR_SEED = 20_261_206
TIP_LINK = "panda_hand_tcp"
TABLE_X_M, TABLE_Y_M = (0.40, 0.90), (-0.50, 0.50)     # panda_world.yaml's table footprint
TABLE_BOTTOM_Z_M, TABLE_TOP_Z_M = 0.13, 0.17
POST_ANGLE_RAD, POST_RADIUS_M = np.pi / 2, 0.55          # the post's axis from the base
CANDIDATES = 100_000                                      # random configurations the pairs are picked from
PAIR_ATTEMPTS = 5_000
METHODS = (("ompl 0.01", "ompl", 0.01), ("ompl 0.001", "ompl", 0.001), ("ours", "certified", 0.01))
VAMP_METHOD = ("vamp", "vamp", 0.0)                         # joins the rotation where vamp imports


def euler_xyz_rad(R: np.ndarray) -> tuple[float, float, float]:
    """Angles (rx, ry, rz) with ``R = Rz(rz) @ Ry(ry) @ Rx(rx)``, the order of VAMP's shape factories."""
    ry = float(np.arcsin(np.clip(-R[2, 0], -1.0, 1.0)))
    return float(np.arctan2(R[2, 1], R[2, 2])), ry, float(np.arctan2(R[1, 0], R[0, 0]))


class VampPlanner:
    """VAMP's RRTConnect for the Panda, in the world of ``checker``'s scene (the vamp-planner package).

    The world objects become VAMP shapes in the planning frame (VAMP's Panda stands at the origin
    of ``panda_link0``, the planning frame here): a box, a ``vamp.Cuboid`` (centre, Euler XYZ
    angles, half extents); a cylinder, a ``vamp.Cylinder`` (centre, Euler XYZ angles, radius,
    full length) added with ``add_capsule``: VAMP's environment checks a cylinder as the capsule
    around it (half-spheres of the radius on both ends). Other shapes are refused. VAMP's Panda
    is its own sphere model of the 7 arm joints; it has no finger joints (its hand and fingers are
    spheres at one fixed opening). One Halton sampler per planner, never reset, so a repeated
    pair gets another path.
    """

    def __init__(self, checker, arm) -> None:
        import vamp
        self.vamp = vamp
        names = tuple(vamp.panda.joint_names())
        if names != tuple(arm):
            raise ValueError(f"VAMP's Panda joints {names} are not the group's {tuple(arm)}")
        self.env = vamp.Environment()
        self.shapes = []
        for oid, obj in checker.scene.world.objects.items():
            if obj.attached:
                continue
            for shape in obj.shapes:
                T_frame_shape = obj.T_frame_object @ shape.T_object_shape
                centre_m = [float(v) for v in T_frame_shape[:3, 3]]
                angles_rad = euler_xyz_rad(T_frame_shape[:3, :3])
                if isinstance(shape.spec, Box):
                    half_m = [0.5 * float(v) for v in shape.spec.size_m]
                    self.env.add_cuboid(vamp.Cuboid(centre_m, angles_rad, half_m))
                    self.shapes.append(f"{oid}: cuboid")
                elif isinstance(shape.spec, Cylinder):
                    self.env.add_capsule(vamp.Cylinder(centre_m, angles_rad, float(shape.spec.radius_m),
                                                       float(shape.spec.length_m)))
                    self.shapes.append(f"{oid}: capsule")
                else:
                    raise ValueError(f"object '{oid}': no VAMP shape for {type(shape.spec).__name__}")
        self.robot, self.rrtc, self.plan_settings, self.simplify_settings = \
            vamp.configure_robot_and_planner_with_kwargs("panda", "rrtc")
        self.sampler = self.robot.halton()
        self.own_times_ns: list[tuple[int, int]] = []   # VAMP's own (plan, simplify) nanoseconds, solved plans

    def endpoints_valid(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Both ends free for VAMP's sphere model (its RRTConnect does not check them before planning)."""
        return bool(self.robot.validate(np.asarray(a, np.float32), self.env)
                    and self.robot.validate(np.asarray(b, np.float32), self.env))

    def plan(self, arm, a: np.ndarray, b: np.ndarray) -> adapters.PlanResult:
        """Plan a -> b and simplify (VAMP's default settings), timed like ``adapters.plan``."""
        start, goal = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
        t0, c0 = time.perf_counter(), time.process_time()
        result = self.rrtc(start, goal, self.env, self.plan_settings, self.sampler)
        t1, c1 = time.perf_counter(), time.process_time()
        solved = bool(result.solved)
        simple = self.robot.simplify(result.path, self.env, self.simplify_settings, self.sampler) if solved \
            else None
        t2, c2 = time.perf_counter(), time.process_time()
        if solved:
            self.own_times_ns.append((int(result.nanoseconds), int(simple.nanoseconds)))
        raw = np.array(result.path.numpy(), dtype=float) if solved else np.empty((0, len(arm)))
        path = np.array(simple.path.numpy(), dtype=float) if solved else np.empty((0, len(arm)))
        return adapters.PlanResult(solved=solved, joint_names=tuple(arm), path=path, raw_path=raw,
                                   solve_time_s=t1 - t0, simplify_time_s=t2 - t1, state_checks=-1,
                                   motion_checks=-1, planner="rrtc", validator="vamp",
                                   solve_cpu_s=c1 - c0, simplify_cpu_s=c2 - c1)


def tip_positions(checker, q: np.ndarray) -> np.ndarray:
    """Positions (N, 3) of ``TIP_LINK`` at configurations q (N, A)."""
    robot = checker.scene.robot
    T = robot.link_transforms_batch(q)
    return T[:, robot.link_index(TIP_LINK), :3, 3]


def pick_pairs(checker, arm, n: int, seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``n`` (kind, start, goal) pairs of the arm joints (half table, half post) whose line collides."""
    robot = checker.scene.robot
    rng = np.random.default_rng(seed)
    idx = [robot.active_index(j) for j in arm]
    lower, upper = robot.lower_limits[idx], robot.upper_limits[idx]
    q = np.tile(checker.scene.current_positions, (CANDIDATES, 1))
    q[:, idx] = rng.uniform(lower, upper, size=(len(q), len(idx)))
    valid, _ = checker.check_batch(robot.active_joint_names, q)
    q = q[valid]
    p = tip_positions(checker, q)
    on_table = (p[:, 0] > TABLE_X_M[0] + 0.05) & (p[:, 0] < TABLE_X_M[1] - 0.05) & (np.abs(p[:, 1]) < 0.4)
    under = q[on_table & (p[:, 2] < TABLE_BOTTOM_Z_M - 0.02) & (p[:, 2] > 0.0)]
    over = q[on_table & (p[:, 2] > TABLE_TOP_Z_M + 0.03) & (p[:, 2] < 0.45)]
    angle = np.arctan2(p[:, 1], p[:, 0]) - POST_ANGLE_RAD
    radius = np.hypot(p[:, 0], p[:, 1])
    near_post = (radius > POST_RADIUS_M - 0.15) & (radius < POST_RADIUS_M + 0.15) & (p[:, 2] > 0.1) & (p[:, 2] < 0.7)
    left = q[near_post & (angle > -0.6) & (angle < -0.15)]
    right = q[near_post & (angle > 0.15) & (angle < 0.6)]
    pairs = []
    for kind, a_set, b_set in (("table", under, over), ("post", left, right)):
        want = n // 2 if kind == "table" else n - n // 2
        found = 0
        for _ in range(PAIR_ATTEMPTS if len(a_set) and len(b_set) else 0):
            a, b = a_set[rng.integers(len(a_set))][idx], b_set[rng.integers(len(b_set))][idx]
            if checker.check_motion(arm, a, b, group_name="arm").valid:
                continue                                      # the line must collide
            pairs.append((kind, a, b))
            found += 1
            if found == want:
                break
        if found < want:
            print(f"only {found} {kind} pairs found (of {want})")
    return pairs


def dense_collisions(checker, arm, path: np.ndarray, step: float) -> tuple[int, float]:
    """Colliding segments of ``path`` by the discrete check at ``step`` rad, and, when one collides, the
    deepest penetration (m, <= 0) over the path: the deepest contact of every contact interval of
    the certified trajectory check through its waypoints (``check_trajectory``, refined there)."""
    bad = 0
    for a, b in zip(path[:-1], path[1:]):
        r = checker.check_motion(arm, a, b, group_name="arm", mode=MotionMode.DISCRETE, max_step=step)
        bad += not r.valid
    deepest = 0.0
    if bad:
        answer = checker.check_trajectory(arm, path, np.arange(len(path), dtype=float), group_name="arm",
                                          stop_at_first_contact=False)
        depths = [i.contact.distance for cl in answer.contact_lists for i in cl if i.contact is not None]
        deepest = min(depths + [0.0])
    return bad, deepest


def run_plan(checker, method, a, b, time_limit_s: float, invalid_sink: list, vamp_planner=None):
    name, validator, resolution = method
    if validator == "vamp":
        return vamp_planner.plan(adapters.group_joint_names(checker, "arm"), a, b)
    result = adapters.plan(checker, a, b, group_name="arm", validator=validator, resolution=resolution,
                           time_limit_s=time_limit_s, record_invalid_edges=invalid_sink if validator == "certified"
                           else None)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=1,
                        help="plans per pair and method (3 gives the issue's 90 paths from 30 pairs)")
    parser.add_argument("--seed", type=int, default=PAIR_SEED)
    parser.add_argument("--time-limit", type=float, default=10.0, help="planner time per pair, s")
    parser.add_argument("--reference-step", type=float, default=1e-4, help="dense check of the final paths, rad")
    parser.add_argument("--invalid-edges", type=int, default=300)
    args = parser.parse_args()
    if not adapters.OMPL_AVAILABLE:
        print(f"OMPL is not installed (pip install {adapters.OMPL_REQUIREMENT}): nothing to measure")
        return
    adapters.set_log_level("error")
    urdf, srdf = panda_paths()
    checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=PANDA_WORLD))
    arm = adapters.group_joint_names(checker, "arm")
    started = time.perf_counter()
    pairs = pick_pairs(checker, arm, args.pairs, args.seed)
    print(f"Panda + panda_world.yaml, group arm, RRTConnect, OMPL 2.0.1; {len(pairs)} pairs "
          f"({sum(k == 'table' for k, _, _ in pairs)} table, {sum(k == 'post' for k, _, _ in pairs)} post; "
          f"seed {args.seed}, picked in {time.perf_counter() - started:.1f} s); methods rotated per pair; "
          f"each planned {args.repeats}x per method; planner limit {args.time_limit:g} s; final paths checked "
          f"every {args.reference_step:g} rad")
    adapters.seed_random(args.seed)
    vamp_planner, vamp_skip = make_vamp_planner(checker, arm)
    methods = METHODS + ((VAMP_METHOD,) if vamp_planner is not None else ())
    rows = {m[0]: [] for m in methods}
    invalid_edges: list = []
    for k, (kind, a, b) in enumerate(pairs * args.repeats):
        for j in range(len(methods)):
            method = methods[(k + j) % len(methods)]
            result = run_plan(checker, method, a, b, args.time_limit, invalid_edges, vamp_planner)
            bad, deepest = dense_collisions(checker, arm, result.path, args.reference_step) if result.solved \
                else (0, 0.0)
            rows[method[0]].append((result, bad, deepest, kind))
    print(f"\n{'method':<12} {'solved':>7} {'solve ms':>9} {'solve+simp ms':>14} {'CPU ms':>13} {'states':>8} "
          f"{'motions':>8} {'colliding paths':>16} {'deepest mm':>11}")
    medians = {}
    for name, _, _ in methods:
        done = [r for r in rows[name] if r[0].solved]
        solve = [1e3 * r[0].solve_time_s for r in done]
        total = [1e3 * (r[0].solve_time_s + r[0].simplify_time_s) for r in done]
        cpu = [1e3 * (r[0].solve_cpu_s + r[0].simplify_cpu_s) for r in done]
        cpu_solve = [1e3 * r[0].solve_cpu_s for r in done]
        states = [r[0].state_checks for r in done]
        motions = [r[0].motion_checks for r in done]
        colliding = sum(1 for r in done if r[1] > 0)
        deepest = min([r[2] for r in done], default=0.0)
        medians[name] = (statistics.median(solve) if solve else float("nan"),
                         statistics.median(total) if total else float("nan"),
                         statistics.median(cpu_solve) if cpu else float("nan"),
                         statistics.median(cpu) if cpu else float("nan"))
        by_kind = ", ".join(f"{kind} {sum(1 for r in done if r[1] > 0 and r[3] == kind)}" for kind in ("table", "post"))
        print(f"{name:<12} {len(done):>3}/{len(rows[name]):<3} {ms(medians[name][0]):>9} {ms(medians[name][1]):>14} "
              f"{ms(medians[name][2]):>6}/{ms(medians[name][3]):<6} "
              f"{statistics.median(states) if states and states[0] >= 0 else float('nan'):>8.0f} "
              f"{statistics.median(motions) if motions and motions[0] >= 0 else float('nan'):>8.0f} "
              f"{colliding:>4} ({by_kind}) {deepest * 1e3:>8.2f}")
    base = medians["ompl 0.01"]
    ours = medians["ours"]
    print(f"\nours / ompl 0.01: solve {ours[0] / base[0]:.2f}x, solve + simplify {ours[1] / base[1]:.2f}x "
          f"(target <= 1.0x); ompl 0.001 / ompl 0.01: solve + simplify {medians['ompl 0.001'][1] / base[1]:.2f}x")
    print(f"the same in CPU time (time.process_time, medians): ours / ompl 0.01: solve {ours[2] / base[2]:.2f}x, "
          f"solve + simplify {ours[3] / base[3]:.2f}x; load average {os.getloadavg()[0]:.1f}")
    print("(motion calls of OMPL's own discrete validator are SpaceInformation.getCheckedMotionCount)")
    if vamp_planner is not None:
        vamp_notes(checker, arm, vamp_planner, pairs, rows["vamp"], medians)
    invalid_edge_times(checker, arm, invalid_edges[:args.invalid_edges])
    if vamp_planner is None:
        print(f"\nVAMP: skipped ({vamp_skip})")


def ms(value: float) -> str:
    """A time in ms with three significant figures below 10 ms (VAMP's are tens of microseconds)."""
    return f"{value:.1f}" if not value < 10.0 else f"{value:.3g}"


def make_vamp_planner(checker, arm):
    """(VampPlanner, "") where ``vamp`` imports, else (None, why it was skipped)."""
    try:
        import vamp  # noqa: F401
    except ImportError:
        return None, "vamp-planner is not installed; its PyPI sdist downloads its dependencies at build time"
    try:
        return VampPlanner(checker, arm), ""
    except ValueError as exc:                      # a world object or a joint VAMP has no counterpart for
        return None, f"vamp imports, but {exc}"


def vamp_notes(checker, arm, planner: VampPlanner, pairs, rows, medians) -> None:
    """What differs for VAMP: its world, its robot model, its bounds and its ends."""
    import vamp
    robot = checker.scene.robot
    idx = [robot.active_index(j) for j in arm]
    lower, upper = robot.lower_limits[idx], robot.upper_limits[idx]
    done = [r[0] for r in rows if r[0].solved]
    outside = sum(1 for r in done if np.any(r.path < lower - 1e-9) or np.any(r.path > upper + 1e-9))
    ends_invalid = sum(1 for _, a, b in pairs if not planner.endpoints_valid(a, b))
    fingers = {name: float(value) for name, value in zip(robot.active_joint_names, checker.scene.current_positions)
               if name not in arm}
    version = getattr(vamp, "__version__", None)
    if version is None:
        from importlib import metadata
        version = metadata.version("vamp-planner")
    print(f"\nvamp: vamp-planner {version}, panda + rrtc (configure_robot_and_planner_with_kwargs defaults) and "
          f"simplify; world {', '.join(planner.shapes)} (VAMP checks a cylinder as its capsule); VAMP's own "
          f"sphere model of the 7 arm joints, no finger joints (the reference check puts the fingers at "
          f"{', '.join(f'{n} {v:g}' for n, v in fingers.items()) or 'none'}); its times (wall and CPU) taken "
          f"around the Python calls")
    print(f"vamp: {ends_invalid} of {len(pairs)} pairs have an end that VAMP's spheres find colliding (its RRTConnect "
          f"does not check the ends before planning: such a pair can still be solved); "
          f"{outside} of {len(done)} final paths leave our joint limits (VAMP's Panda bounds are its own)")
    if planner.own_times_ns:
        own = np.array(planner.own_times_ns, dtype=float) * 1e-3
        print(f"vamp: its own timers (PlanningResult.nanoseconds), medians: plan {np.median(own[:, 0]):.1f} us, "
              f"plan + simplify {np.median(own.sum(axis=1)):.1f} us")
    if "ours" in medians:
        print(f"vamp / ours: solve {medians['vamp'][0] / medians['ours'][0]:.4f}x, solve + simplify "
              f"{medians['vamp'][1] / medians['ours'][1]:.4f}x")


def invalid_edge_times(checker, arm, edges) -> None:
    """Per refused edge, the bool check against our discrete checks at OMPL's resolution, alternating."""
    if not edges:
        print("\nno invalid edges recorded")
        return
    space, _ = adapters.joint_state_space(checker, "arm")
    segment = adapters.OMPL_DEFAULT_RESOLUTION * space.getMaximumExtent()
    validity = checker.motion_validity(arm, group_name="arm")
    times = {"bool (certified)": [], "check_motion DISCRETE": [], "discrete bool": []}
    agree = 0
    for k, (a, b) in enumerate(edges):
        n = max(1, int(np.ceil(np.linalg.norm(b - a) / segment)))
        step = float(np.max(np.abs(b - a))) / n
        calls = [("bool (certified)", lambda: validity.is_motion_valid(a, b)),
                 ("check_motion DISCRETE", lambda: checker.check_motion(arm, a, b, group_name="arm",
                                                                        mode=MotionMode.DISCRETE,
                                                                        max_step=step).valid),
                 ("discrete bool", lambda: validity.is_motion_valid_discrete(a, b, segments=n))]
        for j in range(len(calls)):
            name, call = calls[(k + j) % len(calls)]
            t0 = time.perf_counter()
            verdict = call()
            times[name].append(time.perf_counter() - t0)
            if name == "bool (certified)":
                agree += not verdict
    base = statistics.median(times["check_motion DISCRETE"])
    print(f"\ninvalid edges (refused by ours while planning): {len(edges)}, the bool refuses {agree} "
          f"(OMPL's resolution: {segment:.4f} rad segments)")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<22} median {1e6 * med:8.1f} us, mean {1e6 * statistics.fmean(values):8.1f} us, "
              f"{med / base:.2f}x check_motion DISCRETE")


if __name__ == "__main__":
    main()
