#!/usr/bin/env python3
"""Point the ROS wheels' CMake exports at this interpreter's folders.

The ``ros-jazzy-*`` wheels on PyPI were built on a machine whose Python lived
in ``/opt/python/cp311-cp311``; their CMake export files under
``<venv>/share/**/cmake/*.cmake`` still name that machine's include folder and
site-packages. CMake then refuses the imported targets ("includes non-existent
path"). This script rewrites those two prefixes, in the venv's copies only, to
the include folder and purelib folder of the interpreter that runs it. Run it
with the venv's own Python after every install of ROS wheels; it is
idempotent.

Usage: <venv>/bin/python scripts/fix_ros_wheel_cmake.py [VENV]
(VENV defaults to ``sys.prefix``.)
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from pathlib import Path

BUILD_MACHINE_PREFIX = '/opt/python/cp311-cp311'
BUILD_MACHINE_INCLUDE = f'{BUILD_MACHINE_PREFIX}/include/python3.11'
BUILD_MACHINE_PURELIB = f'{BUILD_MACHINE_PREFIX}/lib/python3.11/site-packages'


def replacements() -> list[tuple[str, str]]:
    """Return (old, new) prefix pairs for this interpreter, longest first."""
    paths = sysconfig.get_paths()
    return [
        (BUILD_MACHINE_PURELIB, paths['purelib']),
        (BUILD_MACHINE_INCLUDE, paths['include']),
    ]


def fix_tree(venv: Path) -> tuple[int, list[str]]:
    """Rewrite the CMake files of ``venv``.

    Returns the number of files changed and the build-machine paths that are
    still named afterwards (should be empty).

    Raises
    ------
    FileNotFoundError
        If ``venv`` has no ``share`` folder (no ROS wheels installed).
    """
    share = venv / 'share'
    if not share.is_dir():
        raise FileNotFoundError(f'{share} does not exist: are the ROS wheels installed in {venv}?')
    changed = 0
    leftovers: list[str] = []
    for path in sorted(share.glob('**/cmake/*.cmake')):
        text = path.read_text(encoding='utf-8')
        if BUILD_MACHINE_PREFIX not in text:
            continue
        new_text = text
        for old, new in replacements():
            new_text = new_text.replace(old, new)
        if new_text != text:
            path.write_text(new_text, encoding='utf-8')
            changed += 1
        if BUILD_MACHINE_PREFIX in new_text:
            leftovers.append(str(path))
    return changed, leftovers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('venv', nargs='?', type=Path, default=Path(sys.prefix),
                        help='virtual environment holding the ROS wheels (default: this one)')
    args = parser.parse_args(argv)
    try:
        changed, leftovers = fix_tree(args.venv)
    except FileNotFoundError as exc:
        print(f'fix_ros_wheel_cmake: {exc}', file=sys.stderr)
        return 1
    print(f'fix_ros_wheel_cmake: rewrote {changed} CMake file(s) under {args.venv / "share"}')
    if leftovers:
        print('fix_ros_wheel_cmake: build-machine paths remain in:\n  ' + '\n  '.join(leftovers),
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
