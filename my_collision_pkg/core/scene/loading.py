"""Building a planning scene from files, and the built-in default robot.

The default robot is the Franka Panda shipped by the PyPI package
``example-robot-data`` (URDF, SRDF and meshes under
``<site-packages>/cmeel.prefix/share/example-robot-data``).

Robot descriptions (URDF, SRDF) are read by :func:`read_description`: a file whose
name ends in ``.xacro`` (``robot.urdf.xacro``, ``robot.srdf.xacro``) is expanded by
the ``xacro`` Python package first, with optional ``name:=value`` arguments.
"""
from __future__ import annotations

import os
import shlex
import site
import sys
import sysconfig
import threading
from collections.abc import Mapping

from my_collision_pkg.core.errors import ModelError
from my_collision_pkg.core.geometry.shape_geometry import MeshResolver
from my_collision_pkg.core.model.robot_model import RobotModel
from my_collision_pkg.core.scene.planning_scene import PlanningScene
from my_collision_pkg.core.model.srdf import SemanticModel, parse_srdf, parse_srdf_file
from my_collision_pkg.core.scene.world_file import load_world_file

EXAMPLE_ROBOT_DATA = "example-robot-data"
XACRO_SUFFIX = ".xacro"
# xacro keeps its file stack and arguments in module globals: one expansion at a time.
_XACRO_LOCK = threading.Lock()


def is_xacro(path: str) -> bool:
    """Whether ``path`` names a xacro file (its name ends in ``.xacro``)."""
    return path.endswith(XACRO_SUFFIX)


def parse_xacro_args(text: str) -> dict[str, str]:
    """xacro arguments written as on xacro's command line: ``"name:=value other:='a b'"``.

    Raises
    ------
    ModelError
        Naming the word that is not ``name:=value``.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ModelError(f"xacro arguments '{text}': {exc}") from exc
    mappings = {}
    for word in filter(None, words):  # "''" (an empty word) is no argument
        name, sep, value = word.partition(":=")
        if not sep or not name:
            raise ModelError(f"xacro argument '{word}' is not of the form name:=value")
        mappings[name] = value
    return mappings


def read_description(path: str, kind: str = "URDF", xacro_args: Mapping[str, str] | None = None) -> str:
    """The XML text of a robot description file; a ``.xacro`` file is expanded first.

    Parameters
    ----------
    path : str
        A URDF or SRDF file, plain or xacro (by its name: ``*.xacro``).
    kind : str
        What the file is (``"URDF"``, ``"SRDF"``), for the error messages.
    xacro_args : mapping of str to str, optional
        Values of the xacro file's ``<xacro:arg>`` (``$(arg name)``); ignored for a plain file.

    Raises
    ------
    ModelError
        If the file cannot be read or its xacro expansion fails (naming the file).
    """
    if not is_xacro(path):
        try:
            with open(path, encoding="utf-8") as stream:
                return stream.read()
        except OSError as exc:
            raise ModelError(f"cannot read {kind} file '{path}': {exc.strerror}") from exc
    if not os.path.isfile(path):
        raise ModelError(f"cannot read {kind} file '{path}': no such file")
    import xacro  # only xacro files need it

    with _XACRO_LOCK:
        try:
            document = xacro.process_file(os.path.abspath(path), mappings=dict(xacro_args or {}))
        except Exception as exc:  # xacro raises many types (XacroException, ExpatError, NameError, ...)
            raise ModelError(f"{kind} file '{path}': xacro failed: {type(exc).__name__}: {exc}") from exc
        finally:
            xacro.substitution_args_context["arg"] = {}
    return document.toprettyxml(indent="  ")


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
    """Paths of a URDF (and SRDF) in example-robot-data, e.g. ``("panda_description", "panda.urdf", "panda.srdf")``."""
    root = os.path.join(example_robot_data_share(), EXAMPLE_ROBOT_DATA, "robots", description)
    return os.path.join(root, "urdf", urdf), (os.path.join(root, "srdf", srdf) if srdf else None)


def panda_paths() -> tuple[str, str]:
    """URDF and SRDF paths of the default robot, the Franka Panda."""
    urdf, srdf = example_robot_paths("panda_description", "panda.urdf", "panda.srdf")
    return urdf, srdf


def _robot_from_file(path: str, xacro_args: Mapping[str, str] | None) -> RobotModel:
    if not is_xacro(path):
        return RobotModel.from_urdf_file(path)
    xml = read_description(path, "URDF", xacro_args)
    try:
        return RobotModel.from_urdf_string(xml)
    except ModelError as exc:
        raise ModelError(f"URDF file '{path}': {exc}") from exc


def _semantic_from_file(path: str, robot: RobotModel, xacro_args: Mapping[str, str] | None) -> SemanticModel:
    if not is_xacro(path):
        return parse_srdf_file(path, robot)
    xml = read_description(path, "SRDF", xacro_args)
    try:
        return parse_srdf(xml, robot)
    except ModelError as exc:
        raise ModelError(f"SRDF file '{path}': {exc}") from exc


def load_scene(*, urdf_xml: str | None = None, urdf_path: str | None = None, srdf_xml: str | None = None,
               srdf_path: str | None = None, world_path: str | None = None, package_paths=(),
               default_padding_m: float = 0.0, link_padding_m: dict[str, float] | None = None,
               allow_adjacent: bool = True, xacro_args: Mapping[str, str] | None = None) -> PlanningScene:
    """A planning scene from a URDF (XML or file), an optional SRDF and an optional world file.

    A URDF or SRDF file whose name ends in ``.xacro`` is expanded with ``xacro_args``
    (see :func:`read_description`).

    ``example-robot-data``'s share folder is always among the mesh search folders,
    after ``package_paths``.

    Raises
    ------
    ModelError, MeshError, WorldFileError, SceneError
        Naming the file, link, object or mesh at fault.
    """
    if bool(urdf_xml) == bool(urdf_path):
        raise ModelError("give exactly one of a URDF string and a URDF path")
    robot = RobotModel.from_urdf_string(urdf_xml) if urdf_xml else _robot_from_file(urdf_path, xacro_args)
    if srdf_xml and srdf_path:
        raise ModelError("give at most one of an SRDF string and an SRDF path")
    semantic = SemanticModel()
    if srdf_xml:
        semantic = parse_srdf(srdf_xml, robot)
    elif srdf_path:
        semantic = _semantic_from_file(srdf_path, robot, xacro_args)
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
