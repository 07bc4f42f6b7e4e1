"""Delete and Move in the engine: the EXDEV steps, the quarantine, intents through a crash."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from editspec.fault_injection import CrashAt, FailAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference.text._text import sha256_hex

TEXT = b"line one\r\nline two\n"


class _ExdevThenFail(FileSystem):
    """Every rename or link of ``source`` fails with EXDEV; the ``fail`` op at ``fail_at``
    fails EIO."""

    def __init__(self, source: str, fail: str = "", fail_at: int = 0) -> None:
        super().__init__()
        self.source, self.fail, self.fail_at, self.seen = source, fail, fail_at, 0
        self.crossed = False

    def rename(self, src: str, dst: str) -> None:
        if src == self.source:
            self.crossed = True
            raise OSError(errno.EXDEV, "cross-device link", src)
        super().rename(src, dst)

    def rename_noreplace(self, src: str, dst: str) -> None:
        if src == self.source:
            self.crossed = True
            raise OSError(errno.EXDEV, "cross-device link", src)
        super().rename_noreplace(src, dst)

    def link(self, src: str, dst: str) -> None:
        if src == self.source:
            self.crossed = True
            raise OSError(errno.EXDEV, "cross-device link", src)
        super().link(src, dst)

    def _maybe_fail(self, name: str, path: str) -> None:
        if name == self.fail and self.crossed:
            self.seen += 1
            if self.seen == self.fail_at:
                raise OSError(errno.EIO, "injected", path)

    def unlink(self, path: str) -> None:
        if path == self.source:
            self._maybe_fail("unlink", path)
        super().unlink(path)

    def fsync(self, fd: int) -> None:
        self._maybe_fail("fsync", str(fd))
        super().fsync(fd)


def _workspace(tmp_path: Path, fs: FileSystem | None = None) -> Workspace:
    (tmp_path / "root").mkdir(exist_ok=True)
    return Workspace(tmp_path / "root", tmp_path / "state", fs=fs)


def test_exdev_move_reports_every_step(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(TEXT)
    fs = _ExdevThenFail(os.path.realpath(root / "a.txt"))
    session = _workspace(tmp_path, fs).session("s")
    result = session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    assert (root / "b.txt").read_bytes() == TEXT
    assert not (root / "a.txt").exists()
    assert result.atomic is False
    assert [(s.step, s.outcome) for s in result.steps] == [
        ("link", "failed: EXDEV"),
        ("copy", "done"),
        ("fsync", "done"),
        ("verify", "done"),
        ("delete_source", "done"),
    ]
    assert any("not by one atomic rename" in warning for warning in result.warnings)
    assert sorted(os.listdir(root)) == ["b.txt"]


@pytest.mark.parametrize(
    ("fail", "completed", "pending"),
    [
        ("fsync", ["link: EXDEV", "copy"], ["fsync", "verify", "delete_source"]),
        ("unlink", ["link: EXDEV", "copy", "fsync", "verify"], ["delete_source"]),
    ],
)
def test_exdev_failure_midway_lists_completed_and_pending(
    tmp_path: Path, fail: str, completed: list[str], pending: list[str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(TEXT)
    fs = _ExdevThenFail(os.path.realpath(root / "a.txt"), fail=fail, fail_at=1)
    workspace = _workspace(tmp_path, fs)
    fs.seen = 0  # the workspace's own setup is not counted
    session = workspace.session("s")
    with pytest.raises(ToolError) as caught:
        session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["completed"] == completed
    assert caught.value.details["pending"] == pending
    assert caught.value.details["rolled_back"] is True
    # Nothing changed: the source keeps its bytes and no copy or temp file is left.
    assert sorted(os.listdir(root)) == ["a.txt"]
    assert (root / "a.txt").read_bytes() == TEXT


def test_directory_move_across_file_systems_is_unsupported(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "x").write_bytes(b"x")
    fs = _ExdevThenFail(os.path.realpath(root / "pkg"))
    session = _workspace(tmp_path, fs).session("s")
    digest = session.manifest("pkg").manifest_sha256
    with pytest.raises(ToolError) as caught:
        session.move("pkg", "lib", manifest_sha256=digest)
    assert caught.value.code == "UNSUPPORTED"
    assert (root / "pkg" / "x").read_bytes() == b"x"
    assert not (root / "lib").exists()


def test_tree_delete_quarantines_with_one_rename(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a").write_bytes(b"a")
    (root / "pkg" / "sub" / "b").write_bytes(b"b")
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    digest = session.manifest("pkg").manifest_sha256
    fs.arm()
    result = session.delete("pkg", kind="tree", manifest_sha256=digest)
    renames = [op for op in fs.log if op.name == "rename" and op.paths[0].endswith("/pkg")]
    assert len(renames) == 1
    assert result.quarantine is not None
    assert Path(result.quarantine, "sub", "b").read_bytes() == b"b"
    assert [item.path for item in result.items] == ["a", "sub", "sub/b"]
    assert not (root / "pkg").exists()


def test_tree_delete_without_quarantine_falls_back_to_the_journal(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "sub" / "b").write_bytes(b"b")
    fs = _ExdevThenFail(os.path.realpath(root / "pkg"))
    session = _workspace(tmp_path, fs).session("s")
    digest = session.manifest("pkg").manifest_sha256
    result = session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert result.quarantine is None
    assert not (root / "pkg").exists()
    assert os.listdir(root) == []
    assert result.restore_ref is not None
    session.rewind(result.restore_ref)
    assert (root / "pkg" / "sub" / "b").read_bytes() == b"b"


@pytest.mark.parametrize("op", ["delete", "move"])
def test_a_crash_around_the_rename_keeps_the_snapshot_consistent(tmp_path: Path, op: str) -> None:
    """Every crash point: recovery confirms the snapshot iff the rename happened."""
    root = tmp_path / "root"
    root.mkdir()
    steps = 0
    while True:
        steps += 1
        for name in os.listdir(root):
            path = root / name
            if path.is_dir():
                for child in path.iterdir():
                    child.unlink()
                path.rmdir()
            else:
                path.unlink()
        (root / "pkg").mkdir()
        (root / "pkg" / "f").write_bytes(TEXT)
        fs = FaultyFileSystem()
        workspace = Workspace(root, tmp_path / f"state{steps}", fs=fs)
        session = workspace.session("s")
        digest = session.manifest("pkg").manifest_sha256
        fs.arm(CrashAt(steps))
        try:
            if op == "delete":
                session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m")
            else:
                session.move("pkg", "lib", manifest_sha256=digest, message_id="m")
            crashed = False
        except SimulatedCrash:
            crashed = True
        restarted = Workspace(root, tmp_path / f"state{steps}")
        again = restarted.session("s")
        moved = not (root / "pkg").exists()
        if moved:
            again.rewind("m")  # the snapshot is there exactly when the change is
            assert (root / "pkg" / "f").read_bytes() == TEXT
        else:
            assert (root / "pkg" / "f").read_bytes() == TEXT
            with pytest.raises(ToolError) as caught:
                again.rewind("m")
            assert caught.value.code == "NOT_FOUND"
        quarantine = tmp_path / f"state{steps}" / "quarantine" / restarted.root_hash
        assert (
            not [n for n in os.listdir(quarantine) if "intent" in n]
            if quarantine.exists()
            else True
        )
        if not crashed:
            break
    assert steps > 3


def test_exdev_injected_through_the_fault_plan(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(TEXT)
    fs = FaultyFileSystem()
    session = _workspace(tmp_path, fs).session("s")
    (root / "probe").write_bytes(b"p")
    session.move("probe", "probe1", expected_sha256=sha256_hex(b"p"))  # state dirs exist
    fs.arm()
    session.move("probe1", "probe2", expected_sha256=sha256_hex(b"p"))
    index = next(op.index for op in fs.log if op.name == "link" and op.paths[1].endswith("probe2"))
    fs.arm(FailAt(index, errno.EXDEV))
    result = session.move("a.txt", "b.txt", expected_sha256=sha256_hex(TEXT))
    assert result.atomic is False
    assert (root / "b.txt").read_bytes() == TEXT and not (root / "a.txt").exists()


class _AcrossWithFailingSyncs(_ExdevThenFail):
    """EXDEV for the source, and the directory fsyncs numbered in ``failing`` (counted
    from 1 after the EXDEV) fail with EIO."""

    def __init__(self, source: str, failing: set[int]) -> None:
        super().__init__(source)
        self.failing, self.syncs = failing, 0
        self.failed: list[str] = []
        self.synced: list[str] = []

    def fsync_dir(self, path: str) -> None:
        if self.crossed:
            self.syncs += 1
            self.synced.append(path)
            if self.syncs in self.failing:
                self.failed.append(path)
                raise OSError(errno.EIO, "injected", path)
        super().fsync_dir(path)


def _across(tmp_path: Path, failing: set[int]) -> tuple[Path, Workspace, _AcrossWithFailingSyncs]:
    root = tmp_path / "root"
    (root / "old").mkdir(parents=True)
    (root / "old" / "a.txt").write_bytes(TEXT)
    fs = _AcrossWithFailingSyncs(os.path.realpath(root / "old" / "a.txt"), failing)
    return root, _workspace(tmp_path, fs), fs


def _sync_count_of_the_source_removal(tmp_path: Path) -> int:
    """Which directory fsync after the EXDEV makes the source's removal durable."""
    root, workspace, fs = _across(tmp_path / "probe", set())
    workspace.session("s").move("old/a.txt", "new/a.txt", expected_sha256=sha256_hex(TEXT))
    assert not (root / "old" / "a.txt").exists()
    source_dir = os.path.realpath(root / "old")
    return len(fs.synced) - fs.synced[::-1].index(source_dir)  # its last fsync, from 1


def test_exdev_move_whose_source_removal_cannot_be_synced_is_undone(tmp_path: Path) -> None:
    """The source's unlink may come back after a power cut: the move is undone by new,
    synced steps and the call fails with IO_ERROR, nothing changed (no copy left)."""
    last = _sync_count_of_the_source_removal(tmp_path)
    root, workspace, fs = _across(tmp_path, {last})
    with pytest.raises(ToolError) as caught:
        workspace.session("s").move(
            "old/a.txt", "new/a.txt", expected_sha256=sha256_hex(TEXT), message_id="m"
        )
    assert fs.failed == [os.path.realpath(root / "old")]
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["rolled_back"] is True
    assert "undone" in caught.value.message
    assert (root / "old" / "a.txt").read_bytes() == TEXT
    assert sorted(os.listdir(root / "old")) == ["a.txt"]
    assert not (root / "new").exists()
    with pytest.raises(ToolError) as nothing:
        workspace.session("s").rewind("m")
    assert nothing.value.code == "NOT_FOUND"  # no snapshot of a move that did not happen


def test_exdev_move_whose_undo_cannot_be_synced_needs_recovery(tmp_path: Path) -> None:
    """The undo's own fsync fails too: NEEDS_RECOVERY, never success; recovery then
    settles by what the disk holds (the source is back, its copy goes: all-before)."""
    last = _sync_count_of_the_source_removal(tmp_path)
    root, workspace, fs = _across(tmp_path, {last, last + 1})
    session = workspace.session("s")
    with pytest.raises(ToolError) as caught:
        session.move("old/a.txt", "new/a.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "NEEDS_RECOVERY"
    assert fs.failed == [os.path.realpath(root / "old")] * 2  # the removal, then the undo
    assert caught.value.details["rolled_back"] is False
    assert (root / "old" / "a.txt").read_bytes() == TEXT  # made again, not yet synced
    assert (root / "new" / "a.txt").read_bytes() == TEXT
    with pytest.raises(ToolError) as refused:
        session.write("other.txt", "x")
    assert refused.value.code == "NEEDS_RECOVERY"
    workspace.recover()
    assert (root / "old" / "a.txt").read_bytes() == TEXT
    assert not (root / "new" / "a.txt").exists()
    assert sorted(os.listdir(root / "old")) == ["a.txt"]


def test_exdev_copy_whose_removal_cannot_be_synced_needs_recovery(tmp_path: Path) -> None:
    """A failure after the copy was linked into place removes the copy; when that
    removal cannot be synced the copy may come back: NEEDS_RECOVERY, and recovery
    removes it (the source keeps its bytes)."""
    root = tmp_path / "root"
    (root / "old").mkdir(parents=True)
    (root / "old" / "a.txt").write_bytes(TEXT)
    source = os.path.realpath(root / "old" / "a.txt")

    class _UnlinkFailsThenSync(_AcrossWithFailingSyncs):
        """The source's unlink fails; so does the next directory fsync (the copy's)."""

        def unlink(self, path: str) -> None:
            if path == source:
                self.failing = {self.syncs + 1}
                raise OSError(errno.EIO, "injected", path)
            super().unlink(path)

    fs = _UnlinkFailsThenSync(source, set())
    workspace = _workspace(tmp_path, fs)
    with pytest.raises(ToolError) as caught:
        workspace.session("s").move("old/a.txt", "new/a.txt", expected_sha256=sha256_hex(TEXT))
    assert caught.value.code == "NEEDS_RECOVERY", caught.value.message
    assert fs.failed == [os.path.realpath(root / "new")]
    assert caught.value.details["pending"] == ["delete_source"]
    workspace.recover()
    assert (root / "old" / "a.txt").read_bytes() == TEXT
    assert not (root / "new" / "a.txt").exists()


def test_exdev_move_cut_off_at_any_point_recovers_to_before_or_after(tmp_path: Path) -> None:
    """Killed at each operation of a move across file systems, a fresh workspace finds
    the source alone or the destination alone, never both, and no copy."""
    points = 0
    while True:
        points += 1
        base = tmp_path / f"run{points}"
        root = base / "root"
        (root / "old").mkdir(parents=True)
        (root / "old" / "a.txt").write_bytes(TEXT)
        inner = _ExdevThenFail(os.path.realpath(root / "old" / "a.txt"))
        fs = FaultyFileSystem(inner)
        workspace = Workspace(root, base / "state", fs=fs)
        session = workspace.session("s")
        fs.arm(CrashAt(points))
        try:
            session.move("old/a.txt", "new/a.txt", expected_sha256=sha256_hex(TEXT))
            finished = True
        except SimulatedCrash:
            finished = False
        Workspace(root, base / "state", fs=_ExdevThenFail("")).recover()
        listing = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
        assert listing in (["old/a.txt"], ["new/a.txt"]), (points, listing)
        assert (root / listing[0]).read_bytes() == TEXT
        if finished:
            break
    assert points > 8


class _TreeAcross(_ExdevThenFail):
    """The tree cannot be renamed into the quarantine (EXDEV). Once the files'
    transaction is done and the first leftover of type ``after`` (``dir`` or
    ``symlink``) is removed, the directory fsyncs of ``failing`` paths fail with EIO
    (each as often as listed)."""

    def __init__(self, source: str, failing: list[str], after: str = "dir") -> None:
        super().__init__(source)
        self.failing, self.after = list(failing), after
        self.removing = False
        self.failed: list[str] = []

    def rmdir(self, path: str) -> None:
        super().rmdir(path)
        self.removing = self.removing or self.after == "dir"

    def unlink(self, path: str) -> None:
        link = os.path.islink(path)
        super().unlink(path)
        self.removing = self.removing or (link and self.after == "symlink")

    def fsync_dir(self, path: str) -> None:
        if self.removing and path in self.failing:
            self.failing.remove(path)
            self.failed.append(path)
            raise OSError(errno.EIO, "injected", path)
        super().fsync_dir(path)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "sub" / "b").write_bytes(b"b")
    (root / "pkg" / "a").write_bytes(b"a")
    (root / "pkg" / "link").symlink_to("a")
    return root


def _delete_across(
    tmp_path: Path, failing: list[str], after: str = "dir"
) -> tuple[Path, Any, str, _TreeAcross]:
    root = _tree(tmp_path)
    fs = _TreeAcross(os.path.realpath(root / "pkg"), failing, after)
    session = _workspace(tmp_path, fs).session("s")
    return root, session, session.manifest("pkg").manifest_sha256, fs


def test_fallback_tree_delete_makes_again_what_it_could_not_sync(tmp_path: Path) -> None:
    """The sync after removing ``pkg/sub`` fails: ``sub`` is made again and synced, and the
    result names it as not removed; its parent stays too (it is not empty)."""
    pkg = os.path.realpath(tmp_path / "root" / "pkg")
    root, session, digest, fs = _delete_across(tmp_path, [pkg])
    result = session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert fs.failed == [pkg]
    assert result.quarantine is None
    assert (root / "pkg" / "sub").is_dir()
    assert not (root / "pkg" / "sub" / "b").exists() and not (root / "pkg" / "a").exists()
    made_again = "pkg/sub was not removed: its removal could not be synced"
    assert any(made_again in warning for warning in result.warnings)
    assert any(warning.startswith("pkg was not removed") for warning in result.warnings)


def test_fallback_tree_delete_makes_a_link_again(tmp_path: Path) -> None:
    """The link's removal cannot be synced: the link is made again, with its target."""
    pkg = os.path.realpath(tmp_path / "root" / "pkg")
    root, session, digest, fs = _delete_across(tmp_path, [pkg], after="symlink")
    result = session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert fs.failed == [pkg]
    assert os.readlink(root / "pkg" / "link") == "a"
    assert any(warning.startswith("pkg/link was not removed") for warning in result.warnings)
    assert not (root / "pkg" / "sub").exists()


def test_fallback_tree_delete_that_cannot_undo_needs_recovery(tmp_path: Path) -> None:
    """The removal's sync and its undo's both fail: NEEDS_RECOVERY, never success."""
    pkg = os.path.realpath(tmp_path / "root" / "pkg")
    root, session, digest, fs = _delete_across(tmp_path, [pkg, pkg])
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert caught.value.code == "NEEDS_RECOVERY"
    assert caught.value.details["restore_ref"] is not None
    assert fs.failed == [pkg, pkg]
    assert not (root / "pkg" / "a").exists()
    with pytest.raises(ToolError) as refused:
        session.write("other.txt", "x")
    assert refused.value.code == "NEEDS_RECOVERY"


def test_fallback_tree_delete_names_what_it_could_not_remove(tmp_path: Path) -> None:
    """A directory that cannot be removed (another writer's file in it) is named."""
    root, session, digest, fs = _delete_across(tmp_path, [])
    real_rmdir = fs.rmdir

    def rmdir(path: str) -> None:
        if path.endswith(os.sep + "sub"):
            (root / "pkg" / "sub" / "late").write_bytes(b"late")  # a writer outside
        real_rmdir(path)

    fs.rmdir = rmdir  # type: ignore[method-assign]
    result = session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert (root / "pkg" / "sub" / "late").read_bytes() == b"late"
    assert any(warning.startswith("pkg/sub was not removed") for warning in result.warnings)
    assert any(warning.startswith("pkg was not removed") for warning in result.warnings)


class _Hooked(FileSystem):
    """Runs ``hooks[name](path)`` before the port call ``name`` (it may raise or change
    the disk, as another process would)."""

    def __init__(self) -> None:
        super().__init__()
        self.hooks: dict[str, Any] = {}

    def _hook(self, name: str, path: str) -> None:
        hook = self.hooks.get(name)
        if hook is not None:
            hook(path)

    def listdir(self, path: str) -> list[str]:
        self._hook("listdir", path)
        return super().listdir(path)

    def lstat(self, path: str) -> os.stat_result:
        self._hook("lstat", path)
        return super().lstat(path)

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        self._hook("read_bytes", path)
        return super().read_bytes(path, offset=offset, limit=limit)

    def rmdir(self, path: str) -> None:
        self._hook("rmdir", path)
        super().rmdir(path)

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        self._hook("mkdir", path)
        super().mkdir(path, mode)

    def rename(self, src: str, dst: str) -> None:
        self._hook("rename", src)
        super().rename(src, dst)

    def fsync_dir(self, path: str) -> None:
        self._hook("fsync_dir", path)
        super().fsync_dir(path)


def _fail_on(path: str, code: int = errno.EIO, times: int = 1) -> Any:
    left = [times]

    def hook(seen: str) -> None:
        if seen == path and left[0] > 0:
            left[0] -= 1
            raise OSError(code, os.strerror(code), seen)

    return hook


def _hooked(tmp_path: Path) -> tuple[Path, _Hooked, Any]:
    root = _tree(tmp_path)
    (root / "empty").mkdir()
    fs = _Hooked()
    return root, fs, _workspace(tmp_path, fs).session("s")


@pytest.mark.parametrize(
    ("path", "kind", "code"),
    [
        ("missing", "file", "NOT_FOUND"),
        (".", "tree", "INVALID_ARGUMENT"),
        ("pkg/link", "file", "UNSUPPORTED"),
        ("pkg", "file", "IS_A_DIRECTORY"),
        ("pkg", "empty_dir", "INVALID_ARGUMENT"),
    ],
)
def test_delete_refuses_what_it_must_not_remove(
    tmp_path: Path, path: str, kind: str, code: str
) -> None:
    root, _fs, session = _hooked(tmp_path)
    with pytest.raises(ToolError) as caught:
        session.delete(path, kind=kind)
    assert caught.value.code == code, caught.value.message
    assert (root / "pkg" / "a").read_bytes() == b"a" and os.readlink(root / "pkg" / "link") == "a"


def test_delete_refuses_a_tree_holding_the_state_directory(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "f").write_bytes(b"f")
    session = Workspace(root, root / "tools" / "state").session("s")
    digest = session.manifest("tools").manifest_sha256
    with pytest.raises(ToolError) as caught:
        session.delete("tools", kind="tree", manifest_sha256=digest)
    assert caught.value.code == "INVALID_ARGUMENT"
    assert "state directory" in caught.value.message
    assert (root / "tools" / "f").read_bytes() == b"f"


def test_delete_reports_the_errors_of_reading_what_it_removes(tmp_path: Path) -> None:
    root, fs, session = _hooked(tmp_path)
    fs.hooks["listdir"] = _fail_on(os.path.realpath(root / "empty"), errno.EACCES)
    with pytest.raises(ToolError) as listing:
        session.delete("empty", kind="empty_dir")
    assert listing.value.code == "IO_ERROR"
    assert listing.value.details["errno"] == errno.EACCES
    session.read("pkg/a")
    fs.hooks["read_bytes"] = _fail_on(os.path.realpath(root / "pkg" / "a"))
    with pytest.raises(ToolError) as reading:
        session.delete("pkg/a", kind="file")
    assert reading.value.code == "IO_ERROR"
    fs.hooks["lstat"] = _fail_on(os.path.realpath(root / "pkg" / "link"))
    with pytest.raises(ToolError) as inspecting:
        session.delete("pkg/link", kind="file")
    assert inspecting.value.code == "IO_ERROR"
    assert (root / "pkg" / "a").read_bytes() == b"a" and (root / "empty").is_dir()


@pytest.mark.parametrize(("code", "answer"), [(errno.ENOTEMPTY, "STALE"), (errno.EIO, "IO_ERROR")])
def test_empty_directory_delete_that_cannot_remove_it(
    tmp_path: Path, code: int, answer: str
) -> None:
    root, fs, session = _hooked(tmp_path)
    fs.hooks["rmdir"] = _fail_on(os.path.realpath(root / "empty"), code)
    with pytest.raises(ToolError) as caught:
        session.delete("empty", kind="empty_dir")
    assert caught.value.code == answer
    assert (root / "empty").is_dir()


def test_empty_directory_delete_that_cannot_sync_nor_undo_needs_recovery(tmp_path: Path) -> None:
    root, fs, session = _hooked(tmp_path)
    fs.hooks["fsync_dir"] = _fail_on(os.path.realpath(root))
    fs.hooks["mkdir"] = _fail_on(os.path.realpath(root / "empty"))
    with pytest.raises(ToolError) as caught:
        session.delete("empty", kind="empty_dir")
    assert caught.value.code == "NEEDS_RECOVERY"
    assert "after a power loss it may exist" in caught.value.message
    with pytest.raises(ToolError) as refused:
        session.write("other.txt", "x")
    assert refused.value.code == "NEEDS_RECOVERY"


def test_tree_delete_whose_rename_fails_changes_nothing(tmp_path: Path) -> None:
    root, fs, session = _hooked(tmp_path)
    digest = session.manifest("pkg").manifest_sha256
    fs.hooks["rename"] = _fail_on(os.path.realpath(root / "pkg"))
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m")
    assert caught.value.code == "IO_ERROR"
    assert (root / "pkg" / "sub" / "b").read_bytes() == b"b"
    with pytest.raises(ToolError) as nothing:
        session.rewind("m")
    assert nothing.value.code == "NOT_FOUND"


def test_tree_delete_whose_rename_cannot_be_synced_nor_undone_needs_recovery(
    tmp_path: Path,
) -> None:
    root, fs, session = _hooked(tmp_path)
    digest = session.manifest("pkg").manifest_sha256
    fs.hooks["fsync_dir"] = _fail_on(os.path.realpath(root), times=2)
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert caught.value.code == "NEEDS_RECOVERY"
    fs.hooks.clear()
    session.workspace.recover()  # the intent decides by what the disk holds
    assert (root / "pkg" / "sub" / "b").read_bytes() == b"b"  # the undo's rename stood


def _slip_in(root: Path, fs: _Hooked, name: str) -> None:
    """Just before the tree's rename, a writer outside the engine adds ``name``."""
    target = os.path.realpath(root / "pkg")

    def hook(path: str) -> None:
        if path == target:
            fs.hooks.pop("rename")
            (root / "pkg" / name).write_bytes(b"late")

    fs.hooks["rename"] = hook


def test_tree_delete_puts_back_a_tree_that_changed_before_its_rename(tmp_path: Path) -> None:
    root, fs, session = _hooked(tmp_path)
    digest = session.manifest("pkg").manifest_sha256
    _slip_in(root, fs, "late")
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m")
    assert caught.value.code == "STALE"
    assert (root / "pkg" / "late").read_bytes() == b"late"
    assert (root / "pkg" / "sub" / "b").read_bytes() == b"b"


def test_tree_delete_keeps_a_changed_tree_when_its_name_is_taken(tmp_path: Path) -> None:
    root, fs, session = _hooked(tmp_path)
    digest = session.manifest("pkg").manifest_sha256
    _slip_in(root, fs, "late")
    real_scan = fs.hooks

    def take_name(path: str) -> None:  # once the tree has left, its name is taken
        if path == os.path.realpath(root / "pkg") and not (root / "pkg").exists():
            (root / "pkg").mkdir()

    real_scan["lstat"] = take_name
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert caught.value.code == "CONFLICT"
    kept = Path(caught.value.details["quarantine"])
    assert (kept / "late").read_bytes() == b"late" and (kept / "sub" / "b").read_bytes() == b"b"


def test_move_refuses_a_destination_inside_its_source_and_what_is_not_a_file(
    tmp_path: Path,
) -> None:
    root, fs, session = _hooked(tmp_path)
    digest = session.manifest("pkg").manifest_sha256
    with pytest.raises(ToolError) as inside:
        session.move("pkg", "pkg/sub/pkg", manifest_sha256=digest)
    assert inside.value.code == "INVALID_ARGUMENT"
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError) as fifo:
        session.move("pipe", "pipe2")
    assert fifo.value.code == "INVALID_ARGUMENT"
    session.read("pkg/a")
    fs.hooks["lstat"] = _fail_on(os.path.realpath(root) + os.sep + "b")
    with pytest.raises(ToolError) as inspecting:
        session.move("pkg/a", "b", expected_sha256=sha256_hex(b"a"))
    assert inspecting.value.code == "IO_ERROR"
    assert (root / "pkg" / "a").read_bytes() == b"a"
    assert (root / "pkg" / "sub" / "b").read_bytes() == b"b" and (root / "pipe").exists()
    assert not (root / "b").exists() and not (root / "pipe2").exists()
