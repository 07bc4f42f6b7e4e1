"""The directory walk shared by Glob and Grep: ignore rules applied, symlinks never entered.

Rules of the walk:

* Every entry is classified from its ``DirEntry`` without following it: a symlink is a
  leaf of kind "symlink" whatever its target is (a link to a directory is never entered,
  so a loop of links cannot make the walk run forever, and nothing outside the root is
  ever listed). Search never follows a link; the tools that act on a path confine it.
* An ignored directory is not entered (git's rule: nothing below it can be re-included).
* ``.git`` and the engine's state directory are skipped by name and place, before any
  rule is consulted.
* Directories that vanish or cannot be listed during the walk are skipped: a search
  reports what it could see. The starting directory itself must be listable.

The walk reads only through the fs port (``scandir`` and ``read_bytes``), and uses the
types cached in ``DirEntry`` so that no entry costs a system call of its own.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from editspec.reference import _errors
from editspec.reference._context import WorkspaceContext
from editspec.reference.paths._paths import is_within
from editspec.reference.search import _ignore
from editspec.reference.search._ignore import IgnoreRule, RuleStack

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem

FILE = "file"
DIR = "dir"
SYMLINK = "symlink"
OTHER = "other"
GIT_DIR = ".git"

# Errors that mean "this entry is gone or is not what the listing said": skip it.
_VANISHED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES, errno.EPERM})


class Batch(NamedTuple):
    """The kept entries of one directory, by kind (``DirEntry`` objects, types cached)."""

    directory: str  # root-relative, "/"-separated, "" for the root
    path: str  # absolute real path of the directory
    files: list[os.DirEntry[str]]
    symlinks: list[os.DirEntry[str]]
    dirs: list[os.DirEntry[str]]
    others: list[os.DirEntry[str]]  # FIFOs, sockets, devices


def _encode(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _kind(entry: os.DirEntry[str]) -> str:
    """An entry's own kind, from the listing (a symlink is not followed)."""
    if entry.is_symlink():
        return SYMLINK
    if entry.is_dir():
        return DIR
    return FILE if entry.is_file() else OTHER


class SearchTree:
    """One workspace seen by search: its root, built-in exclusions and ignore files."""

    def __init__(self, workspace: WorkspaceContext) -> None:
        self.fs: FileSystem = workspace.fs
        self.root: str = workspace.root
        state = workspace.state_dir
        self.state_relative: str | None = None
        if state != self.root and is_within(state, self.root):
            self.state_relative = state[len(self.root) :].strip(os.sep).replace(os.sep, "/")
        # What the walks of this tree met that another walker may read differently
        # (``_grep_rg`` decides whether ripgrep's own walk can stand in for this one):
        # every ignore file read (compiled: its ``source`` is its root-relative path), and
        # every entry named ``.git`` and every ``.gitignore`` that is not a regular file
        # (root-relative path, kind).
        self.ignore_reads: list[_ignore.IgnoreFile] = []
        self.odd_entries: list[tuple[str, str]] = []

    def absolute(self, relative: str) -> str:
        if not relative:
            return self.root
        return os.path.join(self.root, *relative.split("/"))

    # -- ignore files ----------------------------------------------------------------

    def read_ignore(
        self, relative_file: str, base: str, handle: int | None = None
    ) -> _ignore.IgnoreFile | None:
        """The compiled ignore file at ``relative_file``, or None when there is none.

        ``handle``: the directory ``base`` as held by ``FileSystem.scandir_held``, read
        through it."""
        try:
            if handle is None:
                content = self.fs.read_bytes(self.absolute(relative_file))
            else:
                content = self.fs.read_bytes_at(handle, _ignore.GITIGNORE)
        except OSError as exc:
            # Missing, a directory, a symlink (O_NOFOLLOW) or unreadable: git reads nothing.
            if exc.errno in _VANISHED or exc.errno in (errno.EISDIR, errno.EINVAL):
                return None
            raise _errors.from_oserror(exc, relative_file, action="read ignore file") from exc
        compiled = _ignore.ignore_file(content, relative_file, base)
        self.ignore_reads.append(compiled)
        return compiled

    def base_stack(self) -> RuleStack:
        """The rules that apply everywhere: ``.git/info/exclude`` of the root."""
        exclude = self.read_ignore(_ignore.INFO_EXCLUDE, "")
        return RuleStack() if exclude is None else RuleStack().push(exclude)

    def stack_for(self, directory: str) -> RuleStack:
        """The rules in force for the entries of ``directory`` (root-relative)."""
        stack = self.base_stack()
        parts = directory.split("/") if directory else []
        for depth in range(len(parts) + 1):
            base = "/".join(parts[:depth])
            found = self.read_ignore(join(base, _ignore.GITIGNORE), base)
            if found is not None:
                stack = stack.push(found)
        return stack

    # -- exclusions ------------------------------------------------------------------

    def builtin_exclusion(self, relative: str) -> IgnoreRule | None:
        """The built-in rule that excludes ``relative`` or one of its ancestors, if any."""
        if not relative:
            return None
        parts = relative.split("/")
        if GIT_DIR in parts:
            return _ignore.builtin_rule(GIT_DIR)
        state = self.state_relative
        if state is not None and (relative == state or relative.startswith(state + "/")):
            return _ignore.builtin_rule(state)
        return None

    def excluded(self, relative: str, is_dir: bool) -> IgnoreRule | None:
        """Why ``relative`` is excluded from search: a built-in rule, the rule that
        excludes an ancestor directory, or its own deciding rule (negated = kept)."""
        builtin = self.builtin_exclusion(relative)
        if builtin is not None:
            return builtin
        parts = relative.split("/")
        stack = self.base_stack()
        directory = ""
        for depth, name in enumerate(parts):
            found = self.read_ignore(join(directory, _ignore.GITIGNORE), directory)
            if found is not None:
                stack = stack.push(found)
            last = depth == len(parts) - 1
            prefix = _encode(directory + "/") if directory else b""
            rule = stack.matcher.check(prefix, _encode(name), True if not last else is_dir)
            if rule is not None and (last or not rule.negated):
                return rule
            directory = join(directory, name)
        return None

    # -- the walk --------------------------------------------------------------------

    def walk(
        self,
        start: str,
        *,
        descend: Callable[[str], bool] | None = None,
        check: Callable[[], None] | None = None,
        hold: bool = False,
    ) -> Iterator[Batch]:
        """Yield the kept entries of ``start`` and of every kept directory below it.

        ``start`` is root-relative; the ignore files of its ancestors apply, but ignore
        rules that exclude ``start`` itself or an ancestor do not (a directory the caller
        names is searched, as ripgrep does). ``descend(relative)`` may prune directories;
        ``check()`` runs before each directory is read (cancellation).

        ``hold``: each directory stays open while its batch is used
        (``FileSystem.scandir_held``), so that the entries' ``stat`` looks up one name
        in it rather than a whole path; that ``stat`` is then valid only until the walk
        resumes. Its ignore file is read through the same handle.
        """
        if self.builtin_exclusion(start) is not None:
            return
        pending: list[tuple[str, str, RuleStack | None]] = [(start, self.absolute(start), None)]
        state_parent, _, state_name = (self.state_relative or "").rpartition("/")
        if self.state_relative is None:
            state_parent = state_name = "\0"  # a name no entry has
        fs = self.fs
        handle: int | None = None
        try:
            while pending:
                if handle is not None:
                    fs.release_dir(handle)
                    handle = None
                directory, path, stack = pending.pop()
                if check is not None:
                    check()
                try:
                    if hold:
                        listing, handle = fs.scandir_held(path)
                    else:
                        listing = list(fs.scandir(path))
                except OSError as exc:
                    if directory != start and exc.errno in _VANISHED:
                        continue
                    raise _errors.from_oserror(exc, directory or ".", action="search") from exc
                prefix = directory + "/" if directory else ""
                names = [entry.name for entry in listing]
                if _ignore.GITIGNORE in names:
                    entry = listing[names.index(_ignore.GITIGNORE)]
                    if not entry.is_file(follow_symlinks=False):
                        self.odd_entries.append((prefix + entry.name, _kind(entry)))
                    elif stack is not None:
                        found = self.read_ignore(prefix + entry.name, directory, handle)
                        if found is not None:
                            stack = stack.push(found)
                if stack is None:
                    # The start directory: its own ignore file is read by stack_for.
                    stack = self.stack_for(directory)
                if GIT_DIR in names:
                    index = names.index(GIT_DIR)
                    self.odd_entries.append((prefix + GIT_DIR, _kind(listing[index])))
                    del listing[index], names[index]
                matcher = stack.matcher
                excluded = None if matcher.empty else matcher.excluded
                depth = directory.count("/") + 1 if directory else 0
                ascii_prefix = prefix.isascii()
                skip_state = state_name if directory == state_parent else GIT_DIR
                # A child's path, as os.path.join(path, name) would make it.
                base = path if path.endswith(os.sep) else path + os.sep
                files: list[os.DirEntry[str]] = []
                symlinks: list[os.DirEntry[str]] = []
                dirs: list[os.DirEntry[str]] = []
                others: list[os.DirEntry[str]] = []
                if excluded is not None and ascii_prefix and "".join(names).isascii():
                    # The common case, inline: every name ASCII, so the gates run over str.
                    # An entry that no excluding rule's gate matches is kept, one that only
                    # excluding rules match is dropped, and ``excluded`` (the files' own
                    # rules) decides only one that re-including rules match too.
                    (
                        f_literals,
                        f_suffixes,
                        f_regex,
                        f_path,
                        f_negative,
                        f_negative_path,
                        d_literals,
                        d_suffixes,
                        d_regex,
                        d_path,
                        d_negative,
                        d_negative_path,
                    ) = matcher.inline_gates(depth)
                    for entry in listing:
                        name = entry.name
                        # is_symlink first: for anything else is_dir()/is_file() then
                        # describe the entry itself, from the type the listing cached.
                        if entry.is_symlink():
                            if not excluded(prefix, depth, name, False, True):
                                symlinks.append(entry)
                        elif entry.is_dir():
                            if name == skip_state:
                                continue
                            if (
                                (d_suffixes and name.endswith(d_suffixes))
                                or (d_literals and name in d_literals)
                                or (d_regex is not None and d_regex(name))
                                or (d_path is not None and d_path(prefix + name))
                            ) and (
                                (
                                    (d_negative is None or not d_negative(name))
                                    and (
                                        d_negative_path is None
                                        or not d_negative_path(prefix + name)
                                    )
                                )
                                or excluded(prefix, depth, name, True, True)
                            ):
                                continue
                            dirs.append(entry)
                            child = prefix + name
                            if descend is None or descend(child):
                                pending.append((child, base + name, stack))
                        else:
                            if (
                                (f_suffixes and name.endswith(f_suffixes))
                                or (f_literals and name in f_literals)
                                or (f_regex is not None and f_regex(name))
                                or (f_path is not None and f_path(prefix + name))
                            ) and (
                                (
                                    (f_negative is None or not f_negative(name))
                                    and (
                                        f_negative_path is None
                                        or not f_negative_path(prefix + name)
                                    )
                                )
                                or excluded(prefix, depth, name, False, True)
                            ):
                                continue
                            if entry.is_file():
                                files.append(entry)
                            else:
                                others.append(entry)
                else:
                    # No rules, or a name that is not ASCII: ``excluded`` tests each entry.
                    for entry in listing:
                        name = entry.name
                        if entry.is_symlink():
                            if excluded is None or not excluded(
                                prefix, depth, name, False, ascii_prefix
                            ):
                                symlinks.append(entry)
                        elif entry.is_dir():
                            if name == skip_state or (
                                excluded is not None
                                and excluded(prefix, depth, name, True, ascii_prefix)
                            ):
                                continue
                            dirs.append(entry)
                            child = prefix + name
                            if descend is None or descend(child):
                                pending.append((child, base + name, stack))
                        elif excluded is None or not excluded(
                            prefix, depth, name, False, ascii_prefix
                        ):
                            if entry.is_file():
                                files.append(entry)
                            else:
                                others.append(entry)
                yield Batch(directory, path, files, symlinks, dirs, others)
        finally:
            if handle is not None:
                fs.release_dir(handle)
