"""What a parsed patch is: its file operations and hunks (DESIGN §4 "ApplyPatch").

Both parsers (``_patch_parse`` for the Codex format, ``_patch_unified`` for unified
diffs) produce these, counting files and hunks against the limits with one ``Budget``;
``_patch_plan`` and ``_patch`` consume them. docs/internals.md "Patch input" describes
every field.
"""

from __future__ import annotations

import attrs

from editspec.reference._errors import PATCH_SYNTAX, TOO_LARGE, ToolError
from editspec.reference._limits import Limits

ADD = "add"
DELETE = "delete"
UPDATE = "update"
COPY = "copy"
CODEX = "codex"
UNIFIED = "unified"


@attrs.frozen(kw_only=True)
class Hunk:
    """One hunk: where to look (headers, line hint) and its ``(kind, text)`` lines."""

    headers: tuple[str, ...]
    lines: tuple[tuple[str, str], ...]
    end_of_file: bool
    old_start: int | None
    source_line: int
    # Unified "\ No newline at end of file" after the old side's / the new side's last line.
    old_missing_newline: bool = False
    new_missing_newline: bool = False
    # Unified diffs: each line is the file's bytes (a CR before the break is content) and
    # ends with LF unless a marker says otherwise. Codex: lines take the file's newline.
    exact_newlines: bool = False


@attrs.frozen(kw_only=True)
class FileOp:
    """One file operation of a patch, in patch order.

    ``copy`` (git's ``copy from``/``copy to``) reads ``path`` and adds ``move_to``;
    ``executable``: the git mode the diff gives the resulting file (True for 100755, False
    for 100644), None when it says nothing.
    """

    op: str
    path: str
    move_to: str | None
    content: str | None
    hunks: tuple[Hunk, ...]
    source_line: int
    executable: bool | None = None


@attrs.frozen(kw_only=True)
class ParsedPatch:
    """A parsed patch: its input format and its file operations."""

    format: str
    ops: tuple[FileOp, ...]


def syntax_error(line: int, expected: str, problem: str) -> ToolError:
    """PATCH_SYNTAX naming the 1-based patch line and what was expected there."""
    return ToolError(
        PATCH_SYNTAX, f"line {line}: {problem}; expected {expected}", line=line, expected=expected
    )


@attrs.define
class Budget:
    """Counts files and hunks as the parser meets them; the first excess fails."""

    limits: Limits
    files: int = 0
    hunks: int = 0

    def add_file(self, line: int) -> None:
        self.files += 1
        if self.files > self.limits.patch_files:
            raise ToolError(
                TOO_LARGE,
                f"line {line}: more than {self.limits.patch_files} file operations",
                limit="patch_files",
                maximum=self.limits.patch_files,
                line=line,
            )

    def add_hunk(self, line: int) -> None:
        self.hunks += 1
        if self.hunks > self.limits.patch_hunks:
            raise ToolError(
                TOO_LARGE,
                f"line {line}: more than {self.limits.patch_hunks} hunks",
                limit="patch_hunks",
                maximum=self.limits.patch_hunks,
                line=line,
            )


def check_patch_size(limits: Limits, display: str, size: int) -> None:
    """TOO_LARGE for a file over ``limits.edit_file_bytes``, before or after its hunks."""
    limit = limits.edit_file_bytes
    if size > limit:
        raise ToolError(
            TOO_LARGE,
            f"{display} is {size} bytes; files over {limit} bytes are not patched",
            path=display,
            size=size,
            limit=limit,
        )
