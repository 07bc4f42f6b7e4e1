"""The directories and symlinks a rewind makes or removes (``transactions/_extras``):
made again after a failure, idempotently, and never from an intent that is off."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from editspec.reference import FileSystem, ToolError, Workspace


class _FailOnce(FileSystem):
    """The first ``name`` call on ``path`` fails with ``error``; ``armed`` starts it."""

    def __init__(self, name: str, path: str, error: int = errno.EIO) -> None:
        super().__init__()
        self.name, self.path, self.error = name, path, error
        self.armed = self.fired = False

    def _maybe_fail(self, name: str, path: str) -> None:
        if self.armed and not self.fired and name == self.name and path == self.path:
            self.fired = True
            raise OSError(self.error, "injected", path)

    def rmdir(self, path: str) -> None:
        self._maybe_fail("rmdir", path)
        super().rmdir(path)

    def unlink(self, path: str) -> None:
        self._maybe_fail("unlink", path)
        super().unlink(path)


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


def _moved_tree(tmp_path: Path, fs: FileSystem) -> tuple[Workspace, dict[str, object]]:
    """A tree of directories and symlinks only, moved from ``pkg`` to ``lib`` (message m):
    its rewind is made of extras alone."""
    root = tmp_path / "root"
    (root / "pkg" / "empty").mkdir(parents=True)
    (root / "pkg" / "sub" / "deeper").mkdir(parents=True)
    os.symlink("nowhere", root / "pkg" / "link")
    os.symlink("../up", root / "pkg" / "sub" / "dangling")
    before = _state(root)
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    session.move("pkg", "lib", manifest_sha256=digest, message_id="m")
    return workspace, before


def test_a_rewind_cut_off_before_its_last_removal_is_finished_by_recovery(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    fs = _FailOnce("rmdir", os.path.join(os.path.realpath(tmp_path), "root", "lib"))
    workspace, before = _moved_tree(tmp_path, fs)
    session = workspace.session("s")
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        session.rewind("m")
    assert caught.value.code == "IO_ERROR"
    assert "recover() finishes it" in caught.value.message
    # Everything up to the failure is made: the tree is back, only lib is left (empty).
    assert _state(root) == {**before, "lib": "dir"}
    with pytest.raises(ToolError) as refused:
        session.write("x.txt", "x")
    assert refused.value.code == "NEEDS_RECOVERY"
    # Recovery makes every extra again: what is there already, or gone already, is
    # skipped; the rest is made.
    workspace.recover()
    assert _state(root) == before
    assert not list(Path(workspace.state_dir).rglob("*.intent.json"))
    assert session.rewind("m").restored == ()  # the marker is confirmed: done once
    session.write("x.txt", "x")


def test_a_directory_filled_before_recovery_is_kept_with_what_it_holds(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fs = _FailOnce("unlink", os.path.join(os.path.realpath(tmp_path), "root", "lib", "link"))
    workspace, before = _moved_tree(tmp_path, fs)
    session = workspace.session("s")
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        session.rewind("m")
    assert caught.value.code == "IO_ERROR"
    # Another process saves a file into a directory the rewind is to remove.
    (root / "lib" / "empty" / "new.txt").write_bytes(b"saved meanwhile\n")
    workspace.recover()
    assert _state(root) == {
        **before,
        "lib": "dir",
        "lib/empty": "dir",
        "lib/empty/new.txt": b"saved meanwhile\n",
    }
    assert not list(Path(workspace.state_dir).rglob("*.intent.json"))
    session.write("x.txt", "x")  # the workspace is writable again


# -- restore intents recovery reads --------------------------------------------------------


def _plant_restore(workspace: Workspace, extras: object) -> None:
    intent_id = "r" + "5" * 32
    directory = Path(workspace.state_dir, "quarantine", workspace.root_hash)
    directory.mkdir(parents=True, exist_ok=True)
    body = {"id": intent_id, "op": "restore", "txn": "6" * 32, "journaled": False}
    (directory / f"{intent_id}.intent.json").write_text(json.dumps({**body, "extras": extras}))


MADE = {"action": "mkdir", "path": "made", "target": None}


def test_a_due_restore_intent_is_made_by_recovery(tmp_path: Path) -> None:
    """The positive control of the refusals below: the same intent, well formed."""
    root = tmp_path / "root"
    root.mkdir()
    workspace = Workspace(root, tmp_path / "state")
    _plant_restore(
        workspace, [MADE, {"action": "symlink", "path": "made/link", "target": "../elsewhere"}]
    )
    workspace.recover()
    assert _state(root) == {"made": "dir", "made/link": ("link", "../elsewhere")}
    assert not list(Path(workspace.state_dir).rglob("*.intent.json"))


@pytest.mark.parametrize(
    "extras",
    [
        {"made": MADE},  # not a list
        [MADE, {"action": "chmod", "path": "made", "target": None}],  # no such action
        [MADE, "mkdir made/two"],  # not an object
        [MADE, {"action": "symlink", "path": "made/link", "target": None}],  # no target
        [MADE, {"action": "mkdir", "path": "made/two", "target": "x"}],  # a target for a dir
        [MADE, {"action": "mkdir", "path": "../escaped", "target": None}],
        [MADE, {"action": "mkdir", "path": "/escaped", "target": None}],
        [MADE, {"action": "rmdir", "target": None}],  # no path
    ],
)
def test_a_restore_intent_that_is_off_is_dropped_whole(tmp_path: Path, extras: object) -> None:
    root = tmp_path / "root"
    root.mkdir()
    workspace = Workspace(root, tmp_path / "state")
    _plant_restore(workspace, extras)
    workspace.recover()
    assert _state(root) == {}  # not even the well-formed first extra is made
    assert not (tmp_path / "escaped").exists()
    assert not list(Path(workspace.state_dir).rglob("*.intent.json"))
