"""Per-session read records and the freshness check before every write (DESIGN §4 TRACK).

The content hash is authoritative: size and mtime are kept for diagnostics only,
so a change that keeps both is still caught and a bare ``touch`` is not stale.
"""

from __future__ import annotations

import threading

import attrs

from editspec.reference import _errors
from editspec.reference._errors import ToolError


@attrs.frozen(kw_only=True)
class AccessRecord:
    canonical_key: str
    sha256: str
    size: int
    mtime_ns: int
    full: bool


class AccessTracker:
    """Read records keyed by (session id, canonical key). Thread-safe."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], AccessRecord] = {}
        self._lock = threading.Lock()

    def record_read(
        self, session_id: str, key: str, *, sha256: str, size: int, mtime_ns: int, full: bool
    ) -> None:
        """Remember what this session saw. A partial read never replaces a full record."""
        record = AccessRecord(
            canonical_key=key, sha256=sha256, size=size, mtime_ns=mtime_ns, full=full
        )
        with self._lock:
            previous = self._records.get((session_id, key))
            if not full and previous is not None and previous.full and previous.sha256 == sha256:
                return
            self._records[(session_id, key)] = record

    def record_write(
        self, session_id: str, key: str, *, sha256: str, size: int, mtime_ns: int
    ) -> None:
        """After the session's own write the next edit needs no re-read. Spec: TRACK-*."""
        self.record_read(session_id, key, sha256=sha256, size=size, mtime_ns=mtime_ns, full=True)

    def forget(self, session_id: str, key: str) -> None:
        with self._lock:
            self._records.pop((session_id, key), None)

    def get(self, session_id: str, key: str) -> AccessRecord | None:
        with self._lock:
            return self._records.get((session_id, key))

    def require_fresh(
        self,
        session_id: str,
        key: str,
        *,
        current_sha256: str,
        expected_sha256: str | None = None,
        display_path: str = "",
    ) -> None:
        """Raise NOT_READ or STALE unless the session may replace the file as it is now.

        ``expected_sha256`` (compare-and-swap) stands in for a read: it must match the disk.
        """
        where = display_path or key
        if expected_sha256 is not None:
            if expected_sha256.lower() != current_sha256:
                raise ToolError(
                    _errors.STALE,
                    f"{where} does not have the expected sha256",
                    path=where,
                    expected_sha256=expected_sha256,
                    current_sha256=current_sha256,
                )
            return
        record = self.get(session_id, key)
        if record is None or not record.full:
            reason = "was only partly read" if record is not None else "has not been read"
            raise ToolError(
                _errors.NOT_READ,
                f"{where} {reason} in this session; read it in full before changing it",
                path=where,
            )
        if record.sha256 != current_sha256:
            raise ToolError(
                _errors.STALE,
                f"{where} changed on disk since this session read it; read it again",
                path=where,
                read_sha256=record.sha256,
                current_sha256=current_sha256,
            )
