"""Old import paths of modules that moved into the layered tree: one table and the hook that serves it.

Before the layers (``core/``, ``viz/``, ``ros/``, ``tools/``) the package was flat. Each old
path in :data:`MOVED` (``my_collision_pkg.checker``, ``my_collision_pkg.models`` ...) still
imports: the package's ``__init__`` puts :class:`OldPathFinder` on ``sys.meta_path``, and
importing an old path gives a small module that warns once with a
:class:`MovedModuleWarning` naming the new home and reads every name (public or not) from
the new module. ``python -m my_collision_pkg.demo`` (and the other old program paths) runs
the new module's ``main``: the finder's loader also hands ``runpy`` the module's code.
The README lists the old paths and their homes. They will be removed one release after
the move; no file of the package lives at an old path any more.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable
from types import CodeType, ModuleType

PACKAGE = "my_collision_pkg"

# old module (directly under the package) -> its new home (relative to the package)
MOVED: dict[str, str] = {
    "checker": "core.checks.checker",
    "contact_list": "core.checks.contact_list",
    "contacts": "core.checks.results",
    "errors": "core.errors",
    "geometry": "core.geometry.shape_geometry",
    "interval_sweeps": "core.checks.interval_sweeps",
    "models": "core.scene.loading",
    "motion": "core.checks.motion",
    "narrowphase": "core.checks.narrowphase",
    "robot_model": "core.model.robot_model",
    "scene": "core.scene.planning_scene",
    "srdf": "core.model.srdf",
    "surfaces": "core.surfaces.contact_surface",
    "surfaces_report": "core.surfaces.explanation_surfaces",
    "transforms": "core.model.transforms",
    "world_file": "core.scene.world_file",
    "pressure_colors": "viz.style",
    "render": "viz.render",
    "client": "ros.client",
    "conversions": "ros.conversions",
    "markers": "ros.markers",
    "markers_node": "ros.markers_node",
    "node_runtime": "ros.runtime",
    "scene_markers": "ros.scene_markers",
    "stop_request": "ros.stop_request",
    "validator_node": "ros.validator_node",
    "demo": "tools.demo",
    "launch_arguments": "tools.launch_arguments",
}


class MovedModuleWarning(DeprecationWarning):
    """An old import path of a module that now lives elsewhere in the package."""


def forward(old_name: str, new_name: str) -> Callable[[str], object]:
    """Warn that ``old_name`` moved to ``new_name`` and return the old module's ``__getattr__``.

    The body of every old-path module: ``__getattr__ = forward(__name__, "my_collision_pkg.core.checks.checker")``.
    """
    warnings.warn(f"{old_name} moved to {new_name}; import it from there", MovedModuleWarning,
                  stacklevel=_importer_level())
    target: ModuleType = importlib.import_module(new_name)

    def __getattr__(name: str) -> object:
        try:
            return getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old_name!r} (moved to {new_name!r}) has no attribute {name!r}") from None

    return __getattr__


def _importer_level() -> int:
    """The ``stacklevel`` of the frame that imported the old path, so that the warning names the
    caller's line: past this file, the old path's generated code and importlib (the frames of
    ``importlib._bootstrap`` are not counted by :func:`warnings.warn`, so they are not here)."""
    frame, level = sys._getframe(2), 2  # noqa: SLF001 - 1 is forward(), 2 the old path's module code
    while frame is not None:
        name = frame.f_code.co_filename
        internal = "importlib" in name and "_bootstrap" in name
        if not internal and not (name in (__file__, importlib.__file__) or name.startswith(f"<{PACKAGE}.")):
            return level
        frame, level = frame.f_back, level + (0 if internal else 1)
    return level


def _source(old_name: str, new_name: str) -> str:
    """The text of the module at an old path (what its file held before the table)."""
    return (f'"""Moved to :mod:`{new_name}` (this old path warns once and forwards)."""\n'
            f"from {PACKAGE}._moved import forward\n\n"
            f"__getattr__ = forward(__name__, {new_name!r})\n\n"
            'if __name__ == "__main__":      # python -m <old path>: the new module\'s main\n'
            "    import sys\n\n"
            '    sys.exit(__getattr__("main")())\n')


class OldPathLoader(importlib.abc.InspectLoader):
    """Makes the module of an old path from :data:`MOVED` (imports and ``python -m`` alike)."""

    def _names(self, fullname: str) -> tuple[str, str]:
        old = fullname.rpartition(".")[2]
        if fullname != f"{PACKAGE}.{old}" or old not in MOVED:
            raise ImportError(f"{fullname} is not an old import path of {PACKAGE}", name=fullname)
        return fullname, f"{PACKAGE}.{MOVED[old]}"

    def is_package(self, fullname: str) -> bool:
        self._names(fullname)
        return False

    def get_source(self, fullname: str) -> str:
        return _source(*self._names(fullname))

    def get_code(self, fullname: str) -> CodeType:
        return compile(self.get_source(fullname), f"<{fullname}: old path, see {PACKAGE}/_moved.py>", "exec")

    def exec_module(self, module: ModuleType) -> None:
        exec(self.get_code(module.__name__), module.__dict__)  # noqa: S102 - our own generated text


class OldPathFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED`, ahead of the file system (a stale copy of an old
    file left in an install space never wins)."""

    loader = OldPathLoader()

    def find_spec(self, fullname, path=None, target=None):  # noqa: ARG002 - the MetaPathFinder signature
        package, _, old = fullname.rpartition(".")
        if package != PACKAGE or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self.loader, origin=f"{PACKAGE}/_moved.py (old path)")


def install() -> None:
    """Put :class:`OldPathFinder` first on ``sys.meta_path`` (once per interpreter)."""
    if not any(type(f).__name__ == OldPathFinder.__name__ and type(f).__module__ == __name__
               for f in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())
