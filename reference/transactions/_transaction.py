"""Journaled multi-file transactions (DESIGN §4 "Transaction protocol (TXN/RECOV)").

Rules
-----
* Every state change of a transaction happens in this file: its journal is written,
  files are staged, backed up, published and committed here, and here it is decided
  when a transaction is rolled back or finished (the file effects of undoing and
  finishing are ``_rollback``'s). ``_recovery`` only finds journals and calls
  ``settle``.
* Before the commit point a failure is undone in-process and the original error is
  raised; from the commit point on the change stands and nothing is undone.
* A ``BaseException`` that is not an ``Exception`` (a crash, an interrupt) runs no
  cleanup: a killed process runs none. The workspace is only marked as needing
  recovery (memory, not disk), so this process refuses further changes.

Theory of operation
-------------------
``commit`` takes the workspace guard shared and every target's key lock (sorted),
re-verifies the planned old bytes byte-for-byte, lets the caller create snapshots
(``on_prepared``), then publishes in this order, each step durable before the next:

1. journal ``preparing`` (temp, fsync, rename, fsync its directory), listing every
   path, its stage and backup names, the hashes before and after, and the
   directories it will create -- before any of them exists;
2. missing parent directories created (their parents fsynced); each new content
   written to an exclusive stage file beside its target, fsynced;
3. each existing target hard-linked to an exclusive backup beside it; directories
   fsynced; then every backup is re-verified against the planned old bytes;
4. publish -- update: rename the stage over the target; add: link the stage into place
   (no clobber), unlink the stage; delete: unlink the target; move: link the stage at
   the new path (no clobber), unlink the source, unlink the stage; directories fsynced;
5. journal rewritten as ``committed``: its rename is the commit point, durable once
   the journal directory is fsynced;
6. backups removed, then the journal.

If that fsync fails, the rename may or may not survive a power cut, and no later fsync
can prove it did (an fsync that failed is not retried into durability: the kernel may
have dropped what it could not write). The commit is then undone durably instead: its
revocation is appended to the committed record's own file and fsynced
(``_journal.revoke``), so either name a power cut can leave -- the ``preparing``
record, or the revoked one -- rolls back; then the files are rolled back in-process
and the call fails with IO_ERROR, the workspace as before. If the revocation cannot be
made durable either, the outcome is recovery's to decide: NEEDS_RECOVERY, never success.

Recovery finds a journal in one of three states, and before it touches a file it
*republishes* the record (``settle``): writes it again as a new file (temp, fsync,
rename over the one it read, fsync of the journal directory), ``revoked`` -- or a
committed record this process revoked without making that durable, which
``revoked_commits`` names -- as ``preparing``. The record it read may exist only in the
page cache: renamed in before a directory fsync that failed (the committing process's,
killed before it could revoke; an earlier recovery's), with another record under it on
disk, and no later fsync proves that rename. Acting on it after a retried fsync would
let a power cut bring back the ``preparing`` record once the backups are gone, or the
committed one halfway through a rollback: files of both versions. The new rename is
proved by the fsync after it, so the state recovery acts on is the one a power cut
leaves. Then ``preparing``: roll back -- restore each backup (never by renaming a file
onto a link of itself: POSIX makes that a silent no-op; the backup name must be gone
afterwards), remove each added file whose hash is the planned new hash, remove stage
files and created directories. ``committed``: finish -- remove leftover backups and
stage files. Then the journal is deleted. Every step is idempotent (a republication
writes the same record again), so a crash during recovery is repaired by the next
recovery.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NoReturn

import attrs

from editspec.reference import _errors
from editspec.reference._context import WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem
from editspec.reference.transactions import _journal
from editspec.reference.transactions._journal import (
    COMMITTED,
    PREPARING,
    REVOKED,
    JournalRecord,
)
from editspec.reference.transactions._plan import (
    PlannedChange,
    Step,
    as_planned,
    check_shape,
    plan_steps,
    publish_change,
)
from editspec.reference.transactions._rollback import (
    Owned,
    RollbackIncomplete,
    finish,
    roll_back,
)
from editspec.reference.transactions._txn_hooks import (
    discard_snapshots,
    publish_error,
    snapshot_hook,
)

# -- the state machine, as data ------------------------------------------------------

PREPARE = "prepare"  # step 1: the journal appears as ``preparing``
COMMIT = "commit"  # step 5: ``preparing`` -> ``committed``, the commit point
REVOKE = "revoke"  # step 5 could not be made durable: ``committed`` -> ``revoked``
REPUBLISH = "republish"  # recovery writes the record it found again, as a new file, synced
ROLL_BACK = "roll_back"  # in-process abort, or recovery of a ``preparing`` journal
FINISH = "finish"  # step 6, or recovery of a ``committed`` journal

#: (journal state, event) -> journal state afterwards; ``None`` is "no journal on disk".
TRANSITIONS: Mapping[tuple[str | None, str], str | None] = {
    (None, PREPARE): PREPARING,
    (PREPARING, COMMIT): COMMITTED,
    (PREPARING, ROLL_BACK): None,
    (COMMITTED, REVOKE): REVOKED,
    (COMMITTED, FINISH): None,
    (REVOKED, ROLL_BACK): None,
    (PREPARING, REPUBLISH): PREPARING,
    (COMMITTED, REPUBLISH): COMMITTED,
    (REVOKED, REPUBLISH): PREPARING,
}
#: What recovery does with a journal it has republished, by its state.
RECOVERY_EVENT: Mapping[str, str] = {PREPARING: ROLL_BACK, COMMITTED: FINISH}


def next_state(state: str | None, event: str) -> str | None:
    """The journal state after ``event``; an event the state does not allow is a bug."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise RuntimeError(
            f"transaction event {event!r} is not allowed in state {state!r}"
        ) from None


def _state_after(state: str | None, event: str) -> str:
    after = next_state(state, event)
    if after is None:
        raise RuntimeError(f"transaction event {event!r} removes the journal")
    return after


def _advance(record: JournalRecord, event: str) -> JournalRecord:
    return attrs.evolve(record, state=_state_after(record.state, event))


@attrs.frozen(kw_only=True)
class _Plan:
    record: JournalRecord
    # Per planned change, its steps: one, or two for a move (source, destination).
    changes: tuple[tuple[str, tuple[Step, ...]], ...]
    dirs_to_create: tuple[str, ...]  # absolute, top first


def new_transaction_id() -> str:
    """Time-ordered (recovery rolls back newest first) and unguessable."""
    return f"{time.time_ns():016x}{secrets.token_hex(8)}"


# -- commit --------------------------------------------------------------------------


def commit(
    workspace: WorkspaceContext,
    changes: Iterable[PlannedChange],
    *,
    on_prepared: Callable[[str], object] | None = None,
    on_committed: Callable[[str], object] | None = None,
) -> str:
    """Publish every change or none, under the journal; return the transaction id.

    Spec: PATCH-* (all or nothing), TXN-*, TRACK-* (re-verification inside the lock).
    """
    workspace.ensure_writable()
    planned = tuple(changes)
    check_shape(workspace, planned)
    txn_id = new_transaction_id()
    keys = {change.target.canonical_key for change in planned}
    keys |= {change.move_to.canonical_key for change in planned if change.move_to is not None}
    try:
        with workspace.locks.transactions(exclusive=False), workspace.locks.hold(keys):
            workspace.ensure_writable()
            _run(workspace, txn_id, planned, on_prepared, on_committed)
    except OSError as exc:  # a lock file, or an inspection before anything changed
        raise _errors.from_oserror(exc, exc.filename, action="transaction") from exc
    return txn_id


def _run(
    workspace: WorkspaceContext,
    txn_id: str,
    planned: Sequence[PlannedChange],
    on_prepared: Callable[[str], object] | None,
    on_committed: Callable[[str], object] | None,
) -> None:
    plan = _prepare(workspace, txn_id, planned)
    if on_prepared is not None:
        try:
            on_prepared(txn_id)
        except Exception as exc:
            discard_snapshots(workspace, txn_id, exc)
            raise
    owned = Owned()
    try:
        _publish(workspace, plan, owned)
        committed = _advance(plan.record, COMMIT)
        _journal.write(workspace.fs, workspace.journal_dir, committed)
    except Exception as exc:
        error = exc if isinstance(exc, ToolError) else publish_error(exc)
        try:
            _abort(workspace, plan.record, owned, error)
        except BaseException as abort_error:
            if not isinstance(abort_error, ToolError):  # _abort marks the workspace itself
                workspace.mark_needs_recovery(f"the rollback of {txn_id} was interrupted")
            raise
        if error is exc:
            raise
        raise error from exc
    except BaseException:
        # A crash or an interrupt: no cleanup (a dead process runs none), but this
        # process must not publish over a transaction that recovery has yet to undo.
        workspace.mark_needs_recovery(f"transaction {txn_id} was interrupted")
        raise
    _after_commit(workspace, committed, owned, on_committed)


# -- step 0: re-verify and plan, inside the locks ------------------------------------------


def _prepare(workspace: WorkspaceContext, txn_id: str, planned: Sequence[PlannedChange]) -> _Plan:
    changes, dirs_to_create = plan_steps(workspace, txn_id, planned)
    record = JournalRecord(
        version=_journal.VERSION,
        txn_id=txn_id,
        state=_state_after(None, PREPARE),
        root=workspace.root,
        entries=tuple(step.entry for _, steps in changes for step in steps),
    )
    return _Plan(record=record, changes=changes, dirs_to_create=dirs_to_create)


# -- steps 1-4 -----------------------------------------------------------------------------


def _publish(workspace: WorkspaceContext, plan: _Plan, owned: Owned) -> None:
    fs = workspace.fs
    # 1. The journal, before anything it names exists.
    _journal.write(fs, workspace.journal_dir, plan.record)
    fs.fsync_dir(workspace.journal_dir)
    # 2. Directories (recorded in the journal already), then stage files.
    for directory in plan.dirs_to_create:
        fs.mkdir(directory)
        owned.dirs.add(directory)
        fs.fsync_dir(os.path.dirname(directory))
    steps = [step for _, change_steps in plan.changes for step in change_steps]
    for step in steps:
        if step.stage is None or step.new_bytes is None:
            continue
        default = 0o777 if step.executable else 0o666  # the umask applies, as for git
        fd = fs.create_exclusive(step.stage, 0o600 if step.mode is not None else default)
        owned.stages.add(step.stage)
        try:
            fs.write(fd, step.new_bytes)
            if step.mode is not None:
                fs.fchmod(fd, step.mode)
            fs.fsync(fd)
        finally:
            fs.close(fd)
    # 3. Backups: hard links, so the old bytes outlive the publish.
    for step in steps:
        if step.backup is None:
            continue
        fs.link(step.path, step.backup)
        owned.backups.add(step.backup)
    _fsync_dirs(
        fs, {os.path.dirname(side) for step in steps for side in (step.stage, step.backup) if side}
    )
    # The last check, right before the first publish (TXN-006, TXN-012: re-verified in the
    # critical section as late as it can be, after staging and fsync): each name still
    # holds the inode its backup links, with the planned bytes. A save by another writer
    # in place changes the bytes; one through a new file renamed over the name changes the
    # inode, and its backup still holds the old bytes.
    changed = next(
        (step for step in steps if step.backup is not None and not as_planned(fs, step)), None
    )
    if changed is not None:
        # Nothing is published yet: the abort only removes what this transaction made.
        # Restoring a backup would put the old bytes over the file the other writer saved.
        for step in steps:
            if step.backup is not None and step.backup in owned.backups:
                fs.unlink(step.backup)
                owned.backups.discard(step.backup)
        raise ToolError(
            _errors.STALE,
            f"{changed.entry.path} changed on disk while the transaction was prepared",
            path=changed.entry.path,
        )
    # 4. Publish.
    for op, change_steps in plan.changes:
        publish_change(fs, op, change_steps, owned)
    _fsync_dirs(fs, {os.path.dirname(step.path) for step in steps})


def _fsync_dirs(fs: FileSystem, directories: Iterable[str]) -> None:
    for directory in sorted(directories):
        fs.fsync_dir(directory)


# -- steps 5-6 and the abort -------------------------------------------------------------


def _after_commit(
    workspace: WorkspaceContext,
    record: JournalRecord,
    owned: Owned,
    on_committed: Callable[[str], object] | None,
) -> None:
    """From the commit point on the change stands, once the record is durable."""
    fs, txn_id = workspace.fs, record.txn_id
    try:
        fs.fsync_dir(workspace.journal_dir)
    except OSError as exc:
        # The files are published and durable; the commit rename may not be, and a
        # second fsync would prove nothing. Reporting success here is what a power cut
        # could undo, so the commit is revoked through the record's own inode and rolled
        # back. The commit hook never runs: no snapshot or access record names the
        # change.
        _revoke(workspace, record, owned, exc)
    if on_committed is not None:
        try:
            on_committed(txn_id)
        except Exception as exc:
            # The journal stays ``committed``: recovery confirms the transaction again.
            workspace.mark_needs_recovery(
                f"transaction {txn_id} is committed but its commit hook failed: {exc!r}"
            )
            return
    try:
        finish(fs, workspace.root, record)
        _journal.remove(fs, workspace.journal_dir, txn_id)
    except (RollbackIncomplete, OSError):
        # Cleanup after the commit point is best effort: the journal stays ``committed``
        # and names every leftover, and the next recover() (every open runs one)
        # removes them. The change itself is complete, so the call succeeds.
        return
    assert next_state(COMMITTED, FINISH) is None


def _revoke(
    workspace: WorkspaceContext, record: JournalRecord, owned: Owned, cause: OSError
) -> NoReturn:
    """Undo a commit whose record could not be made durable; always raises."""
    txn_id = record.txn_id
    try:
        try:
            _journal.revoke(workspace.fs, workspace.journal_dir, record)
            undone = _advance(record, REVOKE)
        except OSError as exc:
            # Not through the record's inode: through a new record, ``preparing`` again,
            # renamed over it and synced (a new rename, whose fsync proves it).
            undone = _rewrite_preparing(workspace, record, cause, exc)
    except BaseException as exc:
        if not isinstance(exc, ToolError):
            workspace.mark_needs_recovery(f"the revocation of {txn_id} was interrupted")
        raise
    error = ToolError(
        _errors.IO_ERROR,
        f"the commit record of transaction {txn_id} could not be synced "
        f"({cause.strerror or cause}); the change was undone, nothing is changed",
        errno=cause.errno,
        path=workspace.journal_dir,
        transaction=txn_id,
    )
    try:
        _abort(workspace, undone, owned, error)
    except BaseException as abort_error:
        if not isinstance(abort_error, ToolError):
            workspace.mark_needs_recovery(f"the rollback of {txn_id} was interrupted")
        raise
    raise error from cause


def _rewrite_preparing(
    workspace: WorkspaceContext, record: JournalRecord, cause: OSError, failed: OSError
) -> JournalRecord:
    """The second way to undo a commit durably; NEEDS_RECOVERY if it fails too."""
    preparing = attrs.evolve(record, state=PREPARING)
    try:
        _journal.write(workspace.fs, workspace.journal_dir, preparing)
        workspace.fs.fsync_dir(workspace.journal_dir)
    except OSError as exc:
        # Neither the commit nor an undo is known to be durable: a power cut may leave
        # either, so this is not success, and not an error that claims the workspace is
        # as before. This process's recovery rolls the change back.
        workspace.revoked_commits.add(record.txn_id)
        workspace.mark_needs_recovery(
            f"transaction {record.txn_id}: neither its commit record nor its revocation "
            f"could be made durable ({cause}; {failed}; {exc})"
        )
        raise ToolError(
            _errors.NEEDS_RECOVERY,
            f"the commit record of transaction {record.txn_id} could not be synced ({cause}) "
            f"and neither could its revocation ({failed}; {exc}); the files hold the new "
            "bytes, and after a power loss either version may stand: call recover(), which "
            "rolls the change back",
            transaction=record.txn_id,
            errno=cause.errno,
            cause=_errors.IO_ERROR,
            not_restored=sorted(entry.path for entry in record.entries),
        ) from exc
    return preparing


def _abort(
    workspace: WorkspaceContext, record: JournalRecord, owned: Owned, error: ToolError
) -> None:
    """Undo an unfinished publish in-process; raise IO_ERROR if that cannot be done."""
    fs = workspace.fs
    try:
        roll_back(fs, workspace.root, record, owned=owned)
        if fs.lexists(_journal.journal_path(workspace.journal_dir, record.txn_id)):
            _journal.remove(fs, workspace.journal_dir, record.txn_id)
    except (RollbackIncomplete, OSError) as exc:
        failures = exc.failures if isinstance(exc, RollbackIncomplete) else {"journal": str(exc)}
        workspace.mark_needs_recovery(
            f"transaction {record.txn_id} failed ({error.code}) and could not be rolled back"
        )
        raise ToolError(
            _errors.IO_ERROR,
            f"transaction failed ({error.message}) and its rollback could not finish; "
            "call recover()",
            not_restored=sorted(failures),
            failures=failures,
            cause=error.code,
            transaction=record.txn_id,
        ) from error
    assert next_state(record.state, ROLL_BACK) is None
    discard_snapshots(workspace, record.txn_id, error)


# -- recovery of one journal ---------------------------------------------------------------


def settle(workspace: WorkspaceContext, record: JournalRecord) -> tuple[str, list[str]]:
    """Roll back (``preparing``, ``revoked``) or finish (``committed``) a journal found on
    disk, then delete it; return the event applied and the leftovers removed. Spec: RECOV-*.

    The caller holds the workspace guard exclusively, so no transaction is running, and
    has removed the journal temp files. Raises ``RollbackIncomplete`` (the journal is
    kept, so a later recovery retries).
    """
    fs, root, txn_id = workspace.fs, workspace.root, record.txn_id
    if record.state == COMMITTED and txn_id in workspace.revoked_commits:
        # This process revoked the commit and could not make that durable: what it
        # read may be the committed record, but the answer given was not success.
        record = attrs.evolve(record, state=REVOKED)
    record = _republish(workspace, record)
    event = RECOVERY_EVENT[record.state]
    cleaned = roll_back(fs, root, record) if event == ROLL_BACK else finish(fs, root, record)
    hook = "discard_transaction" if event == ROLL_BACK else "confirm_transaction"
    try:
        snapshot_hook(workspace, hook, txn_id)
    except Exception as exc:
        raise RollbackIncomplete({f"snapshots of {txn_id}": repr(exc)}) from exc
    try:
        _journal.remove(fs, workspace.journal_dir, txn_id)
    except OSError as exc:
        raise RollbackIncomplete({f"journal {txn_id}": str(exc)}) from exc
    assert next_state(record.state, event) is None
    workspace.revoked_commits.discard(txn_id)
    return event, cleaned


def _republish(workspace: WorkspaceContext, record: JournalRecord) -> JournalRecord:
    """Write the record recovery acts on as a new file renamed over the one it read, and
    fsync the journal directory, before any file is touched.

    What recovery read may exist only in the page cache: a rename whose directory fsync
    failed (the committing process's, or an earlier recovery's), with another record
    under it on disk. A later fsync that succeeds proves nothing about that rename (the
    kernel may have dropped it: "fsyncgate"), so finishing on the strength of one could
    let a power cut bring back the ``preparing`` record after the backups are gone, or
    the committed one halfway through a rollback. The new rename is proved by the fsync
    that follows it; if either fails, nothing was touched and the next recovery writes
    the record again. A ``revoked`` record is written as ``preparing``.
    """
    republished = _advance(record, REPUBLISH)
    try:
        _journal.write(workspace.fs, workspace.journal_dir, republished)
        workspace.fs.fsync_dir(workspace.journal_dir)
    except OSError as exc:
        failure = f"not written again: {exc}"
        raise RollbackIncomplete({f"journal {record.txn_id}": failure}) from exc
    return republished
