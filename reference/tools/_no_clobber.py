"""The commit of a Move: a name changed without ever replacing another (MOVE-002).

Checking that the destination is absent and then calling ``rename`` leaves an instant
in which a process outside the engine can create it, and ``rename`` would then
replace that file. So the publish itself refuses an existing destination:

* A file is linked at the destination (``link`` fails with EEXIST when anything is
  there), that new name is made durable (fsync of its directory), then the source
  name is unlinked: that unlink is the commit point. Between the two the file has
  both names; a crash there is settled by recovery (``_intents.settle``), which removes
  the destination name again (all-before), so a move is never half done. A failure of
  the unlink in a running process removes the new name at once. A file system without
  hard links (EPERM, EMLINK, ENOTSUP, ENOSYS from ``link``) gets the directory's way.
* A directory (which cannot be hard-linked) is renamed with
  ``renameat2(RENAME_NOREPLACE)`` (the port's ``rename_noreplace``): one system call,
  EEXIST when the destination exists. Where the platform or the file system has no
  such call, it is a plain ``rename`` after one more check, and the limit is what
  ``rename(2)`` itself refuses: it never replaces a file, nor a non-empty directory,
  with a directory, so all a racing process can lose in that instant is an *empty*
  directory it created at the destination. The result says so in ``warnings``.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from editspec.reference._fs import NOREPLACE_UNAVAILABLE

if TYPE_CHECKING:
    from editspec.reference._context import WorkspaceContext
    from editspec.reference._fs import FileSystem

#: ``link`` errors that mean "no hard links here", not "the destination exists".
LINK_UNAVAILABLE = frozenset(
    {
        errno.EPERM,
        errno.EMLINK,
        errno.ENOSYS,
        errno.ENOTSUP,
        getattr(errno, "EOPNOTSUPP", errno.ENOTSUP),
    }
)


class BothNamesLeft(Exception):
    """The source's unlink failed and the new name could not be removed again: the file
    has both names until recovery (whose intent must therefore stay) removes the new one."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


UNGUARDED_RENAME = (
    "the destination was checked absent and then renamed onto (no renameat2 with "
    "RENAME_NOREPLACE here): an empty directory another process created there in that "
    "instant would have been replaced"
)


def publish_file(
    workspace: WorkspaceContext, source: str, dest: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Move a regular file's name without clobbering; return the steps done and warnings.

    Spec: MOVE-002.

    Raises ``FileExistsError`` when the destination exists at the instant of the
    publish, and any other ``OSError`` unchanged (EXDEV: another file system); after
    either, the disk is as before."""
    fs = workspace.fs
    try:
        fs.link(source, dest)
    except OSError as exc:
        if exc.errno not in LINK_UNAVAILABLE:
            raise
        return publish_dir(workspace, source, dest)
    try:
        fs.fsync_dir(os.path.dirname(dest))  # the new name is durable before the old goes
        fs.unlink(source)  # the commit point
    except OSError as exc:
        if not _remove_second_name(fs, source, dest):
            workspace.mark_needs_recovery(
                f"{dest} and {source} both name the moved file; recovery removes {dest}"
            )
            raise BothNamesLeft(exc) from exc
        raise
    return ("link", "unlink_source"), ()


def publish_dir(
    workspace: WorkspaceContext, source: str, dest: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Rename with ``renameat2(RENAME_NOREPLACE)``, or check and rename; return the
    steps done and warnings."""
    fs = workspace.fs
    try:
        fs.rename_noreplace(source, dest)
        return ("rename",), ()
    except OSError as exc:
        if exc.errno not in NOREPLACE_UNAVAILABLE:
            raise
    if fs.lexists(dest):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest)
    try:
        fs.rename(source, dest)
    except OSError as exc:
        # What rename(2) refuses to replace: a non-empty directory, or a non-directory.
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY) or (
            exc.errno == errno.ENOTDIR and fs.lexists(dest)
        ):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest) from exc
        raise
    return ("rename",), (UNGUARDED_RENAME,)


def _remove_second_name(fs: FileSystem, source: str, dest: str) -> bool:
    try:
        if same_file(fs, source, dest):
            fs.unlink(dest)
        return True
    except OSError:
        return False


def same_file(fs: FileSystem, first: str, second: str) -> bool:
    """Whether ``first`` and ``second`` are two names of one regular file."""
    try:
        a, b = fs.lstat(first), fs.lstat(second)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return os.path.samestat(a, b) and stat.S_ISREG(a.st_mode) and a.st_nlink > 1
