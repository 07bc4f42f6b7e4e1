"""Rewind: undo a session's changes from one message on, as one transaction (DESIGN §4 SNAP).

``rewind(session, m)`` restores every file this session changed at or after message
``m`` to its content before ``m``. It works in two phases:

1. *Check*, with no disk change. The records that count (``SnapshotStore.history``) from
   the first record of ``m`` on are grouped by file. For every file the chain of its
   entries is walked backwards from the disk: the current state (content hash, or
   absent) must be the last entry's after-state, each entry's before-state must be
   the previous entry's after-state, and the first entry's before-state is what is
   restored. A broken link (a change by someone else in between, or after the last
   change) is CONFLICT and nothing changes.

   The check is strict: an external change that happens to restore a before-state is
   still a broken link. Write and edit record their snapshot as pending and confirm it
   only after the publish, so a write that failed leaves no entry to trip over.

2. *Restore*, through ``_transaction.commit`` like an ApplyPatch, so a crash at any
   point recovers to all-before or all-after: files created after ``m`` are deleted,
   files deleted after ``m`` are recreated with their recorded mode, moves are undone
   (a move is recorded as a delete of the source and a creation of the destination),
   every other file gets its before-bytes back (verified against their hash). The
   directories and symlinks of a deleted or moved tree are made (or, at a move's
   destination, removed) right after the commit point, under an intent recovery
   settles with the journal (``_rewind_others``, ``transactions._extras``). In the
   same transaction a rewind marker that names every undone record is recorded and
   confirmed with it, so the history and the disk move together.

Decisions:

* A ``message_id`` this session never recorded a change for is NOT_FOUND (a message
  without changes has no place in the history, so "from m on" would mean nothing).
* A message that was rewound keeps its place: rewinding to it again undoes only what
  was recorded after that place since, which is usually nothing (a no-op, not an error).
* Afterwards every restored or recreated file counts as read by this session at its
  restored hash (the session knows its content: it wrote it before), and deleted files
  are forgotten. Other sessions' read records are not touched, so they see STALE.
"""

from __future__ import annotations

import secrets
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_text
from editspec.reference._context import SessionContext
from editspec.reference._errors import ToolError
from editspec.reference._results import RestoredFile, RewindResult
from editspec.reference.snapshots import _rewind_others
from editspec.reference.snapshots._records import HistoryRecord, RecordedEntry
from editspec.reference.text import _text
from editspec.reference.transactions import _extras, _intents, _transaction
from editspec.reference.transactions._extras import Extra
from editspec.reference.transactions._plan import PlannedChange

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem
    from editspec.reference.paths._paths import WorkspacePath

# What ``commit`` raises when a file changed between the check and the locked re-check.
_CHANGED_MEANWHILE = frozenset(
    {_errors.STALE, _errors.NOT_FOUND, _errors.ALREADY_EXISTS, _errors.IS_A_DIRECTORY}
)

RESTORED = "restored"
DELETED = "deleted"
RECREATED = "recreated"


@attrs.frozen(kw_only=True)
class _Restore:
    """One file's restore: from ``current`` (None if absent) to ``target`` (None: delete)."""

    relative: str
    path: WorkspacePath
    current: bytes | None
    target: bytes | None
    target_sha256: str | None
    mode: int | None  # the recorded mode, for a file that is recreated
    current_mode: int | None

    @property
    def action(self) -> str:
        if self.target is None:
            return DELETED
        return RECREATED if self.current is None else RESTORED


def rewind(session: SessionContext, message_id: str) -> RewindResult:
    """Restore every file this session changed at or after ``message_id``. Spec: SNAP-*."""
    workspace = session.workspace
    if not isinstance(message_id, str) or not message_id:
        raise ToolError(_errors.INVALID_ARGUMENT, "message_id must be a non-empty string")
    check_text("message_id", message_id, max_chars=MESSAGE_ID_CHARS)
    store = workspace.snapshots
    history = store.history(session.id)
    start = history.message_start.get(message_id)
    if start is None:
        raise ToolError(
            _errors.NOT_FOUND,
            f"this session recorded no change for message {message_id!r}",
            message_id=message_id,
        )
    undone = [record for record in history.live if record.seq >= start]
    if not undone:
        return RewindResult(restored=())
    files, others = _rewind_others.split(_by_file(undone))
    restores = [
        restore
        for relative, entries in files.items()
        if (restore := _check_file(session, relative, entries)) is not None
    ]
    extras = _rewind_others.plan(
        session, others, {restore.relative for restore in restores if restore.target is None}
    )
    undone_seqs = [record.seq for record in undone]
    if not restores and not extras:
        # The disk already is as it was before the message: only the history moves.
        store.record_rewind(session.id, message_id, undone_seqs)
        return RewindResult(restored=())
    if not restores:
        return _rewind_others_only(session, message_id, undone_seqs, extras)
    intent_id = _intents.new_id("restore") if extras else None

    changes = [
        PlannedChange(
            op=_op(restore),
            target=restore.path,
            move_to=None,
            old_bytes=restore.current,
            new_bytes=restore.target,
            mode=restore.mode if restore.current is None else restore.current_mode,
        )
        for restore in restores
    ]
    marker_written = False

    def on_prepared(txn_id: str) -> None:
        nonlocal marker_written
        store.record_rewind(session.id, message_id, undone_seqs, transaction_id=txn_id)
        marker_written = True
        if intent_id is not None:
            # Before the journal exists: recovery makes the extras iff the journal commits.
            _intents.write_restore(workspace, intent_id, txn_id, extras, journaled=True)

    extras_due = False

    def on_committed(txn_id: str) -> None:
        nonlocal extras_due
        store.confirm_transaction(txn_id)
        _update_access(session, restores)
        if intent_id is not None:
            # From now on the extras are due whatever the journal's state: the journal's
            # backups go only after this, and a directory holding one cannot be removed.
            _intents.write_restore(workspace, intent_id, txn_id, extras, journaled=False)
            extras_due = True

    try:
        txn_id = _transaction.commit(
            workspace, changes, on_prepared=on_prepared, on_committed=on_committed
        )
    except ToolError as exc:
        if intent_id is not None:
            _intents.remove(workspace, intent_id)  # nothing of it was made: no commit
        if exc.code in _CHANGED_MEANWHILE:
            # A file changed between the check and the locked re-verification.
            raise ToolError(
                _errors.CONFLICT,
                f"a file changed while the rewind was being prepared: {exc.message}",
                message_id=message_id,
                **exc.details,
            ) from exc
        raise
    if intent_id is not None and extras_due:
        _make_extras(session, message_id, intent_id, extras)
    return RewindResult(
        restored=tuple(
            RestoredFile(path=restore.relative, action=restore.action) for restore in restores
        )
        + _restored_others(extras),
        transaction_id=txn_id,
    )


def _restored_others(extras: Sequence[Extra]) -> tuple[RestoredFile, ...]:
    return tuple(
        RestoredFile(path=extra.path, action=RECREATED if extra.creates else DELETED)
        for extra in _extras.in_order(extras)
    )


def _rewind_others_only(
    session: SessionContext, message_id: str, undone_seqs: list[int], extras: Sequence[Extra]
) -> RewindResult:
    """No file to restore, only directories and symlinks: no journal, an intent alone.

    The marker is recorded pending, the intent says "make these", then they are made
    and the marker confirmed; a crash anywhere after the intent is finished by
    recovery (all-after), and before it nothing was made (all-before)."""
    workspace = session.workspace
    store = workspace.snapshots
    with workspace.locks.transactions(exclusive=False):
        txn_id = secrets.token_hex(16)
        intent_id = _intents.new_id("restore")
        store.record_rewind(session.id, message_id, undone_seqs, transaction_id=txn_id)
        try:
            _intents.write_restore(workspace, intent_id, txn_id, extras, journaled=False)
        except OSError as exc:
            store.discard_transaction(txn_id)
            raise _errors.from_oserror(exc, message_id, action="rewind") from exc
        _make_extras(session, message_id, intent_id, extras, confirm=txn_id)
    return RewindResult(restored=_restored_others(extras), transaction_id=txn_id)


def _make_extras(
    session: SessionContext,
    message_id: str,
    intent_id: str,
    extras: Sequence[Extra],
    *,
    confirm: str | None = None,
) -> None:
    """Make the extras an intent names as due (and confirm the marker ``confirm``), then
    forget the intent; a failure is left to ``recover()``, which makes them (the
    workspace refuses changes until then)."""
    workspace = session.workspace
    try:
        _extras.apply(workspace.fs, workspace.root, extras)
        if confirm is not None:
            workspace.snapshots.confirm_transaction(confirm)  # before the intent goes
    except OSError as exc:
        workspace.mark_needs_recovery(f"the rewind to {message_id} was interrupted")
        raise ToolError(
            _errors.IO_ERROR,
            f"the rewind to {message_id} could not finish ({exc}); recover() finishes it",
            message_id=message_id,
        ) from exc
    _intents.remove(workspace, intent_id)


def _op(restore: _Restore) -> str:
    if restore.target is None:
        return "delete"
    return "add" if restore.current is None else "update"


def _by_file(records: Sequence[HistoryRecord]) -> dict[str, list[RecordedEntry]]:
    files: dict[str, list[RecordedEntry]] = {}
    for record in records:
        for entry in record.entries:
            files.setdefault(entry.relative, []).append(entry)
    return dict(sorted(files.items()))


def _conflict(relative: str, why: str, **details: object) -> ToolError:
    return ToolError(
        _errors.CONFLICT,
        f"cannot rewind {relative}: {why}; nothing was changed",
        path=relative,
        **details,
    )


def _check_file(
    session: SessionContext, relative: str, entries: Sequence[RecordedEntry]
) -> _Restore | None:
    """The restore of one file, or None when it already is as before; CONFLICT on a gap."""
    workspace = session.workspace
    path = workspace.resolve(relative)
    if path.relative != relative:
        # A directory on the way became a link elsewhere: this is not the file we changed.
        raise _conflict(relative, f"the path now leads to {path.relative}")
    current, current_mode = _current(workspace.fs, path.real, relative)
    current_sha = None if current is None else _text.sha256_hex(current)
    expected = current_sha
    mode: int | None = None
    for index, entry in enumerate(reversed(entries)):
        if entry.after_sha256 != expected:
            if index == 0:
                raise _conflict(
                    relative,
                    "it was changed after this session last changed it",
                    current_sha256=current_sha,
                    recorded_sha256=entry.after_sha256,
                )
            raise _conflict(
                relative,
                "its history has a gap (it was changed by someone else in between)",
                recorded_sha256=entry.after_sha256,
                next_before_sha256=expected,
            )
        expected, mode = entry.before_sha256 if entry.existed else None, entry.mode
    if expected == current_sha:
        return None
    target = None if expected is None else workspace.snapshots.read_blob(session.id, expected)
    return _Restore(
        relative=relative,
        path=path,
        current=current,
        target=target,
        target_sha256=expected,
        mode=mode,
        current_mode=current_mode,
    )


def _current(fs: FileSystem, real: str, relative: str) -> tuple[bytes | None, int | None]:
    """The file's bytes and mode now, or (None, None) when nothing is there."""
    try:
        status = fs.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        raise _errors.from_oserror(exc, relative, action="inspect") from exc
    if not stat.S_ISREG(status.st_mode):
        raise _conflict(relative, "it is no longer a regular file")
    try:
        return fs.read_bytes(real), stat.S_IMODE(status.st_mode)
    except OSError as exc:
        raise _errors.from_oserror(exc, relative, action="read") from exc


def _update_access(session: SessionContext, restores: Sequence[_Restore]) -> None:
    """Restored files count as read at their restored hash; deleted ones are forgotten."""
    workspace = session.workspace
    for restore in restores:
        key = restore.path.canonical_key
        if restore.target is None or restore.target_sha256 is None:
            workspace.access.forget(session.id, key)
            continue
        size, mtime_ns = len(restore.target), 0
        try:
            status = workspace.fs.stat(key)
            size, mtime_ns = status.st_size, status.st_mtime_ns
        except OSError:
            pass  # the hash is authoritative; size and mtime are diagnostics only
        workspace.access.record_write(
            session.id, key, sha256=restore.target_sha256, size=size, mtime_ns=mtime_ns
        )
