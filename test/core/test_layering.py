"""The layers of the package hold: core/, viz/ and planning/ import no ROS, kernels stay compiled-only, no cycle.

The rules (see the package docstring, ``my_collision_pkg/__init__.py``):

- every module under ``core/``, ``viz/`` and ``planning/`` imports with ROS blocked: ``rclpy``,
  ``ament_index_python``, ``launch*``, every ``*_msgs`` and ``*_interfaces`` package and
  the package's own ``msg``, ``srv``, ``ros`` and ``tools`` (checked in a subprocess, as
  the pytest process may hold rclpy already), and no import of those stands anywhere in
  their source, inside functions included (a runtime import check cannot see those);
- ``ros.stop_request`` imports with rclpy blocked (the entry scripts run it first);
- modules in ``core/kernels/`` import only numpy, numba, math, each other, and the
  standard ``typing`` (for the NamedTuple argument packs numba accepts) and ``__future__``;
- module-level imports among the package's modules form no cycle (the old top-level
  shims, which forward by name at run time, are left out);
- no module imports a private name (``_x``) from another module of the package, nor reads
  one as ``module._x`` through an imported module's name.

Each scanning function takes the package's folder and name, so the last tests run them
on a small package written to a temporary folder that breaks every rule, and check
that each rule reports it: the checks can fail.
"""
from __future__ import annotations

import ast
import json
import importlib.util
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "my_collision_pkg"
PACKAGE_DIR = os.path.join(REPO, PACKAGE)
ROS_FREE_LAYERS = ("core", "viz", "planning")
KERNELS = "core.kernels"
# Besides each other: what a kernel module may import.
KERNEL_ALLOWED_TOP_LEVEL = frozenset({"numpy", "numba", "math", "typing", "__future__"})
BLOCKED_TOP_LEVEL = frozenset({"rclpy", "ament_index_python"})
BLOCKED_PREFIXES = ("launch",)
BLOCKED_SUFFIXES = ("_msgs", "_interfaces")
BLOCKED_OWN_SUBPACKAGES = ("msg", "srv", "ros", "tools")
GENERATED_SUBPACKAGES = ("msg", "srv")          # made by rosidl at build time, not in the sources
SUBPROCESS_TIMEOUT_S = 600.0                    # importing core compiles nothing, but loads numba, fcl, coal


def is_blocked(module_name: str, package: str = PACKAGE) -> bool:
    """True for a module a ROS-free layer must not import.

    Parameters
    ----------
    module_name : str
        Absolute dotted module name, e.g. ``"rclpy.node"``.
    package : str
        Name of the package whose ``msg``, ``srv``, ``ros`` and ``tools`` are refused.
    """
    top = module_name.split(".")[0]
    if top in BLOCKED_TOP_LEVEL or top.startswith(BLOCKED_PREFIXES) or top.endswith(BLOCKED_SUFFIXES):
        return True
    return any(module_name == f"{package}.{sub}" or module_name.startswith(f"{package}.{sub}.")
               for sub in BLOCKED_OWN_SUBPACKAGES)


# ----- reading the sources ---------------------------------------------------------------------
@dataclass(frozen=True)
class ImportStatement:
    """One import found in a module's source.

    Attributes
    ----------
    importer : str
        Dotted name of the module holding the statement.
    line : int
        Line of the statement in that module.
    target : str
        Absolute dotted name of the module imported (for ``from a import b``: ``a``, or
        ``a.b`` when that is a module of the scanned package).
    names : tuple of str
        The names a ``from`` import takes (empty for ``import a``).
    module_level : bool
        False when the statement sits inside a function body.
    """
    importer: str
    line: int
    target: str
    names: tuple[str, ...]
    module_level: bool


def package_modules(package_dir: str, package: str) -> dict[str, str]:
    """Dotted module name -> source path, for every ``.py`` file of the package's source tree."""
    modules = {}
    for folder, subfolders, files in os.walk(package_dir):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        relative = os.path.relpath(folder, package_dir)
        parts = [package] + ([] if relative == "." else relative.split(os.sep))
        if len(parts) > 1 and parts[1] in GENERATED_SUBPACKAGES:
            continue
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            stem = file[:-3]
            name = ".".join(parts if stem == "__init__" else parts + [stem])
            modules[name] = os.path.join(folder, file)
    return modules


class _ImportCollector(ast.NodeVisitor):
    """Imports of one module, each marked with whether it sits inside a function."""

    def __init__(self, importer: str, is_package: bool, known_modules: set[str]):
        self.importer = importer
        self.base = importer if is_package else importer.rpartition(".")[0]
        self.known = known_modules
        self.depth = 0
        self.found: list[ImportStatement] = []

    def _function(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append(ImportStatement(self.importer, node.lineno, alias.name, (), self.depth == 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.base.split(".")[:len(self.base.split(".")) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        names = tuple(alias.name for alias in node.names)
        submodules = [f"{source}.{n}" for n in names if f"{source}.{n}" in self.known]
        # ``from a import b, X``: module a.b, and a itself for the names that are not modules
        for target in submodules + ([source] if len(submodules) < len(names) else []):
            self.found.append(ImportStatement(self.importer, node.lineno, target, names, self.depth == 0))


def import_statements(package_dir: str, package: str) -> list[ImportStatement]:
    """Every import statement in the package's sources, module-level and inside functions."""
    modules = package_modules(package_dir, package)
    found = []
    for name, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        collector = _ImportCollector(name, path.endswith("__init__.py"), set(modules))
        collector.visit(tree)
        found.extend(collector.found)
    return found


def _in_layer(module: str, package: str, layer: str) -> bool:
    prefix = f"{package}.{layer}"
    return module == prefix or module.startswith(prefix + ".")


def _where(statement: ImportStatement) -> str:
    return f"{statement.importer}:{statement.line} imports {statement.target}"


def ros_imports_in_ros_free_layers(package_dir: str, package: str) -> list[str]:
    """Imports of blocked modules anywhere in core/ and viz/ (inside functions too), as ``module:line``."""
    return [_where(s) for s in import_statements(package_dir, package)
            if any(_in_layer(s.importer, package, layer) for layer in ROS_FREE_LAYERS)
            and is_blocked(s.target, package)]


def kernel_imports_outside_the_rule(package_dir: str, package: str) -> list[str]:
    """Imports in core/kernels of anything but the allowed modules and the kernels themselves."""
    return [_where(s) for s in import_statements(package_dir, package)
            if _in_layer(s.importer, package, KERNELS)
            and not _in_layer(s.target, package, KERNELS)
            and s.target.split(".")[0] not in KERNEL_ALLOWED_TOP_LEVEL]


def forwarding_shims(package_dir: str, package: str) -> set[str]:
    """Modules whose body assigns ``__getattr__ = forward(...)``: the old paths, forwarding by name."""
    shims = set()
    for name, path in package_modules(package_dir, package).items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__getattr__"
                                                     for t in node.targets)
                    and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                    and node.value.func.id == "forward"):
                shims.add(name)
    return shims


def import_cycles(package_dir: str, package: str) -> list[list[str]]:
    """Cycles of module-level imports among the package's modules (shims left out); each a module list."""
    modules = set(package_modules(package_dir, package)) - forwarding_shims(package_dir, package)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for s in import_statements(package_dir, package):
        if s.module_level and s.importer in modules and s.target in modules and s.target != s.importer:
            edges[s.importer].add(s.target)
    # Tarjan's strongly connected components; a component of more than one module holds a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return cycles


def private_names_imported_across_modules(package_dir: str, package: str) -> list[str]:
    """``from <module of the package> import _name`` in another module of the package."""
    known = set(package_modules(package_dir, package))
    found = []
    for s in import_statements(package_dir, package):
        if s.target != package and not s.target.startswith(package + "."):
            continue
        for name in s.names:
            if name.startswith("_") and not name.startswith("__") and f"{s.target}.{name}" not in known:
                found.append(f"{s.importer}:{s.line} imports {s.target}.{name}")
    return found


def private_attributes_used_across_modules(package_dir: str, package: str) -> list[str]:
    """``module._name`` read in another module of the package, through an imported module's name."""
    modules = package_modules(package_dir, package)
    found = []
    for importer, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        aliases: dict[str, str] = {}        # local name -> module of the package it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if not isinstance(value, ast.Name) or value.id not in aliases:
                continue
            target = ".".join([aliases[value.id]] + chain[::-1])
            if target in modules and target != importer:
                found.append(f"{importer}:{node.lineno} uses {target}.{node.attr}")
    return found


# ----- importing with ROS blocked, in a subprocess ---------------------------------------------
_BLOCKED_IMPORT_SCRIPT = textwrap.dedent('''
    import importlib, json, pkgutil, sys, traceback

    package, roots, extra, own = (sys.argv[1], [r for r in sys.argv[2].split(",") if r],
                                  [m for m in sys.argv[3].split(",") if m], sys.argv[4].split(","))
    BLOCKED_TOP_LEVEL = {blocked_top_level!r}
    BLOCKED_PREFIXES = {blocked_prefixes!r}
    BLOCKED_SUFFIXES = {blocked_suffixes!r}
    OWN = tuple(f"{{package}}.{{sub}}" for sub in own)

    def is_blocked(name):
        top = name.split(".")[0]
        if top in BLOCKED_TOP_LEVEL or top.startswith(BLOCKED_PREFIXES) or top.endswith(BLOCKED_SUFFIXES):
            return True
        return any(name == own or name.startswith(own + ".") for own in OWN)

    class RefuseRos:
        """A meta path finder that refuses the blocked modules."""
        def find_spec(self, name, path=None, target=None):
            if is_blocked(name):
                raise ImportError(f"{{name}} is blocked in a ROS-free layer")
            return None

    sys.meta_path.insert(0, RefuseRos())
    imported, failed = [], {{}}

    def attempt(name):
        try:
            importlib.import_module(name)
            imported.append(name)
        except Exception as exc:
            failed[name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()

    for root in roots:
        name = f"{{package}}.{{root}}"
        attempt(name)
        if name in failed:
            continue
        module = sys.modules[name]
        for info in pkgutil.walk_packages(module.__path__, prefix=name + ".",
                                          onerror=lambda bad: failed.setdefault(bad, "cannot walk")):
            if info.name not in imported and info.name not in failed:
                attempt(info.name)
    for name in extra:
        attempt(name)
    print(json.dumps({{"imported": imported, "failed": failed}}))
''').format(blocked_top_level=set(BLOCKED_TOP_LEVEL), blocked_prefixes=BLOCKED_PREFIXES,
            blocked_suffixes=BLOCKED_SUFFIXES)


def import_with_ros_blocked(package: str, roots=ROS_FREE_LAYERS, extra_modules=(), path_first=None,
                            blocked_own=BLOCKED_OWN_SUBPACKAGES) -> dict:
    """Import every module under ``package.<root>`` (and ``extra_modules``) in a fresh interpreter with ROS blocked.

    Blocked: rclpy, ament_index_python, ``launch*``, ``*_msgs``, ``*_interfaces`` and the
    package's own subpackages ``blocked_own``. ``path_first`` goes first on PYTHONPATH.

    Returns
    -------
    dict
        ``{"imported": [names], "failed": {name: error line}}``.
    """
    env = dict(os.environ)
    if path_first is not None:
        env["PYTHONPATH"] = os.pathsep.join([path_first] + [p for p in [env.get("PYTHONPATH")] if p])
    done = subprocess.run([sys.executable, "-c", _BLOCKED_IMPORT_SCRIPT, package, ",".join(roots),
                           ",".join(extra_modules), ",".join(blocked_own)],
                          capture_output=True, text=True, env=env, timeout=SUBPROCESS_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ----- the package -----------------------------------------------------------------------------
# ros/ itself may load for stop_request: only the generated messages stay blocked there.
MESSAGES_ONLY = GENERATED_SUBPACKAGES


@pytest.fixture(scope="module")
def blocked_run():
    return import_with_ros_blocked(PACKAGE)


def test_every_core_and_viz_module_imports_with_ros_blocked(blocked_run):
    assert not blocked_run["failed"], "\n".join(f"{k}: {v}" for k, v in blocked_run["failed"].items())
    sources = {m for m in package_modules(PACKAGE_DIR, PACKAGE)
               if any(_in_layer(m, PACKAGE, layer) for layer in ROS_FREE_LAYERS)}
    missing = sources - set(blocked_run["imported"])
    assert not missing, f"not imported (not installed? run make build): {sorted(missing)}"


def test_no_ros_import_in_core_or_viz_even_inside_functions():
    found = ros_imports_in_ros_free_layers(PACKAGE_DIR, PACKAGE)
    assert not found, "\n".join(found)


def test_stop_request_imports_with_rclpy_blocked():
    if importlib.util.find_spec(f"{PACKAGE}.ros") is None:     # the installed package, not the sources
        pytest.skip("the ros/ layer is not installed (the pip wheel holds core/, viz/ and planning/ only)")
    run = import_with_ros_blocked(PACKAGE, roots=(), extra_modules=(f"{PACKAGE}.ros.stop_request",),
                                  blocked_own=MESSAGES_ONLY)
    assert run["imported"] == [f"{PACKAGE}.ros.stop_request"], run["failed"]


def test_kernels_import_only_numpy_numba_math_and_each_other():
    found = kernel_imports_outside_the_rule(PACKAGE_DIR, PACKAGE)
    assert not found, "\n".join(found)


def test_no_import_cycle_among_the_modules():
    cycles = import_cycles(PACKAGE_DIR, PACKAGE)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_imported_from_another_module():
    found = private_names_imported_across_modules(PACKAGE_DIR, PACKAGE)
    found += private_attributes_used_across_modules(PACKAGE_DIR, PACKAGE)
    assert not found, "\n".join(found)


def test_the_scan_sees_the_package():
    modules = package_modules(PACKAGE_DIR, PACKAGE)
    assert f"{PACKAGE}.core.kernels.codes" in modules and f"{PACKAGE}.viz.render" in modules
    assert not forwarding_shims(PACKAGE_DIR, PACKAGE), "the old paths are one table (_moved.py), not files"
    assert not any(m.startswith(f"{PACKAGE}.msg") for m in modules), "generated modules are not sources"


# ----- the checks can fail: a small package that breaks every rule ---------------------------
BAD_PACKAGE = "layering_probe_pkg"
BAD_SOURCES = {
    "__init__.py": "",
    "core/__init__.py": "",
    "core/uses_rclpy.py": "import rclpy\n",
    "core/lazy.py": "def find():\n    from ament_index_python.packages import get_package_share_directory\n"
                    "    return get_package_share_directory\n",
    "core/own_msgs.py": "from layering_probe_pkg.msg import Thing\n",
    "core/a.py": "from layering_probe_pkg.core import b\nVALUE = 1\n",
    "core/b.py": "from layering_probe_pkg.core.a import VALUE\n",
    "core/peeks.py": "from layering_probe_pkg.core.a import _hidden\n",
    "core/pokes.py": "import layering_probe_pkg.core.a as a_module\nfrom layering_probe_pkg.core import b\n"
                     "import layering_probe_pkg.core.a\n"
                     "X = a_module._hidden, b._secret, layering_probe_pkg.core.a._inner, b.__name__\n",
    "core/kernels/__init__.py": "",
    "core/kernels/slow.py": "import numpy as np\nimport scipy.spatial\nfrom layering_probe_pkg.core import a\n",
    "core/kernels/fine.py": "import math\nimport numpy as np\nfrom numba import njit\n"
                            "from layering_probe_pkg.core.kernels import slow\n",
    "viz/__init__.py": "",
    "viz/picture.py": "from ..ros import markers\n",
    "ros/__init__.py": "",
    "ros/markers.py": "import visualization_msgs.msg\n",
    "ros/stop_request.py": "import rclpy\n",
    "old_a.py": "from layering_probe_pkg._moved import forward\n"
                "__getattr__ = forward(__name__, 'layering_probe_pkg.core.a')\n",
}


@pytest.fixture(scope="module")
def bad_package(tmp_path_factory):
    root = tmp_path_factory.mktemp("layering")
    for relative, text in BAD_SOURCES.items():
        path = root / BAD_PACKAGE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root), str(root / BAD_PACKAGE)


def test_the_blocked_import_run_reports_a_core_module_importing_rclpy(bad_package):
    root, _ = bad_package
    run = import_with_ros_blocked(BAD_PACKAGE, path_first=root)
    failed = run["failed"]
    assert "rclpy is blocked" in failed[f"{BAD_PACKAGE}.core.uses_rclpy"]
    assert f"{BAD_PACKAGE}.msg is blocked" in failed[f"{BAD_PACKAGE}.core.own_msgs"]
    assert f"{BAD_PACKAGE}.ros is blocked" in failed[f"{BAD_PACKAGE}.viz.picture"]
    assert f"{BAD_PACKAGE}.core.lazy" in run["imported"], "a lazy import passes at run time: the AST scan sees it"
    stop = import_with_ros_blocked(BAD_PACKAGE, roots=(), extra_modules=(f"{BAD_PACKAGE}.ros.stop_request",),
                                   path_first=root, blocked_own=MESSAGES_ONLY)
    assert "rclpy is blocked" in stop["failed"][f"{BAD_PACKAGE}.ros.stop_request"]


def test_the_scans_report_every_broken_rule(bad_package):
    _, folder = bad_package
    ros = ros_imports_in_ros_free_layers(folder, BAD_PACKAGE)
    assert f"{BAD_PACKAGE}.core.uses_rclpy:1 imports rclpy" in ros
    assert f"{BAD_PACKAGE}.core.lazy:2 imports ament_index_python.packages" in ros
    assert f"{BAD_PACKAGE}.core.own_msgs:1 imports {BAD_PACKAGE}.msg" in ros
    assert f"{BAD_PACKAGE}.viz.picture:1 imports {BAD_PACKAGE}.ros.markers" in ros
    assert not any(".ros." in line.split(":")[0] for line in ros), "ros/ may import ROS"
    assert kernel_imports_outside_the_rule(folder, BAD_PACKAGE) == [
        f"{BAD_PACKAGE}.core.kernels.slow:2 imports scipy.spatial",
        f"{BAD_PACKAGE}.core.kernels.slow:3 imports {BAD_PACKAGE}.core.a"]
    assert import_cycles(folder, BAD_PACKAGE) == [[f"{BAD_PACKAGE}.core.a", f"{BAD_PACKAGE}.core.b"]]
    assert forwarding_shims(folder, BAD_PACKAGE) == {f"{BAD_PACKAGE}.old_a"}
    assert private_names_imported_across_modules(folder, BAD_PACKAGE) == [
        f"{BAD_PACKAGE}.core.peeks:1 imports {BAD_PACKAGE}.core.a._hidden"]
    assert sorted(private_attributes_used_across_modules(folder, BAD_PACKAGE)) == [
        f"{BAD_PACKAGE}.core.pokes:4 uses {BAD_PACKAGE}.core.a._hidden",
        f"{BAD_PACKAGE}.core.pokes:4 uses {BAD_PACKAGE}.core.a._inner",
        f"{BAD_PACKAGE}.core.pokes:4 uses {BAD_PACKAGE}.core.b._secret"]
