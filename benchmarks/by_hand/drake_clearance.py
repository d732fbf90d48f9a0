"""Drake's CalcRobotClearance on issue 40's four sets: a by-hand peer, outside `make bench`.

Drake 1.58 needs Python 3.12, so this runs in a venv of its own (not the project's):

    python3.12 -m venv /tmp/drake-venv && /tmp/drake-venv/bin/pip install drake==1.58.0 trimesh
    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_clearance.py --export-drake /tmp/sets.json
    /tmp/drake-venv/bin/python benchmarks/by_hand/drake_clearance.py /tmp/sets.json
    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/bench_clearance.py --drake-sets

Run the last two in turn, alternating which goes first, to set the figures side by side.

The scene is modelled as drake_edges.py models it (the same function: the URDF without visuals, STL
meshes as OBJ, which Drake takes as their convex hulls; the root and the world's primitives welded;
every body pair our default request does not check filtered out; padding 0). Per set: microseconds
per configuration of ``CalcRobotClearance(q, influence)`` (best of ``--rounds`` rounds of the loop),
and the rows compared with ours from the export: per configuration and body pair, the number of
rows (Drake has one per geometry pair, as ours), distances matched in sorted order, and the
Jacobian rows of matched pairs folded onto our active joints (the second finger is a mimic joint
for us, a joint of its own for Drake).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drake_edges import build_checker  # noqa: E402  (the same scene as the motion comparison)


def drake_rows(checker, plant, q: np.ndarray, influence: float):
    clearance = checker.CalcRobotClearance(q, influence)
    robot, other = clearance.robot_indices(), clearance.other_indices()
    return [(plant.get_body(robot[k]).name(), plant.get_body(other[k]).name(), float(clearance.distances()[k]),
             np.asarray(clearance.jacobians()[k])) for k in range(len(robot))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", help="the JSON file bench_clearance.py --export-drake wrote")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = json.load(open(args.sets))
    data["edges"] = []
    mimic = np.array(data["mimic_matrix"])                  # (movable, active)
    with tempfile.TemporaryDirectory() as folder:
        checker, order, n_positions = build_checker(data, folder, 0.05, False)
        plant = checker.plant()
        print(f"Drake CalcRobotClearance; best of {args.rounds} rounds; us per configuration")
        print(f"{'set':>16} {'infl':>5} | {'rows D':>6} {'rows us':>7} {'missing':>7} {'extra':>5} | "
              f"{'median|dd| um':>13} {'max|dd| um':>10} {'median|dJ|':>10} {'max|dJ|':>8} | {'Drake us':>8}")
        for item in data["sets"]:
            Q = []
            for values in item["configurations"]:
                q = np.zeros(n_positions)
                q[order] = values
                Q.append(q)
            influence = item["influence"]
            checker.CalcRobotClearance(Q[0], influence)
            best = np.inf
            for _ in range(args.rounds):
                start = time.perf_counter()
                for q in Q:
                    checker.CalcRobotClearance(q, influence)
                best = min(best, (time.perf_counter() - start) / len(Q) * 1e6)
            ours = defaultdict(list)
            rows = item["rows"]
            for c, bodies, d, jac in zip(rows["configuration"], rows["bodies"], rows["distance"], rows["jacobian"]):
                ours[(c, tuple(sorted(bodies)))].append((d, np.array(jac)))
            theirs = defaultdict(list)
            n_drake = 0
            for c, q in enumerate(Q):
                for a, b, d, jac in drake_rows(checker, plant, q, influence):
                    n_drake += 1
                    folded = jac[order] @ mimic                 # onto our active joints
                    theirs[(c, tuple(sorted((a, b))))].append((d, folded))
            missing = extra = 0
            dd, dJ = [], []
            missing_pairs, extra_pairs = defaultdict(int), defaultdict(int)
            for key in set(ours) | set(theirs):
                mine = sorted(ours.get(key, []), key=lambda r: r[0])
                other = sorted(theirs.get(key, []), key=lambda r: r[0])
                if len(mine) > len(other):
                    missing += len(mine) - len(other)
                    missing_pairs[key[1]] += len(mine) - len(other)
                elif len(other) > len(mine):
                    extra += len(other) - len(mine)
                    extra_pairs[key[1]] += len(other) - len(mine)
                for (d0, j0), (d1, j1) in zip(mine, other):
                    dd.append(abs(d0 - d1))
                    if len(j0):
                        dJ.append(float(np.max(np.abs(j0 - j1))))
            dd, dJ = np.array(dd) * 1e6, np.array(dJ)
            print(f"{item['kind'] + ' ' + str(len(Q)):>16} {influence:>5.2f} | {n_drake:>6} {len(rows['distance']):>7} "
                  f"{missing:>7} {extra:>5} | {np.median(dd):>13.3f} {dd.max():>10.1f} {np.median(dJ):>10.2e} "
                  f"{dJ.max():>8.2e} | {best:>8.1f}")
            if missing_pairs or extra_pairs:
                print(f"{'':>16} rows ours only, by body pair: {dict(missing_pairs)}; Drake only: {dict(extra_pairs)}")


if __name__ == "__main__":
    main()
