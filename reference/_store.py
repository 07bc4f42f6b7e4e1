"""What the file tools need of the service a session's files live in: the ``FileStore``.

Read, Write, Edit, ApplyPatch and notebook edits (``tools/_read``, ``tools/_write``,
``tools/_edit``, ``tools/_notebook``, ``patch/_patch``) are written once, against this
protocol and the service's ``Supports`` (``_supports``): argument checks, resolution
and locking, read-before-write, the edit cascade, hunks, diffs, results and access
records are theirs. A store does what only the service can: resolve a path, read a
file, turn its bytes into text, and publish a change by the service's own strategy.

* ``tools/_disk.DiskStore``: a local workspace's fs port. Bytes as they are on disk
  (encodings, BOMs, binary files), the content memo, an atomic replace re-verified byte
  for byte with a snapshot, a patch as one journaled transaction.
* ``remote/_text_store.TextStore``: a ``FileService`` (an ACP client). The text the
  client gives, hashed as its UTF-8 bytes; a change published by whole-file writes,
  each read back, restored in reverse order on failure (``remote/_remote_commit``).

A target is what the store's ``resolve`` returns (``paths/_paths.WorkspacePath``,
``remote/_remote_paths.RemotePath``); the tools read only the attributes of ``Target``
and hand it back to the store. Its ``kind`` is ``file``, ``dir``, ``other`` or
``missing`` when the service can tell without reading, ``unknown`` otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import attrs

from editspec.reference._limits import Limits
from editspec.reference._supports import Supports
from editspec.reference.guards._access import AccessTracker
from editspec.reference.guards._hooks import Hooks
from editspec.reference.text._memo import LineIndex
from editspec.reference.text._text import DecodedText

UNKNOWN = "unknown"  # a target's kind when the service says nothing until it is read

TargetT = TypeVar("TargetT")


class Target(Protocol):
    """A resolved path, as the tools see it."""

    @property
    def requested(self) -> str:
        """The path as the caller wrote it."""

    @property
    def canonical_key(self) -> str:
        """One key per file: its lock and its read records."""

    @property
    def relative(self) -> str:
        """The file's path relative to the root ("/"-separated)."""

    @property
    def logical_relative(self) -> str:
        """The path results report."""

    @property
    def kind(self) -> str:
        """``file``, ``dir``, ``other``, ``missing`` or ``unknown``."""


@attrs.frozen(kw_only=True)
class Loaded:
    """A whole file as Read reports it."""

    data: bytes
    digest: str  # sha256 of ``data``
    decoded: DecodedText | None  # None: binary
    mtime_ns: int  # 0 where the service has no times


@attrs.frozen(kw_only=True)
class PatchFile:
    """One file of a patch, computed in memory: what the store publishes."""

    op: str  # "add" | "update" | "delete" | "move"
    source: Any  # the store's target
    dest: Any  # the new path of a move (None otherwise)
    old_bytes: bytes | None
    new_bytes: bytes | None
    mode: int | None
    executable: bool | None


@attrs.frozen(kw_only=True)
class Published:
    """What publishing a patch reported."""

    snapshot_created: bool
    transaction_id: str  # "" where changes are not journaled


class FileStore(Protocol[TargetT]):
    """The service-specific steps of the file tools (see the module docstring)."""

    @property
    def supports(self) -> Supports:
        """The service's declarations."""

    def resolve(self, path: str | os.PathLike[str]) -> TargetT:
        """Confine and resolve a caller's path."""

    def hold(self, keys: Iterable[str]) -> AbstractContextManager[None]:
        """The locks of ``keys``, taken in sorted order."""

    def load(self, target: TargetT, encoding: str) -> Loaded:
        """The whole file for Read, decoded as ``encoding`` asks (``auto``: sniffed)."""

    def read_for_write(self, target: TargetT) -> bytes | None:
        """The bytes Write replaces; None when there is no file."""

    def read_for_edit(self, target: TargetT) -> bytes | None:
        """The bytes Edit changes (TOO_LARGE over the edit limit); None when none."""

    def read_for_patch(self, target: TargetT, display: str) -> tuple[bytes, int | None]:
        """The bytes and mode bits of a file a patch changes (NOT_FOUND, TOO_LARGE)."""

    def exists(self, target: TargetT) -> bool:
        """Whether something is at the target's path now."""

    def is_link(self, target: TargetT) -> bool:
        """Whether the path as spelled is a symbolic link (a Delete or Move refuses it)."""

    def text_of(self, data: bytes) -> DecodedText | None:
        """``data`` as text (None: binary), as the service holds text."""

    def encode_text(self, text: str, like: DecodedText | None) -> bytes:
        """The bytes of ``text`` in the encoding of ``like`` (None: UTF-8), as held here."""

    def decode(self, target: TargetT, data: bytes) -> DecodedText | None:
        """The file's text (None: binary), remembered for the next call where it pays."""

    def line_index(self, target: TargetT, data: bytes) -> LineIndex | None:
        """The line index of the file's text when one is kept."""

    def sha256_later(self, target: TargetT, data: bytes) -> Callable[[], str]:
        """The sha256 of ``data``, computed while the caller goes on."""

    def remember_text(
        self,
        target: TargetT,
        data: bytes,
        decoded: DecodedText,
        *,
        nul_free: bool,
        lines: LineIndex | None,
    ) -> None:
        """Keep the text of bytes about to be written for the next read or edit."""

    def replace(
        self,
        session_id: str,
        target: TargetT,
        old_bytes: bytes | None,
        new_bytes: bytes,
        *,
        message_id: str | None,
        new_sha256: Callable[[], str] | None,
        operation: str,
    ) -> tuple[bool, tuple[str, ...]]:
        """Publish one file with its key lock held; ``(snapshot_created, warnings)``."""

    def publish_patch(
        self,
        session_id: str,
        files: Sequence[PatchFile],
        *,
        message_id: str | None,
    ) -> Published:
        """Publish every file of a patch, all or nothing, and record the session's writes."""


class FilesWorkspace(Protocol):
    """What the file tools need of a workspace, local or remote."""

    @property
    def limits(self) -> Limits:
        """The workspace's limits."""

    @property
    def access(self) -> AccessTracker:
        """Per-session read records (TRACK)."""

    @property
    def store(self) -> FileStore[Any]:
        """The service the workspace's files live in."""

    @property
    def hooks(self) -> Hooks:
        """The host's deny rules, validators and change listeners."""

    @property
    def supports(self) -> Supports:
        """The service's declarations (``store.supports``)."""


class FilesSession(Protocol):
    """One session, as the file tools use it."""

    @property
    def workspace(self) -> FilesWorkspace:
        """The session's workspace."""

    @property
    def id(self) -> str:
        """The session id: the key of its read records."""
