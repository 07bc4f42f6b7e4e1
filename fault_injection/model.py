"""A pure model of a workspace, beside which the state machines drive the engine.

``Model`` holds what DESIGN §4 says the disk and the engine's memory should be:
files (path -> bytes), directories, symlinks and hard-link groups; per session, the
bytes each file had when the session last read or wrote it (its access records, by
canonical path); and per session the snapshot history rewind works from. Its methods
predict an operation's outcome (``"ok"`` or an error code, or a set of acceptable
codes) and, on success, apply it. Nothing here touches the disk.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence

import attrs

from editspec.fault_injection import trees


@attrs.define
class Record:
    """One file's change in a session's history (a snapshot entry)."""

    seq: int
    message: str
    path: str
    before: bytes | None
    after: bytes | None
    live: bool = True


@attrs.define
class Prediction:
    """What the engine must answer: ``codes`` acceptable ("ok" or error codes)."""

    codes: frozenset[str]

    @classmethod
    def ok(cls) -> Prediction:
        return cls(frozenset({"ok"}))

    @classmethod
    def error(cls, *codes: str) -> Prediction:
        return cls(frozenset(codes))

    @property
    def succeeds(self) -> bool:
        return self.codes == {"ok"}


@attrs.define
class Model:
    files: dict[str, bytes] = attrs.field(factory=dict)
    dirs: set[str] = attrs.field(factory=set)
    links: dict[str, str] = attrs.field(factory=dict)  # symlink -> target (relative)
    hard: list[set[str]] = attrs.field(factory=list)  # groups of names of one inode
    reads: dict[str, dict[str, bytes]] = attrs.field(factory=dict)
    history: dict[str, list[Record]] = attrs.field(factory=dict)
    seq: int = 0

    # -- views -----------------------------------------------------------------------

    def copy(self) -> Model:
        return copy.deepcopy(self)

    def tree(self) -> trees.Tree:
        tree: trees.Tree = {d: trees.Entry.dir() for d in self.dirs}
        tree.update({p: trees.Entry.file(data) for p, data in self.files.items()})
        tree.update({p: trees.Entry.symlink(t) for p, t in self.links.items()})
        return dict(sorted(tree.items()))

    def canonical(self, path: str) -> str:
        """The path a name resolves to (symlinks followed, as the file system does)."""
        seen = 0
        while path in self.links and seen < 8:
            directory = path.rsplit("/", 1)[0] if "/" in path else ""
            target = self.links[path]
            path = f"{directory}/{target}" if directory else target
            seen += 1
        return path

    def group(self, path: str) -> set[str]:
        for names in self.hard:
            if path in names:
                return names
        return {path}

    def forget_all_reads(self) -> None:
        """A restart: in-memory access records do not survive the process."""
        self.reads = {}

    # -- read-before-write ------------------------------------------------------------

    def freshness(self, session: str, path: str) -> str:
        """ "ok" if ``session`` may replace the existing file at ``path``; else the error."""
        key = self.canonical(path)
        seen = self.reads.get(session, {}).get(key)
        if seen is None:
            return "NOT_READ"
        return "ok" if seen == self.files[key] else "STALE"

    def remember(self, session: str, path: str, data: bytes | None) -> None:
        records = self.reads.setdefault(session, {})
        key = self.canonical(path)
        if data is None:
            records.pop(key, None)
        else:
            records[key] = data

    def _detach(self, path: str) -> None:
        """An atomic replace gives ``path`` a new inode: it leaves its hard-link group."""
        for names in self.hard:
            names.discard(path)
        self.hard = [names for names in self.hard if len(names) > 1]

    def _record(
        self,
        session: str,
        message: str | None,
        changes: Iterable[tuple[str, bytes | None, bytes | None]],
    ) -> None:
        if message is None:
            return
        records = self.history.setdefault(session, [])
        for path, before, after in changes:
            self.seq += 1
            records.append(Record(self.seq, message, path, before, after))

    # -- operations: predict, then apply on success ------------------------------------------

    def read(self, session: str, path: str) -> Prediction:
        key = self.canonical(path)
        if key not in self.files:
            return Prediction.error("NOT_FOUND")
        self.remember(session, key, self.files[key])
        return Prediction.ok()

    def write(self, session: str, path: str, data: bytes, message: str | None = None) -> Prediction:
        key = self.canonical(path)
        before = self.files.get(key)
        if before is not None:
            fresh = self.freshness(session, key)
            if fresh != "ok":
                return Prediction.error(fresh)
        self._detach(key)
        self.files[key] = data
        self.remember(session, key, data)
        self._record(session, message, [(key, before, data)])
        return Prediction.ok()

    def edit(
        self, session: str, path: str, old: str, new: str, message: str | None = None
    ) -> Prediction:
        key = self.canonical(path)
        if key not in self.files:
            return Prediction.error("NOT_FOUND")
        fresh = self.freshness(session, key)
        if fresh != "ok":
            return Prediction.error(fresh)
        if old == new:
            return Prediction.error("NO_CHANGE")  # before any matching
        text = self.files[key].decode("utf-8")
        count = text.count(old)
        if count == 0:
            return Prediction.error("NO_MATCH")
        if count > 1:
            return Prediction.error("AMBIGUOUS")
        data = text.replace(old, new).encode("utf-8")
        before = self.files[key]
        self._detach(key)
        self.files[key] = data
        self.remember(session, key, data)
        self._record(session, message, [(key, before, data)])
        return Prediction.ok()

    def external_write(self, path: str, data: bytes) -> None:
        """Another program rewrites the file in place: every hard link sees it."""
        key = self.canonical(path)
        for name in self.group(key):
            self.files[name] = data
        if key not in self.files:
            self.files[key] = data

    def apply_patch(
        self, session: str, ops: Sequence[Mapping[str, str]], message: str | None = None
    ) -> Prediction:
        """``ops``: dicts with ``op`` add/delete/update/move, ``path``, and ``content``
        (add), ``old``/``new`` lines (update, move) and ``dest`` (move)."""
        errors: set[str] = set()
        named = [op["path"] for op in ops] + [op["dest"] for op in ops if op["op"] == "move"]
        if len(set(named)) != len(named):
            errors.add("INVALID_ARGUMENT")
        for op in ops:
            path = op["path"]
            exists = path in self.files
            if op["op"] == "add":
                if exists or path in self.dirs:
                    errors.add("ALREADY_EXISTS")
                continue
            if not exists:
                errors.add("NOT_FOUND")
                continue
            fresh = self.freshness(session, path)
            if fresh != "ok":
                errors.add(fresh)
            if op["op"] in ("update", "move"):
                lines = self.files[path].decode("utf-8").splitlines()
                matches = lines.count(op["old"])
                if matches == 0:
                    errors.add("NO_MATCH")
                elif matches > 1:
                    errors.add("AMBIGUOUS")
            if op["op"] == "move" and (op["dest"] in self.files or op["dest"] in self.dirs):
                errors.add("ALREADY_EXISTS")
        if errors:
            return Prediction(frozenset(errors))
        changes: list[tuple[str, bytes | None, bytes | None]] = []
        for op in ops:
            path = op["path"]
            if op["op"] == "add":
                data = op["content"].encode("utf-8")
                self._add_parents(path)
                self.files[path] = data
                self.remember(session, path, data)
                changes.append((path, None, data))
            elif op["op"] == "delete":
                changes.append((path, self.files.pop(path), None))
                self._detach(path)
                self.remember(session, path, None)
            else:
                before = self.files[path]
                lines = before.decode("utf-8").splitlines(keepends=True)
                index = [line.rstrip("\n") for line in lines].index(op["old"])
                lines[index] = op["new"] + "\n"
                data = "".join(lines).encode("utf-8")
                target = op.get("dest") if op["op"] == "move" else path
                assert target is not None
                self._detach(path)
                if op["op"] == "move":
                    del self.files[path]
                    self.remember(session, path, None)
                    self._add_parents(target)
                    changes.append((path, before, None))
                    changes.append((target, None, data))
                else:
                    changes.append((path, before, data))
                self.files[target] = data
                self.remember(session, target, data)
        self._record(session, message, changes)
        return Prediction.ok()

    def _add_parents(self, path: str) -> None:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            self.dirs.add("/".join(parts[:depth]))

    def rewind(self, session: str, message: str) -> Prediction:
        """DESIGN §4 SNAP: restore what ``session`` changed from ``message`` on, or CONFLICT."""
        records = self.history.get(session, [])
        starts = [r.seq for r in records if r.message == message]
        if not starts:
            return Prediction.error("NOT_FOUND")
        undone = [r for r in records if r.live and r.seq >= min(starts)]
        by_path: dict[str, list[Record]] = {}
        for record in undone:
            by_path.setdefault(record.path, []).append(record)
        targets: dict[str, bytes | None] = {}
        for path, chain in by_path.items():
            expected = self.files.get(path)
            # The chain must be unbroken from the disk back: the file is as this
            # session's last change left it, and each change started where the
            # previous one ended.
            for record in reversed(chain):
                if record.after != expected:
                    return Prediction.error("CONFLICT")
                expected = record.before
            targets[path] = expected
        for record in undone:
            record.live = False
        for path, target in targets.items():
            if target == self.files.get(path):
                continue
            if target is None:
                del self.files[path]
                self.remember(session, path, None)
            else:
                self._detach(path)
                self._add_parents(path)
                self.files[path] = target
                self.remember(session, path, target)
        return Prediction.ok()
