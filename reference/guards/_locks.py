"""Locks: one per canonical key, taken in sorted order; and the workspace guard.

* ``LockTable.hold(keys)``: an in-process lock per canonical key plus an ``flock`` on a
  lock file per key in the state directory, so threads and processes serialize on
  the same file. Keys are taken in sorted order, so two multi-path operations
  cannot deadlock (LOCK-*). Two aliases of one file resolve to one canonical key,
  hence one lock. Re-entrant within a thread.
* ``LockTable.transactions(exclusive=...)``: journaled transactions hold the
  workspace guard shared; recovery holds it exclusive, so recovery never rolls back
  a transaction that another thread or process is still running.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator

from editspec.reference._base import WorkspaceBase
from editspec.reference._errors import from_oserror
from editspec.reference._fs import makedirs


class _SharedExclusive:
    """A readers-writer lock for threads of one process."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writer: int | None = None

    @contextlib.contextmanager
    def hold(self, *, exclusive: bool) -> Iterator[None]:
        me = threading.get_ident()
        with self._condition:
            if exclusive:
                while self._writer not in (None, me) or self._readers:
                    self._condition.wait()
                reentered = self._writer == me
                self._writer = me
            else:
                while self._writer not in (None, me):
                    self._condition.wait()
                reentered = False
                self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                if exclusive:
                    if not reentered:
                        self._writer = None
                else:
                    self._readers -= 1
                self._condition.notify_all()


class LockTable:
    """Per-key locks of one workspace (in-process and cross-process)."""

    def __init__(self, workspace: WorkspaceBase) -> None:
        self._workspace = workspace
        self._table_lock = threading.Lock()
        self._key_locks: dict[str, threading.RLock] = {}
        self._local = threading.local()
        self._guard = _SharedExclusive()
        self._lock_dir = os.path.join(workspace.state_dir, "locks", workspace.root_hash)

    def _lock_for(self, key: str) -> threading.RLock:
        with self._table_lock:
            lock = self._key_locks.get(key)
            if lock is None:
                lock = self._key_locks[key] = threading.RLock()
            return lock

    def _held(self) -> dict[str, int]:
        held: dict[str, int] | None = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = {}
        return held

    def _take(self, name: str, *, shared: bool = False) -> int:
        """Open and flock one lock file; an environment failure is IO_ERROR, not a bare OSError."""
        path = os.path.join(self._lock_dir, name)
        try:
            makedirs(self._workspace.fs, self._lock_dir)
            return self._workspace.fs.lock_file(path, shared=shared)
        except OSError as exc:
            raise from_oserror(exc, path, action="lock") from exc

    @contextlib.contextmanager
    def hold(self, keys: Iterable[str]) -> Iterator[None]:
        """Hold every key's lock; taken in sorted order. Spec: LOCK-*."""
        fs = self._workspace.fs
        held = self._held()
        acquired: list[tuple[str, threading.RLock, int | None]] = []
        try:
            for key in sorted(set(keys)):
                lock = self._lock_for(key)
                lock.acquire()
                handle = None
                if held.get(key, 0) == 0:
                    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
                    try:
                        handle = self._take(f"{digest}.lock")
                    except BaseException:
                        lock.release()
                        raise
                held[key] = held.get(key, 0) + 1
                acquired.append((key, lock, handle))
            yield
        finally:
            for key, lock, handle in reversed(acquired):
                held[key] -= 1
                if held[key] == 0:
                    del held[key]
                if handle is not None:
                    fs.unlock(handle)
                lock.release()

    @contextlib.contextmanager
    def transactions(self, *, exclusive: bool) -> Iterator[None]:
        """The workspace guard: shared for a transaction, exclusive for recovery."""
        fs = self._workspace.fs
        with self._guard.hold(exclusive=exclusive):
            depth = getattr(self._local, "guard_depth", 0)
            handle = None
            if depth == 0:
                handle = self._take("workspace.lock", shared=not exclusive)
            self._local.guard_depth = depth + 1
            try:
                yield
            finally:
                self._local.guard_depth = depth
                if handle is not None:
                    fs.unlock(handle)
