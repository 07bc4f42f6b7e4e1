"""Small Python drivers (``python_fs``) for the os-level fault tests, reached only through
the driver contract: the reference engine unwrapped, and whole-file writers of their own,
careless or atomic.

They live in a module of their own so that a scenario or ``editspec explore --driver``
can name them as ``tests.fault_injection.python_drivers:NAME``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from editspec.reference import Workspace


class OpaqueReference:
    """The reference engine behind the driver contract, its file system not wrapped."""

    capabilities = frozenset(
        {"read", "write", "edit", "apply_patch", "recovery", "python_fs", "journal_layout"}
    )

    def __init__(self, root: Path, state_dir: Path) -> None:
        self._workspace = Workspace(root, state_dir)

    def open_session(self, session_id: str) -> Any:
        return self._workspace.session(session_id)

    def recover(self) -> Any:
        return self._workspace.recover()

    def close(self) -> None:
        self._workspace.close()


class Refused(Exception):
    """A write refused with an error code of the contract."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _WriterSession:
    def __init__(self, root: Path, write: Any) -> None:
        self._root = root
        self._write = write

    def read(self, path: str) -> bytes:
        return (self._root / path).read_bytes()

    def write(
        self, path: str, content: str | bytes, *, expected_sha256: str | None = None, **_: Any
    ) -> None:
        target = self._root / path
        if expected_sha256 is not None:
            current = hashlib.sha256(target.read_bytes()).hexdigest() if target.exists() else ""
            if current != expected_sha256:
                raise Refused("STALE", f"{path} is not the version expected")
        data = content.encode() if isinstance(content, str) else content
        self._write(target, data)


class _Writer:
    """A driver whose whole-file write is ``write``; nothing to recover."""

    capabilities = frozenset({"read", "write", "cas", "python_fs"})
    write: Any = None

    def __init__(self, root: Path, state_dir: Path) -> None:
        self._root = root
        self._state_dir = state_dir

    def open_session(self, session_id: str) -> _WriterSession:
        return _WriterSession(self._root, type(self).write)

    def close(self) -> None:
        pass


def _careless(path: Path, data: bytes) -> None:
    path.write_text(data.decode())  # truncates in place, text mode, no fsync


def _atomic(
    path: Path, data: bytes, *, sync_dir: bool = True, temp_dir: Path | None = None
) -> None:
    fd, temp = tempfile.mkstemp(dir=temp_dir or path.parent, prefix=".tmp-")
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    if not sync_dir:
        return
    # a rename from another directory changes two: both must reach the disk
    for parent in dict.fromkeys([path.parent, Path(temp).parent]):
        directory = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class Careless(_Writer):
    write = staticmethod(_careless)


class Atomic(_Writer):
    write = staticmethod(_atomic)


class AtomicWithoutDirSync(_Writer):
    write = staticmethod(lambda path, data: _atomic(path, data, sync_dir=False))


class AtomicOutsideTheRoot(_Writer):
    """Atomic and durable, its temp file in the state directory: a crash leaves the root
    as it was, with nothing beside the file."""

    def open_session(self, session_id: str) -> _WriterSession:
        state_dir = self._state_dir
        return _WriterSession(
            self._root, lambda path, data: _atomic(path, data, temp_dir=state_dir)
        )


class Elsewhere(Atomic):
    """Says it runs in another process: nothing its os calls do can be intercepted here."""

    capabilities = frozenset({"read", "write", "process"})


def _refuse(path: Path, data: bytes) -> None:
    raise Refused("STALE", f"{path.name} changed since it was read")


class Refusing(_Writer):
    """Refuses every write: there is no clean run to explore."""

    write = staticmethod(_refuse)


class LeavesAJournal(AtomicOutsideTheRoot):
    """Durable and atomic, but every write leaves a file in ``<state_dir>/journal``."""

    def open_session(self, session_id: str) -> _WriterSession:
        state_dir = self._state_dir

        def write(path: Path, data: bytes) -> None:
            (state_dir / "journal").mkdir(exist_ok=True)
            (state_dir / "journal" / "left.json").write_text("{}")
            _atomic(path, data, temp_dir=state_dir)

        return _WriterSession(self._root, write)


class LeavesAJournalWhereDesignPutsThem(LeavesAJournal):
    """The same, saying its journals are where DESIGN puts them: that file is one."""

    capabilities = LeavesAJournal.capabilities | {"journal_layout"}
