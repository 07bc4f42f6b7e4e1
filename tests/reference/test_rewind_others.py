"""Rewind of the directories and symlinks of a deleted or moved tree (``_rewind_others``,
``transactions/_extras``): bytes, types and link targets on disk, through crashes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from editspec.fault_injection import CrashAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import FileSystem, ToolError, Workspace


def _state(root: Path) -> dict[str, object]:
    """Every entry under ``root``: bytes for a file, "dir", or ("link", target)."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path))
            elif path.is_dir():
                found[relative] = "dir"
            else:
                found[relative] = path.read_bytes()
    return found


def _make_tree(root: Path, *, with_files: bool = True) -> None:
    (root / "pkg" / "empty").mkdir(parents=True)
    (root / "pkg" / "sub" / "deeper").mkdir(parents=True)
    if with_files:
        (root / "pkg" / "a.py").write_bytes(b"a\r\n")
        (root / "pkg" / "sub" / "b.py").write_bytes(b"b\n")
    os.symlink("a.py", root / "pkg" / "link.py")
    os.symlink("../nowhere", root / "pkg" / "sub" / "dangling")


def _delete_tree(workspace: Workspace, message_id: str = "m") -> None:
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    session.delete("pkg", kind="tree", manifest_sha256=digest, message_id=message_id)


@pytest.mark.parametrize("with_files", [True, False])
def test_rewind_of_a_tree_delete_restores_every_entry(tmp_path: Path, with_files: bool) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root, with_files=with_files)
    before = _state(root)
    workspace = Workspace(root, tmp_path / "state")
    _delete_tree(workspace)
    assert _state(root) == {}
    result = workspace.session("s").rewind("m")
    assert _state(root) == before
    actions = {item.path: item.action for item in result.restored}
    assert actions["pkg/empty"] == "recreated" and actions["pkg/link.py"] == "recreated"
    assert workspace.session("s").rewind("m").restored == ()  # a second rewind is a no-op


def test_rewind_of_a_tree_move_removes_the_destination_entirely(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root)
    before = _state(root)
    workspace = Workspace(root, tmp_path / "state")
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    session.move("pkg", "lib/pkg", manifest_sha256=digest, message_id="m")
    assert set(_state(root)) == {"lib"} | {f"lib/{path}" for path in before}
    session.rewind("m")
    # The directory the move created for its destination (lib) is the move's own
    # parent, not part of the tree: it stays, empty.
    assert _state(root) == {**before, "lib": "dir"}


def test_a_symlink_path_taken_since_is_a_conflict_and_nothing_changes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root)
    workspace = Workspace(root, tmp_path / "state")
    _delete_tree(workspace)
    (root / "pkg").mkdir()
    (root / "pkg" / "link.py").write_bytes(b"a file now\n")
    with pytest.raises(ToolError) as caught:
        workspace.session("s").rewind("m")
    assert caught.value.code == "CONFLICT"
    assert _state(root) == {"pkg": "dir", "pkg/link.py": b"a file now\n"}


def test_a_moved_directory_holding_a_new_file_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root)
    workspace = Workspace(root, tmp_path / "state")
    session = workspace.session("s")
    session.move(
        "pkg", "lib", manifest_sha256=session.manifest("pkg").manifest_sha256, message_id="m"
    )
    (root / "lib" / "empty" / "new.txt").write_bytes(b"saved meanwhile\n")
    after = _state(root)
    with pytest.raises(ToolError) as caught:
        session.rewind("m")
    assert caught.value.code == "CONFLICT"
    assert _state(root) == after


@pytest.mark.parametrize("with_files", [True, False])
def test_a_crash_at_any_step_of_the_rewind_recovers_to_before_or_after(
    tmp_path: Path, with_files: bool
) -> None:
    sides = {"before": 0, "after": 0}
    step = 0
    while True:
        step += 1
        base = tmp_path / f"run{step}"
        root = base / "root"
        root.mkdir(parents=True)
        _make_tree(root, with_files=with_files)
        whole = _state(root)
        fs = FaultyFileSystem()
        workspace = Workspace(root, base / "state", fs=fs)
        _delete_tree(workspace)
        fs.arm(CrashAt(step))
        try:
            workspace.session("s").rewind("m")
            crashed = False
        except SimulatedCrash:
            crashed = True
        restarted = Workspace(root, base / "state")  # its constructor recovers
        state = _state(root)
        if state == {}:
            sides["before"] += 1
            restarted.session("s").rewind("m")  # the rewind can still be made
            assert _state(root) == whole, f"crash at {step}: a later rewind is incomplete"
        else:
            assert state == whole, f"crash at {step}: part of the tree came back: {state}"
            sides["after"] += 1
            assert restarted.session("s").rewind("m").restored == ()
        quarantine = base / "state" / "quarantine"
        assert not [p for p in quarantine.rglob("r*.intent.json")], f"crash at {step}"
        if not crashed:
            break
    assert sides["before"] > 0 and sides["after"] > 1, sides


class _FailsOn(FileSystem):
    """Once ``armed``, every ``name`` call on ``path`` fails with ``error``."""

    def __init__(self, name: str, path: Path, error: int = errno.EACCES) -> None:
        super().__init__()
        self.name, self.path, self.error = name, os.path.realpath(path), error
        self.armed = False

    def _check(self, name: str, path: str) -> None:
        if self.armed and name == self.name and path == self.path:
            raise OSError(self.error, "injected", path)

    def listdir(self, path: str) -> list[str]:
        self._check("listdir", path)
        return super().listdir(path)

    def lstat(self, path: str) -> os.stat_result:
        self._check("lstat", path)
        return super().lstat(path)


def test_a_path_that_was_a_directory_and_then_a_file_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root, with_files=False)
    workspace = Workspace(root, tmp_path / "state")
    _delete_tree(workspace, "m")
    session = workspace.session("s")
    session.write("pkg/empty", "a file where a directory was\n", message_id="m2")
    after = _state(root)
    with pytest.raises(ToolError) as caught:
        session.rewind("m")
    assert caught.value.code == "CONFLICT"
    assert caught.value.details["path"] == "pkg/empty"
    assert "a file in one change and a directory or link in another" in caught.value.message
    assert _state(root) == after
    session.rewind("m2")  # each change alone still rewinds
    assert _state(root) == {"pkg": "dir"}


def test_a_file_where_the_deleted_tree_was_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root, with_files=False)
    workspace = Workspace(root, tmp_path / "state")
    _delete_tree(workspace)
    (root / "pkg").write_bytes(b"someone else's file\n")
    with pytest.raises(ToolError) as caught:
        workspace.session("s").rewind("m")
    assert caught.value.code == "CONFLICT"
    assert "changed after this session last changed it" in caught.value.message
    assert _state(root) == {"pkg": b"someone else's file\n"}


def test_a_parent_that_now_leads_elsewhere_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg" / "sub" / "deeper").mkdir(parents=True)
    workspace = Workspace(root, tmp_path / "state")
    session = workspace.session("s")
    digest = session.manifest("pkg/sub").manifest_sha256
    session.delete("pkg/sub", kind="tree", manifest_sha256=digest, message_id="m")
    (root / "pkg").rename(root / "other")
    os.symlink("other", root / "pkg")
    after = _state(root)
    with pytest.raises(ToolError) as caught:
        session.rewind("m")
    assert caught.value.code == "CONFLICT"
    assert "the path now leads to other" in caught.value.message
    assert _state(root) == after == {"other": "dir", "pkg": ("link", "other")}


def test_a_tree_moved_there_and_back_rewinds_to_no_change(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root)
    before = _state(root)
    workspace = Workspace(root, tmp_path / "state")
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    session.move("pkg", "lib", manifest_sha256=digest, message_id="m1")
    back = session.manifest("lib").manifest_sha256
    session.move("lib", "pkg", manifest_sha256=back, message_id="m2")
    assert _state(root) == before
    result = session.rewind("m1")
    assert result.restored == ()
    assert _state(root) == before
    assert session.rewind("m2").restored == ()  # undone with m1 already
    assert _state(root) == before


def test_a_directory_the_session_replaced_by_a_symlink_is_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root, with_files=False)
    workspace = Workspace(root, tmp_path / "state")
    session = workspace.session("s")
    _delete_tree(workspace, "m1")
    (root / "other").mkdir()
    os.symlink("elsewhere", root / "other" / "empty")
    digest = session.manifest("other").manifest_sha256
    session.move("other", "pkg", manifest_sha256=digest, message_id="m2")
    after = _state(root)
    with pytest.raises(ToolError) as caught:
        session.rewind("m1")  # pkg/empty: a directory before m1, a symlink after m2
    assert caught.value.code == "CONFLICT"
    assert caught.value.details["path"] == "pkg/empty"
    assert "something else is there now" in caught.value.message
    assert _state(root) == after


def test_a_directory_that_cannot_be_listed_stops_the_rewind_before_any_change(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root)
    before = _state(root)
    fs = _FailsOn("listdir", root / "lib")
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    session.move("pkg", "lib", manifest_sha256=digest, message_id="m")
    after = _state(root)
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        session.rewind("m")
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["errno"] == errno.EACCES
    assert caught.value.details["path"] == "lib"
    assert _state(root) == after
    fs.armed = False
    session.rewind("m")
    assert _state(root) == before


def test_an_entry_that_cannot_be_inspected_stops_the_rewind_before_any_change(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _make_tree(root)
    before = _state(root)
    fs = _FailsOn("lstat", root / "pkg" / "empty")
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    _delete_tree(workspace)
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        workspace.session("s").rewind("m")
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["path"] == "pkg/empty"
    assert _state(root) == {}
    fs.armed = False
    workspace.session("s").rewind("m")
    assert _state(root) == before
