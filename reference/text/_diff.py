"""Unified diffs of one file, computed around the changed region only.

Common leading and trailing lines are stripped first and ``difflib`` runs on the middle
with three lines of context either side, so a one-line change in a 10 MiB file costs a
linear scan, not a quadratic match. Lines keep their own endings (a CRLF file diffs
as CRLF lines); a last line without a newline is followed by the usual
``\\ No newline at end of file`` marker.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

CONTEXT = 3

# Above this many lines in the changed middle, matching is skipped and the middle is
# shown as one removal and one addition: still a correct diff, never a slow one.
_MATCH_LIMIT = 20_000

_NO_NEWLINE = "\\ No newline at end of file\n"

Opcode = tuple[str, int, int, int, int]


def split_lines(text: str) -> list[str]:
    """Split on ``\\n``, keeping each line's ending (a lone ``\\r`` does not split)."""
    lines = text.split("\n")
    result = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        result.append(lines[-1])
    return result


def _prefix_chars(a: str, b: str, known: int = 0) -> int:
    """Length of the common prefix of ``a`` and ``b`` (at least ``known``), compared chunk-wise."""
    limit = min(len(a), len(b))
    index, step = min(known, limit), 4096
    while index < limit:
        stop = min(limit, index + step)
        if a[index:stop] == b[index:stop]:
            index, step = stop, step * 2
            continue
        low, high = index, stop  # a[:low] matches; the first mismatch is before high
        while high - low > 1:
            middle = (low + high) // 2
            if a[low:middle] == b[low:middle]:
                low = middle
            else:
                high = middle
        return low
    return limit


def _suffix_chars(a: str, b: str, limit: int, known: int = 0) -> int:
    """Length of the common suffix of ``a`` and ``b`` (at least ``known``), at most ``limit``."""
    count, step = min(known, limit), 4096
    while count < limit:
        stop = min(limit, count + step)
        if a[len(a) - stop : len(a) - count] == b[len(b) - stop : len(b) - count]:
            count, step = stop, step * 2
            continue
        low, high = count, stop
        while high - low > 1:
            middle = (low + high) // 2
            if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
                low = middle
            else:
                high = middle
        return low
    return limit


def _changed_region(
    a: str, b: str, known_prefix: int = 0, known_suffix: int = 0
) -> tuple[int, int, int]:
    """``(start, end_a, end_b)``: the texts differ only in ``a[start:end_a]``/``b[start:end_b]``.

    ``start`` is a line start in both; ``end_a``/``end_b`` are line starts (or the ends),
    and ``a[end_a:] == b[end_b:]``.
    """
    start = a.rfind("\n", 0, _prefix_chars(a, b, known_prefix)) + 1
    common = _suffix_chars(a, b, min(len(a), len(b)) - start, known_suffix)
    end_a, end_b = len(a) - common, len(b) - common
    at_line_start = all(
        end == start or text[end - 1] == "\n" for text, end in ((a, end_a), (b, end_b))
    )
    if not at_line_start:
        # The common suffix begins inside a line: it keeps only its whole lines.
        newline = a.find("\n", end_a, len(a))
        skip = newline + 1 - end_a if newline >= 0 else common
        end_a, end_b = end_a + skip, end_b + skip
    return start, end_a, end_b


def _lines_back(text: str, position: int, count: int) -> int:
    """The start of the line ``count`` lines before the line starting at ``position``."""
    for _ in range(count):
        if position == 0:
            break
        position = text.rfind("\n", 0, position - 1) + 1
    return position


def _lines_forward(text: str, position: int, count: int) -> int:
    """The position ``count`` whole lines after the line start ``position`` (or the end)."""
    for _ in range(count):
        if position >= len(text):
            break
        newline = text.find("\n", position)
        position = len(text) if newline < 0 else newline + 1
    return position


def _format_range(start: int, stop: int) -> str:
    # As difflib does: "start,length" with a 1-based start, "start" alone for one line,
    # and the line before an empty range.
    beginning = start + 1
    length = stop - start
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _emit(prefix: str, line: str) -> Iterator[str]:
    if line.endswith("\n"):
        yield prefix + line
    else:
        yield prefix + line + "\n"
        yield _NO_NEWLINE


def _opcodes(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    if len(old) + len(new) > _MATCH_LIMIT:
        return [("replace", 0, len(old), 0, len(new))]
    return list(difflib.SequenceMatcher(None, old, new, autojunk=True).get_opcodes())


def _grouped(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """Hunks: ``difflib.SequenceMatcher.get_grouped_opcodes`` over precomputed opcodes."""
    if not codes:
        return
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    span = context + context
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        # An equal run longer than two contexts ends one hunk and starts the next.
        if tag == "equal" and i2 - i1 > span:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def unified_diff(
    relative: str,
    old_text: str,
    new_text: str,
    *,
    old_exists: bool = True,
    new_exists: bool = True,
    context: int = CONTEXT,
    known_prefix: int = 0,
    known_suffix: int = 0,
    known_prefix_newlines: int | None = None,
) -> str:
    """A unified diff of ``relative`` from ``old_text`` to ``new_text`` ("" when equal).

    ``old_exists=False`` labels the old side ``/dev/null`` (a created file), and
    ``new_exists=False`` the new side (a deleted file). ``known_prefix``/``known_suffix``:
    lengths the caller knows the texts share at their start and end (an editor knows
    where it changed the text), so the scan for the changed region starts there;
    ``known_prefix_newlines``, the number of ``\\n`` in ``old_text[:known_prefix]``,
    spares counting the lines before the change.
    """
    if old_text == new_text and old_exists == new_exists:
        return ""
    start, end_old, end_new = _changed_region(old_text, new_text, known_prefix, known_suffix)
    lead_start = _lines_back(old_text, start, context)
    trail_old = _lines_forward(old_text, end_old, context)
    trail_new = end_new + (trail_old - end_old)
    # The 0-based number of the window's first line.
    if known_prefix_newlines is None:
        lead = old_text.count("\n", 0, lead_start)
    elif lead_start <= known_prefix:
        lead = known_prefix_newlines - old_text.count("\n", lead_start, known_prefix)
    else:
        lead = known_prefix_newlines + old_text.count("\n", known_prefix, lead_start)
    old_window = split_lines(old_text[lead_start:trail_old])
    new_window = split_lines(new_text[lead_start:trail_new])
    head = old_text.count("\n", lead_start, start)
    tail = len(split_lines(old_text[end_old:trail_old]))
    middle_old = old_window[head : len(old_window) - tail]
    middle_new = new_window[head : len(new_window) - tail]
    # Opcodes over the window: equal context, the middle's own opcodes, equal context.
    codes: list[Opcode] = []
    if head:
        codes.append(("equal", 0, head, 0, head))
    for tag, i1, i2, j1, j2 in _opcodes(middle_old, middle_new):
        codes.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        codes.append(
            (
                "equal",
                len(old_window) - tail,
                len(old_window),
                len(new_window) - tail,
                len(new_window),
            )
        )
    old_label = f"a/{relative}" if old_exists else "/dev/null"
    new_label = f"b/{relative}" if new_exists else "/dev/null"
    out = [f"--- {old_label}\n", f"+++ {new_label}\n"]
    for group in _grouped(codes, context):
        first, last = group[0], group[-1]
        old_range = _format_range(first[1] + lead, last[2] + lead)
        new_range = _format_range(first[3] + lead, last[4] + lead)
        out.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in old_window[i1:i2]:
                    out.extend(_emit(" ", line))
                continue
            for line in old_window[i1:i2]:
                out.extend(_emit("-", line))
            for line in new_window[j1:j2]:
                out.extend(_emit("+", line))
    return "".join(out)
