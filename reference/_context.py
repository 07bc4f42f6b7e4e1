"""What a tool receives: the session it runs for, and that session's workspace.

The tools (``tools/``, ``patch/``, ``snapshots/_rewind``, ``search/``,
``transactions/``) are written against these protocols, not against the ``Workspace``
and ``Session`` facade of ``_workspace``: the facade imports the tools and routes each
call to one of them, and nothing imports the facade back.
"""

from __future__ import annotations

import os
from typing import Protocol

from editspec.reference._base import WorkspaceBase
from editspec.reference._store import FileStore
from editspec.reference._supports import Supports
from editspec.reference.guards._access import AccessTracker
from editspec.reference.guards._hooks import Hooks
from editspec.reference.guards._locks import LockTable
from editspec.reference.paths._paths import WorkspacePath
from editspec.reference.snapshots._snapshots import SnapshotStore
from editspec.reference.text._memo import ContentMemo


class WorkspaceContext(WorkspaceBase, Protocol):
    """A local workspace as the tools use it (``Workspace`` is one)."""

    @property
    def journal_dir(self) -> str:
        """Where this workspace's transaction journals live."""

    @property
    def locks(self) -> LockTable:
        """Per-key locks and the workspace guard."""

    @property
    def access(self) -> AccessTracker:
        """Per-session read records (TRACK)."""

    @property
    def memo(self) -> ContentMemo:
        """Hashes and texts of bytes seen last, per canonical key."""

    @property
    def snapshots(self) -> SnapshotStore:
        """Per-session snapshot history (SNAP)."""

    @property
    def hooks(self) -> Hooks:
        """The host's deny rules, validators and change listeners."""

    @property
    def store(self) -> FileStore[WorkspacePath]:
        """The file tools' way to the fs port (``tools/_disk.DiskStore``)."""

    @property
    def supports(self) -> Supports:
        """What the fs port offers (``FileSystem.supports``)."""

    @property
    def grep_backend(self) -> str:
        """``auto``, ``rg`` or ``python``."""

    def resolve(self, path: str | os.PathLike[str]) -> WorkspacePath:
        """Resolve and confine a path (PATH)."""

    def ensure_writable(self) -> None:
        """NEEDS_RECOVERY while the workspace is sticky-failed."""

    def before_change(self) -> None:
        """What every mutating call runs first."""

    def mark_needs_recovery(self, reason: str) -> None:
        """Refuse every mutating call until ``recover()`` succeeds."""

    @property
    def revoked_commits(self) -> set[str]:
        """Transactions this process revoked after their commit without making that
        durable: its recovery rolls them back whatever their journal says (TXN-*)."""


class SessionContext(Protocol):
    """One session of a local workspace (``Session`` is one)."""

    @property
    def workspace(self) -> WorkspaceContext:
        """The session's workspace."""

    @property
    def id(self) -> str:
        """The session id: the key of its read records and snapshots."""
