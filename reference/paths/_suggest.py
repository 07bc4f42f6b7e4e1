"""Likely-meant paths for a NOT_FOUND (file-io-design §5; Claude Code's Edit does this).

A model that names ``src/utils/helper.py`` when the file is ``src/util/helpers.py``
gets, with its NOT_FOUND, up to three existing files it probably meant: the same name
elsewhere in the workspace first, then close spellings of the whole path. Only the
workspace is looked at (a bounded walk under the root that follows no symlink and skips
``.git``, the state directory and dependency directories), so a hint never reveals a
path outside it.
"""

from __future__ import annotations

import difflib
import functools
import os
import posixpath
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from editspec.reference import _errors
from editspec.reference._errors import ToolError

if TYPE_CHECKING:
    from editspec.reference._context import SessionContext, WorkspaceContext

MAX_SUGGESTIONS = 3
MAX_WALK_ENTRIES = 20_000  # a hint is cheap or absent, never a full crawl of a monorepo
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".tox"})

_F = TypeVar("_F", bound=Callable[..., Any])


def likely_paths(
    workspace: WorkspaceContext, requested: str, *, directories: bool = False
) -> list[str]:
    """Up to three existing files (or ``directories``), root-relative, that ``requested``
    probably meant."""
    wanted = posixpath.normpath(requested.replace(os.sep, "/")).lstrip("/")
    if os.path.isabs(requested):
        root = workspace.root.replace(os.sep, "/")
        absolute = posixpath.normpath(requested.replace(os.sep, "/"))
        if not absolute.startswith(root + "/"):
            return []
        wanted = absolute[len(root) + 1 :]
    if not wanted or wanted.startswith(".."):
        return []
    files, dirs = _entries(workspace)
    if directories:
        files = dirs
    name = posixpath.basename(wanted)
    same_name = sorted(
        (path for path in files if posixpath.basename(path) == name),
        key=lambda path: -difflib.SequenceMatcher(None, wanted, path).ratio(),
    )
    close = difflib.get_close_matches(wanted, files, n=MAX_SUGGESTIONS, cutoff=0.75)
    found: list[str] = []
    for path in (*same_name, *close):
        if path != wanted and path not in found:
            found.append(path)
    return found[:MAX_SUGGESTIONS]


def _entries(workspace: WorkspaceContext) -> tuple[list[str], list[str]]:
    """The workspace's files and directories, by a bounded walk."""
    fs, root, state = workspace.fs, workspace.root, workspace.state_dir
    files: list[str] = []
    dirs: list[str] = []
    pending = [""]
    seen = 0
    while pending and seen < MAX_WALK_ENTRIES:
        relative = pending.pop()
        directory = os.path.join(root, relative) if relative else root
        try:
            names = sorted(fs.listdir(directory))
        except OSError:
            continue
        for name in names:
            seen += 1
            path = f"{relative}/{name}" if relative else name
            real = os.path.join(directory, name)
            try:
                mode = fs.lstat(real).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if name not in SKIPPED_DIRS and real != state:
                    pending.append(path)
                    dirs.append(path)
            elif stat.S_ISREG(mode):
                files.append(path)
    return files, dirs


def _names_missing(exc: ToolError) -> bool:
    """A NOT_FOUND, or a STALE because the file ``expected_sha256`` named is not there
    (Write: the caller believes a file exists that does not)."""
    if exc.code == _errors.NOT_FOUND:
        return True
    details = exc.details
    return (
        exc.code == _errors.STALE
        and "expected_sha256" in details
        and "current_sha256" in details
        and details["current_sha256"] is None
    )


def _hinting(method: _F, *, directories: bool) -> _F:
    @functools.wraps(method)
    def call(self: SessionContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except ToolError as exc:
            path = exc.details.get("path")
            # A hint walks the workspace: only where the service has directories.
            listed = self.workspace.supports.directories
            if _names_missing(exc) and isinstance(path, str) and path and listed:
                try:
                    suggestions = likely_paths(self.workspace, path, directories=directories)
                except Exception:  # a hint must never hide the error it decorates
                    suggestions = []
                if suggestions:
                    exc.details["did_you_mean"] = suggestions
            raise

    return call  # type: ignore[return-value]


def hint_not_found(method: _F) -> _F:
    """A Session method whose NOT_FOUND for a file (or Write's STALE for a missing one)
    carries ``details["did_you_mean"]``: up to three existing files."""
    return _hinting(method, directories=False)


def hint_dir_not_found(method: _F) -> _F:
    """The same, for a method that names a directory: the hints are directories."""
    return _hinting(method, directories=True)
