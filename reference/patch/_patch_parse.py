"""Parse patch text into file operations: the Codex apply_patch format and unified diffs.

Both formats produce one ``ParsedPatch``; nothing here reads the disk. Limits are checked
before any work that scales with them: the byte length and the line count first, then
files and hunks are counted as they are met and the first excess fails.

Codex format (DESIGN §4, ApplyPatch)::

    *** Begin Patch
    *** Add File: path          followed by "+" lines (the whole new text)
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       optional, right after Update File
    @@ optional header          one or more nested header lines, then " ", "-", "+" lines
    *** End of File             optional: the hunk must match at the end of the file
    *** End Patch

Tolerated, as the Codex tools tolerate it: CRLF patch text, whitespace around the marker
lines, blank lines between operations, a first hunk without "@@", a bare empty line
inside a hunk as an empty context line (trailing ones are dropped as separators), and a
unified-style "@@ -a,b +c,d @@" hunk header (its old start becomes a line hint).

Unified diffs: ``diff -u`` / ``diff -ruN`` and ``git diff`` output, several files, with
git's extended headers (new/deleted file mode, old/new mode, rename and copy from/to),
``/dev/null``, epoch timestamps for absent files (``diff -N``), git's prefixes (``a/`` and
``b/``, none, or custom ones) and ``\\ No newline at end of file``. Hunk line counts are
validated both ways. Their lines are the file's bytes, as ``git apply`` reads them: a CR
before a line break is content (``Hunk.exact_newlines``), except in a text whose every
line break is CRLF, headers included (``crlf_transport``). Binary patches, symbolic links
and submodules are UNSUPPORTED.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

import attrs

from editspec.reference._arguments import EXCERPT_CHARS, excerpt
from editspec.reference._errors import INVALID_ARGUMENT, TOO_LARGE, ToolError
from editspec.reference._limits import Limits
from editspec.reference.patch import _patch_unified
from editspec.reference.patch._patch_model import (
    ADD,
    CODEX,
    COPY,
    DELETE,
    UNIFIED,
    UPDATE,
    Budget,
    FileOp,
    Hunk,
    ParsedPatch,
    syntax_error,
)

_BEGIN = "*** Begin Patch"
_END = "*** End Patch"
_ADD_FILE = "*** Add File:"
_DELETE_FILE = "*** Delete File:"
_UPDATE_FILE = "*** Update File:"
_MOVE_TO = "*** Move to:"
_END_OF_FILE = "*** End of File"
_FILE_MARKERS = f"'{_ADD_FILE} ', '{_DELETE_FILE} ', '{_UPDATE_FILE} '"

_RANGE_HEADER = re.compile(r"-(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@(.*)\Z", re.DOTALL)


def _shown(text: str) -> str:
    """A path or name of the patch as a message quotes it: whole if short, else an excerpt
    (a patch of 1 MiB must not come back as a 1 MiB error)."""
    return text if len(text) <= EXCERPT_CHARS else excerpt(text)


def _quoted(line: str) -> str:
    """A line of the patch, quoted, as ``_shown`` bounds it."""
    return repr(line) if len(line) <= EXCERPT_CHARS else excerpt(line)


def parse_patch(text: str, limits: Limits) -> ParsedPatch:
    """Parse a Codex patch or a unified diff. Spec: PATCH-001, LIMIT-001."""
    _check_size(text, limits)
    raw = text.split("\n")
    if text.endswith("\n"):
        raw.pop()  # the terminator of the last line starts no line
    lines = [line[:-1] if line.endswith("\r") else line for line in raw]
    budget = Budget(limits)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise syntax_error(1, "'*** Begin Patch' or a unified diff", "the patch is empty")
    if lines[first].strip() == _BEGIN:
        ops, fmt = _CodexParser(lines, budget).parse(first), CODEX
    elif lines[first].strip().startswith("*** "):
        raise syntax_error(
            first + 1, f"'{_BEGIN}'", "the patch does not start with the begin marker"
        )
    else:
        # A unified diff's lines are the file's bytes: a CR before the line break is
        # content, unless every line of the text ends in CRLF (a transport artifact: the
        # CRs go, and the hunks carry no line ends of their own, as in the Codex format).
        transport = crlf_transport(text)
        # A naive conversion turns a CRLF line into "\r\r\n": every CR before the break goes.
        content = [line.rstrip("\r") for line in raw] if transport else raw
        ops = _patch_unified.parse_unified(lines, content, budget, first, exact=not transport)
        fmt = UNIFIED
    if not ops:
        raise syntax_error(first + 1, "at least one file operation", "the patch changes no file")
    _check_unique_paths(ops)
    return ParsedPatch(format=fmt, ops=tuple(ops))


def crlf_transport(text: str) -> bool:
    """Whether every line break of ``text`` is CRLF: line breaks added in transport.

    ``diff`` and ``git diff`` end their own lines (headers, hunk headers, markers) with LF
    whatever the files hold, so a diff whose every line, headers included, ends in CRLF
    went through a conversion (a Windows clipboard, an editor, a mail client) that added
    one CR to every line (a line that had one then ends in two). The CRs before each line
    break are removed, and the diff says nothing about line ends: its lines are matched
    and added in the file's newline style, as a Codex patch's are
    (so a CRLF file stays CRLF, as ``git apply`` leaves it, and an LF file gains no CR).
    Anywhere else a CR before a line break is content.
    """
    breaks = text.count("\n")
    return breaks > 0 and text.count("\r\n") == breaks


def _check_size(text: str, limits: Limits) -> None:
    # A character is at least one byte: a text longer than the limit needs no encoding.
    if len(text) > limits.patch_bytes:
        size = len(text)
    else:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.patch_bytes:
        raise ToolError(
            TOO_LARGE,
            f"the patch has more than {limits.patch_bytes} bytes",
            limit="patch_bytes",
            maximum=limits.patch_bytes,
        )
    count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if count > limits.patch_lines:
        raise ToolError(
            TOO_LARGE,
            f"the patch has {count} lines, more than {limits.patch_lines}",
            limit="patch_lines",
            maximum=limits.patch_lines,
            actual=count,
        )


def _check_unique_paths(ops: Sequence[FileOp]) -> None:
    """The same path twice in one patch is INVALID_ARGUMENT. Spec: PATCH-010."""
    # Lexical only: aliases through symlinks are the transaction's to catch (canonical keys).
    seen: dict[str, int] = {}
    for op in ops:
        # A copy only reads its source: git names a file it also modifies as one.
        for path in (op.move_to,) if op.op == COPY else (op.path, op.move_to):
            if path is None:
                continue
            key = posixpath.normpath(path)
            if key in seen:
                raise ToolError(
                    INVALID_ARGUMENT,
                    f"line {op.source_line}: {_shown(path)} is already named by the operation at "
                    f"line {seen[key]}; a patch may name each path once",
                    path=path,
                    line=op.source_line,
                    first_line=seen[key],
                )
            seen[key] = op.source_line


# --------------------------------------------------------------------------- Codex format


@attrs.define
class _CodexParser:
    lines: list[str]
    budget: Budget
    end: int = 0

    def parse(self, begin: int) -> list[FileOp]:
        lines = self.lines
        self.end = max(i for i, line in enumerate(lines) if line.strip())
        if self.end != begin and lines[self.end].strip() != _END:
            for k in range(begin + 1, self.end):
                if lines[k].strip() == _END:
                    raise syntax_error(k + 2, f"nothing after '{_END}'", "text after the end")
        if self.end == begin or lines[self.end].strip() != _END:
            expected = f"{_FILE_MARKERS} or '{_END}'" if self.end == begin else f"'{_END}'"
            raise syntax_error(self.end + 2, expected, f"the patch ends without '{_END}'")
        ops: list[FileOp] = []
        i = begin + 1
        while i < self.end:
            marker = lines[i].strip()
            if not marker:
                i += 1
            elif marker.startswith(_ADD_FILE):
                i = self._add_file(i, ops)
            elif marker.startswith(_DELETE_FILE):
                self.budget.add_file(i + 1)
                path = self._path(i, _DELETE_FILE)
                ops.append(
                    FileOp(
                        op=DELETE,
                        path=path,
                        move_to=None,
                        content=None,
                        hunks=(),
                        source_line=i + 1,
                    )
                )
                i += 1
            elif marker.startswith(_UPDATE_FILE):
                i = self._update_file(i, ops)
            elif marker == _END:
                raise syntax_error(i + 2, f"nothing after '{_END}'", "text after the end")
            else:
                raise syntax_error(
                    i + 1, f"{_FILE_MARKERS} or '{_END}'", f"unexpected line {_quoted(lines[i])}"
                )
        return ops

    def _path(self, i: int, marker: str) -> str:
        path = self.lines[i].strip()[len(marker) :].strip()
        if not path:
            raise syntax_error(i + 1, f"a path after '{marker}'", "the path is missing")
        return path

    def _add_file(self, i: int, ops: list[FileOp]) -> int:
        self.budget.add_file(i + 1)
        path = self._path(i, _ADD_FILE)
        j = i + 1
        content: list[str] = []
        while j < self.end and self.lines[j].startswith("+"):
            content.append(self.lines[j][1:] + "\n")
            j += 1
        ops.append(
            FileOp(
                op=ADD,
                path=path,
                move_to=None,
                content="".join(content),
                hunks=(),
                source_line=i + 1,
            )
        )
        return j

    def _update_file(self, i: int, ops: list[FileOp]) -> int:
        self.budget.add_file(i + 1)
        lines, end = self.lines, self.end
        path = self._path(i, _UPDATE_FILE)
        j = i + 1
        move_to = None
        if j < end and lines[j].strip().startswith(_MOVE_TO):
            move_to = self._path(j, _MOVE_TO)
            j += 1
        hunks: list[Hunk] = []
        while j < end:
            line = lines[j]
            if not line.strip():
                j += 1  # blank lines before the first hunk or after an end-of-file hunk
            elif line.startswith("*"):
                if line.strip() == _END_OF_FILE:
                    raise syntax_error(j + 1, "hunk lines before '*** End of File'", "empty hunk")
                break  # the next operation, or a stray marker the operation loop reports
            elif line.startswith("@@") or (not hunks and line[0] in (" ", "-", "+")):
                hunk, j = self._hunk(j)
                hunks.append(hunk)
            elif line[0] in (" ", "-", "+"):
                raise syntax_error(
                    j + 1, "'@@' after '*** End of File'", "a hunk line after the end"
                )
            else:
                raise syntax_error(
                    j + 1,
                    f"a hunk line (' ', '-', '+'), '@@', '{_END_OF_FILE}' or a file operation",
                    f"unexpected line {_quoted(line)}",
                )
        if not hunks and move_to is None:
            raise syntax_error(
                i + 1, f"a hunk ('@@') or '{_MOVE_TO} '", f"nothing to update in {_shown(path)}"
            )
        ops.append(
            FileOp(
                op=UPDATE,
                path=path,
                move_to=move_to,
                content=None,
                hunks=tuple(hunks),
                source_line=i + 1,
            )
        )
        return j

    def _hunk(self, start: int) -> tuple[Hunk, int]:
        lines, end = self.lines, self.end
        self.budget.add_hunk(start + 1)
        headers: list[str] = []
        old_start: int | None = None
        j = start
        while j < end and lines[j].startswith("@@"):
            header = lines[j][2:].strip()
            ranged = _RANGE_HEADER.match(header)
            if ranged:  # "@@ -12,3 +12,4 @@ text": a unified header; its start is a hint
                old_start, header = int(ranged.group(1)), ranged.group(2).strip()
            if header:
                headers.append(header)
            j += 1
        body_start = j
        body: list[tuple[str, str]] = []
        bare_tail = 0  # trailing bare empty lines: separators, unless the hunk ends the file
        end_of_file = False
        while j < end:
            line = lines[j]
            if line.startswith("*"):
                if line.strip() == _END_OF_FILE:
                    end_of_file = True
                    j += 1
                break
            if line.startswith("@@"):
                break
            if line == "":
                body.append((" ", ""))
                bare_tail += 1
            elif line[0] in (" ", "-", "+"):
                body.append((line[0], line[1:]))
                bare_tail = 0
            else:
                break
            j += 1
        if bare_tail and not end_of_file:
            del body[-bare_tail:]
        if not body:
            expected = "a hunk line starting with ' ', '-' or '+'"
            raise syntax_error(body_start + 1, expected, "empty hunk")
        hunk = Hunk(
            headers=tuple(headers),
            lines=tuple(body),
            end_of_file=end_of_file,
            old_start=old_start,
            source_line=start + 1,
        )
        return hunk, j
