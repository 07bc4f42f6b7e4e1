"""Atomic single-file publication through the fs port (DESIGN §4 "Write").

Readers see the old file or the new one, never a mix: the new bytes go to an exclusive
temp file in the target's own directory (``O_CREAT|O_EXCL``, a random name
``.<name>.editspec-<hex>.tmp``), which is written, given its mode, fsynced, re-verified
against the disk through the caller's ``verify`` callback, renamed over the target, and
the directory is fsynced. A new file is published with ``link`` instead of ``rename``, so
a file that appeared meanwhile is never clobbered.

If that last fsync fails, the rename may not survive a power cut, and a second fsync of
the directory would prove nothing (the kernel may have dropped what it could not write).
The bytes are then published again as a new file renamed over the target, and that
rename is synced: success once it is. If that fails too, the change is undone the same
way (the old bytes, or for a new file its removal, synced): IO_ERROR with the file as
before. If neither can be made durable: NEEDS_RECOVERY, never success.

Every step is one port call, so a fault can land between any two. On any failure the temp
file is unlinked (best effort) before the error propagates: a live process leaves nothing
behind. A simulated crash (a ``BaseException`` that is not an ``Exception``) is let
through untouched: a killed process runs no cleanup, and recovery is not this module's
job for a single file (a leftover temp file never shadows the target).
"""

from __future__ import annotations

import contextlib
import errno as _errno
import os
import secrets
from collections.abc import Callable

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem

TEMP_MARKER = ".editspec-"
TEMP_SUFFIX = ".tmp"

# New files get 0o666 filtered by the process umask, as ``open(..., "w")`` would.
DEFAULT_NEW_FILE_MODE = 0o666

_NAME_BUDGET = 120  # bytes of the target's name kept in the temp name (NAME_MAX is 255)
_ATTEMPTS = 8  # fresh random names tried when one collides (EEXIST)


def temp_path_for(real_path: str) -> str:
    """A fresh temp name beside ``real_path``: ``.<name>.editspec-<hex>.tmp``."""
    directory, name = os.path.split(real_path)
    encoded = os.fsencode(name)
    if len(encoded) > _NAME_BUDGET:
        name = os.fsdecode(encoded[:_NAME_BUDGET])
    return os.path.join(directory, f".{name}{TEMP_MARKER}{secrets.token_hex(8)}{TEMP_SUFFIX}")


def is_temp_name(name: str) -> bool:
    """True for names ``temp_path_for`` produces (used to tell leftovers apart)."""
    return name.startswith(".") and TEMP_MARKER in name and name.endswith(TEMP_SUFFIX)


def _create_temp(fs: FileSystem, real_path: str, mode: int) -> tuple[str, int]:
    for attempt in range(_ATTEMPTS):
        temp = temp_path_for(real_path)
        try:
            return temp, fs.create_exclusive(temp, mode)
        except FileExistsError:
            if attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _discard(fs: FileSystem, temp: str, fd: int | None) -> None:
    """Best-effort cleanup after a failure: close and unlink the temp file."""
    if fd is not None:
        with contextlib.suppress(OSError):
            fs.close(fd)
    for _attempt in range(2):  # one retry: a transient error must not leave the temp file
        try:
            fs.unlink(temp)
        except FileNotFoundError:
            return
        except OSError:
            continue
        return


def _as_tool_error(exc: OSError, real_path: str) -> ToolError:
    error = _errors.from_oserror(exc, real_path, action="write")
    if error.code != _errors.IO_ERROR:
        # ENOENT, EEXIST, ... here come from the environment (a directory removed under
        # us), not from the caller's request: report them as I/O errors, errno kept.
        error = ToolError(_errors.IO_ERROR, error.message, errno=exc.errno, path=real_path)
        error.__cause__ = exc
    return error


def _publish(
    fs: FileSystem,
    real_path: str,
    data: bytes,
    *,
    create_mode: int,
    mode: int | None,
    verify: Callable[[], None] | None,
    install: Callable[[str], tuple[str, ...]],
    undo: Callable[[], None] | None,
) -> tuple[str, ...]:
    temp: str | None = None
    fd: int | None = None
    try:
        temp, fd = _create_temp(fs, real_path, create_mode)
        fs.write(fd, data)
        if mode is not None:
            fs.fchmod(fd, mode)
        fs.fsync(fd)
        closing, fd = fd, None
        fs.close(closing)
        if verify is not None:
            verify()
        warnings = install(temp)
    except BaseException as exc:
        # Also on KeyboardInterrupt: a live process leaves no temp file. After a
        # simulated crash the dead file system refuses the cleanup, as a kill would.
        if temp is not None:
            _discard(fs, temp, fd)
        if isinstance(exc, OSError):
            raise _as_tool_error(exc, real_path) from exc
        raise
    try:
        fs.fsync_dir(os.path.dirname(real_path))
    except OSError as exc:
        return warnings + _make_durable(fs, real_path, data, create_mode, mode, undo, exc)
    return warnings


def _make_durable(
    fs: FileSystem,
    real_path: str,
    data: bytes,
    create_mode: int,
    mode: int | None,
    undo: Callable[[], None] | None,
    cause: OSError,
) -> tuple[str, ...]:
    """The directory fsync after the publish failed: publish again, or undo; never a
    success that a power cut could take back."""
    why = cause.strerror or str(cause)
    try:
        republish(fs, real_path, data, expected=data, create_mode=create_mode, mode=mode)
    except OSError:
        pass
    else:
        return (
            f"the directory of the file could not be synced ({why}); the file was "
            "published again and that was synced",
        )
    if undo is not None:
        try:
            undo()
        except OSError as exc:
            cause_of_undo: OSError | None = exc
        else:
            raise ToolError(
                _errors.IO_ERROR,
                f"{real_path} could not be made durable (its directory could not be synced: "
                f"{why}); the change was undone, the file is as before",
                errno=cause.errno,
                path=real_path,
            ) from cause
    else:
        cause_of_undo = None
    raise ToolError(
        _errors.NEEDS_RECOVERY,
        f"{real_path} holds the new bytes, but neither they nor the old ones could be made "
        f"durable (its directory could not be synced: {why}); after a power loss it may "
        "hold either",
        errno=cause.errno,
        path=real_path,
        undo_error=None if cause_of_undo is None else str(cause_of_undo),
    ) from cause


def republish(
    fs: FileSystem,
    real_path: str,
    data: bytes,
    *,
    expected: bytes,
    create_mode: int,
    mode: int | None,
) -> None:
    """Publish ``data`` at ``real_path`` as a fresh file renamed over it, then sync the
    directory: a new rename whose durability a successful fsync proves. The target must
    still hold ``expected`` (the bytes this process put there), or nothing is renamed
    over it (OSError: another writer's file is never clobbered). The temp file is
    removed on failure."""
    temp, fd = _create_temp(fs, real_path, create_mode)
    try:
        fs.write(fd, data)
        if mode is not None:
            fs.fchmod(fd, mode)
        fs.fsync(fd)
        closing, fd = fd, -1
        fs.close(closing)
        if fs.read_bytes_unless(real_path, expected) != expected:
            raise OSError(_errno.ESTALE, "changed by another writer meanwhile", real_path)
        fs.rename(temp, real_path)
    except Exception:
        _discard(fs, temp, fd if fd >= 0 else None)
        raise
    fs.fsync_dir(os.path.dirname(real_path))


def _unpublish(fs: FileSystem, real_path: str, data: bytes) -> None:
    """Undo the creation of ``real_path`` (still holding ``data``), durably."""
    if fs.read_bytes_unless(real_path, data) != data:
        raise OSError(_errno.ESTALE, "changed by another writer meanwhile", real_path)
    fs.unlink(real_path)
    fs.fsync_dir(os.path.dirname(real_path))


def atomic_replace(
    fs: FileSystem,
    real_path: str,
    data: bytes,
    *,
    mode: int | None = None,
    verify: Callable[[], None] | None = None,
    previous: bytes | None = None,
) -> tuple[str, ...]:
    """Replace ``real_path`` with ``data`` atomically; return warnings (usually none).

    ``mode``: permission bits for the new file (the old file's, to keep them); None lets
    the umask decide. ``verify``: called just before the rename; it re-reads the target
    and raises (STALE) if the disk is not what the caller planned against. ``previous``:
    the old bytes, put back if the publish cannot be made durable. Failures are
    ``ToolError``: IO_ERROR with the errno, or whatever ``verify`` raised; the target is
    then unchanged and no temp file is left; NEEDS_RECOVERY when the new bytes are in
    place but neither they nor the old ones could be synced (without ``previous``: as
    soon as the new ones cannot be). Spec: WRITE-* (atomic, mode kept, no temp file
    left), TRACK-* (re-verification inside the critical section).
    """
    create_mode = 0o600 if mode is not None else DEFAULT_NEW_FILE_MODE

    def undo() -> None:
        assert previous is not None
        republish(fs, real_path, previous, expected=data, create_mode=create_mode, mode=mode)

    return _publish(
        fs,
        real_path,
        data,
        create_mode=create_mode,
        mode=mode,
        verify=verify,
        install=lambda temp: _rename(fs, temp, real_path),
        undo=undo if previous is not None else None,
    )


def _rename(fs: FileSystem, temp: str, real_path: str) -> tuple[str, ...]:
    fs.rename(temp, real_path)
    return ()


def atomic_create(
    fs: FileSystem,
    real_path: str,
    data: bytes,
    *,
    mode: int | None = None,
) -> tuple[str, ...]:
    """Publish a new file at ``real_path`` atomically and without clobbering; return warnings.

    The temp file is hard-linked into place (``link`` fails if anything appeared there:
    STALE) and then unlinked. On a file system without hard links the rename is used
    after a last existence check. Spec: WRITE-* (create needs no read, atomic).
    """
    create_mode = 0o600 if mode is not None else DEFAULT_NEW_FILE_MODE

    def install(temp: str) -> tuple[str, ...]:
        try:
            fs.link(temp, real_path)
        except FileExistsError:
            raise _appeared(real_path) from None
        except OSError as exc:
            if exc.errno not in (_errno.EPERM, _errno.EOPNOTSUPP, _errno.ENOTSUP, _errno.EXDEV):
                raise
            if fs.lexists(real_path):
                raise _appeared(real_path) from None
            fs.rename(temp, real_path)
            return ()
        # The file is published; undoing it would be worse than an extra name, so a
        # failed unlink of the temp name is retried once, then reported.
        for attempt in range(2):
            try:
                fs.unlink(temp)
            except OSError as exc:
                if attempt:
                    return (
                        f"a temporary link {os.path.basename(temp)} could not be removed "
                        f"({exc.strerror or exc})",
                    )
            else:
                break
        return ()

    return _publish(
        fs,
        real_path,
        data,
        create_mode=create_mode,
        mode=mode,
        verify=None,
        install=install,
        undo=lambda: _unpublish(fs, real_path, data),
    )


def _appeared(real_path: str) -> ToolError:
    return ToolError(
        _errors.STALE,
        f"{real_path} appeared on disk while it was being created; read it first",
        path=real_path,
    )
