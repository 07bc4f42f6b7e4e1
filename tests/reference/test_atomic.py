"""Atomic publication through the fs port (``reference/_atomic.py``)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from editspec.fault_injection.faultfs import (
    CrashAt,
    FailAt,
    FaultyFileSystem,
    SimulatedCrash,
)
from editspec.reference import FileSystem, ToolError
from editspec.reference.tools._atomic import (
    atomic_create,
    atomic_replace,
    is_temp_name,
    temp_path_for,
)


def _names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def test_replace_publishes_the_bytes_with_the_given_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    assert atomic_replace(FileSystem(), str(target), b"new", mode=0o751) == ()
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o751
    assert _names(tmp_path) == ["f.txt"]


def test_the_port_calls_come_in_the_documented_order(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = FaultyFileSystem()
    seen: list[str] = []
    fs.arm()
    atomic_replace(fs, str(target), b"new", mode=0o644, verify=lambda: seen.append("verify"))
    order = [record.name for record in fs.log]
    assert order == ["create_exclusive", "write", "fchmod", "fsync", "close", "rename", "fsync_dir"]
    assert seen == ["verify"]
    temp = fs.log[0].paths[0]
    assert os.path.dirname(temp) == str(tmp_path)  # same directory: rename stays atomic
    assert is_temp_name(os.path.basename(temp))


def test_verify_runs_after_the_data_is_durable_and_before_the_rename(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = FaultyFileSystem()
    fs.arm()
    calls_at_verify: list[list[str]] = []
    atomic_replace(
        fs,
        str(target),
        b"new",
        verify=lambda: calls_at_verify.append([record.name for record in fs.log]),
    )
    assert calls_at_verify == [["create_exclusive", "write", "fsync", "close"]]


def test_a_failing_verify_leaves_the_target_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")

    def stale() -> None:
        raise ToolError("STALE", "changed")

    with pytest.raises(ToolError) as info:
        atomic_replace(FileSystem(), str(target), b"new", verify=stale)
    assert info.value.code == "STALE"
    assert target.read_bytes() == b"old"
    assert _names(tmp_path) == ["f.txt"]


@pytest.mark.parametrize("step", range(1, 7))
def test_a_failure_at_each_step_is_an_io_error_with_its_errno(tmp_path: Path, step: int) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = FaultyFileSystem(plan=FailAt(step, errno.ENOSPC))
    with pytest.raises(ToolError) as info:
        atomic_replace(fs, str(target), b"new", mode=0o600)
    assert (info.value.code, info.value.details["errno"]) == ("IO_ERROR", errno.ENOSPC)
    assert target.read_bytes() == b"old"
    assert _names(tmp_path) == ["f.txt"]
    assert fs.open_descriptors() == {}


class _FlakyUnlink(FileSystem):
    """Fails the data write, then the first unlink of the cleanup."""

    def __init__(self) -> None:
        super().__init__()
        self.unlink_failures = 1

    def write(self, fd: int, data: bytes) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def unlink(self, path: str) -> None:
        if self.unlink_failures:
            self.unlink_failures -= 1
            raise OSError(errno.EIO, "Input/output error")
        super().unlink(path)


def test_cleanup_retries_a_failed_unlink(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    with pytest.raises(ToolError):
        atomic_replace(_FlakyUnlink(), str(target), b"new")
    assert _names(tmp_path) == ["f.txt"]


def test_a_crash_runs_no_cleanup_and_never_tears_the_target(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = FaultyFileSystem(plan=CrashAt(2))  # the data write never happens
    with pytest.raises(SimulatedCrash):
        atomic_replace(fs, str(target), b"new")
    assert target.read_bytes() == b"old"
    leftovers = [name for name in _names(tmp_path) if name != "f.txt"]
    assert len(leftovers) == 1 and is_temp_name(leftovers[0])  # a dead process cleans nothing


class _FailingDirSyncs(FileSystem):
    """The real port, but its first ``failures`` fsync_dir calls fail with EIO."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def fsync_dir(self, path: str) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise OSError(errno.EIO, "injected", path)
        super().fsync_dir(path)


def _failing_fsync_dirs(failures: int) -> FaultyFileSystem:
    return FaultyFileSystem(_FailingDirSyncs(failures))


def test_a_failed_directory_fsync_publishes_again_and_syncs_that(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = _failing_fsync_dirs(1)
    warnings = atomic_replace(fs, str(target), b"new", previous=b"old")
    assert target.read_bytes() == b"new"
    assert _names(tmp_path) == ["f.txt"]
    assert len(warnings) == 1 and "published again" in warnings[0]
    mutating = [(op.name, op.outcome) for op in fs.log if op.name in ("rename", "fsync_dir")]
    # rename, the failed fsync, then a new rename of a fresh copy, and its fsync.
    assert mutating == [
        ("rename", "ok"),
        ("fsync_dir", "error:EIO"),
        ("rename", "ok"),
        ("fsync_dir", "ok"),
    ]


def test_when_publishing_again_fails_the_old_bytes_come_back(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    fs = _failing_fsync_dirs(2)
    with pytest.raises(ToolError) as caught:
        atomic_replace(fs, str(target), b"new", mode=0o640, previous=b"old")
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["errno"] == errno.EIO
    assert target.read_bytes() == b"old"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert _names(tmp_path) == ["f.txt"]
    assert [op.outcome for op in fs.log if op.name == "fsync_dir"] == [
        "error:EIO",
        "error:EIO",
        "ok",  # the undo's
    ]


def test_when_nothing_can_be_synced_the_answer_is_needs_recovery(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = _failing_fsync_dirs(3)
    with pytest.raises(ToolError) as caught:
        atomic_replace(fs, str(target), b"new", previous=b"old")
    assert caught.value.code == "NEEDS_RECOVERY"
    assert target.read_bytes() == b"old"  # the undo's rename happened, its sync did not
    assert _names(tmp_path) == ["f.txt"]
    # Without the old bytes there is no undo: NEEDS_RECOVERY as soon as the copy fails.
    fs = _failing_fsync_dirs(2)
    with pytest.raises(ToolError) as caught:
        atomic_replace(fs, str(target), b"newer")
    assert caught.value.code == "NEEDS_RECOVERY"
    assert target.read_bytes() == b"newer"


def test_a_create_that_cannot_be_synced_is_removed_again(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    fs = _failing_fsync_dirs(2)
    with pytest.raises(ToolError) as caught:
        atomic_create(fs, str(target), b"fresh")
    assert caught.value.code == "IO_ERROR"
    assert _names(tmp_path) == []
    assert [op.name for op in fs.log if op.name in ("link", "rename", "unlink")][-1] == "unlink"


def test_a_keyboard_interrupt_still_removes_the_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_replace(FileSystem(), str(target), b"new", verify=interrupted)
    assert _names(tmp_path) == ["f.txt"]


def test_create_links_the_new_file_into_place(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    fs = FaultyFileSystem()
    fs.arm()
    assert atomic_create(fs, str(target), b"data") == ()
    assert target.read_bytes() == b"data"
    assert os.stat(target).st_nlink == 1
    assert [record.name for record in fs.log] == [
        "create_exclusive",
        "write",
        "fsync",
        "close",
        "link",
        "unlink",
        "fsync_dir",
    ]
    assert _names(tmp_path) == ["new.txt"]


def test_create_never_clobbers(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    target.write_bytes(b"theirs")
    with pytest.raises(ToolError) as info:
        atomic_create(FileSystem(), str(target), b"mine")
    assert info.value.code == "STALE"
    assert target.read_bytes() == b"theirs"
    assert _names(tmp_path) == ["new.txt"]


class _NoHardLinks(FileSystem):
    def link(self, src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")


def test_create_falls_back_to_rename_without_hard_links(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    atomic_create(_NoHardLinks(), str(target), b"data")
    assert target.read_bytes() == b"data"
    assert _names(tmp_path) == ["new.txt"]
    with pytest.raises(ToolError) as info:
        atomic_create(_NoHardLinks(), str(target), b"again")
    assert info.value.code == "STALE"
    assert target.read_bytes() == b"data"
    assert _names(tmp_path) == ["new.txt"]


def test_create_retries_a_failed_unlink_of_the_temp_link(tmp_path: Path) -> None:
    class FlakyAfterLink(FileSystem):
        failures = 1

        def unlink(self, path: str) -> None:
            if self.failures:
                self.failures -= 1
                raise OSError(errno.EIO, "Input/output error")
            super().unlink(path)

    target = tmp_path / "new.txt"
    assert atomic_create(FlakyAfterLink(), str(target), b"data") == ()
    assert _names(tmp_path) == ["new.txt"]


def test_temp_names_stay_short_for_long_file_names(tmp_path: Path) -> None:
    name = "é" * 120 + ".txt"  # 244 bytes: near NAME_MAX already
    temp = temp_path_for(str(tmp_path / name))
    assert len(os.fsencode(os.path.basename(temp))) <= 255
    assert is_temp_name(os.path.basename(temp))
    target = tmp_path / name
    target.write_bytes(b"old")
    atomic_replace(FileSystem(), str(target), b"new")
    assert target.read_bytes() == b"new"
    assert _names(tmp_path) == [name]


def test_temp_names_are_fresh() -> None:
    assert len({temp_path_for("/d/f.txt") for _ in range(100)}) == 100


def test_a_colliding_temp_name_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import editspec.reference.tools._atomic as atomic

    names = iter(["0" * 16, "0" * 16, "1" * 16])
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda _size: next(names))
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    (tmp_path / f".f.txt.editspec-{'0' * 16}.tmp").write_bytes(b"someone else's")
    atomic_replace(FileSystem(), str(target), b"new")
    assert target.read_bytes() == b"new"
    assert (tmp_path / f".f.txt.editspec-{'0' * 16}.tmp").read_bytes() == b"someone else's"
    assert _names(tmp_path) == sorted([f".f.txt.editspec-{'0' * 16}.tmp", "f.txt"])


def test_a_vanished_directory_is_an_io_error_with_its_errno(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        atomic_replace(FileSystem(), str(tmp_path / "gone" / "f.txt"), b"x")
    assert (info.value.code, info.value.details["errno"]) == ("IO_ERROR", errno.ENOENT)
    assert _names(tmp_path) == []


class _Flaky(FileSystem):
    """A port whose ``create_exclusive`` always collides, or whose ``unlink`` of temp
    names fails with EIO the first ``unlink_failures`` times."""

    def __init__(self, *, collide: bool = False, unlink_failures: int = 0) -> None:
        super().__init__()
        self.collide = collide
        self.unlink_failures = unlink_failures
        self.unlinks = 0

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        if self.collide:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
        return super().create_exclusive(path, mode)

    def unlink(self, path: str) -> None:
        if is_temp_name(os.path.basename(path)):
            self.unlinks += 1
            if self.unlinks <= self.unlink_failures:
                raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        super().unlink(path)


def test_a_temp_name_that_always_collides_gives_up(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    with pytest.raises(ToolError) as caught:
        atomic_replace(_Flaky(collide=True), str(target), b"new")
    assert caught.value.code == "IO_ERROR" and caught.value.details["errno"] == errno.EEXIST
    assert target.read_bytes() == b"old"
    assert _names(tmp_path) == ["f.txt"]


@pytest.mark.parametrize(("failures", "left"), [(1, False), (2, True)])
def test_a_failed_cleanup_unlink_is_retried_once(tmp_path: Path, failures: int, left: bool) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    fs = _Flaky(unlink_failures=failures)

    def stale() -> None:
        raise ToolError("STALE", "changed meanwhile")

    with pytest.raises(ToolError) as caught:
        atomic_replace(fs, str(target), b"new", verify=stale)
    assert caught.value.code == "STALE"
    assert target.read_bytes() == b"old"
    temps = [name for name in _names(tmp_path) if is_temp_name(name)]
    assert fs.unlinks == 2
    assert bool(temps) is left  # a transient error leaves nothing; two in a row, the temp


@pytest.mark.parametrize(("failures", "warned"), [(1, False), (2, True)])
def test_a_failed_unlink_of_the_linked_temp_is_retried_then_reported(
    tmp_path: Path, failures: int, warned: bool
) -> None:
    target = tmp_path / "new.txt"
    fs = _Flaky(unlink_failures=failures)
    warnings = atomic_create(fs, str(target), b"fresh")
    assert target.read_bytes() == b"fresh"  # published whatever the cleanup did
    assert fs.unlinks == 2
    assert bool(warnings) is warned
    if warned:
        assert "could not be removed" in warnings[0]
    else:
        assert _names(tmp_path) == ["new.txt"]
