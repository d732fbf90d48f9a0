"""Old import paths of modules that moved into the layered tree.

Each old top-level module (``my_collision_pkg.checker``, ``my_collision_pkg.models`` ...)
is a three-line file that calls :func:`forward`: importing it warns once with a
:class:`MovedModuleWarning` naming the new home, and every name (public or not) is read
from the new module. The README lists the old paths and their homes. They will be
removed one release after the move.
"""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from types import ModuleType


class MovedModuleWarning(DeprecationWarning):
    """An old import path of a module that now lives elsewhere in the package."""


def forward(old_name: str, new_name: str) -> Callable[[str], object]:
    """Warn that ``old_name`` moved to ``new_name`` and return the old module's ``__getattr__``.

    Use as ``__getattr__ = forward(__name__, "my_collision_pkg.core.checks.checker")``.
    """
    warnings.warn(f"{old_name} moved to {new_name}; import it from there", MovedModuleWarning, stacklevel=3)
    target: ModuleType = importlib.import_module(new_name)

    def __getattr__(name: str) -> object:
        try:
            return getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old_name!r} (moved to {new_name!r}) has no attribute {name!r}") from None

    return __getattr__
