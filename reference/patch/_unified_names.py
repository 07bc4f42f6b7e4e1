"""File names and modes in unified diff headers: prefixes, git's quoting, timestamps.

The header helpers of ``_patch_unified``: ``strip_traditional`` drops the ``a/``/``b/``
(or any common first component) of ``---``/``+++`` names, ``git_names`` reads the names
of a ``diff --git`` line, ``unquote`` git's C-style quoted names, ``executable_mode`` a
git mode line, and ``at_epoch`` says whether a header's timestamp is the epoch (``diff
-N``'s mark of a missing file).
"""

from __future__ import annotations

import datetime
import re

from editspec.reference._errors import UNSUPPORTED, ToolError
from editspec.reference.patch._patch_model import syntax_error

_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?(?: ([+-])(\d\d)(\d\d))?"
)
_OCTAL = re.compile(r"[0-3][0-7][0-7]")


def _strip_prefix(name: str | None, prefix: str) -> str | None:
    if name is not None and name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix) :]
    return name


def strip_traditional(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop the directory prefixes of ``diff -ru a/ b/``-style names."""
    if old is None or new is None:
        return _strip_prefix(old, "a/"), _strip_prefix(new, "b/")
    if old.startswith("a/") and new.startswith("b/"):
        return old[2:], new[2:]
    old_head, _, old_rest = old.partition("/")
    new_head, _, new_rest = new.partition("/")
    if old_rest and old_rest == new_rest and old_head != new_head:
        return old_rest, new_rest
    return old, new


def git_names(
    header: str,
    i: int,
    sides: tuple[str | None, str | None] | None,
    *,
    needed: bool,
) -> tuple[str | None, str | None]:
    """The names of a git diff's file with git's prefixes dropped.

    ``sides``: the '---'/'+++' names (None for /dev/null), or None when the diff has no
    such lines. The prefixes are what the ``diff --git`` line puts before the one path
    both of its names share: ``a/`` and ``b/``, none (``--no-prefix``) or custom ones
    (``--src-prefix``/``--dst-prefix``). When its names differ (a rename or copy, whose
    'rename from'/'copy to' lines the caller prefers; ``git diff --no-index`` of two
    files), ``a/`` and ``b/`` are dropped if they are there.
    """
    try:
        head: tuple[str, str] | None = _git_header_names(header, i)
    except ToolError:
        if needed:
            raise
        head = None
    prefixes = _prefixes(*head) if head is not None else None
    old_prefix, new_prefix = prefixes if prefixes is not None else ("a/", "b/")
    if sides is None:
        if head is None:
            return None, None
        sides = head
    return _strip_prefix(sides[0], old_prefix), _strip_prefix(sides[1], new_prefix)


def _prefixes(old: str, new: str) -> tuple[str, str] | None:
    """The shortest leading components that make ``old`` and ``new`` the same path."""
    for count in range(min(old.count("/"), new.count("/")) + 1):
        old_rest, new_rest = _drop_components(old, count), _drop_components(new, count)
        if old_rest == new_rest and old_rest:
            return old[: len(old) - len(old_rest)], new[: len(new) - len(new_rest)]
    return None


def _drop_components(name: str, count: int) -> str:
    for _ in range(count):
        name = name.partition("/")[2]
    return name


def executable_mode(mode: str, j: int, header: str) -> bool:
    """Whether a git mode is an executable file; other kinds of entry are UNSUPPORTED."""
    if not re.fullmatch(r"[0-7]{6}", mode):
        raise syntax_error(j + 1, "an octal git mode such as 100644", f"bad mode {mode!r}")
    value = int(mode, 8)
    if value >> 12 != 0o10:  # 120000: a symbolic link, 160000: a submodule
        kind = {0o12: "a symbolic link", 0o16: "a submodule (gitlink)"}.get(
            value >> 12, "not a regular file"
        )
        raise ToolError(
            UNSUPPORTED,
            f"line {j + 1}: {header[len('diff --git ') :]}: mode {mode} is {kind}; only "
            "regular files are patched; nothing was changed",
            line=j + 1,
            mode=mode,
        )
    return bool(value & 0o100)


def _git_header_names(rest: str, i: int) -> tuple[str, str]:
    """Both names of a ``diff --git`` line, needed only when no '---'/'+++' lines follow."""
    if rest.startswith('"'):
        end = _closing_quote(rest, i)
        old, tail = unquote(rest[: end + 1], i), rest[end + 1 :].lstrip(" ")
        new = unquote(tail, i) if tail.startswith('"') else tail
        if new:
            return old, new
    else:
        # Without quotes a name may contain spaces: both names are equal but for prefixes
        # of one length (a/ and b/, none, or custom ones).
        middle = len(rest) // 2
        if rest[middle : middle + 1] == " " and _prefixes(rest[:middle], rest[middle + 1 :]):
            return rest[:middle], rest[middle + 1 :]
        if ' "' in rest:
            cut = rest.index(' "')
            return rest[:cut], unquote(rest[cut + 1 :], i)
        if " b/" in rest:
            cut = rest.index(" b/")
            return rest[:cut], rest[cut + 1 :]
    raise syntax_error(i + 1, "'diff --git a/<path> b/<path>'", "cannot read the file names")


def _closing_quote(text: str, i: int) -> int:
    k = 1
    while k < len(text):
        if text[k] == "\\":
            k += 2
        elif text[k] == '"':
            return k
        else:
            k += 1
    raise syntax_error(i + 1, "a closing '\"' in the quoted file name", "unterminated name")


def unquote(raw: str, i: int) -> str:
    """Decode a name git quoted C-style (``"a/t\\303\\251st"``); others pass unchanged."""
    if not raw.startswith('"'):
        return raw
    end = _closing_quote(raw, i)
    body, out, k = raw[1:end], bytearray(), 0
    while k < len(body):
        char = body[k]
        if char != "\\":
            out += char.encode("utf-8", "surrogatepass")
            k += 1
        elif _OCTAL.fullmatch(body[k + 1 : k + 4]):
            out.append(int(body[k + 1 : k + 4], 8))
            k += 4
        elif body[k + 1 : k + 2] in _C_ESCAPES:
            out.append(_C_ESCAPES[body[k + 1]])
            k += 2
        else:
            raise syntax_error(i + 1, "a C escape in the quoted name", "a bad escape")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise syntax_error(i + 1, "a UTF-8 file name", "an undecodable quoted name") from None


def at_epoch(header: str) -> bool:
    """Whether a '---'/'+++' line carries the epoch timestamp ``diff -N`` gives absent files."""
    _, tab, stamp = header.partition("\t")
    found = _TIMESTAMP.match(stamp.strip()) if tab else None
    if found is None:
        return False
    year, month, day, hour, minute, second = (int(found.group(n)) for n in range(1, 7))
    sign, off_hours, off_minutes = found.group(7), found.group(8), found.group(9)
    offset = 0
    if sign is not None:
        offset = (int(off_hours) * 60 + int(off_minutes)) * (1 if sign == "+" else -1)
    try:
        zone = datetime.timezone(datetime.timedelta(minutes=offset))
        moment = datetime.datetime(year, month, day, hour, minute, second, tzinfo=zone)
    except ValueError:
        return False
    return moment == _EPOCH
