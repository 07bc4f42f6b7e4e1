"""Engine mutants for the clauses about crashes, recovery, journals, locks and snapshots.

Each is the reference engine with one step of its protocol left out or done carelessly,
as ``mutant_zoo.py``'s are; the durability mutants of ``durability.py`` (context
managers the explorer hunts with) are registered here too, as ``dur_<name>``, when one of
the suite's own crash and power-loss clauses catches them (``targets.TARGETS``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import durability
from mutant_zoo import MUTANTS, Mutant, _replace, register
from targets import TARGETS

from editspec.reference import RecoveryReport, ToolError, _workspace
from editspec.reference.guards import _access, _locks
from editspec.reference.paths import _paths
from editspec.reference.remote import _remote, _remote_commit
from editspec.reference.search import _ignore, _scope, _search, _walk
from editspec.reference.snapshots import _snapshots
from editspec.reference.tools import _notebook, _write
from editspec.reference.transactions import _journal, _plan, _recovery, _rollback, _transaction


def _engine(
    name: str, defect: str, areas: tuple[str, ...], install: Any, clauses: tuple[str, ...] = ()
) -> None:
    register(Mutant(name=name, defect=defect, areas=areas, install=install, clauses=clauses))


for _mutant in durability.MUTANTS:
    if f"dur_{_mutant.name}" not in TARGETS:
        continue  # beyond the suite's clauses: caught by test_durability_mutants.py only
    register(
        Mutant(
            name=f"dur_{_mutant.name}",
            defect=_mutant.defect[0].upper() + _mutant.defect[1:] + ".",
            areas=("TXN", "RECOV", "WRITE", "SNAP"),
            context=_mutant.active,
        )
    )


@contextlib.contextmanager
def _no_lock(self: Any, keys: Any) -> Iterator[None]:
    yield


def _no_locks() -> None:
    _replace(_locks.LockTable, "hold", _no_lock)
    _replace(_write, "_verifier", lambda workspace, target, old_bytes: lambda: None)


_engine(
    "no_locks",
    "No per-file lock is taken and nothing is re-checked before the rename: concurrent "
    "writers race.",
    ("LOCK", "TXN"),
    _no_locks,
)


def _recover_nothing() -> None:
    _replace(_recovery, "_recover", lambda workspace: RecoveryReport())


_engine(
    "recovery_does_nothing",
    "recover() reports success and leaves interrupted transactions as they are.",
    ("RECOV", "TXN", "SNAP", "WRITE"),
    _recover_nothing,
)


def _no_recover_on_start() -> None:
    original = _workspace.Workspace.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **{**kwargs, "recover": False})

    _replace(_workspace.Workspace, "__init__", init)
    _replace(_workspace.Workspace, "_has_journals", lambda self: False)


_engine(
    "no_recovery_on_start",
    "A workspace opened over an interrupted transaction does not recover it first.",
    ("RECOV",),
    _no_recover_on_start,
)


def _trust_journals() -> None:
    def decode(data: bytes, *, root: str, txn_id: Any = None, where: str = "") -> Any:
        import json

        body = json.loads(data.decode("utf-8", "replace"))
        body.pop("checksum", None)
        entries = tuple(_journal._decode_entry(item, body["txn_id"]) for item in body["files"])
        return _journal.JournalRecord(
            version=_journal.VERSION,
            txn_id=body["txn_id"],
            state=body["state"],
            root=root,
            entries=entries,
        )

    _replace(_journal, "decode", decode)
    _replace(_journal, "check_relative", lambda path: str(path))


_engine(
    "journal_trusted",
    "A journal is used as it reads: no checksum, version or path check.",
    ("RECOV",),
    _trust_journals,
)


def _rollback_nothing() -> None:
    def roll_back(fs: Any, root: str, record: Any, *, owned: Any = None) -> list[str]:
        return []

    _replace(_rollback, "roll_back", roll_back)
    _replace(_transaction, "roll_back", roll_back)


_engine(
    "rollback_does_nothing",
    "A failed or interrupted transaction is not rolled back: what was published stays.",
    ("TXN", "RECOV", "SNAP"),
    _rollback_nothing,
)


def _not_sticky() -> None:
    _replace(_workspace.Workspace, "mark_needs_recovery", lambda self, reason: None)


_engine(
    "failure_not_sticky",
    "After a rollback that could not finish, the workspace goes on accepting changes.",
    ("RECOV",),
    _not_sticky,
)


def _no_snapshots() -> None:
    _replace(_snapshots.SnapshotStore, "record", lambda self, *args, **kwargs: False)


_engine(
    "snapshots_not_recorded",
    "No snapshot is ever recorded, whatever the result says.",
    ("SNAP",),
    _no_snapshots,
)


# -- paths -----------------------------------------------------------------------------------


def _replace_resolve(resolve: Any) -> None:
    """``resolve`` where the workspace calls it (it imports the function by name)."""
    _replace(_workspace, "resolve", resolve)


def _cwd_relative() -> None:
    original = _workspace.resolve

    def resolve(workspace: Any, path: Any) -> Any:
        text = os.fspath(path)
        if isinstance(text, str) and not os.path.isabs(text) and "\0" not in text:
            text = os.path.abspath(text)  # against the process's directory, not the root
        return original(workspace, text)

    _replace_resolve(resolve)


_engine(
    "relative_to_cwd",
    "A relative path is resolved against the process's current directory.",
    ("PATH",),
    _cwd_relative,
)


def _no_dotdot() -> None:
    original = _workspace.resolve

    def resolve(workspace: Any, path: Any) -> Any:
        if isinstance(path, str) and ".." in path.split("/"):
            raise ToolError("OUTSIDE_WORKSPACE", f"{path}: '..' is not allowed")
        return original(workspace, path)

    _replace_resolve(resolve)


_engine(
    "dotdot_always_refused",
    "Any '..' component is refused, even one that stays inside the root.",
    ("PATH",),
    _no_dotdot,
)


def _absolute_refused() -> None:
    original = _workspace.resolve

    def resolve(workspace: Any, path: Any) -> Any:
        if isinstance(path, str) and os.path.isabs(path):
            raise ToolError("OUTSIDE_WORKSPACE", f"{path}: absolute paths are not allowed")
        return original(workspace, path)

    _replace_resolve(resolve)


_engine(
    "absolute_paths_refused",
    "An absolute path is refused even when it names a file inside the root.",
    ("PATH",),
    _absolute_refused,
)


def _no_symlinks() -> None:
    original = _workspace.resolve

    def resolve(workspace: Any, path: Any) -> Any:
        result = original(workspace, path)
        if result.crossed_link:
            raise ToolError("OUTSIDE_WORKSPACE", f"{path} goes through a symlink")
        return result

    _replace_resolve(resolve)


_engine(
    "every_symlink_refused",
    "A path through any symlink is refused, even one whose target is inside the root.",
    ("PATH",),
    _no_symlinks,
)


def _last_link_only() -> None:
    """Only the last component's symlink is checked: links higher up are followed freely."""
    original = _workspace.resolve

    def resolve(workspace: Any, path: Any) -> Any:
        try:
            return original(workspace, path)
        except ToolError as error:
            text = os.fspath(path)
            joined = os.path.normpath(os.path.join(workspace.root, text))
            careful = os.path.isabs(text) or ".." in text.split("/") or os.path.islink(joined)
            if error.code != "OUTSIDE_WORKSPACE" or careful:
                raise
            real = os.path.join(os.path.realpath(os.path.dirname(joined)), os.path.basename(joined))
            exists = os.path.lexists(real)
            return _paths.WorkspacePath(
                requested=text,
                logical=joined,
                real=real,
                relative=os.path.relpath(joined, workspace.root),
                crossed_link=True,
                exists=exists,
                kind=_paths.FILE if os.path.isfile(real) else _paths.MISSING,
                nlink=os.stat(real).st_nlink if exists else 0,
            )

    _replace_resolve(resolve)


_engine(
    "parent_links_followed",
    "Only a symlink in the last component is checked: a directory symlink higher up the "
    "path is followed out of the root.",
    ("PATH",),
    _last_link_only,
)


def _loops_hang() -> None:
    original = _paths._Resolver.follow

    def follow(self: Any, link: str, inside: bool) -> list[str]:
        try:
            return original(self, link, inside)
        except ToolError as error:
            if error.code != "INVALID_ARGUMENT":
                raise
            time.sleep(30)  # a loop is followed until something gives up
            raise

    _replace(_paths._Resolver, "follow", follow)


_engine(
    "symlink_loop_hangs",
    "A symlink loop is followed for a long time before it is reported.",
    ("PATH",),
    _loops_hang,
)


# -- search ----------------------------------------------------------------------------------


def _no_gitignore() -> None:
    _replace(_walk.SearchTree, "read_ignore", lambda self, *args, **kwargs: None)


_engine(
    "gitignore_not_read",
    "No .gitignore is read: ignored files are listed and searched.",
    ("GLOB", "GREP"),
    _no_gitignore,
)


def _root_gitignore_only() -> None:
    original = _walk.SearchTree.read_ignore

    def read_ignore(self: Any, relative: str, base: str, *args: Any, **kwargs: Any) -> Any:
        if base:
            return None
        return original(self, relative, base, *args, **kwargs)

    _replace(_walk.SearchTree, "read_ignore", read_ignore)


_engine(
    "nested_gitignore_not_read",
    "Only the root's .gitignore is read; those of subdirectories are not.",
    ("GLOB", "GREP"),
    _root_gitignore_only,
)


def _no_negation() -> None:
    original = _ignore.parse_rules

    def parse_rules(content: bytes, source: str) -> list[Any]:
        return [rule for rule in original(content, source) if not rule.negated]

    _replace(_ignore, "parse_rules", parse_rules)


_engine(
    "negation_ignored",
    "'!' lines of a .gitignore are dropped: nothing is ever re-included.",
    ("GLOB", "GREP"),
    _no_negation,
)


def _dir_only_ignored() -> None:
    import attrs

    original = _ignore.parse_rules

    def parse_rules(content: bytes, source: str) -> list[Any]:
        return [attrs.evolve(rule, dir_only=False) for rule in original(content, source)]

    _replace(_ignore, "parse_rules", parse_rules)


_engine(
    "trailing_slash_ignored",
    "A .gitignore pattern with a trailing '/' also excludes files of that name.",
    ("GLOB",),
    _dir_only_ignored,
)


def _path_argument_ignored() -> None:
    original = _scope.search_root

    def search_root(workspace: Any, path: Any) -> Any:
        original(workspace, path)  # still refuses a path outside the root
        return original(workspace, None)

    _replace(_scope, "search_root", search_root)


_engine(
    "path_argument_ignored",
    "A search's path argument is checked but not used: the whole root is searched.",
    ("GLOB", "GREP"),
    _path_argument_ignored,
)


def _include_ignored() -> None:
    _replace(_search, "_include", lambda include: None)


_engine(
    "include_ignored",
    "Grep's include glob is ignored: every file is searched.",
    ("GREP",),
    _include_ignored,
)


# -- read records ----------------------------------------------------------------------------


class _AnyReadTracker(_access.AccessTracker):
    """A session that has read any file in full may write every file."""

    def require_fresh(self, session_id: str, key: str, **kwargs: Any) -> None:
        if self.get(session_id, key) is None and kwargs.get("expected_sha256") is None:
            with self._lock:
                if any(sid == session_id and r.full for (sid, _k), r in self._records.items()):
                    return
        super().require_fresh(session_id, key, **kwargs)


register(
    Mutant(
        name="any_read_authorizes",
        defect="A full read of one file authorizes writing any other file.",
        areas=("TRACK",),
        per_workspace=lambda ws: setattr(ws, "access", _AnyReadTracker()),
    )
)


# -- remote workspaces -----------------------------------------------------------------------


def _no_read_back() -> None:
    def publish_one(files: Any, change: Any) -> tuple[Any, bool]:
        try:
            current = _remote_commit.read_or_none(files, change.path)
        except ToolError as error:
            return error, False
        if current != change.old_text:
            return ToolError("STALE", f"{change.shown} changed in the client"), False
        try:
            files.write_text(change.path, change.new_text)
        except ToolError as error:
            return error, True
        return None, True  # whatever the client now holds

    _replace(_remote_commit, "_publish_one", publish_one)


_engine(
    "remote_no_read_back",
    "A remote write is not read back: a client that stores other text is taken at its word.",
    ("REMOTE",),
    _no_read_back,
)


def _no_remote_restore() -> None:
    def restore(files: Any, change: Any, *, verified_new: bool) -> Any:
        return _remote_commit._Restore(state=_remote_commit.NOT_RESTORED, note="not attempted")

    _replace(_remote_commit, "_restore", restore)


_engine(
    "remote_no_restore",
    "When a remote multi-file change fails, the files already written are not restored.",
    ("REMOTE",),
    _no_remote_restore,
)


def _remote_writes_locally() -> None:
    original = _remote.RemoteSession.write

    def write(self: Any, path: str, content: Any, **kwargs: Any) -> Any:
        result = original(self, path, content, **kwargs)
        local = os.path.join(self.workspace.root, path)
        if isinstance(content, str) and os.path.isdir(os.path.dirname(local)):
            with open(local, "w", encoding="utf-8") as handle:  # a cache beside the client
                handle.write(content)
        return result

    _replace(_remote.RemoteSession, "write", write)


_engine(
    "remote_writes_locally",
    "A remote write also writes a local file of the same name.",
    ("REMOTE",),
    _remote_writes_locally,
)


# -- patches and notebooks -------------------------------------------------------------------


def _patch_default_mode() -> None:
    original = _plan._step

    def step(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **{**kwargs, "mode": None})

    _replace(_plan, "_step", step)


_engine(
    "patch_mode_not_kept",
    "A file a patch updates or moves gets the default mode instead of its own.",
    ("PATCH",),
    _patch_default_mode,
)


def _attachments_dropped() -> None:
    original = _notebook._replaced_cell

    def replaced_cell(*args: Any, **kwargs: Any) -> Any:
        cell = original(*args, **kwargs)
        if "attachments" in cell:
            cell["attachments"] = {}
        cell["metadata"] = {}
        return cell

    _replace(_notebook, "_replaced_cell", replaced_cell)


_engine(
    "cell_metadata_dropped",
    "An edited cell loses its metadata and attachments.",
    ("NB",),
    _attachments_dropped,
)


# -- a server killed mid-write (the ``process`` clauses, served by ``zoo.py serve``) --------


def _in_place_publish() -> None:
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
            for start in range(0, len(data), 512):  # small writes, as a buffered stream makes
                os.write(fd, data[start : start + 512])
            os.fsync(fd)
        finally:
            os.close(fd)
        return ()

    _replace(_write, "atomic_replace", replace_in_place)
    install = MUTANTS["patch_file_by_file"].install
    assert install is not None
    install()


_engine(
    "in_place_publish",
    "Nothing is published atomically: a replace truncates the file and writes it in place, "
    "and a patch commits its files one at a time.",
    ("WRITE", "TXN"),
    _in_place_publish,
)


def _truncate_then_write() -> None:
    def replace_in_place(
        fs: Any, real_path: str, data: bytes, *, mode: int | None = None, verify: Any = None
    ) -> tuple[str, ...]:
        if verify is not None:
            verify()
        fd = os.open(real_path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, data)  # one write: the empty file lasts a moment only
        finally:
            os.close(fd)
        return ()

    _replace(_write, "atomic_replace", replace_in_place)


_engine(
    "truncate_then_write",
    "A replace truncates the file, then writes the new bytes in one call (as Node's "
    "fs.writeFile does): a reader in between sees an empty file.",
    ("WRITE",),
    _truncate_then_write,
)


# -- more servers killed mid-write (WRITE-040, SNAP-040; ``zoo.SERVED_BY``) ------------------


def _write_in_pieces(path: str, data: bytes, flags: int) -> None:
    fd = os.open(path, os.O_WRONLY | flags, 0o644)
    try:
        for start in range(0, len(data), 512):  # small writes, as a buffered stream makes
            os.write(fd, data[start : start + 512])
        os.fsync(fd)
    finally:
        os.close(fd)


def _create_in_place() -> None:
    def create(fs: Any, real_path: str, data: bytes, *, mode: int | None = None) -> tuple[str, ...]:
        _write_in_pieces(real_path, data, os.O_CREAT | os.O_EXCL)
        return ()

    _replace(_write, "atomic_create", create)


_engine(
    "create_in_place",
    "A new file is created under its name and written there in pieces: a kill leaves a "
    "partial file where none was.",
    ("WRITE",),
    _create_in_place,
    ("WRITE-040",),  # served: run over MCP only (zoo.SERVED_BY)
)


def _commit_in_place() -> None:
    def commit(
        workspace: Any, changes: Any, *, on_prepared: Any = None, on_committed: Any = None
    ) -> str:
        txn_id = _transaction.new_transaction_id()
        if on_prepared is not None:
            on_prepared(txn_id)
        for change in changes:  # no journal, no backup: each file rewritten where it is
            path = change.target.real
            if change.op in ("delete", "move"):
                os.unlink(path)
            if change.op == "move":
                path = change.move_to.real
            if change.op != "delete":
                os.makedirs(os.path.dirname(path), exist_ok=True)
                _write_in_pieces(path, change.new_bytes, os.O_CREAT | os.O_TRUNC)
        if on_committed is not None:
            on_committed(txn_id)
        return txn_id

    _replace(_transaction, "commit", commit)


_engine(
    "commit_in_place",
    "A transaction (a patch, a rewind) writes its files one by one in place, with no "
    "journal: a kill leaves some files old, some new and one torn.",
    ("TXN", "SNAP"),
    _commit_in_place,
    ("SNAP-040",),  # served: run over MCP only (zoo.SERVED_BY)
)
