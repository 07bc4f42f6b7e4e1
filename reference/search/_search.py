"""Grep and ``why_ignored`` (DESIGN §4 "Grep"); Glob is ``_glob``'s.

Grep. See ``_grep_query`` for what a match is. Candidates are the regular files of the
walk (symlinks are not followed, ignored paths skipped), filtered by ``include`` and by
``Limits.grep_file_bytes`` (larger files are skipped and counted). ``files_searched``
counts the candidates, binary files included (they are opened and recognised). Matches
are ordered by path, then line; with ``max_results`` each backend keeps only the first
``max_results + 1`` (``_grep_py.Selection``), so that memory does not grow with the
matches. A deadline (a ``time.monotonic()`` value) or a cancel token
(``threading.Event``) ends the search with CANCELLED, never a partial result.

``include`` is a gitignore-style pattern applied with ``pathspec.GitIgnoreSpec`` to the
path relative to the search root: ``*.py`` matches at any depth, ``src/*.py`` is anchored,
``tests`` takes everything below a directory of that name; ``{a,b}`` alternatives are
expanded first.

Backends (``Workspace.grep_backend``): "python", "rg" (ripgrep required: UNSUPPORTED
without it, IO_ERROR if it fails) and "auto" (ripgrep when it is installed and the
pattern has required literals, the Python backend otherwise and whenever ripgrep fails).
Both return identical results: ripgrep searches the walk's candidate list, or walks the
tree itself where its walk provably keeps the same files; see ``_grep_rg``.

Speed: with
ripgrep walking the tree, Grep stats candidates only when ripgrep's count of files
searched says some were over the size limit (``Candidates``).
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from typing import TYPE_CHECKING

import pathspec

from editspec.reference import _errors
from editspec.reference._arguments import (
    check_bool,
    check_finite,
    check_text,
)
from editspec.reference._context import SessionContext, WorkspaceContext
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem
from editspec.reference._limits import Limits
from editspec.reference._results import GrepMatch, GrepResult, IgnoreExplanation
from editspec.reference.paths._paths import check_request
from editspec.reference.search import _grep_py, _grep_rg, _grep_worker, _rg_tree, _scope, _wildmatch
from editspec.reference.search._grep_query import FileGroup, GrepQuery, compile_query
from editspec.reference.search._scope import (
    SearchRoot,
    below_root,
    check_glob_pattern,
    check_max,
    root_relative,
)
from editspec.reference.search._walk import SearchTree

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


BACKENDS = ("auto", "rg", "python")


# -- why_ignored -----------------------------------------------------------------------


def why_ignored(session: SessionContext, path: str) -> IgnoreExplanation:
    """The rule that excludes ``path`` from search (or re-includes it), and where it is.

    The path is explained as the walk sees it: its directory resolved, its own name not
    followed (a symlink is explained as itself). Spec: GLOB-*.
    """
    workspace = session.workspace
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    if not isinstance(text, str) or not text or "\0" in text:
        raise ToolError(_errors.INVALID_ARGUMENT, "path must be a non-empty string")
    check_request(workspace, text)  # encodable and bounded, before any lookup
    parent, name = os.path.split(os.path.normpath(text))
    if name in ("", ".", ".."):
        # The root itself, or a path that climbs: let the resolver decide.
        resolved = workspace.resolve(text)
        if root_relative(resolved.relative):  # pragma: no cover - normpath leaves no such name
            raise ToolError(_errors.INVALID_ARGUMENT, f"cannot explain {text!r}")
        return IgnoreExplanation(path=".", ignored=False, source=None, line=None, pattern=None)
    # The directory is resolved (confined); the name itself is not followed.
    container = workspace.resolve(parent or ".")
    parent_real = root_relative(container.relative)
    parent_reported = root_relative(container.logical_relative)
    relative = f"{parent_real}/{name}" if parent_real else name
    reported = f"{parent_reported}/{name}" if parent_reported else name
    try:
        st = workspace.fs.lstat(os.path.join(workspace.root, *relative.split("/")))
    except OSError:
        is_dir = str(path).endswith(("/", os.sep))
    else:
        import stat

        is_dir = stat.S_ISDIR(st.st_mode)
    rule = SearchTree(workspace).excluded(relative, is_dir)
    if rule is None:
        return IgnoreExplanation(path=reported, ignored=False, source=None, line=None, pattern=None)
    return IgnoreExplanation(
        path=reported,
        ignored=not rule.negated,
        source=rule.source,
        line=rule.line,
        pattern=rule.pattern,
    )


# -- grep ------------------------------------------------------------------------------


def canceller(deadline: float | None, cancel: threading.Event | None) -> Callable[[], None]:
    """A check that raises CANCELLED once the deadline has passed or the token is set."""
    if deadline is not None and not isinstance(deadline, (int, float)):
        raise ToolError(_errors.INVALID_ARGUMENT, "deadline must be a time.monotonic() value")
    check_finite("deadline", deadline)
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise ToolError(_errors.INVALID_ARGUMENT, "cancel must be a threading.Event")

    def check() -> None:
        if cancel is not None and cancel.is_set():
            raise ToolError(_errors.CANCELLED, "search cancelled")
        if deadline is not None and time.monotonic() >= deadline:
            raise ToolError(_errors.CANCELLED, "search deadline passed")

    return check


def _include(include: object, limits: Limits) -> pathspec.GitIgnoreSpec | None:
    if include is None:
        return None
    if not isinstance(include, str) or not include.strip() or "\0" in include:
        raise ToolError(_errors.INVALID_ARGUMENT, "include must be a non-empty glob pattern")
    check_glob_pattern("include", include, limits)
    try:
        return pathspec.GitIgnoreSpec.from_lines(_wildmatch.expand_braces(include))
    except (ValueError, TypeError) as exc:
        raise ToolError(_errors.INVALID_ARGUMENT, f"invalid include pattern: {exc}") from exc


class Candidates:
    """The files to search, grouped by directory, produced as the walk goes (so that
    ripgrep can start on the first groups while later directories are still listed).

    Two steps: the walk lists the candidates (ignore rules and ``include`` applied), then
    each is ``lstat``ed for the size limit. ``listed()`` runs only the first step, for the
    tree mode of the ripgrep backend, which needs no sizes while ripgrep's count of files
    searched equals the number listed; it keeps the names only, and sizing afterwards
    lists each directory again. (Entries are not kept beyond their sizing: memory reused
    while it is hot is much of the walk's speed.)
    """

    def __init__(
        self,
        tree: SearchTree,
        root: SearchRoot,
        include: pathspec.GitIgnoreSpec | None,
        max_bytes: int,
        check: Callable[[], None],
    ) -> None:
        self.tree = tree
        self.root = root
        self.include = include
        self.max_bytes = max_bytes
        self.check = check
        self.groups: list[FileGroup] = []
        self.searched = 0
        self.too_large = 0
        # What ``listed`` kept: (directory path, root-relative directory, names, reported
        # prefix) of each directory with candidates.
        self._listed: list[tuple[str, str, list[str], str]] = []
        self._listed_count = 0
        # ``lists``: the names of each directory as the walk lists it (the lists of
        # ``_listed``), sorted in place when first asked about, from ripgrep's reading
        # thread while the walk goes on; no set of them (a tree of 500 000 files would
        # hold 20 MiB more).
        self._index: dict[str, list[str]] = {}
        self._sorted: set[str] = set()
        self._walked = False
        self._listing = self._list()
        self._walk = self._produce()

    def __iter__(self) -> Iterator[FileGroup]:
        """Every group, once; iterating again replays the groups already produced."""
        yield from list(self.groups)
        for group in self._walk:
            self.groups.append(group)
            yield group

    def all(self) -> list[FileGroup]:
        for _ in self:
            pass
        return self.groups

    def listed(self) -> int:
        """Walk to the end without the size step (before any iteration), keeping the
        names; the number of candidates listed."""
        for path, directory, entries, reported in self._listing:
            names = [entry.name for entry in entries]
            self._listed.append((path, directory, names, reported))
            self._index[directory] = names
            self._listed_count += len(entries)
        self._walked = True
        return self._listed_count

    def lists(self, relative: str) -> bool | None:
        """Whether the walk listed the root-relative file ``relative``: None while
        ``listed`` runs and has not listed its directory yet."""
        directory, _, name = relative.rpartition("/")
        names = self._index.get(directory)
        if names is None:
            return False if self._walked else None
        if directory not in self._sorted:
            names.sort()
            self._sorted.add(directory)
        at = bisect.bisect_left(names, name)
        return at < len(names) and names[at] == name

    def _list(self) -> Iterator[tuple[str, str, list[os.DirEntry[str]], str]]:
        root = self.root
        include = None if self.include is None else self.include.match_file
        for batch in self.tree.walk(root.relative, check=self.check):
            below = below_root(root, batch.directory)
            prefix = below + "/" if below else ""
            entries = batch.files
            if include is not None:
                entries = [entry for entry in entries if include(prefix + entry.name)]
            if entries:
                reported = "/".join(part for part in (root.reported, below) if part)
                yield batch.path, batch.directory, entries, reported + "/" if reported else ""

    def _relisted(self) -> Iterator[tuple[str, str, list[os.DirEntry[str]], str]]:
        """The directories ``listed`` kept, listed again for their entries' sizes."""
        for path, directory, names, reported in self._listed:
            try:
                listing = self.tree.fs.scandir(path)
            except OSError as exc:
                if exc.errno in _grep_py.SKIPPED_ERRNOS:
                    continue  # gone since it was listed
                raise _errors.from_oserror(exc, directory or ".", action="search") from exc
            wanted = set(names)
            yield path, directory, [entry for entry in listing if entry.name in wanted], reported

    def _produce(self) -> Iterator[FileGroup]:
        if not self.root.is_dir:
            yield from self._single_file()
            return
        max_bytes = self.max_bytes
        for path, directory, entries, reported in (
            self._relisted() if self._listed else self._listing
        ):
            names: list[str] = []
            for entry in entries:
                try:
                    size = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    continue  # gone since it was listed
                if size > max_bytes:
                    self.too_large += 1
                    continue
                names.append(entry.name)
            if names:
                self.searched += len(names)
                yield FileGroup(path, directory, names, reported)

    def _single_file(self) -> Iterator[FileGroup]:
        root = self.root
        if root.kind != "file" or self.tree.builtin_exclusion(root.relative) is not None:
            return
        directory, _, name = root.relative.rpartition("/")
        if self.include is not None and not self.include.match_file(name):
            return
        if self.tree.fs.lstat(root.absolute).st_size > self.max_bytes:
            self.too_large += 1
            return
        self.searched += 1
        yield FileGroup(os.path.dirname(root.absolute), directory, [name], "", root.display)


def _tree_mode(
    workspace: WorkspaceContext,
    root: SearchRoot,
    include: pathspec.GitIgnoreSpec | None,
    tree: SearchTree,
) -> bool:
    """Whether ripgrep may walk the search root itself (``_rg_tree.search_tree``): a
    directory, no ``include`` (``pathspec`` semantics), the engine's state directory not
    below it, and a file-system port that is the operating system's own, unwrapped (a
    wrapped port must see every read of the search)."""
    state = tree.state_relative
    return (
        _rg_tree.RG_WALKS
        and root.is_dir
        and include is None
        and type(workspace.fs) is FileSystem
        and (state is None or not _is_below(state, root.relative))
    )


def _is_below(path: str, directory: str) -> bool:
    """Whether root-relative ``path`` is ``directory`` or lies below it."""
    return not directory or path == directory or path.startswith(directory + "/")


def _search_tree(
    workspace: WorkspaceContext,
    query: GrepQuery,
    root: SearchRoot,
    tree: SearchTree,
    candidates: Candidates,
    executable: str,
    check: Callable[[], None],
    keep: int | None,
) -> list[GrepMatch] | None:
    """Grep with ripgrep walking the tree itself while the engine's walk lists the
    candidates; None when the two walks may differ (then the file-list mode runs). With
    ``keep``, the ``keep`` first matches (``_grep_py.Selection``).

    The engine's walk is still needed: it proves ripgrep applies the same ignore rules
    (``_rg_tree.walks_alike``) and counts the candidates. When ripgrep searched as many
    files as were listed, none was over the size limit; otherwise the candidates are
    sized, and a count that still differs (the tree changed meanwhile) falls back.
    """

    # The ignore files above the search root and its own are read first: when one of them
    # is not read alike by ripgrep (a common template has them at the root), ripgrep is not
    # even started.
    tree.stack_for(root.relative)
    if not all(file.portable for file in tree.ignore_reads):
        return None

    def walk(given: list[str]) -> int | None:
        listed = candidates.listed()
        return listed if _rg_tree.walks_alike(tree, root.relative, given) else None

    head = root.relative + "/" if root.relative else ""

    def lists(below: str) -> bool | None:
        return candidates.lists(head + below)

    try:
        found = _rg_tree.search_tree(
            tree.fs,
            query,
            workspace.root,
            root.relative,
            root.reported,
            workspace.limits.grep_file_bytes,
            executable,
            check,
            walk,
            lists,
            keep,
        )
    except _grep_rg.RipgrepFailed:
        return None  # the file-list mode decides what ripgrep's failure means
    if found is None:
        return None
    if found.alien or not all(lists(below) for below in found.unchecked):
        return None  # ripgrep searched a file the walk did not keep
    if found.searched == candidates.listed():
        candidates.searched = found.searched
        return found.matches
    candidates.all()
    return found.matches if candidates.searched == found.searched else None


def grep(
    session: SessionContext,
    pattern: str,
    *,
    path: str | None = None,
    include: str | None = None,
    ignore_case: bool = False,
    max_results: int | None = None,
    deadline: float | None = None,
    cancel: threading.Event | None = None,
) -> GrepResult:
    """Lines matching a Python regular expression under the search root.

    Spec: GREP-*.
    """
    workspace = session.workspace
    limits = workspace.limits
    if deadline is None:
        # No caller's deadline is no licence to run forever (LIMIT-031).
        deadline = time.monotonic() + limits.grep_seconds
    check = canceller(deadline, cancel)
    check()
    check_text("pattern", pattern, empty=True, max_chars=limits.grep_pattern_chars)
    query = compile_query(pattern, ignore_case=check_bool("ignore_case", ignore_case))
    _grep_worker.warm()  # the regex runs in a worker process (LIMIT-031): it boots meanwhile
    limit = check_max(max_results, "max_results")
    keep = None if limit is None else limit + 1  # one more tells whether it was truncated
    include_spec = _include(include, limits)
    mode = workspace.grep_backend
    if mode not in BACKENDS:
        raise ToolError(_errors.INVALID_ARGUMENT, f"grep backend must be one of {BACKENDS}")
    root = _scope.search_root(workspace, path)
    tree = SearchTree(workspace)
    candidates = Candidates(tree, root, include_spec, workspace.limits.grep_file_bytes, check)
    matches: list[GrepMatch] | None = None
    backend = "python"
    executable = _grep_rg.find_rg() if mode != "python" else None
    if mode == "rg" and executable is None:
        raise ToolError(_errors.UNSUPPORTED, "ripgrep (rg) is not installed")
    if executable is not None and (mode == "rg" or query.rg_literals):
        try:
            if _tree_mode(workspace, root, include_spec, tree):
                matches = _search_tree(
                    workspace, query, root, tree, candidates, executable, check, keep
                )
            if matches is None:
                matches = _grep_rg.search(
                    tree.fs, query, candidates, workspace.root, executable, check, keep
                )
            backend = "rg"
        except _grep_rg.RipgrepFailed as exc:
            if mode == "rg":
                raise ToolError(_errors.IO_ERROR, f"ripgrep failed: {exc}") from exc
    if matches is None:
        matches = _grep_py.search(tree.fs, query, candidates.all(), check, keep)
    matches.sort(key=_grep_py.result_order)
    truncated = limit is not None and len(matches) > limit
    return GrepResult(
        matches=tuple(matches[:limit] if truncated else matches),
        truncated=truncated,
        files_searched=candidates.searched,
        files_skipped_too_large=candidates.too_large,
        backend=backend,
    )
