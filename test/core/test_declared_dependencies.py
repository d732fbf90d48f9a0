"""Every third-party module the package imports is declared where users install from.

A ROS user runs ``rosdep install`` (package.xml's keys, rosdistro's rules plus ours in
``rosdep/my_collision_pkg.yaml``); a user without ROS gets the pins of ``requirements/``.
The scan reads every import of ``my_collision_pkg/`` (AST: module level and inside
functions, optional ones too) and names each top-level module that is neither the standard
library nor the package itself; :data:`DECLARED` says which PyPI distribution and which
rosdep key provide it. The test fails, naming the module, when an import is not in the
table, its key is not in package.xml, our key is not defined in rosdep/, or its
distribution has no ``==`` pin in requirements/. The last tests run the same check on
modified copies (a key removed, a pin removed, a new import) to show that it can fail.
"""
from __future__ import annotations

import ast
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "my_collision_pkg"

ROSDISTRO, OURS = "rosdistro", "ours"
# top-level module -> (PyPI distribution pinned in requirements/ or None, rosdep key, where the key is defined)
DECLARED: dict[str, tuple[str | None, str, str]] = {
    "numpy": ("numpy", "python3-numpy", ROSDISTRO),
    "scipy": ("scipy", "python3-scipy", ROSDISTRO),
    "yaml": ("PyYAML", "python3-yaml", ROSDISTRO),
    "matplotlib": ("matplotlib", "python3-matplotlib", ROSDISTRO),
    "mpl_toolkits": ("matplotlib", "python3-matplotlib", ROSDISTRO),
    "trimesh": ("trimesh", "python3-trimesh-pip", ROSDISTRO),
    "fcl": ("python-fcl", "python-fcl-pip", ROSDISTRO),
    "coal": ("coal", "coal", ROSDISTRO),
    "urdf_parser_py": ("urdf-parser-py", "urdfdom_py", ROSDISTRO),
    "xacro": ("xacro", "xacro", ROSDISTRO),
    "numba": ("numba", "python3-numba-pip", OURS),
    "manifold3d": ("manifold3d", "python3-manifold3d-pip", OURS),
    "octomap": ("octomap-python", "python3-octomap-python-pip", OURS),
    "viser": ("viser", "python3-viser-pip", OURS),
    "ompl": ("ompl", "python3-ompl-pip", OURS),
    "pyarrow": ("pyarrow", "python3-pyarrow-pip", OURS),
    "ray": ("ray", "python3-ray-pip", OURS),
    "ament_index_python": ("ros-jazzy-ament-index-python", "ament_index_python", ROSDISTRO),
    "rclpy": ("ros-jazzy-rclpy", "rclpy", ROSDISTRO),
    "rcl_interfaces": ("ros-jazzy-rcl-interfaces", "rcl_interfaces", ROSDISTRO),
    "builtin_interfaces": ("ros-jazzy-builtin-interfaces", "builtin_interfaces", ROSDISTRO),
    "std_msgs": ("ros-jazzy-std-msgs", "std_msgs", ROSDISTRO),
    "geometry_msgs": ("ros-jazzy-geometry-msgs", "geometry_msgs", ROSDISTRO),
    "sensor_msgs": ("ros-jazzy-sensor-msgs", "sensor_msgs", ROSDISTRO),
    "shape_msgs": ("ros-jazzy-shape-msgs", "shape_msgs", ROSDISTRO),
    "trajectory_msgs": ("ros-jazzy-trajectory-msgs", "trajectory_msgs", ROSDISTRO),
    "visualization_msgs": ("ros-jazzy-visualization-msgs", "visualization_msgs", ROSDISTRO),
    # optional (the MoveIt bridge, docs/moveit.md): no wheel on PyPI, a conditional key in package.xml
    "moveit_msgs": (None, "moveit_msgs", ROSDISTRO),
}


def third_party_imports(package_dir: pathlib.Path) -> dict[str, list[str]]:
    """Top-level module -> ``path:line`` of each import of it in the package (stdlib and own left out)."""
    found: dict[str, list[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in (PACKAGE, "__future__"):
                    continue
                found.setdefault(top, []).append(f"{path.relative_to(package_dir.parent)}:{node.lineno}")
    return found


def package_xml_keys(text: str) -> set[str]:
    root = ET.fromstring(text)
    tags = ("depend", "exec_depend", "build_depend", "test_depend", "build_export_depend")
    return {element.text.strip() for tag in tags for element in root.iter(tag) if element.text}


def our_rosdep_keys(text: str) -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9_.-]+):\s*$", text, flags=re.MULTILINE))


def pinned_distributions(texts: list[str]) -> set[str]:
    pins = set()
    for text in texts:
        for line in text.splitlines():
            match = re.match(r"^([A-Za-z0-9_.-]+)==\S+", line.strip())
            if match:
                pins.add(_normal(match.group(1)))
    return pins


def _normal(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def undeclared(imports: dict[str, list[str]], package_xml: str, rosdep_yaml: str, requirements: list[str]) -> list[str]:
    """One line per fault: an import without a table row, key, rule or pin."""
    keys, ours, pins = package_xml_keys(package_xml), our_rosdep_keys(rosdep_yaml), pinned_distributions(requirements)
    faults = []
    for module, where in sorted(imports.items()):
        if module not in DECLARED:
            faults.append(f"{module} (imported at {where[0]}) has no row in DECLARED: add its PyPI pin to requirements/, "
                          f"its rosdep key to package.xml (ours in rosdep/ if rosdistro lacks it) and the row")
            continue
        distribution, key, source = DECLARED[module]
        if key not in keys:
            faults.append(f"{module} (imported at {where[0]}): package.xml has no key {key}")
        if source == OURS and key not in ours:
            faults.append(f"{module}: rosdep/my_collision_pkg.yaml does not define our key {key}")
        if distribution is not None and _normal(distribution) not in pins:
            faults.append(f"{module} (imported at {where[0]}): requirements/ has no pin {distribution}==...")
    return faults


def _repository_files() -> tuple[str, str, list[str]]:
    return ((REPO / "package.xml").read_text(encoding="utf-8"),
            (REPO / "rosdep" / "my_collision_pkg.yaml").read_text(encoding="utf-8"),
            [p.read_text(encoding="utf-8") for p in sorted((REPO / "requirements").glob("*.txt"))])


def test_every_third_party_import_has_a_key_and_a_pin():
    imports = third_party_imports(REPO / PACKAGE)
    assert {"numpy", "scipy", "octomap", "rclpy", "rcl_interfaces"} <= set(imports), "the scan sees the package"
    assert undeclared(imports, *_repository_files()) == []


def test_the_table_holds_no_module_the_package_no_longer_imports():
    stale = sorted(set(DECLARED) - set(third_party_imports(REPO / PACKAGE)))
    assert stale == []


def test_a_removed_key_is_named():
    package_xml, rosdep_yaml, requirements = _repository_files()
    assert "<exec_depend>python3-scipy</exec_depend>" in package_xml
    modified = package_xml.replace("<exec_depend>python3-scipy</exec_depend>", "")
    faults = undeclared(third_party_imports(REPO / PACKAGE), modified, rosdep_yaml, requirements)
    assert len(faults) == 1 and faults[0].startswith("scipy (imported at ") and "no key python3-scipy" in faults[0]


def test_a_removed_rule_and_a_removed_pin_are_named():
    package_xml, rosdep_yaml, requirements = _repository_files()
    without_rule = rosdep_yaml.replace("python3-octomap-python-pip:", "python3-something-else:")
    without_pin = [re.sub(r"(?m)^octomap-python==.*$", "", text) for text in requirements]
    imports = third_party_imports(REPO / PACKAGE)
    assert undeclared(imports, package_xml, without_rule, requirements) == [
        "octomap: rosdep/my_collision_pkg.yaml does not define our key python3-octomap-python-pip"]
    faults = undeclared(imports, package_xml, rosdep_yaml, without_pin)
    assert len(faults) == 1 and "requirements/ has no pin octomap-python==" in faults[0]


def test_a_new_import_is_named(tmp_path):
    copy = tmp_path / PACKAGE
    (copy / "core").mkdir(parents=True)
    (copy / "core" / "uses_new.py").write_text("import os\n\ndef f():\n    import networkx.algorithms\n    import numpy\n")
    faults = undeclared(third_party_imports(copy), *_repository_files())
    assert len(faults) == 1 and faults[0].startswith(f"networkx (imported at {PACKAGE}/core/uses_new.py:4) has no row")
