"""Faults for any Python implementation, injected at the ``os``/``io`` level (DESIGN §5).

Drivers with the ``python_fs`` capability run in the suite's process, so their effects
on the disk go through the ``os`` module (directly, or through ``open``, ``pathlib``,
``shutil``, ``tempfile``). ``OsInterceptor`` replaces those functions for the length of
a ``with`` block and counts the *mutating* calls: ``open`` with ``O_CREAT``/``O_TRUNC``
(or a writing ``open()`` mode), ``write``, ``fsync``, ``replace``, ``rename``, ``link``,
``unlink``, ``mkdir``, ``rmdir``, ``chmod``, ``truncate``, ``utime`` and their kin.

* no plan: a clean block, whose calls are recorded (``trace``).
* ``crash_at=n``: the n-th mutating call does not happen and the process is dead from
  then on: every later call of an intercepted function (the mutating ones, and ``open``,
  ``close``, ``stat``, ``read``, ``listdir``, ``scandir``, ``readlink``, ``flock`` ...)
  raises ``SimulatedCrash`` (a ``BaseException``, so no ``except Exception`` cleanup runs,
  and ``finally`` blocks cannot touch the disk). At the crash every descriptor the block
  opened is closed, as the kernel would, which also drops its ``flock`` locks. The context
  manager ends the block quietly (whatever a ``finally`` raised after the crash goes with
  it), so the clause goes on to restart the driver and inspect the disk.
* ``fail_at=n, fail_errno=errno``: the n-th mutating call raises ``OSError(errno)`` without
  reaching the disk; later calls proceed.
* ``fail_later=True`` too: the n-th mutating call and every later one raise
  ``OSError(errno)`` (a disk that went bad): a rollback started by the first failure
  fails too.
* ``call_at=n, action=action``: ``action()`` runs (unintercepted) just before the n-th mutating
  call, which then proceeds: an external change at an exact point of the operation.

Files opened for writing through ``open()`` are opened unbuffered while intercepted, so
a ``write()`` reaches the disk when it is counted and a crash loses no user-space buffer
that a real kill would have lost anyway.

Observers (``interceptor.observers``) see every intercepted call that succeeded, as an
``OsEvent`` with its arguments and result: every ``os.open`` and ``open()`` (whatever
the flags: a directory opened to be fsynced matters), ``close``, the mutating calls, and
the bytes each write put in a file opened through ``open()`` (text encoded, with their
offset). They run unintercepted, so they may inspect the disk.
``editspec.fault_injection.ostrace`` turns them into the trace the power-loss model
replays. The clauses' helpers over it (``crash_at(n)``, ...) are in
``editspec.spec.crash``.
"""

from __future__ import annotations

import builtins
import contextlib
import errno as _errno
import io
import os
import pathlib
import threading
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

from editspec.fault_injection.faultfs import SimulatedCrash
from editspec.fault_injection.oscalls import (
    ALWAYS_MUTATING,
    CREATING_FLAGS,
    FCNTL_FUNCTIONS,
    REFUSED_AFTER_CRASH,
    SUPPORT_SETS,
    Observer,
    OsCall,
    OsEvent,
    descriptor_kind,
    flags_of,
    paths_of,
)

try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows
    _fcntl = None  # type: ignore[assignment]

__all__ = ["OsCall", "OsEvent", "OsInterceptor", "SimulatedCrash"]


class _Interception:
    """The single active interceptor of this process (nesting is refused)."""

    lock = threading.Lock()
    active: OsInterceptor | None = None


class OsInterceptor:
    """Count, crash, fail or hook the mutating ``os``/``io`` calls made inside ``with``."""

    def __init__(
        self,
        *,
        crash_at: int | None = None,
        fail_at: int | None = None,
        fail_errno: int = _errno.EIO,
        fail_later: bool = False,
        call_at: int | None = None,
        action: Callable[[], object] | None = None,
    ) -> None:
        self.crash_at = crash_at
        self.fail_at = fail_at
        self.fail_errno = fail_errno
        self.fail_later = fail_later  # every call after ``fail_at`` fails too
        self.call_at = call_at
        self.action = action
        self.mutations = 0
        self.trace: list[OsCall] = []
        self.crashed = False
        self.failed = False
        self.called = False
        self._originals: dict[str, Any] = {}
        self._fcntl_originals: dict[str, Any] = {}
        self._io_open: Any = None
        self._builtin_open: Any = None
        self._open_fds: set[int] = set()
        self._open_files: list[_CountingFile] = []
        self._count_lock = threading.RLock()
        self._suspended = threading.local()
        self._added_support: list[tuple[set[Any], Any]] = []
        self._accessor_originals: dict[str, Any] = {}
        self.observers: list[Observer] = []

    # -- the context manager ---------------------------------------------------------

    def __enter__(self) -> OsInterceptor:
        with _Interception.lock:
            if _Interception.active is not None:
                raise RuntimeError("an OsInterceptor is already active in this process")
            _Interception.active = self
        for name in ("open", "close", *ALWAYS_MUTATING, *REFUSED_AFTER_CRASH):
            original = getattr(os, name, None)
            if original is None:
                continue
            self._originals[name] = original
            wrapper = self._wrap(name, original)
            setattr(os, name, wrapper)
            for set_name in SUPPORT_SETS:
                support = getattr(os, set_name, None)
                if isinstance(support, set) and original in support:
                    support.add(wrapper)
                    self._added_support.append((support, wrapper))
        if _fcntl is not None:
            for name in FCNTL_FUNCTIONS:
                original = getattr(_fcntl, name)
                self._fcntl_originals[name] = original
                setattr(_fcntl, name, self._refusing(name, original))
        self._io_open = io.open
        self._builtin_open = builtins.open
        io.open = self._open_file
        builtins.open = self._open_file
        self._patch_accessor()
        return self

    def _patch_accessor(self) -> None:
        """Python 3.10's ``pathlib`` calls ``os`` through functions its accessor class took
        when it was imported (``Path.mkdir`` is ``_NormalAccessor.mkdir``, ``os.mkdir``
        as it was then): those take the wrappers too. Later versions call ``os`` itself."""
        accessor = getattr(pathlib, "_NormalAccessor", None)
        if accessor is None:
            return
        for name, value in list(vars(accessor).items()):
            if value is io.open or value is self._io_open:
                replacement: Any = self._open_file
            else:
                replacement = next(
                    (
                        getattr(os, os_name)
                        for os_name, original in self._originals.items()
                        if value is original
                    ),
                    None,
                )
            if replacement is not None:
                self._accessor_originals[name] = value
                setattr(accessor, name, staticmethod(replacement))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        for name, original in self._originals.items():
            setattr(os, name, original)
        for name, original in self._fcntl_originals.items():
            setattr(_fcntl, name, original)
        for support, wrapper in self._added_support:
            support.discard(wrapper)
        io.open = self._io_open
        builtins.open = self._builtin_open
        accessor = getattr(pathlib, "_NormalAccessor", None)
        for name, original in self._accessor_originals.items():
            setattr(accessor, name, original)
        self._accessor_originals.clear()
        with _Interception.lock:
            _Interception.active = None
        # A crash ends the block quietly: the process "died". Whatever a finally block raised
        # after the crash (an in-process artifact: a killed process raises nothing) goes too.
        return bool(
            self.crashed and exc_type is not None and not issubclass(exc_type, KeyboardInterrupt)
        )

    # -- counting and faults -----------------------------------------------------------

    def _passthrough(self) -> bool:
        return bool(getattr(self._suspended, "on", False))

    def _notify(
        self,
        name: str,
        index: int,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        result: Any = None,
    ) -> None:
        """Tell the observers about a call that succeeded (they run unintercepted)."""
        if not self.observers or self._passthrough():
            return  # calls made unintercepted (an observer's, a hook's) are not the driver's
        event = OsEvent(name, index, args, dict(kwargs), result)
        self._suspended.on = True
        try:
            for observer in list(self.observers):
                observer(event)
        finally:
            self._suspended.on = False

    def _step(self, name: str, args: tuple[Any, ...], kind: str = "", extra: str = "") -> int:
        """Account for one mutating call about to happen; raise the planned fault."""
        paths = paths_of(args)
        detail = " ".join(
            [*paths, *([f"fd={args[0]}"] if args and isinstance(args[0], int) else []), extra]
        ).strip()
        with self._count_lock:
            if self.crashed:
                raise SimulatedCrash(f"{name} after the crash")
            self.mutations += 1
            index = self.mutations
            self.trace.append(OsCall(index, name, detail, kind, paths))
            if self.crash_at is not None and index == self.crash_at:
                self._die()
                raise SimulatedCrash(f"crash at mutating call {index} ({name} {detail})")
            if self.fail_at is not None and (
                index == self.fail_at or (self.fail_later and index > self.fail_at)
            ):
                self.failed = True
                raise OSError(
                    self.fail_errno, os.strerror(self.fail_errno), paths[0] if paths else None
                )
            if self.call_at is not None and index == self.call_at and self.action is not None:
                self.called = True
                self._suspended.on = True
                try:
                    self.action()
                finally:
                    self._suspended.on = False
            return index

    def _refuse_if_dead(self, name: str) -> None:
        if self.crashed:
            raise SimulatedCrash(f"{name} after the crash")

    def _die(self) -> None:
        """The process is killed: the kernel closes every descriptor it held."""
        self.crashed = True
        close = self._originals["close"]
        for fd in sorted(self._open_fds):
            with contextlib.suppress(OSError):
                close(fd)
        self._open_fds.clear()
        for handle in self._open_files:
            handle.release()
        self._open_files.clear()

    # -- wrappers ----------------------------------------------------------------------

    def _wrap(self, name: str, original: Any) -> Any:
        if name == "open":
            return self._wrap_open(original)
        if name == "close":
            return self._wrap_close(original)
        if name in REFUSED_AFTER_CRASH:
            return self._refusing(name, original)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self._passthrough():
                return original(*args, **kwargs)
            kind = ""
            if name in ("fsync", "fdatasync") and args and isinstance(args[0], int):
                kind = descriptor_kind(args[0])
            index = self._step(name, args, kind)
            result = original(*args, **kwargs)
            self._notify(name, index, args, kwargs, result)
            return result

        wrapper.__name__ = name
        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return wrapper

    def _refusing(self, name: str, original: Any) -> Any:
        def refusing_wrapper(*args: Any, **kwargs: Any) -> Any:
            if not self._passthrough():
                self._refuse_if_dead(name)
            return original(*args, **kwargs)

        refusing_wrapper.__name__ = name
        refusing_wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return refusing_wrapper

    def _wrap_open(self, original: Any) -> Any:
        def open_wrapper(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if self._passthrough():
                return int(original(path, flags, *args, **kwargs))
            index = 0
            if flags & CREATING_FLAGS:
                index = self._step("open", (path,), extra=f"flags={flags:#o}")
            else:
                self._refuse_if_dead("open")
            fd = int(original(path, flags, *args, **kwargs))
            self._open_fds.add(fd)
            self._notify("open", index, (path, flags, *args), kwargs, fd)
            return fd

        open_wrapper.__name__ = "open"
        open_wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return open_wrapper

    def _wrap_close(self, original: Any) -> Any:
        def close_wrapper(fd: int) -> None:
            if self._passthrough():
                original(fd)
                return
            # After the crash the descriptor is already closed (and its number may be
            # reused by the surviving test process): do nothing but refuse.
            self._refuse_if_dead("close")
            self._open_fds.discard(fd)
            original(fd)
            self._notify("close", 0, (fd,), {})

        close_wrapper.__name__ = "close"
        close_wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        return close_wrapper

    def _open_file(
        self, file: Any, mode: str = "r", buffering: int = -1, *args: Any, **kwargs: Any
    ) -> Any:
        opener = self._io_open
        if self._passthrough() or not isinstance(mode, str) or not set(mode) & set("wax+"):
            if self._passthrough():
                return opener(file, mode, buffering, *args, **kwargs)
            self._refuse_if_dead("open")
            reading = opener(file, mode, buffering, *args, **kwargs)
            self._notify_open(file, mode, 0, reading)
            return reading
        index = self._step("open", (file,), extra=f"mode={mode}")
        if "b" in mode:
            rest = {key: value for key, value in kwargs.items() if key in ("closefd", "opener")}
            for position, name in ((3, "closefd"), (4, "opener")):  # after encoding etc.
                if len(args) > position:
                    rest.setdefault(name, args[position])
            handle: Any = _ObservedFileIO(self, file, mode, **rest)
        else:
            encoding = kwargs.pop("encoding", args[0] if len(args) > 0 else None)
            errors = kwargs.pop("errors", args[1] if len(args) > 1 else None)
            newline = kwargs.pop("newline", args[2] if len(args) > 2 else None)
            rest = {key: value for key, value in kwargs.items() if key in ("closefd", "opener")}
            raw = _ObservedFileIO(self, file, mode, **rest)
            handle = io.TextIOWrapper(
                raw, encoding=encoding, errors=errors, newline=newline, write_through=True
            )
        self._notify_open(file, mode, index, handle)
        counted = _CountingFile(self, handle, (file,))
        self._open_files.append(counted)
        return counted

    def _notify_open(self, file: Any, mode: str, index: int, handle: Any) -> None:
        """An ``open()`` as the ``os.open`` it stands for: the path, flags and descriptor."""
        if not self.observers or isinstance(file, int):
            return  # a descriptor wrapped (fdopen) was reported when it was opened
        try:
            fd = handle.fileno()
        except (OSError, ValueError, AttributeError):
            return
        self._notify("open", index, (file, flags_of(mode)), {}, fd)


class _ObservedFileIO(io.FileIO):
    """The raw file under an intercepted ``open()``: its writes are reported to observers
    with their bytes and offset (so a text file's are the encoded bytes)."""

    def __init__(self, owner: OsInterceptor, file: Any, mode: str, **kwargs: Any) -> None:
        super().__init__(file, mode.replace("b", "").replace("t", ""), **kwargs)
        self._owner = owner

    def write(self, data: Any) -> int:
        written = super().write(data)
        if written and self._owner.observers and not self._owner._passthrough():
            chunk = bytes(memoryview(data).cast("B")[:written])
            fd = self.fileno()
            offset = os.lseek(fd, 0, os.SEEK_CUR) - written
            self._owner._notify(
                "file.write", self._owner.mutations, (fd, chunk, offset), {}, written
            )
        return written or 0

    def close(self) -> None:
        fd = -1 if self.closed else self.fileno()
        super().close()
        if fd >= 0 and not self._owner.crashed:
            self._owner._notify("file.close", 0, (fd,), {})


class _CountingFile:
    """A file object whose writes are counted as mutating calls."""

    def __init__(self, owner: OsInterceptor, handle: Any, args: tuple[Any, ...]) -> None:
        self._owner = owner
        self._handle = handle
        self._args = args

    def write(self, data: Any) -> Any:
        self._owner._step("file.write", self._args)
        return self._handle.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def truncate(self, size: int | None = None) -> Any:
        self._owner._step("file.truncate", self._args)
        return self._handle.truncate(size)

    def close(self) -> None:
        self._owner._refuse_if_dead("file.close")
        self._handle.close()

    def release(self) -> None:
        """Close without counting (the process died; unbuffered, so nothing is lost)."""
        with contextlib.suppress(OSError, ValueError):
            self._handle.close()

    def __enter__(self) -> _CountingFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._handle)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)
