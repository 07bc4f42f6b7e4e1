"""Record any process with strace: its file system calls as the power-loss model's trace.

``ostrace`` records a Python implementation from inside; a server in another language
can only be watched from outside. ``strace -f -y -xx -s BIG`` shows every system call
of every thread, each descriptor with the path it refers to, and every string in full,
as hexadecimal escapes: exactly the bytes a ``write`` handed to the kernel.
``StraceRecording`` turns such a log into the ``TraceOp`` trace that
``editspec.fault_injection._durability`` replays, over an ``Image`` of the roots taken
before tracing starts (``start``), so a foreign process gets every state a power cut can
leave, as the reference's own port does:

* descriptors are followed per descriptor table (threads created with ``CLONE_FILES``
  share one, a forked child copies its parent's) from their open to their close, with
  ``dup``/``dup2``/``dup3``/``fcntl(F_DUPFD)``; each open file description gets a
  number of its own in the trace (what the model calls ``fd``), and its offset is
  followed (``read``, ``readv``, ``write``, ``writev``, ``lseek``; ``O_APPEND`` writes
  land at the end), so every write is recorded with the offset it landed at;
* file calls: creating opens (the mode is the requested one less the process's
  ``umask``), ``O_TRUNC``, ``write``/``pwrite64``/``writev``/``pwritev``/``pwritev2``
  with their bytes, ``ftruncate``/``truncate``, ``fallocate`` that grows a file,
  ``fsync``/``fdatasync`` (of a directory: the directory's fsync), ``fchmod``/
  ``chmod``/``fchmodat``, ``sync``/``syncfs``;
* entry calls, by path (relative paths resolved against the descriptor strace shows,
  or the thread's working directory, followed through ``chdir``/``fchdir``):
  ``rename``/``renameat``/``renameat2``, ``link``/``linkat``, ``symlink``/``symlinkat``,
  ``unlink``/``unlinkat``, ``mkdir``/``mkdirat``, ``rmdir``;
* only calls on paths under the roots are kept (a descriptor opened elsewhere, the MCP
  pipe, the server's own modules, are not in the trace); ``sync_file_range`` is not a
  durability point (it flushes no metadata and no device cache) and is listed in
  ``notes``;
* what the model cannot replay is listed in ``unmodeled`` and a check refuses to judge
  such a trace: ``io_uring`` (submissions strace cannot see), a shared writable
  ``mmap`` of a file under the roots, data copied into one by ``copy_file_range``,
  ``sendfile`` or ``splice``, ``RENAME_EXCHANGE``, a rename or link across the roots'
  boundary, a write cut short in strace's output (``-s`` too small), a descriptor under
  the roots written to before tracing started.

``record_command(argv, roots)`` runs a command under strace and returns its recording
(the C and Node writers of the tests); ``attach(pid, log)`` traces a running process
tree from now on (a server, for the one step under test) and ``Tracer.stop()`` ends it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from editspec.fault_injection._durability import Simulation
from editspec.fault_injection._trace import (
    DirNode,
    FileNode,
    LinkNode,
    Recording,
    TraceOp,
    capture_image,
)
from editspec.fault_injection.strace_calls import Description, FileAndEntryCalls, Task
from editspec.fault_injection.strace_log import (
    STRING_LIMIT,
    SYSCALLS,
    Call,
    Inexact,
    Tracer,
    as_int,
    attach,
    calls_of,
    clone_parents,
    decode_string,
    fd_and_path,
    flags_of,
    mode_of,
    process_tree,
    readable,
    result_of,
    split_args,
    strace_words,
)

__all__ = [
    "STRING_LIMIT",
    "SYSCALLS",
    "StraceRecording",
    "Tracer",
    "attach",
    "process_tree",
    "record_command",
    "strace_words",
]


class StraceRecording(FileAndEntryCalls, Recording):
    """A power-loss trace read from an strace log, over an image of ``roots``.

    ``start()`` captures the image (before the traced process touches the roots);
    ``load(text, pid=..., cwd=..., umask=...)`` reads the log. ``ops``, ``image`` and
    ``roots`` are what ``powerloss.check_power_loss`` and ``power_loss_states`` take;
    ``unmodeled`` lists what the model cannot replay, ``notes`` what it leaves out on
    purpose, and ``calls`` the system calls that touched the roots, each with the
    positions of the trace operations it became (``describe_calls``).
    """

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        super().__init__(roots)
        self.unmodeled: list[str] = []
        self.notes: list[str] = []
        self.calls: list[tuple[Call, tuple[int, ...]]] = []
        #: Trace lengths at each write to descriptor 1 (a server's answers go out there).
        self.stdout_writes: list[int] = []

    def start(self, source: Any = None) -> None:
        """Capture the image of the roots now (no observer: the log is read later)."""

        self.initial = capture_image(self.roots)
        self.ops = []

    # -- reading ------------------------------------------------------------------------

    def load(
        self, text: str, *, pid: int | None = None, cwd: str = "/", umask: int = 0o022
    ) -> None:
        """Read an strace log (``-f -y -xx``) into the trace."""
        self.ops, self.unmodeled, self.notes, self.calls = [], [], [], []
        self.stdout_writes = []
        self._sim = Simulation(self.image)
        self._numbers = iter(range(1, 1 << 62))
        calls = calls_of(text)
        self._parents = clone_parents(calls)
        first = Task({}, [cwd], [umask])
        self._tasks: dict[int, Task] = {}
        self._first = first
        if pid is not None:
            self._tasks[pid] = first
        for call in calls:
            before = len(self.ops)
            handler = getattr(self, "_on_" + call.name, None)
            if handler is None or result_of(call) is None:
                continue
            try:
                handler(self._task(call.tid), split_args(call.args), call)
            except Inexact as exc:
                self.unmodeled.append(f"{call.name}: {exc}")
            if len(self.ops) > before:
                self.calls.append((call, tuple(range(before, len(self.ops)))))
        del self._sim

    def _task(self, tid: int) -> Task:
        task = self._tasks.get(tid)
        if task is not None:
            return task
        parent, flags = self._parents.get(tid, (None, set()))
        source = self._tasks.get(parent) if parent is not None else None
        if source is None:  # a thread that ran before tracing began: the first one's
            task = self._first
        else:
            task = Task(
                source.table if "CLONE_FILES" in flags else dict(source.table),
                source.cwd if "CLONE_FS" in flags else list(source.cwd),
                source.umask if "CLONE_FS" in flags else list(source.umask),
            )
        self._tasks[tid] = task
        return task

    # -- paths ----------------------------------------------------------------------------

    def _inside(self, path: str) -> bool:
        return any(path == root or path.startswith(root + os.sep) for root in self.roots)

    def _resolve(
        self, task: Task, base_token: str | None, raw: bytes, *, follow: bool = False
    ) -> str:
        """The absolute path a call named: relative to its directory descriptor or the
        thread's cwd, with symlinks under the roots followed (the last one if ``follow``)."""
        name = os.fsdecode(raw)
        if not os.path.isabs(name):
            base: str | None = None
            if base_token is not None:
                number, shown = fd_and_path(base_token)
                held = task.table.get(number) if number is not None else None
                base = held.path if held is not None else shown
                if number is None and shown is None:
                    base = task.cwd[0]
            base = base if base is not None else task.cwd[0]
            name = os.path.join(base, name)
        return self._follow(os.path.normpath(name), follow)

    def _follow(self, path: str, last: bool, depth: int = 0) -> str:
        if depth > 40:
            return path
        parts = path.split(os.sep)
        current = os.sep
        for index, part in enumerate(parts[1:], 1):
            candidate = os.path.join(current, part)
            node = self._sim.entries.get(candidate)
            final = index == len(parts) - 1
            if isinstance(node, LinkNode) and (last or not final):
                target = os.path.normpath(os.path.join(current, node.target))
                rest = parts[index + 1 :]
                return self._follow(os.path.join(target, *rest), last, depth + 1)
            current = candidate
        return current

    # -- the trace ----------------------------------------------------------------------

    def _add(self, name: str, **fields: Any) -> None:
        op = TraceOp(position=len(self.ops), name=name, **fields)
        self.ops.append(op)
        self._sim.step(op)

    def _held(self, task: Task, token: str) -> Description | None:
        """The description a descriptor argument names, if it is one under the roots."""
        number, shown = fd_and_path(token)
        if number is None:
            return None
        held = task.table.get(number)
        if held is None:
            if shown is not None and self._inside(shown):
                self.unmodeled.append(
                    f"descriptor {number} ({shown}) was opened before tracing started"
                )
            return None
        return held if self._inside(held.path) else None

    def _file(self, task: Task, token: str) -> Description | None:
        """A file description under the roots, its ``open`` put in the trace if needed."""
        held = self._held(task, token)
        if held is None or held.directory:
            return None
        if not held.traced:
            held.traced = True
            self._add("open", paths=(held.path,), fd=held.number, mode=0o600)
        return held

    def _size(self, held: Description) -> int:
        handle = self._sim.fds.get(held.number)
        return len(self._sim.data[handle[0]]) if handle is not None else 0

    # -- descriptors ----------------------------------------------------------------------

    def _opened(
        self, task: Task, call: Call, path_token: str, base: str | None, flags: set[str], mode: int
    ) -> None:
        fd = result_of(call)
        assert fd is not None
        _, shown = fd_and_path(call.result)
        path = (
            shown
            if shown is not None
            else self._resolve(task, base, decode_string(path_token), follow=True)
        )
        node = self._sim.entries.get(path)
        directory = "O_DIRECTORY" in flags or isinstance(node, DirNode)
        held = Description(next(self._numbers), path, directory, "O_APPEND" in flags)
        task.table[fd] = held
        if directory or not self._inside(path):
            return
        writing = bool(flags & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"})
        if not writing:
            return
        held.traced = True
        created = mode & ~task.umask[0] & 0o7777
        existing = node.inode if isinstance(node, FileNode) else None
        self._add(
            "open",
            paths=(path,),
            fd=held.number,
            mode=self._sim.modes[existing] if existing is not None else created,
        )
        if "O_TRUNC" in flags and flags & {"O_WRONLY", "O_RDWR"}:
            self._add("truncate", paths=(path,), fd=held.number, size=0)

    def _on_open(self, task: Task, args: list[str], call: Call) -> None:
        flags = flags_of(args[1])
        self._opened(task, call, args[0], None, flags, mode_of(args[2]) if len(args) > 2 else 0)

    def _on_openat(self, task: Task, args: list[str], call: Call) -> None:
        flags = flags_of(args[2])
        self._opened(task, call, args[1], args[0], flags, mode_of(args[3]) if len(args) > 3 else 0)

    def _on_openat2(self, task: Task, args: list[str], call: Call) -> None:
        how = args[2].strip("{}")
        fields = dict(part.split("=", 1) for part in split_args(how) if "=" in part)
        flags = flags_of(fields.get("flags", "O_RDONLY"))
        self._opened(task, call, args[1], args[0], flags, mode_of(fields.get("mode", "0")))

    def _on_creat(self, task: Task, args: list[str], call: Call) -> None:
        self._opened(
            task, call, args[0], None, {"O_WRONLY", "O_CREAT", "O_TRUNC"}, mode_of(args[1])
        )

    def _on_close(self, task: Task, args: list[str], call: Call) -> None:
        number, _ = fd_and_path(args[0])
        task.table.pop(number, None)  # type: ignore[arg-type]

    def _on_close_range(self, task: Task, args: list[str], call: Call) -> None:
        low, high = as_int(args[0]), as_int(args[1])
        if "CLOSE_RANGE_CLOEXEC" not in args[2]:
            for number in [n for n in task.table if low <= n <= high]:
                del task.table[number]

    def _duplicated(self, task: Task, token: str, new: int | None) -> None:
        number, _ = fd_and_path(token)
        held = task.table.get(number) if number is not None else None
        if new is None:
            return
        if held is None:
            task.table.pop(new, None)
        else:
            task.table[new] = held

    def _on_dup(self, task: Task, args: list[str], call: Call) -> None:
        self._duplicated(task, args[0], result_of(call))

    _on_dup2 = _on_dup
    _on_dup3 = _on_dup

    def _on_fcntl(self, task: Task, args: list[str], call: Call) -> None:
        if len(args) > 1 and args[1].strip() in ("F_DUPFD", "F_DUPFD_CLOEXEC"):
            self._duplicated(task, args[0], result_of(call))

    def _on_chdir(self, task: Task, args: list[str], call: Call) -> None:
        task.cwd[0] = self._resolve(task, None, decode_string(args[0]), follow=True)

    def _on_fchdir(self, task: Task, args: list[str], call: Call) -> None:
        number, shown = fd_and_path(args[0])
        held = task.table.get(number) if number is not None else None
        path = held.path if held is not None else shown
        if path is not None:
            task.cwd[0] = path

    def _on_umask(self, task: Task, args: list[str], call: Call) -> None:
        task.umask[0] = mode_of(args[0])

    def _on_read(self, task: Task, args: list[str], call: Call) -> None:
        number, _ = fd_and_path(args[0])
        held = task.table.get(number) if number is not None else None
        if held is not None:
            held.offset += result_of(call) or 0

    _on_readv = _on_read

    def _on_lseek(self, task: Task, args: list[str], call: Call) -> None:
        number, _ = fd_and_path(args[0])
        held = task.table.get(number) if number is not None else None
        if held is not None:
            held.offset = result_of(call) or 0

    # -- for people ----------------------------------------------------------------------

    def describe_calls(self, base: str = "") -> Iterator[tuple[tuple[int, ...], str]]:
        """Each call that touched the roots, as strace showed it (strings shortened),
        with the trace positions it became."""
        for call, positions in self.calls:
            yield positions, readable(call, base)


def record_command(
    argv: Sequence[str],
    roots: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 120,
) -> tuple[StraceRecording, subprocess.CompletedProcess[bytes]]:
    """Run ``argv`` under strace; its recording over ``roots`` and how it finished."""
    recording = StraceRecording(roots)
    recording.start()
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    with tempfile.TemporaryDirectory(prefix="editspec-strace-") as scratch:
        log = os.path.join(scratch, "strace.log")
        done = subprocess.run(
            [*strace_words(log), "--", *argv], cwd=where, capture_output=True, timeout=timeout
        )
        with open(log, encoding="ascii", errors="replace") as handle:
            text = handle.read()
    mask = os.umask(0o022)
    os.umask(mask)
    recording.load(text, cwd=os.path.realpath(where), umask=mask)
    return recording, done
