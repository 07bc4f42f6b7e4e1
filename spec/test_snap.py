"""SNAP: snapshots of every change made with a message_id, and rewind (DESIGN §4 "Snapshots
and rewind").

Rewind compares files, not directories: a directory a change created may stay behind,
empty, when the rewind deletes the file in it.
"""

from __future__ import annotations

import errno
import os

from editspec.contract import is_error_code
from editspec.reference import EditSpec
from editspec.spec import (
    MUST,
    SHOULD,
    UncodedError,
    assert_fields,
    clause,
    crash_at,
    fail_at,
    raises_code,
)
from editspec.spec._txn_kit import AFTER, BEFORE, PATCH, Runs, read_all, steps


def _prepared(session, disk, files):
    for rel, data in files.items():
        disk.write(rel, data)
    read_all(session, files)


def _actions(result):
    return sorted((item.path, item.action) for item in result.restored)


def _rewind_refused(session, message_id):
    """Rewinding ``message_id`` fails with a code (an unknown or empty message)."""
    try:
        session.rewind(message_id)
    except Exception as exc:
        if not is_error_code(getattr(exc, "code", None)):
            raise UncodedError(f"rewind({message_id!r}) raised {exc!r}") from exc
        return True
    return False


def _rewind_control(session, disk):
    """Positive control (DESIGN §7): a rewind in this session succeeds and restores, so a
    refusal that follows is about what the clause tests."""
    session.write("control.txt", "control\n", message_id="control")
    session.rewind("control")
    assert not disk.exists("control.txt"), "the positive control's rewind did not land"


# -- recording ------------------------------------------------------------------------------


@clause(
    "SNAP-001",
    MUST,
    requires={"read", "write", "snapshots"},
    text="A write with a message_id reports snapshot_created, and rewinding that message "
    "restores the file's previous bytes exactly (or removes it, if the write created it).",
    rationale="Rewind is the agent's undo: a write it cannot undo exactly is a write the user "
    "cannot trust it with.",
)
def test_write_records_a_snapshot(session, disk):
    old = b"\xef\xbb\xbfold\r\ncontent without final newline"
    _prepared(session, disk, {"a.txt": old})
    result = session.write("a.txt", b"new content\n", message_id="m1")
    assert result.snapshot_created is True
    created = session.write("fresh.txt", "fresh\n", message_id="m1")
    assert created.snapshot_created is True
    assert disk.read("a.txt") == b"new content\n"
    session.rewind("m1")
    assert disk.read("a.txt") == old
    assert not disk.exists("fresh.txt")


@clause(
    "SNAP-002",
    MUST,
    requires={"read", "edit", "snapshots"},
    text="An edit with a message_id reports snapshot_created, and rewinding that message "
    "restores the file's previous bytes exactly.",
    rationale="Edits are most of an agent's changes; each must be undoable.",
)
def test_edit_records_a_snapshot(session, disk):
    old = b"value = 1\r\nother = 2\r\n"
    _prepared(session, disk, {"a.py": old})
    result = session.edit("a.py", [EditSpec("value = 1", "value = 10")], message_id="m1")
    assert result.snapshot_created is True
    assert disk.read("a.py") == b"value = 10\r\nother = 2\r\n"
    session.rewind("m1")
    assert disk.read("a.py") == old


@clause(
    "SNAP-003",
    MUST,
    requires={"read", "apply_patch", "snapshots"},
    text="A patch with a message_id reports snapshot_created, and rewinding that message "
    "restores every file it touched: updated files get their bytes back, deleted ones are "
    "recreated, added ones deleted and moves undone, as one result listing each file with "
    "its action (restored, recreated, deleted).",
    rationale="A multi-file change is undone as a whole or the undo is a second partial patch.",
)
def test_patch_records_a_snapshot(session, disk):
    _prepared(session, disk, BEFORE)
    result = session.apply_patch(PATCH, message_id="m1")
    assert result.snapshot_created is True
    assert disk.tree() == dict(AFTER)
    rewound = session.rewind("m1")
    assert_fields(rewound, "RewindResult")
    for item in rewound.restored:
        assert_fields(item, "RestoredFile")
    assert disk.tree() == dict(BEFORE)
    assert _actions(rewound) == [
        ("a.txt", "restored"),
        ("b.txt", "recreated"),
        ("c.txt", "recreated"),
        ("moved/c.txt", "deleted"),
        ("new/added.txt", "deleted"),
    ]


@clause(
    "SNAP-004",
    MUST,
    requires={"read", "write", "apply_patch", "snapshots"},
    text="A write or patch without a message_id records no snapshot: its result says "
    "snapshot_created False.",
    rationale="The flag tells the host whether the change can be undone; claiming a snapshot "
    "that does not exist promises an undo that will fail.",
)
def test_no_message_no_snapshot(session, disk):
    _prepared(session, disk, {"a.txt": b"a\n"})
    assert session.write("a.txt", "b\n").snapshot_created is False
    result = session.apply_patch("*** Begin Patch\n*** Add File: n.txt\n+n\n*** End Patch\n")
    assert result.snapshot_created is False
    # The same calls with a message id do record one: the flag is not simply always False.
    assert session.write("a.txt", "c\n", message_id="m1").snapshot_created is True
    result = session.apply_patch(
        "*** Begin Patch\n*** Add File: m.txt\n+m\n*** End Patch\n", message_id="m1"
    )
    assert result.snapshot_created is True


# -- rewind ----------------------------------------------------------------------------------


def _warmed_up(disk, crash):
    """Runs over the scenario, after one unfaulted write, patch and rewind with message ids
    (the state directories and the history's files then exist, as in every later run)."""
    runs = Runs(disk, crash)
    warm = runs.fresh()
    warm.write("zero.txt", "zero\n", message_id="warm0")
    warm.apply_patch(PATCH, message_id="warm1")
    warm.rewind("warm0")
    return runs


def _three_messages(session, disk):
    """m1 edits a.txt, m2 replaces a binary file, m3 patches a.txt and c.txt."""
    a0 = b"\xef\xbb\xbfheader\r\nbody = 1\r\n"
    b0 = bytes(range(256)) + b"\x00\xff"
    c0 = b"first\nlast without newline"
    _prepared(session, disk, {"a.txt": a0, "b.bin": b0, "c.txt": c0})
    session.edit("a.txt", [EditSpec("body = 1", "body = 2")], message_id="m1")
    a1 = disk.read("a.txt")
    session.write("b.bin", b"\x00" * 10 + b"\x89PNG", message_id="m2")
    b2 = disk.read("b.bin")
    session.apply_patch(
        "*** Begin Patch\n"
        "*** Update File: a.txt\n@@\n header\n-body = 2\n+body = 3\n"
        "*** Update File: c.txt\n@@\n first\n-last without newline\n+LAST\n"
        "*** End Patch\n",
        message_id="m3",
    )
    return {"a0": a0, "a1": a1, "b0": b0, "b2": b2, "c0": c0}


@clause(
    "SNAP-005",
    MUST,
    requires={"read", "write", "edit", "apply_patch", "snapshots"},
    text="Rewinding a message restores every file this session changed at or after it, over "
    "several later messages, to its exact bytes from before that message (BOM, CRLF, binary "
    "bytes, a missing final newline included).",
    rationale="An agent rewinds to the point where the conversation went wrong; everything "
    "after it goes, byte for byte.",
)
def test_rewind_across_messages(session, disk):
    seen = _three_messages(session, disk)
    session.rewind("m1")
    assert disk.read("a.txt") == seen["a0"]
    assert disk.read("b.bin") == seen["b0"]
    assert disk.read("c.txt") == seen["c0"]


@clause(
    "SNAP-006",
    MUST,
    requires={"read", "write", "edit", "apply_patch", "snapshots"},
    text="Rewinding a later message leaves the changes of earlier messages in place; rewinding "
    "back message by message passes through every earlier state exactly.",
    rationale="Undo one step must not undo three.",
)
def test_rewind_step_by_step(session, disk):
    seen = _three_messages(session, disk)
    session.rewind("m3")
    assert (disk.read("a.txt"), disk.read("b.bin"), disk.read("c.txt")) == (
        seen["a1"],
        seen["b2"],
        seen["c0"],
    )
    session.rewind("m2")
    assert (disk.read("a.txt"), disk.read("b.bin")) == (seen["a1"], seen["b0"])
    session.rewind("m1")
    assert disk.read("a.txt") == seen["a0"]


@clause(
    "SNAP-007",
    MUST,
    requires={"read", "write", "edit", "snapshots"},
    text="Every change recorded under one message id, by several calls, is undone by "
    "rewinding that message.",
    rationale="An agent's turn is one message with many tool calls; the turn is undone whole.",
)
def test_one_message_many_calls(session, disk):
    _prepared(session, disk, {"a.txt": b"a = 1\n", "b.txt": b"b = 1\n"})
    session.edit("a.txt", [EditSpec("a = 1", "a = 2")], message_id="turn")
    session.write("b.txt", "b = 2\n", message_id="turn")
    session.edit("a.txt", [EditSpec("a = 2", "a = 3")], message_id="turn")
    session.write("c.txt", "c\n", message_id="turn")
    session.rewind("turn")
    assert disk.tree() == {"a.txt": b"a = 1\n", "b.txt": b"b = 1\n"}


@clause(
    "SNAP-008",
    MUST,
    requires={"read", "write", "apply_patch", "snapshots"},
    text="Files created at or after the message are deleted by the rewind, and files deleted "
    "after it are recreated with their exact bytes; the result says 'deleted' and "
    "'recreated'.",
    rationale="An undo that leaves the new files behind, or cannot bring back a deleted one, "
    "is not an undo.",
)
def test_rewind_deletes_and_recreates(session, disk):
    _prepared(session, disk, {"keep.txt": b"keep\n", "doomed.txt": b"precious\r\nbytes"})
    session.write("created.txt", "created\n", message_id="m1")
    session.apply_patch(
        "*** Begin Patch\n*** Add File: deep/added.txt\n+added\n"
        "*** Delete File: doomed.txt\n*** End Patch\n",
        message_id="m2",
    )
    result = session.rewind("m1")
    assert disk.tree() == {"keep.txt": b"keep\n", "doomed.txt": b"precious\r\nbytes"}
    assert _actions(result) == [
        ("created.txt", "deleted"),
        ("deep/added.txt", "deleted"),
        ("doomed.txt", "recreated"),
    ]


@clause(
    "SNAP-009",
    MUST,
    requires={"read", "apply_patch", "snapshots"},
    text="A move is undone by the rewind: the file is back at its old path with its old bytes "
    "and gone from the new one.",
    rationale="Undoing only the content change of a rename leaves two files or none.",
)
def test_rewind_undoes_moves(session, disk):
    _prepared(session, disk, {"src.txt": b"one\ntwo\n"})
    session.apply_patch(
        "*** Begin Patch\n*** Update File: src.txt\n*** Move to: dst/renamed.txt\n"
        "@@\n one\n-two\n+TWO\n*** End Patch\n",
        message_id="m1",
    )
    session.apply_patch(
        "*** Begin Patch\n*** Update File: dst/renamed.txt\n*** Move to: final.txt\n"
        "@@\n one\n-TWO\n+2\n*** End Patch\n",
        message_id="m2",
    )
    session.rewind("m1")
    assert disk.tree() == {"src.txt": b"one\ntwo\n"}


@clause(
    "SNAP-010",
    MUST,
    requires={"read", "write", "apply_patch", "snapshots"},
    text="If any file to be rewound changed after this session's last recorded change to it "
    "(modified, deleted or created by someone else), rewind fails with CONFLICT and changes "
    "no file at all.",
    rationale="Rewinding over the user's later edit destroys it; restoring the other files "
    "alone leaves a mix of two points in time.",
)
def test_rewind_conflict_after_last_change(session, disk, external):
    _rewind_control(session, disk)
    _prepared(session, disk, BEFORE)
    session.apply_patch(PATCH, message_id="m1")
    changed_a = b"alpha one\nALPHA 222\nalpha three\n"
    for change, undo in (
        (
            lambda: external.modify_same_size_same_mtime("a.txt", changed_a),
            lambda: external.write("a.txt", AFTER["a.txt"]),
        ),
        (
            lambda: external.delete("new/added.txt"),
            lambda: external.write("new/added.txt", AFTER["new/added.txt"]),
        ),
        (
            lambda: external.write("b.txt", b"someone recreated it\n"),
            lambda: external.delete("b.txt"),
        ),
    ):
        change()
        before = disk.snapshot()
        with raises_code("CONFLICT"):
            session.rewind("m1")
        disk.assert_unchanged(before)
        undo()
    session.rewind("m1")
    assert disk.tree() == dict(BEFORE)


@clause(
    "SNAP-011",
    MUST,
    requires={"read", "write", "snapshots"},
    text="If a file's changes by this session from the message on do not form an unbroken "
    "chain (someone else changed it between two of them), rewinding to before the gap fails "
    "with CONFLICT and changes nothing, while rewinding only the changes after the gap works.",
    rationale="Restoring the state before the gap silently drops the other writer's change "
    "that the session later built on.",
)
def test_rewind_conflict_on_broken_chain(session, other_session, disk):
    _rewind_control(session, disk)
    _prepared(session, disk, {"f.txt": b"v0\n", "g.txt": b"g0\n"})
    session.write("f.txt", "v1\n", message_id="m1")
    session.write("g.txt", "g1\n", message_id="m1")
    other_session.read("f.txt")
    other_session.write("f.txt", "v1 + the other session\n")
    session.read("f.txt")
    session.write("f.txt", "v2\n", message_id="m2")
    before = disk.snapshot()
    with raises_code("CONFLICT"):
        session.rewind("m1")
    disk.assert_unchanged(before)
    session.rewind("m2")
    assert disk.read("f.txt") == b"v1 + the other session\n"
    assert disk.read("g.txt") == b"g1\n"


@clause(
    "SNAP-012",
    MUST,
    requires={"read", "write", "snapshots"},
    text="Snapshots are partitioned by session: a rewind undoes only its own session's "
    "changes, even when another session used the same message id.",
    rationale="Two agents in one workspace must not undo each other's work.",
)
def test_sessions_are_partitioned(session, other_session, disk):
    _prepared(session, disk, {"mine.txt": b"mine 0\n"})
    _prepared(other_session, disk, {"theirs.txt": b"theirs 0\n"})
    session.write("mine.txt", "mine 1\n", message_id="m1")
    other_session.write("theirs.txt", "theirs 1\n", message_id="m1")
    other_session.write("theirs-new.txt", "new\n", message_id="m1")
    session.rewind("m1")
    assert disk.tree() == {
        "mine.txt": b"mine 0\n",
        "theirs.txt": b"theirs 1\n",
        "theirs-new.txt": b"new\n",
    }
    other_session.rewind("m1")
    assert disk.tree() == {"mine.txt": b"mine 0\n", "theirs.txt": b"theirs 0\n"}


@clause(
    "SNAP-013",
    MUST,
    requires={"read", "write", "snapshots"},
    text="Rewinding a message id for which this session recorded no change (never used, or "
    "used only by another session) fails with NOT_FOUND or INVALID_ARGUMENT and changes "
    "nothing.",
    rationale="A typo in the message id must not rewind to some other point, or to the start.",
)
def test_unknown_message(session, other_session, disk):
    _rewind_control(session, disk)
    _prepared(session, disk, {"a.txt": b"a0\n"})
    session.write("a.txt", "a1\n", message_id="m1")
    other_session.write("b.txt", "b1\n", message_id="only-b")
    before = disk.snapshot()
    for message_id in ("never-used", "only-b", "M1"):
        with raises_code("NOT_FOUND", "INVALID_ARGUMENT"):
            session.rewind(message_id)
    disk.assert_unchanged(before)


@clause(
    "SNAP-014",
    MUST,
    requires={"read", "write", "apply_patch", "snapshots"},
    text="A change that fails records nothing that counts: after a failed write or patch "
    "with a later message id, rewinding an earlier message restores its files without "
    "CONFLICT, and the failed message is unknown.",
    rationale="A snapshot of a change that never happened breaks the file's chain and makes "
    "every earlier undo impossible.",
)
def test_failed_change_records_nothing(session, disk, external):
    _prepared(session, disk, {"a.txt": b"a0\n", "b.txt": b"b0\n"})
    session.apply_patch("*** Begin Patch\n*** Add File: control.txt\n+c\n*** End Patch\n")
    session.write("a.txt", "a1\n", message_id="m1")
    with raises_code("NO_MATCH"):
        session.apply_patch(
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+a2\n"
            "*** Update File: b.txt\n@@\n-nothing\n+b2\n*** End Patch\n",
            message_id="m2",
        )
    external.write("b.txt", "b0 changed by someone\n")
    with raises_code("STALE"):
        session.write("b.txt", "b2\n", message_id="m2")
    assert _rewind_refused(session, "m2"), "a failed message can be rewound"
    session.rewind("m1")
    assert disk.tree() == {
        "a.txt": b"a0\n",
        "b.txt": b"b0 changed by someone\n",
        "control.txt": b"c\n",
    }


@clause(
    "SNAP-015",
    SHOULD,
    requires={"read", "apply_patch", "snapshots"},
    text="A file recreated by a rewind gets the permission bits it had before it was deleted.",
    rationale="A deleted script that comes back without its executable bit is not quite back.",
)
def test_recreated_file_keeps_mode(session, disk):
    _prepared(session, disk, {"run.sh": b"#!/bin/sh\necho hi\n"})
    os.chmod(disk.path("run.sh"), 0o750)
    session.apply_patch(
        "*** Begin Patch\n*** Delete File: run.sh\n*** End Patch\n", message_id="m1"
    )
    session.rewind("m1")
    assert disk.mode("run.sh") == 0o750


# -- crash safety -----------------------------------------------------------------------------


@clause(
    "SNAP-016",
    MUST,
    requires={"read", "apply_patch", "snapshots", "recovery", "python_fs"},
    text="A crash at any step of a rewind, followed by recovery, leaves its files all as before "
    "the rewind or all rewound, with no side file; when the rewind did not take effect, "
    "rewinding again restores the files.",
    rationale="Rewind rewrites several files at once, exactly like a patch; a crash must not "
    "leave half of them rewound, or a history that says the rewind happened when it did not.",
)
def test_crash_during_rewind(disk, crash):
    runs = Runs(disk, crash)
    warm = runs.fresh()
    warm.apply_patch(PATCH, message_id="warm")
    warm.rewind("warm")
    outcomes = {"not rewound": 0, "rewound": 0}
    for step in steps():
        message_id = f"m{step}"
        session = runs.fresh()
        session.apply_patch(PATCH, message_id=message_id)
        with crash_at(step) as point:
            session.rewind(message_id)
        if not point.crashed:
            assert disk.tree() == dict(BEFORE)
            break
        runs.recovered()
        tree = disk.tree()
        assert tree in (dict(BEFORE), dict(AFTER)), f"crash at step {step}: {sorted(tree)}"
        again = runs.driver.open_session("A")
        if tree == dict(AFTER):
            outcomes["not rewound"] += 1
            again.rewind(message_id)
            assert disk.tree() == dict(BEFORE), f"step {step}: the second rewind did not restore"
        else:
            outcomes["rewound"] += 1
            _rewind_refused(again, message_id)
            assert disk.tree() == dict(BEFORE), f"step {step}: a repeated rewind changed files"
    assert outcomes["not rewound"] > 0 and outcomes["rewound"] > 0, outcomes


@clause(
    "SNAP-017",
    MUST,
    requires={"read", "write", "apply_patch", "snapshots", "recovery", "python_fs"},
    text="A patch with a message_id crashed at any step counts in the history only if recovery "
    "completed it: when it was rolled back its message cannot be rewound and earlier "
    "messages rewind cleanly; when it was completed, rewinding it restores all-before.",
    rationale="A snapshot of a rolled-back transaction breaks every file's chain; a missing "
    "snapshot of a completed one makes it impossible to undo.",
)
def test_crashed_patch_history(disk, crash):
    runs = _warmed_up(disk, crash)
    sides = set()
    for step in steps():
        if step % 2 == 0:
            continue  # every other crash point: the clause does four transactions per point
        session = runs.fresh()
        session.write("zero.txt", "zero\n", message_id=f"zero{step}")
        with crash_at(step) as point:
            session.apply_patch(PATCH, message_id=f"patch{step}")
        runs.recovered()
        tree = disk.tree()
        again = runs.driver.open_session("A")
        if tree == {**BEFORE, "zero.txt": b"zero\n"}:
            sides.add("before")
            refused = _rewind_refused(again, f"patch{step}")
            assert refused or disk.tree() == tree, f"step {step}: rewinding a rolled-back patch"
        else:
            assert tree == {**AFTER, "zero.txt": b"zero\n"}, f"step {step}: {sorted(tree)}"
            sides.add("after")
            again.rewind(f"patch{step}")
            assert disk.tree() == {**BEFORE, "zero.txt": b"zero\n"}, f"step {step}"
        again.rewind(f"zero{step}")
        assert disk.tree() == dict(BEFORE), f"step {step}: the earlier message did not rewind"
        if not point.crashed:
            break
    assert sides == {"before", "after"}, sides


@clause(
    "SNAP-018",
    MUST,
    requires={"read", "write", "apply_patch", "snapshots", "python_fs"},
    text="A patch with a message_id that succeeds despite an I/O error at any step has its "
    "snapshot (snapshot_created, and rewinding it restores all-before); one that fails "
    "leaves the history as it was.",
    rationale="Patch snapshots are created before the commit: a patch that could not record "
    "its undo must not be applied.",
)
def test_io_error_and_patch_snapshots(disk, crash):
    runs = _warmed_up(disk, crash)
    outcomes = {"failed": 0, "succeeded": 0}
    for step in steps():
        if step % 2 == 0:
            continue  # every other fault point: the clause does four transactions per point
        session = runs.fresh()
        session.write("zero.txt", "zero\n", message_id=f"zero{step}")
        error = errno.ENOSPC if step % 4 == 1 else errno.EIO
        try:
            with fail_at(step, error) as point:
                result = session.apply_patch(PATCH, message_id=f"patch{step}")
        except Exception as exc:
            if not is_error_code(getattr(exc, "code", None)):
                raise UncodedError(f"step {step}: {exc!r} carries no error code") from exc
            outcomes["failed"] += 1
            assert disk.tree() == {**BEFORE, "zero.txt": b"zero\n"}, f"step {step}"
        else:
            outcomes["succeeded"] += 1
            assert result.snapshot_created is True, f"step {step}: applied without a snapshot"
        runs.recovered()
        again = runs.driver.open_session("A")
        if disk.tree() != {**BEFORE, "zero.txt": b"zero\n"}:
            again.rewind(f"patch{step}")
        again.rewind(f"zero{step}")
        assert disk.tree() == dict(BEFORE), f"step {step}: the history does not match the disk"
        if not point.failed:
            break
    assert outcomes["failed"] > 0, outcomes


@clause(
    "SNAP-019",
    MUST,
    requires={"read", "write", "snapshots", "python_fs"},
    text="A write with a message_id reports snapshot_created truthfully under I/O errors: when "
    "it says True, rewinding the message restores the old bytes; a write that fails changes "
    "nothing.",
    rationale="Write snapshots are best effort, so the flag is the only thing that tells the "
    "host whether the change can be undone.",
)
def test_write_snapshot_flag_is_truthful(disk, crash):
    runs = Runs(disk, crash)
    files = {"a.txt": b"old bytes\n"}
    warm = runs.fresh(files)
    warm.write("a.txt", "warm\n", message_id="warm")
    recorded = 0
    for step in steps():
        session = runs.fresh(files)
        error = errno.ENOSPC if step % 2 else errno.EIO
        try:
            with fail_at(step, error) as point:
                result = session.write("a.txt", "new bytes\n", message_id=f"w{step}")
        except Exception as exc:
            if not is_error_code(getattr(exc, "code", None)):
                raise UncodedError(f"step {step}: {exc!r} carries no error code") from exc
            assert disk.tree() == dict(files), f"step {step}: a failed write changed files"
        else:
            assert disk.read("a.txt") == b"new bytes\n"
            if result.snapshot_created:
                recorded += 1
                runs.driver.recover()
                session.rewind(f"w{step}")
                assert disk.read("a.txt") == b"old bytes\n", f"step {step}: snapshot said True"
        if not point.failed:
            break
    assert recorded > 0
