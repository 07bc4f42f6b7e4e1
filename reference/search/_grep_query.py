"""A Grep query: the user's Python regex, compiled, and the literals every match contains.

What a match is (both backends implement exactly this; DESIGN §4 "Grep"):

* A file is searched as text unless a NUL byte occurs in its first 8 KiB (binary: skipped).
  A UTF-8 BOM is dropped; bytes that are not UTF-8 decode to U+FFFD (as ripgrep prints
  them, so a Latin-1 file is still searched).
* Lines are separated by ``\\n``; a ``\\r`` before it is not part of the line (CRLF files
  match ``$`` at the end of a line). The regex is searched in each line on its own, so
  ``^``, ``$``, ``\\A`` and ``\\Z`` mean the start and end of the line and nothing ever
  matches across lines.
* A matching line is reported once: its 1-based number, the 1-based column (in characters)
  of the leftmost match, and the line's text.

Required literals. From the parse tree of the regex we extract a set of literal strings
such that every match contains at least one of them (``foo\\w+bar`` -> ``{"foo"}`` or
``{"bar"}``; ``(get|set)Item`` -> ``{"Item"}``). The ripgrep backend uses them as a
fixed-string prefilter and checks every candidate line with Python's ``re``, so ripgrep's
regex dialect never decides a result; the Python backend uses them to skip files and
lines. Two sets are kept, because ripgrep's case folding differs from Python's for a few
characters (under ``re.IGNORECASE`` Python matches "i" with U+0131 and U+0130, ripgrep does not):
ripgrep gets only literals it folds the way Python does.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError

# The regex parser of the standard library: ``re._parser`` from 3.11, ``sre_parse`` before
# (importing the old name warns on 3.11+). Its tree is stable across 3.10-3.13.
_sre_parse: Any = importlib.import_module(
    "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
)
_sre_constants: Any = importlib.import_module(
    "re._constants" if sys.version_info >= (3, 11) else "sre_constants"
)

BINARY_SNIFF_BYTES = 8192
BOM = b"\xef\xbb\xbf"

_LITERAL = _sre_constants.LITERAL
_SUBPATTERN = _sre_constants.SUBPATTERN
_BRANCH = _sre_constants.BRANCH
_REPEATS = tuple(
    getattr(_sre_constants, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_sre_constants, name)
)
_ATOMIC = getattr(_sre_constants, "ATOMIC_GROUP", None)


class FileGroup(NamedTuple):
    """Candidate files of one directory, read together through ``FileSystem.read_files``."""

    directory: str  # absolute real path
    relative: str  # root-relative real path, "" for the root
    names: list[str]
    reported: str  # what results call the directory: "" or a prefix ending in "/"
    alias: str | None = None  # a single file the caller named by another (logical) path

    def report(self, name: str) -> str:
        return self.alias if self.alias is not None else self.reported + name


Literal = tuple[str, bool]  # (text, case-insensitive)
Requirement = frozenset[Literal]  # every match contains one of these


def python_safe(ch: str, ignore_case: bool) -> bool:
    """A character the Python backend may look for (a line never holds a newline)."""
    return ch != "\n"


def rg_safe(ch: str, ignore_case: bool) -> bool:
    """A character ripgrep's fixed-string search finds wherever Python's ``re`` would.

    Excluded: a newline (ripgrep refuses it), NUL (cannot be an argument), U+FFFD (in the
    file it is an undecodable byte, which ripgrep sees raw), surrogates (not encodable);
    under case folding, everything but ASCII, and "i"/"I" (see the module docstring).
    """
    if ch in "\n\0\ufffd" or "\ud800" <= ch <= "\udfff":
        return False
    if ignore_case:
        return ch.isascii() and ch not in "iI"
    return True


def _score(requirement: Requirement) -> tuple[int, bool, int]:
    """Longer literals first, then case-sensitive ones (more selective), then fewer."""
    shortest = min(len(text) for text, _ in requirement)
    exact = not any(icase for _, icase in requirement)
    return (shortest, exact, -len(requirement))


def _best(candidates: Sequence[Requirement]) -> Requirement | None:
    useful = [c for c in candidates if c and all(text for text, _ in c)]
    return max(useful, key=_score) if useful else None


def _required(
    items: Sequence[tuple[Any, Any]], flags: int, safe: Callable[[str, bool], bool]
) -> Requirement | None:
    """The best requirement of a sequence of parse-tree nodes, or None."""
    candidates: list[Requirement] = []
    ignore_case = bool(flags & re.IGNORECASE)
    run: list[str] = []

    def close_run() -> None:
        if run:
            candidates.append(frozenset({("".join(run), ignore_case)}))
            run.clear()

    for op, av in items:
        if op is _LITERAL:
            ch = chr(av)
            if safe(ch, ignore_case):
                run.append(ch)
            else:
                close_run()
            continue
        close_run()
        found: Requirement | None = None
        if op is _SUBPATTERN:
            _group, add_flags, del_flags, inner = av
            found = _required(inner, (flags | add_flags) & ~del_flags, safe)
        elif op in _REPEATS:
            minimum, _maximum, inner = av
            if minimum >= 1:
                found = _required(inner, flags, safe)
        elif op is _BRANCH:
            _none, branches = av
            alternatives = [_required(branch, flags, safe) for branch in branches]
            if all(alternatives):
                found = frozenset().union(*alternatives)  # type: ignore[arg-type]
        elif _ATOMIC is not None and op is _ATOMIC:
            found = _required(av, flags, safe)
        if found:
            candidates.append(found)
    close_run()
    return _best(candidates)


def required_literals(
    pattern: str, flags: int, safe: Callable[[str, bool], bool]
) -> Requirement | None:
    """Literals one of which every match of ``pattern`` contains (only ``safe`` characters)."""
    try:
        tree = _sre_parse.parse(pattern, flags)
    except Exception:  # pragma: no cover - the pattern compiled; a parser difference
        return None
    return _required(tree.data, tree.state.flags, safe)


@attrs.frozen(kw_only=True)
class GrepQuery:
    """A compiled Grep pattern and its prefilters."""

    pattern: str
    regex: re.Pattern[str]
    literals: Requirement | None  # for the Python backend
    rg_literals: Requirement | None  # for ripgrep's fixed-string prefilter
    line_filter: re.Pattern[str] | None  # finds candidate lines in decoded text
    byte_filter: re.Pattern[bytes] | None  # rejects files without any literal (exact case)
    byte_literals: tuple[bytes, ...] | None = None  # the same literals, for ``bytes.find``

    @property
    def rg_ignore_case(self) -> bool:
        return any(icase for _, icase in self.rg_literals or ())


def _line_filter(literals: Requirement) -> re.Pattern[str]:
    parts = sorted(
        f"(?i:{re.escape(text)})" if icase else re.escape(text) for text, icase in literals
    )
    return re.compile("|".join(parts))


def _byte_literals(literals: Requirement) -> tuple[bytes, ...] | None:
    """The literals as the file holds them, when every one is case-sensitive and its UTF-8
    form is what the file holds (no U+FFFD, which stands for undecodable bytes, and no
    surrogates)."""
    encoded: list[bytes] = []
    for text, icase in literals:
        if icase or "\ufffd" in text or any("\ud800" <= ch <= "\udfff" for ch in text):
            return None
        encoded.append(text.encode("utf-8"))
    return tuple(sorted(encoded))


def _byte_filter(literals: Requirement) -> re.Pattern[bytes] | None:
    """A bytes prefilter of the byte literals (one regex: an alternation)."""
    encoded = _byte_literals(literals)
    return None if encoded is None else re.compile(b"|".join(map(re.escape, encoded)))


MAX_SCANNED_LITERALS = 16
"""A file is scanned for each byte literal in the caller's process (linear time each);
beyond this many, it goes to the grep worker unscanned."""


def may_match(query: GrepQuery, data: bytes) -> bool:
    """Whether a file could hold a match: not binary, and (when known) one of the byte
    literals occurs in it. Linear in ``data``, so it is safe to run without a deadline."""
    if is_binary(data):
        return False
    found = query.byte_literals
    if found is None or len(found) > MAX_SCANNED_LITERALS:
        return True
    return any(literal in data for literal in found)


_MAX_REPEAT = _sre_constants.MAX_REPEAT
_MIN_REPEAT = _sre_constants.MIN_REPEAT
_UNBOUNDED = _sre_constants.MAXREPEAT


def _backtracking_repeat(items: Any, inside_repeat: bool = False) -> bool:
    """Whether the parsed regex nests an unbounded quantifier in another with nothing else.

    ``(a+)+``, ``(a*)*``, ``(\\w+\\s?)+``: a repeated body made only of repeats can split
    a run of characters in exponentially many ways, and Python's backtracking tries them
    all on a line that does not match (it cannot be interrupted from another thread). A
    body with a fixed part (``(\\s*,\\s*\\w+)*``) cannot, and passes. A heuristic that
    refuses the classic shape, not every slow regex. Spec: LIMIT-031.
    """
    for op, argument in items:
        if op in (_MAX_REPEAT, _MIN_REPEAT):
            _low, high, body = argument
            if inside_repeat and high == _UNBOUNDED:
                return True
            if high > 1 and _only_repeats(body) and _backtracking_repeat(body, True):
                return True
            if _backtracking_repeat(body, False):
                return True
        elif op == _SUBPATTERN:
            if _backtracking_repeat(argument[-1], inside_repeat):
                return True
        elif op == _BRANCH and any(_backtracking_repeat(b, False) for b in argument[1]):
            return True
    return False


def _only_repeats(items: Any) -> bool:
    """Every element of ``items`` is a quantifier (or a group of them)."""
    for op, argument in items:
        if op == _SUBPATTERN:
            if not _only_repeats(argument[-1]):
                return False
        elif op not in (_MAX_REPEAT, _MIN_REPEAT):
            return False
    return True


def compile_query(pattern: object, *, ignore_case: bool = False) -> GrepQuery:
    """Compile a Grep pattern; INVALID_ARGUMENT for anything Python's ``re`` rejects."""
    if not isinstance(pattern, str):
        raise ToolError(_errors.INVALID_ARGUMENT, "pattern must be a string")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        regex = re.compile(pattern, flags)
        parsed = _sre_parse.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise ToolError(
            _errors.INVALID_ARGUMENT,
            f"invalid regular expression: {str(exc)[:200]}",
            pattern=pattern[:200],
        ) from exc
    if _backtracking_repeat(parsed.data if hasattr(parsed, "data") else parsed):
        raise ToolError(
            _errors.TOO_LARGE,
            "the pattern nests a quantifier in another with nothing between them "
            "(like (a+)+), which backtracks exponentially; write the repeated part once",
            pattern=pattern[:200],
            limit="backtracking",
        )
    literals = required_literals(pattern, flags, python_safe)
    return GrepQuery(
        pattern=pattern,
        regex=regex,
        literals=literals,
        rg_literals=required_literals(pattern, flags, rg_safe),
        line_filter=_line_filter(literals) if literals else None,
        byte_filter=_byte_filter(literals) if literals else None,
        byte_literals=_byte_literals(literals) if literals else None,
    )


def decode_line(raw: bytes, first: bool) -> str:
    """One line's text as the search sees it: BOM dropped on line 1, no trailing CR."""
    if first and raw.startswith(BOM):
        raw = raw[len(BOM) :]
    text = raw.decode("utf-8", "replace")
    return text[:-1] if text.endswith("\r") else text


def is_binary(head: bytes) -> bool:
    """A NUL byte in the first 8 KiB makes a file binary."""
    return head.find(b"\0", 0, BINARY_SNIFF_BYTES) != -1
