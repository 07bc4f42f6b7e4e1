"""commit(): the journaled publish of a multi-file change, its checks and its rollback."""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from editspec.fault_injection import CrashAt, FailAt, FaultyFileSystem, OpEvent, SimulatedCrash
from editspec.reference import FileSystem, Limits, ToolError, Workspace, WorkspacePath
from editspec.reference.transactions import _journal
from editspec.reference.transactions._plan import PlannedChange
from editspec.reference.transactions._transaction import commit
from tests.reference.txn_helpers import (
    SIDE_FILE,
    RecordingSnapshots,
    dirs,
    leftovers,
    tree,
    wpath,
    write,
)

# -- helpers -------------------------------------------------------------------------------


def update(ws: Workspace, relative: str, old: bytes, new: bytes) -> PlannedChange:
    return PlannedChange(op="update", target=wpath(ws, relative), old_bytes=old, new_bytes=new)


@pytest.fixture
def ws(root: Path, state_dir: Path) -> Iterator[Workspace]:
    workspace = Workspace(root, state_dir)
    yield workspace
    workspace.close()


# -- success -------------------------------------------------------------------------------


def test_update_add_delete_move_into_new_nested_directories(ws: Workspace, root: Path) -> None:
    write(root, "src/a.py", b"a = 1\n", 0o640)
    write(root, "src/b.py", b"b = 1\n")
    write(root, "old/gone.txt", b"bye\n")
    write(root, "old/m.txt", b"moving\n", 0o600)
    txn = commit(
        ws,
        [
            update(ws, "src/a.py", b"a = 1\n", b"a = 2\n"),
            PlannedChange(op="add", target=wpath(ws, "new/deep/er/c.py"), new_bytes=b"c\n"),
            PlannedChange(op="delete", target=wpath(ws, "old/gone.txt"), old_bytes=b"bye\n"),
            PlannedChange(
                op="move",
                target=wpath(ws, "old/m.txt"),
                move_to=wpath(ws, "new/other/m2.txt"),
                old_bytes=b"moving\n",
                new_bytes=b"moved\n",
            ),
        ],
    )
    assert re.fullmatch(r"[0-9a-f]{32}", txn)
    assert tree(root) == {
        "src/a.py": b"a = 2\n",
        "src/b.py": b"b = 1\n",
        "new/deep/er/c.py": b"c\n",
        "new/other/m2.txt": b"moved\n",
    }
    assert dirs(root) == {"src", "old", "new", "new/deep", "new/deep/er", "new/other"}
    assert stat.S_IMODE((root / "src/a.py").stat().st_mode) == 0o640  # mode kept
    assert stat.S_IMODE((root / "new/other/m2.txt").stat().st_mode) == 0o600  # kept on move
    assert leftovers(ws) == []


def test_explicit_mode_is_applied(ws: Workspace, root: Path) -> None:
    write(root, "run.sh", b"echo 1\n", 0o644)
    commit(
        ws,
        [
            PlannedChange(
                op="update",
                target=wpath(ws, "run.sh"),
                old_bytes=b"echo 1\n",
                new_bytes=b"echo 2\n",
                mode=0o755,
            ),
            PlannedChange(op="add", target=wpath(ws, "x.sh"), new_bytes=b"x", mode=0o700),
        ],
    )
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "x.sh").stat().st_mode) == 0o700


def test_hard_links_are_distinct_paths(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"shared\n")
    os.link(root / "a.txt", root / "twin.txt")
    commit(ws, [update(ws, "a.txt", b"shared\n", b"mine\n")])
    assert (root / "a.txt").read_bytes() == b"mine\n"
    assert (root / "twin.txt").read_bytes() == b"shared\n"
    assert leftovers(ws) == []


def test_the_publish_follows_the_design_order(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "d.txt", b"d\n")
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir, fs=fs)
    commit(
        ws,
        [
            update(ws, "a.txt", b"a\n", b"A\n"),
            PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d\n"),
            PlannedChange(op="add", target=wpath(ws, "n/new.txt"), new_bytes=b"n\n"),
        ],
    )
    # Operations on the root and on journal files (not lock files, not the journal dir).
    ops = [
        (op.name, [os.path.basename(p) for p in op.paths])
        for op in fs.log
        if op.paths and (op.paths[0].startswith(str(root)) or "json" in op.paths[-1])
    ]
    journal_renames = [
        i for i, (name, paths) in enumerate(ops) if name == "rename" and paths[-1].endswith(".json")
    ]
    assert len(journal_renames) == 2  # preparing, then committed
    first_effect = min(
        i
        for i, (name, paths) in enumerate(ops)
        if name in ("mkdir", "link") or (name == "create_exclusive" and paths[0].endswith(".stage"))
    )
    assert journal_renames[0] < first_effect  # (1) journal before anything it names
    stage_writes = [
        i
        for i, (name, paths) in enumerate(ops)
        if name == "create_exclusive" and paths[0].endswith(".stage")
    ]
    backups = [
        i for i, (name, paths) in enumerate(ops) if name == "link" and paths[1].endswith(".backup")
    ]
    mkdirs = [i for i, (name, _) in enumerate(ops) if name == "mkdir" and i > journal_renames[0]]
    publish = [
        i
        for i, (name, paths) in enumerate(ops)
        if (name == "rename" and paths[1] == "a.txt")
        or (name == "unlink" and paths[0] == "d.txt")
        or (name == "link" and paths[1] == "new.txt")
    ]
    assert len(stage_writes) == 2 and len(backups) == 2 and len(publish) == 3
    assert max(mkdirs) < min(stage_writes)  # (2) directories, then stages
    assert max(stage_writes) < min(backups)  # (3) backups after the stages
    # every stage is fsynced before the backups are made
    synced = [paths[0] for name, paths in ops[: min(backups)] if name == "fsync"]
    assert sorted(synced) == sorted(ops[i][1][0] for i in stage_writes)
    assert max(backups) < min(publish)  # (4) publish after every backup ...
    assert any(name == "fsync_dir" for name, _ in ops[max(backups) : min(publish)])  # ... synced
    assert max(publish) < journal_renames[1]  # (5) committed after the publish
    assert any(name == "fsync_dir" for name, _ in ops[max(publish) : journal_renames[1]])
    removals = [
        i
        for i, (name, paths) in enumerate(ops)
        if name == "unlink" and (paths[0].endswith(".backup") or paths[0].endswith(".json"))
    ]
    assert [ops[i][1][0].endswith(".json") for i in removals] == [False, False, True]
    assert min(removals) > journal_renames[1]  # (6) backups, then the journal
    # the rename-between-links trap: nothing is ever renamed onto its own backup
    assert not any(name == "rename" and paths[1].endswith(".backup") for name, paths in ops)


def test_hooks_see_the_disk_before_and_after(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"old\n")
    prepared: list[tuple[str, dict[str, bytes], list[str]]] = []
    committed: list[tuple[str, dict[str, bytes]]] = []

    def on_prepared(txn_id: str) -> None:
        prepared.append((txn_id, tree(root), leftovers(ws)))

    def on_committed(txn_id: str) -> None:
        committed.append((txn_id, tree(root)))

    txn = commit(
        ws,
        [update(ws, "a.txt", b"old\n", b"new\n")],
        on_prepared=on_prepared,
        on_committed=on_committed,
    )
    assert prepared == [(txn, {"a.txt": b"old\n"}, [])]
    ((committed_txn, committed_tree),) = committed
    assert committed_txn == txn
    assert {k: v for k, v in committed_tree.items() if not SIDE_FILE.search(k)} == {
        "a.txt": b"new\n"
    }
    assert leftovers(ws) == []


def test_locks_are_held_during_the_hooks(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"old\n")
    acquired: list[bool] = []

    def try_lock() -> None:
        # Another thread must wait for the transaction's key lock.
        lock = ws.locks._lock_for(wpath(ws, "a.txt").canonical_key)
        got = lock.acquire(timeout=0.2)
        if got:
            lock.release()
        acquired.append(got)

    def on_committed(txn_id: str) -> None:
        thread = threading.Thread(target=try_lock)
        thread.start()
        thread.join()

    commit(ws, [update(ws, "a.txt", b"old\n", b"new\n")], on_committed=on_committed)
    assert acquired == [False]


# -- caller errors: nothing changes --------------------------------------------------------


def expect_error(ws: Workspace, root: Path, code: str, changes: list[PlannedChange]) -> ToolError:
    before = tree(root)
    with pytest.raises(ToolError) as caught:
        commit(ws, changes)
    assert caught.value.code == code, caught.value
    assert tree(root) == before
    assert leftovers(ws) == []
    return caught.value


def test_stale_old_bytes(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"changed by someone\n")
    write(root, "b.txt", b"b\n")
    error = expect_error(
        ws,
        root,
        "STALE",
        [
            update(ws, "b.txt", b"b\n", b"B\n"),
            update(ws, "a.txt", b"what we read\n", b"new\n"),
        ],
    )
    assert error.details["path"] == "a.txt"


def test_same_size_same_mtime_change_is_stale(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"aaaa\n")
    info = (root / "a.txt").stat()
    (root / "a.txt").write_bytes(b"bbbb\n")
    os.utime(root / "a.txt", ns=(info.st_atime_ns, info.st_mtime_ns))
    expect_error(ws, root, "STALE", [update(ws, "a.txt", b"aaaa\n", b"cccc\n")])


@pytest.mark.parametrize("op", ["update", "delete", "move"])
def test_missing_target_is_not_found(ws: Workspace, root: Path, op: str) -> None:
    change = PlannedChange(
        op=op,
        target=wpath(ws, "missing.txt"),
        old_bytes=b"x",
        new_bytes=None if op == "delete" else b"y",
        move_to=wpath(ws, "dest.txt") if op == "move" else None,
    )
    expect_error(ws, root, "NOT_FOUND", [change])


def test_add_on_existing_and_move_onto_existing(ws: Workspace, root: Path) -> None:
    write(root, "here.txt", b"h\n")
    write(root, "src.txt", b"s\n")
    expect_error(
        ws,
        root,
        "ALREADY_EXISTS",
        [
            PlannedChange(op="add", target=wpath(ws, "here.txt"), new_bytes=b"x"),
        ],
    )
    expect_error(
        ws,
        root,
        "ALREADY_EXISTS",
        [
            PlannedChange(
                op="move",
                target=wpath(ws, "src.txt"),
                move_to=wpath(ws, "here.txt"),
                old_bytes=b"s\n",
                new_bytes=b"s\n",
            ),
        ],
    )
    (root / "adir").mkdir()
    expect_error(
        ws,
        root,
        "ALREADY_EXISTS",
        [
            PlannedChange(op="add", target=wpath(ws, "adir"), new_bytes=b"x"),
        ],
    )


def test_a_file_in_the_way_of_a_new_directory(ws: Workspace, root: Path) -> None:
    write(root, "plain", b"file\n")
    expect_error(
        ws,
        root,
        "ALREADY_EXISTS",
        [
            PlannedChange(op="add", target=wpath(ws, "plain/sub/x.txt"), new_bytes=b"x"),
        ],
    )


def test_update_of_a_directory(ws: Workspace, root: Path) -> None:
    (root / "adir").mkdir()
    expect_error(ws, root, "IS_A_DIRECTORY", [update(ws, "adir", b"", b"x")])


def test_transaction_size_limit(root: Path, state_dir: Path) -> None:
    ws = Workspace(root, state_dir, Limits(transaction_bytes=10))
    write(root, "a.txt", b"a")
    expect_error(
        ws,
        root,
        "TOO_LARGE",
        [
            update(ws, "a.txt", b"a", b"123456"),
            PlannedChange(op="add", target=wpath(ws, "b.txt"), new_bytes=b"12345"),
        ],
    )
    commit(ws, [update(ws, "a.txt", b"a", b"1234567890")])  # exactly at the limit
    assert (root / "a.txt").read_bytes() == b"1234567890"


def test_malformed_changes_are_invalid(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"a")
    target = wpath(ws, "a.txt")
    for changes in (
        [],
        [PlannedChange(op="rename", target=target, old_bytes=b"a", new_bytes=b"b")],
        [PlannedChange(op="update", target=target, old_bytes=b"a")],
        [PlannedChange(op="add", target=wpath(ws, "n.txt"), old_bytes=b"", new_bytes=b"b")],
        [PlannedChange(op="delete", target=target, old_bytes=b"a", new_bytes=b"")],
        [PlannedChange(op="move", target=target, old_bytes=b"a", new_bytes=b"a")],
        [
            PlannedChange(
                op="update", target=target, old_bytes=b"a", new_bytes=b"b", move_to=wpath(ws, "x")
            )
        ],
        [PlannedChange(op="update", target=target, old_bytes=b"a", new_bytes=b"b", mode=0o10000)],
        [update(ws, "a.txt", b"a", b"b"), update(ws, "a.txt", b"a", b"c")],
        [PlannedChange(op="move", target=target, move_to=target, old_bytes=b"a", new_bytes=b"a")],
        [
            PlannedChange(op="add", target=wpath(ws, "d"), new_bytes=b"x"),
            PlannedChange(op="add", target=wpath(ws, "d/e.txt"), new_bytes=b"x"),
        ],
    ):
        expect_error(ws, root, "INVALID_ARGUMENT", changes)


def test_a_path_outside_the_root(ws: Workspace, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret\n")
    escaped = WorkspacePath(
        requested="../outside.txt",
        logical=str(outside),
        real=str(outside),
        relative="../outside.txt",
        crossed_link=False,
        exists=True,
    )
    expect_error(
        ws,
        root,
        "OUTSIDE_WORKSPACE",
        [
            PlannedChange(op="update", target=escaped, old_bytes=b"secret\n", new_bytes=b"x"),
        ],
    )
    sibling = str(root) + "_evil"
    prefix_twin = WorkspacePath(
        requested=sibling,
        logical=sibling,
        real=sibling,
        relative="x",
        crossed_link=False,
        exists=False,
    )
    expect_error(
        ws,
        root,
        "OUTSIDE_WORKSPACE",
        [
            PlannedChange(op="add", target=prefix_twin, new_bytes=b"x"),
        ],
    )
    assert outside.read_bytes() == b"secret\n"


def test_a_workspace_needing_recovery_refuses(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"a")
    ws.mark_needs_recovery("test")
    expect_error(ws, root, "NEEDS_RECOVERY", [update(ws, "a.txt", b"a", b"b")])


def test_a_failing_on_prepared_aborts_with_nothing_changed(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"a")
    snapshots = RecordingSnapshots()
    ws.snapshots = snapshots  # type: ignore[assignment]
    seen: list[str] = []

    def on_prepared(txn_id: str) -> None:
        seen.append(txn_id)
        raise ToolError("IO_ERROR", "snapshot store is full")

    before = tree(root)
    with pytest.raises(ToolError, match="snapshot store is full"):
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"b"),
                PlannedChange(op="add", target=wpath(ws, "n/x.txt"), new_bytes=b"x"),
            ],
            on_prepared=on_prepared,
        )
    assert tree(root) == before and dirs(root) == set()
    assert leftovers(ws) == []
    assert snapshots.calls == [("discard", seen[0])]


# -- failures during the publish -------------------------------------------------------------


def test_a_file_appearing_at_an_added_path_is_not_clobbered(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")

    class Racer(FileSystem):
        """Someone creates the added file between the check and the link."""

        def link(self, src: str, dst: str) -> None:
            if dst.endswith("new.txt") and not os.path.exists(dst):
                Path(dst).write_bytes(b"theirs\n")
            super().link(src, dst)

    ws = Workspace(root, state_dir, fs=Racer())
    with pytest.raises(ToolError) as caught:
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"b"),
                PlannedChange(op="add", target=wpath(ws, "new.txt"), new_bytes=b"ours\n"),
            ],
        )
    assert caught.value.code == "ALREADY_EXISTS"
    assert tree(root) == {"a.txt": b"a", "new.txt": b"theirs\n"}
    assert leftovers(ws) == []


def test_a_change_after_the_lock_is_caught_before_publishing(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a\n")
    write(root, "b.txt", b"b\n")

    class InPlaceWriter(FileSystem):
        """An outside writer rewrites b.txt in place while the transaction prepares."""

        def link(self, src: str, dst: str) -> None:
            super().link(src, dst)
            if src.endswith("b.txt"):
                with open(src, "r+b") as handle:
                    handle.write(b"X")

    ws = Workspace(root, state_dir, fs=InPlaceWriter())
    with pytest.raises(ToolError) as caught:
        commit(ws, [update(ws, "a.txt", b"a\n", b"A\n"), update(ws, "b.txt", b"b\n", b"B\n")])
    assert caught.value.code == "STALE"
    assert tree(root) == {"a.txt": b"a\n", "b.txt": b"X\n"}  # their write kept, ours undone
    assert leftovers(ws) == []


def armed_workspace(root: Path, state_dir: Path) -> tuple[Workspace, FaultyFileSystem]:
    """A workspace whose lock and journal directories exist, so every later commit of
    the same shape counts the same operations."""
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir, fs=fs)
    commit(ws, [PlannedChange(op="add", target=wpath(ws, "warm-up"), new_bytes=b"")])
    commit(ws, [PlannedChange(op="delete", target=wpath(ws, "warm-up"), old_bytes=b"")])
    return ws, fs


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC])
def test_an_error_before_the_commit_point_rolls_back(
    root: Path, state_dir: Path, code: int
) -> None:
    ws, fs = armed_workspace(root, state_dir)

    def changes(old: bytes, new: bytes) -> list[PlannedChange]:
        return [
            update(ws, "a.txt", old, new),
            PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d"),
            PlannedChange(op="add", target=wpath(ws, "n/m/x.txt"), new_bytes=b"x"),
        ]

    write(root, "a.txt", b"a")
    write(root, "d.txt", b"d")
    fs.arm(None)
    commit(ws, changes(b"a", b"b"))  # a dry run, to find the unlink of d.txt
    unlink_at = next(
        op.index for op in fs.log if op.name == "unlink" and op.paths[0].endswith("d.txt")
    )
    (root / "n/m/x.txt").unlink()
    (root / "n/m").rmdir()
    (root / "n").rmdir()
    write(root, "d.txt", b"d")
    before = tree(root)
    # a.txt is already renamed over, x.txt linked in place when the delete fails
    fs.arm(FailAt(unlink_at, code))
    with pytest.raises(ToolError) as caught:
        commit(ws, changes(b"b", b"c"))
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["errno"] == code
    assert tree(root) == before and dirs(root) == set()
    assert leftovers(ws) == []
    ws.ensure_writable()  # a finished rollback leaves the workspace usable


def test_a_crash_runs_no_cleanup_and_blocks_the_process(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir, fs=fs)
    fs.arm(CrashAt(12))
    with pytest.raises(SimulatedCrash):
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"b"),
                PlannedChange(op="add", target=wpath(ws, "new.txt"), new_bytes=b"n"),
            ],
        )
    assert leftovers(ws) != []  # a dead process removes nothing
    with pytest.raises(ToolError) as caught:
        ws.ensure_writable()
    assert caught.value.code == "NEEDS_RECOVERY"
    fresh = Workspace(root, state_dir)
    assert tree(root) == {"a.txt": b"a"}
    assert leftovers(fresh) == []


class BrokenRestore(FileSystem):
    """Publishing fails at the delete, and no backup can be renamed back."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def unlink(self, path: str) -> None:
        if self.broken and path.endswith("d.txt"):
            raise OSError(errno.EIO, "injected", path)
        super().unlink(path)

    def rename(self, src: str, dst: str) -> None:
        if self.broken and src.endswith(".backup"):
            raise OSError(errno.EROFS, "injected", src)
        super().rename(src, dst)


def test_a_rollback_that_cannot_finish(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")
    write(root, "b.txt", b"b")
    write(root, "d.txt", b"d")
    fs = BrokenRestore()
    ws = Workspace(root, state_dir, fs=fs)
    with pytest.raises(ToolError) as caught:
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"A"),
                update(ws, "b.txt", b"b", b"B"),
                PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d"),
            ],
        )
    error = caught.value
    assert error.code == "IO_ERROR"
    assert error.details["not_restored"] == ["a.txt", "b.txt"]  # every file, not the first
    assert error.details["cause"] == "IO_ERROR"
    with pytest.raises(ToolError) as refused:
        ws.ensure_writable()
    assert refused.value.code == "NEEDS_RECOVERY"
    with pytest.raises(ToolError) as again:
        commit(ws, [update(ws, "a.txt", b"A", b"again")])
    assert again.value.code == "NEEDS_RECOVERY"
    fs.broken = False
    report = ws.recover()
    assert report.rolled_back == (error.details["transaction"],)
    assert tree(root) == {"a.txt": b"a", "b.txt": b"b", "d.txt": b"d"}
    assert leftovers(ws) == []
    ws.ensure_writable()


# -- failures after the commit point ---------------------------------------------------------


def test_a_failing_on_committed_keeps_the_change(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")
    ws = Workspace(root, state_dir)
    snapshots = RecordingSnapshots()
    ws.snapshots = snapshots  # type: ignore[assignment]

    def on_committed(txn_id: str) -> None:
        raise RuntimeError("confirm failed")

    txn = commit(ws, [update(ws, "a.txt", b"a", b"b")], on_committed=on_committed)
    assert tree(root) == {"a.txt": b"b"} | {
        k: v for k, v in tree(root).items() if SIDE_FILE.search(k)
    }
    with pytest.raises(ToolError):
        ws.ensure_writable()
    journal = _journal.read(ws.fs, ws.journal_dir, txn, root=ws.root)
    assert journal.state == "committed"
    report = ws.recover()
    assert report.rolled_forward == (txn,)
    assert snapshots.calls == [("confirm", txn)]
    assert tree(root) == {"a.txt": b"b"}
    assert leftovers(ws) == []
    ws.ensure_writable()


def _commit_fsync(ws: Workspace, fs: FaultyFileSystem, root: Path) -> int:
    """The counted index of the fsync that makes a commit record durable (a probe run)."""
    fs.arm(None)
    commit(ws, [update(ws, "a.txt", b"a", b"b")])
    renames = [op.index for op in fs.log if op.name == "rename" and op.paths[1].endswith(".json")]
    assert fs.log[renames[1]].name == "fsync_dir"  # right after the committed rename
    write(root, "a.txt", b"a")
    return renames[1] + 1


def test_an_unsynced_commit_record_is_revoked_and_rolled_back(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")
    ws, fs = armed_workspace(root, state_dir)
    sync_after_commit = _commit_fsync(ws, fs, root)
    fs.arm(FailAt(sync_after_commit, errno.EIO))
    committed: list[str] = []
    with pytest.raises(ToolError) as caught:
        commit(ws, [update(ws, "a.txt", b"a", b"c")], on_committed=committed.append)
    # The rename may or may not survive a power cut: the commit is revoked through the
    # record's own file, then undone; the commit hook never ran.
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["errno"] == errno.EIO
    assert committed == []
    assert tree(root) == {"a.txt": b"a"}
    assert leftovers(ws) == []
    after = [op.name for op in fs.log[sync_after_commit:]]
    assert after[:4] == ["open_append", "write", "fsync", "close"]
    ws.ensure_writable()  # as before: nothing is left for recovery


def _failing_after(fs: FaultyFileSystem, first: int, *later: int) -> None:
    """Fail counted call ``first`` with EIO, then each of ``later`` (counted after it)."""
    pending = list(later)
    fs.arm(FailAt(first, errno.EIO))

    def next_failure(event: OpEvent) -> None:
        if event.record.outcome.startswith("fail:") and pending:
            fs.plan = FailAt(event.record.index + pending.pop(0), errno.EIO)

    fs.observers.append(next_failure)


def test_a_revocation_that_cannot_be_synced_is_written_as_a_new_record(
    root: Path, state_dir: Path
) -> None:
    write(root, "a.txt", b"a")
    ws, fs = armed_workspace(root, state_dir)
    sync_after_commit = _commit_fsync(ws, fs, root)
    _failing_after(fs, sync_after_commit, 3)  # open_append, write, fsync <- EIO
    with pytest.raises(ToolError) as caught:
        commit(ws, [update(ws, "a.txt", b"a", b"c")])
    assert caught.value.code == "IO_ERROR"
    names = [(op.name, op.outcome) for op in fs.log[sync_after_commit - 1 :]]
    assert names[:4] == [
        ("fsync_dir", "fail:EIO"),
        ("open_append", "ok"),
        ("write", "ok"),
        ("fsync", "fail:EIO"),
    ]
    # Then the second way: a new preparing record, renamed over the committed one, synced.
    rename = next(i for i, (name, _) in enumerate(names) if name == "rename")
    assert names[rename + 1] == ("fsync_dir", "ok")
    assert tree(root) == {"a.txt": b"a"}
    assert leftovers(ws) == []
    ws.ensure_writable()


def test_when_no_undo_can_be_synced_the_answer_is_needs_recovery(
    root: Path, state_dir: Path
) -> None:
    write(root, "a.txt", b"a")
    ws, fs = armed_workspace(root, state_dir)
    sync_after_commit = _commit_fsync(ws, fs, root)
    # The commit's fsync, the revocation's, and the new record's fsync_dir:
    # close +1, then create_exclusive, write, fchmod, fsync, close, rename, fsync_dir.
    _failing_after(fs, sync_after_commit, 3, 8)
    with pytest.raises(ToolError) as caught:
        commit(ws, [update(ws, "a.txt", b"a", b"c")])
    assert [op.name for op in fs.log if op.outcome != "ok"] == ["fsync_dir", "fsync", "fsync_dir"]
    assert caught.value.code == "NEEDS_RECOVERY"
    assert caught.value.details["not_restored"] == ["a.txt"]
    assert (root / "a.txt").read_bytes() == b"c"  # published, and left so: never success
    with pytest.raises(ToolError) as refused:
        ws.ensure_writable()
    assert refused.value.code == "NEEDS_RECOVERY"
    report = ws.recover()  # this process rolls it back, through a record it syncs first
    assert len(report.rolled_back) == 1
    assert tree(root) == {"a.txt": b"a"}
    assert leftovers(ws) == []
    ws.ensure_writable()


def test_cleanup_failure_after_commit_is_left_for_recovery(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")
    ws, fs = armed_workspace(root, state_dir)
    fs.arm(None)
    commit(ws, [update(ws, "a.txt", b"a", b"b")])
    unlink_backup = next(
        op.index for op in fs.log if op.name == "unlink" and op.paths[0].endswith(".backup")
    )
    fs.arm(FailAt(unlink_backup, errno.EACCES))
    txn = commit(ws, [update(ws, "a.txt", b"b", b"c")])
    assert (root / "a.txt").read_bytes() == b"c"
    ws.ensure_writable()  # consistent: nothing blocks further changes
    assert len(leftovers(ws)) == 2  # the backup and the committed journal
    report = Workspace(root, state_dir, recover=False).recover()  # as the next open does
    assert report.rolled_forward == (txn,)
    assert tree(root) == {"a.txt": b"c"}
    assert leftovers(ws) == []


# -- the environment misbehaving ---------------------------------------------------------------


def test_a_target_swapped_for_a_symlink_is_stale(ws: Workspace, root: Path) -> None:
    write(root, "real.txt", b"content\n")
    write(root, "a.txt", b"content\n")
    planned = wpath(ws, "a.txt")
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to("real.txt")
    with pytest.raises(ToolError) as caught:
        commit(
            ws, [PlannedChange(op="update", target=planned, old_bytes=b"content\n", new_bytes=b"x")]
        )
    assert caught.value.code == "STALE"
    assert (root / "a.txt").is_symlink() and (root / "real.txt").read_bytes() == b"content\n"


class Flaky(FileSystem):
    """Raise ``error`` from the named port method when ``match`` is in the path."""

    def __init__(self, method: str, match: str, error: BaseException) -> None:
        super().__init__()
        self.method, self.match, self.error = method, match, error

    def _maybe(self, name: str, *paths: str) -> None:
        if name == self.method and any(self.match in path for path in paths):
            raise self.error

    def lstat(self, path: str) -> os.stat_result:
        self._maybe("lstat", path)
        return super().lstat(path)

    def link(self, src: str, dst: str) -> None:
        self._maybe("link", src, dst)
        super().link(src, dst)

    def write(self, fd: int, data: bytes) -> None:
        self._maybe("write", "<fd>")
        super().write(fd, data)

    def lock_file(self, path: str, *, shared: bool = False) -> int:
        self._maybe("lock_file", path)
        return super().lock_file(path, shared=shared)


@pytest.mark.parametrize(
    ("fs", "code"),
    [
        (Flaky("lock_file", ".lock", PermissionError(errno.EACCES, "denied")), "IO_ERROR"),
        (Flaky("lstat", "new", PermissionError(errno.EACCES, "denied")), "IO_ERROR"),
        (Flaky("lstat", "a.txt", PermissionError(errno.EACCES, "denied")), "IO_ERROR"),
        # a directory vanishing under the publish is the environment's doing, not a NOT_FOUND
        (Flaky("link", "a.txt", FileNotFoundError(errno.ENOENT, "gone")), "IO_ERROR"),
        (Flaky("write", "<fd>", ValueError("not an OSError")), "IO_ERROR"),
    ],
    ids=["lock", "inspect-new-dir", "inspect-target", "enoent-in-publish", "not-an-oserror"],
)
def test_environment_failures_become_tool_errors(
    root: Path, state_dir: Path, fs: FileSystem, code: str
) -> None:
    write(root, "a.txt", b"a")
    ws = Workspace(root, state_dir, fs=fs, recover=False)
    before = tree(root)
    with pytest.raises(ToolError) as caught:
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"b"),
                PlannedChange(op="add", target=wpath(ws, "new/x.txt"), new_bytes=b"x"),
            ],
        )
    assert caught.value.code == code
    assert tree(root) == before and dirs(root) == set()
    assert leftovers(ws) == []
    ws.ensure_writable()


def test_a_failing_discard_is_reported_with_the_error(ws: Workspace, root: Path) -> None:
    write(root, "a.txt", b"a")

    class BrokenStore(RecordingSnapshots):
        def discard_transaction(self, txn_id: str) -> None:
            raise ToolError("IO_ERROR", "store unavailable")

    ws.snapshots = BrokenStore()  # type: ignore[assignment]

    def on_prepared(txn_id: str) -> None:
        raise ToolError("IO_ERROR", "snapshot failed")

    with pytest.raises(ToolError, match="snapshot failed") as caught:
        commit(ws, [update(ws, "a.txt", b"a", b"b")], on_prepared=on_prepared)
    assert "store unavailable" in caught.value.details["snapshot_discard_error"]
    assert tree(root) == {"a.txt": b"a"}


class NothingRemovable(FileSystem):
    """After the failure, nothing can be unlinked, renamed or removed."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def unlink(self, path: str) -> None:
        if self.broken or path.endswith("d.txt"):
            self.broken = True
            raise OSError(errno.EROFS, "read-only", path)
        super().unlink(path)

    def rename(self, src: str, dst: str) -> None:
        if self.broken:
            raise OSError(errno.EROFS, "read-only", src)
        super().rename(src, dst)

    def rmdir(self, path: str) -> None:
        if self.broken:
            raise OSError(errno.EROFS, "read-only", path)
        super().rmdir(path)


def test_a_rollback_names_every_path_it_could_not_undo(root: Path, state_dir: Path) -> None:
    write(root, "a.txt", b"a")
    write(root, "d.txt", b"d")
    write(root, "m.txt", b"m")
    fs = NothingRemovable()
    ws = Workspace(root, state_dir, fs=fs)
    with pytest.raises(ToolError) as caught:
        commit(
            ws,
            [
                PlannedChange(op="add", target=wpath(ws, "n/added.txt"), new_bytes=b"n"),
                PlannedChange(
                    op="move",
                    target=wpath(ws, "m.txt"),
                    move_to=wpath(ws, "n/m2.txt"),
                    old_bytes=b"m",
                    new_bytes=b"M",
                ),
                update(ws, "a.txt", b"a", b"A"),
                PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d"),
            ],
        )
    details = caught.value.details
    assert caught.value.code == "IO_ERROR"
    not_restored = details["not_restored"]
    # backups that cannot be renamed back, added files, the stage of d.txt's neighbours
    # and the created directory: every one is named
    assert {"a.txt", "m.txt", "d.txt", "n/added.txt", "n/m2.txt", "n"} <= set(not_restored)
    fs.broken = False
    fs.unlink = FileSystem.unlink.__get__(fs)  # type: ignore[method-assign]
    report = ws.recover()
    assert report.rolled_back == (details["transaction"],)
    assert tree(root) == {"a.txt": b"a", "d.txt": b"d", "m.txt": b"m"}
    assert dirs(root) == set() and leftovers(ws) == []


def test_a_restore_that_leaves_its_backup_is_not_success(root: Path, state_dir: Path) -> None:
    """``rename`` between two links of one file does nothing and reports success (POSIX):
    the backup name must be gone afterwards, whatever rename said."""
    write(root, "a.txt", b"a")
    write(root, "d.txt", b"d")

    class SilentRename(FileSystem):
        def unlink(self, path: str) -> None:
            if path.endswith("d.txt"):
                raise OSError(errno.EIO, "injected", path)
            super().unlink(path)

        def rename(self, src: str, dst: str) -> None:
            if not src.endswith(".backup"):
                super().rename(src, dst)  # a backup "restored" by a rename that did nothing

    ws = Workspace(root, state_dir, fs=SilentRename())
    with pytest.raises(ToolError) as caught:
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"A"),
                PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d"),
            ],
        )
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["not_restored"] == ["a.txt"]
    assert "still present" in caught.value.details["failures"]["a.txt"]


def test_a_restore_racing_into_a_link_of_its_backup(root: Path, state_dir: Path) -> None:
    """If the target became a link of the backup just before the rename, the rename is
    a no-op; the backup is then removed, and the target holds the old bytes."""
    write(root, "a.txt", b"a")
    write(root, "d.txt", b"d")

    class LinkThenRename(FileSystem):
        def unlink(self, path: str) -> None:
            if path.endswith("d.txt") and os.path.exists(path):
                raise OSError(errno.EIO, "injected", path)
            super().unlink(path)

        def rename(self, src: str, dst: str) -> None:
            if src.endswith(".backup"):
                os.unlink(dst)
                os.link(src, dst)
            super().rename(src, dst)

    ws = Workspace(root, state_dir, fs=LinkThenRename())
    with pytest.raises(ToolError) as caught:
        commit(
            ws,
            [
                update(ws, "a.txt", b"a", b"A"),
                PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d"),
            ],
        )
    assert caught.value.details["errno"] == errno.EIO  # the original error: rolled back
    assert tree(root) == {"a.txt": b"a", "d.txt": b"d"}
    assert leftovers(ws) == []
