"""User-named files are read bounded, regular files only (issue 39): every reader of the core.

A FIFO nobody writes to, ``/dev/zero`` behind a symlink, a directory and a file larger than
its bound are refused by name within a second, for each kind of file the node reads: URDF,
SRDF, xacro (and the files a xacro includes), world YAML, meshes and octomaps.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from my_collision_pkg.core import user_files
from my_collision_pkg.core.errors import MeshError, ModelError, SceneError
from my_collision_pkg.core.geometry.mesh_files import load_mesh_file
from my_collision_pkg.core.model.description_files import read_description
from my_collision_pkg.core.perception.occupancy import OccupancyMap, OctomapFileError, write_binary_octomap
from my_collision_pkg.core.scene.world_file import load_world
from my_collision_pkg.core.user_files import FileRefused, read_file_bytes

REFUSED_WITHIN_S = 1.0


@pytest.fixture
def hostile(tmp_path):
    """Paths that must never be read: name -> (path, what the refusal says)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"fifo": (fifo, "FIFO"), "/dev/zero": (zero, "character device"), "directory": (folder, "directory")}


def _refused_quickly(call, error, *fragments):
    start = time.monotonic()
    with pytest.raises(error) as caught:
        call()
    assert time.monotonic() - start < REFUSED_WITHIN_S
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    return caught.value


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_read_file_bytes_refuses_what_is_not_a_regular_file_by_kind(hostile, kind):
    path, what = hostile[kind]
    _refused_quickly(lambda: read_file_bytes(str(path), 1000, "BOUND"), FileRefused, what, "not a regular file")


def test_the_bound_is_on_bytes_read_not_on_the_reported_size(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 1001)
    assert read_file_bytes(str(path), 1001, "BOUND") == b"x" * 1001
    _refused_quickly(lambda: read_file_bytes(str(path), 1000, "BOUND"), FileRefused, "more than 1000 bytes", "BOUND")
    # /proc files report size 0 yet hold bytes: the count is of what was read
    assert len(read_file_bytes("/proc/self/status", 1_000_000, "BOUND")) > 0
    _refused_quickly(lambda: read_file_bytes("/proc/self/status", 10, "BOUND"), FileRefused, "more than 10 bytes")


def test_a_missing_file_is_named_as_missing(tmp_path):
    _refused_quickly(lambda: read_file_bytes(str(tmp_path / "nope"), 10, "BOUND"), FileRefused, "No such file")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
@pytest.mark.parametrize("suffix", ["", ".xacro"])
def test_robot_descriptions_refuse_special_files(tmp_path, hostile, kind, suffix):
    path, what = hostile[kind]
    named = tmp_path / f"robot{kind.strip('/').replace('/', '_')}.urdf{suffix}"
    named.symlink_to(path)
    _refused_quickly(lambda: read_description(str(named), "URDF"), ModelError, str(named), what)


def test_a_xacro_include_of_a_fifo_is_refused_by_name(tmp_path, hostile):
    fifo, _ = hostile["fifo"]
    top = tmp_path / "robot.urdf.xacro"
    top.write_text(f'<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                   f'<xacro:include filename="{fifo}"/><link name="a"/></robot>')
    _refused_quickly(lambda: read_description(str(top), "URDF"), ModelError, str(top), "FIFO")
    # the module's own open is back once the expansion is over
    import xacro
    assert "open" not in vars(xacro)
    good = tmp_path / "ok.urdf.xacro"
    good.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="a"/></robot>')
    assert '<link name="a"/>' in read_description(str(good), "URDF")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_world_files_refuse_special_files(hostile, kind):
    path, what = hostile[kind]
    _refused_quickly(lambda: load_world(str(path), "world"), SceneError, str(path), what)


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_mesh_files_refuse_special_files(tmp_path, hostile, kind):
    path, what = hostile[kind]
    named = tmp_path / f"mesh_{kind.strip('/').replace('/', '_')}.stl"
    named.symlink_to(path)
    _refused_quickly(lambda: load_mesh_file(str(named), (1.0, 1.0, 1.0), "obj", "mesh.stl"), MeshError,
                     str(named), what)


def test_a_mesh_file_over_its_bound_is_refused(tmp_path, monkeypatch):
    from my_collision_pkg.core.geometry import mesh_files
    path = tmp_path / "big.stl"
    path.write_bytes(b"solid x\n" + b" " * 2000)
    monkeypatch.setattr(mesh_files, "MAX_MESH_FILE_BYTES", 1000)
    _refused_quickly(lambda: load_mesh_file(str(path), (1.0, 1.0, 1.0), "obj", "big.stl"), MeshError,
                     "more than 1000 bytes", "MAX_MESH_FILE_BYTES")


def test_a_mesh_read_from_bytes_equals_the_file_read_by_trimesh(tmp_path):
    import trimesh
    box = trimesh.creation.box(extents=(0.1, 0.2, 0.3))
    for suffix in (".stl", ".obj", ".ply"):
        path = tmp_path / f"box{suffix}"
        box.export(path)
        mesh = load_mesh_file(str(path), (2.0, 1.0, 1.0), "obj", path.name)
        assert np.allclose(mesh.extents, (0.2, 0.2, 0.3))
        assert len(mesh.faces) == 12


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_octomap_files_refuse_special_files(tmp_path, hostile, kind):
    path, what = hostile[kind]
    named = tmp_path / f"map_{kind.strip('/').replace('/', '_')}.bt"
    named.symlink_to(path)
    _refused_quickly(lambda: OccupancyMap.load(str(named)), OctomapFileError, str(named), what)


def test_an_octomap_file_is_read_from_the_bytes_checked(tmp_path):
    points = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.2]])
    source = OccupancyMap.from_points(points, 0.05, "points")
    path = tmp_path / "map.bt"
    write_binary_octomap(str(path), source)
    loaded = OccupancyMap.load(str(path))
    assert loaded.n_occupied == source.n_occupied == 2


def test_text_bound_is_what_the_readers_use():
    assert user_files.MAX_TEXT_FILE_BYTES >= 10 * 1024 * 1024       # the largest real URDFs are ~1 MB
