"""Paths, locks, hashes and texts of a remote workspace (DESIGN §4 "Remote", REMOTE-*).

A remote path is confined to the root lexically (``resolve_remote``): the client owns
its files and their links, so the absolute path is the canonical key. Locks are
in-process, one per key, taken in sorted order. A remote file's hash is the sha256 of
its text's UTF-8 bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._store import UNKNOWN


def text_sha256(text: str) -> str:
    """The hash of a remote file: sha256 of its text's UTF-8 bytes. Spec: REMOTE-*."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen(kw_only=True)
class RemotePath:
    """A path confined to the remote root (lexically)."""

    requested: str
    absolute: str  # what the service is asked for; also the canonical key
    relative: str  # "/"-separated, relative to the root: what results report

    @property
    def canonical_key(self) -> str:
        return self.absolute

    @property
    def logical_relative(self) -> str:
        return self.relative

    @property
    def kind(self) -> str:
        return UNKNOWN  # the service says nothing of a path until it is read


class KeyLocks:
    """One in-process lock per canonical key, taken in sorted order (LOCK-*)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.RLock] = {}

    @contextlib.contextmanager
    def hold(self, keys: Iterable[str]) -> Iterator[None]:
        ordered = sorted(set(keys))
        with self._guard:
            locks = [self._locks.setdefault(key, threading.RLock()) for key in ordered]
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            yield


def resolve_remote(pm: Any, root: str, path: str | os.PathLike[str]) -> RemotePath:
    """Confine ``path`` to ``root`` lexically with ``pm`` (posixpath or ntpath). Spec: REMOTE-*."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "path must be a string")
    if "\0" in path:
        raise ToolError(_errors.INVALID_ARGUMENT, "path contains a NUL byte", path=path)
    if not path:
        raise ToolError(_errors.INVALID_ARGUMENT, "path is empty")
    joined = path if pm.isabs(path) else pm.join(root, path)
    absolute = pm.normpath(joined)
    if absolute == root or path.endswith(("/", pm.sep)):
        raise ToolError(_errors.IS_A_DIRECTORY, f"{path} names a directory", path=path)
    inside = root if root.endswith(pm.sep) else root + pm.sep
    if not absolute.startswith(inside):
        raise ToolError(_errors.OUTSIDE_WORKSPACE, f"{path} is outside the workspace", path=path)
    relative = pm.relpath(absolute, root).replace("\\", "/")
    return RemotePath(requested=path, absolute=absolute, relative=relative)


def client_bytes(text: str, target: RemotePath) -> bytes:
    """The UTF-8 bytes of a client's text; IO_ERROR for text that is not valid Unicode."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            _errors.IO_ERROR,
            f"the client returned text for {target.relative} that is not valid Unicode "
            f"(a lone surrogate at character {exc.start})",
            path=target.relative,
        ) from exc
