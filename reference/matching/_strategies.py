"""The strategies of the Edit matching cascade, in order (DESIGN §4 "Edit").

Each strategy takes a ``Haystack``, the old and new strings (LF newlines) and whether
matches may overlap, and returns every place the old string matches under its
tolerance, each as a ``Candidate``: ``(start, end, replacement)`` in text offsets, the
replacement with LF newlines. ``CASCADE`` lists them in the order ``_matching.locate``
tries them; ``_matching``'s docstring says what each tolerates.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from editspec.reference.matching._haystack import TRAILING_WS, WS_RUN, Haystack, View, collapse_run

if TYPE_CHECKING:
    pass

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

# -- candidates: (start, end) in text offsets, and the LF text to put there ---------

Candidate = tuple[int, int, str]


def find_all(haystack: str, needle: str, *, overlapping: bool) -> list[int]:
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
) -> list[Candidate]:
    text = hay.norm if view is None else view.text
    found: list[Candidate] = []
    for position in find_all(text, needle, overlapping=overlapping):
        start, end = position, position + len(needle)
        if at_line_end and end < len(text) and text[end] != "\n":
            continue
        if view is not None:
            start, end = view.to_source(start), view.to_source(end)
        found.append((hay.to_text(start), hay.to_text(end), new))
    return found


def _exact(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    # The literal string first, so a text that holds it once is edited there even if
    # another place matches with other line breaks; but a match that would cut a CRLF
    # in two is not a literal match of whole line breaks, and is left to the LF view.
    text = hay.text
    literal = find_all(text, old, overlapping=overlapping)
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


def _trailing_whitespace(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    needle = TRAILING_WS.sub("", old)
    view = hay.view("trailing_whitespace")
    if not needle or (needle == old and view.text is hay.norm):
        return []
    return _in_view(hay, view, needle, new, overlapping, at_line_end=_ends_in_blanks(old))


def _smart_quotes(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    needle = old.translate(_QUOTES_TO_STRAIGHT)
    view_text = hay.norm.translate(_QUOTES_TO_STRAIGHT)
    if needle == old and view_text == hay.norm:
        return []
    found: list[Candidate] = []
    for position in find_all(view_text, needle, overlapping=overlapping):
        matched = hay.norm[position : position + len(needle)]
        restyled = _restyle_quotes(new, matched)
        found.append((hay.to_text(position), hay.to_text(position + len(needle)), restyled))
    return found


def _unescape(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    needle = _unescape_text(old)
    if needle == old or not needle:
        return []
    return _in_view(hay, None, needle, _unescape_text(new), overlapping)


def _whitespace_runs(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    needle = WS_RUN.sub(collapse_run, old)
    if not needle:
        return []
    view = hay.view("whitespace_runs")
    return _in_view(hay, view, needle, new, overlapping, at_line_end=_ends_in_blanks(old))


def _indentation(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    old_lines, ends_with_newline = split_lines(old)
    if not any(line.strip() for line in old_lines):
        return []
    old_stripped = [line.strip() for line in old_lines]
    old_leads = [_lead(line) for line in old_lines]
    old_base = _common_lead(old_leads, old_stripped)
    old_relative = [lead[len(old_base) :] for lead in old_leads]
    anchor = next(index for index, text in enumerate(old_stripped) if text)
    count = len(old_lines)
    lines, stripped = hay.lines, hay.stripped
    found: list[Candidate] = []
    for first in indices(stripped, old_stripped[anchor]):
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


def _block_anchors(hay: Haystack, old: str, new: str, overlapping: bool) -> list[Candidate]:
    old_lines, ends_with_newline = split_lines(old)
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
    found: list[Candidate] = []
    for start_line in indices(stripped, first):
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


_Strategy = Callable[[Haystack, str, str, bool], list[Candidate]]
CASCADE: tuple[tuple[str, _Strategy], ...] = (
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


def split_lines(text: str) -> tuple[list[str], bool]:
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


def indices(items: Sequence[str], wanted: str) -> Iterable[int]:
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
) -> Candidate:
    last = start_line + count - 1
    start = hay.line_starts[start_line]
    end = hay.line_starts[last] + len(hay.lines[last]) + (1 if ends_with_newline else 0)
    return (hay.to_text(start), hay.to_text(end), replacement)


def _drop_overlaps(found: list[Candidate]) -> list[Candidate]:
    kept: list[Candidate] = []
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
