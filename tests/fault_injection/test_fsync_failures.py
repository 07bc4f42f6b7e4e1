"""An fsync that fails, then a power cut at every point: no answer a power cut makes false.

For each fsync whose failure the engine once reported as success (the commit record of
a transaction, the directory of a single-file write, a tree Delete's and a Move's
rename, a rewind's commit), the fsync fails with EIO and every state the power-loss
model can leave after it is recovered by a fresh workspace. Once the step has returned,
a success must find all-after on disk and an error all-before (bytes on disk, compared
with the trees of a clean run); NEEDS_RECOVERY may find either. The model keeps what a
failed fsync covered lossy whatever later fsyncs say, so an engine that only retries
the fsync is caught too.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from editspec.fault_injection import harness, standard, trees
from editspec.fault_injection.checks import baseline
from editspec.fault_injection.fsync_failures import (
    COMMIT_RECORD_FSYNC,
    FsyncFailure,
    Pick,
    check_fsync_failure,
    check_recoveries_then_power_cut,
    fsync_dir_after,
    fsync_dir_after_op,
    fsync_dir_after_unlink_of,
    recorded_run,
)
from editspec.fault_injection.powerloss import Model, TraceOp
from editspec.fault_injection.runner import FaultedRun
from editspec.fault_injection.scenario import SESSION, Outcome, Scenario
from editspec.fault_injection.trees import Entry
from editspec.reference import FileSystem, Workspace
from tests.fault_injection.recovery_mutants import recovery_trusts_a_retried_fsync


def _write_into_root(op: TraceOp) -> bool:
    return os.path.basename(op.paths[0]).endswith(".tmp") and "editspec-" in op.paths[0]


def snapshot_write() -> Scenario:
    old = b"the old contents\n"
    return Scenario(
        name="single-write-snapshot",
        description="replace one file with Write, with a message id (a snapshot)",
        initial={"notes.txt": Entry.file(old, 0o644)},
        steps=(
            {
                "call": "write",
                "session": SESSION,
                "path": "notes.txt",
                "content": "the new contents, longer than before\n",
                "expected_sha256": hashlib.sha256(old).hexdigest(),
                "message_id": "m1",
            },
        ),
    )


def create_file() -> Scenario:
    return Scenario(
        name="create-file",
        description="create a new file with Write (published by link)",
        initial={"keep.txt": Entry.file(b"kept\n", 0o644)},
        steps=({"call": "write", "session": SESSION, "path": "new.txt", "content": "fresh\n"},),
    )


def create_in_new_directories() -> Scenario:
    return Scenario(
        name="create-in-new-directories",
        description="create a new file with Write in two directories that do not exist yet",
        initial={"keep.txt": Entry.file(b"kept\n", 0o644)},
        steps=({"call": "write", "session": SESSION, "path": "a/b/new.txt", "content": "fresh\n"},),
    )


def delete_empty_directory() -> Scenario:
    return Scenario(
        name="delete-empty-directory",
        description="Delete of an empty directory: one rmdir",
        initial={"keep.txt": Entry.file(b"kept\n", 0o644), "empty": Entry.dir()},
        steps=({"call": "delete", "session": SESSION, "path": "empty", "kind": "empty_dir"},),
    )


#: Judged only once the step has returned: a create killed after making a new directory
#: and before publishing leaves that directory empty (no record names it), so the cuts
#: during the step are not all-before or all-after whatever the fsync did.
ONLY_AFTER = frozenset({"create-in-new-directories-directory"})


CASES: dict[str, tuple[Callable[[], Scenario], Pick]] = {
    "commit-record": (standard.recovery_crash, COMMIT_RECORD_FSYNC),
    "commit-record-of-a-file-delete": (
        standard.add_delete_move,
        COMMIT_RECORD_FSYNC,
    ),
    "rewind-commit-record": (standard.rewind_five, COMMIT_RECORD_FSYNC),
    "single-write-directory": (standard.single_write, fsync_dir_after(_write_into_root)),
    "single-write-with-snapshot": (snapshot_write, fsync_dir_after(_write_into_root)),
    "create-directory": (create_file, fsync_dir_after_op("link")),
    "create-in-new-directories-directory": (create_in_new_directories, fsync_dir_after_op("link")),
    # A file moves by link, then the source's unlink (the commit point, MOVE-008): the
    # fsync that fails is the first after that unlink.
    "move-unlink": (standard.move_file, fsync_dir_after_unlink_of("old/moving.txt")),
    "empty-directory-delete": (delete_empty_directory, fsync_dir_after_op("rmdir")),
    "tree-delete-rename": (
        standard.delete_tree,
        fsync_dir_after(lambda op: op.paths[0].endswith(os.sep + "build")),
    ),
}


def _run(tmp_path: Path, name: str, model: Model = "ordered") -> tuple[FsyncFailure, int]:
    build, pick = CASES[name]
    scenario = build()
    box = harness.Sandbox(tmp_path / "box")
    at = pick(baseline(box, scenario).trace)
    return check_fsync_failure(box, scenario, at, model=model, during=name not in ONLY_AFTER), at


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_failed_fsync_then_any_power_cut_leaves_what_the_call_answered(
    tmp_path: Path, name: str
) -> None:
    found, at = _run(tmp_path, name)
    assert found.states >= 1
    # The injected call is in the trace, as the one failed call: an fsync of a directory.
    assert [op.name for op in found.trace if op.failed] == ["fsync_dir"]
    problems = [line for finding in found.findings for line in finding.problems]
    assert found.passed, (
        f"{name}: EIO at op {at}, the step answered {found.outcome.code}; "
        f"{len(found.findings)} of {found.states} power-loss states wrong: {problems[:6]}"
    )


def _confirmed_snapshot(op: TraceOp) -> bool:
    """The rename that confirms a pending snapshot record into its session directory."""
    return f"{os.sep}_pending{os.sep}" in op.paths[0] and "_pending" not in op.paths[1]


def _snapshot_as_answered(box: harness.Sandbox, outcome: Outcome) -> list[str]:
    if not outcome.ok or not outcome.result.snapshot_created:
        return []
    history = Workspace(box.root, box.state_dir).snapshots.history(SESSION)
    if any(record.message_id == "m1" for record in history.live):
        return []
    return ["the write said snapshot_created, but after the power cut no snapshot of m1 counts"]


def test_a_snapshot_reported_as_created_survives_a_failed_fsync_and_any_power_cut(
    tmp_path: Path,
) -> None:
    scenario = snapshot_write()
    box = harness.Sandbox(tmp_path / "box")
    at = fsync_dir_after(_confirmed_snapshot)(baseline(box, scenario).trace)
    found = check_fsync_failure(box, scenario, at, judge=_snapshot_as_answered)
    assert [op.name for op in found.trace if op.failed] == ["fsync_dir"]
    assert found.outcome.ok and found.outcome.result.snapshot_created
    problems = [line for finding in found.findings for line in finding.problems]
    assert found.passed, f"{len(found.findings)} of {found.states} states wrong: {problems[:4]}"


class _OldIsAnotherFileSystem(FileSystem):
    """``old/`` of the workspace is another file system: a link or rename out of it
    fails with EXDEV, so a Move from it copies, verifies and removes the source."""

    def _across(self, source: str, dest: str) -> None:
        inside = f"{os.sep}ws{os.sep}old{os.sep}"
        if inside in source and inside not in dest:
            raise OSError(errno.EXDEV, "cross-device link", source)

    def link(self, source: str, dest: str) -> None:
        self._across(source, dest)
        super().link(source, dest)

    def rename(self, source: str, dest: str) -> None:
        self._across(source, dest)
        super().rename(source, dest)

    def rename_noreplace(self, source: str, dest: str) -> None:
        self._across(source, dest)
        super().rename_noreplace(source, dest)


def test_a_move_across_file_systems_whose_source_removal_fails_to_sync(tmp_path: Path) -> None:
    """The fsync that makes the source's removal durable fails: a power cut then must not
    find the source back beside its copy after a success, nor either half after an error."""
    scenario = standard.move_file()
    box = harness.Sandbox(tmp_path / "box", inner=_OldIsAnotherFileSystem)
    clean = baseline(box, scenario)
    assert clean.outcome.ok and clean.outcome.result.atomic is False  # it did go across
    at = fsync_dir_after_unlink_of("old/moving.txt")(clean.trace)
    found = check_fsync_failure(box, scenario, at)
    assert [op.name for op in found.trace if op.failed] == ["fsync_dir"]
    assert found.states >= 1
    problems = [line for finding in found.findings for line in finding.problems]
    assert found.passed, (
        f"EIO at op {at}, the step answered {found.outcome.code}; "
        f"{len(found.findings)} of {found.states} power-loss states wrong: {problems[:6]}"
    )


# -- recovery after a failed fsync: it must not act on a record a retried fsync "proved" ---


def _first_journal_fsync_of_recovery(run: FaultedRun) -> int:
    """The counted index, in the first recovery, of its first fsync of the journal directory."""
    assert run.ended_at is not None
    return next(
        op.index
        for op in run.trace[run.ended_at :]
        if op.name == "fsync_dir" and f"{os.sep}journal{os.sep}" in op.paths[0] + os.sep
    )


def _fault_of(tmp_path: Path, case: str) -> dict[str, Any]:
    """The fault of a case of the test below, counted on a clean run of the patch."""
    scenario = standard.recovery_crash()
    box = harness.Sandbox(tmp_path / "probe")
    commit_fsync = COMMIT_RECORD_FSYNC(baseline(box, scenario).trace)
    if case == "commit-fsync-failed-then-killed":
        # Killed at the first call of the revocation (open_append): nothing undone.
        return {"fail_at": commit_fsync, "errno": "EIO", "crash_at": commit_fsync + 1}
    if case == "no-undo-synced-then-exit":
        # The commit's fsync, the revocation's (3 calls on), and that of the new
        # ``preparing`` record (8 more): NEEDS_RECOVERY; the process then exits. The
        # record a fresh recovery reads is ``preparing``, and only in the page cache:
        # under it, the committed one may be what is durable.
        again = [commit_fsync + 3, commit_fsync + 11]
        return {"fail_at": commit_fsync, "errno": "EIO", "fail_again_at": again, "recoveries": [{}]}
    # Killed at the commit's fsync; the first recovery's fsync of the journal directory
    # fails (it raises), and a second one runs.
    probe = recorded_run(box, scenario, {"crash_at": commit_fsync})
    failing = {"fail_at": _first_journal_fsync_of_recovery(probe), "errno": "EIO"}
    return {"crash_at": commit_fsync, "recoveries": [failing, {}]}


#: case -> (the answer of the step, None if it is killed; the failed calls in the trace)
CASES_AFTER_KILL: dict[str, tuple[str | None, list[str]]] = {
    "commit-fsync-failed-then-killed": (None, ["fsync_dir"]),
    "recovery-fsync-failed-then-recovered": (None, ["fsync_dir"]),
    "no-undo-synced-then-exit": ("NEEDS_RECOVERY", ["fsync_dir", "fsync", "fsync_dir"]),
}


@pytest.mark.parametrize("case", sorted(CASES_AFTER_KILL))
def test_recovery_acts_only_on_a_record_it_has_made_durable(tmp_path: Path, case: str) -> None:
    """A journal record renamed into place whose directory fsync failed (the committing
    process's, or an earlier recovery's) may be on disk under another record: the
    kernel may have dropped the rename, and a later fsync that succeeds says nothing
    about it. A fresh recovery reads the record from the page cache; every state a power
    cut can leave from the end of the committing process on, recovered again, is
    all-before or all-after (bytes on disk), and after the last recovery, what it left."""
    answer, failed = CASES_AFTER_KILL[case]
    fault = _fault_of(tmp_path, case)
    box = harness.Sandbox(tmp_path / "box")
    # "strict": any subset of the unsynced entry operations is lost, which splits the
    # restores of one rollback (so a record that resurfaces halfway through one shows).
    run, found = check_recoveries_then_power_cut(
        box, standard.recovery_crash(), fault, model="strict"
    )
    assert [op.name for op in run.trace if op.failed] == failed  # each injected, in the trace
    assert (run.outcome.code if run.outcome is not None else None) == answer
    assert len(run.marks) == 1 + len(fault.get("recoveries", [{}]))  # ended, each recovery
    assert run.ended_at is not None and len(run.trace) > run.ended_at + 10
    assert found.states >= 10 and not found.truncated
    problems = [line for finding in found.findings for line in finding.problems]
    assert found.passed, (
        f"{case}: {len(found.findings)} of {found.states} power-loss states wrong: {problems[:8]}"
    )


@pytest.mark.parametrize("case", sorted(CASES_AFTER_KILL))
def test_the_check_catches_recovery_that_trusts_a_retried_fsync(tmp_path: Path, case: str) -> None:
    """The check above can fail: with recovery acting on the record as read, after one
    more fsync of the journal directory (the engine before it republished it), some
    states recover to files of both versions, or to a file of neither."""
    box = harness.Sandbox(tmp_path / "box")
    with recovery_trusts_a_retried_fsync():
        fault = _fault_of(tmp_path, case)  # counted on this engine's recovery
        _run, found = check_recoveries_then_power_cut(
            box, standard.recovery_crash(), fault, model="strict"
        )
    clean = baseline(harness.Sandbox(tmp_path / "clean"), standard.recovery_crash())
    mixed = [
        finding.actual
        for finding in found.findings
        if finding.actual is not None
        and not trees.equal(finding.actual, clean.before)
        and not trees.equal(finding.actual, clean.after)
    ]
    assert mixed, f"{case}: {len(found.findings)} findings, no mixed state among {found.states}"
