"""The ``FileStore`` of a local workspace: its files through the fs port (``_store``).

Bytes are the disk's: a file keeps its encoding and BOM, a binary file is reported as
binary, and large files' hashes and texts come from the content memo (``text/_memo``).
One file is published by ``_write.replace_locked`` (the host's validators, a snapshot
when a ``message_id`` is given, an atomic replace re-verified byte for byte, the
session's new access record); a patch by ``patch/_patch_commit`` (one journaled
transaction). The fs port declares what it supports (``_fs.FileSystem.supports``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager

from editspec.reference import _errors
from editspec.reference._context import SessionContext, WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._store import Loaded, PatchFile, Published
from editspec.reference._supports import Supports
from editspec.reference.patch import _patch_commit
from editspec.reference.patch._patch_model import check_patch_size
from editspec.reference.paths._paths import MISSING, WorkspacePath
from editspec.reference.text import _text
from editspec.reference.text._memo import LineIndex
from editspec.reference.tools import _edit_text, _ranges
from editspec.reference.tools._write import refuse_non_file, replace_locked


class _SessionOf:
    """The session a store publishes for: its workspace and its id (``SessionContext``)."""

    def __init__(self, workspace: WorkspaceContext, session_id: str) -> None:
        self.workspace = workspace
        self.id = session_id


class DiskStore:
    """A local workspace's files, through its fs port. Spec: READ-*, WRITE-*, EDIT-*, PATCH-*."""

    def __init__(self, workspace: WorkspaceContext) -> None:
        self.workspace = workspace

    @property
    def supports(self) -> Supports:
        return self.workspace.fs.supports

    def resolve(self, path: str | os.PathLike[str]) -> WorkspacePath:
        return self.workspace.resolve(path)

    def hold(self, keys: Iterable[str]) -> AbstractContextManager[None]:
        return self.workspace.locks.hold(keys)

    # -- reading ---------------------------------------------------------------------

    def load(self, target: WorkspacePath, encoding: str) -> Loaded:
        workspace = self.workspace
        try:
            data = workspace.memo.read(workspace.fs, target.canonical_key, target.real)
            mtime_ns = workspace.fs.lstat(target.real).st_mtime_ns
        except OSError as exc:
            raise _errors.from_oserror(exc, target.logical_relative, action="read") from exc
        # Hashed on another core while the text decodes (or known, for bytes seen before).
        pending_digest = workspace.memo.sha256_later(target.canonical_key, data)
        if encoding == _ranges.AUTO:
            decoded = workspace.memo.decode(target.canonical_key, data, count_lines=True)
        elif encoding == _text.BINARY:
            decoded = None
        else:
            decoded = _text.decode_as(data, encoding)
            if decoded is None:
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    f"{target.logical_relative} is not valid {encoding}",
                    path=target.logical_relative,
                    encoding=encoding,
                )
        return Loaded(data=data, digest=pending_digest(), decoded=decoded, mtime_ns=mtime_ns)

    def read_for_write(self, target: WorkspacePath) -> bytes | None:
        refuse_non_file(target)
        if target.kind == MISSING:
            return None
        try:
            return self.workspace.fs.read_bytes(target.real)
        except FileNotFoundError as exc:
            raise ToolError(
                _errors.STALE,
                f"{target.logical_relative} disappeared while it was being written; try again",
                path=target.logical_relative,
            ) from exc
        except OSError as exc:
            raise _errors.from_oserror(exc, target.logical_relative, action="read") from exc

    def read_for_edit(self, target: WorkspacePath) -> bytes | None:
        if target.kind == MISSING:
            return None
        workspace = self.workspace
        shown = target.logical_relative
        try:
            size = workspace.fs.lstat(target.real).st_size
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _errors.from_oserror(exc, shown, action="inspect") from exc
        _edit_text.check_edit_size(workspace.limits, shown, size, "is")
        try:
            data = workspace.memo.read(workspace.fs, target.canonical_key, target.real)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _errors.from_oserror(exc, shown, action="read") from exc
        _edit_text.check_edit_size(workspace.limits, shown, len(data), "is")
        return data

    def read_for_patch(self, target: WorkspacePath, display: str) -> tuple[bytes, int | None]:
        status = self._lstat(target.real)
        if status is None:
            raise ToolError(_errors.NOT_FOUND, f"{display} does not exist", path=display)
        if stat.S_ISDIR(status.st_mode):
            raise ToolError(_errors.IS_A_DIRECTORY, f"{display} is a directory", path=display)
        if not stat.S_ISREG(status.st_mode):
            raise ToolError(
                _errors.INVALID_ARGUMENT, f"{display} is not a regular file", path=display
            )
        check_patch_size(self.workspace.limits, display, status.st_size)
        try:
            data = self.workspace.fs.read_bytes(target.real)
        except OSError as exc:
            raise _errors.from_oserror(exc, display, action="read") from exc
        check_patch_size(self.workspace.limits, display, len(data))
        return data, stat.S_IMODE(status.st_mode)

    def exists(self, target: WorkspacePath) -> bool:
        return self._lstat(target.real) is not None

    def is_link(self, target: WorkspacePath) -> bool:
        """Whether the path as spelled (not its real file) is a symbolic link."""
        if not target.crossed_link:
            return False
        parent = self.workspace.resolve(os.path.dirname(target.logical))
        status = self._lstat(os.path.join(parent.real, os.path.basename(target.logical)))
        return status is not None and stat.S_ISLNK(status.st_mode)

    def _lstat(self, real: str) -> os.stat_result | None:
        try:
            return self.workspace.fs.lstat(real)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _errors.from_oserror(exc, real, action="inspect") from exc

    # -- texts -------------------------------------------------------------------------

    def text_of(self, data: bytes) -> _text.DecodedText | None:
        return _text.decode(data)

    def encode_text(self, text: str, like: _text.DecodedText | None) -> bytes:
        return _text.encode(text, like)

    def decode(self, target: WorkspacePath, data: bytes) -> _text.DecodedText | None:
        return self.workspace.memo.decode(target.canonical_key, data)

    def line_index(self, target: WorkspacePath, data: bytes) -> LineIndex | None:
        return self.workspace.memo.line_index(target.canonical_key, data)

    def sha256_later(self, target: WorkspacePath, data: bytes) -> Callable[[], str]:
        return self.workspace.memo.sha256_later(target.canonical_key, data)

    def remember_text(
        self,
        target: WorkspacePath,
        data: bytes,
        decoded: _text.DecodedText,
        *,
        nul_free: bool,
        lines: LineIndex | None,
    ) -> None:
        self.workspace.memo.remember_text(
            target.canonical_key, data, decoded, lines=lines, nul_free=nul_free
        )

    # -- publishing --------------------------------------------------------------------

    def replace(
        self,
        session_id: str,
        target: WorkspacePath,
        old_bytes: bytes | None,
        new_bytes: bytes,
        *,
        message_id: str | None,
        new_sha256: Callable[[], str] | None,
        operation: str,
    ) -> tuple[bool, tuple[str, ...]]:
        session: SessionContext = _SessionOf(self.workspace, session_id)
        return replace_locked(
            session,
            target,
            old_bytes,
            new_bytes,
            message_id=message_id,
            new_sha256=new_sha256,
            operation=operation,
        )

    def publish_patch(
        self,
        session_id: str,
        files: Sequence[PatchFile],
        *,
        message_id: str | None,
    ) -> Published:
        return _patch_commit.commit_patch(self.workspace, session_id, files, message_id=message_id)
