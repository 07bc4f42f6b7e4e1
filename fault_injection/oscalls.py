"""What the os-level interceptor knows about ``os`` calls, and the records it makes.

Which functions of ``os`` change the disk (``ALWAYS_MUTATING``; ``open`` only with
``CREATING_FLAGS``), which a dead process cannot call either (``REFUSED_AFTER_CRASH``,
``FCNTL_FUNCTIONS``), and the two records ``editspec.fault_injection.osfaults``'s
``OsInterceptor`` keeps: ``OsEvent`` for its observers, ``OsCall`` for its trace.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

import attrs

# Functions of ``os`` whose every call changes the disk (those present on this platform).
ALWAYS_MUTATING: tuple[str, ...] = (
    "write",
    "pwrite",
    "writev",
    "pwritev",
    "sendfile",
    "copy_file_range",
    "ftruncate",
    "truncate",
    "fsync",
    "fdatasync",
    "sync",
    "replace",
    "rename",
    "link",
    "symlink",
    "unlink",
    "remove",
    "mkdir",
    "rmdir",
    "chmod",
    "fchmod",
    "lchmod",
    "chown",
    "fchown",
    "lchown",
    "utime",
    "mkfifo",
    "mknod",
)
# Functions without an effect on the disk that a dead process cannot call either: after a
# crash they raise too, so cleanup code cannot even inspect the files it would repair.
REFUSED_AFTER_CRASH: tuple[str, ...] = (
    "stat",
    "lstat",
    "fstat",
    "read",
    "pread",
    "readv",
    "lseek",
    "listdir",
    "scandir",
    "readlink",
    "access",
    "dup",
    "dup2",
)
FCNTL_FUNCTIONS: tuple[str, ...] = ("flock", "lockf", "fcntl")
CREATING_FLAGS = os.O_CREAT | os.O_TRUNC
SUPPORT_SETS = ("supports_dir_fd", "supports_fd", "supports_follow_symlinks")


@attrs.frozen
class OsEvent:
    """A call that succeeded: ``name`` is the ``os`` function (or ``"open"`` for ``open()``,
    ``"file.write"`` and ``"file.close"`` for its file objects); ``index`` the mutating
    call it was counted as (0: not counted). For ``file.write``, ``args`` is
    ``(fd, data, offset)``: the bytes that reached the file and where."""

    name: str
    index: int
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    result: Any = None


Observer = Callable[[OsEvent], None]


@attrs.frozen
class OsCall:
    """One intercepted call: ``index`` counts mutating calls from 1 (0: not mutating)."""

    index: int
    name: str
    detail: str
    kind: str = ""  # "file" or "dir" for calls on a descriptor, when known
    paths: tuple[str, ...] = ()  # the path arguments, as given (names relative to a dir_fd)


def flags_of(mode: str) -> int:
    """The ``os.open`` flags of an ``open()`` mode."""
    flags = os.O_RDWR if "+" in mode else os.O_RDONLY if "r" in mode else os.O_WRONLY
    if "w" in mode:
        flags |= os.O_CREAT | os.O_TRUNC
    elif "x" in mode:
        flags |= os.O_CREAT | os.O_EXCL
    elif "a" in mode:
        flags |= os.O_CREAT | os.O_APPEND
    return flags


def paths_of(args: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(
        os.fsdecode(os.fspath(value))
        for value in args[:2]
        if isinstance(value, (str, bytes, os.PathLike))
    )


def descriptor_kind(fd: int) -> str:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return ""
    return "dir" if stat.S_ISDIR(mode) else "file"


__all__ = [
    "ALWAYS_MUTATING",
    "CREATING_FLAGS",
    "FCNTL_FUNCTIONS",
    "REFUSED_AFTER_CRASH",
    "SUPPORT_SETS",
    "Observer",
    "OsCall",
    "OsEvent",
    "descriptor_kind",
    "flags_of",
    "paths_of",
]
