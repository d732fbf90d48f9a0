"""Random valid edges of a robot, the same for every run of a seed (a helper of the benchmarks)."""
from __future__ import annotations

import numpy as np


def valid_edges(checker, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Up to ``n`` pairs (q0, q1) of valid configurations drawn uniformly within the joint limits."""
    robot = checker.scene.robot
    rng = np.random.default_rng(seed)
    samples = rng.uniform(robot.lower_limits, robot.upper_limits, size=(10 * n, len(robot.lower_limits)))
    valid, _ = checker.check_batch(robot.active_joint_names, samples)
    good = samples[valid]
    return list(zip(good[0:2 * n:2], good[1:2 * n:2]))
