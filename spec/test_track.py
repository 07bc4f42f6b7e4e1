"""TRACK: read records and stale detection by content hash (DESIGN §4 "Stale detection")."""

from __future__ import annotations

import os

from editspec.reference import EditSpec
from editspec.spec import (
    MUST,
    SHOULD,
    call_at,
    clause,
    count_mutations,
    prepare_change,
    raises_code,
)
from editspec.spec.fixtures import sha256

ORIGINAL = "value = 1\nother = 2\n"


# Positive controls: before a refusal, the same kind of call by the same session succeeds
# where it must (a file read in full and unchanged since), so a tool that refuses every
# write (another working directory, a dead session) fails the control, not the clause.


def _control_write(session, disk, name: str = "control.py") -> None:
    disk.write(name, ORIGINAL)
    session.read(name)
    session.write(name, "value = 3\n")
    assert disk.read(name) == b"value = 3\n", f"control: the write of {name} did not land"


def _control_edit(session, disk, name: str = "control.py") -> None:
    disk.write(name, ORIGINAL)
    session.read(name)
    session.edit(name, [EditSpec("value = 1", "value = 2")])
    assert disk.read(name) == ORIGINAL.replace("1", "2").encode(), f"control: edit of {name}"


@clause(
    "TRACK-001",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="A change that keeps the file's size and modification time is detected: the write "
    "fails with STALE.",
    rationale="mtime has coarse resolution on many file systems and is restored by tools "
    "(rsync, git checkout, archive extraction); only the content hash is reliable.",
)
def test_same_size_same_mtime_change_is_stale(session, disk, external):
    _control_write(session, disk)
    disk.write("a.py", ORIGINAL)
    session.read("a.py")
    external.modify_same_size_same_mtime("a.py", ORIGINAL.replace("1", "9"))
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.py", "value = 3\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-002",
    MUST,
    requires={"write"},
    text="A touch that changes only the modification time is not a change: the write succeeds.",
    rationale="Builds, editors and git touch files constantly; an mtime-based check refuses "
    "every write after a build and trains agents to re-read blindly.",
)
def test_touch_is_not_stale(session, disk, external):
    disk.write("a.py", ORIGINAL)
    prepare_change(session, "a.py")
    external.touch("a.py")
    session.write("a.py", "value = 3\n")
    assert disk.read("a.py") == b"value = 3\n"


@clause(
    "TRACK-003",
    MUST,
    requires={"read", "write", "read_before_write"},
    text="Read records are per session: session B's read does not authorize session A's write "
    "(NOT_READ).",
    rationale="Two conversations on one workspace each need their own view; a shared record "
    "lets one agent overwrite what only the other has seen.",
)
def test_other_sessions_read_does_not_authorize(session, other_session, disk):
    _control_write(session, disk)
    disk.write("a.py", ORIGINAL)
    other_session.read("a.py")
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.write("a.py", "value = 3\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-004",
    MUST,
    requires={"write"},
    text="After a successful write the session's record holds the new hash: it may write the "
    "file again without re-reading it.",
    rationale="Forcing a re-read after every own write doubles the traffic of every edit loop.",
)
def test_own_write_updates_the_record(session, disk):
    disk.write("a.py", ORIGINAL)
    prepare_change(session, "a.py")
    session.write("a.py", "value = 3\n")
    session.write("a.py", "value = 4\n")
    assert disk.read("a.py") == b"value = 4\n"


@clause(
    "TRACK-005",
    MUST,
    requires={"edit"},
    text="After a successful edit the session may edit the file again without re-reading it.",
    rationale="Agents make several edits in a row; each one's result is the next one's "
    "starting point.",
)
def test_own_edit_updates_the_record(session, disk):
    disk.write("a.py", ORIGINAL)
    prepare_change(session, "a.py")
    session.edit("a.py", [EditSpec("value = 1", "value = 2")])
    session.edit("a.py", [EditSpec("value = 2", "value = 3")])
    assert disk.read("a.py") == ORIGINAL.replace("1", "3").encode()


@clause(
    "TRACK-006",
    MUST,
    requires={"write", "edit"},
    text="A file the session created may be edited by it without a read.",
    rationale="The session knows exactly what it just wrote; demanding a read is pure overhead.",
)
def test_created_file_can_be_edited(session, disk):
    session.write("new.py", ORIGINAL)
    session.edit("new.py", [EditSpec("other = 2", "other = 5")])
    assert disk.read("new.py") == ORIGINAL.replace("2", "5").encode()


@clause(
    "TRACK-007",
    MUST,
    requires={"write", "stale_detection"},
    text="After the session's own write, an external change makes the next write STALE.",
    rationale="Updating the record after a write must not turn it into a permanent licence.",
)
def test_external_change_after_own_write_is_stale(session, disk, external):
    disk.write("a.py", ORIGINAL)
    prepare_change(session, "a.py")
    session.write("a.py", "value = 3\n")
    external.write("a.py", "value = 100\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.py", "value = 4\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-008",
    MUST,
    requires={"read", "edit", "stale_detection"},
    text="An edit of a file changed since the session read it fails with STALE and changes "
    "nothing.",
    rationale="An edit computed against old content and applied to new content corrupts it.",
)
def test_edit_of_changed_file_is_stale(session, disk, external):
    _control_edit(session, disk)
    disk.write("a.py", ORIGINAL)
    session.read("a.py")
    external.write("a.py", ORIGINAL + "added = 3\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.edit("a.py", [EditSpec("value = 1", "value = 2")])
    disk.assert_unchanged(before)


@clause(
    "TRACK-009",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="A write by another session after this session's read makes this session's write STALE.",
    rationale="Two agents in one workspace are each other's external writers.",
)
def test_other_sessions_write_makes_stale(session, other_session, disk):
    _control_write(session, disk)
    disk.write("a.py", ORIGINAL)
    session.read("a.py")
    other_session.read("a.py")
    other_session.write("a.py", "written by B\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.py", "written by A\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-010",
    MUST,
    requires={"read", "edit", "read_before_write"},
    text="An edit of an existing file the session has not read fails with NOT_READ.",
    rationale="An old_string guessed without reading may match, and the edit then lands "
    "somewhere the agent never saw.",
)
def test_edit_without_read_is_not_read(session, disk):
    _control_edit(session, disk)
    disk.write("a.py", ORIGINAL)
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.edit("a.py", [EditSpec("value = 1", "value = 2")])
    disk.assert_unchanged(before)


@clause(
    "TRACK-011",
    MUST,
    requires={"read", "edit", "read_before_write"},
    text="A partial read (a line range) does not authorize an edit: NOT_READ.",
    rationale="The edit may match outside the lines the agent saw.",
)
def test_partial_read_does_not_authorize_edit(session, disk):
    _control_edit(session, disk)
    disk.write("a.py", "".join(f"line{i} = {i}\n" for i in range(1, 41)))
    session.read("a.py", start_line=1, end_line=10)
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.edit("a.py", [EditSpec("line5 = 5", "line5 = 50")])
    disk.assert_unchanged(before)


@clause(
    "TRACK-012",
    MUST,
    requires={"read", "write", "read_before_write"},
    text="A read truncated by max_bytes is partial: it does not authorize a write (NOT_READ).",
    rationale="A truncated read is the silent case of a partial one.",
)
def test_truncated_read_is_partial(session, disk):
    _control_write(session, disk)
    disk.write("a.txt", "x" * 5000)
    result = session.read("a.txt", max_bytes=100)
    assert result.truncated is True
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.write("a.txt", "y\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-013",
    SHOULD,
    requires={"read", "write"},
    text="A partial read of an unchanged file after a full read keeps the session authorized.",
    rationale="Looking at a few lines again must not revoke what a full read established.",
)
def test_partial_read_after_full_read_keeps_authorization(session, disk):
    disk.write("a.txt", "".join(f"line {i}\n" for i in range(1, 21)))
    session.read("a.txt")
    session.read("a.txt", start_line=3, end_line=4)
    session.write("a.txt", "replaced\n")
    assert disk.read("a.txt") == b"replaced\n"


@clause(
    "TRACK-014",
    MUST,
    requires={"write"},
    text="A file changed and then changed back to the bytes the session read is not stale.",
    rationale="The content hash, not the history of the file, decides freshness.",
)
def test_change_and_revert_is_not_stale(session, disk, external):
    disk.write("a.py", ORIGINAL)
    prepare_change(session, "a.py")
    external.write("a.py", "something else entirely\n")
    external.write("a.py", ORIGINAL)
    session.write("a.py", "value = 3\n")
    assert disk.read("a.py") == b"value = 3\n"


@clause(
    "TRACK-015",
    MUST,
    requires={"read", "write", "read_before_write"},
    text="Reading one file does not authorize writing another.",
    rationale="A record keyed too coarsely (by directory, or a session-wide flag) lets blind "
    "overwrites through.",
)
def test_reading_one_file_does_not_authorize_another(session, disk):
    _control_write(session, disk)
    disk.write("a.py", ORIGINAL)
    disk.write("b.py", ORIGINAL)
    session.read("a.py")
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.write("b.py", "value = 3\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-016",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="A file deleted and recreated with other content after the read is STALE.",
    rationale="Tools that save by delete-and-create (some editors, git checkout) must not "
    "look like 'same file'.",
)
def test_recreated_file_is_stale(session, disk, external):
    _control_write(session, disk)
    disk.write("a.py", ORIGINAL)
    session.read("a.py")
    external.delete("a.py")
    external.write("a.py", "recreated by someone else\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.py", "value = 3\n")
    disk.assert_unchanged(before)


@clause(
    "TRACK-017",
    MUST,
    requires={"edit", "cas"},
    text="expected_sha256 on an edit stands in for a read when it matches, and fails with STALE "
    "when it does not.",
    rationale="Compare-and-swap must work for edits as for writes.",
)
def test_expected_sha256_on_edit(session, disk):
    disk.write("a.py", ORIGINAL)
    session.edit("a.py", [EditSpec("value = 1", "value = 2")], expected_sha256=sha256(ORIGINAL))
    changed = ORIGINAL.replace("value = 1", "value = 2")
    assert disk.read("a.py") == changed.encode()
    before = disk.snapshot()
    with raises_code("STALE"):
        session.edit("a.py", [EditSpec("value = 2", "value = 3")], expected_sha256=sha256(ORIGINAL))
    disk.assert_unchanged(before)


@clause(
    "TRACK-018",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="After a STALE refusal, a fresh full read authorizes the write.",
    rationale="Re-reading is the documented way out of STALE; it must work.",
)
def test_reread_after_stale_authorizes(session, disk, external):
    _control_write(session, disk)
    disk.write("a.py", ORIGINAL)
    session.read("a.py")
    external.write("a.py", "changed\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.py", "mine\n")
    disk.assert_unchanged(before)
    session.read("a.py")
    session.write("a.py", "mine\n")
    assert disk.read("a.py") == b"mine\n"


def _changes_before_publish(session, disk, external, operation, name, changed):
    """Run ``operation`` once per mutating step before it publishes, with an external
    same-size, same-mtime change injected at that step; every run must end in STALE
    with the external bytes kept."""
    disk.write("probe/" + name, ORIGINAL)
    prepare_change(session, "probe/" + name)
    with count_mutations() as clean:
        operation("probe/" + name)
    publish = next(
        (
            call.index
            for call in clean.trace
            if call.name in ("replace", "rename", "link")
            and len(call.paths) == 2
            and os.path.basename(call.paths[1]) == name
        ),
        None,
    )
    assert publish is not None, f"no rename or link publishes the file: {clean.trace}"
    assert publish > 1
    for step in range(1, publish):
        path = f"d{step}/{name}"
        disk.write(path, ORIGINAL)
        prepare_change(session, path)
        with (
            raises_code("STALE"),
            call_at(step, lambda p=path: external.modify_same_size_same_mtime(p, changed)),
        ):
            operation(path)
        assert disk.read(path) == changed.encode(), f"the external change at step {step} was lost"
    disk.assert_no_leftovers()


@clause(
    "TRACK-019",
    MUST,
    requires={"write", "stale_detection", "python_fs"},
    text="A write re-verifies the file inside its critical section: an external change at any "
    "step before the publishing rename is caught (STALE) and the change survives.",
    rationale="Checking only at validation leaves the time of staging and fsync open for a "
    "concurrent save to be lost.",
)
def test_write_reverifies_before_publishing(session, disk, external):
    _changes_before_publish(
        session,
        disk,
        external,
        lambda path: session.write(path, "value = 3\n"),
        "a.py",
        ORIGINAL.replace("1", "7"),
    )


@clause(
    "TRACK-020",
    MUST,
    requires={"edit", "stale_detection", "python_fs"},
    text="An edit re-verifies the file inside its critical section: an external change at any "
    "step before the publishing rename is caught (STALE) and the change survives.",
    rationale="Checking only at validation leaves the time of staging and fsync open for a "
    "concurrent save to be lost.",
)
def test_edit_reverifies_before_publishing(session, disk, external):
    _changes_before_publish(
        session,
        disk,
        external,
        lambda path: session.edit(path, [EditSpec("other = 2", "other = 3")]),
        "b.py",
        ORIGINAL.replace("1", "7"),
    )


@clause(
    "TRACK-021",
    SHOULD,
    requires={"read", "write", "read_before_write"},
    text="A full read of a binary file authorizes replacing it.",
    rationale="Binary files (images, fixtures) are replaced whole; they must not be "
    "unwritable without compare-and-swap.",
)
def test_binary_full_read_authorizes(session, disk):
    disk.write("logo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    session.write("created.png", b"\x89PNG\r\n\x1a\ncreated")  # a new file needs no read
    assert disk.read("created.png") == b"\x89PNG\r\n\x1a\ncreated"
    with raises_code("NOT_READ"):  # the read below is what authorizes
        session.write("logo.png", b"\x89PNG\r\n\x1a\nunread")
    session.read("logo.png")
    session.write("logo.png", b"\x89PNG\r\n\x1a\nnew")
    assert disk.read("logo.png") == b"\x89PNG\r\n\x1a\nnew"
