"""Hunks applied to a decoded file text in memory (DESIGN §4, ApplyPatch). No disk access.

Theory of operation. The text (original newlines, no BOM) is split into lines that keep
their terminators ("\\n" or "\\r\\n"; a lone "\\r" is content). Each hunk's old side (its
context and removed lines) is looked up against the lines' contents, terminators ignored,
under the first of these strategies that finds it at all:

======================  ============================================================
exact                   the line as written
trailing_whitespace     whitespace at the end of each line ignored
surrounding_whitespace  whitespace at both ends ignored
unicode_punctuation     also dashes, curly quotes and odd spaces read as ASCII
======================  ============================================================

Never "most similar". Hunks apply in order; each is looked for only after the lines the
previous hunk matched. Where a hunk goes:

- ``end_of_file``: only at the end of the file.
- Codex ``@@`` headers: every occurrence of the first header (after the previous hunk)
  opens a scope; each further header is the first occurrence after that; the hunk goes to
  the first match after the last header. When different occurrences lead to different
  places, AMBIGUOUS. A hunk without headers that matches twice is AMBIGUOUS.
- Unified ``old_start`` (the header's line number; section headings are not used, as git
  truncates them): one match is taken wherever it is (a warning gives the offset). Several
  exact matches are decided by the hint only when one starts exactly at the header's line,
  moved by the offset at which the previous hunk of the file applied (as ``patch`` does);
  otherwise, and for several fuzzy matches, AMBIGUOUS.
- A hunk with no old side inserts: at the hint's line (unified), right after its ``@@``
  header, or else at the end of the file (an empty file included).

Context lines keep the file's own bytes (also when matched fuzzily); removed lines go.

Line ends differ by format. Codex hunks (and a unified diff that arrived with CRLF
everywhere): lines end in "\\n" or "\\r\\n" and are matched without them; added lines take
the file's newline, CRLF where most terminators are CRLF, else LF; the file keeps ending
with a newline or not, unless a ``\\ No newline at end of file`` says otherwise; an empty
file counts as ending with one. Unified hunks (``Hunk.exact_newlines``, ``git apply``'s
reading): the file is split at "\\n" only, a CR is content, each line is matched with its
terminator (the last line may have none; the tolerant strategies ignore it), and every
added line ends as the diff says: "\\n", or nothing after the marker.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence

import attrs

from editspec.reference import _errors
from editspec.reference._errors import AMBIGUOUS, NO_MATCH, ToolError
from editspec.reference.patch._patch_model import FileOp, Hunk
from editspec.reference.text import _text
from editspec.reference.text._diff import unified_diff

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007", " "),
        **dict.fromkeys("\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)


def _unicode_punctuation(line: str) -> str:
    return line.translate(_PUNCTUATION).strip()


def _exact(line: str) -> str:
    return line


def _trailing(line: str) -> str:
    return line.rstrip()


def _surrounding(line: str) -> str:
    return line.strip()


STRATEGIES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("exact", _exact),
    ("trailing_whitespace", _trailing),
    ("surrounding_whitespace", _surrounding),
    ("unicode_punctuation", _unicode_punctuation),
)
EXACT = STRATEGIES[0][0]


def split_lines(text: str) -> list[tuple[str, str]]:
    """``(content, terminator)`` per line; the last terminator is "" without a final newline."""
    parts = text.split("\n")
    tail = parts.pop()
    if "\r" in text:
        lines = [(part[:-1], "\r\n") if part.endswith("\r") else (part, "\n") for part in parts]
    else:  # no CR at all: every line ends in LF (pairs made in C)
        lines = list(zip(parts, itertools.repeat("\n")))
    if tail:
        lines.append((tail, ""))
    return lines


def apply_hunks(
    text: str,
    hunks: Sequence[Hunk],
    *,
    path: str,
    placements: list[tuple[int, int, str]] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """Apply ``hunks`` in order to ``text``; return the new text and warnings.

    ``placements``, when given, receives per hunk ``(number, line, strategy)``: its
    1-based number, the 1-based file line where its old side matched, and the strategy.

    Raises NO_MATCH or AMBIGUOUS (details: path, hunk, line = the hunk's patch line).
    Spec: PATCH-003, PATCH-004, PATCH-005.
    """
    exact = any(hunk.exact_newlines for hunk in hunks)
    lines = _exact_lines(text) if exact else split_lines(text)
    # Unified: a line's terminator is part of what it must match (the last line may
    # have none); Codex: only its content.
    finder = _Finder(
        [content + ending for content, ending in lines]
        if exact
        else [content for content, _ in lines]
    )
    newline = _newline_for_inserts(text)
    final_newline = not text or text.endswith("\n")
    warnings: list[str] = []
    out: list[tuple[str, str]] = []
    cursor = 0  # lines before it belong to earlier hunks
    shift = 0  # where the previous unified hunk applied, minus where its header said
    for number, hunk in enumerate(hunks, 1):
        where = _Where(path=path, number=number, hunk=hunk)
        old_side, new_side = _sides(hunk) if exact else _codex_sides(hunk, newline)
        old_size = len(old_side)
        start, strategy = _locate(
            finder, hunk, [content + ending for content, ending in old_side], cursor, shift, where
        )
        if placements is not None:
            placements.append((number, start + 1, strategy))
        if strategy != EXACT:
            warnings.append(
                f"{where}: matched at line {start + 1} only with the "
                f"{strategy.replace('_', ' ')} tolerance"
            )
        if hunk.old_start is not None:
            base = hunk.old_start - (1 if old_size else 0)
            if start != base:
                warnings.append(f"{where}: applied at line {start + 1}; its header says {base + 1}")
            shift = start - base
        out.extend(lines[cursor:start])
        region = iter(lines[start : start + old_size])
        added = iter(new_side)
        for kind, _ in hunk.lines:
            if kind == "+":
                out.append(next(added))
            elif kind == " ":
                out.append(next(region))  # context keeps the file's own bytes
                next(added)
            else:
                next(region)
        cursor = start + old_size
        if cursor == len(lines) and not exact:
            if hunk.new_missing_newline:
                final_newline = False
            elif hunk.old_missing_newline:
                final_newline = True
    out.extend(lines[cursor:])
    if exact:
        # Every line ends as its source says; one with no terminator (the file's last
        # line, matched tolerantly) that is no longer last gets one.
        return "".join(
            content + (ending or ("\n" if k < len(out) - 1 else ""))
            for k, (content, ending) in enumerate(out)
        ), tuple(warnings)
    return _join(out, newline, final_newline), tuple(warnings)


def _exact_lines(text: str) -> list[tuple[str, str]]:
    """``(content, terminator)`` per line, split at LF only: a CR is content (unified)."""
    parts = text.split("\n")
    tail = parts.pop()
    lines = [(part, "\n") for part in parts]
    if tail:
        lines.append((tail, ""))
    return lines


Side = list[tuple[str, str]]


def _sides(hunk: Hunk) -> tuple[Side, Side]:
    """A unified hunk's old and new lines with their terminators (LF, or none when a
    '\\ No newline at end of file' marker follows the side's last line)."""
    old: Side = []
    new: Side = []
    for kind, content in hunk.lines:
        if kind != "+":
            old.append((content, "\n"))
        if kind != "-":
            new.append((content, "\n"))
    if hunk.old_missing_newline and old:
        old[-1] = (old[-1][0], "")
    if hunk.new_missing_newline and new:
        new[-1] = (new[-1][0], "")
    return old, new


def _codex_sides(hunk: Hunk, newline: str) -> tuple[Side, Side]:
    """A Codex hunk's old lines (content only) and new lines in the file's newline."""
    old = [(content, "") for kind, content in hunk.lines if kind != "+"]
    new = [(content, newline) for kind, content in hunk.lines if kind != "-"]
    return old, new


@attrs.frozen(kw_only=True)
class _Where:
    """Names a hunk in messages: the file, its number and its line in the patch."""

    path: str
    number: int
    hunk: Hunk

    def __str__(self) -> str:
        return f"{self.path}: hunk {self.number} (patch line {self.hunk.source_line})"

    def no_match(self, why: str, context: str, cursor: int) -> ToolError:
        return ToolError(
            NO_MATCH,
            f"{self}: {why} {context!r} after line {cursor}",
            path=self.path,
            hunk=self.number,
            line=self.hunk.source_line,
            context=context,
            searched_from=cursor + 1,
        )

    def ambiguous(self, starts: Sequence[int], strategy: str) -> ToolError:
        lines = tuple(start + 1 for start in starts)
        shown = ", ".join(str(line) for line in lines[:10])
        return ToolError(
            AMBIGUOUS,
            f"{self}: the context matches at lines {shown}{' ...' if len(lines) > 10 else ''}"
            f" ({strategy.replace('_', ' ')}); add context lines or an @@ header",
            path=self.path,
            hunk=self.number,
            line=self.hunk.source_line,
            matches=lines,
            strategy=strategy,
        )


def _locate(
    finder: _Finder, hunk: Hunk, old: list[str], cursor: int, shift: int, where: _Where
) -> tuple[int, str]:
    """The line index where ``hunk``'s old side (``old``) starts, and the strategy that
    found it."""
    size = len(finder.lines)
    hint = None
    if hunk.old_start is not None:
        hint = hunk.old_start - (1 if old else 0) + shift
    headers = hunk.headers if hint is None else ()
    first = old[0].removesuffix("\n") if old else ""
    starts = _header_starts(finder, headers, cursor, where) if headers else [cursor]
    if hunk.end_of_file:
        at = size - len(old)
        if at < min(starts):
            raise where.no_match("at the end of the file, does not match", first, cursor)
        for name, _ in STRATEGIES:
            if finder.matches_at(old, at, name):
                return at, name
        raise where.no_match("at the end of the file, does not match", first, cursor)
    if not old:  # a pure insertion
        if hint is not None:
            if not cursor <= hint <= size:
                raise where.no_match(f"insertion after line {hint} is outside the file", "", cursor)
            return hint, EXACT
        if len(starts) > 1:
            raise where.ambiguous([start - 1 for start in starts], EXACT)
        return (starts[0] if headers else size), EXACT
    strategy, found = finder.first_match(old, min(starts))
    if not found:
        raise where.no_match("context not found:", first, cursor)
    if hint is not None:
        if len(found) > 1 and not (strategy == EXACT and hint in found):
            raise where.ambiguous(found, strategy)
        return (hint if len(found) > 1 else found[0]), strategy
    chosen = {found[k] for start in starts if (k := bisect.bisect_left(found, start)) < len(found)}
    if len(chosen) > 1 or (not headers and len(found) > 1):
        raise where.ambiguous(sorted(chosen) if headers else found, strategy)
    return chosen.pop(), strategy


def _header_starts(
    finder: _Finder, headers: Sequence[str], cursor: int, where: _Where
) -> list[int]:
    """Line indexes just after each occurrence of the header chain (see the module doc)."""
    starts: list[int] | None = None
    for header in headers:
        _, found = finder.first_match([header], cursor if starts is None else starts[0])
        if starts is None:
            starts = [line + 1 for line in found]
        else:
            after = {found[k] for s in starts if (k := bisect.bisect_left(found, s)) < len(found)}
            starts = sorted(line + 1 for line in after)
        if not starts:
            raise where.no_match("@@ header not found:", header, cursor)
    assert starts is not None
    return starts


class _Finder:
    """Finds runs of lines in a file under each strategy, with an index per strategy."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._views: dict[str, tuple[list[str], dict[str, list[int]]]] = {}
        self._normalisers = dict(STRATEGIES)

    def _view(self, strategy: str) -> tuple[list[str], dict[str, list[int]]]:
        view = self._views.get(strategy)
        if view is None:
            normalise = self._normalisers[strategy]
            normalised = [normalise(line) for line in self.lines]
            index: dict[str, list[int]] = {}
            for number, line in enumerate(normalised):
                index.setdefault(line, []).append(number)
            view = self._views[strategy] = (normalised, index)
        return view

    def find(self, pattern: Sequence[str], start: int, strategy: str) -> list[int]:
        """Every index at or after ``start`` where ``pattern`` matches, in order."""
        if strategy == EXACT and pattern:
            return self._find_exact(pattern, start)
        normalised, index = self._view(strategy)
        normalise = self._normalisers[strategy]
        wanted = [normalise(line) for line in pattern]
        # Anchor on the pattern's rarest line: few candidates to verify.
        anchor = min(range(len(wanted)), key=lambda k: len(index.get(wanted[k], ())))
        candidates = index.get(wanted[anchor], [])
        found = []
        for position in candidates[bisect.bisect_left(candidates, start + anchor) :]:
            begin = position - anchor
            if begin + len(wanted) > len(normalised):
                break
            if normalised[begin : begin + len(wanted)] == wanted:
                found.append(begin)
        return found

    def _find_exact(self, pattern: Sequence[str], start: int) -> list[int]:
        """``find`` for the exact strategy, without an index: ``list.index`` scans for
        the pattern's first line (in C) and each candidate is compared as a slice. Most
        patches match exactly, so most files never pay for an index of every line."""
        lines, wanted, size = self.lines, list(pattern), len(pattern)
        first, last = wanted[0], len(self.lines) - size
        found = []
        position = max(start, 0)
        while position <= last:
            try:
                position = lines.index(first, position, last + 1)
            except ValueError:
                break
            if lines[position : position + size] == wanted:
                found.append(position)
            position += 1
        return found

    def first_match(self, pattern: Sequence[str], start: int) -> tuple[str, list[int]]:
        """The first strategy that finds ``pattern`` at all, and every place it does."""
        for strategy, _ in STRATEGIES:
            found = self.find(pattern, start, strategy)
            if found:
                return strategy, found
        return EXACT, []

    def matches_at(self, pattern: Sequence[str], at: int, strategy: str) -> bool:
        normalise = self._normalisers[strategy]
        window = self.lines[at : at + len(pattern)]
        return len(window) == len(pattern) and all(
            normalise(have) == normalise(want) for have, want in zip(window, pattern, strict=True)
        )


def _newline_for_inserts(text: str) -> str:
    """CRLF where most line terminators of ``text`` are CRLF, else LF (as ``split_lines``
    counts them: a "\\n" after a "\\r" ends a CRLF line, any other ends an LF line)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def _join(lines: Sequence[tuple[str, str]], newline: str, final_newline: bool) -> str:
    if not lines:
        return ""
    parts = [content + (ending or newline) for content, ending in lines[:-1]]
    content, ending = lines[-1]
    parts.append(content + ((ending or newline) if final_newline else ""))
    return "".join(parts)


NOTEBOOK_SUFFIX = ".ipynb"


def apply_file_hunks(
    op: FileOp,
    old_bytes: bytes,
    display: str,
    display_to: str | None,
    *,
    placements: list[tuple[int, int, str]] | None = None,
    decode: Callable[[bytes], _text.DecodedText | None] = _text.decode,
    encode: Callable[[str, _text.DecodedText | None], bytes] = _text.encode,
) -> tuple[bytes, str, tuple[str, ...]]:
    """A file's ``old_bytes`` with ``op``'s hunks applied: its new bytes, the diff and
    warnings; ``placements`` receives where each hunk matched. Notebooks and binary files
    are refused. ``decode`` and ``encode``: how the file's service holds text (``_store``)."""
    for name in (display, display_to):
        if name is not None and name.lower().endswith(NOTEBOOK_SUFFIX):
            raise ToolError(
                _errors.UNSUPPORTED,
                f"{name} is a Jupyter notebook; edit its cells with the notebook tools "
                "instead of patching its JSON",
                path=name,
            )
    decoded = decode(old_bytes)
    if decoded is None:
        raise ToolError(
            _errors.BINARY, f"{display} is a binary file; it cannot be patched", path=display
        )
    text, like = decoded.text, decoded
    if decoded.bom and decoded.encoding == _text.UTF8 and _mentions_bom(op):
        # git's first line starts with the BOM's bytes: here the BOM is the text's to keep
        # or drop. A diff that never names it (written by hand) leaves it as it is.
        text, like = "\ufeff" + text, attrs.evolve(decoded, bom=False)
    new_text, warnings = apply_hunks(text, op.hunks, path=display, placements=placements)
    new_bytes = encode(new_text, like)
    diff = unified_diff(display, text, new_text)
    return new_bytes, diff, tuple(warnings)


def _mentions_bom(op: FileOp) -> bool:
    return any(
        hunk.exact_newlines and "\ufeff" in text for hunk in op.hunks for _, text in hunk.lines
    )
