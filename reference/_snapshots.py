"""Snapshot store (DESIGN §4 "Snapshots and rewind").

STUB: replaced by the full store (owner: transaction work).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from editspec.reference._workspace import Workspace


@attrs.frozen(kw_only=True)
class SnapshotEntry:
    """One file's state around one change: before-bytes (None if absent) and after-hash."""

    relative: str
    existed: bool
    before: bytes | None
    after_sha256: str | None


class SnapshotStore:
    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def record(
        self,
        session_id: str,
        message_id: str,
        entries: Sequence[SnapshotEntry],
        *,
        transaction_id: str | None = None,
    ) -> None:
        """Persist the entries of one change; raises on failure (callers decide best effort)."""
        raise NotImplementedError
