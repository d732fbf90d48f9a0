"""The ROS side's package lookup that the node hands to the core (``load_scene(find_package_share=...)``)."""
import os

import pytest

from my_collision_pkg.core.errors import MeshError
from my_collision_pkg.core.geometry.mesh_files import MeshResolver
from my_collision_pkg.ros.runtime import ament_package_share


def test_an_installed_package_has_its_share_folder():
    share = ament_package_share("my_collision_pkg")
    assert share is not None and os.path.isfile(os.path.join(share, "config", "panda_world.yaml"))


def test_an_unknown_package_is_none_not_an_exception():
    assert ament_package_share("no_such_package_anywhere") is None


def test_the_resolver_finds_a_package_uri_through_it_and_only_through_it():
    uri = "package://my_collision_pkg/config/panda_world.yaml"      # any file of an installed package
    found = MeshResolver((), None, find_package_share=ament_package_share).resolve(uri, "probe")
    assert os.path.samefile(found, os.path.join(ament_package_share("my_collision_pkg"), "config",
                                                "panda_world.yaml"))
    with pytest.raises(MeshError, match="my_collision_pkg"):      # without the lookup the core knows no ament index
        MeshResolver((), None).resolve(uri, "probe")
