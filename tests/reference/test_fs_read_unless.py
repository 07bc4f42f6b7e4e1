"""FileSystem.read_bytes_unless: the known object when unchanged, the disk's bytes otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from editspec.reference import _fs
from editspec.reference._fs import _COMPARE_CHUNK, FileSystem

BIG = bytes(range(256)) * (3 * _COMPARE_CHUNK // 256 + 7)


@pytest.mark.parametrize(
    "on_disk",
    [
        BIG,
        BIG[:-1],
        BIG + b"x",
        BIG[:_COMPARE_CHUNK] + b"\xff" + BIG[_COMPARE_CHUNK + 1 :],
        b"x" + BIG[1:],
        BIG[:-1] + b"\x00",
        b"",
    ],
)
def test_returns_known_only_when_equal(tmp_path: Path, on_disk: bytes) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(on_disk)
    known = bytes(bytearray(BIG))  # a distinct object holding BIG
    got = FileSystem().read_bytes_unless(str(path), known)
    assert got == path.read_bytes() == on_disk
    assert (got is known) == (on_disk == BIG)


def test_refuses_a_symlink_and_a_directory(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"abc")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        FileSystem().read_bytes_unless(str(tmp_path / "link"), b"abc")
    with pytest.raises(OSError):
        FileSystem().read_bytes_unless(str(tmp_path / "dir"), b"abc")


class _StaleSize:
    """``os.fstat`` as the port sees it, when the file changes size right after the call."""

    def __init__(self, size: int) -> None:
        self.size, self.fstat = size, os.fstat

    def __call__(self, fd: int) -> os.stat_result:
        real = self.fstat(fd)
        fields = list(real)
        fields[6] = self.size  # st_size
        return os.stat_result(fields)


@pytest.mark.parametrize("on_disk", [BIG + b"tail", BIG[: _COMPARE_CHUNK + 5]])
def test_a_size_change_after_the_fstat_is_still_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_disk: bytes
) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(on_disk)
    known = bytes(bytearray(BIG))
    monkeypatch.setattr(_fs.os, "fstat", _StaleSize(len(known)))
    got = FileSystem().read_bytes_unless(str(path), known)
    assert got == on_disk and got is not known
