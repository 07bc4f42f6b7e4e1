"""What the durability model replays: an ``Image`` of the roots before a step, and the
trace of the step's calls (``TraceOp``), recorded by a ``Recording``.

``capture_image`` reads the disk; ``TraceRecorder`` observes a ``FaultyFileSystem``
(``ostrace.OsTraceRecorder`` and ``strace_record.StraceRecording`` record the same
trace from ``os`` calls and from strace). ``_durability`` computes what a power cut
leaves from them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from editspec.fault_injection.faultfs import OpEvent

BLOCK = 4096


@attrs.frozen
class FileNode:
    inode: int


@attrs.frozen
class DirNode:
    mode: int


@attrs.frozen
class LinkNode:
    target: str


Node = FileNode | DirNode | LinkNode


@attrs.frozen
class Image:
    """A disk image with inode identity: absolute path -> node; inode -> data and mode."""

    roots: tuple[str, ...]
    entries: Mapping[str, Node]
    data: Mapping[int, bytes]
    modes: Mapping[int, int]


def capture_image(roots: Sequence[str]) -> Image:
    """Read the trees under ``roots`` from disk (symlinks not followed)."""
    entries: dict[str, Node] = {}
    data: dict[int, bytes] = {}
    modes: dict[int, int] = {}
    identities: dict[tuple[int, int], int] = {}
    for root in roots:
        info = os.lstat(root)
        entries[root] = DirNode(stat.S_IMODE(info.st_mode))
        for directory, dirnames, filenames in os.walk(root, followlinks=False):
            for name in sorted(dirnames + filenames):
                full = os.path.join(directory, name)
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    entries[full] = LinkNode(os.readlink(full))
                elif stat.S_ISDIR(info.st_mode):
                    entries[full] = DirNode(stat.S_IMODE(info.st_mode))
                elif stat.S_ISREG(info.st_mode):
                    identity = (info.st_dev, info.st_ino)
                    inode = identities.get(identity)
                    if inode is None:
                        inode = identities[identity] = len(identities) + 1
                        with open(full, "rb") as handle:
                            data[inode] = handle.read()
                        modes[inode] = stat.S_IMODE(info.st_mode)
                    entries[full] = FileNode(inode)
    return Image(tuple(roots), entries, data, modes)


@attrs.frozen
class TraceOp:
    """One successful port operation, with what the model needs to replay it."""

    position: int
    name: str
    paths: tuple[str, ...]
    fd: int | None = None
    data: bytes = b""
    mode: int | None = None  # permission bits: as created (create, mkdir), or as set (fchmod)
    index: int = 0  # the FaultyFileSystem counter value (0 if not counted)
    # Only in traces recorded at the os level (``ostrace``):
    offset: int | None = None  # where a write lands (None: at the descriptor's offset)
    size: int | None = None  # the length a truncate leaves
    target: str = ""  # what a symlink points to
    # An fsync or fsync_dir that failed (an injected EIO): it made nothing durable, and
    # what it covered stays lossy whatever later fsyncs say (``_durability``).
    failed: bool = False

    def describe(self) -> str:
        where = " -> ".join(self.paths)
        extra = f" {len(self.data)} bytes" if self.name == "write" else ""
        return f"{self.name} {where}{extra}" + (" (failed)" if self.failed else "")


_TRACED = frozenset(
    {
        "create_exclusive",
        "open_append",
        "write",
        "fsync",
        "fchmod",
        "close",
        "fsync_dir",
        "rename",
        "rename_noreplace",
        "link",
        "unlink",
        "mkdir",
        "rmdir",
        "symlink",
        "lock_file",
        "unlock",
    }
)


class Recording:
    """A trace over an image of ``roots``, recorded as an observer of a source.

    ``start(source)`` captures the image and appends this recorder to
    ``source.observers`` (a ``FaultyFileSystem``, or ``spec.crash.OsInterceptor`` for
    ``ostrace``); ``stop()`` removes it. ``ops``, ``image`` and ``roots`` are what
    ``check_power_loss`` and ``power_loss_states`` take.
    """

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        self.roots = tuple(os.path.realpath(os.fspath(root)) for root in roots)
        self.initial: Image | None = None
        self.ops: list[TraceOp] = []
        self._source: Any = None

    def start(self, source: Any) -> None:
        """Capture the image now and record every later call ``source`` reports."""
        self.initial = capture_image(self.roots)
        self.ops = []
        if self._source is not source:
            self.stop()
            source.observers.append(self)
            self._source = source

    def stop(self) -> None:
        if self._source is not None:
            self._source.observers.remove(self)
            self._source = None

    @property
    def image(self) -> Image:
        if self.initial is None:
            raise RuntimeError(f"{type(self).__name__}.start() was not called")
        return self.initial


class TraceRecorder(Recording):
    """Record the successful operations of a ``FaultyFileSystem`` over an initial image."""

    def __call__(self, event: OpEvent) -> None:
        record = event.record
        name, args = record.name, event.args
        if record.outcome.startswith("fail:") and name in ("fsync", "fsync_dir"):
            # Kept in the trace: the model must know that what this fsync covered may
            # never reach the disk, even if a later fsync of the same file succeeds.
            self.ops.append(
                TraceOp(
                    position=len(self.ops),
                    name=name,
                    paths=record.paths,
                    fd=args[0] if name == "fsync" else None,
                    index=record.index,
                    failed=True,
                )
            )
            return
        if record.outcome != "ok" or name not in _TRACED:
            return
        op = TraceOp(position=len(self.ops), name=name, paths=record.paths, index=record.index)
        if name == "open_append":
            op = attrs.evolve(op, fd=event.result)
        elif name in ("create_exclusive", "lock_file"):
            # The mode the file really got (the umask applied, as the platform does it).
            op = attrs.evolve(
                op, fd=event.result, mode=stat.S_IMODE(os.fstat(event.result).st_mode)
            )
        elif name == "write":
            op = attrs.evolve(op, fd=args[0], data=bytes(args[1]))
        elif name in ("fsync", "close", "unlock"):
            op = attrs.evolve(op, fd=args[0])
        elif name == "fchmod":
            op = attrs.evolve(op, fd=args[0], mode=args[1])
        elif name == "mkdir":
            op = attrs.evolve(op, mode=stat.S_IMODE(os.lstat(record.paths[0]).st_mode))
        elif name == "symlink":
            op = attrs.evolve(op, target=args[0])
        self.ops.append(op)
