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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._results import EditSpec, Replacement
from editspec.reference.matching._haystack import TRAILING_WS, WS_RUN, Haystack, View, collapse_run

if TYPE_CHECKING:
    from editspec.reference.text._memo import LineIndex

STRATEGIES: tuple[str, ...] = (
    "exact",
    "trailing_whitespace",
    "smart_quotes",
    "unescape",
    "whitespace_runs",
    "indentation",
    "block_anchors",
)

_SINGLE_CURLY = "\u2018\u2019\u201a\u201b"
_DOUBLE_CURLY = "\u201c\u201d\u201e\u201f"
_QUOTES_TO_STRAIGHT = str.maketrans(
    {**dict.fromkeys(_SINGLE_CURLY, "'"), **dict.fromkeys(_DOUBLE_CURLY, '"')}
)
_OPENING_CONTEXT = "([{<\u2014\u2013-/\u2018\u201c"
_ESCAPE = re.compile(r"\\([nrt\"'\\])")
_UNESCAPED = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\"}
_LEADING_WS = re.compile(r"[^\S\n]*")

_BLOCK_MIN_LINES = 3
_BLOCK_MIN_SIMILARITY = 0.5
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


# -- candidates: (start, end) in text offsets, and the LF text to put there ---------

_Candidate = tuple[int, int, str]


def _find_all(haystack: str, needle: str, *, overlapping: bool) -> list[int]:
    positions: list[int] = []
    step = 1 if overlapping else max(len(needle), 1)
    index = haystack.find(needle)
    while index != -1:
        positions.append(index)
        index = haystack.find(needle, index + step)
    return positions


def _in_view(
    hay: Haystack,
    view: View | None,
    needle: str,
    new: str,
    overlapping: bool,
    *,
    at_line_end: bool = False,
) -> list[_Candidate]:
    text = hay.norm if view is None else view.text
    found: list[_Candidate] = []
    for position in _find_all(text, needle, overlapping=overlapping):
        start, end = position, position + len(needle)
        if at_line_end and end < len(text) and text[end] != "\n":
            continue
        if view is not None:
            start, end = view.to_source(start), view.to_source(end)
        found.append((hay.to_text(start), hay.to_text(end), new))
    return found


def _exact(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    # The literal string first, so a text that holds it once is edited there even if
    # another place matches with other line breaks; but a match that would cut a CRLF
    # in two is not a literal match of whole line breaks, and is left to the LF view.
    text = hay.text
    literal = _find_all(text, old, overlapping=overlapping)
    if literal and (old.startswith("\n") or old.endswith("\r")):
        literal = [
            position
            for position in literal
            if not (old.startswith("\n") and position and text[position - 1] == "\r")
            and not (old.endswith("\r") and text.startswith("\n", position + len(old)))
        ]
    if literal:
        return [(position, position + len(old), new) for position in literal]
    needle = old.replace("\r\n", "\n")
    if needle == old and not hay.has_crlf:
        return []
    return _in_view(hay, None, needle, new, overlapping)


def _trailing_whitespace(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    needle = TRAILING_WS.sub("", old)
    view = hay.view("trailing_whitespace")
    if not needle or (needle == old and view.text is hay.norm):
        return []
    return _in_view(hay, view, needle, new, overlapping, at_line_end=_ends_in_blanks(old))


def _smart_quotes(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    needle = old.translate(_QUOTES_TO_STRAIGHT)
    view_text = hay.norm.translate(_QUOTES_TO_STRAIGHT)
    if needle == old and view_text == hay.norm:
        return []
    found: list[_Candidate] = []
    for position in _find_all(view_text, needle, overlapping=overlapping):
        matched = hay.norm[position : position + len(needle)]
        restyled = _restyle_quotes(new, matched)
        found.append((hay.to_text(position), hay.to_text(position + len(needle)), restyled))
    return found


def _unescape(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    needle = _unescape_text(old)
    if needle == old or not needle:
        return []
    return _in_view(hay, None, needle, _unescape_text(new), overlapping)


def _whitespace_runs(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    needle = WS_RUN.sub(collapse_run, old)
    if not needle:
        return []
    view = hay.view("whitespace_runs")
    return _in_view(hay, view, needle, new, overlapping, at_line_end=_ends_in_blanks(old))


def _indentation(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    old_lines, ends_with_newline = _split_lines(old)
    if not any(line.strip() for line in old_lines):
        return []
    old_stripped = [line.strip() for line in old_lines]
    old_leads = [_lead(line) for line in old_lines]
    old_base = _common_lead(old_leads, old_stripped)
    old_relative = [lead[len(old_base) :] for lead in old_leads]
    anchor = next(index for index, text in enumerate(old_stripped) if text)
    count = len(old_lines)
    lines, stripped = hay.lines, hay.stripped
    found: list[_Candidate] = []
    for first in _indices(stripped, old_stripped[anchor]):
        start_line = first - anchor
        if start_line < 0 or not _window_fits(hay, start_line, count, ends_with_newline):
            continue
        if stripped[start_line : start_line + count] != old_stripped:
            continue
        leads = [_lead(line) for line in lines[start_line : start_line + count]]
        file_base = _common_lead(leads, old_stripped)
        relative = [lead[len(file_base) :] for lead in leads]
        if any(
            text and relative[index] != old_relative[index]
            for index, text in enumerate(old_stripped)
        ):
            continue
        found.append(
            _window(hay, start_line, count, ends_with_newline, _reindent(new, old_base, file_base))
        )
    return _drop_overlaps(found) if not overlapping else found


def _block_anchors(hay: Haystack, old: str, new: str, overlapping: bool) -> list[_Candidate]:
    old_lines, ends_with_newline = _split_lines(old)
    count = len(old_lines)
    first, last = old_lines[0].strip(), old_lines[-1].strip()
    # Anchors that say nothing ("{" ... "}") would pick any block of the right size.
    if count < _BLOCK_MIN_LINES or not first or not last:
        return []
    if not any(char.isalnum() for char in first + last):
        return []
    tolerance = count // 4
    old_middle = "\n".join(line.strip() for line in old_lines[1:-1])
    stripped = hay.stripped
    found: list[_Candidate] = []
    for start_line in _indices(stripped, first):
        best: int | None = None
        for length in sorted(
            range(count - tolerance, count + tolerance + 1), key=lambda n: abs(n - count)
        ):
            end_line = start_line + length - 1
            if end_line < len(stripped) and stripped[end_line] == last:
                best = length
                break
        if best is None or not _window_fits(hay, start_line, best, ends_with_newline):
            continue
        middle = "\n".join(stripped[start_line + 1 : start_line + best - 1])
        if _similarity(old_middle, middle) < _BLOCK_MIN_SIMILARITY:
            continue
        file_base = _lead(hay.lines[start_line])
        replacement = _reindent(new, _lead(old_lines[0]), file_base)
        found.append(_window(hay, start_line, best, ends_with_newline, replacement))
    return _drop_overlaps(found) if not overlapping else found


_Strategy = Callable[[Haystack, str, str, bool], list[_Candidate]]
_CASCADE: tuple[tuple[str, _Strategy], ...] = (
    ("exact", _exact),
    ("trailing_whitespace", _trailing_whitespace),
    ("smart_quotes", _smart_quotes),
    ("unescape", _unescape),
    ("whitespace_runs", _whitespace_runs),
    ("indentation", _indentation),
    ("block_anchors", _block_anchors),
)


# -- helpers of the line strategies -----------------------------------------------


def _ends_in_blanks(old: str) -> bool:
    """Whether the last line of ``old`` has text and then blanks the views drop.

    Such a needle claimed that its line ends there, so its match must end at a line end.
    """
    last_line = old.rsplit("\n", 1)[-1]
    return bool(last_line.strip()) and last_line != last_line.rstrip()


def _split_lines(text: str) -> tuple[list[str], bool]:
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        return lines[:-1], True
    return lines, False


def _lead(line: str) -> str:
    match = _LEADING_WS.match(line)
    return match.group() if match else ""


def _common_lead(leads: Sequence[str], stripped: Sequence[str]) -> str:
    """The indentation every non-blank line starts with (there is at least one)."""
    present = [lead for lead, text in zip(leads, stripped, strict=True) if text]
    shortest, longest = min(present), max(present)
    size = 0
    while size < len(shortest) and shortest[size] == longest[size]:
        size += 1
    return shortest[:size]


def _indices(items: Sequence[str], wanted: str) -> Iterable[int]:
    return (index for index, item in enumerate(items) if item == wanted)


def _window_fits(hay: Haystack, start_line: int, count: int, ends_with_newline: bool) -> bool:
    lines = hay.lines
    last = start_line + count - 1
    if last >= len(lines):
        return False
    # The phantom empty line after a final newline is not a line of the file.
    if last == len(lines) - 1 and hay.norm.endswith("\n") and count > 0 and lines[last] == "":
        return False
    return not (ends_with_newline and last == len(lines) - 1)


def _window(
    hay: Haystack, start_line: int, count: int, ends_with_newline: bool, replacement: str
) -> _Candidate:
    last = start_line + count - 1
    start = hay.line_starts[start_line]
    end = hay.line_starts[last] + len(hay.lines[last]) + (1 if ends_with_newline else 0)
    return (hay.to_text(start), hay.to_text(end), replacement)


def _drop_overlaps(found: list[_Candidate]) -> list[_Candidate]:
    kept: list[_Candidate] = []
    for candidate in found:
        if not kept or candidate[0] >= kept[-1][1]:
            kept.append(candidate)
    return kept


def _reindent(text: str, old_base: str, file_base: str) -> str:
    """Shift every line of ``text`` by the offset that takes ``old_base`` to ``file_base``."""
    if old_base == file_base:
        return text
    shifted: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            shifted.append(line)
        elif line.startswith(old_base):
            shifted.append(file_base + line[len(old_base) :])
        elif file_base.startswith(old_base):
            shifted.append(file_base[len(old_base) :] + line)
        elif old_base.startswith(file_base):
            extra = old_base[len(file_base) :]
            lead = _lead(line)
            common = 0
            while common < min(len(lead), len(extra)) and lead[common] == extra[common]:
                common += 1
            shifted.append(line[common:])
        else:
            shifted.append(line)
    return "\n".join(shifted)


def _similarity(left: str, right: str) -> float:
    if left == right:
        return 1.0
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    if matcher.real_quick_ratio() < _BLOCK_MIN_SIMILARITY:
        return 0.0
    if matcher.quick_ratio() < _BLOCK_MIN_SIMILARITY:
        return 0.0
    return matcher.ratio()


def _unescape_text(text: str) -> str:
    unescaped = _ESCAPE.sub(lambda match: _UNESCAPED[match.group(1)], text)
    return unescaped.replace("\r\n", "\n")


def _quote_style(text: str, straight: str, curly: str) -> str | None:
    has_straight = straight in text
    has_curly = any(char in text for char in curly)
    if has_curly and not has_straight:
        return "curly"
    if has_straight and not has_curly:
        return "straight"
    return None


def _restyle_quotes(new: str, matched: str) -> str:
    """Give ``new`` the quote style of the file's ``matched`` text. Spec: EDIT (smart quotes)."""
    double = _quote_style(matched, '"', _DOUBLE_CURLY)
    single = _quote_style(matched, "'", _SINGLE_CURLY)
    chars = list(new)
    for index, char in enumerate(chars):
        previous = chars[index - 1] if index else ""
        opening = not previous or previous.isspace() or previous in _OPENING_CONTEXT
        if char == '"' and double == "curly":
            chars[index] = "\u201c" if opening else "\u201d"
        elif char in _DOUBLE_CURLY and double == "straight":
            chars[index] = '"'
        elif char == "'" and single == "curly":
            chars[index] = "\u2018" if opening and not previous.isalnum() else "\u2019"
        elif char in _SINGLE_CURLY and single == "straight":
            chars[index] = "'"
    return "".join(chars)


# -- choosing among matches -------------------------------------------------------


def _anchor_spans(hay: Haystack, anchor: str) -> list[tuple[int, int]]:
    needle = anchor.replace("\r\n", "\n")
    return [
        (hay.to_text(position), hay.to_text(position + len(needle)))
        for position in _find_all(hay.norm, needle, overlapping=False)
    ]


def _choose(hay: Haystack, found: list[_Candidate], spec: EditSpec, strategy: str) -> _Candidate:
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
    for strategy, find in _CASCADE:
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
    old_lines, _ = _split_lines(old)
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
        lines = [index + 1 for index in _indices(hay.stripped, first)]
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
