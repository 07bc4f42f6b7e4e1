"""What a rewind restores besides files: directories and symlinks (SNAP-*, DEL-*).

A tree that a Delete or Move took away holds empty directories and symlinks as well
as files. The files come back through a journaled transaction (``_transaction``); the
*extras* -- a directory to make or remove, a symlink to make or remove -- are made
right after that transaction's commit point, under an intent (``_intents``) written
before it, so recovery settles them with the transaction: a ``committed`` journal
means the extras are made (again: every action here is idempotent), any other state
means none was made yet (they only ever follow the commit point). A rewind that
restores extras and no file has no journal; its intent alone says "make these", and
recovery does.

Each action is durable before the next (the parent directory is fsynced). Creations
go top first, removals deepest first; a directory is removed only when empty, a
symlink only when it still points where the snapshot said.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from editspec.reference.transactions._journal import check_relative

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem

MKDIR = "mkdir"
SYMLINK = "symlink"
UNLINK_SYMLINK = "unlink_symlink"
RMDIR = "rmdir"
ACTIONS = frozenset({MKDIR, SYMLINK, UNLINK_SYMLINK, RMDIR})
_CREATES = frozenset({MKDIR, SYMLINK})


@attrs.frozen(kw_only=True)
class Extra:
    """One directory or symlink a rewind makes or removes (``path`` root-relative)."""

    action: str
    path: str
    target: str | None = None  # a symlink's target

    @property
    def creates(self) -> bool:
        return self.action in _CREATES


def in_order(extras: Sequence[Extra]) -> list[Extra]:
    """Creations top first, then removals deepest first (symlinks before directories)."""
    creations = sorted((e for e in extras if e.creates), key=lambda e: (e.path.count("/"), e.path))
    removals = sorted(
        (e for e in extras if not e.creates),
        key=lambda e: (-e.path.count("/"), e.action != UNLINK_SYMLINK, e.path),
    )
    return creations + removals


def apply(fs: FileSystem, root: str, extras: Sequence[Extra]) -> None:
    """Make every extra so (idempotent); raises ``OSError`` on a failure."""
    for extra in in_order(extras):
        path = os.path.join(root, *extra.path.split("/"))
        current = _lstat(fs, path)
        if extra.action == MKDIR:
            if current is not None and stat.S_ISDIR(current.st_mode):
                continue
            fs.mkdir(path, 0o777)
        elif extra.action == SYMLINK:
            assert extra.target is not None
            if current is not None and _links_to(fs, path, current, extra.target):
                continue
            fs.symlink(extra.target, path)
        elif extra.action == UNLINK_SYMLINK:
            if current is None or not _links_to(fs, path, current, extra.target):
                continue  # gone already, or not the link the snapshot knew: left alone
            fs.unlink(path)
        else:
            if current is None or not stat.S_ISDIR(current.st_mode):
                continue
            try:
                fs.rmdir(path)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                continue  # something was put there since: it stays, and so does the directory
        fs.fsync_dir(os.path.dirname(path))


def encode(extras: Sequence[Extra]) -> list[dict[str, Any]]:
    """The extras as an intent holds them (JSON)."""
    return [{"action": e.action, "path": e.path, "target": e.target} for e in extras]


def decode(items: object) -> list[Extra]:
    """Extras read back from an intent; ``ValueError`` if anything is off."""
    if not isinstance(items, list):
        raise ValueError("extras must be a list")
    extras: list[Extra] = []
    for item in items:
        if not isinstance(item, dict) or item.get("action") not in ACTIONS:
            raise ValueError(f"bad extra {item!r}")
        target = item.get("target")
        if (item["action"] in (SYMLINK, UNLINK_SYMLINK)) != isinstance(target, str):
            raise ValueError(f"bad symlink target in {item!r}")
        try:
            path = check_relative(item.get("path"))
        except Exception as exc:
            raise ValueError(f"bad extra path in {item!r}") from exc
        extras.append(Extra(action=item["action"], path=path, target=target))
    return extras


def _lstat(fs: FileSystem, path: str) -> os.stat_result | None:
    try:
        return fs.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _links_to(fs: FileSystem, path: str, status: os.stat_result, target: str | None) -> bool:
    return stat.S_ISLNK(status.st_mode) and fs.readlink(path) == target
