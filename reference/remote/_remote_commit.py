"""Publishing through a ``FileService``: write, read back, and restore in reverse on failure.

A remote file service has two calls (``_fileservice``): no rename, no fsync, no link,
no journal. The local transaction protocol cannot apply, so a remote change is honest
about what two calls can promise (DESIGN §2 profile Remote, REMOTE-*):

1. before each file is written it is read again and must still hold the text the plan
   was computed from (STALE otherwise: someone changed it since the session read it);
2. the new text is written, then read back, and the read-back must equal it (CONFLICT
   when the client holds other text, IO_ERROR when a call fails);
3. on any failure the files already written (the failing one included, since its
   state is unknown) are restored in reverse order: each is read first (a file that
   already holds its old text needs nothing; a file that holds neither the old nor the
   new text was changed by someone else and is left alone rather than clobbered), then
   written with its old text and read back (the restore is verified). A file this
   change created cannot be removed: it is reported not restored.
4. If every file of the change holds its old text again, the original error is raised;
   otherwise an error that names every file of the change and its state: ``untouched``
   (never written), ``restored`` (verified to hold its old text), ``not_restored``
   (verified to hold other text: the file found STALE, written by someone else, is one)
   or ``unknown`` (it could not be read). The code is IO_ERROR when a call of the
   service failed during the restore, CONFLICT when the files answered but some hold
   other text, and the original STALE when the only such file is the one found STALE.

Success is reported only when every file was written and read back equal, and the files
written first still hold their new text once the last is read back. Nothing here ever
touches a local file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference.remote._fileservice import FileService

UNTOUCHED = "untouched"
RESTORED = "restored"
NOT_RESTORED = "not_restored"
UNKNOWN = "unknown"
STATES: tuple[str, ...] = (UNTOUCHED, RESTORED, NOT_RESTORED, UNKNOWN)


@attrs.frozen(kw_only=True)
class RemoteChange:
    """One file of a remote change: where it is, what it held, what it gets."""

    path: str  # the absolute path the service is asked for
    shown: str  # the workspace-relative path results report
    old_text: str | None  # None: the file did not exist
    new_text: str


@attrs.frozen(kw_only=True)
class _Restore:
    state: str
    note: str
    service_failed: bool = False
    stale: bool = False  # the failing file, found holding someone else's text, never written


def read_or_none(files: FileService, path: str) -> str | None:
    """The file's text, or None when the service says it does not exist."""
    try:
        return files.read_text(path)
    except ToolError as error:
        if error.code == _errors.NOT_FOUND:
            return None
        raise


def publish(files: FileService, changes: Sequence[RemoteChange]) -> None:
    """Write every change in order with a verified read-back; all or a named remainder.

    Spec: REMOTE-*.
    """
    for index, change in enumerate(changes):
        failure, touched = _publish_one(files, change)
        if failure is not None:
            raise _rolled_back(files, changes, index, failure, failing_touched=touched)
    # A file read back earlier may have been changed by another writer while the later
    # ones were published: the change then fails like one found STALE (REMOTE-016).
    end = len(changes)  # every file was written and verified: each restore reads first
    for change in changes[:-1]:
        try:
            current: str | None = read_or_none(files, change.path)
        except ToolError as error:
            raise _rolled_back(files, changes, end, error, failing_touched=False) from error
        if current != change.new_text:
            changed = ToolError(
                _errors.CONFLICT,
                f"{change.shown} was changed in the client while this change was published",
                path=change.shown,
            )
            raise _rolled_back(files, changes, end, changed, failing_touched=False)


def _publish_one(files: FileService, change: RemoteChange) -> tuple[ToolError | None, bool]:
    """``(failure, touched)``: touched when a write of this file was attempted."""
    try:
        current = read_or_none(files, change.path)
    except ToolError as error:
        return error, False
    if current != change.old_text:
        return (
            ToolError(
                _errors.STALE,
                f"{change.shown} changed in the client since this session read it; read it again",
                path=change.shown,
            ),
            False,
        )
    try:
        files.write_text(change.path, change.new_text)
    except ToolError as error:
        return error, True
    try:
        written = read_or_none(files, change.path)
    except ToolError as error:
        return error, True
    if written != change.new_text:
        return (
            ToolError(
                _errors.CONFLICT,
                f"{change.shown}: the client holds other text than was written "
                "(read back after the write)",
                path=change.shown,
            ),
            True,
        )
    return None, True


def _restore(files: FileService, change: RemoteChange, *, verified_new: bool) -> _Restore:
    """Put ``change.old_text`` back, verified by a read-back; never clobber a third party."""
    unread = False
    try:
        current = read_or_none(files, change.path)
    except ToolError:
        current, unread = None, True
    if not unread and current == change.old_text:
        return _Restore(state=RESTORED, note="holds its previous text")
    if verified_new and not unread and current != change.new_text:
        # Someone wrote it after our verified read-back: their text is not ours to undo.
        return _Restore(
            state=NOT_RESTORED, note="was changed by someone else after it was written; left as is"
        )
    if change.old_text is None:
        if unread:
            return _Restore(state=UNKNOWN, note="could not be read", service_failed=True)
        return _Restore(
            state=NOT_RESTORED,
            note="was created by this change, and a file cannot be removed through the service",
        )
    write_error: ToolError | None = None
    try:
        files.write_text(change.path, change.old_text)
    except ToolError as error:
        write_error = error
    try:
        after = read_or_none(files, change.path)
    except ToolError as error:
        return _Restore(
            state=UNKNOWN,
            note=f"could not be read back after the restore: {error.message}",
            service_failed=True,
        )
    if after == change.old_text:
        return _Restore(state=RESTORED, note="restored and read back")
    if write_error is not None:
        return _Restore(
            state=NOT_RESTORED,
            note=f"the restore could not be written: {write_error.message}",
            service_failed=True,
        )
    return _Restore(state=NOT_RESTORED, note="holds other text after the restore")


def _rolled_back(
    files: FileService,
    changes: Sequence[RemoteChange],
    index: int,
    failure: ToolError,
    *,
    failing_touched: bool,
) -> ToolError:
    """Restore the touched files in reverse order; the error to raise after it."""
    touched = list(changes[: index + 1] if failing_touched else changes[:index])
    outcomes: dict[int, _Restore] = {}
    for position in reversed(range(len(touched))):
        outcomes[position] = _restore(files, touched[position], verified_new=position < index)
    if not failing_touched and failure.code == _errors.STALE:
        # Never written, yet not as before: "untouched" would promise its old text.
        outcomes[index] = _Restore(
            state=NOT_RESTORED,
            note="was changed by someone else before this change wrote it; left as is",
            stale=True,
        )
    states: list[dict[str, Any]] = []
    for position, change in enumerate(changes):
        outcome = outcomes.get(position)
        if outcome is None:
            states.append({"path": change.shown, "state": UNTOUCHED})
        else:
            states.append({"path": change.shown, "state": outcome.state, "note": outcome.note})
    left = [entry["path"] for entry in states if entry["state"] in (NOT_RESTORED, UNKNOWN)]
    cause = {"code": failure.code, "message": failure.message}
    if all(outcome.stale for outcome in outcomes.values() if outcome.state != RESTORED):
        details = {**failure.details, "files": states, "not_restored": left, "cause": cause}
        suffix = "; the files already written were restored" if touched else ""
        error = ToolError(failure.code, f"{failure.message}{suffix}", **details)
    else:
        service_failed = any(outcome.service_failed for outcome in outcomes.values())
        error = ToolError(
            _errors.IO_ERROR if service_failed else _errors.CONFLICT,
            f"{failure.message}; restoring the files already written did not finish: "
            + ", ".join(
                f"{entry['path']} {entry['state'].replace('_', ' ')}"
                for entry in states
                if entry["state"] in (NOT_RESTORED, UNKNOWN)
            ),
            files=states,
            not_restored=left,
            cause=cause,
        )
    error.__cause__ = failure
    return error
