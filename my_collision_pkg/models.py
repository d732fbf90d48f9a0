"""Building a planning scene from files, and the built-in default robot.

The default robot is the Franka Panda shipped by the PyPI package
``example-robot-data`` (URDF, SRDF and meshes under
``<site-packages>/cmeel.prefix/share/example-robot-data``).
"""
from __future__ import annotations

import os
import sysconfig

from .errors import ModelError
from .geometry import MeshResolver
from .robot_model import RobotModel
from .scene import PlanningScene
from .srdf import SemanticModel, parse_srdf, parse_srdf_file
from .world_file import load_world_file

EXAMPLE_ROBOT_DATA = "example-robot-data"


def example_robot_data_share() -> str:
    """The ``share`` folder that holds ``example-robot-data`` (a mesh search folder).

    Raises
    ------
    ModelError
        If the package is not installed.
    """
    for prefix in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]):
        share = os.path.join(prefix, "cmeel.prefix", "share")
        if os.path.isdir(os.path.join(share, EXAMPLE_ROBOT_DATA)):
            return share
    raise ModelError("the Python package 'example-robot-data' is not installed (pip install example-robot-data)")


def example_robot_paths(description: str, urdf: str, srdf: str | None = None) -> tuple[str, str | None]:
    """Paths of a URDF (and SRDF) in example-robot-data, e.g. ``("panda_description", "panda.urdf", "panda.srdf")``."""
    root = os.path.join(example_robot_data_share(), EXAMPLE_ROBOT_DATA, "robots", description)
    return os.path.join(root, "urdf", urdf), (os.path.join(root, "srdf", srdf) if srdf else None)


def panda_paths() -> tuple[str, str]:
    """URDF and SRDF paths of the default robot, the Franka Panda."""
    urdf, srdf = example_robot_paths("panda_description", "panda.urdf", "panda.srdf")
    return urdf, srdf


def load_scene(*, urdf_xml: str | None = None, urdf_path: str | None = None, srdf_xml: str | None = None,
               srdf_path: str | None = None, world_path: str | None = None, package_paths=(),
               default_padding_m: float = 0.0, link_padding_m: dict[str, float] | None = None,
               allow_adjacent: bool = True) -> PlanningScene:
    """A planning scene from a URDF (XML or file), an optional SRDF and an optional world file.

    ``example-robot-data``'s share folder is always among the mesh search folders,
    after ``package_paths``.

    Raises
    ------
    ModelError, MeshError, WorldFileError, SceneError
        Naming the file, link, object or mesh at fault.
    """
    if bool(urdf_xml) == bool(urdf_path):
        raise ModelError("give exactly one of a URDF string and a URDF path")
    robot = RobotModel.from_urdf_string(urdf_xml) if urdf_xml else RobotModel.from_urdf_file(urdf_path)
    if srdf_xml and srdf_path:
        raise ModelError("give at most one of an SRDF string and an SRDF path")
    semantic = SemanticModel()
    if srdf_xml:
        semantic = parse_srdf(srdf_xml, robot)
    elif srdf_path:
        semantic = parse_srdf_file(srdf_path, robot)
    folders = list(package_paths)
    try:
        folders.append(example_robot_data_share())
    except ModelError:
        pass
    base_dir = os.path.dirname(os.path.abspath(urdf_path)) if urdf_path else None
    scene = PlanningScene(robot, semantic, resolver=MeshResolver(folders, base_dir),
                          default_padding_m=default_padding_m, link_padding_m=link_padding_m,
                          allow_adjacent=allow_adjacent)
    if world_path:
        scene.apply(load_world_file(world_path, robot.root_link))
    return scene
