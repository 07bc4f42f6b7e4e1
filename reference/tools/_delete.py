"""Delete: a file, an empty directory or a whole tree, with stronger preconditions (DEL-*).

The caller states what it means to delete (``kind``: ``file``, ``empty_dir`` or
``tree``) and the engine refuses when the disk holds something else (INVALID_ARGUMENT;
a directory named as a file: IS_A_DIRECTORY). Then, before any disk change:

* a file needs a full read in this session at its current hash, or ``expected_sha256``
  (NOT_READ, STALE), as a replace does;
* a tree needs ``manifest_sha256``, the hash ``Session.manifest`` returned for it: the
  engine recomputes the manifest under the locks, and any entry added, removed or
  changed since gives STALE, so nothing is deleted unseen.

How each kind is published:

* file: one journaled transaction (``_transaction.commit``, op ``delete``), so recovery
  makes it all-or-nothing through a crash;
* tree: one ``rename`` of the whole directory into the quarantine under the state
  directory (``_intents``): the rename is the commit point. The quarantined tree is
  re-checked against the manifest right after the rename; a mismatch (an external
  writer slipped an entry in before the rename) renames it back and answers STALE.
  When the state directory is on another file system (EXDEV), the files are deleted
  in one journaled transaction instead and the emptied directories are removed after
  it (the result says so: ``quarantine`` is None and a warning names the fallback);
* empty directory: ``rmdir`` (nothing to keep).

Deleted file contents are always kept as snapshot blobs under a message id (the
caller's ``message_id``, or ``delete-<id>`` when none is given): ``restore_ref`` names
it and ``rewind(restore_ref)`` brings the files back. Symlinks and empty directories
inside a tree are not recreated by rewind; the quarantine keeps them.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import DeleteResult, ManifestItem
from editspec.reference.snapshots._records import DIR_CONTENT, SnapshotEntry
from editspec.reference.text._text import sha256_hex
from editspec.reference.tools._delete_fallback import delete_tree_journaled
from editspec.reference.tools._manifest import Tree, scan_tree
from editspec.reference.tools._write import check_expected_sha256, check_message_id
from editspec.reference.transactions import _intents, _quarantine
from editspec.reference.transactions._plan import PlannedChange
from editspec.reference.transactions._transaction import commit

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext, WorkspaceContext
    from editspec.reference.paths._paths import WorkspacePath

KINDS = ("file", "empty_dir", "tree")


def delete(
    session: SessionContext,
    path: str,
    *,
    kind: str,
    expected_sha256: str | None = None,
    manifest_sha256: str | None = None,
    message_id: str | None = None,
) -> DeleteResult:
    """Delete what ``kind`` says is at ``path``. Spec: DEL-*."""
    if kind not in KINDS:
        raise ToolError(
            _errors.INVALID_ARGUMENT, f"kind must be one of {', '.join(KINDS)}", kind=str(kind)
        )
    expected = check_expected_sha256(expected_sha256)
    manifest_hash = check_expected_sha256(manifest_sha256)
    message = check_message_id(message_id)
    workspace = session.workspace
    target = workspace.resolve(path)
    shown = target.logical_relative
    refuse_unmovable(workspace, target, "delete")
    check_kind(kind, _kind_on_disk(workspace, target), shown)
    if kind == "file":
        return _delete_file(session, target, expected, message)
    if kind == "empty_dir":
        return _delete_empty_dir(workspace, target)
    return _delete_tree(session, target, require_manifest(manifest_hash, shown, "delete"), message)


def check_kind(kind: str, actual: str, shown: str) -> None:
    """The stated kind must be what is on disk (a directory named as a file: IS_A_DIRECTORY)."""
    if actual == kind:
        return
    code = _errors.IS_A_DIRECTORY if kind == "file" and actual != "other" else None
    raise ToolError(
        code or _errors.INVALID_ARGUMENT,
        f"{shown} is {_DESCRIBED[actual]}, not {_DESCRIBED[kind]}",
        path=shown,
        kind=kind,
        actual=actual,
    )


def require_manifest(manifest_hash: str | None, shown: str, verb: str) -> str:
    """A whole tree is deleted or moved only against the manifest a listing returned."""
    if manifest_hash is None:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"to {verb} the directory {shown}, pass manifest_sha256 from a manifest of it",
            path=shown,
        )
    return manifest_hash


_DESCRIBED = {
    "file": "a file",
    "empty_dir": "an empty directory",
    "tree": "a non-empty directory",
    "other": "not a regular file or directory",
}


def refuse_unmovable(workspace: WorkspaceContext, target: WorkspacePath, verb: str) -> None:
    """NOT_FOUND, the root itself, a path that is a symlink, or one holding the state dir."""
    shown = target.logical_relative
    if target.kind == "missing":
        raise ToolError(_errors.NOT_FOUND, f"{shown} does not exist", path=shown)
    if target.real == workspace.root:
        raise ToolError(
            _errors.INVALID_ARGUMENT, f"cannot {verb} the workspace root itself", path=shown
        )
    if target.crossed_link:
        parent = workspace.resolve(os.path.dirname(target.logical))
        status = _lstat(workspace, os.path.join(parent.real, os.path.basename(target.logical)))
        if status is not None and stat.S_ISLNK(status.st_mode):
            # It would act on the link's target and leave the link dangling.
            raise ToolError(
                _errors.UNSUPPORTED,
                f"{shown} is a symbolic link to {target.relative}; {verb} the file itself",
                path=shown,
                target=target.relative,
            )
    state = workspace.state_dir
    if state == target.real or state.startswith(target.real + os.sep):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"{shown} holds the engine's state directory; it is not {verb}d",
            path=shown,
        )


def _kind_on_disk(workspace: WorkspaceContext, target: WorkspacePath) -> str:
    if target.kind == "file":
        return "file"
    if target.kind != "dir":
        return "other"
    try:
        names = workspace.fs.listdir(target.real)
    except OSError as exc:
        raise _errors.from_oserror(exc, target.logical_relative, action="list") from exc
    return "tree" if names else "empty_dir"


def _lstat(workspace: WorkspaceContext, real: str) -> os.stat_result | None:
    try:
        return workspace.fs.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _errors.from_oserror(exc, real, action="inspect") from exc


def check_fresh(
    session: SessionContext, target: WorkspacePath, data: bytes, expected: str | None
) -> str:
    """A full read at the current hash, or ``expected_sha256`` (NOT_READ, STALE)."""
    current = sha256_hex(data)
    shown = target.logical_relative
    if expected is not None:
        if expected != current:
            raise ToolError(
                _errors.STALE,
                f"{shown} does not have the expected sha256; read it again",
                path=shown,
                current_sha256=current,
                expected_sha256=expected,
            )
        return current
    session.workspace.access.require_fresh(
        session.id, target.canonical_key, current_sha256=current, display_path=shown
    )
    return current


def read_file(workspace: WorkspaceContext, target: WorkspacePath) -> tuple[bytes, int]:
    """The bytes and mode of a regular file the call removes or moves."""
    try:
        status = workspace.fs.lstat(target.real)
        data = workspace.fs.read_bytes(target.real)
    except OSError as exc:
        raise _errors.from_oserror(exc, target.logical_relative, action="read") from exc
    return data, stat.S_IMODE(status.st_mode)


def check_tree(tree: Tree, expected: str, shown: str) -> None:
    """STALE unless the tree is exactly what the caller's manifest named."""
    if tree.manifest_sha256 != expected:
        raise ToolError(
            _errors.STALE,
            f"{shown} changed since it was listed (an entry was added, removed or changed); "
            "list it again and check every entry",
            path=shown,
            expected_sha256=expected,
        )


def tree_entries(root_relative: str, tree: Tree, *, moved_to: str | None) -> list[SnapshotEntry]:
    """Snapshot entries for every entry of a tree that leaves ``root_relative``: its files,
    and its directories (the tree's own included) and symlinks, so that a rewind brings
    back empty directories and links too. Spec: DEL-*, MOVE-*."""
    entries: list[SnapshotEntry] = []
    others: list[tuple[str, str, bytes]] = [("", "dir", DIR_CONTENT)]
    for item in tree.items:
        if item.type == "dir":
            others.append((item.path, "dir", DIR_CONTENT))
        elif item.type == "symlink":
            others.append((item.path, "symlink", os.fsencode(tree.links[item.path])))
    for relative, kind, content in others:
        source = f"{root_relative}/{relative}" if relative else root_relative
        entries.append(
            SnapshotEntry(
                relative=source, existed=True, before=content, after_sha256=None, kind=kind
            )
        )
        if moved_to is not None:
            entries.append(
                SnapshotEntry(
                    relative=f"{moved_to}/{relative}" if relative else moved_to,
                    existed=False,
                    before=None,
                    after_sha256=sha256_hex(content),
                    kind=kind,
                )
            )
    for relative, data in sorted(tree.contents.items()):
        digest = sha256_hex(data)
        entries.append(
            SnapshotEntry(
                relative=f"{root_relative}/{relative}",
                existed=True,
                before=data,
                after_sha256=None,
                mode=tree.modes[relative],
            )
        )
        if moved_to is not None:
            entries.append(
                SnapshotEntry(
                    relative=f"{moved_to}/{relative}",
                    existed=False,
                    before=None,
                    after_sha256=digest,
                    mode=tree.modes[relative],
                )
            )
    return entries


def _delete_file(
    session: SessionContext, target: WorkspacePath, expected: str | None, message_id: str | None
) -> DeleteResult:
    workspace = session.workspace
    shown = target.logical_relative
    data, mode = read_file(workspace, target)
    digest = check_fresh(session, target, data, expected)
    restore_ref: list[str] = []

    def on_prepared(txn_id: str) -> None:
        ref = message_id or f"delete-{txn_id}"
        entry = SnapshotEntry(
            relative=target.relative, existed=True, before=data, after_sha256=None, mode=mode
        )
        # Deleted content is always kept: a failure here aborts before anything changes.
        workspace.snapshots.record(session.id, ref, [entry], transaction_id=txn_id)
        restore_ref.append(ref)

    def on_committed(txn_id: str) -> None:
        workspace.access.forget(session.id, target.canonical_key)
        workspace.snapshots.confirm_transaction(txn_id)

    change = PlannedChange(op="delete", target=target, old_bytes=data)
    txn_id = commit(workspace, [change], on_prepared=on_prepared, on_committed=on_committed)
    return DeleteResult(
        path=shown,
        kind="file",
        items=(ManifestItem(path="", type="file", size=len(data), sha256=digest),),
        old_sha256=digest,
        manifest_sha256=None,
        restore_ref=restore_ref[0],
        quarantine=None,
        snapshot_created=True,
        transaction_id=txn_id,
    )


def _delete_empty_dir(workspace: WorkspaceContext, target: WorkspacePath) -> DeleteResult:
    shown = target.logical_relative
    with workspace.locks.transactions(exclusive=False), workspace.locks.hold([target.real]):
        try:
            mode = stat.S_IMODE(workspace.fs.lstat(target.real).st_mode)
            workspace.fs.rmdir(target.real)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise ToolError(
                    _errors.STALE,
                    f"{shown} is no longer empty; list it again",
                    path=shown,
                ) from exc
            raise _errors.from_oserror(exc, shown, action="remove directory") from exc
        _removal_durable(workspace, target.real, mode, shown)
    return DeleteResult(
        path=shown,
        kind="empty_dir",
        items=(),
        old_sha256=None,
        manifest_sha256=None,
        restore_ref=None,
        quarantine=None,
        snapshot_created=False,
        warnings=(),
    )


def _removal_durable(workspace: WorkspaceContext, real: str, mode: int, shown: str) -> None:
    """Sync the parent after an rmdir; if that fails, make the directory again and sync
    that (IO_ERROR, as before), or NEEDS_RECOVERY: never a success a power cut undoes."""
    fs, parent = workspace.fs, os.path.dirname(real)
    try:
        fs.fsync_dir(parent)
        return
    except OSError as exc:
        cause = exc
    why = cause.strerror or str(cause)
    try:
        fs.mkdir(real, mode)
        fs.fsync_dir(parent)
    except OSError as exc:
        workspace.mark_needs_recovery(f"{shown}: its removal could not be made durable ({why})")
        raise ToolError(
            _errors.NEEDS_RECOVERY,
            f"{shown} is removed, but neither its removal ({why}) nor its re-creation "
            f"({exc.strerror or exc}) could be synced; after a power loss it may exist",
            path=shown,
            errno=cause.errno,
        ) from cause
    raise ToolError(
        _errors.IO_ERROR,
        f"the removal of {shown} could not be synced ({why}); it was made again, nothing "
        "is changed",
        path=shown,
        errno=cause.errno,
    ) from cause


def _delete_tree(
    session: SessionContext, target: WorkspacePath, expected: str, message_id: str | None
) -> DeleteResult:
    workspace = session.workspace
    fs = workspace.fs
    shown = target.logical_relative
    check_tree(scan_tree(workspace, target.real, target.relative), expected, shown)
    intent_id = _intents.new_id("delete")
    restore_ref = message_id or f"delete-{intent_id}"
    with workspace.locks.transactions(exclusive=False):
        tree = scan_tree(workspace, target.real, target.relative)
        keys = [target.real] + [os.path.join(target.real, name) for name in tree.contents]
        with workspace.locks.hold(keys):
            # Re-checked inside the locks: an engine writer cannot add a file unseen.
            tree = scan_tree(workspace, target.real, target.relative)
            check_tree(tree, expected, shown)
            entries = tree_entries(target.relative, tree, moved_to=None)
            if entries:
                workspace.snapshots.record(
                    session.id, restore_ref, entries, transaction_id=intent_id
                )
            quarantine = os.path.join(_intents.quarantine_dir(workspace), intent_id)
            try:
                _intents.write(workspace, intent_id, "delete", target.relative, _intents.QUARANTINE)
                _intents.ensure_dir(workspace, os.path.dirname(quarantine))
                fs.rename(target.real, quarantine)  # the commit point
            except OSError as exc:
                workspace.snapshots.discard_transaction(intent_id)
                _intents.remove(workspace, intent_id)
                if exc.errno != errno.EXDEV:
                    raise _errors.from_oserror(exc, shown, action="delete") from exc
                return delete_tree_journaled(session, target, tree, restore_ref, entries)
            warnings: list[str] = []
            try:
                _intents.make_durable(workspace, target.real, quarantine, shown=shown)
            except ToolError as exc:
                if exc.code != _errors.NEEDS_RECOVERY:  # put back durably: nothing is left
                    workspace.snapshots.discard_transaction(intent_id)
                    _intents.remove(workspace, intent_id)
                raise
            moved = scan_tree(workspace, quarantine, target.relative)
            if moved.manifest_sha256 != tree.manifest_sha256:
                _put_back(workspace, quarantine, target, intent_id)
                check_tree(moved, expected, shown)
            warnings.extend(_intents.confirm(workspace, intent_id, snapshot=bool(entries)))
            for name in tree.contents:
                workspace.access.forget(session.id, os.path.join(target.real, name))
            _quarantine.purge(workspace)  # the retention rule: older trees go
    return DeleteResult(
        path=shown,
        kind="tree",
        items=tree.items,
        old_sha256=None,
        manifest_sha256=tree.manifest_sha256,
        restore_ref=restore_ref if entries else None,
        quarantine=quarantine,
        snapshot_created=bool(entries),
        transaction_id=intent_id,
        warnings=tuple(warnings),
    )


def _put_back(
    workspace: WorkspaceContext, quarantine: str, target: WorkspacePath, intent_id: str
) -> None:
    """Undo the quarantine rename after a mismatch; CONFLICT if the name was taken."""
    fs = workspace.fs
    workspace.snapshots.discard_transaction(intent_id)
    if _lstat(workspace, target.real) is not None:
        raise ToolError(
            _errors.CONFLICT,
            f"{target.logical_relative} changed during the delete and its name is taken "
            f"again; the tree is kept in {quarantine}",
            path=target.logical_relative,
            quarantine=quarantine,
        )
    fs.rename(quarantine, target.real)
    fs.fsync_dir(os.path.dirname(target.real))
    _intents.remove(workspace, intent_id)
