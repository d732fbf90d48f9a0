"""The flat import paths of the package before the layered tree still work, and warn once.

Each old module is a row of one table (``my_collision_pkg/_moved.py``, served by an import hook that the
package's ``__init__`` installs): importing it warns with a
``MovedModuleWarning`` that names the new home, and every name read through it is the very
object of the new module. Run in subprocesses: the test process may have imported the
shims already (a module warns only on its first import).
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

PACKAGE_DIR = pathlib.Path(__import__("my_collision_pkg").__file__).parent

# old path -> (new home, names callers read through the old path)
OLD_PATHS = {
    "checker": ("core.checks.checker", ["CollisionChecker", "DEFAULT_MAX_CONTACTS", "MotionMode"]),
    "models": ("core.scene.loading", ["load_scene", "panda_paths", "example_robot_data_share"]),
    "contacts": ("core.checks.results", ["Contact", "Explanation", "Status", "Verdict", "BodyType"]),
    "scene": ("core.scene.planning_scene", ["PlanningScene", "CollisionWorld", "AddObject", "SceneObject"]),
    "robot_model": ("core.model.robot_model", ["RobotModel", "Box", "MAX_COORDINATE_M"]),
    "transforms": ("core.model.transforms", ["make_transform", "quaternion_to_matrix"]),
    "errors": ("core.errors", ["CollisionPkgError", "RequestError", "ModelError"]),
    "srdf": ("core.model.srdf", ["parse_srdf", "SemanticModel"]),
    "world_file": ("core.scene.world_file", ["load_world_file"]),
    "motion": ("core.checks.motion", ["MotionMode", "MotionResult", "DEFAULT_TOUCH_TOLERANCE_M"]),
    "narrowphase": ("core.checks.narrowphase", ["pair_distance", "pair_contacts"]),
    "contact_list": ("core.checks.contact_list", ["ContactList", "ContactInterval"]),
    "interval_sweeps": ("core.checks.interval_sweeps", ["interval_sweeps"]),
    "geometry": ("core.geometry.shape_geometry", ["MeshResolver", "build_shape"]),
    "surfaces": ("core.surfaces.contact_surface", ["compute_contact_surface"]),
    "surfaces_report": ("core.surfaces.explanation_surfaces", ["explanation_surfaces"]),
    "pressure_colors": ("viz.style", ["pressure_colormap"]),
    "render": ("viz.render", ["main", "render_report_png"]),
    "launch_arguments": ("tools.launch_arguments", ["ARGUMENTS", "resolve_launch"]),
    "demo": ("tools.demo", ["main"]),
    "client": ("ros.client", ["ValidatorClient"]),
    "node_runtime": ("ros.runtime", ["SERVICE_QOS"]),
    "conversions": ("ros.conversions", []),
    "markers": ("ros.markers", ["report_to_marker_array"]),
    "scene_markers": ("ros.scene_markers", ["scene_objects_marker_array"]),
    "validator_node": ("ros.validator_node", ["main"]),
    "markers_node": ("ros.markers_node", ["main"]),
    "stop_request": ("ros.stop_request", ["install"]),
}

_PROBE = r"""
import importlib, json, sys, warnings
table = json.loads(sys.argv[1])
report = {}
for old, (new, names) in table.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old_module = importlib.import_module("my_collision_pkg." + old)
        new_module = importlib.import_module("my_collision_pkg." + new)
        same = {n: getattr(old_module, n) is getattr(new_module, n) for n in names}
        importlib.import_module("my_collision_pkg." + old)     # served from sys.modules: no second warning
    moved = [str(w.message) for w in caught if type(w.message).__name__ == "MovedModuleWarning"]
    report[old] = {"moved": moved, "same": same}
print(json.dumps(report))
"""


def test_every_shim_is_listed():
    """Every old path of the package's table (``_moved.MOVED``) is in OLD_PATHS (and no listed one is missing),
    with the same new home; no file is left at an old path."""
    from my_collision_pkg._moved import MOVED

    assert MOVED == {old: new for old, (new, _) in OLD_PATHS.items()}
    assert sorted(p.stem for p in PACKAGE_DIR.glob("*.py")) == ["__init__", "_moved"]


def test_old_paths_warn_once_and_forward():
    result = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(OLD_PATHS)], capture_output=True, text=True,
                            timeout=300, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    expected = {old: {"moved": [f"my_collision_pkg.{old} moved to my_collision_pkg.{new}; import it from there"],
                      "same": {name: True for name in names}}
                for old, (new, names) in OLD_PATHS.items()}
    assert report == expected


def test_unknown_name_through_an_old_path_names_both_paths():
    probe = ("import my_collision_pkg.checker as c\n"
             "try:\n    c.no_such_name\nexcept AttributeError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "my_collision_pkg.checker" in result.stdout and "my_collision_pkg.core.checks.checker" in result.stdout
    assert "no_such_name" in result.stdout


def test_python_dash_m_old_demo_path_still_runs():
    """``python -m my_collision_pkg.demo --help`` (the old spelling of the demo) still reaches the demo."""
    result = subprocess.run([sys.executable, "-W", "ignore", "-m", "my_collision_pkg.demo", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--output" in result.stdout
