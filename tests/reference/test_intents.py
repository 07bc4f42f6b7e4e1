"""Intents of a Delete or Move (``transactions/_intents``): a rename that cannot be made
durable, and what recovery does with every intent it finds, trusted or not."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference.text._text import sha256_hex

TEXT = b"moved bytes\r\nline two\n"
THEIRS = b"saved by another process\n"


class _SyncFailsAfterCommit(FileSystem):
    """Once ``source`` loses its name (a rename from it, or its unlink), the next
    ``failures`` directory fsyncs fail with EIO; ``on_commit`` runs right after that
    step, as another process acting between two system calls of the engine."""

    def __init__(
        self, source: str, failures: int, on_commit: Callable[[], None] | None = None
    ) -> None:
        super().__init__()
        self.source, self.failures, self.on_commit = source, failures, on_commit
        self.committed = False

    def _commit(self) -> None:
        if not self.committed:
            self.committed = True
            if self.on_commit is not None:
                self.on_commit()

    def rename(self, src: str, dst: str) -> None:
        super().rename(src, dst)
        if src == self.source:
            self._commit()

    def unlink(self, path: str) -> None:
        super().unlink(path)
        if path == self.source:
            self._commit()

    def fsync_dir(self, path: str) -> None:
        if self.committed and self.failures > 0:
            self.failures -= 1
            raise OSError(errno.EIO, "injected", path)
        super().fsync_dir(path)


def _quarantine(workspace: Workspace) -> Path:
    return Path(workspace.state_dir, "quarantine", workspace.root_hash)


def _intent_names(workspace: Workspace) -> list[str]:
    directory = _quarantine(workspace)
    return sorted(n for n in os.listdir(directory) if "intent" in n) if directory.exists() else []


def _tree(root: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.txt").write_bytes(TEXT)
    (root / "pkg" / "sub" / "b.txt").write_bytes(b"b\n")


def test_an_undo_that_cannot_be_synced_needs_recovery_which_keeps_the_tree(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    _tree(root)
    fs = _SyncFailsAfterCommit(os.path.realpath(root / "pkg"), failures=2)
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m")
    assert caught.value.code == "NEEDS_RECOVERY"
    assert caught.value.details["errno"] == errno.EIO
    assert "neither could its undo (injected)" in caught.value.message
    # The undo rename did happen; only its sync failed. The intent stays for recovery.
    assert (root / "pkg" / "a.txt").read_bytes() == TEXT
    assert (root / "pkg" / "sub" / "b.txt").read_bytes() == b"b\n"
    assert len(_intent_names(workspace)) == 1
    with pytest.raises(ToolError) as refused:
        session.write("other.txt", "x")
    assert refused.value.code == "NEEDS_RECOVERY"
    assert not (root / "other.txt").exists()
    workspace.recover()
    assert _intent_names(workspace) == []
    assert sorted(p.name for p in _quarantine(workspace).iterdir()) == []
    with pytest.raises(ToolError) as rewound:
        session.rewind("m")  # the delete did not stand: its snapshot is discarded
    assert rewound.value.code == "NOT_FOUND"
    session.write("other.txt", "x")
    assert (root / "pkg" / "a.txt").read_bytes() == TEXT


def test_a_name_taken_right_after_the_delete_keeps_the_delete_rewindable(
    tmp_path: Path,
) -> None:
    """Another process makes a new ``pkg`` between the commit rename and its sync: the
    undo cannot put the tree back, and recovery must confirm the delete's snapshot (the
    tree did leave), not discard it because something is at the old name again."""
    root = tmp_path / "root"
    _tree(root)
    fs = _SyncFailsAfterCommit(
        os.path.realpath(root / "pkg"), failures=1, on_commit=lambda: (root / "pkg").mkdir()
    )
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    session = workspace.session("s")
    digest = session.manifest("pkg").manifest_sha256
    with pytest.raises(ToolError) as caught:
        session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m")
    assert caught.value.code == "NEEDS_RECOVERY"
    assert "its old name is taken again" in caught.value.message
    assert os.listdir(root / "pkg") == []  # theirs, untouched
    workspace.recover()
    assert _intent_names(workspace) == []
    (quarantined,) = _quarantine(workspace).iterdir()
    assert (quarantined / "a.txt").read_bytes() == TEXT
    # While their directory is there the rewind refuses; once it goes, the tree is back.
    with pytest.raises(ToolError) as conflict:
        session.rewind("m")
    assert conflict.value.code == "CONFLICT"
    assert os.listdir(root / "pkg") == []
    (root / "pkg").rmdir()
    session.rewind("m")
    assert (root / "pkg" / "a.txt").read_bytes() == TEXT
    assert (root / "pkg" / "sub" / "b.txt").read_bytes() == b"b\n"


def test_a_file_moved_while_its_old_name_is_taken_again_stays_moved(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(TEXT)
    fs = _SyncFailsAfterCommit(
        os.path.realpath(root / "a.txt"),
        failures=1,
        on_commit=lambda: (root / "a.txt").write_bytes(THEIRS),
    )
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    session = workspace.session("s")
    with pytest.raises(ToolError) as caught:
        session.move("a.txt", "new/b.txt", expected_sha256=sha256_hex(TEXT), message_id="m")
    assert caught.value.code == "NEEDS_RECOVERY"
    workspace.recover()
    # Two different files now, not one under two names: recovery removes neither, nor
    # the directory the move made (it holds the moved file).
    assert (root / "a.txt").read_bytes() == THEIRS
    assert (root / "new" / "b.txt").read_bytes() == TEXT
    assert _intent_names(workspace) == []
    with pytest.raises(ToolError) as rewound:
        session.rewind("m")
    assert rewound.value.code == "NOT_FOUND"


# -- intents recovery does not trust -----------------------------------------------------


def _outside(tmp_path: Path) -> Path:
    """Two names of one file and an empty directory, outside the workspace root."""
    outside = tmp_path / "outside"
    (outside / "empty").mkdir(parents=True)
    (outside / "a").write_bytes(THEIRS)
    os.link(outside / "a", outside / "b")
    return outside


def _plant(workspace: Workspace, intent_id: str, body: bytes) -> None:
    directory = _quarantine(workspace)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{intent_id}.intent.json").write_bytes(body)


def _intent(**fields: object) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("source", "dest", "created"),
    [
        ("../outside/a", "../outside/b", "../outside/empty"),  # escapes by ..
        ("{outside}/a", "{outside}/b", "{outside}/empty"),  # absolute
        ("../outside/a", "inside.txt", "../outside/empty"),  # only the source escapes
        ("inside.txt", "../outside/b", "{outside}/empty"),  # only the destination escapes
    ],
)
def test_a_move_intent_naming_paths_outside_the_root_touches_nothing(
    tmp_path: Path, source: str, dest: str, created: str
) -> None:
    outside = _outside(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_bytes(TEXT)
    workspace = Workspace(root, tmp_path / "state")
    names = {key: value.format(outside=outside) for key, value in [("s", source), ("d", dest)]}
    _plant(
        workspace,
        "m" + "1" * 32,
        _intent(
            id="m" + "1" * 32,
            op="move",
            source=names["s"],
            dest=names["d"],
            dirs=[created.format(outside=outside)],
        ),
    )
    workspace.recover()
    assert _intent_names(workspace) == []
    # Trusted, the intent would unlink "b" (a second name of "a") or remove "empty".
    assert (outside / "b").read_bytes() == THEIRS
    assert os.stat(outside / "a").st_nlink == 2
    assert (outside / "empty").is_dir()
    assert (root / "inside.txt").read_bytes() == TEXT


def test_a_delete_intent_naming_a_source_outside_the_root_confirms_nothing(
    tmp_path: Path,
) -> None:
    _outside(tmp_path)
    root = tmp_path / "root"
    _tree(root)
    workspace = Workspace(root, tmp_path / "state")
    session = workspace.session("s")
    intent_id = "q" + "2" * 32
    _plant(
        workspace,
        intent_id,
        _intent(id=intent_id, op="delete", source="../outside", dest="<quarantine>", dirs=[]),
    )
    (_quarantine(workspace) / intent_id).mkdir()
    workspace.recover()
    assert _intent_names(workspace) == []
    assert (tmp_path / "outside" / "a").read_bytes() == THEIRS
    # The workspace works as before: a real delete and its rewind.
    digest = session.manifest("pkg").manifest_sha256
    session.delete("pkg", kind="tree", manifest_sha256=digest, message_id="m")
    session.rewind("m")
    assert (root / "pkg" / "a.txt").read_bytes() == TEXT


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "m',  # torn
        b"[1, 2]",  # not an object
        _intent(op="move", dest="b"),  # no source
        b"\xff\xfe",  # not text
    ],
)
def test_an_unreadable_intent_is_dropped_and_nothing_is_touched(
    tmp_path: Path, body: bytes
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a").write_bytes(TEXT)
    os.link(root / "a", root / "b")  # what a move cut off between link and unlink leaves
    workspace = Workspace(root, tmp_path / "state")
    _plant(workspace, "m" + "3" * 32, body)
    workspace.recover()
    assert _intent_names(workspace) == []
    assert (root / "a").read_bytes() == TEXT and (root / "b").read_bytes() == TEXT


def test_a_journaled_restore_intent_naming_no_journal_of_this_engine_makes_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    workspace = Workspace(root, tmp_path / "state")
    extras = [{"action": "mkdir", "path": "made", "target": None}]
    for number, txn in enumerate(["../../journal", "f" * 32]):
        intent_id = f"r{number}" + "4" * 31
        _plant(
            workspace,
            intent_id,
            _intent(id=intent_id, op="restore", txn=txn, journaled=True, extras=extras),
        )
    workspace.recover()
    assert _intent_names(workspace) == []
    assert os.listdir(root) == []
