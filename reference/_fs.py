"""The file-system port: the only module of the engine that touches ``os`` or ``open``.

Every effect the engine has on the disk is one call of a ``FileSystem`` method, so
``editspec.fault_injection`` can wrap an instance to count, log, crash and fail
operations deterministically, and a durability model can replay the trace.

Rules of the port:

* Paths are absolute strings and *real*: the engine resolves every user path
  (``_paths.resolve``) and the state directory before it calls the port, so no
  directory component of a path given here is a symlink.
* With ``secure_walk`` (the default where the platform supports ``dir_fd``), every
  operation opens the parent directory by walking from ``/`` with
  ``O_NOFOLLOW | O_DIRECTORY`` and acts relative to that descriptor. A directory
  swapped for a symlink between the engine's check and this use makes the walk
  fail with ``ELOOP``/``ENOTDIR`` instead of redirecting the write (PATH: TOCTOU).
* Methods raise ``OSError`` unchanged; the engine turns them into ``ToolError``.
* ``MUTATING`` names the methods that change the disk; crash plans count them.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno as _errno
import itertools
import os
import stat as _stat
import sys
from collections.abc import Callable, Iterable, Iterator

from editspec.reference._supports import LOCAL_DISK, Supports

try:  # POSIX advisory locks; absent on Windows, where locks stay in-process.
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - exercised only on Windows
    _fcntl = None  # type: ignore[assignment]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# Whether a directory can be listed through a handle (its entries' stat then uses fstatat).
_SCANDIR_FD = os.scandir in os.supports_fd
# Compared a piece at a time by ``read_bytes_unless``: small enough to stay in the CPU's cache.
_COMPARE_CHUNK = 256 * 1024

MUTATING: frozenset[str] = frozenset(
    {
        "create_exclusive",
        "open_append",
        "write",
        "fsync",
        "close",
        "fsync_dir",
        "rename",
        "rename_noreplace",
        "link",
        "unlink",
        "mkdir",
        "rmdir",
        "symlink",
        "fchmod",
    }
)


#: ``renameat2``'s flag: fail with EEXIST rather than replace the destination (Linux 3.15+).
_RENAME_NOREPLACE = 1
_AT_FDCWD = -100
#: The ``os`` function the port calls for a rename, as imported: when something has
#: replaced it since (an os-level interceptor, an in-memory file system), a system call
#: made through ``ctypes`` would bypass it, so ``rename_noreplace`` is refused instead.
_OS_REPLACE = os.replace
#: Errors that mean "no such operation here" (no ``renameat2``, or a file system that
#: does not take the flag): the caller falls back to another way.
NOREPLACE_UNAVAILABLE = frozenset(
    {_errno.ENOSYS, _errno.EINVAL, _errno.ENOTSUP, getattr(_errno, "EOPNOTSUPP", _errno.ENOTSUP)}
)


def _load_renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2  # glibc 2.28+, musl 1.2.2+
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    function.argtypes += [ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _load_renameat2()


def _platform_supports_secure_walk() -> bool:
    return bool(_O_NOFOLLOW and _O_DIRECTORY) and os.open in os.supports_dir_fd


class FileSystem:
    """The default port: real ``os`` calls."""

    #: What the port offers a session: everything (bytes, directories, rename, fsync, journal).
    supports: Supports = LOCAL_DISK

    def __init__(self, *, secure_walk: bool | None = None) -> None:
        self.secure_walk = _platform_supports_secure_walk() if secure_walk is None else secure_walk

    # -- the secure walk -------------------------------------------------------

    @contextlib.contextmanager
    def _parent(self, path: str) -> Iterator[tuple[int | None, str]]:
        """Yield ``(dir_fd, name)`` for ``path``; ``dir_fd`` is None without secure walk."""
        parent, name = os.path.split(path)
        if not self.secure_walk:
            yield None, path
            return
        fd = self._open_dir_nofollow(parent)
        try:
            yield fd, name
        finally:
            os.close(fd)

    def _open_dir_nofollow(self, directory: str) -> int:
        flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
        fd = os.open(os.sep, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            for part in directory.split(os.sep):
                if not part:
                    continue
                next_fd = os.open(part, flags, dir_fd=fd)
                os.close(fd)
                fd = next_fd
        except BaseException:
            os.close(fd)
            raise
        return fd

    # -- queries (not counted as mutations) -----------------------------------

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def lstat(self, path: str) -> os.stat_result:
        if os.path.dirname(path) == path:  # the file-system root has no parent to walk
            return os.stat(path, follow_symlinks=False)
        with self._parent(path) as (dir_fd, name):
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)

    def stat(self, path: str) -> os.stat_result:
        return os.stat(path)

    def lexists(self, path: str) -> bool:
        try:
            self.lstat(path)
        except FileNotFoundError:
            return False
        except NotADirectoryError:
            return False
        return True

    def readlink(self, path: str) -> str:
        with self._parent(path) as (dir_fd, name):
            return os.readlink(name, dir_fd=dir_fd)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def scandir(self, path: str) -> Iterator[os.DirEntry[str]]:
        """Entries of a directory; ``DirEntry`` caches types, which search depends on.

        Read whole, so the directory handle is closed before the caller iterates."""
        with os.scandir(path) as entries:
            return iter(list(entries))

    def scandir_held(self, path: str) -> tuple[list[os.DirEntry[str]], int | None]:
        """Entries of a directory, read whole, and the directory's handle, left open.

        While the handle is open, an entry's ``stat`` looks its name up in that directory
        (``fstatat``) instead of resolving the whole path again, and ``read_bytes_at``
        reads a file of it; the caller owes ``release_dir(handle)``, and must not use an
        entry's ``stat`` after it. The handle is None (the listing is ``scandir``'s) where
        the platform lists no directory by handle, without ``secure_walk``, and for a
        subclass: a port that wraps or replaces calls sees every listing and read.
        """
        if type(self) is not FileSystem or not (self.secure_walk and _SCANDIR_FD):
            return list(self.scandir(path)), None
        fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            with os.scandir(fd) as entries:
                return list(entries), fd
        except BaseException:
            os.close(fd)
            raise

    def read_bytes_at(self, handle: int, name: str) -> bytes:
        """``read_bytes`` of the file ``name`` of a directory held by ``scandir_held``."""
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, dir_fd=handle)
        try:
            return _read_regular(fd, None, name)
        finally:
            os.close(fd)

    def release_dir(self, handle: int) -> None:
        """Close a directory handle of ``scandir_held``."""
        os.close(handle)

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        """Read a regular file without following a symlink in its last component."""
        with self._parent(path) as (dir_fd, name):
            fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, dir_fd=dir_fd)
        try:
            if not _stat.S_ISREG(os.fstat(fd).st_mode):
                raise IsADirectoryError(21, "not a regular file", path)
            if offset:
                os.lseek(fd, offset, os.SEEK_SET)
            if limit is None and not offset:
                # One buffer of the file's size, filled in place: no chunks to join and
                # no large allocation per read call, which is much faster on big files.
                with os.fdopen(fd, "rb", buffering=0, closefd=False) as raw:
                    return raw.read()
            chunks: list[bytes] = []
            remaining = limit
            while remaining is None or remaining > 0:
                size = 1 << 20 if remaining is None else min(1 << 20, remaining)
                chunk = os.read(fd, size)
                if not chunk:
                    break
                chunks.append(chunk)
                if remaining is not None:
                    remaining -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_bytes_unless(self, path: str, known: bytes) -> bytes:
        """``read_bytes(path)``, but ``known`` itself when the file holds exactly ``known``.

        The file is compared while it is read, a small buffer at a time, so confirming
        that a large file did not change costs no new copy of it (the engine re-reads a
        file it remembers, before an edit and again just before the rename). Any
        difference, in length or in a byte, returns the file's bytes as read.
        """
        with self._parent(path) as (dir_fd, name):
            fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, dir_fd=dir_fd)
        try:
            st = os.fstat(fd)
            if not _stat.S_ISREG(st.st_mode):
                raise IsADirectoryError(21, "not a regular file", path)
            if st.st_size != len(known):
                return _read_regular(fd, None, path)
            position = 0
            while position < len(known):
                chunk = os.read(fd, min(_COMPARE_CHUNK, len(known) - position))
                if not chunk or not known.startswith(chunk, position):
                    # Different: what was read so far is ``known``'s prefix (plus this chunk).
                    rest = _read_rest(fd) if chunk else b""
                    return b"".join((known[:position], chunk, rest))
                position += len(chunk)
            extra = os.read(fd, 1)  # grown since the fstat?
            return b"".join((known, extra, _read_rest(fd))) if extra else known
        finally:
            os.close(fd)

    def read_files(
        self, directory: str, names: Iterable[str], *, limit: int | None = None
    ) -> Iterator[tuple[str, bytes | OSError]]:
        """Read regular files of one directory, opened once (search reads many small files).

        Each name is opened relative to the directory without following a symlink (and
        without blocking on a FIFO); one that cannot be read yields its ``OSError`` in
        place of its bytes, and the others are still read. ``limit`` caps each file.
        """
        flags = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY | _O_NONBLOCK
        dir_fd = self._open_dir_nofollow(directory) if self.secure_walk else None
        try:
            for name in names:
                result: bytes | OSError
                try:
                    if dir_fd is None:
                        fd = os.open(os.path.join(directory, name), flags)
                    else:
                        fd = os.open(name, flags, dir_fd=dir_fd)
                except OSError as exc:
                    result = exc
                else:
                    try:
                        result = _read_regular(fd, limit, os.path.join(directory, name))
                    except OSError as exc:
                        result = exc
                    finally:
                        os.close(fd)
                yield name, result
        finally:
            if dir_fd is not None:
                os.close(dir_fd)

    # -- mutations (counted, crashable) ----------------------------------------

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        """Create a new file that must not exist (``O_CREAT|O_EXCL``); return its fd."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
        with self._parent(path) as (dir_fd, name):
            return os.open(name, flags, mode, dir_fd=dir_fd)

    def open_append(self, path: str) -> int:
        """Open an existing regular file for writing at its end (``O_APPEND``); return its fd.

        Never creates the file and never follows a symlink in the last component. The
        journal's revocation is the one user: a record already renamed into place is
        amended through its own inode when its directory could not be synced.
        """
        flags = os.O_WRONLY | os.O_APPEND | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
        with self._parent(path) as (dir_fd, name):
            fd = os.open(name, flags, dir_fd=dir_fd)
        try:
            if not _stat.S_ISREG(os.fstat(fd).st_mode):
                raise IsADirectoryError(21, "not a regular file", path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def write(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def fchmod(self, fd: int, mode: int) -> None:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)

    def close(self, fd: int) -> None:
        os.close(fd)

    def fsync_dir(self, path: str) -> None:
        if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
            return
        if self.secure_walk:
            fd = self._open_dir_nofollow(path)
        else:
            fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, src: str, dst: str) -> None:
        """``os.replace``: atomic, overwrites ``dst``; between two links of one file, a no-op."""
        with self._parent(src) as (src_fd, src_name), self._parent(dst) as (dst_fd, dst_name):
            os.replace(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def rename_noreplace(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` atomically unless ``dst`` exists (then EEXIST).

        ``renameat2(RENAME_NOREPLACE)``: the check and the rename are one system call, so
        no other process can create ``dst`` in between (MOVE-002). Raises an ``OSError``
        whose errno is in ``NOREPLACE_UNAVAILABLE`` where there is no such call (not
        Linux, an old C library or kernel, a file system without the flag) or where the
        ``os`` module has been replaced (the call would bypass whatever replaced it)."""
        if _RENAMEAT2 is None or os.replace is not _OS_REPLACE:
            raise OSError(_errno.ENOSYS, "renameat2(RENAME_NOREPLACE) is not available", src)
        with self._parent(src) as (src_fd, src_name), self._parent(dst) as (dst_fd, dst_name):
            result = _RENAMEAT2(
                _AT_FDCWD if src_fd is None else src_fd,
                os.fsencode(src_name),
                _AT_FDCWD if dst_fd is None else dst_fd,
                os.fsencode(dst_name),
                _RENAME_NOREPLACE,
            )
            if result != 0:
                number = ctypes.get_errno()
                raise OSError(number, os.strerror(number), src, None, dst)

    def link(self, src: str, dst: str) -> None:
        """Hard-link ``src`` at ``dst``; fails with EEXIST if ``dst`` exists (no clobber)."""
        with self._parent(src) as (src_fd, src_name), self._parent(dst) as (dst_fd, dst_name):
            os.link(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)

    def unlink(self, path: str) -> None:
        with self._parent(path) as (dir_fd, name):
            os.unlink(name, dir_fd=dir_fd)

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        with self._parent(path) as (dir_fd, name):
            os.mkdir(name, mode, dir_fd=dir_fd)

    def rmdir(self, path: str) -> None:
        with self._parent(path) as (dir_fd, name):
            os.rmdir(name, dir_fd=dir_fd)

    def symlink(self, target: str, path: str) -> None:
        """Create the symlink ``path`` -> ``target``; EEXIST if ``path`` exists."""
        with self._parent(path) as (dir_fd, name):
            os.symlink(target, name, dir_fd=dir_fd)

    # -- cross-process lock (not a disk effect) ---------------------------------

    def lock_file(self, path: str, *, shared: bool = False) -> int:
        """Open (creating) ``path`` and take an advisory ``flock``; blocks until granted."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_CLOEXEC, 0o600)
        if _fcntl is not None:
            try:
                _fcntl.flock(fd, _fcntl.LOCK_SH if shared else _fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
        return fd

    def unlock(self, handle: int) -> None:
        if _fcntl is not None:
            _fcntl.flock(handle, _fcntl.LOCK_UN)
        os.close(handle)


def _read_regular(fd: int, limit: int | None, path: str) -> bytes:
    """The bytes of an open regular file, in as few reads as its size allows."""
    st = os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(21, "not a regular file", path)
    wanted = st.st_size + 1 if limit is None else min(limit, st.st_size + 1)
    chunks: list[bytes] = []
    total = 0
    while limit is None or total < limit:
        if limit is not None:
            size = min(limit - total, 1 << 20)
        else:
            size = wanted - total if wanted > total else 1 << 16
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_rest(fd: int) -> bytes:
    """Whatever an open file has left to read, to its end."""
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def default_state_dir() -> str:
    """``$XDG_STATE_HOME/editspec`` or ``~/.local/state/editspec``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "editspec")


def makedirs(fs: FileSystem, path: str, mode: int = 0o700) -> list[str]:
    """Create ``path`` (absolute) and its missing parents through the port; return those
    created, top first."""
    ancestors = [path]  # the path and every parent up to the file system root
    while (parent := os.path.dirname(ancestors[-1])) != ancestors[-1]:
        ancestors.append(parent)
    missing = list(itertools.takewhile(lambda directory: not fs.lexists(directory), ancestors))
    created: list[str] = []
    for directory in reversed(missing):
        try:
            fs.mkdir(directory, mode)
        except FileExistsError:
            continue
        created.append(directory)
    return created
