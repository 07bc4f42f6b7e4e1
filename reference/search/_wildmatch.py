"""Git's wildmatch, translated to Python regular expressions (DESIGN §4 "Glob").

Both the ignore rules (``_ignore``) and the Glob tool's patterns are wildmatch patterns;
this module turns one into the source of a regular expression for ``fullmatch``.

The translation follows git's ``wildmatch.c`` case by case, so that the ignore rules agree
with ``git`` itself (a property test holds them together):

* ``?`` is one unit, ``*`` any run of units; with ``pathname`` neither matches ``/``.
* ``**`` is special only with ``pathname``, as a whole segment: at the start of the
  pattern or after ``/``, and at its end or before ``/``. ``**/`` matches zero or more
  directories, a trailing ``/**`` everything below. Anywhere else ``**`` is ``*``.
* ``[...]`` is a bracket expression: ``!`` or ``^`` negates; a ``]`` first is literal;
  ``a-z`` ranges compare code units; ``\\`` escapes; POSIX classes (``[:alpha:]``) are
  ASCII-only, as git's own ctype table. With ``pathname`` it never matches ``/``. A bracket
  that is not closed, or names an unknown class, makes the whole pattern match nothing
  (git returns ``WM_ABORT_ALL``).
* ``\\x`` is a literal ``x``; a trailing lone backslash matches nothing.

A "unit" is a character for Glob patterns and a byte for ignore rules: git compares bytes,
so ``?`` against a two-byte UTF-8 name differs between the two. For byte semantics the
caller encodes the pattern and the subject as UTF-8 and maps bytes to characters one to
one with Latin-1 (``to_units``), and compiles the result as a ``bytes`` pattern.
"""

from __future__ import annotations

import itertools
import re
import sys

# The regular expression that matches nothing.
NEVER = "(?!)"

# Git's sane_ctype classes (ASCII only), as sets of code units.
_PRINT = frozenset(range(0x20, 0x7F))
_ALNUM = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_POSIX_CLASSES: dict[str, frozenset[int]] = {
    "alnum": _ALNUM,
    "alpha": frozenset(c for c in _ALNUM if not 0x30 <= c <= 0x39),
    "blank": frozenset(b" \t"),
    "cntrl": frozenset([*range(0x20), 0x7F]),
    "digit": frozenset(b"0123456789"),
    "graph": _PRINT - {0x20},
    "lower": frozenset(range(0x61, 0x7B)),
    "print": _PRINT,
    "punct": _PRINT - _ALNUM - {0x20},
    "space": frozenset(b" \t\n\r"),
    "upper": frozenset(range(0x41, 0x5B)),
    "xdigit": frozenset(b"0123456789ABCDEFabcdef"),
}

GLOB_SPECIAL = frozenset("*?[\\")


def to_units(text: str) -> str:
    """Bytes semantics: one character per UTF-8 byte of ``text`` (Latin-1 mapped)."""
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def has_wildcard(pattern: str) -> bool:
    """True when ``pattern`` contains a character wildmatch treats specially."""
    return any(ch in GLOB_SPECIAL for ch in pattern)


def simple_length(pattern: str) -> int:
    """Length of the literal prefix before the first special character (git's simple_length)."""
    for index, ch in enumerate(pattern):
        if ch in GLOB_SPECIAL:
            return index
    return len(pattern)


def _literal(ch: str) -> str:
    return re.escape(ch)


def _class_member(ch: str) -> str:
    if ch.isascii() and ch.isalnum():
        return ch
    if ch.isascii():
        return "\\" + ch
    return ch


def _bracket(pattern: str, start: int, pathname: bool) -> tuple[str, int] | None:
    """Translate the bracket expression at ``pattern[start] == "["``; None means abort.

    Returns the regex and the index just past the closing ``]``. Mirrors the do/while loop
    of wildmatch.c: the first member is taken before ``]`` is looked for, ``-`` makes a
    range only between a preceding member and a following non-``]``, and a ``[`` that does
    not open a valid ``[:class:]`` is an ordinary member.
    """
    end = len(pattern)
    index = start + 1
    if index >= end:
        return None
    negated = pattern[index] in "!^"
    if negated:
        index += 1
    singles: list[str] = []
    ranges: list[tuple[str, str]] = []
    classes: list[frozenset[int]] = []
    previous: str | None = None  # wildmatch's prev_ch; None stands for its 0
    while True:
        if index >= end:
            return None
        ch = pattern[index]
        current: str | None
        if ch == "\\":
            index += 1
            if index >= end:
                return None
            current = pattern[index]
            singles.append(current)
        elif ch == "-" and previous is not None and index + 1 < end and pattern[index + 1] != "]":
            index += 1
            high = pattern[index]
            if high == "\\":
                index += 1
                if index >= end:
                    return None
                high = pattern[index]
            ranges.append((previous, high))
            current = None
        elif ch == "[" and index + 1 < end and pattern[index + 1] == ":":
            name_start = index + 2
            close = name_start
            while close < end and pattern[close] != "]":
                close += 1
            if close >= end:
                return None
            if close - name_start - 1 < 0 or pattern[close - 1] != ":":
                # Not "[:name:]": the "[" is an ordinary member and ":" comes next.
                current = "["
                singles.append(current)
            else:
                members = _POSIX_CLASSES.get(pattern[name_start : close - 1])
                if members is None:
                    return None
                classes.append(members)
                current = None
                index = close
        else:
            current = ch
            singles.append(current)
        previous = current
        index += 1
        if index < end and pattern[index] == "]":
            break
    parts = [_class_member(ch) for ch in singles]
    for low, high in ranges:
        if low <= high:
            parts.append(f"{_class_member(low)}-{_class_member(high)}")
    for members in classes:
        parts.extend(_class_member(chr(unit)) for unit in sorted(members))
    body = "".join(parts)
    if negated:
        return f"[^{body}{'/' if pathname else ''}]", index + 1
    # Never empty: the first member is always taken (and a range's start is a member).
    return f"{'(?!/)' if pathname else ''}[{body}]", index + 1


_ATOMIC_NAMES = itertools.count()
ATOMIC_ADDS_GROUPS = sys.version_info < (3, 11)
"""Whether ``translate(..., atomic=True)`` adds (named) groups: before Python 3.11 ``re``
has no atomic group, and a lookahead with a backreference stands in for one."""


def _first_place(one: str, part: str) -> str:
    """Any run of ``one`` up to the first place ``part`` matches, never another place."""
    if not ATOMIC_ADDS_GROUPS:
        return f"(?>{one}*?{part})"
    name = f"w{next(_ATOMIC_NAMES)}"
    return f"(?=(?P<{name}>{one}*?{part}))(?P={name})"


def _piece(pattern: str, index: int, pathname: bool) -> tuple[str, int, bool] | None:
    """The fixed-length part of ``pattern`` from ``index`` up to the next ``*``, ``/`` or
    the end: its regex, where it ends, and whether a ``*`` ends it. None: abort (git's
    ``WM_ABORT_ALL``, as ``translate``)."""
    one = "[^/]" if pathname else "."
    out: list[str] = []
    end = len(pattern)
    while index < end:
        ch = pattern[index]
        if ch == "*":
            return "".join(out), index, True
        if ch == "/" and pathname:
            break
        if ch == "\\":
            if index + 1 >= end:
                return None
            out.append(_literal(pattern[index + 1]))
            index += 2
        elif ch == "?":
            out.append(one)
            index += 1
        elif ch == "[":
            bracket = _bracket(pattern, index, pathname)
            if bracket is None:
                return None
            regex, index = bracket
            out.append(regex)
        else:
            out.append(_literal(ch))
            index += 1
    return "".join(out), index, False


def translate(pattern: str, *, pathname: bool, atomic: bool = False) -> str:
    """Regex source (for ``fullmatch`` with DOTALL) equivalent to ``wildmatch(pattern, .)``.

    ``atomic``: a ``*`` followed (in the same segment, with ``pathname``) by a fixed-length
    part and another ``*`` takes the first place where that part matches, never trying
    another (an atomic group ``(?>[^/]*?PART)``; before Python 3.11, which has none,
    ``(?=(?P<w>[^/]*?PART))(?P=w)``). The first place is always right: the next ``*``
    can take whatever a later place would have skipped (with ``pathname`` no unit of the
    segment is a ``/``). So a pattern with many ``*`` is matched in linear time instead
    of backtracking through every split of a name (``*a*a*a*a*a*a*a*a*b`` against 250
    a's). The match is the same; where ``ATOMIC_ADDS_GROUPS``, only a caller that does
    not number groups may ask for it.
    """
    out: list[str] = []
    index = 0
    end = len(pattern)
    one = "[^/]" if pathname else "."
    while index < end:
        ch = pattern[index]
        if ch == "\\":
            if index + 1 >= end:
                return NEVER
            out.append(_literal(pattern[index + 1]))
            index += 2
        elif ch == "?":
            out.append(one)
            index += 1
        elif ch == "*":
            run_end = index
            while run_end < end and pattern[run_end] == "*":
                run_end += 1
            if pathname and run_end - index >= 2 and (index == 0 or pattern[index - 1] == "/"):
                if run_end == end:
                    out.append(".*")
                    index = run_end
                    continue
                if pattern[run_end] == "/":
                    out.append("(?:.*/)?")
                    index = run_end + 1
                    continue
                if pattern.startswith("\\/", run_end):
                    # git tries "no directory" only for an unescaped "/" (wildmatch.c).
                    out.append(".*/")
                    index = run_end + 2
                    continue
            if atomic:
                piece = _piece(pattern, run_end, pathname)
                if piece is None:
                    return NEVER
                part, piece_end, another_star = piece
                if another_star and part:
                    out.append(_first_place(one, part))
                    index = piece_end
                    continue
            out.append("[^/]*" if pathname else ".*")
            index = run_end
        elif ch == "[":
            bracket = _bracket(pattern, index, pathname)
            if bracket is None:
                return NEVER
            regex, index = bracket
            out.append(regex)
        else:
            out.append(_literal(ch))
            index += 1
    return "".join(out)


def compile_units(source: str) -> re.Pattern[bytes]:
    """Compile a translated pattern for byte subjects (see ``to_units``)."""
    return re.compile(source.encode("latin-1"), re.DOTALL)


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c}d`` -> ``["abd", "acd"]``, nested; unbalanced braces stay literal.

    Brace alternatives are a convenience of Glob tools (``**/*.{ts,tsx}``), not of
    gitignore; ``\\{`` is a literal brace.
    """
    depth = 0
    open_at = -1
    index = 0
    while index < len(pattern):
        ch = pattern[index]
        if ch == "\\":
            index += 2
            continue
        if ch == "{":
            if depth == 0:
                open_at = index
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[open_at + 1 : index]
                options = _split_top_level(inner)
                if len(options) < 2:
                    # "{x}" is not an alternative: keep the braces, expand what follows.
                    head = pattern[: index + 1]
                    return [head + rest for rest in expand_braces(pattern[index + 1 :])]
                prefix, suffix = pattern[:open_at], pattern[index + 1 :]
                results: list[str] = []
                for option in options:
                    for expanded in expand_braces(prefix + option + suffix):
                        if expanded not in results:
                            results.append(expanded)
                return results
        index += 1
    return [pattern]


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text):
            current.append(text[index : index + 2])
            index += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            index += 1
            continue
        current.append(ch)
        index += 1
    parts.append("".join(current))
    return parts
