"""Without OMPL the package still imports and works; the planning adapters say what is missing.

Run in a fresh interpreter where ``import ompl`` fails (``sys.modules["ompl"] = None``), so the
test holds whether or not the test venv has OMPL.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import sys
    sys.modules["ompl"] = None                       # import ompl now raises ImportError
    from my_collision_pkg.planning import ompl as adapters
    from my_collision_pkg.core.checks.checker import CollisionChecker
    from my_collision_pkg.core.scene.loading import load_scene, panda_paths
    assert not adapters.OMPL_AVAILABLE
    assert not hasattr(adapters, "CertifiedMotionValidator")
    urdf, srdf = panda_paths()
    checker = CollisionChecker(load_scene(urdf_path=urdf, srdf_path=srdf))
    print(adapters.group_joint_names(checker, "arm"))
    print(checker.is_motion_valid(["panda_joint1"], [0.0], [0.5]))
    try:
        adapters.plan(checker, "default", [0.0] * 7)
    except adapters.OmplNotInstalled as exc:
        print("refused:", exc)
''')


def test_package_works_and_planning_names_the_missing_dependency():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0] == str(tuple(f"panda_joint{i}" for i in range(1, 8)))
    assert lines[1] == "True"
    assert lines[2].startswith("refused: OMPL's Python bindings are not installed: pip install ompl==2.0.1")
