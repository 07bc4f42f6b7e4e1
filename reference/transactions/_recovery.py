"""Crash recovery: settle every transaction a journal says was interrupted (DESIGN §4 RECOV).

``recover(workspace)`` runs on every ``Workspace`` open and whenever it is called. It
holds the workspace guard exclusively (in-process and ``flock``), so no transaction of
any process is running while it works, then:

1. reads and checks *every* journal first: one that does not parse, has a bad checksum,
   an unknown version, or names a path outside the root is CORRUPT_JOURNAL, and
   nothing at all is touched;
2. removes torn journal temp files (``.<txn>.<state>.tmp``: a journal write that never
   reached its rename; only names of exactly that pattern, only in the journal
   directory, which belongs to the engine), and fsyncs the directory if it found any:
   settling writes records again under those names;
3. settles each journal, newest first (``_transaction.settle``): its record is first
   written again as a new file and synced -- what was read may be in the page cache
   only, renamed in before an fsync that failed, and a retried fsync proves nothing
   about it (no fsync of the directory here is trusted for that) -- ``revoked`` (a
   commit undone because its record could not be synced), or a commit this process
   revoked without making that durable, as ``preparing``; then ``preparing`` is
   rolled back, ``committed`` is finished; the journal is deleted last;
4. discards pending snapshot records of transactions that never wrote a journal (a
   crash while ``on_prepared`` created them): such a transaction cannot commit.

Every step is idempotent, so a crash during recovery is repaired by the next one.
If a journal cannot be settled, the error lists every path left unrestored, the
journal stays for the next attempt, and the workspace refuses changes meanwhile.

Not cleaned: the temp files of single-file atomic writes (``.<name>.editspec-*.tmp``).
No record names them, finding them means walking the whole tree, and one may belong
to a write in progress in another process (single-file writes do not take the
workspace guard), so deleting them is not safe. They never replace a file: a crash
leaves the old file intact and at most one stray hidden temp file beside it.
"""

from __future__ import annotations

import os

from editspec.reference import _errors
from editspec.reference._context import WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._results import RecoveryReport
from editspec.reference.transactions import _intents, _journal, _quarantine
from editspec.reference.transactions._journal import JournalRecord
from editspec.reference.transactions._rollback import RollbackIncomplete
from editspec.reference.transactions._transaction import ROLL_BACK, settle
from editspec.reference.transactions._txn_hooks import snapshot_hook


def recover(workspace: WorkspaceContext) -> RecoveryReport:
    """Finish or roll back every interrupted transaction. Spec: RECOV-*."""
    try:
        with workspace.locks.transactions(exclusive=True):
            _intents.settle(workspace)  # a Delete or Move cut off around its rename (DEL-*)
            report = _recover(workspace)
            _intents.settle(workspace)  # a rewind's directories and symlinks, now due
            _quarantine.purge(workspace)  # deleted trees past their retention
            return report
    except OSError as exc:
        workspace.mark_needs_recovery(f"recovery failed: {exc}")
        raise _errors.from_oserror(exc, exc.filename, action="recover") from exc


def _recover(workspace: WorkspaceContext) -> RecoveryReport:
    fs, journal_dir = workspace.fs, workspace.journal_dir
    try:
        names = sorted(fs.listdir(journal_dir))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    records: list[JournalRecord] = []
    temps: list[str] = []
    for name in names:
        match = _journal.JOURNAL_NAME.fullmatch(name)
        if match is not None:
            # Any untrustworthy journal raises CORRUPT_JOURNAL here, before anything is touched.
            records.append(_journal.read(fs, journal_dir, match.group(1), root=workspace.root))
        elif _journal.TEMP_NAME.fullmatch(name):
            temps.append(name)
        # Other names are not journals; the engine never writes them, and leaves them be.
    if not records and not temps:
        _discard_orphan_snapshots(workspace, set())
        return RecoveryReport()
    rolled_back: list[str] = []
    rolled_forward: list[str] = []
    cleaned: list[str] = []
    failures: dict[str, str] = {}
    # Temp files first: settling a journal writes its record again under its temp name.
    for name in temps:
        path = os.path.join(journal_dir, name)
        try:
            fs.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failures[path] = f"journal temp file not removed: {exc}"
            continue
        cleaned.append(path)
    if temps:
        fs.fsync_dir(journal_dir)
    # Newest first: if two interrupted transactions touched one file, the older one's
    # backup holds the earlier bytes and must be restored last.
    for record in sorted(records, key=lambda r: r.txn_id, reverse=True):
        try:
            event, removed = settle(workspace, record)
        except RollbackIncomplete as exc:
            failures.update(exc.failures)
            continue
        cleaned.extend(removed)
        (rolled_back if event == ROLL_BACK else rolled_forward).append(record.txn_id)
    kept = {record.txn_id for record in records} - set(rolled_back) - set(rolled_forward)
    failures.update(_discard_orphan_snapshots(workspace, kept))
    if failures:
        workspace.mark_needs_recovery("recovery could not settle every transaction")
        raise ToolError(
            _errors.IO_ERROR,
            "recovery could not restore every file; the journal is kept, call recover() again",
            not_restored=sorted(failures),
            failures=failures,
            rolled_back=rolled_back,
            rolled_forward=rolled_forward,
        )
    return RecoveryReport(
        rolled_back=tuple(rolled_back), rolled_forward=tuple(rolled_forward), cleaned=tuple(cleaned)
    )


def _discard_orphan_snapshots(workspace: WorkspaceContext, journaled: set[str]) -> dict[str, str]:
    """Discard pending snapshot records of transactions that have no journal.

    A transaction creates its snapshots (``on_prepared``) before it writes its journal,
    so a crash in between leaves pending records of a transaction that can never
    commit. With the workspace guard held exclusively none is running, so every
    pending transaction without a journal is one of those.
    """
    pending = getattr(workspace.snapshots, "pending_transactions", None)
    if not callable(pending):
        return {}
    failures: dict[str, str] = {}
    for txn_id in sorted(pending()):
        if txn_id in journaled or not _journal.TXN_ID.fullmatch(txn_id):
            continue
        if workspace.fs.lexists(_journal.journal_path(workspace.journal_dir, txn_id)):
            continue
        try:
            snapshot_hook(workspace, "discard_transaction", txn_id)
        except Exception as exc:
            failures[f"snapshots of {txn_id}"] = repr(exc)
    return failures
