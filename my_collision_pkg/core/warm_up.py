"""Compile (or load from numba's cache) every kernel the services use, through the public API.

:func:`kernels.warm_up.warm_up <my_collision_pkg.core.kernels.warm_up.warm_up>` calls the
kernels one by one, with the argument types written down there; the motion kernels
(``kernels.advancement``, used by ``checks.sweep``, ``motion`` and ``trajectory``) are not in
it, and a signature that drifts from the one the checks pass compiles again at the first
request. This module instead runs the checker's own public calls on a small built-in scene,
so whatever signatures the real calls use are the ones compiled:

- :func:`warmup_scene` -- a robot given as URDF text (a box, a cylinder, a sphere, a mesh
  link read from a temporary STL file, revolute, prismatic and continuous joints) beside
  world objects of every shape kind (box, sphere, cylinder, capsule, cone, closed convex
  mesh, closed non-convex mesh, open mesh) and an attached object; needs no robot package;
- :func:`warm_up_services` -- check, check_batch, explain (contacts, near misses, contact
  surfaces), the monitor's explain of the current state, check_motion (certified and
  discrete), check_trajectory (both modes, with the contact-interval sweeps) on that
  scene, the same with an occupancy map (the world object ``<octomap>``: coal's tree in
  the predicate, its cells as boxes in the other checks), then a few of the same calls on
  the scene of the checker it is given (the node's own robot and world: its per-world
  caches are built too).

``python -m my_collision_pkg.core.warm_up`` runs it once and prints what it spent: with
``cache=True`` kernels that fills numba's cache, next to each installed kernel module (in
its ``__pycache__``) when that folder is writable, else in numba's user-wide cache
(``NUMBA_CACHE_DIR`` if set). ``make build`` and the CMake install step run it, so that the
first start of the node after a build loads instead of compiling.

Stale caches (:func:`drop_stale_kernel_caches`, run first by ``main``): numba checks a
cached kernel against its own module's source only. A kernel compiled into another module's
kernel (``gjk.lower_bound`` inside ``grid_advance.certify_dyadic``) stays in that module's
cache when only its own module changes, so after such an edit the old code would keep
running. ``main`` therefore keeps a digest of every numba module's source beside the caches
and empties them all when it changes.

This lives beside ``core/kernels`` rather than in it: kernels import only numpy, numba and
math (test/core/test_layering.py), and this module builds scenes and checkers.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import hashlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import trimesh

from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.interval_sweeps import interval_sweeps
from my_collision_pkg.core.checks.results import Explanation, MotionMode, Status
from my_collision_pkg.core.kernels.warm_up import warm_up
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.shapes import Box, Capsule, Cone, Cylinder, Sphere, TriangleMesh
from my_collision_pkg.core.perception.occupancy import OccupancyMap
from my_collision_pkg.core.scene.objects import AddObject, ObjectShape, SceneObject
from my_collision_pkg.core.scene.planning_scene import PlanningScene
from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces

# The robot: base box at the origin; a prismatic carriage along x carries the arm (cylinder
# and sphere), a mesh tool and a continuous wrist (box). At slide = 0 it is clear of the
# world; at slide = CLUSTER_X_M its links are inside the cluster of world objects.
_URDF = """<robot name="warm_up_robot">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="carriage"/>
  <link name="arm">
    <collision><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.05" length="0.3"/></geometry></collision>
    <collision><origin xyz="0 0 0.45"/><geometry><sphere radius="0.06"/></geometry></collision>
  </link>
  <link name="tool"><collision><geometry><mesh filename="{tool_mesh}"/></geometry></collision></link>
  <link name="wrist"><collision><geometry><box size="0.08 0.08 0.04"/></geometry></collision></link>
  <joint name="slide" type="prismatic">
    <parent link="base"/><child link="carriage"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="1.5" effort="1" velocity="1"/>
  </joint>
  <joint name="turn" type="revolute">
    <parent link="carriage"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3.0" upper="3.0" effort="1" velocity="1"/>
  </joint>
  <joint name="tool_mount" type="fixed">
    <parent link="arm"/><child link="tool"/><origin xyz="0.1 0 0.3"/>
  </joint>
  <joint name="spin" type="continuous">
    <parent link="arm"/><child link="wrist"/><origin xyz="0 0 0.55"/><axis xyz="0 0 1"/>
  </joint>
</robot>
"""
CLUSTER_X_M = 1.0
JOINTS = ("slide", "turn", "spin")
CLEAR = (0.0, 0.0, 0.0)
INSIDE = (CLUSTER_X_M, 0.3, 0.5)
# Contact surfaces are computed against these only: a primitive, a closed convex and a
# closed non-convex mesh (each pair costs tens of milliseconds of Python).
SURFACE_OBJECTS = frozenset({"wu_box", "wu_convex_mesh", "wu_closed_mesh"})
# The occupancy map of the octomap step: a 10 cm block of 2 cm cells where the wrist is at INSIDE.
OCTOMAP_RESOLUTION_M = 0.02
OCTOMAP_BLOCK = ((CLUSTER_X_M - 0.05, -0.05, 0.5), (CLUSTER_X_M + 0.05, 0.05, 0.6))


def _pose(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _mesh(mesh: trimesh.Trimesh) -> TriangleMesh:
    return TriangleMesh(np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=np.int64))


def _world_objects() -> list[SceneObject]:
    """One world object per shape kind, all overlapping the arm at ``INSIDE``; one attached object."""
    x = CLUSTER_X_M
    tetra = trimesh.Trimesh([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]],
                            [[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    two_blocks = trimesh.util.concatenate([trimesh.creation.box((0.1, 0.1, 0.3)),
                                           trimesh.creation.box((0.3, 0.08, 0.08), _pose(0.1, 0.0, -0.1))])
    open_box = trimesh.creation.box((0.15, 0.15, 0.15))
    open_box = trimesh.Trimesh(open_box.vertices, open_box.faces[2:])     # one side missing: no volume
    shapes = {
        "wu_box": (Box((0.3, 0.3, 0.05)), _pose(x, 0.0, 0.25)),
        "wu_sphere": (Sphere(0.08), _pose(x, 0.0, 0.45)),
        "wu_cylinder": (Cylinder(0.04, 0.4), _pose(x + 0.05, 0.0, 0.3)),
        "wu_capsule": (Capsule(0.03, 0.3), _pose(x - 0.05, 0.0, 0.3)),
        "wu_cone": (Cone(0.06, 0.2), _pose(x, 0.05, 0.4)),
        "wu_convex_mesh": (_mesh(tetra), _pose(x - 0.1, -0.1, 0.2)),
        "wu_closed_mesh": (_mesh(two_blocks), _pose(x + 0.05, 0.05, 0.35)),
        "wu_open_mesh": (_mesh(open_box), _pose(x + 0.1, 0.0, 0.55)),
    }
    objects = [SceneObject(name, (ObjectShape(spec),), T) for name, (spec, T) in shapes.items()]
    objects.append(SceneObject("wu_attached", (ObjectShape(Capsule(0.02, 0.1)),), _pose(0.0, 0.0, 0.05),
                               link="wrist", touch_links=("arm",)))
    return objects


def warmup_occupancy() -> OccupancyMap:
    """The octomap step's map: the cells of a block of points around the wrist at ``INSIDE``."""
    lo, hi = np.array(OCTOMAP_BLOCK[0]), np.array(OCTOMAP_BLOCK[1])
    axes = [np.linspace(a, b, 6) for a, b in zip(lo, hi)]
    return OccupancyMap.from_points(np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3),
                                    OCTOMAP_RESOLUTION_M)


def warmup_scene(folder: str) -> PlanningScene:
    """The built-in scene, its tool mesh written into ``folder`` (which must outlive the scene's use)."""
    tool = os.path.join(folder, "warm_up_tool.stl")
    trimesh.creation.box((0.06, 0.06, 0.06)).export(tool)
    scene = PlanningScene(RobotModel.from_urdf_string(_URDF.format(tool_mesh=tool)), allow_adjacent=True)
    scene.apply([AddObject(obj) for obj in _world_objects()])
    return scene


def _exercise(checker: CollisionChecker, names, clear: np.ndarray, inside: np.ndarray) -> None:
    """Every public check the services make, once each, on ``checker``'s scene, from ``clear`` to ``inside``."""
    scene = checker.scene
    world = scene.world
    checker.check(names, np.array(clear))
    checker.check(names, np.array(inside), pad_self_collisions=True)
    checker.check_batch(names, np.stack([clear, inside, 0.5 * (clear + inside)]).ravel(), world=world)
    explanation = checker.explain(names, np.array(inside), contact_distance=0.05, world=world)
    explanation_surfaces(world, _few_kinds(explanation))
    checker.explain(world.robot.active_joint_names, scene.current_positions, world=world)   # the monitor's call
    checker.check_motion(names, clear, inside, mode=MotionMode.CERTIFIED, world=world)
    checker.check_motion(names, clear, clear + 1e-3, mode=int(MotionMode.CERTIFIED), world=world)   # no contact
    # the planner's bool check: a short free motion is settled by its one compiled call (sweep.one_call_search)
    checker.check_motion(names, clear, clear + 1e-3, mode=int(MotionMode.CERTIFIED_BOOL), world=world)
    checker.check_motion(names, clear, inside, mode=MotionMode.DISCRETE, max_step=0.05, world=world)
    points = np.stack([clear, 0.5 * (clear + inside), inside])
    for influence_m in (0.05, 0.5):             # clearance: near, penetrating and far pairs, meshes and hulls
        checker.clearance(names, points, influence_m, world=world)
    checker.clearance(world.robot.active_joint_names, scene.current_positions, 0.3, max_rows_per_configuration=1,
                      world=world)          # the ~/clearance monitor's call
    times_s = np.array([0.0, 0.5, 1.0])
    for mode, step, stop in ((MotionMode.CERTIFIED, 0.0, True), (MotionMode.DISCRETE, 0.05, False)):
        result = checker.check_trajectory(names, points, times_s, mode=mode, max_step=step,
                                          stop_at_first_contact=stop, world=world)
        if result.status != Status.INVALID_REQUEST and result.contact_lists:
            interval_sweeps(checker, names, points, times_s, result.contact_lists)


def _few_kinds(explanation: Explanation) -> Explanation:
    """The contacts of ``explanation`` with the objects of SURFACE_OBJECTS only (surfaces cost per pair)."""
    keep = tuple(c for c in explanation.contacts if set(c.link_names) & SURFACE_OBJECTS)
    return dataclasses.replace(explanation, contacts=keep or explanation.contacts)


def _own_scene_configurations(checker: CollisionChecker) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Two nearby configurations inside the limits of ``checker``'s robot (middle of each range)."""
    robot = checker.scene.robot
    lower, upper = np.asarray(robot.lower_limits, dtype=float), np.asarray(robot.upper_limits, dtype=float)
    bounded = np.isfinite(lower) & np.isfinite(upper)
    middle, step = np.zeros(len(lower)), np.full(len(lower), 0.02)
    middle[bounded] = 0.5 * (lower[bounded] + upper[bounded])
    step[bounded] = np.minimum(0.02, 0.25 * (upper[bounded] - lower[bounded]))
    return list(robot.active_joint_names), middle, middle + step


def warm_up_services(checker: CollisionChecker | None = None, *,
                     should_stop: Callable[[], bool] = lambda: False) -> dict[str, float]:
    """Run every check of the services once, so that every kernel they call is compiled or loaded.

    First on the built-in scene (:func:`warmup_scene`: every shape kind and joint kind),
    then, when ``checker`` is given, a configuration check, an explain, a short motion in
    each mode and a short trajectory on its own scene. Answers are not looked at: the
    point is the compiled code and the per-world caches. ``should_stop()`` is asked between
    the steps; once true the rest is skipped.

    Returns
    -------
    dict
        Seconds spent: ``"built_in"`` (the built-in scene, its checker and its calls) and
        ``"own_scene"`` (0 without ``checker``).
    """
    spent = {"built_in": 0.0, "own_scene": 0.0}
    with tempfile.TemporaryDirectory(prefix="my_collision_pkg_warm_up_") as folder:
        start = time.perf_counter()
        scene = warmup_scene(folder)
        options = {}
        if checker is not None:
            options = {"max_contacts": checker.max_contacts, "contacts_per_pair": checker.contacts_per_pair}
        built_in = CollisionChecker(scene, **options)
        names, clear, inside = list(JOINTS), np.array(CLEAR), np.array(INSIDE)

        def padded() -> None:
            scene.set_padding(default_padding_m=0.002)        # padded pairs: the distance queries
            built_in.check(names, inside)
            built_in.explain(names, clear, contact_distance=0.05)

        def octomap() -> None:
            scene.set_occupancy(warmup_occupancy())           # the world object '<octomap>'
            _exercise(built_in, names, clear, inside)
            scene.set_occupancy(None)
        for step in (lambda: _exercise(built_in, names, clear, inside), padded, octomap):
            if should_stop():
                return spent
            step()
        spent["built_in"] = time.perf_counter() - start
    if checker is None:
        return spent
    start = time.perf_counter()
    names, a, b = _own_scene_configurations(checker)
    world = checker.scene.world

    def configurations() -> None:
        checker.check(names, np.array(a))
        checker.check_batch(names, np.stack([a, b]).ravel(), world=world)
        explanation = checker.explain(names, np.array(a), world=world)
        if explanation.contacts:
            explanation_surfaces(world, explanation)
        checker.clearance(names, np.stack([a, b]), 0.3, world=world)

    def motions() -> None:
        checker.check_motion(names, a, b, mode=MotionMode.CERTIFIED, world=world)
        checker.check_motion(names, a, b, mode=MotionMode.DISCRETE, max_step=0.01, world=world)
        checker.check_trajectory(names, np.stack([a, b, a]), np.array([0.0, 1.0, 2.0]), world=world)
    for step in (configurations, motions):
        if should_stop():
            return spent
        step()
    spent["own_scene"] = time.perf_counter() - start
    return spent


# the digest of the numba modules' sources, kept in each of their __pycache__ folders
SOURCES_STAMP = "numba-sources.sha256"
_IMPORTS_NUMBA = re.compile(r"^(from numba import |import numba\b)", re.MULTILINE)


def numba_modules(package_dir: str | None = None) -> list[str]:
    """The package's module files (sorted paths) that compile with numba: those that import it at
    module level (a line ``from numba import ...`` or ``import numba``)."""
    package_dir = package_dir or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for path in glob.glob(os.path.join(package_dir, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as stream:
            if _IMPORTS_NUMBA.search(stream.read()):
                found.append(path)
    return sorted(found)


def drop_stale_kernel_caches(modules: list[str] | None = None) -> int:
    """Empty numba's caches next to ``modules`` (default :func:`numba_modules`) when their sources,
    taken together, are not those the caches were made from; returns the files removed.

    The digest of the sources is kept as ``SOURCES_STAMP`` in each module's ``__pycache__``;
    a folder whose stamp differs (or is missing while it holds cached kernels) loses its
    ``*.nbi`` and ``*.nbc`` files and gets the new stamp. Caches elsewhere (``NUMBA_CACHE_DIR``,
    numba's user-wide folder when ``__pycache__`` is not writable) are left alone.
    """
    modules = numba_modules() if modules is None else sorted(modules)
    digest = hashlib.sha256()
    for path in modules:
        digest.update(os.path.basename(path).encode())
        with open(path, "rb") as stream:
            digest.update(stream.read())
    stamp = digest.hexdigest()
    removed = 0
    for folder in sorted({os.path.join(os.path.dirname(path), "__pycache__") for path in modules}):
        stamp_path = os.path.join(folder, SOURCES_STAMP)
        try:
            with open(stamp_path, encoding="utf-8") as stream:
                if stream.read().strip() == stamp:
                    continue
        except OSError:
            pass
        cached = glob.glob(os.path.join(folder, "*.nbi")) + glob.glob(os.path.join(folder, "*.nbc"))
        try:
            for path in cached:
                os.remove(path)
                removed += 1
            os.makedirs(folder, exist_ok=True)
            with open(stamp_path, "w", encoding="utf-8") as stream:
                stream.write(stamp + "\n")
        except OSError:                 # not writable: numba does not cache there either
            continue
    return removed


def main(argv: list[str] | None = None) -> int:
    """``python -m my_collision_pkg.core.warm_up``: warm up once on the built-in scene, print the time."""
    parser = argparse.ArgumentParser(prog="python -m my_collision_pkg.core.warm_up",
                                     description="Compile (or load from numba's cache) every kernel the "
                                                 "collision services use, on a small built-in scene.")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    dropped = drop_stale_kernel_caches()
    warm_up()                                         # the kernels of kernels.warm_up, one by one
    kernels_s = time.perf_counter() - start
    spent = warm_up_services()
    if not args.quiet:
        from numba.core.config import CACHE_DIR
        where = CACHE_DIR or "__pycache__ next to each kernel module (numba's user-wide cache if not writable)"
        stale = f"; {dropped} cached kernel files of older sources removed first" if dropped else ""
        print(f"warm_up: kernels {kernels_s:.1f} s, service calls {spent['built_in']:.1f} s, "
              f"total {time.perf_counter() - start:.1f} s; numba cache: {where}{stale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
