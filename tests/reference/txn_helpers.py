"""Helpers shared by the transaction, recovery and crash tests: paths, disk trees, leftovers."""

from __future__ import annotations

import os
import re
from pathlib import Path

from editspec.reference import Workspace, WorkspacePath

#: A transaction's stage file or backup.
SIDE_FILE = re.compile(r"\.[0-9a-f]{32}\.(stage|backup)$")
#: A transaction's stage file or backup, or the temporary file of a single-file write.
SIDE_OR_TEMP_FILE = re.compile(r"\.[0-9a-f]{32}\.(stage|backup)$|\.editspec-[0-9a-f]+\.tmp$")


def wpath(ws: Workspace, relative: str) -> WorkspacePath:
    """A resolved path for ``relative`` (``/``-separated) inside ``ws``, with no links."""
    real = os.path.join(ws.root, *relative.split("/"))
    return WorkspacePath(
        requested=relative,
        logical=real,
        real=real,
        relative=relative,
        crossed_link=False,
        exists=os.path.lexists(real),
    )


def tree(root: Path) -> dict[str, bytes]:
    """Every file (and link to one) under ``root`` with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def dirs(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def leftovers(ws: Workspace, side_file: re.Pattern[str] = SIDE_FILE) -> list[str]:
    """Side files under the workspace root and journals in its journal directory."""
    found = [
        os.path.join(directory, name)
        for directory, _, names in os.walk(ws.root)
        for name in names
        if side_file.search(name)
    ]
    if os.path.isdir(ws.journal_dir):
        found += [os.path.join(ws.journal_dir, name) for name in os.listdir(ws.journal_dir)]
    return found


def write(root: Path, relative: str, data: bytes, mode: int | None = None) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)


class RecordingSnapshots:
    """Stands in for the snapshot store's transaction hooks."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def discard_transaction(self, txn_id: str) -> None:
        self.calls.append(("discard", txn_id))

    def confirm_transaction(self, txn_id: str) -> None:
        self.calls.append(("confirm", txn_id))
