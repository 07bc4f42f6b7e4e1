"""List directory: typed entries, a stable order and cursor paging (DESIGN §4).

* Entries are typed from the directory listing without following anything: "file",
  "dir", "symlink" (with ``symlink_target``: the link's text as stored, never resolved, so
  a link never leads out of the root) or "other" (FIFO, socket, device). ``size`` is the
  ``lstat`` size (0 for a directory), ``mtime`` the entry's own ``st_mtime``.
* Order: depth first; within a directory, directories before everything else, then by
  name. ``depth=2`` puts each subdirectory's entries right after it. Symlinked
  directories are not entered.
* Hidden entries (a name starting with ".") and everything below a hidden directory are
  left out unless ``include_hidden``. Ignore rules do not apply: a listing shows the disk
  (Glob and Grep are where ``.gitignore`` applies). The engine's state directory is never
  listed.
* Paging: ``max_entries`` cuts the page; ``next_cursor`` is an opaque token holding the
  sort key of the last entry returned (not an offset), so the next page starts right
  after it even when entries were added or removed meanwhile. A cursor from another
  listing (path, depth or hidden flag) or a damaged one is INVALID_ARGUMENT.
* Scale (file-io-design §8): ``glob`` keeps only entries whose path below the listed
  directory (or whose name) matches it (``fnmatch``; directories are still descended);
  directories named in ``exclude`` (default ``DEFAULT_EXCLUDED``: ``.git``, dependency
  and build directories; ``()`` excludes nothing) are neither listed nor entered, and the
  result names each one it skipped (``excluded``) and the rules in effect
  (``exclusions``). ``total_entries`` counts every entry of the whole listing (all pages)
  from the same traversal as the page; ``changed_during_listing`` is True when a listed
  directory's mtime moved while it was being walked, so the count may be off.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from editspec.reference import _errors
from editspec.reference._arguments import check_integer, check_text
from editspec.reference._context import SessionContext, WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._results import ListEntry, ListResult
from editspec.reference.paths._paths import is_within

Key = tuple[tuple[int, str], ...]  # per level: (0 for a directory else 1, name)
DEFAULT_EXCLUDED: tuple[str, ...] = (
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    "dist",
    "build",
    "target",
)
_CURSOR_VERSION = 1
CURSOR_CHARS = 64 * 1024  # ours encode one key: a path below PATH_MAX and a kind


def _cursor_bind(relative: str, depth: int, include_hidden: bool) -> dict[str, Any]:
    return {"v": _CURSOR_VERSION, "p": relative, "d": depth, "h": include_hidden}


def encode_cursor(bind: dict[str, Any], key: Key) -> str:
    payload = json.dumps({**bind, "k": [list(part) for part in key]}, separators=(",", ":"))
    data = payload.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()[:12]
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=") + "." + digest


def decode_cursor(cursor: object, bind: dict[str, Any]) -> Key:
    """The key a cursor resumes after; INVALID_ARGUMENT if it is not one of ours for this
    listing."""
    invalid = ToolError(_errors.INVALID_ARGUMENT, "invalid cursor", cursor=cursor)
    if not isinstance(cursor, str) or "." not in cursor:
        raise invalid
    body, _, digest = cursor.rpartition(".")
    try:
        data = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        if hashlib.sha256(data).hexdigest()[:12] != digest:
            raise invalid
        payload = json.loads(data.decode("utf-8", "surrogatepass"))
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise invalid from exc
    if not isinstance(payload, dict) or {k: payload.get(k) for k in bind} != bind:
        raise ToolError(
            _errors.INVALID_ARGUMENT, "cursor belongs to another listing", cursor=cursor
        )
    parts = payload.get("k")
    if not isinstance(parts, list) or not parts:
        raise invalid
    key: list[tuple[int, str]] = []
    for part in parts:
        if (
            not isinstance(part, list)
            or len(part) != 2
            or part[0] not in (0, 1)
            or not isinstance(part[1], str)
        ):
            raise invalid
        key.append((part[0], part[1]))
    return tuple(key)


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_symlink():
        return "symlink"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


class _Lister:
    def __init__(
        self,
        workspace: WorkspaceContext,
        include_hidden: bool,
        depth: int,
        exclude: tuple[str, ...] = (),
    ) -> None:
        self.exclude = frozenset(exclude)
        self.excluded: list[str] = []  # absolute paths of directories skipped
        self.mtimes: dict[str, int] = {}  # each listed directory's mtime_ns when listed
        self.workspace = workspace
        self.fs = workspace.fs
        self.include_hidden = include_hidden
        self.depth = depth
        state = workspace.state_dir
        self.state = state if state != workspace.root and is_within(state, workspace.root) else None

    def children(self, directory: str, top: bool) -> list[tuple[str, str, os.DirEntry[str]]]:
        try:
            self.mtimes[directory] = self.fs.lstat(directory).st_mtime_ns
            listing = list(self.fs.scandir(directory))
        except OSError as exc:
            if top:
                raise _errors.from_oserror(exc, directory, action="list") from exc
            return []  # vanished or unreadable since its parent was listed
        kept = []
        for entry in listing:
            name = entry.name
            if not self.include_hidden and name.startswith("."):
                continue
            kind = _kind(entry)
            if kind == "dir" and name in self.exclude:
                self.excluded.append(os.path.join(directory, name))
                continue
            if (
                kind == "dir"
                and self.state is not None
                and os.path.join(directory, name) == self.state
            ):
                continue
            kept.append((name, kind, entry))
        kept.sort(key=lambda item: (0 if item[1] == "dir" else 1, item[0]))
        return kept

    def entries(
        self, top: str, reported: str, after: Key | None
    ) -> Iterator[tuple[Key, str, str, str, os.DirEntry[str], str]]:
        """(key, name, path, kind, entry, absolute) in listing order, after ``after``."""
        stack: list[Iterator[tuple[str, str, os.DirEntry[str]]]] = [iter(self.children(top, True))]
        keys: list[Key] = [()]
        paths: list[tuple[str, str]] = [(top, reported)]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
                keys.pop()
                paths.pop()
                continue
            name, kind, entry = item
            key = (*keys[-1], (0 if kind == "dir" else 1, name))
            parent_abs, parent_reported = paths[-1]
            absolute = os.path.join(parent_abs, name)
            path = f"{parent_reported}/{name}" if parent_reported else name
            if after is None or key > after:
                yield key, name, path, kind, entry, absolute
            elif key != after and after[: len(key)] != key:
                continue  # this entry and its subtree were on earlier pages
            if kind == "dir" and len(key) < self.depth:
                stack.append(iter(self.children(absolute, False)))
                keys.append(key)
                paths.append((absolute, path))


def _entry(
    lister: _Lister, name: str, path: str, kind: str, entry: os.DirEntry[str], absolute: str
) -> ListEntry | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None  # gone since it was listed
    target: str | None = None
    if kind == "symlink":
        try:
            target = lister.fs.readlink(absolute)
        except OSError:
            return None
    return ListEntry(
        name=name,
        path=path,
        type=kind,
        size=0 if kind == "dir" else st.st_size,
        mtime=st.st_mtime,
        symlink_target=target,
    )


def list_directory(
    session: SessionContext,
    path: str = ".",
    *,
    depth: int = 1,
    include_hidden: bool = False,
    cursor: str | None = None,
    max_entries: int | None = None,
    glob: str | None = None,
    exclude: Sequence[str] | None = None,
) -> ListResult:
    """The entries of a directory, paged by an opaque cursor. Spec: LIST-*."""
    check_text("glob", glob, optional=True, nul=False, max_chars=4096)
    if exclude is not None and (
        isinstance(exclude, str) or not all(isinstance(name, str) for name in exclude)
    ):
        raise ToolError(_errors.INVALID_ARGUMENT, "exclude must be a list of directory names")
    exclusions = DEFAULT_EXCLUDED if exclude is None else tuple(exclude)
    workspace = session.workspace
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ToolError(_errors.INVALID_ARGUMENT, "depth must be a positive integer")
    if max_entries is not None and (
        isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1
    ):
        raise ToolError(_errors.INVALID_ARGUMENT, "max_entries must be a positive integer")
    if not isinstance(include_hidden, bool):
        raise ToolError(_errors.INVALID_ARGUMENT, "include_hidden must be a boolean")
    check_integer("depth", depth, minimum=1)
    check_integer("max_entries", max_entries, minimum=1)
    if cursor is not None and not isinstance(cursor, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "invalid cursor: not a string")
    check_text("cursor", cursor, optional=True, max_chars=CURSOR_CHARS)
    resolved = workspace.resolve(path)
    if not resolved.exists:
        raise ToolError(_errors.NOT_FOUND, f"no such directory: {path}", path=path)
    if resolved.kind != "dir":
        raise ToolError(_errors.INVALID_ARGUMENT, f"not a directory: {path}", path=path)
    reported = "" if resolved.logical_relative == "." else resolved.logical_relative
    bind = _cursor_bind(resolved.relative, depth, include_hidden)
    if glob is not None or exclude is not None:
        bind = {**bind, "g": glob, "x": sorted(exclusions)}
    after = decode_cursor(cursor, bind) if cursor is not None else None
    lister = _Lister(workspace, include_hidden, depth, exclusions)
    base = f"{reported}/" if reported else ""
    total = 0
    entries: list[ListEntry] = []
    last_key: Key | None = None
    truncated = False
    for key, name, entry_path, kind, entry, absolute in lister.entries(
        resolved.real, reported, None
    ):
        below = entry_path[len(base) :]
        if glob is not None and not (fnmatch.fnmatch(below, glob) or fnmatch.fnmatch(name, glob)):
            continue
        total += 1  # every page's count comes from this one traversal
        if after is not None and key <= after:
            continue
        if truncated or (max_entries is not None and len(entries) >= max_entries):
            truncated = True
            continue
        listed = _entry(lister, name, entry_path, kind, entry, absolute)
        if listed is not None:
            entries.append(listed)
            last_key = key
    next_cursor = encode_cursor(bind, last_key) if truncated and last_key is not None else None
    changed = False
    for directory, mtime_ns in lister.mtimes.items():
        try:
            changed = changed or workspace.fs.lstat(directory).st_mtime_ns != mtime_ns
        except OSError:
            changed = True
    root = workspace.root
    return ListResult(
        entries=tuple(entries),
        next_cursor=next_cursor,
        truncated=truncated,
        total_entries=total,
        changed_during_listing=changed,
        excluded=tuple(
            os.path.relpath(path, root).replace(os.sep, "/") for path in lister.excluded
        ),
        exclusions=exclusions,
    )
