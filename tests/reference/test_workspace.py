"""``Workspace`` and ``Session`` (``reference/_workspace.py``): construction and routing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from editspec.reference import Limits, ToolError, Workspace


def test_root_is_the_real_path(tmp_path: Path, state_dir: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    workspace = Workspace(tmp_path / "alias", state_dir)
    assert workspace.root == os.path.realpath(tmp_path / "real")
    assert workspace.root_hash == hashlib.sha256(workspace.root.encode()).hexdigest()[:16]
    assert workspace.journal_dir == os.path.join(
        workspace.state_dir, "journal", workspace.root_hash
    )


def test_aliases_of_one_root_share_their_state(tmp_path: Path, state_dir: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert (
        Workspace(tmp_path / "alias", state_dir).root_hash
        == Workspace(tmp_path / "real", state_dir).root_hash
    )


def test_missing_root_is_not_found(tmp_path: Path, state_dir: Path) -> None:
    with pytest.raises(ToolError) as info:
        Workspace(tmp_path / "missing", state_dir)
    assert info.value.code == "NOT_FOUND"


def test_a_file_as_root_is_refused(tmp_path: Path, state_dir: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ToolError) as info:
        Workspace(tmp_path / "file", state_dir)
    assert info.value.code == "NOT_FOUND"


def test_state_dir_is_created(root: Path, tmp_path: Path) -> None:
    workspace = Workspace(root, tmp_path / "deep" / "state")
    assert (tmp_path / "deep" / "state").is_dir()
    assert workspace.state_dir == str(tmp_path / "deep" / "state")


def test_limits_are_configurable(root: Path, state_dir: Path) -> None:
    assert Workspace(root, state_dir).limits == Limits()
    assert Workspace(root, state_dir, Limits(read_max_bytes=7)).limits.read_max_bytes == 7


@pytest.mark.parametrize("session_id", ["", "a\0b", None, 3])
def test_bad_session_ids_are_invalid(workspace: Workspace, session_id: object) -> None:
    with pytest.raises(ToolError) as info:
        workspace.session(session_id)  # type: ignore[arg-type]
    assert info.value.code == "INVALID_ARGUMENT"


def test_sessions_route_read_and_write(workspace: Workspace, root: Path) -> None:
    session = workspace.session("s")
    assert (session.workspace, session.id) == (workspace, "s")
    session.write("f.txt", "x")
    assert session.read("f.txt").content == "x"
    assert (root / "f.txt").read_bytes() == b"x"


def test_resolve_is_confined(workspace: Workspace, root: Path) -> None:
    assert workspace.resolve("a/b").real == str(root / "a" / "b")
    with pytest.raises(ToolError) as info:
        workspace.resolve("../x")
    assert info.value.code == "OUTSIDE_WORKSPACE"


def test_a_sticky_failure_refuses_writes_until_recovery(workspace: Workspace, root: Path) -> None:
    session = workspace.session("s")
    workspace.mark_needs_recovery("a rollback could not finish")
    with pytest.raises(ToolError) as info:
        session.write("f.txt", "x")
    assert info.value.code == "NEEDS_RECOVERY"
    assert not (root / "f.txt").exists()
    (root / "g.txt").write_bytes(b"g")  # reads still work while writes are refused
    assert session.read("g.txt").content == "g"
    workspace.recover()
    session.write("f.txt", "x")
    assert (root / "f.txt").read_bytes() == b"x"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside.txt", "OUTSIDE_WORKSPACE"),
        ("a\0b", "INVALID_ARGUMENT"),
        (b"a.txt", "INVALID_ARGUMENT"),
        (5, "INVALID_ARGUMENT"),
        (None, "INVALID_ARGUMENT"),
    ],
)
def test_deny_rules_keep_the_refusal_of_a_bad_path(
    workspace: Workspace, root: Path, path: object, code: str
) -> None:
    """With deny rules, a path that has no lexical form in the root gets resolve's own error."""
    for denying in (False, True):
        if denying:
            workspace.hooks.deny("secret/")
        with pytest.raises(ToolError) as caught:
            workspace.resolve(path)  # type: ignore[arg-type]
        assert caught.value.code == code
    (root / "secret").mkdir()
    with pytest.raises(ToolError) as caught:
        workspace.resolve("x/../secret/a.txt")  # the positive control: the rules apply
    assert caught.value.code == "DENIED"
    assert workspace.resolve("x/../a.txt").relative == "a.txt"
