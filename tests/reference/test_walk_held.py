"""Listings held open while their entries are used (``FileSystem.scandir_held``), and
Glob's walk over them: the same results as by path, every handle closed, races skipped."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from editspec.reference import ToolError, Workspace
from editspec.reference._fs import FileSystem
from editspec.reference.search._walk import SearchTree
from tests.reference.search_trees import Link, make_tree

needs_fd_listing = pytest.mark.skipif(
    not (os.scandir in os.supports_fd and os.open in os.supports_dir_fd),
    reason="the platform lists no directory through a handle",
)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


needs_proc_fds = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts descriptors in /proc/self/fd"
)


# -- the port ------------------------------------------------------------------------------------


@needs_fd_listing
def test_a_held_listing_stats_and_reads_through_its_handle(tmp_path: Path) -> None:
    make_tree(tmp_path, {"f.txt": "abc", "d": {}, "ln": Link("f.txt"), ".gitignore": "*.log\n"})
    port = FileSystem()
    entries, handle = port.scandir_held(str(tmp_path))
    assert handle is not None
    try:
        by_name = {entry.name: entry for entry in entries}
        assert set(by_name) == {entry.name for entry in port.scandir(str(tmp_path))}
        for name, entry in by_name.items():
            own = os.lstat(tmp_path / name)
            seen = entry.stat(follow_symlinks=False)
            assert (seen.st_ino, seen.st_mode, seen.st_mtime_ns) == (
                own.st_ino,
                own.st_mode,
                own.st_mtime_ns,
            )
        assert by_name["ln"].is_symlink() and by_name["d"].is_dir()
        assert port.read_bytes_at(handle, ".gitignore") == b"*.log\n"
        assert port.read_bytes_at(handle, "f.txt") == b"abc"
        with pytest.raises(OSError) as link:
            port.read_bytes_at(handle, "ln")  # not followed
        assert link.value.errno == errno.ELOOP
        with pytest.raises(OSError) as directory:
            port.read_bytes_at(handle, "d")
        assert directory.value.errno == errno.EISDIR
        with pytest.raises(FileNotFoundError):
            port.read_bytes_at(handle, "missing")
    finally:
        port.release_dir(handle)
    with pytest.raises(OSError):
        os.fstat(handle)  # released


def test_no_handle_without_the_secure_walk_or_for_a_subclass(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a": "", "b": {}})
    listed: list[str] = []

    class Counting(FileSystem):
        def scandir(self, path: str) -> Any:
            listed.append(path)
            return super().scandir(path)

    for port in (FileSystem(secure_walk=False), Counting()):
        entries, handle = port.scandir_held(str(tmp_path))
        assert handle is None
        assert sorted(entry.name for entry in entries) == ["a", "b"]
    assert listed == [str(tmp_path)]  # the subclass's own listing, seen by it


def test_a_held_listing_of_a_missing_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        FileSystem().scandir_held(str(tmp_path / "missing"))
    with pytest.raises(NotADirectoryError):
        (tmp_path / "file").write_text("")
        FileSystem().scandir_held(str(tmp_path / "file"))


# -- the walk ------------------------------------------------------------------------------------

TREE = {
    ".gitignore": "*.log\n!keep.log\nbuild/\n",
    "a.py": "",
    "a.log": "",
    "keep.log": "",
    "build": {"x.py": ""},
    "src": {
        ".gitignore": "*.tmp\n/local/\n",
        "b.py": "",
        "c.tmp": "",
        "local": {"y.py": ""},
        "ln": Link("../a.py"),
        "deep": {"z.py": "", "é.txt": "", "w.log": ""},
    },
}


def _listing(tree: SearchTree, hold: bool) -> list[tuple[str, list[str], list[str], list[str]]]:
    found = []
    for batch in tree.walk("", hold=hold):
        found.append(
            (
                batch.directory,
                sorted(entry.name for entry in batch.files),
                sorted(entry.name for entry in batch.symlinks),
                sorted(entry.name for entry in batch.dirs),
            )
        )
    return sorted(found)


def test_a_held_walk_keeps_what_a_walk_by_path_keeps(root: Path, workspace: Any) -> None:
    make_tree(root, TREE)
    held, by_path = SearchTree(workspace), SearchTree(workspace)
    assert _listing(held, hold=True) == _listing(by_path, hold=False)
    assert [file.source for file in held.ignore_reads] == [
        file.source for file in by_path.ignore_reads
    ]
    assert ("src", [".gitignore", "b.py"], ["ln"], ["deep"]) in _listing(held, hold=True)


@needs_proc_fds
def test_every_handle_is_released(root: Path, workspace: Any, session: Any) -> None:
    make_tree(root, TREE)
    before = _open_fds()
    assert session.glob("**").paths
    assert _open_fds() == before
    walk = SearchTree(workspace).walk("", hold=True)
    next(walk)
    assert _open_fds() == before + 1  # the directory of the batch in use
    next(walk)
    assert _open_fds() == before + 1  # the previous one released
    walk.close()
    assert _open_fds() == before
    with pytest.raises(ToolError):
        for _ in SearchTree(workspace).walk("", hold=True, check=_fail_on(2)):
            pass
    assert _open_fds() == before


def _fail_on(call: int) -> Callable[[], None]:
    calls = []

    def check() -> None:
        calls.append(None)
        if len(calls) == call:
            raise ToolError("CANCELLED", "search cancelled")

    return check


# -- races on the real port ------------------------------------------------------------------


def _after_listing(
    monkeypatch: pytest.MonkeyPatch, action: Callable[[str, list[os.DirEntry[str]]], None]
) -> None:
    """Run ``action(path, entries)`` right after each held listing of the plain port."""
    original = FileSystem.scandir_held

    def scandir_held(self: FileSystem, path: str) -> tuple[list[os.DirEntry[str]], int | None]:
        entries, handle = original(self, path)
        action(path, entries)
        return entries, handle

    monkeypatch.setattr(FileSystem, "scandir_held", scandir_held)


@needs_fd_listing
def test_entries_gone_after_a_held_listing_are_skipped(
    root: Path, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root, {"keep.py": "", "vanish.py": "", "d": {"y.py": "", "vanish_too": {}}})

    def vanish(path: str, entries: list[os.DirEntry[str]]) -> None:
        for entry in entries:
            if entry.name.startswith("vanish"):
                target = os.path.join(path, entry.name)
                os.rmdir(target) if entry.is_dir() else os.unlink(target)

    _after_listing(monkeypatch, vanish)
    assert set(session.glob("**").paths) == {"keep.py", "d", "d/y.py"}


@needs_fd_listing
def test_an_ignore_file_gone_after_a_held_listing_counts_as_none(
    root: Path, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root, {"d": {".gitignore": "*.log\n", "a.log": ""}})

    def vanish(path: str, entries: list[os.DirEntry[str]]) -> None:
        if any(entry.name == ".gitignore" for entry in entries):
            os.unlink(os.path.join(path, ".gitignore"))

    _after_listing(monkeypatch, vanish)
    assert set(session.glob("**").paths) == {"d", "d/a.log"}


@needs_fd_listing
def test_a_held_ignore_file_that_cannot_be_read_is_an_error(
    root: Path, session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(root, {"d": {".gitignore": "*.log\n", "a.log": ""}})

    def broken(self: FileSystem, handle: int, name: str) -> bytes:
        raise OSError(errno.EIO, "injected", name)

    monkeypatch.setattr(FileSystem, "read_bytes_at", broken)
    with pytest.raises(ToolError) as caught:
        session.glob("**")
    assert caught.value.code == "IO_ERROR"


def test_a_port_with_its_own_listing_is_walked_by_path(root: Path, tmp_path: Path) -> None:
    make_tree(root, TREE)
    read: list[str] = []

    class Recording(FileSystem):
        def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
            read.append(os.path.relpath(path, root))
            return super().read_bytes(path, offset=offset, limit=limit)

    session = Workspace(root, tmp_path / "state-recording", fs=Recording()).session("s")
    plain = Workspace(root, tmp_path / "state-plain").session("s")
    assert session.glob("**").paths == plain.glob("**").paths
    assert sorted(set(read) & {".gitignore", "src/.gitignore"}) == [".gitignore", "src/.gitignore"]


def test_a_wrapped_port_lists_through_its_own_counted_scandir(root: Path, tmp_path: Path) -> None:
    from editspec.fault_injection import FaultyFileSystem

    make_tree(root, TREE)
    faulty = FaultyFileSystem(count="all")
    session = Workspace(root, tmp_path / "state-faulty", fs=faulty).session("s")
    plain = Workspace(root, tmp_path / "state-plain").session("s")
    faulty.arm()
    assert session.glob("**").paths == plain.glob("**").paths
    called = [record.name for record in faulty.log]
    assert called.count("scandir") == 3  # the root, src and src/deep; build and local ignored
    assert "read_bytes" in called
    assert not {"scandir_held", "read_bytes_at", "release_dir"} & set(called)


@needs_fd_listing
def test_the_wrapper_passes_handle_calls_to_its_port(tmp_path: Path) -> None:
    from editspec.fault_injection import FaultyFileSystem

    (tmp_path / "f").write_bytes(b"x")
    inner = FileSystem()
    _entries, handle = inner.scandir_held(str(tmp_path))
    assert handle is not None
    faulty = FaultyFileSystem(inner, count="all")
    assert faulty.read_bytes_at(handle, "f") == b"x"
    faulty.release_dir(handle)
    assert [(record.name, record.outcome) for record in faulty.log] == [
        ("read_bytes_at", "ok"),
        ("release_dir", "ok"),
    ]
    with pytest.raises(OSError):
        os.fstat(handle)


def test_the_inline_rules_keep_what_each_entry_test_keeps(root: Path, tmp_path: Path) -> None:
    """A directory of ASCII names under rules is decided inline; compared with directories
    whose entries ``excluded`` decides one by one (a non-ASCII name sends a directory
    there), and with the kinds the inline branch sorts out itself."""
    rules = "*.log\n!keep.log\nln*\n/pruned/\nskip*/\n"
    inline = {
        ".gitignore": rules,
        "a.log": "",
        "keep.log": "",
        "ln": Link("a.log"),
        "ln_kept_not": Link("a.log"),
        "link_kept": Link("a.log"),
        "pruned": {"x.py": ""},
        "skip_me": {"x.py": ""},
        "src": {"x.py": "", "y.log": ""},
        "other": {"z.py": ""},
    }
    make_tree(root / "inline", inline)
    make_tree(root / "per_entry", {**inline, "é": ""})
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "inline" / "pipe")
        os.mkfifo(root / "per_entry" / "pipe")
    workspace = Workspace(root, root / "inline" / ".state")
    (root / "inline" / ".state" / "x.py").write_text("")
    session = workspace.session("s")
    found = set(session.glob("**").paths)
    kept = {
        ".gitignore",
        "keep.log",
        "link_kept",
        "src",
        "src/x.py",
        "other",
        "other/z.py",
    }
    assert {path for path in found if path.startswith("inline/")} == {
        f"inline/{path}" for path in kept
    }
    assert {path for path in found if path.startswith("per_entry/")} == {
        f"per_entry/{path}" for path in kept | {"é"}
    }
    # A pattern with a literal prefix prunes the other directories in the inline branch.
    assert set(session.glob("inline/src/*.py").paths) == {"inline/src/x.py"}
    tree = SearchTree(workspace)
    held = _listing(tree, hold=True)
    assert held == _listing(SearchTree(workspace), hold=False)
    assert [path for path, *_ in held if path.startswith("inline")] == [
        "inline",
        "inline/other",
        "inline/src",
    ]


@needs_fd_listing
def test_a_held_listing_that_fails_after_the_open_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = FileSystem()
    opened: list[int] = []
    real_open = os.open

    def tracking_open(*args: Any, **kwargs: Any) -> int:
        fd = real_open(*args, **kwargs)
        opened.append(fd)
        return fd

    def failing_scandir(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(os, "open", tracking_open)
    monkeypatch.setattr(os, "scandir", failing_scandir)
    with pytest.raises(OSError) as caught:
        port.scandir_held(str(tmp_path))
    monkeypatch.undo()
    assert caught.value.errno == errno.EIO
    assert len(opened) == 1
    with pytest.raises(OSError):
        os.fstat(opened[0])  # closed again
