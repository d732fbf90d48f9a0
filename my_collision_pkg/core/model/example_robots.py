"""Robots of the PyPI package ``example-robot-data``, and the default robot (the Franka Panda).

The package installs URDF, SRDF and meshes under
``<site-packages>/cmeel.prefix/share/example-robot-data/robots/<name>_description``.
"""
from __future__ import annotations

import os
import site
import sys
import sysconfig

from my_collision_pkg.core.errors import ModelError

EXAMPLE_ROBOT_DATA = "example-robot-data"


def _site_folders() -> list[str]:
    """Folders pip may have installed into: this environment's, the user's, then sys.path."""
    folders = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    try:
        folders += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # site of some virtualenvs lacks these
        pass
    folders += [entry for entry in sys.path if entry]
    return list(dict.fromkeys(folders))


def example_robot_data_share() -> str:
    """The ``share`` folder that holds ``example-robot-data`` (a mesh search folder).

    Raises
    ------
    ModelError
        If the package is not installed.
    """
    for prefix in _site_folders():
        share = os.path.join(prefix, "cmeel.prefix", "share")
        if os.path.isdir(os.path.join(share, EXAMPLE_ROBOT_DATA)):
            return share
    raise ModelError("the Python package 'example-robot-data' is not installed (pip install example-robot-data)")


def example_robot_paths(description: str, urdf: str, srdf: str | None = None) -> tuple[str, str | None]:
    """Paths of a URDF (and SRDF) in example-robot-data, e.g. ``("panda_description", "panda.urdf", "panda.srdf")``.

    Raises
    ------
    ModelError
        If example-robot-data is not installed.
    """
    root = os.path.join(example_robot_data_share(), EXAMPLE_ROBOT_DATA, "robots", description)
    return os.path.join(root, "urdf", urdf), (os.path.join(root, "srdf", srdf) if srdf else None)


def panda_paths() -> tuple[str, str]:
    """URDF and SRDF paths of the default robot, the Franka Panda.

    Raises
    ------
    ModelError
        If example-robot-data is not installed.
    """
    urdf, srdf = example_robot_paths("panda_description", "panda.urdf", "panda.srdf")
    return urdf, srdf
