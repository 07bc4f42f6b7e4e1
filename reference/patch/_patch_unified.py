"""Unified diffs (``diff -u``, ``diff -ruN``, ``git diff``) parsed into file operations.

Part of ``_patch_parse`` (which owns the types, the limits and the Codex format). A file
starts at a ``diff --git`` line or at a '--- ' line followed by a '+++ ' line; anything else
between files (a mail preamble, "Index:" lines, "Only in ...") is skipped. Hunk line counts
are validated both ways: a hunk that ends early or runs on is PATCH_SYNTAX.

Names: ``/dev/null`` (or, for ``diff -N``, an epoch timestamp with an empty range) marks an
absent side; git's prefixes are dropped (``a/``/``b/``, none with ``--no-prefix``, or custom
ones: whatever the ``diff --git`` line puts before the one path its names share), and so
are the two different top directories of ``diff -ru old/ new/``. When a traditional diff
names two different files, the '+++' name is patched (as ``git apply`` does); in a git diff
two names are a rename, and 'rename from/to' and 'copy from/to' name the paths exactly.
A name is quoted C-style when git quotes it (``core.quotePath``); a name with a space ends
at git's trailing tab.

git's extended headers: 'new file mode'/'new mode' give ``FileOp.executable`` (a mode change
alone is an update without hunks); a mode that is not a regular file's (a symbolic link,
a submodule) and a binary section ('GIT binary patch', 'Binary files ... differ') are
UNSUPPORTED, for the whole patch. A copy is ``COPY``: its source is read, not changed.
"""

from __future__ import annotations

import datetime
import re

import attrs

from editspec.reference._errors import UNSUPPORTED, ToolError
from editspec.reference.patch._patch_parse import (
    ADD,
    COPY,
    DELETE,
    UPDATE,
    Budget,
    FileOp,
    Hunk,
    syntax_error,
)

_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?(?: ([+-])(\d\d)(\d\d))?"
)
_OCTAL = re.compile(r"[0-3][0-7][0-7]")
_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)\Z", re.DOTALL)


_BINARY_MARKERS = ("Binary files ", "GIT binary patch")
_MODE_LINES = ("new file mode ", "deleted file mode ", "old mode ", "new mode ")
_NAME_LINES = ("rename from ", "rename to ", "copy from ", "copy to ")
_OTHER_GIT_LINES = ("index ", "similarity index ", "dissimilarity index ")


def parse_unified(
    lines: list[str], content: list[str], budget: Budget, first: int, *, exact: bool = True
) -> list[FileOp]:
    """Parse a unified diff from index ``first``.

    ``lines`` have the CR of a CRLF break removed (headers are read from them);
    ``content`` are the same lines as the hunks carry them: the file's bytes, a CR
    before the break included (``parse_patch`` passes ``lines`` again, and ``exact``
    False, when every break of the text is CRLF: a transport artifact). ``exact``: the
    hunks' lines carry their own line ends (``Hunk.exact_newlines``).
    """
    return _UnifiedParser(lines, content, budget, exact).parse(first)


@attrs.define
class _UnifiedParser:
    lines: list[str]
    content: list[str]
    budget: Budget
    exact: bool = True

    def parse(self, first: int) -> list[FileOp]:
        lines = self.lines
        ops: list[FileOp] = []
        seen_header = False
        i = first
        while i < len(lines):
            line = lines[i]
            if line.startswith("diff --git "):
                op, i = self._git_file(i)
            elif self._file_header_at(i):
                op, i = self._traditional_file(i)
            elif line.startswith("@@"):
                raise syntax_error(
                    i + 1, "a file header ('--- ' and '+++ ') before", "a stray hunk"
                )
            else:
                i += 1  # preamble, "Index:" lines, "Only in ...": not part of any file
                continue
            seen_header = True
            if op is not None:
                ops.append(op)
        if not seen_header:
            raise syntax_error(
                first + 1,
                "'*** Begin Patch' or a unified diff ('--- ' and '+++ ' lines)",
                "not a patch",
            )
        return ops

    def _file_header_at(self, i: int) -> bool:
        lines = self.lines
        return (
            i + 1 < len(lines) and lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ")
        )

    def _git_file(self, i: int) -> tuple[FileOp | None, int]:
        lines = self.lines
        self.budget.add_file(i + 1)
        new_file = deleted = False
        named: dict[str, str] = {}  # "rename from", "copy to", ...: names without prefix
        executable: bool | None = None
        j = i + 1
        while j < len(lines):
            line = lines[j]
            if line.startswith(_MODE_LINES):
                keyword, _, mode = line.rpartition(" ")
                kind = _executable(mode, j, lines[i])
                new_file = new_file or keyword == "new file mode"
                deleted = deleted or keyword == "deleted file mode"
                if keyword in ("new file mode", "new mode"):
                    executable = kind
            elif line.startswith(_NAME_LINES):
                verb, side, raw = line.split(" ", 2)
                named[f"{verb} {side}"] = _unquote(raw, j)
            elif line.startswith(_BINARY_MARKERS):
                raise ToolError(
                    UNSUPPORTED,
                    f"line {j + 1}: {lines[i][len('diff --git ') :]}: a binary patch cannot be "
                    "applied (only text diffs are); nothing was changed",
                    line=j + 1,
                )
            elif not line.startswith(_OTHER_GIT_LINES):
                break
            j += 1
        hunks: list[Hunk] = []
        old: str | None
        new: str | None
        header = lines[i][len("diff --git ") :]
        if self._file_header_at(j):
            old, new = self._names(j)
            hunks, j = self._hunks(j + 2)
            if not hunks:
                raise syntax_error(
                    j + 1, "a hunk header '@@ -start,count +start,count @@'", "no hunk"
                )
            old, new = _git_names(header, i, (old, new), needed=False)
        elif j < len(lines) and lines[j].startswith("--- "):
            raise syntax_error(
                j + 2, "a '+++ ' line after the '--- ' line", "incomplete file header"
            )
        else:
            old, new = _git_names(header, i, None, needed=not named)
        copied = "copy from" in named or "copy to" in named
        verb = "copy" if copied else "rename"
        if named and not {f"{verb} from", f"{verb} to"} <= set(named):
            raise syntax_error(
                i + 1, f"'{verb} from' and '{verb} to'", f"a {verb} without both names"
            )
        old = named.get(f"{verb} from", old)
        new = named.get(f"{verb} to", new)
        if new_file:
            old = None
        if deleted:
            new = None
        if copied:
            if old is None or new is None:
                raise syntax_error(i + 1, "'copy from' and 'copy to'", "a new or deleted copy")
            op = FileOp(
                op=COPY, path=old, move_to=new, content=None, hunks=tuple(hunks), source_line=i + 1
            )
        else:
            op = _file_op(old, new, hunks, i)
        if op.op == UPDATE and not op.hunks and op.move_to is None and executable is None:
            return None, j  # nothing at all for this file (``git diff -w`` prints such)
        return (op if deleted else attrs.evolve(op, executable=executable)), j

    def _traditional_file(self, i: int) -> tuple[FileOp, int]:
        self.budget.add_file(i + 1)
        old, new = _strip_traditional(*self._names(i))
        hunks, j = self._hunks(i + 2)
        if not hunks:
            raise syntax_error(j + 1, "a hunk header '@@ -start,count +start,count @@'", "no hunk")
        # diff -N names an absent file with a timestamp at the epoch and an empty range.
        if old is not None and _at_epoch(self.lines[i]) and all(_old_count(h) == 0 for h in hunks):
            old = None
        if (
            new is not None
            and _at_epoch(self.lines[i + 1])
            and all(_new_count(h) == 0 for h in hunks)
        ):
            new = None
        if old is not None and new is not None:
            old = new  # differing names: the "+++" name is the file to patch, as git apply does
        return _file_op(old, new, hunks, i), j

    def _names(self, i: int) -> tuple[str | None, str | None]:
        names = []
        for j in (i, i + 1):
            raw = self.lines[j][4:]
            if raw.startswith('"'):
                name = _unquote(raw, j)
            elif "\t" in raw:  # a timestamp follows, or git's tab after a name with spaces
                name = raw.split("\t", 1)[0]
            else:
                name = raw.rstrip()
            if not name:
                raise syntax_error(
                    j + 1, "a file name after '--- ' / '+++ '", "the name is missing"
                )
            names.append(None if name == "/dev/null" else name)
        return names[0], names[1]

    def _hunks(self, j: int) -> tuple[list[Hunk], int]:
        lines = self.lines
        hunks: list[Hunk] = []
        while j < len(lines) and lines[j].startswith("@@"):
            hunk, j = self._hunk(j)
            hunks.append(hunk)
        if j < len(lines) and _stray_hunk_line(lines, j):
            raise syntax_error(
                j + 1,
                "'@@' or the next file header",
                "the hunk has more lines than its header says",
            )
        return hunks, j

    def _hunk(self, start: int) -> tuple[Hunk, int]:
        lines = self.lines
        header = _HUNK_HEADER.match(lines[start])
        if header is None:
            raise syntax_error(
                start + 1,
                "a hunk header '@@ -start,count +start,count @@'",
                "malformed hunk header",
            )
        self.budget.add_hunk(start + 1)
        old_start = int(header.group(1))
        old_count = 1 if header.group(2) is None else int(header.group(2))
        new_count = 1 if header.group(4) is None else int(header.group(4))
        for count, first_line in ((old_count, old_start), (new_count, int(header.group(3)))):
            if count and not first_line:
                raise syntax_error(
                    start + 1, "a start line of at least 1 for a non-empty range", "line 0"
                )
        body: list[tuple[str, str]] = []
        old_seen = new_seen = 0
        old_closed = new_closed = False  # after "\ No newline" no line of that side may follow
        j = start + 1
        while (
            old_seen < old_count
            or new_seen < new_count
            or (j < len(lines) and lines[j].startswith("\\"))
        ):
            left = f"{old_count - old_seen} old and {new_count - new_seen} new line(s)"
            if j >= len(lines):
                raise syntax_error(
                    j + 1, f"{left} for the hunk at line {start + 1}", "the patch ends"
                )
            line = lines[j]
            if line.startswith("\\"):
                previous = lines[j - 1][:1] if j - 1 > start else ""
                if previous not in (" ", "-", "+", "") or not body or lines[j - 1].startswith("\\"):
                    raise syntax_error(j + 1, "a hunk line before it", "a misplaced '\\' line")
                old_closed = old_closed or previous in (" ", "-", "")
                new_closed = new_closed or previous in (" ", "+", "")
                j += 1
                continue
            kind = line[:1] or " "  # a bare empty line is an empty context line
            if kind not in (" ", "-", "+"):
                raise syntax_error(
                    j + 1, f"{left} for the hunk at line {start + 1}", "the hunk is short"
                )
            on_old, on_new = kind != "+", kind != "-"
            old_seen += on_old
            new_seen += on_new
            if old_seen > old_count or new_seen > new_count:
                raise syntax_error(
                    j + 1,
                    f"{left} for the hunk at line {start + 1}",
                    f"a {'removed' if kind == '-' else 'added' if kind == '+' else 'context'} "
                    "line beyond the counts in the hunk header",
                )
            if (on_old and old_closed) or (on_new and new_closed):
                raise syntax_error(j + 1, "the end of the hunk", "a line after '\\ No newline'")
            raw = self.content[j]
            # The text as the file holds it; a bare empty line is an empty context line.
            body.append((kind, raw[1:] if line else raw))
            j += 1
        hunk = Hunk(
            headers=(header.group(5),),
            lines=tuple(body),
            end_of_file=old_closed or new_closed,
            old_start=old_start,
            source_line=start + 1,
            old_missing_newline=old_closed,
            new_missing_newline=new_closed,
            exact_newlines=self.exact,
        )
        return hunk, j


def _stray_hunk_line(lines: list[str], j: int) -> bool:
    """A hunk-like line right after a complete hunk means the header undercounts."""
    line = lines[j]
    if line[:1] not in (" ", "-", "+") or line == "-- ":  # "-- ": a mail signature follows
        return False
    return not (line.startswith("--- ") and j + 1 < len(lines) and lines[j + 1].startswith("+++ "))


def _old_count(hunk: Hunk) -> int:
    return sum(kind != "+" for kind, _ in hunk.lines)


def _new_count(hunk: Hunk) -> int:
    return sum(kind != "-" for kind, _ in hunk.lines)


def _file_op(old: str | None, new: str | None, hunks: list[Hunk], i: int) -> FileOp:
    line = i + 1
    if old is None and new is None:
        raise syntax_error(line, "at least one side that is not /dev/null", "both sides are absent")
    if old is None:
        assert new is not None
        texts: list[str] = []
        missing_newline = False
        for hunk in hunks:
            if _old_count(hunk):
                raise syntax_error(hunk.source_line, "only '+' lines for a new file", "old lines")
            texts.extend(text for _, text in hunk.lines)
            missing_newline = hunk.new_missing_newline
        content = "\n".join(texts) + ("\n" if texts and not missing_newline else "")
        return FileOp(op=ADD, path=new, move_to=None, content=content, hunks=(), source_line=line)
    if new is None:
        for hunk in hunks:
            if _new_count(hunk):
                raise syntax_error(
                    hunk.source_line, "only '-' lines for a deleted file", "new lines"
                )
        # The last hunk of a deletion reaches the end of the file.
        deletion = (*hunks[:-1], attrs.evolve(hunks[-1], end_of_file=True)) if hunks else ()
        return FileOp(
            op=DELETE, path=old, move_to=None, content=None, hunks=deletion, source_line=line
        )
    move_to = new if new != old else None
    return FileOp(
        op=UPDATE, path=old, move_to=move_to, content=None, hunks=tuple(hunks), source_line=line
    )


def _strip_prefix(name: str | None, prefix: str) -> str | None:
    if name is not None and name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix) :]
    return name


def _strip_traditional(old: str | None, new: str | None) -> tuple[str | None, str | None]:
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


def _git_names(
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


def _executable(mode: str, j: int, header: str) -> bool:
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
        old, tail = _unquote(rest[: end + 1], i), rest[end + 1 :].lstrip(" ")
        new = _unquote(tail, i) if tail.startswith('"') else tail
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
            return rest[:cut], _unquote(rest[cut + 1 :], i)
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


def _unquote(raw: str, i: int) -> str:
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


def _at_epoch(header: str) -> bool:
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
