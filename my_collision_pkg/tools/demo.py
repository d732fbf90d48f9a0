"""``make demo``: the collision_validator on the Franka Panda, called over ROS 2.

Starts the installed ``collision_validator`` executable on the Panda from
``example-robot-data`` with the default world (``config/panda_world.yaml``: a
table and a post), calls its services for a free, a self-colliding and an
environment-colliding configuration, prints the verdicts and explanations,
renders the two collisions to PNG files, runs one batch request, asks for the
clearance of a configuration just above the table (every pair within 0.1 m with its
distance and gradient, then one step along the nearest pair's gradient), then checks
motions: the stretched-out arm swings joint 1 through a 1 mm plate that a
MoveIt-like discrete check (0.05 rad steps) jumps over and the certified check
catches (its first-contact state drawn to ``motion_first_contact.png``), and a
trajectory through the plate and down into the table, with every body pair's
contact intervals. Last, where OMPL's Python bindings are installed, it plans a path
for the arm around the post (``my_collision_pkg.planning.ompl``, RRTConnect with the
certified bool edge check, simplified), checks every segment with ``~/check_motion``
(CERTIFIED and CERTIFIED_BOOL), and beside it counts how many of a few paths planned
with OMPL's default discrete validator collide (the same certified check); without
OMPL it says so and goes on. Exit status 0 when every answer is the expected one.

Failures end the demo with exit status 1 and one line saying what failed, never a
traceback: a service that does not answer in time (which one, how long), the
validator exiting (its exit code and the last lines of its output), an unexpected
answer. The validator it started is stopped in every case (SIGINT, then a wait).
"""
from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
from ament_index_python.packages import get_package_prefix, get_package_share_directory
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose
from shape_msgs.msg import SolidPrimitive
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from my_collision_pkg.ros.client import ServerExited, ServiceTimeout, ValidatorClient
from my_collision_pkg.ros.conversions import clearance_from_response
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.scene.loading import panda_paths
from my_collision_pkg.msg import CollisionObject
from my_collision_pkg.srv import CheckMotion

ARM = [f"panda_joint{i}" for i in range(1, 8)]
CASES = (
    # (title, configuration of panda_joint1..7, expected valid)
    ("free: the SRDF's default pose", [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785], True),
    ("self-collision: elbow folded, hand against the upper arm", [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785], False),
    ("environment collision: reaching down through the table", [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785], False),
)
BATCH_SIZE = 1000
BATCH_SEED = 7
# A first start after a build may compile the kernels (about a minute on 2 cores, longer on a
# loaded machine); a warm start takes seconds. The wait ends at once if the validator exits.
STARTUP_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 30.0
STARTUP_PROGRESS_S = 15.0                # how often the wait for the services says it still waits
STOP_TIMEOUT_S = 10.0                    # SIGINT, then this long, then SIGTERM, then as long, then SIGKILL
OUTPUT_LINES_KEPT = 20                   # the validator's last output lines shown when it fails
CONTACTS_SHOWN = 5
SERVICES_WAITED_FOR = ("check", "batch", "explain", "apply", "motion", "trajectory", "clearance")

# ----- clearance near the table ------------------------------------------------------------------
# The hand lowered towards the table until the fingertips are about 2 cm above it (valid).
ABOVE_TABLE = [0.0, 0.78, 0.0, -1.2, 0.0, 1.571, 0.785]
CLEARANCE_INFLUENCE_M = 0.1
CLEARANCE_ROWS_SHOWN = 5
GRADIENT_STEP_M = 0.005                  # the nearest pair's distance raised this much by one gradient step
GRADIENT_AGREEMENT = 0.2                 # the step's actual rise within this fraction of the predicted one

# ----- the motion through a thin plate ---------------------------------------------------------
# Arm stretched out over the table, hand pointing down, fingers one behind the other radially
# (joint 7 at -pi/4): the fingertips are 0.77-0.82 m from the base axis, each ~2.2 cm wide along
# the arc, and joint 1 alone moves. Samples 0.05 rad apart put a finger ~4 cm further along the arc.
STRETCHED = [0.0, 1.3, 0.0, -0.2, 0.0, 1.5, -0.785]
SWING_RAD = (-0.5, 0.5)                  # joint 1 from, to: 20 discrete steps of 0.05 rad
# OMPL's longest_valid_segment_fraction (MoveIt's default) times the state space's maximum extent
# (for the Panda's 7 revolute joints the norm of the joint ranges); the issue uses 0.05 rad per joint.
OMPL_SEGMENT_FRACTION = 0.005
MOVEIT_LIKE_STEP_RAD = 0.05
REFERENCE_STEP_RAD = 1e-4                # a fine discrete check, the reference for cc_time
CC_TIME_AGREEMENT = 1e-3                 # certified cc_time vs the reference's first colliding sample
TABLE_TOP_Z_M = 0.17                     # config/panda_world.yaml: the table's top face
PLATE_ID = "thin_plate"
PLATE_THICKNESS_M = 0.001                # along the motion (tangential)
PLATE_WIDTH_M = 0.06                     # radial
PLATE_TOP_Z_M = 0.245                    # 1.7 cm above the fingertips' lowest point, 3 cm below the hand
PLATE_RADIUS_M = 0.792                   # plate centre from the base axis: the fingertips' mid radius
PLATE_ANGLE_RAD = 0.025                  # halfway between the discrete samples at 0 and 0.05 rad
LOWERED_JOINT2_RAD = 0.08                # the trajectory's dip into the table (fingertips ~7 mm deep)
TRAJECTORY_TIMES_S = (0.0, 2.0, 3.0, 4.0)
# planning around the post (config/panda_world.yaml's post at 90 degrees, 0.55 m out): the hand
# beside it at joint 1 = 1.2 and 1.95 rad; the straight line between the two runs through it
BESIDE_POST_A = [1.2, 0.6, 0.0, -1.6, 0.0, 2.2, 0.785]
BESIDE_POST_B = [1.95, 0.6, 0.0, -1.6, 0.0, 2.2, 0.785]
PLAN_SEED = 1
PLAN_TIME_LIMIT_S = 10.0
DISCRETE_PLANS = 5                       # paths planned with OMPL's default discrete validator, side by side
MOTION_VIEW = (25.0, -70.0)              # (elevation, azimuth), degrees: the plate's face, the finger before it
MOTION_ZOOM_HALF_SIZE_M = 0.12           # a close-up: the hand, the plate and the table top around the contact


def arm_limits_rad() -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` (7,) of the ARM joints, radians, as the Panda's URDF gives them."""
    robot = RobotModel.from_urdf_file(panda_paths()[0])
    rows = [robot.active_index(name) for name in ARM]
    return robot.lower_limits[rows], robot.upper_limits[rows]


class Validator:
    """The collision_validator process the demo starts; its output is passed through and its last lines kept."""

    def __init__(self, world_path: str) -> None:
        urdf, srdf = panda_paths()
        exe = os.path.join(get_package_prefix("my_collision_pkg"), "lib", "my_collision_pkg", "collision_validator")
        args = [exe, "--ros-args", "-p", f"urdf_path:={urdf}", "-p", f"srdf_path:={srdf}",
                "-p", f"scene_path:={world_path}", "--log-level", "warn"]
        self.last_lines: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES_KEPT)
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        errors="replace", bufsize=1)
        self._reader = threading.Thread(target=self._pass_output, name="validator output", daemon=True)
        self._reader.start()

    def _pass_output(self) -> None:
        for line in self.process.stdout:
            self.last_lines.append(line.rstrip("\n"))
            print(f"[collision_validator] {line}", end="", file=sys.stderr, flush=True)

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_report(self) -> str:
        """What the validator's exit says: its code and its last output lines (the process has ended)."""
        self._reader.join(timeout=2.0)
        code = self.process.returncode
        lines = [line for line in self.last_lines if line.strip()]
        last = f"; its last output: {' | '.join(lines[-5:])}" if lines else "; it printed nothing"
        return f"collision_validator exited with code {code}{last}"

    def stop(self) -> int | None:
        """SIGINT, wait; SIGTERM, wait; SIGKILL. Returns the exit code."""
        for send in (lambda: self.process.send_signal(signal.SIGINT), self.process.terminate, self.process.kill):
            if self.process.poll() is not None:
                break
            send()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"demo: collision_validator did not stop within {STOP_TIMEOUT_S:g} s", file=sys.stderr)
        self._reader.join(timeout=2.0)
        return self.process.returncode


def _wait_for_validator(client: ValidatorClient, validator: Validator, timeout_s: float) -> float:
    """Wait until every service the demo calls is advertised; prints what it waits for. Returns the seconds waited."""
    names = [client.service_name(which) for which in SERVICES_WAITED_FOR]
    print(f"waiting up to {timeout_s:g} s for the validator's services ({', '.join(names)}); the first start after "
          "a build may take a while", flush=True)
    started = time.monotonic()
    deadline = started + timeout_s
    for which, name in zip(SERVICES_WAITED_FOR, names):
        while True:
            step_s = min(STARTUP_PROGRESS_S, deadline - time.monotonic())
            try:
                client.wait_for_services(max(step_s, 0.0), services=(which,))
                break
            except ServiceTimeout:
                if time.monotonic() >= deadline:
                    raise ServiceTimeout(f"service '{name}' not available after {timeout_s:g} s", name,
                                         timeout_s) from None
                print(f"    still waiting for '{name}' ({time.monotonic() - started:.0f} s)", flush=True)
    return time.monotonic() - started


class _TimedClient:
    """The client, with the round trip of every check_motion call kept: a compile inside a call shows in the first."""

    def __init__(self, client: ValidatorClient) -> None:
        self._client = client
        self.motion_round_trips: list[tuple[str, float]] = []     # (mode, seconds)

    def __getattr__(self, name):
        return getattr(self._client, name)

    @property
    def untimed(self) -> ValidatorClient:
        """The client itself (calls not kept in the round trips)."""
        return self._client

    def check_motion(self, *args, **kwargs):
        started = time.perf_counter()
        answer = self._client.check_motion(*args, **kwargs)
        mode = "certified" if kwargs.get("mode", CheckMotion.Request.CERTIFIED) == CheckMotion.Request.CERTIFIED \
            else f"discrete {kwargs.get('max_step', 0.0):g} rad"
        self.motion_round_trips.append((mode, time.perf_counter() - started))
        return answer

    def print_round_trips(self) -> None:
        trips = self.motion_round_trips
        if not trips:
            return
        print("check_motion round trips, in call order: "
              + ", ".join(f"{mode} {seconds * 1e3:.1f} ms" for mode, seconds in trips))
        certified = [seconds for mode, seconds in trips if mode == "certified"]
        if len(trips) >= 2:
            print(f"    first / second check_motion: {trips[0][1] * 1e3:.1f} / {trips[1][1] * 1e3:.1f} ms")
        if len(certified) >= 2:
            print(f"    first / second certified check_motion (the same request): {certified[0] * 1e3:.1f} / "
                  f"{certified[1] * 1e3:.1f} ms = {certified[0] / certified[1]:.2f}x")


def _fmt(point) -> str:
    return f"({point.x:+.3f}, {point.y:+.3f}, {point.z:+.3f})"


def _print_explanation(response) -> None:
    print(f"    explain: {response.message}")
    if response.colliding_links:
        print(f"    colliding bodies: {', '.join(response.colliding_links)}")
    for c in list(response.contacts)[:CONTACTS_SHOWN]:
        kind = "self" if c.type == c.SELF else "environment"
        print(f"      {c.link_names[0]:>18} / {c.link_names[1]:<18} {kind:<11} depth {c.penetration_depth * 1e3:6.2f} mm"
              f"  at {_fmt(c.position)} m  normal ({c.normal.x:+.2f}, {c.normal.y:+.2f}, {c.normal.z:+.2f})")
    if len(response.contacts) > CONTACTS_SHOWN:
        print(f"      ... {len(response.contacts) - CONTACTS_SHOWN} more contacts")
    for s in response.surfaces:
        force = np.linalg.norm([s.force.x, s.force.y, s.force.z])
        print(f"      surface {s.body_names[0]} / {s.body_names[1]}: area {s.area * 1e4:.2f} cm^2, "
              f"{len(s.triangles) // 3} triangles, centroid {_fmt(s.centroid)} m, force {force:.2f} N")


def _clearance_near_the_table(client: ValidatorClient, failures: list[str]) -> None:
    """~/compute_clearance of one configuration above the table, then one step along its nearest pair's gradient."""
    print(f"[clearance] the fingertips just above the table, every pair within {CLEARANCE_INFLUENCE_M:g} m\n"
          f"    joints: {ABOVE_TABLE}")
    answer = clearance_from_response(client.compute_clearance(ARM, ABOVE_TABLE, CLEARANCE_INFLUENCE_M))
    print(f"    {answer.message}")
    if not answer.ok or not len(answer):
        failures.append(f"clearance near the table: {answer.message}")
        print()
        return
    order = np.argsort(answer.distance)
    for r in order[:CLEARANCE_ROWS_SHOWN].tolist():
        print(f"      {answer.body_names[r, 0]:>18} / {answer.body_names[r, 1]:<10} distance "
              f"{answer.distance[r] * 1e3:+7.2f} mm, |gradient| {np.linalg.norm(answer.jacobian[r]):.3f} m/rad"
              f"{'' if answer.smooth[r] else ' (not smooth)'}")
    if len(answer) > CLEARANCE_ROWS_SHOWN:
        print(f"      ... {len(answer) - CLEARANCE_ROWS_SHOWN} more rows")
    nearest = int(order[0])
    gradient = answer.jacobian[nearest]
    step = gradient * (GRADIENT_STEP_M / float(gradient @ gradient))       # first order: d rises GRADIENT_STEP_M
    moved = [float(v) for v in np.asarray(ABOVE_TABLE) + step]
    after = clearance_from_response(client.compute_clearance(ARM, moved, CLEARANCE_INFLUENCE_M))
    same = [r for r in range(len(after)) if tuple(after.body_names[r]) == tuple(answer.body_names[nearest])
            and tuple(after.shape_ids[r]) == tuple(answer.shape_ids[nearest])]
    if not same:
        failures.append("clearance: the nearest pair left the influence distance after a 5 mm gradient step")
        print()
        return
    rise = float(after.distance[same[0]] - answer.distance[nearest])
    print(f"    one step of {np.linalg.norm(step):.4f} rad along the nearest pair's gradient: predicted "
          f"{GRADIENT_STEP_M * 1e3:+.2f} mm, measured {rise * 1e3:+.2f} mm")
    if "table" not in answer.body_names[nearest] or not answer.distance[nearest] > 0.0:
        failures.append(f"clearance: the nearest pair is {tuple(answer.body_names[nearest])} at "
                        f"{answer.distance[nearest]:+.4f} m, not a hand part just above the table")
    if abs(rise - GRADIENT_STEP_M) > GRADIENT_AGREEMENT * GRADIENT_STEP_M:
        failures.append(f"clearance: a gradient step raised the distance {rise * 1e3:.2f} mm, predicted "
                        f"{GRADIENT_STEP_M * 1e3:.2f} mm")
    print()


def _plate_object() -> CollisionObject:
    """The 1 mm plate standing on the table, its thin side across joint 1's swing."""
    height = PLATE_TOP_Z_M - TABLE_TOP_Z_M
    plate = CollisionObject(id=PLATE_ID, operation=CollisionObject.ADD)
    plate.header.frame_id = "panda_link0"
    plate.pose.position.x = PLATE_RADIUS_M * float(np.cos(PLATE_ANGLE_RAD))
    plate.pose.position.y = PLATE_RADIUS_M * float(np.sin(PLATE_ANGLE_RAD))
    plate.pose.position.z = TABLE_TOP_Z_M + 0.5 * height
    plate.pose.orientation.z = float(np.sin(0.5 * PLATE_ANGLE_RAD))     # yaw about the base axis
    plate.pose.orientation.w = float(np.cos(0.5 * PLATE_ANGLE_RAD))
    plate.primitives = [SolidPrimitive(type=SolidPrimitive.BOX,
                                       dimensions=[PLATE_WIDTH_M, PLATE_THICKNESS_M, height])]
    plate.primitive_poses = [Pose()]
    return plate


def _swing_ends() -> tuple[list[float], list[float]]:
    start, goal = list(STRETCHED), list(STRETCHED)
    start[0], goal[0] = SWING_RAD
    return start, goal


def _motion_through_plate(client: ValidatorClient, failures: list[str]):
    """Discrete (MoveIt-like) vs certified check of joint 1's swing through the plate; returns the certified answer."""
    start, goal = _swing_ends()
    lower_rad, upper_rad = arm_limits_rad()
    extent_rad = float(np.linalg.norm(upper_rad - lower_rad))
    print(f"[motion through a thin plate] joint 1 from {SWING_RAD[0]:+.2f} to {SWING_RAD[1]:+.2f} rad, arm stretched "
          f"out {np.round(STRETCHED[1:], 3).tolist()}; plate {PLATE_THICKNESS_M * 1e3:.0f} mm thick, "
          f"{PLATE_WIDTH_M * 1e2:.0f} cm wide, on the table up to z={PLATE_TOP_Z_M} m, at {PLATE_ANGLE_RAD} rad "
          f"(halfway between two samples)")
    ends = [client.check(ARM, q) for q in (start, goal)]
    print(f"    start valid={ends[0].valid}, goal valid={ends[1].valid}")
    if not (ends[0].valid and ends[1].valid):
        failures.append("motion: start or goal refused")
    print(f"    MoveIt-like step: OMPL's {OMPL_SEGMENT_FRACTION} x the Panda's joint-space extent {extent_rad:.1f} rad "
          f"= {OMPL_SEGMENT_FRACTION * extent_rad:.3f} rad; the issue's 'MoveIt-like' {MOVEIT_LIKE_STEP_RAD} rad is used")
    discrete = client.check_motion(ARM, start, goal, mode=CheckMotion.Request.DISCRETE, max_step=MOVEIT_LIKE_STEP_RAD)
    print(f"    discrete, max_step {MOVEIT_LIKE_STEP_RAD} rad: valid={discrete.valid} ({discrete.message})")
    certified = client.check_motion(ARM, start, goal, mode=CheckMotion.Request.CERTIFIED)
    again = client.check_motion(ARM, start, goal, mode=CheckMotion.Request.CERTIFIED)   # the round trip once warm
    if (again.valid, again.cc_time) != (certified.valid, certified.cc_time):
        failures.append(f"motion: the same certified check answered twice differently ({certified.cc_time} and "
                        f"{again.cc_time})")
    joint1 = SWING_RAD[0] + certified.cc_time * (SWING_RAD[1] - SWING_RAD[0])
    print(f"    certified: valid={certified.valid}, cc_time={certified.cc_time:.5f} (joint 1 at {joint1:+.5f} rad)")
    print(f"      {certified.message}")
    kinds = {0: "CC_NONE", 1: "TIME0", 2: "TIME1", 3: "BETWEEN"}
    for c in list(certified.contacts)[:CONTACTS_SHOWN]:
        print(f"      {c.link_names[0]:>18} / {c.link_names[1]:<12} distance {c.distance * 1e3:+.3f} mm at "
              f"{_fmt(c.position)} m, cc_time {np.round(list(c.cc_time), 5).tolist()}, "
              f"cc_type {[kinds.get(int(k), k) for k in c.cc_type]}")
    reference = client.check_motion(ARM, start, goal, mode=CheckMotion.Request.DISCRETE, max_step=REFERENCE_STEP_RAD)
    print(f"    reference, discrete at {REFERENCE_STEP_RAD:g} rad: valid={reference.valid}, first colliding sample "
          f"t={reference.cc_time:.5f}; certified - reference = {certified.cc_time - reference.cc_time:+.5f}")
    if not discrete.valid:
        failures.append(f"motion: the discrete check at {MOVEIT_LIKE_STEP_RAD} rad saw the plate ({discrete.message})")
    if certified.valid or reference.valid:
        failures.append(f"motion: expected a contact, certified valid={certified.valid}, reference valid={reference.valid}")
    elif not (0.0 <= reference.cc_time - certified.cc_time <= CC_TIME_AGREEMENT):
        failures.append(f"motion: certified cc_time {certified.cc_time} not within {CC_TIME_AGREEMENT} before the "
                        f"reference's {reference.cc_time}")
    print()
    return certified


def _trajectory_through_plate(client: ValidatorClient, failures: list[str]) -> None:
    """A trajectory: the swing through the plate (2 s), down into the table (1 s) and back up (1 s)."""
    start, goal = _swing_ends()
    lowered = list(goal)
    lowered[1] += LOWERED_JOINT2_RAD
    trajectory = JointTrajectory(joint_names=list(ARM))
    for q, t in zip((start, goal, lowered, goal), TRAJECTORY_TIMES_S):
        seconds = int(t)
        trajectory.points.append(JointTrajectoryPoint(
            positions=[float(v) for v in q],
            time_from_start=Duration(sec=seconds, nanosec=int(round((t - seconds) * 1e9)))))
    print(f"[trajectory] waypoints at {list(TRAJECTORY_TIMES_S)} s: the swing through the plate, then joint 2 "
          f"+{LOWERED_JOINT2_RAD} rad down into the table and back up; every contact interval (certified)")
    answer = client.check_trajectory(trajectory, stop_at_first_contact=False)
    print(f"    valid={answer.valid}, first contact at {answer.first_invalid_time:.4f} s in segment "
          f"{answer.first_invalid_segment}\n      {answer.message}")
    for contact_list in answer.contact_lists:
        for interval in contact_list.intervals:
            print(f"      {contact_list.link_names[0]:>18} / {contact_list.link_names[1]:<12} "
                  f"[{interval.activation_time:.4f}, {interval.deactivation_time:.4f}) s, deepest "
                  f"{interval.contact.distance * 1e3:+.2f} mm")
    pairs = {tuple(cl.link_names) for cl in answer.contact_lists if len(cl.intervals)}
    for obstacle, (t0, t1) in ((PLATE_ID, TRAJECTORY_TIMES_S[:2]), ("table", TRAJECTORY_TIMES_S[1::2])):
        inside = [i for cl in answer.contact_lists if obstacle in cl.link_names for i in cl.intervals
                  if t0 <= i.activation_time < i.deactivation_time <= t1]
        if not inside:
            failures.append(f"trajectory: no contact interval with '{obstacle}' between {t0} and {t1} s")
    if answer.valid or not pairs:
        failures.append(f"trajectory: expected contact intervals, got valid={answer.valid}, {len(pairs)} pairs")
    print()


def _planned_path_around_the_post(client: ValidatorClient, plate: CollisionObject, world_path: str,
                                  failures: list[str]) -> None:
    """OMPL plans the arm around the post in this process (the node's world: the file and the plate);
    the node checks every segment; then how many paths planned with OMPL's default discrete
    validator collide, by the same check."""
    from my_collision_pkg.planning import ompl as adapters
    print("[planning around the post] OMPL RRTConnect for the arm (group 'arm'), hand from one side of the post "
          "to the other")
    if not adapters.OMPL_AVAILABLE:
        print(f"    skipped: OMPL's Python bindings are not installed (pip install {adapters.OMPL_REQUIREMENT}); "
              "the rest of the package works without them\n")
        return
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene
    from my_collision_pkg.ros.conversions import collision_object_to_updates
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world_path)
    scene.apply(collision_object_to_updates(plate, scene.robot))       # the node's world: file + plate
    checker = CollisionChecker(scene)
    adapters.set_log_level("error")
    adapters.seed_random(PLAN_SEED)
    line = client.check_motion(ARM, BESIDE_POST_A, BESIDE_POST_B)
    print(f"    the straight line: valid={line.valid} ({line.message})")
    ours = adapters.plan(checker, BESIDE_POST_A, BESIDE_POST_B, time_limit_s=PLAN_TIME_LIMIT_S)
    print("    " + ours.format().replace("\n", "\n    "))
    if not ours.solved:
        failures.append("planning: no path around the post with the certified validator")
        print()
        return
    print(f"    {ours.state_checks} state checks, {ours.motion_checks} certified edge checks (the bool check)")
    segments = list(zip(ours.path[:-1], ours.path[1:]))
    certified = [client.check_motion(ARM, a, b) for a, b in segments]
    bools = [client.check_motion(ARM, a, b, mode=CheckMotion.Request.CERTIFIED_BOOL) for a, b in segments]
    clearance = min(r.min_clearance for r in certified)
    print(f"    ~/check_motion CERTIFIED: {sum(r.valid for r in certified)} of {len(segments)} segments valid, "
          f"smallest certified clearance {clearance * 1e3:.1f} mm; CERTIFIED_BOOL: "
          f"{sum(r.valid for r in bools)} of {len(segments)} valid")
    if not all(r.valid for r in certified) or not all(r.valid for r in bools):
        failures.append("planning: a segment of the certified plan is refused by ~/check_motion")
    colliding, solved, spent = 0, 0, []
    for _ in range(DISCRETE_PLANS):
        other = adapters.plan(checker, BESIDE_POST_A, BESIDE_POST_B, validator="ompl", time_limit_s=PLAN_TIME_LIMIT_S)
        if not other.solved:
            continue
        solved += 1
        spent.append(other.solve_time_s + other.simplify_time_s)
        colliding += any(not client.check_motion(ARM, a, b).valid for a, b in zip(other.path[:-1], other.path[1:]))
    print(f"    side by side, OMPL's default discrete validator (states every 0.01 of the extent): {colliding} of "
          f"{solved} planned paths collide by the same certified check (median solve + simplify "
          f"{1e3 * float(np.median(spent)) if spent else float('nan'):.0f} ms; ours "
          f"{1e3 * (ours.solve_time_s + ours.simplify_time_s):.0f} ms)\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="demo_output", help="folder for the PNG pictures")
    parser.add_argument("--world", default=os.path.join(get_package_share_directory("my_collision_pkg"), "config",
                                                        "panda_world.yaml"), help="world YAML file")
    parser.add_argument("--startup-timeout", type=float, default=STARTUP_TIMEOUT_S, metavar="S",
                        help=f"seconds to wait for the validator's services (default {STARTUP_TIMEOUT_S:g})")
    parser.add_argument("--call-timeout", type=float, default=CALL_TIMEOUT_S, metavar="S",
                        help=f"seconds to wait for each answer (default {CALL_TIMEOUT_S:g})")
    parser.add_argument("--web", action="store_true", help="at the end, serve the environment collision in the browser "
                        "view (my_collision_pkg.viz.web) and keep serving until Ctrl-C")
    parser.add_argument("--web-port", type=int, default=8080, help="port of the browser view (default 8080)")
    args = parser.parse_args(argv)
    demo_started = time.monotonic()
    print(f"collision_validator on the Franka Panda (example-robot-data), world {args.world}", flush=True)
    validator = Validator(args.world)
    failures: list[str] = []
    try:
        with ValidatorClient(node_name="demo_client", timeout_s=args.call_timeout,
                             server_alive=validator.alive) as client:
            waited_s = _wait_for_validator(client, validator, args.startup_timeout)
            print(f"services ready after {waited_s:.1f} s\n")
            timed = _TimedClient(client)
            code = _run(timed, args, failures)
            timed.print_round_trips()
    except ServerExited:
        validator.stop()
        print(f"demo: {validator.exit_report()}", file=sys.stderr)
        return 1
    except ServiceTimeout as exc:
        print(f"demo: {exc}", file=sys.stderr)
        validator.stop()
        return 1
    except KeyboardInterrupt:
        print("demo: interrupted", file=sys.stderr)
        validator.stop()
        return 130
    stopped = validator.stop()
    if code:
        return code
    if failures:
        for failure in failures:
            print(f"demo: unexpected answer: {failure}", file=sys.stderr)
        return 1
    if stopped not in (0, -signal.SIGINT):
        print(f"demo: collision_validator exited with code {stopped} when stopped", file=sys.stderr)
        return 1
    print(f"demo: done in {time.monotonic() - demo_started:.1f} s, every answer as expected")
    return _browser_view(args)


def _browser_view(args) -> int:
    """The URL of the browser view of the environment collision; served until Ctrl-C with ``--web``."""
    url = f"http://127.0.0.1:{args.web_port}"
    if not args.web:
        print(f"browser view: {url} with `make demo WEB=1` (or `make view`), see docs/web_view.md")
        return 0
    from my_collision_pkg.viz.web import main as serve_web_view
    return serve_web_view(["--scene", args.world, "--port", str(args.web_port)])


def _run(client, args, failures: list[str]) -> int:
    """The demo's calls; appends unexpected answers to ``failures``. Returns 1 if it cannot go on, else 0."""
    pictures = []
    for title, q, expected in CASES:
        verdict = client.check(ARM, q)
        print(f"[{title}]\n    joints: {np.round(q, 3).tolist()}")
        print(f"    check_validity: valid={verdict.valid} ({verdict.message})")
        explanation = client.explain(ARM, q, compute_surfaces=True)
        _print_explanation(explanation)
        if verdict.valid != expected or explanation.valid != expected:
            failures.append(f"{title}: expected valid={expected}, got {verdict.valid}/{explanation.valid}")
        if not explanation.valid:
            pictures.append((title, explanation))
        print()
    rng = np.random.default_rng(BATCH_SEED)
    batch = rng.uniform(*arm_limits_rad(), size=(BATCH_SIZE, len(ARM)))
    started = time.perf_counter()
    answer = client.check_batch(ARM, batch)
    elapsed = time.perf_counter() - started
    print(f"[batch] {BATCH_SIZE} random configurations in one request: {sum(answer.valid)} valid, "
          f"{elapsed * 1e3:.1f} ms round trip ({BATCH_SIZE / elapsed:,.0f} configurations/s)")
    print(f"    {answer.message}\n")
    _clearance_near_the_table(client, failures)
    plate = _plate_object()
    applied = client.apply([plate])
    if not applied.success:
        print(f"demo: the plate was refused: {applied.message}", file=sys.stderr)
        return 1
    first_contact = _motion_through_plate(client, failures)
    _trajectory_through_plate(client, failures)
    _planned_path_around_the_post(getattr(client, "untimed", client), plate, args.world, failures)
    written = _render(pictures, args.output, args.world)
    if not first_contact.valid:
        written.append(_render_first_contact(first_contact, plate, args.output, args.world))
    for path in written:
        print(f"picture: {path}")
    return 0


def _render(pictures, folder: str, world_path: str) -> list[str]:
    """PNG pictures of the refused configurations (see my_collision_pkg.viz.render)."""
    from my_collision_pkg.viz.render import render_explanation_pngs
    urdf, srdf = panda_paths()
    return render_explanation_pngs(pictures, folder, urdf_path=urdf, srdf_path=srdf, world_path=world_path)


def _render_first_contact(response, plate: CollisionObject, folder: str, world_path: str) -> str:
    """``motion_first_contact.png``: a close-up of the hand at cc_time, the plate, and the contacts there."""
    from my_collision_pkg.ros.conversions import collision_object_to_updates
    from my_collision_pkg.core.scene.loading import load_scene
    from my_collision_pkg.viz.render import render_report_png
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world_path)
    scene.apply(collision_object_to_updates(plate, scene.robot))    # the node's world: file + plate
    os.makedirs(folder, exist_ok=True)
    title = (f"motion first contact: joint 1 swing through a {PLATE_THICKNESS_M * 1e3:.0f} mm plate\n"
             f"certified cc_time {response.cc_time:.5f}; discrete at {MOVEIT_LIKE_STEP_RAD} rad: valid")
    image = render_report_png(os.path.join(folder, "motion_first_contact.png"), scene.world, response,
                              title=title, view=MOTION_VIEW,
                              zoom_half_size_m=MOTION_ZOOM_HALF_SIZE_M)
    return os.path.abspath(image.path)


if __name__ == "__main__":
    sys.exit(main())
