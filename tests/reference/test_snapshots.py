"""Tests of the snapshot store: records, blobs, transactions, rewind markers, crash safety."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from editspec.fault_injection.faultfs import CrashAt, FaultyFileSystem, SimulatedCrash
from editspec.reference import FileSystem, ToolError, Workspace
from editspec.reference.snapshots._records import SnapshotEntry
from editspec.reference.snapshots._snapshots import SnapshotStore


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_dir(workspace: Workspace) -> Path:
    return Path(workspace.state_dir) / "snapshots" / workspace.root_hash


def all_files(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def entry(
    path: str, before: bytes | None, after: bytes | None, mode: int | None = None
) -> SnapshotEntry:
    return SnapshotEntry(
        relative=path,
        existed=before is not None,
        before=before,
        after_sha256=None if after is None else sha(after),
        mode=mode,
    )


def test_record_without_transaction_counts_at_once(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a.txt", b"old\n", b"new\n", 0o640)])
    history = store.history("s1")
    assert [r.message_id for r in history.live] == ["m1"]
    (recorded,) = history.live[0].entries
    assert recorded.relative == "a.txt"
    assert recorded.existed is True
    assert recorded.before_sha256 == sha(b"old\n")
    assert recorded.after_sha256 == sha(b"new\n")
    assert recorded.mode == 0o640
    assert history.live[0].transaction_id is None
    assert store.read_blob("s1", sha(b"old\n")) == b"old\n"
    # the blob is on disk under its hash, the record under its number, nothing else
    session = store.session_hash("s1")
    blob = sha(b"old\n")
    files = all_files(store_dir(workspace))
    assert files == sorted(
        [f"{session}/.lock", f"{session}/blobs/{blob}", f"{session}/000000000001.json"]
    )


def test_created_file_has_no_blob_and_deleted_file_no_after_hash(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("new.txt", None, b"x"), entry("gone.txt", b"y", None)])
    (record,) = store.history("s1").live
    by_path = {e.relative: e for e in record.entries}
    assert by_path["new.txt"].existed is False
    assert by_path["new.txt"].before_sha256 is None
    assert by_path["gone.txt"].after_sha256 is None
    blobs = os.listdir(store_dir(workspace) / store.session_hash("s1") / "blobs")
    assert blobs == [sha(b"y")]


def test_records_are_ordered_and_messages_keep_their_start(workspace: Workspace) -> None:
    store = workspace.snapshots
    for number in range(1, 5):
        message = "m2" if number == 3 else f"m{number}"
        store.record("s1", message, [entry("a", str(number).encode(), str(number + 1).encode())])
    history = store.history("s1")
    assert [r.seq for r in history.live] == [1, 2, 3, 4]
    assert [r.message_id for r in history.live] == ["m1", "m2", "m2", "m4"]
    assert dict(history.message_start) == {"m1": 1, "m2": 2, "m4": 4}


def test_identical_content_is_stored_once(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"same", b"1")])
    store.record("s1", "m2", [entry("b", b"same", b"2")])
    blobs = os.listdir(store_dir(workspace) / store.session_hash("s1") / "blobs")
    assert blobs == [sha(b"same")]


def test_transaction_records_count_only_after_confirm(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")], transaction_id="txn-1")
    assert store.history("s1").live == ()
    assert store.pending_transactions() == {"txn-1"}
    store.confirm_transaction("txn-1")
    assert [r.transaction_id for r in store.history("s1").live] == ["txn-1"]
    assert store.pending_transactions() == frozenset()
    store.confirm_transaction("txn-1")  # idempotent
    assert len(store.history("s1").live) == 1


def test_discarded_transaction_leaves_no_record(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m0", [entry("a", b"0", b"1")])
    store.record("s1", "m1", [entry("a", b"1", b"2")], transaction_id="t2")
    store.discard_transaction("t2")
    store.discard_transaction("t2")  # idempotent
    store.confirm_transaction("t2")  # nothing left to confirm
    assert [r.message_id for r in store.history("s1").live] == ["m0"]
    assert os.listdir(store_dir(workspace) / "_pending") == []


def test_pending_records_reserve_their_number(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")], transaction_id="t1")
    store.record("s1", "m2", [entry("b", b"0", b"1")])
    store.confirm_transaction("t1")
    assert [(r.seq, r.message_id) for r in store.history("s1").live] == [(1, "m1"), (2, "m2")]


def test_history_is_partitioned_by_session(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("alice", "m1", [entry("a", b"0", b"1")])
    store.record("bob", "m9", [entry("a", b"1", b"2")], transaction_id="tb")
    store.confirm_transaction("tb")
    assert [r.message_id for r in store.history("alice").live] == ["m1"]
    assert [r.message_id for r in store.history("bob").live] == ["m9"]
    assert store.history("carol").live == ()
    with pytest.raises(ToolError) as info:
        store.read_blob("bob", sha(b"0"))
    assert info.value.code == "CORRUPT_JOURNAL"


def test_rewind_marker_drops_undone_records_but_keeps_message_start(
    workspace: Workspace,
) -> None:
    store = workspace.snapshots
    for number in range(1, 4):
        store.record("s1", f"m{number}", [entry("a", str(number).encode(), b"x")])
    store.record_rewind("s1", "m2", [2, 3], transaction_id="rw")
    assert len(store.history("s1").live) == 3  # the marker is pending
    store.confirm_transaction("rw")
    history = store.history("s1")
    assert [r.message_id for r in history.live] == ["m1"]
    assert dict(history.message_start) == {"m1": 1, "m2": 2, "m3": 3}
    store.record("s1", "m4", [entry("a", b"1", b"4")])
    assert [(r.seq, r.message_id) for r in store.history("s1").live] == [(1, "m1"), (5, "m4")]


def test_history_survives_a_new_workspace(root: Path, state_dir: Path) -> None:
    first = Workspace(root, state_dir)
    first.snapshots.record("s1", "m1", [entry("a", b"0", b"1")])
    first.snapshots.record("s1", "m2", [entry("a", b"1", b"2")], transaction_id="t")
    second = Workspace(root, state_dir)
    second.snapshots.confirm_transaction("t")
    assert [r.message_id for r in second.snapshots.history("s1").live] == ["m1", "m2"]
    assert second.snapshots.read_blob("s1", sha(b"1")) == b"1"


def test_another_root_has_its_own_store(tmp_path: Path, state_dir: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = Workspace(tmp_path / "one", state_dir)
    two = Workspace(tmp_path / "two", state_dir)
    one.snapshots.record("s1", "m1", [entry("a", b"0", b"1")])
    assert two.snapshots.history("s1").live == ()


def test_a_tampered_record_is_corrupt(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")])
    path = store_dir(workspace) / store.session_hash("s1") / "000000000001.json"
    record = json.loads(path.read_text())
    record["message_id"] = "m2"
    path.write_text(json.dumps(record))
    fresh = Workspace(workspace.root, workspace.state_dir)
    with pytest.raises(ToolError) as info:
        fresh.snapshots.history("s1")
    assert info.value.code == "CORRUPT_JOURNAL"


@pytest.mark.parametrize(
    "damage",
    ["not json", "not an object", "unknown version", "wrong number", "other session", "bad hash"],
)
def test_every_kind_of_damaged_record_is_corrupt(workspace: Workspace, damage: str) -> None:
    from editspec.reference.snapshots._records import checksum as _checksum

    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")])
    path = store_dir(workspace) / store.session_hash("s1") / "000000000001.json"
    record = json.loads(path.read_text())
    del record["checksum"]
    if damage == "not json":
        path.write_bytes(b"{torn")
    elif damage == "not an object":
        path.write_text("[1, 2]")
    else:
        if damage == "unknown version":
            record["version"] = 99
        elif damage == "wrong number":
            record["seq"] = 7
        elif damage == "other session":
            record["session_id"] = "s2"
        else:
            record["entries"][0]["after"] = "not-a-hash"
        record["checksum"] = _checksum(record)  # a well-formed record, wrong content
        path.write_text(json.dumps(record))
    fresh = Workspace(workspace.root, workspace.state_dir)
    with pytest.raises(ToolError) as info:
        fresh.snapshots.history("s1")
    assert info.value.code == "CORRUPT_JOURNAL"


def test_confirm_after_a_lost_removal_keeps_one_record(workspace: Workspace) -> None:
    """A power cut may bring back the pending name of a record already confirmed."""
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")], transaction_id="t1")
    (pending,) = (store_dir(workspace) / "_pending").iterdir()
    copy = pending.read_bytes()
    store.confirm_transaction("t1")
    pending.write_bytes(copy)  # the old name is back
    store.confirm_transaction("t1")
    assert list((store_dir(workspace) / "_pending").iterdir()) == []
    assert [r.message_id for r in store.history("s1").live] == ["m1"]


def test_a_damaged_blob_is_corrupt(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")])
    blob = store_dir(workspace) / store.session_hash("s1") / "blobs" / sha(b"0")
    blob.write_bytes(b"1")
    with pytest.raises(ToolError) as info:
        store.read_blob("s1", sha(b"0"))
    assert info.value.code == "CORRUPT_JOURNAL"


@pytest.mark.parametrize(
    "bad",
    [
        [SnapshotEntry(relative="a", existed=True, before=None, after_sha256=None)],
        [SnapshotEntry(relative="a", existed=False, before=b"x", after_sha256=None)],
        [entry("a", b"0", b"1"), entry("a", b"1", b"2")],
    ],
)
def test_inconsistent_entries_are_rejected(workspace: Workspace, bad: list[SnapshotEntry]) -> None:
    with pytest.raises(ToolError) as info:
        workspace.snapshots.record("s1", "m1", bad)
    assert info.value.code == "INVALID_ARGUMENT"
    assert workspace.snapshots.history("s1").live == ()


@pytest.mark.parametrize("txn", ["", "a/b", "../x", "a.b"])
def test_unsafe_transaction_ids_are_rejected(workspace: Workspace, txn: str) -> None:
    with pytest.raises(ToolError) as info:
        workspace.snapshots.record("s1", "m1", [entry("a", b"0", b"1")], transaction_id=txn)
    assert info.value.code == "INVALID_ARGUMENT"


def test_foundation_style_entries_without_mode_are_accepted(workspace: Workspace) -> None:
    workspace.snapshots.record(
        "s1", "m1", [SnapshotEntry(relative="a", existed=True, before=b"0", after_sha256=sha(b"1"))]
    )
    assert workspace.snapshots.history("s1").live[0].entries[0].mode is None


def _record_then_confirm(store: SnapshotStore) -> None:
    store.record("s1", "m2", [entry("a", b"1", b"2"), entry("b", None, b"b")], transaction_id="t2")
    store.confirm_transaction("t2")


def test_a_crash_at_any_step_leaves_a_whole_history_or_none(root: Path, state_dir: Path) -> None:
    """Crash at every port operation of record + confirm: the record is absent or whole."""
    probe = FaultyFileSystem()
    ws = Workspace(root, state_dir / "probe", fs=probe)
    ws.snapshots.record("s1", "m1", [entry("a", b"0", b"1")])
    probe.arm(None)
    _record_then_confirm(ws.snapshots)
    total = probe.count
    assert total > 10
    outcomes = set()
    for n in range(1, total + 1):
        state = state_dir / f"crash{n}"
        fs = FaultyFileSystem()
        ws = Workspace(root, state, fs=fs)
        ws.snapshots.record("s1", "m1", [entry("a", b"0", b"1")])
        fs.arm(CrashAt(n))
        with pytest.raises(SimulatedCrash):
            _record_then_confirm(ws.snapshots)
        fresh = Workspace(root, state)
        messages = [r.message_id for r in fresh.snapshots.history("s1").live]
        assert messages in (["m1"], ["m1", "m2"])
        if messages == ["m1", "m2"]:
            assert fresh.snapshots.read_blob("s1", sha(b"1")) == b"1"
            outcomes.add("after")
        else:
            # recovery decides: a pending record is confirmed or discarded as a whole
            pending = fresh.snapshots.pending_transactions()
            assert pending <= {"t2"}
            if pending:
                fresh.snapshots.confirm_transaction("t2")
                assert [r.message_id for r in fresh.snapshots.history("s1").live] == ["m1", "m2"]
                assert fresh.snapshots.read_blob("s1", sha(b"1")) == b"1"
            outcomes.add("before")
    assert outcomes == {"before", "after"}


# -- the port failing under the store -------------------------------------------------------


class _SnapshotFaults(FileSystem):
    """A port whose ``failing`` methods raise EIO for files under ``snapshots/`` while armed."""

    def __init__(self, *failing: str) -> None:
        super().__init__()
        self.failing = set(failing)
        self.armed = False
        self._snapshot_fds: set[int] = set()

    def _fail(self, method: str, path: str) -> None:
        if self.armed and method in self.failing and f"{os.sep}snapshots{os.sep}" in path:
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)

    def create_exclusive(self, path: str, mode: int = 0o600) -> int:
        fd = super().create_exclusive(path, mode)
        if f"{os.sep}snapshots{os.sep}" in path:
            self._snapshot_fds.add(fd)
        return fd

    def fsync(self, fd: int) -> None:
        if fd in self._snapshot_fds:
            self._fail("fsync", f"{os.sep}snapshots{os.sep}")
        super().fsync(fd)

    def close(self, fd: int) -> None:
        self._snapshot_fds.discard(fd)
        super().close(fd)

    def read_bytes(self, path: str, *, offset: int = 0, limit: int | None = None) -> bytes:
        self._fail("read_bytes", path)
        return super().read_bytes(path, offset=offset, limit=limit)

    def unlink(self, path: str) -> None:
        self._fail("unlink", path)
        super().unlink(path)


def test_bad_message_ids_hashes_and_transaction_ids_are_invalid(workspace: Workspace) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")])  # the positive control
    assert store.read_blob("s1", sha(b"0")) == b"0"
    for call in (
        lambda: store.record("s1", "", [entry("a", b"0", b"1")]),
        lambda: store.read_blob("s1", "not-a-hash"),
        lambda: store.confirm_transaction("../x"),
        lambda: store.discard_transaction("a/b"),
    ):
        with pytest.raises(ToolError) as info:
            call()
        assert info.value.code == "INVALID_ARGUMENT"
    assert [r.message_id for r in store.history("s1").live] == ["m1"]


def test_a_session_directory_removed_behind_the_store_is_made_again(
    workspace: Workspace,
) -> None:
    store = workspace.snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")])
    shutil.rmtree(store_dir(workspace) / store.session_hash("s1"))
    store.record("s1", "m2", [entry("a", b"1", b"2")])
    assert [r.message_id for r in store.history("s1").live] == ["m2"]
    assert store.read_blob("s1", sha(b"1")) == b"1"
    shutil.rmtree(store_dir(workspace))  # the whole store, then a write that snapshots
    root = Path(workspace.root)
    (root / "f.txt").write_bytes(b"one\n")
    session = workspace.session("s2")
    session.read("f.txt")
    assert session.write("f.txt", "two\n", message_id="m3").snapshot_created is True
    session.rewind("m3")
    assert (root / "f.txt").read_bytes() == b"one\n"


def test_a_blob_the_port_cannot_read_is_an_io_error(root: Path, state_dir: Path) -> None:
    fs = _SnapshotFaults("read_bytes")
    store = Workspace(root, state_dir, fs=fs).snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")])
    fs.armed = True
    with pytest.raises(ToolError) as info:
        store.read_blob("s1", sha(b"0"))
    assert info.value.code == "IO_ERROR" and info.value.details["errno"] == errno.EIO
    fs.armed = False
    assert store.read_blob("s1", sha(b"0")) == b"0"


def test_a_failed_snapshot_leaves_no_temp_and_the_write_still_lands(
    root: Path, state_dir: Path
) -> None:
    (root / "a.txt").write_bytes(b"old\n")
    fs = _SnapshotFaults("fsync")
    ws = Workspace(root, state_dir, fs=fs)
    session = ws.session("s1")
    session.read("a.txt")
    fs.armed = True
    result = session.write("a.txt", "new\n", message_id="m1")
    assert (root / "a.txt").read_bytes() == b"new\n"
    assert result.snapshot_created is False
    assert any("no snapshot was recorded" in warning for warning in result.warnings)
    leftovers = [name for name in all_files(store_dir(ws)) if ".tmp-" in name]
    assert leftovers == []
    assert ws.snapshots.history("s1").live == ()
    with pytest.raises(ToolError) as info:  # the store itself reports the failure, typed
        ws.snapshots.record("s1", "m2", [entry("a.txt", b"new\n", b"newer\n")])
    assert info.value.code == "IO_ERROR" and info.value.details["errno"] == errno.EIO
    assert [name for name in all_files(store_dir(ws)) if ".tmp-" in name] == []


def test_a_discard_the_port_refuses_keeps_the_record_pending(root: Path, state_dir: Path) -> None:
    fs = _SnapshotFaults("unlink")
    store = Workspace(root, state_dir, fs=fs).snapshots
    store.record("s1", "m1", [entry("a", b"0", b"1")], transaction_id="t1")
    fs.armed = True
    with pytest.raises(ToolError) as info:
        store.discard_transaction("t1")
    assert info.value.code == "IO_ERROR" and info.value.details["errno"] == errno.EIO
    assert store.pending_transactions() == frozenset({"t1"})
    fs.armed = False
    store.discard_transaction("t1")
    assert store.pending_transactions() == frozenset()
    assert store.history("s1").live == ()
