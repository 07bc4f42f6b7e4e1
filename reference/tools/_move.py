"""Move: a file or a directory to a new path, never over an existing one (MOVE-*).

Preconditions, checked before any disk change: the source exists and is not a
symlink (UNSUPPORTED: it would move the target) nor the root; a file needs a full
read in this session at its current hash or ``expected_sha256`` (NOT_READ, STALE); a
directory needs ``manifest_sha256`` from ``Session.manifest`` (STALE when anything
under it changed); the destination must not exist (ALREADY_EXISTS), must not be the
source itself or lie inside it (INVALID_ARGUMENT); its missing parent directories are
created (and removed again on failure).

Publish: within one file system, under the locks of both paths (and of every file of
a moved directory), by a step that itself refuses an existing destination, so that a
process outside the engine that creates one after the checks is never clobbered
(``_no_clobber``: link then unlink for a file, ``renameat2(RENAME_NOREPLACE)`` for a
directory); the snapshot bookkeeping around that commit point is ``_intents``'.
Across file systems the link (or rename) fails with EXDEV and a file is moved in
steps, reported as ``atomic: False`` with each step's outcome: ``copy`` (an exclusive
temp file beside the destination, linked into place: no clobber), ``fsync`` (its data
and the destination directory), ``verify`` (read back, same sha256 as the source),
``delete_source`` (unlink, fsync the source directory). A failure before
``delete_source`` completes removes the copy again, synced, and raises with
``details`` ``completed``, ``pending`` and ``rolled_back`` (NEEDS_RECOVERY when that
removal cannot be synced); a source removal that cannot be synced is undone (the
source made again, the copy removed: IO_ERROR). The copy is named after the move's
intent, so recovery finds one a crash left. A directory across file systems is
UNSUPPORTED.

The move is recorded as a snapshot (the caller's ``message_id`` or ``move-<id>``):
``rewind(restore_ref)`` moves it back.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, NoReturn

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import MoveResult, MoveStep
from editspec.reference.snapshots._records import SnapshotEntry
from editspec.reference.tools import _no_clobber
from editspec.reference.tools._delete import (
    check_fresh,
    check_tree,
    read_file,
    refuse_unmovable,
    require_manifest,
    tree_entries,
)
from editspec.reference.tools._manifest import Tree, scan_tree
from editspec.reference.tools._write import check_expected_sha256, check_message_id
from editspec.reference.transactions import _intents

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext, WorkspaceContext
    from editspec.reference.paths._paths import WorkspacePath

STEPS_ACROSS = ("copy", "fsync", "verify", "delete_source")


def move(
    session: SessionContext,
    source: str,
    destination: str,
    *,
    expected_sha256: str | None = None,
    manifest_sha256: str | None = None,
    message_id: str | None = None,
) -> MoveResult:
    """Move ``source`` to ``destination`` without clobbering. Spec: MOVE-*."""
    expected = check_expected_sha256(expected_sha256)
    manifest_hash = check_expected_sha256(manifest_sha256)
    message = check_message_id(message_id)
    workspace = session.workspace
    src = workspace.resolve(source)
    dst = workspace.resolve(destination)
    refuse_unmovable(workspace, src, "move")
    shown, shown_to = src.logical_relative, dst.logical_relative
    if dst.real == src.real or dst.real.startswith(src.real + os.sep):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"cannot move {shown} to {shown_to}: the destination is the source or inside it",
            path=shown_to,
        )
    _refuse_existing(workspace, dst, shown)
    hooks = workspace.hooks
    if src.kind == "file":
        data, mode = read_file(workspace, src)
        check_fresh(session, src, data, expected)
        hooks.run_validators(shown_to, "move", None, data)
        return _move(session, src, dst, message, data=data, mode=mode, tree=None)
    if src.kind != "dir":
        raise ToolError(_errors.INVALID_ARGUMENT, f"{shown} is not a regular file", path=shown)
    expected_tree = require_manifest(manifest_hash, shown, "move")
    tree = scan_tree(workspace, src.real, src.relative)
    check_tree(tree, expected_tree, shown)
    for name, content in sorted(tree.contents.items()):
        hooks.run_validators(f"{shown_to}/{name}", "move", None, content)
    return _move(session, src, dst, message, data=None, mode=0, tree=tree)


def _refuse_existing(workspace: WorkspaceContext, dst: WorkspacePath, shown: str) -> None:
    try:
        workspace.fs.lstat(dst.real)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise _errors.from_oserror(exc, dst.logical_relative, action="inspect") from exc
    raise _already_exists(shown, dst)


def _already_exists(shown: str, dst: WorkspacePath) -> ToolError:
    return ToolError(
        _errors.ALREADY_EXISTS,
        f"cannot move {shown} to {dst.logical_relative}: it already exists",
        path=dst.logical_relative,
    )


def _snapshot_entries(
    src: WorkspacePath, dst: WorkspacePath, data: bytes | None, mode: int, tree: Tree | None
) -> list[SnapshotEntry]:
    if tree is not None:
        return tree_entries(src.relative, tree, moved_to=dst.relative)
    assert data is not None
    from editspec.reference.text._text import sha256_hex

    digest = sha256_hex(data)
    return [
        SnapshotEntry(
            relative=src.relative, existed=True, before=data, after_sha256=None, mode=mode
        ),
        SnapshotEntry(
            relative=dst.relative, existed=False, before=None, after_sha256=digest, mode=mode
        ),
    ]


def _move(
    session: SessionContext,
    src: WorkspacePath,
    dst: WorkspacePath,
    message_id: str | None,
    *,
    data: bytes | None,
    mode: int,
    tree: Tree | None,
) -> MoveResult:
    from editspec.reference.text._text import sha256_hex

    workspace = session.workspace
    fs = workspace.fs
    shown, shown_to = src.logical_relative, dst.logical_relative
    intent_id = _intents.new_id("move")
    restore_ref = message_id or f"move-{intent_id}"
    files = list(tree.contents) if tree is not None else []
    keys = [src.real, dst.real] + [os.path.join(src.real, name) for name in files]
    keys += [os.path.join(dst.real, name) for name in files]
    with workspace.locks.transactions(exclusive=False), workspace.locks.hold(keys):
        # Re-checked inside the locks (STALE, ALREADY_EXISTS).
        if tree is not None:
            check_tree(scan_tree(workspace, src.real, src.relative), tree.manifest_sha256, shown)
        else:
            assert data is not None
            current, _ = read_file(workspace, src)
            check_fresh(session, src, current, sha256_hex(data))
        _refuse_existing(workspace, dst, shown)
        entries = _snapshot_entries(src, dst, data, mode, tree)
        snapshot = bool(entries)
        if snapshot:
            workspace.snapshots.record(session.id, restore_ref, entries, transaction_id=intent_id)
        created: list[str] = []
        try:
            missing = _missing_parents(workspace, dst.real)
            _intents.write(
                workspace,
                intent_id,
                "move",
                src.relative,
                dst.relative,
                dirs_created=tuple(os.path.relpath(path, workspace.root) for path in missing),
            )
            for directory in missing:
                fs.mkdir(directory, 0o777)
                created.append(directory)
                fs.fsync_dir(os.path.dirname(directory))
            _refuse_existing(workspace, dst, shown)
            # The publish itself refuses an existing destination (a process outside the
            # engine may create one after the check above): MOVE-002.
            if tree is None:
                done, published = _no_clobber.publish_file(workspace, src.real, dst.real)
            else:
                done, published = _no_clobber.publish_dir(workspace, src.real, dst.real)
        except FileExistsError as exc:
            _abandon(workspace, intent_id, created, snapshot)
            raise _already_exists(shown, dst) from exc
        except _no_clobber.BothNamesLeft as exc:
            # The intent and the pending snapshot stay: recovery removes the new name.
            raise ToolError(
                _errors.IO_ERROR,
                f"moving {shown} to {shown_to} failed ({exc}) and {shown_to} could not be "
                "removed again; recover() removes it",
                path=shown,
                errno=exc.cause.errno,
            ) from exc
        except (OSError, ToolError) as exc:
            across = isinstance(exc, OSError) and exc.errno == errno.EXDEV
            if not across or tree is not None:
                _abandon(workspace, intent_id, created, snapshot)
                if isinstance(exc, ToolError):
                    raise
                if across:
                    raise ToolError(
                        _errors.UNSUPPORTED,
                        f"{shown} and {shown_to} are on different file systems; a directory "
                        "is moved only by one rename",
                        path=shown,
                    ) from exc
                raise _errors.from_oserror(exc, shown, action="move") from exc
            assert data is not None
            try:
                steps, warnings = _move_across(workspace, src, dst, data, mode, intent_id)
            except BaseException as failure:
                # NEEDS_RECOVERY keeps the intent: recovery settles by what the disk holds.
                undecided = isinstance(failure, ToolError) and (
                    failure.code == _errors.NEEDS_RECOVERY
                )
                if isinstance(failure, Exception) and not undecided:
                    _abandon(workspace, intent_id, created, snapshot)
                raise
        else:
            steps = tuple(MoveStep(step=name, outcome="done") for name in done)
            warnings = list(published)
            try:
                _intents.make_durable(workspace, src.real, dst.real, shown=shown)
            except ToolError as exc:
                if exc.code != _errors.NEEDS_RECOVERY:  # undone durably: nothing is left
                    _abandon(workspace, intent_id, created, snapshot)
                raise
        warnings.extend(_intents.confirm(workspace, intent_id, snapshot=snapshot))
        _update_access(session, src, dst, data, files)
    return MoveResult(
        path=shown,
        move_to=shown_to,
        kind="dir" if tree is not None else "file",
        atomic=steps[0].outcome == "done",
        steps=steps,
        sha256=None if data is None else sha256_hex(data),
        items=() if tree is None else tree.items,
        restore_ref=restore_ref if snapshot else None,
        snapshot_created=snapshot,
        warnings=tuple(warnings),
    )


def _missing_parents(workspace: WorkspaceContext, real: str) -> list[str]:
    """The destination's parent directories that do not exist yet, top first."""
    missing: list[str] = []
    directory = os.path.dirname(real)
    while directory != workspace.root and not workspace.fs.lexists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    return missing[::-1]


def _abandon(
    workspace: WorkspaceContext, intent_id: str, created: list[str], snapshot: bool
) -> None:
    # The directories first, each removal synced, and the intent last: until it goes,
    # recovery removes them itself after a power cut.
    for directory in reversed(created):
        try:
            workspace.fs.rmdir(directory)
            workspace.fs.fsync_dir(os.path.dirname(directory))
        except OSError:
            break
    if snapshot:
        workspace.snapshots.discard_transaction(intent_id)
    _intents.remove(workspace, intent_id)


def _update_access(
    session: SessionContext,
    src: WorkspacePath,
    dst: WorkspacePath,
    data: bytes | None,
    files: list[str],
) -> None:
    from editspec.reference.text._text import sha256_hex

    access = session.workspace.access
    if data is None:
        for name in files:
            access.forget(session.id, os.path.join(src.real, name))
        return
    access.forget(session.id, src.canonical_key)
    try:
        status = session.workspace.fs.lstat(dst.real)
        size, mtime_ns = status.st_size, status.st_mtime_ns
    except OSError:
        size, mtime_ns = len(data), 0
    access.record_write(
        session.id, dst.canonical_key, sha256=sha256_hex(data), size=size, mtime_ns=mtime_ns
    )


def _move_across(
    workspace: WorkspaceContext,
    src: WorkspacePath,
    dst: WorkspacePath,
    data: bytes,
    mode: int,
    intent_id: str,
) -> tuple[tuple[MoveStep, ...], list[str]]:
    """EXDEV: copy, fsync, verify by hash, delete the source; each step reported.

    The copy is written beside the destination under the intent's name
    (``_intents.copy_path``), so recovery removes one a crash left; a crash after the
    link leaves the source beside a verified copy, whose name recovery removes
    (all-before). The source's removal is synced; if that fails it is undone
    (``_source_not_durable``): never a success a power cut takes back."""
    from editspec.reference.text._text import sha256_hex

    fs = workspace.fs
    done: list[str] = []
    warnings = [
        f"{src.logical_relative} and {dst.logical_relative} are on different file systems: "
        "moved by copy, verify and delete, not by one atomic rename"
    ]
    temp = _intents.copy_path(dst.real, intent_id)
    published = False
    step = "copy"
    try:
        fd = fs.create_exclusive(temp, 0o600)
        try:
            fs.write(fd, data)
            fs.fchmod(fd, mode)
            done.append("copy")
            step = "fsync"
            fs.fsync(fd)
        finally:
            fs.close(fd)
        fs.link(temp, dst.real)  # no clobber: EEXIST if something appeared there
        published = True
        fs.unlink(temp)
        fs.fsync_dir(os.path.dirname(dst.real))
        done.append("fsync")
        step = "verify"
        if sha256_hex(fs.read_bytes(dst.real)) != sha256_hex(data):
            raise OSError(errno.EIO, "the copy does not read back with the source's sha256")
        done.append("verify")
        step = "delete_source"
        fs.unlink(src.real)
    except OSError as exc:
        rolled_back, durable = _remove_copy(workspace, temp, dst.real if published else None, data)
        pending = [name for name in STEPS_ACROSS if name not in done]
        code = _errors.ALREADY_EXISTS if exc.errno == errno.EEXIST else _errors.IO_ERROR
        shown = src.logical_relative
        message = (
            f"moving {shown} to {dst.logical_relative} across file systems failed at "
            f"{step}: {exc.strerror or exc}"
        )
        if not durable:
            # The copy may stay, or come back after a power cut: recovery removes it.
            code = _errors.NEEDS_RECOVERY
            message += "; its copy could not be removed durably: call recover()"
            workspace.mark_needs_recovery(f"{shown}: a copy of it is left at {dst.real}")
        raise ToolError(
            code,
            message,
            path=shown,
            errno=exc.errno,
            completed=["link: EXDEV", *done],
            pending=pending,
            rolled_back=rolled_back,
        ) from exc
    done.append("delete_source")
    try:
        fs.fsync_dir(os.path.dirname(src.real))
    except OSError as exc:
        _source_not_durable(workspace, src, dst, data, mode, intent_id, exc)
    steps = [MoveStep(step="link", outcome=f"failed: {errno.errorcode[errno.EXDEV]}")]
    steps.extend(MoveStep(step=name, outcome="done") for name in STEPS_ACROSS)
    return tuple(steps), warnings


def _remove_copy(
    workspace: WorkspaceContext, temp: str, published: str | None, data: bytes
) -> tuple[bool, bool]:
    """Undo a partial cross-device copy: whether nothing of it is left (a destination
    with other bytes is another writer's, left alone), and whether its removal is
    synced (False: the copy may come back after a power cut)."""
    from editspec.reference.text._text import sha256_hex

    fs = workspace.fs
    clean = True
    removed = False
    for path in (temp, published):
        if path is None:
            continue
        try:
            if path == published and sha256_hex(fs.read_bytes(path)) != sha256_hex(data):
                clean = False  # not our bytes: another writer's file, left alone
                continue
            fs.unlink(path)
            removed = True
        except FileNotFoundError:
            continue
        except OSError:
            return False, False
    if removed:
        try:
            fs.fsync_dir(os.path.dirname(temp))
        except OSError:
            return False, False
    return clean, True


def _source_not_durable(
    workspace: WorkspaceContext,
    src: WorkspacePath,
    dst: WorkspacePath,
    data: bytes,
    mode: int,
    intent_id: str,
    cause: OSError,
) -> NoReturn:
    """The source's removal could not be synced, so a power cut may bring it back beside
    its copy, and a second fsync would prove nothing. Undone by new, synced steps: the
    source made again from its bytes (a copy beside it, linked into place), then the
    copy at the destination removed: IO_ERROR, nothing changed. If that cannot be made
    durable either: NEEDS_RECOVERY (the intent stays; recovery removes the destination
    while the source exists), never success (MOVE-*)."""
    fs = workspace.fs
    shown = src.logical_relative
    why = cause.strerror or str(cause)
    details = {
        "errno": cause.errno,
        "completed": ["link: EXDEV", *STEPS_ACROSS],
        "pending": [],
    }
    try:
        copy = _intents.copy_path(src.real, intent_id)
        fd = fs.create_exclusive(copy, 0o600)
        try:
            fs.write(fd, data)
            fs.fchmod(fd, mode)
            fs.fsync(fd)
        finally:
            fs.close(fd)
        fs.link(copy, src.real)  # no clobber: EEXIST if another writer made it meanwhile
        fs.unlink(copy)
        fs.fsync_dir(os.path.dirname(src.real))
        fs.unlink(dst.real)
        fs.fsync_dir(os.path.dirname(dst.real))
    except OSError as exc:
        workspace.mark_needs_recovery(f"{shown}: its removal could not be made durable ({why})")
        raise ToolError(
            _errors.NEEDS_RECOVERY,
            f"{shown} was copied to {dst.logical_relative} and removed, but its removal "
            f"could not be synced ({why}) and neither could its undo ({exc.strerror or exc}); "
            "after a power loss both may exist: call recover()",
            path=shown,
            rolled_back=False,
            **details,
        ) from cause
    raise ToolError(
        _errors.IO_ERROR,
        f"moving {shown} to {dst.logical_relative} across file systems: the removal of "
        f"{shown} could not be synced ({why}); the move was undone, nothing is changed",
        path=shown,
        rolled_back=True,
        **details,
    ) from cause
