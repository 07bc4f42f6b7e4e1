"""Rewind of what is not a file: the directories and symlinks of a tree (SNAP-*, DEL-*).

A tree Delete or Move records, besides its files, an entry per directory (the tree's
own included) and per symlink (``kind`` "dir" / "symlink"; their content is empty for
a directory, the target for a symlink: ``_records``). Rewind checks their chains the
way it checks a file's -- the state on disk now must be the last entry's after-state,
each entry's before-state the previous one's after-state -- and turns each into an
``Extra`` (``transactions._extras``): a directory or symlink to make again, or, for the
destination of an undone move, to remove. A directory is removed only if it holds
nothing but what this rewind removes (CONFLICT otherwise), and a path that holds a
file in one change and a directory or symlink in another is CONFLICT: rewind does not
swap kinds.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference.snapshots._records import DIR_CONTENT, OTHER_KINDS, RecordedEntry
from editspec.reference.text import _text
from editspec.reference.transactions._extras import (
    MKDIR,
    RMDIR,
    SYMLINK,
    UNLINK_SYMLINK,
    Extra,
)

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext

_State = tuple[str, str | None] | None  # (kind, content sha256), or None: nothing there


def split(
    entries: Mapping[str, Sequence[RecordedEntry]],
) -> tuple[dict[str, list[RecordedEntry]], dict[str, list[RecordedEntry]]]:
    """The entries of files, and those of directories and symlinks; CONFLICT on a mix."""
    files: dict[str, list[RecordedEntry]] = {}
    others: dict[str, list[RecordedEntry]] = {}
    for relative, chain in entries.items():
        kinds = {entry.kind in OTHER_KINDS for entry in chain}
        if len(kinds) > 1:
            raise _conflict(
                relative, "it was a file in one change and a directory or link in another"
            )
        (others if kinds == {True} else files)[relative] = list(chain)
    return files, others


def plan(
    session: SessionContext,
    others: Mapping[str, Sequence[RecordedEntry]],
    removed_files: Collection[str],
) -> list[Extra]:
    """The extras that bring every directory and symlink back; CONFLICT on a gap."""
    extras: list[Extra] = []
    for relative, chain in sorted(others.items()):
        extra = _plan_one(session, relative, chain)
        if extra is not None:
            extras.append(extra)
    removed = set(removed_files) | {e.path for e in extras if not e.creates}
    fs, root = session.workspace.fs, session.workspace.root
    for extra in extras:
        if extra.action != RMDIR:
            continue
        try:
            names = fs.listdir(_real(root, extra.path))
        except OSError as exc:
            raise _errors.from_oserror(exc, extra.path, action="list") from exc
        kept = sorted(name for name in names if f"{extra.path}/{name}" not in removed)
        if kept:
            raise _conflict(extra.path, f"it holds entries this session did not put there: {kept}")
    return extras


def _plan_one(
    session: SessionContext, relative: str, chain: Sequence[RecordedEntry]
) -> Extra | None:
    workspace = session.workspace
    parent = relative.rpartition("/")[0] or "."
    resolved = workspace.resolve(parent)
    if resolved.relative != parent:
        raise _conflict(relative, f"the path now leads to {resolved.relative}")
    real = _real(workspace.root, relative)
    current, link_target = _current(session, real, relative)
    expected: _State = current
    for index, entry in enumerate(reversed(chain)):
        after = None if entry.after_sha256 is None else (entry.kind, entry.after_sha256)
        if after != expected:
            why = (
                "it was changed after this session last changed it"
                if index == 0
                else "its history has a gap (it was changed by someone else in between)"
            )
            raise _conflict(relative, why)
        expected = (entry.kind, entry.before_sha256) if entry.existed else None
    if expected == current:
        return None
    if expected is None:
        assert current is not None
        if current[0] == "symlink":
            return Extra(action=UNLINK_SYMLINK, path=relative, target=link_target)
        return Extra(action=RMDIR, path=relative)
    if current is not None:
        raise _conflict(relative, "something else is there now")
    kind, digest = expected
    if kind == "dir":
        return Extra(action=MKDIR, path=relative)
    assert digest is not None
    target = os.fsdecode(workspace.snapshots.read_blob(session.id, digest))
    return Extra(action=SYMLINK, path=relative, target=target)


def _current(session: SessionContext, real: str, relative: str) -> tuple[_State, str | None]:
    """What is at the path now, as a state, and a symlink's target."""
    fs = session.workspace.fs
    try:
        status = fs.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        raise _errors.from_oserror(exc, relative, action="inspect") from exc
    if stat.S_ISDIR(status.st_mode):
        return ("dir", _text.sha256_hex(DIR_CONTENT)), None
    if stat.S_ISLNK(status.st_mode):
        target = fs.readlink(real)
        return ("symlink", _text.sha256_hex(os.fsencode(target))), target
    return ("file", None), None


def _real(root: str, relative: str) -> str:
    return os.path.join(root, *relative.split("/"))


def _conflict(relative: str, why: str) -> ToolError:
    return ToolError(
        _errors.CONFLICT, f"cannot rewind {relative}: {why}; nothing was changed", path=relative
    )
