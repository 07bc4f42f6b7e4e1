"""MOVE: moving a file or a directory, never over an existing path (file-io-design §9).

Within one file system a move is one rename; across file systems (EXDEV) it is copy,
fsync, verify by hash, then delete, and the result says ``atomic`` False with each step's
outcome. The suite injects EXDEV at the move's rename through the os calls of a
``python_fs`` driver; it never needs a real second file system. It also creates the
destination, as another process would, just before each step of a move (MOVE-008).
"""

from __future__ import annotations

import errno
import os

from editspec.spec import (
    MUST,
    call_at,
    clause,
    count_mutations,
    fail_at,
    inconclusive,
    prepare_change,
    raises_code,
)
from editspec.spec.fixtures import sha256

TEXT = "moved content\r\nsecond line\n"


def _control_move(session, disk) -> None:
    """A positive control: a file the session has read moves to a free path."""
    disk.write("control.txt", "control\n")
    prepare_change(session, "control.txt")
    session.move("control.txt", "control-moved.txt")
    assert disk.read("control-moved.txt") == b"control\n", "control: the move did not land"
    assert not disk.exists("control.txt"), "control: the source is still there"


@clause(
    "MOVE-001",
    MUST,
    requires={"move"},
    text="Moving a file this session has read puts its exact bytes at the new path (missing "
    "parent directories created) and removes the old path; the result names both.",
    rationale="A rename that rewrites line endings or leaves the old copy behind turns a "
    "refactoring into a duplicate module.",
)
def test_move_file(session, disk):
    disk.write("a.txt", TEXT)
    prepare_change(session, "a.txt")
    result = session.move("a.txt", "new/dir/b.txt")
    assert disk.read("new/dir/b.txt") == TEXT.encode()
    assert not disk.exists("a.txt")
    assert result.path == "a.txt"
    assert result.move_to == "new/dir/b.txt"


@clause(
    "MOVE-002",
    MUST,
    requires={"move"},
    text="A move onto an existing path fails with ALREADY_EXISTS and both files keep their "
    "bytes: a move never clobbers.",
    rationale="rename(2) replaces its target silently; a move tool built on it deletes the "
    "file that was there, unseen and unrestorable.",
)
def test_move_never_clobbers(session, disk):
    _control_move(session, disk)
    disk.write("a.txt", TEXT)
    disk.write("b.txt", "already here\n")
    prepare_change(session, "a.txt", "b.txt")
    before = disk.snapshot()
    with raises_code("ALREADY_EXISTS"):
        session.move("a.txt", "b.txt")
    disk.assert_unchanged(before)


@clause(
    "MOVE-003",
    MUST,
    requires={"read", "move", "read_before_write"},
    text="Moving a file this session has not read in full (and for which no expected_sha256 "
    "is given) fails with NOT_READ, and nothing changes.",
    rationale="A move carries content the agent vouches for at its new path; the same rule "
    "as writing it there.",
)
def test_move_unread_is_refused(session, disk):
    _control_move(session, disk)
    disk.write("a.txt", TEXT)
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.move("a.txt", "b.txt")
    disk.assert_unchanged(before)


def _rename_index(trace, destination: str) -> int | None:
    for call in trace:
        named = call.paths and os.path.basename(call.paths[-1]) == destination
        if call.name in ("rename", "replace", "link") and named:
            return call.index
    return None


@clause(
    "MOVE-004",
    MUST,
    requires={"move", "python_fs"},
    text="When the move's rename (or link) fails with EXDEV (another file system), the file "
    "is still moved, by copy, fsync, verify and delete: exact bytes at the new path, the old path "
    "gone, and the result says atomic False with the outcome of each step.",
    rationale="Presenting a copy-then-delete as a rename hides the window in which both or "
    "neither path holds the file; the host must know it was not atomic.",
)
def test_exdev_move_is_reported_as_steps(session, disk):
    disk.write("probe.txt", TEXT)
    session.move("probe.txt", "probe-moved.txt", expected_sha256=sha256(TEXT))
    disk.write("a.txt", TEXT)
    with count_mutations() as clean:
        result = session.move("a.txt", "b.txt", expected_sha256=sha256(TEXT))
    assert result.atomic is True, "a plain rename within one file system is atomic"
    index = _rename_index(clean.trace, "b.txt")
    if index is None:
        inconclusive("the move made no rename or link to its destination to fail with EXDEV")
    disk.write("c.txt", TEXT)
    with fail_at(index, errno.EXDEV) as point:
        result = session.move("c.txt", "b2.txt", expected_sha256=sha256(TEXT))
    if not point.failed:
        inconclusive("EXDEV was not injected at the move's rename")
    assert disk.read("b2.txt") == TEXT.encode()
    assert not disk.exists("c.txt"), "the source stayed after a copy across file systems"
    assert result.atomic is False, "a copy across file systems was reported as atomic"
    assert len(result.steps) > 1, f"the steps of the copy are not reported: {result.steps}"
    disk.assert_no_leftovers()


@clause(
    "MOVE-005",
    MUST,
    requires={"move", "snapshots", "cas"},
    text="A move is restorable: rewind(restore_ref) puts the file back at its old path with "
    "its bytes and removes the new one.",
    rationale="Undoing a refactoring must undo its renames too, or the rewound tree imports "
    "modules by names that no longer exist.",
)
def test_move_is_rewound(session, disk):
    disk.write("a.txt", TEXT)
    result = session.move("a.txt", "b.txt", expected_sha256=sha256(TEXT), message_id="m1")
    assert disk.exists("b.txt")
    assert result.restore_ref, "the move reported no restore_ref"
    session.rewind(result.restore_ref)
    assert disk.read("a.txt") == TEXT.encode()
    assert not disk.exists("b.txt")


@clause(
    "MOVE-006",
    MUST,
    requires={"move", "cas", "recovery", "python_fs"},
    text="A crash at any step of a move, followed by recovery, leaves the file's exact bytes "
    "at exactly one of the two paths.",
    rationale="A move done as write-new-then-delete-old leaves two copies, or a torn new one, "
    "when the process dies in between.",
)
def test_crash_during_move(disk, crash):
    warm = crash.restart().open_session("A")
    disk.write("warm.txt", "x")
    warm.move("warm.txt", "warm2.txt", expected_sha256=sha256("x"))
    probe = crash.restart().open_session("A")
    disk.write("a.txt", TEXT)
    steps = len(crash.count(lambda: probe.move("a.txt", "b.txt", expected_sha256=sha256(TEXT))))
    assert steps > 0
    for step in range(1, steps + 1):
        for leftover in ("a.txt", "b.txt"):
            if disk.exists(leftover):
                disk.path(leftover).unlink()
        disk.write("a.txt", TEXT)
        live = crash.restart().open_session("A")
        with crash.at(step):
            live.move("a.txt", "b.txt", expected_sha256=sha256(TEXT))
        crash.restart().recover()
        holders = [path for path in ("a.txt", "b.txt") if disk.exists(path)]
        assert len(holders) == 1, f"crash at step {step}: the file is at {holders}"
        assert disk.read(holders[0]) == TEXT.encode(), f"crash at step {step}: torn file"


@clause(
    "MOVE-007",
    MUST,
    requires={"move", "delete"},
    text="A directory moves only with the manifest_sha256 of a manifest taken before: with "
    "it every entry arrives under the new path; after a change under it since, the move "
    "fails with STALE and nothing moves.",
    rationale="Moving a directory carries files the agent never read; the manifest is the "
    "statement of what it meant to carry.",
)
def test_directory_move_needs_a_fresh_manifest(session, disk):
    disk.write("pkg/a.py", "a\n")
    disk.write("pkg/sub/b.py", "b\n")
    listing = session.manifest("pkg")
    session.move("pkg", "lib", manifest_sha256=listing.manifest_sha256)
    assert disk.read("lib/a.py") == b"a\n" and disk.read("lib/sub/b.py") == b"b\n"
    assert not disk.exists("pkg"), "control: the directory did not move"
    listing = session.manifest("lib")
    disk.write("lib/sub/new.py", "saved by the user\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.move("lib", "pkg", manifest_sha256=listing.manifest_sha256)
    disk.assert_unchanged(before)


def _first_naming(trace, destination: str) -> int | None:
    """The index of the first mutating call that names ``destination`` (its publish)."""
    for call in trace:
        if any(path and os.path.basename(path) == destination for path in call.paths):
            return call.index
    return None


def _create_if_absent(disk, rel: str, payload: bytes) -> bool:
    """What another process does: create ``rel`` exclusively; False if it exists."""
    try:
        fd = os.open(disk.root / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, payload)
    finally:
        os.close(fd)
    return True


@clause(
    "MOVE-008",
    MUST,
    requires={"move", "python_fs"},
    text="A destination that another process creates while a move runs, after the move's "
    "own checks and before its publish, is never replaced: the move fails with "
    "ALREADY_EXISTS, the other process's file keeps its bytes and the source keeps its own.",
    rationale="A check that the destination is absent followed by rename(2) leaves an "
    "instant in which a file saved by an editor or a build is silently replaced; only a "
    "publish that itself refuses an existing name (link, renameat2 RENAME_NOREPLACE) "
    "closes it.",
)
def test_move_never_clobbers_a_racing_create(session, disk):
    _control_move(session, disk)
    disk.write("a.txt", TEXT)
    prepare_change(session, "a.txt")
    with count_mutations() as clean:
        session.move("a.txt", "b.txt")
    assert disk.read("b.txt") == TEXT.encode(), "the move did not land"
    publish = _first_naming(clean.trace, "b.txt")
    if publish is None:
        inconclusive("the move made no os call that names its destination")
    raced = 0
    for step in range(1, publish + 1):
        disk.path("b.txt").unlink(missing_ok=True)
        disk.write("a.txt", TEXT)
        prepare_change(session, "a.txt")
        payload = f"saved by another process before step {step}\n".encode()
        created: list[bool] = []
        failure: Exception | None = None
        try:
            racer = lambda made=created, data=payload: made.append(  # noqa: E731
                _create_if_absent(disk, "b.txt", data)
            )
            with call_at(step, racer):
                session.move("a.txt", "b.txt")
        except Exception as exc:
            failure = exc
        if created != [True]:
            break  # the move had published already (or ended before this step)
        raced += 1
        assert disk.read("b.txt") == payload, (
            f"step {step}: the file another process created at the destination was replaced"
        )
        assert disk.read("a.txt") == TEXT.encode(), f"step {step}: the source lost its bytes"
        with raises_code("ALREADY_EXISTS"):
            if failure is not None:
                raise failure
        disk.path("b.txt").unlink()
    if raced == 0:
        inconclusive("no step of the move ran before its publish")
