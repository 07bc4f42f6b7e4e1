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

import re

import attrs

from editspec.reference._errors import UNSUPPORTED, ToolError
from editspec.reference.patch._patch_model import (
    ADD,
    COPY,
    DELETE,
    UPDATE,
    Budget,
    FileOp,
    Hunk,
    syntax_error,
)
from editspec.reference.patch._unified_names import (
    at_epoch,
    executable_mode,
    git_names,
    strip_traditional,
    unquote,
)

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
                kind = executable_mode(mode, j, lines[i])
                new_file = new_file or keyword == "new file mode"
                deleted = deleted or keyword == "deleted file mode"
                if keyword in ("new file mode", "new mode"):
                    executable = kind
            elif line.startswith(_NAME_LINES):
                verb, side, raw = line.split(" ", 2)
                named[f"{verb} {side}"] = unquote(raw, j)
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
            old, new = git_names(header, i, (old, new), needed=False)
        elif j < len(lines) and lines[j].startswith("--- "):
            raise syntax_error(
                j + 2, "a '+++ ' line after the '--- ' line", "incomplete file header"
            )
        else:
            old, new = git_names(header, i, None, needed=not named)
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
        old, new = strip_traditional(*self._names(i))
        hunks, j = self._hunks(i + 2)
        if not hunks:
            raise syntax_error(j + 1, "a hunk header '@@ -start,count +start,count @@'", "no hunk")
        # diff -N names an absent file with a timestamp at the epoch and an empty range.
        if old is not None and at_epoch(self.lines[i]) and all(_old_count(h) == 0 for h in hunks):
            old = None
        if (
            new is not None
            and at_epoch(self.lines[i + 1])
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
                name = unquote(raw, j)
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
