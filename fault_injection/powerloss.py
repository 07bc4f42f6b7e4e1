"""Power loss: which disk states can a power cut leave, given the trace of port operations?

Theory of operation (DESIGN §5, after ALICE and SQLite's crash VFS):

* ``TraceRecorder`` observes a ``FaultyFileSystem``. When started it captures an
  ``Image`` of its roots (the workspace root *and* the state directory, where
  journals live): every path with its node, and for files an inode identity, so hard
  links stay links. Then it records every port operation that succeeded.
* ``simulate`` replays a trace prefix over the image and tracks what is durable:
  per inode, the bytes as of its last ``fsync``; per directory operation (create,
  link, rename, unlink, mkdir, rmdir — an "entry operation"), the directories whose
  ``fsync_dir`` made it durable. A rename touches two directories; it is durable when
  both were synced after it. ``rename`` between two links of one inode does nothing
  (POSIX), and the model says so.
* A power cut after ``point`` operations can lose:
  - per file, the data written since its last fsync: all of it, or everything past a
    4 KiB boundary (the file keeps a prefix, as a file system writing whole blocks);
  - unsynced entry operations. Model ``"ordered"``: a *suffix* of the unsynced entry
    operations is lost, in the order they were issued, as with a file system that
    journals metadata in order (ext4 ``data=ordered``; ext4 itself is kinder: any
    later fsync commits every earlier operation). Model ``"strict"``: any subset of
    them is lost (POSIX promises nothing more without the directory's fsync).
  The surviving operations are replayed, in order, over the image; an operation
  whose parent directory did not survive does not happen either.
* ``check_power_loss`` materializes each distinct state in place (the roots are
  wiped and rewritten, so absolute paths recorded inside journals stay valid),
  opens a fresh ``Workspace`` (its constructor runs recovery), and checks the result:
  the root equals one of the acceptable trees, and no journal is left.
"""

from __future__ import annotations

import itertools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Literal

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection.faultfs import FaultyFileSystem, OpEvent

BLOCK = 4096
Model = Literal["ordered", "strict"]


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
    umask: int = 0o022


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


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
    return Image(tuple(roots), entries, data, modes, _umask())


@attrs.frozen
class TraceOp:
    """One successful port operation, with what the model needs to replay it."""

    position: int
    name: str
    paths: tuple[str, ...]
    fd: int | None = None
    data: bytes = b""
    mode: int | None = None
    index: int = 0  # the FaultyFileSystem counter value (0 if not counted)

    def describe(self) -> str:
        where = " -> ".join(self.paths)
        extra = f" {len(self.data)} bytes" if self.name == "write" else ""
        return f"{self.name} {where}{extra}"


_TRACED = frozenset(
    {
        "create_exclusive",
        "write",
        "fsync",
        "fchmod",
        "close",
        "fsync_dir",
        "rename",
        "link",
        "unlink",
        "mkdir",
        "rmdir",
        "lock_file",
        "unlock",
    }
)


class TraceRecorder:
    """Record the successful operations of a ``FaultyFileSystem`` over an initial image."""

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        self.roots = tuple(os.path.realpath(os.fspath(root)) for root in roots)
        self.initial: Image | None = None
        self.ops: list[TraceOp] = []
        self._fs: FaultyFileSystem | None = None

    def start(self, fs: FaultyFileSystem) -> None:
        """Capture the image now and record every later successful operation of ``fs``."""
        self.initial = capture_image(self.roots)
        self.ops = []
        if self._fs is not fs:
            fs.observers.append(self)
            self._fs = fs

    def stop(self) -> None:
        if self._fs is not None:
            self._fs.observers.remove(self)
            self._fs = None

    @property
    def image(self) -> Image:
        if self.initial is None:
            raise RuntimeError("TraceRecorder.start() was not called")
        return self.initial

    def __call__(self, event: OpEvent) -> None:
        record = event.record
        if record.outcome != "ok" or record.name not in _TRACED:
            return
        name, args = record.name, event.args
        op = TraceOp(position=len(self.ops), name=name, paths=record.paths, index=record.index)
        if name in ("create_exclusive", "lock_file"):
            op = attrs.evolve(
                op, fd=event.result, mode=args[1] if name == "create_exclusive" else 0o600
            )
        elif name == "write":
            op = attrs.evolve(op, fd=args[0], data=bytes(args[1]))
        elif name in ("fsync", "close", "unlock"):
            op = attrs.evolve(op, fd=args[0])
        elif name == "fchmod":
            op = attrs.evolve(op, fd=args[0], mode=args[1])
        elif name == "mkdir":
            op = attrs.evolve(op, mode=args[1])
        self.ops.append(op)


# -- the durability simulation ------------------------------------------------------


@attrs.define
class EntryOp:
    """A directory entry operation and the directories whose fsync made it durable."""

    position: int
    kind: str  # "add" | "remove" | "rename"
    path: str
    node: Node | None
    src: str | None
    dirs: frozenset[str]
    synced: set[str] = attrs.field(factory=set)

    @property
    def durable(self) -> bool:
        return self.dirs <= self.synced


def _parent(path: str) -> str:
    return os.path.dirname(path)


def _subtree(entries: Mapping[str, Node], path: str) -> list[str]:
    prefix = path + os.sep
    return [key for key in entries if key == path or key.startswith(prefix)]


def _apply(entries: dict[str, Node], op: EntryOp, *, durable_replay: bool) -> None:
    """Apply an entry operation. In a durable replay, impossible operations are skipped."""
    if durable_replay and not isinstance(entries.get(_parent(op.path)), DirNode):
        return  # its directory did not survive
    if op.kind == "add":
        if op.path not in entries:
            assert op.node is not None
            entries[op.path] = op.node
    elif op.kind == "remove":
        for key in _subtree(entries, op.path):
            del entries[key]
    else:
        assert op.src is not None and op.node is not None
        moved = {key: entries.pop(key) for key in _subtree(entries, op.src)}
        for key in _subtree(entries, op.path):
            del entries[key]
        entries[op.path] = op.node
        for key, node in moved.items():
            if key != op.src:
                entries[op.path + key[len(op.src) :]] = node


class Simulation:
    """The volatile and durable state after a trace prefix."""

    def __init__(self, image: Image) -> None:
        self.image = image
        self.entries: dict[str, Node] = dict(image.entries)
        self.data: dict[int, bytearray] = {i: bytearray(d) for i, d in image.data.items()}
        self.synced: dict[int, bytes] = dict(image.data)
        self.modes: dict[int, int] = dict(image.modes)
        self.origin: dict[int, str] = {}
        for path, node in image.entries.items():
            if isinstance(node, FileNode):
                self.origin.setdefault(node.inode, path)
        self.fds: dict[int, list[int]] = {}  # fd -> [inode, offset]
        self.entry_ops: list[EntryOp] = []
        self._next_inode = max(image.data, default=0) + 1

    def _inside(self, path: str) -> bool:
        return any(path == root or path.startswith(root + os.sep) for root in self.image.roots)

    def _new_inode(self, path: str, mode: int) -> int:
        inode = self._next_inode
        self._next_inode += 1
        self.data[inode] = bytearray()
        self.synced[inode] = b""
        self.modes[inode] = mode & ~self.image.umask
        self.origin[inode] = path
        return inode

    def _entry_op(
        self, op: TraceOp, kind: str, path: str, node: Node | None, src: str | None = None
    ) -> None:
        dirs = {_parent(path)} | ({_parent(src)} if src is not None else set())
        entry_op = EntryOp(op.position, kind, path, node, src, frozenset(dirs))
        _apply(self.entries, entry_op, durable_replay=False)
        self.entry_ops.append(entry_op)

    def step(self, op: TraceOp) -> None:
        name = op.name
        if op.fd is not None and name not in ("create_exclusive", "lock_file"):
            handle = self.fds.get(op.fd)
            if handle is None:
                return  # a descriptor outside the roots
            inode = handle[0]
            if name == "write":
                buffer = self.data[inode]
                offset = handle[1]
                buffer[offset : offset + len(op.data)] = op.data
                handle[1] = offset + len(op.data)
            elif name == "fsync":
                self.synced[inode] = bytes(self.data[inode])
            elif name == "fchmod":
                assert op.mode is not None
                self.modes[inode] = op.mode
            else:  # close, unlock
                del self.fds[op.fd]
            return
        path = op.paths[-1]
        if not self._inside(path):
            return
        if name in ("create_exclusive", "lock_file"):
            existing = self.entries.get(path)
            if isinstance(existing, FileNode):  # lock_file opens an existing file
                inode = existing.inode
            else:
                inode = self._new_inode(path, op.mode if op.mode is not None else 0o600)
                self._entry_op(op, "add", path, FileNode(inode))
            assert op.fd is not None
            self.fds[op.fd] = [inode, 0]
        elif name == "fsync_dir":
            for entry_op in self.entry_ops:
                if path in entry_op.dirs:
                    entry_op.synced.add(path)
        elif name == "mkdir":
            mode = (op.mode if op.mode is not None else 0o777) & ~self.image.umask
            self._entry_op(op, "add", path, DirNode(mode))
        elif name in ("unlink", "rmdir"):
            self._entry_op(op, "remove", path, None)
        elif name == "link":
            self._entry_op(op, "add", path, self.entries[op.paths[0]])
        elif name == "rename":
            src, node = op.paths[0], self.entries[op.paths[0]]
            if isinstance(node, FileNode) and self.entries.get(path) == node:
                return  # rename between two links of one file does nothing (POSIX)
            self._entry_op(op, "rename", path, node, src)

    def unsynced_data(self, inode: int) -> bool:
        return bytes(self.data[inode]) != self.synced[inode]

    def volatile_state(self, point: int) -> PowerState:
        """What the disk holds now, before any power cut (for checking the model)."""
        inodes = {n.inode for n in self.entries.values() if isinstance(n, FileNode)}
        return PowerState(
            point,
            (),
            (),
            dict(self.entries),
            {i: bytes(self.data[i]) for i in inodes},
            {i: self.modes[i] for i in inodes},
        )


def simulate(image: Image, trace: Sequence[TraceOp]) -> Simulation:
    sim = Simulation(image)
    for op in trace:
        sim.step(op)
    return sim


@attrs.frozen
class PowerState:
    """One disk state a power cut can leave."""

    point: int  # the cut comes after this many trace operations
    lost: tuple[int, ...]  # trace positions of entry operations that did not survive
    cut: tuple[tuple[str, int, int], ...]  # (file, bytes kept, bytes written) for lost data
    entries: Mapping[str, Node]
    contents: Mapping[int, bytes]
    modes: Mapping[int, int]

    def key(self) -> tuple[object, ...]:
        first: dict[int, str] = {}
        items: list[object] = []
        for path in sorted(self.entries):
            node = self.entries[path]
            if isinstance(node, FileNode):
                group = first.setdefault(node.inode, path)
                items.append((path, group, self.contents[node.inode], self.modes[node.inode]))
            else:
                items.append((path, node))
        return tuple(items)

    def tree(self, root: str) -> trees.Tree:
        """The part of this state under ``root``, as a ``trees.Tree``."""
        out: trees.Tree = {}
        for path, node in self.entries.items():
            if not path.startswith(root + os.sep):
                continue
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if isinstance(node, DirNode):
                out[relative] = trees.Entry.dir()
            elif isinstance(node, LinkNode):
                out[relative] = trees.Entry.symlink(node.target)
            else:
                out[relative] = trees.Entry.file(self.contents[node.inode], self.modes[node.inode])
        return dict(sorted(out.items()))

    def describe(self) -> str:
        parts = [f"power cut after {self.point} operations"]
        if self.lost:
            parts.append("lost entry operations at " + ", ".join(map(str, self.lost)))
        for path, kept, written in self.cut:
            parts.append(f"{path}: {kept} of {written} bytes survive")
        return "; ".join(parts)


def _lengths(synced: bytes, current: bytes) -> list[int]:
    """Lengths a file's data can have after a cut: the synced prefix, 4 KiB steps, all."""
    if not current.startswith(synced):
        return [len(current)]  # overwritten in place; modelled as content replaced whole
    steps = range((len(synced) // BLOCK + 1) * BLOCK, len(current), BLOCK)
    return [len(synced), *steps, len(current)]


def _dir_choices(sim: Simulation, model: Model) -> Iterator[frozenset[int]]:
    """Sets of lost entry-operation positions, the no-loss set first."""
    pending = [op for op in sim.entry_ops if not op.durable]
    if model == "strict":
        for size in range(len(pending) + 1):
            for combo in itertools.combinations(pending, size):
                yield frozenset(op.position for op in combo)
        return
    # Metadata reaches the disk in the order it was issued: the cut keeps a prefix of
    # the unsynced entry operations and loses the rest.
    for keep in range(len(pending), -1, -1):
        yield frozenset(op.position for op in pending[keep:])


def states_at(
    image: Image,
    trace: Sequence[TraceOp],
    point: int,
    model: Model = "ordered",
    *,
    limit: int = 4096,
) -> tuple[list[PowerState], bool]:
    """The distinct states a cut after ``trace[:point]`` can leave; and whether ``limit`` hit."""
    sim = simulate(image, trace[:point])
    states: list[PowerState] = []
    seen: set[frozenset[int]] = set()
    for lost in _dir_choices(sim, model):
        if lost in seen:
            continue
        seen.add(lost)
        entries = dict(image.entries)
        for op in sim.entry_ops:
            if op.position not in lost:
                _apply(entries, op, durable_replay=True)
        inodes = sorted({n.inode for n in entries.values() if isinstance(n, FileNode)})
        volatile = [i for i in inodes if sim.unsynced_data(i)]
        options = [_lengths(sim.synced[i], bytes(sim.data[i])) for i in volatile]
        for lengths in itertools.product(*options):
            if len(states) >= limit:
                return states, True
            contents = {i: bytes(sim.data[i]) for i in inodes}
            cut = []
            for inode, length in zip(volatile, lengths, strict=True):
                contents[inode] = contents[inode][:length]
                if length != len(sim.data[inode]):
                    cut.append((sim.origin[inode], length, len(sim.data[inode])))
            states.append(
                PowerState(
                    point,
                    tuple(sorted(lost)),
                    tuple(cut),
                    entries,
                    contents,
                    {i: sim.modes[i] for i in inodes},
                )
            )
    return states, False


def power_loss_states(
    image: Image,
    trace: Sequence[TraceOp],
    model: Model = "ordered",
    *,
    points: Sequence[int] | None = None,
    limit: int = 4096,
) -> tuple[list[PowerState], bool]:
    """Distinct states over every cut point (default: 0..len(trace)); and whether truncated."""
    chosen = range(len(trace) + 1) if points is None else points
    distinct: dict[tuple[object, ...], PowerState] = {}
    truncated = False
    for point in chosen:
        states, hit = states_at(image, trace, point, model, limit=limit)
        truncated = truncated or hit
        for state in states:
            distinct.setdefault(state.key(), state)
    return list(distinct.values()), truncated


# -- materialize and check ----------------------------------------------------------


def _require_disposable(root: str) -> None:
    temp = os.path.realpath(tempfile.gettempdir())
    real = os.path.realpath(root)
    if os.path.commonpath([temp, real]) != temp or real == temp:
        raise ValueError(f"refusing to wipe {root}: power-loss states are built under {temp}")


def materialize(state: PowerState, roots: Sequence[str]) -> None:
    """Wipe ``roots`` and write ``state`` there (hard links as links)."""
    for root in roots:
        _require_disposable(root)
        if os.path.lexists(root):
            shutil.rmtree(root)
    written: dict[int, str] = {}
    for path in sorted(state.entries, key=lambda p: p.split(os.sep)):
        node = state.entries[path]
        if isinstance(node, DirNode):
            os.makedirs(path, exist_ok=True)
            os.chmod(path, node.mode | 0o700)
        elif isinstance(node, LinkNode):
            os.symlink(node.target, path)
        elif node.inode in written:
            os.link(written[node.inode], path)
        else:
            with open(path, "wb") as handle:
                handle.write(state.contents[node.inode])
            os.chmod(path, state.modes[node.inode])
            written[node.inode] = path


@attrs.frozen
class PowerLossFailure:
    state: PowerState
    problems: tuple[str, ...]
    actual: trees.Tree


@attrs.frozen
class PowerLossReport:
    states: int
    truncated: bool
    failures: tuple[PowerLossFailure, ...]


def journal_leftovers(state_dir: str) -> list[str]:
    """Files under ``<state_dir>/journal`` (a finished recovery leaves none)."""
    base = os.path.join(state_dir, "journal")
    found: list[str] = []
    for directory, _dirnames, filenames in os.walk(base):
        found.extend(os.path.relpath(os.path.join(directory, f), state_dir) for f in filenames)
    return sorted(found)


def check_recovered(
    root: str,
    state_dir: str,
    acceptable: Sequence[trees.Tree],
    open_workspace: Callable[[str, str], object],
) -> tuple[list[str], trees.Tree]:
    """Open a fresh workspace (recovery runs) and check the disk; return problems and tree."""
    problems: list[str] = []
    try:
        workspace = open_workspace(root, state_dir)
    except Exception as exc:  # any error from recovery is a finding, not a crash of the harness
        problems.append(f"recovery raised {type(exc).__name__}: {exc}")
    else:
        close = getattr(workspace, "close", None)
        if close is not None:
            close()
    actual = trees.capture(root)
    if not any(trees.equal(tree, actual) for tree in acceptable):
        closest = min(acceptable, key=lambda tree: len(trees.diff(tree, actual)))
        problems.append("disk is neither all-before nor all-after:")
        problems.extend("  " + line for line in trees.diff(closest, actual))
    leftovers = journal_leftovers(state_dir)
    if leftovers:
        problems.append("journal left after recovery: " + ", ".join(leftovers))
    return problems, actual


def default_open_workspace(root: str, state_dir: str) -> object:
    from editspec.reference import Workspace

    return Workspace(root, state_dir)


def check_power_loss(
    recorder: TraceRecorder,
    *,
    root: str,
    state_dir: str,
    acceptable_at: Callable[[int], Sequence[trees.Tree]],
    model: Model = "ordered",
    open_workspace: Callable[[str, str], object] = default_open_workspace,
    limit: int = 4096,
    stop_after: int | None = None,
) -> PowerLossReport:
    """Materialize, recover and check every state of ``recorder``'s trace under ``model``.

    ``acceptable_at(point)`` gives the trees the root may hold after recovery from a
    cut after ``point`` operations (all-before or all-after; only all-after once the
    operation has returned). States are deduplicated among points with equal answers.
    """
    trace = recorder.ops
    groups: dict[tuple[int, ...], list[int]] = {}
    answers: dict[tuple[int, ...], Sequence[trees.Tree]] = {}
    for point in range(len(trace) + 1):
        acceptable = acceptable_at(point)
        group = tuple(id(tree) for tree in acceptable)
        groups.setdefault(group, []).append(point)
        answers[group] = acceptable
    total, truncated, failures = 0, False, []
    for group, points in groups.items():
        states, hit = power_loss_states(recorder.image, trace, model, points=points, limit=limit)
        truncated = truncated or hit
        for state in states:
            total += 1
            materialize(state, recorder.roots)
            problems, actual = check_recovered(root, state_dir, answers[group], open_workspace)
            if problems:
                failures.append(PowerLossFailure(state, tuple(problems), actual))
                if stop_after is not None and len(failures) >= stop_after:
                    return PowerLossReport(total, truncated, tuple(failures))
    return PowerLossReport(total, truncated, tuple(failures))
