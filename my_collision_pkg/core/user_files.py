"""Reading a file a user names (URDF, SRDF, xacro, world YAML, meshes, octomaps): bounded and regular only.

A path from a request or a parameter may name anything: a directory, a FIFO that no
one writes to (``open`` would wait for a writer forever), a device such as
``/dev/zero`` that never ends and whose reported size is 0, or a file far larger than
any robot description. :func:`read_file_bytes` is the one reader for all of them:

- the file is opened without waiting (``O_NONBLOCK``), and what was opened is checked
  (``fstat`` of the open descriptor, so a symlink is judged by its target): anything
  but a regular file is refused by kind;
- the bound is on bytes actually read, not on the size the file system reports: reading
  stops one byte past ``max_bytes`` and refuses.

It raises :class:`FileRefused` with a reason (no path); callers put the path and what
the file is in front, in their own error type (``ModelError``, ``SceneError``,
``MeshError``, ``OctomapFileError``).
"""
from __future__ import annotations

import io
import os
import stat

# URDF, SRDF, xacro and world YAML files: the largest real robot description seen is ~1 MB.
MAX_TEXT_FILE_BYTES = 64 * 1024 * 1024
# Mesh files: a binary STL of MAX_MESH_TRIANGLES (1,000,000) triangles is 50 MB; OBJ and DAE
# text take a few times that.
MAX_MESH_FILE_BYTES = 512 * 1024 * 1024
_READ_CHUNK_BYTES = 4 * 1024 * 1024

_KINDS = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


class FileRefused(Exception):
    """A user-named file that is not read: the reason, without the path."""


def not_regular_reason(mode: int) -> str | None:
    """Why a file of ``st_mode`` ``mode`` is not read ("is a directory, not a regular file"), or None."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "special file")
    return f"is a {kind}, not a regular file"


def read_file_bytes(path: str, max_bytes: int, bound_name: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    Parameters
    ----------
    path : str
        The file; a symlink is followed and its target judged.
    max_bytes : int
        The most bytes read; a file holding more is refused after reading ``max_bytes + 1``.
    bound_name : str
        The bound's name for the message (e.g. ``"MAX_TEXT_FILE_BYTES"``).

    Raises
    ------
    FileRefused
        The file cannot be opened (missing, no permission), is not a regular file (a
        directory, FIFO, device or socket), or holds more than ``max_bytes`` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FileRefused(exc.strerror or str(exc)) from exc
    try:
        reason = not_regular_reason(os.fstat(fd).st_mode)
        if reason is not None:
            raise FileRefused(reason)
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(_READ_CHUNK_BYTES, max_bytes + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise FileRefused(f"holds more than {max_bytes} bytes (the bound {bound_name})")
    except OSError as exc:
        raise FileRefused(exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def read_text(path: str, max_bytes: int = MAX_TEXT_FILE_BYTES, bound_name: str = "MAX_TEXT_FILE_BYTES") -> str:
    """The UTF-8 text of the regular file ``path``, bounded as :func:`read_file_bytes`.

    Raises
    ------
    FileRefused
        As :func:`read_file_bytes`, or the bytes are not UTF-8.
    """
    data = read_file_bytes(path, max_bytes, bound_name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"is not UTF-8 text (byte {exc.start})") from exc


def open_text(path: str, mode: str = "r", *args, **kwargs):
    """An ``open`` for third-party readers (xacro's includes): reading gives a text stream of
    :func:`read_text`; any other mode is refused. Raises OSError (what such readers expect),
    naming the path and the reason."""
    if mode not in ("r", "rt"):
        raise OSError(f"'{path}': opened with mode '{mode}'; only reading is allowed here")
    try:
        return io.StringIO(read_text(os.fspath(path)))
    except FileRefused as exc:
        error = OSError(f"{exc}")
        error.strerror, error.filename = str(exc), os.fspath(path)
        raise error from exc
