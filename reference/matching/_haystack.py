"""A text prepared for the Edit matching cascade: its LF view and views of that view.

Matching runs on the file's text with its original newlines. The literal search runs
on the text itself; every other search runs on a *view*: the text with every CRLF read
as LF (``Haystack.norm``), and for the whitespace strategies a view of that view with
trailing blanks dropped or runs of blanks collapsed (``Haystack.view``). A view maps
each of its offsets back to the text it was made from, so a replacement touches only
the matched span, and every other character, including each line's own line break in
a mixed-ending file, stays as it was. The new text's line breaks take the style of the
span it replaces (``Haystack.with_newlines``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from editspec.reference.text._text import CRLF, MIXED, newline_style

if TYPE_CHECKING:
    from editspec.reference.text._memo import LineIndex

TRAILING_WS = re.compile(r"[^\S\n]+(?=\n|\Z)")
# A run to rewrite in the whitespace_runs view: inside a line, after a non-blank
# character, anything but one space; or blanks that run to the end of the line.
WS_RUN = re.compile(r"(?<=\S)(?:[^\S\n]{2,}|[^\S\n ])|[^\S\n]+(?=\n|\Z)")


class View:
    """``source`` with some runs substituted; ``to_source`` maps a view offset back.

    A substitution ``k`` stands for ``source[s_k : s_k + m_k]`` at ``view[v_k : v_k + r_k]``.
    A boundary that falls on a removed run maps to the run's start, so a match never
    swallows whitespace it did not see at its end.
    """

    def __init__(
        self,
        source: str,
        pattern: re.Pattern[str],
        substitute: Callable[[re.Match[str]], str],
    ) -> None:
        pieces: list[str] = []
        self._view_marks: list[int] = []
        self._subs: list[tuple[int, int, int, int]] = []
        copied = 0
        view_length = 0
        for match in pattern.finditer(source):
            replacement = substitute(match)
            start, end = match.span()
            pieces.append(source[copied:start])
            view_length += start - copied
            self._view_marks.append(view_length)
            self._subs.append((view_length, len(replacement), start, end - start))
            pieces.append(replacement)
            view_length += len(replacement)
            copied = end
        pieces.append(source[copied:])
        self.text = "".join(pieces) if self._subs else source

    def to_source(self, offset: int) -> int:
        k = bisect.bisect_right(self._view_marks, offset) - 1
        if k < 0:
            return offset
        view_start, view_len, source_start, source_len = self._subs[k]
        if offset < view_start + view_len:
            return source_start + min(offset - view_start, source_len)
        if view_len == 0 and offset == view_start:
            return source_start
        return source_start + source_len + (offset - view_start - view_len)


class Haystack:
    """One text prepared for matching; the costly views are built on first use.

    ``newline`` is the text's style ("lf", "crlf", "mixed" or "none") when the caller
    knows it already; it spares a scan of a large file.
    """

    def __init__(
        self, text: str, newline: str | None = None, lines: LineIndex | None = None
    ) -> None:
        self.text = text
        self._line_index = lines
        style = newline if newline is not None else newline_style(text)
        self.has_crlf = style in (CRLF, MIXED)
        self.pure_crlf = style == CRLF
        self._norm: str | None = None if self.has_crlf else text
        self._crlf_marks: list[int] | None = None
        self._lines: list[str] | None = None
        self._stripped: list[str] | None = None
        self._line_starts: list[int] | None = None

    @property
    def norm(self) -> str:
        """The text with every CRLF read as LF."""
        if self._norm is None:
            self._norm = self.text.replace("\r\n", "\n")
        return self._norm

    # offsets of the LF view -> offsets of the text
    def to_text(self, offset: int) -> int:
        if not self.has_crlf:
            return offset
        if self.pure_crlf:
            return offset + self.norm.count("\n", 0, offset)
        if self._crlf_marks is None:
            self._crlf_marks = [
                match.start() - index for index, match in enumerate(re.finditer("\r\n", self.text))
            ]
        return offset + bisect.bisect_left(self._crlf_marks, offset)

    def line_of(self, offset: int) -> int:
        if self._line_index is not None:
            return self._line_index.newlines_before(self.text, offset) + 1
        return self.text.count("\n", 0, offset) + 1

    def lines_of(self, offsets: Sequence[int]) -> list[int]:
        """1-based line of each offset, counting each stretch of the text once."""
        lines = [0] * len(offsets)
        line, counted = 1, 0
        for index in sorted(range(len(offsets)), key=offsets.__getitem__):
            offset = offsets[index]
            line += self.text.count("\n", counted, offset)
            counted = offset
            lines[index] = line
        return lines

    def view(self, name: str) -> View:
        """The LF view seen by a whitespace strategy (each is asked for once)."""
        if name == "trailing_whitespace":
            return View(self.norm, TRAILING_WS, lambda match: "")
        return View(self.norm, WS_RUN, collapse_run)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.norm.split("\n")
        return self._lines

    @property
    def stripped(self) -> list[str]:
        if self._stripped is None:
            self._stripped = [line.strip() for line in self.lines]
        return self._stripped

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            for line in self.lines[:-1]:
                starts.append(starts[-1] + len(line) + 1)
            self._line_starts = starts
        return self._line_starts

    def with_newlines(self, replacement: str, start: int, end: int) -> str:
        """``replacement`` (LF) with the line breaks of ``text[start:end]``'s style."""
        if "\n" not in replacement or not self.has_crlf:
            return replacement
        if self.pure_crlf:
            return replacement.replace("\n", "\r\n")
        # A mixed file: when the new text has as many line breaks as the span, each keeps
        # the break it replaces; otherwise the span's majority, or the break after it.
        span = self.text[start:end]
        breaks = ["\r\n" if span[index - 1 : index] == "\r" else "\n" for index in _newlines(span)]
        pieces = replacement.split("\n")
        if len(breaks) != len(pieces) - 1:
            crlf = breaks.count("\r\n")
            if crlf * 2 != len(breaks):
                newline = "\r\n" if crlf * 2 > len(breaks) else "\n"
            else:
                after = self.text.find("\n", end)
                if after == -1:
                    after = self.text.rfind("\n", 0, start)
                newline = "\r\n" if after > 0 and self.text[after - 1] == "\r" else "\n"
            return newline.join(pieces)
        joined = [pieces[0]]
        for newline, piece in zip(breaks, pieces[1:], strict=True):
            joined.append(newline)
            joined.append(piece)
        return "".join(joined)


def _newlines(text: str) -> Iterable[int]:
    index = text.find("\n")
    while index != -1:
        yield index
        index = text.find("\n", index + 1)


def collapse_run(match: re.Match[str]) -> str:
    end = match.end()
    text = match.string
    return "" if end == len(text) or text[end] == "\n" else " "
