"""The file calls of an strace log that become trace operations: writes, truncations,
syncs, mode changes and entry calls (``FileAndEntryCalls``, a part of
``strace_record.StraceRecording``), and the descriptor records they work on.

``StraceRecording`` keeps the descriptor tables, the working directories and the
trace (``_add``, ``_held``, ``_file``, ``_resolve``, ``_size``); the methods here are
its handlers, one per system call (``_on_<name>``), split off its descriptor
bookkeeping: a write lands at its descriptor's offset (or at the end with
``O_APPEND``), an entry call is resolved against its directory descriptor or the
thread's working directory, and what the model cannot replay goes to ``unmodeled``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs

from editspec.fault_injection._trace import (
    TraceOp,
)
from editspec.fault_injection.strace_log import (
    Call,
    Inexact,
    as_int,
    decode_string,
    fd_and_path,
    mode_of,
    result_of,
)


@attrs.define
class Description:
    """An open file description: what the model calls a descriptor."""

    number: int  # its number in the trace
    path: str
    directory: bool
    append: bool = False
    offset: int = 0
    traced: bool = False  # its "open" is in the trace


@attrs.define
class Task:
    """What a thread shares or not with others: its descriptor table, cwd and umask."""

    table: dict[int, Description]
    cwd: list[str]  # one cell, shared by threads that share their file system info
    umask: list[int]


AT_REMOVEDIR = "AT_REMOVEDIR"


class FileAndEntryCalls:
    """The handlers of ``StraceRecording`` for calls that change files and entries."""

    # what StraceRecording provides
    ops: list[TraceOp]
    unmodeled: list[str]
    notes: list[str]
    stdout_writes: list[int]
    _add: Any
    _held: Any
    _file: Any
    _resolve: Any
    _size: Any
    _inside: Any
    _sim: Any

    # -- data ----------------------------------------------------------------------------

    def _written(self, task: Task, token: str, data: bytes, offset: int | None) -> None:
        held = self._held(task, token)
        if held is None or held.directory:
            return
        self._file(task, token)
        moves = offset is None
        if offset is None:
            offset = self._size(held) if held.append else held.offset
        if data:
            self._add("write", paths=(held.path,), fd=held.number, data=data, offset=offset)
        if moves:
            held.offset = offset + len(data)

    def _answer(self, token: str) -> bool:
        if fd_and_path(token)[0] == 1:
            self.stdout_writes.append(len(self.ops))
            return True
        return False

    def _on_write(self, task: Task, args: list[str], call: Call) -> None:
        if self._answer(args[0]):
            return
        count = result_of(call) or 0
        data = decode_string(args[1])
        if len(data) < count:
            raise Inexact(f"write of {count} bytes shows {len(data)}")
        self._written(task, args[0], data[:count], None)

    def _on_pwrite64(self, task: Task, args: list[str], call: Call) -> None:
        count = result_of(call) or 0
        data = decode_string(args[1])
        if len(data) < count:
            raise Inexact(f"pwrite of {count} bytes shows {len(data)}")
        self._written(task, args[0], data[:count], as_int(args[3]))

    @staticmethod
    def _vector(token: str, count: int) -> bytes:
        pieces = re.findall(r'iov_base=("(?:[^"]*)"(?:\.\.\.)?)', token)
        data = b"".join(decode_string(piece) for piece in pieces)
        if len(data) < count:
            raise Inexact(f"a vector write of {count} bytes shows {len(data)}")
        return data[:count]

    def _on_writev(self, task: Task, args: list[str], call: Call) -> None:
        if self._answer(args[0]):
            return
        self._written(task, args[0], self._vector(args[1], result_of(call) or 0), None)

    def _on_pwritev(self, task: Task, args: list[str], call: Call) -> None:
        offset = as_int(args[3])
        self._written(
            task,
            args[0],
            self._vector(args[1], result_of(call) or 0),
            offset if offset >= 0 else None,
        )

    _on_pwritev2 = _on_pwritev

    def _on_ftruncate(self, task: Task, args: list[str], call: Call) -> None:
        held = self._file(task, args[0])
        if held is not None:
            self._add("truncate", paths=(held.path,), fd=held.number, size=as_int(args[1]))

    def _on_truncate(self, task: Task, args: list[str], call: Call) -> None:
        path = self._resolve(task, None, decode_string(args[0]), follow=True)
        if self._inside(path):
            self._add("truncate", paths=(path,), size=as_int(args[1]))

    def _on_fallocate(self, task: Task, args: list[str], call: Call) -> None:
        held = self._file(task, args[0])
        if held is None:
            return
        if args[1].strip() not in ("0", "FALLOC_FL_KEEP_SIZE"):
            self.unmodeled.append(f"fallocate {args[1].strip()} of {held.path}")
        elif args[1].strip() == "0":
            end = as_int(args[2]) + as_int(args[3])
            if end > self._size(held):
                self._add("truncate", paths=(held.path,), fd=held.number, size=end)

    def _on_fsync(self, task: Task, args: list[str], call: Call) -> None:
        held = self._held(task, args[0])
        if held is None:
            return
        if held.directory:
            self._add("fsync_dir", paths=(held.path,))
        else:
            self._file(task, args[0])
            self._add("fsync", paths=(held.path,), fd=held.number)

    _on_fdatasync = _on_fsync

    def _on_sync_file_range(self, task: Task, args: list[str], call: Call) -> None:
        held = self._held(task, args[0])
        if held is not None:
            self.notes.append(f"sync_file_range of {held.path}: not a durability point")

    def _on_sync(self, task: Task, args: list[str], call: Call) -> None:
        self._add("sync", paths=())

    _on_syncfs = _on_sync

    def _on_fchmod(self, task: Task, args: list[str], call: Call) -> None:
        held = self._file(task, args[0])
        if held is not None:
            self._add("fchmod", paths=(held.path,), fd=held.number, mode=mode_of(args[1]) & 0o7777)

    def _chmod(
        self, task: Task, base: str | None, path_token: str, mode_token: str, follow: bool = True
    ) -> None:
        path = self._resolve(task, base, decode_string(path_token), follow=follow)
        if self._inside(path):
            self._add("chmod", paths=(path,), mode=mode_of(mode_token) & 0o7777)

    def _on_chmod(self, task: Task, args: list[str], call: Call) -> None:
        self._chmod(task, None, args[0], args[1])

    def _on_fchmodat(self, task: Task, args: list[str], call: Call) -> None:
        follow = not (len(args) > 3 and "AT_SYMLINK_NOFOLLOW" in args[3])
        self._chmod(task, args[0], args[1], args[2], follow)

    # -- entries ---------------------------------------------------------------------------

    def _two(
        self, name: str, task: Task, src: tuple[str | None, str], dst: tuple[str | None, str]
    ) -> None:
        source = self._resolve(task, src[0], decode_string(src[1]))
        target = self._resolve(task, dst[0], decode_string(dst[1]))
        inside = self._inside(source), self._inside(target)
        if inside == (True, True):
            self._add(name, paths=(source, target))
        elif any(inside):
            self.unmodeled.append(f"{name} across the roots' boundary: {source} -> {target}")

    def _on_rename(self, task: Task, args: list[str], call: Call) -> None:
        self._two("rename", task, (None, args[0]), (None, args[1]))

    def _on_renameat(self, task: Task, args: list[str], call: Call) -> None:
        self._two("rename", task, (args[0], args[1]), (args[2], args[3]))

    def _on_renameat2(self, task: Task, args: list[str], call: Call) -> None:
        if len(args) > 4 and "RENAME_EXCHANGE" in args[4]:
            self.unmodeled.append("renameat2 with RENAME_EXCHANGE")
            return
        self._on_renameat(task, args, call)

    def _on_link(self, task: Task, args: list[str], call: Call) -> None:
        self._two("link", task, (None, args[0]), (None, args[1]))

    def _on_linkat(self, task: Task, args: list[str], call: Call) -> None:
        self._two("link", task, (args[0], args[1]), (args[2], args[3]))

    def _one(self, name: str, task: Task, base: str | None, token: str, **fields: Any) -> None:
        path = self._resolve(task, base, decode_string(token))
        if self._inside(path):
            self._add(name, paths=(path,), **fields)

    def _on_unlink(self, task: Task, args: list[str], call: Call) -> None:
        self._one("unlink", task, None, args[0])

    def _on_unlinkat(self, task: Task, args: list[str], call: Call) -> None:
        name = "rmdir" if len(args) > 2 and AT_REMOVEDIR in args[2] else "unlink"
        self._one(name, task, args[0], args[1])

    def _on_rmdir(self, task: Task, args: list[str], call: Call) -> None:
        self._one("rmdir", task, None, args[0])

    def _on_mkdir(self, task: Task, args: list[str], call: Call) -> None:
        self._one("mkdir", task, None, args[0], mode=mode_of(args[1]) & ~task.umask[0] & 0o7777)

    def _on_mkdirat(self, task: Task, args: list[str], call: Call) -> None:
        self._one("mkdir", task, args[0], args[1], mode=mode_of(args[2]) & ~task.umask[0] & 0o7777)

    def _on_symlink(self, task: Task, args: list[str], call: Call) -> None:
        target = os.fsdecode(decode_string(args[0]))
        self._one("symlink", task, None, args[1], target=target)

    def _on_symlinkat(self, task: Task, args: list[str], call: Call) -> None:
        target = os.fsdecode(decode_string(args[0]))
        self._one("symlink", task, args[1], args[2], target=target)

    # -- what the model cannot replay -------------------------------------------------

    def _on_mmap(self, task: Task, args: list[str], call: Call) -> None:
        if len(args) > 4 and "PROT_WRITE" in args[2] and "MAP_SHARED" in args[3]:
            held = self._held(task, args[4])
            if held is not None:
                self.unmodeled.append(f"a shared writable mmap of {held.path}")

    def _copied_into(self, task: Task, token: str, name: str) -> None:
        held = self._held(task, token)
        if held is not None:
            self.unmodeled.append(f"{name} into {held.path}: the bytes are not in the log")

    def _on_copy_file_range(self, task: Task, args: list[str], call: Call) -> None:
        self._copied_into(task, args[2], "copy_file_range")

    def _on_sendfile(self, task: Task, args: list[str], call: Call) -> None:
        self._copied_into(task, args[0], "sendfile")

    def _on_splice(self, task: Task, args: list[str], call: Call) -> None:
        self._copied_into(task, args[2], "splice")

    def _on_io_uring_setup(self, task: Task, args: list[str], call: Call) -> None:
        self.unmodeled.append(
            f"{call.name}: io_uring is unsupported (its submissions are not system calls "
            "strace can show)"
        )

    _on_io_uring_enter = _on_io_uring_setup
    _on_io_uring_register = _on_io_uring_setup


__all__ = ["AT_REMOVEDIR", "Description", "FileAndEntryCalls", "Task"]
