"""``Workspace`` and ``Session``: the public face of the engine (DESIGN §2, §3).

A ``Workspace`` owns everything shared by the sessions of one root: the fs port,
limits, the lock table, the access tracker and the snapshot store. A ``Session``
is one agent conversation: it has its own read records and snapshot history.
The operations themselves live in one module each, written against the protocols of
``_context`` (they never import this module); the methods here only route, calling
the operation through its module so that a test may replace it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Sequence

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_text
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem, default_state_dir, makedirs
from editspec.reference._limits import Limits
from editspec.reference._results import (
    DeleteResult,
    EditResult,
    EditSpec,
    GlobResult,
    GrepResult,
    IgnoreExplanation,
    ListResult,
    ManifestResult,
    MoveResult,
    NotebookResult,
    PatchResult,
    ReadResult,
    RecoveryReport,
    RewindResult,
    WriteResult,
)
from editspec.reference.guards._access import AccessTracker
from editspec.reference.guards._hooks import Hooks, emits_changes, filter_denied
from editspec.reference.guards._locks import LockTable
from editspec.reference.patch import _patch
from editspec.reference.paths._paths import WorkspacePath, resolve
from editspec.reference.paths._suggest import hint_dir_not_found, hint_not_found
from editspec.reference.search import _glob, _listing, _search
from editspec.reference.snapshots import _rewind
from editspec.reference.snapshots._snapshots import SnapshotStore
from editspec.reference.text._memo import ContentMemo
from editspec.reference.tools import _delete, _edit, _manifest, _move, _notebook, _read, _write
from editspec.reference.transactions import _recovery


class Workspace:
    """One workspace root with its state directory. Spec: PATH-*, TXN-*, RECOV-*, LOCK-*."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        state_dir: str | os.PathLike[str] | None = None,
        limits: Limits | None = None,
        *,
        fs: FileSystem | None = None,
        recover: bool = True,
        grep_backend: str = "auto",
    ) -> None:
        self.fs = fs if fs is not None else FileSystem()
        self.limits = limits if limits is not None else Limits()
        self.grep_backend = grep_backend
        real_root = self.fs.realpath(os.path.abspath(os.fspath(root)))
        try:
            is_dir = stat.S_ISDIR(self.fs.stat(real_root).st_mode)
        except OSError as exc:
            raise _errors.from_oserror(exc, real_root, action="open workspace") from exc
        if not is_dir:
            raise ToolError(_errors.NOT_FOUND, f"workspace root is not a directory: {root}")
        self.root: str = real_root
        state = os.fspath(state_dir) if state_dir is not None else default_state_dir()
        makedirs(self.fs, os.path.abspath(state))
        self.state_dir: str = self.fs.realpath(os.path.abspath(state))
        # Everything this workspace keeps is partitioned by the hash of its canonical root.
        self.root_hash: str = hashlib.sha256(
            self.root.encode("utf-8", "surrogateescape")
        ).hexdigest()[:16]
        self.journal_dir: str = os.path.join(self.state_dir, "journal", self.root_hash)
        self.locks = LockTable(self)
        self.access = AccessTracker()
        self.memo = ContentMemo()
        self.snapshots = SnapshotStore(self)
        self.hooks = Hooks()  # the host's deny rules, validators and change listeners
        self._needs_recovery: str | None = None
        self._state_lock = threading.Lock()
        if recover:
            self.recover()

    # -- sessions and paths ----------------------------------------------------

    def session(self, session_id: str) -> Session:
        """A session: its own read records and snapshot history. Spec: TRACK-*."""
        if not isinstance(session_id, str) or not session_id or "\0" in session_id:
            raise ToolError(_errors.INVALID_ARGUMENT, "session id must be a non-empty string")
        check_text("session id", session_id, max_chars=MESSAGE_ID_CHARS)
        return Session(self, session_id)

    def resolve(self, path: str | os.PathLike[str]) -> WorkspacePath:
        """Confine and resolve a user path. Spec: PATH-*, and the host's deny rules."""
        if not self.hooks.denies_anything:
            return resolve(self, path)
        lexical = _lexical_relative(self.root, path)
        if lexical is not None:  # refused before any disk access: nothing about existence
            self.hooks.check_denied(lexical, lexical, is_dir=None)
        resolved = resolve(self, path)
        is_dir = resolved.kind == "dir"
        for relative in (resolved.relative, resolved.logical_relative):
            self.hooks.check_denied(relative, resolved.logical_relative, is_dir=is_dir)
        return resolved

    # -- sticky failure and recovery -------------------------------------------

    def ensure_writable(self) -> None:
        """Refuse mutating calls while a failed rollback awaits recovery. Spec: RECOV-*."""
        if self._needs_recovery is not None:
            raise ToolError(
                _errors.NEEDS_RECOVERY,
                "a rollback could not finish; call recover() first",
                reason=self._needs_recovery,
            )

    def before_change(self) -> None:
        """Settle transactions another process left behind, then refuse if still sticky.

        Called at the start of every mutating call, before any lock is taken. A process
        that died mid-transaction leaves a journal; a process that was already running
        must not build on the half-published files it left (its change would later be
        undone by that journal's rollback), so the journal is settled first. Recovery
        holds the workspace guard exclusively, so it waits for transactions still
        running in other threads or processes and never touches their journals.
        Spec: RECOV-*, TXN-*.
        """
        if self._needs_recovery is None and self._has_journals():
            self.recover()
        self.ensure_writable()

    def _has_journals(self) -> bool:
        try:
            names = self.fs.listdir(self.journal_dir)
        except OSError:  # no journal directory yet: nothing was ever left behind
            return False
        return any(name.endswith(".json") for name in names)

    def mark_needs_recovery(self, reason: str) -> None:
        self._needs_recovery = reason

    def recover(self) -> RecoveryReport:
        """Finish or roll back every interrupted transaction. Spec: RECOV-*."""
        report = _recovery.recover(self)
        self._needs_recovery = None
        return report

    def close(self) -> None:
        """Release nothing that outlives the process; present for the driver contract."""


def _lexical_relative(root: str, path: str | os.PathLike[str]) -> str | None:
    """``path`` relative to the root by its spelling alone ("/"-separated), or None."""
    try:
        text = os.fspath(path)
    except TypeError:
        return None
    if not isinstance(text, str) or "\0" in text:
        return None
    joined = os.path.normpath(os.path.join(root, text))
    if joined != root and not joined.startswith(root + os.sep):
        return None  # outside: resolve() refuses it
    return os.path.relpath(joined, root).replace(os.sep, "/")


class Session:
    """One agent session on a workspace (DESIGN §2 ``Session``)."""

    def __init__(self, workspace: Workspace, session_id: str) -> None:
        self.workspace = workspace
        self.id = session_id

    @hint_not_found
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
        """Read a file or a range of it. Spec: READ-*."""
        return _read.read(
            self,
            path,
            start_line=start_line,
            end_line=end_line,
            start_byte=start_byte,
            max_bytes=max_bytes,
            encoding=encoding,
        )

    @emits_changes
    @hint_not_found
    def write(
        self,
        path: str,
        content: str | bytes,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> WriteResult:
        """Create or replace a whole file atomically. Spec: WRITE-*."""
        self.workspace.before_change()
        return _write.write(
            self, path, content, expected_sha256=expected_sha256, message_id=message_id
        )

    @emits_changes
    @hint_not_found
    def edit(
        self,
        path: str,
        edits: Sequence[EditSpec],
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> EditResult:
        """Apply string replacements, all or nothing. Spec: EDIT-*."""
        self.workspace.before_change()
        return _edit.edit(self, path, edits, expected_sha256=expected_sha256, message_id=message_id)

    @emits_changes
    @hint_not_found
    def edit_notebook(
        self,
        path: str,
        cell_id: str | None = None,
        index: int | None = None,
        mode: str = "replace",
        source: str | None = None,
        cell_type: str | None = None,
        *,
        expected_sha256: str | None = None,
        message_id: str | None = None,
    ) -> NotebookResult:
        """Replace, insert or delete one cell of a .ipynb notebook. Spec: NB-*."""
        self.workspace.before_change()
        return _notebook.edit_notebook(
            self,
            path,
            cell_id=cell_id,
            index=index,
            mode=mode,
            source=source,
            cell_type=cell_type,
            expected_sha256=expected_sha256,
            message_id=message_id,
        )

    @emits_changes
    @hint_not_found
    def apply_patch(self, patch: str, *, message_id: str | None = None) -> PatchResult:
        """Apply a multi-file patch as one transaction. Spec: PATCH-*, TXN-*."""
        self.workspace.before_change()
        return _patch.apply_patch(self, patch, message_id=message_id)

    @filter_denied
    @hint_dir_not_found
    def glob(
        self, pattern: str, *, path: str | None = None, max_results: int | None = None
    ) -> GlobResult:
        """Find files by glob pattern under gitignore rules. Spec: GLOB-*."""
        return _glob.glob(self, pattern, path=path, max_results=max_results)

    @filter_denied
    @hint_dir_not_found
    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        include: str | None = None,
        ignore_case: bool = False,
        max_results: int | None = None,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
    ) -> GrepResult:
        """Search file contents with a Python regular expression. Spec: GREP-*."""
        return _search.grep(
            self,
            pattern,
            path=path,
            include=include,
            ignore_case=ignore_case,
            max_results=max_results,
            deadline=deadline,
            cancel=cancel,
        )

    @filter_denied
    @hint_dir_not_found
    def list_directory(
        self,
        path: str = ".",
        *,
        depth: int = 1,
        include_hidden: bool = False,
        cursor: str | None = None,
        max_entries: int | None = None,
        glob: str | None = None,
        exclude: Sequence[str] | None = None,
    ) -> ListResult:
        """List a directory with typed entries and cursor paging. Spec: LIST-*."""
        return _listing.list_directory(
            self,
            path,
            depth=depth,
            include_hidden=include_hidden,
            cursor=cursor,
            max_entries=max_entries,
            glob=glob,
            exclude=exclude,
        )

    def why_ignored(self, path: str) -> IgnoreExplanation:
        """Explain which ignore rule, if any, excludes ``path`` from search. Spec: GLOB-*."""
        return _search.why_ignored(self, path)

    @hint_dir_not_found
    def manifest(self, path: str) -> ManifestResult:
        """Every entry under a directory and the hash a tree Delete or Move needs. Spec: DEL-*."""
        return _manifest.manifest(self, path)

    @emits_changes
    @hint_not_found
    def delete(
        self,
        path: str,
        *,
        kind: str,
        expected_sha256: str | None = None,
        manifest_sha256: str | None = None,
        message_id: str | None = None,
    ) -> DeleteResult:
        """Delete a file, an empty directory or a tree, restorably. Spec: DEL-*."""
        self.workspace.before_change()
        return _delete.delete(
            self,
            path,
            kind=kind,
            expected_sha256=expected_sha256,
            manifest_sha256=manifest_sha256,
            message_id=message_id,
        )

    @emits_changes
    @hint_not_found
    def move(
        self,
        source: str,
        destination: str,
        *,
        expected_sha256: str | None = None,
        manifest_sha256: str | None = None,
        message_id: str | None = None,
    ) -> MoveResult:
        """Move a file or a directory; never over an existing path. Spec: MOVE-*."""
        self.workspace.before_change()
        return _move.move(
            self,
            source,
            destination,
            expected_sha256=expected_sha256,
            manifest_sha256=manifest_sha256,
            message_id=message_id,
        )

    @emits_changes
    def rewind(self, message_id: str) -> RewindResult:
        """Undo this session's changes from ``message_id`` on, as one transaction. Spec: SNAP-*."""
        self.workspace.before_change()
        return _rewind.rewind(self, message_id)
