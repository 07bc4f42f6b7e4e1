"""The durability model behind ``powerloss``: the states a power cut leaves.

See ``editspec.fault_injection.powerloss`` for the theory of operation. This module
is pure computation over a captured ``Image`` and a recorded trace (``_trace``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

import attrs

from editspec.fault_injection import trees
from editspec.fault_injection._trace import (
    BLOCK,
    DirNode,
    FileNode,
    Image,
    LinkNode,
    Node,
    TraceOp,
)

Model = Literal["ordered", "strict"]


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
    # Directories whose fsync failed while this operation was pending in them: no later
    # fsync of theirs makes it durable (an fsync that failed is not retried into
    # durability: the kernel may have dropped what it could not write).
    poisoned: set[str] = attrs.field(factory=set)

    def sync(self, directory: str) -> None:
        if directory not in self.poisoned:
            self.synced.add(directory)

    @property
    def durable(self) -> bool:
        return self.dirs <= self.synced


def _initial_key(roots: Sequence[str], path: str) -> str:
    for number, root in enumerate(roots):
        if path.startswith(root + os.sep):
            return f"initial:{number}:{os.path.relpath(path, root)}"
    return f"initial:{path}"


def _subtree(entries: Mapping[str, Node], path: str) -> list[str]:
    prefix = path + os.sep
    return [key for key in entries if key == path or key.startswith(prefix)]


def _apply(entries: dict[str, Node], op: EntryOp, *, durable_replay: bool) -> None:
    """Apply an entry operation. In a durable replay, impossible operations are skipped."""
    if durable_replay and not isinstance(entries.get(os.path.dirname(op.path)), DirNode):
        return  # its directory did not survive
    if durable_replay and op.kind == "rename" and op.src not in entries:
        return  # what it renamed did not survive (its creation, or an earlier rename, lost)
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


#: Operations that open a descriptor (the others that carry one act on it).
_OPENING = frozenset({"create_exclusive", "lock_file", "open", "open_append"})


class Simulation:
    """The volatile and durable state after a trace prefix."""

    def __init__(self, image: Image) -> None:
        self.image = image
        self.entries: dict[str, Node] = dict(image.entries)
        self.data: dict[int, bytearray] = {i: bytearray(d) for i, d in image.data.items()}
        self.synced: dict[int, bytes] = dict(image.data)
        self.modes: dict[int, int] = dict(image.modes)
        # Files are named for reports by a path (``origin``) and, stably across re-runs
        # whose temp names differ, by a key: "op:<position>" of the operation that
        # created them, or "initial:<root index>:<path relative to that root>".
        self.origin: dict[int, str] = {}
        self.origin_key: dict[int, str] = {}
        for path, node in image.entries.items():
            if isinstance(node, FileNode) and node.inode not in self.origin:
                self.origin[node.inode] = path
                self.origin_key[node.inode] = _initial_key(image.roots, path)
        self.fds: dict[int, list[int]] = {}  # fd -> [inode, offset]
        self.entry_ops: list[EntryOp] = []
        # Files whose synced bytes were changed in place (truncated, or written over)
        # since their last fsync, and the first byte changed: a cut can leave the old
        # bytes whole, or the new ones cut anywhere from there.
        self.rewritten: dict[int, int] = {}
        # Files whose fsync failed: their unsynced bytes of then may never reach the
        # disk, so no later fsync counts for them (the synced bytes stay those before).
        self.poisoned: set[int] = set()
        self._next_inode = max(image.data, default=0) + 1

    def _inside(self, path: str) -> bool:
        return any(path == root or path.startswith(root + os.sep) for root in self.image.roots)

    def _new_inode(self, path: str, mode: int, position: int) -> int:
        inode = self._next_inode
        self._next_inode += 1
        self.data[inode] = bytearray()
        self.synced[inode] = b""
        self.modes[inode] = mode
        self.origin[inode] = path
        self.origin_key[inode] = f"op:{position}"
        return inode

    def _entry_op(
        self,
        op: TraceOp,
        kind: str,
        path: str,
        node: Node | None,
        src: str | None = None,
        *,
        durable: bool = False,
    ) -> None:
        dirs = {os.path.dirname(path)} | ({os.path.dirname(src)} if src is not None else set())
        entry_op = EntryOp(op.position, kind, path, node, src, frozenset(dirs))
        if durable:
            entry_op.synced.update(dirs)
        _apply(self.entries, entry_op, durable_replay=False)
        self.entry_ops.append(entry_op)

    def _changed(self, inode: int, start: int) -> None:
        """Bytes from ``start`` on changed; note it if synced bytes were among them."""
        if start < len(self.synced[inode]):
            self.rewritten[inode] = min(start, self.rewritten.get(inode, start))

    def _write(self, inode: int, offset: int, data: bytes) -> None:
        buffer = self.data[inode]
        if offset > len(buffer):  # a hole reads as zeros
            buffer.extend(bytes(offset - len(buffer)))
        self._changed(inode, offset)
        buffer[offset : offset + len(data)] = data

    def _truncate(self, inode: int, size: int) -> None:
        buffer = self.data[inode]
        if size < len(buffer):
            self._changed(inode, size)
            del buffer[size:]
        else:
            buffer.extend(bytes(size - len(buffer)))

    def _failed_fsync(self, op: TraceOp) -> None:
        if op.name == "fsync_dir":
            for entry_op in self.entry_ops:
                if op.paths[-1] in entry_op.dirs and not entry_op.durable:
                    entry_op.poisoned.add(op.paths[-1])
            return
        handle = self.fds.get(op.fd) if op.fd is not None else None
        if handle is not None and self.unsynced_data(handle[0]):
            self.poisoned.add(handle[0])

    def step(self, op: TraceOp) -> None:
        name = op.name
        if op.failed:
            self._failed_fsync(op)
            return
        if op.fd is not None and name not in _OPENING:
            handle = self.fds.get(op.fd)
            if handle is None:
                return  # a descriptor outside the roots
            inode = handle[0]
            if name == "write":
                offset = handle[1] if op.offset is None else op.offset
                self._write(inode, offset, op.data)
                handle[1] = offset + len(op.data)
            elif name == "fsync":
                if inode not in self.poisoned:
                    self.synced[inode] = bytes(self.data[inode])
                    self.rewritten.pop(inode, None)
            elif name == "fchmod":
                assert op.mode is not None
                self.modes[inode] = op.mode
            elif name == "truncate":
                assert op.size is not None
                self._truncate(inode, op.size)
            else:  # close, unlock
                del self.fds[op.fd]
            return
        if name == "sync":  # everything written so far is durable (but what a failed fsync lost)
            for inode in set(self.data) - self.poisoned:
                self.synced[inode] = bytes(self.data[inode])
                self.rewritten.pop(inode, None)
            for entry_op in self.entry_ops:
                for directory in entry_op.dirs:
                    entry_op.sync(directory)
            return
        path = op.paths[-1]
        if not self._inside(path):
            return
        if name in ("truncate", "chmod"):
            node = self.entries.get(path)
            if isinstance(node, FileNode):
                if name == "truncate":
                    assert op.size is not None
                    self._truncate(node.inode, op.size)
                else:
                    assert op.mode is not None
                    self.modes[node.inode] = op.mode
        elif name == "symlink":
            self._entry_op(op, "add", path, LinkNode(op.target))
        elif name == "open_append":  # an existing file, written at its end
            node = self.entries.get(path)
            assert isinstance(node, FileNode) and op.fd is not None
            self.fds[op.fd] = [node.inode, len(self.data[node.inode])]
        elif name in ("create_exclusive", "lock_file", "open"):
            existing = self.entries.get(path)
            if isinstance(existing, FileNode):  # lock_file opens an existing file
                inode = existing.inode
            else:
                inode = self._new_inode(
                    path, op.mode if op.mode is not None else 0o600, op.position
                )
                # An empty lock file carries no data: whether its name survives a cut
                # changes nothing, so it is not a choice worth enumerating.
                self._entry_op(op, "add", path, FileNode(inode), durable=name == "lock_file")
            assert op.fd is not None
            self.fds[op.fd] = [inode, 0]
        elif name == "fsync_dir":
            for entry_op in self.entry_ops:
                if path in entry_op.dirs:
                    entry_op.sync(path)
        elif name == "mkdir":
            mode = op.mode if op.mode is not None else 0o755
            self._entry_op(op, "add", path, DirNode(mode))
        elif name in ("unlink", "rmdir"):
            self._entry_op(op, "remove", path, None)
        elif name == "link":
            self._entry_op(op, "add", path, self.entries[op.paths[0]])
        elif name in ("rename", "rename_noreplace"):
            src, node = op.paths[0], self.entries[op.paths[0]]
            if isinstance(node, FileNode) and self.entries.get(path) == node:
                return  # rename between two links of one file does nothing (POSIX)
            self._entry_op(op, "rename", path, node, src)

    def unsynced_data(self, inode: int) -> bool:
        return bytes(self.data[inode]) != self.synced[inode]

    def lengths(self, inode: int) -> list[int]:
        """The lengths of the current bytes a cut can leave; -1: the synced bytes, whole."""
        synced, current = self.synced[inode], bytes(self.data[inode])
        start = self.rewritten.get(inode)
        if start is None:
            return _lengths(synced, current)
        steps = range((start // BLOCK + 1) * BLOCK, len(current), BLOCK)
        return list(dict.fromkeys([-1, min(start, len(current)), *steps, len(current)]))

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


@attrs.frozen(repr=False)
class PowerState:
    """One disk state a power cut can leave."""

    point: int  # the cut comes after this many trace operations
    lost: tuple[int, ...]  # trace positions of entry operations that did not survive
    # Files that lost data: (origin key, a path it had, bytes kept, bytes written).
    cut: tuple[tuple[str, str, int, int], ...]
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

    def __repr__(self) -> str:
        return f"<PowerState: {self.describe()}>"

    def describe(self) -> str:
        parts = [f"power cut after {self.point} operations"]
        if self.lost:
            parts.append("lost entry operations at " + ", ".join(map(str, self.lost)))
        for _key, path, kept, written in self.cut:
            if kept < 0:
                parts.append(f"{path}: none of its {written} new bytes survive, its synced ones do")
            else:
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
    # Metadata reaches the disk in the order it was issued: the cut keeps a prefix of
    # the unsynced entry operations and loses the rest.
    suffixes = [
        frozenset(op.position for op in pending[keep:]) for keep in range(len(pending), -1, -1)
    ]
    yield from suffixes
    if model == "strict":
        # Then every other subset, fewest lost operations first, so that a bounded
        # enumeration covers each single lost operation, then each pair, and so on.
        ordered = set(suffixes)
        for size in range(1, len(pending) + 1):
            for combo in itertools.combinations(pending, size):
                lost = frozenset(op.position for op in combo)
                if lost not in ordered:
                    yield lost


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
        entries = _surviving_entries(image, sim, lost)
        inodes = sorted({n.inode for n in entries.values() if isinstance(n, FileNode)})
        volatile = [i for i in inodes if sim.unsynced_data(i)]
        options = [sim.lengths(i) for i in volatile]
        for lengths in itertools.product(*options):
            if len(states) >= limit:
                return states, True
            chosen = dict(zip(volatile, lengths, strict=True))
            states.append(_state(sim, point, lost, entries, chosen))
    return states, False


def _surviving_entries(image: Image, sim: Simulation, lost: frozenset[int]) -> dict[str, Node]:
    entries = dict(image.entries)
    for op in sim.entry_ops:
        if op.position not in lost:
            _apply(entries, op, durable_replay=True)
    return entries


def _state(
    sim: Simulation,
    point: int,
    lost: frozenset[int],
    entries: dict[str, Node],
    lengths: Mapping[int, int],
) -> PowerState:
    inodes = sorted({n.inode for n in entries.values() if isinstance(n, FileNode)})
    contents = {i: bytes(sim.data[i]) for i in inodes}
    cut = []
    for inode, length in sorted(lengths.items()):
        written = len(sim.data[inode])
        contents[inode] = sim.synced[inode] if length < 0 else contents[inode][:length]
        if length != written:
            cut.append((sim.origin_key[inode], sim.origin[inode], length, written))
    modes = {i: sim.modes[i] for i in inodes}
    return PowerState(point, tuple(sorted(lost)), tuple(cut), entries, contents, modes)


class TraceChanged(ValueError):
    """A saved power-loss state names operations the step's trace no longer has."""


def rebuild_state(
    image: Image,
    trace: Sequence[TraceOp],
    point: int,
    lost: Sequence[int],
    cut: Mapping[str, int],
    *,
    strict: bool = False,
) -> PowerState:
    """The state described by ``point``, the ``lost`` entry operations and the ``cut`` files.

    ``cut`` maps origin keys (``PowerState.cut``) to the bytes kept; this is how a saved
    scenario names its state in a re-run whose temp names differ. ``strict``: also refuse
    (``TraceChanged``) a cut the model would not make at that point of this trace (a file
    whose data is synced there, a length it cannot keep).
    """
    sim = simulate(image, trace[:point])
    lost_set = frozenset(lost)
    unsynced = {op.position for op in sim.entry_ops if not op.durable}
    if not lost_set <= unsynced:
        strange = ", ".join(str(p) for p in sorted(lost_set - unsynced))
        raise TraceChanged(f"operations {strange} are no unsynced entry operations of the trace")
    entries = _surviving_entries(image, sim, lost_set)
    by_key = {key: inode for inode, key in sim.origin_key.items()}
    unknown = sorted(set(cut) - set(by_key))
    if unknown:
        raise TraceChanged(f"the trace has no file created as {', '.join(unknown)}")
    lengths = {by_key[key]: kept for key, kept in cut.items()}
    for key, kept in cut.items() if strict else ():
        inode = by_key[key]
        allowed = sim.lengths(inode) if sim.unsynced_data(inode) else []
        if kept not in allowed:
            # A cut the model would not make here (the file's data is synced at this
            # point of the new trace, say): rebuilding it would judge a state no power
            # cut can leave.
            raise TraceChanged(f"the file created as {key} cannot keep {kept} bytes here")
    return _state(sim, point, lost_set, entries, lengths)


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
