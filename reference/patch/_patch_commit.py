"""A local patch published as one journaled transaction (DESIGN §4 "ApplyPatch", TXN-*).

The plan (``_patch``) is the same over every file service; this is how a local
workspace's store (``tools/_disk``) publishes it:

1. the host's validators see every new content first;
2. ``_transaction.commit`` locks every canonical key in sorted order, re-verifies the
   planned old bytes, calls ``on_prepared`` (here: the snapshot is recorded when a
   ``message_id`` is given, and any failure aborts the patch before anything is
   published), publishes under the journal and calls ``on_committed`` (here: the
   access records are updated, written files count as read at their new hash, deleted
   and moved-away files are forgotten, and the snapshot is confirmed).
"""

from __future__ import annotations

from collections.abc import Sequence

from editspec.reference._context import WorkspaceContext
from editspec.reference._store import PatchFile, Published
from editspec.reference.snapshots._records import SnapshotEntry
from editspec.reference.text import _text
from editspec.reference.transactions import _transaction
from editspec.reference.transactions._plan import PlannedChange


def commit_patch(
    workspace: WorkspaceContext,
    session_id: str,
    files: Sequence[PatchFile],
    *,
    message_id: str | None,
) -> Published:
    """Validate, snapshot and commit every file of a patch. Spec: PATCH-*, TXN-*, SNAP-*."""
    snapshot_created = False

    def on_prepared(txn_id: str) -> None:
        nonlocal snapshot_created
        if message_id is None:
            return
        # Any failure here aborts the patch before anything is published (SNAP-*).
        workspace.snapshots.record(
            session_id, message_id, snapshot_entries(files), transaction_id=txn_id
        )
        snapshot_created = True

    def on_committed(txn_id: str) -> None:
        update_access(workspace, session_id, files)
        if snapshot_created:
            # Called while the journal says ``committed``: if this fails, the transaction
            # keeps the journal and recovery confirms the snapshot (RECOV-*).
            workspace.snapshots.confirm_transaction(txn_id)

    txn_id = _transaction.commit(
        workspace,
        [planned_change(item) for item in files],
        on_prepared=on_prepared,
        on_committed=on_committed,
    )
    return Published(snapshot_created=snapshot_created, transaction_id=txn_id)


def planned_change(item: PatchFile) -> PlannedChange:
    """The transaction's input for one file of the patch."""
    return PlannedChange(
        op=item.op,
        target=item.source,
        move_to=item.dest,
        old_bytes=item.old_bytes,
        new_bytes=item.new_bytes,
        mode=None,  # the transaction keeps the mode it finds under the lock
        executable=item.executable,
    )


def snapshot_entries(files: Sequence[PatchFile]) -> list[SnapshotEntry]:
    """Per file: before-bytes, existence, mode, after-hash; a move is a delete and an add."""
    entries: list[SnapshotEntry] = []
    for item in files:
        new_sha = None if item.new_bytes is None else _text.sha256_hex(item.new_bytes)
        if item.op == "add":
            entries.append(
                SnapshotEntry(
                    relative=item.source.relative, existed=False, before=None, after_sha256=new_sha
                )
            )
            continue
        moved = item.dest is not None
        entries.append(
            SnapshotEntry(
                relative=item.source.relative,
                existed=True,
                before=item.old_bytes,
                after_sha256=None if moved or item.op == "delete" else new_sha,
                mode=item.mode,
            )
        )
        if item.dest is not None:
            entries.append(
                SnapshotEntry(
                    relative=item.dest.relative,
                    existed=False,
                    before=None,
                    after_sha256=new_sha,
                    mode=item.mode,
                )
            )
    return entries


def update_access(workspace: WorkspaceContext, session_id: str, files: Sequence[PatchFile]) -> None:
    """Written files count as read at their new hash; removed names are forgotten. TRACK-*."""
    for item in files:
        written = item.dest if item.dest is not None else item.source
        if item.dest is not None or item.op == "delete":
            workspace.access.forget(session_id, item.source.canonical_key)
        if item.new_bytes is None:
            continue
        size, mtime_ns = len(item.new_bytes), 0
        try:
            status = workspace.fs.stat(written.real)
            size, mtime_ns = status.st_size, status.st_mtime_ns
        except OSError:
            pass  # the hash is authoritative; size and mtime are diagnostics only
        workspace.access.record_write(
            session_id,
            written.canonical_key,
            sha256=_text.sha256_hex(item.new_bytes),
            size=size,
            mtime_ns=mtime_ns,
        )
