"""Fixtures of the message-building tests (no DDS): the core tests' robots, imported, not copied.

``test/core`` holds the small inline robots (``core_scenes.py``) and their fixtures
(``conftest.py``). Its folder goes on ``sys.path`` so that ``core_scenes`` imports as in
the core tests; the core fixtures are loaded from their file under a name of their
own (``conftest`` is every folder's module name) and bound here, where pytest finds them.
"""
import importlib.util
import os
import sys

CORE_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")
if CORE_TESTS not in sys.path:
    sys.path.insert(0, CORE_TESTS)


def _core_fixtures():
    spec = importlib.util.spec_from_file_location("core_test_fixtures", os.path.join(CORE_TESTS, "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_core = _core_fixtures()
slider_robot = _core.slider_robot
slider_scene = _core.slider_scene
slider_checker = _core.slider_checker
