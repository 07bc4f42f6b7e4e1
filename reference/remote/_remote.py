"""Remote workspaces: sessions whose files live in an editor, reached through a ``FileService``.

A session is remote because of how it was opened — ``RemoteWorkspace(files, root)``,
``RemoteWorkspace.over_acp(connection, acp_session_id, root, loop=...)`` or
``RemoteWorkspace.over_socket(sock, acp_session_id, root)`` — never because of what a
path looks like. What a remote session does (DESIGN §2 profile Remote, REMOTE-*):

* Read: the whole text the client returns; ranges are cut from it here. The hash of
  that text (its UTF-8 bytes) is what read-before-write and stale detection compare,
  exactly as locally. Text only: the client has no bytes to give.
* Write (text; bytes only when they are UTF-8 text, else UNSUPPORTED) and Edit (the
  same matching cascade as locally): the freshness check, then ``_remote_commit.publish``
  — re-read, write, read back, restore on failure.
* ApplyPatch: Update only. Add, Delete and Move (and a notebook update) fail closed
  with UNSUPPORTED before anything is written; the Updates are published in patch
  order with the verified restore of ``_remote_commit``.
* Rewind, Glob, Grep, List directory and notebook cells: UNSUPPORTED (no directory
  operations, no delete; no snapshots are kept, and a ``message_id`` is accepted with
  ``snapshot_created=False`` and a warning).
* Paths are confined to the root lexically: the client owns the files and their links.
  A failed call is never retried on a local file of the same name.
"""

from __future__ import annotations

import hashlib
import ntpath
import os
import posixpath
import re
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._limits import Limits
from editspec.reference._results import (
    EditResult,
    EditSpec,
    FileChange,
    PatchResult,
    ReadResult,
    RecoveryReport,
    WriteResult,
)
from editspec.reference.guards._access import AccessTracker
from editspec.reference.patch import _patch_parse, _patch_plan
from editspec.reference.remote._fileservice import FileService
from editspec.reference.remote._remote_commit import RemoteChange, publish, read_or_none
from editspec.reference.remote._remote_paths import (
    KeyLocks,
    RemotePath,
    client_bytes,
    content_text,
    resolve_remote,
    text_sha256,
    utf8_size,
)
from editspec.reference.text._diff import unified_diff
from editspec.reference.text._text import UTF8, DecodedText, newline_style
from editspec.reference.tools import _edit_text, _ranges
from editspec.reference.tools._write import check_expected_sha256, check_message_id

if TYPE_CHECKING:
    from editspec.reference.remote._acp import AcpChannel

NOTEBOOK_SUFFIX = ".ipynb"
NO_SNAPSHOT_WARNING = (
    "no snapshot was recorded: a remote workspace keeps no snapshots, and rewind is "
    "not available for it"
)
_WINDOWS_ROOT = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


class RemoteWorkspace:
    """A workspace whose files are reached only through a ``FileService``. Spec: REMOTE-*."""

    def __init__(
        self,
        files: FileService,
        root: str,
        limits: Limits | None = None,
        *,
        channel: AcpChannel | None = None,
    ) -> None:
        if not isinstance(files, FileService):
            raise ToolError(_errors.INVALID_ARGUMENT, "files must be a FileService")
        if not isinstance(root, str) or not root or "\0" in root:
            raise ToolError(_errors.INVALID_ARGUMENT, "the remote root must be a non-empty path")
        self._pathmod = ntpath if _WINDOWS_ROOT.match(root) else posixpath
        if not self._pathmod.isabs(root):
            raise ToolError(
                _errors.INVALID_ARGUMENT, f"the remote root must be an absolute path, not {root!r}"
            )
        self.files = files
        self.root: str = self._pathmod.normpath(root)
        self.limits = limits if limits is not None else Limits()
        self.access = AccessTracker()
        self.locks = KeyLocks()
        self._channel = channel

    @classmethod
    def over_acp(
        cls,
        connection: Any,
        acp_session_id: str,
        root: str,
        *,
        loop: Any,
        timeout: float | None = None,
        client_capabilities: Any = None,
        limits: Limits | None = None,
    ) -> RemoteWorkspace:
        """Files of an ACP client: ``connection`` is the agent side, running on ``loop``."""
        from editspec.reference.remote._acp import DEFAULT_TIMEOUT, AcpFileService

        files = AcpFileService(
            connection,
            acp_session_id,
            loop=loop,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            client_capabilities=client_capabilities,
        )
        return cls(files, root, limits)

    @classmethod
    def over_socket(
        cls,
        sock: socket.socket,
        acp_session_id: str,
        root: str,
        *,
        timeout: float | None = None,
        client_capabilities: Any = None,
        limits: Limits | None = None,
    ) -> RemoteWorkspace:
        """Files of the ACP client at the other end of ``sock``; ``close()`` closes it."""
        from editspec.reference.remote._acp import DEFAULT_TIMEOUT, AcpChannel

        channel = AcpChannel.over_socket(sock)
        files = channel.file_service(
            acp_session_id,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            client_capabilities=client_capabilities,
        )
        return cls(files, root, limits, channel=channel)

    def session(self, session_id: str) -> RemoteSession:
        """A session: its own read records. Spec: TRACK-*, REMOTE-*."""
        if not isinstance(session_id, str) or not session_id or "\0" in session_id:
            raise ToolError(_errors.INVALID_ARGUMENT, "session id must be a non-empty string")
        return RemoteSession(self, session_id)

    def resolve(self, path: str | os.PathLike[str]) -> RemotePath:
        """Confine ``path`` to the root, lexically (the client owns links). Spec: REMOTE-*."""
        return resolve_remote(self._pathmod, self.root, path)

    def ensure_writable(self) -> None:
        """Nothing is journaled remotely, so nothing ever waits for recovery."""

    def recover(self) -> RecoveryReport:
        """Nothing to recover: a remote change has no journal (its failures are reported)."""
        return RecoveryReport()

    def close(self) -> None:
        """Close the ACP channel this workspace opened (``over_socket``)."""
        if self._channel is not None:
            self._channel.close()


def _unsupported(what: str) -> ToolError:
    return ToolError(
        _errors.UNSUPPORTED,
        f"{what} is not available in a remote workspace: the client offers only whole-file "
        "text reads and writes",
    )


class RemoteSession:
    """One agent session on a remote workspace (DESIGN §2 ``Session``, profile Remote)."""

    def __init__(self, workspace: RemoteWorkspace, session_id: str) -> None:
        self.workspace = workspace
        self.id = session_id

    # -- Read --------------------------------------------------------------------------

    def read(
        self,
        path: str,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        start_byte: int | None = None,
        max_bytes: int | None = None,
        encoding: str = "auto",
    ) -> ReadResult:
        """Read a client file or a range of it; a whole read authorizes a write. Spec: REMOTE-*."""
        request = _ranges.read_request(start_line, end_line, start_byte, max_bytes, encoding)
        if request.encoding not in (_ranges.AUTO, UTF8):
            raise ToolError(
                _errors.UNSUPPORTED,
                f"a remote file is read as the text the client gives; encoding {encoding!r} "
                "does not apply",
                encoding=encoding,
            )
        request.require_consistent()
        workspace = self.workspace
        target = workspace.resolve(path)
        text = workspace.files.read_text(target.absolute)
        data = client_bytes(text, target)
        digest = hashlib.sha256(data).hexdigest()
        decoded = DecodedText(text=text, encoding=UTF8, bom=False, newline=newline_style(text))
        limit = workspace.limits.read_max_bytes if request.budget is None else request.budget
        result = _ranges.cut_range(target.relative, data, digest, decoded, request, limit)
        full = _ranges.covers_whole_file(result, data, decoded)
        workspace.access.record_read(
            self.id, target.canonical_key, sha256=digest, size=len(data), mtime_ns=0, full=full
        )
        return result

    # -- Write -------------------------------------------------------------------------

    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> WriteResult:
        """Create or replace a client file with text, read back and verified. Spec: REMOTE-*."""
        text = content_text(content)
        expected = check_expected_sha256(expected_sha256)
        message = check_message_id(message_id)
        workspace = self.workspace
        target = workspace.resolve(path)
        with workspace.locks.hold([target.canonical_key]):
            old = read_or_none(workspace.files, target.absolute)
            old_sha = self._require_fresh(target, old, expected)
            publish(
                workspace.files,
                [
                    RemoteChange(
                        path=target.absolute, shown=target.relative, old_text=old, new_text=text
                    )
                ],
            )
            new_sha = self._record_write(target, text)
        diff = unified_diff(target.relative, old or "", text, old_exists=old is not None)
        return WriteResult(
            path=target.relative,
            operation="create" if old is None else "replace",
            old_sha256=old_sha,
            new_sha256=new_sha,
            bytes_written=len(text.encode("utf-8", "surrogatepass")),
            newline=newline_style(text),
            diff=diff,
            snapshot_created=False,
            warnings=(NO_SNAPSHOT_WARNING,) if message is not None else (),
        )

    # -- Edit --------------------------------------------------------------------------

    def edit(
        self,
        path: str,
        edits: Sequence[EditSpec],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> EditResult:
        """String replacements on a client file, all or nothing, verified. Spec: REMOTE-*."""
        specs = _edit_text.coerce_edits(edits)
        expected = check_expected_sha256(expected_sha256)
        message = check_message_id(message_id)
        workspace = self.workspace
        target = workspace.resolve(path)
        _refuse_notebook(target.relative)
        with workspace.locks.hold([target.canonical_key]):
            old = read_or_none(workspace.files, target.absolute)
            if old is None:
                _edit_text.require_creation(target.relative, specs, expected)
            else:
                _check_size(workspace, target.relative, old)
            old_sha = self._require_fresh(target, old, expected)
            text = old or ""
            newline = newline_style(text) if old is not None else None
            edited = _edit_text.apply_specs(target.relative, text, specs, newline)
            _check_size(workspace, target.relative, edited.text)
            publish(
                workspace.files,
                [
                    RemoteChange(
                        path=target.absolute,
                        shown=target.relative,
                        old_text=old,
                        new_text=edited.text,
                    )
                ],
            )
            new_sha = self._record_write(target, edited.text)
        decoded = None
        if old is not None:
            decoded = DecodedText(text=text, encoding=UTF8, bom=False, newline=newline_style(text))
        warnings = _edit_text.growth_warning(
            workspace.limits, target.relative, utf8_size(text), utf8_size(edited.text)
        )
        return EditResult(
            path=target.relative,
            operation=_edit_text.OPERATION,
            old_sha256=old_sha,
            new_sha256=new_sha,
            bytes_written=utf8_size(edited.text),
            newline=_edit_text.newline_after(text, decoded, edited),
            diff=unified_diff(
                target.relative,
                text,
                edited.text,
                old_exists=old is not None,
                known_prefix=edited.unchanged_prefix,
                known_suffix=edited.unchanged_suffix,
            ),
            snapshot_created=False,
            replacements=edited.replacements,
            warnings=warnings + ((NO_SNAPSHOT_WARNING,) if message is not None else ()),
        )

    # -- ApplyPatch --------------------------------------------------------------------

    def apply_patch(self, patch: str, *, message_id: str | None = None) -> PatchResult:
        """Update-only patches, published with verified restore. Spec: REMOTE-*, PATCH-*."""
        workspace = self.workspace
        if not isinstance(patch, str):
            raise ToolError(_errors.INVALID_ARGUMENT, "patch must be a string")
        message = check_message_id(message_id)
        parsed = _patch_parse.parse_patch(patch, workspace.limits)
        targets: list[RemotePath] = []
        seen: dict[str, str] = {}
        for op in parsed.ops:
            # Fail closed: only Update can be done with a whole-file write (REMOTE-*).
            if op.op != "update" or op.move_to is not None:
                what = "Move" if op.op == "update" else op.op.capitalize()
                raise ToolError(
                    _errors.UNSUPPORTED,
                    f"{what} File {op.path}: a remote workspace supports only Update File "
                    "(the client cannot create through a patch, delete or rename); nothing "
                    "was written",
                    path=op.path,
                    op=op.op if op.move_to is None else "move",
                )
            target = workspace.resolve(op.path)
            _refuse_notebook(target.relative)
            if target.canonical_key in seen:
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    f"the patch names {op.path} twice (also as {seen[target.canonical_key]}); "
                    "one operation per file",
                    path=op.path,
                )
            seen[target.canonical_key] = op.path
            targets.append(target)
        with workspace.locks.hold(seen):
            changes: list[RemoteChange] = []
            results: list[FileChange] = []
            warnings: list[str] = []
            total = 0
            for op, target in zip(parsed.ops, targets, strict=True):
                old = read_or_none(workspace.files, target.absolute)
                if old is None:
                    raise ToolError(
                        _errors.NOT_FOUND, f"{target.relative} does not exist", path=target.relative
                    )
                _check_size(workspace, target.relative, old)
                old_sha = self._require_fresh(target, old, None)
                new_text, hunk_warnings = _patch_plan.apply_hunks(
                    old, op.hunks, path=target.relative
                )
                _check_size(workspace, target.relative, new_text)
                total += utf8_size(new_text)
                warnings.extend(hunk_warnings)
                changes.append(
                    RemoteChange(
                        path=target.absolute, shown=target.relative, old_text=old, new_text=new_text
                    )
                )
                results.append(
                    FileChange(
                        path=target.relative,
                        op="update",
                        move_to=None,
                        old_sha256=old_sha,
                        new_sha256=text_sha256(new_text),
                        diff=unified_diff(target.relative, old, new_text),
                    )
                )
            if total > workspace.limits.transaction_bytes:
                raise ToolError(
                    _errors.TOO_LARGE,
                    f"the patch writes {total} bytes; a transaction is at most "
                    f"{workspace.limits.transaction_bytes}",
                    limit="transaction_bytes",
                    maximum=workspace.limits.transaction_bytes,
                )
            publish(workspace.files, changes)
            for target, change in zip(targets, changes, strict=True):
                self._record_write(target, change.new_text)
        if message is not None:
            warnings.append(NO_SNAPSHOT_WARNING)
        return PatchResult(changes=tuple(results), snapshot_created=False, warnings=tuple(warnings))

    # -- what a remote workspace cannot do ----------------------------------------------

    def rewind(self, message_id: str) -> Any:
        """UNSUPPORTED: no snapshots, and no delete to undo a creation with."""
        raise _unsupported("rewind")

    def glob(self, pattern: str, **options: Any) -> Any:
        """UNSUPPORTED: the client has no directory operation."""
        raise _unsupported("glob")

    def grep(self, pattern: str, **options: Any) -> Any:
        """UNSUPPORTED: the client has no directory operation."""
        raise _unsupported("grep")

    def list_directory(self, path: str = ".", **options: Any) -> Any:
        """UNSUPPORTED: the client has no directory operation."""
        raise _unsupported("list_directory")

    def edit_notebook(self, path: str, **options: Any) -> Any:
        """UNSUPPORTED: notebook cells are edited in local workspaces."""
        raise _unsupported("notebook editing")

    # -- tracking ----------------------------------------------------------------------

    def _require_fresh(
        self, target: RemotePath, old: str | None, expected_sha256: str | None
    ) -> str | None:
        if old is None:
            if expected_sha256 is not None:
                raise ToolError(
                    _errors.STALE,
                    f"{target.relative} does not exist, so it does not have the expected sha256",
                    path=target.relative,
                    expected_sha256=expected_sha256,
                    current_sha256=None,
                )
            return None
        old_sha = text_sha256(old)
        self.workspace.access.require_fresh(
            self.id,
            target.canonical_key,
            current_sha256=old_sha,
            expected_sha256=expected_sha256,
            display_path=target.relative,
        )
        return old_sha

    def _record_write(self, target: RemotePath, text: str) -> str:
        digest = text_sha256(text)
        self.workspace.access.record_write(
            self.id, target.canonical_key, sha256=digest, size=utf8_size(text), mtime_ns=0
        )
        return digest


# -- helpers -------------------------------------------------------------------------


def _refuse_notebook(shown: str) -> None:
    if shown.lower().endswith(NOTEBOOK_SUFFIX):
        raise ToolError(
            _errors.UNSUPPORTED,
            f"{shown} is a Jupyter notebook; notebook cells are edited with "
            "Session.edit_notebook in a local workspace, not as text through the client",
            path=shown,
        )


def _check_size(workspace: RemoteWorkspace, shown: str, text: str) -> None:
    _edit_text.check_edit_size(workspace.limits, shown, utf8_size(text), "is")
