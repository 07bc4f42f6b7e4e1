"""The local store (``tools/_disk.DiskStore``): a port failure is a typed error, no change.

Each tool is first run on a healthy port (the positive control), then with one query of
the port failing with EIO: the call fails with IO_ERROR naming the file, and the bytes on
disk are what they were.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from editspec.reference import FileSystem, ToolError, Workspace

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n"
DELETE = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"


class _Failing(FileSystem):
    """A port whose ``method`` fails with EIO while ``armed`` (for paths ending in ``a.txt``)."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.method = method
        self.armed = False

    def __getattribute__(self, name: str) -> Any:
        attribute = super().__getattribute__(name)
        if name != super().__getattribute__("method") or not super().__getattribute__("armed"):
            return attribute

        def failing(path: str, *args: Any, **kwargs: Any) -> Any:
            if str(path).endswith("a.txt"):
                raise OSError(errno.EIO, os.strerror(errno.EIO), path)
            return attribute(path, *args, **kwargs)

        return failing


def _session(root: Path, state: Path, method: str) -> tuple[_Failing, Any]:
    fs = _Failing(method)
    session = Workspace(root, state, fs=fs).session("A")
    session.read("a.txt")
    return fs, session


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("read_bytes", lambda s: s.read("a.txt")),
        ("lstat", lambda s: s.read("a.txt")),
        ("read_bytes", lambda s: s.write("a.txt", "two\n")),
        ("read_bytes", lambda s: s.apply_patch(PATCH)),
        ("lstat", lambda s: s.apply_patch(PATCH)),
    ],
)
def test_a_failing_query_is_an_io_error_and_nothing_changes(
    tmp_path: Path, method: str, call: Any
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"one\n")
    _, control = _session(root, tmp_path / "control", method)
    call(control)  # the positive control, on the healthy port
    (root / "a.txt").write_bytes(b"one\n")
    fs, session = _session(root, tmp_path / "state", method)
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        call(session)
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["errno"] == errno.EIO
    assert (root / "a.txt").read_bytes() == b"one\n"


def test_a_patch_of_something_that_is_not_a_regular_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"one\n")
    session = Workspace(root, tmp_path / "state").session("A")
    session.read("a.txt")
    assert session.apply_patch(DELETE).changes[0].op == "delete"  # the positive control
    os.mkfifo(root / "a.txt")
    with pytest.raises(ToolError) as caught:
        session.apply_patch(DELETE)
    assert caught.value.code == "INVALID_ARGUMENT"
    assert (root / "a.txt").is_fifo()


def test_exists_and_is_link_report_a_failing_lstat_as_an_io_error(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"one\n")
    (root / "b.txt").symlink_to("a.txt")
    fs = _Failing("lstat")
    workspace = Workspace(root, tmp_path / "state", fs=fs)
    store, target, link = workspace.store, workspace.resolve("a.txt"), workspace.resolve("b.txt")
    assert store.exists(target) and not store.is_link(target)  # the positive control
    assert store.is_link(link)
    assert not store.exists(workspace.resolve("missing.txt"))  # absent is False, no error
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        store.exists(target)
    assert caught.value.code == "IO_ERROR" and caught.value.details["errno"] == errno.EIO
    assert (root / "a.txt").read_bytes() == b"one\n"
