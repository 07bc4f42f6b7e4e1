"""One workspace root for every clause: how the suite tests a server that is already running.

A server reached by URL (``editspec check --mcp-url URL --mcp-root DIR``) was started
over one root, ``DIR``, and keeps serving it; the suite cannot hand it a fresh
directory per clause. So the clauses take turns in that root, one at a time:

* ``DIR`` is the clause's workspace root, and ``DIR/../outside`` its directory outside
  the root (the layout of ``editspec.spec.fixtures``, with ``DIR``'s parent as the base);
  the state directory given to the driver is the clause's own, which the server never
  sees.
* Before the first clause, ``DIR`` must be empty and its parent must hold nothing but
  ``DIR`` (and an ``outside`` the suite left): the suite deletes everything in both
  between clauses, so it refuses a directory that holds anything it did not put there.
* Before and after every clause the root is emptied and everything else in its parent
  (``outside``, a clause's barrier files) removed: links are removed, never followed, and
  directories a clause made unreadable are made readable first.
* Clauses run in one process, one after another (no ``-n``): two clauses in one root
  would see each other's files.

What stays on the server between clauses is its in-memory state, which the MCP driver
keeps apart by giving every driver instance session ids of its own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OUTSIDE = "outside"


class SharedRootError(Exception):
    """The directory named as the server's root cannot be shared by the clauses."""


def base_of(root: Path) -> Path:
    """The clause layout's base: the root's parent (real path, no symlink in it)."""
    return Path(os.path.realpath(root)).parent


def check_exclusive(root: Path) -> None:
    """Refuse a root the suite may not empty: not an empty directory, or not alone."""
    real = Path(os.path.realpath(root))
    if not real.is_dir():
        raise SharedRootError(f"--mcp-root {root}: not a directory")
    if any(real.iterdir()):
        raise SharedRootError(
            f"--mcp-root {root} is not empty: the suite deletes everything in the server's "
            "root between clauses, so it must start empty"
        )
    others = sorted(entry.name for entry in real.parent.iterdir()) if real.parent != real else []
    others = [name for name in others if name not in (real.name, OUTSIDE)]
    if others:
        raise SharedRootError(
            f"--mcp-root {root}: its parent {real.parent} holds {others}; the suite puts "
            f"{OUTSIDE!r} next to the root and checks that nothing else there changes, so the "
            "parent must hold nothing but the root"
        )


def _make_removable(directory: str) -> None:
    mode = os.lstat(directory).st_mode
    if stat.S_ISDIR(mode):
        os.chmod(directory, stat.S_IMODE(mode) | stat.S_IRWXU)


def empty_directory(path: Path) -> None:
    """Remove everything inside ``path`` (itself stays), never following a link."""
    _make_removable(os.fspath(path))
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            empty_directory(Path(entry.path))
            os.rmdir(entry.path)
        else:
            os.unlink(entry.path)


def _clear(root: Path) -> None:
    """The root emptied, and nothing else left in its parent: the previous clause's traces."""
    real = Path(os.path.realpath(root))
    empty_directory(real)
    for entry in os.scandir(real.parent):
        if entry.name == real.name:
            continue
        if entry.is_dir(follow_symlinks=False):
            empty_directory(Path(entry.path))
            os.rmdir(entry.path)
        else:
            os.unlink(entry.path)


def reset(root: Path) -> None:
    """Before a clause: the root empty, and beside it only an empty ``outside``."""
    _clear(root)
    (base_of(root) / OUTSIDE).mkdir()


def release(root: Path) -> None:
    """After a clause: the root empty and alone in its parent, as the run found it."""
    _clear(root)
