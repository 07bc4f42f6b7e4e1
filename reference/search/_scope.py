"""What every search starts from: the search root and the pattern checks (DESIGN §4 "Glob").

``search_root`` confines the ``path`` argument of Glob and Grep; ``check_glob_pattern``
bounds a glob or include pattern (length, ``{`` groups and their expansions) before any
I/O. Glob (``_glob``) and Grep (``_search``) call ``_scope.search_root`` through the
module, so a test can replace it for both.
"""

from __future__ import annotations

import attrs

from editspec.reference import _errors
from editspec.reference._arguments import (
    check_integer,
    check_text,
    excerpt,
)
from editspec.reference._context import WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._limits import Limits


@attrs.frozen
class SearchRoot:
    relative: str  # real path, root-relative, "" for the root
    reported: str  # the caller's (logical) path, root-relative, "" for the root
    kind: str  # "dir", "file" or "other"
    absolute: str  # real absolute path

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"

    @property
    def display(self) -> str:
        """The search root as results name it."""
        return self.reported or "."


def root_relative(value: str) -> str:
    """A root-relative path, "" for the root itself."""
    return "" if value in (".", "") else value


def search_root(workspace: WorkspaceContext, path: str | None) -> SearchRoot:
    """The confined starting point of a search; NOT_FOUND when it does not exist."""
    if path is None:
        return SearchRoot("", "", "dir", workspace.root)
    resolved = workspace.resolve(path)
    if not resolved.exists:
        raise ToolError(_errors.NOT_FOUND, f"no such file or directory: {path}", path=path)
    return SearchRoot(
        root_relative(resolved.relative),
        root_relative(resolved.logical_relative),
        resolved.kind,
        resolved.real,
    )


def check_max(value: object, name: str) -> int | None:
    """A positive ``max_results``, or None. Spec: GLOB-*, GREP-*."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(_errors.INVALID_ARGUMENT, f"{name} must be a positive integer")
    return check_integer(name, value, minimum=1)


BRACE_GROUPS = 64
"""The most ``{`` a glob or include pattern may hold (each one nests the expansion)."""
BRACE_EXPANSIONS = 256
"""The most alternatives a glob or include pattern may expand to."""


def brace_alternatives(pattern: str, cap: int) -> int:
    """An upper bound of ``len(_wildmatch.expand_braces(pattern))``, at most ``cap``.

    Counted on the pattern's structure (a group adds its options' counts, a sequence
    multiplies its groups'), never by expanding it: ``{a,b}`` twenty times is 2**20.
    """
    end = len(pattern)

    def sequence(index: int, inside: bool) -> tuple[int, int]:
        count = 1
        while index < end:
            char = pattern[index]
            if char == "\\":
                index += 2
                continue
            if inside and char in ",}":
                return count, index
            if char == "{":
                total, after, closed = group(index + 1)
                if closed:
                    count, index = min(cap, count * total), after
                    continue
            index += 1
        return count, index

    def group(index: int) -> tuple[int, int, bool]:
        total = 0
        while True:
            count, index = sequence(index, True)
            total = min(cap, total + count)
            if index >= end:
                return 1, index, False  # unbalanced: literal
            if pattern[index] == "}":
                return total, index + 1, True
            index += 1

    return sequence(0, False)[0]


def check_glob_pattern(name: str, pattern: object, limits: Limits) -> str:
    """A glob (or include) pattern: text, bounded in length and in brace expansion.

    Spec: GLOB-*.
    """
    text = check_text(name, pattern, max_chars=limits.glob_pattern_chars)
    assert text is not None
    if text.count("{") > BRACE_GROUPS or brace_alternatives(text, BRACE_EXPANSIONS + 1) > (
        BRACE_EXPANSIONS
    ):
        raise ToolError(
            _errors.TOO_LARGE,
            f"{name} expands to more than {BRACE_EXPANSIONS} alternatives "
            f"(or holds more than {BRACE_GROUPS} braces): {excerpt(text)}",
            argument=name,
            limit="brace_expansions",
            maximum=BRACE_EXPANSIONS,
        )
    return text


def below_root(root: SearchRoot, directory: str) -> str:
    """``directory`` (root-relative) relative to the search root."""
    return directory[len(root.relative) :].lstrip("/") if root.relative else directory
