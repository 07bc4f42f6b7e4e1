"""Write (``reference/_write.py``): create, replace, freshness, encodings, links, faults."""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import stat
from pathlib import Path

import pytest

from editspec.fault_injection.faultfs import CrashAt, FailAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import FileSystem, Session, ToolError, Workspace
from editspec.reference.tools._write import replace_locked


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _error(session: Session, path: str, content: str | bytes, **kwargs: object) -> ToolError:
    with pytest.raises(ToolError) as info:
        session.write(path, content, **kwargs)  # type: ignore[arg-type]
    return info.value


def _tree(directory: Path) -> dict[str, bytes | str]:
    """Every entry under ``directory``: file bytes, "<dir>", or "-> target" for links."""
    tree: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            key = str(path.relative_to(directory))
            if path.is_symlink():
                tree[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                tree[key] = "<dir>"
            else:
                tree[key] = path.read_bytes()
    return tree


def _temp_files(directory: Path) -> list[str]:
    return [
        name
        for _dirpath, _dirs, files in os.walk(directory)
        for name in files
        if ".editspec-" in name
    ]


# -- create ----------------------------------------------------------------------------


def test_create_needs_no_read_and_makes_parent_directories(session: Session, root: Path) -> None:
    result = session.write("pkg/sub/new.py", "x = 1\n")
    assert (root / "pkg" / "sub" / "new.py").read_bytes() == b"x = 1\n"
    assert (result.path, result.operation, result.old_sha256) == ("pkg/sub/new.py", "create", None)
    assert (result.new_sha256, result.bytes_written, result.newline) == (_sha(b"x = 1\n"), 6, "lf")
    assert result.diff == "--- /dev/null\n+++ b/pkg/sub/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    assert result.snapshot_created is False


def test_created_file_mode_follows_the_umask(session: Session, root: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    session.write("new.txt", "x")
    assert stat.S_IMODE(os.stat(root / "new.txt").st_mode) == 0o666 & ~umask


def test_create_writes_bytes_as_given(session: Session, root: Path) -> None:
    data = b"\x00\x01\xff binary"
    result = session.write("blob.bin", data)
    assert (root / "blob.bin").read_bytes() == data
    assert result.diff == "Binary files a/blob.bin and b/blob.bin differ\n"
    assert result.newline == "none"


def test_str_content_keeps_its_newlines(session: Session, root: Path) -> None:
    session.write("w.txt", "a\r\nb\nc\r")
    assert (root / "w.txt").read_bytes() == b"a\r\nb\nc\r"


def test_create_then_write_again_needs_no_read(session: Session, root: Path) -> None:
    session.write("f.txt", "one\n")
    result = session.write("f.txt", "two\n")
    assert (result.operation, result.old_sha256) == ("replace", _sha(b"one\n"))
    assert (root / "f.txt").read_bytes() == b"two\n"


def test_lone_surrogate_is_invalid_and_writes_nothing(session: Session, root: Path) -> None:
    assert _error(session, "s.txt", "bad \ud800").code == "INVALID_ARGUMENT"
    assert not (root / "s.txt").exists()


@pytest.mark.parametrize("content", [None, 3, ["a"]])
def test_content_must_be_str_or_bytes(session: Session, root: Path, content: object) -> None:
    assert _error(session, "c.txt", content).code == "INVALID_ARGUMENT"  # type: ignore[arg-type]
    assert not (root / "c.txt").exists()


# -- replace: read-before-write and compare-and-swap -----------------------------------


def test_replace_without_a_read_is_not_read(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"old\n")
    assert _error(session, "f.txt", "new\n").code == "NOT_READ"
    assert (root / "f.txt").read_bytes() == b"old\n"


def test_replace_after_a_full_read(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"a\nb\nc\n")
    session.read("f.txt")
    result = session.write("f.txt", "a\nB\nc\n")
    assert (root / "f.txt").read_bytes() == b"a\nB\nc\n"
    assert (result.operation, result.old_sha256, result.new_sha256) == (
        "replace",
        _sha(b"a\nb\nc\n"),
        _sha(b"a\nB\nc\n"),
    )
    assert result.diff == "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def test_partial_read_does_not_authorize(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"a\nb\n")
    session.read("f.txt", start_line=1, end_line=1)
    assert _error(session, "f.txt", "x").code == "NOT_READ"
    assert (root / "f.txt").read_bytes() == b"a\nb\n"


def test_expected_sha256_stands_in_for_a_read(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"old")
    session.write("f.txt", "new", expected_sha256=_sha(b"old").upper())
    assert (root / "f.txt").read_bytes() == b"new"


def test_expected_sha256_mismatch_is_stale(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"old")
    session.read("f.txt")
    error = _error(session, "f.txt", "new", expected_sha256=_sha(b"other"))
    assert error.code == "STALE"
    assert (root / "f.txt").read_bytes() == b"old"


def test_expected_sha256_of_a_missing_file_is_stale(session: Session, root: Path) -> None:
    assert _error(session, "gone.txt", "x", expected_sha256=_sha(b"x")).code == "STALE"
    assert not (root / "gone.txt").exists()


@pytest.mark.parametrize("value", ["abc", "z" * 64, 42])
def test_malformed_expected_sha256_is_invalid(session: Session, root: Path, value: object) -> None:
    assert _error(session, "f.txt", "x", expected_sha256=value).code == "INVALID_ARGUMENT"
    assert not (root / "f.txt").exists()


def test_external_change_after_the_read_is_stale(session: Session, root: Path) -> None:
    (root / "f.txt").write_bytes(b"v1")
    session.read("f.txt")
    (root / "f.txt").write_bytes(b"v2")
    assert _error(session, "f.txt", "mine").code == "STALE"
    assert (root / "f.txt").read_bytes() == b"v2"


# -- encodings of the file being replaced ----------------------------------------------


def test_replacing_a_bom_file_keeps_the_bom(session: Session, root: Path) -> None:
    (root / "b.txt").write_bytes(codecs.BOM_UTF8 + b"old\r\n")
    session.read("b.txt")
    session.write("b.txt", "new\n")
    assert (root / "b.txt").read_bytes() == codecs.BOM_UTF8 + b"new\n"


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE)],
)
def test_replacing_a_utf16_file_keeps_its_encoding(
    session: Session, root: Path, encoding: str, bom: bytes
) -> None:
    (root / "u.txt").write_bytes(bom + "old\r\n".encode(encoding))
    session.read("u.txt")
    result = session.write("u.txt", "nüw\r\n")
    assert (root / "u.txt").read_bytes() == bom + "nüw\r\n".encode(encoding)
    assert "+nüw\r\n" in result.diff and result.newline == "crlf"


def test_bytes_replace_a_bom_file_as_given(session: Session, root: Path) -> None:
    (root / "b.txt").write_bytes(codecs.BOM_UTF8 + b"old")
    session.read("b.txt")
    session.write("b.txt", b"raw")
    assert (root / "b.txt").read_bytes() == b"raw"


def test_replacing_binary_with_text(session: Session, root: Path) -> None:
    (root / "x.bin").write_bytes(b"\xff\x00")
    session.read("x.bin")
    result = session.write("x.bin", "text")
    assert (root / "x.bin").read_bytes() == b"text"
    assert result.diff.startswith("Binary files")


# -- what the replace keeps ------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600, 0o444])
def test_mode_bits_are_kept(session: Session, root: Path, mode: int) -> None:
    (root / "m.sh").write_bytes(b"old")
    os.chmod(root / "m.sh", mode)
    session.read("m.sh")
    session.write("m.sh", "new")
    assert stat.S_IMODE(os.stat(root / "m.sh").st_mode) == mode
    assert (root / "m.sh").read_bytes() == b"new"


def test_no_temp_file_is_left_after_success(session: Session, root: Path) -> None:
    session.write("a/b.txt", "1")
    session.write("a/b.txt", "2")
    assert _temp_files(root) == []
    assert _tree(root) == {"a": "<dir>", "a/b.txt": b"2"}


def test_directory_is_a_directory(session: Session, root: Path) -> None:
    (root / "d").mkdir()
    assert _error(session, "d", "x").code == "IS_A_DIRECTORY"
    assert _error(session, ".", "x").code == "IS_A_DIRECTORY"
    assert _tree(root) == {"d": "<dir>"}


def test_fifo_is_refused(session: Session, root: Path) -> None:
    os.mkfifo(root / "p")
    assert _error(session, "p", "x").code == "INVALID_ARGUMENT"


def test_a_file_as_a_parent_directory_is_refused(session: Session, root: Path) -> None:
    (root / "f").write_bytes(b"f")
    assert _error(session, "f/child.txt", "x").code == "NOT_FOUND"
    assert _tree(root) == {"f": b"f"}


# -- links -----------------------------------------------------------------------------


def test_write_through_an_in_root_symlink_writes_the_target_and_keeps_the_link(
    session: Session, root: Path
) -> None:
    (root / "target.txt").write_bytes(b"old")
    (root / "link.txt").symlink_to("target.txt")
    session.read("link.txt")
    result = session.write("link.txt", "new")
    assert result.path == "link.txt"
    assert (root / "link.txt").is_symlink() and os.readlink(root / "link.txt") == "target.txt"
    assert (root / "target.txt").read_bytes() == b"new"


def test_read_via_the_target_authorizes_a_write_via_the_alias(session: Session, root: Path) -> None:
    (root / "target.txt").write_bytes(b"old")
    (root / "link.txt").symlink_to("target.txt")
    session.read("target.txt")
    session.write("link.txt", "new")
    assert (root / "target.txt").read_bytes() == b"new"


def test_write_through_a_dangling_in_root_link_creates_the_target(
    session: Session, root: Path
) -> None:
    (root / "later.txt").symlink_to("made/here.txt")
    session.write("later.txt", "hello")
    assert (root / "made" / "here.txt").read_bytes() == b"hello"
    assert (root / "later.txt").is_symlink() and (root / "later.txt").read_bytes() == b"hello"


def test_links_out_of_the_root_are_refused_and_nothing_changes(
    session: Session, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"keep")
    (root / "file_link").symlink_to(outside / "victim.txt")
    (root / "dir_link").symlink_to(outside, target_is_directory=True)
    (root / "dangling").symlink_to(outside / "planted.txt")
    for path in (
        "file_link",
        "dir_link/victim.txt",
        "dir_link/new.txt",
        "dangling",
        "../outside/x",
    ):
        assert (
            _error(session, path, "pwned", expected_sha256=_sha(b"keep")).code
            == "OUTSIDE_WORKSPACE"
        )
    assert _tree(outside) == {"victim.txt": b"keep"}


def test_hard_link_is_replaced_alone_with_a_warning(session: Session, root: Path) -> None:
    (root / "one.txt").write_bytes(b"shared")
    os.link(root / "one.txt", root / "two.txt")
    session.read("one.txt")
    result = session.write("one.txt", "mine")
    assert (root / "one.txt").read_bytes() == b"mine"
    assert (root / "two.txt").read_bytes() == b"shared"
    assert any("hard link" in warning for warning in result.warnings)


def test_directory_swapped_for_a_symlink_before_the_write_cannot_escape(
    root: Path, state_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "sub").mkdir()
    for secure_walk, escapes in ((True, False), (False, True)):
        fs = _SwapBeforeCreate(root / "sub", outside, secure_walk=secure_walk)
        session = Workspace(root, state_dir, fs=fs).session(f"s{secure_walk}")
        if escapes:
            # Without the dir_fd + O_NOFOLLOW walk the same race lands outside: the
            # attack is real, so the check below is what stops it.
            session.write("sub/new.txt", "data")
            assert (outside / "new.txt").read_bytes() == b"data"
        else:
            with pytest.raises(ToolError) as info:
                session.write("sub/new.txt", "data")
            assert info.value.code == "IO_ERROR"
            assert info.value.details["errno"] in (errno.ELOOP, errno.ENOTDIR)
            assert _tree(outside) == {}
        fs.undo()


class _SwapBeforeCreate(FileSystem):
    """Replaces a directory by a symlink to ``outside`` at the first exclusive create."""

    def __init__(self, directory: Path, outside: Path, *, secure_walk: bool) -> None:
        super().__init__(secure_walk=secure_walk)
        self.directory, self.outside, self.swapped = directory, outside, False

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        if not self.swapped and path.startswith(str(self.directory) + os.sep):
            self.swapped = True
            os.rename(self.directory, str(self.directory) + ".moved")
            os.symlink(self.outside, self.directory)
        return super().create_exclusive(path, mode)

    def undo(self) -> None:
        for name in os.listdir(self.outside):
            os.unlink(os.path.join(self.outside, name))
        os.unlink(self.directory)
        os.rename(str(self.directory) + ".moved", self.directory)


# -- byte-for-byte re-verification inside the critical section -------------------------


class _ChangeBeforeRename(FileSystem):
    """An external writer that changes the target between the freshness check and rename."""

    def __init__(self, target: Path, data: bytes) -> None:
        super().__init__()
        self.target, self.data, self.armed = target, data, True

    def fsync(self, fd: int) -> None:
        super().fsync(fd)
        if self.armed:
            self.armed = False
            self.target.write_bytes(self.data)


def test_change_during_the_write_is_caught_before_the_rename(root: Path, state_dir: Path) -> None:
    (root / "f.txt").write_bytes(b"v1")
    session = Workspace(root, state_dir, fs=_ChangeBeforeRename(root / "f.txt", b"v2")).session("s")
    session.read("f.txt")
    error = _error(session, "f.txt", "mine")
    assert error.code == "STALE"
    assert _tree(root) == {"f.txt": b"v2"}


# -- snapshots -------------------------------------------------------------------------


def test_message_id_records_a_snapshot(session: Session, workspace: Workspace, root: Path) -> None:
    (root / "f.txt").write_bytes(b"before")
    session.read("f.txt")
    result = session.write("f.txt", "after", message_id="m1")
    assert result.snapshot_created is True
    (record,) = workspace.snapshots.history("s1").live
    (entry,) = record.entries
    assert (record.message_id, entry.relative, entry.existed) == ("m1", "f.txt", True)
    assert (entry.before_sha256, entry.after_sha256) == (_sha(b"before"), _sha(b"after"))
    assert workspace.snapshots.read_blob("s1", _sha(b"before")) == b"before"


def test_snapshot_of_a_created_file(session: Session, workspace: Workspace) -> None:
    assert session.write("n/new.txt", "x", message_id="m").snapshot_created
    (record,) = workspace.snapshots.history("s1").live
    assert [(e.relative, e.existed) for e in record.entries] == [("n/new.txt", False)]


def test_snapshot_failure_is_a_warning_not_an_error(
    session: Session, workspace: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(workspace.snapshots, "record", broken)
    result = session.write("f.txt", "x", message_id="m1")
    assert result.snapshot_created is False
    assert any("snapshot" in warning for warning in result.warnings)
    assert (root / "f.txt").read_bytes() == b"x"


def test_failed_write_leaves_no_snapshot(root: Path, state_dir: Path) -> None:
    (root / "f.txt").write_bytes(b"v1")
    workspace = Workspace(root, state_dir, fs=_ChangeBeforeRename(root / "f.txt", b"v2"))
    session = workspace.session("s")
    session.read("f.txt")
    assert _error(session, "f.txt", "mine", message_id="m1").code == "STALE"
    assert workspace.snapshots.history("s").live == ()


def test_malformed_message_id_is_invalid(session: Session, root: Path) -> None:
    assert _error(session, "f.txt", "x", message_id="").code == "INVALID_ARGUMENT"
    assert not (root / "f.txt").exists()


# -- injected failures and crashes -----------------------------------------------------


def _faulty_session(root: Path, state_dir: Path) -> tuple[FaultyFileSystem, Session]:
    fs = FaultyFileSystem()
    workspace = Workspace(root, state_dir, fs=fs)
    session = workspace.session("s")
    session.write("warmup.txt", "w")  # creates the lock directory before counting starts
    return fs, session


@pytest.mark.parametrize("injected", [errno.EIO, errno.ENOSPC, errno.EACCES, errno.EROFS])
@pytest.mark.parametrize("existing", [True, False])
def test_every_failed_step_leaves_the_disk_as_it_was(
    root: Path, state_dir: Path, injected: int, existing: bool
) -> None:
    fs, session = _faulty_session(root, state_dir)
    if existing:
        (root / "d").mkdir()
        (root / "d" / "f.txt").write_bytes(b"old")
        session.read("d/f.txt")
    before = _tree(root)
    failures = 0
    for step in range(1, 40):
        fs.arm(FailAt(step, injected))
        try:
            session.write("d/f.txt", "new content")
        except ToolError as exc:
            failures += 1
            assert exc.code in ("IO_ERROR", "STALE"), exc
            if exc.code == "IO_ERROR":
                assert exc.details["errno"] == injected
            assert _tree(root) == before, f"step {step}"
            continue
        finally:
            fs.disarm()
        break
    else:
        pytest.fail("the write never succeeded")
    assert failures >= 3  # create temp, write, fsync, ... each failed once
    assert (root / "d" / "f.txt").read_bytes() == b"new content"
    assert _temp_files(root) == []


def test_failed_directory_fsync_after_the_rename_publishes_again(
    root: Path, state_dir: Path
) -> None:
    fs, session = _faulty_session(root, state_dir)
    (root / "f.txt").write_bytes(b"old")
    session.read("f.txt")
    session.write("f.txt", "warm-up", message_id="m0")  # the snapshot store's directories
    fs.arm()
    session.write("f.txt", "probe", message_id="m1")
    renames = [op.index for op in fs.log if op.name == "rename" and op.paths[1].endswith("f.txt")]
    fsync_dir_step = renames[0] + 1
    assert fs.log[fsync_dir_step - 1].name == "fsync_dir"
    fs.disarm()
    fs.arm(FailAt(fsync_dir_step, errno.EIO))
    result = session.write("f.txt", "final", message_id="m2")
    fs.disarm()
    assert (root / "f.txt").read_bytes() == b"final"
    assert any("published again" in warning for warning in result.warnings)
    assert result.snapshot_created
    after = [op.name for op in fs.log[fsync_dir_step:]]
    assert after.count("rename") >= 2 and after.count("fsync_dir") >= 1
    session.write("f.txt", "next")  # the access record names the new bytes
    assert _temp_files(root) == []


@pytest.mark.parametrize("existing", [True, False])
def test_a_crash_at_any_step_leaves_old_or_new_bytes(
    root: Path, state_dir: Path, existing: bool
) -> None:
    for step in range(1, 30):
        case = root / f"case{step}"
        case.mkdir()
        fs = FaultyFileSystem()
        session = Workspace(root, state_dir, fs=fs).session("s")
        target = case / "f.txt"
        if existing:
            target.write_bytes(b"old bytes")
            session.read(f"case{step}/f.txt")
        fs.arm(CrashAt(step))
        try:
            session.write(f"case{step}/f.txt", "new bytes")
        except SimulatedCrash:
            state = target.read_bytes() if target.exists() else None
            assert state in ((b"old bytes", b"new bytes") if existing else (None, b"new bytes"))
            continue
        assert target.read_bytes() == b"new bytes"
        break
    else:
        pytest.fail("the write never completed")


# -- replace_locked, the core Edit uses ------------------------------------------------


def test_replace_locked_updates_the_record_and_verifies_old_bytes(
    session: Session, workspace: Workspace, root: Path
) -> None:
    (root / "f.txt").write_bytes(b"old")
    target = workspace.resolve("f.txt")
    with workspace.locks.hold([target.canonical_key]):
        created, warnings = replace_locked(session, target, b"old", b"new", message_id=None)
    assert (created, warnings) == (False, ())
    assert (root / "f.txt").read_bytes() == b"new"
    record = workspace.access.get("s1", target.canonical_key)
    assert record is not None and record.full and record.sha256 == _sha(b"new")
    with workspace.locks.hold([target.canonical_key]), pytest.raises(ToolError) as info:
        replace_locked(session, target, b"not what is there", b"x", message_id=None)
    assert info.value.code == "STALE"
    assert _tree(root) == {"f.txt": b"new"}


def test_replace_locked_creates_when_old_bytes_is_none(
    session: Session, workspace: Workspace, root: Path
) -> None:
    target = workspace.resolve("a/b/c.txt")
    with workspace.locks.hold([target.canonical_key]):
        replace_locked(session, target, None, b"c", message_id="m")
    assert _tree(root) == {"a": "<dir>", "a/b": "<dir>", "a/b/c.txt": b"c"}


def test_create_never_clobbers_a_file_that_appeared(
    session: Session, workspace: Workspace, root: Path
) -> None:
    target = workspace.resolve("x/late.txt")
    (root / "x").mkdir()
    (root / "x" / "late.txt").write_bytes(b"theirs")
    with workspace.locks.hold([target.canonical_key]), pytest.raises(ToolError) as info:
        replace_locked(session, target, None, b"mine", message_id="m")
    assert info.value.code == "STALE"
    assert _tree(root) == {"x": "<dir>", "x/late.txt": b"theirs"}
    assert workspace.snapshots.history("s1").live == ()


def test_failed_create_removes_the_directories_it_made(root: Path, state_dir: Path) -> None:
    fs, session = _faulty_session(root, state_dir)
    before = _tree(root)
    fs.arm(FailAt(3, errno.ENOSPC))  # mkdir, mkdir, then the temp file
    with pytest.raises(ToolError):
        session.write("p/q/f.txt", "x")
    fs.disarm()
    assert _tree(root) == before


def test_a_path_ending_in_a_separator_is_not_a_file_name(session: Session, root: Path) -> None:
    assert _error(session, "newdir/", "x").code == "IS_A_DIRECTORY"
    (root / "f.txt").write_bytes(b"f")
    assert _error(session, "f.txt/", "x").code == "NOT_FOUND"
    assert _tree(root) == {"f.txt": b"f"}


class _DeleteBeforeRead(FileSystem):
    """Deletes the target just before the write reads it under the lock."""

    def __init__(self, target: Path) -> None:
        super().__init__()
        self.target, self.reads = target, 0

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        self.reads += 1
        if path == str(self.target) and self.reads == 2:  # the read, then the write's
            self.target.unlink()
        return super().read_bytes(path, offset=offset, limit=limit)


def test_a_file_deleted_under_the_write_is_stale(root: Path, state_dir: Path) -> None:
    (root / "f.txt").write_bytes(b"x")
    session = Workspace(root, state_dir, fs=_DeleteBeforeRead(root / "f.txt")).session("s")
    session.read("f.txt")
    assert _error(session, "f.txt", "y").code == "STALE"
    assert _tree(root) == {}


class _FlipLinkOnLock(FileSystem):
    """Points ``alias`` at another file every time a key lock is taken (a racing agent)."""

    def __init__(self, alias: Path, targets: list[str], flips: int) -> None:
        super().__init__()
        self.alias, self.targets, self.flips = alias, targets, flips

    def lock_file(self, path: str, *, shared: bool = False) -> int:
        if self.flips and os.path.basename(os.path.dirname(os.path.dirname(path))) == "locks":
            self.flips -= 1
            current = os.readlink(self.alias)
            os.unlink(self.alias)
            os.symlink(self.targets[1 - self.targets.index(current)], self.alias)
        return super().lock_file(path, shared=shared)


@pytest.mark.parametrize(("flips", "written"), [(1, "b.txt"), (10, None)])
def test_a_link_changing_while_the_lock_is_taken_is_resolved_again(
    root: Path, state_dir: Path, flips: int, written: str | None
) -> None:
    (root / "alias").symlink_to("a.txt")
    fs = _FlipLinkOnLock(root / "alias", ["a.txt", "b.txt"], flips)
    session = Workspace(root, state_dir, fs=fs).session("s")
    if written is None:
        assert _error(session, "alias", "data").code == "STALE"
        assert not (root / "a.txt").exists() and not (root / "b.txt").exists()
    else:
        session.write("alias", "data")
        assert (root / written).read_bytes() == b"data"
        assert not (root / "a.txt").exists()


def test_a_failed_snapshot_confirmation_is_a_warning(
    session: Session, workspace: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(transaction_id: str) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(workspace.snapshots, "confirm_transaction", broken)
    result = session.write("f.txt", "x", message_id="m1")
    assert result.snapshot_created is False
    assert any("snapshot" in warning for warning in result.warnings)
    assert (root / "f.txt").read_bytes() == b"x"
    assert workspace.snapshots.history("s1").live == ()


class _DeleteBeforeRename(FileSystem):
    """Deletes the target after the temp file is durable, before the rename."""

    def __init__(self, target: Path) -> None:
        super().__init__()
        self.target = target

    def fsync(self, fd: int) -> None:
        super().fsync(fd)
        if self.target.exists():
            self.target.unlink()


def test_a_target_deleted_before_the_rename_is_stale(root: Path, state_dir: Path) -> None:
    (root / "f.txt").write_bytes(b"v1")
    session = Workspace(root, state_dir, fs=_DeleteBeforeRename(root / "f.txt")).session("s")
    session.read("f.txt")
    assert _error(session, "f.txt", "mine").code == "STALE"
    assert _tree(root) == {}


class _AfterPublish(FileSystem):
    """A port that fails ``rmdir`` always and ``create_exclusive`` for ``fail_create``, and
    ``lstat`` of a file once something was renamed onto it."""

    def __init__(self, *, fail_create: str = "", fail_rmdir: bool = False) -> None:
        super().__init__()
        self.fail_create = fail_create
        self.fail_rmdir = fail_rmdir
        self.published: set[str] = set()

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        if self.fail_create and os.path.dirname(path).endswith(self.fail_create):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return super().create_exclusive(path, mode)

    def rmdir(self, path: str) -> None:
        if self.fail_rmdir:
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        super().rmdir(path)

    def rename(self, source: str, destination: str) -> None:
        super().rename(source, destination)
        self.published.add(destination)

    def lstat(self, path: str) -> os.stat_result:
        if path in self.published:
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        return super().lstat(path)


@pytest.mark.parametrize("rmdir_fails", [False, True])
def test_parents_of_a_failed_create_are_removed_as_far_as_possible(
    tmp_path: Path, rmdir_fails: bool
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    fs = _AfterPublish(fail_create=os.path.join("new", "deep"), fail_rmdir=rmdir_fails)
    session = Workspace(root, tmp_path / "state", fs=fs).session("s")
    error = _error(session, "new/deep/f.txt", "x\n")
    assert error.code == "IO_ERROR" and error.details["errno"] == errno.ENOSPC
    assert not (root / "new" / "deep" / "f.txt").exists()
    # the parents it made are removed; when rmdir fails, they stay, and the error is kept
    assert (root / "new" / "deep").is_dir() is rmdir_fails
    assert (root / "new").exists() is rmdir_fails


def test_a_failing_lstat_after_the_publish_keeps_the_write(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"one\n")
    fs = _AfterPublish()
    session = Workspace(root, tmp_path / "state", fs=fs).session("s")
    session.read("a.txt")
    result = session.write("a.txt", "two\n")
    assert result.operation == "replace" and result.new_sha256 == _sha(b"two\n")
    assert (root / "a.txt").read_bytes() == b"two\n"
    fs.published.clear()
    session.write("a.txt", "three\n")  # the write counted as read: no STALE, no NOT_READ
    assert (root / "a.txt").read_bytes() == b"three\n"
