"""The file-system port (``reference/_fs.py``): secure walk, exclusive create, no clobber."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import stat
import sys
from pathlib import Path

import pytest

from editspec.reference import _fs
from editspec.reference._fs import (
    MUTATING,
    NOREPLACE_UNAVAILABLE,
    FileSystem,
    default_state_dir,
    makedirs,
)


@pytest.fixture(params=[True, False], ids=["secure", "plain"])
def port(request: pytest.FixtureRequest) -> FileSystem:
    return FileSystem(secure_walk=request.param)


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Path, Path]:
    """``ws/sub`` is a symlink to ``outside`` (a directory swapped for a link)."""
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    return root / "sub", outside


def test_the_secure_walk_is_on_by_default_on_posix() -> None:
    assert FileSystem().secure_walk is (os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW"))


@pytest.mark.parametrize(
    "operation",
    [
        lambda fs, d: fs.read_bytes(str(d / "secret.txt")),
        lambda fs, d: fs.lstat(str(d / "secret.txt")),
        lambda fs, d: fs.create_exclusive(str(d / "planted.txt")),
        lambda fs, d: fs.unlink(str(d / "secret.txt")),
        lambda fs, d: fs.mkdir(str(d / "newdir")),
        lambda fs, d: fs.rename(str(d / "secret.txt"), str(d / "moved.txt")),
        lambda fs, d: fs.link(str(d / "secret.txt"), str(d / "linked.txt")),
        lambda fs, d: fs.fsync_dir(str(d)),
        lambda fs, d: fs.open_append(str(d / "secret.txt")),
    ],
    ids=[
        "read_bytes",
        "lstat",
        "create_exclusive",
        "unlink",
        "mkdir",
        "rename",
        "link",
        "fsync_dir",
        "open_append",
    ],
)
def test_secure_walk_refuses_a_symlinked_directory_component(
    swapped: tuple[Path, Path], operation: object
) -> None:
    link, outside = swapped
    with pytest.raises(OSError) as info:
        operation(FileSystem(secure_walk=True), link)  # type: ignore[operator]
    assert info.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_bytes() == b"secret"


def test_without_the_secure_walk_the_same_call_escapes(swapped: tuple[Path, Path]) -> None:
    link, outside = swapped
    fd = FileSystem(secure_walk=False).create_exclusive(str(link / "planted.txt"))
    os.close(fd)
    assert (outside / "planted.txt").exists()  # what the secure walk prevents


def test_read_bytes_does_not_follow_a_final_symlink(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"r")
    (tmp_path / "link").symlink_to("real")
    with pytest.raises(OSError) as info:
        port.read_bytes(str(tmp_path / "link"))
    assert info.value.errno == errno.ELOOP


def test_read_bytes_with_offset_and_limit(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"0123456789")
    assert port.read_bytes(str(tmp_path / "f")) == b"0123456789"
    assert port.read_bytes(str(tmp_path / "f"), offset=3, limit=4) == b"3456"
    assert port.read_bytes(str(tmp_path / "f"), limit=0) == b""


def test_read_bytes_of_a_directory_fails(port: FileSystem, tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        port.read_bytes(str(tmp_path))


def test_create_exclusive_never_opens_an_existing_file(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "taken").write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        port.create_exclusive(str(tmp_path / "taken"))
    (tmp_path / "dangling").symlink_to("nowhere")
    with pytest.raises(FileExistsError):
        port.create_exclusive(str(tmp_path / "dangling"))
    assert not (tmp_path / "nowhere").exists()
    assert (tmp_path / "taken").read_bytes() == b"keep"


def test_create_write_fsync_close(port: FileSystem, tmp_path: Path) -> None:
    fd = port.create_exclusive(str(tmp_path / "new"), 0o600)
    port.write(fd, b"x" * 100_000)
    port.fchmod(fd, 0o640)
    port.fsync(fd)
    port.close(fd)
    assert (tmp_path / "new").read_bytes() == b"x" * 100_000
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o640


def test_link_does_not_clobber(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    with pytest.raises(FileExistsError):
        port.link(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_bytes() == b"b"
    port.link(str(tmp_path / "a"), str(tmp_path / "c"))
    assert os.stat(tmp_path / "a").st_nlink == 2


def test_rename_replaces_the_destination(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    port.rename(str(tmp_path / "a"), str(tmp_path / "b"))
    assert sorted(os.listdir(tmp_path)) == ["b"]
    assert (tmp_path / "b").read_bytes() == b"a"


def _noreplace_or_skip(port: FileSystem, tmp_path: Path) -> None:
    probe = tmp_path / ".probe"
    probe.write_bytes(b"")
    try:
        port.rename_noreplace(str(probe), str(tmp_path / ".probe2"))
    except OSError as exc:
        if exc.errno in NOREPLACE_UNAVAILABLE:
            pytest.skip(f"no renameat2(RENAME_NOREPLACE) here: {exc}")
        raise
    (tmp_path / ".probe2").unlink()


def test_rename_noreplace_never_replaces(port: FileSystem, tmp_path: Path) -> None:
    _noreplace_or_skip(port, tmp_path)
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    (tmp_path / "d").mkdir()
    (tmp_path / "e").mkdir()
    with pytest.raises(FileExistsError):
        port.rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    with pytest.raises(FileExistsError):
        port.rename_noreplace(str(tmp_path / "d"), str(tmp_path / "e"))  # empty: still kept
    assert (tmp_path / "b").read_bytes() == b"b" and (tmp_path / "a").read_bytes() == b"a"
    port.rename_noreplace(str(tmp_path / "d"), str(tmp_path / "f"))
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "e", "f"]


def test_rename_noreplace_is_refused_where_os_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").write_bytes(b"a")
    monkeypatch.setattr(os, "replace", lambda *args, **kwargs: None)  # an interceptor
    with pytest.raises(OSError) as caught:
        FileSystem().rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert caught.value.errno in NOREPLACE_UNAVAILABLE
    assert sorted(os.listdir(tmp_path)) == ["a"]


def test_symlink_makes_a_link_and_never_replaces(port: FileSystem, tmp_path: Path) -> None:
    port.symlink("target/elsewhere", str(tmp_path / "link"))
    assert os.readlink(tmp_path / "link") == "target/elsewhere"
    with pytest.raises(FileExistsError):
        port.symlink("other", str(tmp_path / "link"))
    assert os.readlink(tmp_path / "link") == "target/elsewhere"


def test_lstat_of_the_file_system_root(port: FileSystem) -> None:
    assert stat.S_ISDIR(port.lstat("/").st_mode)
    assert port.lexists("/")


def test_lexists_and_readlink(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("target")
    assert port.lexists(str(tmp_path / "link"))
    assert port.readlink(str(tmp_path / "link")) == "target"
    assert not port.lexists(str(tmp_path / "missing"))
    (tmp_path / "file").write_bytes(b"")
    assert not port.lexists(str(tmp_path / "file" / "child"))


def test_unlink_mkdir_rmdir(port: FileSystem, tmp_path: Path) -> None:
    port.mkdir(str(tmp_path / "d"))
    assert (tmp_path / "d").is_dir()
    port.rmdir(str(tmp_path / "d"))
    (tmp_path / "f").write_bytes(b"")
    port.unlink(str(tmp_path / "f"))
    assert os.listdir(tmp_path) == []


def test_makedirs_returns_what_it_created_top_first(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    created = makedirs(port, str(tmp_path / "a" / "b" / "c"))
    assert created == [str(tmp_path / "a" / "b"), str(tmp_path / "a" / "b" / "c")]
    assert makedirs(port, str(tmp_path / "a" / "b" / "c")) == []


def test_makedirs_skips_a_directory_another_process_creates_meanwhile(tmp_path: Path) -> None:
    racing = str(tmp_path / "a" / "b")

    class Racing(FileSystem):
        def mkdir(self, path: str, mode: int = 0o777) -> None:
            if path == racing:
                os.mkdir(racing)  # the other process wins: EEXIST for this one
            super().mkdir(path, mode)

    created = makedirs(Racing(), str(tmp_path / "a" / "b" / "c"))
    assert created == [str(tmp_path / "a"), str(tmp_path / "a" / "b" / "c")]
    assert (tmp_path / "a" / "b" / "c").is_dir()


def _lowest_free_descriptor() -> int:
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    return fd


def test_open_append_refuses_a_fifo_and_closes_what_it_opened(
    port: FileSystem, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so opening it to write never blocks
    try:
        free = _lowest_free_descriptor()
        with pytest.raises(IsADirectoryError):
            port.open_append(str(fifo))
        assert _lowest_free_descriptor() == free
    finally:
        os.close(reader)


class _Interrupted(Exception):
    pass


def test_a_lock_wait_interrupted_by_a_signal_leaves_no_descriptor(
    port: FileSystem, tmp_path: Path
) -> None:
    path = str(tmp_path / "l.lock")
    held = port.lock_file(path)

    def interrupt(signum: int, frame: object) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        free = _lowest_free_descriptor()
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(_Interrupted):
            port.lock_file(path)  # blocks on the lock held above until the signal
        assert _lowest_free_descriptor() == free
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    port.unlock(held)
    port.unlock(port.lock_file(path))  # nothing else holds it


class _OldLibc:
    """A C library without ``renameat2`` (glibc before 2.28)."""


@pytest.mark.parametrize("where", ["another platform", "no C library", "an old C library"])
def test_without_renameat2_rename_noreplace_says_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "another platform":
        monkeypatch.setattr(sys, "platform", "darwin")
    elif where == "no C library":
        monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: _raise(OSError("no libc")))
    else:
        monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: _OldLibc())
    probed = _fs._load_renameat2()
    assert probed is None
    monkeypatch.setattr(_fs, "_RENAMEAT2", probed)
    (tmp_path / "a").write_bytes(b"a")
    with pytest.raises(OSError) as caught:
        FileSystem().rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert caught.value.errno in NOREPLACE_UNAVAILABLE  # the caller's cue to fall back
    assert sorted(os.listdir(tmp_path)) == ["a"]


def _raise(exc: BaseException) -> None:
    raise exc


def test_lock_file_is_exclusive_across_descriptions(port: FileSystem, tmp_path: Path) -> None:
    import fcntl

    handle = port.lock_file(str(tmp_path / "l.lock"))
    fd = os.open(tmp_path / "l.lock", os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        port.unlock(handle)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_scandir_and_listdir(port: FileSystem, tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    (tmp_path / "d").mkdir()
    assert sorted(port.listdir(str(tmp_path))) == ["d", "f"]
    assert sorted((entry.name, entry.is_dir()) for entry in port.scandir(str(tmp_path))) == [
        ("d", True),
        ("f", False),
    ]


def test_mutating_names_every_disk_changing_method() -> None:
    assert {
        "create_exclusive",
        "open_append",
        "write",
        "fsync",
        "fchmod",
        "close",
        "fsync_dir",
        "rename",
        "rename_noreplace",
        "link",
        "unlink",
        "mkdir",
        "rmdir",
        "symlink",
    } == MUTATING
    for name in MUTATING:
        assert callable(getattr(FileSystem, name))


def test_open_append_writes_at_the_end_of_an_existing_file(
    port: FileSystem, tmp_path: Path
) -> None:
    target = tmp_path / "record"
    target.write_bytes(b"first\n")
    inode = target.stat().st_ino
    fd = port.open_append(str(target))
    try:
        port.write(fd, b"second\n")
        port.fsync(fd)
    finally:
        port.close(fd)
    assert target.read_bytes() == b"first\nsecond\n"
    assert target.stat().st_ino == inode


def test_open_append_never_creates_nor_follows_a_link(port: FileSystem, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        port.open_append(str(tmp_path / "missing"))
    assert not (tmp_path / "missing").exists()
    (tmp_path / "real").write_bytes(b"kept")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError) as caught:
        port.open_append(str(tmp_path / "link"))
    assert caught.value.errno == errno.ELOOP
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        port.open_append(str(tmp_path / "dir"))
    assert (tmp_path / "real").read_bytes() == b"kept"


def test_default_state_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_state_dir() == str(tmp_path / "editspec")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_dir() == str(tmp_path / "home" / ".local" / "state" / "editspec")
