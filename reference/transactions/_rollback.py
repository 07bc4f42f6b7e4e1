"""Undoing and finishing a transaction's file effects (DESIGN §4 TXN/RECOV).

``roll_back`` puts every path of a journal back as it was before the transaction;
``finish`` removes what a committed one left. Both act only on the names a journal
records (which ``_journal.decode`` has checked), both are idempotent, and both report
every path they could not handle instead of stopping at the first. The in-process
abort passes ``owned`` so that only what this process made is touched.

These are file effects only; when they run, and what happens to the journal around
them, is decided in ``_transaction``.

The hard-link trap: ``rename(backup, target)`` when both names are links of one file
does nothing and reports success (POSIX). A target that is still the backup's file is
therefore never renamed onto: the extra link is dropped. And after any restore the
backup name must really be gone.
"""

from __future__ import annotations

import errno as _errno
import hashlib
import os
import stat
from collections.abc import Mapping

import attrs

from editspec.reference._fs import FileSystem
from editspec.reference.transactions._journal import JournalRecord


class RollbackIncomplete(Exception):
    """A rollback or finish could not complete; ``failures`` maps relative paths to reasons."""

    def __init__(self, failures: Mapping[str, str]) -> None:
        super().__init__(", ".join(f"{path}: {reason}" for path, reason in failures.items()))
        self.failures = dict(failures)


@attrs.define
class Owned:
    """What this process made during a publish; an in-process rollback undoes only these."""

    stages: set[str] = attrs.Factory(set)
    backups: set[str] = attrs.Factory(set)
    dirs: set[str] = attrs.Factory(set)
    published: set[str] = attrs.Factory(set)  # added files linked into place


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def absolute(root: str, relative: str) -> str:
    return os.path.join(root, *relative.split("/"))


def relative_to(root: str, path: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def roll_back(
    fs: FileSystem, root: str, record: JournalRecord, *, owned: Owned | None = None
) -> list[str]:
    """Put every path back as it was before ``record``; return the leftovers removed.

    Idempotent. With ``owned`` (in-process) only what this process made is touched;
    recovery trusts the journal's names, which ``_journal.decode`` has checked.
    Raises ``RollbackIncomplete`` naming every path it could not restore.
    """
    failures: dict[str, str] = {}
    cleaned: list[str] = []
    synced: set[str] = set()
    for entry in record.entries:
        if entry.backup is None:
            continue
        path, backup = absolute(root, entry.path), absolute(root, entry.backup)
        if owned is not None and backup not in owned.backups:
            continue
        try:
            if _restore(fs, path, backup):
                synced.add(os.path.dirname(path))
        except OSError as exc:
            failures[entry.path] = f"backup not restored: {exc}"
    for entry in record.entries:
        if entry.existed:
            continue
        path = absolute(root, entry.path)
        if owned is not None and path not in owned.published:
            continue
        try:
            if _remove_if_hash(fs, path, entry.new_sha256):
                synced.add(os.path.dirname(path))
        except OSError as exc:
            failures[entry.path] = f"added file not removed: {exc}"
    for entry in record.entries:
        if entry.stage is None:
            continue
        stage = absolute(root, entry.stage)
        if owned is not None and stage not in owned.stages:
            continue
        try:
            if fs.lexists(stage):
                fs.unlink(stage)
                cleaned.append(entry.stage)
                synced.add(os.path.dirname(stage))
        except OSError as exc:
            failures[entry.stage] = f"stage file not removed: {exc}"
    created = {directory for entry in record.entries for directory in entry.dirs_created}
    for relative in sorted(created, key=lambda d: (-d.count("/"), d)):
        directory = absolute(root, relative)
        if owned is not None and directory not in owned.dirs:
            continue
        try:
            if fs.lexists(directory):
                fs.rmdir(directory)
            synced.add(os.path.dirname(directory))
        except OSError as exc:
            if exc.errno not in (_errno.ENOTEMPTY, _errno.EEXIST):
                failures[relative] = f"created directory not removed: {exc}"
            # Not empty: it holds files this transaction did not make; they stay.
    _sync_existing(fs, root, synced, failures)
    if failures:
        raise RollbackIncomplete(failures)
    return cleaned


def finish(fs: FileSystem, root: str, record: JournalRecord) -> list[str]:
    """Remove the backups and stage files a committed transaction left; idempotent."""
    failures: dict[str, str] = {}
    cleaned: list[str] = []
    synced: set[str] = set()
    for entry in record.entries:
        for side in (entry.backup, entry.stage):
            if side is None:
                continue
            path = absolute(root, side)
            try:
                if fs.lexists(path):
                    fs.unlink(path)
                    cleaned.append(side)
                    synced.add(os.path.dirname(path))
            except OSError as exc:
                failures[side] = f"not removed: {exc}"
    _sync_existing(fs, root, synced, failures)
    if failures:
        raise RollbackIncomplete(failures)
    return cleaned


def _sync_existing(
    fs: FileSystem, root: str, directories: set[str], failures: dict[str, str]
) -> None:
    for directory in sorted(directories):
        try:
            if fs.lexists(directory):
                fs.fsync_dir(directory)
        except OSError as exc:
            failures[relative_to(root, directory) or "."] = f"directory not synced: {exc}"


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _restore(fs: FileSystem, path: str, backup: str) -> bool:
    """Bring the backup's file back at ``path``; False if there is no backup (any more)."""
    try:
        kept = fs.lstat(backup)
    except (FileNotFoundError, NotADirectoryError):
        return False  # never made, or restored by an earlier (interrupted) recovery
    try:
        current: os.stat_result | None = fs.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        current = None
    if current is not None and _same_file(current, kept):
        # The target is still the old file: drop the extra link. Renaming would be the
        # POSIX no-op between two links of one file and leave the backup behind.
        fs.unlink(backup)
    else:
        fs.rename(backup, path)
    if fs.lexists(backup):
        if _same_file(fs.lstat(path), fs.lstat(backup)):
            fs.unlink(backup)
        else:
            raise OSError(_errno.EIO, "backup still present after restoring", backup)
    return True


def _remove_if_hash(fs: FileSystem, path: str, expected_sha256: str | None) -> bool:
    """Remove a file this transaction added, only if it holds the planned new content."""
    try:
        info = fs.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            return False
        data = fs.read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if sha256_hex(data) != expected_sha256:
        return False  # not ours: something else was created there
    fs.unlink(path)
    return True
