"""Delete and Move in the engine: the EXDEV steps, the quarantine, intents through a crash."""

from __future__ import annotations

import errno
import os
from pathlib import Path

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
