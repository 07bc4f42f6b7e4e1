"""WRITE: creating and replacing whole files, atomically and only when fresh (DESIGN §4 "Write")."""

from __future__ import annotations

import errno
import os
import threading

from editspec.contract import is_error_code
from editspec.spec import (
    MUST,
    SHOULD,
    UncodedError,
    Unsafe,
    assert_fields,
    clause,
    count_mutations,
    fail_at,
    prepare_change,
    raises_any_code,
    raises_code,
    setup,
)
from editspec.spec.fixtures import sha256

OLD = "first line\nsecond line\n"
NEW = "first line\nsecond line, changed\nthird line\n"


def _prepare_whole(session, path: str, size: int) -> None:
    """``prepare_change`` for a file above the default read limit: a full read with a
    ``max_bytes`` of exactly its size (never a huge one a tool may refuse), only for a
    driver that needs a read before a change."""
    capabilities = getattr(session, "driver_capabilities", frozenset())
    if {"read_before_write", "stale_detection"} & set(capabilities):
        with setup():
            session.read(path, max_bytes=size)


def _control_create(session, disk, path: str = "control.txt") -> None:
    """A positive control: creating a new file succeeds and puts its bytes on disk."""
    session.write(path, "control\n")
    assert disk.read(path) == b"control\n", f"control: write({path!r}) created no file"


@clause(
    "WRITE-001",
    MUST,
    requires={"write"},
    text="Writing a path that does not exist creates the file with exactly the given content, "
    "without a prior read; the result says operation 'create', old_sha256 None, and the new "
    "hash and size.",
    rationale="Creating files is the commonest write; demanding a read of a missing file makes "
    "agents loop.",
)
def test_create_needs_no_read(session, disk):
    result = session.write("new.py", "print('hi')\n")
    assert disk.read("new.py") == b"print('hi')\n"
    assert result.operation == "create"
    assert result.old_sha256 is None
    assert result.new_sha256 == sha256(b"print('hi')\n")
    assert result.bytes_written == len(b"print('hi')\n")


@clause(
    "WRITE-002",
    MUST,
    requires={"write"},
    text="Content given as bytes is written byte for byte (NUL, CR, invalid UTF-8 included).",
    rationale="Any decoding or normalization of bytes content corrupts binary files.",
)
def test_bytes_are_written_verbatim(session, disk):
    data = bytes(range(256)) + b"\r\n\r\x00\xff\xfe"
    session.write("blob.bin", data)
    assert disk.read("blob.bin") == data


@clause(
    "WRITE-003",
    MUST,
    requires={"write"},
    text="A new file written from a str holds the UTF-8 encoding of the string, with no newline "
    "translation.",
    rationale="Platform newline translation or a locale encoding turns the same call into "
    "different files on different machines.",
)
def test_str_is_written_as_utf8(session, disk):
    text = "naïve\nwindows line\r\nold mac\rend 😀"
    session.write("text.txt", text)
    assert disk.read("text.txt") == text.encode("utf-8")


@clause(
    "WRITE-004",
    MUST,
    requires={"read", "write"},
    text="After a full read, a write replaces the file; the result says operation 'replace' "
    "with old_sha256 of the previous bytes.",
    rationale="The previous hash in the result lets the agent and its host verify what was "
    "overwritten.",
)
def test_replace_after_full_read(session, disk):
    disk.write("a.txt", OLD)
    session.read("a.txt")
    result = session.write("a.txt", NEW)
    assert disk.read("a.txt") == NEW.encode()
    assert result.operation == "replace"
    assert result.old_sha256 == sha256(OLD)
    assert result.new_sha256 == sha256(NEW)


@clause(
    "WRITE-005",
    MUST,
    requires={"write", "read_before_write"},
    text="Replacing an existing file that this session has not read fails with NOT_READ and "
    "changes nothing.",
    rationale="Blind overwrites are how a 762-line file gets replaced by the 248 bytes the "
    "agent imagined it contained.",
)
def test_replace_without_read_is_refused(session, disk):
    disk.write("a.txt", OLD)
    _control_create(session, disk)
    before = disk.snapshot()
    with raises_code("NOT_READ"):
        session.write("a.txt", NEW)
    disk.assert_unchanged(before)


@clause(
    "WRITE-006",
    MUST,
    requires={"read", "write", "read_before_write"},
    text="A partial read (a line range, or a read truncated by max_bytes) does not authorize "
    "replacing the file: NOT_READ.",
    rationale="An agent that saw lines 1-50 and rewrites the file drops lines 51 onward.",
)
def test_partial_read_does_not_authorize_write(session, disk):
    disk.write("a.txt", "".join(f"line {i}\n" for i in range(1, 101)))
    disk.write("b.txt", OLD)
    session.read("b.txt")
    session.write("b.txt", NEW)  # the control: a full read authorizes
    assert disk.read("b.txt") == NEW.encode()
    before = disk.snapshot()
    session.read("a.txt", start_line=1, end_line=50)
    with raises_code("NOT_READ"):
        session.write("a.txt", NEW)
    session.read("a.txt", max_bytes=100)
    with raises_code("NOT_READ"):
        session.write("a.txt", NEW)
    disk.assert_unchanged(before)


@clause(
    "WRITE-007",
    MUST,
    requires={"read", "write", "stale_detection"},
    text="A file changed on disk since this session read it is not replaced: STALE, and the other "
    "writer's bytes stay.",
    rationale="Overwriting a concurrent change (the user's edit in an IDE, a formatter) loses "
    "work silently.",
)
def test_changed_since_read_is_stale(session, disk, external):
    disk.write("a.txt", OLD)
    disk.write("b.txt", OLD)
    session.read("b.txt")
    session.write("b.txt", NEW)  # the control: unchanged since the read, replaced
    assert disk.read("b.txt") == NEW.encode()
    session.read("a.txt")
    external.write("a.txt", "the user's edit\n")
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.txt", NEW)
    disk.assert_unchanged(before)


@clause(
    "WRITE-008",
    MUST,
    requires={"write", "cas"},
    text="An expected_sha256 that matches the file on disk stands in for a read: the write "
    "replaces the file.",
    rationale="Compare-and-swap lets a stateless client (a new session, a retry) update a file "
    "it knows the hash of.",
)
def test_expected_sha256_stands_in_for_read(session, disk):
    disk.write("a.txt", OLD)
    result = session.write("a.txt", NEW, expected_sha256=sha256(OLD))
    assert disk.read("a.txt") == NEW.encode()
    assert result.operation == "replace"


@clause(
    "WRITE-009",
    MUST,
    requires={"read", "write", "cas"},
    text="An expected_sha256 that does not match the file on disk fails with STALE and changes "
    "nothing, even after a fresh read.",
    rationale="The caller's precondition is explicit; ignoring it because a read exists defeats "
    "compare-and-swap.",
)
def test_expected_sha256_mismatch_is_stale(session, disk):
    disk.write("a.txt", OLD)
    disk.write("b.txt", OLD)
    session.write("b.txt", NEW, expected_sha256=sha256(OLD))  # the control: a matching hash
    assert disk.read("b.txt") == NEW.encode()
    before = disk.snapshot()
    with raises_code("STALE"):
        session.write("a.txt", NEW, expected_sha256=sha256("something else"))
    session.read("a.txt")
    with raises_code("STALE"):
        session.write("a.txt", NEW, expected_sha256=sha256("something else"))
    disk.assert_unchanged(before)


@clause(
    "WRITE-010",
    MUST,
    requires={"write"},
    text="Replacing a file keeps its permission bits (an executable stays executable, a private "
    "file stays private).",
    rationale="Publishing through a temp file resets modes to the temp's 0600 or the umask "
    "default: scripts stop running, secrets become readable.",
)
def test_mode_bits_are_kept(session, disk):
    for name, mode in (("run.sh", 0o755), ("secret.env", 0o600), ("shared.txt", 0o640)):
        disk.write(name, "old\n", mode=mode)
        prepare_change(session, name)
        session.write(name, "new\n")
        assert disk.mode(name) == mode, name


@clause(
    "WRITE-011",
    MUST,
    requires={"write"},
    text="A successful write leaves no temporary file behind, for a create and for a replace.",
    rationale="Leftover temp files pollute repositories, get committed, and confuse globbing "
    "tools.",
)
def test_no_leftovers_after_success(session, disk):
    session.write("created.txt", OLD)
    disk.write("replaced.txt", OLD)
    prepare_change(session, "replaced.txt")
    session.write("replaced.txt", NEW)
    session.write("deep/er/created.txt", OLD)
    disk.assert_no_leftovers()


@clause(
    "WRITE-012",
    MUST,
    requires={"write"},
    text="A concurrent reader sees the old file or the new file, never an empty, partial or "
    "missing one.",
    rationale="Truncate-then-write exposes an empty file to builds, watchers and the user's "
    "editor, which may save it back.",
)
def test_readers_never_see_a_partial_file(session, disk):
    size = 2 << 20
    versions = [bytes([65 + i]) * size for i in range(5)]  # "AAA...", "BBB...", ...
    target = disk.write("big.txt", versions[0])
    allowed = {sha256(v) for v in versions}
    stop = threading.Event()
    bad: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                with open(target, "rb") as handle:
                    data = handle.read()
            except FileNotFoundError:
                bad.append("the file was missing")
                continue
            if sha256(data) not in allowed:
                bad.append(f"saw {len(data)} bytes that are neither version")

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    # A writer that truncates first leaves the file empty for as long as one write call
    # takes: a reader may miss that moment several times, so there are 15 replaces (three
    # rounds over the five versions), up to the first torn read seen.
    written = versions[0]
    try:
        for version in (versions[1:] + versions[:1]) * 3:
            if bad:
                break
            _prepare_whole(session, "big.txt", size)
            session.write("big.txt", version)
            written = version
    finally:
        stop.set()
        thread.join(10)
    assert not bad, bad[:5]
    assert disk.read("big.txt") == written


@clause(
    "WRITE-013",
    MUST,
    requires={"write"},
    text="Writing to a path that is a directory fails with IS_A_DIRECTORY and changes nothing.",
    rationale="Replacing a directory by a file (or writing into it) destroys a subtree.",
)
def test_write_to_directory_is_refused(session, disk):
    disk.write("pkg/mod.py", "x = 1\n")
    _control_create(session, disk, "pkg/new.py")
    before = disk.snapshot()
    with raises_code("IS_A_DIRECTORY"):
        session.write("pkg", "not a directory\n")
    disk.assert_unchanged(before)


@clause(
    "WRITE-014",
    MUST,
    requires={"write"},
    text="Writing empty content creates an empty file.",
    rationale="Empty marker files (__init__.py, .gitkeep) are real files; refusing them forces "
    "placeholder content.",
)
def test_empty_content_creates_empty_file(session, disk):
    session.write("pkg/__init__.py", "")
    assert disk.read("pkg/__init__.py") == b""


@clause(
    "WRITE-015",
    SHOULD,
    requires={"write"},
    text="Writing a new file whose parent directories do not exist creates them.",
    rationale="Agents create files in new packages; a refusal costs a round trip per directory "
    "level.",
)
def test_missing_parents_are_created(session, disk):
    session.write("new/package/module.py", "x = 1\n")
    assert disk.read("new/package/module.py") == b"x = 1\n"


@clause(
    "WRITE-016",
    MUST,
    requires={"write"},
    text="A WriteResult carries the fields of the contract: path, operation, old_sha256, "
    "new_sha256, bytes_written, newline, diff, snapshot_created.",
    rationale="Clients are written against field names; a missing one breaks them at run time.",
)
def test_write_result_fields(session, disk):
    assert_fields(session.write("a.txt", OLD), "WriteResult")
    disk.write("b.txt", OLD)
    prepare_change(session, "b.txt")
    assert_fields(session.write("b.txt", NEW), "WriteResult")


@clause(
    "WRITE-017",
    MUST,
    requires={"write"},
    text="The diff of a replace is a unified diff of the change: removed lines start with '-', "
    "added lines with '+', inside an '@@' hunk.",
    rationale="The diff is what the agent and the human review; a missing or wrong diff hides "
    "what was overwritten.",
)
def test_diff_shows_the_change(session, disk):
    disk.write("a.txt", OLD)
    prepare_change(session, "a.txt")
    diff = session.write("a.txt", NEW).diff
    lines = diff.splitlines()
    assert any(line.startswith("@@") for line in lines), diff
    assert "-second line" in lines, diff
    assert "+second line, changed" in lines, diff
    assert "+third line" in lines, diff
    assert "-first line" not in lines and "+first line" not in lines, diff


@clause(
    "WRITE-018",
    MUST,
    requires={"write"},
    text="new_sha256 and bytes_written describe the bytes now on disk.",
    rationale="The returned hash is the next expected_sha256; if it is not the disk's, the next "
    "compare-and-swap fails.",
)
def test_result_describes_the_disk(session, disk):
    first = session.write("a.txt", "héllo\r\n")
    assert first.new_sha256 == sha256(disk.read("a.txt"))
    assert first.bytes_written == len(disk.read("a.txt"))
    disk.write("b.txt", OLD)
    prepare_change(session, "b.txt")
    result = session.write("b.txt", "wörld\n" * 3)
    on_disk = disk.read("b.txt")
    assert result.new_sha256 == sha256(on_disk)
    assert result.bytes_written == len(on_disk)


@clause(
    "WRITE-019",
    MUST,
    requires={"write"},
    text="A write below a regular file (its 'parent' is not a directory) fails with an error "
    "code and changes nothing.",
    rationale="Half-created paths and raw OSErrors leak through when this case is not handled.",
)
def test_parent_is_a_file(session, disk):
    disk.write("a.txt", OLD)
    _control_create(session, disk, "b.txt")
    before = disk.snapshot()
    with raises_any_code():
        session.write("a.txt/b.txt", NEW)
    disk.assert_unchanged(before)


def _publish_index(trace, name):
    """Index in ``trace`` of the call that puts ``name`` in place (rename/replace/link)."""
    found = None
    for position, call in enumerate(trace):
        if (
            call.name in ("replace", "rename", "link")
            and len(call.paths) == 2
            and os.path.basename(call.paths[1]) == name
        ):
            found = position
    return found


@clause(
    "WRITE-020",
    MUST,
    requires={"write", "python_fs"},
    text="The new bytes are fsynced before the rename or link that publishes them, and the "
    "directory is fsynced after it, for a create and for a replace.",
    rationale="Without the first fsync a power cut can publish an empty file; without the "
    "second, the rename itself may be lost.",
)
def test_fsync_order(session, disk):
    disk.write("a.txt", OLD)
    prepare_change(session, "a.txt")
    for name, action in (
        ("a.txt", lambda: session.write("a.txt", NEW)),
        ("b.txt", lambda: session.write("b.txt", NEW)),
    ):
        with count_mutations() as clean:
            action()
        trace = clean.trace
        publish = _publish_index(trace, name)
        assert publish is not None, f"{name}: no rename or link publishes it: {trace}"
        synced_file = [
            c for c in trace[:publish] if c.name in ("fsync", "fdatasync") and c.kind == "file"
        ]
        synced_dir = [c for c in trace[publish + 1 :] if c.name == "fsync" and c.kind == "dir"]
        assert synced_file, f"{name}: no file fsync before publishing: {trace}"
        assert synced_dir, f"{name}: no directory fsync after publishing: {trace}"


@clause(
    "WRITE-021",
    MUST,
    requires={"read", "write", "python_fs"},
    text="A crash at any step of replacing a file leaves the old or the new bytes at its path, "
    "never a mix; a restarted implementation reads one of them and replaces the file again.",
    rationale="Tools that truncate and rewrite in place leave torn or empty files when the "
    "process is killed mid-write.",
)
def test_crash_during_replace(disk, crash):
    old = "old content\n" * 2000
    new = "NEW CONTENT\n" * 3000
    valid = {sha256(old), sha256(new)}
    warm = crash.restart().open_session("A")  # warm up: lock and state directories exist
    warm.write("warmup.txt", "x")

    def replace():
        live = crash.restart().open_session("A")
        disk.write("a.txt", old)
        prepare_change(live, "a.txt")
        return live

    probe = replace()
    steps = len(crash.count(lambda: probe.write("a.txt", new)))
    assert steps > 0
    crashed = 0
    for step in range(1, steps + 1):
        live = replace()
        with crash.at(step) as point:
            live.write("a.txt", new)
        crashed += point.crashed
        assert sha256(disk.read("a.txt")) in valid, f"torn file after a crash at step {step}"
        if not point.crashed:
            assert disk.read("a.txt") == new.encode()
        restarted = crash.restart()
        restarted.recover()
        assert sha256(disk.read("a.txt")) in valid, f"recovery after step {step} tore the file"
        again = restarted.open_session("A")
        assert again.read("a.txt").sha256 in valid
        again.write("a.txt", f"after crash {step}\n")
        assert disk.read("a.txt") == f"after crash {step}\n".encode()
    assert crashed > 0, "no crash point was reached"


@clause(
    "WRITE-022",
    MUST,
    requires={"write", "python_fs"},
    text="A crash at any step of creating a file leaves either no file or the complete new file "
    "at its path; a restarted implementation can then create or replace it.",
    rationale="A half-written new file looks like a real one to every later tool.",
)
def test_crash_during_create(disk, crash):
    new = "created\n" * 5000
    warm = crash.restart().open_session("A")
    warm.write("warmup.txt", "x")
    steps = len(crash.count(lambda: warm.write("probe.txt", new)))
    assert steps > 0
    crashed = 0
    for step in range(1, steps + 1):
        name = f"new-{step}.txt"
        live = crash.restart().open_session("A")
        with crash.at(step) as point:
            live.write(name, new)
        crashed += point.crashed
        present = disk.exists(name)
        if present:
            assert disk.read(name) == new.encode(), f"partial file after a crash at step {step}"
        restarted = crash.restart()
        restarted.recover()
        again = restarted.open_session("A")
        if disk.exists(name):
            assert disk.read(name) == new.encode(), f"recovery after step {step} damaged the file"
            prepare_change(again, name)
        again.write(name, "after\n")
        assert disk.read(name) == b"after\n"
    assert crashed > 0, "no crash point was reached"


@clause(
    "WRITE-023",
    MUST,
    requires={"write", "python_fs"},
    text="An I/O error (EIO, ENOSPC) at any step of a replace either fails the call with an error "
    "code, the old bytes in place and no temporary file left, or lets it succeed with the new "
    "bytes in place.",
    rationale="A failed call that changed the file, or left its temp file, leaves the agent "
    "believing something false about the disk.",
)
def test_io_error_during_replace(disk, crash):
    old, new = "old\n" * 1000, "new\n" * 1500
    probe = crash.restart().open_session("A")
    disk.write("a.txt", old)
    prepare_change(probe, "a.txt")
    steps = len(crash.count(lambda: probe.write("a.txt", new)))
    for error in (errno.EIO, errno.ENOSPC):
        for step in range(1, steps + 1):
            live = crash.restart().open_session("A")
            disk.write("a.txt", old)
            prepare_change(live, "a.txt")
            try:
                with fail_at(step, error):
                    live.write("a.txt", new)
            except Exception as exc:
                code = getattr(exc, "code", None)
                if not is_error_code(code):
                    raise UncodedError(f"step {step}: {exc!r} carries no error code") from exc
                assert disk.read("a.txt") == old.encode(), (
                    f"{errno.errorcode[error]} at step {step}: the call failed ({code}) but the "
                    "file changed"
                )
            else:
                assert disk.read("a.txt") == new.encode(), f"step {step}: success, old bytes"
            disk.assert_no_leftovers()


@clause(
    "WRITE-024",
    MUST,
    requires={"write"},
    text="The newline field of a write result reports the style of the written content.",
    rationale="The host uses it to show and keep the file's convention.",
)
def test_result_reports_newline_style(session, disk):
    assert session.write("crlf.txt", "a\r\nb\r\n").newline == "crlf"
    assert session.write("lf.txt", "a\nb\n").newline == "lf"
    assert session.write("none.txt", "ab").newline == "none"
    assert session.write("mixed.txt", "a\nb\r\n").newline == "mixed"


@clause(
    "WRITE-025",
    SHOULD,
    requires={"write"},
    text="A newly created file gets the permissions of an ordinary new file (0o666 less the "
    "umask), not those of a private temporary file.",
    rationale="mkstemp-based writers create every new file as 0600, which breaks shared "
    "checkouts and web roots.",
)
def test_new_file_mode_follows_umask(session, disk):
    umask = os.umask(0o022)
    os.umask(umask)
    session.write("fresh.txt", "x\n")
    assert disk.mode("fresh.txt") == 0o666 & ~umask


@clause(
    "WRITE-027",
    MUST,
    # python_fs (its os calls intercepted) or process (a server traced by strace): the
    # clause itself tells them apart, and skips a driver with neither as UNSUPPORTED.
    requires={"read", "write"},
    profile="Crash-testable",
    text="After a power cut at any point of replacing a file (data written since a file's last "
    "fsync lost whole or past a 4 KiB block; entries changed since their directory's last "
    "fsync lost as a suffix, in order), a restarted implementation finds the old or the new "
    "bytes at its path, and the new bytes if the write had returned.",
    rationale="A save reported as done must survive the power cut that follows it, and one cut "
    "short must not leave an empty or torn file.",
)
def test_power_cut_during_replace(driver_factory, editspec_base):
    from editspec.spec._power import power_cut_problems

    old = "old content, synced long ago\n" * 220  # more than one 4 KiB block
    new = "NEW CONTENT\n" * 900
    steps = (
        {"call": "read", "session": "A", "path": "a.txt"},
        {"call": "write", "session": "A", "path": "a.txt", "content": new},
    )
    states, problems = power_cut_problems(
        driver_factory, editspec_base / "power", {"a.txt": old.encode()}, steps, only="a.txt"
    )
    assert states > 1, "the write left nothing to cut"
    if problems:  # a state that is neither old nor new bytes on disk
        raise Unsafe("\n".join(problems))
