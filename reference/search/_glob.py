"""Glob (DESIGN §4 "Glob").

The pattern is a wildmatch pattern (``_wildmatch``) matched against each path
relative to the search root, with these conventions of agent Glob tools:

* ``*`` and ``?`` stay within one path segment; ``**`` as a whole segment spans any number
  of them: ``**/*.py`` finds Python files at any depth, ``src/**`` everything below
  ``src``. A pattern without ``**`` matches at its own depth only: ``*.md`` matches the
  Markdown files *at the search root*, not below it.
* ``{a,b}`` alternatives (``**/*.{ts,tsx}``); ``[...]`` classes; ``\\`` escapes.
* A trailing ``/`` matches directories only (``src/*/``). ``*`` matches names that start
  with a dot; ignored paths are never listed (``_ignore``).
* ``..`` is rejected; a pattern that starts with the search root's absolute path is taken
  relative to it, any other absolute pattern is rejected.
* Symlinks are listed as files by their own path (git lists them so) and never entered,
  whatever they point to; loops cannot hang the walk and nothing outside the root is
  reached. Sockets, FIFOs and devices are not listed.
* Results: files first, then directories, each newest first (``st_mtime_ns``, of the
  entry itself), then by path; "/"-separated, relative to the workspace root. At
  ``max_results`` the list is cut, ``truncated`` is True and ``total_matches`` is the
  number returned.

Speed: Glob stats only the entries it returns (their mtimes order the result).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._context import SessionContext
from editspec.reference._errors import ToolError
from editspec.reference._results import GlobResult
from editspec.reference.search import _scope, _wildmatch
from editspec.reference.search._scope import (
    SearchRoot,
    below_root,
    check_glob_pattern,
    check_max,
)
from editspec.reference.search._walk import SearchTree

if TYPE_CHECKING:
    import re


# What ``_wildmatch.translate`` makes of "**" alone: any path.
_EVERYTHING = ".*"


def _is_globstar(segment: str) -> bool:
    return len(segment) >= 2 and set(segment) == {"*"}


class GlobPattern:
    """A Glob pattern, expanded and compiled, with the directories worth entering."""

    def __init__(self, pattern: object, root: SearchRoot, workspace_root: str) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise ToolError(_errors.INVALID_ARGUMENT, "pattern must be a non-empty string")
        if "\0" in pattern:
            raise ToolError(_errors.INVALID_ARGUMENT, "pattern contains a NUL byte")
        files: list[str] = []
        dirs: list[str] = []
        self._prefixes: list[tuple[list[str], int | None]] = []
        for alternative in _wildmatch.expand_braces(pattern):
            segments, dir_only = self._normalize(alternative, root, workspace_root)
            source = _wildmatch.translate("/".join(segments), pathname=True, atomic=True)
            dirs.append(source)
            if not dir_only:
                files.append(source)
            literal: list[str] = []
            for segment in segments[:-1]:
                if _wildmatch.has_wildcard(segment):
                    break
                literal.append(segment)
            unbounded = any(_is_globstar(segment) for segment in segments)
            self._prefixes.append((literal, None if unbounded else len(segments)))
        files_regex = _compile(files)
        dirs_regex = _compile(dirs)
        self.files = None if files_regex is None else files_regex.fullmatch
        self.dirs = None if dirs_regex is None else dirs_regex.fullmatch
        # An alternative that is "**" alone matches every path: no regex to run.
        self.all_files = _EVERYTHING in files
        self.all_dirs = _EVERYTHING in dirs
        # An alternative without a literal prefix or a depth bound: every directory.
        self.everywhere = ([], None) in self._prefixes

    @staticmethod
    def _normalize(text: str, root: SearchRoot, workspace_root: str) -> tuple[list[str], bool]:
        if text.startswith("/") or os.path.isabs(text):
            logical = os.path.join(workspace_root, *root.reported.split("/"))
            heads = [
                base.replace(os.sep, "/").rstrip("/") + "/" for base in (root.absolute, logical)
            ]
            text = text.replace(os.sep, "/")
            head = next((h for h in heads if text.startswith(h)), None)
            if head is None:
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    "an absolute pattern must start with the search root; "
                    "give the directory as path and a relative pattern",
                    pattern=text,
                )
            text = text[len(head) :]
        dir_only = text.endswith("/")
        segments = [s for s in text.split("/") if s not in ("", ".")]
        if ".." in segments:
            raise ToolError(_errors.INVALID_ARGUMENT, "a glob pattern may not contain '..'")
        if not segments:
            raise ToolError(_errors.INVALID_ARGUMENT, f"pattern matches nothing: {text!r}")
        return segments, dir_only

    def descend(self, below: str) -> bool:
        """Whether a directory (relative to the search root) can hold a match."""
        parts = below.split("/")
        depth = len(parts)
        for literal, max_depth in self._prefixes:
            if max_depth is not None and depth >= max_depth:
                continue
            if all(a == b for a, b in zip(parts, literal, strict=False)):
                return True
        return False


def _compile(sources: list[str]) -> re.Pattern[str] | None:
    import re

    if not sources:
        return None
    return re.compile("|".join(f"(?:{source})" for source in sources), re.DOTALL)


def glob(
    session: SessionContext,
    pattern: str,
    *,
    path: str | None = None,
    max_results: int | None = None,
) -> GlobResult:
    """Paths under the search root matching ``pattern``, ignore rules applied.

    Spec: GLOB-*.
    """
    workspace = session.workspace
    limit = check_max(max_results, "max_results")
    check_glob_pattern("pattern", pattern, workspace.limits)  # before any I/O
    root = _scope.search_root(workspace, path)
    if not root.is_dir:
        raise ToolError(_errors.INVALID_ARGUMENT, f"not a directory: {path}", path=path)
    matcher = GlobPattern(pattern, root, workspace.root)
    tree = SearchTree(workspace)
    # Files (and symlinks), then directories: mtimes and paths as parallel lists.
    files: tuple[list[int], list[str]] = ([], [])
    dirs: tuple[list[int], list[str]] = ([], [])
    reported = root.reported + "/" if root.reported else ""
    files_regex, all_files = matcher.files, matcher.all_files
    dirs_regex, all_dirs = matcher.dirs, matcher.all_dirs
    descend = None if matcher.everywhere else lambda d: matcher.descend(below_root(root, d))
    # Each directory is held open while its entries are stat'ed (``hold``).
    for batch in tree.walk(root.relative, descend=descend, hold=True):
        below = below_root(root, batch.directory)
        prefix = below + "/" if below else ""
        shown = reported + prefix
        for entries, regex, everything, (mtimes, paths) in (
            (batch.files, files_regex, all_files, files),
            (batch.symlinks, files_regex, all_files, files),
            (batch.dirs, dirs_regex, all_dirs, dirs),
        ):
            if regex is None or not entries:
                continue
            if not everything:
                entries = [entry for entry in entries if regex(prefix + entry.name) is not None]
            try:
                stamps = [entry.stat(follow_symlinks=False).st_mtime_ns for entry in entries]
            except OSError:
                entries, stamps = _stamped(entries)
            mtimes += stamps
            paths += [shown + entry.name for entry in entries]
    ordered = _newest_first(*files) + _newest_first(*dirs)
    truncated = limit is not None and len(ordered) > limit
    result = tuple(ordered[:limit] if truncated else ordered)
    return GlobResult(paths=result, truncated=truncated, total_matches=len(result))


def _newest_first(mtimes: list[int], paths: list[str]) -> list[str]:
    """``paths`` by their ``mtimes``, newest first, then by path: the order of the pairs
    (-mtime, path), with no pair built or compared.

    When no two mtimes are equal they alone decide. They are then compared as floats,
    which the sort compares fastest: the conversion never reverses two mtimes, and if it
    merges none (no two floats equal) their order is the mtimes' order. Otherwise the
    paths are sorted first, then stably by mtime in reverse (equal mtimes keep their
    paths' order)."""
    indexes = range(len(paths))
    keys = list(map(float, mtimes))
    if len(set(keys)) == len(keys):
        order = sorted(indexes, key=keys.__getitem__, reverse=True)
    else:
        order = sorted(indexes, key=paths.__getitem__)
        order.sort(key=mtimes.__getitem__, reverse=True)
    return list(map(paths.__getitem__, order))


def _stamped(entries: list[os.DirEntry[str]]) -> tuple[list[os.DirEntry[str]], list[int]]:
    """The entries still there, and their mtimes, skipping those gone since the listing."""
    kept: list[os.DirEntry[str]] = []
    mtimes: list[int] = []
    for entry in entries:
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime_ns
        except OSError:
            continue
        kept.append(entry)
        mtimes.append(mtime)
    return kept, mtimes
