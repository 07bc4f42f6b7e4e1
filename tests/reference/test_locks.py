"""Locks per canonical key and the workspace guard (``reference/_locks.py``, LOCK)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.reference import FileSystem, Session, ToolError, Workspace

TIMEOUT = 10.0


def _lock_path(workspace: Workspace, key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(workspace.state_dir, "locks", workspace.root_hash, f"{digest}.lock")


def _blocks(action: Callable[[], object], release: threading.Event) -> bool:
    """Run ``action`` in a thread; True if it waits until ``release`` is set."""
    done = threading.Event()

    def run() -> None:
        action()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    blocked = not done.wait(0.3)
    release.set()
    assert done.wait(TIMEOUT), "the waiting thread never got the lock"
    thread.join(TIMEOUT)
    return blocked


def test_two_aliases_share_one_lock(workspace: Workspace, root: Path) -> None:
    (root / "real.txt").write_bytes(b"x")
    (root / "alias.txt").symlink_to("real.txt")
    alias_key = workspace.resolve("alias.txt").canonical_key
    real_key = workspace.resolve("real.txt").canonical_key
    assert alias_key == real_key
    release, held = threading.Event(), threading.Event()

    def holder() -> None:
        with workspace.locks.hold([real_key]):
            held.set()
            release.wait(TIMEOUT)

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    assert held.wait(TIMEOUT)

    def take_alias() -> None:
        with workspace.locks.hold([alias_key]):
            pass

    assert _blocks(take_alias, release)
    thread.join(TIMEOUT)


def test_different_keys_do_not_block_each_other(workspace: Workspace) -> None:
    with workspace.locks.hold(["/k/a"]):
        done = threading.Event()

        def other() -> None:
            with workspace.locks.hold(["/k/b"]):
                done.set()

        threading.Thread(target=other, daemon=True).start()
        assert done.wait(TIMEOUT)


class _RecordingFileSystem(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.locked: list[str] = []

    def lock_file(self, path: str, *, shared: bool = False) -> int:
        self.locked.append(os.path.basename(path))
        return super().lock_file(path, shared=shared)


def test_keys_are_taken_in_sorted_order(root: Path, state_dir: Path) -> None:
    fs = _RecordingFileSystem()
    workspace = Workspace(root, state_dir, fs=fs)
    keys = ["/z/last", "/a/first", "/m/middle", "/a/first"]
    digests = {hashlib.sha256(key.encode()).hexdigest()[:32] + ".lock": key for key in set(keys)}
    fs.locked.clear()
    with workspace.locks.hold(keys):
        pass
    assert [digests[name] for name in fs.locked] == ["/a/first", "/m/middle", "/z/last"]


def test_opposite_orders_do_not_deadlock(workspace: Workspace) -> None:
    errors: list[BaseException] = []

    def worker(keys: list[str]) -> None:
        try:
            for _ in range(200):
                with workspace.locks.hold(keys):
                    pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=worker, args=(["/k/a", "/k/b", "/k/c"],), daemon=True),
        threading.Thread(target=worker, args=(["/k/c", "/k/b", "/k/a"],), daemon=True),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 3)
        assert not thread.is_alive(), "deadlock"
    assert errors == []


def test_hold_is_reentrant_within_a_thread(workspace: Workspace) -> None:
    with workspace.locks.hold(["/k/a"]), workspace.locks.hold(["/k/a", "/k/b"]):
        pass
    done = threading.Event()

    def other() -> None:
        with workspace.locks.hold(["/k/a"]):
            done.set()

    threading.Thread(target=other, daemon=True).start()
    assert done.wait(TIMEOUT)  # fully released after the nested holds


def test_a_held_key_is_flocked_for_other_processes(workspace: Workspace) -> None:
    path = _lock_path(workspace, "/k/a")
    with workspace.locks.hold(["/k/a"]):
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released afterwards
    finally:
        os.close(fd)


def test_transactions_share_the_guard_and_recovery_excludes_them(workspace: Workspace) -> None:
    release = threading.Event()
    inside = threading.Event()

    def transaction() -> None:
        with workspace.locks.transactions(exclusive=False):
            inside.set()
            release.wait(TIMEOUT)

    thread = threading.Thread(target=transaction, daemon=True)
    thread.start()
    assert inside.wait(TIMEOUT)
    with workspace.locks.transactions(exclusive=False):
        pass  # a second transaction gets in at once

    def recovery() -> None:
        with workspace.locks.transactions(exclusive=True):
            pass

    assert _blocks(recovery, release)
    thread.join(TIMEOUT)


def test_concurrent_writers_through_aliases_lose_no_update(
    workspace: Workspace, root: Path
) -> None:
    (root / "counter.txt").write_bytes(b"0")
    (root / "alias.txt").symlink_to("counter.txt")
    increments = 15
    applied: list[int] = []

    def worker(index: int) -> None:
        session: Session = workspace.session(f"w{index}")
        name = "alias.txt" if index % 2 else "counter.txt"
        done = 0
        while done < increments:
            value = session.read(name).content
            try:
                session.write(name, str(int(value) + 1))
            except ToolError as exc:
                assert exc.code == "STALE"
                continue
            done += 1
        applied.append(done)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 6)
        assert not thread.is_alive()
    assert sum(applied) == 4 * increments
    assert (root / "counter.txt").read_bytes() == str(4 * increments).encode()
    assert (root / "alias.txt").is_symlink()
