"""Power loss for any Python implementation: the trace of its ``os`` calls, as the model's.

A driver with the ``python_fs`` capability reaches the disk through ``os`` and ``open``,
which ``osfaults.OsInterceptor`` intercepts. ``OsTraceRecorder`` observes an
interceptor and turns what it sees into the ``TraceOp`` trace that
``editspec.fault_injection.powerloss`` replays, over an image of the roots captured when
recording starts, so every state a power cut can leave is enumerated for that
implementation as for the reference's own port:

* every descriptor is followed from its ``open`` (``os.open`` whatever its flags, and
  ``open()``) to its ``close``, with its path (relative names resolved against their
  ``dir_fd``, directories made real) and the identity of the file it opened, so a
  descriptor number reused by something the interceptor does not see is never mistaken
  for the file;
* file calls: creating opens, writes with the offset they landed at (``write``,
  ``pwrite``, ``writev``, ``sendfile``, ``copy_file_range``, an ``open()`` file's writes
  as encoded bytes), ``ftruncate`` and ``O_TRUNC``, ``fsync``/``fdatasync``, ``fchmod``;
  an ``fsync`` of a directory descriptor is the directory's fsync;
* entry calls by path: ``rename``/``replace``, ``link``, ``symlink``, ``unlink``/``remove``,
  ``mkdir``, ``rmdir``, ``truncate``, ``chmod``; and ``sync``;
* calls the model has no meaning for (``mknod``, ``mkfifo``) are listed in
  ``unmodeled``; a check refuses to judge a trace that has any.

``driver_power.check_driver_power_loss(factory, sandbox, scenario)`` runs a driver
through a scenario with this recorder and judges every state.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection._trace import Recording
from editspec.fault_injection.powerloss import (
    TraceOp,
)

__all__ = ["OsTraceRecorder"]

_UNMODELED = frozenset({"mknod", "mkfifo"})


@attrs.define
class _Open:
    path: str
    directory: bool
    identity: tuple[int, int]
    mode: int = 0
    traced: bool = True  # its "open" is in the trace (a file opened only to be read is
    # put there when something is done through it: an fsync, say)


class OsTraceRecorder(Recording):
    """Record the os-level calls of an ``OsInterceptor`` as a power-loss trace.

    Used like ``powerloss.TraceRecorder``: ``start(interceptor)`` captures the image of
    ``roots`` and records every later call; ``ops``, ``image`` and ``roots`` are what
    ``powerloss.check_power_loss`` and ``power_loss_states`` take.
    """

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        super().__init__(roots)
        self.unmodeled: list[str] = []
        self._fds: dict[int, _Open] = {}

    def start(self, source: Any) -> None:
        """Capture the image now and record every later call the interceptor sees."""
        super().start(source)
        self.unmodeled = []

    # -- paths and descriptors -------------------------------------------------------

    def _base(self, dir_fd: int | None) -> str | None:
        if dir_fd is None:
            return os.getcwd()
        known = self._fds.get(dir_fd)
        if known is not None and known.directory and self._same(dir_fd, known):
            return known.path
        return None

    def _path(self, value: Any, dir_fd: int | None = None) -> str | None:
        """The absolute path a call named, its directory made real (None: unknown)."""
        if isinstance(value, int):
            known = self._fds.get(value)
            return known.path if known is not None and self._same(value, known) else None
        path = os.fsdecode(os.fspath(value))
        if not os.path.isabs(path):
            base = self._base(dir_fd)
            if base is None:
                return None
            path = os.path.join(base, path)
        parent, name = os.path.split(os.path.normpath(path))
        if not name:
            return parent
        return os.path.join(os.path.realpath(parent), name)

    @staticmethod
    def _same(fd: int, known: _Open) -> bool:
        try:
            info = os.fstat(fd)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == known.identity

    def _file(self, fd: Any, index: int = 0) -> _Open | None:
        """The file open at ``fd`` if it is one this recorder followed from its open."""
        if not isinstance(fd, int):
            return None
        known = self._fds.get(fd)
        if known is None or known.directory:
            return None
        if not self._same(fd, known):
            del self._fds[fd]
            return None
        if not known.traced:  # something is done through it: the model needs its open
            known.traced = True
            self._add("open", index, paths=(known.path,), fd=fd, mode=known.mode)
        return known

    def _add(self, name: str, index: int, **fields: Any) -> None:
        self.ops.append(TraceOp(position=len(self.ops), name=name, index=index, **fields))

    # -- the events ------------------------------------------------------------------

    def __call__(self, event: Any) -> None:
        name, index, args, kwargs = event.name, event.index, event.args, event.kwargs
        handler = getattr(self, "_on_" + name.replace(".", "_"), None)
        if handler is not None:
            handler(index, args, kwargs, event.result)
        elif name in _UNMODELED:
            self.unmodeled.append(name)

    def _on_open(
        self, index: int, args: tuple[Any, ...], kwargs: Mapping[str, Any], fd: Any
    ) -> None:
        flags = int(args[1]) if len(args) > 1 else int(kwargs.get("flags", os.O_RDONLY))
        path = self._path(args[0], kwargs.get("dir_fd"))
        if path is None or not isinstance(fd, int):
            return
        info = os.fstat(fd)
        identity = (info.st_dev, info.st_ino)
        if stat.S_ISDIR(info.st_mode):
            self._fds[fd] = _Open(os.path.realpath(path), True, identity)
            return
        if not stat.S_ISREG(info.st_mode):
            self._fds.pop(fd, None)
            return
        if not flags & getattr(os, "O_NOFOLLOW", 0) and os.path.islink(path):
            path = os.path.realpath(path)  # the file the link led to was opened
        writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
        opened = _Open(path, False, identity, stat.S_IMODE(info.st_mode), traced=writing)
        self._fds[fd] = opened
        if writing:
            self._add("open", index, paths=(path,), fd=fd, mode=opened.mode)
        if writing and flags & os.O_TRUNC:
            self._add("truncate", index, paths=(path,), fd=fd, size=0)

    def _on_close(self, index: int, args: tuple[Any, ...], kwargs: Any, result: Any) -> None:
        known = self._fds.pop(args[0], None)
        if known is not None and not known.directory and known.traced:
            self._add("close", index, paths=(known.path,), fd=args[0])

    _on_file_close = _on_close

    def _written(self, index: int, fd: int, data: bytes, offset: int) -> None:
        known = self._file(fd, index)
        if known is not None and data:
            self._add("write", index, paths=(known.path,), fd=fd, data=data, offset=offset)

    def _on_write(self, index: int, args: tuple[Any, ...], kwargs: Any, written: Any) -> None:
        fd, data = args[0], bytes(memoryview(args[1]).cast("B")[: int(written)])
        if self._file(fd) is not None:
            self._written(index, fd, data, os.lseek(fd, 0, os.SEEK_CUR) - len(data))

    def _on_pwrite(self, index: int, args: tuple[Any, ...], kwargs: Any, written: Any) -> None:
        fd, data, offset = args[0], bytes(memoryview(args[1]).cast("B")[: int(written)]), args[2]
        self._written(index, fd, data, int(offset))

    def _on_writev(self, index: int, args: tuple[Any, ...], kwargs: Any, written: Any) -> None:
        fd = args[0]
        data = b"".join(bytes(memoryview(b).cast("B")) for b in args[1])[: int(written)]
        if self._file(fd) is not None:
            self._written(index, fd, data, os.lseek(fd, 0, os.SEEK_CUR) - len(data))

    def _on_pwritev(self, index: int, args: tuple[Any, ...], kwargs: Any, written: Any) -> None:
        data = b"".join(bytes(memoryview(b).cast("B")) for b in args[1])[: int(written)]
        self._written(index, args[0], data, int(args[2]))

    def _copied(self, index: int, out_fd: int, in_fd: int, start: int, count: int) -> None:
        if count <= 0 or self._file(out_fd) is None:
            return
        data = os.pread(in_fd, count, start)
        self._written(index, out_fd, data, os.lseek(out_fd, 0, os.SEEK_CUR) - count)

    def _on_sendfile(self, index: int, args: tuple[Any, ...], kwargs: Any, sent: Any) -> None:
        out_fd, in_fd, offset = args[0], args[1], args[2] if len(args) > 2 else None
        count = int(sent)
        start = os.lseek(in_fd, 0, os.SEEK_CUR) - count if offset is None else int(offset)
        self._copied(index, out_fd, in_fd, start, count)

    def _on_copy_file_range(
        self, index: int, args: tuple[Any, ...], kwargs: Mapping[str, Any], copied: Any
    ) -> None:
        src, dst = args[0], args[1]
        offset_src = args[3] if len(args) > 3 else kwargs.get("offset_src")
        offset_dst = args[4] if len(args) > 4 else kwargs.get("offset_dst")
        count = int(copied)
        if count <= 0 or self._file(dst) is None:
            return
        start = os.lseek(src, 0, os.SEEK_CUR) - count if offset_src is None else int(offset_src)
        data = os.pread(src, count, start)
        where = os.lseek(dst, 0, os.SEEK_CUR) - count if offset_dst is None else int(offset_dst)
        self._written(index, dst, data, where)

    def _on_file_write(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        self._written(index, args[0], args[1], args[2])

    def _on_fsync(self, index: int, args: tuple[Any, ...], kwargs: Any, result: Any) -> None:
        fd = args[0]
        known = self._fds.get(fd)
        if known is None or not self._same(fd, known):
            return
        if known.directory:
            self._add("fsync_dir", index, paths=(known.path,))
        elif self._file(fd, index) is not None:
            self._add("fsync", index, paths=(known.path,), fd=fd)

    _on_fdatasync = _on_fsync

    def _on_ftruncate(self, index: int, args: tuple[Any, ...], kwargs: Any, result: Any) -> None:
        known = self._file(args[0], index)
        if known is not None:
            self._add("truncate", index, paths=(known.path,), fd=args[0], size=int(args[1]))

    def _on_fchmod(self, index: int, args: tuple[Any, ...], kwargs: Any, result: Any) -> None:
        known = self._file(args[0], index)
        if known is not None:
            mode = stat.S_IMODE(int(args[1]))
            self._add("fchmod", index, paths=(known.path,), fd=args[0], mode=mode)

    def _on_truncate(
        self, index: int, args: tuple[Any, ...], kwargs: Mapping[str, Any], _: Any
    ) -> None:
        if isinstance(args[0], int):
            self._on_ftruncate(index, args, kwargs, None)
            return
        path = self._path(args[0])
        if path is not None:
            self._add("truncate", index, paths=(os.path.realpath(path),), size=int(args[1]))

    def _on_chmod(
        self, index: int, args: tuple[Any, ...], kwargs: Mapping[str, Any], _: Any
    ) -> None:
        if isinstance(args[0], int):
            self._on_fchmod(index, args, kwargs, None)
            return
        path = self._path(args[0], kwargs.get("dir_fd"))
        if path is not None:
            if kwargs.get("follow_symlinks", True):
                path = os.path.realpath(path)
            self._add("chmod", index, paths=(path,), mode=stat.S_IMODE(int(args[1])))

    def _two(self, name: str, index: int, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        src = self._path(args[0], kwargs.get("src_dir_fd"))
        dst = self._path(args[1], kwargs.get("dst_dir_fd"))
        if src is None or dst is None:
            self.unmodeled.append(f"{name} through an unknown directory descriptor")
            return
        self._add(name, index, paths=(src, dst))

    def _on_rename(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        self._two("rename", index, args, kwargs)

    _on_replace = _on_rename

    def _on_link(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        self._two("link", index, args, kwargs)

    def _one(self, name: str, index: int, path_arg: Any, kwargs: Mapping[str, Any]) -> str | None:
        path = self._path(path_arg, kwargs.get("dir_fd"))
        if path is None:
            self.unmodeled.append(f"{name} through an unknown directory descriptor")
        return path

    def _on_unlink(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        path = self._one("unlink", index, args[0], kwargs)
        if path is not None:
            self._add("unlink", index, paths=(path,))

    _on_remove = _on_unlink

    def _on_rmdir(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        path = self._one("rmdir", index, args[0], kwargs)
        if path is not None:
            self._add("rmdir", index, paths=(path,))

    def _on_mkdir(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        path = self._one("mkdir", index, args[0], kwargs)
        if path is not None:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            self._add("mkdir", index, paths=(path,), mode=mode)

    def _on_symlink(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        path = self._one("symlink", index, args[1], kwargs)
        if path is not None:
            self._add("symlink", index, paths=(path,), target=os.fsdecode(args[0]))

    def _on_sync(self, index: int, args: tuple[Any, ...], kwargs: Any, _: Any) -> None:
        self._add("sync", index, paths=())
