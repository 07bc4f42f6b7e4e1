"""The mutant zoo: the reference engine with one deliberate defect each (DESIGN §5).

Every mutant is a ``DriverFactory`` (``mutant_zoo:<name>``, with this directory on
``PYTHONPATH``) that builds the reference driver and installs one defect: an engine
function replaced by a careless version, or a component of the workspace swapped for a
subclass. The defects are the ones real file tools have shipped: a stale check by mtime,
confinement by string prefix, the first of several matches edited, CRLF or a BOM lost, a
patch half applied, a rewind over someone else's change, and so on.

Mutants are activated and deactivated in one process (``activate``): module-level
replacements go through ``_replace``, which remembers what it replaced, so one
``editspec check`` process can run clause after clause, each with its own mutant
(``zoo.py``'s ``zoo:factory``); ``mutant_zoo:<name>`` is still the factory of one mutant.

``MUTANTS`` lists them with the defect in one sentence, the areas it concerns and the MUST
clauses it must fail (``Mutant.clauses``, or ``targets.TARGETS``); ``zoo.py`` adds the
mutants of ``broken_drivers.py`` and ``zoo_*.py``. A mutant that no longer applies (a name
it replaces is gone) is an error of the zoo, never a catch.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import attrs

from editspec.contract.drivers.reference import ReferenceDriver
from editspec.reference import EditSpec, ToolError, Workspace
from editspec.reference._fs import FileSystem
from editspec.reference.guards import _access
from editspec.reference.matching import _matching
from editspec.reference.patch import _patch, _patch_commit
from editspec.reference.paths import _paths
from editspec.reference.snapshots import _rewind
from editspec.reference.text import _text
from editspec.reference.tools import _atomic, _edit, _edit_text, _write


@attrs.frozen(kw_only=True)
class Mutant:
    """One broken implementation: the reference with one defect.

    The defect is installed in one of four ways: ``install`` replaces engine functions
    (through ``_replace``, so ``deactivate`` can put them back), ``context`` is a context
    manager entered for as long as the mutant is active (the durability mutants),
    ``per_workspace`` changes a component of each new ``Workspace``, and ``wrap`` puts a
    broken driver around the reference driver (``broken_drivers.py``). ``clauses`` are
    the MUST clauses that must FAIL for it (and PASS for the reference): the zoo test runs
    exactly those; a mutant without them runs every MUST clause of its ``areas``.
    """

    name: str
    defect: str
    areas: tuple[str, ...]
    install: Callable[[], None] | None = None  # module-level replacement, undone by deactivate
    per_workspace: Callable[[Workspace], None] | None = None  # after the Workspace is built
    context: Callable[[], AbstractContextManager[Any]] | None = None
    wrap: Callable[[ReferenceDriver], Any] | None = None  # a broken driver around the reference
    clauses: tuple[str, ...] = ()

    def build(self, root: Path, state_dir: Path) -> Any:
        """The mutant's driver over ``root`` (activates the mutant in this process)."""
        return (
            MutantDriver(self, root, state_dir)
            if self.wrap is None
            else self.wrap(MutantDriver(self, root, state_dir))
        )


MUTANTS: dict[str, Mutant] = {}
_INSTALL_LOCK = threading.RLock()
_UNDO: list[tuple[Any, str, Any]] = []  # (owner, name, original or _ABSENT), newest last
_ACTIVE: list[tuple[str, contextlib.ExitStack]] = []
_ABSENT = object()


def activate(mutant: Mutant) -> None:
    """Make ``mutant`` the one active mutant of this process (undoing the previous one).

    Raises ``AttributeError`` when an engine name the mutant replaces no longer exists:
    the mutant is out of date, an error of the zoo, never a catch.
    """
    with _INSTALL_LOCK:
        if _ACTIVE and _ACTIVE[0][0] == mutant.name:
            return
        deactivate()
        stack = contextlib.ExitStack()
        try:
            if mutant.install is not None:
                mutant.install()
            if mutant.context is not None:
                stack.enter_context(mutant.context())
        except BaseException:
            stack.close()
            _undo_replacements()
            raise
        _ACTIVE.append((mutant.name, stack))


def deactivate() -> None:
    """Put the reference back: undo every replacement and leave every context."""
    with _INSTALL_LOCK:
        while _ACTIVE:
            _ACTIVE.pop()[1].close()
        _undo_replacements()


def _undo_replacements() -> None:
    while _UNDO:
        owner, name, original = _UNDO.pop()
        if original is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


class MutantDriver(ReferenceDriver):
    """The reference driver with one mutant's defect."""

    def __init__(self, mutant: Mutant, root: Path, state_dir: Path) -> None:
        activate(mutant)
        super().__init__(root, state_dir)
        self.name = f"mutant:{mutant.name}"
        if mutant.per_workspace is not None:
            mutant.per_workspace(self.workspace)


def register(mutant: Mutant) -> Callable[[Path, Path], Any]:
    """Add ``mutant`` to ``MUTANTS``; its ``DriverFactory``."""
    if mutant.name in MUTANTS:
        raise ValueError(f"two mutants named {mutant.name}")
    MUTANTS[mutant.name] = mutant

    def factory(root: Path, state_dir: Path) -> Any:
        return mutant.build(root, state_dir)

    factory.__name__ = mutant.name
    factory.__doc__ = mutant.defect
    return factory


_register = register


def _replace(module: Any, name: str, value: Any) -> None:
    if not hasattr(module, name):
        raise AttributeError(f"{module.__name__} has no {name}: the mutant is out of date")
    _UNDO.append((module, name, vars(module).get(name, _ABSENT)))
    setattr(module, name, value)


# -- stale detection and read records (TRACK) --------------------------------------------


class _MtimeTracker(_access.AccessTracker):
    """Freshness by size and mtime instead of the content hash."""

    def require_fresh(
        self,
        session_id: str,
        key: str,
        *,
        current_sha256: str,
        expected_sha256: str | None = None,
        display_path: str = "",
    ) -> None:
        if expected_sha256 is not None:
            super().require_fresh(
                session_id, key, current_sha256=current_sha256, expected_sha256=expected_sha256
            )
            return
        record = self.get(session_id, key)
        if record is None or not record.full:
            raise ToolError("NOT_READ", f"{display_path or key} has not been read")
        now = os.stat(key)
        if (now.st_size, now.st_mtime_ns) != (record.size, record.mtime_ns):
            raise ToolError("STALE", f"{display_path or key} changed (size or mtime)")


mtime_only_stale_check = _register(
    Mutant(
        name="mtime_only_stale_check",
        defect="Freshness compares size and mtime, not the content hash.",
        areas=("TRACK",),
        per_workspace=lambda ws: setattr(ws, "access", _MtimeTracker()),
    )
)


class _TouchTracker(_access.AccessTracker):
    """Any mtime change counts as a change, even when the bytes are the same."""

    def require_fresh(self, session_id: str, key: str, **kwargs: Any) -> None:
        super().require_fresh(session_id, key, **kwargs)
        record = self.get(session_id, key)
        unchanged = record is None or os.stat(key).st_mtime_ns == record.mtime_ns
        if kwargs.get("expected_sha256") is None and not unchanged:
            raise ToolError("STALE", f"{key} was modified (mtime)")


touch_is_stale = _register(
    Mutant(
        name="touch_is_stale",
        defect="A touch that changes only the mtime is reported STALE.",
        areas=("TRACK",),
        per_workspace=lambda ws: setattr(ws, "access", _TouchTracker()),
    )
)


class _PartialIsFullTracker(_access.AccessTracker):
    def record_read(self, session_id: str, key: str, **kwargs: Any) -> None:
        super().record_read(session_id, key, **{**kwargs, "full": True})


partial_read_authorizes = _register(
    Mutant(
        name="partial_read_authorizes",
        defect="A partial read (a line range, a truncated read) authorizes a write or an edit.",
        areas=("TRACK", "WRITE"),
        per_workspace=lambda ws: setattr(ws, "access", _PartialIsFullTracker()),
    )
)


class _SharedTracker(_access.AccessTracker):
    """One record per file, whoever read it."""

    def record_read(self, session_id: str, key: str, **kwargs: Any) -> None:
        super().record_read("", key, **kwargs)

    def forget(self, session_id: str, key: str) -> None:
        super().forget("", key)

    def get(self, session_id: str, key: str) -> _access.AccessRecord | None:
        return super().get("", key)


shared_read_records = _register(
    Mutant(
        name="shared_read_records",
        defect="Read records are shared across sessions: B's read authorizes A's write.",
        areas=("TRACK",),
        per_workspace=lambda ws: setattr(ws, "access", _SharedTracker()),
    )
)


class _ForgetfulTracker(_access.AccessTracker):
    def record_write(self, session_id: str, key: str, **kwargs: Any) -> None:
        """The session's own write leaves its record at the old hash."""


write_keeps_old_record = _register(
    Mutant(
        name="write_keeps_old_record",
        defect="After its own write the session's record still holds the old hash.",
        areas=("TRACK",),
        per_workspace=lambda ws: setattr(ws, "access", _ForgetfulTracker()),
    )
)


class _TrustingTracker(_access.AccessTracker):
    def require_fresh(self, session_id: str, key: str, **kwargs: Any) -> None:
        if kwargs.get("expected_sha256") is not None:
            return  # any expected_sha256 is taken on trust
        super().require_fresh(session_id, key, **kwargs)


expected_sha256_trusted = _register(
    Mutant(
        name="expected_sha256_trusted",
        defect="Any expected_sha256 stands in for a read, whether it matches the disk or not.",
        areas=("WRITE", "TRACK"),
        per_workspace=lambda ws: setattr(ws, "access", _TrustingTracker()),
    )
)


def _no_recheck() -> None:
    def verifier(workspace: Any, target: Any, old_bytes: bytes) -> Callable[[], None]:
        return lambda: None

    _replace(_write, "_verifier", verifier)


no_recheck_in_lock = _register(
    Mutant(
        name="no_recheck_in_lock",
        defect="The freshness check is not repeated inside the critical section before the rename.",
        areas=("TRACK",),
        install=_no_recheck,
    )
)


# -- paths (PATH) ---------------------------------------------------------------------------


string_prefix_confinement = _register(
    Mutant(
        name="string_prefix_confinement",
        defect="Confinement compares strings by prefix: /ws_evil is inside /ws.",
        areas=("PATH",),
        install=lambda: _replace(_paths, "is_within", lambda path, root: path.startswith(root)),
    )
)


class _NewFileBranchResolver(_paths._Resolver):
    """A path whose last components do not exist yet is taken as it is (no re-check)."""

    def _result(self, logical: str, current: str, current_st: Any, tail: list[str]) -> Any:
        names = [part for part in tail if part not in ("", ".")]
        if not names or ".." in names:
            return super()._result(logical, current, current_st, tail)
        real = os.path.join(current, *names)
        return _paths.WorkspacePath(
            requested=self.requested,
            logical=logical,
            real=real,
            relative=os.path.relpath(real, self.root).replace(os.sep, "/"),
            crossed_link=self.crossed_link,
            exists=False,
            kind=_paths.MISSING,
            nlink=0,
        )


symlink_denial_new_file_branch = _register(
    Mutant(
        name="symlink_denial_new_file_branch",
        defect="A path through a symlink to the outside whose target does not exist falls "
        "into the new-file branch, which does not re-check confinement.",
        areas=("PATH",),
        install=lambda: _replace(_paths, "_Resolver", _NewFileBranchResolver),
    )
)


# -- edits (EDIT) -------------------------------------------------------------------------------


first_match_on_ambiguity = _register(
    Mutant(
        name="first_match_on_ambiguity",
        defect="Of several matches without replace_all, the first is edited.",
        areas=("EDIT",),
        install=lambda: _replace(_matching, "_choose", lambda hay, found, spec, strategy: found[0]),
    )
)


def _lf_only() -> None:
    original = _text.encode

    def encode(text: str, like: Any = None) -> bytes:
        return original(text.replace("\r\n", "\n"), like)

    _replace(_text, "encode", encode)


crlf_rewritten_as_lf = _register(
    Mutant(
        name="crlf_rewritten_as_lf",
        defect="Edited text is written with LF line breaks, whatever the file had.",
        areas=("EDIT",),
        install=_lf_only,
    )
)


def _no_bom() -> None:
    original = _text.encode

    def encode(text: str, like: Any = None) -> bytes:
        return original(text, attrs.evolve(like, bom=False) if like is not None else None)

    _replace(_text, "encode", encode)


bom_dropped = _register(
    Mutant(
        name="bom_dropped",
        defect="An edited file loses its byte-order mark.",
        areas=("EDIT",),
        install=_no_bom,
    )
)


def _no_no_change() -> None:
    validate = _matching.validate

    def lenient(spec: EditSpec) -> None:
        try:
            validate(spec)
        except ToolError as error:
            if error.code != "NO_CHANGE":
                raise

    def apply(
        shown: str, text: str, specs: Sequence[EditSpec], newline: Any, lines: Any = None
    ) -> _matching.Edited:
        return _matching.edit_text(text, specs, newline=newline, lines=lines)

    _replace(_matching, "validate", lenient)
    _replace(_edit_text, "apply_specs", apply)


no_change_not_raised = _register(
    Mutant(
        name="no_change_not_raised",
        defect="An edit whose old_string equals its new_string succeeds instead of NO_CHANGE.",
        areas=("EDIT",),
        install=_no_no_change,
    )
)


def _edits_one_by_one() -> None:
    original = _edit.edit

    def edit(session: Any, path: str, edits: Sequence[Any], **kwargs: Any) -> Any:
        result = None
        for one in edits:  # each edit published on its own: a later failure keeps the earlier
            result = original(session, path, [one], **kwargs)
        return result

    _replace(_edit, "edit", edit)


edits_not_all_or_nothing = _register(
    Mutant(
        name="edits_not_all_or_nothing",
        defect="Several edits in one call are published one by one; a failing one leaves the "
        "earlier ones applied.",
        areas=("EDIT",),
        install=_edits_one_by_one,
    )
)


# -- writes (WRITE) -------------------------------------------------------------------------------


def _in_place() -> None:
    def replace_in_place(
        fs: Any,
        real_path: str,
        data: bytes,
        *,
        mode: int | None = None,
        verify: Any = None,
        previous: bytes | None = None,
    ) -> tuple[str, ...]:
        if verify is not None:
            verify()
        fd = os.open(real_path, os.O_WRONLY | os.O_TRUNC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return ()

    _replace(_write, "atomic_replace", replace_in_place)


non_atomic_write = _register(
    Mutant(
        name="non_atomic_write",
        defect="A replace truncates the file and writes it in place (no temp file, no rename).",
        areas=("WRITE",),
        install=_in_place,
    )
)


def _default_mode() -> None:
    original = _atomic.atomic_replace

    def replace(
        fs: Any,
        real_path: str,
        data: bytes,
        *,
        mode: int | None = None,
        verify: Any = None,
        previous: bytes | None = None,
    ) -> tuple[str, ...]:
        return original(fs, real_path, data, mode=None, verify=verify, previous=previous)

    _replace(_write, "atomic_replace", replace)


mode_bits_not_kept = _register(
    Mutant(
        name="mode_bits_not_kept",
        defect="A replaced file gets default permissions instead of its own.",
        areas=("WRITE",),
        install=_default_mode,
    )
)


class _NoSyncFileSystem(FileSystem):
    def fsync(self, fd: int) -> None:
        """Nothing reaches the disk before the rename."""

    def fsync_dir(self, path: str) -> None:
        """The rename is not made durable."""


def _no_fsync() -> None:
    _replace(FileSystem, "fsync", _NoSyncFileSystem.fsync)
    _replace(FileSystem, "fsync_dir", _NoSyncFileSystem.fsync_dir)


no_fsync = _register(
    Mutant(
        name="no_fsync",
        defect="Neither the new bytes nor the directory are fsynced.",
        areas=("WRITE",),
        install=_no_fsync,
    )
)


temp_file_left_behind = _register(
    Mutant(
        name="temp_file_left_behind",
        defect="A failed write does not remove its temporary file.",
        areas=("WRITE", "EDIT"),
        install=lambda: _replace(_atomic, "_discard", lambda fs, temp, fd: None),
    )
)


# -- patches (PATCH) ------------------------------------------------------------------------------


def _file_by_file() -> None:
    from editspec.reference._results import FileChange, PatchResult
    from editspec.reference.patch._patch_parse import parse_patch
    from editspec.reference.transactions._transaction import commit

    def apply_patch(session: Any, patch: str, *, message_id: str | None = None) -> Any:
        workspace = session.workspace
        parsed = parse_patch(patch, workspace.limits)
        changes = []
        for op in parsed.ops:
            source = workspace.resolve(op.path)
            dest = workspace.resolve(op.move_to) if op.move_to is not None else None
            item = _patch._plan_one(session, op, source, dest)
            published = _patch.patch_file(item)

            def committed(_txn: str, published: Any = published) -> None:
                _patch_commit.update_access(workspace, session.id, [published])

            commit(workspace, [_patch_commit.planned_change(published)], on_committed=committed)
            changes.append(
                FileChange(
                    path=item.display,
                    op=item.op,
                    move_to=item.display_to,
                    old_sha256=None if item.old_bytes is None else _text.sha256_hex(item.old_bytes),
                    new_sha256=None if item.new_bytes is None else _text.sha256_hex(item.new_bytes),
                    diff=item.diff,
                )
            )
        return PatchResult(changes=tuple(changes), snapshot_created=False)

    _replace(_patch, "apply_patch", apply_patch)


patch_file_by_file = _register(
    Mutant(
        name="patch_file_by_file",
        defect="A patch is planned and published one file at a time, with no rollback: a "
        "failing file leaves the earlier ones changed.",
        areas=("PATCH",),
        install=_file_by_file,
    )
)


def _add_overwrites() -> None:
    original = _patch._plan_one

    def plan_one(session: Any, op: Any, source: Any, dest: Any) -> Any:
        if op.op != "add" or not os.path.lexists(source.real):
            return original(session, op, source, dest)
        with open(source.real, "rb") as handle:
            old = handle.read()
        new = _text.encode(op.content or "")
        return _patch._Planned(
            op="update",
            source=source,
            dest=None,
            display=source.logical_relative,
            display_to=None,
            old_bytes=old,
            new_bytes=new,
            mode=stat.S_IMODE(os.stat(source.real).st_mode),
            diff="",
        )

    _replace(_patch, "_plan_one", plan_one)


add_overwrites_existing = _register(
    Mutant(
        name="add_overwrites_existing",
        defect="'*** Add File' of an existing path overwrites it instead of ALREADY_EXISTS.",
        areas=("PATCH",),
        install=_add_overwrites,
    )
)


# -- rewind (SNAP) ---------------------------------------------------------------------------------


def _unchecked_rewind() -> None:
    def check_file(session: Any, relative: str, entries: Sequence[Any]) -> Any:
        workspace = session.workspace
        path = workspace.resolve(relative)
        current, current_mode = _rewind._current(workspace.fs, path.real, relative)
        first = entries[0]  # the state before the message, whatever happened since
        target_sha = first.before_sha256 if first.existed else None
        current_sha = None if current is None else _text.sha256_hex(current)
        if target_sha == current_sha:
            return None
        target = (
            None if target_sha is None else workspace.snapshots.read_blob(session.id, target_sha)
        )
        return _rewind._Restore(
            relative=relative,
            path=path,
            current=current,
            target=target,
            target_sha256=target_sha,
            mode=first.mode,
            current_mode=current_mode,
        )

    _replace(_rewind, "_check_file", check_file)


rewind_without_hash_check = _register(
    Mutant(
        name="rewind_without_hash_check",
        defect="Rewind restores the recorded bytes without checking that the files are as "
        "this session left them: someone else's later change is overwritten.",
        areas=("SNAP",),
        install=_unchecked_rewind,
    )
)


# -- search (GLOB) -----------------------------------------------------------------------------


class _FollowingEntry:
    """A directory entry that reports what its symlink points to, not the link."""

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self._entry = entry
        self.name = entry.name
        self.path = entry.path

    def is_symlink(self) -> bool:
        return False

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_dir(follow_symlinks=True)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_file(follow_symlinks=True)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._entry.stat(follow_symlinks=True)

    def inode(self) -> int:
        return self._entry.inode()


class _FollowingFileSystem(FileSystem):
    def scandir(self, path: str) -> Iterator[Any]:
        return iter([_FollowingEntry(entry) for entry in super().scandir(path)])


glob_follows_symlinks = _register(
    Mutant(
        name="glob_follows_symlinks",
        defect="The search walk follows symlinks: a link to a directory outside the root is "
        "entered and its files are listed.",
        areas=("PATH", "GLOB"),
        per_workspace=lambda ws: setattr(ws, "fs", _FollowingFileSystem()),
    )
)


# -- hostile input (PATH-060..062, LIMIT-030, LIMIT-031) ------------------------------------
# Appended block: one careless argument check each.

from editspec.reference import _errors as _hostile_errors  # noqa: E402
from editspec.reference.search import _grep_query as _hostile_grep_query  # noqa: E402
from editspec.reference.search import _search as _hostile_search  # noqa: E402


def _surrogates_replaced() -> None:
    original = _paths._requested_string

    def requested(path: object) -> str:
        if isinstance(path, str):
            path = path.encode("utf-8", "replace").decode("utf-8")
        return original(path)

    _replace(_paths, "_requested_string", requested)


surrogate_path_replaced = _register(
    Mutant(
        name="surrogate_path_replaced",
        defect="A path that cannot be encoded has its lone surrogates replaced with '?': the "
        "write lands on another file.",
        areas=("PATH",),
        install=_surrogates_replaced,
        clauses=("PATH-060",),
    )
)


def _unbounded_paths() -> None:
    _replace(_paths, "check_path_bounds", lambda workspace, requested, logical: None)
    _replace(_hostile_errors, "_bounded", lambda text, limit: text)
    _replace(_write, "_remove_directories", lambda workspace, created: None)


unbounded_paths = _register(
    Mutant(
        name="unbounded_paths",
        defect="Paths are not bounded before the walk, errors repeat them in full, and a "
        "failed create leaves the parent directories it made.",
        areas=("PATH",),
        install=_unbounded_paths,
        clauses=("PATH-061", "PATH-062"),
    )
)


def _grep_pattern_echoed() -> None:
    import re

    careless_check = _hostile_search.check_text

    def check_text(name: str, value: object, **options: Any) -> Any:
        options.pop("max_chars", None)
        return careless_check(name, value, **options)

    def compile_query(pattern: str, *, ignore_case: bool = False) -> Any:
        try:
            re.compile(pattern)
        except re.error as exc:
            message = f"invalid regular expression {pattern!r}: {exc}"
            raise ToolError("INVALID_ARGUMENT", message) from exc
        return _hostile_grep_query.compile_query(pattern, ignore_case=ignore_case)

    _replace(_hostile_errors, "_bounded", lambda text, limit: text)
    _replace(_hostile_search, "check_text", check_text)
    _replace(_hostile_search, "compile_query", compile_query)


grep_pattern_echoed = _register(
    Mutant(
        name="grep_pattern_echoed",
        defect="Grep takes a pattern of any length and its error quotes the whole pattern back.",
        areas=("LIMIT",),
        install=_grep_pattern_echoed,
        clauses=("LIMIT-030",),
    )
)


backtracking_allowed = _register(
    Mutant(
        name="backtracking_allowed",
        defect="Grep hands a pattern that backtracks catastrophically to Python's re, which "
        "cannot be stopped: the call hangs.",
        areas=("LIMIT",),
        install=lambda: _replace(
            _hostile_grep_query, "_backtracking_repeat", lambda items, inside_repeat=False: False
        ),
        clauses=("LIMIT-031",),
    )
)


# == unified diffs with git apply's semantics (PATCH-060 to PATCH-069) ==========================
# A separate block, kept at the end of the file: defects of unified-diff appliers, each caught
# by a clause of spec/test_patch_unified.py (or PATCH-044).


def _unified_git_file(change: Callable[[Any, int, Any], Any]) -> None:
    """Replace the parser of one ``diff --git`` section with ``change(parser, i, original)``."""
    from editspec.reference.patch import _patch_unified

    original = _patch_unified._UnifiedParser._git_file

    def _git_file(self: Any, i: int) -> Any:
        return change(self, i, original)

    _replace(_patch_unified._UnifiedParser, "_git_file", _git_file)


def _unified_hunks(change: Callable[[Any], Any]) -> None:
    """Every parsed unified hunk passes through ``change``."""
    from editspec.reference.patch import _patch_unified

    original = _patch_unified._UnifiedParser._hunk

    def _hunk(self: Any, start: int) -> Any:
        hunk, end = original(self, start)
        return change(hunk), end

    _replace(_patch_unified._UnifiedParser, "_hunk", _hunk)


def _strip_every_cr() -> None:
    from editspec.reference.patch import _patch_parse

    _replace(_patch_parse, "crlf_transport", lambda text: True)


unified_strips_cr = _register(
    Mutant(
        name="unified_strips_cr",
        defect="Every CR before a line break of a unified diff is dropped, as in the Codex "
        "format: an added CRLF file is written with LF and an end-of-line change is lost.",
        areas=("PATCH",),
        install=_strip_every_cr,
        clauses=("PATCH-060", "PATCH-061", "PATCH-062", "PATCH-063"),
    )
)


unified_ignores_no_newline_marker = _register(
    Mutant(
        name="unified_ignores_no_newline_marker",
        defect="'\\ No newline at end of file' is skipped: every file ends with a newline.",
        areas=("PATCH",),
        install=lambda: _unified_hunks(
            lambda hunk: attrs.evolve(
                hunk, old_missing_newline=False, new_missing_newline=False, end_of_file=False
            )
        ),
        clauses=("PATCH-062",),
    )
)


unified_adds_in_file_newline = _register(
    Mutant(
        name="unified_adds_in_file_newline",
        defect="Unified hunks are applied like Codex hunks: added lines take the file's "
        "newline style instead of the line ends the diff gives them.",
        areas=("PATCH",),
        install=lambda: _unified_hunks(lambda hunk: attrs.evolve(hunk, exact_newlines=False)),
        clauses=("PATCH-061", "PATCH-064", "PATCH-065", "PATCH-069"),
    )
)


def _transport_kept_exact() -> None:
    from editspec.reference.patch import _patch_unified

    original = _patch_unified.parse_unified

    def parse_unified(lines: Any, content: Any, budget: Any, first: int, **_: Any) -> Any:
        return original(lines, content, budget, first, exact=True)

    _replace(_patch_unified, "parse_unified", parse_unified)


crlf_transport_adds_lf = _register(
    Mutant(
        name="crlf_transport_adds_lf",
        defect="A diff whose every line ends in CRLF loses its CRs and then adds LF lines: a "
        "CRLF file patched through a Windows clipboard gets mixed endings.",
        areas=("PATCH",),
        install=_transport_kept_exact,
        clauses=("PATCH-069",),
    )
)


def _copy_as_rename(parser: Any, i: int, original: Any) -> Any:
    op, end = original(parser, i)
    if op is not None and op.op == "copy":
        op = attrs.evolve(op, op="update")
    return op, end


unified_copy_as_rename = _register(
    Mutant(
        name="unified_copy_as_rename",
        defect="A git copy is applied as a rename: the source is removed.",
        areas=("PATCH",),
        install=lambda: _unified_git_file(_copy_as_rename),
        clauses=("PATCH-065",),
    )
)


def _skip_binary(parser: Any, i: int, original: Any) -> Any:
    try:
        return original(parser, i)
    except ToolError as error:
        if "binary patch" not in error.message:
            raise
    end = i + 1
    while end < len(parser.lines) and not parser.lines[end].startswith("diff --git "):
        end += 1
    return None, end


unified_skips_binary = _register(
    Mutant(
        name="unified_skips_binary",
        defect="A binary section of a git diff is skipped while the patch's text files are "
        "patched, and the patch reports success.",
        areas=("PATCH",),
        install=lambda: _unified_git_file(_skip_binary),
        clauses=("PATCH-066",),
    )
)


def _drop_modes(parser: Any, i: int, original: Any) -> Any:
    op, end = original(parser, i)
    if op is None:
        return None, end
    if op.op == "update" and not op.hunks and op.move_to is None:
        return None, end  # a mode change alone: dropped, as appliers of text diffs do
    return attrs.evolve(op, executable=None), end


unified_drops_mode_changes = _register(
    Mutant(
        name="unified_drops_mode_changes",
        defect="git's mode lines are ignored: a chmod in a patch is dropped while the patch "
        "reports success.",
        areas=("PATCH",),
        install=lambda: _unified_git_file(_drop_modes),
        clauses=("PATCH-067",),
    )
)


# -- clauses proved by the small broken drivers of tests/spec (PATCH-047, TXN-012, LOCK-009) --
# Appended block: the flaw of each of those drivers as a defect of the reference engine.

from editspec.reference.patch import _patch_plan as _late_patch_plan  # noqa: E402
from editspec.reference.transactions import _transaction as _late_transaction  # noqa: E402


def _context_from_patch() -> None:
    import inspect
    import textwrap

    source = textwrap.dedent(inspect.getsource(_late_patch_plan.apply_hunks))
    kept = "out.append(next(region))  # context keeps the file's own bytes"
    if kept not in source:
        raise AttributeError("apply_hunks changed: the mutant context_from_patch is out of date")
    source = source.replace(kept, "next(region)  # the mutant: the patch's spelling is written")
    source = source.replace("next(added)\n", "out.append(next(added))\n", 1)
    scope: dict[str, Any] = {}
    exec(compile(source, _late_patch_plan.__file__, "exec"), vars(_late_patch_plan), scope)
    _replace(_late_patch_plan, "apply_hunks", scope["apply_hunks"])


context_from_patch = _register(
    Mutant(
        name="context_from_patch",
        defect="A hunk's context lines are written as the patch spells them, not as the file "
        "has them: a tolerant match rewrites trailing blanks, indentation and quotes.",
        areas=("PATCH",),
        install=_context_from_patch,
        clauses=("PATCH-047",),
    )
)


backup_bytes_only = _register(
    Mutant(
        name="backup_bytes_only",
        defect="The last check before publishing compares the backup link's bytes only: a save "
        "by rename (a new inode under the name) is missed and then overwritten.",
        areas=("TXN",),
        install=lambda: _replace(
            _late_transaction,
            "as_planned",
            lambda fs, step: fs.read_bytes(step.backup) == step.old_bytes,
        ),
        clauses=("TXN-012",),
    )
)


_LEAKED_LOCKS: list[Any] = []  # kept referenced: a collected hold() would release its lock


def _stale_keeps_lock() -> None:
    original = _edit.edit

    def edit(session: Any, path: str, *args: Any, **options: Any) -> Any:
        try:
            return original(session, path, *args, **options)
        except ToolError as error:
            if error.code == "STALE":  # the refusal returns early: its lock is never released
                key = session.workspace.resolve(path).canonical_key
                held = session.workspace.locks.hold([key])
                held.__enter__()
                _LEAKED_LOCKS.append(held)
            raise

    _replace(_edit, "edit", edit)


stale_keeps_lock = _register(
    Mutant(
        name="stale_keeps_lock",
        defect="An edit refused as STALE returns without releasing the file's lock: every "
        "later writer of that file blocks.",
        areas=("LOCK",),
        install=_stale_keeps_lock,
        clauses=("LOCK-009",),
    )
)
