"""What the labelling tests share: two small worlds for the Panda and the single-process reference labels."""
from __future__ import annotations

import os

import numpy as np

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.results import MotionMode
from my_collision_pkg.core.scene.loading import load_scene, panda_paths

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE_AND_POST = os.path.join(REPO, "config", "panda_world.yaml")
SHELF = """frame_id: panda_link0
objects:
  - id: shelf
    pose: {position: [0.45, -0.3, 0.45]}
    shapes:
      - {type: box, size: [0.3, 0.6, 0.03]}
  - id: back
    pose: {position: [-0.4, 0.0, 0.5]}
    shapes:
      - {type: box, size: [0.05, 1.2, 1.0]}
"""


def write_worlds(folder) -> list[str]:
    """The two worlds of the tests: the demo's table and post, and a shelf with a back wall."""
    shelf = os.path.join(folder, "shelf.yaml")
    with open(shelf, "w") as stream:
        stream.write(SHELF)
    return [TABLE_AND_POST, shelf]


def reference_checker(world_path: str) -> CollisionChecker:
    urdf, srdf = panda_paths()
    return CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path=world_path), batch_workers=1)


def reference_edges(checker: CollisionChecker, names, edges: np.ndarray) -> dict[str, np.ndarray]:
    """check_motion (certified) per edge, in one process: the columns the tool writes for edges."""
    rows = [checker.check_motion(names, s, g, mode=MotionMode.CERTIFIED) for s, g in edges]
    return {"valid": np.array([r.valid for r in rows]), "status": np.array([int(r.status) for r in rows]),
            "cc_time": np.array([r.cc_time if r.cc_time >= 0 else np.nan for r in rows]),
            "pair_0": np.array([r.contacts[0].link_names[0] if r.contacts else None for r in rows], dtype=object),
            "min_clearance_m": np.array([r.min_clearance_m for r in rows])}


def reference_clearance(checker: CollisionChecker, names, q: np.ndarray, influence_m: float):
    """The smallest clearance row of each configuration of q (N, A), in one process: (distance (N,),
    Jacobian (N, A), the rows) as the tool writes them (NaN where a configuration has no row)."""
    rows = checker.clearance(names, q, influence_m, max_rows_per_configuration=1)
    distance = np.full(len(q), np.nan)
    distance[rows.configuration_index] = rows.distance
    gradient = np.full((len(q), len(names)), np.nan)
    gradient[rows.configuration_index] = rows.jacobian
    return distance, gradient, rows


def column(table, name: str) -> np.ndarray:
    """A column as numpy (lists of floats as (n, k))."""
    values = table.column(name).combine_chunks()
    import pyarrow as pa
    if pa.types.is_fixed_size_list(values.type):
        return values.flatten().to_numpy(zero_copy_only=False).reshape(len(values), values.type.list_size)
    return values.to_numpy(zero_copy_only=False)


def assert_same_labels(a, b) -> None:
    """Two label tables hold the same columns with the same values, bit for bit (NaN included)."""
    assert a.column_names == b.column_names and a.num_rows == b.num_rows
    for name in a.column_names:
        x, y = column(a, name), column(b, name)
        if x.dtype == object:
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert x.tobytes() == y.tobytes(), name
