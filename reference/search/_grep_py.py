"""The pure-Python Grep backend: always available, and the definition of a match.

It reads each directory's candidates through ``FileSystem.read_files`` (one directory
handle, no symlink followed) and applies the rules of ``_grep_query``. The required
literals make it fast where it matters: a file whose bytes contain none of them is not
decoded, and in a file that does, only the lines around a literal are handed to the
regex. A pattern without literals is tried on every line. The regex runs in a grep worker
process (``_grep_worker``), so a deadline stops even a match that backtracks without end;
this module's ``search_bytes`` is what the worker runs.

A Grep with ``max_results`` keeps only the matches it may return (``Selection``), in every
backend: memory is bounded by ``max_results`` and one batch, not by the number of matches.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from editspec.reference import _errors
from editspec.reference._results import GrepMatch
from editspec.reference.search._grep_query import BOM, FileGroup, GrepQuery, is_binary, may_match
from editspec.reference.search._grep_worker import BATCH_BYTES, search_files

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem

# A candidate that vanished, became a directory, a symlink or unreadable since the walk
# listed it is skipped, as the walk skips such entries.
SKIPPED_ERRNOS = frozenset(
    {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.EACCES, errno.EPERM}
)


def result_order(match: GrepMatch) -> tuple[str, int, int]:
    """The order of a Grep's matches: path, then line, then column."""
    return match.path, match.line, match.column


class Selection:
    """The matches a search keeps: all of them, or with ``keep`` the ``keep`` first in
    ``result_order``, whatever the order they are found in.

    The kept matches are those a sort of every match and a cut after ``keep`` would give
    (a line is matched once, so no two matches share a place in the order): the cut
    after ``max_results`` and ``truncated`` (``max_results + 1`` kept) come out the same.
    Memory: at most ``2 * keep`` matches and the batch being added. Once ``keep`` are
    held, a match that sorts after the last of them cannot be among the first ``keep``
    and is dropped as it arrives.
    """

    def __init__(self, keep: int | None) -> None:
        self.keep = keep
        self._matches: list[GrepMatch] = []
        self._bound: tuple[str, int, int] | None = None  # the last kept, once ``keep`` are

    def add(self, found: Iterable[GrepMatch]) -> None:
        keep = self.keep
        if keep is None:
            self._matches.extend(found)
            return
        bound = self._bound
        held = self._matches
        for match in found:
            if bound is None or result_order(match) < bound:
                held.append(match)
                if len(held) >= 2 * keep:
                    self._cut()
                    bound = result_order(held[-1])
        self._bound = bound

    def _cut(self) -> None:
        self._matches.sort(key=result_order)
        del self._matches[self.keep :]

    def matches(self) -> list[GrepMatch]:
        """The kept matches: with ``keep``, the ``keep`` first, in order; else all, in no
        particular order."""
        if self.keep is not None:
            self._cut()
        return self._matches


def search_text(query: GrepQuery, text: str, path: str) -> list[GrepMatch]:
    """The matching lines of one decoded file (BOM already dropped)."""
    search = query.regex.search
    found: list[GrepMatch] = []
    line_filter = query.line_filter
    if line_filter is None:
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the newline that ends the last line does not start another
        for number, line in enumerate(lines, start=1):
            if line.endswith("\r"):
                line = line[:-1]
            match = search(line)
            if match is not None:
                found.append(GrepMatch(path=path, line=number, column=match.start() + 1, text=line))
        return found
    find = line_filter.search
    size = len(text)
    position = 0
    number = 1
    counted = 0
    while position <= size:
        hit = find(text, position)
        if hit is None:
            break
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.start())
        if end == -1:
            end = size
        number += text.count("\n", counted, start)
        counted = start
        line = text[start:end]
        if line.endswith("\r"):
            line = line[:-1]
        match = search(line)
        if match is not None:
            found.append(GrepMatch(path=path, line=number, column=match.start() + 1, text=line))
        position = end + 1
    return found


def search_bytes(query: GrepQuery, data: bytes, path: str) -> list[GrepMatch]:
    """The matching lines of one file's bytes (none for a binary file)."""
    if is_binary(data):
        return []
    if query.byte_filter is not None and query.byte_filter.search(data) is None:
        return []
    if data.startswith(BOM):
        data = data[len(BOM) :]
    return search_text(query, data.decode("utf-8", "replace"), path)


def search(
    fs: FileSystem,
    query: GrepQuery,
    groups: Sequence[FileGroup],
    check: Callable[[], None],
    keep: int | None = None,
) -> list[GrepMatch]:
    """Search every candidate; the matches (with ``keep``, the ``keep`` first in
    ``result_order``: ``Selection``) in no particular order.

    The files are read here, through the port; those that may match (``may_match``) are
    searched by a grep worker (``_grep_worker``), which ``check`` can stop mid-regex.
    """
    matches = Selection(keep)
    pending: list[tuple[str, bytes]] = []
    pending_bytes = 0
    for group in groups:
        check()
        for name, data in fs.read_files(group.directory, group.names):
            if isinstance(data, OSError):
                if data.errno in SKIPPED_ERRNOS:
                    continue
                raise _errors.from_oserror(data, group.report(name), action="grep")
            if may_match(query, data):
                pending.append((group.report(name), data))
                pending_bytes += len(data)
            if pending_bytes >= BATCH_BYTES:
                matches.add(search_files(query, pending, check))
                pending, pending_bytes = [], 0
        check()
    if pending:
        matches.add(search_files(query, pending, check))
    return matches.matches()
