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

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.fault_injection import harness, standard
from editspec.fault_injection.checks import baseline
from editspec.fault_injection.fsync_failures import (
    COMMIT_RECORD_FSYNC,
    FsyncFailure,
    Pick,
    check_fsync_failure,
    fsync_dir_after,
    fsync_dir_after_op,
    fsync_dir_after_unlink_of,
)
from editspec.fault_injection.powerloss import Model, TraceOp
from editspec.fault_injection.scenario import SESSION, Outcome, Scenario
from editspec.fault_injection.trees import Entry
from editspec.reference import Workspace


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
