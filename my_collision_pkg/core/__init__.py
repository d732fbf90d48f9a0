"""The ROS-free collision library.

The names most callers need, importable from here (each loads its module on first use)::

    from my_collision_pkg.core import load_scene, panda_paths, CollisionChecker, MotionMode

    urdf, srdf = panda_paths()
    checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf, world_path="config/panda_world.yaml"))
    checker.check(["panda_joint2"], [1.6])                 # Verdict(valid, status, message)
    checker.explain(["panda_joint2"], [1.6]).contacts      # who touches, where, how deeply
    checker.check_motion(["panda_joint1"], [0.0], [1.0])   # certified: no contact skipped

Subpackages: ``model`` (robot, SRDF, transforms), ``scene`` (objects, worlds, loading),
``geometry`` (collision geometry of shapes), ``checks`` (the checks and their results),
``surfaces`` (contact surfaces), ``kernels`` (compiled code).
"""
from __future__ import annotations

import importlib

_HOMES = {
    "load_scene": "my_collision_pkg.core.scene.loading",
    "panda_paths": "my_collision_pkg.core.scene.loading",
    "PlanningScene": "my_collision_pkg.core.scene.planning_scene",
    "CollisionChecker": "my_collision_pkg.core.checks.checker",
    "MotionMode": "my_collision_pkg.core.checks.motion",
    "Status": "my_collision_pkg.core.checks.results",
    "Verdict": "my_collision_pkg.core.checks.results",
    "Explanation": "my_collision_pkg.core.checks.results",
    "Contact": "my_collision_pkg.core.checks.results",
    "CollisionPkgError": "my_collision_pkg.core.errors",
    "RequestError": "my_collision_pkg.core.errors",
    "ModelError": "my_collision_pkg.core.errors",
    "SceneError": "my_collision_pkg.core.errors",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'my_collision_pkg.core' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
