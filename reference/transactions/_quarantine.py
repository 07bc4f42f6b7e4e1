"""Retention of the quarantine: deleted trees are kept for a while, then purged (DEL-*).

A tree Delete moves the tree into ``<state_dir>/quarantine/<root hash>/<id>/``
(``_intents``). Rewind does not need that copy: the snapshot keeps every file's bytes
(blobs) and every directory and symlink (entries), so the quarantine is only a last
resort for a person, and without a bound it grows with every delete.

The rule (``Limits.quarantine_seconds``, ``Limits.quarantine_trees``; None: no bound):

* a quarantined tree older than ``quarantine_seconds`` is purged (its age is the time in
  its id, ``_intents.id_time``; an id from the future counts as new);
* of the rest, all but the newest ``quarantine_trees`` are purged, oldest first;
* a tree whose intent is still on disk (a delete not yet settled) is never touched,
  nor is anything in the directory that is not a quarantined tree's name.

``purge`` runs after each tree delete and at the end of each recovery (so at every
workspace open). It is best effort: an entry that cannot be removed stays for the next
purge, and the change that triggered it is not failed for it.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from typing import TYPE_CHECKING

from editspec.reference.transactions._intents import id_time, quarantine_dir

if TYPE_CHECKING:
    from editspec.reference._context import WorkspaceContext
    from editspec.reference._fs import FileSystem

_TREE_NAME = re.compile(r"q[0-9a-f]{32}")


def purge(workspace: WorkspaceContext, *, now: float | None = None) -> list[str]:
    """Remove the quarantined trees the retention rule no longer keeps; return their ids.

    Spec: DEL-* (README "Delete and Move": retention)."""
    limits = workspace.limits
    max_age, max_trees = limits.quarantine_seconds, limits.quarantine_trees
    if max_age is None and max_trees is None:
        return []
    fs = workspace.fs
    directory = quarantine_dir(workspace)
    try:
        names = set(fs.listdir(directory))
    except OSError:  # none yet, or unreadable: nothing to purge now
        return []
    trees = sorted(
        (
            name
            for name in names
            if _TREE_NAME.fullmatch(name) and f"{name}.intent.json" not in names
        ),
        key=id_time,
    )
    moment = time.time() if now is None else now
    doomed = [name for name in trees if max_age is not None and moment - id_time(name) > max_age]
    kept = [name for name in trees if name not in doomed]
    if max_trees is not None and len(kept) > max_trees:
        doomed += kept[: len(kept) - max_trees]
    purged: list[str] = []
    for name in doomed:
        try:
            _remove_tree(fs, os.path.join(directory, name))
        except OSError:
            continue  # left for the next purge
        purged.append(name)
    if purged:
        with contextlib.suppress(OSError):
            fs.fsync_dir(directory)
    return purged


def _remove_tree(fs: FileSystem, top: str) -> None:
    """Remove ``top`` and everything under it through the port, never following a link."""
    pending = [(top, False)]
    while pending:
        path, listed = pending.pop()
        if listed:
            fs.rmdir(path)
            continue
        status = fs.lstat(path)
        if not stat.S_ISDIR(status.st_mode):
            fs.unlink(path)
            continue
        pending.append((path, True))
        pending.extend((os.path.join(path, name), False) for name in fs.listdir(path))
