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
3. The workspace's store publishes the plan: a local one as one journaled transaction
   (``_patch_commit``: the host's validators, ``_transaction.commit``, the snapshot, the
   access records), a remote one by whole-file writes read back and restored in
   reverse order on failure (``remote/_text_store``).

The plan is the same over every file service; what a service cannot do is refused
from its declarations (``_supports``) before anything is read: without
``directories`` only Update File is possible (Add, Delete and Move fail closed with
UNSUPPORTED), and without ``binary`` a notebook is not patched as text at all.

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

from collections.abc import Sequence
from typing import Any

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import MESSAGE_ID_CHARS, check_text
from editspec.reference._errors import ToolError
from editspec.reference._results import FileChange, HunkMatch, PatchResult
from editspec.reference._store import FilesSession, PatchFile
from editspec.reference._supports import (
    refuse_text_notebook,
    snapshot_message,
    snapshot_warning,
)
from editspec.reference.patch import _patch_parse, _patch_plan
from editspec.reference.patch._patch_model import FileOp, check_patch_size
from editspec.reference.text import _text
from editspec.reference.text._diff import unified_diff


@attrs.frozen(kw_only=True)
class _Planned:
    """One file operation of the patch, fully computed in memory."""

    op: str  # "add" | "update" | "delete" | "move"
    source: Any  # the store's target
    dest: Any  # the new path of a move (None otherwise)
    display: str
    display_to: str | None
    old_bytes: bytes | None
    new_bytes: bytes | None
    mode: int | None  # permission bits of the existing file
    diff: str
    warnings: tuple[str, ...] = ()
    executable: bool | None = None  # git's mode for the result (None: the mode is kept)
    hunks: tuple[HunkMatch, ...] = ()  # where each hunk matched, and how (evidence)


def apply_patch(session: FilesSession, patch: str, *, message_id: str | None = None) -> PatchResult:
    """Apply a multi-file patch, all or nothing. Spec: PATCH-*, TXN-*, SNAP-*, REMOTE-*."""
    workspace = session.workspace
    if not isinstance(patch, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "patch must be a string")
    if message_id is not None and (not isinstance(message_id, str) or not message_id):
        raise ToolError(_errors.INVALID_ARGUMENT, "message_id must be a non-empty string")
    check_text("message_id", message_id, optional=True, max_chars=MESSAGE_ID_CHARS)
    if len(patch) <= workspace.limits.patch_bytes:
        # Text with a lone surrogate is not a patch anyone wrote: refused before parsing
        # (a longer one is TOO_LARGE from the parser, before anything scans it).
        check_text("patch", patch, empty=True, nul=True)
    parsed = _patch_parse.parse_patch(patch, workspace.limits)
    planned = plan(session, parsed.ops)
    changes = [
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
    ]
    for item in planned:  # the host's validators see every new content first
        if item.new_bytes is not None:
            workspace.hooks.run_validators(
                item.display_to or item.display, "apply_patch", item.old_bytes, item.new_bytes
            )
    published = workspace.store.publish_patch(
        session.id,
        [patch_file(item) for item in planned],
        message_id=snapshot_message(workspace.supports, message_id),
    )
    warnings = [warning for item in planned for warning in item.warnings]
    warnings += snapshot_warning(workspace.supports, message_id)
    return PatchResult(
        changes=tuple(changes),
        snapshot_created=published.snapshot_created,
        transaction_id=published.transaction_id,
        warnings=tuple(warnings),
    )


def patch_file(item: _Planned) -> PatchFile:
    """What the store publishes of one planned file."""
    return PatchFile(
        op=item.op,
        source=item.source,
        dest=item.dest,
        old_bytes=item.old_bytes,
        new_bytes=item.new_bytes,
        mode=item.mode,
        executable=item.executable,
    )


# -- the plan ------------------------------------------------------------------------


def plan(session: FilesSession, ops: Sequence[FileOp]) -> list[_Planned]:
    """Every file operation computed in memory; raises before any disk change. Spec: PATCH-*."""
    store = session.workspace.store
    supports = store.supports
    resolved: list[tuple[FileOp, Any, Any]] = []
    for op in ops:
        if not supports.directories:
            _refuse_without_directories(op)
        source = store.resolve(op.path)
        if not supports.binary:
            refuse_text_notebook(source.logical_relative)
        dest = store.resolve(op.move_to) if op.move_to is not None else None
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
    # The transaction's own limit (``Limits.transaction_bytes``) is checked when the
    # store publishes, before it touches a file.
    return [_plan_one(session, op, source, dest) for op, source, dest in resolved]


def _refuse_without_directories(op: FileOp) -> None:
    """Fail closed: without directories, only an Update is a whole-file write (REMOTE-*)."""
    if op.op == "update" and op.move_to is None:
        return
    what = "Move" if op.op == "update" else op.op.capitalize()
    raise ToolError(
        _errors.UNSUPPORTED,
        f"{what} File {op.path}: a remote workspace supports only Update File "
        "(the client cannot create through a patch, delete or rename); nothing "
        "was written",
        path=op.path,
        op=op.op if op.move_to is None else "move",
    )


def _plan_one(session: FilesSession, op: FileOp, source: Any, dest: Any) -> _Planned:
    store = session.workspace.store
    limits = session.workspace.limits
    display = source.logical_relative
    if op.op == "add":
        if store.exists(source):
            raise ToolError(
                _errors.ALREADY_EXISTS,
                f"{display} already exists; use Update File to change it",
                path=display,
            )
        content = op.content or ""
        new_bytes = store.encode_text(content, None)
        check_patch_size(limits, display, len(new_bytes))
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
        _refuse_symlink(session, source, display)
    if op.op == "delete":
        if op.hunks:
            # A unified deletion says what the file holds: git apply checks it, so do we.
            emptied, _, _ = _patch_plan.apply_file_hunks(
                op, old_bytes, display, None, decode=store.text_of, encode=store.encode_text
            )
            if emptied:
                raise ToolError(
                    _errors.NO_MATCH,
                    f"{display}: the deletion's hunks do not cover the whole file",
                    path=display,
                )
        decoded = store.text_of(old_bytes)
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
        if store.exists(dest):
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
            op,
            old_bytes,
            display,
            display_to,
            placements=placements,
            decode=store.text_of,
            encode=store.encode_text,
        )
        check_patch_size(limits, display_to or display, len(new_bytes))
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


def _plan_copy(session: FilesSession, op: FileOp, source: Any, dest: Any) -> _Planned:
    """git's copy: a new file from the source's bytes, as they are before the patch.

    The source is only read, so it needs no read in this session; the new file is an
    add (no clobber), with the source's mode unless the diff gives one.
    """
    store = session.workspace.store
    display, display_to = source.logical_relative, dest.logical_relative
    old_bytes, mode = _read_existing(session, source, display, fresh=False)
    if store.exists(dest):
        raise ToolError(
            _errors.ALREADY_EXISTS,
            f"cannot copy {display} to {display_to}: it already exists",
            path=display_to,
        )
    warnings: tuple[str, ...] = ()
    if op.hunks:
        new_bytes, _, warnings = _patch_plan.apply_file_hunks(
            op, old_bytes, display, display_to, decode=store.text_of, encode=store.encode_text
        )
    else:
        new_bytes = old_bytes
    check_patch_size(session.workspace.limits, display_to, len(new_bytes))
    decoded = store.text_of(new_bytes)
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
        executable=bool((mode or 0) & 0o100) if op.executable is None else op.executable,
    )


def _read_existing(
    session: FilesSession, path: Any, display: str, *, fresh: bool = True
) -> tuple[bytes, int | None]:
    """The bytes and mode of a file the patch changes; it must be fresh in this session
    (``fresh``; a copy's source is only read)."""
    workspace = session.workspace
    data, mode = workspace.store.read_for_patch(path, display)
    if not fresh:
        return data, mode
    # Every existing file an ApplyPatch updates, deletes or moves (WRITE-*, TRACK-*).
    workspace.access.require_fresh(
        session.id, path.canonical_key, current_sha256=_text.sha256_hex(data), display_path=display
    )
    return data, mode


def _refuse_symlink(session: FilesSession, path: Any, display: str) -> None:
    """Delete and move act on the canonical file; through a link that would surprise."""
    if session.workspace.store.is_link(path):
        raise ToolError(
            _errors.UNSUPPORTED,
            f"{display} is a symbolic link to {path.relative}; "
            "deleting or moving it through the patch would act on that file and leave "
            "the link dangling. Patch the file itself.",
            path=display,
            target=path.relative,
        )
