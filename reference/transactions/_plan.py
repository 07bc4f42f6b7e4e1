"""What a transaction is asked to do, and step 0 of ``commit``: checked and planned.

``PlannedChange`` is the contract between the callers of ``_transaction.commit``
(ApplyPatch, rewind) and the transaction; ``check_shape`` refuses a malformed request
before any lock or disk access, and ``plan_steps`` re-verifies every change inside the
locks and turns it into journal steps. ``as_planned`` (the last check before the first
publish) and ``publish_change`` (the renames and links of one change) are the file
effects ``_transaction._publish`` runs on those steps. No state of a transaction
changes here: the journal is written, published and settled only in ``_transaction``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

import attrs

from editspec.reference import _errors
from editspec.reference._context import WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem
from editspec.reference.paths._paths import WorkspacePath
from editspec.reference.transactions import _journal
from editspec.reference.transactions._journal import (
    JournalEntry,
)
from editspec.reference.transactions._rollback import (
    Owned,
    relative_to,
    sha256_hex,
)

OPS: frozenset[str] = frozenset({"add", "update", "delete", "move"})


@attrs.frozen(kw_only=True)
class PlannedChange:
    """One file of a transaction, planned in memory (DESIGN §4 ApplyPatch)."""

    op: str  # "add" | "update" | "delete" | "move"
    target: WorkspacePath  # the file updated/deleted/moved, or the new file for add
    move_to: WorkspacePath | None = None
    old_bytes: bytes | None = None  # planned old bytes of target (None for add)
    new_bytes: bytes | None = None  # content at target (update/add) or move_to (move)
    mode: int | None = None  # permission bits of the published file (kept from the old one)
    # The executable bit git's modes carry: True sets it where the file is readable, False
    # clears it, None keeps the mode. An added file is created 0o777 or 0o666 under the
    # umask, as git does.
    executable: bool | None = None


def with_executable(mode: int, executable: bool | None) -> int:
    """``mode`` with its execute bits set where it is readable, cleared, or as it is."""
    if executable is None:
        return mode
    if executable:
        return mode | (mode & 0o444) >> 2
    return mode & ~0o111


@attrs.frozen(kw_only=True)
class Step:
    """One journal step: a journal entry with absolute paths and the bytes it needs."""

    entry: JournalEntry
    path: str
    stage: str | None
    backup: str | None
    old_bytes: bytes | None
    new_bytes: bytes | None
    mode: int | None
    executable: bool = False  # an added file with no mode: created 0o777 under the umask


def inside(root: str, path: str) -> bool:
    """Whether ``path`` is strictly below ``root``."""
    return path != root and os.path.commonpath([root, path]) == root


def check_shape(workspace: WorkspaceContext, planned: Sequence[PlannedChange]) -> None:
    """Caller errors, raised before any lock or disk access."""
    if not planned:
        raise ToolError(_errors.INVALID_ARGUMENT, "a transaction needs at least one change")
    root = workspace.root
    seen: set[str] = set()
    total = 0
    for change in planned:
        required = {
            "update": (True, True, False),
            "add": (False, True, False),
            "delete": (True, False, False),
            "move": (True, True, True),
        }.get(change.op)
        if required is None:
            raise ToolError(_errors.INVALID_ARGUMENT, f"unknown change op {change.op!r}")
        needs_old, needs_new, needs_move_to = required
        where = change.target.relative
        if (change.old_bytes is not None) != needs_old or (
            change.new_bytes is not None
        ) != needs_new:
            raise ToolError(
                _errors.INVALID_ARGUMENT, f"{change.op} of {where}: old/new bytes do not fit the op"
            )
        if (change.move_to is not None) != needs_move_to:
            raise ToolError(
                _errors.INVALID_ARGUMENT, f"{change.op} of {where}: move_to does not fit"
            )
        if change.mode is not None and not 0 <= change.mode <= 0o7777:
            raise ToolError(_errors.INVALID_ARGUMENT, f"{where}: bad mode {change.mode!r}")
        for path in (change.target, change.move_to):
            if path is None:
                continue
            if not inside(root, path.real):
                raise ToolError(
                    _errors.OUTSIDE_WORKSPACE, f"{path.requested} is outside the workspace"
                )
            if path.canonical_key in seen:
                raise ToolError(
                    _errors.INVALID_ARGUMENT, f"{path.relative} appears twice in one transaction"
                )
            seen.add(path.canonical_key)
        total += len(change.new_bytes or b"")
    if total > workspace.limits.transaction_bytes:
        raise ToolError(
            _errors.TOO_LARGE,
            f"transaction writes {total} bytes; the limit is {workspace.limits.transaction_bytes}",
            size=total,
            limit=workspace.limits.transaction_bytes,
        )


def plan_steps(
    workspace: WorkspaceContext, txn_id: str, planned: Sequence[PlannedChange]
) -> tuple[tuple[tuple[str, tuple[Step, ...]], ...], tuple[str, ...]]:
    """Step 0, inside the locks: every change re-verified and planned as journal steps.

    Returns the steps per change (one, or two for a move) and the directories to create
    (absolute, top first). Spec: TXN-*, TRACK-* (byte-for-byte re-verification).
    """
    fs, root = workspace.fs, workspace.root
    targets = {change.target.real for change in planned}
    targets |= {change.move_to.real for change in planned if change.move_to is not None}
    dirs_to_create: list[str] = []
    changes: list[tuple[str, tuple[Step, ...]]] = []
    for change in planned:
        steps: list[Step] = []
        if change.op != "add":
            mode = _verify_existing(fs, change.target, change.old_bytes)
            kind = {"update": _journal.UPDATE, "delete": _journal.DELETE}.get(
                change.op, _journal.MOVE_FROM
            )
            steps.append(
                _step(
                    root,
                    txn_id,
                    kind,
                    change.target.real,
                    old_bytes=change.old_bytes,
                    new_bytes=change.new_bytes if change.op == "update" else None,
                    mode=with_executable(
                        change.mode if change.mode is not None else mode, change.executable
                    ),
                    dirs=(),
                )
            )
        if change.op in ("add", "move"):
            destination = change.move_to if change.move_to is not None else change.target
            if fs.lexists(destination.real):
                raise ToolError(
                    _errors.ALREADY_EXISTS,
                    f"{destination.relative} already exists",
                    path=destination.relative,
                )
            dirs = _missing_dirs(fs, root, os.path.dirname(destination.real), dirs_to_create)
            if targets.intersection(dirs):
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    f"{destination.relative} needs a directory where this transaction puts a file",
                )
            dirs_to_create.extend(dirs)
            # A moved file keeps its mode; an added one gets the umask's default.
            new_mode = (
                None if change.mode is None else with_executable(change.mode, change.executable)
            )
            if new_mode is None and steps:
                new_mode = steps[0].mode
            steps.append(
                _step(
                    root,
                    txn_id,
                    _journal.ADD if change.op == "add" else _journal.MOVE_TO,
                    destination.real,
                    old_bytes=None,
                    new_bytes=change.new_bytes,
                    mode=new_mode,
                    dirs=tuple(dirs),
                    executable=bool(change.executable),
                )
            )
        changes.append((change.op, tuple(steps)))
    return tuple(changes), tuple(dirs_to_create)


def _step(
    root: str,
    txn_id: str,
    kind: str,
    path: str,
    *,
    old_bytes: bytes | None,
    new_bytes: bytes | None,
    mode: int | None,
    dirs: tuple[str, ...],
    executable: bool = False,
) -> Step:
    directory, name = os.path.split(path)
    stage = backup = None
    if kind in _journal.PUBLISHES_CONTENT:
        stage = os.path.join(directory, _journal.side_file_name(name, txn_id, "stage"))
    if kind in _journal.EXISTED_BEFORE:
        backup = os.path.join(directory, _journal.side_file_name(name, txn_id, "backup"))
    entry = JournalEntry(
        kind=kind,
        path=relative_to(root, path),
        existed=kind in _journal.EXISTED_BEFORE,
        old_sha256=None if old_bytes is None else sha256_hex(old_bytes),
        new_sha256=None if new_bytes is None else sha256_hex(new_bytes),
        stage=None if stage is None else relative_to(root, stage),
        backup=None if backup is None else relative_to(root, backup),
        dirs_created=tuple(relative_to(root, directory) for directory in dirs),
    )
    return Step(
        entry=entry,
        path=path,
        stage=stage,
        backup=backup,
        old_bytes=old_bytes,
        new_bytes=new_bytes,
        mode=mode,
        executable=executable,
    )


def _verify_existing(fs: FileSystem, target: WorkspacePath, old_bytes: bytes | None) -> int:
    """Byte-for-byte re-verification inside the lock; returns the file's mode. Spec: TRACK-*."""
    where = target.relative
    try:
        info = fs.lstat(target.real)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(_errors.IS_A_DIRECTORY, f"{where} is a directory", path=where)
        if not stat.S_ISREG(info.st_mode):
            # The resolver saw a regular file; a link or device here was swapped in since.
            raise ToolError(_errors.STALE, f"{where} is no longer a regular file", path=where)
        current = (
            fs.read_bytes(target.real)
            if old_bytes is None
            else fs.read_bytes_unless(target.real, old_bytes)
        )
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(_errors.NOT_FOUND, f"{where} does not exist", path=where) from None
    except OSError as exc:
        raise _errors.from_oserror(exc, where, action="read") from exc
    if current != old_bytes:
        raise ToolError(
            _errors.STALE,
            f"{where} changed on disk since the change was planned",
            path=where,
            expected_sha256=sha256_hex(old_bytes or b""),
            current_sha256=sha256_hex(current),
        )
    return stat.S_IMODE(info.st_mode)


def _missing_dirs(fs: FileSystem, root: str, directory: str, planned: Sequence[str]) -> list[str]:
    """Directories to create for ``directory``, top first, not already planned."""
    missing: list[str] = []
    current = directory
    while current != root and current not in planned:
        try:
            info = fs.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            missing.append(current)
            current = os.path.dirname(current)
            continue
        except OSError as exc:
            raise _errors.from_oserror(exc, relative_to(root, current), action="inspect") from exc
        if not stat.S_ISDIR(info.st_mode):
            where = relative_to(root, current)
            raise ToolError(
                _errors.ALREADY_EXISTS, f"{where} exists and is not a directory", path=where
            )
        break
    return list(reversed(missing))


# -- steps 3-4: the last check and the publish of one change (``_transaction._publish``) --


def as_planned(fs: FileSystem, step: Step) -> bool:
    """The target's name still links the backup's inode, and that holds the planned bytes."""
    assert step.backup is not None
    try:
        target, backup = fs.lstat(step.path), fs.lstat(step.backup)
    except FileNotFoundError:
        return False
    if (target.st_dev, target.st_ino) != (backup.st_dev, backup.st_ino):
        return False
    return fs.read_bytes(step.backup) == step.old_bytes


def publish_change(fs: FileSystem, op: str, steps: Sequence[Step], owned: Owned) -> None:
    if op == "update":
        (step,) = steps
        assert step.stage is not None
        # The backup link keeps the old bytes; rename never touches it.
        fs.rename(step.stage, step.path)
        owned.stages.discard(step.stage)
    elif op == "add":
        (step,) = steps
        assert step.stage is not None
        fs.link(step.stage, step.path)  # EEXIST if something appeared there: no clobber
        owned.published.add(step.path)
        fs.unlink(step.stage)
        owned.stages.discard(step.stage)
    elif op == "delete":
        (step,) = steps
        fs.unlink(step.path)
    else:  # move
        source, destination = steps
        assert destination.stage is not None
        fs.link(destination.stage, destination.path)
        owned.published.add(destination.path)
        fs.unlink(source.path)
        fs.unlink(destination.stage)
        owned.stages.discard(destination.stage)
