"""NOT_FOUND carries up to three likely-meant existing paths, never one outside the root."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from editspec.reference import EditSpec, FileSystem, ToolError, Workspace
from editspec.reference.paths._suggest import likely_paths


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    for path in ("src/util/helpers.py", "tests/helpers.py", "docs/helpers.py", "README.md"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.py").write_text("s\n")
    return Workspace(root, tmp_path / "state")


def _hints(call: object) -> list[str]:
    with pytest.raises(ToolError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.code == "NOT_FOUND"
    return list(caught.value.details.get("did_you_mean", []))


def test_same_name_elsewhere_and_close_spelling(ws: Workspace) -> None:
    session = ws.session("s")
    hints = _hints(lambda: session.read("src/utils/helpers.py"))
    assert hints[0] == "src/util/helpers.py"
    assert set(hints) <= {"src/util/helpers.py", "tests/helpers.py", "docs/helpers.py"}
    assert len(hints) <= 3
    assert _hints(lambda: session.read("REDME.md")) == ["README.md"]


def test_every_path_tool_hints(ws: Workspace) -> None:
    session = ws.session("s")
    missing = "src/util/helper.py"
    for call in (
        lambda: session.edit(missing, [EditSpec("x", "y")]),
        lambda: session.delete(missing, kind="file"),
        lambda: session.move(missing, "elsewhere.py"),
        lambda: session.apply_patch(
            f"*** Begin Patch\n*** Update File: {missing}\n@@\n-x\n+y\n*** End Patch\n"
        ),
    ):
        assert "src/util/helpers.py" in _hints(call)


def test_no_hint_reveals_the_outside(ws: Workspace, tmp_path: Path) -> None:
    session = ws.session("s")
    with pytest.raises(ToolError) as caught:
        session.read("../outside/secrets.py")
    assert "did_you_mean" not in caught.value.details
    assert "secret" not in repr(_hints(lambda: session.read("secret.py")))


def test_nothing_alike_gives_no_hint(ws: Workspace) -> None:
    assert _hints(lambda: ws.session("s").read("zzzz/qqqq.bin")) == []


def test_replace_reports_backup_ref_and_patch_reports_hunk_matches(ws: Workspace) -> None:
    """Evidence for every change: a restorable backup_ref, and per hunk where and how."""
    session = ws.session("s")
    session.read("README.md")
    replaced = session.write("README.md", "y\n", message_id="m1")
    assert replaced.backup_ref == "m1"
    assert session.write("fresh.txt", "new\n", message_id="m2").backup_ref is None
    session.read("tests/helpers.py")
    assert session.write("tests/helpers.py", "z\n").backup_ref is None  # nothing was kept
    root = Path(ws.root)
    (root / "code.py").write_text("a = 1\nb = 2   \nc = 3\nd = 4\n")
    session.read("code.py")
    patch = (
        "*** Begin Patch\n*** Update File: code.py\n@@\n a = 1\n-b = 2\n+b = 20\n"
        "@@\n c = 3\n-d = 4\n+d = 40\n*** End Patch\n"
    )
    result = session.apply_patch(patch)
    hunks = [(h.hunk, h.line, h.matched_by) for h in result.changes[0].hunks]
    assert hunks == [(1, 1, "trailing_whitespace"), (2, 3, "exact")]
    session.rewind("m1")
    assert (root / "README.md").read_text() == "x\n"


def test_a_write_that_expects_a_missing_file_hints_too(ws: Workspace) -> None:
    with pytest.raises(ToolError) as caught:
        ws.session("s").write("src/utils/helpers.py", "y\n", expected_sha256="0" * 64)
    assert caught.value.code == "STALE"
    assert caught.value.details["current_sha256"] is None
    assert caught.value.details["did_you_mean"][0] == "src/util/helpers.py"
    assert not (Path(ws.root) / "src" / "utils").exists()
    # A STALE for a file that exists with other bytes names no other path.
    with pytest.raises(ToolError) as caught:
        ws.session("s").write("README.md", "y\n", expected_sha256="0" * 64)
    assert caught.value.code == "STALE" and "did_you_mean" not in caught.value.details


def test_tools_that_name_a_directory_hint_directories(ws: Workspace) -> None:
    session = ws.session("s")
    for call in (
        lambda: session.manifest("src/utill"),
        lambda: session.list_directory("src/utill"),
        lambda: session.glob("*.py", path="src/utill"),
        lambda: session.grep("x", path="src/utill"),
    ):
        assert _hints(call) == ["src/util"]


def test_an_absolute_path_inside_the_root_hints_root_relative(ws: Workspace) -> None:
    session = ws.session("s")
    absolute = os.path.join(ws.root, "src", "utils", "helpers.py")
    assert _hints(lambda: session.read(absolute))[0] == "src/util/helpers.py"
    assert likely_paths(ws, absolute)[0] == "src/util/helpers.py"  # as a host may name it


@pytest.mark.parametrize("requested", ["../outside/secret.py", ".", "/elsewhere/helpers.py"])
def test_a_path_that_is_not_inside_the_root_gets_no_hint(ws: Workspace, requested: str) -> None:
    assert likely_paths(ws, "src/utils/helpers.py")  # the positive control
    assert likely_paths(ws, requested) == []


def test_skipped_directories_and_links_are_never_hinted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for path in ("node_modules/pkg/helpers.py", ".git/helpers.py", "state/helpers.py"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")
    (root / "lib").mkdir()
    (root / "lib" / "helpers.py").symlink_to(root / ".git" / "helpers.py")
    (root / "src").mkdir()
    (root / "src" / "helpers.py").write_text("x\n")
    ws = Workspace(root, root / "state")
    assert _hints(lambda: ws.session("s").read("tools/helpers.py")) == ["src/helpers.py"]


class _Unlistable(FileSystem):
    """A port whose listdir fails for ``docs`` and whose lstat fails for ``tests/helpers.py``."""

    def __init__(self, failure: type[BaseException] = OSError) -> None:
        super().__init__()
        self.failure = failure
        self.hint_root: str | None = None  # where listdir fails with ``failure`` instead

    def listdir(self, path: Any) -> list[str]:
        if os.path.basename(path) == "docs" or path == self.hint_root:
            raise self.failure(errno.EIO, "listdir failed")
        return super().listdir(path)

    def lstat(self, path: Any) -> os.stat_result:
        if str(path).endswith(os.path.join("tests", "helpers.py")):
            raise OSError(errno.EIO, "lstat failed", path)
        return super().lstat(path)


def test_entries_the_port_cannot_list_or_inspect_are_left_out(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for path in ("src/util/helpers.py", "tests/helpers.py", "docs/helpers.py"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x\n")
    ws = Workspace(root, tmp_path / "state", fs=_Unlistable())
    assert _hints(lambda: ws.session("s").read("lib/helpers.py")) == ["src/util/helpers.py"]


def test_a_failing_hint_never_hides_the_not_found(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "helpers.py").write_text("x\n")
    fs = _Unlistable(RuntimeError)
    ws = Workspace(root, tmp_path / "state", fs=fs)
    assert _hints(lambda: ws.session("s").read("lib/helpers.py")) == ["src/helpers.py"]
    fs.hint_root = ws.root  # a bug in the walk, not an OSError
    with pytest.raises(ToolError) as caught:
        ws.session("s").read("lib/helpers.py")
    assert caught.value.code == "NOT_FOUND"
    assert "did_you_mean" not in caught.value.details
