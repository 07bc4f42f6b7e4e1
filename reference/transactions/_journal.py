"""Journal records of multi-file transactions: encode, decode, write atomically (DESIGN §4 TXN).

A journal is one JSON object per transaction, ``<journal_dir>/<txn-id>.json``, mode 0600,
written as a temp file + fsync + rename + fsync of the directory so that it is never
torn. It carries a sha256 of its own canonical encoding, so a bit flip or a hand edit
is caught as CORRUPT_JOURNAL instead of steering recovery.

Paths in a journal are relative to the workspace root ("/"-separated), and ``decode``
checks every one of them before recovery may act on it: no absolute path, no ``..``,
stage and backup files beside their target and named for the transaction, created
directories only ancestors of their file. A journal that fails any check is
CORRUPT_JOURNAL and recovery touches nothing.

A ``committed`` record can be *revoked* afterwards through its own inode: one line,
``{"revoked":"<sha256 of the record's bytes>"}``, appended and fsynced
(``revoke``). That is how a commit whose directory fsync failed is undone durably: the
rename that made the record ``committed`` may or may not survive a power cut, but
either name then leads to a record recovery rolls back (the ``preparing`` one, or the
revoked one). The appended line is written once, never rewritten, so a power cut while
it is written leaves a prefix of it (the model's 4 KiB steps): a proper prefix is a
revocation that never completed -- the call that wrote it had not returned -- and
reads as ``committed``; anything else after the record is CORRUPT_JOURNAL.

This module only formats and stores records; what the states mean, and every state
change, lives in ``_transaction``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError
from editspec.reference._fs import FileSystem, makedirs

VERSION = 1
PREPARING = "preparing"
COMMITTED = "committed"
#: A committed record with its revocation appended (never the ``state`` field itself).
REVOKED = "revoked"
STATES: frozenset[str] = frozenset({PREPARING, COMMITTED})

#: Entry kinds: one per path a transaction touches (a move is two entries).
UPDATE = "update"
ADD = "add"
DELETE = "delete"
MOVE_FROM = "move-from"
MOVE_TO = "move-to"
KINDS: frozenset[str] = frozenset({UPDATE, ADD, DELETE, MOVE_FROM, MOVE_TO})
#: Kinds whose path existed before (they have an old hash and a backup).
EXISTED_BEFORE: frozenset[str] = frozenset({UPDATE, DELETE, MOVE_FROM})
#: Kinds that publish new content at their path (they have a new hash and a stage file).
PUBLISHES_CONTENT: frozenset[str] = frozenset({UPDATE, ADD, MOVE_TO})

TXN_ID = re.compile(r"[0-9a-f]{32}")
JOURNAL_NAME = re.compile(r"([0-9a-f]{32})\.json")
TEMP_NAME = re.compile(r"\.([0-9a-f]{32})\.(preparing|committed)\.tmp")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_JOURNAL_BYTES = 64 * 1024 * 1024
# Stage and backup names add ~43 characters; longer names are shortened (with a hash,
# so two long names in one directory never share a stage name) to stay under NAME_MAX.
_MAX_NAME_BYTES = 200


@attrs.frozen(kw_only=True)
class JournalEntry:
    """One path of a transaction: what it was, what it becomes, and the files around it."""

    kind: str
    path: str  # relative to the root, "/"-separated
    existed: bool
    old_sha256: str | None
    new_sha256: str | None
    stage: str | None  # relative; the new content beside ``path`` until published
    backup: str | None  # relative; a hard link to the old file while the transaction runs
    dirs_created: tuple[str, ...] = ()  # relative, top first, created for this path


@attrs.frozen(kw_only=True)
class JournalRecord:
    """A transaction's journal: ``state`` is ``preparing`` or ``committed``."""

    version: int
    txn_id: str
    state: str
    root: str
    entries: tuple[JournalEntry, ...]


def side_file_name(name: str, txn_id: str, suffix: str) -> str:
    """``.<name>.<txn>.<suffix>``: recognisable, unique to the transaction, beside the target."""
    if len(os.fsencode(name)) > _MAX_NAME_BYTES:
        digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:12]
        name = f"{name[:48]}~{digest}"
    return f".{name}.{txn_id}.{suffix}"


def journal_path(journal_dir: str, txn_id: str) -> str:
    return os.path.join(journal_dir, f"{txn_id}.json")


# -- encoding ------------------------------------------------------------------------


def _canonical(body: Mapping[str, Any]) -> bytes:
    # ensure_ascii: file names that are not valid UTF-8 (surrogate escapes) round-trip.
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode(
        "ascii"
    )


def _body(record: JournalRecord) -> dict[str, Any]:
    return {
        "version": record.version,
        "txn_id": record.txn_id,
        "state": record.state,
        "root": record.root,
        "files": [
            {
                "kind": entry.kind,
                "path": entry.path,
                "existed": entry.existed,
                "old_sha256": entry.old_sha256,
                "new_sha256": entry.new_sha256,
                "stage": entry.stage,
                "backup": entry.backup,
                "dirs_created": list(entry.dirs_created),
            }
            for entry in record.entries
        ],
    }


def encode(record: JournalRecord) -> bytes:
    """The journal's bytes: the canonical JSON of the record plus its own checksum."""
    body = _body(record)
    body["checksum"] = hashlib.sha256(_canonical(body)).hexdigest()
    return _canonical(body) + b"\n"


def revocation(record: JournalRecord) -> bytes:
    """The line ``revoke`` appends to ``record`` (``committed``) as it is on disk."""
    if record.state not in (COMMITTED, REVOKED):
        raise ValueError(f"only a committed record is revoked, not a {record.state!r} one")
    on_disk = encode(attrs.evolve(record, state=COMMITTED))
    return _canonical({"revoked": hashlib.sha256(on_disk).hexdigest()}) + b"\n"


def seal(data: bytes) -> bytes:
    """``data`` (a journal's JSON object, possibly altered) with its checksum recomputed.

    The conformance suite crafts journals (an unknown version, a path outside the root)
    and seals them so that recovery's own checks, not the checksum, decide. The other
    fields are kept as they are, valid or not; ``ValueError`` if ``data`` is not a JSON
    object.
    """
    body = json.loads(data.decode("ascii"))
    if not isinstance(body, dict):
        raise ValueError("a journal is a JSON object")
    body.pop("checksum", None)
    body["checksum"] = hashlib.sha256(_canonical(body)).hexdigest()
    return _canonical(body) + b"\n"


class _Invalid(Exception):
    """One reason a journal is not trusted (turned into CORRUPT_JOURNAL)."""


def decode(data: bytes, *, root: str, txn_id: str | None = None, where: str = "") -> JournalRecord:
    """Parse and check a journal. Spec: RECOV-* (CORRUPT_JOURNAL, nothing touched)."""
    try:
        return _decode(data, root=root, txn_id=txn_id)
    except _Invalid as exc:
        raise ToolError(
            _errors.CORRUPT_JOURNAL,
            f"journal {where or '(unnamed)'} is not trustworthy: {exc}; nothing was changed",
            journal=where,
            reason=str(exc),
        ) from None


def _decode(data: bytes, *, root: str, txn_id: str | None) -> JournalRecord:
    head, newline, tail = data.partition(b"\n")
    record = _decode_record(head + newline, root=root, txn_id=txn_id)
    if not tail:
        return record
    if record.state != COMMITTED:
        raise _Invalid(f"a {record.state} record is followed by other bytes")
    expected = revocation(record)
    if tail == expected:
        return attrs.evolve(record, state=REVOKED)
    if expected.startswith(tail):
        # A revocation cut short by a power cut: its fsync never returned, so neither did
        # the call that wrote it. The record stands as committed.
        return record
    raise _Invalid("the record is followed by bytes that are not its revocation")


def _decode_record(data: bytes, *, root: str, txn_id: str | None) -> JournalRecord:
    try:
        body = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Invalid(f"does not parse ({exc})") from None
    if not isinstance(body, dict):
        raise _Invalid("is not a JSON object")
    checksum = body.pop("checksum", None)
    if checksum != hashlib.sha256(_canonical(body)).hexdigest():
        raise _Invalid("checksum does not match its content")
    if set(body) != {"version", "txn_id", "state", "root", "files"}:
        raise _Invalid("has unexpected or missing fields")
    if body["version"] != VERSION or type(body["version"]) is not int:
        raise _Invalid(f"unknown version {body['version']!r}")
    record_txn = body["txn_id"]
    if not isinstance(record_txn, str) or not TXN_ID.fullmatch(record_txn):
        raise _Invalid("bad transaction id")
    if txn_id is not None and record_txn != txn_id:
        raise _Invalid("transaction id does not match the file name")
    if body["state"] not in STATES:
        raise _Invalid(f"unknown state {body['state']!r}")
    if body["root"] != root:
        raise _Invalid("belongs to another workspace root")
    files = body["files"]
    if not isinstance(files, list) or not files:
        raise _Invalid("has no files")
    entries = tuple(_decode_entry(item, record_txn) for item in files)
    named = [entry.path for entry in entries]
    named += [side for entry in entries for side in (entry.stage, entry.backup) if side]
    if len(set(named)) != len(named):
        raise _Invalid("names one path twice")
    return JournalRecord(
        version=VERSION, txn_id=record_txn, state=body["state"], root=root, entries=entries
    )


def check_relative(path: object) -> str:
    """A path relative to the root that cannot leave it: no absolute path, no ``..``."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise _Invalid(f"bad path {path!r}")
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise _Invalid(f"path {path!r} is outside the workspace root")
    if os.sep != "/" and os.sep in path:  # pragma: no cover - Windows only
        raise _Invalid(f"path {path!r} is not '/'-separated")
    return path


def _sha(value: object, *, present: bool, what: str) -> str | None:
    if not present:
        if value is not None:
            raise _Invalid(f"unexpected {what}")
        return None
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise _Invalid(f"bad {what}")
    return value


def _side(value: object, *, path: str, txn_id: str, suffix: str, present: bool) -> str | None:
    if not present:
        if value is not None:
            raise _Invalid(f"unexpected {suffix} file")
        return None
    side = check_relative(value)
    directory, _, name = path.rpartition("/")
    side_directory, _, side_name = side.rpartition("/")
    # Recovery may only touch files the transaction made: beside the target, named for it.
    if side_directory != directory or side_name != side_file_name(name, txn_id, suffix):
        raise _Invalid(f"{suffix} file {side!r} is not the one of {path!r}")
    return side


def _decode_entry(item: object, txn_id: str) -> JournalEntry:
    fields = {
        "kind",
        "path",
        "existed",
        "old_sha256",
        "new_sha256",
        "stage",
        "backup",
        "dirs_created",
    }
    if not isinstance(item, dict) or set(item) != fields:
        raise _Invalid("a file entry has unexpected or missing fields")
    kind = item["kind"]
    if kind not in KINDS:
        raise _Invalid(f"unknown file kind {kind!r}")
    path = check_relative(item["path"])
    existed = kind in EXISTED_BEFORE
    publishes = kind in PUBLISHES_CONTENT
    if item["existed"] is not existed:
        raise _Invalid(f"{path!r}: 'existed' contradicts its kind")
    dirs = item["dirs_created"]
    if not isinstance(dirs, list):
        raise _Invalid(f"{path!r}: bad dirs_created")
    for index, directory in enumerate(dirs):
        check_relative(directory)
        # Top first, each the parent of the next, all ancestors of the path.
        if not path.startswith(directory + "/") or (
            index and directory.rpartition("/")[0] != dirs[index - 1]
        ):
            raise _Invalid(f"{path!r}: created directory {directory!r} is not its ancestor")
    if dirs and (existed or dirs[-1] != path.rpartition("/")[0]):
        raise _Invalid(f"{path!r}: created directories must end at its parent")
    return JournalEntry(
        kind=kind,
        path=path,
        existed=existed,
        old_sha256=_sha(item["old_sha256"], present=existed, what="old sha256"),
        new_sha256=_sha(item["new_sha256"], present=publishes, what="new sha256"),
        stage=_side(item["stage"], path=path, txn_id=txn_id, suffix="stage", present=publishes),
        backup=_side(item["backup"], path=path, txn_id=txn_id, suffix="backup", present=existed),
        dirs_created=tuple(dirs),
    )


# -- storage -------------------------------------------------------------------------


def write(fs: FileSystem, journal_dir: str, record: JournalRecord) -> None:
    """Write the journal atomically (temp, fsync, rename), *without* the final fsync of its
    directory: the caller does that, so it knows whether the rename, its commit point,
    happened. The temp file is removed if the write fails before the rename; one left by
    a crash makes the next write of that record fail (EEXIST) until recovery removes it,
    which it does before it writes any record again.
    """
    for created in makedirs(fs, journal_dir):
        # A journal in a directory whose own entry is lost to a power cut is lost too.
        fs.fsync_dir(os.path.dirname(created))
    temp = os.path.join(journal_dir, f".{record.txn_id}.{record.state}.tmp")
    data = encode(record)
    fd = fs.create_exclusive(temp, 0o600)
    try:
        try:
            fs.write(fd, data)
            fs.fchmod(fd, 0o600)
            fs.fsync(fd)
        finally:
            fs.close(fd)
        fs.rename(temp, journal_path(journal_dir, record.txn_id))
    except Exception:
        # Not BaseException: a dead process removes nothing; recovery deletes the temp.
        _unlink_quietly(fs, temp)
        raise


def revoke(fs: FileSystem, journal_dir: str, record: JournalRecord) -> None:
    """Append ``record``'s revocation to its file in place and fsync the file.

    Only the file's own inode is written: whichever name a power cut leaves at the
    journal's path (this committed record, or the ``preparing`` one it replaced), it
    then reads as a transaction to roll back. Raises ``OSError``; a failed fsync leaves
    the revocation unproven (the caller must not report either outcome as durable).
    """
    fd = fs.open_append(journal_path(journal_dir, record.txn_id))
    try:
        fs.write(fd, revocation(record))
        fs.fsync(fd)
    finally:
        fs.close(fd)


def read(fs: FileSystem, journal_dir: str, txn_id: str, *, root: str) -> JournalRecord:
    """Read and check one journal (CORRUPT_JOURNAL if it is not trustworthy)."""
    path = journal_path(journal_dir, txn_id)
    data = fs.read_bytes(path, limit=_MAX_JOURNAL_BYTES + 1)
    if len(data) > _MAX_JOURNAL_BYTES:
        raise ToolError(_errors.CORRUPT_JOURNAL, f"journal {path} is too large", journal=path)
    return decode(data, root=root, txn_id=txn_id, where=path)


def remove(fs: FileSystem, journal_dir: str, txn_id: str) -> None:
    """Delete the journal and make its absence durable."""
    fs.unlink(journal_path(journal_dir, txn_id))
    fs.fsync_dir(journal_dir)


def _unlink_quietly(fs: FileSystem, path: str) -> None:
    with contextlib.suppress(OSError):
        fs.unlink(path)
