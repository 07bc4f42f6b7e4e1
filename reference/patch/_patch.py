"""ApplyPatch: parse, plan in memory, commit as one journaled transaction (DESIGN §4).

The flow, and where each failure is raised:

1. ``_patch_parse.parse_patch``: PATCH_SYNTAX, TOO_LARGE (patch text and count limits).
2. The plan, in memory, with no disk change: every path is resolved and confined
   (OUTSIDE_WORKSPACE, INVALID_ARGUMENT), a path named twice is INVALID_ARGUMENT, Add on
   an existing path is ALREADY_EXISTS, Delete/Update of a missing file NOT_FOUND (a
   directory: IS_A_DIRECTORY), every existing file the patch updates, deletes or moves
   must have been read in full by this session at its current hash (NOT_READ, STALE),
   notebooks are UNSUPPORTED, binary files BINARY, and files or the whole transaction
   over their limit TOO_LARGE. Hunks are applied to the decoded text and the result is
   encoded like the original (encoding, BOM; the newline style and the final newline
   are the business of ``_patch_plan``).
3. ``_transaction.commit``: locks every canonical key in sorted order, re-verifies the
   planned old bytes, calls ``on_prepared`` (here: every snapshot is created, and any
   failure aborts the patch before anything is published), publishes under the journal
   and calls ``on_committed`` (here: the snapshots are confirmed and the access records
   updated: written files count as read at their new hash, deleted and moved-away
   files are forgotten).

Success is reported only when ``commit`` returned, that is when every file is
committed; any failure before that leaves every file as it was.

Decisions:

* Notebooks: an Update with hunks of a ``.ipynb`` file (source or destination) is
  UNSUPPORTED, pointing to notebook editing; Add, Delete and a pure move (no hunks) of
  one are plain file operations.
* A pure move carries the bytes unchanged, so it also moves binary files.
* Paths are acted on through their canonical (real) file: an Update through a symlink
  inside the root changes the file it points to and the link stays a link. A Delete or
  a move of a path that *is* a symlink is UNSUPPORTED: it would act on the target and
  leave the link dangling, which is not what removing or renaming a name means.
* A move onto its own path names that path twice: INVALID_ARGUMENT.
* git's copy is an add of the new file from the source's bytes before the patch (git's
  patches do not depend on their order); the source is only read and needs no read in
  the session. git's modes set or clear the executable bit (a mode change alone is an
  update with the same bytes). A unified deletion's hunks must empty the file
  (NO_MATCH). A UTF-8 BOM is the first line's when a unified diff names it (git's
  lines are bytes), and is kept apart otherwise.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_text
from editspec.reference._context import SessionContext, WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._results import FileChange, HunkMatch, PatchResult
from editspec.reference.patch import _patch_parse, _patch_plan
from editspec.reference.patch._patch_model import FileOp
from editspec.reference.snapshots._records import SnapshotEntry
from editspec.reference.text import _text
from editspec.reference.text._diff import unified_diff
from editspec.reference.transactions import _transaction
from editspec.reference.transactions._plan import PlannedChange

if TYPE_CHECKING:
    from editspec.reference.paths._paths import WorkspacePath


@attrs.frozen(kw_only=True)
class _Planned:
    """One file operation of the patch, fully computed in memory."""

    op: str  # "add" | "update" | "delete" | "move"
    source: WorkspacePath
    dest: WorkspacePath | None  # the new path of a move
    display: str
    display_to: str | None
    old_bytes: bytes | None
    new_bytes: bytes | None
    mode: int | None  # permission bits of the existing file
    diff: str
    warnings: tuple[str, ...] = ()
    executable: bool | None = None  # git's mode for the result (None: the mode is kept)
    hunks: tuple[HunkMatch, ...] = ()  # where each hunk matched, and how (evidence)


def apply_patch(
    session: SessionContext, patch: str, *, message_id: str | None = None
) -> PatchResult:
    """Apply a multi-file patch, all or nothing. Spec: PATCH-*, TXN-*, SNAP-*."""
    workspace = session.workspace
    if not isinstance(patch, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "patch must be a string")
    if message_id is not None and (not isinstance(message_id, str) or not message_id):
        raise ToolError(_errors.INVALID_ARGUMENT, "message_id must be a non-empty string")
    check_text("message_id", message_id, optional=True, max_chars=MESSAGE_ID_CHARS)
    if len(patch) <= session.workspace.limits.patch_bytes:
        # Text with a lone surrogate is not a patch anyone wrote: refused before parsing
        # (a longer one is TOO_LARGE from the parser, before anything scans it).
        check_text("patch", patch, empty=True, nul=True)
    parsed = _patch_parse.parse_patch(patch, workspace.limits)
    planned = plan(session, parsed.ops)
    for item in planned:  # the host's validators see every new content first
        if item.new_bytes is not None:
            workspace.hooks.run_validators(
                item.display_to or item.display, "apply_patch", item.old_bytes, item.new_bytes
            )
    changes = [_planned_change(item) for item in planned]
    snapshot_created = False
    warnings: list[str] = [warning for item in planned for warning in item.warnings]

    def on_prepared(txn_id: str) -> None:
        nonlocal snapshot_created
        if message_id is None:
            return
        # Any failure here aborts the patch before anything is published (SNAP-*).
        workspace.snapshots.record(
            session.id, message_id, _snapshot_entries(planned), transaction_id=txn_id
        )
        snapshot_created = True

    def on_committed(txn_id: str) -> None:
        _update_access(session, planned)
        if snapshot_created:
            # Called while the journal says ``committed``: if this fails, the transaction
            # keeps the journal and recovery confirms the snapshot (RECOV-*).
            workspace.snapshots.confirm_transaction(txn_id)

    txn_id = _transaction.commit(
        workspace, changes, on_prepared=on_prepared, on_committed=on_committed
    )
    return PatchResult(
        changes=tuple(
            FileChange(
                path=item.display,
                op=item.op,
                move_to=item.display_to,
                old_sha256=None if item.old_bytes is None else _text.sha256_hex(item.old_bytes),
                new_sha256=None if item.new_bytes is None else _text.sha256_hex(item.new_bytes),
                diff=item.diff,
                hunks=item.hunks,
            )
            for item in planned
        ),
        snapshot_created=snapshot_created,
        transaction_id=txn_id,
        warnings=tuple(warnings),
    )


# -- the plan ------------------------------------------------------------------------


def plan(session: SessionContext, ops: Sequence[FileOp]) -> list[_Planned]:
    """Every file operation computed in memory; raises before any disk change. Spec: PATCH-*."""
    workspace = session.workspace
    resolved: list[tuple[FileOp, WorkspacePath, WorkspacePath | None]] = []
    for op in ops:
        source = workspace.resolve(op.path)
        dest = workspace.resolve(op.move_to) if op.move_to is not None else None
        resolved.append((op, source, dest))
    seen: dict[str, str] = {}
    for op, source, dest in resolved:
        for path, named in ((source, op.path), (dest, op.move_to)):
            # A copy only reads its source (git names a file it also changes as one).
            if path is None or (op.op == "copy" and path is source):
                continue
            # Aliases (a symlink inside the root) share one canonical key (PATH-*).
            key = path.canonical_key
            if key in seen:
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    f"the patch names {named} twice (also as {seen[key]}); one operation per file",
                    path=named,
                )
            seen[key] = str(named)
    # The transaction's own limit (``Limits.transaction_bytes``) is checked by ``commit``
    # before it takes a lock or touches the disk.
    return [_plan_one(session, op, source, dest) for op, source, dest in resolved]


def _plan_one(
    session: SessionContext, op: FileOp, source: WorkspacePath, dest: WorkspacePath | None
) -> _Planned:
    workspace = session.workspace
    display = source.logical_relative
    if op.op == "add":
        if _lstat(workspace, source.real) is not None:
            raise ToolError(
                _errors.ALREADY_EXISTS,
                f"{display} already exists; use Update File to change it",
                path=display,
            )
        content = op.content or ""
        new_bytes = _text.encode(content)
        _check_size(workspace, display, len(new_bytes))
        return _Planned(
            op="add",
            source=source,
            dest=None,
            display=display,
            display_to=None,
            old_bytes=None,
            new_bytes=new_bytes,
            mode=None,
            diff=unified_diff(display, "", content, old_exists=False),
            executable=op.executable,
        )
    if op.op == "copy":
        assert dest is not None
        return _plan_copy(session, op, source, dest)
    old_bytes, mode = _read_existing(session, source, display)
    if op.op == "delete" or dest is not None:
        _refuse_symlink(workspace, source, display)
    if op.op == "delete":
        if op.hunks:
            # A unified deletion says what the file holds: git apply checks it, so do we.
            emptied, _, _ = _patch_plan.apply_file_hunks(op, old_bytes, display, None)
            if emptied:
                raise ToolError(
                    _errors.NO_MATCH,
                    f"{display}: the deletion's hunks do not cover the whole file",
                    path=display,
                )
        decoded = _text.decode(old_bytes)
        diff = "" if decoded is None else unified_diff(display, decoded.text, "", new_exists=False)
        return _Planned(
            op="delete",
            source=source,
            dest=None,
            display=display,
            display_to=None,
            old_bytes=old_bytes,
            new_bytes=None,
            mode=mode,
            diff=diff,
        )
    if op.op != "update":  # pragma: no cover - the parser produces only the three ops
        raise ToolError(_errors.PATCH_SYNTAX, f"unknown file operation {op.op!r}")
    display_to = None
    if dest is not None:
        display_to = dest.logical_relative
        if _lstat(workspace, dest.real) is not None:
            raise ToolError(
                _errors.ALREADY_EXISTS,
                f"cannot move {display} to {display_to}: it already exists",
                path=display_to,
            )
    warnings: tuple[str, ...] = ()
    placements: list[tuple[int, int, str]] = []
    if not op.hunks:
        # A pure move (or git's mode change alone): the bytes travel unchanged.
        if dest is None and op.executable is None:
            raise ToolError(
                _errors.PATCH_SYNTAX, f"Update File {display} has no change", path=display
            )
        new_bytes, diff = old_bytes, ""
    else:
        new_bytes, diff, warnings = _patch_plan.apply_file_hunks(
            op, old_bytes, display, display_to, placements=placements
        )
        _check_size(workspace, display_to or display, len(new_bytes))
    return _Planned(
        op="move" if dest is not None else "update",
        source=source,
        dest=dest,
        display=display,
        display_to=display_to,
        old_bytes=old_bytes,
        new_bytes=new_bytes,
        mode=mode,
        diff=diff,
        warnings=warnings,
        executable=op.executable,
        hunks=tuple(
            HunkMatch(hunk=number, line=line, matched_by=strategy)
            for number, line, strategy in placements
        ),
    )


def _plan_copy(
    session: SessionContext, op: FileOp, source: WorkspacePath, dest: WorkspacePath
) -> _Planned:
    """git's copy: a new file from the source's bytes, as they are before the patch.

    The source is only read, so it needs no read in this session; the new file is an
    add (no clobber), with the source's mode unless the diff gives one.
    """
    workspace = session.workspace
    display, display_to = source.logical_relative, dest.logical_relative
    old_bytes, mode = _read_existing(session, source, display, fresh=False)
    if _lstat(workspace, dest.real) is not None:
        raise ToolError(
            _errors.ALREADY_EXISTS,
            f"cannot copy {display} to {display_to}: it already exists",
            path=display_to,
        )
    warnings: tuple[str, ...] = ()
    if op.hunks:
        new_bytes, _, warnings = _patch_plan.apply_file_hunks(op, old_bytes, display, display_to)
    else:
        new_bytes = old_bytes
    _check_size(workspace, display_to, len(new_bytes))
    decoded = _text.decode(new_bytes)
    diff = "" if decoded is None else unified_diff(display_to, "", decoded.text, old_exists=False)
    return _Planned(
        op="add",
        source=dest,
        dest=None,
        display=display_to,
        display_to=None,
        old_bytes=None,
        new_bytes=new_bytes,
        mode=None,
        diff=diff,
        warnings=warnings,
        executable=bool(mode & 0o100) if op.executable is None else op.executable,
    )


def _lstat(workspace: WorkspaceContext, real: str) -> os.stat_result | None:
    try:
        return workspace.fs.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _errors.from_oserror(exc, real, action="inspect") from exc


def _read_existing(
    session: SessionContext, path: WorkspacePath, display: str, *, fresh: bool = True
) -> tuple[bytes, int]:
    """The bytes and mode of a file the patch changes; it must be fresh in this session
    (``fresh``; a copy's source is only read)."""
    workspace = session.workspace
    status = _lstat(workspace, path.real)
    if status is None:
        raise ToolError(_errors.NOT_FOUND, f"{display} does not exist", path=display)
    if stat.S_ISDIR(status.st_mode):
        raise ToolError(_errors.IS_A_DIRECTORY, f"{display} is a directory", path=display)
    if not stat.S_ISREG(status.st_mode):
        raise ToolError(_errors.INVALID_ARGUMENT, f"{display} is not a regular file", path=display)
    _check_size(workspace, display, status.st_size)
    try:
        data = workspace.fs.read_bytes(path.real)
    except OSError as exc:
        raise _errors.from_oserror(exc, display, action="read") from exc
    _check_size(workspace, display, len(data))
    if not fresh:
        return data, stat.S_IMODE(status.st_mode)
    # Every existing file an ApplyPatch updates, deletes or moves (WRITE-*, TRACK-*).
    workspace.access.require_fresh(
        session.id, path.canonical_key, current_sha256=_text.sha256_hex(data), display_path=display
    )
    return data, stat.S_IMODE(status.st_mode)


def _refuse_symlink(workspace: WorkspaceContext, path: WorkspacePath, display: str) -> None:
    """Delete and move act on the canonical file; through a link that would surprise."""
    if not path.crossed_link:
        return
    parent = workspace.resolve(os.path.dirname(path.logical))
    status = _lstat(workspace, os.path.join(parent.real, os.path.basename(path.logical)))
    if status is not None and stat.S_ISLNK(status.st_mode):
        raise ToolError(
            _errors.UNSUPPORTED,
            f"{display} is a symbolic link to {path.relative}; "
            "deleting or moving it through the patch would act on that file and leave "
            "the link dangling. Patch the file itself.",
            path=display,
            target=path.relative,
        )


def _check_size(workspace: WorkspaceContext, display: str, size: int) -> None:
    limit = workspace.limits.edit_file_bytes
    if size > limit:
        raise ToolError(
            _errors.TOO_LARGE,
            f"{display} is {size} bytes; files over {limit} bytes are not patched",
            path=display,
            size=size,
            limit=limit,
        )


# -- commit inputs and outcomes ---------------------------------------------------


def _planned_change(item: _Planned) -> PlannedChange:
    return PlannedChange(
        op=item.op,
        target=item.source,
        move_to=item.dest,
        old_bytes=item.old_bytes,
        new_bytes=item.new_bytes,
        mode=None,  # the transaction keeps the mode it finds under the lock
        executable=item.executable,
    )


def _snapshot_entries(planned: Sequence[_Planned]) -> list[SnapshotEntry]:
    """Per file: before-bytes, existence, mode, after-hash; a move is a delete and an add."""
    entries: list[SnapshotEntry] = []
    for item in planned:
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


def _update_access(session: SessionContext, planned: Sequence[_Planned]) -> None:
    """Written files count as read at their new hash; removed names are forgotten. TRACK-*."""
    workspace = session.workspace
    for item in planned:
        written = item.dest if item.dest is not None else item.source
        if item.dest is not None or item.op == "delete":
            workspace.access.forget(session.id, item.source.canonical_key)
        if item.new_bytes is None:
            continue
        size, mtime_ns = len(item.new_bytes), 0
        try:
            status = workspace.fs.stat(written.real)
            size, mtime_ns = status.st_size, status.st_mtime_ns
        except OSError:
            pass  # the hash is authoritative; size and mtime are diagnostics only
        workspace.access.record_write(
            session.id,
            written.canonical_key,
            sha256=_text.sha256_hex(item.new_bytes),
            size=size,
            mtime_ns=mtime_ns,
        )
