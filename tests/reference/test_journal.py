"""Journal records: encoding with a checksum, strict decoding (CORRUPT_JOURNAL), atomic writes."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import attrs
import pytest

from editspec.fault_injection import FailAt, FaultyFileSystem
from editspec.reference import FileSystem, ToolError
from editspec.reference.transactions import _journal
from editspec.reference.transactions._journal import JournalEntry, JournalRecord

TXN = "0123456789abcdef0123456789abcdef"
ROOT = os.path.join(os.sep, "ws")
SHA_A = hashlib.sha256(b"a").hexdigest()
SHA_B = hashlib.sha256(b"b").hexdigest()


def side(path: str, suffix: str, txn: str = TXN) -> str:
    directory, _, name = path.rpartition("/")
    name = _journal.side_file_name(name, txn, suffix)
    return f"{directory}/{name}" if directory else name


def record(state: str = _journal.PREPARING) -> JournalRecord:
    return JournalRecord(
        version=_journal.VERSION,
        txn_id=TXN,
        state=state,
        root=ROOT,
        entries=(
            JournalEntry(
                kind=_journal.UPDATE,
                path="src/a.py",
                existed=True,
                old_sha256=SHA_A,
                new_sha256=SHA_B,
                stage=side("src/a.py", "stage"),
                backup=side("src/a.py", "backup"),
            ),
            JournalEntry(
                kind=_journal.ADD,
                path="new/deep/b.py",
                existed=False,
                old_sha256=None,
                new_sha256=SHA_B,
                stage=side("new/deep/b.py", "stage"),
                backup=None,
                dirs_created=("new", "new/deep"),
            ),
            JournalEntry(
                kind=_journal.DELETE,
                path="gone.txt",
                existed=True,
                old_sha256=SHA_A,
                new_sha256=None,
                stage=None,
                backup=side("gone.txt", "backup"),
            ),
            JournalEntry(
                kind=_journal.MOVE_FROM,
                path="m.txt",
                existed=True,
                old_sha256=SHA_A,
                new_sha256=None,
                stage=None,
                backup=side("m.txt", "backup"),
            ),
            JournalEntry(
                kind=_journal.MOVE_TO,
                path="new/m2.txt",
                existed=False,
                old_sha256=None,
                new_sha256=SHA_A,
                stage=side("new/m2.txt", "stage"),
                backup=None,
            ),
        ),
    )


def body_of(data: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(data)
    return body


def reseal(body: dict[str, Any]) -> bytes:
    """Re-encode a hand-edited body with a valid checksum, so only the edit is wrong."""
    body = dict(body)
    body.pop("checksum", None)
    body["checksum"] = hashlib.sha256(_journal._canonical(body)).hexdigest()
    return _journal._canonical(body)


def corrupt_reason(data: bytes, **kwargs: Any) -> str:
    with pytest.raises(ToolError) as caught:
        _journal.decode(data, root=kwargs.pop("root", ROOT), **kwargs)
    assert caught.value.code == "CORRUPT_JOURNAL"
    return str(caught.value.details["reason"])


def test_round_trip_keeps_every_field() -> None:
    original = record()
    data = _journal.encode(original)
    assert _journal.decode(data, root=ROOT, txn_id=TXN) == original
    committed = record(_journal.COMMITTED)
    assert _journal.decode(_journal.encode(committed), root=ROOT) == committed


def test_encoding_records_what_the_design_names() -> None:
    body = body_of(_journal.encode(record()))
    assert body["version"] == 1
    assert body["txn_id"] == TXN
    assert body["state"] == "preparing"
    first = body["files"][0]
    assert set(first) >= {
        "path",
        "stage",
        "backup",
        "existed",
        "old_sha256",
        "new_sha256",
        "dirs_created",
    }
    assert body["files"][1]["dirs_created"] == ["new", "new/deep"]
    assert len(body["checksum"]) == 64


def test_undecodable_file_names_round_trip() -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # not UTF-8: a surrogate escape
    original = JournalRecord(
        version=1,
        txn_id=TXN,
        state="preparing",
        root=ROOT,
        entries=(
            JournalEntry(
                kind="update",
                path=name,
                existed=True,
                old_sha256=SHA_A,
                new_sha256=SHA_B,
                stage=side(name, "stage"),
                backup=side(name, "backup"),
            ),
        ),
    )
    assert _journal.decode(_journal.encode(original), root=ROOT) == original


@pytest.mark.parametrize("position", [10, 50, 200, -20])
def test_a_flipped_byte_is_corrupt(position: int) -> None:
    data = bytearray(_journal.encode(record()))
    data[position] ^= 0x01
    corrupt_reason(bytes(data))


def test_a_torn_journal_is_corrupt() -> None:
    data = _journal.encode(record())
    assert "parse" in corrupt_reason(data[: len(data) // 2])
    assert "parse" in corrupt_reason(b"")
    assert "object" in corrupt_reason(b"[1, 2]")


def test_an_edit_without_a_new_checksum_is_corrupt() -> None:
    body = body_of(_journal.encode(record()))
    body["state"] = "committed"
    assert "checksum" in corrupt_reason(json.dumps(body).encode())


def test_unknown_version_is_corrupt() -> None:
    body = body_of(_journal.encode(record()))
    body["version"] = 2
    assert "version" in corrupt_reason(reseal(body))
    body["version"] = True
    assert "version" in corrupt_reason(reseal(body))


def test_unknown_state_and_other_root_are_corrupt() -> None:
    body = body_of(_journal.encode(record()))
    assert "state" in corrupt_reason(reseal({**body, "state": "publishing"}))
    assert "root" in corrupt_reason(_journal.encode(record()), root=os.path.join(os.sep, "other"))


def test_file_name_and_transaction_id_must_agree() -> None:
    other = "f" * 32
    assert "file name" in corrupt_reason(_journal.encode(record()), txn_id=other)


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "src/../../outside.txt", "", "src//a.py", "./a", "a/."],
)
def test_a_path_outside_the_root_is_corrupt(path: str) -> None:
    body = body_of(_journal.encode(record()))
    body["files"][2]["path"] = path
    body["files"][2]["backup"] = side(path, "backup") if path else None
    corrupt_reason(reseal(body))


def test_stage_and_backup_must_be_the_transactions_own_files_beside_the_target() -> None:
    body = body_of(_journal.encode(record()))
    for field, value in [
        ("stage", "elsewhere/" + side("a.py", "stage")),  # not beside the target
        ("stage", "src/precious.py"),  # not a stage name: recovery would delete it
        ("stage", side("src/a.py", "stage", txn="e" * 32)),  # another transaction's
        ("backup", "src/a.py"),  # the target itself
        ("backup", None),  # an existing file without a backup
    ]:
        edited = json.loads(json.dumps(body))
        edited["files"][0][field] = value
        corrupt_reason(reseal(edited))


def test_created_directories_must_be_the_files_ancestors_top_first() -> None:
    body = body_of(_journal.encode(record()))
    for dirs in (["elsewhere"], ["new/deep", "new"], ["new"], ["..", "new", "new/deep"]):
        edited = json.loads(json.dumps(body))
        edited["files"][1]["dirs_created"] = dirs
        corrupt_reason(reseal(edited))


def test_kind_and_fields_must_agree() -> None:
    body = body_of(_journal.encode(record()))
    cases: list[tuple[int, str, Any]] = [
        (0, "kind", "rename"),
        (0, "existed", False),
        (1, "old_sha256", SHA_A),  # an added file had no old content
        (2, "new_sha256", SHA_B),  # a deleted file has no new content
        (0, "new_sha256", "not-a-hash"),
        (0, "extra", 1),
    ]
    for index, field, value in cases:
        edited = json.loads(json.dumps(body))
        edited["files"][index][field] = value
        corrupt_reason(reseal(edited))
    edited = json.loads(json.dumps(body))
    edited["files"].append(edited["files"][0])
    assert "twice" in corrupt_reason(reseal(edited))
    assert "no files" in corrupt_reason(reseal({**body, "files": []}))


def test_long_names_get_short_distinct_side_files() -> None:
    long_a = "a" * 240 + ".txt"
    long_b = "a" * 240 + ".py"
    stage_a = _journal.side_file_name(long_a, TXN, "stage")
    stage_b = _journal.side_file_name(long_b, TXN, "stage")
    assert stage_a != stage_b
    assert len(stage_a.encode()) < 255
    assert stage_a.startswith(".") and stage_a.endswith(f".{TXN}.stage")
    assert _journal.side_file_name("a.py", TXN, "backup") == f".a.py.{TXN}.backup"


def test_write_is_atomic_private_and_leaves_no_temp(tmp_path: Path) -> None:
    journal_dir = str(tmp_path / "journal" / "abc")
    fs = FileSystem()
    _journal.write(fs, journal_dir, record())
    assert os.listdir(journal_dir) == [f"{TXN}.json"]
    path = _journal.journal_path(journal_dir, TXN)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert _journal.read(fs, journal_dir, TXN, root=ROOT) == record()
    _journal.write(fs, journal_dir, record(_journal.COMMITTED))
    assert os.listdir(journal_dir) == [f"{TXN}.json"]
    assert _journal.read(fs, journal_dir, TXN, root=ROOT).state == "committed"
    _journal.remove(fs, journal_dir, TXN)
    assert os.listdir(journal_dir) == []


def test_write_syncs_the_file_before_the_rename(tmp_path: Path) -> None:
    journal_dir = tmp_path / "journal"
    journal_dir.mkdir()
    fs = FaultyFileSystem()
    _journal.write(fs, str(journal_dir), record())
    names = [op.name for op in fs.log]
    assert names == ["create_exclusive", "write", "fchmod", "fsync", "close", "rename"]


@pytest.mark.parametrize("step", [2, 3, 4, 5, 6])
def test_a_failed_write_leaves_neither_temp_nor_journal(tmp_path: Path, step: int) -> None:
    journal_dir = tmp_path / "journal"
    journal_dir.mkdir()
    fs = FaultyFileSystem(plan=FailAt(step, errno.EIO))
    with pytest.raises(OSError):
        _journal.write(fs, str(journal_dir), record())
    assert os.listdir(journal_dir) == []
    assert fs.open_descriptors() == {}


def test_a_failed_rewrite_keeps_the_previous_state(tmp_path: Path) -> None:
    journal_dir = tmp_path / "journal"
    fs = FaultyFileSystem()
    _journal.write(fs, str(journal_dir), record())
    fs.arm(FailAt(6, errno.ENOSPC))  # the rename of the committed journal
    with pytest.raises(OSError):
        _journal.write(fs, str(journal_dir), record(_journal.COMMITTED))
    assert os.listdir(journal_dir) == [f"{TXN}.json"]
    assert _journal.read(fs, str(journal_dir), TXN, root=ROOT).state == "preparing"


def test_missing_fields_and_bad_values_are_corrupt() -> None:
    body = body_of(_journal.encode(record()))
    without_root = {key: value for key, value in body.items() if key != "root"}
    assert "fields" in corrupt_reason(reseal(without_root))
    assert "transaction id" in corrupt_reason(reseal({**body, "txn_id": "../../x"}))
    for index, field, value in [
        (2, "stage", side("gone.txt", "stage")),  # a delete publishes nothing
        (1, "dirs_created", "new"),  # not a list
    ]:
        edited = json.loads(json.dumps(body))
        edited["files"][index][field] = value
        corrupt_reason(reseal(edited))


# -- revocation ------------------------------------------------------------------------


def test_a_revoked_record_decodes_as_revoked() -> None:
    committed = record(_journal.COMMITTED)
    data = _journal.encode(committed) + _journal.revocation(committed)
    decoded = _journal.decode(data, root=ROOT)
    assert decoded.state == _journal.REVOKED
    assert decoded.entries == committed.entries


def test_every_torn_revocation_reads_as_the_committed_record() -> None:
    """A power cut while the line is appended keeps a prefix of it: the call never
    returned, so the commit stands; no prefix is CORRUPT_JOURNAL."""
    committed = record(_journal.COMMITTED)
    line = _journal.revocation(committed)
    for kept in range(len(line)):
        data = _journal.encode(committed) + line[:kept]
        assert _journal.decode(data, root=ROOT).state == _journal.COMMITTED, kept


@pytest.mark.parametrize(
    "tail",
    [b"x", b'{"revoked":"' + b"0" * 64 + b'"}\n', b"\n", None],
    ids=["garbage", "another-hash", "blank-line", "twice"],
)
def test_other_bytes_after_a_record_are_corrupt(tail: bytes | None) -> None:
    committed = record(_journal.COMMITTED)
    line = _journal.revocation(committed)
    data = _journal.encode(committed) + (line + line if tail is None else tail)
    with pytest.raises(ToolError) as caught:
        _journal.decode(data, root=ROOT)
    assert caught.value.code == "CORRUPT_JOURNAL"


def test_a_preparing_record_is_never_revoked() -> None:
    preparing = record(_journal.PREPARING)
    line = _journal.revocation(record(_journal.COMMITTED))
    with pytest.raises(ToolError) as caught:
        _journal.decode(_journal.encode(preparing) + line, root=ROOT)
    assert caught.value.code == "CORRUPT_JOURNAL"
    with pytest.raises(ValueError):
        _journal.revocation(preparing)


def test_revoke_appends_through_the_records_own_file(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    journal_dir = str(tmp_path / "journal")
    committed = attrs.evolve(record(_journal.COMMITTED), root=str(tmp_path))
    _journal.write(fs, journal_dir, committed)
    path = _journal.journal_path(journal_dir, TXN)
    inode = os.stat(path).st_ino
    fs.arm()
    _journal.revoke(fs, journal_dir, committed)
    assert [op.name for op in fs.log] == ["open_append", "write", "fsync", "close"]
    assert os.stat(path).st_ino == inode  # no new name: the directory is not involved
    assert _journal.read(fs, journal_dir, TXN, root=str(tmp_path)).state == _journal.REVOKED
