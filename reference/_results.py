"""Frozen result and record types returned by the engine (DESIGN §2).

A foreign driver may return any object with the same attribute names; the
conformance suite reads only the fields named here.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class EditSpec:
    """One replacement: ``old_string`` -> ``new_string``.

    ``line`` (1-based) and the ``before``/``after`` anchors only choose between
    several matches; they never make a non-matching edit match.
    """

    old_string: str
    new_string: str
    replace_all: bool = False
    line: int | None = None
    before: str | None = None
    after: str | None = None


@attrs.frozen(kw_only=True)
class ReadResult:
    path: str
    content: str
    start_line: int
    end_line: int
    total_bytes: int
    total_lines: int
    sha256: str
    encoding: str  # "utf-8" | "utf-16-le" | "utf-16-be" | "binary"
    newline: str  # "lf" | "crlf" | "mixed" | "none"
    bom: bool
    truncated: bool
    mime: str | None = None
    preview_hex: str | None = None
    start_byte: int = 0
    end_byte: int = 0
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class WriteResult:
    path: str
    operation: str  # "create" | "replace"
    old_sha256: str | None
    new_sha256: str
    bytes_written: int
    newline: str
    diff: str
    snapshot_created: bool
    warnings: tuple[str, ...] = ()
    # A replace whose previous bytes were kept: the message id rewind takes to restore them.
    backup_ref: str | None = None


@attrs.frozen(kw_only=True)
class Replacement:
    """Where one EditSpec matched: how many times, by which strategy, first line (1-based)."""

    count: int
    matched_by: str
    line: int


@attrs.frozen(kw_only=True)
class EditResult:
    path: str
    operation: str  # "patch"
    old_sha256: str | None
    new_sha256: str
    bytes_written: int
    newline: str
    diff: str
    snapshot_created: bool
    replacements: tuple[Replacement, ...]
    warnings: tuple[str, ...] = ()
    backup_ref: str | None = None  # as WriteResult's


@attrs.frozen(kw_only=True)
class NotebookResult:
    """One notebook cell replaced, inserted or deleted (``Session.edit_notebook``)."""

    path: str
    operation: str  # "notebook"
    mode: str  # "replace" | "insert" | "delete"
    cell_id: str | None  # the cell's id (nbformat 4.5+), None without ids
    index: int  # 0-based: where the cell is now (delete: where it was)
    cell_type: str  # "code" | "markdown" | "raw"
    old_sha256: str
    new_sha256: str
    bytes_written: int
    newline: str
    diff: str
    snapshot_created: bool
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class HunkMatch:
    """Where one hunk of a patch matched: its number, the file line, the strategy."""

    hunk: int  # 1-based, in the file's section of the patch
    line: int  # 1-based line of the file (before the patch) where its old side matched
    matched_by: str  # "exact" | "trailing_whitespace" | "surrounding_whitespace" | ...


@attrs.frozen(kw_only=True)
class FileChange:
    path: str
    op: str  # "add" | "update" | "delete" | "move"
    move_to: str | None
    old_sha256: str | None
    new_sha256: str | None
    diff: str
    hunks: tuple[HunkMatch, ...] = ()


@attrs.frozen(kw_only=True)
class PatchResult:
    changes: tuple[FileChange, ...]
    snapshot_created: bool
    transaction_id: str = ""
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class GlobResult:
    paths: tuple[str, ...]
    truncated: bool
    total_matches: int


@attrs.frozen(kw_only=True)
class GrepMatch:
    path: str
    line: int
    column: int
    text: str


@attrs.frozen(kw_only=True)
class GrepResult:
    matches: tuple[GrepMatch, ...]
    truncated: bool
    files_searched: int
    files_skipped_too_large: int = 0
    backend: str = ""


@attrs.frozen(kw_only=True)
class ListEntry:
    name: str
    path: str
    type: str  # "file" | "dir" | "symlink" | "other"
    size: int
    mtime: float
    symlink_target: str | None = None


@attrs.frozen(kw_only=True)
class ListResult:
    entries: tuple[ListEntry, ...]
    next_cursor: str | None
    truncated: bool
    total_entries: int | None = None  # the whole listing's count, from the same traversal
    changed_during_listing: bool = False  # a listed directory changed meanwhile
    excluded: tuple[str, ...] = ()  # directories skipped by the exclusions (root-relative)
    exclusions: tuple[str, ...] = ()  # the directory names excluded (the rules in effect)


@attrs.frozen(kw_only=True)
class IgnoreExplanation:
    """Why a path is (or is not) excluded from search: the rule and where it is written."""

    path: str
    ignored: bool
    source: str | None  # e.g. "sub/.gitignore", ".git/info/exclude", or "<builtin>"
    line: int | None
    pattern: str | None


@attrs.frozen(kw_only=True)
class RestoredFile:
    path: str
    action: str  # "restored" | "deleted" | "recreated"


@attrs.frozen(kw_only=True)
class RewindResult:
    restored: tuple[RestoredFile, ...]
    transaction_id: str = ""


@attrs.frozen(kw_only=True)
class RecoveryReport:
    rolled_back: tuple[str, ...] = ()
    rolled_forward: tuple[str, ...] = ()
    cleaned: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class ManifestItem:
    """One entry under a tree: path relative to the tree, type, size and content hash."""

    path: str
    type: str  # "file" | "dir" | "symlink" | "other"
    size: int
    sha256: str | None  # file: its bytes; symlink: its target; None for a directory


@attrs.frozen(kw_only=True)
class ManifestResult:
    """Every entry under a directory and the hash that names exactly this set."""

    path: str
    items: tuple[ManifestItem, ...]
    manifest_sha256: str


@attrs.frozen(kw_only=True)
class DeleteResult:
    """A file, an empty directory or a whole tree removed (``Session.delete``)."""

    path: str
    kind: str  # "file" | "empty_dir" | "tree"
    items: tuple[ManifestItem, ...]  # every entry removed (a file: itself, path "")
    old_sha256: str | None  # a file's bytes; None for a directory
    manifest_sha256: str | None  # a tree's manifest; None otherwise
    restore_ref: str | None  # the message id ``rewind`` takes to bring it back
    quarantine: str | None  # where a tree's entries are kept (absolute), if moved there
    snapshot_created: bool
    transaction_id: str = ""
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class MoveStep:
    """One step of a move and how it went: "done", "failed: <errno>" or "pending"."""

    step: str  # "link" | "unlink_source" | "rename" | "copy" | "fsync" | "verify" | "delete_source"
    outcome: str


@attrs.frozen(kw_only=True)
class MoveResult:
    """A file or a directory moved to a new path, never over an existing one."""

    path: str
    move_to: str
    kind: str  # "file" | "dir"
    atomic: bool  # True for a link + unlink or one rename; False for copy + verify + delete
    steps: tuple[MoveStep, ...]
    sha256: str | None  # a file's bytes; None for a directory
    items: tuple[ManifestItem, ...]  # a directory's entries
    restore_ref: str | None
    snapshot_created: bool
    warnings: tuple[str, ...] = ()
