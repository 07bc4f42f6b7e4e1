"""The os-level fault injection for ``python_fs`` drivers, on small writers of its own.

Two writers stand in for foreign implementations: an atomic one (mkstemp, write, fsync,
os.replace) and a careless one (pathlib's write_bytes, which truncates in place).
"""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from pathlib import Path

import pytest

from editspec.spec import (
    SimulatedCrash,
    call_at,
    count_mutations,
    crash_at,
    fail_at,
    fail_from,
)
from editspec.spec.crash import OsInterceptor

OLD = b"old bytes " * 100
NEW = b"NEW BYTES " * 300


def atomic_write(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        os.write(fd, data[: len(data) // 2])
        os.write(fd, data[len(data) // 2 :])
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)  # cleanup a killed process would never run
        raise


def careless_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data[:10])
        handle.write(data[10:])


def test_counting_records_every_mutating_call(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(OLD)
    with count_mutations() as clean:
        atomic_write(target, NEW)
    assert [call.name for call in clean.trace] == ["open", "write", "write", "fsync", "replace"]
    assert [call.index for call in clean.trace] == [1, 2, 3, 4, 5]
    assert clean.trace[3].kind == "file"
    assert os.path.basename(clean.trace[4].paths[1]) == "a.txt"
    assert target.read_bytes() == NEW


def test_pathlib_calls_are_counted_and_crashed_too(tmp_path):
    """Whatever the Python version: 3.10's pathlib calls os through functions its
    accessor took at import, which the interceptor must reach as well."""
    source, folder = tmp_path / "a.txt", tmp_path / "d"
    with count_mutations() as clean:
        source.write_text("text")
        folder.mkdir()
        source.rename(folder / "a.txt")
        (folder / "a.txt").unlink()
        folder.rmdir()
    names = [call.name for call in clean.trace]
    assert names[0] == "open" and "mkdir" in names and "rename" in names, names
    assert names[-2:] == ["unlink", "rmdir"], names
    with crash_at(names.index("mkdir") + 1) as point:
        source.write_text("text")
        folder.mkdir()
    assert point.crashed and source.read_text() == "text" and not folder.exists()


def test_a_crash_at_every_step_of_an_atomic_writer_leaves_old_or_new(tmp_path):
    target = tmp_path / "a.txt"
    for step in range(1, 6):
        target.write_bytes(OLD)
        with crash_at(step) as point:
            atomic_write(target, NEW)
        assert point.crashed
        assert target.read_bytes() in (OLD, NEW)
        assert target.read_bytes() == (NEW if step > 5 else OLD)
    with crash_at(6) as point:
        atomic_write(target, NEW)
    assert not point.crashed
    assert target.read_bytes() == NEW


def test_a_crash_exposes_a_careless_writer(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(OLD)
    with crash_at(3) as point:  # open(O_TRUNC), write(10 bytes), [crash] write(rest)
        careless_write(target, NEW)
    assert point.crashed
    assert target.read_bytes() == NEW[:10]  # torn: neither old nor new


def test_no_cleanup_runs_after_the_crash(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(OLD)
    with crash_at(5):  # the replace: its except-branch would unlink the temp file
        atomic_write(target, NEW)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    assert len(leftovers) == 1, "the dead process's cleanup ran"


def test_every_call_after_the_crash_is_refused(tmp_path):
    seen: list[str] = []

    def dying() -> None:
        try:
            os.mkdir(tmp_path / "first")  # step 1: the crash
        finally:
            for probe in (
                lambda: os.stat(tmp_path),
                lambda: os.listdir(tmp_path),
                lambda: os.open(tmp_path / "x", os.O_RDONLY),
                lambda: os.close(0),
                lambda: open(tmp_path / "y", "w"),  # noqa: SIM115 - refused before it opens
                lambda: fcntl.flock(0, fcntl.LOCK_UN),
            ):
                try:
                    probe()
                except SimulatedCrash:
                    seen.append("refused")

    with crash_at(1) as point:
        dying()
    assert point.crashed
    assert seen == ["refused"] * 6
    assert not (tmp_path / "first").exists()
    assert not (tmp_path / "y").exists()


def test_the_crash_closes_descriptors_and_releases_locks(tmp_path):
    lock_path = tmp_path / "lock"
    held: list[int] = []

    def locker() -> None:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)  # step 1
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.append(fd)
        os.mkdir(tmp_path / "d")  # step 2: the crash

    with crash_at(2):
        locker()
    with pytest.raises(OSError):
        os.fstat(held[0])  # closed, as the kernel would
    other = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # not held any more
    finally:
        os.close(other)


def test_functions_are_restored(tmp_path):
    originals = (os.replace, os.open, os.stat, open, fcntl.flock)
    supported = set(os.supports_dir_fd)
    with count_mutations():
        assert os.replace is not originals[0]
        assert os.open in os.supports_dir_fd  # the wrapper stands in for the original
    assert (os.replace, os.open, os.stat, open, fcntl.flock) == originals
    assert set(os.supports_dir_fd) == supported


def test_interceptors_do_not_nest():
    with count_mutations(), pytest.raises(RuntimeError, match="already active"), count_mutations():
        pass


def test_fail_at_raises_once_and_lets_the_rest_happen(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(OLD)
    with fail_at(4, errno.ENOSPC) as point, pytest.raises(OSError) as raised:
        atomic_write(target, NEW)  # the fsync fails
    assert raised.value.errno == errno.ENOSPC
    assert point.failed
    assert target.read_bytes() == OLD
    assert [c.name for c in point.trace] == ["open", "write", "write", "fsync"]


def test_fail_from_fails_every_later_call_too(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(OLD)
    with fail_from(5, errno.EIO) as point, pytest.raises(OSError) as raised:
        atomic_write(target, NEW)  # the replace fails, and so does the cleanup's unlink
    assert raised.value.errno == errno.EIO
    assert point.failed
    assert target.read_bytes() == OLD
    assert [c.name for c in point.trace] == ["open", "write", "write", "fsync", "replace", "unlink"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")], "cleanup ran"


def test_call_at_runs_an_action_before_the_step(tmp_path):
    target = tmp_path / "a.txt"
    target.write_bytes(OLD)
    observed: list[bytes] = []

    def look() -> None:
        observed.append(target.read_bytes())  # runs unintercepted, before the replace
        (tmp_path / "marker").write_bytes(b"x")

    with call_at(5, look) as point:
        atomic_write(target, NEW)
    assert point.called
    assert observed == [OLD]
    assert [c.name for c in point.trace] == ["open", "write", "write", "fsync", "replace"]
    assert target.read_bytes() == NEW


def test_text_files_are_written_through(tmp_path):
    target = tmp_path / "t.txt"

    def text_writer() -> None:
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write("first\r\n")
            handle.write("second\n")

    with crash_at(3):
        text_writer()
    assert target.read_bytes() == b"first\r\n"  # the first write reached the disk, unbuffered
    with count_mutations() as clean:
        text_writer()
    assert [c.name for c in clean.trace] == ["open", "file.write", "file.write"]
    assert target.read_bytes() == b"first\r\nsecond\n"


def test_crash_points_count_from_one():
    for plan in (crash_at, fail_at):
        with pytest.raises(ValueError), plan(0):
            pass
    assert OsInterceptor(crash_at=1).crash_at == 1
