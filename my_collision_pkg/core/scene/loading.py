"""Building a planning scene from files: :func:`load_scene`.

A scene is a URDF (XML or file), an optional SRDF and an optional world file.
Robot description files may be xacro (see
:mod:`my_collision_pkg.core.model.description_files`); the default robot and
``example-robot-data``'s mesh folder come from
:mod:`my_collision_pkg.core.model.example_robots`. The names of those two modules
that callers import from here are re-exported.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from my_collision_pkg.core.errors import ModelError
from my_collision_pkg.core.geometry.mesh_files import MeshResolver
from my_collision_pkg.core.model.description_files import (XACRO_SUFFIX, is_xacro, parse_description_file,  # noqa: F401
                                                           parse_xacro_args, read_description)  # re-exported
from my_collision_pkg.core.model.example_robots import (EXAMPLE_ROBOT_DATA, example_robot_data_share,  # noqa: F401
                                                        example_robot_paths, panda_paths)  # re-exported
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.model.srdf import SemanticModel, parse_srdf
from my_collision_pkg.core.scene.planning_scene import PlanningScene
from my_collision_pkg.core.scene.world_file import load_world


def load_scene(*, urdf_xml: str | None = None, urdf_path: str | None = None, srdf_xml: str | None = None,
               srdf_path: str | None = None, world_path: str | None = None, package_paths=(),
               default_padding_m: float = 0.0, link_padding_m: dict[str, float] | None = None,
               allow_adjacent: bool = True, xacro_args: Mapping[str, str] | None = None,
               find_package_share: Callable[[str], str | None] | None = None) -> PlanningScene:
    """A planning scene from a URDF (XML or file), an optional SRDF and an optional world file.

    Parameters
    ----------
    urdf_xml, urdf_path : str, optional
        The URDF, as text or as a file (exactly one of them).
    srdf_xml, srdf_path : str, optional
        The SRDF, as text or as a file (at most one of them).
    world_path : str, optional
        A world YAML file (see :mod:`my_collision_pkg.core.scene.world_file`): its objects
        are added, and the occupancy map its ``octomap`` entry names (a ``.bt`` / ``.ot``
        file) becomes the world object ``<octomap>`` (``PlanningScene.set_occupancy``).
    package_paths : sequence of str
        Search folders for ``package://`` meshes; ``example-robot-data``'s share
        folder is always appended when it is installed.
    default_padding_m, link_padding_m, allow_adjacent
        As for :class:`PlanningScene`.
    xacro_args : mapping of str to str, optional
        Arguments of a URDF or SRDF file whose name ends in ``.xacro`` (see
        :func:`read_description`).
    find_package_share : callable, optional
        ``find_package_share(package_name)`` gives a package's share folder or None
        (see :class:`MeshResolver`); without it ``package://`` meshes are looked up
        in the search folders only.

    Raises
    ------
    ModelError, MeshError, WorldFileError, SceneError
        Naming the file, link, object or mesh at fault.
    """
    if bool(urdf_xml) == bool(urdf_path):
        raise ModelError("give exactly one of a URDF string and a URDF path")
    if urdf_xml:
        robot = RobotModel.from_urdf_string(urdf_xml)
    else:
        robot = parse_description_file(urdf_path, "URDF", RobotModel.from_urdf_string, xacro_args)
    if srdf_xml and srdf_path:
        raise ModelError("give at most one of an SRDF string and an SRDF path")
    semantic = SemanticModel()
    if srdf_xml:
        semantic = parse_srdf(srdf_xml, robot)
    elif srdf_path:
        semantic = parse_description_file(srdf_path, "SRDF", lambda xml: parse_srdf(xml, robot), xacro_args)
    folders = list(package_paths)
    try:
        folders.append(example_robot_data_share())
    except ModelError:
        pass
    base_dir = os.path.dirname(os.path.abspath(urdf_path)) if urdf_path else None
    resolver = MeshResolver(folders, base_dir, find_package_share=find_package_share)
    scene = PlanningScene(robot, semantic, resolver=resolver, default_padding_m=default_padding_m,
                          link_padding_m=link_padding_m, allow_adjacent=allow_adjacent)
    if world_path:
        world = load_world(world_path, robot.root_link)
        scene.apply(list(world.updates))
        if world.occupancy is not None:
            scene.set_occupancy(world.occupancy)
    return scene
