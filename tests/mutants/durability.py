"""Durability mutants: the transaction protocol with one step done wrong (DESIGN §4, §5).

Each mutant is a context manager that replaces one function of the engine's transaction
modules (``_transaction``, ``_journal``, ``_recovery``, ``_rollback``) by a small
variant of it for the length of a ``with`` block, in this process: a step skipped, two
steps swapped, one call made differently. Everything else is the reference engine.

``hunt(mutant, scenario)`` runs the explorer's checks in-process while the mutant is
active, cheapest first, and stops at the first failure: a crash at every counted
operation of the scenario's last step (then recovery), every power-loss state under the
``ordered`` model, then under ``strict``, then a crash at every operation of the
recovery after each crash point. The failure is a scenario (``editspec replay`` re-runs
it), so a test can replay it with the mutant active and see the same failure.

Some mutants are out of the explorer's reach, and each comes with the check that
catches it (``Mutant.special``), whose failure is a scenario too:

* ``journals_oldest_first``: recovery settles two interrupted transactions oldest first.
  Two journals that touch one directory only exist when a second process, already
  running when the first died, builds on what the first left before anyone recovers;
  the explorer's scenarios have one process. ``hunt_stacked`` runs a scenario of two
  (``Scenario.phases``): B starts a patch and, right after its check for journals left
  behind, is preempted; A adds a file in a new directory and dies; B goes on, adds its
  own file in A's directory, and dies. Recovery must undo B before A, or A's directory
  is not empty when A's rollback removes it, and stays. (Over one *file* the race is
  closed: B's commit re-reads the file under its lock and finds A's bytes, STALE.)
* ``stage_without_excl``: a stage file is opened without ``O_EXCL``. Stage names carry
  the (random) transaction id, so nothing ever exists there before the stage is created.
  ``squatted_stage`` pins the id, plants a symlink at the stage name that points at
  another file of the workspace, and runs the patch: it must fail and change nothing.
* the ``*_sync_failure_is_success`` and ``*_sync_retried`` mutants: an fsync that fails
  after a commit point is answered with success, or retried and trusted. The explorer
  cuts power only after a clean run; ``hunt_fsync_failure`` fails the mutant's fsync
  with EIO first (``Mutant.fail`` picks it), then cuts the power in every state
  (``fault_injection.fsync_failures``), in a model where what a failed fsync covered
  stays lossy whatever a retry says.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import attrs

from editspec.fault_injection import harness, standard, trees
from editspec.fault_injection.explore import DEFAULT_LIMITS
from editspec.fault_injection.faultfs import OpEvent, OpRecord
from editspec.fault_injection.fsync_failures import (
    COMMIT_RECORD_FSYNC,
    Pick,
    check_fsync_failure,
    fsync_dir_after,
    fsync_dir_after_unlink_of,
)
from editspec.fault_injection.scenario import SESSION, Phase, Scenario
from editspec.reference import Workspace
from editspec.reference.tools import _atomic, _no_clobber
from editspec.reference.transactions import (
    _intents,
    _journal,
    _recovery,
    _rollback,
    _transaction,
)

# -- small tools to build variants ------------------------------------------------------------


_ABSENT = object()


@contextlib.contextmanager
def replaced(module: Any, name: str, value: Any) -> Iterator[None]:
    """``module.name = value`` for the length of the block (a new global is removed)."""
    original = vars(module).get(name, _ABSENT)
    setattr(module, name, value)
    try:
        yield
    finally:
        if original is _ABSENT:
            delattr(module, name)
        else:
            setattr(module, name, original)


class FsView:
    """A port seen through a filter: ``fsync`` of some files and ``fsync_dir`` of some
    directories do nothing; every other call goes to ``inner`` unchanged."""

    def __init__(
        self,
        inner: Any,
        *,
        skip_fsync: Callable[[str], bool] = lambda path: False,
        skip_fsync_dir: Callable[[str], bool] = lambda path: False,
        open_stage: Callable[[str, int], int] | None = None,
    ) -> None:
        self.inner = inner
        self.skip_fsync = skip_fsync
        self.skip_fsync_dir = skip_fsync_dir
        self.open_stage = open_stage
        self.paths: dict[int, str] = {}

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        if self.open_stage is not None and path.endswith(".stage"):
            fd = self.open_stage(path, mode)
        else:
            fd = self.inner.create_exclusive(path, mode)
        self.paths[fd] = path
        return fd

    def fsync(self, fd: int) -> None:
        if not self.skip_fsync(self.paths.get(fd, "")):
            self.inner.fsync(fd)

    def fsync_dir(self, path: str) -> None:
        if not self.skip_fsync_dir(path):
            self.inner.fsync_dir(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class WorkspaceView:
    """A workspace whose ``fs`` is another port (for the engine function being varied)."""

    def __init__(self, workspace: Workspace, fs: Any) -> None:
        self._workspace = workspace
        self.fs = fs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._workspace, name)


# -- the mutants ---------------------------------------------------------------------------------


@contextlib.contextmanager
def no_stage_fsync() -> Iterator[None]:
    """Stage files are published without an fsync of their bytes."""
    original = _transaction._publish

    def publish(workspace: Any, plan: Any, owned: Any) -> None:
        view = FsView(workspace.fs, skip_fsync=lambda path: path.endswith(".stage"))
        original(WorkspaceView(workspace, view), plan, owned)

    with replaced(_transaction, "_publish", publish):
        yield


@contextlib.contextmanager
def no_directory_fsync() -> Iterator[None]:
    """The directories of the stages, backups and published files are never fsynced."""
    with replaced(_transaction, "_fsync_dirs", lambda fs, directories: None):
        yield


@contextlib.contextmanager
def journal_after_renames() -> Iterator[None]:
    """The ``preparing`` journal is written after the files are published, not before."""
    original = _transaction._publish

    def publish(workspace: Any, plan: Any, owned: Any) -> None:
        later = SimpleNamespace(**{**vars(_journal), "write": lambda fs, directory, record: None})
        view = FsView(workspace.fs, skip_fsync_dir=lambda path: path == workspace.journal_dir)
        with replaced(_transaction, "_journal", later):
            original(WorkspaceView(workspace, view), plan, owned)
        _journal.write(workspace.fs, workspace.journal_dir, plan.record)
        workspace.fs.fsync_dir(workspace.journal_dir)

    with replaced(_transaction, "_publish", publish):
        yield


@contextlib.contextmanager
def journal_not_fsynced() -> Iterator[None]:
    """A journal's temp file is renamed into place without an fsync of its bytes."""
    original = _journal.write

    def write(fs: Any, journal_dir: str, record: Any) -> None:
        original(FsView(fs, skip_fsync=lambda path: True), journal_dir, record)

    with replaced(_journal, "write", write):
        yield


@contextlib.contextmanager
def recovery_drops_journal_first() -> Iterator[None]:
    """Recovery deletes a journal, then restores the files it names."""
    original = _recovery.settle

    def settle(workspace: Any, record: Any) -> Any:
        _journal.remove(workspace.fs, workspace.journal_dir, record.txn_id)
        # Nothing of the journal is written again or removed after that (recovery writes
        # the record it acts on again first: that would undo the defect).
        gone = SimpleNamespace(
            **{
                **vars(_journal),
                "remove": lambda fs, directory, txn: None,
                "write": lambda fs, directory, record: None,
            }
        )
        with replaced(_transaction, "_journal", gone):
            return original(workspace, record)

    with replaced(_recovery, "settle", settle):
        yield


@contextlib.contextmanager
def journals_oldest_first() -> Iterator[None]:
    """Recovery settles interrupted transactions oldest first, so an older backup is
    restored before a newer one over the same file, and the newer one wins."""

    def in_order(items: Any, *, key: Any = None, reverse: bool = False) -> list[Any]:
        return sorted(items, key=key)

    with replaced(_recovery, "sorted", in_order):
        yield


@contextlib.contextmanager
def stage_without_excl() -> Iterator[None]:
    """Stage files are opened with ``O_CREAT|O_TRUNC``: no ``O_EXCL``, links followed.

    A name that does not exist yet is still created through the port (as ``O_CREAT``
    alone would create it), so the fault and power-loss models see the same calls as
    for the reference; only a name that already exists is opened differently.
    """
    original = _transaction._publish

    def publish(workspace: Any, plan: Any, owned: Any) -> None:
        fs = workspace.fs

        def open_stage(path: str, mode: int) -> int:
            if not os.path.lexists(path):
                return int(fs.create_exclusive(path, mode))
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)

        view = FsView(fs, open_stage=open_stage)
        original(WorkspaceView(workspace, view), plan, owned)

    with replaced(_transaction, "_publish", publish):
        yield


@contextlib.contextmanager
def move_by_copy() -> Iterator[None]:
    """A move is published as a copy written straight to the new path, then the old
    path's removal: the new file never goes through the stage that the journal names."""
    original = _transaction.publish_change

    def publish_change(fs: Any, op: str, steps: Any, owned: Any) -> None:
        if op != "move":
            original(fs, op, steps, owned)
            return
        source, destination = steps
        fd = fs.create_exclusive(destination.path, 0o644)
        owned.published.add(destination.path)
        try:
            fs.write(fd, destination.new_bytes)
        finally:
            fs.close(fd)
        fs.unlink(source.path)
        fs.unlink(destination.stage)
        owned.stages.discard(destination.stage)

    with replaced(_transaction, "publish_change", publish_change):
        yield


@contextlib.contextmanager
def move_link_unsynced() -> Iterator[None]:
    """The Move tool links the new name and unlinks the old one with no fsync of the new
    name's directory in between: a power cut can keep the unlink and lose the link."""

    def publish_file(workspace: Any, source: str, dest: str) -> Any:
        workspace.fs.link(source, dest)
        workspace.fs.unlink(source)
        return ("link", "unlink_source"), ()

    with replaced(_no_clobber, "publish_file", publish_file):
        yield


@contextlib.contextmanager
def dirs_before_files() -> Iterator[None]:
    """A rollback removes the directories the transaction created before the files in
    them (``rmdir`` of a non-empty directory fails and is taken as "not ours")."""
    original = _rollback.roll_back

    def roll_back(fs: Any, root: str, record: Any, *, owned: Any = None) -> list[str]:
        entries = record.entries
        dirs_only = [attrs.evolve(e, backup=None, stage=None, existed=True) for e in entries]
        original(fs, root, attrs.evolve(record, entries=tuple(dirs_only)), owned=owned)
        files_only = [attrs.evolve(e, dirs_created=()) for e in entries]
        return original(fs, root, attrs.evolve(record, entries=tuple(files_only)), owned=owned)

    with (
        replaced(_rollback, "roll_back", roll_back),
        replaced(_transaction, "roll_back", roll_back),
    ):
        yield


@contextlib.contextmanager
def restore_by_rename() -> Iterator[None]:
    """A backup is restored by renaming it over its target even when the target is still
    the backup's own file: POSIX makes that rename a no-op, and the backup stays."""

    def restore(fs: Any, path: str, backup: str) -> bool:
        if not fs.lexists(backup):
            return False
        fs.rename(backup, path)
        return True

    with replaced(_rollback, "_restore", restore):
        yield


@contextlib.contextmanager
def no_journal_dir_fsync() -> Iterator[None]:
    """The ``preparing`` journal's rename is not made durable before the files change."""
    original = _transaction._publish

    def publish(workspace: Any, plan: Any, owned: Any) -> None:
        skipped: list[str] = []

        def skip_once(path: str) -> bool:
            if path == workspace.journal_dir and not skipped:
                skipped.append(path)
                return True
            return False

        original(
            WorkspaceView(workspace, FsView(workspace.fs, skip_fsync_dir=skip_once)), plan, owned
        )

    with replaced(_transaction, "_publish", publish):
        yield


def _skip_first_fsync_of(directory: str) -> Callable[[str], bool]:
    skipped: list[str] = []

    def skip_once(path: str) -> bool:
        if path == directory and not skipped:
            skipped.append(path)
            return True
        return False

    return skip_once


@contextlib.contextmanager
def commit_sync_failure_is_success() -> Iterator[None]:
    """An EIO from the fsync that makes the commit record durable is reported as success,
    the workspace only marked as needing recovery (the engine before the revocation)."""
    original = _transaction._after_commit

    def after_commit(workspace: Any, record: Any, owned: Any, on_committed: Any) -> None:
        try:
            workspace.fs.fsync_dir(workspace.journal_dir)
        except OSError as exc:
            workspace.mark_needs_recovery(f"the commit record could not be synced: {exc}")
            return
        view = FsView(workspace.fs, skip_fsync_dir=_skip_first_fsync_of(workspace.journal_dir))
        original(WorkspaceView(workspace, view), record, owned, on_committed)

    with replaced(_transaction, "_after_commit", after_commit):
        yield


@contextlib.contextmanager
def commit_sync_retried() -> Iterator[None]:
    """The failed fsync of the commit record is retried, and a retry that succeeds counts
    as durable (an fsync that failed cannot be retried into durability)."""
    original = _transaction._after_commit

    def after_commit(workspace: Any, record: Any, owned: Any, on_committed: Any) -> None:
        try:
            workspace.fs.fsync_dir(workspace.journal_dir)
        except OSError:
            try:
                workspace.fs.fsync_dir(workspace.journal_dir)
            except OSError:
                original(workspace, record, owned, on_committed)
                return
        view = FsView(workspace.fs, skip_fsync_dir=_skip_first_fsync_of(workspace.journal_dir))
        original(WorkspaceView(workspace, view), record, owned, on_committed)

    with replaced(_transaction, "_after_commit", after_commit):
        yield


@contextlib.contextmanager
def write_sync_failure_is_success() -> Iterator[None]:
    """A single-file write whose directory fsync fails after the rename succeeds with a
    warning (the engine before it published again)."""

    def make_durable(fs: Any, real_path: str, *_args: Any) -> tuple[str, ...]:
        return ("the change is visible but may not survive a power loss",)

    with replaced(_atomic, "_make_durable", make_durable):
        yield


@contextlib.contextmanager
def write_sync_retried() -> Iterator[None]:
    """A single-file write retries its failed directory fsync and trusts the retry."""

    def make_durable(fs: Any, real_path: str, *_args: Any) -> tuple[str, ...]:
        fs.fsync_dir(os.path.dirname(real_path))
        return ("the directory's fsync was retried",)

    with replaced(_atomic, "_make_durable", make_durable):
        yield


@contextlib.contextmanager
def move_sync_failure_is_success() -> Iterator[None]:
    """A Move (or tree Delete) whose directory fsync fails after its rename succeeds."""

    def make_durable(workspace: Any, source: str, dest: str, *, shown: str) -> None:
        for directory in sorted({os.path.dirname(source), os.path.dirname(dest)}):
            with contextlib.suppress(OSError):
                workspace.fs.fsync_dir(directory)

    with replaced(_intents, "make_durable", make_durable):
        yield


# -- scenarios -----------------------------------------------------------------------------------


def _file(text: str) -> trees.Entry:
    return trees.Entry.file(text.encode("utf-8"), 0o644)


def _read(path: str) -> dict[str, Any]:
    return {"call": "read", "session": SESSION, "path": path}


def update_two() -> Scenario:
    """One patch updating two files in two directories (2 reads, 1 patch)."""
    return Scenario(
        name="update-2",
        description="one ApplyPatch updating two files in two directories",
        initial={"a.txt": _file("alpha\nbeta\n"), "d/b.txt": _file("gamma\ndelta\n")},
        steps=(
            _read("a.txt"),
            _read("d/b.txt"),
            {
                "call": "apply_patch",
                "session": SESSION,
                "patch": "*** Begin Patch\n"
                "*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n"
                "*** Update File: d/b.txt\n@@\n gamma\n-delta\n+DELTA\n"
                "*** End Patch\n",
            },
        ),
    )


def move_one() -> Scenario:
    """One patch moving a file into a new directory, with a change (1 read, 1 patch)."""
    return Scenario(
        name="move-1",
        description="one ApplyPatch moving a file into a new directory, with a hunk",
        initial={"old/moving.txt": _file("one\ntwo\n")},
        steps=(
            _read("old/moving.txt"),
            {
                "call": "apply_patch",
                "session": SESSION,
                "patch": "*** Begin Patch\n"
                "*** Update File: old/moving.txt\n*** Move to: moved/moving.txt\n"
                "@@\n one\n-two\n+TWO\n"
                "*** End Patch\n",
            },
        ),
    )


def move_tool_one() -> Scenario:
    """The Move tool moving a file into another directory, after a first move that makes
    the state directories (2 reads, 2 moves)."""
    return Scenario(
        name="move-tool-1",
        description="one Move of a file into a new directory",
        initial={"warm.txt": _file("warm\n"), "old/moving.txt": _file("one\ntwo\n")},
        steps=(
            _read("warm.txt"),
            {"call": "move", "session": SESSION, "path": "warm.txt", "dest": "warm2.txt"},
            _read("old/moving.txt"),
            {"call": "move", "session": SESSION, "path": "old/moving.txt", "dest": "moved/m.txt"},
        ),
    )


def add_one() -> Scenario:
    """One patch adding a file into a new directory (1 patch)."""
    return Scenario(
        name="add-1",
        description="one ApplyPatch adding a file into a new directory",
        initial={"keep.txt": _file("kept\n")},
        steps=(
            {
                "call": "apply_patch",
                "session": SESSION,
                "patch": "*** Begin Patch\n*** Add File: new/added.txt\n+added\n*** End Patch\n",
            },
        ),
    )


# -- the zoo -------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Mutant:
    name: str
    defect: str
    active: Callable[[], contextlib.AbstractContextManager[None]]
    scenario: Callable[[], Scenario]
    special: str = ""  # the check outside the explorer that catches it, if any
    fail: Pick | None = None  # for "fsync_failure": the call to fail (EIO) in a clean trace


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        name="no_stage_fsync",
        defect="stage files are not fsynced before they are published",
        active=no_stage_fsync,
        scenario=update_two,
    ),
    Mutant(
        name="no_directory_fsync",
        defect="no directory is fsynced between staging, publishing and the commit",
        active=no_directory_fsync,
        scenario=update_two,
    ),
    Mutant(
        name="journal_after_renames",
        defect="the journal is written after the renames",
        active=journal_after_renames,
        scenario=update_two,
    ),
    Mutant(
        name="journal_not_fsynced",
        defect="the journal's bytes are not fsynced before its rename",
        active=journal_not_fsynced,
        scenario=update_two,
    ),
    Mutant(
        name="recovery_drops_journal_first",
        defect="recovery removes the journal before restoring the files",
        active=recovery_drops_journal_first,
        scenario=update_two,
    ),
    Mutant(
        name="journals_oldest_first",
        defect="recovery rolls back interrupted transactions oldest first",
        active=journals_oldest_first,
        scenario=update_two,
        special="hunt_stacked",
    ),
    Mutant(
        name="stage_without_excl",
        defect="stage files are created without O_EXCL",
        active=stage_without_excl,
        scenario=update_two,
        special="squatted_stage",
    ),
    Mutant(
        name="move_by_copy",
        defect="a move is a copy then a delete, outside the journal's stage",
        active=move_by_copy,
        scenario=move_one,
    ),
    Mutant(
        name="move_link_unsynced",
        defect="the Move tool unlinks the old name before the new one is durable",
        active=move_link_unsynced,
        scenario=move_tool_one,
    ),
    Mutant(
        name="dirs_before_files",
        defect="a rollback removes created directories before the files in them",
        active=dirs_before_files,
        scenario=add_one,
    ),
    Mutant(
        name="restore_by_rename",
        defect="a backup is renamed over a target that is still its own link",
        active=restore_by_rename,
        scenario=update_two,
    ),
    Mutant(
        name="no_journal_dir_fsync",
        defect="the preparing journal's directory is not fsynced before the files change",
        active=no_journal_dir_fsync,
        scenario=update_two,
    ),
    Mutant(
        name="commit_sync_failure_is_success",
        defect="an EIO from the fsync that makes the commit record durable is a success",
        active=commit_sync_failure_is_success,
        scenario=standard.recovery_crash,
        special="fsync_failure",
        fail=COMMIT_RECORD_FSYNC,
    ),
    Mutant(
        name="commit_sync_retried",
        defect="the failed fsync of the commit record is retried and the retry trusted",
        active=commit_sync_retried,
        scenario=standard.recovery_crash,
        special="fsync_failure",
        fail=COMMIT_RECORD_FSYNC,
    ),
    Mutant(
        name="write_sync_failure_is_success",
        defect="a write whose directory fsync fails after the rename is a success",
        active=write_sync_failure_is_success,
        scenario=standard.single_write,
        special="fsync_failure",
        fail=fsync_dir_after(lambda op: ".editspec-" in op.paths[0]),
    ),
    Mutant(
        name="write_sync_retried",
        defect="a write retries its failed directory fsync and trusts the retry",
        active=write_sync_retried,
        scenario=standard.single_write,
        special="fsync_failure",
        fail=fsync_dir_after(lambda op: ".editspec-" in op.paths[0]),
    ),
    Mutant(
        name="move_sync_failure_is_success",
        defect="a move whose directory fsync fails after its commit point is a success",
        active=move_sync_failure_is_success,
        scenario=standard.move_file,
        special="fsync_failure",
        fail=fsync_dir_after_unlink_of("old/moving.txt"),
    ),
)


#: The mutants whose defect some power-loss state of their scenario exposes. The other
#: three are about the order of recovery and names that already exist: no state of a
#: single process's power cut shows them.
POWER_EXPOSED = (
    "no_stage_fsync",
    "no_directory_fsync",
    "journal_after_renames",
    "journal_not_fsynced",
    "move_by_copy",
    "dirs_before_files",
    "restore_by_rename",
    "no_journal_dir_fsync",
)


# -- hunting -------------------------------------------------------------------------------------

CHECKS = ("crash", "power:ordered", "power:strict", "recovery-crash")


@attrs.frozen
class Caught:
    """The first check that failed, its failure scenario, and the work it took."""

    check: str
    finding: Scenario
    checked: int  # checks run until the failure (all kinds)
    trace: int  # port operations of the scenario's last step, in a clean run


def hunt(mutant: Mutant, scenario: Scenario | None = None) -> Caught | None:
    """Run the explorer's checks on ``scenario`` with ``mutant`` active; the first failure."""
    chosen = scenario if scenario is not None else mutant.scenario()
    with tempfile.TemporaryDirectory(prefix="editspec-mutant-") as base, mutant.active():
        sandbox = harness.Sandbox(base)
        clean = harness.baseline(sandbox, chosen)
        checked = 0
        for check in CHECKS:
            for verdict in _verdicts(sandbox, chosen, clean, check):
                checked += 1
                if verdict.finding is not None:
                    return Caught(check, verdict.finding, checked, len(clean.trace))
    return None


def _verdicts(
    sandbox: harness.Sandbox, scenario: Scenario, clean: harness.Baseline, check: str
) -> Iterator[harness.Verdict]:
    if check == "crash":
        for at in range(1, clean.count + 1):
            yield harness.check_crash(sandbox, scenario, clean, at)
    elif check.startswith("power:"):
        model = check.split(":")[1]
        states, _ = harness.power_states(clean, model, limit=DEFAULT_LIMITS[model])  # type: ignore[arg-type]
        for state in states:
            yield harness.check_power_state(sandbox, scenario, clean, state, model)  # type: ignore[arg-type]
    else:
        for at in range(1, clean.count + 1):
            for recovery_at in range(1, harness.recovery_count(sandbox, scenario, at) + 1):
                yield harness.check_recovery_crash(sandbox, scenario, clean, at, recovery_at)


def hunt_fsync_failure(mutant: Mutant) -> Scenario | None:
    """``special="fsync_failure"``: fail the mutant's fsync with EIO in its scenario's last
    step, then cut the power in every state; the first failing state, as a scenario."""
    assert mutant.fail is not None
    with tempfile.TemporaryDirectory(prefix="editspec-mutant-") as base, mutant.active():
        sandbox = harness.Sandbox(base)
        scenario = mutant.scenario()
        at = mutant.fail(harness.baseline(sandbox, scenario).trace)
        found = check_fsync_failure(sandbox, scenario, at, stop_after=1)
    return found.findings[0] if found.findings else None


_IDS = re.compile(r"[0-9a-f]{16,}")


def normalized(lines: tuple[str, ...] | list[str]) -> list[str]:
    """Problem lines with transaction ids and temp-name digits made comparable."""
    return [_IDS.sub("<id>", line.strip()) for line in lines]


# -- the two checks beyond the explorer ----------------------------------------------------------


def _add_one(path: str) -> dict[str, Any]:
    return {
        "call": "apply_patch",
        "session": SESSION,
        "patch": f"*** Begin Patch\n*** Add File: {path}\n+{path}\n*** End Patch\n",
    }


STACKED_INITIAL: trees.Tree = {"keep.txt": _file("kept\n")}
STACKED_A_DONE: trees.Tree = {
    **STACKED_INITIAL,
    "new": trees.Entry.dir(),
    "new/a.txt": _file("new/a.txt\n"),
}


def stacked_crashes(a_at: int | None, b_at: int | None, pause_after: int) -> Scenario:
    """B is preempted after its ``pause_after``-th port call; A dies at ``a_at``; B at ``b_at``.

    After recovery each patch has happened whole or not at all: B, which dies before its
    commit record, not at all; A not at all, or (dying once its commit record is
    durable) whole. ``None`` for a crash point: that process runs to the end.
    """

    def faulted(step: dict[str, Any], at: int | None) -> dict[str, Any]:
        return step if at is None else {**step, "fault": {"kind": "crash", "at": at}}

    return Scenario(
        name="stacked-crashes",
        description=(
            "B checks for journals left behind and is preempted; A adds new/a.txt and "
            "dies; B adds new/b.txt into A's directory and dies; recovery must undo both"
        ),
        initial=STACKED_INITIAL,
        phases=(
            Phase(
                process="B",
                description="a patch, preempted right after its check for journals",
                steps=({**faulted(_add_one("new/b.txt"), b_at), "pause_after": pause_after},),
            ),
            Phase(
                process="A",
                description="a patch adding a file in a new directory",
                steps=(faulted(_add_one("new/a.txt"), a_at),),
            ),
            Phase(process="B", resume=True, description="B's patch goes on"),
        ),
        expected=(STACKED_INITIAL, STACKED_A_DONE),
    )


def _journal_check(base: str) -> int:
    """The port call of B's patch that looks for journals left behind (queries counted)."""
    sandbox = harness.Sandbox(base)
    events: list[OpEvent] = []
    processes = harness.Processes(sandbox, watch=events.append)
    processes.start(STACKED_INITIAL)
    processes.open("B")
    journal_dir = processes.processes["B"].workspace.journal_dir  # type: ignore[union-attr]
    events.clear()
    processes.run("B", _add_one("new/b.txt"))
    return next(
        number
        for number, event in enumerate(events, 1)
        if event.record.name == "listdir" and event.record.paths == (journal_dir,)
    )


def _commit_point(log: tuple[OpRecord, ...]) -> int | None:
    """The counted operation that starts the commit record, in a step's log."""
    starts = [r.index for r in log if r.name == "create_exclusive"]
    commits = [r.index for r in log if r.paths[0].endswith(".committed.tmp")]
    return next((index for index in starts if index in commits), None)


def hunt_stacked(base: str) -> Caught | None:
    """Two stacked crashes: A dies at each of its operations in turn, B at its commit.

    For every crash point of A, a first run lets B finish, to find the operation that
    starts B's commit record, and a second run kills B there and checks the recovery.
    The first failure, or None.
    """
    pause = _journal_check(base)
    sandbox = harness.Sandbox(base)
    clean = harness.run_phases(sandbox, stacked_crashes(None, None, pause))
    a_count = len(next(r.log for _p, step, r in clean.reports if r.process == "A" and step == 0))
    for a_at in range(1, a_count + 1):
        first = harness.run_phases(sandbox, stacked_crashes(a_at, None, pause))
        b_at = _commit_point(first.reports[-1][2].log)
        if b_at is None:
            raise AssertionError(f"B never starts a commit record when A dies at {a_at}")
        scenario = stacked_crashes(a_at, b_at, pause)
        verdict = harness.check_phases(sandbox, scenario)
        if verdict.finding is not None:
            return Caught("stacked", verdict.finding, a_at, b_at)
    return None


@contextlib.contextmanager
def pinned_transaction_id(txn_id: str) -> Iterator[None]:
    """Every transaction gets ``txn_id`` (so a test can name its stage files ahead)."""
    with replaced(_transaction, "new_transaction_id", lambda: txn_id):
        yield


PINNED_ID = "0" * 16 + "5eed" * 4


def squatted_stage() -> Scenario:
    """A symlink waits at the stage name of ``a.txt`` and points at ``b.txt``.

    Run with ``pinned_transaction_id(PINNED_ID)``. The patch of ``a.txt`` must fail
    (its stage cannot be created exclusively) and change nothing: ``b.txt`` keeps its
    bytes. A stage opened without ``O_EXCL`` follows the link and overwrites ``b.txt``.
    """
    stage = _journal.side_file_name("a.txt", PINNED_ID, "stage")
    initial = {"a.txt": _file("alpha\nbeta\n"), "b.txt": _file("bystander\n")}
    after_plant = {**initial, stage: trees.Entry.symlink("b.txt")}
    return Scenario(
        name="squatted-stage",
        description=(
            "a symlink planted at a.txt's stage name (transaction id pinned to "
            f"{PINNED_ID}) points at b.txt; the patch must fail and change nothing"
        ),
        initial=initial,
        steps=(
            _read("a.txt"),
            {"call": "symlink", "path": stage, "target": "b.txt", "expect": [after_plant]},
            {
                "call": "apply_patch",
                "session": SESSION,
                "patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n"
                "*** End Patch\n",
                "outcomes": ["IO_ERROR", "ALREADY_EXISTS", "CONFLICT", "STALE"],
                "expect": [after_plant],
            },
        ),
    )


def mutant_named(name: str) -> Mutant:
    return next(m for m in MUTANTS if m.name == name)


def by_name() -> Mapping[str, Mutant]:
    return {mutant.name: mutant for mutant in MUTANTS}
