"""Render Codex patches and unified diffs between two trees, for round-trip tests.

A tree maps a "/"-separated relative path to a file's text (with its original newlines).
``moves`` maps an old path to the new path it is renamed to; the new tree holds the
moved file under its new path. Everything here is independent of the engine's parser
and planner, so a round trip checks one against the other.

The Codex format cannot say that a file's newline style or final newline changes, nor
create a file that lacks a final newline or has CRLF newlines: callers keep those fixed.
Codex hunks are given enough context to match exactly once after the previous hunk,
as the format requires; unified hunks carry line numbers and ``\\ No newline at end of
file`` markers, and traditional (non-git) diffs cannot express renames or empty files.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

Tree = Mapping[str, str]
NO_NEWLINE = "\\ No newline at end of file"
_STAMP = "2024-05-06 07:08:09.000000000 +0000"


def split_lines(text: str) -> list[tuple[str, str]]:
    """``(content, terminator)`` per line, terminator "\\n", "\\r\\n" or "" (last line only)."""
    parts = text.split("\n")
    tail = parts.pop()
    lines = [(part[:-1], "\r\n") if part.endswith("\r") else (part, "\n") for part in parts]
    if tail:
        lines.append((tail, ""))
    return lines


def _changes(old_text: str, new_text: str) -> tuple[list[str], list[str], list[tuple[int, ...]]]:
    old = [content for content, _ in split_lines(old_text)]
    new = [content for content, _ in split_lines(new_text)]
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    changes = [tuple(code[1:]) for code in opcodes if code[0] != "equal"]
    return old, new, changes


def _count(lines: Sequence[str], block: Sequence[str], start: int) -> int:
    width = len(block)
    return sum(
        1 for at in range(start, len(lines) - width + 1) if list(lines[at : at + width]) == block
    )


def codex_hunks(
    old_text: str,
    new_text: str,
    *,
    context: int = 3,
    headers: int = 0,
    end_of_file_marker: bool = False,
    bare_first_hunk: bool = False,
) -> list[str]:
    """The hunk lines of a Codex ``*** Update File`` section (no line terminators)."""
    old, new, changes = _changes(old_text, new_text)
    out: list[str] = []
    cursor = 0  # the parser-side search starts after the previous hunk's old lines
    k = 0
    while k < len(changes):
        first = k
        start = max(cursor, changes[k][0] - context)
        end = min(len(old), changes[k][1] + context)
        while True:
            while k + 1 < len(changes) and changes[k + 1][0] <= end:
                k += 1
                end = max(end, min(len(old), changes[k][1] + context))
            if end > start and _count(old, old[start:end], cursor) == 1:
                break
            if end < len(old):
                end += 1
            elif start > cursor:
                start -= 1
            else:
                break  # everything from the cursor on: unique, or an insertion at the end
        if end > start and headers:
            candidates = [
                line
                for line in old[cursor:start]
                if line and line == line.strip() and not line.startswith(("-", "@", "*"))
            ]
            chosen = candidates[-headers:]
        else:
            chosen = []
        body: list[str] = []
        at = start
        for i1, i2, j1, j2 in changes[first : k + 1]:
            body.extend(" " + line for line in old[at:i1])
            body.extend("-" + line for line in old[i1:i2])
            body.extend("+" + line for line in new[j1:j2])
            at = i2
        body.extend(" " + line for line in old[at:end])
        if chosen:
            out.extend("@@ " + header for header in chosen)
        elif not (bare_first_hunk and not out and body[0].strip()):
            out.append("@@")
        out.extend(body)
        if end_of_file_marker and end == len(old):
            out.append("*** End of File")
        cursor = end
        k += 1
    return out


def render_codex(
    old: Tree,
    new: Tree,
    *,
    moves: Mapping[str, str] | None = None,
    context: int = 3,
    headers: int = 0,
    end_of_file_marker: bool = False,
    bare_first_hunk: bool = False,
    crlf: bool = False,
) -> str:
    """A Codex patch that turns ``old`` into ``new``; ``crlf`` writes it with CRLF lines."""
    moves = dict(moves or {})
    out = ["*** Begin Patch"]
    targets = set(moves.values())
    for path in sorted(set(old) | set(new)):
        if path in moves:
            out += [f"*** Update File: {path}", f"*** Move to: {moves[path]}"]
            out += codex_hunks(
                old[path],
                new[moves[path]],
                context=context,
                headers=headers,
                end_of_file_marker=end_of_file_marker,
                bare_first_hunk=bare_first_hunk,
            )
        elif path in targets:
            continue
        elif path not in new:
            out.append(f"*** Delete File: {path}")
        elif path not in old:
            out.append(f"*** Add File: {path}")
            out += ["+" + content for content, _ in split_lines(new[path])]
        elif old[path] != new[path]:
            hunks = codex_hunks(
                old[path],
                new[path],
                context=context,
                headers=headers,
                end_of_file_marker=end_of_file_marker,
                bare_first_hunk=bare_first_hunk,
            )
            if hunks:
                out += [f"*** Update File: {path}", *hunks]
    out.append("*** End Patch")
    newline = "\r\n" if crlf else "\n"
    return newline.join(out) + newline


def _range(start: int, count: int, omit_single_counts: bool) -> str:
    if count == 0:
        return f"{start},0"  # an empty range names the line before it
    if count == 1 and omit_single_counts:
        return f"{start + 1}"
    return f"{start + 1},{count}"


def unified_hunks(
    old_text: str, new_text: str, *, context: int = 3, omit_single_counts: bool = True
) -> str:
    """The hunks of a unified diff, each line with its original terminator, as diff writes."""
    old, new = split_lines(old_text), split_lines(new_text)
    # A last line without its newline differs from the same text with one.
    old_keys = [(content, bool(ending)) for content, ending in old]
    new_keys = [(content, bool(ending)) for content, ending in new]
    if old_keys == new_keys:
        return ""
    out: list[str] = []

    def emit(prefix: str, line: tuple[str, str]) -> None:
        content, ending = line
        out.append(prefix + content + (ending or "\n"))
        if not ending:
            out.append(NO_NEWLINE + "\n")

    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        old_range = _range(i1, i2 - i1, omit_single_counts)
        new_range = _range(j1, j2 - j1, omit_single_counts)
        out.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                for line in old[a1:a2]:
                    emit(" ", line)
                continue
            for line in old[a1:a2]:
                emit("-", line)
            for line in new[b1:b2]:
                emit("+", line)
    return "".join(out)


def render_unified(
    old: Tree,
    new: Tree,
    *,
    moves: Mapping[str, str] | None = None,
    context: int = 3,
    git: bool = True,
    prefixes: bool = True,
    omit_single_counts: bool = True,
) -> str:
    """A unified diff that turns ``old`` into ``new``: ``git diff`` style or ``diff -u``."""
    moves = dict(moves or {})
    if moves and not git:
        raise ValueError("a traditional diff cannot express a rename")
    src, dst = ("a/", "b/") if prefixes else ("", "")
    out: list[str] = []
    targets = set(moves.values())
    for path in sorted(set(old) | set(new)):
        if path in targets and path not in moves:
            continue
        before = old.get(path)
        target = moves.get(path, path)
        after = new.get(target)
        hunks = unified_hunks(
            before or "", after or "", context=context, omit_single_counts=omit_single_counts
        )
        old_name = "/dev/null" if before is None else src + path
        new_name = "/dev/null" if after is None else dst + target
        if git:
            out.append(f"diff --git a/{path} b/{target}\n")
            if before is None:
                out.append("new file mode 100644\n")
            elif after is None:
                out.append("deleted file mode 100644\n")
            elif target != path:
                out += ["similarity index 90%\n", f"rename from {path}\n", f"rename to {target}\n"]
            elif not hunks:
                out.pop()
                continue
            if hunks:
                out += [f"--- {old_name}\n", f"+++ {new_name}\n", hunks]
        else:
            if not hunks:
                if before != after:
                    raise ValueError(f"a traditional diff cannot express {path}")
                continue
            old_stamp = "" if before is None else "\t" + _STAMP
            new_stamp = "" if after is None else "\t" + _STAMP
            out += [f"--- {old_name}{old_stamp}\n", f"+++ {new_name}{new_stamp}\n", hunks]
    return "".join(out)
