"""``Session``: one agent conversation on a workspace, whatever service holds its files.

The same class serves a local ``Workspace`` (``_workspace``) and a ``RemoteWorkspace``
(``remote/_remote``): each method routes to its tool, calling it through the tool's
module so that a test may replace it there. Read, Write, Edit, ApplyPatch and notebook
edits are written once, over the workspace's store (``_store``); what the service
cannot do is refused from its declarations (``_supports``), never from the class of
the workspace: Glob, Grep, listings, ``why_ignored``, ``manifest``, Delete and Move
need ``directories``, Rewind needs snapshots (UNSUPPORTED otherwise, before any I/O).
Those tools are written for the fs port: a service that declares what they need is it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Protocol, cast

from editspec.reference._context import SessionContext
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
    RewindResult,
    WriteResult,
)
from editspec.reference._store import FilesWorkspace
from editspec.reference._supports import unsupported
from editspec.reference.guards._hooks import emits_changes, filter_denied
from editspec.reference.patch import _patch
from editspec.reference.paths._suggest import hint_dir_not_found, hint_not_found
from editspec.reference.search import _glob, _listing, _search
from editspec.reference.snapshots import _rewind
from editspec.reference.tools import _delete, _edit, _manifest, _move, _notebook, _read, _write


class SessionWorkspace(FilesWorkspace, Protocol):
    """What a session needs of its workspace, local or remote."""

    @property
    def root(self) -> str:
        """The workspace root."""

    def resolve(self, path: str | os.PathLike[str]) -> object:
        """Confine and resolve a caller's path."""

    def before_change(self) -> None:
        """What every mutating call runs first."""


class Session:
    """One agent session on a workspace (DESIGN §2 ``Session``)."""

    def __init__(self, workspace: SessionWorkspace, session_id: str) -> None:
        self.workspace = workspace
        self.id = session_id

    def _on_disk(self, what: str, *, snapshots: bool = False) -> SessionContext:
        """This session for a tool of the fs port; UNSUPPORTED where the service lacks it."""
        supports = self.workspace.supports
        if not (supports.snapshots if snapshots else supports.directories):
            raise unsupported(what)
        # Directories (and snapshots) are declared by the fs port alone: a local workspace.
        return cast(SessionContext, self)

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
        session = self._on_disk("glob")
        return _glob.glob(session, pattern, path=path, max_results=max_results)

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
        session = self._on_disk("grep")
        return _search.grep(
            session,
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
        session = self._on_disk("list_directory")
        return _listing.list_directory(
            session,
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
        session = self._on_disk("why_ignored")
        return _search.why_ignored(session, path)

    @hint_dir_not_found
    def manifest(self, path: str) -> ManifestResult:
        """Every entry under a directory and the hash a tree Delete or Move needs. Spec: DEL-*."""
        session = self._on_disk("manifest")
        return _manifest.manifest(session, path)

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
        session = self._on_disk("delete")
        self.workspace.before_change()
        return _delete.delete(
            session,
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
        session = self._on_disk("move")
        self.workspace.before_change()
        return _move.move(
            session,
            source,
            destination,
            expected_sha256=expected_sha256,
            manifest_sha256=manifest_sha256,
            message_id=message_id,
        )

    @emits_changes
    def rewind(self, message_id: str) -> RewindResult:
        """Undo this session's changes from ``message_id`` on, as one transaction. Spec: SNAP-*."""
        session = self._on_disk("rewind", snapshots=True)
        self.workspace.before_change()
        return _rewind.rewind(session, message_id)
