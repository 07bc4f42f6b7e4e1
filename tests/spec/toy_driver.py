"""A deliberately careless implementation, to check the suite and its report.

It reads and writes with plain ``open`` (no confinement, no freshness check, no atomic
publish), lets ``OSError`` escape without a code, decodes with replacement characters, and
declares ``confinement`` and ``python_fs`` without honouring the first. It has no Edit.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace


class NaiveSession:
    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, path: str) -> str:
        return os.path.join(self._root, path)  # no confinement at all

    def read(
        self,
        path,
        *,
        start_line=None,
        end_line=None,
        start_byte=None,
        max_bytes=None,
        encoding="auto",
    ):
        with open(self._path(path), "rb") as handle:  # IsADirectoryError etc. escape uncoded
            data = handle.read()
        text = data.decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        first = start_line or 1
        last = end_line or len(lines)
        return SimpleNamespace(
            path=path,
            content="".join(lines[first - 1 : last]),
            start_line=first,
            end_line=last,
            total_bytes=len(data),
            total_lines=len(lines),
            sha256=hashlib.sha256(data).hexdigest(),
            encoding="utf-8",
            newline="lf",
            bom=False,
            truncated=False,
            mime=None,
            preview_hex=None,
        )

    def write(self, path, content, *, expected_sha256=None, message_id=None):
        target = self._path(path)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        existed = os.path.exists(target)
        with open(target, "wb") as handle:  # truncate, then write: not atomic
            handle.write(data)
        return SimpleNamespace(
            path=path,
            operation="replace" if existed else "create",
            old_sha256=None,
            new_sha256=hashlib.sha256(data).hexdigest(),
            bytes_written=len(data),
            newline="lf",
            diff="",
            snapshot_created=False,
        )


class NaiveDriver:
    name = "naive-toy"
    capabilities = frozenset({"read", "write", "confinement", "python_fs"})

    def __init__(self, root: Path, state_dir: Path) -> None:
        self._root = root

    def open_session(self, session_id: str) -> NaiveSession:
        return NaiveSession(self._root)

    def recover(self) -> SimpleNamespace:
        return SimpleNamespace(rolled_back=(), rolled_forward=(), cleaned=())

    def close(self) -> None:
        pass


def factory(root: Path, state_dir: Path) -> NaiveDriver:
    return NaiveDriver(root, state_dir)


class BrokenCloseDriver(NaiveDriver):
    """Like the naive driver, but ``close`` crashes (a teardown failure)."""

    name = "broken-close-toy"

    def close(self) -> None:
        raise RuntimeError("close exploded")


def broken_close_factory(root: Path, state_dir: Path) -> BrokenCloseDriver:
    return BrokenCloseDriver(root, state_dir)
