"""A session's behaviour follows what its file service declares (``_supports``), not its class.

The same ``Workspace`` over fs ports that declare less: each refusal is checked with its
positive control over the default port, and with the bytes on disk unchanged.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference._supports import LOCAL_DISK, NO_SNAPSHOT_WARNING, WHOLE_TEXT, Supports

NOTEBOOK = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'


def _port(supports: Supports) -> FileSystem:
    class Declaring(FileSystem):
        pass

    Declaring.supports = supports
    return Declaring()


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("one\n")
    (root / "wide.txt").write_bytes("caf\xe9\n".encode("utf-16-le"))
    (root / "n.ipynb").write_text(NOTEBOOK)
    return root


def _code(call: object) -> str:
    with pytest.raises(ToolError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code


def _calls_needing_directories(session):  # type: ignore[no-untyped-def]
    return (
        lambda: session.glob("**/*.py"),
        lambda: session.grep("one"),
        lambda: session.list_directory("."),
        lambda: session.why_ignored("src/app.py"),
        lambda: session.manifest("src"),
        lambda: session.delete("src/app.py", kind="file"),
        lambda: session.move("src/app.py", "src/b.py"),
        lambda: session.rewind("m1"),
    )


def test_the_fs_port_declares_everything_and_a_text_service_nothing_more():
    assert FileSystem().supports == LOCAL_DISK
    assert LOCAL_DISK.transactions and LOCAL_DISK.snapshots and LOCAL_DISK.binary
    assert not (WHOLE_TEXT.transactions or WHOLE_TEXT.snapshots or WHOLE_TEXT.directories)


def test_without_directories_search_listing_delete_move_and_rewind_are_unsupported(
    root: Path, tmp_path: Path
) -> None:
    control = Workspace(root, tmp_path / "control").session("A")
    control.read("src/app.py")
    for call in _calls_needing_directories(control)[:5]:
        call()  # the positive control: the default port serves each
    assert _code(lambda: control.read("src/ap.py")) == "NOT_FOUND"
    with pytest.raises(ToolError) as hinted:
        control.read("app.py")
    assert hinted.value.details.get("did_you_mean") == ["src/app.py"]

    declared = attrs.evolve(LOCAL_DISK, directories=False)
    session = Workspace(root, tmp_path / "state", fs=_port(declared)).session("A")
    session.read("src/app.py")
    before = _tree(root)
    for call in _calls_needing_directories(session):
        assert _code(call) == "UNSUPPORTED"
    with pytest.raises(ToolError) as unhinted:
        session.read("app.py")
    assert unhinted.value.code == "NOT_FOUND"
    assert "did_you_mean" not in unhinted.value.details  # a hint walks directories
    assert _tree(root) == before
    # no snapshot is kept where rewind cannot be offered: the message_id is accepted
    written = session.write("src/app.py", "two\n", message_id="m1")
    assert (written.snapshot_created, written.backup_ref) == (False, None)
    assert NO_SNAPSHOT_WARNING in written.warnings
    assert (root / "src" / "app.py").read_bytes() == b"two\n"


def test_without_binary_no_other_encoding_and_no_notebook_cells(root: Path, tmp_path: Path):
    control = Workspace(root, tmp_path / "control").session("A")
    assert control.read("wide.txt", encoding="utf-16-le").content == "caf\xe9\n"
    assert control.read("wide.txt", encoding="binary").encoding == "binary"
    control.read("n.ipynb")
    control.edit_notebook("n.ipynb", index=0, mode="insert", source="x = 1")
    (root / "n.ipynb").write_text(NOTEBOOK)

    declared = attrs.evolve(LOCAL_DISK, binary=False)
    session = Workspace(root, tmp_path / "state", fs=_port(declared)).session("A")
    session.read("n.ipynb")
    before = _tree(root)
    assert _code(lambda: session.read("wide.txt", encoding="utf-16-le")) == "UNSUPPORTED"
    assert _code(lambda: session.read("wide.txt", encoding="binary")) == "UNSUPPORTED"
    assert _code(lambda: session.edit_notebook("n.ipynb", index=0, source="x")) == "UNSUPPORTED"
    assert _code(lambda: session.write("b.bin", b"\xff\x00")) == "UNSUPPORTED"
    assert _tree(root) == before


def test_a_port_without_rename_fsync_or_journal_cannot_back_a_workspace(root: Path, tmp_path):
    for missing in ("atomic_rename", "fsync", "journal"):
        port = _port(attrs.evolve(LOCAL_DISK, **{missing: False}))
        with pytest.raises(ToolError) as caught:
            Workspace(root, tmp_path / "s", fs=port)
        assert caught.value.code == "INVALID_ARGUMENT"
    assert not (tmp_path / "s").exists()
