"""Intents: the durable record of a Delete or Move whose commit point is one rename.

Rules
-----
* A tree Delete and a Move publish with a single ``rename`` (into the quarantine, or to
  the new path; a file's move: a ``link`` then the source's ``unlink``): that rename
  (the unlink) is the commit point, so the disk is all-before or
  all-after through a crash with no journal of files. What a crash can still lose is
  the bookkeeping around it: the snapshot that makes the change rewindable is
  recorded *pending* before the rename and confirmed after it. Every state change of
  that bookkeeping happens in this file.
* Before the rename an intent is written (temp, fsync, rename, fsync the directory):
  ``{"id", "op", "source", "dest"}``, paths relative to the root (``dest`` of a delete
  is ``QUARANTINE``: the intent's own directory beside it). It is removed once the
  snapshot is confirmed or discarded.

A third kind, ``restore`` (``r…``), carries the directories and symlinks a rewind makes
or removes after its transaction's commit point (``_extras``). Written before the
journal, it is ``journaled``: the journal decides (``committed``: they are due; any other
state, or none: nothing was made, the intent goes). Rewritten as due once the commit
hook ran (or from the start, for a rewind with no file and so no journal), it is made
by whichever settle finds it; ``recover`` settles before and after the journals, so a
due intent is made once the journal's backups have left the directories.

Theory of operation (``settle``, called by ``recover`` under the exclusive guard)
-------------------------------------------------------------------------------
For each intent: if the rename happened (a delete: its quarantine entry exists, whatever
is at ``source`` now; a move: ``source`` is gone and ``dest`` exists), the pending
snapshot is confirmed; otherwise it is discarded. A file move publishes by
link then unlink (``tools._no_clobber``): cut off between the two, ``source`` and
``dest`` are one file under two names, and the ``dest`` name is removed first, so it
is discarded too (all-before). A file moved across file systems (EXDEV) is copied
under the intent's name beside the destination (``copy_path``) and linked into place:
such a copy is removed, and a destination holding exactly the source's bytes beside a
source still there is that copy linked, so its name goes too (all-before). Then the
intent is removed.
Both are idempotent, so a crash during recovery is repaired by the next one.

Layout: ``<state_dir>/quarantine/<root_hash>/`` holds the intents
(``<id>.intent.json``) and the quarantined trees (``<id>/``); ids are ``q`` (delete)
or ``m`` (move) followed by 32 hex digits.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._fs import makedirs
from editspec.reference.transactions import _extras, _journal
from editspec.reference.transactions._extras import Extra

if TYPE_CHECKING:
    from editspec.reference._context import WorkspaceContext

INTENT_ID = re.compile(r"[qmr][0-9a-f]{32}")
_INTENT_NAME = re.compile(r"([qmr][0-9a-f]{32})\.intent\.json")
_TEMP_NAME = re.compile(r"\.[qmr][0-9a-f]{32}\.intent\.tmp")
QUARANTINE = "<quarantine>"
_COPY_NAME_BUDGET = 200  # bytes of a name kept in its copy's name (NAME_MAX is 255)


def new_id(op: str) -> str:
    """A fresh intent id: ``q…`` for a delete, ``m…`` for a move, ``r…`` for a restore.

    The first 12 of its 32 hex digits are the time in milliseconds (so a quarantined
    tree's name says when it was deleted, and ids sort by time), the rest random."""
    stamp = f"{time.time_ns() // 1_000_000:012x}"[-12:]
    return {"delete": "q", "restore": "r"}.get(op, "m") + stamp + secrets.token_hex(10)


def id_time(intent_id: str) -> float:
    """The time (seconds since the epoch) an intent id was made at, by ``new_id``."""
    return int(intent_id[1:13], 16) / 1000.0


def quarantine_dir(workspace: WorkspaceContext) -> str:
    """Where intents and quarantined trees of this workspace live (absolute)."""
    return os.path.join(workspace.state_dir, "quarantine", workspace.root_hash)


def write(
    workspace: WorkspaceContext,
    intent_id: str,
    op: str,
    source: str,
    dest: str,
    *,
    dirs_created: tuple[str, ...] = (),
) -> None:
    """Durably record an intent before its rename (temp, fsync, rename, fsync dir).

    ``dirs_created``: the destination's parent directories the operation is about to
    create (root-relative, top first), removed again by recovery if the rename never
    happened."""
    _write_body(
        workspace,
        intent_id,
        {"id": intent_id, "op": op, "source": source, "dest": dest, "dirs": list(dirs_created)},
    )


def write_restore(
    workspace: WorkspaceContext,
    intent_id: str,
    transaction_id: str,
    extras: Sequence[Extra],
    *,
    journaled: bool,
) -> None:
    """Durably record the directories and symlinks a rewind makes or removes after the
    commit point of ``transaction_id`` (``_extras``); ``journaled``: whether that is a
    journal's commit, or (no file to restore) the extras alone."""
    _write_body(
        workspace,
        intent_id,
        {
            "id": intent_id,
            "op": "restore",
            "txn": transaction_id,
            "journaled": journaled,
            "extras": _extras.encode(extras),
        },
    )


def _write_body(workspace: WorkspaceContext, intent_id: str, fields: dict[str, object]) -> None:
    fs = workspace.fs
    directory = quarantine_dir(workspace)
    ensure_dir(workspace, directory)
    body = json.dumps(fields, sort_keys=True).encode("utf-8", "surrogateescape")
    temp = os.path.join(directory, f".{intent_id}.intent.tmp")
    fd = fs.create_exclusive(temp, 0o600)
    try:
        fs.write(fd, body)
        fs.fsync(fd)
    finally:
        fs.close(fd)
    fs.rename(temp, os.path.join(directory, f"{intent_id}.intent.json"))
    fs.fsync_dir(directory)


def make_durable(workspace: WorkspaceContext, source: str, dest: str, *, shown: str) -> None:
    """After the commit rename ``source`` -> ``dest`` (absolute): sync both directories.

    If that fails, the rename may not survive a power cut, and a second fsync would
    prove nothing (the kernel may have dropped what it could not write). The rename is
    then undone by a new one, and that is synced: IO_ERROR, the workspace as before (the
    caller abandons the intent). If the undo cannot be made durable either: NEEDS_RECOVERY
    (the intent stays, so recovery confirms or discards by what the disk holds), never
    success (DEL-*, MOVE-*)."""
    fs = workspace.fs
    directories = sorted({os.path.dirname(source), os.path.dirname(dest)})
    try:
        for directory in directories:
            fs.fsync_dir(directory)
        return
    except OSError as exc:
        cause = exc
    why = cause.strerror or str(cause)
    try:
        if fs.lexists(source):
            raise OSError(errno.EEXIST, "its old name is taken again", source)
        fs.rename(dest, source)
        for directory in directories:
            fs.fsync_dir(directory)
    except OSError as exc:
        workspace.mark_needs_recovery(f"{shown}: the rename could not be made durable ({why})")
        raise ToolError(
            _errors.NEEDS_RECOVERY,
            f"{shown}: the rename could not be synced ({why}) and neither could its undo "
            f"({exc.strerror or exc}); after a power loss either may stand: call recover()",
            path=shown,
            errno=cause.errno,
        ) from cause
    raise ToolError(
        _errors.IO_ERROR,
        f"{shown}: the rename could not be synced ({why}); it was undone, nothing is changed",
        path=shown,
        errno=cause.errno,
    ) from cause


def confirm(workspace: WorkspaceContext, intent_id: str, *, snapshot: bool) -> tuple[str, ...]:
    """After the rename: confirm the snapshot, then forget the intent.

    The change stands whatever happens here, so a failure is a warning, never an error:
    the intent stays and the next recovery confirms the snapshot (DEL-*, MOVE-*)."""
    if snapshot:
        try:
            workspace.snapshots.confirm_transaction(intent_id)
        except Exception as exc:
            return (f"the change is made; its snapshot is confirmed by the next recovery ({exc})",)
    remove(workspace, intent_id)
    return ()


def copy_path(path: str, intent_id: str) -> str:
    """Where a Move across file systems writes a copy of ``path`` (absolute) before it
    links the copy into place: beside it, named by the intent, so recovery finds and
    removes a copy a crash left behind."""
    directory, name = os.path.split(path)
    kept = os.fsdecode(os.fsencode(name)[:_COPY_NAME_BUDGET])
    return os.path.join(directory, f".{kept}.{intent_id}.copy")


def ensure_dir(workspace: WorkspaceContext, directory: str) -> None:
    """``makedirs``, each new directory made durable in its parent (a power cut must not
    lose the directory an intent or a quarantined tree lives in)."""
    for created in makedirs(workspace.fs, directory):
        workspace.fs.fsync_dir(os.path.dirname(created))


def remove(workspace: WorkspaceContext, intent_id: str) -> None:
    """Forget a settled intent (a failure is left to the next recovery)."""
    directory = quarantine_dir(workspace)
    try:
        workspace.fs.unlink(os.path.join(directory, f"{intent_id}.intent.json"))
        workspace.fs.fsync_dir(directory)
    except OSError:
        pass


def settle(workspace: WorkspaceContext) -> list[str]:
    """Confirm or discard the snapshot of every intent left by a crash; return their ids."""
    fs = workspace.fs
    directory = quarantine_dir(workspace)
    try:
        names = sorted(fs.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    settled: list[str] = []
    for name in names:
        if _TEMP_NAME.fullmatch(name):
            fs.unlink(os.path.join(directory, name))  # torn before its rename: never used
            continue
        match = _INTENT_NAME.fullmatch(name)
        if match is None:
            continue
        intent_id = match.group(1)
        try:
            body = json.loads(fs.read_bytes(os.path.join(directory, name)))
            if body.get("op") == "restore":
                transaction_id, journaled = str(body["txn"]), body["journaled"] is True
                extras = _extras.decode(body["extras"])
            else:
                source, dest = str(body["source"]), str(body["dest"])
                created = [str(name) for name in body.get("dirs", [])]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            remove(workspace, intent_id)  # unreadable: its snapshot stays pending, unused
            continue
        if body.get("op") == "restore":
            # A failure here keeps the intent: the next recovery makes the extras.
            if _settle_restore(workspace, intent_id, transaction_id, extras, journaled=journaled):
                remove(workspace, intent_id)
                settled.append(intent_id)
            continue
        store = workspace.snapshots
        if str(body.get("op")) == "move":
            _remove_copies(workspace, intent_id, source, dest)
            _unlink_second_name(workspace, source, dest)
        if _renamed(workspace, intent_id, source, dest):
            store.confirm_transaction(intent_id)
        else:
            store.discard_transaction(intent_id)
            _remove_created(workspace, created)
        remove(workspace, intent_id)
        settled.append(intent_id)
    return settled


def _settle_restore(
    workspace: WorkspaceContext,
    intent_id: str,
    transaction_id: str,
    extras: list[Extra],
    *,
    journaled: bool,
) -> bool:
    """Settle a rewind's extras; True when the intent is done with.

    Not ``journaled`` (due): make them and confirm the marker. ``journaled``: the
    transaction's journal decides -- ``committed`` makes them due (the intent is
    rewritten so, and made by the pass after the journal's recovery, once its backups
    are gone from the directories), any other state or none means none was made."""
    if journaled:
        if not _journal.TXN_ID.fullmatch(transaction_id):
            return True  # not a journal this engine writes: nothing to settle
        try:
            record = _journal.read(
                workspace.fs, workspace.journal_dir, transaction_id, root=workspace.root
            )
        except (FileNotFoundError, NotADirectoryError):
            return True  # the journal was never written: nothing was made
        if record.state != _journal.COMMITTED:
            return True  # its recovery rolls the files back; the extras were never made
        write_restore(workspace, intent_id, transaction_id, extras, journaled=False)
        return False
    _extras.apply(workspace.fs, workspace.root, extras)
    workspace.snapshots.confirm_transaction(transaction_id)
    return True


def _inside(workspace: WorkspaceContext, relative: str) -> str | None:
    """The absolute path of a root-relative name an intent holds; None if it is not one."""
    path = os.path.normpath(os.path.join(workspace.root, relative))
    if os.path.isabs(relative) or not path.startswith(workspace.root + os.sep):
        return None
    return path


def _remove_copies(workspace: WorkspaceContext, intent_id: str, source: str, dest: str) -> None:
    """The copies a Move across file systems writes (``copy_path``) before linking them
    into place, at the destination or (undoing) at the source: a crash can leave one."""
    fs = workspace.fs
    for relative in (source, dest):
        path = _inside(workspace, relative)
        if path is None:
            continue
        copy = copy_path(path, intent_id)
        try:
            if not stat.S_ISREG(fs.lstat(copy).st_mode):
                continue
            fs.unlink(copy)
        except (FileNotFoundError, NotADirectoryError):
            continue
        fs.fsync_dir(os.path.dirname(copy))


def _unlink_second_name(workspace: WorkspaceContext, source: str, dest: str) -> None:
    """A move cut off between its link and its unlink left one file with both names
    (or, across file systems, the source beside its verified copy): the destination
    name goes (all-before). Nothing else is touched: a destination with other bytes
    stays."""
    fs = workspace.fs
    source_path, dest_path = _inside(workspace, source), _inside(workspace, dest)
    if source_path is None or dest_path is None:
        return
    try:
        first, second = fs.lstat(source_path), fs.lstat(dest_path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not (stat.S_ISREG(first.st_mode) and stat.S_ISREG(second.st_mode)):
        return
    if not os.path.samestat(first, second):
        if first.st_size != second.st_size:
            return
        if fs.read_bytes(source_path) != fs.read_bytes(dest_path):
            return
    fs.unlink(dest_path)
    fs.fsync_dir(os.path.dirname(dest_path))


def _remove_created(workspace: WorkspaceContext, created: list[str]) -> None:
    """The directories an interrupted move made for its destination, deepest first."""
    for relative in reversed(created):
        path = _inside(workspace, relative)
        if path is None:
            continue
        try:
            workspace.fs.rmdir(path)  # only an empty one: anything put there since stays
        except OSError:
            continue
        workspace.fs.fsync_dir(os.path.dirname(path))


def _renamed(workspace: WorkspaceContext, intent_id: str, source: str, dest: str) -> bool:
    fs = workspace.fs
    source_path = _inside(workspace, source)
    if source_path is None:
        return False  # an intent names paths relative to the root only
    if dest == QUARANTINE:
        # Only the commit rename makes the quarantine entry of this id, so it decides
        # alone: a new entry at the old name (another process, right after the rename)
        # must not discard the snapshot of a tree that did leave.
        return fs.lexists(os.path.join(quarantine_dir(workspace), intent_id))
    dest_path = _inside(workspace, dest)
    if dest_path is None:
        return False
    return not fs.lexists(source_path) and fs.lexists(dest_path)
