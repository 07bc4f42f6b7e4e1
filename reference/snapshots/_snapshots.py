"""The snapshot store: per-session history of file changes (DESIGN §4 "Snapshots and rewind").

Layout, partitioned by canonical workspace and by session::

    <state_dir>/snapshots/<root_hash>/
        <session_hash>/                 sha256(session id)[:32]
            .lock                       flock held while a record number is allocated
            blobs/<sha256>              content before a change, content-addressed
            <seq:012d>.json             a committed record (immutable once published)
        _pending/<txn>.<session_hash>.<seq:012d>.json
                                        a record of a transaction that has not committed

A *record* is one change of one message: its session id, message id, transaction id
(or None), sequence number and, per file, the real path relative to the root, whether
the file existed, the hash of its content before (a blob), its mode and its hash after
(None when the change deleted it). A *rewind marker* is a record that names the
sequence numbers a rewind undid.

Rules:

* Every file is published with the same sequence of port calls: exclusive temp file,
  write, fsync, close, rename to its final name, fsync of the directory (the blobs of
  one record in batches: all written, then all fsynced, then all renamed, then one
  fsync of their directory). A reader never sees a torn blob or record; a crash
  leaves at most an ignored ``.tmp-*`` file.
* Append, not rewrite: a change is one new file, so a crash can never damage the
  history already written, and the cost of a record does not grow with the history.
* Blobs are durable (file fsync and directory fsync) before the record that names
  them is written, so a durable record never points at a lost blob.
* The state of a record is where it lives. Records without a transaction are written
  straight into the session directory and count at once (write and edit). A
  transaction's records are written to ``_pending/`` and count only once
  ``confirm_transaction`` renames them into the session directory (one atomic rename
  each); ``discard_transaction`` unlinks them. Both are idempotent, so recovery may
  repeat them after a crash. A pending record is never part of the history, so a
  transaction that never committed leaves no trace in what rewind sees.
* Nothing is deleted from the history: a rewind appends a marker (itself a
  transactional record), and the reader drops the records a committed marker undid.
  The undone records stay on disk so a message that was rewound keeps its place in
  the timeline: rewinding to it again is a no-op.
* Sequence numbers are allocated under the session's lock (in-process and ``flock``),
  as one more than the highest number among the session's committed and pending
  records. The key locks of the files a change touches are held around ``record``,
  so for any one file the sequence order is the order in which its changes were
  published.

Every state change of a record happens in this module; the transitions are the
table ``TRANSITIONS`` below (a state is where the record's file lives).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from editspec.reference import _errors
from editspec.reference._base import WorkspaceBase
from editspec.reference._errors import ToolError
from editspec.reference.snapshots._records import (
    SHA256,
    HistoryRecord,
    RecordedEntry,
    SessionHistory,
    SnapshotEntry,
    checksum,
    corrupt,
    sha256_hex,
    validate_record,
)

if TYPE_CHECKING:
    from editspec.reference._fs import FileSystem

#: (state, event) -> next state; ``None`` means the record file no longer exists.
TRANSITIONS: Mapping[tuple[str, str], str | None] = {
    ("absent", "record"): "committed",
    ("absent", "record_in_transaction"): "pending",
    ("pending", "confirm_transaction"): "committed",
    ("pending", "discard_transaction"): None,
    ("committed", "confirm_transaction"): "committed",
}

FORMAT_VERSION = 1
_RECORD_NAME = re.compile(r"^(\d{12})\.json$")
_PENDING_NAME = re.compile(r"^([A-Za-z0-9_-]{1,128})\.([0-9a-f]{32})\.(\d{12})\.json$")
_TRANSACTION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_PENDING_DIR = "_pending"
_BLOB_DIR = "blobs"
_LOCK_NAME = ".lock"
_TEMP_PREFIX = ".tmp-"
_WRITE_BATCH = 64  # files written before their fsyncs; bounds the open descriptors


class SnapshotStore:
    """Content-addressed blobs and per-session change records of one workspace. Spec: SNAP-*."""

    def __init__(self, workspace: WorkspaceBase) -> None:
        self._workspace = workspace
        self._root_dir = os.path.join(workspace.state_dir, "snapshots", workspace.root_hash)
        self._pending_dir = os.path.join(self._root_dir, _PENDING_DIR)
        self._thread_locks: dict[str, threading.Lock] = {}
        self._table_lock = threading.Lock()
        self._known_dirs: set[str] = set()
        # Committed records never change once published: parse each file once.
        self._parsed: dict[str, dict[str, Any]] = {}

    @property
    def _fs(self) -> FileSystem:
        return self._workspace.fs

    # -- naming ------------------------------------------------------------------

    @staticmethod
    def session_hash(session_id: str) -> str:
        return sha256_hex(session_id.encode("utf-8", "surrogateescape"))[:32]

    def session_dir(self, session_id: str) -> str:
        return os.path.join(self._root_dir, self.session_hash(session_id))

    # -- writing -----------------------------------------------------------------

    def record(
        self,
        session_id: str,
        message_id: str,
        entries: Sequence[SnapshotEntry],
        *,
        transaction_id: str | None = None,
    ) -> None:
        """Persist the entries of one change; raises on failure (callers decide best effort).

        Without ``transaction_id`` the record counts at once; with one, it counts only
        after ``confirm_transaction``. Spec: SNAP-*.
        """
        if not isinstance(message_id, str) or not message_id:
            raise ToolError(_errors.INVALID_ARGUMENT, "message_id must be a non-empty string")
        paths = [entry.relative for entry in entries]
        if len(set(paths)) != len(paths):
            raise ToolError(_errors.INVALID_ARGUMENT, "a snapshot names the same file twice")
        recorded: list[dict[str, Any]] = []
        blobs: dict[str, bytes] = {}
        for entry in entries:
            if entry.existed != (entry.before is not None):
                raise ToolError(
                    _errors.INVALID_ARGUMENT,
                    "before bytes must be given exactly when the file existed",
                )
            before_sha = None if entry.before is None else sha256_hex(entry.before)
            if entry.before is not None and before_sha is not None:
                blobs[before_sha] = entry.before
            item: dict[str, Any] = {
                "path": entry.relative,
                "existed": entry.existed,
                "before": before_sha,
                "mode": entry.mode,
                "after": entry.after_sha256,
            }
            if entry.kind != "file":
                item["kind"] = entry.kind  # absent for a file: older records read the same
            recorded.append(item)
        self._append(
            session_id,
            {"kind": "change", "message_id": message_id, "entries": recorded},
            transaction_id=transaction_id,
            blobs=blobs,
        )

    def record_rewind(
        self,
        session_id: str,
        message_id: str,
        undone: Sequence[int],
        *,
        transaction_id: str | None = None,
    ) -> None:
        """Append a marker saying that the records ``undone`` were rewound. Spec: SNAP-*."""
        self._append(
            session_id,
            {"kind": "rewind", "message_id": message_id, "undoes": sorted(set(undone))},
            transaction_id=transaction_id,
            blobs={},
        )

    def _append(
        self,
        session_id: str,
        body: dict[str, Any],
        *,
        transaction_id: str | None,
        blobs: Mapping[str, bytes],
    ) -> None:
        if transaction_id is not None and not _TRANSACTION_ID.match(transaction_id):
            raise ToolError(_errors.INVALID_ARGUMENT, f"bad transaction id {transaction_id!r}")
        session_dir = self.session_dir(session_id)
        try:
            try:
                self._append_once(session_id, session_dir, body, transaction_id, blobs)
            except FileNotFoundError:
                # A directory known to exist was removed behind our back: forget what is
                # known and start over (blobs are named by their hash and the record is
                # numbered under the lock, so a second attempt duplicates nothing).
                self._known_dirs.clear()
                self._append_once(session_id, session_dir, body, transaction_id, blobs)
        except OSError as exc:
            raise _errors.from_oserror(exc, session_dir, action="record snapshot") from exc

    def _append_once(
        self,
        session_id: str,
        session_dir: str,
        body: dict[str, Any],
        transaction_id: str | None,
        blobs: Mapping[str, bytes],
    ) -> None:
        self._ensure_dir(session_dir)
        if blobs:
            self._write_blobs(os.path.join(session_dir, _BLOB_DIR), blobs)
        if transaction_id is not None:
            self._ensure_dir(self._pending_dir)
        with self._session_lock(session_dir):
            seq = self._next_seq(session_dir)
            record = {
                **body,
                "version": FORMAT_VERSION,
                "session_id": session_id,
                "transaction_id": transaction_id,
                "seq": seq,
            }
            record["checksum"] = checksum(record)
            data = json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")
            if transaction_id is None:
                self._publish(session_dir, f"{seq:012d}.json", data)
            else:
                name = f"{transaction_id}.{os.path.basename(session_dir)}.{seq:012d}.json"
                self._publish(self._pending_dir, name, data)

    def _write_blobs(self, blob_dir: str, blobs: Mapping[str, bytes]) -> None:
        self._ensure_dir(blob_dir)
        fs = self._fs
        # Content-addressed: an existing blob is this content, whole.
        missing = [
            (os.path.join(blob_dir, sha), data)
            for sha, data in blobs.items()
            if not fs.lexists(os.path.join(blob_dir, sha))
        ]
        if missing:
            self._write_files(blob_dir, missing)
            fs.fsync_dir(blob_dir)

    def _publish(self, directory: str, name: str, data: bytes) -> None:
        self._write_files(directory, [(os.path.join(directory, name), data)])
        self._fs.fsync_dir(directory)

    def _write_files(self, directory: str, files: Sequence[tuple[str, bytes]]) -> None:
        """Temp, write, fsync, close, rename: a final name only ever holds whole content.

        Files go in batches: every temp of a batch is written before the first is
        fsynced, so the file system can flush them together (on ext4 the first fsync
        commits the others' data too). No fsync is skipped.
        """
        for start in range(0, len(files), _WRITE_BATCH):
            self._write_batch(directory, files[start : start + _WRITE_BATCH])

    def _write_batch(self, directory: str, files: Sequence[tuple[str, bytes]]) -> None:
        fs = self._fs
        temps: list[str] = []
        open_fds: list[int] = []
        try:
            for _final, data in files:
                temp, fd = self._create_temp(directory)
                temps.append(temp)
                open_fds.append(fd)
                fs.write(fd, data)
            for fd in open_fds:
                fs.fsync(fd)
            while open_fds:
                fs.close(open_fds[0])
                open_fds.pop(0)
            for (final, _data), temp in zip(files, list(temps), strict=True):
                fs.rename(temp, final)
                temps.remove(temp)
        except Exception:
            # A live process leaves no temp file; a crash (not an Exception) leaves them
            # to be ignored, as their names are never read.
            for fd in open_fds:
                with contextlib.suppress(OSError):
                    fs.close(fd)
            for temp in temps:
                with contextlib.suppress(OSError):
                    fs.unlink(temp)
            raise

    def _create_temp(self, directory: str) -> tuple[str, int]:
        while True:
            temp = os.path.join(directory, f"{_TEMP_PREFIX}{secrets.token_hex(8)}")
            try:
                return temp, self._fs.create_exclusive(temp, 0o600)
            except FileExistsError:
                continue

    def _ensure_dir(self, directory: str) -> None:
        """Create ``directory`` and missing parents, each made durable in its parent."""
        if directory in self._known_dirs:
            return
        fs = self._fs
        missing: list[str] = []
        current = directory
        while not fs.lexists(current):
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for path in reversed(missing):
            try:
                fs.mkdir(path, 0o700)
            except FileExistsError:
                continue
            fs.fsync_dir(os.path.dirname(path))
        self._known_dirs.add(directory)

    @contextlib.contextmanager
    def _session_lock(self, session_dir: str) -> Iterator[None]:
        with self._table_lock:
            lock = self._thread_locks.setdefault(session_dir, threading.Lock())
        with lock:
            handle = self._fs.lock_file(os.path.join(session_dir, _LOCK_NAME))
            try:
                yield
            finally:
                self._fs.unlock(handle)

    def _next_seq(self, session_dir: str) -> int:
        highest = 0
        for name in self._fs.listdir(session_dir):
            match = _RECORD_NAME.match(name)
            if match:
                highest = max(highest, int(match.group(1)))
        session_hash = os.path.basename(session_dir)
        for name in self._list(self._pending_dir):
            match = _PENDING_NAME.match(name)
            if match and match.group(2) == session_hash:
                highest = max(highest, int(match.group(3)))
        return highest + 1

    def _list(self, directory: str) -> list[str]:
        try:
            return self._fs.listdir(directory)
        except FileNotFoundError:
            return []

    # -- transaction outcome -----------------------------------------------------

    def _pending_of(self, transaction_id: str) -> list[tuple[str, re.Match[str]]]:
        if not _TRANSACTION_ID.match(transaction_id):
            raise ToolError(_errors.INVALID_ARGUMENT, f"bad transaction id {transaction_id!r}")
        found = []
        for name in sorted(self._list(self._pending_dir)):
            match = _PENDING_NAME.match(name)
            if match and match.group(1) == transaction_id:
                found.append((name, match))
        return found

    def confirm_transaction(self, transaction_id: str) -> None:
        """The transaction committed: its records now count. Idempotent. Spec: SNAP-*, RECOV-*."""
        fs = self._fs
        touched: dict[str, list[str]] = {}
        try:
            for name, match in self._pending_of(transaction_id):
                session_dir = os.path.join(self._root_dir, match.group(2))
                final = os.path.join(session_dir, f"{match.group(3)}.json")
                source = os.path.join(self._pending_dir, name)
                if fs.lexists(final):
                    # An earlier confirm's rename is durable but the source came back.
                    fs.unlink(source)
                else:
                    fs.rename(source, final)
                touched.setdefault(session_dir, []).append(final)
            for session_dir, finals in sorted(touched.items()):
                try:
                    fs.fsync_dir(session_dir)
                except OSError:
                    # The renames may not survive a power cut, and a second fsync would
                    # prove nothing: each record is written again as a new file renamed
                    # over itself, and that is synced (or the error stands).
                    for final in finals:
                        self._publish(session_dir, os.path.basename(final), fs.read_bytes(final))
            if touched:
                fs.fsync_dir(self._pending_dir)
        except OSError as exc:
            raise _errors.from_oserror(exc, self._pending_dir, action="confirm snapshot") from exc

    def discard_transaction(self, transaction_id: str) -> None:
        """The transaction rolled back: forget its records. Idempotent. Spec: SNAP-*, RECOV-*."""
        fs = self._fs
        try:
            pending = self._pending_of(transaction_id)
            for name, _match in pending:
                fs.unlink(os.path.join(self._pending_dir, name))
            if pending:
                fs.fsync_dir(self._pending_dir)
        except OSError as exc:
            raise _errors.from_oserror(exc, self._pending_dir, action="discard snapshot") from exc

    def pending_transactions(self) -> frozenset[str]:
        """Transaction ids that still have pending records (neither confirmed nor discarded)."""
        names = (_PENDING_NAME.match(name) for name in self._list(self._pending_dir))
        return frozenset(match.group(1) for match in names if match)

    # -- reading -----------------------------------------------------------------

    def history(self, session_id: str) -> SessionHistory:
        """The session's committed changes that count, in order, and where each message began."""
        session_dir = self.session_dir(session_id)
        try:
            names = sorted(name for name in self._list(session_dir) if _RECORD_NAME.match(name))
            records = [self._load(os.path.join(session_dir, name)) for name in names]
        except OSError as exc:
            raise _errors.from_oserror(exc, session_dir, action="read snapshots") from exc
        undone: set[int] = set()
        changes: list[HistoryRecord] = []
        message_start: dict[str, int] = {}
        for path, record in zip(names, records, strict=True):
            if record["session_id"] != session_id:
                raise corrupt(path, "it belongs to another session")
            if record["kind"] == "rewind":
                undone.update(record["undoes"])
                continue
            entries = tuple(
                RecordedEntry(
                    relative=entry["path"],
                    existed=entry["existed"],
                    before_sha256=entry["before"],
                    mode=entry["mode"],
                    after_sha256=entry["after"],
                    kind=entry.get("kind", "file"),
                )
                for entry in record["entries"]
            )
            seq = record["seq"]
            message_start.setdefault(record["message_id"], seq)
            changes.append(
                HistoryRecord(
                    seq=seq,
                    message_id=record["message_id"],
                    transaction_id=record["transaction_id"],
                    entries=entries,
                )
            )
        live = tuple(change for change in changes if change.seq not in undone)
        return SessionHistory(live=live, message_start=message_start)

    def _load(self, path: str) -> dict[str, Any]:
        cached = self._parsed.get(path)
        if cached is not None:
            return cached
        raw = self._fs.read_bytes(path)
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise corrupt(path, "not JSON") from exc
        if not isinstance(record, dict):
            raise corrupt(path, "not an object")
        stored = record.pop("checksum", None)
        if stored != checksum(record):
            raise corrupt(path, "checksum mismatch")
        if record.get("version") != FORMAT_VERSION:
            raise corrupt(path, f"unknown version {record.get('version')!r}")
        match = _RECORD_NAME.match(os.path.basename(path))
        if match is None or record.get("seq") != int(match.group(1)):
            raise corrupt(path, "sequence number does not match its name")
        validate_record(path, record)
        self._parsed[path] = record
        return record

    def read_blob(self, session_id: str, sha256: str) -> bytes:
        """The content with this hash, verified. CORRUPT_JOURNAL if it is missing or damaged."""
        if not SHA256.match(sha256):
            raise ToolError(_errors.INVALID_ARGUMENT, f"bad sha256 {sha256!r}")
        path = os.path.join(self.session_dir(session_id), _BLOB_DIR, sha256)
        try:
            data = self._fs.read_bytes(path)
        except FileNotFoundError as exc:
            raise corrupt(path, "the snapshot content is missing") from exc
        except OSError as exc:
            raise _errors.from_oserror(exc, path, action="read snapshot") from exc
        if sha256_hex(data) != sha256:
            raise corrupt(path, "the snapshot content does not match its hash")
        return data
