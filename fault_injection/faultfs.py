"""A fault-injecting file system: the engine's ``_fs`` port, wrapped to count, crash and fail.

Theory of operation (DESIGN §5, after RocksDB's fault env and SQLite's crash VFS):

* Every port call goes through ``FaultyFileSystem._call``. Calls are *counted* from the
  last ``arm()``: with ``count="mutating"`` only the names in ``reference.port.MUTATING``
  count, with ``count="all"`` every port call does (queries and locks included).
  Counting starts at 1: ``CrashAt(1)`` stops the very first counted operation.
* ``CrashAt(n)``: the n-th counted operation does not happen and the process is dead
  from then on. Every later port call (mutating or not, locks included) raises
  ``SimulatedCrash``, a ``BaseException``, so no ``except Exception`` or ``finally`` in
  the engine can touch the disk any more: a killed process runs no cleanup. At the
  crash the wrapper closes every descriptor the dead process held, as the kernel
  would, which also releases its ``flock`` locks so a fresh workspace can recover.
* ``FailAt(n, errno)``: the n-th counted operation raises ``OSError(errno)`` without
  reaching the disk; later operations proceed normally. A failed ``close`` or
  ``unlock`` still releases the descriptor (Linux frees it whatever ``close`` returns),
  so injected failures never leak descriptors.
* Descriptors are tracked to the path they were opened with (and follow renames), so
  the records of ``write``/``fsync``/``fchmod``/``close`` name the file.
* Observers (``fs.observers``) see every completed or refused call with its arguments;
  the power-loss recorder (``powerloss.TraceRecorder``) is one.
* ``fs.before`` (None by default), if set, is called as ``before(name, paths)`` just
  before each port call reaches the disk (after a fault plan let it through): a test
  makes another writer act at an exact point of an operation, the way a process outside
  the engine would between two of its system calls. It runs unintercepted.
"""

from __future__ import annotations

import contextlib
import errno as _errno
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TypeVar

import attrs

from editspec.reference.port import MUTATING, FileSystem


class SimulatedCrash(BaseException):
    """The process died at an injected crash point.

    Not an ``Exception``: the engine's cleanup code must not catch it.
    """


@attrs.frozen
class CrashAt:
    """The n-th counted operation does not happen; every later call raises ``SimulatedCrash``."""

    n: int = attrs.field(validator=attrs.validators.ge(1))


@attrs.frozen
class FailAt:
    """The n-th counted operation raises ``OSError(errno)`` and does not happen."""

    n: int = attrs.field(validator=attrs.validators.ge(1))
    errno: int


FaultPlan = CrashAt | FailAt


@attrs.frozen
class OpRecord:
    """One counted port call: its 1-based index, name, paths, bytes written and outcome."""

    index: int
    name: str
    paths: tuple[str, ...]
    nbytes: int
    outcome: str  # "ok" | "crash" | "fail:<errno name>" | "error:<errno name>" (real OSError)


@attrs.frozen
class OpEvent:
    """What observers receive: the record plus the raw arguments and result of the call."""

    record: OpRecord
    counted: bool
    args: tuple[Any, ...]
    result: Any


Observer = Callable[[OpEvent], None]
_T = TypeVar("_T")

_INJECTABLE_ERRNOS = frozenset(
    {_errno.ENOSPC, _errno.EIO, _errno.EACCES, _errno.EXDEV, _errno.EROFS}
)


def errno_name(number: int) -> str:
    return _errno.errorcode.get(number, str(number))


class FaultyFileSystem(FileSystem):
    """Wrap a ``FileSystem``: log, count, crash and fail its calls deterministically."""

    def __init__(
        self,
        inner: FileSystem | None = None,
        plan: FaultPlan | None = None,
        *,
        count: Literal["mutating", "all"] = "mutating",
    ) -> None:
        if count not in ("mutating", "all"):
            raise ValueError(f"count must be 'mutating' or 'all', not {count!r}")
        self.inner = inner if inner is not None else FileSystem()
        self.secure_walk = self.inner.secure_walk
        self.counting = count
        self.observers: list[Observer] = []
        self.before: Callable[[str, tuple[str, ...]], None] | None = None
        self.plan: FaultPlan | None = None
        self.log: list[OpRecord] = []
        self.count = 0
        self.crashed = False
        self.armed = False
        self._fd_paths: dict[int, str] = {}
        self._lock_paths: dict[int, str] = {}
        self.arm(plan)

    # -- plan --------------------------------------------------------------------

    def arm(self, plan: FaultPlan | None = None) -> None:
        """Start counting (from 1) with ``plan``; earlier operations are not counted or logged."""
        if plan is not None and isinstance(plan, FailAt) and plan.errno not in _INJECTABLE_ERRNOS:
            raise ValueError(f"FailAt supports ENOSPC, EIO, EACCES, EXDEV, EROFS; not {plan.errno}")
        self.plan = plan
        self.count = 0
        self.log = []
        self.armed = True

    def disarm(self) -> None:
        """Stop counting and injecting (the log is kept)."""
        self.plan = None
        self.armed = False

    def open_descriptors(self) -> dict[int, str]:
        """Descriptors opened through this wrapper and not closed yet (locks included)."""
        return {**self._fd_paths, **self._lock_paths}

    def _die(self) -> None:
        """What the kernel does to a killed process: close its descriptors, drop its locks."""
        self.crashed = True
        for fd in list(self._fd_paths):
            _close_quietly(self.inner.close, fd)
        for handle in list(self._lock_paths):
            _close_quietly(self.inner.close, handle)
        self._fd_paths.clear()
        self._lock_paths.clear()

    # -- the one choke point -----------------------------------------------------

    def _call(
        self,
        name: str,
        paths: tuple[str, ...],
        args: tuple[Any, ...],
        action: Callable[[], _T],
        *,
        nbytes: int = 0,
        on_refusal: Callable[[], None] | None = None,
    ) -> _T:
        if self.crashed:
            raise SimulatedCrash(f"process is dead; {name}{paths} refused")
        counted = self.armed and (self.counting == "all" or name in MUTATING)
        index = 0
        if counted:
            self.count += 1
            index = self.count
            plan = self.plan
            if plan is not None and plan.n == index:
                if isinstance(plan, CrashAt):
                    self._record(index, name, paths, nbytes, "crash", counted, args, None)
                    self._die()
                    raise SimulatedCrash(f"crash injected at operation {index}: {name}{paths}")
                outcome = f"fail:{errno_name(plan.errno)}"
                self._record(index, name, paths, nbytes, outcome, counted, args, None)
                if on_refusal is not None:
                    on_refusal()
                raise OSError(plan.errno, os.strerror(plan.errno), paths[0] if paths else None)
        if self.before is not None:
            self.before(name, paths)
        try:
            result = action()
        except OSError as exc:
            self._record(
                index,
                name,
                paths,
                nbytes,
                f"error:{errno_name(exc.errno or 0)}",
                counted,
                args,
                None,
            )
            raise
        self._record(index, name, paths, nbytes, "ok", counted, args, result)
        return result

    def _record(
        self,
        index: int,
        name: str,
        paths: tuple[str, ...],
        nbytes: int,
        outcome: str,
        counted: bool,
        args: tuple[Any, ...],
        result: Any,
    ) -> None:
        record = OpRecord(index, name, paths, nbytes, outcome)
        if counted:
            self.log.append(record)
        for observer in self.observers:
            observer(OpEvent(record, counted, args, result))

    def _fd_path(self, fd: int) -> str:
        return self._fd_paths.get(fd) or self._lock_paths.get(fd) or f"<fd {fd}>"

    # -- queries -----------------------------------------------------------------

    def realpath(self, path: str) -> str:
        return self._call("realpath", (path,), (path,), lambda: self.inner.realpath(path))

    def lstat(self, path: str) -> os.stat_result:
        return self._call("lstat", (path,), (path,), lambda: self.inner.lstat(path))

    def stat(self, path: str) -> os.stat_result:
        return self._call("stat", (path,), (path,), lambda: self.inner.stat(path))

    def lexists(self, path: str) -> bool:
        return self._call("lexists", (path,), (path,), lambda: self.inner.lexists(path))

    def readlink(self, path: str) -> str:
        return self._call("readlink", (path,), (path,), lambda: self.inner.readlink(path))

    def listdir(self, path: str) -> list[str]:
        return self._call("listdir", (path,), (path,), lambda: self.inner.listdir(path))

    def scandir(self, path: str) -> Iterator[os.DirEntry[str]]:
        # Materialized so the inner directory handle is closed before the engine iterates.
        entries = self._call("scandir", (path,), (path,), lambda: list(self.inner.scandir(path)))
        return iter(entries)

    def scandir_held(self, path: str) -> tuple[list[os.DirEntry[str]], int | None]:
        # No handle is held: the listing is this wrapper's own ``scandir`` (logged and
        # faultable), and the entries' ``stat`` resolves their paths, as after ``scandir``.
        return list(self.scandir(path)), None

    def read_bytes_at(self, handle: int, name: str) -> bytes:
        return self._call(
            "read_bytes_at", (name,), (handle, name), lambda: self.inner.read_bytes_at(handle, name)
        )

    def release_dir(self, handle: int) -> None:
        self._call("release_dir", (), (handle,), lambda: self.inner.release_dir(handle))

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        return self._call(
            "read_bytes",
            (path,),
            (path, offset, limit),
            lambda: self.inner.read_bytes(path, offset=offset, limit=limit),
        )

    def read_bytes_unless(self, path: str, known: bytes) -> bytes:
        return self._call(
            "read_bytes_unless",
            (path,),
            (path, len(known)),
            lambda: self.inner.read_bytes_unless(path, known),
        )

    def read_files(
        self, directory: str, names: Iterable[str], *, limit: int | None = None
    ) -> Iterator[tuple[str, bytes | OSError]]:
        # Materialized, as scandir: the directory handle is closed before the engine iterates.
        wanted = list(names)
        results = self._call(
            "read_files",
            (directory,),
            (directory, tuple(wanted), limit),
            lambda: list(self.inner.read_files(directory, wanted, limit=limit)),
        )
        return iter(results)

    # -- mutations ---------------------------------------------------------------

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        fd: int = self._call(
            "create_exclusive",
            (path,),
            (path, mode),
            lambda: self.inner.create_exclusive(path, mode),
        )
        self._fd_paths[fd] = path
        return fd

    def open_append(self, path: str) -> int:
        fd: int = self._call("open_append", (path,), (path,), lambda: self.inner.open_append(path))
        self._fd_paths[fd] = path
        return fd

    def write(self, fd: int, data: bytes) -> None:
        self._call(
            "write",
            (self._fd_path(fd),),
            (fd, data),
            lambda: self.inner.write(fd, data),
            nbytes=len(data),
        )

    def fsync(self, fd: int) -> None:
        self._call("fsync", (self._fd_path(fd),), (fd,), lambda: self.inner.fsync(fd))

    def fchmod(self, fd: int, mode: int) -> None:
        self._call("fchmod", (self._fd_path(fd),), (fd, mode), lambda: self.inner.fchmod(fd, mode))

    def close(self, fd: int) -> None:
        def forget() -> None:
            if self._fd_paths.pop(fd, None) is not None:
                _close_quietly(self.inner.close, fd)

        def action() -> None:
            self._fd_paths.pop(fd, None)
            self.inner.close(fd)

        self._call("close", (self._fd_path(fd),), (fd,), action, on_refusal=forget)

    def fsync_dir(self, path: str) -> None:
        self._call("fsync_dir", (path,), (path,), lambda: self.inner.fsync_dir(path))

    def rename(self, src: str, dst: str) -> None:
        self._call("rename", (src, dst), (src, dst), lambda: self.inner.rename(src, dst))
        for fd, opened in list(self._fd_paths.items()):
            if opened == src:
                self._fd_paths[fd] = dst

    def rename_noreplace(self, src: str, dst: str) -> None:
        self._call(
            "rename_noreplace",
            (src, dst),
            (src, dst),
            lambda: self.inner.rename_noreplace(src, dst),
        )
        for fd, opened in list(self._fd_paths.items()):
            if opened == src:
                self._fd_paths[fd] = dst

    def link(self, src: str, dst: str) -> None:
        self._call("link", (src, dst), (src, dst), lambda: self.inner.link(src, dst))

    def unlink(self, path: str) -> None:
        self._call("unlink", (path,), (path,), lambda: self.inner.unlink(path))

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        self._call("mkdir", (path,), (path, mode), lambda: self.inner.mkdir(path, mode))

    def rmdir(self, path: str) -> None:
        self._call("rmdir", (path,), (path,), lambda: self.inner.rmdir(path))

    def symlink(self, target: str, path: str) -> None:
        self._call("symlink", (path,), (target, path), lambda: self.inner.symlink(target, path))

    # -- locks -------------------------------------------------------------------

    def lock_file(self, path: str, *, shared: bool = False) -> int:
        handle: int = self._call(
            "lock_file", (path,), (path, shared), lambda: self.inner.lock_file(path, shared=shared)
        )
        self._lock_paths[handle] = path
        return handle

    def unlock(self, handle: int) -> None:
        def forget() -> None:
            if self._lock_paths.pop(handle, None) is not None:
                _close_quietly(self.inner.unlock, handle)

        def action() -> None:
            self._lock_paths.pop(handle, None)
            self.inner.unlock(handle)

        self._call("unlock", (self._fd_path(handle),), (handle,), action, on_refusal=forget)


def _close_quietly(close: Callable[[int], None], fd: int) -> None:
    with contextlib.suppress(OSError):
        close(fd)


def count_operations(
    run: Callable[[FaultyFileSystem], object],
    inner: FileSystem | None = None,
    *,
    count: Literal["mutating", "all"] = "mutating",
) -> int:
    """Run ``run(fs)`` once without faults and return how many operations it counted."""
    fs = FaultyFileSystem(inner, count=count)
    fs.arm(None)
    run(fs)
    return fs.count
