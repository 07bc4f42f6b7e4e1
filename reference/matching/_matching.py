"""The Edit matching cascade (DESIGN §4 "Edit"): where an ``old_string`` is in a text.

Theory of operation. Each strategy below looks for ``old_string`` under one more
tolerance than the one before and returns every place it matches, each with the
text that replaces it there:

====================  =================================================================
exact                 the string itself; where the file has CRLF, also with its line
                      breaks read as the file's
trailing_whitespace   whitespace at the end of each line ignored
smart_quotes          curly quotes read as straight ones; the new text takes the quote
                      style of the matched text
unescape              ``\\n``, ``\\t``, ``\\"``, ``\\'`` and ``\\\\`` written literally read as
                      what they escape (in the new text too)
whitespace_runs       runs of spaces and tabs inside a line read as one space
indentation           whole lines whose indentation differs by one constant offset; the
                      new text is re-indented by the same offset
block_anchors         three or more whole lines whose first and last lines match, the
                      line count is about the same and the middle is similar
====================  =================================================================

The first strategy that finds anything decides: one match is applied; several are
AMBIGUOUS unless ``replace_all`` is set or the ``line``/``before``/``after`` hints
single one out; none falls through to the next strategy. After the last, NO_MATCH.
Hints only choose between the matches of one strategy: they never make a
non-matching edit match, and one match is applied whatever they say.

Offsets. Matching runs on the file's text with its original newlines, through a
``Haystack`` (``_haystack.py``): a literal search on the text itself, every other one
on views that map their offsets back, so a replacement touches only its span.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import EditSpec, Replacement
from editspec.reference.matching._haystack import Haystack
from editspec.reference.matching._strategies import (
    CASCADE,
    STRATEGIES,
    Candidate,
    find_all,
    indices,
    split_lines,
)

if TYPE_CHECKING:
    from editspec.reference.text._memo import LineIndex

_DIAGNOSE_MAX_CHARS = 2 * 1024 * 1024
_DIAGNOSE_MAX_LINES = 20_000
_LISTED_LINES = 10


@attrs.frozen
class Span:
    """One place to replace: ``text[start:end]`` becomes ``replacement``."""

    start: int
    end: int
    replacement: str


@attrs.frozen
class Located:
    """Where one edit matched: the spans to replace, by which strategy, first line."""

    spans: tuple[Span, ...]
    matched_by: str
    line: int
    # Set when the spans are exactly the occurrences ``str.replace`` would take of this
    # string (the first ``len(spans)``): the replacement is then one ``str.replace``.
    literal: str | None = None


# -- choosing among matches -------------------------------------------------------


def _anchor_spans(hay: Haystack, anchor: str) -> list[tuple[int, int]]:
    needle = anchor.replace("\r\n", "\n")
    return [
        (hay.to_text(position), hay.to_text(position + len(needle)))
        for position in find_all(hay.norm, needle, overlapping=False)
    ]


def _choose(hay: Haystack, found: list[Candidate], spec: EditSpec, strategy: str) -> Candidate:
    """Single out one of several matches with the hints, or raise AMBIGUOUS."""
    chosen = set(range(len(found)))
    lines = hay.lines_of([start for start, _, _ in found])
    if spec.line is not None:
        last_lines = hay.lines_of([max(start, end - 1) for start, end, _ in found])
        chosen &= {
            index for index in range(len(found)) if lines[index] <= spec.line <= last_lines[index]
        }
    if spec.before is not None:
        allowed: set[int] = set()
        for _, anchor_end in _anchor_spans(hay, spec.before):
            following = [index for index, item in enumerate(found) if item[0] >= anchor_end]
            if following:
                allowed.add(min(following, key=lambda index: found[index][0]))
        chosen &= allowed
    if spec.after is not None:
        allowed = set()
        for anchor_start, _ in _anchor_spans(hay, spec.after):
            preceding = [index for index, item in enumerate(found) if item[1] <= anchor_start]
            if preceding:
                allowed.add(max(preceding, key=lambda index: found[index][0]))
        chosen &= allowed
    hinted = spec.line is not None or spec.before is not None or spec.after is not None
    if hinted and len(chosen) == 1:
        return found[chosen.pop()]
    listed = ", ".join(str(line) for line in lines[:_LISTED_LINES])
    more = "" if len(lines) <= _LISTED_LINES else f" and {len(lines) - _LISTED_LINES} more"
    if hinted:
        why = "none" if not chosen else f"{len(chosen)}"
        message = (
            f"old_string matches {len(found)} times ({strategy}; lines {listed}{more}) "
            f"and {why} of them fit line/before/after; give hints that single out one"
        )
    else:
        message = (
            f"old_string matches {len(found)} times ({strategy}; lines {listed}{more}); "
            "add surrounding context, give line=, before= or after=, or set replace_all"
        )
    raise ToolError(_errors.AMBIGUOUS, message, matched_by=strategy, count=len(found), lines=lines)


def validate(spec: EditSpec) -> None:
    """Raise INVALID_ARGUMENT for an EditSpec whose fields cannot be used."""
    if not isinstance(spec.old_string, str) or not isinstance(spec.new_string, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "old_string and new_string must be strings")
    if not isinstance(spec.replace_all, bool):
        raise ToolError(_errors.INVALID_ARGUMENT, "replace_all must be a boolean")
    if spec.line is not None and (
        isinstance(spec.line, bool) or not isinstance(spec.line, int) or spec.line < 1
    ):
        raise ToolError(_errors.INVALID_ARGUMENT, "line must be a positive integer (1-based)")
    for name in ("before", "after"):
        value = getattr(spec, name)
        if value is not None and (not isinstance(value, str) or not value):
            raise ToolError(_errors.INVALID_ARGUMENT, f"{name} must be a non-empty string")
    if spec.replace_all and (spec.line is not None or spec.before or spec.after):
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            "line, before and after choose one match; replace_all replaces every match",
        )
    if spec.old_string == spec.new_string:
        raise ToolError(_errors.NO_CHANGE, "old_string and new_string are identical")


def locate(
    text: str, spec: EditSpec, *, newline: str | None = None, lines: LineIndex | None = None
) -> Located:
    """Run the cascade for one edit. Spec: EDIT-* (matching order, AMBIGUOUS, NO_MATCH)."""
    validate(spec)
    if not spec.old_string and not text:
        # An empty file is filled with the new text as given (it has no style to keep).
        return Located(spans=(Span(0, 0, spec.new_string),), matched_by="exact", line=1)
    if not spec.old_string:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            "an empty old_string only creates a file or fills an empty one; this file has content",
        )
    hay = Haystack(text, newline, lines)
    old = spec.old_string.replace("\r\n", "\n")
    new = spec.new_string.replace("\r\n", "\n")
    for strategy, find in CASCADE:
        source_old = spec.old_string if strategy == "exact" else old
        found = find(hay, source_old, new, not spec.replace_all)
        if not found:
            continue
        if spec.replace_all or len(found) == 1:
            picked = found
        else:
            picked = [_choose(hay, found, spec, strategy)]
        spans = tuple(
            Span(start, end, hay.with_newlines(replacement, start, end))
            for start, end, replacement in picked
        )
        literal = None
        if (
            strategy == "exact"
            and (spec.replace_all or picked[0] is found[0])
            and text.startswith(spec.old_string, spans[0].start)
            and not spec.old_string.startswith("\n")
            and not spec.old_string.endswith("\r")
        ):
            literal = spec.old_string  # the literal search found them, and dropped none
        return Located(
            spans=spans, matched_by=strategy, line=hay.line_of(spans[0].start), literal=literal
        )
    raise _no_match(hay, old)


def apply(text: str, located: Located) -> str:
    """Replace every span of ``located`` in ``text`` (spans are sorted, disjoint)."""
    replacement = located.spans[0].replacement
    if located.literal is not None and all(
        span.replacement == replacement for span in located.spans
    ):
        # One pass and one copy of a large text, instead of slices joined.
        return text.replace(located.literal, replacement, len(located.spans))
    pieces: list[str] = []
    copied = 0
    for span in located.spans:
        pieces.append(text[copied : span.start])
        pieces.append(span.replacement)
        copied = span.end
    pieces.append(text[copied:])
    return "".join(pieces)


@attrs.frozen
class Edited:
    """The result of several edits: the text, and what matched.

    The old and new texts are equal in their first ``unchanged_prefix`` characters and
    their last ``unchanged_suffix`` characters (lower bounds), which spares the diff a
    scan of a large file.
    """

    text: str
    replacements: tuple[Replacement, ...]
    unchanged_prefix: int
    unchanged_suffix: int
    prefix_newlines: int  # the number of "\n" in the first ``unchanged_prefix`` characters


def edit_text(
    text: str,
    edits: Sequence[EditSpec],
    *,
    newline: str | None = None,
    lines: LineIndex | None = None,
) -> Edited:
    """Apply edits in order, in memory; the first that fails raises with its index.

    ``newline``: the style of ``text`` if known; ``lines``: its ``LineIndex`` if known
    (both spare scans of a large text). Spec: EDIT-*.
    """
    replacements: list[Replacement] = []
    prefix = suffix = len(text)
    prefix_newlines = 0
    for index, spec in enumerate(edits):
        try:
            located = (
                locate(text, spec, newline=newline, lines=lines)
                if index == 0
                else locate(text, spec)
            )
        except ToolError as error:
            prefix_text = f"edit {index + 1} of {len(edits)}: " if len(edits) > 1 else ""
            details = {**error.details, "edit_index": index}
            raise ToolError(error.code, prefix_text + error.message, **details) from None
        # Offsets before the first span, and counted from the end after the last one,
        # are the same in every version of the text.
        if located.spans[0].start <= prefix:
            prefix = located.spans[0].start
            prefix_newlines = located.line - 1
        suffix = min(suffix, len(text) - located.spans[-1].end)
        text = apply(text, located)
        replacements.append(
            Replacement(count=len(located.spans), matched_by=located.matched_by, line=located.line)
        )
    return Edited(
        text=text,
        replacements=tuple(replacements),
        unchanged_prefix=prefix,
        unchanged_suffix=suffix,
        prefix_newlines=prefix_newlines,
    )


def apply_edits(text: str, edits: Sequence[EditSpec]) -> tuple[str, tuple[Replacement, ...]]:
    """``edit_text`` without the region: the new text and the replacements."""
    edited = edit_text(text, edits)
    return edited.text, edited.replacements


# -- NO_MATCH, with a hint where to look ------------------------------------------


def _no_match(hay: Haystack, old: str) -> ToolError:
    hints: list[str] = []
    details: dict[str, Any] = {}
    old_lines, _ = split_lines(old)
    first = next((line.strip() for line in old_lines if line.strip()), "")
    if first and len(hay.norm) <= _DIAGNOSE_MAX_CHARS:
        compact_old = re.sub(r"\s+", "", old)
        compact_text = re.sub(r"\s+", "", hay.norm)
        position = compact_text.find(compact_old) if compact_old else -1
        if position != -1:
            prefix = re.match(rf"(?:\s*\S){{{position}}}\s*", hay.norm)
            line = hay.norm.count("\n", 0, prefix.end() if prefix else 0) + 1
            hints.append(f"it matches at line {line} if whitespace and line breaks are ignored")
            details["whitespace_differs_at_line"] = line
    if first:
        lines = [index + 1 for index in indices(hay.stripped, first)]
        if not lines and len(hay.lines) <= _DIAGNOSE_MAX_LINES:
            close = set(difflib.get_close_matches(first, set(hay.stripped), n=3, cutoff=0.6))
            lines = [index + 1 for index, text in enumerate(hay.stripped) if text in close]
        if lines:
            listed = ", ".join(str(line) for line in lines[:_LISTED_LINES])
            hints.append(f"the closest lines to its first line are {listed}")
            details["closest_lines"] = lines[:_LISTED_LINES]
    hint = ("; " + "; ".join(hints)) if hints else ""
    return ToolError(
        _errors.NO_MATCH,
        f"old_string was not found (tried {', '.join(STRATEGIES)}){hint}; "
        "read the file again and copy the text exactly",
        **details,
    )
