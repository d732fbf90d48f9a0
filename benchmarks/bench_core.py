"""Speed of the validity predicate, side by side with pinocchio + coal and pybullet.

Run:  python benchmarks/bench_core.py [--rounds 3] [--configurations 2000]

One run, one machine, one random Panda set (2000 configurations within the
limits, the seed of test/robots/conftest.py). Measured, in microseconds per
configuration:

- ours, single: ``CollisionChecker.check`` called once per configuration;
- ours, batch: ``CollisionChecker.check_batch`` on 1000 configurations per call;
- pinocchio + coal: ``computeCollisions(model, data, geometry_model, geometry_data, q,
  stop_at_first_collision=True)`` on exactly our shape pairs (a predicate stops at the
  first collision); it includes pinocchio's kinematics and placement updates;
- pybullet (when importable): the Panda URDF in a DIRECT client with self-collision
  on, the link pairs we do not check switched off with ``setCollisionFilterPair``;
  per configuration: one ``resetJointStatesMultiDof`` for every joint (nine separate
  ``resetJointState`` calls cost ~75 us here, more than the rest together),
  ``performCollisionDetection`` and ``getContactPoints`` of the robot with itself, a
  contact with distance <= 0 meaning collision. (pybullet checks each link mesh as its convex hull, so its
  verdicts are those of a coarser model; it is here for speed only.)
- explain on the configurations we refuse, ``contact_distance = 0``: milliseconds per
  call, median and max, beside pinocchio + coal's nearest equivalent on the same
  configurations: ``computeCollisions`` over every pair (no stop at the first collision)
  with contacts enabled, as many per pair as ours (``contacts_per_pair``), after one
  warm-up call of each; and our worst configuration against pinocchio + coal on it;
- Python-level calls per ``check`` (function calls and calls of builtins, counted with
  ``sys.setprofile`` outside the timed runs), mean over the set.

``--workers 1,2`` measures only the batch on several cores instead: ``check_batch`` on
10,000 configurations (``--batch-configurations``) with ``batch_workers`` = each count
(core/checks/batch_workers.py), the counts interleaved round by round; it prints the
wall time per configuration, the CPU time per configuration (this process and its
workers: what the split costs beyond one core), the ratio to the first count, that the
verdicts are equal, what forking a pool for a new snapshot costs, and the load average
(the ratio needs idle cores: on a loaded machine it is worse than on a quiet one). Then
one process pinned to each CPU in turn, alone and with a busy loop on the others, and what
that many processes could reach at those speeds: the CPUs of a virtual machine need not be
equally fast, nor keep their speed when their neighbours work (on the 2-CPU machine of
docs/performance.md each ran 1.1-1.8x slower beside a busy neighbour, and which one was
faster changed between runs), so the ratio to one worker depends on the CPU the one worker
ran on.

Options ``--pin CPU`` (run on that CPU only) and ``--busy-cpu CPU`` (a busy loop on that
CPU for the whole run) show whether the ratios hold on one core and under load, e.g.
``--pin 0`` and ``--pin 0 --busy-cpu 1``.

The measurements are repeated in rounds, the order of the engines rotating from one
round to the next so that machine noise falls on every side alike; the figures are
the medians over the rounds. Ratios are to pinocchio + coal.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.scene.loading import example_robot_data_share, load_scene, panda_paths

RANDOM_SEED = 20_260_611          # same set as test/robots/conftest.py
N_CONFIGURATIONS = 2000
BATCH_SIZE = 1000
ROUNDS = 3
TARGET_SINGLE_RATIO = 0.5
TARGET_BATCH_RATIO = 0.5
TARGET_EXPLAIN_MS = 3.0
TARGET_EXPLAIN_PEER_RATIO = 3.0   # explain's worst configuration against pin + coal on the same one (issue 17)
WORKERS_CONFIGURATIONS = 10_000    # --workers: the batch size of issue 17's target
TARGET_WORKERS_RATIO = 0.6         # 2 processes against 1 on 10,000 configurations
US_PER_S = 1e6
MS_PER_S = 1e3


def panda_configurations(robot, n: int, seed: int) -> np.ndarray:
    """(n, A) configurations uniform within the joint limits (the Panda has no continuous joint)."""
    return np.random.default_rng(seed).uniform(robot.lower_limits, robot.upper_limits,
                                               size=(n, len(robot.active_joint_names)))


# ----- the engines -------------------------------------------------------------------
class Ours:
    name = "ours, single check"

    def __init__(self, checker: CollisionChecker) -> None:
        self.checker = checker
        self.names = checker.scene.robot.active_joint_names

    def run(self, Q: np.ndarray) -> np.ndarray:
        check, names = self.checker.check, self.names
        return np.array([check(names, q).valid for q in Q])


class OursBatch(Ours):
    name = f"ours, batch of {BATCH_SIZE}"

    def run(self, Q: np.ndarray) -> np.ndarray:
        return np.concatenate([self.checker.check_batch(self.names, Q[i:i + BATCH_SIZE])[0]
                               for i in range(0, len(Q), BATCH_SIZE)])


class PinocchioCoal:
    """pinocchio + coal on exactly the shape pairs our scene checks."""
    name = "pinocchio + coal"

    def __init__(self, scene, urdf_path: str, contacts_per_pair: int = 0) -> None:
        import pinocchio as pin
        self.pin = pin
        model, gmodel = pin.buildModelsFromUrdf(urdf_path, [example_robot_data_share()],
                                                geometry_types=pin.GeometryType.COLLISION)
        per_link: dict[str, list[int]] = {}
        for k, obj in enumerate(gmodel.geometryObjects):
            per_link.setdefault(model.frames[obj.parentFrame].name, []).append(k)
        world = scene.world
        index = [per_link[s.owner][s.shape_id] for s in world.shapes]   # same link, same <collision> index
        for a, b in world.pairs:
            gmodel.addCollisionPair(pin.CollisionPair(index[a], index[b]))
        self.model, self.data = model, model.createData()
        self.gmodel, self.gdata = gmodel, pin.GeometryData(gmodel)
        if contacts_per_pair:       # explain's equivalent: contacts of every colliding pair
            for request in self.gdata.collisionRequests:
                request.enable_contact = True
                request.num_max_contacts = contacts_per_pair
        movable = {n: i for i, n in enumerate(scene.robot.movable_joint_names)}
        self.robot = scene.robot
        self.q_index = np.array([model.joints[j].idx_q for j in range(1, model.njoints)])
        self.source = np.array([movable[model.names[j]] for j in range(1, model.njoints)])
        assert all(model.joints[j].nq == 1 for j in range(1, model.njoints))

    def configurations(self, Q: np.ndarray) -> np.ndarray:
        """pinocchio q (N, nq): mimic joints (the second finger) follow their leaders."""
        values = self.robot.movable_values(Q)
        out = np.zeros((len(Q), self.model.nq))
        out[:, self.q_index] = values[:, self.source]
        return out

    def run(self, Q_pin: np.ndarray) -> np.ndarray:
        collide = self.pin.computeCollisions
        m, d, gm, gd = self.model, self.data, self.gmodel, self.gdata
        return np.array([not collide(m, d, gm, gd, q, True) for q in Q_pin])

    def all_contacts(self, q_pin: np.ndarray) -> bool:
        """Every pair checked (no stop at the first collision); True when any collides."""
        return self.pin.computeCollisions(self.model, self.data, self.gmodel, self.gdata, q_pin, False)


class PyBullet:
    name = "pybullet"

    def __init__(self, scene, urdf_path: str) -> None:
        import pybullet
        self.p = pybullet
        self.client = pybullet.connect(pybullet.DIRECT)
        flags = pybullet.URDF_USE_SELF_COLLISION | pybullet.URDF_USE_SELF_COLLISION_INCLUDE_PARENT
        self.body = pybullet.loadURDF(urdf_path, useFixedBase=True, flags=flags, physicsClientId=self.client)
        link_of = {pybullet.getBodyInfo(self.body, physicsClientId=self.client)[0].decode(): -1}
        joint_of = {}
        for j in range(pybullet.getNumJoints(self.body, physicsClientId=self.client)):
            info = pybullet.getJointInfo(self.body, j, physicsClientId=self.client)
            link_of[info[12].decode()] = j
            joint_of[info[1].decode()] = j
        world = scene.world
        checked = {frozenset((world.shapes[a].owner, world.shapes[b].owner)) for a, b in world.pairs}
        with_geometry = sorted({s.owner for s in world.shapes})
        for i, a in enumerate(with_geometry):
            for b in with_geometry[i + 1:]:
                pybullet.setCollisionFilterPair(self.body, self.body, link_of[a], link_of[b],
                                                int(frozenset((a, b)) in checked), physicsClientId=self.client)
        movable = scene.robot.movable_joint_names
        self.robot = scene.robot
        self.joints = [joint_of[n] for n in movable]

    def run(self, Q: np.ndarray) -> np.ndarray:
        p, body, client, joints = self.p, self.body, self.client, self.joints
        values = self.robot.movable_values(Q)
        out = np.empty(len(Q), dtype=bool)
        for k, row in enumerate(values):
            p.resetJointStatesMultiDof(body, joints, [[v] for v in row], physicsClientId=client)
            p.performCollisionDetection(physicsClientId=client)
            contacts = p.getContactPoints(body, body, physicsClientId=client)
            out[k] = not any(c[8] <= 0.0 for c in contacts)
        return out

    def close(self) -> None:
        self.p.disconnect(physicsClientId=self.client)


# ----- measuring ---------------------------------------------------------------------
def timed(run, data) -> tuple[float, np.ndarray]:
    gc.collect()
    start = time.perf_counter()
    result = run(data)
    return time.perf_counter() - start, result


def python_calls_per_check(checker: CollisionChecker, names, Q: np.ndarray) -> float:
    """Mean number of Python-level calls (functions and builtins) one ``check`` makes."""
    counted = [0]

    def count(frame, event, arg) -> None:
        if event in ("call", "c_call"):
            counted[0] += 1

    sys.setprofile(count)
    try:
        for q in Q:
            checker.check(names, q)
    finally:
        sys.setprofile(None)
    return counted[0] / len(Q)


def start_busy_loop(cpu: int) -> subprocess.Popen:
    """A process spinning on ``cpu`` until it is killed."""
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--configurations", type=int, default=N_CONFIGURATIONS)
    parser.add_argument("--pin", type=int, default=None, metavar="CPU", help="run on this CPU only")
    parser.add_argument("--busy-cpu", type=int, default=None, metavar="CPU",
                        help="keep a busy loop running on this CPU during the run")
    parser.add_argument("--workers", default=None, metavar="COUNTS",
                        help="measure only check_batch with these batch_workers counts, e.g. 1,2")
    parser.add_argument("--batch-configurations", type=int, default=WORKERS_CONFIGURATIONS,
                        help="configurations per batch with --workers")
    args = parser.parse_args()
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    busy = start_busy_loop(args.busy_cpu) if args.busy_cpu is not None else None
    try:
        if args.workers:
            run_workers(args, [int(v) for v in args.workers.split(",")])
        else:
            run(args)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def _cpu_s(pids) -> float:
    """CPU time (user + system) of the processes ``pids`` so far, seconds."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def run_workers(args, counts: list[int]) -> None:
    """check_batch on one set with each ``batch_workers`` count, interleaved over the rounds."""
    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    names = scene.robot.active_joint_names
    Q = panda_configurations(scene.robot, args.batch_configurations, RANDOM_SEED)
    n = len(Q)
    checkers = {w: CollisionChecker(scene, check_joint_limits=True, batch_workers=w) for w in counts}
    load_before = os.getloadavg()
    first_s = {}
    verdicts = {}
    for w, checker in checkers.items():          # warm-up; the pools are forked here
        start = time.perf_counter()
        verdicts[w] = checker.check_batch(names, Q, max_batch=n)[0]
        first_s[w] = time.perf_counter() - start
    wall: dict[int, list[float]] = {w: [] for w in counts}
    cpu: dict[int, list[float]] = {w: [] for w in counts}
    for r in range(args.rounds):
        order = counts[r % len(counts):] + counts[:r % len(counts)]
        for w in order:
            checker = checkers[w]
            pids = checker.batch_worker_pids
            gc.collect()
            cpu_start, workers_start = time.process_time(), _cpu_s(pids)
            start = time.perf_counter()
            valid, _ = checker.check_batch(names, Q, max_batch=n)
            wall[w].append(time.perf_counter() - start)
            cpu[w].append(time.process_time() - cpu_start + _cpu_s(pids) - workers_start)
            assert checker.batch_worker_pids == pids, "the pool was replaced during the run"
            if not np.array_equal(valid, verdicts[w]):
                verdicts[w] = valid
    per_cpu = _one_process_per_cpu(checkers.get(1), names, Q, args.rounds)
    reference = counts[0]
    equal = all(np.array_equal(verdicts[w], verdicts[reference]) for w in counts)
    # what a new snapshot costs: the batch right after an allowed collision is switched (the pool
    # is forked again) against the next batch on that snapshot
    refork_ms = {}
    for w in counts:
        if w > 1:
            extra = []
            for allowed in (True, False, True, False):
                scene.set_allowed_collision("panda_link0", "panda_link7", allowed)
                start = time.perf_counter()
                checkers[w].check_batch(names, Q, max_batch=n)
                middle = time.perf_counter()
                checkers[w].check_batch(names, Q, max_batch=n)
                extra.append((middle - start) - (time.perf_counter() - middle))
            refork_ms[w] = statistics.median(extra) * MS_PER_S
    print(f"Panda (example-robot-data), check_batch on {n} random configurations within the limits, seed "
          f"{RANDOM_SEED}; {len(scene.world.pairs)} shape pairs; batch_workers {counts}, {args.rounds} rounds "
          "interleaved, medians")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, running on CPUs {sorted(os.sched_getaffinity(0))}; "
          f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"refused {int((~verdicts[reference]).sum())}; verdicts equal for every count: {'yes' if equal else 'NO'}")
    print()
    print(f"{'batch_workers':<15}{'us/config':>11}{'ratio':>8}{'cpu us/config':>15}{'first batch ms':>16}"
          f"{'new snapshot ms':>17}   rounds (us/config)")
    base = statistics.median(wall[reference])
    for w in counts:
        per = statistics.median(wall[w]) / n * US_PER_S
        rounds = ", ".join(f"{t / n * US_PER_S:.1f}" for t in wall[w])
        fork = f"+{refork_ms[w]:.1f}" if w in refork_ms else "-"
        print(f"{w:<15}{per:>11.2f}{statistics.median(wall[w]) / base:>8.2f}"
              f"{statistics.median(cpu[w]) / n * US_PER_S:>15.2f}{first_s[w] * MS_PER_S:>16.1f}{fork:>17}   {rounds}")
    print()
    for w in counts:
        if w == 2 and reference == 1:
            ratio = statistics.median(wall[2]) / base
            print(f"target: 2 workers <= {TARGET_WORKERS_RATIO}x one: {ratio:.2f} "
                  f"{'met' if ratio <= TARGET_WORKERS_RATIO else 'MISSED'} (load average "
                  f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    if per_cpu:
        alone = {cpu: statistics.median(t) / n * US_PER_S for cpu, (t, _) in per_cpu.items()}
        shared = {cpu: statistics.median(t) / n * US_PER_S for cpu, (_, t) in per_cpu.items()}
        print("one process pinned to each CPU, us/config (median of the rounds), alone / with a busy loop on "
              "the other CPUs: " + "; ".join(f"CPU {c} {alone[c]:.2f} / {shared[c]:.2f}" for c in alone))
        ideal = 1.0 / sum(1.0 / v for v in shared.values())
        print(f"what {len(shared)} processes could reach at those busy-machine speeds: {ideal:.2f} us/config, "
              f"{ideal / base * n / US_PER_S:.2f}x the one-worker median above, "
              f"{ideal / min(alone.values()):.2f}x the fastest CPU alone")
    for checker in checkers.values():
        checker.close()


def _one_process_per_cpu(checker, names, Q, rounds: int) -> dict:
    """Per CPU of this process's mask: check_batch's wall times (s) with one process pinned
    there, alone and with a busy loop on every other CPU (the CPUs of a virtual machine need
    not be equally fast, nor keep their speed when their neighbours work). {} without a
    one-worker checker or with one CPU."""
    allowed = sorted(os.sched_getaffinity(0))
    if checker is None or len(allowed) < 2:
        return {}
    times = {cpu: ([], []) for cpu in allowed}
    try:
        for _ in range(rounds):
            for cpu in allowed:
                os.sched_setaffinity(0, {cpu})
                for loaded in (False, True):
                    loops = [start_busy_loop(c) for c in allowed if c != cpu] if loaded else []
                    try:
                        start = time.perf_counter()
                        checker.check_batch(names, Q, max_batch=len(Q))
                        times[cpu][int(loaded)].append(time.perf_counter() - start)
                    finally:
                        for loop in loops:
                            loop.kill()
                            loop.wait()
    finally:
        os.sched_setaffinity(0, set(allowed))
    return times


def run(args) -> None:

    urdf, srdf = panda_paths()
    scene = load_scene(urdf_path=urdf, srdf_path=srdf)
    checker = CollisionChecker(scene, check_joint_limits=True)
    Q = panda_configurations(scene.robot, args.configurations, RANDOM_SEED)
    names = scene.robot.active_joint_names

    coal_engine = PinocchioCoal(scene, urdf)
    coal_contacts = PinocchioCoal(scene, urdf, contacts_per_pair=checker.contacts_per_pair)
    Q_pin = coal_engine.configurations(Q)
    engines: list[tuple[object, np.ndarray]] = [(Ours(checker), Q), (OursBatch(checker), Q), (coal_engine, Q_pin)]
    try:
        engines.append((PyBullet(scene, urdf), Q))
        pybullet_note = "resetJointStatesMultiDof, performCollisionDetection, getContactPoints"
    except ImportError:
        pybullet_note = "not importable, skipped"

    for engine, data in engines:          # warm-up: compiled kernels, caches, first contacts
        engine.run(data[:50])

    seconds: dict[str, list[float]] = {e.name: [] for e, _ in engines}
    verdicts: dict[str, np.ndarray] = {}
    # explain's warm-up: one call per refused configuration on each side (the world's per-shape tables,
    # e.g. the hulls' vertex sets, are made on a shape's first contact: ~7 ms on the first call otherwise)
    for k in np.flatnonzero(~Ours(checker).run(Q)):
        checker.explain(names, Q[k], contact_distance=0.0)
        coal_contacts.all_contacts(Q_pin[k])
    explain_ms: list[float] = []
    peer_explain_ms: list[float] = []
    per_configuration: dict[int, tuple[list[float], list[float]]] = {}    # k: (ours ms, peer ms) per round
    explain_slow: dict[int, float] = {}
    refused = None
    for r in range(args.rounds):
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for engine, data in order:
            elapsed, valid = timed(engine.run, data)
            seconds[engine.name].append(elapsed)
            verdicts[engine.name] = valid
        refused = np.flatnonzero(~verdicts[Ours.name])
        for k in refused:
            start = time.perf_counter()
            explanation = checker.explain(names, Q[k], contact_distance=0.0)
            explain_ms.append((time.perf_counter() - start) * MS_PER_S)
            assert not explanation.valid
            start = time.perf_counter()
            assert coal_contacts.all_contacts(Q_pin[k])
            peer_explain_ms.append((time.perf_counter() - start) * MS_PER_S)
            ours_k, peer_k = per_configuration.setdefault(int(k), ([], []))
            ours_k.append(explain_ms[-1])
            peer_k.append(peer_explain_ms[-1])
            if explain_ms[-1] >= TARGET_EXPLAIN_MS:
                explain_slow[int(k)] = max(explain_slow.get(int(k), 0.0), explain_ms[-1])

    n = len(Q)
    us = {name: statistics.median(values) / n * US_PER_S for name, values in seconds.items()}
    reference = us[PinocchioCoal.name]
    print(f"Panda (example-robot-data), {n} random configurations within the limits, seed {RANDOM_SEED}; "
          f"{len(scene.world.pairs)} shape pairs; {args.rounds} rounds, medians")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"running on CPUs {sorted(os.sched_getaffinity(0))}"
          + (f", busy loop on CPU {args.busy_cpu}" if args.busy_cpu is not None else ", no extra load")
          + f", load average {os.getloadavg()[0]:.1f}")
    print(f"refused: ours {int((~verdicts[Ours.name]).sum())}, pinocchio+coal "
          f"{int((~verdicts[PinocchioCoal.name]).sum())}; verdicts equal on "
          f"{int((verdicts[Ours.name] == verdicts[PinocchioCoal.name]).sum())}/{n}; "
          f"single == batch on {int((verdicts[Ours.name] == verdicts[OursBatch.name]).sum())}/{n}")
    if PyBullet.name in verdicts:
        print(f"pybullet ({pybullet_note}, convex hulls of the link meshes): refuses "
              f"{int((~verdicts[PyBullet.name]).sum())}, equal to coal on "
              f"{int((verdicts[PyBullet.name] == verdicts[PinocchioCoal.name]).sum())}/{n}")
    else:
        print(f"pybullet: {pybullet_note}")
    print()
    print(f"{'engine':<26}{'us/config':>12}{'ratio to coal':>16}{'target':>12}   rounds (us/config)")
    targets = {Ours.name: f"<= {TARGET_SINGLE_RATIO:.1f}", OursBatch.name: f"<= {TARGET_BATCH_RATIO:.1f}"}
    for name, value in us.items():
        rounds = ", ".join(f"{s / n * US_PER_S:.1f}" for s in seconds[name])
        print(f"{name:<26}{value:>12.1f}{value / reference:>16.2f}{targets.get(name, ''):>12}   {rounds}")
    print()
    if explain_ms:
        print(f"explain on the refused configurations (contact_distance 0), target < {TARGET_EXPLAIN_MS} ms: "
              f"median {statistics.median(explain_ms):.2f} ms, max {max(explain_ms):.2f} ms over "
              f"{len(explain_ms)} calls ({len(refused)} configurations x {args.rounds} rounds)")
        print(f"  pinocchio + coal, every pair with contacts on the same configurations: median "
              f"{statistics.median(peer_explain_ms):.2f} ms, max {max(peer_explain_ms):.2f} ms; ratio of ours: "
              f"median {statistics.median(explain_ms) / statistics.median(peer_explain_ms):.2f}, "
              f"max {max(explain_ms) / max(peer_explain_ms):.2f}")
        worst = max(per_configuration, key=lambda k: statistics.median(per_configuration[k][0]))
        ours_worst = statistics.median(per_configuration[worst][0])
        peer_worst = max(statistics.median(v[1]) for v in per_configuration.values())
        print(f"  worst configuration (median over the rounds): ours #{worst} {ours_worst:.2f} ms, "
              f"pinocchio + coal's worst {peer_worst:.2f} ms; ratio {ours_worst / peer_worst:.2f}")
        peer_same = statistics.median(per_configuration[worst][1])
        tail_met = ours_worst < TARGET_EXPLAIN_MS and ours_worst <= TARGET_EXPLAIN_PEER_RATIO * peer_same
        print(f"  our worst configuration #{worst} against pinocchio + coal on that same configuration: ours "
              f"{ours_worst:.2f} ms, pinocchio + coal {peer_same:.2f} ms; ratio {ours_worst / peer_same:.2f} "
              f"(target < {TARGET_EXPLAIN_MS} ms and <= {TARGET_EXPLAIN_PEER_RATIO:.0f}x: "
              f"{'met' if tail_met else 'MISSED'})")
        if explain_slow:
            slow = ", ".join(f"#{k} {ms:.1f} ms" for k, ms in sorted(explain_slow.items(), key=lambda kv: -kv[1]))
            print(f"  at or over the target (worst of the rounds): {slow}")
    print()
    print(f"Python-level calls per check (functions + builtins, mean): "
          f"{python_calls_per_check(checker, names, Q):.1f}")
    print()
    single_ok = us[Ours.name] / reference <= TARGET_SINGLE_RATIO
    batch_ok = us[OursBatch.name] / reference <= TARGET_BATCH_RATIO
    explain_ok = bool(explain_ms) and statistics.median(explain_ms) < TARGET_EXPLAIN_MS
    explain_max_ok = bool(explain_ms) and max(explain_ms) < TARGET_EXPLAIN_MS
    print(f"targets: single ratio {us[Ours.name] / reference:.2f} {'met' if single_ok else 'MISSED'}; "
          f"batch ratio {us[OursBatch.name] / reference:.2f} {'met' if batch_ok else 'MISSED'}; "
          f"explain median {'met' if explain_ok else 'MISSED'}, max {'met' if explain_max_ok else 'MISSED'}")
    for engine, _ in engines:
        if hasattr(engine, "close"):
            engine.close()


if __name__ == "__main__":
    main()
