"""FaultyFileSystem: counting, crash and failure injection checked against real bytes on disk."""

from __future__ import annotations

import errno
import inspect
import os
from pathlib import Path

import pytest

from editspec.fault_injection import (
    CrashAt,
    FailAt,
    FaultyFileSystem,
    OpRecord,
    SimulatedCrash,
    count_operations,
)
from editspec.reference import FileSystem

OLD = b"old contents\n"
NEW = b"new contents, longer than the old ones\n"


def replace_file(fs: FileSystem, directory: Path) -> None:
    """The atomic-replace sequence, spelled out over the port: six mutating calls."""
    target = str(directory / "target.txt")
    temp = str(directory / ".target.txt.tmp")
    fd = fs.create_exclusive(temp)  # 1
    fs.write(fd, NEW)  # 2
    fs.fsync(fd)  # 3
    fs.close(fd)  # 4
    fs.rename(temp, target)  # 5
    fs.fsync_dir(str(directory))  # 6


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    (tmp_path / "target.txt").write_bytes(OLD)
    return tmp_path


def disk(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# What the directory holds once exactly the first k operations have happened.
STATES_AFTER = {
    0: {"target.txt": OLD},
    1: {".target.txt.tmp": b"", "target.txt": OLD},
    2: {".target.txt.tmp": NEW, "target.txt": OLD},
    3: {".target.txt.tmp": NEW, "target.txt": OLD},
    4: {".target.txt.tmp": NEW, "target.txt": OLD},
    5: {"target.txt": NEW},
    6: {"target.txt": NEW},
}


def test_count_operations_counts_the_mutating_calls(directory: Path) -> None:
    assert count_operations(lambda fs: replace_file(fs, directory)) == 6
    assert disk(directory) == {"target.txt": NEW}


def test_count_all_also_counts_queries(directory: Path) -> None:
    def run(fs: FileSystem) -> None:
        fs.lstat(str(directory / "target.txt"))
        fs.read_bytes(str(directory / "target.txt"))
        replace_file(fs, directory)

    assert count_operations(run, count="all") == 8


@pytest.mark.parametrize("k", range(1, 7))
def test_crash_at_k_leaves_exactly_the_operations_before_k(directory: Path, k: int) -> None:
    fs = FaultyFileSystem(plan=CrashAt(k))
    with pytest.raises(SimulatedCrash):
        replace_file(fs, directory)
    assert fs.crashed
    assert fs.count == k
    assert disk(directory) == STATES_AFTER[k - 1]
    assert [r.outcome for r in fs.log] == ["ok"] * (k - 1) + ["crash"]


def test_a_crash_is_not_caught_by_except_exception(directory: Path) -> None:
    fs = FaultyFileSystem(plan=CrashAt(2))
    cleaned_up = []
    with pytest.raises(SimulatedCrash):
        try:
            replace_file(fs, directory)
        except Exception:  # the engine's cleanup path must never run after a crash
            cleaned_up.append(True)
    assert not cleaned_up
    assert isinstance(SimulatedCrash(), BaseException)
    assert not isinstance(SimulatedCrash(), Exception)


def test_after_a_crash_every_port_call_raises(directory: Path) -> None:
    fs = FaultyFileSystem(plan=CrashAt(1))
    target = str(directory / "target.txt")
    with pytest.raises(SimulatedCrash):
        fs.unlink(target)
    calls = [
        lambda: fs.unlink(target),
        lambda: fs.lstat(target),
        lambda: fs.stat(target),
        lambda: fs.read_bytes(target),
        lambda: fs.realpath(target),
        lambda: fs.lexists(target),
        lambda: fs.listdir(str(directory)),
        lambda: fs.scandir(str(directory)),
        lambda: fs.lock_file(str(directory / "x.lock")),
        lambda: fs.mkdir(str(directory / "d")),
        lambda: fs.fsync_dir(str(directory)),
    ]
    for call in calls:
        with pytest.raises(SimulatedCrash):
            call()
    assert disk(directory) == {"target.txt": OLD}


def test_a_crash_releases_the_dead_process_descriptors_and_locks(directory: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    fs = FaultyFileSystem(plan=CrashAt(2))
    lock_path = str(directory / "w.lock")
    handle = fs.lock_file(lock_path)
    fd = fs.create_exclusive(str(directory / "f"))
    with pytest.raises(SimulatedCrash):
        fs.write(fd, b"x")
    assert fs.open_descriptors() == {}
    for closed in (fd, handle):
        with pytest.raises(OSError):
            os.fstat(closed)
    probe = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # would raise if still held
    finally:
        os.close(probe)


ERRNOS = [errno.ENOSPC, errno.EIO, errno.EACCES, errno.EXDEV, errno.EROFS]


@pytest.mark.parametrize("k", range(1, 7))
@pytest.mark.parametrize("number", ERRNOS, ids=errno.errorcode.get)
def test_fail_at_k_raises_that_errno_and_the_operation_does_not_happen(
    directory: Path, k: int, number: int
) -> None:
    fs = FaultyFileSystem(plan=FailAt(k, number))
    with pytest.raises(OSError) as caught:
        replace_file(fs, directory)
    assert caught.value.errno == number
    assert not isinstance(caught.value, SimulatedCrash)
    assert not fs.crashed
    assert disk(directory) == STATES_AFTER[k - 1]
    assert fs.log[-1].outcome == f"fail:{errno.errorcode[number]}"
    # Later operations proceed normally.
    fs.mkdir(str(directory / "later"))
    assert (directory / "later").is_dir()
    for fd in fs.open_descriptors():  # the interrupted sequence's own descriptor
        fs.close(fd)


def test_a_failed_close_still_releases_the_descriptor(directory: Path) -> None:
    fs = FaultyFileSystem(plan=FailAt(2, errno.EIO))
    fd = fs.create_exclusive(str(directory / "f"))
    with pytest.raises(OSError):
        fs.close(fd)
    assert fs.open_descriptors() == {}
    with pytest.raises(OSError):
        os.fstat(fd)


def test_fail_at_rejects_an_errno_outside_the_fault_model() -> None:
    with pytest.raises(ValueError):
        FaultyFileSystem(plan=FailAt(1, errno.EPERM))


def test_log_names_files_behind_descriptors(directory: Path) -> None:
    fs = FaultyFileSystem()
    replace_file(fs, directory)
    temp = str(directory / ".target.txt.tmp")
    target = str(directory / "target.txt")
    assert fs.log == [
        OpRecord(1, "create_exclusive", (temp,), 0, "ok"),
        OpRecord(2, "write", (temp,), len(NEW), "ok"),
        OpRecord(3, "fsync", (temp,), 0, "ok"),
        OpRecord(4, "close", (temp,), 0, "ok"),
        OpRecord(5, "rename", (temp, target), 0, "ok"),
        OpRecord(6, "fsync_dir", (str(directory),), 0, "ok"),
    ]


def test_a_real_error_is_logged_and_passed_through(directory: Path) -> None:
    fs = FaultyFileSystem()
    with pytest.raises(FileNotFoundError):
        fs.unlink(str(directory / "missing"))
    assert fs.log == [OpRecord(1, "unlink", (str(directory / "missing"),), 0, "error:ENOENT")]
    assert not fs.crashed


def test_arm_resets_the_counter_and_earlier_operations_do_not_count(directory: Path) -> None:
    fs = FaultyFileSystem()
    fs.mkdir(str(directory / "before"))
    fs.arm(CrashAt(2))
    assert fs.count == 0 and fs.log == []
    fs.mkdir(str(directory / "first"))
    with pytest.raises(SimulatedCrash):
        fs.mkdir(str(directory / "second"))
    assert (directory / "before").is_dir()
    assert (directory / "first").is_dir()
    assert not (directory / "second").exists()


def test_queries_do_not_count_in_mutating_mode(directory: Path) -> None:
    fs = FaultyFileSystem(plan=CrashAt(1))
    assert fs.read_bytes(str(directory / "target.txt")) == OLD
    assert fs.lexists(str(directory / "target.txt"))
    assert fs.count == 0
    with pytest.raises(SimulatedCrash):
        fs.unlink(str(directory / "target.txt"))
    assert disk(directory) == {"target.txt": OLD}


def test_every_port_method_is_wrapped() -> None:
    """A method added to the port but not to the wrapper would bypass fault injection."""
    port = {
        name
        for name, member in inspect.getmembers(FileSystem, inspect.isfunction)
        if not name.startswith("_")
    }
    unwrapped = {
        name for name in port if getattr(FaultyFileSystem, name) is getattr(FileSystem, name)
    }
    assert unwrapped == set()


def test_works_over_pyfakefs_without_dir_fd(fs: object) -> None:
    directory = Path("/ws")
    directory.mkdir()
    (directory / "target.txt").write_bytes(OLD)
    inner = FileSystem(secure_walk=False)
    assert count_operations(lambda faulty: replace_file(faulty, directory), inner) == 6
    (directory / "target.txt").write_bytes(OLD)
    faulty = FaultyFileSystem(inner, CrashAt(5))
    with pytest.raises(SimulatedCrash):
        replace_file(faulty, directory)
    assert disk(directory) == STATES_AFTER[4]


def test_open_append_works_over_pyfakefs(fs: object) -> None:
    directory = Path("/ws")
    directory.mkdir()
    (directory / "record").write_bytes(b"first\n")
    faulty = FaultyFileSystem(FileSystem(secure_walk=False))
    fd = faulty.open_append(str(directory / "record"))
    faulty.write(fd, b"second\n")
    faulty.fsync(fd)
    faulty.close(fd)
    assert (directory / "record").read_bytes() == b"first\nsecond\n"
    assert [op.name for op in faulty.log] == ["open_append", "write", "fsync", "close"]
    assert faulty.open_descriptors() == {}
    with pytest.raises(FileNotFoundError):
        faulty.open_append(str(directory / "missing"))


def test_before_runs_just_before_each_call_reaches_the_disk(directory: Path) -> None:
    fs = FaultyFileSystem(count="mutating")
    seen: list[tuple[str, tuple[str, ...], bool]] = []
    target = directory / "made"

    def before(name: str, paths: tuple[str, ...]) -> None:
        seen.append((name, paths, target.exists()))

    fs.before = before
    fs.mkdir(str(target))
    fs.symlink("made", str(directory / "link"))
    assert seen[0] == ("mkdir", (str(target),), False)  # the directory was not there yet
    assert seen[1][0] == "symlink" and os.readlink(directory / "link") == "made"
    fs.arm(FailAt(1, errno.EIO))
    with pytest.raises(OSError):
        fs.rmdir(str(target))
    assert len(seen) == 2  # a refused call never reaches the disk, nor the hook
    assert target.is_dir()


def test_symlink_and_rename_noreplace_are_counted_and_crashable(directory: Path) -> None:
    (directory / "a").write_bytes(OLD)
    fs = FaultyFileSystem(plan=CrashAt(2))
    fs.symlink("a", str(directory / "link"))
    with pytest.raises(SimulatedCrash):
        fs.rename_noreplace(str(directory / "a"), str(directory / "b"))
    assert [op.name for op in fs.log] == ["symlink", "rename_noreplace"]
    assert sorted(os.listdir(directory)) == ["a", "link", "target.txt"]
