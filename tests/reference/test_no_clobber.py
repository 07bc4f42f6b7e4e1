"""A Move's publish refuses a destination created after its checks (``tools/_no_clobber``).

The racing create is injected through the fs port (``FaultyFileSystem.before``), by this
process and by a real second process, at the instant before the publish; every test
checks the bytes left on disk.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.fault_injection import CrashAt, FailAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference.text._text import sha256_hex

TEXT = b"moved bytes\r\nline two\n"
THEIRS = b"saved by another process\n"


def _workspace(tmp_path: Path, fs: FileSystem) -> Workspace:
    (tmp_path / "root").mkdir(exist_ok=True)
    return Workspace(tmp_path / "root", tmp_path / "state", fs=fs)


def _race_before(fs: FaultyFileSystem, op: str, dest: Path, create: Callable[[], None]) -> None:
    """Run ``create`` once, just before the first ``op`` call that names ``dest``."""
    target = os.path.realpath(dest)
    fired: list[str] = []

    def before(name: str, paths: tuple[str, ...]) -> None:
        if name == op and paths and paths[-1] == target and not fired:
            fired.append(name)
            create()

    fs.before = before


def _leftovers(tmp_path: Path) -> list[str]:
    quarantine = tmp_path / "state" / "quarantine"
    if not quarantine.exists():
        return []
    return sorted(p.name for p in quarantine.rglob("*") if "intent" in p.name)


def test_a_file_created_before_the_link_is_not_replaced(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "a.txt").write_bytes(TEXT)
    _race_before(fs, "link", root / "b.txt", lambda: (root / "b.txt").write_bytes(THEIRS))
    with pytest.raises(ToolError) as caught:
        session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT), message_id="m1")
    assert caught.value.code == "ALREADY_EXISTS"
    assert (root / "b.txt").read_bytes() == THEIRS
    assert (root / "a.txt").read_bytes() == TEXT
    assert sorted(os.listdir(root)) == ["a.txt", "b.txt"]
    assert os.stat(root / "a.txt").st_nlink == 1
    assert _leftovers(tmp_path) == []


def test_a_racing_create_in_a_new_parent_leaves_that_parent(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "a.txt").write_bytes(TEXT)
    _race_before(
        fs, "link", root / "new" / "b.txt", lambda: (root / "new" / "b.txt").write_bytes(THEIRS)
    )
    with pytest.raises(ToolError) as caught:
        session.move("a.txt", "new/b.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "ALREADY_EXISTS"
    # The directory the move created now holds another process's file: it stays.
    assert (root / "new" / "b.txt").read_bytes() == THEIRS
    assert (root / "a.txt").read_bytes() == TEXT


def test_a_real_second_process_creating_the_destination_is_not_clobbered(
    tmp_path: Path,
) -> None:
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "a.txt").write_bytes(TEXT)
    dest = root / "b.txt"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys\n"
            "path = sys.argv[1]\n"
            "sys.stdin.readline()\n"
            "fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)\n"
            "os.write(fd, sys.argv[2].encode())\n"
            "os.close(fd)\n"
            "print('created', flush=True)\n",
            str(dest),
            THEIRS.decode(),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:

        def other_process_creates() -> None:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "created"

        _race_before(fs, "link", dest, other_process_creates)
        with pytest.raises(ToolError) as caught:
            session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    finally:
        child.communicate(timeout=30)
    assert child.returncode == 0
    assert caught.value.code == "ALREADY_EXISTS"
    assert dest.read_bytes() == THEIRS
    assert (root / "a.txt").read_bytes() == TEXT


def test_a_move_publishes_by_link_then_unlink(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "a.txt").write_bytes(TEXT)
    inode = os.stat(root / "a.txt").st_ino
    fs.arm()
    result = session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    names = [op.name for op in fs.log if op.name in ("link", "unlink", "rename", "fsync_dir")]
    published = names.index("link")
    assert names[published : published + 3] == ["link", "fsync_dir", "unlink"]
    assert [(s.step, s.outcome) for s in result.steps] == [
        ("link", "done"),
        ("unlink_source", "done"),
    ]
    assert result.atomic is True
    assert os.stat(root / "b.txt").st_ino == inode  # the same file, not a copy
    assert sorted(os.listdir(root)) == ["b.txt"]


@pytest.mark.parametrize("racer", ["empty_dir", "file"])
def test_a_directory_move_never_replaces_what_appeared(tmp_path: Path, racer: str) -> None:
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "pkg").mkdir()
    (root / "pkg" / "x.py").write_bytes(TEXT)
    digest = session.manifest("pkg").manifest_sha256

    def create() -> None:
        if racer == "file":
            (root / "lib").write_bytes(THEIRS)
        else:
            (root / "lib").mkdir()

    _race_before(fs, "rename_noreplace", root / "lib", create)
    with pytest.raises(ToolError) as caught:
        session.move("pkg", "lib", manifest_sha256=digest)
    assert caught.value.code == "ALREADY_EXISTS"
    if racer == "file":
        assert (root / "lib").read_bytes() == THEIRS
    else:
        assert list((root / "lib").iterdir()) == []
    assert (root / "pkg" / "x.py").read_bytes() == TEXT


class _NoRenameat2(FileSystem):
    """A platform without ``renameat2``: the documented fallback for directories."""

    def rename_noreplace(self, src: str, dst: str) -> None:
        raise OSError(errno.ENOSYS, "no renameat2", src)


def test_without_renameat2_a_directory_move_says_what_it_cannot_exclude(tmp_path: Path) -> None:
    fs = FaultyFileSystem(_NoRenameat2())
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "pkg").mkdir()
    (root / "pkg" / "x.py").write_bytes(TEXT)
    digest = session.manifest("pkg").manifest_sha256
    result = session.move("pkg", "lib", manifest_sha256=digest)
    assert (root / "lib" / "x.py").read_bytes() == TEXT
    assert any("empty directory" in warning for warning in result.warnings)
    # What rename(2) itself refuses is still refused: a file that appears at the destination.
    digest = session.manifest("lib").manifest_sha256
    _race_before(fs, "rename", root / "pkg", lambda: (root / "pkg").write_bytes(THEIRS))
    with pytest.raises(ToolError) as caught:
        session.move("lib", "pkg", manifest_sha256=digest)
    assert caught.value.code == "ALREADY_EXISTS"
    assert (root / "pkg").read_bytes() == THEIRS
    assert (root / "lib" / "x.py").read_bytes() == TEXT


class _NoHardLinks(FileSystem):
    """A file system without hard links (FAT, some FUSE mounts)."""

    def link(self, src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "no hard links here", src)


def test_without_hard_links_a_file_moves_by_renameat2(tmp_path: Path) -> None:
    fs = FaultyFileSystem(_NoHardLinks())
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "a.txt").write_bytes(TEXT)
    _race_before(
        fs, "rename_noreplace", root / "b.txt", lambda: (root / "b.txt").write_bytes(THEIRS)
    )
    with pytest.raises(ToolError) as caught:
        session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "ALREADY_EXISTS"
    assert (root / "b.txt").read_bytes() == THEIRS and (root / "a.txt").read_bytes() == TEXT
    (root / "b.txt").unlink()
    result = session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    assert [s.step for s in result.steps] == ["rename"] and result.warnings == ()
    assert sorted(os.listdir(root)) == ["b.txt"]


def _index_of(fs: FaultyFileSystem, name: str, suffix: str) -> int:
    return next(op.index for op in fs.log if op.name == name and op.paths[0].endswith(suffix))


def test_a_crash_between_link_and_unlink_recovers_to_before(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    workspace = _workspace(tmp_path, fs)
    session = workspace.session("s")
    root = tmp_path / "root"
    (root / "p").write_bytes(TEXT)
    # The state directories and the bytes' snapshot blob exist: both moves count alike.
    session.move("p", "q", expected_sha256=sha256_hex(TEXT), message_id="m0")
    (root / "a.txt").write_bytes(TEXT)
    fs.arm()
    session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT), message_id="m1")
    unlink = _index_of(fs, "unlink", "/a.txt")
    (root / "b.txt").rename(root / "a.txt")
    fs.arm(CrashAt(unlink))
    with pytest.raises(SimulatedCrash):
        session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT), message_id="m2")
    assert os.stat(root / "a.txt").st_nlink == 2  # both names, as the crash left them
    restarted = Workspace(root, tmp_path / "state")
    assert sorted(os.listdir(root)) == ["a.txt", "q"]
    assert (root / "a.txt").read_bytes() == TEXT
    assert os.stat(root / "a.txt").st_nlink == 1
    assert _leftovers(tmp_path) == []
    with pytest.raises(ToolError) as caught:
        restarted.session("s").rewind("m2")  # its snapshot was discarded
    assert caught.value.code == "NOT_FOUND"


def test_a_failed_unlink_removes_the_new_name_again(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    root = tmp_path / "root"
    (root / "p").write_bytes(TEXT)
    session.move("p", "q", expected_sha256=sha256_hex(TEXT))
    (root / "a.txt").write_bytes(TEXT)
    fs.arm()
    session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    unlink = _index_of(fs, "unlink", "/a.txt")
    (root / "b.txt").rename(root / "a.txt")
    fs.arm(FailAt(unlink, errno.EIO))
    with pytest.raises(ToolError) as caught:
        session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "IO_ERROR"
    assert sorted(os.listdir(root)) == ["a.txt", "q"]
    assert (root / "a.txt").read_bytes() == TEXT and os.stat(root / "a.txt").st_nlink == 1
    assert _leftovers(tmp_path) == []
    session.read("a.txt")
    session.move("a.txt", "b.txt")  # the workspace is not sticky-failed
    assert (root / "b.txt").read_bytes() == TEXT


class _UnlinksFail(FileSystem):
    """Every unlink under ``root`` fails with EIO (a disk going bad mid-move)."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root

    def unlink(self, path: str) -> None:
        if path.startswith(self.root + os.sep):
            raise OSError(errno.EIO, "injected", path)
        super().unlink(path)


def test_a_move_left_with_both_names_is_settled_by_recovery(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(TEXT)
    workspace = _workspace(tmp_path, _UnlinksFail(os.path.realpath(root)))
    with pytest.raises(ToolError) as caught:
        workspace.session("s").move("a.txt", "new/b.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "IO_ERROR"
    assert os.stat(root / "a.txt").st_nlink == 2  # both names, until recovery
    with pytest.raises(ToolError) as refused:
        workspace.session("s").write("other.txt", "x\n")
    assert refused.value.code == "NEEDS_RECOVERY"
    Workspace(root, tmp_path / "state")  # a sound disk again: its constructor recovers
    assert sorted(os.listdir(root)) == ["a.txt"]  # the new name and its directory are gone
    assert (root / "a.txt").read_bytes() == TEXT and os.stat(root / "a.txt").st_nlink == 1
    assert _leftovers(tmp_path) == []
