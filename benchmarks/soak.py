"""Soak run of collision_validator: parallel callers while the world changes.

N client threads (check_validity, explain, check_validity_batch in turn) call one
validator through one shared client while another thread updates the scene (a
box 'mover' ADDed at one place, re-ADDed at another, REMOVEd, over and over).
Every answer is compared with a serial oracle computed here by the core for each
world the scene goes through: an answer must match the world before or after the
updates that were in flight during its call. Then the peak memory of the node for
a 100,000-configuration batch and for a batch of the largest allowed size
(max_batch) is measured.

Prints: answers, wrong answers, errors, timeouts; RSS and thread count of the node
process at start and end; peak RSS over the baseline for each big batch.

    scripts/env.sh python benchmarks/soak.py --threads 8 --seconds 60

Not a test: it prints figures. (It is not run by ``make bench`` unless asked.)
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np
from _servers import panda_validator_command, panda_world_path, running

ARM = [f"panda_joint{i}" for i in range(1, 8)]
FREE = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
INTO_TABLE = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]
PANDA_LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
PANDA_UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
MOVER_SIZE_M = 0.1
MOVER_AT = [(0.3, 0.0, 0.6), (0.05, 0.0, 0.35)]    # overlapping links 6/7/hand, then links 1/2 at FREE
POOL_SIZE = 300
BATCH_ROWS = 64
SMALL_BIG_BATCH = 100_000
STARTUP_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 10.0
BIG_BATCH_TIMEOUT_S = 600.0


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (kB) and Threads of a process, from /proc."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(value.split()[0])
    return out


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where not permitted."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Versions:
    """Counts scene updates begun and finished, so a call knows which worlds it may have seen."""

    def __init__(self) -> None:
        self.begun = 0
        self.done = 0
        self.lock = threading.Lock()


def build_oracles(world_path: str, pool: np.ndarray, batches: list[np.ndarray]):
    """Per world state (none, mover at A, mover at B): verdicts of the pool, explain's
    (valid, colliding links) of the pool, and the batch answers."""
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    from my_collision_pkg.core.model.robot_model import Box
    from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, RemoveObject, SceneObject
    from my_collision_pkg.core.model.transforms import make_transform

    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world_path)
    checker = CollisionChecker(scene)
    states = []
    for at in [None] + MOVER_AT:
        world = scene.world if at is None else scene.apply(
            [AddObject(SceneObject("mover", (ObjectShape(Box((MOVER_SIZE_M,) * 3)),), make_transform(None, at)))])
        checks = [checker.check(ARM, q, world=world).valid for q in pool]
        explains = []
        for q in pool:
            e = checker.explain(ARM, q, world=world)
            explains.append((e.valid, tuple(e.colliding_links)))
        batch = [checker.check_batch(ARM, rows, world=world)[0] for rows in batches]
        states.append((checks, explains, batch))
        if at is not None:
            scene.apply([RemoveObject("mover")])
    return scene, checker, states


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-batch", type=int, default=None,
                        help="the node's max_batch (default: the largest the node allows)")
    args = parser.parse_args()

    from geometry_msgs.msg import Pose
    from shape_msgs.msg import SolidPrimitive

    from my_collision_pkg.core.checks.checker import MAX_BATCH_CONFIGURATIONS
    from my_collision_pkg.ros.client import ServiceTimeout, ValidatorClient
    from my_collision_pkg.msg import CollisionObject

    max_batch = args.max_batch or MAX_BATCH_CONFIGURATIONS
    rng = np.random.default_rng(9)
    pool = np.vstack([FREE, INTO_TABLE, rng.uniform(PANDA_LOWER, PANDA_UPPER, size=(POOL_SIZE, 7))])
    batches = [pool[rng.integers(0, len(pool), BATCH_ROWS)] for _ in range(16)]
    world_path = panda_world_path()
    t0 = time.perf_counter()
    scene, checker, oracles = build_oracles(world_path, pool, batches)
    print(f"oracle: {len(pool)} configurations x 3 worlds in {time.perf_counter() - t0:.1f} s")

    counts = {"answers": 0, "wrong": 0, "errors": 0, "timeouts": 0, "updates": 0}
    by_kind = {"check": 0, "explain": 0, "batch": 0}
    examples: list[str] = []
    lock = threading.Lock()
    versions = Versions()
    stop = threading.Event()

    def note(key: str, example: str | None = None) -> None:
        with lock:
            counts[key] += 1
            if example and len(examples) < 5:
                examples.append(example)

    def mover(at) -> CollisionObject:
        msg = CollisionObject(id="mover", operation=CollisionObject.ADD)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = at
        msg.pose.orientation.w = 1.0
        msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[MOVER_SIZE_M] * 3)]
        msg.primitive_poses = [Pose()]
        return msg

    def updater(client) -> None:
        steps = [[mover(MOVER_AT[0])], [mover(MOVER_AT[1])], [CollisionObject(id="mover",
                                                                              operation=CollisionObject.REMOVE)]]
        k = 0
        while not stop.is_set():
            with versions.lock:
                versions.begun += 1
            try:
                r = client.apply(steps[k % 3])
                if not r.success:
                    note("errors", f"apply: {r.message}")
            except ServiceTimeout:
                note("timeouts")
            with versions.lock:
                versions.done += 1
            counts["updates"] += 1
            k += 1
            time.sleep(0.005)

    def caller(client, index: int) -> None:
        kind = ("check", "explain", "batch")[index % 3]
        local = np.random.default_rng(100 + index)
        while not stop.is_set():
            i = int(local.integers(0, len(pool)))
            b = int(local.integers(0, len(batches)))
            with versions.lock:
                first = versions.done
            try:
                if kind == "check":
                    r = client.check(ARM, pool[i])
                elif kind == "explain":
                    r = client.explain(ARM, pool[i])
                else:
                    r = client.check_batch(ARM, batches[b])
            except ServiceTimeout:
                note("timeouts")
                continue
            except Exception as exc:  # counted and shown
                note("errors", repr(exc))
                continue
            with versions.lock:
                last = versions.begun
            states = {v % 3 for v in range(first, last + 1)}
            if r.status == 3:
                note("errors", f"{kind}: {r.message}")
                continue
            if kind == "check":
                ok = any(oracles[s][0][i] == r.valid for s in states)
            elif kind == "explain":
                ok = any(oracles[s][1][i] == (r.valid, tuple(r.colliding_links)) for s in states)
            else:
                ok = any(np.array_equal(oracles[s][2][b], np.asarray(r.valid, dtype=bool)) for s in states)
            note("answers")
            with lock:
                by_kind[kind] += 1
            if not ok:
                note("wrong", f"{kind} #{i if kind != 'batch' else b} in worlds {sorted(states)}: {r.message}")

    with running(panda_validator_command(max_batch=max_batch)) as (node,):
        client = ValidatorClient("/collision_validator", node_name="soak_client", timeout_s=CALL_TIMEOUT_S)
        client.wait_for_services(STARTUP_TIMEOUT_S)
        for q in pool[:20]:
            client.check(ARM, q)
            client.explain(ARM, q)
        start = proc_status(node.pid)
        threads = [threading.Thread(target=caller, args=(client, k)) for k in range(args.threads)]
        threads.append(threading.Thread(target=updater, args=(client,)))
        t_start = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join(60)
        elapsed = time.perf_counter() - t_start
        end = proc_status(node.pid)
        print(f"soak: {args.threads} client threads + 1 updater, {elapsed:.0f} s, one shared client; "
              f"{os.cpu_count()} CPUs")
        print(f"answers {counts['answers']} (check {by_kind['check']}, explain {by_kind['explain']}, "
              f"batch of {BATCH_ROWS} {by_kind['batch']}), {counts['answers'] / elapsed:.0f}/s; "
              f"scene updates {counts['updates']}")
        print(f"wrong answers {counts['wrong']}, errors {counts['errors']}, timeouts {counts['timeouts']}")
        for example in examples:
            print(f"  e.g. {example}")
        print(f"node RSS {start['VmRSS'] / 1024:.0f} MB -> {end['VmRSS'] / 1024:.0f} MB, "
              f"threads {start['Threads']} -> {end['Threads']}")

        # peak memory of big batches (the world is now one of the three states; compare verdicts with it)
        big_client = ValidatorClient("/collision_validator", node_name="soak_big", timeout_s=BIG_BATCH_TIMEOUT_S)
        big_client.wait_for_services(STARTUP_TIMEOUT_S)
        final = counts["updates"] % 3
        for n in (SMALL_BIG_BATCH, max_batch):
            rows = rng.uniform(PANDA_LOWER, PANDA_UPPER, size=(n, 7))
            base = proc_status(node.pid)["VmRSS"]
            exact_peak = reset_peak(node.pid)
            t = time.perf_counter()
            r = big_client.check_batch(ARM, rows)
            dt = time.perf_counter() - t
            after = proc_status(node.pid)
            valid = np.asarray(r.valid, dtype=bool)
            world = scene.world
            if final:
                from my_collision_pkg.core.model.robot_model import Box
                from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, SceneObject
                from my_collision_pkg.core.model.transforms import make_transform
                world = scene.apply([AddObject(SceneObject("mover", (ObjectShape(Box((MOVER_SIZE_M,) * 3)),),
                                                           make_transform(None, MOVER_AT[final - 1])))])
            sample = rng.integers(0, n, 2000)
            expected = checker.check_batch(ARM, rows[sample], world=world)[0]
            agree = len(valid) == n and np.array_equal(valid[sample], expected)
            request_mb = n * 7 * 8 / 2**20
            print(f"batch of {n:,}: {dt:.1f} s, status {r.status}, {int((~valid).sum()):,} invalid, "
                  f"2000 sampled verdicts {'agree' if agree else 'DISAGREE'} with the core; node RSS "
                  f"{base / 1024:.0f} MB, peak {'+' if exact_peak else '(since start) '}"
                  f"{(after['VmHWM'] - (base if exact_peak else 0)) / 1024:.0f} MB "
                  f"(the request alone is {request_mb:.0f} MB), after {after['VmRSS'] / 1024:.0f} MB")
            del rows
        over = big_client.check_batch(ARM, np.zeros((max_batch + 1, 7)))
        print(f"batch of {max_batch + 1:,}: status {over.status}, '{over.message}'")
        big_client.close()
        client.close()
    print(f"node exit code {node.returncode}")
    return 0 if counts["wrong"] == 0 and counts["errors"] == 0 and counts["timeouts"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
