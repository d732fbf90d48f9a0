"""Reading the files the core is described by: URDF, SRDF (plain or xacro) and world YAML.

:func:`read_text_file` is the one place such a file is opened; :func:`parse_file` and
:func:`parse_description_file` read a file and hand its text to a parser, and
re-raise the parser's errors with the file's path in front. A file whose name
ends in ``.xacro`` (``robot.urdf.xacro``, ``robot.srdf.xacro``) is expanded by the
``xacro`` Python package first, with optional ``name:=value`` arguments
(:func:`read_description`, :func:`parse_xacro_args`).
"""
from __future__ import annotations

import contextlib
import os
import shlex
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from my_collision_pkg.core.errors import CollisionPkgError, ModelError
from my_collision_pkg.core.user_files import FileRefused, open_text, read_text

T = TypeVar("T")
XACRO_SUFFIX = ".xacro"
# xacro keeps its file stack and arguments in module globals: one expansion at a time.
_XACRO_LOCK = threading.Lock()


def read_text_file(path: str, what: str, *, error: type[CollisionPkgError] = ModelError) -> str:
    """The UTF-8 text of a file.

    Parameters
    ----------
    path : str
        The file.
    what : str
        What the file is (``"URDF"``, ``"SRDF"``, ``"world"``), for the message.
    error : type of CollisionPkgError
        The exception raised when the file cannot be read.

    Raises
    ------
    CollisionPkgError
        Of type ``error``: ``cannot read <what> file '<path>': <reason>``; the reasons are
        :func:`core.user_files.read_file_bytes`'s (missing, not a regular file, more than
        MAX_TEXT_FILE_BYTES) and text that is not UTF-8.
    """
    try:
        return read_text(path)
    except FileRefused as exc:
        raise error(f"cannot read {what} file '{path}': {exc}") from exc


@contextlib.contextmanager
def _errors_name_the_file(path: str, what: str, error: type[CollisionPkgError],
                          rewrapped: type[CollisionPkgError]) -> Iterator[None]:
    """Re-raise a ``rewrapped`` error from the block as ``error("<what> file '<path>': ...")``."""
    try:
        yield
    except rewrapped as exc:
        raise error(f"{what} file '{path}': {exc}") from exc


def parse_file(path: str, what: str, parse: Callable[[str], T], *, error: type[CollisionPkgError] = ModelError,
               rewrapped: type[CollisionPkgError] = ModelError) -> T:
    """What ``parse`` makes of a file's text, read as it is (no xacro expansion).

    Parameters
    ----------
    path : str
        The file.
    what : str
        What the file is (``"URDF"``, ``"SRDF"``, ``"world"``), for the messages.
    parse : callable
        ``parse(text)`` gives the result or raises a ``rewrapped`` error.
    error : type of CollisionPkgError
        The exception raised, naming the file.
    rewrapped : type of CollisionPkgError
        The errors of ``parse`` that are re-raised as ``error`` with the file named.

    Raises
    ------
    CollisionPkgError
        Of type ``error``: ``cannot read <what> file '<path>': <reason>`` or
        ``<what> file '<path>': <what parse said>``.
    """
    text = read_text_file(path, what, error=error)
    with _errors_name_the_file(path, what, error, rewrapped):
        return parse(text)


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
    text = read_text_file(path, kind)      # the top file: refused here as a plain one would be
    if not is_xacro(path):
        return text
    import xacro  # only xacro files need it

    with _XACRO_LOCK:
        # xacro opens the files it includes (and loads with load_yaml) with the builtin open,
        # looked up in its module's globals: pointed at the bounded reader while it expands ours
        xacro.open = open_text
        try:
            document = xacro.process_file(os.path.abspath(path), mappings=dict(xacro_args or {}))
        except Exception as exc:  # xacro raises many types (XacroException, ExpatError, NameError, ...)
            raise ModelError(f"{kind} file '{path}': xacro failed: {type(exc).__name__}: {exc}") from exc
        finally:
            del xacro.open
            xacro.substitution_args_context["arg"] = {}
    return document.toprettyxml(indent="  ")


def parse_description_file(path: str, kind: str, parse: Callable[[str], T],
                           xacro_args: Mapping[str, str] | None = None) -> T:
    """What ``parse`` makes of a robot description file's XML (a ``.xacro`` file expanded first).

    Parameters
    ----------
    path : str
        A URDF or SRDF file, plain or xacro.
    kind : str
        ``"URDF"`` or ``"SRDF"``, for the messages.
    parse : callable
        ``parse(xml)`` gives the result or raises a ModelError.
    xacro_args : mapping of str to str, optional
        See :func:`read_description`.

    Raises
    ------
    ModelError
        If the file cannot be read or expanded, or ``parse`` fails (``<kind> file '<path>': ...``).
    """
    xml = read_description(path, kind, xacro_args)
    with _errors_name_the_file(path, kind, ModelError, ModelError):
        return parse(xml)
