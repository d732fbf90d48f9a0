"""``make demo``: the collision_validator on the Franka Panda, called over ROS 2.

Starts the installed ``collision_validator`` executable on the Panda from
``example-robot-data`` with the default world (``config/panda_world.yaml``: a
table and a post), calls its services for a free, a self-colliding and an
environment-colliding configuration, prints the verdicts and explanations,
renders the two collisions to PNG files, runs one batch request, and stops.
Exit status 0 when every answer is the expected one.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

import numpy as np
from ament_index_python.packages import get_package_prefix, get_package_share_directory

from my_collision_pkg.client import ServiceTimeout, ValidatorClient
from my_collision_pkg.models import panda_paths

ARM = [f"panda_joint{i}" for i in range(1, 8)]
CASES = (
    # (title, configuration of panda_joint1..7, expected valid)
    ("free: the SRDF's default pose", [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785], True),
    ("self-collision: elbow folded, hand against the upper arm", [0.0, -0.5, 0.0, -3.0, 0.0, 0.3, 0.785], False),
    ("environment collision: reaching down through the table", [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785], False),
)
BATCH_SIZE = 1000
BATCH_SEED = 7
PANDA_LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
PANDA_UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
STARTUP_TIMEOUT_S = 60.0
CONTACTS_SHOWN = 5


def _start_validator(world_path: str) -> subprocess.Popen:
    urdf, srdf = panda_paths()
    exe = os.path.join(get_package_prefix("my_collision_pkg"), "lib", "my_collision_pkg", "collision_validator")
    args = [exe, "--ros-args", "-p", f"urdf_path:={urdf}", "-p", f"srdf_path:={srdf}",
            "-p", f"scene_path:={world_path}", "--log-level", "warn"]
    return subprocess.Popen(args)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="demo_output", help="folder for the PNG pictures")
    parser.add_argument("--world", default=os.path.join(get_package_share_directory("my_collision_pkg"), "config",
                                                        "panda_world.yaml"), help="world YAML file")
    args = parser.parse_args(argv)
    print(f"collision_validator on the Franka Panda (example-robot-data), world {args.world}")
    process = _start_validator(args.world)
    failures = []
    try:
        with ValidatorClient(node_name="demo_client") as client:
            started = time.monotonic()
            try:
                client.wait_for_services(STARTUP_TIMEOUT_S)
            except ServiceTimeout as exc:
                print(f"demo: {exc}", file=sys.stderr)
                return 1
            print(f"services ready after {time.monotonic() - started:.1f} s\n")
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
            batch = rng.uniform(PANDA_LOWER, PANDA_UPPER, size=(BATCH_SIZE, len(ARM)))
            started = time.perf_counter()
            answer = client.check_batch(ARM, batch)
            elapsed = time.perf_counter() - started
            print(f"[batch] {BATCH_SIZE} random configurations in one request: {sum(answer.valid)} valid, "
                  f"{elapsed * 1e3:.1f} ms round trip ({BATCH_SIZE / elapsed:,.0f} configurations/s)")
            print(f"    {answer.message}")
            written = _render(pictures, args.output, args.world)
            for path in written:
                print(f"picture: {path}")
    finally:
        _stop(process)
    if failures:
        for failure in failures:
            print(f"demo: unexpected answer: {failure}", file=sys.stderr)
        return 1
    return 0


def _render(pictures, folder: str, world_path: str) -> list[str]:
    """PNG pictures of the refused configurations (see my_collision_pkg.render)."""
    from my_collision_pkg.render import render_explanation_pngs
    urdf, srdf = panda_paths()
    return render_explanation_pngs(pictures, folder, urdf_path=urdf, srdf_path=srdf, world_path=world_path)


if __name__ == "__main__":
    sys.exit(main())
