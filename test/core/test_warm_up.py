"""core.warm_up: after warm_up_services, the calls the services make compile (or load) nothing more
(with an occupancy map too).

Run in a fresh interpreter each (the pytest process holds the signatures earlier tests
compiled, which would hide a signature the warm-up misses).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 900.0       # an empty numba cache compiles everything: minutes on a loaded machine

# The node's calls (ros/validator_node.py): request objects as conversions.check_request_from_msg
# makes them, positions as numpy views of message arrays (array.array of float64).
SCRIPT = r"""
import array, json, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from test_warm_up import kernel_signatures as signatures
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.interval_sweeps import interval_sweeps
from my_collision_pkg.core.checks.request import CheckRequest
from my_collision_pkg.core.checks.results import MotionMode
from my_collision_pkg.core.scene.loading import load_scene, panda_paths
from my_collision_pkg.core.surfaces.explanation_surfaces import explanation_surfaces
from my_collision_pkg.core.warm_up import warm_up_services

urdf, srdf = panda_paths()
scene = load_scene(urdf_path=urdf, srdf_path=srdf, world_path=sys.argv[1])
checker = CollisionChecker(scene)
warm_up_services(checker)
before = signatures()

arm = [f"panda_joint{i}" for i in range(1, 8)]
free = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
into_table = [0.0, 1.5, 0.0, -0.5, 0.0, 1.571, 0.785]
other = [1.5, 0.3, 0.5, -1.5, 0.8, 2.5, -0.5]
def msg_array(values):
    return np.asarray(array.array("d", values), dtype=float)
world = scene.world
request = CheckRequest(world=world)
explain_request = CheckRequest(contact_distance=0.02, max_contacts=None, world=world)
checker.check(arm, msg_array(free), request=request)
checker.check(arm, msg_array(into_table), request=request)
checker.check_batch(arm, msg_array(free + into_table + other), max_batch=5000, request=request)
explanation = checker.explain(arm, msg_array(into_table), request=explain_request)
explanation_surfaces(world, explanation)
checker.explain(world.robot.active_joint_names, scene.current_positions, world=world)
for mode, step in ((int(MotionMode.CERTIFIED), 0.0), (int(MotionMode.DISCRETE), 0.01)):
    checker.check_motion(arm, msg_array(free), msg_array(other), mode=mode, max_step=step, request=explain_request)
    checker.check_motion(arm, msg_array(free), msg_array(into_table), mode=mode, max_step=step, request=explain_request)
for goal in (other, into_table):                     # the node's mode CERTIFIED_BOOL (issue 37)
    checker.check_motion(arm, msg_array(free), msg_array(goal), mode=int(MotionMode.CERTIFIED_BOOL), request=request)
points = np.array([free, other, into_table, free], dtype=float)
times_s = np.array([0.0, 1.0, 2.0, 3.0])
for mode, step in ((int(MotionMode.CERTIFIED), 0.0), (int(MotionMode.DISCRETE), 0.01)):
    for stop in (True, False):
        result = checker.check_trajectory(arm, points, times_s, mode=mode, max_step=step, stop_at_first_contact=stop,
                                          request=request)
        interval_sweeps(checker, arm, points, times_s, result.contact_lists)
for influence in (0.05, 0.5):
    checker.clearance(arm, msg_array(free + into_table + other), influence, request=request)
    checker.clearance(world.robot.active_joint_names, scene.current_positions, influence,
                      max_rows_per_configuration=1, world=world)
# an occupancy map (the world object '<octomap>'): a block of points where the arm reaches the table
from my_collision_pkg.core.perception.occupancy import OccupancyMap
axes = [np.linspace(a, b, 9) for a, b in ((0.3, 0.7), (-0.2, 0.2), (0.0, 0.3))]
scene.set_occupancy(OccupancyMap.from_points(np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3), 0.02))
world = scene.world
request = CheckRequest(world=world)
explain_request = CheckRequest(contact_distance=0.02, max_contacts=None, world=world)
checker.check(arm, msg_array(into_table), request=request)
checker.check_batch(arm, msg_array(free + into_table + other), max_batch=5000, request=request)
explanation = checker.explain(arm, msg_array(into_table), request=explain_request)
octomap_contacts = sum("<octomap>" in c.link_names for c in explanation.contacts)
for mode, step in ((int(MotionMode.CERTIFIED), 0.0), (int(MotionMode.DISCRETE), 0.01)):
    checker.check_motion(arm, msg_array(free), msg_array(into_table), mode=mode, max_step=step, request=explain_request)
checker.check_trajectory(arm, points, times_s, request=request)
checker.clearance(arm, msg_array(free + into_table), 0.05, request=request)
after = signatures()
new = {name: sorted(after[name] - before.get(name, set())) for name in after if after[name] - before.get(name, set())}
print(json.dumps({"new": new, "dispatchers": len(after), "signatures": sum(len(v) for v in after.values()),
                  "octomap_contacts": octomap_contacts}))
"""


def test_after_the_warm_up_the_services_calls_add_no_compiled_signature():
    run = subprocess.run([sys.executable, "-c", SCRIPT, os.path.join(REPO, "config", "panda_world.yaml"),
                          os.path.join(REPO, "test", "core")], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["dispatchers"] > 20 and report["signatures"] > 20     # the scan sees the kernels
    assert report["new"] == {}, f"signatures the warm-up did not compile: {report['new']}"
    assert report["octomap_contacts"] > 0          # the octomap calls did reach the map's cells


def test_the_entry_point_warms_up_on_its_built_in_scene():
    run = subprocess.run([sys.executable, "-m", "my_collision_pkg.core.warm_up"], capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("warm_up: kernels") and "numba cache:" in run.stdout


def test_the_built_in_scene_has_every_shape_kind(tmp_path):
    from my_collision_pkg.core.kernels.codes import (KIND_BOX, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_CYLINDER,
                                                     KIND_MESH, KIND_OPEN_MESH, KIND_SPHERE)
    from my_collision_pkg.core.warm_up import warmup_scene
    world = warmup_scene(str(tmp_path)).world
    kinds = {entry.geometry.solid_kind for entry in world.shapes}
    assert kinds >= {KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_CONE, KIND_CONVEX, KIND_MESH,
                     KIND_OPEN_MESH}
    assert any(entry.on_robot and entry.geometry.solid_kind == KIND_CONVEX for entry in world.shapes)
    assert world.robot.active_joint_names == ("slide", "turn", "spin") or \
        list(world.robot.active_joint_names) == ["slide", "turn", "spin"]


@pytest.mark.parametrize("stop_after", [0, 1])
def test_warm_up_services_stops_when_asked(stop_after):
    from my_collision_pkg.core.warm_up import warm_up_services
    asked = []

    def should_stop():
        asked.append(1)
        return len(asked) > stop_after
    spent = warm_up_services(should_stop=should_stop)
    assert spent["own_scene"] == 0.0 and len(asked) == stop_after + 1


def _tree(tmp_path, kernel_text: str):
    """A package folder with one numba module (``kernels/k.py``), one plain module and cached kernels."""
    (tmp_path / "kernels" / "__pycache__").mkdir(parents=True)
    (tmp_path / "kernels" / "k.py").write_text(kernel_text)
    (tmp_path / "plain.py").write_text("import numpy\n# numba is named here, not imported\n")
    return tmp_path / "kernels" / "__pycache__"


def _cache_files(cache):
    return sorted(p.name for p in cache.iterdir() if p.suffix in (".nbi", ".nbc"))


def test_numba_modules_are_the_modules_that_import_numba(tmp_path):
    from my_collision_pkg.core.warm_up import numba_modules
    _tree(tmp_path, "from numba import njit\n")
    assert numba_modules(str(tmp_path)) == [str(tmp_path / "kernels" / "k.py")]
    # the project's own: the kernels, and not this module (it names numba only inside a function)
    own = [os.path.relpath(p, os.path.join(REPO, "my_collision_pkg")) for p in
           numba_modules(os.path.join(REPO, "my_collision_pkg"))]
    assert "core/kernels/grid_advance.py" in own and "core/kernels/gjk.py" in own
    assert "core/warm_up.py" not in own


def test_stale_kernel_caches_are_dropped_when_a_numba_module_changes(tmp_path):
    """numba checks a cached kernel against its own module only: a kernel compiled into another
    module's kernel stays there when its module changes, so every cache goes when any does."""
    from my_collision_pkg.core.warm_up import SOURCES_STAMP, drop_stale_kernel_caches
    cache = _tree(tmp_path, "from numba import njit\nVALUE = 1\n")
    modules = [str(tmp_path / "kernels" / "k.py")]
    for name in ("k.f-1.py311.nbi", "k.f-1.py311.1.nbc"):
        (cache / name).write_text("old")
    assert drop_stale_kernel_caches(modules) == 2          # no stamp yet: nothing known about these
    assert _cache_files(cache) == [] and (cache / SOURCES_STAMP).exists()
    (cache / "k.f-1.py311.nbi").write_text("new")           # compiled from the current sources
    assert drop_stale_kernel_caches(modules) == 0
    assert _cache_files(cache) == ["k.f-1.py311.nbi"]
    (tmp_path / "kernels" / "k.py").write_text("from numba import njit\nVALUE = 2\n")
    assert drop_stale_kernel_caches(modules) == 1
    assert _cache_files(cache) == []


# Robots far smaller than the Panda: one moving sphere on a prismatic joint against one world
# box (one checked pair), and the slider of core_scenes (three links, two prismatic joints). A
# kernel argument that is a view (a column of the pair table, say) has numba layout 'A' on the
# Panda but 'C' when it holds a single element (numpy calls such a view contiguous): a new
# signature, compiled in the request path (103 s for a first certified motion on a loaded
# machine, seen here). After the built-in warm-up alone, their calls must compile nothing.
SMALL_ROBOTS_SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_warm_up import kernel_signatures
from core_scenes import SLIDER_URDF
from my_collision_pkg.core.checks.checker import CollisionChecker
from my_collision_pkg.core.checks.interval_sweeps import interval_sweeps
from my_collision_pkg.core.checks.results import MotionMode
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.shapes import Box
from my_collision_pkg.core.model.transforms import make_transform
from my_collision_pkg.core.scene.planning_scene import AddObject, ObjectShape, PlanningScene, SceneObject
from my_collision_pkg.core.warm_up import warm_up_services

ONE_SPHERE = '''<robot name="one_sphere"><link name="base"/><link name="ball">
<collision><geometry><sphere radius="0.1"/></geometry></collision></link>
<joint name="slide" type="prismatic"><parent link="base"/><child link="ball"/><axis xyz="1 0 0"/>
<limit lower="-2" upper="2" effort="1" velocity="1"/></joint></robot>'''

warm_up_services()
before = kernel_signatures()
for urdf, joint in ((ONE_SPHERE, "slide"), (SLIDER_URDF, "slide_x")):
    scene = PlanningScene(RobotModel.from_urdf_string(urdf))
    scene.apply([AddObject(SceneObject("wall", (ObjectShape(Box((0.1, 1.0, 1.0))),),
                                       make_transform(translation_m=(1.0, 0.0, 0.0))))])
    checker = CollisionChecker(scene, batch_workers=1)
    names = [joint]
    for q in ([0.0], [0.95]):
        checker.check(names, np.array(q))
        checker.explain(names, np.array(q), contact_distance=0.05)
    checker.check_batch(names, np.array([[0.0], [0.95], [-0.5]]))
    for mode, step in ((int(MotionMode.CERTIFIED), 0.0), (int(MotionMode.DISCRETE), 0.01)):
        for goal in (0.5, 1.5):
            checker.check_motion(names, np.array([0.0]), np.array([goal]), mode=mode, max_step=step)
    for goal in (0.01, 0.5, 1.5):                       # the planner's bool check (issue 37)
        checker.is_motion_valid(names, np.array([0.0]), np.array([goal]))
        checker.motion_validity(names).is_motion_valid(np.array([0.0]), np.array([goal]))
    points, times_s = np.array([[0.0], [0.5], [1.5], [0.0]]), np.array([0.0, 1.0, 2.0, 3.0])
    for stop in (True, False):
        result = checker.check_trajectory(names, points, times_s, stop_at_first_contact=stop)
        interval_sweeps(checker, names, points, times_s, result.contact_lists)
    for influence in (0.05, 0.5):
        checker.clearance(names, np.array([[0.0], [0.95]]), influence)
after = kernel_signatures()
new = {name: sorted(after[name] - before.get(name, set())) for name in after if after[name] - before.get(name, set())}
print(json.dumps({"new": new}))
"""


def kernel_signatures() -> dict[str, set[str]]:
    """Every compiled kernel of core/kernels and its signatures in this process."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import my_collision_pkg.core.kernels as kernels_package
    found = {}
    for info in pkgutil.iter_modules(kernels_package.__path__):
        module = importlib.import_module(f"{kernels_package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher):
                found[f"{info.name}.{name}"] = {str(s) for s in value.overloads}
    return found


def test_small_robots_compile_nothing_after_the_built_in_warm_up():
    tests = os.path.join(REPO, "test", "core")
    run = subprocess.run([sys.executable, "-c", SMALL_ROBOTS_SCRIPT, tests], capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["new"] == {}, f"signatures the built-in warm-up did not compile: {report['new']}"
