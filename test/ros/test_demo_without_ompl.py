"""The demo's planning part says it is skipped where OMPL is missing, and the demo goes on (no DDS needed:
the part returns before it calls the validator)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import sys
    sys.modules["ompl"] = None
    from my_collision_pkg.tools import demo
    failures = []
    demo._planned_path_around_the_post(None, None, "", failures)
    assert failures == [], failures
''')


def test_demo_planning_part_skips_without_ompl():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "skipped: OMPL's Python bindings are not installed (pip install ompl==2.0.1)" in run.stdout
