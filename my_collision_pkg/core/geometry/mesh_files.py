"""Mesh files: turning mesh URIs into paths, and reading them as triangle meshes.

:class:`MeshResolver` maps ``package://``, ``file://`` and plain paths to files; it
finds a ROS package through an injected ``find_package_share`` callable (the ROS
adapters pass an ament-index lookup), so the core imports no ROS module.
:func:`load_mesh_file` reads and scales a mesh once per file and scale.
"""
from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from urllib.parse import unquote, urlparse

import numpy as np
import trimesh

from my_collision_pkg.core.errors import MeshError
from my_collision_pkg.core.model.shapes import MAX_MESH_TRIANGLES
from my_collision_pkg.core.user_files import MAX_MESH_FILE_BYTES, FileRefused, read_file_bytes

PACKAGE_SCHEME = "package://"
FILE_SCHEME = "file://"


class MeshResolver:
    """Turns mesh URIs into files.

    ``package://name/rel`` is looked up in the share folder that
    ``find_package_share`` gives for ``name`` (when one is given), then in each
    search folder as ``folder/name/rel`` (or ``folder/rel`` when the folder itself
    is the package). ``file://`` URIs and absolute paths are used as they are;
    relative paths are taken from ``base_dir`` (the URDF's folder), else the
    current folder.

    Parameters
    ----------
    package_paths : sequence of str
        Search folders for ``package://`` URIs (``~`` is expanded).
    base_dir : str, optional
        Folder of relative mesh paths.
    find_package_share : callable, optional
        ``find_package_share(package_name)`` gives the share folder of an installed
        package, or None when it knows no such package (for instance a lookup in the
        ament index). Without it only the search folders are used.
    """

    def __init__(self, package_paths: tuple[str, ...] | list[str] = (), base_dir: str | None = None, *,
                 find_package_share: Callable[[str], str | None] | None = None) -> None:
        self._package_paths = tuple(os.path.expanduser(p) for p in package_paths)
        self._base_dir = base_dir
        self._find_package_share = find_package_share

    @property
    def package_paths(self) -> tuple[str, ...]:
        return self._package_paths

    @property
    def find_package_share(self) -> Callable[[str], str | None] | None:
        """The package lookup given at construction (None: search folders only)."""
        return self._find_package_share

    def resolve(self, uri: str, owner: str) -> str:
        """Path of an existing file for ``uri``.

        Raises
        ------
        MeshError
            If no file exists for the URI (the message lists where it looked).
        """
        tried: list[str] = []
        if uri.startswith(PACKAGE_SCHEME):
            package, _, relative = uri[len(PACKAGE_SCHEME):].partition("/")
            for root in self._package_roots(package):
                candidate = os.path.join(root, relative)
                tried.append(candidate)
                if os.path.isfile(candidate):
                    return candidate
            if not tried:
                folders = f"the search folders {list(self._package_paths)}"
                if self._find_package_share is None:
                    raise MeshError(owner, uri, f"package '{package}' is not in {folders}")
                raise MeshError(owner, uri, f"package '{package}' is not found by the package lookup nor in {folders}")
        elif uri.startswith(FILE_SCHEME):
            path = unquote(urlparse(uri).path)
            tried.append(path)
            if os.path.isfile(path):
                return path
        else:
            path = uri if os.path.isabs(uri) else os.path.join(self._base_dir or os.getcwd(), uri)
            tried.append(path)
            if os.path.isfile(path):
                return path
        raise MeshError(owner, uri, f"file not found (looked at {', '.join(tried)})")

    def _package_roots(self, package: str) -> list[str]:
        """Folders that may hold ``package``'s files: its share folder, then the search folders."""
        roots = []
        if self._find_package_share is not None:
            share = self._find_package_share(package)
            if share:
                roots.append(share)
        for folder in self._package_paths:
            if os.path.isdir(os.path.join(folder, package)):
                roots.append(os.path.join(folder, package))
            if os.path.basename(os.path.normpath(folder)) == package:
                roots.append(folder)
        return roots


CACHE_MAX_TRIANGLES = 100_000   # bigger meshes are read again when named again, not kept for ever
_MESH_CACHE: dict[tuple[str, tuple[float, float, float]], trimesh.Trimesh] = {}
_MESH_CACHE_LOCK = threading.Lock()


# What a mesh file is called in a message, by suffix (others: "mesh").
MESH_FORMATS = {".stl": "STL", ".obj": "OBJ", ".dae": "COLLADA", ".ply": "PLY", ".off": "OFF", ".glb": "glTF",
                ".gltf": "glTF", ".3mf": "3MF"}
STL_HEADER_BYTES = 84               # 80 bytes of text, then the triangle count (uint32)
STL_TRIANGLE_BYTES = 50
TEXT_ENCODING_MODULE = "charset_normalizer"   # trimesh guesses a non-UTF-8 text file's encoding with it


def mesh_format(path: str) -> str:
    """The format a mesh file's name says it has ("STL", "OBJ", ...; "mesh" when unknown)."""
    return MESH_FORMATS.get(os.path.splitext(path)[1].lower(), "mesh")


def stl_fault(data: bytes) -> str | None:
    """Why the bytes of a file are neither a binary nor an ASCII STL, or None when they may be one.

    A binary STL is an 84-byte header whose last four bytes count the triangles, then
    50 bytes per triangle; an ASCII STL starts with ``solid``. (A file that passes may
    still be malformed: trimesh's reader tells.)
    """
    size, head = len(data), data[:STL_HEADER_BYTES]
    count = int.from_bytes(head[80:STL_HEADER_BYTES], "little") if len(head) == STL_HEADER_BYTES else None
    if count is not None and STL_HEADER_BYTES + STL_TRIANGLE_BYTES * count == size:
        return None
    if head.lstrip()[:5].lower() == b"solid":
        return None
    if count is None:
        return (f"{size} bytes, shorter than a binary STL's {STL_HEADER_BYTES}-byte header, and not an ASCII STL "
                "(it does not start with 'solid')")
    return (f"neither a binary STL (its header counts {count} triangles, {STL_HEADER_BYTES + STL_TRIANGLE_BYTES * count} "
            f"bytes, but the file has {size}) nor an ASCII STL (it does not start with 'solid')")


def load_mesh_file(path: str, scale: tuple[float, float, float], owner: str, uri: str) -> trimesh.Trimesh:
    """Read a mesh file (STL, OBJ, DAE, PLY, ...) as one triangle mesh, scaled.

    Meshes of at most ``CACHE_MAX_TRIANGLES`` triangles are cached per real path and
    scale: the same file is read once.

    Raises
    ------
    MeshError
        If the file cannot be read, is not a valid file of its format (``mesh file
        '<path>' is not a valid STL: ...``) or holds no triangles.
    """
    key = (os.path.realpath(path), tuple(scale))
    with _MESH_CACHE_LOCK:
        cached = _MESH_CACHE.get(key)
    if cached is not None:
        return cached
    kind = mesh_format(path)
    invalid = f"mesh file '{path}' is not a valid {kind}"
    try:
        data = read_file_bytes(path, MAX_MESH_FILE_BYTES, "MAX_MESH_FILE_BYTES")
    except FileRefused as exc:
        raise MeshError(owner, uri, f"mesh file '{path}' cannot be read ({exc})") from exc
    fault = stl_fault(data) if kind == "STL" else None
    if fault is not None:
        raise MeshError(owner, uri, f"{invalid}: {fault}")
    try:
        # from the bytes read (bounded); files the mesh names (an OBJ's materials) beside it
        mesh = trimesh.load(io.BytesIO(data), file_type=os.path.splitext(path)[1].lower().lstrip(".") or None,
                            resolver=trimesh.resolvers.FilePathResolver(path), force="mesh")
    except ModuleNotFoundError as exc:
        if exc.name != TEXT_ENCODING_MODULE:
            raise MeshError(owner, uri, f"mesh file '{path}' cannot be read: trimesh needs the Python module "
                                        f"'{exc.name}'") from exc
        raise MeshError(owner, uri, f"{invalid}: its text is not UTF-8, and guessing its encoding needs the Python "
                                    f"package '{TEXT_ENCODING_MODULE}' (charset-normalizer), which is not "
                                    "installed") from exc
    except OSError as exc:
        raise MeshError(owner, uri, f"mesh file '{path}' cannot be read ({exc.strerror or exc})") from exc
    except Exception as exc:  # trimesh raises many types for malformed files
        raise MeshError(owner, uri, f"{invalid}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise MeshError(owner, uri, f"mesh file '{path}' holds no triangles (an empty or truncated {kind}?)")
    if len(mesh.faces) > MAX_MESH_TRIANGLES:
        raise MeshError(owner, uri, f"mesh file '{path}' has {len(mesh.faces)} triangles, more than the bound of "
                                    f"{MAX_MESH_TRIANGLES} (MAX_MESH_TRIANGLES); simplify it")
    if not np.allclose(scale, 1.0):
        mesh = mesh.copy()
        mesh.apply_scale(np.asarray(scale, dtype=float))
    mesh.merge_vertices()
    if len(mesh.faces) <= CACHE_MAX_TRIANGLES:     # a big one is not kept once its object is gone
        with _MESH_CACHE_LOCK:
            _MESH_CACHE[key] = mesh
    return mesh
