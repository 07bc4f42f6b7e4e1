"""A tree Delete where the quarantine is on another file system (EXDEV): DEL-*.

The tree's files are deleted in one journaled transaction (all-or-nothing through a
crash, rewindable by the snapshot recorded when it prepares); then its symlinks, other
entries and directories are removed, deepest first, each removal synced. What cannot be
removed stays and is named in a warning; what was removed but could not be synced is
made again (``_remove_leftovers``), so the result never names as gone what a power cut
can bring back.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import DeleteResult
from editspec.reference.snapshots._records import SnapshotEntry
from editspec.reference.tools._manifest import Tree
from editspec.reference.transactions._plan import PlannedChange
from editspec.reference.transactions._transaction import commit

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext, WorkspaceContext
    from editspec.reference.paths._paths import WorkspacePath


def delete_tree_journaled(
    session: SessionContext,
    target: WorkspacePath,
    tree: Tree,
    restore_ref: str,
    entries: list[SnapshotEntry],
) -> DeleteResult:
    """EXDEV fallback: every file in one transaction, then the emptied directories.

    ``entries``: the snapshot of the whole tree (``_delete.tree_entries``)."""
    workspace = session.workspace
    shown = target.logical_relative
    files = sorted(tree.contents)
    changes = [
        PlannedChange(
            op="delete",
            target=workspace.resolve(os.path.join(target.real, name)),
            old_bytes=tree.contents[name],
        )
        for name in files
    ]

    def on_prepared(txn_id: str) -> None:
        workspace.snapshots.record(session.id, restore_ref, entries, transaction_id=txn_id)

    def on_committed(txn_id: str) -> None:
        for name in files:
            workspace.access.forget(session.id, os.path.join(target.real, name))
        workspace.snapshots.confirm_transaction(txn_id)

    txn_id = ""
    if changes:
        txn_id = commit(workspace, changes, on_prepared=on_prepared, on_committed=on_committed)
    warnings = [
        "the state directory is on another file system: the files were deleted in one "
        "transaction and the directories removed after it"
    ]
    warnings.extend(_remove_leftovers(workspace, target, tree, restore_ref if entries else None))
    return DeleteResult(
        path=shown,
        kind="tree",
        items=tree.items,
        old_sha256=None,
        manifest_sha256=tree.manifest_sha256,
        restore_ref=restore_ref if entries else None,
        quarantine=None,
        snapshot_created=bool(entries),
        transaction_id=txn_id,
        warnings=tuple(warnings),
    )


def _remove_leftovers(
    workspace: WorkspaceContext, target: WorkspacePath, tree: Tree, restore_ref: str | None
) -> list[str]:
    """After the files' transaction: the tree's symlinks, other entries and directories,
    deepest first, each removal synced in its parent; a warning for each one left.

    A removal whose sync fails is undone by a new, synced step (the directory or link
    made again), so a power cut cannot bring back what the result says is gone; if the
    undo cannot be synced either (or the entry cannot be made again), NEEDS_RECOVERY,
    never success."""
    fs, shown = workspace.fs, target.logical_relative
    warnings: list[str] = []
    leftovers = [item for item in tree.items if item.type != "file"]
    deepest_first = sorted(leftovers, key=lambda item: item.path.count("/"), reverse=True)
    for item in [*deepest_first, None]:
        real = os.path.join(target.real, item.path) if item is not None else target.real
        kind = item.type if item is not None else "dir"
        name = f"{shown}/{item.path}" if item is not None else shown
        try:
            mode = stat.S_IMODE(fs.lstat(real).st_mode)
            (fs.rmdir if kind == "dir" else fs.unlink)(real)
        except OSError as exc:
            warnings.append(f"{name} was not removed: {exc.strerror or exc}")
            continue
        try:
            fs.fsync_dir(os.path.dirname(real))
            continue
        except OSError as exc:
            cause = exc
        why = cause.strerror or str(cause)
        try:
            if kind == "dir":
                fs.mkdir(real, mode)
            elif kind == "symlink" and item is not None:
                fs.symlink(tree.links[item.path], real)
            else:
                raise OSError(errno.EOPNOTSUPP, "it cannot be made again", real)
            fs.fsync_dir(os.path.dirname(real))
        except OSError as exc:
            workspace.mark_needs_recovery(f"{name}: its removal could not be made durable ({why})")
            raise ToolError(
                _errors.NEEDS_RECOVERY,
                f"the files of {shown} are deleted, but the removal of {name} could not be "
                f"synced ({why}) nor undone ({exc.strerror or exc}); after a power loss it "
                "may exist",
                path=shown,
                errno=cause.errno,
                restore_ref=restore_ref,
            ) from cause
        warnings.append(
            f"{name} was not removed: its removal could not be synced ({why}), so it was made again"
        )
    return warnings
