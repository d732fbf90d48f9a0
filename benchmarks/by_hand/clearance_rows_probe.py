"""Save, or compare by bytes, every field of the clearance answers on issue 40's four sets, single and batch.

For changes that must keep the rows bit-identical: save with the tree before, compare with the tree after
(the batch uses the checker's batch workers).

    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/by_hand/clearance_rows_probe.py save /tmp/rows.pkl
    PYTHONPATH=benchmarks scripts/env.sh python benchmarks/by_hand/clearance_rows_probe.py compare /tmp/rows.pkl
"""
import hashlib
import os
import pickle
import sys

import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_clearance as bc
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.model.example_robots import panda_paths
from my_collision_pkg.core.scene.loading import load_scene

FIELDS = ("status", "message", "jacobian_joint_names", "configuration_index", "body_names", "body_types", "shape_ids",
          "subshape_ids", "distance", "points", "points_local", "normals", "jacobian", "smooth", "shape_pairs")

def dump(ans):
    out = {}
    for f in FIELDS:
        v = getattr(ans, f)
        if isinstance(v, np.ndarray):
            if v.dtype == object:
                out[f] = ("obj", v.shape, v.tolist())
            else:
                out[f] = (str(v.dtype), v.shape, v.tobytes())
        else:
            out[f] = ("py", repr(v))
    return out

urdf, srdf = panda_paths()
checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=bc.WORLD))
names = checker.scene.robot.active_joint_names
checker.clearance(names, np.zeros((2, len(names))), 0.5)
sets = bc.drake_sets(checker, names)
record = {}
for (kind, infl), Q in sets.items():
    record[(kind, infl, "single")] = [dump(checker.clearance(names, q, infl)) for q in Q]
    record[(kind, infl, "batch")] = dump(checker.clearance(names, Q, infl))
mode, path = sys.argv[1], sys.argv[2]
if mode == "save":
    pickle.dump(record, open(path, "wb"))
    print("saved", path, hashlib.sha256(pickle.dumps(record)).hexdigest())
else:
    ref = pickle.load(open(path, "rb"))
    bad = 0
    for key in ref:
        a, b = ref[key], record[key]
        if a != b:
            bad += 1
            items = a if isinstance(a, list) else [a]
            items_b = b if isinstance(b, list) else [b]
            for i, (x, y) in enumerate(zip(items, items_b)):
                for f in FIELDS:
                    if x[f] != y[f]:
                        print("DIFF", key, i, f)
                        break
    print("identical" if bad == 0 else f"{bad} sets differ", "rows:",
          {k: len(np.frombuffer(v["distance"][2])) for k, v in record.items() if k[2] == "batch"})
