"""The portable subset of gitignore syntax: what ripgrep's parser reads as git does.

``portable_syntax(content)`` says whether every line of an ignore file stays inside
the subset, so that ripgrep may walk a tree with it (``_rg_tree.walks_alike``); any
other file makes Grep hand ripgrep the engine's own file list instead.
"""

from __future__ import annotations

import re

# A bracket expression read alike: ASCII letters, digits, "." and "_", and ranges of them
# in order, optionally negated ("[!...]" or "[^...]"). Not: POSIX classes, "]" or "-" as
# members, escapes, "/", chained or reversed ranges, an unclosed "[".
_PORTABLE_CLASS = re.compile(r"\[[!^]?(?:[A-Za-z0-9._](?:-[A-Za-z0-9._])?)+\]")
_RANGE = re.compile(r"(.)-(.)")


def _portable_segment(segment: str) -> bool:
    if segment == "**":
        return True
    if not segment or "**" in segment:
        return False
    index = 0
    while index < len(segment):
        ch = segment[index]
        if ch == "[":
            found = _PORTABLE_CLASS.match(segment, index)
            if found is None or any(a > b for a, b in _RANGE.findall(found.group())):
                return False
            index = found.end()
            continue
        if ch in "\\]{}" or (ch.isspace() and ch != " ") or not ch.isprintable():
            return False
        index += 1
    return True


def _portable_line(line: str) -> bool:
    """One line of an ignore file (newline, CR and trailing spaces dropped), not a comment."""
    body = line[1:] if line.startswith("!") else line
    if body.startswith("/"):
        body = body[1:]
    if body.endswith("/"):
        body = body[:-1]
    if not body:
        return False  # "!", "/", "!/": lines git drops, ripgrep may not
    return all(_portable_segment(segment) for segment in body.split("/"))


def portable_syntax(content: bytes) -> bool:
    """Whether ripgrep's gitignore parser reads these ignore-file bytes as git does.

    A conservative subset (ripgrep's ``ignore`` crate and git differ on escapes, braces,
    POSIX classes and odd bracket expressions, tabs and other trailing whitespace,
    several BOMs, lines that are not UTF-8); inside it both keep the same rules, with
    the same negation, anchoring, directory-only, "**", "*", "?" and bracket meaning
    (bytes, not characters, for both).
    """
    if b"\0" in content:
        return False
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    text = text.removeprefix("\ufeff")
    if text.startswith("\ufeff"):
        return False  # git drops one BOM, ripgrep all of them
    for line in text.split("\n"):
        line = line.removesuffix("\r").rstrip(" ")
        if line and not line.startswith("#") and not _portable_line(line):
            return False
    return True
