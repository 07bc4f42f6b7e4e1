"""recover(): roll back ``preparing`` journals, finish ``committed`` ones, refuse corrupt ones."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from editspec.fault_injection import CrashAt, FaultyFileSystem, OpEvent, OpRecord, SimulatedCrash
from editspec.reference import FileSystem, ToolError, Workspace
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

ChangesFor = Callable[[Workspace], list[PlannedChange]]
Predicate = Callable[[OpRecord], bool]


def crash_after(
    root: Path, state_dir: Path, changes_for: ChangesFor, predicate: Predicate, *, offset: int = 1
) -> str:
    """Run a commit that crashes ``offset`` operations after the first op matching
    ``predicate``; return the transaction id left on disk."""
    # A dry run on a copy of the layout would differ in lock/journal dir creation, so
    # warm both up and replay: the same commit shape then counts the same operations.
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir, fs=fs)
    before = {p: (root / p).read_bytes() for p in tree(root)}
    commit(ws, [PlannedChange(op="add", target=wpath(ws, ".warm"), new_bytes=b"")])
    commit(ws, [PlannedChange(op="delete", target=wpath(ws, ".warm"), old_bytes=b"")])
    fs.arm(None)
    commit(ws, changes_for(ws))
    index = next(op.index for op in fs.log if predicate(op)) + offset
    for path in tree(root):
        (root / path).unlink()
    for directory in sorted(dirs(root), key=len, reverse=True):
        (root / directory).rmdir()
    for path, data in before.items():
        write(root, path, data)
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir, fs=fs)
    fs.arm(CrashAt(index))
    with pytest.raises(SimulatedCrash):
        commit(ws, changes_for(ws))
    (journal,) = os.listdir(ws.journal_dir)
    return journal.removesuffix(".json")


def patch_changes(ws: Workspace) -> list[PlannedChange]:
    return [
        PlannedChange(op="update", target=wpath(ws, "a.txt"), old_bytes=b"a\n", new_bytes=b"A\n"),
        PlannedChange(op="add", target=wpath(ws, "new/deep/n.txt"), new_bytes=b"n\n"),
        PlannedChange(op="delete", target=wpath(ws, "d.txt"), old_bytes=b"d\n"),
        PlannedChange(
            op="move",
            target=wpath(ws, "m.txt"),
            move_to=wpath(ws, "new/m2.txt"),
            old_bytes=b"m\n",
            new_bytes=b"M\n",
        ),
    ]


BEFORE = {"a.txt": b"a\n", "d.txt": b"d\n", "m.txt": b"m\n"}
AFTER = {"a.txt": b"A\n", "new/deep/n.txt": b"n\n", "new/m2.txt": b"M\n"}


@pytest.fixture
def seeded(root: Path) -> Path:
    for path, data in BEFORE.items():
        write(root, path, data)
    return root


def is_publish_of_move(op: OpRecord) -> bool:
    return op.name == "unlink" and op.paths[0].endswith("m.txt")


def is_commit_rename(op: OpRecord) -> bool:
    return op.name == "rename" and op.paths[1].endswith(".json") and ".committed." in op.paths[0]


def test_nothing_to_recover(workspace: Workspace) -> None:
    report = workspace.recover()
    assert (report.rolled_back, report.rolled_forward, report.cleaned) == ((), (), ())


def test_a_preparing_journal_is_rolled_back(seeded: Path, state_dir: Path) -> None:
    txn = crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    assert tree(seeded) != BEFORE  # half published: a.txt and n.txt are new already
    ws = Workspace(seeded, state_dir, recover=False)
    snapshots = RecordingSnapshots()
    ws.snapshots = snapshots  # type: ignore[assignment]
    report = ws.recover()
    assert report.rolled_back == (txn,) and report.rolled_forward == ()
    assert tree(seeded) == BEFORE and dirs(seeded) == set()
    assert leftovers(ws) == []
    assert snapshots.calls == [("discard", txn)]
    assert all(SIDE_FILE.search(path) for path in report.cleaned)
    assert ws.recover().rolled_back == ()  # idempotent: nothing left to do


def test_a_committed_journal_is_finished(seeded: Path, state_dir: Path) -> None:
    txn = crash_after(seeded, state_dir, patch_changes, is_commit_rename)
    ws = Workspace(seeded, state_dir, recover=False)
    snapshots = RecordingSnapshots()
    ws.snapshots = snapshots  # type: ignore[assignment]
    assert any(SIDE_FILE.search(p) for p in tree(seeded))
    report = ws.recover()
    assert report.rolled_forward == (txn,) and report.rolled_back == ()
    assert tree(seeded) == AFTER
    assert leftovers(ws) == []
    assert snapshots.calls == [("confirm", txn)]
    assert sorted(report.cleaned) == sorted(
        _journal.side_file_name(name, txn, "backup") for name in ("a.txt", "d.txt", "m.txt")
    )


def test_opening_a_workspace_recovers(seeded: Path, state_dir: Path) -> None:
    crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    ws = Workspace(seeded, state_dir)
    assert tree(seeded) == BEFORE and leftovers(ws) == []


def test_an_added_file_that_is_not_ours_is_kept(seeded: Path, state_dir: Path) -> None:
    crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    (seeded / "new/deep/n.txt").write_bytes(b"someone else's\n")
    (seeded / "new/deep/theirs.txt").write_bytes(b"theirs\n")
    ws = Workspace(seeded, state_dir)
    assert tree(seeded) == BEFORE | {
        "new/deep/n.txt": b"someone else's\n",
        "new/deep/theirs.txt": b"theirs\n",
    }
    assert dirs(seeded) == {"new", "new/deep"}  # not empty, so not removed
    assert leftovers(ws) == []


def test_two_interrupted_transactions_on_one_file_roll_back_newest_first(
    root: Path, state_dir: Path
) -> None:
    write(root, "a.txt", b"v0\n")

    def first(ws: Workspace) -> list[PlannedChange]:
        return [
            PlannedChange(
                op="update", target=wpath(ws, "a.txt"), old_bytes=b"v0\n", new_bytes=b"v1\n"
            )
        ]

    def is_publish(op: OpRecord) -> bool:
        return op.name == "rename" and op.paths[1].endswith("a.txt")

    crash_after(root, state_dir, first, is_publish)
    assert tree(root) == {"a.txt": b"v1\n"} | {
        k: v for k, v in tree(root).items() if SIDE_FILE.search(k)
    }
    # A process that opened the workspace earlier (no recovery since) changes it again
    # and dies mid-publish too.
    fs = FaultyFileSystem()
    ws = Workspace(root, state_dir, fs=fs, recover=False)
    fs.arm(None)

    def crash_on_publish(op: OpEvent) -> None:
        record = op.record
        if record.name == "rename" and record.paths[1].endswith("a.txt"):
            fs._die()
            raise SimulatedCrash("killed after publishing")

    fs.observers.append(crash_on_publish)
    with pytest.raises(SimulatedCrash):
        commit(
            ws,
            [
                PlannedChange(
                    op="update", target=wpath(ws, "a.txt"), old_bytes=b"v1\n", new_bytes=b"v2\n"
                )
            ],
        )
    assert (root / "a.txt").read_bytes() == b"v2\n"
    assert len(os.listdir(ws.journal_dir)) == 2
    fresh = Workspace(root, state_dir, recover=False)
    report = fresh.recover()
    assert len(report.rolled_back) == 2
    assert tree(root) == {"a.txt": b"v0\n"}  # oldest bytes win: newest undone first
    assert leftovers(fresh) == []


# -- corrupt journals: nothing is touched ----------------------------------------------------


def corrupt_and_expect(root: Path, state_dir: Path, mutate: object) -> None:
    assert callable(mutate)
    txn = crash_after(root, state_dir, patch_changes, is_publish_of_move)
    journal_dir = Workspace(root, state_dir, recover=False).journal_dir
    path = Path(journal_dir) / f"{txn}.json"
    mutate(path)
    before_tree, before_dirs = tree(root), dirs(root)
    journal_bytes = path.read_bytes()
    ws = Workspace(root, state_dir, recover=False)
    with pytest.raises(ToolError) as caught:
        ws.recover()
    assert caught.value.code == "CORRUPT_JOURNAL"
    with pytest.raises(ToolError) as on_open:
        Workspace(root, state_dir)
    assert on_open.value.code == "CORRUPT_JOURNAL"
    assert tree(root) == before_tree and dirs(root) == before_dirs
    assert path.read_bytes() == journal_bytes


def reseal(path: Path, edit: object) -> None:
    assert callable(edit)
    body = json.loads(path.read_bytes())
    body.pop("checksum")
    edit(body)
    body["checksum"] = hashlib.sha256(_journal._canonical(body)).hexdigest()
    path.write_bytes(_journal._canonical(body))


def test_a_torn_journal_is_corrupt(seeded: Path, state_dir: Path) -> None:
    corrupt_and_expect(seeded, state_dir, lambda p: p.write_bytes(p.read_bytes()[:40]))


def test_a_bit_flip_is_corrupt(seeded: Path, state_dir: Path) -> None:
    def flip(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(data))

    corrupt_and_expect(seeded, state_dir, flip)


def test_an_unknown_version_is_corrupt(seeded: Path, state_dir: Path) -> None:
    corrupt_and_expect(seeded, state_dir, lambda p: reseal(p, lambda b: b.update(version=99)))


def test_a_path_outside_the_root_is_corrupt(seeded: Path, state_dir: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"must survive\n")

    def escape(body: dict[str, object]) -> None:
        files = body["files"]
        assert isinstance(files, list)
        # An added file whose hash matches: recovery would delete it if it trusted the path.
        files[1]["path"] = "../victim.txt"
        files[1]["new_sha256"] = hashlib.sha256(b"must survive\n").hexdigest()
        files[1]["dirs_created"] = []

    corrupt_and_expect(seeded, state_dir, lambda p: reseal(p, escape))
    assert victim.read_bytes() == b"must survive\n"


def test_one_corrupt_journal_stops_every_journal(seeded: Path, state_dir: Path) -> None:
    txn = crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    ws = Workspace(seeded, state_dir, recover=False)
    (Path(ws.journal_dir) / ("f" * 32 + ".json")).write_bytes(b"{not json")
    before = tree(seeded)
    with pytest.raises(ToolError) as caught:
        ws.recover()
    assert caught.value.code == "CORRUPT_JOURNAL"
    assert tree(seeded) == before  # the good journal was not acted on either
    assert (Path(ws.journal_dir) / f"{txn}.json").exists()


# -- torn journal temp files, and what recovery leaves alone --------------------------------


def test_torn_journal_temp_files_are_removed(seeded: Path, state_dir: Path) -> None:
    def is_journal_write(op: OpRecord) -> bool:
        return op.name == "write" and ".preparing.tmp" in op.paths[0]

    fs_ws = Workspace(seeded, state_dir)
    # crash right after the journal's data is written, before its rename
    fs = FaultyFileSystem()
    ws = Workspace(seeded, state_dir, fs=fs)
    commit(ws, [PlannedChange(op="add", target=wpath(ws, ".warm"), new_bytes=b"")])
    commit(ws, [PlannedChange(op="delete", target=wpath(ws, ".warm"), old_bytes=b"")])
    fs.arm(None)
    commit(
        ws,
        [PlannedChange(op="update", target=wpath(ws, "a.txt"), old_bytes=b"a\n", new_bytes=b"A\n")],
    )
    index = next(op.index for op in fs.log if is_journal_write(op)) + 1
    (seeded / "a.txt").write_bytes(b"a\n")
    fs = FaultyFileSystem()
    ws = Workspace(seeded, state_dir, fs=fs)
    fs.arm(CrashAt(index))
    with pytest.raises(SimulatedCrash):
        commit(
            ws,
            [
                PlannedChange(
                    op="update", target=wpath(ws, "a.txt"), old_bytes=b"a\n", new_bytes=b"A\n"
                )
            ],
        )
    (temp,) = os.listdir(ws.journal_dir)
    assert temp.endswith(".preparing.tmp")
    unrelated = Path(ws.journal_dir) / "notes.txt"
    unrelated.write_bytes(b"not a journal")
    # an atomic-write temp file of a single-file write is not recovery's to delete
    atomic_temp = seeded / ".a.txt.editspec-0011223344556677.tmp"
    atomic_temp.write_bytes(b"partial")
    report = Workspace(seeded, state_dir, recover=False).recover()
    assert report.cleaned == (os.path.join(ws.journal_dir, temp),)
    assert sorted(os.listdir(ws.journal_dir)) == ["notes.txt"]
    assert atomic_temp.exists()
    assert tree(seeded) == BEFORE | {".a.txt.editspec-0011223344556677.tmp": b"partial"}
    del fs_ws


# -- a recovery that cannot finish -----------------------------------------------------------


class NoRename(FileSystem):
    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def rename(self, src: str, dst: str) -> None:
        if self.broken and src.endswith(".backup"):
            raise OSError(errno.EIO, "injected", src)
        super().rename(src, dst)


def test_a_recovery_that_cannot_finish_keeps_the_journal(seeded: Path, state_dir: Path) -> None:
    txn = crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    fs = NoRename()
    ws = Workspace(seeded, state_dir, fs=fs, recover=False)
    with pytest.raises(ToolError) as caught:
        ws.recover()
    assert caught.value.code == "IO_ERROR"
    # a.txt (renamed over) and d.txt (deleted) need a rename of their backup; m.txt too
    assert caught.value.details["not_restored"] == ["a.txt", "d.txt", "m.txt"]
    assert os.listdir(ws.journal_dir) == [f"{txn}.json"]
    with pytest.raises(ToolError) as refused:
        ws.ensure_writable()
    assert refused.value.code == "NEEDS_RECOVERY"
    fs.broken = False
    assert ws.recover().rolled_back == (txn,)
    assert tree(seeded) == BEFORE and leftovers(ws) == []
    ws.ensure_writable()


def test_the_hard_link_trap_when_restoring(seeded: Path, state_dir: Path) -> None:
    """Crash after the backups, before the publish: every target is still a link of its
    backup. Renaming the backup onto it would be a silent no-op (POSIX) and leave it."""

    def is_last_backup(op: object) -> bool:
        name, paths = getattr(op, "name", ""), getattr(op, "paths", ("", ""))
        return name == "link" and paths[1].endswith(".backup") and "m.txt" in paths[1]

    crash_after(seeded, state_dir, patch_changes, is_last_backup)
    a = seeded / "a.txt"
    backup = [p for p in seeded.iterdir() if p.name.startswith(".a.txt.") and p.suffix == ".backup"]
    assert len(backup) == 1 and os.path.samefile(a, backup[0])
    ws = Workspace(seeded, state_dir)
    assert tree(seeded) == BEFORE and leftovers(ws) == []
    assert os.stat(seeded / "a.txt").st_nlink == 1


# -- the record recovery acts on is written again first ---------------------------------------


class JournalDirUnsyncable(FileSystem):
    """``fsync_dir`` of the journal directory fails while ``on``."""

    def __init__(self) -> None:
        super().__init__()
        self.on = True

    def fsync_dir(self, path: str) -> None:
        if self.on and os.sep + "journal" + os.sep in path + os.sep:
            raise OSError(errno.EIO, "injected", path)
        super().fsync_dir(path)


def test_a_record_that_cannot_be_written_again_is_acted_on_by_nobody(
    seeded: Path, state_dir: Path
) -> None:
    """Killed right after the commit rename: the record reads ``committed``. Recovery writes
    it again as a new file before it removes a backup; if that cannot be synced, no file
    is touched and the journal stays, and the next recovery finishes."""
    txn = crash_after(seeded, state_dir, patch_changes, is_commit_rename)
    left = tree(seeded)
    assert any(SIDE_FILE.search(path) for path in left)  # the backups, still there
    fs = JournalDirUnsyncable()
    ws = Workspace(seeded, state_dir, fs=fs, recover=False)
    with pytest.raises(ToolError) as caught:
        ws.recover()
    assert caught.value.code == "IO_ERROR"
    assert caught.value.details["not_restored"] == [f"journal {txn}"]
    assert tree(seeded) == left  # nothing touched
    assert os.listdir(ws.journal_dir) == [f"{txn}.json"]  # the new record, no temp left
    assert _journal.read(ws.fs, ws.journal_dir, txn, root=ws.root).state == "committed"
    fs.on = False
    assert ws.recover().rolled_forward == (txn,)
    assert tree(seeded) == AFTER and leftovers(ws) == []


def test_a_torn_temp_of_the_record_does_not_stop_its_recovery(
    seeded: Path, state_dir: Path
) -> None:
    """A crash while a record was being written again leaves its temp file (same name):
    recovery removes torn temps before it writes records, so one recovery settles."""
    txn = crash_after(seeded, state_dir, patch_changes, is_commit_rename)
    journal_dir = Path(Workspace(seeded, state_dir, recover=False).journal_dir)
    torn = journal_dir / f".{txn}.committed.tmp"
    torn.write_bytes(b'{"version":1,"txn')
    ws = Workspace(seeded, state_dir, recover=False)
    report = ws.recover()
    assert report.rolled_forward == (txn,) and str(torn) in report.cleaned
    assert tree(seeded) == AFTER and leftovers(ws) == []


class NoUndo(FileSystem):
    """The commit record's directory fsync fails, then the write of each way to undo it
    (the revocation line, then the new ``preparing`` record) fails with ENOSPC."""

    def __init__(self) -> None:
        super().__init__()
        self.stage = "publishing"
        self.failed_writes = 0

    def rename(self, src: str, dst: str) -> None:
        super().rename(src, dst)
        if self.stage == "publishing" and ".committed." in src and dst.endswith(".json"):
            self.stage = "committed"

    def fsync_dir(self, path: str) -> None:
        if self.stage == "committed":
            self.stage = "undoing"
            raise OSError(errno.EIO, "injected", path)
        super().fsync_dir(path)

    def write(self, fd: int, data: bytes) -> None:
        if self.stage == "undoing" and self.failed_writes < 2:
            self.failed_writes += 1
            raise OSError(errno.ENOSPC, "injected")
        super().write(fd, data)


def test_a_commit_this_process_could_not_undo_is_rolled_back_though_it_reads_committed(
    seeded: Path, state_dir: Path
) -> None:
    fs = NoUndo()
    ws = Workspace(seeded, state_dir, fs=fs)
    with pytest.raises(ToolError) as caught:
        commit(ws, patch_changes(ws))
    assert caught.value.code == "NEEDS_RECOVERY" and fs.failed_writes == 2
    txn = caught.value.details["transaction"]
    # Neither undo reached the file: on disk, the record is the committed one.
    assert _journal.read(ws.fs, ws.journal_dir, txn, root=ws.root).state == "committed"
    assert txn in ws.revoked_commits
    report = ws.recover()  # this process answered no success: it rolls back
    assert report.rolled_back == (txn,) and report.rolled_forward == ()
    assert tree(seeded) == BEFORE and leftovers(ws) == []
    assert ws.revoked_commits == set()


# -- snapshots and the environment ------------------------------------------------------------


class PendingSnapshots(RecordingSnapshots):
    def __init__(self, pending: set[str]) -> None:
        super().__init__()
        self.pending = pending

    def pending_transactions(self) -> frozenset[str]:
        return frozenset(self.pending)

    def discard_transaction(self, txn_id: str) -> None:
        super().discard_transaction(txn_id)
        self.pending.discard(txn_id)


def test_snapshots_of_a_transaction_without_journal_are_discarded(
    seeded: Path, state_dir: Path
) -> None:
    txn = crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    orphan = "0" * 32  # snapshots made, then a crash before the journal was written
    ws = Workspace(seeded, state_dir, recover=False)
    snapshots = PendingSnapshots({txn, orphan, "not-a-transaction-id"})
    ws.snapshots = snapshots  # type: ignore[assignment]
    ws.recover()
    assert sorted(snapshots.calls) == sorted([("discard", txn), ("discard", orphan)])
    assert tree(seeded) == BEFORE
    snapshots.calls.clear()
    ws.recover()  # nothing pending is left that lacks a journal
    assert snapshots.calls == []


def test_a_failing_snapshot_hook_keeps_the_journal(seeded: Path, state_dir: Path) -> None:
    txn = crash_after(seeded, state_dir, patch_changes, is_commit_rename)

    class Unavailable(RecordingSnapshots):
        def confirm_transaction(self, txn_id: str) -> None:
            raise ToolError("IO_ERROR", "store unavailable")

    ws = Workspace(seeded, state_dir, recover=False)
    ws.snapshots = Unavailable()  # type: ignore[assignment]
    with pytest.raises(ToolError) as caught:
        ws.recover()
    assert caught.value.code == "IO_ERROR"
    assert os.listdir(ws.journal_dir) == [f"{txn}.json"]  # so confirming is retried
    ws.snapshots = RecordingSnapshots()  # type: ignore[assignment]
    assert ws.recover().rolled_forward == (txn,)
    assert tree(seeded) == AFTER and leftovers(ws) == []


class Refuses(FileSystem):
    def __init__(self, method: str, match: str) -> None:
        super().__init__()
        self.method, self.match, self.on = method, match, True

    def unlink(self, path: str) -> None:
        if self.on and self.method == "unlink" and self.match in path:
            raise OSError(errno.EIO, "injected", path)
        super().unlink(path)

    def listdir(self, path: str) -> list[str]:
        if self.on and self.method == "listdir" and self.match in path:
            raise OSError(errno.EACCES, "injected", path)
        return super().listdir(path)


@pytest.mark.parametrize(
    ("method", "match"),
    [("unlink", ".json"), ("unlink", ".tmp"), ("listdir", "journal")],
    ids=["journal", "journal-temp", "journal-dir"],
)
def test_recovery_that_cannot_touch_the_journal_directory(
    seeded: Path, state_dir: Path, method: str, match: str
) -> None:
    crash_after(seeded, state_dir, patch_changes, is_publish_of_move)
    journal_dir = Workspace(seeded, state_dir, recover=False).journal_dir
    (Path(journal_dir) / f".{'1' * 32}.preparing.tmp").write_bytes(b"torn")
    fs = Refuses(method, match)
    ws = Workspace(seeded, state_dir, fs=fs, recover=False)
    with pytest.raises(ToolError) as caught:
        ws.recover()
    assert caught.value.code == "IO_ERROR"
    with pytest.raises(ToolError):
        ws.ensure_writable()
    fs.on = False
    ws.recover()
    assert tree(seeded) == BEFORE and leftovers(ws) == []
    ws.ensure_writable()


# -- a process that was already running when another one died ------------------------


PATCH_AB = """*** Begin Patch
*** Update File: a.txt
@@
-a0
+a1
*** Update File: b.txt
@@
-b0
+b1
*** End Patch
"""


def _publish_count(root: Path, state: Path) -> int:
    probe = FaultyFileSystem(FileSystem())
    ws = Workspace(root, state, fs=probe)
    session = ws.session("A")
    session.read("a.txt")
    session.read("b.txt")
    probe.arm()
    session.apply_patch(PATCH_AB)
    return probe.count


def test_a_running_process_never_builds_on_a_dead_transaction(tmp_path: Path) -> None:
    """Process A dies mid-patch; process B, opened before, then changes a.txt.

    B must not write on top of A's half-published bytes: its change would be undone when
    A's journal is rolled back. B settles A's journal first, so B's change is either
    refused as STALE (it read A's unfinished bytes) or lands on the restored file, and
    in every case survives the next recovery.
    """
    probe_root, probe_state = tmp_path / "probe", tmp_path / "probe-state"
    probe_root.mkdir()
    write(probe_root, "a.txt", b"a0\n")
    write(probe_root, "b.txt", b"b0\n")
    total = _publish_count(probe_root, probe_state)
    assert total > 10
    outcomes: dict[str, int] = {}
    for k in range(1, total + 1):
        root, state = tmp_path / f"ws{k}", tmp_path / f"state{k}"
        root.mkdir()
        write(root, "a.txt", b"a0\n")
        write(root, "b.txt", b"b0\n")
        process_b = Workspace(root, state)  # already running: its startup recovery is done
        faulty = FaultyFileSystem(FileSystem())
        process_a = Workspace(root, state, fs=faulty)
        session_a = process_a.session("A")
        session_a.read("a.txt")
        session_a.read("b.txt")
        faulty.arm(CrashAt(k))
        with pytest.raises(SimulatedCrash):
            session_a.apply_patch(PATCH_AB)
        session_b = process_b.session("B")
        seen = session_b.read("a.txt").content
        try:
            session_b.write("a.txt", seen + "B\n")
        except ToolError as exc:
            assert exc.code == "STALE", k
            outcome = "stale"
            assert (root / "a.txt").read_bytes() == b"a0\n"
        else:
            outcome = "written"
        Workspace(root, state)  # a later start recovers whatever is left
        final = tree(root)
        if outcome == "written":
            assert final["a.txt"].endswith(b"B\n"), (k, final)
            # B wrote on a settled tree: A is all-before or all-after underneath.
            assert final["a.txt"][:-2] + final["b.txt"] in (b"a0\nb0\n", b"a1\nb1\n"), (k, final)
        else:
            assert final in ({"a.txt": b"a0\n", "b.txt": b"b0\n"},), (k, final)
        assert leftovers(Workspace(root, state)) == []
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    # Both branches were exercised: some crashes left a.txt half-published (STALE for B).
    assert set(outcomes) == {"stale", "written"}, outcomes
