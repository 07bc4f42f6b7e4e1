"""What the snapshot store holds, and the checks of a record read back (SNAP-*).

``SnapshotEntry`` is what a write, edit or patch records per file; ``RecordedEntry``,
``HistoryRecord`` and ``SessionHistory`` are what ``SnapshotStore.history`` gives back.
Every record carries a ``checksum`` of its canonical JSON; ``validate_record`` checks a
record's shape so that the reader can index it without surprises.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError

SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: The kinds of entry besides files; a record names them in an entry's ``kind``.
OTHER_KINDS = frozenset({"dir", "symlink"})
#: What a directory "contains" for the chain check: nothing (its entries are their own).
DIR_CONTENT = b""


@attrs.frozen(kw_only=True)
class SnapshotEntry:
    """One file's state around one change: before-bytes (None if absent) and after-hash.

    ``relative``: the real path relative to the root, "/"-separated (the canonical key).
    ``mode``: permission bits before the change, used when rewind recreates the file.
    ``kind``: "file", or "dir" / "symlink" for the other entries of a tree that a Delete
    or Move takes away. Their *content* is what ``before`` and ``after_sha256`` hold: a
    directory's is empty (``DIR_CONTENT``), a symlink's is its target; so the same chain
    check applies to every kind.
    """

    relative: str
    existed: bool
    before: bytes | None
    after_sha256: str | None
    mode: int | None = None
    kind: str = "file"


@attrs.frozen(kw_only=True)
class RecordedEntry:
    """A ``SnapshotEntry`` as the history holds it: the before-content by its hash."""

    relative: str
    existed: bool
    before_sha256: str | None
    mode: int | None
    after_sha256: str | None
    kind: str = "file"


@attrs.frozen(kw_only=True)
class HistoryRecord:
    """One committed change record of a session, by its sequence number."""

    seq: int
    message_id: str
    transaction_id: str | None
    entries: tuple[RecordedEntry, ...]


@attrs.frozen(kw_only=True)
class SessionHistory:
    """What rewind reads: the changes that count, and where every message began.

    ``live``: committed change records not undone by a committed rewind, by ``seq``.
    ``message_start``: per message id, the lowest ``seq`` of its committed change
    records, undone ones included (a rewound message keeps its place).
    """

    live: tuple[HistoryRecord, ...]
    message_start: Mapping[str, int]


def sha256_hex(data: bytes) -> str:
    """The hex sha256 of a blob (its name in the store)."""
    return hashlib.sha256(data).hexdigest()


def checksum(body: Mapping[str, Any]) -> str:
    """The checksum a record carries: sha256 of its canonical JSON without it."""
    return sha256_hex(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def corrupt(path: str, why: str) -> ToolError:
    """CORRUPT_JOURNAL for a snapshot record or blob that fails a check."""
    return ToolError(
        _errors.CORRUPT_JOURNAL, f"snapshot record {path} is corrupt: {why}", path=path
    )


def validate_record(path: str, record: Mapping[str, Any]) -> None:
    """Check the shape of a record, so the reader can index it without surprises."""

    def need(condition: bool, what: str) -> None:
        if not condition:
            raise corrupt(path, what)

    def is_sha(value: object) -> bool:
        return isinstance(value, str) and bool(SHA256.match(value))

    need(isinstance(record.get("session_id"), str), "no session id")
    need(isinstance(record.get("message_id"), str), "no message id")
    txn = record.get("transaction_id")
    need(txn is None or isinstance(txn, str), "bad transaction id")
    kind = record.get("kind")
    if kind == "rewind":
        undoes = record.get("undoes")
        need(isinstance(undoes, list) and all(isinstance(s, int) for s in undoes), "bad undo list")
        return
    need(kind == "change", f"unknown kind {kind!r}")
    entries = record.get("entries")
    need(isinstance(entries, list), "no entries")
    assert isinstance(entries, list)
    for entry in entries:
        need(isinstance(entry, dict), "bad entry")
        need(isinstance(entry.get("path"), str) and bool(entry["path"]), "bad path")
        need(isinstance(entry.get("existed"), bool), "bad existed flag")
        before, after, mode = entry.get("before"), entry.get("after"), entry.get("mode")
        need((before is None) == (not entry["existed"]), "before hash and existed disagree")
        need(before is None or is_sha(before), "bad before hash")
        need(after is None or is_sha(after), "bad after hash")
        need(mode is None or isinstance(mode, int), "bad mode")
        need(entry.get("kind", "file") in OTHER_KINDS | {"file"}, "bad entry kind")
