"""Tree manifests (``tools/_manifest``): what a tree lists, and how a tree that cannot be
read in full or is too large is refused, by ``Session.manifest`` and by the Delete that
checks it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from editspec.reference import FileSystem, Limits, ToolError, Workspace
from editspec.reference.text._text import sha256_hex
from editspec.reference.tools._manifest import MAX_TREE_ENTRIES


class _FailsOn(FileSystem):
    """Once ``armed``, every ``name`` call on ``path`` fails with ``error``."""

    def __init__(self, name: str, path: Path, error: int) -> None:
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

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        self._check("read_bytes", path)
        return super().read_bytes(path, offset=offset, limit=limit)


def _tree(root: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.txt").write_bytes(b"a\r\n")
    (root / "pkg" / "sub" / "b.txt").write_bytes(b"b\n")


@pytest.mark.parametrize(
    ("op", "where", "error", "code", "shown"),
    [
        ("lstat", "pkg/sub/b.txt", errno.EACCES, "IO_ERROR", "pkg/sub/b.txt"),
        ("listdir", "pkg/sub", errno.EIO, "IO_ERROR", "pkg"),
        ("read_bytes", "pkg/a.txt", errno.EIO, "IO_ERROR", "pkg/a.txt"),
        ("read_bytes", "pkg/a.txt", errno.ENOENT, "NOT_FOUND", "pkg/a.txt"),
    ],
)
def test_an_entry_that_cannot_be_read_refuses_the_manifest_and_the_delete(
    tmp_path: Path, op: str, where: str, error: int, code: str, shown: str
) -> None:
    root = tmp_path / "root"
    _tree(root)
    fs = _FailsOn(op, root / where, error)
    session = Workspace(root, tmp_path / "state", fs=fs).session("s")
    digest = session.manifest("pkg").manifest_sha256  # the positive control
    fs.armed = True
    with pytest.raises(ToolError) as caught:
        session.manifest("pkg")
    assert (caught.value.code, caught.value.details["path"]) == (code, shown)
    assert caught.value.details["errno"] == error
    with pytest.raises(ToolError) as refused:
        session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert refused.value.code == code
    assert (root / "pkg" / "a.txt").read_bytes() == b"a\r\n"
    assert (root / "pkg" / "sub" / "b.txt").read_bytes() == b"b\n"


def test_a_fifo_is_listed_as_other_and_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _tree(root)
    os.mkfifo(root / "pkg" / "pipe")  # opened for reading, it would block the scan
    session = Workspace(root, tmp_path / "state").session("s")
    result = session.manifest("pkg")
    assert [(item.path, item.type, item.size, item.sha256) for item in result.items] == [
        ("a.txt", "file", 3, sha256_hex(b"a\r\n")),
        ("pipe", "other", 0, None),
        ("sub", "dir", 0, None),
        ("sub/b.txt", "file", 2, sha256_hex(b"b\n")),
    ]


def test_a_file_is_not_a_tree(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _tree(root)
    session = Workspace(root, tmp_path / "state").session("s")
    with pytest.raises(ToolError) as caught:
        session.manifest("pkg/a.txt")
    assert caught.value.code == "INVALID_ARGUMENT"
    assert caught.value.details["path"] == "pkg/a.txt"


def test_a_tree_past_the_transaction_bytes_is_too_large(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _tree(root)  # 5 bytes of files
    (root / "big").mkdir()
    (root / "big" / "one").write_bytes(b"x" * 4)
    (root / "big" / "two").write_bytes(b"y" * 4)
    session = Workspace(root, tmp_path / "state", limits=Limits(transaction_bytes=5)).session("s")
    digest = session.manifest("pkg").manifest_sha256  # exactly at the limit: listed
    with pytest.raises(ToolError) as caught:
        session.manifest("big")
    assert caught.value.code == "TOO_LARGE"
    assert caught.value.details["limit"] == "transaction_bytes"
    assert caught.value.details["maximum"] == 5
    # A Delete of a tree grown past the limit since its manifest is refused the same way.
    (root / "pkg" / "a.txt").write_bytes(b"a\r\n!")
    with pytest.raises(ToolError) as grown:
        session.delete("pkg", kind="tree", manifest_sha256=digest)
    assert grown.value.code == "TOO_LARGE"
    assert (root / "pkg" / "a.txt").read_bytes() == b"a\r\n!"
    assert (root / "big" / "one").read_bytes() == b"x" * 4


@pytest.mark.slow
def test_a_tree_of_more_entries_than_the_limit_is_too_large(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    for number in range(MAX_TREE_ENTRIES):
        os.symlink("t", root / "pkg" / f"{number:05}")  # the cheapest entry to scan
    session = Workspace(root, tmp_path / "state").session("s")
    assert len(session.manifest("pkg").items) == MAX_TREE_ENTRIES  # at the limit: listed
    (root / "pkg" / "one-more").mkdir()
    with pytest.raises(ToolError) as caught:
        session.manifest("pkg")
    assert caught.value.code == "TOO_LARGE"
    assert caught.value.details["limit"] == "tree_entries"
    assert caught.value.details["maximum"] == MAX_TREE_ENTRIES
