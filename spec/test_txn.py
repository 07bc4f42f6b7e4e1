"""TXN: a multi-file patch is one transaction, whatever happens during its publish.

DESIGN §4 "Transaction protocol (TXN/RECOV)". The crash and fault clauses run the
scenario of ``_txn_kit`` (update, delete, add into a new directory, move with a hunk into
another one) at every mutating os call of a ``python_fs`` driver.
"""

from __future__ import annotations

import errno
import json
import os
import stat

from editspec.contract import is_error_code
from editspec.spec import (
    MUST,
    UncodedError,
    Unsafe,
    call_at,
    clause,
    count_mutations,
    crash_at,
    fail_at,
    raises_code,
    run_concurrently,
)
from editspec.spec._txn_kit import (
    AFTER,
    BEFORE,
    PATCH,
    Runs,
    describe,
    expected_names,
    journals,
    names,
    publish_index,
    steps,
)


@clause(
    "TXN-001",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="A crash at any mutating step of a multi-file patch, followed by recovery, leaves the "
    "workspace all-before or all-after: every file as it was or every change applied, and no "
    "stage, backup or temp file or created directory left under the root.",
    rationale="A killed agent process mid-refactoring must not leave half the files renamed; "
    "that is the whole point of a transaction.",
)
def test_crash_at_every_step(disk, crash):
    runs = Runs(disk, crash)
    runs.warm_up()
    outcomes = {"before": 0, "after": 0}
    for step in steps():
        if not runs.crashed_at(step):
            assert names(disk) == runs.after
            break
        runs.recovered()
        outcomes[runs.assert_before_or_after(f"crash at step {step}, then recovery")] += 1
    assert outcomes["before"] > 0 and outcomes["after"] > 0, (
        f"the crash points never reached both sides of the commit point: {outcomes}"
    )


@clause(
    "TXN-002",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="After a crash at any step of a patch and recovery, the workspace accepts changes "
    "again: a fresh session reads the files and the same patch applies (when the crash "
    "rolled it back) or a further one does (when it rolled forward).",
    rationale="A lock, journal or side file left by the dead process must not block the "
    "workspace until someone cleans up by hand.",
)
def test_usable_after_crash(disk, crash):
    runs = Runs(disk, crash)
    total = len(runs.warm_up())
    # Every third crash point and the last one: each phase of the publish is hit, in a
    # fraction of TXN-001's time.
    for step in sorted({*range(1, total + 1, 3), total}):
        session = runs.fresh()
        with crash_at(step) as point:
            session.apply_patch(PATCH)
        assert point.crashed, f"the patch made fewer than {step} calls this time"
        driver = crash.restart()
        driver.recover()
        side = runs.assert_before_or_after(f"crash at step {step}")
        again = driver.open_session("A")
        if side == "before":
            for rel in BEFORE:
                again.read(rel)
            again.apply_patch(PATCH)
            assert names(disk) == runs.after, f"step {step}: the patch did not apply again"
        else:
            again.read("a.txt")
            again.apply_patch(
                "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha one\n+one\n*** End Patch\n"
            )
            assert disk.read("a.txt").startswith(b"one\n"), f"step {step}: no further change"


@clause(
    "TXN-003",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="An I/O error (ENOSPC or EIO) at any mutating step of a multi-file patch either fails "
    "the call with an error code and leaves the workspace exactly all-before, or lets it "
    "succeed with every change applied; after recovery nothing else is left under the root.",
    rationale="A full disk in the middle of a refactoring must cost the agent a retry, not a "
    "half-applied patch or a tree littered with side files.",
)
def test_io_error_at_every_step(disk, crash):
    runs = Runs(disk, crash)
    runs.warm_up()
    failures = 0
    for step in steps():
        # The two errnos alternate, so each step is failed once (a full disk or a bad one).
        error = errno.ENOSPC if step % 2 else errno.EIO
        session = runs.fresh()
        try:
            with fail_at(step, error) as point:
                session.apply_patch(PATCH)
        except Exception as exc:
            code = getattr(exc, "code", None)
            if not is_error_code(code):
                raise UncodedError(f"step {step}: {exc!r} carries no error code") from exc
            failures += 1
            actual = names(disk)
            assert actual == runs.before, (
                f"{errno.errorcode[error]} at step {step}: the call failed ({code}) but "
                f"the workspace is not as before: {describe(actual, runs.before)}"
            )
        else:
            for rel, data in AFTER.items():
                assert disk.read(rel) == data, f"step {step}: success without {rel}"
            for rel in set(BEFORE) - set(AFTER):
                assert not disk.exists(rel), f"step {step}: success, {rel} still there"
        runs.recovered()
        if not point.failed:
            assert names(disk) == runs.after
            break
        runs.assert_before_or_after(f"{errno.errorcode[error]} at step {step}, recovered")
    assert failures > 0, "no injected error ever failed the patch"


def _race_at_every_step(disk, crash, runs, patch, victim, untouched):
    """External creation of ``victim`` before each step of ``patch``; the checks of TXN-004/5."""
    refused = 0
    for step in steps():
        session = runs.fresh()
        payload = f"written by another program at step {step}\n".encode()
        try:
            with call_at(step, lambda data=payload: disk.write(victim, data)) as point:
                session.apply_patch(patch)
        except Exception as exc:
            if getattr(exc, "code", None) != "ALREADY_EXISTS":
                raise AssertionError(
                    f"step {step}: expected ALREADY_EXISTS, got {getattr(exc, 'code', exc)!r}"
                ) from exc
            refused += 1
            actual = names(disk)
            expected = dict(untouched)
            expected[victim] = payload
            assert actual == expected_names(expected), (
                f"step {step}: refused, but not all-before: "
                f"{describe(actual, expected_names(expected))}"
            )
        if not point.called:
            break
        assert disk.read(victim) == payload, f"step {step}: the other program's file was clobbered"
        crash.restart().recover()
    return refused


@clause(
    "TXN-004",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="A file that appears at the path of an Add at any step of the patch is never "
    "overwritten: the patch fails with ALREADY_EXISTS and every other file stays as it was, "
    "or the file came after the patch had put its own in place.",
    rationale="Publishing an added file with rename clobbers whatever a build or another "
    "agent created there meanwhile; link refuses to.",
)
def test_add_never_clobbers(disk, crash):
    runs = Runs(disk, crash)
    patch = (
        "*** Begin Patch\n"
        "*** Update File: a.txt\n@@\n-alpha one\n+ALPHA ONE\n"
        "*** Add File: fresh.txt\n+the patch's file\n"
        "*** Delete File: b.txt\n"
        "*** End Patch\n"
    )
    session = runs.fresh()
    crash.count(lambda: session.apply_patch(patch))
    refused = _race_at_every_step(disk, crash, runs, patch, "fresh.txt", BEFORE)
    assert refused > 0, "the concurrent file was never refused"


@clause(
    "TXN-005",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs"},
    text="A file that appears at the destination of a move at any step of the patch is never "
    "overwritten: the patch fails with ALREADY_EXISTS and every other file stays as it was, "
    "or the file came after the patch had put its own in place.",
    rationale="A move that clobbers its destination loses the file that appeared there.",
)
def test_move_never_clobbers(disk, crash):
    runs = Runs(disk, crash)
    patch = (
        "*** Begin Patch\n"
        "*** Update File: a.txt\n@@\n-alpha one\n+ALPHA ONE\n"
        "*** Update File: c.txt\n*** Move to: renamed.txt\n@@\n-charlie two\n+CHARLIE TWO\n"
        "*** End Patch\n"
    )
    session = runs.fresh()
    crash.count(lambda: session.apply_patch(patch))
    refused = _race_at_every_step(disk, crash, runs, patch, "renamed.txt", BEFORE)
    assert refused > 0, "the concurrent file was never refused"


@clause(
    "TXN-006",
    MUST,
    requires={"read", "apply_patch", "stale_detection", "python_fs"},
    text="A patch re-verifies the files it changes while it holds their locks: an external "
    "change to one of them at any step before the first file is published fails the patch "
    "with STALE, the change survives, and every other file stays as it was.",
    rationale="Checking freshness only while planning leaves the time of staging, snapshots "
    "and fsync open for a concurrent save to be lost.",
)
def test_reverified_before_publishing(disk, crash, external):
    runs = Runs(disk, crash)
    trace = runs.warm_up()
    first_publish = publish_index(trace)
    assert first_publish is not None, f"no rename or link publishes a file: {trace}"
    changed = b"alpha one\nalpha 2!!\nalpha three\n"
    for step in range(1, first_publish):
        session = runs.fresh()
        with (
            raises_code("STALE"),
            call_at(step, lambda: external.modify_same_size_same_mtime("a.txt", changed)),
        ):
            session.apply_patch(PATCH)
            raise AssertionError(f"an external change before step {step} was not caught")
        expected = dict(BEFORE, **{"a.txt": changed})
        actual = names(disk)
        assert actual == expected_names(expected), (
            f"change before step {step}: {describe(actual, expected_names(expected))}"
        )


def _save_by_rename(disk, rel, data):
    """Save ``rel`` as an editor that writes a new file and renames it over the name does:
    a new inode under the name, the old one left to whatever still links it."""
    temp = disk.root.parent / f".editor-save-{os.getpid()}"
    temp.write_bytes(data)
    os.replace(temp, disk.root / rel)


@clause(
    "TXN-012",
    MUST,
    requires={"read", "apply_patch", "stale_detection", "python_fs"},
    text="The re-verification is as late as it can be and aborts cleanly: a save of a target by "
    "another writer through a new file renamed over it, at any step before the patch's first "
    "file is published (after staging and fsync included), fails the patch with STALE; the "
    "abort removes the stage files and backup links and never restores a backup over the file "
    "the other writer saved, whose bytes stay, every other file as it was.",
    rationale="A re-check made before staging leaves the time of staging and fsync open to a "
    "concurrent save, and an abort that 'rolls back' by restoring the backup link puts the old "
    "bytes over the save it just detected.",
)
def test_late_recheck_keeps_a_save_by_rename(disk, crash):
    runs = Runs(disk, crash)
    trace = runs.warm_up()
    first_publish = publish_index(trace)
    assert first_publish is not None, f"no rename or link publishes a file: {trace}"
    saved = b"alpha one\nsaved by an editor that renames\n"
    expected = expected_names(dict(BEFORE, **{"a.txt": saved}))
    for step in range(1, first_publish):
        session = runs.fresh()
        with (
            raises_code("STALE"),
            call_at(step, lambda: _save_by_rename(disk, "a.txt", saved)),
        ):
            session.apply_patch(PATCH)
            raise AssertionError(f"a save by rename before step {step} was not caught")
        actual = names(disk)
        assert actual == expected, f"save before step {step}: {describe(actual, expected)}"


@clause(
    "TXN-007",
    MUST,
    requires={"read", "apply_patch", "python_fs"},
    text="Every new content of a patch is fsynced before the rename or link that publishes it, "
    "and a directory is fsynced after the last publishing rename, link or unlink.",
    rationale="Without the first fsync a power cut can publish empty files under the journal's "
    "nose; without the second the publish itself may be lost.",
)
def test_fsync_before_and_after_publishing(disk, crash):
    runs = Runs(disk, crash)
    runs.fresh()
    session = runs.fresh()
    with count_mutations() as clean:
        session.apply_patch(PATCH)
    trace = clean.trace
    first = publish_index(trace)
    assert first is not None, f"no rename or link publishes a file: {trace}"
    file_syncs = [
        c for c in trace[: first - 1] if c.name in ("fsync", "fdatasync") and c.kind == "file"
    ]
    contents = len(AFTER)  # a.txt, new/added.txt, moved/c.txt carry new content
    assert len(file_syncs) >= contents, (
        f"{len(file_syncs)} file fsyncs before publishing {contents} new contents: {trace}"
    )
    publishing = [
        c.index
        for c in trace
        if (c.name in ("replace", "rename", "link", "unlink"))
        and any(os.path.basename(p) in ("a.txt", "b.txt", "c.txt", "added.txt") for p in c.paths)
        and not any(".backup" in p or ".stage" in p for p in c.paths[1:])
    ]
    assert publishing, trace
    last = max(publishing)
    assert any(c.name == "fsync" and c.kind == "dir" for c in trace[last:]), (
        f"no directory fsync after the last publishing call (#{last}): {trace}"
    )


@clause(
    "TXN-008",
    MUST,
    requires={"read", "apply_patch", "recovery", "python_fs", "journal_layout"},
    text="The journal is durable before anything under the root changes: at every crash point "
    "where the root is neither all-before nor all-after, a journal file of mode 0600 in state "
    "'preparing' or 'committed' exists in the workspace's journal directory.",
    rationale="A publish that starts before its journal exists leaves a crash with changed "
    "files and nothing that tells recovery how to undo them.",
)
def test_journal_precedes_every_change(disk, crash):
    runs = Runs(disk, crash)
    runs.warm_up()
    journaled = 0
    for step in steps():
        if not runs.crashed_at(step):
            break
        if names(disk) not in (runs.before, runs.after):
            found = journals(disk)
            assert len(found) == 1, (
                f"crash at step {step}: the root changed, but the journals are {found}"
            )
            assert stat.S_IMODE(os.stat(found[0]).st_mode) == 0o600, "journal mode"
            record = json.loads(found[0].read_text(encoding="utf-8"))
            assert record.get("state") in ("preparing", "committed"), record.get("state")
            journaled += 1
        runs.recovered()
    assert journaled > 0


@clause(
    "TXN-009",
    MUST,
    requires={"read", "apply_patch"},
    text="Patches of two sessions over the same files, taken in opposite orders, run "
    "concurrently without deadlock; each is applied whole or refused because the other changed "
    "a file meanwhile (STALE, NO_MATCH), and the files hold the result of some serial order.",
    rationale="Locks taken in patch order deadlock the first time two agents touch the same "
    "pair of files the other way round.",
)
def test_concurrent_patches_do_not_deadlock(driver, disk):
    disk.write("x.txt", "x = 0\n")
    disk.write("y.txt", "y = 0\n")
    outcomes: dict[str, list[str]] = {"A": [], "B": []}

    def agent(session_id: str, order: tuple[str, str], value: int) -> None:
        session = driver.open_session(session_id)
        for _ in range(5):
            seen = {rel: session.read(rel).content.strip() for rel in order}
            sections = "".join(
                f"*** Update File: {rel}\n@@\n-{seen[rel]}\n+{rel[0]} = {value}\n" for rel in order
            )
            try:
                session.apply_patch(f"*** Begin Patch\n{sections}*** End Patch\n")
                result = "applied"
            except Exception as exc:
                result = str(getattr(exc, "code", exc))
            outcomes[session_id].append(result)

    # A session whose calls all raise dies in its thread, and that fails the clause: the
    # survivor alone would satisfy every assert below.
    run_concurrently(
        lambda: agent("A", ("x.txt", "y.txt"), 1),
        lambda: agent("B", ("y.txt", "x.txt"), 2),
        timeout=60,
    )
    for session_id, seen in outcomes.items():
        assert len(seen) == 5, f"session {session_id} made {len(seen)} of its 5 patches"
        # refused only because the other session changed a file meanwhile
        assert set(seen) <= {"applied", "STALE", "NO_MATCH"}, f"session {session_id}: {seen}"
    assert "applied" in outcomes["A"] + outcomes["B"]
    x, y = _current(disk, "x.txt"), _current(disk, "y.txt")
    assert x == y and x in ("1", "2"), f"not a serial outcome: x = {x}, y = {y}"


def _current(disk, rel):
    return disk.read(rel).decode().split("=")[1].strip()


@clause(
    "TXN-011",
    MUST,
    # python_fs or process: see WRITE-027.
    requires={"read", "apply_patch", "recovery"},
    profile="Crash-testable",
    text="After a power cut at any point of a patch (data written since a file's last fsync "
    "lost whole or past a 4 KiB block; entries changed since their directory's last fsync lost "
    "as a suffix, in order), a restarted implementation recovers the root to all-before or "
    "all-after, and to all-after if the patch had returned.",
    rationale="A crash loses only what the process had in memory; a power cut also loses what "
    "the disk had not made durable, and recovery must still find one whole version.",
)
def test_power_cut_during_a_patch(driver_factory, editspec_base):
    from editspec.spec._power import power_cut_problems

    steps = (
        *({"call": "read", "session": "A", "path": path} for path in sorted(BEFORE)),
        {"call": "apply_patch", "session": "A", "patch": PATCH},
    )
    states, problems = power_cut_problems(driver_factory, editspec_base / "power", BEFORE, steps)
    assert states > len(AFTER), "the patch left nothing to cut"
    if problems:  # a state that is neither old nor new bytes on disk
        raise Unsafe("\n".join(problems))
