"""``Workspace``: a local root, the public face of the engine with ``Session`` (DESIGN §2, §3).

A ``Workspace`` owns everything shared by the sessions of one root: the fs port,
limits, the lock table, the access tracker, the snapshot store and the store the file
tools go through (``tools/_disk.DiskStore``). A ``Session`` (``_session``) is one agent
conversation: it has its own read records and snapshot history. The operations
themselves live in one module each, written against the protocols of ``_context`` and
``_store`` (they never import this module).
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_text
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem, default_state_dir, makedirs
from editspec.reference._limits import Limits
from editspec.reference._results import RecoveryReport
from editspec.reference._session import Session
from editspec.reference._supports import Supports
from editspec.reference.guards._access import AccessTracker
from editspec.reference.guards._hooks import Hooks
from editspec.reference.guards._locks import LockTable
from editspec.reference.paths._paths import WorkspacePath, resolve
from editspec.reference.snapshots._snapshots import SnapshotStore
from editspec.reference.text._memo import ContentMemo
from editspec.reference.tools._disk import DiskStore
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
        if not self.fs.supports.transactions:
            raise ToolError(
                _errors.INVALID_ARGUMENT,
                "a workspace publishes through its fs port by atomic rename, fsync and a "
                "journal, and this port does not offer them; a service with whole-file text "
                "calls only is opened as a RemoteWorkspace",
            )
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
        self.store = DiskStore(self)  # what the file tools read and publish through
        self._needs_recovery: str | None = None
        self.revoked_commits: set[str] = set()
        self._state_lock = threading.Lock()
        if recover:
            self.recover()

    @property
    def supports(self) -> Supports:
        """What the fs port offers: everything a session has (``_supports``)."""
        return self.fs.supports

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
