"""The fixtures clauses rely on: they must see every change, and only real ones."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from editspec.spec.fixtures import Alias, Disk, DriverHandle, External, RecordingDriver


@pytest.fixture
def disk(tmp_path: Path) -> Disk:
    base = Path(os.path.realpath(tmp_path))
    for name in ("ws", "state", "outside"):
        (base / name).mkdir()
    return Disk(base, base / "ws", base / "state", base / "outside")


def test_snapshot_sees_content_mode_links_and_new_names(disk):
    disk.write("a.txt", "one\n")
    alias = Alias(disk)
    alias.symlink("link", "a.txt")
    before = disk.snapshot()
    disk.assert_unchanged(before)
    changes = [
        lambda: (disk.root / "a.txt").write_bytes(b"two\n"),
        lambda: os.chmod(disk.root / "a.txt", 0o600),
        lambda: (disk.outside / "escaped.txt").write_bytes(b"x"),
        lambda: (os.unlink(disk.root / "link"), os.symlink("elsewhere", disk.root / "link")),
        lambda: (disk.base / "ws_evil").mkdir(),
    ]
    for change in changes:
        snapshot = disk.snapshot()
        change()
        with pytest.raises(AssertionError, match="the disk changed"):
            disk.assert_unchanged(snapshot)


def test_snapshot_ignores_the_state_directory(disk):
    before = disk.snapshot()
    (disk.state_dir / "journal.json").write_bytes(b"{}")
    disk.assert_unchanged(before)


def test_leftovers_are_files_nobody_accounts_for(disk):
    disk.write("mine.txt", "x")
    (disk.root / ".mine.txt.tmp123").write_bytes(b"partial")
    (disk.root / "reported.txt").write_bytes(b"y")
    disk.remember("reported.txt")
    assert disk.leftovers() == ["ws/.mine.txt.tmp123"]
    with pytest.raises(AssertionError, match="tmp123"):
        disk.assert_no_leftovers()


def test_reported_paths_are_remembered_through_links(disk):
    disk.write("real/a.txt", "x")
    Alias(disk).symlink("dirlink", "real")
    (disk.root / "real" / "b.txt").write_bytes(b"made through the link")
    disk.remember("dirlink/b.txt")
    assert disk.leftovers() == []


def test_tree_lists_regular_files_only(disk):
    disk.write("a/b.txt", b"1")
    disk.write("c.txt", b"2")
    Alias(disk).symlink("l.txt", "c.txt")
    assert disk.tree() == {"a/b.txt": b"1", "c.txt": b"2"}


def test_same_size_same_mtime_modification(disk):
    disk.write("f.txt", "aaaa")
    os.utime(disk.root / "f.txt", ns=(1_000_000_000, 1_500_000_123))
    External(disk).modify_same_size_same_mtime("f.txt", "bbbb")
    info = os.stat(disk.root / "f.txt")
    assert disk.read("f.txt") == b"bbbb"
    assert (info.st_size, info.st_mtime_ns) == (4, 1_500_000_123)
    with pytest.raises(ValueError):
        External(disk).modify_same_size_same_mtime("f.txt", "longer")


def test_touch_changes_only_the_mtime(disk):
    disk.write("f.txt", "same")
    before = os.stat(disk.root / "f.txt").st_mtime_ns
    External(disk).touch("f.txt")
    assert os.stat(disk.root / "f.txt").st_mtime_ns > before
    assert disk.read("f.txt") == b"same"


def test_recording_session_remembers_written_paths(disk):
    class Inner:
        def write(self, path, content, **kwargs):
            (disk.root / "actual.txt").write_bytes(b"x")
            return SimpleNamespace(path="actual.txt")

        def read(self, path, **kwargs):
            return "read"

    class InnerDriver:
        name = "inner"
        capabilities = frozenset({"read"})

        def open_session(self, session_id):
            return Inner()

        def close(self):
            pass

    driver = RecordingDriver(InnerDriver(), disk)
    session = driver.open_session("A")
    assert session.read("x") == "read"
    session.write("requested.txt", "x")
    assert disk.leftovers() == []
    assert driver.capabilities == frozenset({"read"})


def test_restart_builds_a_new_driver_over_the_same_directories(disk):
    built: list[tuple[Path, Path]] = []
    closed: list[object] = []

    class Tiny:
        name = "tiny"
        capabilities = frozenset()

        def __init__(self, root, state):
            built.append((root, state))

        def close(self):
            closed.append(self)

    handle = DriverHandle(Tiny, disk)
    first = handle.current
    second = handle.restart()
    third = handle.restart(close=False)
    assert first is not second is not third
    assert built == [(disk.root, disk.state_dir)] * 3
    assert closed == [first.inner]  # a crashed driver is not closed
